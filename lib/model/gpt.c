/*
 * gpt.c - the "gpt:" family (model/arch.h): its spec grammar, layout,
 * forward, backward and generation over the ops table.
 *
 * The model (GPT-2's layout): token and position embeddings, L pre-LayerNorm
 * blocks (x += proj(attn(ln1(x))); x += mlp(ln2(x)) with a 4*D GELU MLP and
 * causal multi-head self-attention), a final LayerNorm, and an output head
 * tied to the token embedding (logits = ln_f(x) wte^T), trained with
 * cross-entropy over the next token. Dropout (the spec's P) follows the
 * embedding sum and each branch's output projection.
 *
 * Data: a sample is T+1 tokens (bytes of u8 rows, or the ids of u16 and
 * u32 rows: data/tokens.h); inputs are tokens 0..T-1, targets 1..T. The
 * loss of a sample is the mean over its T positions (nats per token), its
 * "correct" the fraction of positions whose argmax is the next token.
 *
 * Padded vocabulary (padded_vocab = Vp > V, as llm.c's 50304 for GPT-2's
 * 50257): wte has Vp rows so checkpoints keep the padded shape, but the
 * head's one product computes only the V real columns of the logits. The
 * softmax and the loss are therefore over the V real tokens exactly; the
 * padding rows are in no product, get a zero gradient (start at zero and
 * stay there: weight decay only shrinks zero), are never a target (an id
 * >= V is an error when a batch is loaded) and never generated.
 *
 * Logits (N,V) exist once: xent writes dloss/dlogits over them in place
 * as it goes row by row (llm.c's fused classifier), so the head costs one
 * (N,V) buffer, not two.
 *
 * Parameters sit in the flat buffers (model.h) in this order, with these
 * safetensors names (row-major, as torch.nn.Linear stores weight (out, in)):
 *   wte.weight (Vp,D), wpe.weight (T,D),
 *   blocks.I.{ln1,ln2}.{weight,bias} (D),
 *   blocks.I.attn.qkv.weight (3D,D) .bias (3D)   q, k, v stacked in that order
 *   blocks.I.attn.proj.weight (D,D) .bias (D)
 *   blocks.I.mlp.fc.weight (4D,D) .bias (4D)
 *   blocks.I.mlp.proj.weight (D,4D) .bias (D)
 *   ln_f.weight, ln_f.bias (D)
 * Gradient buckets (m->buckets, what grad_ready reports): 0 = both
 * embeddings (ready last: the tied head adds to wte first), 1..L = block
 * b-1, L+1 = ln_f (ready first).
 *
 * Letters: B sequences, T positions, N = B*T token rows, D width, H heads of
 * Dh = D/H, V vocabulary, Vp >= V the token embedding's rows (padded_vocab). Activations are row-major (N, width); the
 * attention works per head on (B*H, T, Dh) copies through the fused ops
 * attn_fwd / attn_bwd (ops.h), which never store the (T, T) scores: a block
 * keeps its rows' log-sum-exp (B*H, T) for the backward instead.
 * Row-major products use ops.h's identity, as mlp.c does: with W (out,in)
 *   Y = X W^T   -> sgemm(T, N, out, N, in, 1, W, in, X, in, 0, Y, out)
 *   dX = dY W   -> sgemm(N, N, in, N, out, 1, W, in, dY, out, 0, dX, in)
 *   dW += dY^T X-> sgemm(N, T, in, out, N, 1, X, in, dY, out, acc, dW, in)
 * (the per-head products of attention are attn_cpu.c's, by the same
 * identity, on the cpu backend).
 *
 * Memory: every buffer is sized for max_batch sequences and owned by the
 * model (mgpu_model_alloc, released together); the saved
 * activations per block are ln1, q, k, v, lse, merged y, the mid
 * residual, ln2, the MLP's pre-activation and GELU output.
 */
#include "model/model.h"

#include <errno.h>  /* errno */
#include <math.h>   /* sqrtf, exp */
#include <stdio.h>  /* snprintf */
#include <stdlib.h> /* calloc, malloc, free, strtol */
#include <string.h> /* strstr, strchr, strcspn, memcpy, memset */

#include "core/cancel.h"  /* mgpu_cancel_check */
#include "core/err.h"     /* mgpu_err, MGPU_TRY */
#include "core/hash.h"    /* mgpu_hash64 */
#include "core/rng.h"     /* struct mgpu_rng */
#include "data/samples.h" /* enum mgpu_dtype */
#include "data/text.h"    /* MGPU_TEXT_MAX_CONTEXT: the longest ctx */
#include "model/arch.h"      /* struct mgpu_arch */
#include "model/mm.h"        /* mgpu_mm, mgpu_mm_round_weights */

#define LN_EPS 1e-5f
/* the generator stream of sampling: apart from init (1) and the data's */
#define GEN_STREAM 0x67656eULL

struct gpt_block {
	struct mgpu_param *ln1g, *ln1b, *wqkv, *bqkv, *wproj, *bproj;
	struct mgpu_param *ln2g, *ln2b, *wfc, *bfc, *wmp, *bmp;
	float *a1, *mean1, *rstd1; /* ln1 output (N,D), stats (N) */
	float *q, *k, *v;          /* (B*H,T,Dh) each */
	float *lse;                /* (B*H,T) attention rows' log-sum-exp */
	float *y;                  /* (N,D) heads merged */
	float *mid;                /* (N,D) residual after attention */
	float *a2, *mean2, *rstd2; /* ln2 */
	float *fc, *h;             /* (N,4D) pre-activation, GELU output */
	float *out;                /* (N,D) residual after the MLP */
};

