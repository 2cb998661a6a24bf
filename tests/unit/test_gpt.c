/*
 * test_gpt.c - the gpt: model (model/gpt.c): its spec grammar, every parameter
 * tensor's gradient against central differences on ref and cpu (with
 * dropout too), a broken backend the same check must reject (the mutation
 * check), causality (no position sees a later byte), gradient accumulation,
 * cpu against ref, the gradient buckets the sync layer reads, and bad bytes.
 */
#include <math.h>   /* fabs, fmax, log */
#include <stdlib.h> /* malloc, free */
#include <string.h> /* strcmp, strstr, memcmp */

#include "core/err.h"  /* mgpu_errmsg */
#include "core/hash.h" /* mgpu_hash64 */
#include "model/model.h"  /* struct mgpu_model */
#include "model/spec.h"   /* mgpu_spec_parse */
#include "t.h"

#define SPEC "gpt:layers=2,heads=2,dim=8,ctx=5,vocab=11"
#define NB 3 /* sequences per batch */
#define CTX 5
#define VOCAB 11

/* NB samples of CTX+1 bytes below VOCAB. */
static void make_batch(uint8_t *x, uint64_t seed)
{
	size_t i;

	for (i = 0; i < (size_t)NB * (CTX + 1); i++)
		x[i] = (uint8_t)(mgpu_hash64(seed, i) % VOCAB);
}

/* Weights far from the 0.02 init, so attention is not uniform and every
 * path carries gradient; LayerNorm gains near 1. */
static int scramble(struct mgpu_model *m)
{
	float *w = malloc(m->nparams * sizeof *w);
	size_t i;
	int p, rc;

	if (!w)
		return -1;
	for (i = 0; i < m->nparams; i++)
		w[i] = (float)((double)(mgpu_hash64(77, i) >> 11) / 9007199254740992.0 - 0.5);
	for (p = 0; p < m->nparam; p++)
		if (strstr(m->params[p].name, "ln") && strstr(m->params[p].name, ".weight"))
			for (i = 0; i < m->params[p].count; i++)
				w[m->params[p].off + i] += 1.0f;
	rc = mgpu_model_set(m, w);
	free(w);
	return rc;
}

static double mean_loss(struct mgpu_model *m)
{
	double l, c;

	if (mgpu_model_forward(m, NB, 1) || mgpu_model_loss(m, NB, 0, 0, &l, &c))
		return NAN;
	return l / NB;
}

/*
 * Compare each parameter's analytic gradient with a central difference and
 * return how many tensors fail; their names go to bad (space-separated).
 */
static int grad_check(const char *spec_text, const struct mgpu_ops *ops, char *bad,
		      size_t badlen)
{
	struct mgpu_spec spec;
	struct mgpu_dev dev;
	struct mgpu_model m;
	uint8_t x[NB * (CTX + 1)];
	float *w, *g, h = 1e-2f;
	double l, c;
	int p, nbad = 0, failed0 = t_cur_failed;
	size_t i;

	bad[0] = '\0';
	T_OK(mgpu_spec_parse(&spec, spec_text, "test"));
	T_OK(mgpu_dev_open(&dev, ops, 0));
	T_OK(mgpu_model_create(&m, &spec, &dev, NB));
	if (t_cur_failed > failed0)
		return -1;
	T_OK(scramble(&m));
	make_batch(x, 5);
	T_OK(mgpu_model_load_tokens(&m, x, 1, NB));
	m.dropout_seed = 1234;
	T_OK(mgpu_model_forward(&m, NB, 1));
	T_OK(mgpu_model_loss(&m, NB, 1, 1.0f / NB, &l, &c));
	T_OK(mgpu_model_backward(&m, NB, 0));
	w = malloc(m.nparams * sizeof *w);
	g = malloc(m.nparams * sizeof *g);
	T_OK(mgpu_model_get(&m, w));
	T_OK(mgpu_dev_to_host(&dev, g, m.g, m.nparams * sizeof *g));
	for (p = 0; p < m.nparam; p++) {
		const struct mgpu_param *pp = &m.params[p];
		double worst = 0.0;
		for (i = pp->off; i < pp->off + pp->count; i++) {
			float keep = w[i];
			double lp, lm, num, err;
			w[i] = keep + h;
			mgpu_model_set(&m, w);
			lp = mean_loss(&m);
			w[i] = keep - h;
			mgpu_model_set(&m, w);
			lm = mean_loss(&m);
			w[i] = keep;
			num = (lp - lm) / (2.0 * h);
			err = fabs(num - g[i]) / fmax(1e-2, fabs(num) + fabs(g[i]));
			worst = err > worst ? err : worst;
		}
		mgpu_model_set(&m, w);
		if (!(worst < 1e-2)) {
			nbad++;
			if (strlen(bad) + strlen(pp->name) + 2 < badlen) {
				strcat(bad, pp->name);
				strcat(bad, " ");
			}
		}
	}
	free(w);
	free(g);
	mgpu_model_free(&m);
	T_CHECK(dev.bytes_cur == 0, "device bytes leaked: %zu", dev.bytes_cur);
	mgpu_dev_close(&dev);
	return nbad;
}

