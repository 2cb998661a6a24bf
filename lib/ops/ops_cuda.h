/*
 * ops_cuda.h - internal to the cuda backend: the ops that live in their
 * own .cu files beside ops_cuda.cu, for its positional ops table.
 * Same semantics and argument checks as ops.h states; device pointers.
 */
#ifndef MGPU_OPS_OPS_CUDA_H
#define MGPU_OPS_OPS_CUDA_H

#include "ops/ops.h" /* struct mgpu_dev */

#ifdef __cplusplus
extern "C" {
#endif

/* attn_cuda.cu: fused causal attention, tiled, on dev's stream. */
int mgpu_cuda_attn_fwd(struct mgpu_dev *dev, float *y, float *lse, const float *q,
		       const float *k, const float *v, int BH, int T, int Dh, float scale,
		       int bf16);
int mgpu_cuda_attn_bwd(struct mgpu_dev *dev, float *dq, float *dk, float *dv, const float *q,
		       const float *k, const float *v, const float *y, const float *dy,
		       const float *lse, int BH, int T, int Dh, float scale, int bf16);

/* ops_cuda.cu: the stream every op of dev is queued on. */
void *mgpu_cuda_stream(struct mgpu_dev *dev);

#ifdef __cplusplus
}
#endif

#endif
