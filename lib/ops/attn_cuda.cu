/*
 * attn_cuda.cu - the cuda backend's fused causal attention (attn_fwd and
 * attn_bwd; ops.h states what they compute), flash-attention style: tiles
 * of q, k, v pass through shared memory and no (T,T) score or probability
 * ever reaches memory. What it shares with attn_wmma.cu (block positions,
 * tile loads, row stores, shared-memory layouts) is attn_tile.h's.
 *
 * Three kernels, each a block of THREADS threads per (block of BH, tile):
 *   k_attn_fwd  per query tile of BR rows, over the key tiles it can see
 *               (BC keys each; tiles past the diagonal never visited), in
 *               two passes: the rows' max and sum of exponentials (online,
 *               elem.h's mgpu_attn_merge), then y = sum r(p) r(v) with the
 *               final p = exp(t - mx) / sum, the definition's p exactly
 *               (so bf16 rounds the same normalised p as ref and cpu do).
 *   k_attn_dkv  per key tile of BR rows, over the query tiles (BC rows)
 *               at or past it: dk, dv accumulate in registers.
 *   k_attn_dq   per query tile of BR rows, over its key tiles: dq in
 *               registers. dq gets its own pass over the keys instead of
 *               atomics: every output is summed by one thread in a fixed
 *               order, so results are the same on every run.
 * The backward recomputes p from q, k and the saved lse, and D_i = dy . y
 * per query row (no scratch memory).
 *
 * Thread geometry, the same in every kernel: thread (tx, ty) = (t % TX,
 * t / TX) owns rows ty*RPT .. ty*RPT + RPT-1 of the resident tile (BR =
 * TY * RPT rows), the streamed tile's rows tx, tx + TX (BC = TX * CPT) as
 * score columns, and the head columns tx, tx + TX, ... (DPT of them, up
 * to MGPU_ATTN_MAX_DH). The TX threads of a row are one half of a warp
 * (TX = 16 lanes, aligned), so row reductions are xor shuffles inside it.
 * Tiles in shared memory have rows Dh + 1 floats apart (score tiles BC +
 * 1): the 16 rows a half-warp reads at one column fall in 16 banks.
 *
 * Arithmetic: ops.h's definition in elem.h's functions (mgpu_attn_in,
 * mgpu_exp_neg, mgpu_softmax_elem, mgpu_attn_p, mgpu_attn_ds,
 * mgpu_attn_lse), as ref and cpu; dot products
 * and products accumulate in fp32 with explicit fused multiply-adds
 * (__fmaf_rn: the build's -fmad=false forbids only implicit contraction).
 * bf16: operands are rounded as they enter shared memory, p and ds before
 * they are stored for the products; fp32 CUDA cores multiply the rounded
 * values exactly and sum in fp32. On devices of compute capability 8.0
 * and newer the bf16 op launches attn_wmma.cu's tensor-core kernels
 * instead (same grid: BR == MGPU_CUDA_ATTN_TC_ROWS); these serve fp32,
 * sm_75, and a device whose shared memory is too small for those.
 *
 * Synchronisation: every loop bound and every __syncthreads depends only
 * on the block's tile, never on a thread's row, so the whole block
 * reaches each barrier; shuffles run with all 32 lanes of every warp.
 */
#include <cuda_runtime.h> /* kernel launches */
#include <limits.h>       /* INT_MAX */
#include <math.h>         /* INFINITY */

#include "core/err.h"       /* mgpu_err, MGPU_TRY */
#include "ops/attn_tile.h"  /* sees, attn_load, attn_row_dots, attn_carve, ... */
#include "ops/cuda_check.h" /* CU, LAUNCHED */
#include "ops/cuda_kern.h"  /* THREADS, stream_of, make_current */
#include "ops/elem.h"       /* the per-element math */
#include "ops/loops.h"      /* ops_check_flash */
#include "ops/ops_cuda.h"   /* mgpu_cuda_smem_optin, mgpu_cuda_attn_tc, the prototypes */

