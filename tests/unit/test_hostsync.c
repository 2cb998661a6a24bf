/*
 * test_hostsync.c - the host/device traffic of a training step (issue 11):
 * mgpu_train_run on the cpu backend, whose struct mgpu_dev counts what a
 * GPU would wait for (blocking device-to-host reads, host-to-device
 * copies), for an mlp and a small gpt, with and without gradient
 * accumulation and clipping.
 *
 * A step must queue everything (inputs, forward, loss, backward, update)
 * and then read from the device once: the loss, correct count and
 * gradient norm come back together (twice with --clip-grad-norm, whose
 * update needs the norm first). The mlp runs are checked against a plain
 * loop over the same rows that reads every row's loss back and sums it on
 * the host, and steps the optimizer with its host-side norm: the reported
 * losses must agree with those sums and the weights bit for bit. Inputs
 * go through the model's double-buffered staging (gpu/upload.h), the next
 * step's first rows before a step's read. With targets (a regression's
 * vectors) the loss still adds up on the device: one read per step, and
 * the targets' one upload per micro-step besides the rows'.
 */
#include <math.h>   /* fabs */
#include <stdint.h> /* uint8_t, int32_t */
#include <stdio.h>  /* FILE, fopen */
#include <stdlib.h> /* malloc, free */
#include <string.h> /* memcmp, memset */

#include "core/err.h"     /* mgpu_errmsg */
#include "core/hash.h"    /* mgpu_hash64 */
#include "data/npy.h"     /* mgpu_npy_header */
#include "gpu/upload.h"   /* mgpu_upload_* */
#include "train/train.h"     /* mgpu_train_run */
#include "train/train_int.h" /* struct train_data: the reference loop's rows */
#include "t.h"
#include "tmpdir.h"

#define D0 12      /* mlp features */
#define CLASSES 3
#define CTX 16     /* gpt positions: samples of CTX + 1 bytes */
#define NTRAIN 512
#define NTEST 40
#define BATCH 16
#define STEPS 10
#define MAXW 8192

/* What one run reported: its step records and final weights. */
struct seen {
	int nsteps;
	double loss[STEPS], d2h[STEPS], h2d[STEPS];
	float w[MAXW];
	size_t nparams;
};

static int on_record(void *ctx, const struct mgpu_record *r)
{
	struct seen *s = ctx;

	if (r->kind != MGPU_REC_STEP || s->nsteps == STEPS)
		return 0;
	s->loss[s->nsteps] = r->loss;
	s->d2h[s->nsteps] = r->d2h_per_step;
	s->h2d[s->nsteps] = r->h2d_per_step;
	s->nsteps++;
	return 0;
}

static int on_model(void *ctx, struct mgpu_model *m, int data_dtype)
{
	struct seen *s = ctx;

	(void)data_dtype;
	if (m->nparams > MAXW)
		return mgpu_err(MGPU_EINVAL, "%zu parameters", m->nparams);
	s->nparams = m->nparams;
	return mgpu_model_get(m, s->w);
}

static int write_file(const char *path, const void *a, size_t na, const void *b, size_t nb)
{
	FILE *f = fopen(path, "wb");
	int ok = f && fwrite(a, 1, na, f) == na && fwrite(b, 1, nb, f) == nb;

	if (f && fclose(f) != 0)
		ok = 0;
	return ok ? 0 : mgpu_err(MGPU_EIO, "cannot write '%s'", path);
}

