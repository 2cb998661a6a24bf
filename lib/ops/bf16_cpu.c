/*
 * bf16_cpu.c - the cpu backend's 16-bit products (gemm of ops.h in bf16,
 * and fp16 on the same fallback), apart from ops_cpu.c because of what it
 * must find out about the machine and its libraries.
 *
 * bf16 runs on the first of these that the process can use, decided once:
 * oneDNN's matmul primitive (bf16_dnnl.c) where the CPU has AVX512-BF16 or
 * AMX (2.1-2.6x the fallback), for products of at least SMALL_MACS
 * multiply-adds (below that its per-call cost outweighs the gain);
 * OpenBLAS's cblas_sbgemm, which exists only when OpenBLAS was built with
 * BUILD_BFLOAT16 (Debian's 0.3.21 was not, though its cblas.h declares it;
 * the symbol is referenced weakly, so the dynamic linker binds it where
 * the library has it and leaves it NULL where not); and the fallback.
 * Before first use a probe runs each candidate against the fallback on
 * awkward shapes (every transpose pair, padded leading dimensions, beta 0
 * over NaN, long k, strided and shared batches); one is used only when it
 * agrees. MGPU_CPU_BF16_GEMM (auto, onednn, sbgemm, sgemm) narrows the
 * choice to one candidate, for tests and comparisons; onednn also takes
 * the small products.
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
#include <stdio.h>   /* snprintf */
#include <stdlib.h>  /* malloc, free, calloc, getenv */
#include <string.h>  /* strcmp */

#include "core/err.h"  /* mgpu_err, MGPU_TRY */
#include "ops/elem.h"  /* mgpu_bf16_from_f32, mgpu_bf16_to_f32, mgpu_hash64 */

#pragma weak cblas_sbgemm

/* oneDNN's matmul takes products of at least this many multiply-adds
 * (m n k, times the batch) under auto: its call costs about 0.45 us on one thread of the
 * AVX512-BF16 machine here, which the fallback beat on 20x20x20 and
 * 64x32x4 and matched on 16x16x48 and 32x32x12; from 24x24x24 on oneDNN
 * was 1.5-2.9x faster. */
#define SMALL_MACS (32LL * 32 * 16)

/* What the bf16 GEMM of this process runs on, decided once. */
static pthread_once_t probe_once = PTHREAD_ONCE_INIT;
static int use_sbgemm, use_dnnl;
static long long dnnl_min_macs; /* oneDNN for m n k >= this */
static const char *bad_env;     /* MGPU_CPU_BF16_GEMM's value when unknown */
static char path_name[192] = "cblas_sgemm on widened inputs";

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
#define PLD 307            /* padded leading dimension of A, B, C */
#define PSTRIDE 40000LL    /* between a batch's matrices: more than one spans */
#define PBUF (3 * 40000)   /* elements of each of A, B, C: three matrices */

/* The probe's cases: every transpose pair with padded leading dimensions
 * at short k with beta 0 over NaN and at long k with beta, and with tight
 * ones (oneDNN picks another kernel for each); strided batches, padded and
 * tight (one 3-D product for oneDNN), and a batch sharing A (stride 0: one
 * product at a time). */
static const struct probe_case {
	int ta, tb, k;
	float alpha, beta;
	int batch;
	long long sa, sb, sc;
	int tight; /* leading dimensions the matrices' heights, else PLD */
} cases[] = {
	{ 0, 0, 7, 0.5f, 0.0f, 1, 0, 0, 0, 0 },   { 1, 0, 7, 0.5f, 0.0f, 1, 0, 0, 0, 0 },
	{ 0, 1, 7, 0.5f, 0.0f, 1, 0, 0, 0, 0 },   { 1, 1, 7, 0.5f, 0.0f, 1, 0, 0, 0, 0 },
	{ 0, 0, PK, 0.5f, 0.75f, 1, 0, 0, 0, 0 }, { 1, 0, PK, 0.5f, 0.75f, 1, 0, 0, 0, 0 },
	{ 0, 1, PK, 0.5f, 0.75f, 1, 0, 0, 0, 0 }, { 1, 1, PK, 0.5f, 0.75f, 1, 0, 0, 0, 0 },
	{ 0, 0, PK, 1.0f, 0.0f, 1, 0, 0, 0, 1 },  { 1, 0, PK, 1.0f, 0.0f, 1, 0, 0, 0, 1 },
	{ 0, 1, PK, 1.0f, 0.0f, 1, 0, 0, 0, 1 },  { 1, 1, PK, -2.0f, 1.0f, 1, 0, 0, 0, 1 },
	{ 1, 0, 40, 1.0f, 1.0f, 3, PSTRIDE, PSTRIDE, PSTRIDE, 0 },
	{ 0, 1, 40, 1.0f, 0.0f, 3, PM * 40, PN * 40, PM * PN, 1 },
	{ 0, 0, 40, 1.0f, 0.0f, 2, 0, PSTRIDE, PSTRIDE, 0 },
};

