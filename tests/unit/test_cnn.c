/*
 * test_cnn.c - the conv-net family (model/cnn.c): whole small nets' gradients
 * against finite differences on ref and cpu, 2-D and 1-D; the spec
 * grammar and its errors; torch's names and layouts; BatchNorm's running
 * statistics and evaluation; the --sync-bn hook; checkpoints round trip.
 */
#include <math.h>   /* fabs, sqrt */
#include <stdlib.h> /* malloc, free */
#include <string.h> /* strcmp, strstr */

#include "core/err.h"      /* mgpu_errmsg */
#include "core/hash.h"     /* mgpu_hash64 */
#include "train/ckpt.h"      /* mgpu_ckpt_save */
#include "model/model.h"      /* struct mgpu_model */
#include "train/optim.h"      /* struct mgpu_optim */
#include "model/spec.h"      /* mgpu_spec_parse */
#include "data/samples.h"  /* MGPU_DTYPE_F32 */
#include "t.h"
#include "cnn_util.h"      /* rel_diff, write_file */
#include "tmpdir.h"        /* t_tmpdir_make, tpath */

#define NB 4

/* Fit s to float32 samples of shape[0..ndim) and `classes`. */
static int fit_shape(struct mgpu_spec *s, int ndim, const uint32_t *shape, int classes,
		     const char *path)
{
	struct mgpu_data_desc d = { .dtype = MGPU_DTYPE_F32, .ndim = ndim, .classes = classes,
				    .d = 1 };
	int i;

	for (i = 0; i < ndim; i++) {
		d.shape[i] = shape[i];
		d.d *= (int)shape[i];
	}
	return mgpu_spec_fit(s, &d, path);
}

struct net {
	struct mgpu_spec spec;
	struct mgpu_dev dev;
	struct mgpu_model m;
	int B, D;
	float *x;
	int32_t y[64];
};

/* Parse, fit to a sample of shape[0..ndim) and `classes`, build, init,
 * load B seeded samples. */
static int net_open(struct net *n, const char *spec, const char *backend, int ndim,
		    const uint32_t *shape, int classes, int B)
{
	int i;

	memset(n, 0, sizeof *n);
	n->B = B;
	if (mgpu_spec_parse(&n->spec, spec, "test") ||
	    fit_shape(&n->spec, ndim, shape, classes, "data") ||
	    mgpu_dev_open(&n->dev, mgpu_ops_find(backend), 0))
		return -1;
	if (mgpu_model_create(&n->m, &n->spec, &n->dev, B) || mgpu_model_init(&n->m, 7))
		return -1;
	n->D = n->spec.in_c * n->spec.in_h * n->spec.in_w;
	n->x = malloc((size_t)B * (size_t)n->D * sizeof(float));
	for (i = 0; i < B * n->D; i++)
		n->x[i] = (float)((double)(mgpu_hash64(5, (uint64_t)i) % 2001) / 1000.0 - 1.0);
	for (i = 0; i < B; i++)
		n->y[i] = i % classes;
	return mgpu_model_load_batch_f32(&n->m, n->x, n->y, B);
}

static void net_close(struct net *n)
{
	free(n->x);
	mgpu_model_free(&n->m);
	T_CHECK(n->dev.bytes_cur == 0, "device bytes leaked: %zu", n->dev.bytes_cur);
	mgpu_dev_close(&n->dev);
}

static double loss_at(struct net *n)
{
	double l, c;

	if (mgpu_model_forward(&n->m, n->B, 1) || mgpu_model_loss(&n->m, n->B, 0, 0, &l, &c))
		return NAN;
	return l / n->B;
}

/* Every parameter's analytic gradient against a central difference. A
 * ReLU after a BatchNorm has kinks everywhere: every weight before it
 * moves every value of its channel, and a step of h carries some across
 * zero, so a difference is off while the gradient is right (the error
 * shrinks with h: 1e-3 leaves a third of a res block's parameters off,
 * 3e-4 a few, at float32's noise). So nets with kinks take h = 3e-4 and
 * may have up to 1 in kink_frac parameters outside the tolerance (a wrong
 * gradient anywhere spoils every parameter before it); smooth nets take
 * h = 1e-3 and have none. */
