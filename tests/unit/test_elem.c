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
 * rules written out in double. Transformer math: the causal attention
 * softmax backward and the embedding backward against finite differences,
 * each with a mutant (a plausible slip) the same check must reject; the
 * heads index map by hand; GELU's erf and exp against libm; bf16 rounding on ties, NaN and Inf, and every
 * bf16 value round-tripping.
 */
#include <math.h>   /* fabs, sqrt, erf, NAN, isnan */
#include <stdint.h> /* int32_t, uint32_t, uint64_t */
#include <string.h> /* memcpy, memcmp */

#include "../t.h"     /* T_RUN, T_CHECK, T_NEAR */
#include "ops/elem.h" /* the functions under test */
#include "core/err.h"  /* mgpu_errmsg (T_OK) */
#include "ops/ops.h"  /* mgpu_ops_ref, mgpu_ops_cpu: the fused attention ops */

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

/* GELU's branch-free erf and exp against libm in double, over a dense grid
 * and the edges (clamps, underflow, NaN), at the bounds elem.h states. */
static void test_erf_exp(void)
{
	double x, worst_erf = 0, worst_exp = 0, e;
	int i;

	for (i = -70000; i <= 70000; i++) {
		x = i * 1e-4;
		e = fabs(mgpu_erf((float)x) - erf((float)x));
		worst_erf = e > worst_erf ? e : worst_erf;
		if (x != 0.0 && fabs(x) < 1.0) /* relative near 0, where GELU is small */
			T_CHECK(e <= 3e-7 * fabs(erf((float)x)) + 1e-12, "erf(%g): rel %g", x,
				e / fabs(erf((float)x)));
	}
	T_CHECK(worst_erf <= 5e-7, "erf: worst absolute error %g", worst_erf);
	for (i = 0; i <= 87000; i++) {
		x = -i * 1e-3;
		e = fabs(mgpu_exp_neg((float)x) / exp((float)x) - 1);
		worst_exp = e > worst_exp ? e : worst_exp;
	}
	T_CHECK(worst_exp <= 2e-7, "exp: worst relative error %g", worst_exp);
	T_CHECK(mgpu_erf(40.0f) == 1.0f && mgpu_erf(-1e30f) == -1.0f, "erf beyond the clamp");
	T_CHECK(mgpu_exp_neg(0.0f) == 1.0f, "exp(0) = %.9g", (double)mgpu_exp_neg(0.0f));
	T_CHECK(mgpu_exp_neg(-1e4f) > 0.0f && mgpu_exp_neg(-1e4f) < 2e-38f, "exp underflow");
	T_CHECK(isnan(mgpu_exp_neg(NAN)), "exp(NaN) = %.9g, not NaN", (double)mgpu_exp_neg(NAN));
	T_CHECK(isnan(mgpu_erf(NAN)) && isnan(mgpu_act_f(MGPU_ACT_GELU, NAN)), "NaN passes");
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

/* ---- transformer math --------------------------------------------------- */

/* Worst |a - n| over n elements: analytic against numeric gradients. */
static double worst_diff(const float *a, const double *num, int n)
{
	double w = 0.0, d;
	int i;

	for (i = 0; i < n; i++) {
		d = fabs((double)a[i] - num[i]);
		w = d > w ? d : w;
	}
	return w;
}

enum { FBH = 2, FT = 5, FDH = 3, FN = FBH * FT * FDH }; /* fused attention */

/* L = sum w . y, y = attn_fwd(q, k, v) on o in fp32. */
static double flash_objective(struct mgpu_dev *dev, const float *q, const float *k,
			      const float *v, const float *w, float scale)
{
	float y[FN], lse[FBH * FT];
	double L = 0;
	int i;

	if (dev->ops->attn_fwd(dev, y, lse, q, k, v, FBH, FT, FDH, scale, MGPU_PREC_FP32) < 0)
		return NAN;
	for (i = 0; i < FN; i++)
		L += (double)w[i] * y[i];
	return L;
}

/* Central differences of the objective in each element of x (q, k or v). */
static void flash_fd(struct mgpu_dev *dev, float *x, float *q, float *k, float *v,
		     const float *w, float scale, double *num)
{
	float save;
	int i;

	for (i = 0; i < FN; i++) {
		save = x[i];
		x[i] = save + (float)H;
		num[i] = flash_objective(dev, q, k, v, w, scale);
		x[i] = save - (float)H;
		num[i] = (num[i] - flash_objective(dev, q, k, v, w, scale)) / (2 * H);
		x[i] = save;
	}
}

/* attn_bwd of ref and cpu against finite differences of attn_fwd; a
 * backward without the row term D (y given as 0) must fail the check. */
static void test_flash_grad(void)
{
	const struct mgpu_ops *backends[] = { &mgpu_ops_ref, &mgpu_ops_cpu };
	const float scale = 0.8f;
	float q[FN], k[FN], v[FN], w[FN], y[FN], zero[FN] = { 0 }, lse[FBH * FT];
	float g[3][FN], gm[3][FN];
	float *xs[3] = { q, k, v };
	double num[FN];
	struct mgpu_dev dev;
	size_t b;
	int i, x;

	for (i = 0; i < FN; i++) {
		q[i] = (float)sin(1.3 * i) * 1.5f;
		k[i] = (float)cos(0.9 * i + 0.2) * 1.5f;
		v[i] = (float)sin(0.7 * i + 0.4);
		w[i] = (float)cos(0.31 * i);
	}
	for (b = 0; b < 2; b++) {
		T_OK(mgpu_dev_open(&dev, backends[b], 0));
		T_OK(dev.ops->attn_fwd(&dev, y, lse, q, k, v, FBH, FT, FDH, scale, MGPU_PREC_FP32));
		T_OK(dev.ops->attn_bwd(&dev, g[0], g[1], g[2], q, k, v, y, w, lse, FBH, FT, FDH,
				       scale, MGPU_PREC_FP32));
		T_OK(dev.ops->attn_bwd(&dev, gm[0], gm[1], gm[2], q, k, v, zero, w, lse, FBH, FT,
				       FDH, scale, MGPU_PREC_FP32));
		for (x = 0; x < 3; x++) {
			flash_fd(&dev, xs[x], q, k, v, w, scale, num);
			T_CHECK(worst_diff(g[x], num, FN) <= TOL_FD, "%s: d%c off by %g",
				backends[b]->name, "qkv"[x], worst_diff(g[x], num, FN));
			if (x < 2) /* dv does not involve D */
				T_CHECK(worst_diff(gm[x], num, FN) > 10 * TOL_FD,
					"%s: mutant d%c passed (%g)", backends[b]->name, "qkv"[x],
					worst_diff(gm[x], num, FN));
		}
		mgpu_dev_close(&dev);
	}
}

/* Under bf16 the probabilities are rounded before the product with v:
 * with q = 0 every row is uniform, p = 1 / (i + 1), and y_i = r(p) times
 * the sum of the (bf16) v_j, where fp32 gives p itself. */
static void test_flash_bf16(void)
{
	float q[FN] = { 0 }, v[FN], y[FN], y32[FN], lse[FBH * FT], p, s;
	struct mgpu_dev dev;
	int i, j, d;

	for (i = 0; i < FN; i++)
		v[i] = (float)(i % 7) - 3.0f; /* bf16 values */
	T_OK(mgpu_dev_open(&dev, &mgpu_ops_ref, 0));
	T_OK(dev.ops->attn_fwd(&dev, y, lse, q, q, v, FBH, FT, FDH, 1.0f, MGPU_PREC_BF16));
	T_OK(dev.ops->attn_fwd(&dev, y32, lse, q, q, v, FBH, FT, FDH, 1.0f, MGPU_PREC_FP32));
	for (i = 0; i < FT; i++) {
		T_NEAR(lse[FT + i], log(i + 1.0), 1e-6);
		p = mgpu_bf16_to_f32(mgpu_bf16_from_f32(1.0f / (float)(i + 1)));
		for (d = 0; d < FDH; d++) {
			for (s = 0.0f, j = 0; j <= i; j++)
				s += v[FT * FDH + j * FDH + d];
			T_NEAR(y[FT * FDH + i * FDH + d], p * s, 1e-6);
			if (i == 2 && s != 0.0f)
				T_CHECK(fabs(y32[FT * FDH + i * FDH + d] - p * s) > 1e-4,
					"fp32 rounded p too");
		}
	}
	mgpu_dev_close(&dev);
}

enum { EB = 2, ET = 3, EV = 4, ED = 3 }; /* embedding shapes */

static const int32_t emb_ids[EB * ET] = { 1, 3, 1, 0, 1, 3 }; /* repeats on purpose */

static double emb_objective(const float *wte, const float *wpe, const float *dY)
{
	double L = 0;
	size_t i;

	for (i = 0; i < (size_t)EB * ET * ED; i++)
		L += (double)dY[i] * mgpu_emb_elem(emb_ids, wte, wpe, ET, ED, i);
	return L;
}

/* Central difference of emb_objective in x[i]. */
static double emb_fd(float *x, int i, const float *wte, const float *wpe, const float *dY)
{
	float save = x[i];
	double up;

	x[i] = save + (float)H;
	up = emb_objective(wte, wpe, dY);
	x[i] = save - (float)H;
	up = (up - emb_objective(wte, wpe, dY)) / (2 * H);
	x[i] = save;
	return up;
}

static void test_emb_grad(void)
{
	float wte[EV * ED], wpe[ET * ED], dY[EB * ET * ED], dwte[EV * ED], dwpe[ET * ED];
	float mut[EV * ED], acc[EV * ED];
	double nte[EV * ED], npe[ET * ED];
	int i, v, t, c;

	for (i = 0; i < EV * ED; i++)
		wte[i] = (float)sin(0.9 * i);
	for (i = 0; i < ET * ED; i++)
		wpe[i] = (float)cos(1.1 * i);
	for (i = 0; i < EB * ET * ED; i++)
		dY[i] = (float)sin(2.3 * i + 0.5);
	for (v = 0; v < EV; v++)
		for (c = 0; c < ED; c++) {
			dwte[v * ED + c] = NAN; /* acc 0 must not read it */
			mgpu_emb_tok_col(dY, emb_ids, EB * ET, ED, v, c, 0.0f, dwte);
			/* mutant: the last row's token forgotten */
			mgpu_emb_tok_col(dY, emb_ids, EB * ET - 1, ED, v, c, 0.0f, mut);
			acc[v * ED + c] = 2.0f;
			mgpu_emb_tok_col(dY, emb_ids, EB * ET, ED, v, c, 0.5f, acc);
		}
	for (t = 0; t < ET; t++)
		for (c = 0; c < ED; c++) {
			dwpe[t * ED + c] = NAN;
			mgpu_emb_pos_col(dY, EB, ET, ED, t, c, 0.0f, dwpe);
		}
	for (i = 0; i < EV * ED; i++) {
		nte[i] = emb_fd(wte, i, wte, wpe, dY);
		T_NEAR(acc[i], 1.0 + dwte[i], 1e-6);
	}
	for (i = 0; i < ET * ED; i++)
		npe[i] = emb_fd(wpe, i, wte, wpe, dY);
	T_CHECK(worst_diff(dwte, nte, EV * ED) <= TOL_FD, "dwte off by %g",
		worst_diff(dwte, nte, EV * ED));
	T_CHECK(worst_diff(dwpe, npe, ET * ED) <= TOL_FD, "dwpe off by %g",
		worst_diff(dwpe, npe, ET * ED));
	T_CHECK(worst_diff(mut, nte, EV * ED) > 10 * TOL_FD, "mutant passed");
	T_CHECK(dwte[2 * ED] == 0.0f, "token 2 never occurs: zero gradient");
	/* forward by hand: row (b=1, t=1) is token 1 at position 1 */
	T_CHECK(mgpu_emb_elem(emb_ids, wte, wpe, ET, ED, (1 * ET + 1) * ED + 2) ==
			wte[1 * ED + 2] + wpe[1 * ED + 2],
		"emb element");
}

/* split then merge is the identity on the H*Dh columns, by hand too. */
static void test_heads_index(void)
{
	enum { B = 2, T = 3, NH = 3, DH = 2, LD = 3 * NH * DH };
	size_t i, j, n = (size_t)B * T * NH * DH;
	float X[B * T * LD], Y[B * T * NH * DH], Z[B * T * LD];

	for (i = 0; i < (size_t)B * T * LD; i++) {
		X[i] = (float)i;
		Z[i] = -1.0f;
	}
	for (i = 0; i < n; i++)
		Y[i] = X[mgpu_heads_index(i, T, NH, DH, LD)];
	for (i = 0; i < n; i++)
		Z[mgpu_heads_index(i, T, NH, DH, LD)] = Y[i];
	for (i = 0; i < (size_t)B * T; i++)
		for (j = 0; j < (size_t)LD; j++)
			T_CHECK(Z[i * LD + j] == (j < NH * DH ? X[i * LD + j] : -1.0f),
				"row %zu col %zu", i, j);
	/* (b=1, h=2, t=0, d=1) of the per-head layout */
	i = ((1 * NH + 2) * T + 0) * DH + 1;
	T_CHECK(Y[i] == X[(1 * T + 0) * LD + 2 * DH + 1], "head element %g", (double)Y[i]);
}

static float from_bits(uint32_t u)
{
	float f;
	memcpy(&f, &u, sizeof f);
	return f;
}

/* fp16: hand-checked values, every fp16 pattern through float and back,
 * and, where the compiler has _Float16, its conversion on a sweep of
 * floats (ties, the overflow edge, subnormals). */
static void test_f16(void)
{
	static const uint32_t in[][2] = {
		{ 0x3f800000u, 0x3c00 }, /* 1 */
		{ 0xc0000000u, 0xc000 }, /* -2 */
		{ 0x477fe000u, 0x7bff }, /* 65504, the largest */
		{ 0x477fefffu, 0x7bff }, /* just below 65520: down */
		{ 0x477ff000u, 0x7c00 }, /* 65520, a tie: to even, Inf */
		{ 0x7f800000u, 0x7c00 }, /* Inf */
		{ 0x38800000u, 0x0400 }, /* 2^-14, the smallest normal */
		{ 0x33800000u, 0x0001 }, /* 2^-24, the smallest subnormal */
		{ 0x33000000u, 0x0000 }, /* 2^-25: a tie with 0 */
		{ 0x33000001u, 0x0001 }, /* just above: up */
		{ 0x33c00000u, 0x0002 }, /* 1.5 x 2^-24: a tie, to even 2 */
		{ 0x3f801000u, 0x3c00 }, /* 1 + 2^-11: a tie, to even */
		{ 0x3f803000u, 0x3c02 }, /* 1 + 3 x 2^-11: a tie, to even (up) */
		{ 0x80000000u, 0x8000 }, /* -0 */
	};
	unsigned h;
	size_t i;

	for (i = 0; i < sizeof in / sizeof in[0]; i++) {
		uint16_t got = mgpu_f16_from_f32(mgpu_f32_from_bits(in[i][0]));
		T_CHECK(got == in[i][1], "0x%08x -> 0x%04x, want 0x%04x", in[i][0], got, in[i][1]);
	}
	T_CHECK((mgpu_f16_from_f32(NAN) & 0x7e00) == 0x7e00, "NaN stays NaN");
	for (h = 0; h < 65536; h++) {
		float f = mgpu_f16_to_f32((uint16_t)h);
		if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff)) {
			T_CHECK(isnan(f), "0x%04x is a NaN", h);
			continue;
		}
		T_CHECK(mgpu_f16_from_f32(f) == h, "0x%04x -> %g -> 0x%04x", h, (double)f,
			mgpu_f16_from_f32(f));
	}
