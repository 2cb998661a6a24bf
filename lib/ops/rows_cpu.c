/*
 * rows_cpu.c - the cpu backend's row ops: LayerNorm rows, softmax
 * cross-entropy and the rows of the fused attention's tiles (see ops.h).
 *
 * elem.h's row functions sum a row serially: each add waits for the one
 * before (4 cycles), and gcc cannot vectorise a float sum without
 * reassociating it, which it must not do. Here every row is summed in
 * MGPU_CPU_W interleaved partial sums (lane k takes elements k, k + W, ...)
 * held in one vector, added up in lane order at the end: the same
 * arithmetic in another, fixed order, so results differ from ref's in the
 * last bits (the conformance tolerances) and are the same on every run.
 * Maxima are exact in any order. Exponentials are elem.h's mgpu_exp_neg,
 * as on every backend, so a row of them vectorises too. Each row function
 * is MGPU_CPU_WIDE (ops_cpu.h), its helpers inlined into both clones.
 *
 * NaN: a row with a NaN comes out as NaN wherever ref's does (the maxima
 * start from element 0, as ref's, so a NaN there is kept; a NaN anywhere
 * else reaches the sums).
 */
#include "ops/ops.h"

#include <math.h>   /* logf, sqrtf */
#include <stddef.h> /* size_t */
#include <stdint.h> /* int32_t */
#include <string.h> /* memcpy */

#include "core/err.h"    /* MGPU_TRY */
#include "ops/elem.h"    /* mgpu_exp_neg */
#include "ops/loops.h"   /* ops_check_* */
#include "ops/ops_cpu.h" /* MGPU_CPU_W, MGPU_CPU_WIDE */

#define W MGPU_CPU_W

/* W floats, one AVX register (two SSE ones in the baseline clone): gcc's
 * vector extension states the lanes outright, where gcc's own outer-loop
 * vectorisation of W-wide blocks shuffled them through the stack. */
typedef float vw __attribute__((vector_size(W * sizeof(float))));
typedef int32_t vwi __attribute__((vector_size(W * sizeof(float))));

static inline vw load(const float *p)
{
	vw v;

	memcpy(&v, p, sizeof v);
	return v;
}

static inline vw splat(float x)
{
	return (vw){ 0 } + x;
}

/* The lanes added in order. */
static inline float lanes_sum(vw s)
{
	float t = 0.0f;
	int k;

	for (k = 0; k < W; k++)
		t += s[k];
	return t;
}

/* sum x[j] over j < n. */
static inline float row_sum(const float *x, int n)
{
	vw s = { 0 };
	float t;
	int j = 0;

	for (; j + W <= n; j += W)
		s += load(x + j);
	t = lanes_sum(s);
	for (; j < n; j++)
		t += x[j];
	return t;
}

/* sum (x[j] - c)^2 over j < n. */
static inline float row_sq_dev(const float *x, int n, float c)
{
	vw s = { 0 }, d, cv = splat(c);
	float t, e;
	int j = 0;

	for (; j + W <= n; j += W) {
		d = load(x + j) - cv;
		s += d * d;
	}
	t = lanes_sum(s);
	for (; j < n; j++) {
		e = x[j] - c;
		t += e * e;
	}
	return t;
}

/* max of scale * x[j] over j < n (n >= 1), starting from element 0. */
static inline float row_max(const float *x, int n, float scale)
{
	float t, r = scale * x[0];
	vw m = splat(r), v, sv = splat(scale);
	vwi gt;
	int j = 1, k;

	for (; j + W <= n; j += W) {
		v = load(x + j) * sv;
		gt = v > m;
		m = (vw)((gt & (vwi)v) | (~gt & (vwi)m));
	}
	for (k = 0; k < W; k++)
		r = m[k] > r ? m[k] : r;
	for (; j < n; j++) {
		t = scale * x[j];
		r = t > r ? t : r;
	}
	return r;
}

/* W exponentials exp(scale * x[k] - mx). */
static inline vw exp_block(const float *x, float scale, float mx)
{
	float t[W];
	int k;

	for (k = 0; k < W; k++)
		t[k] = mgpu_exp_neg(scale * x[k] - mx);
	return load(t);
}

/* e[j] = exp(scale * x[j] - mx) for j < n; returns their sum. e may equal
 * x (a block is read before it is written). */
