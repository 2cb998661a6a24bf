/*
 * bench.h - what the subcommands of mgpu-bench share: the options every
 * subcommand takes (-q, -v, --json, --format, -o) and the output stream.
 *
 * Output format: --json gives JSON Lines; otherwise Markdown when the
 * output is a terminal, TSV with a header when it is not (pipe, file, -o);
 * --format overrides. -o writes atomically (core/io.h): the file appears
 * complete or not at all.
 */
#ifndef MGPU_TOOLS_BENCH_H
#define MGPU_TOOLS_BENCH_H

#include <getopt.h> /* struct option */
#include <stdio.h>  /* FILE */

#include "bench/tab.h" /* struct mgpu_tab */
#include "core/io.h"   /* struct mgpu_afile */

enum { O_JSON = 1000, O_FORMAT };

#define COMMON_LONGOPTS                                          \
	{ "json", no_argument, NULL, O_JSON },                   \
	{ "format", required_argument, NULL, O_FORMAT },         \
	{ "output", required_argument, NULL, 'o' },              \
	{ "quiet", no_argument, NULL, 'q' },                     \
	{ "verbose", no_argument, NULL, 'v' },                   \
	{ "help", no_argument, NULL, 'h' },                      \
	{ "version", no_argument, NULL, 'V' }
#define COMMON_SHORTOPTS "o:qvhV"

struct common {
	int fmt;             /* MGPU_FMT_*, or -1: by the output */
	int quiet, verbose;
	const char *output;  /* NULL: stdout */
	struct mgpu_afile af;
	FILE *fp;
};

/* Handle a common option (help prints help_text and exits 0); 0 when c is
 * not one of them. */
int common_opt(struct common *co, int c, const char *arg, const char *help_text);
/* Open the output and settle the format. */
FILE *common_open(struct common *co);
/* Commit (-o) or flush stdout; dies on a write error. */
void common_close(struct common *co);
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
/* A comma list of ints in [min_v, max_v] (exits 2 naming the option; the
 * single values use common.h's opt_int). */
int bench_list(const char *opt, const char *arg, int *out, int max, int min_v, int max_v);

int bench_train(int argc, char **argv);
int bench_allreduce(int argc, char **argv);
int bench_data(int argc, char **argv);

#endif