#ifdef __FLT16_MAX__
	for (i = 0; i < 2000000; i++) {
		/* floats from 2^-30 to beyond 65536 and their neighbours */
		uint32_t u = 0x30800000u + (uint32_t)(i * 0x2f1u) % 0x17800000u;
		float f = mgpu_f32_from_bits(u ^ (i & 1 ? 0x80000000u : 0));
		_Float16 ref = (_Float16)f;
		uint16_t want;
		memcpy(&want, &ref, 2);
		if (mgpu_f16_from_f32(f) != want) {
			T_CHECK(0, "0x%08x -> 0x%04x, _Float16 0x%04x", u, mgpu_f16_from_f32(f), want);
			break;
		}
	}
#endif
}

static void test_bf16(void)
{
	static const uint32_t in[][2] = {
		{ 0x3f800000u, 0x3f80 }, /* 1 */
		{ 0x3f808000u, 0x3f80 }, /* tie, even below: stays */
		{ 0x3f818000u, 0x3f82 }, /* tie, odd below: up to even */
		{ 0x3f808001u, 0x3f81 }, /* just above the tie */
		{ 0x3f807fffu, 0x3f80 }, /* just below */
		{ 0xbf818000u, 0xbf82 }, /* negative ties the same way */
		{ 0x7f7fffffu, 0x7f80 }, /* largest float: Inf */
		{ 0x7f800000u, 0x7f80 }, { 0xff800000u, 0xff80 }, /* Inf */
		{ 0x80000000u, 0x8000 }, { 0x00000001u, 0x0000 }, /* -0, tiny */
		{ 0x7fc00000u, 0x7fc0 }, /* quiet NaN */
		{ 0x7f800001u, 0x7fc0 }, /* signalling NaN: quiet, not Inf */
		{ 0xff80ffffu, 0xffc0 }, /* NaN whose low bits would round to Inf */
	};
	uint32_t h;
	size_t i;
	float f;

	for (i = 0; i < sizeof in / sizeof in[0]; i++)
		T_CHECK(mgpu_bf16_from_f32(from_bits(in[i][0])) == in[i][1],
			"0x%08x -> 0x%04x, want 0x%04x", in[i][0],
			mgpu_bf16_from_f32(from_bits(in[i][0])), in[i][1]);
	for (h = 0; h < 65536; h++) {
		f = mgpu_bf16_to_f32((uint16_t)h);
		if (isnan(f))
			T_CHECK(isnan(mgpu_bf16_to_f32(mgpu_bf16_from_f32(f))), "NaN 0x%04x", h);
		else
			T_CHECK(mgpu_bf16_from_f32(f) == h, "0x%04x does not round-trip", h);
		if (t_cur_failed)
			return;
	}
	/* the rounding error is at most half a bf16 ulp (8 bits of mantissa) */
	for (i = 0; i < 1000; i++) {
		double x = sin(0.37 * (double)i) * pow(2.0, (double)(i % 40) - 20);
		double y = mgpu_bf16_to_f32(mgpu_bf16_from_f32((float)x));
		T_CHECK(fabs(y - x) <= fabs(x) * (1.0 / 256) + 1e-30, "%g -> %g", x, y);
	}
}