static void test_grad_ref(void)
{
	char bad[1024];
	int n = grad_check(SPEC, &mgpu_ops_ref, bad, sizeof bad);

	T_CHECK(n == 0, "%d tensors off: %s", n, bad);
}

static void test_grad_cpu_dropout(void)
{
	char bad[1024];
	int n = grad_check(SPEC ",dropout=0.2", &mgpu_ops_cpu, bad, sizeof bad);

	T_CHECK(n == 0, "%d tensors off: %s", n, bad);
}

/* One block, one head: the smallest case still has every kind of layer. */
static void test_grad_one_head(void)
{
	char bad[1024];
	int n = grad_check("gpt:layers=1,heads=1,dim=4,ctx=5,vocab=11", &mgpu_ops_ref, bad,
			   sizeof bad);

	T_CHECK(n == 0, "%d tensors off: %s", n, bad);
}

/* Mutants: the check must name the tensors upstream of the broken op. */
static int bad_attn_bwd(struct mgpu_dev *dev, float *dq, float *dk, float *dv, const float *q,
			const float *k, const float *v, const float *y, const float *dy,
			const float *lse, int BH, int T, int Dh, float scale, enum mgpu_prec prec)
{
	size_t i, n = (size_t)BH * T * Dh;
	int rc = mgpu_ops_ref.attn_bwd(dev, dq, dk, dv, q, k, v, y, dy, lse, BH, T, Dh, scale,
				       prec);

	for (i = 0; i < n; i++) { /* the 1/sqrt(Dh) of ds applied twice */
		dq[i] *= scale;
		dk[i] *= scale;
	}
	return rc;
}

static int bad_emb_bwd(struct mgpu_dev *dev, float *dwte, float *dwpe, const float *dY,
		       const int32_t *ids, int B, int T, int V, int D, float acc)
{
	(void)acc; /* overwrites the tied head's part of dwte */
	return mgpu_ops_ref.emb_bwd(dev, dwte, dwpe, dY, ids, B, T, V, D, 0.0f);
}

static void test_grad_mutants(void)
{
	struct mgpu_ops ops = mgpu_ops_ref;
	char bad[1024];
	int n;

	ops.attn_bwd = bad_attn_bwd;
	n = grad_check(SPEC, &ops, bad, sizeof bad);
	/* wrong from block 1's qkv down to the embeddings; right downstream */
	T_CHECK(n > 0 && strstr(bad, "blocks.0.attn.qkv.weight") &&
			strstr(bad, "blocks.1.attn.qkv.weight") && strstr(bad, "wte.weight") &&
			!strstr(bad, "blocks.1.attn.proj") && !strstr(bad, "blocks.1.mlp") &&
			!strstr(bad, "ln_f"),
		"attention mutant: %d flagged: %s", n, bad);
	ops = mgpu_ops_ref;
	ops.emb_bwd = bad_emb_bwd;
	n = grad_check(SPEC, &ops, bad, sizeof bad);
	T_CHECK(n == 1 && strcmp(bad, "wte.weight ") == 0, "embedding mutant: %d flagged: %s",
		n, bad);
}

struct model_env {
	struct mgpu_spec spec;
	struct mgpu_dev dev;
	struct mgpu_model m;
};

