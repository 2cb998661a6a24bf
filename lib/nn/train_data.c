/*
 * train_data.c - the data of a training run: load, seeded validation split,
 * normalisation, epoch order, batch rows (see train_int.h).
 */
#include "nn/train_int.h"

#include <math.h>   /* sqrt */
#include <stdlib.h> /* malloc, free */
#include <string.h> /* memcpy */

#include "core/err.h" /* mgpu_err */
#include "core/rng.h" /* mgpu_rng_perm */

/* RNG streams: one per purpose, so adding one never shifts another. */
enum { STREAM_SPLIT = 2, STREAM_EPOCH = 1000 };

static int split(struct train_data *d, const struct mgpu_train_cfg *cfg)
{
	struct mgpu_rng rng;
	uint32_t *perm;
	size_t n = d->all.n;

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

/* Mean and standard deviation of the training split's features. */
static void normalisation(struct train_data *d)
{
	uint64_t hist[256] = { 0 };
	double sum = 0, sq = 0, cnt, mean, sd;
	size_t i, j, dim = (size_t)d->all.d;
	int v;

	for (i = 0; i < d->ntrain; i++) {
		const uint8_t *row = d->all.x + (size_t)d->train_idx[i] * dim;
		for (j = 0; j < dim; j++)
			hist[row[j]]++;
	}
	for (v = 0; v < 256; v++) {
		sum += (double)hist[v] * v;
		sq += (double)hist[v] * v * v;
	}
	cnt = (double)d->ntrain * (double)dim;
	mean = sum / cnt;
	sd = sqrt(sq / cnt - mean * mean);
	if (!(sd > 1e-6))
		sd = 1.0;
	d->scale = (float)(1.0 / sd);
	d->shift = (float)(-mean / sd);
}

int mgpu_train_data_load(struct train_data *d, const struct mgpu_train_cfg *cfg)
{
	const struct mgpu_spec *s = &cfg->spec;
	int C = s->dims[s->nlayers];

	MGPU_TRY(mgpu_dataset_load_dir(&d->all, &d->test, cfg->data));
	if (d->all.d != s->dims[0])
		return mgpu_err(MGPU_EINVAL,
				"'%s': samples have %d features but the model takes %d",
				cfg->data, d->all.d, s->dims[0]);
	MGPU_TRY(mgpu_dataset_check_classes(&d->all, C, cfg->data));
	MGPU_TRY(mgpu_dataset_check_classes(&d->test, C, cfg->data));
	MGPU_TRY(split(d, cfg));
	normalisation(d);
	return 0;
}

void mgpu_train_data_free(struct train_data *d)
{
	mgpu_dataset_free(&d->all);
	mgpu_dataset_free(&d->test);
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

int mgpu_train_load_rows(struct train_rank *r, const uint32_t *idx, int B,
			 const struct mgpu_dataset *ds)
{
	size_t dim = (size_t)ds->d;
	int i;

	for (i = 0; i < B; i++) {
		memcpy(r->xb + (size_t)i * dim, ds->x + (size_t)idx[i] * dim, dim);
		r->yb[i] = ds->y[idx[i]];
	}
	return mgpu_model_load_batch(&r->model, r->xb, r->yb, B, r->d->scale, r->d->shift);
}
