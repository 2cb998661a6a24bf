/*
 * ops_cpu.c - the "cpu" backend: OpenBLAS for gemm/nrm2, fast loops
 * over elem.h for the rest. One CPU rank = one device = one BLAS thread.
 *
 * Provides mgpu_ops_cpu. Memory is host memory (host_memory = 1), one
 * device (index 0); every op is synchronous.
 *
 * gemm passes its column-major arguments unchanged to
 * cblas_sgemm(CblasColMajor, ...): the arguments the CUDA backend hands to
 * cuBLAS are the ones the CPU tests validate.
 *
 * Speed notes (the loops count towards the framework-overhead budget):
 * - The default build is -O2, where gcc 12 vectorises only loops whose trip
 *   count is a multiple of the vector width. The hot loops therefore run in
 *   blocks of W elements (a fixed inner trip count gcc vectorises) plus a
 *   scalar tail, and take restrict pointers so no run-time alias checks are
 *   needed. Ops documented as allowed in place (bias_act Y == Z, act_bwd
 *   dZ == dY) get a separate in-place loop instead of lying with restrict.
 * - bias_act is one fused pass (bias add, store Z, activation, store Y).
 * - relu, identity and gelu have vector paths (gelu's erf and exp are
 *   elem.h's branch-free ones); tanh costs a tanhf call per element.
 */
#include "ops/ops.h"

#include <cblas.h>  /* cblas_sgemm, cblas_snrm2, openblas_set_num_threads */
#include <limits.h> /* INT_MAX */
#include <math.h>   /* sqrt */
#include <omp.h>    /* omp_set_num_threads: oneDNN runs on OpenMP */
#include <stddef.h> /* size_t */
#include <string.h> /* memcpy */

#include "core/err.h"  /* MGPU_TRY */
#include "ops/conv_host.h" /* the conv-net ops (conv_cpu.c, conv_ref.c) */
#include "ops/loss_host.h" /* mse, pix_xent */
#include "ops/elem.h"  /* mgpu_act_f, mgpu_act_df, mgpu_dropout_factor, optimizers */
#include "ops/loops.h" /* ops_check_*, ops_host_* */
#include "ops/ops_cpu.h" /* mgpu_cpu_gemm16, the row and attention ops */

#define W MGPU_CPU_W

/* BLAS level-1 calls take int lengths: longer vectors go in chunks. */
#define BLAS_CHUNK ((size_t)1 << 30)

static int cpu_init(struct mgpu_dev *dev, int index)
{
	MGPU_TRY(ops_host_init(dev, index));
	openblas_set_num_threads(1);
	omp_set_num_threads(1); /* oneDNN's threads, for this thread (conv_cpu.c) */
	return 0;
}

/* C (m x n, column-major, ldc) = 0. */
static void zero_cols(float *C, int m, int n, int ldc)
{
	int j;

	if (ldc == m) {
		memset(C, 0, (size_t)m * (size_t)n * sizeof *C);
		return;
	}
	for (j = 0; j < n; j++)
		memset(C + (size_t)j * (size_t)ldc, 0, (size_t)m * sizeof *C);
}

/* beta == 0 is passed as a zeroed C and beta 1: OpenBLAS 0.3.21 clears C
 * with scalar stores (sgemm_beta, 6% of a small gpt's step on Zen), memset
 * with vector ones; 0 + x is x, so C comes out the same. */
static void sgemm_one(enum mgpu_trans ta, enum mgpu_trans tb, int m, int n, int k, float alpha,
		      const float *A, int lda, const float *Bm, int ldb, float beta, float *C,
		      int ldc)
{
	if (m == 0 || n == 0)
		return;
	if (beta == 0.0f) {
		zero_cols(C, m, n, ldc);
		beta = 1.0f;
	}
	cblas_sgemm(CblasColMajor, ta == MGPU_T ? CblasTrans : CblasNoTrans,
		    tb == MGPU_T ? CblasTrans : CblasNoTrans, m, n, k, alpha, A, lda, Bm, ldb,
		    beta, C, ldc);
}

/* fp32: one cblas_sgemm per matrix, the same column-major arguments as
 * cuBLAS gets; bf16 and fp16: bf16_cpu.c. */
