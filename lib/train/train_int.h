/*
 * train_int.h - what the parts of the training loop share (train.c,
 * train_data.c, train_rank.c); not a public header.
 *
 * One struct train_data per process, read-only once loaded (mode dp's
 * threads share it); one struct train_rank per rank.
 */
#ifndef MGPU_TRAIN_TRAIN_INT_H
#define MGPU_TRAIN_TRAIN_INT_H

#include "data/loader.h"  /* struct mgpu_loader */
#include "data/source.h"  /* struct mgpu_source */
#include "train/ckpt.h"      /* struct mgpu_ckpt_dir */
#include "model/model.h"     /* struct mgpu_model */
#include "train/optim.h"     /* struct mgpu_optim, struct mgpu_sched */
#include "train/sync.h"      /* struct mgpu_sync */
#include "train/train.h"     /* struct mgpu_train_cfg */

struct train_data {
	struct mgpu_source src;        /* cache, manifest, shards or IDX */
	int val_split;                 /* MGPU_SPLIT_VAL, or TRAIN for our own split */
	uint32_t *val_idx, *train_idx; /* one block: val first */
	size_t ntrain, nval;           /* the norm is src.norm (data/norm.h) */
	/* The samples' target (src.tkind; 0: none) as the loss takes it
	 * (model/target_loss.h): K values, P maps of h x w, or a mask of
	 * h x w in classes; the output stride of the maps, PCK's pixels */
	int tkind, K, P, h, w, classes, stride;
	double pck_px;
};

struct train_rank {
	const struct mgpu_train_cfg *cfg;
	const struct mgpu_train_hooks *h;
	struct train_data *d;
	int rank, world, local_rank;
	struct mgpu_dev dev;
	int dev_open, sync_open;
	struct mgpu_model model;
	struct mgpu_optim opt;
	struct mgpu_sync sync;
	const struct mgpu_shm *dp_shm; /* mode dp: the process's segment */
	uint32_t *order;               /* this epoch's global order */
	uint8_t *xb;                   /* staging: batch rows (row_nbytes each) */
	struct mgpu_loader loader;     /* prefetches this rank's training rows */
	int loader_open;
	/* data with targets: evaluations read through a loader too (it
	 * renders them), one that never augments; tout holds a batch's
	 * outputs on the host for the metrics */
	struct mgpu_loader eval_loader;
	int eval_loader_open;
	float *tout;
	uint32_t *rank_order;          /* this rank's rows for the rest of the epoch */
	int32_t *yb;
	struct mgpu_sched sched;
	const struct mgpu_batch_plan *plan; /* the run's, &cfg->plan */
	int64_t steps_per_epoch, total_steps, step;
	int epoch;                     /* 0-based */
	int64_t pos;                   /* steps done in this epoch */
	double lr_factor;
	double t0;
	double win_loss, win_step_s, win_data_s; /* the logging window */
	double win_gnorm;              /* the window's summed gradient norms */
	int64_t win_gnorm_n;           /* how many (a skipped overflow has none) */
	int64_t win_steps, win_samples;
	uint64_t win_d2h, win_h2d;     /* the window's steps' reads and uploads */
	double *eval_acc;              /* (2) an evaluation's sums (device) */
	/* --dtype fp16: the loss scale (0: none), clean steps since it last
	 * changed, steps skipped for an overflow (the run's, resumes too);
	 * and MGPU_TEST_OVERFLOW's "RANK:STEP", a step whose gradient this
	 * rank makes infinite (tests; -1: none) */
	double loss_scale;
	int64_t ls_clean, ls_skipped, inject_step;
	int preloaded;                 /* the next micro-step's rows are loaded */
	int rc;                        /* a thread's result */
};

/* train_data.c */
/* Open cfg->data and fit *spec to it (auto sizes from the data); fixed
 * (may be NULL): the norm to use instead of the training split's (an
 * evaluation uses its checkpoint's). */
int mgpu_train_data_load(struct train_data *d, const struct mgpu_train_cfg *cfg,
			 struct mgpu_spec *spec, const struct mgpu_norm *fixed);
void mgpu_train_data_free(struct train_data *d);
void mgpu_train_order(const struct train_data *d, uint64_t seed, int epoch, uint32_t *order);
int mgpu_train_load_rows(struct train_rank *r, const uint32_t *idx, int B, int split);
/* What the data holds against the model built for it (a gpt's token ids
 * below its vocab): after the model exists, before the first step. */
int mgpu_train_data_check(const struct train_data *d, const struct mgpu_train_cfg *cfg,
			  const struct mgpu_model *m);
int mgpu_train_put_batch(struct train_rank *r, const void *x, const int32_t *y, int B);
/* The same with the batch's targets (tb->kind 0: none). */
int mgpu_train_put_batch_t(struct train_rank *r, const void *x, const int32_t *y,
			   const struct mgpu_target_batch *tb, int B);
/* Append the data's identity to buf (lines "KEY VALUE", rdzv.h): the
 * splits' sizes and shape, the norm, a digest of sampled rows; what every
 * rank of a job must agree on whatever path it reads the data from. */
int mgpu_train_data_ident(struct train_data *d, char *buf, size_t len);

/* train_rank.c */
int mgpu_train_open_save_dir(struct mgpu_ckpt_dir *d, const char *dir);
int mgpu_train_rank_setup(struct train_rank *r);
void mgpu_train_rank_free(struct train_rank *r);

/* predict.c: rank 0 writes cfg->predict */
int mgpu_train_predict(struct train_rank *r);

/* train.c */
int mgpu_train_rank_loop(struct train_rank *r);
int mgpu_train_emit(struct train_rank *r, struct mgpu_record *rec);

#endif
