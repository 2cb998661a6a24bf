/*
 * test_bench.c - lib/bench on recorded results: medians, speedup and
 * efficiency, bus bandwidth factors, size and tolerance parsing, mgpu-train
 * output parsing, --compare, the result tables (TSV, JSON, Markdown, TSV
 * input), command quoting, the SVG plot, running a child (and stopping
 * those in the background), the
 * all-reduce wrong-element check (two threads on a private segment), and a
 * gpt workload's tokens/s, MFU, device peaks and memory estimate against
 * figures worked out by hand, and rows of a --dtypes sweep (labels,
 * speedup per dtype, the dtype column and its default in older tables).
 */
#include <errno.h>    /* errno, ECHILD */
#include <pthread.h>  /* pthread_create */
#include <stdlib.h>   /* free */
#include <string.h>   /* strstr */
#include <sys/wait.h> /* waitpid */
#include <unistd.h>   /* usleep */

#include "bench/allreduce.h" /* mgpu_bench_ar_rank */
#include "bench/gpumon.h"    /* mgpu_gpumon_acc */
#include "bench/lm.h"        /* mgpu_bench_lm_fill */
#include "bench/spawn.h"     /* mgpu_spawn_capture */
#include "bench/stats.h"     /* mgpu_bench_median */
#include "bench/svg.h"       /* mgpu_bench_plot_svg */
#include "bench/sweep.h"     /* struct mgpu_bench_trow */
#include "bench/tab.h"       /* struct mgpu_tab */
#include "core/err.h"        /* mgpu_errmsg */
#include "model/model.h"     /* mgpu_model_count, mgpu_spec_logits_ld */
#include "t.h"               /* T_CHECK */

static void test_median_spread(void)
{
	double a[] = { 5, 1, 3 }, b[] = { 4, 1, 3, 2 };

	T_NEAR(mgpu_bench_median(a, 3), 3, 0);
	T_NEAR(mgpu_bench_median(b, 4), 2.5, 0);
	T_CHECK(isnan(mgpu_bench_median(a, 0)), "empty median is not NaN");
	T_NEAR(mgpu_bench_spread_pct(90, 110, 100), 10, 1e-12);
}

static void test_busbw_factor(void)
{
	T_NEAR(mgpu_bench_busbw_factor(MGPU_COLL_ALLREDUCE, 1), 1, 0);
	T_NEAR(mgpu_bench_busbw_factor(MGPU_COLL_ALLREDUCE, 2), 1, 0);
	T_NEAR(mgpu_bench_busbw_factor(MGPU_COLL_ALLREDUCE, 4), 1.5, 1e-15);
	T_NEAR(mgpu_bench_busbw_factor(MGPU_COLL_ALLREDUCE, 8), 1.75, 1e-15);
	T_NEAR(mgpu_bench_busbw_factor(MGPU_COLL_REDUCE_SCATTER, 4), 0.75, 1e-15);
	T_NEAR(mgpu_bench_busbw_factor(MGPU_COLL_ALLGATHER, 8), 0.875, 1e-15);
	T_NEAR(mgpu_bench_busbw_factor(MGPU_COLL_BROADCAST, 8), 1, 0);
	T_NEAR(mgpu_bench_busbw_factor(MGPU_COLL_REDUCE, 8), 1, 0);
	/* 256 MiB in 100 ms: 2.684 GB/s algbw; 4 ranks: busbw 1.5x */
	T_NEAR(mgpu_bench_algbw_gbps((size_t)256 << 20, 1e5), 2.68435456, 1e-9);
	T_CHECK(isnan(mgpu_bench_algbw_gbps(4096, 0)), "zero time gives a number");
}

static void test_sizes(void)
{
	size_t s[64];
	int n;

	T_OK(mgpu_bench_sizes("--sizes", "4K:256M", (size_t)1 << 34, s, 64, &n));
	T_CHECK(n == 17 && s[0] == 4096 && s[16] == (size_t)256 << 20, "n %d", n);
	T_OK(mgpu_bench_sizes("--sizes", "4K:12K", (size_t)1 << 34, s, 64, &n));
	T_CHECK(n == 2 && s[1] == 8192, "n %d", n);
	T_OK(mgpu_bench_sizes("--sizes", "8,1M,4k", (size_t)1 << 34, s, 64, &n));
	T_CHECK(n == 3 && s[0] == 8 && s[1] == 1 << 20 && s[2] == 4096, "n %d", n);
	T_FAILS(mgpu_bench_sizes("--sizes", "6:64", 1 << 20, s, 64, &n), MGPU_EINVAL,
		"multiple of 4");
	T_FAILS(mgpu_bench_sizes("--sizes", "8K:4K", 1 << 20, s, 64, &n), MGPU_EINVAL, "below");
	T_FAILS(mgpu_bench_sizes("--sizes", "4x", 1 << 20, s, 64, &n), MGPU_EINVAL, "not a size");
	T_FAILS(mgpu_bench_sizes("--sizes", "4K,", 1 << 20, s, 64, &n), MGPU_EINVAL, "list");
	T_FAILS(mgpu_bench_sizes("--sizes", "4:1G", 1 << 20, s, 64, &n), MGPU_EINVAL, "too large");
	T_FAILS(mgpu_bench_sizes("--sizes", "4:1M", 1 << 20, s, 8, &n), MGPU_EINVAL, "more than 8");
}

static void test_tolerance(void)
{
	double f;

	T_OK(mgpu_bench_tolerance("--tolerance", "10%", &f));
	T_NEAR(f, 0.10, 1e-15);
	T_OK(mgpu_bench_tolerance("--tolerance", "2.5", &f));
	T_NEAR(f, 0.025, 1e-15);
	T_FAILS(mgpu_bench_tolerance("--tolerance", "%", &f), MGPU_EINVAL, "not a percentage");
	T_FAILS(mgpu_bench_tolerance("--tolerance", "ten", &f), MGPU_EINVAL, "not a percentage");
	T_FAILS(mgpu_bench_tolerance("--tolerance", "101%", &f), MGPU_EINVAL, "out of range");
	T_FAILS(mgpu_bench_tolerance("--tolerance", "-1", &f), MGPU_EINVAL, "out of range");
	T_CHECK(mgpu_bench_slower(1000, 899, 0.1) && !mgpu_bench_slower(1000, 901, 0.1),
		"slower");
	T_CHECK(mgpu_bench_bigger(100, 111, 0.1) && !mgpu_bench_bigger(100, 109, 0.1), "bigger");
}

/* mgpu-train --json --log-every 10, 40 steps: windows of 10 steps. */
static const char train_out[] =
	"{\"kind\":\"step\",\"step\":10,\"epoch\":1,\"loss\":2,\"samples_per_s\":100,\"step_ms\":50}\n"
	"{\"kind\":\"step\",\"step\":20,\"epoch\":1,\"loss\":1,\"samples_per_s\":200,\"step_ms\":40}\n"
	"{\"kind\":\"eval\",\"step\":20,\"epoch\":1,\"val_loss\":1}\n"
	"{\"kind\":\"step\",\"step\":30,\"epoch\":1,\"loss\":1,\"samples_per_s\":1000,\"step_ms\":10}\n"
	"{\"kind\":\"step\",\"step\":40,\"epoch\":1,\"loss\":1,\"samples_per_s\":500,\"step_ms\":20}\n"
	"{\"kind\":\"summary\",\"step\":40,\"epoch\":1,\"samples_per_s\":300,\"wall_s\":2.5,"
	"\"effective_batch\":128,\"world_size\":2,\"mode\":\"ddp\",\"sync_backend\":\"cpu\","
	"\"peak_bytes\":[5200720,5200720],\"rss_bytes\":[7,8]}\n";

