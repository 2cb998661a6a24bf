/*
 * gpu_nvml.c - NVML, loaded at run time: what the CUDA runtime does not
 * say (a display is active, utilisation, memory in use, processes,
 * NVLink) and the driver's own version.
 *
 * Provides mgpu_gpu_nvml_fill and mgpu_gpu_nvml_system (gpu_int.h), and
 * the sampling calls mgpu_gpu_nvml_open/read/close (gpu.h).
 * libnvidia-ml.so.1 ships with the driver, not the toolkit, so it is
 * opened with dlopen when present and never linked: a machine without a
 * driver runs the same binary. The few NVML types used are declared here
 * with NVML's ABI (nvml.h is not part of the CUDA toolkit): return codes
 * are ints (0 success, 3 not supported, 7 insufficient size), device
 * handles opaque pointers, nvmlMemory_t three unsigned long longs.
 *
 * Invariants: the library handle is opened once and kept (NVML should not
 * be unloaded while the process runs); each public call does its own
 * nvmlInit_v2 / nvmlShutdown pair (NVML counts them), a sampling session
 * one from open to close. Loading is not thread-safe; once a session is
 * open, one thread may read it while no other thread loads NVML.
 */
#include <dlfcn.h>  /* dlopen, dlsym, dlerror */
#include <stdio.h>  /* snprintf */
#include <string.h> /* memcpy */

#include "core/err.h"    /* MGPU_EUNSUP */
#include "gpu/gpu_int.h" /* mgpu_gpu_nvml_fill */

#define NVML_SUCCESS 0
#define NVML_ERROR_NOT_SUPPORTED 3
#define NVML_ERROR_INSUFFICIENT_SIZE 7
#define NVML_NVLINK_MAX_LINKS 18
#define NVML_P2P_CAPS_INDEX_NVLINK 2
#define NVML_P2P_STATUS_OK 0

typedef int nvml_ret;
typedef struct nvml_device_st *nvml_dev;
struct nvml_memory {
	unsigned long long total, free, used;
};
/* nvmlMemory_v2_t: what nvidia-smi reports since R510 (reserved apart). */
struct nvml_memory_v2 {
	unsigned int version; /* sizeof | 2 << 24, as NVML_STRUCT_VERSION */
	unsigned long long total, reserved, free, used;
};
struct nvml_util {
	unsigned int gpu, memory;
};

static struct {
	void *lib;
	int tried;
	char why[160];
	nvml_ret (*init)(void);
	nvml_ret (*shutdown)(void);
	const char *(*error_string)(nvml_ret);
	nvml_ret (*by_uuid)(const char *, nvml_dev *);
	nvml_ret (*count)(unsigned int *);
	nvml_ret (*get_index)(nvml_dev, unsigned int *);
	nvml_ret (*display_active)(nvml_dev, int *);
	nvml_ret (*memory)(nvml_dev, struct nvml_memory *);
	nvml_ret (*memory_v2)(nvml_dev, struct nvml_memory_v2 *);
	nvml_ret (*util)(nvml_dev, struct nvml_util *);
	nvml_ret (*procs)(nvml_dev, unsigned int *, void *);
	nvml_ret (*nvlink_state)(nvml_dev, unsigned int, int *);
	nvml_ret (*p2p)(nvml_dev, nvml_dev, int, int *);
	nvml_ret (*driver)(char *, unsigned int);
} nv;

/* Store dlsym(name) into the function pointer at fn (NULL when absent). */
static void sym(void *fn, const char *name)
{
	void *p = dlsym(nv.lib, name);

	memcpy(fn, &p, sizeof p);
}

