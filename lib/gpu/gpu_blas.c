/*
 * gpu_blas.c - which kernels OpenBLAS chose on this host, and whether they
 * fit the CPU's vector features: the check of `mgpu-probe --system` that
 * explains a CPU rank running at a sixth of its speed.
 *
 * Provides mgpu_gpu_blas_host, mgpu_gpu_blas_core, mgpu_gpu_blas_threads,
 * mgpu_gpu_blas_rank_threads and the pure mgpu_gpu_cpu_simd, mgpu_gpu_blas_core_simd and
 * mgpu_gpu_blas_verdict (gpu.h).
 *
 * Why: OpenBLAS built with DYNAMIC_ARCH (Debian's) picks its kernels at
 * load time from CPUID. Virtual machines often hide features, and an
 * OpenBLAS older than the CPU does not know its model; either way it falls
 * back to older kernels (Haswell on an AVX-512 Xeon, Sandybridge or a
 * generic SSE kernel on an AVX2 machine) and the GEMMs lose most of their
 * speed. OPENBLAS_CORETYPE=<core> overrides the choice. The tiers below
 * follow OpenBLAS's x86-64 kernel families; cores of other architectures
 * are not judged.
 */
#include <cblas.h>   /* openblas_get_corename, openblas_get_num_threads */
#include <stdio.h>   /* getline */
#include <stdlib.h>  /* free */
#include <string.h>  /* strstr, strchr */
#include <strings.h> /* strcasecmp */

#include "gpu/gpu.h" /* struct mgpu_gpu_blas, MGPU_SIMD_* */
#include "ops/ops.h" /* mgpu_dev_open, mgpu_ops_cpu */

/* Does the space-separated flags line hold the word w? */
static int has_flag(const char *flags, const char *w)
{
	size_t n = strlen(w);
	const char *p = flags;

	while ((p = strstr(p, w)) != NULL) {
		if ((p == flags || p[-1] == ' ' || p[-1] == '\t' || p[-1] == ':') &&
		    (p[n] == '\0' || p[n] == ' ' || p[n] == '\t' || p[n] == '\n'))
			return 1;
		p += n;
	}
	return 0;
}

int mgpu_gpu_cpu_simd(const char *flags, char *names, size_t len)
{
	static const char *const shown[] = { "sse4_2", "avx", "avx2", "fma", "avx512f",
					     "avx512bw", "avx512vl", "avx512dq", "avx512_bf16",
					     "amx_tile" };
	size_t i, o = 0;
	int tier = MGPU_SIMD_SSE;

	if (len)
		names[0] = '\0';
	for (i = 0; i < sizeof shown / sizeof shown[0]; i++)
		if (has_flag(flags, shown[i]) && o < len)
			o += (size_t)snprintf(names + o, len - o, "%s%s", o ? " " : "", shown[i]);
	if (has_flag(flags, "avx"))
		tier = MGPU_SIMD_AVX;
	if (tier == MGPU_SIMD_AVX && has_flag(flags, "avx2") && has_flag(flags, "fma"))
		tier = MGPU_SIMD_AVX2;
	if (tier == MGPU_SIMD_AVX2 && has_flag(flags, "avx512f") && has_flag(flags, "avx512bw") &&
	    has_flag(flags, "avx512vl") && has_flag(flags, "avx512dq"))
		tier = MGPU_SIMD_AVX512;
	return tier;
}

int mgpu_gpu_blas_core_simd(const char *core)
{
	static const struct {
		const char *name;
		int tier;
	} cores[] = {
		{ "SkylakeX", MGPU_SIMD_AVX512 }, { "CooperLake", MGPU_SIMD_AVX512 },
		{ "SapphireRapids", MGPU_SIMD_AVX512 }, { "Haswell", MGPU_SIMD_AVX2 },
		{ "Zen", MGPU_SIMD_AVX2 }, { "Excavator", MGPU_SIMD_AVX2 },
		{ "Sandybridge", MGPU_SIMD_AVX }, { "Bulldozer", MGPU_SIMD_AVX },
		{ "Piledriver", MGPU_SIMD_AVX }, { "Steamroller", MGPU_SIMD_AVX },
		{ "Prescott", MGPU_SIMD_SSE }, { "Core2", MGPU_SIMD_SSE },
		{ "Penryn", MGPU_SIMD_SSE }, { "Dunnington", MGPU_SIMD_SSE },
		{ "Nehalem", MGPU_SIMD_SSE }, { "Atom", MGPU_SIMD_SSE },
		{ "Opteron", MGPU_SIMD_SSE }, { "Opteron(SSE3)", MGPU_SIMD_SSE },
		{ "Barcelona", MGPU_SIMD_SSE }, { "Bobcat", MGPU_SIMD_SSE },
		{ "Nano", MGPU_SIMD_SSE }, { "Katmai", MGPU_SIMD_SSE },
		{ "Coppermine", MGPU_SIMD_SSE }, { "Northwood", MGPU_SIMD_SSE },
		{ "Banias", MGPU_SIMD_SSE }, { "Athlon", MGPU_SIMD_SSE },
	};
	size_t i;

	/* Dynamic builds say "Haswell", single-target builds "HASWELL". */
	for (i = 0; i < sizeof cores / sizeof cores[0]; i++)
		if (strcasecmp(core, cores[i].name) == 0)
			return cores[i].tier;
	return MGPU_SIMD_UNKNOWN;
}

