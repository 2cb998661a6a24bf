/*
 * test_model.c - the MLP's gradients against finite differences, for every
 * layer kind (linear, each activation, layernorm, dropout), plus optimizer
 * and schedule arithmetic, the model spec grammar, and checkpoints of a
 * diverged model.
 */
#include <math.h>   /* cos, M_PI */
#include <stdlib.h> /* malloc */
#include <string.h> /* strcmp, strstr */
#include <unistd.h> /* access */

#include "core/err.h"  /* mgpu_errmsg */
#include "core/hash.h" /* mgpu_hash64 */
#include "core/io.h"   /* mgpu_read_file */
#include "data/samples.h" /* MGPU_DTYPE_U8 */
#include "core/json.h" /* mgpu_json_parse */
#include "train/ckpt.h"   /* mgpu_ckpt_save, mgpu_ckpt_resolve */
#include "model/model.h"  /* struct mgpu_model */
#include "train/optim.h"  /* mgpu_sched_lr */
#include "model/safetensors.h" /* mgpu_st_load */
#include "ops/elem.h"  /* mgpu_sgd_elem */
#include "model/spec.h"   /* mgpu_spec_parse */
#include "t.h"
#include "tmpdir.h"    /* t_tmpdir_make, tpath */

#define B 4

static double loss_at(struct mgpu_model *m)
{
	double l, c;

	if (mgpu_model_forward(m, B, 1) || mgpu_model_loss(m, B, 0, 0, &l, &c))
		return NAN;
	return l / B;
}

/* Every parameter's analytic gradient against a central difference. */
static void grad_check(const char *spec_text, const char *backend)
{
	struct mgpu_spec spec;
	struct mgpu_dev dev;
	struct mgpu_model m;
	uint8_t x[B * 6];
	int32_t y[B] = { 0, 2, 1, 2 };
	float *w, *g, h = 2e-3f;
	double l, c, worst = 0;
	size_t i;

	T_OK(mgpu_spec_parse(&spec, spec_text, "test"));
	T_OK(mgpu_dev_open(&dev, mgpu_ops_find(backend), 0));
	T_OK(mgpu_model_create(&m, &spec, &dev, B));
	T_OK(mgpu_model_init(&m, 3));
	for (i = 0; i < sizeof x; i++)
		x[i] = (uint8_t)(mgpu_hash64(1, i) & 255);
	T_OK(mgpu_model_load_batch(&m, x, y, B, 1.0f / 64, -2.0f));
	m.dropout_seed = 99;
	T_OK(mgpu_model_forward(&m, B, 1));
	T_OK(mgpu_model_loss(&m, B, 1, 1.0f / B, &l, &c));
	T_OK(mgpu_model_backward(&m, B, 0));
	w = malloc(m.nparams * sizeof *w);
	g = malloc(m.nparams * sizeof *g);
	T_OK(mgpu_model_get(&m, w));
	T_OK(mgpu_dev_to_host(&dev, g, m.g, m.nparams * sizeof *g));
	for (i = 0; i < m.nparams; i++) {
		float keep = w[i];
		double lp, lm, num, err;
		w[i] = keep + h;
		mgpu_model_set(&m, w);
		lp = loss_at(&m);
		w[i] = keep - h;
		mgpu_model_set(&m, w);
		lm = loss_at(&m);
		w[i] = keep;
		num = (lp - lm) / (2.0 * h);
		err = fabs(num - g[i]) / fmax(1e-2, fabs(num) + fabs(g[i]));
		if (err > worst)
			worst = err;
		T_CHECK(err < 2e-2, "%s: param %zu: analytic %g numeric %g", spec_text, i,
			(double)g[i], num);
		if (t_cur_failed > 3)
			break;
	}
	mgpu_model_set(&m, w);
	free(w);
	free(g);
	mgpu_model_free(&m);
	T_CHECK(dev.bytes_cur == 0, "device bytes leaked: %zu", dev.bytes_cur);
	mgpu_dev_close(&dev);
}