static int cpu_gemm(struct mgpu_dev *dev, enum mgpu_prec prec, enum mgpu_trans ta,
		    enum mgpu_trans tb, int m, int n, int k, float alpha, const void *A, int lda,
		    long long sa, const void *Bm, int ldb, long long sb, float beta, float *C,
		    int ldc, long long sc, int batch)
{
	int i;

	MGPU_TRY(ops_check_gemm(prec, ta, tb, m, n, k, lda, ldb, ldc, sa, sb, sc, batch));
	if (prec != MGPU_PREC_FP32)
		return mgpu_cpu_gemm16(dev, prec, ta, tb, m, n, k, alpha, A, lda, sa, Bm, ldb, sb,
				       beta, C, ldc, sc, batch);
	for (i = 0; i < batch; i++)
		sgemm_one(ta, tb, m, n, k, alpha, (const float *)A + i * sa, lda,
			  (const float *)Bm + i * sb, ldb, beta, C + i * sc, ldc);
	return 0;
}

static int cpu_nrm2(struct mgpu_dev *dev, size_t n, const float *x, float *out_host)
{
	double s = 0.0, part;
	size_t i, len;

	(void)dev;
	if (n <= BLAS_CHUNK) {
		*out_host = n ? cblas_snrm2((int)n, x, 1) : 0.0f;
		return 0;
	}
	for (i = 0; i < n; i += len) {
		len = n - i < BLAS_CHUNK ? n - i : BLAS_CHUNK;
		part = cblas_snrm2((int)len, x + i, 1);
		s += part * part;
	}
	*out_host = (float)sqrt(s);
	return 0;
}

/* One row of bias_act for relu or identity, Y and Z distinct. Separate
 * loops per activation: a select inside one loop kept gcc from vectorising. */
static void bias_relu_row(float *restrict y, float *restrict z, const float *restrict b,
			  int D)
{
	int j;

	for (j = 0; j < D; j++) {
		float t = z[j] + b[j];
		z[j] = t;
		y[j] = t > 0.0f ? t : 0.0f;
	}
}

static void bias_row(float *restrict y, float *restrict z, const float *restrict b, int D)
{
	int j;

	for (j = 0; j < D; j++) {
		float t = z[j] + b[j];
		z[j] = t;
		y[j] = t;
	}
}

/* The same in place (Y == Z). */
static void bias_relu_row_inplace(float *restrict z, const float *restrict b, int D)
{
	int j;

	for (j = 0; j < D; j++) {
		float t = z[j] + b[j];
		z[j] = t > 0.0f ? t : 0.0f;
	}
}

static void bias_row_inplace(float *restrict z, const float *restrict b, int D)
{
	int j;

	for (j = 0; j < D; j++)
		z[j] += b[j];
}

static void bias_lin_row(int relu, float *y, float *z, const float *b, int D)
{
	if (y == z && relu)
		bias_relu_row_inplace(z, b, D);
	else if (y == z)
		bias_row_inplace(z, b, D);
	else if (relu)
		bias_relu_row(y, z, b, D);
	else
		bias_row(y, z, b, D);
}

/* GELU is arithmetic only (elem.h's erf and exp): it runs MGPU_CPU_WIDE. */
#define WIDE_CLONES MGPU_CPU_WIDE

/* gelu in blocks of W (vectorised: no call inside); y may equal z. */
WIDE_CLONES static void bias_gelu_row(float *y, float *z, const float *restrict b, int D)
{
	float t[W];
	int j = 0, k;

	for (; j + W <= D; j += W) {
		for (k = 0; k < W; k++)
			t[k] = z[j + k] + b[j + k];
		for (k = 0; k < W; k++)
			z[j + k] = t[k];
		for (k = 0; k < W; k++)
			y[j + k] = mgpu_act_f(MGPU_ACT_GELU, t[k]);
	}
	for (; j < D; j++) {
		t[0] = z[j] + b[j];
		z[j] = t[0];
		y[j] = mgpu_act_f(MGPU_ACT_GELU, t[0]);
	}
}

