/*
 * allreduce.c - one rank's side of the all-reduce size sweep, cpu (shared
 * memory), nccl and mpi backends (see allreduce.h).
 */
#include "bench/allreduce.h"

#include <stdlib.h> /* malloc, free */
#include <string.h> /* memcpy, memset */

#include "bench/stats.h" /* mgpu_bench_median, mgpu_bench_busbw_factor */
#include "comm/mpi.h"    /* mgpu_mpi_* */
#include "comm/nccl.h"   /* mgpu_nccl_* */
#include "core/cancel.h" /* mgpu_cancel_check */
#include "core/clock.h"  /* mgpu_now_us */
#include "core/err.h"    /* mgpu_err */
#include "ops/ops.h"     /* mgpu_ops_find, struct mgpu_dev */

#define WARMUP_OPS 3
#define MAX_ITERS 1000

/* The backend's state on this rank. */
struct ar_ctx {
	struct mgpu_shm *s;   /* cpu, nccl: barriers and counts go through it */
	struct mgpu_mpi *mpi; /* mpi: barriers and counts go through MPI */
	int backend, rank, world;
	float *host;          /* the data: the shm slot (cpu) or a buffer of ours */
	struct mgpu_dev dev;  /* nccl */
	float *dbuf;
	size_t dbytes;
	void *nccl;
};

/* Rank r's element i: small integers, so every sum is exact in float. */
static float value(int r, size_t i)
{
	return (float)((i * 7 + (size_t)r * 13) % 61) - 30.0f;
}

size_t mgpu_bench_ar_nparams(const struct mgpu_bench_ar_cfg *c)
{
	size_t n = 32; /* room for NCCL's 128-byte unique id */
	int i;

	for (i = 0; i < c->nsizes; i++)
		n = c->sizes[i] / sizeof(float) > n ? c->sizes[i] / sizeof(float) : n;
	return n;
}

static int nccl_open(struct ar_ctx *x, size_t maxn)
{
	const struct mgpu_ops *ops = mgpu_ops_find("cuda");
	struct mgpu_shm *s = x->s;
	uint8_t id[128];

	if (!ops)
		return mgpu_err(MGPU_EUNSUP, "nccl: this build has no CUDA backend");
	MGPU_TRY(mgpu_dev_open(&x->dev, ops, s->rank));
	x->dbytes = maxn * sizeof(float);
	MGPU_TRY(mgpu_dev_alloc(&x->dev, (void **)&x->dbuf, x->dbytes));
	x->host = malloc(x->dbytes);
	if (!x->host)
		return mgpu_err(MGPU_ENOMEM, "nccl: out of host memory (%zu bytes)", x->dbytes);
	if (s->rank == 0) {
		MGPU_TRY(mgpu_nccl_unique_id(id));
		memcpy(s->g[0], id, sizeof id);
	}
	MGPU_TRY(mgpu_shm_barrier(s));
	memcpy(id, s->g[0], sizeof id);
	MGPU_TRY(mgpu_shm_barrier(s));
	return mgpu_nccl_open(&x->nccl, &x->dev, s->rank, s->world, id, s->timeout_ms);
}

static void ctx_close(struct ar_ctx *x)
{
	if (x->backend == MGPU_AR_MPI)
		free(x->host);
	if (x->backend != MGPU_AR_NCCL)
		return;
	if (x->nccl)
		mgpu_nccl_close(x->nccl);
	if (x->dbuf)
		mgpu_dev_free(&x->dev, x->dbuf, x->dbytes);
	if (x->dev.ops)
		mgpu_dev_close(&x->dev);
	free(x->host);
}

static void fill(struct ar_ctx *x, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		x->host[i] = value(x->rank, i);
}

static int barrier(struct ar_ctx *x)
{
	return x->mpi ? mgpu_mpi_barrier(x->mpi) : mgpu_shm_barrier(x->s);
}

static int sum_f64(struct ar_ctx *x, double *v)
{
	return x->mpi ? mgpu_mpi_allreduce_f64(x->mpi, v, 1) : mgpu_shm_allreduce_f64(x->s, v, 1);
}

/* One timed all-reduce of n floats (data filled, barrier passed). */
static int op(struct ar_ctx *x, size_t n, double *us)
{
	double t0;

	if (x->backend == MGPU_AR_CPU) {
		t0 = mgpu_now_us();
		MGPU_TRY(mgpu_shm_allreduce_slots(x->s, n));
		*us = mgpu_now_us() - t0;
		return 0;
	}
	if (x->backend == MGPU_AR_MPI) {
		t0 = mgpu_now_us();
		MGPU_TRY(mgpu_mpi_allreduce_f32(x->mpi, x->host, n));
		*us = mgpu_now_us() - t0;
		return 0;
	}
	t0 = mgpu_now_us();
	MGPU_TRY(mgpu_nccl_bucket(x->nccl, &x->dev, x->dbuf, n));
	MGPU_TRY(mgpu_nccl_wait(x->nccl, &x->dev));
	MGPU_TRY(x->dev.ops->sync(&x->dev));
	*us = mgpu_now_us() - t0;
	return 0;
}

static int load(struct ar_ctx *x, size_t n)
{
	fill(x, n);
	if (x->backend == MGPU_AR_NCCL) {
		MGPU_TRY(mgpu_dev_from_host(&x->dev, x->dbuf, x->host, n * sizeof(float)));
		MGPU_TRY(x->dev.ops->sync(&x->dev));
	}
	return barrier(x);
}

