/*
 * dataset.h - an in-memory labelled data set of byte samples.
 *
 * x holds n samples of d uint8 features, row-major (sample i is
 * x[i*d .. i*d+d)); y holds n int32 labels in [0, classes). Both are
 * malloc'ed and owned by the struct; mgpu_dataset_free() releases them.
 * Loaders leave a zeroed struct on failure, so freeing it is always safe.
 *
 * IDX inputs: images are u8 with ndim >= 2 (d = product of the dimensions
 * after the first), labels are 1-D of an integer type (u8, s8, i16, i32)
 * with every label in [0, 256). Files may be gzip/zstd/xz-compressed.
 */
#ifndef MGPU_DATA_DATASET_H
#define MGPU_DATA_DATASET_H

#include <stddef.h> /* size_t */
#include <stdint.h> /* uint8_t, int32_t */

/* Labels must be below this: classes fit in a byte. */
#define MGPU_DATASET_MAX_CLASSES 256

struct mgpu_dataset {
	size_t n;     /* samples */
	int d;        /* features per sample */
	int classes;  /* max label + 1 */
	uint8_t *x;   /* n x d, row-major */
	int32_t *y;   /* n labels */
};

/* Load an images IDX file and a labels IDX file (compressed or not). */
int mgpu_dataset_load_idx(struct mgpu_dataset *ds, const char *images,
			  const char *labels);
/*
 * Load the MNIST-layout pair of sets from dir: train-images-idx3-ubyte,
 * train-labels-idx1-ubyte, t10k-images-idx3-ubyte, t10k-labels-idx1-ubyte,
 * each with or without ".gz" (the plain name wins when both exist). Both
 * sets must have the same d. On failure both are left zeroed.
 */
int mgpu_dataset_load_dir(struct mgpu_dataset *train, struct mgpu_dataset *test,
			  const char *dir);
/* Check every label is in [0, nclasses); path names the data in messages. */
int mgpu_dataset_check_classes(const struct mgpu_dataset *ds, int nclasses,
			       const char *path);
/* Free x and y and zero the struct. */
void mgpu_dataset_free(struct mgpu_dataset *ds);

#endif
