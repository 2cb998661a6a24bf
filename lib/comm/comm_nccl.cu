/*
 * comm_nccl.cu - gradient all-reduce over NCCL (see nccl.h).
 *
 * Invariants: buffers are device pointers of the rank's device; the
 * compute stream is the cuda backend's (mgpu_cuda_stream); all NCCL work
 * goes on a separate stream ordered after compute by events. The
 * communicator is non-blocking: calls may return ncclInProgress, and
 * wait_ready() polls ncclCommGetAsyncError until the operation is queued,
 * failed, or timed out.
 */
#include "comm/nccl.h"

#include <nccl.h>   /* ncclAllReduce, ncclCommInitRankConfig */
#include <stdlib.h> /* calloc, free */
#include <string.h> /* memcpy */
#include <sched.h>  /* sched_yield */
#include <time.h>   /* clock_gettime */

#include "core/err.h"        /* mgpu_err */
#include "ops/cuda_check.h"  /* CU, NCCL */

extern "C" void *mgpu_cuda_stream(struct mgpu_dev *dev);

struct nccl_state {
	ncclComm_t comm;
	cudaStream_t stream;      /* communication */
	cudaEvent_t ready, done;
	double *scratch;          /* device: 16 doubles for small all-reduces */
	double *pinned;           /* page-locked host: 16 doubles of step statistics */
	int timeout_ms;
	int pending;              /* buckets queued since the last wait */
};

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* Poll the communicator until it is no longer in progress. */
static int wait_ready(struct nccl_state *s, const char *what)
{
	double t0 = now_ms();
	ncclResult_t st;

	for (;;) {
		NCCL(s->comm, ncclCommGetAsyncError(s->comm, &st));
		if (st == ncclSuccess)
			return 0;
		if (st != ncclInProgress)
			return mgpu_err(MGPU_EDEVICE, "nccl: %s failed: %s (%s)", what,
					ncclGetErrorString(st), ncclGetLastError(s->comm));
		if (now_ms() - t0 > s->timeout_ms) {
			ncclCommAbort(s->comm);
			s->comm = NULL;
			return mgpu_err(MGPU_ETIMEOUT, "nccl: %s did not finish within %d s",
					what, s->timeout_ms / 1000);
		}
		sched_yield();
	}
}

/* Wait for the communication stream, watching for NCCL errors. */
static int wait_stream(struct nccl_state *s, const char *what)
{
	double t0 = now_ms();
	ncclResult_t st;
	cudaError_t q;

	for (;;) {
		q = cudaStreamQuery(s->stream);
		if (q == cudaSuccess)
			return 0;
		if (q != cudaErrorNotReady)
			CU(q);
		(void)cudaGetLastError(); /* NotReady is no error: keep it from later checks */
		NCCL(s->comm, ncclCommGetAsyncError(s->comm, &st));
		if (st != ncclSuccess && st != ncclInProgress)
			return mgpu_err(MGPU_EDEVICE, "nccl: %s failed: %s (%s)", what,
					ncclGetErrorString(st), ncclGetLastError(s->comm));
		if (now_ms() - t0 > s->timeout_ms) {
			ncclCommAbort(s->comm);
			s->comm = NULL;
			return mgpu_err(MGPU_ETIMEOUT, "nccl: %s did not finish within %d s "
					"(a peer rank stopped answering)", what,
					s->timeout_ms / 1000);
		}
		sched_yield();
	}
}

extern "C" int mgpu_nccl_unique_id(uint8_t id[128])
{
	ncclUniqueId u;

	static_assert(sizeof u == 128, "ncclUniqueId is 128 bytes");
	NCCL(NULL, ncclGetUniqueId(&u));
	memcpy(id, &u, sizeof u);
	return 0;
}

