/*
 * ops_ref.c - the "ref" backend: the obvious loop for every op of ops.h.
 *
 * This is the definition each other backend is checked against (tests/ops,
 * mgpu_ops_compare), so clarity beats speed: sgemm is a triple loop
 * accumulating in double, reductions (nrm2, col_sum) accumulate in double,
 * element ops call the elem.h function once per element.
 *
 * Provides mgpu_ops_ref. Memory is host memory (host_memory = 1), one
 * device (index 0); every op is synchronous.
 * BLAS semantics: beta == 0 overwrites C without reading it (NaNs in C are
 * ignored), alpha == 0 or k == 0 never reads A or B; the same holds for
 * col_sum's beta and emb_bwd's acc. emb_bwd is the gather form (one table
 * element at a time, its rows in order), the very loop the CUDA kernel runs.
 */
#include "ops/ops.h"

#include <math.h>   /* sqrt */
#include <stddef.h> /* size_t */

#include "core/err.h"  /* MGPU_TRY */
#include "ops/elem.h"  /* mgpu_act_f, mgpu_act_df, mgpu_dropout_factor, optimizers */
#include "ops/loops.h" /* ops_check_*, ops_host_* */

/* Element (i, j) of op(X) for a column-major X with leading dimension ld. */
static float at(const float *X, int ld, enum mgpu_trans t, int i, int j)
{
	return t == MGPU_N ? X[i + (size_t)j * ld] : X[j + (size_t)i * ld];
}

static int ref_sgemm(struct mgpu_dev *dev, enum mgpu_trans ta, enum mgpu_trans tb, int m,
		     int n, int k, float alpha, const float *A, int lda, const float *Bm,
		     int ldb, float beta, float *C, int ldc)
{
	double sum;
	float *c;
	int i, j, l;

	(void)dev;
	MGPU_TRY(ops_check_sgemm(ta, tb, m, n, k, lda, ldb, ldc));
	for (j = 0; j < n; j++) {
		for (i = 0; i < m; i++) {
			sum = 0.0;
			if (alpha != 0.0f)
				for (l = 0; l < k; l++)
					sum += (double)at(A, lda, ta, i, l) * at(Bm, ldb, tb, l, j);
			c = &C[i + (size_t)j * ldc];
			*c = beta == 0.0f ? (float)(alpha * sum)
					  : (float)(alpha * sum + (double)beta * *c);
		}
	}
	return 0;
}

static int ref_nrm2(struct mgpu_dev *dev, size_t n, const float *x, float *out_host)
{
	double s = 0.0;
	size_t i;

	(void)dev;
	for (i = 0; i < n; i++)
		s += (double)x[i] * x[i];
	*out_host = (float)sqrt(s);
	return 0;
}

static int ref_scal(struct mgpu_dev *dev, size_t n, float alpha, float *x)
{
	size_t i;

	(void)dev;
	for (i = 0; i < n; i++)
		x[i] *= alpha;
	return 0;
}

/* Y, Z (B,D), b (D). */
static int ref_bias_act(struct mgpu_dev *dev, enum mgpu_act act, float *Y, float *Z,
			const float *b, int B, int D)
{
	size_t idx;
	int i, j;

	(void)dev;
	MGPU_TRY(ops_check_rows("bias_act", B, D));
	MGPU_TRY(ops_check_act("bias_act", act));
	for (i = 0; i < B; i++)
		for (j = 0; j < D; j++) {
			idx = (size_t)i * D + j;
			Z[idx] += b[j];
			Y[idx] = mgpu_act_f(act, Z[idx]);
		}
	return 0;
}

static int ref_act_bwd(struct mgpu_dev *dev, enum mgpu_act act, float *dZ, const float *dY,
		       const float *Z, size_t n)
{
	size_t i;

	(void)dev;
	MGPU_TRY(ops_check_act("act_bwd", act));
	for (i = 0; i < n; i++)
		dZ[i] = dY[i] * mgpu_act_df(act, Z[i]);
	return 0;
}

/* db (D), dY (B,D). */
static int ref_col_sum(struct mgpu_dev *dev, float *db, const float *dY, int B, int D,
		       float beta)
{
	double s;
	int i, j;

	(void)dev;
	MGPU_TRY(ops_check_rows("col_sum", B, D));
	for (j = 0; j < D; j++) {
		s = 0.0;
		for (i = 0; i < B; i++)
			s += dY[(size_t)i * D + j];
		db[j] = beta == 0.0f ? (float)s : (float)(beta * db[j] + s);
	}
	return 0;
}

static int ref_dropout(struct mgpu_dev *dev, float *Y, const float *X, size_t n, float p,
		       uint64_t seed, uint64_t offset)
{
	size_t i;

	(void)dev;
	MGPU_TRY(ops_check_dropout(p));
	for (i = 0; i < n; i++)
		Y[i] = X[i] * mgpu_dropout_factor(seed, offset + i, p);
	return 0;
}

