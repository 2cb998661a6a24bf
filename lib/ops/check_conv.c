/*
 * check_conv.c - the conv-net ops of one backend against a reference (the
 * cases and fields are listed in check.h, the measure too; the report and
 * the tolerances are check_report.c's).
 *
 * Inputs are seeded functions of (seed, case), uploaded byte for byte to
 * both devices; outputs start NaN-filled on both (every element must be
 * written), except the accumulated gradients of acc = 1 cases, which start
 * from the same finite values. An op that follows another gets the
 * reference's outputs of the first on both devices, so each row measures
 * one op.
 */
#include "ops/check.h"

#include <math.h>   /* fabs, isfinite, INFINITY, NAN */
#include <stdio.h>  /* snprintf */
#include <stdlib.h> /* calloc, free */
#include <string.h> /* strcmp, memcpy */

#include "core/err.h"  /* mgpu_err, MGPU_TRY */
#include "core/hash.h" /* mgpu_hash64 */

#define MAXB 24

struct bufs {
	struct mgpu_ops_pair *p;
	int n, nh;
	void *d[MAXB][2];
	size_t nbytes[MAXB];
	float *h[MAXB * 2]; /* host copies, freed with the case */
};

static float *hbuf(struct bufs *b, size_t count)
{
	float *h;

	if (b->nh == MAXB * 2)
		return NULL;
	h = calloc(count ? count : 1, sizeof *h);
	if (h)
		b->h[b->nh++] = h;
	return h;
}

#define HBUF(x, b, count)                                                            \
	do {                                                                         \
		if (!((x) = hbuf(b, count)))                                         \
			return mgpu_err(MGPU_ENOMEM, "selftest: out of host memory"); \
	} while (0)

static void bufs_free(struct bufs *b)
{
	int i, s;

	for (i = 0; i < b->n; i++)
		for (s = 0; s < 2; s++)
			mgpu_dev_free(&b->p->dev[s], b->d[i][s], b->nbytes[i]);
	for (i = 0; i < b->nh; i++)
		free(b->h[i]);
}

/* The same host floats on both devices; *id names the pair. */
static int up(struct bufs *b, const float *h, size_t count, int *id)
{
	int s;

	if (b->n == MAXB)
		return mgpu_err(MGPU_EINVAL, "selftest: too many buffers in one case");
	*id = b->n++;
	b->nbytes[*id] = count * sizeof *h;
	for (s = 0; s < 2; s++) {
		MGPU_TRY(mgpu_dev_alloc(&b->p->dev[s], &b->d[*id][s], b->nbytes[*id]));
		MGPU_TRY(mgpu_dev_from_host(&b->p->dev[s], b->d[*id][s], h, b->nbytes[*id]));
	}
	return 0;
}

/* A NaN-filled output of count floats on both devices. */
static int out(struct bufs *b, size_t count, int *id)
{
	float *h;
	size_t i;

	HBUF(h, b, count);
	for (i = 0; i < count; i++)
		h[i] = NAN;
	return up(b, h, count, id);
}

static float *dp(struct bufs *b, int id, int s)
{
	return (float *)b->d[id][s];
}

/* Download both sides of id; *ref gets the reference's values. */
static int cmp(struct bufs *b, int id, double *worst, float **ref)
{
	size_t count = b->nbytes[id] / sizeof(float), i;
	double diff = 0.0, mag = 0.0, d;
	float *a, *r;

	HBUF(a, b, count);
	HBUF(r, b, count);
	MGPU_TRY(mgpu_dev_to_host(&b->p->dev[0], a, b->d[id][0], b->nbytes[id]));
	MGPU_TRY(mgpu_dev_to_host(&b->p->dev[1], r, b->d[id][1], b->nbytes[id]));
	for (i = 0; i < count; i++) {
		if (!isfinite(a[i]) || !isfinite(r[i])) {
			diff = INFINITY;
			break;
		}
		d = fabs((double)a[i] - r[i]);
		diff = d > diff ? d : diff;
		mag = fabs((double)r[i]) > mag ? fabs((double)r[i]) : mag;
	}
	d = diff / (mag > 1e-30 ? mag : 1e-30);
	if (!(d <= *worst))
		*worst = d;
	if (ref)
		*ref = r;
	return 0;
}