#define TX 16
#define TY (THREADS / TX)
#define RPT 4                          /* resident rows per thread */
#define BR (TY * RPT)                  /* resident tile: 64 rows */
#define CPT 2                          /* streamed rows (score columns) per thread */
#define BC (TX * CPT)                  /* streamed tile: 32 rows */
#define DPT (MGPU_ATTN_MAX_DH / TX)    /* head columns per thread: 8 */
#define LDS (BC + 1)                   /* row stride of a score tile */
static_assert(TX * TY == THREADS && 32 % TX == 0, "a row's threads: half a warp");
static_assert(MGPU_ATTN_MAX_DH % TX == 0, "head columns split evenly");
static_assert(THREADS % BR == 0 && THREADS % BC == 0, "row_dots' groups");
static_assert(BR == MGPU_CUDA_ATTN_TC_ROWS, "attn_wmma.cu's kernels take this grid");

/* ---- shared-memory tiles ------------------------------------------------- */

/* r(x) of a tile's elements: rounded to bf16 under bf16 (elem.h). */
struct attn_round {
	int bf16;
	__device__ float operator()(float x) const { return mgpu_attn_in(x, bf16); }
};

/* dst (nrows, Dh; rows ld apart) = r(rows r0 .. r0 + nrows - 1 of the
 * (T,Dh) block src), 0 past T. */
static __device__ void load_tile(float *dst, const float *src, int r0, int nrows, int T,
				 int Dh, int ld, int bf16)
{
	attn_load<THREADS>(dst, src, r0, nrows, Dh, T, Dh, ld, attn_round{ bf16 });
}

/* s[a][u] = A_row . B_col over Dh: the thread's resident rows of A (BR
 * rows) against its streamed rows of B (BC rows), both tiles ld apart. */
static __device__ void tile_dots(float s[RPT][CPT], const float *A, const float *Bt, int Dh,
				 int ld)
{
	int tx = threadIdx.x % TX, ty = threadIdx.x / TX;

#pragma unroll
	for (int a = 0; a < RPT; a++)
#pragma unroll
		for (int u = 0; u < CPT; u++)
			s[a][u] = 0.0f;
	for (int d = 0; d < Dh; d++) {
		float x[RPT], w[CPT];
#pragma unroll
		for (int a = 0; a < RPT; a++)
			x[a] = A[(ty * RPT + a) * ld + d];
#pragma unroll
		for (int u = 0; u < CPT; u++)
			w[u] = Bt[(tx + TX * u) * ld + d];
#pragma unroll
		for (int a = 0; a < RPT; a++)
#pragma unroll
			for (int u = 0; u < CPT; u++)
				s[a][u] = __fmaf_rn(x[a], w[u], s[a][u]);
	}
}

/* acc[a][e] += sum over c < BC of W[row a][c] * X[c][column e]: a score
 * tile W (BR, BC; rows LDS apart) times a streamed tile X (BC, Dh). */
static __device__ void tile_prod(float acc[RPT][DPT], const float *W, const float *X, int Dh,
				 int ld)
{
	int tx = threadIdx.x % TX, ty = threadIdx.x / TX;

	for (int c = 0; c < BC; c++) {
		float w[RPT], x[DPT];
#pragma unroll
		for (int a = 0; a < RPT; a++)
			w[a] = W[(ty * RPT + a) * LDS + c];
#pragma unroll
		for (int e = 0; e < DPT; e++)
			x[e] = tx + TX * e < Dh ? X[c * ld + tx + TX * e] : 0.0f;
#pragma unroll
		for (int a = 0; a < RPT; a++)
#pragma unroll
			for (int e = 0; e < DPT; e++)
				acc[a][e] = __fmaf_rn(w[a], x[e], acc[a][e]);
	}
}

static __device__ void zero_acc(float acc[RPT][DPT])
{
#pragma unroll
	for (int a = 0; a < RPT; a++)
#pragma unroll
		for (int e = 0; e < DPT; e++)
			acc[a][e] = 0.0f;
}

/* Rows r0 + ty*RPT + a of a (T,Dh) output = acc, rows before T. */
static __device__ void store_rows(float *out, const float acc[RPT][DPT], int r0, int T, int Dh)
{
	int tx = threadIdx.x % TX, ty = threadIdx.x / TX;

#pragma unroll
	for (int a = 0; a < RPT; a++) {
		int i = r0 + ty * RPT + a;
#pragma unroll
		for (int e = 0; e < DPT; e++)
			attn_store(out, i, tx + TX * e, T, Dh, acc[a][e]);
	}
}

/* ---- shared memory --------------------------------------------------------- */

