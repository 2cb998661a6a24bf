/*
 * elem.h - the element-wise and row-wise math of every backend, written once.
 *
 * Each function is MGPU_HD static inline: __host__ __device__ under nvcc, a
 * plain inline function under a C compiler. The ref/cpu loops and the CUDA
 * kernels call these same functions; only indexing and scheduling differ,
 * so the CPU tests check the arithmetic the GPU runs (nvcc builds with
 * -fmad=false, as the C build does not contract either; logf and tanhf
 * of the CUDA math library may still differ in the last bits, and the
 * backends sum rows in different orders, hence the conformance
 * tolerances). GELU, the softmaxes and attention use mgpu_erf and
 * mgpu_exp_neg below, the same arithmetic on every backend.
 *
 * Row functions take row pointers (row-major (B,D) data, see ops.h).
 */
#ifndef MGPU_OPS_ELEM_H
#define MGPU_OPS_ELEM_H

#include <math.h>   /* logf, tanhf, sqrtf */
#include <stdint.h> /* uint64_t, int32_t */
#include <string.h> /* memcpy */

#include "core/hash.h" /* mgpu_hash64 */
#include "core/hd.h"   /* MGPU_HD */
#include "ops/ops.h" /* enum mgpu_act, hyper-parameter structs */

/*
 * erf(x) as one rational function of x (the float erf of Eigen and
 * TensorFlow): absolute error below 5e-7, relative below 3e-7 near 0. It has
 * no branch and no library call, so a loop of GELUs vectorises; glibc's
 * erff, one call per element, took a fifth of a gpt step on CPU ranks.
 */
MGPU_HD static inline float mgpu_erf(float x)
{
	float x2, p, q;

	x = x < -4.0f ? -4.0f : x; /* |erf| rounds to 1 beyond; NaN passes */
	x = x > 4.0f ? 4.0f : x;
	x2 = x * x;
	p = -2.72614225801306e-10f;
	p = p * x2 + 2.77068142495902e-08f;
	p = p * x2 - 2.10102402082508e-06f;
	p = p * x2 - 5.69250639462346e-05f;
	p = p * x2 - 7.34990630326855e-04f;
	p = p * x2 - 2.95459980854025e-03f;
	p = p * x2 - 1.60960333262415e-02f;
	q = -1.45660718464996e-05f;
	q = q * x2 - 2.13374055278905e-04f;
	q = q * x2 - 1.68282697438203e-03f;
	q = q * x2 - 7.37332916720468e-03f;
	q = q * x2 - 1.42647390514189e-02f;
	return x * p / q;
}

/*
 * exp(x) for x <= 0 (GELU's Gaussian): x = n ln 2 + r with |r| <= ln2 / 2,
 * Cephes's polynomial for e^r, and 2^n put into the exponent bits; relative
 * error below 2e-7, and results under 1.2e-38 (x < -87.3) read 1.22e-38 rather
 * than going subnormal. Branch-free for the same reason as mgpu_erf.
 */
MGPU_HD static inline float mgpu_exp_neg(float x)
{
	float n, r, y;
	int32_t bits;

	x = x < -87.3f ? -87.3f : x;
	x = x > 0.0f ? 0.0f : x;
	/* round to nearest: adding 1.5 * 2^23 drops the fraction bits */
	n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
	r = x - n * 0.693359375f;
	r = r + n * 2.12194440e-4f;
	y = 1.9875691500e-4f;
	y = y * r + 1.3981999507e-3f;
	y = y * r + 8.3334519073e-3f;
	y = y * r + 4.1665795894e-2f;
	y = y * r + 1.6666665459e-1f;
	y = y * r + 5.0000001201e-1f;
	y = y * r * r + r + 1.0f;
	/* NaN x: y is NaN already; converting a NaN n to int would be undefined */
	bits = ((int32_t)(n == n ? n : 0.0f) + 127) * (1 << 23);
	memcpy(&x, &bits, sizeof x); /* x = 2^n */
	return y * x;
}

/* GELU'(z) = Phi(z) + z phi(z). Named temporaries: the same operations, but
 * gcc 12 then vectorises the loop of it twice as fast as the one expression. */
MGPU_HD static inline float mgpu_gelu_df(float z)
{
	float phi_big = 0.5f * (1.0f + mgpu_erf(z * 0.70710678118654752f));
	float gauss = mgpu_exp_neg(-0.5f * z * z);

	return phi_big + z * 0.39894228040143268f * gauss;
}

/* sigmoid(z) from exp(-|z|), so the exponential never overflows. */
MGPU_HD static inline float mgpu_sigmoid(float z)
{
	float e = mgpu_exp_neg(z < 0.0f ? z : -z);

	return z >= 0.0f ? 1.0f / (1.0f + e) : e / (1.0f + e);
}

