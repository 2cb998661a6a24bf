/*
 * selftest.c - mgpu-train --selftest (see selftest.h): the check a user
 * runs on a new GPU machine. Each backend's ops go through the conformance
 * comparison (ops/check.h), then five AdamW steps of a small MLP run on
 * both backends from the same weights and data, in fp32, bf16 and fp16,
 * and of a small conv net (ResNet blocks, dropout; SGD with momentum) in
 * fp32 and bf16.
 */
#include "selftest.h"

#include <math.h>   /* fabs, fmax */
#include <stdlib.h> /* malloc, free */
#include <string.h> /* memset */

#include "../common.h"  /* die_lib, note */
#include "core/hash.h"  /* mgpu_hash64 */
#include "core/table.h" /* struct mgpu_table */
#include "model/model.h"   /* mgpu_model_* */
#include "train/optim.h"   /* mgpu_optim_* */
#include "model/spec.h"    /* mgpu_spec_parse */
#include "ops/check.h"  /* mgpu_ops_compare */
#include "ops/ops_cpu.h" /* mgpu_cpu_bf16_gemm_path */

/* bf16 rounds each backend's slightly different fp32 weights to bf16, and
 * a weight on either side of a rounding boundary moves by 2^-9: the five
 * steps agree less closely than in fp32. */
#define BF16_STEPS_TOL 1e-2
/* fp16 the same with a boundary's step of 2^-12 (and no loss scaling in
 * these five steps, whose gradients stay well inside fp16's range). */
#define FP16_STEPS_TOL 2e-3

/* The trained models: 48 features of a sample (a conv net's 3 x 4 x 4),
 * 5 classes. */
static const char *const mlp_spec = "mlp:48-32-24-5,act=gelu,layernorm,dropout=0.1";
static const char *const cnn_spec = "cnn:input 3 4 4; conv 8 k=3 p=1; bn; relu; res 8; "
				    "res 12 s=2; gap; dropout 0.1; linear 5";

/* A few AdamW steps of a small model (spec) on both backends from the same
 * weights and seeded data: the relative difference of the final weights. */
static int steps_compare(const struct mgpu_ops *a, const struct mgpu_ops *b, const char *text,
			 int prec, double *rel)
{
	struct mgpu_spec spec;
	struct mgpu_dev dev[2];
	struct mgpu_model m[2];
	struct mgpu_optim opt[2];
	struct mgpu_optim_cfg oc = { .kind = MGPU_OPT_ADAMW, .beta1 = 0.9f, .beta2 = 0.999f,
				     .eps = 1e-8f, .weight_decay = 0.01f, .clip_norm = 1.0f };
	float lr = 1e-2f;
	uint8_t x[64 * 48];
	int32_t y[64];
	float *w[2] = { NULL, NULL };
	double l, c, num = 0, den = 0;
	int i, k, rc = 0;
	size_t j;

	if (mgpu_spec_parse(&spec, text, "selftest") < 0)
		return -1;
	if (text == cnn_spec) { /* AdamW would move every weight whose
				 * gradient is near 0 by lr, either way */
		memset(&oc, 0, sizeof oc);
		oc.kind = MGPU_OPT_SGD;
		oc.momentum = 0.9f;
		oc.clip_norm = 1.0f;
		lr = 0.05f;
	}
	for (j = 0; j < sizeof x; j++)
		x[j] = (uint8_t)(mgpu_hash64(7, j) & 255);
	for (i = 0; i < 64; i++)
		y[i] = (int32_t)(mgpu_hash64(8, (uint64_t)i) % 5);
	memset(m, 0, sizeof m);
	memset(opt, 0, sizeof opt);
	memset(dev, 0, sizeof dev);
	for (k = 0; k < 2 && rc == 0; k++) {
		rc = mgpu_dev_open(&dev[k], k ? b : a, 0);
		if (rc == 0)
			rc = mgpu_model_create(&m[k], &spec, &dev[k], 64);
		if (rc == 0)
			rc = mgpu_model_set_prec(&m[k], prec);
		if (rc == 0)
			rc = mgpu_model_init(&m[k], 42);
		if (rc == 0)
			rc = mgpu_optim_create(&opt[k], &m[k], &oc);
		for (i = 0; i < 5 && rc == 0; i++) {
			m[k].dropout_seed = (uint64_t)i;
			rc = mgpu_model_load_batch(&m[k], x, y, 64, 1.0f / 255, -0.5f);
			if (rc == 0)
				rc = mgpu_model_forward(&m[k], 64, 1);
			if (rc == 0)
				rc = mgpu_model_loss(&m[k], 64, 1, 1.0f / 64, &l, &c);
			if (rc == 0)
				rc = mgpu_model_backward(&m[k], 64, 0);
			if (rc == 0)
				rc = mgpu_optim_step(&opt[k], lr, 1.0f);
		}
		w[k] = malloc(m[k].nparams * sizeof(float) + 1);
		if (rc == 0 && w[k])
			rc = mgpu_model_get(&m[k], w[k]);
	}
	for (j = 0; rc == 0 && w[0] && w[1] && j < m[0].nparams; j++) {
		num = fmax(num, fabs((double)w[0][j] - w[1][j]));
		den = fmax(den, fabs((double)w[1][j]));
	}
	*rel = den > 0 ? num / den : num;
	for (k = 0; k < 2; k++) {
		mgpu_optim_free(&opt[k]);
		mgpu_model_free(&m[k]);
		if (dev[k].ops)
			mgpu_dev_close(&dev[k]);
		free(w[k]);
	}
	return rc;
}

