/*
 * svg.h - the plot of `mgpu-bench train --plot`, written as SVG directly
 * (no gnuplot): left, speedup against devices per mode with the ideal
 * (linear) line; right, peak memory per device as grouped bars, one group
 * per configuration, with the device legend to the right of the plot area
 * (never over a bar). Rows that failed are left out.
 */
#ifndef MGPU_BENCH_SVG_H
#define MGPU_BENCH_SVG_H

#include <stdio.h> /* FILE */

#include "bench/sweep.h" /* struct mgpu_bench_trow */

/* Write the plot to fp; title (may be NULL) goes on top. MGPU_EIO on a
 * stream error, MGPU_EINVAL when no row succeeded. */
int mgpu_bench_plot_svg(FILE *fp, const struct mgpu_bench_trow *rows, int n, const char *title);

#endif
