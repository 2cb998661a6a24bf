/*
 * sync_nodes.c - the gradient sync strategy of CPU ranks on several nodes:
 * shared memory within each node, and between the node leaders (local
 * rank 0) MPI (--sync-backend mpi, ranks started by mpirun) or the TCP
 * connections the rendezvous kept (--sync-backend cpu with --nnodes, under
 * mgpu-train's own launcher, torchrun or Slurm).
 *
 * Each node has its own segment (lib/comm/shm.h) holding one copy of the
 * weights and optimizer state and one gradient slot per local rank. A step:
 * 1. As backward finishes a bucket (last layer first) each rank marks it
 *    ready; the leader, as soon as every local rank has it, sums the slots
 *    in local rank order into its own slot, ((g0 + g1) + g2) + ..., and
 *    all-reduces that range with the other leaders (nodes in node order),
 *    overlapping the rest of backward. Over MPI the all-reduce is only
 *    started (MPI_Iallreduce) and pushed on at every later bucket, so
 *    backward goes on while it travels; over TCP it completes in place.
 * 2. After backward the leader waits for its all-reduces, then a node
 *    barrier: the leader's slot holds the sum over the world, the same
 *    bits on every node. Each local rank updates its
 *    shard of every bucket of the node's weights from it (with clipping,
 *    after the node agreed on the norm, which is the global one).
 * Every node applies the same update to the same weights, so the replicas
 * stay identical; rank 0's initial (or resumed) weights and optimizer
 * state go to the other nodes when binding. The sums are in a fixed order,
 * so 2 nodes x 2 ranks match 1 node x 4 ranks within rounding (the order
 * of the four terms differs: (g0 + g1) + (g2 + g3) against
 * ((g0 + g1) + g2) + g3).
 *
 * Per-step values (loss sums, the stop flag) are summed within the node,
 * between the leaders, then handed back within the node; so are BatchNorm's
 * statistics (--sync-bn) in the middle of forward and backward. The
 * leaders' exchanges pair up in the order they are issued (MPI's
 * collectives, the TCP star's messages), so before such a sum a leader
 * first reduces every bucket its node has published: a leader that polled
 * before its last local rank had marked a bucket would otherwise exchange
 * its statistics where another leader sends that bucket.
 */
#include "train/sync_int.h"

#include <math.h>   /* sqrt */
#include <stdio.h>  /* snprintf */
#include <stdlib.h> /* calloc, free */
#include <string.h> /* memset */

#include "comm/leaders.h" /* mgpu_leaders_* */
#include "comm/mpi.h"     /* mgpu_mpi_* */
#include "comm/shm.h"     /* mgpu_shm_* */
#include "core/err.h"     /* mgpu_err, MGPU_TRY */

struct nodes_sync {
	struct mgpu_shm shm;          /* this node's segment */
	int lrank, lworld, node, nnodes;
	struct mgpu_mpi *mpi;         /* leaders over MPI, or NULL: over tcp */
	struct mgpu_leaders tcp;
	int clip;
	int next;                     /* buckets the leader reduced this step */
	int published;                /* buckets this rank marked ready this step */
	double sumsq;                 /* of this rank's shards of the sum */
	char name[64];                /* the segment's name until unlinked */
};

static struct nodes_sync *priv(const struct mgpu_sync *s)
{
	return s->priv;
}

static int leader(const struct mgpu_sync *s)
{
	return priv(s)->lrank == 0;
}

/* The node's segment: made by its leader before anyone can attach (the
 * rendezvous answers, or MPI's barrier, come after). */
static int create(struct mgpu_sync *s, const struct mgpu_sync_args *a)
{
	struct nodes_sync *p = priv(s);

	snprintf(p->name, sizeof p->name, "/mgpu-%.16s-%d-n%d", a->env->token, a->env->port,
		 p->node);
	return mgpu_shm_create(&p->shm, p->name, p->lworld, a->nparams, a->nstate,
			       a->timeout_ms);
}

static int attach(struct mgpu_sync *s, const struct mgpu_sync_args *a)
{
	struct nodes_sync *p = priv(s);

	snprintf(p->name, sizeof p->name, "/mgpu-%.16s-%d-n%d", a->env->token, a->env->port,
		 p->node);
	MGPU_TRY(mgpu_shm_attach(&p->shm, p->name, p->lrank, p->lworld, a->nparams, a->nstate,
				 a->timeout_ms));
	p->name[0] = '\0'; /* only the leader unlinks */
	return 0;
}

