/*
 * sync_int.h - what a gradient sync strategy provides (sync_none.c,
 * sync_shm.c, sync_host.c, sync_nccl.c), and the helpers of sync.c and
 * sync_shm.c they share; not a public header.
 *
 * A new strategy is one file defining a const struct mgpu_sync_strategy
 * (sync_nodes.c defines two, mpi and cpu across nodes, one per transport),
 * plus its line in the table of sync.c (and its enum mgpu_sync_kind value).
 * It sums the ranks' gradients and steps the optimizer with grad_scale 1:
 * the averaging is done once, by the loss (train/batch.h).
 *
 * Call order on a rank: init once; bind once, after the model and
 * optimizer exist; per optimizer step, begin before the backward of the
 * micro-step that ends with a sync, reduce_bucket for each layer's
 * gradient as that backward finishes it (last layer first), then finish;
 * allreduce_f64 at any point between steps; allreduce_f32 at the same
 * points of every rank's forward and backward; cancel on failure; free last
 * (also after a failed init). Members marked optional may be NULL.
 */
#ifndef MGPU_TRAIN_SYNC_INT_H
#define MGPU_TRAIN_SYNC_INT_H

#include <stdint.h> /* uint16_t */

#include "comm/rdzv.h" /* struct mgpu_rdzv_info */
#include "train/sync.h"   /* struct mgpu_sync */

/* What mgpu_sync_open was given. */
struct mgpu_sync_args {
	const struct mgpu_rank_env *env;
	size_t nparams;
	int nstate;                 /* optimizer state vectors */
	struct mgpu_dev *dev;
	int timeout_ms;
};

struct mgpu_sync_strategy {
	const char *name;           /* as --sync-backend spells it */
	/* Mode ddp: join the job (s->rank, world and mode are set). On
	 * failure leave s for free to release. */
	int (*init)(struct mgpu_sync *s, const struct mgpu_sync_args *a);
	/* Optional: the model and optimizer are bound (s->model, s->opt). */
	int (*bind)(struct mgpu_sync *s);
	/* Optional: the coming backward ends the optimizer step. */
	void (*begin)(struct mgpu_sync *s);
	/* Optional: layer's gradient [off, off + cnt) of s->model->g is final. */
	int (*reduce_bucket)(struct mgpu_sync *s, int layer, size_t off, size_t cnt);
	/* After the last backward: complete the reduction, step the optimizer,
	 * close the step (see mgpu_sync_step). */
	int (*finish)(struct mgpu_sync *s, double *vals, int n);
	/* Optional (one rank needs none): sum n doubles over the ranks. */
	int (*allreduce_f64)(struct mgpu_sync *s, double *v, int n);
	/* Optional (one rank needs none): sum n floats of the bound model's
	 * device (v) over the ranks in place, inside a forward or backward
	 * (see mgpu_sync_stats): the same bits on every rank. */
	int (*allreduce_f32)(struct mgpu_sync *s, float *v, size_t n);
	/* Optional: close a step on the device. host[k0..n) replace the
	 * device doubles v_dev[k0..n), v_dev[0..n) is summed over the ranks
	 * in place after the work queued so far, and the sums come back in
	 * host[0..n) with one read. Without it the host reads v_dev[0..k0)
	 * and sums everything with allreduce_f64. */
	int (*allreduce_stats)(struct mgpu_sync *s, double *v_dev, double *host, int k0, int n);
	/* Optional: tell the peers this rank failed with rc. */
	void (*cancel)(struct mgpu_sync *s, int rc);
	/* Optional: release s->priv and whatever init made. */
	void (*free)(struct mgpu_sync *s);
};

extern const struct mgpu_sync_strategy mgpu_sync_none, mgpu_sync_shm, mgpu_sync_nccl,
	mgpu_sync_mpi, mgpu_sync_nodes;
/* The other strategy of --sync-backend cpu: GPU ranks (sync_host.c). */
extern const struct mgpu_sync_strategy mgpu_sync_host;

/* Mode ddp rendezvous: rank 0 listens (unless its launcher did), hands
 * info to every rank and learns whether all run on its host; the others
 * connect and receive info. Rank 0 fills info before the call. */
int mgpu_sync_rendezvous(const struct mgpu_sync *s, const struct mgpu_sync_args *a,
			 struct mgpu_rdzv_info *info);
/* The bucket processed i-th in a step: backward's order, last layer first. */
int mgpu_sync_bucket_at(const struct mgpu_sync *s, int i);
/* Hand process() each bucket from *next on, in that order, once every rank
 * of the segment shm has marked it ready: without waiting up to bucket
 * `published` (stopping at the first not ready), or with block all of
 * them, waiting. *next counts the buckets processed this step. */
int mgpu_sync_drain_buckets(struct mgpu_sync *s, struct mgpu_shm *shm, int *next,
			    int published, int block, int (*process)(struct mgpu_sync *s, int b));
/* The closing barrier of a step: read the model's step statistics (one
 * read), sum them with vals[0..n) and norm2 over the ranks, and set
 * s->step_loss, step_correct and grad_norm (see mgpu_sync_step). norm2 is
 * this rank's share of the squared norm of the averaged gradient known on
 * the host; a squared norm the optimizer left on the device counts from
 * rank 0 only (every rank that steps holds the same gradient). */
int mgpu_sync_close_step(struct mgpu_sync *s, double *vals, int n, double norm2);
/* The norm2 share of a rank that stepped with mgpu_optim_step: rank 0's
 * squared norm when the host knows it (clipping), else 0. */
double mgpu_sync_norm2_share(const struct mgpu_sync *s);
/* sync_shm.c, for the strategies that reduce in the node's segment: rank
 * 0 creates it (with nstate state vectors), the rendezvous names it, the
 * others attach; every rank on one host, or MGPU_EUNSUP. */
int mgpu_sync_shm_join(const struct mgpu_sync *s, const struct mgpu_sync_args *a,
		       struct mgpu_shm *shm, int nstate);
/* mgpu_shm_allreduce_f32 of n floats of dev: in place where device memory
 * is host memory, else through host copies. */
int mgpu_sync_shm_sum_f32(struct mgpu_dev *dev, struct mgpu_shm *shm, float *v, size_t n);
/* Rank r's shard [*a, *e) of bucket b: the r-th of world near-equal slices. */
void mgpu_sync_shard(const struct mgpu_sync *s, int b, int r, size_t *a, size_t *e);
/* dst[a, e) = g[0] + g[1] + ... + g[world - 1] over [a, e), summed in rank
 * order ((g0 + g1) + g2) + ...: the same bits on every rank, every run and
 * every strategy that reduces host slots. dst may be one of the g[r]. */
void mgpu_sync_sum_slots(float *dst, const float *const *g, int world, size_t a, size_t e);
/* --grad-dtype bf16: the same over bf16 slots, each value widened and
 * summed in fp32 in rank order, into fp32 dst (not one of the slots). */
void mgpu_sync_sum_slots_bf16(float *dst, const uint16_t *const *g, int world, size_t a,
			      size_t e);

#endif
