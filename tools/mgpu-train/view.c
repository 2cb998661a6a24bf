/*
 * view.c - the status line, evaluation lines and summary a person sees of
 * a run (see view.h).
 */
#include "view.h"

#include <math.h>    /* isfinite, log */
#include <stdarg.h>  /* va_list */
#include <stdio.h>   /* fprintf, snprintf */
#include <stdlib.h>  /* realloc, free */
#include <string.h>  /* strcmp, strncmp, strlen */
#include <unistd.h>  /* isatty */

#include "../common.h"  /* mgpu_tool_name */
#include "comm/launch.h" /* mgpu_launcher_name */
#include "core/clock.h" /* mgpu_now_s */
#include "data/samples.h" /* MGPU_TARGET_* */

/* EMA weight of the newest rate, as tqdm smooths its rate. */
#define RATE_SMOOTH 0.3

void view_init(struct view *v, const struct mgpu_train_cfg *cfg, int argc, char *const *argv,
	       int format_given, int to_file, int quiet)
{
	int out_tty = isatty(1), err_tty = isatty(2);

	memset(v, 0, sizeof *v);
	v->cfg = cfg;
	v->argc = argc;
	v->argv = argv;
	v->spec = cfg->spec;
	v->gpt = mgpu_spec_is_lm(&cfg->spec);
	/* a person reads the table, unless a format or a file was asked for */
	v->table = out_tty && !format_given && !to_file;
	v->records_tty = out_tty && !v->table && !to_file;
	v->sum = v->table ? stdout : !quiet && err_tty ? stderr : NULL;
	mgpu_progress_init(&v->bar, 2, !quiet && err_tty);
}

/* The units of throughput: a gpt predicts ctx tokens per sample. */
static double per_sample(const struct view *v)
{
	return v->gpt ? (double)v->spec.ctx : 1.0;
}

static const char *rate_unit(const struct view *v)
{
	return v->gpt ? "tokens/s" : "samples/s";
}

/* ---- the live status ---- */

/* The status line's parts in the order shown, and the order they give way
 * in when the terminal is too narrow for all: lr first, the step and loss
 * last. */
enum { P_EPOCH, P_STEP, P_LOSS, P_LR, P_RATE, P_ELAPSED, P_ETA, NPARTS };
static const int give_way[NPARTS] = { P_LR, P_ELAPSED, P_EPOCH, P_RATE, P_ETA, P_LOSS, P_STEP };

static void draw_parts(struct view *v, char part[NPARTS][64])
{
	char line[NPARTS * 66];
	size_t len = 0, n;
	int skip[NPARTS] = { 0 }, i, k;

	for (k = 0; k < NPARTS - 1; k++) {
		for (i = 0, len = 0; i < NPARTS; i++)
			len += skip[i] ? 0 : strlen(part[i]) + 2;
		if (len - 2 <= (size_t)mgpu_progress_width(&v->bar))
			break;
		skip[give_way[k]] = 1;
	}
	for (i = 0, len = 0; i < NPARTS; i++) {
		if (skip[i])
			continue;
		n = (size_t)snprintf(line + len, sizeof line - len, "%s%s", len ? "  " : "", part[i]);
		len += n < sizeof line - len ? n : 0;
	}
	mgpu_progress_draw(&v->bar, "%s", line);
}

void view_step(struct view *v, const struct mgpu_step_info *s)
{
	double now = mgpu_now_s(), dt, r, eta = -1;
	int64_t epochs = v->per_epoch ? (v->total + v->per_epoch - 1) / v->per_epoch : 0;
	char part[NPARTS][64], num[32];

	v->win_loss += s->loss;
	v->win_steps++;
	if (!mgpu_progress_due(&v->bar) && s->step < s->total)
		return;
	dt = now - v->t_mark;
	if (dt > 0) {
		r = (double)(s->step - v->step_mark) * (double)s->samples / dt;
		v->rate = v->rate > 0 ? RATE_SMOOTH * r + (1 - RATE_SMOOTH) * v->rate : r;
	}
	if (v->rate > 0)
		eta = (double)(s->total - s->step) * (double)s->samples / v->rate;
	snprintf(part[P_EPOCH], 64, "epoch %d/%lld", s->epoch, (long long)epochs);
	snprintf(part[P_STEP], 64, "step %lld/%lld", (long long)s->step, (long long)s->total);
	snprintf(part[P_LOSS], 64, "loss %.4f", v->win_loss / (double)v->win_steps);
	snprintf(part[P_LR], 64, "lr %.3g", s->lr);
	snprintf(part[P_RATE], 64, "%s %s", mgpu_fmt_count(v->rate * per_sample(v), num, sizeof num),
		 rate_unit(v));
	snprintf(part[P_ELAPSED], 64, "elapsed %s", mgpu_fmt_duration(now - v->bar.t0, num,
								   sizeof num));
	snprintf(part[P_ETA], 64, "ETA %s", mgpu_fmt_duration(eta, num, sizeof num));
	draw_parts(v, part);
	v->win_loss = 0;
	v->win_steps = 0;
	v->t_mark = now;
	v->step_mark = s->step;
}