struct mgpu_gpt {
	int L, H, D, T, V, Vp, Dh;
	int ldl;                    /* the logits' row stride, >= V (mgpu_spec_logits_ld) */
	struct mgpu_param *wte, *wpe, *lnfg, *lnfb;
	struct gpt_block blk[MGPU_GPT_MAX_BLOCKS];
	float *emb;                 /* (N,D) embedding sum: the first residual */
	float *xf, *meanf, *rstdf;  /* final LayerNorm */
	float *logits;              /* (N,V) rows ldl apart, the loss's gradient in place (m->dlogits) */
	int32_t *ids;               /* (N) input tokens, device */
	float *dres, *dt, *da, *dx; /* (N,D) backward scratch */
	float *dq, *dk, *dv;        /* (N,D) */
	/* One (N,4D) buffer under three names, as their lives never overlap:
	 * a block's forward qkv (N,3D), its backward's MLP gradient dh (N,4D),
	 * then the attention's dqkv (N,3D). */
	float *qkv, *dh, *dqkv;
};

/* ---- spec -------------------------------------------------------------- */

/* One gpt option, NAME=VALUE, into the spec. */
static int gpt_option(struct mgpu_spec *s, const char *opt, size_t len, const char *origin)
{
	static const struct {
		const char *name;
		long lo, hi;
	} ints[] = {
		{ "layers", 1, MGPU_GPT_MAX_BLOCKS }, { "heads", 1, 1024 }, { "dim", 1, 1 << 16 },
		{ "ctx", 1, (long)MGPU_TEXT_MAX_CONTEXT }, { "vocab", 2, 2147483647L },
		{ "padded_vocab", 2, 2147483647L },
	};
	int *const field[] = { &s->blocks, &s->heads, &s->dim, &s->ctx, &s->vocab,
			       &s->padded_vocab };
	char buf[64], *e;
	const char *val;
	size_t i;
	long v;

	if (len >= sizeof buf)
		return mgpu_err(MGPU_EINVAL, "%s: option '%.*s' too long", origin, (int)len, opt);
	memcpy(buf, opt, len);
	buf[len] = '\0';
	val = strchr(buf, '=');
	if (!val)
		return mgpu_err(MGPU_EINVAL, "%s: gpt option '%s' lacks '=VALUE'", origin, buf);
	val++;
	if (strncmp(buf, "dropout=", 8) == 0)
		return mgpu_spec_dropout(s, val, origin);
	for (i = 0; i < sizeof ints / sizeof ints[0]; i++) {
		size_t nl = strlen(ints[i].name);
		if (strncmp(buf, ints[i].name, nl) != 0 || buf[nl] != '=')
			continue;
		errno = 0;
		v = strtol(val, &e, 10);
		if (*val < '0' || *val > '9' || *e != '\0' || errno || v < ints[i].lo ||
		    v > ints[i].hi)
			return mgpu_err(MGPU_EINVAL, "%s: %s '%s' is not an integer in [%ld, %ld]",
					origin, ints[i].name, val, ints[i].lo, ints[i].hi);
		*field[i] = (int)v;
		return 0;
	}
	return mgpu_err(MGPU_EINVAL, "%s: unknown gpt option '%s'", origin, buf);
}

/* What the options leave to check and default. */
static int gpt_finish(struct mgpu_spec *s, const char *origin)
{
	if (!s->blocks || !s->heads || !s->dim || !s->ctx)
		return mgpu_err(MGPU_EINVAL, "%s: a gpt needs layers=, heads=, dim= and ctx=",
				origin);
	if (s->dim % s->heads != 0)
		return mgpu_err(MGPU_EINVAL, "%s: dim %d is not a multiple of heads %d", origin,
				s->dim, s->heads);
	if (!s->padded_vocab)
		s->padded_vocab = s->vocab;
	if (s->padded_vocab < s->vocab)
		return mgpu_err(MGPU_EINVAL, "%s: padded_vocab %d is below vocab %d", origin,
				s->padded_vocab, s->vocab);
	return 0;
}

static int parse(struct mgpu_spec *s, const char *body, const char *text, const char *origin)
{
	const char *p = body, *end;

	s->vocab = 256;
	MGPU_TRY(mgpu_spec_no_repeats(p, origin));
	while (*p) {
		end = p + strcspn(p, ",");
		if (end == p)
			return mgpu_err(MGPU_EINVAL, "%s: empty option in '%s'", origin, text);
		MGPU_TRY(gpt_option(s, p, (size_t)(end - p), origin));
		p = *end ? end + 1 : end;
		if (*end && !*p)
			return mgpu_err(MGPU_EINVAL, "%s: empty option in '%s'", origin, text);
	}
	return gpt_finish(s, origin);
}

static int format(const struct mgpu_spec *s, char *buf, size_t len)
{
	char p[32];
	int n = snprintf(buf, len, "gpt:layers=%d,heads=%d,dim=%d,ctx=%d,vocab=%d", s->blocks,
			 s->heads, s->dim, s->ctx, s->vocab);

	if (n >= 0 && (size_t)n < len && s->padded_vocab != s->vocab)
		n += snprintf(buf + n, len - (size_t)n, ",padded_vocab=%d", s->padded_vocab);
	if (n >= 0 && (size_t)n < len && s->dropout > 0.0f)
		n += snprintf(buf + n, len - (size_t)n, ",dropout=%s", mgpu_spec_dropout_str(s, p));
	if (n < 0 || (size_t)n >= len)
		return mgpu_err(MGPU_EINVAL, "model spec too long to print");
	return 0;
}

