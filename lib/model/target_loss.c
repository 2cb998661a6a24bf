/*
 * target_loss.c - targets on the device, their loss and metrics
 * (target_loss.h).
 */
#include "model/target_loss.h"

#include <string.h> /* memset */

#include "core/err.h"     /* mgpu_err, MGPU_TRY */
#include "data/samples.h" /* MGPU_TARGET_* */

size_t mgpu_target_outputs(const struct mgpu_target_dev *t)
{
	switch (t->kind) {
	case MGPU_TARGET_VECTOR: return (size_t)t->K;
	case MGPU_TARGET_KEYPOINTS: return (size_t)t->P * t->h * t->w;
	case MGPU_TARGET_MASK: return (size_t)t->classes * t->h * t->w;
	}
	return 0;
}

static int dalloc(struct mgpu_target_dev *t, struct mgpu_dev *dev, void **p, size_t nbytes)
{
	MGPU_TRY(mgpu_dev_alloc(dev, p, nbytes ? nbytes : 4));
	t->nbytes += nbytes ? nbytes : 4;
	return 0;
}

int mgpu_target_dev_alloc(struct mgpu_target_dev *t, struct mgpu_dev *dev, int kind, int K,
			  int P, int h, int w, int classes, int max_batch)
{
	size_t B = (size_t)max_batch, hw = (size_t)h * (size_t)w, groups;
	int rc = 0;

	memset(t, 0, sizeof *t);
	if (kind == MGPU_TARGET_NONE)
		return 0;
	if (max_batch < 1 || (kind == MGPU_TARGET_VECTOR && K < 1) ||
	    (kind == MGPU_TARGET_KEYPOINTS && (P < 1 || hw < 1)) ||
	    (kind == MGPU_TARGET_MASK && (classes < 1 || hw < 1)) || kind > MGPU_TARGET_KEYPOINTS)
		return mgpu_err(MGPU_EINVAL, "targets: bad kind %d or sizes K=%d P=%d %dx%d "
				"classes %d", kind, K, P, h, w, classes);
	t->kind = kind;
	t->K = K, t->P = P, t->h = h, t->w = w, t->classes = classes;
	t->max_batch = max_batch;
	groups = kind == MGPU_TARGET_VECTOR ? 1 : kind == MGPU_TARGET_KEYPOINTS ? (size_t)P : hw;
	if (kind == MGPU_TARGET_MASK) {
		MGPU_CHECK(dalloc(t, dev, (void **)&t->mask, B * hw * sizeof(int32_t)));
		MGPU_CHECK(dalloc(t, dev, (void **)&t->correct, B * hw * sizeof(float)));
	} else {
		MGPU_CHECK(dalloc(t, dev, (void **)&t->vals, B * mgpu_target_outputs(t) *
				  sizeof(float)));
	}
	if (kind == MGPU_TARGET_KEYPOINTS)
		MGPU_CHECK(dalloc(t, dev, (void **)&t->weight, B * (size_t)P * sizeof(float)));
	MGPU_CHECK(dalloc(t, dev, (void **)&t->loss, B * groups * sizeof(float)));
	return 0;
out:
	mgpu_target_dev_free(t, dev);
	return rc;
}

void mgpu_target_dev_free(struct mgpu_target_dev *t, struct mgpu_dev *dev)
{
	size_t B = (size_t)t->max_batch, hw = (size_t)t->h * (size_t)t->w;
	size_t groups = t->kind == MGPU_TARGET_VECTOR ? 1 :
			t->kind == MGPU_TARGET_KEYPOINTS ? (size_t)t->P : hw;

	if (t->vals)
		mgpu_dev_free(dev, t->vals, B * mgpu_target_outputs(t) * sizeof(float));
	if (t->weight)
		mgpu_dev_free(dev, t->weight, B * (size_t)t->P * sizeof(float));
	if (t->mask)
		mgpu_dev_free(dev, t->mask, B * hw * sizeof(int32_t));
	if (t->correct)
		mgpu_dev_free(dev, t->correct, B * hw * sizeof(float));
	if (t->loss)
		mgpu_dev_free(dev, t->loss, B * groups * sizeof(float));
	memset(t, 0, sizeof *t);
}

