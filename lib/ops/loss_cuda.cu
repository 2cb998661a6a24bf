/*
 * loss_cuda.cu - the cuda backend's losses of targets beyond a class id
 * (ops.h's mse and pix_xent): launch code over elem.h's mgpu_mse_* and
 * mgpu_pix_xent, the arithmetic ref and cpu run (loss_ref.c).
 *
 * Invariants: device pointers; every op is queued on the device's stream
 * (mgpu_cuda_stream); every launch is followed by LAUNCHED(). mse sums a
 * group's M terms in double in one block, in a fixed tree order (the same
 * bits every run); pix_xent is one thread per pixel, its C logits a
 * channel plane apart (neighbouring threads read neighbouring floats).
 */
#include <cuda_runtime.h> /* cudaStream_t, cudaSetDevice */
#include <math.h>         /* NAN */

#include "core/err.h"       /* MGPU_TRY */
#include "ops/cuda_check.h" /* CU, LAUNCHED */
#include "ops/elem.h"       /* mgpu_mse_term, mgpu_mse_grad, mgpu_pix_xent */
#include "ops/loss_host.h"  /* ops_check_mse, ops_check_pix_xent */
#include "ops/ops_cuda.h"   /* mgpu_cuda_stream */

#define THREADS 256
#define MAX_BLOCKS 65535u

static unsigned blocks_for(size_t n, size_t per)
{
	size_t b = (n + per - 1) / per;
	return b < MAX_BLOCKS ? (unsigned)b : MAX_BLOCKS;
}

static int use(struct mgpu_dev *dev)
{
	CU(cudaSetDevice(dev->index));
	return 0;
}

/* One block per (row, group): its M terms summed in double, then the
 * gradient of each element. */
static __global__ void k_mse(float *dpred, float *loss, const float *pred, const float *target,
			     const float *weight, size_t rows, int M, float inv, float grad_scale)
{
	__shared__ double sh[THREADS];

	for (size_t r = blockIdx.x; r < rows; r += gridDim.x) {
		size_t off = r * (size_t)M;
		float w = weight ? weight[r] : 1.0f;
		double s = 0.0;

		for (size_t m = threadIdx.x; m < (size_t)M; m += THREADS)
			s += mgpu_mse_term(pred[off + m], target[off + m]);
		sh[threadIdx.x] = s;
		__syncthreads();
		for (int k = THREADS / 2; k > 0; k /= 2) {
			if ((int)threadIdx.x < k)
				sh[threadIdx.x] += sh[threadIdx.x + k];
			__syncthreads();
		}
		if (threadIdx.x == 0)
			loss[r] = (float)(sh[0] * (double)w) * inv;
		__syncthreads(); /* sh[0] read before the next group writes it */
		for (size_t m = threadIdx.x; dpred && m < (size_t)M; m += THREADS)
			dpred[off + m] = mgpu_mse_grad(pred[off + m], target[off + m],
						       w * grad_scale * inv);
	}
}

extern "C" int mgpu_cuda_mse(struct mgpu_dev *dev, float *dpred, float *loss, const float *pred,
			     const float *target, const float *weight, int B, int G, int M,
			     float grad_scale)
{
	size_t rows = (size_t)B * (size_t)G;

	MGPU_TRY(ops_check_mse(B, G, M));
	if (rows == 0)
		return 0;
	MGPU_TRY(use(dev));
	k_mse<<<blocks_for(rows, 1), THREADS, 0, (cudaStream_t)mgpu_cuda_stream(dev)>>>(
		dpred, loss, pred, target, weight, rows, M, 1.0f / ((float)G * (float)M),
		grad_scale);
	LAUNCHED();
	return 0;
}

/* One thread per pixel. A label outside [-1, C) cannot be reported
 * without a round trip: its loss is NaN, so the step's loss shows it. */
static __global__ void k_pix_xent(float *dlogits, float *pix_loss, float *pix_correct,
				  const float *logits, const int32_t *labels, size_t N, int C,
				  size_t HW, float inv, float grad_scale)
{
	size_t n_pix = N * HW, plane = (size_t)C * HW;

	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n_pix;
	     i += (size_t)gridDim.x * blockDim.x) {
		size_t n = i / HW, p = i % HW;
		int32_t y = labels[i];
		float *dl = dlogits ? dlogits + n * plane + p : NULL;

		if (y < -1 || y >= C) {
			pix_loss[i] = NAN;
			pix_correct[i] = 0.0f;
			for (int c = 0; dl && c < C; c++)
				dl[(size_t)c * HW] = 0.0f;
			continue;
		}
		mgpu_pix_xent(logits + n * plane + p, HW, C, y, inv, grad_scale * inv, dl,
			      &pix_loss[i], &pix_correct[i]);
	}
}

extern "C" int mgpu_cuda_pix_xent(struct mgpu_dev *dev, float *dlogits, float *pix_loss,
				  float *pix_correct, const float *logits, const int32_t *labels,
				  int N, int C, int HW, float grad_scale)
{
	size_t n = (size_t)N * (size_t)HW;

	MGPU_TRY(ops_check_pix_xent(N, C, HW));
	if (n == 0)
		return 0;
	MGPU_TRY(use(dev));
	k_pix_xent<<<blocks_for(n, THREADS), THREADS, 0, (cudaStream_t)mgpu_cuda_stream(dev)>>>(
		dlogits, pix_loss, pix_correct, logits, labels, (size_t)N, C, (size_t)HW,
		1.0f / (float)HW, grad_scale);
	LAUNCHED();
	return 0;
}
