/*
 * attn_wmma.cu - the bf16 fused attention on tensor cores: the kernels
 * attn_cuda.cu launches instead of its fp32 ones for attn_fwd / attn_bwd
 * in bf16 on devices of compute capability 8.0 or newer (bf16 WMMA needs
 * sm_80); ops.h states what they compute, attn_tile.h holds the
 * scaffolding both families share. The same results as the fp32 kernels up to the fp32
 * sums: the operands (q, k, v, dy, p, ds) are rounded to bf16 with
 * elem.h's mgpu_bf16_from_f32 (round to nearest even, as
 * __float2bfloat16_rn), and a bf16 MMA multiplies such values exactly; it
 * adds them into fp32 accumulators in its own order, and published
 * measurements of A100 tensor cores show those additions truncate rather
 * than round to nearest, so the sums may differ from ref's by a few ulps
 * more than the order alone explains (within the bf16 rows' conformance
 * tolerance, 4e-3).
 *
 * Geometry: blocks of WARPS = 4 warps over tiles of TILE = 64 rows, 16
 * rows a warp; the streamed tile has TILE rows too (attn_cuda.cu's BR, so
 * both paths share its grid: one block per (block of BH, tile)).
 *   k_fwd_tc  per query tile, two passes over its key tiles as the fp32
 *             kernel: the rows' (max, sum) online, then y = sum r(p) r(v)
 *             with the definition's normalised p.
 *   k_dkv_tc  per key tile, over the query tiles at or after it: dk, dv.
 *   k_dq_tc   per query tile, over its key tiles: dq.
 * Each warp multiplies its 16 rows: scores (16 x 64) by wmma into fp32
 * shared memory (the mapping of a fragment's elements to lanes is
 * unspecified, so the per-element math reads them back from there), then
 * elem.h's functions per element, two lanes a row, p / ds rounded to
 * bf16 into shared memory, then (16 x 64) x (64 x Dh) by wmma into fp32
 * accumulator fragments that live in registers for the whole kernel.
 * Deterministic: each output is summed by one warp in a fixed order, no
 * atomics (dq has its own kernel, as in attn_cuda.cu).
 *
 * Head dimensions: tiles are DP = 16, 32, 64 or 128 columns wide, the
 * smallest that holds Dh; columns Dh..DP-1 and rows past T are zero in
 * shared memory, so they add 0 * 0 to every product and any Dh of ops.h
 * takes this path. Rows of bf16 tiles are DP + 8 elements apart and score
 * tiles TILE + 4 floats: WMMA wants ldm a multiple of 8 (16-bit types) or
 * 4 (float) elements and 256-bit aligned fragment pointers; every
 * fragment starts on a multiple of 16 rows and 16 columns, which keeps
 * them aligned, and the padding spreads rows over the banks.
 *
 * Synchronisation: every loop bound, every branch around a *_sync call
 * and every __syncthreads depends only on the block's tile, the warp and
 * Dh, never on a lane's row: all 32 lanes of a warp reach each wmma call
 * together and the whole block each barrier. A warp's score, p and ds
 * rows are its own (__syncwarp between writing and reading them); the
 * streamed tiles are shared (__syncthreads around their loads).
 *
 * Architectures: the build also makes sm_75 code, where the bf16 WMMA
 * types do not exist; there the kernels compile to nothing (TC is 0), and
 * the host never launches them: mgpu_cuda_attn_tc checks the device's
 * capability (cached when the device opens) and that the code the driver
 * runs there comes from compute_80 or newer, since a build whose only PTX
 * is older (CUDA_ARCHS=75) reaches an 8.x device by compiling that PTX,
 * with the kernels empty.
 */
#include <cuda_bf16.h>    /* __nv_bfloat16, __nv_bfloat16_raw */
#include <cuda_runtime.h> /* cudaFuncSetAttribute */
#include <math.h>         /* INFINITY */
#include <mma.h>          /* nvcuda::wmma */

