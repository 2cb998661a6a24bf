/*
 * gpu.h - which GPUs a machine has, and which of them a run should use.
 *
 * Provides: the GPU record (struct mgpu_gpu) and a fixed-size list of them;
 * enumeration through the CUDA runtime, completed by NVML when
 * libnvidia-ml.so.1 can be loaded (dlopen, at run time); a parser of the
 * CSV that `nvidia-smi --query-gpu=... --format=csv` prints;
 * CUDA_VISIBLE_DEVICES applied to such a list; THE selection policy
 * (mgpu-probe and `mgpu-train --gpus auto` both call mgpu_gpu_select);
 * the resolution of a --gpus argument into CUDA ordinals; the facts of
 * `mgpu-probe --system` (versions, P2P matrix, host, checklist inputs);
 * whether this binary carries code a GPU can run (gpu_arch.c); and whether
 * OpenBLAS's kernels fit the host CPU (gpu_blas.c).
 *
 * Invariants:
 * - gpu[i].index is the CUDA ordinal this process passes to cudaSetDevice,
 *   or -1 for a GPU that CUDA_VISIBLE_DEVICES hides. Visible GPUs come
 *   first, in ordinal order: gpu[i].index == i for i < nvisible.
 * - Ordinals count GPUs in PCI bus order (CUDA_DEVICE_ORDER=PCI_BUS_ID,
 *   which mgpu_gpu_enumerate sets unless the environment already has it),
 *   so they agree with nvidia-smi's indices.
 * - No driver, no device or a driver too old for the runtime is a list with
 *   nvisible == 0 and `why` saying so, never an error.
 * - Nothing here prints or exits; lists and selections are plain values
 *   (no allocation, safe to copy). Not thread-safe (CUDA/NVML set-up).
 */
#ifndef MGPU_GPU_GPU_H
#define MGPU_GPU_GPU_H

#include <stddef.h> /* size_t */
#include <stdint.h> /* int64_t */
#include <stdio.h>  /* FILE */

#define MGPU_GPU_MAX 64     /* GPUs per list */
#define MGPU_GPU_REASON 96  /* bytes of an exclusion reason */
#define MGPU_GPU_RENDEZVOUS_PORT 29500 /* torchrun's default MASTER_PORT */

/* One GPU; -1 (or "") marks what the source did not say. */
struct mgpu_gpu {
	int index;               /* CUDA ordinal; -1: hidden by CUDA_VISIBLE_DEVICES */
	int smi_index;           /* nvidia-smi / NVML index; -1 unknown */
	char uuid[64];           /* "GPU-8932f937-d72c-4106-c12f-20bd9faed9f6" */
	char name[96];           /* "NVIDIA A100-SXM4-80GB" */
	char pci_bus_id[32];     /* "00000000:07:00.0", as nvidia-smi prints it */
	int64_t mem_total_bytes; /* device memory */
	int64_t mem_used_bytes;
	int64_t mem_free_bytes;
	int display_active;      /* 1: a display is initialised on it, 0: none */
	int watchdog;            /* 1: kernels have a run-time limit (display watchdog) */
	int cc_major, cc_minor;  /* compute capability */
	int sm_count;            /* multiprocessors */
	int util_pct;            /* GPU utilisation, percent (NVML) */
	int nprocs;              /* compute processes running on it (NVML) */
	int nvlinks;             /* active NVLink links (NVML) */
};

struct mgpu_gpu_list {
	int n;                   /* entries in gpu[], hidden ones included */
	int nvisible;            /* the first nvisible have index 0..nvisible-1 */
	struct mgpu_gpu gpu[MGPU_GPU_MAX];
	char source[32];         /* "cuda", "cuda+nvml", "nvidia-smi csv" */
	char why[256];           /* when nvisible == 0: why there is none */
	char note[256];          /* a remark worth a warning, or "" */
};

/* The eligibility rules; mgpu_gpu_policy_init gives the defaults. */
struct mgpu_gpu_policy {
	double min_memory_gb;    /* total memory >= this many 10^9 bytes [8] */
	int include_display;     /* allow GPUs that drive a display [0] */
	double max_used_pct;     /* exclude GPUs with more memory in use; < 0: off [-1] */
	int count;               /* keep the best count; 0: every eligible one [0] */
};

