/*
 * conv_ref.c - ref's convolutional-network ops (conv_host.h): the
 * definitions every other backend is checked against.
 *
 * The convolutions are the formula of ops.h as direct loops, scattering
 * products into double accumulators: nothing of the im2col arithmetic
 * (elem.h) is used, so comparing the im2col convolution against these
 * checks it. Under bf16 (g->prec) the loops read copies of x, w and dy
 * rounded by elem.h's mgpu_bf16_round: the definition of a bf16
 * convolution (exact products of rounded operands, summed in double).
 * Pooling, upsampling and the normalisations are loops over elem.h's
 * functions, shared with cpu (conv_host.h). Host memory only.
 */
#include "ops/conv_host.h"

#include <stdlib.h> /* calloc, free */

#include "core/err.h"  /* mgpu_err, MGPU_TRY */
#include "ops/elem.h"  /* mgpu_pool_elem, mgpu_bn_*, mgpu_gn_bwd_elem, ... */
#include "ops/loops.h" /* ops_check_conv, ops_check_pool, ... */

struct dims {
	int OH, OW, Cg, Kg; /* output extent, channels per group in and out */
};

static struct dims dims_of(const struct mgpu_conv *g)
{
	struct dims d;

	d.OH = MGPU_CONV_OUT(g->H, g->KH, g->sh, g->ph, g->dh);
	d.OW = MGPU_CONV_OUT(g->W, g->KW, g->sw, g->pw, g->dw);
	d.Cg = g->C / g->groups;
	d.Kg = g->K / g->groups;
	return d;
}

static double *dzeros(size_t n)
{
	double *p = calloc(n ? n : 1, sizeof *p);

	if (!p)
		mgpu_err(MGPU_ENOMEM, "ref conv: out of memory (%zu doubles)", n);
	return p;
}

/* The operand p (n floats) as the convolution reads it: p itself in
 * fp32, under bf16 a rounded copy in *tmp (freed by the caller). */
static int operand(const struct mgpu_conv *g, const float *p, size_t n, float **tmp,
		   const float **out)
{
	size_t i;

	*tmp = NULL;
	*out = p;
	if (g->prec != MGPU_PREC_BF16)
		return 0;
	if (!(*tmp = malloc((n ? n : 1) * sizeof **tmp)))
		return mgpu_err(MGPU_ENOMEM, "ref conv: out of memory (%zu floats)", n);
	for (i = 0; i < n; i++)
		(*tmp)[i] = mgpu_bf16_round(p[i]);
	*out = *tmp;
	return 0;
}

/* x, w and y's element counts of g. */
static void counts(const struct mgpu_conv *g, const struct dims *d, size_t *nx, size_t *nw,
		   size_t *ny)
{
	*nx = (size_t)g->N * g->C * g->H * g->W;
	*nw = (size_t)g->K * d->Cg * g->KH * g->KW;
	*ny = (size_t)g->N * g->K * d->OH * d->OW;
}

/*
 * Visit every product of the convolution: for output (n, k, oh, ow) and
 * kernel tap (c', kh, kw) inside the image, call back with the flat
 * indices of x, w and y. One loop nest defines all three directions.
 */
#define FOR_EACH_TAP(g, d, ix, iw_, iy, BODY)                                              \
	for (int n_ = 0; n_ < (g)->N; n_++)                                                \
		for (int k_ = 0; k_ < (g)->K; k_++)                                        \
			for (int oh_ = 0; oh_ < (d).OH; oh_++)                             \
				for (int ow_ = 0; ow_ < (d).OW; ow_++) {                   \
					size_t iy = (((size_t)n_ * (g)->K + k_) * (d).OH + oh_) * \
						    (d).OW + ow_;                          \
					int grp_ = k_ / (d).Kg;                            \
					for (int c_ = 0; c_ < (d).Cg; c_++)                \
						for (int kh_ = 0; kh_ < (g)->KH; kh_++)    \
							for (int kw_ = 0; kw_ < (g)->KW; kw_++) { \
								int ih_ = oh_ * (g)->sh - (g)->ph + kh_ * (g)->dh; \
								int iw2_ = ow_ * (g)->sw - (g)->pw + kw_ * (g)->dw; \
								if (ih_ < 0 || ih_ >= (g)->H || iw2_ < 0 || iw2_ >= (g)->W) \
									continue;          \
								size_t ix = (((size_t)n_ * (g)->C + grp_ * (d).Cg + c_) * (g)->H + ih_) * (g)->W + iw2_; \
								size_t iw_ = (((size_t)k_ * (d).Cg + c_) * (g)->KH + kh_) * (g)->KW + kw_; \
								BODY;              \
							}                          \
				}