#include "core/err.h"       /* mgpu_err, MGPU_TRY */
#include "ops/attn_tile.h"  /* sees, attn_load, attn_row_dots, attn_carve, ... */
#include "ops/cuda_check.h" /* CU, LAUNCHED */
#include "ops/cuda_kern.h"  /* stream_of, FULL_MASK */
#include "ops/elem.h"       /* the per-element math */
#include "ops/ops_cuda.h"   /* mgpu_cuda_smem_optin, mgpu_cuda_cc, the prototypes */

/* 1 where the bf16 WMMA API exists: sm_80 and newer device code, and the
 * host pass (which sees the kernels' bodies but never runs them). */
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
#define TC 1
#else
#define TC 0
#endif

#define WARPS 4
#define TC_THREADS (32 * WARPS)
#define TILE MGPU_CUDA_ATTN_TC_ROWS /* rows of a resident and of a streamed tile */
#define LDF (TILE + 4)     /* row stride of an fp32 score tile */
#define LDP (TILE + 8)     /* row stride of a bf16 p or ds tile */
static_assert(TILE == 16 * WARPS, "16 rows a warp");

typedef __nv_bfloat16 bf16;

/* Row stride of a bf16 operand tile NF fragments (16 NF columns) wide. */
#define LDB(NF) (16 * (NF) + 8)

/* A kernel's tiles, NF fragments a row: nop bf16 operand tiles A, B, C,
 * E (rows LDB apart), the fp32 scores S and (backward) their gradients
 * dP (LDF), the bf16 p tile P (np of them) and ds tile dS (nds, LDP),
 * and the lse and D of nl query rows; cut from the kernel's shared memory
 * by the kernel and sized by the host alike (attn_tile.h). Every region
 * is a multiple of 32 bytes, so fragments stay 256-bit aligned. */
struct tc_tiles {
	bf16 *op[4];
	float *S, *dP;
	bf16 *P, *dS;
	float *L, *D;
};

static __host__ __device__ size_t layout(attn_carve c, int nf, int nop, int np, int nds, int nl,
					 tc_tiles *t)
{
	for (int i = 0; i < 4; i++)
		t->op[i] = c.take<bf16>(i < nop ? (size_t)TILE * LDB(nf) : 0);
	t->S = c.take<float>((size_t)TILE * LDF);
	t->dP = c.take<float>(nds ? (size_t)TILE * LDF : 0);
	t->P = c.take<bf16>((size_t)np * TILE * LDP);
	t->dS = c.take<bf16>((size_t)nds * TILE * LDP);
	t->L = c.take<float>((size_t)nl);
	t->D = c.take<float>((size_t)nl);
	return c.off;
}

#define FWD_LAYOUT 3, 1, 0, 0    /* q, k, v; S, P */
#define DKV_LAYOUT 4, 1, 1, TILE /* k, v, q, dy; S, dP, P, dS; the queries' L, D */
#define DQ_LAYOUT 4, 0, 1, TILE  /* q, dy, k, v; S, dP, dS; L, D */

/* Shared-memory bytes of a kernel at nf fragments a row. */
static size_t smem_bytes(int nf, int nop, int np, int nds, int nl)
{
	tc_tiles t;
	return layout({ nullptr, 0 }, nf, nop, np, nds, nl, &t);
}

/* Fragments a row for head dimension Dh (1..MGPU_ATTN_MAX_DH). */
static int nf_of(int Dh)
{
	return Dh <= 16 ? 1 : Dh <= 32 ? 2 : Dh <= 64 ? 4 : 8;
}

#if TC
namespace wmma = nvcuda::wmma;
typedef wmma::fragment<wmma::matrix_a, 16, 16, 16, bf16, wmma::row_major> frag_a;
typedef wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, wmma::row_major> frag_b;
/* B given by the rows of its transpose: element (d, j) at j * ldm + d. */
typedef wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, wmma::col_major> frag_bt;
typedef wmma::fragment<wmma::accumulator, 16, 16, 16, float> frag_c;

