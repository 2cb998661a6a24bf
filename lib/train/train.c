/*
 * train.c - the training loop of a rank, and mgpu_train_run (see train.h).
 *
 * Per optimizer step, each rank runs accum micro-steps of its own slice of
 * the global batch (gather rows, copy to the device, forward, loss scaled
 * by the plan's 1 / global batch, backward); the sync layer sums gradients
 * as backward produces them and steps the optimizer; the closing barrier
 * sums the step's loss over the ranks and agrees on stopping. Everything
 * of a step is queued on the device before the host reads anything: the
 * loss, correct count and gradient norm accumulate there and come back in
 * one read (docs/ARCHITECTURE.md, "A step's timeline"). Only rank 0
 * reports records.
 */
#include "train/train.h"

#include <math.h>         /* NAN, isfinite */
#include <stdint.h>       /* uint64_t */
#include <pthread.h>      /* pthread_create */
#include <stdio.h>        /* snprintf */
#include <stdlib.h>       /* calloc, free */
#include <string.h>       /* memset */
#include <sys/resource.h> /* getrusage */

#include "core/clock.h" /* mgpu_now_s */
#include "core/err.h"      /* mgpu_err, MGPU_CHECK */
#include "core/hash.h"     /* mgpu_hash64 */
#include "data/metrics.h"  /* struct mgpu_metrics */
#include "data/samples.h"  /* MGPU_TARGET_* */
#include "train/ckpt.h"       /* mgpu_ckpt_save */
#include "train/train_int.h"  /* struct train_rank */

void mgpu_train_defaults(struct mgpu_train_cfg *c)
{
	memset(c, 0, sizeof *c);
	snprintf(c->data, sizeof c->data, "/usr/share/datasets/fashion-mnist");
	mgpu_spec_parse(&c->spec, "mlp:auto-512-256-auto", "default");
	snprintf(c->backend, sizeof c->backend, "cpu");
	c->sync = MGPU_SYNC_CPU;
	c->timeout_ms = 300 * 1000;
	c->epochs = 10;
	mgpu_batch_plan_make(&c->plan, 128, 0, 1, 1);
	c->optim = (struct mgpu_optim_cfg){ .kind = MGPU_OPT_SGD, .momentum = 0.9f,
					    .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f };
	c->sched = MGPU_SCHED_COSINE;
	c->lr = 0.05;
	c->gamma = 0.1;
	c->step_epochs = 3;
	c->seed = 42;
	c->val_fraction = 0.1;
	c->topt = (struct mgpu_target_opts){ .sigma = 2.0f, .stride = 1 };
	c->keep = 3;
	c->log_every = 50;
	c->loss_scale_init = 65536.0; /* torch.cuda.amp.GradScaler's defaults */
	c->loss_scale_growth = 2.0;
	c->loss_scale_backoff = 0.5;
	c->loss_scale_interval = 2000;
	c->env.world = c->env.local_world = 1;
	c->env.listen_fd = -1;
}

int mgpu_train_emit(struct train_rank *r, struct mgpu_record *rec)
{
	rec->effective_batch = r->plan->global;
	rec->world = r->world;
	rec->mode = r->cfg->mode;
	rec->sync = r->sync.kind;
	if (r->rank != 0 || !r->h->on_record)
		return 0;
	return r->h->on_record(r->h->ctx, rec);
}

static int save(struct train_rank *r)
{
	const struct mgpu_train_cfg *c = r->cfg;
	struct mgpu_ckpt_state st = {
		.step = r->step, .epoch = r->epoch, .epoch_pos = r->pos, .optim_t = r->opt.t,
		.seed = c->seed, .world_size = r->world, .global_batch = r->plan->global,
		.norm_scale = r->d->src.norm.scale, .norm_shift = r->d->src.norm.shift,
		.loss_scale = r->loss_scale, .loss_scale_clean = r->ls_clean,
		.skipped_steps = r->ls_skipped,
		.names = r->d->src.names, .nnames = r->d->src.nnames,
	};
	struct mgpu_record rec = { .kind = MGPU_REC_CKPT };
	char dir[MGPU_CKPT_PATH];

	if (r->rank != 0)
		return 0;
	MGPU_TRY(mgpu_spec_format(&c->spec, st.spec, sizeof st.spec));
	MGPU_TRY(mgpu_ckpt_save(c->save_dir, c->keep, &st, &r->model, &r->opt, c->argv,
				c->argc, dir, sizeof dir));
	rec.step = r->step;
	rec.epoch = r->epoch + (r->pos > 0);
	rec.path = dir;
	return mgpu_train_emit(r, &rec);
}

