/*
 * test_conv_grad.c - the backward of every conv-net op against central
 * finite differences of its own forward, on ref and cpu (the GPU's are
 * checked against these by the conformance suite), and --sync-bn's cut of
 * BatchNorm: two ranks' partial sums, added, give one rank's whole batch.
 *
 * Each check takes L = sum(r . y) for a fixed random r, so dL/dy = r is the
 * dy the backward gets, and compares the analytic gradient of every input
 * element with (L(p + eps) - L(p - eps)) / 2 eps, the worst error relative
 * to the largest gradient.
 */
#include <math.h>   /* fabs */
#include <stdio.h>  /* printf */
#include <stdlib.h> /* calloc, free */
#include <string.h> /* memcpy */

#include "../t.h"      /* T_RUN, T_CHECK, T_OK */
#include "core/err.h"  /* mgpu_errmsg */
#include "core/hash.h" /* mgpu_hash64 */
#include "ops/check.h" /* MGPU_CV */
#include "ops/ops.h"   /* struct mgpu_ops, mgpu_ops_ref, mgpu_ops_cpu */

static struct mgpu_dev dev;
static const struct mgpu_ops *B; /* backend under test */
static uint64_t stream;

static float *rnd(size_t n, float lo, float hi)
{
	float *p = calloc(n ? n : 1, sizeof *p);
	size_t i;

	stream++;
	for (i = 0; p && i < n; i++)
		p[i] = lo + (hi - lo) * (float)(mgpu_hash64(stream * 7919u, i) >> 40) / 16777216.0f;
	return p;
}

/* n distinct values spaced 2/n apart in [-1, 1): no ties in max pooling. */
static float *spaced(size_t n)
{
	float *p = calloc(n ? n : 1, sizeof *p);
	size_t i;

	for (i = 0; p && i < n; i++)
		p[i] = (float)((i * 7919u) % n) * (2.0f / (float)n) - 1.0f;
	return p;
}

static double dot(const float *r, const float *y, size_t n)
{
	double s = 0.0;
	size_t i;

	for (i = 0; i < n; i++)
		s += (double)r[i] * y[i];
	return s;
}

/* The worst |analytic - numeric| over p's n elements, relative to the
 * largest numeric gradient (or 1e-2); loss() recomputes L. */
static double fd_err(float *p, size_t n, const float *grad, double (*loss)(void), float eps)
{
	double worst = 0.0, mag = 1e-2, fd, lp, lm;
	float save;
	size_t i;

	for (i = 0; i < n; i++) {
		save = p[i];
		p[i] = save + eps;
		lp = loss();
		p[i] = save - eps;
		lm = loss();
		p[i] = save;
		fd = (lp - lm) / (2.0 * (double)eps);
		worst = fabs(fd - grad[i]) > worst ? fabs(fd - grad[i]) : worst;
		mag = fabs(fd) > mag ? fabs(fd) : mag;
	}
	return worst / mag;
}

#define FD_OK(what, p, n, grad, loss, eps, tol)                                       \
	do {                                                                          \
		double e_ = fd_err(p, n, grad, loss, eps);                            \
		T_CHECK(e_ <= (tol), "%s: %s gradient off by %g (tol %g)", B->name, what, \
			e_, (double)(tol));                                           \
	} while (0)

/* ---- convolution --------------------------------------------------------- */

static struct mgpu_conv cg;
static float *cx, *cw, *cb, *cy, *cr;
static size_t cny;

static double conv_loss(void)
{
	if (B->conv_fwd(&dev, &cg, cy, cx, cw, cb) < 0)
		return NAN;
	return dot(cr, cy, cny);
}

static void conv_case(struct mgpu_conv g)
{
	int OH = MGPU_CONV_OUT(g.H, g.KH, g.sh, g.ph, g.dh);
	int OW = MGPU_CONV_OUT(g.W, g.KW, g.sw, g.pw, g.dw);
	size_t nx = (size_t)g.N * g.C * g.H * g.W, nw = (size_t)g.K * (g.C / g.groups) * g.KH * g.KW;
	float *dx, *dw, *db;

	cg = g;
	cny = (size_t)g.N * g.K * OH * OW;
	cx = rnd(nx, -1, 1);
	cw = rnd(nw, -1, 1);
	cb = rnd((size_t)g.K, -1, 1);
	cy = rnd(cny, 0, 0);
	cr = rnd(cny, -1, 1);
	dx = rnd(nx, 0, 0);
	dw = rnd(nw, 0, 0);
	db = rnd((size_t)g.K, 0, 0);
	T_OK(B->conv_bwd_data(&dev, &g, dx, cr, cw));
	T_OK(B->conv_bwd_weight(&dev, &g, dw, db, cx, cr, 0.0f));
	FD_OK("conv x", cx, nx, dx, conv_loss, 1e-2f, 2e-3);
	FD_OK("conv w", cw, nw, dw, conv_loss, 1e-2f, 2e-3);
	FD_OK("conv bias", cb, (size_t)g.K, db, conv_loss, 1e-2f, 2e-3);
	free(cx), free(cw), free(cb), free(cy), free(cr), free(dx), free(dw), free(db);
}

