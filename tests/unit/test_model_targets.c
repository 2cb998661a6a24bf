/*
 * test_model_targets.c - model families on targets beyond a class id
 * (model.h's mgpu_model_set_targets, spec.h's mgpu_spec_out_shape): what
 * auto becomes for a target, the outputs a fitted spec gives, a conv net
 * ending in a conv, and the loss hooks of the mlp and the cnn taking the
 * target's loss (values and gradients against host arithmetic) on ref and
 * cpu.
 */
#include <math.h>   /* NAN, fabs */
#include <stdlib.h> /* malloc, free */
#include <string.h> /* memset */

#include "../t.h"          /* T_RUN, T_CHECK, T_OK, T_FAILS */
#include "core/err.h"      /* mgpu_errmsg */
#include "data/samples.h"  /* MGPU_TARGET_*, MGPU_DTYPE_* */
#include "data/target.h"   /* mgpu_keypoints_render */
#include "model/model.h"   /* mgpu_model_* */

static struct mgpu_dev dev;
static const struct mgpu_ops *be;

/* s fitted to samples of shape (ndim, shape) with a target of kind and
 * channels (kind 0: classes labels). */
static int fit(struct mgpu_spec *s, const char *text, int ndim, unsigned c, unsigned h,
	       unsigned w, int kind, int channels)
{
	struct mgpu_data_desc d = { .dtype = MGPU_DTYPE_F32, .ndim = ndim, .classes = channels,
				    .target = kind };

	d.shape[0] = c, d.shape[1] = h, d.shape[2] = w;
	d.d = (int)(ndim == 3 ? c * h * w : ndim == 2 ? c * h : c);
	if (mgpu_spec_parse(s, text, "test") < 0)
		return -1;
	return mgpu_spec_fit(s, &d, "data");
}

static void test_auto_classes(void)
{
	struct mgpu_data_desc labels = { .classes = 1 }, vec = { .classes = 1, .target = 1 };
	struct mgpu_spec s;
	int sh[3];

	T_CHECK(mgpu_spec_auto_classes(&labels) == 2, "labels: %d", mgpu_spec_auto_classes(&labels));
	T_CHECK(mgpu_spec_auto_classes(&vec) == 1, "vector: %d", mgpu_spec_auto_classes(&vec));
	/* a regression of one value: one output, mlp and linear auto alike */
	T_OK(fit(&s, "mlp:auto-8-auto", 1, 4, 0, 0, MGPU_TARGET_VECTOR, 1));
	T_OK(mgpu_spec_out_shape(&s, sh));
	T_CHECK(sh[0] == 1 && sh[1] == 1 && sh[2] == 1, "mlp %dx%dx%d", sh[0], sh[1], sh[2]);
	T_OK(fit(&s, "cnn:conv 4 k=3 p=1; relu; flatten; linear auto", 2, 1, 6, 0,
		 MGPU_TARGET_VECTOR, 1));
	T_OK(mgpu_spec_out_shape(&s, sh));
	T_CHECK(sh[0] == 1 && sh[1] == 1 && sh[2] == 1, "cnn %dx%dx%d", sh[0], sh[1], sh[2]);
	/* a fixed size stays what it is: the trainer compares it with the target */
	T_OK(fit(&s, "mlp:auto-8-3", 1, 4, 0, 0, MGPU_TARGET_VECTOR, 5));
	T_CHECK(s.dims[s.nlayers] == 3, "mlp took %d", s.dims[s.nlayers]);
}

static void test_out_shape(void)
{
	struct mgpu_spec s;
	int sh[3];

	/* a fully-conv net: the maps of its last conv, at its stride */
	T_OK(fit(&s, "cnn:conv 4 k=3 p=1; relu; conv 4 k=3 s=2 p=1; relu; conv 2 k=1", 3, 1, 8,
		 8, MGPU_TARGET_KEYPOINTS, 2));
	T_OK(mgpu_spec_out_shape(&s, sh));
	T_CHECK(sh[0] == 2 && sh[1] == 4 && sh[2] == 4, "cnn %dx%dx%d", sh[0], sh[1], sh[2]);
	/* class labels need class logits */
	T_FAILS(fit(&s, "cnn:conv 4 k=3 p=1; relu; conv 2 k=1", 3, 1, 8, 8, 0, 2), MGPU_EINVAL,
		"class labels need a conv net that ends with 'linear'");
	T_FAILS(mgpu_spec_parse(&s, "cnn:conv 4 k=3; relu", "test"), MGPU_EINVAL,
		"a conv net ends with a 'linear' line (its outputs are the class logits) or a "
		"'conv'");
	T_OK(mgpu_spec_parse(&s, "gpt:layers=1,heads=1,dim=8,ctx=4", "test"));
	T_FAILS(mgpu_spec_out_shape(&s, sh), MGPU_EINVAL,
		"a gpt model trains on token ids, not on targets");
}

/* An mlp with no hidden layer, y = W x + b, on vector targets of K = 3:
 * its summed loss is each row's mean squared error, and the bias's
 * gradient the sum of 2 (y - t) / K * scale over the rows. */
