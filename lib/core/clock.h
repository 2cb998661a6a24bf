/*
 * clock.h - the monotonic clock every timing in mgpu reads (steps, waits,
 * timeouts, benchmarks), in seconds, milliseconds or microseconds.
 */
#ifndef MGPU_CORE_CLOCK_H
#define MGPU_CORE_CLOCK_H

#include <time.h> /* clock_gettime, CLOCK_MONOTONIC */

static inline double mgpu_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline double mgpu_now_ms(void)
{
	return mgpu_now_s() * 1e3;
}

static inline double mgpu_now_us(void)
{
	return mgpu_now_s() * 1e6;
}

#endif