static void test_grad_relu(void) { grad_check("mlp:6-5-4-3", "ref"); }
static void test_grad_gelu(void) { grad_check("mlp:6-5-4-3,act=gelu", "ref"); }
static void test_grad_tanh(void) { grad_check("mlp:6-5-4-3,act=tanh", "ref"); }
static void test_grad_layernorm(void) { grad_check("mlp:6-5-4-3,act=tanh,layernorm", "ref"); }
static void test_grad_dropout(void) { grad_check("mlp:6-7-3,act=gelu,dropout=0.3", "ref"); }
static void test_grad_cpu(void) { grad_check("mlp:6-5-4-3,act=gelu,layernorm,dropout=0.2", "cpu"); }
static void test_grad_all_ref(void) { grad_check("mlp:6-5-4-3,act=gelu,layernorm,dropout=0.2", "ref"); }

/* Accumulating two half batches gives the gradient of the whole batch. */
static void test_accumulate(void)
{
	struct mgpu_spec spec;
	struct mgpu_dev dev;
	struct mgpu_model m;
	uint8_t x[B * 6];
	int32_t y[B] = { 1, 0, 2, 2 };
	float g1[64], g2[64];
	double l, c;
	size_t i;

	T_OK(mgpu_spec_parse(&spec, "mlp:6-4-3,layernorm", "test"));
	T_OK(mgpu_dev_open(&dev, &mgpu_ops_ref, 0));
	T_OK(mgpu_model_create(&m, &spec, &dev, B));
	T_OK(mgpu_model_init(&m, 5));
	T_CHECK(m.nparams <= 64, "%zu params", m.nparams);
	for (i = 0; i < sizeof x; i++)
		x[i] = (uint8_t)(mgpu_hash64(2, i) & 255);
	T_OK(mgpu_model_load_batch(&m, x, y, B, 1.0f / 128, -1.0f));
	T_OK(mgpu_model_forward(&m, B, 1));
	T_OK(mgpu_model_loss(&m, B, 1, 1.0f / B, &l, &c));
	T_OK(mgpu_model_backward(&m, B, 0));
	T_OK(mgpu_dev_to_host(&dev, g1, m.g, m.nparams * sizeof(float)));
	T_OK(mgpu_model_load_batch(&m, x, y, 2, 1.0f / 128, -1.0f));
	T_OK(mgpu_model_forward(&m, 2, 1));
	T_OK(mgpu_model_loss(&m, 2, 1, 1.0f / B, &l, &c));
	T_OK(mgpu_model_backward(&m, 2, 0));
	T_OK(mgpu_model_load_batch(&m, x + 12, y + 2, 2, 1.0f / 128, -1.0f));
	T_OK(mgpu_model_forward(&m, 2, 1));
	T_OK(mgpu_model_loss(&m, 2, 1, 1.0f / B, &l, &c));
	T_OK(mgpu_model_backward(&m, 2, 1));
	T_OK(mgpu_dev_to_host(&dev, g2, m.g, m.nparams * sizeof(float)));
	for (i = 0; i < m.nparams; i++)
		T_NEAR(g1[i], g2[i], 1e-5 + 1e-4 * fabs(g1[i]));
	mgpu_model_free(&m);
	mgpu_dev_close(&dev);
}

/* torch.optim.SGD with momentum 0.9, Nesterov, weight decay: two steps by hand. */
static void test_sgd_steps(void)
{
	struct mgpu_sgd_hp hp = { .lr = 0.1f, .momentum = 0.9f, .weight_decay = 0.01f,
				  .grad_scale = 0.5f, .nesterov = 1 };
	float w = 1.0f, mom = 0.0f;
	double d, buf, ww = 1.0;

	mgpu_sgd_elem(&w, 2.0f, &mom, &hp);
	d = 1.0 + 0.01 * ww;
	buf = d;
	ww -= 0.1 * (d + 0.9 * buf);
	T_NEAR(w, ww, 1e-6);
	mgpu_sgd_elem(&w, 2.0f, &mom, &hp);
	d = 1.0 + 0.01 * ww;
	buf = 0.9 * buf + d;
	ww -= 0.1 * (d + 0.9 * buf);
	T_NEAR(w, ww, 1e-6);
}

