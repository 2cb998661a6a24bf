/*
 * cudnn_dl.c - load cuDNN on first use (see cudnn_dl.h).
 */
#include "config.h" /* MGPU_HAVE_CUDA */

#if MGPU_HAVE_CUDA
#include "ops/cudnn_dl.h"

#include <dlfcn.h>   /* dlopen, dlsym */
#include <pthread.h> /* pthread_once */
#include <stdio.h>   /* snprintf */

#include "core/err.h" /* mgpu_err */

static struct mgpu_cudnn api;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static char load_error[512];

/* Function pointers from dlsym: POSIX guarantees the conversion works. */
#define SYM(field, name)                                                          \
	do {                                                                      \
		*(void **)&api.field = dlsym(h, name);                             \
		if (!api.field) {                                                 \
			snprintf(load_error, sizeof load_error, "libcudnn lacks %s", \
				 name);                                           \
			return;                                                   \
		}                                                                 \
	} while (0)

static void load(void)
{
	void *h = dlopen("libcudnn.so.9", RTLD_NOW | RTLD_LOCAL);

	if (!h) {
		snprintf(load_error, sizeof load_error, "cannot load cuDNN 9: %s", dlerror());
		return;
	}
	SYM(get_version, "cudnnGetVersion");
	if (api.get_version() < 90000) {
		snprintf(load_error, sizeof load_error, "cuDNN %zu is older than 9",
			 api.get_version());
		return;
	}
	SYM(error_string, "cudnnGetErrorString");
	SYM(create, "cudnnCreate");
	SYM(destroy, "cudnnDestroy");
	SYM(set_stream, "cudnnSetStream");
	SYM(create_tensor, "cudnnCreateTensorDescriptor");
	SYM(destroy_tensor, "cudnnDestroyTensorDescriptor");
	SYM(set_tensor4d, "cudnnSetTensor4dDescriptor");
	SYM(create_filter, "cudnnCreateFilterDescriptor");
	SYM(destroy_filter, "cudnnDestroyFilterDescriptor");
	SYM(set_filter4d, "cudnnSetFilter4dDescriptor");
	SYM(create_conv, "cudnnCreateConvolutionDescriptor");
	SYM(destroy_conv, "cudnnDestroyConvolutionDescriptor");
	SYM(set_conv2d, "cudnnSetConvolution2dDescriptor");
	SYM(set_conv_groups, "cudnnSetConvolutionGroupCount");
	SYM(set_conv_math, "cudnnSetConvolutionMathType");
	SYM(fwd_algo, "cudnnGetConvolutionForwardAlgorithm_v7");
	SYM(bwd_data_algo, "cudnnGetConvolutionBackwardDataAlgorithm_v7");
	SYM(bwd_filter_algo, "cudnnGetConvolutionBackwardFilterAlgorithm_v7");
	SYM(fwd, "cudnnConvolutionForward");
	SYM(bwd_data, "cudnnConvolutionBackwardData");
	SYM(bwd_filter, "cudnnConvolutionBackwardFilter");
	SYM(bwd_bias, "cudnnConvolutionBackwardBias");
	SYM(add_tensor, "cudnnAddTensor");
	load_error[0] = '\0';
}

int mgpu_cudnn_load(const struct mgpu_cudnn **out)
{
	pthread_once(&once, load);
	if (load_error[0])
		return mgpu_err(MGPU_EUNSUP, "%s", load_error);
	*out = &api;
	return 0;
}
#else
typedef int mgpu_cudnn_dl_unused; /* builds without CUDA have no cuDNN */
#endif