int mgpu_ref_conv_fwd(struct mgpu_dev *dev, const struct mgpu_conv *g, float *y, const float *x,
		      const float *w, const float *bias)
{
	float *tx = NULL, *tw = NULL;
	size_t nx, nw, ny, i;
	struct dims d;
	double *acc = NULL;
	int rc;

	(void)dev;
	MGPU_TRY(ops_check_conv("conv_fwd", g));
	d = dims_of(g);
	counts(g, &d, &nx, &nw, &ny);
	rc = operand(g, x, nx, &tx, &x);
	if (rc == 0)
		rc = operand(g, w, nw, &tw, &w);
	if (rc == 0 && !(acc = dzeros(ny)))
		rc = MGPU_ENOMEM;
	if (rc == 0) {
		FOR_EACH_TAP(g, d, ix, iw, iy, acc[iy] += (double)w[iw] * x[ix]);
		for (i = 0; i < ny; i++)
			y[i] = (float)(acc[i] +
				       (bias ? bias[i / ((size_t)d.OH * d.OW) % g->K] : 0.0));
	}
	free(acc);
	free(tx);
	free(tw);
	return rc;
}

int mgpu_ref_conv_bwd_data(struct mgpu_dev *dev, const struct mgpu_conv *g, float *dx,
			   const float *dy, const float *w)
{
	float *tdy = NULL, *tw = NULL;
	size_t nx, nw, ny, i;
	struct dims d;
	double *acc = NULL;
	int rc;

	(void)dev;
	MGPU_TRY(ops_check_conv("conv_bwd_data", g));
	d = dims_of(g);
	counts(g, &d, &nx, &nw, &ny);
	rc = operand(g, dy, ny, &tdy, &dy);
	if (rc == 0)
		rc = operand(g, w, nw, &tw, &w);
	if (rc == 0 && !(acc = dzeros(nx)))
		rc = MGPU_ENOMEM;
	if (rc == 0) {
		FOR_EACH_TAP(g, d, ix, iw, iy, acc[ix] += (double)w[iw] * dy[iy]);
		for (i = 0; i < nx; i++)
			dx[i] = (float)acc[i];
	}
	free(acc);
	free(tdy);
	free(tw);
	return rc;
}

int mgpu_ref_conv_bwd_weight(struct mgpu_dev *dev, const struct mgpu_conv *g, float *dw,
			     float *db, const float *x, const float *dy, float acc)
{
	float *tx = NULL, *tdy = NULL;
	size_t nx, nw, ny, i, P;
	struct dims d;
	double *sw = NULL, *sb = NULL;
	int rc;

	(void)dev;
	MGPU_TRY(ops_check_conv("conv_bwd_weight", g));
	d = dims_of(g);
	counts(g, &d, &nx, &nw, &ny);
	P = (size_t)d.OH * d.OW;
	rc = operand(g, x, nx, &tx, &x);
	if (rc == 0)
		rc = operand(g, dy, ny, &tdy, &dy);
	if (rc == 0) {
		sw = dzeros(nw);
		sb = dzeros((size_t)g->K);
		if (!sw || !sb)
			rc = MGPU_ENOMEM;
	}
	if (rc == 0) {
		FOR_EACH_TAP(g, d, ix, iw, iy, sw[iw] += (double)x[ix] * dy[iy]);
		for (i = 0; i < ny; i++)
			sb[i / P % (size_t)g->K] += dy[i];
		for (i = 0; i < nw; i++)
			mgpu_acc_store(&dw[i], acc, (float)sw[i]);
		for (i = 0; db && i < (size_t)g->K; i++)
			mgpu_acc_store(&db[i], acc, (float)sb[i]);
	}
	free(sw);
	free(sb);
	free(tx);
	free(tdy);
	return rc;
}