static void test_conv(void)
{
	conv_case((struct mgpu_conv)MGPU_CV(2, 4, 6, 5, 6, 3, 3, 2, 1, 1, 1, 2, 1, 2));
	conv_case((struct mgpu_conv)MGPU_CV(1, 3, 5, 5, 3, 3, 3, 1, 1, 1, 1, 1, 1, 3));
	conv_case((struct mgpu_conv)MGPU_CV(2, 2, 1, 11, 3, 1, 4, 1, 2, 0, 1, 1, 1, 1));
	conv_case((struct mgpu_conv)MGPU_CV(1, 3, 4, 4, 2, 1, 1, 1, 1, 0, 0, 1, 1, 1));
}

/* A transposed convolution (torch's ConvTranspose2d) as ops.h composes
 * it: forward conv_bwd_data then chan_bias, input t (N,K,OH,OW) ->
 * z (N,C,H,W); backward conv_fwd (data), conv_bwd_weight with x and dy
 * swapped (weights) and chan_sum (bias). */
static float *tt, *tz, *tbias;

static double convt_loss(void)
{
	if (B->conv_bwd_data(&dev, &cg, tz, tt, cw) < 0 ||
	    B->chan_bias(&dev, cg.N, cg.C, cg.H * cg.W, tz, tbias) < 0)
		return NAN;
	return dot(cr, tz, (size_t)cg.N * cg.C * cg.H * cg.W);
}

static void test_conv_transpose(void)
{
	struct mgpu_conv g = MGPU_CV(2, 3, 7, 6, 4, 3, 3, 2, 2, 1, 1, 1, 1, 1);
	int OH = MGPU_CONV_OUT(g.H, g.KH, g.sh, g.ph, g.dh);
	int OW = MGPU_CONV_OUT(g.W, g.KW, g.sw, g.pw, g.dw);
	size_t nz = (size_t)g.N * g.C * g.H * g.W, nt = (size_t)g.N * g.K * OH * OW;
	size_t nw = (size_t)g.K * g.C * g.KH * g.KW;
	float *dt, *dw, *db;

	cg = g;
	tt = rnd(nt, -1, 1);
	cw = rnd(nw, -1, 1);
	tbias = rnd((size_t)g.C, -1, 1);
	tz = rnd(nz, 0, 0);
	cr = rnd(nz, -1, 1);
	dt = rnd(nt, 0, 0);
	dw = rnd(nw, 0, 0);
	db = rnd((size_t)g.C, 0, 0);
	T_OK(B->conv_fwd(&dev, &g, dt, cr, cw, NULL));
	T_OK(B->conv_bwd_weight(&dev, &g, dw, NULL, cr, tt, 0.0f));
	T_OK(B->chan_sum(&dev, g.N, g.C, g.H * g.W, db, cr, 0.0f));
	FD_OK("transposed conv input", tt, nt, dt, convt_loss, 1e-2f, 2e-3);
	FD_OK("transposed conv w", cw, nw, dw, convt_loss, 1e-2f, 2e-3);
	FD_OK("transposed conv bias", tbias, (size_t)g.C, db, convt_loss, 1e-2f, 2e-3);
	free(tt), free(cw), free(tbias), free(tz), free(cr), free(dt), free(dw), free(db);
}

/* ---- pooling and upsampling ------------------------------------------ */

static struct mgpu_pool2d pg;
static float *px, *py, *pr;
static size_t pny;

static double pool_loss(void)
{
	if (B->pool_fwd(&dev, &pg, py, px) < 0)
		return NAN;
	return dot(pr, py, pny);
}

