/*
 * attn_gemm.c - attention as batched GEMMs and row passes (attn_gemm.h):
 * the driver, which calls the products through the device's own table
 * (sgemm_strided, or f32_to_bf16 and gemm_bf16 under bf16), and the row
 * passes on host memory.
 *
 * The products, column-major as ops.h's sgemm (a row-major (T,Dh) block is
 * a column-major (Dh,T) one with leading dimension Dh; a row-major (T,T)
 * matrix with rows ld apart is its transpose, column-major, leading
 * dimension ld), per block, stride T*Dh or T*T (ld*T for P and dS):
 *   S^T (T x T)   = op_T(k) op_N(q)       m = T,  n = T, k = Dh
 *   Y^T (Dh x T)  = op_N(v) op_N(P)       m = Dh, n = T, k = T
 *   dP^T          = op_T(v) op_N(dy)      as S with (q, k) = (dy, v)
 *   dV^T (Dh x T) = op_N(dy) op_T(P)      (dv_j = sum_i P_ij dy_i)
 *   dQ^T          = op_N(k) op_N(dS)      (dq_i = sum_j dS_ij k_j)
 *   dK^T          = op_N(q) op_T(dS)      (dk_j = sum_i dS_ij q_i)
 * S is scale-free (alpha 1): the row passes apply scale as elem.h does.
 */
#include "ops/attn_gemm.h"

#include <stdlib.h> /* malloc, free */
#include <string.h> /* memcpy */

#include "core/err.h" /* mgpu_err, MGPU_TRY */
#include "ops/elem.h" /* mgpu_attn_causal_p, mgpu_attn_causal_pds, bf16 rounding */

#define ALIGN 256 /* bytes: each region of the scratch starts on this */

static size_t up(size_t n)
{
	return (n + ALIGN - 1) / ALIGN * ALIGN;
}

int mgpu_attn_gemm_takes(int BH, int T)
{
	return BH > 0 && T >= MGPU_ATTN_GEMM_MIN_T && T <= MGPU_ATTN_GEMM_MAX_T;
}

int mgpu_attn_gemm_heads(int BH, int T)
{
	size_t per = 2 * (size_t)T * (size_t)T * sizeof(float), hc;

	if (BH <= 0 || T <= 0)
		return 1;
	hc = MGPU_ATTN_GEMM_CAP_BYTES / per;
	if (hc < 1)
		hc = 1;
	return hc < (size_t)BH ? (int)hc : BH;
}

/* Bytes of each region at hc heads. */
static void regions(int hc, int T, int Dh, int bf16, size_t *tt, size_t *ops)
{
	*tt = up((size_t)hc * T * T * sizeof(float));
	*ops = bf16 ? up(4 * (size_t)hc * T * Dh * sizeof(uint16_t)) : 0;
}

size_t mgpu_attn_gemm_scratch_bytes(int BH, int T, int Dh, int bf16)
{
	size_t tt, ops;

	if ((size_t)BH * (size_t)T == 0)
		return 0;
	regions(mgpu_attn_gemm_heads(BH, T), T, Dh, bf16, &tt, &ops);
	return 2 * tt + ops;
}

void mgpu_attn_gemm_carve(struct mgpu_attn_scratch *sc, void *base, int BH, int T, int Dh,
			  int bf16)
{
	char *p = base;
	size_t tt, ops;

	sc->hc = mgpu_attn_gemm_heads(BH, T);
	regions(sc->hc, T, Dh, bf16, &tt, &ops);
	sc->S = (float *)p;
	sc->dP = (float *)(p + tt);
	sc->op16 = bf16 ? (uint16_t *)(p + 2 * tt) : NULL;
}

/* One batched product with alpha 1, beta 0: A and B are floats, or under
 * bf16 16-bit values; strides count elements. */
