/*
 * upload.c - double-buffered, page-locked staging of input batches
 * (upload.h): the backend seam of a model's host-to-device copies.
 *
 * Host-memory devices get malloc'd buffers and nothing else. GPUs, in
 * builds with CUDA, get cudaMallocHost buffers and one event per buffer,
 * recorded on the cuda backend's stream after the buffer's copies; every
 * runtime call is checked (CU, ops/cuda_check.h), as in stage.c.
 */
#include "gpu/upload.h"

#include <stdlib.h> /* malloc, free */
#include <string.h> /* memset */

#include "config.h"   /* MGPU_HAVE_CUDA */
#include "core/err.h" /* mgpu_err, MGPU_TRY */

#if MGPU_HAVE_CUDA
#include "ops/cuda_check.h" /* CU; cuda_runtime.h */

/* The cuda backend's compute stream of dev (dev_cuda.cu). */
void *mgpu_cuda_stream(struct mgpu_dev *dev);

struct upload_cuda {
	cudaEvent_t copied[2]; /* after the last copies from buf[i] */
};

static struct upload_cuda *cu_of(const struct mgpu_upload *u)
{
	return u->impl;
}

static int cu_alloc(struct mgpu_upload *u, void **p)
{
	cudaError_t rc = cudaMallocHost(p, u->cap);

	if (rc != cudaSuccess) {
		(void)cudaGetLastError();
		*p = NULL;
		return mgpu_err(MGPU_ENOMEM, "cuda device %d: cannot allocate %zu bytes of "
				"page-locked memory for input batches (cudaMallocHost: %s)",
				u->dev->index, u->cap, cudaGetErrorName(rc));
	}
	return 0;
}

static int cu_open(struct mgpu_upload *u)
{
	struct upload_cuda *c = calloc(1, sizeof *c);
	int i;

	if (!c)
		return mgpu_err(MGPU_ENOMEM, "upload: out of memory");
	u->impl = c;
	CU(cudaSetDevice(u->dev->index));
	for (i = 0; i < 2; i++) {
		MGPU_TRY(cu_alloc(u, (void **)&u->buf[i]));
		CU(cudaEventCreateWithFlags(&c->copied[i], cudaEventDisableTiming));
	}
	return 0;
}

/* A never-recorded event counts as complete: the first use waits on nothing. */
static int cu_wait(struct mgpu_upload *u, int i)
{
	CU(cudaEventSynchronize(cu_of(u)->copied[i]));
	return 0;
}

static int cu_mark(struct mgpu_upload *u, int i)
{
	CU(cudaSetDevice(u->dev->index));
	CU(cudaEventRecord(cu_of(u)->copied[i], (cudaStream_t)mgpu_cuda_stream(u->dev)));
	return 0;
}

/* Teardown cannot fail usefully: errors are dropped and cleared. */
static void cu_close(struct mgpu_upload *u)
{
	struct upload_cuda *c = cu_of(u);
	int i;

	(void)cudaSetDevice(u->dev->index);
	for (i = 0; i < 2; i++) {
		if (c->copied[i]) {
			(void)cudaEventSynchronize(c->copied[i]);
			(void)cudaEventDestroy(c->copied[i]);
		}
		if (u->buf[i])
			(void)cudaFreeHost(u->buf[i]);
		u->buf[i] = NULL;
	}
	(void)cudaGetLastError();
	free(c);
}
#else
static int cu_open(struct mgpu_upload *u)
{
	return mgpu_err(MGPU_EUNSUP, "upload: %s device %d: this build has no CUDA",
			u->dev->ops->name, u->dev->index);
}
#define cu_wait(u, i) 0
#define cu_mark(u, i) 0
#define cu_close(u) (void)(u)
#endif

static int host_open(struct mgpu_upload *u)
{
	int i;

	for (i = 0; i < 2; i++) {
		u->buf[i] = malloc(u->cap ? u->cap : 1);
		if (!u->buf[i])
			return mgpu_err(MGPU_ENOMEM, "upload: out of memory for %zu bytes", u->cap);
	}
	return 0;
}

int mgpu_upload_open(struct mgpu_upload *u, struct mgpu_dev *dev, size_t cap)
{
	int rc;

	memset(u, 0, sizeof *u);
	u->dev = dev;
	u->cap = cap;
	u->cur = 1; /* the first begin takes buffer 0 */
	rc = mgpu_ops_can(dev->ops, MGPU_CAP_HOST_MEMORY) ? host_open(u) : cu_open(u);
	if (rc < 0)
		mgpu_upload_close(u);
	return rc;
}

int mgpu_upload_begin(struct mgpu_upload *u, char **host)
{
	u->cur ^= 1;
	if (u->impl)
		MGPU_TRY(cu_wait(u, u->cur));
	*host = u->buf[u->cur];
	return 0;
}

int mgpu_upload_copy(struct mgpu_upload *u, void *dst, size_t off, size_t nbytes)
{
	if (off > u->cap || nbytes > u->cap - off)
		return mgpu_err(MGPU_EINVAL, "upload: %zu bytes at %zu of a %zu-byte buffer",
				nbytes, off, u->cap);
	return mgpu_dev_from_host(u->dev, dst, u->buf[u->cur] + off, nbytes);
}

int mgpu_upload_end(struct mgpu_upload *u)
{
	return u->impl ? cu_mark(u, u->cur) : 0;
}

void mgpu_upload_close(struct mgpu_upload *u)
{
	int i;

	if (u->impl) {
		cu_close(u);
	} else {
		for (i = 0; i < 2; i++)
			free(u->buf[i]);
	}
	memset(u, 0, sizeof *u);
}
