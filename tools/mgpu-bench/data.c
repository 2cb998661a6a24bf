/*
 * data.c - `mgpu-bench data`: how fast the data side feeds training.
 *
 * decode: every chunk of a cache checked and decoded (mgpu_cache_verify,
 * the work mgpu_cache_rows does on a chunk's first use), decoded bytes per
 * second on one thread; only for cache sources ("checksum" for raw,
 * uncompressed caches). loader: one pass over the train split in a seeded
 * random order through mgpu_loader with P prefetch threads, per P.
 * Built on the public API of lib/data only (source.h, loader.h, cache.h).
 */
#include <stdio.h>  /* printf */
#include <stdlib.h> /* malloc, free */
#include <string.h> /* strcmp */

#include "../common.h"    /* die, usage_error */
#include "bench.h"        /* struct common */
#include "bench/stats.h"  /* mgpu_bench_median */
#include "bench/tab.h"    /* struct mgpu_tab */
#include "core/cli.h"     /* mgpu_cli_size */
#include "core/clock.h" /* mgpu_now_s */
#include "core/err.h"     /* mgpu_errmsg */
#include "core/rng.h"     /* mgpu_rng_perm */
#include "data/loader.h"  /* mgpu_loader_* */
#include "data/source.h"  /* mgpu_source_* */

#define MAX_REPEAT 100

static const char help[] =
	"usage: mgpu-bench data [options] [PATH]\n"
	"Cache decode throughput and loader throughput of a data source: a cache, a\n"
	"shard manifest, a WebDataset archive or an IDX directory\n"
	"[/usr/share/datasets/fashion-mnist].\n";

static const char *const cols[] = { "test", "source", "prefetch", "batch_size", "rows",
				    "data_bytes", "time_s", "samples_per_s", "gbps", "repeats",
				    "blas_core", "blas_threads" };
static const int types[] = { MGPU_TAB_STR, MGPU_TAB_STR, MGPU_TAB_NUM, MGPU_TAB_NUM,
			     MGPU_TAB_NUM, MGPU_TAB_NUM, MGPU_TAB_NUM, MGPU_TAB_NUM,
			     MGPU_TAB_NUM, MGPU_TAB_NUM, MGPU_TAB_STR, MGPU_TAB_NUM };

struct dopts {
	struct common co;
	int prefetch[64], nprefetch, batch, repeat;
	unsigned long long budget;
	int64_t seed;
	const char *path;
};

static int set_prefetch(void *t, const char *arg)
{
	struct dopts *o = t;

	o->nprefetch = bench_list("--prefetch", arg, o->prefetch, 64, 0, MGPU_LOADER_MAX_THREADS);
	return 0;
}

static void show_prefetch(const void *t, char *buf, size_t len)
{
	const struct dopts *o = t;
	bench_show_list(buf, len, o->prefetch, o->nprefetch, NULL);
}

#define O struct dopts
static const struct mgpu_opt options[] = {
	MGPU_OPT_HEAD("measurements"),
	MGPU_OPT_CALL("prefetch", 0, set_prefetch, show_prefetch, "LIST", "loader threads to compare",
		      "0,1,2", 0),
	MGPU_OPT_ROW(MGPU_OPT_INT, "batch-size", 0, O, batch, 1, 1 << 20, "N", "rows per batch",
		     0),
	MGPU_OPT_ROW(MGPU_OPT_INT, "repeat", 0, O, repeat, 1, MAX_REPEAT, "N",
		     "passes per measurement; the median is reported", 0),
	MGPU_OPT_ROWD(MGPU_OPT_SIZE, "cache-budget", 0, O, budget, 0, 1099511627776.0, "SIZE",
		      "decoded-chunk memory of a cache (K/M/G)", "2G", 0),
	MGPU_OPT_ROW(MGPU_OPT_I64, "seed", 0, O, seed, 0, 9.3e18, "N", "seed of the row order", 0),
	MGPU_OPT_CONFIG(O, co.opts),
	MGPU_OPT_COMMON(O, co.opts),
	MGPU_OPT_TABLE_END,
};
#undef O

static void parse(struct dopts *o, int argc, char **argv)
{
	static const struct dopts def = { .batch = 128, .repeat = 3, .seed = 42 };
	const struct tool_cli cli = { options, help, &def, sizeof *o };
	int first;

	memset(o, 0, sizeof *o);
	o->prefetch[0] = 0, o->prefetch[1] = 1, o->prefetch[2] = 2, o->nprefetch = 3;
	o->batch = 128;
	o->repeat = 3;
	o->seed = 42;
	o->path = "/usr/share/datasets/fashion-mnist";
	first = common_parse(&cli, o, &o->co, argc, argv, 0);
	if (first + 1 < argc)
		usage_error("unexpected argument '%s' (one PATH)", argv[first + 1]);
	if (first < argc)
		o->path = argv[first];
	common_settings(&cli, o, &o->co, "mgpu-bench data");
}

