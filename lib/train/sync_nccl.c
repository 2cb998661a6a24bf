/*
 * sync_nccl.c - the gradient sync strategy of GPU ranks (mode ddp) over
 * NCCL: each bucket is all-reduced (sum) in place on the device as
 * backward produces it, on lib/comm's communication stream; after the
 * last one every rank steps its own replica (see sync.h), and the step's
 * statistics (loss, correct count, stop flag, squared norm) are summed on
 * the device too, so the host reads them once, after the update, and
 * never waits for the buckets on its own. s->priv is a
 * struct nccl_sync: the communicator state of comm/nccl.h and, with
 * --grad-dtype bf16, a device buffer of the gradient rounded to bf16.
 *
 * bf16: each bucket is rounded into g16 on the compute stream and
 * all-reduced as ncclBfloat16 (half the bytes); after the last one the
 * sums are widened back into the fp32 gradient. NCCL adds two bf16 values
 * in fp32 but rounds every partial sum it passes on to bf16 (NVIDIA/nccl
 * issue 1026): across ranks the accumulation is not fp32, unlike the cpu
 * strategy's (sync_shm.c), which sums the bf16 slots in fp32.
 */
#include "train/sync_int.h"

#include <stdio.h>  /* snprintf */
#include <stdlib.h> /* calloc, free, getenv */
#include <string.h> /* memset */
#include <unistd.h> /* gethostname */

#include "comm/nccl.h" /* mgpu_nccl_* */
#include "core/err.h"  /* MGPU_TRY */

struct nccl_sync {
	void *comm;            /* comm/nccl.h state */
	uint16_t *g16;         /* bf16 gradients (device), or NULL */
	struct mgpu_dev *dev;  /* g16's device */
	size_t n;              /* its elements */
};

static struct nccl_sync *priv(const struct mgpu_sync *s)
{
	return s->priv;
}

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

	s->priv = calloc(1, sizeof(struct nccl_sync));
	if (!s->priv)
		return mgpu_err(MGPU_ENOMEM, "out of memory for the sync state");
	memset(&info, 0, sizeof info);
	if (s->rank == 0 && (rc = mgpu_nccl_unique_id(info.nccl_id)) < 0)
		return named(rc, s, a);
	MGPU_TRY(mgpu_sync_rendezvous(s, a, &info));
	mgpu_rdzv_close_leaders(&info); /* NCCL connects the nodes itself */
	rc = mgpu_nccl_open(&priv(s)->comm, a->dev, s->rank, s->world, info.nccl_id,
			    a->timeout_ms);
	return rc < 0 ? named(rc, s, a) : 0;
}

static int nccl_bind(struct mgpu_sync *s)
{
	struct nccl_sync *p = priv(s);
	struct mgpu_model *m = s->model;

	if (s->grad_prec != MGPU_PREC_BF16)
		return 0;
	MGPU_TRY(mgpu_dev_alloc(m->dev, (void **)&p->g16, m->nparams * sizeof *p->g16));
	p->dev = m->dev;
	p->n = m->nparams;
	return 0;
}

static int nccl_reduce_bucket(struct mgpu_sync *s, int layer, size_t off, size_t cnt)
{
	struct nccl_sync *p = priv(s);
	struct mgpu_dev *dev = s->model->dev;

	(void)layer;
	if (s->grad_prec != MGPU_PREC_BF16)
		return mgpu_nccl_bucket(p->comm, dev, s->model->g + off, cnt);
	MGPU_TRY(dev->ops->f32_to_bf16(dev, p->g16 + off, s->model->g + off, cnt));
	return mgpu_nccl_bucket_bf16(p->comm, dev, p->g16 + off, cnt);
}

static int nccl_finish(struct mgpu_sync *s, double *vals, int n)
{
	struct nccl_sync *p = priv(s);
	struct mgpu_model *m = s->model;

	/* the compute stream waits for the buckets on the device; the host
	 * waits (watching for timeouts) only for the step's closing read, or,
	 * when the optimizer reads the norm back first (clipping), here: that
	 * read would block on the buckets without watching, and hang on a
	 * dead peer instead of failing after --timeout */
	MGPU_TRY(mgpu_optim_reads_norm(s->opt, 1.0f) ? mgpu_nccl_wait(p->comm, m->dev) :
						      mgpu_nccl_join(p->comm, m->dev));
	if (s->grad_prec == MGPU_PREC_BF16) /* the buckets cover every parameter */
		MGPU_TRY(m->dev->ops->bf16_to_f32(m->dev, m->g, p->g16, m->nparams));
	MGPU_TRY(mgpu_optim_step(s->opt, s->lr, 1.0f));
	return mgpu_sync_close_step(s, vals, n, mgpu_sync_norm2_share(s));
}

/* The step's statistics summed in place on the device, on the
 * communication stream after the update, and read once. */
static int nccl_allreduce_stats(struct mgpu_sync *s, double *v_dev, double *host, int k0,
				int n)
{
	struct mgpu_dev *dev = s->model->dev;

	mgpu_dev_count_read(dev, (size_t)n * sizeof(double));
	return mgpu_nccl_allreduce_stats(priv(s)->comm, dev, v_dev, host, k0, n);
}

static int nccl_allreduce_f64(struct mgpu_sync *s, double *v, int n)
{
	return mgpu_nccl_allreduce_f64(priv(s)->comm, s->model->dev, v, n);
}

/* In place on the device, queued among the buckets in the order every
 * rank issues them. */
static int nccl_allreduce_f32(struct mgpu_sync *s, float *v, size_t n)
{
	return mgpu_nccl_allreduce_inline(priv(s)->comm, s->model->dev, v, n);
}

static void nccl_abort(struct mgpu_sync *s, int rc)
{
	(void)rc;
	if (priv(s))
		mgpu_nccl_abort(priv(s)->comm);
}

static void nccl_free(struct mgpu_sync *s)
{
	struct nccl_sync *p = priv(s);

	if (!p)
		return;
	if (p->g16)
		mgpu_dev_free(p->dev, p->g16, p->n * sizeof *p->g16);
	mgpu_nccl_close(p->comm);
	free(p);
}

const struct mgpu_sync_strategy mgpu_sync_nccl = {
	.name = "nccl",
	.init = nccl_init,
	.bind = nccl_bind,
	.reduce_bucket = nccl_reduce_bucket,
	.finish = nccl_finish,
	.allreduce_f64 = nccl_allreduce_f64,
	.allreduce_stats = nccl_allreduce_stats,
	.allreduce_f32 = nccl_allreduce_f32,
	.cancel = nccl_abort,
	.free = nccl_free,
};
