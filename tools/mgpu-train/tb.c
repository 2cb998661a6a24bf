/*
 * tb.c - mgpu-train's TensorBoard log (see tb.h).
 */
#include "tb.h"

#include <math.h>   /* isfinite */
#include <stdio.h>  /* open_memstream, snprintf */
#include <stdlib.h> /* free */
#include <string.h> /* strlen */
#include <time.h>   /* clock_gettime */

#include "core/err.h" /* mgpu_err */
#include "model/model.h" /* MGPU_PREC_FP16 */

void train_tb_init(struct train_tb *t, const struct train_opts *o)
{
	memset(t, 0, sizeof *t);
	t->tb.fd = -1;
	t->o = o;
	if (o->tensorboard[0])
		snprintf(t->dir, sizeof t->dir, "%s", o->tensorboard);
	else if (o->cfg.save_dir[0])
		snprintf(t->dir, sizeof t->dir, "%s/tb", o->cfg.save_dir);
}

/* Event times are wall-clock seconds since the epoch, as TensorBoard's
 * relative and wall-time axes expect. */
static double wall_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The settings, as -v prints them, in a Markdown code block. */
static int settings_text(struct train_tb *t, int64_t step)
{
	char *text = NULL, *md;
	size_t len = 0, i, n = 0;
	FILE *f = open_memstream(&text, &len);
	int rc;

	if (!f)
		return mgpu_err(MGPU_ENOMEM, "out of memory");
	train_opts_show(t->o, f);
	fclose(f);
	md = malloc(2 * len + 2);
	if (!md) {
		free(text);
		return mgpu_err(MGPU_ENOMEM, "out of memory");
	}
	/* four blanks before each line: a code block, kept as written */
	for (i = 0; i < len; i++) {
		if (i == 0 || text[i - 1] == '\n')
			n += (size_t)snprintf(md + n, 5, "    ");
		md[n++] = text[i];
	}
	md[n] = '\0';
	rc = mgpu_tb_text(&t->tb, "settings", step, wall_now(), md);
	free(md);
	free(text);
	return rc;
}

static int scalar(struct train_tb *t, const char *tag, int64_t step, double v)
{
	return mgpu_tb_scalar(&t->tb, tag, step, wall_now(), v);
}

/* A split's target metrics (those its kind has: finite), as
 * split/rmse, split/miou, split/kp_err_px and split/pck. */
static int target_scalars(struct train_tb *t, const char *split, int64_t step,
			  const struct mgpu_target_scores *s)
{
	const struct { const char *name; double v; } m[] = {
		{ "rmse", s->rmse }, { "miou", s->miou }, { "kp_err_px", s->kp_err_px },
		{ "pck", s->pck },
	};
	char tag[64];
	size_t i;

	for (i = 0; i < sizeof m / sizeof m[0]; i++) {
		if (!isfinite(m[i].v))
			continue;
		snprintf(tag, sizeof tag, "%s/%s", split, m[i].name);
		MGPU_TRY(scalar(t, tag, step, m[i].v));
	}
	return 0;
}

int train_tb_record(struct train_tb *t, const struct mgpu_record *r)
{
	const struct mgpu_train_cfg *c = &t->o->cfg;
	int gpt = mgpu_spec_is_lm(&c->spec);
	double ln2 = 0.69314718055994531;

	if (!t->dir[0])
		return 0;
	if (r->kind == MGPU_REC_START) {
		MGPU_TRY(mgpu_tb_open(&t->tb, t->dir, wall_now()));
		MGPU_TRY(settings_text(t, r->first_step));
		return mgpu_tb_flush(&t->tb);
	}
	if (t->tb.fd < 0)
		return 0;
	switch (r->kind) {
	case MGPU_REC_STEP:
		MGPU_TRY(scalar(t, "train/loss", r->step, r->loss));
		MGPU_TRY(scalar(t, "train/lr", r->step, r->lr));
		MGPU_TRY(scalar(t, "train/samples_per_s", r->step, r->samples_per_s));
		if (gpt) {
			MGPU_TRY(scalar(t, "train/tokens_per_s", r->step,
					r->samples_per_s * c->spec.ctx));
			MGPU_TRY(scalar(t, "train/bpb", r->step, r->loss / ln2));
		}
		if (c->prec == MGPU_PREC_FP16) {
			MGPU_TRY(scalar(t, "train/loss_scale", r->step, r->loss_scale));
			MGPU_TRY(scalar(t, "train/skipped_steps", r->step, (double)r->skipped));
		}
		return isfinite(r->grad_norm) ? scalar(t, "train/grad_norm", r->step, r->grad_norm)
					      : 0;
	case MGPU_REC_EVAL:
		MGPU_TRY(scalar(t, "val/loss", r->step, r->val_loss));
		if (!r->target || isfinite(r->val_acc)) /* a regression has no accuracy */
			MGPU_TRY(scalar(t, "val/acc", r->step, r->val_acc));
		if (r->target)
			MGPU_TRY(target_scalars(t, "val", r->step, &r->val_t));
		if (gpt)
			MGPU_TRY(scalar(t, "val/bpb", r->step, r->val_loss / ln2));
		return mgpu_tb_flush(&t->tb);
	case MGPU_REC_SUMMARY:
		MGPU_TRY(scalar(t, "test/loss", r->step, r->test_loss));
		if (!r->target || isfinite(r->test_acc))
			MGPU_TRY(scalar(t, "test/acc", r->step, r->test_acc));
		if (r->target)
			MGPU_TRY(target_scalars(t, "test", r->step, &r->test_t));
		if (gpt)
			MGPU_TRY(scalar(t, "test/bpb", r->step, r->test_loss / ln2));
		return mgpu_tb_flush(&t->tb);
	default: /* a checkpoint: what led to it is on disk too */
		return mgpu_tb_flush(&t->tb);
	}
}

int train_tb_close(struct train_tb *t)
{
	return mgpu_tb_close(&t->tb);
}
