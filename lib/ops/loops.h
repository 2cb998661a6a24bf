/*
 * loops.h - internal to lib/ops: code the backends share instead of writing
 * it twice.
 *
 * Provides, as static inline functions:
 * - ops_check_*: the argument checks every backend (ref, cpu, cuda) runs
 *   before it touches memory, so all reject the same calls with the same
 *   messages and cblas/cuBLAS never see arguments they would print about.
 * - ops_host_*: for the host-memory backends (ref, cpu) only: malloc-family
 *   memory (64-byte aligned) and the row loops over elem.h (LayerNorm, xent)
 *   that have nothing to gain from a second version.
 * The checks see sizes, never device memory, except ops_check_labels, which
 * reads host labels.
 */
#ifndef MGPU_OPS_LOOPS_H
#define MGPU_OPS_LOOPS_H

#include <stddef.h> /* size_t */
#include <stdint.h> /* int32_t */
#ifndef __CUDACC__
#include <stdlib.h> /* posix_memalign, free */
#include <string.h> /* memcpy, memset */
#endif

#include "core/err.h" /* mgpu_err, MGPU_EINVAL, MGPU_ERANGE */
#include "ops/ops.h"  /* enum mgpu_trans, enum mgpu_act, struct mgpu_dev */

static inline int ops_max1(int a)
{
	return a > 1 ? a : 1;
}

/* BLAS's own checks (xerbla) for column-major gemm, and the batch's. */
static inline int ops_check_gemm(enum mgpu_prec prec, enum mgpu_trans ta, enum mgpu_trans tb,
				 int m, int n, int k, int lda, int ldb, int ldc, long long sa,
				 long long sb, long long sc, int batch)
{
	int arows = ta == MGPU_N ? m : k, brows = tb == MGPU_N ? k : n;

	if (prec != MGPU_PREC_FP32 && prec != MGPU_PREC_BF16 && prec != MGPU_PREC_FP16)
		return mgpu_err(MGPU_EINVAL, "gemm: unknown precision %d", (int)prec);
	if ((ta != MGPU_N && ta != MGPU_T) || (tb != MGPU_N && tb != MGPU_T))
		return mgpu_err(MGPU_EINVAL, "gemm: bad transpose flag %d/%d", (int)ta, (int)tb);
	if (m < 0 || n < 0 || k < 0)
		return mgpu_err(MGPU_EINVAL, "gemm: negative size m=%d n=%d k=%d", m, n, k);
	if (lda < ops_max1(arows) || ldb < ops_max1(brows) || ldc < ops_max1(m))
		return mgpu_err(MGPU_EINVAL,
				"gemm: leading dimension too small (lda=%d ldb=%d ldc=%d for "
				"m=%d n=%d k=%d trans=%c%c)",
				lda, ldb, ldc, m, n, k, ta == MGPU_N ? 'N' : 'T',
				tb == MGPU_N ? 'N' : 'T');
	if (batch < 0 || sa < 0 || sb < 0 || sc < 0)
		return mgpu_err(MGPU_EINVAL, "gemm: negative batch %d or stride (%lld, %lld, %lld)",
				batch, sa, sb, sc);
	return 0;
}

/* A (B, D) row-major tensor shape. */
static inline int ops_check_rows(const char *op, int B, int D)
{
	if (B < 0 || D < 0)
		return mgpu_err(MGPU_EINVAL, "%s: negative shape (%d, %d)", op, B, D);
	return 0;
}

static inline int ops_check_act(const char *op, enum mgpu_act act)
{
	if (act < MGPU_ACT_NONE || act > MGPU_ACT_SILU)
		return mgpu_err(MGPU_EINVAL, "%s: unknown activation %d", op, (int)act);
	return 0;
}

static inline int ops_check_xent(int B, int C, int ld)
{
	if (B < 0 || C < 0 || (B > 0 && C == 0))
		return mgpu_err(MGPU_EINVAL, "xent: bad shape (%d, %d)", B, C);
	if (ld < C)
		return mgpu_err(MGPU_EINVAL, "xent: row stride %d is below the %d columns", ld, C);
	return 0;
}

/* p == 1 drops everything; the 1 / (1 - p) scale is then never applied. */
static inline int ops_check_dropout(float p)
{
	if (!(p >= 0.0f && p <= 1.0f))
		return mgpu_err(MGPU_EINVAL, "dropout: probability %g not in [0, 1]", (double)p);
	return 0;
}

