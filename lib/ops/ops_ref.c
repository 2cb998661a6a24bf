/*
 * ops_ref.c - the "ref" backend: the obvious loop for every op of ops.h.
 *
 * This is the definition each other backend is checked against (tests/ops,
 * mgpu_ops_compare), so clarity beats speed: gemm is a triple loop
 * accumulating in double, reductions (nrm2, col_sum) accumulate in double,
 * element ops call the elem.h function once per element.
 *
 * Provides mgpu_ops_ref. Memory is host memory (host_memory = 1), one
 * device (index 0); every op is synchronous.
 * BLAS semantics: beta == 0 overwrites C without reading it (NaNs in C are
 * ignored), alpha == 0 or k == 0 never reads A or B; the same holds for
 * col_sum's beta and emb_bwd's acc. emb_bwd is the gather form (one table
 * element at a time, its rows in order), the very loop the CUDA kernel runs.
 */
#include "ops/ops.h"

#include <math.h>   /* sqrt */
#include <stddef.h> /* size_t */
#include <stdlib.h> /* malloc, free */

#include "core/err.h"  /* MGPU_TRY */
#include "ops/conv_host.h" /* the conv-net ops */
#include "ops/loss_host.h" /* mse, pix_xent */
#include "ops/elem.h"  /* mgpu_act_f, mgpu_act_df, mgpu_dropout_factor, optimizers */
#include "ops/loops.h" /* ops_check_*, ops_host_* */

/* Element (i, j) of op(X) for a column-major X with leading dimension ld
 * and elements of type prec, widened to float (exactly). */
static float at(const void *X, enum mgpu_prec prec, int ld, enum mgpu_trans t, int i, int j)
{
	size_t e = t == MGPU_N ? i + (size_t)j * ld : j + (size_t)i * ld;

	switch (prec) {
	case MGPU_PREC_BF16: return mgpu_bf16_to_f32(((const uint16_t *)X)[e]);
	case MGPU_PREC_FP16: return mgpu_f16_to_f32(((const uint16_t *)X)[e]);
	default: return ((const float *)X)[e];
	}
}

/* The definition of every precision's product: the inputs' values (16-bit
 * ones widened exactly), their products summed in double, so each
 * backend's fp32 accumulation is measured against the exact result. */
static int ref_gemm(struct mgpu_dev *dev, enum mgpu_prec prec, enum mgpu_trans ta,
		    enum mgpu_trans tb, int m, int n, int k, float alpha, const void *A, int lda,
		    long long sa, const void *Bm, int ldb, long long sb, float beta, float *C,
		    int ldc, long long sc, int batch)
{
	size_t esz = prec == MGPU_PREC_FP32 ? sizeof(float) : sizeof(uint16_t);
	const char *a, *b;
	double sum;
	float *c;
	int p, i, j, l;

	(void)dev;
	MGPU_TRY(ops_check_gemm(prec, ta, tb, m, n, k, lda, ldb, ldc, sa, sb, sc, batch));
	for (p = 0; p < batch; p++) {
		a = (const char *)A + (size_t)p * sa * esz;
		b = (const char *)Bm + (size_t)p * sb * esz;
		for (j = 0; j < n; j++)
			for (i = 0; i < m; i++) {
				sum = 0.0;
				if (alpha != 0.0f)
					for (l = 0; l < k; l++)
						sum += (double)at(a, prec, lda, ta, i, l) *
						       at(b, prec, ldb, tb, l, j);
				c = &C[(size_t)p * sc + i + (size_t)j * ldc];
				*c = beta == 0.0f ? (float)(alpha * sum)
						  : (float)(alpha * sum + (double)beta * *c);
			}
	}
	return 0;
}

static int ref_nrm2(struct mgpu_dev *dev, size_t n, const float *x, float *out_host)
{
	double s = 0.0;
	size_t i;

	(void)dev;
	for (i = 0; i < n; i++)
		s += (double)x[i] * x[i];
	*out_host = (float)sqrt(s);
	return 0;
}

