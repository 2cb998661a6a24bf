/*
 * train_data.c - the data of a training run: load, seeded validation split,
 * normalisation, epoch order, batch rows (see train_int.h).
 */
#include "train/train_int.h"

#include <stdio.h>  /* snprintf */
#include <stdlib.h> /* malloc, free */
#include <string.h> /* memcpy, strlen */

#include "core/err.h"    /* mgpu_err */
#include "core/rng.h"    /* mgpu_rng_perm */
#include "core/sha256.h" /* mgpu_sha256_* */
#include "data/metrics.h" /* MGPU_MASK_IGNORE */
#include "data/target.h"  /* MGPU_TARGET_* */

/* RNG streams: one per purpose, so adding one never shifts another. */
enum { STREAM_SPLIT = 2, STREAM_EPOCH = 1000 };

static int split(struct train_data *d, const struct mgpu_train_cfg *cfg)
{
	struct mgpu_rng rng;
	uint32_t *perm;
	size_t n = d->src.n[MGPU_SPLIT_TRAIN], i;

	d->val_split = MGPU_SPLIT_TRAIN;
	if (d->src.n[MGPU_SPLIT_VAL]) { /* the source's own validation split */
		d->nval = d->src.n[MGPU_SPLIT_VAL];
		d->ntrain = n;
		d->val_idx = malloc((d->nval + n) * sizeof *d->val_idx);
		if (!d->val_idx)
			return mgpu_err(MGPU_ENOMEM, "out of memory for sample indices");
		d->train_idx = d->val_idx + d->nval;
		for (i = 0; i < d->nval; i++)
			d->val_idx[i] = (uint32_t)i;
		for (i = 0; i < n; i++)
			d->train_idx[i] = (uint32_t)i;
		d->val_split = MGPU_SPLIT_VAL;
		return 0;
	}
	d->nval = (size_t)((double)n * cfg->val_fraction + 0.5);
	if (d->nval >= n)
		return mgpu_err(MGPU_EINVAL, "--val-fraction %g leaves no training samples",
				cfg->val_fraction);
	perm = malloc(n * sizeof *perm);
	if (!perm)
		return mgpu_err(MGPU_ENOMEM, "out of memory for %zu sample indices", n);
	mgpu_rng_seed(&rng, cfg->seed, STREAM_SPLIT);
	mgpu_rng_perm(&rng, perm, n);
	d->val_idx = perm;
	d->train_idx = perm + d->nval;
	d->ntrain = n - d->nval;
	return 0;
}

/* The norm of the training split's features, given to the source so its
 * float32 rows come out normalised (a cache normalised per feature is used
 * as it is: the identity). A language model's rows are token ids, bytes
 * too, and stay ids: no statistics are gathered for it (they would decode
 * every chunk of the training split for nothing). */
static int normalisation(struct train_data *d, const struct mgpu_norm *fixed,
			 const struct mgpu_spec *spec)
{
	struct mgpu_norm n = { 1.0f, 0.0f };

	if (fixed)
		n = *fixed;
	else if (!d->src.normalised && !mgpu_dtype_is_token(d->src.dtype) &&
		 !mgpu_spec_is_lm(spec))
		MGPU_TRY(mgpu_source_norm(&d->src, d->train_idx, d->ntrain, &n));
	mgpu_source_set_norm(&d->src, &n);
	return 0;
}

int mgpu_train_data_check(const struct train_data *d, const struct mgpu_train_cfg *cfg,
			  const struct mgpu_model *m)
{
	const struct mgpu_samples *x;
	size_t i, pos;
	uint32_t id;
	int k;

	/* in-memory data: every row of every split is one the model takes
	 * (a gpt: ids below its vocab), the first that is not named by split,
	 * sample and position (a cache is checked batch by batch as it is read) */
	if (d->src.kind != MGPU_SOURCE_MEMORY)
		return 0;
	for (k = 0; k < MGPU_NSPLITS; k++) {
		x = &d->src.mem[k];
		if (mgpu_model_check_rows(m, x->x, x->n, x->row_nbytes, x->dtype, &i, &pos, &id))
			return mgpu_err(MGPU_ERANGE, "'%s': %s sample %zu, position %zu: token %u "
					"is not below vocab %d", cfg->data, mgpu_split_name(k), i,
					pos, id, mgpu_spec_classes(&m->spec));
	}
	return 0;
}

