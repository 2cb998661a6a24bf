/*
 * test_loader.c - unit tests of data sources and the prefetching loader:
 * a source opens a cache, a manifest, an archive and an IDX directory;
 * batches come out in the requested order with any prefetch (0, 1, 3),
 * with a short last batch, across passes and restarts; float32 rows get
 * the affine; a corrupt chunk surfaces from next() naming the chunk; and
 * the normalisation from a cache header equals the one computed from rows.
 */
#include <stdio.h>  /* snprintf, FILE */
#include <string.h> /* memcmp */
#include <sys/stat.h> /* mkdir */

#include "core/err.h"    /* mgpu_errmsg, MGPU_E* */
#include "data/cache.h"  /* mgpu_cache_write */
#include "data/loader.h" /* mgpu_loader_* */
#include "data/shard.h"  /* mgpu_shard_write */
#include "data/source.h" /* mgpu_source_* */
#include "../t.h"        /* T_RUN, T_CHECK, T_OK, T_FAILS */
#include "../tmpdir.h" /* tmpdir, tpath, t_tmpdir_make */

#define N 300
#define D 20

static struct mgpu_samples set;

static void make(void)
{
	uint32_t shape[3] = { 2, 2, 5 }; /* D values, an image's (C,H,W) */
	unsigned char row[D];
	size_t i, j;

	mgpu_samples_init(&set, MGPU_DTYPE_U8, 3, shape);
	for (i = 0; i < N; i++) {
		for (j = 0; j < D; j++)
			row[j] = (unsigned char)((i * 13 + j) % 256);
		mgpu_samples_push(&set, row, (int32_t)(i % 7));
	}
}

static void write_cache(const char *name, int raw)
{
	struct mgpu_samples *p[3] = { &set, NULL, NULL };
	struct mgpu_cache_opts o = { .level = 1, .threads = 2, .chunk_nbytes = 200, .raw = raw };
	struct mgpu_cache_stats st;

	T_OK(mgpu_cache_write(tpath(name), p, &o, &st));
}

/* A pass over order[0..n) in batches of 32 returns exactly those rows. */
static void pass(struct mgpu_loader *l, const uint32_t *order, size_t n)
{
	const void *x;
	const int32_t *y;
	double w;
	size_t seen = 0;
	int B, rc, i, bad = 0;

	T_OK(mgpu_loader_begin(l, MGPU_SPLIT_TRAIN, order, n));
	while ((rc = mgpu_loader_next(l, &x, &y, &B, &w)) == 0) {
		for (i = 0; i < B; i++) {
			uint32_t r = order[seen + (size_t)i];
			bad |= y[i] != set.y[r] ||
			       memcmp((const unsigned char *)x + (size_t)i * D, set.x + r * D, D);
		}
		T_CHECK(B == 32 || seen + (size_t)B == n, "batch of %d", B);
		T_CHECK(w >= 0, "wait %g", w);
		seen += (size_t)B;
	}
	T_CHECK(rc == 1 && seen == n && !bad, "rc %d, %zu of %zu rows, bad %d", rc, seen, n, bad);
}

static void loader_on(const char *path, int prefetch)
{
	struct mgpu_source s;
	struct mgpu_loader l;
	uint32_t order[N], shape[MGPU_SAMPLES_MAX_DIM];
	size_t i;

	for (i = 0; i < N; i++)
		order[i] = (uint32_t)((i * 97 + 5) % N);
	T_OK(mgpu_source_open(&s, path));
	T_CHECK(s.n[MGPU_SPLIT_TRAIN] == N && s.d == D && s.classes == 7, "source %s", s.what);
	/* every kind of source knows the sample's shape (C,H,W) */
	T_CHECK(mgpu_source_shape(&s, shape) == 3 && shape[0] == 2 && shape[1] == 2 &&
		shape[2] == 5 && mgpu_source_nclasses(&s) == 7, "%s: shape %ux%ux%u", s.what,
		shape[0], shape[1], shape[2]);
	T_OK(mgpu_loader_create(&l, &s, 32, prefetch));
	pass(&l, order, N);
	pass(&l, order + 10, 100);    /* a restart mid-way (resume) */
	pass(&l, order, 64);
	T_OK(mgpu_loader_begin(&l, MGPU_SPLIT_TRAIN, order, N)); /* abandoned pass */
	pass(&l, order, N);
	mgpu_loader_free(&l);
	mgpu_source_close(&s);
}

