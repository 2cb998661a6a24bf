/*
 * ops_cuda.cu - the "cuda" backend: its table, devices and memory, the
 * GEMM on cuBLAS, nrm2, the element and optimizer kernels and
 * the deterministic sums. Compiled only in builds with CUDA. The rest
 * lives beside it, as the cpu backend's does: rows_cuda.cu (row and column
 * ops), gpt_cuda.cu (embedding, heads), bf16_cuda.cu (16-bit
 * conversions), attn_cuda.cu and attn_wmma.cu (fused attention),
 * conv_cuda.cu (conv nets); cuda_kern.h holds what they share.
 *
 * Provides mgpu_ops_cuda (C linkage). Launch code only: the arithmetic is
 * elem.h's, shared with the CPU loops, so the CPU tests check it.
 *
 * Invariants:
 * - Pointers given to ops are device pointers (host_memory = 0), except
 *   *_host arguments and to_dev's source / to_host's destination.
 * - One stream and one cuBLAS handle per struct mgpu_dev (dev->impl); every
 *   op is queued on that stream in call order; to_host and sync wait for it,
 *   nrm2 returns its host result after completion (host pointer mode).
 * - Every op first makes dev->index the calling thread's current device
 *   (make_current), so one thread per device (--mode dp) and one process
 *   per device both work.
 * - Every CUDA runtime / cuBLAS call goes through CU() / CUBLAS(), which
 *   record expression, file:line, status name and text; every kernel launch
 *   is followed by LAUNCHED() (cudaGetLastError).
 * - gemm accumulates in fp32 (CUBLAS_COMPUTE_32F: no TF32) over fp32,
 *   CUDA_R_16BF or CUDA_R_16F inputs, with the same column-major arguments
 *   the CPU backend gives cblas_sgemm.
 * - sum_acc keeps one buffer of chunk totals per device (impl->part),
 *   grown on demand; its sums are elem.h's order, so they match ref bit
 *   for bit.
 * - xent cannot check labels without a round trip: a row whose label is
 *   outside [0, C) gets loss NaN, correct 0 and zero gradient.
 */
#include <cublas_v2.h>    /* cublasGemmEx, cublasGemmStridedBatchedEx, cublasSnrm2_64 */
#include <cuda_runtime.h> /* cudaMalloc, cudaMemcpyAsync, streams */
#include <math.h>         /* NAN */
#include <stdio.h>        /* snprintf */
#include <stdlib.h>       /* calloc, free */

#include "core/err.h"       /* mgpu_err, MGPU_EDEVICE (C linkage: extern "C" inside) */
#include "ops/ops.h"         /* struct mgpu_ops, struct mgpu_dev (C linkage) */
#include "ops/elem.h"        /* the per-element math, __host__ __device__ here */
#include "ops/loops.h"       /* ops_check_* */
#include "ops/cublas_dl.h"   /* struct mgpu_cublas: cuBLAS loaded on first use */
#include "ops/cuda_check.h"  /* CU, CUBLAS, LAUNCHED */
#include "ops/cuda_kern.h"   /* struct cuda_impl, make_current, GRID_STRIDE */
#include "ops/ops_cuda.h"    /* the ops of the other .cu files */

/* ---- devices, memory ---------------------------------------------------- */

/* No driver, an old driver or no GPU is *n = 0 with the reason, not an error. */
static int cuda_device_count(int *n, char *why, size_t whylen)
{
	cudaError_t rc = cudaGetDeviceCount(n);

	if (whylen)
		why[0] = '\0';
	if (rc != cudaSuccess) {
		*n = 0;
		if (whylen)
			snprintf(why, whylen, "no usable CUDA device: %s (%s)",
				 cudaGetErrorString(rc), cudaGetErrorName(rc));
		(void)cudaGetLastError(); /* leave no error behind for later calls */
		return 0;
	}
	if (*n == 0 && whylen)
		snprintf(why, whylen, "no CUDA device found");
	return 0;
}

/* What kernels choose by, asked once: launches must not query it. */
static int query_caps(struct mgpu_dev *dev, struct cuda_impl *im)
{
	int major = 0, minor = 0;

	CU(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev->index));
	CU(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev->index));
	CU(cudaDeviceGetAttribute(&im->smem_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin,
				  dev->index));
	im->cc = 10 * major + minor;
	return 0;
}