/* What a model is fitted to: the source's samples, and the target's
 * channels where the samples carry one (d->classes). */
static void describe(const struct train_data *d, struct mgpu_data_desc *dd)
{
	const struct mgpu_source *src = &d->src;
	uint32_t shape[MGPU_SAMPLES_MAX_DIM];
	int i;

	memset(dd, 0, sizeof *dd);
	dd->dtype = src->dtype;
	dd->d = src->d;
	dd->classes = d->tkind ? d->classes : mgpu_source_nclasses(src);
	dd->target = d->tkind;
	dd->ndim = mgpu_source_shape(src, shape);
	for (i = 0; i < dd->ndim && i < 4; i++)
		dd->shape[i] = shape[i];
}

/* The largest mask label of every split (255, ignored, left out) into
 * *max (-1: none), read in blocks of rows. */
static int mask_max(struct mgpu_source *src, int *max)
{
	enum { BLOCK = 256 };
	size_t hw = (size_t)src->tshape[0] * src->tshape[1], i, k, n;
	uint8_t *x = malloc(BLOCK * (src->row_nbytes + 1)), *t = malloc(BLOCK * hw + 1);
	int32_t y[BLOCK];
	uint32_t idx[BLOCK];
	int sp, rc = 0;

	*max = -1;
	if (!x || !t)
		rc = mgpu_err(MGPU_ENOMEM, "out of memory for masks");
	for (sp = 0; sp < MGPU_NSPLITS && rc == 0; sp++)
		for (i = 0; i < src->n[sp] && rc == 0; i += n) {
			n = src->n[sp] - i < BLOCK ? src->n[sp] - i : BLOCK;
			for (k = 0; k < n; k++)
				idx[k] = (uint32_t)(i + k);
			rc = mgpu_source_rows_t(src, sp, idx, n, x, y, t);
			for (k = 0; rc == 0 && k < n * hw; k++)
				if (t[k] != MGPU_MASK_IGNORE && t[k] > *max)
					*max = t[k];
		}
	free(x);
	free(t);
	return rc;
}

/* The target's sizes as the loss takes them, from the data and the
 * options that shape it (model/target_loss.h). */
static int targets(struct train_data *d, const struct mgpu_train_cfg *cfg)
{
	struct mgpu_source *s = &d->src;
	const struct mgpu_augment *a = &cfg->augment;
	int p, max;

	d->tkind = s->tkind;
	if (a->npairs && d->tkind != MGPU_TARGET_KEYPOINTS)
		return mgpu_err(MGPU_EINVAL, "'%s': --flip-pairs swaps keypoints, and its "
				"samples carry %s%s", cfg->data, d->tkind ?
				mgpu_target_kind_name(d->tkind) : "class labels",
				d->tkind ? " targets" : "");
	if (!d->tkind)
		return 0;
	if (cfg->per_class)
		return mgpu_err(MGPU_EINVAL, "'%s': --per-class counts class labels, and its "
				"samples carry %s targets", cfg->data,
				mgpu_target_kind_name(d->tkind));
	if (cfg->predict_class && d->tkind != MGPU_TARGET_MASK)
		return mgpu_err(MGPU_EINVAL, "'%s': --predict-as class gives class ids, and its "
				"samples carry %s targets (--predict writes their values)",
				cfg->data, mgpu_target_kind_name(d->tkind));
	d->stride = 1;
	d->h = d->w = 1;
	switch (d->tkind) {
	case MGPU_TARGET_VECTOR:
		d->K = d->classes = (int)s->tshape[0];
		break;
	case MGPU_TARGET_KEYPOINTS:
		if (s->ndim != 3)
			return mgpu_err(MGPU_EINVAL, "'%s': keypoint targets need image samples "
					"(CxHxW)", cfg->data);
		d->P = d->classes = (int)s->tshape[0];
		d->stride = cfg->topt.stride;
		d->h = ((int)s->shape[1] + d->stride - 1) / d->stride;
		d->w = ((int)s->shape[2] + d->stride - 1) / d->stride;
		for (p = d->P; a->npairs && p < MGPU_AUGMENT_MAX_PARTS; p++)
			if (a->mirror[p] != p)
				return mgpu_err(MGPU_EINVAL, "'%s': --flip-pairs names part %d, and "
						"the keypoints have %d parts (0 to %d)", cfg->data,
						p, d->P, d->P - 1);
		break;
	case MGPU_TARGET_MASK:
		d->h = (int)s->tshape[0];
		d->w = (int)s->tshape[1];
		MGPU_TRY(mask_max(s, &max));
		if (cfg->mask_classes && cfg->mask_classes <= max)
			return mgpu_err(MGPU_ERANGE, "'%s': mask labels go up to %d, beyond "
					"--mask-classes %d", cfg->data, max, cfg->mask_classes);
		d->classes = cfg->mask_classes ? cfg->mask_classes : max + 1 > 2 ? max + 1 : 2;
		break;
	}
	d->pck_px = cfg->pck_px > 0 ? cfg->pck_px :
		    0.05 * (s->ndim == 3 && s->shape[1] > s->shape[2] ? s->shape[1] :
			    s->ndim == 3 ? s->shape[2] : 0);
	return 0;
}

