/*
 * rows_cuda.cu - the cuda backend's row and column ops (col_sum, ln_fwd,
 * ln_bwd, xent of ops.h): a warp per row, a block per column tile.
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
#include <cuda_runtime.h> /* dim3 */
#include <math.h>         /* NAN */

#include "core/err.h"       /* MGPU_TRY */
#include "ops/cuda_check.h" /* LAUNCHED */
#include "ops/cuda_kern.h"  /* make_current, stream_of, THREADS, WARP, lane_id */
#include "ops/elem.h"       /* the per-row math, __host__ __device__ here */
#include "ops/loops.h"      /* ops_check_* */
#include "ops/ops_cuda.h"   /* the prototypes */
#define ROW_WARPS (THREADS / WARP)

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

extern "C" int mgpu_cuda_col_sum(struct mgpu_dev *dev, float *db, const float *dY, int B, int D,
				 float beta)
{
	MGPU_TRY(ops_check_rows("col_sum", B, D));
	if (D == 0)
		return 0;
	MGPU_TRY(make_current(dev));
	k_col_sum<<<col_blocks(D), dim3(COL_W, COL_H), 0, stream_of(dev)>>>(
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

extern "C" int mgpu_cuda_ln_fwd(struct mgpu_dev *dev, float *Y, float *mean, float *rstd,
				const float *X, const float *gamma, const float *beta, int B, int D,
				float eps)
{
	MGPU_TRY(ops_check_rows("ln_fwd", B, D));
	if (B == 0 || D == 0)
		return 0;
	MGPU_TRY(make_current(dev));
	k_ln_fwd<<<row_blocks((size_t)B), THREADS, 0, stream_of(dev)>>>(
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

extern "C" int mgpu_cuda_ln_bwd(struct mgpu_dev *dev, float *dX, float *dgamma, float *dbeta,
				const float *dY, const float *X, const float *mean,
				const float *rstd, const float *gamma, int B, int D, float acc)
{
	cudaStream_t s = stream_of(dev);

	MGPU_TRY(ops_check_rows("ln_bwd", B, D));
	if (D == 0)
		return 0;
	MGPU_TRY(make_current(dev));
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

extern "C" int mgpu_cuda_xent(struct mgpu_dev *dev, float *dlogits, float *row_loss,
			      float *row_correct, const float *logits, const int32_t *labels, int B,
			      int C, float grad_scale)
{
	MGPU_TRY(ops_check_xent(B, C));
	if (B == 0)
		return 0;
	MGPU_TRY(make_current(dev));
	k_xent<<<row_blocks((size_t)B), THREADS, 0, stream_of(dev)>>>(
		dlogits, row_loss, row_correct, logits, labels, (size_t)B, C, grad_scale);
	LAUNCHED();
	return 0;
}
