/*
 * sync_nccl.c - the gradient sync strategy of GPU ranks (mode ddp) over
 * NCCL: each bucket is all-reduced (sum) in place on the device as
 * backward produces it, on lib/comm's communication stream; after the
 * last one every rank steps its own replica (see sync.h). s->priv is the
 * communicator state of comm/nccl.h.
 */
#include "nn/sync_int.h"

#include <stdio.h>  /* snprintf */
#include <stdlib.h> /* getenv */
#include <string.h> /* memset */
#include <unistd.h> /* gethostname */

#include "comm/nccl.h" /* mgpu_nccl_* */
#include "core/err.h"  /* MGPU_TRY */

/* rc with the rank, its node and host, and the interface NCCL was told to
 * use there: what a failed set-up across nodes comes down to. */
static int named(int rc, const struct mgpu_sync *s, const struct mgpu_sync_args *a)
{
	const char *ifname = getenv("NCCL_SOCKET_IFNAME");
	char host[64] = "";

	if (gethostname(host, sizeof host - 1) != 0)
		snprintf(host, sizeof host, "?");
	return mgpu_err_prefix(rc, "NCCL set-up of rank %d on node %d (host %s, "
			       "NCCL_SOCKET_IFNAME %s): ", s->rank, a->env->node, host,
			       ifname ? ifname : "unset");
}

/* Rank 0 makes the unique id; the rendezvous hands it to every rank of
 * every node in its answer (rdzv.h). */
static int nccl_init(struct mgpu_sync *s, const struct mgpu_sync_args *a)
{
	struct mgpu_rdzv_info info;
	int rc;

	memset(&info, 0, sizeof info);
	if (s->rank == 0 && (rc = mgpu_nccl_unique_id(info.nccl_id)) < 0)
		return named(rc, s, a);
	MGPU_TRY(mgpu_sync_rendezvous(s, a, &info));
	mgpu_rdzv_close_leaders(&info); /* NCCL connects the nodes itself */
	rc = mgpu_nccl_open(&s->priv, a->dev, s->rank, s->world, info.nccl_id, a->timeout_ms);
	return rc < 0 ? named(rc, s, a) : 0;
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
	.abort = nccl_abort,
	.free = nccl_free,
};