static float *rand_buf(struct bufs *b, size_t count, float lo, float hi)
{
	uint64_t st = b->p->stream++;
	float *h = hbuf(b, count);
	size_t i;

	for (i = 0; h && i < count; i++)
		h[i] = lo + (hi - lo) * (float)(mgpu_hash64(b->p->seed + st * 0xD1B54A32D192ED03ull,
							     i) >> 40) * (1.0f / 16777216.0f);
	return h;
}

/* An uploaded random input. */
static int in(struct bufs *b, size_t count, float lo, float hi, int *id)
{
	float *h = rand_buf(b, count, lo, hi);

	if (!h)
		return mgpu_err(MGPU_ENOMEM, "selftest: out of host memory");
	return up(b, h, count, id);
}

static struct mgpu_dev *dev(struct bufs *b, int s)
{
	return &b->p->dev[s];
}

#define BOTH(call)                                                                   \
	do {                                                                         \
		for (int s_ = 0; s_ < 2; s_++) {                                     \
			struct mgpu_dev *d_ = dev(b, s_);                            \
			MGPU_TRY(d_->ops->call);                                     \
		}                                                                    \
	} while (0)
#define D d_
#define S s_

/* ---- cases ------------------------------------------------------------ */

static void conv_shape(char *shape, size_t len, const struct mgpu_conv *g, const char *extra)
{
	snprintf(shape, len, "N%d C%d %dx%d K%d k%dx%d s%d,%d p%d,%d d%d,%d g%d%s", g->N, g->C,
		 g->H, g->W, g->K, g->KH, g->KW, g->sh, g->sw, g->ph, g->pw, g->dh, g->dw,
		 g->groups, extra);
}

/* conv rows: "conv_fwd", "conv_bwd_data", "conv_bwd_weight", under bf16
 * with "_bf16" after. */
static const char *conv_row(const struct mgpu_conv *g, int dir)
{
	static const char *const name[2][3] = {
		{ "conv_fwd", "conv_bwd_data", "conv_bwd_weight" },
		{ "conv_fwd_bf16", "conv_bwd_data_bf16", "conv_bwd_weight_bf16" },
	};

	return name[g->prec == MGPU_PREC_BF16][dir];
}

static int case_conv(struct bufs *b, const struct mgpu_ops_conv_case *c)
{
	struct mgpu_conv gp = c->cv;
	const struct mgpu_conv *g = &gp;
	int OH = MGPU_CONV_OUT(g->H, g->KH, g->sh, g->ph, g->dh);
	int OW = MGPU_CONV_OUT(g->W, g->KW, g->sw, g->pw, g->dw);
	size_t nx = (size_t)g->N * g->C * g->H * g->W, ny = (size_t)g->N * g->K * OH * OW;
	size_t nw = (size_t)g->K * (g->C / g->groups) * g->KH * g->KW;
	int bias = c->bias, ix, iw, ib = -1, iy, idx, idy, idw, idb = -1;
	float acc = c->acc ? 1.0f : 0.0f;
	double e;
	char shape[64];

	gp.prec = c->prec;
	MGPU_TRY(in(b, nx, -1.0f, 1.0f, &ix));
	MGPU_TRY(in(b, nw, -0.5f, 0.5f, &iw));
	if (bias)
		MGPU_TRY(in(b, (size_t)g->K, -1.0f, 1.0f, &ib));
	MGPU_TRY(out(b, ny, &iy));
	BOTH(conv_fwd(D, g, dp(b, iy, S), dp(b, ix, S), dp(b, iw, S),
		      bias ? dp(b, ib, S) : NULL));
	conv_shape(shape, sizeof shape, g, bias ? " bias" : "");
	e = 0.0;
	MGPU_TRY(cmp(b, iy, &e, NULL));
	mgpu_ops_report_add(b->p, conv_row(g, 0), shape, e);

	MGPU_TRY(in(b, ny, -1.0f, 1.0f, &idy));
	MGPU_TRY(out(b, nx, &idx));
	BOTH(conv_bwd_data(D, g, dp(b, idx, S), dp(b, idy, S), dp(b, iw, S)));
	e = 0.0;
	MGPU_TRY(cmp(b, idx, &e, NULL));
	mgpu_ops_report_add(b->p, conv_row(g, 1), shape, e);

	if (acc != 0.0f) {
		MGPU_TRY(in(b, nw, -1.0f, 1.0f, &idw));
		if (bias)
			MGPU_TRY(in(b, (size_t)g->K, -1.0f, 1.0f, &idb));
	} else {
		MGPU_TRY(out(b, nw, &idw));
		if (bias)
			MGPU_TRY(out(b, (size_t)g->K, &idb));
	}
	BOTH(conv_bwd_weight(D, g, dp(b, idw, S), bias ? dp(b, idb, S) : NULL, dp(b, ix, S),
			     dp(b, idy, S), acc));
	e = 0.0;
	MGPU_TRY(cmp(b, idw, &e, NULL));
	if (bias)
		MGPU_TRY(cmp(b, idb, &e, NULL));
	conv_shape(shape, sizeof shape, g, bias ? (acc != 0.0f ? " bias acc" : " bias")
					       : (acc != 0.0f ? " acc" : ""));
	mgpu_ops_report_add(b->p, conv_row(g, 2), shape, e);
	return 0;
}