/* x rounded to bf16 exactly as ref and cpu round it (mgpu_attn_in). */
static __device__ bf16 bf16_of(float x)
{
	__nv_bfloat16_raw r;

	r.x = mgpu_bf16_from_f32(x);
	return bf16(r);
}

/* The column a lane visits at step c < 32: lane l owns row l / 2 of its
 * warp's 16 and half l % 2 of the TILE columns, visited in an order
 * skewed by row so that the 32 lanes read 32 different banks of a score
 * tile (word (4 r + col) mod 32 = 6 r + h + c mod 32, all distinct). */
static __device__ int lane_col(int lane, int c)
{
	int r = lane >> 1, h = lane & 1;

	return h * 32 + ((c + 2 * r + h) & 31);
}

/* x rounded to bf16 (attn_load's conversion). */
struct to_bf16 {
	__device__ bf16 operator()(float x) const { return bf16_of(x); }
};

/* dst (TILE, DP; rows LDB apart) = r(rows r0 .. r0 + TILE - 1 of the
 * (T,Dh) block src), 0 past T and past Dh. */
template <int NF>
static __device__ void load_tile(bf16 *dst, const float *src, int r0, int T, int Dh)
{
	attn_load<TC_THREADS>(dst, src, r0, TILE, 16 * NF, T, Dh, LDB(NF), to_bf16{});
}

/* L[r] = lse of rows r0 + r; D[r] = dy . y of them (two threads a row);
 * 0 past T. All threads must call it. */
static __device__ void load_rows(float *L, float *D, const float *lse, const float *dy,
				 const float *y, int r0, int T, int Dh)
{
	static_assert(TC_THREADS == 2 * TILE, "two threads a row");
	attn_row_dots<TC_THREADS, 2>(D, dy, y, r0, T, Dh);
	attn_load_lse<TC_THREADS>(L, lse, r0, TILE, T);
}

/* Fw (16, TILE; rows LDF apart) = Aw B^T: the warp's 16 rows of an
 * operand tile (Aw, rows LDB apart) against all TILE rows of another (B).
 * Aw's fragments stay in registers over the TILE / 16 column blocks up to
 * NF 4; at NF 8 they are loaded again per block, since the backward's
 * 2 x 8 accumulator fragments leave no room for them (ptxas spilled). */
template <int NF>
static __device__ void warp_scores(float *Fw, const bf16 *Aw, const bf16 *B)
{
	constexpr int HOLD = NF <= 4 ? NF : 1;
	frag_a a[HOLD];

#pragma unroll
	for (int n = 0; n < TILE / 16; n++) {
		frag_c s;
		wmma::fill_fragment(s, 0.0f);
#pragma unroll
		for (int f = 0; f < NF; f++) {
			frag_a &af = a[f % HOLD];
			frag_bt b;
			if (HOLD < NF || n == 0)
				wmma::load_matrix_sync(af, Aw + 16 * f, LDB(NF));
			wmma::load_matrix_sync(b, B + 16 * n * LDB(NF) + 16 * f, LDB(NF));
			wmma::mma_sync(s, af, b, s);
		}
		wmma::store_matrix_sync(Fw + 16 * n, s, LDF, wmma::mem_row_major);
	}
}

/* acc[f] += Pw X: the warp's (16, TILE) p or ds rows (LDP apart) times
 * the (TILE, DP) operand tile X, fragment f being columns 16 f.. */
template <int NF>
static __device__ void warp_prod(frag_c (&acc)[NF], const bf16 *Pw, const bf16 *X)
{
#pragma unroll
	for (int c = 0; c < TILE / 16; c++) {
		frag_a a;
		wmma::load_matrix_sync(a, Pw + 16 * c, LDP);
#pragma unroll
		for (int f = 0; f < NF; f++) {
			frag_b b;
			wmma::load_matrix_sync(b, X + 16 * c * LDB(NF) + 16 * f, LDB(NF));
			wmma::mma_sync(acc[f], a, b, acc[f]);
		}
	}
}

