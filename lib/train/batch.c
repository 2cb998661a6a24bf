/*
 * batch.c - the batch plan (see batch.h).
 */
#include "train/batch.h"

#include <stdio.h> /* snprintf */

#include "core/err.h" /* mgpu_err */

int mgpu_batch_plan_make(struct mgpu_batch_plan *p, int batch, int64_t global, int accum,
			 int world)
{
	int64_t per = (int64_t)world * accum;

	if (batch < 1 || accum < 1 || world < 1 || global < 0)
		return mgpu_err(MGPU_EINVAL, "batch plan: %d per device x %d accumulation steps "
				"x %d ranks is not a batch", batch, accum, world);
	if (global > 0 && global % per != 0)
		return mgpu_err(MGPU_EINVAL, "--global-batch-size %lld does not split evenly "
				"over %d device%s x %d accumulation step%s", (long long)global,
				world, world > 1 ? "s" : "", accum, accum > 1 ? "s" : "");
	if (global > 0 && global / per > 1 << 30)
		return mgpu_err(MGPU_EINVAL, "--global-batch-size %lld gives %lld rows per device",
				(long long)global, (long long)(global / per));
	p->batch = global > 0 ? (int)(global / per) : batch;
	p->accum = accum;
	p->world = world;
	p->global = (int64_t)p->batch * per;
	p->grad_scale = 1.0f / (float)p->global;
	return 0;
}

int64_t mgpu_batch_row0(const struct mgpu_batch_plan *p, int a, int rank)
{
	return ((int64_t)a * p->world + rank) * p->batch;
}

int64_t mgpu_batch_steps_per_epoch(const struct mgpu_batch_plan *p, size_t n, int pad)
{
	int64_t m = (int64_t)n;

	return pad ? (m + p->global - 1) / p->global : m / p->global;
}

void mgpu_batch_describe(const struct mgpu_batch_plan *p, char *buf, size_t len)
{
	snprintf(buf, len, "%d per device x %d accumulation steps x %d ranks", p->batch,
		 p->accum, p->world);
}

int mgpu_batch_check_fits(const struct mgpu_batch_plan *p, size_t ntrain)
{
	char what[128];

	if (p->global <= (int64_t)ntrain)
		return 0;
	mgpu_batch_describe(p, what, sizeof what);
	return mgpu_err(MGPU_EINVAL, "the global batch of %lld samples (%s) is larger than the "
			"%zu training samples", (long long)p->global, what, ntrain);
}
