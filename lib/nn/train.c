/*
 * train.c - the training loop of one rank (see train.h).
 *
 * Host side per step: gather the batch rows named by the epoch order into a
 * staging buffer, copy them to the device, then forward, loss, backward and
 * the optimizer on the device. Only the per-row loss and correctness come
 * back to the host.
 */
#include "nn/train.h"

#include <math.h>   /* sqrt, NAN */
#include <stdio.h>  /* snprintf */
#include <stdlib.h> /* calloc, free */
#include <string.h> /* memset, strcmp */
#include <time.h>   /* clock_gettime */
#include <unistd.h> /* access */

#include "core/err.h"     /* mgpu_err, MGPU_CHECK */
#include "core/io.h"      /* mgpu_mkdirs */
#include "core/rng.h"     /* mgpu_rng_perm */
#include "data/dataset.h" /* struct mgpu_dataset */
#include "nn/ckpt.h"      /* mgpu_ckpt_save */
#include "nn/model.h"     /* struct mgpu_model */
#include "ops/elem.h"     /* mgpu_hash64 */

/* RNG streams: one per purpose, so adding one never shifts another. */
enum { STREAM_INIT = 1, STREAM_SPLIT = 2, STREAM_EPOCH = 1000 };

void mgpu_train_defaults(struct mgpu_train_cfg *c)
{
	memset(c, 0, sizeof *c);
	snprintf(c->data, sizeof c->data, "/usr/share/datasets/fashion-mnist");
	mgpu_spec_parse(&c->spec, "mlp:784-512-256-10", "default");
	snprintf(c->backend, sizeof c->backend, "cpu");
	c->epochs = 10;
	c->batch = 128;
	c->optim = (struct mgpu_optim_cfg){ .kind = MGPU_OPT_SGD, .momentum = 0.9f,
					    .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f };
	c->sched = MGPU_SCHED_COSINE;
	c->lr = 0.05;
	c->gamma = 0.1;
	c->step_epochs = 3;
	c->seed = 42;
	c->val_fraction = 0.1;
	c->keep = 3;
	c->log_every = 50;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Everything one run holds; freed in one place. */
struct run {
	const struct mgpu_train_cfg *cfg;
	const struct mgpu_train_hooks *h;
	struct mgpu_dataset all, test;
	uint32_t *train_idx, *val_idx, *order;
	size_t ntrain, nval;
	float scale, shift;            /* x = raw * scale + shift */
	struct mgpu_dev dev;
	int dev_open;
	struct mgpu_model model;
	struct mgpu_optim opt;
	uint8_t *xb;                   /* staging: batch rows */
	int32_t *yb;
	struct mgpu_sched sched;
	int64_t steps_per_epoch, total_steps, step;
	int epoch;                     /* 0-based */
	int64_t pos;                   /* steps done in this epoch */
	double t0;
	/* the logging window */
	double win_loss, win_step_s, win_data_s;
	int64_t win_steps, win_samples;
};

static void run_free(struct run *r)
{
	mgpu_optim_free(&r->opt);
	mgpu_model_free(&r->model);
	if (r->dev_open)
		mgpu_dev_close(&r->dev);
	mgpu_dataset_free(&r->all);
	mgpu_dataset_free(&r->test);
	free(r->val_idx); /* train_idx points into the same block */
	free(r->order);
	free(r->xb);
	free(r->yb);
}

/* Seeded split of the training file into train and validation indices. */
static int split(struct run *r)
{
	struct mgpu_rng rng;
	uint32_t *perm;
	size_t n = r->all.n;

	r->nval = (size_t)((double)n * r->cfg->val_fraction + 0.5);
	if (r->nval >= n)
		return mgpu_err(MGPU_EINVAL, "--val-fraction %g leaves no training samples",
				r->cfg->val_fraction);
	perm = malloc(n * sizeof *perm);
	r->order = malloc(n * sizeof *r->order);
	if (!perm || !r->order) {
		free(perm);
		return mgpu_err(MGPU_ENOMEM, "out of memory for %zu sample indices", n);
	}
	mgpu_rng_seed(&rng, r->cfg->seed, STREAM_SPLIT);
	mgpu_rng_perm(&rng, perm, n);
	r->val_idx = perm;
	r->train_idx = perm + r->nval;
	r->ntrain = n - r->nval;
	return 0;
}

/* Mean and standard deviation of the training split's features. */
static void normalisation(struct run *r)
{
	uint64_t hist[256] = { 0 };
	double sum = 0, sq = 0, cnt, mean, sd;
	size_t i, j, d = (size_t)r->all.d;
	int v;

	for (i = 0; i < r->ntrain; i++) {
		const uint8_t *row = r->all.x + (size_t)r->train_idx[i] * d;
		for (j = 0; j < d; j++)
			hist[row[j]]++;
	}
	for (v = 0; v < 256; v++) {
		sum += (double)hist[v] * v;
		sq += (double)hist[v] * v * v;
	}
	cnt = (double)r->ntrain * (double)d;
	mean = sum / cnt;
	sd = sqrt(sq / cnt - mean * mean);
	if (!(sd > 1e-6))
		sd = 1.0;
	r->scale = (float)(1.0 / sd);
	r->shift = (float)(-mean / sd);
}

static int load_data(struct run *r)
{
	const struct mgpu_spec *s = &r->cfg->spec;
	int C = s->dims[s->nlayers];

	MGPU_TRY(mgpu_dataset_load_dir(&r->all, &r->test, r->cfg->data));
	if (r->all.d != s->dims[0])
		return mgpu_err(MGPU_EINVAL,
				"'%s': samples have %d features but the model takes %d",
				r->cfg->data, r->all.d, s->dims[0]);
	MGPU_TRY(mgpu_dataset_check_classes(&r->all, C, r->cfg->data));
	MGPU_TRY(mgpu_dataset_check_classes(&r->test, C, r->cfg->data));
	MGPU_TRY(split(r));
	normalisation(r);
	return 0;
}

static int open_device(struct run *r)
{
	const struct mgpu_ops *ops = mgpu_ops_find(r->cfg->backend);
	char why[256] = "";
	int n = 0;

	if (!ops)
		return mgpu_err(MGPU_EUNSUP, "backend '%s' is not in this build",
				r->cfg->backend);
	MGPU_TRY(ops->device_count(&n, why, sizeof why));
	if (r->cfg->device >= n)
		return mgpu_err(MGPU_EINVAL, "%s device %d does not exist (%d found%s%s)",
				ops->name, r->cfg->device, n, why[0] ? ": " : "", why);
	MGPU_TRY(mgpu_dev_open(&r->dev, ops, r->cfg->device));
	r->dev_open = 1;
	return 0;
}

static void setup_sched(struct run *r)
{
	const struct mgpu_train_cfg *c = r->cfg;

	r->steps_per_epoch = (int64_t)(r->ntrain / (size_t)c->batch);
	r->total_steps = r->steps_per_epoch * c->epochs;
	if (c->max_steps > 0 && c->max_steps < r->total_steps)
		r->total_steps = c->max_steps;
	r->sched = (struct mgpu_sched){
		.kind = c->sched, .lr = c->lr, .min_lr = c->min_lr, .gamma = c->gamma,
		.total_steps = r->steps_per_epoch * c->epochs,
		.warmup_steps = c->warmup_steps ? c->warmup_steps :
			(int64_t)(c->warmup_epochs * (double)r->steps_per_epoch + 0.5),
		.step_every = (int64_t)(c->step_epochs * (double)r->steps_per_epoch + 0.5),
	};
}

/* Fail before training, not at the first checkpoint an epoch later. */
static int check_save_dir(const char *dir)
{
	if (mgpu_mkdirs(dir) < 0)
		return mgpu_err_prefix(MGPU_EIO, "--save-dir: ");
	if (access(dir, W_OK) != 0)
		return mgpu_err_errno(MGPU_EIO, "--save-dir: '%s' is not writable", dir);
	return 0;
}

static int setup(struct run *r)
{
	const struct mgpu_train_cfg *c = r->cfg;
	size_t d = (size_t)c->spec.dims[0];

	if (c->save_dir[0])
		MGPU_TRY(check_save_dir(c->save_dir));
	MGPU_TRY(load_data(r));
	if ((size_t)c->batch > r->ntrain)
		return mgpu_err(MGPU_EINVAL, "--batch-size %d is larger than the %zu training "
				"samples", c->batch, r->ntrain);
	MGPU_TRY(open_device(r));
	MGPU_TRY(mgpu_model_create(&r->model, &c->spec, &r->dev, c->batch));
	MGPU_TRY(mgpu_model_init(&r->model, c->seed));
	MGPU_TRY(mgpu_optim_create(&r->opt, &r->model, &c->optim));
	r->xb = malloc((size_t)c->batch * d);
	r->yb = malloc((size_t)c->batch * sizeof(int32_t));
	if (!r->xb || !r->yb)
		return mgpu_err(MGPU_ENOMEM, "out of memory for the batch buffers");
	setup_sched(r);
	return 0;
}

static int resume(struct run *r)
{
	struct mgpu_ckpt_state st;
	char dir[MGPU_CKPT_PATH], spec[512];

	MGPU_TRY(mgpu_ckpt_resolve(r->cfg->resume, dir, sizeof dir));
	MGPU_TRY(mgpu_ckpt_load_state(dir, &st, NULL, NULL));
	MGPU_TRY(mgpu_spec_format(&r->cfg->spec, spec, sizeof spec));
	if (strcmp(spec, st.spec) != 0)
		return mgpu_err(MGPU_EINVAL, "'%s': checkpoint holds model '%s', not '%s'", dir,
				st.spec, spec);
	if (st.seed != r->cfg->seed)
		return mgpu_err(MGPU_EINVAL, "'%s': checkpoint was made with --seed %llu",
				dir, (unsigned long long)st.seed);
	MGPU_TRY(mgpu_ckpt_load_tensors(dir, &r->model, &r->opt));
	r->step = st.step;
	r->epoch = st.epoch;
	r->pos = st.epoch_pos;
	r->opt.t = st.optim_t;
	r->scale = (float)st.norm_scale;
	r->shift = (float)st.norm_shift;
	return 0;
}

static int save(struct run *r)
{
	const struct mgpu_train_cfg *c = r->cfg;
	struct mgpu_ckpt_state st = {
		.step = r->step, .epoch = r->epoch, .epoch_pos = r->pos, .optim_t = r->opt.t,
		.seed = c->seed, .world_size = 1, .norm_scale = r->scale,
		.norm_shift = r->shift,
	};
	struct mgpu_record rec = { .kind = MGPU_REC_CKPT };
	char dir[MGPU_CKPT_PATH];

	MGPU_TRY(mgpu_spec_format(&c->spec, st.spec, sizeof st.spec));
	MGPU_TRY(mgpu_ckpt_save(c->save_dir, c->keep, &st, &r->model, &r->opt, c->argv,
				c->argc, dir, sizeof dir));
	rec.step = r->step;
	rec.epoch = r->epoch + (r->pos > 0);
	rec.path = dir;
	return r->h->on_record ? r->h->on_record(r->h->ctx, &rec) : 0;
}

static void order_epoch(struct run *r, int epoch)
{
	struct mgpu_rng rng;
	size_t i;

	mgpu_rng_seed(&rng, r->cfg->seed, STREAM_EPOCH + (uint64_t)epoch);
	mgpu_rng_perm(&rng, r->order, r->ntrain);
	for (i = 0; i < r->ntrain; i++)
		r->order[i] = r->train_idx[r->order[i]];
}

static int load_rows(struct run *r, const uint32_t *idx, int B, const struct mgpu_dataset *ds)
{
	size_t d = (size_t)ds->d;
	int i;

	for (i = 0; i < B; i++) {
		memcpy(r->xb + (size_t)i * d, ds->x + (size_t)idx[i] * d, d);
		r->yb[i] = ds->y[idx[i]];
	}
	return mgpu_model_load_batch(&r->model, r->xb, r->yb, B, r->scale, r->shift);
}

static int emit(struct run *r, struct mgpu_record *rec)
{
	rec->ndev = 1;
	rec->peak_bytes[0] = (int64_t)r->dev.bytes_peak;
	rec->effective_batch = r->cfg->batch;
	return r->h->on_record ? r->h->on_record(r->h->ctx, rec) : 0;
}

static int flush_window(struct run *r, double lr)
{
	struct mgpu_record rec = { .kind = MGPU_REC_STEP };

	if (r->win_steps == 0)
		return 0;
	rec.step = r->step;
	rec.epoch = r->epoch + 1;
	rec.loss = r->win_loss / (double)r->win_samples;
	rec.lr = lr;
	rec.samples_per_s = (double)r->win_samples / r->win_step_s;
	rec.step_ms = 1e3 * r->win_step_s / (double)r->win_steps;
	rec.data_ms = 1e3 * r->win_data_s / (double)r->win_steps;
	r->win_loss = r->win_step_s = r->win_data_s = 0;
	r->win_steps = r->win_samples = 0;
	return emit(r, &rec);
}

static int train_step(struct run *r, double lr)
{
	struct mgpu_model *m = &r->model;
	int B = r->cfg->batch;
	double t0 = now_s(), t1, loss, correct;

	MGPU_TRY(load_rows(r, r->order + (size_t)r->pos * (size_t)B, B, &r->all));
	t1 = now_s();
	m->dropout_seed = mgpu_hash64(r->cfg->seed, (uint64_t)r->step);
	MGPU_TRY(mgpu_model_forward(m, B, 1));
	MGPU_TRY(mgpu_model_loss(m, B, 1, 1.0f / (float)B, &loss, &correct));
	MGPU_TRY(mgpu_model_backward(m, B, 0));
	MGPU_TRY(mgpu_optim_step(&r->opt, (float)lr, 1.0f));
	r->win_loss += loss;
	r->win_samples += B;
	r->win_steps++;
	r->win_data_s += t1 - t0;
	r->win_step_s += now_s() - t0;
	r->step++;
	r->pos++;
	return 0;
}

/* Mean loss and accuracy over the rows idx[0..n) of ds, in batches. */
static int evaluate(struct run *r, const struct mgpu_dataset *ds, const uint32_t *idx,
		    size_t n, double *loss, double *acc)
{
	double l, c, ls = 0, cs = 0;
	size_t i;
	int B;

	for (i = 0; i < n; i += (size_t)B) {
		B = n - i < (size_t)r->cfg->batch ? (int)(n - i) : r->cfg->batch;
		MGPU_TRY(load_rows(r, idx + i, B, ds));
		MGPU_TRY(mgpu_model_forward(&r->model, B, 0));
		MGPU_TRY(mgpu_model_loss(&r->model, B, 0, 0.0f, &l, &c));
		ls += l;
		cs += c;
	}
	*loss = n ? ls / (double)n : NAN;
	*acc = n ? cs / (double)n : NAN;
	return 0;
}

static int eval_record(struct run *r)
{
	struct mgpu_record rec = { .kind = MGPU_REC_EVAL };

	rec.step = r->step;
	rec.epoch = r->epoch;
	rec.test_loss = rec.test_acc = NAN;
	MGPU_TRY(evaluate(r, &r->all, r->val_idx, r->nval, &rec.val_loss, &rec.val_acc));
	rec.wall_s = now_s() - r->t0;
	return emit(r, &rec);
}

static int summary(struct run *r, int64_t steps_run)
{
	struct mgpu_record rec = { .kind = MGPU_REC_SUMMARY };
	uint32_t *all;
	size_t i;
	int rc;

	rec.step = r->step;
	rec.epoch = r->epoch;
	rec.wall_s = now_s() - r->t0;
	rec.samples_per_s = (double)steps_run * r->cfg->batch / rec.wall_s;
	all = malloc((r->test.n + 1) * sizeof *all);
	if (!all)
		return mgpu_err(MGPU_ENOMEM, "out of memory");
	for (i = 0; i < r->test.n; i++)
		all[i] = (uint32_t)i;
	rc = evaluate(r, &r->test, all, r->test.n, &rec.test_loss, &rec.test_acc);
	free(all);
	if (rc == 0)
		rc = evaluate(r, &r->all, r->val_idx, r->nval, &rec.val_loss, &rec.val_acc);
	return rc ? rc : emit(r, &rec);
}

static int epoch_end(struct run *r, double lr)
{
	MGPU_TRY(flush_window(r, lr));
	r->epoch++;
	r->pos = 0;
	MGPU_TRY(eval_record(r));
	if (r->cfg->save_dir[0] && r->cfg->save_every == 0)
		MGPU_TRY(save(r));
	return 0;
}

static int loop(struct run *r)
{
	const struct mgpu_train_cfg *c = r->cfg;
	int64_t start = r->step;
	double lr = 0;

	r->t0 = now_s();
	while (r->step < r->total_steps) {
		if (r->pos == 0 || r->step == start)
			order_epoch(r, r->epoch);
		lr = mgpu_sched_lr(&r->sched, r->step);
		MGPU_TRY(train_step(r, lr));
		if (r->h->on_progress)
			r->h->on_progress(r->h->ctx, r->step, r->total_steps);
		if (r->win_steps >= c->log_every)
			MGPU_TRY(flush_window(r, lr));
		if (r->pos == r->steps_per_epoch)
			MGPU_TRY(epoch_end(r, lr));
		else if (c->save_dir[0] && c->save_every > 0 && r->step % c->save_every == 0)
			MGPU_TRY(save(r));
		if (c->stop && *c->stop) {
			MGPU_TRY(flush_window(r, lr));
			if (c->save_dir[0])
				MGPU_TRY(save(r));
			return mgpu_err(MGPU_EINTR, "interrupted at step %lld",
					(long long)r->step);
		}
	}
	MGPU_TRY(flush_window(r, lr));
	if (c->save_dir[0] && r->pos != 0)
		MGPU_TRY(save(r));
	return summary(r, r->step - start);
}

static int start_record(struct run *r)
{
	struct mgpu_record rec = { .kind = MGPU_REC_START };

	rec.step = r->total_steps;
	rec.epoch = (int)r->steps_per_epoch;
	return emit(r, &rec);
}

int mgpu_train_run(const struct mgpu_train_cfg *cfg, const struct mgpu_train_hooks *h)
{
	struct run r;
	int rc;

	memset(&r, 0, sizeof r);
	r.cfg = cfg;
	r.h = h;
	MGPU_CHECK(setup(&r));
	if (cfg->resume[0])
		MGPU_CHECK(resume(&r));
	MGPU_CHECK(start_record(&r));
	rc = loop(&r);
out:
	run_free(&r);
	return rc;
}
