/*
 * sync.c - the table of gradient sync strategies and what they share:
 * opening, buckets and the backward hook, the closing barrier (see sync.h;
 * the strategies are sync_<name>.c, their contract sync_int.h).
 *
 * A bucket is one layer's parameters [boff, boff + bcnt) of the flat
 * vectors, handed to the strategy as backward produces it: last layer
 * first, the same order on every rank.
 */
#include "train/sync.h"

#include <math.h>   /* sqrt */
#include <stdlib.h> /* getenv */
#include <string.h> /* memset, strcmp, strstr */
#include <unistd.h> /* close */

#include "comm/mpi.h"    /* mgpu_mpi_in_build */
#include "core/err.h"    /* mgpu_err, MGPU_TRY */
#include "train/sync_int.h" /* struct mgpu_sync_strategy */

/* Indexed by enum mgpu_sync_kind. */
static const struct mgpu_sync_strategy *const strategies[] = {
	[MGPU_SYNC_NONE] = &mgpu_sync_none,
	[MGPU_SYNC_CPU] = &mgpu_sync_shm,
	[MGPU_SYNC_NCCL] = &mgpu_sync_nccl,
	[MGPU_SYNC_MPI] = &mgpu_sync_mpi,
	[MGPU_SYNC_NODES] = &mgpu_sync_nodes,
};
#define NSTRATEGIES ((int)(sizeof strategies / sizeof strategies[0]))

const char *const mgpu_sync_words[] = {
	[MGPU_SYNC_NONE] = "auto",
	[MGPU_SYNC_CPU] = "cpu",
	[MGPU_SYNC_NCCL] = "nccl",
	[MGPU_SYNC_MPI] = "mpi",
	[MGPU_SYNC_KINDS] = NULL,
};

const char *mgpu_sync_name(int kind)
{
	return kind >= 0 && kind < NSTRATEGIES ? strategies[kind]->name : "?";
}

const char *mgpu_mode_name(int mode)
{
	return mode == MGPU_MODE_DP ? "dp" : "ddp";
}

/* --sync-backend cpu has two strategies: ranks whose device memory is host
 * memory share the segment's buffers directly (sync_shm.c); GPU ranks
 * stage their buckets through it (sync_host.c). MGPU_SYNC_STAGED=1 puts
 * CPU ranks on the staged path too: how it is tested without a GPU. */
static const struct mgpu_sync_strategy *strategy_for(int kind, const struct mgpu_dev *dev)
{
	const char *staged = getenv("MGPU_SYNC_STAGED");

	if (kind != MGPU_SYNC_CPU)
		return strategies[kind];
	if ((dev && !mgpu_ops_can(dev->ops, MGPU_CAP_HOST_MEMORY)) ||
	    (staged && strcmp(staged, "1") == 0))
		return &mgpu_sync_host;
	return &mgpu_sync_shm;
}

int mgpu_sync_open(struct mgpu_sync *s, const struct mgpu_rank_env *env, int kind,
		   size_t nparams, int nstate, struct mgpu_dev *dev, int timeout_ms)
{
	struct mgpu_sync_args a = { env, nparams, nstate, dev, timeout_ms };
	int rc;

	memset(s, 0, sizeof *s);
	s->mode = MGPU_MODE_DDP;
	s->rank = env->rank;
	s->world = env->world;
	s->kind = env->world > 1 ? kind : MGPU_SYNC_NONE;
	/* CPU ranks on several nodes: shared memory within each, and between
	 * the nodes MPI when mpirun started them, else TCP */
	if (s->kind == MGPU_SYNC_CPU && env->nnodes > 1)
		s->kind = env->launcher == MGPU_LAUNCH_OMPI && mgpu_mpi_in_build() ?
				  MGPU_SYNC_MPI : MGPU_SYNC_NODES;
	s->loads_state = s->owns_optimizer = 1;
	if (s->kind < 0 || s->kind >= NSTRATEGIES)
		return mgpu_err(MGPU_EINVAL, "sync backend %d does not exist", kind);
	s->st = strategy_for(s->kind, dev);
	rc = s->st->init(s, &a);
	if (rc < 0)
		mgpu_sync_close(s);
	return rc;
}