int mgpu_ref_pool_fwd(struct mgpu_dev *dev, const struct mgpu_pool2d *g, float *y,
		      const float *x)
{
	int OH, OW, oh, ow, arg;
	size_t p, planes;

	(void)dev;
	MGPU_TRY(ops_check_pool("pool_fwd", g));
	OH = MGPU_CONV_OUT(g->H, g->KH, g->sh, g->ph, 1);
	OW = MGPU_CONV_OUT(g->W, g->KW, g->sw, g->pw, 1);
	planes = (size_t)g->N * g->C;
	for (p = 0; p < planes; p++)
		for (oh = 0; oh < OH; oh++)
			for (ow = 0; ow < OW; ow++)
				y[(p * OH + oh) * OW + ow] =
					mgpu_pool_elem(x + p * g->H * g->W, g, oh, ow, &arg);
	return 0;
}

int mgpu_ref_pool_bwd(struct mgpu_dev *dev, const struct mgpu_pool2d *g, float *dx,
		      const float *dy, const float *x)
{
	int OH, OW, h, w;
	size_t p, planes, hw;

	(void)dev;
	MGPU_TRY(ops_check_pool("pool_bwd", g));
	OH = MGPU_CONV_OUT(g->H, g->KH, g->sh, g->ph, 1);
	OW = MGPU_CONV_OUT(g->W, g->KW, g->sw, g->pw, 1);
	planes = (size_t)g->N * g->C;
	hw = (size_t)g->H * g->W;
	for (p = 0; p < planes; p++)
		for (h = 0; h < g->H; h++)
			for (w = 0; w < g->W; w++)
				dx[p * hw + (size_t)h * g->W + w] = mgpu_pool_bwd_elem(
					x + p * hw, dy + p * OH * OW, g, OH, OW, h, w);
	return 0;
}

/* ---- the light ops, shared with cpu ----------------------------------- */

int mgpu_host_act_fwd(struct mgpu_dev *dev, enum mgpu_act act, float *Y, const float *X,
		      size_t n)
{
	size_t i;

	(void)dev;
	MGPU_TRY(ops_check_act("act_fwd", act));
	for (i = 0; i < n; i++)
		Y[i] = mgpu_act_f(act, X[i]);
	return 0;
}

int mgpu_host_im2col(struct mgpu_dev *dev, const struct mgpu_conv *g, float *col,
		     const float *x)
{
	int OW = MGPU_CONV_OUT(g->W, g->KW, g->sw, g->pw, g->dw);
	size_t rows, P, r, q;

	(void)dev;
	MGPU_TRY(ops_check_conv("im2col", g));
	rows = (size_t)g->C * g->KH * g->KW;
	P = (size_t)MGPU_CONV_OUT(g->H, g->KH, g->sh, g->ph, g->dh) * OW;
	for (r = 0; r < rows; r++)
		for (q = 0; q < P; q++)
			col[r * P + q] = mgpu_im2col_elem(x, g, OW, r, q);
	return 0;
}

int mgpu_host_col2im(struct mgpu_dev *dev, const struct mgpu_conv *g, float *dx,
		     const float *col)
{
	int OH = MGPU_CONV_OUT(g->H, g->KH, g->sh, g->ph, g->dh);
	int OW = MGPU_CONV_OUT(g->W, g->KW, g->sw, g->pw, g->dw);
	int c, h, w;

	(void)dev;
	MGPU_TRY(ops_check_conv("col2im", g));
	for (c = 0; c < g->C; c++)
		for (h = 0; h < g->H; h++)
			for (w = 0; w < g->W; w++)
				dx[((size_t)c * g->H + h) * g->W + w] =
					mgpu_col2im_elem(col, g, OH, OW, c, h, w);
	return 0;
}