/* A kernel's tiles, rows Dh + 1 floats apart: R0, R1 resident (BR rows),
 * S0, S1 streamed (BC rows), the score tile W (BR x LDS: p, or ds), and
 * the lse and D of nl query rows; cut from the kernel's shared memory by
 * the kernel and sized by the host alike (attn_tile.h). The forward has
 * one resident tile (q) and no L, D. */
struct fp32_tiles {
	float *R0, *R1, *S0, *S1, *W, *L, *D;
};

static __host__ __device__ size_t layout(attn_carve c, int Dh, int nres, int nl, fp32_tiles *t)
{
	t->R0 = c.take<float>((size_t)BR * (Dh + 1));
	t->R1 = c.take<float>(nres > 1 ? (size_t)BR * (Dh + 1) : 0);
	t->S0 = c.take<float>((size_t)BC * (Dh + 1));
	t->S1 = c.take<float>((size_t)BC * (Dh + 1));
	t->W = c.take<float>((size_t)BR * LDS);
	t->L = c.take<float>((size_t)nl);
	t->D = c.take<float>((size_t)nl);
	return c.off;
}

#define FWD_LAYOUT 1, 0   /* q resident; k, v streamed */
#define DKV_LAYOUT 2, BC  /* k, v resident; q, dy streamed, their L, D */
#define DQ_LAYOUT 2, BR   /* q, dy resident, their L, D; k, v streamed */

/* ---- forward --------------------------------------------------------------- */

/* One tile's scores merged into the rows' running (mx, sum). */
static __device__ void tile_stats(float mx[RPT], float sum[RPT], const float s[RPT][CPT],
				  int i0, int j0, int T, float scale)
{
#pragma unroll
	for (int a = 0; a < RPT; a++) {
		float m = -INFINITY, l = 0.0f;
#pragma unroll
		for (int u = 0; u < CPT; u++)
			if (sees(i0 + a, j0 + TX * u, T))
				m = mgpu_max_merge(m, scale * s[a][u]);
#pragma unroll
		for (int u = 0; u < CPT; u++)
			if (sees(i0 + a, j0 + TX * u, T))
				l += mgpu_exp_neg(scale * s[a][u] - m);
		mgpu_attn_merge(&mx[a], &sum[a], m, l);
	}
}

/* (mx, sum) of a row merged over its TX threads: all of them end with
 * the whole row's, bit for bit (mgpu_attn_merge is symmetric). */
static __device__ void row_merge(float *mx, float *sum)
{
	for (int o = 1; o < TX; o *= 2) {
		float m2 = __shfl_xor_sync(FULL_MASK, *mx, o);
		float l2 = __shfl_xor_sync(FULL_MASK, *sum, o);
		mgpu_attn_merge(mx, sum, m2, l2);
	}
}

