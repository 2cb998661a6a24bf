/*
 * test_elem.c - the shared element math of elem.h (what every backend runs)
 * against finite differences and hand-written PyTorch formulas.
 *
 * Derivatives: act_df against central differences of act_f; xent dlogits
 * against the numeric derivative of the loss; LayerNorm row backward (dX)
 * and column backward (dgamma, dbeta) against the numeric gradient of
 * L = sum(dY * ln(X)). Dropout: the dropped fraction is p within 5 sigma
 * on 1e5 elements, masks are pure functions of (seed, index). Optimizers:
 * two steps of mgpu_sgd_elem / mgpu_adamw_elem against torch.optim's update
 * rules written out in double.
 */
#include <math.h>   /* fabs, sqrt, erf, NAN, isnan */
#include <stdint.h> /* int32_t, uint64_t */

#include "../t.h"     /* T_RUN, T_CHECK, T_NEAR */
#include "ops/elem.h" /* the functions under test */

/* Central difference step and its tolerance for float math. */
#define H 1e-2
#define TOL_FD 2e-3

static const float points[] = { -2.7f, -1.3f, -0.45f, -0.05f, 0.11f, 0.6f, 1.4f, 3.1f };
#define NPOINTS (sizeof points / sizeof points[0])

static void test_act_df(void)
{
	static const int acts[] = { MGPU_ACT_NONE, MGPU_ACT_RELU, MGPU_ACT_GELU, MGPU_ACT_TANH };
	size_t a, i;

	for (a = 0; a < 4; a++)
		for (i = 0; i < NPOINTS; i++) {
			double z = points[i];
			double fd = ((double)mgpu_act_f(acts[a], (float)(z + H)) -
				     (double)mgpu_act_f(acts[a], (float)(z - H))) / (2 * H);
			T_CHECK(fabs(fd - mgpu_act_df(acts[a], (float)z)) <= TOL_FD,
				"act %d at %g: df %g, numeric %g", acts[a], z,
				(double)mgpu_act_df(acts[a], (float)z), fd);
		}
	/* values, against libm in double */
	T_NEAR(mgpu_act_f(MGPU_ACT_GELU, 1.0f), 0.5 * (1 + erf(1 / sqrt(2.0))), 1e-6);
	T_NEAR(mgpu_act_f(MGPU_ACT_GELU, -2.0f), -1.0 * (1 + erf(-2 / sqrt(2.0))), 1e-6);
	T_NEAR(mgpu_act_f(MGPU_ACT_TANH, 0.5f), tanh(0.5), 1e-7);
	T_CHECK(mgpu_act_f(MGPU_ACT_RELU, -1.0f) == 0.0f && mgpu_act_f(MGPU_ACT_RELU, 2.0f) == 2.0f,
		"relu");
	T_CHECK(mgpu_act_df(MGPU_ACT_RELU, -1.0f) == 0.0f && mgpu_act_df(MGPU_ACT_RELU, 2.0f) == 1.0f,
		"relu'");
}

static float xent_loss(const float *l, int C, int32_t label)
{
	float loss, corr;
	mgpu_xent_row(l, C, label, 1.0f, NULL, &loss, &corr);
	return loss;
}

static void test_xent_grad(void)
{
	float l[7] = { 0.3f, -1.2f, 2.2f, 0.9f, -0.4f, 1.7f, 0.0f }, dl[7], lp[7], loss, corr;
	int32_t label = 3;
	int j, k;

	mgpu_xent_row(l, 7, label, 0.5f, dl, &loss, &corr);
	T_CHECK(corr == 0.0f, "argmax is 2, label 3");
	for (j = 0; j < 7; j++) {
		double fd;
		for (k = 0; k < 7; k++)
			lp[k] = l[k];
		lp[j] = l[j] + (float)H;
		fd = xent_loss(lp, 7, label);
		lp[j] = l[j] - (float)H;
		fd = (fd - xent_loss(lp, 7, label)) / (2 * H);
		T_NEAR(dl[j], 0.5 * fd, TOL_FD); /* grad_scale 0.5 */
	}
	/* log-sum-exp is stable: huge logits do not overflow */
	l[2] = 1000.0f;
	mgpu_xent_row(l, 7, 2, 1.0f, dl, &loss, &corr);
	T_CHECK(isfinite(loss) && loss >= 0.0f && loss < 1e-6f && corr == 1.0f, "loss %g", loss);
	T_NEAR(dl[2], 0.0, 1e-6);
}