/* tanh: the cost is the libm call, a plain loop is as good. */
static void bias_act_row(enum mgpu_act act, float *y, float *z, const float *b, int D)
{
	float t;
	int j;

	if (act == MGPU_ACT_GELU) {
		bias_gelu_row(y, z, b, D);
		return;
	}
	for (j = 0; j < D; j++) {
		t = z[j] + b[j];
		z[j] = t;
		y[j] = mgpu_act_f(act, t);
	}
}

/* Y, Z (B,D), b (D). */
static int cpu_bias_act(struct mgpu_dev *dev, enum mgpu_act act, float *Y, float *Z,
			const float *b, int B, int D)
{
	int i, lin = act == MGPU_ACT_RELU || act == MGPU_ACT_NONE;
	int relu = act == MGPU_ACT_RELU;
	size_t off;

	(void)dev;
	MGPU_TRY(ops_check_rows("bias_act", B, D));
	MGPU_TRY(ops_check_act("bias_act", act));
	for (i = 0; i < B; i++) {
		off = (size_t)i * (size_t)D;
		if (!lin)
			bias_act_row(act, Y + off, Z + off, b, D);
		else
			bias_lin_row(relu, Y + off, Z + off, b, D);
	}
	return 0;
}

static void relu_bwd(float *restrict dz, const float *restrict dy, const float *restrict z,
		     size_t n)
{
	size_t i = 0, k;
	float d;

	for (; i + W <= n; i += W)
		for (k = 0; k < W; k++) {
			d = dy[i + k]; /* an unconditional load lets gcc if-convert */
			dz[i + k] = z[i + k] > 0.0f ? d : 0.0f;
		}
	for (; i < n; i++)
		dz[i] = z[i] > 0.0f ? dy[i] : 0.0f;
}

static void relu_bwd_inplace(float *restrict dz, const float *restrict z, size_t n)
{
	size_t i = 0, k;

	for (; i + W <= n; i += W)
		for (k = 0; k < W; k++)
			dz[i + k] = z[i + k] > 0.0f ? dz[i + k] : 0.0f;
	for (; i < n; i++)
		dz[i] = z[i] > 0.0f ? dz[i] : 0.0f;
}

/* dz = dy * gelu'(z) in blocks of W; dz may equal dy (each element is
 * read before it is written, in the same iteration). */
WIDE_CLONES static void gelu_bwd(float *dz, const float *dy, const float *restrict z,
				 size_t n)
{
	float d[W];
	size_t i = 0, k;

	for (; i + W <= n; i += W) {
		for (k = 0; k < W; k++)
			d[k] = mgpu_act_df(MGPU_ACT_GELU, z[i + k]) * dy[i + k];
		for (k = 0; k < W; k++)
			dz[i + k] = d[k];
	}
	for (; i < n; i++)
		dz[i] = dy[i] * mgpu_act_df(MGPU_ACT_GELU, z[i]);
}

/* dZ, dY, Z: n elements; dZ may equal dY. */
/* ReLU as a branch-free select in blocks of W that compiles to vector
 * maxes (ref's loop, a switch per element, took a mispredicted branch at
 * every sign change: a sixth of a ResNet step). Each block is read whole
 * before it is written: with one loop gcc guards its vector code by an
 * overlap test that the in-place calls (Y == X, most of a conv net's)
 * fail, and they ran the scalar copy, 12% of a ResNet step. */
WIDE_CLONES static void relu_fwd(float *Y, const float *X, size_t n)
{
	float t[W];
	size_t i = 0, k;

	for (; i + W <= n; i += W) {
		for (k = 0; k < W; k++)
			t[k] = X[i + k] > 0.0f ? X[i + k] : 0.0f;
		for (k = 0; k < W; k++)
			Y[i + k] = t[k];
	}
	for (; i < n; i++)
		Y[i] = X[i] > 0.0f ? X[i] : 0.0f;
}

/* act_fwd (Y may equal X): the others through elem.h per element, the
 * activation chosen once. */