/* Grid: BH * ntiles blocks, query tiles of a block of BH heaviest first. */
static __global__ void __launch_bounds__(THREADS)
	k_attn_fwd(float *y, float *lse, const float *q, const float *k, const float *v, int T,
		   int Dh, float scale, int bf16, int ntiles)
{
	extern __shared__ float sm[];
	fp32_tiles t;
	int ld = Dh + 1, tx = threadIdx.x % TX, ty = threadIdx.x / TX;
	(void)layout({ (unsigned char *)sm, 0 }, Dh, FWD_LAYOUT, &t);
	float *Qs = t.R0, *Ks = t.S0, *Vs = t.S1, *Ps = t.W;
	attn_block blk = attn_block_of(ntiles, BR, T, Dh, true);
	size_t bh = blk.bh, off = blk.off;
	int q0 = blk.r0, kend = min(q0 + BR, T), i0 = q0 + ty * RPT;
	float mx[RPT], sum[RPT], s[RPT][CPT], acc[RPT][DPT];

	load_tile(Qs, q + off, q0, BR, T, Dh, ld, bf16);
#pragma unroll
	for (int a = 0; a < RPT; a++) {
		mx[a] = -INFINITY;
		sum[a] = 0.0f;
	}
	for (int k0 = 0; k0 < kend; k0 += BC) { /* pass 1: the rows' statistics */
		__syncthreads(); /* Qs written; Ks's last readers done */
		load_tile(Ks, k + off, k0, BC, T, Dh, ld, bf16);
		__syncthreads();
		tile_dots(s, Qs, Ks, Dh, ld);
		tile_stats(mx, sum, s, i0, k0 + tx, T, scale);
	}
#pragma unroll
	for (int a = 0; a < RPT; a++)
		row_merge(&mx[a], &sum[a]);
	zero_acc(acc);
	for (int k0 = 0; k0 < kend; k0 += BC) { /* pass 2: y */
		__syncthreads(); /* Ks, Vs, Ps's last readers done */
		load_tile(Ks, k + off, k0, BC, T, Dh, ld, bf16);
		load_tile(Vs, v + off, k0, BC, T, Dh, ld, bf16);
		__syncthreads();
		tile_dots(s, Qs, Ks, Dh, ld);
#pragma unroll
		for (int a = 0; a < RPT; a++)
#pragma unroll
			for (int u = 0; u < CPT; u++) {
				float p = 0.0f;
				if (sees(i0 + a, k0 + tx + TX * u, T))
					p = mgpu_attn_in(mgpu_softmax_elem(s[a][u], scale, mx[a],
									   sum[a]),
							 bf16);
				Ps[(ty * RPT + a) * LDS + tx + TX * u] = p;
			}
		__syncthreads();
		tile_prod(acc, Ps, Vs, Dh, ld);
	}
	store_rows(y + off, acc, q0, T, Dh);
#pragma unroll
	for (int a = 0; a < RPT; a++)
		if (tx == 0 && i0 + a < T)
			lse[bh * T + i0 + a] = mgpu_attn_lse(mx[a], sum[a]);
}

/* ---- backward ---------------------------------------------------------------- */

/* p and ds of one (resident row, streamed row) entry as stored for the
 * products (rounded under bf16), 0 where the query does not see the key. */
static __device__ void p_ds(float *p, float *ds, float s, float dp, int i, int j, int T,
			    float L, float D, float scale, int bf16)
{
	float pe;

	*p = *ds = 0.0f;
	if (!sees(i, j, T))
		return;
	pe = mgpu_attn_p(s, scale, L);
	*ds = mgpu_attn_in(mgpu_attn_ds(pe, dp, D, scale), bf16);
	*p = mgpu_attn_in(pe, bf16);
}

/* dk, dv of a key tile (BR keys, resident) over the query tiles (BC
 * queries, streamed) at or after it; key tiles of a block, heaviest (the
 * first) first. Scores are (key, query) here: resident rows are keys. */
static __global__ void __launch_bounds__(THREADS)
	k_attn_dkv(float *dk, float *dv, const float *q, const float *k, const float *v,
		   const float *y, const float *dy, const float *lse, int T, int Dh, float scale,
		   int bf16, int ntiles)
{
	extern __shared__ float sm[];
	fp32_tiles t;
	int ld = Dh + 1, tx = threadIdx.x % TX, ty = threadIdx.x / TX;
	(void)layout({ (unsigned char *)sm, 0 }, Dh, DKV_LAYOUT, &t);
	float *Ks = t.R0, *Vs = t.R1, *Qs = t.S0, *dYs = t.S1, *Ws = t.W, *Ls = t.L, *Ds = t.D;
	attn_block blk = attn_block_of(ntiles, BR, T, Dh, false);
	size_t bh = blk.bh, off = blk.off;
	int k0 = blk.r0, j0 = k0 + ty * RPT;
	float s[RPT][CPT], dp[RPT][CPT], akk[RPT][DPT], avv[RPT][DPT];

	load_tile(Ks, k + off, k0, BR, T, Dh, ld, bf16);
	load_tile(Vs, v + off, k0, BR, T, Dh, ld, bf16);
	zero_acc(akk);
	zero_acc(avv);
	for (int q0 = k0; q0 < T; q0 += BC) { /* BR is a multiple of BC: aligned */
		__syncthreads(); /* Ks, Vs written; the last tile's readers done */
		load_tile(Qs, q + off, q0, BC, T, Dh, ld, bf16);
		load_tile(dYs, dy + off, q0, BC, T, Dh, ld, bf16);
		attn_load_lse<THREADS>(Ls, lse + bh * T, q0, BC, T);
		attn_row_dots<THREADS, THREADS / BC>(Ds, dy + off, y + off, q0, T, Dh);
		__syncthreads();
		tile_dots(s, Ks, Qs, Dh, ld);
		tile_dots(dp, Vs, dYs, Dh, ld);
		/* p and ds take turns in one score tile (the shared memory of
		 * a block of 64 keys at Dh 64 then fits in sm_75's 64 KiB) */
#pragma unroll
		for (int a = 0; a < RPT; a++)
#pragma unroll
			for (int u = 0; u < CPT; u++) {
				int c = tx + TX * u;
				p_ds(&s[a][u], &dp[a][u], s[a][u], dp[a][u], q0 + c, j0 + a, T,
				     Ls[c], Ds[c], scale, bf16);
				Ws[(ty * RPT + a) * LDS + c] = s[a][u];
			}
		__syncthreads();
		tile_prod(avv, Ws, dYs, Dh, ld);
		__syncthreads(); /* every thread done with p */
#pragma unroll
		for (int a = 0; a < RPT; a++)
#pragma unroll
			for (int u = 0; u < CPT; u++)
				Ws[(ty * RPT + a) * LDS + tx + TX * u] = dp[a][u];
		__syncthreads();
		tile_prod(akk, Ws, Qs, Dh, ld);
	}
	store_rows(dk + off, akk, k0, T, Dh);
	store_rows(dv + off, avv, k0, T, Dh);
}