/* IDX files of n rows of width bytes ("images" 1 x width) and labels. */
static int write_idx(const char *prefix, int n, int width, int vocab, int classes,
		     uint64_t seed)
{
	uint8_t hx[16] = { 0, 0, 8, 3 }, hy[8] = { 0, 0, 8, 1 }, *x = malloc((size_t)n * width);
	uint8_t *y = malloc((size_t)n);
	char px[300], py[300];
	size_t i;
	int rc;

	if (!x || !y)
		return mgpu_err(MGPU_ENOMEM, "out of memory");
	hx[7] = hy[7] = (uint8_t)n;
	hx[6] = hy[6] = (uint8_t)(n >> 8);
	hx[11] = 1;
	hx[15] = (uint8_t)width;
	for (i = 0; i < (size_t)n * width; i++)
		x[i] = (uint8_t)(mgpu_hash64(seed, i) % (uint64_t)vocab);
	for (i = 0; i < (size_t)n; i++)
		y[i] = (uint8_t)(mgpu_hash64(seed + 1, i) % (uint64_t)classes);
	snprintf(px, sizeof px, "%s-images-idx3-ubyte", prefix);
	snprintf(py, sizeof py, "%s-labels-idx1-ubyte", prefix);
	rc = write_file(px, hx, sizeof hx, x, (size_t)n * width);
	if (rc == 0)
		rc = write_file(py, hy, sizeof hy, y, (size_t)n);
	free(x);
	free(y);
	return rc;
}

/* The IDX pair of a data directory in the test's temporary directory. */
static int make_data(int width, int vocab, int classes)
{
	MGPU_TRY(write_idx(tpath("train"), NTRAIN, width, vocab, classes, 11));
	return write_idx(tpath("t10k"), NTEST, width, vocab, classes, 13);
}

static void config(struct mgpu_train_cfg *c, const char *data, const char *spec, int accum,
		   float clip)
{
	mgpu_train_defaults(c);
	snprintf(c->data, sizeof c->data, "%s", data);
	T_OK(mgpu_spec_parse(&c->spec, spec, "test"));
	T_OK(mgpu_batch_plan_make(&c->plan, BATCH, 0, accum, 1));
	c->epochs = 3;
	c->max_steps = STEPS;
	c->log_every = 1;
	c->val_fraction = 0.25;
	c->seed = 3;
	c->sched = MGPU_SCHED_CONSTANT;
	c->lr = 0.1;
	c->optim.clip_norm = clip;
}

static void run(const struct mgpu_train_cfg *c, struct seen *s)
{
	struct mgpu_train_hooks h = { .on_record = on_record, .on_model = on_model, .ctx = s };

	memset(s, 0, sizeof *s);
	T_OK(mgpu_train_run(c, &h));
	T_CHECK(s->nsteps == STEPS, "%d step records", s->nsteps);
}

/* The host-read reference: the rows of the run's steps, the loss of
 * every row read back and summed in order, the optimizer's norm on the
 * host; the per-step loss means into loss[], the final weights into w. */
static int reference(const struct mgpu_train_cfg *c, double *loss, float *w)
{
	const struct mgpu_batch_plan *p = &c->plan;
	struct train_data d;
	struct mgpu_spec spec;
	struct mgpu_dev dev;
	struct mgpu_model m;
	struct mgpu_optim o;
	uint32_t *order;
	uint8_t x[BATCH * D0];
	int32_t y[BATCH];
	float rl[BATCH];
	double l, cc;
	int step, a, i, per_epoch;

	memset(&d, 0, sizeof d);
	spec = c->spec;
	MGPU_TRY(mgpu_train_data_load(&d, c, &spec, NULL));
	order = malloc(d.ntrain * sizeof *order);
	if (!order)
		return mgpu_err(MGPU_ENOMEM, "out of memory");
	per_epoch = (int)(d.ntrain / (size_t)p->global);
	MGPU_TRY(mgpu_dev_open(&dev, &mgpu_ops_cpu, 0));
	MGPU_TRY(mgpu_model_create(&m, &c->spec, &dev, BATCH));
	MGPU_TRY(mgpu_model_init(&m, c->seed));
	MGPU_TRY(mgpu_optim_create(&o, &m, &c->optim)); /* no norm2_dev: nrm2 */
	for (step = 0; step < STEPS; step++) {
		if (step % per_epoch == 0)
			mgpu_train_order(&d, c->seed, step / per_epoch, order);
		loss[step] = 0;
		for (a = 0; a < p->accum; a++) {
			const uint32_t *rows = order + (step % per_epoch) * p->global +
					       mgpu_batch_row0(p, a, 0);
			MGPU_TRY(mgpu_source_rows(&d.src, MGPU_SPLIT_TRAIN, rows, BATCH, x, y));
			MGPU_TRY(mgpu_model_load_batch(&m, x, y, BATCH, d.src.norm.scale,
						       d.src.norm.shift));
			m.dropout_seed = mgpu_hash64(c->seed, (uint64_t)step);
			m.row0 = (uint64_t)mgpu_batch_row0(p, a, 0);
			MGPU_TRY(mgpu_model_forward(&m, BATCH, 1));
			MGPU_TRY(mgpu_model_loss(&m, BATCH, 1, p->grad_scale, &l, &cc));
			MGPU_TRY(mgpu_dev_to_host(&dev, rl, m.row_loss, sizeof rl));
			for (i = 0; i < BATCH; i++)
				loss[step] += rl[i];
			MGPU_TRY(mgpu_model_backward(&m, BATCH, a > 0));
		}
		loss[step] /= (double)p->global;
		MGPU_TRY(mgpu_optim_step(&o, (float)c->lr, 1.0f));
	}
	MGPU_TRY(mgpu_model_get(&m, w));
	mgpu_optim_free(&o);
	mgpu_model_free(&m);
	mgpu_dev_close(&dev);
	mgpu_train_data_free(&d);
	free(order);
	return 0;
}

