/*
 * split.c - seeded splits and shard partitions (see split.h).
 */
#include "data/split.h"

#include <math.h>   /* floor */
#include <stdlib.h> /* malloc, calloc, free */
#include <string.h> /* strcmp, memset */

#include "core/err.h" /* mgpu_err */
#include "core/rng.h" /* mgpu_rng_* */

/* RNG streams, fixed forever: changing one changes every split. */
enum { STREAM_SPLIT = 2, STREAM_CLASS = 3, STREAM_ORDER = 4 };

static const char *const names[MGPU_NSPLITS] = { "train", "val", "test" };

const char *mgpu_split_name(int split)
{
	return split >= 0 && split < MGPU_NSPLITS ? names[split] : "?";
}

int mgpu_split_from_name(const char *s)
{
	int i;

	for (i = 0; i < MGPU_NSPLITS; i++)
		if (strcmp(s, names[i]) == 0)
			return i;
	return -1;
}

static size_t round_count(size_t n, double f)
{
	return (size_t)floor((double)n * f + 0.5);
}

static void shuffle(uint32_t *v, size_t n, struct mgpu_rng *rng)
{
	size_t i, j;
	uint32_t t;

	for (i = n; i > 1; i--) {
		j = (size_t)mgpu_rng_below(rng, i);
		t = v[i - 1];
		v[i - 1] = v[j];
		v[j] = t;
	}
}

/*
 * Per-class quotas summing to total: floor(n_c * f), then one more for the
 * classes with the largest remainders (ties: lower class first).
 */
static void quotas(const size_t *count, int classes, double f, size_t total, size_t *q)
{
	size_t sum = 0;
	int c, best;
	double rem, best_rem;
	char *used = calloc((size_t)classes, 1);

	for (c = 0; c < classes; c++) {
		q[c] = (size_t)floor((double)count[c] * f);
		sum += q[c];
	}
	while (sum < total && used) {
		best = -1;
		best_rem = -1;
		for (c = 0; c < classes; c++) {
			rem = (double)count[c] * f - (double)q[c];
			if (!used[c] && q[c] < count[c] && rem > best_rem) {
				best = c;
				best_rem = rem;
			}
		}
		if (best < 0)
			break;
		used[best] = 1;
		q[best]++;
		sum++;
	}
	free(used);
}

/* Fill sp->idx from the per-class shuffled lists. */
static int stratified(struct mgpu_split *sp, const int32_t *y, size_t n, int classes,
		       uint64_t seed, double vf, double tf, uint32_t *tmp)
{
	size_t *count = calloc((size_t)classes * 4, sizeof *count), *start, *qv, *qt, i, k;
	struct mgpu_rng rng;
	int c;

	if (!count)
		return mgpu_err(MGPU_ENOMEM, "out of memory");
	start = count + classes, qv = start + classes, qt = qv + classes;
	for (i = 0; i < n; i++)
		count[y[i]]++;
	for (c = 1; c < classes; c++)
		start[c] = start[c - 1] + count[c - 1];
	for (i = 0; i < n; i++)
		tmp[start[y[i]]++] = (uint32_t)i;
	quotas(count, classes, vf, sp->n[MGPU_SPLIT_VAL], qv);
	quotas(count, classes, tf, sp->n[MGPU_SPLIT_TEST], qt);
	memset(sp->n, 0, sizeof sp->n);
	for (c = 0; c < classes; c++) {
		if (qt[c] + qv[c] > count[c])
			qt[c] = count[c] - qv[c];
		sp->n[MGPU_SPLIT_VAL] += qv[c];
		sp->n[MGPU_SPLIT_TEST] += qt[c];
	}
	sp->idx[MGPU_SPLIT_TEST] = sp->block + sp->n[MGPU_SPLIT_VAL];
	sp->idx[MGPU_SPLIT_TRAIN] = sp->idx[MGPU_SPLIT_TEST] + sp->n[MGPU_SPLIT_TEST];
	sp->n[MGPU_SPLIT_TRAIN] = n - sp->n[MGPU_SPLIT_VAL] - sp->n[MGPU_SPLIT_TEST];
	memset(sp->n, 0, sizeof sp->n);
	mgpu_rng_seed(&rng, seed, STREAM_CLASS);
	for (c = 0, k = 0; c < classes; k += count[c], c++) {
		uint32_t *v = tmp + k;
		shuffle(v, count[c], &rng);
		for (i = 0; i < count[c]; i++) {
			int s = i < qv[c] ? MGPU_SPLIT_VAL : i < qv[c] + qt[c] ?
				MGPU_SPLIT_TEST : MGPU_SPLIT_TRAIN;
			sp->idx[s][sp->n[s]++] = v[i];
		}
	}
	free(count);
	return 0;
}

int mgpu_split_make(struct mgpu_split *sp, const int32_t *y, size_t n, int classes,
		    uint64_t seed, double val_fraction, double test_fraction, int stratify)
{
	struct mgpu_rng rng;
	uint32_t *tmp;
	size_t nv = round_count(n, val_fraction), nt = round_count(n, test_fraction);
	int s;

	memset(sp, 0, sizeof *sp);
	if (val_fraction < 0 || test_fraction < 0 || n > UINT32_MAX || nv + nt >= n)
		return mgpu_err(MGPU_EINVAL, "--val-fraction %g and --test-fraction %g leave "
				"no training samples out of %zu", val_fraction, test_fraction, n);
	sp->block = malloc(2 * n * sizeof *sp->block);
	if (!sp->block)
		return mgpu_err(MGPU_ENOMEM, "out of memory for %zu sample indices", n);
	tmp = sp->block + n;
	sp->idx[MGPU_SPLIT_VAL] = sp->block;
	sp->idx[MGPU_SPLIT_TEST] = sp->block + nv;
	sp->idx[MGPU_SPLIT_TRAIN] = sp->block + nv + nt;
	sp->n[MGPU_SPLIT_VAL] = nv;
	sp->n[MGPU_SPLIT_TEST] = nt;
	sp->n[MGPU_SPLIT_TRAIN] = n - nv - nt;
	if (stratify) {
		int rc = stratified(sp, y, n, classes, seed, val_fraction, test_fraction, tmp);
		if (rc < 0) {
			mgpu_split_free(sp);
			return rc;
		}
	} else {
		mgpu_rng_seed(&rng, seed, STREAM_SPLIT);
		mgpu_rng_perm(&rng, sp->block, n);
	}
	for (s = 0; s < MGPU_NSPLITS && stratify; s++) {
		mgpu_rng_seed(&rng, seed, STREAM_ORDER + (uint64_t)s);
		shuffle(sp->idx[s], sp->n[s], &rng);
	}
	return 0;
}

void mgpu_split_free(struct mgpu_split *sp)
{
	free(sp->block);
	memset(sp, 0, sizeof *sp);
}

size_t mgpu_split_nshards(size_t n, size_t shard_size, int ranks)
{
	size_t k;

	if (n == 0)
		return 0;
	k = (n + shard_size - 1) / shard_size;
	if (ranks > 1)
		k = (k + (size_t)ranks - 1) / (size_t)ranks * (size_t)ranks;
	return k;
}

void mgpu_split_shard_range(size_t n, size_t nshards, size_t i, size_t *first, size_t *len)
{
	size_t base = n / nshards, rem = n % nshards;

	*len = base + (i < rem);
	*first = i * base + (i < rem ? i : rem);
}