static int flush_window(struct train_rank *r, double lr)
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
	rec.grad_norm = r->win_gnorm_n ? r->win_gnorm / (double)r->win_gnorm_n : NAN;
	rec.loss_scale = r->loss_scale > 0 ? r->loss_scale : NAN;
	rec.skipped = r->ls_skipped;
	rec.d2h_per_step = (double)r->win_d2h / (double)r->win_steps;
	rec.h2d_per_step = (double)r->win_h2d / (double)r->win_steps;
	r->win_loss = r->win_step_s = r->win_data_s = r->win_gnorm = 0;
	r->win_gnorm_n = 0;
	r->win_steps = r->win_samples = 0;
	r->win_d2h = r->win_h2d = 0;
	return mgpu_train_emit(r, &rec);
}

/* The rows of micro-step a of this rank: positions of the epoch order. */
static const uint32_t *micro_rows_at(struct train_rank *r, int64_t pos, int a, uint32_t *buf)
{
	int B = r->plan->batch, i;
	size_t n = r->d->ntrain;
	int64_t first = pos * r->plan->global + mgpu_batch_row0(r->plan, a, r->rank);

	if ((size_t)first + (size_t)B <= n)
		return r->order + first;
	for (i = 0; i < B; i++) /* --uneven pad: the tail wraps around */
		buf[i] = r->order[(size_t)(first + i) % n];
	return buf;
}

/* This rank's rows for steps pos.. of the epoch, in the order the micro-steps
 * take them, handed to the loader (a pure function of seed, epoch, rank);
 * the loader augments each row from (seed, epoch, row). */
static int begin_epoch_rows(struct train_rank *r)
{
	size_t B = (size_t)r->plan->batch, k = 0;
	int64_t p;
	int a;

	const uint32_t *rows;

	for (p = r->pos; p < r->steps_per_epoch; p++)
		for (a = 0; a < r->plan->accum; a++, k += B) {
			rows = micro_rows_at(r, p, a, r->rank_order + k);
			if (rows != r->rank_order + k) /* else the tail was wrapped there */
				memcpy(r->rank_order + k, rows, B * sizeof *r->rank_order);
		}
	return mgpu_loader_begin_epoch(&r->loader, MGPU_SPLIT_TRAIN, r->rank_order, k, r->epoch);
}

/* The rows of the coming micro-step, from the loader (data_s: the time
 * waited for them) onto the device: queued copies, see gpu/upload.h. */
static int load_micro(struct train_rank *r, double *data_s)
{
	int B = r->plan->batch, got, rc;
	struct mgpu_target_batch tb;
	const int32_t *yb;
	const void *xb;
	double wait_ms;

	rc = mgpu_loader_next_t(&r->loader, &xb, &yb, &tb, &got, &wait_ms);
	if (rc == 1)
		rc = mgpu_err(MGPU_EINVAL, "the epoch's rows ran out at step %lld",
			      (long long)r->step);
	if (rc == 0 && got != B)
		rc = mgpu_err(MGPU_EINVAL, "the loader gave %d rows, want %d", got, B);
	*data_s += wait_ms * 1e-3;
	return rc < 0 ? rc : mgpu_train_put_batch_t(r, xb, yb, &tb, B);
}

/* The factor of the loss's gradient: the plan's averaging, times the loss
 * scale under fp16; MGPU_TEST_OVERFLOW makes it infinite on its rank and
 * step, an overflow of that rank alone for the tests. */
static float loss_grad_scale(const struct train_rank *r)
{
	if (r->inject_step == r->step)
		return INFINITY;
	return r->loss_scale > 0 ? (float)(r->plan->grad_scale * r->loss_scale)
				 : r->plan->grad_scale;
}

/* After a step's reduction (every rank alike: the summed gradient's norm
 * is the same everywhere): an overflow halves the scale (backoff) and was
 * skipped by the update; interval clean steps grow it. */
static void scaler_update(struct train_rank *r, int overflow)
{
	const struct mgpu_train_cfg *c = r->cfg;

	if (overflow) {
		r->loss_scale *= c->loss_scale_backoff;
		r->ls_clean = 0;
		r->ls_skipped++;
		return;
	}
	if (++r->ls_clean >= c->loss_scale_interval) {
		r->loss_scale *= c->loss_scale_growth;
		r->ls_clean = 0;
	}
}

