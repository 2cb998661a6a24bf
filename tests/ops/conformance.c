/*
 * conformance.c - every op of every backend in the build against "ref",
 * with identical arguments, on awkward shapes.
 *
 * For each backend of mgpu_ops_all() with a device (cuda only where a GPU
 * and driver exist; otherwise one SKIP line with the reason), the cases go
 * through mgpu_ops_check_case (check.h): sizes 0, 1 and primes, lda/ldb/ldc
 * larger than needed (NaN in the padding of A and B, a sentinel in C's),
 * all four transpose pairs, beta = 0 over NaN-filled outputs, beta != 0,
 * alpha != 1, in-place variants; per-op tolerances from check.h. Also the
 * argument errors every backend must report, byte accounting, ref against
 * hand-computed values, and a deliberately broken backend the comparison
 * must catch (so a check that cannot fail would show up here).
 */
#include <math.h>   /* NAN, isnan, logf, expf */
#include <stdint.h> /* int32_t */
#include <stdio.h>  /* printf, snprintf */
#include <stdlib.h> /* calloc, free */
#include <string.h> /* strcmp */

#include "../t.h"         /* T_CHECK, T_OK, T_FAILS, T_SKIP */
#include "core/err.h"     /* mgpu_errmsg, MGPU_E* */
#include "ops/check.h"    /* mgpu_ops_pair, mgpu_ops_check_case, mgpu_ops_compare */
#include "ops/conv_host.h" /* mgpu_gemm_conv_*: the im2col convolution */
#include "ops/elem.h"     /* mgpu_bf16_from_f32, mgpu_bf16_to_f32 */
#include "ops/ops.h"      /* mgpu_ops_all, mgpu_dev_* */

static const struct mgpu_ops *cur; /* backend under test */
static char cur_why[256];          /* why it has no device */
static struct mgpu_ops_report rep; /* large: static */

#define N MGPU_N
#define T MGPU_T
#define F32 MGPU_PREC_FP32
#define BF16 MGPU_PREC_BF16

/* T_RUN with a run-time name ("cpu/gemm"). */
static char **only; /* argv's names: run only the tests they prefix */
static int nrun;    /* tests run */

/* 1 when no names were given or one of them is a prefix of name
 * ("cuda/" every cuda test, "cuda/flash" the two flash tests of cuda). */
static int wanted(const char *name)
{
	char **a;

	if (!only || !*only)
		return 1;
	for (a = only; *a; a++)
		if (strncmp(name, *a, strlen(*a)) == 0)
			return 1;
	return 0;
}

static void run_named(const char *name, void (*fn)(void))
{
	if (!wanted(name))
		return;
	nrun++;
	t_cur_name = name;
	t_cur_failed = 0;
	t_cur_skipped = 0;
	fn();
	if (t_cur_failed)
		t_failed_total++;
	else if (t_cur_skipped)
		printf("SKIP %s: %s\n", name, t_skip_why);
	else
		printf("PASS %s\n", name);
	fflush(stdout);
}

/* Run cases on cur against ref and fail on every bad row. */
static void run_cases(const struct mgpu_ops_case *cs, size_t n)
{
	struct mgpu_ops_pair p;
	size_t i;
	int r;

	T_OK(mgpu_ops_pair_open(&p, cur, 0, &mgpu_ops_ref, 7, &rep));
	if (t_cur_failed)
		return;
	for (i = 0; i < n; i++)
		T_OK(mgpu_ops_check_case(&p, &cs[i]));
	mgpu_ops_pair_close(&p);
	T_CHECK(rep.nrows > 0 && rep.nlost == 0, "%d rows, %d lost", rep.nrows, rep.nlost);
	for (r = 0; r < rep.nrows; r++)
		T_CHECK(rep.row[r].ok, "%s %s: %s vs %s rel err %g > tol %g", rep.row[r].op,
			rep.row[r].shape, rep.row[r].backend, rep.row[r].ref_backend,
			rep.row[r].max_rel_err, rep.row[r].tol);
	T_CHECK(rep.nfail == 0, "%d bad rows", rep.nfail);
}

/* ---- per-backend tests -------------------------------------------------- */

static void test_gemm(void)
{
	static const int shapes[][3] = { { 0, 0, 0 }, { 0, 5, 3 }, { 5, 0, 3 }, { 5, 3, 0 },
					 { 1, 1, 1 }, { 1, 7, 1 }, { 7, 1, 13 }, { 13, 17, 11 },
					 { 31, 37, 29 }, { 2, 3, 257 } };
	static const float ab[][2] = { { 1, 0 }, { 0.5f, 0 }, { 1, 1 }, { -1.5f, 0.75f },
				       { 0, 0 }, { 0, 2 } };
	static struct mgpu_ops_case cs[10 * 6 * 2];
	size_t n, s, a, t, pad;

	for (t = 0; t < 4; t++) { /* one report per transpose pair */
		n = 0;
		for (s = 0; s < 10; s++)
			for (a = 0; a < 6; a++)
				for (pad = 0; pad < 2; pad++) {
					struct mgpu_ops_case *c = &cs[n++];
					int m = shapes[s][0], nn = shapes[s][1], k = shapes[s][2];
					enum mgpu_trans ta = (t & 1) ? T : N, tb = (t & 2) ? T : N;
					int ar = ta == N ? m : k, br = tb == N ? k : nn;
					memset(c, 0, sizeof *c);
					c->op = "gemm";
					c->ta = ta;
					c->tb = tb;
					c->m = m;
					c->n = nn;
					c->k = k;
					c->alpha = ab[a][0];
					c->beta = ab[a][1];
					if (pad) { /* lda > m etc. */
						c->lda = (ar > 1 ? ar : 1) + 3;
						c->ldb = (br > 1 ? br : 1) + 2;
						c->ldc = (m > 1 ? m : 1) + 5;
					}
				}
		run_cases(cs, n);
	}
}

/* Training-sized products: tolerance holds at k = 784 and k = 1000. */
static void test_gemm_large(void)
{
	static const struct mgpu_ops_case cs[] = {
		{ .op = "gemm", .m = 512, .n = 128, .k = 784, .alpha = 1.0f },
		{ .op = "gemm", .tb = T, .m = 512, .n = 784, .k = 128, .alpha = 1.0f, .beta = 1.0f },
		{ .op = "gemm", .ta = T, .m = 784, .n = 128, .k = 512, .alpha = 1.0f },
		{ .op = "gemm", .ta = T, .tb = T, .m = 101, .n = 103, .k = 1000, .lda = 1009,
		  .ldb = 107, .ldc = 211, .alpha = 0.75f, .beta = -0.5f },
	};
	run_cases(cs, sizeof cs / sizeof cs[0]);
}

static void test_blas1(void)
{
	static const int ns[] = { 0, 1, 7, 1001, 100003 };
	struct mgpu_ops_case cs[5];
	size_t i;

	memset(cs, 0, sizeof cs);
	for (i = 0; i < 5; i++) {
		cs[i].op = "nrm2";
		cs[i].n = ns[i];
	}
	run_cases(cs, 5);
}

/* The step statistics' sums: inside one lane, one chunk and across
 * chunks, values and squares, an infinite input, scale and a start. */
static void test_sum_acc(void)
{
	static const int ns[] = { 0, 1, 255, 256, 257, 4099, 65536, 65537, 200003 };
	struct mgpu_ops_case cs[9 * 4];
	size_t n = 0, i;
	int f;

	memset(cs, 0, sizeof cs);
	for (i = 0; i < 9; i++)
		for (f = 0; f < 4; f++) {
			cs[n].op = "sum_acc";
			cs[n].n = ns[i];
			cs[n].squares = f & 1;
			cs[n].inf = (f & 2) != 0;
			cs[n].scale = f == 1 ? 0.25f : 1.0f;
			cs[n++].acc = f == 2 ? -3.5f : 0.0f;
		}
	run_cases(cs, n);
}

static const int rows[][2] = { { 0, 5 }, { 5, 0 }, { 1, 1 }, { 3, 7 }, { 17, 13 }, { 64, 257 } };
#define NROWS (sizeof rows / sizeof rows[0])

static void test_act(void)
{
	static struct mgpu_ops_case cs[NROWS * 4 * 2 * 2];
	size_t n = 0, s, a, inplace;

	memset(cs, 0, sizeof cs);
	for (s = 0; s < NROWS; s++)
		for (a = 0; a < 4; a++)
			for (inplace = 0; inplace < 2; inplace++) {
				cs[n].op = "bias_act";
				cs[n].m = rows[s][0];
				cs[n].n = rows[s][1];
				cs[n].act = (enum mgpu_act)a;
				cs[n++].in_place = (int)inplace;
				cs[n].op = "act_bwd";
				cs[n].n = rows[s][0] * rows[s][1] + (int)s;
				cs[n].act = (enum mgpu_act)a;
				cs[n++].in_place = (int)inplace;
			}
	run_cases(cs, n);
}

static void test_col_sum_ln(void)
{
	static const float betas[] = { 0.0f, 1.0f, 0.5f };
	static struct mgpu_ops_case cs[NROWS * 3 * 2];
	size_t n = 0, s, b;

	memset(cs, 0, sizeof cs);
	for (s = 0; s < NROWS; s++)
		for (b = 0; b < 3; b++) {
			cs[n].op = "col_sum";
			cs[n].m = rows[s][0];
			cs[n].n = rows[s][1];
			cs[n++].acc = betas[b];
			cs[n].op = "ln";
			cs[n].m = rows[s][0];
			cs[n].n = rows[s][1];
			cs[n++].acc = betas[b];
		}
	run_cases(cs, n);
}

static void test_dropout_xent_u8(void)
{
	static const int ns[] = { 0, 1, 1001 };
	static const float ps[] = { 0.0f, 0.1f, 0.5f, 1.0f };
	static const int xr[][2] = { { 0, 3 }, { 1, 1 }, { 1, 2 }, { 7, 3 }, { 33, 10 } };
	static struct mgpu_ops_case cs[3 * 4 * 2 + 5 * 2 + 3];
	size_t n = 0, i, j, f;

	memset(cs, 0, sizeof cs);
	for (i = 0; i < 3; i++) {
		for (j = 0; j < 4; j++)
			for (f = 0; f < 2; f++) {
				cs[n].op = "dropout";
				cs[n].n = ns[i];
				cs[n].p = ps[j];
				cs[n].offset = i * 1000 + j;
				cs[n++].in_place = (int)f;
			}
		cs[n].op = "u8_to_f32";
		cs[n].n = ns[i];
		cs[n].scale = 1.0f / 255;
		cs[n++].shift = -0.25f;
	}
	for (i = 0; i < 5; i++)
		for (f = 0; f < 2; f++) {
			cs[n].op = "xent";
			cs[n].m = xr[i][0];
			cs[n].n = xr[i][1];
			cs[n].scale = 0.25f;
			cs[n++].no_grad = (int)f;
		}
	run_cases(cs, n);
}

/* The fused reduce + update of the shared-memory sync (host backends):
 * bit for bit sgd / adamw on the gradient summed in source order, for 1
 * to 3 sources; a backend without it says so through mgpu_ops_can. */
