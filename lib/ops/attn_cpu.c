/*
 * attn_cpu.c - the cpu backend's fused causal attention (attn_fwd and
 * attn_bwd of ops.h): OpenBLAS products over tiles of rows, the rows'
 * softmax arithmetic in rows_cpu.c.
 *
 * Per (T,Dh) block, the query rows go in tiles of ROWS: rows i0 .. i1 - 1
 * see the keys 0 .. i1 - 1 only, so a tile's scores are a (rows, i1)
 * product, never the whole (T,T) block (the causal half is skipped, up to
 * a triangle per tile). The tile of scores lives in per-device scratch
 * (ops_cpu.h's struct mgpu_cpu_scratch), reused by every tile and block:
 * memory of ROWS * T floats for scores and as much for their gradients,
 * whatever the batch.
 *   forward  S = q_t k^T, S -> P (rows_cpu.c), y_t = P v
 *   backward S = q_t k^T, dP = dy_t v^T, S -> P and dP -> dS from lse,
 *            dv += P^T dy_t, dk += dS^T q_t, dq_t = dS k
 * The backward walks the tiles last to first: the last tile spans every
 * key, so its products overwrite dk and dv (beta 0) and the others add.
 *
 * Under bf16 the block's q, k, v (and dy) are rounded into scratch first
 * (mgpu_attn_in) and P, dS by the row loops, so cblas_sgemm multiplies
 * bf16 values exactly and sums in fp32: gemm_bf16's arithmetic.
 * Row-major products by ops.h's identity, as gpt.c's comment lists them.
 */
#include "ops/ops_cpu.h"

#include <stddef.h> /* size_t */

#include "core/err.h"  /* MGPU_TRY */
#include "ops/elem.h"  /* mgpu_attn_in */
#include "ops/loops.h" /* ops_check_flash */

/* Query rows per tile: products of 64 rows keep OpenBLAS's kernels busy,
 * and the causal waste is one 64-row triangle per tile. */
#define ROWS 64

static const struct mgpu_ops *const cpu = &mgpu_ops_cpu;

/* dst (n) = r(src). */
static void round_copy(float *dst, const float *src, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		dst[i] = mgpu_attn_in(src[i], 1);
}

/* The scratch for a block of T rows: tiles, and under bf16 room for
 * `nr` rounded (T,Dh) operands plus T floats. */
static int scratch_for(struct mgpu_dev *dev, int T, int Dh, int nr, int bf16,
		       struct mgpu_cpu_scratch **s)
{
	size_t tile = (size_t)(T < ROWS ? T : ROWS) * (size_t)T, blk = (size_t)T * (size_t)Dh;

	MGPU_TRY(mgpu_cpu_scratch(dev, s));
	MGPU_TRY(mgpu_cpu_grow(&(*s)->s, &(*s)->cap_s, tile));
	MGPU_TRY(mgpu_cpu_grow(&(*s)->dp, &(*s)->cap_dp, tile));
	return mgpu_cpu_grow(&(*s)->r, &(*s)->cap_r, (bf16 ? (size_t)nr * blk : 0) + (size_t)T);
}

/* C = op(A) op(B) + beta C in fp32: one product of the table's gemm. */
static int mm(struct mgpu_dev *dev, enum mgpu_trans ta, enum mgpu_trans tb, int m, int n, int k,
	      const float *A, int lda, const float *Bm, int ldb, float beta, float *C, int ldc)
{
	return cpu->gemm(dev, MGPU_PREC_FP32, ta, tb, m, n, k, 1.0f, A, lda, 0, Bm, ldb, 0, beta,
			 C, ldc, 0, 1);
}

/* S (rows, n) = A_t B^T for the row tile of A at i0 and the first n rows
 * of B: scores (A = q, B = k) or dP (A = dy, B = v). */
static int tile_scores(struct mgpu_dev *dev, float *S, const float *A, const float *Bm,
		       int i0, int rows, int Dh)
{
	int n = i0 + rows;

	return mm(dev, MGPU_T, MGPU_N, n, rows, Dh, Bm, Dh, A + (size_t)i0 * Dh, Dh, 0.0f, S, n);
}

/* One block's forward: q, k, v, y (T,Dh), lse (T). */
static int fwd_block(struct mgpu_dev *dev, struct mgpu_cpu_scratch *s, float *y, float *lse,
		     const float *q, const float *k, const float *v, int T, int Dh,
		     float scale, int bf16)
{
	size_t blk = (size_t)T * (size_t)Dh;
	int i0, rows;

	if (bf16) {
		round_copy(s->r, q, blk);
		round_copy(s->r + blk, k, blk);
		round_copy(s->r + 2 * blk, v, blk);
		q = s->r;
		k = s->r + blk;
		v = s->r + 2 * blk;
	}
	for (i0 = 0; i0 < T; i0 += ROWS) {
		rows = T - i0 < ROWS ? T - i0 : ROWS;
		MGPU_TRY(tile_scores(dev, s->s, q, k, i0, rows, Dh));
		mgpu_cpu_attn_fwd_rows(s->s, rows, i0, scale, lse + i0, bf16);
		MGPU_TRY(mm(dev, MGPU_N, MGPU_N, Dh, rows, i0 + rows, v, Dh, s->s, i0 + rows, 0.0f,
			    y + (size_t)i0 * Dh, Dh));
	}
	return 0;
}