static void grad_check(const char *spec, const char *backend, int ndim, const uint32_t *shape,
		       int kink_frac)
{
	struct net n;
	float *w, *g, h = kink_frac ? 3e-4f : 1e-3f;
	double l, c;
	size_t i, bad = 0, allowed;

	T_OK(net_open(&n, spec, backend, ndim, shape, 3, NB));
	if (t_cur_failed)
		return;
	n.m.dropout_seed = 99;
	T_OK(mgpu_model_forward(&n.m, NB, 1));
	T_OK(mgpu_model_loss(&n.m, NB, 1, 1.0f / NB, &l, &c));
	T_OK(mgpu_model_backward(&n.m, NB, 0));
	w = malloc(n.m.nparams * sizeof *w);
	g = malloc(n.m.nparams * sizeof *g);
	T_OK(mgpu_model_get(&n.m, w));
	T_OK(mgpu_dev_to_host(&n.dev, g, n.m.g, n.m.nparams * sizeof *g));
	allowed = kink_frac ? n.m.nparams / (size_t)kink_frac : 0;
	for (i = 0; i < n.m.nparams; i++) {
		float keep = w[i];
		double lp, lm, num, err;
		w[i] = keep + h;
		mgpu_model_set(&n.m, w);
		lp = loss_at(&n);
		w[i] = keep - h;
		mgpu_model_set(&n.m, w);
		lm = loss_at(&n);
		w[i] = keep;
		num = (lp - lm) / (2.0 * h);
		err = fabs(num - g[i]) / fmax(1e-2, fabs(num) + fabs(g[i]));
		if (err < 2e-2 || ++bad <= allowed)
			continue;
		T_CHECK(err < 2e-2, "%s on %s: param %zu of %zu (%zu off so far): analytic %g "
			"numeric %g", spec, backend, i, n.m.nparams, bad, (double)g[i], num);
		if (t_cur_failed > 3)
			break;
	}
	mgpu_model_set(&n.m, w);
	free(w);
	free(g);
	net_close(&n);
}

/* Every layer kind in 2-D: conv (bias, stride, groups, dilation), bn, gn,
 * relu, silu, both pools, res with and without a projection, dropout,
 * gap, flatten, two linears. */
static const char *const net2d =
	"cnn:conv 4 k=3 p=1 bias; bn; relu; res 4; res 6 s=2; conv 6 k=3 p=2 g=2 d=2; "
	"gn 3; silu; maxpool 2 1; avgpool 2 p=1; dropout 0.25; gap; flatten; linear 5; "
	"relu; linear auto";
static const uint32_t img[3] = { 2, 7, 6 };
static const char *const net1d =
	"cnn:conv 4 k=5 p=2; bn; relu; maxpool 2; res 6 s=2; gap; dropout 0.2; linear auto";
static const uint32_t series[2] = { 3, 11 };

/* The same layers without kinks: every parameter within the tolerance. */
static const char *const smooth2d =
	"cnn:conv 4 k=3 p=1 bias; bn; silu; conv 6 k=3 s=2 p=2 g=2 d=2; gn 3; silu; "
	"avgpool 2 p=1; dropout 0.25; conv 6 k=1; bn; gap; flatten; linear 5; silu; "
	"linear auto";

static void test_grad_2d_ref(void) { grad_check(net2d, "ref", 3, img, 40); }
static void test_grad_2d_cpu(void) { grad_check(net2d, "cpu", 3, img, 40); }
static void test_grad_1d_ref(void) { grad_check(net1d, "ref", 2, series, 40); }
static void test_grad_1d_cpu(void) { grad_check(net1d, "cpu", 2, series, 40); }
static void test_grad_smooth_ref(void) { grad_check(smooth2d, "ref", 3, img, 0); }
static void test_grad_smooth_cpu(void) { grad_check(smooth2d, "cpu", 3, img, 0); }

/* One training pass (forward, loss, backward) of spec on backend in
 * precision prec: the gradient into g (nparams floats, malloc'd). */
static int bf16_pass(const char *spec, const char *backend, int ndim, const uint32_t *shape,
		     int prec, float **g, size_t *n)
{
	struct net net;
	double l, c;
	int rc;

	rc = net_open(&net, spec, backend, ndim, shape, 3, NB);
	if (rc == 0)
		rc = mgpu_model_set_prec(&net.m, prec);
	net.m.dropout_seed = 99;
	if (rc == 0)
		rc = mgpu_model_forward(&net.m, NB, 1);
	if (rc == 0)
		rc = mgpu_model_loss(&net.m, NB, 1, 1.0f / NB, &l, &c);
	if (rc == 0)
		rc = mgpu_model_backward(&net.m, NB, 0);
	*n = net.m.nparams;
	*g = malloc(*n * sizeof **g + 1);
	if (rc == 0 && !*g)
		rc = -1;
	if (rc == 0)
		rc = mgpu_dev_to_host(&net.dev, *g, net.m.g, *n * sizeof **g);
	net_close(&net);
	return rc;
}