/* The optimizer takes the gradient norm without clipping too (the training
 * loop stops on a non-finite one), scaled as the gradient is. */
static void test_grad_norm(void)
{
	struct mgpu_optim_cfg oc = { .kind = MGPU_OPT_SGD };
	struct mgpu_spec spec;
	struct mgpu_dev dev;
	struct mgpu_model m;
	struct mgpu_optim o;
	float g[64];
	size_t i;

	T_OK(mgpu_spec_parse(&spec, "mlp:6-4-3", "test"));
	T_OK(mgpu_dev_open(&dev, &mgpu_ops_ref, 0));
	T_OK(mgpu_model_create(&m, &spec, &dev, B));
	T_OK(mgpu_optim_create(&o, &m, &oc));
	T_CHECK(m.nparams <= 64, "%zu params", m.nparams);
	for (i = 0; i < m.nparams; i++)
		g[i] = i == 0 ? 6.0f : i == 1 ? 8.0f : 0.0f;
	T_OK(mgpu_dev_from_host(&dev, m.g, g, m.nparams * sizeof(float)));
	T_OK(mgpu_optim_step(&o, 0.1f, 0.5f));
	T_NEAR(o.last_norm, 5.0, 1e-6);
	g[2] = INFINITY;
	T_OK(mgpu_dev_from_host(&dev, m.g, g, m.nparams * sizeof(float)));
	T_OK(mgpu_optim_step(&o, 0.1f, 0.5f));
	T_CHECK(!isfinite(o.last_norm), "norm %g", o.last_norm);
	mgpu_optim_free(&o);
	mgpu_model_free(&m);
	mgpu_dev_close(&dev);
}

/* A model with a non-finite weight is not saved: latest keeps naming the
 * last good checkpoint. Non-finite state values are written as JSON null. */
static void test_ckpt_nonfinite(void)
{
	struct mgpu_ckpt_state st = { .step = 7, .world_size = 1, .global_batch = 4,
				      .norm_scale = 0.5, .norm_shift = NAN };
	struct mgpu_optim_cfg oc = { .kind = MGPU_OPT_SGD, .momentum = 0.9f };
	const char *argv[] = { "--lr", "0.1" };
	char dir[MGPU_CKPT_PATH], *text;
	struct mgpu_json_doc doc = { 0 };
	unsigned char *data = NULL;
	struct mgpu_spec spec;
	struct mgpu_dev dev;
	struct mgpu_model m;
	struct mgpu_optim o;
	float w[64];
	size_t len = 0;

	if (t_tmpdir_make("model") < 0)
		T_SKIP("no temporary directory");
	T_OK(mgpu_spec_parse(&spec, "mlp:6-4-3", "test"));
	T_OK(mgpu_spec_format(&spec, st.spec, sizeof st.spec));
	T_OK(mgpu_dev_open(&dev, &mgpu_ops_ref, 0));
	T_OK(mgpu_model_create(&m, &spec, &dev, B));
	T_OK(mgpu_model_init(&m, 1));
	T_OK(mgpu_optim_create(&o, &m, &oc));
	T_OK(mgpu_ckpt_save(tpath("ck"), 0, &st, &m, &o, argv, 2, dir, sizeof dir));
	T_OK(mgpu_read_file(tpath("ck/step-00000007/state.json"), &data, &len));
	text = (char *)data;
	T_CHECK(text && strstr(text, "\"norm_shift\": null"), "state.json: %s", text);
	T_OK(mgpu_json_parse(text, len, "state.json", &doc));
	mgpu_json_free(&doc);
	free(data);
	T_OK(mgpu_model_get(&m, w));
	w[m.nparams - 1] = NAN;
	T_OK(mgpu_model_set(&m, w));
	st.step = 8;
	T_FAILS(mgpu_ckpt_save(tpath("ck"), 0, &st, &m, &o, argv, 2, dir, sizeof dir),
		MGPU_ERANGE, "step 8: weight 'layers.1.bias' is not finite");
	T_CHECK(access(tpath("ck/step-00000008"), F_OK) != 0, "the diverged checkpoint exists");
	T_OK(mgpu_ckpt_resolve(tpath("ck"), dir, sizeof dir));
	T_CHECK(strcmp(dir, tpath("ck/step-00000007")) == 0, "latest is %s", dir);
	mgpu_optim_free(&o);
	mgpu_model_free(&m);
	mgpu_dev_close(&dev);
	t_tmpdir_remove();
}

