/*
 * system.c - `mgpu-probe --system`: the CUDA, cuBLAS, NCCL and driver
 * versions and the GPU code this binary carries, the visible GPUs (or
 * those of a --from CSV), the P2P matrix, the host with OpenBLAS's kernels,
 * and a checklist of what multi-GPU training needs (code for each GPU, BLAS
 * kernels that fit the CPU, ...), as section/item/value/check rows (TSV,
 * JSON Lines) or grouped text on a terminal. Always exits 0: a failed
 * check is a finding, not an error (a BLAS misfit is also a warning).
 */
#include <stdarg.h> /* va_list */
#include <stdio.h>  /* fprintf */
#include <stdlib.h> /* getenv */
#include <string.h> /* strcmp */

#include "../common.h"  /* die_lib, warn */
#include "core/table.h" /* struct mgpu_table */
#include "gpu/gpu.h"    /* mgpu_gpu_system */
#include "probe.h"      /* struct out, out_open */

#define SHM_MIN_BYTES (256LL << 20) /* /dev/shm free space the checklist wants */

struct report {
	struct out *out;
	struct mgpu_table t;
	char section[32];
};

static const char *const sys_cols[] = { "section", "item", "value", "check" };

/* One report line: check is "pass", "fail" or NULL (not a check). */
static void row(struct report *r, const char *section, const char *item, const char *check,
		const char *fmt, ...) MGPU_PRINTF(5, 6);

static void row(struct report *r, const char *section, const char *item, const char *check,
		const char *fmt, ...)
{
	char value[400];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(value, sizeof value, fmt, ap);
	va_end(ap);
	if (r->out->tty) {
		if (strcmp(r->section, section) != 0)
			fprintf(r->out->fp, "%s%s\n", r->section[0] ? "\n" : "", section);
		snprintf(r->section, sizeof r->section, "%s", section);
		if (check)
			fprintf(r->out->fp, "  [%s] %-22s %s\n", strcmp(check, "pass") ? "FAIL" : "pass",
				item, value);
		else
			fprintf(r->out->fp, "  %-22s %s\n", item, value);
		return;
	}
	mgpu_table_str(&r->t, "section", section);
	mgpu_table_str(&r->t, "item", item);
	mgpu_table_str(&r->t, "value", value);
	if (check)
		mgpu_table_str(&r->t, "check", check);
	if (mgpu_table_emit(&r->t) < 0)
		out_fail(r->out);
}

static const char *cuda_version(int v, char *buf, size_t len)
{
	if (v < 0)
		snprintf(buf, len, "NA (built without CUDA)");
	else if (v == 0)
		snprintf(buf, len, "none (no NVIDIA driver)");
	else
		snprintf(buf, len, "%d.%d", v / 1000, (v % 1000) / 10);
	return buf;
}

static double gib(int64_t b)
{
	return (double)b / (1024.0 * 1024 * 1024);
}

static void report_versions(struct report *r, const struct mgpu_gpu_system *s)
{
	char b[64];
	int v = s->nccl_version;

	row(r, "versions", "cuda_driver", NULL, "%s", cuda_version(s->cuda_driver_version, b, sizeof b));
	row(r, "versions", "cuda_runtime", NULL, "%s",
	    cuda_version(s->cuda_runtime_version, b, sizeof b));
	if (s->cublas_version[0] >= 0)
		row(r, "versions", "cublas", NULL, "%d.%d.%d", s->cublas_version[0],
		    s->cublas_version[1], s->cublas_version[2]);
	else
		row(r, "versions", "cublas", NULL, "NA (%s)", s->cuda_runtime_version < 0 ?
		    "built without CUDA" : "libcublas is not loadable");
	if (v >= 0)
		row(r, "versions", "nccl", NULL, "%d.%d.%d", v / 10000, (v / 100) % 100, v % 100);
	else
		row(r, "versions", "nccl", NULL, "NA (%s)", s->nccl_why);
	if (s->nvml_driver[0])
		row(r, "versions", "nvidia_driver", NULL, "%s (NVML)", s->nvml_driver);
	else
		row(r, "versions", "nvidia_driver", NULL, "NA (%s)",
		    s->nvml_why[0] ? s->nvml_why : "NVML gave no version");
	if (mgpu_gpu_build_archs()[0])
		row(r, "versions", "cuda_archs", NULL, "%s", mgpu_gpu_build_archs());
	else
		row(r, "versions", "cuda_archs", NULL, "NA (built without CUDA)");
}

/* "8.6", or "?" where the source did not say (a --from CSV). */
static const char *known_cc(const struct mgpu_gpu *g, char *buf, size_t len)
{
	if (g->cc_major < 0)
		return "?";
	snprintf(buf, len, "%d.%d", g->cc_major, g->cc_minor);
	return buf;
}

static const char *known_int(int v, char *buf, size_t len)
{
	if (v < 0)
		return "?";
	snprintf(buf, len, "%d", v);
	return buf;
}