/* --dtype bf16 through the family (every conv of the 2-D and 1-D nets:
 * bias, stride, groups, dilation; the linear heads): cpu's gradient of
 * one pass matches ref's (the same rounded operands, sums in another
 * order) and differs from fp32's (the rounding happened); fp16 is
 * refused. */
static void test_bf16(void)
{
	static const struct {
		const char *spec;
		int ndim;
		const uint32_t *shape;
	} nets[] = { { net2d, 3, img }, { net1d, 2, series } };
	struct net n;
	size_t i, na, nb, nc;
	float *a = NULL, *b = NULL, *c = NULL;

	for (i = 0; i < 2; i++) {
		T_OK(bf16_pass(nets[i].spec, "cpu", nets[i].ndim, nets[i].shape, MGPU_PREC_BF16, &a,
			       &na));
		T_OK(bf16_pass(nets[i].spec, "ref", nets[i].ndim, nets[i].shape, MGPU_PREC_BF16, &b,
			       &nb));
		T_OK(bf16_pass(nets[i].spec, "cpu", nets[i].ndim, nets[i].shape, MGPU_PREC_FP32, &c,
			       &nc));
		if (!t_cur_failed) {
			T_CHECK(na == nb && na == nc, "%zu, %zu, %zu parameters", na, nb, nc);
			T_CHECK(rel_diff(a, b, na) < 1e-4, "%s: bf16 cpu vs ref: %g",
				nets[i].spec, rel_diff(a, b, na));
			T_CHECK(rel_diff(a, c, na) > 1e-3, "%s: bf16 vs fp32 only %g apart",
				nets[i].spec, rel_diff(a, c, na));
		}
		free(a);
		free(b);
		free(c);
		a = b = c = NULL;
	}
	T_OK(net_open(&n, net1d, "cpu", 2, series, 3, NB));
	T_FAILS(mgpu_model_set_prec(&n.m, MGPU_PREC_FP16), MGPU_EINVAL, "not fp16");
	net_close(&n);
}

static const struct mgpu_param *find(const struct mgpu_param *ps, int n, const char *name)
{
	int i;

	for (i = 0; i < n; i++)
		if (strcmp(ps[i].name, name) == 0)
			return &ps[i];
	return NULL;
}

static int shape_is(const struct mgpu_param *p, int ndim, int a, int b, int c, int d)
{
	int want[4] = { a, b, c, d }, i;

	if (!p || p->ndim != ndim)
		return 0;
	for (i = 0; i < ndim; i++)
		if (p->shape[i] != want[i])
			return 0;
	return 1;
}

