/*
 * target_loss.h - the loss and metrics of targets beyond a class id for
 * any model family: a batch's targets on the device, the loss chosen by
 * their kind over the model's outputs, and the evaluation's metrics.
 *
 * Kinds (data/target.h) and what a model must output per sample:
 *   - vector (K): K values, MSE (ops.h's mse, G = 1);
 *   - keypoints: P confidence maps of h x w (the loader renders the
 *     targets at its sigma and output stride), MSE per map weighted 0
 *     for a missing part (mse, G = P, M = h w);
 *   - mask (h, w): classes x h x w logits, NCHW, per-pixel cross-entropy
 *     (pix_xent; -1 pixels ignored); the correct count is each row's
 *     pixel accuracy.
 * A family calls mgpu_target_loss_acc from its loss hook instead of xent
 * when m has targets; nothing here knows a family.
 *
 * Device buffers belong to the struct; the struct mgpu_dev is the caller's.
 */
#ifndef MGPU_MODEL_TARGET_LOSS_H
#define MGPU_MODEL_TARGET_LOSS_H

#include <stddef.h> /* size_t */
#include <stdint.h> /* int32_t */

#include "data/loader.h"  /* struct mgpu_target_batch */
#include "data/metrics.h" /* struct mgpu_metrics */
#include "ops/ops.h"      /* struct mgpu_dev */

struct mgpu_target_dev {
	int kind;          /* enum mgpu_target_kind; 0: none */
	int K;             /* vector: values */
	int P, h, w;       /* keypoints: maps of h x w; mask: h x w */
	int classes;       /* mask: the logits' channels */
	int max_batch;
	float *vals;       /* vector (B,K), keypoint maps (B,P,h,w) */
	float *weight;     /* keypoints (B,P) */
	int32_t *mask;     /* mask (B,h w) */
	float *loss;       /* per (row, group), or per pixel */
	float *correct;    /* mask: per pixel */
	size_t nbytes;     /* device bytes held */
};

/* Outputs per sample a model gives for t: K, P h w or classes h w. */
size_t mgpu_target_outputs(const struct mgpu_target_dev *t);
/* Device buffers for max_batch samples of targets of kind (0: none, and
 * nothing is allocated); sizes as the struct says. */
int mgpu_target_dev_alloc(struct mgpu_target_dev *t, struct mgpu_dev *dev, int kind, int K,
			  int P, int h, int w, int classes, int max_batch);
void mgpu_target_dev_free(struct mgpu_target_dev *t, struct mgpu_dev *dev);
/* Copy a batch's targets (the loader's, same kind and sizes) to the device. */
int mgpu_target_dev_load(struct mgpu_target_dev *t, struct mgpu_dev *dev,
			 const struct mgpu_target_batch *tb, int B);
/*
 * The loss of out (B, mgpu_target_outputs) against the loaded targets:
 * each row's loss summed into acc[0] and its correct count (a mask's pixel
 * accuracy; 0 for MSE) into acc[1] (device doubles); dout (may be NULL,
 * may be out) gets the gradient scaled by grad_scale.
 */
int mgpu_target_loss_acc(struct mgpu_target_dev *t, struct mgpu_dev *dev, const float *out,
			 float *dout, int B, float grad_scale, double *acc);
/* Add B samples' metrics from out (host copy of the outputs) against the
 * batch's targets: keypoint error and PCK at the output stride, mean IoU,
 * RMSE (metrics.h). */
void mgpu_target_metrics_add(struct mgpu_metrics *m, const struct mgpu_target_dev *t,
			     const float *out, const struct mgpu_target_batch *tb, int B,
			     int stride);

#endif