/* Leaders over TCP: the rendezvous of sync.c, its connections kept. */
static int join_tcp(struct mgpu_sync *s, const struct mgpu_sync_args *a)
{
	struct nodes_sync *p = priv(s);
	struct mgpu_rdzv_info info;

	memset(&info, 0, sizeof info);
	MGPU_TRY(mgpu_sync_rendezvous(s, a, &info));
	if (!leader(s))
		return 0;
	return mgpu_leaders_open(&p->tcp, &info, p->node, p->nnodes, p->lworld, a->timeout_ms);
}

static int init_common(struct mgpu_sync *s, const struct mgpu_sync_args *a)
{
	struct nodes_sync *p;

	if (!(p = s->priv = calloc(1, sizeof *p)))
		return mgpu_err(MGPU_ENOMEM, "out of memory for the sync state");
	p->lrank = a->env->local_rank;
	p->lworld = a->env->local_world;
	p->node = a->env->node;
	p->nnodes = a->env->nnodes;
	p->tcp.nnodes = 0;
	memset(p->tcp.fd, -1, sizeof p->tcp.fd);
	if (p->lworld > MGPU_SHM_MAX_RANKS)
		return mgpu_err(MGPU_EINVAL, "%d ranks on one node, at most %d", p->lworld,
				MGPU_SHM_MAX_RANKS);
	return 0;
}

/* The node's ranks are attached: the name can go, nothing outlives a crash. */
static int settle(struct mgpu_sync *s)
{
	struct nodes_sync *p = priv(s);
	int rc = mgpu_shm_barrier(&p->shm);

	if (p->name[0])
		mgpu_shm_unlink(p->name);
	p->name[0] = '\0';
	if (rc == 0) {
		s->shared_g = p->shm.g[p->lrank];
		s->shared_w = p->shm.w;
		s->shared_state[0] = p->shm.state[0];
		s->shared_state[1] = p->shm.state[1];
		s->loads_state = s->rank == 0;
	}
	return rc;
}

static int tcp_init(struct mgpu_sync *s, const struct mgpu_sync_args *a)
{
	int rc;

	MGPU_TRY(init_common(s, a));
	rc = leader(s) ? create(s, a) : 0;
	if (rc == 0)
		rc = join_tcp(s, a);
	if (rc == 0 && !leader(s))
		rc = attach(s, a);
	return rc == 0 ? settle(s) : rc;
}

static int mpi_init(struct mgpu_sync *s, const struct mgpu_sync_args *a)
{
	struct nodes_sync *p;
	int rc;

	if (a->env->launcher != MGPU_LAUNCH_OMPI)
		return mgpu_err(MGPU_EINVAL, "sync backend mpi needs ranks started by mpirun "
				"(no OMPI_COMM_WORLD_RANK in the environment; started by %s)",
				mgpu_launcher_name(a->env->launcher));
	MGPU_TRY(init_common(s, a));
	p = priv(s);
	MGPU_TRY(mgpu_mpi_open(&p->mpi, p->lrank == 0, a->timeout_ms));
	if (mgpu_mpi_world_size(p->mpi) != s->world || mgpu_mpi_world_rank(p->mpi) != s->rank)
		return mgpu_err(MGPU_EINVAL, "mpi: rank %d of %d, but the environment says rank "
				"%d of %d", mgpu_mpi_world_rank(p->mpi),
				mgpu_mpi_world_size(p->mpi), s->rank, s->world);
	/* what the TCP rendezvous compares, every rank at once */
	MGPU_TRY(mgpu_mpi_same_ident(p->mpi, a->env->ident, p->lworld));
	rc = leader(s) ? create(s, a) : 0;
	/* every rank passes both barriers, or an error leaves the others
	 * waiting until mpirun ends the job */
	if (mgpu_mpi_barrier(p->mpi) < 0 && rc == 0)
		rc = MGPU_EPEER;
	if (rc == 0 && !leader(s))
		rc = attach(s, a);
	if (mgpu_mpi_barrier(p->mpi) < 0 && rc == 0)
		rc = MGPU_EPEER;
	return rc == 0 ? settle(s) : rc;
}

/* Leaders: sum or broadcast between the nodes. A bucket's sum over MPI is
 * only started here (see leaders_wait). */
static int leaders_sum(struct mgpu_sync *s, float *buf, size_t n)
{
	struct nodes_sync *p = priv(s);

	return p->mpi ? mgpu_mpi_iallreduce_f32(p->mpi, buf, n) :
			mgpu_leaders_allreduce_f32(&p->tcp, buf, n);
}

/* Leaders: every bucket's sum is complete. */
static int leaders_wait(struct mgpu_sync *s)
{
	struct nodes_sync *p = priv(s);

	return p->mpi ? mgpu_mpi_wait_all(p->mpi) : 0;
}

