/*
 * ops.c - backend registry, capability query, the words of enum
 * mgpu_prec and the counted allocation wrappers of ops.h.
 *
 * Byte and transfer accounting lives here, not in the backends, so every
 * backend reports current and peak device bytes, and its blocking reads and
 * uploads, the same way.
 */
#include "ops/ops.h"

#include <string.h> /* strcmp, memset */

#include "config.h"   /* MGPU_HAVE_CUDA */
#include "core/err.h" /* mgpu_err */

#if MGPU_HAVE_CUDA
extern const struct mgpu_ops mgpu_ops_cuda;
#endif

static const struct mgpu_ops *const all_ops[] = {
	&mgpu_ops_ref,
	&mgpu_ops_cpu,
#if MGPU_HAVE_CUDA
	&mgpu_ops_cuda,
#endif
	NULL,
};

const char *const mgpu_prec_words[] = {
	[MGPU_PREC_FP32] = "fp32",
	[MGPU_PREC_BF16] = "bf16",
	[MGPU_PREC_FP16] = "fp16",
	NULL,
};

const char *mgpu_prec_name(int prec)
{
	return prec >= MGPU_PREC_FP32 && prec <= MGPU_PREC_FP16 ? mgpu_prec_words[prec] : "fp32";
}

int mgpu_ops_can(const struct mgpu_ops *ops, enum mgpu_cap cap)
{
	switch (cap) {
	case MGPU_CAP_HOST_MEMORY: return ops->host_memory != 0;
	case MGPU_CAP_SUM_UPDATE: return ops->sgd_sum && ops->adamw_sum;
	}
	return 0;
}

const struct mgpu_ops *const *mgpu_ops_all(void)
{
	return all_ops;
}

const struct mgpu_ops *mgpu_ops_find(const char *name)
{
	const struct mgpu_ops *const *o;

	for (o = all_ops; *o; o++)
		if (strcmp((*o)->name, name) == 0)
			return *o;
	return NULL;
}

int mgpu_dev_open(struct mgpu_dev *dev, const struct mgpu_ops *ops, int index)
{
	memset(dev, 0, sizeof *dev);
	dev->ops = ops;
	dev->index = index;
	return ops->init(dev, index);
}

void mgpu_dev_close(struct mgpu_dev *dev)
{
	if (dev->ops)
		dev->ops->fini(dev);
	dev->ops = NULL;
}

int mgpu_dev_alloc(struct mgpu_dev *dev, void **p, size_t nbytes)
{
	*p = NULL;
	if (nbytes == 0)
		return 0;
	MGPU_TRY(dev->ops->alloc(dev, p, nbytes));
	dev->bytes_cur += nbytes;
	if (dev->bytes_cur > dev->bytes_peak)
		dev->bytes_peak = dev->bytes_cur;
	return 0;
}

void mgpu_dev_free(struct mgpu_dev *dev, void *p, size_t nbytes)
{
	if (!p)
		return;
	dev->ops->release(dev, p);
	dev->bytes_cur -= nbytes;
}

int mgpu_dev_from_host(struct mgpu_dev *dev, void *dst, const void *src_host,
		       size_t nbytes)
{
	if (nbytes == 0)
		return 0;
	dev->h2d_count++;
	dev->h2d_nbytes += nbytes;
	return dev->ops->to_dev(dev, dst, src_host, nbytes);
}

void mgpu_dev_count_read(struct mgpu_dev *dev, size_t nbytes)
{
	dev->d2h_count++;
	dev->d2h_nbytes += nbytes;
}

int mgpu_dev_to_host(struct mgpu_dev *dev, void *dst_host, const void *src, size_t nbytes)
{
	if (nbytes == 0)
		return 0;
	mgpu_dev_count_read(dev, nbytes);
	return dev->ops->to_host(dev, dst_host, src, nbytes);
}

int mgpu_dev_nrm2(struct mgpu_dev *dev, size_t n, const float *x, float *out_host)
{
	mgpu_dev_count_read(dev, sizeof *out_host);
	return dev->ops->nrm2(dev, n, x, out_host);
}