template <int NF>
static __device__ void zero_acc(frag_c (&acc)[NF])
{
#pragma unroll
	for (int f = 0; f < NF; f++)
		wmma::fill_fragment(acc[f], 0.0f);
}

/* Rows i0 .. i0 + 15 (those before T) of a (T,Dh) output = acc's columns
 * below Dh, through the warp's score rows Fw as scratch. */
template <int NF>
static __device__ void store_rows(float *out, const frag_c (&acc)[NF], float *Fw, int i0, int T,
				  int Dh)
{
	int lane = threadIdx.x % 32;

#pragma unroll
	for (int f = 0; f < NF; f++) {
		if (16 * f >= Dh)
			break; /* Dh is the block's: the warp stays together */
		wmma::store_matrix_sync(Fw, acc[f], LDF, wmma::mem_row_major);
		__syncwarp();
		for (int e = lane; e < 16 * 16; e += 32) {
			int r = e / 16, d = e % 16;
			attn_store(out, i0 + r, 16 * f + d, T, Dh, Fw[r * LDF + d]);
		}
		__syncwarp(); /* read before the next fragment overwrites */
	}
}

/* The lane's part of its row's (max, sum) over one score tile row Fr
 * (scale applied), merged into (mx, sum): row i, keys j0 + column. */
static __device__ void row_stats(float *mx, float *sum, const float *Fr, int i, int j0, int T,
				 float scale)
{
	int lane = threadIdx.x % 32;
	float m = -INFINITY, l = 0.0f;

	for (int c = 0; c < 32; c++) {
		int col = lane_col(lane, c);
		if (sees(i, j0 + col, T))
			m = mgpu_max_merge(m, scale * Fr[col]);
	}
	for (int c = 0; c < 32; c++) {
		int col = lane_col(lane, c);
		if (sees(i, j0 + col, T))
			l += mgpu_exp_neg(scale * Fr[col] - m);
	}
	mgpu_attn_merge(mx, sum, m, l);
}
#endif /* TC */

/* ---- forward ---------------------------------------------------------------- */

/* Grid: BH * ntiles blocks, query tiles of a block of BH heaviest first. */
template <int NF>
static __global__ void __launch_bounds__(TC_THREADS)
	k_fwd_tc(float *y, float *lse, const float *q, const float *k, const float *v, int T,
		 int Dh, float scale, int ntiles)
{
#if TC
	extern __shared__ __align__(128) unsigned char smem[];
	tc_tiles t;
	(void)layout({ smem, 0 }, NF, FWD_LAYOUT, &t);
	bf16 *Qs = t.op[0], *Ks = t.op[1], *Vs = t.op[2];
	int w = threadIdx.x / 32, lane = threadIdx.x % 32, r = lane >> 1;
	float *Fw = t.S + 16 * w * LDF;
	bf16 *Pw = t.P + 16 * w * LDP;
	attn_block blk = attn_block_of(ntiles, TILE, T, Dh, true);
	size_t bh = blk.bh, off = blk.off;
	int q0 = blk.r0, kend = min(q0 + TILE, T), i = q0 + 16 * w + r;
	float mx = -INFINITY, sum = 0.0f;
	frag_c acc[NF];

	load_tile<NF>(Qs, q + off, q0, T, Dh);
	for (int k0 = 0; k0 < kend; k0 += TILE) { /* pass 1: the rows' statistics */
		__syncthreads(); /* Qs written; Ks's last readers done */
		load_tile<NF>(Ks, k + off, k0, T, Dh);
		__syncthreads();
		warp_scores<NF>(Fw, Qs + 16 * w * LDB(NF), Ks);
		__syncwarp();
		row_stats(&mx, &sum, Fw + r * LDF, i, k0, T, scale);
	}
	/* the two lanes of a row: both end with the whole row's bits */
	{
		float m2 = __shfl_xor_sync(FULL_MASK, mx, 1);
		float l2 = __shfl_xor_sync(FULL_MASK, sum, 1);
		mgpu_attn_merge(&mx, &sum, m2, l2);
	}
	zero_acc<NF>(acc);
	for (int k0 = 0; k0 < kend; k0 += TILE) { /* pass 2: y */
		__syncthreads(); /* Ks, Vs's last readers done */
		load_tile<NF>(Ks, k + off, k0, T, Dh);
		load_tile<NF>(Vs, v + off, k0, T, Dh);
		__syncthreads();
		warp_scores<NF>(Fw, Qs + 16 * w * LDB(NF), Ks);
		__syncwarp();
		for (int c = 0; c < 32; c++) {
			int col = lane_col(lane, c);
			float p = 0.0f;
			if (sees(i, k0 + col, T))
				p = mgpu_softmax_elem(Fw[r * LDF + col], scale, mx, sum);
			Pw[r * LDP + col] = bf16_of(p);
		}
		__syncwarp();
		warp_prod<NF>(acc, Pw, Vs);
	}
	if ((lane & 1) == 0 && i < T)
		lse[bh * T + i] = mgpu_attn_lse(mx, sum);
	store_rows<NF>(y + off, acc, Fw, q0 + 16 * w, T, Dh);
#endif
}

