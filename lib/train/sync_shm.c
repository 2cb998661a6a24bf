/*
 * sync_shm.c - the gradient sync strategy of CPU ranks on one node
 * (--sync-backend cpu): gradients meet in lib/comm's shared-memory segment
 * (see sync.h for modes ddp and dp).
 *
 * Shapes: a bucket is one layer's parameters [boff, boff + bcnt) of the
 * flat vectors; its shard for rank r is the r-th of world near-equal
 * slices. Buckets are processed last layer first, the order backward
 * produces them, the same order on every rank.
 */
#include "train/sync_int.h"

#include <math.h>   /* sqrt */
#include <stdio.h>  /* snprintf */
#include <stdlib.h> /* calloc, free */
#include <string.h> /* memset */
#include <unistd.h> /* getpid */

#include "comm/shm.h" /* mgpu_shm_* */
#include "core/err.h" /* mgpu_err, MGPU_TRY */
#include "ops/elem.h" /* mgpu_bf16_to_f32 */

struct shm_sync {
	struct mgpu_shm shm;
	int clip;                     /* clipping or loss scaling: update after the norm */
	int next;                     /* buckets reduced this step, in order */
	int published;                /* buckets this rank marked ready this step */
	double sumsq;                 /* of this rank's reduced shards */
	/* --grad-dtype bf16: each slot holds nparams bf16 values (in the first
	 * half of its bytes); a GPU (mode dp) rounds into dev16 first, rank 0
	 * of mode dp sums into sum32 when its gradient is device memory */
	uint16_t *dev16;
	struct mgpu_dev *dev16_dev;   /* its device: the model is gone at free */
	size_t dev16_n;
	float *sum32;
};

static struct shm_sync *priv(const struct mgpu_sync *s)
{
	return s->priv;
}

static int new_priv(struct mgpu_sync *s)
{
	s->priv = calloc(1, sizeof(struct shm_sync));
	return s->priv ? 0 : mgpu_err(MGPU_ENOMEM, "out of memory for the sync state");
}

/* What the model and optimizer of this rank use: its gradient slot, and in
 * mode ddp the node's one copy of weights and optimizer state. */
static void share_buffers(struct mgpu_sync *s)
{
	struct mgpu_shm *shm = &priv(s)->shm;

	s->shared_g = shm->g[s->rank];
	if (s->mode == MGPU_MODE_DDP) {
		s->shared_w = shm->w;
		s->shared_state[0] = shm->state[0];
		s->shared_state[1] = shm->state[1];
	}
	s->loads_state = s->rank == 0;
	s->owns_optimizer = s->mode == MGPU_MODE_DDP || s->rank == 0;
}

/* Rank 0: the segment, named after this process and the job. */
static int create(const struct mgpu_sync *s, const struct mgpu_sync_args *a,
		  struct mgpu_shm *shm, int nstate, struct mgpu_rdzv_info *info)
{
	snprintf(info->shm_name, sizeof info->shm_name, "/mgpu-%ld-%.16s", (long)getpid(),
		 a->env->token);
	return mgpu_shm_create(shm, info->shm_name, s->world, a->nparams, nstate,
			       a->timeout_ms);
}

/* After the rendezvous: rank 0 checks that everyone shares its host, the
 * others attach. */
static int join(const struct mgpu_sync *s, const struct mgpu_sync_args *a,
		struct mgpu_shm *shm, int nstate, const struct mgpu_rdzv_info *info)
{
	if (s->rank == 0 && !info->single_node) {
		/* the ranks on this host attached already: stop them now */
		mgpu_shm_abort(shm, 0);
		return mgpu_err(MGPU_EUNSUP, "sync backend cpu needs every rank on one node "
				"(some ranks run on another host): use --sync-backend nccl");
	}
	if (s->rank == 0)
		return 0;
	if (!info->single_node)
		return mgpu_err(MGPU_EUNSUP, "sync backend cpu needs every rank on one node "
				"(rank 0 runs on another host)");
	return mgpu_shm_attach(shm, info->shm_name, s->rank, s->world, a->nparams, nstate,
			       a->timeout_ms);
}