/* torch.nn.Sequential's names, torchvision BasicBlock's inside a res. */
static void test_names(void)
{
	struct net n;
	const struct mgpu_param *P;
	int np;

	T_OK(net_open(&n, net2d, "ref", 3, img, 3, 2));
	if (t_cur_failed)
		return;
	P = n.m.params;
	np = n.m.nparam;
	T_CHECK(shape_is(find(P, np, "0.weight"), 4, 4, 2, 3, 3), "conv weight (K, C, kh, kw)");
	T_CHECK(shape_is(find(P, np, "0.bias"), 1, 4, 0, 0, 0), "conv bias");
	T_CHECK(shape_is(find(P, np, "1.weight"), 1, 4, 0, 0, 0), "bn weight");
	T_CHECK(shape_is(find(P, np, "3.conv1.weight"), 4, 4, 4, 3, 3), "res conv1");
	T_CHECK(!find(P, np, "3.downsample.0.weight"), "identity block has no projection");
	T_CHECK(shape_is(find(P, np, "4.conv1.weight"), 4, 6, 4, 3, 3), "res conv1");
	T_CHECK(shape_is(find(P, np, "4.downsample.0.weight"), 4, 6, 4, 1, 1), "projection");
	T_CHECK(shape_is(find(P, np, "4.downsample.1.bias"), 1, 6, 0, 0, 0), "projection bn");
	T_CHECK(shape_is(find(P, np, "5.weight"), 4, 6, 3, 3, 3), "grouped conv (K, C/g, ..)");
	T_CHECK(!find(P, np, "5.bias"), "conv without 'bias' has none");
	T_CHECK(shape_is(find(P, np, "6.weight"), 1, 6, 0, 0, 0), "gn weight");
	T_CHECK(shape_is(find(P, np, "13.weight"), 2, 5, 6, 0, 0), "linear (N, in)");
	T_CHECK(shape_is(find(P, np, "15.weight"), 2, 3, 5, 0, 0), "head (classes, in)");
	T_CHECK(shape_is(find(n.m.buffers, n.m.nbuffer, "1.running_mean"), 1, 4, 0, 0, 0), "rm");
	T_CHECK(shape_is(find(n.m.buffers, n.m.nbuffer, "4.downsample.1.running_var"), 1, 6, 0, 0, 0),
		"rv");
	T_CHECK(shape_is(find(n.m.buffers, n.m.nbuffer, "4.bn2.num_batches_tracked"), 0, 0, 0, 0, 0),
		"num_batches_tracked is a scalar");
	T_CHECK(!find(n.m.buffers, n.m.nbuffer, "6.running_mean"), "gn keeps no statistics");
	T_CHECK(n.m.nparams == mgpu_model_count(&n.spec), "count %zu, built %zu",
		mgpu_model_count(&n.spec), n.m.nparams);
	T_CHECK(!find(P, np, "0.weight")->decay == 0 && find(P, np, "1.weight")->decay == 0 &&
			find(P, np, "0.bias")->decay == 0,
		"decay on conv and linear weights only");
	net_close(&n);
	T_OK(net_open(&n, net1d, "ref", 2, series, 3, 2));
	if (t_cur_failed)
		return;
	T_CHECK(shape_is(find(n.m.params, n.m.nparam, "0.weight"), 3, 4, 3, 5, 0),
		"Conv1d weight (K, C, k)");
	T_CHECK(shape_is(find(n.m.params, n.m.nparam, "4.conv2.weight"), 3, 6, 6, 3, 0),
		"res conv2 in 1-D");
	net_close(&n);
}

/* A model fresh from create, never init (a replica sharing rank 0's
 * weights), has torch's fresh buffers: running_var 1, running_mean 0. */
static void test_buffers_fresh(void)
{
	struct mgpu_spec spec;
	struct mgpu_dev dev;
	struct mgpu_model m;
	float *st;
	int i;
	size_t k;

	T_OK(mgpu_spec_parse(&spec, net1d, "t"));
	T_OK(fit_shape(&spec, 2, series, 3, "d"));
	T_OK(mgpu_dev_open(&dev, &mgpu_ops_cpu, 0));
	T_OK(mgpu_model_create(&m, &spec, &dev, 2));
	if (t_cur_failed)
		return;
	st = malloc(m.nbufvals * sizeof *st);
	T_OK(mgpu_model_get_buffers(&m, st));
	for (i = 0; i < m.nbuffer; i++)
		for (k = 0; k < m.buffers[i].count; k++)
			T_CHECK(st[m.buffers[i].off + k] ==
					(strstr(m.buffers[i].name, "running_var") ? 1.0f : 0.0f),
				"%s[%zu] = %g", m.buffers[i].name, k, st[m.buffers[i].off + k]);
	free(st);
	mgpu_model_free(&m);
	mgpu_dev_close(&dev);
}

/* The most parameters and buffers a spec may ask for: lines of res blocks
 * with a projection each (9 tensors and 9 buffers a line) up to the line
 * limit. The arrays once held 6 and 3 a line, and the 43rd such line wrote
 * past them into the buckets. */
