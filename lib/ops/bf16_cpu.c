/*
 * bf16_cpu.c - the cpu backend's 16-bit products (gemm of ops.h in bf16,
 * and fp16 on the same fallback), apart
 * from ops_cpu.c because of what it must find out about OpenBLAS.
 *
 * OpenBLAS has cblas_sbgemm only when it was built with BUILD_BFLOAT16
 * (Debian's 0.3.21 was not, though its cblas.h declares it). The symbol is
 * referenced weakly: the dynamic linker binds it where the library has it
 * and leaves it NULL where not, so one binary uses it wherever it exists.
 * Before first use a probe runs it against the fallback on awkward shapes
 * (every transpose pair, padded leading dimensions, beta 0 over NaN, long
 * k); it is used only when it agrees.
 *
 * The fallback widens op(A) and op(B) to fp32 in per-device scratch
 * (exact) and calls cblas_sgemm. A product of two bf16 values is exact in
 * fp32, so this computes precisely "bf16 inputs, fp32 accumulation".
 *
 * Scratch lives in dev->impl (struct mgpu_cpu_scratch), grows on demand and is
 * freed by mgpu_cpu_release; a device is used by one thread at a time.
 */
#include "ops/ops_cpu.h"

#include <cblas.h>   /* cblas_sgemm, cblas_sbgemm (weak) */
#include <math.h>    /* fabs, isfinite, NAN */
#include <pthread.h> /* pthread_once */
#include <stdlib.h>  /* malloc, free, calloc */

#include "core/err.h"  /* mgpu_err, MGPU_TRY */
#include "ops/elem.h"  /* mgpu_bf16_from_f32, mgpu_bf16_to_f32, mgpu_hash64 */

#pragma weak cblas_sbgemm

/* What the bf16 GEMM of this process runs on, decided once. */
static pthread_once_t probe_once = PTHREAD_ONCE_INIT;
static int use_sbgemm;
static const char *path_name = "cblas_sgemm on widened inputs";

int mgpu_cpu_grow(float **p, size_t *cap, size_t n)
{
	if (n <= *cap)
		return 0;
	free(*p);
	*p = malloc(n * sizeof **p);
	*cap = *p ? n : 0;
	if (!*p)
		return mgpu_err(MGPU_ENOMEM, "cpu: out of memory for %zu floats of scratch", n);
	return 0;
}

int mgpu_cpu_scratch(struct mgpu_dev *dev, struct mgpu_cpu_scratch **s)
{
	if (!dev->impl) {
		dev->impl = calloc(1, sizeof(struct mgpu_cpu_scratch));
		if (!dev->impl)
			return mgpu_err(MGPU_ENOMEM, "cpu: out of memory");
	}
	*s = dev->impl;
	return 0;
}

/* Elements a column-major rows x cols matrix with leading dimension ld spans. */
static size_t span(int rows, int cols, int ld)
{
	return rows > 0 && cols > 0 ? (size_t)ld * (size_t)(cols - 1) + (size_t)rows : 0;
}

/* bf16 (f16: fp16) values to fp32, exactly. */
static void widen(float *restrict dst, const uint16_t *restrict src, size_t n, int f16)
{
	size_t i;

	if (f16)
		for (i = 0; i < n; i++)
			dst[i] = mgpu_f16_to_f32(src[i]);
	else
		for (i = 0; i < n; i++)
			dst[i] = mgpu_bf16_to_f32(src[i]);
}

static CBLAS_TRANSPOSE cblas_t(enum mgpu_trans t)
{
	return t == MGPU_T ? CblasTrans : CblasNoTrans;
}

/* C = beta C, for the products that read neither A nor B; beta 0 writes
 * zeros over whatever C held (NaN included), as BLAS does. */
static void scale_only(float *C, int m, int n, int ldc, float beta)
{
	int i, j;

	for (j = 0; j < n; j++)
		for (i = 0; i < m; i++)
			C[(size_t)j * ldc + i] = beta == 0.0f ? 0.0f : beta * C[(size_t)j * ldc + i];
}

/* One product through cblas_sgemm on widened copies in s. alpha == 0 or
 * k == 0 reads neither A nor B and never reaches OpenBLAS: its
 * small-matrix kernels (SkylakeX, Cooperlake; 0.3.21) read A and B before
 * they look at alpha, and here there are no widened copies to read. */
static void fallback_one(struct mgpu_cpu_scratch *s, enum mgpu_trans ta, enum mgpu_trans tb,
			 int m, int n, int k, float alpha, const uint16_t *A, int lda,
			 const uint16_t *Bm, int ldb, float beta, float *C, int ldc, int f16)
{
	if (alpha == 0.0f || k == 0) {
		scale_only(C, m, n, ldc, beta);
		return;
	}
	widen(s->a, A, span(ta == MGPU_N ? m : k, ta == MGPU_N ? k : m, lda), f16);
	widen(s->b, Bm, span(tb == MGPU_N ? k : n, tb == MGPU_N ? n : k, ldb), f16);
	cblas_sgemm(CblasColMajor, cblas_t(ta), cblas_t(tb), m, n, k, alpha, s->a, lda, s->b,
		    ldb, beta, C, ldc);
}

static int fallback(struct mgpu_cpu_scratch *s, enum mgpu_trans ta, enum mgpu_trans tb, int m,
		    int n, int k, float alpha, const uint16_t *A, int lda, long long sa,
		    const uint16_t *Bm, int ldb, long long sb, float beta, float *C, int ldc,
		    long long sc, int batch, int f16)
{
	int i;

	MGPU_TRY(mgpu_cpu_grow(&s->a, &s->cap_a, span(ta == MGPU_N ? m : k, ta == MGPU_N ? k : m, lda)));
	MGPU_TRY(mgpu_cpu_grow(&s->b, &s->cap_b, span(tb == MGPU_N ? k : n, tb == MGPU_N ? n : k, ldb)));
	for (i = 0; i < batch; i++)
		fallback_one(s, ta, tb, m, n, k, alpha, A + i * sa, lda, Bm + i * sb, ldb, beta,
			     C + i * sc, ldc, f16);
	return 0;
}

