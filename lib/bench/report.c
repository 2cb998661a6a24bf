/*
 * report.c - the Markdown report and the plot title of `mgpu-bench train`,
 * and a saved sweep read back (see report.h).
 */
#include "bench/report.h"

#include <stdlib.h> /* malloc, free */
#include <string.h> /* strcmp, strncmp, strchr, strlen */
#include <unistd.h> /* sysconf */

#include "bench/tab.h" /* struct mgpu_tab, mgpu_tab_write */
#include "core/err.h"  /* MGPU_TRY */
#include "core/io.h"   /* mgpu_read_file */
#include "gpu/gpu.h"   /* mgpu_gpu_enumerate */

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

/* One table made by make (an mgpu_bench_*_tab) in Markdown, after head
 * when it has rows or always is set. */
static int md_table(FILE *fp, int (*make)(const struct mgpu_bench_trow *, int, struct mgpu_tab *),
		    const struct mgpu_bench_trow *rows, int n, const char *head, int always)
{
	struct mgpu_tab t;
	int rc = make(rows, n, &t);

	if (rc < 0)
		return rc;
	if (always || t.nrows) {
		fputs(head, fp);
		rc = mgpu_tab_write(&t, fp, MGPU_FMT_MD);
	}
	mgpu_tab_free(&t);
	return rc < 0 ? rc : 0;
}

int mgpu_bench_report_md(FILE *fp, const struct mgpu_bench_trow *rows, int n)
{
	int i;

	MGPU_TRY(md_table(fp, mgpu_bench_speedup_tab, rows, n, "", 1));
	failures(fp, rows, n);
	MGPU_TRY(md_table(fp, mgpu_bench_memory_tab, rows, n,
			  "\nPeak memory per device (MiB):\n\n", 1));
	MGPU_TRY(md_table(fp, mgpu_bench_util_tab, rows, n,
			  "\nGPU utilisation per device (mean %, NVML, from the first to the last "
			  "busy sample):\n\n", 0));
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
	return 0;
}

/* The value of the last "--NAME V" or "--NAME=V" in a row's command, or
 * dflt: what mgpu-train ran with. */
static void command_value(const char *command, const char *name, const char *dflt, char *out,
			  size_t cap)
{
	char buf[MGPU_BENCH_CMD], *argv[512], eq[64];
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
	struct mgpu_gpu_list *gl;
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
	if (gpu && (gl = malloc(sizeof *gl))) { /* large for the stack */
		if (mgpu_gpu_enumerate(gl) == 0 && gl->nvisible > 0)
			snprintf(out + strlen(out), cap - strlen(out), "%s%s", out[0] ? ", " : "",
				 gl->gpu[0].name);
		free(gl);
	}
	if (!out[0])
		snprintf(out, cap, "this machine");
}

void mgpu_bench_plot_title(const struct mgpu_bench_trow *rows, int n, char *out, size_t cap)
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

int mgpu_bench_trows_read(const char *path, struct mgpu_bench_trow **rows, int *n)
{
	struct mgpu_tab t;
	unsigned char *text;
	size_t len;
	int rc;

	MGPU_TRY(mgpu_read_file(path, &text, &len));
	rc = mgpu_tab_parse_tsv(&t, (const char *)text, len, path);
	free(text);
	if (rc < 0)
		return rc;
	rc = mgpu_bench_trows_from_tab(&t, path, rows, n);
	mgpu_tab_free(&t);
	return rc;
}