static int load(void)
{
	const char *err;

	if (nv.tried)
		return nv.lib ? 0 : MGPU_EUNSUP;
	nv.tried = 1;
	nv.lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!nv.lib) {
		err = dlerror();
		snprintf(nv.why, sizeof nv.why, "libnvidia-ml.so.1 is not loadable: %s",
			 err ? err : "unknown reason");
		return MGPU_EUNSUP;
	}
	sym(&nv.init, "nvmlInit_v2");
	sym(&nv.shutdown, "nvmlShutdown");
	sym(&nv.error_string, "nvmlErrorString");
	sym(&nv.by_uuid, "nvmlDeviceGetHandleByUUID");
	sym(&nv.count, "nvmlDeviceGetCount_v2");
	sym(&nv.get_index, "nvmlDeviceGetIndex");
	sym(&nv.display_active, "nvmlDeviceGetDisplayActive");
	sym(&nv.memory, "nvmlDeviceGetMemoryInfo");
	sym(&nv.memory_v2, "nvmlDeviceGetMemoryInfo_v2");
	sym(&nv.util, "nvmlDeviceGetUtilizationRates");
	sym(&nv.procs, "nvmlDeviceGetComputeRunningProcesses_v3");
	if (!nv.procs)
		sym(&nv.procs, "nvmlDeviceGetComputeRunningProcesses_v2");
	sym(&nv.nvlink_state, "nvmlDeviceGetNvLinkState");
	sym(&nv.p2p, "nvmlDeviceGetP2PStatus");
	sym(&nv.driver, "nvmlSystemGetDriverVersion");
	if (!nv.init || !nv.shutdown || !nv.by_uuid) {
		snprintf(nv.why, sizeof nv.why, "libnvidia-ml.so.1 lacks nvmlInit_v2");
		nv.lib = NULL; /* kept loaded, but unusable */
		return MGPU_EUNSUP;
	}
	return 0;
}

/* Load and initialise NVML; MGPU_EUNSUP with why when it cannot be. */
static int start(char *why, size_t whylen)
{
	nvml_ret rc;

	if (load() < 0) {
		snprintf(why, whylen, "%s", nv.why);
		return MGPU_EUNSUP;
	}
	rc = nv.init();
	if (rc != NVML_SUCCESS) {
		snprintf(why, whylen, "nvmlInit failed: %s",
			 nv.error_string ? nv.error_string(rc) : "error");
		return MGPU_EUNSUP;
	}
	return 0;
}

/* Active NVLink links; 0 when the GPU has none, -1 unknown. */
static int count_links(nvml_dev d)
{
	unsigned int link;
	int active, n = 0;
	nvml_ret rc;

	if (!nv.nvlink_state)
		return -1;
	for (link = 0; link < NVML_NVLINK_MAX_LINKS; link++) {
		rc = nv.nvlink_state(d, link, &active);
		if (rc != NVML_SUCCESS)
			return link == 0 ? (rc == NVML_ERROR_NOT_SUPPORTED ? 0 : -1) : n;
		n += active != 0;
	}
	return n;
}

/* Total, used, free as nvidia-smi shows them: v2 when the driver has it
 * (v1 counts driver-reserved memory as used). */
static int memory_of(nvml_dev d, struct nvml_memory *m)
{
	struct nvml_memory_v2 m2;

	memset(&m2, 0, sizeof m2);
	m2.version = (unsigned int)sizeof m2 | 2u << 24;
	if (nv.memory_v2 && nv.memory_v2(d, &m2) == NVML_SUCCESS) {
		m->total = m2.total;
		m->used = m2.used;
		m->free = m2.free;
		return NVML_SUCCESS;
	}
	return nv.memory ? nv.memory(d, m) : -1;
}

static void fill_one(nvml_dev d, struct mgpu_gpu *g)
{
	struct nvml_memory m;
	struct nvml_util u;
	unsigned int idx, nproc = 0;
	int on;
	nvml_ret rc;

	if (nv.get_index && nv.get_index(d, &idx) == NVML_SUCCESS)
		g->smi_index = (int)idx;
	if (nv.display_active && nv.display_active(d, &on) == NVML_SUCCESS)
		g->display_active = on != 0;
	if (memory_of(d, &m) == NVML_SUCCESS && m.total > 0) {
		/* nvidia-smi's figures, so thresholds agree with --from output */
		g->mem_total_bytes = (int64_t)m.total;
		g->mem_used_bytes = (int64_t)m.used;
		g->mem_free_bytes = (int64_t)m.free;
	}
	if (nv.util && nv.util(d, &u) == NVML_SUCCESS)
		g->util_pct = (int)u.gpu;
	if (nv.procs) {
		rc = nv.procs(d, &nproc, NULL);
		if (rc == NVML_SUCCESS || rc == NVML_ERROR_INSUFFICIENT_SIZE)
			g->nprocs = (int)nproc;
	}
	g->nvlinks = count_links(d);
}

