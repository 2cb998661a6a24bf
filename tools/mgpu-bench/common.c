/*
 * common.c - what the subcommands of mgpu-bench share (see bench.h): the
 * common options and the output, the path of mgpu-train beside this
 * binary, the BLAS columns, and integer list options.
 */
#include <stdio.h>  /* snprintf */
#include <stdlib.h> /* exit */
#include <string.h> /* strrchr */
#include <unistd.h> /* isatty, readlink */

#include "../common.h"  /* die_lib, usage_error, output_open */
#include "bench.h"      /* struct common */
#include "bench/tab.h"  /* MGPU_FMT_*, mgpu_tab_fill */
#include "core/cli.h"   /* mgpu_cli_int_list */
#include "core/err.h"   /* mgpu_errmsg */
#include "gpu/gpu.h"    /* mgpu_gpu_blas_core */

int common_parse(const struct tool_cli *cli, void *target, struct common *co, int argc,
		 char **argv, int stop_at_arg)
{
	int first = parse_options(cli, target, &co->opts, argc, argv, stop_at_arg, &co->given);

	/* no --format: Markdown for a person at a terminal, else TSV */
	co->fmt = co->opts.json || mgpu_opt_was_given(cli->tab, &co->given, "format") ?
			  co->opts.format : -1;
	co->quiet = co->opts.quiet;
	co->verbose = co->opts.verbose;
	co->output = co->opts.output;
	return first;
}

void common_settings(const struct tool_cli *cli, const void *target, const struct common *co,
		     const char *cmd)
{
	if (co->opts.print_config) {
		print_config(stdout, cli, target, cmd);
		finish_stdout();
		exit(0);
	}
	if (co->verbose) /* even with -q, which silences the progress */
		print_config(stderr, cli, target, cmd);
}

void bench_show_list(char *buf, size_t len, const int *v, int n, const char *const *words)
{
	size_t at = 0;
	int i;

	if (len)
		buf[0] = '\0';
	for (i = 0; i < n && at < len; i++) {
		int k = words ? snprintf(buf + at, len - at, "%s%s", i ? "," : "", words[v[i]]) :
				snprintf(buf + at, len - at, "%s%d", i ? "," : "", v[i]);
		at += k > 0 ? (size_t)k : 0;
	}
}

FILE *common_open(struct common *co)
{
	co->fp = output_open(&co->out, &co->opts);
	if (co->fmt < 0)
		co->fmt = !co->output && isatty(1) ? MGPU_FMT_MD : MGPU_FMT_TSV;
	return co->fp;
}

void common_close(struct common *co)
{
	output_commit(&co->out);
}

void common_fail(struct common *co)
{
	output_abort(&co->out);
	die_lib();
}

int common_progress(const struct common *co)
{
	return !co->quiet && (co->verbose || isatty(2));
}

void self_dir(char *buf, size_t cap)
{
	ssize_t n = readlink("/proc/self/exe", buf, cap - 1);
	char *slash;

	if (n <= 0)
		die("cannot find this program's directory (/proc/self/exe)");
	buf[n] = '\0';
	slash = strrchr(buf, '/');
	if (slash)
		*slash = '\0';
}

const char *bench_blas_core(void)
{
	static char core[48];

	if (!core[0])
		snprintf(core, sizeof core, "%s", mgpu_gpu_blas_core());
	return core;
}

int bench_blas_threads(void)
{
	static int n;

	if (!n)
		n = mgpu_gpu_blas_rank_threads();
	return n;
}

void bench_blas_fill(struct mgpu_tab *t)
{
	char n[16];

	snprintf(n, sizeof n, "%d", bench_blas_threads());
	if (mgpu_tab_fill(t, "blas_core", bench_blas_core()) < 0 ||
	    mgpu_tab_fill(t, "blas_threads", bench_blas_threads() > 0 ? n : NULL) < 0)
		die_lib();
}

int bench_list(const char *opt, const char *arg, int *out, int max, int min_v, int max_v)
{
	int n, i;

	if (mgpu_cli_int_list(opt, arg, out, max, &n) < 0)
		usage_error("%s", mgpu_errmsg());
	for (i = 0; i < n; i++)
		if (out[i] < min_v || out[i] > max_v)
			usage_error("%s: %d is out of range [%d, %d]", opt, out[i], min_v, max_v);
	return n;
}
