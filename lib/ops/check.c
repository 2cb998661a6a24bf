/*
 * check.c - one backend against a reference on identical seeded inputs
 * (see check.h for the cases, the error measure and the report).
 *
 * Each case builds its inputs on the host, uploads the very same bytes to
 * both devices (counted allocations, freed when the case ends), runs the op
 * on both with the same arguments, downloads the outputs and compares them.
 * Outputs start NaN-filled where the op must write every element, so an
 * element a backend forgets to write shows up as an infinite error.
 */
#include "ops/check.h"

#include <math.h>   /* fabs, floorf, isfinite, isnan, INFINITY, NAN */
#include <stdio.h>  /* snprintf */
#include <stdlib.h> /* calloc, free */
#include <string.h> /* memset, strcmp */

#include "core/err.h" /* mgpu_err, mgpu_err_prefix, MGPU_TRY */
#include "core/hash.h" /* mgpu_hash64 */
#include "ops/elem.h"  /* mgpu_bf16_from_f32: the bf16 GEMM case's inputs */

#define MAXBUF 16
#define TINY 1e-30
#define SENTINEL 7777.0f /* gemm's C padding: must survive untouched */

/* The buffers of one case: host memory, and each device buffer on both. */
struct run {
	struct mgpu_ops_pair *p;
	int nhost, ndev;
	void *host[MAXBUF * 2];
	void *d[MAXBUF][2];
	size_t nbytes[MAXBUF];
};

/* Worst relative error over several output tensors. */
struct err {
	double worst;
};

/* ---- buffers ---------------------------------------------------------- */

static void *hnew(struct run *r, size_t nbytes)
{
	void *h;

	if (r->nhost == MAXBUF * 2)
		return NULL;
	h = calloc(1, nbytes ? nbytes : 1);
	if (h)
		r->host[r->nhost++] = h;
	return h;
}

static float *fnew(struct run *r, size_t count)
{
	return hnew(r, count * sizeof(float));
}

#define NEWF(x, r, count)                                                          \
	do {                                                                       \
		x = fnew(r, count);                                                \
		if (!x)                                                            \
			return mgpu_err(MGPU_ENOMEM, "selftest: out of host memory"); \
	} while (0)

/* Copy the same host bytes to both devices; *id names the pair. */
static int up(struct run *r, const void *h, size_t nbytes, int *id)
{
	int s;

	if (r->ndev == MAXBUF)
		return mgpu_err(MGPU_EINVAL, "selftest: too many buffers in one case");
	*id = r->ndev++;
	r->nbytes[*id] = nbytes;
	for (s = 0; s < 2; s++) {
		MGPU_TRY(mgpu_dev_alloc(&r->p->dev[s], &r->d[*id][s], nbytes));
		MGPU_TRY(mgpu_dev_from_host(&r->p->dev[s], r->d[*id][s], h, nbytes));
	}
	return 0;
}

/* Results of the device under test into h0, of the reference into h1. */
static int down(struct run *r, int id, void *h0, void *h1)
{
	MGPU_TRY(mgpu_dev_to_host(&r->p->dev[0], h0, r->d[id][0], r->nbytes[id]));
	return mgpu_dev_to_host(&r->p->dev[1], h1, r->d[id][1], r->nbytes[id]);
}

static void run_free(struct run *r)
{
	int i, s;

	for (i = 0; i < r->ndev; i++)
		for (s = 0; s < 2; s++)
			mgpu_dev_free(&r->p->dev[s], r->d[i][s], r->nbytes[i]);
	for (i = 0; i < r->nhost; i++)
		free(r->host[i]);
}

static float *dptr(struct run *r, int id, int s)
{
	return (float *)r->d[id][s];
}

static struct mgpu_dev *devof(struct run *r, int s)
{
	return &r->p->dev[s];
}

/* ---- inputs ----------------------------------------------------------- */

static float uniform(struct mgpu_ops_pair *p, uint64_t stream, size_t i)
{
	uint64_t h = mgpu_hash64(p->seed + stream * 0xD1B54A32D192ED03ull, i);
	return (float)(h >> 40) * (1.0f / 16777216.0f);
}

/* x[i] uniform in [lo, hi), a fresh stream per array. */
static void fill(struct mgpu_ops_pair *p, float *x, size_t n, float lo, float hi)
{
	uint64_t st = p->stream++;
	size_t i;

	for (i = 0; i < n; i++)
		x[i] = lo + (hi - lo) * uniform(p, st, i);
}

static void fill_const(float *x, size_t n, float v)
{
	size_t i;

	for (i = 0; i < n; i++)
		x[i] = v;
}

/* A column-major rows x cols matrix with leading dimension ld: random
 * inside, `pad` in rows rows..ld-1 of every column. */
static void fill_padded(struct mgpu_ops_pair *p, float *x, int rows, int cols, int ld,
			float pad, int nan_inside)
{
	size_t j;

	fill(p, x, (size_t)ld * cols, -1.0f, 1.0f);
	for (j = 0; j < (size_t)cols; j++) {
		if (nan_inside)
			fill_const(x + j * ld, (size_t)rows, NAN);
		fill_const(x + j * ld + rows, (size_t)(ld - rows), pad);
	}
}

/* ---- comparison ------------------------------------------------------- */

/* Relative error of a against the reference r over n elements with stride
 * 1, columns of `rows` at leading dimension ld (ld == rows: contiguous). */
static double rel_err_ld(const float *a, const float *ref, size_t rows, size_t cols,
			 size_t ld)
{
	double diff = 0.0, mag = 0.0, d;
	size_t i, j;

	for (j = 0; j < cols; j++)
		for (i = 0; i < rows; i++) {
			float x = a[i + j * ld], y = ref[i + j * ld];
			if (!isfinite(x) || !isfinite(y))
				return INFINITY;
			d = fabs((double)x - y);
			diff = d > diff ? d : diff;
			mag = fabs((double)y) > mag ? fabs((double)y) : mag;
		}
	return diff / (mag > TINY ? mag : TINY);
}

static void err_add(struct err *e, double v)
{
	if (!(v <= e->worst)) /* NaN too */
		e->worst = v;
}

static void err_vec(struct err *e, const float *a, const float *ref, size_t n)
{
	err_add(e, rel_err_ld(a, ref, n, 1, n));
}

/* Download output buffer id (count floats) from both devices and compare;
 * with nan_ok a NaN on both sides at one place counts as agreement (a NaN
 * input that must come out NaN on every backend), on one side only as an
 * infinite error. */
static int cmp_out_nan(struct run *r, struct err *e, int id, size_t count, int nan_ok)
{
	float *a, *b;
	size_t i;

	NEWF(a, r, count);
	NEWF(b, r, count);
	MGPU_TRY(down(r, id, a, b));
	for (i = 0; nan_ok && i < count; i++)
		if (isnan(a[i]) && isnan(b[i]))
			a[i] = b[i] = 0.0f;
	err_vec(e, a, b, count);
	return 0;
}

static int cmp_out(struct run *r, struct err *e, int id, size_t count)
{
	return cmp_out_nan(r, e, id, count, 0);
}

/* ---- cases ------------------------------------------------------------ */

static int max1(int a)
{
	return a > 1 ? a : 1;
}

static int case_nrm2(struct run *r, const struct mgpu_ops_case *c)
{
	size_t n = (size_t)c->n;
	float *x, out[2];
	int ix, s;
	char shape[64];

	NEWF(x, r, n);
	fill(r->p, x, n, -1.0f, 1.0f);
	MGPU_TRY(up(r, x, n * sizeof *x, &ix));
	for (s = 0; s < 2; s++)
		MGPU_TRY(devof(r, s)->ops->nrm2(devof(r, s), n, dptr(r, ix, s), &out[s]));
	snprintf(shape, sizeof shape, "n=%zu", n);
	mgpu_ops_report_add(r->p, "nrm2", shape, rel_err_ld(&out[0], &out[1], 1, 1, 1));
	return 0;
}

static const char *act_name(enum mgpu_act act)
{
	static const char *const names[] = { "none", "relu", "gelu", "tanh" };
	return act >= MGPU_ACT_NONE && act <= MGPU_ACT_TANH ? names[act] : "?";
}