static void test_sum_update(void)
{
	enum { NE = 1001, NG = 3 };
	static float w0[NE], w1[NE], m0[NE], m1[NE], v0[NE], v1[NE], g[NG][NE], sum[NE];
	const float *gs[NG] = { g[0], g[1], g[2] };
	struct mgpu_sgd_hp sh = { .lr = 0.1f, .momentum = 0.9f, .weight_decay = 1e-4f,
				  .grad_scale = 0.5f, .nesterov = 1 };
	struct mgpu_adamw_hp ah = { .lr = 1e-2f, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f,
				    .weight_decay = 0.01f, .grad_scale = 1.0f, .bias_corr1 = 0.1f,
				    .bias_corr2 = 0.001f };
	struct mgpu_dev dev;
	int ng, i, k, host = mgpu_ops_can(cur, MGPU_CAP_HOST_MEMORY);

	T_CHECK(host == (strcmp(cur->name, "cuda") != 0), "%s: host memory %d", cur->name, host);
	T_CHECK(mgpu_ops_can(cur, MGPU_CAP_SUM_UPDATE) == host, "%s: sum update", cur->name);
	if (!host)
		return;
	T_OK(mgpu_dev_open(&dev, cur, 0));
	if (t_cur_failed)
		return;
	for (k = 0; k < NG; k++)
		for (i = 0; i < NE; i++)
			g[k][i] = (float)((i * 7 + k * 13) % 17) / (k ? 7.0f : 0.003f) - 1.0f;
	for (ng = 1; ng <= NG; ng++) {
		for (i = 0; i < NE; i++) {
			w0[i] = w1[i] = (float)(i % 11) / 5.0f - 1.0f;
			m0[i] = m1[i] = v0[i] = v1[i] = 0.25f;
			for (sum[i] = g[0][i], k = 1; k < ng; k++)
				sum[i] += g[k][i];
		}
		T_OK(cur->sgd(&dev, w0, sum, m0, NE, &sh));
		T_OK(cur->sgd_sum(&dev, w1, gs, ng, m1, NE, &sh));
		T_CHECK(!memcmp(w0, w1, sizeof w0) && !memcmp(m0, m1, sizeof m0),
			"sgd_sum of %d sources differs from sgd", ng);
		T_OK(cur->adamw(&dev, w0, sum, m0, v0, NE, &ah));
		T_OK(cur->adamw_sum(&dev, w1, gs, ng, m1, v1, NE, &ah));
		T_CHECK(!memcmp(w0, w1, sizeof w0) && !memcmp(v0, v1, sizeof v0),
			"adamw_sum of %d sources differs from adamw", ng);
	}
	mgpu_dev_close(&dev);
}

static void test_optim(void)
{
	static const int ns[] = { 0, 1, 1001 };
	static struct mgpu_ops_case cs[3 * 4];
	size_t n = 0, i;

	memset(cs, 0, sizeof cs);
	for (i = 0; i < 3; i++) {
		cs[n].op = "sgd";
		cs[n++].n = ns[i]; /* no momentum buffer */
		cs[n].op = "sgd";
		cs[n].n = ns[i];
		cs[n++].momentum = 0.9f;
		cs[n].op = "sgd";
		cs[n].n = ns[i];
		cs[n].momentum = 0.9f;
		cs[n++].nesterov = 1;
		cs[n].op = "adamw";
		cs[n++].n = ns[i];
	}
	run_cases(cs, n);
}

/* Arguments every backend rejects before touching memory (NULL pointers). */
static void test_bad_args(void)
{
	struct mgpu_sgd_hp hp = { 0.1f, 0.9f, 0.0f, 1.0f, 0 };
	struct mgpu_dev dev;
	const struct mgpu_ops *o = cur;

	T_OK(mgpu_dev_open(&dev, cur, 0));
	if (t_cur_failed)
		return;
	T_FAILS(o->gemm(&dev, F32, N, N, 4, 2, 3, 1.0f, NULL, 3, 0, NULL, 3, 0, 0.0f, NULL, 4, 0,
			1),
		MGPU_EINVAL, "lda=3");
	T_FAILS(o->gemm(&dev, F32, T, N, 4, 2, 3, 1.0f, NULL, 2, 0, NULL, 3, 0, 0.0f, NULL, 4, 0,
			1),
		MGPU_EINVAL, "leading dimension");
	T_FAILS(o->gemm(&dev, F32, N, T, 4, 2, 3, 1.0f, NULL, 4, 0, NULL, 1, 0, 0.0f, NULL, 4, 0,
			1),
		MGPU_EINVAL, "ldb=1");
	T_FAILS(o->gemm(&dev, F32, N, N, 4, 2, 3, 1.0f, NULL, 4, 0, NULL, 3, 0, 0.0f, NULL, 3, 0,
			1),
		MGPU_EINVAL, "ldc=3");
	T_FAILS(o->gemm(&dev, F32, N, N, -1, 2, 3, 1.0f, NULL, 4, 0, NULL, 3, 0, 0.0f, NULL, 4, 0,
			1),
		MGPU_EINVAL, "negative");
	T_FAILS(o->gemm(&dev, (enum mgpu_prec)3, N, N, 4, 2, 3, 1.0f, NULL, 4, 0, NULL, 3, 0, 0.0f,
			NULL, 4, 0, 1),
		MGPU_EINVAL, "unknown precision 3");
	T_FAILS(o->bias_act(&dev, MGPU_ACT_RELU, NULL, NULL, NULL, -1, 3), MGPU_EINVAL,
		"negative shape");
	T_FAILS(o->bias_act(&dev, (enum mgpu_act)9, NULL, NULL, NULL, 1, 3), MGPU_EINVAL,
		"activation 9");
	T_FAILS(o->col_sum(&dev, NULL, NULL, 2, -3, 0.0f), MGPU_EINVAL, "col_sum");
	T_FAILS(o->ln_fwd(&dev, NULL, NULL, NULL, NULL, NULL, NULL, -2, 3, 1e-5f), MGPU_EINVAL,
		"ln_fwd");
	T_FAILS(o->dropout(&dev, NULL, NULL, 4, 1.5f, 1, 0), MGPU_EINVAL, "dropout");
	T_FAILS(o->dropout(&dev, NULL, NULL, 4, NAN, 1, 0), MGPU_EINVAL, "dropout");
	T_FAILS(o->xent(&dev, NULL, NULL, NULL, NULL, NULL, 2, 0, 0, 1.0f), MGPU_EINVAL, "xent");
	T_FAILS(o->xent(&dev, NULL, NULL, NULL, NULL, NULL, 2, 8, 7, 1.0f), MGPU_EINVAL,
		"row stride 7 is below");
	T_FAILS(o->sgd(&dev, NULL, NULL, NULL, 4, &hp), MGPU_EINVAL, "momentum");
	if (mgpu_ops_can(cur, MGPU_CAP_HOST_MEMORY)) { /* labels are host memory: checked */
		float l[4] = { 0, 1, 2, 3 }, loss[2], corr[2];
		int32_t lab[2] = { 1, 2 };
		T_FAILS(o->xent(&dev, NULL, loss, corr, l, lab, 2, 2, 2, 1.0f), MGPU_ERANGE,
			"label 2 of row 1");
		lab[1] = -1;
		T_FAILS(o->xent(&dev, NULL, loss, corr, l, lab, 2, 2, 2, 1.0f), MGPU_ERANGE,
			"label -1");
	}
	mgpu_dev_close(&dev);
}

/* Counted allocations, copies both ways, zero. */
static void test_memory(void)
{
	float h[5] = { 1, 2, 3, 4, 5 }, back[5] = { 0 };
	struct mgpu_dev dev;
	void *a = NULL, *b = NULL, *z = (void *)&dev;

	T_OK(mgpu_dev_open(&dev, cur, 0));
	if (t_cur_failed)
		return;
	T_CHECK(dev.bytes_cur == 0 && dev.bytes_peak == 0, "fresh device counts bytes");
	T_OK(mgpu_dev_alloc(&dev, &a, 1000));
	T_OK(mgpu_dev_alloc(&dev, &b, sizeof h));
	T_CHECK(a && b && a != b, "two allocations");
	T_CHECK(dev.bytes_cur == 1000 + sizeof h, "bytes_cur %zu", dev.bytes_cur);
	T_OK(mgpu_dev_alloc(&dev, &z, 0));
	T_CHECK(z == NULL && dev.bytes_cur == 1000 + sizeof h, "0 bytes: NULL, not counted");
	if (mgpu_ops_can(cur, MGPU_CAP_HOST_MEMORY))
		T_CHECK(((uintptr_t)a & 63) == 0 && ((uintptr_t)b & 63) == 0, "64-byte aligned");
	mgpu_dev_free(&dev, a, 1000);
	T_CHECK(dev.bytes_cur == sizeof h && dev.bytes_peak == 1000 + sizeof h,
		"cur %zu peak %zu", dev.bytes_cur, dev.bytes_peak);
	T_OK(mgpu_dev_from_host(&dev, b, h, sizeof h));
	T_OK(mgpu_dev_to_host(&dev, back, b, sizeof h));
	T_CHECK(memcmp(back, h, sizeof h) == 0, "round trip");
	T_OK(dev.ops->zero(&dev, b, 2 * sizeof(float)));
	T_OK(dev.ops->sync(&dev));
	T_OK(mgpu_dev_to_host(&dev, back, b, sizeof h));
	T_CHECK(back[0] == 0 && back[1] == 0 && back[2] == 3 && back[4] == 5, "zero 2 of 5");
	mgpu_dev_free(&dev, b, sizeof h);
	mgpu_dev_free(&dev, NULL, 123);
	T_CHECK(dev.bytes_cur == 0 && dev.bytes_peak == 1000 + sizeof h, "all freed");
	mgpu_dev_close(&dev);
}

/* Strided batched gemm: the fp32 shapes, batches 0, 1 and 3, with and
 * without gaps between the matrices. */
static void test_gemm_strided(void)
{
	static const int shapes[][3] = { { 0, 0, 0 }, { 5, 3, 0 }, { 1, 1, 1 },
					 { 7, 1, 13 }, { 13, 17, 11 } };
	static const float ab[][2] = { { 1, 0 }, { -1.5f, 0.75f }, { 0, 2 } };
	static const int batches[] = { 0, 1, 3 };
	static struct mgpu_ops_case cs[5 * 3 * 3 * 2];
	size_t n, s, a, b, t, pad;

	for (t = 0; t < 8; t++) {
		n = 0;
		for (s = 0; s < 5; s++)
			for (a = 0; a < 3; a++)
				for (b = 0; b < 3; b++)
					for (pad = 0; pad < 2; pad++) {
						struct mgpu_ops_case *c = &cs[n++];
						enum mgpu_trans ta = (t & 1) ? T : N;
						enum mgpu_trans tb = (t & 2) ? T : N;
						int m = shapes[s][0], nn = shapes[s][1];
						int k = shapes[s][2];
						int ar = ta == N ? m : k, br = tb == N ? k : nn;
						memset(c, 0, sizeof *c);
						c->op = "gemm";
						c->strided = 1;
						c->ta = ta;
						c->tb = tb;
						c->m = m;
						c->n = nn;
						c->k = k;
						c->alpha = ab[a][0];
						c->beta = ab[a][1];
						c->batch = batches[b];
						if (pad) {
							c->lda = (ar > 1 ? ar : 1) + 2;
							c->ldb = (br > 1 ? br : 1) + 1;
							c->ldc = (m > 1 ? m : 1) + 3;
						}
					}
		run_cases(cs, n);
	}
}