static int cuda_open(struct mgpu_dev *dev, struct cuda_impl *im)
{
	const struct mgpu_cublas *cb;

	MGPU_TRY(mgpu_cublas_load(&cb));
	im->cb = cb;
	CU(cudaSetDevice(dev->index));
	CU(cudaStreamCreateWithFlags(&im->stream, cudaStreamNonBlocking));
	CUBLAS(cb->create(&im->blas));
	CUBLAS(cb->set_stream(im->blas, im->stream));
	CUBLAS(cb->set_pointer_mode(im->blas, CUBLAS_POINTER_MODE_HOST));
	CUBLAS(cb->set_math_mode(im->blas, CUBLAS_DEFAULT_MATH)); /* no TF32 */
	MGPU_TRY(query_caps(dev, im));
	return 0;
}

static void cuda_fini(struct mgpu_dev *dev)
{
	struct cuda_impl *im = impl_of(dev);

	if (!im)
		return;
	mgpu_cuda_conv_release(dev);
	mgpu_cuda_attn_gemm_release(dev);
	/* fini cannot fail: errors are ignored, as close() ignores them */
	(void)cudaSetDevice(dev->index);
	if (im->part)
		(void)cudaFree(im->part);
	if (im->blas)
		(void)im->cb->destroy(im->blas);
	if (im->stream)
		(void)cudaStreamDestroy(im->stream);
	(void)cudaGetLastError();
	free(im);
	dev->impl = NULL;
}

static int cuda_init(struct mgpu_dev *dev, int index)
{
	struct cuda_impl *im;
	int n = 0, rc;
	char why[256];

	MGPU_TRY(cuda_device_count(&n, why, sizeof why));
	if (index < 0 || index >= n)
		return mgpu_err(MGPU_EINVAL, "cuda device %d does not exist (%d found%s%s)",
				index, n, why[0] ? ": " : "", why);
	im = (struct cuda_impl *)calloc(1, sizeof *im);
	if (!im)
		return mgpu_err(MGPU_ENOMEM, "out of host memory");
	dev->impl = im;
	rc = cuda_open(dev, im);
	if (rc < 0)
		cuda_fini(dev);
	return rc;
}

static int cuda_alloc(struct mgpu_dev *dev, void **p, size_t nbytes)
{
	cudaError_t rc;

	*p = NULL;
	MGPU_TRY(make_current(dev));
	rc = cudaMalloc(p, nbytes ? nbytes : 1);
	if (rc == cudaErrorMemoryAllocation) {
		(void)cudaGetLastError();
		*p = NULL;
		return mgpu_err(MGPU_ENOMEM, "cuda device %d: out of memory allocating %zu bytes",
				dev->index, nbytes);
	}
	CU(rc);
	return 0;
}

static void cuda_release(struct mgpu_dev *dev, void *p)
{
	if (make_current(dev) == 0 && cudaFree(p) != cudaSuccess)
		(void)cudaGetLastError(); /* release cannot fail; keep it from later checks */
}

/* Pageable sources are staged before cudaMemcpyAsync returns: src_host may
 * be reused at once. */
static int cuda_to_dev(struct mgpu_dev *dev, void *dst, const void *src_host, size_t nbytes)
{
	MGPU_TRY(make_current(dev));
	CU(cudaMemcpyAsync(dst, src_host, nbytes, cudaMemcpyHostToDevice, stream_of(dev)));
	return 0;
}

/* Synchronous: dst_host holds the result on return. */
static int cuda_to_host(struct mgpu_dev *dev, void *dst_host, const void *src, size_t nbytes)
{
	MGPU_TRY(make_current(dev));
	CU(cudaMemcpyAsync(dst_host, src, nbytes, cudaMemcpyDeviceToHost, stream_of(dev)));
	CU(cudaStreamSynchronize(stream_of(dev)));
	return 0;
}

static int cuda_zero(struct mgpu_dev *dev, void *p, size_t nbytes)
{
	MGPU_TRY(make_current(dev));
	CU(cudaMemsetAsync(p, 0, nbytes, stream_of(dev)));
	return 0;
}