static int cpu_act_fwd(struct mgpu_dev *dev, enum mgpu_act act, float *Y, const float *X,
		       size_t n)
{
	size_t i = 0;

	(void)dev;
	MGPU_TRY(ops_check_act("act_fwd", act));
	if (act == MGPU_ACT_RELU) {
		relu_fwd(Y, X, n);
	} else if (act == MGPU_ACT_SILU) {
		for (; i < n; i++)
			Y[i] = mgpu_act_f(MGPU_ACT_SILU, X[i]);
	} else if (act != MGPU_ACT_NONE || Y != X) {
		for (; i < n; i++)
			Y[i] = mgpu_act_f(act, X[i]);
	}
	return 0;
}

static int cpu_act_bwd(struct mgpu_dev *dev, enum mgpu_act act, float *dZ, const float *dY,
		       const float *Z, size_t n)
{
	size_t i;

	(void)dev;
	MGPU_TRY(ops_check_act("act_bwd", act));
	if (act == MGPU_ACT_RELU && dZ == dY)
		relu_bwd_inplace(dZ, Z, n);
	else if (act == MGPU_ACT_RELU)
		relu_bwd(dZ, dY, Z, n);
	else if (act == MGPU_ACT_NONE && dZ != dY)
		ops_host_copy(dev, dZ, dY, n * sizeof *dZ);
	else if (act == MGPU_ACT_GELU)
		gelu_bwd(dZ, dY, Z, n);
	else if (act != MGPU_ACT_NONE)
		for (i = 0; i < n; i++)
			dZ[i] = dY[i] * mgpu_act_df(act, Z[i]);
	return 0;
}

/* acc (D) += row (D). */
static void add_row(float *restrict acc, const float *restrict row, int D)
{
	int j = 0, k;

	for (; j + W <= D; j += W)
		for (k = 0; k < W; k++)
			acc[j + k] += row[j + k];
	for (; j < D; j++)
		acc[j] += row[j];
}

/* LayerNorm's dgamma, dbeta over columns j0..j0+n-1 (n <= LN_COLS): the
 * rows are walked in order, each adding its contiguous slice, where
 * mgpu_ln_col_bwd walks one column down the rows (a stride of D floats per
 * element). Every column still adds its rows 0..B-1 in order with the same
 * operations, so the sums are mgpu_ln_col_bwd's bit for bit. */
#define LN_COLS 256

static void ln_cols(const float *dY, const float *X, const float *mean, const float *rstd,
		    int B, int D, int j0, int n, float acc, float *dg, float *db)
{
	float sg[LN_COLS], sb[LN_COLS];
	const float *dy, *x;
	size_t off;
	int i, k;

	for (k = 0; k < n; k++)
		sg[k] = sb[k] = 0.0f;
	for (i = 0; i < B; i++) {
		off = (size_t)i * (size_t)D + (size_t)j0;
		dy = dY + off;
		x = X + off;
		for (k = 0; k < n; k++) {
			sg[k] += dy[k] * (x[k] - mean[i]) * rstd[i];
			sb[k] += dy[k];
		}
	}
	for (k = 0; k < n; k++) {
		dg[j0 + k] = acc == 0.0f ? sg[k] : acc * dg[j0 + k] + sg[k];
		db[j0 + k] = acc == 0.0f ? sb[k] : acc * db[j0 + k] + sb[k];
	}
}

/* dY, X, dX (B,D); mean, rstd (B); gamma, dgamma, dbeta (D): the rows in
 * lanes (rows_cpu.c), the columns through ln_cols. */
static int cpu_ln_bwd(struct mgpu_dev *dev, float *dX, float *dgamma, float *dbeta,
		      const float *dY, const float *X, const float *mean, const float *rstd,
		      const float *gamma, int B, int D, float acc)
{
	size_t off;
	int i, j;

	(void)dev;
	MGPU_TRY(ops_check_rows("ln_bwd", B, D));
	for (i = 0; i < B && D > 0; i++) {
		off = (size_t)i * (size_t)D;
		mgpu_cpu_ln_bwd_row(dY + off, X + off, mean[i], rstd[i], gamma, D, dX + off);
	}
	for (j = 0; j < D; j += LN_COLS)
		ln_cols(dY, X, mean, rstd, B, D, j, D - j < LN_COLS ? D - j : LN_COLS, acc, dgamma,
			dbeta);
	return 0;
}