static inline int ops_check_sgd(size_t n, const float *mom, const struct mgpu_sgd_hp *hp)
{
	if (n > 0 && hp->momentum != 0.0f && !mom)
		return mgpu_err(MGPU_EINVAL, "sgd: momentum %g needs a momentum buffer",
				(double)hp->momentum);
	return 0;
}

/* Embedding shapes: ids (B,T) into a (V,D) table. */
static inline int ops_check_emb(const char *op, int B, int T, int V, int D)
{
	if (B < 0 || T < 0 || V < 0 || D < 0 || ((size_t)B * (size_t)T > 0 && V == 0))
		return mgpu_err(MGPU_EINVAL, "%s: bad shape B=%d T=%d V=%d D=%d", op, B, T, V, D);
	return 0;
}

/* Fused attention over BH (T,Dh) blocks; the head dimension is bounded
 * because the cuda kernels hold a row of a head per thread group. */
static inline int ops_check_flash(const char *op, int BH, int T, int Dh, enum mgpu_prec prec)
{
	if (prec != MGPU_PREC_FP32 && prec != MGPU_PREC_BF16)
		return mgpu_err(MGPU_EINVAL, "%s: precision %d is not fp32 or bf16", op, (int)prec);
	if (BH < 0 || T < 0)
		return mgpu_err(MGPU_EINVAL, "%s: negative shape BH=%d T=%d", op, BH, T);
	if (Dh < 1 || Dh > MGPU_ATTN_MAX_DH)
		return mgpu_err(MGPU_EINVAL, "%s: head dimension %d not in [1, %d]", op, Dh,
				MGPU_ATTN_MAX_DH);
	return 0;
}

/* (B,T,H*Dh) with rows ld apart <-> (B*H,T,Dh). */
static inline int ops_check_heads(const char *op, int ld, int B, int T, int H, int Dh)
{
	if (B < 0 || T < 0 || H < 0 || Dh < 0)
		return mgpu_err(MGPU_EINVAL, "%s: negative shape B=%d T=%d H=%d Dh=%d", op, B, T,
				H, Dh);
	if ((long long)ld < (long long)ops_max1(H * Dh))
		return mgpu_err(MGPU_EINVAL, "%s: row stride %d below H*Dh = %d", op, ld, H * Dh);
	return 0;
}

/* A convolution's geometry (ops.h struct mgpu_conv): sizes positive (N
 * may be 0), groups dividing C and K, an output of at least one pixel,
 * and index products that fit an int. */
static inline int ops_check_conv(const char *op, const struct mgpu_conv *g)
{
	long long span_h = (long long)g->dh * (g->KH - 1) + 1, span_w = (long long)g->dw * (g->KW - 1) + 1;

	if (g->N < 0 || g->C < 1 || g->H < 1 || g->W < 1 || g->K < 1 || g->KH < 1 ||
	    g->KW < 1 || g->sh < 1 || g->sw < 1 || g->ph < 0 || g->pw < 0 || g->dh < 1 ||
	    g->dw < 1 || g->groups < 1)
		return mgpu_err(MGPU_EINVAL,
				"%s: bad geometry N=%d C=%d H=%d W=%d K=%d kernel %dx%d stride "
				"%d,%d pad %d,%d dilation %d,%d groups %d",
				op, g->N, g->C, g->H, g->W, g->K, g->KH, g->KW, g->sh, g->sw,
				g->ph, g->pw, g->dh, g->dw, g->groups);
	if (g->C % g->groups || g->K % g->groups)
		return mgpu_err(MGPU_EINVAL, "%s: groups %d do not divide C=%d and K=%d", op,
				g->groups, g->C, g->K);
	if (g->H + 2LL * g->ph < span_h || g->W + 2LL * g->pw < span_w)
		return mgpu_err(MGPU_EINVAL, "%s: kernel %dx%d (dilation %d,%d) wider than the "
				"padded %dx%d input", op, g->KH, g->KW, g->dh, g->dw, g->H, g->W);
	if (g->prec != MGPU_PREC_FP32 && g->prec != MGPU_PREC_BF16)
		return mgpu_err(MGPU_EINVAL, "%s: precision %s: a convolution runs in fp32 or "
				"bf16", op, mgpu_prec_name(g->prec));
	if ((long long)g->C * g->KH * g->KW * g->H * g->W > 0x7fffffffLL ||
	    (long long)g->K * g->H * g->W > 0x7fffffffLL)
		return mgpu_err(MGPU_EINVAL, "%s: one sample too large", op);
	return 0;
}

