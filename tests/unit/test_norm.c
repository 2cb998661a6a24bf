/*
 * test_norm.c - unit tests of feature standardisation (data/norm.h) against
 * plain two-pass formulas: the moments of uint8 (by histogram) and float32
 * values agree with them and with each other; a constant feature gets sd 1;
 * the whole-set transform maps the data to mean 0, sd 1; per-feature
 * statistics match column by column.
 */
#include <math.h>   /* sqrt, fabs */
#include <stdlib.h> /* free */

#include "core/err.h"   /* mgpu_errmsg */
#include "data/norm.h"  /* mgpu_norm_*, mgpu_moments_* */
#include "../t.h"       /* T_RUN, T_CHECK, T_OK, T_NEAR */

enum { N = 97 };

static void ref_stats(const float *x, size_t n, double *mean, double *sd)
{
	double s = 0, q = 0;
	size_t i;

	for (i = 0; i < n; i++)
		s += x[i];
	*mean = s / (double)n;
	for (i = 0; i < n; i++)
		q += (x[i] - *mean) * (x[i] - *mean);
	*sd = sqrt(q / (double)n);
}

static void test_moments(void)
{
	unsigned char u[N];
	float f[N], y[N];
	struct mgpu_moments mu = { 0 }, mf = { 0 };
	struct mgpu_norm n;
	double m1, s1, m2, s2, rm, rs;
	size_t i;

	for (i = 0; i < N; i++) {
		u[i] = (unsigned char)((i * 37 + 11) % 256);
		f[i] = u[i];
	}
	mgpu_moments_add_u8(&mu, u, N);
	mgpu_moments_add_f32(&mf, f, N);
	mgpu_moments_get(&mu, &m1, &s1);
	mgpu_moments_get(&mf, &m2, &s2);
	ref_stats(f, N, &rm, &rs);
	T_NEAR(m1, rm, 1e-9);
	T_NEAR(s1, rs, 1e-9);
	T_CHECK(m1 == m2 && s1 == s2, "u8 %.17g %.17g vs f32 %.17g %.17g", m1, s1, m2, s2);
	n = mgpu_norm_from(m1, s1);
	for (i = 0; i < N; i++)
		y[i] = f[i];
	mgpu_norm_apply(&n, y, N);
	ref_stats(y, N, &rm, &rs);
	T_NEAR(rm, 0.0, 1e-5);
	T_NEAR(rs, 1.0, 1e-5);
	T_CHECK(y[5] == f[5] * n.scale + n.shift, "apply is x * scale + shift");
}

static void test_constant(void)
{
	struct mgpu_moments m = { 0 };
	struct mgpu_norm n;
	double mean, sd;
	int i;

	for (i = 0; i < 10; i++)
		mgpu_moments_add(&m, 3.5);
	mgpu_moments_get(&m, &mean, &sd);
	T_CHECK(mean == 3.5 && sd == 1.0, "constant: mean %g sd %g", mean, sd);
	n = mgpu_norm_from(3.5, 1e-9); /* an sd this small counts as 1 */
	T_CHECK(n.scale == 1.0f && n.shift == -3.5f, "scale %g shift %g", (double)n.scale,
		(double)n.shift);
	n = mgpu_norm_from(0.0, 1.0);
	T_CHECK(mgpu_norm_is_identity(&n), "mean 0, sd 1 is the identity");
}

static void test_features(void)
{
	uint32_t shape = 3;
	struct mgpu_samples s;
	float row[3];
	double *mean = NULL, *sd = NULL;
	int i;

	T_OK(mgpu_samples_init(&s, MGPU_DTYPE_F32, 1, &shape));
	for (i = 0; i < 4; i++) {
		row[0] = (float)i;          /* 0 1 2 3: mean 1.5, sd sqrt(1.25) */
		row[1] = 7.0f;              /* constant: sd 1 */
		row[2] = (float)(i % 2) * 4; /* 0 4 0 4: mean 2, sd 2 */
		T_OK(mgpu_samples_push(&s, row, 0));
	}
	T_OK(mgpu_norm_features(&s, &mean, &sd));
	if (mean) {
		T_NEAR(mean[0], 1.5, 1e-12);
		T_NEAR(sd[0], sqrt(1.25), 1e-12);
		T_CHECK(mean[1] == 7.0 && sd[1] == 1.0, "constant feature: %g %g", mean[1], sd[1]);
		T_NEAR(mean[2], 2.0, 1e-12);
		T_NEAR(sd[2], 2.0, 1e-12);
		T_NEAR(mgpu_norm_feature(4.0, mean[2], sd[2]), 1.0, 1e-12);
	}
	free(mean);
	mgpu_samples_free(&s);
}

int main(void)
{
	T_RUN(test_moments);
	T_RUN(test_constant);
	T_RUN(test_features);
	return T_DONE();
}