static void put_row(struct mgpu_tab *t, const char *test, const struct mgpu_source *s,
		    int prefetch, int batch, size_t rows, double nbytes, double secs, int reps)
{
	size_t i;

	if (mgpu_tab_add_row(t) < 0)
		die_lib();
	i = t->nrows - 1;
	mgpu_tab_set(t, i, "test", test);
	mgpu_tab_set(t, i, "source", s->what);
	if (prefetch >= 0) {
		mgpu_tab_setf(t, i, "prefetch", "%d", prefetch);
		mgpu_tab_setf(t, i, "batch_size", "%d", batch);
	}
	mgpu_tab_setf(t, i, "rows", "%zu", rows);
	mgpu_tab_setf(t, i, "data_bytes", "%.0f", nbytes);
	mgpu_tab_num(t, i, "time_s", secs, 5);
	mgpu_tab_setf(t, i, "samples_per_s", "%.0f", (double)rows / secs);
	mgpu_tab_num(t, i, "gbps", nbytes / secs * 1e-9, 4);
	mgpu_tab_setf(t, i, "repeats", "%d", reps);
}

/* decode: mgpu_cache_verify over every chunk, median of repeat passes. */
static void decode(const struct dopts *o, struct mgpu_source *s, struct mgpu_tab *t)
{
	double times[MAX_REPEAT], t0;
	size_t nchunks, rows = 0;
	int k, sp;

	for (k = 0; k < o->repeat && !mgpu_interrupted; k++) {
		t0 = mgpu_now_s();
		if (mgpu_cache_verify(&s->cache, &nchunks) < 0)
			die_lib();
		times[k] = mgpu_now_s() - t0;
	}
	if (mgpu_interrupted)
		return;
	for (sp = 0; sp < MGPU_NSPLITS; sp++)
		rows += s->cache.h.n[sp];
	put_row(t, s->cache.h.flags & MGPU_CACHE_RAW ? "checksum" : "decode", s, -1, 0, rows,
		(double)s->cache.h.data_nbytes, mgpu_bench_median(times, o->repeat), o->repeat);
}

/* One pass of the loader over order[0..n); seconds. */
static double loader_pass(struct mgpu_loader *l, const uint32_t *order, size_t n)
{
	const void *x;
	const int32_t *y;
	double t0 = mgpu_now_s(), wait;
	int B, rc = 0;

	if (mgpu_loader_begin(l, MGPU_SPLIT_TRAIN, order, n) < 0)
		die_lib();
	while (!mgpu_interrupted && (rc = mgpu_loader_next(l, &x, &y, &B, &wait)) == 0)
		;
	if (rc < 0)
		die_lib();
	return mgpu_now_s() - t0;
}

static void loader(const struct dopts *o, struct mgpu_source *s, struct mgpu_tab *t, int p,
		   const uint32_t *order)
{
	struct mgpu_loader l;
	double times[MAX_REPEAT];
	size_t n = s->n[MGPU_SPLIT_TRAIN];
	int k;

	if (mgpu_loader_create(&l, s, o->batch, p) < 0)
		die_lib();
	for (k = 0; k < o->repeat && !mgpu_interrupted; k++)
		times[k] = loader_pass(&l, order, n);
	mgpu_loader_free(&l);
	if (mgpu_interrupted)
		return;
	put_row(t, "loader", s, p, o->batch, n, (double)n * (double)s->row_nbytes,
		mgpu_bench_median(times, o->repeat), o->repeat);
	if (common_progress(&o->co))
		note("loader, prefetch %d: %.0f rows/s", p,
		     (double)n / mgpu_bench_median(times, o->repeat));
}

int bench_data(int argc, char **argv)
{
	struct dopts o;
	struct mgpu_source s;
	struct mgpu_tab t;
	struct mgpu_rng rng;
	uint32_t *order;
	FILE *fp;
	int i;

	parse(&o, argc, argv);
	if (mgpu_source_open(&s, o.path) < 0)
		die_lib();
	if (s.n[MGPU_SPLIT_TRAIN] == 0)
		die("'%s': no train split to load", o.path);
	if (s.kind == MGPU_SOURCE_CACHE && o.budget)
		mgpu_cache_set_budget(&s.cache, (size_t)o.budget);
	if (mgpu_tab_init(&t, cols, types, 12) < 0)
		die_lib();
	if (s.kind == MGPU_SOURCE_CACHE)
		decode(&o, &s, &t);
	else if (!o.co.quiet)
		note("'%s' is not a cache (%s): no decode row; mgpu-cache builds one", o.path,
		     s.what);
	order = malloc(s.n[MGPU_SPLIT_TRAIN] * sizeof *order);
	if (!order)
		die("out of memory");
	mgpu_rng_seed(&rng, (uint64_t)o.seed, 0);
	mgpu_rng_perm(&rng, order, s.n[MGPU_SPLIT_TRAIN]);
	for (i = 0; i < o.nprefetch && !mgpu_interrupted; i++)
		loader(&o, &s, &t, o.prefetch[i], order);
	free(order);
	mgpu_source_close(&s);
	exit_if_interrupted(); /* nothing written */
	bench_blas_fill(&t);
	fp = common_open(&o.co);
	if (mgpu_tab_write(&t, fp, o.co.fmt) < 0)
		common_fail(&o.co);
	common_close(&o.co);
	mgpu_tab_free(&t);
	return 0;
}