static void test_run_parse(void)
{
	struct mgpu_bench_run r;

	/* after 20 warm-up steps: 10 steps x 10 ms at 1000/s, 10 x 20 ms at 500/s:
	 * (100 + 100) samples in 0.3 s */
	T_OK(mgpu_bench_run_parse(train_out, sizeof train_out - 1, 20, "out", &r));
	T_NEAR(r.samples_per_s, 200 / 0.3, 1e-9);
	T_CHECK(r.steps_timed == 20 && r.steps == 40, "timed %lld", (long long)r.steps_timed);
	T_NEAR(r.wall_s, 2.5, 0);
	T_CHECK(r.ndev == 2 && r.peak_bytes[1] == 5200720 && r.rss_bytes[1] == 8, "ndev %d",
		r.ndev);
	T_CHECK(strcmp(r.mode, "ddp") == 0 && strcmp(r.sync, "cpu") == 0 && r.world == 2 &&
		r.effective_batch == 128, "summary fields");
	/* a warm-up that is not a multiple of the log interval: whole windows only */
	T_OK(mgpu_bench_run_parse(train_out, sizeof train_out - 1, 25, "out", &r));
	T_NEAR(r.samples_per_s, 500, 1e-9);
	/* a warm-up as long as the run (small data): its first half left out */
	T_OK(mgpu_bench_run_parse(train_out, sizeof train_out - 1, 40, "out", &r));
	T_CHECK(r.warmup_used == 20 && r.steps_timed == 20, "warm-up %lld, timed %lld",
		(long long)r.warmup_used, (long long)r.steps_timed);
	T_NEAR(r.samples_per_s, 200 / 0.3, 1e-9);
	T_OK(mgpu_bench_run_parse(train_out, sizeof train_out - 1, 20, "out", &r));
	T_CHECK(r.warmup_used == 20, "warm-up %lld", (long long)r.warmup_used);
	T_FAILS(mgpu_bench_run_parse(train_out, 200, 0, "out", &r), MGPU_EFORMAT, "out");
	T_FAILS(mgpu_bench_run_parse("{\"kind\":\"step\"}\n", 16, 0, "out", &r), MGPU_EFORMAT,
		"no summary record");
}

/* A recorded sweep: 1 rank 1000/s, 2 ranks DDP 1800/s, DP 1200/s, 4 failed. */
static const char recorded[] =
	"config\tkind\tdevices\tmode\tsync_backend\trepeats\twarmup_steps\tsamples_per_s\t"
	"samples_per_s_min\tsamples_per_s_max\tspread_pct\twall_s\tspeedup\tefficiency\t"
	"effective_batch\tpeak_bytes\trss_bytes\tstatus\terror\tcommand\n"
	"1 CPU rank\tcpu\t1\tddp\tnone\t3\t20\t1000\t990\t1010\t1\t2\tNA\tNA\t64\t7000000\t"
	"70000000\tok\tNA\tmgpu-train -q --cpu-ranks 1\n"
	"2 CPU ranks (DDP)\tcpu\t2\tddp\tcpu\t3\t20\t1800\t1700\t1900\t5.6\t1.2\tNA\tNA\t128\t"
	"5000000,5000000\t1,2\tok\tNA\tmgpu-train -q --cpu-ranks 2 --mode ddp\n"
	"2 CPU ranks (DP)\tcpu\t2\tdp\tcpu\t3\t20\t1200\t1100\t1300\t8.3\t1.6\tNA\tNA\t128\t"
	"7000000,5000000\t1,2\tok\tNA\tmgpu-train -q --cpu-ranks 2 --mode dp\n"
	"4 devices (DDP)\tgpu\t4\tddp\tNA\t3\t20\tNA\tNA\tNA\tNA\tNA\tNA\tNA\tNA\tNA\tNA\t"
	"error\tcuda device 0 does not exist\tmgpu-train -q --gpus 0,1,2,3 --mode ddp\n";

static int load(struct mgpu_bench_trow **rows, int *n)
{
	struct mgpu_tab t;
	int rc;

	MGPU_TRY(mgpu_tab_parse_tsv(&t, recorded, sizeof recorded - 1, "rec.tsv"));
	rc = mgpu_bench_trows_from_tab(&t, "rec.tsv", rows, n);
	mgpu_tab_free(&t);
	return rc;
}

static void test_speedup_efficiency(void)
{
	struct mgpu_bench_trow *rows;
	int n;

	T_OK(load(&rows, &n));
	if (!rows)
		return;
	T_CHECK(n == 4, "%d rows", n);
	mgpu_bench_trows_finish(rows, n);
	T_NEAR(rows[0].speedup, 1, 0);
	T_NEAR(rows[0].efficiency, 1, 0);
	T_NEAR(rows[1].speedup, 1.8, 1e-12);
	T_NEAR(rows[1].efficiency, 0.9, 1e-12);
	T_NEAR(rows[2].speedup, 1.2, 1e-12);
	T_NEAR(rows[2].efficiency, 0.6, 1e-12);
	/* the failed GPU row has no 1-GPU baseline and no throughput */
	T_CHECK(isnan(rows[3].speedup) && rows[3].error[0], "gpu row");
	T_CHECK(rows[2].ndev == 2 && rows[2].peak_bytes[0] == 7000000, "peaks");
	free(rows);
}

static char *render(const struct mgpu_tab *t, int fmt)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *fp = open_memstream(&buf, &len);

	if (!fp)
		return NULL;
	if (mgpu_tab_write(t, fp, fmt) < 0)
		buf[0] = '\0';
	fclose(fp);
	return buf;
}

static void test_tables(void)
{
	struct mgpu_bench_trow *rows;
	struct mgpu_tab t;
	char *s;
	int n;

	T_OK(load(&rows, &n));
	if (!rows)
		return;
	mgpu_bench_trows_finish(rows, n);
	T_OK(mgpu_bench_speedup_tab(rows, n, &t));
	s = render(&t, MGPU_FMT_MD);
	T_CHECK(s && strstr(s, "| Configuration ") && strstr(s, "| 2 CPU ranks (DDP) |") &&
		strstr(s, "1800 ± 5.6%") && strstr(s, "1.80x") && strstr(s, "90%") &&
		strstr(s, "1.20x") && strstr(s, "60%") && strstr(s, " failed |") &&
		!strstr(s, "cuda device 0") && strstr(s, "Time of the Steps (s)"), "%s", s);
	free(s);
	mgpu_tab_free(&t);
	T_OK(mgpu_bench_memory_tab(rows, n, &t));
	s = render(&t, MGPU_FMT_MD);
	T_CHECK(s && strstr(s, "| dev 1 (MiB) |") && strstr(s, "6.7 |") && strstr(s, "4.8 |") &&
		!strstr(s, "| 4 "), "%s", s);
	free(s);
	mgpu_tab_free(&t);
	/* the data schema round-trips through TSV; JSON types its cells */
	snprintf(rows[1].blas_core, sizeof rows[1].blas_core, "SkylakeX");
	rows[1].blas_threads = 1;
	T_OK(mgpu_bench_trows_tab(rows, n, &t));
	s = render(&t, MGPU_FMT_JSON);
	T_CHECK(s && strstr(s, "\"devices\":2,") && strstr(s, "\"peak_bytes\":[7000000,5000000]") &&
		strstr(s, "\"speedup\":1.8,") && strstr(s, "\"status\":\"error\"") &&
		strstr(s, "\"blas_core\":\"SkylakeX\",\"blas_threads\":1,"), "%s", s);
	free(s);
	s = render(&t, MGPU_FMT_TSV);
	mgpu_tab_free(&t);
	free(rows);
	T_OK(mgpu_tab_parse_tsv(&t, s, strlen(s), "again"));
	T_OK(mgpu_bench_trows_from_tab(&t, "again", &rows, &n));
	T_CHECK(n == 4 && rows && fabs(rows[1].speedup - 1.8) < 1e-12 &&
		strcmp(rows[3].command, "mgpu-train -q --gpus 0,1,2,3 --mode ddp") == 0, "n %d", n);
	T_CHECK(rows && strcmp(rows[1].blas_core, "SkylakeX") == 0 && rows[1].blas_threads == 1 &&
		!rows[0].blas_core[0] && rows[0].blas_threads == 0, "blas columns");
	mgpu_tab_free(&t);
	free(rows);
	free(s);
}