/* ---- backward ---------------------------------------------------------------- */

/* dk, dv of a key tile (resident; a warp's 16 keys are its rows) over the
 * query tiles at or after it (streamed); key tiles of a block of BH, the
 * heaviest (the first) first. Scores here are (key, query). */
template <int NF>
static __global__ void __launch_bounds__(TC_THREADS)
	k_dkv_tc(float *dk, float *dv, const float *q, const float *k, const float *v,
		 const float *y, const float *dy, const float *lse, int T, int Dh, float scale,
		 int ntiles)
{
#if TC
	extern __shared__ __align__(128) unsigned char smem[];
	tc_tiles t;
	(void)layout({ smem, 0 }, NF, DKV_LAYOUT, &t);
	bf16 *Ks = t.op[0], *Vs = t.op[1], *Qs = t.op[2], *dYs = t.op[3];
	float *Ls = t.L, *Ds = t.D;
	int w = threadIdx.x / 32, lane = threadIdx.x % 32, r = lane >> 1;
	float *Sw = t.S + 16 * w * LDF, *dPw = t.dP + 16 * w * LDF;
	bf16 *Pw = t.P + 16 * w * LDP, *dSw = t.dS + 16 * w * LDP;
	attn_block blk = attn_block_of(ntiles, TILE, T, Dh, false);
	size_t bh = blk.bh, off = blk.off;
	int k0 = blk.r0, j = k0 + 16 * w + r;
	frag_c adk[NF], adv[NF];

	load_tile<NF>(Ks, k + off, k0, T, Dh);
	load_tile<NF>(Vs, v + off, k0, T, Dh);
	zero_acc<NF>(adk);
	zero_acc<NF>(adv);
	for (int q0 = k0; q0 < T; q0 += TILE) {
		__syncthreads(); /* Ks, Vs written; the last tile's readers done */
		load_tile<NF>(Qs, q + off, q0, T, Dh);
		load_tile<NF>(dYs, dy + off, q0, T, Dh);
		load_rows(Ls, Ds, lse + bh * T, dy + off, y + off, q0, T, Dh);
		__syncthreads();
		warp_scores<NF>(Sw, Ks + 16 * w * LDB(NF), Qs);
		warp_scores<NF>(dPw, Vs + 16 * w * LDB(NF), dYs);
		__syncwarp();
		for (int c = 0; c < 32; c++) {
			int col = lane_col(lane, c);
			float p = 0.0f, ds = 0.0f;
			if (sees(q0 + col, j, T)) {
				p = mgpu_attn_p(Sw[r * LDF + col], scale, Ls[col]);
				ds = mgpu_attn_ds(p, dPw[r * LDF + col], Ds[col], scale);
			}
			Pw[r * LDP + col] = bf16_of(p);
			dSw[r * LDP + col] = bf16_of(ds);
		}
		__syncwarp();
		warp_prod<NF>(adv, Pw, dYs);
		warp_prod<NF>(adk, dSw, Qs);
	}
	store_rows<NF>(dk + off, adk, Sw, k0 + 16 * w, T, Dh);
	store_rows<NF>(dv + off, adv, Sw, k0 + 16 * w, T, Dh);
#endif
}