/* C's element i lies in one of c's results (leading dimension ldc). */
static int inside(const struct probe_case *c, long long i, int ldc)
{
	long long b = c->sc ? i / c->sc : 0, off = c->sc ? i % c->sc : i;

	return b < c->batch && off % ldc < PM && off / ldc < PN;
}

/* cand against the fallback on one case: 1 when they agree, 0 when not
 * or cand declined, < 0 on an error of the fallback. */
static int probe_one(struct mgpu_cpu_scratch *s, mgpu_cpu_gemm16_fn cand, void *ctx,
		     const struct probe_case *c, uint16_t *A, uint16_t *Bm, float *c0, float *c1)
{
	enum mgpu_trans ta = c->ta ? MGPU_T : MGPU_N, tb = c->tb ? MGPU_T : MGPU_N;
	int lda = !c->tight ? PLD : c->ta ? c->k : PM, ldb = !c->tight ? PLD : c->tb ? PN : c->k;
	int ldc = c->tight ? PM : PLD;
	double diff = 0.0, mag = 0.0;
	long long i;
	int rc;

	for (i = 0; i < PBUF; i++) /* NaN where beta == 0 must not look */
		c0[i] = c1[i] = c->beta == 0.0f ? NAN : (float)(i % 7) - 3.0f;
	rc = cand(ctx, ta, tb, PM, PN, c->k, c->alpha, A, lda, c->sa, Bm, ldb, c->sb, c->beta,
		  c0, ldc, c->sc, c->batch);
	if (rc != 0)
		return rc < 0 ? rc : 0;
	MGPU_TRY(fallback(s, ta, tb, PM, PN, c->k, c->alpha, A, lda, c->sa, Bm, ldb, c->sb,
			  c->beta, c1, ldc, c->sc, c->batch, 0));
	for (i = 0; i < PBUF; i++) {
		if (!inside(c, i, ldc)) {
			if (!(c0[i] == c1[i] || (isnan(c0[i]) && isnan(c1[i]))))
				return 0; /* wrote outside C */
			continue;
		}
		if (!isfinite(c0[i]))
			return 0;
		diff = fmax(diff, fabs((double)c0[i] - c1[i]));
		mag = fmax(mag, fabs((double)c1[i]));
	}
	return diff <= 1e-5 * (mag > 1e-30 ? mag : 1e-30);
}

int mgpu_cpu_bf16_probe(mgpu_cpu_gemm16_fn cand, void *ctx)
{
	struct mgpu_cpu_scratch s = { 0 };
	uint16_t *A = malloc(PBUF * sizeof *A), *Bm = malloc(PBUF * sizeof *Bm);
	float *c0 = malloc(PBUF * sizeof *c0), *c1 = malloc(PBUF * sizeof *c1);
	int rc = 1;
	size_t i;

	if (!A || !Bm || !c0 || !c1) {
		rc = mgpu_err(MGPU_ENOMEM, "cpu: out of memory for the bf16 GEMM probe");
		goto out;
	}
	for (i = 0; i < PBUF; i++) {
		A[i] = mgpu_bf16_from_f32((float)(mgpu_hash64(11, i) >> 40) / 8388608.0f - 1.0f);
		Bm[i] = mgpu_bf16_from_f32((float)(mgpu_hash64(12, i) >> 40) / 8388608.0f - 1.0f);
	}
	for (i = 0; i < sizeof cases / sizeof cases[0] && rc == 1; i++)
		rc = probe_one(&s, cand, ctx, &cases[i], A, Bm, c0, c1);
out:
	free(s.a);
	free(s.b);
	free(A);
	free(Bm);
	free(c0);
	free(c1);
	return rc;
}

/* The candidates, as the probe calls them: 0 done, 1 declined. */
static int sbgemm(void *ctx, enum mgpu_trans ta, enum mgpu_trans tb, int m, int n, int k,
		  float alpha, const uint16_t *A, int lda, long long sa, const uint16_t *Bm,
		  int ldb, long long sb, float beta, float *C, int ldc, long long sc, int batch)
{
	int i;

	(void)ctx;
	for (i = 0; i < batch; i++)
		cblas_sbgemm(CblasColMajor, cblas_t(ta), cblas_t(tb), m, n, k, alpha, A + i * sa,
			     lda, Bm + i * sb, ldb, beta, C + i * sc, ldc);
	return 0;
}

static int dnnl_mm(void *ctx, enum mgpu_trans ta, enum mgpu_trans tb, int m, int n, int k,
		   float alpha, const uint16_t *A, int lda, long long sa, const uint16_t *Bm,
		   int ldb, long long sb, float beta, float *C, int ldc, long long sc, int batch)
{
	int done;

	MGPU_TRY(mgpu_cpu_mm_bf16((void **)ctx, ta, tb, m, n, k, alpha, A, lda, sa, Bm, ldb, sb,
				  beta, C, ldc, sc, batch, &done));
	return !done;
}

