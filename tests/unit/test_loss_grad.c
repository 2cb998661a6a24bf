/*
 * test_loss_grad.c - the gradients of the target losses (ops.h's mse and
 * pix_xent) against central finite differences of their own losses, on
 * ref and cpu (cuda's are checked against ref by the conformance suite),
 * plus the values a reader can work out by hand.
 *
 * With grad_scale 1 the gradient is that of L = the sum of the op's loss
 * outputs, so each element's analytic gradient is compared with
 * (L(p + eps) - L(p - eps)) / 2 eps summed in double.
 */
#include <math.h>   /* fabs, log, exp */
#include <stdlib.h> /* calloc, free */

#include "../t.h"      /* T_RUN, T_CHECK, T_OK */
#include "core/err.h"  /* mgpu_errmsg */
#include "core/hash.h" /* mgpu_hash64 */
#include "ops/ops.h"   /* mgpu_ops_ref, mgpu_ops_cpu */

static struct mgpu_dev dev;
static const struct mgpu_ops *be;

static void fill(float *p, size_t n, uint64_t seed, float lo, float hi)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = lo + (hi - lo) * (float)(mgpu_hash64(seed, i) >> 40) / 16777216.0f;
}

static double sum(const float *x, size_t n)
{
	double s = 0.0;
	size_t i;

	for (i = 0; i < n; i++)
		s += x[i];
	return s;
}

/* mse over (B,G,M) with weights, one of them 0. */
static void test_mse_grad(void)
{
	enum { Bn = 2, G = 3, M = 5, N = Bn * G * M };
	float p[N], t[N], dp[N], w[Bn * G], loss[Bn * G], eps = 1e-2f, keep;
	double lp, lm, fd, worst = 0.0, mag = 0.0;
	int i;

	fill(p, N, 1, -1.0f, 1.0f);
	fill(t, N, 2, 0.0f, 1.0f);
	fill(w, Bn * G, 3, 0.5f, 2.0f);
	w[4] = 0.0f;
	T_OK(be->mse(&dev, dp, loss, p, t, w, Bn, G, M, 1.0f));
	for (i = 0; i < N; i++) {
		keep = p[i];
		p[i] = keep + eps;
		T_OK(be->mse(&dev, NULL, loss, p, t, w, Bn, G, M, 1.0f));
		lp = sum(loss, Bn * G);
		p[i] = keep - eps;
		T_OK(be->mse(&dev, NULL, loss, p, t, w, Bn, G, M, 1.0f));
		lm = sum(loss, Bn * G);
		p[i] = keep;
		fd = (lp - lm) / (2.0 * eps);
		worst = fabs(fd - dp[i]) > worst ? fabs(fd - dp[i]) : worst;
		mag = fabs(dp[i]) > mag ? fabs(dp[i]) : mag;
		if (i / M == 4)
			T_CHECK(dp[i] == 0.0f, "weight 0 but gradient %g at %d", dp[i], i);
	}
	T_CHECK(worst <= 1e-3 * mag, "mse: finite differences off by %g (largest %g)", worst, mag);
}

/* A hand-worked mse: one row, one group of two values. */
static void test_mse_known(void)
{
	float p[2] = { 1.0f, 3.0f }, t[2] = { 0.0f, 1.0f }, dp[2], loss[1];

	T_OK(be->mse(&dev, dp, loss, p, t, NULL, 1, 1, 2, 0.5f));
	T_NEAR(loss[0], 2.5f, 1e-6); /* (1 + 4) / 2 */
	T_NEAR(dp[0], 0.5f, 1e-6);   /* 0.5 * 2 * 1 / 2 */
	T_NEAR(dp[1], 1.0f, 1e-6);   /* 0.5 * 2 * 2 / 2 */
	T_OK(be->mse(&dev, p, loss, p, t, NULL, 1, 1, 2, 0.5f)); /* in place */
	T_NEAR(p[1], 1.0f, 1e-6);
}

static void test_pix_xent_grad(void)
{
	enum { Nn = 2, C = 4, HW = 6, N = Nn * C * HW };
	float l[N], dl[N], loss[Nn * HW], corr[Nn * HW], eps = 1e-2f, keep;
	int32_t lab[Nn * HW];
	double lp, lm, fd, worst = 0.0, mag = 0.0;
	int i;

	fill(l, N, 4, -2.0f, 2.0f);
	for (i = 0; i < Nn * HW; i++)
		lab[i] = i % 7 == 3 ? -1 : (int32_t)(mgpu_hash64(5, (uint64_t)i) % C);
	T_OK(be->pix_xent(&dev, dl, loss, corr, l, lab, Nn, C, HW, 1.0f));
	for (i = 0; i < N; i++) {
		keep = l[i];
		l[i] = keep + eps;
		T_OK(be->pix_xent(&dev, NULL, loss, corr, l, lab, Nn, C, HW, 1.0f));
		lp = sum(loss, Nn * HW);
		l[i] = keep - eps;
		T_OK(be->pix_xent(&dev, NULL, loss, corr, l, lab, Nn, C, HW, 1.0f));
		lm = sum(loss, Nn * HW);
		l[i] = keep;
		fd = (lp - lm) / (2.0 * eps);
		worst = fabs(fd - dl[i]) > worst ? fabs(fd - dl[i]) : worst;
		mag = fabs(dl[i]) > mag ? fabs(dl[i]) : mag;
	}
	T_CHECK(worst <= 2e-3 * mag, "pix_xent: finite differences off by %g (largest %g)", worst,
		mag);
	/* pixel 3 of row 0 is ignored: no gradient on any of its channels */
	for (i = 0; i < C; i++)
		T_CHECK(dl[i * HW + 3] == 0.0f, "ignored pixel has gradient %g", dl[i * HW + 3]);
}

/* Two pixels, two classes, NCHW: the channels of a pixel a plane apart. */
static void test_pix_xent_known(void)
{
	/* channel 0: pixels (0, 0); channel 1: pixels (log 3, 0) */
	float l[4] = { 0.0f, 0.0f, (float)log(3.0), 0.0f }, dl[4], loss[2], corr[2];
	int32_t lab[2] = { 1, 0 };

	T_OK(be->pix_xent(&dev, dl, loss, corr, l, lab, 1, 2, 2, 1.0f));
	T_NEAR(loss[0], -log(0.75) / 2, 1e-6); /* p(1) = 3 / 4, over HW = 2 */
	T_NEAR(loss[1], log(2.0) / 2, 1e-6);
	T_CHECK(corr[0] == 1.0f && corr[1] == 1.0f, "correct %g %g (a tie's first class wins)",
		corr[0], corr[1]);
	T_NEAR(dl[0], 0.25f / 2, 1e-6);
	T_NEAR(dl[2], (0.75f - 1.0f) / 2, 1e-6);
	T_NEAR(dl[1], (0.5f - 1.0f) / 2, 1e-6);
}

int main(void)
{
	static const struct mgpu_ops *const backends[] = { &mgpu_ops_ref, &mgpu_ops_cpu };
	size_t i;

	for (i = 0; i < 2; i++) {
		be = backends[i];
		if (mgpu_dev_open(&dev, be, 0) < 0)
			return 1;
		T_RUN(test_mse_grad);
		T_RUN(test_mse_known);
		T_RUN(test_pix_xent_grad);
		T_RUN(test_pix_xent_known);
		mgpu_dev_close(&dev);
	}
	return T_DONE();
}