static int case_im2col(struct bufs *b, const struct mgpu_ops_conv_case *c)
{
	const struct mgpu_conv *g = &c->cv;
	size_t P = (size_t)MGPU_CONV_OUT(g->H, g->KH, g->sh, g->ph, g->dh) *
		   MGPU_CONV_OUT(g->W, g->KW, g->sw, g->pw, g->dw);
	size_t nx = (size_t)g->C * g->H * g->W, ncol = (size_t)g->C * g->KH * g->KW * P;
	int ix, icol, idcol, idx;
	double e = 0.0;
	char shape[64];

	MGPU_TRY(in(b, nx, -1.0f, 1.0f, &ix));
	MGPU_TRY(out(b, ncol, &icol));
	BOTH(im2col(D, g, dp(b, icol, S), dp(b, ix, S)));
	conv_shape(shape, sizeof shape, g, "");
	MGPU_TRY(cmp(b, icol, &e, NULL));
	mgpu_ops_report_add(b->p, "im2col", shape, e);
	MGPU_TRY(in(b, ncol, -1.0f, 1.0f, &idcol));
	MGPU_TRY(out(b, nx, &idx));
	BOTH(col2im(D, g, dp(b, idx, S), dp(b, idcol, S)));
	e = 0.0;
	MGPU_TRY(cmp(b, idx, &e, NULL));
	mgpu_ops_report_add(b->p, "col2im", shape, e);
	return 0;
}

static int case_pool(struct bufs *b, const struct mgpu_ops_conv_case *c)
{
	static const char *const mode[] = { "max", "avg", "avg_excl" };
	struct mgpu_pool2d g;
	size_t nx, ny;
	int ix, iy, idy, idx;
	double e = 0.0;
	char shape[64];

	memset(&g, 0, sizeof g);
	g.N = c->cv.N;
	g.C = c->cv.C;
	g.H = c->cv.H;
	g.W = c->cv.W;
	g.KH = c->cv.KH;
	g.KW = c->cv.KW;
	g.sh = c->cv.sh;
	g.sw = c->cv.sw;
	g.ph = c->cv.ph;
	g.pw = c->cv.pw;
	g.mode = c->mode;
	nx = (size_t)g.N * g.C * g.H * g.W;
	ny = (size_t)g.N * g.C * MGPU_CONV_OUT(g.H, g.KH, g.sh, g.ph, 1) *
	     MGPU_CONV_OUT(g.W, g.KW, g.sw, g.pw, 1);
	MGPU_TRY(in(b, nx, -1.0f, 1.0f, &ix));
	MGPU_TRY(out(b, ny, &iy));
	BOTH(pool_fwd(D, &g, dp(b, iy, S), dp(b, ix, S)));
	snprintf(shape, sizeof shape, "N%d C%d %dx%d k%dx%d s%d,%d p%d,%d %s", g.N, g.C, g.H,
		 g.W, g.KH, g.KW, g.sh, g.sw, g.ph, g.pw,
		 c->mode >= 0 && c->mode < 3 ? mode[c->mode] : "?");
	MGPU_TRY(cmp(b, iy, &e, NULL));
	mgpu_ops_report_add(b->p, "pool_fwd", shape, e);
	MGPU_TRY(in(b, ny, -1.0f, 1.0f, &idy));
	MGPU_TRY(out(b, nx, &idx));
	BOTH(pool_bwd(D, &g, dp(b, idx, S), dp(b, idy, S), dp(b, ix, S)));
	e = 0.0;
	MGPU_TRY(cmp(b, idx, &e, NULL));
	mgpu_ops_report_add(b->p, "pool_bwd", shape, e);
	return 0;
}

