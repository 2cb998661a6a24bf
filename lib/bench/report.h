/*
 * report.h - the results of `mgpu-bench train` as a person reads them: the
 * Markdown report (the speedup, memory and GPU-utilisation tables, each
 * failure's message once, what the gpt columns mean, the commands) and the
 * title of the plot; and a saved TSV read back for --compare.
 */
#ifndef MGPU_BENCH_REPORT_H
#define MGPU_BENCH_REPORT_H

#include <stddef.h> /* size_t */
#include <stdio.h>  /* FILE */

#include "bench/sweep.h" /* struct mgpu_bench_trow */

/* The Markdown report of rows[0..n) (n > 0) on fp. */
int mgpu_bench_report_md(FILE *fp, const struct mgpu_bench_trow *rows, int n);
/* What the plot shows: model, data, machine and repeats ("mlp:... on DIR;
 * CPU MODEL (N CPUs); median of R runs"), from the first row that worked. */
void mgpu_bench_plot_title(const struct mgpu_bench_trow *rows, int n, char *out, size_t cap);
/* The rows of a TSV that --save wrote (malloc'ed: free *rows). */
int mgpu_bench_trows_read(const char *path, struct mgpu_bench_trow **rows, int *n);

#endif