/* ---- the evaluation lines ---- */

/* A step record: its window's loss and throughput count towards the
 * epoch's line. */
static void add_steps(struct view *v, const struct mgpu_record *r)
{
	int64_t n = r->step - v->last_step, samples = n * r->effective_batch;

	v->last_step = r->step;
	if (n <= 0)
		return;
	v->ep_loss += r->loss * (double)n;
	v->ep_steps += n;
	v->ep_samples += samples;
	if (r->samples_per_s > 0)
		v->ep_secs += (double)samples / r->samples_per_s;
}

/* x with four decimals (pct: as a percentage, two), "-" when unknown. */
static void num(char *buf, size_t cap, double x, int pct)
{
	if (!isfinite(x))
		snprintf(buf, cap, "-");
	else if (pct)
		snprintf(buf, cap, "%.2f%%", 100 * x);
	else
		snprintf(buf, cap, "%.4f", x);
}

double view_bpb(const struct view *v, double nats, int s)
{
	return v->bpt[s] > 0 ? nats / log(2.0) / v->bpt[s] : NAN;
}

/* The eval line's third column: accuracy, or a target's metric (a
 * keypoint's error in pixels, a mask's mean IoU, a vector's RMSE). */
static const char *third_name(int target)
{
	return target == MGPU_TARGET_KEYPOINTS ? "val_px" : target == MGPU_TARGET_MASK ?
	       "val_miou" : target == MGPU_TARGET_VECTOR ? "val_rmse" : "val_acc";
}

static void target_num(char *buf, size_t cap, int target, const struct mgpu_target_scores *s)
{
	num(buf, cap, target == MGPU_TARGET_KEYPOINTS ? s->kp_err_px :
		      target == MGPU_TARGET_MASK ? s->miou : s->rmse, target == MGPU_TARGET_MASK);
}

/* One aligned line per evaluation; the header before the first. A gpt's
 * accuracy (of the next byte) says less than its bits per byte. */
static void eval_line(struct view *v, const struct mgpu_record *r)
{
	char tl[32], vl[32], third[32], rate[32], t[32];

	if (!v->header_done)
		printf("%5s %9s %10s %10s %9s %10s %8s\n", "epoch", "step", "train_loss",
		       "val_loss", v->gpt ? "val_bpb" : third_name(r->target), rate_unit(v),
		       "time");
	v->header_done = 1;
	num(tl, sizeof tl, v->ep_steps ? v->ep_loss / (double)v->ep_steps : NAN, 0);
	num(vl, sizeof vl, r->val_loss, 0);
	if (r->target)
		target_num(third, sizeof third, r->target, &r->val_t);
	else
		num(third, sizeof third, v->gpt ? view_bpb(v, r->val_loss, 1) : r->val_acc,
		    !v->gpt);
	if (v->ep_secs > 0)
		mgpu_fmt_count((double)v->ep_samples * per_sample(v) / v->ep_secs, rate,
			       sizeof rate);
	else
		snprintf(rate, sizeof rate, "-");
	mgpu_fmt_duration(r->wall_s, t, sizeof t);
	printf("%5d %9lld %10s %10s %9s %10s %8s\n", r->epoch, (long long)r->step, tl, vl, third,
	       rate, t);
	fflush(stdout);
	v->ep_loss = v->ep_secs = 0;
	v->ep_steps = v->ep_samples = 0;
}

/* --per-class on a terminal: an aligned line per class after the summary. */
static void class_line(struct view *v, const struct mgpu_record *r)
{
	int test = isfinite(r->test_acc);
	char acc[32];

	if (!v->class_header_done)
		printf("\n%5s  %-24s %8s %9s\n", "class", "name", "samples",
		       test ? "test_acc" : "val_acc");
	v->class_header_done = 1;
	num(acc, sizeof acc, test ? r->test_acc : r->val_acc, 1);
	printf("%5d  %-24s %8lld %9s\n", r->class_id, r->class_name, (long long)r->samples, acc);
	fflush(stdout);
}

