/*
 * conv_gemm.c - convolution as im2col + GEMM over any backend's table
 * (conv_host.h): cuda's convolutions where cuDNN cannot be loaded and its
 * bf16 ones, and, run on cpu by the conformance suite, the check of the
 * im2col and col2im arithmetic (elem.h) that the cuda kernels share.
 *
 * Per sample n, with P = OH OW, Cg = C/groups, Kg = K/groups, R = Cg KH KW,
 * and every group in one strided product (row-major (r, c) is
 * column-major (c, r), ops.h):
 *   forward      col = im2col(x_n);  y_n (Kg,P) per group = W_g (Kg,R) col_g (R,P)
 *   bias         y_n (K,P) += bias (K,1) ones (1,P)
 *   data         col_g (R,P) = W_g^T dy_n,g;  dx_n = col2im(col)
 *   weights      dW_g += dy_n,g col_g^T;  db += dy_n ones
 * The device's own im2col, col2im and gemm do the work, so
 * the CPU run passes the very arguments cuBLAS gets. The columns of one
 * sample and a row of ones are allocated through the device per call
 * (the fallback keeps no state).
 *
 * Under bf16 (g->prec) every product's operands are rounded by the
 * device's f32_to_bf16 first (the weights once per call, the columns
 * and dy per sample) and the products are gemm's bf16 ones, fp32
 * results: ops.h's bf16 convolution exactly (db sums the rounded dy, by
 * a bf16 row of ones). The bias of the forward stays an fp32 product.
 */
#include "ops/conv_host.h"

#include <stdint.h> /* uint8_t, uint16_t */

#include "core/err.h"  /* MGPU_TRY */
#include "ops/loops.h" /* ops_check_conv */

struct plan {
	int P, R, Kg;           /* output pixels, rows of one group's columns, out channels per group */
	size_t xs, ys;          /* floats of one sample of x, of y */
	float *col, *ones;      /* device: one sample's columns (C KH KW, P), P ones */
	size_t col_bytes, ones_bytes;
	/* bf16 only (else NULL): the columns, the weights, a sample's dy and
	 * the ones rounded */
	uint16_t *col16, *w16, *dy16, *ones16;
	size_t col16_bytes, w16_bytes, dy16_bytes, ones16_bytes;
};

static void plan_free(struct mgpu_dev *dev, struct plan *p)
{
	mgpu_dev_free(dev, p->col, p->col_bytes);
	mgpu_dev_free(dev, p->ones, p->ones_bytes);
	mgpu_dev_free(dev, p->col16, p->col16_bytes);
	mgpu_dev_free(dev, p->w16, p->w16_bytes);
	mgpu_dev_free(dev, p->dy16, p->dy16_bytes);
	mgpu_dev_free(dev, p->ones16, p->ones16_bytes);
}

/* nbytes of device memory at *q when nbytes > 0 (sized in *have). */
static int alloc16(struct mgpu_dev *dev, uint16_t **q, size_t *have, size_t nbytes)
{
	*have = nbytes;
	return nbytes ? mgpu_dev_alloc(dev, (void **)q, nbytes) : 0;
}

/* The sizes, the columns and (with_ones) a device row of P ones, made on
 * the device (u8_to_f32 of zeroed bytes with scale 0 and shift 1), so the
 * fallback adds no host transfer to a step; under bf16 the rounded
 * operands' buffers too (w16: the weights rounded, when w is given). */