/* Samples of ctx + 1 token ids: bytes (a vocab of 256 at most) or ids. */
static int fit(struct mgpu_spec *s, const struct mgpu_data_desc *dd, const char *path)
{
	struct mgpu_spec want = *s;
	int d = dd->d;
	char fitted[512];

	if (dd->dtype == MGPU_DTYPE_F32)
		return mgpu_err(MGPU_EINVAL, "'%s': holds float32 features, but a gpt reads "
				"byte tokens: build the cache with --dtype u8 and without "
				"--normalize (or train on the shards)", path);
	/* a larger vocab would only train logits no byte asks for, and what
	 * generation draws from them would not fit a byte */
	if (dd->dtype == MGPU_DTYPE_U8 && s->vocab > 256)
		return mgpu_err(MGPU_EINVAL, "'%s': holds bytes (token ids 0 to 255): a gpt on it "
				"has a vocab of at most 256, not %d (token ids: mgpu-shard "
				"--tokens)", path, s->vocab);
	if (d == s->ctx + 1)
		return 0;
	want.ctx = d - 1;
	if (d < 2 || gpt_finish(&want, "--model") < 0 || format(&want, fitted, sizeof fitted) < 0)
		return mgpu_err(MGPU_EINVAL, "'%s': samples have %d features but the model "
				"takes %d (a gpt's ctx + 1)", path, d, s->ctx + 1);
	return mgpu_err(MGPU_EINVAL, "'%s': samples have %d features but the model takes "
			"%d (a gpt's ctx + 1): write --model %s", path, d, s->ctx + 1, fitted);
}

/* The next-token predictions: the vocabulary. */
static int classes(const struct mgpu_spec *s)
{
	return s->vocab;
}

/* ---- layout ---------------------------------------------------------- */

static struct mgpu_param *param(struct mgpu_model *m, const char *name, int rows, int cols)
{
	/* weight decay on matrices (embeddings too), as nanoGPT */
	return mgpu_model_add_param(m, name, rows, cols, cols != 0);
}

static struct mgpu_param *bparam(struct mgpu_model *m, int l, const char *what, int rows,
				 int cols)
{
	char name[48];

	snprintf(name, sizeof name, "blocks.%d.%s", l, what);
	return param(m, name, rows, cols);
}

static void layout(struct mgpu_model *m, struct mgpu_gpt *g)
{
	int l, D = g->D;

	g->wte = param(m, "wte.weight", g->Vp, D);
	g->wpe = param(m, "wpe.weight", g->T, D);
	mgpu_model_add_bucket(m, g->wte, g->wpe);
	for (l = 0; l < g->L; l++) {
		struct gpt_block *k = &g->blk[l];
		k->ln1g = bparam(m, l, "ln1.weight", D, 0);
		k->ln1b = bparam(m, l, "ln1.bias", D, 0);
		k->wqkv = bparam(m, l, "attn.qkv.weight", 3 * D, D);
		k->bqkv = bparam(m, l, "attn.qkv.bias", 3 * D, 0);
		k->wproj = bparam(m, l, "attn.proj.weight", D, D);
		k->bproj = bparam(m, l, "attn.proj.bias", D, 0);
		k->ln2g = bparam(m, l, "ln2.weight", D, 0);
		k->ln2b = bparam(m, l, "ln2.bias", D, 0);
		k->wfc = bparam(m, l, "mlp.fc.weight", 4 * D, D);
		k->bfc = bparam(m, l, "mlp.fc.bias", 4 * D, 0);
		k->wmp = bparam(m, l, "mlp.proj.weight", D, 4 * D);
		k->bmp = bparam(m, l, "mlp.proj.bias", D, 0);
		mgpu_model_add_bucket(m, k->ln1g, k->bmp);
	}
	g->lnfg = param(m, "ln_f.weight", D, 0);
	g->lnfb = param(m, "ln_f.bias", D, 0);
	mgpu_model_add_bucket(m, g->lnfg, g->lnfb);
}

static int wte_rows(const struct mgpu_spec *s)
{
	return s->padded_vocab > s->vocab ? s->padded_vocab : s->vocab;
}

static size_t count(const struct mgpu_spec *s)
{
	size_t D = (size_t)s->dim, blk = 12 * D * D + 13 * D;

	return (size_t)wte_rows(s) * D + (size_t)s->ctx * D + (size_t)s->blocks * blk +
	       2 * D;
}

/* ---- memory ------------------------------------------------------------ */

static int dalloc(struct mgpu_model *m, void *pp, size_t n, size_t elem)
{
	return mgpu_model_alloc(m, pp, n * elem);
}

#define F sizeof(float)

static int alloc_block(struct mgpu_model *m, struct gpt_block *k, size_t N, size_t D,
		       size_t NH)
{
	MGPU_TRY(dalloc(m, &k->a1, N * D, F));
	MGPU_TRY(dalloc(m, &k->mean1, N, F));
	MGPU_TRY(dalloc(m, &k->rstd1, N, F));
	MGPU_TRY(dalloc(m, &k->q, N * D, F));
	MGPU_TRY(dalloc(m, &k->k, N * D, F));
	MGPU_TRY(dalloc(m, &k->v, N * D, F));
	MGPU_TRY(dalloc(m, &k->lse, NH, F));
	MGPU_TRY(dalloc(m, &k->y, N * D, F));
	MGPU_TRY(dalloc(m, &k->mid, N * D, F));
	MGPU_TRY(dalloc(m, &k->a2, N * D, F));
	MGPU_TRY(dalloc(m, &k->mean2, N, F));
	MGPU_TRY(dalloc(m, &k->rstd2, N, F));
	MGPU_TRY(dalloc(m, &k->fc, N * 4 * D, F));
	MGPU_TRY(dalloc(m, &k->h, N * 4 * D, F));
	return dalloc(m, &k->out, N * D, F);
}

