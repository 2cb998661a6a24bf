/*
 * attn_gemm.cu - the cuda backend's attn_fwd and attn_bwd (ops.h): for T
 * from MGPU_ATTN_GEMM_MIN_T to MGPU_ATTN_GEMM_MAX_T, attn_gemm.c's form
 * (cuBLAS strided-batched products, through the table's sgemm_strided or
 * gemm_bf16, and the two row passes below over a (T,T) scratch); shorter
 * and longer contexts keep attn_cuda.cu's fused kernels.
 *
 * Row passes: a block per row of S, the row staged in shared memory (the
 * outputs share its bytes under bf16), reductions in a fixed tree order
 * (the same bits every run), per-element math elem.h's as on the host
 * (attn_gemm.c's mgpu_attn_rows_host, which the CPU tests run).
 *
 * Scratch: one buffer per struct mgpu_dev, from mgpu_dev_alloc (so peak
 * memory counts it), grown to the largest call and kept until the device
 * closes (mgpu_cuda_attn_gemm_release, from ops_cuda.cu's fini). Growing
 * frees the old one with cudaFree, which waits for the work queued on it.
 * A device is used by one thread at a time; the table of devices is
 * shared, so it is locked.
 */
#include <cuda_runtime.h> /* launches */
#include <math.h>         /* INFINITY */
#include <pthread.h>      /* pthread_mutex_t */
#include <stdint.h>       /* uint16_t */

#include "core/err.h"       /* mgpu_err, MGPU_TRY */
#include "ops/attn_gemm.h"  /* the driver, struct mgpu_attn_rows */
#include "ops/cuda_check.h" /* CU, LAUNCHED */
#include "ops/elem.h"       /* mgpu_attn_causal_p, mgpu_attn_causal_pds */
#include "ops/loops.h"      /* ops_check_flash */
#include "ops/cuda_kern.h"  /* THREADS, WARP, stream_of, make_current */
#include "ops/ops_cuda.h"   /* mgpu_cuda_attn_fwd */

#define WARPS (THREADS / WARP)

/* v summed (or maxed) over the block, in every thread: xor shuffles in
 * each warp, then warp 0 over the warps' values; a fixed order. red[]
 * holds WARPS + 1 floats; the call ends with a barrier. */
static __device__ float block_reduce(float v, float *red, int max)
{
	unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;

	for (int o = 16; o > 0; o /= 2) {
		float u = __shfl_xor_sync(0xffffffffu, v, o);
		v = max ? mgpu_max_merge(v, u) : v + u;
	}
	if (lane == 0)
		red[warp] = v;
	__syncthreads();
	if (warp == 0) {
		v = lane < WARPS ? red[lane] : (max ? -INFINITY : 0.0f);
		for (int o = 16; o > 0; o /= 2) {
			float u = __shfl_xor_sync(0xffffffffu, v, o);
			v = max ? mgpu_max_merge(v, u) : v + u;
		}
		if (lane == 0)
			red[WARPS] = v;
	}
	__syncthreads();
	return red[WARPS];
}

/* Element j of an operand row: a float, or a bf16 value. */
static __device__ void put(float *row, int j, float x, int bf16)
{
	if (bf16)
		((uint16_t *)row)[j] = mgpu_bf16_from_f32(x);
	else
		row[j] = x;
}

/* Row r of nb*T: lse and P = softmax(scale S) over the keys it sees. */
static __global__ void __launch_bounds__(THREADS)
k_rows_fwd(float *S, float *lse, int T, float scale, int bf16)
{
	extern __shared__ float sh[]; /* the row's T scores */
	__shared__ float red[WARPS + 1];
	size_t r = blockIdx.x;
	float *row = S + r * (size_t)T, mx = -INFINITY, sum = 0.0f;
	int i = (int)(r % (size_t)T);

	for (int j = threadIdx.x; j <= i; j += THREADS) {
		sh[j] = row[j];
		mx = mgpu_max_merge(mx, scale * sh[j]);
	}
	mx = block_reduce(mx, red, 1);
	for (int j = threadIdx.x; j <= i; j += THREADS)
		sum += mgpu_exp_neg(scale * sh[j] - mx);
	sum = block_reduce(sum, red, 0);
	if (threadIdx.x == 0)
		lse[r] = mgpu_attn_lse(mx, sum);
	for (int j = threadIdx.x; j < T; j += THREADS)
		put(row, j, mgpu_attn_causal_p(j <= i ? sh[j] : 0.0f, scale, mx, sum, i, j), bf16);
}

/* Row r: P over S and dS over dP, from the saved lse and D = dy . y. */
static __global__ void __launch_bounds__(THREADS)
k_rows_bwd(float *S, float *dP, const float *y, const float *dy, const float *lse, int T,
	   int Dh, float scale, int bf16)
{
	extern __shared__ float sh[]; /* the row's T scores, then its T dp */
	__shared__ float red[WARPS + 1];
	size_t r = blockIdx.x;
	float *srow = S + r * (size_t)T, *dprow = dP + r * (size_t)T, D = 0.0f, L = lse[r];
	float *dps = sh + T, p, ds;
	int i = (int)(r % (size_t)T);

	for (int d = threadIdx.x; d < Dh; d += THREADS)
		D += dy[r * (size_t)Dh + d] * y[r * (size_t)Dh + d];
	for (int j = threadIdx.x; j <= i; j += THREADS) {
		sh[j] = srow[j];
		dps[j] = dprow[j];
	}
	D = block_reduce(D, red, 0); /* its barriers also end the staging */
	for (int j = threadIdx.x; j < T; j += THREADS) {
		mgpu_attn_causal_pds(j <= i ? sh[j] : 0.0f, j <= i ? dps[j] : 0.0f, L, D, scale, i,
				     j, &p, &ds);
		put(srow, j, p, bf16);
		put(dprow, j, ds, bf16);
	}
}