int mgpu_sync_shm_join(const struct mgpu_sync *s, const struct mgpu_sync_args *a,
		       struct mgpu_shm *shm, int nstate)
{
	struct mgpu_rdzv_info info;
	int rc;

	memset(&info, 0, sizeof info);
	rc = s->rank == 0 ? create(s, a, shm, nstate, &info) : 0;
	if (rc == 0)
		rc = mgpu_sync_rendezvous(s, a, &info);
	if (rc == 0)
		rc = join(s, a, shm, nstate, &info);
	if (rc == 0)
		rc = mgpu_shm_barrier(shm);
	/* Once everyone is attached (or on failure) the name can go: nothing
	 * outlives a crash. */
	if (s->rank == 0 && info.shm_name[0])
		mgpu_shm_unlink(info.shm_name);
	return rc;
}

static int shm_init(struct mgpu_sync *s, const struct mgpu_sync_args *a)
{
	MGPU_TRY(new_priv(s));
	MGPU_TRY(mgpu_sync_shm_join(s, a, &priv(s)->shm, a->nstate));
	share_buffers(s);
	return 0;
}

int mgpu_sync_open_dp(struct mgpu_sync *s, const struct mgpu_shm *seg, int rank)
{
	memset(s, 0, sizeof *s);
	s->mode = MGPU_MODE_DP;
	s->rank = rank;
	s->world = seg->world;
	s->loads_state = s->owns_optimizer = 1;
	s->kind = MGPU_SYNC_NONE;
	s->st = &mgpu_sync_none;
	if (seg->world == 1)
		return 0;
	MGPU_TRY(new_priv(s));
	s->kind = MGPU_SYNC_CPU;
	s->st = &mgpu_sync_shm;
	mgpu_shm_view(&priv(s)->shm, seg, rank);
	share_buffers(s);
	return 0;
}

void mgpu_sync_shard(const struct mgpu_sync *s, int b, int r, size_t *a, size_t *e)
{
	size_t off = s->boff[b], cnt = s->bcnt[b];

	*a = off + cnt * (size_t)r / (size_t)s->world;
	*e = off + cnt * (size_t)(r + 1) / (size_t)s->world;
}

static void shard(const struct mgpu_sync *s, int b, size_t *a, size_t *e)
{
	mgpu_sync_shard(s, b, s->rank, a, e);
}

/* In chunks that stay in L1: a chunk is summed whole before it is stored,
 * since dst may be g[2], which a rank-by-rank pass over dst would overwrite
 * before adding it. The loops vectorise (this file is built with -O3). */
#define SUM_CHUNK 512

void mgpu_sync_sum_slots(float *dst, const float *const *g, int world, size_t a, size_t e)
{
	float acc[SUM_CHUNK];
	size_t i, j, n;
	int r;

	for (i = a; i < e; i += n) {
		n = e - i < SUM_CHUNK ? e - i : SUM_CHUNK;
		for (j = 0; j < n; j++)
			acc[j] = world > 1 ? g[0][i + j] + g[1][i + j] : g[0][i + j];
		for (r = 2; r < world; r++)
			for (j = 0; j < n; j++)
				acc[j] += g[r][i + j];
		for (j = 0; j < n; j++)
			dst[i + j] = acc[j];
	}
}

/* dst[a, e) = sum over ranks of slot[a, e), in rank order: the same bits on
 * every rank and every run. dst may be any rank's slot: each element is
 * summed whole before it is stored. Returns the sum of squares of the
 * result. */
static double sum_slots(struct mgpu_sync *s, float *dst, size_t a, size_t e)
{
	struct shm_sync *p = priv(s);
	double sq = 0;
	size_t i;

	mgpu_sync_sum_slots(dst, (const float *const *)p->shm.g, s->world, a, e);
	if (p->clip)
		for (i = a; i < e; i++)
			sq += (double)dst[i] * dst[i];
	return sq;
}

/* The sum of squares of the slots' sum over [a, e), summed in the order
 * sum_slots uses, without storing it: the fused update does not either. */
