/*
 * conv_cuda.cu - the cuda backend's conv-net ops (ops.h states them):
 * convolutions on cuDNN 9, loaded on the first convolution (cudnn_dl.h),
 * or, where it cannot be loaded, im2col + cuBLAS (conv_gemm.c) over the
 * im2col/col2im kernels here; pooling, upsampling, BatchNorm, GroupNorm
 * and act_fwd are thin kernels over elem.h, the arithmetic ref and cpu run.
 *
 * Invariants:
 * - Device pointers; every op is queued on the device's stream
 *   (stream_of), cuDNN's handle is bound to it.
 * - Every CUDA and cuDNN call goes through CU() / CUDNN(), every launch is
 *   followed by LAUNCHED().
 * - bf16 convolutions (g->prec) run im2col + cuBLAS's bf16 GEMM with fp32
 *   results (conv_gemm.c): ops.h's contract (rounded operands, fp32
 *   outputs) exactly, where cuDNN's legacy API would round y, dx and dw
 *   to bf16 too.
 * - cuDNN runs fp32 with CUDNN_FMA_MATH (no TF32, as cuBLAS runs without
 *   it) and, per shape, the best algorithm its heuristics offer among the
 *   deterministic GEMM-like and direct ones (no atomics, no FFT or
 *   Winograd: see allowed()); the choice and its workspace size are cached
 *   per device and shape, and a shape with none runs im2col + cuBLAS.
 * - Reductions (BatchNorm's per channel, GroupNorm's per group) are one
 *   block each, summing in double in a fixed order: the same bits every run.
 * - State (cuDNN handle, descriptors, algorithm cache, workspace) lives in
 *   struct conv_state behind mgpu_cuda_conv_slot(dev), freed by the
 *   backend's fini through mgpu_cuda_conv_release.
 */
#include <cuda_runtime.h> /* cudaStream_t, cudaMalloc, cudaFree */
#include <math.h>         /* sqrt */
#include <stdlib.h>       /* calloc, free */
#include <string.h>       /* memcmp, memset */

#include "core/err.h"       /* mgpu_err, MGPU_TRY */
#include "ops/conv_host.h"  /* mgpu_gemm_conv_*: the fallback without cuDNN */
#include "ops/cuda_check.h" /* CU, LAUNCHED */
#include "ops/cuda_kern.h"  /* make_current, stream_of, GRID_STRIDE, blocks_for */
#include "ops/cudnn_dl.h"   /* struct mgpu_cudnn */
#include "ops/elem.h"       /* the per-element math, __host__ __device__ here */
#include "ops/loops.h"      /* ops_check_* */
#include "ops/ops_cuda.h"   /* mgpu_cuda_conv_slot, the prototypes */

#define ALGO_CACHE 64

/* cuDNN is called through the table of cudnn_dl.h, `dn` in scope. */
#define CUDNN(expr)                                                                    \
	do {                                                                           \
		cudnnStatus_t dn_rc_ = (expr);                                         \
		if (dn_rc_ != CUDNN_STATUS_SUCCESS)                                    \
			return mgpu_err(MGPU_EDEVICE, "%s at %s:%d: cuDNN status %d: %s", \
					#expr, __FILE__, __LINE__, (int)dn_rc_,        \
					dn->error_string(dn_rc_));                     \
	} while (0)

/* ---- cuDNN state --------------------------------------------------------- */

enum { FWD = 0, BWD_DATA = 1, BWD_FILTER = 2 };

struct algo_entry {
	int used;
	struct mgpu_conv g;
	int algo[3];     /* per direction, -1 until chosen */
	size_t ws[3];    /* its workspace bytes */
};

struct conv_state {
	int tried;                   /* cuDNN load attempted */
	const struct mgpu_cudnn *dn; /* NULL: cuDNN missing, im2col + cuBLAS */
	cudnnHandle_t h;
	cudnnTensorDescriptor_t xd, yd, bd;
	cudnnFilterDescriptor_t wd;
	cudnnConvolutionDescriptor_t cd;
	struct algo_entry e[ALGO_CACHE];
	int next;
	void *ws; /* workspace, grown to the largest asked for */
	size_t ws_bytes;
};

extern "C" void mgpu_cuda_conv_release(struct mgpu_dev *dev)
{
	struct conv_state *st = (struct conv_state *)*mgpu_cuda_conv_slot(dev);
	const struct mgpu_cudnn *dn;

	if (!st)
		return;
	dn = st->dn;
	(void)cudaSetDevice(dev->index);
	if (st->ws)
		mgpu_dev_free(dev, st->ws, st->ws_bytes);
	if (dn) { /* fini cannot fail: statuses ignored */
		if (st->cd)
			(void)dn->destroy_conv(st->cd);
		if (st->wd)
			(void)dn->destroy_filter(st->wd);
		if (st->xd)
			(void)dn->destroy_tensor(st->xd);
		if (st->yd)
			(void)dn->destroy_tensor(st->yd);
		if (st->bd)
			(void)dn->destroy_tensor(st->bd);
		if (st->h)
			(void)dn->destroy(st->h);
	}
	(void)cudaGetLastError();
	free(st);
	*mgpu_cuda_conv_slot(dev) = NULL;
}