static int alloc_scratch(struct mgpu_model *m, struct mgpu_gpt *g, size_t N, size_t D)
{
	MGPU_TRY(dalloc(m, &g->dres, N * D, F));
	MGPU_TRY(dalloc(m, &g->dt, N * D, F));
	MGPU_TRY(dalloc(m, &g->da, N * D, F));
	MGPU_TRY(dalloc(m, &g->dx, N * D, F));
	MGPU_TRY(dalloc(m, &g->dq, N * D, F));
	MGPU_TRY(dalloc(m, &g->dk, N * D, F));
	MGPU_TRY(dalloc(m, &g->dv, N * D, F));
	MGPU_TRY(dalloc(m, &g->qkv, N * 4 * D, F));
	g->dh = g->dqkv = g->qkv;
	return 0;
}

static int alloc_all(struct mgpu_model *m, struct mgpu_gpt *g)
{
	size_t N = (size_t)m->max_batch * (size_t)g->T, D = (size_t)g->D;
	size_t NH = N * (size_t)g->H, ldl = (size_t)g->ldl;
	int l;

	MGPU_TRY(mgpu_model_alloc_params(m));
	MGPU_TRY(dalloc(m, &g->ids, N, sizeof(int32_t)));
	MGPU_TRY(dalloc(m, &m->labels, N, sizeof(int32_t)));
	MGPU_TRY(dalloc(m, &g->emb, N * D, F));
	for (l = 0; l < g->L; l++)
		MGPU_TRY(alloc_block(m, &g->blk[l], N, D, NH));
	MGPU_TRY(dalloc(m, &g->xf, N * D, F));
	MGPU_TRY(dalloc(m, &g->meanf, N, F));
	MGPU_TRY(dalloc(m, &g->rstdf, N, F));
	/* xent writes the gradient over the logits it has read (llm.c's fused
	 * classifier): one (N,V) buffer, not two. Its rows are ldl apart: with
	 * an odd V (GPT-2's 50257) cuBLAS falls back to its slow pre-sm90
	 * kernels for the head's three products; the gap stays zero, no
	 * product or xent reads or writes it */
	MGPU_TRY(dalloc(m, &g->logits, N * ldl, F));
	MGPU_TRY(m->dev->ops->zero(m->dev, g->logits, N * ldl * F));
	m->dlogits = g->logits;
	MGPU_TRY(dalloc(m, &m->row_loss, N, F));
	MGPU_TRY(dalloc(m, &m->row_correct, N, F));
	return alloc_scratch(m, g, N, D);
}

static int create(struct mgpu_model *m)
{
	const struct mgpu_spec *s = &m->spec;
	struct mgpu_gpt *g = calloc(1, sizeof *g);

	if (!g)
		return mgpu_err(MGPU_ENOMEM, "gpt: out of host memory");
	m->fam = g;
	g->L = s->blocks;
	g->H = s->heads;
	g->D = s->dim;
	g->T = s->ctx;
	g->V = s->vocab;
	g->Vp = wte_rows(s);
	g->ldl = mgpu_spec_logits_ld(s);
	g->Dh = s->dim / s->heads;
	layout(m, g);
	return alloc_all(m, g);
}

/* Upload buffers: the targets (B*T ids), then the inputs (B*T ids). */
static size_t labels_nbytes(const struct mgpu_spec *s, int max_batch)
{
	return (size_t)max_batch * (size_t)s->ctx * sizeof(int32_t);
}

static size_t rows_nbytes(const struct mgpu_spec *s, int max_batch)
{
	return (size_t)max_batch * (size_t)s->ctx * sizeof(int32_t);
}

/* ---- init and data ------------------------------------------------------ */

/* Uniform draws with standard deviation sd: U(-sd*sqrt(3), sd*sqrt(3)). */
static void fill_sd(struct mgpu_rng *r, float *x, size_t n, float sd)
{
	mgpu_model_fill_uniform(r, x, n, sd * 1.7320508f);
}

/* ln1.weight, ln2.weight, ln_f.weight: LayerNorm gains start at 1. */
static int is_ln_gain(const char *name)
{
	return strstr(name, "ln") && strstr(name, ".weight");
}

/* GPT-2's init (std 0.02, output projections 0.02 / sqrt(2L), as uniform
 * draws of that deviation), biases 0, LayerNorm 1 and 0; seeded. */
static int init(struct mgpu_model *m, uint64_t seed)
{
	struct mgpu_gpt *g = m->fam;
	float *h = malloc(m->nparams * sizeof(float)), sd_out;
	struct mgpu_rng r;
	int i, rc;

	if (!h)
		return mgpu_err(MGPU_ENOMEM, "gpt: out of host memory");
	sd_out = 0.02f / sqrtf(2.0f * (float)g->L);
	mgpu_rng_seed(&r, seed, 1);
	for (i = 0; i < m->nparam; i++) {
		const struct mgpu_param *p = &m->params[i];
		if (p->ndim == 2) /* the residual branches' output projections are smaller */
			fill_sd(&r, h + p->off, p->count,
				strstr(p->name, ".proj.weight") ? sd_out : 0.02f);
		else
			mgpu_model_fill(h + p->off, p->count, is_ln_gain(p->name) ? 1.0f : 0.0f);
	}
	/* padding rows are no token: zero, and no gradient ever moves them */
	mgpu_model_fill(h + g->wte->off + (size_t)g->V * g->D, (size_t)(g->Vp - g->V) * g->D, 0.0f);
	rc = mgpu_model_set(m, h);
	free(h);
	return rc;
}

