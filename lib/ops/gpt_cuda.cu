/*
 * gpt_cuda.cu - the cuda backend's transformer ops besides attention (add,
 * emb_fwd, emb_bwd, heads_split, heads_merge of ops.h): thin kernels over
 * elem.h, and a deterministic embedding backward without atomics.
 */
#include <cuda_runtime.h> /* kernel launches */
#include <math.h>         /* NAN */
#include <stdint.h>       /* int32_t */

#include "core/err.h"       /* MGPU_TRY */
#include "ops/cuda_check.h" /* LAUNCHED */
#include "ops/cuda_kern.h"  /* make_current, stream_of, GRID_STRIDE, WARP, lane_id */
#include "ops/elem.h"       /* mgpu_emb_elem, mgpu_heads_index, mgpu_acc_store */
#include "ops/loops.h"      /* ops_check_emb, ops_check_heads */
#include "ops/ops_cuda.h"   /* the prototypes */

static __global__ void k_add(float *Y, const float *X1, const float *X2, size_t n)
{
	GRID_STRIDE(t, n)
		Y[t] = X1[t] + X2[t];
}

extern "C" int mgpu_cuda_add(struct mgpu_dev *dev, float *Y, const float *X1, const float *X2,
			     size_t n)
{
	if (n == 0)
		return 0;
	MGPU_TRY(make_current(dev));
	k_add<<<blocks_for(n), THREADS, 0, stream_of(dev)>>>(Y, X1, X2, n);
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

extern "C" int mgpu_cuda_emb_fwd(struct mgpu_dev *dev, float *Y, const int32_t *ids,
				 const float *wte, const float *wpe, int B, int T, int V, int D)
{
	size_t n = (size_t)B * T * D;

	MGPU_TRY(ops_check_emb("emb_fwd", B, T, V, D));
	if (n == 0)
		return 0;
	MGPU_TRY(make_current(dev));
	k_emb_fwd<<<blocks_for(n), THREADS, 0, stream_of(dev)>>>(Y, ids, wte, wpe, T, V,
									D, n);
	LAUNCHED();
	return 0;
}

/* One thread per (position, column), coalesced across columns; B is small. */
static __global__ void k_emb_pos(float *dwpe, const float *dY, int B, int T, int D, float acc)
{
	GRID_STRIDE(t, (size_t)T * D)
		mgpu_emb_pos_col(dY, B, T, D, (int)(t / D), (int)(t % D), acc, dwpe);
}

extern "C" int mgpu_cuda_emb_bwd(struct mgpu_dev *dev, float *dwte, float *dwpe, const float *dY,
				 const int32_t *ids, int B, int T, int V, int D, float acc)
{
	cudaStream_t s = stream_of(dev);

	MGPU_TRY(ops_check_emb("emb_bwd", B, T, V, D));
	if (D == 0)
		return 0;
	MGPU_TRY(make_current(dev));
	MGPU_TRY(mgpu_cuda_emb_tok(dev, dwte, dY, ids, (size_t)B * T, V, D, acc)); /* emb_cuda.cu */
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
	MGPU_TRY(make_current(dev));
	k_heads<<<blocks_for(n), THREADS, 0, stream_of(dev)>>>(Y, X, ld, T, H, Dh, n,
								      merge);
	LAUNCHED();
	return 0;
}

extern "C" int mgpu_cuda_heads_split(struct mgpu_dev *dev, float *Y, const float *X, int ldx, int B,
				     int T, int H, int Dh)
{
	return heads(dev, Y, X, ldx, B, T, H, Dh, 0);
}

extern "C" int mgpu_cuda_heads_merge(struct mgpu_dev *dev, float *Y, int ldy, const float *X, int B,
				     int T, int H, int Dh)
{
	return heads(dev, Y, X, ldy, B, T, H, Dh, 1);
}