static double sumsq_slots(const struct mgpu_sync *s, size_t a, size_t e)
{
	float *const *g = priv(s)->shm.g;
	double sq = 0;
	size_t i;
	float x;
	int r;

	for (i = a; i < e; i++) {
		for (x = g[0][i], r = 1; r < s->world; r++)
			x += g[r][i];
		sq += (double)x * x;
	}
	return sq;
}

void mgpu_sync_sum_slots_bf16(float *dst, const uint16_t *const *g, int world, size_t a,
			      size_t e)
{
	size_t i;
	float x;
	int r;

	for (i = a; i < e; i++) {
		for (x = mgpu_bf16_to_f32(g[0][i]), r = 1; r < world; r++)
			x += mgpu_bf16_to_f32(g[r][i]);
		dst[i] = x;
	}
}

/* The slots as bf16 arrays (--grad-dtype bf16). */
static const uint16_t *const *slots16(const struct mgpu_sync *s)
{
	return (const uint16_t *const *)priv(s)->shm.g;
}

/* bf16: the shard's fp32 sum goes to this rank's own gradient (its part
 * of the bucket is published already), which the optimizer then reads. */
static int ddp_process_bf16(struct mgpu_sync *s, size_t a, size_t e)
{
	struct shm_sync *p = priv(s);
	float *g = s->model->g;
	size_t i;

	mgpu_sync_sum_slots_bf16(g, slots16(s), s->world, a, e);
	for (i = a; i < e; i++)
		p->sumsq += (double)g[i] * g[i];
	return p->clip ? 0 : mgpu_optim_step_range(s->opt, s->lr, 1.0f, a, e);
}

/* Without clipping, sum and update are one pass over the shard; with it
 * the sum is kept until the global norm is known. */
static int ddp_process(struct mgpu_sync *s, int b)
{
	struct shm_sync *p = priv(s);
	size_t a, e;

	shard(s, b, &a, &e);
	if (s->grad_prec == MGPU_PREC_BF16)
		return ddp_process_bf16(s, a, e);
	if (!p->clip) {
		p->sumsq += sumsq_slots(s, a, e);
		return mgpu_optim_step_range_sum(s->opt, s->lr, 1.0f, a, e,
						 (const float *const *)p->shm.g, s->world);
	}
	p->sumsq += sum_slots(s, p->shm.g[s->rank], a, e);
	return 0;
}

/* Reduce, in order, every bucket this rank has published that all ranks
 * have finished; with block, wait for all of them. */
static int ddp_progress(struct mgpu_sync *s, int block)
{
	struct shm_sync *p = priv(s);

	return mgpu_sync_drain_buckets(s, &p->shm, &p->next, p->published, block, ddp_process);
}

/* bf16: this rank's gradient [off, off + cnt), rounded, into its slot. */
static int publish_bf16(struct mgpu_sync *s, size_t off, size_t cnt)
{
	struct shm_sync *p = priv(s);
	struct mgpu_dev *dev = s->model->dev;
	uint16_t *slot = (uint16_t *)p->shm.g[s->rank];

	if (mgpu_ops_can(dev->ops, MGPU_CAP_HOST_MEMORY))
		return dev->ops->f32_to_bf16(dev, slot + off, s->model->g + off, cnt);
	MGPU_TRY(dev->ops->f32_to_bf16(dev, p->dev16 + off, s->model->g + off, cnt));
	return mgpu_dev_to_host(dev, slot + off, p->dev16 + off, cnt * sizeof *slot);
}

static int shm_reduce_bucket(struct mgpu_sync *s, int layer, size_t off, size_t cnt)
{
	struct shm_sync *p = priv(s);
	struct mgpu_dev *dev = s->model->dev;

	if (s->grad_prec == MGPU_PREC_BF16)
		MGPU_TRY(publish_bf16(s, off, cnt));
	else if (p->shm.g[s->rank] != s->model->g)
		MGPU_TRY(mgpu_dev_to_host(dev, p->shm.g[s->rank] + off, s->model->g + off,
					  cnt * sizeof(float)));
	mgpu_shm_bucket_ready(&p->shm, layer);
	p->published++;
	return s->mode == MGPU_MODE_DDP ? ddp_progress(s, 0) : 0;
}