static void pool_case(struct mgpu_pool2d g)
{
	size_t nx = (size_t)g.N * g.C * g.H * g.W;
	float *dx;

	pg = g;
	pny = (size_t)g.N * g.C * MGPU_CONV_OUT(g.H, g.KH, g.sh, g.ph, 1) *
	      MGPU_CONV_OUT(g.W, g.KW, g.sw, g.pw, 1);
	px = spaced(nx);
	py = rnd(pny, 0, 0);
	pr = rnd(pny, -1, 1);
	dx = rnd(nx, 0, 0);
	T_OK(B->pool_bwd(&dev, &g, dx, pr, px));
	FD_OK("pool x", px, nx, dx, pool_loss, 1e-3f, 5e-3);
	free(px), free(py), free(pr), free(dx);
}

static void test_pool(void)
{
	struct mgpu_pool2d g = { 2, 3, 7, 6, 3, 3, 2, 2, 1, 1, MGPU_POOL_MAX };

	pool_case(g);
	g.mode = MGPU_POOL_AVG;
	pool_case(g);
	g.mode = MGPU_POOL_AVG_EXCL;
	pool_case(g);
	g = (struct mgpu_pool2d){ 1, 2, 5, 5, 5, 5, 1, 1, 0, 0, MGPU_POOL_AVG }; /* global */
	pool_case(g);
}

static int uN = 2, uC = 3, uH = 3, uW = 4, ush = 2, usw = 3;

static double up_loss(void)
{
	if (B->upsample_fwd(&dev, uN, uC, uH, uW, ush, usw, py, px) < 0)
		return NAN;
	return dot(pr, py, pny);
}

static void test_upsample(void)
{
	size_t nx = (size_t)uN * uC * uH * uW;
	float *dx;

	pny = nx * ush * usw;
	px = rnd(nx, -1, 1);
	py = rnd(pny, 0, 0);
	pr = rnd(pny, -1, 1);
	dx = rnd(nx, 0, 0);
	T_OK(B->upsample_bwd(&dev, uN, uC, uH, uW, ush, usw, dx, pr));
	FD_OK("upsample x", px, nx, dx, up_loss, 1e-2f, 2e-3);
	free(px), free(py), free(pr), free(dx);
}

/* ---- BatchNorm, GroupNorm --------------------------------------------- */

static struct mgpu_bn bn;
static float *bx, *bg, *bb, *by, *br, *brm, *brv, *bmean, *brstd, *bstats, *bshift;
static size_t bnx;

static double bn_loss(void)
{
	float rm[16], rv[16]; /* fresh running statistics each time */

	memcpy(rm, brm, sizeof(float) * bn.C);
	memcpy(rv, brv, sizeof(float) * bn.C);
	if (bn.train && B->bn_stats(&dev, &bn, bstats, bx, bshift) < 0)
		return NAN;
	if (B->bn_fwd(&dev, &bn, by, bmean, brstd, bx, bstats, bshift, bg, bb, rm, rv) < 0)
		return NAN;
	return dot(br, by, bnx);
}

static void bn_case(int N, int C, int HW, int train)
{
	float *dx, *dg, *dbe, *dstats;

	memset(&bn, 0, sizeof bn);
	bn.N = N;
	bn.C = C;
	bn.HW = HW;
	bn.eps = 1e-5f;
	bn.momentum = 0.1f;
	bn.count = (double)N * HW;
	bn.train = train;
	bnx = (size_t)N * C * HW;
	bx = rnd(bnx, 2, 4);
	bg = rnd((size_t)C, 0.5f, 1.5f);
	bb = rnd((size_t)C, -1, 1);
	by = rnd(bnx, 0, 0);
	br = rnd(bnx, -1, 1);
	brm = rnd((size_t)C, 2.5f, 3.5f);
	brv = rnd((size_t)C, 0.2f, 0.5f);
	bshift = rnd((size_t)C, 2.5f, 3.5f);
	bmean = rnd((size_t)C, 0, 0);
	brstd = rnd((size_t)C, 0, 0);
	bstats = rnd(2 * (size_t)C, 0, 0);
	dstats = rnd(2 * (size_t)C, 0, 0);
	dx = rnd(bnx, 0, 0);
	dg = rnd((size_t)C, 0, 0);
	dbe = rnd((size_t)C, 0, 0);
	(void)bn_loss(); /* mean, rstd of the unperturbed input */
	T_OK(B->bn_bwd_stats(&dev, &bn, dstats, dg, dbe, br, bx, bmean, brstd, 0.0f));
	T_OK(B->bn_bwd_data(&dev, &bn, dx, br, bx, bmean, brstd, bg, dstats));
	FD_OK(train ? "bn x (train)" : "bn x (eval)", bx, bnx, dx, bn_loss, 1e-3f, 1e-2);
	FD_OK("bn gamma", bg, (size_t)C, dg, bn_loss, 1e-3f, 1e-2);
	FD_OK("bn beta", bb, (size_t)C, dbe, bn_loss, 1e-3f, 1e-2);
	free(bx), free(bg), free(bb), free(by), free(br), free(brm), free(brv), free(bshift);
	free(bmean), free(brstd), free(bstats), free(dstats), free(dx), free(dg), free(dbe);
}

