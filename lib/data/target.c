/*
 * target.c - target kinds, keypoint JSON and confidence maps (target.h).
 */
#include "data/target.h"

#include <math.h>   /* expf, NAN, isnan */
#include <string.h> /* memset */

#include "core/err.h"  /* mgpu_err, MGPU_TRY */
#include "core/json.h" /* mgpu_json_parse */

/* One part: null, [x, y] or [x, y, v]. */
static int part(const struct mgpu_json *v, const char *name, int p, float *xy)
{
	double a[3] = { 0, 0, 2 };
	size_t i;

	xy[0] = xy[1] = NAN;
	if (v->type == MGPU_JSON_NULL)
		return 0;
	if (v->type != MGPU_JSON_ARRAY || v->count < 2 || v->count > 3)
		return mgpu_err(MGPU_EFORMAT, "'%s': part %d is not [x, y], [x, y, v] or null",
				name, p);
	for (i = 0; i < v->count; i++)
		if (mgpu_json_f64(&v->items[i], &a[i]) < 0)
			return mgpu_err(MGPU_EFORMAT, "'%s': part %d: %s is not a number", name,
					p, mgpu_json_type_name(v->items[i].type));
	if (a[0] < -1e6 || a[0] > 1e6 || a[1] < -1e6 || a[1] > 1e6)
		return mgpu_err(MGPU_ERANGE, "'%s': part %d: (%g, %g) is not a pixel position",
				name, p, a[0], a[1]);
	if (a[2] == 0.0)
		return 0;
	xy[0] = (float)a[0];
	xy[1] = (float)a[1];
	return 0;
}

int mgpu_keypoints_parse(const char *text, size_t len, const char *name, float *kp, int maxp,
			 int *np)
{
	struct mgpu_json_doc doc;
	const struct mgpu_json *a;
	size_t i;
	int rc = 0;

	*np = 0;
	MGPU_TRY(mgpu_json_parse(text, len, name, &doc));
	a = doc.root;
	if (a->type == MGPU_JSON_OBJECT) {
		a = mgpu_json_get(a, "keypoints");
		if (!a) { /* metadata, as many WebDatasets carry: not a target */
			rc = 1;
			goto out;
		}
	}
	if (a->type != MGPU_JSON_ARRAY || a->count == 0) {
		rc = mgpu_err(MGPU_EFORMAT, "'%s': keypoints are not a non-empty array of [x, y] "
			      "(or an object with one as \"keypoints\")", name);
		goto out;
	}
	if (a->count > (size_t)maxp) {
		rc = mgpu_err(MGPU_ERANGE, "'%s': %zu parts, more than %d", name, a->count, maxp);
		goto out;
	}
	for (i = 0; i < a->count; i++)
		MGPU_CHECK(part(&a->items[i], name, (int)i, kp + 2 * i));
	*np = (int)a->count;
out:
	mgpu_json_free(&doc);
	return rc;
}

void mgpu_keypoints_render(const float *kp, int P, int h, int w, int stride, float sigma,
			   float *maps, float *weight)
{
	float u, v, k = -1.0f / (2.0f * sigma * sigma), gy, *m, *gx;
	int p, i, j;

	for (p = 0; p < P; p++) {
		m = maps + (size_t)p * h * w;
		if (weight)
			weight[p] = isnan(kp[2 * p]) ? 0.0f : 1.0f;
		if (isnan(kp[2 * p]) || isnan(kp[2 * p + 1])) {
			memset(m, 0, (size_t)h * w * sizeof *m);
			continue;
		}
		u = kp[2 * p] / (float)stride;
		v = kp[2 * p + 1] / (float)stride;
		/* separable: exp(k (dx^2 + dy^2)) = exp(k dx^2) exp(k dy^2), so a
		 * map costs h + w exponentials, not h w. The column factors sit
		 * in row 0 until the other rows have used them. */
		gx = m;
		for (j = 0; j < w; j++)
			gx[j] = expf(k * ((float)j - u) * ((float)j - u));
		for (i = h - 1; i >= 0; i--) {
			gy = expf(k * ((float)i - v) * ((float)i - v));
			for (j = 0; j < w; j++)
				m[(size_t)i * w + j] = gy * gx[j];
		}
	}
}
