/*
 * conv.c - the CPU libraries of conv nets on one thread: a ResNet layer's
 * convolution (forward, backward data, backward weights) on oneDNN (the
 * cpu backend; in fp32 and in bf16, --dtype bf16's: bf16 operands where
 * the CPU has AVX512-BF16 or AMX), on im2col + OpenBLAS (conv_gemm.c over cpu's table) and on
 * ref's loops; BatchNorm's training passes over its output; and oneDNN's
 * matmul primitive against OpenBLAS's sgemm on the MLP's products and a
 * gpt block's widest (forward Y = X W, dW = X^T dY, dX = dY W^T), in fp32
 * and with bf16 inputs (oneDNN's bf16 matmul; the cpu backend's gemm).
 *
 * usage: conv [N [C [HW [REPEATS]]]]   (default 32 64 28 5; ref runs once)
 * Prints TSV: what, shape, impl, ms (median of REPEATS after one warm-up),
 * gflops (2 flops per multiply-add). The times are the process's CPU time,
 * not wall time: everything runs on one thread, and on a shared machine
 * the CPU time is what stays put when other processes take the cores.
 */
#include <dnnl.h>   /* dnnl_matmul_desc_init, ... */
#include <omp.h>    /* omp_set_num_threads */
#include <stdint.h> /* uint16_t */
#include <stdio.h>  /* printf */
#include <stdlib.h> /* atoi, calloc, qsort */
#include <time.h>   /* clock_gettime, CLOCK_PROCESS_CPUTIME_ID */

#include "core/err.h"      /* mgpu_errmsg */
#include "core/hash.h"     /* mgpu_hash64 */
#include "ops/conv_host.h" /* mgpu_gemm_conv_* */
#include "ops/elem.h"      /* mgpu_bf16_from_f32 */
#include "ops/ops.h"       /* mgpu_ops_cpu, mgpu_ops_ref */

/* CPU milliseconds of this process (one thread does the work). */
static double cpu_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static float *rnd(size_t n)
{
	float *p = calloc(n ? n : 1, sizeof *p);
	size_t i;

	for (i = 0; p && i < n; i++)
		p[i] = (float)(mgpu_hash64(n, i) >> 40) / 16777216.0f - 0.5f;
	return p;
}

struct convbuf {
	struct mgpu_conv g;
	float *x, *w, *b, *y, *dy, *dx, *dw, *db;
};

/* One pass of the three convolution ops through ops; ms per op in t[3]. */
static int conv_pass(struct mgpu_dev *dev, const struct mgpu_ops *ops, struct convbuf *c,
		     double t[3])
{
	double t0 = cpu_ms();

	if (ops->conv_fwd(dev, &c->g, c->y, c->x, c->w, c->b) < 0)
		return -1;
	t[0] = cpu_ms() - t0;
	t0 = cpu_ms();
	if (ops->conv_bwd_data(dev, &c->g, c->dx, c->dy, c->w) < 0)
		return -1;
	t[1] = cpu_ms() - t0;
	t0 = cpu_ms();
	if (ops->conv_bwd_weight(dev, &c->g, c->dw, c->db, c->x, c->dy, 0.0f) < 0)
		return -1;
	t[2] = cpu_ms() - t0;
	return 0;
}

static int bench_conv(struct mgpu_dev *dev, const char *impl, const struct mgpu_ops *ops,
		      struct convbuf *c, int reps)
{
	static const char *const what[] = { "conv_fwd", "conv_bwd_data", "conv_bwd_weight" };
	double t[3], ts[3][64], flops;
	int OH = MGPU_CONV_OUT(c->g.H, c->g.KH, c->g.sh, c->g.ph, c->g.dh);
	int r, k;

	flops = 2.0 * c->g.N * c->g.K * OH * OH * (c->g.C / c->g.groups) * c->g.KH * c->g.KW;
	if (reps > 1 && conv_pass(dev, ops, c, t) < 0) /* warm-up: primitives made */
		return -1;
	for (r = 0; r < reps; r++) {
		if (conv_pass(dev, ops, c, t) < 0)
			return -1;
		for (k = 0; k < 3; k++)
			ts[k][r] = t[k];
	}
	for (k = 0; k < 3; k++) {
		qsort(ts[k], (size_t)reps, sizeof(double), cmp_d);
		printf("%s\tN%d C%d %dx%d K%d k%dx%d\t%s\t%.3f\t%.2f\n", what[k], c->g.N, c->g.C,
		       c->g.H, c->g.W, c->g.K, c->g.KH, c->g.KW, impl, ts[k][reps / 2],
		       flops / (ts[k][reps / 2] * 1e6));
	}
	return 0;
}

