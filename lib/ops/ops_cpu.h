/*
 * ops_cpu.h - internal to the cpu backend: what its files (ops_cpu.c,
 * rows_cpu.c, bf16_cpu.c, bf16_dnnl.c, attn_cpu.c, conv_cpu.c) share, and
 * the two things tests ask of it (which bf16 GEMM this process runs on,
 * and the probe that decides it).
 */
#ifndef MGPU_OPS_OPS_CPU_H
#define MGPU_OPS_OPS_CPU_H

#include <stddef.h> /* size_t */
#include <stdint.h> /* uint16_t, int32_t */

#include "ops/ops.h" /* struct mgpu_dev, enum mgpu_prec, enum mgpu_trans */

/* Block width of the vectorisable loops: 8 floats = one AVX or two SSE
 * vectors. */
#define MGPU_CPU_W 8

/*
 * Loops that are arithmetic only (elem.h's erf and exp) run 8 lanes wide
 * instead of the baseline's 4 where the CPU has AVX2: gcc builds both
 * clones and picks one at load time. Only the width changes (no FMA,
 * which "avx2" does not enable; the same IEEE operations in the same
 * order), so every machine gets the same bits.
 */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define MGPU_CPU_WIDE __attribute__((target_clones("avx2", "default")))
#else
#define MGPU_CPU_WIDE
#endif

/* The cpu backend's per-device scratch (dev->impl), grown on demand and
 * released by the backend's fini: widened bf16 GEMM operands (bf16_cpu.c),
 * and attention's tiles of scores and of their gradients plus a block's
 * rounded operands (attn_cpu.c). */
struct mgpu_cpu_scratch {
	float *a, *b;        /* gemm_bf16's widened op(A), op(B) */
	size_t cap_a, cap_b; /* floats */
	float *s, *dp;       /* attention: a tile of rows of S / P, of dP / dS */
	size_t cap_s, cap_dp;
	float *r;            /* attention: a block's rounded q, k, v, dy; D */
	size_t cap_r;
	void *dnnl;          /* conv_cpu.c: oneDNN's engine, stream and primitives */
	void *mm;            /* bf16_dnnl.c: its engine, stream and matmul primitives */
};

/* dev's scratch, created empty on first use. */
int mgpu_cpu_scratch(struct mgpu_dev *dev, struct mgpu_cpu_scratch **s);
/* *p holding at least n floats (its old contents lost when it grows). */
int mgpu_cpu_grow(float **p, size_t *cap, size_t n);

/* The cpu backend's gemm (ops.h) in bf16 or fp16 (prec), its arguments
 * checked already. */
int mgpu_cpu_gemm16(struct mgpu_dev *dev, enum mgpu_prec prec, enum mgpu_trans ta,
		    enum mgpu_trans tb, int m, int n, int k, float alpha, const uint16_t *A, int lda,
		    long long sa, const uint16_t *Bm, int ldb, long long sb, float beta, float *C,
		    int ldc, long long sc, int batch);
void mgpu_cpu_release(struct mgpu_dev *dev);

/* The row ops of rows_cpu.c (ops.h's semantics; sums in lanes). */
int mgpu_cpu_ln_fwd(struct mgpu_dev *dev, float *Y, float *mean, float *rstd, const float *X,
		    const float *gamma, const float *beta, int B, int D, float eps);
/* dx (D) of one LayerNorm row, as elem.h's mgpu_ln_row_bwd; dx != dy. */
void mgpu_cpu_ln_bwd_row(const float *dy, const float *x, float mean, float rstd,
			 const float *g, int D, float *dx);
int mgpu_cpu_xent(struct mgpu_dev *dev, float *dlogits, float *row_loss, float *row_correct,
		  const float *logits, const int32_t *labels, int B, int C, int ld,
		  float grad_scale);
/* The cpu backend's attn_fwd, attn_bwd (ops.h; attn_cpu.c). */
int mgpu_cpu_attn_fwd(struct mgpu_dev *dev, float *y, float *lse, const float *q,
		      const float *k, const float *v, int BH, int T, int Dh, float scale,
		      enum mgpu_prec prec);
int mgpu_cpu_attn_bwd(struct mgpu_dev *dev, float *dq, float *dk, float *dv, const float *q,
		      const float *k, const float *v, const float *y, const float *dy,
		      const float *lse, int BH, int T, int Dh, float scale, enum mgpu_prec prec);
/* Their row loops (rows_cpu.c) over R rows of a causal block's tile, rows
 * i0 .. i0 + R - 1 with n = i0 + R columns each (row-major, ld n); row r
 * sees columns j <= i0 + r and the rest come out 0.
 * fwd: S (scores) becomes P, rounded under bf16; lse (R) of the rows.
 * bwd: S becomes P from lse (R), dP becomes dS with D (R) = dy . y, both
 * rounded under bf16 (after dS has used the unrounded P). */
void mgpu_cpu_attn_fwd_rows(float *S, int R, int i0, float scale, float *lse, int bf16);
void mgpu_cpu_attn_bwd_rows(float *S, float *dP, int R, int i0, float scale, const float *lse,
			    const float *D, int bf16);
/* What that GEMM runs on in this process, in words: oneDNN's matmul, or
 * OpenBLAS's cblas_sbgemm, where they work and pass a probe, else widened
 * inputs through cblas_sgemm (bf16_cpu.c); MGPU_CPU_BF16_GEMM narrows it. */
const char *mgpu_cpu_bf16_gemm_path(void);

/* A bf16 GEMM with gemm's arguments (ops.h; bf16 bit patterns in, fp32 C,
 * m, n, k, batch > 0): 0 when it ran, 1 when it declined the shape, < 0
 * on an error. ctx is the implementation's own. */
typedef int (*mgpu_cpu_gemm16_fn)(void *ctx, enum mgpu_trans ta, enum mgpu_trans tb, int m,
				  int n, int k, float alpha, const uint16_t *A, int lda,
				  long long sa, const uint16_t *Bm, int ldb, long long sb,
				  float beta, float *C, int ldc, long long sc, int batch);
/* The probe a bf16 GEMM must pass before the cpu backend uses it: cand
 * against the widened cblas_sgemm on awkward shapes (every transpose pair,
 * padded leading dimensions, beta 0 over NaN, long k, strided and shared
 * batches, nothing written outside C). 1 when it agrees everywhere, 0
 * when it differs or declines a case, < 0 on an error (out of memory). */
int mgpu_cpu_bf16_probe(mgpu_cpu_gemm16_fn cand, void *ctx);

/* bf16_dnnl.c: oneDNN's matmul. 2 where the CPU has AMX, 1 AVX512-BF16
 * (without either, oneDNN would emulate bf16: slower than the fallback),
 * else 0. */
int mgpu_cpu_mm_isa(void);
/* The bf16 GEMM (mgpu_cpu_gemm16_fn's arguments and meaning) on oneDNN's
 * matmul, in *state (NULL at first; one per device, one thread at a time):
 * *done = 0 where oneDNN has only a reference implementation for it. */
int mgpu_cpu_mm_bf16(void **state, enum mgpu_trans ta, enum mgpu_trans tb, int m, int n, int k,
		     float alpha, const uint16_t *A, int lda, long long sa, const uint16_t *Bm,
		     int ldb, long long sb, float beta, float *C, int ldc, long long sc, int batch,
		     int *done);
void mgpu_cpu_mm_release(void *state);

#endif
