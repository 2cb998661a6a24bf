/*
 * target.h - targets beyond a class id: what a sample may carry besides
 * its label, and how keypoints become confidence maps.
 *
 * Kinds (enum mgpu_target_kind, data/samples.h):
 *   - MGPU_TARGET_VECTOR: float32 (K), a regression target (MSE);
 *   - MGPU_TARGET_MASK: uint8 (H, W), a class id per pixel of the image,
 *     255 ignored (per-pixel cross-entropy);
 *   - MGPU_TARGET_KEYPOINTS: float32 (P, 2), part p's (x, y) in input
 *     pixels (pixel centres at whole numbers, x along the width), NaN for a
 *     missing part; rendered into P Gaussian confidence maps on the fly
 *     (MSE), as pose trainers do.
 *
 * Keypoint JSON (a WebDataset member KEY.json): an array with one item per
 * part, each [x, y], [x, y, v] (v 0: missing, as COCO's visibility) or
 * null (missing); or an object whose "keypoints" member is such an array.
 * An object without "keypoints" is other metadata (WebDatasets often carry
 * a KEY.json of captions or sizes): no target.
 */
#ifndef MGPU_DATA_TARGET_H
#define MGPU_DATA_TARGET_H

#include <stddef.h> /* size_t */

#include "data/samples.h" /* enum mgpu_target_kind */

/* The most parts a keypoint target has, and the largest vector. */
#define MGPU_TARGET_MAX_PARTS 256
#define MGPU_TARGET_MAX_VECTOR 65536

/*
 * Parse keypoint JSON text[0..len) into kp (up to maxp parts of (x, y),
 * NaN for a missing one) and *np: 0, or 1 (and *np = 0) for an object
 * without "keypoints". name labels errors ("'NAME': part 2: ...").
 */
int mgpu_keypoints_parse(const char *text, size_t len, const char *name, float *kp, int maxp,
			 int *np);

/*
 * Render P parts kp (P,2) into maps (P,h,w) for an image seen at output
 * stride `stride`: cell (i, j) of part p is exp(-(j - x/s)^2 / (2
 * sigma^2)) exp(-(i - y/s)^2 / (2 sigma^2)) (the Gaussian as a product of
 * its two axes', computed so), sigma in map cells; a missing part's map
 * is 0.
 * weight (P, may be NULL) gets 1 per present part, 0 per missing one (the
 * mse op's weights: a missing part's map trains nothing).
 */
void mgpu_keypoints_render(const float *kp, int P, int h, int w, int stride, float sigma,
			   float *maps, float *weight);

#endif
