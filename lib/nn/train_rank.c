/*
 * train_rank.c - set up one rank: device, gradient sync, model, optimizer,
 * resumed state, schedule (see train_int.h).
 */
#include "nn/train_int.h"

#include <math.h>   /* sqrt */
#include <stdlib.h> /* malloc, free */
#include <string.h> /* strcmp */

#include "core/err.h" /* mgpu_err */
#include "nn/ckpt.h"  /* mgpu_ckpt_* */

static int open_device(struct train_rank *r)
{
	const struct mgpu_train_cfg *c = r->cfg;
	const struct mgpu_ops *ops = mgpu_ops_find(c->backend);
	int want = c->ndevices ? c->devices[r->local_rank % c->ndevices] : 0;
	char why[256] = "";
	int n = 0;

	if (!ops)
		return mgpu_err(MGPU_EUNSUP, "backend '%s' is not in this build", c->backend);
	MGPU_TRY(ops->device_count(&n, why, sizeof why));
	if (want >= n)
		return mgpu_err(MGPU_EINVAL, "%s device %d does not exist (%d found%s%s)",
				ops->name, want, n, why[0] ? ": " : "", why);
	MGPU_TRY(mgpu_dev_open(&r->dev, ops, want));
	r->dev_open = 1;
	return 0;
}

static int open_sync(struct train_rank *r)
{
	const struct mgpu_train_cfg *c = r->cfg;
	size_t np = mgpu_model_count(&c->spec);

	if (r->dp_shm) {
		mgpu_sync_open_dp(&r->sync, r->dp_shm, r->rank);
	} else {
		MGPU_TRY(mgpu_sync_open(&r->sync, &c->env, c->sync, np,
					mgpu_optim_nstate_for(&c->optim), &r->dev,
					c->timeout_ms));
	}
	r->sync_open = 1;
	return 0;
}

/* Count the shared buffers a rank uses against its device: its gradient
 * slot and, in mode ddp, its share of the shared weights and state. */
static void account_shared(struct train_rank *r, const float *w, const float *g)
{
	size_t vec = r->model.nparams * sizeof(float), n = 0;
	int nstate = mgpu_optim_nstate_for(&r->cfg->optim);

	if (g)
		n += vec;
	if (w)
		n += vec * (size_t)(1 + nstate) / (size_t)r->world;
	r->dev.bytes_cur += n;
	if (r->dev.bytes_cur > r->dev.bytes_peak)
		r->dev.bytes_peak = r->dev.bytes_cur;
}

static int build_model(struct train_rank *r)
{
	const struct mgpu_train_cfg *c = r->cfg;
	float *w, *g, *s0, *s1;

	mgpu_sync_model_buffers(&r->sync, r->dev.ops->host_memory, &w, &g, &s0, &s1);
	MGPU_TRY(mgpu_model_create_ext(&r->model, &c->spec, &r->dev, c->batch, w, g));
	account_shared(r, w, g);
	if (s0 || s1 || !mgpu_sync_owns_optimizer(&r->sync))
		MGPU_TRY(mgpu_optim_create_ext(&r->opt, &r->model, &c->optim, s0, s1));
	else
		MGPU_TRY(mgpu_optim_create(&r->opt, &r->model, &c->optim));
	if (mgpu_sync_loads_state(&r->sync))
		MGPU_TRY(mgpu_model_init(&r->model, c->seed));
	return 0;
}

/* Position in the epoch, in samples, must fall on a step of this run. */
static int resume_position(struct train_rank *r, const struct mgpu_ckpt_state *st,
			   const char *dir)
{
	int64_t samples = st->epoch_pos * st->global_batch;

	if (samples % r->gba != 0)
		return mgpu_err(MGPU_EINVAL, "'%s': the checkpoint is %lld samples into epoch "
				"%d, not a whole number of steps of %lld samples (it ran with "
				"a global batch of %lld)", dir, (long long)samples,
				st->epoch + 1, (long long)r->gba, (long long)st->global_batch);
	r->pos = samples / r->gba;
	return 0;
}