/* Pooling: ph <= KH / 2 as torch requires, so every window holds a pixel. */
static inline int ops_check_pool(const char *op, const struct mgpu_pool2d *g)
{
	if (g->N < 0 || g->C < 0 || g->H < 1 || g->W < 1 || g->KH < 1 || g->KW < 1 ||
	    g->sh < 1 || g->sw < 1 || g->ph < 0 || g->pw < 0 || 2 * g->ph > g->KH ||
	    2 * g->pw > g->KW || g->KH > g->H + 2 * g->ph || g->KW > g->W + 2 * g->pw ||
	    (g->mode != MGPU_POOL_MAX && g->mode != MGPU_POOL_AVG &&
	     g->mode != MGPU_POOL_AVG_EXCL))
		return mgpu_err(MGPU_EINVAL,
				"%s: bad geometry N=%d C=%d H=%d W=%d kernel %dx%d stride %d,%d "
				"pad %d,%d mode %d",
				op, g->N, g->C, g->H, g->W, g->KH, g->KW, g->sh, g->sw, g->ph,
				g->pw, (int)g->mode);
	return 0;
}

static inline int ops_check_upsample(const char *op, int N, int C, int H, int W, int sh, int sw)
{
	if (N < 0 || C < 0 || H < 0 || W < 0 || sh < 1 || sw < 1)
		return mgpu_err(MGPU_EINVAL, "%s: bad shape N=%d C=%d H=%d W=%d scale %d,%d", op,
				N, C, H, W, sh, sw);
	return 0;
}

/* Training needs two values per channel for the unbiased running variance
 * (torch: "Expected more than 1 value per channel when training"). */
static inline int ops_check_bn(const char *op, const struct mgpu_bn *bn)
{
	if (bn->N < 0 || bn->C < 0 || bn->HW < 0 || !(bn->eps >= 0.0f))
		return mgpu_err(MGPU_EINVAL, "%s: bad shape N=%d C=%d HW=%d eps %g", op, bn->N,
				bn->C, bn->HW, (double)bn->eps);
	if (bn->train && !(bn->count > 1.0))
		return mgpu_err(MGPU_EINVAL, "%s: training needs more than one value per "
				"channel (count %g)", op, bn->count);
	return 0;
}

static inline int ops_check_chan(const char *op, int N, int C, int HW)
{
	if (N < 0 || C < 0 || HW < 0)
		return mgpu_err(MGPU_EINVAL, "%s: negative shape N=%d C=%d HW=%d", op, N, C, HW);
	return 0;
}

static inline int ops_check_gn(const char *op, int N, int C, int HW, int G)
{
	if (N < 0 || C < 1 || HW < 1 || G < 1 || C % G)
		return mgpu_err(MGPU_EINVAL, "%s: bad shape N=%d C=%d HW=%d groups %d", op, N, C,
				HW, G);
	return 0;
}

#ifndef __CUDACC__
/* Host labels only (ref, cpu): a label outside [0, C) is an error. */
static inline int ops_check_labels(const int32_t *labels, int B, int C)
{
	int i;

	for (i = 0; i < B; i++)
		if (labels[i] < 0 || labels[i] >= C)
			return mgpu_err(MGPU_ERANGE, "xent: label %d of row %d not in [0, %d)",
					(int)labels[i], i, C);
	return 0;
}

#include "ops/elem.h" /* mgpu_ln_row_fwd, mgpu_ln_row_bwd, mgpu_ln_col_bwd, mgpu_xent_row */

/* Host ids only (ref, cpu): a token id outside [0, V) is an error. */
static inline int ops_check_ids(const int32_t *ids, size_t n, int V)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (ids[i] < 0 || ids[i] >= V)
			return mgpu_err(MGPU_ERANGE, "emb_fwd: token id %d at %zu not in [0, %d)",
					(int)ids[i], i, V);
	return 0;
}

/* sum_acc (ops.h) on a host backend: acc += scale * the sum of the
 * chunks' sums in order, each chunk of MGPU_SUM_CHUNK elements summed by
 * chunk_sum (elem.h's order: mgpu_sum_chunk itself, or a faster loop
 * giving its bits). */