static const char *tier_name(int tier)
{
	static const char *const names[] = { "SSE only", "AVX", "AVX2 and FMA", "AVX-512" };

	return tier >= 0 && tier <= MGPU_SIMD_AVX512 ? names[tier] : "unknown";
}

/* The OPENBLAS_CORETYPE value whose kernels a CPU of this tier runs best. */
static const char *core_for(int tier)
{
	static const char *const names[] = { "Prescott", "Sandybridge", "Haswell", "SkylakeX" };

	return names[tier];
}

int mgpu_gpu_blas_verdict(const char *core, const char *flags, char *msg, size_t len)
{
	int have = mgpu_gpu_blas_core_simd(core), want;
	char names[160];

	want = mgpu_gpu_cpu_simd(flags, names, sizeof names);
	if (have == MGPU_SIMD_UNKNOWN) {
		snprintf(msg, len, "OpenBLAS core '%s' is not an x86-64 core this check knows; "
			 "not judged", core);
		return -1;
	}
	if (have == want) {
		snprintf(msg, len, "OpenBLAS %s kernels (%s) for a CPU with %s", core,
			 tier_name(have), tier_name(want));
		return 1;
	}
	if (have < want)
		snprintf(msg, len, "OpenBLAS chose %s kernels (%s) but the CPU has %s: GEMMs run "
			 "several times slower; set OPENBLAS_CORETYPE=%s", core, tier_name(have),
			 tier_name(want), core_for(want));
	else
		snprintf(msg, len, "OpenBLAS uses %s kernels (%s) but the CPU reports only %s: "
			 "expect illegal instructions; unset OPENBLAS_CORETYPE or set it to %s",
			 core, tier_name(have), tier_name(want), core_for(want));
	return 0;
}

const char *mgpu_gpu_blas_core(void)
{
	const char *c = openblas_get_corename();

	return c && c[0] ? c : "unknown";
}

int mgpu_gpu_blas_threads(void)
{
	return openblas_get_num_threads();
}

/* Asked of the CPU backend itself, so the figure follows what it does. */
int mgpu_gpu_blas_rank_threads(void)
{
	struct mgpu_dev dev;
	int before = openblas_get_num_threads(), n;

	if (mgpu_dev_open(&dev, &mgpu_ops_cpu, 0) < 0)
		return -1;
	n = openblas_get_num_threads();
	mgpu_dev_close(&dev);
	openblas_set_num_threads(before);
	return n;
}

/* The "flags" line of the first CPU in /proc/cpuinfo, or "" (not Linux x86). */
static void cpu_flags(char *buf, size_t len)
{
	FILE *fp = fopen("/proc/cpuinfo", "r");
	char *line = NULL;
	size_t cap = 0;

	buf[0] = '\0';
	while (fp && getline(&line, &cap, fp) > 0)
		if (strncmp(line, "flags", 5) == 0 && strchr(line, ':')) {
			snprintf(buf, len, "%s", strchr(line, ':') + 1);
			break;
		}
	free(line);
	if (fp)
		fclose(fp);
}

void mgpu_gpu_blas_host(struct mgpu_gpu_blas *b)
{
	char flags[8192];
	const char *cfg = openblas_get_config();

	memset(b, 0, sizeof *b);
	snprintf(b->core, sizeof b->core, "%s", mgpu_gpu_blas_core());
	snprintf(b->config, sizeof b->config, "%s", cfg ? cfg : "");
	b->threads = mgpu_gpu_blas_threads();
	b->rank_threads = mgpu_gpu_blas_rank_threads();
	cpu_flags(flags, sizeof flags);
	if (!flags[0]) {
		b->cpu_simd = MGPU_SIMD_UNKNOWN;
		b->fits = -1;
		snprintf(b->verdict, sizeof b->verdict, "no CPU flags in /proc/cpuinfo; not judged");
		return;
	}
	b->cpu_simd = mgpu_gpu_cpu_simd(flags, b->cpu_features, sizeof b->cpu_features);
	b->fits = mgpu_gpu_blas_verdict(b->core, flags, b->verdict, sizeof b->verdict);
}
