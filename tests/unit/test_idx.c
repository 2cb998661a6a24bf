/*
 * test_idx.c - unit tests of lib/data: decomp (whole-file reads through
 * libarchive), idx (the IDX parser) and IDX files as labelled samples.
 *
 * Fixtures are written into a fresh mkdtemp directory; compressed ones with
 * libarchive's writer (raw format + a filter). The real Fashion-MNIST files
 * are loaded when Debian's dataset-fashion-mnist is installed, else SKIP.
 */
#include <archive.h>       /* archive_write_* */
#include <archive_entry.h> /* archive_entry_* */
#include <stdint.h>        /* uint8_t */
#include <stdio.h>         /* FILE, snprintf */
#include <stdlib.h>        /* free */
#include <string.h>        /* memcpy, memcmp */
#include <sys/resource.h>  /* getrusage */
#include <sys/stat.h>      /* mkdir */
#include <unistd.h>        /* truncate */

#include "core/err.h"      /* mgpu_errmsg, MGPU_E* */
#include "data/decomp.h"   /* mgpu_read_maybe_compressed */
#include "data/idx.h"      /* mgpu_idx_* */
#include "../t.h"          /* T_RUN, T_CHECK, T_OK, T_FAILS */
#include "../tmpdir.h" /* tmpdir, tpath, t_tmpdir_make */

#define FMNIST "/usr/share/datasets/fashion-mnist"


static void put_file(const char *path, const void *data, size_t len)
{
	FILE *fp = fopen(path, "wb");

	if (!fp || (len && fwrite(data, 1, len, fp) != len))
		printf("cannot write fixture %s\n", path);
	if (fp)
		fclose(fp);
}

/* Write data compressed with a libarchive filter (ARCHIVE_FILTER_*). */
static int put_compressed(const char *path, int filter, const void *data, size_t len)
{
	struct archive *a = archive_write_new();
	struct archive_entry *e = archive_entry_new();
	int ok;

	ok = archive_write_add_filter(a, filter) == ARCHIVE_OK &&
	     archive_write_set_format_raw(a) == ARCHIVE_OK &&
	     archive_write_open_filename(a, path) == ARCHIVE_OK;
	archive_entry_set_pathname(e, "data");
	archive_entry_set_filetype(e, AE_IFREG);
	archive_entry_set_size(e, (la_int64_t)len);
	ok = ok && archive_write_header(a, e) == ARCHIVE_OK;
	ok = ok && (len == 0 || archive_write_data(a, data, len) == (la_ssize_t)len);
	ok = archive_write_close(a) == ARCHIVE_OK && ok;
	archive_entry_free(e);
	archive_write_free(a);
	return ok ? 0 : -1;
}

/* A gzip file of head followed by nzeros zero bytes, written a piece at a
 * time so the test itself never holds the decoded size in memory. */
static int put_gz_zeros(const char *path, const void *head, size_t hn, size_t nzeros)
{
	static const unsigned char zero[1 << 16];
	struct archive *a = archive_write_new();
	struct archive_entry *e = archive_entry_new();
	size_t n;
	int ok;

	ok = archive_write_add_filter(a, ARCHIVE_FILTER_GZIP) == ARCHIVE_OK &&
	     archive_write_set_format_raw(a) == ARCHIVE_OK &&
	     archive_write_open_filename(a, path) == ARCHIVE_OK;
	archive_entry_set_pathname(e, "data");
	archive_entry_set_filetype(e, AE_IFREG);
	archive_entry_set_size(e, (la_int64_t)(hn + nzeros));
	ok = ok && archive_write_header(a, e) == ARCHIVE_OK;
	ok = ok && archive_write_data(a, head, hn) == (la_ssize_t)hn;
	for (; ok && nzeros; nzeros -= n) {
		n = nzeros < sizeof zero ? nzeros : sizeof zero;
		ok = archive_write_data(a, zero, n) == (la_ssize_t)n;
	}
	ok = archive_write_close(a) == ARCHIVE_OK && ok;
	archive_entry_free(e);
	archive_write_free(a);
	return ok ? 0 : -1;
}

