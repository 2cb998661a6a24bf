/*
 * test_wds.c - unit tests of the WebDataset reader and the shard writer:
 * shards read back sample for sample and are byte-identical when written
 * twice; archives made by libarchive (tar.gz of PGM images, zip) read
 * correctly; and every bad input gives its error
 * naming the archive and the entry.
 */
#include <archive.h>       /* archive_write_* */
#include <archive_entry.h> /* archive_entry_* */
#include <signal.h>        /* SIGINT */
#include <stdio.h>         /* snprintf */
#include <stdlib.h>        /* free */
#include <string.h>        /* memcmp, strlen */
#include <unistd.h>        /* truncate */

#include "core/cancel.h"   /* mgpu_cancel_raise, mgpu_cancel_clear */
#include "core/err.h"      /* mgpu_errmsg, MGPU_E* */
#include "core/io.h"       /* mgpu_read_file */
#include "data/npy.h"      /* mgpu_npy_header */
#include "data/shard.h"    /* mgpu_shard_write */
#include "data/wds.h"      /* mgpu_wds_read */
#include "../t.h"          /* T_RUN, T_CHECK, T_OK, T_FAILS */
#include "../tmpdir.h" /* tmpdir, tpath, t_tmpdir_make */


struct mem {
	const char *name;
	const void *data;
	size_t len;
};

/* Write members with libarchive: format (ARCHIVE_FORMAT_*), filter. */
static void put_archive(const char *path, int format, int filter, const struct mem *m, int n)
{
	struct archive *a = archive_write_new();
	struct archive_entry *e;
	int i;

	archive_write_set_format(a, format);
	archive_write_add_filter(a, filter);
	archive_write_open_filename(a, path);
	for (i = 0; i < n; i++) {
		e = archive_entry_new();
		archive_entry_set_pathname(e, m[i].name);
		archive_entry_set_filetype(e, AE_IFREG);
		archive_entry_set_perm(e, 0644);
		archive_entry_set_size(e, (la_int64_t)m[i].len);
		archive_write_header(a, e);
		archive_write_data(a, m[i].data, m[i].len);
		archive_entry_free(e);
	}
	archive_write_close(a);
	archive_write_free(a);
}

static void small_set(struct mgpu_samples *s, size_t n)
{
	uint32_t shape[2] = { 2, 3 };
	unsigned char row[6];
	size_t i, j;

	mgpu_samples_init(s, MGPU_DTYPE_U8, 2, shape);
	for (i = 0; i < n; i++) {
		for (j = 0; j < 6; j++)
			row[j] = (unsigned char)(i * 7 + j);
		mgpu_samples_push(s, row, (int32_t)(i % 3));
	}
}

static void test_shard_roundtrip(void)
{
	struct mgpu_samples s, r = { 0 };
	uint32_t idx[5] = { 4, 0, 3, 1, 2 };
	char sha1[MGPU_SHA256_HEX], sha2[MGPU_SHA256_HEX], sha3[MGPU_SHA256_HEX];
	unsigned char *a, *b;
	uint64_t n1, n2;
	size_t la, lb, i;

	small_set(&s, 5);
	T_OK(mgpu_shard_write(tpath("a.tar"), &s, idx, 5, &n1, sha1));
	T_OK(mgpu_shard_write(tpath("b.tar"), &s, idx, 5, &n2, sha2));
	T_OK(mgpu_read_file(tpath("a.tar"), &a, &la));
	T_OK(mgpu_read_file(tpath("b.tar"), &b, &lb));
	T_CHECK(n1 == la && la == lb && la % 10240 == 0 && memcmp(a, b, la) == 0,
		"shards differ or bad size %zu", la);
	T_CHECK(strcmp(sha1, sha2) == 0, "sha");
	free(a);
	free(b);
	T_OK(mgpu_wds_read(tpath("a.tar"), &r, sha3));
	T_CHECK(strcmp(sha1, sha3) == 0, "reader's sha256 %s vs writer's %s", sha3, sha1);
	T_CHECK(r.n == 5 && r.ndim == 2 && r.shape[0] == 2 && r.shape[1] == 3 &&
		r.dtype == MGPU_DTYPE_U8, "n %zu ndim %d", r.n, r.ndim);
	for (i = 0; i < 5 && r.n == 5; i++)
		T_CHECK(memcmp(r.x + i * 6, s.x + idx[i] * 6, 6) == 0 && r.y[i] == s.y[idx[i]],
			"sample %zu", i);
	mgpu_samples_free(&s);
	mgpu_samples_free(&r);
}