/* ---- a row in parts: the CUDA kernels' decomposition on the host -------- */

#define LANES 32  /* a warp */
#define CPARTS 64 /* the column kernels' COL_H */
#define PMAX 1000 /* the longest row below */

/* Row lengths around a warp's edges: shorter, one less, equal, one more,
 * not a multiple, long. */
static const int part_lens[] = { 1, 5, 31, 32, 33, 257, PMAX };
#define NPARTLENS (sizeof part_lens / sizeof part_lens[0])

/* x[i] in [lo, hi), a function of (seed, i). */
static void fill_row(float *x, int n, float lo, float hi, uint64_t seed)
{
	int i;

	for (i = 0; i < n; i++)
		x[i] = lo + (hi - lo) * (float)(mgpu_hash64(seed, (uint64_t)i) >> 40) *
				    (1.0f / 16777216.0f);
}

/* max |a - b| / max |b| over n elements. */
static double rel_diff(const float *a, const float *b, int n)
{
	double d = 0.0, m = 0.0;
	int i;

	for (i = 0; i < n; i++) {
		d = fabs((double)a[i] - b[i]) > d ? fabs((double)a[i] - b[i]) : d;
		m = fabs((double)b[i]) > m ? fabs((double)b[i]) : m;
	}
	return d / (m > 0.0 ? m : 1.0);
}