/* ---- the summary ---- */

/* One line of the summary; on stderr as the tool's message. */
static void say(const struct view *v, const char *fmt, ...) MGPU_PRINTF(2, 3);
static void say(const struct view *v, const char *fmt, ...)
{
	char line[8192];
	size_t n = 0;
	va_list ap;

	if (v->sum == stderr)
		n = (size_t)snprintf(line, sizeof line, "%s: ", mgpu_tool_name);
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof line - n, fmt, ap);
	va_end(ap);
	fprintf(v->sum, "%s\n", line);
}

/* A word the shell reads back as it is: quoted unless it is plain. */
static size_t shell_word(char *buf, size_t cap, const char *w)
{
	size_t n = 0;
	int plain = w[0] != '\0' &&
		    strspn(w, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
			      "_./:,=+-%@") == strlen(w);

	if (cap < 2)
		return 0;
	buf[n++] = ' ';
	if (!plain && n < cap - 1)
		buf[n++] = '\'';
	for (; *w && n + 5 < cap; w++) {
		if (*w == '\'' && !plain) { /* ' ends the quote, \' is one, ' reopens it */
			memcpy(buf + n, "'\\''", 4);
			n += 4;
		} else {
			buf[n++] = *w;
		}
	}
	if (!plain && n < cap - 1)
		buf[n++] = '\'';
	buf[n] = '\0';
	return n;
}

/* Whether w is --name or --name=VALUE, or an abbreviation of it (as
 * getopt_long takes them; the command line parsed, so one that names name
 * names no other option); *skip: the words it takes. */
static int is_opt(const char *w, const char *name, int *skip)
{
	size_t n = strcspn(w, "=");

	if (strncmp(w, "--", 2) != 0 || n < 3 || strncmp(w + 2, name, n - 2) != 0 ||
	    n - 2 > strlen(name))
		return 0;
	*skip = w[n] == '=' ? 1 : 2;
	return 1;
}

/* The command line as given, without --resume and the options in drop,
 * then --resume DIR (the save dir, else the checkpoint this run resumed)
 * and extra. */
static void resume_cmd(const struct view *v, const char *const *drop, const char *extra,
		       char *buf, size_t cap)
{
	size_t n = 0;
	int i, k, skip;

	buf[0] = '\0';
	for (i = 0; i < v->argc && n + 1 < cap; i += skip) {
		skip = 1;
		if (i > 0 && strcmp(v->argv[i], "--") == 0)
			break;
		if (i > 0 && is_opt(v->argv[i], "resume", &skip))
			continue;
		for (k = 0; i > 0 && drop[k]; k++)
			if (is_opt(v->argv[i], drop[k], &skip))
				break;
		if (i > 0 && drop[k])
			continue;
		skip = 1;
		n += shell_word(buf + n, cap - n, v->argv[i]);
	}
	n += n + 1 < cap ? shell_word(buf + n, cap - n, "--resume") : 0;
	n += n + 1 < cap ? shell_word(buf + n, cap - n, v->cfg->save_dir[0] ? v->cfg->save_dir :
				      v->cfg->resume) : 0;
	if (extra && n + 1 < cap)
		snprintf(buf + n, cap - n, "%s", extra);
	memmove(buf, buf + 1, strlen(buf)); /* the first word's space */
}

/* Where the command runs when this process did not start the job alone:
 * under the same outside launcher, or on every node. */
static const char *where(const struct view *v, char *buf, size_t cap)
{
	const struct mgpu_rank_env *e = &v->cfg->env;

	buf[0] = '\0';
	if (e->launcher != MGPU_LAUNCH_NONE && e->launcher != MGPU_LAUNCH_SELF)
		snprintf(buf, cap, "  (each rank, under %s as before)",
			 mgpu_launcher_name(e->launcher));
	else if (e->nnodes > 1)
		snprintf(buf, cap, "  (on every node, with its own --node-rank)");
	return buf;
}

static int64_t largest(const int64_t *x, int n)
{
	int64_t m = 0;
	int i;

	for (i = 0; i < n; i++)
		m = x[i] > m ? x[i] : m;
	return m;
}

