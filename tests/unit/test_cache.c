/*
 * test_cache.c - unit tests of the cache format: XXH64 vectors; writing
 * and reading back u8 / f32 / normalised / raw caches at awkward chunk
 * sizes; byte-identical output whatever the thread count; a flipped byte
 * in a chunk, the header or the index, and a truncated file, each caught
 * and named; the up-to-date check, --force, and four concurrent builders
 * leaving one valid cache; eviction under a tiny memory budget.
 */
#include <dirent.h>   /* opendir */
#include <fcntl.h>    /* open */
#include <pthread.h>  /* pthread_create */
#include <signal.h>   /* SIGINT, SIGTERM */
#include <sys/file.h> /* flock */
#include <time.h>     /* nanosleep */
#include <math.h>     /* fabs */
#include <stdio.h>    /* FILE, fopen */
#include <stdlib.h>   /* malloc, free */
#include <string.h>   /* memcmp */
#include <sys/wait.h> /* waitpid */
#include <unistd.h>   /* fork, truncate */

#include "core/cancel.h" /* mgpu_cancel_* */
#include "core/err.h"   /* mgpu_errmsg, MGPU_E* */
#include "core/io.h"    /* mgpu_read_file */
#include "data/cache.h" /* mgpu_cache_* */
#include "data/xxh64.h" /* mgpu_xxh64 */
#include "../t.h"       /* T_RUN, T_CHECK, T_OK, T_FAILS */
#include "../tmpdir.h" /* tmpdir, tpath, t_tmpdir_make */


/* n rows of d features: u8, or f32 with an offset per feature. */
static void make_set(struct mgpu_samples *s, int dtype, size_t n, uint32_t d, unsigned seed)
{
	float *row = malloc(d * sizeof *row);
	unsigned char *u = (unsigned char *)row;
	size_t i, j;

	mgpu_samples_init(s, dtype, 1, &d);
	for (i = 0; i < n; i++) {
		for (j = 0; j < d; j++) {
			unsigned v = (unsigned)(i * 31 + j * 7 + seed) % 251;
			if (dtype == MGPU_DTYPE_U8)
				u[j] = (unsigned char)v;
			else
				row[j] = (float)v * 0.5f + (float)j;
		}
		mgpu_samples_push(s, row, (int32_t)((i + seed) % 5));
	}
	free(row);
}

static const struct mgpu_cache_opts base = { .level = 3, .threads = 1, .chunk_nbytes = 100 };

static void test_xxh64(void)
{
	unsigned char b[768];
	int i;

	for (i = 0; i < 768; i++)
		b[i] = (unsigned char)i;
	T_CHECK(mgpu_xxh64("", 0, 0) == 0xef46db3751d8e999ull, "empty");
	T_CHECK(mgpu_xxh64("a", 1, 0) == 0xd24ec4f1a98c6e5bull, "a");
	T_CHECK(mgpu_xxh64("abc", 3, 0) == 0x44bc2cf5ad770999ull, "abc");
	T_CHECK(mgpu_xxh64(b, 768, 0) == 0x8e03c838c596036full, "768");
	T_CHECK(mgpu_xxh64(b, 101, 7) == 0xe878e9791dbc64faull, "seeded 101");
}

/* Every row of every split comes back as stored. */
static void check_rows(struct mgpu_cache *c, struct mgpu_samples *sets, int normalised)
{
	int s;
	size_t i, j;

	for (s = 0; s < MGPU_NSPLITS; s++) {
		size_t n = sets[s].n, rb = c->row_nbytes;
		unsigned char *x = malloc(n * rb + 1);
		int32_t *y = malloc(n * 4 + 4);
		uint32_t *idx = malloc(n * 4 + 4);
		int bad = 0;
		for (i = 0; i < n; i++)
			idx[i] = (uint32_t)(n - 1 - i); /* backwards: chunk changes */
		T_OK(mgpu_cache_rows(c, s, idx, n, x, y));
		for (i = 0; i < n && !bad; i++) {
			size_t r = idx[i];
			bad |= y[i] != sets[s].y[r];
			for (j = 0; j < sets[s].d && !normalised && c->h.dtype == (uint32_t)sets[s].dtype; j++)
				bad |= memcmp(x + i * rb, sets[s].x + r * sets[s].row_nbytes, rb) != 0;
			if (normalised) {
				float v = ((float *)(void *)(x + i * rb))[1];
				const unsigned char *src = sets[s].x + r * sets[s].row_nbytes;
				double raw = sets[s].dtype == MGPU_DTYPE_U8 ? src[1] :
					((const float *)(const void *)src)[1];
				bad |= fabs(v - (raw - c->mean[1]) / c->std[1]) > 1e-4;
			}
		}
		T_CHECK(!bad, "%s rows differ", mgpu_split_name(s));
		free(x);
		free(y);
		free(idx);
	}
}

