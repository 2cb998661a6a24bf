/*
 * train.c - `mgpu-bench train`: run mgpu-train (the binary beside this one)
 * over device counts, node counts, modes and sync backends, R times each,
 * and print the speedup and memory tables; --save, --plot, --compare.
 *
 * Each run is `mgpu-train -q --json --log-every 1 DEVICES [--mode M]
 * [--sync-backend S] WORKLOAD [--dtype D]`, its exact command kept in the
 * results; with --dtypes every configuration runs once per dtype, the
 * dtypes of one configuration one after the other.
 * With --nodes, a row of k > 1 nodes runs on k network namespaces made
 * for the sweep (bench/netns.h, as root): one mgpu-train launcher per
 * host with --nnodes k --node-rank i (leaders over TCP), or for sync
 * backend mpi one mpirun on the first host reaching the others through a
 * remote shell into the namespaces. The command kept is node 0's
 * mgpu-train command without --node-rank; the nodes and link columns say
 * how it ran.
 * Throughput comes from the step records after the warm-up steps
 * (lib/bench/sweep.h); a run that fails or times out makes its row an
 * error row and the exit status 1, never a hang.
 */
#include <stdio.h>  /* printf, fprintf */
#include <stdlib.h> /* free */
#include <string.h> /* strcmp, strspn */
#include <unistd.h> /* getpid */

#include "../common.h"     /* die, usage_error, mgpu_interrupted */
#include "bench.h"         /* struct common */
#include "bench/gpumon.h"  /* mgpu_gpumon_start */
#include "bench/netns.h"   /* mgpu_netns_up, mgpu_netns_wrap */
#include "bench/lm.h"      /* mgpu_bench_lm_fill, mgpu_bench_peak_* */
#include "bench/spawn.h"   /* mgpu_spawn_capture */
#include "bench/stats.h"   /* mgpu_bench_tolerance */
#include "bench/svg.h"     /* mgpu_bench_plot_svg */
#include "bench/sweep.h"   /* struct mgpu_bench_trow */
#include "core/cli.h"      /* mgpu_cli_choice */
#include "core/err.h"      /* mgpu_errmsg */
#include "core/io.h"       /* mgpu_afile, mgpu_read_file */
#include "gpu/gpu.h"       /* mgpu_gpu_enumerate, mgpu_gpu_nvml_open */

#define MAX_ROWS 256
#define MAX_REPEAT 100
/* NVML's utilisation covers the last 1/6 to 1 s; sampling faster only
 * repeats it, slower misses the short runs of a sweep. */
#define GPUMON_INTERVAL_MS 100
/* How long the other nodes may take to end after node 0 did. */
#define NODES_GRACE_MS 30000

static const char help[] =
	"usage: mgpu-bench train [options] [-- MGPU-TRAIN-OPTIONS...]\n"
	"Run mgpu-train over device counts, modes and sync backends; print the speedup\n"
	"and peak-memory tables (Markdown on a terminal, else TSV; --json: JSON Lines).\n"
	"The workload defaults to --epochs 1 --max-steps 200 --batch-size 64 (per device)\n"
	"on mgpu-train's default data and model; options after -- are added.\n"
	"--nodes runs nodes as network namespaces on this machine (as root).\n";

static const char *const mode_words[] = { "ddp", "dp", NULL };
static const char *const sync_words[] = { "auto", "cpu", "nccl", "mpi", NULL };
static const char *const dtype_words[] = { "fp32", "bf16", "fp16", NULL };
#define SYNC_MPI 3
static const char *const workload[] = { "--epochs", "1", "--max-steps", "200",
					"--batch-size", "64" };

struct topts {
	struct common co;
	int cpu[64], ncpu, gpu[64], ngpu;
	int nodes[MGPU_NETNS_MAX_HOSTS], nnodes;
	const char *link_rate;     /* NULL: none */
	double link_delay_ms;      /* 0: none */
	int modes[2], nmodes, syncs[4], nsyncs;
	int dtypes[3], ndtypes;    /* ndtypes 0: the workload's own dtype */
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

	o->nsyncs = word_list("--sync-backends", arg, sync_words, o->syncs, 4);
	return 0;
}

static int set_dtypes(void *t, const char *arg)
{
	struct topts *o = t;

	o->ndtypes = word_list("--dtypes", arg, dtype_words, o->dtypes, 3);
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
	bench_show_list(buf, len, o->syncs, o->nsyncs, sync_words);
}

