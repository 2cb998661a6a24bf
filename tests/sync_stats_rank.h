/*
 * sync_stats_rank.h - one rank of a job that sums BatchNorm-like
 * statistics with mgpu_sync_stats (--sync-bn) in the middle of forward and
 * backward, between the gradient buckets, as a conv net does; shared by
 * tests/unit/test_sync_stats.c (ranks forked on one host) and
 * tests/drv/stats_drv.c (ranks on the network-namespace hosts of
 * tests/cli/50b-sync-bn-nodes.sh).
 *
 * Every value is a small multiple of 1/16, so every sum is exact whatever
 * its order: a rank checks its sums for equality with the ones it computes
 * for the whole world, and, after each step, its weights against one SGD
 * step on the sum of the ranks' gradients (the buckets were reduced
 * correctly around the statistics). The sums go through the model's hook
 * as a BatchNorm's would (mgpu_model_sum_stats, bound by
 * mgpu_sync_bind_bn), and the model has BatchNorm-like buffers, which
 * every rank must hold as rank 0 set them once bound. A mismatch is an
 * MGPU_EINVAL error naming the step, the call and the element.
 */
#ifndef MGPU_TESTS_SYNC_STATS_RANK_H
#define MGPU_TESTS_SYNC_STATS_RANK_H

#include <math.h>   /* fabs */
#include <stdlib.h> /* malloc, free */
#include <string.h> /* memcpy, memset */
#include <time.h>   /* nanosleep */

#include "core/err.h"    /* mgpu_err, MGPU_TRY */
#include "model/model.h" /* struct mgpu_model */
#include "model/spec.h"  /* mgpu_spec_parse */
#include "train/optim.h" /* struct mgpu_optim */
#include "train/sync.h"  /* mgpu_sync_* */

#define SR_SPEC "mlp:4-3-3-3-2" /* four layers: four buckets */
#define SR_LR 0.5f
#define SR_MAXP 64

/* What one rank does. */
struct sr_job {
	struct mgpu_rank_env env;      /* mode ddp */
	const struct mgpu_shm *dp_seg; /* mode dp: the threads' segment, else NULL */
	int kind;                      /* enum mgpu_sync_kind asked for */
	int steps;
	int skew_ms;                   /* non-leader ranks of the last node nap this
					* long before each bucket: their leader
					* then meets a statistics sum with buckets
					* not yet reduced that other leaders have */
	long sums;                     /* statistics sums checked */
};

/* The sizes of the calls: one value, a prime, one past a shm chunk, more
 * than two chunks. */
static const size_t sr_sizes[] = { 1, 7, 513, 1100 };
#define SR_NSIZES (sizeof sr_sizes / sizeof sr_sizes[0])

/* Rank r's value i of call c of step t: a multiple of 1/16 in [-4, 4). */
static float sr_val(int r, int t, int c, size_t i)
{
	return (float)((r * 37 + t * 11 + c * 5 + (long)i * 3) % 128 - 64) / 16.0f;
}

static float sr_grad(int r, int t, size_t i)
{
	return (float)((r * 7 + t * 3 + (long)i * 5) % 17 - 8) / 16.0f;
}

/* Call c of step t: sum this rank's values and check them. */
static int sr_sum(struct sr_job *j, struct mgpu_sync *s, float *v, int t, int c)
{
	size_t n = sr_sizes[c % SR_NSIZES], i;
	float want;
	int r;

	for (i = 0; i < n; i++)
		v[i] = sr_val(s->rank, t, c, i);
	MGPU_TRY(mgpu_model_sum_stats(s->model, c, v, n));
	for (i = 0; i < n; i++) {
		for (want = 0, r = 0; r < s->world; r++)
			want += sr_val(r, t, c, i);
		if (v[i] != want)
			return mgpu_err(MGPU_EINVAL, "rank %d, step %d, sum %d: element %zu of %zu "
					"is %g, want %g", s->rank, t, c, i, n, (double)v[i],
					(double)want);
	}
	j->sums++;
	return 0;
}

static void sr_nap(const struct sr_job *j, const struct mgpu_sync *s)
{
	struct timespec ts = { j->skew_ms / 1000, (long)(j->skew_ms % 1000) * 1000000L };

	if (j->skew_ms > 0 && j->env.local_rank != 0 && j->env.node == j->env.nnodes - 1 &&
	    s->world > 1)
		nanosleep(&ts, NULL);
}

/* One optimizer step: a sum per layer in forward, then backward hands
 * each layer's bucket over (last first) and sums again below it. */