/* gemm in bf16 and fp16: the strided shapes (k up to 1000), transposes,
 * batches, padding and alpha/beta pairs. */
static void test_gemm_bf16(void)
{
	static const enum mgpu_prec precs[] = { MGPU_PREC_BF16, MGPU_PREC_FP16 };
	static const int shapes[][3] = { { 0, 0, 0 }, { 5, 3, 0 }, { 1, 1, 1 },
					 { 7, 1, 13 }, { 13, 17, 11 }, { 9, 6, 1000 } };
	static const float ab[][2] = { { 1, 0 }, { -1.5f, 0.75f }, { 0, 2 } };
	static const int batches[] = { 0, 1, 3 };
	static struct mgpu_ops_case cs[6 * 3 * 3 * 2];
	size_t n, s, a, b, t, pad;

	for (t = 0; t < 8; t++) {
		n = 0;
		for (s = 0; s < 6; s++)
			for (a = 0; a < 3; a++)
				for (b = 0; b < 3; b++)
					for (pad = 0; pad < 2; pad++) {
						struct mgpu_ops_case *c = &cs[n++];
						enum mgpu_trans ta = (t & 1) ? T : N;
						enum mgpu_trans tb = (t & 2) ? T : N;
						int m = shapes[s][0], nn = shapes[s][1];
						int k = shapes[s][2];
						int ar = ta == N ? m : k, br = tb == N ? k : nn;
						memset(c, 0, sizeof *c);
						c->op = "gemm";
						c->prec = precs[t / 4];
						c->strided = 1;
						c->ta = ta;
						c->tb = tb;
						c->m = m;
						c->n = nn;
						c->k = k;
						c->alpha = ab[a][0];
						c->beta = ab[a][1];
						c->batch = batches[b];
						if (pad) {
							c->lda = (ar > 1 ? ar : 1) + 2;
							c->ldb = (br > 1 ? br : 1) + 1;
							c->ldc = (m > 1 ? m : 1) + 3;
						}
					}
		run_cases(cs, n);
	}
}

/* add, embedding, heads, bf16 on edge shapes. */
static void test_gpt_ops(void)
{
	static const int ns[] = { 0, 1, 1001 };
	static const int emb[][4] = { { 0, 3, 5, 4 }, { 1, 1, 1, 1 }, { 2, 5, 3, 7 },
				      { 3, 17, 11, 13 }, { 2, 4, 300, 3 } }; /* B T V D */
	static const float accs[] = { 0.0f, 1.0f, 0.5f };
	static const int heads[][5] = { { 0, 3, 2, 4, 0 }, { 1, 1, 1, 1, 0 }, { 2, 5, 3, 4, 0 },
					{ 2, 5, 3, 4, 37 }, { 3, 7, 4, 8, 96 } }; /* B T H Dh ld */
	static const int bf[] = { 0, 1, 14, 1001, 65537 };
	static struct mgpu_ops_case cs[9 + 15 + 5 + 5 + 5];
	size_t n = 0, i, j, f;

	memset(cs, 0, sizeof cs);
	for (i = 0; i < 3; i++)
		for (f = 0; f < 3; f++) {
			cs[n].op = "add";
			cs[n].n = ns[i];
			cs[n++].in_place = (int)f;
		}
	for (i = 0; i < 5; i++)
		for (j = 0; j < 3; j++) {
			cs[n].op = "emb";
			cs[n].m = emb[i][0];
			cs[n].k = emb[i][1];
			cs[n].V = emb[i][2];
			cs[n].n = emb[i][3];
			cs[n++].acc = accs[j];
		}
	for (i = 0; i < 5; i++) {
		cs[n].op = "heads";
		cs[n].m = heads[i][0];
		cs[n].k = heads[i][1];
		cs[n].H = heads[i][2];
		cs[n].n = heads[i][3];
		cs[n++].ldb = heads[i][4];
	}
	for (i = 0; i < 5; i++) {
		cs[n].op = "bf16";
		cs[n++].n = bf[i];
	}
	for (i = 0; i < 5; i++) {
		cs[n].op = "f16";
		cs[n++].n = bf[i];
	}
	run_cases(cs, n);
}

/* Fused attention against ref: T from 1 to past several tiles of every
 * backend (odd tails), head dimensions from 1 to the largest taken, 1 to
 * 16 blocks, empty shapes, both precisions; from T = 512 (the last three)
 * cuda runs attention's GEMM form (attn_gemm.cu), at its first T, a T
 * with odd tails and a head width no tile pads to. */
static void test_flash(void)
{
	static const int sh[][3] = { { 0, 4, 8 },    { 3, 0, 8 },    { 1, 1, 8 },
				     { 3, 5, 8 },    { 2, 33, 32 },  { 16, 64, 32 },
				     { 2, 127, 64 }, { 1, 300, 100 }, { 2, 300, 128 },
				     { 5, 65, 128 }, { 4, 97, 1 },   { 7, 129, 100 },
				     { 2, 512, 32 }, { 3, 577, 64 }, { 1, 600, 100 } }; /* BH T Dh */
	static struct mgpu_ops_case cs[15 * 2];
	size_t n = 0, i, f;

	memset(cs, 0, sizeof cs);
	for (i = 0; i < 15; i++)
		for (f = 0; f < 2; f++) {
			cs[n].op = "flash";
			cs[n].m = sh[i][0];
			cs[n].n = sh[i][1];
			cs[n].k = sh[i][2];
			cs[n].scale = i % 2 ? 1.0f / sqrtf((float)sh[i][2]) : 0.5f;
			cs[n++].prec = f ? BF16 : F32;
		}
	run_cases(cs, n);
}

/* The bf16 fused attention's tensor-core kernels (cuda, capability 8.0
 * and newer): tiles of 64 rows, 16 a warp, head columns padded to 16, 32,
 * 64 or 128. T around 16 and 64 (one row, a warp's rows and one past,
 * a tile and one past, several tiles with a tail) at each padded width,
 * and widths between them (Dh 7, 48, 80: zero columns in the tiles).
 * On other backends these are more bf16 shapes against ref. */
static void test_flash_tc(void)
{
	static const int len[] = { 1, 15, 16, 17, 63, 64, 65, 300 };
	static const int width[] = { 16, 32, 64, 128 };
	static const int odd[][3] = { { 3, 17, 7 }, { 2, 130, 48 }, { 1, 65, 80 } }; /* BH T Dh */
	static struct mgpu_ops_case cs[8 * 4 + 3];
	size_t n = 0, i, j;

	memset(cs, 0, sizeof cs);
	for (i = 0; i < 4; i++)
		for (j = 0; j < 8; j++) {
			cs[n].op = "flash";
			cs[n].m = 2;
			cs[n].n = len[j];
			cs[n].k = width[i];
			cs[n].scale = 1.0f / sqrtf((float)width[i]);
			cs[n++].prec = BF16;
		}
	for (i = 0; i < 3; i++) {
		cs[n].op = "flash";
		cs[n].m = odd[i][0];
		cs[n].n = odd[i][1];
		cs[n].k = odd[i][2];
		cs[n].scale = 1.0f / sqrtf((float)odd[i][2]);
		cs[n++].prec = BF16;
	}
	run_cases(cs, n);
}

/* xent over rows ld > C apart (the gpt's logits, padded to a multiple of 8
 * floats), in place as the gpt calls it and apart: the gaps hold values
 * that change every result when read and must come back untouched. Rows
 * narrow and wide (cuda: a block per row from C = 4096),
 * with ties, NaN first logits and no gradient (not GPT-2's 50257: ref's
 * one running sum of that many exponentials drifts past xent's 1e-5). */
static void test_xent_stride(void)
{
	static const int xs[][3] = { { 5, 31, 32 }, { 33, 256, 264 }, { 3, 300, 320 },
				     { 4, 4095, 4096 }, { 3, 4096, 4104 }, { 70, 5000, 5003 },
				     { 2, 8200, 8208 } }; /* B C ld */
	static struct mgpu_ops_case cs[7 * 4];
	size_t n = 0, i, f;

	memset(cs, 0, sizeof cs);
	for (i = 0; i < 7; i++)
		for (f = 0; f < 4; f++) {
			cs[n].op = "xent";
			cs[n].m = xs[i][0];
			cs[n].n = xs[i][1];
			cs[n].ldc = xs[i][2];
			cs[n].scale = 0.25f;
			cs[n].in_place = f == 0 || f == 2;
			cs[n].ties = f == 1;
			cs[n].nan_rows = f == 2;
			cs[n++].no_grad = f == 3;
		}
	run_cases(cs, n);
}

/* The edges of the cuda row kernels' geometry (a warp per row, 8 rows a
 * block, at most 65535 blocks, then a grid-stride loop; column sums in
 * blocks of 8 columns x 64 row phases; emb_bwd a block per first row of
 * a token id, the ids 256 at a time, at most 1024 columns a pass): rows
 * shorter than a warp, 31, 32 and 33 long, long rows (D = 1000, 300 x 1000
 * columns), more rows than one grid of warps covers (524289 > 8 * 65535),
 * more token ids than blocks, ids repeating over several chunks of ids and
 * two column passes, xent rows whose maximum repeats. Every backend runs
 * them against ref. */
static void test_row_geometry(void)
{
	static const int ln[][2] = { { 3, 31 }, { 5, 32 }, { 4, 33 }, { 2, 1000 },
				     { 300, 1000 }, { 65, 9 }, { 524289, 2 } }; /* B D */
	static const int cols[][2] = { { 1000, 13 }, { 64, 8 }, { 65, 9 }, { 300, 1000 } };
	static const int xent[][2] = { { 5, 31 }, { 4, 32 }, { 3, 33 }, { 300, 257 },
				       { 3, 1000 }, { 7, 1 }, { 524289, 2 } }; /* B C */
	static const int emb[][4] = { { 3, 50, 7, 33 }, { 2, 16, 5, 32 }, { 1, 1, 3, 1100 },
				      { 4, 300, 256, 31 }, { 1, 2, 70000, 1 },
				      { 2, 300, 5, 1100 } }; /* B T V D */
	static struct mgpu_ops_case cs[7 * 2 + 4 * 2 + 7 * 2 + 6 * 2];
	size_t n = 0, i, f;

	memset(cs, 0, sizeof cs);
	for (i = 0; i < 7; i++)
		for (f = 0; f < 2; f++) {
			cs[n].op = "ln";
			cs[n].m = ln[i][0];
			cs[n].n = ln[i][1];
			cs[n++].acc = f ? 0.5f : 0.0f;
			cs[n].op = "xent";
			cs[n].m = xent[i][0];
			cs[n].n = xent[i][1];
			cs[n].scale = 0.25f;
			cs[n].ties = (int)f;
			cs[n++].no_grad = i == 5 && f; /* no dlogits once */
		}
	for (i = 0; i < 4; i++)
		for (f = 0; f < 2; f++) {
			cs[n].op = "col_sum";
			cs[n].m = cols[i][0];
			cs[n].n = cols[i][1];
			cs[n++].acc = f ? 0.5f : 0.0f;
		}
	for (i = 0; i < 6; i++)
		for (f = 0; f < 2; f++) {
			cs[n].op = "emb";
			cs[n].m = emb[i][0];
			cs[n].k = emb[i][1];
			cs[n].V = emb[i][2];
			cs[n].n = emb[i][3];
			cs[n++].acc = f ? 0.5f : 0.0f;
		}
	run_cases(cs, n);
}

