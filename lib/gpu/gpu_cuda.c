/*
 * gpu_cuda.c - GPU enumeration through the CUDA runtime: the backend seam
 * of lib/gpu (the only file here that includes CUDA headers).
 *
 * Provides mgpu_gpu_enumerate (gpu.h) and mgpu_gpu_cuda_system
 * (gpu_int.h). Plain C calling the runtime API, compiled by the host
 * compiler. Built without CUDA (MGPU_HAVE_CUDA 0) both still work: zero
 * GPUs, "built without CUDA", versions -1.
 *
 * Invariants: a failing CUDA call never escapes as an error: it becomes
 * zero GPUs (or an unknown field) with the runtime's own words in `why`,
 * and cudaGetLastError() clears it so later CUDA users start clean.
 * Device memory in use is asked from NVML first; only without NVML does
 * this file create a context (cudaMemGetInfo) and reset it again.
 */
#include <stdio.h>  /* snprintf */
#include <stdlib.h> /* setenv */
#include <string.h> /* memset */

#include "config.h"         /* MGPU_HAVE_CUDA */
#include "core/err.h"       /* MGPU_OK */
#include "gpu/gpu.h"        /* struct mgpu_gpu_list */
#include "gpu/gpu_int.h"    /* mgpu_gpu_blank, mgpu_gpu_nvml_fill */

#if MGPU_HAVE_CUDA
#include "ops/cublas_dl.h"    /* mgpu_cublas_load: cuBLAS loaded on use */
#include <cuda_runtime_api.h> /* cudaGetDeviceCount, cudaGetDeviceProperties */

static void version_text(int v, char *buf, size_t len)
{
	snprintf(buf, len, "%d.%d", v / 1000, (v % 1000) / 10);
}

/* Why cudaGetDeviceCount failed, in the runtime's words plus context. */
static void count_error(cudaError_t rc, char *why, size_t len)
{
	int drv = 0, rt = 0;
	char rts[16];

	(void)cudaDriverGetVersion(&drv);
	(void)cudaRuntimeGetVersion(&rt);
	version_text(rt, rts, sizeof rts);
	if (rc == cudaErrorInsufficientDriver && drv == 0)
		snprintf(why, len, "%s (%s: no NVIDIA driver is installed; CUDA runtime %s)",
			 cudaGetErrorString(rc), cudaGetErrorName(rc), rts);
	else
		snprintf(why, len, "%s (%s; CUDA runtime %s)", cudaGetErrorString(rc),
			 cudaGetErrorName(rc), rts);
}

static void uuid_text(const cudaUUID_t *u, char *buf, size_t len)
{
	const unsigned char *b = (const unsigned char *)u->bytes;

	snprintf(buf, len, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
		 "%02x%02x%02x%02x%02x%02x", b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7],
		 b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
}

static void cuda_gpu(int dev, struct mgpu_gpu *g)
{
	struct cudaDeviceProp prop;
	int v;

	mgpu_gpu_blank(g);
	g->index = dev;
	if (cudaGetDeviceProperties(&prop, dev) != cudaSuccess) {
		snprintf(g->name, sizeof g->name, "unknown (%s)",
			 cudaGetErrorName(cudaGetLastError()));
		return;
	}
	snprintf(g->name, sizeof g->name, "%.*s", (int)sizeof g->name - 1, prop.name);
	uuid_text(&prop.uuid, g->uuid, sizeof g->uuid);
	snprintf(g->pci_bus_id, sizeof g->pci_bus_id, "%08X:%02X:%02X.0",
		 (unsigned)prop.pciDomainID, (unsigned)prop.pciBusID, (unsigned)prop.pciDeviceID);
	g->mem_total_bytes = (int64_t)prop.totalGlobalMem;
	g->cc_major = prop.major;
	g->cc_minor = prop.minor;
	g->sm_count = prop.multiProcessorCount;
	if (cudaDeviceGetAttribute(&v, cudaDevAttrKernelExecTimeout, dev) == cudaSuccess)
		g->watchdog = v != 0;
	else
		(void)cudaGetLastError();
}

