/*
 * test_unet.c - the U-Net lines of the conv-net family (model/cnn.c):
 * nearest upsampling (up), transposed convolutions (tconv) and skip
 * connections (save, cat), and fully convolutional nets (a spec that ends
 * in a conv, whose outputs are maps). Gradients of whole nets against
 * finite differences on ref and cpu, 2-D and 1-D; tconv against torch's
 * ConvTranspose2d written as a scatter; cat's channel order; the grammar,
 * its errors and the sizes that would overflow an int.
 */
#include <limits.h> /* INT_MAX */
#include <math.h>   /* fabs */
#include <stdlib.h> /* malloc, free */
#include <string.h> /* strcmp, memset */

#include "core/err.h"     /* mgpu_errmsg */
#include "core/hash.h"    /* mgpu_hash64 */
#include "data/samples.h" /* MGPU_DTYPE_F32, MGPU_TARGET_KEYPOINTS */
#include "model/model.h"  /* struct mgpu_model */
#include "model/spec.h"   /* mgpu_spec_parse */
#include "t.h"
#include "cnn_util.h"     /* rel_diff, write_file */
#include "tmpdir.h"       /* t_tmpdir_make, tpath */

#define NB 3

/* A seeded value in [-1, 1]. */
static float val(uint64_t seed, size_t i)
{
	return (float)((double)(mgpu_hash64(seed, (uint64_t)i) % 2001) / 1000.0 - 1.0);
}

/* Fit s to float32 samples of shape[0..ndim): class labels for a net that
 * ends in a linear, else a target of `classes` maps (keypoints). */
static int fit_shape(struct mgpu_spec *s, int ndim, const uint32_t *shape, int classes)
{
	struct mgpu_data_desc d = { .dtype = MGPU_DTYPE_F32, .ndim = ndim, .classes = classes,
				    .d = 1 };
	long long values = 1;
	int i;

	if (s->ncnn && s->cnn[s->ncnn - 1].op != MGPU_CNN_LINEAR)
		d.target = MGPU_TARGET_KEYPOINTS;

	/* test_overflow's shapes have more values than an int holds: d is
	 * then the largest int, as no data source would give (the spec's
	 * own sizes are what must be refused) */
	for (i = 0; i < ndim; i++) {
		d.shape[i] = shape[i];
		values *= shape[i];
	}
	d.d = values > INT_MAX ? INT_MAX : (int)values;
	return mgpu_spec_fit(s, &d, "data");
}

struct net {
	struct mgpu_spec spec;
	struct mgpu_dev dev;
	struct mgpu_model m;
	size_t nout;      /* outputs a sample */
	float *x, *out;
};

static int net_open(struct net *n, const char *spec, const char *backend, int ndim,
		    const uint32_t *shape, int classes)
{
	int32_t y[NB] = { 0 };
	size_t D, i;

	memset(n, 0, sizeof *n);
	if (mgpu_spec_parse(&n->spec, spec, "test") || fit_shape(&n->spec, ndim, shape, classes) ||
	    mgpu_dev_open(&n->dev, mgpu_ops_find(backend), 0) ||
	    mgpu_model_create(&n->m, &n->spec, &n->dev, NB) || mgpu_model_init(&n->m, 11))
		return -1;
	D = (size_t)n->spec.in_c * n->spec.in_h * n->spec.in_w;
	n->nout = mgpu_model_logits_per_row(&n->m);
	n->x = malloc(NB * D * sizeof(float));
	n->out = malloc(NB * n->nout * sizeof(float));
	for (i = 0; i < NB * D; i++)
		n->x[i] = val(5, i);
	return mgpu_model_load_batch_f32(&n->m, n->x, y, NB);
}

static void net_close(struct net *n)
{
	free(n->x);
	free(n->out);
	mgpu_model_free(&n->m);
	T_CHECK(n->dev.bytes_cur == 0, "device bytes leaked: %zu", n->dev.bytes_cur);
	mgpu_dev_close(&n->dev);
}

