/*
 * sync_host.c - the gradient sync strategy of GPU ranks on one node without
 * NCCL (--sync-backend cpu, mode ddp): gradients meet in host memory, in
 * lib/comm's shared-memory segment, and are reduced there as CPU ranks
 * reduce them (sync_shm.c), in the same order, so that the results agree
 * with theirs within rounding.
 *
 * Each bucket (one layer's parameters; last layer first, the order
 * backward produces them) passes four stages per optimizer step, each
 * stage in bucket order:
 *   staged     backward queued the bucket's gradient: a copy device ->
 *              this rank's slot starts on the copy stream once the compute
 *              work queued so far is done (gpu/stage.h);
 *   published  that copy is done: the bucket is marked ready in the segment;
 *   reduced    every rank published it: this rank sums its shard of the
 *              bucket over all slots in rank order (mgpu_sync_sum_slots)
 *              into its own slot, and marks the shard reduced (marker
 *              nbuckets + b of the segment's bucket counters);
 *   gathered   every rank reduced its shard: the summed bucket is copied
 *              from the owners' slots to the device gradient.
 * After each bucket of backward the stages advance as far as they can
 * without waiting, so copies and reductions overlap the rest of backward.
 * The last step waits for everything; then each rank steps its own
 * replica on the sum (the loss already averaged over the global batch),
 * as sync_nccl.c does.
 *
 * Every rank initialises (or loads from a checkpoint) its own weights and
 * optimizer state: identical by seed, so no broadcast is needed.
 *
 * Slots: rank r writes its slot (copies from its device) only after the
 * closing barrier of the previous step; the others read it (to reduce, to
 * gather) only before they reach the next closing barrier, having drained
 * their copies: the barrier separates the steps' uses of every slot.
 *
 * On host-memory devices the copies are memcpy, so the same code runs on
 * CPU ranks: MGPU_SYNC_STAGED=1 selects it for them (sync.c), which is how
 * it is tested on machines without a GPU.
 */
#include "train/sync_int.h"

#include <stdlib.h> /* calloc, free */

#include "comm/shm.h"  /* mgpu_shm_* */
#include "core/err.h"  /* mgpu_err, MGPU_TRY */
#include "gpu/stage.h" /* mgpu_stage_* */

struct host_sync {
	struct mgpu_shm shm;
	struct mgpu_stage stage;
	/* buckets through each stage this step, in processing order */
	int staged, published, reduced, gathered;
};

static struct host_sync *priv(const struct mgpu_sync *s)
{
	return s->priv;
}

static int host_init(struct mgpu_sync *s, const struct mgpu_sync_args *a)
{
	s->priv = calloc(1, sizeof(struct host_sync));
	if (!s->priv)
		return mgpu_err(MGPU_ENOMEM, "out of memory for the sync state");
	/* no shared optimizer state: each rank steps its own replica */
	return mgpu_sync_shm_join(s, a, &priv(s)->shm, 0);
}

static int host_bind(struct mgpu_sync *s)
{
	struct host_sync *p = priv(s);

	if (2 * s->nbuckets > MGPU_SHM_MAX_BUCKETS || s->nbuckets > MGPU_STAGE_MAX_TICKETS)
		return mgpu_err(MGPU_EUNSUP, "sync backend cpu on GPUs: %d layers, at most %d",
				s->nbuckets, MGPU_SHM_MAX_BUCKETS / 2);
	return mgpu_stage_open(&p->stage, s->model->dev, p->shm.base, p->shm.nbytes,
			       s->nbuckets);
}

static int reduced_marker(const struct mgpu_sync *s, int b)
{
	return s->nbuckets + b;
}

static void host_begin(struct mgpu_sync *s)
{
	struct host_sync *p = priv(s);

	p->staged = p->published = p->reduced = p->gathered = 0;
}

/* Copy every rank's reduced shard of bucket b to the device gradient. */
static int gather(struct mgpu_sync *s, int b)
{
	struct host_sync *p = priv(s);
	size_t a, e;
	int r;

	for (r = 0; r < s->world; r++) {
		mgpu_sync_shard(s, b, r, &a, &e);
		if (e > a)
			MGPU_TRY(mgpu_stage_to_dev(&p->stage, s->model->g + a, p->shm.g[r] + a,
						   (e - a) * sizeof(float)));
	}
	return 0;
}

/* The stages below take up to max buckets, in order; with block they wait
 * for each, else they stop at the first that is not ready. */

/* Published: this rank's copy of the bucket is in its slot. */
static int publish(struct mgpu_sync *s, int block, int max)
{
	struct host_sync *p = priv(s);
	int b, rc;

	for (; max > 0 && p->published < p->staged; max--) {
		b = mgpu_sync_bucket_at(s, p->published);
		rc = block ? mgpu_stage_wait(&p->stage, b) : mgpu_stage_done(&p->stage, b);
		if (rc <= 0 && (rc < 0 || !block))
			return rc;
		mgpu_shm_bucket_ready(&p->shm, b);
		p->published++;
	}
	return 0;
}