/* The checkpoint, and the command that trains on from it: with
 * --max-steps 0 when --max-steps ended the run (the checkpoint keeps the
 * limit), else for as many epochs again (lifting a limit they would
 * reach). */
static void say_checkpoint(const struct view *v, const struct mgpu_record *r)
{
	static const char *const steps[] = { "max-steps", NULL };
	static const char *const longer[] = { "epochs", "max-steps", NULL };
	const struct mgpu_train_cfg *c = v->cfg;
	char cmd[8192], extra[64] = "", how[96];
	int by_steps = c->max_steps > 0 && r->step < (int64_t)c->epochs * v->per_epoch;
	/* a resumed run that had nothing to train ends where its checkpoint is */
	const char *ck = v->ckpt[0] ? v->ckpt : c->resume[0] && r->step == v->first ? c->resume :
				      NULL;

	if (!ck) {
		say(v, "no checkpoint written (--save-dir DIR keeps one)");
		return;
	}
	if (by_steps)
		snprintf(extra, sizeof extra, " --max-steps 0");
	else
		snprintf(extra, sizeof extra, " --epochs %d%s", 2 * c->epochs,
			 c->max_steps > 0 ? " --max-steps 0" : "");
	resume_cmd(v, by_steps ? steps : longer, extra, cmd, sizeof cmd);
	say(v, "checkpoint: %s", ck);
	say(v, "train on:   %s%s", cmd, where(v, how, sizeof how));
}

/* A split's metrics of a target, on one summary line. */
static void target_summary(const struct view *v, const struct mgpu_record *r, const char *what,
			   double loss, double acc, const struct mgpu_target_scores *s)
{
	if (r->target == MGPU_TARGET_KEYPOINTS)
		say(v, "%-11s keypoint error %.3f px, PCK %.2f%% within %g px, loss %.6f", what,
		    s->kp_err_px, 100 * s->pck, r->pck_px, loss);
	else if (r->target == MGPU_TARGET_MASK)
		say(v, "%-11s mean IoU %.2f%%, pixel accuracy %.2f%%, loss %.4f", what,
		    100 * s->miou, 100 * acc, loss);
	else
		say(v, "%-11s RMSE %.6g, loss %.6g", what, s->rmse, loss);
}

static void summary(struct view *v, const struct mgpu_record *r)
{
	char t[32], rate[32], peak[32], rss[32];

	mgpu_fmt_duration(r->wall_s, t, sizeof t);
	if (isfinite(r->samples_per_s))
		mgpu_fmt_count(r->samples_per_s * per_sample(v), rate, sizeof rate);
	else
		snprintf(rate, sizeof rate, "-");
	if (v->table)
		putchar('\n');
	/* the epoch of the last step, 1-based as in the step records */
	if (r->step > v->first)
		say(v, "done:       step %lld, epoch %lld, in %s (%s %s)", (long long)r->step,
		    (long long)(v->per_epoch ? (r->step - 1) / v->per_epoch + 1 : 0), t, rate,
		    rate_unit(v));
	else
		say(v, "done:       step %lld: nothing was left to train", (long long)r->step);
	if (v->gpt && v->bpt[2] > 0 && v->bpt[1] > 0)
		say(v, "test:       %.4f bits per byte (loss %.4f); validation %.4f bits per byte",
		    view_bpb(v, r->test_loss, 2), r->test_loss, view_bpb(v, r->val_loss, 1));
	else if (v->gpt)
		say(v, "test:       loss %.4f nats per token; validation %.4f", r->test_loss,
		    r->val_loss);
	else if (r->target && !isfinite(r->test_loss)) /* no test split */
		target_summary(v, r, "validation:", r->val_loss, r->val_acc, &r->val_t);
	else if (r->target == MGPU_TARGET_KEYPOINTS)
		say(v, "test:       keypoint error %.3f px, PCK %.2f%% within %g px, loss %.6f; "
		    "validation %.3f px, PCK %.2f%%", r->test_t.kp_err_px, 100 * r->test_t.pck,
		    r->pck_px, r->test_loss, r->val_t.kp_err_px, 100 * r->val_t.pck);
	else if (r->target == MGPU_TARGET_MASK)
		say(v, "test:       mean IoU %.2f%%, pixel accuracy %.2f%%, loss %.4f; "
		    "validation mean IoU %.2f%%", 100 * r->test_t.miou, 100 * r->test_acc,
		    r->test_loss, 100 * r->val_t.miou);
	else if (r->target == MGPU_TARGET_VECTOR)
		say(v, "test:       RMSE %.6g, loss %.6g; validation RMSE %.6g", r->test_t.rmse,
		    r->test_loss, r->val_t.rmse);
	else
		say(v, "test:       accuracy %.2f%%, loss %.4f; validation accuracy %.2f%%",
		    100 * r->test_acc, r->test_loss, 100 * r->val_acc);
	mgpu_fmt_bytes((double)largest(r->peak_bytes, r->ndev), peak, sizeof peak);
	mgpu_fmt_bytes((double)largest(r->rss_bytes, r->ndev), rss, sizeof rss);
	say(v, "memory:     peak %s on a device, %s resident in a rank (the largest of %d)",
	    peak, rss, r->ndev);
	say_checkpoint(v, r);
}

