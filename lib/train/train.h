/*
 * train.h - the training loop: data split, epochs, steps, evaluation,
 * checkpoints and records, on one rank or data-parallel.
 *
 * The loop never prints: each step, evaluation and the final summary are
 * handed to the caller's on_record hook (rank 0 only) as a struct
 * mgpu_record. Each epoch's global sample order is a pure function of
 * (seed, epoch), the validation split of (seed), dropout masks of (seed,
 * step, global row): a run resumed from a checkpoint repeats the same
 * arithmetic bit for bit, and the samples of a step do not depend on how
 * the global batch is split over ranks and micro-steps.
 *
 * How a step's global batch splits over ranks and micro-steps, and how
 * gradients are averaged, is the batch plan (train/batch.h).
 */
#ifndef MGPU_TRAIN_TRAIN_H
#define MGPU_TRAIN_TRAIN_H

#include <signal.h> /* sig_atomic_t */
#include <stdint.h> /* int64_t, uint64_t */

#include "comm/launch.h" /* struct mgpu_rank_env */
#include "data/augment.h" /* struct mgpu_augment */
#include "data/loader.h"  /* struct mgpu_target_opts */
#include "train/batch.h"     /* struct mgpu_batch_plan */
#include "train/optim.h"     /* struct mgpu_optim_cfg, struct mgpu_sched */
#include "model/spec.h"      /* struct mgpu_spec */

struct mgpu_model; /* model/model.h */

#define MGPU_PATH_MAX 4096
#define MGPU_MAX_DEVICES 64

struct mgpu_train_cfg {
	char data[MGPU_PATH_MAX];     /* what data/source.h opens: IDX directory, cache, shards... */
	struct mgpu_spec spec;
	int prec;                     /* enum mgpu_prec of the products (--dtype) */
	int grad_prec;                /* enum mgpu_prec of the all-reduce (--grad-dtype) */
	int sync_bn;                  /* --sync-bn: BatchNorm's statistics summed over ranks */
	char backend[16];             /* "cpu", "ref" or "cuda" */
	int ndevices;                 /* devices listed (--gpus); 0: CPU ranks */
	int devices[MGPU_MAX_DEVICES];/* backend device of each local rank */
	struct mgpu_rank_env env;     /* this process's place in the job */
	int mode;                     /* enum mgpu_mode */
	int sync;                     /* enum mgpu_sync_kind; resolved */
	int timeout_ms;
	int epochs;
	int64_t max_steps;            /* 0: no limit */
	int per_class;                /* after the summary, a CLASS record per class */
	/* The per-device batch, accumulation steps and ranks in the job (the
	 * world), made from the options by mgpu_batch_plan_make, once: the
	 * run has no other copy of them. */
	struct mgpu_batch_plan plan;
	int lr_scale;                 /* enum mgpu_lr_scale */
	int pad_tail;                 /* uneven tail: 0 drop, 1 pad */
	struct mgpu_optim_cfg optim;
	int sched;                    /* enum mgpu_sched_kind */
	double lr, min_lr, gamma;
	int64_t warmup_steps;
	double warmup_epochs;
	double step_epochs;           /* step schedule period in epochs */
	uint64_t seed;
	double val_fraction;
	int prefetch;                 /* loader threads per rank; 0: fetch in the step */
	struct mgpu_augment augment;  /* training rows' crop and flip (--augment), and
				       * the keypoints' symmetry pairs (--flip-pairs) */
	/* Targets beyond a class id (data/target.h), when the data carry them:
	 * keypoints become maps at topt's sigma and output stride; PCK counts
	 * parts within pck_px input pixels (0: 5% of the image's larger side);
	 * a mask's classes are mask_classes (0: the largest label in the data
	 * plus one, at least 2). */
	struct mgpu_target_opts topt;
	double pck_px;
	int mask_classes;
	char save_dir[MGPU_PATH_MAX]; /* "" : no checkpoints */
	int64_t save_every;           /* steps; 0: at the end of each epoch */
	int keep;                     /* checkpoints kept in save_dir */
	char resume[MGPU_PATH_MAX];   /* "" : fresh start */
	char init[MGPU_PATH_MAX];     /* weights to start from (model/hf_gpt2.h); "": none */
	int log_every;                /* steps per step record */
	/* Lines "KEY VALUE": the settings every rank of a job must share,
	 * compared at the rendezvous (comm/rdzv.h) with the data's identity
	 * added; NULL: the settings are not compared, the data still is. */
	const char *ident;
	/* --dtype fp16's dynamic loss scaling, as torch.cuda.amp.GradScaler:
	 * the loss is multiplied by the scale (init) before backward; a step
	 * whose gradient overflows is skipped on every rank and multiplies it
	 * by backoff; interval clean steps in a row multiply it by growth. */
	double loss_scale_init, loss_scale_growth, loss_scale_backoff;
	int64_t loss_scale_interval;
	/* issue 22: using a trained model */
	int evaluate;                 /* evaluate the resume checkpoint, no training */
	char predict[MGPU_PATH_MAX];  /* "": none; else the .npy of predictions */
	int predict_class;            /* 1: class ids (int32), 0: logits (float32) */
	const char *const *argv;      /* the resolved options, saved verbatim */
	int argc;
	volatile sig_atomic_t *stop;  /* non-zero: checkpoint and return EINTR */
};

/* Learning rate x (ranks x accumulation steps), or its square root. */
enum mgpu_lr_scale { MGPU_LR_SCALE_NONE = 0, MGPU_LR_SCALE_LINEAR, MGPU_LR_SCALE_SQRT };