/* A BatchNorm's running statistics, as a conv family keeps them: buffers
 * laid out beside the parameters, on the device, saved into
 * model.safetensors under their names and loaded back on resume. */
static int with_buffers(struct mgpu_model *m, const struct mgpu_spec *spec,
			struct mgpu_dev *dev)
{
	MGPU_TRY(mgpu_model_create(m, spec, dev, B));
	mgpu_model_add_buffer(m, "layers.0.bn.running_mean", 4, 0);
	mgpu_model_add_buffer(m, "layers.0.bn.running_var", 4, 0);
	mgpu_model_add_buffer(m, "layers.0.bn.num_batches_tracked", 1, 0);
	return mgpu_model_alloc(m, &m->buf, m->nbufvals * sizeof(float));
}

static int summed;

static int count_sums(void *ctx, int layer, float *sums, size_t count)
{
	(void)ctx;
	(void)sums;
	summed += layer * 100 + (int)count;
	return 0;
}

static void test_ckpt_buffers(void)
{
	struct mgpu_ckpt_state st = { .step = 3, .world_size = 1, .global_batch = 4,
				      .norm_scale = 1, .norm_shift = 0 };
	struct mgpu_optim_cfg oc = { .kind = MGPU_OPT_SGD, .momentum = 0.9f };
	const float want[9] = { 0.5f, -1, 2, 3, 1, 1.5f, 2, 4, 7 };
	const char *argv[] = { "--lr", "0.1" };
	char dir[MGPU_CKPT_PATH];
	struct mgpu_st sf = { 0 };
	const struct mgpu_st_tensor *t;
	struct mgpu_model m, back;
	struct mgpu_optim o, ob;
	struct mgpu_spec spec;
	struct mgpu_dev dev;
	float got[9];

	if (t_tmpdir_make("model-buf") < 0)
		T_SKIP("no temporary directory");
	T_OK(mgpu_spec_parse(&spec, "mlp:6-4-3", "test"));
	T_OK(mgpu_spec_format(&spec, st.spec, sizeof st.spec));
	T_OK(mgpu_dev_open(&dev, &mgpu_ops_ref, 0));
	T_OK(with_buffers(&m, &spec, &dev));
	T_CHECK(m.nbufvals == 9 && m.buffers[2].off == 8, "%zu values", m.nbufvals);
	T_OK(mgpu_model_init(&m, 1));
	T_OK(mgpu_model_set_buffers(&m, want));
	T_OK(mgpu_optim_create(&o, &m, &oc));
	T_OK(mgpu_ckpt_save(tpath("ck"), 0, &st, &m, &o, argv, 2, dir, sizeof dir));
	T_OK(mgpu_st_load(tpath("ck/step-00000003/model.safetensors"), &sf));
	t = mgpu_st_find(&sf, "layers.0.bn.running_var");
	T_CHECK(t && t->ndim == 1 && t->shape[0] == 4, "no running_var tensor of 4");
	T_CHECK(mgpu_st_find(&sf, "layers.0.weight") != NULL, "no weight tensor");
	mgpu_st_free(&sf);
	T_OK(with_buffers(&back, &spec, &dev));
	T_OK(mgpu_optim_create(&ob, &back, &oc));
	T_OK(mgpu_ckpt_load_tensors(dir, &back, &ob));
	T_OK(mgpu_model_get_buffers(&back, got));
	T_CHECK(memcmp(got, want, sizeof got) == 0, "buffers back: %g %g .. %g", got[0], got[1],
		got[8]);
	/* no sync-bn hook: nothing is summed; with one, the layer's sums go to it */
	T_OK(mgpu_model_sum_stats(&back, 2, back.buf, 8));
	T_CHECK(summed == 0, "summed %d", summed);
	back.stat_sum = count_sums;
	T_OK(mgpu_model_sum_stats(&back, 2, back.buf, 8));
	T_CHECK(summed == 208, "summed %d", summed);
	mgpu_optim_free(&ob);
	mgpu_model_free(&back);
	mgpu_optim_free(&o);
	mgpu_model_free(&m);
	mgpu_dev_close(&dev);
	t_tmpdir_remove();
}

