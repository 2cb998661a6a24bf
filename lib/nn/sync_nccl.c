/*
 * sync_nccl.c - the gradient sync strategy of GPU ranks (mode ddp) over
 * NCCL: each bucket is all-reduced (sum) in place on the device as
 * backward produces it, on lib/comm's communication stream; after the
 * last one every rank steps its own replica (see sync.h). s->priv is the
 * communicator state of comm/nccl.h.
 */
#include "nn/sync_int.h"

#include <string.h> /* memset */

#include "comm/nccl.h" /* mgpu_nccl_* */
#include "core/err.h"  /* MGPU_TRY */

static int nccl_init(struct mgpu_sync *s, const struct mgpu_sync_args *a)
{
	struct mgpu_rdzv_info info;

	memset(&info, 0, sizeof info);
	if (s->rank == 0)
		MGPU_TRY(mgpu_nccl_unique_id(info.nccl_id));
	MGPU_TRY(mgpu_sync_rendezvous(s, a, &info));
	mgpu_rdzv_close_leaders(&info); /* NCCL connects the nodes itself */
	return mgpu_nccl_open(&s->priv, a->dev, s->rank, s->world, info.nccl_id,
			      a->timeout_ms);
}

static int nccl_reduce_bucket(struct mgpu_sync *s, int layer, size_t off, size_t cnt)
{
	(void)layer;
	return mgpu_nccl_bucket(s->priv, s->model->dev, s->model->g + off, cnt);
}

static int nccl_finish(struct mgpu_sync *s, double *vals, int n)
{
	MGPU_TRY(mgpu_nccl_wait(s->priv, s->model->dev));
	MGPU_TRY(mgpu_optim_step(s->opt, s->lr, 1.0f));
	return mgpu_sync_close_step(s, vals, n,
				    s->rank == 0 ? s->opt->last_norm * s->opt->last_norm : 0.0);
}

static int nccl_allreduce_f64(struct mgpu_sync *s, double *v, int n)
{
	return mgpu_nccl_allreduce_f64(s->priv, s->model->dev, v, n);
}

static void nccl_abort(struct mgpu_sync *s, int rc)
{
	(void)rc;
	mgpu_nccl_abort(s->priv);
}

static void nccl_free(struct mgpu_sync *s)
{
	mgpu_nccl_close(s->priv);
}

const struct mgpu_sync_strategy mgpu_sync_nccl = {
	.name = "nccl",
	.init = nccl_init,
	.reduce_bucket = nccl_reduce_bucket,
	.finish = nccl_finish,
	.allreduce_f64 = nccl_allreduce_f64,
	.cancel = nccl_abort,
	.free = nccl_free,
};