/* ops_cuda.cu's warp_sum, lane l adding lane l ^ o's value for o = 16..1:
 * every lane must end with the same bits. */
static float lanes_sum(const float *part)
{
	float v[LANES], t[LANES];
	int o, l;

	memcpy(v, part, sizeof v);
	for (o = LANES / 2; o > 0; o /= 2) {
		for (l = 0; l < LANES; l++)
			t[l] = v[l] + v[l ^ o];
		memcpy(v, t, sizeof v);
	}
	for (l = 1; l < LANES; l++)
		T_CHECK(memcmp(&v[l], &v[0], sizeof v[0]) == 0, "lane %d: %g vs %g", l,
			(double)v[l], (double)v[0]);
	return v[0];
}

/* warp_argmax: every lane must pick the same (max, index). */
static void lanes_argmax(float *mx, int *arg)
{
	float t[LANES];
	int ta[LANES], o, l;

	for (o = LANES / 2; o > 0; o /= 2) {
		memcpy(t, mx, sizeof t);
		memcpy(ta, arg, sizeof ta);
		for (l = 0; l < LANES; l++)
			mgpu_argmax_merge(&mx[l], &arg[l], t[l ^ o], ta[l ^ o]);
	}
	for (l = 1; l < LANES; l++)
		T_CHECK(mx[l] == mx[0] && arg[l] == arg[0], "lane %d: (%g, %d) vs (%g, %d)", l,
			(double)mx[l], arg[l], (double)mx[0], arg[0]);
}

