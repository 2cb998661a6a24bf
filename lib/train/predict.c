/*
 * predict.c - --predict: each sample's outputs of the trained (or the
 * evaluated) model, in data order, as a NumPy .npy file for another
 * program (see train_int.h).
 *
 * The samples are the data's test split, or when it has none every row
 * of its training file, in the order of the data (not the shuffled
 * epoch order). Logits are float32 (N, C), or (N, T, V) for a gpt; class
 * ids int32 (N), or (N, T); with a target, its outputs as it takes
 * them (write_header). Rank 0 alone runs it, after the summary, with
 * no collective call; the file is written atomically (core/io.h).
 */
#include "train/train_int.h"

#include <stdlib.h> /* malloc, free */

#include "core/err.h"  /* mgpu_err */
#include "core/io.h"   /* mgpu_afile */
#include "data/npy.h"  /* mgpu_npy_header */
#include "data/samples.h" /* MGPU_TARGET_* */

/* The first largest of n values. */
static int32_t argmax(const float *v, size_t n)
{
	size_t i, best = 0;

	for (i = 1; i < n; i++)
		if (v[i] > v[best])
			best = i;
	return (int32_t)best;
}

/* (n, per_row / width, width) logits or (n, per_row / width) ids, the
 * middle axis only for a language model (its T predictions a sample).
 * Data with a target: (n, K) values, or maps and mask logits (n, C, h, w),
 * a mask's class ids (n, h, w). */
static int write_header(struct mgpu_afile *af, const struct train_data *d,
			const struct mgpu_train_cfg *c, size_t n, size_t per_row, size_t width)
{
	char hdr[MGPU_NPY_HEADER_MAX];
	uint32_t shape[4];
	int nd = 0;
	size_t len;

	if (n > UINT32_MAX)
		return mgpu_err(MGPU_EINVAL, "--predict: %zu samples are too many", n);
	shape[nd++] = (uint32_t)n;
	if (mgpu_spec_is_lm(&c->spec))
		shape[nd++] = (uint32_t)(per_row / width);
	if (d->tkind && d->tkind != MGPU_TARGET_VECTOR) {
		if (!c->predict_class)
			shape[nd++] = (uint32_t)d->classes;
		shape[nd++] = (uint32_t)d->h;
		shape[nd++] = (uint32_t)d->w;
	} else if (!c->predict_class) {
		shape[nd++] = (uint32_t)width;
	}
	len = mgpu_npy_header(hdr, c->predict_class ? "<i4" : "<f4", nd, shape);
	if (fwrite(hdr, 1, len, af->fp) != len)
		return mgpu_err_errno(MGPU_EIO, "'%s': cannot write", c->predict);
	return 0;
}

/* One batch's outputs (B rows, per_row floats each) to the file. */
static int write_rows(struct mgpu_afile *af, const struct mgpu_train_cfg *c, const float *out,
		      int B, size_t per_row, size_t width, int32_t *ids)
{
	size_t i, k = per_row / width;

	if (!c->predict_class) {
		if (fwrite(out, sizeof(float), (size_t)B * per_row, af->fp) != (size_t)B * per_row)
			return mgpu_err_errno(MGPU_EIO, "'%s': cannot write", c->predict);
		return 0;
	}
	for (i = 0; i < (size_t)B * k; i++)
		ids[i] = argmax(out + i * width, width);
	if (fwrite(ids, sizeof(int32_t), (size_t)B * k, af->fp) != (size_t)B * k)
		return mgpu_err_errno(MGPU_EIO, "'%s': cannot write", c->predict);
	return 0;
}

/* A mask's class ids: each pixel's first largest of C logits (a channel
 * plane apart, NCHW). */
static int write_mask_ids(struct mgpu_afile *af, const struct train_data *d,
			  const struct mgpu_train_cfg *c, const float *out, int B, int32_t *ids)
{
	size_t hw = (size_t)d->h * (size_t)d->w, i, p;
	int k;

	for (i = 0; i < (size_t)B; i++)
		for (p = 0; p < hw; p++) {
			const float *l = out + i * (size_t)d->classes * hw + p;
			int32_t best = 0;
			for (k = 1; k < d->classes; k++)
				if (l[(size_t)k * hw] > l[(size_t)best * hw])
					best = k;
			ids[i * hw + p] = best;
		}
	if (fwrite(ids, sizeof(int32_t), (size_t)B * hw, af->fp) != (size_t)B * hw)
		return mgpu_err_errno(MGPU_EIO, "'%s': cannot write", c->predict);
	return 0;
}

int mgpu_train_predict(struct train_rank *r)
{
	const struct mgpu_train_cfg *c = r->cfg;
	int split = r->d->src.n[MGPU_SPLIT_TEST] ? MGPU_SPLIT_TEST : MGPU_SPLIT_TRAIN;
	size_t n = r->d->src.n[split], per_row = mgpu_model_logits_per_row(&r->model);
	size_t width = mgpu_model_logits_width(&r->model), i, got;
	int Bmax = r->plan->batch, B, rc;
	struct mgpu_afile af;
	uint32_t *idx = malloc((size_t)Bmax * sizeof *idx);
	float *out = malloc((size_t)Bmax * per_row * sizeof *out);
	size_t nid = r->d->tkind == MGPU_TARGET_MASK ? (size_t)r->d->h * r->d->w : per_row / width;
	int32_t *ids = malloc((size_t)Bmax * nid * sizeof *ids + 1);

	if (!idx || !out || !ids) {
		rc = mgpu_err(MGPU_ENOMEM, "--predict: out of memory");
		goto out;
	}
	rc = mgpu_afile_open(&af, c->predict);
	if (rc < 0)
		goto out;
	rc = write_header(&af, r->d, c, n, per_row, width);
	for (i = 0; rc == 0 && i < n; i += (size_t)B) {
		int k;
		B = n - i < (size_t)Bmax ? (int)(n - i) : Bmax;
		for (k = 0; k < B; k++)
			idx[k] = (uint32_t)(i + (size_t)k);
		rc = mgpu_train_load_rows(r, idx, B, split);
		if (rc == 0)
			rc = mgpu_model_forward(&r->model, B, 0);
		if (rc == 0)
			rc = mgpu_model_logits(&r->model, B, out, &got);
		if (rc == 0 && r->d->tkind == MGPU_TARGET_MASK && c->predict_class)
			rc = write_mask_ids(&af, r->d, c, out, B, ids);
		else if (rc == 0)
			rc = write_rows(&af, c, out, B, per_row, width, ids);
	}
	if (rc == 0)
		rc = mgpu_afile_commit(&af);
	else
		mgpu_afile_abort(&af);
out:
	free(idx);
	free(out);
	free(ids);
	return rc;
}