static int env_open(struct model_env *e, const char *spec, const struct mgpu_ops *ops, int B)
{
	MGPU_TRY(mgpu_spec_parse(&e->spec, spec, "test"));
	MGPU_TRY(mgpu_dev_open(&e->dev, ops, 0));
	MGPU_TRY(mgpu_model_create(&e->m, &e->spec, &e->dev, B));
	return mgpu_model_init(&e->m, 9);
}

static void env_close(struct model_env *e)
{
	mgpu_model_free(&e->m);
	mgpu_dev_close(&e->dev);
}

/* The loss at positions before j does not move when byte j + 1 changes. */
static void test_causal(void)
{
	struct model_env e;
	uint8_t x[NB * (CTX + 1)];
	float before[NB * CTX], after[NB * CTX];
	double l, c;
	int i, changed = 0;

	T_OK(env_open(&e, SPEC, &mgpu_ops_cpu, NB));
	T_OK(scramble(&e.m));
	make_batch(x, 6);
	T_OK(mgpu_model_load_tokens(&e.m, x, 1, NB));
	T_OK(mgpu_model_forward(&e.m, NB, 0));
	T_OK(mgpu_model_loss(&e.m, NB, 0, 0, &l, &c));
	T_OK(mgpu_dev_to_host(&e.dev, before, e.m.row_loss, sizeof before));
	x[CTX - 1] = (uint8_t)((x[CTX - 1] + 1) % VOCAB); /* sample 0's last input */
	T_OK(mgpu_model_load_tokens(&e.m, x, 1, NB));
	T_OK(mgpu_model_forward(&e.m, NB, 0));
	T_OK(mgpu_model_loss(&e.m, NB, 0, 0, &l, &c));
	T_OK(mgpu_dev_to_host(&e.dev, after, e.m.row_loss, sizeof after));
	for (i = 0; i < NB * CTX; i++) {
		int sample = i / CTX, pos = i % CTX;
		int may_change = sample == 0 && pos >= CTX - 2;
		if (!may_change)
			T_CHECK(after[i] == before[i], "position %d of sample %d moved", pos,
				sample);
		changed += after[i] != before[i];
	}
	T_CHECK(changed == 2, "%d losses changed, want positions %d and %d of sample 0",
		changed, CTX - 2, CTX - 1);
	env_close(&e);
}

/* Two micro-batches accumulated = the whole batch; cpu agrees with ref. */
static void test_accumulate_and_backends(void)
{
	struct model_env e, r;
	uint8_t x[NB * (CTX + 1)];
	float *g1, *g2, *g3;
	double l, c, lr;
	size_t i, n;

	T_OK(env_open(&e, SPEC, &mgpu_ops_cpu, NB));
	T_OK(env_open(&r, SPEC, &mgpu_ops_ref, NB));
	n = e.m.nparams;
	T_CHECK(n == mgpu_model_count(&e.spec), "count %zu vs %zu", n, mgpu_model_count(&e.spec));
	g1 = malloc(n * sizeof *g1);
	g2 = malloc(n * sizeof *g2);
	g3 = malloc(n * sizeof *g3);
	make_batch(x, 8);
	T_OK(mgpu_model_load_tokens(&e.m, x, 1, NB));
	T_OK(mgpu_model_forward(&e.m, NB, 1));
	T_OK(mgpu_model_loss(&e.m, NB, 1, 1.0f / NB, &l, &c));
	T_CHECK(fabs(l / NB - log(VOCAB)) < 0.1, "initial loss %g, log(V) %g", l / NB,
		log(VOCAB));
	T_OK(mgpu_model_backward(&e.m, NB, 0));
	T_OK(mgpu_dev_to_host(&e.dev, g1, e.m.g, n * sizeof *g1));
	T_OK(mgpu_model_load_tokens(&r.m, x, 1, NB));
	T_OK(mgpu_model_forward(&r.m, NB, 1));
	T_OK(mgpu_model_loss(&r.m, NB, 1, 1.0f / NB, &lr, &c));
	T_OK(mgpu_model_backward(&r.m, NB, 0));
	T_OK(mgpu_dev_to_host(&r.dev, g3, r.m.g, n * sizeof *g3));
	T_NEAR(l, lr, 1e-5);
	for (i = 0; i < n; i++)
		T_NEAR(g1[i], g3[i], 1e-6 + 1e-4 * fabs(g3[i]));
	/* one sequence, then two, accumulated */
	T_OK(mgpu_model_load_tokens(&e.m, x, 1, 1));
	T_OK(mgpu_model_forward(&e.m, 1, 1));
	T_OK(mgpu_model_loss(&e.m, 1, 1, 1.0f / NB, &l, &c));
	T_OK(mgpu_model_backward(&e.m, 1, 0));
	T_OK(mgpu_model_load_tokens(&e.m, x + CTX + 1, 1, 2));
	e.m.row0 = 1;
	T_OK(mgpu_model_forward(&e.m, 2, 1));
	T_OK(mgpu_model_loss(&e.m, 2, 1, 1.0f / NB, &l, &c));
	T_OK(mgpu_model_backward(&e.m, 2, 1));
	T_OK(mgpu_dev_to_host(&e.dev, g2, e.m.g, n * sizeof *g2));
	for (i = 0; i < n; i++)
		T_NEAR(g1[i], g2[i], 1e-6 + 1e-4 * fabs(g1[i]));
	free(g1);
	free(g2);
	free(g3);
	env_close(&e);
	env_close(&r);
}