static void roundtrip(int dtype, int raw, int normalise, size_t chunk)
{
	struct mgpu_samples sets[3];
	struct mgpu_samples *p[3] = { &sets[0], &sets[1], &sets[2] };
	struct mgpu_cache_opts o = base;
	struct mgpu_cache_stats st;
	struct mgpu_cache c;
	size_t nchk;
	int s;

	o.raw = raw, o.normalise = normalise, o.chunk_nbytes = chunk;
	for (s = 0; s < 3; s++)
		make_set(&sets[s], dtype, s == 0 ? 103 : s == 1 ? 17 : 1, 13, (unsigned)s);
	T_OK(mgpu_cache_write(tpath("rt.cache"), p, &o, &st));
	T_OK(mgpu_cache_open(&c, tpath("rt.cache")));
	T_CHECK(c.h.n[0] == 103 && c.h.n[1] == 17 && c.h.n[2] == 1 && c.h.classes == 5,
		"header n");
	T_CHECK(normalise ? c.mean != NULL && c.h.dtype == MGPU_DTYPE_F32 : c.mean == NULL,
		"normalisation table");
	check_rows(&c, sets, normalise);
	T_OK(mgpu_cache_verify(&c, &nchk));
	T_CHECK(nchk == c.h.total_chunks && nchk == st.chunks[0] + st.chunks[1] + st.chunks[2],
		"verify checked %zu", nchk);
	mgpu_cache_close(&c);
	for (s = 0; s < 3; s++)
		mgpu_samples_free(&sets[s]);
}

static void test_roundtrips(void)
{
	roundtrip(MGPU_DTYPE_U8, 0, 0, 100);
	roundtrip(MGPU_DTYPE_U8, 1, 0, 1);       /* one row per chunk */
	roundtrip(MGPU_DTYPE_F32, 0, 0, 1 << 20); /* one chunk per split */
	roundtrip(MGPU_DTYPE_F32, 1, 1, 333);
	roundtrip(MGPU_DTYPE_U8, 0, 1, 64);       /* u8 normalised to f32 */
}

static void write_u8(const char *name, int threads)
{
	struct mgpu_samples t;
	struct mgpu_samples *p[3] = { &t, NULL, NULL };
	struct mgpu_cache_opts o = base;
	struct mgpu_cache_stats st;

	o.threads = threads;
	make_set(&t, MGPU_DTYPE_U8, 500, 40, 1);
	T_OK(mgpu_cache_write(tpath(name), p, &o, &st));
	mgpu_samples_free(&t);
}

static void test_threads_identical(void)
{
	unsigned char *a, *b;
	size_t la, lb;

	write_u8("t1.cache", 1);
	write_u8("t4.cache", 4);
	T_OK(mgpu_read_file(tpath("t1.cache"), &a, &la));
	T_OK(mgpu_read_file(tpath("t4.cache"), &b, &lb));
	T_CHECK(la == lb && memcmp(a, b, la) == 0, "threads change the bytes");
	free(a);
	free(b);
}

static void flip(const char *path, long off)
{
	FILE *fp = fopen(path, "r+b");
	int c;

	fseek(fp, off, SEEK_SET);
	c = fgetc(fp);
	fseek(fp, off, SEEK_SET);
	fputc(c ^ 0x10, fp);
	fclose(fp);
}

