/*
 * test_bf16_probe.c - the probe a bf16 GEMM must pass before the cpu
 * backend uses it (bf16_cpu.c): a right implementation passes, planted
 * wrong ones (each a classic mistake) are rejected, and on a CPU with
 * AVX512-BF16 or AMX the process's bf16 GEMM is oneDNN's matmul, which
 * therefore passed it.
 */
#include <stdint.h> /* uint16_t */
#include <stdio.h>  /* fopen, fgets */
#include <stdlib.h> /* getenv */
#include <string.h> /* strstr */

#include "../t.h"        /* T_RUN, T_CHECK, T_OK, T_SKIP */
#include "core/err.h"    /* mgpu_errmsg */
#include "ops/elem.h"    /* mgpu_bf16_to_f32, mgpu_bf16_from_f32 */
#include "ops/ops.h"     /* mgpu_ops_cpu, struct mgpu_dev */
#include "ops/ops_cpu.h" /* mgpu_cpu_bf16_probe, mgpu_cpu_bf16_gemm_path */

#define N MGPU_N
#define T MGPU_T

/* The ways a candidate goes wrong. */
enum flaw {
	RIGHT,
	SUM_BF16,    /* the running sum rounded to bf16 at every step */
	READ_C,      /* beta C added even when beta == 0 (0 * NaN) */
	TIGHT_LD,    /* lda taken as A's height: ignores the padding */
	WRITE_PAD,   /* beta == 0 clears whole columns of C, padding included */
	TB_IGNORED,  /* B always read untransposed */
	FIRST_ONLY,  /* only the first product of a batch */
	SHARED_A,    /* stride 0 taken as "the next matrix follows" */
	DECLINE,     /* declines every shape */
	FLAWS
};

/* A plain-loop bf16 GEMM (fp32 sums in k order) with one flaw. */
static int planted(void *ctx, enum mgpu_trans ta, enum mgpu_trans tb, int m, int n, int k,
		   float alpha, const uint16_t *A, int lda, long long sa, const uint16_t *Bm,
		   int ldb, long long sb, float beta, float *C, int ldc, long long sc, int batch)
{
	enum flaw f = *(const enum flaw *)ctx;
	int p, i, j, l;

	if (f == DECLINE)
		return 1;
	if (f == TIGHT_LD)
		lda = ta == N ? m : k;
	if (f == SHARED_A && sa == 0)
		sa = (long long)lda * (ta == N ? k : m);
	if (f == FIRST_ONLY)
		batch = 1;
	for (p = 0; p < batch; p++) {
		const uint16_t *a = A + p * sa, *b = Bm + p * sb;
		float *c = C + p * sc;
		if (f == WRITE_PAD && beta == 0.0f)
			for (j = 0; j < n; j++)
				for (i = 0; i < ldc; i++)
					c[(size_t)j * ldc + i] = 0.0f;
		for (j = 0; j < n; j++)
			for (i = 0; i < m; i++) {
				float sum = 0.0f, *cij = &c[(size_t)j * ldc + i];
				for (l = 0; l < k; l++) {
					uint16_t x = ta == N ? a[i + (size_t)l * lda]
							     : a[l + (size_t)i * lda];
					uint16_t y = tb == N || f == TB_IGNORED
							     ? b[l + (size_t)j * ldb]
							     : b[j + (size_t)l * ldb];
					sum += mgpu_bf16_to_f32(x) * mgpu_bf16_to_f32(y);
					if (f == SUM_BF16)
						sum = mgpu_bf16_to_f32(mgpu_bf16_from_f32(sum));
				}
				*cij = alpha * sum +
				       (beta == 0.0f && f != READ_C ? 0.0f : beta * *cij);
			}
	}
	return 0;
}

static void test_right_passes(void)
{
	enum flaw f = RIGHT;

	T_CHECK(mgpu_cpu_bf16_probe(planted, &f) == 1, "a right plain loop failed the probe");
}

static void test_planted_rejected(void)
{
	static const char *const names[FLAWS] = { "right", "sum_bf16", "read_c", "tight_ld",
						   "write_pad", "tb_ignored", "first_only",
						   "shared_a", "decline" };
	enum flaw f;

	for (f = RIGHT + 1; f < FLAWS; f++)
		T_CHECK(mgpu_cpu_bf16_probe(planted, &f) == 0, "planted %s passed the probe",
			names[f]);
}

/* The cpu backend's own bf16 GEMM, whatever it runs on, passes too. */
static struct mgpu_dev cpu;

static int backend(void *ctx, enum mgpu_trans ta, enum mgpu_trans tb, int m, int n, int k,
		   float alpha, const uint16_t *A, int lda, long long sa, const uint16_t *Bm,
		   int ldb, long long sb, float beta, float *C, int ldc, long long sc, int batch)
{
	(void)ctx;
	return mgpu_ops_cpu.gemm(&cpu, MGPU_PREC_BF16, ta, tb, m, n, k, alpha, A, lda, sa, Bm,
				 ldb, sb, beta, C, ldc, sc, batch);
}

static void test_backend_passes(void)
{
	T_OK(mgpu_dev_open(&cpu, &mgpu_ops_cpu, 0));
	T_CHECK(mgpu_cpu_bf16_probe(backend, NULL) == 1, "the cpu backend failed the probe");
	mgpu_dev_close(&cpu);
}

/* 1 when the CPU has bf16 dot products (AVX512-BF16 or AMX), as CPUID
 * says (what oneDNN asks, and what valgrind's emulated CPU answers);
 * elsewhere as /proc/cpuinfo's flags say. */
static int cpu_has_bf16(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
	__builtin_cpu_init();
	return __builtin_cpu_supports("avx512bf16") || __builtin_cpu_supports("amx-bf16");
#else
	char line[4096];
	FILE *fp = fopen("/proc/cpuinfo", "r");
	int has = 0;

	if (!fp)
		return -1;
	while (!has && fgets(line, sizeof line, fp))
		has = !strncmp(line, "flags", 5) &&
		      (strstr(line, " avx512_bf16") || strstr(line, " amx_bf16"));
	fclose(fp);
	return has;
#endif
}

/* Where the CPU can, the bf16 GEMM is oneDNN's matmul; elsewhere not. */
static void test_path(void)
{
	const char *path, *env = getenv("MGPU_CPU_BF16_GEMM");
	int has = cpu_has_bf16();

	if (env && *env && strcmp(env, "auto"))
		T_SKIP("MGPU_CPU_BF16_GEMM=%s chooses the path", env);
	if (has < 0)
		T_SKIP("cannot read /proc/cpuinfo for the CPU's features");
	if (getenv("ONEDNN_MAX_CPU_ISA") || getenv("DNNL_MAX_CPU_ISA"))
		T_SKIP("oneDNN's ISA is capped by the environment");
	path = mgpu_cpu_bf16_gemm_path();
	if (has)
		T_CHECK(strstr(path, "oneDNN matmul") == path, "the bf16 GEMM runs on %s", path);
	else
		T_CHECK(strstr(path, "oneDNN") == NULL, "the bf16 GEMM runs on %s", path);
}

int main(void)
{
	T_RUN(test_right_passes);
	T_RUN(test_planted_rejected);
	T_RUN(test_backend_passes);
	T_RUN(test_path);
	return T_DONE();
}