struct mgpu_gpu_selection {
	int n;                   /* GPUs kept, best first */
	int neligible;           /* eligible before the count cut */
	int pick[MGPU_GPU_MAX];  /* positions in list->gpu of the kept GPUs */
	int order[MGPU_GPU_MAX]; /* per list position: 1-based place in pick, 0: not kept */
	char reason[MGPU_GPU_MAX][MGPU_GPU_REASON]; /* per position: why not kept */
};

/* What `mgpu-probe --system` reports besides the GPU list. Versions are
 * encoded as CUDA and NCCL encode them; -1 means unknown or absent. */
struct mgpu_gpu_system {
	int cuda_driver_version;  /* 1000*major + 10*minor; 0: no driver installed */
	int cuda_runtime_version; /* same encoding; -1: built without CUDA */
	int cublas_version[3];    /* major, minor, patch */
	int nccl_version;         /* NCCL_VERSION_CODE (22809 = 2.28.9) */
	char nccl_why[160];       /* why NCCL is not loadable, or "" */
	char nvml_driver[48];     /* "550.54.15", "" when NVML is absent */
	int nvml_gpus;            /* GPUs NVML counts, before CUDA_VISIBLE_DEVICES */
	char nvml_why[160];       /* why NVML is absent, or "" */
	int ngpus;                /* rows and columns of the matrices (visible GPUs) */
	signed char p2p[MGPU_GPU_MAX][MGPU_GPU_MAX];    /* cudaDeviceCanAccessPeer: 1, 0, -1 */
	signed char nvlink[MGPU_GPU_MAX][MGPU_GPU_MAX]; /* NVML NVLink P2P status: 1, 0, -1 */
	char cpu_model[128];
	int cpu_cores;            /* online logical CPUs */
	int64_t mem_total_bytes, mem_avail_bytes;
	int64_t shm_total_bytes, shm_free_bytes; /* /dev/shm; -1 when missing */
	int port;                 /* the rendezvous port checked */
	int port_free;            /* 1: 127.0.0.1:port could be bound */
	char port_why[160];       /* why not, or "" */
};

/* Defaults: 8 GB, no display GPUs, no use limit, every eligible GPU. */
void mgpu_gpu_policy_init(struct mgpu_gpu_policy *p);

/*
 * The GPUs of this machine, as this process sees them (CUDA applies
 * CUDA_VISIBLE_DEVICES itself), with NVML's facts added when it loads.
 * Zero GPUs is a success with list->why set. Call it before any other CUDA
 * use in the process: it sets CUDA_DEVICE_ORDER=PCI_BUS_ID unless set.
 */
int mgpu_gpu_enumerate(struct mgpu_gpu_list *list);

/*
 * Parse nvidia-smi's CSV (--format=csv, with or without noheader and
 * nounits) from buf[0..len) into list; name names the input in messages.
 * With a header line the columns are found by name (index and memory.total
 * are required, others optional, unknown ones ignored); without one they
 * must be index, uuid, name, memory.total, memory.used, display_active,
 * pci.bus_id, compute_cap. "[N/A]" and "[Not Supported]" mean unknown.
 * GPUs get ordinals in index order, all visible. A line "No devices were
 * found" gives zero GPUs. Fails with MGPU_EFORMAT (message naming the line)
 * on empty input, a missing column, a non-numeric or negative number, a
 * duplicate index or more than MGPU_GPU_MAX GPUs. Pure: no I/O, no state.
 */
int mgpu_gpu_parse_smi_csv(const char *buf, size_t len, const char *name,
			   struct mgpu_gpu_list *list);

/*
 * Restrict list to what a CUDA process would see under
 * CUDA_VISIBLE_DEVICES=spec (NULL: unset, nothing changes). Entries are
 * ordinals of the current list or UUID prefixes including "GPU-"; the
 * visible GPUs are renumbered 0.. in the order given. As CUDA does, the
 * first entry that matches no GPU (or matches one already listed, or is
 * ambiguous, or is a MIG id) ends the list; list->note says so. Hidden GPUs
 * stay in the list with index -1, after the visible ones.
 */
int mgpu_gpu_apply_visible(struct mgpu_gpu_list *list, const char *spec);