static void test_deepest(void)
{
	char text[MGPU_CNN_MAX_LINES * 8 + 16] = "cnn:";
	struct mgpu_spec spec;
	struct mgpu_dev dev;
	struct mgpu_model m;
	int i;

	for (i = 0; i < MGPU_CNN_MAX_LINES - 1; i++)
		strcat(text, i % 2 ? "res 4; " : "res 6; ");
	strcat(text, "linear 3");
	T_OK(mgpu_spec_parse(&spec, text, "t"));
	T_OK(fit_shape(&spec, 2, series, 3, "d"));
	T_OK(mgpu_dev_open(&dev, &mgpu_ops_cpu, 0));
	T_OK(mgpu_model_create(&m, &spec, &dev, 2));
	if (t_cur_failed)
		return;
	T_CHECK(m.nparam == 9 * (MGPU_CNN_MAX_LINES - 1) + 2, "%d tensors", m.nparam);
	T_CHECK(m.nbuffer == 9 * (MGPU_CNN_MAX_LINES - 1), "%d buffers", m.nbuffer);
	T_CHECK(m.nbuckets > 0 && m.nbuckets <= MGPU_MAX_BUCKETS, "%d buckets", m.nbuckets);
	mgpu_model_free(&m);
	mgpu_dev_close(&dev);
}

/* Training moves the running statistics as torch (momentum 0.1, the
 * unbiased variance); evaluation normalises with them. */
static void test_bn_running(void)
{
	const uint32_t shape[3] = { 2, 1, 3 };
	struct net n;
	float st[16], logits[2 * 4], w[64];
	double mean, var, l, c;
	int ch, b, i;

	T_OK(net_open(&n, "cnn:bn; linear 2", "cpu", 3, shape, 2, 2));
	if (t_cur_failed)
		return;
	T_CHECK(n.m.nbufvals == 2 + 2 + 1, "state floats %zu", n.m.nbufvals);
	T_OK(mgpu_model_forward(&n.m, 2, 1));
	T_OK(mgpu_model_forward(&n.m, 2, 1));
	T_OK(mgpu_model_get_buffers(&n.m, st));
	for (ch = 0; ch < 2; ch++) {
		double rm = 0, rv = 1;
		mean = var = 0;
		for (b = 0; b < 2; b++)
			for (i = 0; i < 3; i++)
				mean += n.x[(b * 2 + ch) * 3 + i] / 6.0;
		for (b = 0; b < 2; b++)
			for (i = 0; i < 3; i++)
				var += pow(n.x[(b * 2 + ch) * 3 + i] - mean, 2) / 5.0;
		for (i = 0; i < 2; i++) {
			rm = 0.9 * rm + 0.1 * mean;
			rv = 0.9 * rv + 0.1 * var;
		}
		T_NEAR(st[ch], rm, 1e-5);
		T_NEAR(st[2 + ch], rv, 1e-5);
	}
	T_CHECK(st[4] == 2.0f, "num_batches_tracked %g after 2 training forwards", st[4]);
	/* evaluation: (x - rm) / sqrt(rv + eps) through the head, by hand */
	T_OK(mgpu_model_get(&n.m, w));
	T_OK(mgpu_model_forward(&n.m, 2, 0));
	T_OK(mgpu_model_logits(&n.m, 2, logits, &(size_t){ 0 }));
	for (b = 0; b < 2; b++)
		for (i = 0; i < 2; i++) {
			double z = w[4 + 2 * 6 + i]; /* 1.bias after bn (4) and 1.weight (12) */
			int k;
			for (k = 0; k < 6; k++) {
				int cc = k / 3;
				double xn = (n.x[b * 6 + k] - st[cc]) / sqrt(st[2 + cc] + 1e-5);
				z += w[4 + i * 6 + k] * (xn * w[cc] + w[2 + cc]);
			}
			T_NEAR(logits[b * 2 + i], z, 1e-4);
		}
	T_OK(mgpu_model_loss(&n.m, 2, 0, 0, &l, &c));
	T_OK(mgpu_model_get_buffers(&n.m, st));
	T_CHECK(st[4] == 2.0f, "evaluation counted as a batch: %g", st[4]);
	net_close(&n);
}

struct hook_log {
	int calls, fwd, bwd, nbn, order_ok;
};

/* Two identical ranks: every sum doubles. The forward meets the ranks at
 * its norms in order, the backward in the reverse order. */
static int twin_hook(void *ctx, int layer, float *v, size_t nv)
{
	struct hook_log *h = ctx;
	float tmp[64];
	size_t i;

	h->calls++;
	if (h->fwd < h->nbn)
		h->order_ok &= layer == h->fwd++;
	else
		h->order_ok &= layer == h->nbn - 1 - h->bwd++;
	if (nv > 64)
		return -1;
	memcpy(tmp, v, nv * sizeof(float));
	for (i = 0; i < nv; i++)
		tmp[i] *= 2.0f;
	memcpy(v, tmp, nv * sizeof(float)); /* host memory on ref and cpu */
	return 0;
}