static int open_state(struct nccl_state *s, struct mgpu_dev *dev, int rank, int world,
		      const uint8_t id[128])
{
	ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
	ncclUniqueId u;

	memcpy(&u, id, sizeof u);
	cfg.blocking = 0;
	CU(cudaSetDevice(dev->index));
	CU(cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking));
	CU(cudaEventCreateWithFlags(&s->ready, cudaEventDisableTiming));
	CU(cudaEventCreateWithFlags(&s->done, cudaEventDisableTiming));
	CU(cudaMalloc((void **)&s->scratch, 16 * sizeof(double)));
	CU(cudaMallocHost((void **)&s->pinned, 16 * sizeof(double)));
	NCCL(NULL, ncclCommInitRankConfig(&s->comm, world, u, rank, &cfg));
	return wait_ready(s, "communicator set-up");
}

extern "C" int mgpu_nccl_open(void **st, struct mgpu_dev *dev, int rank, int world,
			      const uint8_t id[128], int timeout_ms)
{
	struct nccl_state *s = (struct nccl_state *)calloc(1, sizeof *s);
	int rc;

	*st = NULL;
	if (!s)
		return mgpu_err(MGPU_ENOMEM, "nccl: out of memory");
	s->timeout_ms = timeout_ms;
	rc = open_state(s, dev, rank, world, id);
	if (rc < 0) {
		mgpu_nccl_abort(s); /* a failed communicator is aborted, never finalised */
		mgpu_nccl_close(s);
		return rc;
	}
	*st = s;
	return 0;
}

/* Sum a bucket in place on the sync stream, after what the compute stream
 * has queued so far (the bucket's backward). */
static int bucket(void *st, struct mgpu_dev *dev, void *buf, size_t n, ncclDataType_t type,
		  const char *what)
{
	struct nccl_state *s = (struct nccl_state *)st;
	cudaStream_t compute = (cudaStream_t)mgpu_cuda_stream(dev);

	CU(cudaEventRecord(s->ready, compute));
	CU(cudaStreamWaitEvent(s->stream, s->ready, 0));
	NCCL(s->comm, ncclAllReduce(buf, buf, n, type, ncclSum, s->comm, s->stream));
	s->pending++;
	return wait_ready(s, what);
}

extern "C" int mgpu_nccl_bucket(void *st, struct mgpu_dev *dev, float *buf, size_t n)
{
	return bucket(st, dev, buf, n, ncclFloat, "gradient all-reduce launch");
}

extern "C" int mgpu_nccl_bucket_bf16(void *st, struct mgpu_dev *dev, uint16_t *buf, size_t n)
{
	return bucket(st, dev, buf, n, ncclBfloat16, "bf16 gradient all-reduce launch");
}

/* One stream for every NCCL call of the communicator keeps them in the
 * same order on every rank's device; the compute stream then waits for
 * this sum (and so for the buckets queued before it). */
extern "C" int mgpu_nccl_allreduce_inline(void *st, struct mgpu_dev *dev, float *buf, size_t n)
{
	struct nccl_state *s = (struct nccl_state *)st;
	cudaStream_t compute = (cudaStream_t)mgpu_cuda_stream(dev);

	CU(cudaEventRecord(s->ready, compute));
	CU(cudaStreamWaitEvent(s->stream, s->ready, 0));
	NCCL(s->comm, ncclAllReduce(buf, buf, n, ncclFloat, ncclSum, s->comm, s->stream));
	MGPU_TRY(wait_ready(s, "statistics all-reduce launch"));
	CU(cudaEventRecord(s->done, s->stream));
	CU(cudaStreamWaitEvent(compute, s->done, 0));
	return 0;
}

extern "C" int mgpu_nccl_wait(void *st, struct mgpu_dev *dev)
{
	struct nccl_state *s = (struct nccl_state *)st;
	cudaStream_t compute = (cudaStream_t)mgpu_cuda_stream(dev);

	if (s->pending == 0)
		return 0;
	s->pending = 0;
	MGPU_TRY(wait_stream(s, "gradient all-reduce"));
	CU(cudaEventRecord(s->done, s->stream));
	CU(cudaStreamWaitEvent(compute, s->done, 0));
	return 0;
}