MGPU_HD static inline float mgpu_act_f(int act, float z)
{
	switch (act) {
	case MGPU_ACT_SILU: return z * mgpu_sigmoid(z);
	case MGPU_ACT_RELU: return z > 0.0f ? z : 0.0f;
	case MGPU_ACT_GELU: return 0.5f * z * (1.0f + mgpu_erf(z * 0.70710678118654752f));
	case MGPU_ACT_TANH: return tanhf(z);
	default: return z;
	}
}

/* d act(z) / dz, evaluated at the pre-activation z. */
MGPU_HD static inline float mgpu_act_df(int act, float z)
{
	float t;
	switch (act) {
	case MGPU_ACT_RELU: return z > 0.0f ? 1.0f : 0.0f;
	case MGPU_ACT_GELU: return mgpu_gelu_df(z);
	case MGPU_ACT_TANH: t = tanhf(z); return 1.0f - t * t;
	case MGPU_ACT_SILU: t = mgpu_sigmoid(z); return t + z * t * (1.0f - t);
	default: return 1.0f;
	}
}

/* The factor dropout multiplies element i by: 0 or 1 / (1 - p). The mask
 * is a pure function of (seed, index) (core/hash.h), identical on CPU and
 * GPU and needing no mask buffer for the backward pass. */
MGPU_HD static inline float mgpu_dropout_factor(uint64_t seed, uint64_t i, float p)
{
	float u = (float)(mgpu_hash64(seed, i) >> 40) * (1.0f / 16777216.0f);
	return u < p ? 0.0f : 1.0f / (1.0f - p);
}

/* Softmax cross-entropy of one row of C logits. dl may be NULL. */
MGPU_HD static inline void mgpu_xent_row(const float *l, int C, int32_t label,
					 float grad_scale, float *dl, float *loss,
					 float *correct)
{
	float mx = l[0], sum = 0.0f;
	int j, arg = 0;

	for (j = 1; j < C; j++)
		if (l[j] > mx) {
			mx = l[j];
			arg = j;
		}
	for (j = 0; j < C; j++)
		sum += mgpu_exp_neg(l[j] - mx);
	*loss = mx + logf(sum) - l[label];
	*correct = arg == label ? 1.0f : 0.0f;
	if (!dl)
		return;
	for (j = 0; j < C; j++)
		dl[j] = (mgpu_exp_neg(l[j] - mx) / sum - (j == label ? 1.0f : 0.0f)) * grad_scale;
}

/* LayerNorm of one row of D features (biased variance, as PyTorch). */
MGPU_HD static inline void mgpu_ln_row_fwd(const float *x, int D, const float *g,
					   const float *b, float eps, float *y,
					   float *mean_out, float *rstd_out)
{
	float mean = 0.0f, var = 0.0f, rstd, d;
	int j;

	for (j = 0; j < D; j++)
		mean += x[j];
	mean /= (float)D;
	for (j = 0; j < D; j++) {
		d = x[j] - mean;
		var += d * d;
	}
	rstd = 1.0f / sqrtf(var / (float)D + eps);
	for (j = 0; j < D; j++)
		y[j] = (x[j] - mean) * rstd * g[j] + b[j];
	*mean_out = mean;
	*rstd_out = rstd;
}

/* dX of one LayerNorm row: rstd * (dxhat - mean(dxhat) - xhat mean(dxhat xhat)). */
MGPU_HD static inline void mgpu_ln_row_bwd(const float *dy, const float *x, float mean,
					   float rstd, const float *g, int D, float *dx)
{
	float s1 = 0.0f, s2 = 0.0f, xhat, dxhat;
	int j;

	for (j = 0; j < D; j++) {
		xhat = (x[j] - mean) * rstd;
		dxhat = dy[j] * g[j];
		s1 += dxhat;
		s2 += dxhat * xhat;
	}
	s1 /= (float)D;
	s2 /= (float)D;
	for (j = 0; j < D; j++) {
		xhat = (x[j] - mean) * rstd;
		dx[j] = rstd * (dy[j] * g[j] - s1 - xhat * s2);
	}
}

/* dgamma[j], dbeta[j] of one LayerNorm column over B rows, plus acc * old.
 * acc == 0 overwrites (old contents, NaNs too, are ignored, as BLAS beta). */
MGPU_HD static inline void mgpu_ln_col_bwd(const float *dY, const float *X,
					   const float *mean, const float *rstd, int B,
					   int D, int j, float acc, float *dg, float *db)
{
	float sg = 0.0f, sb = 0.0f;
	int i;

	for (i = 0; i < B; i++) {
		float dy = dY[(size_t)i * D + j];
		sg += dy * (X[(size_t)i * D + j] - mean[i]) * rstd[i];
		sb += dy;
	}
	dg[j] = acc == 0.0f ? sg : acc * dg[j] + sg;
	db[j] = acc == 0.0f ? sb : acc * db[j] + sb;
}