/* The hook sees every bn's sums forward (in order) and backward (reverse
 * order); summing two identical batches leaves the loss and the gradient
 * as they were. */
static void test_bn_sync_hook(void)
{
	struct net n;
	struct hook_log h = { .order_ok = 1, .nbn = 4 }; /* bn, res's bn1, bn2, downsample */
	double l0, l1, c;
	float *g0, *g1;
	size_t i;

	T_OK(net_open(&n, net1d, "cpu", 2, series, 3, NB));
	if (t_cur_failed)
		return;
	g0 = malloc(n.m.nparams * sizeof *g0);
	g1 = malloc(n.m.nparams * sizeof *g1);
	T_OK(mgpu_model_forward(&n.m, NB, 1));
	T_OK(mgpu_model_loss(&n.m, NB, 1, 1.0f / NB, &l0, &c));
	T_OK(mgpu_model_backward(&n.m, NB, 0));
	T_OK(mgpu_dev_to_host(&n.dev, g0, n.m.g, n.m.nparams * sizeof *g0));
	n.m.stat_sum = twin_hook;
	n.m.stat_ctx = &h;
	n.m.stat_ranks = 2;
	T_OK(mgpu_model_forward(&n.m, NB, 1));
	T_OK(mgpu_model_loss(&n.m, NB, 1, 1.0f / NB, &l1, &c));
	T_OK(mgpu_model_backward(&n.m, NB, 0));
	T_OK(mgpu_dev_to_host(&n.dev, g1, n.m.g, n.m.nparams * sizeof *g1));
	T_CHECK(h.fwd == 4 && h.bwd == 4 && h.order_ok, "calls fwd %d bwd %d in order %d", h.fwd,
		h.bwd, h.order_ok);
	T_NEAR(l1, l0, 1e-5);
	for (i = 0; i < n.m.nparams; i++)
		T_CHECK(fabs(g1[i] - g0[i]) <= 1e-5 + 1e-4 * fabs(g0[i]), "grad %zu: %g vs %g", i,
			(double)g1[i], (double)g0[i]);
	/* evaluation uses the running statistics: no hook */
	h.calls = 0;
	T_OK(mgpu_model_forward(&n.m, NB, 0));
	T_CHECK(h.calls == 0, "hook called %d times in evaluation", h.calls);
	free(g0);
	free(g1);
	net_close(&n);
}