/* xent with dlogits == logits (the gpt's head): the same loss, correct
 * flags and gradient as into a separate buffer, bit for bit, on rows whose
 * maximum is and is not the label, and where the label is column 0. */
static void test_xent_inplace(void)
{
	enum { B = 6, C = 37 };
	static float l[B * C], dl[B * C], back[B * C], loss[B], corr[B], loss2[B], corr2[B];
	int32_t lab[B] = { 0, 5, 36, 17, 3, 3 };
	struct mgpu_dev dev;
	void *dl_d = NULL, *l_d = NULL, *lab_d = NULL, *loss_d = NULL, *corr_d = NULL;
	int i;

	for (i = 0; i < B * C; i++)
		l[i] = (float)((i * 7919) % 101) / 13.0f - 3.0f;
	l[1 * C + 5] = 9.0f; /* row 1: the label is the maximum */
	T_OK(mgpu_dev_open(&dev, cur, 0));
	if (t_cur_failed)
		return;
	T_OK(mgpu_dev_alloc(&dev, &l_d, sizeof l));
	T_OK(mgpu_dev_alloc(&dev, &dl_d, sizeof l));
	T_OK(mgpu_dev_alloc(&dev, &lab_d, sizeof lab));
	T_OK(mgpu_dev_alloc(&dev, &loss_d, sizeof loss));
	T_OK(mgpu_dev_alloc(&dev, &corr_d, sizeof corr));
	T_OK(mgpu_dev_from_host(&dev, l_d, l, sizeof l));
	T_OK(mgpu_dev_from_host(&dev, lab_d, lab, sizeof lab));
	T_OK(cur->xent(&dev, dl_d, loss_d, corr_d, l_d, lab_d, B, C, C, 0.5f));
	T_OK(mgpu_dev_to_host(&dev, dl, dl_d, sizeof dl));
	T_OK(mgpu_dev_to_host(&dev, loss, loss_d, sizeof loss));
	T_OK(mgpu_dev_to_host(&dev, corr, corr_d, sizeof corr));
	T_OK(cur->xent(&dev, l_d, loss_d, corr_d, l_d, lab_d, B, C, C, 0.5f));
	T_OK(mgpu_dev_to_host(&dev, back, l_d, sizeof back));
	T_OK(mgpu_dev_to_host(&dev, loss2, loss_d, sizeof loss2));
	T_OK(mgpu_dev_to_host(&dev, corr2, corr_d, sizeof corr2));
	T_CHECK(memcmp(back, dl, sizeof dl) == 0, "in-place gradient differs");
	for (i = 0; i < B; i++)
		T_CHECK(loss2[i] == loss[i] && corr2[i] == corr[i],
			"row %d: in place loss %g correct %g, apart %g %g", i, (double)loss2[i],
			(double)corr2[i], (double)loss[i], (double)corr[i]);
	T_CHECK(corr[1] == 1.0f && corr[0] == 0.0f, "correct flags %g %g", (double)corr[1],
		(double)corr[0]);
	mgpu_dev_free(&dev, l_d, sizeof l);
	mgpu_dev_free(&dev, dl_d, sizeof l);
	mgpu_dev_free(&dev, lab_d, sizeof lab);
	mgpu_dev_free(&dev, loss_d, sizeof loss);
	mgpu_dev_free(&dev, corr_d, sizeof corr);
	mgpu_dev_close(&dev);
}

/* xent rows whose first logit is NaN: NaN loss and gradient on every
 * backend, and the correct flag of ref's scan, which starts from l[0] and
 * keeps the NaN there (argmax 0), where a max over parts would skip it. */
static void test_xent_nan(void)
{
	static const int xent[][2] = { { 2, 1 }, { 5, 31 }, { 6, 33 }, { 9, 257 } }; /* B C */
	static struct mgpu_ops_case cs[4 * 2];
	size_t n = 0, i, f;

	memset(cs, 0, sizeof cs);
	for (i = 0; i < 4; i++)
		for (f = 0; f < 2; f++) {
			cs[n].op = "xent";
			cs[n].m = xent[i][0];
			cs[n].n = xent[i][1];
			cs[n].scale = 0.5f;
			cs[n].nan_rows = 1;
			cs[n++].no_grad = (int)f;
		}
	run_cases(cs, n);
}

/* The argument errors of the transformer ops. */
static void test_gpt_bad_args(void)
{
	struct mgpu_dev dev;
	const struct mgpu_ops *o = cur;

	T_OK(mgpu_dev_open(&dev, cur, 0));
	if (t_cur_failed)
		return;
	T_FAILS(o->gemm(&dev, F32, N, N, 2, 2, 2, 1.0f, NULL, 2, 4, NULL, 2, 4, 0.0f, NULL, 2, 4,
			-1),
		MGPU_EINVAL, "negative batch");
	T_FAILS(o->gemm(&dev, F32, N, N, 2, 2, 2, 1.0f, NULL, 1, 4, NULL, 2, 4, 0.0f, NULL, 2, 4,
			1),
		MGPU_EINVAL, "lda=1");
	T_FAILS(o->gemm(&dev, BF16, N, T, 2, 3, 2, 1.0f, NULL, 2, 4, NULL, 2, 6, 0.0f, NULL, 2, 6,
			1),
		MGPU_EINVAL, "ldb=2");
	T_FAILS(o->gemm(&dev, MGPU_PREC_FP16, N, N, 2, 2, 2, 1.0f, NULL, 2, -4, NULL, 2, 4, 0.0f,
			NULL, 2, 4, 2),
		MGPU_EINVAL, "negative batch 2 or stride");
	T_FAILS(o->emb_fwd(&dev, NULL, NULL, NULL, NULL, 2, 3, 0, 4), MGPU_EINVAL, "V=0");
	T_FAILS(o->emb_bwd(&dev, NULL, NULL, NULL, NULL, -1, 3, 5, 4, 0.0f), MGPU_EINVAL,
		"emb_bwd");
	T_FAILS(o->attn_fwd(&dev, NULL, NULL, NULL, NULL, NULL, 2, 3, 129, 1.0f, F32), MGPU_EINVAL,
		"head dimension 129 not in [1, 128]");
	T_FAILS(o->attn_fwd(&dev, NULL, NULL, NULL, NULL, NULL, 2, 3, 0, 1.0f, BF16), MGPU_EINVAL,
		"head dimension 0");
	T_FAILS(o->attn_fwd(&dev, NULL, NULL, NULL, NULL, NULL, 2, 3, 8, 1.0f, MGPU_PREC_FP16),
		MGPU_EINVAL, "attn_fwd: precision 2 is not fp32 or bf16");
	T_FAILS(o->attn_bwd(&dev, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, -1, 3, 8,
			    1.0f, F32),
		MGPU_EINVAL, "attn_bwd: negative shape");
	T_FAILS(o->heads_split(&dev, NULL, NULL, 11, 1, 2, 3, 4), MGPU_EINVAL, "row stride 11");
	T_FAILS(o->heads_merge(&dev, NULL, 5, NULL, 1, 2, 3, -4), MGPU_EINVAL, "negative");
	if (mgpu_ops_can(cur, MGPU_CAP_HOST_MEMORY)) { /* ids are host memory: checked */
		float wte[6] = { 0 }, wpe[4] = { 0 }, Y[8];
		int32_t ids[4] = { 0, 2, 3, 1 };
		T_FAILS(o->emb_fwd(&dev, Y, ids, wte, wpe, 2, 2, 3, 2), MGPU_ERANGE,
			"token id 3 at 2");
		ids[2] = -1;
		T_FAILS(o->emb_bwd(&dev, wte, wpe, Y, ids, 2, 2, 3, 2, 0.0f), MGPU_ERANGE,
			"token id -1");
	}
	mgpu_dev_close(&dev);
}

static void test_no_device(void)
{
	T_SKIP("%s", cur_why);
}

static void test_device_count(void)
{
	char why[256] = "untouched";
	int n = -1;

	T_OK(cur->device_count(&n, why, sizeof why));
	T_CHECK(n >= 0, "count %d", n);
	if (mgpu_ops_can(cur, MGPU_CAP_HOST_MEMORY))
		T_CHECK(n == 1 && why[0] == '\0', "host backend: 1 device, got %d '%s'", n, why);
	else if (n == 0)
		T_CHECK(why[0] != '\0' && strcmp(why, "untouched") != 0, "zero devices need a reason");
}

/* ---- backend-independent tests ------------------------------------------ */

/* The bf16 GEMM of ref by hand: inputs rounded to bf16 (1 + 2^-9, a quarter
 * of an ulp, rounds to 1; 1 + 3 * 2^-9 up to 1 + 2^-7), exact products,
 * an fp32 sum: C = A B for column-major A = [1+2^-9 2; 3 1+3*2^-9],
 * B = [0.5 1; -1 3]. In fp32 the unrounded inputs would give other values. */
static void ref_known_bf16(struct mgpu_dev *dev)
{
	const float a32[4] = { 1.0f + 0x1p-9f, 3.0f, 2.0f, 1.0f + 3 * 0x1p-9f };
	const float b32[4] = { 0.5f, -1.0f, 1.0f, 3.0f };
	/* rounded A = [1 2; 3 1+2^-7] */
	const float want[4] = { 1.0f * 0.5f - 2.0f, 3.0f * 0.5f - (1.0f + 0x1p-7f),
				1.0f + 6.0f, 3.0f + 3.0f * (1.0f + 0x1p-7f) };
	uint16_t A[4], Bm[4];
	float C[4] = { NAN, NAN, NAN, NAN };
	int i;

	for (i = 0; i < 4; i++) {
		A[i] = mgpu_bf16_from_f32(a32[i]);
		Bm[i] = mgpu_bf16_from_f32(b32[i]);
	}
	T_OK(mgpu_ops_ref.gemm(dev, BF16, N, N, 2, 2, 2, 1.0f, A, 2, 0, Bm, 2, 0, 0.0f, C, 2, 0, 1));
	for (i = 0; i < 4; i++)
		T_CHECK(C[i] == want[i], "bf16 C[%d] = %.9g, want %.9g", i, (double)C[i],
			(double)want[i]);
	T_CHECK(want[3] != 3.0f + 3.0f * a32[3], "the rounding shows in the result");
}

/* ref against values worked out by hand: it is the definition. */
/* sum_acc: exact sums, the fold's order, and cpu equal to ref bit for bit
 * on a vector of several chunks. */
