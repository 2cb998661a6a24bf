/*
 * sync.h - gradient synchronisation and the optimizer step of one rank.
 *
 * Strategies, one file each (sync_<name>.c), listed in the table of
 * sync.c; sync_int.h says what a strategy provides:
 * - none (sync_none.c): one rank; the optimizer steps on its own gradient.
 * - cpu (sync_shm.c, mode ddp): the ranks of a node share one shared-memory
 *   segment holding the master weights, the optimizer state and one
 *   gradient slot per rank. As backward finishes each layer (last first)
 *   the rank marks that bucket ready; each bucket is split into one shard
 *   per rank, and the rank owning a shard sums the slots there and applies
 *   the optimizer to that shard of the shared weights in the same pass
 *   (reduce and update fused and sharded: no all-gather, one copy of
 *   weights per node). A bucket is reduced as soon as every rank has it,
 *   even while backward continues. With gradient clipping the update waits
 *   for the global norm.
 * - cpu (sync_host.c, mode ddp, GPUs): the ranks of a node share the
 *   segment's gradient slots only. As backward finishes each bucket, a
 *   copy stream moves it to the rank's slot in page-locked host memory;
 *   the ranks reduce the buckets there as above (the same order, so the
 *   same sums as CPU ranks), copy the sums back to their GPUs, and each
 *   steps its own replica. MGPU_SYNC_STAGED=1 runs CPU ranks this way.
 * - cpu (sync_shm.c, mode dp): threads of one process; rank 0 holds the
 *   master weights and the optimizer, sums every slot, updates, and the
 *   other replicas copy the weights back, as torch.nn.DataParallel does.
 * - nccl (sync_nccl.c, mode ddp, GPUs): in-place ncclAllReduce of each
 *   bucket on a communication stream as backward produces it; each rank
 *   then steps its own replica.
 * - mpi, and cpu on several nodes (sync_nodes.c, CPU ranks): shared memory
 *   within each node as cpu does, and each bucket all-reduced between the
 *   node leaders as backward produces it, over MPI (ranks of mpirun) or
 *   over TCP (mgpu-train's own launcher, torchrun, Slurm). mgpu_sync_open
 *   turns cpu into one of them when the job spans nodes: mpi under mpirun
 *   in a build with MPI, else TCP.
 *
 * Each rank's gradient arrives already scaled by 1 / global batch (the
 * batch plan, train/batch.h), so its sum over the ranks is the mean: a
 * strategy sums, it never scales. The bytes move through lib/comm (shared
 * memory, NCCL, rendezvous); what they mean (buckets of layers, the
 * optimizer step) is decided here.
 * Every strategy ends a step with a barrier that also agrees on whether to
 * stop (any rank interrupted), so all ranks stop after the same step.
 */
#ifndef MGPU_TRAIN_SYNC_H
#define MGPU_TRAIN_SYNC_H

#include <stddef.h> /* size_t */

#include "comm/launch.h" /* struct mgpu_rank_env */
#include "comm/shm.h"    /* struct mgpu_shm (mode dp) */
#include "model/model.h"    /* struct mgpu_model */
#include "train/optim.h"    /* struct mgpu_optim */

enum mgpu_mode { MGPU_MODE_DDP = 0, MGPU_MODE_DP = 1 };
/* One per strategy; the value indexes the table in sync.c. */
enum mgpu_sync_kind {
	MGPU_SYNC_NONE = 0, MGPU_SYNC_CPU = 1, MGPU_SYNC_NCCL = 2,
	MGPU_SYNC_MPI = 3,            /* CPU ranks, node leaders over MPI */
	MGPU_SYNC_NODES = 4,          /* CPU ranks, node leaders over TCP */
};
/* The words of --sync-backend, indexed by enum mgpu_sync_kind up to
 * MGPU_SYNC_MPI and NULL-terminated (an option table's word list): "auto"
 * at MGPU_SYNC_NONE, the option's "let the trainer choose"; the nodes
 * strategy has no word (cpu across nodes picks it). */
extern const char *const mgpu_sync_words[];
#define MGPU_SYNC_KINDS 4             /* the words before the NULL */

struct mgpu_sync_strategy;

struct mgpu_sync {
	const struct mgpu_sync_strategy *st;
	void *priv;                   /* the strategy's own state */
	int kind, mode;
	int rank, world;
	struct mgpu_model *model;
	struct mgpu_optim *opt;
	/* Host buffers the ranks share (set by the strategy; NULL: the rank's
	 * own): see mgpu_sync_model_buffers. */
	float *shared_w, *shared_g, *shared_state[2];
	int grad_prec;                /* enum mgpu_prec of the all-reduce (--grad-dtype) */
	int loads_state;              /* see mgpu_sync_loads_state */
	int owns_optimizer;           /* see mgpu_sync_owns_optimizer */
	int nbuckets;                 /* one per layer */
	size_t boff[MGPU_MAX_LAYERS], bcnt[MGPU_MAX_LAYERS];
	int syncing;                  /* this micro-step ends with a sync */
	float lr;
	double grad_norm;             /* after mgpu_sync_step: see there */
	double step_loss, step_correct; /* after mgpu_sync_step: see there */
};