static void test_schedules(void)
{
	struct mgpu_sched s = { .kind = MGPU_SCHED_COSINE, .lr = 1.0, .min_lr = 0.1,
				.warmup_steps = 10, .total_steps = 110 };

	T_NEAR(mgpu_sched_lr(&s, 0), 0.1, 1e-12);
	T_NEAR(mgpu_sched_lr(&s, 9), 1.0, 1e-12);
	T_NEAR(mgpu_sched_lr(&s, 10), 1.0, 1e-12);
	T_NEAR(mgpu_sched_lr(&s, 60) - 0.1, 0.9 * 0.5 * (1 + cos(M_PI * 50 / 99)), 1e-12);
	/* the last step of the run (109) runs at the floor, not above it */
	T_NEAR(mgpu_sched_lr(&s, 109), 0.1, 1e-12);
	T_CHECK(mgpu_sched_lr(&s, 108) > 0.1, "step 108 at %g", mgpu_sched_lr(&s, 108));
	T_NEAR(mgpu_sched_lr(&s, 110), 0.1, 1e-12);
	/* one step after warm-up: the peak */
	s.total_steps = 11;
	T_NEAR(mgpu_sched_lr(&s, 10), 1.0, 1e-12);
	s = (struct mgpu_sched){ .kind = MGPU_SCHED_STEP, .lr = 1.0, .gamma = 0.5,
				 .step_every = 5 };
	T_NEAR(mgpu_sched_lr(&s, 4), 1.0, 1e-12);
	T_NEAR(mgpu_sched_lr(&s, 5), 0.5, 1e-12);
	T_NEAR(mgpu_sched_lr(&s, 12), 0.25, 1e-12);
	s.kind = MGPU_SCHED_CONSTANT;
	T_NEAR(mgpu_sched_lr(&s, 1000), 1.0, 1e-12);
}

/* mgpu_spec_fit to uint8 samples of d features and labels below classes */
static int fit(struct mgpu_spec *s, int d, int classes, const char *path)
{
	struct mgpu_data_desc dd = { .dtype = MGPU_DTYPE_U8, .d = d, .ndim = 1,
				     .shape = { (unsigned)d }, .classes = classes };

	return mgpu_spec_fit(s, &dd, path);
}

