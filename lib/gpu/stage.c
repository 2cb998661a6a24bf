/*
 * stage.c - copies of gradient buckets between a device and shared host
 * memory (stage.h): the backend seam of the cpu sync of GPU ranks.
 *
 * Host-memory devices copy through their ops (a memcpy, done on return).
 * GPUs, in builds with CUDA, use the runtime directly from C (as
 * gpu_cuda.c does): a non-blocking copy stream, one event that marks the
 * compute work queued so far, one event per ticket. Every runtime call is
 * checked (CU, ops/cuda_check.h).
 */
#include "gpu/stage.h"

#include <stdint.h> /* uintptr_t */
#include <stdlib.h> /* calloc, free */
#include <string.h> /* memset */
#include <unistd.h> /* sysconf */

#include "config.h"   /* MGPU_HAVE_CUDA */
#include "core/err.h" /* mgpu_err, MGPU_TRY */

/* The host side of every copy must lie in the staged range: a bucket
 * outside it would be a copy the GPU path cannot make asynchronously. */
static int in_range(const struct mgpu_stage *st, const void *p, size_t nbytes)
{
	const char *c = p;

	if (c >= st->host && nbytes <= st->nbytes && (size_t)(c - st->host) <= st->nbytes - nbytes)
		return 0;
	return mgpu_err(MGPU_EINVAL, "stage: %zu bytes at %p lie outside the staged %zu bytes "
			"at %p", nbytes, p, st->nbytes, (void *)st->host);
}

static int check_ticket(const struct mgpu_stage *st, int ticket)
{
	if (ticket < 0 || ticket >= st->ntickets)
		return mgpu_err(MGPU_EINVAL, "stage: ticket %d of %d", ticket, st->ntickets);
	return 0;
}

#if MGPU_HAVE_CUDA
#include "ops/cuda_check.h" /* CU; cuda_runtime.h */

/* The cuda backend's compute stream of dev (dev_cuda.cu). */
void *mgpu_cuda_stream(struct mgpu_dev *dev);

struct stage_cuda {
	cudaStream_t copy;
	cudaEvent_t queued;                 /* the compute work queued so far */
	cudaEvent_t done[MGPU_STAGE_MAX_TICKETS];
	void *reg;                          /* the registered pages, or NULL */
};

static struct stage_cuda *cu_of(const struct mgpu_stage *st)
{
	return st->impl;
}

/* Page-lock the pages of the range: copies to pageable memory would block
 * the host until they finish, and those from it are staged by the driver. */
static int cu_register(struct mgpu_stage *st, struct stage_cuda *c)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t a = (uintptr_t)st->host / page * page;
	uintptr_t e = ((uintptr_t)st->host + st->nbytes + page - 1) / page * page;
	cudaError_t rc = cudaHostRegister((void *)a, (size_t)(e - a), cudaHostRegisterPortable);

	if (rc != cudaSuccess) {
		(void)cudaGetLastError();
		return mgpu_err(MGPU_EDEVICE, "cuda device %d: cannot page-lock the %zu bytes of "
				"shared memory the ranks reduce in (cudaHostRegister: %s: %s)",
				st->dev->index, (size_t)(e - a), cudaGetErrorName(rc),
				cudaGetErrorString(rc));
	}
	c->reg = (void *)a;
	return 0;
}

static int cu_open(struct mgpu_stage *st)
{
	struct stage_cuda *c = calloc(1, sizeof *c);
	int i;

	if (!c)
		return mgpu_err(MGPU_ENOMEM, "stage: out of memory");
	st->impl = c;
	CU(cudaSetDevice(st->dev->index));
	MGPU_TRY(cu_register(st, c));
	CU(cudaStreamCreateWithFlags(&c->copy, cudaStreamNonBlocking));
	CU(cudaEventCreateWithFlags(&c->queued, cudaEventDisableTiming));
	for (i = 0; i < st->ntickets; i++)
		CU(cudaEventCreateWithFlags(&c->done[i], cudaEventDisableTiming));
	return 0;
}

static int cu_to_host(struct mgpu_stage *st, int ticket, void *dst, const void *src,
		      size_t nbytes)
{
	struct stage_cuda *c = cu_of(st);
	cudaStream_t compute = (cudaStream_t)mgpu_cuda_stream(st->dev);

	CU(cudaSetDevice(st->dev->index));
	/* The wait takes the event as recorded now; re-recording it for the
	 * next bucket does not move this wait (cudaStreamWaitEvent). */
	CU(cudaEventRecord(c->queued, compute));
	CU(cudaStreamWaitEvent(c->copy, c->queued, 0));
	CU(cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyDeviceToHost, c->copy));
	CU(cudaEventRecord(c->done[ticket], c->copy));
	return 0;
}