static void ref_known_sum(struct mgpu_dev *dev)
{
	static float x[3 * 65536 + 11];
	double acc = 1.0, a2 = 0.0, b2 = 0.0, want;
	size_t i;

	for (i = 0; i < 300; i++)
		x[i] = 0.5f;
	T_OK(mgpu_ops_ref.sum_acc(dev, &acc, x, 300, 0, 2.0));
	T_CHECK(acc == 301.0, "1 + 2 * 150 = %.17g", acc);
	acc = 0.0;
	T_OK(mgpu_ops_ref.sum_acc(dev, &acc, x, 300, 1, 1.0));
	T_CHECK(acc == 75.0, "sum of squares %.17g", acc);
	/* lane 0 holds 1e17 then -1e17 (element 256): in lane order the 1 of
	 * lane 1 survives, a plain left-to-right sum in double loses it */
	for (i = 0; i < 512; i++)
		x[i] = 0.0f;
	x[0] = 1e17f;
	x[1] = 1.0f;
	x[256] = -1e17f;
	acc = 0.0;
	T_OK(mgpu_ops_ref.sum_acc(dev, &acc, x, 512, 0, 1.0));
	T_CHECK(acc == 1.0, "fold order: %.17g", acc);
	for (i = 0; i < sizeof x / sizeof x[0]; i++)
		x[i] = (float)((i * 2654435761u) % 1000003) / 1000003.0f - 0.5f;
	T_OK(mgpu_ops_ref.sum_acc(dev, &a2, x, sizeof x / sizeof x[0], 1, 0.5));
	T_OK(mgpu_ops_cpu.sum_acc(dev, &b2, x, sizeof x / sizeof x[0], 1, 0.5));
	for (want = 0.0, i = 0; i < sizeof x / sizeof x[0]; i++)
		want += (double)x[i] * x[i];
	T_CHECK(a2 == b2, "cpu %.17g, ref %.17g", b2, a2);
	T_NEAR(a2, 0.5 * want, 1e-12 * want);
}

static void test_ref_known(void)
{
	/* column-major A = [1 2; 3 4] (A[0]=1 A[1]=3 A[2]=2 A[3]=4), B = [5 6; 7 8] */
	const float A[4] = { 1, 3, 2, 4 }, Bm[4] = { 5, 7, 6, 8 };
	/* AB = [19 22; 43 50], AtB = [26 30; 38 44], ABt = [17 23; 39 53], AtBt = [23 31; 34 46] */
	const float want[4][4] = { { 19, 43, 22, 50 }, { 26, 38, 30, 44 },
				   { 17, 39, 23, 53 }, { 23, 34, 31, 46 } };
	const float l[3] = { 1, 2, 3 };
	float C[4], loss, corr, dl[3], s;
	int32_t lab = 0;
	struct mgpu_dev dev;
	int t, i;

	T_OK(mgpu_dev_open(&dev, &mgpu_ops_ref, 0));
	for (t = 0; t < 4; t++) {
		for (i = 0; i < 4; i++)
			C[i] = NAN;
		T_OK(mgpu_ops_ref.gemm(&dev, F32, (t & 1) ? T : N, (t & 2) ? T : N, 2, 2, 2, 1.0f,
				       A, 2, 0, Bm, 2, 0, 0.0f, C, 2, 0, 1));
		for (i = 0; i < 4; i++)
			T_CHECK(C[i] == want[t][i], "trans %d C[%d] = %g, want %g", t, i, (double)C[i],
				(double)want[t][i]);
	}
	for (i = 0; i < 4; i++)
		C[i] = 1.0f;
	T_OK(mgpu_ops_ref.gemm(&dev, F32, N, N, 2, 2, 0, 1.0f, NULL, 2, 0, NULL, 1, 0, 2.0f, C, 2,
			       0, 1));
	T_CHECK(C[0] == 2.0f && C[3] == 2.0f, "k=0: C = beta C, got %g", (double)C[0]);
	T_OK(mgpu_ops_ref.gemm(&dev, F32, N, N, 2, 2, 2, 2.0f, A, 2, 0, Bm, 2, 0, -1.0f, C, 2, 0,
			       1));
	T_CHECK(C[0] == 36.0f && C[3] == 98.0f, "alpha 2 beta -1: %g %g", (double)C[0],
		(double)C[3]);
	T_OK(mgpu_ops_ref.xent(&dev, dl, &loss, &corr, l, &lab, 1, 3, 3, 1.0f));
	ref_known_bf16(&dev);
	s = expf(1) + expf(2) + expf(3);
	T_NEAR(loss, logf(s) - 1.0f, 1e-6);
	T_CHECK(corr == 0.0f, "argmax is 2, label 0");
	T_NEAR(dl[0], expf(1) / s - 1.0f, 1e-6);
	T_NEAR(dl[2], expf(3) / s, 1e-6);
	ref_known_sum(&dev);
	mgpu_dev_close(&dev);
}

/* A broken backend: each op wrong in one way the comparison must see. */

/* A bf16 GEMM that accumulates in bf16 (the running sum rounded at every
 * step): what fp32 accumulation exists to avoid. */
static void bad_gemm_bf16(enum mgpu_trans ta, enum mgpu_trans tb, int m, int n, int k,
			  float alpha, const uint16_t *A, int lda, long long sa, const uint16_t *Bm,
			  int ldb, long long sb, float beta, float *C, int ldc, long long sc,
			  int batch)
{
	int p, i, j, l;
	float sum, x, y, *c;

	for (p = 0; p < batch; p++)
		for (j = 0; j < n; j++)
			for (i = 0; i < m; i++) {
				for (sum = 0.0f, l = 0; l < k; l++) {
					x = mgpu_bf16_to_f32(ta == N ? A[p * sa + i + (size_t)l * lda]
								     : A[p * sa + l + (size_t)i * lda]);
					y = mgpu_bf16_to_f32(tb == N ? Bm[p * sb + l + (size_t)j * ldb]
								     : Bm[p * sb + j + (size_t)l * ldb]);
					sum = mgpu_bf16_to_f32(mgpu_bf16_from_f32(sum + x * y));
				}
				c = &C[p * sc + i + (size_t)j * ldc];
				*c = alpha * sum + (beta == 0.0f ? 0.0f : beta * *c);
			}
}

/* fp32: one element of the first C off by 0.01; bf16: the sums in bf16;
 * fp16: right. */
static int bad_gemm(struct mgpu_dev *dev, enum mgpu_prec prec, enum mgpu_trans ta,
		    enum mgpu_trans tb, int m, int n, int k, float alpha, const void *A, int lda,
		    long long sa, const void *Bm, int ldb, long long sb, float beta, float *C,
		    int ldc, long long sc, int batch)
{
	if (prec == BF16) {
		bad_gemm_bf16(ta, tb, m, n, k, alpha, A, lda, sa, Bm, ldb, sb, beta, C, ldc, sc,
			      batch);
		return 0;
	}
	MGPU_TRY(mgpu_ops_cpu.gemm(dev, prec, ta, tb, m, n, k, alpha, A, lda, sa, Bm, ldb, sb,
				   beta, C, ldc, sc, batch));
	if (prec == F32 && m > 0 && n > 0 && batch > 0)
		C[(size_t)(n - 1) * ldc] += 0.01f;
	return 0;
}

/* col_sum that reads db when beta == 0 (NaN-filled by the check). */
static int bad_col_sum(struct mgpu_dev *dev, float *db, const float *dY, int B, int D,
		       float beta)
{
	int j;

	MGPU_TRY(mgpu_ops_cpu.col_sum(dev, db, dY, B, D, 1.0f));
	for (j = 0; j < D; j++)
		db[j] = beta * db[j] + db[j] * (1.0f - beta); /* NaN stays NaN */
	return 0;
}

/* dropout with its offset ignored: a different mask. */
static int bad_dropout(struct mgpu_dev *dev, float *Y, const float *X, size_t n, float p,
		       uint64_t seed, uint64_t offset)
{
	(void)offset;
	return mgpu_ops_cpu.dropout(dev, Y, X, n, p, seed, 0);
}

/* emb_bwd that overwrites where it must accumulate. */
static int bad_emb_bwd(struct mgpu_dev *dev, float *dwte, float *dwpe, const float *dY,
		       const int32_t *ids, int B, int npos, int V, int D, float acc)
{
	(void)acc;
	return mgpu_ops_cpu.emb_bwd(dev, dwte, dwpe, dY, ids, B, npos, V, D, 0.0f);
}

/* Fused attention that forgets its scale. */
static int bad_flash_fwd(struct mgpu_dev *dev, float *y, float *lse, const float *q,
			 const float *k, const float *v, int BH, int npos, int Dh, float scale,
			 enum mgpu_prec prec)
{
	(void)scale;
	return mgpu_ops_cpu.attn_fwd(dev, y, lse, q, k, v, BH, npos, Dh, 1.0f, prec);
}

/* The backward without flash attention's row term D = dy . y. */
static int bad_flash_bwd(struct mgpu_dev *dev, float *dq, float *dk, float *dv, const float *q,
			 const float *k, const float *v, const float *y, const float *dy,
			 const float *lse, int BH, int npos, int Dh, float scale,
			 enum mgpu_prec prec)
{
	size_t n = (size_t)BH * (size_t)npos * (size_t)Dh;
	float *zero = calloc(n ? n : 1, sizeof *zero);
	int rc;

	(void)y;
	if (!zero)
		return mgpu_err(MGPU_ENOMEM, "out of memory");
	rc = mgpu_ops_cpu.attn_bwd(dev, dq, dk, dv, q, k, v, zero, dy, lse, BH, npos, Dh, scale,
				   prec);
	free(zero);
	return rc;
}

/* heads_merge that clears the rest of each row (q/k/v neighbours). */
static int bad_merge(struct mgpu_dev *dev, float *Y, int ldy, const float *X, int B,
		     int npos, int H, int Dh)
{
	size_t i, nrows = (size_t)B * npos;

	for (i = 0; i < nrows; i++)
		memset(Y + i * ldy, 0, (size_t)ldy * sizeof *Y);
	return mgpu_ops_cpu.heads_merge(dev, Y, ldy, X, B, npos, H, Dh);
}

/* bf16 by truncation instead of rounding. */
static int bad_bf16(struct mgpu_dev *dev, uint16_t *Y, const float *X, size_t n)
{
	size_t i;
	uint32_t u;

	(void)dev;
	for (i = 0; i < n; i++) {
		memcpy(&u, &X[i], sizeof u);
		Y[i] = (uint16_t)(u >> 16);
	}
	return 0;
}

/* sum_acc that accumulates in float, in plain order. */
static int bad_sum_acc(struct mgpu_dev *dev, double *acc, const float *x, size_t n,
		       int squares, double scale)
{
	float t = 0.0f;
	size_t i;

	(void)dev;
	for (i = 0; i < n; i++)
		t += squares ? x[i] * x[i] : x[i];
	*acc += scale * t;
	return 0;
}