/* Mode ddp: join the job of env (rendezvous; then the shared segment for
 * kind cpu, the communicator for kind nccl). One rank: kind none. */
int mgpu_sync_open(struct mgpu_sync *s, const struct mgpu_rank_env *env, int kind,
		   size_t nparams, int nstate, struct mgpu_dev *dev, int timeout_ms);
/* Mode dp: rank `rank` of the threads sharing the private segment seg. */
int mgpu_sync_open_dp(struct mgpu_sync *s, const struct mgpu_shm *seg, int rank);
const char *mgpu_sync_name(int kind);
const char *mgpu_mode_name(int mode);

/* All-reduce gradients in prec (enum mgpu_prec; fp32 by default): bf16
 * sends each rank's gradient rounded to bf16, half the bytes, and sums
 * them in fp32 (strategies cpu on one node and nccl; one rank has nothing
 * to reduce; others are MGPU_EUNSUP). After open, before the model is
 * built: in bf16 a cpu rank's model keeps its own fp32 gradient. */
int mgpu_sync_set_grad_prec(struct mgpu_sync *s, int prec);
/* Bind a built model and optimizer to the strategy: buckets, hooks, and
 * for cpu the shared buffers (rank 0's initial weights are published);
 * every rank takes rank 0's model buffers (BatchNorm's running
 * statistics, m->buf), as torch DDP does at its start. The
 * model and optimizer must have been created with the buffers from
 * mgpu_sync_model_buffers(). */
int mgpu_sync_bind(struct mgpu_sync *s, struct mgpu_model *m, struct mgpu_optim *o);
/* --sync-bn: the model's stat_sum hook (model/model.h, which a family's
 * BatchNorm calls with its per-channel sums) becomes mgpu_sync_stats, so
 * each BatchNorm normalises with the statistics of every rank's batch.
 * After mgpu_sync_bind. MGPU_EINVAL when the model has no BatchNorm (no
 * running_mean buffer). */
int mgpu_sync_bind_bn(struct mgpu_sync *s, struct mgpu_model *m);
/* Buffers the model and optimizer of this rank must use (NULL: their own). */
void mgpu_sync_model_buffers(const struct mgpu_sync *s, int host_memory, float **w,
			     float **g, float **state0, float **state1);
/* Set before the backward of each micro-step: sync only on the last one. */
void mgpu_sync_micro(struct mgpu_sync *s, int last, float lr);
/* After the last backward: finish the reduction, queue the update, then
 * read the step's statistics from the device (the model's m->stats: the
 * loss and correct sums its micro-steps accumulated, the squared gradient
 * norm; ONE blocking read, after everything of the step is queued) and sum
 * them and n (<= 12) host values (the stop flag) over the ranks in the
 * closing barrier. Every rank leaves with the same vals, s->step_loss and
 * s->step_correct (sums over the global batch), and s->grad_norm, the L2
 * norm of the step's averaged gradient before clipping (NaN or infinite
 * when the gradient was), so that all ranks agree to stop on a non-finite
 * gradient. m->stats is zero again for the next step. */
int mgpu_sync_step(struct mgpu_sync *s, double *vals, int n);
/* Whether this rank initialises or loads weights and optimizer state (the
 * others share them or receive them when binding). */
int mgpu_sync_loads_state(const struct mgpu_sync *s);
/* Whether this rank has optimizer state of its own (mode dp: rank 0 only). */
int mgpu_sync_owns_optimizer(const struct mgpu_sync *s);
/* Sum n doubles over the ranks (evaluation sums, peaks). */
int mgpu_sync_allreduce_f64(struct mgpu_sync *s, double *v, int n);
/* --sync-bn: sum n floats v (device memory of the bound model's device)
 * over the ranks in place, where a model family's forward or backward
 * needs them (BatchNorm's per-channel sums: ops.h, bn_stats), as torch's
 * SyncBatchNorm does: after the work queued so far, before what the
 * caller queues next. Every rank calls it at the same points with the
 * same n, and every rank gets the same bits (a fixed order: rank order
 * within a node, node order between them; NCCL's own on GPUs), so the
 * replicas stay identical. Between buckets of a backward it keeps the
 * gradient sync going (node leaders first finish the buckets their ranks
 * published, so that every leader exchanges in one order). One rank:
 * nothing to do. */
int mgpu_sync_stats(struct mgpu_sync *s, float *v, size_t n);
/* Tell the peers this rank failed with error code rc. */
void mgpu_sync_abort(struct mgpu_sync *s, int rc);
void mgpu_sync_close(struct mgpu_sync *s);

#endif