static void test_corruption(void)
{
	struct mgpu_cache c;
	unsigned char x[40 * 500];
	int32_t y[500];
	uint32_t idx[500];
	size_t i, n;
	long off;

	for (i = 0; i < 500; i++)
		idx[i] = (uint32_t)i;
	write_u8("bad.cache", 1);
	T_OK(mgpu_cache_open(&c, tpath("bad.cache")));
	off = (long)(c.ix[3].off + c.ix[3].stored_nbytes / 2);
	mgpu_cache_close(&c);
	flip(tpath("bad.cache"), off);
	T_OK(mgpu_cache_open(&c, tpath("bad.cache")));
	T_OK(mgpu_cache_rows(&c, 0, idx, 6, x, y)); /* chunk 0 is fine */
	T_FAILS(mgpu_cache_rows(&c, 0, idx, 500, x, y), MGPU_EFORMAT,
		"bad.cache': chunk 3 (train rows 6..7): checksum mismatch");
	T_FAILS(mgpu_cache_verify(&c, &n), MGPU_EFORMAT, "chunk 3 (train rows 6..7)");
	T_CHECK(n == 3, "verify checked %zu before the bad chunk", n);
	T_FAILS(mgpu_cache_rows(&c, 0, (uint32_t[]){ 500 }, 1, x, y), MGPU_EINVAL,
		"train row 500 out of range");
	T_FAILS(mgpu_cache_rows(&c, 1, idx, 1, x, y), MGPU_EINVAL, "no val split");
	mgpu_cache_close(&c);
	write_u8("hdr.cache", 1);
	flip(tpath("hdr.cache"), 70);
	T_FAILS(mgpu_cache_open(&c, tpath("hdr.cache")), MGPU_EFORMAT, "header checksum");
	write_u8("ix.cache", 1);
	T_OK(mgpu_cache_open(&c, tpath("ix.cache")));
	off = (long)c.h.index_off + 20;
	mgpu_cache_close(&c);
	flip(tpath("ix.cache"), off);
	T_FAILS(mgpu_cache_open(&c, tpath("ix.cache")), MGPU_EFORMAT, "index checksum");
	write_u8("cut.cache", 1);
	T_CHECK(truncate(tpath("cut.cache"), 6000) == 0, "truncate");
	T_FAILS(mgpu_cache_open(&c, tpath("cut.cache")), MGPU_EFORMAT, "truncated");
	T_CHECK(truncate(tpath("cut.cache"), 100) == 0, "truncate");
	T_FAILS(mgpu_cache_open(&c, tpath("cut.cache")), MGPU_EFORMAT, "truncated");
	T_FAILS(mgpu_cache_open(&c, tpath("none")), MGPU_EIO, "cannot open");
}

static int loads;

static int load(void *ctx, struct mgpu_samples split[MGPU_NSPLITS])
{
	(void)ctx;
	loads++;
	make_set(&split[0], MGPU_DTYPE_U8, 2000, 50, 3);
	return 0;
}

static int load_fail(void *ctx, struct mgpu_samples split[MGPU_NSPLITS])
{
	(void)ctx;
	(void)split;
	return mgpu_err(MGPU_EFORMAT, "bad input");
}

static void test_ensure(void)
{
	struct mgpu_cache_opts o = base;
	struct mgpu_cache_stats st;
	struct mgpu_cache c;
	int built, k, status, ok = 1;
	pid_t pid[4];
	size_t n;
	DIR *d;
	struct dirent *de;

	o.key[0] = 1;
	T_OK(mgpu_cache_ensure(tpath("c1"), &o, load, NULL, &st, &built));
	T_CHECK(built == 1 && loads == 1, "first build");
	T_OK(mgpu_cache_ensure(tpath("c1"), &o, load, NULL, &st, &built));
	T_CHECK(built == 0 && loads == 1, "second build did work");
	o.force = 1;
	T_OK(mgpu_cache_ensure(tpath("c1"), &o, load, NULL, &st, &built));
	T_CHECK(built == 1 && loads == 2, "--force did not rebuild");
	o.force = 0;
	o.key[0] = 2;
	T_CHECK(!mgpu_cache_is_current(tpath("c1"), o.key), "a new key is current");
	T_FAILS(mgpu_cache_ensure(tpath("new/deep"), &o, load_fail, NULL, &st, &built),
		MGPU_EFORMAT, "bad input");
	T_CHECK(access(tpath("new/deep"), F_OK) != 0, "a failed first build left its directory");
	for (k = 0; k < 4; k++) {
		pid[k] = fork();
		if (pid[k] == 0) {
			o.chunk_nbytes = 50;
			_exit(mgpu_cache_ensure(tpath("c4"), &o, load, NULL, &st, &built) ? 1 :
			      built ? 10 : 11);
		}
	}
	for (k = 0, n = 0; k < 4; k++) {
		waitpid(pid[k], &status, 0);
		ok &= WIFEXITED(status) && WEXITSTATUS(status) >= 10;
		n += WIFEXITED(status) && WEXITSTATUS(status) == 10;
	}
	T_CHECK(ok && n == 1, "4 builders: %zu built (want 1), all ok %d", n, ok);
	T_OK(mgpu_cache_open(&c, tpath("c4")));
	T_OK(mgpu_cache_verify(&c, &n));
	T_CHECK(c.h.n[0] == 2000, "n %llu", (unsigned long long)c.h.n[0]);
	mgpu_cache_close(&c);
	d = opendir(tpath("c4"));
	while (d && (de = readdir(d)))
		T_CHECK(!strstr(de->d_name, ".tmp."), "left a temporary %s", de->d_name);
	if (d)
		closedir(d);
}