/* A stop request fails the shard write and leaves no file, not even the
 * temporary. */
static void test_shard_cancel(void)
{
	struct mgpu_samples s;
	uint32_t idx[5] = { 0, 1, 2, 3, 4 };
	char sha[MGPU_SHA256_HEX], tmp[600];
	uint64_t n;

	small_set(&s, 5);
	mgpu_cancel_raise(SIGINT);
	T_FAILS(mgpu_shard_write(tpath("x.tar"), &s, idx, 5, &n, sha), MGPU_EINTR,
		"interrupted by SIGINT");
	mgpu_cancel_clear();
	snprintf(tmp, sizeof tmp, "%s.tmp.%ld", tpath("x.tar"), (long)getpid());
	T_CHECK(access(tpath("x.tar"), F_OK) != 0 && access(tmp, F_OK) != 0,
		"an interrupted write left a file");
	mgpu_samples_free(&s);
}

/* What the progress hook saw: calls, and the last bytes and samples. */
struct seen {
	int calls, backwards;
	uint64_t nbytes;
	size_t nsamples;
};

static void seen_call(void *ctx, uint64_t nbytes, size_t nsamples)
{
	struct seen *w = ctx;

	w->backwards |= w->calls && (nbytes < w->nbytes || nsamples < w->nsamples);
	w->calls++;
	w->nbytes = nbytes, w->nsamples = nsamples;
}

/* A watched read hears of every member (two per sample), bytes and
 * samples only growing, ending at every sample and at most the file's
 * bytes; a stop request ends a long read (64 members and more). */
static void test_read_watched(void)
{
	struct mgpu_samples s, r = { 0 };
	struct seen w = { 0 };
	uint32_t idx[100];
	uint64_t n;
	int i;

	small_set(&s, 100);
	for (i = 0; i < 100; i++)
		idx[i] = (uint32_t)i;
	T_OK(mgpu_shard_write(tpath("w.tar"), &s, idx, 100, &n, NULL));
	T_OK(mgpu_wds_read_watched(tpath("w.tar"), &r, NULL, seen_call, &w));
	T_CHECK(r.n == 100, "read %zu samples", r.n);
	T_CHECK(w.calls == 200 && !w.backwards, "%d calls (backwards %d)", w.calls, w.backwards);
	T_CHECK(w.nsamples == 99 || w.nsamples == 100, "last call: %zu samples", w.nsamples);
	T_CHECK(w.nbytes > 0 && w.nbytes <= n, "last call: %llu bytes of %llu",
		(unsigned long long)w.nbytes, (unsigned long long)n);
	mgpu_samples_free(&r);
	mgpu_cancel_raise(SIGTERM);
	T_FAILS(mgpu_wds_read(tpath("w.tar"), &r, NULL), MGPU_EINTR, "interrupted by SIGTERM");
	mgpu_cancel_clear();
	mgpu_samples_free(&r);
	mgpu_samples_free(&s);
}

static void test_libarchive_made(void)
{
	static const char pgm1[] = "P5 2 2 255\n\1\2\3\4", pgm2[] = "P5\n2 2\n255\n\5\6\7\10";
	struct mem m[] = {
		{ "d/x1.pgm", pgm1, sizeof pgm1 - 1 }, { "d/x1.cls", "3\n", 2 },
		{ "d/x1.json", "{}", 2 }, { "d/x2.cls", " 1", 2 },
		{ "d/x2.pgm", pgm2, sizeof pgm2 - 1 },
	};
	struct mgpu_samples r = { 0 };
	size_t kl;
	const char *ext;

	put_archive(tpath("p.tar.gz"), ARCHIVE_FORMAT_TAR_PAX_RESTRICTED, ARCHIVE_FILTER_GZIP,
		    m, 5);
	T_OK(mgpu_wds_read(tpath("p.tar.gz"), &r, NULL));
	T_CHECK(r.n == 2 && r.y[0] == 3 && r.y[1] == 1 && r.x[4] == 5 && r.d == 4,
		"n %zu", r.n);
	mgpu_samples_free(&r);
	put_archive(tpath("p.zip"), ARCHIVE_FORMAT_ZIP, ARCHIVE_FILTER_NONE, m, 5);
	T_OK(mgpu_wds_read(tpath("p.zip"), &r, NULL));
	T_CHECK(r.n == 2 && r.y[1] == 1, "zip: n %zu", r.n);
	mgpu_samples_free(&r);
	mgpu_wds_split_name("a.b/dir/abc.input.npy", &kl, &ext);
	T_CHECK(kl == 11 && strcmp(ext, "input.npy") == 0, "key %zu ext %s", kl, ext);
}

