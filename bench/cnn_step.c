/*
 * cnn_step.c - the training step of a conv net on one device, without a
 * data set: seeded uint8 samples of a given shape, forward, the loss
 * (cross-entropy for a class head; for a fully convolutional net, the
 * mean squared error of its maps against seeded targets, as a pose
 * trainer's confidence maps), backward, SGD. What a U-Net spec costs
 * before targets reach mgpu-train, and on shared machines per second of
 * this process's CPU time as well as of the wall clock.
 *
 * usage: cnn_step SPEC CxHxW [CLASSES [BATCH [BACKEND [STEPS [DTYPE]]]]]
 * Prints one TSV row: spec, shape, batch, backend, dtype, params,
 * outputs, step_ms, samples_per_s, cpu_ms, samples_per_cpu_s (medians
 * over STEPS steps after 3 of warm-up; CLASSES, the class or map count, 2
 * by default; DTYPE fp32 or bf16, as mgpu-train --dtype).
 */
#include <stdio.h>  /* printf */
#include <stdlib.h> /* atoi, malloc */
#include <string.h> /* strcmp */
#include <time.h>   /* clock_gettime, CLOCK_PROCESS_CPUTIME_ID */

#include "bench/stats.h"  /* mgpu_bench_median */
#include "core/clock.h"   /* mgpu_now_ms */
#include "core/err.h"     /* mgpu_errmsg */
#include "core/hash.h"    /* mgpu_hash64 */
#include "data/samples.h" /* MGPU_DTYPE_U8, MGPU_TARGET_KEYPOINTS */
#include "model/arch.h"   /* struct mgpu_arch: the outputs' device pointer */
#include "model/model.h"  /* struct mgpu_model */
#include "train/optim.h"  /* struct mgpu_optim */

#define TRY(x) do { if ((x) < 0) { fprintf(stderr, "cnn_step: %s\n", mgpu_errmsg()); return 1; } } while (0)
#define MAX_STEPS 10000

static double cpu_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* Device buffers of a maps net's loss: targets (B, n), per-map losses. */
struct maps {
	float *target, *loss;
	int P, HW;
};

static int loss_step(struct mgpu_model *m, const struct maps *mp, int B)
{
	size_t per_row, width, ld;
	double l, c;
	const float *out;

	if (!mp->target)
		return mgpu_model_loss(m, B, 1, 1.0f / (float)B, &l, &c);
	out = m->arch->logits(m, &per_row, &width, &ld);
	return m->dev->ops->mse(m->dev, m->dlogits, mp->loss, out, mp->target, NULL, B, mp->P,
				mp->HW, 1.0f / (float)B);
}