static int open_cudnn(struct mgpu_dev *dev, struct conv_state *st, const struct mgpu_cudnn *dn)
{
	CUDNN(dn->create(&st->h));
	CUDNN(dn->set_stream(st->h, stream_of(dev)));
	CUDNN(dn->create_tensor(&st->xd));
	CUDNN(dn->create_tensor(&st->yd));
	CUDNN(dn->create_tensor(&st->bd));
	CUDNN(dn->create_filter(&st->wd));
	CUDNN(dn->create_conv(&st->cd));
	return 0;
}

/* dev's state; st->dn stays NULL when cuDNN cannot be loaded (then the
 * convolutions run im2col + cuBLAS). */
static int state_of(struct mgpu_dev *dev, struct conv_state **out)
{
	void **slot = mgpu_cuda_conv_slot(dev);
	struct conv_state *st = (struct conv_state *)*slot;
	const struct mgpu_cudnn *dn;
	int rc;

	if (!st) {
		st = (struct conv_state *)calloc(1, sizeof *st);
		if (!st)
			return mgpu_err(MGPU_ENOMEM, "out of host memory");
		*slot = st;
	}
	if (!st->tried) {
		st->tried = 1;
		if (mgpu_cudnn_load(&dn) == 0) {
			st->dn = dn; /* set first: release destroys what was created */
			rc = open_cudnn(dev, st, dn);
			if (rc < 0)
				return rc;
		}
	}
	*out = st;
	return 0;
}