/* Token t of a row of ids of nbytes (1, 2 or 4) each, host order. */
static uint32_t id_of(const unsigned char *row, size_t t, int nbytes)
{
	uint16_t h;
	uint32_t w;

	if (nbytes == 1)
		return row[t];
	if (nbytes == 2) {
		memcpy(&h, row + 2 * t, 2);
		return h;
	}
	memcpy(&w, row + 4 * t, 4);
	return w;
}

/* Bytes of one token id of a row of dtype: 1 (bytes), 2 or 4; 0 for
 * features. */
static int id_nbytes(int dtype)
{
	return dtype == MGPU_DTYPE_U8 ? 1 : dtype == MGPU_DTYPE_U16 ? 2 :
	       dtype == MGPU_DTYPE_U32 ? 4 : 0;
}

static int check_ids(const struct mgpu_model *m, const void *row, int nbytes, size_t *pos,
		     uint32_t *id)
{
	const struct mgpu_gpt *g = m->fam;
	size_t t;

	for (t = 0; t <= (size_t)g->T; t++)
		if ((*id = id_of(row, t, nbytes)) >= (uint32_t)g->V) {
			*pos = t;
			return MGPU_ERANGE;
		}
	return 0;
}

static int check_row(const struct mgpu_model *m, const void *row, int dtype, size_t *pos,
		     uint32_t *id)
{
	return check_ids(m, row, id_nbytes(dtype), pos, id);
}

/* Inputs and next-token targets straight into the next upload buffer: a
 * sample's ids are both (labels and the data's norm are not a gpt's). */
static int load(struct mgpu_model *m, const struct mgpu_batch_in *in)
{
	struct mgpu_gpt *g = m->fam;
	int B = in->B, nbytes = id_nbytes(in->dtype);
	size_t T = (size_t)g->T, N = (size_t)B * T, off = mgpu_model_rows_off(m), b, t, pos;
	const unsigned char *row, *x_host = in->rows;
	int32_t *ids, *tgt;
	uint32_t id;
	char *h;

	if (!nbytes)
		return mgpu_err(MGPU_EINVAL, "model: a gpt reads byte tokens, not float32 "
				"features");
	for (b = 0; b < (size_t)B; b++)
		if (check_ids(m, (const unsigned char *)x_host + b * (T + 1) * nbytes,
				       nbytes, &pos, &id))
			return mgpu_err(MGPU_ERANGE, "gpt: token %u at position %zu of sample %zu "
					"is not below vocab %d", id, pos, b, g->V);
	MGPU_TRY(mgpu_upload_begin(&m->up, &h));
	tgt = (int32_t *)(void *)h;
	ids = (int32_t *)(void *)(h + off);
	for (b = 0; b < (size_t)B; b++) {
		row = (const unsigned char *)x_host + b * (T + 1) * nbytes;
		for (t = 0; t < T; t++) {
			ids[b * T + t] = (int32_t)id_of(row, t, nbytes);
			tgt[b * T + t] = (int32_t)id_of(row, t + 1, nbytes);
		}
	}
	MGPU_TRY(mgpu_upload_copy(&m->up, g->ids, off, N * sizeof(int32_t)));
	MGPU_TRY(mgpu_upload_copy(&m->up, m->labels, 0, N * sizeof(int32_t)));
	return mgpu_upload_end(&m->up);
}

/* ---- forward ------------------------------------------------------------ */

/* Dropout site s: 0 the embeddings, 1 + 2l block l's attention, 2 + 2l its
 * MLP. Masks are a pure function of (seed, site, global token row, column),
 * so a batch split over ranks drops what the whole batch would. */
static int drop(struct mgpu_model *m, float *Y, const float *X, int N, int site)
{
	struct mgpu_gpt *g = m->fam;
	size_t n = (size_t)N * (size_t)g->D;

	return m->dev->ops->dropout(m->dev, Y, X, n, m->spec.dropout,
				    mgpu_hash64(m->dropout_seed, 1000 + (uint64_t)site),
				    m->row0 * (uint64_t)g->T * (uint64_t)g->D);
}

/* Y (N,out) = X (N,in) W^T + b. */
static int linear(struct mgpu_model *m, float *Y, const float *X, const struct mgpu_param *w,
		  const struct mgpu_param *b, int N)
{
	const struct mgpu_ops *o = m->dev->ops;
	int out = w->shape[0], in = w->shape[1];

	MGPU_TRY(mgpu_mm(m, MGPU_T, MGPU_N, out, N, in, 1.0f, m->w + w->off, in, X, in,
			 0.0f, Y, out));
	return o->bias_act(m->dev, MGPU_ACT_NONE, Y, Y, m->w + b->off, N, out);
}

/* 1 / sqrt(Dh): the scores' scale. */
static float attn_scale(const struct mgpu_gpt *g)
{
	return 1.0f / sqrtf((float)g->Dh);
}

/* Attention rounds its operands under bf16; fp16's products keep fp32
 * attention (there is no fp16 attention op). */
static enum mgpu_prec attn_prec(const struct mgpu_model *m)
{
	return m->prec == MGPU_PREC_BF16 ? MGPU_PREC_BF16 : MGPU_PREC_FP32;
}

/* k->y (N,D) = causal multi-head attention of qkv (N,3D), which backward
 * does not need (it keeps the heads' copies): scratch, as yh is. */