static void test_check_detects(void)
{
	struct mgpu_ops bad = mgpu_ops_cpu;
	int r, nbad = 0, other_bad = 0;

	bad.name = "broken";
	bad.gemm = bad_gemm;
	bad.col_sum = bad_col_sum;
	bad.dropout = bad_dropout;
	bad.emb_bwd = bad_emb_bwd;
	bad.attn_fwd = bad_flash_fwd;
	bad.attn_bwd = bad_flash_bwd;
	bad.heads_merge = bad_merge;
	bad.f32_to_bf16 = bad_bf16;
	bad.sum_acc = bad_sum_acc;
	T_OK(mgpu_ops_compare(&bad, 0, &mgpu_ops_ref, 42, &rep));
	for (r = 0; r < rep.nrows; r++) {
		const char *op = rep.row[r].op;
		int target = !strcmp(op, "gemm") || !strcmp(op, "dropout") ||
			     (!strcmp(op, "col_sum") && strstr(rep.row[r].shape, "beta=0")) ||
			     !strcmp(op, "emb_bwd") ||
			     !strcmp(op, "heads_merge") || !strcmp(op, "f32_to_bf16") ||
			     !strcmp(op, "gemm_bf16") || !strcmp(op, "sum_acc") ||
			     !strncmp(op, "attn_fwd", 8) || !strncmp(op, "attn_bwd", 8);
		nbad += target && !rep.row[r].ok;
		other_bad += !target && !rep.row[r].ok;
		T_CHECK(!target || !rep.row[r].ok, "broken %s %s passed (err %g)", op,
			rep.row[r].shape, rep.row[r].max_rel_err);
		T_CHECK(strcmp(rep.row[r].backend, "broken") == 0, "backend %s", rep.row[r].backend);
	}
	T_CHECK(nbad == 34 && other_bad == 0, "%d broken rows caught, %d others failed", nbad,
		other_bad);
	T_CHECK(rep.nfail == nbad, "nfail %d", rep.nfail);
}

/* The selftest table for cpu against ref: everything runs and agrees. */
static void test_compare_cpu(void)
{
	static struct mgpu_ops_report again;
	int r, found_big = 0, found_bf16 = 0;

	T_OK(mgpu_ops_compare(&mgpu_ops_cpu, 0, &mgpu_ops_ref, 42, &rep));
	T_CHECK(rep.nrows >= 20 && rep.nfail == 0 && rep.nlost == 0, "%d rows, %d failed",
		rep.nrows, rep.nfail);
	for (r = 0; r < rep.nrows; r++) {
		T_CHECK(rep.row[r].ok && rep.row[r].max_rel_err <= rep.row[r].tol,
			"%s %s: %g > %g", rep.row[r].op, rep.row[r].shape, rep.row[r].max_rel_err,
			rep.row[r].tol);
		T_CHECK(!strcmp(rep.row[r].backend, "cpu") && !strcmp(rep.row[r].ref_backend, "ref"),
			"row names %s/%s", rep.row[r].backend, rep.row[r].ref_backend);
		T_CHECK(rep.row[r].tol > 0, "%s has a tolerance", rep.row[r].op);
		found_big += !strcmp(rep.row[r].op, "gemm") &&
			     strstr(rep.row[r].shape, "m=512 n=128 k=784") != NULL;
		found_bf16 += !strcmp(rep.row[r].op, "gemm_bf16");
	}
	T_CHECK(found_big == 1, "training-like gemm row present");
	T_CHECK(found_bf16 == 4, "%d bf16 GEMM rows, want 4", found_bf16);
	T_OK(mgpu_ops_compare(&mgpu_ops_cpu, 0, &mgpu_ops_ref, 42, &again));
	T_CHECK(again.nrows == rep.nrows, "same rows");
	for (r = 0; r < rep.nrows && r < again.nrows; r++)
		T_CHECK(again.row[r].max_rel_err == rep.row[r].max_rel_err, "%s not deterministic",
			rep.row[r].op);
	T_FAILS(mgpu_ops_compare(&mgpu_ops_ref, 3, &mgpu_ops_ref, 1, &rep), MGPU_EINVAL,
		"index 3");
}

/* ---- conv nets ----------------------------------------------------------- */

#undef N /* MGPU_CV names struct mgpu_conv's fields */
#undef T

static void run_conv_cases(const struct mgpu_ops *ops, const struct mgpu_ops_conv_case *cs,
			   size_t n)
{
	struct mgpu_ops_pair p;
	size_t i;
	int r;

	T_OK(mgpu_ops_pair_open(&p, ops, 0, &mgpu_ops_ref, 11, &rep));
	if (t_cur_failed)
		return;
	for (i = 0; i < n; i++)
		T_OK(mgpu_ops_check_conv_case(&p, &cs[i]));
	mgpu_ops_pair_close(&p);
	T_CHECK(rep.nrows > 0 && rep.nlost == 0, "%d rows, %d lost", rep.nrows, rep.nlost);
	for (r = 0; r < rep.nrows; r++)
		T_CHECK(rep.row[r].ok, "%s %s: %s vs %s rel err %g > tol %g", rep.row[r].op,
			rep.row[r].shape, rep.row[r].backend, rep.row[r].ref_backend,
			rep.row[r].max_rel_err, rep.row[r].tol);
}

/* Awkward convolutions: 1x1, stride 2, padding, dilation 2, groups 1, 2
 * and depthwise, odd sizes, batch 1, channels not a multiple of 8, a
 * kernel as wide as the padded input, 1-D (H = 1), bias and acc. */
static const struct mgpu_ops_conv_case conv_cases[] = {
	{ .op = "conv", .cv = MGPU_CV(1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 1, 1, 1) },
	{ .op = "conv", .bias = 1, .cv = MGPU_CV(2, 3, 7, 5, 5, 1, 1, 1, 1, 0, 0, 1, 1, 1) },
	{ .op = "conv", .bias = 1, .acc = 1, .cv = MGPU_CV(3, 5, 9, 11, 7, 3, 3, 2, 2, 1, 1, 1, 1, 1) },
	{ .op = "conv", .cv = MGPU_CV(1, 6, 10, 9, 4, 3, 2, 1, 2, 2, 1, 2, 2, 2) },
	{ .op = "conv", .bias = 1, .cv = MGPU_CV(2, 7, 8, 8, 7, 3, 3, 1, 1, 1, 1, 1, 1, 7) },
	{ .op = "conv", .acc = 1, .cv = MGPU_CV(2, 12, 13, 6, 24, 5, 3, 3, 1, 2, 0, 1, 2, 12) },
	{ .op = "conv", .cv = MGPU_CV(2, 4, 5, 5, 3, 7, 7, 1, 1, 1, 1, 1, 1, 1) },
	{ .op = "conv", .bias = 1, .cv = MGPU_CV(3, 9, 1, 37, 10, 1, 7, 1, 3, 0, 3, 1, 1, 1) },
	{ .op = "conv", .bias = 1, .acc = 1, .cv = MGPU_CV(2, 10, 1, 20, 4, 1, 3, 1, 1, 0, 2, 1, 2, 2) },
	{ .op = "conv", .cv = MGPU_CV(0, 3, 5, 5, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1) },
	{ .op = "conv", .bias = 1, .acc = 1, .cv = MGPU_CV(0, 3, 5, 5, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1) },
	{ .op = "conv", .bias = 1, .cv = MGPU_CV(4, 16, 12, 12, 32, 3, 3, 2, 2, 1, 1, 1, 1, 4) },
	{ .op = "im2col", .cv = MGPU_CV(1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 1, 1, 1) },
	{ .op = "im2col", .cv = MGPU_CV(1, 5, 9, 11, 7, 3, 3, 2, 2, 1, 1, 1, 1, 1) },
	{ .op = "im2col", .cv = MGPU_CV(1, 6, 10, 9, 4, 3, 2, 1, 2, 2, 1, 2, 2, 2) },
	{ .op = "im2col", .cv = MGPU_CV(1, 3, 5, 4, 3, 5, 5, 3, 2, 2, 2, 1, 1, 1) },
};

static const struct mgpu_ops_conv_case conv_light_cases[] = {
	{ .op = "pool", .mode = MGPU_POOL_MAX, .cv = MGPU_CV(2, 3, 7, 9, 0, 3, 3, 2, 2, 1, 1, 0, 0, 0) },
	{ .op = "pool", .mode = MGPU_POOL_MAX, .cv = MGPU_CV(1, 5, 8, 8, 0, 2, 2, 2, 2, 0, 0, 0, 0, 0) },
	{ .op = "pool", .mode = MGPU_POOL_MAX, .cv = MGPU_CV(3, 2, 1, 17, 0, 1, 3, 1, 2, 0, 1, 0, 0, 0) },
	{ .op = "pool", .mode = MGPU_POOL_AVG, .cv = MGPU_CV(2, 3, 7, 9, 0, 3, 3, 2, 2, 1, 1, 0, 0, 0) },
	{ .op = "pool", .mode = MGPU_POOL_AVG_EXCL, .cv = MGPU_CV(2, 3, 7, 9, 0, 3, 3, 2, 2, 1, 1, 0, 0, 0) },
	{ .op = "pool", .mode = MGPU_POOL_AVG, .cv = MGPU_CV(3, 7, 5, 6, 0, 5, 6, 1, 1, 0, 0, 0, 0, 0) },
	{ .op = "pool", .mode = MGPU_POOL_AVG_EXCL, .cv = MGPU_CV(1, 4, 6, 5, 0, 4, 3, 3, 1, 2, 1, 0, 0, 0) },
	{ .op = "pool", .mode = MGPU_POOL_MAX, .cv = MGPU_CV(0, 3, 4, 4, 0, 2, 2, 2, 2, 0, 0, 0, 0, 0) },
	{ .op = "upsample", .cv = MGPU_CV(2, 3, 5, 7, 0, 0, 0, 2, 2, 0, 0, 0, 0, 0) },
	{ .op = "upsample", .cv = MGPU_CV(1, 1, 1, 9, 0, 0, 0, 1, 3, 0, 0, 0, 0, 0) },
	{ .op = "bn", .train = 1, .cv = MGPU_CV(2, 3, 5, 7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0) },
	{ .op = "bn", .train = 1, .shift = 1, .cv = MGPU_CV(1, 5, 1, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0) },
	{ .op = "bn", .train = 1, .shift = 1, .acc = 1, .cv = MGPU_CV(4, 13, 3, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0) },
	{ .op = "bn", .cv = MGPU_CV(3, 6, 2, 5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0) },
	{ .op = "bn", .acc = 1, .cv = MGPU_CV(1, 9, 1, 11, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0) },
	{ .op = "gn", .cv = MGPU_CV(2, 6, 5, 7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3) },
	{ .op = "gn", .cv = MGPU_CV(1, 5, 1, 9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5) },
	{ .op = "gn", .cv = MGPU_CV(3, 4, 2, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1) },
	{ .op = "act_fwd", .n = 1001, .act = MGPU_ACT_SILU },
	{ .op = "act_fwd", .n = 1001, .act = MGPU_ACT_RELU },
	{ .op = "act_fwd", .n = 7, .act = MGPU_ACT_GELU },
	{ .op = "act_fwd", .n = 0, .act = MGPU_ACT_TANH },
	{ .op = "chan", .cv = MGPU_CV(2, 3, 5, 7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0) },
	{ .op = "chan", .acc = 1, .cv = MGPU_CV(1, 13, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0) },
	{ .op = "chan", .acc = 1, .cv = MGPU_CV(0, 4, 3, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0) },
};

static void test_conv(void)
{
	run_conv_cases(cur, conv_cases, sizeof conv_cases / sizeof conv_cases[0]);
}

static void test_conv_light(void)
{
	run_conv_cases(cur, conv_light_cases, sizeof conv_light_cases / sizeof conv_light_cases[0]);
}

