/*
 * metrics.h - evaluation metrics of targets beyond a class id, summed over
 * batches (and ranks) and read at the end of an evaluation:
 *   - keypoints: the mean distance in input pixels between each visible
 *     part's true position and the peak of its predicted confidence map,
 *     and PCK, the fraction of visible parts within a threshold of pixels;
 *   - masks: mean IoU over the classes present in the labels or the
 *     predictions (per-pixel argmax of the logits; ignored pixels left out),
 *     and the pixel accuracy over the labelled pixels;
 *   - regression: RMSE over every value.
 * Host memory only; an accumulator is one thread's.
 *
 * Map geometry (data/target.h renders the same way): a map of an image
 * seen at output stride s has cells at input coordinates (j s, i s), so a
 * peak found at map position (u, v) is the keypoint (u s, v s). The peak
 * is the largest cell (the first in row order), refined to sub-pixel
 * precision by a parabola through it and its two neighbours on each axis
 * (offset (l - r) / (2 (l - 2c + r)), clamped to half a cell; none at the
 * map's border or where the three values do not curve down).
 */
#ifndef MGPU_DATA_METRICS_H
#define MGPU_DATA_METRICS_H

#include <stddef.h> /* size_t */
#include <stdint.h> /* int32_t, uint64_t */

#include "data/samples.h" /* MGPU_SAMPLES_MAX_CLASSES */

/* A stored mask's pixels of this label count nowhere (VOC's "void");
 * batches carry them as -1. */
#define MGPU_MASK_IGNORE 255

struct mgpu_metrics {
	double kp_err_sum;     /* pixels, over the visible parts */
	uint64_t kp_count;     /* visible parts seen */
	uint64_t kp_within;    /* of those, within pck_px of the truth */
	double pck_px;         /* PCK's threshold in input pixels */
	double sq_sum;         /* regression: sum of squared errors */
	uint64_t sq_count;
	uint64_t inter[MGPU_SAMPLES_MAX_CLASSES]; /* masks: per class */
	uint64_t uni[MGPU_SAMPLES_MAX_CLASSES];
	uint64_t pix_count;    /* masks: labelled pixels (the correct: sum of inter) */
};

/* Zero the sums; PCK counts parts within pck_px pixels. */
void mgpu_metrics_reset(struct mgpu_metrics *m, double pck_px);
/* Add src's sums into dst (another rank's, another thread's). */
void mgpu_metrics_merge(struct mgpu_metrics *dst, const struct mgpu_metrics *src);

/* The peak of one h x w map as a map position (*u column, *v row), refined
 * as above. */
void mgpu_heatmap_peak(const float *map, int h, int w, float *u, float *v);
/*
 * One sample's keypoints: maps (P,h,w) predicted at output stride `stride`,
 * kp (P,2) the true (x, y) in input pixels, NaN for a missing part (which
 * counts nowhere).
 */
void mgpu_metrics_keypoints(struct mgpu_metrics *m, const float *maps, int P, int h, int w,
			    int stride, const float *kp);
/* One sample's mask: logits (C,HW), labels (HW) in [0, C), or negative
 * (ignored: pix_xent's -1, a stored mask's 255). Labels of C or more
 * count as a class no prediction hits (up to 256 classes). */
void mgpu_metrics_mask(struct mgpu_metrics *m, const float *logits, int C, size_t HW,
		       const int32_t *labels);
/* n predicted values against their targets. */
void mgpu_metrics_regression(struct mgpu_metrics *m, const float *pred, const float *target,
			     size_t n);

/* The results, NaN when nothing was counted. */
double mgpu_metrics_kp_error(const struct mgpu_metrics *m); /* pixels */
double mgpu_metrics_pck(const struct mgpu_metrics *m);      /* in [0, 1] */
double mgpu_metrics_miou(const struct mgpu_metrics *m);     /* in [0, 1] */
/* masks: the share of labelled pixels (ignored ones left out) whose
 * argmax is their label */
double mgpu_metrics_pixel_acc(const struct mgpu_metrics *m);
double mgpu_metrics_rmse(const struct mgpu_metrics *m);

#endif