/* The descriptors of g, set on the device's reusable ones. */
static int set_descs(struct conv_state *st, const struct mgpu_conv *g)
{
	const struct mgpu_cudnn *dn = st->dn;
	int OH = MGPU_CONV_OUT(g->H, g->KH, g->sh, g->ph, g->dh);
	int OW = MGPU_CONV_OUT(g->W, g->KW, g->sw, g->pw, g->dw);

	CUDNN(dn->set_tensor4d(st->xd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, g->N, g->C, g->H,
			       g->W));
	CUDNN(dn->set_tensor4d(st->yd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, g->N, g->K, OH, OW));
	CUDNN(dn->set_tensor4d(st->bd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, g->K, 1, 1));
	CUDNN(dn->set_filter4d(st->wd, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, g->K,
			       g->C / g->groups, g->KH, g->KW));
	CUDNN(dn->set_conv2d(st->cd, g->ph, g->pw, g->sh, g->sw, g->dh, g->dw,
			     CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
	CUDNN(dn->set_conv_groups(st->cd, g->groups));
	CUDNN(dn->set_conv_math(st->cd, CUDNN_FMA_MATH));
	return 0;
}

/* Algorithms of the formula's arithmetic: GEMM-like and direct ones,
 * deterministic (no atomics). FFT and Winograd transform the operands and
 * round differently (fp32 Winograd by 1e-5 and more); the others of
 * backward data and filter (ALGO_0, ALGO_3) sum with atomics. */
static int allowed(int dir, int algo)
{
	if (dir == FWD)
		return algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM ||
		       algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM ||
		       algo == CUDNN_CONVOLUTION_FWD_ALGO_GEMM ||
		       algo == CUDNN_CONVOLUTION_FWD_ALGO_DIRECT;
	if (dir == BWD_DATA)
		return algo == CUDNN_CONVOLUTION_BWD_DATA_ALGO_1;
	return algo == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1;
}

/* The best working algorithm of a heuristics list (best first) that
 * allowed() admits, one listed for plain fp32 FMA math before any other
 * (the descriptor's FMA math keeps TF32 off either way); NO_ALGO when none
 * is, and the shape then runs im2col + cuBLAS. */
#define NO_ALGO (-2)
template <typename Perf>
static void pick(const Perf *perf, int got, int dir, int *algo, size_t *ws)
{
	int i, pass;

	for (pass = 0; pass < 2; pass++)
		for (i = 0; i < got; i++)
			if (perf[i].status == CUDNN_STATUS_SUCCESS &&
			    allowed(dir, (int)perf[i].algo) &&
			    perf[i].determinism == CUDNN_DETERMINISTIC &&
			    (pass == 1 || perf[i].mathType == CUDNN_FMA_MATH)) {
				*algo = (int)perf[i].algo;
				*ws = perf[i].memory;
				return;
			}
	*algo = NO_ALGO;
	*ws = 0;
}

/* The algorithm of direction dir for g (descriptors set), chosen once per
 * shape, with the workspace it needs allocated; NO_ALGO when cuDNN has
 * none that pick() takes. */
static int algo_for(struct mgpu_dev *dev, struct conv_state *st, const struct mgpu_conv *g,
		    int dir, int *algo)
{
	const struct mgpu_cudnn *dn = st->dn;
	cudnnConvolutionFwdAlgoPerf_t pf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
	cudnnConvolutionBwdDataAlgoPerf_t pd[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
	cudnnConvolutionBwdFilterAlgoPerf_t pw[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
	struct algo_entry *e = NULL;
	int i, got = 0;
	size_t need;

	for (i = 0; i < ALGO_CACHE && !e; i++)
		if (st->e[i].used && memcmp(&st->e[i].g, g, sizeof *g) == 0)
			e = &st->e[i];
	if (!e) {
		e = &st->e[st->next];
		st->next = (st->next + 1) % ALGO_CACHE;
		memset(e, 0, sizeof *e);
		e->used = 1;
		e->g = *g;
		e->algo[0] = e->algo[1] = e->algo[2] = -1;
	}
	if (e->algo[dir] == -1) {
		if (dir == FWD) {
			CUDNN(dn->fwd_algo(st->h, st->xd, st->wd, st->cd, st->yd,
					   CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &got, pf));
			pick(pf, got, dir, &e->algo[dir], &e->ws[dir]);
		} else if (dir == BWD_DATA) {
			CUDNN(dn->bwd_data_algo(st->h, st->wd, st->yd, st->cd, st->xd,
						CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &got, pd));
			pick(pd, got, dir, &e->algo[dir], &e->ws[dir]);
		} else {
			CUDNN(dn->bwd_filter_algo(st->h, st->xd, st->yd, st->cd, st->wd,
						  CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &got,
						  pw));
			pick(pw, got, dir, &e->algo[dir], &e->ws[dir]);
		}
	}
	need = e->ws[dir];
	if (need > st->ws_bytes) {
		mgpu_dev_free(dev, st->ws, st->ws_bytes); /* cudaFree waits for its users */
		st->ws = NULL;
		st->ws_bytes = 0;
		MGPU_TRY(mgpu_dev_alloc(dev, &st->ws, need));
		st->ws_bytes = need;
	}
	*algo = e->algo[dir];
	return 0;
}

extern "C" int mgpu_cuda_conv_fwd(struct mgpu_dev *dev, const struct mgpu_conv *g, float *y,
				  const float *x, const float *w, const float *bias)
{
	const float one = 1.0f, zero = 0.0f;
	const struct mgpu_cudnn *dn;
	struct conv_state *st;
	int algo;

	MGPU_TRY(ops_check_conv("conv_fwd", g));
	MGPU_TRY(make_current(dev));
	if (g->prec != MGPU_PREC_FP32)
		return mgpu_gemm_conv_fwd(dev, g, y, x, w, bias);
	MGPU_TRY(state_of(dev, &st));
	if (!st->dn)
		return mgpu_gemm_conv_fwd(dev, g, y, x, w, bias);
	if (g->N == 0)
		return 0;
	dn = st->dn;
	MGPU_TRY(set_descs(st, g));
	MGPU_TRY(algo_for(dev, st, g, FWD, &algo));
	if (algo == NO_ALGO)
		return mgpu_gemm_conv_fwd(dev, g, y, x, w, bias);
	CUDNN(dn->fwd(st->h, &one, st->xd, x, st->wd, w, st->cd, (cudnnConvolutionFwdAlgo_t)algo,
		      st->ws, st->ws_bytes, &zero, st->yd, y));
	if (bias)
		CUDNN(dn->add_tensor(st->h, &one, st->bd, bias, &one, st->yd, y));
	return 0;
}

extern "C" int mgpu_cuda_conv_bwd_data(struct mgpu_dev *dev, const struct mgpu_conv *g,
				       float *dx, const float *dy, const float *w)
{
	const float one = 1.0f, zero = 0.0f;
	const struct mgpu_cudnn *dn;
	struct conv_state *st;
	int algo;

	MGPU_TRY(ops_check_conv("conv_bwd_data", g));
	MGPU_TRY(make_current(dev));
	if (g->prec != MGPU_PREC_FP32)
		return mgpu_gemm_conv_bwd_data(dev, g, dx, dy, w);
	MGPU_TRY(state_of(dev, &st));
	if (!st->dn)
		return mgpu_gemm_conv_bwd_data(dev, g, dx, dy, w);
	if (g->N == 0)
		return 0;
	dn = st->dn;
	MGPU_TRY(set_descs(st, g));
	MGPU_TRY(algo_for(dev, st, g, BWD_DATA, &algo));
	if (algo == NO_ALGO)
		return mgpu_gemm_conv_bwd_data(dev, g, dx, dy, w);
	CUDNN(dn->bwd_data(st->h, &one, st->wd, w, st->yd, dy, st->cd,
			   (cudnnConvolutionBwdDataAlgo_t)algo, st->ws, st->ws_bytes, &zero, st->xd,
			   dx));
	return 0;
}

/* cuDNN's beta == 0 does not read the output (NaNs too), as acc == 0. */
extern "C" int mgpu_cuda_conv_bwd_weight(struct mgpu_dev *dev, const struct mgpu_conv *g,
					 float *dw, float *db, const float *x, const float *dy,
					 float acc)
{
	const float one = 1.0f;
	const struct mgpu_cudnn *dn;
	struct conv_state *st;
	int algo;

	MGPU_TRY(ops_check_conv("conv_bwd_weight", g));
	MGPU_TRY(make_current(dev));
	if (g->prec != MGPU_PREC_FP32)
		return mgpu_gemm_conv_bwd_weight(dev, g, dw, db, x, dy, acc);
	MGPU_TRY(state_of(dev, &st));
	if (!st->dn || g->N == 0) /* N == 0: conv_gemm's scaling of the old sums */
		return mgpu_gemm_conv_bwd_weight(dev, g, dw, db, x, dy, acc);
	dn = st->dn;
	MGPU_TRY(set_descs(st, g));
	MGPU_TRY(algo_for(dev, st, g, BWD_FILTER, &algo));
	if (algo == NO_ALGO)
		return mgpu_gemm_conv_bwd_weight(dev, g, dw, db, x, dy, acc);
	CUDNN(dn->bwd_filter(st->h, &one, st->xd, x, st->yd, dy, st->cd,
			     (cudnnConvolutionBwdFilterAlgo_t)algo, st->ws, st->ws_bytes, &acc,
			     st->wd, dw));
	if (db)
		CUDNN(dn->bwd_bias(st->h, &one, st->yd, dy, &acc, st->bd, db));
	return 0;
}

/* ---- im2col, col2im (conv_gemm.c's kernels) ------------------------------ */

static __global__ void k_im2col(float *col, const float *x, struct mgpu_conv g, int OW,
				size_t rows, size_t P)
{
	GRID_STRIDE(i, rows * P)
		col[i] = mgpu_im2col_elem(x, &g, OW, i / P, i % P);
}

static __global__ void k_col2im(float *dx, const float *col, struct mgpu_conv g, int OH, int OW)
{
	size_t hw = (size_t)g.H * g.W;

	GRID_STRIDE(i, (size_t)g.C * hw)
		dx[i] = mgpu_col2im_elem(col, &g, OH, OW, (int)(i / hw), (int)(i % hw / g.W),
					 (int)(i % g.W));
}

extern "C" int mgpu_cuda_im2col(struct mgpu_dev *dev, const struct mgpu_conv *g, float *col,
				const float *x)
{
	int OH = MGPU_CONV_OUT(g->H, g->KH, g->sh, g->ph, g->dh);
	int OW = MGPU_CONV_OUT(g->W, g->KW, g->sw, g->pw, g->dw);
	size_t rows = (size_t)g->C * g->KH * g->KW, P = (size_t)OH * OW;

	MGPU_TRY(ops_check_conv("im2col", g));
	MGPU_TRY(make_current(dev));
	k_im2col<<<blocks_for(rows * P), THREADS, 0, stream_of(dev)>>>(col, x, *g, OW, rows, P);
	LAUNCHED();
	return 0;
}

extern "C" int mgpu_cuda_col2im(struct mgpu_dev *dev, const struct mgpu_conv *g, float *dx,
				const float *col)
{
	int OH = MGPU_CONV_OUT(g->H, g->KH, g->sh, g->ph, g->dh);
	int OW = MGPU_CONV_OUT(g->W, g->KW, g->sw, g->pw, g->dw);

	MGPU_TRY(ops_check_conv("col2im", g));
	MGPU_TRY(make_current(dev));
	k_col2im<<<blocks_for((size_t)g->C * g->H * g->W), THREADS, 0, stream_of(dev)>>>(
		dx, col, *g, OH, OW);
	LAUNCHED();
	return 0;
}

/* ---- pooling, upsampling, act_fwd ---------------------------------------- */

static __global__ void k_pool_fwd(float *y, const float *x, struct mgpu_pool2d g, int OH, int OW)
{
	size_t per = (size_t)OH * OW;
	int arg;

	GRID_STRIDE(i, (size_t)g.N * g.C * per)
		y[i] = mgpu_pool_elem(x + i / per * g.H * g.W, &g, (int)(i % per / OW),
				      (int)(i % OW), &arg);
}

static __global__ void k_pool_bwd(float *dx, const float *dy, const float *x,
				  struct mgpu_pool2d g, int OH, int OW)
{
	size_t hw = (size_t)g.H * g.W, p;

	GRID_STRIDE(i, (size_t)g.N * g.C * hw) {
		p = i / hw;
		dx[i] = mgpu_pool_bwd_elem(x + p * hw, dy + p * OH * OW, &g, OH, OW,
					   (int)(i % hw / g.W), (int)(i % g.W));
	}
}

extern "C" int mgpu_cuda_pool_fwd(struct mgpu_dev *dev, const struct mgpu_pool2d *g, float *y,
				  const float *x)
{
	int OH = MGPU_CONV_OUT(g->H, g->KH, g->sh, g->ph, 1);
	int OW = MGPU_CONV_OUT(g->W, g->KW, g->sw, g->pw, 1);
	size_t n = (size_t)g->N * g->C * OH * OW;

	MGPU_TRY(ops_check_pool("pool_fwd", g));
	if (n == 0)
		return 0;
	MGPU_TRY(make_current(dev));
	k_pool_fwd<<<blocks_for(n), THREADS, 0, stream_of(dev)>>>(y, x, *g, OH, OW);
	LAUNCHED();
	return 0;
}

extern "C" int mgpu_cuda_pool_bwd(struct mgpu_dev *dev, const struct mgpu_pool2d *g, float *dx,
				  const float *dy, const float *x)
{
	int OH = MGPU_CONV_OUT(g->H, g->KH, g->sh, g->ph, 1);
	int OW = MGPU_CONV_OUT(g->W, g->KW, g->sw, g->pw, 1);
	size_t n = (size_t)g->N * g->C * g->H * g->W;

	MGPU_TRY(ops_check_pool("pool_bwd", g));
	if (n == 0)
		return 0;
	MGPU_TRY(make_current(dev));
	k_pool_bwd<<<blocks_for(n), THREADS, 0, stream_of(dev)>>>(dx, dy, x, *g, OH, OW);
	LAUNCHED();
	return 0;
}

static __global__ void k_upsample_fwd(float *y, const float *x, size_t planes, int H, int W,
				      int sh, int sw)
{
	size_t OH = (size_t)H * sh, OW = (size_t)W * sw, per = OH * OW;

	GRID_STRIDE(i, planes * per)
		y[i] = x[(i / per * H + i % per / OW / sh) * W + i % OW / sw];
}

static __global__ void k_upsample_bwd(float *dx, const float *dy, size_t planes, int H, int W,
				      int sh, int sw)
{
	size_t hw = (size_t)H * W;

	GRID_STRIDE(i, planes * hw)
		dx[i] = mgpu_upsample_bwd_elem(dy + i / hw * hw * sh * sw, W, sh, sw,
					       (int)(i % hw / W), (int)(i % W));
}

extern "C" int mgpu_cuda_upsample_fwd(struct mgpu_dev *dev, int N, int C, int H, int W, int sh,
				      int sw, float *y, const float *x)
{
	size_t planes = (size_t)N * C, n;

	MGPU_TRY(ops_check_upsample("upsample_fwd", N, C, H, W, sh, sw));
	n = planes * H * sh * W * sw;
	if (n == 0)
		return 0;
	MGPU_TRY(make_current(dev));
	k_upsample_fwd<<<blocks_for(n), THREADS, 0, stream_of(dev)>>>(y, x, planes, H, W, sh, sw);
	LAUNCHED();
	return 0;
}

extern "C" int mgpu_cuda_upsample_bwd(struct mgpu_dev *dev, int N, int C, int H, int W, int sh,
				      int sw, float *dx, const float *dy)
{
	size_t planes = (size_t)N * C, n;

	MGPU_TRY(ops_check_upsample("upsample_bwd", N, C, H, W, sh, sw));
	n = planes * H * W;
	if (n == 0)
		return 0;
	MGPU_TRY(make_current(dev));
	k_upsample_bwd<<<blocks_for(n), THREADS, 0, stream_of(dev)>>>(dx, dy, planes, H, W, sh,
								      sw);
	LAUNCHED();
	return 0;
}

static __global__ void k_act_fwd(int act, float *Y, const float *X, size_t n)
{
	GRID_STRIDE(i, n)
		Y[i] = mgpu_act_f(act, X[i]);
}

extern "C" int mgpu_cuda_act_fwd(struct mgpu_dev *dev, enum mgpu_act act, float *Y,
				 const float *X, size_t n)
{
	MGPU_TRY(ops_check_act("act_fwd", act));
	if (n == 0)
		return 0;
	MGPU_TRY(make_current(dev));
	k_act_fwd<<<blocks_for(n), THREADS, 0, stream_of(dev)>>>((int)act, Y, X, n);
	LAUNCHED();
	return 0;
}

/* ---- BatchNorm, GroupNorm: one block per channel or group ---------------- */

/* The block's sum of v (THREADS threads), in a fixed tree order. */
static __device__ double block_sum(double v, double *sh)
{
	int s;

	sh[threadIdx.x] = v;
	__syncthreads();
	for (s = THREADS / 2; s > 0; s /= 2) {
		if ((int)threadIdx.x < s)
			sh[threadIdx.x] += sh[threadIdx.x + s];
		__syncthreads();
	}
	v = sh[0];
	__syncthreads();
	return v;
}

/* Element j of channel c's N HW values. */
static __device__ size_t bn_at(struct mgpu_bn bn, int c, size_t j)
{
	return ((size_t)(j / bn.HW) * bn.C + c) * bn.HW + j % bn.HW;
}

static __global__ void k_bn_stats(float *stats, const float *x, const float *shift,
				  struct mgpu_bn bn)
{
	__shared__ double sh[THREADS];
	int c = blockIdx.x;
	double s1 = 0.0, s2 = 0.0, v;
	size_t j, m = (size_t)bn.N * bn.HW;

	for (j = threadIdx.x; j < m; j += THREADS) {
		v = (double)x[bn_at(bn, c, j)] - (shift ? shift[c] : 0.0f);
		s1 += v;
		s2 += v * v;
	}
	s1 = block_sum(s1, sh);
	s2 = block_sum(s2, sh);
	if (threadIdx.x == 0) {
		stats[c] = (float)s1;
		stats[bn.C + c] = (float)s2;
	}
}

extern "C" int mgpu_cuda_bn_stats(struct mgpu_dev *dev, const struct mgpu_bn *bn, float *stats,
				  const float *x, const float *shift)
{
	MGPU_TRY(ops_check_bn("bn_stats", bn));
	if (bn->C == 0)
		return 0;
	MGPU_TRY(make_current(dev));
	k_bn_stats<<<bn->C, THREADS, 0, stream_of(dev)>>>(stats, x, shift, *bn);
	LAUNCHED();
	return 0;
}

/* Per channel: the moments (train) or the running ones (eval), the
 * running update, and mean, rstd saved. */
static __global__ void k_bn_moments(float *mean, float *rstd, const float *stats,
				    const float *shift, float *rm, float *rv, struct mgpu_bn bn)
{
	float m, var, r;

	GRID_STRIDE(c, (size_t)bn.C) {
		if (bn.train) {
			mgpu_bn_moments(stats[c], stats[bn.C + c], bn.count,
					shift ? shift[c] : 0.0f, bn.eps, &m, &var, &r);
			rm[c] = mgpu_bn_running(rm[c], m, bn.momentum);
			rv[c] = mgpu_bn_running(rv[c], (float)(var * bn.count / (bn.count - 1.0)),
						bn.momentum);
		} else {
			mgpu_bn_moments(0.0f, rv[c], 1.0, rm[c], bn.eps, &m, &var, &r);
		}
		mean[c] = m;
		rstd[c] = r;
	}
}

static __global__ void k_bn_apply(float *y, const float *x, const float *mean,
				  const float *rstd, const float *gamma, const float *beta,
				  struct mgpu_bn bn)
{
	int c;

	GRID_STRIDE(i, (size_t)bn.N * bn.C * bn.HW) {
		c = (int)(i / bn.HW % bn.C);
		y[i] = mgpu_ln_fwd_elem(x[i], mean[c], rstd[c], gamma[c], beta[c]);
	}
}

extern "C" int mgpu_cuda_bn_fwd(struct mgpu_dev *dev, const struct mgpu_bn *bn, float *y,
				float *mean, float *rstd, const float *x, const float *stats,
				const float *shift, const float *gamma, const float *beta,
				float *running_mean, float *running_var)
{
	size_t n = (size_t)bn->N * bn->C * bn->HW;

	MGPU_TRY(ops_check_bn("bn_fwd", bn));
	if (bn->C == 0)
		return 0;
	MGPU_TRY(make_current(dev));
	k_bn_moments<<<blocks_for((size_t)bn->C), THREADS, 0, stream_of(dev)>>>(
		mean, rstd, stats, shift, running_mean, running_var, *bn);
	LAUNCHED();
	if (n == 0)
		return 0;
	k_bn_apply<<<blocks_for(n), THREADS, 0, stream_of(dev)>>>(y, x, mean, rstd, gamma, beta,
								   *bn);
	LAUNCHED();
	return 0;
}

static __global__ void k_bn_bwd_stats(float *dstats, float *dgamma, float *dbeta,
				      const float *dy, const float *x, const float *mean,
				      const float *rstd, struct mgpu_bn bn, float acc)
{
	__shared__ double sh[THREADS];
	int c = blockIdx.x;
	double s1 = 0.0, s2 = 0.0;
	size_t j, k, m = (size_t)bn.N * bn.HW;

	for (j = threadIdx.x; j < m; j += THREADS) {
		k = bn_at(bn, c, j);
		s1 += dy[k];
		s2 += (double)dy[k] * ((x[k] - mean[c]) * rstd[c]);
	}
	s1 = block_sum(s1, sh);
	s2 = block_sum(s2, sh);
	if (threadIdx.x == 0) {
		dstats[c] = (float)s1;
		dstats[bn.C + c] = (float)s2;
		mgpu_acc_store(&dbeta[c], acc, (float)s1);
		mgpu_acc_store(&dgamma[c], acc, (float)s2);
	}
}

extern "C" int mgpu_cuda_bn_bwd_stats(struct mgpu_dev *dev, const struct mgpu_bn *bn,
				      float *dstats, float *dgamma, float *dbeta, const float *dy,
				      const float *x, const float *mean, const float *rstd,
				      float acc)
{
	MGPU_TRY(ops_check_bn("bn_bwd_stats", bn));
	if (bn->C == 0)
		return 0;
	MGPU_TRY(make_current(dev));
	k_bn_bwd_stats<<<bn->C, THREADS, 0, stream_of(dev)>>>(dstats, dgamma, dbeta, dy, x, mean,
							       rstd, *bn, acc);
	LAUNCHED();
	return 0;
}

static __global__ void k_bn_bwd_data(float *dx, const float *dy, const float *x,
				     const float *mean, const float *rstd, const float *gamma,
				     const float *dstats, struct mgpu_bn bn)
{
	float mdy = 0.0f, mdyx = 0.0f;
	int c;

	GRID_STRIDE(i, (size_t)bn.N * bn.C * bn.HW) {
		c = (int)(i / bn.HW % bn.C);
		if (bn.train) {
			mdy = (float)(dstats[c] / bn.count);
			mdyx = (float)(dstats[bn.C + c] / bn.count);
		}
		dx[i] = mgpu_bn_bwd_elem(dy[i], x[i], mean[c], rstd[c], gamma[c], mdy, mdyx,
					 bn.train);
	}
}

extern "C" int mgpu_cuda_bn_bwd_data(struct mgpu_dev *dev, const struct mgpu_bn *bn, float *dx,
				     const float *dy, const float *x, const float *mean,
				     const float *rstd, const float *gamma, const float *dstats)
{
	size_t n = (size_t)bn->N * bn->C * bn->HW;

	MGPU_TRY(ops_check_bn("bn_bwd_data", bn));
	if (n == 0)
		return 0;
	MGPU_TRY(make_current(dev));
	k_bn_bwd_data<<<blocks_for(n), THREADS, 0, stream_of(dev)>>>(dx, dy, x, mean, rstd, gamma,
								      dstats, *bn);
	LAUNCHED();
	return 0;
}

/* One block per (n, group): its M = C/G HW values are contiguous. */
static __global__ void k_gn_fwd(float *y, float *mean, float *rstd, const float *x,
				const float *gamma, const float *beta, int C, int HW, int G,
				float eps)
{
	__shared__ double sh[THREADS];
	size_t r = blockIdx.x, M = (size_t)(C / G) * HW, off = r * M, i;
	double s = 0.0, d;
	float m, rs;
	int c;

	for (i = threadIdx.x; i < M; i += THREADS)
		s += x[off + i];
	m = (float)(block_sum(s, sh) / (double)M);
	s = 0.0;
	for (i = threadIdx.x; i < M; i += THREADS) {
		d = (double)x[off + i] - m;
		s += d * d;
	}
	rs = (float)(1.0 / sqrt(block_sum(s, sh) / (double)M + (double)eps));
	if (threadIdx.x == 0) {
		mean[r] = m;
		rstd[r] = rs;
	}
	for (i = threadIdx.x; i < M; i += THREADS) {
		c = (int)(r % G) * (C / G) + (int)(i / HW);
		y[off + i] = mgpu_ln_fwd_elem(x[off + i], m, rs, gamma[c], beta[c]);
	}
}

static __global__ void k_gn_bwd_rows(float *dx, const float *dy, const float *x,
				     const float *mean, const float *rstd, const float *gamma,
				     int C, int HW, int G)
{
	__shared__ double sh[THREADS];
	size_t r = blockIdx.x, M = (size_t)(C / G) * HW, off = r * M, i;
	double a = 0.0, b = 0.0, xhat;
	int c;

	for (i = threadIdx.x; i < M; i += THREADS) {
		c = (int)(r % G) * (C / G) + (int)(i / HW);
		xhat = ((double)x[off + i] - mean[r]) * rstd[r];
		a += (double)dy[off + i] * gamma[c];
		b += (double)dy[off + i] * gamma[c] * xhat;
	}
	a = block_sum(a, sh);
	b = block_sum(b, sh);
	for (i = threadIdx.x; i < M; i += THREADS) {
		c = (int)(r % G) * (C / G) + (int)(i / HW);
		dx[off + i] = mgpu_gn_bwd_elem(dy[off + i], x[off + i], mean[r], rstd[r], gamma[c],
					       (float)(a / (double)M), (float)(b / (double)M));
	}
}

/* One block per channel: dgamma, dbeta over the N planes of it. */
static __global__ void k_gn_bwd_cols(float *dgamma, float *dbeta, const float *dy,
				     const float *x, const float *mean, const float *rstd, int N,
				     int C, int HW, int G, float acc)
{
	__shared__ double sh[THREADS];
	int c = blockIdx.x;
	double sg = 0.0, sb = 0.0;
	size_t j, k, r, m = (size_t)N * HW;

	for (j = threadIdx.x; j < m; j += THREADS) {
		k = ((j / HW) * C + c) * HW + j % HW;
		r = (j / HW) * G + c / (C / G);
		sb += dy[k];
		sg += (double)dy[k] * ((x[k] - mean[r]) * rstd[r]);
	}
	sg = block_sum(sg, sh);
	sb = block_sum(sb, sh);
	if (threadIdx.x == 0) {
		mgpu_acc_store(&dgamma[c], acc, (float)sg);
		mgpu_acc_store(&dbeta[c], acc, (float)sb);
	}
}

extern "C" int mgpu_cuda_gn_fwd(struct mgpu_dev *dev, int N, int C, int HW, int G, float *y,
				float *mean, float *rstd, const float *x, const float *gamma,
				const float *beta, float eps)
{
	MGPU_TRY(ops_check_gn("gn_fwd", N, C, HW, G));
	if (N == 0)
		return 0;
	MGPU_TRY(make_current(dev));
	k_gn_fwd<<<(unsigned)(N * G), THREADS, 0, stream_of(dev)>>>(y, mean, rstd, x, gamma, beta,
								      C, HW, G, eps);
	LAUNCHED();
	return 0;
}

extern "C" int mgpu_cuda_gn_bwd(struct mgpu_dev *dev, int N, int C, int HW, int G, float *dx,
				float *dgamma, float *dbeta, const float *dy, const float *x,
				const float *mean, const float *rstd, const float *gamma,
				float acc)
{
	MGPU_TRY(ops_check_gn("gn_bwd", N, C, HW, G));
	MGPU_TRY(make_current(dev));
	if (N > 0) {
		k_gn_bwd_rows<<<(unsigned)(N * G), THREADS, 0, stream_of(dev)>>>(
			dx, dy, x, mean, rstd, gamma, C, HW, G);
		LAUNCHED();
	}
	k_gn_bwd_cols<<<(unsigned)C, THREADS, 0, stream_of(dev)>>>(dgamma, dbeta, dy, x, mean,
								   rstd, N, C, HW, G, acc);
	LAUNCHED();
	return 0;
}

/* ---- per-channel bias --------------------------------------------------- */

static __global__ void k_chan_bias(float *y, const float *bias, int C, int HW, size_t n)
{
	GRID_STRIDE(i, n)
		y[i] += bias[i / HW % C];
}

extern "C" int mgpu_cuda_chan_bias(struct mgpu_dev *dev, int N, int C, int HW, float *y,
				   const float *bias)
{
	size_t n = (size_t)N * C * HW;

	MGPU_TRY(ops_check_chan("chan_bias", N, C, HW));
	if (n == 0)
		return 0;
	MGPU_TRY(make_current(dev));
	k_chan_bias<<<blocks_for(n), THREADS, 0, stream_of(dev)>>>(y, bias, C, HW, n);
	LAUNCHED();
	return 0;
}

/* One block per channel, as BatchNorm's sums. */
static __global__ void k_chan_sum(float *db, const float *dy, int N, int C, int HW, float acc)
{
	__shared__ double sh[THREADS];
	int c = blockIdx.x;
	double s = 0.0;
	size_t j, m = (size_t)N * HW;

	for (j = threadIdx.x; j < m; j += THREADS)
		s += dy[((j / HW) * C + c) * HW + j % HW];
	s = block_sum(s, sh);
	if (threadIdx.x == 0)
		mgpu_acc_store(&db[c], acc, (float)s);
}

extern "C" int mgpu_cuda_chan_sum(struct mgpu_dev *dev, int N, int C, int HW, float *db,
				  const float *dy, float acc)
{
	MGPU_TRY(ops_check_chan("chan_sum", N, C, HW));
	if (C == 0)
		return 0;
	MGPU_TRY(make_current(dev));
	k_chan_sum<<<(unsigned)C, THREADS, 0, stream_of(dev)>>>(db, dy, N, C, HW, acc);
	LAUNCHED();
	return 0;
}
