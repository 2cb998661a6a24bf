/*
 * optim.c - optimizer updates and schedules (see optim.h).
 */
#include "train/optim.h"

#include <math.h>   /* cos, pow, sqrt, NAN */
#include <string.h> /* memset */

#include "core/err.h" /* MGPU_TRY */

const char *mgpu_optim_name(int kind)
{
	return kind == MGPU_OPT_ADAMW ? "adamw" : "sgd";
}

static int state_alloc(struct mgpu_optim *o, float **p)
{
	struct mgpu_model *m = o->model;
	size_t nbytes = m->nparams * sizeof(float);

	MGPU_TRY(mgpu_dev_alloc(m->dev, (void **)p, nbytes));
	return m->dev->ops->zero(m->dev, *p, nbytes);
}

int mgpu_optim_nstate_for(const struct mgpu_optim_cfg *cfg)
{
	if (cfg->kind == MGPU_OPT_ADAMW)
		return 2;
	return cfg->momentum != 0.0f;
}

int mgpu_optim_create_ext(struct mgpu_optim *o, struct mgpu_model *model,
			  const struct mgpu_optim_cfg *cfg, float *state0, float *state1)
{
	int n = mgpu_optim_nstate_for(cfg);

	memset(o, 0, sizeof *o);
	o->cfg = *cfg;
	o->model = model;
	o->ext = 1;
	o->m = n > 0 ? state0 : NULL;
	o->v = n > 1 ? state1 : NULL;
	return 0;
}

int mgpu_optim_create(struct mgpu_optim *o, struct mgpu_model *model,
		      const struct mgpu_optim_cfg *cfg)
{
	memset(o, 0, sizeof *o);
	o->cfg = *cfg;
	o->model = model;
	if (cfg->kind == MGPU_OPT_ADAMW) {
		MGPU_TRY(state_alloc(o, &o->m));
		return state_alloc(o, &o->v);
	}
	if (cfg->momentum != 0.0f)
		return state_alloc(o, &o->m);
	return 0;
}

void mgpu_optim_free(struct mgpu_optim *o)
{
	struct mgpu_dev *dev = o->model ? o->model->dev : NULL;
	size_t nbytes = o->model ? o->model->nparams * sizeof(float) : 0;

	if (dev && !o->ext) {
		mgpu_dev_free(dev, o->m, nbytes);
		mgpu_dev_free(dev, o->v, nbytes);
	}
	memset(o, 0, sizeof *o);
}

int mgpu_optim_nstate(const struct mgpu_optim *o)
{
	return (o->m != NULL) + (o->v != NULL);
}

float *mgpu_optim_state(struct mgpu_optim *o, int i)
{
	return i == 0 ? o->m : o->v;
}

float mgpu_optim_clip_factor(const struct mgpu_optim *o, double norm)
{
	if (o->cfg.clip_norm <= 0.0f || !(norm > o->cfg.clip_norm))
		return 1.0f;
	return (float)(o->cfg.clip_norm / (norm + 1e-6));
}

/* Global-norm clipping folds into grad_scale: the norm's is the only extra
 * pass over g. It is taken without clipping too, so that training can stop
 * on a non-finite gradient before anything is saved; then it stays on the
 * device (norm2_dev) until the step's one read. */
int mgpu_optim_defers(const struct mgpu_optim *o)
{
	return o->cfg.clip_norm > 0.0f || o->scaling;
}

int mgpu_optim_reads_norm(const struct mgpu_optim *o, float grad_scale)
{
	return !(o->norm2_dev && !mgpu_optim_defers(o) && grad_scale == 1.0f);
}

float mgpu_optim_update_factor(struct mgpu_optim *o, double norm, float grad_scale)
{
	double unscale = o->scaling ? 1.0 / o->loss_scale : 1.0;

	o->last_norm = norm * unscale;
	o->skipped = o->scaling && !isfinite(o->last_norm);
	return (float)(grad_scale * unscale) * mgpu_optim_clip_factor(o, o->last_norm);
}

static int clip_scale(struct mgpu_optim *o, float grad_scale, float *out)
{
	struct mgpu_model *m = o->model;
	float norm;

	o->norm2_queued = !mgpu_optim_reads_norm(o, grad_scale);
	o->skipped = 0;
	if (o->norm2_queued) {
		o->last_norm = NAN;
		*out = grad_scale;
		return m->dev->ops->sum_acc(m->dev, o->norm2_dev, m->g, m->nparams, 1, 1.0);
	}
	MGPU_TRY(mgpu_dev_nrm2(m->dev, m->nparams, m->g, &norm));
	*out = mgpu_optim_update_factor(o, (double)norm * grad_scale, grad_scale);
	return 0;
}

