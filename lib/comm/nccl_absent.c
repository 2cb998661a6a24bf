/*
 * nccl_absent.c - the NCCL entry points of builds without NCCL: each says
 * the backend is not in this build (see nccl.h). Builds with NCCL use
 * comm_nccl.cu instead.
 */
#include "config.h" /* MGPU_HAVE_NCCL */

#if !MGPU_HAVE_NCCL
#include "comm/nccl.h"

#include "core/err.h" /* mgpu_err */

static int absent(void)
{
	return mgpu_err(MGPU_EUNSUP, "sync backend nccl is not in this build (built without "
			"CUDA/NCCL)");
}

int mgpu_nccl_unique_id(uint8_t id[128])
{
	(void)id;
	return absent();
}

int mgpu_nccl_open(void **st, struct mgpu_dev *dev, int rank, int world,
		   const uint8_t id[128], int timeout_ms)
{
	(void)st, (void)dev, (void)rank, (void)world, (void)id, (void)timeout_ms;
	return absent();
}

int mgpu_nccl_bucket(void *st, struct mgpu_dev *dev, float *buf, size_t n)
{
	(void)st, (void)dev, (void)buf, (void)n;
	return absent();
}

int mgpu_nccl_bucket_bf16(void *st, struct mgpu_dev *dev, uint16_t *buf, size_t n)
{
	(void)st, (void)dev, (void)buf, (void)n;
	return absent();
}

int mgpu_nccl_allreduce_inline(void *st, struct mgpu_dev *dev, float *buf, size_t n)
{
	(void)st, (void)dev, (void)buf, (void)n;
	return absent();
}

int mgpu_nccl_wait(void *st, struct mgpu_dev *dev)
{
	(void)st, (void)dev;
	return absent();
}

int mgpu_nccl_join(void *st, struct mgpu_dev *dev)
{
	(void)st, (void)dev;
	return absent();
}

int mgpu_nccl_allreduce_stats(void *st, struct mgpu_dev *dev, double *v_dev, double *host,
			      int k0, int n)
{
	(void)st, (void)dev, (void)v_dev, (void)host, (void)k0, (void)n;
	return absent();
}

int mgpu_nccl_allreduce_f64(void *st, struct mgpu_dev *dev, double *v, int n)
{
	(void)st, (void)dev, (void)v, (void)n;
	return absent();
}

void mgpu_nccl_abort(void *st)
{
	(void)st;
}

void mgpu_nccl_close(void *st)
{
	(void)st;
}
#else
/* ISO C wants a translation unit to declare something. */
typedef int mgpu_nccl_absent_unused;
#endif
