/*
 * cublas_dl.c - load cuBLAS on first use (see cublas_dl.h).
 */
#include "config.h" /* MGPU_HAVE_CUDA */

#if MGPU_HAVE_CUDA
#include "ops/cublas_dl.h"

#include <dlfcn.h>   /* dlopen, dlsym */
#include <pthread.h> /* pthread_once */
#include <stdio.h>   /* snprintf */

#include "core/err.h" /* mgpu_err */

static struct mgpu_cublas api;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static char load_error[512];

/* Function pointers from dlsym: POSIX guarantees the conversion works. */
#define SYM(field, name)                                                         \
	do {                                                                     \
		*(void **)&api.field = dlsym(h, name);                            \
		if (!api.field) {                                                \
			snprintf(load_error, sizeof load_error, "libcublas lacks %s", \
				 name);                                          \
			return;                                                  \
		}                                                                \
	} while (0)

static void load(void)
{
	char name[64];
	void *h;

	snprintf(name, sizeof name, "libcublas.so.%d", CUBLAS_VER_MAJOR);
	h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
	if (!h)
		h = dlopen("libcublas.so", RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		snprintf(load_error, sizeof load_error, "cannot load cuBLAS: %s", dlerror());
		return;
	}
	SYM(create, "cublasCreate_v2");
	SYM(destroy, "cublasDestroy_v2");
	SYM(set_stream, "cublasSetStream_v2");
	SYM(set_pointer_mode, "cublasSetPointerMode_v2");
	SYM(set_math_mode, "cublasSetMathMode");
	SYM(gemm_ex, "cublasGemmEx");
	SYM(gemm_strided_ex, "cublasGemmStridedBatchedEx");
	SYM(snrm2_64, "cublasSnrm2_v2_64");
	SYM(get_property, "cublasGetProperty");
	SYM(status_name, "cublasGetStatusName");
	SYM(status_string, "cublasGetStatusString");
	load_error[0] = '\0';
}

int mgpu_cublas_load(const struct mgpu_cublas **out)
{
	pthread_once(&once, load);
	if (load_error[0])
		return mgpu_err(MGPU_EUNSUP, "%s", load_error);
	*out = &api;
	return 0;
}
#else
typedef int mgpu_cublas_dl_unused; /* builds without CUDA have no cuBLAS */
#endif