static void test_spec(void)
{
	static const char *const ok[] = {
		"cnn:conv 16 k=3 s=1 p=1; bn; relu; res 16; res 32 s=2; gap; linear auto",
		"cnn:input 3 32 32; conv 8 k=5 s=2 p=2 g=1 d=1 bias; gn 2; silu; maxpool k=3 s=2 p=1; "
		"avgpool k=2 s=2; flatten; dropout 0.5; linear 10",
		"cnn:input 6 100; conv 8 k=3 s=1 p=1 g=2 d=2; linear 4",
	};
	struct mgpu_spec s, back;
	char buf[512], buf2[512];
	size_t i;

	for (i = 0; i < sizeof ok / sizeof ok[0]; i++) {
		T_OK(mgpu_spec_parse(&s, ok[i], "t"));
		T_CHECK(s.kind == MGPU_MODEL_CNN, "%s", ok[i]);
		T_OK(mgpu_spec_format(&s, buf, sizeof buf));
		T_OK(mgpu_spec_parse(&back, buf, "t"));
		T_OK(mgpu_spec_format(&back, buf2, sizeof buf2));
		T_CHECK(strcmp(buf, buf2) == 0, "%s -> %s -> %s", ok[i], buf, buf2);
	}
	T_OK(mgpu_spec_parse(&s, ok[0], "t"));
	T_CHECK(mgpu_spec_has_auto(&s), "shape and classes unknown");
	T_OK(mgpu_spec_format(&s, buf, sizeof buf));
	T_CHECK(strcmp(buf, "cnn:conv 16 k=3 s=1 p=1; bn; relu; res 16; res 32 s=2; gap; "
			"linear auto") == 0, "%s", buf);
	T_OK(fit_shape(&s, 3, (const uint32_t[]){ 1, 28, 28 }, 10, "d"));
	T_CHECK(!mgpu_spec_has_auto(&s) && s.in_c * s.in_h * s.in_w == 784 &&
			mgpu_spec_classes(&s) == 10,
		"fitted %d x %d x %d, %d classes", s.in_c, s.in_h, s.in_w, mgpu_spec_classes(&s));
	T_OK(mgpu_spec_format(&s, buf, sizeof buf));
	T_CHECK(strcmp(buf, "cnn:input 1 28 28; conv 16 k=3 s=1 p=1; bn; relu; res 16; "
			"res 32 s=2; gap; linear 10") == 0, "%s", buf);
	T_CHECK(s.nbuckets == 5, "buckets %d (conv, bn, res, res, linear)", s.nbuckets);
	/* resume: the unfitted spec takes the checkpoint's sizes */
	T_OK(mgpu_spec_parse(&back, ok[0], "t"));
	mgpu_spec_take_auto(&back, &s);
	T_OK(mgpu_spec_format(&back, buf2, sizeof buf2));
	T_CHECK(strcmp(buf, buf2) == 0, "%s vs %s", buf, buf2);
	/* fitting to other data names the spec to write */
	T_FAILS(fit_shape(&s, 3, (const uint32_t[]){ 3, 28, 28 }, 10, "d"),
		MGPU_EINVAL, "write --model 'cnn:input 3 28 28;");
	T_OK(mgpu_spec_parse(&s, "cnn:conv 4 k=3; linear 3", "t"));
	T_FAILS(fit_shape(&s, 2, (const uint32_t[]){ 2, 9 }, 5, "d"), MGPU_ERANGE,
		"labels go up to 4 but the model has 3 classes");
	T_FAILS(fit_shape(&s, 2, (const uint32_t[]){ 2, 2 }, 2, "d"), MGPU_EINVAL,
		"line 1 (conv) gets 2 x 1 x 2: its output would be empty");
	T_OK(fit_shape(&s, 1, (const uint32_t[]){ 9 }, 2, "d"));
	T_CHECK(s.in_c == 1 && s.in_w == 9 && s.in_1d, "flat D is one channel of length D");
	T_OK(mgpu_spec_parse(&s, "cnn:conv 4 k=3 g=2; linear 3", "t"));
	T_FAILS(fit_shape(&s, 3, (const uint32_t[]){ 3, 5, 5 }, 2, "d"), MGPU_EINVAL,
		"groups 2 do not divide its 3 input channels");
}

static void test_spec_errors(void)
{
	static const struct {
		const char *text, *msg;
	} bad[] = {
		{ "cnn:conv 16; linear 2", "line 1 ('conv 16'): conv needs its kernel size, k=K" },
		{ "cnn:conv 16 k=3; pool 2 ; linear 2", "line 2 ('pool 2'): unknown layer 'pool'" },
		{ "cnn:conv 16 k=3; relu", "a conv net ends with a 'linear' line" },
		{ "cnn:linear auto; linear 3", "line 1: only the last line may be 'auto'" },
		{ "cnn:conv 16 k=0; linear 2", "kernel size k '0' is not an integer in [1, 255]" },
		{ "cnn:conv 16 k=3 q=1; linear 2", "unknown option 'q=1'" },
		{ "cnn:conv 16 k=3 k=5; linear 2", "option 'k' given twice" },
		{ "cnn:conv 6 k=3 g=4; linear 2", "groups 4 do not divide 6 channels" },
		{ "cnn:relu 3; linear 2", "'relu' takes no '3'" },
		{ "cnn:dropout 1; linear 2", "dropout '1' is not in [0, 1)" },
		{ "cnn:maxpool 3 p=2; linear 2", "padding (at most half the window) '2'" },
		{ "cnn:bn; input 1 2 2; linear 2", "'input' may only be the first line" },
		{ "cnn:res 8 3; linear 2", "unexpected '3'" },
		{ "cnn:", "a conv net ends with a 'linear' line" },
	};
	struct mgpu_spec s;
	size_t i;

	for (i = 0; i < sizeof bad / sizeof bad[0]; i++)
		T_FAILS(mgpu_spec_parse(&s, bad[i].text, "t"), MGPU_EINVAL, bad[i].msg);
}

