/*
 * sync.c - gradient synchronisation strategies (see sync.h).
 *
 * Shapes: a bucket is one layer's parameters [boff, boff + bcnt) of the
 * flat vectors; its shard for rank r is the r-th of world near-equal
 * slices. Buckets are processed last layer first, the order backward
 * produces them, the same order on every rank.
 */
#include "dist/sync.h"

#include <math.h>   /* sqrt */
#include <stdio.h>  /* snprintf */
#include <string.h> /* memcpy */
#include <unistd.h> /* getpid, close */

#include "core/err.h"   /* mgpu_err, MGPU_TRY */
#include "dist/nccl.h"  /* mgpu_nccl_* */
#include "dist/rdzv.h"  /* mgpu_rdzv_* */

/* Rank 0: make what the backend needs, then admit the other ranks. */
static int open_root(struct mgpu_sync *s, const struct mgpu_rank_env *env, size_t nparams,
		     int nstate, int timeout_ms, struct mgpu_rdzv_info *info)
{
	int fd = env->listen_fd, port = env->port, rc;

	if (fd < 0)
		MGPU_TRY(mgpu_rdzv_listen(env->addr, &port, &fd));
	memset(info, 0, sizeof *info);
	if (s->kind == MGPU_SYNC_CPU) {
		snprintf(info->shm_name, sizeof info->shm_name, "/mgpu-%ld-%.16s",
			 (long)getpid(), env->token);
		rc = mgpu_shm_create(&s->shm, info->shm_name, s->world, nparams, nstate,
				     timeout_ms);
	} else {
		rc = mgpu_nccl_unique_id(info->nccl_id);
	}
	if (rc == 0)
		rc = mgpu_rdzv_serve(fd, s->world, env->local_world, env->token, info, timeout_ms);
	close(fd);
	mgpu_rdzv_close_leaders(info);
	if (rc == 0 && s->kind == MGPU_SYNC_CPU && !info->single_node) {
		/* the ranks on this host attached already: stop them now */
		mgpu_shm_abort(&s->shm, 0);
		rc = mgpu_err(MGPU_EUNSUP, "sync backend cpu needs every rank on one node "
			      "(some ranks run on another host): use --sync-backend nccl");
	}
	return rc;
}

static int open_peer(struct mgpu_sync *s, const struct mgpu_rank_env *env, size_t nparams,
		     int nstate, int timeout_ms, struct mgpu_rdzv_info *info)
{
	MGPU_TRY(mgpu_rdzv_join(env->addr, env->port, s->rank, s->world, env->local_world,
				env->token, info, timeout_ms));
	mgpu_rdzv_close_leaders(info); /* for the node leaders' strategy only */
	if (s->kind != MGPU_SYNC_CPU)
		return 0;
	if (!info->single_node)
		return mgpu_err(MGPU_EUNSUP, "sync backend cpu needs every rank on one node "
				"(rank 0 runs on another host)");
	return mgpu_shm_attach(&s->shm, info->shm_name, s->rank, s->world, nparams, nstate,
			       timeout_ms);
}

int mgpu_sync_open(struct mgpu_sync *s, const struct mgpu_rank_env *env, int kind,
		   size_t nparams, int nstate, struct mgpu_dev *dev, int timeout_ms)
{
	struct mgpu_rdzv_info info;
	int rc;

	memset(s, 0, sizeof *s);
	memset(&info, 0, sizeof info);
	s->mode = MGPU_MODE_DDP;
	s->rank = env->rank;
	s->world = env->world;
	s->kind = env->world > 1 ? kind : MGPU_SYNC_NONE;
	if (s->kind == MGPU_SYNC_NONE)
		return 0;
	rc = s->rank == 0 ? open_root(s, env, nparams, nstate, timeout_ms, &info) :
			    open_peer(s, env, nparams, nstate, timeout_ms, &info);
	if (rc == 0 && s->kind == MGPU_SYNC_NCCL)
		rc = mgpu_nccl_open(&s->nccl, dev, s->rank, s->world, info.nccl_id, timeout_ms);
	if (rc == 0 && s->kind == MGPU_SYNC_CPU) {
		/* Once everyone is attached the name can go: nothing outlives a crash. */
		rc = mgpu_shm_barrier(&s->shm);
		if (s->rank == 0)
			mgpu_shm_unlink(info.shm_name);
	}
	if (rc < 0) {
		if (s->rank == 0 && s->kind == MGPU_SYNC_CPU && info.shm_name[0])
			mgpu_shm_unlink(info.shm_name);
		mgpu_sync_close(s);
	}
	return rc;
}