/* f = sum of r . outputs, r seeded: any net's outputs, maps or logits. */
static double f_at(struct net *n, const float *r)
{
	size_t got, i;
	double f = 0;

	if (mgpu_model_forward(&n->m, NB, 1) || mgpu_model_logits(&n->m, NB, n->out, &got))
		return NAN;
	for (i = 0; i < NB * n->nout; i++)
		f += (double)r[i] * n->out[i];
	return f;
}

/* Every parameter's gradient of f (the backward from dlogits = r) against
 * a central difference; smooth nets only (silu, avgpool, up: no kinks). */
static void grad_check(const char *spec, const char *backend, int ndim, const uint32_t *shape,
		       int classes)
{
	struct net n;
	float *w, *g, *r, h = 1e-3f;
	size_t i;

	T_OK(net_open(&n, spec, backend, ndim, shape, classes));
	if (t_cur_failed)
		return;
	r = malloc(NB * n.nout * sizeof *r);
	for (i = 0; i < NB * n.nout; i++)
		r[i] = val(17, i);
	T_OK(mgpu_model_forward(&n.m, NB, 1));
	T_OK(mgpu_dev_from_host(&n.dev, n.m.dlogits, r, NB * n.nout * sizeof *r));
	T_OK(mgpu_model_backward(&n.m, NB, 0));
	w = malloc(n.m.nparams * sizeof *w);
	g = malloc(n.m.nparams * sizeof *g);
	T_OK(mgpu_model_get(&n.m, w));
	T_OK(mgpu_dev_to_host(&n.dev, g, n.m.g, n.m.nparams * sizeof *g));
	for (i = 0; i < n.m.nparams && !t_cur_failed; i++) {
		float keep = w[i];
		double fp, fm, num, err;
		w[i] = keep + h;
		mgpu_model_set(&n.m, w);
		fp = f_at(&n, r);
		w[i] = keep - h;
		mgpu_model_set(&n.m, w);
		fm = f_at(&n, r);
		w[i] = keep;
		num = (fp - fm) / (2.0 * h);
		err = fabs(num - g[i]) / fmax(3e-2, fabs(num) + fabs(g[i]));
		T_CHECK(err < 2e-2, "%s on %s: param %zu of %zu: analytic %g numeric %g", spec,
			backend, i, n.m.nparams, (double)g[i], num);
	}
	mgpu_model_set(&n.m, w);
	free(w);
	free(g);
	free(r);
	net_close(&n);
}

/* Two levels of skips, both ways up (tconv, up), a save read twice, norms
 * on both sides of a cat, a fully convolutional head of 2 maps. */
static const char *const unet2d =
	"cnn:conv 3 k=3 p=1 bias; bn; silu; save e1; avgpool 2; conv 4 k=3 p=1; gn 2; "
	"silu; save e2; avgpool 2; conv 4 k=3 p=1 bias; silu; tconv 4 k=2 s=2 bias; "
	"cat e2; conv 4 k=3 p=1; bn; silu; up 2; cat e1; conv 3 k=3 p=1 bias; silu; "
	"cat e1; conv auto k=1 bias";
static const uint32_t img[3] = { 2, 8, 4 };
/* tconv with padding, output padding, groups and dilation; a class head */
static const char *const tconv2d =
	"cnn:conv 4 k=3 s=2 p=1; silu; tconv 4 k=3 s=2 p=1 o=1 g=2 bias; silu; save a; "
	"tconv 2 k=2 s=1 p=1 d=2; cat a; gap; linear auto";
static const char *const unet1d =
	"cnn:conv 4 k=3 p=1; bn; silu; save s; avgpool 2; conv 4 k=3 p=1; silu; "
	"tconv 3 k=4 s=2 p=1 bias; cat s; silu; up 2; avgpool 2; conv auto k=1";
static const uint32_t series[2] = { 3, 10 };

static void test_grad_unet_ref(void) { grad_check(unet2d, "ref", 3, img, 2); }
static void test_grad_unet_cpu(void) { grad_check(unet2d, "cpu", 3, img, 2); }
static void test_grad_tconv_ref(void)
{
	grad_check(tconv2d, "ref", 3, (const uint32_t[]){ 2, 7, 5 }, 3);
}
static void test_grad_tconv_cpu(void)
{
	grad_check(tconv2d, "cpu", 3, (const uint32_t[]){ 2, 7, 5 }, 3);
}
static void test_grad_unet_1d(void) { grad_check(unet1d, "cpu", 2, series, 1); }

