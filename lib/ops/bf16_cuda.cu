/*
 * bf16_cuda.cu - the cuda backend's 16-bit conversions (f32_to_bf16,
 * bf16_to_f32, f32_to_f16 of ops.h): elem.h's rounding, a thread an
 * element. The 16-bit products are gemm's (ops_cuda.cu).
 */
#include <cuda_runtime.h> /* kernel launches */
#include <stdint.h>       /* uint16_t */

#include "core/err.h"       /* MGPU_TRY */
#include "ops/cuda_check.h" /* LAUNCHED */
#include "ops/cuda_kern.h"  /* make_current, stream_of, GRID_STRIDE */
#include "ops/elem.h"       /* mgpu_bf16_from_f32, mgpu_bf16_to_f32, mgpu_f16_from_f32 */
#include "ops/ops_cuda.h"   /* the prototypes */

static __global__ void k_f32_to_bf16(uint16_t *Y, const float *X, size_t n)
{
	GRID_STRIDE(t, n)
		Y[t] = mgpu_bf16_from_f32(X[t]);
}

extern "C" int mgpu_cuda_f32_to_bf16(struct mgpu_dev *dev, uint16_t *Y, const float *X, size_t n)
{
	if (n == 0)
		return 0;
	MGPU_TRY(make_current(dev));
	k_f32_to_bf16<<<blocks_for(n), THREADS, 0, stream_of(dev)>>>(Y, X, n);
	LAUNCHED();
	return 0;
}

static __global__ void k_bf16_to_f32(float *Y, const uint16_t *X, size_t n)
{
	GRID_STRIDE(t, n)
		Y[t] = mgpu_bf16_to_f32(X[t]);
}

extern "C" int mgpu_cuda_bf16_to_f32(struct mgpu_dev *dev, float *Y, const uint16_t *X, size_t n)
{
	if (n == 0)
		return 0;
	MGPU_TRY(make_current(dev));
	k_bf16_to_f32<<<blocks_for(n), THREADS, 0, stream_of(dev)>>>(Y, X, n);
	LAUNCHED();
	return 0;
}

static __global__ void k_f32_to_f16(uint16_t *Y, const float *X, size_t n)
{
	GRID_STRIDE(t, n)
		Y[t] = mgpu_f16_from_f32(X[t]);
}

extern "C" int mgpu_cuda_f32_to_f16(struct mgpu_dev *dev, uint16_t *Y, const float *X, size_t n)
{
	if (n == 0)
		return 0;
	MGPU_TRY(make_current(dev));
	k_f32_to_f16<<<blocks_for(n), THREADS, 0, stream_of(dev)>>>(Y, X, n);
	LAUNCHED();
	return 0;
}
