/*
 * cuda_kern.h - what the cuda backend's .cu files share (CUDA sources
 * only): the device state behind dev->impl, making a device current, and
 * the launch geometry of grid-stride and warp kernels.
 *
 * Invariants:
 * - struct cuda_impl is created by ops_cuda.cu's init and freed by its
 *   fini; the other files only read it (sum_acc grows `part`, conv_cuda.cu
 *   owns `conv`).
 * - Every op calls make_current(dev) before its first CUDA call and queues
 *   its work on stream_of(dev), so one thread per device (--mode dp) and
 *   one process per device both work.
 * - THREADS is a multiple of WARP: a warp never straddles two blocks' rows.
 */
#ifndef MGPU_OPS_CUDA_KERN_H
#define MGPU_OPS_CUDA_KERN_H

#include <cublas_v2.h>    /* cublasHandle_t */
#include <cuda_runtime.h> /* cudaStream_t, cudaSetDevice */
#include <stddef.h>       /* size_t */

#include "ops/cublas_dl.h"  /* struct mgpu_cublas */
#include "ops/cuda_check.h" /* CU */
#include "ops/ops.h"        /* struct mgpu_dev, enum mgpu_trans */

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

static inline struct cuda_impl *impl_of(struct mgpu_dev *dev)
{
	return (struct cuda_impl *)dev->impl;
}

static inline cudaStream_t stream_of(struct mgpu_dev *dev)
{
	return impl_of(dev)->stream;
}

/* Make dev the calling thread's current CUDA device: the runtime keeps
 * one per thread, and a rank thread of --mode dp may find another's. */
static inline int make_current(struct mgpu_dev *dev)
{
	CU(cudaSetDevice(dev->index));
	return 0;
}

#define THREADS 256
#define MAX_BLOCKS 65535u
#define WARP 32
#define FULL_MASK 0xffffffffu
static_assert(THREADS % WARP == 0, "blocks of whole warps");

/* Blocks for a grid-stride loop over n items (n > 0). */
static inline unsigned blocks_for(size_t n)
{
	size_t b = (n + THREADS - 1) / THREADS;
	return b < MAX_BLOCKS ? (unsigned)b : MAX_BLOCKS;
}

#define GRID_STRIDE(i, n)                                                         \
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n);   \
	     i += (size_t)gridDim.x * blockDim.x)

static inline __device__ unsigned lane_id(void)
{
	return threadIdx.x % WARP;
}

#endif
