/*
 * loader.h - a prefetching batch loader over a data source.
 *
 * The caller gives each pass (an epoch, an evaluation) as the list of rows
 * in the order it wants them; the loader cuts it into batches and N
 * background threads fetch batches ahead into a ring of 2N buffers, so
 * mgpu_loader_next() usually returns at once. The time next() spent
 * blocked is reported as wait_ms: the trainer's data_ms. With prefetch 0
 * there are no threads and next() fetches synchronously (wait_ms is the
 * fetch time).
 *
 * The order array belongs to the caller and must stay unchanged until the
 * pass ends (the next begin() or free()). The x/y returned by next() stay
 * valid until the next call to next(), begin() or free(). Rows are what
 * mgpu_source_rows() gives: float32 ones normalised with the source's norm
 * (in the worker threads), uint8 ones as stored.
 *
 * With mgpu_loader_augment(), the rows of training passes are cropped and
 * flipped (data/augment.h) in the worker threads, after the fetch and
 * before the consumer sees them, with draws from (seed, the pass's epoch,
 * the row index): the same rows whatever the prefetch or the batch a row
 * falls in.
 *
 * Rows whose samples carry a target (data/target.h) come with it, moved
 * by the augmentation with its image, and made into what a loss takes in
 * the worker threads (struct mgpu_target_batch): a vector as stored, a
 * mask as int32 class ids (255 becoming -1, ignored), keypoints as
 * Gaussian confidence maps (mgpu_keypoints_render, at the sigma and
 * output stride of mgpu_loader_targets) with a weight per part and the
 * moved keypoints themselves (for the metrics).
 *
 * Threads: one consumer thread calls augment/targets/begin/next/free; the
 * workers only call mgpu_source_rows_t(), the augmentation and the
 * rendering.
 */
#ifndef MGPU_DATA_LOADER_H
#define MGPU_DATA_LOADER_H

#include <pthread.h> /* pthread_t, pthread_mutex_t, pthread_cond_t */
#include <stddef.h>  /* size_t */
#include <stdint.h>  /* uint32_t, int32_t, int64_t */

#include "data/augment.h" /* struct mgpu_augment */
#include "data/source.h"  /* struct mgpu_source */

#define MGPU_LOADER_MAX_THREADS 64

/* How keypoints become confidence maps. */
struct mgpu_target_opts {
	float sigma;  /* the Gaussian's sigma in map cells (> 0; default 2) */
	int stride;   /* output stride: maps of ceil(H / stride) x ceil(W / stride) (default 1) */
};

/* One batch's targets (kind 0: none); pointers valid as x and y are. */
struct mgpu_target_batch {
	int kind;              /* enum mgpu_target_kind */
	const float *vec;      /* VECTOR: (B, K) */
	const int32_t *mask;   /* MASK: (B, H W) class ids, -1 ignored */
	const float *maps;     /* KEYPOINTS: (B, P, h, w) */
	const float *weight;   /* KEYPOINTS: (B, P), 1 present, 0 missing */
	const float *kp;       /* KEYPOINTS: (B, P, 2) as augmented, NaN missing */
	int K, P, h, w;        /* the sizes above; h, w also a mask's */
};

struct mgpu_loader_slot;

struct mgpu_loader {
	struct mgpu_source *src;
	int batch, prefetch, ring;
	/* the current pass */
	int split;
	int64_t epoch;
	const uint32_t *order;
	size_t nrows;
	int64_t nbatches, next_fill, next_out, released;
	int held;                    /* a slot is lent to the consumer */
	int stop;
	struct mgpu_loader_slot *slot;
	pthread_t th[MGPU_LOADER_MAX_THREADS];
	int nthreads;
	struct mgpu_augment aug;     /* for MGPU_SPLIT_TRAIN passes */
	uint64_t aug_seed;
	float aug_pad;               /* a float32 row's padding: the norm of 0 */
	struct mgpu_target_opts topt;
	size_t scratch_nbytes;
	pthread_mutex_t mu;
	pthread_cond_t cv;
};

/* batch rows per batch, prefetch background threads (0..64). */
int mgpu_loader_create(struct mgpu_loader *l, struct mgpu_source *src, int batch,
		       int prefetch);
/* Augment the rows of every later training pass (a NULL: none) with draws
 * from seed: call before the first begin, after the source's norm is set;
 * MGPU_EINVAL when the source's samples are no images (C,H,W). */
int mgpu_loader_augment(struct mgpu_loader *l, const struct mgpu_augment *a, uint64_t seed);
/* Render keypoint targets with o (before the first begin; the defaults
 * hold otherwise): MGPU_EINVAL for a sigma or stride out of range. */
int mgpu_loader_targets(struct mgpu_loader *l, const struct mgpu_target_opts *o);
/* Start a pass over rows order[0..nrows) of split; the last batch may be short. */
int mgpu_loader_begin(struct mgpu_loader *l, int split, const uint32_t *order, size_t nrows);
/* The same, for epoch (the augmentation's draws; begin is epoch 0). */
int mgpu_loader_begin_epoch(struct mgpu_loader *l, int split, const uint32_t *order,
			    size_t nrows, int64_t epoch);
/*
 * The next batch of the pass: *B rows at *x (row_nbytes each) and *y.
 * Returns 1 (and *B = 0) at the end of the pass, 0 on a batch, or an error
 * (a failed fetch: its message).
 */
int mgpu_loader_next(struct mgpu_loader *l, const void **x, const int32_t **y, int *B,
		     double *wait_ms);
/* mgpu_loader_next with the batch's targets into *t (kind 0 when the
 * samples carry none). */
int mgpu_loader_next_t(struct mgpu_loader *l, const void **x, const int32_t **y,
		       struct mgpu_target_batch *t, int *B, double *wait_ms);
void mgpu_loader_free(struct mgpu_loader *l);

#endif