void mgpu_sync_open_dp(struct mgpu_sync *s, const struct mgpu_shm *seg, int rank)
{
	memset(s, 0, sizeof *s);
	s->kind = seg->world > 1 ? MGPU_SYNC_CPU : MGPU_SYNC_NONE;
	s->mode = MGPU_MODE_DP;
	s->rank = rank;
	s->world = seg->world;
	mgpu_shm_view(&s->shm, seg, rank);
}

const char *mgpu_sync_name(int kind)
{
	static const char *const names[] = { "none", "cpu", "nccl" };
	return kind >= 0 && kind <= MGPU_SYNC_NCCL ? names[kind] : "?";
}

const char *mgpu_mode_name(int mode)
{
	return mode == MGPU_MODE_DP ? "dp" : "ddp";
}

static int host_memory(const struct mgpu_sync *s)
{
	return s->model->dev->ops->host_memory;
}

void mgpu_sync_model_buffers(const struct mgpu_sync *s, int host_mem, float **w,
			     float **g, float **state0, float **state1)
{
	*w = *g = *state0 = *state1 = NULL;
	if (s->kind != MGPU_SYNC_CPU || !host_mem)
		return;
	*g = s->shm.g[s->rank];
	if (s->mode == MGPU_MODE_DDP) {
		*w = s->shm.w;
		*state0 = s->shm.state[0];
		*state1 = s->shm.state[1];
	}
}

int mgpu_sync_loads_state(const struct mgpu_sync *s)
{
	return s->kind != MGPU_SYNC_CPU || s->rank == 0;
}

int mgpu_sync_owns_optimizer(const struct mgpu_sync *s)
{
	return s->kind != MGPU_SYNC_CPU || s->mode == MGPU_MODE_DDP || s->rank == 0;
}

/* Bucket b of the processing order: the last layer first. */
static int bucket_at(const struct mgpu_sync *s, int i)
{
	return s->nbuckets - 1 - i;
}

static void shard(const struct mgpu_sync *s, int b, size_t *a, size_t *e)
{
	size_t off = s->boff[b], cnt = s->bcnt[b];

	*a = off + cnt * (size_t)s->rank / (size_t)s->world;
	*e = off + cnt * (size_t)(s->rank + 1) / (size_t)s->world;
}

/* dst[a, e) = sum over ranks of slot[a, e), in rank order: the same bits on
 * every rank and every run. Returns the sum of squares of the result. */
static double sum_slots(struct mgpu_sync *s, float *dst, size_t a, size_t e)
{
	float *const *g = s->shm.g;
	double sq = 0;
	size_t i;
	int r;

	if (s->world == 1) {
		if (dst != g[0])
			memcpy(dst + a, g[0] + a, (e - a) * sizeof(float));
	} else {
		/* pairwise first, then one rank at a time: ((g0 + g1) + g2) + ... */
		for (i = a; i < e; i++)
			dst[i] = g[0][i] + g[1][i];
		for (r = 2; r < s->world; r++)
			for (i = a; i < e; i++)
				dst[i] += g[r][i];
	}
	if (s->clip)
		for (i = a; i < e; i++)
			sq += (double)dst[i] * dst[i];
	return sq;
}

/* The sum of squares of the slots' sum over [a, e), summed in the order
 * sum_slots uses, without storing it: the fused update does not either. */