static int attention(struct mgpu_model *m, struct gpt_block *k, const float *qkv, int B,
		     float *yh)
{
	const struct mgpu_ops *o = m->dev->ops;
	struct mgpu_gpt *g = m->fam;
	int T = g->T, Dh = g->Dh, D3 = 3 * g->D;

	MGPU_TRY(o->heads_split(m->dev, k->q, qkv, D3, B, T, g->H, Dh));
	MGPU_TRY(o->heads_split(m->dev, k->k, qkv + g->D, D3, B, T, g->H, Dh));
	MGPU_TRY(o->heads_split(m->dev, k->v, qkv + 2 * g->D, D3, B, T, g->H, Dh));
	MGPU_TRY(o->attn_fwd(m->dev, yh, k->lse, k->q, k->k, k->v, B * g->H, T, Dh,
			     attn_scale(g), attn_prec(m)));
	return o->heads_merge(m->dev, k->y, g->D, yh, B, T, g->H, Dh);
}

/* One block: x (N,D) -> k->out. */
static int block_forward(struct mgpu_model *m, int l, const float *x, int B, int train)
{
	const struct mgpu_ops *o = m->dev->ops;
	struct mgpu_gpt *g = m->fam;
	struct gpt_block *k = &g->blk[l];
	const float *w = m->w;
	int N = B * g->T, D = g->D, dropping = train && m->spec.dropout > 0.0f;
	size_t n = (size_t)N * (size_t)D;

	MGPU_TRY(o->ln_fwd(m->dev, k->a1, k->mean1, k->rstd1, x, w + k->ln1g->off,
			   w + k->ln1b->off, N, D, LN_EPS));
	MGPU_TRY(linear(m, g->qkv, k->a1, k->wqkv, k->bqkv, N));
	MGPU_TRY(attention(m, k, g->qkv, B, g->dx));
	MGPU_TRY(linear(m, g->dt, k->y, k->wproj, k->bproj, N));
	if (dropping)
		MGPU_TRY(drop(m, g->dt, g->dt, N, 1 + 2 * l));
	MGPU_TRY(o->add(m->dev, k->mid, x, g->dt, n));
	MGPU_TRY(o->ln_fwd(m->dev, k->a2, k->mean2, k->rstd2, k->mid, w + k->ln2g->off,
			   w + k->ln2b->off, N, D, LN_EPS));
	MGPU_TRY(mgpu_mm(m, MGPU_T, MGPU_N, 4 * D, N, D, 1.0f, w + k->wfc->off, D, k->a2,
			 D, 0.0f, k->fc, 4 * D));
	MGPU_TRY(o->bias_act(m->dev, MGPU_ACT_GELU, k->h, k->fc, w + k->bfc->off, N, 4 * D));
	MGPU_TRY(linear(m, g->dt, k->h, k->wmp, k->bmp, N));
	if (dropping)
		MGPU_TRY(drop(m, g->dt, g->dt, N, 2 + 2 * l));
	return o->add(m->dev, k->out, k->mid, g->dt, n);
}

static int forward(struct mgpu_model *m, int B, int train)
{
	const struct mgpu_ops *o = m->dev->ops;
	struct mgpu_gpt *g = m->fam;
	const float *x = g->emb, *w = m->w;
	int l, N = B * g->T, D = g->D;

	MGPU_TRY(o->emb_fwd(m->dev, g->emb, g->ids, w + g->wte->off, w + g->wpe->off, B, g->T,
			    g->V, D));
	if (train && m->spec.dropout > 0.0f)
		MGPU_TRY(drop(m, g->emb, g->emb, N, 0));
	for (l = 0; l < g->L; l++) {
		MGPU_TRY(block_forward(m, l, x, B, train));
		x = g->blk[l].out;
	}
	MGPU_TRY(o->ln_fwd(m->dev, g->xf, g->meanf, g->rstdf, x, w + g->lnfg->off,
			   w + g->lnfb->off, N, D, LN_EPS));
	/* the tied head: logits = xf wte^T */
	return mgpu_mm(m, MGPU_T, MGPU_N, g->V, N, D, 1.0f, w + g->wte->off, D, g->xf, D,
		       0.0f, g->logits, g->ldl);
}

/* Per sample: the mean over its T positions (the sums times 1/T). */
static int loss_acc(struct mgpu_model *m, int B, int want_grad, float grad_scale,
		    double *acc)
{
	struct mgpu_gpt *g = m->fam;
	const struct mgpu_ops *o = m->dev->ops;
	size_t N = (size_t)B * (size_t)g->T;

	MGPU_TRY(o->xent(m->dev, want_grad ? m->dlogits : NULL, m->row_loss, m->row_correct,
			 g->logits, m->labels, (int)N, g->V, g->ldl,
			 grad_scale / (float)g->T));
	MGPU_TRY(o->sum_acc(m->dev, acc, m->row_loss, N, 0, 1.0 / g->T));
	return o->sum_acc(m->dev, acc + 1, m->row_correct, N, 0, 1.0 / g->T);
}

/* ---- backward ----------------------------------------------------------- */

/* Gradients of Y = X W^T + b from dY: dW, db (acc), and dX when wanted. */
static int linear_bwd(struct mgpu_model *m, float *dX, const float *dY, const float *X,
		      const struct mgpu_param *w, const struct mgpu_param *b, int N, float acc)
{
	const struct mgpu_ops *o = m->dev->ops;
	int out = w->shape[0], in = w->shape[1];

	MGPU_TRY(o->col_sum(m->dev, m->g + b->off, dY, N, out, acc));
	MGPU_TRY(mgpu_mm(m, MGPU_N, MGPU_T, in, out, N, 1.0f, X, in, dY, out, acc,
			 m->g + w->off, in));
	mgpu_mm_reuse(m); /* dY again, in the same operand slot */
	return mgpu_mm(m, MGPU_N, MGPU_N, in, N, out, 1.0f, m->w + w->off, in, dY, out,
		       0.0f, dX, in);
}