static void probe(void)
{
	const char *env = getenv("MGPU_CPU_BF16_GEMM");
	int want_dnnl = 1, want_sb = 1, all = 0;
	const char *dnnl_why = NULL, *sb_why = NULL;
	const char *isa_name = mgpu_cpu_mm_isa() == 2 ? "AMX" : "AVX512-BF16";
	void *mm = NULL;

	if (env && *env && strcmp(env, "auto")) {
		all = !strcmp(env, "onednn");
		want_dnnl = all;
		want_sb = !strcmp(env, "sbgemm");
		if (!want_dnnl && !want_sb && strcmp(env, "sgemm")) {
			bad_env = env;
			return;
		}
	}
	if (want_dnnl && !mgpu_cpu_mm_isa())
		dnnl_why = "the CPU has neither AVX512-BF16 nor AMX";
	else if (want_dnnl && mgpu_cpu_bf16_probe(dnnl_mm, &mm) != 1)
		dnnl_why = "oneDNN's matmul failed the probe";
	use_dnnl = want_dnnl && !dnnl_why;
	mgpu_cpu_mm_release(mm);
	if (want_sb && !cblas_sbgemm)
		sb_why = "this OpenBLAS has no cblas_sbgemm";
	else if (want_sb && mgpu_cpu_bf16_probe(sbgemm, NULL) != 1)
		sb_why = "cblas_sbgemm failed the probe";
	use_sbgemm = want_sb && !sb_why;
	dnnl_min_macs = all ? 1 : SMALL_MACS;
	if (use_dnnl && all)
		snprintf(path_name, sizeof path_name, "oneDNN matmul (%s)", isa_name);
	else if (use_dnnl)
		snprintf(path_name, sizeof path_name,
			 "oneDNN matmul (%s); products under %lld multiply-adds on %s", isa_name,
			 SMALL_MACS,
			 use_sbgemm ? "OpenBLAS cblas_sbgemm" : "cblas_sgemm on widened inputs");
	else if (use_sbgemm)
		snprintf(path_name, sizeof path_name, "OpenBLAS cblas_sbgemm");
	else
		snprintf(path_name, sizeof path_name, "cblas_sgemm on widened inputs%s%s%s%s%s",
			 dnnl_why || sb_why ? " (" : "", dnnl_why ? dnnl_why : "",
			 dnnl_why && sb_why ? "; " : "", sb_why ? sb_why : "",
			 dnnl_why || sb_why ? ")" : env && !strcmp(env, "sgemm")
							? " (MGPU_CPU_BF16_GEMM=sgemm)" : "");
}

/* ---- public ------------------------------------------------------------- */

const char *mgpu_cpu_bf16_gemm_path(void)
{
	pthread_once(&probe_once, probe);
	if (bad_env)
		return "none (MGPU_CPU_BF16_GEMM is not auto, onednn, sbgemm or sgemm)";
	return path_name;
}

void mgpu_cpu_release(struct mgpu_dev *dev)
{
	struct mgpu_cpu_scratch *s = dev->impl;

	if (!s)
		return;
	mgpu_cpu_mm_release(s->mm);
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
	int done = 0;

	if (m == 0 || n == 0 || batch == 0)
		return 0;
	MGPU_TRY(mgpu_cpu_scratch(dev, &s));
	/* OpenBLAS has no fp16 GEMM of this kind (its shgemm is not in
	 * Debian's): fp16 always takes the widened inputs, exact as for bf16.
	 * alpha == 0 or k == 0 reads neither A nor B: the fallback's */
	if (prec == MGPU_PREC_BF16 && alpha != 0.0f && k > 0) {
		pthread_once(&probe_once, probe);
		if (bad_env)
			return mgpu_err(MGPU_EINVAL, "MGPU_CPU_BF16_GEMM: '%s' is not one of "
					"auto|onednn|sbgemm|sgemm", bad_env);
		/* a batch is one 3-D primitive, one call's cost, wherever the
		 * matrices lie apart (bf16_dnnl.c) */
		if (use_dnnl && (long long)m * n * k * batch >= dnnl_min_macs) {
			MGPU_TRY(mgpu_cpu_mm_bf16(&s->mm, ta, tb, m, n, k, alpha, A, lda, sa, Bm,
						  ldb, sb, beta, C, ldc, sc, batch, &done));
			if (done)
				return 0;
		}
		if (use_sbgemm)
			return sbgemm(NULL, ta, tb, m, n, k, alpha, A, lda, sa, Bm, ldb, sb, beta,
				      C, ldc, sc, batch);
	}
	return fallback(s, ta, tb, m, n, k, alpha, A, lda, sa, Bm, ldb, sb, beta, C, ldc, sc,
			batch, prec == MGPU_PREC_FP16);
}
