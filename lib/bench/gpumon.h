/*
 * gpumon.h - GPU utilisation and memory sampled during a benchmark run, as
 * `nvidia-smi dmon` would show them: a sampler thread reads each device
 * every interval_ms while mgpu-train runs, and an accumulator per device
 * keeps the arithmetic.
 *
 * The mean utilisation is taken over the busy window: from the first
 * sample in which the device was busy (utilisation > 0) to the last one.
 * Start-up (CUDA initialisation, data loading) and tear-down would
 * otherwise count as idle time of a run that never had work then; idle
 * samples between busy ones do count, since a GPU waiting on the host in
 * the middle of training is what the figure should show. Memory is the
 * most seen in use (all processes on the device).
 *
 * The reading function is a parameter so that the sampler and the
 * arithmetic are tested without a GPU; bench/gpumon.c also supplies the
 * NVML one (lib/gpu). Nothing here prints or exits.
 */
#ifndef MGPU_BENCH_GPUMON_H
#define MGPU_BENCH_GPUMON_H

#include <pthread.h> /* pthread_t */
#include <stdint.h>  /* int64_t */

#include "bench/sweep.h" /* MGPU_BENCH_MAXDEV */

struct mgpu_gpumon_acc {
	int64_t n, busy_n;        /* samples since the first busy one; up to the last busy */
	double sum, busy_sum;     /* their utilisation sums */
	int64_t nsamples;         /* every sample with a known utilisation */
	int64_t mem_max;          /* most memory in use seen; -1 none */
};

void mgpu_gpumon_acc_init(struct mgpu_gpumon_acc *a);
/* One sample; util_pct or mem_used_bytes < 0 means unknown (left out). */
void mgpu_gpumon_acc_add(struct mgpu_gpumon_acc *a, int util_pct, int64_t mem_used_bytes);
/* Mean utilisation over the busy window, 0 when never busy, NAN without samples. */
double mgpu_gpumon_acc_util(const struct mgpu_gpumon_acc *a);
/* The most memory in use seen, -1 when never known. */
int64_t mgpu_gpumon_acc_mem(const struct mgpu_gpumon_acc *a);

/* Read device dev (0..ndev-1) now; -1 for what is unknown. */
typedef void (*mgpu_gpumon_read_fn)(void *ctx, int dev, int *util_pct, int64_t *mem_used_bytes);

struct mgpu_gpumon {
	int ndev, interval_ms;
	mgpu_gpumon_read_fn read;
	void *ctx;
	struct mgpu_gpumon_acc acc[MGPU_BENCH_MAXDEV]; /* read them after stop */
	/* private */
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int stop, running;
};

/* Start sampling ndev devices every interval_ms (>= 1) on a thread; the
 * first sample is taken before this returns, so a run has at least two
 * (this one and stop's). MGPU_EINVAL on bad arguments, MGPU_EIO when the
 * thread cannot start. */
int mgpu_gpumon_start(struct mgpu_gpumon *m, int ndev, int interval_ms, mgpu_gpumon_read_fn read,
		      void *ctx);
/* Take a last sample, stop the thread and join it; m->acc is then final. */
void mgpu_gpumon_stop(struct mgpu_gpumon *m);

/* A mgpu_gpumon_read_fn over an open NVML session (ctx: struct
 * mgpu_gpu_nvml_mon *, gpu/gpu.h). */
void mgpu_gpumon_read_nvml(void *ctx, int dev, int *util_pct, int64_t *mem_used_bytes);

#endif
