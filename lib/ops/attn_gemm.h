/*
 * attn_gemm.h - causal attention (attn_fwd, attn_bwd of ops.h) as batched
 * GEMMs of the ops table and two row passes, over a (T,T) scratch of a
 * chunk of heads: the cuda backend's form for long contexts, where cuBLAS's
 * products beat the fused kernels (attn_gemm.cu picks it).
 *
 * Per block of BH, row-major (T,T) S, P, dP, dS, rows T floats apart:
 *   forward   S = Q K^T;  row pass: lse, P = softmax(scale S) causal;
 *             Y = P V
 *   backward  S = Q K^T, dP = dY V^T;  row pass: P = exp(scale S - lse),
 *             D = dy . y, dS = scale P (dP - D);  dV = P^T dY, dQ = dS K,
 *             dK = dS^T Q
 * Under bf16 the products read bf16 operands (q, k, v, dy rounded by the
 * table's f32_to_bf16 into scratch; P and dS rounded by the row pass) and
 * accumulate in fp32 (gemm_bf16): exactly ops.h's r() contract. The row
 * passes write P over S and dS over dP: as floats in place, or under bf16
 * as 16-bit values in the first half of each row's bytes (leading
 * dimension 2T elements), so no second (T,T) buffer is needed. Their
 * per-element math is elem.h's (mgpu_attn_causal_p, mgpu_attn_causal_pds).
 *
 * The driver is the same C code on every backend: the unit tests run it
 * on cpu with the host row passes below against ref, which checks the
 * GEMMs' arguments (transposes, leading dimensions, strides) that cuda
 * gives cuBLAS.
 */
#ifndef MGPU_OPS_ATTN_GEMM_H
#define MGPU_OPS_ATTN_GEMM_H

#include <stddef.h> /* size_t */
#include <stdint.h> /* uint16_t */

#include "ops/ops.h" /* struct mgpu_dev */

#ifdef __cplusplus
extern "C" {
#endif

/* The cuda backend takes this form from T = MGPU_ATTN_GEMM_MIN_T (the
 * fused kernels keep shorter contexts) to MGPU_ATTN_GEMM_MAX_T (a row pass
 * holds two rows of T floats in the 48 KiB of shared memory a block has
 * without opting in). */
#define MGPU_ATTN_GEMM_MIN_T 512
#define MGPU_ATTN_GEMM_MAX_T 4096
/* S and dP of one chunk of heads stay within this (GPT-2 at batch 8, 96
 * heads of T = 1024, needs 768 MiB: one chunk). */
#define MGPU_ATTN_GEMM_CAP_BYTES ((size_t)1 << 30)

/* The two row passes over nb blocks of T rows (device pointers of the
 * backend that runs them). fwd: S (nb,T,T) in; lse (nb,T) and P over S
 * out. bwd: S and dP in, y and dy (nb,T,Dh) for D; P over S, dS over dP
 * out. Under bf16 P and dS are stored rounded to bf16 with rows 2T
 * elements apart, else as floats with rows T apart. */
struct mgpu_attn_rows {
	int (*fwd)(struct mgpu_dev *dev, float *S, float *lse, int nb, int T, float scale,
		   int bf16);
	int (*bwd)(struct mgpu_dev *dev, float *S, float *dP, const float *y, const float *dy,
		   const float *lse, int nb, int T, int Dh, float scale, int bf16);
};

/* The scratch a call uses, laid out by mgpu_attn_gemm_carve. */
struct mgpu_attn_scratch {
	float *S, *dP;  /* hc (T,T) blocks each */
	uint16_t *op16; /* bf16: q, k, v, dy of hc blocks, hc*T*Dh each */
	int hc;         /* heads per chunk */
};

/* 1 when the cuda backend runs attention at (BH, T) in this form. */
int mgpu_attn_gemm_takes(int BH, int T);
/* Heads per chunk at (BH, T): as many as fit the cap, at least 1. */
int mgpu_attn_gemm_heads(int BH, int T);
/* Bytes of scratch the form needs at (BH, T, Dh) (the memory estimate's
 * term too); 0 when BH * T is 0. */
size_t mgpu_attn_gemm_scratch_bytes(int BH, int T, int Dh, int bf16);
/* Lay out sc over `base` (mgpu_attn_gemm_scratch_bytes of it, aligned as
 * an allocation). */
void mgpu_attn_gemm_carve(struct mgpu_attn_scratch *sc, void *base, int BH, int T, int Dh,
			  int bf16);

/* attn_fwd and attn_bwd with ops.h's arguments (checked by the caller) on
 * dev, the products through dev's table. */
int mgpu_attn_gemm_fwd(struct mgpu_dev *dev, const struct mgpu_attn_rows *rows,
		       const struct mgpu_attn_scratch *sc, float *y, float *lse, const float *q,
		       const float *k, const float *v, int BH, int T, int Dh, float scale,
		       int bf16);
int mgpu_attn_gemm_bwd(struct mgpu_dev *dev, const struct mgpu_attn_rows *rows,
		       const struct mgpu_attn_scratch *sc, float *dq, float *dk, float *dv,
		       const float *q, const float *k, const float *v, const float *y,
		       const float *dy, const float *lse, int BH, int T, int Dh, float scale,
		       int bf16);

/* The row passes on host memory (ref and cpu devices): what the tests run
 * the driver with. */
extern const struct mgpu_attn_rows mgpu_attn_rows_host;

#ifdef __cplusplus
}
#endif

#endif