/* LayerNorm rows: the whole-row part is mgpu_ln_row_fwd/_bwd bit for bit;
 * a warp's 32 parts agree within rounding. */
static void test_parts_ln(void)
{
	static float x[PMAX], g[PMAX], b[PMAX], dy[PMAX], y0[PMAX], y1[PMAX], y2[PMAX];
	static float dx0[PMAX], dx1[PMAX], dx2[PMAX];
	float part[LANES], m0, r0, m1, r1, m2, r2, s1, s2, t1[LANES], t2[LANES];
	size_t k, l;
	int D, j;

	for (k = 0; k < NPARTLENS; k++) {
		D = part_lens[k];
		fill_row(x, D, -2.0f, 3.0f, 10 + k);
		fill_row(g, D, 0.5f, 1.5f, 20 + k);
		fill_row(b, D, -0.5f, 0.5f, 30 + k);
		fill_row(dy, D, -1.0f, 1.0f, 40 + k);
		mgpu_ln_row_fwd(x, D, g, b, 1e-5f, y0, &m0, &r0);
		mgpu_ln_row_bwd(dy, x, m0, r0, g, D, dx0);

		m1 = mgpu_ln_mean(mgpu_part_sum(x, 0, D, 1), D);
		r1 = mgpu_ln_rstd(mgpu_part_sqdev(x, m1, 0, D, 1), D, 1e-5f);
		mgpu_ln_bwd_part(dy, x, m1, r1, g, 0, D, 1, &s1, &s2);
		for (j = 0; j < D; j++) {
			y1[j] = mgpu_ln_fwd_elem(x[j], m1, r1, g[j], b[j]);
			dx1[j] = mgpu_ln_bwd_elem(dy[j], x[j], m1, r1, g[j], s1 / (float)D,
						  s2 / (float)D);
		}
		T_CHECK(m1 == m0 && r1 == r0, "D=%d: mean %g/%g rstd %g/%g", D, (double)m1,
			(double)m0, (double)r1, (double)r0);
		T_CHECK(!memcmp(y1, y0, D * sizeof *y0), "D=%d: forward differs", D);
		T_CHECK(!memcmp(dx1, dx0, D * sizeof *dx0), "D=%d: backward differs", D);

		for (l = 0; l < LANES; l++)
			part[l] = mgpu_part_sum(x, l, D, LANES);
		m2 = mgpu_ln_mean(lanes_sum(part), D);
		for (l = 0; l < LANES; l++)
			part[l] = mgpu_part_sqdev(x, m2, l, D, LANES);
		r2 = mgpu_ln_rstd(lanes_sum(part), D, 1e-5f);
		for (l = 0; l < LANES; l++)
			mgpu_ln_bwd_part(dy, x, m2, r2, g, l, D, LANES, &t1[l], &t2[l]);
		s1 = lanes_sum(t1) / (float)D;
		s2 = lanes_sum(t2) / (float)D;
		for (j = 0; j < D; j++) {
			y2[j] = mgpu_ln_fwd_elem(x[j], m2, r2, g[j], b[j]);
			dx2[j] = mgpu_ln_bwd_elem(dy[j], x[j], m2, r2, g[j], s1, s2);
		}
		T_CHECK(rel_diff(y2, y0, D) <= 1e-6, "D=%d: warp forward off by %g", D,
			rel_diff(y2, y0, D));
		T_CHECK(rel_diff(dx2, dx0, D) <= 1e-5, "D=%d: warp backward off by %g", D,
			rel_diff(dx2, dx0, D));
	}
}