/* L = sum over (B,D) of dY * LayerNorm(X), gamma, beta. */
static double ln_objective(const float *X, const float *g, const float *b, const float *dY,
			   int B, int D)
{
	float y[16], mean, rstd;
	double L = 0;
	int i, j;

	for (i = 0; i < B; i++) {
		mgpu_ln_row_fwd(X + i * D, D, g, b, 1e-5f, y, &mean, &rstd);
		for (j = 0; j < D; j++)
			L += (double)dY[i * D + j] * y[j];
	}
	return L;
}

/* Central difference of ln_objective in x[idx]. */
static double ln_fd(float *x, int idx, const float *X, const float *g, const float *b,
		    const float *dY, int B, int D)
{
	float save = x[idx];
	double up, dn;

	x[idx] = save + (float)H;
	up = ln_objective(X, g, b, dY, B, D);
	x[idx] = save - (float)H;
	dn = ln_objective(X, g, b, dY, B, D);
	x[idx] = save;
	return (up - dn) / (2 * H);
}

static void test_ln_grad(void)
{
	enum { B = 3, D = 9 };
	float X[B * D], dY[B * D], g[D], b[D], dX[B * D], mean[B], rstd[B], y[D];
	float dg[D], db[D], dg2[D], db2[D];
	int i, j;

	for (i = 0; i < B * D; i++) {
		X[i] = (float)sin(1.7 * i) * 2.0f + 0.3f * (float)(i % 4);
		dY[i] = (float)cos(0.9 * i + 0.2);
	}
	for (j = 0; j < D; j++) {
		g[j] = 0.6f + 0.1f * (float)j;
		b[j] = -0.2f + 0.05f * (float)j;
	}
	for (i = 0; i < B; i++) {
		mgpu_ln_row_fwd(X + i * D, D, g, b, 1e-5f, y, &mean[i], &rstd[i]);
		mgpu_ln_row_bwd(dY + i * D, X + i * D, mean[i], rstd[i], g, D, dX + i * D);
	}
	for (i = 0; i < B * D; i++)
		T_NEAR(dX[i], ln_fd(X, i, X, g, b, dY, B, D), TOL_FD);
	for (j = 0; j < D; j++) {
		dg[j] = NAN; /* acc == 0 must not read the old values */
		db[j] = NAN;
		mgpu_ln_col_bwd(dY, X, mean, rstd, B, D, j, 0.0f, dg, db);
		T_NEAR(dg[j], ln_fd(g, j, X, g, b, dY, B, D), TOL_FD);
		T_NEAR(db[j], ln_fd(b, j, X, g, b, dY, B, D), TOL_FD);
		dg2[j] = 1.0f;
		db2[j] = -2.0f;
		mgpu_ln_col_bwd(dY, X, mean, rstd, B, D, j, 0.5f, dg2, db2);
		T_NEAR(dg2[j], 0.5 + dg[j], 1e-6);
		T_NEAR(db2[j], -1.0 + db[j], 1e-6);
	}
	/* forward: zero mean, unit (biased) variance before the affine part */
	{
		float one[D], zero[D];
		double m = 0, v = 0;
		for (j = 0; j < D; j++) {
			one[j] = 1.0f;
			zero[j] = 0.0f;
		}
		mgpu_ln_row_fwd(X, D, one, zero, 0.0f, y, &mean[0], &rstd[0]);
		for (j = 0; j < D; j++)
			m += y[j];
		for (j = 0; j < D; j++)
			v += (y[j] - m / D) * (y[j] - m / D);
		T_NEAR(m / D, 0.0, 1e-6);
		T_NEAR(v / D, 1.0, 1e-5);
	}
}

static void test_dropout_mask(void)
{
	static const float ps[] = { 0.1f, 0.5f, 0.9f };
	const size_t n = 100000;
	size_t i, k, dropped, diff;
	float f;

	for (k = 0; k < 3; k++) {
		double p = ps[k], frac, sigma = sqrt(p * (1 - p) / (double)n);
		dropped = 0;
		diff = 0;
		for (i = 0; i < n; i++) {
			f = mgpu_dropout_factor(1234, i, ps[k]);
			T_CHECK(f == 0.0f || f == 1.0f / (1.0f - ps[k]), "factor %g", f);
			if (t_cur_failed)
				return;
			dropped += f == 0.0f;
			T_CHECK(f == mgpu_dropout_factor(1234, i, ps[k]), "not deterministic");
			diff += (f == 0.0f) != (mgpu_dropout_factor(1235, i, ps[k]) == 0.0f);
		}
		frac = (double)dropped / (double)n;
		T_CHECK(fabs(frac - p) <= 5 * sigma, "p %g: dropped %g", p, frac);
		T_CHECK(diff > n / 20, "seed 1235 gives another mask (%zu differ)", diff);
	}
	for (i = 0; i < 1000; i++)
		T_CHECK(mgpu_dropout_factor(99, i, 0.0f) == 1.0f, "p 0 keeps all");
	for (i = 0; i < 1000; i++)
		T_CHECK(mgpu_dropout_factor(99, i, 1.0f) == 0.0f, "p 1 drops all");
	T_CHECK(mgpu_hash64(1, 2) != mgpu_hash64(2, 1), "hash mixes seed and index");
}