static int64_t check(struct ar_ctx *x, size_t n, int corrupt)
{
	int64_t wrong = 0;
	size_t i;
	int r;

	if (x->backend == MGPU_AR_NCCL &&
	    mgpu_dev_to_host(&x->dev, x->host, x->dbuf, n * sizeof(float)) < 0)
		return (int64_t)n;
	if (corrupt && x->rank == x->world - 1)
		x->host[n / 2] += 1.0f;
	for (i = 0; i < n; i++) {
		float want = 0;
		for (r = 0; r < x->world; r++)
			want += value(r, i);
		wrong += x->host[i] != want;
	}
	return wrong;
}

static int one_size(struct ar_ctx *x, const struct mgpu_bench_ar_cfg *c, size_t nbytes,
		    int64_t *wrong_total)
{
	double t[MAX_ITERS], us, wrong;
	size_t n = nbytes / sizeof(float);
	int iters = c->iters > 0 ? c->iters : nbytes >= ((size_t)16 << 20) ? 10 : 50, k;
	struct mgpu_bench_ar_row row = { .nbytes = nbytes, .count = n };

	iters = iters > MAX_ITERS ? MAX_ITERS : iters;
	for (k = -WARMUP_OPS; k < iters; k++) {
		/* a signal stops this rank between ops, and its failure the
		 * others (the waits only see it when a peer is slow to come) */
		MGPU_TRY(mgpu_cancel_check());
		MGPU_TRY(load(x, n));
		MGPU_TRY(op(x, n, &us));
		if (k >= 0)
			t[k] = us;
	}
	wrong = (double)check(x, n, c->corrupt);
	MGPU_TRY(sum_f64(x, &wrong));
	*wrong_total += (int64_t)wrong;
	if (x->rank != 0 || !c->on_row)
		return 0;
	row.time_us = mgpu_bench_median(t, iters);
	row.algbw_gbps = mgpu_bench_algbw_gbps(nbytes, row.time_us);
	row.busbw_gbps = row.algbw_gbps * mgpu_bench_busbw_factor(MGPU_COLL_ALLREDUCE,
								    x->world);
	row.wrong = (int64_t)wrong;
	return c->on_row(c->ctx, &row);
}

int mgpu_bench_ar_rank(struct mgpu_shm *s, const struct mgpu_bench_ar_cfg *c,
		       int64_t *wrong_total)
{
	struct ar_ctx x;
	int i, rc = 0;

	memset(&x, 0, sizeof x);
	x.s = s;
	x.rank = s->rank;
	x.world = s->world;
	x.backend = c->backend;
	x.host = s->g[s->rank];
	*wrong_total = 0;
	if (mgpu_bench_ar_nparams(c) > s->nparams) {
		rc = mgpu_err(MGPU_EINVAL, "allreduce: the segment holds %zu floats, the sweep "
			      "needs %zu", s->nparams, mgpu_bench_ar_nparams(c));
		goto out;
	}
	if (c->backend == MGPU_AR_MPI) {
		rc = mgpu_err(MGPU_EINVAL, "allreduce: the mpi backend runs through "
			      "mgpu_bench_ar_rank_mpi");
		goto out;
	}
	if (c->backend == MGPU_AR_NCCL) {
		x.host = NULL;
		MGPU_CHECK(nccl_open(&x, mgpu_bench_ar_nparams(c)));
	}
	for (i = 0; i < c->nsizes; i++)
		MGPU_CHECK(one_size(&x, c, c->sizes[i], wrong_total));
out:
	if (rc < 0)
		mgpu_shm_abort(s, 0);
	ctx_close(&x);
	return rc;
}

int mgpu_bench_ar_rank_mpi(struct mgpu_mpi *m, const struct mgpu_bench_ar_cfg *c,
			   int64_t *wrong_total)
{
	struct ar_ctx x;
	size_t n = mgpu_bench_ar_nparams(c);
	int i, rc = 0;

	memset(&x, 0, sizeof x);
	x.mpi = m;
	x.backend = MGPU_AR_MPI;
	x.rank = mgpu_mpi_world_rank(m);
	x.world = mgpu_mpi_world_size(m);
	*wrong_total = 0;
	x.host = malloc(n * sizeof(float));
	if (!x.host)
		return mgpu_err(MGPU_ENOMEM, "allreduce mpi: out of memory (%zu floats)", n);
	for (i = 0; i < c->nsizes; i++)
		MGPU_CHECK(one_size(&x, c, c->sizes[i], wrong_total));
out:
	ctx_close(&x);
	return rc;
}

int mgpu_bench_memcpy_gbps(size_t nbytes, double *gbps)
{
	char *a = malloc(nbytes), *b = malloc(nbytes);
	static volatile char sink;
	double best = 0, t0, dt;
	int k, rc = 0;

	if (!a || !b) {
		rc = mgpu_err(MGPU_ENOMEM, "memcpy bandwidth: out of memory (%zu bytes)", nbytes);
		goto out;
	}
	memset(a, 1, nbytes);
	memset(b, 2, nbytes);
	for (k = 0; k < 5; k++) {
		t0 = mgpu_now_us();
		memcpy(b, a, nbytes);
		dt = mgpu_now_us() - t0;
		sink = sink + b[(size_t)k % nbytes]; /* the copy is used: not elided */
		if (dt > 0 && (double)nbytes / dt * 1e-3 > best)
			best = (double)nbytes / dt * 1e-3;
	}
	*gbps = best;
out:
	free(a);
	free(b);
	return rc;
}
