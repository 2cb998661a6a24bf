/*
 * train_rank.c - set up one rank: device, gradient sync, model, optimizer,
 * resumed state, schedule (see train_int.h).
 */
#include "train/train_int.h"

#include <math.h>   /* sqrt */
#include <stdio.h>  /* snprintf, sscanf */
#include <stdlib.h> /* malloc, free, getenv */
#include <string.h> /* strcmp */

#include "core/err.h" /* mgpu_err */
#include "train/ckpt.h"  /* mgpu_ckpt_* */
#include "model/hf_gpt2.h" /* mgpu_hf_gpt2_load */

/* Fail before training, not at the first checkpoint an epoch later. */
int mgpu_train_open_save_dir(struct mgpu_ckpt_dir *d, const char *dir)
{
	int rc = mgpu_ckpt_dir_open(d, dir);

	return rc < 0 ? mgpu_err_prefix(rc, "--save-dir: ") : 0;
}

static int open_device(struct train_rank *r)
{
	const struct mgpu_train_cfg *c = r->cfg;
	const struct mgpu_ops *ops = mgpu_ops_find(c->backend);
	/* Without a list, local rank k of a GPU job takes GPU k (torchrun does
	 * not set CUDA_VISIBLE_DEVICES per rank); CPU ranks share device 0. */
	int want = c->ndevices ? c->devices[r->local_rank % c->ndevices] :
				 ops && !mgpu_ops_can(ops, MGPU_CAP_HOST_MEMORY) ? r->local_rank : 0;
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
	struct mgpu_rank_env env = c->env;
	char ident[MGPU_IDENT_LEN];

	if (r->dp_shm) {
		MGPU_TRY(mgpu_sync_open_dp(&r->sync, r->dp_shm, r->rank));
	} else {
		/* ranks that would train different runs fail at the rendezvous,
		 * not with different weights or in a deadlock later */
		snprintf(ident, sizeof ident, "%s", c->ident ? c->ident : "");
		if (r->world > 1)
			MGPU_TRY(mgpu_train_data_ident(r->d, ident, sizeof ident));
		env.ident = ident;
		MGPU_TRY(mgpu_sync_open(&r->sync, &env, c->sync, np,
					mgpu_optim_nstate_for(&c->optim), &r->dev,
					c->timeout_ms));
	}
	r->sync_open = 1;
	return mgpu_sync_set_grad_prec(&r->sync, c->grad_prec);
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

	mgpu_sync_model_buffers(&r->sync, mgpu_ops_can(r->dev.ops, MGPU_CAP_HOST_MEMORY), &w, &g,
				&s0, &s1);
	MGPU_TRY(mgpu_model_create_ext(&r->model, &c->spec, &r->dev, c->plan.batch, w, g));
	MGPU_TRY(mgpu_train_data_check(r->d, c, &r->model));
	MGPU_TRY(mgpu_model_set_prec(&r->model, c->prec));
	account_shared(r, w, g);
	if (s0 || s1 || !mgpu_sync_owns_optimizer(&r->sync))
		MGPU_TRY(mgpu_optim_create_ext(&r->opt, &r->model, &c->optim, s0, s1));
	else
		MGPU_TRY(mgpu_optim_create(&r->opt, &r->model, &c->optim));
	if (r->d->tkind) {
		MGPU_TRY(mgpu_model_set_targets(&r->model, r->d->tkind, r->d->K, r->d->P, r->d->h,
						r->d->w, r->d->classes));
		/* what the data's check read from the spec, the built model gives */
		if (mgpu_model_logits_per_row(&r->model) != mgpu_target_outputs(&r->model.tgt))
			return mgpu_err(MGPU_EINVAL, "model: %zu outputs a sample, the target takes "
					"%zu", mgpu_model_logits_per_row(&r->model),
					mgpu_target_outputs(&r->model.tgt));
	}
	if (mgpu_sync_loads_state(&r->sync)) {
		MGPU_TRY(mgpu_model_init(&r->model, c->seed));
		if (c->init[0]) /* weights only: the optimizer starts fresh */
			MGPU_TRY(mgpu_hf_gpt2_load(&r->model, c->init));
	}
	return 0;
}

/* The checkpoint of cfg->resume, checked against this run. */
static int resume_state(const struct mgpu_train_cfg *c, char *dir, size_t len,
			struct mgpu_ckpt_state *st)
{
	const struct mgpu_batch_plan *p = &c->plan;
	struct mgpu_spec s = c->spec, ck;
	char spec[MGPU_SPEC_TEXT_MAX], split[128];

