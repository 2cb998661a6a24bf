/*
 * overhead.c - framework overhead of one training step: the time of a full
 * step (batch upload, forward, loss, backward, optimizer) against the time
 * of the same GEMMs alone, called through the same backend.
 *
 * usage: overhead [SPEC [BATCH [BACKEND [STEPS]]]]
 * Prints one TSV row: spec, batch, backend, step_ms, gemm_ms, overhead_pct
 * (medians over STEPS repetitions after warm-up).
 */
#include <stdio.h>  /* printf */
#include <stdlib.h> /* atoi */
#include <string.h> /* memset */

#include "bench/stats.h" /* mgpu_bench_median */
#include "core/clock.h" /* mgpu_now_ms */
#include "core/err.h"  /* mgpu_errmsg */
#include "core/hash.h" /* mgpu_hash64 */
#include "model/mlp.h"    /* struct mgpu_mlp, struct mgpu_model */
#include "train/optim.h"  /* struct mgpu_optim */

#define TRY(x) do { if ((x) < 0) { fprintf(stderr, "overhead: %s\n", mgpu_errmsg()); return 1; } } while (0)

/* The GEMMs of one step, exactly as mlp.c issues them. */
static int gemms(struct mgpu_model *m, int B)
{
	const struct mgpu_ops *o = m->dev->ops;
	struct mgpu_mlp *x = mgpu_mlp_of(m);
	int l;

	if (!x)
		return mgpu_err(MGPU_EINVAL, "overhead: times an mlp only");
	for (l = 0; l < m->spec.nlayers; l++) {
		struct mgpu_layer *L = &x->layers[l];
		const float *X = l ? x->layers[l - 1].y : x->x;
		MGPU_TRY(o->gemm(m->dev, MGPU_PREC_FP32, MGPU_T, MGPU_N, L->out, B, L->in, 1.0f,
				 m->w + L->w->off, L->in, 0, X, L->in, 0, 0.0f, L->lin, L->out, 0,
				 1));
		MGPU_TRY(o->gemm(m->dev, MGPU_PREC_FP32, MGPU_N, MGPU_T, L->in, L->out, B, 1.0f, X,
				 L->in, 0, L->lin, L->out, 0, 0.0f, m->g + L->w->off, L->in, 0, 1));
		if (l > 0)
			MGPU_TRY(o->gemm(m->dev, MGPU_PREC_FP32, MGPU_N, MGPU_N, L->in, B, L->out,
					 1.0f, m->w + L->w->off, L->in, 0, L->lin, L->out, 0, 0.0f,
					 x->dbuf[0], L->in, 0, 1));
	}
	return m->dev->ops->sync(m->dev);
}

int main(int argc, char **argv)
{
	const char *spec_s = argc > 1 ? argv[1] : "mlp:784-512-256-10";
	int B = argc > 2 ? atoi(argv[2]) : 128, steps = argc > 4 ? atoi(argv[4]) : 300;
	const char *backend = argc > 3 ? argv[3] : "cpu";
	struct mgpu_optim_cfg oc = { .kind = MGPU_OPT_SGD, .momentum = 0.9f };
	struct mgpu_spec spec;
	struct mgpu_dev dev;
	struct mgpu_model m;
	struct mgpu_optim opt;
	static double ts[100000], tg[100000];
	uint8_t *x;
	int32_t *y;
	double l, c, t;
	int i;
	size_t j;

	if (B < 1 || steps < 1 || steps > 100000 || !mgpu_ops_find(backend)) {
		fprintf(stderr, "usage: overhead [SPEC [BATCH [ref|cpu|cuda [STEPS]]]]\n");
		return 2;
	}
	TRY(mgpu_spec_parse(&spec, spec_s, "overhead"));
	TRY(mgpu_dev_open(&dev, mgpu_ops_find(backend), 0));
	TRY(mgpu_model_create(&m, &spec, &dev, B));
	TRY(mgpu_model_init(&m, 1));
	TRY(mgpu_optim_create(&opt, &m, &oc));
	x = malloc((size_t)B * (size_t)spec.dims[0]);
	y = malloc((size_t)B * sizeof *y);
	for (j = 0; j < (size_t)B * (size_t)spec.dims[0]; j++)
		x[j] = (uint8_t)mgpu_hash64(3, j);
	for (i = 0; i < B; i++)
		y[i] = (int32_t)(mgpu_hash64(4, (uint64_t)i) % (uint64_t)spec.dims[spec.nlayers]);
	for (i = -20; i < steps; i++) {
		t = mgpu_now_ms();
		TRY(mgpu_model_load_batch(&m, x, y, B, 1.0f / 255, 0.0f));
		TRY(mgpu_model_forward(&m, B, 1));
		TRY(mgpu_model_loss(&m, B, 1, 1.0f / (float)B, &l, &c));
		TRY(mgpu_model_backward(&m, B, 0));
		TRY(mgpu_optim_step(&opt, 0.01f, 1.0f));
		TRY(dev.ops->sync(&dev));
		if (i >= 0)
			ts[i] = mgpu_now_ms() - t;
		t = mgpu_now_ms();
		TRY(gemms(&m, B));
		if (i >= 0)
			tg[i] = mgpu_now_ms() - t;
	}
	t = mgpu_bench_median(ts, steps);
	l = mgpu_bench_median(tg, steps);
	printf("spec\tbatch\tbackend\tstep_ms\tgemm_ms\toverhead_pct\n");
	printf("%s\t%d\t%s\t%.4f\t%.4f\t%.1f\n", spec_s, B, backend, t, l, 100.0 * (t - l) / l);
	mgpu_optim_free(&opt);
	mgpu_model_free(&m);
	mgpu_dev_close(&dev);
	free(x);
	free(y);
	return 0;
}
