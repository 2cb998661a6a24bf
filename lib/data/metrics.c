/*
 * metrics.c - keypoint error, PCK, mean IoU and RMSE (see metrics.h).
 */
#include "data/metrics.h"

#include <math.h>   /* sqrt, NAN, isnan */
#include <string.h> /* memset */

void mgpu_metrics_reset(struct mgpu_metrics *m, double pck_px)
{
	memset(m, 0, sizeof *m);
	m->pck_px = pck_px;
}

void mgpu_metrics_merge(struct mgpu_metrics *dst, const struct mgpu_metrics *src)
{
	int c;

	dst->kp_err_sum += src->kp_err_sum;
	dst->kp_count += src->kp_count;
	dst->kp_within += src->kp_within;
	dst->sq_sum += src->sq_sum;
	dst->sq_count += src->sq_count;
	for (c = 0; c < MGPU_SAMPLES_MAX_CLASSES; c++) {
		dst->inter[c] += src->inter[c];
		dst->uni[c] += src->uni[c];
	}
	dst->pix_count += src->pix_count;
}

/* The parabola's vertex through (-1, l), (0, c), (1, r), within half a
 * cell; 0 unless the three curve down. */
static float vertex(float l, float c, float r)
{
	float den = l - 2.0f * c + r, off;

	if (!(den < 0.0f))
		return 0.0f;
	off = 0.5f * (l - r) / den;
	return off > 0.5f ? 0.5f : off < -0.5f ? -0.5f : off;
}

void mgpu_heatmap_peak(const float *map, int h, int w, float *u, float *v)
{
	size_t best = 0, i, n = (size_t)h * (size_t)w;
	int x, y;

	for (i = 1; i < n; i++)
		if (map[i] > map[best])
			best = i;
	x = (int)(best % (size_t)w);
	y = (int)(best / (size_t)w);
	*u = (float)x;
	*v = (float)y;
	if (x > 0 && x < w - 1)
		*u += vertex(map[best - 1], map[best], map[best + 1]);
	if (y > 0 && y < h - 1)
		*v += vertex(map[best - (size_t)w], map[best], map[best + (size_t)w]);
}

void mgpu_metrics_keypoints(struct mgpu_metrics *m, const float *maps, int P, int h, int w,
			    int stride, const float *kp)
{
	float u, v;
	double dx, dy, e;
	int p;

	for (p = 0; p < P; p++) {
		if (isnan(kp[2 * p]) || isnan(kp[2 * p + 1]))
			continue;
		mgpu_heatmap_peak(maps + (size_t)p * h * w, h, w, &u, &v);
		dx = (double)u * stride - kp[2 * p];
		dy = (double)v * stride - kp[2 * p + 1];
		e = sqrt(dx * dx + dy * dy);
		m->kp_err_sum += e;
		m->kp_count++;
		m->kp_within += e <= m->pck_px;
	}
}

void mgpu_metrics_mask(struct mgpu_metrics *m, const float *logits, int C, size_t HW,
		       const int32_t *labels)
{
	size_t i;
	int c, arg;

	for (i = 0; i < HW; i++) {
		if (labels[i] < 0 || labels[i] >= MGPU_SAMPLES_MAX_CLASSES)
			continue;
		m->pix_count++;
		for (arg = 0, c = 1; c < C; c++)
			if (logits[(size_t)c * HW + i] > logits[(size_t)arg * HW + i])
				arg = c;
		if (arg == labels[i]) {
			m->inter[arg]++;
			m->uni[arg]++;
		} else {
			m->uni[arg]++;
			m->uni[labels[i]]++;
		}
	}
}

void mgpu_metrics_regression(struct mgpu_metrics *m, const float *pred, const float *target,
			     size_t n)
{
	size_t i;
	double d;

	for (i = 0; i < n; i++) {
		d = (double)pred[i] - target[i];
		m->sq_sum += d * d;
	}
	m->sq_count += n;
}

double mgpu_metrics_kp_error(const struct mgpu_metrics *m)
{
	return m->kp_count ? m->kp_err_sum / (double)m->kp_count : NAN;
}

double mgpu_metrics_pck(const struct mgpu_metrics *m)
{
	return m->kp_count ? (double)m->kp_within / (double)m->kp_count : NAN;
}

double mgpu_metrics_miou(const struct mgpu_metrics *m)
{
	double s = 0.0;
	int c, n = 0;

	for (c = 0; c < MGPU_SAMPLES_MAX_CLASSES; c++)
		if (m->uni[c]) {
			s += (double)m->inter[c] / (double)m->uni[c];
			n++;
		}
	return n ? s / n : NAN;
}

double mgpu_metrics_pixel_acc(const struct mgpu_metrics *m)
{
	uint64_t ok = 0;
	int c;

	for (c = 0; c < MGPU_SAMPLES_MAX_CLASSES; c++)
		ok += m->inter[c];
	return m->pix_count ? (double)ok / (double)m->pix_count : NAN;
}

double mgpu_metrics_rmse(const struct mgpu_metrics *m)
{
	return m->sq_count ? sqrt(m->sq_sum / (double)m->sq_count) : NAN;
}