static void test_spec(void)
{
	struct mgpu_spec s;
	char buf[256];

	T_OK(mgpu_spec_parse(&s, "mlp:784-512-256-10,act=gelu,dropout=0.25,layernorm", "t"));
	T_CHECK(s.nlayers == 3 && s.dims[3] == 10, "nlayers %d", s.nlayers);
	T_OK(mgpu_spec_format(&s, buf, sizeof buf));
	T_CHECK(strcmp(buf, "mlp:784-512-256-10,act=gelu,dropout=0.25,layernorm") == 0, "%s",
		buf);
	/* auto sizes: printed as auto until the data fills them in */
	T_OK(mgpu_spec_parse(&s, "mlp:auto-256-128-auto,act=gelu", "t"));
	T_CHECK(mgpu_spec_has_auto(&s) && s.nlayers == 3, "nlayers %d", s.nlayers);
	T_OK(mgpu_spec_format(&s, buf, sizeof buf));
	T_CHECK(strcmp(buf, "mlp:auto-256-128-auto,act=gelu") == 0, "%s", buf);
	T_OK(fit(&s, 561, 6, "har"));
	T_OK(mgpu_spec_format(&s, buf, sizeof buf));
	T_CHECK(strcmp(buf, "mlp:561-256-128-6,act=gelu") == 0 && !mgpu_spec_has_auto(&s), "%s",
		buf);
	T_OK(fit(&s, 561, 4, "har")); /* fewer classes in the data: fits */
	T_FAILS(fit(&s, 784, 6, "mnist"), MGPU_EINVAL,
		"'mnist': samples have 784 features but the model takes 561: write --model "
		"mlp:784-256-128-6,act=gelu");
	T_FAILS(fit(&s, 561, 9, "har"), MGPU_ERANGE,
		"labels go up to 8 but the model has 6 classes: write --model mlp:561-256-128-9");
	T_OK(mgpu_spec_parse(&s, "mlp:auto-5", "t"));
	T_OK(fit(&s, 7, 3, "x"));
	T_CHECK(s.dims[0] == 7 && s.dims[1] == 5, "%d-%d", s.dims[0], s.dims[1]);
	T_FAILS(mgpu_spec_parse(&s, "mlp:4-auto-2", "t"), MGPU_EINVAL, "a hidden size cannot be auto");
	T_FAILS(mgpu_spec_parse(&s, "mlp:autox-2", "t"), MGPU_EINVAL, "bad layer size");
	T_OK(mgpu_spec_parse(&s, "gpt:layers=1,heads=2,dim=8,ctx=16", "t"));
	T_FAILS(fit(&s, 33, 256, "g"), MGPU_EINVAL,
		"write --model gpt:layers=1,heads=2,dim=8,ctx=32,vocab=256");
	T_FAILS(mgpu_spec_parse(&s, "mlp:784", "t"), MGPU_EINVAL, "at least two");
	T_FAILS(mgpu_spec_parse(&s, "mlp:784-x-10", "t"), MGPU_EINVAL, "bad layer size");
	T_FAILS(mgpu_spec_parse(&s, "mlp:784-0-10", "t"), MGPU_EINVAL, "bad layer size");
	T_FAILS(mgpu_spec_parse(&s, "rnn:1-2", "t"), MGPU_EINVAL, "does not start with");
	T_FAILS(mgpu_spec_parse(&s, "mlp:4-2,act=swish", "t"), MGPU_EINVAL, "act 'swish'");
	T_FAILS(mgpu_spec_parse(&s, "mlp:4-2,dropout=1", "t"), MGPU_EINVAL, "dropout");
	T_FAILS(mgpu_spec_parse(&s, "mlp:4-2,colour=red", "t"), MGPU_EINVAL, "unknown option");
	T_FAILS(mgpu_spec_load(&s, "/nonexistent/spec"), MGPU_EINVAL, "not a spec");
}

/* The printed spec is what a checkpoint records and a resume parses: a
 * dropout of more than six digits must come back as the same float. */
static void test_spec_dropout_exact(void)
{
	static const char *const specs[] = { "mlp:4-3-2,dropout=0.1234567",
					     "gpt:layers=1,heads=1,dim=4,ctx=4,dropout=0.1234567" };
	struct mgpu_spec s, back;
	char buf[256];
	size_t i;

	for (i = 0; i < sizeof specs / sizeof specs[0]; i++) {
		T_OK(mgpu_spec_parse(&s, specs[i], "t"));
		T_OK(mgpu_spec_format(&s, buf, sizeof buf));
		T_OK(mgpu_spec_parse(&back, buf, "t"));
		T_CHECK(back.dropout == s.dropout, "%s printed as %s: dropout %.9g, not %.9g",
			specs[i], buf, (double)back.dropout, (double)s.dropout);
	}
}

int main(void)
{
	T_RUN(test_grad_relu);
	T_RUN(test_grad_gelu);
	T_RUN(test_grad_tanh);
	T_RUN(test_grad_layernorm);
	T_RUN(test_grad_dropout);
	T_RUN(test_grad_cpu);
	T_RUN(test_grad_all_ref);
	T_RUN(test_accumulate);
	T_RUN(test_sgd_steps);
	T_RUN(test_grad_norm);
	T_RUN(test_ckpt_nonfinite);
	T_RUN(test_ckpt_buffers);
	T_RUN(test_schedules);
	T_RUN(test_spec);
	T_RUN(test_spec_dropout_exact);
	return T_DONE();
}