/* A spec file: the "cnn" line, one layer per line, comments. */
static void test_spec_file(void)
{
	struct mgpu_spec s, inl;
	char a[512], b[512];

	T_OK(write_file(tpath("r.spec"), "# a net\n\ncnn   # the family\nconv 8 k=3 p=1\n"
						"bn\n  relu\nres 8 s=2 # block\ngap\nlinear auto\n"));
	T_OK(mgpu_spec_load(&s, tpath("r.spec")));
	T_OK(mgpu_spec_load(&inl, "cnn:conv 8 k=3 p=1;bn;relu;res 8 s=2;gap;linear auto"));
	T_OK(mgpu_spec_format(&s, a, sizeof a));
	T_OK(mgpu_spec_format(&inl, b, sizeof b));
	T_CHECK(strcmp(a, b) == 0, "%s vs %s", a, b);
	T_OK(write_file(tpath("bad.spec"), "cnn\nconv 8 k=3\nbatchnorm\nlinear 2\n"));
	T_FAILS(mgpu_spec_load(&s, tpath("bad.spec")), MGPU_EINVAL,
		"bad.spec': line 3 ('batchnorm'): unknown layer 'batchnorm'");
}

/* A checkpoint holds the weights and the running statistics under torch's
 * names, and loads back into a model that evaluates the same. */
static void test_ckpt(void)
{
	struct mgpu_ckpt_state st = { .step = 1, .world_size = 1, .norm_scale = 1 };
	struct mgpu_optim_cfg oc = { .kind = MGPU_OPT_SGD, .momentum = 0.9f };
	struct mgpu_optim o, o2;
	struct net a, b;
	char dir[4200];
	float la[3 * NB], lb[3 * NB], sa[64], sb[64];
	size_t pr, i;

	T_OK(net_open(&a, net1d, "cpu", 2, series, 3, NB));
	T_OK(net_open(&b, net1d, "cpu", 2, series, 3, NB));
	if (t_cur_failed)
		return;
	T_OK(mgpu_model_init(&b.m, 99));
	T_OK(mgpu_optim_create(&o, &a.m, &oc));
	T_OK(mgpu_optim_create(&o2, &b.m, &oc));
	T_OK(mgpu_model_forward(&a.m, NB, 1));
	T_OK(mgpu_model_forward(&a.m, NB, 1));
	T_OK(mgpu_spec_format(&a.m.spec, st.spec, sizeof st.spec));
	T_OK(mgpu_ckpt_save(tpath("ck"), 0, &st, &a.m, &o, NULL, 0, dir, sizeof dir));
	T_OK(mgpu_ckpt_load_tensors(dir, &b.m, &o2));
	T_OK(mgpu_model_get_buffers(&a.m, sa));
	T_OK(mgpu_model_get_buffers(&b.m, sb));
	T_CHECK(a.m.nbufvals < 64 && memcmp(sa, sb, a.m.nbufvals * sizeof(float)) == 0,
		"running statistics differ after the round trip");
	T_CHECK(*(const float *)&sb[a.m.buffers[2].off] == 2.0f, "num_batches_tracked %g",
		sb[a.m.buffers[2].off]);
	T_OK(mgpu_model_forward(&a.m, NB, 0));
	T_OK(mgpu_model_logits(&a.m, NB, la, &pr));
	T_OK(mgpu_model_forward(&b.m, NB, 0));
	T_OK(mgpu_model_logits(&b.m, NB, lb, &pr));
	for (i = 0; i < 3 * NB; i++)
		T_CHECK(la[i] == lb[i], "logit %zu: %g vs %g", i, la[i], lb[i]);
	mgpu_optim_free(&o);
	mgpu_optim_free(&o2);
	net_close(&a);
	net_close(&b);
}

int main(void)
{
	if (t_tmpdir_make("cnn") < 0)
		return 1;
	T_RUN(test_spec);
	T_RUN(test_spec_errors);
	T_RUN(test_spec_file);
	T_RUN(test_names);
	T_RUN(test_grad_2d_ref);
	T_RUN(test_grad_2d_cpu);
	T_RUN(test_grad_1d_ref);
	T_RUN(test_grad_1d_cpu);
	T_RUN(test_grad_smooth_ref);
	T_RUN(test_grad_smooth_cpu);
	T_RUN(test_bf16);
	T_RUN(test_buffers_fresh);
	T_RUN(test_bn_running);
	T_RUN(test_bn_sync_hook);
	T_RUN(test_ckpt);
	T_RUN(test_deepest);
	t_tmpdir_remove();
	return T_DONE();
}