/* dq of a query tile (BR queries, resident) over its key tiles (BC keys,
 * streamed), query tiles heaviest first. */
static __global__ void __launch_bounds__(THREADS)
	k_attn_dq(float *dq, const float *q, const float *k, const float *v, const float *y,
		  const float *dy, const float *lse, int T, int Dh, float scale, int bf16,
		  int ntiles)
{
	extern __shared__ float sm[];
	fp32_tiles t;
	int ld = Dh + 1, tx = threadIdx.x % TX, ty = threadIdx.x / TX;
	(void)layout({ (unsigned char *)sm, 0 }, Dh, DQ_LAYOUT, &t);
	float *Qs = t.R0, *dYs = t.R1, *Ks = t.S0, *Vs = t.S1, *dSs = t.W, *Ls = t.L, *Ds = t.D;
	attn_block blk = attn_block_of(ntiles, BR, T, Dh, true);
	size_t bh = blk.bh, off = blk.off;
	int q0 = blk.r0, kend = min(q0 + BR, T), i0 = q0 + ty * RPT;
	float s[RPT][CPT], dp[RPT][CPT], acc[RPT][DPT], p;

	load_tile(Qs, q + off, q0, BR, T, Dh, ld, bf16);
	load_tile(dYs, dy + off, q0, BR, T, Dh, ld, bf16);
	attn_load_lse<THREADS>(Ls, lse + bh * T, q0, BR, T);
	attn_row_dots<THREADS, THREADS / BR>(Ds, dy + off, y + off, q0, T, Dh);
	zero_acc(acc);
	for (int k0 = 0; k0 < kend; k0 += BC) {
		__syncthreads(); /* Qs, dYs, Ls, Ds written; the last tile's readers done */
		load_tile(Ks, k + off, k0, BC, T, Dh, ld, bf16);
		load_tile(Vs, v + off, k0, BC, T, Dh, ld, bf16);
		__syncthreads();
		tile_dots(s, Qs, Ks, Dh, ld);
		tile_dots(dp, dYs, Vs, Dh, ld);
#pragma unroll
		for (int a = 0; a < RPT; a++)
#pragma unroll
			for (int u = 0; u < CPT; u++) {
				int r = ty * RPT + a, c = tx + TX * u;
				p_ds(&p, &dSs[r * LDS + c], s[a][u], dp[a][u], i0 + a, k0 + c, T,
				     Ls[r], Ds[r], scale, bf16);
			}
		__syncthreads();
		tile_prod(acc, dSs, Ks, Dh, ld);
	}
	store_rows(dq + off, acc, q0, T, Dh);
}

/* ---- launch ---------------------------------------------------------------- */

/* Shared-memory bytes of a kernel at head dimension Dh. */
static size_t smem_bytes(int Dh, int nres, int nl)
{
	fp32_tiles t;
	return layout({ nullptr, 0 }, Dh, nres, nl, &t);
}

/* dev current; fn may use `bytes` of dynamic shared memory (above the
 * default 48 KiB only by opting in), or a clear error where the device
 * has less than that per block. */