/* No file in tmpdir whose name contains sub. */
static int no_file_like(const char *sub)
{
	DIR *d = opendir(tmpdir);
	struct dirent *de;
	int ok = 1;

	while (d && (de = readdir(d)))
		ok &= strstr(de->d_name, sub) == NULL;
	if (d)
		closedir(d);
	return ok;
}

static void *raise_later(void *arg)
{
	const struct timespec t = { 0, 100 * 1000 * 1000 };

	(void)arg;
	nanosleep(&t, NULL);
	mgpu_cancel_raise(SIGINT);
	return NULL;
}

/* A stop request fails a build with MGPU_EINTR and leaves nothing: no
 * temporary, no directory the build made; it also ends a wait for the lock
 * that another builder holds. */
static void test_cancel(void)
{
	struct mgpu_cache_opts o = base;
	struct mgpu_cache_stats st;
	struct mgpu_samples s = { 0 };
	struct mgpu_samples *sp[MGPU_NSPLITS] = { &s, NULL, NULL };
	pthread_t th;
	int built, fd;

	make_set(&s, MGPU_DTYPE_U8, 500, 50, 1);
	mgpu_cancel_raise(SIGTERM);
	T_FAILS(mgpu_cache_write(tpath("cx.cache"), sp, &o, &st), MGPU_EINTR,
		"interrupted by SIGTERM");
	T_CHECK(no_file_like("cx.cache"), "an interrupted write left a file");
	mgpu_cancel_clear();
	T_OK(mgpu_cache_write(tpath("cx.cache"), sp, &o, &st));
	mgpu_samples_free(&s);

	mgpu_cancel_raise(SIGINT);
	o.key[0] = 9;
	T_FAILS(mgpu_cache_ensure(tpath("c6"), &o, load, NULL, &st, &built), MGPU_EINTR,
		"interrupted by SIGINT");
	T_CHECK(access(tpath("c6"), F_OK) != 0, "an interrupted first build left its directory");
	mgpu_cancel_clear();

	T_OK(mgpu_cache_ensure(tpath("c5"), &o, load, NULL, &st, &built));
	fd = open(tpath("c5/.lock"), O_RDWR);
	T_CHECK(fd >= 0 && flock(fd, LOCK_EX) == 0, "hold the lock");
	o.key[0] = 10;
	pthread_create(&th, NULL, raise_later, NULL);
	T_FAILS(mgpu_cache_ensure(tpath("c5"), &o, load, NULL, &st, &built), MGPU_EINTR,
		"interrupted by SIGINT");
	pthread_join(th, NULL);
	mgpu_cancel_clear();
	if (fd >= 0)
		close(fd);
	T_CHECK(no_file_like(".tmp."), "left a temporary");
}

/* Calls of a progress hook: how many, the last values, and whether done
 * only grew. */
struct calls {
	int n, backwards;
	uint64_t done, total, nbytes;
};

static void count_call(void *ctx, uint64_t done, uint64_t total, uint64_t nbytes)
{
	struct calls *c = ctx;

	c->backwards |= c->n && done < c->done;
	c->n++;
	c->done = done, c->total = total, c->nbytes = nbytes;
}

/* The build's hook hears of every wave of chunks, ending at every split's
 * rows and their decoded bytes; verify's of every chunk, ending at the
 * stored bytes; a stop request ends a verify with MGPU_EINTR. */
static void test_progress(void)
{
	struct mgpu_cache_opts o = base;
	struct mgpu_cache_stats st;
	struct mgpu_samples sets[3];
	struct mgpu_samples *p[3] = { &sets[0], &sets[1], NULL };
	struct calls b = { 0 }, v = { 0 };
	struct mgpu_cache c;
	uint64_t stored = 0, k;
	size_t nchk;
	int s;

	for (s = 0; s < 2; s++)
		make_set(&sets[s], MGPU_DTYPE_U8, s == 0 ? 103 : 17, 13, (unsigned)s);
	o.progress = count_call;
	o.progress_ctx = &b;
	T_OK(mgpu_cache_write(tpath("pg.cache"), p, &o, &st));
	/* 100-byte chunks of 13-byte rows: 7 rows a chunk, waves of 4 chunks */
	T_CHECK(b.n == 4 + 1 && !b.backwards, "%d build calls (backwards %d)", b.n, b.backwards);
	T_CHECK(b.done == 120 && b.total == 120, "build ended at %llu of %llu rows",
		(unsigned long long)b.done, (unsigned long long)b.total);
	T_CHECK(b.nbytes == st.data_nbytes[0] + st.data_nbytes[1], "build bytes %llu",
		(unsigned long long)b.nbytes);
	T_OK(mgpu_cache_open(&c, tpath("pg.cache")));
	for (k = 0; k < c.h.total_chunks; k++)
		stored += c.ix[k].stored_nbytes;
	T_OK(mgpu_cache_verify_progress(&c, &nchk, count_call, &v));
	T_CHECK(v.n == (int)c.h.total_chunks && v.done == c.h.total_chunks &&
		v.total == c.h.total_chunks && v.nbytes == stored && !v.backwards,
		"verify: %d calls, last %llu of %llu", v.n, (unsigned long long)v.done,
		(unsigned long long)v.total);
	mgpu_cancel_raise(SIGINT);
	T_FAILS(mgpu_cache_verify_progress(&c, &nchk, NULL, NULL), MGPU_EINTR,
		"interrupted by SIGINT");
	mgpu_cancel_clear();
	mgpu_cache_close(&c);
	for (s = 0; s < 2; s++)
		mgpu_samples_free(&sets[s]);
}