static void test_tab_errors(void)
{
	struct mgpu_tab t;
	struct mgpu_bench_trow *rows;
	int n;

	T_FAILS(mgpu_tab_parse_tsv(&t, "a\tb\n1\n", 6, "x.tsv"), MGPU_EFORMAT,
		"'x.tsv': line 2 has 1 fields, the header 2");
	T_FAILS(mgpu_tab_parse_tsv(&t, "a\tb\n1\t2", 7, "x.tsv"), MGPU_EFORMAT, "cut short");
	T_FAILS(mgpu_tab_parse_tsv(&t, "", 0, "x.tsv"), MGPU_EFORMAT, "not a TSV table");
	T_OK(mgpu_tab_parse_tsv(&t, "a\tb\n1\tNA\n", 9, "x.tsv"));
	T_CHECK(mgpu_tab_get(&t, 0, "b") == NULL && strcmp(mgpu_tab_get(&t, 0, "a"), "1") == 0,
		"NA cell");
	T_FAILS(mgpu_bench_trows_from_tab(&t, "x.tsv", &rows, &n), MGPU_EFORMAT,
		"not an mgpu-bench train table");
	T_FAILS(mgpu_tab_set(&t, 0, "zz", "1"), MGPU_EINVAL, "no column 'zz'");
	T_FAILS(mgpu_tab_fill(&t, "zz", "1"), MGPU_EINVAL, "no column 'zz'");
	T_OK(mgpu_tab_add_row(&t));
	T_OK(mgpu_tab_fill(&t, "b", "Zen"));
	T_CHECK(strcmp(mgpu_tab_get(&t, 0, "b"), "Zen") == 0 &&
		strcmp(mgpu_tab_get(&t, 1, "b"), "Zen") == 0, "fill");
	mgpu_tab_free(&t);
}

static void test_compare(void)
{
	struct mgpu_bench_trow *old, *now;
	struct mgpu_bench_regression reg[8];
	int n, n2, k;

	T_OK(load(&old, &n));
	T_OK(load(&now, &n2));
	if (!old || !now)
		return;
	n = n2 = 3; /* the three rows that ran */
	mgpu_bench_compare(old, n, now, n2, 0.10, reg, 8, &k);
	T_CHECK(k == 0, "unchanged results: %d regressions (%s)", k, reg[0].what);
	now[1].samples_per_s = 1500;  /* -16.7%: beyond 10% */
	now[2].samples_per_s = 1100;  /* -8.3%: within */
	now[0].peak_bytes[0] = 8000000; /* +14%: beyond */
	mgpu_bench_compare(old, n, now, n2, 0.10, reg, 8, &k);
	T_CHECK(k == 2, "%d regressions", k);
	T_CHECK(strcmp(reg[0].config, "1 CPU rank") == 0 && strstr(reg[0].what, "peak_bytes"),
		"%s: %s", reg[0].config, reg[0].what);
	T_CHECK(strcmp(reg[1].config, "2 CPU ranks (DDP)") == 0 &&
		strstr(reg[1].what, "samples_per_s 1800 -> 1500 (-16.7%"), "%s", reg[1].what);
	mgpu_bench_compare(old, n, now, n2, 0.20, reg, 8, &k);
	T_CHECK(k == 0, "20%% tolerance: %d", k);
	snprintf(now[2].error, sizeof now[2].error, "boom");
	mgpu_bench_compare(old, n, now, 2, 0.20, reg, 8, &k);
	T_CHECK(k == 1 && strstr(reg[0].what, "not measured again"), "missing row: %d", k);
	mgpu_bench_compare(old, n, now, n2, 0.20, reg, 8, &k);
	T_CHECK(k == 1 && strstr(reg[0].what, "failed: boom"), "failed row: %d", k);
	free(old);
	free(now);
}

static void test_quote_split(void)
{
	static char w[6][32] = { "/bin/mgpu-train", "--model", "mlp:4-2,act=gelu", "--data",
				 "my dir/it's", "" };
	char *argv[] = { w[0], w[1], w[2], w[3], w[4], w[5], NULL };
	char buf[256], *back[16];
	int n, i;

	T_OK(mgpu_bench_quote_argv(argv, buf, sizeof buf));
	T_CHECK(strcmp(buf, "/bin/mgpu-train --model mlp:4-2,act=gelu --data 'my dir/it'\\''s' ''")
		== 0, "%s", buf);
	T_OK(mgpu_bench_split_command(buf, back, 16, &n));
	T_CHECK(n == 6 && back[6] == NULL, "%d words", n);
	for (i = 0; i < n && i < 6; i++)
		T_CHECK(strcmp(back[i], argv[i]) == 0, "word %d: '%s'", i, back[i]);
	T_FAILS(mgpu_bench_quote_argv(argv, buf, 20), MGPU_EINVAL, "longer than");
	snprintf(buf, sizeof buf, "a 'b");
	T_FAILS(mgpu_bench_split_command(buf, back, 16, &n), MGPU_EFORMAT, "unbalanced");
}

/* The x of every legend key (<rect ... width="12" height="12">) and the
 * largest right edge of the bars (class "bar"). */
static void svg_extents(const char *svg, double *legend_min_x, double *bar_max_x, int *nkeys)
{
	const char *p = svg;
	double x, w;

	*legend_min_x = 1e9;
	*bar_max_x = 0;
	*nkeys = 0;
	while ((p = strstr(p, "<rect ")) != NULL) {
		p += 6;
		if (strncmp(p, "class=\"bar\" ", 12) == 0 &&
		    sscanf(p + 12, "x=\"%lf\" y=\"%*f\" width=\"%lf\"", &x, &w) == 2) {
			*bar_max_x = x + w > *bar_max_x ? x + w : *bar_max_x;
		} else if (sscanf(p, "x=\"%lf\" y=\"%*f\" width=\"%lf\"", &x, &w) == 2 && w == 12) {
			*legend_min_x = x < *legend_min_x ? x : *legend_min_x;
			(*nkeys)++;
		}
	}
}

/* Eight devices with tall bars on every device: the legend (1 device and
 * the series) must not sit on them, nor may value labels wider than their
 * bars. */
static void test_svg_legend(void)
{
	struct mgpu_bench_trow rows[2];
	double legend_x, bars_x;
	char *buf = NULL;
	size_t len = 0;
	FILE *fp;
	int i, d, keys;

	memset(rows, 0, sizeof rows);
	for (i = 0; i < 2; i++) {
		snprintf(rows[i].kind, sizeof rows[i].kind, "gpu");
		snprintf(rows[i].mode, sizeof rows[i].mode, "ddp");
		rows[i].devices = rows[i].ndev = i ? 8 : 1;
		rows[i].samples_per_s = i ? 7000 : 1000;
		for (d = 0; d < rows[i].ndev; d++)
			rows[i].peak_bytes[d] = (int64_t)(100 + d) << 20;
		mgpu_bench_label(&rows[i], 0);
	}
	mgpu_bench_trows_finish(rows, 2);
	fp = open_memstream(&buf, &len);
	T_OK(mgpu_bench_plot_svg(fp, rows, 2, NULL));
	fclose(fp);
	svg_extents(buf ? buf : "", &legend_x, &bars_x, &keys);
	T_CHECK(keys == 2, "%d legend keys", keys);
	T_CHECK(bars_x > 880 && legend_x > bars_x, "legend at x %.1f, bars reach x %.1f", legend_x,
		bars_x);
	T_CHECK(buf && strstr(buf, ">GPUs DDP</text>") && legend_x + 140 <= 1380,
		"legend off the page");
	/* bars 18 px wide: value labels would run into each other, so none */
	T_CHECK(buf && !strstr(buf, ">100.0</text>") && !strstr(buf, ">107.0</text>"),
		"value labels on narrow bars");
	free(buf);
}

/* The busy-window mean: idle start-up and tear-down left out, idle samples
 * between busy ones counted, unknown readings skipped, memory the most. */
static void test_gpumon_acc(void)
{
	static const int util[] = { 0, 0, -1, 80, 100, 0, 60, 0, 0 };
	struct mgpu_gpumon_acc a;
	size_t i;

	mgpu_gpumon_acc_init(&a);
	T_CHECK(isnan(mgpu_gpumon_acc_util(&a)) && mgpu_gpumon_acc_mem(&a) == -1, "empty");
	for (i = 0; i < sizeof util / sizeof util[0]; i++)
		mgpu_gpumon_acc_add(&a, util[i], i == 4 ? 9000 : i == 2 ? -1 : (int64_t)i * 100);
	/* window 80, 100, 0, 60: (80 + 100 + 0 + 60) / 4 */
	T_NEAR(mgpu_gpumon_acc_util(&a), 60, 1e-12);
	T_CHECK(mgpu_gpumon_acc_mem(&a) == 9000 && a.nsamples == 8, "mem %lld samples %lld",
		(long long)mgpu_gpumon_acc_mem(&a), (long long)a.nsamples);
	/* never busy: 0, not unknown */
	mgpu_gpumon_acc_init(&a);
	mgpu_gpumon_acc_add(&a, 0, 5);
	mgpu_gpumon_acc_add(&a, 0, -1);
	T_CHECK(mgpu_gpumon_acc_util(&a) == 0 && mgpu_gpumon_acc_mem(&a) == 5, "idle");
	/* only unknown readings: NAN */
	mgpu_gpumon_acc_init(&a);
	mgpu_gpumon_acc_add(&a, -1, -1);
	T_CHECK(isnan(mgpu_gpumon_acc_util(&a)) && mgpu_gpumon_acc_mem(&a) == -1, "unknown");
	/* one busy sample */
	mgpu_gpumon_acc_add(&a, 37, 1);
	T_NEAR(mgpu_gpumon_acc_util(&a), 37, 0);
}

