/*
 * lm.c - tokens, model FLOPs, device peaks and the memory estimate of a gpt
 * workload for `mgpu-bench train` (the formulas are in lm.h).
 */
#include "bench/lm.h"

#include <math.h>   /* NAN */
#include <stdio.h>  /* snprintf, fopen, getline */
#include <stdlib.h> /* strtod, free */
#include <string.h> /* strncmp, strstr, strchr, strdup */

#include "core/cli.h"  /* mgpu_cli_int */
#include "core/err.h"  /* mgpu_err */
#include "gpu/gpu.h"   /* mgpu_gpu_cpu_simd, MGPU_SIMD_* */
#include "model/model.h"  /* mgpu_model_count */
#include "ops/attn_gemm.h"   /* a GPU attention's (T,T) scratch */
#include "train/optim.h"  /* mgpu_optim_nstate_for */
#include "train/train.h"  /* mgpu_train_defaults */

void mgpu_bench_peak_cpu(const char *flags, double mhz, const char *clock_src,
			 struct mgpu_bench_peak *p)
{
	/* fp32 FLOPs per cycle of one core with two vector pipes: FMA counts 2 */
	static const struct {
		int per_cycle;
		const char *why;
	} tiers[] = {
		{ 8, "SSE: 4-lane add + multiply" },
		{ 16, "AVX: 8-lane add + multiply" },
		{ 32, "AVX2 + FMA: 2 FMA pipes x 8 lanes x 2" },
		{ 64, "AVX-512: 2 FMA pipes x 16 lanes x 2" },
	};
	char names[160];
	int t = mgpu_gpu_cpu_simd(flags ? flags : "", names, sizeof names);

	if (t < MGPU_SIMD_SSE || t > MGPU_SIMD_AVX512)
		t = MGPU_SIMD_SSE;
	if (!(mhz > 0)) {
		p->flops = 0;
		snprintf(p->how, sizeof p->how, "CPU clock unknown (%s)", clock_src);
		return;
	}
	p->flops = mhz * 1e6 * tiers[t].per_cycle;
	snprintf(p->how, sizeof p->how, "1 core x %.2f GHz (%s) x %d FLOP/cycle (%s) = %.1f "
		 "GFLOP/s", mhz / 1e3, clock_src, tiers[t].per_cycle, tiers[t].why,
		 p->flops / 1e9);
}

/* The value after "key" and a colon on a /proc/cpuinfo line, or NULL. */
static const char *field(const char *line, const char *key)
{
	size_t n = strlen(key);
	const char *c;

	if (strncmp(line, key, n) != 0 || !(c = strchr(line + n, ':')))
		return NULL;
	return c + 1;
}

void mgpu_bench_peak_cpu_host(struct mgpu_bench_peak *p)
{
	FILE *f = fopen("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq", "r");
	char *line = NULL, *flags = NULL;
	const char *src = "cpu MHz of /proc/cpuinfo";
	double mhz = 0, khz = 0;
	size_t cap = 0;
	const char *v;

	if (f && fscanf(f, "%lf", &khz) == 1 && khz > 0) {
		mhz = khz / 1e3;
		src = "cpufreq's cpuinfo_max_freq";
	}
	if (f)
		fclose(f);
	f = fopen("/proc/cpuinfo", "r");
	while (f && getline(&line, &cap, f) > 0 && (!flags || !(mhz > 0))) {
		if (!flags && (v = field(line, "flags")))
			flags = strdup(v);
		if (!(mhz > 0) && (v = field(line, "cpu MHz")))
			mhz = strtod(v, NULL);
	}
	if (f)
		fclose(f);
	mgpu_bench_peak_cpu(flags, mhz, src, p);
	free(line);
	free(flags);
}

void mgpu_bench_peak_gpu(const char *name, int bf16, struct mgpu_bench_peak *p)
{
	/* dense TFLOP/s from the datasheets; the more specific names first */
	static const struct {
		const char *match, *label;
		double bf16, fp32;
	} gpus[] = {
		{ "H100 PCIe", "H100 PCIe", 756, 51 },
		{ "H100 NVL", "H100 NVL", 835, 60 },
		{ "H100", "H100 SXM", 989, 67 },
		{ "H200", "H200", 989, 67 },
		{ "A100", "A100", 312, 19.5 },
		{ "L40S", "L40S", 362, 91.6 },
		{ "L4", "L4", 121, 30.3 },
		{ "T4", "T4 (fp16, no bf16)", 65, 8.1 },
	};
	size_t i;

	for (i = 0; i < sizeof gpus / sizeof gpus[0]; i++)
		if (strstr(name, gpus[i].match)) {
			p->flops = 1e12 * (bf16 ? gpus[i].bf16 : gpus[i].fp32);
			snprintf(p->how, sizeof p->how, "%s %s dense %.4g TFLOP/s (datasheet)",
				 gpus[i].label, bf16 ? "bf16 tensor-core" : "fp32",
				 bf16 ? gpus[i].bf16 : gpus[i].fp32);
			return;
		}
	p->flops = 0;
	snprintf(p->how, sizeof p->how, "'%s' is not in mgpu-bench's table of GPU peaks", name);
}