static void test_sources_and_prefetch(void)
{
	uint64_t nb;
	uint32_t idx[N];
	char sha[MGPU_SHA256_HEX], man[400];
	FILE *fp;
	int i;

	for (i = 0; i < N; i++)
		idx[i] = (uint32_t)i;
	write_cache("z.cache", 0);
	write_cache("r.cache", 1);
	T_OK(mgpu_shard_write(tpath("train-000000.tar"), &set, idx, N, &nb, sha));
	snprintf(man, sizeof man, "split\tpath\tsamples\tbytes\tsha256\ntrain\ttrain-000000.tar"
		 "\t%d\t%llu\t%s\n", N, (unsigned long long)nb, sha);
	fp = fopen(tpath("manifest.tsv"), "w");
	fputs(man, fp);
	fclose(fp);
	loader_on(tpath("z.cache"), 0);
	loader_on(tpath("z.cache"), 3);
	loader_on(tpath("r.cache"), 1);
	loader_on(tpath("train-000000.tar"), 2);
	loader_on(tpath("manifest.tsv"), 0);
	loader_on(tmpdir, 1); /* a directory with manifest.tsv */
}

static void test_norm(void)
{
	struct mgpu_source a, b;
	struct mgpu_norm n1, n2;

	T_OK(mgpu_source_open(&a, tpath("z.cache")));
	T_OK(mgpu_source_open(&b, tpath("train-000000.tar")));
	T_CHECK(mgpu_norm_is_identity(&a.norm) && mgpu_norm_is_identity(&b.norm),
		"a new source's norm is the identity");
	T_OK(mgpu_source_norm(&a, NULL, 0, &n1)); /* from the cache's header */
	T_OK(mgpu_source_norm(&b, NULL, 0, &n2)); /* from the rows */
	T_NEAR(n1.scale, n2.scale, 1e-6);
	T_NEAR(n1.shift, n2.shift, 1e-5);
	T_OK(mgpu_source_check_classes(&a, 7));
	T_FAILS(mgpu_source_check_classes(&a, 6), MGPU_ERANGE, "label 6 out of range [0,6)");
	mgpu_source_close(&a);
	mgpu_source_close(&b);
}

/* float32 rows come out of the source, and so of the loader, normalised
 * with the source's norm; uint8 rows come out as stored. */
static void test_f32_norm(void)
{
	struct mgpu_samples f;
	struct mgpu_samples *p[3] = { &f, NULL, NULL };
	struct mgpu_cache_opts o = { .level = 3, .threads = 1, .chunk_nbytes = 64, .dtype = MGPU_DTYPE_F32 };
	struct mgpu_cache_stats st;
	struct mgpu_source s;
	struct mgpu_loader l;
	const void *x;
	const int32_t *y;
	const struct mgpu_norm n = { 2.0f, 1.0f };
	uint32_t order[2] = { 5, 1 };
	unsigned char u[D];
	float g[D];
	int32_t yy;
	double w;
	int B;

	f = set;
	T_OK(mgpu_cache_write(tpath("f.cache"), p, &o, &st));
	T_OK(mgpu_source_open(&s, tpath("f.cache")));
	T_CHECK(s.dtype == MGPU_DTYPE_F32 && s.row_nbytes == 4 * D, "dtype");
	mgpu_source_set_norm(&s, &n);
	T_OK(mgpu_source_rows(&s, MGPU_SPLIT_TRAIN, order + 1, 1, g, &yy));
	T_CHECK(g[3] == 2.0f * set.x[1 * D + 3] + 1.0f, "rows: %g", (double)g[3]);
	T_OK(mgpu_loader_create(&l, &s, 2, 2));
	T_OK(mgpu_loader_begin(&l, MGPU_SPLIT_TRAIN, order, 2));
	T_OK(mgpu_loader_next(&l, &x, &y, &B, &w));
	T_CHECK(B == 2 && ((const float *)x)[D + 3] == 2.0f * set.x[1 * D + 3] + 1.0f,
		"loader: %g", (double)((const float *)x)[D + 3]);
	mgpu_loader_free(&l);
	mgpu_source_close(&s);
	T_OK(mgpu_source_open(&s, tpath("z.cache")));
	mgpu_source_set_norm(&s, &n);
	T_OK(mgpu_source_rows(&s, MGPU_SPLIT_TRAIN, order + 1, 1, u, &yy));
	T_CHECK(memcmp(u, set.x + D, D) == 0, "uint8 rows must come out as stored");
	mgpu_source_close(&s);
}