	MGPU_TRY(mgpu_ckpt_resolve(c->resume, dir, len));
	MGPU_TRY(mgpu_ckpt_load_state(dir, st, NULL, NULL));
	/* an auto size (before the data is read) matches the checkpoint's */
	if (mgpu_spec_has_auto(&s) && mgpu_spec_parse(&ck, st->spec, "checkpoint") == 0)
		mgpu_spec_take_auto(&s, &ck);
	MGPU_TRY(mgpu_spec_format(&s, spec, sizeof spec));
	if (strcmp(spec, st->spec) != 0)
		return mgpu_err(MGPU_EINVAL, "'%s': checkpoint holds model '%s', not '%s'", dir,
				st->spec, spec);
	if (st->seed != c->seed)
		return mgpu_err(MGPU_EINVAL, "'%s': checkpoint was made with --seed %llu",
				dir, (unsigned long long)st->seed);
	/* an evaluation takes any batch and world: it does not continue the run */
	if (st->global_batch == p->global || c->evaluate)
		return 0;
	mgpu_batch_describe(p, split, sizeof split);
	return mgpu_err(MGPU_EINVAL, "'%s': the checkpoint ran with a global batch of %lld "
			"samples on %d rank%s; this run's is %lld (%s): give "
			"--global-batch-size %lld", dir, (long long)st->global_batch,
			st->world_size, st->world_size > 1 ? "s" : "", (long long)p->global,
			split, (long long)st->global_batch);
}

int mgpu_train_precheck(const struct mgpu_train_cfg *c)
{
	struct mgpu_ckpt_dir sd;

	/* Rank 0 opens it for the run; open and close it here only to fail
	 * before any rank starts. */
	if (c->save_dir[0]) {
		MGPU_TRY(mgpu_train_open_save_dir(&sd, c->save_dir));
		mgpu_ckpt_dir_close(&sd);
	}
	return 0;
}

int mgpu_train_check_resume(const struct mgpu_train_cfg *c)
{
	struct mgpu_ckpt_state st;
	char dir[MGPU_CKPT_PATH];

	return resume_state(c, dir, sizeof dir, &st);
}

static int resume(struct train_rank *r)
{
	const struct mgpu_train_cfg *c = r->cfg;
	struct mgpu_ckpt_state st;
	char dir[MGPU_CKPT_PATH];
	int other_norm;

	MGPU_TRY(resume_state(c, dir, sizeof dir, &st));
	/* The sample order does not depend on the world size: any number of
	 * ranks with the checkpoint's global batch continues the same run. */
	r->pos = st.epoch_pos;
	/* a language model's ids are never normalised: the statistics older
	 * builds recorded for its bytes are no difference in the data */
	other_norm = !mgpu_spec_is_lm(&c->spec) && (st.norm_scale != r->d->src.norm.scale ||
						     st.norm_shift != r->d->src.norm.shift);
	if (!c->evaluate && (r->pos >= r->steps_per_epoch || other_norm))
		return mgpu_err(MGPU_EINVAL, "'%s': the checkpoint was made on other data (its "
				"epoch has more steps, or other feature statistics) than '%s'",
				dir, c->data);
	if (mgpu_sync_loads_state(&r->sync))
		MGPU_TRY(mgpu_ckpt_load_tensors(dir, &r->model, &r->opt));
	r->step = st.step;
	r->epoch = st.epoch;
	r->opt.t = st.optim_t;
	if (r->loss_scale > 0 && st.loss_scale > 0) { /* the scaler goes on where it was */
		r->loss_scale = st.loss_scale;
		r->ls_clean = st.loss_scale_clean;
		r->ls_skipped = st.skipped_steps;
	}
	return 0;
}

/* MGPU_TEST_OVERFLOW=RANK:STEP: the step (0-based) at which this rank's
 * gradient is made infinite, or -1. For the tests of loss scaling. */
static int64_t inject_step(int rank)
{
	const char *v = getenv("MGPU_TEST_OVERFLOW");
	long long step;
	int at;

	if (!v || sscanf(v, "%d:%lld", &at, &step) != 2 || at != rank)
		return -1;
	return step;
}