/* Y, Z (B,D), b (D). */
static int ref_bias_act(struct mgpu_dev *dev, enum mgpu_act act, float *Y, float *Z,
			const float *b, int B, int D)
{
	size_t idx;
	int i, j;

	(void)dev;
	MGPU_TRY(ops_check_rows("bias_act", B, D));
	MGPU_TRY(ops_check_act("bias_act", act));
	for (i = 0; i < B; i++)
		for (j = 0; j < D; j++) {
			idx = (size_t)i * D + j;
			Z[idx] += b[j];
			Y[idx] = mgpu_act_f(act, Z[idx]);
		}
	return 0;
}

static int ref_act_bwd(struct mgpu_dev *dev, enum mgpu_act act, float *dZ, const float *dY,
		       const float *Z, size_t n)
{
	size_t i;

	(void)dev;
	MGPU_TRY(ops_check_act("act_bwd", act));
	for (i = 0; i < n; i++)
		dZ[i] = dY[i] * mgpu_act_df(act, Z[i]);
	return 0;
}

/* db (D), dY (B,D). */
static int ref_col_sum(struct mgpu_dev *dev, float *db, const float *dY, int B, int D,
		       float beta)
{
	double s;
	int i, j;

	(void)dev;
	MGPU_TRY(ops_check_rows("col_sum", B, D));
	for (j = 0; j < D; j++) {
		s = 0.0;
		for (i = 0; i < B; i++)
			s += dY[(size_t)i * D + j];
		db[j] = beta == 0.0f ? (float)s : (float)(beta * db[j] + s);
	}
	return 0;
}

static int ref_dropout(struct mgpu_dev *dev, float *Y, const float *X, size_t n, float p,
		       uint64_t seed, uint64_t offset)
{
	size_t i;

	(void)dev;
	MGPU_TRY(ops_check_dropout(p));
	for (i = 0; i < n; i++)
		Y[i] = X[i] * mgpu_dropout_factor(seed, offset + i, p);
	return 0;
}

static int ref_u8_to_f32(struct mgpu_dev *dev, float *Y, const uint8_t *X, size_t n,
			 float scale, float shift)
{
	size_t i;

	(void)dev;
	for (i = 0; i < n; i++)
		Y[i] = (float)X[i] * scale + shift;
	return 0;
}

static int ref_sgd(struct mgpu_dev *dev, float *w, const float *g, float *mom, size_t n,
		   const struct mgpu_sgd_hp *hp)
{
	float unused = 0.0f;
	size_t i;

	(void)dev;
	MGPU_TRY(ops_check_sgd(n, mom, hp));
	for (i = 0; i < n; i++) {
		unused = 0.0f;
		mgpu_sgd_elem(&w[i], g[i], mom ? &mom[i] : &unused, hp);
	}
	return 0;
}

static int ref_adamw(struct mgpu_dev *dev, float *w, const float *g, float *m, float *v,
		     size_t n, const struct mgpu_adamw_hp *hp)
{
	size_t i;

	(void)dev;
	for (i = 0; i < n; i++)
		mgpu_adamw_elem(&w[i], g[i], &m[i], &v[i], hp);
	return 0;
}

/* The gradient of element i summed over its ng sources, in source order. */
static float ref_grad_sum(const float *const *g, int ng, size_t i)
{
	float s = g[0][i];
	int k;

	for (k = 1; k < ng; k++)
		s += g[k][i];
	return s;
}

static int ref_sgd_sum(struct mgpu_dev *dev, float *w, const float *const *g, int ng,
		       float *mom, size_t n, const struct mgpu_sgd_hp *hp)
{
	float unused = 0.0f;
	size_t i;

	(void)dev;
	for (i = 0; i < n; i++)
		mgpu_sgd_elem(&w[i], ref_grad_sum(g, ng, i),
			      hp->momentum != 0.0f ? &mom[i] : &unused, hp);
	return 0;
}

static int ref_adamw_sum(struct mgpu_dev *dev, float *w, const float *const *g, int ng,
			 float *m, float *v, size_t n, const struct mgpu_adamw_hp *hp)
{
	size_t i;

	(void)dev;
	for (i = 0; i < n; i++)
		mgpu_adamw_elem(&w[i], ref_grad_sum(g, ng, i), &m[i], &v[i], hp);
	return 0;
}

/* ---- transformer ops ---------------------------------------------------- */

static int ref_add(struct mgpu_dev *dev, float *Y, const float *X1, const float *X2, size_t n)
{
	size_t i;

	(void)dev;
	for (i = 0; i < n; i++)
		Y[i] = X1[i] + X2[i];
	return 0;
}

