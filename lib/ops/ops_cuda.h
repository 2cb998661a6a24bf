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

/* attn_wmma.cu: the bf16 attention on tensor cores. mgpu_cuda_attn_tc
 * says whether dev runs it at head dimension Dh (compute capability 8.0
 * or newer, the binary's code for it built for sm_80 or newer, enough
 * shared memory; bwd: the backward's kernels); the
 * launchers take attn_cuda.cu's grid (ntiles tiles of
 * MGPU_CUDA_ATTN_TC_ROWS rows per block of BH, blocks in all) and its
 * checked arguments. */
#define MGPU_CUDA_ATTN_TC_ROWS 64
int mgpu_cuda_attn_tc(struct mgpu_dev *dev, int Dh, int bwd);
int mgpu_cuda_attn_fwd_tc(struct mgpu_dev *dev, float *y, float *lse, const float *q,
			  const float *k, const float *v, int T, int Dh, float scale, int ntiles,
			  unsigned blocks);
int mgpu_cuda_attn_bwd_tc(struct mgpu_dev *dev, float *dq, float *dk, float *dv, const float *q,
			  const float *k, const float *v, const float *y, const float *dy,
			  const float *lse, int T, int Dh, float scale, int ntiles, unsigned blocks);

/* ops_cuda.cu: the stream every op of dev is queued on; the device's
 * compute capability (10 major + minor) and the shared memory a block may
 * opt in to, both asked once when dev opens. */
void *mgpu_cuda_stream(struct mgpu_dev *dev);
int mgpu_cuda_cc(struct mgpu_dev *dev);
int mgpu_cuda_smem_optin(struct mgpu_dev *dev);

#ifdef __cplusplus
}
#endif

#endif
