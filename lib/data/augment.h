/*
 * augment.h - seeded augmentation of image rows for training: a random
 * crop with zero padding and a horizontal flip, as torchvision's
 * RandomCrop(size, padding=P) and RandomHorizontalFlip(0.5).
 *
 * A row's draws are a pure function of (seed, epoch, its row index in the
 * split): whichever rank, loader thread or batch position fetches it, it
 * comes out the same, so a run is bit-reproducible and does not depend on
 * the world size, as the sample order already does not.
 *
 * Rows are (C,H,W) images, channels first, uint8 or float32. The crop
 * pads the image with P pixels of pad on every side and cuts an H x W
 * window at an offset drawn in [0, 2P] for each axis (the same for every
 * channel); the flip then mirrors the columns with probability 1/2.
 */
#ifndef MGPU_DATA_AUGMENT_H
#define MGPU_DATA_AUGMENT_H

#include <stddef.h> /* size_t */
#include <stdint.h> /* uint32_t, uint64_t */

#define MGPU_AUGMENT_MAX_CROP 64

struct mgpu_augment {
	int crop;   /* padding P in pixels; 0: no crop */
	int flip;   /* 1: horizontal flip with probability 1/2 */
};

/* "crop=P,flip", "crop=P", "flip" or "none" (what names the text in errors). */
int mgpu_augment_parse(const char *text, struct mgpu_augment *a, const char *what);
/* The same text back ("none" when off). */
void mgpu_augment_format(const struct mgpu_augment *a, char *buf, size_t len);
/* Anything to do? */
int mgpu_augment_on(const struct mgpu_augment *a);
/* Can rows of this shape be augmented (C,H,W)? The error names data. */
int mgpu_augment_check(const struct mgpu_augment *a, int ndim, const uint32_t *shape,
		       const char *data);
/*
 * Augment rows x[0..n) in place, row i being row idx[i] of its split:
 * dtype MGPU_DTYPE_U8 or MGPU_DTYPE_F32, shape (C,H,W); pad is the value
 * of padding pixels (a float32 row's normalised zero). scratch holds one
 * row's bytes.
 */
void mgpu_augment_rows(const struct mgpu_augment *a, uint64_t seed, uint64_t epoch,
		       const uint32_t *idx, size_t n, void *x, int dtype, const uint32_t *shape,
		       float pad, void *scratch);
/* The draws of row idx: crop offsets (dy, dx) in [0, 2P] and the flip. */
void mgpu_augment_draw(const struct mgpu_augment *a, uint64_t seed, uint64_t epoch,
		       uint32_t idx, int *dy, int *dx, int *flip);

#endif