static int gemm(struct mgpu_dev *dev, int bf16, enum mgpu_trans ta, enum mgpu_trans tb, int m,
		int n, int k, const void *A, int lda, long long sa, const void *Bm, int ldb,
		long long sb, float *C, int ldc, long long sc, int batch)
{
	const struct mgpu_ops *o = dev->ops;

	return o->gemm(dev, bf16 ? MGPU_PREC_BF16 : MGPU_PREC_FP32, ta, tb, m, n, k, 1.0f, A, lda, sa,
		       Bm, ldb, sb, 0.0f, C, ldc, sc, batch);
}

/* The operand of the products for x (nb blocks of blk from x): x itself,
 * or under bf16 its rounded copy in scratch slot `slot` (slots are laid out
 * for full chunks of hc blocks). */
static int operand(struct mgpu_dev *dev, const struct mgpu_attn_scratch *sc, int bf16,
		   int slot, const float *x, int nb, long long blk, const void **out)
{
	uint16_t *dst;

	if (!bf16) {
		*out = x;
		return 0;
	}
	dst = sc->op16 + (size_t)slot * (size_t)sc->hc * (size_t)blk;
	*out = dst;
	return dev->ops->f32_to_bf16(dev, dst, x, (size_t)nb * (size_t)blk);
}

int mgpu_attn_gemm_fwd(struct mgpu_dev *dev, const struct mgpu_attn_rows *rows,
		       const struct mgpu_attn_scratch *sc, float *y, float *lse, const float *q,
		       const float *k, const float *v, int BH, int T, int Dh, float scale,
		       int bf16)
{
	long long blk = (long long)T * Dh, tt = (long long)T * T;
	int ldp = bf16 ? 2 * T : T, b0, nb;
	const void *Q, *K, *Vo;

	bf16 = bf16 != 0;
	for (b0 = 0; b0 < BH; b0 += nb) {
		size_t off = (size_t)b0 * (size_t)blk;

		nb = BH - b0 < sc->hc ? BH - b0 : sc->hc;
		MGPU_TRY(operand(dev, sc, bf16, 0, q + off, nb, blk, &Q));
		MGPU_TRY(operand(dev, sc, bf16, 1, k + off, nb, blk, &K));
		MGPU_TRY(operand(dev, sc, bf16, 2, v + off, nb, blk, &Vo));
		MGPU_TRY(gemm(dev, bf16, MGPU_T, MGPU_N, T, T, Dh, K, Dh, blk, Q, Dh, blk, sc->S, T,
			      tt, nb));
		MGPU_TRY(rows->fwd(dev, sc->S, lse + (size_t)b0 * T, nb, T, scale, bf16));
		MGPU_TRY(gemm(dev, bf16, MGPU_N, MGPU_N, Dh, T, T, Vo, Dh, blk, sc->S, ldp,
			      (long long)ldp * T, y + off, Dh, blk, nb));
	}
	return 0;
}

int mgpu_attn_gemm_bwd(struct mgpu_dev *dev, const struct mgpu_attn_rows *rows,
		       const struct mgpu_attn_scratch *sc, float *dq, float *dk, float *dv,
		       const float *q, const float *k, const float *v, const float *y,
		       const float *dy, const float *lse, int BH, int T, int Dh, float scale,
		       int bf16)
{
	long long blk = (long long)T * Dh, tt = (long long)T * T, sp;
	int ldp = bf16 ? 2 * T : T, b0, nb;
	const void *Q, *K, *Vo, *dY;

	bf16 = bf16 != 0;
	sp = (long long)ldp * T;
	for (b0 = 0; b0 < BH; b0 += nb) {
		size_t off = (size_t)b0 * (size_t)blk;

		nb = BH - b0 < sc->hc ? BH - b0 : sc->hc;
		MGPU_TRY(operand(dev, sc, bf16, 0, q + off, nb, blk, &Q));
		MGPU_TRY(operand(dev, sc, bf16, 1, k + off, nb, blk, &K));
		MGPU_TRY(operand(dev, sc, bf16, 2, v + off, nb, blk, &Vo));
		MGPU_TRY(operand(dev, sc, bf16, 3, dy + off, nb, blk, &dY));
		MGPU_TRY(gemm(dev, bf16, MGPU_T, MGPU_N, T, T, Dh, K, Dh, blk, Q, Dh, blk, sc->S, T,
			      tt, nb));
		MGPU_TRY(gemm(dev, bf16, MGPU_T, MGPU_N, T, T, Dh, Vo, Dh, blk, dY, Dh, blk, sc->dP,
			      T, tt, nb));
		MGPU_TRY(rows->bwd(dev, sc->S, sc->dP, y + off, dy + off, lse + (size_t)b0 * T, nb,
				   T, Dh, scale, bf16));
		MGPU_TRY(gemm(dev, bf16, MGPU_N, MGPU_T, Dh, T, T, dY, Dh, blk, sc->S, ldp, sp,
			      dv + off, Dh, blk, nb));
		MGPU_TRY(gemm(dev, bf16, MGPU_N, MGPU_N, Dh, T, T, K, Dh, blk, sc->dP, ldp, sp,
			      dq + off, Dh, blk, nb));
		MGPU_TRY(gemm(dev, bf16, MGPU_N, MGPU_T, Dh, T, T, Q, Dh, blk, sc->dP, ldp, sp,
			      dk + off, Dh, blk, nb));
	}
	return 0;
}