/* A model's outputs of one sample against what the target takes: the
 * same count, and the same maps unless the outputs are flat (an mlp, a
 * linear head). */
static int check_outputs(const struct train_data *d, const struct mgpu_train_cfg *cfg,
			 const struct mgpu_spec *spec)
{
	int got[3], want[3] = { d->classes, d->h, d->w };
	char text[MGPU_SPEC_TEXT_MAX], what[96];
	long long ng, nw = (long long)want[0] * want[1] * want[2];
	int rc = mgpu_spec_out_shape(spec, got);

	if (rc < 0)
		return mgpu_err_prefix(rc, "'%s': ", cfg->data);
	ng = (long long)got[0] * got[1] * got[2];
	if (ng == nw && ((got[1] == 1 && got[2] == 1) ||
			 (got[0] == want[0] && got[1] == want[1] && got[2] == want[2])))
		return 0;
	if (mgpu_spec_format(spec, text, sizeof text) < 0)
		snprintf(text, sizeof text, "?");
	if (d->tkind == MGPU_TARGET_VECTOR)
		snprintf(what, sizeof what, "%d values", d->K);
	else if (d->tkind == MGPU_TARGET_KEYPOINTS)
		snprintf(what, sizeof what, "%d maps of %dx%d at --output-stride %d", d->P, d->h,
			 d->w, d->stride);
	else
		snprintf(what, sizeof what, "%d classes of %dx%d pixels", d->classes, d->h, d->w);
	return mgpu_err(MGPU_EINVAL, "'%s': the model '%s' gives %dx%dx%d outputs a sample, "
			"its %s target takes %dx%dx%d (%s)", cfg->data, text, got[0], got[1],
			got[2], mgpu_target_kind_name(d->tkind), want[0], want[1], want[2], what);
}

int mgpu_train_data_load(struct train_data *d, const struct mgpu_train_cfg *cfg,
			 struct mgpu_spec *spec, const struct mgpu_norm *fixed)
{
	struct mgpu_data_desc dd;
	int rc;

	MGPU_TRY(mgpu_source_open(&d->src, cfg->data));
	MGPU_TRY(targets(d, cfg));
	if (d->tkind && (rc = mgpu_spec_out_shape(spec, NULL)) < 0)
		return mgpu_err_prefix(rc, "'%s': its samples carry %s targets, and ", cfg->data,
				       mgpu_target_kind_name(d->tkind));
	describe(d, &dd);
	MGPU_TRY(mgpu_spec_fit(spec, &dd, cfg->data));
	if (d->tkind)
		MGPU_TRY(check_outputs(d, cfg, spec));
	else
		MGPU_TRY(mgpu_source_check_classes(&d->src, mgpu_spec_classes(spec)));
	MGPU_TRY(mgpu_augment_check(&cfg->augment, d->src.ndim, d->src.shape, cfg->data));
	MGPU_TRY(split(d, cfg));
	return normalisation(d, fixed, spec);
}

void mgpu_train_data_free(struct train_data *d)
{
	mgpu_source_close(&d->src);
	free(d->val_idx); /* train_idx points into the same block */
	memset(d, 0, sizeof *d);
}

