/*
 * train.c - `mgpu-bench train`: run mgpu-train (the binary beside this one)
 * over device counts, modes and sync backends, R times each, and print the
 * speedup and memory tables; --save, --plot, --compare.
 *
 * Each run is `mgpu-train -q --json --log-every 1 DEVICES [--mode M]
 * [--sync-backend S] WORKLOAD`, its exact command kept in the results.
 * Throughput comes from the step records after the warm-up steps
 * (lib/bench/sweep.h); a run that fails or times out makes its row an
 * error row and the exit status 1, never a hang.
 */
#include <stdio.h>  /* printf, fprintf */
#include <stdlib.h> /* free */
#include <string.h> /* strcmp */

#include "../common.h"     /* die, usage_error, mgpu_interrupted */
#include "bench.h"         /* struct common */
#include "bench/gpumon.h"  /* mgpu_gpumon_start */
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

static const char help[] =
	"usage: mgpu-bench train [options] [-- MGPU-TRAIN-OPTIONS...]\n"
	"Run mgpu-train over device counts, modes and sync backends; print the speedup\n"
	"and peak-memory tables (Markdown on a terminal, else TSV; --json: JSON Lines).\n"
	"The workload defaults to --epochs 1 --max-steps 200 --batch-size 64 (per device)\n"
	"on mgpu-train's default data and model; options after -- are added.\n";

static const char *const mode_words[] = { "ddp", "dp", NULL };
static const char *const sync_words[] = { "auto", "cpu", "nccl", NULL };
static const char *const workload[] = { "--epochs", "1", "--max-steps", "200",
					"--batch-size", "64" };

struct topts {
	struct common co;
	int cpu[64], ncpu, gpu[64], ngpu;
	int modes[2], nmodes, syncs[3], nsyncs;
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

	o->nsyncs = word_list("--sync-backends", arg, sync_words, o->syncs, 3);
	return 0;
}

static int set_tol(void *t, const char *arg)
{
	return mgpu_bench_tolerance("--tolerance", arg, &((struct topts *)t)->tol);
}

#define O struct topts
static const struct mgpu_opt options[] = {
	MGPU_OPT_HEAD("configurations"),
	MGPU_OPT_CALL("cpu-ranks", 0, set_cpu, NULL, "LIST", "CPU rank counts, e.g. 1,2",
		      "1,2 unless --devices", 0),
	MGPU_OPT_CALL("devices", 0, set_devices, NULL, "LIST",
		      "GPU counts, e.g. 1,2,4,8 (GPUs 0..N-1)", "", 0),
	MGPU_OPT_CALL("modes", 0, set_modes, NULL, "LIST", "ddp,dp", "ddp,dp", 0),
	MGPU_OPT_CALL("sync-backends", 0, set_syncs, NULL, "LIST", "auto,cpu,nccl", "auto", 0),
	MGPU_OPT_HEAD("runs"),
	MGPU_OPT_ROWD(MGPU_OPT_INT, "repeat", 0, O, repeat, 1, MAX_REPEAT, "N",
		      "runs per configuration; median and spread", "3", 0),
	MGPU_OPT_ROWD(MGPU_OPT_INT, "warmup-steps", 0, O, warmup, 0, 1000000, "N",
		      "steps of each run left out of the throughput", "20", 0),
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
	MGPU_OPT_CALL("tolerance", 0, set_tol, NULL, "PCT", "allowed regression", "10%", 0),
	MGPU_OPT_COMMON(O, co.opts),
	MGPU_OPT_TABLE_END,
};
#undef O

static void parse(struct topts *o, int argc, char **argv)
{
	static struct topts def = { .timeout_s = 600 };
	const struct tool_cli cli = { options, help, &def };
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
	if (o->compare && (o->ncpu || o->ngpu || o->nmodes || o->nsyncs || o->nextra))
		usage_error("--compare re-runs the configurations of its file: it takes no "
			    "--cpu-ranks, --devices, --modes, --sync-backends or workload");
	if (!o->ncpu && !o->ngpu) {
		o->cpu[0] = 1, o->cpu[1] = 2;
		o->ncpu = 2;
	}
	if (!o->nmodes)
		o->modes[0] = 0, o->modes[1] = 1, o->nmodes = 2;
	if (!o->nsyncs)
		o->syncs[0] = 0, o->nsyncs = 1;
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
	int k = 0, i;
	size_t len = 0;

	c->n = 0;
	add(c, o->train_bin);
	add(c, "-q");
	add(c, "--json");
	add(c, "--log-every");
	add(c, "1");
	add(c, strcmp(r->kind, "gpu") == 0 ? "--gpus" : "--cpu-ranks");
	if (strcmp(r->kind, "gpu") == 0) {
		for (i = 0; i < r->devices && len + 4 < sizeof c->store[k]; i++)
			len += (size_t)snprintf(c->store[k] + len, sizeof c->store[k] - len, "%s%d",
						i ? "," : "", i);
	} else {
		snprintf(c->store[k], sizeof c->store[k], "%d", r->devices);
	}
	add(c, c->store[k++]);
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
	for (i = 0; i < o->nextra; i++)
		add(c, o->extra[i]);
}

