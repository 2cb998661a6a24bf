/*
 * ops_cpu.h - host-only extensions of the cpu backend, outside the ops
 * table because only host memory can take them, and the parts of the cpu
 * backend that live in bf16_cpu.c.
 *
 * The fused reduce + update of the shared-memory gradient sync: the
 * gradient of element i is g[0][i] + g[1][i] + ... + g[ng-1][i], summed in
 * that order and fed straight into the optimizer (elem.h), so the sum is
 * never written back and read again. Pointers are already offset to the
 * slice to update.
 */
#ifndef MGPU_OPS_OPS_CPU_H
#define MGPU_OPS_OPS_CPU_H

#include <stddef.h> /* size_t */
#include <stdint.h> /* uint16_t */

#include "ops/ops.h" /* struct mgpu_sgd_hp, struct mgpu_adamw_hp */

/* mom may be NULL when hp->momentum == 0. ng >= 1. */
void mgpu_cpu_sgd_sum(float *w, const float *const *g, int ng, float *mom, size_t n,
		      const struct mgpu_sgd_hp *hp);
void mgpu_cpu_adamw_sum(float *w, const float *const *g, int ng, float *m, float *v,
			size_t n, const struct mgpu_adamw_hp *hp);

/* The cpu backend's gemm_bf16 (ops.h), and the scratch it keeps in
 * dev->impl, released by the backend's fini. */
int mgpu_cpu_gemm_bf16(struct mgpu_dev *dev, enum mgpu_trans ta, enum mgpu_trans tb, int m,
		       int n, int k, float alpha, const uint16_t *A, int lda, long long sa,
		       const uint16_t *Bm, int ldb, long long sb, float beta, float *C, int ldc,
		       long long sc, int batch);
void mgpu_cpu_release(struct mgpu_dev *dev);
/* What that GEMM runs on in this process: OpenBLAS's cblas_sbgemm where it
 * exists and passes a probe, else widened inputs through cblas_sgemm. */
const char *mgpu_cpu_bf16_gemm_path(void);

#endif