static int case_upsample(struct bufs *b, const struct mgpu_ops_conv_case *c)
{
	const struct mgpu_conv *g = &c->cv;
	size_t nx = (size_t)g->N * g->C * g->H * g->W, ny = nx * g->sh * g->sw;
	int ix, iy, idy, idx;
	double e = 0.0;
	char shape[64];

	MGPU_TRY(in(b, nx, -1.0f, 1.0f, &ix));
	MGPU_TRY(out(b, ny, &iy));
	BOTH(upsample_fwd(D, g->N, g->C, g->H, g->W, g->sh, g->sw, dp(b, iy, S), dp(b, ix, S)));
	snprintf(shape, sizeof shape, "N%d C%d %dx%d x%d,%d", g->N, g->C, g->H, g->W, g->sh,
		 g->sw);
	MGPU_TRY(cmp(b, iy, &e, NULL));
	mgpu_ops_report_add(b->p, "upsample_fwd", shape, e);
	MGPU_TRY(in(b, ny, -1.0f, 1.0f, &idy));
	MGPU_TRY(out(b, nx, &idx));
	BOTH(upsample_bwd(D, g->N, g->C, g->H, g->W, g->sh, g->sw, dp(b, idx, S),
			  dp(b, idy, S)));
	e = 0.0;
	MGPU_TRY(cmp(b, idx, &e, NULL));
	mgpu_ops_report_add(b->p, "upsample_bwd", shape, e);
	return 0;
}