static void show_dtypes(const void *t, char *buf, size_t len)
{
	const struct topts *o = t;
	bench_show_list(buf, len, o->dtypes, o->ndtypes, dtype_words);
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
	MGPU_OPT_ROWD(MGPU_OPT_INT, "repeat", 0, O, repeat, 1, MAX_REPEAT, "N",
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
		mpi |= o->syncs[i] == SYNC_MPI;
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

/* argv of one run into store (words) and args (pointers). */
struct cmd {
	char store[8][64];
	char *args[256];
	int n;
};

static void add(struct cmd *c, const char *w)
{
	if (c->n >= 254)
		usage_error("too many mgpu-train options");
	c->args[c->n++] = (char *)(uintptr_t)w;
	c->args[c->n] = NULL;
}

static void build(const struct topts *o, const struct mgpu_bench_trow *r, struct cmd *c)
{
	int k = 0, i, per = r->devices / (r->nodes > 1 ? r->nodes : 1);
	size_t len = 0;

	c->n = 0;
	add(c, o->train_bin);
	add(c, "-q");
	add(c, "--json");
	add(c, "--log-every");
	add(c, "1");
	add(c, strcmp(r->kind, "gpu") == 0 ? "--gpus" : "--cpu-ranks");
	if (strcmp(r->kind, "gpu") == 0) {
		for (i = 0; i < per && len + 4 < sizeof c->store[k]; i++)
			len += (size_t)snprintf(c->store[k] + len, sizeof c->store[k] - len, "%s%d",
						i ? "," : "", i);
	} else {
		snprintf(c->store[k], sizeof c->store[k], "%d", per);
	}
	add(c, c->store[k++]);
	if (r->nodes > 1 && strcmp(r->sync, "mpi") != 0) { /* mpirun places its ranks */
		add(c, "--nnodes");
		snprintf(c->store[k], sizeof c->store[k], "%d", r->nodes);
		add(c, c->store[k++]);
	}
	if (r->devices > 1) {
		add(c, "--mode");
		add(c, r->mode);
		if (r->sync[0] && strcmp(r->sync, "auto") != 0) {
			add(c, "--sync-backend");
			add(c, r->sync);
		}
	}
	for (i = 0; i < 6; i++)
		add(c, workload[i]);
	if (o->ndtypes) { /* never in extra too: parse refused that */
		add(c, "--dtype");
		add(c, r->dtype);
	}
	for (i = 0; i < o->nextra; i++)
		add(c, o->extra[i]);
}

/* Row r: kind, per devices on each of nodes, mode m, sync backend s and
 * (with --dtypes) dtype t, labelled. */
static void plan_one(const struct topts *o, struct mgpu_bench_trow *r, int kind, int per,
		     int nodes, int m, int s, int t)
{
	int devices = per * nodes;

	memset(r, 0, sizeof *r);
	snprintf(r->kind, sizeof r->kind, "%s", kind ? "gpu" : "cpu");
	r->devices = devices;
	r->nodes = nodes;
	if (nodes > 1) {
		snprintf(r->link_rate, sizeof r->link_rate, "%s", o->link_rate ? o->link_rate : "");
		r->link_delay_ms = o->link_delay_ms;
	}
	if (devices > 1) {
		snprintf(r->mode, sizeof r->mode, "%s", mode_words[o->modes[m]]);
		snprintf(r->sync, sizeof r->sync, "%s", o->syncs[s] ? sync_words[o->syncs[s]] : "");
	}
	if (o->ndtypes)
		snprintf(r->dtype, sizeof r->dtype, "%s", dtype_words[o->dtypes[t]]);
	mgpu_bench_label(r, (o->nsyncs > 1 ? MGPU_BENCH_LABEL_SYNC : 0) |
			 (o->ndtypes ? MGPU_BENCH_LABEL_DTYPE : 0));
}

/* The rows of one configuration, one per dtype of --dtypes (one row
 * without it), unless the combination does not exist: dp runs in one
 * process (one node), mpi runs over several nodes. */
static void plan_row(const struct topts *o, struct mgpu_bench_trow *rows, int *n, int kind,
		     int per, int nodes, int m, int s)
{
	int t;

	if (per * nodes > 1 && ((nodes > 1 && o->modes[m] == 1) ||
				(nodes == 1 && o->syncs[s] == SYNC_MPI)))
		return;
	for (t = 0; t < (o->ndtypes ? o->ndtypes : 1); t++) {
		if (*n >= MAX_ROWS)
			usage_error("more than %d configurations", MAX_ROWS);
		plan_one(o, &rows[(*n)++], kind, per, nodes, m, s, t);
	}
}

/* The configurations of the sweep, in table order: devices per node, then
 * nodes, modes, sync backends and dtypes (the dtypes of one configuration
 * side by side, measured one after the other). */
static int plan(const struct topts *o, struct mgpu_bench_trow *rows)
{
	int n = 0, kind, i, k, m, s, d;

	for (kind = 0; kind < 2; kind++) {
		const int *list = kind ? o->gpu : o->cpu;
		int nl = kind ? o->ngpu : o->ncpu;
		for (i = 0; i < nl; i++)
			for (k = 0; k < o->nnodes; k++) {
				d = list[i] * o->nodes[k];
				for (m = 0; m < (d > 1 ? o->nmodes : 1); m++)
					for (s = 0; s < (d > 1 ? o->nsyncs : 1); s++)
						plan_row(o, rows, &n, kind, list[i], o->nodes[k], m, s);
			}
	}
	return n;
}

/* The hosts of the node rows, made once for the sweep. */
static struct mgpu_netns hosts;
static int hosts_made;
static char mpirun_path[4096]; /* found when a row needs it */

static void hosts_down(void)
{
	if (hosts_made)
		mgpu_netns_down(&hosts);
	hosts_made = 0;
}

/* Hosts for the largest node count of rows, their links shaped as the
 * first node row says (every node row of a sweep has the same links). */
static void hosts_up(const struct mgpu_bench_trow *rows, int n)
{
	const struct mgpu_bench_trow *shape = NULL;
	int i, most = 1;

	for (i = 0; i < n; i++)
		if (rows[i].nodes > most) {
			most = rows[i].nodes;
			shape = shape ? shape : &rows[i];
		}
	if (most == 1)
		return;
	for (i = 0; i < n; i++) /* before any run: not in the middle of the sweep */
		if (rows[i].nodes > 1 && strcmp(rows[i].sync, "mpi") == 0 && !mpirun_path[0] &&
		    mgpu_netns_which("mpirun", mpirun_path, sizeof mpirun_path) < 0)
			die("--sync-backends mpi: %s (Open MPI's openmpi-bin)", mgpu_errmsg());
	if (mgpu_netns_up(&hosts, most) < 0)
		die("--nodes %d runs each node in a network namespace: %s", most, mgpu_errmsg());
	hosts_made = 1;
	atexit(hosts_down);
	if (mgpu_netns_shape(&hosts, shape->link_rate[0] ? shape->link_rate : NULL,
			     shape->link_delay_ms) < 0)
		die("%s: %s", shape->link_delay_ms > 0 ? "--link-delay" : "--link-rate",
		    mgpu_errmsg());
}

/* argv with two more words (and the NULL) into out. */
static void with2(char **args, const char *a, const char *b, char **out, int max)
{
	int n = 0;

	for (; args[n]; n++) {
		if (n + 3 >= max)
			die("mgpu-train command too long");
		out[n] = args[n];
	}
	out[n++] = (char *)(uintptr_t)a;
	out[n++] = (char *)(uintptr_t)b;
	out[n] = NULL;
}

/* One launcher per node on hosts 1..nodes; node 0's output in res, and a
 * failure of another node when node 0 itself did not fail. */
static int run_launchers(const struct topts *o, const struct mgpu_bench_trow *r, char **args,
			 struct mgpu_spawn_result *res)
{
	static struct mgpu_netns_cmd cmd[MGPU_NETNS_MAX_HOSTS];
	static struct mgpu_spawn_bg bg[MGPU_NETNS_MAX_HOSTS];
	static unsigned job;
	struct mgpu_spawn_result other;
	char addr[32], envs[3][96], *env[4], ranks[MGPU_NETNS_MAX_HOSTS][12], *argv[300];
	int k, rc;

	mgpu_netns_addr(1, addr, sizeof addr);
	snprintf(envs[0], sizeof envs[0], "MASTER_ADDR=%s", addr);
	snprintf(envs[1], sizeof envs[1], "MASTER_PORT=29500");
	/* a launcher left over from an earlier run can never join this one */
	snprintf(envs[2], sizeof envs[2], "MGPU_JOB_TOKEN=mgpu-bench-%d-%u", (int)getpid(), ++job);
	env[0] = envs[0], env[1] = envs[1], env[2] = envs[2], env[3] = NULL;
	for (k = r->nodes - 1; k >= 0; k--) {
		snprintf(ranks[k], sizeof ranks[k], "%d", k);
		with2(args, "--node-rank", ranks[k], argv, 300);
		if (mgpu_netns_wrap(&hosts, k + 1, env, argv, &cmd[k]) < 0)
			die_lib();
		if (k > 0 && mgpu_spawn_bg_start(cmd[k].argv, &bg[k]) < 0)
			die_lib();
	}
	rc = mgpu_spawn_capture(cmd[0].argv, 1000 * o->timeout_s, &mgpu_interrupted, res);
	for (k = 1; k < r->nodes; k++) {
		if (mgpu_spawn_bg_wait(&bg[k], NODES_GRACE_MS, &mgpu_interrupted, &other) < 0)
			die_lib();
		free(other.out);
		if (rc == 0 && res->exited && res->status == 0 && !res->timed_out &&
		    (!other.exited || other.status != 0 || other.timed_out)) {
			other.out = res->out; /* node 0's metrics go with the verdict */
			*res = other;
		}
	}
	return rc;
}

/* mpirun on host 1, onto hosts 1..nodes through the namespaces' remote
 * shell; every rank gets OPENBLAS_NUM_THREADS=1 as the own launcher's do. */
static int run_mpirun(const struct topts *o, const struct mgpu_bench_trow *r, char **args,
		      struct mgpu_spawn_result *res)
{
	static struct mgpu_netns_cmd cmd;
	static char list[512], np[16], pfx[64];
	const char *rsh;
	char *env[] = { pfx, (char *)(uintptr_t)"OMPI_ALLOW_RUN_AS_ROOT=1",
			(char *)(uintptr_t)"OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1", NULL };
	char *argv[300], addr[32];
	int per = r->devices / r->nodes, k, n = 0;
	size_t len = 0;

	if (mgpu_netns_rsh(&hosts, &rsh) < 0)
		die_lib();
	snprintf(pfx, sizeof pfx, "NETNS_PFX=%s", hosts.prefix);
	for (k = 1; k <= r->nodes; k++) {
		mgpu_netns_addr(k, addr, sizeof addr);
		len += (size_t)snprintf(list + len, sizeof list - len, "%s%s:%d", k > 1 ? "," : "",
					addr, per);
	}
	snprintf(np, sizeof np, "%d", r->devices);
	{
		const char *head[] = { mpirun_path, "--host", list, "-np", np, "--bind-to", "none",
				       "--mca", "plm_rsh_agent", rsh, "-x", "NETNS_PFX",
				       "-x", "OPENBLAS_NUM_THREADS=1",
				       "--mca", "btl_tcp_if_include", mgpu_netns_net(),
				       "--mca", "oob_tcp_if_include", mgpu_netns_net(), NULL };
		for (k = 0; head[k]; k++)
			argv[n++] = (char *)(uintptr_t)head[k];
	}
	for (k = 0; args[k] && n < 299; k++)
		argv[n++] = args[k];
	argv[n] = NULL;
	if (mgpu_netns_wrap(&hosts, 1, env, argv, &cmd) < 0)
		die_lib();
	return mgpu_spawn_capture(cmd.argv, 1000 * o->timeout_s, &mgpu_interrupted, res);
}

/* One run of row r: here, or over the nodes. */
static int run_row(const struct topts *o, const struct mgpu_bench_trow *r, char **args,
		   struct mgpu_spawn_result *res)
{
	if (r->nodes <= 1)
		return mgpu_spawn_capture(args, 1000 * o->timeout_s, &mgpu_interrupted, res);
	return strcmp(r->sync, "mpi") == 0 ? run_mpirun(o, r, args, res) :
					     run_launchers(o, r, args, res);
}

static void run_failed(struct mgpu_bench_trow *r, const struct mgpu_spawn_result *res,
		       int timeout_s)
{
	char line[400];

	mgpu_spawn_err_line(res, line, sizeof line);
	if (res->timed_out)
		snprintf(r->error, sizeof r->error, "timed out after %d s", timeout_s);
	else if (line[0])
		snprintf(r->error, sizeof r->error, "%s", line);
	else
		snprintf(r->error, sizeof r->error, "mgpu-train %s %d", res->exited ?
			 "exited with status" : "was killed by signal", res->status);
}

/* NVML sampling of the GPUs a run uses, as `nvidia-smi dmon` would. */
struct sampler {
	struct mgpu_gpu_nvml_mon nv;
	struct mgpu_gpumon mon;
	int on;
};

/* Start sampling CUDA ordinals 0..n-1 (what `--gpus 0,..,n-1` uses);
 * when that cannot be, s->on stays 0 and why says so. */
static void sampler_start(struct sampler *s, int n, char *why, size_t whylen)
{
	static struct mgpu_gpu_list list;
	static int listed;
	const char *uuids[MGPU_GPU_MAX];
	int i;

	memset(s, 0, sizeof *s);
	if (!listed && mgpu_gpu_enumerate(&list) < 0)
		list.nvisible = 0;
	listed = 1;
	if (n > list.nvisible || n > MGPU_GPU_MAX) {
		snprintf(why, whylen, "%d GPU%s visible to mgpu-bench", list.nvisible,
			 list.nvisible == 1 ? "" : "s");
		return;
	}
	for (i = 0; i < n; i++)
		uuids[i] = list.gpu[i].uuid;
	if (mgpu_gpu_nvml_open(&s->nv, uuids, n, why, whylen) < 0)
		return;
	if (mgpu_gpumon_start(&s->mon, n, GPUMON_INTERVAL_MS, mgpu_gpumon_read_nvml, &s->nv) < 0) {
		snprintf(why, whylen, "%s", mgpu_errmsg());
		mgpu_gpu_nvml_close(&s->nv);
		return;
	}
	s->on = 1;
}

/* Stop sampling and keep the figures in run (after its output is parsed). */
static void sampler_stop(struct sampler *s, struct mgpu_bench_run *run)
{
	int d;

	if (!s->on)
		return;
	mgpu_gpumon_stop(&s->mon);
	mgpu_gpu_nvml_close(&s->nv);
	run->ngpumon = s->mon.ndev;
	for (d = 0; d < s->mon.ndev; d++) {
		run->gpu_util_pct[d] = mgpu_gpumon_acc_util(&s->mon.acc[d]);
		run->gpu_mem_used_bytes[d] = mgpu_gpumon_acc_mem(&s->mon.acc[d]);
	}
	s->on = 0;
}

/* The peak of one device of r's kind: a CPU core of this host, or GPU 0
 * (a sweep uses GPUs 0..N-1) by its name, in the workload's dtype. */
static void device_peak(const struct mgpu_bench_trow *r, int bf16, struct mgpu_bench_peak *pk)
{
	static struct mgpu_gpu_list list;
	static int listed;

	if (strcmp(r->kind, "gpu") != 0) {
		mgpu_bench_peak_cpu_host(pk);
		return;
	}
	if (!listed && mgpu_gpu_enumerate(&list) < 0)
		list.nvisible = 0;
	listed = 1;
	if (list.nvisible < 1) {
		pk->flops = 0;
		snprintf(pk->how, sizeof pk->how, "no GPU visible to mgpu-bench");
		return;
	}
	mgpu_bench_peak_gpu(list.gpu[0].name, bf16, pk);
}

/* r's tokens/s, MFU and memory estimate when its command trains a gpt. */
static void fill_lm(struct mgpu_bench_trow *r, char *const *args)
{
	struct mgpu_bench_workload w;
	struct mgpu_bench_peak pk;

	memset(&w, 0, sizeof w);
	if (mgpu_bench_workload_parse((const char *const *)args, &w) < 0) /* mgpu-train says why */
		w.spec.kind = MGPU_MODEL_MLP;
	memset(&pk, 0, sizeof pk);
	if (w.spec.kind == MGPU_MODEL_GPT)
		device_peak(r, w.bf16, &pk);
	mgpu_bench_lm_fill(r, &w, &pk);
}

/* Run one configuration repeats times into r; a failure fills r->error. */
static void measure(const struct topts *o, struct mgpu_bench_trow *r, char **args, int repeats)
{
	static struct mgpu_bench_run runs[MAX_REPEAT];
	static int warned, short_said;
	struct mgpu_spawn_result res;
	struct sampler smp;
	char why[200] = "";
	const char *dtype;
	int k, gpu = strcmp(r->kind, "gpu") == 0, unsampled = 0, asked = r->warmup_steps;

	snprintf(r->blas_core, sizeof r->blas_core, "%s", bench_blas_core());
	r->blas_threads = bench_blas_threads();
	/* the dtype the command asks for (args may hold r->dtype itself) */
	dtype = mgpu_bench_argv_dtype((const char *const *)args);
	if (dtype != r->dtype)
		snprintf(r->dtype, sizeof r->dtype, "%s", dtype ? dtype : "fp32");
	if (mgpu_bench_quote_argv(args, r->command, sizeof r->command) < 0)
		die_lib();
	for (k = 0; k < repeats && !mgpu_interrupted; k++) {
		if (gpu) {
			sampler_start(&smp, r->devices, why, sizeof why);
			unsampled |= !smp.on;
		}
		if (run_row(o, r, args, &res) < 0)
			die_lib();
		if (!res.exited || res.status != 0 || res.timed_out)
			run_failed(r, &res, o->timeout_s);
		else if (mgpu_bench_run_parse(res.out, res.out_len, r->warmup_steps,
					      "mgpu-train output", &runs[k]) < 0)
			snprintf(r->error, sizeof r->error, "%s", mgpu_errmsg());
		if (gpu)
			sampler_stop(&smp, &runs[k]);
		free(res.out);
		if (r->error[0])
			break;
		if (common_progress(&o->co))
			note("%s: run %d/%d: %.0f samples/s", r->config, k + 1, repeats,
			     runs[k].samples_per_s);
	}
	/* said once, and only of a run that worked: a failed row says enough */
	if (unsampled && !r->error[0] && !warned++ && !o->co.quiet)
		warn("GPU utilisation not sampled (gpu_util_pct NA): %s", why);
	mgpu_bench_trow_fold(r, runs, r->error[0] ? 0 : k);
	/* small data: the warm-up was lowered to fit the run; said once */
	if (!r->error[0] && k > 0 && r->warmup_steps < asked && !short_said++ && !o->co.quiet)
		warn("%s: only %lld steps ran, fewer than the %d warm-up steps: the first %d of "
		     "each run left out instead (raise --max-steps or the data for more)",
		     r->config, (long long)r->steps, asked, r->warmup_steps);
	fill_lm(r, args);
	if (!r->mode[0] && !r->error[0] && k > 0)
		snprintf(r->mode, sizeof r->mode, "%s", runs[k - 1].mode);
}

static void sweep(const struct topts *o, struct mgpu_bench_trow *rows, int n)
{
	struct cmd c;
	int i;

	for (i = 0; i < n && !mgpu_interrupted; i++) {
		rows[i].warmup_steps = o->warmup >= 0 ? o->warmup : 20;
		build(o, &rows[i], &c);
		measure(o, &rows[i], c.args, o->repeat > 0 ? o->repeat : 3);
	}
}

/* --compare: the old file's rows, re-run with their own commands. */
static int load_old(const char *path, struct mgpu_bench_trow **rows, int *n)
{
	struct mgpu_tab t;
	unsigned char *text;
	size_t len;
	int rc;

	if (mgpu_read_file(path, &text, &len) < 0)
		die_lib();
	rc = mgpu_tab_parse_tsv(&t, (const char *)text, len, path);
	free(text);
	if (rc < 0 || mgpu_bench_trows_from_tab(&t, path, rows, n) < 0)
		die_lib();
	mgpu_tab_free(&t);
	if (*n > MAX_ROWS)
		die("'%s': more than %d rows", path, MAX_ROWS);
	return 0;
}

static void rerun(const struct topts *o, const struct mgpu_bench_trow *old, int n,
		  struct mgpu_bench_trow *rows)
{
	char cmd[MGPU_BENCH_CMD], *args[256];
	int i, argc;

	for (i = 0; i < n && !mgpu_interrupted; i++) {
		rows[i] = old[i];
		rows[i].error[0] = '\0';
		rows[i].warmup_steps = o->warmup >= 0 ? o->warmup : old[i].warmup_steps;
		snprintf(cmd, sizeof cmd, "%s", old[i].command);
		if (mgpu_bench_split_command(cmd, args, 256, &argc) < 0 || argc < 2)
			die("'%s': %s: bad command '%s'", o->compare, old[i].config, old[i].command);
		args[0] = (char *)(uintptr_t)o->train_bin;
		measure(o, &rows[i], args, o->repeat > 0 ? o->repeat : old[i].repeats);
	}
}

/* Whether an earlier row of r's kind had r's peak line. */
static int peak_said(const struct mgpu_bench_trow *rows, const struct mgpu_bench_trow *r)
{
	for (; rows < r; rows++)
		if (rows->ctx && strcmp(rows->kind, r->kind) == 0 &&
		    strcmp(rows->peak_how, r->peak_how) == 0)
			return 1;
	return 0;
}

/* What the gpt columns mean after the tables, and the peak of one device
 * once per kind and dtype (a GPU's bf16 and fp32 peaks differ). */
static void lm_notes(FILE *fp, const struct mgpu_bench_trow *rows, int n)
{
	int i, bf16 = 0;

	for (i = 0; i < n; i++)
		bf16 |= rows[i].ctx && strcmp(rows[i].dtype, "bf16") == 0;
	for (i = 0; i < n && !rows[i].ctx; i++)
		;
	if (i == n)
		return;
	fprintf(fp, "\nTokens/s = samples/s x ctx (%d). MFU = tokens/s x model FLOPs per token "
		"(6 N + 12 L T D = %.4g, N the parameters in matrix products) / (devices x the "
		"peak of one device).\nEstimate = weights + gradients + optimizer state (shared "
		"CPU ranks: their share) + activations%s, by hand (mgpu-bench(1)).\n",
		rows[i].ctx, rows[i].flops_per_token,
		bf16 ? " (bf16: + the bf16 copies of the weights and the largest operands)" : "");
	for (i = 0; i < n; i++)
		if (rows[i].ctx && rows[i].peak_how[0] && !peak_said(rows, &rows[i]))
			fprintf(fp, "Peak of one %s: %s.\n",
				strcmp(rows[i].kind, "gpu") == 0 ? "GPU" : "CPU rank",
				rows[i].peak_how);
}

/* A row's error without the "mgpu-train: " and "rank N: " a multi-rank
 * run puts before it, so that rows that failed alike compare equal. */
static const char *bare_error(const char *e)
{
	int n = 0;

	if (strncmp(e, "mgpu-train: ", 12) == 0)
		e += 12;
	if (sscanf(e, "rank %*d: %n", &n) == 0 && n > 0)
		e += n;
	return e;
}

/* Each failure's message once, under the table whose cells say "failed",
 * with the rows it ended. */
static void failures(FILE *fp, const struct mgpu_bench_trow *rows, int n)
{
	int i, j, said;

	for (i = 0; i < n; i++) {
		if (!rows[i].error[0])
			continue;
		for (j = 0; j < i && (!rows[j].error[0] || strcmp(bare_error(rows[j].error),
								   bare_error(rows[i].error)) != 0); j++)
			;
		if (j < i)
			continue;
		fputs("\nFailed: ", fp);
		for (j = i, said = 0; j < n; j++)
			if (rows[j].error[0] &&
			    strcmp(bare_error(rows[j].error), bare_error(rows[i].error)) == 0)
				fprintf(fp, "%s%s", said++ ? ", " : "", rows[j].config);
		fprintf(fp, ": %s\n", bare_error(rows[i].error));
	}
}

static void write_md(struct common *co, FILE *fp, const struct mgpu_bench_trow *rows, int n)
{
	struct mgpu_tab t;
	int i;

	if (mgpu_bench_speedup_tab(rows, n, &t) < 0 || mgpu_tab_write(&t, fp, MGPU_FMT_MD) < 0)
		common_fail(co);
	mgpu_tab_free(&t);
	failures(fp, rows, n);
	fputs("\nPeak memory per device (MiB):\n\n", fp);
	if (mgpu_bench_memory_tab(rows, n, &t) < 0 || mgpu_tab_write(&t, fp, MGPU_FMT_MD) < 0)
		common_fail(co);
	mgpu_tab_free(&t);
	if (mgpu_bench_util_tab(rows, n, &t) < 0)
		common_fail(co);
	if (t.nrows) {
		fputs("\nGPU utilisation per device (mean %, NVML, from the first to the last busy "
		      "sample):\n\n", fp);
		if (mgpu_tab_write(&t, fp, MGPU_FMT_MD) < 0)
			common_fail(co);
	}
	mgpu_tab_free(&t);
	lm_notes(fp, rows, n);
	fprintf(fp, "\nThroughput: median of %d run%s (± half the range), the first %d steps "
		"of each left out. Time: the wall time of a run's steps, the same steps for "
		"every row, so a row of more devices trains on more samples in it (not an "
		"epoch's time).\nOpenBLAS kernels: %s, %d BLAS thread%s per CPU rank.\n"
		"Commands:\n\n", rows[0].repeats, rows[0].repeats > 1 ? "s" : "",
		rows[0].warmup_steps, rows[0].blas_core, rows[0].blas_threads,
		rows[0].blas_threads == 1 ? "" : "s");
	for (i = 0; i < n; i++)
		fprintf(fp, "- %s: `%s`\n", rows[i].config, rows[i].command);
}

static int any_ok(const struct mgpu_bench_trow *rows, int n)
{
	int i;

	for (i = 0; i < n; i++)
		if (!rows[i].error[0])
			return 1;
	return 0;
}

/* The value of the last "--NAME V" or "--NAME=V" in a row's command, or
 * dflt: what mgpu-train ran with. */
static void command_value(const char *command, const char *name, const char *dflt, char *out,
			  size_t cap)
{
	static char buf[MGPU_BENCH_CMD];
	char *argv[512], eq[64];
	int argc = 0, i;

	snprintf(out, cap, "%s", dflt);
	snprintf(buf, sizeof buf, "%s", command);
	snprintf(eq, sizeof eq, "%s=", name);
	if (mgpu_bench_split_command(buf, argv, 512, &argc) < 0)
		return;
	for (i = 1; i < argc; i++)
		if (strcmp(argv[i], name) == 0 && i + 1 < argc)
			snprintf(out, cap, "%s", argv[i + 1]);
		else if (strncmp(argv[i], eq, strlen(eq)) == 0)
			snprintf(out, cap, "%s", argv[i] + strlen(eq));
}

/* The machine the rows ran on: the CPU model for CPU ranks, GPU 0's name
 * for GPU rows. */
static void machine(const struct mgpu_bench_trow *rows, int n, char *out, size_t cap)
{
	static struct mgpu_gpu_list gl;
	char line[512], *v = NULL, *nl;
	int i, gpu = 0, cpu = 0;
	FILE *fp;

	for (i = 0; i < n; i++) {
		gpu |= strcmp(rows[i].kind, "gpu") == 0;
		cpu |= strcmp(rows[i].kind, "gpu") != 0;
	}
	out[0] = '\0';
	if (cpu && (fp = fopen("/proc/cpuinfo", "r"))) {
		while (!v && fgets(line, sizeof line, fp))
			if (strncmp(line, "model name", 10) == 0 && (v = strchr(line, ':')))
				for (v++; *v == ' ' || *v == '\t'; v++)
					;
		fclose(fp);
		if (v && (nl = strchr(v, '\n')))
			*nl = '\0';
		snprintf(out, cap, "%s (%ld CPUs)", v ? v : "CPU", sysconf(_SC_NPROCESSORS_ONLN));
	}
	if (gpu && mgpu_gpu_enumerate(&gl) == 0 && gl.nvisible > 0)
		snprintf(out + strlen(out), cap - strlen(out), "%s%s", out[0] ? ", " : "",
			 gl.gpu[0].name);
	if (!out[0])
		snprintf(out, cap, "this machine");
}

/* What the plot shows: model, data, machine and repeats. */
static void plot_title(const struct mgpu_bench_trow *rows, int n, char *out, size_t cap)
{
	char model[128], data[256], where[256];
	int i, reps = 0;

	for (i = 0; i < n && rows[i].error[0]; i++)
		;
	if (i == n)
		i = 0;
	command_value(rows[i].command, "--model", "mlp:auto-512-256-auto", model, sizeof model);
	command_value(rows[i].command, "--data", "/usr/share/datasets/fashion-mnist", data,
		      sizeof data);
	machine(rows, n, where, sizeof where);
	for (i = 0; i < n; i++)
		reps = rows[i].repeats > reps ? rows[i].repeats : reps;
	snprintf(out, cap, "%s on %s; %s; median of %d run%s", model, data, where, reps,
		 reps == 1 ? "" : "s");
}

static void outputs(struct topts *o, const struct mgpu_bench_trow *rows, int n)
{
	struct mgpu_afile af;
	struct mgpu_tab t;
	char title[800];
	FILE *fp = common_open(&o->co);

	if (mgpu_bench_trows_tab(rows, n, &t) < 0)
		common_fail(&o->co);
	if (o->co.fmt == MGPU_FMT_MD)
		write_md(&o->co, fp, rows, n);
	else if (mgpu_tab_write(&t, fp, o->co.fmt) < 0)
		common_fail(&o->co);
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
		plot_title(rows, n, title, sizeof title);
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
	struct topts o;
	int n, nold = 0, rc;

	parse(&o, argc, argv);
	self_dir(o.train_bin, sizeof o.train_bin - 16);
	strcat(o.train_bin, "/mgpu-train");
	if (o.compare) {
		load_old(o.compare, &old, &nold);
		n = nold;
		hosts_up(old, nold);
		rerun(&o, old, n, rows);
	} else {
		n = plan(&o, rows);
		if (n == 0) /* a sweep measuring nothing is a sweep asked wrongly */
			usage_error("no configuration to measure: --modes dp runs in one process, "
				    "so it cannot span --nodes above 1, and --sync-backends mpi needs "
				    "them");
		hosts_up(rows, n);
		sweep(&o, rows, n);
	}
	hosts_down();
	if (mgpu_interrupted) {
		note("interrupted");
		return 130;
	}
	mgpu_bench_trows_finish(rows, n);
	outputs(&o, rows, n);
	rc = verdict(&o, old, nold, rows, n);
	free(old);
	return rc;
}