static inline float row_exp(float *e, const float *x, int n, float scale, float mx)
{
	vw s = { 0 }, t;
	float r;
	int j = 0;

	for (; j + W <= n; j += W) {
		t = exp_block(x + j, scale, mx);
		memcpy(e + j, &t, sizeof t);
		s += t;
	}
	r = lanes_sum(s);
	for (; j < n; j++) {
		e[j] = mgpu_exp_neg(scale * x[j] - mx);
		r += e[j];
	}
	return r;
}

/* sum of exp(scale * x[j] - mx) over j < n, nothing stored. */
static inline float row_exp_sum(const float *x, int n, float scale, float mx)
{
	vw s = { 0 };
	float r;
	int j = 0;

	for (; j + W <= n; j += W)
		s += exp_block(x + j, scale, mx);
	r = lanes_sum(s);
	for (; j < n; j++)
		r += mgpu_exp_neg(scale * x[j] - mx);
	return r;
}

/* ---- LayerNorm ---------------------------------------------------------- */

MGPU_CPU_WIDE static void ln_fwd_row(const float *restrict x, int D, const float *restrict g,
		       const float *restrict b, float eps, float *restrict y, float *mean_out,
		       float *rstd_out)
{
	float mean = row_sum(x, D) / (float)D;
	float rstd = 1.0f / sqrtf(row_sq_dev(x, D, mean) / (float)D + eps);
	int j;

	for (j = 0; j < D; j++)
		y[j] = (x[j] - mean) * rstd * g[j] + b[j];
	*mean_out = mean;
	*rstd_out = rstd;
}

int mgpu_cpu_ln_fwd(struct mgpu_dev *dev, float *Y, float *mean, float *rstd, const float *X,
		    const float *gamma, const float *beta, int B, int D, float eps)
{
	size_t off;
	int i;

	(void)dev;
	MGPU_TRY(ops_check_rows("ln_fwd", B, D));
	for (i = 0; i < B && D > 0; i++) {
		off = (size_t)i * (size_t)D;
		ln_fwd_row(X + off, D, gamma, beta, eps, Y + off, &mean[i], &rstd[i]);
	}
	return 0;
}

/* elem.h's mgpu_ln_row_bwd with its two sums in lanes. */
MGPU_CPU_WIDE void mgpu_cpu_ln_bwd_row(const float *restrict dy, const float *restrict x,
					float mean, float rstd, const float *restrict g, int D,
					float *restrict dx)
{
	vw s1 = { 0 }, s2 = { 0 }, xh, dxh, mv = splat(mean), rv = splat(rstd);
	float a, c, xhat, dxhat;
	int j = 0;

	for (; j + W <= D; j += W) {
		xh = (load(x + j) - mv) * rv;
		dxh = load(dy + j) * load(g + j);
		s1 += dxh;
		s2 += dxh * xh;
	}
	a = lanes_sum(s1);
	c = lanes_sum(s2);
	for (; j < D; j++) {
		xhat = (x[j] - mean) * rstd;
		dxhat = dy[j] * g[j];
		a += dxhat;
		c += dxhat * xhat;
	}
	a /= (float)D;
	c /= (float)D;
	for (j = 0; j < D; j++) {
		xhat = (x[j] - mean) * rstd;
		dx[j] = rstd * (dy[j] * g[j] - a - xhat * c);
	}
}

/* ---- softmax cross-entropy ------------------------------------------------ */

/* The first j with l[j] == mx, 0 when none (a NaN maximum), as ref's
 * strict-greater scan picks. */
static int first_of(const float *l, int C, float mx)
{
	int j;

	for (j = 0; j < C; j++)
		if (l[j] == mx)
			return j;
	return 0;
}

/* dl[j] = (dl[j] / sum - [j == label]) * gs, dl holding the exponentials. */
static inline void xent_grad(float *restrict dl, int C, int32_t label, float sum, float gs)
{
	int j;

	for (j = 0; j < C; j++)
		dl[j] = (dl[j] / sum - (j == label ? 1.0f : 0.0f)) * gs;
}