/* One tar member (ustar), padded to its 512-byte blocks. */
static int tar_add(FILE *f, const char *name, const void *data, size_t n)
{
	static const char zero[512];
	unsigned char h[512];
	unsigned sum = 0;
	int i;

	memset(h, 0, sizeof h);
	snprintf((char *)h, 100, "%s", name);
	snprintf((char *)h + 100, 8, "%07o", 0644);
	snprintf((char *)h + 108, 8, "%07o", 0);
	snprintf((char *)h + 116, 8, "%07o", 0);
	snprintf((char *)h + 124, 12, "%011o", (unsigned)n);
	snprintf((char *)h + 136, 12, "%011o", 0);
	memset(h + 148, ' ', 8);
	h[156] = '0';
	memcpy(h + 257, "ustar", 6);
	memcpy(h + 263, "00", 2);
	for (i = 0; i < 512; i++)
		sum += h[i];
	snprintf((char *)h + 148, 8, "%06o", sum);
	if (fwrite(h, 1, 512, f) != 512 || fwrite(data, 1, n, f) != n ||
	    fwrite(zero, 1, (512 - n % 512) % 512, f) != (512 - n % 512) % 512)
		return mgpu_err(MGPU_EIO, "cannot write the tar");
	return 0;
}

/* A float32 vector as a .npy member's bytes into buf; its length. */
static size_t npy_vec(char *buf, const float *v, uint32_t n)
{
	size_t len = mgpu_npy_header(buf, "<f4", 1, &n);

	memcpy(buf + len, v, n * sizeof *v);
	return len + n * sizeof *v;
}

/* A WebDataset of NTRAIN samples of D0 float32 features and a regression
 * target of 2 values (KEY.npy, KEY.target.npy). */
static int make_target_tar(const char *path)
{
	char buf[MGPU_NPY_HEADER_MAX + D0 * sizeof(float)], name[32];
	float x[D0], t[2];
	FILE *f = fopen(path, "wb");
	int i, k, rc = f ? 0 : mgpu_err(MGPU_EIO, "cannot write '%s'", path);

	for (i = 0; rc == 0 && i < NTRAIN; i++) {
		for (k = 0; k < D0; k++)
			x[k] = (float)(mgpu_hash64(21, (uint64_t)(i * D0 + k)) % 1000) / 500.0f - 1;
		t[0] = x[0] - x[1];
		t[1] = 0.5f * x[2];
		snprintf(name, sizeof name, "%04d.npy", i);
		rc = tar_add(f, name, buf, npy_vec(buf, x, D0));
		snprintf(name, sizeof name, "%04d.target.npy", i);
		if (rc == 0)
			rc = tar_add(f, name, buf, npy_vec(buf, t, 2));
	}
	if (f) {
		static const char end[1024];
		if (fwrite(end, 1, sizeof end, f) != sizeof end && rc == 0)
			rc = mgpu_err(MGPU_EIO, "cannot write '%s'", path);
		if (fclose(f) != 0 && rc == 0)
			rc = mgpu_err(MGPU_EIO, "cannot write '%s'", path);
	}
	return rc;
}