static int shm_bind(struct mgpu_sync *s)
{
	struct shm_sync *p = priv(s);
	struct mgpu_model *m = s->model;

	p->clip = mgpu_optim_defers(s->opt);
	if (s->mode == MGPU_MODE_DDP && !mgpu_ops_can(m->dev->ops, MGPU_CAP_HOST_MEMORY))
		return mgpu_err(MGPU_EUNSUP, "sync backend cpu with mode ddp needs CPU ranks; "
				"use --sync-backend nccl or --mode dp for GPUs");
	if (s->grad_prec == MGPU_PREC_BF16 &&
	    !mgpu_ops_can(m->dev->ops, MGPU_CAP_HOST_MEMORY)) {
		MGPU_TRY(mgpu_dev_alloc(m->dev, (void **)&p->dev16, m->nparams * sizeof *p->dev16));
		p->dev16_dev = m->dev;
		p->dev16_n = m->nparams;
		p->sum32 = malloc(m->nparams * sizeof *p->sum32);
		if (!p->sum32)
			return mgpu_err(MGPU_ENOMEM, "out of memory for the gradient sum");
	}
	/* Replicas start from rank 0's weights. */
	if (s->rank == 0 && p->shm.w != m->w)
		MGPU_TRY(mgpu_dev_to_host(m->dev, p->shm.w, m->w, m->nparams * sizeof(float)));
	MGPU_TRY(mgpu_shm_barrier(&p->shm));
	if (s->rank != 0 && p->shm.w != m->w)
		MGPU_TRY(mgpu_dev_from_host(m->dev, m->w, p->shm.w,
					    m->nparams * sizeof(float)));
	return 0;
}

static void shm_begin(struct mgpu_sync *s)
{
	struct shm_sync *p = priv(s);

	/* The sharded updates run inside backward: count the step before it. */
	if (s->mode == MGPU_MODE_DDP)
		s->opt->t++;
	p->next = 0;
	p->published = 0;
	p->sumsq = 0;
}

static int ddp_step(struct mgpu_sync *s)
{
	struct shm_sync *p = priv(s);
	double v;
	float scale;
	int i;
	size_t a, e;

	MGPU_TRY(ddp_progress(s, 1));
	if (!p->clip)
		return 0;
	/* (the fused updates above already counted this step: see begin) */
	v = p->sumsq;
	MGPU_TRY(mgpu_shm_allreduce_f64(&p->shm, &v, 1));
	scale = mgpu_optim_update_factor(s->opt, sqrt(v), 1.0f);
	if (s->opt->skipped) { /* an overflow (fp16): no update, and no step counted */
		s->opt->t--;
		return 0;
	}
	for (i = 0; i < s->nbuckets; i++) {
		shard(s, mgpu_sync_bucket_at(s, i), &a, &e);
		MGPU_TRY(mgpu_optim_step_range(s->opt, s->lr, scale, a, e));
	}
	return 0;
}

/* Rank 0 sums every slot into its gradient, steps, publishes the weights. */
static int dp_step_master(struct mgpu_sync *s)
{
	struct shm_sync *p = priv(s);
	struct mgpu_model *m = s->model;
	int i, b;

	float *sum = s->grad_prec != MGPU_PREC_BF16 ? p->shm.g[0] : p->sum32 ? p->sum32 : m->g;

	for (i = 0; i < s->nbuckets; i++) {
		b = mgpu_sync_bucket_at(s, i);
		MGPU_TRY(mgpu_shm_bucket_wait(&p->shm, b));
		if (s->grad_prec == MGPU_PREC_BF16)
			mgpu_sync_sum_slots_bf16(sum, slots16(s), s->world, s->boff[b],
						 s->boff[b] + s->bcnt[b]);
		else
			sum_slots(s, sum, s->boff[b], s->boff[b] + s->bcnt[b]);
	}
	if (m->g != sum)
		MGPU_TRY(mgpu_dev_from_host(m->dev, m->g, sum, m->nparams * sizeof(float)));
	MGPU_TRY(mgpu_optim_step(s->opt, s->lr, 1.0f));
	return mgpu_dev_to_host(m->dev, p->shm.w, m->w, m->nparams * sizeof(float));
}