MGPU_CPU_WIDE static void xent_row(const float *l, int C, int32_t label, float gs, float *dl, float *loss,
		     float *correct)
{
	float mx = row_max(l, C, 1.0f), ll = l[label], sum;
	/* what reads l comes before row_exp, which may write over it (dl == l) */
	int arg = first_of(l, C, mx);

	sum = dl ? row_exp(dl, l, C, 1.0f, mx) : row_exp_sum(l, C, 1.0f, mx);
	*loss = mx + logf(sum) - ll;
	*correct = arg == label ? 1.0f : 0.0f;
	if (dl)
		xent_grad(dl, C, label, sum, gs);
}

int mgpu_cpu_xent(struct mgpu_dev *dev, float *dlogits, float *row_loss, float *row_correct,
		  const float *logits, const int32_t *labels, int B, int C, int ld,
		  float grad_scale)
{
	size_t off;
	int i;

	(void)dev;
	MGPU_TRY(ops_check_xent(B, C, ld));
	MGPU_TRY(ops_check_labels(labels, B, C));
	for (i = 0; i < B; i++) {
		off = (size_t)i * (size_t)ld;
		xent_row(logits + off, C, labels[i], grad_scale, dlogits ? dlogits + off : NULL,
			 &row_loss[i], &row_correct[i]);
	}
	return 0;
}

/* ---- fused attention's rows (attn_cpu.c's tiles) ------------------------- */

/* x[j] = r(x[j]) for j < n: rounded to bf16 and widened back. */
static inline void round_row(float *x, int n)
{
	int j;

	for (j = 0; j < n; j++)
		x[j] = mgpu_attn_in(x[j], 1);
}

/* One row of scores: the first `seen` become probabilities (the forward's
 * exp(t - mx) / sum), the rest of the n are 0. */
MGPU_CPU_WIDE static void flash_fwd_row(float *p, int seen, int n, float scale, float *lse,
					int bf16)
{
	float mx = row_max(p, seen, scale);
	float sum = row_exp(p, p, seen, scale, mx);
	int j;

	for (j = 0; j < seen; j++)
		p[j] = p[j] / sum;
	if (bf16)
		round_row(p, seen);
	for (j = seen; j < n; j++)
		p[j] = 0.0f;
	*lse = mgpu_attn_lse(mx, sum);
}

void mgpu_cpu_attn_fwd_rows(float *S, int R, int i0, float scale, float *lse, int bf16)
{
	int r, n = i0 + R;

	for (r = 0; r < R; r++)
		flash_fwd_row(S + (size_t)r * (size_t)n, i0 + r + 1, n, scale, &lse[r], bf16);
}

/* W probabilities from scores x and the row's lse, and W gradients ds
 * from dp (in place), as elem.h's mgpu_attn_p and mgpu_attn_ds. */
static inline void flash_bwd_block(float *x, float *dp, float scale, float lse, float D)
{
	float p[W];
	int k;

	for (k = 0; k < W; k++)
		p[k] = mgpu_attn_p(x[k], scale, lse);
	for (k = 0; k < W; k++) {
		dp[k] = mgpu_attn_ds(p[k], dp[k], D, scale);
		x[k] = p[k];
	}
}

/* One row: s (scores) becomes P, dp becomes dS over the first `seen`
 * columns, both 0 in the rest of the n. */
MGPU_CPU_WIDE static void flash_bwd_row(float *s, float *dp, int seen, int n, float scale,
					float lse, float D, int bf16)
{
	float p;
	int j = 0;

	for (; j + W <= seen; j += W)
		flash_bwd_block(s + j, dp + j, scale, lse, D);
	for (; j < seen; j++) {
		p = mgpu_attn_p(s[j], scale, lse);
		dp[j] = mgpu_attn_ds(p, dp[j], D, scale);
		s[j] = p;
	}
	if (bf16) {
		round_row(s, seen);
		round_row(dp, seen);
	}
	for (j = seen; j < n; j++)
		s[j] = dp[j] = 0.0f;
}

void mgpu_cpu_attn_bwd_rows(float *S, float *dP, int R, int i0, float scale, const float *lse,
			    const float *D, int bf16)
{
	size_t off;
	int r, n = i0 + R;

	for (r = 0; r < R; r++) {
		off = (size_t)r * (size_t)n;
		flash_bwd_row(S + off, dP + off, i0 + r + 1, n, scale, lse[r], D[r], bf16);
	}
}