static int order[32], norder;

static int record(void *ctx, int layer, size_t off, size_t count)
{
	struct mgpu_model *m = ctx;
	const struct mgpu_bucket *k = &m->buckets[layer];

	if (off != k->off || count != k->count)
		return -1;
	order[norder++] = layer;
	return 0;
}

/* Buckets tile the flat vector, and arrive last layer first. */
static void test_buckets(void)
{
	struct model_env e;
	uint8_t x[NB * (CTX + 1)];
	size_t next = 0;
	double l, c;
	int b;

	T_OK(env_open(&e, SPEC, &mgpu_ops_cpu, NB));
	T_CHECK(e.m.nbuckets == 4, "nbuckets %d", e.m.nbuckets);
	for (b = 0; b < e.m.nbuckets; b++) {
		const struct mgpu_bucket *k = &e.m.buckets[b];
		T_CHECK(k->off == next, "bucket %d starts at %zu, want %zu", b, k->off, next);
		next = k->off + k->count;
	}
	T_CHECK(next == e.m.nparams, "buckets cover %zu of %zu", next, e.m.nparams);
	T_CHECK(strcmp(e.m.params[0].name, "wte.weight") == 0 &&
			strcmp(e.m.params[e.m.nparam - 1].name, "ln_f.bias") == 0 &&
			e.m.nparam == 4 + 2 * 12,
		"names %s .. %s (%d)", e.m.params[0].name, e.m.params[e.m.nparam - 1].name,
		e.m.nparam);
	e.m.grad_ready = record;
	e.m.grad_ctx = &e.m;
	make_batch(x, 3);
	T_OK(mgpu_model_load_tokens(&e.m, x, 1, NB));
	T_OK(mgpu_model_forward(&e.m, NB, 1));
	T_OK(mgpu_model_loss(&e.m, NB, 1, 1.0f / NB, &l, &c));
	T_OK(mgpu_model_backward(&e.m, NB, 0));
	T_CHECK(norder == 4 && order[0] == 3 && order[1] == 2 && order[2] == 1 && order[3] == 0,
		"order %d: %d %d %d %d", norder, order[0], order[1], order[2], order[3]);
	env_close(&e);
}

static void test_bad_bytes(void)
{
	struct model_env e;
	uint8_t x[NB * (CTX + 1)];

	T_OK(env_open(&e, SPEC, &mgpu_ops_cpu, NB));
	make_batch(x, 4);
	x[(CTX + 1) + 3] = VOCAB;
	T_FAILS(mgpu_model_load_tokens(&e.m, x, 1, NB), MGPU_ERANGE,
		"token 11 at position 3 of sample 1 is not below vocab 11");
	T_FAILS(mgpu_model_load_tokens(&e.m, x, 1, NB + 1), MGPU_EINVAL,
		"room for 3");
	T_FAILS(mgpu_model_load_batch_f32(&e.m, NULL, NULL, 1), MGPU_EINVAL, "byte tokens");
	env_close(&e);
}