static int cu_done(struct mgpu_stage *st, int ticket)
{
	cudaError_t rc = cudaEventQuery(cu_of(st)->done[ticket]);

	if (rc == cudaErrorNotReady) {
		(void)cudaGetLastError(); /* not an error: keep it from later checks */
		return 0;
	}
	CU(rc);
	return 1;
}

static int cu_wait(struct mgpu_stage *st, int ticket)
{
	CU(cudaEventSynchronize(cu_of(st)->done[ticket]));
	return 0;
}

static int cu_to_dev(struct mgpu_stage *st, void *dst, const void *src, size_t nbytes)
{
	CU(cudaSetDevice(st->dev->index));
	CU(cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyHostToDevice, cu_of(st)->copy));
	return 0;
}

static int cu_drain(struct mgpu_stage *st)
{
	/* The host waits, so the compute work it queues next is ordered after. */
	CU(cudaStreamSynchronize(cu_of(st)->copy));
	return 0;
}

/* Teardown cannot fail usefully: errors are dropped and cleared. */
static void cu_close(struct mgpu_stage *st)
{
	struct stage_cuda *c = cu_of(st);
	int i;

	(void)cudaSetDevice(st->dev->index);
	if (c->copy)
		(void)cudaStreamSynchronize(c->copy);
	for (i = 0; i < st->ntickets; i++)
		if (c->done[i])
			(void)cudaEventDestroy(c->done[i]);
	if (c->queued)
		(void)cudaEventDestroy(c->queued);
	if (c->copy)
		(void)cudaStreamDestroy(c->copy);
	if (c->reg)
		(void)cudaHostUnregister(c->reg);
	(void)cudaGetLastError();
	free(c);
}
#else
static int cu_open(struct mgpu_stage *st)
{
	return mgpu_err(MGPU_EUNSUP, "stage: %s device %d: this build has no CUDA",
			st->dev->ops->name, st->dev->index);
}
#define cu_to_host(st, t, d, s, n) MGPU_EUNSUP
#define cu_done(st, t) MGPU_EUNSUP
#define cu_wait(st, t) MGPU_EUNSUP
#define cu_to_dev(st, d, s, n) MGPU_EUNSUP
#define cu_drain(st) 0
#define cu_close(st) (void)(st)
#endif

int mgpu_stage_open(struct mgpu_stage *st, struct mgpu_dev *dev, void *host, size_t nbytes,
		    int ntickets)
{
	int rc;

	memset(st, 0, sizeof *st);
	if (ntickets < 1 || ntickets > MGPU_STAGE_MAX_TICKETS)
		return mgpu_err(MGPU_EINVAL, "stage: %d tickets (1 to %d)", ntickets,
				MGPU_STAGE_MAX_TICKETS);
	st->dev = dev;
	st->host = host;
	st->nbytes = nbytes;
	st->ntickets = ntickets;
	if (mgpu_ops_can(dev->ops, MGPU_CAP_HOST_MEMORY))
		return 0;
	rc = cu_open(st);
	if (rc < 0)
		mgpu_stage_close(st);
	return rc;
}

int mgpu_stage_to_host(struct mgpu_stage *st, int ticket, void *dst_host, const void *src,
		       size_t nbytes)
{
	MGPU_TRY(check_ticket(st, ticket));
	MGPU_TRY(in_range(st, dst_host, nbytes));
	if (!st->impl)
		return mgpu_dev_to_host(st->dev, dst_host, src, nbytes);
	return cu_to_host(st, ticket, dst_host, src, nbytes);
}

int mgpu_stage_done(struct mgpu_stage *st, int ticket)
{
	MGPU_TRY(check_ticket(st, ticket));
	return st->impl ? cu_done(st, ticket) : 1;
}

int mgpu_stage_wait(struct mgpu_stage *st, int ticket)
{
	MGPU_TRY(check_ticket(st, ticket));
	return st->impl ? cu_wait(st, ticket) : 0;
}

int mgpu_stage_to_dev(struct mgpu_stage *st, void *dst, const void *src_host, size_t nbytes)
{
	MGPU_TRY(in_range(st, src_host, nbytes));
	if (!st->impl)
		return mgpu_dev_from_host(st->dev, dst, src_host, nbytes);
	return cu_to_dev(st, dst, src_host, nbytes);
}

int mgpu_stage_drain(struct mgpu_stage *st)
{
	return st->impl ? cu_drain(st) : 0;
}

void mgpu_stage_close(struct mgpu_stage *st)
{
	if (st->impl)
		cu_close(st);
	st->impl = NULL;
}