/* db (D) = beta * db + column sums of dY (B,D), rows in order (cache friendly). */
static int cpu_col_sum(struct mgpu_dev *dev, float *db, const float *dY, int B, int D,
		       float beta)
{
	int i, j;

	(void)dev;
	MGPU_TRY(ops_check_rows("col_sum", B, D));
	for (j = 0; j < D; j++)
		db[j] = beta == 0.0f ? 0.0f : beta * db[j];
	for (i = 0; i < B; i++)
		add_row(db, dY + (size_t)i * (size_t)D, D);
	return 0;
}

/* Scalar: the 64-bit hash does not vectorise on baseline x86-64. Y may equal X. */
static int cpu_dropout(struct mgpu_dev *dev, float *Y, const float *X, size_t n, float p,
		       uint64_t seed, uint64_t offset)
{
	size_t i;

	(void)dev;
	MGPU_TRY(ops_check_dropout(p));
	if (p == 0.0f) {
		if (Y != X)
			ops_host_copy(dev, Y, X, n * sizeof *Y);
		return 0;
	}
	for (i = 0; i < n; i++)
		Y[i] = X[i] * mgpu_dropout_factor(seed, offset + i, p);
	return 0;
}

static void u8_loop(float *restrict y, const uint8_t *restrict x, size_t n, float scale,
		    float shift)
{
	size_t i = 0, k;

	for (; i + W <= n; i += W)
		for (k = 0; k < W; k++)
			y[i + k] = (float)x[i + k] * scale + shift;
	for (; i < n; i++)
		y[i] = (float)x[i] * scale + shift;
}

static int cpu_u8_to_f32(struct mgpu_dev *dev, float *Y, const uint8_t *X, size_t n,
			 float scale, float shift)
{
	(void)dev;
	u8_loop(Y, X, n, scale, shift);
	return 0;
}

static void sgd_mom_loop(float *restrict w, const float *restrict g, float *restrict mom,
			 size_t n, const struct mgpu_sgd_hp *hp)
{
	size_t i;

	for (i = 0; i < n; i++)
		mgpu_sgd_elem(&w[i], g[i], &mom[i], hp);
}

static void sgd_plain_loop(float *restrict w, const float *restrict g, size_t n,
			   const struct mgpu_sgd_hp *hp)
{
	float unused;
	size_t i;

	for (i = 0; i < n; i++) {
		unused = 0.0f;
		mgpu_sgd_elem(&w[i], g[i], &unused, hp);
	}
}

static int cpu_sgd(struct mgpu_dev *dev, float *w, const float *g, float *mom, size_t n,
		   const struct mgpu_sgd_hp *hp)
{
	struct mgpu_sgd_hp h = *hp; /* a local copy: provably not aliased by w */

	(void)dev;
	MGPU_TRY(ops_check_sgd(n, mom, hp));
	if (h.momentum != 0.0f)
		sgd_mom_loop(w, g, mom, n, &h);
	else
		sgd_plain_loop(w, g, n, &h);
	return 0;
}

static void adamw_loop(float *restrict w, const float *restrict g, float *restrict m,
		       float *restrict v, size_t n, const struct mgpu_adamw_hp *hp)
{
	size_t i;

	for (i = 0; i < n; i++)
		mgpu_adamw_elem(&w[i], g[i], &m[i], &v[i], hp);
}

static int cpu_adamw(struct mgpu_dev *dev, float *w, const float *g, float *m, float *v,
		     size_t n, const struct mgpu_adamw_hp *hp)
{
	struct mgpu_adamw_hp h = *hp;

	(void)dev;
	adamw_loop(w, g, m, v, n, &h);
	return 0;
}

/* ---- transformer ops ---------------------------------------------------- */

/* Y may alias X1 or X2, so no restrict: gcc checks the overlap at run time. */
static int cpu_add(struct mgpu_dev *dev, float *Y, const float *X1, const float *X2, size_t n)
{
	size_t i;

	(void)dev;
	for (i = 0; i < n; i++)
		Y[i] = X1[i] + X2[i];
	return 0;
}

