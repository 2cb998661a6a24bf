/*
 * test_target_loss.c - the loss chosen by a target's kind over a model's
 * outputs (model/target_loss.h) on ref and cpu, on values worked out by
 * hand: keypoint maps (a missing part weighs nothing), masks (ignored
 * pixels, the row's pixel accuracy as its correct count), vectors; the
 * evaluation's metrics from outputs; a batch of other sizes refused.
 */
#include <math.h>   /* NAN, fabs */
#include <string.h> /* memcpy */

#include "../t.h"              /* T_RUN, T_CHECK, T_OK, T_FAILS */
#include "core/err.h"          /* mgpu_errmsg */
#include "data/target.h"       /* mgpu_keypoints_render */
#include "model/target_loss.h" /* mgpu_target_* */

static struct mgpu_dev dev;
static const struct mgpu_ops *be;

/* The two sums a loss adds, read back. */
static void loss_of(struct mgpu_target_dev *t, const float *out_host, size_t n, int B,
		    double got[2])
{
	float *out;
	double *acc;

	T_OK(mgpu_dev_alloc(&dev, (void **)&out, n * sizeof *out));
	T_OK(mgpu_dev_alloc(&dev, (void **)&acc, 2 * sizeof *acc));
	T_OK(mgpu_dev_from_host(&dev, out, out_host, n * sizeof *out));
	T_OK(be->zero(&dev, acc, 2 * sizeof *acc));
	T_OK(mgpu_target_loss_acc(t, &dev, out, out, B, 1.0f, acc));
	T_OK(mgpu_dev_to_host(&dev, got, acc, 2 * sizeof *acc));
	mgpu_dev_free(&dev, out, n * sizeof *out);
	mgpu_dev_free(&dev, acc, 2 * sizeof *acc);
}

/* Two rows of 2 parts, maps of 3x4 at stride 2; row 1's part 1 missing.
 * Outputs = maps + 0.5: each present map's MSE is 0.25, over P maps. */
static void test_keypoints(void)
{
	float kp[8] = { 2.0f, 2.0f, 6.0f, 4.0f, 4.0f, 0.0f, NAN, NAN };
	float maps[2 * 2 * 12], w[4], out[48];
	struct mgpu_target_batch tb = { .kind = MGPU_TARGET_KEYPOINTS, .P = 2, .h = 3, .w = 4 };
	struct mgpu_target_dev t;
	struct mgpu_metrics m;
	double got[2];
	int i;

	mgpu_keypoints_render(kp, 2, 3, 4, 2, 1.0f, maps, w);
	mgpu_keypoints_render(kp + 4, 2, 3, 4, 2, 1.0f, maps + 24, w + 2);
	tb.maps = maps, tb.weight = w, tb.kp = kp;
	T_OK(mgpu_target_dev_alloc(&t, &dev, MGPU_TARGET_KEYPOINTS, 0, 2, 3, 4, 0, 4));
	T_CHECK(mgpu_target_outputs(&t) == 24, "outputs %zu", mgpu_target_outputs(&t));
	T_OK(mgpu_target_dev_load(&t, &dev, &tb, 2));
	for (i = 0; i < 48; i++)
		out[i] = maps[i] + 0.5f;
	loss_of(&t, out, 48, 2, got);
	T_CHECK(fabs(got[0] - (0.25 + 0.125)) < 1e-6 && got[1] == 0.0, "loss %g, correct %g",
		got[0], got[1]);
	/* the maps themselves: every present part where it is, PCK 1 */
	mgpu_metrics_reset(&m, 1.0);
	mgpu_target_metrics_add(&m, &t, maps, &tb, 2, 2);
	T_CHECK(m.kp_count == 3 && mgpu_metrics_kp_error(&m) < 0.2 && mgpu_metrics_pck(&m) == 1.0,
		"%llu parts, error %g px", (unsigned long long)m.kp_count, mgpu_metrics_kp_error(&m));
	tb.P = 3;
	T_FAILS(mgpu_target_dev_load(&t, &dev, &tb, 2), MGPU_EINVAL, "a batch of kind 3");
	mgpu_target_dev_free(&t, &dev);
}