/* One micro-step: its rows in (unless the step before loaded them ahead),
 * forward, loss, backward, all queued: the loss and correct count add up
 * on the device (m->stats) until the step's one read. */
static int micro_step(struct train_rank *r, int a, double lr, double *data_s)
{
	struct mgpu_model *m = &r->model;
	int B = r->plan->batch, A = r->plan->accum;

	if (r->preloaded)
		r->preloaded = 0;
	else
		MGPU_TRY(load_micro(r, data_s));
	m->dropout_seed = mgpu_hash64(r->cfg->seed, (uint64_t)r->step);
	m->row0 = (uint64_t)mgpu_batch_row0(r->plan, a, r->rank);
	MGPU_TRY(mgpu_model_forward(m, B, 1));
	MGPU_TRY(mgpu_model_loss_acc(m, B, 1, loss_grad_scale(r), m->stats + MGPU_STAT_LOSS));
	mgpu_sync_micro(&r->sync, a == A - 1, (float)lr);
	return mgpu_model_backward(m, B, a > 0);
}

/* Whether the next step's first rows may go to the device before this
 * step's read: the next step runs, in this epoch (whose rows the loader
 * serves; an epoch's end evaluates, which takes the input buffers), and
 * this rank was not asked to stop. The device copies them after this
 * step's work, in stream order, while the host waits for the read: the
 * host's batch work no longer sits in the gap between two steps. */
static int load_ahead(const struct train_rank *r)
{
	return r->step + 1 < r->total_steps && r->pos + 1 < r->steps_per_epoch &&
	       !(r->cfg->stop && *r->cfg->stop);
}

/* A NaN or infinite loss or gradient ruins the weights for good: stop
 * before they reach a checkpoint. Every rank sees the same reduced values,
 * so all stop at the same step. */
static int check_finite(const struct train_rank *r, double loss, double grad_norm)
{
	double bad = isfinite(loss) ? grad_norm : loss;

	if (isfinite(loss) && isfinite(grad_norm))
		return 0;
	return mgpu_err(MGPU_ERANGE, "step %lld: the %s is %s: training diverged (a lower --lr "
			"or --clip-grad-norm may help); nothing of this step was saved",
			(long long)r->step + 1, isfinite(loss) ? "gradient norm" : "loss",
			isnan(bad) ? "NaN" : "infinite");
}

/* One optimizer step; *stop: any rank was asked to stop. The host reads
 * from the device once, in mgpu_sync_step, after the update is queued. */
static int train_step(struct train_rank *r, double lr, int *stop)
{
	double t0 = mgpu_now_s(), data_s = 0, vals[1];
	uint64_t d2h = r->dev.d2h_count, h2d = r->dev.h2d_count;
	int a, overflow;

	r->opt.loss_scale = r->loss_scale;
	for (a = 0; a < r->plan->accum; a++)
		MGPU_TRY(micro_step(r, a, lr, &data_s));
	if (load_ahead(r)) {
		MGPU_TRY(load_micro(r, &data_s));
		r->preloaded = 1;
	}
	vals[0] = r->cfg->stop && *r->cfg->stop ? 1.0 : 0.0;
	MGPU_TRY(mgpu_sync_step(&r->sync, vals, 1));
	/* under loss scaling a non-finite gradient is an overflow the update
	 * skipped, not a divergence; a non-finite loss still is one */
	overflow = r->loss_scale > 0 && !isfinite(r->sync.grad_norm);
	MGPU_TRY(check_finite(r, r->sync.step_loss, overflow ? 0.0 : r->sync.grad_norm));
	if (r->loss_scale > 0)
		scaler_update(r, overflow);
	*stop = vals[0] > 0.5;
	r->win_d2h += r->dev.d2h_count - d2h;
	r->win_h2d += r->dev.h2d_count - h2d;
	r->win_loss += r->sync.step_loss;
	if (!overflow) {
		r->win_gnorm += r->sync.grad_norm;
		r->win_gnorm_n++;
	}
	r->win_samples += r->plan->global;
	r->win_steps++;
	r->win_data_s += data_s;
	r->win_step_s += mgpu_now_s() - t0;
	r->step++;
	r->pos++;
	return 0;
}

static int stop_asked(const struct train_rank *r)
{
	return r->cfg->stop && *r->cfg->stop;
}

/* One batch of an evaluation of data with targets, from the evaluation's
 * loader (it renders the targets and never augments): its loss summed on
 * the device, its outputs read back for the host's metrics (one read a
 * batch: the metrics look at every map's peak). */