static void sum_row(float *restrict y, const float *restrict a, const float *restrict b,
		    int D)
{
	int j;

	for (j = 0; j < D; j++)
		y[j] = a[j] + b[j];
}

/* Y (B,T,D): one table row pair per output row. */
static int cpu_emb_fwd(struct mgpu_dev *dev, float *Y, const int32_t *ids, const float *wte,
		       const float *wpe, int B, int T, int V, int D)
{
	size_t r, N = (size_t)B * (size_t)T, d = (size_t)D;

	(void)dev;
	MGPU_TRY(ops_check_emb("emb_fwd", B, T, V, D));
	MGPU_TRY(ops_check_ids(ids, N, V));
	for (r = 0; r < N; r++)
		sum_row(Y + r * d, wte + (size_t)ids[r] * d, wpe + (r % (size_t)T) * d, D);
	return 0;
}

/* x (n) = acc * x, acc == 0 writing zeros (old NaNs too). */
static void scale_or_zero(float *x, size_t n, float acc)
{
	size_t i;

	if (acc == 1.0f)
		return;
	for (i = 0; i < n; i++)
		x[i] = acc == 0.0f ? 0.0f : acc * x[i];
}

/* The scatter form: rows in order, so each table element sums its rows in
 * the same order as the gather of ref and cuda (bit-identical for acc 0). */
static int cpu_emb_bwd(struct mgpu_dev *dev, float *dwte, float *dwpe, const float *dY,
		       const int32_t *ids, int B, int T, int V, int D, float acc)
{
	size_t r, N = (size_t)B * (size_t)T, d = (size_t)D;

	(void)dev;
	MGPU_TRY(ops_check_emb("emb_bwd", B, T, V, D));
	MGPU_TRY(ops_check_ids(ids, N, V));
	scale_or_zero(dwte, (size_t)V * d, acc);
	scale_or_zero(dwpe, (size_t)T * d, acc);
	for (r = 0; r < N; r++) {
		add_row(dwte + (size_t)ids[r] * d, dY + r * d, D);
		add_row(dwpe + (r % (size_t)T) * d, dY + r * d, D);
	}
	return 0;
}

/* Row copies of Dh floats: X (B,T,H*Dh) rows ld apart <-> Y (B*H,T,Dh). */
static void heads_copy(float *Y, const float *X, int ld, int B, int T, int H, int Dh,
		       int merge)
{
	size_t b, t, h, head, flat, dh = (size_t)Dh;

	for (b = 0; b < (size_t)B; b++)
		for (t = 0; t < (size_t)T; t++)
			for (h = 0; h < (size_t)H; h++) {
				head = ((b * (size_t)H + h) * (size_t)T + t) * dh;
				flat = (b * (size_t)T + t) * (size_t)ld + h * dh;
				if (merge)
					memcpy(Y + flat, X + head, dh * sizeof *Y);
				else
					memcpy(Y + head, X + flat, dh * sizeof *Y);
			}
}

static int cpu_heads_split(struct mgpu_dev *dev, float *Y, const float *X, int ldx, int B,
			   int T, int H, int Dh)
{
	(void)dev;
	MGPU_TRY(ops_check_heads("heads_split", ldx, B, T, H, Dh));
	heads_copy(Y, X, ldx, B, T, H, Dh, 0);
	return 0;
}

static int cpu_heads_merge(struct mgpu_dev *dev, float *Y, int ldy, const float *X, int B,
			   int T, int H, int Dh)
{
	(void)dev;
	MGPU_TRY(ops_check_heads("heads_merge", ldy, B, T, H, Dh));
	heads_copy(Y, X, ldy, B, T, H, Dh, 1);
	return 0;
}

static int cpu_f32_to_bf16(struct mgpu_dev *dev, uint16_t *Y, const float *X, size_t n)
{
	size_t i;

	(void)dev;
	for (i = 0; i < n; i++)
		Y[i] = mgpu_bf16_from_f32(X[i]);
	return 0;
}