static int case_bias_act(struct run *r, const struct mgpu_ops_case *c)
{
	size_t n = (size_t)c->m * c->n;
	struct err e = { 0.0 };
	float *Z, *b, *Y;
	int iz, ib, iy, s;
	char shape[64];

	NEWF(Z, r, n);
	NEWF(b, r, (size_t)c->n);
	NEWF(Y, r, n);
	fill(r->p, Z, n, -3.0f, 3.0f);
	fill(r->p, b, (size_t)c->n, -1.0f, 1.0f);
	fill_const(Y, n, NAN);
	MGPU_TRY(up(r, Z, n * sizeof *Z, &iz));
	MGPU_TRY(up(r, b, (size_t)c->n * sizeof *b, &ib));
	MGPU_TRY(up(r, Y, n * sizeof *Y, &iy));
	if (c->in_place)
		iy = iz;
	for (s = 0; s < 2; s++)
		MGPU_TRY(devof(r, s)->ops->bias_act(devof(r, s), c->act, dptr(r, iy, s), dptr(r, iz, s),
						  dptr(r, ib, s), c->m, c->n));
	MGPU_TRY(cmp_out(r, &e, iy, n));
	if (!c->in_place)
		MGPU_TRY(cmp_out(r, &e, iz, n));
	snprintf(shape, sizeof shape, "B=%d D=%d %s%s", c->m, c->n, act_name(c->act),
		 c->in_place ? " in-place" : "");
	mgpu_ops_report_add(r->p, "bias_act", shape, e.worst);
	return 0;
}

static int case_act_bwd(struct run *r, const struct mgpu_ops_case *c)
{
	size_t n = (size_t)c->n;
	struct err e = { 0.0 };
	float *dY, *Z, *dZ;
	int idy, iz, idz, s;
	char shape[64];

	NEWF(dY, r, n);
	NEWF(Z, r, n);
	NEWF(dZ, r, n);
	fill(r->p, dY, n, -1.0f, 1.0f);
	fill(r->p, Z, n, -3.0f, 3.0f);
	fill_const(dZ, n, NAN);
	MGPU_TRY(up(r, dY, n * sizeof *dY, &idy));
	MGPU_TRY(up(r, Z, n * sizeof *Z, &iz));
	MGPU_TRY(up(r, dZ, n * sizeof *dZ, &idz));
	if (c->in_place)
		idz = idy;
	for (s = 0; s < 2; s++)
		MGPU_TRY(devof(r, s)->ops->act_bwd(devof(r, s), c->act, dptr(r, idz, s), dptr(r, idy, s),
						 dptr(r, iz, s), n));
	MGPU_TRY(cmp_out(r, &e, idz, n));
	snprintf(shape, sizeof shape, "n=%zu %s%s", n, act_name(c->act),
		 c->in_place ? " in-place" : "");
	mgpu_ops_report_add(r->p, "act_bwd", shape, e.worst);
	return 0;
}

static int case_col_sum(struct run *r, const struct mgpu_ops_case *c)
{
	size_t n = (size_t)c->m * c->n, D = (size_t)c->n;
	struct err e = { 0.0 };
	float *dY, *db;
	int idy, idb, s;
	char shape[64];

	NEWF(dY, r, n);
	NEWF(db, r, D);
	fill(r->p, dY, n, -1.0f, 1.0f);
	fill(r->p, db, D, -1.0f, 1.0f);
	if (c->acc == 0.0f)
		fill_const(db, D, NAN);
	MGPU_TRY(up(r, dY, n * sizeof *dY, &idy));
	MGPU_TRY(up(r, db, D * sizeof *db, &idb));
	for (s = 0; s < 2; s++)
		MGPU_TRY(devof(r, s)->ops->col_sum(devof(r, s), dptr(r, idb, s), dptr(r, idy, s), c->m,
						 c->n, c->acc));
	MGPU_TRY(cmp_out(r, &e, idb, D));
	snprintf(shape, sizeof shape, "B=%d D=%d beta=%g", c->m, c->n, (double)c->acc);
	mgpu_ops_report_add(r->p, "col_sum", shape, e.worst);
	return 0;
}

/* Backward half of case_ln: mean and rstd are the reference's, given to both. */
static int ln_bwd(struct run *r, const struct mgpu_ops_case *c, int ix, int ig,
		  const float *mean, const float *rstd)
{
	size_t B = (size_t)c->m, D = (size_t)c->n, n = B * D;
	struct err e = { 0.0 };
	float *dY, *dX, *dg, *dbt;
	int im, ir, idy, idx, idg, idb, s;
	char shape[64];

	NEWF(dY, r, n);
	NEWF(dX, r, n);
	NEWF(dg, r, D);
	NEWF(dbt, r, D);
	fill(r->p, dY, n, -1.0f, 1.0f);
	fill_const(dX, n, NAN);
	fill(r->p, dg, D, -1.0f, 1.0f);
	fill(r->p, dbt, D, -1.0f, 1.0f);
	if (c->acc == 0.0f) {
		fill_const(dg, D, NAN);
		fill_const(dbt, D, NAN);
	}
	MGPU_TRY(up(r, mean, B * sizeof *mean, &im));
	MGPU_TRY(up(r, rstd, B * sizeof *rstd, &ir));
	MGPU_TRY(up(r, dY, n * sizeof *dY, &idy));
	MGPU_TRY(up(r, dX, n * sizeof *dX, &idx));
	MGPU_TRY(up(r, dg, D * sizeof *dg, &idg));
	MGPU_TRY(up(r, dbt, D * sizeof *dbt, &idb));
	for (s = 0; s < 2; s++)
		MGPU_TRY(devof(r, s)->ops->ln_bwd(devof(r, s), dptr(r, idx, s), dptr(r, idg, s),
						dptr(r, idb, s), dptr(r, idy, s), dptr(r, ix, s),
						dptr(r, im, s), dptr(r, ir, s), dptr(r, ig, s), c->m, c->n,
						c->acc));
	MGPU_TRY(cmp_out(r, &e, idx, n));
	MGPU_TRY(cmp_out(r, &e, idg, D));
	MGPU_TRY(cmp_out(r, &e, idb, D));
	snprintf(shape, sizeof shape, "B=%d D=%d acc=%g", c->m, c->n, (double)c->acc);
	mgpu_ops_report_add(r->p, "ln_bwd", shape, e.worst);
	return 0;
}

static int case_ln(struct run *r, const struct mgpu_ops_case *c)
{
	size_t B = (size_t)c->m, D = (size_t)c->n, n = B * D;
	struct err e = { 0.0 };
	float *X, *g, *bt, *Y, *mean, *rstd, *m0, *r0;
	int ix, ig, ib, iy, im, ir, s;
	char shape[64];

	NEWF(X, r, n);
	NEWF(g, r, D);
	NEWF(bt, r, D);
	NEWF(Y, r, n);
	NEWF(mean, r, B);
	NEWF(rstd, r, B);
	NEWF(m0, r, B);
	NEWF(r0, r, B);
	fill(r->p, X, n, -2.0f, 2.0f);
	fill(r->p, g, D, 0.5f, 1.5f);
	fill(r->p, bt, D, -0.5f, 0.5f);
	fill_const(Y, n, NAN);
	fill_const(mean, B, D ? NAN : 0.0f); /* D == 0: nothing is written */
	fill_const(rstd, B, D ? NAN : 0.0f);
	MGPU_TRY(up(r, X, n * sizeof *X, &ix));
	MGPU_TRY(up(r, g, D * sizeof *g, &ig));
	MGPU_TRY(up(r, bt, D * sizeof *bt, &ib));
	MGPU_TRY(up(r, Y, n * sizeof *Y, &iy));
	MGPU_TRY(up(r, mean, B * sizeof *mean, &im));
	MGPU_TRY(up(r, rstd, B * sizeof *rstd, &ir));
	for (s = 0; s < 2; s++)
		MGPU_TRY(devof(r, s)->ops->ln_fwd(devof(r, s), dptr(r, iy, s), dptr(r, im, s), dptr(r, ir, s),
						dptr(r, ix, s), dptr(r, ig, s), dptr(r, ib, s), c->m,
						c->n, 1e-5f));
	MGPU_TRY(cmp_out(r, &e, iy, n));
	MGPU_TRY(down(r, im, m0, mean));
	err_vec(&e, m0, mean, B);
	MGPU_TRY(down(r, ir, r0, rstd));
	err_vec(&e, r0, rstd, B);
	snprintf(shape, sizeof shape, "B=%d D=%d eps=1e-5", c->m, c->n);
	mgpu_ops_report_add(r->p, "ln_fwd", shape, e.worst);
	return ln_bwd(r, c, ix, ig, mean, rstd);
}