/* dq of a query tile (resident) over its key tiles (streamed), query
 * tiles heaviest first. */
template <int NF>
static __global__ void __launch_bounds__(TC_THREADS)
	k_dq_tc(float *dq, const float *q, const float *k, const float *v, const float *y,
		const float *dy, const float *lse, int T, int Dh, float scale, int ntiles)
{
#if TC
	extern __shared__ __align__(128) unsigned char smem[];
	tc_tiles t;
	(void)layout({ smem, 0 }, NF, DQ_LAYOUT, &t);
	bf16 *Qs = t.op[0], *dYs = t.op[1], *Ks = t.op[2], *Vs = t.op[3];
	float *Ls = t.L, *Ds = t.D;
	int w = threadIdx.x / 32, lane = threadIdx.x % 32, r = lane >> 1;
	float *Sw = t.S + 16 * w * LDF, *dPw = t.dP + 16 * w * LDF;
	bf16 *dSw = t.dS + 16 * w * LDP;
	attn_block blk = attn_block_of(ntiles, TILE, T, Dh, true);
	size_t bh = blk.bh, off = blk.off;
	int q0 = blk.r0, kend = min(q0 + TILE, T), i = q0 + 16 * w + r;
	frag_c acc[NF];

	load_tile<NF>(Qs, q + off, q0, T, Dh);
	load_tile<NF>(dYs, dy + off, q0, T, Dh);
	load_rows(Ls, Ds, lse + bh * T, dy + off, y + off, q0, T, Dh);
	zero_acc<NF>(acc);
	for (int k0 = 0; k0 < kend; k0 += TILE) {
		__syncthreads(); /* Qs, dYs, Ls, Ds written; the last tile's readers done */
		load_tile<NF>(Ks, k + off, k0, T, Dh);
		load_tile<NF>(Vs, v + off, k0, T, Dh);
		__syncthreads();
		warp_scores<NF>(Sw, Qs + 16 * w * LDB(NF), Ks);
		warp_scores<NF>(dPw, dYs + 16 * w * LDB(NF), Vs);
		__syncwarp();
		for (int c = 0; c < 32; c++) {
			int col = lane_col(lane, c);
			float ds = 0.0f;
			if (sees(i, k0 + col, T)) {
				float p = mgpu_attn_p(Sw[r * LDF + col], scale, Ls[16 * w + r]);
				ds = mgpu_attn_ds(p, dPw[r * LDF + col], Ds[16 * w + r], scale);
			}
			dSw[r * LDP + col] = bf16_of(ds);
		}
		__syncwarp();
		warp_prod<NF>(acc, dSw, Ks);
	}
	store_rows<NF>(dq + off, acc, Sw, q0 + 16 * w, T, Dh);
#endif
}

/* ---- launch ---------------------------------------------------------------- */

template <int NF>
static int fwd_launch(struct mgpu_dev *dev, float *y, float *lse, const float *q, const float *k,
		      const float *v, int T, int Dh, float scale, int ntiles, unsigned blocks)
{
	cudaStream_t st = stream_of(dev);
	size_t bytes = smem_bytes(NF, FWD_LAYOUT);

	MGPU_TRY(attn_smem_set((const void *)k_fwd_tc<NF>, bytes));
	k_fwd_tc<NF><<<blocks, TC_THREADS, bytes, st>>>(y, lse, q, k, v, T, Dh, scale, ntiles);
	LAUNCHED();
	return 0;
}