static int eval_batch_t(struct train_rank *r, struct mgpu_metrics *met, int *B)
{
	struct mgpu_target_batch tb;
	const int32_t *yb;
	const void *xb;
	double wait_ms;
	size_t per;
	int rc = mgpu_loader_next_t(&r->eval_loader, &xb, &yb, &tb, B, &wait_ms);

	if (rc != 0)
		return rc < 0 ? rc : mgpu_err(MGPU_EINVAL, "the evaluation's rows ran out");
	MGPU_TRY(mgpu_train_put_batch_t(r, xb, yb, &tb, *B));
	MGPU_TRY(mgpu_model_forward(&r->model, *B, 0));
	MGPU_TRY(mgpu_model_loss_acc(&r->model, *B, 0, 0.0f, r->eval_acc));
	MGPU_TRY(mgpu_model_logits(&r->model, *B, r->tout, &per));
	mgpu_target_metrics_add(met, &r->model.tgt, r->tout, &tb, *B, r->d->stride);
	return 0;
}

/* The metrics' sums of every rank, each rank's met summed in place:
 * counts and sums as doubles (exact far past any evaluation's counts). */
static int sum_metrics(struct train_rank *r, struct mgpu_metrics *met)
{
	int C = r->d->tkind == MGPU_TARGET_MASK ? r->d->classes : 0, n = 6 + 2 * C, k, j;
	double *v = malloc((size_t)n * sizeof *v);
	int rc = 0;

	if (!v)
		return mgpu_err(MGPU_ENOMEM, "out of memory");
	v[0] = met->kp_err_sum, v[1] = (double)met->kp_count, v[2] = (double)met->kp_within;
	v[3] = met->sq_sum, v[4] = (double)met->sq_count, v[5] = (double)met->pix_count;
	for (k = 0; k < C; k++)
		v[6 + k] = (double)met->inter[k], v[6 + C + k] = (double)met->uni[k];
	for (k = 0; k < n && rc == 0; k += j) {
		j = n - k < MGPU_SHM_MAX_VALS ? n - k : MGPU_SHM_MAX_VALS;
		rc = mgpu_sync_allreduce_f64(&r->sync, v + k, j);
	}
	met->kp_err_sum = v[0], met->kp_count = (uint64_t)v[1], met->kp_within = (uint64_t)v[2];
	met->sq_sum = v[3], met->sq_count = (uint64_t)v[4], met->pix_count = (uint64_t)v[5];
	for (k = 0; k < C; k++)
		met->inter[k] = (uint64_t)v[6 + k], met->uni[k] = (uint64_t)v[6 + C + k];
	free(v);
	return rc;
}

/* Summed loss, correct count and rows over this rank's slice of idx[0..n);
 * the slices of all ranks cover every row once. The sums stay on the
 * device (eval_acc) until one read at the end. A rank asked to stop
 * leaves its slice at once; the sum that every rank reaches says whether
 * any did, and then all return MGPU_EINTR together. Data with targets
 * also give their metrics in *ts (NULL: not wanted); their accuracy is a
 * mask's pixel accuracy over its labelled pixels, NaN for a mean squared
 * error. */