int mgpu_host_upsample_fwd(struct mgpu_dev *dev, int N, int C, int H, int W, int sh, int sw,
			   float *y, const float *x)
{
	size_t planes = (size_t)N * C, p, OW = (size_t)W * sw;
	int h, w;

	(void)dev;
	MGPU_TRY(ops_check_upsample("upsample_fwd", N, C, H, W, sh, sw));
	for (p = 0; p < planes; p++)
		for (h = 0; h < H * sh; h++)
			for (w = 0; w < W * sw; w++)
				y[(p * H * sh + h) * OW + w] =
					x[(p * H + h / sh) * W + w / sw];
	return 0;
}

int mgpu_host_upsample_bwd(struct mgpu_dev *dev, int N, int C, int H, int W, int sh, int sw,
			   float *dx, const float *dy)
{
	size_t planes = (size_t)N * C, p, hw = (size_t)H * W;
	int h, w;

	(void)dev;
	MGPU_TRY(ops_check_upsample("upsample_bwd", N, C, H, W, sh, sw));
	for (p = 0; p < planes; p++)
		for (h = 0; h < H; h++)
			for (w = 0; w < W; w++)
				dx[p * hw + (size_t)h * W + w] =
					mgpu_upsample_bwd_elem(dy + p * hw * sh * sw, W, sh, sw, h, w);
	return 0;
}

int mgpu_host_chan_bias(struct mgpu_dev *dev, int N, int C, int HW, float *y,
			const float *bias)
{
	size_t p, i;

	(void)dev;
	MGPU_TRY(ops_check_chan("chan_bias", N, C, HW));
	for (p = 0; p < (size_t)N * C; p++)
		for (i = 0; i < (size_t)HW; i++)
			y[p * HW + i] += bias[p % (size_t)C];
	return 0;
}

int mgpu_host_chan_sum(struct mgpu_dev *dev, int N, int C, int HW, float *db, const float *dy,
		       float acc)
{
	double s;
	int c, n, i;

	(void)dev;
	MGPU_TRY(ops_check_chan("chan_sum", N, C, HW));
	for (c = 0; c < C; c++) {
		s = 0.0;
		for (n = 0; n < N; n++)
			for (i = 0; i < HW; i++)
				s += dy[((size_t)n * C + c) * HW + i];
		mgpu_acc_store(&db[c], acc, (float)s);
	}
	return 0;
}

/* ---- BatchNorm: per channel c, the N planes of HW values ------------- */

static const float *plane(const float *x, const struct mgpu_bn *bn, int n, int c)
{
	return x + ((size_t)n * bn->C + c) * bn->HW;
}

int mgpu_host_bn_stats(struct mgpu_dev *dev, const struct mgpu_bn *bn, float *stats,
		       const float *x, const float *shift)
{
	double s1, s2, v;
	const float *p;
	int c, n, i;

	(void)dev;
	MGPU_TRY(ops_check_bn("bn_stats", bn));
	for (c = 0; c < bn->C; c++) {
		s1 = s2 = 0.0;
		for (n = 0; n < bn->N; n++) {
			p = plane(x, bn, n, c);
			for (i = 0; i < bn->HW; i++) {
				v = (double)p[i] - (shift ? shift[c] : 0.0f);
				s1 += v;
				s2 += v * v;
			}
		}
		stats[c] = (float)s1;
		stats[bn->C + c] = (float)s2;
	}
	return 0;
}

/* The per-element passes go in blocks of BLK values, each read whole
 * before it is written: the outputs may be the inputs (in-place norms),
 * and a plain loop's vector code is guarded by an overlap test that such
 * calls fail, leaving them the scalar copy (a tenth of a ResNet step on
 * the cpu backend, which shares these loops). The arithmetic per element
 * is elem.h's either way. */
enum { BLK = 8 };