static void test_mlp_vector(void)
{
	enum { B = 5, D = 4, K = 3 };
	float x[B * D], t[B * K], y[B * K], g[K], scale = 0.5f;
	struct mgpu_target_batch tb = { .kind = MGPU_TARGET_VECTOR, .vec = t, .K = K };
	int32_t lab[B] = { 0 };
	double loss = 0, want = 0, correct, gw;
	struct mgpu_model m;
	struct mgpu_spec s;
	size_t per;
	int i, k;

	for (i = 0; i < B * D; i++)
		x[i] = (float)((i * 7) % 11) / 11.0f - 0.4f;
	for (i = 0; i < B * K; i++)
		t[i] = (float)((i * 5) % 9) / 9.0f;
	T_OK(fit(&s, "mlp:auto-auto", 1, D, 0, 0, MGPU_TARGET_VECTOR, K));
	T_OK(mgpu_model_create(&m, &s, &dev, 8));
	T_OK(mgpu_model_init(&m, 7));
	T_OK(mgpu_model_set_targets(&m, MGPU_TARGET_VECTOR, K, 0, 1, 1, K));
	T_OK(mgpu_model_load_batch_f32(&m, x, lab, B));
	T_OK(mgpu_model_load_targets(&m, &tb, B));
	T_OK(mgpu_model_forward(&m, B, 1));
	T_OK(mgpu_model_logits(&m, B, y, &per));
	T_CHECK(per == K, "per row %zu", per);
	T_OK(mgpu_model_loss(&m, B, 1, scale, &loss, &correct));
	T_OK(mgpu_model_backward(&m, B, 0));
	T_OK(mgpu_dev_to_host(&dev, g, m.g + m.params[1].off, sizeof g));
	for (i = 0; i < B; i++)
		for (k = 0; k < K; k++)
			want += ((double)y[i * K + k] - t[i * K + k]) *
				((double)y[i * K + k] - t[i * K + k]) / K;
	T_NEAR(loss, want, 1e-6);
	T_CHECK(correct == 0, "correct %g", correct);
	for (k = 0; k < K; k++) {
		for (gw = 0, i = 0; i < B; i++)
			gw += 2.0 * ((double)y[i * K + k] - t[i * K + k]) / K * scale;
		T_NEAR(g[k], gw, 1e-6);
	}
	/* a batch of another kind is refused */
	tb.kind = MGPU_TARGET_MASK;
	T_FAILS(mgpu_model_load_targets(&m, &tb, B), MGPU_EINVAL, "targets: a batch of kind");
	mgpu_model_free(&m);
}

/* A conv net ending in a 1x1 conv gives (P, h, w) maps: its loss is the
 * weighted MSE of the keypoint maps, a missing part's map weighing 0. */
static void test_cnn_keypoints(void)
{
	enum { B = 2, P = 2, H = 4, W = 5, HW = H * W };
	float x[B * HW], kp[B * P * 2] = { 1, 1, 3, 2, 2, 3, NAN, NAN };
	float maps[B * P * HW], wt[B * P], y[B * P * HW];
	struct mgpu_target_batch tb = { .kind = MGPU_TARGET_KEYPOINTS, .maps = maps,
					.weight = wt, .kp = kp, .P = P, .h = H, .w = W };
	int32_t lab[B] = { 0 };
	double loss = 0, want = 0, correct, row;
	struct mgpu_model m;
	struct mgpu_spec s;
	size_t per;
	int i, p, j;

	for (i = 0; i < B * HW; i++)
		x[i] = (float)((i * 3) % 7) / 7.0f;
	for (i = 0; i < B; i++)
		mgpu_keypoints_render(kp + i * P * 2, P, H, W, 1, 1.0f, maps + i * P * HW, wt + i * P);
	T_OK(fit(&s, "cnn:conv 3 k=3 p=1 bias; relu; conv 2 k=1 bias", 3, 1, H, W,
		 MGPU_TARGET_KEYPOINTS, P));
	T_OK(mgpu_model_create(&m, &s, &dev, B));
	T_OK(mgpu_model_init(&m, 3));
	T_OK(mgpu_model_set_targets(&m, MGPU_TARGET_KEYPOINTS, 0, P, H, W, P));
	T_OK(mgpu_model_load_batch_f32(&m, x, lab, B));
	T_OK(mgpu_model_load_targets(&m, &tb, B));
	T_OK(mgpu_model_forward(&m, B, 0));
	T_OK(mgpu_model_logits(&m, B, y, &per));
	T_CHECK(per == P * HW, "per row %zu", per);
	T_OK(mgpu_model_loss(&m, B, 0, 1.0f, &loss, &correct));
	for (i = 0; i < B; i++)
		for (p = 0; p < P; p++) {
			for (row = 0, j = 0; j < HW; j++) {
				double d = (double)y[(i * P + p) * HW + j] - maps[(i * P + p) * HW + j];
				row += d * d;
			}
			want += wt[i * P + p] * row / (P * HW);
		}
	T_CHECK(wt[3] == 0.0f, "the missing part weighs %g", wt[3]);
	T_NEAR(loss, want, 1e-6);
	mgpu_model_free(&m);
}

int main(void)
{
	static const struct mgpu_ops *const backends[] = { &mgpu_ops_ref, &mgpu_ops_cpu };
	size_t i;

	T_RUN(test_auto_classes);
	T_RUN(test_out_shape);
	for (i = 0; i < 2; i++) {
		be = backends[i];
		if (mgpu_dev_open(&dev, be, 0) < 0)
			return 1;
		T_RUN(test_mlp_vector);
		T_RUN(test_cnn_keypoints);
		mgpu_dev_close(&dev);
	}
	return T_DONE();
}