/* One-sample npy member of shape (n). */
static size_t npy(char *buf, const char *descr, uint32_t n, size_t elem)
{
	size_t h = mgpu_npy_header(buf, descr, 1, &n);
	memset(buf + h, 1, n * elem);
	return h + n * elem;
}

static void bad(const char *file, struct mem *m, int n, int code, const char *want)
{
	struct mgpu_samples r = { 0 };

	put_archive(tpath(file), ARCHIVE_FORMAT_TAR_USTAR, ARCHIVE_FILTER_NONE, m, n);
	T_FAILS(mgpu_wds_read(tpath(file), &r, NULL), code, want);
	T_CHECK(strstr(mgpu_errmsg(), file) != NULL, "no file name: %s", mgpu_errmsg());
	mgpu_samples_free(&r);
}

static void test_errors(void)
{
	static char a4[256], a5[256], f4[256];
	size_t n4 = npy(a4, "|u1", 4, 1), n5 = npy(a5, "|u1", 5, 1), nf = npy(f4, "<f4", 4, 4);
	struct mem m[4];
	struct mgpu_samples r = { 0 };

	m[0] = (struct mem){ "k1.npy", a4, n4 }, m[1] = (struct mem){ "k1.cls", "2", 1 };
	m[2] = (struct mem){ "k2.npy", a5, n5 }, m[3] = (struct mem){ "k2.cls", "1", 1 };
	bad("shape.tar", m, 4, MGPU_EFORMAT, "entry 'k2.npy': shape 5 differs from the first "
	    "sample's 4");
	m[2].data = f4, m[2].len = nf;
	bad("dtype.tar", m, 4, MGPU_EFORMAT, "entry 'k2.npy': dtype f32 differs");
	bad("nolabel.tar", m, 1, MGPU_EFORMAT, "entry 'k1': no .cls label");
	bad("noinput.tar", m + 1, 1, MGPU_EFORMAT, "entry 'k1': no .npy, .pgm, .ppm, .png or .jpg input");
	m[1].data = "cat", m[1].len = 3;
	bad("word.tar", m, 2, MGPU_EFORMAT, "entry 'k1.cls': label 'cat' is not a decimal");
	m[1].data = "", m[1].len = 0;
	bad("empty.tar", m, 2, MGPU_EFORMAT, "entry 'k1.cls': label '' is not a decimal");
	m[1].data = "256", m[1].len = 3;
	bad("range.tar", m, 2, MGPU_ERANGE, "entry 'k1.cls': label 256 out of range [0,256)");
	m[1].data = "-1", m[1].len = 2;
	bad("neg.tar", m, 2, MGPU_ERANGE, "label -1 out of range");
	m[1].data = "2", m[1].len = 1;
	m[0].len = n4 - 1;
	bad("short.tar", m, 2, MGPU_EFORMAT, "entry 'k1.npy': truncated");
	m[0].len = n4;
	T_OK(mgpu_shard_write(tpath("t.tar"), &(struct mgpu_samples){ 0 }, NULL, 0,
			      &(uint64_t){ 0 }, NULL));
	put_archive(tpath("cut.tar"), ARCHIVE_FORMAT_TAR_USTAR, ARCHIVE_FILTER_NONE, m, 4);
	T_CHECK(truncate(tpath("cut.tar"), 1024 + 300) == 0, "truncate");
	T_FAILS(mgpu_wds_read(tpath("cut.tar"), &r, NULL), MGPU_EFORMAT, "entry 'k1.npy'");
	mgpu_samples_free(&r);
	T_FAILS(mgpu_wds_read(tpath("missing.tar"), &r, NULL), MGPU_EIO, "missing.tar");
	T_FAILS(mgpu_wds_read_mem("garbage, not an archive at all", 30, "g", &r),
		MGPU_EFORMAT, "'g': not a readable tar or zip archive");
	mgpu_samples_free(&r);
}

int main(void)
{
	if (t_tmpdir_make("wds") < 0)
		return 1;
	T_RUN(test_shard_roundtrip);
	T_RUN(test_shard_cancel);
	T_RUN(test_read_watched);
	T_RUN(test_libarchive_made);
	T_RUN(test_errors);
	t_tmpdir_remove();
	return T_DONE();
}