static int cpu_f32_to_f16(struct mgpu_dev *dev, uint16_t *Y, const float *X, size_t n)
{
	size_t i;

	(void)dev;
	for (i = 0; i < n; i++)
		Y[i] = mgpu_f16_from_f32(X[i]);
	return 0;
}

static int cpu_bf16_to_f32(struct mgpu_dev *dev, float *Y, const uint16_t *X, size_t n)
{
	size_t i;

	(void)dev;
	for (i = 0; i < n; i++)
		Y[i] = mgpu_bf16_to_f32(X[i]);
	return 0;
}

static void cpu_fini(struct mgpu_dev *dev)
{
	struct mgpu_cpu_scratch *s = dev->impl;

	if (s)
		mgpu_cpu_dnnl_release(s->dnnl);
	mgpu_cpu_release(dev);
}

/* At the end of the file. */
static int cpu_sgd_sum(struct mgpu_dev *dev, float *w, const float *const *g, int ng,
		       float *mom, size_t n, const struct mgpu_sgd_hp *hp);
static int cpu_adamw_sum(struct mgpu_dev *dev, float *w, const float *const *g, int ng,
			 float *m, float *v, size_t n, const struct mgpu_adamw_hp *hp);
static int cpu_sum_acc(struct mgpu_dev *dev, double *acc, const float *x, size_t n,
		       int squares, double scale);

const struct mgpu_ops mgpu_ops_cpu = {
	.name = "cpu",
	.host_memory = 1,
	.device_count = ops_host_device_count,
	.init = cpu_init,
	.fini = cpu_fini,
	.alloc = ops_host_alloc,
	.release = ops_host_release,
	.to_dev = ops_host_copy,
	.to_host = ops_host_copy,
	.zero = ops_host_zero,
	.sync = ops_host_sync,
	.gemm = cpu_gemm, /* bf16 and fp16 in bf16_cpu.c */
	.nrm2 = cpu_nrm2,
	.bias_act = cpu_bias_act,
	.act_bwd = cpu_act_bwd,
	.col_sum = cpu_col_sum,
	.ln_fwd = mgpu_cpu_ln_fwd, /* rows_cpu.c */
	.ln_bwd = cpu_ln_bwd,
	.dropout = cpu_dropout,
	.xent = mgpu_cpu_xent,
	.u8_to_f32 = cpu_u8_to_f32,
	.sgd = cpu_sgd,
	.adamw = cpu_adamw,
	.sgd_sum = cpu_sgd_sum,
	.adamw_sum = cpu_adamw_sum,
	.add = cpu_add,
	.emb_fwd = cpu_emb_fwd,
	.emb_bwd = cpu_emb_bwd,
	.attn_fwd = mgpu_cpu_attn_fwd, /* attn_cpu.c */
	.attn_bwd = mgpu_cpu_attn_bwd,
	.heads_split = cpu_heads_split,
	.heads_merge = cpu_heads_merge,
	.f32_to_bf16 = cpu_f32_to_bf16,
	.bf16_to_f32 = cpu_bf16_to_f32,
	.f32_to_f16 = cpu_f32_to_f16,
	.sum_acc = cpu_sum_acc,
	/* conv nets (conv_host.h): oneDNN for convolution and pooling, ref's loops
	 * for the light ops */
	.act_fwd = cpu_act_fwd,
	.conv_fwd = mgpu_cpu_conv_fwd,
	.conv_bwd_data = mgpu_cpu_conv_bwd_data,
	.conv_bwd_weight = mgpu_cpu_conv_bwd_weight,
	.im2col = mgpu_host_im2col,
	.col2im = mgpu_host_col2im,
	.pool_fwd = mgpu_cpu_pool_fwd,
	.pool_bwd = mgpu_cpu_pool_bwd,
	.upsample_fwd = mgpu_host_upsample_fwd,
	.upsample_bwd = mgpu_host_upsample_bwd,
	.bn_stats = mgpu_host_bn_stats,
	.bn_fwd = mgpu_host_bn_fwd,
	.bn_bwd_stats = mgpu_host_bn_bwd_stats,
	.bn_bwd_data = mgpu_host_bn_bwd_data,
	.gn_fwd = mgpu_host_gn_fwd,
	.gn_bwd = mgpu_host_gn_bwd,
	.chan_bias = mgpu_host_chan_bias,
	.chan_sum = mgpu_host_chan_sum,
	/* losses of targets beyond a class id (loss_host.h) */
	.mse = mgpu_host_mse,
	.pix_xent = mgpu_host_pix_xent,
};

