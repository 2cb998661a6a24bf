/*
 * test_grad_bf16.c - --grad-dtype bf16: the reduction of bf16 gradient
 * slots against sums worked out by hand (each rank's gradient rounded to
 * bf16, the rounded values summed in fp32 in rank order), and which sync
 * strategies take it.
 */
#include <stdint.h> /* uint16_t */
#include <string.h> /* memset */

#include "../t.h"        /* T_RUN, T_CHECK, T_OK, T_FAILS */
#include "core/err.h"    /* MGPU_EUNSUP */
#include "train/sync.h"     /* mgpu_sync_set_grad_prec */
#include "train/sync_int.h" /* mgpu_sync_sum_slots_bf16, the strategies */
#include "ops/ops.h"     /* mgpu_ops_cpu: the rounding the cpu ranks use */

#define N 4

/* Three ranks' gradients, rounded by the cpu backend's f32_to_bf16 as a
 * publishing rank does, then reduced. */
static void test_sum_by_hand(void)
{
	const float grad[3][N] = {
		{ 1.0f + 0x1p-9f, 3.0f, 0x1p24f, 7.0f },  /* 1 + 2^-9 rounds to 1 */
		{ 0x1p-8f, -1.0f, 1.0f, 7.0f },
		{ 0x1p-8f, 0.5f, 1.0f, 7.0f },
	};
	/* element 0: 1 + 2^-8 + 2^-8 = 1 + 2^-7 in fp32; summed in bf16 it
	 * would stay 1 (1 + 2^-8 is a tie, to even). Element 2: rank order
	 * ((2^24 + 1) + 1) rounds each time, to 2^24. */
	const float want[N] = { 1.0f + 0x1p-7f, 2.5f, 0x1p24f, -99.0f };
	uint16_t slot[3][N];
	const uint16_t *const g[3] = { slot[0], slot[1], slot[2] };
	float dst[N] = { -99.0f, -99.0f, -99.0f, -99.0f };
	struct mgpu_dev dev;
	int r, i;

	T_OK(mgpu_dev_open(&dev, &mgpu_ops_cpu, 0));
	for (r = 0; r < 3; r++)
		T_OK(mgpu_ops_cpu.f32_to_bf16(&dev, slot[r], grad[r], N));
	mgpu_dev_close(&dev);
	mgpu_sync_sum_slots_bf16(dst, g, 3, 0, 3); /* [0, 3): element 3 untouched */
	for (i = 0; i < N; i++)
		T_CHECK(dst[i] == want[i], "element %d: %.9g, want %.9g", i, (double)dst[i],
			(double)want[i]);
	mgpu_sync_sum_slots_bf16(dst, g, 1, 0, 1); /* one rank: its rounded value */
	T_CHECK(dst[0] == 1.0f, "one rank: %.9g, want 1", (double)dst[0]);
}

/* cpu on one node and nccl take bf16; others refuse; one rank ignores it. */
static void test_strategies(void)
{
	struct mgpu_sync s;
	float slot[1];

	memset(&s, 0, sizeof s);
	s.world = 2;
	s.st = &mgpu_sync_shm;
	s.shared_g = slot;
	T_OK(mgpu_sync_set_grad_prec(&s, MGPU_PREC_BF16));
	T_CHECK(s.grad_prec == MGPU_PREC_BF16 && s.shared_g == NULL,
		"cpu: bf16 with the rank's own fp32 gradient");
	s.st = &mgpu_sync_nccl;
	T_OK(mgpu_sync_set_grad_prec(&s, MGPU_PREC_BF16));
	s.st = &mgpu_sync_nodes;
	T_FAILS(mgpu_sync_set_grad_prec(&s, MGPU_PREC_BF16), MGPU_EUNSUP,
		"needs sync backend cpu on one node or nccl, not a job across nodes");
	s.st = &mgpu_sync_host;
	T_FAILS(mgpu_sync_set_grad_prec(&s, MGPU_PREC_BF16), MGPU_EUNSUP,
		"not cpu for GPU ranks (use nccl)");
	s.world = 1;
	s.grad_prec = MGPU_PREC_BF16;
	T_OK(mgpu_sync_set_grad_prec(&s, MGPU_PREC_BF16));
	T_CHECK(s.grad_prec == MGPU_PREC_FP32, "one rank has nothing to reduce");
}

int main(void)
{
	T_RUN(test_sum_by_hand);
	T_RUN(test_strategies);
	return T_DONE();
}