static long maxrss_kib(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_maxrss;
}

static size_t put_be32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)(v >> 24);
	p[1] = (unsigned char)(v >> 16);
	p[2] = (unsigned char)(v >> 8);
	p[3] = (unsigned char)v;
	return 4;
}

/* An IDX header of type and dims into buf; returns its length. */
static size_t idx_header(unsigned char *buf, int type, int ndim, const uint32_t *dims)
{
	size_t n = 0;
	int i;

	buf[n++] = 0;
	buf[n++] = 0;
	buf[n++] = (unsigned char)type;
	buf[n++] = (unsigned char)ndim;
	for (i = 0; i < ndim; i++)
		n += put_be32(buf + n, dims[i]);
	return n;
}

/* A u8 IDX file of the given dims with data[i] = (i * mul) % mod. */
static void put_idx_u8(const char *path, int ndim, const uint32_t *dims, int mul,
		       int mod, int gz)
{
	static unsigned char buf[1 << 16];
	size_t n = idx_header(buf, MGPU_IDX_U8, ndim, dims), count = 1, i;
	int d;

	for (d = 0; d < ndim; d++)
		count *= dims[d];
	for (i = 0; i < count && n < sizeof buf; i++)
		buf[n++] = (unsigned char)((i * (size_t)mul) % (size_t)mod);
	if (gz)
		put_compressed(path, ARCHIVE_FILTER_GZIP, buf, n);
	else
		put_file(path, buf, n);
}

/* ---------------- decomp ---------------- */

static void test_decomp_raw(void)
{
	unsigned char src[3000], *got = NULL;
	size_t len = 0, i;

	for (i = 0; i < sizeof src; i++)
		src[i] = (unsigned char)(i * 7 + 3);
	put_file(tpath("raw.bin"), src, sizeof src);
	T_OK(mgpu_read_maybe_compressed(tpath("raw.bin"), &got, &len));
	T_CHECK(len == sizeof src, "len %zu", len);
	T_CHECK(got && memcmp(got, src, sizeof src) == 0, "content differs");
	T_CHECK(got && got[len] == '\0', "not NUL-terminated");
	free(got);
}

static void test_decomp_empty(void)
{
	unsigned char *got = NULL;
	size_t len = 99;

	put_file(tpath("empty"), "", 0);
	T_OK(mgpu_read_maybe_compressed(tpath("empty"), &got, &len));
	T_CHECK(len == 0 && got != NULL, "len %zu", len);
	free(got);
	T_CHECK(put_compressed(tpath("empty.gz"), ARCHIVE_FILTER_GZIP, "", 0) == 0, "fixture");
	got = NULL;
	len = 99;
	T_OK(mgpu_read_maybe_compressed(tpath("empty.gz"), &got, &len));
	T_CHECK(len == 0, "len %zu", len);
	free(got);
}

static void test_decomp_filters(void)
{
	static const struct { int filter; const char *name; } f[] = {
		{ARCHIVE_FILTER_GZIP, "x.gz"}, {ARCHIVE_FILTER_ZSTD, "x.zst"},
		{ARCHIVE_FILTER_XZ, "x.xz"}, {ARCHIVE_FILTER_BZIP2, "x.bz2"},
	};
	static unsigned char src[200000];
	unsigned char *got;
	size_t len, i, k;

	for (i = 0; i < sizeof src; i++)
		src[i] = (unsigned char)(i % 251 < 100 ? 0 : i * 13);
	for (k = 0; k < sizeof f / sizeof f[0]; k++) {
		if (put_compressed(tpath(f[k].name), f[k].filter, src, sizeof src) != 0) {
			printf("  note: cannot write %s fixture, filter not built in\n", f[k].name);
			continue;
		}
		got = NULL;
		T_OK(mgpu_read_maybe_compressed(tpath(f[k].name), &got, &len));
		T_CHECK(len == sizeof src && got && memcmp(got, src, len) == 0, "%s: len %zu",
			f[k].name, len);
		free(got);
	}
}