static int cuda_sync(struct mgpu_dev *dev)
{
	MGPU_TRY(make_current(dev));
	CU(cudaStreamSynchronize(stream_of(dev)));
	return 0;
}

/* ---- BLAS --------------------------------------------------------------- */

/* Host pointer mode: cuBLAS returns after the result is in *out_host. */
static int cuda_nrm2(struct mgpu_dev *dev, size_t n, const float *x, float *out_host)
{
	const struct mgpu_cublas *cb = impl_of(dev)->cb;

	*out_host = 0.0f;
	if (n == 0)
		return 0;
	MGPU_TRY(make_current(dev));
	CUBLAS(cb->snrm2_64(impl_of(dev)->blas, (int64_t)n, x, 1, out_host));
	return 0;
}

/* C_i = beta * C_i for each of `batch` m x n matrices strideC apart, beta
 * == 0 writing zeros: gemm's k == 0 or alpha == 0 case, done here so A and
 * B are never read. */
static __global__ void k_scale_c_strided(float *C, int m, int n, int ldc, long long sc,
					 int batch, float beta)
{
	size_t mn = (size_t)m * n;

	GRID_STRIDE(t, mn * (size_t)batch) {
		size_t i = t / mn, e = t % mn;
		float *c = &C[(size_t)i * sc + e % m + (e / m) * (size_t)ldc];
		*c = beta == 0.0f ? 0.0f : beta * *c;
	}
}

/* What gemm does before cuBLAS: the argument checks and the products that
 * need no multiply (nothing to write; k == 0 or alpha == 0: C = beta * C,
 * queued here). 1 when that settled the call, 0 when cuBLAS must run (dev
 * is then current), < 0 on an error. */
static int gemm_trivial(struct mgpu_dev *dev, enum mgpu_prec prec, enum mgpu_trans ta,
			enum mgpu_trans tb, int m, int n, int k, float alpha, int lda, long long sa,
			int ldb, long long sb, float beta, float *C, int ldc, long long sc,
			int batch)
{
	MGPU_TRY(ops_check_gemm(prec, ta, tb, m, n, k, lda, ldb, ldc, sa, sb, sc, batch));
	if (m == 0 || n == 0 || batch == 0)
		return 1;
	MGPU_TRY(make_current(dev));
	if (k != 0 && alpha != 0.0f)
		return 0;
	if (beta != 1.0f) {
		k_scale_c_strided<<<blocks_for((size_t)m * n * batch), THREADS, 0,
				    stream_of(dev)>>>(C, m, n, ldc, sc, batch, beta);
		LAUNCHED();
	}
	return 1;
}

/* cublasGemmEx's element type of prec. */
static cudaDataType_t cuda_type(enum mgpu_prec prec)
{
	return prec == MGPU_PREC_BF16 ? CUDA_R_16BF : prec == MGPU_PREC_FP16 ? CUDA_R_16F
									   : CUDA_R_32F;
}

/* One product goes to cublasGemmEx, a batch to cublasGemmStridedBatchedEx;
 * an fp32 product with strides given keeps the batched call even alone
 * (the im2col convolution's one group), as it always had: cuBLAS may pick
 * other kernels, and so other sums, for the two calls. */