int mgpu_sync_set_grad_prec(struct mgpu_sync *s, int prec)
{
	if (prec == MGPU_PREC_FP32 || s->world == 1) { /* one rank: nothing to reduce */
		s->grad_prec = MGPU_PREC_FP32;
		return 0;
	}
	if (prec != MGPU_PREC_BF16)
		return mgpu_err(MGPU_EINVAL, "sync: unknown gradient precision %d", prec);
	if (s->st != &mgpu_sync_shm && s->st != &mgpu_sync_nccl)
		return mgpu_err(MGPU_EUNSUP, "--grad-dtype bf16 needs sync backend cpu on one "
				"node or nccl, not %s", s->st == &mgpu_sync_host ?
				"cpu for GPU ranks (use nccl)" : "a job across nodes");
	s->grad_prec = prec;
	s->shared_g = NULL; /* cpu: the model accumulates fp32 in its own buffer */
	return 0;
}

int mgpu_sync_rendezvous(const struct mgpu_sync *s, const struct mgpu_sync_args *a,
			 struct mgpu_rdzv_info *info)
{
	const struct mgpu_rank_env *env = a->env;
	int fd = env->listen_fd, port = env->port, rc;

	/* the loopback default would leave the other nodes' ranks knocking at
	 * their own door until the timeout */
	if (env->nnodes > 1 && !env->addr_given)
		return mgpu_err(MGPU_EINVAL, "the ranks of a job of %d nodes meet at node 0's "
				"address, but MASTER_ADDR is not set (mpirun: -x MASTER_ADDR; "
				"Slurm: export it)", env->nnodes);
	if (s->rank != 0)
		return mgpu_rdzv_join(env->addr, env->port, s->rank, s->world, env->local_world,
				      env->token, env->ident, info, a->timeout_ms);
	if (fd < 0)
		MGPU_TRY(mgpu_rdzv_listen(env->addr, &port, &fd));
	rc = mgpu_rdzv_serve(fd, s->world, env->local_world, env->token, env->ident, info,
			     a->timeout_ms);
	close(fd);
	return rc;
}

void mgpu_sync_model_buffers(const struct mgpu_sync *s, int host_mem, float **w,
			     float **g, float **state0, float **state1)
{
	*w = *g = *state0 = *state1 = NULL;
	if (!host_mem)
		return;
	*w = s->shared_w;
	*g = s->shared_g;
	*state0 = s->shared_state[0];
	*state1 = s->shared_state[1];
}

int mgpu_sync_loads_state(const struct mgpu_sync *s)
{
	return s->loads_state;
}

int mgpu_sync_owns_optimizer(const struct mgpu_sync *s)
{
	return s->owns_optimizer;
}

/* The model's backward calls this as each bucket's gradient is final. */
static int hook(void *ctx, int layer, size_t off, size_t cnt)
{
	struct mgpu_sync *s = ctx;

	if (!s->syncing || !s->st->reduce_bucket)
		return 0;
	return s->st->reduce_bucket(s, layer, off, cnt);
}

/* Rank 0's buffers (BatchNorm's running statistics) to every rank, as
 * torch DDP's constructor broadcasts them: the other ranks may not have
 * initialised or loaded theirs (the strategies that share the weights let
 * rank 0 alone do that), and a BatchNorm's sums are taken around its
 * running mean, which --sync-bn needs to be the same on every rank. A sum
 * with zeros from the others: exact. */
static int share_buffers(struct mgpu_sync *s, struct mgpu_model *m)
{
	if (s->world == 1 || m->nbufvals == 0)
		return 0;
	if (s->rank != 0)
		MGPU_TRY(m->dev->ops->zero(m->dev, m->buf, m->nbufvals * sizeof(float)));
	return mgpu_sync_stats(s, m->buf, m->nbufvals);
}

int mgpu_sync_bind(struct mgpu_sync *s, struct mgpu_model *m, struct mgpu_optim *o)
{
	int l;

	s->model = m;
	s->opt = o;
	s->nbuckets = m->nbuckets;
	for (l = 0; l < m->nbuckets; l++) {
		s->boff[l] = m->buckets[l].off;
		s->bcnt[l] = m->buckets[l].count;
	}
	m->grad_ready = hook;
	m->grad_ctx = s;
	o->norm2_dev = m->stats + MGPU_STAT_NORM2; /* read with the step's statistics */
	if (s->st->bind)
		MGPU_TRY(s->st->bind(s));
	return share_buffers(s, m);
}

/* The model's stat_sum under --sync-bn (model/model.h). */
static int stat_hook(void *ctx, int layer, float *sums, size_t count)
{
	(void)layer;
	return mgpu_sync_stats(ctx, sums, count);
}

int mgpu_sync_bind_bn(struct mgpu_sync *s, struct mgpu_model *m)
{
	int i;

	for (i = 0; i < m->nbuffer; i++)
		if (strstr(m->buffers[i].name, "running_mean"))
			break;
	if (i == m->nbuffer)
		return mgpu_err(MGPU_EINVAL, "--sync-bn: the model has no BatchNorm layer to "
				"sync (no running_mean buffer)");
	m->stat_sum = stat_hook;
	m->stat_ctx = s;
	return 0;
}