/* One forward of spec on backend in precision prec and the backward from
 * dlogits = r: the outputs and the gradient (malloc'd). */
static int prec_pass(const char *spec, const char *backend, int prec, float **out, size_t *nout,
		     float **g, size_t *ng)
{
	const uint32_t shape[3] = { 4, 5, 4 };
	struct net n;
	float *r = NULL;
	size_t i;
	int rc;

	*out = *g = NULL;
	rc = net_open(&n, spec, backend, 3, shape, 2);
	if (rc == 0)
		rc = mgpu_model_set_prec(&n.m, prec);
	*nout = NB * n.nout;
	*ng = n.m.nparams;
	r = malloc(*nout * sizeof *r + 1);
	*out = malloc(*nout * sizeof **out + 1);
	*g = malloc(*ng * sizeof **g + 1);
	if (rc == 0 && (!r || !*out || !*g))
		rc = -1;
	for (i = 0; rc == 0 && i < *nout; i++)
		r[i] = val(17, i);
	if (rc == 0)
		rc = mgpu_model_forward(&n.m, NB, 1);
	if (rc == 0)
		rc = mgpu_model_logits(&n.m, NB, *out, &i);
	if (rc == 0)
		rc = mgpu_dev_from_host(&n.dev, n.m.dlogits, r, *nout * sizeof *r);
	if (rc == 0)
		rc = mgpu_model_backward(&n.m, NB, 0);
	if (rc == 0)
		rc = mgpu_dev_to_host(&n.dev, *g, n.m.g, *ng * sizeof **g);
	free(r);
	net_close(&n);
	return rc;
}

/* --dtype bf16 reaches the transposed convolutions as the convolutions
 * (their products' inputs rounded): cpu's outputs and gradient match
 * ref's and differ from fp32's. */
static void test_tconv_bf16(void)
{
	const char *spec = "cnn:tconv 4 k=3 s=2 p=1 o=1 g=2 bias; silu; tconv auto k=2 d=2";
	float *o[3], *g[3];
	size_t no[3], ng[3];
	int i;

	T_OK(prec_pass(spec, "cpu", MGPU_PREC_BF16, &o[0], &no[0], &g[0], &ng[0]));
	T_OK(prec_pass(spec, "ref", MGPU_PREC_BF16, &o[1], &no[1], &g[1], &ng[1]));
	T_OK(prec_pass(spec, "cpu", MGPU_PREC_FP32, &o[2], &no[2], &g[2], &ng[2]));
	if (!t_cur_failed) {
		T_CHECK(rel_diff(o[0], o[1], no[0]) < 1e-5 && rel_diff(g[0], g[1], ng[0]) < 1e-4,
			"bf16 cpu vs ref: outputs %g, gradient %g", rel_diff(o[0], o[1], no[0]),
			rel_diff(g[0], g[1], ng[0]));
		T_CHECK(rel_diff(o[0], o[2], no[0]) > 1e-3 && rel_diff(g[0], g[2], ng[0]) > 1e-3,
			"bf16 vs fp32 only %g (outputs), %g (gradient) apart",
			rel_diff(o[0], o[2], no[0]), rel_diff(g[0], g[2], ng[0]));
	}
	for (i = 0; i < 3; i++) {
		free(o[i]);
		free(g[i]);
	}
}

static const struct mgpu_param *find(const struct mgpu_model *m, const char *name)
{
	int i;

	for (i = 0; i < m->nparam; i++)
		if (strcmp(m->params[i].name, name) == 0)
			return &m->params[i];
	return NULL;
}

/*
 * torch.nn.ConvTranspose2d as its definition, a scatter: input pixel
 * (ci, ih, iw) adds x w[ci, co', kh, kw] to output (g K/G + co',
 * ih s - p + kh d, iw s - p + kw d) of its group g, then the bias.
 */