/* Two uploads (rows, labels) per micro-step, and tgt more with targets;
 * the first micro-step of each step but an epoch's first loaded ahead,
 * before the step before it read its statistics (per_epoch steps an
 * epoch). */
static void check_uploads_t(const struct seen *s, int accum, int per_epoch, int tgt)
{
	double want, per = 2.0 + tgt;
	int k;

	for (k = 0; k < s->nsteps; k++) {
		want = per * accum;
		want += (k + 1) % per_epoch != 0 && k + 1 < STEPS ? per : 0; /* loads the next */
		want -= k % per_epoch != 0 ? per : 0;                       /* was loaded */
		T_CHECK(s->h2d[k] == want, "accum %d: step %d made %g uploads, want %g", accum,
			k + 1, s->h2d[k], want);
	}
}

static void check_uploads(const struct seen *s, int accum, int per_epoch)
{
	check_uploads_t(s, accum, per_epoch, 0);
}

/* mlp: one read per optimizer step (two with clipping); the uploads; losses
 * and weights as the reference's, across an epoch's end (accum 3: 8 steps
 * an epoch). */
static void mlp_case(int accum, float clip, const char *spec)
{
	static float w[MAXW];
	struct mgpu_train_cfg c;
	double loss[STEPS];
	struct seen s;
	int k;

	config(&c, tmpdir, spec, accum, clip);
	run(&c, &s);
	for (k = 0; k < s.nsteps; k++)
		T_CHECK(s.d2h[k] == (clip > 0 ? 2.0 : 1.0), "accum %d clip %g: step %d made %g "
			"blocking reads", accum, (double)clip, k + 1, s.d2h[k]);
	check_uploads(&s, accum, (NTRAIN * 3 / 4) / (BATCH * accum));
	T_OK(reference(&c, loss, w));
	for (k = 0; k < s.nsteps; k++)
		T_NEAR(s.loss[k], loss[k], 1e-12 * fabs(loss[k]));
	T_CHECK(s.nparams > 0 && memcmp(s.w, w, s.nparams * sizeof(float)) == 0,
		"accum %d clip %g: the weights differ from the reference's", accum,
		(double)clip);
}

static void test_mlp(void)
{
	if (t_tmpdir_make("hostsync") < 0)
		T_SKIP("no temporary directory");
	T_OK(make_data(D0, 256, CLASSES));
	mlp_case(1, 0.0f, "mlp:12-8-3");
	mlp_case(3, 0.0f, "mlp:12-8-3,act=gelu,layernorm,dropout=0.1");
	mlp_case(1, 0.5f, "mlp:12-8-3");
	mlp_case(2, 0.05f, "mlp:12-8-3,layernorm");
	t_tmpdir_remove();
}

/* Vector targets: the target's loss stays on the device too. */
static void test_targets(void)
{
	struct mgpu_train_cfg c;
	struct seen s;
	int accum, k;

	if (t_tmpdir_make("hostsync-targets") < 0)
		T_SKIP("no temporary directory");
	T_OK(make_target_tar(tpath("t.tar")));
	for (accum = 1; accum <= 2; accum++) {
		config(&c, tpath("t.tar"), "mlp:auto-8-auto", accum, 0.0f);
		run(&c, &s);
		for (k = 0; k < s.nsteps; k++) {
			T_CHECK(s.d2h[k] == 1.0, "targets accum %d: step %d made %g blocking "
				"reads", accum, k + 1, s.d2h[k]);
			T_CHECK(s.loss[k] > 0 && s.loss[k] < 10, "step %d: loss %g", k + 1,
				s.loss[k]);
		}
		check_uploads_t(&s, accum, (NTRAIN * 3 / 4) / (BATCH * accum), 1);
		T_CHECK(s.loss[STEPS - 1] < s.loss[0], "the loss went from %g to %g", s.loss[0],
			s.loss[STEPS - 1]);
	}
	t_tmpdir_remove();
}