/* torch.optim.SGD for one parameter (dampening 0). */
MGPU_HD static inline void mgpu_sgd_elem(float *w, float g, float *mom,
					 const struct mgpu_sgd_hp *hp)
{
	float d = g * hp->grad_scale + hp->weight_decay * *w;
	if (hp->momentum != 0.0f) {
		float buf = hp->momentum * *mom + d;
		*mom = buf;
		d = hp->nesterov ? d + hp->momentum * buf : buf;
	}
	*w -= hp->lr * d;
}

/* torch.optim.AdamW for one parameter (decoupled weight decay). */
MGPU_HD static inline void mgpu_adamw_elem(float *w, float g, float *m, float *v,
					   const struct mgpu_adamw_hp *hp)
{
	float gs = g * hp->grad_scale;
	float mm = hp->beta1 * *m + (1.0f - hp->beta1) * gs;
	float vv = hp->beta2 * *v + (1.0f - hp->beta2) * gs * gs;
	float denom = sqrtf(vv) / sqrtf(hp->bias_corr2) + hp->eps;

	*m = mm;
	*v = vv;
	*w = *w * (1.0f - hp->lr * hp->weight_decay) - (hp->lr / hp->bias_corr1) * mm / denom;
}

/* ---- transformer math (the GPT ops of ops.h) ---------------------------- */

#include <string.h> /* memcpy: the bit casts below */

/* The bits of a float and back, without aliasing tricks (memcpy is a
 * builtin on the device too). */
MGPU_HD static inline uint32_t mgpu_f32_bits(float x)
{
	uint32_t u;
	memcpy(&u, &x, sizeof u);
	return u;
}

MGPU_HD static inline float mgpu_f32_from_bits(uint32_t u)
{
	float x;
	memcpy(&x, &u, sizeof x);
	return x;
}

/* float -> bfloat16 (the top 16 bits), rounded to nearest, ties to even.
 * A NaN stays a NaN (made quiet, sign kept) instead of rounding to Inf;
 * values past the largest bf16 round to Inf, as IEEE rounding does. */
MGPU_HD static inline uint16_t mgpu_bf16_from_f32(float x)
{
	uint32_t u = mgpu_f32_bits(x);

	if ((u & 0x7fffffffu) > 0x7f800000u)
		return (uint16_t)((u >> 16) | 0x0040u);
	u += 0x7fffu + ((u >> 16) & 1u);
	return (uint16_t)(u >> 16);
}

/* bfloat16 -> float is exact. */
MGPU_HD static inline float mgpu_bf16_to_f32(uint16_t h)
{
	return mgpu_f32_from_bits((uint32_t)h << 16);
}

/* x rounded to bf16 and widened back (exactly): an operand of a bf16
 * convolution (ops.h's struct mgpu_conv prec). */
MGPU_HD static inline float mgpu_bf16_round(float x)
{
	return mgpu_bf16_to_f32(mgpu_bf16_from_f32(x));
}

/* float -> IEEE binary16 (fp16: 5 exponent bits, 10 mantissa bits),
 * rounded to nearest, ties to even, as a hardware conversion in the
 * default mode does: values from 65520 up become Inf, those below 2^-14
 * become subnormals (multiples of 2^-24), 2^-25 and below round to 0; a
 * NaN stays a NaN (made quiet, sign kept). What --dtype fp16 rounds the
 * inputs of its products to. */