static void test_decomp_truncated(void)
{
	static unsigned char src[100000];
	static unsigned char sentinel[] = "sentinel";
	unsigned char *got = sentinel;
	size_t len = 5, i;
	struct stat st;

	for (i = 0; i < sizeof src; i++)
		src[i] = (unsigned char)(i * i >> 3);
	T_CHECK(put_compressed(tpath("t.gz"), ARCHIVE_FILTER_GZIP, src, sizeof src) == 0,
		"fixture");
	T_CHECK(stat(tpath("t.gz"), &st) == 0, "stat");
	T_CHECK(truncate(tpath("t.gz"), st.st_size / 2) == 0, "truncate");
	T_FAILS(mgpu_read_maybe_compressed(tpath("t.gz"), &got, &len), MGPU_EFORMAT,
		tpath("t.gz"));
	T_CHECK(got == NULL && len == 0, "output not cleared");
	/* cut just the 8-byte trailer (crc + size): still an error */
	T_CHECK(put_compressed(tpath("t2.gz"), ARCHIVE_FILTER_GZIP, src, sizeof src) == 0,
		"fixture");
	T_CHECK(stat(tpath("t2.gz"), &st) == 0, "stat");
	T_CHECK(truncate(tpath("t2.gz"), st.st_size - 4) == 0, "truncate");
	T_FAILS(mgpu_read_maybe_compressed(tpath("t2.gz"), &got, &len), MGPU_EFORMAT,
		"cannot decompress");
}

static void test_decomp_errors(void)
{
	static unsigned char src[5000];
	unsigned char *got;
	size_t len;

	T_FAILS(mgpu_read_maybe_compressed(tpath("nope"), &got, &len), MGPU_EIO,
		"nope': cannot open");
	T_FAILS(mgpu_read_maybe_compressed(tmpdir, &got, &len), MGPU_EIO, "is a directory");
	T_CHECK(put_compressed(tpath("big.gz"), ARCHIVE_FILTER_GZIP, src, sizeof src) == 0,
		"fixture");
	T_FAILS(mgpu_read_maybe_compressed_max(tpath("big.gz"), 1000, &got, &len),
		MGPU_ERANGE, "decompressed size exceeds 1000 bytes");
	T_OK(mgpu_read_maybe_compressed_max(tpath("big.gz"), sizeof src, &got, &len));
	free(got);
}

/* ---------------- idx ---------------- */