static int evaluate(struct train_rank *r, int split, const uint32_t *idx,
		    size_t n, double *loss, double *acc, struct mgpu_target_scores *ts)
{
	size_t lo = n * (size_t)r->rank / (size_t)r->world;
	size_t hi = n * (size_t)(r->rank + 1) / (size_t)r->world, i;
	double v[4] = { 0, 0, (double)(hi - lo), 0 };
	struct mgpu_metrics met;
	int B;

	mgpu_metrics_reset(&met, r->d->pck_px);
	MGPU_TRY(r->dev.ops->zero(&r->dev, r->eval_acc, 2 * sizeof(double)));
	if (r->d->tkind)
		MGPU_TRY(mgpu_loader_begin(&r->eval_loader, split, idx + lo, hi - lo));
	for (i = lo; i < hi && !stop_asked(r); i += (size_t)B) {
		B = hi - i < (size_t)r->plan->batch ? (int)(hi - i) : r->plan->batch;
		if (r->d->tkind) {
			MGPU_TRY(eval_batch_t(r, &met, &B));
			continue;
		}
		MGPU_TRY(mgpu_train_load_rows(r, idx + i, B, split));
		MGPU_TRY(mgpu_model_forward(&r->model, B, 0));
		MGPU_TRY(mgpu_model_loss_acc(&r->model, B, 0, 0.0f, r->eval_acc));
	}
	MGPU_TRY(mgpu_dev_to_host(&r->dev, v, r->eval_acc, 2 * sizeof(double)));
	v[3] = stop_asked(r) ? 1.0 : 0.0;
	MGPU_TRY(mgpu_sync_allreduce_f64(&r->sync, v, 4));
	if (v[3] > 0.5)
		return mgpu_err(MGPU_EINTR, "interrupted during the evaluation at step %lld",
				(long long)r->step);
	*loss = v[2] > 0 ? v[0] / v[2] : NAN;
	*acc = v[2] > 0 && r->d->tkind != MGPU_TARGET_VECTOR &&
	       r->d->tkind != MGPU_TARGET_KEYPOINTS ? v[1] / v[2] : NAN;
	if (!r->d->tkind || !ts)
		return 0;
	MGPU_TRY(sum_metrics(r, &met));
	if (r->d->tkind == MGPU_TARGET_MASK) /* over the labelled pixels alone */
		*acc = mgpu_metrics_pixel_acc(&met);
	ts->kp_err_px = mgpu_metrics_kp_error(&met);
	ts->pck = mgpu_metrics_pck(&met);
	ts->miou = mgpu_metrics_miou(&met);
	ts->rmse = mgpu_metrics_rmse(&met);
	return 0;
}

static int eval_record(struct train_rank *r)
{
	struct mgpu_record rec = { .kind = MGPU_REC_EVAL };

	rec.step = r->step;
	rec.epoch = r->epoch;
	rec.test_loss = rec.test_acc = NAN;
	rec.target = r->d->tkind;
	rec.pck_px = r->d->pck_px;
	MGPU_TRY(evaluate(r, r->d->val_split, r->d->val_idx, r->d->nval, &rec.val_loss,
			  &rec.val_acc, &rec.val_t));
	rec.wall_s = mgpu_now_s() - r->t0;
	return mgpu_train_emit(r, &rec);
}

/* Per-rank values to every rank: out[k] = v of rank k. */
static int gather(struct train_rank *r, int64_t v, int64_t *out)
{
	double buf[MGPU_SHM_MAX_VALS];
	int base, k, n;

	for (base = 0; base < r->world && base < MGPU_MAX_DEVICES; base += n) {
		n = r->world - base < MGPU_SHM_MAX_VALS ? r->world - base : MGPU_SHM_MAX_VALS;
		for (k = 0; k < n; k++)
			buf[k] = base + k == r->rank ? (double)v : 0.0;
		MGPU_TRY(mgpu_sync_allreduce_f64(&r->sync, buf, n));
		for (k = 0; k < n && base + k < MGPU_MAX_DEVICES; k++)
			out[base + k] = (int64_t)buf[k];
	}
	return 0;
}

static int64_t peak_rss(void)
{
	struct rusage ru;
	return getrusage(RUSAGE_SELF, &ru) == 0 ? (int64_t)ru.ru_maxrss * 1024 : 0;
}

/* --per-class: the accuracy of each class over rows idx[0..n) of split,
 * this rank's slice counted on the host from the rows' correct flags, the
 * counts summed over the ranks. */