/* A fake device: a repeating utilisation pattern, every reading logged. */
struct fake_gpu {
	int calls[2], log[2][4096];
};

static void fake_read(void *ctx, int dev, int *util, int64_t *mem)
{
	static const int pattern[] = { 0, 0, 90, 0, 100, 70, 0 };
	struct fake_gpu *f = ctx;
	int k = f->calls[dev]++;

	*util = pattern[k % 7] / (dev + 1);
	*mem = (int64_t)(dev + 1) << 20;
	if (k < 4096)
		f->log[dev][k] = *util;
}

/* The sampler thread feeds every reading of every device to its
 * accumulator: compared with the same readings added by hand. */
static void test_gpumon_thread(void)
{
	static struct fake_gpu f;
	struct mgpu_gpumon m;
	struct mgpu_gpumon_acc want;
	struct timespec ms = { 0, 3000000 };
	int d, k;

	T_FAILS(mgpu_gpumon_start(&m, 0, 1, fake_read, &f), MGPU_EINVAL, "GPU sampler");
	T_FAILS(mgpu_gpumon_start(&m, 2, 0, fake_read, &f), MGPU_EINVAL, "GPU sampler");
	T_OK(mgpu_gpumon_start(&m, 2, 1, fake_read, &f));
	for (k = 0; k < 10; k++)
		nanosleep(&ms, NULL);
	mgpu_gpumon_stop(&m);
	mgpu_gpumon_stop(&m); /* twice is harmless */
	T_CHECK(f.calls[0] >= 2 && f.calls[0] == f.calls[1] && f.calls[0] < 4096, "calls %d/%d",
		f.calls[0], f.calls[1]);
	for (d = 0; d < 2; d++) {
		mgpu_gpumon_acc_init(&want);
		for (k = 0; k < f.calls[d]; k++)
			mgpu_gpumon_acc_add(&want, f.log[d][k], (int64_t)(d + 1) << 20);
		T_CHECK(m.acc[d].nsamples == f.calls[d], "dev %d: %lld samples of %d", d,
			(long long)m.acc[d].nsamples, f.calls[d]);
		T_CHECK(memcmp(&m.acc[d], &want, sizeof want) == 0, "dev %d: %g, by hand %g", d,
			mgpu_gpumon_acc_util(&m.acc[d]), mgpu_gpumon_acc_util(&want));
		T_CHECK(mgpu_gpumon_acc_mem(&m.acc[d]) == (int64_t)(d + 1) << 20, "dev %d mem", d);
	}
	/* stop takes a last sample: a long interval still gives the first and the last */
	memset(&f, 0, sizeof f);
	T_OK(mgpu_gpumon_start(&m, 1, 60000, fake_read, &f));
	mgpu_gpumon_stop(&m);
	T_CHECK(f.calls[0] == 2, "%d samples with a 60 s interval", f.calls[0]);
}

/* Repeats fold to the mean utilisation and the most memory; the columns
 * are lists per device, NA for rows that were not sampled (CPU), and
 * survive a TSV round trip; Markdown gets a utilisation table. */
static void test_gpumon_columns(void)
{
	static struct mgpu_bench_run runs[2];
	static struct mgpu_bench_trow rows[2], *back;
	struct mgpu_tab t;
	char *s;
	int i, n;

	for (i = 0; i < 2; i++) {
		runs[i].samples_per_s = 1000;
		runs[i].ndev = runs[i].ngpumon = 2;
		runs[i].gpu_util_pct[0] = i ? 90 : 80;
		runs[i].gpu_util_pct[1] = i ? NAN : 50;
		runs[i].gpu_mem_used_bytes[0] = i ? 700 : 900;
		runs[i].gpu_mem_used_bytes[1] = -1;
	}
	snprintf(rows[0].config, sizeof rows[0].config, "2 devices (DDP)");
	snprintf(rows[0].kind, sizeof rows[0].kind, "gpu");
	snprintf(rows[0].command, sizeof rows[0].command, "mgpu-train --gpus 0,1");
	rows[0].devices = 2;
	mgpu_bench_trow_fold(&rows[0], runs, 2);
	T_CHECK(rows[0].ngpumon == 2, "ngpumon %d", rows[0].ngpumon);
	T_NEAR(rows[0].gpu_util_pct[0], 85, 1e-12);
	T_NEAR(rows[0].gpu_util_pct[1], 50, 1e-12);
	T_CHECK(rows[0].gpu_mem_used_bytes[0] == 900 && rows[0].gpu_mem_used_bytes[1] == -1, "mem");
	memset(&runs[0], 0, sizeof runs[0]);
	runs[0].samples_per_s = 500;
	snprintf(rows[1].config, sizeof rows[1].config, "1 CPU rank");
	snprintf(rows[1].kind, sizeof rows[1].kind, "cpu");
	snprintf(rows[1].command, sizeof rows[1].command, "mgpu-train --cpu-ranks 1");
	rows[1].devices = 1;
	mgpu_bench_trow_fold(&rows[1], runs, 1);
	T_CHECK(rows[1].ngpumon == 0, "a CPU row was sampled");
	T_OK(mgpu_bench_trows_tab(rows, 2, &t));
	T_CHECK(strcmp(mgpu_tab_get(&t, 0, "gpu_util_pct"), "85,50") == 0 &&
		strcmp(mgpu_tab_get(&t, 0, "gpu_mem_used_bytes"), "900,-1") == 0 &&
		!mgpu_tab_get(&t, 1, "gpu_util_pct") && !mgpu_tab_get(&t, 1, "gpu_mem_used_bytes"),
		"cells '%s' '%s'", mgpu_tab_get(&t, 0, "gpu_util_pct"),
		mgpu_tab_get(&t, 0, "gpu_mem_used_bytes"));
	s = render(&t, MGPU_FMT_JSON);
	T_CHECK(s && strstr(s, "\"gpu_util_pct\":[85,50],\"gpu_mem_used_bytes\":[900,-1],"),
		"%s", s);
	T_CHECK(s && !strstr(strchr(s, '\n'), "gpu_util_pct"), "CPU row: %s", s);
	free(s);
	s = render(&t, MGPU_FMT_TSV);
	mgpu_tab_free(&t);
	T_OK(mgpu_tab_parse_tsv(&t, s, strlen(s), "g.tsv"));
	T_OK(mgpu_bench_trows_from_tab(&t, "g.tsv", &back, &n));
	T_CHECK(back && n == 2 && back[0].ngpumon == 2 && back[0].gpu_util_pct[0] == 85 &&
		back[0].gpu_mem_used_bytes[1] == -1 && back[1].ngpumon == 0, "round trip");
	free(back);
	mgpu_tab_free(&t);
	free(s);
	T_OK(mgpu_bench_util_tab(rows, 2, &t));
	s = render(&t, MGPU_FMT_MD);
	T_CHECK(t.nrows == 1 && s && strstr(s, "| dev 0 (%) |") && strstr(s, " 85 | ") &&
		strstr(s, " 50 |\n"), "%s", s);
	free(s);
	mgpu_tab_free(&t);
}

static void test_svg(void)
{
	struct mgpu_bench_trow *rows;
	char *buf = NULL;
	size_t len = 0;
	FILE *fp;
	int n;

	T_OK(load(&rows, &n));
	if (!rows)
		return;
	mgpu_bench_trows_finish(rows, n);
	fp = open_memstream(&buf, &len);
	T_OK(mgpu_bench_plot_svg(fp, rows, n, "t <&>"));
	fclose(fp);
	T_CHECK(buf && strstr(buf, "<svg") && strstr(buf, "</svg>") &&
		strstr(buf, "stroke-dasharray") && strstr(buf, "t &lt;&amp;&gt;") &&
		strstr(buf, "CPU ranks DDP, sync cpu") && strstr(buf, ">6.7</text>"), "svg");
	free(buf);
	rows[0].error[0] = 'x', rows[1].error[0] = 'x', rows[2].error[0] = 'x';
	fp = open_memstream(&buf, &len);
	T_FAILS(mgpu_bench_plot_svg(fp, rows, n, NULL), MGPU_EINVAL, "no configuration");
	fclose(fp);
	free(buf);
	free(rows);
}