static int case_bn(struct bufs *b, const struct mgpu_ops_conv_case *c)
{
	struct mgpu_bn bn;
	size_t nx, C;
	int ix, ish = -1, ist, ig, ibe, irm, irv, iy, im, ir, idy, ids, idg, idb, idx,
	    ist2 = -1, im2, ir2, ids2;
	float acc = c->acc ? 1.0f : 0.0f, *stats, *mean, *rstd, *dstats;
	double e;
	char shape[64];

	memset(&bn, 0, sizeof bn);
	bn.N = c->cv.N;
	bn.C = c->cv.C;
	bn.HW = c->cv.H * c->cv.W;
	bn.eps = 1e-5f;
	bn.momentum = 0.1f;
	bn.count = (double)bn.N * bn.HW;
	bn.train = c->train;
	nx = (size_t)bn.N * bn.C * bn.HW;
	C = (size_t)bn.C;
	snprintf(shape, sizeof shape, "N%d C%d HW%d %s%s%s", bn.N, bn.C, bn.HW,
		 bn.train ? "train" : "eval", c->shift ? " shift" : "",
		 acc != 0.0f ? " acc" : "");
	MGPU_TRY(in(b, nx, 2.0f, 4.0f, &ix)); /* centred at 3: the sums must not cancel */
	if (c->shift)
		MGPU_TRY(in(b, C, 2.5f, 3.5f, &ish));
	MGPU_TRY(in(b, C, 0.5f, 1.5f, &ig));
	MGPU_TRY(in(b, C, -0.5f, 0.5f, &ibe));
	MGPU_TRY(in(b, C, 2.5f, 3.5f, &irm));
	MGPU_TRY(in(b, C, 0.1f, 0.5f, &irv));
	stats = NULL;
	if (bn.train) {
		MGPU_TRY(out(b, 2 * C, &ist));
		BOTH(bn_stats(D, &bn, dp(b, ist, S), dp(b, ix, S), ish >= 0 ? dp(b, ish, S) : NULL));
		e = 0.0;
		MGPU_TRY(cmp(b, ist, &e, &stats));
		mgpu_ops_report_add(b->p, "bn_stats", shape, e);
	}
	MGPU_TRY(out(b, nx, &iy));
	MGPU_TRY(out(b, C, &im));
	MGPU_TRY(out(b, C, &ir));
	if (stats)
		MGPU_TRY(up(b, stats, 2 * C, &ist2));
	BOTH(bn_fwd(D, &bn, dp(b, iy, S), dp(b, im, S), dp(b, ir, S), dp(b, ix, S),
		    stats ? dp(b, ist2, S) : NULL, ish >= 0 ? dp(b, ish, S) : NULL, dp(b, ig, S),
		    dp(b, ibe, S), dp(b, irm, S), dp(b, irv, S)));
	e = 0.0;
	MGPU_TRY(cmp(b, iy, &e, NULL));
	MGPU_TRY(cmp(b, im, &e, &mean));
	MGPU_TRY(cmp(b, ir, &e, &rstd));
	MGPU_TRY(cmp(b, irm, &e, NULL));
	MGPU_TRY(cmp(b, irv, &e, NULL));
	mgpu_ops_report_add(b->p, "bn_fwd", shape, e);

	MGPU_TRY(up(b, mean, C, &im2));
	MGPU_TRY(up(b, rstd, C, &ir2));
	MGPU_TRY(in(b, nx, -1.0f, 1.0f, &idy));
	MGPU_TRY(out(b, 2 * C, &ids));
	if (acc != 0.0f) {
		MGPU_TRY(in(b, C, -1.0f, 1.0f, &idg));
		MGPU_TRY(in(b, C, -1.0f, 1.0f, &idb));
	} else {
		MGPU_TRY(out(b, C, &idg));
		MGPU_TRY(out(b, C, &idb));
	}
	BOTH(bn_bwd_stats(D, &bn, dp(b, ids, S), dp(b, idg, S), dp(b, idb, S), dp(b, idy, S),
			  dp(b, ix, S), dp(b, im2, S), dp(b, ir2, S), acc));
	e = 0.0;
	MGPU_TRY(cmp(b, ids, &e, &dstats));
	MGPU_TRY(cmp(b, idg, &e, NULL));
	MGPU_TRY(cmp(b, idb, &e, NULL));
	mgpu_ops_report_add(b->p, "bn_bwd_stats", shape, e);

	MGPU_TRY(up(b, dstats, 2 * C, &ids2));
	MGPU_TRY(out(b, nx, &idx));
	BOTH(bn_bwd_data(D, &bn, dp(b, idx, S), dp(b, idy, S), dp(b, ix, S), dp(b, im2, S),
			 dp(b, ir2, S), dp(b, ig, S), dp(b, ids2, S)));
	e = 0.0;
	MGPU_TRY(cmp(b, idx, &e, NULL));
	mgpu_ops_report_add(b->p, "bn_bwd_data", shape, e);
	return 0;
}

static int case_gn(struct bufs *b, const struct mgpu_ops_conv_case *c)
{
	int N = c->cv.N, C = c->cv.C, HW = c->cv.H * c->cv.W, G = c->cv.groups;
	size_t nx = (size_t)N * C * HW, nr = (size_t)N * G;
	int ix, ig, ibe, iy, im, ir, im2, ir2, idy, idx, idg, idb;
	float *mean, *rstd;
	double e = 0.0;
	char shape[64];

	snprintf(shape, sizeof shape, "N%d C%d HW%d G%d", N, C, HW, G);
	MGPU_TRY(in(b, nx, -1.0f, 3.0f, &ix));
	MGPU_TRY(in(b, (size_t)C, 0.5f, 1.5f, &ig));
	MGPU_TRY(in(b, (size_t)C, -0.5f, 0.5f, &ibe));
	MGPU_TRY(out(b, nx, &iy));
	MGPU_TRY(out(b, nr, &im));
	MGPU_TRY(out(b, nr, &ir));
	BOTH(gn_fwd(D, N, C, HW, G, dp(b, iy, S), dp(b, im, S), dp(b, ir, S), dp(b, ix, S),
		    dp(b, ig, S), dp(b, ibe, S), 1e-5f));
	MGPU_TRY(cmp(b, iy, &e, NULL));
	MGPU_TRY(cmp(b, im, &e, &mean));
	MGPU_TRY(cmp(b, ir, &e, &rstd));
	mgpu_ops_report_add(b->p, "gn_fwd", shape, e);
	MGPU_TRY(up(b, mean, nr, &im2));
	MGPU_TRY(up(b, rstd, nr, &ir2));
	MGPU_TRY(in(b, nx, -1.0f, 1.0f, &idy));
	MGPU_TRY(out(b, nx, &idx));
	MGPU_TRY(in(b, (size_t)C, -1.0f, 1.0f, &idg));
	MGPU_TRY(in(b, (size_t)C, -1.0f, 1.0f, &idb));
	BOTH(gn_bwd(D, N, C, HW, G, dp(b, idx, S), dp(b, idg, S), dp(b, idb, S), dp(b, idy, S),
		    dp(b, ix, S), dp(b, im2, S), dp(b, ir2, S), dp(b, ig, S), 1.0f));
	e = 0.0;
	MGPU_TRY(cmp(b, idx, &e, NULL));
	MGPU_TRY(cmp(b, idg, &e, NULL));
	MGPU_TRY(cmp(b, idb, &e, NULL));
	mgpu_ops_report_add(b->p, "gn_bwd", shape, e);
	return 0;
}