static int cuda_gemm(struct mgpu_dev *dev, enum mgpu_prec prec, enum mgpu_trans ta,
		     enum mgpu_trans tb, int m, int n, int k, float alpha, const void *A, int lda,
		     long long sa, const void *Bm, int ldb, long long sb, float beta, float *C,
		     int ldc, long long sc, int batch)
{
	struct cuda_impl *im = impl_of(dev);
	const struct mgpu_cublas *cb = im->cb;
	cublasOperation_t oa = ta == MGPU_T ? CUBLAS_OP_T : CUBLAS_OP_N;
	cublasOperation_t ob = tb == MGPU_T ? CUBLAS_OP_T : CUBLAS_OP_N;
	cudaDataType_t t = cuda_type(prec);
	int rc = gemm_trivial(dev, prec, ta, tb, m, n, k, alpha, lda, sa, ldb, sb, beta, C, ldc,
			      sc, batch);

	if (rc != 0)
		return rc < 0 ? rc : 0;
	if (batch == 1 && (prec != MGPU_PREC_FP32 || (sa == 0 && sb == 0 && sc == 0))) {
		CUBLAS(cb->gemm_ex(im->blas, oa, ob, m, n, k, &alpha, A, t, lda, Bm, t, ldb, &beta,
				    C, CUDA_R_32F, ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
		return 0;
	}
	CUBLAS(cb->gemm_strided_ex(im->blas, oa, ob, m, n, k, &alpha, A, t, lda, sa, Bm, t, ldb,
				    sb, &beta, C, CUDA_R_32F, ldc, sc, batch, CUBLAS_COMPUTE_32F,
				    CUBLAS_GEMM_DEFAULT));
	return 0;
}

/* ---- element kernels: one thread per element ------------------------------ */

static __global__ void k_bias_act(int act, float *Y, float *Z, const float *b, size_t n, int D)
{
	GRID_STRIDE(t, n) {
		float z = Z[t] + b[t % D];
		Z[t] = z;
		Y[t] = mgpu_act_f(act, z);
	}
}

static int cuda_bias_act(struct mgpu_dev *dev, enum mgpu_act act, float *Y, float *Z,
			 const float *b, int B, int D)
{
	size_t n = (size_t)B * D;

	MGPU_TRY(ops_check_rows("bias_act", B, D));
	MGPU_TRY(ops_check_act("bias_act", act));
	if (n == 0)
		return 0;
	MGPU_TRY(make_current(dev));
	k_bias_act<<<blocks_for(n), THREADS, 0, stream_of(dev)>>>((int)act, Y, Z, b, n, D);
	LAUNCHED();
	return 0;
}

static __global__ void k_act_bwd(int act, float *dZ, const float *dY, const float *Z, size_t n)
{
	GRID_STRIDE(t, n)
		dZ[t] = dY[t] * mgpu_act_df(act, Z[t]);
}

static int cuda_act_bwd(struct mgpu_dev *dev, enum mgpu_act act, float *dZ, const float *dY,
			const float *Z, size_t n)
{
	MGPU_TRY(ops_check_act("act_bwd", act));
	if (n == 0)
		return 0;
	MGPU_TRY(make_current(dev));
	k_act_bwd<<<blocks_for(n), THREADS, 0, stream_of(dev)>>>((int)act, dZ, dY, Z, n);
	LAUNCHED();
	return 0;
}

static __global__ void k_dropout(float *Y, const float *X, size_t n, float p, uint64_t seed,
			  uint64_t offset)
{
	GRID_STRIDE(t, n)
		Y[t] = X[t] * mgpu_dropout_factor(seed, offset + t, p);
}

static int cuda_dropout(struct mgpu_dev *dev, float *Y, const float *X, size_t n, float p,
			uint64_t seed, uint64_t offset)
{
	MGPU_TRY(ops_check_dropout(p));
	if (n == 0)
		return 0;
	MGPU_TRY(make_current(dev));
	k_dropout<<<blocks_for(n), THREADS, 0, stream_of(dev)>>>(Y, X, n, p, seed, offset);
	LAUNCHED();
	return 0;
}

static __global__ void k_u8_to_f32(float *Y, const uint8_t *X, size_t n, float scale, float shift)
{
	GRID_STRIDE(t, n)
		Y[t] = (float)X[t] * scale + shift;
}

static int cuda_u8_to_f32(struct mgpu_dev *dev, float *Y, const uint8_t *X, size_t n,
			  float scale, float shift)
{
	if (n == 0)
		return 0;
	MGPU_TRY(make_current(dev));
	k_u8_to_f32<<<blocks_for(n), THREADS, 0, stream_of(dev)>>>(Y, X, n, scale, shift);
	LAUNCHED();
	return 0;
}

/* hp by value: kernel arguments live in constant memory. */
static __global__ void k_sgd(float *w, const float *g, float *mom, size_t n, struct mgpu_sgd_hp hp)
{
	GRID_STRIDE(t, n) {
		float unused = 0.0f;
		mgpu_sgd_elem(&w[t], g[t], mom ? &mom[t] : &unused, &hp);
	}
}

static int cuda_sgd(struct mgpu_dev *dev, float *w, const float *g, float *mom, size_t n,
		    const struct mgpu_sgd_hp *hp)
{
	MGPU_TRY(ops_check_sgd(n, mom, hp));
	if (n == 0)
		return 0;
	MGPU_TRY(make_current(dev));
	k_sgd<<<blocks_for(n), THREADS, 0, stream_of(dev)>>>(w, g, mom, n, *hp);
	LAUNCHED();
	return 0;
}

static __global__ void k_adamw(float *w, const float *g, float *m, float *v, size_t n,
			struct mgpu_adamw_hp hp)
{
	GRID_STRIDE(t, n)
		mgpu_adamw_elem(&w[t], g[t], &m[t], &v[t], &hp);
}

static int cuda_adamw(struct mgpu_dev *dev, float *w, const float *g, float *m, float *v,
		      size_t n, const struct mgpu_adamw_hp *hp)
{
	if (n == 0)
		return 0;
	MGPU_TRY(make_current(dev));
	k_adamw<<<blocks_for(n), THREADS, 0, stream_of(dev)>>>(w, g, m, v, n, *hp);
	LAUNCHED();
	return 0;
}

/* ---- deterministic sums ------------------------------------------------ */

/* One block of MGPU_SUM_LANES threads per chunk (grid-stride over chunks):
 * thread j is lane j, the fold runs level by level in shared memory, as
 * elem.h defines it. With add (a single chunk) the total goes straight into
 * *out; otherwise chunk c's total into out[c]. */
static __global__ void k_sum_chunks(double *out, int add, const float *x, size_t n,
				    int squares, double scale)
{
	__shared__ double lane[MGPU_SUM_LANES];
	size_t nch = (n + MGPU_SUM_CHUNK - 1) / MGPU_SUM_CHUNK;

	for (size_t c = blockIdx.x; c < nch; c += gridDim.x) {
		size_t off = c * MGPU_SUM_CHUNK;
		size_t len = n - off < MGPU_SUM_CHUNK ? n - off : MGPU_SUM_CHUNK;

		lane[threadIdx.x] = mgpu_sum_lane(x + off, len, (int)threadIdx.x, squares);
		__syncthreads();
		for (int s = MGPU_SUM_LANES / 2; s > 0; s /= 2) {
			if ((int)threadIdx.x < s)
				lane[threadIdx.x] += lane[threadIdx.x + s];
			__syncthreads();
		}
		if (threadIdx.x == 0) {
			if (add)
				*out += scale * lane[0];
			else
				out[c] = lane[0];
		}
		__syncthreads(); /* lane[] is rewritten by the next chunk */
	}
}

/* The chunk totals in chunk order, from 0, then into *acc. */
static __global__ void k_sum_total(double *acc, const double *part, size_t nch, double scale)
{
	double t = 0.0;

	for (size_t c = 0; c < nch; c++)
		t += part[c];
	*acc += scale * t;
}

/* Room for nch chunk totals. Growing waits for the stream first: queued
 * sums may still read the old buffer. It happens once, at the first sum of
 * a long vector (the first step's gradient norm). */
static int part_room(struct mgpu_dev *dev, size_t nch)
{
	struct cuda_impl *im = impl_of(dev);
	void *p = NULL;
	cudaError_t rc;

	if (nch <= im->part_n)
		return 0;
	CU(cudaStreamSynchronize(im->stream));
	if (im->part)
		CU(cudaFree(im->part));
	im->part = NULL;
	im->part_n = 0;
	rc = cudaMalloc(&p, nch * sizeof(double));
	if (rc == cudaErrorMemoryAllocation) {
		(void)cudaGetLastError();
		return mgpu_err(MGPU_ENOMEM, "cuda device %d: out of memory for %zu partial sums",
				dev->index, nch);
	}
	CU(rc);
	im->part = (double *)p;
	im->part_n = nch;
	return 0;
}

static int cuda_sum_acc(struct mgpu_dev *dev, double *acc, const float *x, size_t n,
			int squares, double scale)
{
	struct cuda_impl *im = impl_of(dev);
	size_t nch = (n + MGPU_SUM_CHUNK - 1) / MGPU_SUM_CHUNK;
	unsigned grid = nch < MAX_BLOCKS ? (unsigned)nch : MAX_BLOCKS;

	if (n == 0)
		return 0;
	MGPU_TRY(make_current(dev));
	if (nch == 1) {
		k_sum_chunks<<<1, MGPU_SUM_LANES, 0, im->stream>>>(acc, 1, x, n, squares, scale);
		LAUNCHED();
		return 0;
	}
	MGPU_TRY(part_room(dev, nch));
	k_sum_chunks<<<grid, MGPU_SUM_LANES, 0, im->stream>>>(im->part, 0, x, n, squares, scale);
	LAUNCHED();
	k_sum_total<<<1, 1, 0, im->stream>>>(acc, im->part, nch, scale);
	LAUNCHED();
	return 0;
}

/* Designated (C++20), so that two swapped entries of one type are a
 * compile error, as in the C backends. */
extern "C" const struct mgpu_ops mgpu_ops_cuda = {
	.name = "cuda",
	.host_memory = 0,
	.device_count = cuda_device_count,
	.init = cuda_init,
	.fini = cuda_fini,
	.alloc = cuda_alloc,
	.release = cuda_release,
	.to_dev = cuda_to_dev,
	.to_host = cuda_to_host,
	.zero = cuda_zero,
	.sync = cuda_sync,
	.gemm = cuda_gemm,
	.nrm2 = cuda_nrm2,
	.bias_act = cuda_bias_act,
	.act_bwd = cuda_act_bwd,
	.col_sum = mgpu_cuda_col_sum,
	.ln_fwd = mgpu_cuda_ln_fwd,
	.ln_bwd = mgpu_cuda_ln_bwd,
	.dropout = cuda_dropout,
	.xent = mgpu_cuda_xent,
	.u8_to_f32 = cuda_u8_to_f32,
	.sgd = cuda_sgd,
	.adamw = cuda_adamw,
	.sgd_sum = NULL, /* host memory only (MGPU_CAP_SUM_UPDATE) */
	.adamw_sum = NULL,
	.add = mgpu_cuda_add,
	.emb_fwd = mgpu_cuda_emb_fwd,
	.emb_bwd = mgpu_cuda_emb_bwd,
	.attn_fwd = mgpu_cuda_attn_any_fwd, /* attn_gemm.cu, or attn_cuda.cu's */
	.attn_bwd = mgpu_cuda_attn_any_bwd,
	.heads_split = mgpu_cuda_heads_split,
	.heads_merge = mgpu_cuda_heads_merge,
	.f32_to_bf16 = mgpu_cuda_f32_to_bf16,
	.bf16_to_f32 = mgpu_cuda_bf16_to_f32,
	.f32_to_f16 = mgpu_cuda_f32_to_f16,
	.sum_acc = cuda_sum_acc,
	/* conv nets (conv_cuda.cu): cuDNN, or im2col + cuBLAS without it */
	.act_fwd = mgpu_cuda_act_fwd,
	.conv_fwd = mgpu_cuda_conv_fwd,
	.conv_bwd_data = mgpu_cuda_conv_bwd_data,
	.conv_bwd_weight = mgpu_cuda_conv_bwd_weight,
	.im2col = mgpu_cuda_im2col,
	.col2im = mgpu_cuda_col2im,
	.pool_fwd = mgpu_cuda_pool_fwd,
	.pool_bwd = mgpu_cuda_pool_bwd,
	.upsample_fwd = mgpu_cuda_upsample_fwd,
	.upsample_bwd = mgpu_cuda_upsample_bwd,
	.bn_stats = mgpu_cuda_bn_stats,
	.bn_fwd = mgpu_cuda_bn_fwd,
	.bn_bwd_stats = mgpu_cuda_bn_bwd_stats,
	.bn_bwd_data = mgpu_cuda_bn_bwd_data,
	.gn_fwd = mgpu_cuda_gn_fwd,
	.gn_bwd = mgpu_cuda_gn_bwd,
	.chan_bias = mgpu_cuda_chan_bias,
	.chan_sum = mgpu_cuda_chan_sum,
};