MGPU_HD static inline uint16_t mgpu_f16_from_f32(float x)
{
	uint32_t u = mgpu_f32_bits(x), a = u & 0x7fffffffu, r, m, q, rem, tie;
	uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
	int shift;

	if (a > 0x7f800000u)
		return (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
	if (a >= 0x477ff000u) /* 65520 and up (Inf too) */
		return (uint16_t)(sign | 0x7c00u);
	if (a >= 0x38800000u) { /* a normal fp16: drop 13 bits, to even */
		r = a + 0xfffu + ((a >> 13) & 1u) - 0x38000000u; /* rebias 127 -> 15 */
		return (uint16_t)(sign | (r >> 13));
	}
	if (a <= 0x33000000u) /* 2^-25 (a tie with 0, which is even) and below */
		return sign;
	/* a subnormal: the value in units of 2^-24, rounded to even */
	m = (a & 0x7fffffu) | 0x800000u;
	shift = 126 - (int)(a >> 23);
	q = m >> shift;
	rem = m & ((1u << shift) - 1u);
	tie = 1u << (shift - 1);
	if (rem > tie || (rem == tie && (q & 1u)))
		q++;
	return (uint16_t)(sign | q);
}

/* fp16 -> float is exact. */
MGPU_HD static inline float mgpu_f16_to_f32(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
	float v;

	if (e == 0x1f)
		return mgpu_f32_from_bits(sign | 0x7f800000u | (m << 13));
	if (e)
		return mgpu_f32_from_bits(sign | ((e + 112u) << 23) | (m << 13));
	v = (float)m * 5.9604644775390625e-08f; /* m * 2^-24, exact */
	return sign ? -v : v;
}

/* ---- fused attention (attn_fwd, attn_bwd of ops.h) -----------------------
 *
 * What every backend computes per element; only the order of the sums
 * (and whether a score is a BLAS or a kernel dot product) differs. */

/* An operand of attention's products: rounded to bf16 (and widened back,
 * exactly) under bf16, as --dtype bf16's GEMMs round theirs; else as is.
 * A product of two bf16 values is exact in fp32, so fp32 accumulation of
 * these is "bf16 inputs, fp32 accumulation" on any hardware. */
MGPU_HD static inline float mgpu_attn_in(float x, int bf16)
{
	return bf16 ? mgpu_bf16_to_f32(mgpu_bf16_from_f32(x)) : x;
}

/* A row's log-sum-exp from its max and its sum of exp(t - max). */
MGPU_HD static inline float mgpu_attn_lse(float mx, float sum)
{
	return mx + logf(sum);
}

/* The backward's probability of score s, recomputed from the row's lse
 * (scale s - lse <= 0 up to rounding, which mgpu_exp_neg clamps). */
MGPU_HD static inline float mgpu_attn_p(float s, float scale, float lse)
{
	return mgpu_exp_neg(scale * s - lse);
}

/* ds = scale p (dp - D), D = dy . y of the row (flash attention's form of
 * sum over the row of p dp). */
MGPU_HD static inline float mgpu_attn_ds(float p, float dp, float D, float scale)
{
	return scale * p * (dp - D);
}

/* Online softmax: (mx, sum) of one part of a row merged with (mx2, sum2)
 * of another, sum meaning sum exp(t - mx). An empty part is (-Inf, 0) and
 * leaves the other as it is (-Inf - -Inf would be NaN). The result does
 * not depend on which part is which: both orders give the same bits, so
 * lanes that merge each other's parts agree. */
MGPU_HD static inline void mgpu_attn_merge(float *mx, float *sum, float mx2, float sum2)
{
	float m;

	if (mx2 == -INFINITY)
		return;
	if (*mx == -INFINITY) {
		*mx = mx2;
		*sum = sum2;
		return;
	}
	m = *mx > mx2 ? *mx : mx2;
	*sum = *sum * mgpu_exp_neg(*mx - m) + sum2 * mgpu_exp_neg(mx2 - m);
	*mx = m;
}

/* The row passes of attention's GEMM form (attn_gemm.c, attn_gemm.cu):
 * element j of row i, 0 above the diagonal (the keys row i never sees), so
 * the full (T,T) products that follow add nothing there. Forward: the
 * definition's p from the row's max and sum of exponentials. Backward: p
 * recomputed from the saved lse and ds = scale p (dp - D). */
MGPU_HD static inline float mgpu_attn_causal_p(float s, float scale, float mx, float sum,
					       int i, int j)
{
	return j > i ? 0.0f : mgpu_exp_neg(scale * s - mx) / sum;
}

MGPU_HD static inline void mgpu_attn_causal_pds(float s, float dp, float lse, float D,
						float scale, int i, int j, float *p, float *ds)
{
	if (j > i) {
		*p = *ds = 0.0f;
		return;
	}
	*p = mgpu_attn_p(s, scale, lse);
	*ds = mgpu_attn_ds(*p, dp, D, scale);
}

/* Element idx of the embedding output Y (B*T rows, D columns): the token's
 * row of wte plus the position's row of wpe. ids (B*T) are in [0, V). */
MGPU_HD static inline float mgpu_emb_elem(const int32_t *ids, const float *wte,
					  const float *wpe, int T, int D, size_t idx)
{
	size_t row = idx / (size_t)D;
	size_t c = idx % (size_t)D, t = row % (size_t)T;

	return wte[(size_t)ids[row] * (size_t)D + c] + wpe[t * (size_t)D + c];
}

/* dwte[v][c] = acc * old + the sum of dY[row][c] over the N rows whose id is
 * v, in row order: a gather, so a GPU thread per (v, c) needs no atomics
 * and adds in the same order every run. acc == 0 ignores the old value. */
MGPU_HD static inline void mgpu_emb_tok_col(const float *dY, const int32_t *ids, size_t N,
					    int D, int v, int c, float acc, float *dwte)
{
	float s = 0.0f;
	size_t row, at = (size_t)v * (size_t)D + (size_t)c;

	for (row = 0; row < N; row++)
		if (ids[row] == v)
			s += dY[row * (size_t)D + (size_t)c];
	dwte[at] = acc == 0.0f ? s : acc * dwte[at] + s;
}

/* dwpe[t][c] = acc * old + the sum over the B sequences of dY[b*T + t][c]. */
MGPU_HD static inline void mgpu_emb_pos_col(const float *dY, int B, int T, int D, int t,
					    int c, float acc, float *dwpe)
{
	float s = 0.0f;
	size_t at = (size_t)t * (size_t)D + (size_t)c;
	int b;

	for (b = 0; b < B; b++)
		s += dY[((size_t)b * (size_t)T + (size_t)t) * (size_t)D + (size_t)c];
	dwpe[at] = acc == 0.0f ? s : acc * dwpe[at] + s;
}

/* Heads: element idx of the (B*H, T, Dh) per-head layout lives at this
 * index of the (B, T, H*Dh) layout whose rows are ld floats apart (ld >=
 * H*Dh, so q, k and v can be read straight out of one (B, T, 3*H*Dh)). */
MGPU_HD static inline size_t mgpu_heads_index(size_t idx, int T, int H, int Dh, int ld)
{
	size_t d = idx % (size_t)Dh, r = idx / (size_t)Dh;
	size_t t = r % (size_t)T, bh = r / (size_t)T;
	size_t h = bh % (size_t)H, b = bh / (size_t)H;

	return (b * (size_t)T + t) * (size_t)ld + h * (size_t)Dh + d;
}

/* ---- a row in parts: what one GPU lane computes -------------------------
 *
 * The row functions above walk a row serially. The CUDA kernels give a row
 * to a warp instead: lane l takes the part j = l, l + 32, l + 64, ... of
 * the row, reduces it with a *_part function below, and the 32 partial
 * results are combined across the warp (a sum by sums, a max by
 * mgpu_max_merge, an argmax by mgpu_argmax_merge); then each lane writes
 * its part with the per-element function. A part is (j0, n, step): the
 * indices j0, j0 + step, ... below n. The part (0, n, 1) is the whole row,
 * and then these functions compute exactly what the row functions above
 * compute, bit for bit (test_elem checks it), so the formulas agree; only
 * the order of a warp's sums differs, by rounding.
 */

/* sum of x[j] over the part. */
MGPU_HD static inline float mgpu_part_sum(const float *x, size_t j0, size_t n, size_t step)
{
	float s = 0.0f;
	size_t j;

	for (j = j0; j < n; j += step)
		s += x[j];
	return s;
}

/* sum of (x[j] - mean)^2 over the part: LayerNorm's variance numerator. */
MGPU_HD static inline float mgpu_part_sqdev(const float *x, float mean, size_t j0, size_t n,
					    size_t step)
{
	float s = 0.0f, d;
	size_t j;

	for (j = j0; j < n; j += step) {
		d = x[j] - mean;
		s += d * d;
	}
	return s;
}

/* The larger of two partial maxima (the serial rows' comparison). */
MGPU_HD static inline float mgpu_max_merge(float mx, float t)
{
	return t > mx ? t : mx;
}

/* sum of exp(scale * x[j] - mx) over the part: a softmax's denominator. */
MGPU_HD static inline float mgpu_part_sum_exp(const float *x, float scale, float mx, size_t j0,
					      size_t n, size_t step)
{
	float s = 0.0f;
	size_t j;

	for (j = j0; j < n; j += step)
		s += mgpu_exp_neg(scale * x[j] - mx);
	return s;
}

/* (mx, arg) becomes (t, at) when t is larger, or equal at a smaller index:
 * the first maximum of a row wins, as in mgpu_xent_row, whatever order the
 * parts are merged in. */
MGPU_HD static inline void mgpu_argmax_merge(float *mx, int *arg, float t, int at)
{
	if (t > *mx || (t == *mx && at < *arg)) {
		*mx = t;
		*arg = at;
	}
}

/* The first maximum of x over the part; an empty part gives (-Inf, n),
 * which loses every merge with a real element (n is past the row). */
MGPU_HD static inline void mgpu_part_argmax(const float *x, size_t j0, size_t n, size_t step,
					    float *mx, int *arg)
{
	size_t j;

	*mx = -INFINITY;
	*arg = (int)n;
	for (j = j0; j < n; j += step)
		mgpu_argmax_merge(mx, arg, x[j], (int)j);
}

/* LayerNorm backward's two row sums over the part: s1 of dxhat, s2 of
 * dxhat * xhat, with dxhat = dy * g and xhat = (x - mean) * rstd. */
MGPU_HD static inline void mgpu_ln_bwd_part(const float *dy, const float *x, float mean,
					    float rstd, const float *g, size_t j0, size_t n,
					    size_t step, float *s1, float *s2)
{
	float a = 0.0f, b = 0.0f, xhat, dxhat;
	size_t j;

	for (j = j0; j < n; j += step) {
		xhat = (x[j] - mean) * rstd;
		dxhat = dy[j] * g[j];
		a += dxhat;
		b += dxhat * xhat;
	}
	*s1 = a;
	*s2 = b;
}

/* LayerNorm backward's column sums over the rows i0, i0 + step, ... < B
 * of column j: sg of dy * xhat (dgamma), sb of dy (dbeta). */
MGPU_HD static inline void mgpu_ln_col_part(const float *dY, const float *X, const float *mean,
					    const float *rstd, size_t i0, size_t B, size_t step,
					    size_t D, size_t j, float *sg, float *sb)
{
	float a = 0.0f, b = 0.0f, dy;
	size_t i;

	for (i = i0; i < B; i += step) {
		dy = dY[i * D + j];
		a += dy * (X[i * D + j] - mean[i]) * rstd[i];
		b += dy;
	}
	*sg = a;
	*sb = b;
}

/* sum of column j of Y (rows D floats apart) over rows i0, i0 + step, ... < B. */
MGPU_HD static inline float mgpu_col_part(const float *Y, size_t i0, size_t B, size_t step,
					  size_t D, size_t j)
{
	float s = 0.0f;
	size_t i;

	for (i = i0; i < B; i += step)
		s += Y[i * D + j];
	return s;
}

/* *dst = acc * *dst + s, or s when acc == 0 (the old value, NaN or never
 * written, is then not read): how the gradient sums land. */
MGPU_HD static inline void mgpu_acc_store(float *dst, float acc, float s)
{
	*dst = acc == 0.0f ? s : acc * *dst + s;
}

/* LayerNorm's row statistics from the row's sum and squared deviations. */
MGPU_HD static inline float mgpu_ln_mean(float sum, int D)
{
	return sum / (float)D;
}

MGPU_HD static inline float mgpu_ln_rstd(float sqdev, int D, float eps)
{
	return 1.0f / sqrtf(sqdev / (float)D + eps);
}

/* One element of LayerNorm forward. */
MGPU_HD static inline float mgpu_ln_fwd_elem(float x, float mean, float rstd, float g, float b)
{
	return (x - mean) * rstd * g + b;
}

/* One element of LayerNorm's dX; s1, s2 are mgpu_ln_bwd_part's sums over
 * the whole row, divided by D. */
MGPU_HD static inline float mgpu_ln_bwd_elem(float dy, float x, float mean, float rstd, float g,
					     float s1, float s2)
{
	float xhat = (x - mean) * rstd;

	return rstd * (dy * g - s1 - xhat * s2);
}

/* One element of a softmax of scale * x, given the row's max and sum. */
MGPU_HD static inline float mgpu_softmax_elem(float x, float scale, float mx, float sum)
{
	return mgpu_exp_neg(scale * x - mx) / sum;
}

/* Cross-entropy of a row from its max, its sum of exp(l - max) and the
 * label's logit. */
MGPU_HD static inline float mgpu_xent_loss(float mx, float sum, float l_label)
{
	return mx + logf(sum) - l_label;
}

/* One element of dlogits: (softmax - onehot) * grad_scale. */
MGPU_HD static inline float mgpu_xent_grad_elem(float l, float mx, float sum, int is_label,
						float grad_scale)
{
	return (mgpu_exp_neg(l - mx) / sum - (is_label ? 1.0f : 0.0f)) * grad_scale;
}

/* Squared error (ops.h's mse): one element's term, and its gradient
 * 2 (p - t) scale, scale being w grad_scale / (G M) for the element's
 * (row, group). */
MGPU_HD static inline double mgpu_mse_term(float p, float t)
{
	double d = (double)p - (double)t;

	return d * d;
}

MGPU_HD static inline float mgpu_mse_grad(float p, float t, float scale)
{
	return 2.0f * (p - t) * scale;
}

/*
 * Softmax cross-entropy of one pixel (ops.h's pix_xent): its C logits are
 * l[0], l[stride], ..., l[(C-1) stride] (a channel plane apart in NCHW).
 * label < 0 is an ignored pixel: loss, correct and gradient 0. Otherwise
 * loss = lscale (log sum exp - l[label]), correct = argmax == label (the
 * first maximum, as xent), dl (may be NULL, may be l itself: every logit
 * is read before its gradient is written) = gscale (softmax - onehot).
 */
MGPU_HD static inline void mgpu_pix_xent(const float *l, size_t stride, int C, int32_t label,
					 float lscale, float gscale, float *dl, float *loss,
					 float *correct)
{
	float mx = l[0], sum = 0.0f;
	int c, arg = 0;

	if (label < 0) {
		*loss = 0.0f;
		*correct = 0.0f;
		for (c = 0; dl && c < C; c++)
			dl[(size_t)c * stride] = 0.0f;
		return;
	}
	for (c = 1; c < C; c++)
		if (l[(size_t)c * stride] > mx) {
			mx = l[(size_t)c * stride];
			arg = c;
		}
	for (c = 0; c < C; c++)
		sum += mgpu_exp_neg(l[(size_t)c * stride] - mx);
	*loss = mgpu_xent_loss(mx, sum, l[(size_t)label * stride]) * lscale;
	*correct = arg == label ? 1.0f : 0.0f;
	for (c = 0; dl && c < C; c++)
		dl[(size_t)c * stride] = mgpu_xent_grad_elem(l[(size_t)c * stride], mx, sum,
							     c == label, gscale);
}

/*
 * The deterministic sum of sum_acc: n floats, each widened to double (and
 * squared, for a squared norm), added in an order a GPU runs in parallel
 * and a CPU loop repeats exactly:
 * - chunks of MGPU_SUM_CHUNK consecutive elements (one GPU block each);
 * - in a chunk, lane j of MGPU_SUM_LANES sums elements j, j + LANES,
 *   j + 2 LANES, ... in that order, starting from 0 (one thread each);
 * - the lanes fold pairwise: lane j += lane j + s for s = LANES/2, ..., 1;
 * - the chunks' totals add in chunk order, from 0.
 * Double addition is exact IEEE on every backend (nvcc -fmad=false keeps
 * the square and the add apart), so all agree bit for bit.
 */
#define MGPU_SUM_LANES 256
#define MGPU_SUM_CHUNK ((size_t)65536)

MGPU_HD static inline double mgpu_sum_term(float x, int squares)
{
	double d = (double)x;

	return squares ? d * d : d;
}

/* Lane `lane` of the chunk x[0..n), n <= MGPU_SUM_CHUNK. */
MGPU_HD static inline double mgpu_sum_lane(const float *x, size_t n, int lane, int squares)
{
	double s = 0.0;
	size_t i;

	for (i = (size_t)lane; i < n; i += MGPU_SUM_LANES)
		s += mgpu_sum_term(x[i], squares);
	return s;
}

/* One level of the fold: lane[j] += lane[j + s] for j < s. */
MGPU_HD static inline void mgpu_sum_fold_level(double *lane, int s)
{
	int j;

	for (j = 0; j < s; j++)
		lane[j] += lane[j + s];
}

/* The total of the chunk x[0..n) in the order above (host loops). */
static inline double mgpu_sum_chunk(const float *x, size_t n, int squares)
{
	double lane[MGPU_SUM_LANES];
	int j, s;

	for (j = 0; j < MGPU_SUM_LANES; j++)
		lane[j] = mgpu_sum_lane(x, n, j, squares);
	for (s = MGPU_SUM_LANES / 2; s > 0; s /= 2)
		mgpu_sum_fold_level(lane, s);
	return lane[0];
}

/* ---- convolutional networks: the index arithmetic of im2col, col2im,
 * pooling and upsampling, and the per-element math of BatchNorm and
 * GroupNorm (ops.h states each op). Planes are row-major (H, W). ---- */

/* Entry (r, q) of one sample's im2col columns (ops.h): row r = (c KH + kh)
 * KW + kw, column q = oh OW + ow; 0 in the padding. */
MGPU_HD static inline float mgpu_im2col_elem(const float *x, const struct mgpu_conv *g, int OW,
					     size_t r, size_t q)
{
	int kw = (int)(r % (size_t)g->KW), kh = (int)(r / (size_t)g->KW % (size_t)g->KH);
	int c = (int)(r / ((size_t)g->KW * (size_t)g->KH));
	int oh = (int)(q / (size_t)OW), ow = (int)(q % (size_t)OW);
	int ih = oh * g->sh - g->ph + kh * g->dh, iw = ow * g->sw - g->pw + kw * g->dw;

	if (ih < 0 || ih >= g->H || iw < 0 || iw >= g->W)
		return 0.0f;
	return x[((size_t)c * g->H + ih) * g->W + iw];
}

/* Pixel (c, ih, iw) of col2im: the sum of the column entries that read it,
 * in (kh, kw) order. (oh, ow) reads it at (kh, kw) when
 * ih = oh sh - ph + kh dh, i.e. when ih + ph - kh dh is a multiple of sh. */
MGPU_HD static inline float mgpu_col2im_elem(const float *col, const struct mgpu_conv *g, int OH,
					     int OW, int c, int ih, int iw)
{
	size_t P = (size_t)OH * OW;
	float s = 0.0f;
	int kh, kw, t, u;

	for (kh = 0; kh < g->KH; kh++) {
		t = ih + g->ph - kh * g->dh;
		if (t < 0 || t % g->sh != 0 || t / g->sh >= OH)
			continue;
		for (kw = 0; kw < g->KW; kw++) {
			u = iw + g->pw - kw * g->dw;
			if (u < 0 || u % g->sw != 0 || u / g->sw >= OW)
				continue;
			s += col[(((size_t)c * g->KH + kh) * g->KW + kw) * P +
				 (size_t)(t / g->sh) * OW + u / g->sw];
		}
	}
	return s;
}

/* Output (oh, ow) of pooling one plane x (H, W): the max (NaN wins, as in
 * torch; *arg = the flat index h W + w of the first largest, in (kh, kw)
 * order) or the mean of its window. */
MGPU_HD static inline float mgpu_pool_elem(const float *x, const struct mgpu_pool2d *g, int oh,
					   int ow, int *arg)
{
	int h0 = oh * g->sh - g->ph, w0 = ow * g->sw - g->pw;
	int hs = h0 > 0 ? h0 : 0, ws = w0 > 0 ? w0 : 0;
	int he = h0 + g->KH < g->H ? h0 + g->KH : g->H, we = w0 + g->KW < g->W ? w0 + g->KW : g->W;
	float best, v, sum = 0.0f;
	int h, w, a;

	if (g->mode == MGPU_POOL_MAX) {
		a = hs * g->W + ws;
		best = x[a];
		for (h = hs; h < he; h++)
			for (w = ws; w < we; w++) {
				v = x[h * g->W + w];
				if (v > best || (v != v && best == best)) {
					best = v;
					a = h * g->W + w;
				}
			}
		*arg = a;
		return best;
	}
	for (h = hs; h < he; h++)
		for (w = ws; w < we; w++)
			sum += x[h * g->W + w];
	*arg = -1;
	return sum / (float)(g->mode == MGPU_POOL_AVG ? g->KH * g->KW : (he - hs) * (we - ws));
}

/* Pixel (h, w) of pool_bwd for one plane: dy (OH, OW) gathered from every
 * window that holds it, in (oh, ow) order; max windows recompute their
 * winner from x. */
MGPU_HD static inline float mgpu_pool_bwd_elem(const float *x, const float *dy,
					       const struct mgpu_pool2d *g, int OH, int OW,
					       int h, int w)
{
	int oh0 = h + g->ph - g->KH + 1, ow0 = w + g->pw - g->KW + 1;
	int oh1 = (h + g->ph) / g->sh, ow1 = (w + g->pw) / g->sw;
	int oh, ow, arg, h0, w0;
	float s = 0.0f, div;

	oh0 = oh0 > 0 ? (oh0 + g->sh - 1) / g->sh : 0;
	ow0 = ow0 > 0 ? (ow0 + g->sw - 1) / g->sw : 0;
	oh1 = oh1 < OH - 1 ? oh1 : OH - 1;
	ow1 = ow1 < OW - 1 ? ow1 : OW - 1;
	for (oh = oh0; oh <= oh1; oh++)
		for (ow = ow0; ow <= ow1; ow++) {
			if (g->mode == MGPU_POOL_MAX) {
				(void)mgpu_pool_elem(x, g, oh, ow, &arg);
				if (arg == h * g->W + w)
					s += dy[oh * OW + ow];
				continue;
			}
			h0 = oh * g->sh - g->ph;
			w0 = ow * g->sw - g->pw;
			div = (float)(g->KH * g->KW);
			if (g->mode == MGPU_POOL_AVG_EXCL)
				div = (float)(((h0 + g->KH < g->H ? h0 + g->KH : g->H) -
					       (h0 > 0 ? h0 : 0)) *
					      ((w0 + g->KW < g->W ? w0 + g->KW : g->W) -
					       (w0 > 0 ? w0 : 0)));
			s += dy[oh * OW + ow] / div;
		}
	return s;
}

/* Pixel (h, w) of upsample_bwd for one plane: the sum of dy (H sh, W sw)'s
 * block (h, w), rows then columns. */
MGPU_HD static inline float mgpu_upsample_bwd_elem(const float *dy, int W, int sh, int sw, int h,
						   int w)
{
	size_t OW = (size_t)W * sw;
	float s = 0.0f;
	int i, j;

	for (i = 0; i < sh; i++)
		for (j = 0; j < sw; j++)
			s += dy[((size_t)h * sh + i) * OW + (size_t)w * sw + j];
	return s;
}

/* BatchNorm's batch moments from the (all-reduced) sums of x - shift:
 * in double, since s2 / count - m^2 cancels. */
MGPU_HD static inline void mgpu_bn_moments(float s1, float s2, double count, float shift,
					   float eps, float *mean, float *var, float *rstd)
{
	double m = (double)s1 / count, v = (double)s2 / count - m * m;

	v = v > 0.0 ? v : 0.0;
	*mean = (float)((double)shift + m);
	*var = (float)v;
	*rstd = (float)(1.0 / sqrt(v + (double)eps));
}

/* One running statistic: (1 - momentum) run + momentum batch, as torch. */
MGPU_HD static inline float mgpu_bn_running(float run, float batch, float momentum)
{
	return (1.0f - momentum) * run + momentum * batch;
}

/* One element of BatchNorm's dx; mdy = sum(dy) / count and mdyx =
 * sum(dy xhat) / count (train), unused in eval. */
MGPU_HD static inline float mgpu_bn_bwd_elem(float dy, float x, float mean, float rstd, float g,
					     float mdy, float mdyx, int train)
{
	float xhat = (x - mean) * rstd;

	return train ? g * rstd * (dy - mdy - xhat * mdyx) : g * rstd * dy;
}

/* One element of GroupNorm's dx; a = sum(dy gamma) / M, b = sum(dy gamma
 * xhat) / M over the element's group of M values. */
MGPU_HD static inline float mgpu_gn_bwd_elem(float dy, float x, float mean, float rstd, float g,
					     float a, float b)
{
	float xhat = (x - mean) * rstd;

	return rstd * (dy * g - a - xhat * b);
}

#endif