static int leaders_sum_f64(struct mgpu_sync *s, double *v, int n)
{
	struct nodes_sync *p = priv(s);

	return p->mpi ? mgpu_mpi_allreduce_f64(p->mpi, v, (size_t)n) :
			mgpu_leaders_allreduce_f64(&p->tcp, v, (size_t)n);
}

static int leaders_bcast(struct mgpu_sync *s, float *buf, size_t n)
{
	struct nodes_sync *p = priv(s);

	return p->mpi ? mgpu_mpi_bcast_f32(p->mpi, buf, n) :
			mgpu_leaders_bcast_f32(&p->tcp, buf, n);
}

/* Rank 0's weights and optimizer state to every node. */
static int nodes_bind(struct mgpu_sync *s)
{
	struct nodes_sync *p = priv(s);
	size_t n = s->model->nparams;
	int k;

	if (!mgpu_ops_can(s->model->dev->ops, MGPU_CAP_HOST_MEMORY))
		return mgpu_err(MGPU_EUNSUP, "sync backend %s needs CPU ranks; GPU ranks on "
				"several nodes use --sync-backend nccl", s->st->name);
	p->clip = mgpu_optim_defers(s->opt);
	if (leader(s)) {
		MGPU_TRY(leaders_bcast(s, p->shm.w, n));
		for (k = 0; k < p->shm.nstate; k++)
			MGPU_TRY(leaders_bcast(s, p->shm.state[k], n));
	}
	return mgpu_shm_barrier(&p->shm);
}

static void nodes_begin(struct mgpu_sync *s)
{
	struct nodes_sync *p = priv(s);

	s->opt->t++; /* the sharded updates of finish use step t */
	p->next = 0;
	p->published = 0;
	p->sumsq = 0;
}

/* Leader: bucket b of every local slot summed into its own, then over the
 * nodes. */
static int reduce(struct mgpu_sync *s, int b)
{
	struct nodes_sync *p = priv(s);
	float *const *g = p->shm.g;
	size_t a = s->boff[b], e = a + s->bcnt[b], i;
	int r;

	for (r = 1; r < p->lworld; r++)
		for (i = a; i < e; i++)
			g[0][i] += g[r][i];
	return leaders_sum(s, g[0] + a, e - a);
}

/* Leader: reduce, in order, the buckets every local rank has finished;
 * with block, wait for all of them. */
static int progress(struct mgpu_sync *s, int block)
{
	struct nodes_sync *p = priv(s);

	MGPU_TRY(mgpu_sync_drain_buckets(s, &p->shm, &p->next, p->published, block, reduce));
	/* MPI moves the started sums only inside its calls */
	return p->mpi ? mgpu_mpi_progress(p->mpi) : 0;
}

static int nodes_reduce_bucket(struct mgpu_sync *s, int layer, size_t off, size_t cnt)
{
	struct nodes_sync *p = priv(s);

	(void)off, (void)cnt; /* CPU ranks: the model's gradient is the slot */
	mgpu_shm_bucket_ready(&p->shm, layer);
	p->published++;
	return leader(s) ? progress(s, 0) : 0;
}

/* This rank's local-rank shard of bucket b. */
static void shard(const struct mgpu_sync *s, int b, size_t *a, size_t *e)
{
	const struct nodes_sync *p = priv(s);
	size_t off = s->boff[b], cnt = s->bcnt[b];

	*a = off + cnt * (size_t)p->lrank / (size_t)p->lworld;
	*e = off + cnt * (size_t)(p->lrank + 1) / (size_t)p->lworld;
}

/* Every shard of this rank updated from the world's sum in the leader's
 * slot, each gradient element times scale. */
static int update(struct mgpu_sync *s, float scale)
{
	const float *const sum[1] = { priv(s)->shm.g[0] };
	size_t a, e;
	int b;

	for (b = 0; b < s->nbuckets; b++) {
		shard(s, b, &a, &e);
		MGPU_TRY(mgpu_optim_step_range_sum(s->opt, s->lr, scale, a, e, sum, 1));
	}
	return 0;
}

static double shards_sumsq(const struct mgpu_sync *s)
{
	const float *g = priv(s)->shm.g[0];
	double sq = 0;
	size_t a, e, i;
	int b;

	for (b = 0; b < s->nbuckets; b++)
		for (shard(s, b, &a, &e), i = a; i < e; i++)
			sq += (double)g[i] * g[i];
	return sq;
}