static void test_spec(void)
{
	static const struct {
		const char *text, *err;
	} bad[] = {
		{ "gpt:layers=2,heads=2,dim=8", "needs layers=, heads=, dim= and ctx=" },
		{ "gpt:layers=2,heads=3,dim=8,ctx=4", "not a multiple of heads 3" },
		{ "gpt:layers=15,heads=2,dim=8,ctx=4", "layers '15' is not an integer in [1, 14]" },
		{ "gpt:layers=2,heads=2,dim=8,ctx=4,vocab=1", "vocab '1'" },
		{ "gpt:layers=2,heads=2,dim=8x,ctx=4", "dim '8x'" },
		{ "gpt:layers=2,heads=2,dim=8,ctx=4,dropout=1", "dropout '1'" },
		{ "gpt:layers=2,heads=2,dim=8,ctx=4,act=relu", "unknown gpt option 'act=relu'" },
		{ "gpt:layers=2,,heads=2,dim=8,ctx=4", "empty option" },
		{ "gpt:layers=2,heads=2,dim=8,ctx=4,", "empty option" },
		{ "gpt:layers", "lacks '=VALUE'" },
		{ "rnn:4", "does not start with 'mlp:', 'gpt:' or 'cnn:'" },
		{ "gpt:layers=2,heads=2,dim=8,ctx=4,vocab=2147483648", "vocab '2147483648'" },
		{ "gpt:layers=2,heads=2,dim=8,ctx=4,vocab=300,padded_vocab=299",
		  "padded_vocab 299 is below vocab 300" },
	};
	struct mgpu_spec s, back;
	char buf[256];
	size_t i;

	T_OK(mgpu_spec_parse(&s, "gpt:layers=4,heads=4,dim=256,ctx=256,dropout=0.1", "t"));
	T_CHECK(s.kind == MGPU_MODEL_GPT && s.blocks == 4 && s.heads == 4 && s.dim == 256 &&
			s.ctx == 256 && s.vocab == 256 && s.dropout == 0.1f,
		"fields");
	T_CHECK(s.nlayers == 0 && s.dims[0] == 0 && mgpu_spec_classes(&s) == 256 &&
			mgpu_spec_is_lm(&s),
		"a gpt described as an mlp: %d layers, dims[0] %d", s.nlayers, s.dims[0]);
	T_OK(mgpu_spec_format(&s, buf, sizeof buf));
	T_CHECK(strcmp(buf, "gpt:layers=4,heads=4,dim=256,ctx=256,vocab=256,dropout=0.1") == 0,
		"%s", buf);
	T_OK(mgpu_spec_parse(&back, buf, "t"));
	T_CHECK(memcmp(&back, &s, sizeof s) == 0, "format does not read back");
	/* 12 D^2 + 13 D per block, V D + T D, 2 D: GPT-2 small's count at its sizes */
	T_OK(mgpu_spec_parse(&s, "gpt:layers=12,heads=12,dim=768,ctx=1024,vocab=50257", "t"));
	T_CHECK(mgpu_model_count(&s) == 124439808, "count %zu", mgpu_model_count(&s));
	/* llm.c's padding: 47 more rows of 768 */
	T_OK(mgpu_spec_parse(&s, "gpt:layers=12,heads=12,dim=768,ctx=1024,vocab=50257,"
			     "padded_vocab=50304", "t"));
	T_CHECK(mgpu_model_count(&s) == 124439808 + 47 * 768, "count %zu", mgpu_model_count(&s));
	T_OK(mgpu_spec_format(&s, buf, sizeof buf));
	T_CHECK(strcmp(buf, "gpt:layers=12,heads=12,dim=768,ctx=1024,vocab=50257,"
		       "padded_vocab=50304") == 0, "%s", buf);
	T_OK(mgpu_spec_parse(&s, "gpt:layers=1,heads=1,dim=1,ctx=1,vocab=2147483647", "t"));
	T_CHECK(s.vocab == 2147483647 && s.padded_vocab == s.vocab, "vocab %d", s.vocab);
	for (i = 0; i < sizeof bad / sizeof bad[0]; i++)
		T_FAILS(mgpu_spec_parse(&s, bad[i].text, "t"), MGPU_EINVAL, bad[i].err);
}