static int case_dropout(struct run *r, const struct mgpu_ops_case *c)
{
	size_t n = (size_t)c->n;
	struct err e = { 0.0 };
	float *X, *Y;
	int ix, iy, s;
	char shape[64];

	NEWF(X, r, n);
	NEWF(Y, r, n);
	fill(r->p, X, n, -1.0f, 1.0f);
	fill_const(Y, n, NAN);
	MGPU_TRY(up(r, X, n * sizeof *X, &ix));
	MGPU_TRY(up(r, Y, n * sizeof *Y, &iy));
	if (c->in_place)
		iy = ix;
	for (s = 0; s < 2; s++)
		MGPU_TRY(devof(r, s)->ops->dropout(devof(r, s), dptr(r, iy, s), dptr(r, ix, s), n,
						 c->p, r->p->seed, c->offset));
	MGPU_TRY(cmp_out(r, &e, iy, n));
	snprintf(shape, sizeof shape, "n=%zu p=%g offset=%llu%s", n, (double)c->p,
		 (unsigned long long)c->offset, c->in_place ? " in-place" : "");
	mgpu_ops_report_add(r->p, "dropout", shape, e.worst);
	return 0;
}

/* The gaps of rows ldc > C apart: what no backend may read (a logit of
 * 1e30 would take the row's maximum and loss) or write (dlogits' 7s). */
static void xent_gaps(float *X, size_t B, size_t C, size_t ld, float v)
{
	size_t i, j;

	for (i = 0; i < B; i++)
		for (j = C; j < ld; j++)
			X[i * ld + j] = v;
}

static int case_xent(struct run *r, const struct mgpu_ops_case *c)
{
	size_t B = (size_t)c->m, ld = (size_t)(c->ldc ? c->ldc : c->n), n = B * ld, i;
	struct err e = { 0.0 };
	float *L, *dL, *loss, *corr, *u;
	int32_t *lab;
	int il, idl, ilab, ilo, ico, s;
	char shape[96];

	NEWF(L, r, n);
	NEWF(dL, r, n);
	NEWF(loss, r, B);
	NEWF(corr, r, B);
	NEWF(u, r, B);
	lab = hnew(r, B * sizeof *lab);
	if (!lab)
		return mgpu_err(MGPU_ENOMEM, "selftest: out of host memory");
	fill(r->p, L, n, -3.0f, 3.0f);
	for (i = 0; c->ties && i < n; i++)
		L[i] = floorf(L[i]); /* six values: a row's maximum repeats */
	fill(r->p, u, B, 0.0f, 1.0f);
	for (i = 0; i < B; i++)
		lab[i] = (int32_t)(u[i] * (float)c->n) % (c->n ? c->n : 1);
	for (i = 0; c->nan_rows && c->n > 0 && i < B; i += 2) {
		L[i * ld] = NAN; /* ref's argmax stays at a NaN first logit */
		lab[i] = 0;
	}
	xent_gaps(L, B, (size_t)c->n, ld, 1e30f);
	fill_const(dL, n, NAN);
	xent_gaps(dL, B, (size_t)c->n, ld, 7.0f);
	fill_const(loss, B, NAN);
	fill_const(corr, B, NAN);
	MGPU_TRY(up(r, L, n * sizeof *L, &il));
	MGPU_TRY(up(r, dL, n * sizeof *dL, &idl));
	MGPU_TRY(up(r, lab, B * sizeof *lab, &ilab));
	MGPU_TRY(up(r, loss, B * sizeof *loss, &ilo));
	MGPU_TRY(up(r, corr, B * sizeof *corr, &ico));
	if (c->in_place)
		idl = il; /* the gpt's head: the gradient over the logits */
	for (s = 0; s < 2; s++)
		MGPU_TRY(devof(r, s)->ops->xent(devof(r, s), c->no_grad ? NULL : dptr(r, idl, s),
					      dptr(r, ilo, s), dptr(r, ico, s), dptr(r, il, s),
					      (const int32_t *)r->d[ilab][s], c->m, c->n,
					      (int)ld, c->scale));
	MGPU_TRY(cmp_out_nan(r, &e, ilo, B, c->nan_rows));
	MGPU_TRY(cmp_out(r, &e, ico, B));
	if (!c->no_grad)
		MGPU_TRY(cmp_out_nan(r, &e, idl, n, c->nan_rows));
	else
		MGPU_TRY(cmp_out_nan(r, &e, il, n, c->nan_rows)); /* read only, gaps too */
	snprintf(shape, sizeof shape, "B=%d C=%d ld=%zu scale=%g%s%s%s%s", c->m, c->n, ld,
		 (double)c->scale, c->no_grad ? " no-grad" : "", c->ties ? " ties" : "",
		 c->nan_rows ? " nan" : "", c->in_place ? " in-place" : "");
	mgpu_ops_report_add(r->p, "xent", shape, e.worst);
	return 0;
}

static int case_u8(struct run *r, const struct mgpu_ops_case *c)
{
	size_t n = (size_t)c->n, i;
	struct err e = { 0.0 };
	float *Y, *u;
	uint8_t *X;
	int ix, iy, s;
	char shape[64];

	NEWF(Y, r, n);
	NEWF(u, r, n);
	X = hnew(r, n);
	if (!X)
		return mgpu_err(MGPU_ENOMEM, "selftest: out of host memory");
	fill(r->p, u, n, 0.0f, 256.0f);
	for (i = 0; i < n; i++)
		X[i] = (uint8_t)u[i];
	fill_const(Y, n, NAN);
	MGPU_TRY(up(r, X, n, &ix));
	MGPU_TRY(up(r, Y, n * sizeof *Y, &iy));
	for (s = 0; s < 2; s++)
		MGPU_TRY(devof(r, s)->ops->u8_to_f32(devof(r, s), dptr(r, iy, s),
						   (const uint8_t *)r->d[ix][s], n, c->scale,
						   c->shift));
	MGPU_TRY(cmp_out(r, &e, iy, n));
	snprintf(shape, sizeof shape, "n=%zu scale=%g shift=%g", n, (double)c->scale,
		 (double)c->shift);
	mgpu_ops_report_add(r->p, "u8_to_f32", shape, e.worst);
	return 0;
}

static int case_sgd(struct run *r, const struct mgpu_ops_case *c)
{
	struct mgpu_sgd_hp hp = { .lr = 0.1f, .momentum = c->momentum, .weight_decay = 1e-4f,
				  .grad_scale = 0.5f, .nesterov = c->nesterov };
	size_t n = (size_t)c->n;
	struct err e = { 0.0 };
	float *w, *g1, *g2, *mom;
	int iw, ig1, ig2, im, s;
	char shape[64];

	NEWF(w, r, n);
	NEWF(g1, r, n);
	NEWF(g2, r, n);
	NEWF(mom, r, n);
	fill(r->p, w, n, -1.0f, 1.0f);
	fill(r->p, g1, n, -1.0f, 1.0f);
	fill(r->p, g2, n, -1.0f, 1.0f);
	MGPU_TRY(up(r, w, n * sizeof *w, &iw));
	MGPU_TRY(up(r, g1, n * sizeof *g1, &ig1));
	MGPU_TRY(up(r, g2, n * sizeof *g2, &ig2));
	MGPU_TRY(up(r, mom, n * sizeof *mom, &im));
	for (s = 0; s < 2; s++) {
		float *m = hp.momentum != 0.0f ? dptr(r, im, s) : NULL;
		MGPU_TRY(devof(r, s)->ops->sgd(devof(r, s), dptr(r, iw, s), dptr(r, ig1, s), m, n, &hp));
		MGPU_TRY(devof(r, s)->ops->sgd(devof(r, s), dptr(r, iw, s), dptr(r, ig2, s), m, n, &hp));
	}
	MGPU_TRY(cmp_out(r, &e, iw, n));
	MGPU_TRY(cmp_out(r, &e, im, n));
	snprintf(shape, sizeof shape, "n=%zu momentum=%g%s 2 steps", n, (double)c->momentum,
		 c->nesterov ? " nesterov" : "");
	mgpu_ops_report_add(r->p, "sgd", shape, e.worst);
	return 0;
}