void view_interrupted(struct view *v)
{
	char cmd[8192], how[96];

	if (!v->sum || !v->cfg->save_dir[0] || !v->ckpt[0])
		return;
	mgpu_progress_clear(&v->bar);
	resume_cmd(v, (const char *const[]){ NULL }, NULL, cmd, sizeof cmd);
	say(v, "checkpoint: %s", v->ckpt);
	say(v, "resume:     %s%s", cmd, where(v, how, sizeof how));
	fflush(v->sum);
}

/* A class record: kept for the table view_done prints. */
static void keep_class(struct view *v, const struct mgpu_record *r)
{
	struct view_class *c;

	if (v->nclasses == v->cap_classes) {
		int cap = v->cap_classes ? 2 * v->cap_classes : 16;
		c = realloc(v->classes, (size_t)cap * sizeof *c);
		if (!c)
			return; /* a table the person does not get is no reason to fail */
		v->classes = c;
		v->cap_classes = cap;
	}
	c = &v->classes[v->nclasses++];
	c->id = r->class_id;
	snprintf(c->name, sizeof c->name, "%s", r->class_name ? r->class_name : "");
	c->samples = r->samples;
	c->on_test = isfinite(r->test_acc);
	c->acc = c->on_test ? r->test_acc : r->val_acc;
}

void view_done(struct view *v)
{
	int i, w = 4;

	for (i = 0; i < v->nclasses; i++)
		w = (int)strlen(v->classes[i].name) > w ? (int)strlen(v->classes[i].name) : w;
	if (v->nclasses)
		printf("\n%5s  %-*s %9s %9s\n", "class", w, "name", "samples",
		       v->classes[0].on_test ? "test_acc" : "val_acc");
	for (i = 0; i < v->nclasses; i++) {
		char acc[32];

		num(acc, sizeof acc, v->classes[i].acc, 1);
		printf("%5d  %-*s %9lld %9s\n", v->classes[i].id, w, v->classes[i].name,
		       (long long)v->classes[i].samples, acc);
	}
	fflush(stdout);
	free(v->classes);
	v->classes = NULL;
	v->nclasses = v->cap_classes = 0;
}

int view_record(struct view *v, const struct mgpu_record *r)
{
	if (r->kind == MGPU_REC_CLASS) {
		if (v->table)
			keep_class(v, r);
		return v->table;
	}
	if (r->kind == MGPU_REC_START) {
		if (r->spec)
			v->spec = *r->spec;
		v->total = r->step;
		v->per_epoch = r->epoch;
		v->first = v->last_step = v->step_mark = r->first_step;
		v->t_mark = mgpu_now_s();
		v->bar.t0 = v->t_mark;
		return 0;
	}
	if (r->kind == MGPU_REC_CKPT)
		snprintf(v->ckpt, sizeof v->ckpt, "%s", r->path);
	if (r->kind == MGPU_REC_STEP)
		add_steps(v, r);
	/* the status line goes only when something else is written: the
	 * table shows no step or checkpoint record */
	if (v->records_tty || r->kind == MGPU_REC_SUMMARY ||
	    (v->table && r->kind == MGPU_REC_EVAL))
		mgpu_progress_clear(&v->bar);
	if (v->table && r->kind == MGPU_REC_EVAL)
		eval_line(v, r);
	if (v->table && r->kind == MGPU_REC_CLASS)
		class_line(v, r);
	if (v->table)
		view_after(v, r);
	return v->table;
}

void view_after(struct view *v, const struct mgpu_record *r)
{
	if (r->kind != MGPU_REC_SUMMARY || !v->sum)
		return;
	summary(v, r);
	fflush(v->sum);
}
