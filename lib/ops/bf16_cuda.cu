/*
 * bf16_cuda.cu - the cuda backend's 16-bit ops: the bf16 and fp16
 * conversions and gemm_bf16 / gemm_f16 (ops.h), cuBLAS with CUDA_R_16BF
 * or CUDA_R_16F inputs, fp32 C and fp32 accumulation.
 */
#include <cublas_v2.h>    /* cublasGemmEx, cublasGemmStridedBatchedEx */
#include <cuda_runtime.h> /* kernel launches */
#include <stdint.h>       /* uint16_t */

#include "core/err.h"       /* MGPU_TRY */
#include "ops/cuda_check.h" /* CUBLAS, LAUNCHED */
#include "ops/cuda_kern.h"  /* impl_of, make_current, GRID_STRIDE, mgpu_cuda_gemm_trivial */
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

/* 16-bit A and B of type t (CUDA_R_16BF or CUDA_R_16F), fp32 C and
 * accumulation (CUBLAS_COMPUTE_32F): tensor cores on every GPU mgpu builds
 * for. One product goes to cublasGemmEx, a batch to
 * cublasGemmStridedBatchedEx; k == 0 or alpha == 0 only scales C. */
static int gemm16(struct mgpu_dev *dev, cudaDataType_t t, enum mgpu_trans ta,
		  enum mgpu_trans tb, int m, int n, int k, float alpha, const uint16_t *A,
		  int lda, long long sa, const uint16_t *Bm, int ldb, long long sb, float beta,
		  float *C, int ldc, long long sc, int batch)
{
	struct cuda_impl *im = impl_of(dev);
	const struct mgpu_cublas *cb = im->cb;
	cublasOperation_t oa = ta == MGPU_T ? CUBLAS_OP_T : CUBLAS_OP_N;
	cublasOperation_t ob = tb == MGPU_T ? CUBLAS_OP_T : CUBLAS_OP_N;
	int rc = mgpu_cuda_gemm_trivial(dev, ta, tb, m, n, k, alpha, lda, sa, ldb, sb, beta, C,
					ldc, sc, batch);

	if (rc != 0)
		return rc < 0 ? rc : 0;
	if (batch == 1) {
		CUBLAS(cb->gemm_ex(im->blas, oa, ob, m, n, k, &alpha, A, t, lda, Bm, t, ldb, &beta,
				    C, CUDA_R_32F, ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
		return 0;
	}
	CUBLAS(cb->gemm_strided_ex(im->blas, oa, ob, m, n, k, &alpha, A, t, lda, sa, Bm, t, ldb,
				    sb, &beta, C, CUDA_R_32F, ldc, sc, batch, CUBLAS_COMPUTE_32F,
				    CUBLAS_GEMM_DEFAULT));
	return 0;
}

extern "C" int mgpu_cuda_gemm_bf16(struct mgpu_dev *dev, enum mgpu_trans ta, enum mgpu_trans tb,
				   int m, int n, int k, float alpha, const uint16_t *A, int lda,
				   long long sa, const uint16_t *Bm, int ldb, long long sb,
				   float beta, float *C, int ldc, long long sc, int batch)
{
	return gemm16(dev, CUDA_R_16BF, ta, tb, m, n, k, alpha, A, lda, sa, Bm, ldb, sb, beta, C,
		      ldc, sc, batch);
}

extern "C" int mgpu_cuda_gemm_f16(struct mgpu_dev *dev, enum mgpu_trans ta, enum mgpu_trans tb,
				  int m, int n, int k, float alpha, const uint16_t *A, int lda,
				  long long sa, const uint16_t *Bm, int ldb, long long sb,
				  float beta, float *C, int ldc, long long sc, int batch)
{
	return gemm16(dev, CUDA_R_16F, ta, tb, m, n, k, alpha, A, lda, sa, Bm, ldb, sb, beta, C,
		      ldc, sc, batch);
}