static void test_spawn(void)
{
	static char sh[] = "/bin/sh", c[] = "-c", sleep[] = "exec sleep 5",
		    none[] = "/nonexistent/prog",
		    script[] = "echo out; echo 'x: warning: w' >&2; echo 'x: error: boom' >&2; "
			       "echo 'x: error: later' >&2; exit 3";
	char *ok[] = { sh, c, script, NULL };
	char *slow[] = { sh, c, sleep, NULL };
	char *missing[] = { none, NULL };
	struct mgpu_spawn_result r;
	char line[128];

	T_OK(mgpu_spawn_capture(ok, 10000, NULL, &r));
	T_CHECK(r.exited && r.status == 3 && strcmp(r.out, "out\n") == 0, "status %d", r.status);
	mgpu_spawn_err_line(&r, line, sizeof line);
	T_CHECK(strcmp(line, "x: error: boom") == 0, "'%s'", line);
	free(r.out);
	T_OK(mgpu_spawn_capture(slow, 200, NULL, &r));
	T_CHECK(r.timed_out && !r.exited, "timed out %d exited %d", r.timed_out, r.exited);
	free(r.out);
	T_OK(mgpu_spawn_capture(missing, 1000, NULL, &r));
	T_CHECK(r.exited && r.status == 127 && strstr(r.err, "cannot run"), "%d", r.status);
	free(r.out);
}

/* A background child: its status and stderr tail come back, a slow one is
 * stopped after the timeout, and stdout goes nowhere. */
static void test_spawn_bg(void)
{
	static char sh[] = "/bin/sh", c[] = "-c", sleep[] = "exec sleep 5",
		    script[] = "echo lost; echo 'x: error: node 1' >&2; exit 5";
	char *ok[] = { sh, c, script, NULL };
	char *slow[] = { sh, c, sleep, NULL };
	struct mgpu_spawn_bg bg;
	struct mgpu_spawn_result r;

	T_OK(mgpu_spawn_bg_start(ok, &bg));
	T_OK(mgpu_spawn_bg_wait(&bg, 10000, NULL, &r));
	T_CHECK(r.exited && r.status == 5 && !r.timed_out && strcmp(r.err, "x: error: node 1\n") == 0
		&& r.out && !r.out[0], "status %d err '%s'", r.status, r.err);
	free(r.out);
	T_OK(mgpu_spawn_bg_start(slow, &bg));
	T_OK(mgpu_spawn_bg_wait(&bg, 200, NULL, &r));
	T_CHECK(r.timed_out && !r.exited, "timed out %d exited %d", r.timed_out, r.exited);
	free(r.out);
}

/* The other nodes of a run that failed on its way: every one started is
 * stopped and reaped (none left running or a zombie), one that ignores
 * SIGTERM too (killed after the grace), and a slot never started is
 * skipped. */
static void test_spawn_bg_stop(void)
{
	static char sh[] = "/bin/sh", c[] = "-c",
		    polite[] = "trap 'exit 7' TERM; while :; do sleep 0.05; done",
		    deaf[] = "trap '' TERM; while :; do sleep 0.05; done";
	char *ends[] = { sh, c, polite, NULL }, *stays[] = { sh, c, deaf, NULL };
	struct mgpu_spawn_bg bg[4];
	int pid[4], i, st;

	T_OK(mgpu_spawn_bg_start(ends, &bg[0]));
	T_OK(mgpu_spawn_bg_start(stays, &bg[1]));
	bg[2].pid = 0, bg[2].err_fd = -1;
	T_OK(mgpu_spawn_bg_start(ends, &bg[3]));
	if (t_cur_failed)
		return;
	for (i = 0; i < 4; i++)
		pid[i] = bg[i].pid;
	usleep(200000); /* the traps set */
	mgpu_spawn_bg_stop(bg, 4);
	for (i = 0; i < 4; i++) {
		T_CHECK(bg[i].pid == 0 && bg[i].err_fd == -1, "slot %d: pid %d, fd %d", i,
			bg[i].pid, bg[i].err_fd);
		T_CHECK(!pid[i] || (waitpid(pid[i], &st, WNOHANG) < 0 && errno == ECHILD),
			"slot %d: pid %d not reaped", i, pid[i]);
	}
}

/* Rows of several nodes: labelled with nodes x ranks and the link, and
 * their nodes and link columns read back from a saved table. */
static void test_node_rows(void)
{
	struct mgpu_bench_trow r, *back = NULL;
	struct mgpu_tab t, t2;
	char *buf = NULL;
	size_t len = 0;
	FILE *fp;
	int n = 0;

	memset(&r, 0, sizeof r);
	snprintf(r.kind, sizeof r.kind, "cpu");
	snprintf(r.mode, sizeof r.mode, "ddp");
	snprintf(r.sync, sizeof r.sync, "mpi");
	snprintf(r.link_rate, sizeof r.link_rate, "100mbit");
	snprintf(r.command, sizeof r.command, "mgpu-train --cpu-ranks 2");
	r.devices = 4;
	r.nodes = 2;
	r.link_delay_ms = 5;
	mgpu_bench_label(&r, 1);
	T_CHECK(strcmp(r.config, "2 nodes x 2 CPU ranks (DDP, mpi, 100mbit, +5ms)") == 0, "'%s'",
		r.config);
	T_OK(mgpu_bench_trows_tab(&r, 1, &t));
	fp = open_memstream(&buf, &len);
	T_OK(mgpu_tab_write(&t, fp, MGPU_FMT_TSV));
	fclose(fp);
	T_OK(mgpu_tab_parse_tsv(&t2, buf, len, "nodes.tsv"));
	T_OK(mgpu_bench_trows_from_tab(&t2, "nodes.tsv", &back, &n));
	T_CHECK(n == 1 && back[0].nodes == 2 && back[0].devices == 4 &&
		strcmp(back[0].link_rate, "100mbit") == 0 && back[0].link_delay_ms == 5,
		"read back: %d rows, nodes %d, rate '%s', delay %g", n, n ? back[0].nodes : 0,
		n ? back[0].link_rate : "", n ? back[0].link_delay_ms : 0);
	free(back);
	free(buf);
	mgpu_tab_free(&t);
	mgpu_tab_free(&t2);
}

struct ar_thread {
	struct mgpu_shm view;
	struct mgpu_bench_ar_cfg cfg;
	int64_t wrong;
	int rc;
};

static int rows_seen;

static int count_row(void *ctx, const struct mgpu_bench_ar_row *r)
{
	(void)ctx;
	rows_seen += r->count > 0 && r->time_us > 0 && r->busbw_gbps == r->algbw_gbps;
	return 0;
}

static void *ar_main(void *p)
{
	struct ar_thread *a = p;

	a->rc = mgpu_bench_ar_rank(&a->view, &a->cfg, &a->wrong);
	return NULL;
}

/* Two ranks as threads on a private segment: 0 wrong, or with the corrupt
 * hook exactly one per size, seen by both ranks. */
static void run_ar(int corrupt, int64_t want)
{
	static const size_t sizes[] = { 4096, 8192, 65536 };
	struct mgpu_bench_ar_cfg cfg = { MGPU_AR_CPU, sizes, 3, 3, corrupt, count_row, NULL };
	struct ar_thread a[2];
	struct mgpu_shm s;
	pthread_t th[2];
	int r;

	rows_seen = 0;
	T_OK(mgpu_shm_create_private(&s, 2, mgpu_bench_ar_nparams(&cfg), 0, 10000));
	for (r = 0; r < 2; r++) {
		mgpu_shm_view(&a[r].view, &s, r);
		a[r].cfg = cfg;
		pthread_create(&th[r], NULL, ar_main, &a[r]);
	}
	for (r = 0; r < 2; r++) {
		pthread_join(th[r], NULL);
		T_CHECK(a[r].rc == 0, "rank %d: %s", r, mgpu_errmsg());
		T_CHECK(a[r].wrong == want, "rank %d: %lld wrong, want %lld", r,
			(long long)a[r].wrong, (long long)want);
	}
	T_CHECK(rows_seen == 3, "%d rows reported", rows_seen);
	mgpu_shm_close(&s);
}