/* A bf16 gpt generates from the weights it holds now: weights set since
 * the last forward are rounded before the first byte, not left stale. */
static void test_generate_bf16_fresh(void)
{
	static const uint8_t prompt[] = { 1, 2, 3 };
	struct model_env e;
	uint8_t stale[12], fresh[12], before[12], x[NB * (CTX + 1)];
	float *w;
	size_t i;

	T_OK(env_open(&e, SPEC, &mgpu_ops_cpu, NB));
	T_OK(mgpu_model_set_prec(&e.m, MGPU_PREC_BF16));
	T_OK(scramble(&e.m));
	make_batch(x, 3);
	T_OK(mgpu_model_load_tokens(&e.m, x, 1, NB));
	T_CHECK(!isnan(mean_loss(&e.m)), "forward: %s", mgpu_errmsg());
	T_OK(mgpu_model_generate(&e.m, prompt, sizeof prompt, sizeof before, 0.0, 1, before));
	/* other weights, no forward in between */
	w = malloc(e.m.nparams * sizeof *w);
	T_CHECK(w != NULL, "out of memory");
	T_OK(mgpu_model_get(&e.m, w));
	for (i = 0; i < e.m.nparams; i++)
		w[i] = -w[i] * 1.5f;
	T_OK(mgpu_model_set(&e.m, w));
	free(w);
	T_OK(mgpu_model_generate(&e.m, prompt, sizeof prompt, sizeof stale, 0.0, 1, stale));
	T_OK(mgpu_model_load_tokens(&e.m, x, 1, NB));
	T_CHECK(!isnan(mean_loss(&e.m)), "forward: %s", mgpu_errmsg());
	T_OK(mgpu_model_generate(&e.m, prompt, sizeof prompt, sizeof fresh, 0.0, 1, fresh));
	T_CHECK(memcmp(fresh, before, sizeof fresh) != 0, "the new weights give the same text");
	T_CHECK(memcmp(stale, fresh, sizeof fresh) == 0,
		"generated from the weights of the last forward, not the ones set");
	env_close(&e);
}

#define PSPEC "gpt:layers=2,heads=2,dim=8,ctx=5,vocab=11,padded_vocab=16"
#define PAD 16

/* A padded vocabulary: every gradient still matches central differences,
 * the padding rows start at zero and get an exactly zero gradient, the
 * loss is the unpadded model's bit for bit (the softmax is over the real
 * vocab only), and generation never emits a padding id however large its
 * row grows. */
static void test_padded_vocab(void)
{
	struct model_env a, b;
	uint8_t x[NB * (CTX + 1)];
	char bad[512];
	int32_t prompt[2] = { 1, 2 }, out[20];
	float *w, *g;
	double la, lb, c;
	size_t i, D = 8, pad0 = VOCAB * D, pad1 = PAD * D;

	T_CHECK(grad_check(PSPEC, &mgpu_ops_ref, bad, sizeof bad) == 0, "bad gradients: %s",
		bad);
	T_OK(env_open(&a, PSPEC, &mgpu_ops_cpu, NB));
	T_OK(env_open(&b, SPEC, &mgpu_ops_cpu, NB));
	T_CHECK(a.m.params[0].shape[0] == PAD && b.m.params[0].shape[0] == VOCAB &&
		a.m.nparams == b.m.nparams + (PAD - VOCAB) * D, "wte rows %d, %d",
		a.m.params[0].shape[0], b.m.params[0].shape[0]);
	w = malloc(a.m.nparams * sizeof *w);
	g = malloc(a.m.nparams * sizeof *g);
	T_CHECK(w && g, "out of memory");
	T_OK(mgpu_model_get(&a.m, w));
	for (i = pad0; i < pad1; i++)
		T_CHECK(w[i] == 0.0f, "padding weight %zu starts at %g", i, (double)w[i]);
	T_OK(scramble(&a.m));
	T_OK(mgpu_model_get(&a.m, w));
	/* b: a's weights without the padding rows (wte comes first) */
	memmove(w + pad0, w + pad1, (a.m.nparams - pad1) * sizeof *w);
	T_OK(mgpu_model_set(&b.m, w));
	make_batch(x, 8);
	T_OK(mgpu_model_load_tokens(&a.m, x, 1, NB));
	T_OK(mgpu_model_load_tokens(&b.m, x, 1, NB));
	T_OK(mgpu_model_forward(&a.m, NB, 1));
	T_OK(mgpu_model_loss(&a.m, NB, 1, 1.0f / NB, &la, &c));
	T_OK(mgpu_model_backward(&a.m, NB, 0));
	T_OK(mgpu_model_forward(&b.m, NB, 1));
	T_OK(mgpu_model_loss(&b.m, NB, 1, 1.0f / NB, &lb, &c));
	T_CHECK(la == lb, "padded loss %.9g, unpadded %.9g", la, lb);
	T_OK(mgpu_dev_to_host(&a.dev, g, a.m.g, a.m.nparams * sizeof *g));
	for (i = pad0; i < pad1; i++)
		T_CHECK(g[i] == 0.0f, "padding gradient %zu is %g", i, (double)g[i]);
	/* padding rows that would win every logit if they had one */
	T_OK(mgpu_model_get(&a.m, w));
	for (i = pad0; i < pad1; i++)
		w[i] = 100.0f;
	T_OK(mgpu_model_set(&a.m, w));
	T_OK(mgpu_model_generate_tokens(&a.m, prompt, 2, 20, 1.0, 5, out));
	for (i = 0; i < 20; i++)
		T_CHECK(out[i] >= 0 && out[i] < VOCAB, "generated id %d", (int)out[i]);
	free(w);
	free(g);
	env_close(&a);
	env_close(&b);
}