static int per_class(struct train_rank *r, int split, const uint32_t *idx, size_t n)
{
	const struct mgpu_spec *s = &r->model.spec;
	int C = mgpu_spec_classes(s), B, k, j, rc = 0;
	size_t lo = n * (size_t)r->rank / (size_t)r->world;
	size_t hi = n * (size_t)(r->rank + 1) / (size_t)r->world, i, b;
	double *v = calloc(2 * (size_t)C, sizeof *v);
	float *ok = malloc((size_t)r->plan->batch * sizeof *ok);
	struct mgpu_record rec = { .kind = MGPU_REC_CLASS };
	char num[16];

	if (!v || !ok) {
		rc = mgpu_err(MGPU_ENOMEM, "out of memory");
		goto out;
	}
	for (i = lo; i < hi; i += (size_t)B) {
		B = hi - i < (size_t)r->plan->batch ? (int)(hi - i) : r->plan->batch;
		MGPU_CHECK(mgpu_train_load_rows(r, idx + i, B, split));
		MGPU_CHECK(mgpu_model_forward(&r->model, B, 0));
		MGPU_CHECK(mgpu_model_loss_acc(&r->model, B, 0, 0.0f, r->eval_acc));
		MGPU_CHECK(mgpu_dev_to_host(&r->dev, ok, r->model.row_correct,
					    (size_t)B * sizeof *ok));
		for (b = 0; b < (size_t)B; b++) {
			v[r->yb[b]] += 1.0;
			v[C + r->yb[b]] += ok[b];
		}
	}
	for (k = 0; k < 2 * C; k += j) {
		j = 2 * C - k < MGPU_SHM_MAX_VALS ? 2 * C - k : MGPU_SHM_MAX_VALS;
		MGPU_CHECK(mgpu_sync_allreduce_f64(&r->sync, v + k, j));
	}
	rec.step = r->step;
	rec.epoch = r->epoch + (r->pos > 0);
	for (k = 0; k < C; k++) {
		rec.class_id = k;
		rec.class_name = mgpu_class_name(r->d->src.names, r->d->src.nnames, k, num);
		rec.samples = (int64_t)v[k];
		rec.test_acc = rec.val_acc = NAN;
		*(split == MGPU_SPLIT_TEST ? &rec.test_acc : &rec.val_acc) =
			v[k] > 0 ? v[C + k] / v[k] : NAN;
		MGPU_CHECK(mgpu_train_emit(r, &rec));
	}
out:
	free(v);
	free(ok);
	return rc;
}

static int summary(struct train_rank *r, int64_t steps_run)
{
	struct mgpu_record rec = { .kind = MGPU_REC_SUMMARY };
	uint32_t *all;
	size_t i, ntest;
	int rc;

	rec.loss_scale = r->loss_scale > 0 ? r->loss_scale : NAN;
	rec.skipped = r->ls_skipped;
	rec.step = r->step;
	rec.epoch = r->epoch + (r->pos > 0); /* as the step rows count: 1-based, partial included */
	rec.wall_s = mgpu_now_s() - r->t0;
	rec.samples_per_s = steps_run > 0 ? (double)steps_run * (double)r->plan->global / rec.wall_s : NAN;
	ntest = r->d->src.n[MGPU_SPLIT_TEST];
	all = malloc((ntest + 1) * sizeof *all);
	if (!all)
		return mgpu_err(MGPU_ENOMEM, "out of memory");
	for (i = 0; i < ntest; i++)
		all[i] = (uint32_t)i;
	rec.target = r->d->tkind;
	rec.pck_px = r->d->pck_px;
	rc = evaluate(r, MGPU_SPLIT_TEST, all, ntest, &rec.test_loss, &rec.test_acc,
		      &rec.test_t);
	free(all);
	MGPU_TRY(rc);
	MGPU_TRY(evaluate(r, r->d->val_split, r->d->val_idx, r->d->nval, &rec.val_loss,
			  &rec.val_acc, &rec.val_t));
	rec.ndev = r->world < MGPU_MAX_DEVICES ? r->world : MGPU_MAX_DEVICES;
	MGPU_TRY(gather(r, (int64_t)r->dev.bytes_peak, rec.peak_bytes));
	MGPU_TRY(gather(r, peak_rss(), rec.rss_bytes));
	MGPU_TRY(mgpu_train_emit(r, &rec));
	if (!r->cfg->per_class)
		return 0;
	if (ntest == 0)
		return per_class(r, r->d->val_split, r->d->val_idx, r->d->nval);
	all = malloc((ntest + 1) * sizeof *all);
	if (!all)
		return mgpu_err(MGPU_ENOMEM, "out of memory");
	for (i = 0; i < ntest; i++)
		all[i] = (uint32_t)i;
	rc = per_class(r, MGPU_SPLIT_TEST, all, ntest);
	free(all);
	return rc;
}

static int epoch_end(struct train_rank *r, double lr)
{
	MGPU_TRY(flush_window(r, lr));
	r->epoch++;
	r->pos = 0;
	return eval_record(r);
}

/* A checkpoint of the current step, unless it exists already. */
static int save_once(struct train_rank *r, int64_t *saved_step)
{
	if (!r->cfg->save_dir[0] || *saved_step == r->step)
		return 0;
	*saved_step = r->step;
	return save(r);
}

/* Checkpoints at each epoch's end (--save-every 0) or every N steps. */
static int save_due(const struct train_rank *r, int epoch_ended)
{
	const struct mgpu_train_cfg *c = r->cfg;

	return c->save_every > 0 ? r->step % c->save_every == 0 : epoch_ended;
}