void mgpu_sync_micro(struct mgpu_sync *s, int last, float lr)
{
	s->syncing = last;
	s->lr = lr;
	if (last && s->st->begin)
		s->st->begin(s);
}

int mgpu_sync_bucket_at(const struct mgpu_sync *s, int i)
{
	return s->nbuckets - 1 - i;
}

int mgpu_sync_drain_buckets(struct mgpu_sync *s, struct mgpu_shm *shm, int *next,
			    int published, int block, int (*process)(struct mgpu_sync *s, int b))
{
	int b;

	while (*next < (block ? s->nbuckets : published)) {
		b = mgpu_sync_bucket_at(s, *next);
		if (block)
			MGPU_TRY(mgpu_shm_bucket_wait(shm, b));
		else if (!mgpu_shm_bucket_poll(shm, b))
			return 0;
		MGPU_TRY(process(s, b));
		(*next)++;
	}
	return 0;
}

int mgpu_sync_step(struct mgpu_sync *s, double *vals, int n)
{
	return s->st->finish(s, vals, n);
}

double mgpu_sync_norm2_share(const struct mgpu_sync *s)
{
	double n = s->opt->last_norm;

	return s->rank == 0 && !s->opt->norm2_queued ? n * n : 0.0;
}

/* h[0..k) = the device statistics, summed over the ranks with the host
 * values h[k..n): on the device where the strategy can, else read once
 * and summed on the host. */
static int sum_stats(struct mgpu_sync *s, double *h, int k, int n)
{
	struct mgpu_model *m = s->model;

	if (s->st->allreduce_stats) {
		if (s->rank != 0) /* only rank 0's norm counts: see close_step */
			MGPU_TRY(m->dev->ops->zero(m->dev, m->stats + MGPU_STAT_NORM2,
						   sizeof(double)));
		return s->st->allreduce_stats(s, m->stats, h, k, n);
	}
	MGPU_TRY(mgpu_dev_to_host(m->dev, h, m->stats, (size_t)k * sizeof(double)));
	if (s->rank != 0)
		h[MGPU_STAT_NORM2] = 0.0;
	return mgpu_sync_allreduce_f64(s, h, n);
}

int mgpu_sync_close_step(struct mgpu_sync *s, double *vals, int n, double norm2)
{
	struct mgpu_model *m = s->model;
	double h[MGPU_STATS];
	int k = MGPU_STAT_HOST, total = MGPU_STAT_HOST + n + 1, i;

	if (n < 0 || total > MGPU_STATS || total > MGPU_SHM_MAX_VALS)
		return mgpu_err(MGPU_EINVAL, "sync: %d values per step, max %d", n,
				MGPU_STATS - MGPU_STAT_HOST - 1);
	for (i = 0; i < n; i++)
		h[k + i] = vals[i];
	h[k + n] = norm2;
	MGPU_TRY(sum_stats(s, h, k, total));
	for (i = 0; i < n; i++)
		vals[i] = h[k + i];
	s->step_loss = h[MGPU_STAT_LOSS];
	s->step_correct = h[MGPU_STAT_CORRECT];
	/* one of the two is 0: the norm was on the device or on the host */
	s->grad_norm = sqrt(h[MGPU_STAT_NORM2] + h[k + n]);
	return m->dev->ops->zero(m->dev, m->stats, (size_t)total * sizeof(double));
}

int mgpu_sync_allreduce_f64(struct mgpu_sync *s, double *v, int n)
{
	return s->st->allreduce_f64 ? s->st->allreduce_f64(s, v, n) : 0;
}

int mgpu_sync_stats(struct mgpu_sync *s, float *v, size_t n)
{
	if (!s->st->allreduce_f32 || n == 0) /* one rank */
		return 0;
	if (!s->model)
		return mgpu_err(MGPU_EINVAL, "sync: statistics summed before the model was bound");
	return s->st->allreduce_f32(s, v, n);
}

void mgpu_sync_abort(struct mgpu_sync *s, int rc)
{
	if (s->st && s->st->cancel)
		s->st->cancel(s, rc);
}

void mgpu_sync_close(struct mgpu_sync *s)
{
	if (s->st && s->st->free)
		s->st->free(s);
	s->priv = NULL;
	s->st = &mgpu_sync_none;
	s->kind = MGPU_SYNC_NONE;
}
