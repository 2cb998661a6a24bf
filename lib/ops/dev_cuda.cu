/*
 * dev_cuda.cu - a cuda device's state (cuda_kern.h) as C linkage sees it:
 * its stream, for attn_cuda.cu, attn_wmma.cu and the code beside the
 * backend (lib/gpu's uploads and staging, lib/comm's NCCL); its compute
 * capability and shared memory opt-in, for the attention kernels; the slot
 * of conv_cuda.cu's cuDNN state. Apart from ops_cuda.cu, whose table names
 * the ops of those files, so that they and it do not call each other.
 * Before dev opens (dev->impl NULL) the stream is NULL and the rest 0.
 */
#include "ops/cuda_kern.h" /* struct cuda_impl, impl_of, stream_of */
#include "ops/ops_cuda.h"  /* the prototypes */

extern "C" void *mgpu_cuda_stream(struct mgpu_dev *dev)
{
	return dev->impl ? (void *)stream_of(dev) : NULL;
}

extern "C" int mgpu_cuda_cc(struct mgpu_dev *dev)
{
	return dev->impl ? impl_of(dev)->cc : 0;
}

extern "C" int mgpu_cuda_smem_optin(struct mgpu_dev *dev)
{
	return dev->impl ? impl_of(dev)->smem_optin : 0;
}

extern "C" void **mgpu_cuda_conv_slot(struct mgpu_dev *dev)
{
	return &impl_of(dev)->conv;
}