static void setup_sched(struct train_rank *r)
{
	const struct mgpu_train_cfg *c = r->cfg;
	double f = (double)c->plan.world * c->plan.accum;

	r->steps_per_epoch = mgpu_batch_steps_per_epoch(&c->plan, r->d->ntrain, c->pad_tail);
	r->total_steps = r->steps_per_epoch * c->epochs;
	if (c->max_steps > 0 && c->max_steps < r->total_steps)
		r->total_steps = c->max_steps;
	r->lr_factor = c->lr_scale == MGPU_LR_SCALE_LINEAR ? f :
		       c->lr_scale == MGPU_LR_SCALE_SQRT   ? sqrt(f) : 1.0;
	r->sched = (struct mgpu_sched){
		.kind = c->sched, .lr = c->lr * r->lr_factor, .min_lr = c->min_lr,
		.gamma = c->gamma, .total_steps = r->total_steps,
		.warmup_steps = c->warmup_steps ? c->warmup_steps :
			(int64_t)(c->warmup_epochs * (double)r->steps_per_epoch + 0.5),
		.step_every = (int64_t)(c->step_epochs * (double)r->steps_per_epoch + 0.5),
	};
}

/* Data with targets: the loaders render keypoints at the run's sigma and
 * stride; evaluations read through a loader of their own, which never
 * augments (the trainer's own validation rows are training rows). */
static int open_eval_loader(struct train_rank *r)
{
	const struct mgpu_train_cfg *c = r->cfg;
	size_t per = mgpu_model_logits_per_row(&r->model);

	MGPU_TRY(mgpu_loader_targets(&r->loader, &c->topt));
	MGPU_TRY(mgpu_loader_create(&r->eval_loader, &r->d->src, r->plan->batch, 0));
	r->eval_loader_open = 1;
	MGPU_TRY(mgpu_loader_targets(&r->eval_loader, &c->topt));
	r->tout = malloc((size_t)r->plan->batch * per * sizeof *r->tout);
	if (!r->tout)
		return mgpu_err(MGPU_ENOMEM, "out of memory for a batch's outputs");
	return 0;
}

int mgpu_train_rank_setup(struct train_rank *r)
{
	const struct mgpu_train_cfg *c = r->cfg;

	r->plan = &c->plan;
	if (!c->evaluate)
		MGPU_TRY(mgpu_batch_check_fits(r->plan, r->d->ntrain));
	MGPU_TRY(open_device(r));
	MGPU_TRY(open_sync(r));
	MGPU_TRY(build_model(r));
	setup_sched(r);
	r->inject_step = inject_step(r->rank);
	if (c->prec == MGPU_PREC_FP16) {
		r->opt.scaling = 1; /* before the sync binds: its updates wait for the norm */
		r->loss_scale = c->loss_scale_init;
	}
	if (c->resume[0])
		MGPU_TRY(resume(r));
	MGPU_TRY(mgpu_sync_bind(&r->sync, &r->model, &r->opt));
	if (c->sync_bn)
		MGPU_TRY(mgpu_sync_bind_bn(&r->sync, &r->model));
	r->order = malloc((r->d->ntrain + 1) * sizeof *r->order);
	r->rank_order = malloc(((size_t)r->steps_per_epoch * (size_t)r->plan->accum *
				(size_t)r->plan->batch + 1) * sizeof *r->rank_order);
	r->xb = malloc((size_t)r->plan->batch * r->d->src.row_nbytes);
	r->yb = malloc((size_t)r->plan->batch * sizeof(int32_t));
	if (!r->order || !r->rank_order || !r->xb || !r->yb)
		return mgpu_err(MGPU_ENOMEM, "out of memory for the batch buffers");
	MGPU_TRY(mgpu_dev_alloc(&r->dev, (void **)&r->eval_acc, 2 * sizeof(double)));
	MGPU_TRY(mgpu_loader_create(&r->loader, &r->d->src, r->plan->batch, c->prefetch));
	r->loader_open = 1;
	MGPU_TRY(mgpu_loader_augment(&r->loader, &c->augment, c->seed));
	return r->d->tkind ? open_eval_loader(r) : 0;
}

void mgpu_train_rank_free(struct train_rank *r)
{
	mgpu_optim_free(&r->opt);
	mgpu_model_free(&r->model);
	if (r->sync_open)
		mgpu_sync_close(&r->sync);
	if (r->dev_open) {
		mgpu_dev_free(&r->dev, r->eval_acc, 2 * sizeof(double));
		mgpu_dev_close(&r->dev);
	}
	r->eval_acc = NULL;
	if (r->loader_open)
		mgpu_loader_free(&r->loader);
	r->loader_open = 0;
	if (r->eval_loader_open)
		mgpu_loader_free(&r->eval_loader);
	r->eval_loader_open = 0;
	free(r->tout);
	r->tout = NULL;
	free(r->rank_order);
	r->rank_order = NULL;
	free(r->order);
	free(r->xb);
	free(r->yb);
	r->order = NULL;
	r->xb = NULL;
	r->yb = NULL;
}
