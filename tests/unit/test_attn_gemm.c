/*
 * test_attn_gemm.c - attention's GEMM form (lib/ops/attn_gemm.c) on the cpu
 * backend with the host row passes, against ref's attn_fwd and attn_bwd:
 * the same driver, products and arguments the cuda backend gives cuBLAS
 * for long contexts, in fp32 and bf16, one chunk of heads and several
 * (a short last chunk included), T from 1 to past the diagonal's tails.
 */
#include <math.h>   /* fabs, isfinite, sqrtf */
#include <stdlib.h> /* malloc, free */

#include "../t.h"
#include "core/err.h"      /* mgpu_errmsg */
#include "ops/attn_gemm.h" /* the driver */
#include "ops/elem.h"      /* mgpu_attn_causal_p */
#include "ops/ops.h"       /* mgpu_ops_cpu, mgpu_ops_ref */

/* Largest |a - ref| over the largest |ref|, as the conformance suite. */
static double rel_err(const float *a, const float *ref, size_t n)
{
	double diff = 0.0, mag = 0.0, d;
	size_t i;

	for (i = 0; i < n; i++) {
		if (!isfinite(a[i]) || !isfinite(ref[i]))
			return INFINITY;
		d = fabs((double)a[i] - ref[i]);
		diff = d > diff ? d : diff;
		mag = fabs((double)ref[i]) > mag ? fabs((double)ref[i]) : mag;
	}
	return diff / (mag > 1e-30 ? mag : 1e-30);
}

static void fill(float *x, size_t n, unsigned *state, float lo, float hi)
{
	size_t i;

	for (i = 0; i < n; i++) {
		*state = *state * 1664525u + 1013904223u;
		x[i] = lo + (hi - lo) * (float)(*state >> 8) / 16777216.0f;
	}
}

/* One shape: forward and backward of the GEMM form (hc heads a chunk, 0
 * for the driver's choice) on cpu against ref. */
static void one(int BH, int T, int Dh, int bf16, int hc)
{
	size_t n = (size_t)BH * T * Dh, nl = (size_t)BH * T, i;
	float *buf = malloc((13 * n + 4 * nl) * sizeof *buf), *q, *k, *v, *dy, *y0, *y1, *l0, *l1;
	float *g0, *g1, scale = 1.0f / sqrtf((float)Dh);
	struct mgpu_dev cpu, ref;
	struct mgpu_attn_scratch sc;
	size_t bytes = mgpu_attn_gemm_scratch_bytes(BH, T, Dh, bf16);
	void *scratch = malloc(bytes ? bytes : 1);
	unsigned st = 12345u + (unsigned)(BH * 7 + T * 13 + Dh);
	double tol = bf16 ? 4e-3 : 2e-5, e;

	T_CHECK(buf && scratch, "out of memory");
	if (!buf || !scratch)
		goto out;
	q = buf, k = q + n, v = k + n, dy = v + n, y0 = dy + n, y1 = y0 + n;
	g0 = y1 + n, g1 = g0 + 3 * n, l0 = g1 + 3 * n, l1 = l0 + nl;
	fill(q, n, &st, -2.0f, 2.0f);
	fill(k, n, &st, -2.0f, 2.0f);
	fill(v, n, &st, -1.0f, 1.0f);
	fill(dy, n, &st, -1.0f, 1.0f);
	for (i = 0; i < 3 * n; i++)
		g1[i] = NAN; /* every output must be written */
	for (i = 0; i < n; i++)
		y1[i] = NAN;
	T_OK(mgpu_dev_open(&cpu, &mgpu_ops_cpu, 0));
	T_OK(mgpu_dev_open(&ref, &mgpu_ops_ref, 0));
	mgpu_attn_gemm_carve(&sc, scratch, BH, T, Dh, bf16);
	T_CHECK(sc.hc == BH, "1 GiB holds %d heads of T=%d, carve says %d", BH, T, sc.hc);
	if (hc)
		sc.hc = hc;
	T_OK(ref.ops->attn_fwd(&ref, y0, l0, q, k, v, BH, T, Dh, scale, bf16));
	T_OK(mgpu_attn_gemm_fwd(&cpu, &mgpu_attn_rows_host, &sc, y1, l1, q, k, v, BH, T, Dh,
				scale, bf16));
	e = rel_err(y1, y0, n);
	T_CHECK(e <= tol, "y: BH=%d T=%d Dh=%d bf16=%d hc=%d: error %g > %g", BH, T, Dh, bf16,
		hc, e, tol);
	e = rel_err(l1, l0, nl);
	T_CHECK(e <= tol, "lse: BH=%d T=%d Dh=%d bf16=%d: error %g", BH, T, Dh, bf16, e);
	/* the backward from ref's y and lse on both, as the conformance suite */
	T_OK(ref.ops->attn_bwd(&ref, g0, g0 + n, g0 + 2 * n, q, k, v, y0, dy, l0, BH, T, Dh,
			       scale, bf16));
	T_OK(mgpu_attn_gemm_bwd(&cpu, &mgpu_attn_rows_host, &sc, g1, g1 + n, g1 + 2 * n, q, k, v,
				y0, dy, l0, BH, T, Dh, scale, bf16));
	e = rel_err(g1, g0, 3 * n);
	T_CHECK(e <= (bf16 ? 4e-3 : 5e-5), "dq dk dv: BH=%d T=%d Dh=%d bf16=%d hc=%d: error %g",
		BH, T, Dh, bf16, hc, e);
	mgpu_dev_close(&cpu);
	mgpu_dev_close(&ref);
out:
	free(buf);
	free(scratch);
}