int mgpu_target_dev_load(struct mgpu_target_dev *t, struct mgpu_dev *dev,
			 const struct mgpu_target_batch *tb, int B)
{
	size_t b = (size_t)B;

	if (tb->kind != t->kind || B > t->max_batch ||
	    (t->kind == MGPU_TARGET_VECTOR && tb->K != t->K) ||
	    (t->kind == MGPU_TARGET_KEYPOINTS && (tb->P != t->P || tb->h != t->h ||
						  tb->w != t->w)) ||
	    (t->kind == MGPU_TARGET_MASK && (tb->h != t->h || tb->w != t->w)))
		return mgpu_err(MGPU_EINVAL, "targets: a batch of kind %d and sizes K=%d P=%d "
				"%dx%d for a model of kind %d, K=%d P=%d %dx%d", tb->kind, tb->K,
				tb->P, tb->h, tb->w, t->kind, t->K, t->P, t->h, t->w);
	switch (t->kind) {
	case MGPU_TARGET_VECTOR:
		return mgpu_dev_from_host(dev, t->vals, tb->vec, b * (size_t)t->K * sizeof(float));
	case MGPU_TARGET_KEYPOINTS:
		MGPU_TRY(mgpu_dev_from_host(dev, t->vals, tb->maps,
					    b * mgpu_target_outputs(t) * sizeof(float)));
		return mgpu_dev_from_host(dev, t->weight, tb->weight, b * (size_t)t->P *
					  sizeof(float));
	case MGPU_TARGET_MASK:
		return mgpu_dev_from_host(dev, t->mask, tb->mask, b * (size_t)t->h * t->w *
					  sizeof(int32_t));
	}
	return 0;
}

int mgpu_target_loss_acc(struct mgpu_target_dev *t, struct mgpu_dev *dev, const float *out,
			 float *dout, int B, float grad_scale, double *acc)
{
	const struct mgpu_ops *o = dev->ops;
	size_t hw = (size_t)t->h * (size_t)t->w;

	switch (t->kind) {
	case MGPU_TARGET_VECTOR:
		MGPU_TRY(o->mse(dev, dout, t->loss, out, t->vals, NULL, B, 1, t->K, grad_scale));
		return o->sum_acc(dev, acc, t->loss, (size_t)B, 0, 1.0);
	case MGPU_TARGET_KEYPOINTS:
		MGPU_TRY(o->mse(dev, dout, t->loss, out, t->vals, t->weight, B, t->P,
				t->h * t->w, grad_scale));
		return o->sum_acc(dev, acc, t->loss, (size_t)B * t->P, 0, 1.0);
	case MGPU_TARGET_MASK:
		MGPU_TRY(o->pix_xent(dev, dout, t->loss, t->correct, out, t->mask, B, t->classes,
				     (int)hw, grad_scale));
		MGPU_TRY(o->sum_acc(dev, acc, t->loss, (size_t)B * hw, 0, 1.0));
		/* each row's pixel accuracy: its correct pixels / HW */
		return o->sum_acc(dev, acc + 1, t->correct, (size_t)B * hw, 0, 1.0 / (double)hw);
	}
	return mgpu_err(MGPU_EINVAL, "targets: no target to take a loss of");
}

void mgpu_target_metrics_add(struct mgpu_metrics *m, const struct mgpu_target_dev *t,
			     const float *out, const struct mgpu_target_batch *tb, int B,
			     int stride)
{
	size_t per = mgpu_target_outputs(t), hw = (size_t)t->h * (size_t)t->w;
	int i;

	for (i = 0; i < B; i++) {
		const float *y = out + (size_t)i * per;

		if (t->kind == MGPU_TARGET_VECTOR)
			mgpu_metrics_regression(m, y, tb->vec + (size_t)i * t->K, (size_t)t->K);
		else if (t->kind == MGPU_TARGET_KEYPOINTS)
			mgpu_metrics_keypoints(m, y, t->P, t->h, t->w, stride,
					       tb->kp + (size_t)i * t->P * 2);
		else if (t->kind == MGPU_TARGET_MASK)
			mgpu_metrics_mask(m, y, t->classes, hw, tb->mask + (size_t)i * hw);
	}
}