int mgpu_cpu_attn_fwd(struct mgpu_dev *dev, float *y, float *lse, const float *q,
		      const float *k, const float *v, int BH, int T, int Dh, float scale,
		      enum mgpu_prec prec)
{
	struct mgpu_cpu_scratch *s = NULL;
	int b, bf16 = prec == MGPU_PREC_BF16;
	size_t off;

	MGPU_TRY(ops_check_flash("attn_fwd", BH, T, Dh, prec));
	if ((size_t)BH * (size_t)T == 0)
		return 0;
	MGPU_TRY(scratch_for(dev, T, Dh, 3, bf16, &s));
	for (b = 0; b < BH; b++) {
		off = (size_t)b * (size_t)T * (size_t)Dh;
		MGPU_TRY(fwd_block(dev, s, y + off, lse + (size_t)b * T, q + off, k + off, v + off,
				   T, Dh, scale, bf16));
	}
	return 0;
}

/* D (T) = dy_i . y_i per row, unrounded (flash attention's row term). */
static void row_dots(float *D, const float *dy, const float *y, int T, int Dh)
{
	size_t at;
	float t;
	int i, d;

	for (i = 0; i < T; i++) {
		at = (size_t)i * (size_t)Dh;
		for (t = 0.0f, d = 0; d < Dh; d++)
			t += dy[at + d] * y[at + d];
		D[i] = t;
	}
}

/* The operands of a block's backward: rounded copies under bf16. */
struct bwd_in {
	const float *q, *k, *v, *dy, *lse;
	float *D;
};

/* One row tile's products: dv, dk (the first i0 + rows rows; beta 0
 * overwrites), dq of the tile. */
static int bwd_tile(struct mgpu_dev *dev, struct mgpu_cpu_scratch *s, const struct bwd_in *in,
		    float *dq, float *dk, float *dv, int i0, int rows, int Dh, float scale,
		    int bf16, float beta)
{
	int n = i0 + rows;
	size_t at = (size_t)i0 * (size_t)Dh;

	MGPU_TRY(tile_scores(dev, s->s, in->q, in->k, i0, rows, Dh));
	MGPU_TRY(tile_scores(dev, s->dp, in->dy, in->v, i0, rows, Dh));
	mgpu_cpu_attn_bwd_rows(s->s, s->dp, rows, i0, scale, in->lse + i0, in->D + i0, bf16);
	MGPU_TRY(mm(dev, MGPU_N, MGPU_T, Dh, n, rows, in->dy + at, Dh, s->s, n, beta, dv, Dh));
	MGPU_TRY(mm(dev, MGPU_N, MGPU_T, Dh, n, rows, in->q + at, Dh, s->dp, n, beta, dk, Dh));
	return mm(dev, MGPU_N, MGPU_N, Dh, rows, n, in->k, Dh, s->dp, n, 0.0f, dq + at, Dh);
}

/* One block's backward, tiles last to first. */
static int bwd_block(struct mgpu_dev *dev, struct mgpu_cpu_scratch *s, float *dq, float *dk,
		     float *dv, const float *q, const float *k, const float *v, const float *y,
		     const float *dy, const float *lse, int T, int Dh, float scale, int bf16)
{
	size_t blk = (size_t)T * (size_t)Dh;
	struct bwd_in in = { q, k, v, dy, lse, s->r };
	int i0, rows;

	if (bf16) {
		round_copy(s->r, q, blk);
		round_copy(s->r + blk, k, blk);
		round_copy(s->r + 2 * blk, v, blk);
		round_copy(s->r + 3 * blk, dy, blk);
		in.q = s->r;
		in.k = s->r + blk;
		in.v = s->r + 2 * blk;
		in.dy = s->r + 3 * blk;
		in.D = s->r + 4 * blk;
	}
	row_dots(in.D, dy, y, T, Dh);
	for (i0 = (T - 1) / ROWS * ROWS; i0 >= 0; i0 -= ROWS) {
		rows = T - i0 < ROWS ? T - i0 : ROWS;
		MGPU_TRY(bwd_tile(dev, s, &in, dq, dk, dv, i0, rows, Dh, scale, bf16,
				  i0 + rows == T ? 0.0f : 1.0f));
	}
	return 0;
}

int mgpu_cpu_attn_bwd(struct mgpu_dev *dev, float *dq, float *dk, float *dv, const float *q,
		      const float *k, const float *v, const float *y, const float *dy,
		      const float *lse, int BH, int T, int Dh, float scale, enum mgpu_prec prec)
{
	struct mgpu_cpu_scratch *s = NULL;
	int b, bf16 = prec == MGPU_PREC_BF16;
	size_t off;

	MGPU_TRY(ops_check_flash("attn_bwd", BH, T, Dh, prec));
	if ((size_t)BH * (size_t)T == 0)
		return 0;
	MGPU_TRY(scratch_for(dev, T, Dh, 4, bf16, &s));
	for (b = 0; b < BH; b++) {
		off = (size_t)b * (size_t)T * (size_t)Dh;
		MGPU_TRY(bwd_block(dev, s, dq + off, dk + off, dv + off, q + off, k + off, v + off,
				   y + off, dy + off, lse + (size_t)b * T, T, Dh, scale, bf16));
	}
	return 0;
}