static void report_gpus(struct report *r, const struct mgpu_gpu_list *list,
			const struct mgpu_gpu_system *s, const char *from)
{
	const struct mgpu_gpu *g;
	char item[32], cc[16], sms[16];
	int i;

	row(r, "gpus", "cuda_visible_devices", NULL, "%s",
	    getenv("CUDA_VISIBLE_DEVICES") ? getenv("CUDA_VISIBLE_DEVICES") : "(unset)");
	if (from)
		row(r, "gpus", "cuda_gpus", NULL, "%d (from '%s')%s%s", list->nvisible, from,
		    list->why[0] ? ": " : "", list->why);
	else
		row(r, "gpus", "cuda_gpus", NULL, "%d%s%s", list->nvisible,
		    list->why[0] ? ": " : "", list->why);
	if (s->nvml_gpus >= 0)
		row(r, "gpus", "nvml_gpus", NULL, "%d (all GPUs, before CUDA_VISIBLE_DEVICES)",
		    s->nvml_gpus);
	for (i = 0; i < list->nvisible; i++) {
		g = &list->gpu[i];
		snprintf(item, sizeof item, "gpu %d", i);
		row(r, "gpus", item, NULL, "%s, %.1f GiB, cc %s, %s SMs, PCI %s, %s", g->name,
		    gib(g->mem_total_bytes), known_cc(g, cc, sizeof cc),
		    known_int(g->sm_count, sms, sizeof sms), g->pci_bus_id, g->uuid);
	}
}

static const char *link_word(int v)
{
	return v == 1 ? "yes" : v == 0 ? "no" : "unknown";
}

/* The P2P matrix: a grid on a terminal, one row per ordered pair else. */
static void report_p2p(struct report *r, const struct mgpu_gpu_system *s)
{
	char item[32];
	int i, j;

	if (s->ngpus < 2) {
		row(r, "p2p", "pairs", NULL, "none (%d GPU%s visible)", s->ngpus,
		    s->ngpus == 1 ? "" : "s");
		return;
	}
	if (r->out->tty) {
		fprintf(r->out->fp, "\np2p (cudaDeviceCanAccessPeer; +nvl: NVLink per NVML)\n     ");
		snprintf(r->section, sizeof r->section, "p2p");
		for (j = 0; j < s->ngpus; j++)
			fprintf(r->out->fp, " %-7d", j);
		for (i = 0; i < s->ngpus; i++) {
			fprintf(r->out->fp, "\n  %-3d", i);
			for (j = 0; j < s->ngpus; j++)
				fprintf(r->out->fp, " %-3s%-4s", i == j ? "-" : link_word(s->p2p[i][j]),
					s->nvlink[i][j] == 1 ? "+nvl" : "");
		}
		fputc('\n', r->out->fp);
		return;
	}
	for (i = 0; i < s->ngpus; i++)
		for (j = 0; j < s->ngpus; j++)
			if (i != j) {
				snprintf(item, sizeof item, "%d->%d", i, j);
				row(r, "p2p", item, NULL, "%s%s", link_word(s->p2p[i][j]),
				    s->nvlink[i][j] == 1 ? " nvlink" : "");
			}
}

static void report_host(struct report *r, const struct mgpu_gpu_system *s,
			const struct mgpu_gpu_blas *b)
{
	row(r, "host", "cpu_model", NULL, "%s", s->cpu_model[0] ? s->cpu_model : "NA");
	row(r, "host", "cpu_cores", NULL, "%d", s->cpu_cores);
	if (s->mem_total_bytes >= 0)
		row(r, "host", "memory", NULL, "%.1f GiB total, %.1f GiB available",
		    gib(s->mem_total_bytes), gib(s->mem_avail_bytes));
	if (s->shm_total_bytes >= 0)
		row(r, "host", "dev_shm", NULL, "%.1f GiB total, %.1f GiB free",
		    gib(s->shm_total_bytes), gib(s->shm_free_bytes));
	else
		row(r, "host", "dev_shm", NULL, "missing");
	row(r, "host", "cpu_vector", NULL, "%s", b->cpu_features[0] ? b->cpu_features :
	    b->cpu_simd == MGPU_SIMD_UNKNOWN ? "unknown" : "no AVX");
	row(r, "host", "blas_core", NULL, "%s (%s)", b->core, b->config);
	row(r, "host", "blas_threads", NULL, "%d in each CPU rank of mgpu-train, %d in this "
	    "process%s", b->rank_threads, b->threads, getenv("OPENBLAS_NUM_THREADS") ?
	    " (OPENBLAS_NUM_THREADS)" : "");
}