static void test_idx_types(void)
{
	unsigned char buf[256];
	uint32_t dims[2] = {2, 3};
	struct mgpu_idx idx;
	size_t n, i;
	float f = -1.5f;
	double d = 3.25;
	uint32_t fb;
	uint64_t db;

	/* i16: -2 and 300, as a 1-D pair */
	n = idx_header(buf, MGPU_IDX_I16, 1, dims);
	buf[n++] = 0xFF, buf[n++] = 0xFE, buf[n++] = 0x01, buf[n++] = 0x2C;
	T_OK(mgpu_idx_parse(buf, n, "i16", &idx));
	T_CHECK(idx.count == 2 && mgpu_idx_value(&idx, 0) == -2 &&
		mgpu_idx_value(&idx, 1) == 300, "i16 values");
	/* s8, u8 */
	n = idx_header(buf, MGPU_IDX_S8, 2, dims);
	for (i = 0; i < 6; i++)
		buf[n++] = (unsigned char)(0xFD + i); /* -3 .. 2 */
	T_OK(mgpu_idx_parse(buf, n, "s8", &idx));
	T_CHECK(idx.ndim == 2 && idx.dims[0] == 2 && idx.dims[1] == 3 && idx.count == 6,
		"shape");
	T_CHECK(mgpu_idx_value(&idx, 0) == -3 && mgpu_idx_value(&idx, 5) == 2, "s8 values");
	buf[2] = MGPU_IDX_U8;
	T_OK(mgpu_idx_parse(buf, n, "u8", &idx));
	T_CHECK(mgpu_idx_value(&idx, 0) == 253, "u8 value");
	T_CHECK(idx.owned == NULL && idx.data == buf + 12, "parse is a view");
	/* i32, f32, f64 */
	n = idx_header(buf, MGPU_IDX_I32, 1, dims);
	n += put_be32(buf + n, 0xFFFFFF9C);
	n += put_be32(buf + n, 70000);
	T_OK(mgpu_idx_parse(buf, n, "i32", &idx));
	T_CHECK(mgpu_idx_value(&idx, 0) == -100 && mgpu_idx_value(&idx, 1) == 70000, "i32");
	dims[0] = 1;
	memcpy(&fb, &f, 4);
	n = idx_header(buf, MGPU_IDX_F32, 1, dims);
	n += put_be32(buf + n, fb);
	T_OK(mgpu_idx_parse(buf, n, "f32", &idx));
	T_CHECK(mgpu_idx_value(&idx, 0) == -1.5, "f32 %g", mgpu_idx_value(&idx, 0));
	memcpy(&db, &d, 8);
	n = idx_header(buf, MGPU_IDX_F64, 1, dims);
	n += put_be32(buf + n, (uint32_t)(db >> 32));
	n += put_be32(buf + n, (uint32_t)db);
	T_OK(mgpu_idx_parse(buf, n, "f64", &idx));
	T_CHECK(mgpu_idx_value(&idx, 0) == 3.25, "f64 %g", mgpu_idx_value(&idx, 0));
	T_CHECK(strcmp(mgpu_idx_type_name(MGPU_IDX_F64), "f64") == 0 &&
		mgpu_idx_type_name(7) == NULL, "type names");
	mgpu_idx_free(&idx);
}

static void test_idx_errors(void)
{
	unsigned char buf[64];
	uint32_t dims[4] = {2, 3, 0x10000, 0x10000};
	struct mgpu_idx idx;
	size_t n;

	memset(buf, 0, sizeof buf);
	T_FAILS(mgpu_idx_parse(buf, 3, "f", &idx), MGPU_EFORMAT, "'f': truncated: 3 bytes");
	n = idx_header(buf, MGPU_IDX_U8, 2, dims);
	buf[0] = 1;
	T_FAILS(mgpu_idx_parse(buf, n, "f", &idx), MGPU_EFORMAT, "'f': bad IDX magic 0x01000802");
	buf[0] = 0;
	buf[2] = 0x0A;
	T_FAILS(mgpu_idx_parse(buf, n, "f", &idx), MGPU_EFORMAT, "bad IDX magic 0x00000a02");
	buf[2] = MGPU_IDX_U8;
	buf[3] = 0;
	T_FAILS(mgpu_idx_parse(buf, n, "f", &idx), MGPU_EFORMAT, "has 0 dimensions");
	buf[3] = 5;
	T_FAILS(mgpu_idx_parse(buf, sizeof buf, "f", &idx), MGPU_EFORMAT, "has 5 dimensions");
	buf[3] = 2;
	T_FAILS(mgpu_idx_parse(buf, 9, "f", &idx), MGPU_EFORMAT,
		"truncated: 9 bytes, the IDX header of 2 dimensions needs 12");
	memset(buf + n, 7, 6);
	T_OK(mgpu_idx_parse(buf, n + 6, "f", &idx));
	T_FAILS(mgpu_idx_parse(buf, n + 5, "f", &idx), MGPU_EFORMAT,
		"'f': truncated: header says 6 bytes of data, file has 5");
	T_FAILS(mgpu_idx_parse(buf, n + 8, "f", &idx), MGPU_EFORMAT,
		"'f': 2 bytes of trailing garbage");
	n = idx_header(buf, MGPU_IDX_F64, 4, dims);
	dims[0] = 0xFFFFFFFF;
	n = idx_header(buf, MGPU_IDX_F64, 4, dims);
	T_FAILS(mgpu_idx_parse(buf, n, "f", &idx), MGPU_ERANGE, "'f': IDX dimensions overflow");
	/* product fits, times 8 bytes does not */
	dims[0] = 0x10000, dims[1] = 0x10000, dims[2] = 0x10000, dims[3] = 0x2000;
	n = idx_header(buf, MGPU_IDX_F64, 4, dims);
	T_FAILS(mgpu_idx_parse(buf, n, "f", &idx), MGPU_ERANGE, "overflow");
	/* a huge but representable claim is simply truncated */
	dims[0] = 0xFFFFFFFF;
	n = idx_header(buf, MGPU_IDX_U8, 1, dims);
	T_FAILS(mgpu_idx_parse(buf, n, "f", &idx), MGPU_EFORMAT,
		"header says 4294967295 bytes of data, file has 0");
	T_FAILS(mgpu_idx_load(tpath("missing.idx"), &idx), MGPU_EIO, "cannot open");
	T_CHECK(idx.owned == NULL && idx.data == NULL, "failed load leaves a zeroed struct");
}