/* ---- the row passes on host memory ---------------------------------------
 * A row is copied out before its outputs are written: under bf16 they
 * share its bytes at another element type. */

/* Element j of an operand row: a float, or a bf16 value. */
static void put(void *row, int j, float x, int bf16)
{
	if (bf16)
		((uint16_t *)row)[j] = mgpu_bf16_from_f32(x);
	else
		((float *)row)[j] = x;
}

static int host_fwd(struct mgpu_dev *dev, float *S, float *lse, int nb, int T, float scale,
		    int bf16)
{
	float *s = malloc((size_t)T * sizeof *s), mx, sum;
	size_t r;
	int i, j;

	(void)dev;
	if (!s)
		return mgpu_err(MGPU_ENOMEM, "attn_fwd: out of memory");
	for (r = 0; r < (size_t)nb * (size_t)T; r++) {
		float *row = S + r * (size_t)T;

		i = (int)(r % (size_t)T);
		memcpy(s, row, (size_t)T * sizeof *s);
		mx = scale * s[0];
		for (j = 1; j <= i; j++)
			mx = mgpu_max_merge(mx, scale * s[j]);
		sum = 0.0f;
		for (j = 0; j <= i; j++)
			sum += mgpu_exp_neg(scale * s[j] - mx);
		lse[r] = mgpu_attn_lse(mx, sum);
		for (j = 0; j < T; j++)
			put(row, j, mgpu_attn_causal_p(s[j], scale, mx, sum, i, j), bf16);
	}
	free(s);
	return 0;
}

static int host_bwd(struct mgpu_dev *dev, float *S, float *dP, const float *y, const float *dy,
		    const float *lse, int nb, int T, int Dh, float scale, int bf16)
{
	float *s = malloc(2 * (size_t)T * sizeof *s), *dp, D, p, ds;
	size_t r;
	int i, j, d;

	(void)dev;
	if (!s)
		return mgpu_err(MGPU_ENOMEM, "attn_bwd: out of memory");
	dp = s + T;
	for (r = 0; r < (size_t)nb * (size_t)T; r++) {
		float *srow = S + r * (size_t)T, *dprow = dP + r * (size_t)T;

		i = (int)(r % (size_t)T);
		D = 0.0f;
		for (d = 0; d < Dh; d++)
			D += dy[r * (size_t)Dh + (size_t)d] * y[r * (size_t)Dh + (size_t)d];
		memcpy(s, srow, (size_t)T * sizeof *s);
		memcpy(dp, dprow, (size_t)T * sizeof *dp);
		for (j = 0; j < T; j++) {
			mgpu_attn_causal_pds(s[j], dp[j], lse[r], D, scale, i, j, &p, &ds);
			put(srow, j, p, bf16);
			put(dprow, j, ds, bf16);
		}
	}
	free(s);
	return 0;
}

const struct mgpu_attn_rows mgpu_attn_rows_host = { host_fwd, host_bwd };
