/*
 * mgpu-bench - speedup, memory, all-reduce and data-loading benchmarks.
 *
 * One subcommand per file (train.c, allreduce.c, data.c), each with one
 * entry point; this file dispatches and holds the options they share.
 * The measuring, arithmetic, tables and plots live in lib/bench.
 */
#include <stdio.h>  /* printf */
#include <stdlib.h> /* exit */
#include <string.h> /* strcmp */
#include <unistd.h> /* isatty, readlink */

#include "../common.h"  /* die, usage_error, print_version */
#include "bench.h"      /* struct common */
#include "bench/tab.h"  /* MGPU_FMT_* */
#include "core/cli.h"   /* mgpu_cli_choice, mgpu_cli_int_list */
#include "core/err.h"   /* mgpu_errmsg */
#include "gpu/gpu.h"    /* mgpu_gpu_blas_core */

const char *const mgpu_tool_name = "mgpu-bench";

static void usage(void)
{
	printf("usage: mgpu-bench [-hV] [-v] COMMAND [options]\n"
	       "Benchmarks of data-parallel training.\n\n"
	       "commands:\n"
	       "  train       throughput, speedup, efficiency and peak memory of mgpu-train\n"
	       "              over device counts, modes and sync backends\n"
	       "  allreduce   all-reduce time, algbw and busbw over a size sweep, with a\n"
	       "              wrong-element check\n"
	       "  data        cache decode and loader throughput\n\n"
	       "'mgpu-bench COMMAND --help' lists the options of COMMAND; see mgpu-bench(1).\n");
}

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

int cmd_main(int argc, char **argv)
{
	int i, verbose = 0;

	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
			usage();
			return 0;
		}
		if (strcmp(argv[i], "-v") == 0 || strcmp(argv[i], "--verbose") == 0)
			verbose = 1;
		else if (strcmp(argv[i], "-V") == 0 || strcmp(argv[i], "--version") == 0 ||
			 strcmp(argv[i], "-vV") == 0 || strcmp(argv[i], "-Vv") == 0) {
			print_version(verbose || strlen(argv[i]) == 3);
			return 0;
		} else
			usage_error("unknown option '%s' before the command", argv[i]);
	}
	if (i == argc)
		usage_error("missing command: train, allreduce or data");
	if (strcmp(argv[i], "train") == 0)
		return bench_train(argc - i, argv + i);
	if (strcmp(argv[i], "allreduce") == 0)
		return bench_allreduce(argc - i, argv + i);
	if (strcmp(argv[i], "data") == 0)
		return bench_data(argc - i, argv + i);
	usage_error("unknown command '%s' (train, allreduce or data)", argv[i]);
}