static void test_idx_load_gz(void)
{
	uint32_t dims[3] = {4, 5, 6};
	struct mgpu_idx idx;

	put_idx_u8(tpath("a.idx.gz"), 3, dims, 3, 256, 1);
	T_OK(mgpu_idx_load(tpath("a.idx.gz"), &idx));
	T_CHECK(idx.count == 120 && idx.ndim == 3 && idx.dims[2] == 6, "shape");
	T_CHECK(idx.owned && mgpu_idx_value(&idx, 119) == 119 * 3 % 256, "value");
	mgpu_idx_free(&idx);
	T_CHECK(idx.owned == NULL && idx.count == 0, "free zeroes");
	put_file(tpath("junk.gz"), "\x1f\x8b\x08\x00garbage-garbage", 19);
	T_FAILS(mgpu_idx_load(tpath("junk.gz"), &idx), MGPU_EFORMAT, "junk.gz'");
}

/* A small .gz whose header declares 10 bytes but which decodes to 96 MiB is
 * refused after reading about what the header declares: memory stays low. */
static void test_idx_load_bomb(void)
{
	uint32_t dims[1] = {10};
	unsigned char head[32];
	struct mgpu_idx idx;
	size_t hn = idx_header(head, MGPU_IDX_U8, 1, dims);
	unsigned char got[16];
	size_t n;
	long before;

	T_CHECK(put_gz_zeros(tpath("bomb.gz"), head, hn, (size_t)96 << 20) == 0, "fixture");
	T_OK(mgpu_read_maybe_compressed_head(tpath("bomb.gz"), got, sizeof got, &n));
	T_CHECK(n == sizeof got && memcmp(got, head, hn) == 0, "head: %zu bytes", n);
	before = maxrss_kib();
	T_FAILS(mgpu_idx_load(tpath("bomb.gz"), &idx), MGPU_EFORMAT,
		"bomb.gz': decodes to more than the 18 bytes its IDX header declares");
	T_CHECK(maxrss_kib() - before < 32 * 1024, "max RSS grew by %ld KiB",
		maxrss_kib() - before);
	T_CHECK(idx.owned == NULL && idx.count == 0, "failed load leaves a zeroed struct");
	/* Trailing garbage within the slack keeps its precise message. */
	T_CHECK(put_gz_zeros(tpath("tail.gz"), head, hn, 10 + 7) == 0, "fixture");
	T_FAILS(mgpu_idx_load(tpath("tail.gz"), &idx), MGPU_EFORMAT,
		"7 bytes of trailing garbage after 10 bytes of data");
	/* A file shorter than the head reads whole. */
	T_OK(mgpu_read_maybe_compressed_head(tpath("tail.gz"), got, 4, &n));
	T_CHECK(n == 4, "n %zu", n);
	put_file(tpath("tiny"), "ab", 2);
	T_OK(mgpu_read_maybe_compressed_head(tpath("tiny"), got, sizeof got, &n));
	T_CHECK(n == 2 && memcmp(got, "ab", 2) == 0, "tiny: n %zu", n);
	T_FAILS(mgpu_read_maybe_compressed_head(tpath("none"), got, 4, &n), MGPU_EIO,
		"none': cannot open");
}

