/*
 * gpumon.c - the sampler thread and the busy-window arithmetic of GPU
 * utilisation (see gpumon.h).
 *
 * Threads: mgpu_gpumon_start spawns one thread that owns m->acc until
 * mgpu_gpumon_stop has joined it; stop wakes it through the condition
 * variable, so stopping never waits out an interval.
 */
#include "bench/gpumon.h"

#include <errno.h>  /* errno */
#include <math.h>   /* NAN */
#include <string.h> /* memset */
#include <time.h>   /* clock_gettime */

#include "core/err.h" /* mgpu_err */
#include "gpu/gpu.h"  /* mgpu_gpu_nvml_read */

void mgpu_gpumon_acc_init(struct mgpu_gpumon_acc *a)
{
	memset(a, 0, sizeof *a);
	a->mem_max = -1;
}

void mgpu_gpumon_acc_add(struct mgpu_gpumon_acc *a, int util_pct, int64_t mem_used_bytes)
{
	if (mem_used_bytes >= 0 && mem_used_bytes > a->mem_max)
		a->mem_max = mem_used_bytes;
	if (util_pct < 0)
		return;
	a->nsamples++;
	if (util_pct == 0 && a->n == 0)
		return; /* before the first busy sample: start-up */
	a->n++;
	a->sum += util_pct;
	if (util_pct > 0) {
		/* the window reaches this sample; idle ones after it wait for the next busy one */
		a->busy_n = a->n;
		a->busy_sum = a->sum;
	}
}

double mgpu_gpumon_acc_util(const struct mgpu_gpumon_acc *a)
{
	if (a->nsamples == 0)
		return NAN;
	return a->busy_n ? a->busy_sum / (double)a->busy_n : 0.0;
}

int64_t mgpu_gpumon_acc_mem(const struct mgpu_gpumon_acc *a)
{
	return a->mem_max;
}

static void sample(struct mgpu_gpumon *m)
{
	int64_t mem;
	int d, util;

	for (d = 0; d < m->ndev; d++) {
		m->read(m->ctx, d, &util, &mem);
		mgpu_gpumon_acc_add(&m->acc[d], util, mem);
	}
}

/* The first sample was taken by start: wait, sample, until stop (whose
 * sample is the last). */
static void *loop(void *arg)
{
	struct mgpu_gpumon *m = arg;
	struct timespec t;
	int stop;

	for (;;) {
		clock_gettime(CLOCK_MONOTONIC, &t);
		t.tv_sec += m->interval_ms / 1000;
		t.tv_nsec += (long)(m->interval_ms % 1000) * 1000000L;
		if (t.tv_nsec >= 1000000000L) {
			t.tv_sec++;
			t.tv_nsec -= 1000000000L;
		}
		pthread_mutex_lock(&m->mu);
		/* 0 is a signal or a spurious wake-up: wait on until stop or the time */
		while (!m->stop && pthread_cond_timedwait(&m->cv, &m->mu, &t) == 0)
			;
		stop = m->stop;
		pthread_mutex_unlock(&m->mu);
		sample(m);
		if (stop)
			return NULL;
	}
}

int mgpu_gpumon_start(struct mgpu_gpumon *m, int ndev, int interval_ms, mgpu_gpumon_read_fn read,
		      void *ctx)
{
	pthread_condattr_t ca;
	int d, rc;

	memset(m, 0, sizeof *m);
	if (ndev < 1 || ndev > MGPU_BENCH_MAXDEV || interval_ms < 1 || !read)
		return mgpu_err(MGPU_EINVAL, "GPU sampler: %d devices every %d ms", ndev,
				interval_ms);
	m->ndev = ndev;
	m->interval_ms = interval_ms;
	m->read = read;
	m->ctx = ctx;
	for (d = 0; d < ndev; d++)
		mgpu_gpumon_acc_init(&m->acc[d]);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&m->cv, &ca);
	pthread_condattr_destroy(&ca);
	pthread_mutex_init(&m->mu, NULL);
	sample(m);
	rc = pthread_create(&m->thread, NULL, loop, m);
	if (rc != 0) {
		pthread_cond_destroy(&m->cv);
		pthread_mutex_destroy(&m->mu);
		errno = rc;
		return mgpu_err_errno(MGPU_EIO, "GPU sampler: cannot start a thread");
	}
	m->running = 1;
	return 0;
}

void mgpu_gpumon_stop(struct mgpu_gpumon *m)
{
	if (!m->running)
		return;
	pthread_mutex_lock(&m->mu);
	m->stop = 1;
	pthread_cond_signal(&m->cv);
	pthread_mutex_unlock(&m->mu);
	pthread_join(m->thread, NULL);
	pthread_cond_destroy(&m->cv);
	pthread_mutex_destroy(&m->mu);
	m->running = 0;
}

void mgpu_gpumon_read_nvml(void *ctx, int dev, int *util_pct, int64_t *mem_used_bytes)
{
	mgpu_gpu_nvml_read(ctx, dev, util_pct, mem_used_bytes);
}
