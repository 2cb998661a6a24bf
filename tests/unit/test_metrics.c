/*
 * test_metrics.c - the target metrics (data/metrics.h) on values worked
 * out by hand, and keypoints recovered from the confidence maps
 * data/target.h renders, at sub-pixel precision.
 */
#include <math.h>   /* fabs, sqrt, isnan */
#include <stdlib.h> /* calloc, free */

#include "../t.h"         /* T_RUN, T_CHECK, T_NEAR */
#include "data/metrics.h" /* mgpu_metrics_* */
#include "data/target.h"  /* mgpu_keypoints_render */

/* A rendered Gaussian's peak comes back within a tenth of a cell, where
 * the cell's own centre would be up to half a cell off. */
static void test_peak_subpixel(void)
{
	static const float pos[][2] = { { 10.3f, 7.6f }, { 4.0f, 4.0f }, { 20.49f, 3.51f },
					{ 1.2f, 18.8f } };
	float map[24 * 24], u, v, worst = 0.0f, e;
	size_t i;

	for (i = 0; i < sizeof pos / sizeof pos[0]; i++) {
		mgpu_keypoints_render(pos[i], 1, 24, 24, 1, 2.0f, map, NULL);
		mgpu_heatmap_peak(map, 24, 24, &u, &v);
		e = fabsf(u - pos[i][0]) > fabsf(v - pos[i][1]) ? fabsf(u - pos[i][0]) :
								   fabsf(v - pos[i][1]);
		worst = e > worst ? e : worst;
	}
	T_CHECK(worst < 0.1f, "sub-pixel peak off by %g cells", worst);
}

/* At the border no neighbour is read; a flat map gives its first cell. */
static void test_peak_edges(void)
{
	float map[3 * 4] = { 0 }, u, v;

	mgpu_heatmap_peak(map, 3, 4, &u, &v);
	T_CHECK(u == 0.0f && v == 0.0f, "flat map peak (%g, %g)", u, v);
	map[3] = 5.0f; /* last column of the first row */
	map[2] = 4.0f;
	mgpu_heatmap_peak(map, 3, 4, &u, &v);
	T_CHECK(u == 3.0f && v == 0.0f, "border peak (%g, %g)", u, v);
	map[3] = 0.0f;
	map[5] = 2.0f; /* (row 1, col 1), right neighbour 1, left 0 */
	map[6] = 1.0f;
	map[2] = 0.0f;
	mgpu_heatmap_peak(map, 3, 4, &u, &v);
	/* x: l 0, c 2, r 1: off = 0.5 (0 - 1) / (0 - 4 + 1) = 1/6 */
	T_NEAR(u, 1.0f + 1.0f / 6.0f, 1e-6);
	/* y: above 0, below 0: off 0 */
	T_NEAR(v, 1.0f, 1e-6);
}

/* Two parts at stride 4 (one missing): the error is in input pixels. */
static void test_keypoint_error_pck(void)
{
	float kp[6] = { 40.0f, 20.0f, NAN, NAN, 8.0f, 8.0f }, pred[6], maps[3 * 16 * 16];
	struct mgpu_metrics m;

	mgpu_metrics_reset(&m, 3.5); /* part 0 within, part 2 (5 px) not */
	/* predictions 3 px right of part 0, 4 px down and 3 right of part 2 */
	pred[0] = 43.0f;
	pred[1] = 20.0f;
	pred[2] = 30.0f; /* a map for the missing part, ignored */
	pred[3] = 30.0f;
	pred[4] = 11.0f;
	pred[5] = 12.0f;
	mgpu_keypoints_render(pred, 3, 16, 16, 4, 1.5f, maps, NULL);
	mgpu_metrics_keypoints(&m, maps, 3, 16, 16, 4, kp);
	T_CHECK(m.kp_count == 2, "%llu parts counted, want 2", (unsigned long long)m.kp_count);
	T_NEAR(mgpu_metrics_kp_error(&m), (3.0 + 5.0) / 2, 0.3);
	T_NEAR(mgpu_metrics_pck(&m), 0.5, 1e-12);
}

static void test_miou(void)
{
	/* 2 classes, 5 pixels: logits (C, HW) */
	float l[10] = { 1, 1, 0, 0, 1, /* class 0 */
			0, 0, 1, 1, 0 /* class 1 */ };
	int32_t lab[5] = { 0, 1, 1, -1, 0 };
	struct mgpu_metrics m, n;

	mgpu_metrics_reset(&m, 1.0);
	mgpu_metrics_mask(&m, l, 2, 5, lab);
	/* predicted 0 0 1 (1) 0; class 0: inter 2, union 3; class 1: inter 1, union 2 */
	T_NEAR(mgpu_metrics_miou(&m), (2.0 / 3 + 1.0 / 2) / 2, 1e-12);
	/* 3 of the 4 labelled pixels right; the ignored one counts nowhere */
	T_NEAR(mgpu_metrics_pixel_acc(&m), 3.0 / 4, 1e-12);
	mgpu_metrics_reset(&n, 1.0);
	mgpu_metrics_merge(&n, &m);
	mgpu_metrics_merge(&n, &m);
	T_NEAR(mgpu_metrics_miou(&n), (2.0 / 3 + 1.0 / 2) / 2, 1e-12);
	T_NEAR(mgpu_metrics_pixel_acc(&n), 3.0 / 4, 1e-12);
}

static void test_rmse_and_empty(void)
{
	float p[4] = { 1, 2, 3, 4 }, t[4] = { 1, 0, 3, 0 };
	struct mgpu_metrics m;

	mgpu_metrics_reset(&m, 1.0);
	T_CHECK(isnan(mgpu_metrics_rmse(&m)) && isnan(mgpu_metrics_kp_error(&m)) &&
			isnan(mgpu_metrics_pck(&m)) && isnan(mgpu_metrics_miou(&m)) &&
			isnan(mgpu_metrics_pixel_acc(&m)),
		"nothing counted must be NaN");
	mgpu_metrics_regression(&m, p, t, 4);
	T_NEAR(mgpu_metrics_rmse(&m), sqrt((4.0 + 16.0) / 4), 1e-12);
}

int main(void)
{
	T_RUN(test_peak_subpixel);
	T_RUN(test_peak_edges);
	T_RUN(test_keypoint_error_pck);
	T_RUN(test_miou);
	T_RUN(test_rmse_and_empty);
	return T_DONE();
}
