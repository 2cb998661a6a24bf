/*
 * batch.h - the batch plan of a data-parallel run: how one optimizer step's
 * global batch splits over ranks and accumulation micro-steps, and the
 * factor that turns the summed per-sample gradients into their mean.
 *
 * Made once from the options (mgpu_batch_plan_make) and handed to every
 * part of the run; nothing else multiplies or divides batch sizes.
 *
 * Step s of an epoch takes positions [s G, (s + 1) G) of the epoch order,
 * G = batch x accum x world. Micro-step a of rank r takes the B rows from
 * offset (a W + r) B of that slice (W ranks, B = batch): the rows of a step
 * do not depend on how it is split. Each rank's loss gradient is scaled by
 * grad_scale = 1 / G, so summing the ranks' gradients (the only thing a
 * sync strategy does with them) gives the mean over the global batch.
 */
#ifndef MGPU_TRAIN_BATCH_H
#define MGPU_TRAIN_BATCH_H

#include <stddef.h> /* size_t */
#include <stdint.h> /* int64_t */

struct mgpu_batch_plan {
	int batch;          /* B: rows per rank and micro-step (per device) */
	int accum;          /* A: micro-steps per optimizer step */
	int world;          /* W: ranks */
	int64_t global;     /* G = B x A x W: samples per optimizer step */
	float grad_scale;   /* 1 / G: the loss gradient's averaging factor */
};

/* The plan of world ranks with accum micro-steps each, from the per-device
 * batch, or (global > 0) from a global batch split evenly. MGPU_EINVAL,
 * naming the option, when the global batch does not split. */
int mgpu_batch_plan_make(struct mgpu_batch_plan *p, int batch, int64_t global, int accum,
			 int world);
/* Offset of micro-step a of rank r within the step's global batch. */
int64_t mgpu_batch_row0(const struct mgpu_batch_plan *p, int a, int rank);
/* Optimizer steps in an epoch of n samples: the partial last global batch
 * is dropped, or with pad kept (its rows wrap around the epoch). */
int64_t mgpu_batch_steps_per_epoch(const struct mgpu_batch_plan *p, size_t n, int pad);
/* MGPU_EINVAL when the global batch is larger than the ntrain samples. */
int mgpu_batch_check_fits(const struct mgpu_batch_plan *p, size_t ntrain);
/* "B per device x A accumulation steps x W ranks", for messages. */
void mgpu_batch_describe(const struct mgpu_batch_plan *p, char *buf, size_t len);

#endif