/* Reduced: every rank published the bucket; sum this rank's shard. */
static int reduce(struct mgpu_sync *s, int block, int max)
{
	struct host_sync *p = priv(s);
	size_t a, e;
	int b;

	for (; max > 0 && p->reduced < p->published; max--) {
		b = mgpu_sync_bucket_at(s, p->reduced);
		if (block)
			MGPU_TRY(mgpu_shm_bucket_wait(&p->shm, b));
		else if (!mgpu_shm_bucket_poll(&p->shm, b))
			return 0;
		mgpu_sync_shard(s, b, s->rank, &a, &e);
		mgpu_sync_sum_slots(p->shm.g[s->rank], (const float *const *)p->shm.g, s->world,
				    a, e);
		mgpu_shm_bucket_ready(&p->shm, reduced_marker(s, b));
		p->reduced++;
	}
	return 0;
}

/* Gathered: every rank reduced its shard; copy the sum to the device. */
static int collect(struct mgpu_sync *s, int block, int max)
{
	struct host_sync *p = priv(s);
	int b;

	for (; max > 0 && p->gathered < p->reduced; max--) {
		b = mgpu_sync_bucket_at(s, p->gathered);
		if (block)
			MGPU_TRY(mgpu_shm_bucket_wait(&p->shm, reduced_marker(s, b)));
		else if (!mgpu_shm_bucket_poll(&p->shm, reduced_marker(s, b)))
			return 0;
		MGPU_TRY(gather(s, b));
		p->gathered++;
	}
	return 0;
}

/* Move the buckets through the stages as far as they go without waiting. */
static int advance(struct mgpu_sync *s)
{
	MGPU_TRY(publish(s, 0, s->nbuckets));
	MGPU_TRY(reduce(s, 0, s->nbuckets));
	return collect(s, 0, s->nbuckets);
}

/* After the last backward: take what is ready, and wait for one stage of
 * the oldest bucket when nothing is, so that early buckets are reduced
 * while the GPU still copies later ones. Deadlock-free: a rank waits on a
 * peer only once it has published every bucket (publishing waits on
 * nothing but its own copies), and waits to gather only once it has
 * reduced every bucket, which is all a peer waiting on it needs. */
static int complete(struct mgpu_sync *s)
{
	struct host_sync *p = priv(s);

	for (;;) {
		MGPU_TRY(advance(s));
		if (p->gathered == s->nbuckets)
			return 0;
		if (p->published < p->staged)
			MGPU_TRY(publish(s, 1, 1));
		else if (p->reduced < p->published)
			MGPU_TRY(reduce(s, 1, 1));
		else
			MGPU_TRY(collect(s, 1, 1));
	}
}

static int host_reduce_bucket(struct mgpu_sync *s, int layer, size_t off, size_t cnt)
{
	struct host_sync *p = priv(s);
	int want = p->staged < s->nbuckets ? mgpu_sync_bucket_at(s, p->staged) : -1;

	if (layer != want)
		return mgpu_err(MGPU_EINVAL, "sync: gradient of layer %d came out of order "
				"(expected layer %d)", layer, want);
	MGPU_TRY(mgpu_stage_to_host(&p->stage, layer, p->shm.g[s->rank] + off, s->model->g + off,
				    cnt * sizeof(float)));
	p->staged++;
	return advance(s);
}

static int host_finish(struct mgpu_sync *s, double *vals, int n)
{
	struct host_sync *p = priv(s);

	if (p->staged != s->nbuckets)
		return mgpu_err(MGPU_EINVAL, "sync: %d of %d layer gradients arrived before the "
				"step", p->staged, s->nbuckets);
	MGPU_TRY(complete(s));
	/* the device gradient is the sum now; the slots may be rewritten
	 * after the closing barrier */
	MGPU_TRY(mgpu_stage_drain(&p->stage));
	MGPU_TRY(mgpu_optim_step(s->opt, s->lr, 1.0f));
	return mgpu_sync_close_step(s, vals, n, mgpu_sync_norm2_share(s));
}

static int host_allreduce_f64(struct mgpu_sync *s, double *v, int n)
{
	return mgpu_shm_allreduce_f64(&priv(s)->shm, v, n);
}

/* The statistics go through host memory as the buckets do; their slots
 * are untouched (they may be mid-reduction). */
static int host_allreduce_f32(struct mgpu_sync *s, float *v, size_t n)
{
	return mgpu_sync_shm_sum_f32(s->model->dev, &priv(s)->shm, v, n);
}

static void host_abort(struct mgpu_sync *s, int rc)
{
	mgpu_shm_abort(&priv(s)->shm, rc == MGPU_ECLOSED);
}

static void host_free(struct mgpu_sync *s)
{
	if (!s->priv)
		return;
	mgpu_stage_close(&priv(s)->stage); /* unregisters the segment: before unmapping */
	mgpu_shm_close(&priv(s)->shm);
	free(s->priv);
}

const struct mgpu_sync_strategy mgpu_sync_host = {
	.name = "cpu",
	.init = host_init,
	.bind = host_bind,
	.begin = host_begin,
	.reduce_bucket = host_reduce_bucket,
	.finish = host_finish,
	.allreduce_f64 = host_allreduce_f64,
	.allreduce_f32 = host_allreduce_f32,
	.cancel = host_abort,
	.free = host_free,
};