/* conv_cases under --dtype bf16 (the im2col ones ignore it). */
static size_t bf16_cases(const struct mgpu_ops_conv_case *from, size_t n,
			 struct mgpu_ops_conv_case *to)
{
	size_t i;

	for (i = 0; i < n; i++) {
		to[i] = from[i];
		to[i].prec = MGPU_PREC_BF16;
	}
	return n;
}

/* On a CPU whose oneDNN has no bf16 convolution (ONEDNN_MAX_CPU_ISA=AVX2
 * in the environment, as tests/cli/19k-train-cnn-bf16.sh runs it) this
 * checks cpu's fallback: the f32 primitive on rounded inputs. */
static void test_conv_bf16(void)
{
	struct mgpu_ops_conv_case cs[sizeof conv_cases / sizeof conv_cases[0]];

	run_conv_cases(cur, cs, bf16_cases(conv_cases, sizeof cs / sizeof cs[0], cs));
}

/* The im2col convolution (conv_gemm.c) on this backend's own im2col,
 * col2im and gemm: on cpu it checks the index arithmetic the cuda
 * kernels share, on cuda the kernels and the cuBLAS arguments. */
static void test_conv_im2col(void)
{
	struct mgpu_ops v = *cur;

	v.conv_fwd = mgpu_gemm_conv_fwd;
	v.conv_bwd_data = mgpu_gemm_conv_bwd_data;
	v.conv_bwd_weight = mgpu_gemm_conv_bwd_weight;
	run_conv_cases(&v, conv_cases, sizeof conv_cases / sizeof conv_cases[0]);
}

/* The same in bf16: cuda's bf16 convolutions (rounded columns, dy and
 * weights into gemm's bf16 products), checked on cpu here. */
static void test_conv_im2col_bf16(void)
{
	struct mgpu_ops_conv_case cs[sizeof conv_cases / sizeof conv_cases[0]];
	struct mgpu_ops v = *cur;

	v.conv_fwd = mgpu_gemm_conv_fwd;
	v.conv_bwd_data = mgpu_gemm_conv_bwd_data;
	v.conv_bwd_weight = mgpu_gemm_conv_bwd_weight;
	run_conv_cases(&v, cs, bf16_cases(conv_cases, sizeof cs / sizeof cs[0], cs));
}

/* The losses of targets beyond a class id: one value, groups of one
 * pixel, a long vector, no rows, weights with zeros (a missing keypoint),
 * ignored pixels, two classes, in place. */
static const struct mgpu_ops_conv_case loss_cases[] = {
	{ .op = "mse", .cv = MGPU_CV(1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0) },
	{ .op = "mse", .weighted = 1, .cv = MGPU_CV(3, 5, 7, 9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0) },
	{ .op = "mse", .nograd = 1, .cv = MGPU_CV(2, 1, 1, 37, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0) },
	{ .op = "mse", .weighted = 1, .nograd = 1,
	  .cv = MGPU_CV(2, 7, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0) },
	{ .op = "mse", .cv = MGPU_CV(0, 3, 4, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0) },
	{ .op = "mse", .weighted = 1, .cv = MGPU_CV(2, 4, 33, 31, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0) },
	{ .op = "pix_xent", .cv = MGPU_CV(1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0) },
	{ .op = "pix_xent", .ignore = 1, .cv = MGPU_CV(2, 3, 5, 7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0) },
	{ .op = "pix_xent", .inplace = 1, .cv = MGPU_CV(3, 21, 4, 5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0) },
	{ .op = "pix_xent", .nograd = 1, .cv = MGPU_CV(1, 2, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0) },
	{ .op = "pix_xent", .ignore = 1, .inplace = 1,
	  .cv = MGPU_CV(2, 2, 9, 13, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0) },
	{ .op = "pix_xent", .cv = MGPU_CV(0, 3, 2, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0) },
};

static void test_losses(void)
{
	run_conv_cases(cur, loss_cases, sizeof loss_cases / sizeof loss_cases[0]);
}

/* Shapes every backend refuses; labels outside [-1, C) on host backends
 * (cuda cannot see them without a round trip: a NaN loss there). */
static void test_loss_bad_args(void)
{
	struct mgpu_dev d;
	float buf[64];

	T_OK(mgpu_dev_open(&d, cur, 0));
	if (t_cur_failed)
		return;
	T_FAILS(d.ops->mse(&d, NULL, buf, buf, buf, NULL, 1, 0, 4, 1.0f), MGPU_EINVAL, "bad shape");
	T_FAILS(d.ops->mse(&d, NULL, buf, buf, buf, NULL, -1, 1, 4, 1.0f), MGPU_EINVAL,
		"bad shape");
	T_FAILS(d.ops->pix_xent(&d, NULL, buf, buf, buf, (const int32_t *)buf, 1, 0, 4, 1.0f),
		MGPU_EINVAL, "bad shape");
	if (mgpu_ops_can(cur, MGPU_CAP_HOST_MEMORY)) {
		int32_t lab[4] = { 0, 1, -2, 0 };
		float l[8] = { 0 };

		T_FAILS(d.ops->pix_xent(&d, NULL, buf, buf + 8, l, lab, 1, 2, 4, 1.0f),
			MGPU_ERANGE, "label -2 of pixel 2");
		lab[2] = 2;
		T_FAILS(d.ops->pix_xent(&d, NULL, buf, buf + 8, l, lab, 1, 2, 4, 1.0f),
			MGPU_ERANGE, "not in [-1, 2)");
	}
	mgpu_dev_close(&d);
}

static void test_conv_bad_args(void)
{
	struct mgpu_conv g = MGPU_CV(1, 4, 5, 5, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1);
	struct mgpu_pool2d pg = { 1, 2, 4, 4, 3, 3, 1, 1, 2, 0, MGPU_POOL_MAX };
	struct mgpu_bn bn = { 1, 2, 1, 1e-5f, 0.1f, 1.0, 1 };
	struct mgpu_dev d;
	float buf[4096];

	T_OK(mgpu_dev_open(&d, cur, 0));
	if (t_cur_failed)
		return;
	g.groups = 3; /* divides neither C = 4 nor K = 6 ... K yes, C no */
	T_FAILS(d.ops->conv_fwd(&d, &g, buf, buf, buf, NULL), MGPU_EINVAL, "groups");
	g.groups = 1;
	g.KH = 9; /* wider than the padded input (5 + 2) */
	T_FAILS(d.ops->conv_bwd_data(&d, &g, buf, buf, buf), MGPU_EINVAL, "wider than the padded");
	g.KH = 3;
	g.dh = 0;
	T_FAILS(d.ops->conv_bwd_weight(&d, &g, buf, NULL, buf, buf, 0.0f), MGPU_EINVAL,
		"dilation 0");
	g.dh = 1;
	g.prec = MGPU_PREC_FP16; /* not a convolution precision */
	T_FAILS(d.ops->conv_fwd(&d, &g, buf, buf, buf, NULL), MGPU_EINVAL, "precision fp16");
	g.prec = MGPU_PREC_FP32;
	T_FAILS(d.ops->pool_fwd(&d, &pg, buf, buf), MGPU_EINVAL, "bad geometry");
	T_FAILS(d.ops->bn_fwd(&d, &bn, buf, buf, buf, buf, buf, NULL, buf, buf, buf, buf),
		MGPU_EINVAL, "one value per channel");
	T_FAILS(d.ops->gn_fwd(&d, 1, 6, 4, 4, buf, buf, buf, buf, buf, buf, 1e-5f), MGPU_EINVAL,
		"groups");
	T_FAILS(d.ops->upsample_fwd(&d, 1, 1, 2, 2, 0, 2, buf, buf), MGPU_EINVAL, "scale 0");
	T_FAILS(d.ops->act_fwd(&d, (enum mgpu_act)9, buf, buf, 4), MGPU_EINVAL, "activation");
	mgpu_dev_close(&d);
}

/* Planted mutants of the conv-net ops, each a classic mistake; the
 * selftest's rows must catch every one and nothing else. */

/* Convolution instead of cross-correlation: the kernel flipped. */
static int bad_conv_fwd(struct mgpu_dev *dev, const struct mgpu_conv *g, float *y,
			const float *x, const float *w, const float *bias)
{
	size_t nw = (size_t)g->K * (g->C / g->groups) * g->KH * g->KW, i, t;
	float *f = malloc(nw * sizeof *f);
	int rc;

	if (!f)
		return MGPU_ENOMEM;
	for (i = 0; i < nw; i++) { /* (kh, kw) -> (KH-1-kh, KW-1-kw) in each plane */
		t = (size_t)g->KH * g->KW;
		f[i] = w[i / t * t + (t - 1 - i % t)];
	}
	rc = mgpu_ops_cpu.conv_fwd(dev, g, y, x, f, bias);
	free(f);
	return rc;
}

/* The running variance updated with the biased batch variance. */
static int bad_bn_fwd(struct mgpu_dev *dev, const struct mgpu_bn *bn, float *y, float *mean,
		      float *rstd, const float *x, const float *stats, const float *shift,
		      const float *gamma, const float *beta, float *rm, float *rv)
{
	float old[256];
	int c, rc;

	for (c = 0; c < bn->C && c < 256; c++)
		old[c] = rv[c];
	rc = mgpu_ops_cpu.bn_fwd(dev, bn, y, mean, rstd, x, stats, shift, gamma, beta, rm, rv);
	for (c = 0; bn->train && rc == 0 && c < bn->C && c < 256; c++)
		rv[c] = (1.0f - bn->momentum) * old[c] +
			bn->momentum * (1.0f / (rstd[c] * rstd[c]) - bn->eps);
	return rc;
}

/* BatchNorm's dx without the projection on xhat (sum(dy xhat) dropped). */
static int bad_bn_bwd_data(struct mgpu_dev *dev, const struct mgpu_bn *bn, float *dx,
			   const float *dy, const float *x, const float *mean, const float *rstd,
			   const float *gamma, const float *dstats)
{
	float ds[512];
	int c;

	for (c = 0; c < bn->C && c < 256; c++) {
		ds[c] = dstats[c];
		ds[bn->C + c] = 0.0f;
	}
	return mgpu_ops_cpu.bn_bwd_data(dev, bn, dx, dy, x, mean, rstd, gamma, ds);
}

/* Nearest upsampling's backward as a nearest sample: one of the block's
 * gradients instead of their sum. */
static int bad_upsample_bwd(struct mgpu_dev *dev, int N, int C, int H, int W, int sh, int sw,
			    float *dx, const float *dy)
{
	size_t p, planes = (size_t)N * C;
	int h, w;

	(void)dev;
	for (p = 0; p < planes; p++)
		for (h = 0; h < H; h++)
			for (w = 0; w < W; w++)
				dx[(p * H + h) * W + w] =
					dy[(p * H * sh + (size_t)h * sh) * W * sw + (size_t)w * sw];
	return 0;
}

/* GroupNorm's parameter gradients overwritten instead of accumulated. */
static int bad_gn_bwd(struct mgpu_dev *dev, int N, int C, int HW, int G, float *dx,
		      float *dgamma, float *dbeta, const float *dy, const float *x,
		      const float *mean, const float *rstd, const float *gamma, float acc)
{
	(void)acc;
	return mgpu_ops_cpu.gn_bwd(dev, N, C, HW, G, dx, dgamma, dbeta, dy, x, mean, rstd, gamma,
				   0.0f);
}