/* LayerNorm's column sums and col_sum: rows in one part are
 * mgpu_ln_col_bwd bit for bit (acc 0 and 0.5); CPARTS parts added in order
 * agree within rounding. */
static void test_parts_cols(void)
{
	enum { CD = 3 };
	static float X[PMAX * CD], dY[PMAX * CD], mean[PMAX], rstd[PMAX];
	float dg0[CD], db0[CD], dg1[CD], db1[CD], sg, sb, pg, pb, cs, want;
	size_t k, p;
	int B, j, i;

	for (k = 0; k < NPARTLENS; k++) {
		B = part_lens[k];
		fill_row(X, B * CD, -2.0f, 2.0f, 50 + k);
		fill_row(dY, B * CD, -1.0f, 1.0f, 60 + k);
		fill_row(mean, B, -0.5f, 0.5f, 70 + k);
		fill_row(rstd, B, 0.5f, 2.0f, 80 + k);
		for (j = 0; j < CD; j++) {
			dg0[j] = dg1[j] = 1.5f;
			db0[j] = db1[j] = -0.5f;
			mgpu_ln_col_bwd(dY, X, mean, rstd, B, CD, j, 0.5f, dg0, db0);
			mgpu_ln_col_part(dY, X, mean, rstd, 0, B, 1, CD, j, &sg, &sb);
			mgpu_acc_store(&dg1[j], 0.5f, sg);
			mgpu_acc_store(&db1[j], 0.5f, sb);
			T_CHECK(dg1[j] == dg0[j] && db1[j] == db0[j], "B=%d col %d: %g/%g %g/%g", B,
				j, (double)dg1[j], (double)dg0[j], (double)db1[j], (double)db0[j]);
			dg1[j] = NAN; /* acc 0 must not read it */
			mgpu_acc_store(&dg1[j], 0.0f, sg);
			T_CHECK(dg1[j] == sg, "acc 0 overwrites");

			sg = sb = cs = 0.0f;
			for (p = 0; p < CPARTS; p++) {
				mgpu_ln_col_part(dY, X, mean, rstd, p, B, CPARTS, CD, j, &pg, &pb);
				sg += pg;
				sb += pb;
				cs += mgpu_col_part(dY, p, B, CPARTS, CD, j);
			}
			mgpu_ln_col_bwd(dY, X, mean, rstd, B, CD, j, 0.0f, dg0, db0);
			T_NEAR(sg, dg0[j], 1e-5 * (1.0 + fabs(dg0[j])));
			T_NEAR(sb, db0[j], 1e-5 * (1.0 + fabs(db0[j])));
			want = 0.0f;
			for (i = 0; i < B; i++)
				want += dY[i * CD + j];
			T_CHECK(mgpu_col_part(dY, 0, B, 1, CD, j) == want, "col part of all rows");
			T_NEAR(cs, want, 1e-5 * (1.0 + fabs(want)));
		}
	}
}

