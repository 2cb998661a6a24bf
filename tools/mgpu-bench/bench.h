/*
 * bench.h - what the subcommands of mgpu-bench share: the options every
 * subcommand takes (the MGPU_OPT_COMMON rows: -o, --format, --json, -q, -v,
 * -V, -h) and the output stream.
 *
 * Output format: --json gives JSON Lines; otherwise Markdown when the
 * output is a terminal, TSV with a header when it is not (pipe, file, -o);
 * --format overrides. -o writes atomically (core/io.h): the file appears
 * complete or not at all.
 */
#ifndef MGPU_TOOLS_BENCH_H
#define MGPU_TOOLS_BENCH_H

#include <stdio.h>  /* FILE */

#include "../common.h"  /* struct tool_cli, struct output */
#include "bench/tab.h"  /* struct mgpu_tab */
#include "core/opt.h"   /* struct mgpu_common_opts, MGPU_OPT_COMMON */

struct common {
	struct mgpu_common_opts opts; /* the MGPU_OPT_COMMON rows parse into this */
	struct mgpu_opt_given given;
	int fmt;             /* MGPU_FMT_*, or -1: by the output */
	int quiet, verbose;
	const char *output;  /* NULL: stdout */
	struct output out;   /* stdout or the -o file */
	FILE *fp;
};

/* A subcommand's options are cli's table, whose MGPU_OPT_COMMON rows fill
 * o->co.opts; target is the subcommand's struct holding co. Parses argv
 * (argv[0] the subcommand's name; usage errors exit 2, --help and
 * --version exit 0) and settles co; returns the first argument's index. */
int common_parse(const struct tool_cli *cli, void *target, struct common *co, int argc,
		 char **argv, int stop_at_arg);
/* After a subcommand's parse (and its defaults filled in): with
 * --print-config its settings in the --config format on stdout, exit 0;
 * with -v the same on stderr. cmd: "mgpu-bench train". */
void common_settings(const struct tool_cli *cli, const void *target, const struct common *co,
		     const char *cmd);
/* A list option's value as its argument again (for --print-config):
 * "1,2", or with words "ddp,dp". */
void bench_show_list(char *buf, size_t len, const int *v, int n, const char *const *words);
/* Open the output and settle the format. */
FILE *common_open(struct common *co);
/* Commit (-o) or flush stdout; dies on a write error. */
void common_close(struct common *co);
/* Remove a half-written -o file and die with the library's error. */
_Noreturn void common_fail(struct common *co);
/* Whether progress goes to stderr (a terminal, or -v; never with -q). */
int common_progress(const struct common *co);
/* The directory of this executable, for finding mgpu-train beside it. */
void self_dir(char *buf, size_t cap);
/* The OpenBLAS kernels and the BLAS threads of a CPU rank, asked once:
 * the same library and environment as the mgpu-train runs get. */
const char *bench_blas_core(void);
int bench_blas_threads(void);
/* Fill the blas_core and blas_threads columns of every row of t. */
void bench_blas_fill(struct mgpu_tab *t);
/* A comma list of ints in [min_v, max_v] (exits 2 naming the option). */
int bench_list(const char *opt, const char *arg, int *out, int max, int min_v, int max_v);

int bench_train(int argc, char **argv);
int bench_allreduce(int argc, char **argv);
int bench_data(int argc, char **argv);

#endif