static void test_fp32(void)
{
	one(3, 37, 16, 0, 0);
	one(2, 64, 64, 0, 0);
	one(1, 1, 8, 0, 0);
	one(4, 20, 7, 0, 0);
}

static void test_bf16(void)
{
	one(3, 37, 16, 1, 0);
	one(2, 64, 64, 1, 0);
	one(1, 1, 8, 1, 0);
	one(4, 20, 7, 1, 0);
}

/* Chunks of 2 heads over 5: the operands' slots and the offsets of q, k,
 * v, y, lse and the gradients per chunk, the last chunk short. */
static void test_chunks(void)
{
	one(5, 33, 16, 0, 2);
	one(5, 33, 16, 1, 2);
	one(3, 17, 8, 1, 1);
}

/* The scratch: two (T,T) float blocks per head of a chunk, plus four bf16
 * operands; chunks hold what fits 1 GiB. */
static void test_sizes(void)
{
	T_CHECK(mgpu_attn_gemm_heads(96, 1024) == 96, "gpt-2 at batch 8: one chunk");
	T_CHECK(mgpu_attn_gemm_heads(192, 1024) == 128, "%d", mgpu_attn_gemm_heads(192, 1024));
	T_CHECK(mgpu_attn_gemm_heads(1, 100000) == 1, "at least one head");
	T_CHECK(mgpu_attn_gemm_scratch_bytes(96, 1024, 64, 0) == 2 * (size_t)96 * 1024 * 1024 * 4,
		"fp32: S and dP");
	T_CHECK(mgpu_attn_gemm_scratch_bytes(96, 1024, 64, 1) ==
			2 * (size_t)96 * 1024 * 1024 * 4 + 4 * (size_t)96 * 1024 * 64 * 2,
		"bf16: and q, k, v, dy");
	T_CHECK(mgpu_attn_gemm_scratch_bytes(0, 1024, 64, 1) == 0, "nothing for no heads");
}

/* The row pass's element math: p of the forward is the softmax of the
 * row's visible scores, 0 past the diagonal. */
static void test_elem(void)
{
	float s[3] = { 1.0f, 2.0f, 30.0f }, mx = 1.0f, sum = 1.0f + expf(-0.5f);

	T_NEAR(mgpu_attn_causal_p(s[0], 0.5f, mx, sum, 1, 0), 1.0 / (1.0 + exp(0.5)), 1e-6);
	T_NEAR(mgpu_attn_causal_p(s[1], 0.5f, mx, sum, 1, 1), exp(0.5) / (1.0 + exp(0.5)), 1e-6);
	T_CHECK(mgpu_attn_causal_p(s[2], 0.5f, mx, sum, 1, 2) == 0.0f, "past the diagonal");
}

int main(void)
{
	T_RUN(test_sizes);
	T_RUN(test_elem);
	T_RUN(test_fp32);
	T_RUN(test_bf16);
	T_RUN(test_chunks);
	return T_DONE();
}
