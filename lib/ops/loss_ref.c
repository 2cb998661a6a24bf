/*
 * loss_ref.c - the losses of targets beyond a class id on host memory
 * (ref and cpu share them): loops over elem.h's mgpu_mse_* and
 * mgpu_pix_xent, the arithmetic the cuda kernels run.
 */
#include "ops/loss_host.h"

#include <stddef.h> /* size_t */

#include "ops/elem.h" /* mgpu_mse_term, mgpu_mse_grad, mgpu_pix_xent */

int mgpu_host_mse(struct mgpu_dev *dev, float *dpred, float *loss, const float *pred,
		  const float *target, const float *weight, int B, int G, int M, float grad_scale)
{
	size_t r, m, rows = (size_t)B * (size_t)G, off;
	double s;
	float w, inv = 1.0f / ((float)G * (float)M);

	(void)dev;
	MGPU_TRY(ops_check_mse(B, G, M));
	for (r = 0; r < rows; r++) {
		off = r * (size_t)M;
		w = weight ? weight[r] : 1.0f;
		s = 0.0;
		for (m = 0; m < (size_t)M; m++)
			s += mgpu_mse_term(pred[off + m], target[off + m]);
		loss[r] = (float)(s * (double)w) * inv;
		for (m = 0; dpred && m < (size_t)M; m++)
			dpred[off + m] = mgpu_mse_grad(pred[off + m], target[off + m],
						       w * grad_scale * inv);
	}
	return 0;
}

int mgpu_host_pix_xent(struct mgpu_dev *dev, float *dlogits, float *pix_loss, float *pix_correct,
		       const float *logits, const int32_t *labels, int N, int C, int HW,
		       float grad_scale)
{
	size_t n, p, i, plane = (size_t)C * (size_t)HW;
	float inv = 1.0f / (float)HW;

	(void)dev;
	MGPU_TRY(ops_check_pix_xent(N, C, HW));
	for (i = 0; i < (size_t)N * (size_t)HW; i++)
		if (labels[i] < -1 || labels[i] >= C)
			return mgpu_err(MGPU_ERANGE, "pix_xent: label %d of pixel %zu of row %zu "
					"not in [-1, %d)", (int)labels[i], i % (size_t)HW,
					i / (size_t)HW, C);
	for (n = 0; n < (size_t)N; n++)
		for (p = 0; p < (size_t)HW; p++) {
			i = n * (size_t)HW + p;
			mgpu_pix_xent(logits + n * plane + p, (size_t)HW, C, labels[i], inv,
				      grad_scale * inv, dlogits ? dlogits + n * plane + p : NULL,
				      &pix_loss[i], &pix_correct[i]);
		}
	return 0;
}
