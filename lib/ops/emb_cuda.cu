/*
 * emb_cuda.cu - the token half of the cuda backend's emb_bwd (ops.h):
 * dwte (V,D) = acc * dwte + the rows of dY (N,D) summed by token id, in row
 * order, bit for bit what ref's mgpu_emb_tok_col computes.
 *
 * Two passes, no atomics, no scratch:
 *   k_emb_scale  every element of dwte: mgpu_acc_store(acc, 0.0f), i.e.
 *                0 for acc 0, else acc * old + 0.0f (one rounding, as ref);
 *   k_emb_first  a block per position i (grid-stride) whose id v first
 *                occurs at i: it finds v's rows in row order (chunks of
 *                THREADS ids, a ballot per warp, compacted in shared
 *                memory in order), sums them from 0.0f in that order and
 *                adds the sum to the scaled value. Every other position's
 *                block sees an earlier row of its id in its first chunk
 *                with a hit and leaves.
 * The result is ref's: fl(fl(acc old) + 0.0f) + s equals fl(acc old) + s
 * (adding +0.0 changes only -0.0, and -0.0 + s == +0.0 + s for the sums
 * here, which are never -0.0 since they start at +0.0), and for acc 0,
 * 0.0f + s == s. The work is the distinct ids' rows instead of every
 * vocabulary row scanning every id (GPT-2: 50257 x 8192 before).
 *
 * An id outside [0, V) matches no row and is skipped, as before (the cuda
 * backend cannot report it without a round trip). Every loop bound and
 * barrier depends only on the block's position, so whole blocks reach each
 * __syncthreads and whole warps each ballot.
 */
#include <cuda_runtime.h> /* launches */
#include <stdint.h>       /* int32_t */

#include "core/err.h"       /* MGPU_TRY */
#include "ops/cuda_check.h" /* CU, LAUNCHED */
#include "ops/cuda_kern.h"  /* THREADS, MAX_BLOCKS, GRID_STRIDE, blocks_for, stream_of */
#include "ops/elem.h"       /* mgpu_acc_store */
#include "ops/ops_cuda.h"   /* the prototype */

#define WARPS (THREADS / WARP)
#define CPT 4 /* columns a thread sums per pass over the ids */

static __global__ void k_emb_scale(float *dwte, size_t n, float acc)
{
	GRID_STRIDE(i, n)
		mgpu_acc_store(&dwte[i], acc, 0.0f);
}

/* The rows r0 .. r0 + THREADS - 1 that hold v, in row order, into rows[];
 * returns how many (the same in every thread). Ends with a barrier, so
 * rows[] may be read right after; the caller syncs before the next call. */
static __device__ int chunk_hits(size_t *rows, int *warp_n, const int32_t *ids, size_t N,
				 size_t r0, int32_t v)
{
	size_t r = r0 + threadIdx.x;
	int hit = r < N && ids[r] == v;
	unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
	unsigned b = __ballot_sync(0xffffffffu, hit);
	int off = 0, total = 0;

	if (lane == 0)
		warp_n[warp] = __popc(b);
	__syncthreads();
	for (unsigned w = 0; w < WARPS; w++) {
		off += w < warp ? warp_n[w] : 0;
		total += warp_n[w];
	}
	if (hit)
		rows[off + __popc(b & ((1u << lane) - 1u))] = r;
	__syncthreads();
	return total;
}

/* dY[rows[h + u]][c] for u < 4 (0.0f for u past n or c past D) added to
 * the thread's sums in row order, all loads issued before the adds (a
 * frequent id is a long serial sum). Adding 0.0f changes no sum here: a
 * sum that starts at +0.0 is never -0.0. */
static __device__ void add_rows(float s[CPT], const float *dY, const size_t *rows, int h, int n,
				size_t c0, int D)
{
	float x[4][CPT];

	for (int u = 0; u < 4; u++)
		for (int e = 0; e < CPT; e++) {
			size_t c = c0 + (size_t)e * THREADS + threadIdx.x;
			x[u][e] = h + u < n && c < (size_t)D ? dY[rows[h + u] * (size_t)D + c] : 0.0f;
		}
	for (int u = 0; u < 4; u++)
		for (int e = 0; e < CPT; e++)
			s[e] += x[u][e];
}

static __global__ void __launch_bounds__(THREADS)
k_emb_first(float *dwte, const float *dY, const int32_t *ids, size_t N, int V, int D)
{
	__shared__ size_t rows[THREADS];
	__shared__ int warp_n[WARPS];

	for (size_t i = blockIdx.x; i < N; i += gridDim.x) {
		int32_t v = ids[i];
		int first = 1;

		if (v < 0 || v >= V)
			continue;
		for (size_t c0 = 0; first && c0 < (size_t)D; c0 += (size_t)THREADS * CPT) {
			float s[CPT];

			for (int e = 0; e < CPT; e++)
				s[e] = 0.0f;
			for (size_t r0 = 0; r0 < N; r0 += THREADS) {
				int n = chunk_hits(rows, warp_n, ids, N, r0, v);

				if (n > 0 && rows[0] < i) { /* v's first row is earlier */
					first = 0;
					break; /* the same in every thread */
				}
				for (int h = 0; h < n; h += 4)
					add_rows(s, dY, rows, h, n, c0, D);
				__syncthreads(); /* rows[] is rewritten by the next chunk */
			}
			for (int e = 0; first && e < CPT; e++) {
				size_t c = c0 + (size_t)e * THREADS + threadIdx.x;
				if (c < (size_t)D) {
					float *at = &dwte[(size_t)v * D + c];
					*at = *at + s[e];
				}
			}
		}
		__syncthreads(); /* a break skipped the chunk's last barrier */
	}
}

extern "C" int mgpu_cuda_emb_tok(struct mgpu_dev *dev, float *dwte, const float *dY,
				 const int32_t *ids, size_t N, int V, int D, float acc)
{
	cudaStream_t st = stream_of(dev);
	size_t n = (size_t)V * (size_t)D;

	if (n == 0)
		return 0;
	MGPU_TRY(make_current(dev));
	k_emb_scale<<<blocks_for(n), THREADS, 0, st>>>(dwte, n, acc);
	LAUNCHED();
	if (N == 0)
		return 0;
	k_emb_first<<<N < MAX_BLOCKS ? (unsigned)N : MAX_BLOCKS, THREADS, 0, st>>>(dwte, dY, ids,
										   N, V, D);
	LAUNCHED();
	return 0;
}