/* Y (B,T,D), ids (B,T), wte (V,D), wpe (T,D). */
static int ref_emb_fwd(struct mgpu_dev *dev, float *Y, const int32_t *ids, const float *wte,
		       const float *wpe, int B, int T, int V, int D)
{
	size_t i, n = (size_t)B * (size_t)T * (size_t)D;

	(void)dev;
	MGPU_TRY(ops_check_emb("emb_fwd", B, T, V, D));
	MGPU_TRY(ops_check_ids(ids, (size_t)B * (size_t)T, V));
	for (i = 0; i < n; i++)
		Y[i] = mgpu_emb_elem(ids, wte, wpe, T, D, i);
	return 0;
}

/* The gather form, one (row, column) of the tables at a time: the CUDA
 * kernels' arithmetic and order exactly. */
static int ref_emb_bwd(struct mgpu_dev *dev, float *dwte, float *dwpe, const float *dY,
		       const int32_t *ids, int B, int T, int V, int D, float acc)
{
	size_t N = (size_t)B * (size_t)T;
	int v, t, c;

	(void)dev;
	MGPU_TRY(ops_check_emb("emb_bwd", B, T, V, D));
	MGPU_TRY(ops_check_ids(ids, N, V));
	for (v = 0; v < V; v++)
		for (c = 0; c < D; c++)
			mgpu_emb_tok_col(dY, ids, N, D, v, c, acc, dwte);
	for (t = 0; t < T; t++)
		for (c = 0; c < D; c++)
			mgpu_emb_pos_col(dY, B, T, D, t, c, acc, dwpe);
	return 0;
}

/* Y (B*H,T,Dh) <- X (B,T,H*Dh) rows ldx apart. */
static int ref_heads_split(struct mgpu_dev *dev, float *Y, const float *X, int ldx, int B,
			   int T, int H, int Dh)
{
	size_t i, n = (size_t)B * (size_t)T * (size_t)H * (size_t)Dh;

	(void)dev;
	MGPU_TRY(ops_check_heads("heads_split", ldx, B, T, H, Dh));
	for (i = 0; i < n; i++)
		Y[i] = X[mgpu_heads_index(i, T, H, Dh, ldx)];
	return 0;
}

static int ref_heads_merge(struct mgpu_dev *dev, float *Y, int ldy, const float *X, int B,
			   int T, int H, int Dh)
{
	size_t i, n = (size_t)B * (size_t)T * (size_t)H * (size_t)Dh;

	(void)dev;
	MGPU_TRY(ops_check_heads("heads_merge", ldy, B, T, H, Dh));
	for (i = 0; i < n; i++)
		Y[mgpu_heads_index(i, T, H, Dh, ldy)] = X[i];
	return 0;
}

/* s_ij of one (T,Dh) block: r(q_i) . r(k_j), the products summed in
 * double (exact for bf16 operands), so the backends' fp32 sums are
 * measured against the exact dot product. */
static float ref_score(const float *q, const float *k, int i, int j, int Dh, int bf16)
{
	double s = 0.0;
	int d;

	for (d = 0; d < Dh; d++)
		s += (double)mgpu_attn_in(q[(size_t)i * Dh + d], bf16) *
		     mgpu_attn_in(k[(size_t)j * Dh + d], bf16);
	return (float)s;
}

/* Row i of a block's forward: p (i + 1 entries) and the row's lse. */
static void ref_attn_row(const float *q, const float *k, int i, int Dh, float scale,
			 int bf16, float *p, float *lse)
{
	float mx, sum = 0.0f;
	int j;

	for (j = 0; j <= i; j++)
		p[j] = ref_score(q, k, i, j, Dh, bf16);
	mx = scale * p[0];
	for (j = 1; j <= i; j++)
		mx = mgpu_max_merge(mx, scale * p[j]);
	for (j = 0; j <= i; j++)
		sum += mgpu_exp_neg(scale * p[j] - mx);
	for (j = 0; j <= i; j++)
		p[j] = mgpu_softmax_elem(p[j], scale, mx, sum);
	*lse = mgpu_attn_lse(mx, sum);
}