static int case_adamw(struct run *r, const struct mgpu_ops_case *c)
{
	struct mgpu_adamw_hp hp = { 1e-2f, 0.9f, 0.999f, 1e-8f, 0.01f, 1.0f, 0.0f, 0.0f };
	size_t n = (size_t)c->n;
	struct err e = { 0.0 };
	float *w, *g, *m, *v;
	int iw, ig, im, iv, s, t;
	char shape[64];

	NEWF(w, r, n);
	NEWF(g, r, n);
	NEWF(m, r, n);
	NEWF(v, r, n);
	fill(r->p, w, n, -1.0f, 1.0f);
	fill(r->p, g, n, -1.0f, 1.0f);
	MGPU_TRY(up(r, w, n * sizeof *w, &iw));
	MGPU_TRY(up(r, g, n * sizeof *g, &ig));
	MGPU_TRY(up(r, m, n * sizeof *m, &im));
	MGPU_TRY(up(r, v, n * sizeof *v, &iv));
	for (t = 1; t <= 2; t++) {
		hp.bias_corr1 = 1.0f - powf(hp.beta1, (float)t);
		hp.bias_corr2 = 1.0f - powf(hp.beta2, (float)t);
		for (s = 0; s < 2; s++)
			MGPU_TRY(devof(r, s)->ops->adamw(devof(r, s), dptr(r, iw, s), dptr(r, ig, s),
						       dptr(r, im, s), dptr(r, iv, s), n, &hp));
	}
	MGPU_TRY(cmp_out(r, &e, iw, n));
	MGPU_TRY(cmp_out(r, &e, im, n));
	MGPU_TRY(cmp_out(r, &e, iv, n));
	snprintf(shape, sizeof shape, "n=%zu 2 steps", n);
	mgpu_ops_report_add(r->p, "adamw", shape, e.worst);
	return 0;
}

/* ---- transformer ops ------------------------------------------------------ */

/* `batch` padded matrices `stride` floats apart, NaN (or pad) in the gaps. */
static void fill_batch(struct mgpu_ops_pair *p, float *x, int rows, int cols, int ld,
		       long long stride, int batch, float pad, int nan_inside)
{
	size_t one = (size_t)ld * (size_t)cols;
	int i;

	for (i = 0; i < batch; i++) {
		fill_padded(p, x + i * stride, rows, cols, ld, pad, nan_inside);
		fill_const(x + i * stride + one, (size_t)stride - one, pad);
	}
}

/* Every C of the batch within tolerance; padding and gaps untouched. */
static void cmp_batch_c(struct err *e, const float *c0, const float *c1, int m, int n,
			int ldc, long long sc, int batch)
{
	size_t i, at, total = (size_t)sc * (size_t)batch;
	int b;

	for (b = 0; b < batch; b++)
		err_add(e, rel_err_ld(c0 + b * sc, c1 + b * sc, (size_t)m, (size_t)n, (size_t)ldc));
	for (i = 0; i < total; i++) {
		at = i % (size_t)sc;
		if (at < (size_t)ldc * n && at % (size_t)ldc < (size_t)m)
			continue; /* inside a C */
		if (c0[i] != SENTINEL || c1[i] != SENTINEL)
			err_add(e, INFINITY);
	}
}

/* A float array as bf16 or fp16 (prec), rounded to nearest even (NaN
 * padding stays NaN). */
static uint16_t *to_16(struct run *r, const float *x, size_t n, enum mgpu_prec prec)
{
	uint16_t *h = hnew(r, n * sizeof *h);
	size_t i;

	for (i = 0; h && i < n; i++)
		h[i] = prec == MGPU_PREC_FP16 ? mgpu_f16_from_f32(x[i]) : mgpu_bf16_from_f32(x[i]);
	return h;
}

/* The gemm op: one or `batch` padded products with NaN in A's and B's padding
 * and gaps (never read), C NaN-filled under beta == 0, its padding and
 * gaps a sentinel (never written); 16-bit inputs rounded on the host. */
static int case_gemm(struct run *r, const struct mgpu_ops_case *c)
{
	int ar = c->ta == MGPU_N ? c->m : c->k, ac = c->ta == MGPU_N ? c->k : c->m;
	int br = c->tb == MGPU_N ? c->k : c->n, bc = c->tb == MGPU_N ? c->n : c->k;
	int lda = c->lda ? c->lda : max1(ar), ldb = c->ldb ? c->ldb : max1(br);
	int ldc = c->ldc ? c->ldc : max1(c->m), nb = c->strided ? c->batch : 1;
	int gap = c->strided && c->lda ? 5 : 0, wide = c->prec != MGPU_PREC_FP32;
	long long sa = (long long)lda * ac + gap, sb = (long long)ldb * bc + gap;
	long long sc = (long long)ldc * c->n + gap, st = c->strided ? 1 : 0;
	size_t na = (size_t)sa * nb, nbm = (size_t)sb * nb, nc = (size_t)sc * nb;
	size_t esz = wide ? sizeof(uint16_t) : sizeof(float);
	static const char *const rows[] = { [MGPU_PREC_FP32] = "gemm",
					    [MGPU_PREC_BF16] = "gemm_bf16",
					    [MGPU_PREC_FP16] = "gemm_f16" };
	float *A, *Bm, *C, *c0, *c1;
	const void *ah, *bh;
	struct err e = { 0.0 };
	int ia, ib, ic, s;
	char shape[64];

	if (c->prec < MGPU_PREC_FP32 || c->prec > MGPU_PREC_FP16)
		return mgpu_err(MGPU_EINVAL, "unknown precision %d", (int)c->prec);
	NEWF(A, r, na);
	NEWF(Bm, r, nbm);
	NEWF(C, r, nc);
	NEWF(c0, r, nc);
	NEWF(c1, r, nc);
	fill_batch(r->p, A, ar, ac, lda, sa, nb, NAN, 0);
	fill_batch(r->p, Bm, br, bc, ldb, sb, nb, NAN, 0);
	fill_batch(r->p, C, c->m, c->n, ldc, sc, nb, SENTINEL, c->beta == 0.0f);
	ah = wide ? (const void *)to_16(r, A, na, c->prec) : A;
	bh = wide ? (const void *)to_16(r, Bm, nbm, c->prec) : Bm;
	if (!ah || !bh)
		return mgpu_err(MGPU_ENOMEM, "selftest: out of host memory");
	MGPU_TRY(up(r, ah, na * esz, &ia));
	MGPU_TRY(up(r, bh, nbm * esz, &ib));
	MGPU_TRY(up(r, C, nc * sizeof *C, &ic));
	for (s = 0; s < 2; s++)
		MGPU_TRY(devof(r, s)->ops->gemm(devof(r, s), c->prec, c->ta, c->tb, c->m, c->n,
						c->k, c->alpha, r->d[ia][s], lda, sa * st,
						r->d[ib][s], ldb, sb * st, c->beta, dptr(r, ic, s),
						ldc, sc * st, nb));
	MGPU_TRY(down(r, ic, c0, c1));
	cmp_batch_c(&e, c0, c1, c->m, c->n, ldc, sc, nb);
	if (c->strided)
		snprintf(shape, sizeof shape, "m=%d n=%d k=%d %c%c batch=%d gap=%d b=%g", c->m,
			 c->n, c->k, c->ta == MGPU_N ? 'N' : 'T', c->tb == MGPU_N ? 'N' : 'T',
			 c->batch, gap, (double)c->beta);
	else
		snprintf(shape, sizeof shape, "m=%d n=%d k=%d %c%c ld=%d,%d,%d a=%g b=%g", c->m,
			 c->n, c->k, c->ta == MGPU_N ? 'N' : 'T', c->tb == MGPU_N ? 'N' : 'T', lda,
			 ldb, ldc, (double)c->alpha, (double)c->beta);
	mgpu_ops_report_add(r->p, rows[c->prec], shape, e.worst);
	return 0;
}
static int case_add(struct run *r, const struct mgpu_ops_case *c)
{
	size_t n = (size_t)c->n;
	struct err e = { 0.0 };
	float *X1, *X2, *Y;
	int i1, i2, iy, s;
	char shape[64];

	NEWF(X1, r, n);
	NEWF(X2, r, n);
	NEWF(Y, r, n);
	fill(r->p, X1, n, -1.0f, 1.0f);
	fill(r->p, X2, n, -1.0f, 1.0f);
	fill_const(Y, n, NAN);
	MGPU_TRY(up(r, X1, n * sizeof *X1, &i1));
	MGPU_TRY(up(r, X2, n * sizeof *X2, &i2));
	MGPU_TRY(up(r, Y, n * sizeof *Y, &iy));
	iy = c->in_place == 1 ? i1 : c->in_place == 2 ? i2 : iy;
	for (s = 0; s < 2; s++)
		MGPU_TRY(devof(r, s)->ops->add(devof(r, s), dptr(r, iy, s), dptr(r, i1, s),
					       dptr(r, i2, s), n));
	MGPU_TRY(cmp_out(r, &e, iy, n));
	snprintf(shape, sizeof shape, "n=%zu%s", n,
		 c->in_place == 1 ? " Y=X1" : c->in_place == 2 ? " Y=X2" : "");
	mgpu_ops_report_add(r->p, "add", shape, e.worst);
	return 0;
}