/* This rank's share of the squared norm of the averaged gradient: unclipped
 * ddp ranks each know their shards' part; otherwise rank 0 knows the whole
 * (the others know it too, or in mode dp do not). */
static double norm2_share(const struct mgpu_sync *s)
{
	if (s->mode == MGPU_MODE_DDP && !priv(s)->clip)
		return priv(s)->sumsq;
	if (s->mode == MGPU_MODE_DP) /* rank 0 stepped with mgpu_optim_step */
		return mgpu_sync_norm2_share(s);
	return s->rank == 0 ? s->opt->last_norm * s->opt->last_norm : 0.0;
}

static int shm_finish(struct mgpu_sync *s, double *vals, int n)
{
	struct mgpu_model *m = s->model;

	if (s->mode == MGPU_MODE_DDP) {
		MGPU_TRY(ddp_step(s));
		return mgpu_sync_close_step(s, vals, n, norm2_share(s));
	}
	if (s->rank == 0)
		MGPU_TRY(dp_step_master(s));
	MGPU_TRY(mgpu_sync_close_step(s, vals, n, norm2_share(s)));
	if (s->rank != 0)
		MGPU_TRY(mgpu_dev_from_host(m->dev, m->w, priv(s)->shm.w,
					 m->nparams * sizeof(float)));
	return 0;
}

static int shm_allreduce_f64(struct mgpu_sync *s, double *v, int n)
{
	return mgpu_shm_allreduce_f64(&priv(s)->shm, v, n);
}

/* Through a host buffer a chunk at a time, where the device is a GPU
 * (mode dp): one read and one copy back per chunk. */
int mgpu_sync_shm_sum_f32(struct mgpu_dev *dev, struct mgpu_shm *shm, float *v, size_t n)
{
	float buf[MGPU_SHM_MAX_FLOATS];
	size_t k;

	if (mgpu_ops_can(dev->ops, MGPU_CAP_HOST_MEMORY))
		return mgpu_shm_allreduce_f32(shm, v, n);
	for (; n > 0; n -= k, v += k) {
		k = n < MGPU_SHM_MAX_FLOATS ? n : MGPU_SHM_MAX_FLOATS;
		MGPU_TRY(mgpu_dev_to_host(dev, buf, v, k * sizeof *buf));
		MGPU_TRY(mgpu_shm_allreduce_f32(shm, buf, k));
		MGPU_TRY(mgpu_dev_from_host(dev, v, buf, k * sizeof *buf));
	}
	return 0;
}

static int shm_allreduce_f32(struct mgpu_sync *s, float *v, size_t n)
{
	return mgpu_sync_shm_sum_f32(s->model->dev, &priv(s)->shm, v, n);
}

static void shm_abort(struct mgpu_sync *s, int rc)
{
	mgpu_shm_abort(&priv(s)->shm, rc == MGPU_ECLOSED);
}

static void shm_free(struct mgpu_sync *s)
{
	struct shm_sync *p = priv(s);

	if (!p)
		return;
	if (p->dev16)
		mgpu_dev_free(p->dev16_dev, p->dev16, p->dev16_n * sizeof *p->dev16);
	free(p->sum32);
	mgpu_shm_close(&p->shm);
	free(p);
}

const struct mgpu_sync_strategy mgpu_sync_shm = {
	.name = "cpu",
	.init = shm_init,
	.bind = shm_bind,
	.begin = shm_begin,
	.reduce_bucket = shm_reduce_bucket,
	.finish = shm_finish,
	.allreduce_f64 = shm_allreduce_f64,
	.allreduce_f32 = shm_allreduce_f32,
	.cancel = shm_abort,
	.free = shm_free,
};
