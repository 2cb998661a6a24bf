/*
 * gpu_arch.c - which of the GPU code in this binary a GPU can run: the
 * architectures the build compiled (MGPU_CUDA_ARCHS, written into
 * config.h by mk/configure.sh) and the pure rule that matches them to a
 * compute capability.
 *
 * Provides mgpu_gpu_build_archs and mgpu_gpu_code_fit (gpu.h). The rule is
 * CUDA's own: a cubin for sm_XY runs on compute capability X.Z with Z >= Y
 * (same major: sm_80 code runs on an 8.6 card, never on 9.0); an
 * arch-specific cubin (sm_90a) only on exactly X.Y; PTX for compute_XY is
 * compiled by the driver for any GPU of X.Y or newer. The driver takes a
 * fitting cubin before it compiles PTX, so SASS wins when both fit.
 */
#include <ctype.h>  /* isdigit */
#include <stdio.h>  /* snprintf */
#include <string.h> /* memset, strncmp */

#include "config.h"   /* MGPU_CUDA_ARCHS */
#include "core/err.h" /* mgpu_err */
#include "gpu/gpu.h"  /* struct mgpu_gpu_fit */

const char *mgpu_gpu_build_archs(void)
{
	return MGPU_CUDA_ARCHS;
}

/* One word of an arch list: "sm_86", "sm_90a" or "compute_120". */
struct arch_word {
	int ptx;      /* 1: compute_XY (PTX), 0: sm_XY (SASS) */
	int version;  /* XY: 10 * major + minor */
	int exact;    /* the 'a' suffix: this compute capability only */
};

static int parse_word(const char *w, size_t len, struct arch_word *a)
{
	size_t i, pre;

	memset(a, 0, sizeof *a);
	if (len > 3 && strncmp(w, "sm_", 3) == 0)
		pre = 3;
	else if (len > 8 && strncmp(w, "compute_", 8) == 0)
		pre = 8, a->ptx = 1;
	else
		return MGPU_EINVAL;
	for (i = pre; i < len && isdigit((unsigned char)w[i]) && i < pre + 4; i++)
		a->version = 10 * a->version + (w[i] - '0');
	if (i == pre || a->version < 10)
		return MGPU_EINVAL;
	if (i < len && (w[i] == 'a' || w[i] == 'f'))
		a->exact = w[i++] == 'a';
	return i == len ? 0 : MGPU_EINVAL;
}

/* Whether code a runs on compute capability cc (10 * major + minor). */
static int runs_on(const struct arch_word *a, int cc)
{
	if (a->ptx)
		return cc >= a->version;
	if (a->exact)
		return cc == a->version;
	return cc / 10 == a->version / 10 && cc % 10 >= a->version % 10;
}

/* Keep a in fit when it runs on cc and beats what fit holds. */
static void consider(const struct arch_word *a, int cc, struct mgpu_gpu_fit *fit)
{
	int kind = a->ptx ? MGPU_GPU_CODE_PTX : MGPU_GPU_CODE_SASS;

	if (!runs_on(a, cc))
		return;
	if (fit->code == MGPU_GPU_CODE_SASS && kind == MGPU_GPU_CODE_PTX)
		return;
	if (fit->code == kind && a->version <= fit->arch)
		return;
	fit->code = kind;
	fit->arch = a->version;
	fit->exact = !a->ptx && a->version == cc;
}

int mgpu_gpu_code_fit(int cc_major, int cc_minor, const char *archs, struct mgpu_gpu_fit *fit)
{
	struct arch_word a;
	const char *p = archs, *w;
	int cc = 10 * cc_major + cc_minor;

	memset(fit, 0, sizeof *fit);
	fit->code = MGPU_GPU_CODE_NONE;
	if (cc_major < 1 || cc_minor < 0 || cc_minor > 9)
		return mgpu_err(MGPU_EINVAL, "compute capability %d.%d is not valid", cc_major,
				cc_minor);
	while (*p) {
		while (*p == ' ' || *p == ',')
			p++;
		for (w = p; *p && *p != ' ' && *p != ','; p++)
			;
		if (p == w)
			break;
		if (parse_word(w, (size_t)(p - w), &a) < 0)
			return mgpu_err(MGPU_EINVAL, "GPU code list: '%.*s' is not sm_XY or "
					"compute_XY", (int)(p - w), w);
		consider(&a, cc, fit);
	}
	return 0;
}