static void tconv_def(const float *x, const float *w, const float *b, float *y, int C, int H,
		      int W, int K, int G, int k, int s, int p, int d, int OH, int OW)
{
	int n, ci, co, ih, iw, kh, kw;

	for (n = 0; n < NB; n++)
		for (co = 0; co < K; co++)
			for (ih = 0; ih < OH * OW; ih++)
				y[(n * K + co) * OH * OW + ih] = b[co];
	for (n = 0; n < NB; n++)
		for (ci = 0; ci < C; ci++)
			for (co = 0; co < K / G; co++)
				for (ih = 0; ih < H; ih++)
					for (iw = 0; iw < W; iw++)
						for (kh = 0; kh < k; kh++)
							for (kw = 0; kw < k; kw++) {
								int oh = ih * s - p + kh * d,
								    ow = iw * s - p + kw * d,
								    o = ci / (C / G) * (K / G) + co;
								if (oh < 0 || oh >= OH || ow < 0 || ow >= OW)
									continue;
								y[((n * K + o) * OH + oh) * OW + ow] +=
									x[((n * C + ci) * H + ih) * W + iw] *
									w[((ci * (K / G) + co) * k + kh) * k + kw];
							}
}

/* A lone tconv is torch's ConvTranspose2d: its output size, its weight
 * (in, out/groups, k, k), its values. */
static void tconv_vs_def(const char *backend)
{
	/* 4 -> 6 channels, 2 groups, k 3, s 2, p 1, d 2, o 1 on 5 x 4 */
	const char *spec = "cnn:tconv auto k=3 s=2 p=1 d=2 o=1 g=2 bias";
	int C = 4, H = 5, W = 4, K = 6, OH = (H - 1) * 2 - 2 + 2 * 2 + 1 + 1, OW = (W - 1) * 2 + 4;
	const struct mgpu_param *wp, *bp;
	struct net n;
	float *w, *want;
	size_t i;

	T_OK(net_open(&n, spec, backend, 3, (const uint32_t[]){ 4, 5, 4 }, K));
	if (t_cur_failed)
		return;
	wp = find(&n.m, "0.weight");
	bp = find(&n.m, "0.bias");
	T_CHECK(wp && wp->ndim == 4 && wp->shape[0] == C && wp->shape[1] == K / 2 &&
			wp->shape[2] == 3 && wp->shape[3] == 3 && bp && bp->shape[0] == K,
		"tconv weight is not (in, out/groups, k, k)");
	T_CHECK(n.nout == (size_t)K * OH * OW, "outputs %zu, want %d x %d x %d", n.nout, K, OH,
		OW);
	if (t_cur_failed) {
		net_close(&n);
		return;
	}
	w = malloc(n.m.nparams * sizeof *w);
	want = malloc(NB * n.nout * sizeof *want);
	T_OK(mgpu_model_get(&n.m, w));
	T_OK(mgpu_model_forward(&n.m, NB, 0));
	T_OK(mgpu_model_logits(&n.m, NB, n.out, &i));
	tconv_def(n.x, w + wp->off, w + bp->off, want, C, H, W, K, 2, 3, 2, 1, 2, OH, OW);
	for (i = 0; i < NB * n.nout && !t_cur_failed; i++)
		T_CHECK(fabs(n.out[i] - want[i]) < 1e-5, "%s: output %zu: %g, want %g", backend, i,
			(double)n.out[i], (double)want[i]);
	free(w);
	free(want);
	net_close(&n);
}

static void test_tconv_ref(void) { tconv_vs_def("ref"); }
static void test_tconv_cpu(void) { tconv_vs_def("cpu"); }

/* cat puts its input's channels first, then the save's: with the last
 * conv the identity, the outputs are (conv(x), x) per sample. */