static int nodes_finish(struct mgpu_sync *s, double *vals, int n)
{
	struct nodes_sync *p = priv(s);
	double v, norm2;
	float scale = 1.0f; /* the gradients were averaged by the loss */

	if (leader(s)) {
		MGPU_TRY(progress(s, 1));
		MGPU_TRY(leaders_wait(s));
	}
	MGPU_TRY(mgpu_shm_barrier(&p->shm)); /* the world's sum is in slot 0 */
	p->sumsq = shards_sumsq(s);
	if (p->clip) {
		v = p->sumsq; /* the node's shards cover the whole: the global norm */
		MGPU_TRY(mgpu_shm_allreduce_f64(&p->shm, &v, 1));
		scale = mgpu_optim_update_factor(s->opt, sqrt(v), 1.0f);
	}
	s->opt->t -= s->opt->skipped; /* an overflow (fp16): no step counted */
	if (!s->opt->skipped)
		MGPU_TRY(update(s, scale));
	/* every node knows the whole norm: only node 0's share counts (of the
	 * true gradient, under loss scaling) */
	norm2 = p->node == 0 ? p->sumsq : 0.0;
	if (s->opt->scaling)
		norm2 /= s->opt->loss_scale * s->opt->loss_scale;
	return mgpu_sync_close_step(s, vals, n, norm2);
}

/* Within the node, between the leaders, and back within the node. */
static int nodes_allreduce_f64(struct mgpu_sync *s, double *v, int n)
{
	struct nodes_sync *p = priv(s);
	int i;

	MGPU_TRY(mgpu_shm_allreduce_f64(&p->shm, v, n));
	if (leader(s))
		MGPU_TRY(leaders_sum_f64(s, v, n));
	else
		for (i = 0; i < n; i++)
			v[i] = 0.0;
	return mgpu_shm_allreduce_f64(&p->shm, v, n);
}

/* Leader: reduce the buckets published this step that it has not yet,
 * waiting for them (the node's ranks published them before the call that
 * needs this: backward's order). */
static int drain_published(struct mgpu_sync *s)
{
	struct nodes_sync *p = priv(s);
	int b;

	for (; p->next < p->published; p->next++) {
		b = mgpu_sync_bucket_at(s, p->next);
		MGPU_TRY(mgpu_shm_bucket_wait(&p->shm, b));
		MGPU_TRY(reduce(s, b));
	}
	return 0;
}

/* As nodes_allreduce_f64, in float (CPU ranks: v is host memory). */
static int nodes_allreduce_f32(struct mgpu_sync *s, float *v, size_t n)
{
	struct nodes_sync *p = priv(s);

	if (leader(s))
		MGPU_TRY(drain_published(s));
	MGPU_TRY(mgpu_shm_allreduce_f32(&p->shm, v, n));
	if (leader(s))
		MGPU_TRY(p->mpi ? mgpu_mpi_allreduce_f32(p->mpi, v, n) :
				  mgpu_leaders_allreduce_f32(&p->tcp, v, n));
	else
		memset(v, 0, n * sizeof *v);
	return mgpu_shm_allreduce_f32(&p->shm, v, n);
}

static void nodes_abort(struct mgpu_sync *s, int rc)
{
	struct nodes_sync *p = priv(s);

	if (!p)
		return;
	if (p->shm.base)
		mgpu_shm_abort(&p->shm, rc == MGPU_ECLOSED);
	mgpu_leaders_close(&p->tcp); /* the other nodes see it at once */
}

static void nodes_free(struct mgpu_sync *s)
{
	struct nodes_sync *p = priv(s);

	if (!p)
		return;
	if (p->name[0])
		mgpu_shm_unlink(p->name);
	if (p->shm.base)
		mgpu_shm_close(&p->shm);
	mgpu_leaders_close(&p->tcp);
	mgpu_mpi_close(p->mpi);
	free(p);
}

const struct mgpu_sync_strategy mgpu_sync_mpi = {
	.name = "mpi",
	.init = mpi_init,
	.bind = nodes_bind,
	.begin = nodes_begin,
	.reduce_bucket = nodes_reduce_bucket,
	.finish = nodes_finish,
	.allreduce_f64 = nodes_allreduce_f64,
	.allreduce_f32 = nodes_allreduce_f32,
	.cancel = nodes_abort,
	.free = nodes_free,
};

const struct mgpu_sync_strategy mgpu_sync_nodes = {
	.name = "cpu",
	.init = tcp_init,
	.bind = nodes_bind,
	.begin = nodes_begin,
	.reduce_bucket = nodes_reduce_bucket,
	.finish = nodes_finish,
	.allreduce_f64 = nodes_allreduce_f64,
	.allreduce_f32 = nodes_allreduce_f32,
	.cancel = nodes_abort,
	.free = nodes_free,
};