/* The configurations of the sweep, in table order. */
static int plan(const struct topts *o, struct mgpu_bench_trow *rows)
{
	int n = 0, kind, i, m, s;

	for (kind = 0; kind < 2; kind++) {
		const int *list = kind ? o->gpu : o->cpu;
		int nl = kind ? o->ngpu : o->ncpu;
		for (i = 0; i < nl; i++)
			for (m = 0; m < (list[i] > 1 ? o->nmodes : 1); m++)
				for (s = 0; s < (list[i] > 1 ? o->nsyncs : 1); s++) {
					struct mgpu_bench_trow *r = &rows[n++];
					if (n > MAX_ROWS)
						usage_error("more than %d configurations", MAX_ROWS);
					memset(r, 0, sizeof *r);
					snprintf(r->kind, sizeof r->kind, "%s", kind ? "gpu" : "cpu");
					r->devices = list[i];
					if (list[i] > 1) {
						snprintf(r->mode, sizeof r->mode, "%s", mode_words[o->modes[m]]);
						snprintf(r->sync, sizeof r->sync, "%s",
							 o->syncs[s] ? sync_words[o->syncs[s]] : "");
					}
					mgpu_bench_label(r, o->nsyncs > 1);
				}
	}
	return n;
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
	static int warned;
	struct mgpu_spawn_result res;
	struct sampler smp;
	char why[200] = "";
	int k, gpu = strcmp(r->kind, "gpu") == 0, unsampled = 0;

	snprintf(r->blas_core, sizeof r->blas_core, "%s", bench_blas_core());
	r->blas_threads = bench_blas_threads();
	if (mgpu_bench_quote_argv(args, r->command, sizeof r->command) < 0)
		die_lib();
	for (k = 0; k < repeats && !mgpu_interrupted; k++) {
		if (gpu) {
			sampler_start(&smp, r->devices, why, sizeof why);
			unsampled |= !smp.on;
		}
		if (mgpu_spawn_capture(args, 1000 * o->timeout_s, &mgpu_interrupted, &res) < 0)
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

/* What the gpt columns mean, once per kind of device, after the tables. */
static void lm_notes(FILE *fp, const struct mgpu_bench_trow *rows, int n)
{
	const char *seen[2] = { NULL, NULL };
	int i, k;

	for (i = 0; i < n && !rows[i].ctx; i++)
		;
	if (i == n)
		return;
	fprintf(fp, "\nTokens/s = samples/s x ctx (%d). MFU = tokens/s x model FLOPs per token "
		"(6 N + 12 L T D = %.4g, N the parameters in matrix products) / (devices x the "
		"peak of one device).\nEstimate = weights + gradients + optimizer state (shared "
		"CPU ranks: their share) + activations, by hand (mgpu-bench(1)).\n",
		rows[i].ctx, rows[i].flops_per_token);
	for (i = 0; i < n; i++) {
		k = strcmp(rows[i].kind, "gpu") == 0;
		if (!rows[i].ctx || !rows[i].peak_how[0] || seen[k])
			continue;
		seen[k] = rows[i].peak_how;
		fprintf(fp, "Peak of one %s: %s.\n", k ? "GPU" : "CPU rank", seen[k]);
	}
}

static void write_md(FILE *fp, const struct mgpu_bench_trow *rows, int n)
{
	struct mgpu_tab t;
	int i;

	if (mgpu_bench_speedup_tab(rows, n, &t) < 0 || mgpu_tab_write(&t, fp, MGPU_FMT_MD) < 0)
		die_lib();
	mgpu_tab_free(&t);
	fputs("\nPeak memory per device (MiB):\n\n", fp);
	if (mgpu_bench_memory_tab(rows, n, &t) < 0 || mgpu_tab_write(&t, fp, MGPU_FMT_MD) < 0)
		die_lib();
	mgpu_tab_free(&t);
	if (mgpu_bench_util_tab(rows, n, &t) < 0)
		die_lib();
	if (t.nrows) {
		fputs("\nGPU utilisation per device (mean %, NVML, from the first to the last busy "
		      "sample):\n\n", fp);
		if (mgpu_tab_write(&t, fp, MGPU_FMT_MD) < 0)
			die_lib();
	}
	mgpu_tab_free(&t);
	lm_notes(fp, rows, n);
	fprintf(fp, "\nThroughput: median of %d run%s (± half the range), the first %d steps "
		"of each left out.\nOpenBLAS kernels: %s, %d BLAS thread%s per CPU rank.\n"
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

static void outputs(struct topts *o, const struct mgpu_bench_trow *rows, int n)
{
	struct mgpu_afile af;
	struct mgpu_tab t;
	FILE *fp = common_open(&o->co);

	if (mgpu_bench_trows_tab(rows, n, &t) < 0)
		die_lib();
	if (o->co.fmt == MGPU_FMT_MD)
		write_md(fp, rows, n);
	else if (mgpu_tab_write(&t, fp, o->co.fmt) < 0)
		die_lib();
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
	if (o->plot && (mgpu_afile_open(&af, o->plot) < 0 ||
			mgpu_bench_plot_svg(af.fp, rows, n, "mgpu-bench train") < 0 ||
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
		rerun(&o, old, n, rows);
	} else {
		n = plan(&o, rows);
		sweep(&o, rows, n);
	}
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