/* The update of [off, off + count) of parameter p; with ng > 0 the
 * gradient is the sum of the host vectors g[0..ng) (fused reduce + update). */
static int step_param(struct mgpu_optim *o, const struct mgpu_param *p, float lr,
		      float scale, size_t off, size_t count, const float *const *g, int ng)
{
	struct mgpu_model *m = o->model;
	const struct mgpu_ops *ops = m->dev->ops;
	float wd = p->decay ? o->cfg.weight_decay : 0.0f, *w = m->w + off;
	const float *gs[MGPU_OPTIM_MAX_SUM];
	int k;

	for (k = 0; k < ng; k++)
		gs[k] = g[k] + off;
	if (o->cfg.kind == MGPU_OPT_ADAMW) {
		struct mgpu_adamw_hp hp = {
			.lr = lr, .beta1 = o->cfg.beta1, .beta2 = o->cfg.beta2,
			.eps = o->cfg.eps, .weight_decay = wd, .grad_scale = scale,
			.bias_corr1 = (float)(1.0 - pow(o->cfg.beta1, (double)o->t)),
			.bias_corr2 = (float)(1.0 - pow(o->cfg.beta2, (double)o->t)),
		};
		if (ng)
			return ops->adamw_sum(m->dev, w, gs, ng, o->m + off, o->v + off, count,
					      &hp);
		return ops->adamw(m->dev, w, m->g + off, o->m + off, o->v + off, count, &hp);
	}
	struct mgpu_sgd_hp hp = {
		.lr = lr, .momentum = o->cfg.momentum, .weight_decay = wd,
		.grad_scale = scale, .nesterov = o->cfg.nesterov,
	};
	if (ng)
		return ops->sgd_sum(m->dev, w, gs, ng, o->m ? o->m + off : NULL, count, &hp);
	return ops->sgd(m->dev, w, m->g + off, o->m ? o->m + off : NULL, count, &hp);
}

static int step_range(struct mgpu_optim *o, float lr, float grad_scale, size_t begin,
		      size_t end, const float *const *g, int ng)
{
	struct mgpu_model *m = o->model;
	size_t a, b;
	int i;

	for (i = 0; i < m->nparam; i++) {
		const struct mgpu_param *p = &m->params[i];
		a = begin > p->off ? begin : p->off;
		b = end < p->off + p->count ? end : p->off + p->count;
		if (a < b)
			MGPU_TRY(step_param(o, p, lr, grad_scale, a, b - a, g, ng));
	}
	return 0;
}

int mgpu_optim_step_range(struct mgpu_optim *o, float lr, float grad_scale, size_t begin,
			  size_t end)
{
	return step_range(o, lr, grad_scale, begin, end, NULL, 0);
}

int mgpu_optim_step_range_sum(struct mgpu_optim *o, float lr, float grad_scale,
			      size_t begin, size_t end, const float *const *g, int ng)
{
	const struct mgpu_ops *ops = o->model->dev->ops;

	if (ng < 1 || ng > MGPU_OPTIM_MAX_SUM || !mgpu_ops_can(ops, MGPU_CAP_SUM_UPDATE))
		return mgpu_err(MGPU_EINVAL, "optimizer: %d summed gradients on %s memory", ng,
				mgpu_ops_can(ops, MGPU_CAP_HOST_MEMORY) ? "host" : "device");
	return step_range(o, lr, grad_scale, begin, end, g, ng);
}

int mgpu_optim_step(struct mgpu_optim *o, float lr, float grad_scale)
{
	float scale;

	MGPU_TRY(clip_scale(o, grad_scale, &scale));
	if (o->skipped) /* an overflow: this step leaves weights and state alone */
		return 0;
	o->t++;
	return mgpu_optim_step_range(o, lr, scale, 0, o->model->nparams);
}

double mgpu_sched_lr(const struct mgpu_sched *s, int64_t step)
{
	int64_t span;
	double t;

	if (step < s->warmup_steps)
		return s->lr * (double)(step + 1) / (double)s->warmup_steps;
	step -= s->warmup_steps;
	switch (s->kind) {
	case MGPU_SCHED_COSINE:
		/* the last step is the one at min_lr, so a run ends on the floor it
		 * was given; a lone step after warm-up keeps the peak (at a floor
		 * of 0 it would not train) */
		span = s->total_steps - s->warmup_steps - 1;
		t = span > 0 ? (double)step / (double)span : 0.0;
		if (t > 1.0)
			t = 1.0;
		return s->min_lr + (s->lr - s->min_lr) * 0.5 * (1.0 + cos(M_PI * t));
	case MGPU_SCHED_STEP:
		return s->lr * pow(s->gamma, (double)(step / (s->step_every > 0 ? s->step_every : 1)));
	default:
		return s->lr;
	}
}