static int resume(struct train_rank *r)
{
	const struct mgpu_train_cfg *c = r->cfg;
	struct mgpu_ckpt_state st;
	char dir[MGPU_CKPT_PATH], spec[512];

	MGPU_TRY(mgpu_ckpt_resolve(c->resume, dir, sizeof dir));
	MGPU_TRY(mgpu_ckpt_load_state(dir, &st, NULL, NULL));
	MGPU_TRY(mgpu_spec_format(&c->spec, spec, sizeof spec));
	if (strcmp(spec, st.spec) != 0)
		return mgpu_err(MGPU_EINVAL, "'%s': checkpoint holds model '%s', not '%s'", dir,
				st.spec, spec);
	if (st.seed != c->seed)
		return mgpu_err(MGPU_EINVAL, "'%s': checkpoint was made with --seed %llu",
				dir, (unsigned long long)st.seed);
	MGPU_TRY(resume_position(r, &st, dir));
	if (mgpu_sync_loads_state(&r->sync))
		MGPU_TRY(mgpu_ckpt_load_tensors(dir, &r->model, &r->opt));
	r->step = st.step;
	r->epoch = st.epoch;
	r->opt.t = st.optim_t;
	return 0;
}

static void setup_sched(struct train_rank *r)
{
	const struct mgpu_train_cfg *c = r->cfg;
	int64_t n = (int64_t)r->d->ntrain;
	double f = (double)r->world * c->accum;

	r->steps_per_epoch = c->pad_tail ? (n + r->gba - 1) / r->gba : n / r->gba;
	r->total_steps = r->steps_per_epoch * c->epochs;
	if (c->max_steps > 0 && c->max_steps < r->total_steps)
		r->total_steps = c->max_steps;
	r->lr_factor = c->lr_scale == MGPU_LR_SCALE_LINEAR ? f :
		       c->lr_scale == MGPU_LR_SCALE_SQRT   ? sqrt(f) : 1.0;
	r->sched = (struct mgpu_sched){
		.kind = c->sched, .lr = c->lr * r->lr_factor, .min_lr = c->min_lr,
		.gamma = c->gamma, .total_steps = r->steps_per_epoch * c->epochs,
		.warmup_steps = c->warmup_steps ? c->warmup_steps :
			(int64_t)(c->warmup_epochs * (double)r->steps_per_epoch + 0.5),
		.step_every = (int64_t)(c->step_epochs * (double)r->steps_per_epoch + 0.5),
	};
}

static int check_sizes(struct train_rank *r)
{
	if (r->gba > (int64_t)r->d->ntrain)
		return mgpu_err(MGPU_EINVAL, "the global batch of %lld samples (%d per device x "
				"%d accumulation steps x %d ranks) is larger than the %zu "
				"training samples", (long long)r->gba, r->cfg->batch,
				r->cfg->accum, r->world, r->d->ntrain);
	return 0;
}

int mgpu_train_rank_setup(struct train_rank *r)
{
	const struct mgpu_train_cfg *c = r->cfg;
	size_t dim = (size_t)c->spec.dims[0];

	r->gba = (int64_t)c->batch * c->accum * r->world;
	MGPU_TRY(check_sizes(r));
	MGPU_TRY(open_device(r));
	MGPU_TRY(open_sync(r));
	MGPU_TRY(build_model(r));
	setup_sched(r);
	if (c->resume[0])
		MGPU_TRY(resume(r));
	MGPU_TRY(mgpu_sync_bind(&r->sync, &r->model, &r->opt));
	r->order = malloc((r->d->ntrain + 1) * sizeof *r->order);
	r->xb = malloc((size_t)c->batch * dim);
	r->yb = malloc((size_t)c->batch * sizeof(int32_t));
	if (!r->order || !r->xb || !r->yb)
		return mgpu_err(MGPU_ENOMEM, "out of memory for the batch buffers");
	return 0;
}

void mgpu_train_rank_free(struct train_rank *r)
{
	mgpu_optim_free(&r->opt);
	mgpu_model_free(&r->model);
	if (r->sync_open)
		mgpu_sync_close(&r->sync);
	if (r->dev_open)
		mgpu_dev_close(&r->dev);
	free(r->order);
	free(r->xb);
	free(r->yb);
	r->order = NULL;
	r->xb = NULL;
	r->yb = NULL;
}