int mgpu_gpu_nvml_fill(struct mgpu_gpu_list *list, char *why, size_t whylen)
{
	nvml_dev d;
	int i;

	MGPU_TRY(start(why, whylen));
	for (i = 0; i < list->n; i++)
		if (list->gpu[i].uuid[0] && nv.by_uuid(list->gpu[i].uuid, &d) == NVML_SUCCESS)
			fill_one(d, &list->gpu[i]);
	nv.shutdown();
	return 0;
}

static void nvlink_matrix(const struct mgpu_gpu_list *list, struct mgpu_gpu_system *s)
{
	nvml_dev d[MGPU_GPU_MAX];
	char ok[MGPU_GPU_MAX];
	int i, j, st;

	for (i = 0; i < s->ngpus; i++)
		ok[i] = list->gpu[i].uuid[0] && nv.by_uuid(list->gpu[i].uuid, &d[i]) == NVML_SUCCESS;
	for (i = 0; i < s->ngpus; i++)
		for (j = 0; j < s->ngpus; j++)
			if (i != j && ok[i] && ok[j] &&
			    nv.p2p(d[i], d[j], NVML_P2P_CAPS_INDEX_NVLINK, &st) == NVML_SUCCESS)
				s->nvlink[i][j] = (signed char)(st == NVML_P2P_STATUS_OK);
}

int mgpu_gpu_nvml_open(struct mgpu_gpu_nvml_mon *m, const char *const *uuids, int n, char *why,
		       size_t whylen)
{
	nvml_dev d;
	int i, found = 0;

	memset(m, 0, sizeof *m);
	if (n < 0 || n > MGPU_GPU_MAX)
		return mgpu_err(MGPU_EINVAL, "NVML: %d GPUs to sample", n);
	MGPU_TRY(start(why, whylen));
	for (i = 0; i < n; i++) {
		if (uuids[i] && uuids[i][0] && nv.by_uuid(uuids[i], &d) == NVML_SUCCESS) {
			m->dev[i] = d;
			found++;
		}
	}
	if (n > 0 && !found) {
		nv.shutdown();
		snprintf(why, whylen, "NVML knows none of the %d GPU%s by UUID", n,
			 n == 1 ? "" : "s");
		return MGPU_EUNSUP;
	}
	m->n = n;
	m->open = 1;
	return 0;
}

void mgpu_gpu_nvml_read(const struct mgpu_gpu_nvml_mon *m, int i, int *util_pct,
			int64_t *mem_used_bytes)
{
	struct nvml_memory mem;
	struct nvml_util u;
	nvml_dev d = i >= 0 && i < m->n ? m->dev[i] : NULL;

	*util_pct = -1;
	*mem_used_bytes = -1;
	if (!m->open || !d)
		return;
	if (nv.util && nv.util(d, &u) == NVML_SUCCESS)
		*util_pct = (int)u.gpu;
	if (memory_of(d, &mem) == NVML_SUCCESS)
		*mem_used_bytes = (int64_t)mem.used;
}

void mgpu_gpu_nvml_close(struct mgpu_gpu_nvml_mon *m)
{
	if (m->open)
		nv.shutdown();
	memset(m, 0, sizeof *m);
}

void mgpu_gpu_nvml_system(const struct mgpu_gpu_list *list, struct mgpu_gpu_system *s)
{
	unsigned int n;
	char buf[80];

	if (start(s->nvml_why, sizeof s->nvml_why) < 0)
		return;
	if (nv.driver && nv.driver(buf, sizeof buf) == NVML_SUCCESS)
		snprintf(s->nvml_driver, sizeof s->nvml_driver, "%.*s",
			 (int)sizeof s->nvml_driver - 1, buf);
	if (nv.count && nv.count(&n) == NVML_SUCCESS)
		s->nvml_gpus = (int)n;
	if (nv.p2p)
		nvlink_matrix(list, s);
	nv.shutdown();
}