static int smem_for(struct mgpu_dev *dev, const void *fn, size_t bytes, const char *op, int Dh)
{
	int most = mgpu_cuda_smem_optin(dev);

	if (bytes > (size_t)most)
		return mgpu_err(MGPU_EINVAL,
				"%s: head dimension %d needs %zu bytes of shared memory per block, "
				"cuda device %d allows %d",
				op, Dh, bytes, dev->index, most);
	return attn_smem_set(fn, bytes);
}

/* Tiles of `rows` per block of BH, and the grid they make (one dimension). */
static int grid_of(const char *op, int BH, int T, int rows, int *ntiles, unsigned *blocks)
{
	size_t nt = ((size_t)T + rows - 1) / rows, nb = nt * (size_t)BH;

	if (nb > (size_t)INT_MAX)
		return mgpu_err(MGPU_EINVAL, "%s: %d blocks of %d positions make %zu thread "
				"blocks, more than one launch takes", op, BH, T, nb);
	*ntiles = (int)nt;
	*blocks = (unsigned)nb;
	return 0;
}

extern "C" int mgpu_cuda_attn_fwd(struct mgpu_dev *dev, float *y, float *lse, const float *q,
				  const float *k, const float *v, int BH, int T, int Dh,
				  float scale, enum mgpu_prec prec)
{
	cudaStream_t st = stream_of(dev);
	size_t bytes = smem_bytes(Dh, FWD_LAYOUT);
	unsigned blocks = 0;
	int nt = 0, bf16 = prec == MGPU_PREC_BF16;

	MGPU_TRY(ops_check_flash("attn_fwd", BH, T, Dh, prec));
	if ((size_t)BH * (size_t)T == 0)
		return 0;
	MGPU_TRY(make_current(dev));
	MGPU_TRY(grid_of("attn_fwd", BH, T, BR, &nt, &blocks));
	if (bf16 && mgpu_cuda_attn_tc(dev, Dh, 0))
		return mgpu_cuda_attn_fwd_tc(dev, y, lse, q, k, v, T, Dh, scale, nt, blocks);
	MGPU_TRY(smem_for(dev, (const void *)k_attn_fwd, bytes, "attn_fwd", Dh));
	k_attn_fwd<<<blocks, THREADS, bytes, st>>>(y, lse, q, k, v, T, Dh, scale, bf16, nt);
	LAUNCHED();
	return 0;
}

extern "C" int mgpu_cuda_attn_bwd(struct mgpu_dev *dev, float *dq, float *dk, float *dv,
				  const float *q, const float *k, const float *v, const float *y,
				  const float *dy, const float *lse, int BH, int T, int Dh,
				  float scale, enum mgpu_prec prec)
{
	cudaStream_t st = stream_of(dev);
	size_t dkv = smem_bytes(Dh, DKV_LAYOUT), dqb = smem_bytes(Dh, DQ_LAYOUT);
	unsigned blocks = 0;
	int nt = 0, bf16 = prec == MGPU_PREC_BF16;

	MGPU_TRY(ops_check_flash("attn_bwd", BH, T, Dh, prec));
	if ((size_t)BH * (size_t)T == 0)
		return 0;
	MGPU_TRY(make_current(dev));
	MGPU_TRY(grid_of("attn_bwd", BH, T, BR, &nt, &blocks));
	if (bf16 && mgpu_cuda_attn_tc(dev, Dh, 1))
		return mgpu_cuda_attn_bwd_tc(dev, dq, dk, dv, q, k, v, y, dy, lse, T, Dh, scale,
					     nt, blocks);
	MGPU_TRY(smem_for(dev, (const void *)k_attn_dkv, dkv, "attn_bwd", Dh));
	MGPU_TRY(smem_for(dev, (const void *)k_attn_dq, dqb, "attn_bwd", Dh));
	k_attn_dkv<<<blocks, THREADS, dkv, st>>>(dk, dv, q, k, v, y, dy, lse, T, Dh, scale, bf16,
						 nt);
	LAUNCHED();
	k_attn_dq<<<blocks, THREADS, dqb, st>>>(dq, q, k, v, y, dy, lse, T, Dh, scale, bf16, nt);
	LAUNCHED();
	return 0;
}