/* ---------------- as samples ---------------- */

static void test_samples_load(void)
{
	uint32_t im[3] = {7, 2, 3}, lb[1] = {7};
	unsigned char row[6];
	struct mgpu_samples ds;

	put_idx_u8(tpath("im"), 3, im, 5, 251, 0);
	put_idx_u8(tpath("lb.gz"), 1, lb, 1, 4, 1); /* labels 0 1 2 3 0 1 2 */
	T_OK(mgpu_idx_load_samples(tpath("im"), tpath("lb.gz"), &ds));
	T_CHECK(ds.n == 7 && ds.d == 6 && ds.classes == 4, "n %zu d %zu classes %d", ds.n,
		ds.d, ds.classes);
	/* (N,H,W) images are one-channel: (1,H,W), as a conv net reads them */
	T_CHECK(ds.dtype == MGPU_DTYPE_U8 && ds.ndim == 3 && ds.shape[0] == 1 &&
		ds.shape[1] == 2 && ds.shape[2] == 3 && ds.row_nbytes == 6 && ds.cap == 7,
		"u8 rows of shape (1,2,3): %s %d %ux%ux%u", mgpu_dtype_name(ds.dtype), ds.ndim,
		ds.shape[0], ds.shape[1], ds.shape[2]);
	T_CHECK(ds.x && ds.x[6 * 6 + 5] == (41 * 5) % 251, "x");
	T_CHECK(ds.y && ds.y[3] == 3 && ds.y[6] == 2, "y");
	memcpy(row, ds.x, 6);
	T_OK(mgpu_samples_push(&ds, row, 1)); /* a set like any other: it grows */
	T_CHECK(ds.n == 8 && ds.x && memcmp(ds.x + 7 * 6, ds.x, 6) == 0 && ds.y[7] == 1,
		"pushed row");
	mgpu_samples_free(&ds);
	T_CHECK(ds.x == NULL && ds.n == 0, "free zeroes");
}

/* Flat (N,D) files give rows of shape (D); (N,C,H,W) keep (C,H,W). */
static void test_samples_shapes(void)
{
	uint32_t flat[2] = {7, 6}, chw[4] = {7, 3, 2, 2}, lb[1] = {7};
	struct mgpu_samples ds;

	put_idx_u8(tpath("lb2"), 1, lb, 1, 4, 0);
	put_idx_u8(tpath("flat"), 2, flat, 5, 251, 0);
	T_OK(mgpu_idx_load_samples(tpath("flat"), tpath("lb2"), &ds));
	T_CHECK(ds.ndim == 1 && ds.shape[0] == 6 && ds.d == 6, "flat: %d dims", ds.ndim);
	mgpu_samples_free(&ds);
	put_idx_u8(tpath("chw"), 4, chw, 5, 251, 0);
	T_OK(mgpu_idx_load_samples(tpath("chw"), tpath("lb2"), &ds));
	T_CHECK(ds.ndim == 3 && ds.shape[0] == 3 && ds.shape[1] == 2 && ds.shape[2] == 2 &&
		ds.d == 12, "chw: %d dims", ds.ndim);
	mgpu_samples_free(&ds);
}

