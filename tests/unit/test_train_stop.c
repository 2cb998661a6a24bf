/*
 * test_train_stop.c - a stop request (SIGINT, SIGTERM: cfg->stop) raised
 * while the trainer evaluates ends the run with MGPU_EINTR (issue 19): the
 * epoch's evaluation stops at once instead of running to its end (and the
 * run going on to the next step), and the final evaluation of the summary
 * does not end the run with success. A checkpoint of the last step is
 * written as after an interrupted step.
 */
#include <signal.h> /* sig_atomic_t */
#include <stdio.h>  /* FILE, fopen */
#include <string.h> /* memset */
#include <unistd.h> /* access */

#include "core/err.h"  /* mgpu_errmsg */
#include "core/hash.h" /* mgpu_hash64 */
#include "train/train.h"  /* mgpu_train_run */
#include "t.h"
#include "tmpdir.h"

#define NTRAIN 512
#define NTEST 40
#define D0 12

static volatile sig_atomic_t stop;

struct seen {
	int64_t per_epoch;
	int raise_at;       /* MGPU_REC_STEP: at the epoch's last step; EVAL: at its eval */
	int evals, summaries;
	int64_t last_step;
};

static int on_record(void *ctx, const struct mgpu_record *r)
{
	struct seen *s = ctx;

	if (r->kind == MGPU_REC_START)
		s->per_epoch = r->epoch;
	if (r->kind == MGPU_REC_STEP)
		s->last_step = r->step;
	if (r->kind == MGPU_REC_EVAL)
		s->evals++;
	if (r->kind == MGPU_REC_SUMMARY)
		s->summaries++;
	/* the stop comes just before the evaluation that follows */
	if (r->kind == s->raise_at && (r->kind != MGPU_REC_STEP || r->step == s->per_epoch))
		stop = 1;
	return 0;
}

static int write_idx(const char *prefix, int n, uint64_t seed)
{
	uint8_t hx[16] = { 0, 0, 8, 3 }, hy[8] = { 0, 0, 8, 1 }, x[NTRAIN * D0], y[NTRAIN];
	char px[300], py[300];
	FILE *f;
	int i, ok = 1;

	hx[6] = hy[6] = (uint8_t)(n >> 8);
	hx[7] = hy[7] = (uint8_t)n;
	hx[11] = 1;
	hx[15] = D0;
	for (i = 0; i < n * D0; i++)
		x[i] = (uint8_t)mgpu_hash64(seed, (uint64_t)i);
	for (i = 0; i < n; i++)
		y[i] = (uint8_t)(mgpu_hash64(seed + 1, (uint64_t)i) % 3);
	snprintf(px, sizeof px, "%s-images-idx3-ubyte", prefix);
	snprintf(py, sizeof py, "%s-labels-idx1-ubyte", prefix);
	if ((f = fopen(px, "wb"))) {
		ok &= fwrite(hx, 1, 16, f) == 16 && fwrite(x, 1, (size_t)n * D0, f) == (size_t)n * D0;
		ok &= fclose(f) == 0;
	}
	if (f && (f = fopen(py, "wb"))) {
		ok &= fwrite(hy, 1, 8, f) == 8 && fwrite(y, 1, (size_t)n, f) == (size_t)n;
		ok &= fclose(f) == 0;
	}
	return f && ok ? 0 : mgpu_err(MGPU_EIO, "cannot write '%s'", prefix);
}

static void config(struct mgpu_train_cfg *c, int epochs)
{
	mgpu_train_defaults(c);
	snprintf(c->data, sizeof c->data, "%s", tmpdir);
	T_OK(mgpu_spec_parse(&c->spec, "mlp:12-8-3", "test"));
	T_OK(mgpu_batch_plan_make(&c->plan, 16, 0, 1, 1));
	c->epochs = epochs;
	c->log_every = 1;
	c->stop = &stop;
	snprintf(c->save_dir, sizeof c->save_dir, "%s", tpath("ck"));
}

/* Stopped before the evaluation at the end of epoch 1 of 3: no eval
 * record, no step of epoch 2, a checkpoint of the epoch's last step. */
static void test_epoch_eval(void)
{
	static struct mgpu_train_cfg c;
	struct seen s = { .raise_at = MGPU_REC_STEP };
	struct mgpu_train_hooks h = { .on_record = on_record, .ctx = &s };
	char path[400];

	config(&c, 3);
	stop = 0;
	T_FAILS(mgpu_train_run(&c, &h), MGPU_EINTR, "interrupted at step");
	T_CHECK(s.per_epoch > 0 && s.last_step == s.per_epoch, "last step %lld of an epoch of "
		"%lld", (long long)s.last_step, (long long)s.per_epoch);
	T_CHECK(s.evals == 0 && s.summaries == 0, "%d evals, %d summaries after the stop",
		s.evals, s.summaries);
	snprintf(path, sizeof path, "%s/step-%08lld", tpath("ck"), (long long)s.per_epoch);
	T_CHECK(access(path, F_OK) == 0, "no checkpoint %s", path);
}

/* Stopped before the summary's evaluation of a one-epoch run: MGPU_EINTR,
 * not success, and no summary. */
static void test_summary_eval(void)
{
	static struct mgpu_train_cfg c;
	struct seen s = { .raise_at = MGPU_REC_EVAL };
	struct mgpu_train_hooks h = { .on_record = on_record, .ctx = &s };

	config(&c, 1);
	snprintf(c.save_dir, sizeof c.save_dir, "%s", tpath("ck2"));
	stop = 0;
	T_FAILS(mgpu_train_run(&c, &h), MGPU_EINTR, "interrupted during the evaluation");
	T_CHECK(s.evals == 1 && s.summaries == 0, "%d evals, %d summaries", s.evals,
		s.summaries);
}

int main(void)
{
	if (t_tmpdir_make("train-stop") < 0)
		return 1;
	T_OK(write_idx(tpath("train"), NTRAIN, 5));
	T_OK(write_idx(tpath("t10k"), NTEST, 7));
	T_RUN(test_epoch_eval);
	T_RUN(test_summary_eval);
	t_tmpdir_remove();
	return T_DONE();
}