static int plan_make(struct mgpu_dev *dev, const struct mgpu_conv *g, int with_ones,
		     const float *w, struct plan *p)
{
	int bf16 = g->prec == MGPU_PREC_BF16, rc;
	size_t H = sizeof(uint16_t);

	p->P = MGPU_CONV_OUT(g->H, g->KH, g->sh, g->ph, g->dh) *
	       MGPU_CONV_OUT(g->W, g->KW, g->sw, g->pw, g->dw);
	p->R = g->C / g->groups * g->KH * g->KW;
	p->Kg = g->K / g->groups;
	p->xs = (size_t)g->C * g->H * g->W;
	p->ys = (size_t)g->K * p->P;
	p->col = p->ones = NULL;
	p->col16 = p->w16 = p->dy16 = p->ones16 = NULL;
	p->col16_bytes = p->w16_bytes = p->dy16_bytes = p->ones16_bytes = 0;
	p->col_bytes = (size_t)g->C * g->KH * g->KW * p->P * sizeof(float);
	p->ones_bytes = with_ones ? (size_t)p->P * sizeof(float) : 0;
	MGPU_TRY(mgpu_dev_alloc(dev, (void **)&p->col, p->col_bytes));
	rc = 0;
	if (with_ones) {
		rc = mgpu_dev_alloc(dev, (void **)&p->ones, p->ones_bytes);
		if (rc == 0) /* the columns hold at least P floats, so P bytes */
			rc = dev->ops->zero(dev, p->col, (size_t)p->P);
		if (rc == 0)
			rc = dev->ops->u8_to_f32(dev, p->ones, (const uint8_t *)p->col,
						 (size_t)p->P, 0.0f, 1.0f);
	}
	if (rc == 0 && bf16) {
		size_t nw = (size_t)g->K * p->R;

		rc = alloc16(dev, &p->col16, &p->col16_bytes, p->col_bytes / sizeof(float) * H);
		if (rc == 0)
			rc = alloc16(dev, &p->dy16, &p->dy16_bytes, p->ys * H);
		if (rc == 0 && w)
			rc = alloc16(dev, &p->w16, &p->w16_bytes, nw * H);
		if (rc == 0 && w)
			rc = dev->ops->f32_to_bf16(dev, p->w16, w, nw);
		if (rc == 0 && with_ones)
			rc = alloc16(dev, &p->ones16, &p->ones16_bytes, (size_t)p->P * H);
		if (rc == 0 && with_ones)
			rc = dev->ops->f32_to_bf16(dev, p->ones16, p->ones, (size_t)p->P);
	}
	if (rc < 0)
		plan_free(dev, p);
	return rc;
}

/* The product's operands as gemm takes them in g's precision: the fp32
 * tensors, or under bf16 their rounded copies (round16: rounded here
 * from src, n floats, into dst; else dst already holds them). */
static int operand(struct mgpu_dev *dev, const struct mgpu_conv *g, const float *f32,
		   uint16_t *dst, const float *src, size_t n, const void **out)
{
	if (g->prec != MGPU_PREC_BF16) {
		*out = f32;
		return 0;
	}
	if (src)
		MGPU_TRY(dev->ops->f32_to_bf16(dev, dst, src, n));
	*out = dst;
	return 0;
}

int mgpu_gemm_conv_fwd(struct mgpu_dev *dev, const struct mgpu_conv *g, float *y,
		       const float *x, const float *w, const float *bias)
{
	const struct mgpu_ops *o = dev->ops;
	const void *a, *b;
	struct plan p;
	int n, rc = 0;

	MGPU_TRY(ops_check_conv("conv_fwd", g));
	if (g->N == 0)
		return 0;
	MGPU_TRY(plan_make(dev, g, bias != NULL, w, &p));
	rc = operand(dev, g, w, p.w16, NULL, 0, &b);
	for (n = 0; n < g->N && rc == 0; n++) {
		float *yn = y + n * p.ys;

		rc = o->im2col(dev, g, p.col, x + n * p.xs);
		if (rc == 0)
			rc = operand(dev, g, p.col, p.col16, p.col, p.col_bytes / sizeof(float), &a);
		if (rc == 0)
			rc = o->gemm(dev, g->prec, MGPU_N, MGPU_N, p.P, p.Kg, p.R, 1.0f, a, p.P,
				     (long long)p.R * p.P, b, p.R, (long long)p.Kg * p.R, 0.0f, yn,
				     p.P, (long long)p.Kg * p.P, g->groups);
		if (rc == 0 && bias)
			rc = o->gemm(dev, MGPU_PREC_FP32, MGPU_N, MGPU_N, p.P, g->K, 1, 1.0f,
				     p.ones, p.P, 0, bias, 1, 0, 1.0f, yn, p.P, 0, 1);
	}
	plan_free(dev, &p);
	return rc;
}

