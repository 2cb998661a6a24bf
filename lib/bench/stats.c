/*
 * stats.c - medians, speedups, bus bandwidth factors, size sweeps and
 * tolerances (see stats.h).
 */
#include "bench/stats.h"

#include <math.h>   /* NAN, isfinite */
#include <stdio.h>  /* snprintf */
#include <stdlib.h> /* qsort, strtod */
#include <string.h> /* strchr, strlen */

#include "core/cli.h" /* mgpu_cli_size */
#include "core/err.h" /* mgpu_err */

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

double mgpu_bench_median(double *v, int n)
{
	if (n <= 0)
		return NAN;
	qsort(v, (size_t)n, sizeof *v, cmp_d);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double mgpu_bench_spread_pct(double min, double max, double median)
{
	if (!(median > 0))
		return NAN;
	return (max - min) / 2 / median * 100;
}

void mgpu_bench_speedup(double thr, double base_thr, int devices, double *speedup,
			double *efficiency)
{
	*speedup = *efficiency = NAN;
	if (!(base_thr > 0) || !isfinite(thr) || devices < 1)
		return;
	*speedup = thr / base_thr;
	*efficiency = *speedup / devices;
}

double mgpu_bench_busbw_factor(enum mgpu_coll op, int n)
{
	if (n <= 1)
		return 1;
	switch (op) {
	case MGPU_COLL_ALLREDUCE: return 2.0 * (n - 1) / n;
	case MGPU_COLL_REDUCE_SCATTER:
	case MGPU_COLL_ALLGATHER: return (double)(n - 1) / n;
	default: return 1;
	}
}

double mgpu_bench_algbw_gbps(size_t nbytes, double time_us)
{
	if (!(time_us > 0))
		return NAN;
	return (double)nbytes / time_us * 1e-3;
}

static int one_size(const char *opt, const char *s, size_t max_bytes, size_t *out)
{
	unsigned long long v;

	MGPU_TRY(mgpu_cli_size(opt, s, max_bytes, &v));
	if (v == 0 || v % 4)
		return mgpu_err(MGPU_EINVAL, "%s: %s is not a positive multiple of 4 bytes", opt,
				s);
	*out = (size_t)v;
	return 0;
}

static int size_list(const char *opt, const char *s, size_t max_bytes, size_t *out, int max,
		     int *n)
{
	char buf[256], *p, *save = NULL;

	if (strlen(s) >= sizeof buf)
		return mgpu_err(MGPU_EINVAL, "%s: '%s' is too long", opt, s);
	snprintf(buf, sizeof buf, "%s", s);
	*n = 0;
	if (!buf[0] || buf[0] == ',' || buf[strlen(buf) - 1] == ',' || strstr(buf, ",,"))
		return mgpu_err(MGPU_EINVAL, "%s: '%s' is not a list of sizes", opt, s);
	for (p = strtok_r(buf, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
		if (*n == max)
			return mgpu_err(MGPU_EINVAL, "%s: more than %d sizes", opt, max);
		MGPU_TRY(one_size(opt, p, max_bytes, &out[(*n)++]));
	}
	return 0;
}

int mgpu_bench_sizes(const char *opt, const char *s, size_t max_bytes, size_t *out, int max,
		     int *n)
{
	const char *colon = strchr(s, ':');
	char lo_s[64];
	size_t lo, hi, v;

	if (!colon)
		return size_list(opt, s, max_bytes, out, max, n);
	if ((size_t)(colon - s) >= sizeof lo_s)
		return mgpu_err(MGPU_EINVAL, "%s: '%s' is not LO:HI", opt, s);
	memcpy(lo_s, s, (size_t)(colon - s));
	lo_s[colon - s] = '\0';
	MGPU_TRY(one_size(opt, lo_s, max_bytes, &lo));
	MGPU_TRY(one_size(opt, colon + 1, max_bytes, &hi));
	if (hi < lo)
		return mgpu_err(MGPU_EINVAL, "%s: '%s': the upper size is below the lower", opt, s);
	*n = 0;
	for (v = lo; v <= hi; v *= 2) {
		if (*n == max)
			return mgpu_err(MGPU_EINVAL, "%s: '%s' makes more than %d sizes", opt, s, max);
		out[(*n)++] = v;
		if (v > hi / 2)
			break;
	}
	return 0;
}

int mgpu_bench_tolerance(const char *opt, const char *s, double *frac)
{
	char buf[64], *end;
	size_t len = strlen(s);
	double v;

	if (len == 0 || len >= sizeof buf)
		return mgpu_err(MGPU_EINVAL, "%s: '%s' is not a percentage", opt, s);
	snprintf(buf, sizeof buf, "%s", s);
	if (buf[len - 1] == '%')
		buf[--len] = '\0';
	v = strtod(buf, &end);
	if (len == 0 || *end != '\0' || buf[0] == ' ' || !isfinite(v))
		return mgpu_err(MGPU_EINVAL, "%s: '%s' is not a percentage", opt, s);
	if (v < 0 || v > 100)
		return mgpu_err(MGPU_EINVAL, "%s: %s is out of range [0%%, 100%%]", opt, s);
	*frac = v / 100;
	return 0;
}

int mgpu_bench_slower(double old_v, double new_v, double tol)
{
	if (!isfinite(old_v) || !isfinite(new_v))
		return 0;
	return new_v < old_v * (1 - tol);
}

int mgpu_bench_bigger(double old_v, double new_v, double tol)
{
	if (!isfinite(old_v) || !isfinite(new_v))
		return 0;
	return new_v > old_v * (1 + tol);
}
