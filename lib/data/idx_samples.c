/*
 * idx_samples.c - IDX image and label files as memory samples (see idx.h):
 * the part of the IDX reader that knows what MNIST-style files mean; idx.c
 * only parses tensors.
 */
#include "data/idx.h"

#include <stdio.h>    /* snprintf */
#include <stdlib.h>   /* malloc, free */
#include <string.h>   /* memcpy, memset */
#include <sys/stat.h> /* stat */

#include "core/err.h"     /* mgpu_err, MGPU_E* */
#include "data/samples.h" /* mgpu_samples_*, MGPU_SAMPLES_MAX_CLASSES */

#define PATH_MAX_NBYTES 4096

/* Samples and features of an images file; d must fit an int. */
static int image_shape(const struct mgpu_idx *im, const char *path, size_t *n, uint32_t *d)
{
	size_t dd = 1;
	int i;

	if (im->type != MGPU_IDX_U8)
		return mgpu_err(MGPU_EFORMAT, "'%s': images must be IDX type u8 (0x08), "
				"not %s", path, mgpu_idx_type_name(im->type));
	if (im->ndim < 2)
		return mgpu_err(MGPU_EFORMAT, "'%s': images need at least 2 dimensions, "
				"file has %d", path, im->ndim);
	for (i = 1; i < im->ndim; i++)
		dd *= im->dims[i]; /* cannot overflow: idx checked the product */
	if (im->dims[0] == 0 || dd == 0)
		return mgpu_err(MGPU_EFORMAT, "'%s': no samples (shape %u x %zu)", path,
				im->dims[0], dd);
	if (dd >= MGPU_SAMPLES_MAX_D)
		return mgpu_err(MGPU_ERANGE, "'%s': %zu features per sample is too many",
				path, dd);
	*n = im->dims[0];
	*d = (uint32_t)dd;
	return 0;
}

static int is_int_type(int type)
{
	return type == MGPU_IDX_U8 || type == MGPU_IDX_S8 || type == MGPU_IDX_I16 ||
	       type == MGPU_IDX_I32;
}

/* Labels must be 1-D integers, one per image. */
static int check_labels(const struct mgpu_idx *lb, const char *path, size_t n,
			const char *images)
{
	if (!is_int_type(lb->type))
		return mgpu_err(MGPU_EFORMAT, "'%s': labels must be an integer IDX type, "
				"not %s", path, mgpu_idx_type_name(lb->type));
	if (lb->ndim != 1)
		return mgpu_err(MGPU_EFORMAT, "'%s': labels must have 1 dimension, "
				"file has %d", path, lb->ndim);
	if (lb->count != n)
		return mgpu_err(MGPU_EFORMAT, "'%s': %zu labels, but '%s' has %zu images",
				path, lb->count, images, n);
	return 0;
}

/* Convert checked labels to int32, each in [0, 256); sets *classes. */
static int read_labels(const struct mgpu_idx *lb, const char *path, int32_t *y,
		       int *classes)
{
	size_t i;
	double v;

	*classes = 0;
	for (i = 0; i < lb->count; i++) {
		v = mgpu_idx_value(lb, i);
		if (v < 0 || v >= MGPU_SAMPLES_MAX_CLASSES)
			return mgpu_err(MGPU_ERANGE, "'%s': label %.0f out of range [0,%d) "
					"at index %zu", path, v, MGPU_SAMPLES_MAX_CLASSES, i);
		y[i] = (int32_t)v;
		if (y[i] + 1 > *classes)
			*classes = y[i] + 1;
	}
	return 0;
}

/* One image's shape: (N,H,W) files hold one-channel images (1,H,W), (N,D)
 * flat rows (D), (N,C,H,W) and (N,a,b,c,d) their sample shape as it is;
 * more dimensions than a sample keeps are flattened. */
static int sample_shape(const struct mgpu_idx *im, uint32_t d, uint32_t *shape)
{
	int k;

	if (im->ndim == 3) {
		shape[0] = 1;
		shape[1] = im->dims[1];
		shape[2] = im->dims[2];
		return 3;
	}
	if (im->ndim == 2 || im->ndim > MGPU_SAMPLES_MAX_DIM + 1) {
		shape[0] = d;
		return 1;
	}
	for (k = 1; k < im->ndim; k++)
		shape[k - 1] = im->dims[k];
	return im->ndim - 1;
}

int mgpu_idx_load_samples(const char *images, const char *labels, struct mgpu_samples *out)
{
	struct mgpu_idx im = {0}, lb = {0};
	uint32_t d = 0, shape[MGPU_SAMPLES_MAX_DIM];
	size_t n = 0;
	int rc = 0, ndim;

	memset(out, 0, sizeof *out);
	MGPU_CHECK(mgpu_idx_load(images, &im));
	MGPU_CHECK(image_shape(&im, images, &n, &d));
	MGPU_CHECK(mgpu_idx_load(labels, &lb));
	MGPU_CHECK(check_labels(&lb, labels, n, images));
	ndim = sample_shape(&im, d, shape);
	MGPU_CHECK(mgpu_samples_init(out, MGPU_DTYPE_U8, ndim, shape));
	out->y = malloc(n * sizeof *out->y);
	if (!out->y) {
		rc = mgpu_err(MGPU_ENOMEM, "'%s': out of memory", images);
		goto out;
	}
	MGPU_CHECK(read_labels(&lb, labels, out->y, &out->classes));
	/* Take over the decoded file, pixels moved to its start: no second copy. */
	out->x = im.owned;
	memmove(out->x, im.data, im.count);
	im.owned = NULL;
	out->n = out->cap = n;
out:
	if (rc < 0)
		mgpu_samples_free(out);
	mgpu_idx_free(&im);
	mgpu_idx_free(&lb);
	return rc;
}

/* Find dir/name or dir/name.gz; error naming both when neither exists. */
static int find_file(const char *dir, const char *name, char *path, size_t cap)
{
	struct stat st;

	snprintf(path, cap, "%s/%s", dir, name);
	if (stat(path, &st) == 0)
		return 0;
	snprintf(path, cap, "%s/%s.gz", dir, name);
	if (stat(path, &st) == 0)
		return 0;
	return mgpu_err(MGPU_EIO, "'%s': missing %s (or %s.gz)", dir, name, name);
}

static int load_pair(struct mgpu_samples *s, const char *dir, const char *set)
{
	char images[PATH_MAX_NBYTES], labels[PATH_MAX_NBYTES], name[64];

	snprintf(name, sizeof name, "%s-images-idx3-ubyte", set);
	MGPU_TRY(find_file(dir, name, images, sizeof images));
	snprintf(name, sizeof name, "%s-labels-idx1-ubyte", set);
	MGPU_TRY(find_file(dir, name, labels, sizeof labels));
	return mgpu_idx_load_samples(images, labels, s);
}

int mgpu_idx_load_dir(const char *dir, struct mgpu_samples *train, struct mgpu_samples *test)
{
	int rc = 0;

	memset(train, 0, sizeof *train);
	memset(test, 0, sizeof *test);
	if (strlen(dir) > PATH_MAX_NBYTES - 64)
		return mgpu_err(MGPU_EINVAL, "'%s': directory name too long", dir);
	MGPU_CHECK(load_pair(train, dir, "train"));
	MGPU_CHECK(load_pair(test, dir, "t10k"));
	if (train->d != test->d)
		rc = mgpu_err(MGPU_EFORMAT, "'%s': train samples have %zu features, "
			      "t10k samples %zu", dir, train->d, test->d);
out:
	if (rc < 0) {
		mgpu_samples_free(train);
		mgpu_samples_free(test);
	}
	return rc;
}
