/*
 * cublas_dl.h - cuBLAS, loaded at run time with dlopen.
 *
 * Linking libcublas costs about 215 MB of resident memory in every process
 * at start-up (its static initialisers), even for CPU-only runs; loading it
 * on first use keeps CPU ranks small. The table holds the few entry points
 * mgpu calls, resolved by their exported names.
 */
#ifndef MGPU_OPS_CUBLAS_DL_H
#define MGPU_OPS_CUBLAS_DL_H

#include <cublas_v2.h> /* cublasHandle_t, cublasStatus_t, enums */

#ifdef __cplusplus
extern "C" {
#endif

struct mgpu_cublas {
	cublasStatus_t (*create)(cublasHandle_t *h);
	cublasStatus_t (*destroy)(cublasHandle_t h);
	cublasStatus_t (*set_stream)(cublasHandle_t h, cudaStream_t s);
	cublasStatus_t (*set_pointer_mode)(cublasHandle_t h, cublasPointerMode_t m);
	cublasStatus_t (*set_math_mode)(cublasHandle_t h, cublasMath_t m);
	cublasStatus_t (*gemm_ex)(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb,
				  int m, int n, int k, const void *alpha, const void *A,
				  cudaDataType Atype, int lda, const void *B, cudaDataType Btype,
				  int ldb, const void *beta, void *C, cudaDataType Ctype, int ldc,
				  cublasComputeType_t ct, cublasGemmAlgo_t algo);
	cublasStatus_t (*gemm_strided_ex)(cublasHandle_t h, cublasOperation_t ta,
					  cublasOperation_t tb, int m, int n, int k,
					  const void *alpha, const void *A, cudaDataType Atype,
					  int lda, long long strideA, const void *B,
					  cudaDataType Btype, int ldb, long long strideB,
					  const void *beta, void *C, cudaDataType Ctype, int ldc,
					  long long strideC, int batch, cublasComputeType_t ct,
					  cublasGemmAlgo_t algo);
	cublasStatus_t (*snrm2_64)(cublasHandle_t h, int64_t n, const float *x, int64_t incx,
				   float *result);
	cublasStatus_t (*get_property)(libraryPropertyType type, int *value);
	const char *(*status_name)(cublasStatus_t s);
	const char *(*status_string)(cublasStatus_t s);
};

/* Load libcublas once (thread-safe); MGPU_EUNSUP with dlerror's text when
 * it cannot be loaded. */
int mgpu_cublas_load(const struct mgpu_cublas **api);

#ifdef __cplusplus
}
#endif

#endif