static void test_allreduce_check(void)
{
	double gbps = 0;

	run_ar(0, 0);
	run_ar(1, 3);
	T_OK(mgpu_bench_memcpy_gbps(1 << 20, &gbps));
	T_CHECK(gbps > 0, "memcpy %g GB/s", gbps);
}

static void test_lm_peaks(void)
{
	struct mgpu_bench_peak p;

	mgpu_bench_peak_cpu("fpu sse sse2 avx fma avx2", 2000, "test", &p);
	T_CHECK(p.flops == 64e9 && strstr(p.how, "2.00 GHz (test) x 32 FLOP/cycle"), "%g %s",
		p.flops, p.how);
	mgpu_bench_peak_cpu("avx avx2 fma avx512f avx512bw avx512vl avx512dq", 3000, "t", &p);
	T_CHECK(p.flops == 192e9, "avx-512: %g", p.flops);
	mgpu_bench_peak_cpu("sse sse2", 1000, "t", &p);
	T_CHECK(p.flops == 8e9, "sse: %g", p.flops);
	mgpu_bench_peak_cpu("avx avx2", 1000, "t", &p); /* AVX2 without FMA is AVX's */
	T_CHECK(p.flops == 16e9, "avx2 without fma: %g", p.flops);
	mgpu_bench_peak_cpu("avx avx2 fma", 0, "nowhere", &p);
	T_CHECK(p.flops == 0 && strstr(p.how, "unknown (nowhere)"), "%s", p.how);
	mgpu_bench_peak_cpu_host(&p);
	T_CHECK(p.how[0], "host: no line");
	mgpu_bench_peak_gpu("NVIDIA H100 80GB HBM3", 1, &p);
	T_CHECK(p.flops == 989e12 && strstr(p.how, "H100 SXM"), "%g %s", p.flops, p.how);
	mgpu_bench_peak_gpu("NVIDIA H100 80GB HBM3", 0, &p);
	T_CHECK(p.flops == 67e12, "h100 fp32 %g", p.flops);
	mgpu_bench_peak_gpu("NVIDIA H100 PCIe", 1, &p);
	T_CHECK(p.flops == 756e12, "h100 pcie %g", p.flops);
	mgpu_bench_peak_gpu("NVIDIA L40S", 1, &p); /* not an L4 */
	T_CHECK(p.flops == 362e12, "l40s %g", p.flops);
	mgpu_bench_peak_gpu("NVIDIA GeForce GTX 1080", 0, &p);
	T_CHECK(p.flops == 0 && strstr(p.how, "not in"), "%s", p.how);
}

/* gpt:layers=2,heads=2,dim=8,ctx=4,vocab=16 by hand: N = 16*8 + 4*8 +
 * 2 * (12*64 + 13*8) + 2*8 = 1920 parameters, 1888 without wpe. */
static const char tiny_gpt[] = "gpt:layers=2,heads=2,dim=8,ctx=4,vocab=16";

static void test_lm_model(void)
{
	static const char *const argv[] = { "mgpu-train", "--model", "mlp:4-2", "--model", tiny_gpt,
				"--optimizer=adamw", "--grad-accum-steps", "2", "--dtype", "bf16",
				NULL };
	static const char *const mlp[] = { "mgpu-train", "--momentum", "0", NULL };
	static const char *const bad[] = { "mgpu-train", "--model", "gpt:layers=0", NULL };
	struct mgpu_bench_workload w;

	T_OK(mgpu_bench_workload_parse(argv, &w));
	T_CHECK(w.spec.kind == MGPU_MODEL_GPT && w.spec.ctx == 4 && w.nstate == 2 &&
		w.accum == 2 && w.bf16, "kind %d ctx %d nstate %d accum %d bf16 %d", w.spec.kind,
		w.spec.ctx, w.nstate, w.accum, w.bf16);
	/* 6 * 1888 + 12 * 2 * 4 * 8 */
	T_CHECK(mgpu_bench_gpt_flops_per_token(&w.spec) == 11328 + 768, "%g",
		mgpu_bench_gpt_flops_per_token(&w.spec));
	/* B 3: 1920 * (1 + 3) + 3 * 4 * (2 * (16*8 + 2) + 2*8 + 16 + 11*8 + 4)
	 * floats: the logits once (their gradient in place), the scratch */
	T_CHECK(mgpu_bench_gpt_mem_estimate(&w.spec, 3, 2, 1, 0) == 4 * (7680 + 4608), "%lld",
		(long long)mgpu_bench_gpt_mem_estimate(&w.spec, 3, 2, 1, 0));
	/* 2 ranks sharing weights and AdamW state: 1920 + 1920 * 3 / 2 */
	T_CHECK(mgpu_bench_gpt_mem_estimate(&w.spec, 3, 2, 2, 0) == 4 * (4800 + 4608), "shared");
	/* bf16: 2 bytes x (1920 weights + 3 * 4 tokens x (4D 32 + max(4D 32,
	 * V 16))), the weight copy never shared */
	T_CHECK(mgpu_bench_gpt_mem_estimate(&w.spec, 3, 2, 1, 1) == 4 * (7680 + 4608) + 5376 &&
		mgpu_bench_gpt_mem_estimate(&w.spec, 3, 2, 2, 1) == 4 * (4800 + 4608) + 5376,
		"bf16 %lld", (long long)mgpu_bench_gpt_mem_estimate(&w.spec, 3, 2, 1, 1));
	T_OK(mgpu_bench_workload_parse(mlp, &w));
	T_CHECK(w.spec.kind == MGPU_MODEL_MLP && w.nstate == 0 && w.accum == 1 && !w.bf16,
		"defaults: kind %d nstate %d", w.spec.kind, w.nstate);
	T_CHECK(mgpu_bench_gpt_flops_per_token(&w.spec) == 0 &&
		mgpu_bench_gpt_mem_estimate(&w.spec, 3, 0, 1, 1) == -1, "an mlp has no gpt figures");
	T_CHECK(mgpu_bench_workload_parse(bad, &w) < 0, "a bad spec parsed");
}

/* The logits' rows are max(vocab, padded_vocab) rounded up to 8 floats
 * apart (gpt.c): vocab 301 keeps 304 a token, padded to 310 keeps 312,
 * in the activations and in bf16's scratch for the logits' gradient. */
static void test_lm_padded_logits(void)
{
	static const char *const a301[] = { "mgpu-train", "--model",
					    "gpt:layers=2,heads=2,dim=8,ctx=4,vocab=301", NULL };
	static const char *const a310[] = {
		"mgpu-train", "--model", "gpt:layers=2,heads=2,dim=8,ctx=4,vocab=301,padded_vocab=310",
		NULL
	};
	struct mgpu_bench_workload w;
	double n, act;

	T_OK(mgpu_bench_workload_parse(a301, &w));
	T_CHECK(mgpu_spec_logits_ld(&w.spec) == 304, "ld %d", mgpu_spec_logits_ld(&w.spec));
	n = (double)mgpu_model_count(&w.spec);
	act = 3 * 4 * (2 * (16 * 8 + 2) + 2 * 8 + 304 + 11 * 8 + 4);
	T_CHECK(mgpu_bench_gpt_mem_estimate(&w.spec, 3, 2, 1, 0) == (int64_t)(4 * (4 * n + act)),
		"vocab 301: %lld", (long long)mgpu_bench_gpt_mem_estimate(&w.spec, 3, 2, 1, 0));
	T_CHECK(mgpu_bench_gpt_mem_estimate(&w.spec, 3, 2, 1, 1) ==
			(int64_t)(4 * (4 * n + act) + 2 * (n + 3 * 4 * (32 + 304))),
		"vocab 301 bf16: %lld", (long long)mgpu_bench_gpt_mem_estimate(&w.spec, 3, 2, 1, 1));
	T_OK(mgpu_bench_workload_parse(a310, &w));
	T_CHECK(mgpu_spec_logits_ld(&w.spec) == 312, "padded ld %d", mgpu_spec_logits_ld(&w.spec));
	n = (double)mgpu_model_count(&w.spec);
	act = 3 * 4 * (2 * (16 * 8 + 2) + 2 * 8 + 312 + 11 * 8 + 4);
	T_CHECK(mgpu_bench_gpt_mem_estimate(&w.spec, 3, 2, 1, 0) == (int64_t)(4 * (4 * n + act)),
		"padded 310: %lld", (long long)mgpu_bench_gpt_mem_estimate(&w.spec, 3, 2, 1, 0));
}