/* y, q, k, v (BH,T,Dh), lse (BH,T): the definition, a row at a time. */
static int ref_attn_fwd(struct mgpu_dev *dev, float *y, float *lse, const float *q,
			const float *k, const float *v, int BH, int T, int Dh, float scale,
			enum mgpu_prec prec)
{
	size_t off, blk = (size_t)T * (size_t)Dh;
	int bf16 = prec == MGPU_PREC_BF16;
	float *p;
	double acc;
	int b, i, j, d;

	(void)dev;
	MGPU_TRY(ops_check_flash("attn_fwd", BH, T, Dh, prec));
	if ((size_t)BH * (size_t)T == 0)
		return 0;
	p = malloc((size_t)T * sizeof *p);
	if (!p)
		return mgpu_err(MGPU_ENOMEM, "attn_fwd: out of memory");
	for (b = 0; b < BH; b++) {
		off = (size_t)b * blk;
		for (i = 0; i < T; i++) {
			ref_attn_row(q + off, k + off, i, Dh, scale, bf16, p,
				     &lse[(size_t)b * T + i]);
			for (d = 0; d < Dh; d++) {
				acc = 0.0;
				for (j = 0; j <= i; j++)
					acc += (double)mgpu_attn_in(p[j], bf16) *
					       mgpu_attn_in(v[off + (size_t)j * Dh + d], bf16);
				y[off + (size_t)i * Dh + d] = (float)acc;
			}
		}
	}
	free(p);
	return 0;
}

/* One block's P and dS (T,T, zero above the diagonal) from the saved lse. */
static void ref_attn_pds(const float *q, const float *k, const float *v, const float *y,
			 const float *dy, const float *lse, int T, int Dh, float scale, int bf16,
			 float *P, float *dS)
{
	double D;
	float dp;
	int i, j, d;

	for (i = 0; i < T; i++) {
		D = 0.0;
		for (d = 0; d < Dh; d++)
			D += (double)dy[(size_t)i * Dh + d] * y[(size_t)i * Dh + d];
		for (j = 0; j < T; j++) {
			size_t at = (size_t)i * T + j;
			P[at] = dS[at] = 0.0f;
			if (j > i)
				continue;
			P[at] = mgpu_attn_p(ref_score(q, k, i, j, Dh, bf16), scale, lse[i]);
			dp = ref_score(dy, v, i, j, Dh, bf16);
			dS[at] = mgpu_attn_ds(P[at], dp, (float)D, scale);
		}
	}
}

/* out_i (T,Dh) = sum_j r(W_ij) r(X_j) (W (T,T); transposed: W_ji). */
static void ref_attn_prod(float *out, const float *W, int trans, const float *X, int T,
			  int Dh, int bf16)
{
	double acc;
	float w;
	int i, j, d;

	for (i = 0; i < T; i++)
		for (d = 0; d < Dh; d++) {
			acc = 0.0;
			for (j = 0; j < T; j++) {
				w = trans ? W[(size_t)j * T + i] : W[(size_t)i * T + j];
				acc += (double)mgpu_attn_in(w, bf16) *
				       mgpu_attn_in(X[(size_t)j * Dh + d], bf16);
			}
			out[(size_t)i * Dh + d] = (float)acc;
		}
}

static int ref_attn_bwd(struct mgpu_dev *dev, float *dq, float *dk, float *dv, const float *q,
			const float *k, const float *v, const float *y, const float *dy,
			const float *lse, int BH, int T, int Dh, float scale, enum mgpu_prec prec)
{
	size_t off, blk = (size_t)T * (size_t)Dh, tt = (size_t)T * (size_t)T;
	int b, bf16 = prec == MGPU_PREC_BF16;
	float *P, *dS;

	(void)dev;
	MGPU_TRY(ops_check_flash("attn_bwd", BH, T, Dh, prec));
	if ((size_t)BH * (size_t)T == 0)
		return 0;
	P = malloc(2 * tt * sizeof *P);
	if (!P)
		return mgpu_err(MGPU_ENOMEM, "attn_bwd: out of memory");
	dS = P + tt;
	for (b = 0; b < BH; b++) {
		off = (size_t)b * blk;
		ref_attn_pds(q + off, k + off, v + off, y + off, dy + off, lse + (size_t)b * T, T,
			     Dh, scale, bf16, P, dS);
		ref_attn_prod(dv + off, P, 1, dy + off, T, Dh, bf16);
		ref_attn_prod(dq + off, dS, 0, k + off, T, Dh, bf16);
		ref_attn_prod(dk + off, dS, 1, q + off, T, Dh, bf16);
	}
	free(P);
	return 0;
}

