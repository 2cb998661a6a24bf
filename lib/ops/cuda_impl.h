/*
 * cuda_impl.h - a cuda device's state (dev->impl of the cuda backend) for
 * the backend's .cu files: ops_cuda.cu opens, fills and closes it; the ops
 * in attn_cuda.cu, attn_wmma.cu and conv_cuda.cu read it here, inline, so
 * that they and ops_cuda.cu, whose table names their ops, do not call each
 * other. CUDA C++ only.
 */
#ifndef MGPU_OPS_CUDA_IMPL_H
#define MGPU_OPS_CUDA_IMPL_H

#include <cublas_v2.h>    /* cublasHandle_t */
#include <cuda_runtime.h> /* cudaStream_t */

#include "ops/cublas_dl.h" /* struct mgpu_cublas */
#include "ops/ops.h"       /* struct mgpu_dev */

struct cuda_impl {
	cudaStream_t stream;
	cublasHandle_t blas;
	const struct mgpu_cublas *cb; /* cuBLAS entry points (cublas_dl.h) */
	double *part;                 /* sum_acc's chunk totals (device), or NULL */
	size_t part_n;                /* their room */
	int cc;                       /* compute capability, 10 major + minor */
	int smem_optin;               /* shared memory bytes a block may opt in to */
	void *conv;                   /* conv_cuda.cu's cuDNN state, or NULL */
};

/* The stream every op of dev is queued on (lib/gpu and lib/comm ask
 * ops_cuda.cu's mgpu_cuda_stream); NULL when dev is not open. */
static inline cudaStream_t mgpu_cuda_stream_of(struct mgpu_dev *dev)
{
	return dev->impl ? ((struct cuda_impl *)dev->impl)->stream : NULL;
}

/* The device's compute capability (10 major + minor) and the shared memory
 * a block may opt in to, both asked once when dev opens; 0 when it is not
 * open. */
static inline int mgpu_cuda_cc(struct mgpu_dev *dev)
{
	return dev->impl ? ((struct cuda_impl *)dev->impl)->cc : 0;
}

static inline int mgpu_cuda_smem_optin(struct mgpu_dev *dev)
{
	return dev->impl ? ((struct cuda_impl *)dev->impl)->smem_optin : 0;
}

/* Where conv_cuda.cu keeps dev's cuDNN state (NULL until the first
 * conv-net op); it frees it when dev closes (mgpu_cuda_conv_release). */
static inline void **mgpu_cuda_conv_slot(struct mgpu_dev *dev)
{
	return &((struct cuda_impl *)dev->impl)->conv;
}

#endif
