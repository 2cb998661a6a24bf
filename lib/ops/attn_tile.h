/*
 * attn_tile.h - the scaffolding the two CUDA attention families share
 * (CUDA sources only): attn_cuda.cu's fp32 CUDA-core kernels and
 * attn_wmma.cu's bf16 tensor-core ones. The arithmetic is ops.h's
 * (attn_fwd, attn_bwd: stated there once) and elem.h's; this is where a
 * block's tile sits, which keys a query sees, how tiles come in and rows
 * go out with their bounds, the backward's per-row terms, and how a
 * block's shared memory is cut up and sized.
 *
 * Invariants:
 * - Grid: BH * ntiles blocks, one per (block of BH, tile of rows); every
 *   loop bound and barrier below depends on the block only, so the whole
 *   block calls each function (they use __shfl_xor_sync with all lanes).
 * - A block's dynamic shared memory is cut by one layout function per
 *   kernel, run by the kernel (pointers) and by the host (the launch's
 *   byte count) alike, so the two cannot disagree.
 */
#ifndef MGPU_OPS_ATTN_TILE_H
#define MGPU_OPS_ATTN_TILE_H

#include <cuda_runtime.h> /* cudaFuncSetAttribute */
#include <stddef.h>       /* size_t */

#include "ops/cuda_check.h" /* CU */
#include "ops/cuda_kern.h"  /* FULL_MASK */

/* Query i sees key j: causal, and i a real row. */
static __device__ __forceinline__ bool sees(int i, int j, int T)
{
	return j <= i && i < T;
}

/* The (block of BH, tile) of this thread block: bh, the block's offset
 * (bh T Dh) and its tile's first row r0 (tiles of `rows`). Query tiles go
 * heaviest (the last, which sees the most keys) first, key tiles in order
 * (the first is the heaviest there). */
struct attn_block {
	size_t bh, off;
	int r0;
};

static __device__ __forceinline__ attn_block attn_block_of(int ntiles, int rows, int T, int Dh,
							    bool queries)
{
	attn_block b;
	int t = (int)(blockIdx.x % ntiles);

	b.bh = blockIdx.x / ntiles;
	b.off = b.bh * T * Dh;
	b.r0 = (queries ? ntiles - 1 - t : t) * rows;
	return b;
}

/* dst[r * ld + d] = cvt(row r0 + r, column d of the (T,Dh) block src) for
 * r < nrows, d < cols; cvt(0) past T and past Dh (a row past T has p 0,
 * and 0 * 0 keeps a product finite where garbage could be NaN). NT
 * threads stride over the tile. */
template <int NT, typename E, typename Cvt>
static __device__ void attn_load(E *dst, const float *src, int r0, int nrows, int cols, int T,
				 int Dh, int ld, Cvt cvt)
{
	for (int e = threadIdx.x; e < nrows * cols; e += NT) {
		int r = e / cols, d = e % cols;
		float x = 0.0f;

		if (r0 + r < T && d < Dh)
			x = src[(size_t)(r0 + r) * Dh + d];
		dst[r * ld + d] = cvt(x);
	}
}

/* D[r] = dy . y of rows r0 + r (NT / G rows, G threads a row, xor
 * shuffles inside aligned groups of G lanes: every lane of a group ends
 * with the same bits); 0 past T. Unrounded operands, fp32 fused
 * multiply-adds in a fixed order. */
template <int NT, int G>
static __device__ void attn_row_dots(float *D, const float *dy, const float *y, int r0, int T,
				     int Dh)
{
	int r = threadIdx.x / G, g = threadIdx.x % G;
	float t = 0.0f;

	static_assert(NT % G == 0 && 32 % G == 0, "a row's threads: aligned lanes of a warp");
	if (r0 + r < T) {
		const float *a = dy + (size_t)(r0 + r) * Dh, *b = y + (size_t)(r0 + r) * Dh;
		for (int d = g; d < Dh; d += G)
			t = __fmaf_rn(a[d], b[d], t);
	}
	for (int o = 1; o < G; o *= 2)
		t += __shfl_xor_sync(FULL_MASK, t, o);
	if (g == 0)
		D[r] = t;
}

/* L[r] = lse of rows r0 + r, r < n (0 past T). */
template <int NT>
static __device__ void attn_load_lse(float *L, const float *lse, int r0, int n, int T)
{
	for (int r = threadIdx.x; r < n; r += NT)
		L[r] = r0 + r < T ? lse[r0 + r] : 0.0f;
}

/* Element (i, d) of a (T,Dh) output, where it exists. */
static __device__ __forceinline__ void attn_store(float *out, int i, int d, int T, int Dh,
						  float v)
{
	if (i < T && d < Dh)
		out[(size_t)i * Dh + d] = v;
}

/* A block's dynamic shared memory cut into regions in call order: from
 * the kernel's base, pointers; from a null base (the host), nothing but
 * the byte count in off. */
struct attn_carve {
	unsigned char *base;
	size_t off;

	template <typename E>
	__host__ __device__ E *take(size_t n)
	{
		E *p = base ? (E *)(base + off) : nullptr;

		off += n * sizeof(E);
		return p;
	}
};

/* fn may use `bytes` of dynamic shared memory (opting in above 48 KiB);
 * the caller has checked the device allows it (mgpu_cuda_smem_optin). */
static inline int attn_smem_set(const void *fn, size_t bytes)
{
	CU(cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes));
	return 0;
}

#endif