/* The same on oneDNN in bf16 (rounded operands, fp32 outputs). */
static int bench_bf16(struct mgpu_dev *dev, struct convbuf *c, int reps)
{
	int rc;

	c->g.prec = MGPU_PREC_BF16;
	rc = bench_conv(dev, "onednn-bf16", &mgpu_ops_cpu, c, reps);
	c->g.prec = MGPU_PREC_FP32;
	return rc;
}

/* BatchNorm (train) on the layer's output: forward (bn_stats, bn_fwd)
 * and backward (bn_bwd_stats, bn_bwd_data), the loops ref and cpu share. */
static int bench_bn(struct mgpu_dev *dev, struct convbuf *c, int reps)
{
	struct mgpu_bn bn = { c->g.N, c->g.K, c->g.H * c->g.W, 1e-5f, 0.1f,
			      (double)c->g.N * c->g.H * c->g.W, 1 };
	float *p = rnd(16 * (size_t)c->g.K);
	float *st = p, *ds = p + 2 * c->g.K, *m = p + 4 * c->g.K, *rs = p + 5 * c->g.K;
	float *g = p + 6 * c->g.K, *b = p + 7 * c->g.K, *rm = p + 8 * c->g.K, *rv = p + 9 * c->g.K;
	float *dg = p + 10 * c->g.K, *db = p + 11 * c->g.K;
	double ts[2][64], t0;
	int r;

	for (r = 0; r < c->g.K; r++)
		rv[r] = 1.0f;
	for (r = 0; r < reps; r++) {
		t0 = cpu_ms();
		if (dev->ops->bn_stats(dev, &bn, st, c->y, NULL) < 0 ||
		    dev->ops->bn_fwd(dev, &bn, c->dx, m, rs, c->y, st, NULL, g, b, rm, rv) < 0)
			return -1;
		ts[0][r] = cpu_ms() - t0;
		t0 = cpu_ms();
		if (dev->ops->bn_bwd_stats(dev, &bn, ds, dg, db, c->dy, c->y, m, rs, 0.0f) < 0 ||
		    dev->ops->bn_bwd_data(dev, &bn, c->dx, c->dy, c->y, m, rs, g, ds) < 0)
			return -1;
		ts[1][r] = cpu_ms() - t0;
	}
	for (r = 0; r < 2; r++) {
		qsort(ts[r], (size_t)reps, sizeof(double), cmp_d);
		printf("%s\tN%d C%d %dx%d\t%s\t%.3f\tNA\n", r ? "bn_bwd" : "bn_fwd_train", c->g.N,
		       c->g.K, c->g.H, c->g.W, dev->ops->name, ts[r][reps / 2]);
	}
	free(p);
	return 0;
}

/* ---- matmul: oneDNN's primitive against OpenBLAS's sgemm ---------------- */

/* Row-major dst (M,N) = op(A) (M,K) op(B) (K,N) as a oneDNN matmul, with a
 * transposed operand given by its memory layout (ba). */