int mgpu_gemm_conv_bwd_data(struct mgpu_dev *dev, const struct mgpu_conv *g, float *dx,
			    const float *dy, const float *w)
{
	const struct mgpu_ops *o = dev->ops;
	const void *a, *b;
	struct plan p;
	int n, rc = 0;

	MGPU_TRY(ops_check_conv("conv_bwd_data", g));
	if (g->N == 0)
		return 0;
	MGPU_TRY(plan_make(dev, g, 0, w, &p));
	rc = operand(dev, g, w, p.w16, NULL, 0, &b);
	for (n = 0; n < g->N && rc == 0; n++) {
		rc = operand(dev, g, dy + n * p.ys, p.dy16, dy + n * p.ys, p.ys, &a);
		if (rc == 0)
			rc = o->gemm(dev, g->prec, MGPU_N, MGPU_T, p.P, p.R, p.Kg, 1.0f, a, p.P,
				     (long long)p.Kg * p.P, b, p.R, (long long)p.Kg * p.R, 0.0f,
				     p.col, p.P, (long long)p.R * p.P, g->groups);
		if (rc == 0)
			rc = o->col2im(dev, g, dx + n * p.xs, p.col);
	}
	plan_free(dev, &p);
	return rc;
}

int mgpu_gemm_conv_bwd_weight(struct mgpu_dev *dev, const struct mgpu_conv *g, float *dw,
			      float *db, const float *x, const float *dy, float acc)
{
	const struct mgpu_ops *o = dev->ops;
	int R = g->C / (g->groups > 0 ? g->groups : 1) * g->KH * g->KW; /* dw's columns */
	const void *a, *b, *one;
	struct plan p;
	int n, rc = 0;
	float beta;

	MGPU_TRY(ops_check_conv("conv_bwd_weight", g));
	if (g->N == 0) { /* no products: dw = acc dw, with acc 0 clearing NaNs too */
		if (acc == 0.0f) {
			MGPU_TRY(o->zero(dev, dw, (size_t)g->K * R * sizeof *dw));
			return db ? o->zero(dev, db, (size_t)g->K * sizeof *db) : 0;
		}
		/* products with k = 0 only scale C: dw (K, R) and db (K) */
		MGPU_TRY(o->gemm(dev, MGPU_PREC_FP32, MGPU_N, MGPU_N, ops_max1(R), g->K, 0, 1.0f,
				 NULL, ops_max1(R), 0, NULL, 1, 0, acc, dw, ops_max1(R), 0, 1));
		return db ? o->gemm(dev, MGPU_PREC_FP32, MGPU_N, MGPU_N, g->K, 1, 0, 1.0f, NULL,
				    ops_max1(g->K), 0, NULL, 1, 0, acc, db, ops_max1(g->K), 0, 1)
			  : 0;
	}
	MGPU_TRY(plan_make(dev, g, db != NULL, NULL, &p));
	one = g->prec == MGPU_PREC_BF16 ? (const void *)p.ones16 : (const void *)p.ones;
	for (n = 0; n < g->N && rc == 0; n++) {
		beta = n == 0 ? acc : 1.0f;
		rc = o->im2col(dev, g, p.col, x + n * p.xs);
		if (rc == 0)
			rc = operand(dev, g, p.col, p.col16, p.col, p.col_bytes / sizeof(float), &a);
		if (rc == 0)
			rc = operand(dev, g, dy + n * p.ys, p.dy16, dy + n * p.ys, p.ys, &b);
		if (rc == 0)
			rc = o->gemm(dev, g->prec, MGPU_T, MGPU_N, p.R, p.Kg, p.P, 1.0f, a, p.P,
				     (long long)p.R * p.P, b, p.P, (long long)p.Kg * p.P, beta, dw,
				     p.R, (long long)p.Kg * p.R, g->groups);
		if (rc == 0 && db)
			rc = o->gemm(dev, g->prec, MGPU_T, MGPU_N, 1, g->K, p.P, 1.0f, one, p.P, 0,
				     b, p.P, 0, beta, db, 1, 0, 1);
	}
	plan_free(dev, &p);
	return rc;
}