static int rows_fwd(struct mgpu_dev *dev, float *S, float *lse, int nb, int T, float scale,
		    int bf16)
{
	cudaStream_t st = stream_of(dev);

	k_rows_fwd<<<(unsigned)((size_t)nb * T), THREADS, (size_t)T * sizeof(float), st>>>(
		S, lse, T, scale, bf16);
	LAUNCHED();
	return 0;
}

static int rows_bwd(struct mgpu_dev *dev, float *S, float *dP, const float *y, const float *dy,
		    const float *lse, int nb, int T, int Dh, float scale, int bf16)
{
	cudaStream_t st = stream_of(dev);

	k_rows_bwd<<<(unsigned)((size_t)nb * T), THREADS, 2 * (size_t)T * sizeof(float), st>>>(
		S, dP, y, dy, lse, T, Dh, scale, bf16);
	LAUNCHED();
	return 0;
}

static const struct mgpu_attn_rows rows_cuda = { rows_fwd, rows_bwd };

/* ---- scratch, one buffer per open device ---- */

#define MAX_DEVS 64

static struct {
	struct mgpu_dev *dev;
	void *p;
	size_t bytes;
} slots[MAX_DEVS];
static pthread_mutex_t slots_lock = PTHREAD_MUTEX_INITIALIZER;

/* dev's slot (made when absent), or NULL when the table is full. */
static int slot_of(struct mgpu_dev *dev)
{
	int i, free_at = -1;

	for (i = 0; i < MAX_DEVS; i++) {
		if (slots[i].dev == dev)
			return i;
		if (!slots[i].dev && free_at < 0)
			free_at = i;
	}
	if (free_at >= 0)
		slots[free_at].dev = dev;
	return free_at;
}

static int scratch(struct mgpu_dev *dev, size_t bytes, void **out)
{
	int i, rc = 0;

	pthread_mutex_lock(&slots_lock);
	i = slot_of(dev);
	pthread_mutex_unlock(&slots_lock);
	if (i < 0)
		return mgpu_err(MGPU_EINVAL, "attention: more than %d cuda devices open", MAX_DEVS);
	/* the slot is dev's: only dev's thread touches it from here */
	if (slots[i].bytes < bytes) {
		mgpu_dev_free(dev, slots[i].p, slots[i].bytes);
		slots[i].p = NULL;
		slots[i].bytes = 0;
		rc = mgpu_dev_alloc(dev, &slots[i].p, bytes);
		if (rc < 0)
			return rc;
		slots[i].bytes = bytes;
	}
	*out = slots[i].p;
	return 0;
}

extern "C" void mgpu_cuda_attn_gemm_release(struct mgpu_dev *dev)
{
	int i;

	pthread_mutex_lock(&slots_lock);
	for (i = 0; i < MAX_DEVS; i++)
		if (slots[i].dev == dev) {
			mgpu_dev_free(dev, slots[i].p, slots[i].bytes);
			slots[i].dev = NULL;
			slots[i].p = NULL;
			slots[i].bytes = 0;
		}
	pthread_mutex_unlock(&slots_lock);
}

static int carve(struct mgpu_dev *dev, int BH, int T, int Dh, int bf16,
		 struct mgpu_attn_scratch *sc)
{
	void *p = NULL;

	MGPU_TRY(make_current(dev));
	MGPU_TRY(scratch(dev, mgpu_attn_gemm_scratch_bytes(BH, T, Dh, bf16), &p));
	mgpu_attn_gemm_carve(sc, p, BH, T, Dh, bf16);
	return 0;
}

extern "C" int mgpu_cuda_attn_any_fwd(struct mgpu_dev *dev, float *y, float *lse,
				      const float *q, const float *k, const float *v, int BH,
				      int T, int Dh, float scale, enum mgpu_prec prec)
{
	struct mgpu_attn_scratch sc;
	int bf16 = prec == MGPU_PREC_BF16;

	MGPU_TRY(ops_check_flash("attn_fwd", BH, T, Dh, prec));
	if (!mgpu_attn_gemm_takes(BH, T))
		return mgpu_cuda_attn_fwd(dev, y, lse, q, k, v, BH, T, Dh, scale, prec);
	MGPU_TRY(carve(dev, BH, T, Dh, bf16, &sc));
	return mgpu_attn_gemm_fwd(dev, &rows_cuda, &sc, y, lse, q, k, v, BH, T, Dh, scale, bf16);
}

extern "C" int mgpu_cuda_attn_any_bwd(struct mgpu_dev *dev, float *dq, float *dk, float *dv,
				      const float *q, const float *k, const float *v,
				      const float *y, const float *dy, const float *lse, int BH,
				      int T, int Dh, float scale, enum mgpu_prec prec)
{
	struct mgpu_attn_scratch sc;
	int bf16 = prec == MGPU_PREC_BF16;

	MGPU_TRY(ops_check_flash("attn_bwd", BH, T, Dh, prec));
	if (!mgpu_attn_gemm_takes(BH, T))
		return mgpu_cuda_attn_bwd(dev, dq, dk, dv, q, k, v, y, dy, lse, BH, T, Dh, scale,
					  prec);
	MGPU_TRY(carve(dev, BH, T, Dh, bf16, &sc));
	return mgpu_attn_gemm_bwd(dev, &rows_cuda, &sc, dq, dk, dv, q, k, v, y, dy, lse, BH, T,
				  Dh, scale, bf16);
}
