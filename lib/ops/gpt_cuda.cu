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

extern "C" int mgpu_cuda_emb_bwd(struct mgpu_dev *dev, float *dwte, float *dwpe, const float *dY,
				 const int32_t *ids, int B, int T, int V, int D, float acc)
{
	cudaStream_t s = stream_of(dev);

	MGPU_TRY(ops_check_emb("emb_bwd", B, T, V, D));
	if (D == 0)
		return 0;
	MGPU_TRY(make_current(dev));
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