/* Memory in use without NVML: needs a context, released again. */
static void cuda_meminfo(struct mgpu_gpu *g)
{
	size_t free_b = 0, total_b = 0;

	if (cudaSetDevice(g->index) == cudaSuccess &&
	    cudaMemGetInfo(&free_b, &total_b) == cudaSuccess && free_b <= total_b) {
		g->mem_free_bytes = (int64_t)free_b;
		g->mem_used_bytes = (int64_t)(total_b - free_b);
	}
	(void)cudaGetLastError();
	(void)cudaDeviceReset();
	(void)cudaGetLastError();
}

static void cuda_list(struct mgpu_gpu_list *list)
{
	cudaError_t rc;
	int n = 0, i;

	rc = cudaGetDeviceCount(&n);
	if (rc != cudaSuccess) {
		count_error(rc, list->why, sizeof list->why);
		(void)cudaGetLastError();
		return;
	}
	if (n == 0)
		snprintf(list->why, sizeof list->why, "the CUDA runtime found no GPU");
	if (n > MGPU_GPU_MAX) {
		snprintf(list->note, sizeof list->note, "%d GPUs found; only the first %d are used",
			 n, MGPU_GPU_MAX);
		n = MGPU_GPU_MAX;
	}
	for (i = 0; i < n; i++)
		cuda_gpu(i, &list->gpu[i]);
	list->n = list->nvisible = n;
	snprintf(list->source, sizeof list->source, "cuda");
}

static void cuda_fill_memory(struct mgpu_gpu_list *list)
{
	int i;

	for (i = 0; i < list->nvisible; i++)
		if (list->gpu[i].mem_used_bytes < 0)
			cuda_meminfo(&list->gpu[i]);
}

void mgpu_gpu_cuda_system(const struct mgpu_gpu_list *list, struct mgpu_gpu_system *s)
{
	const struct mgpu_cublas *cb;
	int i, j, v;

	if (cudaDriverGetVersion(&v) == cudaSuccess)
		s->cuda_driver_version = v;
	if (cudaRuntimeGetVersion(&v) == cudaSuccess)
		s->cuda_runtime_version = v;
	if (mgpu_cublas_load(&cb) < 0 ||
	    cb->get_property(MAJOR_VERSION, &s->cublas_version[0]) != CUBLAS_STATUS_SUCCESS ||
	    cb->get_property(MINOR_VERSION, &s->cublas_version[1]) != CUBLAS_STATUS_SUCCESS ||
	    cb->get_property(PATCH_LEVEL, &s->cublas_version[2]) != CUBLAS_STATUS_SUCCESS)
		s->cublas_version[0] = -1;
	for (i = 0; i < s->ngpus && i < list->nvisible; i++)
		for (j = 0; j < s->ngpus; j++) {
			if (i == j)
				continue;
			if (cudaDeviceCanAccessPeer(&v, i, j) == cudaSuccess)
				s->p2p[i][j] = (signed char)(v != 0);
			else
				(void)cudaGetLastError();
		}
	(void)cudaGetLastError();
}

#else /* !MGPU_HAVE_CUDA */

static void cuda_list(struct mgpu_gpu_list *list)
{
	snprintf(list->why, sizeof list->why, "this build has no CUDA support (built with CUDA=0)");
}

static void cuda_fill_memory(struct mgpu_gpu_list *list)
{
	(void)list;
}

void mgpu_gpu_cuda_system(const struct mgpu_gpu_list *list, struct mgpu_gpu_system *s)
{
	(void)list;
	(void)s; /* versions stay -1: not built with CUDA */
}

#endif

int mgpu_gpu_enumerate(struct mgpu_gpu_list *list)
{
	char why[160];

	memset(list, 0, sizeof *list);
	snprintf(list->source, sizeof list->source, "cuda");
	/* Ordinals in PCI order, as nvidia-smi numbers GPUs; read by CUDA when
	 * it initialises, so this must come before any other CUDA call. */
	setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID", 0);
	cuda_list(list);
	if (list->nvisible > 0 && mgpu_gpu_nvml_fill(list, why, sizeof why) == MGPU_OK)
		snprintf(list->source, sizeof list->source, "cuda+nvml");
	cuda_fill_memory(list);
	return 0;
}