static int ref_u8_to_f32(struct mgpu_dev *dev, float *Y, const uint8_t *X, size_t n,
			 float scale, float shift)
{
	size_t i;

	(void)dev;
	for (i = 0; i < n; i++)
		Y[i] = (float)X[i] * scale + shift;
	return 0;
}

static int ref_sgd(struct mgpu_dev *dev, float *w, const float *g, float *mom, size_t n,
		   const struct mgpu_sgd_hp *hp)
{
	float unused = 0.0f;
	size_t i;

	(void)dev;
	MGPU_TRY(ops_check_sgd(n, mom, hp));
	for (i = 0; i < n; i++) {
		unused = 0.0f;
		mgpu_sgd_elem(&w[i], g[i], mom ? &mom[i] : &unused, hp);
	}
	return 0;
}

static int ref_adamw(struct mgpu_dev *dev, float *w, const float *g, float *m, float *v,
		     size_t n, const struct mgpu_adamw_hp *hp)
{
	size_t i;

	(void)dev;
	for (i = 0; i < n; i++)
		mgpu_adamw_elem(&w[i], g[i], &m[i], &v[i], hp);
	return 0;
}

/* ---- transformer ops ---------------------------------------------------- */

static int ref_sgemm_strided(struct mgpu_dev *dev, enum mgpu_trans ta, enum mgpu_trans tb,
			     int m, int n, int k, float alpha, const float *A, int lda,
			     long long sa, const float *Bm, int ldb, long long sb, float beta,
			     float *C, int ldc, long long sc, int batch)
{
	int i;

	MGPU_TRY(ops_check_sgemm_strided(ta, tb, m, n, k, lda, ldb, ldc, sa, sb, sc, batch));
	for (i = 0; i < batch; i++)
		MGPU_TRY(ref_sgemm(dev, ta, tb, m, n, k, alpha, A + i * sa, lda, Bm + i * sb, ldb,
				   beta, C + i * sc, ldc));
	return 0;
}

static int ref_add(struct mgpu_dev *dev, float *Y, const float *X1, const float *X2, size_t n)
{
	size_t i;

	(void)dev;
	for (i = 0; i < n; i++)
		Y[i] = X1[i] + X2[i];
	return 0;
}

/* Y (B,T,D), ids (B,T), wte (V,D), wpe (T,D). */
static int ref_emb_fwd(struct mgpu_dev *dev, float *Y, const int32_t *ids, const float *wte,
		       const float *wpe, int B, int T, int V, int D)
{
	size_t i, n = (size_t)B * (size_t)T * (size_t)D;

	(void)dev;
	MGPU_TRY(ops_check_emb("emb_fwd", B, T, V, D));
	MGPU_TRY(ops_check_ids(ids, (size_t)B * (size_t)T, V));
	for (i = 0; i < n; i++)
		Y[i] = mgpu_emb_elem(ids, wte, wpe, T, D, i);
	return 0;
}

/* The gather form, one (row, column) of the tables at a time: the CUDA
 * kernels' arithmetic and order exactly. */
static int ref_emb_bwd(struct mgpu_dev *dev, float *dwte, float *dwpe, const float *dY,
		       const int32_t *ids, int B, int T, int V, int D, float acc)
{
	size_t N = (size_t)B * (size_t)T;
	int v, t, c;

	(void)dev;
	MGPU_TRY(ops_check_emb("emb_bwd", B, T, V, D));
	MGPU_TRY(ops_check_ids(ids, N, V));
	for (v = 0; v < V; v++)
		for (c = 0; c < D; c++)
			mgpu_emb_tok_col(dY, ids, N, D, v, c, acc, dwte);
	for (t = 0; t < T; t++)
		for (c = 0; c < D; c++)
			mgpu_emb_pos_col(dY, B, T, D, t, c, acc, dwpe);
	return 0;
}

/* Y (B*H,T,Dh) <- X (B,T,H*Dh) rows ldx apart. */
static int ref_heads_split(struct mgpu_dev *dev, float *Y, const float *X, int ldx, int B,
			   int T, int H, int Dh)
{
	size_t i, n = (size_t)B * (size_t)T * (size_t)H * (size_t)Dh;

	(void)dev;
	MGPU_TRY(ops_check_heads("heads_split", ldx, B, T, H, Dh));
	for (i = 0; i < n; i++)
		Y[i] = X[mgpu_heads_index(i, T, H, Dh, ldx)];
	return 0;
}

static int ref_heads_merge(struct mgpu_dev *dev, float *Y, int ldy, const float *X, int B,
			   int T, int H, int Dh)
{
	size_t i, n = (size_t)B * (size_t)T * (size_t)H * (size_t)Dh;

	(void)dev;
	MGPU_TRY(ops_check_heads("heads_merge", ldy, B, T, H, Dh));
	for (i = 0; i < n; i++)
		Y[mgpu_heads_index(i, T, H, Dh, ldy)] = X[i];
	return 0;
}