/* Random ids in [0, V): small V repeats ids, which the backward sums. */
static int32_t *new_ids(struct run *r, size_t n, int V)
{
	int32_t *ids = hnew(r, n * sizeof *ids);
	float *u = fnew(r, n);
	size_t i;

	if (!ids || !u)
		return NULL;
	fill(r->p, u, n, 0.0f, (float)V);
	for (i = 0; i < n; i++)
		ids[i] = (int32_t)u[i] % (V ? V : 1);
	return ids;
}

/* Backward half of case_emb; the ids are uploaded as iid. */
static int emb_bwd(struct run *r, const struct mgpu_ops_case *c, int iid)
{
	int B = c->m, T = c->k, D = c->n, V = c->V;
	size_t N = (size_t)B * T, nt = (size_t)V * D, np = (size_t)T * D;
	struct err e = { 0.0 };
	float *dY, *dwte, *dwpe;
	int idy, it, ip, s;
	char shape[64];

	NEWF(dY, r, N * D);
	NEWF(dwte, r, nt);
	NEWF(dwpe, r, np);
	fill(r->p, dY, N * D, -1.0f, 1.0f);
	fill(r->p, dwte, nt, -1.0f, 1.0f);
	fill(r->p, dwpe, np, -1.0f, 1.0f);
	if (c->acc == 0.0f) {
		fill_const(dwte, nt, NAN);
		fill_const(dwpe, np, NAN);
	}
	MGPU_TRY(up(r, dY, N * D * sizeof *dY, &idy));
	MGPU_TRY(up(r, dwte, nt * sizeof *dwte, &it));
	MGPU_TRY(up(r, dwpe, np * sizeof *dwpe, &ip));
	for (s = 0; s < 2; s++)
		MGPU_TRY(devof(r, s)->ops->emb_bwd(devof(r, s), dptr(r, it, s), dptr(r, ip, s),
						   dptr(r, idy, s),
						   (const int32_t *)r->d[iid][s], B, T, V, D,
						   c->acc));
	MGPU_TRY(cmp_out(r, &e, it, nt));
	MGPU_TRY(cmp_out(r, &e, ip, np));
	snprintf(shape, sizeof shape, "B=%d T=%d V=%d D=%d acc=%g", B, T, V, D, (double)c->acc);
	mgpu_ops_report_add(r->p, "emb_bwd", shape, e.worst);
	return 0;
}

static int case_emb(struct run *r, const struct mgpu_ops_case *c)
{
	int B = c->m, T = c->k, D = c->n, V = c->V;
	size_t N = (size_t)B * T, nt = (size_t)V * D, np = (size_t)T * D;
	struct err e = { 0.0 };
	float *wte, *wpe, *Y;
	int32_t *ids;
	int iid, it, ip, iy, s;
	char shape[64];

	NEWF(wte, r, nt);
	NEWF(wpe, r, np);
	NEWF(Y, r, N * D);
	ids = new_ids(r, N, V);
	if (!ids)
		return mgpu_err(MGPU_ENOMEM, "selftest: out of host memory");
	fill(r->p, wte, nt, -1.0f, 1.0f);
	fill(r->p, wpe, np, -1.0f, 1.0f);
	fill_const(Y, N * D, NAN);
	MGPU_TRY(up(r, ids, N * sizeof *ids, &iid));
	MGPU_TRY(up(r, wte, nt * sizeof *wte, &it));
	MGPU_TRY(up(r, wpe, np * sizeof *wpe, &ip));
	MGPU_TRY(up(r, Y, N * D * sizeof *Y, &iy));
	for (s = 0; s < 2; s++)
		MGPU_TRY(devof(r, s)->ops->emb_fwd(devof(r, s), dptr(r, iy, s),
						   (const int32_t *)r->d[iid][s], dptr(r, it, s),
						   dptr(r, ip, s), B, T, V, D));
	MGPU_TRY(cmp_out(r, &e, iy, N * D));
	snprintf(shape, sizeof shape, "B=%d T=%d V=%d D=%d", B, T, V, D);
	mgpu_ops_report_add(r->p, "emb_fwd", shape, e.worst);
	return emb_bwd(r, c, iid);
}

/* Backward half of case_flash: y and lse are the reference's, given to
 * both devices with the same q, k, v (ids iq, ik, iv). */
static int flash_bwd(struct run *r, const struct mgpu_ops_case *c, int iq, int ik, int iv,
		     const float *y, const float *lse, const char *shape)
{
	size_t n = (size_t)c->m * c->n * c->k;
	struct err e = { 0.0 };
	float *dy, *nan, *g0, *g1;
	int iy, il, idy, ig[3], s, g;

	NEWF(dy, r, n);
	NEWF(nan, r, n);
	fill(r->p, dy, n, -1.0f, 1.0f);
	fill_const(nan, n, NAN);
	MGPU_TRY(up(r, y, n * sizeof *y, &iy));
	MGPU_TRY(up(r, lse, (size_t)c->m * c->n * sizeof *lse, &il));
	MGPU_TRY(up(r, dy, n * sizeof *dy, &idy));
	for (g = 0; g < 3; g++)
		MGPU_TRY(up(r, nan, n * sizeof *nan, &ig[g]));
	for (s = 0; s < 2; s++)
		MGPU_TRY(devof(r, s)->ops->attn_bwd(devof(r, s), dptr(r, ig[0], s),
						    dptr(r, ig[1], s), dptr(r, ig[2], s),
						    dptr(r, iq, s), dptr(r, ik, s), dptr(r, iv, s),
						    dptr(r, iy, s), dptr(r, idy, s), dptr(r, il, s),
						    c->m, c->n, c->k, c->scale, c->prec));
	/* one error over dq, dk, dv together: at T = 1 dq and dk are 0 up
	 * to rounding (ds = p (dp - D) with p = 1, dp = D) and would be
	 * measured against their own noise */
	NEWF(g0, r, 3 * n);
	NEWF(g1, r, 3 * n);
	for (g = 0; g < 3; g++)
		MGPU_TRY(down(r, ig[g], g0 + g * n, g1 + g * n));
	err_vec(&e, g0, g1, 3 * n);
	mgpu_ops_report_add(r->p, c->prec == MGPU_PREC_BF16 ? "attn_bwd_bf16" : "attn_bwd", shape,
			    e.worst);
	return 0;
}

static int case_flash(struct run *r, const struct mgpu_ops_case *c)
{
	size_t n = (size_t)c->m * c->n * c->k, nl = (size_t)c->m * c->n;
	struct err e = { 0.0 };
	float *q, *k, *v, *y0, *y1, *l0, *l1;
	int iq, ik, iv, iy, il, s;
	char shape[64];

	NEWF(q, r, n);
	NEWF(k, r, n);
	NEWF(v, r, n);
	NEWF(y0, r, n);
	NEWF(y1, r, n);
	NEWF(l0, r, nl);
	NEWF(l1, r, nl);
	fill(r->p, q, n, -2.0f, 2.0f); /* scores up to a few units: peaked rows */
	fill(r->p, k, n, -2.0f, 2.0f);
	fill(r->p, v, n, -1.0f, 1.0f);
	fill_const(y0, n, NAN);
	fill_const(l0, nl, NAN);
	MGPU_TRY(up(r, q, n * sizeof *q, &iq));
	MGPU_TRY(up(r, k, n * sizeof *k, &ik));
	MGPU_TRY(up(r, v, n * sizeof *v, &iv));
	MGPU_TRY(up(r, y0, n * sizeof *y0, &iy));
	MGPU_TRY(up(r, l0, nl * sizeof *l0, &il));
	for (s = 0; s < 2; s++)
		MGPU_TRY(devof(r, s)->ops->attn_fwd(devof(r, s), dptr(r, iy, s), dptr(r, il, s),
						    dptr(r, iq, s), dptr(r, ik, s), dptr(r, iv, s),
						    c->m, c->n, c->k, c->scale, c->prec));
	MGPU_TRY(down(r, iy, y0, y1));
	err_vec(&e, y0, y1, n);
	MGPU_TRY(down(r, il, l0, l1));
	err_vec(&e, l0, l1, nl);
	snprintf(shape, sizeof shape, "BH=%d T=%d Dh=%d scale=%g%s", c->m, c->n, c->k,
		 (double)c->scale, c->prec == MGPU_PREC_BF16 ? " bf16" : "");
	mgpu_ops_report_add(r->p, c->prec == MGPU_PREC_BF16 ? "attn_fwd_bf16" : "attn_fwd", shape,
			    e.worst);
	return flash_bwd(r, c, iq, ik, iv, y1, l1, shape);
}