static void test_conv_check_detects(void)
{
	struct mgpu_ops bad = mgpu_ops_cpu;
	int r, nbad = 0, other_bad = 0, nconv = 0;

	bad.name = "broken";
	bad.conv_fwd = bad_conv_fwd;
	bad.bn_fwd = bad_bn_fwd;
	bad.bn_bwd_data = bad_bn_bwd_data;
	bad.upsample_bwd = bad_upsample_bwd;
	bad.gn_bwd = bad_gn_bwd;
	T_OK(mgpu_ops_compare(&bad, 0, &mgpu_ops_ref, 42, &rep));
	for (r = 0; r < rep.nrows; r++) {
		const char *op = rep.row[r].op, *shape = rep.row[r].shape;
		int train = strstr(shape, "train") != NULL;
		/* the flipped kernel shows in fp32 and bf16 alike */
		int target = (!strncmp(op, "conv_fwd", 8) && !strstr(shape, "k1x1")) ||
			     (!strcmp(op, "bn_fwd") && train) ||
			     (!strcmp(op, "bn_bwd_data") && train) || !strcmp(op, "upsample_bwd") ||
			     !strcmp(op, "gn_bwd");

		nconv += !strcmp(op, "conv_fwd");
		nbad += target && !rep.row[r].ok;
		other_bad += !target && !rep.row[r].ok;
		T_CHECK(!target || !rep.row[r].ok, "broken %s %s passed (err %g)", op, shape,
			rep.row[r].max_rel_err);
	}
	T_CHECK(nconv == 5, "%d conv_fwd rows, want 5", nconv);
	T_CHECK(nbad == 11 && other_bad == 0, "%d broken rows caught, %d others failed", nbad,
		other_bad);
}

/* Planted mutants of the bf16 convolutions: operands truncated to bf16
 * (the low half of the bits dropped) instead of rounded to nearest,
 * dy left unrounded in the data gradient, the weight gradient in fp32. */
static int bad_bf16_conv_fwd(struct mgpu_dev *dev, const struct mgpu_conv *g, float *y,
			     const float *x, const float *w, const float *bias)
{
	size_t nx = (size_t)g->N * g->C * g->H * g->W, i;
	size_t nw = (size_t)g->K * (g->C / g->groups) * g->KH * g->KW;
	float *t;
	struct mgpu_conv f = *g;
	uint32_t u;
	int rc;

	if (g->prec != MGPU_PREC_BF16)
		return mgpu_ops_cpu.conv_fwd(dev, g, y, x, w, bias);
	t = malloc((nx + nw + 1) * sizeof *t);
	if (!t)
		return MGPU_ENOMEM;
	for (i = 0; i < nx + nw; i++) {
		memcpy(&u, i < nx ? &x[i] : &w[i - nx], sizeof u);
		u &= 0xffff0000u;
		memcpy(&t[i], &u, sizeof u);
	}
	f.prec = MGPU_PREC_FP32;
	rc = mgpu_ops_cpu.conv_fwd(dev, &f, y, t, t + nx, bias);
	free(t);
	return rc;
}

static int bad_bf16_conv_bwd_data(struct mgpu_dev *dev, const struct mgpu_conv *g, float *dx,
				  const float *dy, const float *w)
{
	size_t nw = (size_t)g->K * (g->C / g->groups) * g->KH * g->KW, i;
	float *t;
	struct mgpu_conv f = *g;
	int rc;

	if (g->prec != MGPU_PREC_BF16)
		return mgpu_ops_cpu.conv_bwd_data(dev, g, dx, dy, w);
	t = malloc((nw + 1) * sizeof *t);
	if (!t)
		return MGPU_ENOMEM;
	for (i = 0; i < nw; i++)
		t[i] = mgpu_bf16_to_f32(mgpu_bf16_from_f32(w[i]));
	f.prec = MGPU_PREC_FP32;
	rc = mgpu_ops_cpu.conv_bwd_data(dev, &f, dx, dy, t);
	free(t);
	return rc;
}

static int bad_bf16_conv_bwd_weight(struct mgpu_dev *dev, const struct mgpu_conv *g, float *dw,
				    float *db, const float *x, const float *dy, float acc)
{
	struct mgpu_conv f = *g;

	f.prec = MGPU_PREC_FP32;
	return mgpu_ops_cpu.conv_bwd_weight(dev, &f, dw, db, x, dy, acc);
}

static void test_conv_bf16_check_detects(void)
{
	struct mgpu_ops bad = mgpu_ops_cpu;
	int r, nbad = 0, other_bad = 0, nbf16 = 0;

	bad.name = "broken";
	bad.conv_fwd = bad_bf16_conv_fwd;
	bad.conv_bwd_data = bad_bf16_conv_bwd_data;
	bad.conv_bwd_weight = bad_bf16_conv_bwd_weight;
	T_OK(mgpu_ops_compare(&bad, 0, &mgpu_ops_ref, 42, &rep));
	for (r = 0; r < rep.nrows; r++) {
		const char *op = rep.row[r].op;
		int target = !strncmp(op, "conv_", 5) && strstr(op, "_bf16");

		nbf16 += target;
		nbad += target && !rep.row[r].ok;
		other_bad += !target && !rep.row[r].ok;
		T_CHECK(!target || !rep.row[r].ok, "broken %s %s passed (err %g)", op,
			rep.row[r].shape, rep.row[r].max_rel_err);
	}
	T_CHECK(nbf16 == 12, "%d bf16 conv rows, want 12", nbf16);
	T_CHECK(nbad == 12 && other_bad == 0, "%d broken rows caught, %d others failed", nbad,
		other_bad);
}

/* Loss mutants: mse ignoring its weights (a missing keypoint's map
 * trained toward zero), pix_xent training ignored pixels as class 0. */
static int bad_mse(struct mgpu_dev *dev, float *dpred, float *loss, const float *pred,
		   const float *target, const float *weight, int B, int G, int M, float gs)
{
	(void)weight;
	return mgpu_ops_cpu.mse(dev, dpred, loss, pred, target, NULL, B, G, M, gs);
}

static int bad_pix_xent(struct mgpu_dev *dev, float *dl, float *loss, float *corr,
			const float *l, const int32_t *lab, int N, int C, int HW, float gs)
{
	int32_t *y = malloc(((size_t)N * HW + 1) * sizeof *y);
	size_t i;
	int rc;

	if (!y)
		return MGPU_ENOMEM;
	for (i = 0; i < (size_t)N * HW; i++)
		y[i] = lab[i] < 0 ? 0 : lab[i];
	rc = mgpu_ops_cpu.pix_xent(dev, dl, loss, corr, l, y, N, C, HW, gs);
	free(y);
	return rc;
}

static void test_loss_check_detects(void)
{
	struct mgpu_ops bad = mgpu_ops_cpu;
	int r, nbad = 0, other_bad = 0;

	bad.name = "broken";
	bad.mse = bad_mse;
	bad.pix_xent = bad_pix_xent;
	T_OK(mgpu_ops_compare(&bad, 0, &mgpu_ops_ref, 42, &rep));
	for (r = 0; r < rep.nrows; r++) {
		int target = !strcmp(rep.row[r].op, "mse") || !strcmp(rep.row[r].op, "pix_xent");

		nbad += target && !rep.row[r].ok;
		other_bad += !target && !rep.row[r].ok;
	}
	T_CHECK(nbad == 2 && other_bad == 0, "%d broken loss rows caught (want 2), %d others "
		"failed", nbad, other_bad);
}

static void test_registry(void)
{
	const struct mgpu_ops *const *o;
	int n = 0;

	for (o = mgpu_ops_all(); *o; o++)
		n++;
	T_CHECK(n >= 2, "ref and cpu at least, got %d", n);
	T_CHECK(mgpu_ops_find("ref") == &mgpu_ops_ref && mgpu_ops_find("cpu") == &mgpu_ops_cpu,
		"find");
	T_CHECK(mgpu_ops_find("nope") == NULL, "unknown backend");
}

/* conformance [NAME...]: every test, or those whose names the NAMEs
 * prefix (test_check_detects, cpu/flash, cuda/...), as a GPU run under
 * compute-sanitizer may want. */
int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		void (*fn)(void);
	} per_backend[] = {
		{ "device_count", test_device_count }, { "memory", test_memory },
		{ "bad_args", test_bad_args },         { "gemm", test_gemm },
		{ "gemm_large", test_gemm_large },     { "blas1", test_blas1 },
		{ "act", test_act },                   { "col_sum_ln", test_col_sum_ln },
		{ "dropout_xent_u8", test_dropout_xent_u8 }, { "optim", test_optim },
		{ "sum_update", test_sum_update },
		{ "gemm_strided", test_gemm_strided }, { "gemm_bf16", test_gemm_bf16 },
		{ "gpt_ops", test_gpt_ops },           { "flash", test_flash },
		{ "flash_tc", test_flash_tc },
		{ "sum_acc", test_sum_acc },
		{ "row_geometry", test_row_geometry }, { "xent_stride", test_xent_stride },
		{ "xent_nan", test_xent_nan },
		{ "xent_inplace", test_xent_inplace },
		{ "gpt_bad_args", test_gpt_bad_args },
		{ "conv", test_conv },
		{ "conv_im2col", test_conv_im2col },
		{ "conv_bf16", test_conv_bf16 },
		{ "conv_im2col_bf16", test_conv_im2col_bf16 },
		{ "conv_light", test_conv_light },
		{ "conv_bad_args", test_conv_bad_args },
		{ "losses", test_losses },
		{ "loss_bad_args", test_loss_bad_args },
	};
	const struct mgpu_ops *const *o;
	char name[64];
	size_t i;
	int n;

	only = argc > 1 ? argv + 1 : NULL;
	run_named("test_registry", test_registry);
	run_named("test_ref_known", test_ref_known);
	run_named("test_check_detects", test_check_detects);
	run_named("test_conv_check_detects", test_conv_check_detects);
	run_named("test_conv_bf16_check_detects", test_conv_bf16_check_detects);
	run_named("test_loss_check_detects", test_loss_check_detects);
	run_named("test_compare_cpu", test_compare_cpu);
	for (o = mgpu_ops_all(); *o; o++) {
		cur = *o;
		n = 0;
		cur_why[0] = '\0';
		if (cur->device_count(&n, cur_why, sizeof cur_why) < 0 || n == 0) {
			snprintf(name, sizeof name, "%s/device_count", cur->name);
			run_named(name, test_device_count);
			snprintf(name, sizeof name, "%s/all", cur->name);
			run_named(name, test_no_device);
			continue;
		}
		for (i = 0; i < sizeof per_backend / sizeof per_backend[0]; i++) {
			snprintf(name, sizeof name, "%s/%s", cur->name, per_backend[i].name);
			run_named(name, per_backend[i].fn);
		}
	}
	if (nrun == 0) { /* a misspelt name must not pass */
		printf("FAIL conformance: no test is named after '%s'\n", argv[1]);
		return 1;
	}
	return T_DONE();
}