/* One row of 2x2 pixels, 3 classes: pixels 0 and 1 right, 2 wrong, 3
 * ignored: pixel accuracy 2/4 (ignored pixels count as not correct). */
static void test_mask(void)
{
	int32_t lab[4] = { 2, 0, 1, -1 };
	/* logits (C=3, HW=4): pixel p's class c at c * 4 + p */
	float out[12] = { 0, 5, 5, 0, /* class 0 */ 0, 0, 0, 0, /* class 1 */ 5, 0, 0, 0 };
	struct mgpu_target_batch tb = { .kind = MGPU_TARGET_MASK, .mask = lab, .h = 2, .w = 2 };
	struct mgpu_target_dev t;
	struct mgpu_metrics m;
	double got[2], l0 = log(1.0 + 2.0 * exp(-5.0)), l2 = 5.0 + log(1.0 + 2.0 * exp(-5.0));

	T_OK(mgpu_target_dev_alloc(&t, &dev, MGPU_TARGET_MASK, 0, 0, 2, 2, 3, 1));
	T_OK(mgpu_target_dev_load(&t, &dev, &tb, 1));
	loss_of(&t, out, 12, 1, got);
	T_CHECK(fabs(got[0] - (2.0 * l0 + l2) / 4.0) < 1e-5 && fabs(got[1] - 0.5) < 1e-12,
		"loss %g (want %g), pixel accuracy %g", got[0], (2.0 * l0 + l2) / 4.0, got[1]);
	mgpu_metrics_reset(&m, 1.0);
	mgpu_target_metrics_add(&m, &t, out, &tb, 1, 1);
	/* class 2: 1/1; class 0: predicted at 1 and 2, true at 1: 1/2; class 1: 0/1 */
	T_CHECK(fabs(mgpu_metrics_miou(&m) - (1.0 + 0.5 + 0.0) / 3.0) < 1e-12, "mIoU %g",
		mgpu_metrics_miou(&m));
	mgpu_target_dev_free(&t, &dev);
}

static void test_vector(void)
{
	float vec[4] = { 1, 2, 3, 4 }, out[4] = { 2, 2, 3, 2 };
	struct mgpu_target_batch tb = { .kind = MGPU_TARGET_VECTOR, .vec = vec, .K = 2 };
	struct mgpu_target_dev t;
	struct mgpu_metrics m;
	double got[2];

	T_OK(mgpu_target_dev_alloc(&t, &dev, MGPU_TARGET_VECTOR, 2, 0, 0, 0, 0, 2));
	T_OK(mgpu_target_dev_load(&t, &dev, &tb, 2));
	loss_of(&t, out, 4, 2, got);
	T_CHECK(fabs(got[0] - (0.5 + 2.0)) < 1e-6, "loss %g", got[0]); /* (1 + 0)/2, (0 + 4)/2 */
	mgpu_metrics_reset(&m, 1.0);
	mgpu_target_metrics_add(&m, &t, out, &tb, 2, 1);
	T_NEAR(mgpu_metrics_rmse(&m), sqrt(5.0 / 4.0), 1e-12);
	mgpu_target_dev_free(&t, &dev);
	T_FAILS(mgpu_target_dev_alloc(&t, &dev, MGPU_TARGET_VECTOR, 0, 0, 0, 0, 0, 2), MGPU_EINVAL,
		"targets: bad kind");
}

/* Every buffer of the tests above was given back. */
static void test_no_leak(void)
{
	T_CHECK(dev.bytes_cur == 0, "%zu device bytes left", dev.bytes_cur);
}

int main(void)
{
	static const struct mgpu_ops *const backends[] = { &mgpu_ops_ref, &mgpu_ops_cpu };
	size_t i;

	for (i = 0; i < 2; i++) {
		be = backends[i];
		if (mgpu_dev_open(&dev, be, 0) < 0)
			return 1;
		T_RUN(test_keypoints);
		T_RUN(test_mask);
		T_RUN(test_vector);
		T_RUN(test_no_leak);
		mgpu_dev_close(&dev);
	}
	return T_DONE();
}