/* Y (B,T,ld) with H*Dh columns written by merge: compare those, the rest
 * must still hold the sentinel. */
static void cmp_merged(struct err *e, const float *y0, const float *y1, size_t rows, int HD,
		       int ld)
{
	size_t i, j;

	err_add(e, rel_err_ld(y0, y1, (size_t)HD, rows, (size_t)ld));
	for (i = 0; i < rows; i++)
		for (j = (size_t)HD; j < (size_t)ld; j++)
			if (y0[i * ld + j] != SENTINEL || y1[i * ld + j] != SENTINEL)
				err_add(e, INFINITY);
}

static int case_heads(struct run *r, const struct mgpu_ops_case *c)
{
	int B = c->m, T = c->k, Dh = c->n, H = c->H, HD = H * Dh;
	int ld = c->ldb ? c->ldb : max1(HD);
	size_t rows = (size_t)B * T, nflat = rows * ld, nh = rows * HD;
	struct err e = { 0.0 }, e2 = { 0.0 };
	float *X, *Y, *Xh, *Yf, *y0, *y1;
	int ix, iy, ixh, iyf, s;
	char shape[64];

	NEWF(X, r, nflat);
	NEWF(Y, r, nh);
	NEWF(Xh, r, nh);
	NEWF(Yf, r, nflat);
	NEWF(y0, r, nflat);
	NEWF(y1, r, nflat);
	fill_padded(r->p, X, HD, (int)rows, ld, NAN, 0); /* padding must not be read */
	fill_const(Y, nh, NAN);
	fill(r->p, Xh, nh, -1.0f, 1.0f);
	fill_const(Yf, nflat, SENTINEL);
	MGPU_TRY(up(r, X, nflat * sizeof *X, &ix));
	MGPU_TRY(up(r, Y, nh * sizeof *Y, &iy));
	MGPU_TRY(up(r, Xh, nh * sizeof *Xh, &ixh));
	MGPU_TRY(up(r, Yf, nflat * sizeof *Yf, &iyf));
	for (s = 0; s < 2; s++) {
		MGPU_TRY(devof(r, s)->ops->heads_split(devof(r, s), dptr(r, iy, s), dptr(r, ix, s),
						       ld, B, T, H, Dh));
		MGPU_TRY(devof(r, s)->ops->heads_merge(devof(r, s), dptr(r, iyf, s), ld,
						       dptr(r, ixh, s), B, T, H, Dh));
	}
	MGPU_TRY(cmp_out(r, &e, iy, nh));
	snprintf(shape, sizeof shape, "B=%d T=%d H=%d Dh=%d ld=%d", B, T, H, Dh, ld);
	mgpu_ops_report_add(r->p, "heads_split", shape, e.worst);
	MGPU_TRY(down(r, iyf, y0, y1));
	cmp_merged(&e2, y0, y1, rows, HD, ld);
	mgpu_ops_report_add(r->p, "heads_merge", shape, e2.worst);
	return 0;
}

/* Conversions must agree bit for bit (NaN payloads included). */
static void cmp_bits(struct err *e, const void *a, const void *b, size_t nbytes)
{
	err_add(e, memcmp(a, b, nbytes) == 0 ? 0.0 : INFINITY);
}

/* The inputs rounding must get right, then random bits over every range. */
static void fill_bf16_inputs(struct mgpu_ops_pair *p, uint32_t *u, size_t n)
{
	static const uint32_t special[] = {
		0x7fc00000u, 0xffc00001u, 0x7f800001u, /* NaNs, one signalling */
		0x7f800000u, 0xff800000u, 0x00000000u, 0x80000000u, /* Inf, zeros */
		0x3f808000u, 0x3f818000u, /* ties: to even stays, to odd goes up */
		0x3f808001u, 0x3f807fffu, /* just above, just below a tie */
		0x7f7fffffu, 0x00000001u, 0x807fffffu, /* max -> Inf, denormals */
	};
	uint64_t st = p->stream++;
	size_t i;

	for (i = 0; i < n; i++)
		u[i] = i < sizeof special / sizeof special[0]
			       ? special[i]
			       : (uint32_t)mgpu_hash64(p->seed + st, i);
}

static int case_bf16(struct run *r, const struct mgpu_ops_case *c)
{
	size_t n = (size_t)c->n;
	struct err e = { 0.0 }, e2 = { 0.0 };
	uint32_t *X;
	uint16_t *H, *Hb, *h0, *h1;
	float *F, *f0, *f1;
	int ix, ih, ihb, iff, s;
	char shape[64];
	size_t i;

	X = hnew(r, n * sizeof *X);
	H = hnew(r, n * sizeof *H);
	Hb = hnew(r, n * sizeof *Hb);
	h0 = hnew(r, n * sizeof *h0);
	h1 = hnew(r, n * sizeof *h1);
	F = fnew(r, n);
	f0 = fnew(r, n);
	f1 = fnew(r, n);
	if (!X || !H || !Hb || !h0 || !h1 || !F || !f0 || !f1)
		return mgpu_err(MGPU_ENOMEM, "selftest: out of host memory");
	fill_bf16_inputs(r->p, X, n);
	memset(H, 0xff, n * sizeof *H);
	for (i = 0; i < n; i++)
		Hb[i] = (uint16_t)(X[i] >> 7); /* every bf16 pattern, NaNs too */
	fill_const(F, n, NAN);
	MGPU_TRY(up(r, X, n * sizeof *X, &ix));
	MGPU_TRY(up(r, H, n * sizeof *H, &ih));
	MGPU_TRY(up(r, Hb, n * sizeof *Hb, &ihb));
	MGPU_TRY(up(r, F, n * sizeof *F, &iff));
	for (s = 0; s < 2; s++) {
		MGPU_TRY(devof(r, s)->ops->f32_to_bf16(devof(r, s), (uint16_t *)r->d[ih][s],
						       dptr(r, ix, s), n));
		MGPU_TRY(devof(r, s)->ops->bf16_to_f32(devof(r, s), dptr(r, iff, s),
						       (const uint16_t *)r->d[ihb][s], n));
	}
	MGPU_TRY(down(r, ih, h0, h1));
	cmp_bits(&e, h0, h1, n * sizeof *h0);
	MGPU_TRY(down(r, iff, f0, f1));
	cmp_bits(&e2, f0, f1, n * sizeof *f0);
	snprintf(shape, sizeof shape, "n=%zu", n);
	mgpu_ops_report_add(r->p, "f32_to_bf16", shape, e.worst);
	mgpu_ops_report_add(r->p, "bf16_to_f32", shape, e2.worst);
	return 0;
}

/* f32_to_f16 on the same inputs as bf16's (ties, overflow, subnormals,
 * NaNs, random bits) plus fp16's own edges: bit for bit. */
static int case_f16(struct run *r, const struct mgpu_ops_case *c)
{
	static const uint32_t edges[] = { 0x477fe000u, 0x477fefffu, 0x477ff000u, 0x38800000u,
					  0x33800000u, 0x33000000u, 0x33000001u, 0x33c00000u,
					  0x3f801000u, 0x3f803000u, 0xb8000001u };
	size_t n = (size_t)c->n, i;
	struct err e = { 0.0 };
	uint32_t *X;
	uint16_t *H, *h0, *h1;
	int ix, ih, s;
	char shape[64];

	X = hnew(r, n * sizeof *X);
	H = hnew(r, n * sizeof *H);
	h0 = hnew(r, n * sizeof *h0);
	h1 = hnew(r, n * sizeof *h1);
	if (!X || !H || !h0 || !h1)
		return mgpu_err(MGPU_ENOMEM, "selftest: out of host memory");
	fill_bf16_inputs(r->p, X, n);
	for (i = 0; i < n && i < sizeof edges / sizeof edges[0]; i++)
		X[n - 1 - i] = edges[i];
	memset(H, 0xff, n * sizeof *H);
	MGPU_TRY(up(r, X, n * sizeof *X, &ix));
	MGPU_TRY(up(r, H, n * sizeof *H, &ih));
	for (s = 0; s < 2; s++)
		MGPU_TRY(devof(r, s)->ops->f32_to_f16(devof(r, s), (uint16_t *)r->d[ih][s],
						      dptr(r, ix, s), n));
	MGPU_TRY(down(r, ih, h0, h1));
	cmp_bits(&e, h0, h1, n * sizeof *h0);
	snprintf(shape, sizeof shape, "n=%zu", n);
	mgpu_ops_report_add(r->p, "f32_to_f16", shape, e.worst);
	return 0;
}

/* Relative error of one double against the reference; the same
 * non-finite value on both sides (a NaN or infinite input) counts as 0. */
