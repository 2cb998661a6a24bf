/*
 * norm.h - how mgpu standardises features: the statistics, the rule that
 * turns them into a transform, and the transform on the host. Every other
 * part of mgpu that normalises calls here.
 *
 * Whole-set (what mgpu-train does): x_used = x * scale + shift with
 * scale = 1 / sd and shift = -mean / sd, mean and sd over every feature of
 * the training rows; an sd below 1e-6 counts as 1 (a constant input stays
 * as it is, centred, rather than blown up). uint8 rows get the transform on
 * the device as they are cast to float (the ops' u8_to_f32 takes scale and
 * shift); float32 rows get it on the host from mgpu_source_rows() once the
 * trainer gave the source its norm (data/source.h), in the loader's worker
 * threads.
 *
 * Per-feature (mgpu-cache --normalize): (x - mean[j]) / sd[j], each
 * feature over train, baked into a float32 cache; the trainer then uses
 * the identity.
 *
 * Sums are kept in double; uint8 values by histogram, so the result does
 * not depend on the order rows come in.
 */
#ifndef MGPU_DATA_NORM_H
#define MGPU_DATA_NORM_H

#include <stddef.h> /* size_t */
#include <stdint.h> /* uint8_t, uint64_t */

#include "data/samples.h" /* struct mgpu_samples */

/* x_used = x * scale + shift; the identity is { 1, 0 }. */
struct mgpu_norm {
	float scale, shift;
};

/* Running sums of values, for their mean and sd. Zero it to start. */
struct mgpu_moments {
	double sum, sq, count;
	uint64_t hist[256]; /* uint8 values */
};

void mgpu_moments_add(struct mgpu_moments *m, double v);
void mgpu_moments_add_u8(struct mgpu_moments *m, const uint8_t *x, size_t n);
void mgpu_moments_add_f32(struct mgpu_moments *m, const float *x, size_t n);
/* Mean and sd (population) of what was added; sd 1 when the variance is ~0. */
void mgpu_moments_get(const struct mgpu_moments *m, double *mean, double *sd);

/* The whole-set transform of data with this mean and sd. */
struct mgpu_norm mgpu_norm_from(double mean, double sd);
int mgpu_norm_is_identity(const struct mgpu_norm *n);
/* x[i] = x[i] * scale + shift for i < count. */
void mgpu_norm_apply(const struct mgpu_norm *n, float *x, size_t count);

/*
 * Per-feature mean and sd of train (n rows of d features): *mean and *sd
 * point into one malloc'ed block of 2d doubles (free *mean).
 */
int mgpu_norm_features(const struct mgpu_samples *train, double **mean, double **sd);
/* Feature value v standardised with its feature's mean and sd. */
static inline double mgpu_norm_feature(double v, double mean, double sd)
{
	return (v - mean) / sd;
}

#endif