/* The branch gradient: dres through the site's dropout (or dres itself). */
static const float *branch_grad(struct mgpu_model *m, int N, int site, int *rc)
{
	struct mgpu_gpt *g = m->fam;

	*rc = 0;
	if (m->spec.dropout <= 0.0f)
		return g->dres;
	*rc = drop(m, g->dt, g->dres, N, site);
	return g->dt;
}

/* g->dqkv (N,3D) from dy (N,D) of the merged heads; yh (N,D) is
 * scratch for the heads' output, split again out of k->y for attn_bwd's
 * D = dy . y (cheaper than a copy per block kept from the forward). */
static int attention_bwd(struct mgpu_model *m, struct gpt_block *k, int B, const float *dy,
			 float *yh)
{
	const struct mgpu_ops *o = m->dev->ops;
	struct mgpu_gpt *g = m->fam;
	int T = g->T, Dh = g->Dh, H = g->H, D = g->D;
	float *dyh = g->dx, *dqkv = g->dqkv;

	MGPU_TRY(o->heads_split(m->dev, dyh, dy, D, B, T, H, Dh));
	MGPU_TRY(o->heads_split(m->dev, yh, k->y, D, B, T, H, Dh));
	MGPU_TRY(o->attn_bwd(m->dev, g->dq, g->dk, g->dv, k->q, k->k, k->v, yh, dyh, k->lse,
			     B * H, T, Dh, attn_scale(g), attn_prec(m)));
	MGPU_TRY(o->heads_merge(m->dev, dqkv, 3 * D, g->dq, B, T, H, Dh));
	MGPU_TRY(o->heads_merge(m->dev, dqkv + D, 3 * D, g->dk, B, T, H, Dh));
	return o->heads_merge(m->dev, dqkv + 2 * D, 3 * D, g->dv, B, T, H, Dh);
}

/* g->dres holds dL/d(out of block l); leaves dL/d(input of block l). */
static int block_backward(struct mgpu_model *m, int l, const float *x, int B, float acc)
{
	const struct mgpu_ops *o = m->dev->ops;
	struct mgpu_gpt *g = m->fam;
	struct gpt_block *k = &g->blk[l];
	int N = B * g->T, D = g->D, rc;
	size_t n = (size_t)N * (size_t)D;
	const float *dt;

	/* MLP branch: out = mid + drop(h Wmp^T + bmp), h = gelu(fc) */
	dt = branch_grad(m, N, 2 + 2 * l, &rc);
	MGPU_TRY(rc);
	MGPU_TRY(linear_bwd(m, g->dh, dt, k->h, k->wmp, k->bmp, N, acc));
	MGPU_TRY(o->act_bwd(m->dev, MGPU_ACT_GELU, g->dh, g->dh, k->fc, n * 4));
	MGPU_TRY(linear_bwd(m, g->da, g->dh, k->a2, k->wfc, k->bfc, N, acc));
	MGPU_TRY(o->ln_bwd(m->dev, g->dx, m->g + k->ln2g->off, m->g + k->ln2b->off, g->da,
			   k->mid, k->mean2, k->rstd2, m->w + k->ln2g->off, N, D, acc));
	MGPU_TRY(o->add(m->dev, g->dres, g->dres, g->dx, n));
	/* attention branch: mid = x + drop(y Wproj^T + bproj) */
	dt = branch_grad(m, N, 1 + 2 * l, &rc);
	MGPU_TRY(rc);
	MGPU_TRY(linear_bwd(m, g->da, dt, k->y, k->wproj, k->bproj, N, acc));
	/* g->dt (the branch's dropout gradient) is free again: yh */
	MGPU_TRY(attention_bwd(m, k, B, g->da, g->dt));
	MGPU_TRY(linear_bwd(m, g->da, g->dqkv, k->a1, k->wqkv, k->bqkv, N, acc));
	MGPU_TRY(o->ln_bwd(m->dev, g->dx, m->g + k->ln1g->off, m->g + k->ln1b->off, g->da, x,
			   k->mean1, k->rstd1, m->w + k->ln1g->off, N, D, acc));
	return o->add(m->dev, g->dres, g->dres, g->dx, n);
}

static int ready(struct mgpu_model *m, int b)
{
	const struct mgpu_bucket *k = &m->buckets[b];

	return m->grad_ready ? m->grad_ready(m->grad_ctx, b, k->off, k->count) : 0;
}

/* The tied head and the final LayerNorm: dlogits -> g->dres. */
static int head_backward(struct mgpu_model *m, int N, const float *x, float acc)
{
	const struct mgpu_ops *o = m->dev->ops;
	struct mgpu_gpt *g = m->fam;
	int D = g->D, V = g->V, ldl = g->ldl;

	MGPU_TRY(mgpu_mm(m, MGPU_N, MGPU_N, D, N, V, 1.0f, m->w + g->wte->off, D,
			 m->dlogits, ldl, 0.0f, g->da, D));
	mgpu_mm_reuse(m); /* the (N,V) dlogits again, in the same operand slot */
	MGPU_TRY(mgpu_mm(m, MGPU_N, MGPU_T, D, V, N, 1.0f, g->xf, D, m->dlogits, ldl, acc,
			 m->g + g->wte->off, D));
	return o->ln_bwd(m->dev, g->dres, m->g + g->lnfg->off, m->g + g->lnfb->off, g->da, x,
			 g->meanf, g->rstdf, m->w + g->lnfg->off, N, D, acc);
}