static inline int ops_host_sum_acc(double *acc, const float *x, size_t n, int squares,
				   double scale,
				   double (*chunk_sum)(const float *, size_t, int))
{
	double t = 0.0;
	size_t off, len;

	if (n == 0)
		return 0;
	for (off = 0; off < n; off += len) {
		len = n - off < MGPU_SUM_CHUNK ? n - off : MGPU_SUM_CHUNK;
		t += chunk_sum(x + off, len, squares);
	}
	*acc += scale * t;
	return 0;
}

/* Host backends: one device, index 0. */
static inline int ops_host_device_count(int *n, char *why, size_t whylen)
{
	*n = 1;
	if (whylen)
		why[0] = '\0';
	return 0;
}

static inline int ops_host_init(struct mgpu_dev *dev, int index)
{
	(void)dev;
	if (index != 0)
		return mgpu_err(MGPU_EINVAL, "host backend has one device, not index %d", index);
	return 0;
}

static inline void ops_host_fini(struct mgpu_dev *dev)
{
	(void)dev;
}

/* 64-byte aligned (a cache line, any SIMD width). */
static inline int ops_host_alloc(struct mgpu_dev *dev, void **p, size_t nbytes)
{
	(void)dev;
	if (posix_memalign(p, 64, nbytes ? nbytes : 1) != 0) {
		*p = NULL;
		return mgpu_err(MGPU_ENOMEM, "out of host memory allocating %zu bytes", nbytes);
	}
	return 0;
}

static inline void ops_host_release(struct mgpu_dev *dev, void *p)
{
	(void)dev;
	free(p);
}

static inline int ops_host_copy(struct mgpu_dev *dev, void *dst, const void *src, size_t nbytes)
{
	(void)dev;
	if (nbytes)
		memcpy(dst, src, nbytes);
	return 0;
}

static inline int ops_host_zero(struct mgpu_dev *dev, void *p, size_t nbytes)
{
	(void)dev;
	if (nbytes)
		memset(p, 0, nbytes);
	return 0;
}

static inline int ops_host_sync(struct mgpu_dev *dev)
{
	(void)dev;
	return 0;
}

/* X, Y (B,D); mean, rstd (B). */
static inline int ops_host_ln_fwd(struct mgpu_dev *dev, float *Y, float *mean, float *rstd,
				  const float *X, const float *gamma, const float *beta,
				  int B, int D, float eps)
{
	size_t off;
	int i;

	(void)dev;
	MGPU_TRY(ops_check_rows("ln_fwd", B, D));
	if (D == 0)
		return 0;
	for (i = 0; i < B; i++) {
		off = (size_t)i * (size_t)D;
		mgpu_ln_row_fwd(X + off, D, gamma, beta, eps, Y + off, &mean[i], &rstd[i]);
	}
	return 0;
}

/* dY, X, dX (B,D); mean, rstd (B); gamma, dgamma, dbeta (D). */
static inline int ops_host_ln_bwd(struct mgpu_dev *dev, float *dX, float *dgamma,
				  float *dbeta, const float *dY, const float *X,
				  const float *mean, const float *rstd, const float *gamma,
				  int B, int D, float acc)
{
	size_t off;
	int i, j;

	(void)dev;
	MGPU_TRY(ops_check_rows("ln_bwd", B, D));
	if (D == 0)
		return 0;
	for (i = 0; i < B; i++) {
		off = (size_t)i * (size_t)D;
		mgpu_ln_row_bwd(dY + off, X + off, mean[i], rstd[i], gamma, D, dX + off);
	}
	for (j = 0; j < D; j++)
		mgpu_ln_col_bwd(dY, X, mean, rstd, B, D, j, acc, dgamma, dbeta);
	return 0;
}

/* logits, dlogits (B,C) with row stride ld; labels, row_loss, row_correct (B). */
static inline int ops_host_xent(struct mgpu_dev *dev, float *dlogits, float *row_loss,
				float *row_correct, const float *logits,
				const int32_t *labels, int B, int C, int ld, float grad_scale)
{
	size_t off;
	int i;

	(void)dev;
	MGPU_TRY(ops_check_xent(B, C, ld));
	MGPU_TRY(ops_check_labels(labels, B, C));
	for (i = 0; i < B; i++) {
		off = (size_t)i * (size_t)ld;
		mgpu_xent_row(logits + off, C, labels[i], grad_scale,
			      dlogits ? dlogits + off : NULL, &row_loss[i], &row_correct[i]);
	}
	return 0;
}
#endif

#endif