double mgpu_bench_gpt_flops_per_token(const struct mgpu_spec *s)
{
	double n, L = s->blocks, T = s->ctx, D = s->dim;

	if (!mgpu_spec_is_lm(s))
		return 0;
	/* the position table is only added; padding rows are in no product */
	n = (double)mgpu_model_count(s) - T * D;
	if (s->padded_vocab > s->vocab)
		n -= (double)(s->padded_vocab - s->vocab) * D;
	return 6 * n + 12 * L * T * D;
}

/* The bytes of bf16 copies a bf16 model adds (lm.h): the weights', and the
 * two scratch buffers of the largest non-weight operands. */
static double bf16_copies(const struct mgpu_spec *s, double n, int B)
{
	double T = s->ctx, D = s->dim, V = s->vocab;
	double second = 4 * D > V ? 4 * D : V;

	return 2 * (n + B * T * (4 * D + second));
}

int64_t mgpu_bench_gpt_mem_estimate(const struct mgpu_spec *s, int B, int nstate, int share,
				    int bf16)
{
	double n = (double)mgpu_model_count(s), L = s->blocks, T = s->ctx, D = s->dim;
	double H = s->heads, V = s->vocab, floats;

	if (!mgpu_spec_is_lm(s) || B < 1 || share < 1)
		return -1;
	floats = n + n * (1 + nstate) / share;                 /* gradients; weights, state */
	/* activations; the backward's scratch; ids, targets, row loss, correct */
	floats += (double)B * T * (L * (16 * D + H) + 2 * D + V + 11 * D + 4);
	return (int64_t)(4 * floats + (bf16 ? bf16_copies(s, n, B) : 0));
}

/* The value of the last --name V or --name=V in argv, or NULL. */
static const char *last_value(const char *const *argv, const char *name)
{
	size_t n = strlen(name);
	const char *v = NULL;
	int i;

	for (i = 0; argv[i]; i++) {
		if (strncmp(argv[i], "--", 2) != 0 || strncmp(argv[i] + 2, name, n) != 0)
			continue;
		if (argv[i][2 + n] == '=')
			v = argv[i] + 3 + n;
		else if (argv[i][2 + n] == '\0' && argv[i + 1])
			v = argv[i + 1];
	}
	return v;
}

int mgpu_bench_workload_parse(const char *const *argv, struct mgpu_bench_workload *w)
{
	static struct mgpu_train_cfg c; /* large: not on the stack */
	const char *v;
	long long accum = 1;

	mgpu_train_defaults(&c);
	if ((v = last_value(argv, "model")))
		MGPU_TRY(mgpu_spec_load(&c.spec, v));
	if ((v = last_value(argv, "optimizer")))
		c.optim.kind = strcmp(v, "adamw") == 0 ? MGPU_OPT_ADAMW : MGPU_OPT_SGD;
	if ((v = last_value(argv, "momentum")))
		c.optim.momentum = strtof(v, NULL);
	if ((v = last_value(argv, "grad-accum-steps")))
		MGPU_TRY(mgpu_cli_int("--grad-accum-steps", v, 1, 1 << 20, &accum));
	w->accum = (int)accum;
	v = mgpu_bench_argv_dtype(argv);
	w->bf16 = v && strcmp(v, "bf16") == 0;
	w->spec = c.spec;
	w->nstate = mgpu_optim_nstate_for(&c.optim);
	return 0;
}

void mgpu_bench_lm_fill(struct mgpu_bench_trow *r, const struct mgpu_bench_workload *w,
			const struct mgpu_bench_peak *pk)
{
	int dp = strcmp(r->mode, "dp") == 0, cpu = strcmp(r->kind, "cpu") == 0;
	int64_t per = (int64_t)r->devices * w->accum;

	r->ctx = 0;
	r->tokens_per_s = r->flops_per_token = r->peak_flops = r->mfu = NAN;
	r->mem_est_bytes = -1;
	r->peak_how[0] = '\0';
	if (!mgpu_spec_is_lm(&w->spec))
		return;
	r->ctx = w->spec.ctx;
	r->tokens_per_s = r->samples_per_s * r->ctx;
	r->flops_per_token = mgpu_bench_gpt_flops_per_token(&w->spec);
	snprintf(r->peak_how, sizeof r->peak_how, "%s", pk->how);
	if (pk->flops > 0) {
		r->peak_flops = pk->flops;
		r->mfu = r->tokens_per_s * r->flops_per_token / (r->devices * pk->flops);
	}
	if (!dp && r->effective_batch > 0 && r->effective_batch % per == 0) {
		int B = (int)(r->effective_batch / per), H = w->spec.heads;

		r->mem_est_bytes = mgpu_bench_gpt_mem_estimate(
			&w->spec, B, w->nstate, cpu && r->devices > 1 ? r->devices : 1, w->bf16);
		/* a GPU's attention over long contexts: (T,T) scratch (attn_gemm.h) */
		if (!cpu && H > 0 && mgpu_attn_gemm_takes(B * H, w->spec.ctx))
			r->mem_est_bytes += (int64_t)mgpu_attn_gemm_scratch_bytes(
				B * H, w->spec.ctx, w->spec.dim / H, w->bf16);
	}
}
