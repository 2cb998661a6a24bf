/*
 * mm.c - the models' products in fp32, bf16 or fp16 (see mm.h), and the
 * precision setting of model.h.
 */
#include "model/mm.h"

#include <stdint.h> /* uintptr_t, uint16_t */

#include "core/err.h" /* mgpu_err, MGPU_TRY */
#include "model/arch.h" /* MGPU_ARCH_NO_FP16 */

int mgpu_model_set_prec(struct mgpu_model *m, int prec)
{
	if (prec != MGPU_PREC_FP32 && prec != MGPU_PREC_BF16 && prec != MGPU_PREC_FP16)
		return mgpu_err(MGPU_EINVAL, "model: unknown precision %d", prec);
	if (prec == MGPU_PREC_FP16 && (m->arch->flags & MGPU_ARCH_NO_FP16))
		return mgpu_err(MGPU_EINVAL, "model: a %s trains in fp32 or bf16, not fp16",
				m->arch->name);
	if (prec != MGPU_PREC_FP32 && !m->w16)
		MGPU_TRY(mgpu_dev_alloc(m->dev, (void **)&m->w16, m->nparams * sizeof *m->w16));
	m->prec = prec;
	return 0;
}

/* X (n elements) rounded to the model's 16-bit type into Y. */
static int round16(struct mgpu_model *m, uint16_t *Y, const float *X, size_t n)
{
	if (m->prec == MGPU_PREC_FP16)
		return m->dev->ops->f32_to_f16(m->dev, Y, X, n);
	return m->dev->ops->f32_to_bf16(m->dev, Y, X, n);
}

int mgpu_mm_round_weights(struct mgpu_model *m)
{
	if (m->prec == MGPU_PREC_FP32)
		return 0;
	return round16(m, m->w16, m->w, m->nparams);
}

void mgpu_mm_free(struct mgpu_model *m)
{
	int i;

	if (!m->dev)
		return;
	mgpu_dev_free(m->dev, m->w16, m->nparams * sizeof *m->w16);
	m->w16 = NULL;
	for (i = 0; i < 2; i++) {
		mgpu_dev_free(m->dev, m->s16[i], m->s16_cap[i] * sizeof *m->s16[i]);
		m->s16[i] = NULL;
		m->s16_cap[i] = 0;
		m->s16_src[i] = NULL;
	}
}

void mgpu_mm_reuse(struct mgpu_model *m)
{
	m->s16_keep = 1;
}

/* Elements of `batch` column-major rows x cols matrices (leading
 * dimension ld, stride apart): the span to round, gaps included. */
static size_t span(int rows, int cols, int ld, long long stride, int batch)
{
	if (rows <= 0 || cols <= 0 || batch <= 0)
		return 0;
	return (size_t)stride * (size_t)(batch - 1) + (size_t)ld * (size_t)(cols - 1) +
	       (size_t)rows;
}

/* Scratch slot i holding at least n bf16 elements. */
static int scratch(struct mgpu_model *m, int i, size_t n)
{
	if (n <= m->s16_cap[i])
		return 0;
	mgpu_dev_free(m->dev, m->s16[i], m->s16_cap[i] * sizeof *m->s16[i]);
	m->s16[i] = NULL;
	m->s16_cap[i] = 0;
	MGPU_TRY(mgpu_dev_alloc(m->dev, (void **)&m->s16[i], n * sizeof *m->s16[i]));
	m->s16_cap[i] = n;
	return 0;
}

/* X (n elements from X) as 16-bit values: the rounded weights when X lies
 * in the flat weight buffer, else rounded now into scratch slot i. */
static int as_16(struct mgpu_model *m, int i, const float *X, size_t n, const uint16_t **out)
{
	uintptr_t x = (uintptr_t)X, w = (uintptr_t)m->w;

	if (x >= w && x < w + m->nparams * sizeof(float)) {
		*out = m->w16 + (X - m->w);
		return 0;
	}
	if (m->s16_keep && m->s16_src[i] == X && m->s16_n[i] == n) {
		*out = m->s16[i];
		return 0;
	}
	m->s16_src[i] = NULL; /* nothing valid until the rounding is queued */
	MGPU_TRY(scratch(m, i, n));
	*out = m->s16[i];
	MGPU_TRY(round16(m, m->s16[i], X, n));
	m->s16_src[i] = X;
	m->s16_n[i] = n;
	return 0;
}

int mgpu_mm_strided(struct mgpu_model *m, enum mgpu_trans ta, enum mgpu_trans tb, int M,
		    int N, int K, float alpha, const float *A, int lda, long long sa,
		    const float *Bm, int ldb, long long sb, float beta, float *C, int ldc,
		    long long sc, int batch)
{
	const struct mgpu_ops *o = m->dev->ops;
	const uint16_t *a16, *b16;
	int rc;

	/* alpha == 0 or K == 0 reads neither A nor B: nothing to round */
	if (m->prec == MGPU_PREC_FP32 || alpha == 0.0f || K == 0) {
		m->s16_keep = 0;
		return o->gemm(m->dev, MGPU_PREC_FP32, ta, tb, M, N, K, alpha, A, lda, sa, Bm, ldb,
			       sb, beta, C, ldc, sc, batch);
	}
	rc = as_16(m, 0, A, span(ta == MGPU_N ? M : K, ta == MGPU_N ? K : M, lda, sa, batch),
		   &a16);
	if (rc == 0)
		rc = as_16(m, 1, Bm,
			   span(tb == MGPU_N ? K : N, tb == MGPU_N ? N : K, ldb, sb, batch), &b16);
	m->s16_keep = 0; /* a promise covers one product */
	if (rc < 0)
		return rc;
	return o->gemm(m->dev, m->prec, ta, tb, M, N, K, alpha, a16, lda, sa, b16, ldb, sb, beta,
		       C, ldc, sc, batch);
}

int mgpu_mm(struct mgpu_model *m, enum mgpu_trans ta, enum mgpu_trans tb, int M, int N,
	    int K, float alpha, const float *A, int lda, const float *Bm, int ldb, float beta,
	    float *C, int ldc)
{
	return mgpu_mm_strided(m, ta, tb, M, N, K, alpha, A, lda, 0, Bm, ldb, 0, beta, C, ldc,
			       0, 1);
}