template <int NF>
static int bwd_launch(struct mgpu_dev *dev, float *dq, float *dk, float *dv, const float *q,
		      const float *k, const float *v, const float *y, const float *dy,
		      const float *lse, int T, int Dh, float scale, int ntiles, unsigned blocks)
{
	cudaStream_t st = stream_of(dev);
	size_t dkv = smem_bytes(NF, DKV_LAYOUT), dqb = smem_bytes(NF, DQ_LAYOUT);

	MGPU_TRY(attn_smem_set((const void *)k_dkv_tc<NF>, dkv));
	MGPU_TRY(attn_smem_set((const void *)k_dq_tc<NF>, dqb));
	k_dkv_tc<NF><<<blocks, TC_THREADS, dkv, st>>>(dk, dv, q, k, v, y, dy, lse, T, Dh, scale,
						      ntiles);
	LAUNCHED();
	k_dq_tc<NF><<<blocks, TC_THREADS, dqb, st>>>(dq, q, k, v, y, dy, lse, T, Dh, scale, ntiles);
	LAUNCHED();
	return 0;
}

/* Whether the current device runs the kernels with their bodies: the
 * code the driver picked for it (a cubin, else PTX it compiled) must come
 * from compute_80 or newer, where TC is 1 (what cub's PtxVersion asks
 * too). No code for the device at all: 0, and the fp32 kernel's launch
 * reports it. */
static int tc_code(void)
{
	cudaFuncAttributes a;

	if (cudaFuncGetAttributes(&a, (const void *)k_fwd_tc<1>) != cudaSuccess) {
		(void)cudaGetLastError(); /* not left for LAUNCHED to find */
		return 0;
	}
	return a.ptxVersion >= 80;
}

extern "C" int mgpu_cuda_attn_tc(struct mgpu_dev *dev, int Dh, int bwd)
{
	int nf = nf_of(Dh);
	size_t most = (size_t)mgpu_cuda_smem_optin(dev);

	if (mgpu_cuda_cc(dev) < 80 || !tc_code())
		return 0;
	if (!bwd)
		return smem_bytes(nf, FWD_LAYOUT) <= most;
	return smem_bytes(nf, DKV_LAYOUT) <= most && smem_bytes(nf, DQ_LAYOUT) <= most;
}

extern "C" int mgpu_cuda_attn_fwd_tc(struct mgpu_dev *dev, float *y, float *lse, const float *q,
				     const float *k, const float *v, int T, int Dh, float scale,
				     int ntiles, unsigned blocks)
{
	switch (nf_of(Dh)) {
	case 1: return fwd_launch<1>(dev, y, lse, q, k, v, T, Dh, scale, ntiles, blocks);
	case 2: return fwd_launch<2>(dev, y, lse, q, k, v, T, Dh, scale, ntiles, blocks);
	case 4: return fwd_launch<4>(dev, y, lse, q, k, v, T, Dh, scale, ntiles, blocks);
	default: return fwd_launch<8>(dev, y, lse, q, k, v, T, Dh, scale, ntiles, blocks);
	}
}

extern "C" int mgpu_cuda_attn_bwd_tc(struct mgpu_dev *dev, float *dq, float *dk, float *dv,
				     const float *q, const float *k, const float *v,
				     const float *y, const float *dy, const float *lse, int T,
				     int Dh, float scale, int ntiles, unsigned blocks)
{
	switch (nf_of(Dh)) {
	case 1:
		return bwd_launch<1>(dev, dq, dk, dv, q, k, v, y, dy, lse, T, Dh, scale, ntiles,
				     blocks);
	case 2:
		return bwd_launch<2>(dev, dq, dk, dv, q, k, v, y, dy, lse, T, Dh, scale, ntiles,
				     blocks);
	case 4:
		return bwd_launch<4>(dev, dq, dk, dv, q, k, v, y, dy, lse, T, Dh, scale, ntiles,
				     blocks);
	default:
		return bwd_launch<8>(dev, dq, dk, dv, q, k, v, y, dy, lse, T, Dh, scale, ntiles,
				     blocks);
	}
}