static double rel_err_f64(double a, double ref)
{
	if (a == ref || (isnan(a) && isnan(ref)))
		return 0.0;
	if (!isfinite(a) || !isfinite(ref))
		return INFINITY;
	return fabs(a - ref) / (fabs(ref) > TINY ? fabs(ref) : TINY);
}

/* n floats in [-1, 1) (inf: one of them +inf) summed (squares: their
 * squares) times scale into an accumulator that starts at acc. */
static int case_sum_acc(struct run *r, const struct mgpu_ops_case *c)
{
	size_t n = (size_t)c->n;
	double acc0 = c->acc, out[2];
	int ix, ia, s;
	char shape[64];
	float *x;

	NEWF(x, r, n);
	fill(r->p, x, n, -1.0f, 1.0f);
	if (c->inf && n > 0)
		x[n / 2] = INFINITY;
	MGPU_TRY(up(r, x, n * sizeof *x, &ix));
	MGPU_TRY(up(r, &acc0, sizeof acc0, &ia));
	for (s = 0; s < 2; s++)
		MGPU_TRY(devof(r, s)->ops->sum_acc(devof(r, s), (double *)r->d[ia][s],
						   dptr(r, ix, s), n, c->squares,
						   (double)c->scale));
	MGPU_TRY(down(r, ia, &out[0], &out[1]));
	snprintf(shape, sizeof shape, "n=%zu %s%s scale=%g acc=%g", n,
		 c->squares ? "squares" : "values", c->inf ? " inf" : "", (double)c->scale,
		 (double)c->acc);
	mgpu_ops_report_add(r->p, "sum_acc", shape, rel_err_f64(out[0], out[1]));
	return 0;
}

static const struct {
	const char *op;
	int (*fn)(struct run *r, const struct mgpu_ops_case *c);
} cases[] = {
	{ "gemm", case_gemm },         { "nrm2", case_nrm2 },       { "bias_act", case_bias_act },
	{ "act_bwd", case_act_bwd },   { "col_sum", case_col_sum }, { "ln", case_ln },
	{ "dropout", case_dropout },   { "xent", case_xent },       { "u8_to_f32", case_u8 },
	{ "sgd", case_sgd },           { "adamw", case_adamw },     { "add", case_add },
	{ "emb", case_emb },           { "flash", case_flash },     { "heads", case_heads },
	{ "bf16", case_bf16 },         { "f16", case_f16 },         { "sum_acc", case_sum_acc },
};

/* ---- public ----------------------------------------------------------- */

int mgpu_ops_check_case(struct mgpu_ops_pair *p, const struct mgpu_ops_case *c)
{
	struct run r;
	size_t i;
	int rc;

	if (c->m < 0 || c->n < 0 || c->k < 0)
		return mgpu_err(MGPU_EINVAL, "selftest %s: negative size", c->op);
	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		if (strcmp(cases[i].op, c->op) != 0)
			continue;
		memset(&r, 0, sizeof r);
		r.p = p;
		rc = cases[i].fn(&r, c);
		run_free(&r);
		if (rc < 0)
			return mgpu_err_prefix(rc, "selftest %s (%s vs %s): ", c->op,
					       p->dev[0].ops->name, p->dev[1].ops->name);
		return 0;
	}
	return mgpu_err(MGPU_EINVAL, "selftest: unknown op '%s'", c->op);
}

int mgpu_ops_pair_open(struct mgpu_ops_pair *p, const struct mgpu_ops *ops, int index,
		       const struct mgpu_ops *ref, uint64_t seed, struct mgpu_ops_report *rep)
{
	int rc;

	memset(p, 0, sizeof *p);
	memset(rep, 0, sizeof *rep);
	p->seed = seed;
	p->rep = rep;
	rc = mgpu_dev_open(&p->dev[0], ops, index);
	if (rc < 0) {
		p->dev[0].ops = NULL; /* nothing to close */
		return rc;
	}
	rc = mgpu_dev_open(&p->dev[1], ref, 0);
	if (rc < 0) {
		p->dev[1].ops = NULL;
		mgpu_dev_close(&p->dev[0]);
	}
	return rc;
}

void mgpu_ops_pair_close(struct mgpu_ops_pair *p)
{
	mgpu_dev_close(&p->dev[0]);
	mgpu_dev_close(&p->dev[1]);
}

/* The selftest's cases: training-like shapes of mlp:784-512-...-10 at batch
 * 128 (row-major activations, so the column-major products are transposed:
 * forward Y^T = W^T X^T, dW^T = dY^T X, dX^T = W dY^T), then odd shapes. */
static const struct mgpu_ops_case selftest[] = {
	{ .op = "gemm", .m = 512, .n = 128, .k = 784, .alpha = 1.0f },
	{ .op = "gemm", .tb = MGPU_T, .m = 512, .n = 784, .k = 128, .alpha = 1.0f, .beta = 1.0f },
	{ .op = "gemm", .ta = MGPU_T, .m = 784, .n = 128, .k = 512, .alpha = 1.0f },
	{ .op = "gemm", .ta = MGPU_T, .tb = MGPU_T, .m = 37, .n = 19, .k = 23, .lda = 41, .ldb = 29,
	  .ldc = 40, .alpha = 0.5f, .beta = 0.25f },
	{ .op = "nrm2", .n = 65539 },
	{ .op = "bias_act", .m = 128, .n = 512 },
	{ .op = "bias_act", .m = 128, .n = 512, .act = MGPU_ACT_RELU },
	{ .op = "bias_act", .m = 128, .n = 512, .act = MGPU_ACT_GELU },
	{ .op = "bias_act", .m = 128, .n = 512, .act = MGPU_ACT_TANH },
	{ .op = "act_bwd", .n = 65536, .act = MGPU_ACT_RELU },
	{ .op = "act_bwd", .n = 65536, .act = MGPU_ACT_GELU },
	{ .op = "act_bwd", .n = 65536, .act = MGPU_ACT_TANH },
	{ .op = "col_sum", .m = 128, .n = 512 },
	{ .op = "col_sum", .m = 128, .n = 10, .acc = 1.0f },
	{ .op = "ln", .m = 128, .n = 512 },
	{ .op = "dropout", .n = 65536, .p = 0.1f, .offset = 12345 },
	{ .op = "xent", .m = 128, .n = 10, .scale = 1.0f / 128 },
	{ .op = "u8_to_f32", .n = 100352, .scale = 1.0f / 255, .shift = -0.5f },
	{ .op = "sgd", .n = 65536, .momentum = 0.9f, .nesterov = 1 },
	{ .op = "adamw", .n = 65536 },
	/* a gpt block at B=4, T=64, H=4, Dh=32 (D=128), vocab 256: the score
	 * and value products of attention, then its other ops */
	{ .op = "gemm", .ta = MGPU_T, .m = 64, .n = 64, .k = 32, .lda = 32, .ldb = 32, .ldc = 64,
	  .alpha = 0.125f, .strided = 1, .batch = 16 },
	{ .op = "gemm", .m = 32, .n = 64, .k = 64, .lda = 32, .ldb = 64, .ldc = 32, .alpha = 1.0f,
	  .strided = 1, .batch = 16 },
	{ .op = "gemm", .tb = MGPU_T, .m = 32, .n = 64, .k = 64, .alpha = 1.0f, .beta = 1.0f,
	  .strided = 1, .batch = 16 },
	{ .op = "add", .n = 32768, .in_place = 1 },
	{ .op = "emb", .m = 4, .n = 128, .k = 64, .V = 256, .acc = 1.0f },
	{ .op = "flash", .m = 16, .n = 64, .k = 32, .scale = 0.17677670f },
	{ .op = "flash", .m = 16, .n = 64, .k = 32, .scale = 0.17677670f, .prec = MGPU_PREC_BF16 },
	/* gpt-2 small's heads (Dh 64) over several tiles of keys and queries */
	{ .op = "flash", .m = 3, .n = 257, .k = 64, .scale = 0.125f },
	{ .op = "flash", .m = 3, .n = 257, .k = 64, .scale = 0.125f, .prec = MGPU_PREC_BF16 },
	/* one sample of the 768-wide, 12-head model (Dh 64) in bf16: the
	 * tensor-core kernels on cuda devices of capability 8.0 and newer */
	{ .op = "flash", .m = 12, .n = 256, .k = 64, .scale = 0.125f, .prec = MGPU_PREC_BF16 },
	/* bf16 at a head width the tensor-core tiles pad (100 of 128 columns,
	 * the widest tiles) and a T that leaves rows past it in both tiles */
	{ .op = "flash", .m = 2, .n = 100, .k = 100, .scale = 0.1f, .prec = MGPU_PREC_BF16 },
	/* a long context: cuda's GEMM form of attention (attn_gemm.cu, from
	 * T = 512), fp32 and bf16, at gpt-2 small's head width */
	{ .op = "flash", .m = 2, .n = 520, .k = 64, .scale = 0.125f },
	{ .op = "flash", .m = 4, .n = 520, .k = 64, .scale = 0.125f, .prec = MGPU_PREC_BF16 },
	/* the row ops at gpt-2 small's width (d 768) and a byte vocabulary, a
	 * warp per row on cuda; xent's logits tie for the maximum */
	{ .op = "ln", .m = 64, .n = 768, .acc = 1.0f },
	{ .op = "xent", .m = 64, .n = 256, .scale = 1.0f / 64, .ties = 1 },
	/* the gpt's head: logits' rows padded to a multiple of 8 floats, the
	 * gradient written over them; then wide rows (cuda: a block per row).
	 * Not GPT-2's 50257: ref's one running fp32 sum of that many
	 * exponentials drifts past xent's 1e-5 from any other order */
	{ .op = "xent", .m = 64, .n = 300, .ldc = 304, .scale = 1.0f / 64, .in_place = 1 },
	{ .op = "xent", .m = 16, .n = 8191, .ldc = 8192, .scale = 1.0f / 16, .in_place = 1 },
	{ .op = "heads", .m = 4, .n = 32, .k = 64, .H = 4, .ldb = 384 },
	{ .op = "bf16", .n = 65536 },
	/* --dtype bf16: the mlp's three products, then a batched one */
	{ .op = "gemm", .m = 512, .n = 128, .k = 784, .alpha = 1.0f, .prec = MGPU_PREC_BF16,
	  .strided = 1, .batch = 1 },
	{ .op = "gemm", .tb = MGPU_T, .m = 512, .n = 784, .k = 128, .alpha = 1.0f, .beta = 1.0f,
	  .prec = MGPU_PREC_BF16, .strided = 1, .batch = 1 },
	{ .op = "gemm", .ta = MGPU_T, .m = 784, .n = 128, .k = 512, .alpha = 1.0f,
	  .prec = MGPU_PREC_BF16, .strided = 1, .batch = 1 },
	{ .op = "gemm", .ta = MGPU_T, .m = 64, .n = 64, .k = 32, .lda = 32, .ldb = 32, .ldc = 64,
	  .alpha = 0.125f, .prec = MGPU_PREC_BF16, .strided = 1, .batch = 16 },
	/* --dtype fp16: the same products in fp16 */
	{ .op = "f16", .n = 65536 },
	{ .op = "gemm", .m = 512, .n = 128, .k = 784, .alpha = 1.0f, .prec = MGPU_PREC_FP16,
	  .strided = 1, .batch = 1 },
	{ .op = "gemm", .tb = MGPU_T, .m = 512, .n = 784, .k = 128, .alpha = 1.0f, .beta = 1.0f,
	  .prec = MGPU_PREC_FP16, .strided = 1, .batch = 1 },
	{ .op = "gemm", .ta = MGPU_T, .m = 784, .n = 128, .k = 512, .alpha = 1.0f,
	  .prec = MGPU_PREC_FP16, .strided = 1, .batch = 1 },
	/* a step's statistics: the loss of 4096 rows per sample, and the
	 * squared norm of a gradient of several chunks */
	{ .op = "sum_acc", .n = 4096, .scale = 1.0f / 64, .acc = 0.5f },
	{ .op = "sum_acc", .n = 200003, .scale = 1.0f, .squares = 1 },
};

