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
 * Rows are (C,H,W) images, channels first, uint8 or float32. A rotation
 * (rotate=D) first turns the image about its centre by an angle drawn
 * uniformly in [-D, D] degrees (nearest pixel, as torchvision's
 * RandomRotation; corners filled with pad). The crop
 * pads the image with P pixels of pad on every side and cuts an H x W
 * window at an offset drawn in [0, 2P] for each axis (the same for every
 * channel); the flip then mirrors the columns with probability 1/2.
 *
 * Targets move with their image (mgpu_augment_rows_t): a mask (H,W) takes
 * the same pixels (its padding 255, ignored); keypoints (P,2) the same
 * geometry, a part that leaves the image becoming missing (NaN), and a
 * flip swaps the parts of each symmetry pair (mgpu_augment_parse_pairs;
 * mgpu-train's --flip-pairs: a left wrist is the right one in the mirror).
 * A vector target does not move.
 */
#ifndef MGPU_DATA_AUGMENT_H
#define MGPU_DATA_AUGMENT_H

#include <stddef.h> /* size_t */
#include <stdint.h> /* uint32_t, uint64_t */

#define MGPU_AUGMENT_MAX_CROP 64
#define MGPU_AUGMENT_MAX_ROTATE 45
/* Parts a symmetry list may name (data/target.h's MGPU_TARGET_MAX_PARTS). */
#define MGPU_AUGMENT_MAX_PARTS 256

struct mgpu_augment {
	int crop;   /* padding P in pixels; 0: no crop */
	int flip;   /* 1: horizontal flip with probability 1/2 */
	int rotate; /* D: rotation drawn in [-D, D] degrees; 0: none */
	int npairs; /* symmetry pairs given (mgpu_augment_parse_pairs); 0: parts keep their index */
	uint8_t mirror[MGPU_AUGMENT_MAX_PARTS]; /* part p's mirror image (p when unpaired) */
};

/* "crop=P", "flip", "rotate=D", any of them joined by commas, or "none"
 * (what names the text in errors). The symmetry pairs stay as they were. */
int mgpu_augment_parse(const char *text, struct mgpu_augment *a, const char *what);
/* The same text back ("none" when off). */
void mgpu_augment_format(const struct mgpu_augment *a, char *buf, size_t len);
/* Symmetry pairs "A:B,C:D" of part indices (0-based, each part in one pair
 * at most), or "none". */
int mgpu_augment_parse_pairs(const char *text, struct mgpu_augment *a, const char *what);
/* The pairs back as text ("none" when there are none). */
void mgpu_augment_format_pairs(const struct mgpu_augment *a, char *buf, size_t len);
/* Anything to do? */
int mgpu_augment_on(const struct mgpu_augment *a);
/* Can rows of this shape be augmented (C,H,W)? The error names data. */
int mgpu_augment_check(const struct mgpu_augment *a, int ndim, const uint32_t *shape,
		       const char *data);
/*
 * Augment rows x[0..n) in place, row i being row idx[i] of its split:
 * dtype MGPU_DTYPE_U8 or MGPU_DTYPE_F32, shape (C,H,W); pad is the value
 * of padding pixels (a float32 row's normalised zero). scratch holds one
 * row's bytes, or mgpu_augment_scratch_nbytes(row bytes, 0) with rotate=D,
 * aligned as malloc's.
 */
void mgpu_augment_rows(const struct mgpu_augment *a, uint64_t seed, uint64_t epoch,
		       const uint32_t *idx, size_t n, void *x, int dtype, const uint32_t *shape,
		       float pad, void *scratch);
/* The draws of row idx: crop offsets (dy, dx) in [0, 2P] and the flip. */
void mgpu_augment_draw(const struct mgpu_augment *a, uint64_t seed, uint64_t epoch,
		       uint32_t idx, int *dy, int *dx, int *flip);
/* Row idx's rotation in degrees (0 without rotate=D). */
float mgpu_augment_angle(const struct mgpu_augment *a, uint64_t seed, uint64_t epoch,
			 uint32_t idx);
/* The scratch mgpu_augment_rows_t needs: bytes for rows of row_nbytes with
 * targets of t_nbytes. */
size_t mgpu_augment_scratch_nbytes(size_t row_nbytes, size_t t_nbytes);
/*
 * mgpu_augment_rows, moving each row's target with it: tkind (enum
 * mgpu_target_kind; 0: none), tshape its shape, t the n targets of
 * t_nbytes each, in place. scratch holds mgpu_augment_scratch_nbytes,
 * aligned as malloc's (float rows and keypoints are worked on in it).
 * Keypoint (x, y) is a pixel position (pixel centres at whole numbers);
 * a part more than half a pixel outside the image after the move becomes
 * NaN.
 */
void mgpu_augment_rows_t(const struct mgpu_augment *a, uint64_t seed, uint64_t epoch,
			 const uint32_t *idx, size_t n, void *x, int dtype, const uint32_t *shape,
			 float pad, int tkind, const uint32_t *tshape, void *t, size_t t_nbytes,
			 void *scratch);

#endif
