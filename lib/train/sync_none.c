/*
 * sync_none.c - the gradient sync strategy of a job of one rank: nothing to
 * exchange; the optimizer steps on the rank's own gradient (see sync.h).
 */
#include "train/sync_int.h"

#include "core/err.h" /* MGPU_TRY */

static int none_init(struct mgpu_sync *s, const struct mgpu_sync_args *a)
{
	(void)s, (void)a;
	return 0;
}

/* One rank: the step's statistics are already the sums; no barrier (no
 * allreduce_f64), only their one read. */
static int none_finish(struct mgpu_sync *s, double *vals, int n)
{
	MGPU_TRY(mgpu_optim_step(s->opt, s->lr, 1.0f));
	return mgpu_sync_close_step(s, vals, n, mgpu_sync_norm2_share(s));
}

const struct mgpu_sync_strategy mgpu_sync_none = {
	.name = "none",
	.init = none_init,
	.finish = none_finish,
};
