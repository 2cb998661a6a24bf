/*
 * test_batch.c - the batch plan (train/batch.h): splitting a global batch,
 * its errors, the row offsets of ranks and micro-steps, the averaging
 * factor, steps per epoch and the fit check.
 */
#include <string.h> /* strcmp */

#include "core/err.h" /* mgpu_errmsg */
#include "train/batch.h" /* mgpu_batch_plan_make */
#include "t.h"

static void test_per_device(void)
{
	struct mgpu_batch_plan p;

	T_OK(mgpu_batch_plan_make(&p, 16, 0, 3, 2));
	T_CHECK(p.batch == 16 && p.accum == 3 && p.world == 2, "%d %d %d", p.batch, p.accum,
		p.world);
	T_CHECK(p.global == 96, "global %lld", (long long)p.global);
	T_CHECK(p.grad_scale == 1.0f / 96.0f, "grad_scale %.9g", (double)p.grad_scale);
}

static void test_global_split(void)
{
	struct mgpu_batch_plan p;

	T_OK(mgpu_batch_plan_make(&p, 128, 96, 3, 2)); /* the global batch wins */
	T_CHECK(p.batch == 16 && p.global == 96, "batch %d global %lld", p.batch,
		(long long)p.global);
	T_OK(mgpu_batch_plan_make(&p, 1, 7, 1, 1));
	T_CHECK(p.batch == 7 && p.grad_scale == 1.0f / 7.0f, "batch %d", p.batch);
	T_FAILS(mgpu_batch_plan_make(&p, 1, 100, 3, 2), MGPU_EINVAL,
		"--global-batch-size 100 does not split evenly over 2 devices x 3 accumulation "
		"steps");
	T_FAILS(mgpu_batch_plan_make(&p, 1, 5, 1, 3), MGPU_EINVAL,
		"does not split evenly over 3 devices x 1 accumulation step");
	T_FAILS(mgpu_batch_plan_make(&p, 1, 2, 1, 4), MGPU_EINVAL,
		"--global-batch-size 2 does not split evenly over 4 devices");
	T_FAILS(mgpu_batch_plan_make(&p, 0, 0, 1, 1), MGPU_EINVAL, "is not a batch");
	T_FAILS(mgpu_batch_plan_make(&p, 4, 0, 0, 1), MGPU_EINVAL, "is not a batch");
	T_FAILS(mgpu_batch_plan_make(&p, 4, 0, 1, 0), MGPU_EINVAL, "is not a batch");
}

/* Every row of a step is taken once, whatever the split: rank r's
 * micro-step a starts at (a W + r) B. */
static void test_offsets(void)
{
	struct mgpu_batch_plan p;
	int seen[96], a, r, i;

	T_OK(mgpu_batch_plan_make(&p, 16, 0, 3, 2));
	T_CHECK(mgpu_batch_row0(&p, 0, 0) == 0, "a0 r0");
	T_CHECK(mgpu_batch_row0(&p, 0, 1) == 16, "a0 r1");
	T_CHECK(mgpu_batch_row0(&p, 1, 0) == 32, "a1 r0");
	T_CHECK(mgpu_batch_row0(&p, 2, 1) == 80, "a2 r1");
	memset(seen, 0, sizeof seen);
	for (a = 0; a < p.accum; a++)
		for (r = 0; r < p.world; r++)
			for (i = 0; i < p.batch; i++)
				seen[mgpu_batch_row0(&p, a, r) + i]++;
	for (i = 0; i < 96; i++)
		T_CHECK(seen[i] == 1, "row %d taken %d times", i, seen[i]);
}

static void test_epoch(void)
{
	struct mgpu_batch_plan p;

	T_OK(mgpu_batch_plan_make(&p, 16, 0, 3, 2));
	T_CHECK(mgpu_batch_steps_per_epoch(&p, 3600, 0) == 37, "drop");
	T_CHECK(mgpu_batch_steps_per_epoch(&p, 3600, 1) == 38, "pad");
	T_CHECK(mgpu_batch_steps_per_epoch(&p, 960, 1) == 10, "even, pad");
	T_CHECK(mgpu_batch_steps_per_epoch(&p, 95, 0) == 0, "short");
	T_OK(mgpu_batch_check_fits(&p, 96));
	T_FAILS(mgpu_batch_check_fits(&p, 95), MGPU_EINVAL,
		"the global batch of 96 samples (16 per device x 3 accumulation steps x 2 ranks) "
		"is larger than the 95 training samples");
}

static void test_describe(void)
{
	struct mgpu_batch_plan p;
	char buf[128];

	T_OK(mgpu_batch_plan_make(&p, 8, 0, 1, 4));
	mgpu_batch_describe(&p, buf, sizeof buf);
	T_CHECK(strcmp(buf, "8 per device x 1 accumulation steps x 4 ranks") == 0, "'%s'", buf);
}

int main(void)
{
	T_RUN(test_per_device);
	T_RUN(test_global_split);
	T_RUN(test_offsets);
	T_RUN(test_epoch);
	T_RUN(test_describe);
	return T_DONE();
}