extern "C" int mgpu_nccl_join(void *st, struct mgpu_dev *dev)
{
	struct nccl_state *s = (struct nccl_state *)st;
	cudaStream_t compute = (cudaStream_t)mgpu_cuda_stream(dev);

	if (s->pending == 0)
		return 0;
	s->pending = 0;
	CU(cudaEventRecord(s->done, s->stream));
	CU(cudaStreamWaitEvent(compute, s->done, 0));
	return 0;
}

/* On the communication stream, in order: the host values up, the sum, the
 * sums down into page-locked memory (so the copy is queued, not done
 * inside the call), then the one wait, which watches for NCCL errors and
 * the timeout over everything this stream was given in the step. */
extern "C" int mgpu_nccl_allreduce_stats(void *st, struct mgpu_dev *dev, double *v_dev,
					 double *host, int k0, int n)
{
	struct nccl_state *s = (struct nccl_state *)st;
	cudaStream_t compute = (cudaStream_t)mgpu_cuda_stream(dev);
	size_t up = (size_t)(n - k0) * sizeof(double);

	if (n < 1 || n > 16 || k0 < 0 || k0 > n)
		return mgpu_err(MGPU_EINVAL, "nccl: statistics all-reduce of %d values from %d "
				"(max 16)", n, k0);
	memcpy(s->pinned + k0, host + k0, up); /* the last use was waited for */
	CU(cudaEventRecord(s->ready, compute));
	CU(cudaStreamWaitEvent(s->stream, s->ready, 0));
	if (up)
		CU(cudaMemcpyAsync(v_dev + k0, s->pinned + k0, up, cudaMemcpyHostToDevice,
				   s->stream));
	NCCL(s->comm, ncclAllReduce(v_dev, v_dev, (size_t)n, ncclDouble, ncclSum, s->comm,
				    s->stream));
	MGPU_TRY(wait_ready(s, "statistics all-reduce launch"));
	CU(cudaMemcpyAsync(s->pinned, v_dev, (size_t)n * sizeof(double), cudaMemcpyDeviceToHost,
			   s->stream));
	MGPU_TRY(wait_stream(s, "the step's all-reduces"));
	memcpy(host, s->pinned, (size_t)n * sizeof(double));
	return 0;
}

extern "C" int mgpu_nccl_allreduce_f64(void *st, struct mgpu_dev *dev, double *v, int n)
{
	struct nccl_state *s = (struct nccl_state *)st;

	(void)dev;
	if (n < 0 || n > 16)
		return mgpu_err(MGPU_EINVAL, "nccl: all-reduce of %d values (max 16)", n);
	CU(cudaMemcpyAsync(s->scratch, v, (size_t)n * sizeof(double), cudaMemcpyHostToDevice,
			   s->stream));
	NCCL(s->comm, ncclAllReduce(s->scratch, s->scratch, (size_t)n, ncclDouble, ncclSum,
				    s->comm, s->stream));
	MGPU_TRY(wait_ready(s, "all-reduce launch"));
	/* A copy to pageable memory may block until the all-reduce is done:
	 * wait for it first, where the timeout and peer failures are watched. */
	MGPU_TRY(wait_stream(s, "all-reduce"));
	CU(cudaMemcpyAsync(v, s->scratch, (size_t)n * sizeof(double), cudaMemcpyDeviceToHost,
			   s->stream));
	return wait_stream(s, "all-reduce copy");
}

extern "C" void mgpu_nccl_abort(void *st)
{
	struct nccl_state *s = (struct nccl_state *)st;

	if (s && s->comm) {
		ncclCommAbort(s->comm);
		s->comm = NULL;
	}
}

extern "C" void mgpu_nccl_close(void *st)
{
	struct nccl_state *s = (struct nccl_state *)st;

	if (!s)
		return;
	if (s->comm)
		ncclCommDestroy(s->comm);
	/* Teardown errors cannot be acted on; the process is ending the job. */
	if (s->scratch)
		(void)cudaFree(s->scratch);
	if (s->pinned)
		(void)cudaFreeHost(s->pinned);
	if (s->ready)
		(void)cudaEventDestroy(s->ready);
	if (s->done)
		(void)cudaEventDestroy(s->done);
	if (s->stream)
		(void)cudaStreamDestroy(s->stream);
	free(s);
}