/* conv nets: a ResNet block's 3x3 64-channel convolution at 28x28
 * (cuDNN's, or im2col's without it), its stride-2 1x1 projection with a
 * bias, a depthwise 3x3, a dilated grouped one, a 1-D convolution over a
 * sensor window (H = 1), then pooling, upsampling, the norms, SiLU. */
static const struct mgpu_ops_conv_case selftest_conv[] = {
	{ .op = "conv", .cv = MGPU_CV(4, 64, 28, 28, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1) },
	{ .op = "conv", .bias = 1, .acc = 1, .cv = MGPU_CV(4, 64, 28, 28, 128, 1, 1, 2, 2, 0, 0, 1, 1, 1) },
	{ .op = "conv", .bias = 1, .cv = MGPU_CV(4, 32, 15, 15, 32, 3, 3, 2, 2, 1, 1, 1, 1, 32) },
	{ .op = "conv", .cv = MGPU_CV(2, 16, 13, 11, 24, 3, 3, 1, 1, 2, 2, 2, 2, 2) },
	{ .op = "conv", .bias = 1, .cv = MGPU_CV(8, 6, 1, 100, 32, 1, 5, 1, 2, 0, 2, 1, 1, 1) },
	/* --dtype bf16's convolutions: the block's 3x3, its projection, a
	 * depthwise one and the 1-D one (cuda: im2col + cuBLAS's bf16 GEMM) */
	{ .op = "conv", .prec = MGPU_PREC_BF16, .cv = MGPU_CV(2, 64, 28, 28, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1) },
	{ .op = "conv", .prec = MGPU_PREC_BF16, .bias = 1, .acc = 1, .cv = MGPU_CV(4, 64, 28, 28, 128, 1, 1, 2, 2, 0, 0, 1, 1, 1) },
	{ .op = "conv", .prec = MGPU_PREC_BF16, .bias = 1, .cv = MGPU_CV(4, 32, 15, 15, 32, 3, 3, 2, 2, 1, 1, 1, 1, 32) },
	{ .op = "conv", .prec = MGPU_PREC_BF16, .bias = 1, .cv = MGPU_CV(8, 6, 1, 100, 32, 1, 5, 1, 2, 0, 2, 1, 1, 1) },
	{ .op = "im2col", .cv = MGPU_CV(1, 8, 9, 7, 4, 3, 3, 2, 1, 1, 1, 1, 2, 1) },
	{ .op = "pool", .mode = MGPU_POOL_MAX, .cv = MGPU_CV(4, 64, 28, 28, 0, 3, 3, 2, 2, 1, 1, 0, 0, 0) },
	{ .op = "pool", .mode = MGPU_POOL_AVG, .cv = MGPU_CV(4, 32, 14, 14, 0, 2, 2, 2, 2, 0, 0, 0, 0, 0) },
	{ .op = "pool", .mode = MGPU_POOL_AVG, .cv = MGPU_CV(8, 128, 7, 7, 0, 7, 7, 1, 1, 0, 0, 0, 0, 0) },
	{ .op = "upsample", .cv = MGPU_CV(2, 32, 14, 14, 0, 0, 0, 2, 2, 0, 0, 0, 0, 0) },
	{ .op = "bn", .train = 1, .shift = 1, .cv = MGPU_CV(8, 64, 14, 14, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0) },
	{ .op = "bn", .cv = MGPU_CV(8, 64, 14, 14, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0) },
	{ .op = "gn", .cv = MGPU_CV(4, 64, 14, 14, 0, 0, 0, 0, 0, 0, 0, 0, 0, 8) },
	{ .op = "act_fwd", .n = 65536, .act = MGPU_ACT_SILU },
	{ .op = "act_fwd", .n = 65536, .act = MGPU_ACT_RELU },
	{ .op = "chan", .acc = 1, .cv = MGPU_CV(8, 64, 14, 14, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0) },
	/* the losses of a pose U-Net (17 confidence maps of 48x48, missing
	 * parts weighted 0) and of a segmentation one (21 classes at 64x64) */
	{ .op = "mse", .weighted = 1, .cv = MGPU_CV(16, 17, 48, 48, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0) },
	{ .op = "pix_xent", .ignore = 1, .cv = MGPU_CV(4, 21, 64, 64, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0) },
};

int mgpu_ops_compare(const struct mgpu_ops *ops, int index, const struct mgpu_ops *ref,
		     uint64_t seed, struct mgpu_ops_report *rep)
{
	struct mgpu_ops_pair p;
	size_t i;
	int rc = 0;

	MGPU_TRY(mgpu_ops_pair_open(&p, ops, index, ref, seed, rep));
	for (i = 0; i < sizeof selftest / sizeof selftest[0] && rc == 0; i++)
		rc = mgpu_ops_check_case(&p, &selftest[i]);
	for (i = 0; i < sizeof selftest_conv / sizeof selftest_conv[0] && rc == 0; i++)
		rc = mgpu_ops_check_conv_case(&p, &selftest_conv[i]);
	mgpu_ops_pair_close(&p);
	return rc;
}