int main(int argc, char **argv)
{
	const char *spec_s = argc > 1 ? argv[1] : "", *backend = argc > 5 ? argv[5] : "cpu";
	int classes = argc > 3 ? atoi(argv[3]) : 2, B = argc > 4 ? atoi(argv[4]) : 32;
	int steps = argc > 6 ? atoi(argv[6]) : 20, i, prec = -1;
	const char *dtype = argc > 7 ? argv[7] : "fp32";
	struct mgpu_optim_cfg oc = { .kind = MGPU_OPT_SGD, .momentum = 0.9f };
	struct mgpu_data_desc d = { .dtype = MGPU_DTYPE_U8, .ndim = 3, .classes = classes };
	static double ts[MAX_STEPS], tc[MAX_STEPS];
	struct maps mp = { 0 };
	struct mgpu_spec spec;
	struct mgpu_dev dev;
	struct mgpu_model m;
	struct mgpu_optim opt;
	size_t D, n, j;
	uint8_t *x;
	int32_t *y;
	float *h;

	for (i = 0; mgpu_prec_words[i]; i++)
		if (strcmp(dtype, mgpu_prec_words[i]) == 0)
			prec = i;
	if (argc < 3 || prec < 0 || sscanf(argv[2], "%ux%ux%u", &d.shape[0], &d.shape[1], &d.shape[2]) != 3 ||
	    classes < 1 || B < 1 || steps < 1 || steps > MAX_STEPS || !mgpu_ops_find(backend)) {
		fprintf(stderr, "usage: cnn_step SPEC CxHxW [CLASSES [BATCH [ref|cpu|cuda "
				"[STEPS [fp32|bf16]]]]]\n");
		return 2;
	}
	D = (size_t)d.shape[0] * d.shape[1] * d.shape[2];
	d.d = (int)D;
	TRY(mgpu_spec_load(&spec, spec_s));
	/* a net of maps is fitted to a target of CLASSES maps, as keypoints */
	if (spec.kind == MGPU_MODEL_CNN && spec.cnn[spec.ncnn - 1].op != MGPU_CNN_LINEAR)
		d.target = MGPU_TARGET_KEYPOINTS;
	TRY(mgpu_spec_fit(&spec, &d, argv[2]));
	TRY(mgpu_dev_open(&dev, mgpu_ops_find(backend), 0));
	TRY(mgpu_model_create(&m, &spec, &dev, B));
	TRY(mgpu_model_init(&m, 1));
	TRY(mgpu_model_set_prec(&m, prec));
	TRY(mgpu_optim_create(&opt, &m, &oc));
	n = mgpu_model_logits_per_row(&m);
	x = malloc((size_t)B * D);
	y = malloc((size_t)B * sizeof *y);
	h = malloc((size_t)B * n * sizeof *h);
	if (!x || !y || !h)
		return 1;
	for (j = 0; j < (size_t)B * D; j++)
		x[j] = (uint8_t)mgpu_hash64(3, j);
	for (i = 0; i < B; i++)
		y[i] = (int32_t)(mgpu_hash64(4, (uint64_t)i) % (uint64_t)classes);
	if (n != (size_t)mgpu_spec_classes(&spec)) { /* maps: MSE against seeded ones */
		mp.P = mgpu_spec_classes(&spec);
		mp.HW = (int)(n / (size_t)mp.P);
		for (j = 0; j < (size_t)B * n; j++)
			h[j] = (float)(mgpu_hash64(5, j) % 1000) / 1000.0f;
		TRY(mgpu_dev_alloc(&dev, (void **)&mp.target, (size_t)B * n * sizeof(float)));
		TRY(mgpu_dev_alloc(&dev, (void **)&mp.loss, (size_t)B * mp.P * sizeof(float)));
		TRY(mgpu_dev_from_host(&dev, mp.target, h, (size_t)B * n * sizeof(float)));
	}
	for (i = -3; i < steps; i++) {
		double t = mgpu_now_ms(), c = cpu_ms();
		TRY(mgpu_model_load_batch(&m, x, y, B, 1.0f / 255, 0.0f));
		TRY(mgpu_model_forward(&m, B, 1));
		TRY(loss_step(&m, &mp, B));
		TRY(mgpu_model_backward(&m, B, 0));
		TRY(mgpu_optim_step(&opt, 0.01f, 1.0f));
		TRY(dev.ops->sync(&dev));
		if (i >= 0) {
			ts[i] = mgpu_now_ms() - t;
			tc[i] = cpu_ms() - c;
		}
	}
	printf("spec\tshape\tbatch\tbackend\tdtype\tparams\toutputs\tstep_ms\tsamples_per_s\t"
	       "cpu_ms\tsamples_per_cpu_s\n");
	ts[0] = mgpu_bench_median(ts, steps);
	tc[0] = mgpu_bench_median(tc, steps);
	printf("%s\t%s\t%d\t%s\t%s\t%zu\t%zu\t%.2f\t%.0f\t%.2f\t%.0f\n", spec_s, argv[2], B,
	       backend, dtype, m.nparams, n, ts[0], 1e3 * B / ts[0], tc[0], 1e3 * B / tc[0]);
	if (mp.target) {
		mgpu_dev_free(&dev, mp.target, (size_t)B * n * sizeof(float));
		mgpu_dev_free(&dev, mp.loss, (size_t)B * mp.P * sizeof(float));
	}
	mgpu_optim_free(&opt);
	mgpu_model_free(&m);
	mgpu_dev_close(&dev);
	free(x);
	free(y);
	free(h);
	return 0;
}