/*
 * THE selection: a GPU is eligible when it is visible, its total memory is
 * known and >= p->min_memory_gb * 10^9 bytes, it drives no display and has
 * no display watchdog (unless p->include_display), and (with
 * p->max_used_pct >= 0) no more than that share of its memory is in use
 * (unknown use passes). Eligible GPUs are ordered by total memory, most
 * first, then by lowest ordinal; p->count > 0 keeps the first count.
 * Zero kept is not an error. MGPU_EINVAL on a bad policy.
 */
int mgpu_gpu_select(const struct mgpu_gpu_list *list, const struct mgpu_gpu_policy *p,
		    struct mgpu_gpu_selection *sel);

/*
 * The CUDA ordinals a --gpus argument names, given the visible GPUs:
 *   "0,2"  those ordinals, in that order;
 *   "all"  every visible GPU in ordinal order;
 *   "auto" mgpu_gpu_select(list, p) (p NULL: the defaults);
 *   "-"    one comma list read from in (what `mgpu-probe --ids` prints).
 * At most max_n ordinals go to ordinals[], their number to *n (>= 1 on
 * success, 0 on failure).
 * no_repeat NULL lets a list name a GPU more than once (ranks that share
 * it); otherwise a repeat is refused, "--gpus: GPU 1 listed twice: " +
 * no_repeat. Repeats are checked before whether the GPUs exist, so the
 * refusal is the same on machines with and without them.
 * Errors: MGPU_EINVAL for a malformed argument (a usage error), a refused
 * repeat, or more than max_n; MGPU_EFORMAT for malformed or empty input
 * on in; MGPU_ERANGE when a GPU does not exist or none is eligible:
 * "--gpus: GPU 3 requested but 0 GPUs are visible: <list->why>".
 */
int mgpu_gpu_resolve(const char *arg, FILE *in, const struct mgpu_gpu_list *list,
		     const struct mgpu_gpu_policy *p, const char *no_repeat, int *ordinals,
		     int max_n, int *n);
/* The first ordinal that ids[0..n) lists twice, or -1. Pure. */
int mgpu_gpu_repeated(const int *ids, int n);

/* The short text of one exclusion reason for gpu g under p, "" when g is
 * eligible (used by mgpu_gpu_select; exposed for messages). */
void mgpu_gpu_exclusion(const struct mgpu_gpu *g, const struct mgpu_gpu_policy *p,
			char *buf, size_t len);

/*
 * Fill s for `mgpu-probe --system`: CUDA driver, runtime and cuBLAS
 * versions, NCCL (loaded with dlopen: is it loadable), NVML's driver
 * version and GPU count, the P2P (and NVLink) matrices of list's visible
 * GPUs, the host (CPU model, cores, memory, /dev/shm) and whether the
 * rendezvous port (MASTER_PORT, else 29500) is free. Never fails on a
 * machine without GPUs; what cannot be learned is -1 or "".
 */
int mgpu_gpu_system(const struct mgpu_gpu_list *list, struct mgpu_gpu_system *s);

/* Which code of this binary a GPU runs (mgpu_gpu_code_fit). */
enum { MGPU_GPU_CODE_NONE = 0, MGPU_GPU_CODE_SASS = 1, MGPU_GPU_CODE_PTX = 2 };
struct mgpu_gpu_fit {
	int code;   /* MGPU_GPU_CODE_*: a cubin, PTX the driver compiles, or nothing */
	int arch;   /* XY of the sm_XY or compute_XY used (86, 120); 0 with NONE */
	int exact;  /* SASS built for exactly this compute capability */
};

/* The GPU code this binary carries, as nvcc names it ("sm_75 sm_80 ...
 * compute_120"): the build's CUDA_ARCHS; "" when built without CUDA. */
const char *mgpu_gpu_build_archs(void);

/*
 * Whether a GPU of compute capability cc_major.cc_minor can run code built
 * for archs (words "sm_XY", "sm_XYa", "compute_XY", separated by spaces or
 * commas): SASS when a cubin of the same major and a minor not above the
 * GPU's exists (the newest such), else PTX when one of compute_XY <= the
 * GPU exists (the driver compiles it at first use), else NONE. Pure.
 * MGPU_EINVAL names a malformed word or an invalid compute capability.
 */