/* (B, T, V): T predictions of V a sample. */
static const float *logits(const struct mgpu_model *m, size_t *per_row, size_t *width,
			   size_t *ld)
{
	const struct mgpu_gpt *g = m->fam;

	*width = (size_t)g->V;
	*ld = (size_t)g->ldl;
	*per_row = (size_t)g->T * *width;
	return g->logits;
}

static int backward(struct mgpu_model *m, int B, int accumulate)
{
	const struct mgpu_ops *o = m->dev->ops;
	struct mgpu_gpt *g = m->fam;
	float acc = accumulate ? 1.0f : 0.0f;
	int l, N = B * g->T, rc;
	const float *dt;

	MGPU_TRY(head_backward(m, N, g->L ? g->blk[g->L - 1].out : g->emb, acc));
	MGPU_TRY(ready(m, g->L + 1));
	for (l = g->L - 1; l >= 0; l--) {
		MGPU_TRY(block_backward(m, l, l ? g->blk[l - 1].out : g->emb, B, acc));
		MGPU_TRY(ready(m, l + 1));
	}
	dt = branch_grad(m, N, 0, &rc);
	MGPU_TRY(rc);
	/* wte already holds the head's part: the embedding adds to it */
	if (!accumulate)
		MGPU_TRY(o->zero(m->dev, m->g + g->wpe->off, g->wpe->count * sizeof(float)));
	MGPU_TRY(o->emb_bwd(m->dev, m->g + g->wte->off, m->g + g->wpe->off, dt, g->ids, B, g->T,
			    g->V, g->D, 1.0f));
	return ready(m, 0);
}

/* ---- generation ----------------------------------------------------------- */

/* The byte to emit from one row of logits: the first largest at
 * temperature 0, else a draw from softmax(logits / temperature). */
static int pick(const float *logits, int V, double temperature, struct mgpu_rng *r)
{
	double mx = logits[0], sum = 0.0, u;
	int i, best = 0;

	for (i = 1; i < V; i++)
		if (logits[i] > mx) {
			mx = logits[i];
			best = i;
		}
	if (temperature <= 0.0)
		return best;
	for (i = 0; i < V; i++)
		sum += exp((logits[i] - mx) / temperature);
	u = (double)mgpu_rng_float(r) * sum;
	for (i = 0; i < V; i++) {
		u -= exp((logits[i] - mx) / temperature);
		if (u < 0.0)
			return i;
	}
	return best; /* rounding left u at 0: the most likely byte */
}

/* Logits (V floats, host) after the last of ctx[0..len), 1 <= len <= T:
 * one sequence of T+1 ids, the tail past len padded with zeros, which
 * the causal mask hides from position len - 1. */
static int next_logits(struct mgpu_model *m, int32_t *row, const int32_t *ctx, size_t len,
		       float *logits)
{
	struct mgpu_gpt *g = m->fam;

	memset(row, 0, ((size_t)g->T + 1) * sizeof *row);
	memcpy(row, ctx, len * sizeof *row);
	MGPU_TRY(mgpu_model_load_tokens(m, row, 4, 1));
	MGPU_TRY(forward(m, 1, 0));
	return mgpu_dev_to_host(m->dev, logits, g->logits + (len - 1) * (size_t)g->ldl,
				(size_t)g->V * sizeof(float));
}

static int generate(struct mgpu_model *m, const int32_t *prompt, size_t plen, size_t n,
		    double temperature, uint64_t seed, int32_t *out)
{
	struct mgpu_gpt *g = m->fam;
	size_t i, have, T = (size_t)g->T;
	int32_t *text = NULL, *row = NULL;
	float *logits = NULL;
	struct mgpu_rng r;
	int rc = 0;

	if (!plen)
		return mgpu_err(MGPU_EINVAL, "gpt: generation needs a prompt of one token at least");
	for (i = 0; i < plen; i++)
		if (prompt[i] < 0 || prompt[i] >= g->V)
			return mgpu_err(MGPU_ERANGE, "prompt: token %d at position %zu is not below "
					"vocab %d", (int)prompt[i], i, g->V);
	text = malloc((plen + n) * sizeof *text);
	row = malloc((T + 1) * sizeof *row);
	logits = malloc((size_t)g->V * sizeof(float));
	if (!text || !row || !logits) {
		rc = mgpu_err(MGPU_ENOMEM, "gpt: out of host memory for generation");
		goto out;
	}
	memcpy(text, prompt, plen * sizeof *text);
	/* a bf16 model's products read m->w16, which only a model forward
	 * rounds: weights set or loaded since then would go unseen */
	MGPU_CHECK(mgpu_mm_round_weights(m));
	mgpu_rng_seed(&r, seed, GEN_STREAM);
	for (have = plen; have < plen + n; have++) {
		size_t len = have < T ? have : T;

		/* a long sample is a long loop: SIGINT and SIGTERM end it */
		MGPU_CHECK(mgpu_cancel_check());
		MGPU_CHECK(next_logits(m, row, text + have - len, len, logits));
		/* the head has V columns: a padding row is never emitted */
		text[have] = pick(logits, g->V, temperature, &r);
	}
	memcpy(out, text + plen, n * sizeof *out);
out:
	free(text);
	free(row);
	free(logits);
	return rc;
}

const struct mgpu_arch mgpu_arch_gpt = {
	.name = "gpt",
	.flags = MGPU_ARCH_TOKENS,
	.parse = parse,
	.format = format,
	.fit = fit,
	.classes = classes,
	.count = count,
	.create = create,
	.labels_nbytes = labels_nbytes,
	.rows_nbytes = rows_nbytes,
	.init = init,
	.load = load,
	.forward = forward,
	.loss_acc = loss_acc,
	.backward = backward,
	.logits = logits,
	.generate = generate,
	.check_row = check_row,
};