/* A GPU row at a context of 512 or more adds the (T,T) scratch of
 * attention's GEMM form (one chunk of B*H heads: S and dP, and in bf16 the
 * four operands); a CPU row at the same shape does not. */
static void test_lm_attn_scratch(void)
{
	static struct mgpu_bench_trow rows[2];
	static const char *const argv[] = { "mgpu-train", "--model",
				"gpt:layers=1,heads=2,dim=8,ctx=512,vocab=16", "--dtype", "bf16",
				NULL };
	struct mgpu_bench_peak pk = { 1e9, "a test peak" };
	struct mgpu_bench_workload w;
	int64_t base;

	T_OK(mgpu_bench_workload_parse(argv, &w));
	snprintf(rows[0].kind, sizeof rows[0].kind, "cpu");
	snprintf(rows[0].mode, sizeof rows[0].mode, "ddp");
	rows[0].devices = rows[0].ndev = 1;
	rows[0].samples_per_s = 10;
	rows[0].effective_batch = 3;
	rows[1] = rows[0];
	snprintf(rows[1].kind, sizeof rows[1].kind, "gpu");
	mgpu_bench_lm_fill(&rows[0], &w, &pk);
	mgpu_bench_lm_fill(&rows[1], &w, &pk);
	base = mgpu_bench_gpt_mem_estimate(&w.spec, 3, w.nstate, 1, 1);
	T_CHECK(rows[0].mem_est_bytes == base, "cpu %lld vs %lld",
		(long long)rows[0].mem_est_bytes, (long long)base);
	T_CHECK(rows[1].mem_est_bytes == base + 2LL * 6 * 512 * 512 * 4 + 4LL * 6 * 512 * 4 * 2,
		"gpu %lld, base %lld", (long long)rows[1].mem_est_bytes, (long long)base);
}

static void test_lm_rows(void)
{
	static struct mgpu_bench_trow rows[2];
	static const char *const argv[] = { "mgpu-train", "--model", tiny_gpt, "--optimizer",
				"adamw", "--grad-accum-steps", "2", NULL };
	struct mgpu_bench_peak pk = { 1e9, "a test peak" };
	struct mgpu_bench_workload w;
	struct mgpu_tab t;
	char *s;

	T_OK(mgpu_bench_workload_parse(argv, &w));
	snprintf(rows[0].config, sizeof rows[0].config, "2 CPU ranks (DDP)");
	snprintf(rows[0].kind, sizeof rows[0].kind, "cpu");
	snprintf(rows[0].mode, sizeof rows[0].mode, "ddp");
	snprintf(rows[0].command, sizeof rows[0].command, "mgpu-train");
	rows[0].devices = rows[0].ndev = 2;
	rows[0].samples_per_s = 100;
	rows[0].effective_batch = 12; /* 3 per device and micro-step */
	rows[0].peak_bytes[0] = rows[0].peak_bytes[1] = 40000;
	rows[1] = rows[0];
	snprintf(rows[1].mode, sizeof rows[1].mode, "dp");
	mgpu_bench_lm_fill(&rows[0], &w, &pk);
	mgpu_bench_lm_fill(&rows[1], &w, &pk);
	T_CHECK(rows[0].ctx == 4 && rows[0].tokens_per_s == 400 &&
		fabs(rows[0].mfu - 400.0 * 12096 / 2e9) < 1e-12 &&
		rows[0].mem_est_bytes == 4 * (4800 + 4608) && strcmp(rows[0].peak_how, pk.how) == 0,
		"tokens %g mfu %g est %lld", rows[0].tokens_per_s, rows[0].mfu,
		(long long)rows[0].mem_est_bytes);
	T_CHECK(rows[1].mem_est_bytes == -1 && rows[1].tokens_per_s == 400, "dp: no estimate");
	T_OK(mgpu_bench_speedup_tab(rows, 1, &t));
	s = render(&t, MGPU_FMT_MD);
	T_CHECK(s && strstr(s, "| Tokens/s | MFU") && strstr(s, " 400 |") && strstr(s, " 0.24% |"),
		"%s", s);
	free(s);
	mgpu_tab_free(&t);
	T_OK(mgpu_bench_memory_tab(rows, 2, &t));
	s = render(&t, MGPU_FMT_MD);
	T_CHECK(s && strstr(s, "| Estimate (MiB) |") && strstr(s, "0.0 |"), "%s", s);
	free(s);
	mgpu_tab_free(&t);
	/* the columns survive a saved TSV (--compare reads them back) */
	T_OK(mgpu_bench_trows_tab(rows, 1, &t));
	s = render(&t, MGPU_FMT_TSV);
	mgpu_tab_free(&t);
	T_OK(mgpu_tab_parse_tsv(&t, s, strlen(s), "saved"));
	free(s);
	{
		struct mgpu_bench_trow *back = NULL;
		int n = 0;
		T_OK(mgpu_bench_trows_from_tab(&t, "saved", &back, &n));
		T_CHECK(n == 1 && back && back[0].ctx == 4 && back[0].tokens_per_s == 400 &&
			back[0].mem_est_bytes == 4 * (4800 + 4608) &&
			strcmp(back[0].peak_how, "a test peak") == 0, "read back");
		free(back);
	}
	mgpu_tab_free(&t);
}

/* The bf16 copies where 4D or the logits (V) are the largest second
 * operand, and the attention's H T never is (the fused op rounds its own
 * operands): gpt:layers=1,heads=2,dim=8,ctx=32,vocab=16 has N = 16*8 +
 * 32*8 + 12*64 + 13*8 + 2*8 = 1272, H T 64 > 4D 32 > V 16; with vocab 100,
 * V leads (N = 1944). */
static void test_lm_bf16_operands(void)
{
	struct mgpu_spec s;

	T_OK(mgpu_spec_load(&s, "gpt:layers=1,heads=2,dim=8,ctx=32,vocab=16"));
	T_CHECK(mgpu_bench_gpt_mem_estimate(&s, 1, 0, 1, 1) -
		mgpu_bench_gpt_mem_estimate(&s, 1, 0, 1, 0) == 2 * (1272 + 32 * (32 + 32)),
		"4D: %lld", (long long)(mgpu_bench_gpt_mem_estimate(&s, 1, 0, 1, 1) -
					mgpu_bench_gpt_mem_estimate(&s, 1, 0, 1, 0)));
	/* the activations: 32 tokens x (16 D + H + 2 D + V + 11 D + 4) + N (1 + 1) */
	T_CHECK(mgpu_bench_gpt_mem_estimate(&s, 1, 0, 1, 0) ==
			4 * (2 * 1272 + 32 * (16 * 8 + 2 + 2 * 8 + 16 + 11 * 8 + 4)),
		"H per token: %lld", (long long)mgpu_bench_gpt_mem_estimate(&s, 1, 0, 1, 0));
	/* vocab 100: the logits' gradient in rows of 104 (a multiple of 8) */
	T_OK(mgpu_spec_load(&s, "gpt:layers=1,heads=2,dim=8,ctx=32,vocab=100"));
	T_CHECK(mgpu_bench_gpt_mem_estimate(&s, 2, 0, 1, 1) -
		mgpu_bench_gpt_mem_estimate(&s, 2, 0, 1, 0) == 2 * (1944 + 64 * (32 + 104)),
		"V: %lld", (long long)(mgpu_bench_gpt_mem_estimate(&s, 2, 0, 1, 1) -
				       mgpu_bench_gpt_mem_estimate(&s, 2, 0, 1, 0)));
}

/* A row of a sweep: kind, devices, mode, dtype, throughput; labelled as a
 * --dtypes sweep labels it. */