static void step_info(const struct train_rank *r, double lr)
{
	struct mgpu_step_info s = {
		.step = r->step, .total = r->total_steps, .epoch = r->epoch + 1,
		.loss = r->sync.step_loss / (double)r->plan->global, .lr = lr,
		.samples = r->plan->global,
	};

	r->h->on_progress(r->h->ctx, &s);
}

static int start_record(struct train_rank *r)
{
	struct mgpu_record rec = { .kind = MGPU_REC_START };

	rec.step = r->cfg->evaluate ? r->step : r->total_steps;
	rec.epoch = (int)r->steps_per_epoch;
	rec.first_step = r->step;
	rec.spec = &r->cfg->spec;
	rec.sample_ndim = mgpu_source_shape(&r->d->src, rec.sample_shape);
	rec.classes = r->d->tkind ? r->d->classes : mgpu_source_nclasses(&r->d->src);
	rec.target = r->d->tkind;
	return mgpu_train_emit(r, &rec);
}

int mgpu_train_rank_loop(struct train_rank *r)
{
	const struct mgpu_train_cfg *c = r->cfg;
	int64_t start = r->step, saved_step = r->step;
	double lr = 0;
	int stop = 0, ended, rc;

	MGPU_TRY(start_record(r));
	r->t0 = mgpu_now_s();
	while (r->step < r->total_steps && !c->evaluate) {
		if (r->pos == 0 || r->step == start) {
			mgpu_train_order(r->d, c->seed, r->epoch, r->order);
			MGPU_TRY(begin_epoch_rows(r));
		}
		lr = mgpu_sched_lr(&r->sched, r->step);
		MGPU_TRY(train_step(r, lr, &stop));
		if (r->rank == 0 && r->h->on_progress)
			step_info(r, lr);
		if (r->win_steps >= c->log_every)
			MGPU_TRY(flush_window(r, lr));
		ended = r->pos == r->steps_per_epoch;
		rc = ended ? epoch_end(r, lr) : 0;
		if (rc == MGPU_EINTR) /* during the evaluation: stop as after a step */
			stop = 1;
		else if (rc < 0)
			return rc;
		if (save_due(r, ended))
			MGPU_TRY(save_once(r, &saved_step));
		if (stop) {
			MGPU_TRY(flush_window(r, lr));
			MGPU_TRY(save_once(r, &saved_step));
			if (r->rank == 0 && r->h->on_stop)
				r->h->on_stop(r->h->ctx);
			return mgpu_err(MGPU_EINTR, "interrupted at step %lld",
					(long long)r->step);
		}
	}
	MGPU_TRY(flush_window(r, lr));
	if (!c->evaluate)
		MGPU_TRY(save_once(r, &saved_step));
	MGPU_TRY(summary(r, r->step - start));
	if (r->rank == 0 && c->predict[0])
		MGPU_TRY(mgpu_train_predict(r));
	if (r->rank == 0 && r->h->on_model)
		return r->h->on_model(r->h->ctx, &r->model, r->d->src.dtype);
	return 0;
}

/* Tell the other ranks this one failed, so none waits out the timeout. */
static void abort_peers(struct train_rank *r, int rc)
{
	struct mgpu_shm view;

	if (r->sync_open) {
		mgpu_sync_abort(&r->sync, rc);
	} else if (r->dp_shm) {
		mgpu_shm_view(&view, r->dp_shm, r->rank);
		mgpu_shm_abort(&view, rc == MGPU_ECLOSED);
	}
}

static int run_one(struct train_rank *r)
{
	int rc = mgpu_train_rank_setup(r);

	if (rc == 0)
		rc = mgpu_train_rank_loop(r);
	if (rc < 0 && rc != MGPU_EINTR)
		abort_peers(r, rc);
	mgpu_train_rank_free(r);
	return rc;
}

/* Mode dp: a thread per device; errors keep their thread's message. */
struct dp_thread {
	struct train_rank r;
	pthread_t tid;
	char msg[1024];
};

static void *dp_main(void *arg)
{
	struct dp_thread *t = arg;

	t->r.rc = run_one(&t->r);
	if (t->r.rc < 0)
		snprintf(t->msg, sizeof t->msg, "%s", mgpu_errmsg());
	return NULL;
}

/* A failure of its own beats one that only followed another thread's. */
static int secondary(int rc)
{
	return rc == MGPU_EPEER || rc == MGPU_ETIMEOUT || rc == MGPU_ECLOSED;
}