static void test_cat_order(void)
{
	const struct mgpu_param *w1, *w3;
	struct net n;
	float *w;
	int b, c, k, hw;

	T_OK(net_open(&n, "cnn:save a; conv 3 k=1; cat a; conv auto k=1", "cpu", 3,
		      (const uint32_t[]){ 2, 2, 3 }, 5));
	if (t_cur_failed)
		return;
	w1 = find(&n.m, "1.weight");
	w3 = find(&n.m, "3.weight");
	T_CHECK(w1 && w3 && w3->shape[0] == 5 && w3->shape[1] == 5, "weights");
	T_CHECK(n.nout == 5 * 6, "outputs %zu", n.nout);
	if (t_cur_failed) {
		net_close(&n);
		return;
	}
	w = malloc(n.m.nparams * sizeof *w);
	T_OK(mgpu_model_get(&n.m, w));
	for (k = 0; k < 25; k++)
		w[w3->off + (size_t)k] = k % 6 == 0; /* the identity */
	T_OK(mgpu_model_set(&n.m, w));
	T_OK(mgpu_model_forward(&n.m, NB, 0));
	T_OK(mgpu_model_logits(&n.m, NB, n.out, &(size_t){ 0 }));
	for (b = 0; b < NB; b++)
		for (c = 0; c < 5; c++)
			for (hw = 0; hw < 6; hw++) {
				const float *x = n.x + b * 12;
				double want = 0;
				if (c < 3)
					for (k = 0; k < 2; k++)
						want += w[w1->off + (size_t)(c * 2 + k)] * x[k * 6 + hw];
				else
					want = x[(c - 3) * 6 + hw];
				T_NEAR(n.out[(b * 5 + c) * 6 + hw], want, 1e-6);
			}
	free(w);
	net_close(&n);
}

/* Parse, print, fit: the canonical form reads back; conv auto takes the
 * class count (one map for one); a fully convolutional net's outputs are
 * its maps; torch.nn's names and parameter counts. */
static void test_spec(void)
{
	struct mgpu_spec s, back;
	char buf[1024], buf2[1024];
	struct net n;

	T_OK(mgpu_spec_parse(&s, unet2d, "t"));
	T_OK(mgpu_spec_format(&s, buf, sizeof buf));
	T_CHECK(strstr(buf, "; save e1; avgpool k=2 s=2; ") && strstr(buf, "; up 2; cat e1; ") &&
			strstr(buf, "tconv 4 k=2 s=2 p=0 bias; cat e2") &&
			strstr(buf, "conv auto k=1 s=1 p=0 bias"),
		"%s", buf);
	T_OK(mgpu_spec_parse(&back, buf, "t"));
	T_OK(mgpu_spec_format(&back, buf2, sizeof buf2));
	T_CHECK(strcmp(buf, buf2) == 0, "%s -> %s", buf, buf2);
	T_CHECK(mgpu_spec_has_auto(&s), "auto");
	T_OK(fit_shape(&s, 3, img, 1));
	T_CHECK(mgpu_spec_classes(&s) == 1, "one map for one part, got %d",
		mgpu_spec_classes(&s));
	T_OK(mgpu_spec_parse(&s, tconv2d, "t"));
	T_OK(mgpu_spec_format(&s, buf, sizeof buf));
	T_CHECK(strstr(buf, "tconv 4 k=3 s=2 p=1 g=2 o=1 bias; silu; save a; tconv 2 k=2 s=1 p=1 d=2"),
		"%s", buf);
	T_OK(fit_shape(&s, 3, img, 1));
	T_CHECK(mgpu_spec_classes(&s) == 2, "a linear's logits are 2 at least");
	T_OK(mgpu_spec_parse(&s, "cnn:conv 4 k=3 p=1; save a; tconv 4 k=3 g=2; cat a; linear 2",
			     "t"));
	T_FAILS(fit_shape(&s, 3, img, 2), MGPU_EINVAL,
		"t: line 4 ('cat a') gets 4 x 10 x 6 but line 2 saved 4 x 8 x 4 there: their "
		"heights and widths differ (samples of data)");

	/* auto's channels must suit the groups */
	T_OK(mgpu_spec_parse(&s, "cnn:conv 4 k=3; conv auto k=1 g=2", "t"));
	T_FAILS(fit_shape(&s, 3, img, 3), MGPU_EINVAL,
		"line 2 (conv): groups 2 do not divide its 4 input channels or its 3 output ones");

	T_OK(net_open(&n, unet2d, "ref", 3, img, 2));
	if (t_cur_failed)
		return;
	T_CHECK(n.nout == 2 * 8 * 4, "maps of 2 x 8 x 4: %zu outputs", n.nout);
	T_CHECK(n.m.nparams == mgpu_model_count(&n.spec), "count %zu, built %zu",
		mgpu_model_count(&n.spec), n.m.nparams);
	T_CHECK(find(&n.m, "12.weight") && find(&n.m, "12.weight")->shape[0] == 4 &&
			find(&n.m, "12.bias") && find(&n.m, "22.weight")->shape[0] == 2 &&
			find(&n.m, "22.weight")->shape[1] == 3 + 3,
		"torch.nn.Sequential's indices, cat's channels");
	T_CHECK(!find(&n.m, "3.weight") && !find(&n.m, "13.weight"), "save and cat hold nothing");
	net_close(&n);
}