static void dtype_row(struct mgpu_bench_trow *r, const char *kind, int devices,
		      const char *dtype, double sps)
{
	memset(r, 0, sizeof *r);
	snprintf(r->kind, sizeof r->kind, "%s", kind);
	snprintf(r->mode, sizeof r->mode, "%s", devices > 1 ? "ddp" : "");
	snprintf(r->dtype, sizeof r->dtype, "%s", dtype);
	snprintf(r->command, sizeof r->command, "mgpu-train --dtype %s", dtype);
	r->devices = r->ndev = devices;
	r->samples_per_s = r->samples_per_s_min = r->samples_per_s_max = sps;
	r->repeats = 1;
	r->peak_bytes[0] = r->peak_bytes[1] = (int64_t)(strcmp(dtype, "bf16") == 0 ? 3 : 2) << 20;
	mgpu_bench_label(r, MGPU_BENCH_LABEL_DTYPE);
}

static void test_dtype_labels(void)
{
	static const char *const a1[] = { "mgpu-train", "--dtype", "bf16", NULL };
	static const char *const a2[] = { "mgpu-train", "--dtype=bf16", "--dt", "fp32", NULL };
	static const char *const a3[] = { "mgpu-train", "--dtypes", "bf16", "--data", "x", NULL };
	static const char *const a4[] = { "mgpu-train", "--dtype", NULL };
	struct mgpu_bench_trow r;

	dtype_row(&r, "cpu", 1, "bf16", 1);
	T_CHECK(strcmp(r.config, "1 CPU rank (bf16)") == 0, "'%s'", r.config);
	dtype_row(&r, "cpu", 2, "fp32", 1);
	T_CHECK(strcmp(r.config, "2 CPU ranks (DDP, fp32)") == 0, "'%s'", r.config);
	snprintf(r.sync, sizeof r.sync, "nccl");
	snprintf(r.kind, sizeof r.kind, "gpu");
	mgpu_bench_label(&r, MGPU_BENCH_LABEL_SYNC | MGPU_BENCH_LABEL_DTYPE);
	T_CHECK(strcmp(r.config, "2 devices (DDP, nccl, fp32)") == 0, "'%s'", r.config);
	mgpu_bench_label(&r, MGPU_BENCH_LABEL_SYNC); /* not swept: not named */
	T_CHECK(strcmp(r.config, "2 devices (DDP, nccl)") == 0, "'%s'", r.config);
	r.devices = 1;
	mgpu_bench_label(&r, 0);
	T_CHECK(strcmp(r.config, "1 device") == 0, "'%s'", r.config);
	T_CHECK(strcmp(mgpu_bench_argv_dtype(a1), "bf16") == 0, "--dtype bf16");
	T_CHECK(strcmp(mgpu_bench_argv_dtype(a2), "fp32") == 0, "the last, abbreviated");
	T_CHECK(!mgpu_bench_argv_dtype(a3) && !mgpu_bench_argv_dtype(a4), "no --dtype");
}

/* Speedup against the 1-device row of the same dtype, the memory table's
 * Dtype column, and the dtype column through a saved TSV and back. */
static void test_dtype_rows(void)
{
	static struct mgpu_bench_trow rows[4], *back;
	struct mgpu_tab t;
	char *s;
	int n;

	dtype_row(&rows[0], "cpu", 1, "fp32", 1000);
	dtype_row(&rows[1], "cpu", 1, "bf16", 500);
	dtype_row(&rows[2], "cpu", 2, "fp32", 1800);
	dtype_row(&rows[3], "cpu", 2, "bf16", 950);
	mgpu_bench_trows_finish(rows, 4);
	T_NEAR(rows[1].speedup, 1, 0);
	T_NEAR(rows[2].speedup, 1.8, 1e-12);
	T_NEAR(rows[3].speedup, 1.9, 1e-12); /* 950 / 500, not 950 / 1000 */
	T_NEAR(rows[3].efficiency, 0.95, 1e-12);
	T_OK(mgpu_bench_memory_tab(rows, 4, &t));
	s = render(&t, MGPU_FMT_MD);
	T_CHECK(s && strstr(s, "| Devices | Mode | Dtype | dev 0 (MiB) | dev 1 (MiB) |") &&
		strstr(s, "| DDP  | bf16  |         3.0 |         3.0 |") &&
		strstr(s, "| -    | fp32  |         2.0 |           - |"),
		"%s", s);
	free(s);
	mgpu_tab_free(&t);
	/* all fp32: today's table */
	T_OK(mgpu_bench_memory_tab(rows, 1, &t));
	T_CHECK(mgpu_tab_col(&t, "Dtype") < 0, "a Dtype column without bf16 rows");
	mgpu_tab_free(&t);
	/* the plot: a series per dtype, named, and bar groups named */
	{
		size_t len = 0;
		FILE *fp = open_memstream(&s, &len);
		T_OK(mgpu_bench_plot_svg(fp, rows, 4, NULL));
		fclose(fp);
		T_CHECK(s && strstr(s, ">CPU ranks DDP, fp32</text>") &&
			strstr(s, ">CPU ranks DDP, bf16</text>") && strstr(s, ">2 DDP bf16</text>") &&
			strstr(s, ">1 fp32</text>"), "%s", s);
		free(s);
	}
	T_OK(mgpu_bench_trows_tab(rows, 4, &t));
	s = render(&t, MGPU_FMT_TSV);
	mgpu_tab_free(&t);
	T_CHECK(s && strstr(s, "\tdtype\n") && strstr(s, "\tbf16\n"), "%s", s);
	T_OK(mgpu_tab_parse_tsv(&t, s ? s : "", s ? strlen(s) : 0, "d.tsv"));
	free(s);
	T_OK(mgpu_bench_trows_from_tab(&t, "d.tsv", &back, &n));
	T_CHECK(n == 4 && back && strcmp(back[1].dtype, "bf16") == 0 &&
		strcmp(back[2].dtype, "fp32") == 0 &&
		strcmp(back[3].config, "2 CPU ranks (DDP, bf16)") == 0, "round trip");
	free(back);
	mgpu_tab_free(&t);
}

/* A table saved before the dtype column: each row the dtype its command
 * asked for, fp32 where it asked for none. */
static void test_dtype_old_table(void)
{
	static const char old[] =
		"config\tkind\tdevices\tsamples_per_s\tcommand\n"
		"1 CPU rank\tcpu\t1\t1000\tmgpu-train -q --cpu-ranks 1\n"
		"2 CPU ranks (DDP)\tcpu\t2\t900\tmgpu-train -q --cpu-ranks 2 --dtype=bf16\n"
		"1 device\tgpu\t1\t9000\tmgpu-train --gpus 0 --dtype 'bf16'\n";
	struct mgpu_bench_trow *rows = NULL;
	struct mgpu_tab t;
	int n = 0;

	T_OK(mgpu_tab_parse_tsv(&t, old, sizeof old - 1, "old.tsv"));
	T_OK(mgpu_bench_trows_from_tab(&t, "old.tsv", &rows, &n));
	T_CHECK(n == 3 && rows && strcmp(rows[0].dtype, "fp32") == 0 &&
		strcmp(rows[1].dtype, "bf16") == 0 && strcmp(rows[2].dtype, "bf16") == 0,
		"dtypes '%s' '%s' '%s'", n ? rows[0].dtype : "", n > 1 ? rows[1].dtype : "",
		n > 2 ? rows[2].dtype : "");
	free(rows);
	mgpu_tab_free(&t);
}

int main(void)
{
	T_RUN(test_median_spread);
	T_RUN(test_busbw_factor);
	T_RUN(test_sizes);
	T_RUN(test_tolerance);
	T_RUN(test_run_parse);
	T_RUN(test_speedup_efficiency);
	T_RUN(test_tables);
	T_RUN(test_tab_errors);
	T_RUN(test_compare);
	T_RUN(test_quote_split);
	T_RUN(test_gpumon_acc);
	T_RUN(test_gpumon_thread);
	T_RUN(test_gpumon_columns);
	T_RUN(test_svg);
	T_RUN(test_svg_legend);
	T_RUN(test_spawn);
	T_RUN(test_spawn_bg);
	T_RUN(test_spawn_bg_stop);
	T_RUN(test_node_rows);
	T_RUN(test_allreduce_check);
	T_RUN(test_lm_peaks);
	T_RUN(test_lm_model);
	T_RUN(test_lm_padded_logits);
	T_RUN(test_lm_rows);
	T_RUN(test_lm_attn_scratch);
	T_RUN(test_lm_bf16_operands);
	T_RUN(test_dtype_labels);
	T_RUN(test_dtype_rows);
	T_RUN(test_dtype_old_table);
	return T_DONE();
}