/* The fused attention's row statistics in parts, as attn_cuda.cu merges
 * them: lane l of 16 takes j = l, l + 16, ..., its (max, sum of exp(t -
 * max)), and xor shuffles merge them with mgpu_attn_merge. Every lane must
 * end with the same bits, the max exactly the row's and the sum close to
 * the serial one; rows shorter than 16 leave lanes empty (-Inf, 0). */
static void test_parts_merge(void)
{
	enum { TXL = 16 };
	static float s[PMAX];
	const float scale = 0.125f;
	float mx[TXL], sum[TXL], m2[TXL], l2[TXL], smx, ssum, t;
	size_t k, j;
	int o, l, T;

	for (k = 0; k < NPARTLENS; k++) {
		T = part_lens[k];
		fill_row(s, T, -30.0f, 30.0f, 90 + k);
		smx = scale * s[0];
		for (j = 1; j < (size_t)T; j++)
			smx = mgpu_max_merge(smx, scale * s[j]);
		for (ssum = 0.0f, j = 0; j < (size_t)T; j++)
			ssum += mgpu_exp_neg(scale * s[j] - smx);
		for (l = 0; l < TXL; l++) {
			mx[l] = -INFINITY;
			sum[l] = 0.0f;
			for (j = (size_t)l; j < (size_t)T; j += TXL) {
				t = scale * s[j];
				/* one element at a time: the merge of a part of one */
				mgpu_attn_merge(&mx[l], &sum[l], t, 1.0f);
			}
		}
		for (o = 1; o < TXL; o *= 2) {
			memcpy(m2, mx, sizeof mx);
			memcpy(l2, sum, sizeof sum);
			for (l = 0; l < TXL; l++)
				mgpu_attn_merge(&mx[l], &sum[l], m2[l ^ o], l2[l ^ o]);
		}
		for (l = 1; l < TXL; l++)
			T_CHECK(!memcmp(&mx[l], &mx[0], sizeof mx[0]) &&
					!memcmp(&sum[l], &sum[0], sizeof sum[0]),
				"T=%d lane %d: (%g, %g) vs (%g, %g)", T, l, (double)mx[l],
				(double)sum[l], (double)mx[0], (double)sum[0]);
		T_CHECK(mx[0] == smx, "T=%d: max %g vs %g", T, (double)mx[0], (double)smx);
		T_NEAR(sum[0], ssum, 1e-5 * ssum);
		T_NEAR(mgpu_attn_lse(mx[0], sum[0]), smx + log(ssum), 1e-5 * (1 + fabs(smx)));
	}
	/* an empty part changes nothing, whichever side it is on */
	mx[0] = 2.0f;
	sum[0] = 3.0f;
	mgpu_attn_merge(&mx[0], &sum[0], -INFINITY, 0.0f);
	T_CHECK(mx[0] == 2.0f && sum[0] == 3.0f, "empty right");
	mx[1] = -INFINITY;
	sum[1] = 0.0f;
	mgpu_attn_merge(&mx[1], &sum[1], 2.0f, 3.0f);
	T_CHECK(mx[1] == 2.0f && sum[1] == 3.0f, "empty left");
}

