/*
 * conv_gemm.c - convolution as im2col + GEMM over any backend's table
 * (conv_host.h): cuda's convolutions where cuDNN cannot be loaded, and,
 * run on cpu by the conformance suite, the check of the im2col and col2im
 * arithmetic (elem.h) that the cuda kernels share.
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
 */
#include "ops/conv_host.h"

#include <stdint.h> /* uint8_t */

#include "core/err.h"  /* MGPU_TRY */
#include "ops/loops.h" /* ops_check_conv */

struct plan {
	int P, R, Kg;           /* output pixels, rows of one group's columns, out channels per group */
	size_t xs, ys;          /* floats of one sample of x, of y */
	float *col, *ones;      /* device: one sample's columns (C KH KW, P), P ones */
	size_t col_bytes, ones_bytes;
};

static void plan_free(struct mgpu_dev *dev, struct plan *p)
{
	mgpu_dev_free(dev, p->col, p->col_bytes);
	mgpu_dev_free(dev, p->ones, p->ones_bytes);
}

/* The sizes, the columns and (with_ones) a device row of P ones, made on
 * the device (u8_to_f32 of zeroed bytes with scale 0 and shift 1), so the
 * fallback adds no host transfer to a step. */
static int plan_make(struct mgpu_dev *dev, const struct mgpu_conv *g, int with_ones,
		     struct plan *p)
{
	int rc;

	p->P = MGPU_CONV_OUT(g->H, g->KH, g->sh, g->ph, g->dh) *
	       MGPU_CONV_OUT(g->W, g->KW, g->sw, g->pw, g->dw);
	p->R = g->C / g->groups * g->KH * g->KW;
	p->Kg = g->K / g->groups;
	p->xs = (size_t)g->C * g->H * g->W;
	p->ys = (size_t)g->K * p->P;
	p->col = p->ones = NULL;
	p->col_bytes = (size_t)g->C * g->KH * g->KW * p->P * sizeof(float);
	p->ones_bytes = with_ones ? (size_t)p->P * sizeof(float) : 0;
	MGPU_TRY(mgpu_dev_alloc(dev, (void **)&p->col, p->col_bytes));
	if (!with_ones)
		return 0;
	rc = mgpu_dev_alloc(dev, (void **)&p->ones, p->ones_bytes);
	if (rc == 0) /* the columns hold at least P floats, so P bytes */
		rc = dev->ops->zero(dev, p->col, (size_t)p->P);
	if (rc == 0)
		rc = dev->ops->u8_to_f32(dev, p->ones, (const uint8_t *)p->col, (size_t)p->P, 0.0f,
					 1.0f);
	if (rc < 0)
		plan_free(dev, p);
	return rc;
}

int mgpu_gemm_conv_fwd(struct mgpu_dev *dev, const struct mgpu_conv *g, float *y,
		       const float *x, const float *w, const float *bias)
{
	const struct mgpu_ops *o = dev->ops;
	struct plan p;
	int n, rc = 0;

	MGPU_TRY(ops_check_conv("conv_fwd", g));
	if (g->N == 0)
		return 0;
	MGPU_TRY(plan_make(dev, g, bias != NULL, &p));
	for (n = 0; n < g->N && rc == 0; n++) {
		float *yn = y + n * p.ys;

		rc = o->im2col(dev, g, p.col, x + n * p.xs);
		if (rc == 0)
			rc = o->gemm(dev, MGPU_PREC_FP32, MGPU_N, MGPU_N, p.P, p.Kg, p.R, 1.0f,
				     p.col, p.P, (long long)p.R * p.P, w, p.R,
				     (long long)p.Kg * p.R, 0.0f, yn, p.P, (long long)p.Kg * p.P,
				     g->groups);
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
	struct plan p;
	int n, rc = 0;

	MGPU_TRY(ops_check_conv("conv_bwd_data", g));
	if (g->N == 0)
		return 0;
	MGPU_TRY(plan_make(dev, g, 0, &p));
	for (n = 0; n < g->N && rc == 0; n++) {
		rc = o->gemm(dev, MGPU_PREC_FP32, MGPU_N, MGPU_T, p.P, p.R, p.Kg, 1.0f,
			     dy + n * p.ys, p.P, (long long)p.Kg * p.P, w, p.R,
			     (long long)p.Kg * p.R, 0.0f, p.col, p.P, (long long)p.R * p.P,
			     g->groups);
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
	MGPU_TRY(plan_make(dev, g, db != NULL, &p));
	for (n = 0; n < g->N && rc == 0; n++) {
		beta = n == 0 ? acc : 1.0f;
		rc = o->im2col(dev, g, p.col, x + n * p.xs);
		if (rc == 0)
			rc = o->gemm(dev, MGPU_PREC_FP32, MGPU_T, MGPU_N, p.R, p.Kg, p.P, 1.0f,
				     p.col, p.P, (long long)p.R * p.P, dy + n * p.ys, p.P,
				     (long long)p.Kg * p.P, beta, dw, p.R, (long long)p.Kg * p.R,
				     g->groups);
		if (rc == 0 && db)
			rc = o->gemm(dev, MGPU_PREC_FP32, MGPU_T, MGPU_N, 1, g->K, p.P, 1.0f,
				     p.ones, p.P, 0, dy + n * p.ys, p.P, 0, beta, db, 1, 0, 1);
	}
	plan_free(dev, &p);
	return rc;
}