static double sumsq_slots(const struct mgpu_sync *s, size_t a, size_t e)
{
	float *const *g = s->shm.g;
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

/* The update uses the optimizer on the rank's own view of the buffers. */
static int update(struct mgpu_sync *s, size_t a, size_t e, float scale)
{
	return mgpu_optim_step_range(s->opt, s->lr, scale, a, e);
}

/* Without clipping, sum and update are one pass over the shard; with it
 * the sum is kept until the global norm is known. */
static int ddp_process(struct mgpu_sync *s, int b)
{
	size_t a, e;

	shard(s, b, &a, &e);
	if (!s->clip) {
		s->sumsq += sumsq_slots(s, a, e);
		return mgpu_optim_step_range_sum(s->opt, s->lr, 1.0f / (float)s->world, a, e,
						 (const float *const *)s->shm.g, s->world);
	}
	s->sumsq += sum_slots(s, s->shm.g[s->rank], a, e);
	return 0;
}

/* Reduce, in order, every bucket this rank has published that all ranks
 * have finished; with block, wait for all of them. */
static int ddp_progress(struct mgpu_sync *s, int block)
{
	int b;

	while (s->next < (block ? s->nbuckets : s->published)) {
		b = bucket_at(s, s->next);
		if (block)
			MGPU_TRY(mgpu_shm_bucket_wait(&s->shm, b));
		else if (!mgpu_shm_bucket_poll(&s->shm, b))
			return 0;
		MGPU_TRY(ddp_process(s, b));
		s->next++;
	}
	return 0;
}

static int hook(void *ctx, int layer, size_t off, size_t cnt)
{
	struct mgpu_sync *s = ctx;
	struct mgpu_dev *dev = s->model->dev;

	(void)off;
	if (!s->syncing || s->kind == MGPU_SYNC_NONE)
		return 0;
	if (s->kind == MGPU_SYNC_NCCL)
		return mgpu_nccl_bucket(s->nccl, dev, s->model->g + s->boff[layer],
					s->bcnt[layer]);
	if (s->shm.g[s->rank] != s->model->g)
		MGPU_TRY(mgpu_dev_to_host(dev, s->shm.g[s->rank] + off, s->model->g + off,
					  cnt * sizeof(float)));
	mgpu_shm_bucket_ready(&s->shm, layer);
	s->published++;
	return s->mode == MGPU_MODE_DDP ? ddp_progress(s, 0) : 0;
}

int mgpu_sync_bind(struct mgpu_sync *s, struct mgpu_model *m, struct mgpu_optim *o)
{
	int l;

	s->model = m;
	s->opt = o;
	s->nbuckets = m->spec.nlayers;
	for (l = 0; l < m->spec.nlayers; l++) {
		const struct mgpu_layer *L = &m->layers[l];
		const struct mgpu_param *last = L->beta ? L->beta : L->b;
		s->boff[l] = L->w->off;
		s->bcnt[l] = last->off + last->count - L->w->off;
	}
	s->clip = o->cfg.clip_norm > 0.0f;
	m->grad_ready = hook;
	m->grad_ctx = s;
	if (s->kind != MGPU_SYNC_CPU)
		return 0;
	if (s->mode == MGPU_MODE_DDP && !host_memory(s))
		return mgpu_err(MGPU_EUNSUP, "sync backend cpu with mode ddp needs CPU ranks; "
				"use --sync-backend nccl or --mode dp for GPUs");
	/* Replicas start from rank 0's weights. */
	if (s->rank == 0 && s->shm.w != m->w)
		MGPU_TRY(mgpu_dev_to_host(m->dev, s->shm.w, m->w, m->nparams * sizeof(float)));
	MGPU_TRY(mgpu_shm_barrier(&s->shm));
	if (s->rank != 0 && s->shm.w != m->w)
		MGPU_TRY(mgpu_dev_to_dev(m->dev, m->w, s->shm.w, m->nparams * sizeof(float)));
	return 0;
}

void mgpu_sync_micro(struct mgpu_sync *s, int last, float lr)
{
	/* The sharded updates run inside backward: count the step before it. */
	if (last && s->kind == MGPU_SYNC_CPU && s->mode == MGPU_MODE_DDP)
		s->opt->t++;
	s->syncing = last;
	s->lr = lr;
	s->next = 0;
	s->published = 0;
	s->sumsq = 0;
}


static int ddp_step(struct mgpu_sync *s)
{
	double v;
	float scale;
	int i;
	size_t a, e;

	MGPU_TRY(ddp_progress(s, 1));
	if (!s->clip)
		return 0;
	/* (the fused updates above already counted this step: see micro) */
	v = s->sumsq;
	MGPU_TRY(mgpu_shm_allreduce_f64(&s->shm, &v, 1));
	s->opt->last_norm = sqrt(v) / s->world;
	scale = mgpu_optim_clip_factor(s->opt, s->opt->last_norm) / (float)s->world;
	for (i = 0; i < s->nbuckets; i++) {
		shard(s, bucket_at(s, i), &a, &e);
		MGPU_TRY(update(s, a, e, scale));
	}
	return 0;
}

/* Rank 0 sums every slot into its gradient, steps, publishes the weights. */
static int dp_step_master(struct mgpu_sync *s)
{
	struct mgpu_model *m = s->model;
	int i, b;

	for (i = 0; i < s->nbuckets; i++) {
		b = bucket_at(s, i);
		MGPU_TRY(mgpu_shm_bucket_wait(&s->shm, b));
		sum_slots(s, s->shm.g[0], s->boff[b], s->boff[b] + s->bcnt[b]);
	}
	if (m->g != s->shm.g[0])
		MGPU_TRY(mgpu_dev_to_dev(m->dev, m->g, s->shm.g[0], m->nparams * sizeof(float)));
	MGPU_TRY(mgpu_optim_step(s->opt, s->lr, 1.0f / (float)s->world));
	return mgpu_dev_to_host(m->dev, s->shm.w, m->w, m->nparams * sizeof(float));
}

/* The closing barrier: vals, and the squared gradient norm summed from
 * each rank's share of it. Unclipped ddp ranks each know their shards'
 * part; otherwise rank 0 knows the whole (the others know it too, or in
 * mode dp do not). */
static int close_step(struct mgpu_sync *s, double *vals, int n)
{
	double v[MGPU_SHM_MAX_VALS], w = (double)s->world;
	int i;

	if (n < 0 || n + 1 > MGPU_SHM_MAX_VALS)
		return mgpu_err(MGPU_EINVAL, "sync: %d values per step, max %d", n,
				MGPU_SHM_MAX_VALS - 1);
	for (i = 0; i < n; i++)
		v[i] = vals[i];
	if (s->kind == MGPU_SYNC_CPU && s->mode == MGPU_MODE_DDP && !s->clip)
		v[n] = s->sumsq / (w * w);
	else
		v[n] = s->rank == 0 ? s->opt->last_norm * s->opt->last_norm : 0.0;
	MGPU_TRY(mgpu_sync_allreduce_f64(s, v, n + 1));
	for (i = 0; i < n; i++)
		vals[i] = v[i];
	s->grad_norm = sqrt(v[n]);
	return 0;
}

int mgpu_sync_step(struct mgpu_sync *s, double *vals, int n)
{
	struct mgpu_model *m = s->model;

	switch (s->kind) {
	case MGPU_SYNC_NONE:
		MGPU_TRY(mgpu_optim_step(s->opt, s->lr, 1.0f));
		s->grad_norm = s->opt->last_norm;
		return 0;
	case MGPU_SYNC_NCCL:
		MGPU_TRY(mgpu_nccl_wait(s->nccl, m->dev));
		MGPU_TRY(mgpu_optim_step(s->opt, s->lr, 1.0f / (float)s->world));
		return close_step(s, vals, n);
	}
	if (s->mode == MGPU_MODE_DDP) {
		MGPU_TRY(ddp_step(s));
		return close_step(s, vals, n);
	}
	if (s->rank == 0)
		MGPU_TRY(dp_step_master(s));
	MGPU_TRY(close_step(s, vals, n));
	if (s->rank != 0)
		MGPU_TRY(mgpu_dev_to_dev(m->dev, m->w, s->shm.w, m->nparams * sizeof(float)));
	return 0;
}

int mgpu_sync_allreduce_f64(struct mgpu_sync *s, double *v, int n)
{
	switch (s->kind) {
	case MGPU_SYNC_CPU: return mgpu_shm_allreduce_f64(&s->shm, v, n);
	case MGPU_SYNC_NCCL: return mgpu_nccl_allreduce_f64(s->nccl, s->model->dev, v, n);
	}
	return 0;
}

void mgpu_sync_abort(struct mgpu_sync *s, int rc)
{
	if (s->kind == MGPU_SYNC_CPU)
		mgpu_shm_abort(&s->shm, rc == MGPU_ECLOSED);
	if (s->kind == MGPU_SYNC_NCCL)
		mgpu_nccl_abort(s->nccl);
}

void mgpu_sync_close(struct mgpu_sync *s)
{
	if (s->kind == MGPU_SYNC_CPU)
		mgpu_shm_close(&s->shm);
	if (s->kind == MGPU_SYNC_NCCL)
		mgpu_nccl_close(s->nccl);
	s->kind = MGPU_SYNC_NONE;
}