static int sr_step(struct sr_job *j, struct mgpu_sync *s, struct mgpu_model *m, float *v,
		   int t)
{
	int L = m->nbuckets, l, c = 0, r;
	float w0[SR_MAXP], want;
	size_t i;

	for (l = 0; l < L; l++)
		MGPU_TRY(sr_sum(j, s, v, t, c++));
	memcpy(w0, m->w, m->nparams * sizeof *w0);
	mgpu_sync_micro(s, 1, SR_LR);
	for (i = 0; i < m->nparams; i++)
		m->g[i] = sr_grad(s->rank, t, i);
	for (l = L - 1; l >= 0; l--) {
		sr_nap(j, s);
		MGPU_TRY(m->grad_ready(m->grad_ctx, l, s->boff[l], s->bcnt[l]));
		if (l > 0)
			MGPU_TRY(sr_sum(j, s, v, t, c++));
	}
	MGPU_TRY(mgpu_sync_step(s, NULL, 0));
	for (i = 0; i < m->nparams; i++) {
		for (want = 0, r = 0; r < s->world; r++)
			want += sr_grad(r, t, i);
		want = w0[i] - SR_LR * want;
		if (fabs((double)m->w[i] - want) > 1e-6)
			return mgpu_err(MGPU_EINVAL, "rank %d, step %d: weight %zu is %g, want %g "
					"(the gradient sum around the statistics is wrong)",
					s->rank, t, i, (double)m->w[i], (double)want);
	}
	return 0;
}

#define SR_NBUF 9 /* a BatchNorm of 4 channels: running_mean, running_var, count */

/* Rank r's buffer values before binding. */
static float sr_buf(int r, int i)
{
	return (float)(100 * r + i) / 4.0f;
}

/* The buffers of a BatchNorm, set to this rank's values. */
static int sr_buffers(struct mgpu_model *m, int rank)
{
	float h[SR_NBUF];
	int i;

	mgpu_model_add_buffer(m, "0.bn.running_mean", 4, 0);
	mgpu_model_add_buffer(m, "0.bn.running_var", 4, 0);
	mgpu_model_add_buffer(m, "0.bn.num_batches_tracked", 1, 0);
	MGPU_TRY(mgpu_model_alloc(m, &m->buf, m->nbufvals * sizeof(float)));
	for (i = 0; i < SR_NBUF; i++)
		h[i] = sr_buf(rank, i);
	return mgpu_model_set_buffers(m, h);
}

/* After binding: rank 0's buffers on every rank. */
static int sr_check_buffers(struct mgpu_model *m, int rank)
{
	float h[SR_NBUF];
	int i;

	MGPU_TRY(mgpu_model_get_buffers(m, h));
	for (i = 0; i < SR_NBUF; i++)
		if (h[i] != sr_buf(0, i))
			return mgpu_err(MGPU_EINVAL, "rank %d: buffer value %d is %g, rank 0's %g",
					rank, i, (double)h[i], (double)sr_buf(0, i));
	return 0;
}

/* The whole job of this rank; 0 when every sum and step checked out. */
static int sr_run(struct sr_job *j)
{
	struct mgpu_optim_cfg oc = { .kind = MGPU_OPT_SGD };
	struct mgpu_spec spec;
	struct mgpu_dev dev;
	struct mgpu_model m;
	struct mgpu_optim o;
	struct mgpu_sync s;
	float *w, *g, *s0, *s1, *v = NULL;
	int rc, t, dev_open = 0, have_m = 0, have_o = 0;

	memset(&s, 0, sizeof s);
	if (!(v = malloc(2048 * sizeof *v)))
		return mgpu_err(MGPU_ENOMEM, "out of memory");
	rc = mgpu_spec_parse(&spec, SR_SPEC, "test");
	if (rc == 0 && (rc = mgpu_dev_open(&dev, mgpu_ops_find("cpu"), 0)) == 0)
		dev_open = 1;
	if (rc == 0)
		rc = j->dp_seg ? mgpu_sync_open_dp(&s, j->dp_seg, j->env.rank) :
				 mgpu_sync_open(&s, &j->env, j->kind, mgpu_model_count(&spec),
						mgpu_optim_nstate_for(&oc), &dev, 20000);
	if (rc == 0) /* unbound: refused, and on one rank there is nothing to do */
		rc = mgpu_sync_stats(&s, v, 3) == (s.world > 1 ? MGPU_EINVAL : 0) ? 0 :
			mgpu_err(MGPU_EINVAL, "a sum before binding was not refused");
	if (rc == 0) {
		mgpu_sync_model_buffers(&s, 1, &w, &g, &s0, &s1);
		if ((rc = mgpu_model_create_ext(&m, &spec, &dev, 1, w, g)) == 0)
			have_m = 1;
	}
	if (rc == 0)
		rc = sr_buffers(&m, j->env.rank);
	if (rc == 0 && (rc = mgpu_optim_create_ext(&o, &m, &oc, s0, s1)) == 0)
		have_o = 1;
	if (rc == 0 && mgpu_sync_loads_state(&s))
		rc = mgpu_model_init(&m, 5);
	if (rc == 0)
		rc = mgpu_sync_bind(&s, &m, &o);
	if (rc == 0)
		rc = sr_check_buffers(&m, j->env.rank);
	if (rc == 0)
		rc = mgpu_sync_bind_bn(&s, &m);
	for (t = 0; rc == 0 && t < j->steps; t++)
		rc = sr_step(j, &s, &m, v, t);
	if (rc < 0)
		mgpu_sync_abort(&s, rc);
	if (have_o)
		mgpu_optim_free(&o);
	if (have_m)
		mgpu_model_free(&m);
	mgpu_sync_close(&s);
	if (dev_open)
		mgpu_dev_close(&dev);
	free(v);
	return rc;
}

#endif