static void bn_fwd_plane(float *q, const float *p, int HW, float m, float r, float g, float b)
{
	float t[BLK];
	int i = 0, k;

	for (; i + BLK <= HW; i += BLK) {
		for (k = 0; k < BLK; k++)
			t[k] = mgpu_ln_fwd_elem(p[i + k], m, r, g, b);
		for (k = 0; k < BLK; k++)
			q[i + k] = t[k];
	}
	for (; i < HW; i++)
		q[i] = mgpu_ln_fwd_elem(p[i], m, r, g, b);
}

static void bn_bwd_plane(float *o, const float *dy, const float *x, int HW, float m, float r,
			 float g, float mdy, float mdyx, int train)
{
	float t[BLK];
	int i = 0, k;

	for (; i + BLK <= HW; i += BLK) {
		for (k = 0; k < BLK; k++)
			t[k] = mgpu_bn_bwd_elem(dy[i + k], x[i + k], m, r, g, mdy, mdyx, train);
		for (k = 0; k < BLK; k++)
			o[i + k] = t[k];
	}
	for (; i < HW; i++)
		o[i] = mgpu_bn_bwd_elem(dy[i], x[i], m, r, g, mdy, mdyx, train);
}

int mgpu_host_bn_fwd(struct mgpu_dev *dev, const struct mgpu_bn *bn, float *y, float *mean,
		     float *rstd, const float *x, const float *stats, const float *shift,
		     const float *gamma, const float *beta, float *running_mean,
		     float *running_var)
{
	float m, var, r;
	int c, n;

	(void)dev;
	MGPU_TRY(ops_check_bn("bn_fwd", bn));
	for (c = 0; c < bn->C; c++) {
		if (bn->train) {
			mgpu_bn_moments(stats[c], stats[bn->C + c], bn->count,
					shift ? shift[c] : 0.0f, bn->eps, &m, &var, &r);
			running_mean[c] = mgpu_bn_running(running_mean[c], m, bn->momentum);
			running_var[c] = mgpu_bn_running(
				running_var[c], (float)(var * bn->count / (bn->count - 1.0)),
				bn->momentum);
		} else {
			mgpu_bn_moments(0.0f, running_var[c], 1.0, running_mean[c], bn->eps, &m,
					&var, &r);
		}
		mean[c] = m;
		rstd[c] = r;
		for (n = 0; n < bn->N; n++) {
			const float *p = plane(x, bn, n, c);

			bn_fwd_plane(y + (p - x), p, bn->HW, m, r, gamma[c], beta[c]);
		}
	}
	return 0;
}

int mgpu_host_bn_bwd_stats(struct mgpu_dev *dev, const struct mgpu_bn *bn, float *dstats,
			   float *dgamma, float *dbeta, const float *dy, const float *x,
			   const float *mean, const float *rstd, float acc)
{
	double s1, s2;
	int c, n, i;

	(void)dev;
	MGPU_TRY(ops_check_bn("bn_bwd_stats", bn));
	for (c = 0; c < bn->C; c++) {
		s1 = s2 = 0.0;
		for (n = 0; n < bn->N; n++) {
			const float *p = plane(x, bn, n, c), *q = dy + (p - x);

			for (i = 0; i < bn->HW; i++) {
				s1 += q[i];
				s2 += (double)q[i] * ((p[i] - mean[c]) * rstd[c]);
			}
		}
		dstats[c] = (float)s1;
		dstats[bn->C + c] = (float)s2;
		mgpu_acc_store(&dbeta[c], acc, (float)s1);
		mgpu_acc_store(&dgamma[c], acc, (float)s2);
	}
	return 0;
}