static int dnnl_mm(dnnl_engine_t eng, dnnl_stream_t st, dnnl_data_type_t dt, int M, int N, int K,
		   int ta, int tb, void *A, void *Bm, float *C, int reps, double *ms)
{
	dnnl_memory_desc_t a, b, c;
	dnnl_dims_t da = { M, K }, db = { K, N }, dc = { M, N };
	dnnl_matmul_desc_t d;
	dnnl_primitive_desc_t pd;
	dnnl_primitive_t p;
	dnnl_memory_t ma, mb, mc;
	dnnl_exec_arg_t args[3];
	double ts[256], t0;
	int r;

	dnnl_memory_desc_init_by_tag(&a, 2, da, dt, ta ? dnnl_ba : dnnl_ab);
	dnnl_memory_desc_init_by_tag(&b, 2, db, dt, tb ? dnnl_ba : dnnl_ab);
	dnnl_memory_desc_init_by_tag(&c, 2, dc, dnnl_f32, dnnl_ab);
	if (dnnl_matmul_desc_init(&d, &a, &b, NULL, &c) != dnnl_success ||
	    dnnl_primitive_desc_create(&pd, &d, NULL, eng, NULL) != dnnl_success)
		return -1;
	if (dnnl_primitive_create(&p, pd) != dnnl_success)
		return -1;
	dnnl_primitive_desc_destroy(pd);
	dnnl_memory_create(&ma, &a, eng, A);
	dnnl_memory_create(&mb, &b, eng, Bm);
	dnnl_memory_create(&mc, &c, eng, C);
	args[0] = (dnnl_exec_arg_t){ DNNL_ARG_SRC, ma };
	args[1] = (dnnl_exec_arg_t){ DNNL_ARG_WEIGHTS, mb };
	args[2] = (dnnl_exec_arg_t){ DNNL_ARG_DST, mc };
	for (r = -1; r < reps; r++) {
		t0 = cpu_ms();
		dnnl_primitive_execute(p, st, 3, args);
		dnnl_stream_wait(st);
		if (r >= 0)
			ts[r] = cpu_ms() - t0;
	}
	qsort(ts, (size_t)reps, sizeof(double), cmp_d);
	*ms = ts[reps / 2];
	dnnl_memory_destroy(ma);
	dnnl_memory_destroy(mb);
	dnnl_memory_destroy(mc);
	dnnl_primitive_destroy(p);
	return 0;
}

/* The same product through the cpu backend's sgemm (OpenBLAS), row-major
 * as column-major C^T = op(B)^T op(A)^T (ops.h). */
static int blas_mm(struct mgpu_dev *dev, enum mgpu_prec prec, int M, int N, int K, int ta, int tb,
		   const void *A, const void *Bm, float *C, int reps, double *ms)
{
	double ts[256], t0;
	int r;

	for (r = -1; r < reps; r++) {
		t0 = cpu_ms();
		if (dev->ops->gemm(dev, prec, tb ? MGPU_T : MGPU_N, ta ? MGPU_T : MGPU_N, N,
				   M, K, 1.0f, Bm, tb ? K : N, 0, A, ta ? M : K, 0, 0.0f, C, N, 0,
				   1) < 0)
			return -1;
		if (r >= 0)
			ts[r] = cpu_ms() - t0;
	}
	qsort(ts, (size_t)reps, sizeof(double), cmp_d);
	*ms = ts[reps / 2];
	return 0;
}

/* One product in fp32 (OpenBLAS's sgemm; oneDNN) and with bf16 inputs
 * (the cpu backend's widening to sgemm, bf16_cpu.c; oneDNN's bf16 matmul,
 * AVX512-BF16 or AMX where the CPU has them), fp32 out. */
static int bench_mm1(dnnl_engine_t eng, dnnl_stream_t st, struct mgpu_dev *dev, const char *what,
		     const int *s, int reps)
{
	int M = s[0], N = s[1], K = s[2], ta = s[3], tb = s[4], rc = -1;
	float *A = rnd((size_t)M * K), *Bm = rnd((size_t)K * N), *C = rnd((size_t)M * N);
	uint16_t *Ah = calloc((size_t)M * K, 2), *Bh = calloc((size_t)K * N, 2);
	double t[4], fl = 2.0 * M * N * K;
	static const char *const impl[] = { "onednn", "openblas", "onednn-bf16", "cpu-bf16" };
	size_t i;

	if (!A || !Bm || !C || !Ah || !Bh)
		goto out;
	for (i = 0; i < (size_t)M * K; i++)
		Ah[i] = mgpu_bf16_from_f32(A[i]);
	for (i = 0; i < (size_t)K * N; i++)
		Bh[i] = mgpu_bf16_from_f32(Bm[i]);
	if (dnnl_mm(eng, st, dnnl_f32, M, N, K, ta, tb, A, Bm, C, reps, &t[0]) < 0 ||
	    blas_mm(dev, MGPU_PREC_FP32, M, N, K, ta, tb, A, Bm, C, reps, &t[1]) < 0 ||
	    dnnl_mm(eng, st, dnnl_bf16, M, N, K, ta, tb, Ah, Bh, C, reps, &t[2]) < 0 ||
	    blas_mm(dev, MGPU_PREC_BF16, M, N, K, ta, tb, Ah, Bh, C, reps, &t[3]) < 0)
		goto out;
	for (i = 0; i < 4; i++)
		printf("matmul %s\tM%d N%d K%d\t%s\t%.3f\t%.2f\n", what, M, N, K, impl[i], t[i],
		       fl / (t[i] * 1e6));
	rc = 0;
out:
	free(A);
	free(Bm);
	free(C);
	free(Ah);
	free(Bh);
	return rc;
}