/* Cross-entropy rows with ties for the maximum: the first maximum wins in
 * one part and in 32 (a label on a later tie is not "correct"). */
static void test_parts_xent(void)
{
	static float l[PMAX], dl0[PMAX], dl1[PMAX], dl2[PMAX];
	float loss0, corr0, mx, sum, pm[LANES], top;
	int pa[LANES], arg, first, C, j, label, tie;
	size_t k, p;

	for (k = 0; k < NPARTLENS; k++)
		for (tie = 0; tie < 2; tie++) {
			C = part_lens[k];
			fill_row(l, C, -3.0f, 3.0f, 110 + k);
			for (j = 0; tie && j < C; j++)
				l[j] = floorf(l[j]); /* 6 values: the maximum repeats */
			for (top = l[0], first = 0, j = 1; j < C; j++)
				if (l[j] > top) {
					top = l[j];
					first = j;
				}
			for (label = first, j = C - 1; tie && j > first; j--)
				if (l[j] == top) { /* the last tie: not the argmax */
					label = j;
					break;
				}
			mgpu_xent_row(l, C, label, 0.25f, dl0, &loss0, &corr0);
			mgpu_part_argmax(l, 0, C, 1, &mx, &arg);
			sum = mgpu_part_sum_exp(l, 1.0f, mx, 0, C, 1);
			for (j = 0; j < C; j++)
				dl1[j] = mgpu_xent_grad_elem(l[j], mx, sum, j == label, 0.25f);
			T_CHECK(arg == first && mx == top, "C=%d: argmax %d, want %d", C, arg, first);
			T_CHECK(mgpu_xent_loss(mx, sum, l[label]) == loss0, "C=%d: loss", C);
			T_CHECK((arg == label ? 1.0f : 0.0f) == corr0, "C=%d: correct", C);
			T_CHECK(!memcmp(dl1, dl0, C * sizeof *dl0), "C=%d: dlogits differ", C);

			for (p = 0; p < LANES; p++)
				mgpu_part_argmax(l, p, C, LANES, &pm[p], &pa[p]);
			lanes_argmax(pm, pa);
			T_CHECK(pa[0] == first && pm[0] == top, "C=%d tie=%d: warp argmax %d, want %d",
				C, tie, pa[0], first);
			T_CHECK(tie == 0 || C < 31 || label != first, "C=%d: the test has a later tie", C);
			for (p = 0; p < LANES; p++)
				pm[p] = mgpu_part_sum_exp(l, 1.0f, top, p, C, LANES);
			sum = lanes_sum(pm);
			T_NEAR(mgpu_xent_loss(top, sum, l[label]), loss0, 1e-6 * (1.0 + fabs(loss0)));
			for (j = 0; j < C; j++)
				dl2[j] = mgpu_xent_grad_elem(l[j], top, sum, j == label, 0.25f);
			T_CHECK(rel_diff(dl2, dl0, C) <= 1e-6, "C=%d: warp dlogits off by %g", C,
				rel_diff(dl2, dl0, C));
		}
}

int main(void)
{
	T_RUN(test_act_df);
	T_RUN(test_erf_exp);
	T_RUN(test_xent_grad);
	T_RUN(test_ln_grad);
	T_RUN(test_dropout_mask);
	T_RUN(test_sgd);
	T_RUN(test_adamw);
	T_RUN(test_flash_grad);
	T_RUN(test_flash_bf16);
	T_RUN(test_emb_grad);
	T_RUN(test_heads_index);
	T_RUN(test_bf16);
	T_RUN(test_f16);
	T_RUN(test_parts_ln);
	T_RUN(test_parts_cols);
	T_RUN(test_parts_merge);
	T_RUN(test_parts_xent);
	return T_DONE();
}