/* gpt: the same one read per step, whatever the accumulation. */
static void test_gpt(void)
{
	struct mgpu_train_cfg c;
	struct seen s;
	int accum, k;

	if (t_tmpdir_make("hostsync-gpt") < 0)
		T_SKIP("no temporary directory");
	T_OK(make_data(CTX + 1, 64, 1));
	for (accum = 1; accum <= 2; accum++) {
		config(&c, tmpdir, "gpt:layers=1,heads=2,dim=16,ctx=16,vocab=64", accum, 0.0f);
		T_OK(mgpu_batch_plan_make(&c.plan, 4, 0, accum, 1));
		c.optim.kind = MGPU_OPT_ADAMW;
		c.lr = 0.01;
		run(&c, &s);
		for (k = 0; k < s.nsteps; k++) {
			T_CHECK(s.d2h[k] == 1.0, "gpt accum %d: step %d made %g blocking reads",
				accum, k + 1, s.d2h[k]);
			T_CHECK(s.loss[k] > 0 && s.loss[k] < 10, "step %d: loss %g", k + 1,
				s.loss[k]);
		}
		check_uploads(&s, accum, (NTRAIN * 3 / 4) / (4 * accum));
	}
	t_tmpdir_remove();
}

/* mgpu_model_loss: one read for both sums, the same as the rows' sums. */
static void test_model_loss(void)
{
	struct mgpu_spec spec;
	struct mgpu_dev dev;
	struct mgpu_model m;
	uint8_t x[BATCH * D0];
	int32_t y[BATCH];
	float rl[BATCH], rc[BATCH];
	double l, c, wl = 0, wc = 0;
	uint64_t reads;
	int i;

	for (i = 0; i < BATCH * D0; i++)
		x[i] = (uint8_t)(mgpu_hash64(5, (uint64_t)i) & 255);
	for (i = 0; i < BATCH; i++)
		y[i] = (int32_t)(mgpu_hash64(6, (uint64_t)i) % CLASSES);
	T_OK(mgpu_spec_parse(&spec, "mlp:12-8-3", "test"));
	T_OK(mgpu_dev_open(&dev, &mgpu_ops_ref, 0));
	T_OK(mgpu_model_create(&m, &spec, &dev, BATCH));
	T_OK(mgpu_model_init(&m, 1));
	T_OK(mgpu_model_load_batch(&m, x, y, BATCH, 1.0f / 255, -0.5f));
	T_OK(mgpu_model_forward(&m, BATCH, 0));
	reads = dev.d2h_count;
	T_OK(mgpu_model_loss(&m, BATCH, 0, 0.0f, &l, &c));
	T_CHECK(dev.d2h_count == reads + 1, "%llu reads for one loss",
		(unsigned long long)(dev.d2h_count - reads));
	T_OK(mgpu_dev_to_host(&dev, rl, m.row_loss, sizeof rl));
	T_OK(mgpu_dev_to_host(&dev, rc, m.row_correct, sizeof rc));
	for (i = 0; i < BATCH; i++) {
		wl += rl[i];
		wc += rc[i];
	}
	T_NEAR(l, wl, 1e-12 * wl);
	T_CHECK(c == wc, "correct %g, rows say %g", c, wc);
	mgpu_model_free(&m);
	mgpu_dev_close(&dev);
}

/* The staging of input batches: two buffers taken in turn, copies from
 * the current one counted as uploads, none past its end. */
