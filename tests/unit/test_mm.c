/*
 * test_mm.c - the models' bf16 products (lib/model/mm.c): how many operands
 * they round, counted through a cpu ops table whose f32_to_bf16 counts,
 * and what mgpu_mm_reuse saves (a linear layer's backward reads dY twice)
 * without changing a bit of the results.
 */
#include <string.h> /* memset, memcmp */

#include "../t.h"      /* T_RUN, T_CHECK, T_OK */
#include "core/err.h"  /* mgpu_errmsg */
#include "model/arch.h" /* mgpu_arch_mlp */
#include "model/mm.h"  /* mgpu_mm, mgpu_mm_reuse, mgpu_mm_round_weights */
#include "model/model.h" /* struct mgpu_model, MGPU_PREC_BF16 */
#include "ops/ops.h"   /* mgpu_ops_cpu */

static int rounds; /* f32_to_bf16 calls */
static size_t rounded; /* and their elements */

static int counting_f32_to_bf16(struct mgpu_dev *dev, uint16_t *Y, const float *X, size_t n)
{
	rounds++;
	rounded += n;
	return mgpu_ops_cpu.f32_to_bf16(dev, Y, X, n);
}

/* in = 3, out = 2, N = 4 rows: dW (2,3) = dY^T X, dX (4,3) = dY W, as the
 * gpt's linear_bwd; `reuse` promises dY unchanged between the two. */
static void linear_bwd(struct mgpu_model *m, const float *X, const float *dY, float *dW,
		       float *dX, int reuse)
{
	T_OK(mgpu_mm(m, MGPU_N, MGPU_T, 3, 2, 4, 1.0f, X, 3, dY, 2, 0.0f, dW, 3));
	if (reuse)
		mgpu_mm_reuse(m);
	T_OK(mgpu_mm(m, MGPU_N, MGPU_N, 3, 4, 2, 1.0f, m->w, 3, dY, 2, 0.0f, dX, 3));
}

static void test_reuse(void)
{
	static struct mgpu_ops ops;
	static struct mgpu_model m;
	float w[6] = { 0.3f, -1.7f, 2.1f, 0.01f, 5.5f, -0.25f };
	float X[12], dY[8], dY2[11] = { 0 }, dW[2][6], dX[2][12]; /* dY2: ld 3 spans 11 */
	struct mgpu_dev dev;
	int i;

	for (i = 0; i < 12; i++)
		X[i] = 0.1f * (float)i - 0.37f + 1e-3f * (float)(i * i);
	for (i = 0; i < 8; i++)
		dY[i] = dY2[i] = 0.77f - 0.21f * (float)i + 1e-4f * (float)(i * i * i);
	ops = mgpu_ops_cpu;
	ops.f32_to_bf16 = counting_f32_to_bf16;
	T_OK(mgpu_dev_open(&dev, &ops, 0));
	memset(&m, 0, sizeof m);
	m.arch = &mgpu_arch_mlp; /* a family that takes bf16 */
	m.dev = &dev;
	m.w = w;
	m.nparams = 6;
	T_OK(mgpu_model_set_prec(&m, MGPU_PREC_BF16));
	T_OK(mgpu_mm_round_weights(&m));
	T_CHECK(rounds == 1, "the weights: %d", rounds);

	rounds = 0;
	rounded = 0;
	linear_bwd(&m, X, dY, dW[0], dX[0], 0);
	T_CHECK(rounds == 3 && rounded == 12 + 8 + 8, "without the promise: X, dY, dY again: %d "
		"calls, %zu elements", rounds, rounded);
	rounds = 0;
	rounded = 0;
	linear_bwd(&m, X, dY, dW[1], dX[1], 1);
	T_CHECK(rounds == 2 && rounded == 12 + 8, "with it: X and dY once: %d calls, %zu "
		"elements", rounds, rounded);
	T_CHECK(memcmp(dW[0], dW[1], sizeof dW[0]) == 0 && memcmp(dX[0], dX[1], sizeof dX[0]) == 0,
		"the same bits either way");

	/* a promise covers one product: the next reads dY anew */
	rounds = 0;
	T_OK(mgpu_mm(&m, MGPU_N, MGPU_N, 3, 4, 2, 1.0f, m.w, 3, dY, 2, 0.0f, dX[1], 3));
	T_CHECK(rounds == 1, "after the promised product: %d", rounds);
	/* another operand (same values, other memory) is rounded, promise or not */
	rounds = 0;
	mgpu_mm_reuse(&m);
	T_OK(mgpu_mm(&m, MGPU_N, MGPU_N, 3, 4, 2, 1.0f, m.w, 3, dY2, 2, 0.0f, dX[1], 3));
	T_CHECK(rounds == 1, "another pointer: %d", rounds);
	/* the same pointer with a longer span is rounded too */
	rounds = 0;
	mgpu_mm_reuse(&m);
	T_OK(mgpu_mm(&m, MGPU_N, MGPU_N, 3, 4, 2, 1.0f, m.w, 3, dY2, 3, 0.0f, dX[1], 3));
	T_CHECK(rounds == 1, "a longer span: %d", rounds);
	mgpu_mm_free(&m);
	mgpu_dev_close(&dev);
}

int main(void)
{
	T_RUN(test_reuse);
	return T_DONE();
}