static int first_failure(const struct dp_thread *t, int n)
{
	int i, first = -1;

	for (i = 0; i < n; i++)
		if (t[i].r.rc < 0 && (first < 0 || (secondary(t[first].r.rc) &&
						    !secondary(t[i].r.rc))))
			first = i;
	return first;
}

static int run_dp(const struct mgpu_train_cfg *cfg, const struct mgpu_train_hooks *h,
		  struct train_data *d)
{
	struct mgpu_shm seg, view;
	struct dp_thread *t = calloc((size_t)cfg->plan.world, sizeof *t);
	int i, started = 0, rc, first;

	if (!t)
		return mgpu_err(MGPU_ENOMEM, "out of memory for %d threads", cfg->plan.world);
	memset(&seg, 0, sizeof seg);
	rc = mgpu_shm_create_private(&seg, cfg->plan.world, mgpu_model_count(&cfg->spec), 0,
				     cfg->timeout_ms);
	for (i = 0; rc == 0 && i < cfg->plan.world; i++) {
		t[i].r = (struct train_rank){ .cfg = cfg, .h = h, .d = d, .rank = i,
					      .world = cfg->plan.world, .local_rank = i,
					      .dp_shm = &seg };
		if (pthread_create(&t[i].tid, NULL, dp_main, &t[i]) != 0) {
			rc = mgpu_err(MGPU_EIO, "cannot start the thread of device %d", i);
			mgpu_shm_view(&view, &seg, i); /* the started ones stop now */
			mgpu_shm_abort(&view, 0);
			break;
		}
		started++;
	}
	for (i = 0; i < started; i++)
		pthread_join(t[i].tid, NULL);
	first = first_failure(t, started);
	if (first >= 0 && rc == 0)
		rc = t[first].r.rc == MGPU_EINTR || t[first].r.rc == MGPU_ECLOSED ?
			     mgpu_err(t[first].r.rc, "%s", t[first].msg) :
			     mgpu_err(t[first].r.rc, "device %d: %s", first, t[first].msg);
	if (seg.base)
		mgpu_shm_close(&seg);
	free(t);
	return rc;
}

/* An evaluation feeds the model inputs normalised as in its training:
 * with the checkpoint's statistics, not the data's. */
static int evaluation_norm(const struct mgpu_train_cfg *cfg, struct mgpu_norm *n)
{
	struct mgpu_ckpt_state st;
	char dir[MGPU_CKPT_PATH];

	if (!cfg->evaluate)
		return 0;
	MGPU_TRY(mgpu_ckpt_resolve(cfg->resume, dir, sizeof dir));
	MGPU_TRY(mgpu_ckpt_load_state(dir, &st, NULL, NULL));
	n->scale = (float)st.norm_scale;
	n->shift = (float)st.norm_shift;
	return 0;
}

int mgpu_train_run(const struct mgpu_train_cfg *given, const struct mgpu_train_hooks *h)
{
	struct mgpu_ckpt_dir sd = { .fd = -1 };
	struct mgpu_norm norm = { 1.0f, 0.0f };
	/* the run's own copy, whose spec the data completes (auto sizes) */
	struct mgpu_train_cfg *cfg = malloc(sizeof *cfg);
	struct train_data d;
	struct train_rank r;
	int rc;

	if (!cfg)
		return mgpu_err(MGPU_ENOMEM, "out of memory");
	*cfg = *given;
	memset(&d, 0, sizeof d);
	/* Rank 0 writes the checkpoints: it holds the save dir for the run. */
	if (cfg->save_dir[0] && cfg->env.rank == 0)
		rc = mgpu_train_open_save_dir(&sd, cfg->save_dir);
	else
		rc = 0;
	if (rc == 0)
		rc = evaluation_norm(cfg, &norm);
	if (rc == 0)
		rc = mgpu_train_data_load(&d, cfg, &cfg->spec, cfg->evaluate ? &norm : NULL);
	if (rc == 0 && cfg->mode == MGPU_MODE_DP && cfg->plan.world > 1) {
		rc = run_dp(cfg, h, &d);
	} else if (rc == 0) {
		r = (struct train_rank){ .cfg = cfg, .h = h, .d = &d, .rank = cfg->env.rank,
					 .world = cfg->env.world,
					 .local_rank = cfg->env.local_rank };
		rc = run_one(&r);
	}
	mgpu_train_data_free(&d);
	mgpu_ckpt_dir_close(&sd);
	free(cfg);
	return rc;
}