static void test_samples_errors(void)
{
	uint32_t im[3] = {4, 2, 2}, im1[1] = {4}, lb[1] = {4}, lb3[1] = {3}, lb2[2] = {2, 2};
	uint32_t none[3] = {0, 2, 2};
	unsigned char buf[64];
	struct mgpu_samples ds;
	size_t n;

	put_idx_u8(tpath("im4"), 3, im, 1, 256, 0);
	put_idx_u8(tpath("im1d"), 1, im1, 1, 256, 0);
	put_idx_u8(tpath("im0"), 3, none, 1, 256, 0);
	put_idx_u8(tpath("lb4"), 1, lb, 1, 2, 0);
	put_idx_u8(tpath("lb3"), 1, lb3, 1, 2, 0);
	put_idx_u8(tpath("lb2d"), 2, lb2, 1, 2, 0);
	T_FAILS(mgpu_idx_load_samples(tpath("im4"), tpath("lb3"), &ds), MGPU_EFORMAT,
		"lb3': 3 labels, but '");
	T_CHECK(ds.x == NULL && ds.y == NULL, "failure leaves a zeroed set");
	T_FAILS(mgpu_idx_load_samples(tpath("im1d"), tpath("lb4"), &ds), MGPU_EFORMAT,
		"im1d': images need at least 2 dimensions, file has 1");
	T_FAILS(mgpu_idx_load_samples(tpath("im0"), tpath("lb4"), &ds), MGPU_EFORMAT,
		"im0': no samples");
	T_FAILS(mgpu_idx_load_samples(tpath("im4"), tpath("lb2d"), &ds), MGPU_EFORMAT,
		"lb2d': labels must have 1 dimension, file has 2");
	T_FAILS(mgpu_idx_load_samples(tpath("im4"), tpath("nolabels"), &ds), MGPU_EIO,
		"nolabels': cannot open");
	T_FAILS(mgpu_idx_load_samples(tpath("lb4"), tpath("lb4"), &ds), MGPU_EFORMAT,
		"images need at least 2 dimensions");
	/* images of the wrong type */
	n = idx_header(buf, MGPU_IDX_S8, 3, im);
	memset(buf + n, 1, 16);
	put_file(tpath("ims8"), buf, n + 16);
	T_FAILS(mgpu_idx_load_samples(tpath("ims8"), tpath("lb4"), &ds), MGPU_EFORMAT,
		"ims8': images must be IDX type u8 (0x08), not s8");
	/* float labels */
	n = idx_header(buf, MGPU_IDX_F32, 1, lb);
	memset(buf + n, 0, 16);
	put_file(tpath("lbf"), buf, n + 16);
	T_FAILS(mgpu_idx_load_samples(tpath("im4"), tpath("lbf"), &ds), MGPU_EFORMAT,
		"lbf': labels must be an integer IDX type, not f32");
	/* i16 labels: 300 at index 2 is out of range */
	n = idx_header(buf, MGPU_IDX_I16, 1, lb);
	memcpy(buf + n, "\x00\x01\x00\x02\x01\x2c\x00\x00", 8);
	put_file(tpath("lb300"), buf, n + 8);
	T_FAILS(mgpu_idx_load_samples(tpath("im4"), tpath("lb300"), &ds), MGPU_ERANGE,
		"lb300': label 300 out of range [0,256) at index 2");
	/* s8 labels: -1 at index 1 */
	n = idx_header(buf, MGPU_IDX_S8, 1, lb);
	memcpy(buf + n, "\x00\xff\x00\x00", 4);
	put_file(tpath("lbneg"), buf, n + 4);
	T_FAILS(mgpu_idx_load_samples(tpath("im4"), tpath("lbneg"), &ds), MGPU_ERANGE,
		"lbneg': label -1 out of range [0,256) at index 1");
	/* i16 labels in range work */
	memcpy(buf + n - 4 + 2, "\x0b", 1); /* type byte: 0x0B */
	n = idx_header(buf, MGPU_IDX_I16, 1, lb);
	memcpy(buf + n, "\x00\x01\x00\x02\x00\xff\x00\x00", 8);
	put_file(tpath("lb255"), buf, n + 8);
	T_OK(mgpu_idx_load_samples(tpath("im4"), tpath("lb255"), &ds));
	T_CHECK(ds.classes == 256 && ds.y[2] == 255, "classes %d", ds.classes);
	mgpu_samples_free(&ds);
}

