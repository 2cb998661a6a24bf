/*
 * stats.h - the arithmetic of mgpu-bench's tables, kept apart from any
 * measuring so tests check it on recorded numbers.
 *
 * - median and spread of repeated measurements;
 * - speedup = throughput / baseline throughput, efficiency = speedup / devices;
 * - bus bandwidth factors with nccl-tests' definitions (all-reduce:
 *   busbw = algbw x 2(n-1)/n; reduce-scatter, all-gather: (n-1)/n;
 *   broadcast, reduce: 1), where algbw = bytes / time;
 * - size sweeps ("4K:256M" doubling, or a list "4K,1M") and tolerances
 *   ("10%" or "10": percent).
 * Pure functions: no I/O, no global state.
 */
#ifndef MGPU_BENCH_STATS_H
#define MGPU_BENCH_STATS_H

#include <stddef.h> /* size_t */

enum mgpu_coll { MGPU_COLL_ALLREDUCE, MGPU_COLL_REDUCE_SCATTER, MGPU_COLL_ALLGATHER,
		 MGPU_COLL_BROADCAST, MGPU_COLL_REDUCE };

/* Median of v[0..n) (sorts v in place); NAN when n == 0. */
double mgpu_bench_median(double *v, int n);
/* Half the range as a percentage of the median: (max - min) / 2 / median x 100. */
double mgpu_bench_spread_pct(double min, double max, double median);
/* speedup and efficiency of a run on devices devices against a 1-device
 * baseline; both NAN when the baseline is missing or not positive. */
void mgpu_bench_speedup(double thr, double base_thr, int devices, double *speedup,
			double *efficiency);
/* busbw / algbw for collective op on n ranks (1 for n == 1). */
double mgpu_bench_busbw_factor(enum mgpu_coll op, int n);
/* algbw in GB/s (10^9 bytes per second) of nbytes in time_us. */
double mgpu_bench_algbw_gbps(size_t nbytes, double time_us);
/*
 * Sizes from "LO:HI" (LO, 2 LO, 4 LO, ... while <= HI) or "A,B,C"; K/M/G
 * suffixes (powers of 1024); each a multiple of 4 bytes, at most max_bytes.
 * At most max sizes; opt names the option in errors.
 */
int mgpu_bench_sizes(const char *opt, const char *s, size_t max_bytes, size_t *out, int max,
		     int *n);
/* "10%" or "10" -> 0.10; within [0, 100] percent. */
int mgpu_bench_tolerance(const char *opt, const char *s, double *frac);
/* 1 when a throughput fell by more than tol (new < old x (1 - tol)). */
int mgpu_bench_slower(double old_v, double new_v, double tol);
/* 1 when a size grew by more than tol (new > old x (1 + tol)). */
int mgpu_bench_bigger(double old_v, double new_v, double tol);

#endif