/* ---- the probe ---------------------------------------------------------- */

#define PM 5
#define PN 3
#define PK 300
#define PLD 307 /* leading dimension of A, B, C: padding everywhere */

/* cblas_sbgemm against the fallback on one case; 1 when they agree. */
static int probe_case(struct mgpu_cpu_scratch *s, enum mgpu_trans ta, enum mgpu_trans tb, int k,
		      float beta, uint16_t *A, uint16_t *Bm, float *c0, float *c1)
{
	double diff = 0.0, mag = 0.0;
	int i;

	for (i = 0; i < PLD * PLD; i++) /* NaN where beta == 0 must not look */
		c0[i] = c1[i] = beta == 0.0f ? NAN : (float)(i % 7) - 3.0f;
	cblas_sbgemm(CblasColMajor, cblas_t(ta), cblas_t(tb), PM, PN, k, 0.5f, A, PLD, Bm, PLD,
		     beta, c0, PLD);
	if (fallback(s, ta, tb, PM, PN, k, 0.5f, A, PLD, 0, Bm, PLD, 0, beta, c1, PLD, 0, 1, 0) < 0)
		return 0;
	for (i = 0; i < PLD * PLD; i++) {
		int inside = i % PLD < PM && i / PLD < PN;
		if (!inside && !(c0[i] == c1[i] || (isnan(c0[i]) && isnan(c1[i]))))
			return 0; /* wrote outside C */
		if (!inside)
			continue;
		if (!isfinite(c0[i]))
			return 0;
		diff = fmax(diff, fabs((double)c0[i] - c1[i]));
		mag = fmax(mag, fabs((double)c1[i]));
	}
	return diff <= 1e-5 * (mag > 1e-30 ? mag : 1e-30);
}

static void probe(void)
{
	struct mgpu_cpu_scratch s = { 0 };
	uint16_t *A = malloc((size_t)PLD * PLD * sizeof *A);
	uint16_t *Bm = malloc((size_t)PLD * PLD * sizeof *Bm);
	float *c0 = malloc((size_t)PLD * PLD * sizeof *c0);
	float *c1 = malloc((size_t)PLD * PLD * sizeof *c1);
	int t, ok = 1;
	size_t i;

	if (!cblas_sbgemm) {
		path_name = "cblas_sgemm on widened inputs (this OpenBLAS has no cblas_sbgemm)";
		goto out;
	}
	if (!A || !Bm || !c0 || !c1)
		goto out; /* the fallback is always right */
	for (i = 0; i < (size_t)PLD * PLD; i++) {
		A[i] = mgpu_bf16_from_f32((float)(mgpu_hash64(11, i) >> 40) / 8388608.0f - 1.0f);
		Bm[i] = mgpu_bf16_from_f32((float)(mgpu_hash64(12, i) >> 40) / 8388608.0f - 1.0f);
	}
	for (t = 0; t < 8 && ok; t++)
		ok = probe_case(&s, (t & 1) ? MGPU_T : MGPU_N, (t & 2) ? MGPU_T : MGPU_N,
				(t & 4) ? PK : 7, (t & 4) ? 0.75f : 0.0f, A, Bm, c0, c1);
	use_sbgemm = ok;
	path_name = ok ? "OpenBLAS cblas_sbgemm"
		       : "cblas_sgemm on widened inputs (cblas_sbgemm failed the probe)";
out:
	free(s.a);
	free(s.b);
	free(A);
	free(Bm);
	free(c0);
	free(c1);
}

/* ---- public ------------------------------------------------------------- */

const char *mgpu_cpu_bf16_gemm_path(void)
{
	pthread_once(&probe_once, probe);
	return path_name;
}

void mgpu_cpu_release(struct mgpu_dev *dev)
{
	struct mgpu_cpu_scratch *s = dev->impl;

	if (!s)
		return;
	free(s->a);
	free(s->b);
	free(s->s);
	free(s->dp);
	free(s->r);
	free(s);
	dev->impl = NULL;
}

int mgpu_cpu_gemm16(struct mgpu_dev *dev, enum mgpu_prec prec, enum mgpu_trans ta,
		    enum mgpu_trans tb, int m, int n, int k, float alpha, const uint16_t *A, int lda,
		    long long sa, const uint16_t *Bm, int ldb, long long sb, float beta, float *C,
		    int ldc, long long sc, int batch)
{
	struct mgpu_cpu_scratch *s = NULL;
	int i;

	if (m == 0 || n == 0 || batch == 0)
		return 0;
	/* OpenBLAS has no fp16 GEMM of this kind (its shgemm is not in
	 * Debian's): fp16 always takes the widened inputs, exact as for bf16 */
	if (prec == MGPU_PREC_BF16) {
		pthread_once(&probe_once, probe);
		if (use_sbgemm) {
			for (i = 0; i < batch; i++)
				cblas_sbgemm(CblasColMajor, cblas_t(ta), cblas_t(tb), m, n, k,
					     alpha, A + i * sa, lda, Bm + i * sb, ldb, beta,
					     C + i * sc, ldc);
			return 0;
		}
	}
	MGPU_TRY(mgpu_cpu_scratch(dev, &s));
	return fallback(s, ta, tb, m, n, k, alpha, A, lda, sa, Bm, ldb, sb, beta, C, ldc, sc,
			batch, prec == MGPU_PREC_FP16);
}