/* torch.optim.SGD (dampening 0), in double. */
static void torch_sgd(double *w, double *buf, double g, int t, double lr, double mom, double wd,
		      int nesterov)
{
	double d = g + wd * *w;
	if (mom != 0) {
		*buf = t == 1 ? d : mom * *buf + d;
		d = nesterov ? d + mom * *buf : *buf;
	}
	*w -= lr * d;
}

static void test_sgd(void)
{
	static const float grads[2] = { 0.8f, -0.3f };
	int nest, t;

	for (nest = 0; nest < 3; nest++) {
		struct mgpu_sgd_hp hp = { 0.1f, nest == 2 ? 0.0f : 0.9f, 0.01f, 0.5f, nest == 1 };
		double w = 1.5, buf = 0;
		float fw = 1.5f, fm = 0.0f;
		for (t = 1; t <= 2; t++) {
			torch_sgd(&w, &buf, 0.5 * grads[t - 1], t, 0.1, hp.momentum, 0.01, hp.nesterov);
			mgpu_sgd_elem(&fw, grads[t - 1], &fm, &hp);
			T_NEAR(fw, w, 1e-6);
			if (hp.momentum != 0)
				T_NEAR(fm, buf, 1e-6);
		}
	}
	/* hand-computed: w 1, g 1, lr .1, momentum .9, no decay: 0.9 then 0.71 */
	{
		struct mgpu_sgd_hp hp = { 0.1f, 0.9f, 0.0f, 1.0f, 0 };
		float w = 1.0f, m = 0.0f;
		mgpu_sgd_elem(&w, 1.0f, &m, &hp);
		T_NEAR(w, 0.9, 1e-7);
		mgpu_sgd_elem(&w, 1.0f, &m, &hp);
		T_NEAR(w, 0.71, 1e-6);
	}
}

/* torch.optim.AdamW, in double. */
static void torch_adamw(double *w, double *m, double *v, double g, int t, double lr, double b1,
			double b2, double eps, double wd)
{
	double bc1 = 1 - pow(b1, t), bc2 = 1 - pow(b2, t);
	*w *= 1 - lr * wd;
	*m = b1 * *m + (1 - b1) * g;
	*v = b2 * *v + (1 - b2) * g * g;
	*w -= lr / bc1 * *m / (sqrt(*v) / sqrt(bc2) + eps);
}

static void test_adamw(void)
{
	static const float grads[2] = { 0.8f, -0.3f };
	struct mgpu_adamw_hp hp = { 1e-2f, 0.9f, 0.999f, 1e-8f, 0.1f, 2.0f, 0, 0 };
	double w = 1.5, m = 0, v = 0;
	float fw = 1.5f, fm = 0, fv = 0;
	int t;

	for (t = 1; t <= 2; t++) {
		hp.bias_corr1 = 1.0f - powf(0.9f, (float)t);
		hp.bias_corr2 = 1.0f - powf(0.999f, (float)t);
		torch_adamw(&w, &m, &v, 2.0 * grads[t - 1], t, 1e-2, 0.9, 0.999, 1e-8, 0.1);
		mgpu_adamw_elem(&fw, grads[t - 1], &fm, &fv, &hp);
		T_NEAR(fw, w, 1e-6);
		T_NEAR(fm, m, 1e-6);
		T_NEAR(fv, v, 1e-7);
	}
	/* hand-computed: Adam's first step moves by lr * sign(g) */
	{
		struct mgpu_adamw_hp h1 = { 0.1f, 0.9f, 0.999f, 1e-8f, 0.0f, 1.0f, 0.1f, 0.001f };
		float w1 = 1.0f, m1 = 0.0f, v1 = 0.0f;
		mgpu_adamw_elem(&w1, 0.5f, &m1, &v1, &h1);
		T_NEAR(m1, 0.05, 1e-7);
		T_NEAR(v1, 0.00025, 1e-8); /* 1 - 0.999f is not 0.001 */
		T_NEAR(w1, 0.9, 1e-6);
	}
}

int main(void)
{
	T_RUN(test_act_df);
	T_RUN(test_xent_grad);
	T_RUN(test_ln_grad);
	T_RUN(test_dropout_mask);
	T_RUN(test_sgd);
	T_RUN(test_adamw);
	return T_DONE();
}