/* The summed gradient of element i over ng sources, in source order. */
static inline float grad_sum(const float *const *g, int ng, size_t i)
{
	float s = g[0][i];
	int k;

	for (k = 1; k < ng; k++)
		s += g[k][i];
	return s;
}

/* Two sources get their own loops: the common case, and one gcc vectorises. */
static void sgd_sum2(float *restrict w, const float *restrict g0, const float *restrict g1,
		     float *restrict mom, size_t n, const struct mgpu_sgd_hp *hp)
{
	float unused = 0.0f;
	size_t i;

	if (mom)
		for (i = 0; i < n; i++)
			mgpu_sgd_elem(&w[i], g0[i] + g1[i], &mom[i], hp);
	else
		for (i = 0; i < n; i++)
			mgpu_sgd_elem(&w[i], g0[i] + g1[i], &unused, hp);
}

static int cpu_sgd_sum(struct mgpu_dev *dev, float *w, const float *const *g, int ng,
		       float *mom, size_t n, const struct mgpu_sgd_hp *hp)
{
	struct mgpu_sgd_hp h = *hp;
	float unused = 0.0f;
	size_t i;

	(void)dev;
	if (ng == 2) {
		sgd_sum2(w, g[0], g[1], h.momentum != 0.0f ? mom : NULL, n, &h);
		return 0;
	}
	for (i = 0; i < n; i++)
		mgpu_sgd_elem(&w[i], grad_sum(g, ng, i), h.momentum != 0.0f ? &mom[i] : &unused,
			      &h);
	return 0;
}

static void adamw_sum2(float *restrict w, const float *restrict g0, const float *restrict g1,
		       float *restrict m, float *restrict v, size_t n,
		       const struct mgpu_adamw_hp *hp)
{
	size_t i;

	for (i = 0; i < n; i++)
		mgpu_adamw_elem(&w[i], g0[i] + g1[i], &m[i], &v[i], hp);
}

static int cpu_adamw_sum(struct mgpu_dev *dev, float *w, const float *const *g, int ng,
			 float *m, float *v, size_t n, const struct mgpu_adamw_hp *hp)
{
	struct mgpu_adamw_hp h = *hp;
	size_t i;

	(void)dev;
	if (ng == 2) {
		adamw_sum2(w, g[0], g[1], m, v, n, &h);
		return 0;
	}
	for (i = 0; i < n; i++)
		mgpu_adamw_elem(&w[i], grad_sum(g, ng, i), &m[i], &v[i], &h);
	return 0;
}

/* sum_acc's chunk in elem.h's order, but element-major: each lane still
 * adds its elements in increasing order (the same bits as the lane-major
 * definition), and the inner loop over contiguous lanes vectorises. */
static double sum_chunk(const float *restrict x, size_t n, int squares)
{
	double lane[MGPU_SUM_LANES];
	size_t i0, j, len;
	int s;

	for (j = 0; j < MGPU_SUM_LANES; j++)
		lane[j] = 0.0;
	for (i0 = 0; i0 < n; i0 += MGPU_SUM_LANES) {
		len = n - i0 < MGPU_SUM_LANES ? n - i0 : MGPU_SUM_LANES;
		if (squares)
			for (j = 0; j < len; j++)
				lane[j] += mgpu_sum_term(x[i0 + j], 1);
		else
			for (j = 0; j < len; j++)
				lane[j] += mgpu_sum_term(x[i0 + j], 0);
	}
	for (s = MGPU_SUM_LANES / 2; s > 0; s /= 2)
		mgpu_sum_fold_level(lane, s);
	return lane[0];
}

static int cpu_sum_acc(struct mgpu_dev *dev, double *acc, const float *x, size_t n,
		       int squares, double scale)
{
	(void)dev;
	return ops_host_sum_acc(acc, x, n, squares, scale, sum_chunk);
}