static void test_corrupt_chunk(void)
{
	struct mgpu_source s;
	struct mgpu_loader l;
	const void *x;
	const int32_t *y;
	uint32_t order[N];
	double w;
	int B, rc = 0, i, k;
	FILE *fp;
	long off;

	for (i = 0; i < N; i++)
		order[i] = (uint32_t)i;
	write_cache("bad.cache", 0);
	T_OK(mgpu_source_open(&s, tpath("bad.cache")));
	off = (long)s.cache.ix[5].off + 3;
	mgpu_source_close(&s);
	fp = fopen(tpath("bad.cache"), "r+b");
	fseek(fp, off, SEEK_SET);
	fputc(0x5a ^ 0xff, fp);
	fclose(fp);
	T_OK(mgpu_source_open(&s, tpath("bad.cache")));
	for (k = 0; k < 2; k++) {
		T_OK(mgpu_loader_create(&l, &s, 32, k * 2));
		T_OK(mgpu_loader_begin(&l, MGPU_SPLIT_TRAIN, order, N));
		while ((rc = mgpu_loader_next(&l, &x, &y, &B, &w)) == 0)
			;
		T_FAILS(rc, MGPU_EFORMAT, "chunk 5 (train rows 50..59): checksum mismatch");
		mgpu_loader_free(&l);
	}
	mgpu_source_close(&s);
	/* A path that is not there, or a directory of something else, says so
	 * and lists what a data path may be. */
	T_FAILS(mgpu_source_open(&s, tpath("nothing.tar")), MGPU_EIO,
		"nothing.tar': does not exist; want a cache (DIR or DIR/mgpu.cache), a shard "
		"manifest (FILE or DIR/manifest.tsv), a WebDataset archive (tar, tar.gz, "
		"tar.zst, zip), an IDX directory (train-images-idx3-ubyte[.gz] ...) or a UEA/UCR "
		"directory (NAME_TRAIN.ts, NAME_TEST.ts)");
	T_FAILS(mgpu_source_open(&s, tpath("nodir/")), MGPU_EIO, "nodir/': does not exist; want");
	T_CHECK(mkdir(tpath("other"), 0777) == 0, "mkdir");
	T_FAILS(mgpu_source_open(&s, tpath("other")), MGPU_EIO,
		"other': holds no data; want a cache");
	/* An IDX directory missing one file names it. */
	T_CHECK(mkdir(tpath("half"), 0777) == 0 && fclose(fopen(tpath(
		"half/train-images-idx3-ubyte.gz"), "w")) == 0, "fixture");
	T_FAILS(mgpu_source_open(&s, tpath("half")), MGPU_EIO,
		"half': missing train-labels-idx1-ubyte");
}

static void test_idx_dir(void)
{
	struct mgpu_source s;
	uint32_t shape[MGPU_SAMPLES_MAX_DIM];

	if (mgpu_source_open(&s, "/usr/share/datasets/fashion-mnist") < 0)
		T_SKIP("no Fashion-MNIST: %s", mgpu_errmsg());
	T_CHECK(s.n[MGPU_SPLIT_TRAIN] == 60000 && s.n[MGPU_SPLIT_TEST] == 10000 &&
		s.n[MGPU_SPLIT_VAL] == 0 && s.d == 784 && s.classes == 10, "IDX source");
	/* what a conv net takes from the data */
	T_CHECK(mgpu_source_shape(&s, shape) == 3 && shape[0] == 1 && shape[1] == 28 &&
		shape[2] == 28 && mgpu_source_nclasses(&s) == 10, "IDX shape %ux%ux%u",
		shape[0], shape[1], shape[2]);
	mgpu_source_close(&s);
}

int main(void)
{
	if (t_tmpdir_make("loader") < 0)
		return 1;
	make();
	T_RUN(test_sources_and_prefetch);
	T_RUN(test_norm);
	T_RUN(test_f32_norm);
	T_RUN(test_corrupt_chunk);
	T_RUN(test_idx_dir);
	mgpu_samples_free(&set);
	t_tmpdir_remove();
	return T_DONE();
}