static int ref_f32_to_bf16(struct mgpu_dev *dev, uint16_t *Y, const float *X, size_t n)
{
	size_t i;

	(void)dev;
	for (i = 0; i < n; i++)
		Y[i] = mgpu_bf16_from_f32(X[i]);
	return 0;
}

static int ref_bf16_to_f32(struct mgpu_dev *dev, float *Y, const uint16_t *X, size_t n)
{
	size_t i;

	(void)dev;
	for (i = 0; i < n; i++)
		Y[i] = mgpu_bf16_to_f32(X[i]);
	return 0;
}

/* Element (i, j) of op(X) for a column-major bf16 X, widened (exactly). */
static float at16(const uint16_t *X, int ld, enum mgpu_trans t, int i, int j)
{
	return mgpu_bf16_to_f32(t == MGPU_N ? X[i + (size_t)j * ld] : X[j + (size_t)i * ld]);
}

/* The definition of the bf16 GEMM: the inputs are bf16 already (rounded
 * by whoever converted them), their products are exact and are summed in
 * double like ref_sgemm's, so every backend's fp32 accumulation is measured
 * against the exact result. */
static int ref_gemm_bf16(struct mgpu_dev *dev, enum mgpu_trans ta, enum mgpu_trans tb, int m,
			 int n, int k, float alpha, const uint16_t *A, int lda, long long sa,
			 const uint16_t *Bm, int ldb, long long sb, float beta, float *C, int ldc,
			 long long sc, int batch)
{
	const uint16_t *a, *b;
	double sum;
	float *c;
	int p, i, j, l;

	(void)dev;
	MGPU_TRY(ops_check_sgemm_strided(ta, tb, m, n, k, lda, ldb, ldc, sa, sb, sc, batch));
	for (p = 0; p < batch; p++) {
		a = A + p * sa;
		b = Bm + p * sb;
		for (j = 0; j < n; j++)
			for (i = 0; i < m; i++) {
				sum = 0.0;
				if (alpha != 0.0f)
					for (l = 0; l < k; l++)
						sum += (double)at16(a, lda, ta, i, l) *
						       at16(b, ldb, tb, l, j);
				c = &C[p * sc + i + (size_t)j * ldc];
				*c = beta == 0.0f ? (float)(alpha * sum)
						  : (float)(alpha * sum + (double)beta * *c);
			}
	}
	return 0;
}

/* elem.h's order, chunk by chunk, lane by lane: the definition itself. */
static int ref_sum_acc(struct mgpu_dev *dev, double *acc, const float *x, size_t n,
		       int squares, double scale)
{
	double t = 0.0;
	size_t off, len;

	(void)dev;
	if (n == 0)
		return 0;
	for (off = 0; off < n; off += len) {
		len = n - off < MGPU_SUM_CHUNK ? n - off : MGPU_SUM_CHUNK;
		t += mgpu_sum_chunk(x + off, len, squares);
	}
	*acc += scale * t;
	return 0;
}

const struct mgpu_ops mgpu_ops_ref = {
	.name = "ref",
	.host_memory = 1,
	.device_count = ops_host_device_count,
	.init = ops_host_init,
	.fini = ops_host_fini,
	.alloc = ops_host_alloc,
	.release = ops_host_release,
	.to_dev = ops_host_copy,
	.to_host = ops_host_copy,
	.zero = ops_host_zero,
	.sync = ops_host_sync,
	.sgemm = ref_sgemm,
	.nrm2 = ref_nrm2,
	.scal = ref_scal,
	.bias_act = ref_bias_act,
	.act_bwd = ref_act_bwd,
	.col_sum = ref_col_sum,
	.ln_fwd = ops_host_ln_fwd,
	.ln_bwd = ops_host_ln_bwd,
	.dropout = ref_dropout,
	.xent = ops_host_xent,
	.u8_to_f32 = ref_u8_to_f32,
	.sgd = ref_sgd,
	.adamw = ref_adamw,
	.sgemm_strided = ref_sgemm_strided,
	.add = ref_add,
	.emb_fwd = ref_emb_fwd,
	.emb_bwd = ref_emb_bwd,
	.attn_softmax = ops_host_attn_softmax,
	.attn_softmax_bwd = ops_host_attn_softmax_bwd,
	.heads_split = ref_heads_split,
	.heads_merge = ref_heads_merge,
	.f32_to_bf16 = ref_f32_to_bf16,
	.bf16_to_f32 = ref_bf16_to_f32,
	.gemm_bf16 = ref_gemm_bf16,
	.sum_acc = ref_sum_acc,
};
