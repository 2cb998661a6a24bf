/*
 * loss_host.h - internal to lib/ops: the losses of targets beyond a class
 * id (ops.h's mse and pix_xent) for the backends' tables: host loops
 * (loss_ref.c, shared by ref and cpu) and cuda launches (loss_cuda.cu).
 * Same semantics and argument checks as ops.h states.
 */
#ifndef MGPU_OPS_LOSS_HOST_H
#define MGPU_OPS_LOSS_HOST_H

#include <stdint.h> /* int32_t */

#include "core/err.h" /* mgpu_err, MGPU_EINVAL */
#include "ops/ops.h"  /* struct mgpu_dev */

#ifdef __cplusplus
extern "C" {
#endif

/* The checks every backend runs before it touches memory. */
static inline int ops_check_mse(int B, int G, int M)
{
	if (B < 0 || G < 1 || M < 1)
		return mgpu_err(MGPU_EINVAL, "mse: bad shape B=%d G=%d M=%d", B, G, M);
	return 0;
}

static inline int ops_check_pix_xent(int N, int C, int HW)
{
	if (N < 0 || C < 1 || HW < 1)
		return mgpu_err(MGPU_EINVAL, "pix_xent: bad shape N=%d C=%d HW=%d", N, C, HW);
	return 0;
}

/* loss_ref.c: host memory (ref, cpu). */
int mgpu_host_mse(struct mgpu_dev *dev, float *dpred, float *loss, const float *pred,
		  const float *target, const float *weight, int B, int G, int M, float grad_scale);
int mgpu_host_pix_xent(struct mgpu_dev *dev, float *dlogits, float *pix_loss, float *pix_correct,
		       const float *logits, const int32_t *labels, int N, int C, int HW,
		       float grad_scale);

/* loss_cuda.cu: device memory, dev's stream. */
int mgpu_cuda_mse(struct mgpu_dev *dev, float *dpred, float *loss, const float *pred,
		  const float *target, const float *weight, int B, int G, int M, float grad_scale);
int mgpu_cuda_pix_xent(struct mgpu_dev *dev, float *dlogits, float *pix_loss, float *pix_correct,
		       const float *logits, const int32_t *labels, int N, int C, int HW,
		       float grad_scale);

#ifdef __cplusplus
}
#endif

#endif
