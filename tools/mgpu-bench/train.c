/*
 * train.c - `mgpu-bench train`: run mgpu-train (the binary beside this one)
 * over device counts, node counts, modes and sync backends, R times each,
 * and print the speedup and memory tables; --save, --plot, --compare.
 *
 * This file parses the options and says what happened; the sweep's rows
 * and commands (bench/plan.h), running them here or over network
 * namespaces (bench/runner.h), their arithmetic (bench/sweep.h) and the
 * report and plot (bench/report.h, bench/svg.h) live in lib/bench.
 * With --dtypes every configuration runs once per dtype, the dtypes of one
 * configuration one after the other. A run that fails or times out makes
 * its row an error row and the exit status 1, never a hang.
 */
#include <stdio.h>  /* snprintf */
#include <stdlib.h> /* atexit, free */
#include <string.h> /* memset, strcmp, strspn */

#include "../common.h"     /* die, usage_error, mgpu_interrupted */
#include "bench.h"         /* struct common */
#include "bench/netns.h"   /* MGPU_NETNS_MAX_HOSTS */
#include "bench/plan.h"    /* mgpu_bench_plan_rows, mgpu_bench_plan_argv */
#include "bench/report.h"  /* mgpu_bench_report_md, mgpu_bench_trows_read */
#include "bench/runner.h"  /* mgpu_bench_measure */
#include "bench/stats.h"   /* mgpu_bench_tolerance */
#include "bench/svg.h"     /* mgpu_bench_plot_svg */
#include "bench/sweep.h"   /* struct mgpu_bench_trow */
#include "core/cli.h"      /* mgpu_cli_choice */
#include "core/err.h"      /* mgpu_errmsg */
#include "core/io.h"       /* mgpu_afile */
#include "ops/ops.h"        /* mgpu_prec_words, MGPU_PREC_FP16 */
#include "train/sync.h"     /* mgpu_sync_words, MGPU_SYNC_MPI, MGPU_SYNC_KINDS */

#define MAX_ROWS 256

static const char help[] =
	"usage: mgpu-bench train [options] [-- MGPU-TRAIN-OPTIONS...]\n"
	"Run mgpu-train over device counts, modes and sync backends; print the speedup\n"
	"and peak-memory tables (Markdown on a terminal, else TSV; --json: JSON Lines).\n"
	"The workload defaults to --epochs 1 --max-steps 200 --batch-size 64 (per device)\n"
	"on mgpu-train's default data and model; options after -- are added.\n"
	"--nodes runs nodes as network namespaces on this machine (as root).\n";

static const char *const mode_words[] = { "ddp", "dp", NULL };
static const char *const workload[] = { "--epochs", "1", "--max-steps", "200",
					"--batch-size", "64" };

struct topts {
	struct common co;
	int cpu[64], ncpu, gpu[64], ngpu;
	int nodes[MGPU_NETNS_MAX_HOSTS], nnodes;
	const char *link_rate;     /* NULL: none */
	double link_delay_ms;      /* 0: none */
	int modes[2], nmodes, syncs[MGPU_SYNC_KINDS], nsyncs; /* enum mgpu_sync_kind */
	int dtypes[MGPU_PREC_FP16 + 1], ndtypes; /* enum mgpu_prec; 0: the workload's own */
	int repeat, warmup, timeout_s; /* repeat, warmup: -1 when not given */
	const char *plot, *save, *compare;
	double tol;
	char **extra;
	int nextra;
	char train_bin[4096];
};