static int case_chan(struct bufs *b, const struct mgpu_ops_conv_case *c)
{
	int N = c->cv.N, C = c->cv.C, HW = c->cv.H * c->cv.W, iy, ib, idy, idb;
	size_t n = (size_t)N * C * HW;
	float acc = c->acc ? 1.0f : 0.0f;
	double e = 0.0;
	char shape[64];

	snprintf(shape, sizeof shape, "N%d C%d HW%d%s", N, C, HW, acc != 0.0f ? " acc" : "");
	MGPU_TRY(in(b, n, -1.0f, 1.0f, &iy));
	MGPU_TRY(in(b, (size_t)C, -1.0f, 1.0f, &ib));
	BOTH(chan_bias(D, N, C, HW, dp(b, iy, S), dp(b, ib, S)));
	MGPU_TRY(cmp(b, iy, &e, NULL));
	mgpu_ops_report_add(b->p, "chan_bias", shape, e);
	MGPU_TRY(in(b, n, -1.0f, 1.0f, &idy));
	if (acc != 0.0f)
		MGPU_TRY(in(b, (size_t)C, -1.0f, 1.0f, &idb));
	else
		MGPU_TRY(out(b, (size_t)C, &idb));
	BOTH(chan_sum(D, N, C, HW, dp(b, idb, S), dp(b, idy, S), acc));
	e = 0.0;
	MGPU_TRY(cmp(b, idb, &e, NULL));
	mgpu_ops_report_add(b->p, "chan_sum", shape, e);
	return 0;
}

static int case_act_fwd(struct bufs *b, const struct mgpu_ops_conv_case *c)
{
	static const char *const names[] = { "none", "relu", "gelu", "tanh", "silu" };
	size_t n = (size_t)c->n;
	int ix, iy;
	double e = 0.0;
	char shape[64];

	MGPU_TRY(in(b, n, -8.0f, 8.0f, &ix));
	MGPU_TRY(out(b, n, &iy));
	BOTH(act_fwd(D, c->act, dp(b, iy, S), dp(b, ix, S), n));
	MGPU_TRY(cmp(b, iy, &e, NULL));
	snprintf(shape, sizeof shape, "n=%zu %s", n,
		 c->act >= 0 && c->act <= MGPU_ACT_SILU ? names[c->act] : "?");
	mgpu_ops_report_add(b->p, "act_fwd", shape, e);
	return 0;
}

/* mse: cv.N = B, cv.C = G, M = H W; weighted (every third group's
 * weight 0, a missing keypoint), nograd. */
