/*
 * norm.c - feature standardisation (see norm.h).
 */
#include "data/norm.h"

#include <math.h>   /* sqrt */
#include <stdlib.h> /* calloc */

#include "core/err.h" /* mgpu_err */

/* A variance this small is a constant feature: sd 1, not ~0. */
static double sd_of(double var)
{
	return var > 1e-12 ? sqrt(var) : 1.0;
}

void mgpu_moments_add(struct mgpu_moments *m, double v)
{
	m->sum += v;
	m->sq += v * v;
	m->count += 1;
}

void mgpu_moments_add_u8(struct mgpu_moments *m, const uint8_t *x, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		m->hist[x[i]]++;
}

void mgpu_moments_add_f32(struct mgpu_moments *m, const float *x, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		mgpu_moments_add(m, x[i]);
}

void mgpu_moments_get(const struct mgpu_moments *m, double *mean, double *sd)
{
	double sum = m->sum, sq = m->sq, count = m->count;
	int v;

	for (v = 0; v < 256; v++) {
		sum += (double)m->hist[v] * v;
		sq += (double)m->hist[v] * v * v;
		count += (double)m->hist[v];
	}
	*mean = count > 0 ? sum / count : 0.0;
	*sd = count > 0 ? sd_of(sq / count - *mean * *mean) : 1.0;
}

struct mgpu_norm mgpu_norm_from(double mean, double sd)
{
	struct mgpu_norm n;

	if (!(sd > 1e-6))
		sd = 1.0;
	n.scale = (float)(1.0 / sd);
	n.shift = (float)(-mean / sd);
	return n;
}

int mgpu_norm_is_identity(const struct mgpu_norm *n)
{
	return n->scale == 1.0f && n->shift == 0.0f;
}

void mgpu_norm_apply(const struct mgpu_norm *n, float *x, size_t count)
{
	size_t i;

	for (i = 0; i < count; i++)
		x[i] = x[i] * n->scale + n->shift;
}


int mgpu_norm_features(const struct mgpu_samples *train, double **mean, double **sd)
{
	const struct mgpu_samples *s = train;
	double *m = calloc(2 * s->d, sizeof *m), *q, v;
	size_t i, j;

	if (!m)
		return mgpu_err(MGPU_ENOMEM, "out of memory for feature statistics");
	q = m + s->d;
	for (i = 0; i < s->n; i++)
		for (j = 0; j < s->d; j++) {
			v = mgpu_samples_value(s, i, j);
			m[j] += v;
			q[j] += v * v;
		}
	for (j = 0; j < s->d; j++) {
		m[j] /= (double)s->n;
		q[j] = sd_of(q[j] / (double)s->n - m[j] * m[j]);
	}
	*mean = m;
	*sd = q;
	return 0;
}
