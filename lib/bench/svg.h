/*
 * svg.h - the plot of `mgpu-bench train --plot`, written as SVG directly
 * (no gnuplot): three panels side by side, speedup against devices (with
 * the ideal linear line), throughput against devices (samples/s, or
 * tokens/s when every row is a gpt's) and peak memory per device as
 * grouped bars, one group per configuration. A series (kind, mode, sync
 * backend, dtype) has one colour in every panel, named once in the legend
 * to the right; 1-device configurations are grey. Where a row has several
 * repeats, error bars span the slowest to the fastest (speedup: over the
 * 1-device median). Rows that failed are left out. Each series is an SVG
 * group with class "series" and data-series naming it, so that a reader
 * (or a test) can tell them apart.
 */
#ifndef MGPU_BENCH_SVG_H
#define MGPU_BENCH_SVG_H

#include <stdio.h> /* FILE */

#include "bench/sweep.h" /* struct mgpu_bench_trow */

/* Write the plot to fp; title (may be NULL: none) goes on top, the
 * caller's account of what ran (model, data, machine, repeats). MGPU_EIO on
 * a stream error, MGPU_EINVAL when no row succeeded. */
int mgpu_bench_plot_svg(FILE *fp, const struct mgpu_bench_trow *rows, int n, const char *title);

#endif