/* Token rows of 2 and 4 bytes: the same model state as the same ids in
 * bytes, ids past 255 accepted below the vocab, and one at or above it an
 * error naming sample and position. */
static void test_token_rows(void)
{
	struct model_env e;
	uint8_t x[NB * (CTX + 1)];
	uint16_t x16[NB * (CTX + 1)];
	uint32_t x32[NB * (CTX + 1)];
	double l8, l16, l32, c;
	size_t i;

	T_OK(env_open(&e, "gpt:layers=1,heads=2,dim=8,ctx=5,vocab=70000", &mgpu_ops_cpu, NB));
	make_batch(x, 9);
	for (i = 0; i < sizeof x; i++) {
		x16[i] = x[i];
		x32[i] = x[i];
	}
	T_OK(mgpu_model_load_tokens(&e.m, x, 1, NB));
	T_OK(mgpu_model_forward(&e.m, NB, 0));
	T_OK(mgpu_model_loss(&e.m, NB, 0, 0, &l8, &c));
	T_OK(mgpu_model_load_tokens(&e.m, x16, 2, NB));
	T_OK(mgpu_model_forward(&e.m, NB, 0));
	T_OK(mgpu_model_loss(&e.m, NB, 0, 0, &l16, &c));
	T_OK(mgpu_model_load_tokens(&e.m, x32, 4, NB));
	T_OK(mgpu_model_forward(&e.m, NB, 0));
	T_OK(mgpu_model_loss(&e.m, NB, 0, 0, &l32, &c));
	T_CHECK(l8 == l16 && l8 == l32, "losses %g %g %g", l8, l16, l32);
	x16[4] = 65535;
	x32[CTX + 1 + 2] = 69999;
	T_OK(mgpu_model_load_tokens(&e.m, x16, 2, NB));
	T_OK(mgpu_model_load_tokens(&e.m, x32, 4, NB));
	x32[2 * (CTX + 1) + 5] = 70000;
	T_FAILS(mgpu_model_load_tokens(&e.m, x32, 4, NB), MGPU_ERANGE,
		"token 70000 at position 5 of sample 2 is not below vocab 70000");
	env_close(&e);
}

int main(void)
{
	T_RUN(test_spec);
	T_RUN(test_grad_ref);
	T_RUN(test_grad_cpu_dropout);
	T_RUN(test_grad_one_head);
	T_RUN(test_grad_mutants);
	T_RUN(test_causal);
	T_RUN(test_accumulate_and_backends);
	T_RUN(test_buckets);
	T_RUN(test_bad_bytes);
	T_RUN(test_generate_bf16_fresh);
	T_RUN(test_padded_vocab);
	T_RUN(test_token_rows);
	return T_DONE();
}
