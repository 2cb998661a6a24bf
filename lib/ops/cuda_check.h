/*
 * cuda_check.h - status checks of CUDA runtime, cuBLAS and NCCL calls, for
 * the CUDA sources (ops_cuda.cu, comm_nccl.cu) only.
 *
 * Each macro returns from the enclosing int function with MGPU_EDEVICE and
 * a message holding the expression, file:line, the status name and text
 * (and for NCCL, ncclGetLastError's detail).
 */
#ifndef MGPU_OPS_CUDA_CHECK_H
#define MGPU_OPS_CUDA_CHECK_H

#include <cuda_runtime.h> /* cudaError_t, cudaGetErrorName */

#include "core/err.h" /* mgpu_err */

#define CU(expr)                                                                       \
	do {                                                                           \
		cudaError_t cu_rc_ = (expr);                                           \
		if (cu_rc_ != cudaSuccess)                                             \
			return mgpu_err(MGPU_EDEVICE, "%s at %s:%d: %s: %s", #expr,    \
					__FILE__, __LINE__, cudaGetErrorName(cu_rc_), \
					cudaGetErrorString(cu_rc_));                   \
	} while (0)

/* cuBLAS is called through the table of cublas_dl.h, `cb` in scope. */
#define CUBLAS(expr)                                                                   \
	do {                                                                           \
		cublasStatus_t cb_rc_ = (expr);                                        \
		if (cb_rc_ != CUBLAS_STATUS_SUCCESS)                                   \
			return mgpu_err(MGPU_EDEVICE, "%s at %s:%d: %s: %s", #expr,    \
					__FILE__, __LINE__, cb->status_name(cb_rc_),   \
					cb->status_string(cb_rc_));                    \
	} while (0)

/* ncclInProgress is not a failure: non-blocking communicators return it. */
#define NCCL(comm, expr)                                                               \
	do {                                                                           \
		ncclResult_t nc_rc_ = (expr);                                          \
		if (nc_rc_ != ncclSuccess && nc_rc_ != ncclInProgress)                 \
			return mgpu_err(MGPU_EDEVICE, "%s at %s:%d: %s (%s)", #expr,   \
					__FILE__, __LINE__, ncclGetErrorString(nc_rc_), \
					ncclGetLastError(comm));                       \
	} while (0)

/* After every <<<...>>>: launch-configuration errors surface here. */
#define LAUNCHED() CU(cudaGetLastError())

#endif