static void test_bn(void)
{
	bn_case(2, 3, 6, 1);
	bn_case(3, 2, 1, 1);
	bn_case(2, 3, 4, 0);
}

/* --sync-bn: 2 ranks of 2 samples, their sums added, against 1 rank of 4. */
static void test_bn_sync(void)
{
	enum { N = 4, C = 3, HW = 5, H = N / 2 * C * HW };
	struct mgpu_bn one = { N, C, HW, 1e-5f, 0.1f, (double)N * HW, 1 }, half = one;
	float *x = rnd(N * C * HW, 1, 5), *dy = rnd(N * C * HW, -1, 1), *g = rnd(C, 0.5f, 1.5f),
	      *b = rnd(C, -1, 1), *shift = rnd(C, 2.5f, 3.5f);
	float rm1[C] = { 3, 3, 3 }, rv1[C] = { 1, 1, 1 }, rm2[2][C], rv2[2][C];
	float st1[2 * C], st2[2][2 * C], st[2 * C], mean1[C], rstd1[C], mean2[2][C], rstd2[2][C];
	float y1[N * C * HW], y2[N * C * HW], dx1[N * C * HW], dx2[N * C * HW];
	float ds1[2 * C], ds2[2][2 * C], ds[2 * C], dg1[C], db1[C], dg2[2][C], db2[2][C];
	double worst = 0.0;
	int r, i;

	half.N = N / 2;
	T_OK(B->bn_stats(&dev, &one, st1, x, shift));
	T_OK(B->bn_fwd(&dev, &one, y1, mean1, rstd1, x, st1, shift, g, b, rm1, rv1));
	T_OK(B->bn_bwd_stats(&dev, &one, ds1, dg1, db1, dy, x, mean1, rstd1, 0.0f));
	T_OK(B->bn_bwd_data(&dev, &one, dx1, dy, x, mean1, rstd1, g, ds1));
	for (r = 0; r < 2; r++)
		T_OK(B->bn_stats(&dev, &half, st2[r], x + r * H, shift));
	for (i = 0; i < 2 * C; i++) /* the all-reduce */
		st[i] = st2[0][i] + st2[1][i];
	for (r = 0; r < 2; r++) {
		for (i = 0; i < C; i++)
			rm2[r][i] = 3, rv2[r][i] = 1;
		T_OK(B->bn_fwd(&dev, &half, y2 + r * H, mean2[r], rstd2[r], x + r * H, st, shift, g,
			       b, rm2[r], rv2[r]));
		T_OK(B->bn_bwd_stats(&dev, &half, ds2[r], dg2[r], db2[r], dy + r * H, x + r * H,
				     mean2[r], rstd2[r], 0.0f));
	}
	for (i = 0; i < 2 * C; i++)
		ds[i] = ds2[0][i] + ds2[1][i];
	for (r = 0; r < 2; r++)
		T_OK(B->bn_bwd_data(&dev, &half, dx2 + r * H, dy + r * H, x + r * H, mean2[r],
				    rstd2[r], g, ds));
	for (i = 0; i < N * C * HW; i++) {
		worst = fabs((double)y1[i] - y2[i]) > worst ? fabs((double)y1[i] - y2[i]) : worst;
		worst = fabs((double)dx1[i] - dx2[i]) > worst ? fabs((double)dx1[i] - dx2[i]) : worst;
	}
	for (i = 0; i < C; i++)
		for (r = 0; r < 2; r++) {
			worst = fabs((double)rm1[i] - rm2[r][i]) > worst ? fabs((double)rm1[i] - rm2[r][i]) : worst;
			worst = fabs((double)rv1[i] - rv2[r][i]) > worst ? fabs((double)rv1[i] - rv2[r][i]) : worst;
		}
	for (i = 0; i < C; i++) { /* the parameters' gradients: summed by the gradient sync */
		worst = fabs((double)dg1[i] - dg2[0][i] - dg2[1][i]) > worst ? fabs((double)dg1[i] - dg2[0][i] - dg2[1][i]) : worst;
		worst = fabs((double)db1[i] - db2[0][i] - db2[1][i]) > worst ? fabs((double)db1[i] - db2[0][i] - db2[1][i]) : worst;
	}
	T_CHECK(worst <= 1e-5, "%s: 2 ranks x 2 differ from 1 rank x 4 by %g", B->name, worst);
	/* and without the all-reduce (plain DDP) they do differ: the check can fail */
	T_OK(B->bn_fwd(&dev, &half, y2, mean2[0], rstd2[0], x, st2[0], shift, g, b, rm2[0],
		       rv2[0]));
	worst = 0.0;
	for (i = 0; i < H; i++)
		worst = fabs((double)y1[i] - y2[i]) > worst ? fabs((double)y1[i] - y2[i]) : worst;
	T_CHECK(worst > 1e-3, "%s: per-rank statistics should differ (%g)", B->name, worst);
	free(x), free(dy), free(g), free(b), free(shift);
}