void mgpu_train_order(const struct train_data *d, uint64_t seed, int epoch, uint32_t *order)
{
	struct mgpu_rng rng;
	size_t i;

	mgpu_rng_seed(&rng, seed, STREAM_EPOCH + (uint64_t)epoch);
	mgpu_rng_perm(&rng, order, d->ntrain);
	for (i = 0; i < d->ntrain; i++)
		order[i] = d->train_idx[order[i]];
}

int mgpu_train_put_batch(struct train_rank *r, const void *x, const int32_t *y, int B)
{
	const struct mgpu_norm *n = &r->d->src.norm;
	/* uint8 features are normalised on the device as they are cast;
	 * float32 ones the source normalised; ids stay ids */
	struct mgpu_batch_in in = { .rows = x, .dtype = r->d->src.dtype, .labels = y,
				    .scale = n->scale, .shift = n->shift, .B = B };
	int rc = mgpu_model_load(&r->model, &in);

	/* bad values in the rows (a token beyond a gpt's vocabulary): say whose */
	return rc == MGPU_ERANGE ? mgpu_err_prefix(rc, "'%s': ", r->cfg->data) : rc;
}

int mgpu_train_put_batch_t(struct train_rank *r, const void *x, const int32_t *y,
			   const struct mgpu_target_batch *tb, int B)
{
	MGPU_TRY(mgpu_train_put_batch(r, x, y, B));
	return tb->kind ? mgpu_model_load_targets(&r->model, tb, B) : 0;
}

int mgpu_train_load_rows(struct train_rank *r, const uint32_t *idx, int B, int split)
{
	MGPU_TRY(mgpu_source_rows(&r->d->src, split, idx, (size_t)B, r->xb, r->yb));
	return mgpu_train_put_batch(r, r->xb, r->yb, B);
}

/* A digest of up to 16 rows spread over each split, labels and targets
 * included: cheap, and enough to tell two data sets (or two versions of
 * one) apart. */
static int rows_digest(struct train_data *d, char hex[MGPU_SHA256_HEX])
{
	struct mgpu_sha256 h;
	uint8_t dig[MGPU_SHA256_NBYTES];
	uint8_t *x = malloc(d->src.row_nbytes ? d->src.row_nbytes : 1);
	uint8_t *t = malloc(d->src.t_nbytes + 1);
	uint32_t idx;
	int32_t y;
	size_t n, i, k;
	int sp, rc = 0;

	if (!x || !t) {
		free(x);
		free(t);
		return mgpu_err(MGPU_ENOMEM, "out of memory for a row");
	}
	mgpu_sha256_init(&h);
	for (sp = 0; sp < MGPU_NSPLITS && rc == 0; sp++) {
		n = d->src.n[sp];
		k = n < 16 ? n : 16;
		for (i = 0; i < k && rc == 0; i++) {
			idx = (uint32_t)(k > 1 ? i * (n - 1) / (k - 1) : 0);
			rc = mgpu_source_rows_t(&d->src, sp, &idx, 1, x, &y, t);
			mgpu_sha256_update(&h, x, d->src.row_nbytes);
			mgpu_sha256_update(&h, &y, sizeof y);
			mgpu_sha256_update(&h, t, d->src.t_nbytes);
		}
	}
	free(x);
	free(t);
	mgpu_sha256_final(&h, dig);
	mgpu_sha256_hex(dig, hex);
	return rc;
}

int mgpu_train_data_ident(struct train_data *d, char *buf, size_t len)
{
	const struct mgpu_source *s = &d->src;
	char hex[MGPU_SHA256_HEX];
	size_t n = strlen(buf);

	MGPU_TRY(rows_digest(d, hex));
	if (n < len)
		snprintf(buf + n, len - n, "data: %zu train, %zu validation, %zu test rows of %d "
			 "%s features, %d classes, norm %.9g/%.9g, rows %.16s\n", d->ntrain,
			 d->nval, s->n[MGPU_SPLIT_TEST], s->d,
			 s->dtype == MGPU_DTYPE_U8 ? "uint8" : "float32", s->classes,
			 (double)s->norm.scale, (double)s->norm.shift, hex);
	return 0;
}
