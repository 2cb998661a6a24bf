/*
 * allreduce.c - shared-memory all-reduce benchmark, nccl-tests style.
 *
 * usage: allreduce [RANKS [MIN_BYTES [MAX_BYTES]]]   (defaults 2, 4K, 256M)
 * Forks RANKS processes on one segment; for each size (doubling) runs the
 * all-reduce of mgpu_shm_allreduce_slots, reports the median time per op,
 * algbw = bytes / time and busbw = algbw x 2(n-1)/n, and counts wrong
 * elements against the exact sums of seeded small integers (any wrong
 * element: exit 1). A last row gives this machine's memcpy bandwidth, the
 * ceiling of a shared-memory copy.
 */
#include <stdio.h>    /* printf */
#include <stdlib.h>   /* atoi, qsort */
#include <string.h>   /* memcpy */
#include <sys/wait.h> /* waitpid */
#include <time.h>     /* clock_gettime */
#include <unistd.h>   /* fork, getpid */

#include "core/cli.h"  /* mgpu_cli_size */
#include "core/err.h"  /* mgpu_errmsg */
#include "dist/shm.h"  /* struct mgpu_shm */

static double now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Rank r's element i: small integers, so every sum is exact in float. */
static float value(int r, size_t i)
{
	return (float)((i * 7 + (size_t)r * 13) % 61) - 30.0f;
}

static long check(const struct mgpu_shm *s, size_t n)
{
	const float *g = s->g[s->rank];
	long wrong = 0;
	size_t i;
	int r;

	for (i = 0; i < n; i++) {
		float want = 0;
		for (r = 0; r < s->world; r++)
			want += value(r, i);
		wrong += g[i] != want;
	}
	return wrong;
}

static int one_size(struct mgpu_shm *s, size_t n, double *med_us, long *wrong)
{
	double t[50];
	int reps = n >= (1u << 24) ? 10 : 50, k, r = s->rank;
	size_t i;

	for (k = -3; k < reps; k++) {
		for (i = 0; i < n; i++)
			s->g[r][i] = value(r, i);
		MGPU_TRY(mgpu_shm_barrier(s));
		double t0 = now_us();
		MGPU_TRY(mgpu_shm_allreduce_slots(s, n));
		if (k >= 0)
			t[k] = now_us() - t0;
	}
	*wrong = check(s, n);
	qsort(t, (size_t)reps, sizeof t[0], cmp_d);
	*med_us = t[reps / 2];
	return 0;
}

static double memcpy_gbps(size_t nbytes)
{
	char *a = malloc(nbytes), *b = malloc(nbytes);
	double best = 0, t0, dt;
	int k;

	if (!a || !b)
		return 0;
	memset(a, 1, nbytes);
	memset(b, 2, nbytes);
	for (k = 0; k < 5; k++) {
		t0 = now_us();
		memcpy(b, a, nbytes);
		dt = now_us() - t0;
		if (best == 0 || nbytes / dt * 1e-3 > best)
			best = (double)nbytes / dt * 1e-3;
	}
	free(a);
	free(b);
	return best;
}

static int run_rank(struct mgpu_shm *s, size_t lo, size_t hi)
{
	double us, alg;
	long wrong, bad = 0;
	size_t bytes;

	for (bytes = lo; bytes <= hi; bytes *= 2) {
		MGPU_TRY(one_size(s, bytes / sizeof(float), &us, &wrong));
		bad += wrong;
		if (s->rank != 0)
			continue;
		alg = (double)bytes / us * 1e-3;
		printf("shm\t%d\t%zu\t%zu\t%.2f\t%.3f\t%.3f\t%ld\n", s->world, bytes,
		       bytes / sizeof(float), us, alg, alg * 2.0 * (s->world - 1) / s->world,
		       wrong);
		fflush(stdout);
	}
	return bad ? 1 : 0;
}

int main(int argc, char **argv)
{
	unsigned long long lo = 4096, hi = 256ull << 20;
	int world = argc > 1 ? atoi(argv[1]) : 2, r, st, bad = 0;
	char name[64];
	struct mgpu_shm s;
	pid_t pid[64];

	if (world < 1 || world > 64 || (argc > 2 && mgpu_cli_size("MIN", argv[2], 1ull << 34, &lo)) ||
	    (argc > 3 && mgpu_cli_size("MAX", argv[3], 1ull << 34, &hi)) || lo < 4 || hi < lo) {
		fprintf(stderr, "usage: allreduce [RANKS [MIN_BYTES [MAX_BYTES]]]\n");
		return 2;
	}
	snprintf(name, sizeof name, "/mgpu-bench-%ld", (long)getpid());
	if (mgpu_shm_create(&s, name, world, hi / sizeof(float), 0, 60000) < 0) {
		fprintf(stderr, "allreduce: %s\n", mgpu_errmsg());
		return 1;
	}
	printf("backend\tranks\tsize_bytes\tcount\ttime_us\talgbw_gbps\tbusbw_gbps\twrong\n");
	fflush(stdout);
	for (r = 1; r < world; r++) {
		pid[r] = fork();
		if (pid[r] == 0) {
			struct mgpu_shm c;
			if (mgpu_shm_attach(&c, name, r, world, hi / sizeof(float), 0, 60000) < 0)
				_exit(1);
			_exit(run_rank(&c, lo, hi) ? 1 : 0);
		}
	}
	bad = run_rank(&s, lo, hi);
	for (r = 1; r < world; r++)
		if (waitpid(pid[r], &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
			bad = 1;
	mgpu_shm_unlink(name);
	printf("memcpy\t1\t%d\tNA\tNA\t%.3f\tNA\t0\n", 64 << 20, memcpy_gbps(64u << 20));
	return bad;
}