/* The training row of spec in precision prec: 1 when it is out of
 * tolerance. */
static int steps_row(struct mgpu_table *t, const struct mgpu_ops *ops,
		     const struct mgpu_ops *ref, const char *spec, int prec, const char *name,
		     double tol)
{
	double rel;

	if (steps_compare(ops, ref, spec, prec, &rel) < 0)
		die_lib();
	mgpu_table_str(t, "op", name);
	mgpu_table_str(t, "shape", spec == mlp_spec ?
		       "mlp:48-32-24-5 gelu layernorm dropout adamw clip" :
		       "cnn:3x4x4 conv bn relu res res/2 gap dropout sgd clip");
	mgpu_table_str(t, "backend", ops->name);
	mgpu_table_str(t, "against", ref->name);
	mgpu_table_num(t, "max_rel_err", rel, 3);
	mgpu_table_num(t, "tolerance", tol, 3);
	mgpu_table_int(t, "ok", rel <= tol);
	if (mgpu_table_emit(t) < 0)
		die_lib();
	return rel > tol;
}

/* Every op, then a few training steps, of ops against ref; rows on t. */
static int selftest_backend(struct mgpu_table *t, const struct mgpu_ops *ops,
			    const struct mgpu_ops *ref)
{
	static struct mgpu_ops_report rep;
	int i, bad;

	if (mgpu_ops_compare(ops, 0, ref, 42, &rep) < 0)
		die_lib();
	for (i = 0; i < rep.nrows; i++) {
		const struct mgpu_ops_row *r = &rep.row[i];
		mgpu_table_str(t, "op", r->op);
		mgpu_table_str(t, "shape", r->shape);
		mgpu_table_str(t, "backend", r->backend);
		mgpu_table_str(t, "against", r->ref_backend);
		mgpu_table_num(t, "max_rel_err", r->max_rel_err, 3);
		mgpu_table_num(t, "tolerance", r->tol, 3);
		mgpu_table_int(t, "ok", r->ok);
		if (mgpu_table_emit(t) < 0)
			die_lib();
	}
	bad = rep.nfail;
	bad += steps_row(t, ops, ref, mlp_spec, MGPU_PREC_FP32, "train_5_steps", 1e-3);
	bad += steps_row(t, ops, ref, mlp_spec, MGPU_PREC_BF16, "train_5_steps_bf16",
			 BF16_STEPS_TOL);
	bad += steps_row(t, ops, ref, mlp_spec, MGPU_PREC_FP16, "train_5_steps_fp16",
			 FP16_STEPS_TOL);
	bad += steps_row(t, ops, ref, cnn_spec, MGPU_PREC_FP32, "train_5_steps_cnn", 1e-3);
	bad += steps_row(t, ops, ref, cnn_spec, MGPU_PREC_BF16, "train_5_steps_cnn_bf16",
			 BF16_STEPS_TOL);
	return bad;
}

/* The CPU half always (cpu against ref); each GPU backend against cpu
 * when it has a device. Exit 1 on any mismatch. */
int train_selftest(FILE *fp, int format, int quiet)
{
	static const char *const scols[] = { "op", "shape", "backend", "against",
					     "max_rel_err", "tolerance", "ok" };
	const struct mgpu_ops *const *o;
	const struct mgpu_ops *cpu = mgpu_ops_find("cpu"), *ref = mgpu_ops_find("ref");
	struct mgpu_table t;
	int bad;

	mgpu_table_init(&t, fp, format, scols, 7);
	bad = selftest_backend(&t, cpu, ref);
	if (!quiet)
		note("selftest: the cpu bf16 GEMM runs on %s", mgpu_cpu_bf16_gemm_path());
	for (o = mgpu_ops_all(); *o; o++) {
		char why[256] = "";
		int n = 0;
		if (*o == cpu || *o == ref)
			continue;
		if ((*o)->device_count(&n, why, sizeof why) < 0 || n == 0) {
			if (!quiet)
				note("selftest: no %s device (%s): only the CPU half ran",
				     (*o)->name, why[0] ? why : "none found");
			continue;
		}
		bad += selftest_backend(&t, *o, cpu);
	}
	if (!quiet)
		note("selftest: %s", bad ? "FAILED" : "passed");
	return bad ? 1 : 0;
}
