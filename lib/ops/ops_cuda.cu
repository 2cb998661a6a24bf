/*
 * ops_cuda.cu - the "cuda" backend: cuBLAS for sgemm/nrm2/scal, thin kernels
 * over elem.h for the rest. Compiled only in builds with CUDA.
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
 * - Every op first makes dev->index the calling thread's current device,
 *   so one thread per device (--mode dp) and one process per device both work.
 * - Every CUDA runtime / cuBLAS call goes through CU() / CUBLAS(), which
 *   record expression, file:line, status name and text; every kernel launch
 *   is followed by LAUNCHED() (cudaGetLastError).
 * - sgemm is pure fp32 (cublasGemmEx, CUBLAS_COMPUTE_32F: no TF32), with the
 *   same column-major arguments the CPU backend gives cblas_sgemm; gemm_bf16
 *   and gemm_f16 take the same arguments with CUDA_R_16BF and CUDA_R_16F
 *   inputs.
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

#include "core/err.h"  /* mgpu_err, MGPU_EDEVICE (C linkage: extern "C" inside) */
#include "ops/ops.h"   /* struct mgpu_ops, struct mgpu_dev (C linkage) */
#include "ops/elem.h"  /* the per-element math, __host__ __device__ here */
#include "ops/loops.h" /* ops_check_* */
#include "ops/cublas_dl.h" /* struct mgpu_cublas: cuBLAS loaded on first use */
#include "ops/cuda_check.h" /* CU, CUBLAS, LAUNCHED */
#include "ops/ops_cuda.h" /* mgpu_cuda_attn_fwd, mgpu_cuda_attn_bwd */
#include "ops/loss_host.h" /* mgpu_cuda_mse, mgpu_cuda_pix_xent */

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



#define THREADS 256
#define MAX_BLOCKS 65535u

static struct cuda_impl *impl_of(struct mgpu_dev *dev)
{
	return (struct cuda_impl *)dev->impl;
}

/* Blocks for a grid-stride loop over n items (n > 0). */
static unsigned blocks_for(size_t n)
{
	size_t b = (n + THREADS - 1) / THREADS;
	return b < MAX_BLOCKS ? (unsigned)b : MAX_BLOCKS;
}

/* Make dev the calling thread's current device. */
static int use(struct mgpu_dev *dev)
{
	CU(cudaSetDevice(dev->index));
	return 0;
}

#define GRID_STRIDE(i, n)                                                         \
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n);   \
	     i += (size_t)gridDim.x * blockDim.x)

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
	MGPU_TRY(use(dev));
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
	if (use(dev) == 0 && cudaFree(p) != cudaSuccess)
		(void)cudaGetLastError(); /* release cannot fail; keep it from later checks */
}

/* Pageable sources are staged before cudaMemcpyAsync returns: src_host may
 * be reused at once. */
static int cuda_to_dev(struct mgpu_dev *dev, void *dst, const void *src_host, size_t nbytes)
{
	MGPU_TRY(use(dev));
	CU(cudaMemcpyAsync(dst, src_host, nbytes, cudaMemcpyHostToDevice, impl_of(dev)->stream));
	return 0;
}

/* Synchronous: dst_host holds the result on return. */
static int cuda_to_host(struct mgpu_dev *dev, void *dst_host, const void *src, size_t nbytes)
{
	MGPU_TRY(use(dev));
	CU(cudaMemcpyAsync(dst_host, src, nbytes, cudaMemcpyDeviceToHost, impl_of(dev)->stream));
	CU(cudaStreamSynchronize(impl_of(dev)->stream));
	return 0;
}

static int cuda_zero(struct mgpu_dev *dev, void *p, size_t nbytes)
{
	MGPU_TRY(use(dev));
	CU(cudaMemsetAsync(p, 0, nbytes, impl_of(dev)->stream));
	return 0;
}

static int cuda_sync(struct mgpu_dev *dev)
{
	MGPU_TRY(use(dev));
	CU(cudaStreamSynchronize(impl_of(dev)->stream));
	return 0;
}

/* ---- BLAS --------------------------------------------------------------- */

/* C (m x n, ldc) = beta * C, beta == 0 writing zeros: sgemm's k == 0 or
 * alpha == 0 case, done here so A and B are never read. */
static __global__ void k_scale_c(float *C, int m, int n, int ldc, float beta)
{
	GRID_STRIDE(t, (size_t)m * n) {
		float *c = &C[t % m + (t / m) * (size_t)ldc];
		*c = beta == 0.0f ? 0.0f : beta * *c;
	}
}