static int ref_f32_to_bf16(struct mgpu_dev *dev, uint16_t *Y, const float *X, size_t n)
{
	size_t i;

	(void)dev;
	for (i = 0; i < n; i++)
		Y[i] = mgpu_bf16_from_f32(X[i]);
	return 0;
}

static int ref_bf16_to_f32(struct mgpu_dev *dev, float *Y, const uint16_t *X, size_t n)
{
	size_t i;

	(void)dev;
	for (i = 0; i < n; i++)
		Y[i] = mgpu_bf16_to_f32(X[i]);
	return 0;
}

static int ref_f32_to_f16(struct mgpu_dev *dev, uint16_t *Y, const float *X, size_t n)
{
	size_t i;

	(void)dev;
	for (i = 0; i < n; i++)
		Y[i] = mgpu_f16_from_f32(X[i]);
	return 0;
}

/* elem.h's order, chunk by chunk, lane by lane: the definition itself. */
static int ref_sum_acc(struct mgpu_dev *dev, double *acc, const float *x, size_t n,
		       int squares, double scale)
{
	(void)dev;
	return ops_host_sum_acc(acc, x, n, squares, scale, mgpu_sum_chunk);
}

const struct mgpu_ops mgpu_ops_ref = {
	.name = "ref",
	.host_memory = 1,
	.device_count = ops_host_device_count,
	.init = ops_host_init,
	.fini = ops_host_fini,
	.alloc = ops_host_alloc,
	.release = ops_host_release,
	.to_dev = ops_host_copy,
	.to_host = ops_host_copy,
	.zero = ops_host_zero,
	.sync = ops_host_sync,
	.gemm = ref_gemm,
	.nrm2 = ref_nrm2,
	.bias_act = ref_bias_act,
	.act_bwd = ref_act_bwd,
	.col_sum = ref_col_sum,
	.ln_fwd = ops_host_ln_fwd,
	.ln_bwd = ops_host_ln_bwd,
	.dropout = ref_dropout,
	.xent = ops_host_xent,
	.u8_to_f32 = ref_u8_to_f32,
	.sgd = ref_sgd,
	.adamw = ref_adamw,
	.sgd_sum = ref_sgd_sum,
	.adamw_sum = ref_adamw_sum,
	.add = ref_add,
	.emb_fwd = ref_emb_fwd,
	.emb_bwd = ref_emb_bwd,
	.attn_fwd = ref_attn_fwd,
	.attn_bwd = ref_attn_bwd,
	.heads_split = ref_heads_split,
	.heads_merge = ref_heads_merge,
	.f32_to_bf16 = ref_f32_to_bf16,
	.bf16_to_f32 = ref_bf16_to_f32,
	.f32_to_f16 = ref_f32_to_f16,
	.sum_acc = ref_sum_acc,
	/* conv nets (conv_ref.c, conv_host.h) */
	.act_fwd = mgpu_host_act_fwd,
	.conv_fwd = mgpu_ref_conv_fwd,
	.conv_bwd_data = mgpu_ref_conv_bwd_data,
	.conv_bwd_weight = mgpu_ref_conv_bwd_weight,
	.im2col = mgpu_host_im2col,
	.col2im = mgpu_host_col2im,
	.pool_fwd = mgpu_ref_pool_fwd,
	.pool_bwd = mgpu_ref_pool_bwd,
	.upsample_fwd = mgpu_host_upsample_fwd,
	.upsample_bwd = mgpu_host_upsample_bwd,
	.bn_stats = mgpu_host_bn_stats,
	.bn_fwd = mgpu_host_bn_fwd,
	.bn_bwd_stats = mgpu_host_bn_bwd_stats,
	.bn_bwd_data = mgpu_host_bn_bwd_data,
	.gn_fwd = mgpu_host_gn_fwd,
	.gn_bwd = mgpu_host_gn_bwd,
	.chan_bias = mgpu_host_chan_bias,
	.chan_sum = mgpu_host_chan_sum,
	/* losses of targets beyond a class id (loss_host.h) */
	.mse = mgpu_host_mse,
	.pix_xent = mgpu_host_pix_xent,
};