int mgpu_gpu_code_fit(int cc_major, int cc_minor, const char *archs, struct mgpu_gpu_fit *fit);

/* CPU vector features as OpenBLAS's x86-64 kernel families need them. */
enum { MGPU_SIMD_UNKNOWN = -1, MGPU_SIMD_SSE = 0, MGPU_SIMD_AVX = 1, MGPU_SIMD_AVX2 = 2,
       MGPU_SIMD_AVX512 = 3 };

/* The BLAS facts of this host (`mgpu-probe --system`, mgpu-bench tables). */
struct mgpu_gpu_blas {
	char core[48];          /* openblas_get_corename(): "Haswell", "SkylakeX" */
	char config[160];       /* openblas_get_config(): version and build options */
	int threads;            /* openblas_get_num_threads() of this process */
	int rank_threads;       /* the same in a rank of the CPU backend; -1 unknown */
	int cpu_simd;           /* MGPU_SIMD_* of /proc/cpuinfo's flags */
	char cpu_features[160]; /* the vector flags found: "avx avx2 fma" */
	int fits;               /* 1 kernels fit the CPU, 0 they do not, -1 not judged */
	char verdict[320];      /* one line saying so, naming OPENBLAS_CORETYPE on a misfit */
};

/* Fill b from OpenBLAS and /proc/cpuinfo; never fails. */
void mgpu_gpu_blas_host(struct mgpu_gpu_blas *b);
/* openblas_get_corename(), "unknown" when it says nothing. */
const char *mgpu_gpu_blas_core(void);
/* openblas_get_num_threads(): the threads a BLAS call of this process uses. */
int mgpu_gpu_blas_threads(void);
/* The threads a BLAS call uses in a rank of the CPU backend (mgpu-train's
 * CPU ranks): its device is opened and closed to ask, and this process's
 * own count restored; -1 when it cannot be opened. */
int mgpu_gpu_blas_rank_threads(void);
/* The MGPU_SIMD_* tier of a /proc/cpuinfo flags line (avx; avx2 + fma;
 * avx512f + bw + vl + dq); the vector flags found go to names. Pure. */
int mgpu_gpu_cpu_simd(const char *flags, char *names, size_t len);
/* The tier an OpenBLAS core's kernels need, any case ("HASWELL");
 * MGPU_SIMD_UNKNOWN for a core of another architecture. Pure. */
int mgpu_gpu_blas_core_simd(const char *core);
/*
 * Do OpenBLAS's kernels (core) fit the CPU (flags)? 1 yes, 0 no, -1 the
 * core is unknown (not judged); msg says so in one line, and on a misfit
 * names the OPENBLAS_CORETYPE that fits (kernels below the CPU: slow;
 * above it: illegal instructions). Pure.
 */
int mgpu_gpu_blas_verdict(const char *core, const char *flags, char *msg, size_t len);

/*
 * Sampling NVML during a run (mgpu-bench train): open a session on the
 * GPUs named by UUID (entries NVML does not know read as unknown), read
 * utilisation (percent of the last sample period in which a kernel ran,
 * as nvidia-smi shows it) and device memory in use (all processes), close.
 * open fails with MGPU_EUNSUP and why when NVML cannot be loaded or knows
 * none of the GPUs. One thread may read while the session is open.
 */
struct mgpu_gpu_nvml_mon {
	int n, open;
	struct nvml_device_st *dev[MGPU_GPU_MAX]; /* NVML handles; NULL: unknown */
};
int mgpu_gpu_nvml_open(struct mgpu_gpu_nvml_mon *m, const char *const *uuids, int n, char *why,
		       size_t whylen);
/* GPU i's utilisation and memory in use; -1 each when NVML does not say. */
void mgpu_gpu_nvml_read(const struct mgpu_gpu_nvml_mon *m, int i, int *util_pct,
			int64_t *mem_used_bytes);
void mgpu_gpu_nvml_close(struct mgpu_gpu_nvml_mon *m);

/* 1 when a TCP socket can bind 127.0.0.1:port (then closed), 0 when not,
 * with why. */
int mgpu_gpu_port_free(int port, char *why, size_t whylen);

#endif