/* A comma list of words into indexes; no repeats. */
static int word_list(const char *opt, const char *arg, const char *const *words, int *out,
		     int max)
{
	char buf[256], *p, *save = NULL;
	int n = 0, i;

	if (strlen(arg) >= sizeof buf || !arg[0])
		usage_error("%s: bad list '%s'", opt, arg);
	snprintf(buf, sizeof buf, "%s", arg);
	for (p = strtok_r(buf, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
		if (n == max)
			usage_error("%s: too many values in '%s'", opt, arg);
		if (mgpu_cli_choice(opt, p, words, &out[n]) < 0)
			usage_error("%s", mgpu_errmsg());
		for (i = 0; i < n; i++)
			if (out[i] == out[n])
				usage_error("%s: '%s' given twice", opt, p);
		n++;
	}
	if (n == 0) /* "," would mean: the default, silently */
		usage_error("%s: no value in '%s'", opt, arg);
	return n;
}

/* The list options: the helpers above exit 2 naming the option. */
static int set_cpu(void *t, const char *arg)
{
	struct topts *o = t;

	o->ncpu = bench_list("--cpu-ranks", arg, o->cpu, 64, 1, 64);
	return 0;
}

static int set_devices(void *t, const char *arg)
{
	struct topts *o = t;

	o->ngpu = bench_list("--devices", arg, o->gpu, 64, 1, 64);
	return 0;
}

static int set_modes(void *t, const char *arg)
{
	struct topts *o = t;

	o->nmodes = word_list("--modes", arg, mode_words, o->modes, 2);
	return 0;
}

static int set_syncs(void *t, const char *arg)
{
	struct topts *o = t;

	o->nsyncs = word_list("--sync-backends", arg, mgpu_sync_words, o->syncs, MGPU_SYNC_KINDS);
	return 0;
}

static int set_dtypes(void *t, const char *arg)
{
	struct topts *o = t;

	o->ndtypes = word_list("--dtypes", arg, mgpu_prec_words, o->dtypes, MGPU_PREC_FP16 + 1);
	return 0;
}

static int set_nodes(void *t, const char *arg)
{
	struct topts *o = t;

	o->nnodes = bench_list("--nodes", arg, o->nodes, MGPU_NETNS_MAX_HOSTS, 1,
			       MGPU_NETNS_MAX_HOSTS);
	return 0;
}

/* A rate as tc takes it: digits, then bit, kbit, mbit or gbit. */
static int set_rate(void *t, const char *arg)
{
	static const char *const units[] = { "bit", "kbit", "mbit", "gbit", NULL };
	const char *u = arg;
	int i;

	while (*u >= '0' && *u <= '9')
		u++;
	for (i = 0; units[i] && strcmp(u, units[i]) != 0; i++)
		;
	if (u == arg || !units[i] || strlen(arg) > 24 || strspn(arg, "0") == (size_t)(u - arg))
		usage_error("--link-rate: '%s' is not a rate such as 100mbit (bit, kbit, mbit, "
			    "gbit)", arg);
	((struct topts *)t)->link_rate = arg;
	return 0;
}

static int set_tol(void *t, const char *arg)
{
	return mgpu_bench_tolerance("--tolerance", arg, &((struct topts *)t)->tol);
}

/* The list options as arguments again, for --print-config and -v. */
static void show_cpu(const void *t, char *buf, size_t len)
{
	const struct topts *o = t;
	bench_show_list(buf, len, o->cpu, o->ncpu, NULL);
}

static void show_devices(const void *t, char *buf, size_t len)
{
	const struct topts *o = t;
	bench_show_list(buf, len, o->gpu, o->ngpu, NULL);
}

static void show_modes(const void *t, char *buf, size_t len)
{
	const struct topts *o = t;
	bench_show_list(buf, len, o->modes, o->nmodes, mode_words);
}

static void show_syncs(const void *t, char *buf, size_t len)
{
	const struct topts *o = t;
	bench_show_list(buf, len, o->syncs, o->nsyncs, mgpu_sync_words);
}

static void show_dtypes(const void *t, char *buf, size_t len)
{
	const struct topts *o = t;
	bench_show_list(buf, len, o->dtypes, o->ndtypes, mgpu_prec_words);
}

static void show_nodes(const void *t, char *buf, size_t len)
{
	const struct topts *o = t;
	bench_show_list(buf, len, o->nodes, o->nnodes, NULL);
}

static void show_rate(const void *t, char *buf, size_t len)
{
	const struct topts *o = t;
	snprintf(buf, len, "%s", o->link_rate ? o->link_rate : "");
}

static void show_tol(const void *t, char *buf, size_t len)
{
	char v[32];

	mgpu_opt_exact_num(v, sizeof v, ((const struct topts *)t)->tol * 100, 0);
	snprintf(buf, len, "%s%%", v);
}

#define O struct topts
static const struct mgpu_opt options[] = {
	MGPU_OPT_HEAD("configurations"),
	MGPU_OPT_CALL("cpu-ranks", 0, set_cpu, show_cpu, "LIST", "CPU rank counts, e.g. 1,2",
		      "1,2 unless --devices", 0),
	MGPU_OPT_CALL("devices", 0, set_devices, show_devices, "LIST",
		      "GPU counts, e.g. 1,2,4,8 (GPUs 0..N-1)", "", 0),
	MGPU_OPT_CALL("modes", 0, set_modes, show_modes, "LIST", "ddp,dp", "ddp,dp", 0),
	MGPU_OPT_CALL("sync-backends", 0, set_syncs, show_syncs, "LIST",
		      "auto,cpu,nccl,mpi (mpi: over --nodes, by mpirun)", "auto", 0),
	MGPU_OPT_CALL("dtypes", 0, set_dtypes, show_dtypes, "LIST",
		      "fp32,bf16,fp16: each configuration once per dtype (mgpu-train --dtype)",
		      "the workload's", 0),
	MGPU_OPT_CALL("nodes", 0, set_nodes, show_nodes, "LIST",
		      "node counts, e.g. 1,2: each node a network namespace (root)", "1", 0),
	MGPU_OPT_CALL("link-rate", 0, set_rate, show_rate, "RATE",
		      "limit each node's link, e.g. 100mbit (tc tbf)", "", 0),
	MGPU_OPT_ROW(MGPU_OPT_DOUBLE, "link-delay", 0, O, link_delay_ms, 0, 10000, "MS",
		     "add a delay to each node's link (tc netem)", 0),
	MGPU_OPT_HEAD("runs"),
	MGPU_OPT_ROWD(MGPU_OPT_INT, "repeat", 0, O, repeat, 1, MGPU_BENCH_MAX_REPEAT, "N",
		      "runs per configuration; median and spread", "3", MGPU_OPT_UNSETNEG),
	MGPU_OPT_ROWD(MGPU_OPT_INT, "warmup-steps", 0, O, warmup, 0, 1000000, "N",
		      "steps of each run left out of the throughput", "20", MGPU_OPT_UNSETNEG),
	MGPU_OPT_ROW(MGPU_OPT_INT, "timeout", 0, O, timeout_s, 1, 86400, "SECONDS",
		     "a run still going after this fails", 0),
	MGPU_OPT_HEAD("results"),
	MGPU_OPT_ROW(MGPU_OPT_STR, "plot", 0, O, plot, 0, 0, "FILE.svg",
		     "speedup and peak-memory plot", MGPU_OPT_NODEF),
	MGPU_OPT_ROW(MGPU_OPT_STR, "save", 0, O, save, 0, 0, "FILE.tsv",
		     "the results as TSV (for --compare)", MGPU_OPT_NODEF),
	MGPU_OPT_ROW(MGPU_OPT_STR, "compare", 0, O, compare, 0, 0, "OLD.tsv",
		     "re-run OLD's configurations; exit 1 naming each row that regressed by "
		     "more than --tolerance", MGPU_OPT_NODEF),
	MGPU_OPT_CALL("tolerance", 0, set_tol, show_tol, "PCT", "allowed regression", "10%", 0),
	MGPU_OPT_CONFIG(O, co.opts),
	MGPU_OPT_COMMON(O, co.opts),
	MGPU_OPT_TABLE_END,
};
#undef O

static int max_nodes(const struct topts *o)
{
	int i, m = 1;

	for (i = 0; i < o->nnodes; i++)
		m = o->nodes[i] > m ? o->nodes[i] : m;
	return m;
}

/* What --nodes, the link options and sync backend mpi need of each other. */
static void check_nodes(struct topts *o)
{
	int i, mpi = 0;

	for (i = 0; i < o->nsyncs; i++)
		mpi |= o->syncs[i] == MGPU_SYNC_MPI;
	if (!o->nnodes)
		o->nodes[0] = 1, o->nnodes = 1;
	if (max_nodes(o) > 1 && o->ngpu)
		usage_error("--nodes runs CPU ranks (namespaces on one machine would share its "
			    "GPUs): use --cpu-ranks");
	if (max_nodes(o) == 1 && (o->link_rate || o->link_delay_ms > 0))
		usage_error("--link-rate and --link-delay shape the links between nodes: give "
			    "--nodes with a count above 1");
	if (max_nodes(o) == 1 && mpi)
		usage_error("--sync-backends mpi runs mpirun over the nodes: give --nodes with a "
			    "count above 1");
}

static void parse(struct topts *o, int argc, char **argv)
{
	static struct topts def = { .timeout_s = 600 };
	const struct tool_cli cli = { options, help, &def, sizeof *o };
	int first;

	memset(o, 0, sizeof *o);
	o->repeat = o->warmup = -1;
	o->timeout_s = 600;
	o->tol = 0.10;
	first = common_parse(&cli, o, &o->co, argc, argv, 1);
	if (first < argc && strcmp(argv[first - 1], "--") != 0)
		usage_error("unexpected argument '%s' (mgpu-train options go after --)",
			    argv[first]);
	o->extra = argv + first;
	o->nextra = argc - first;
	if (o->compare && (o->ncpu || o->ngpu || o->nmodes || o->nsyncs || o->nextra ||
			   o->nnodes || o->link_rate || o->link_delay_ms > 0 || o->ndtypes))
		usage_error("--compare re-runs the configurations of its file: it takes no "
			    "--cpu-ranks, --devices, --nodes, --link-rate, --link-delay, --modes, "
			    "--sync-backends, --dtypes or workload");
	if (o->ndtypes && mgpu_bench_argv_dtype((const char *const *)o->extra))
		usage_error("--dtypes sets mgpu-train's --dtype of each run: give it, or --dtype "
			    "after --, not both");
	check_nodes(o);
	if (!o->ncpu && !o->ngpu) {
		o->cpu[0] = 1, o->cpu[1] = 2;
		o->ncpu = 2;
	}
	if (!o->nmodes)
		o->modes[0] = 0, o->modes[1] = 1, o->nmodes = 2;
	if (!o->nsyncs)
		o->syncs[0] = 0, o->nsyncs = 1;
	common_settings(&cli, o, &o->co, "mgpu-bench train");
}

/* The sweep of the options: their lists as words, and every run's words. */
static void plan_of(const struct topts *o, struct mgpu_bench_plan *p)
{
	int i;

	memset(p, 0, sizeof *p);
	p->train_bin = o->train_bin;
	p->workload = workload;
	p->nworkload = (int)(sizeof workload / sizeof workload[0]);
	p->extra = o->extra;
	p->nextra = o->nextra;
	p->cpu = o->cpu, p->ncpu = o->ncpu;
	p->gpu = o->gpu, p->ngpu = o->ngpu;
	p->nodes = o->nodes, p->nnodes = o->nnodes;
	p->link_rate = o->link_rate;
	p->link_delay_ms = o->link_delay_ms;
	for (i = 0; i < o->nmodes; i++)
		p->modes[p->nmodes++] = mode_words[o->modes[i]];
	for (i = 0; i < o->nsyncs; i++)
		p->syncs[p->nsyncs++] = mgpu_sync_words[o->syncs[i]];
	for (i = 0; i < o->ndtypes; i++)
		p->dtypes[p->ndtypes++] = mgpu_prec_words[o->dtypes[i]];
}

/* The runs of the sweep; the hosts of its node rows go when mgpu-bench does. */
static struct mgpu_bench_runner runner;

static void hosts_down(void)
{
	mgpu_bench_runner_close(&runner);
}

static void on_run(void *ctx, const struct mgpu_bench_trow *r, int k, int repeats,
		   double samples_per_s)
{
	(void)ctx;
	note("%s: run %d/%d: %.0f samples/s", r->config, k, repeats, samples_per_s);
}

static void runner_open(const struct topts *o, const struct mgpu_bench_trow *rows, int n)
{
	runner.train_bin = o->train_bin;
	runner.timeout_s = o->timeout_s;
	runner.stop = &mgpu_interrupted;
	runner.on_run = common_progress(&o->co) ? on_run : NULL;
	atexit(hosts_down);
	if (mgpu_bench_runner_hosts(&runner, rows, n) < 0)
		die_lib();
}

/* Run one configuration repeats times into r, and say once per sweep
 * what the runs left to say. */
static void measure(const struct topts *o, struct mgpu_bench_trow *r, char **args, int repeats)
{
	static int warned, short_said;
	struct mgpu_bench_said said;

	if (mgpu_bench_measure(&runner, r, args, repeats, &said) < 0)
		die_lib();
	if (said.unsampled[0] && !warned++ && !o->co.quiet)
		warn("GPU utilisation not sampled (gpu_util_pct NA): %s", said.unsampled);
	if (said.warmup_asked && !short_said++ && !o->co.quiet)
		warn("%s: only %lld steps ran, fewer than the %d warm-up steps: the first %d of "
		     "each run left out instead (raise --max-steps or the data for more)",
		     r->config, (long long)r->steps, said.warmup_asked, r->warmup_steps);
}

static void sweep(const struct topts *o, const struct mgpu_bench_plan *p,
		  struct mgpu_bench_trow *rows, int n)
{
	struct mgpu_bench_argv c;
	int i;

	for (i = 0; i < n && !mgpu_interrupted; i++) {
		rows[i].warmup_steps = o->warmup >= 0 ? o->warmup : 20;
		if (mgpu_bench_plan_argv(p, &rows[i], &c) < 0)
			usage_error("%s", mgpu_errmsg());
		measure(o, &rows[i], c.args, o->repeat > 0 ? o->repeat : 3);
	}
}

/* --compare: the old file's rows, re-run with their own commands. */
static void rerun(const struct topts *o, const struct mgpu_bench_trow *old, int n,
		  struct mgpu_bench_trow *rows)
{
	struct mgpu_bench_argv c;
	int i;

	for (i = 0; i < n && !mgpu_interrupted; i++) {
		rows[i] = old[i];
		rows[i].error[0] = '\0';
		rows[i].warmup_steps = o->warmup >= 0 ? o->warmup : old[i].warmup_steps;
		if (mgpu_bench_plan_rerun_argv(o->train_bin, &old[i], o->compare, &c) < 0)
			die_lib();
		measure(o, &rows[i], c.args, o->repeat > 0 ? o->repeat : old[i].repeats);
	}
}

static int any_ok(const struct mgpu_bench_trow *rows, int n)
{
	int i;

	for (i = 0; i < n; i++)
		if (!rows[i].error[0])
			return 1;
	return 0;
}

static void outputs(struct topts *o, const struct mgpu_bench_trow *rows, int n)
{
	struct mgpu_afile af;
	struct mgpu_tab t;
	char title[800];
	FILE *fp = common_open(&o->co);

	if (mgpu_bench_trows_tab(rows, n, &t) < 0)
		common_fail(&o->co);
	if (o->co.fmt == MGPU_FMT_MD) {
		if (mgpu_bench_report_md(fp, rows, n) < 0)
			common_fail(&o->co);
	} else if (mgpu_tab_write(&t, fp, o->co.fmt) < 0) {
		common_fail(&o->co);
	}
	common_close(&o->co);
	if (o->save && (mgpu_afile_open(&af, o->save) < 0 ||
			mgpu_tab_write(&t, af.fp, MGPU_FMT_TSV) < 0 || mgpu_afile_commit(&af) < 0)) {
		mgpu_afile_abort(&af);
		die_lib();
	}
	mgpu_tab_free(&t);
	if (o->plot && !any_ok(rows, n)) {
		error_msg("--plot: no configuration succeeded; '%s' not written", o->plot);
		return;
	}
	if (o->plot)
		mgpu_bench_plot_title(rows, n, title, sizeof title);
	if (o->plot && (mgpu_afile_open(&af, o->plot) < 0 ||
			mgpu_bench_plot_svg(af.fp, rows, n, title) < 0 ||
			mgpu_afile_commit(&af) < 0)) {
		mgpu_afile_abort(&af);
		die_lib();
	}
}

/* Error and regression lines on stderr; the exit status. */
static int verdict(const struct topts *o, const struct mgpu_bench_trow *old, int nold,
		   const struct mgpu_bench_trow *rows, int n)
{
	static struct mgpu_bench_regression reg[2 * MAX_ROWS];
	int i, nreg = 0, nerr = 0;

	for (i = 0; i < n; i++)
		if (rows[i].error[0] && ++nerr)
			error_msg("%s: %s", rows[i].config, rows[i].error);
	if (old && old[0].blas_core[0] && strcmp(old[0].blas_core, bench_blas_core()) != 0)
		warn("'%s' was measured with OpenBLAS %s kernels, this run uses %s: throughput "
		     "differences may come from that (OPENBLAS_CORETYPE)", o->compare,
		     old[0].blas_core, bench_blas_core());
	if (old) {
		mgpu_bench_compare(old, nold, rows, n, o->tol, reg, 2 * MAX_ROWS, &nreg);
		for (i = 0; i < nreg && i < 2 * MAX_ROWS; i++)
			if (!strstr(reg[i].what, "failed: "))
				note("regression: %s: %s", reg[i].config, reg[i].what);
	}
	if (!o->co.quiet && !nerr && !nreg)
		note("%d configuration%s measured%s", n, n > 1 ? "s" : "",
		     old ? ", no regression beyond the tolerance" : "");
	return nerr || nreg ? 1 : 0;
}

int bench_train(int argc, char **argv)
{
	static struct mgpu_bench_trow rows[MAX_ROWS];
	struct mgpu_bench_trow *old = NULL;
	struct mgpu_bench_plan p;
	struct topts o;
	int n, nold = 0, rc;

	parse(&o, argc, argv);
	self_dir(o.train_bin, sizeof o.train_bin - 16);
	strcat(o.train_bin, "/mgpu-train");
	if (o.compare) {
		if (mgpu_bench_trows_read(o.compare, &old, &nold) < 0)
			die_lib();
		if (nold > MAX_ROWS)
			die("'%s': more than %d rows", o.compare, MAX_ROWS);
		n = nold;
		runner_open(&o, old, nold);
		rerun(&o, old, n, rows);
	} else {
		plan_of(&o, &p);
		if (mgpu_bench_plan_rows(&p, rows, MAX_ROWS, &n) < 0)
			usage_error("%s", mgpu_errmsg());
		if (n == 0) /* a sweep measuring nothing is a sweep asked wrongly */
			usage_error("no configuration to measure: --modes dp runs in one process, "
				    "so it cannot span --nodes above 1, and --sync-backends mpi needs "
				    "them");
		runner_open(&o, rows, n);
		sweep(&o, &p, rows, n);
	}
	hosts_down();
	exit_if_interrupted(); /* its runs stopped and reaped, nothing written */
	mgpu_bench_trows_finish(rows, n);
	outputs(&o, rows, n);
	rc = verdict(&o, old, nold, rows, n);
	free(old);
	return rc;
}