static int bench_mm(struct mgpu_dev *dev, int reps)
{
	/* mlp:784-512-256-10 at batch 128, then a gpt block's widest product
	 * (d 768, 4d MLP) over 512 tokens: each layer's forward, dW, dX */
	static const int layers[][3] = { { 784, 512, 128 }, { 512, 256, 128 }, { 768, 3072, 512 } };
	static const char *const what[] = { "Y=XW", "dW=X^TdY", "dX=dYW^T" };
	dnnl_engine_t eng;
	dnnl_stream_t st;
	int l, k;

	if (dnnl_engine_create(&eng, dnnl_cpu, 0) != dnnl_success ||
	    dnnl_stream_create(&st, eng, dnnl_stream_default_flags) != dnnl_success)
		return -1;
	for (l = 0; l < 3; l++) {
		int Din = layers[l][0], Dout = layers[l][1], B = layers[l][2];
		/* (M, N, K, transA, transB) of the three products */
		int s[3][5] = { { B, Dout, Din, 0, 0 }, { Din, Dout, B, 1, 0 }, { B, Din, Dout, 0, 1 } };

		for (k = 0; k < 3; k++)
			if (bench_mm1(eng, st, dev, what[k], s[k], reps) < 0)
				return -1;
	}
	dnnl_stream_destroy(st);
	dnnl_engine_destroy(eng);
	return 0;
}

int main(int argc, char **argv)
{
	struct mgpu_ops gemm = mgpu_ops_cpu;
	struct mgpu_dev cpu, ref;
	struct convbuf c;
	size_t nx, ny, nw;
	int reps = argc > 4 ? atoi(argv[4]) : 5, HW = argc > 3 ? atoi(argv[3]) : 28;

	reps = reps < 1 ? 1 : reps > 64 ? 64 : reps;
	c.g = (struct mgpu_conv){ argc > 1 ? atoi(argv[1]) : 32, argc > 2 ? atoi(argv[2]) : 64, HW,
				  HW, argc > 2 ? atoi(argv[2]) : 64, 3, 3, 1, 1, 1, 1, 1, 1, 1,
				  MGPU_PREC_FP32 };
	nx = (size_t)c.g.N * c.g.C * HW * HW;
	ny = (size_t)c.g.N * c.g.K * HW * HW;
	nw = (size_t)c.g.K * c.g.C * 9;
	c.x = rnd(nx), c.w = rnd(nw), c.b = rnd((size_t)c.g.K), c.y = rnd(ny), c.dy = rnd(ny);
	c.dx = rnd(nx), c.dw = rnd(nw), c.db = rnd((size_t)c.g.K);
	if (mgpu_dev_open(&cpu, &mgpu_ops_cpu, 0) < 0 || mgpu_dev_open(&ref, &mgpu_ops_ref, 0) < 0) {
		fprintf(stderr, "conv: %s\n", mgpu_errmsg());
		return 1;
	}
	omp_set_num_threads(1); /* one thread per rank, as cpu's init sets */
	gemm.conv_fwd = mgpu_gemm_conv_fwd;
	gemm.conv_bwd_data = mgpu_gemm_conv_bwd_data;
	gemm.conv_bwd_weight = mgpu_gemm_conv_bwd_weight;
	printf("what\tshape\timpl\tms\tgflops\n");
	if (bench_conv(&cpu, "onednn", &mgpu_ops_cpu, &c, reps) < 0 ||
	    bench_bf16(&cpu, &c, reps) < 0 ||
	    bench_conv(&cpu, "im2col+openblas", &gemm, &c, reps) < 0 ||
	    bench_conv(&ref, "ref", &mgpu_ops_ref, &c, 1) < 0 || bench_bn(&cpu, &c, reps) < 0 ||
	    bench_mm(&cpu, reps * 4 > 256 ? 256 : reps * 4) < 0) {
		fprintf(stderr, "conv: %s\n", mgpu_errmsg());
		return 1;
	}
	mgpu_dev_close(&cpu);
	mgpu_dev_close(&ref);
	return 0;
}