static int case_mse(struct bufs *b, const struct mgpu_ops_conv_case *c)
{
	int B = c->cv.N, G = c->cv.C, M = c->cv.H * c->cv.W, ip, it, iw = -1, il, idp = -1;
	size_t n = (size_t)B * G * M, i;
	float *w;
	double e = 0.0;
	char shape[64];

	snprintf(shape, sizeof shape, "B%d G%d M%d%s%s", B, G, M, c->weighted ? " w" : "",
		 c->nograd ? " nograd" : "");
	MGPU_TRY(in(b, n, -1.0f, 2.0f, &ip));
	MGPU_TRY(in(b, n, 0.0f, 1.0f, &it));
	if (c->weighted) {
		if (!(w = rand_buf(b, (size_t)B * G, 0.5f, 1.5f)))
			return mgpu_err(MGPU_ENOMEM, "selftest: out of host memory");
		for (i = 0; i < (size_t)B * G; i += 3)
			w[i] = 0.0f;
		MGPU_TRY(up(b, w, (size_t)B * G, &iw));
	}
	MGPU_TRY(out(b, (size_t)B * G, &il));
	if (!c->nograd)
		MGPU_TRY(out(b, n, &idp));
	BOTH(mse(D, idp < 0 ? NULL : dp(b, idp, S), dp(b, il, S), dp(b, ip, S), dp(b, it, S),
		 iw < 0 ? NULL : dp(b, iw, S), B, G, M, 0.25f));
	MGPU_TRY(cmp(b, il, &e, NULL));
	if (idp >= 0)
		MGPU_TRY(cmp(b, idp, &e, NULL));
	mgpu_ops_report_add(b->p, "mse", shape, e);
	return 0;
}

/* pix_xent: cv.N = N, cv.C = classes, HW = H W; ignore (every fifth
 * pixel's label -1), nograd, inplace (dlogits == logits). */
static int case_pix_xent(struct bufs *b, const struct mgpu_ops_conv_case *c)
{
	int N = c->cv.N, C = c->cv.C, HW = c->cv.H * c->cv.W, il, iy, ilo, ico, idl = -1;
	size_t n = (size_t)N * HW, i;
	float *lab;
	int32_t v;
	double e = 0.0;
	char shape[64];

	snprintf(shape, sizeof shape, "N%d C%d HW%d%s%s%s", N, C, HW, c->ignore ? " ignore" : "",
		 c->nograd ? " nograd" : "", c->inplace ? " inplace" : "");
	MGPU_TRY(in(b, n * C, -4.0f, 4.0f, &il));
	HBUF(lab, b, n);
	for (i = 0; i < n; i++) { /* int32 labels in a float buffer's bytes */
		v = c->ignore && i % 5 == 0 ? -1 :
		    (int32_t)(mgpu_hash64(b->p->seed, i ^ 0x5A5Aull) % (uint64_t)C);
		memcpy(&lab[i], &v, sizeof v);
	}
	MGPU_TRY(up(b, lab, n, &iy));
	MGPU_TRY(out(b, n, &ilo));
	MGPU_TRY(out(b, n, &ico));
	if (c->inplace)
		idl = il;
	else if (!c->nograd)
		MGPU_TRY(out(b, n * C, &idl));
	BOTH(pix_xent(D, idl < 0 ? NULL : dp(b, idl, S), dp(b, ilo, S), dp(b, ico, S),
		      dp(b, il, S), (const int32_t *)b->d[iy][S], N, C, HW, 0.5f));
	MGPU_TRY(cmp(b, ilo, &e, NULL));
	MGPU_TRY(cmp(b, ico, &e, NULL));
	if (idl >= 0)
		MGPU_TRY(cmp(b, idl, &e, NULL));
	mgpu_ops_report_add(b->p, "pix_xent", shape, e);
	return 0;
}

static const struct {
	const char *op;
	int (*fn)(struct bufs *b, const struct mgpu_ops_conv_case *c);
} cases[] = {
	{ "conv", case_conv },         { "im2col", case_im2col }, { "pool", case_pool },
	{ "upsample", case_upsample }, { "bn", case_bn },         { "gn", case_gn },
	{ "act_fwd", case_act_fwd }, { "chan", case_chan },
	{ "mse", case_mse },           { "pix_xent", case_pix_xent },
};

int mgpu_ops_check_conv_case(struct mgpu_ops_pair *p, const struct mgpu_ops_conv_case *c)
{
	struct bufs b;
	size_t i;
	int rc;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		if (strcmp(cases[i].op, c->op) != 0)
			continue;
		memset(&b, 0, sizeof b);
		b.p = p;
		rc = cases[i].fn(&b, c);
		bufs_free(&b);
		if (rc < 0)
			return mgpu_err_prefix(rc, "selftest %s (%s vs %s): ", c->op,
					       p->dev[0].ops->name, p->dev[1].ops->name);
		return 0;
	}
	return mgpu_err(MGPU_EINVAL, "selftest: unknown op '%s'", c->op);
}
