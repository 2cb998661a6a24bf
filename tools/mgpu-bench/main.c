/*
 * mgpu-bench - speedup, memory, all-reduce and data-loading benchmarks.
 *
 * One subcommand per file (train.c, allreduce.c, data.c), each with one
 * entry point; this file dispatches to them, and common.c holds what they
 * share. The measuring, arithmetic, tables and plots live in lib/bench.
 */
#include <stdio.h>  /* printf */
#include <string.h> /* strcmp, strlen */

#include "../common.h"  /* usage_error, print_version */
#include "bench.h"      /* bench_train, bench_allreduce, bench_data */

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