static int gN = 2, gC = 6, gHW = 5, gG = 3;
static float *gx, *gg, *gb, *gy, *gr, *gmean, *grstd;

static double gn_loss(void)
{
	if (B->gn_fwd(&dev, gN, gC, gHW, gG, gy, gmean, grstd, gx, gg, gb, 1e-5f) < 0)
		return NAN;
	return dot(gr, gy, (size_t)gN * gC * gHW);
}

static void test_gn(void)
{
	size_t n = (size_t)gN * gC * gHW;
	float *dx = rnd(n, 0, 0), *dg = rnd(gC, 0, 0), *db = rnd(gC, 0, 0);

	gx = rnd(n, -1, 3);
	gg = rnd((size_t)gC, 0.5f, 1.5f);
	gb = rnd((size_t)gC, -1, 1);
	gy = rnd(n, 0, 0);
	gr = rnd(n, -1, 1);
	gmean = rnd((size_t)gN * gG, 0, 0);
	grstd = rnd((size_t)gN * gG, 0, 0);
	(void)gn_loss();
	T_OK(B->gn_bwd(&dev, gN, gC, gHW, gG, dx, dg, db, gr, gx, gmean, grstd, gg, 0.0f));
	FD_OK("gn x", gx, n, dx, gn_loss, 1e-3f, 1e-2);
	FD_OK("gn gamma", gg, (size_t)gC, dg, gn_loss, 1e-3f, 1e-2);
	FD_OK("gn beta", gb, (size_t)gC, db, gn_loss, 1e-3f, 1e-2);
	free(gx), free(gg), free(gb), free(gy), free(gr), free(gmean), free(grstd);
	free(dx), free(dg), free(db);
}

/* act_bwd (dZ = dY act'(Z)) against finite differences of act_fwd. */
static float *az, *ay, *ar;
static enum mgpu_act aact;

static double act_loss(void)
{
	if (B->act_fwd(&dev, aact, ay, az, 64) < 0)
		return NAN;
	return dot(ar, ay, 64);
}

static void test_act(void)
{
	float dz[64];
	int a;

	az = rnd(64, -6, 6);
	ay = rnd(64, 0, 0);
	ar = rnd(64, -1, 1);
	for (a = MGPU_ACT_RELU; a <= MGPU_ACT_SILU; a++) {
		aact = (enum mgpu_act)a;
		T_OK(B->act_bwd(&dev, aact, dz, ar, az, 64));
		FD_OK(a == MGPU_ACT_SILU ? "silu" : "activation", az, 64, dz, act_loss, 1e-3f, 2e-3);
	}
	free(az), free(ay), free(ar);
}

int main(void)
{
	static const struct mgpu_ops *const backends[] = { &mgpu_ops_ref, &mgpu_ops_cpu };
	size_t i;

	for (i = 0; i < 2; i++) {
		B = backends[i];
		if (mgpu_dev_open(&dev, B, 0) < 0) {
			printf("FAIL open %s: %s\n", B->name, mgpu_errmsg());
			return 1;
		}
		printf("# backend %s\n", B->name);
		T_RUN(test_conv);
		T_RUN(test_conv_transpose);
		T_RUN(test_pool);
		T_RUN(test_upsample);
		T_RUN(test_bn);
		T_RUN(test_bn_sync);
		T_RUN(test_gn);
		T_RUN(test_act);
		mgpu_dev_close(&dev);
	}
	return T_DONE();
}