static void test_upload(void)
{
	struct mgpu_upload u;
	struct mgpu_dev dev;
	char *h0, *h1, *h2, *d = NULL, back[32];

	T_OK(mgpu_dev_open(&dev, &mgpu_ops_cpu, 0));
	T_OK(mgpu_dev_alloc(&dev, (void **)&d, 32));
	T_OK(mgpu_upload_open(&u, &dev, 48));
	T_OK(mgpu_upload_begin(&u, &h0));
	memcpy(h0 + 16, "first batch's bytes, 32 of them", 32);
	T_OK(mgpu_upload_copy(&u, d, 16, 32));
	T_OK(mgpu_upload_end(&u));
	T_CHECK(dev.h2d_count == 1 && dev.h2d_nbytes == 32, "%llu uploads",
		(unsigned long long)dev.h2d_count);
	T_OK(mgpu_upload_begin(&u, &h1));
	T_CHECK(h1 != h0, "the next batch reuses the buffer of the one before");
	T_FAILS(mgpu_upload_copy(&u, d, 17, 32), MGPU_EINVAL, "32 bytes at 17 of a 48-byte");
	T_OK(mgpu_upload_end(&u));
	T_OK(mgpu_upload_begin(&u, &h2));
	T_CHECK(h2 == h0, "the buffers do not alternate");
	T_OK(mgpu_upload_end(&u));
	T_OK(mgpu_dev_to_host(&dev, back, d, 32));
	T_CHECK(memcmp(back, "first batch's bytes, 32 of them", 32) == 0, "bytes moved");
	mgpu_upload_close(&u);
	mgpu_dev_free(&dev, d, 32);
	mgpu_dev_close(&dev);
}

/* Whether a step reads the gradient norm back is known before the step
 * (mgpu_optim_reads_norm: the NCCL strategy then waits for the gradient
 * buckets first, watching for a dead peer), and the step does what it
 * said: one blocking read exactly when it did. */
static void test_reads_norm(void)
{
	static const struct {
		float clip, scale;
		int bound, reads;
	} cs[] = { { 0.0f, 1.0f, 1, 0 }, { 0.0f, 0.5f, 1, 1 }, { 1.0f, 1.0f, 1, 1 },
		   { 0.0f, 1.0f, 0, 1 } };
	struct mgpu_train_cfg c;
	struct mgpu_dev dev;
	struct mgpu_model m;
	struct mgpu_optim o;
	uint64_t before;
	size_t i;

	mgpu_train_defaults(&c);
	T_OK(mgpu_spec_parse(&c.spec, "mlp:12-8-3", "test"));
	T_OK(mgpu_dev_open(&dev, &mgpu_ops_ref, 0));
	T_OK(mgpu_model_create(&m, &c.spec, &dev, BATCH));
	for (i = 0; i < sizeof cs / sizeof cs[0]; i++) {
		c.optim.clip_norm = cs[i].clip;
		T_OK(mgpu_optim_create(&o, &m, &c.optim));
		o.norm2_dev = cs[i].bound ? m.stats + MGPU_STAT_NORM2 : NULL; /* as sync binds */
		T_CHECK(mgpu_optim_reads_norm(&o, cs[i].scale) == cs[i].reads,
			"case %zu: reads_norm says %d", i, !cs[i].reads);
		before = dev.d2h_count;
		T_OK(mgpu_optim_step(&o, 0.1f, cs[i].scale));
		T_CHECK(dev.d2h_count - before == (uint64_t)cs[i].reads,
			"case %zu: the step made %llu reads, reads_norm said %d", i,
			(unsigned long long)(dev.d2h_count - before), cs[i].reads);
		T_CHECK(o.norm2_queued == !cs[i].reads, "case %zu: norm2_queued %d", i,
			o.norm2_queued);
		mgpu_optim_free(&o);
	}
	mgpu_model_free(&m);
	mgpu_dev_close(&dev);
}

int main(void)
{
	T_RUN(test_upload);
	T_RUN(test_reads_norm);
	T_RUN(test_model_loss);
	T_RUN(test_mlp);
	T_RUN(test_gpt);
	T_RUN(test_targets);
	return T_DONE();
}