static void test_samples_dir(void)
{
	uint32_t tr[3] = {10, 3, 3}, te[3] = {4, 3, 3}, te9[2] = {4, 8}, ltr[1] = {10}, lte[1] = {4};
	struct mgpu_samples a, b;
	char dir[512];

	snprintf(dir, sizeof dir, "%s/mn", tmpdir);
	mkdir(dir, 0777);
	put_idx_u8(tpath("mn/train-images-idx3-ubyte.gz"), 3, tr, 1, 256, 1);
	put_idx_u8(tpath("mn/train-labels-idx1-ubyte"), 1, ltr, 1, 10, 0);
	put_idx_u8(tpath("mn/t10k-images-idx3-ubyte"), 3, te, 2, 256, 0);
	T_FAILS(mgpu_idx_load_dir(dir, &a, &b), MGPU_EIO,
		"mn': missing t10k-labels-idx1-ubyte (or t10k-labels-idx1-ubyte.gz)");
	T_CHECK(a.x == NULL && b.x == NULL, "failure frees the train set");
	put_idx_u8(tpath("mn/t10k-labels-idx1-ubyte.gz"), 1, lte, 3, 10, 1);
	T_OK(mgpu_idx_load_dir(dir, &a, &b));
	T_CHECK(a.n == 10 && a.d == 9 && a.classes == 10, "train %zu %zu %d", a.n, a.d,
		a.classes);
	T_CHECK(b.n == 4 && b.d == 9 && b.classes == 10 && b.y[3] == 9, "test %zu %zu %d",
		b.n, b.d, b.classes);
	T_CHECK(b.x[1] == 2 && a.x[89] == 89, "pixels");
	mgpu_samples_free(&a);
	mgpu_samples_free(&b);
	put_idx_u8(tpath("mn/t10k-images-idx3-ubyte"), 2, te9, 1, 256, 0);
	T_FAILS(mgpu_idx_load_dir(dir, &a, &b), MGPU_EFORMAT,
		"mn': train samples have 9 features, t10k samples 8");
	T_FAILS(mgpu_idx_load_dir(tpath("nodir"), &a, &b), MGPU_EIO,
		"nodir': missing train-images-idx3-ubyte");
}

static void test_fashion_mnist(void)
{
	struct mgpu_samples tr, te;
	size_t i, hist[10] = {0};
	long sum = 0;

	if (access(FMNIST "/train-images-idx3-ubyte.gz", R_OK) != 0)
		T_SKIP("%s not installed (dataset-fashion-mnist)", FMNIST);
	T_OK(mgpu_idx_load_dir(FMNIST, &tr, &te));
	T_CHECK(tr.n == 60000 && tr.d == 784 && tr.classes == 10, "train %zu x %zu, %d classes",
		tr.n, tr.d, tr.classes);
	T_CHECK(tr.ndim == 3 && tr.shape[0] == 1 && tr.shape[1] == 28 && tr.shape[2] == 28,
		"Fashion-MNIST images are not 1x28x28");
	T_CHECK(te.n == 10000 && te.d == 784 && te.classes == 10, "test %zu x %zu, %d classes",
		te.n, te.d, te.classes);
	for (i = 0; i < tr.n && tr.y; i++)
		hist[tr.y[i]]++;
	for (i = 0; i < 10; i++)
		T_CHECK(hist[i] == 6000, "class %zu has %zu samples", i, hist[i]);
	for (i = 0; i < tr.d && tr.x; i++)
		sum += tr.x[i];
	T_CHECK(sum > 0, "first image is blank");
	mgpu_samples_free(&tr);
	mgpu_samples_free(&te);
}

int main(void)
{
	if (t_tmpdir_make("idx") < 0)
		return 1;
	T_RUN(test_decomp_raw);
	T_RUN(test_decomp_empty);
	T_RUN(test_decomp_filters);
	T_RUN(test_decomp_truncated);
	T_RUN(test_decomp_errors);
	T_RUN(test_idx_types);
	T_RUN(test_idx_errors);
	T_RUN(test_idx_load_gz);
	T_RUN(test_idx_load_bomb);
	T_RUN(test_samples_load);
	T_RUN(test_samples_shapes);
	T_RUN(test_samples_errors);
	T_RUN(test_samples_dir);
	T_RUN(test_fashion_mnist);
	t_tmpdir_remove();
	return T_DONE();
}