static int cuda_sgemm(struct mgpu_dev *dev, enum mgpu_trans ta, enum mgpu_trans tb, int m,
		      int n, int k, float alpha, const float *A, int lda, const float *Bm,
		      int ldb, float beta, float *C, int ldc)
{
	struct cuda_impl *im = impl_of(dev);
	const struct mgpu_cublas *cb = im->cb;

	MGPU_TRY(ops_check_sgemm(ta, tb, m, n, k, lda, ldb, ldc));
	if (m == 0 || n == 0)
		return 0;
	MGPU_TRY(use(dev));
	if (k == 0 || alpha == 0.0f) {
		if (beta == 1.0f)
			return 0;
		k_scale_c<<<blocks_for((size_t)m * n), THREADS, 0, im->stream>>>(C, m, n, ldc,
										  beta);
		LAUNCHED();
		return 0;
	}
	CUBLAS(cb->gemm_ex(im->blas, ta == MGPU_T ? CUBLAS_OP_T : CUBLAS_OP_N,
			    tb == MGPU_T ? CUBLAS_OP_T : CUBLAS_OP_N, m, n, k, &alpha, A,
			    CUDA_R_32F, lda, Bm, CUDA_R_32F, ldb, &beta, C, CUDA_R_32F, ldc,
			    CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
	return 0;
}

/* Host pointer mode: cuBLAS returns after the result is in *out_host. */
static int cuda_nrm2(struct mgpu_dev *dev, size_t n, const float *x, float *out_host)
{
	const struct mgpu_cublas *cb = impl_of(dev)->cb;

	*out_host = 0.0f;
	if (n == 0)
		return 0;
	MGPU_TRY(use(dev));
	CUBLAS(cb->snrm2_64(impl_of(dev)->blas, (int64_t)n, x, 1, out_host));
	return 0;
}

static int cuda_scal(struct mgpu_dev *dev, size_t n, float alpha, float *x)
{
	const struct mgpu_cublas *cb = impl_of(dev)->cb;

	if (n == 0)
		return 0;
	MGPU_TRY(use(dev));
	CUBLAS(cb->sscal_64(impl_of(dev)->blas, (int64_t)n, &alpha, x, 1));
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
	MGPU_TRY(use(dev));
	k_bias_act<<<blocks_for(n), THREADS, 0, impl_of(dev)->stream>>>((int)act, Y, Z, b, n, D);
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
	MGPU_TRY(use(dev));
	k_act_bwd<<<blocks_for(n), THREADS, 0, impl_of(dev)->stream>>>((int)act, dZ, dY, Z, n);
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
	MGPU_TRY(use(dev));
	k_dropout<<<blocks_for(n), THREADS, 0, impl_of(dev)->stream>>>(Y, X, n, p, seed, offset);
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
	MGPU_TRY(use(dev));
	k_u8_to_f32<<<blocks_for(n), THREADS, 0, impl_of(dev)->stream>>>(Y, X, n, scale, shift);
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
	MGPU_TRY(use(dev));
	k_sgd<<<blocks_for(n), THREADS, 0, impl_of(dev)->stream>>>(w, g, mom, n, *hp);
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
	MGPU_TRY(use(dev));
	k_adamw<<<blocks_for(n), THREADS, 0, impl_of(dev)->stream>>>(w, g, m, v, n, *hp);
	LAUNCHED();
	return 0;
}

/* ---- row kernels: a warp per row; column kernels: a block per column tile
 *
 * A row op gives each row to one warp. Lane l reads elements l, l + 32, ...
 * of the row (the 32 lanes read 32 neighbouring floats: coalesced), reduces
 * that part with elem.h's *_part functions, and warp_sum / warp_max /
 * warp_argmax combine the 32 parts with butterfly shuffles, after which
 * every lane holds the row's total; then each lane writes its own elements
 * with elem.h's per-element function.
 *
 * Geometry: blocks of THREADS threads, ROW_WARPS rows each, at most
 * MAX_BLOCKS blocks; WARP_ROWS loops a warp over rows ROW_WARPS * gridDim.x
 * apart. The row index is the same in the 32 lanes of a warp, so a warp
 * enters and leaves every row whole and each shuffle runs with all 32
 * lanes, as FULL_MASK states. A lane reads and writes only its own
 * elements of a row, so an in-place form would need no barrier. Offsets
 * are size_t. (Attention has its own tiled kernels, attn_cuda.cu.)
 */
#define WARP 32
#define FULL_MASK 0xffffffffu
#define ROW_WARPS (THREADS / WARP)
static_assert(THREADS % WARP == 0, "row kernels need whole warps");

/* Blocks for one warp per row (rows > 0); the kernels loop past the cap. */
static unsigned row_blocks(size_t rows)
{
	size_t b = (rows + ROW_WARPS - 1) / ROW_WARPS;
	return b < MAX_BLOCKS ? (unsigned)b : MAX_BLOCKS;
}

/* r: the calling warp's rows. blockDim.x == THREADS, a multiple of WARP, so
 * the 32 threads of a warp share blockIdx.x and threadIdx.x / WARP. */
#define WARP_ROWS(r, rows)                                                          \
	for (size_t r = (size_t)blockIdx.x * ROW_WARPS + threadIdx.x / WARP; r < (rows); \
	     r += (size_t)gridDim.x * ROW_WARPS)

static __device__ unsigned lane_id(void)
{
	return threadIdx.x % WARP;
}

/* v summed over the warp, in every lane. The two lanes of a pair add the
 * same two values (a + b == b + a), so all lanes end with the same bits,
 * and every run adds in the same order. */
static __device__ float warp_sum(float v)
{
	for (int o = WARP / 2; o > 0; o /= 2)
		v += __shfl_xor_sync(FULL_MASK, v, o);
	return v;
}

/* The first maximum over the warp's parts, in every lane (the merge picks
 * the larger value, then the smaller index: the same pick in both lanes). */
static __device__ void warp_argmax(float *mx, int *arg)
{
	for (int o = WARP / 2; o > 0; o /= 2) {
		float t = __shfl_xor_sync(FULL_MASK, *mx, o);
		int at = __shfl_xor_sync(FULL_MASK, *arg, o);
		mgpu_argmax_merge(mx, arg, t, at);
	}
}

/*
 * Column kernels (col_sum, LayerNorm's dgamma/dbeta): a block of COL_W x
 * COL_H threads takes COL_W neighbouring columns over all B rows. Thread
 * (x, y) sums column x over rows y, y + COL_H, ... (a warp reads COL_W
 * floats of each of WARP / COL_W rows: whole 32-byte sectors); col_total
 * then adds the COL_H partial sums in order of y. No atomics, no scratch
 * memory, the same order on every run, and ceil(D / COL_W) blocks (96 at
 * D = 768), where one thread per column walking all rows kept only
 * D / THREADS blocks busy. Blocks: D <= INT_MAX gives < 2^28 of them,
 * under gridDim.x's 2^31 - 1.
 */
#define COL_W 8
#define COL_H 64
static_assert(COL_W * COL_H <= 1024 && WARP % COL_W == 0, "column block shape");

static unsigned col_blocks(int D)
{
	return (unsigned)(((size_t)D + COL_W - 1) / COL_W);
}

/* Column threadIdx.x's partial sums v added over the block in order of
 * threadIdx.y: the total, in the threads with threadIdx.y == 0. Every
 * thread of the block must call it (__syncthreads). */
static __device__ float col_total(float v)
{
	__shared__ float part[COL_H][COL_W];

	part[threadIdx.y][threadIdx.x] = v;
	__syncthreads();
	if (threadIdx.y == 0)
		for (int y = 1; y < COL_H; y++)
			v += part[y][threadIdx.x];
	__syncthreads(); /* part is free for the next call */
	return v;
}

/* db (D) = beta * db + column sums of dY (B,D); beta == 0 overwrites. */
static __global__ void k_col_sum(float *db, const float *dY, size_t B, int D, float beta)
{
	size_t j = (size_t)blockIdx.x * COL_W + threadIdx.x;
	float s = 0.0f;

	if (j < (size_t)D)
		s = mgpu_col_part(dY, threadIdx.y, B, COL_H, (size_t)D, j);
	s = col_total(s);
	if (threadIdx.y == 0 && j < (size_t)D)
		mgpu_acc_store(&db[j], beta, s);
}

static int cuda_col_sum(struct mgpu_dev *dev, float *db, const float *dY, int B, int D,
			float beta)
{
	MGPU_TRY(ops_check_rows("col_sum", B, D));
	if (D == 0)
		return 0;
	MGPU_TRY(use(dev));
	k_col_sum<<<col_blocks(D), dim3(COL_W, COL_H), 0, impl_of(dev)->stream>>>(
		db, dY, (size_t)B, D, beta);
	LAUNCHED();
	return 0;
}

/* X, Y (B,D); gamma, beta (D); mean, rstd (B), written by lane 0. */
static __global__ void k_ln_fwd(float *Y, float *mean, float *rstd, const float *X,
				const float *gamma, const float *beta, size_t B, int D, float eps)
{
	unsigned lane = lane_id();

	WARP_ROWS(i, B) {
		const float *x = X + i * D;
		float *y = Y + i * D;
		float mu = mgpu_ln_mean(warp_sum(mgpu_part_sum(x, lane, D, WARP)), D);
		float rs = mgpu_ln_rstd(warp_sum(mgpu_part_sqdev(x, mu, lane, D, WARP)), D, eps);

		for (size_t j = lane; j < (size_t)D; j += WARP)
			y[j] = mgpu_ln_fwd_elem(x[j], mu, rs, gamma[j], beta[j]);
		if (lane == 0) {
			mean[i] = mu;
			rstd[i] = rs;
		}
	}
}

static int cuda_ln_fwd(struct mgpu_dev *dev, float *Y, float *mean, float *rstd,
		       const float *X, const float *gamma, const float *beta, int B, int D,
		       float eps)
{
	MGPU_TRY(ops_check_rows("ln_fwd", B, D));
	if (B == 0 || D == 0)
		return 0;
	MGPU_TRY(use(dev));
	k_ln_fwd<<<row_blocks((size_t)B), THREADS, 0, impl_of(dev)->stream>>>(
		Y, mean, rstd, X, gamma, beta, (size_t)B, D, eps);
	LAUNCHED();
	return 0;
}

/* dX (B,D) of LayerNorm, a warp per row. */
static __global__ void k_ln_bwd_rows(float *dX, const float *dY, const float *X,
				     const float *mean, const float *rstd, const float *gamma,
				     size_t B, int D)
{
	unsigned lane = lane_id();

	WARP_ROWS(i, B) {
		size_t off = i * D;
		float mu = mean[i], rs = rstd[i], s1, s2;

		mgpu_ln_bwd_part(dY + off, X + off, mu, rs, gamma, lane, D, WARP, &s1, &s2);
		s1 = warp_sum(s1) / (float)D;
		s2 = warp_sum(s2) / (float)D;
		for (size_t j = lane; j < (size_t)D; j += WARP)
			dX[off + j] = mgpu_ln_bwd_elem(dY[off + j], X[off + j], mu, rs, gamma[j],
						       s1, s2);
	}
}

/* dgamma, dbeta (D) = acc * old + column sums over the B rows. */
static __global__ void k_ln_bwd_cols(float *dgamma, float *dbeta, const float *dY,
				     const float *X, const float *mean, const float *rstd,
				     size_t B, int D, float acc)
{
	size_t j = (size_t)blockIdx.x * COL_W + threadIdx.x;
	float sg = 0.0f, sb = 0.0f;

	if (j < (size_t)D)
		mgpu_ln_col_part(dY, X, mean, rstd, threadIdx.y, B, COL_H, (size_t)D, j, &sg, &sb);
	sg = col_total(sg);
	sb = col_total(sb);
	if (threadIdx.y == 0 && j < (size_t)D) {
		mgpu_acc_store(&dgamma[j], acc, sg);
		mgpu_acc_store(&dbeta[j], acc, sb);
	}
}

static int cuda_ln_bwd(struct mgpu_dev *dev, float *dX, float *dgamma, float *dbeta,
		       const float *dY, const float *X, const float *mean, const float *rstd,
		       const float *gamma, int B, int D, float acc)
{
	cudaStream_t s = impl_of(dev)->stream;

	MGPU_TRY(ops_check_rows("ln_bwd", B, D));
	if (D == 0)
		return 0;
	MGPU_TRY(use(dev));
	if (B > 0) {
		k_ln_bwd_rows<<<row_blocks((size_t)B), THREADS, 0, s>>>(dX, dY, X, mean, rstd,
									 gamma, (size_t)B, D);
		LAUNCHED();
	}
	k_ln_bwd_cols<<<col_blocks(D), dim3(COL_W, COL_H), 0, s>>>(dgamma, dbeta, dY, X, mean,
								   rstd, (size_t)B, D, acc);
	LAUNCHED();
	return 0;
}

/* Softmax cross-entropy, a warp per row of logits (B,C). The loss and the
 * correct flag are written by the lane that owns l[y], which reads l[y]
 * before it writes dl[y], so even dlogits == logits would be safe. */
static __global__ void k_xent(float *dlogits, float *row_loss, float *row_correct,
			      const float *logits, const int32_t *labels, size_t B, int C,
			      float grad_scale)
{
	unsigned lane = lane_id();

	WARP_ROWS(i, B) {
		size_t off = i * C;
		const float *l = logits + off;
		float *dl = dlogits ? dlogits + off : NULL;
		int32_t y = labels[i]; /* the same in every lane: a uniform branch */
		float mx, sum;
		int arg;

		if (y < 0 || y >= C) { /* cannot report: make it visible */
			if (lane == 0) {
				row_loss[i] = NAN;
				row_correct[i] = 0.0f;
			}
			for (size_t j = lane; dl && j < (size_t)C; j += WARP)
				dl[j] = 0.0f;
			continue;
		}
		mgpu_part_argmax(l, lane, C, WARP, &mx, &arg);
		warp_argmax(&mx, &arg);
		if (l[0] != l[0]) { /* ref's scan starts from a NaN l[0] and keeps it */
			mx = l[0];
			arg = 0;
		}
		sum = warp_sum(mgpu_part_sum_exp(l, 1.0f, mx, lane, C, WARP));
		if (lane == (unsigned)y % WARP) {
			row_loss[i] = mgpu_xent_loss(mx, sum, l[y]);
			row_correct[i] = arg == y ? 1.0f : 0.0f;
		}
		for (size_t j = lane; dl && j < (size_t)C; j += WARP)
			dl[j] = mgpu_xent_grad_elem(l[j], mx, sum, j == (size_t)y, grad_scale);
	}
}

static int cuda_xent(struct mgpu_dev *dev, float *dlogits, float *row_loss, float *row_correct,
		     const float *logits, const int32_t *labels, int B, int C, float grad_scale)
{
	MGPU_TRY(ops_check_xent(B, C));
	if (B == 0)
		return 0;
	MGPU_TRY(use(dev));
	k_xent<<<row_blocks((size_t)B), THREADS, 0, impl_of(dev)->stream>>>(
		dlogits, row_loss, row_correct, logits, labels, (size_t)B, C, grad_scale);
	LAUNCHED();
	return 0;
}

/* ---- transformer ops ----------------------------------------------------- */

/* C_i = beta * C_i for each of `batch` m x n matrices strideC apart: the
 * k == 0 / alpha == 0 case of sgemm_strided. */
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

/* What sgemm_strided and the 16-bit GEMMs share before cuBLAS: the checks, and
 * the products that need no multiply (nothing to write; k == 0 or
 * alpha == 0: C = beta * C). 1 when that settled the call, 0 when cuBLAS
 * must run, < 0 on an error. */
static int gemm_batch_trivial(struct mgpu_dev *dev, enum mgpu_trans ta, enum mgpu_trans tb,
			      int m, int n, int k, float alpha, int lda, long long sa, int ldb,
			      long long sb, float beta, float *C, int ldc, long long sc, int batch)
{
	MGPU_TRY(ops_check_sgemm_strided(ta, tb, m, n, k, lda, ldb, ldc, sa, sb, sc, batch));
	if (m == 0 || n == 0 || batch == 0)
		return 1;
	MGPU_TRY(use(dev));
	if (k != 0 && alpha != 0.0f)
		return 0;
	if (beta != 1.0f) {
		k_scale_c_strided<<<blocks_for((size_t)m * n * batch), THREADS, 0,
				    impl_of(dev)->stream>>>(C, m, n, ldc, sc, batch, beta);
		LAUNCHED();
	}
	return 1;
}

static int cuda_sgemm_strided(struct mgpu_dev *dev, enum mgpu_trans ta, enum mgpu_trans tb,
			      int m, int n, int k, float alpha, const float *A, int lda,
			      long long sa, const float *Bm, int ldb, long long sb, float beta,
			      float *C, int ldc, long long sc, int batch)
{
	struct cuda_impl *im = impl_of(dev);
	const struct mgpu_cublas *cb = im->cb;
	int rc = gemm_batch_trivial(dev, ta, tb, m, n, k, alpha, lda, sa, ldb, sb, beta, C, ldc,
				    sc, batch);

	if (rc != 0)
		return rc < 0 ? rc : 0;
	CUBLAS(cb->gemm_strided_ex(im->blas, ta == MGPU_T ? CUBLAS_OP_T : CUBLAS_OP_N,
				    tb == MGPU_T ? CUBLAS_OP_T : CUBLAS_OP_N, m, n, k, &alpha, A,
				    CUDA_R_32F, lda, sa, Bm, CUDA_R_32F, ldb, sb, &beta, C,
				    CUDA_R_32F, ldc, sc, batch, CUBLAS_COMPUTE_32F,
				    CUBLAS_GEMM_DEFAULT));
	return 0;
}

static __global__ void k_add(float *Y, const float *X1, const float *X2, size_t n)
{
	GRID_STRIDE(t, n)
		Y[t] = X1[t] + X2[t];
}

static int cuda_add(struct mgpu_dev *dev, float *Y, const float *X1, const float *X2, size_t n)
{
	if (n == 0)
		return 0;
	MGPU_TRY(use(dev));
	k_add<<<blocks_for(n), THREADS, 0, impl_of(dev)->stream>>>(Y, X1, X2, n);
	LAUNCHED();
	return 0;
}

/* One thread per output element; a row with a bad id becomes NaN. */
static __global__ void k_emb_fwd(float *Y, const int32_t *ids, const float *wte,
				 const float *wpe, int T, int V, int D, size_t n)
{
	GRID_STRIDE(t, n) {
		int32_t id = ids[t / (size_t)D];
		Y[t] = id < 0 || id >= V ? NAN : mgpu_emb_elem(ids, wte, wpe, T, D, t);
	}
}

static int cuda_emb_fwd(struct mgpu_dev *dev, float *Y, const int32_t *ids, const float *wte,
			const float *wpe, int B, int T, int V, int D)
{
	size_t n = (size_t)B * T * D;

	MGPU_TRY(ops_check_emb("emb_fwd", B, T, V, D));
	if (n == 0)
		return 0;
	MGPU_TRY(use(dev));
	k_emb_fwd<<<blocks_for(n), THREADS, 0, impl_of(dev)->stream>>>(Y, ids, wte, wpe, T, V,
									D, n);
	LAUNCHED();
	return 0;
}

/* The lowest set bit of *hit, cleared from it; -1 when *hit is 0. */
static __device__ int next_hit(unsigned *hit)
{
	int b = __ffs((int)*hit) - 1; /* __ffs counts from 1, and is 0 for 0 */

	*hit &= *hit - 1;
	return b;
}

/* dY[r0 + b][c], or 0 for no hit (b < 0) or a column past the row. */
static __device__ float tok_val(const float *dY, size_t r0, int b, size_t c, size_t D)
{
	return b >= 0 && c < D ? dY[(r0 + (size_t)b) * D + c] : 0.0f;
}

/*
 * dwte (V,D): a block per token id v (grid-stride past MAX_BLOCKS), a
 * thread per column, blockDim.x columns at a time. Each warp walks the ids
 * 32 rows at a time: a ballot marks the rows that hold v, and every lane
 * adds those rows of its column in row order, four loads in flight. The
 * sums start at 0.0f and go in row order, as mgpu_emb_tok_col's, so they
 * are ref's bit for bit, deterministic and without atomics. A missing
 * second to fourth hit adds 0.0f, which changes no sum (a sum from +0.0
 * is never -0.0: x + -x rounds to +0.0). All the loops' bounds are the
 * same across a warp, so every ballot has its 32 lanes.
 */
static __global__ void k_emb_tok(float *dwte, const float *dY, const int32_t *ids, size_t N,
				 int V, int D, float acc)
{
	unsigned lane = lane_id();

	for (size_t v = blockIdx.x; v < (size_t)V; v += gridDim.x)
		for (size_t c0 = 0; c0 < (size_t)D; c0 += blockDim.x) {
			size_t c = c0 + threadIdx.x;
			float s = 0.0f;

			for (size_t r0 = 0; r0 < N; r0 += WARP) {
				size_t r = r0 + lane;
				unsigned hit = __ballot_sync(FULL_MASK, r < N && ids[r] == (int32_t)v);

				while (hit) {
					int b0 = next_hit(&hit), b1 = next_hit(&hit);
					int b2 = next_hit(&hit), b3 = next_hit(&hit);
					float x0 = tok_val(dY, r0, b0, c, D);
					float x1 = tok_val(dY, r0, b1, c, D);
					float x2 = tok_val(dY, r0, b2, c, D);
					float x3 = tok_val(dY, r0, b3, c, D);

					s += x0;
					s += x1;
					s += x2;
					s += x3;
				}
			}
			if (c < (size_t)D)
				mgpu_acc_store(&dwte[v * D + c], acc, s);
		}
}

/* Threads per block of k_emb_tok: D rounded up to whole warps, at most
 * 1024 (wider rows take several passes). */
static unsigned emb_tok_threads(int D)
{
	size_t t = ((size_t)D + WARP - 1) / WARP * WARP;
	return t < 1024 ? (unsigned)t : 1024u;
}

/* One thread per (position, column), coalesced across columns; B is small. */
static __global__ void k_emb_pos(float *dwpe, const float *dY, int B, int T, int D, float acc)
{
	GRID_STRIDE(t, (size_t)T * D)
		mgpu_emb_pos_col(dY, B, T, D, (int)(t / D), (int)(t % D), acc, dwpe);
}

static int cuda_emb_bwd(struct mgpu_dev *dev, float *dwte, float *dwpe, const float *dY,
			const int32_t *ids, int B, int T, int V, int D, float acc)
{
	cudaStream_t s = impl_of(dev)->stream;

	MGPU_TRY(ops_check_emb("emb_bwd", B, T, V, D));
	if (D == 0)
		return 0;
	MGPU_TRY(use(dev));
	if (V > 0) {
		unsigned blocks = (unsigned)V < MAX_BLOCKS ? (unsigned)V : MAX_BLOCKS;
		k_emb_tok<<<blocks, emb_tok_threads(D), 0, s>>>(dwte, dY, ids, (size_t)B * T, V, D,
								 acc);
		LAUNCHED();
	}
	if (T > 0) {
		k_emb_pos<<<blocks_for((size_t)T * D), THREADS, 0, s>>>(dwpe, dY, B, T, D, acc);
		LAUNCHED();
	}
	return 0;
}

/* One thread per element of the (B*H,T,Dh) side. */
static __global__ void k_heads(float *Y, const float *X, int ld, int T, int H, int Dh,
			       size_t n, int merge)
{
	GRID_STRIDE(t, n) {
		size_t f = mgpu_heads_index(t, T, H, Dh, ld);
		if (merge)
			Y[f] = X[t];
		else
			Y[t] = X[f];
	}
}

static int heads(struct mgpu_dev *dev, float *Y, const float *X, int ld, int B, int T, int H,
		 int Dh, int merge)
{
	size_t n = (size_t)B * T * H * Dh;

	MGPU_TRY(ops_check_heads(merge ? "heads_merge" : "heads_split", ld, B, T, H, Dh));
	if (n == 0)
		return 0;
	MGPU_TRY(use(dev));
	k_heads<<<blocks_for(n), THREADS, 0, impl_of(dev)->stream>>>(Y, X, ld, T, H, Dh, n,
								      merge);
	LAUNCHED();
	return 0;
}

static int cuda_heads_split(struct mgpu_dev *dev, float *Y, const float *X, int ldx, int B,
			    int T, int H, int Dh)
{
	return heads(dev, Y, X, ldx, B, T, H, Dh, 0);
}

static int cuda_heads_merge(struct mgpu_dev *dev, float *Y, int ldy, const float *X, int B,
			    int T, int H, int Dh)
{
	return heads(dev, Y, X, ldy, B, T, H, Dh, 1);
}

static __global__ void k_f32_to_bf16(uint16_t *Y, const float *X, size_t n)
{
	GRID_STRIDE(t, n)
		Y[t] = mgpu_bf16_from_f32(X[t]);
}

static int cuda_f32_to_bf16(struct mgpu_dev *dev, uint16_t *Y, const float *X, size_t n)
{
	if (n == 0)
		return 0;
	MGPU_TRY(use(dev));
	k_f32_to_bf16<<<blocks_for(n), THREADS, 0, impl_of(dev)->stream>>>(Y, X, n);
	LAUNCHED();
	return 0;
}

static __global__ void k_bf16_to_f32(float *Y, const uint16_t *X, size_t n)
{
	GRID_STRIDE(t, n)
		Y[t] = mgpu_bf16_to_f32(X[t]);
}

static int cuda_bf16_to_f32(struct mgpu_dev *dev, float *Y, const uint16_t *X, size_t n)
{
	if (n == 0)
		return 0;
	MGPU_TRY(use(dev));
	k_bf16_to_f32<<<blocks_for(n), THREADS, 0, impl_of(dev)->stream>>>(Y, X, n);
	LAUNCHED();
	return 0;
}

static __global__ void k_f32_to_f16(uint16_t *Y, const float *X, size_t n)
{
	GRID_STRIDE(t, n)
		Y[t] = mgpu_f16_from_f32(X[t]);
}

static int cuda_f32_to_f16(struct mgpu_dev *dev, uint16_t *Y, const float *X, size_t n)
{
	if (n == 0)
		return 0;
	MGPU_TRY(use(dev));
	k_f32_to_f16<<<blocks_for(n), THREADS, 0, impl_of(dev)->stream>>>(Y, X, n);
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
	int rc = gemm_batch_trivial(dev, ta, tb, m, n, k, alpha, lda, sa, ldb, sb, beta, C, ldc,
				    sc, batch);

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

static int cuda_gemm_bf16(struct mgpu_dev *dev, enum mgpu_trans ta, enum mgpu_trans tb, int m,
			  int n, int k, float alpha, const uint16_t *A, int lda, long long sa,
			  const uint16_t *Bm, int ldb, long long sb, float beta, float *C,
			  int ldc, long long sc, int batch)
{
	return gemm16(dev, CUDA_R_16BF, ta, tb, m, n, k, alpha, A, lda, sa, Bm, ldb, sb, beta, C,
		      ldc, sc, batch);
}

static int cuda_gemm_f16(struct mgpu_dev *dev, enum mgpu_trans ta, enum mgpu_trans tb, int m,
			 int n, int k, float alpha, const uint16_t *A, int lda, long long sa,
			 const uint16_t *Bm, int ldb, long long sb, float beta, float *C,
			 int ldc, long long sc, int batch)
{
	return gemm16(dev, CUDA_R_16F, ta, tb, m, n, k, alpha, A, lda, sa, Bm, ldb, sb, beta, C,
		      ldc, sc, batch);
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
	MGPU_TRY(use(dev));
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
	.sgemm = cuda_sgemm,
	.nrm2 = cuda_nrm2,
	.scal = cuda_scal,
	.bias_act = cuda_bias_act,
	.act_bwd = cuda_act_bwd,
	.col_sum = cuda_col_sum,
	.ln_fwd = cuda_ln_fwd,
	.ln_bwd = cuda_ln_bwd,
	.dropout = cuda_dropout,
	.xent = cuda_xent,
	.u8_to_f32 = cuda_u8_to_f32,
	.sgd = cuda_sgd,
	.adamw = cuda_adamw,
	.sgemm_strided = cuda_sgemm_strided,
	.add = cuda_add,
	.emb_fwd = cuda_emb_fwd,
	.emb_bwd = cuda_emb_bwd,
	.attn_fwd = mgpu_cuda_attn_fwd, /* attn_cuda.cu */
	.attn_bwd = mgpu_cuda_attn_bwd,
	.heads_split = cuda_heads_split,
	.heads_merge = cuda_heads_merge,
	.f32_to_bf16 = cuda_f32_to_bf16,
	.bf16_to_f32 = cuda_bf16_to_f32,
	.gemm_bf16 = cuda_gemm_bf16,
	.f32_to_f16 = cuda_f32_to_f16,
	.gemm_f16 = cuda_gemm_f16,
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
	/* losses of targets beyond a class id (loss_host.h) */
	.mse = mgpu_cuda_mse,
	.pix_xent = mgpu_cuda_pix_xent,
};

/* The stream of a cuda device, for the NCCL code that runs beside it. */
extern "C" void **mgpu_cuda_conv_slot(struct mgpu_dev *dev)
{
	return &impl_of(dev)->conv;
}

extern "C" void *mgpu_cuda_stream(struct mgpu_dev *dev)
{
	return dev->impl ? (void *)impl_of(dev)->stream : NULL;
}

extern "C" int mgpu_cuda_cc(struct mgpu_dev *dev)
{
	return dev->impl ? impl_of(dev)->cc : 0;
}

extern "C" int mgpu_cuda_smem_optin(struct mgpu_dev *dev)
{
	return dev->impl ? impl_of(dev)->smem_optin : 0;
}