/* A label at or above the header's class count (a cache written from
 * samples whose class count was wrong) is an error naming the cache, the
 * chunk and the row, compressed and raw alike; --verify finds it too. */
static void test_bad_label(void)
{
	struct mgpu_cache_opts o = base;
	struct mgpu_cache_stats st;
	struct mgpu_samples s = { 0 };
	struct mgpu_samples *sp[MGPU_NSPLITS] = { &s, NULL, NULL };
	struct mgpu_cache c;
	unsigned char x[50 * 20];
	int32_t y[20];
	uint32_t idx[20];
	size_t n;
	int raw, i;

	make_set(&s, MGPU_DTYPE_U8, 20, 50, 0);
	s.y[9] = 255;
	s.classes = 10;
	for (i = 0; i < 20; i++)
		idx[i] = (uint32_t)i;
	for (raw = 0; raw < 2; raw++) {
		o.raw = raw;
		o.chunk_nbytes = 1 << 20;
		T_OK(mgpu_cache_write(tpath("lab.cache"), sp, &o, &st));
		T_OK(mgpu_cache_open(&c, tpath("lab.cache")));
		T_FAILS(mgpu_cache_rows(&c, 0, idx, 20, x, y), MGPU_EFORMAT,
			"lab.cache': chunk 0 (train rows 0..19): label 255 of row 9 is not "
			"below the header's 10 classes");
		T_FAILS(mgpu_cache_verify(&c, &n), MGPU_EFORMAT, "label 255 of row 9");
		mgpu_cache_close(&c);
	}
	mgpu_samples_free(&s);
}

struct thr {
	struct mgpu_cache *c;
	int rc;
};

static void *reader(void *arg)
{
	struct thr *t = arg;
	unsigned char x[50 * 64];
	int32_t y[64];
	uint32_t idx[64];
	int it, i;

	for (it = 0; it < 200 && t->rc == 0; it++) {
		for (i = 0; i < 64; i++)
			idx[i] = (uint32_t)((it * 977 + i * 131) % 2000);
		t->rc = mgpu_cache_rows(t->c, 0, idx, 64, x, y);
		for (i = 0; i < 64 && t->rc == 0; i++)
			if (y[i] != (int32_t)((idx[i] + 3) % 5) ||
			    x[i * 50 + 1] != (idx[i] * 31 + 7 + 3) % 251)
				t->rc = -100;
	}
	return NULL;
}

static void test_budget_threads(void)
{
	struct mgpu_cache c;
	struct thr t[4];
	pthread_t th[4];
	int k;

	T_OK(mgpu_cache_open(&c, tpath("c4")));
	mgpu_cache_set_budget(&c, 200);
	for (k = 0; k < 4; k++) {
		t[k] = (struct thr){ &c, 0 };
		pthread_create(&th[k], NULL, reader, &t[k]);
	}
	for (k = 0; k < 4; k++) {
		pthread_join(th[k], NULL);
		T_CHECK(t[k].rc == 0, "thread %d: rc %d %s", k, t[k].rc, mgpu_errmsg());
	}
	T_CHECK(c.used <= 200 + 8 * (c.row_nbytes + 1) * c.h.chunk_rows, "used %zu", c.used);
	mgpu_cache_close(&c);
}

int main(void)
{
	if (t_tmpdir_make("cache") < 0)
		return 1;
	T_RUN(test_xxh64);
	T_RUN(test_roundtrips);
	T_RUN(test_threads_identical);
	T_RUN(test_corruption);
	T_RUN(test_ensure);
	T_RUN(test_cancel);
	T_RUN(test_progress);
	T_RUN(test_bad_label);
	T_RUN(test_budget_threads);
	t_tmpdir_remove();
	return T_DONE();
}