/* Class labels need a row of logits: a net of maps is refused when fitted
 * to them, and at the loss when it has no targets to take. */
static void test_maps_refuse_labels(void)
{
	struct mgpu_data_desc d = { .dtype = MGPU_DTYPE_F32, .ndim = 3, .shape = { 2, 8, 4 },
				    .classes = 2, .d = 64 };
	struct mgpu_spec s;
	struct net n;
	double l, c;

	T_OK(mgpu_spec_parse(&s, unet2d, "t"));
	T_FAILS(mgpu_spec_fit(&s, &d, "lab"), MGPU_EINVAL,
		"'lab': class labels need a conv net that ends with 'linear'");
	T_OK(mgpu_spec_parse(&s, "cnn:conv 2 k=3; tconv 3 k=3", "t"));
	T_FAILS(mgpu_spec_fit(&s, &d, "lab"), MGPU_EINVAL,
		"'lab': class labels need a conv net that ends with 'linear'");
	T_OK(net_open(&n, unet2d, "cpu", 3, img, 2));
	if (t_cur_failed)
		return;
	T_OK(mgpu_model_forward(&n.m, NB, 1));
	T_FAILS(mgpu_model_loss(&n.m, NB, 1, 1.0f, &l, &c), MGPU_EINVAL,
		"cnn: the model outputs 2 x 8 x 4 maps a sample, not a row of class logits");
	net_close(&n);
}

static void test_spec_errors(void)
{
	static const struct {
		const char *text, *msg;
	} bad[] = {
		{ "cnn:conv 4 k=3; cat a; linear 2", "t: line 2 ('cat a'): no 'save a' before it" },
		{ "cnn:save a; relu; save a; cat a; linear 2",
		  "line 3 ('save a'): 'a' is saved already on line 1" },
		{ "cnn:conv 4 k=3; save a; relu; save b; cat b; linear 2",
		  "t: line 2: 'save a' is never read by a 'cat a'" },
		{ "cnn:save 1a; cat 1a; linear 2", "'1a' is no name" },
		{ "cnn:save a-b; cat a-b; linear 2", "'a-b' is no name" },
		{ "cnn:save abcdefghijklmnop; cat abcdefghijklmnop; linear 2", "is no name" },
		{ "cnn:save; linear 2", "'save' needs a number" },
		{ "cnn:tconv 4 k=2 s=2 o=2; linear 2", "output padding o (below the stride) '2'" },
		/* torch takes o below the dilation too, but the convolution run
		 * backwards would then map the output to one more row than the
		 * input has (a read past the input, found by valgrind) */
		{ "cnn:tconv 2 k=3 s=1 d=2 o=1; linear 2", "output padding o (below the stride) '1'" },
		{ "cnn:tconv 4 s=2; linear 2", "tconv needs its kernel size, k=K" },
		{ "cnn:up 0; linear 2", "scale factor '0' is not an integer in [1, 255]" },
		{ "cnn:up 2 3; linear 2", "unexpected '3'" },
		{ "cnn:conv auto k=1; conv 3 k=1", "line 1: only the last line may be 'auto'" },
		{ "cnn:conv 4 k=3; up 2", "a conv net ends with a 'linear' line (its outputs are "
					  "the class logits) or a 'conv' or 'tconv'" },
		{ "cnn:conv 4 k=3 o=1; linear 2", "unknown option 'o=1'" },
	};
	struct mgpu_spec s;
	size_t i;

	for (i = 0; i < sizeof bad / sizeof bad[0]; i++)
		T_FAILS(mgpu_spec_parse(&s, bad[i].text, "t"), MGPU_EINVAL, bad[i].msg);
}