/* One check per visible GPU: does this binary carry code it runs? */
static void code_check(struct report *r, int i, const struct mgpu_gpu *g)
{
	const char *archs = mgpu_gpu_build_archs();
	struct mgpu_gpu_fit fit;
	char item[32], cc[16];

	snprintf(item, sizeof item, "gpu_%d_code", i);
	snprintf(cc, sizeof cc, "cc %d.%d", g->cc_major, g->cc_minor);
	if (!archs[0]) {
		row(r, "checklist", item, "fail", "%s: this binary is built without CUDA "
		    "(rebuild where nvcc is found)", g->cc_major >= 0 ? cc : "cc unknown");
		return;
	}
	if (g->cc_major < 0 || mgpu_gpu_code_fit(g->cc_major, g->cc_minor, archs, &fit) < 0) {
		row(r, "checklist", item, "fail", "compute capability unknown; this binary has "
		    "%s", archs);
		return;
	}
	if (fit.code == MGPU_GPU_CODE_SASS)
		row(r, "checklist", item, "pass", "%s: SASS sm_%d%s", cc, fit.arch, fit.exact ? "" :
		    " (binary-compatible within the major version)");
	else if (fit.code == MGPU_GPU_CODE_PTX)
		row(r, "checklist", item, "pass", "%s: PTX compute_%d, compiled by the driver at "
		    "first use (slow start; rebuild with CUDA_ARCHS=%d%d for SASS)", cc, fit.arch,
		    g->cc_major, g->cc_minor);
	else
		row(r, "checklist", item, "fail", "%s: no code for it in this binary (%s); rebuild "
		    "with CUDA_ARCHS=%d%d if nvcc supports it", cc, archs, g->cc_major,
		    g->cc_minor);
}

static void report_checks(struct report *r, const struct mgpu_gpu_list *list,
			  const struct mgpu_gpu_system *s, const struct mgpu_gpu_blas *b)
{
	int drv = s->cuda_driver_version, rt = s->cuda_runtime_version;
	int shm_ok = s->shm_free_bytes >= SHM_MIN_BYTES;
	char d[40], t[40];

	int i;

	row(r, "checklist", "gpus_visible", list->nvisible ? "pass" : "fail", "%d GPU%s%s%s",
	    list->nvisible, list->nvisible == 1 ? "" : "s", list->why[0] ? ": " : "", list->why);
	for (i = 0; i < list->nvisible; i++)
		code_check(r, i, &list->gpu[i]);
	row(r, "checklist", "driver_supports_runtime", drv > 0 && drv >= rt ? "pass" : "fail",
	    "driver supports CUDA %s, runtime is %s", cuda_version(drv, d, sizeof d),
	    cuda_version(rt, t, sizeof t));
	if (s->nccl_version >= 0)
		row(r, "checklist", "nccl_loadable", "pass", "libnccl.so.2 %d.%d.%d",
		    s->nccl_version / 10000, (s->nccl_version / 100) % 100, s->nccl_version % 100);
	else
		row(r, "checklist", "nccl_loadable", "fail", "%s", s->nccl_why);
	row(r, "checklist", "rendezvous_port_free", s->port_free ? "pass" : "fail",
	    "127.0.0.1:%d%s%s", s->port, s->port_free ? " can be bound" : ": ", s->port_why);
	row(r, "checklist", "shm_large_enough", shm_ok ? "pass" : "fail",
	    "/dev/shm %.0f MiB free, want >= %lld MiB",
	    s->shm_free_bytes >= 0 ? (double)s->shm_free_bytes / 1048576 : 0.0, SHM_MIN_BYTES >> 20);
	row(r, "checklist", "blas_fits_cpu", b->fits < 0 ? NULL : b->fits ? "pass" : "fail", "%s",
	    b->verdict);
}

/* The GPUs and the facts of this machine. With --from the GPUs are those
 * of the CSV: nothing is asked of this machine's GPUs (its P2P matrix
 * would describe other cards), so the P2P rows are unknown. */
static void gather(const struct opts *o, struct mgpu_gpu_list *list, struct mgpu_gpu_system *s)
{
	static struct mgpu_gpu_list none;

	if (!o->from) {
		if (mgpu_gpu_enumerate(list) < 0 || mgpu_gpu_system(list, s) < 0)
			die_lib();
		return;
	}
	load_list(o, list);
	if (mgpu_gpu_system(&none, s) < 0)
		die_lib();
	s->ngpus = list->nvisible;
}

int system_report(const struct opts *o)
{
	static struct mgpu_gpu_list list;
	static struct mgpu_gpu_system s;
	struct mgpu_gpu_blas b;
	struct report r;
	struct out out;

	gather(o, &list, &s);
	mgpu_gpu_blas_host(&b);
	out_open(&out, o);
	memset(&r, 0, sizeof r);
	r.out = &out;
	mgpu_table_init(&r.t, out.fp, o->com.format, sys_cols, 4);
	report_versions(&r, &s);
	report_gpus(&r, &list, &s, o->from);
	report_p2p(&r, &s);
	report_host(&r, &s, &b);
	report_checks(&r, &list, &s, &b);
	out_close(&out);
	/* stdout may be a file nobody reads soon: a slow BLAS deserves a word now */
	if (b.fits == 0 && !o->com.quiet)
		warn("%s", b.verdict);
	return 0;
}

