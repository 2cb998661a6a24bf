/*
 * optim.h - SGD (momentum, Nesterov) and AdamW over a model's flat
 * parameters, with global-norm gradient clipping and LR schedules.
 *
 * State (momentum, or AdamW's m and v) lives on the model's device in flat
 * buffers laid out like the parameters, so a checkpoint saves it under the
 * parameter names. Weight decay applies to matrices, not to biases or
 * LayerNorm parameters.
 */
#ifndef MGPU_TRAIN_OPTIM_H
#define MGPU_TRAIN_OPTIM_H

#include <stdint.h> /* int64_t */

#include "model/model.h" /* struct mgpu_model */

enum mgpu_opt_kind { MGPU_OPT_SGD = 0, MGPU_OPT_ADAMW = 1 };
enum mgpu_sched_kind { MGPU_SCHED_CONSTANT = 0, MGPU_SCHED_COSINE = 1, MGPU_SCHED_STEP = 2 };

struct mgpu_optim_cfg {
	int kind;           /* enum mgpu_opt_kind */
	float momentum;     /* SGD */
	int nesterov;       /* SGD */
	float beta1, beta2, eps; /* AdamW */
	float weight_decay;
	float clip_norm;    /* 0: no clipping */
};

struct mgpu_sched {
	int kind;           /* enum mgpu_sched_kind */
	double lr;          /* peak learning rate */
	double min_lr;      /* cosine floor */
	int64_t warmup_steps;
	int64_t total_steps;
	int64_t step_every; /* step schedule: multiply by gamma every N steps */
	double gamma;
};

struct mgpu_optim {
	struct mgpu_optim_cfg cfg;
	struct mgpu_model *model;
	float *m, *v;       /* device state, NULL when unused */
	int ext;            /* m, v belong to the caller */
	int64_t t;          /* updates done (AdamW bias correction) */
	double last_norm;   /* gradient norm before clipping, last step (NaN:
			     * norm2_queued) */
	/* A device double (the model's MGPU_STAT_NORM2, set by the sync
	 * layer) or NULL. Without clipping the norm feeds only the training
	 * loop's non-finite check: mgpu_optim_step then adds the squared norm
	 * there (sum_acc) instead of reading it back, and sets norm2_queued;
	 * with clipping the update needs it first: one blocking read (nrm2). */
	double *norm2_dev;
	int norm2_queued;   /* the last step's norm went to norm2_dev */
	/* Dynamic loss scaling (--dtype fp16): the gradient is loss_scale
	 * times the true one. The update waits for its global norm (as with
	 * clipping), divides by loss_scale, and is skipped altogether when
	 * the norm is not finite (an overflow): skipped says so. Set before
	 * the sync binds (which then defers its updates). */
	int scaling;
	double loss_scale;
	int skipped;
};

const char *mgpu_optim_name(int kind);
int mgpu_optim_create(struct mgpu_optim *o, struct mgpu_model *model,
		      const struct mgpu_optim_cfg *cfg);
/* The same with caller-owned, zeroed state vectors (nparams floats each,
 * as many as mgpu_optim_nstate_for says), e.g. shared by a node's ranks. */
int mgpu_optim_create_ext(struct mgpu_optim *o, struct mgpu_model *model,
			  const struct mgpu_optim_cfg *cfg, float *state0, float *state1);
/* State vectors a configuration needs (0, 1 or 2). */
int mgpu_optim_nstate_for(const struct mgpu_optim_cfg *cfg);
void mgpu_optim_free(struct mgpu_optim *o);
/* One update with learning rate lr; the gradient is first multiplied by
 * grad_scale (1 for an averaged gradient), then clipped to cfg.clip_norm
 * (with scaling: unscaled, or skipped on an overflow, see skipped).
 * Its norm: see norm2_dev (taken on the device when grad_scale is 1 and
 * nothing is clipped). */
int mgpu_optim_step(struct mgpu_optim *o, float lr, float grad_scale);
/* Whether mgpu_optim_step(o, lr, grad_scale) reads the gradient norm back
 * (a blocking read: clipping, or no norm2_dev), so that a caller whose
 * gradient is still being summed elsewhere (NCCL) waits for that first,
 * watching for failures, instead of blocking in the read. */
int mgpu_optim_reads_norm(const struct mgpu_optim *o, float grad_scale);
/* The update of parameters [begin, end) only, with the gradient already
 * scaled and clipped by grad_scale, and o->t already counting this step:
 * the sharded form, where each rank updates its own slice. */
int mgpu_optim_step_range(struct mgpu_optim *o, float lr, float grad_scale, size_t begin,
			  size_t end);
/* The same where the gradient is the sum of ng host vectors g[k] (indexed
 * like the parameters), fed into the update without being stored: the
 * fused reduce + update of shared-memory ranks. Host memory only. */
int mgpu_optim_step_range_sum(struct mgpu_optim *o, float lr, float grad_scale,
			      size_t begin, size_t end, const float *const *g, int ng);
#define MGPU_OPTIM_MAX_SUM 64
/* The clip factor for a gradient of global L2 norm `norm` (1 when off). */
float mgpu_optim_clip_factor(const struct mgpu_optim *o, double norm);
/* Whether updates must wait for the global norm: clipping or scaling. */
int mgpu_optim_defers(const struct mgpu_optim *o);
/* What the update multiplies a gradient of global norm `norm` (already
 * times grad_scale) by: 1 / loss_scale and the clip factor of the true
 * norm, which becomes o->last_norm. With scaling, a norm that is not
 * finite sets o->skipped (the caller updates nothing); else it is 0. */
float mgpu_optim_update_factor(struct mgpu_optim *o, double norm, float grad_scale);
/* Number of state vectors (0, 1 or 2) and access for checkpoints. */
int mgpu_optim_nstate(const struct mgpu_optim *o);
float *mgpu_optim_state(struct mgpu_optim *o, int i);

/* The rate of 0-based step `step` of a run of total_steps steps: linear
 * warm-up (step w of W runs at lr*(w+1)/W), then the schedule. Cosine runs
 * the first step after warm-up at lr and the last step (total_steps - 1) at
 * exactly min_lr: with T = total_steps - warmup_steps - 1 steps after the
 * first, step warmup_steps + t runs at
 * min_lr + (lr - min_lr) * (1 + cos(pi * t / T)) / 2 (T = 0: lr). */
double mgpu_sched_lr(const struct mgpu_sched *s, int64_t step);

#endif