/* A spec file's messages name the file and its own line numbers. */
static void test_spec_file(void)
{
	struct mgpu_spec s;

	T_OK(write_file(tpath("u.spec"), "# a U-Net\ncnn\nconv 4 k=3 p=1\nsave e1\n\n"
					 "maxpool 2\ncat e1   # wrong: 4 x 4 here\nconv auto k=1\n"));
	T_OK(mgpu_spec_load(&s, tpath("u.spec")));
	T_FAILS(fit_shape(&s, 3, (const uint32_t[]){ 1, 8, 8 }, 3), MGPU_EINVAL,
		"u.spec': line 7 ('cat e1') gets 4 x 4 x 4 but line 4 saved 4 x 8 x 8 there");
	T_OK(write_file(tpath("v.spec"), "cnn\nconv 4 k=3\n# skip\nsave x1\nconv 2 k=1\n"));
	T_FAILS(mgpu_spec_load(&s, tpath("v.spec")), MGPU_EINVAL,
		"v.spec': line 4: 'save x1' is never read by a 'cat x1'");
	T_OK(write_file(tpath("w.spec"), "cnn\nconv 4 k=3\n\nmaxpool 9\nlinear auto\n"));
	T_OK(mgpu_spec_load(&s, tpath("w.spec")));
	T_FAILS(fit_shape(&s, 3, (const uint32_t[]){ 1, 8, 8 }, 3), MGPU_EINVAL,
		"line 4 (maxpool) gets 4 x 6 x 6: its output would be empty");
}

/* Sizes past an int are refused when fitted, naming the spec and line
 * (they were computed in int: a linear's input width wrapped). */
static void test_overflow(void)
{
	struct mgpu_spec s;

	T_OK(mgpu_spec_parse(&s, "cnn:conv 65536 k=1; linear 2", "'big.spec'"));
	T_FAILS(fit_shape(&s, 3, (const uint32_t[]){ 1, 256, 256 }, 2), MGPU_EINVAL,
		"'big.spec': line 1 (conv) gets 1 x 256 x 256 (samples of data): its "
		"output or weights would hold more than 2147483647 values");
	T_FAILS(fit_shape(&s, 3, (const uint32_t[]){ 65536, 65536, 2 }, 2), MGPU_EINVAL,
		"data: samples of 65536 x 65536 x 2 hold more than 2147483647 values");
	T_OK(mgpu_spec_parse(&s, "cnn:up 255; up 255; gap; linear 2", "--model"));
	T_FAILS(fit_shape(&s, 3, (const uint32_t[]){ 1, 64, 64 }, 2), MGPU_EINVAL,
		"--model: line 2 (up) gets 1 x 16320 x 16320");
	T_OK(mgpu_spec_parse(&s, "cnn:conv 65536 k=1; conv 2 k=255 p=127", "--model"));
	T_FAILS(fit_shape(&s, 3, (const uint32_t[]){ 1, 2, 2 }, 2), MGPU_EINVAL,
		"--model: line 2 (conv) gets 65536 x 2 x 2");
	T_OK(mgpu_spec_parse(&s, "cnn:conv 65536 k=1; conv 2 k=1", "--model"));
	T_OK(fit_shape(&s, 3, (const uint32_t[]){ 1, 16, 16 }, 2));
	T_CHECK(mgpu_model_count(&s) == 65536 + 2 * 65536, "count %zu", mgpu_model_count(&s));
}

int main(void)
{
	if (t_tmpdir_make("unet") < 0)
		return 1;
	T_RUN(test_spec);
	T_RUN(test_spec_errors);
	T_RUN(test_spec_file);
	T_RUN(test_overflow);
	T_RUN(test_cat_order);
	T_RUN(test_tconv_ref);
	T_RUN(test_tconv_cpu);
	T_RUN(test_maps_refuse_labels);
	T_RUN(test_grad_unet_ref);
	T_RUN(test_grad_unet_cpu);
	T_RUN(test_grad_tconv_ref);
	T_RUN(test_grad_tconv_cpu);
	T_RUN(test_grad_unet_1d);
	T_RUN(test_tconv_bf16);
	t_tmpdir_remove();
	return T_DONE();
}