/* An evaluation's metrics of a target (data/metrics.h): the mean
 * keypoint error in input pixels and PCK (keypoints), mean IoU (masks),
 * RMSE (vectors); NaN for the others. */
struct mgpu_target_scores {
	double kp_err_px, pck, miou, rmse;
};

/* START comes once, after data, device and checkpoint loaded: total steps
 * in .step, steps per epoch in .epoch, the step training starts from in
 * .first_step (a resumed run's position; == .step: nothing to train).
 * CLASS (cfg.per_class, an mlp) follows the summary once per class: the
 * accuracy on the test split in .test_acc (on the validation split in
 * .val_acc when there is no test split), its rows in .samples. */
enum mgpu_record_kind {
	MGPU_REC_STEP, MGPU_REC_EVAL, MGPU_REC_SUMMARY, MGPU_REC_CKPT, MGPU_REC_START,
	MGPU_REC_CLASS
};

struct mgpu_record {
	int kind;
	int64_t step;          /* optimizer steps done */
	int64_t first_step;    /* START: see above */
	int epoch;             /* 1-based epoch the step belongs to */
	double loss;           /* mean training loss over the logged window */
	double lr;
	double samples_per_s;  /* NaN in a summary when no step ran */
	double step_ms;        /* mean wall time of one step in the window */
	double data_ms;        /* mean time of that spent waiting for data */
	double grad_norm;      /* mean L2 norm of the summed gradient (before clipping;
				* NaN when an overflow was skipped in the window) */
	double loss_scale;     /* fp16: the scale after the window; else NaN */
	int64_t skipped;       /* fp16: the run's steps skipped for an overflow so far */
	/* Mean blocking device-to-host reads and host-to-device copies per
	 * optimizer step over the window (struct mgpu_dev's counters; for
	 * library callers and tests, mgpu-train does not print them). */
	double d2h_per_step, h2d_per_step;
	double val_loss, val_acc;
	double test_loss, test_acc;
	/* EVAL, SUMMARY of data with a target (.target, enum
	 * mgpu_target_kind; 0: none and these are unset): the split's
	 * metrics (data/metrics.h), NaN where the kind has none */
	int target;
	struct mgpu_target_scores val_t, test_t;
	double pck_px;         /* keypoints: PCK's threshold in input pixels */
	double wall_s;
	int ndev;
	int64_t peak_bytes[MGPU_MAX_DEVICES];  /* per device */
	int64_t rss_bytes[MGPU_MAX_DEVICES];   /* per rank: peak resident set */
	const char *path;      /* checkpoint written (MGPU_REC_CKPT) */
	const struct mgpu_spec *spec; /* START: the model, its auto sizes filled in */
	int sample_ndim;              /* START: one sample's shape (data/source.h's */
	uint32_t sample_shape[4];     /* mgpu_source_shape), its class count */
	int classes;
	int class_id;                 /* CLASS */
	const char *class_name;       /* CLASS: the data's name for it, or its number */
	int64_t samples;              /* CLASS: rows of that class evaluated */
	int64_t effective_batch;
	int world;
	int mode, sync;
};

/* After every optimizer step, for a live status on a terminal. */
struct mgpu_step_info {
	int64_t step, total;   /* optimizer steps done, and of the whole run */
	int epoch;             /* 1-based epoch the step belongs to */
	double loss;           /* this step's mean loss over the global batch */
	double lr;             /* the rate the step ran with */
	int64_t samples;       /* samples per step: the global batch */
};

struct mgpu_train_hooks {
	int (*on_record)(void *ctx, const struct mgpu_record *r);
	/* Rank 0, after each step (NULL: none). */
	void (*on_progress)(void *ctx, const struct mgpu_step_info *s);
	void *ctx;
	/* Rank 0 only, after the summary record: the trained model, for what
	 * the caller does with it (mgpu-train samples text from a gpt). Other
	 * ranks may have finished by then: no collective call. NULL: none.
	 * data_dtype is the training data's (enum mgpu_dtype): a gpt on u16
	 * or u32 rows speaks token ids, on u8 rows bytes. */
	int (*on_model)(void *ctx, struct mgpu_model *m, int data_dtype);
	/* Rank 0 only, when a stop request ends the run, after the last
	 * records and the checkpoint and before the ranks part: the moment to
	 * make the output whole, since an outside launcher (mpirun) may kill
	 * the ranks soon after it forwarded the signal. NULL: none. */
	void (*on_stop)(void *ctx);
};

/* Defaults for every field (the documented ones of mgpu-train). */
void mgpu_train_defaults(struct mgpu_train_cfg *cfg);
/* What rank 0 checks first, done once by a launcher before it starts
 * ranks: the save dir can be made, written and locked. */
int mgpu_train_precheck(const struct mgpu_train_cfg *cfg);
/* That cfg can continue the checkpoint of cfg->resume (model, seed,
 * global batch): MGPU_EINVAL when an option contradicts it, others when
 * it cannot be read. */
int mgpu_train_check_resume(const struct mgpu_train_cfg *cfg);
/* Run to completion; MGPU_EINTR when cfg->stop was raised on any rank
 * (after the checkpoint, when save_dir is set). In mode dp this runs one
 * thread per device; in mode ddp this process is rank cfg->env.rank. */
int mgpu_train_run(const struct mgpu_train_cfg *cfg, const struct mgpu_train_hooks *h);

#endif