int mgpu_host_bn_bwd_data(struct mgpu_dev *dev, const struct mgpu_bn *bn, float *dx,
			  const float *dy, const float *x, const float *mean, const float *rstd,
			  const float *gamma, const float *dstats)
{
	float mdy = 0.0f, mdyx = 0.0f;
	int c, n;

	(void)dev;
	MGPU_TRY(ops_check_bn("bn_bwd_data", bn));
	for (c = 0; c < bn->C; c++) {
		if (bn->train) {
			mdy = (float)(dstats[c] / bn->count);
			mdyx = (float)(dstats[bn->C + c] / bn->count);
		}
		for (n = 0; n < bn->N; n++) {
			const float *p = plane(x, bn, n, c);

			bn_bwd_plane(dx + (p - x), dy + (p - x), p, bn->HW, mean[c], rstd[c],
				     gamma[c], mdy, mdyx, bn->train);
		}
	}
	return 0;
}

/* ---- GroupNorm: a group of one sample is M = C/G HW contiguous values - */

int mgpu_host_gn_fwd(struct mgpu_dev *dev, int N, int C, int HW, int G, float *y, float *mean,
		     float *rstd, const float *x, const float *gamma, const float *beta,
		     float eps)
{
	size_t M, r, i, off;
	double s, d;
	float m;
	int c;

	(void)dev;
	MGPU_TRY(ops_check_gn("gn_fwd", N, C, HW, G));
	M = (size_t)(C / G) * HW;
	for (r = 0; r < (size_t)N * G; r++) {
		off = r * M;
		s = 0.0;
		for (i = 0; i < M; i++)
			s += x[off + i];
		m = (float)(s / (double)M);
		s = 0.0;
		for (i = 0; i < M; i++) {
			d = (double)x[off + i] - m;
			s += d * d;
		}
		mean[r] = m;
		rstd[r] = (float)(1.0 / sqrt(s / (double)M + (double)eps));
		for (i = 0; i < M; i++) {
			c = (int)(r % (size_t)G) * (C / G) + (int)(i / (size_t)HW);
			y[off + i] = mgpu_ln_fwd_elem(x[off + i], m, rstd[r], gamma[c], beta[c]);
		}
	}
	return 0;
}

int mgpu_host_gn_bwd(struct mgpu_dev *dev, int N, int C, int HW, int G, float *dx,
		     float *dgamma, float *dbeta, const float *dy, const float *x,
		     const float *mean, const float *rstd, const float *gamma, float acc)
{
	size_t M, r, i, off;
	double a, b, xhat;
	double *sg, *sb;
	int c, n, k;

	(void)dev;
	MGPU_TRY(ops_check_gn("gn_bwd", N, C, HW, G));
	M = (size_t)(C / G) * HW;
	sg = dzeros((size_t)C);
	sb = dzeros((size_t)C);
	if (!sg || !sb) {
		free(sg);
		free(sb);
		return MGPU_ENOMEM;
	}
	for (r = 0; r < (size_t)N * G; r++) {
		off = r * M;
		a = b = 0.0;
		for (i = 0; i < M; i++) {
			c = (int)(r % (size_t)G) * (C / G) + (int)(i / (size_t)HW);
			xhat = ((double)x[off + i] - mean[r]) * rstd[r];
			a += (double)dy[off + i] * gamma[c];
			b += (double)dy[off + i] * gamma[c] * xhat;
		}
		for (i = 0; i < M; i++) {
			c = (int)(r % (size_t)G) * (C / G) + (int)(i / (size_t)HW);
			dx[off + i] = mgpu_gn_bwd_elem(dy[off + i], x[off + i], mean[r], rstd[r],
						       gamma[c], (float)(a / (double)M),
						       (float)(b / (double)M));
		}
	}
	for (n = 0; n < N; n++)
		for (c = 0; c < C; c++) {
			r = (size_t)n * G + (size_t)c / (size_t)(C / G);
			off = ((size_t)n * C + c) * HW;
			for (k = 0; k < HW; k++) {
				sb[c] += dy[off + k];
				sg[c] += (double)dy[off + k] * ((x[off + k] - mean[r]) * rstd[r]);
			}
		}
	for (c = 0; c < C; c++) {
		mgpu_acc_store(&dgamma[c], acc, (float)sg[c]);
		mgpu_acc_store(&dbeta[c], acc, (float)sb[c]);
	}
	free(sg);
	free(sb);
	return 0;
}
