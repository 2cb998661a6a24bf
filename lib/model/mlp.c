/*
 * mlp.c - the "mlp:" family (model/arch.h): its spec grammar (model/spec.h),
 * layout, forward and backward through the ops interface.
 *
 * Row-major activations meet column-major sgemm through the identity in
 * ops.h: a row-major (R, K) matrix is a column-major (K, R) one, lda = K.
 * With W (out, in) row-major, X (B, in), Y (B, out):
 *   Y = X W^T      -> sgemm(T, N, out, B, in, 1, W, in, X, in, 0, Y, out)
 *   dX = dY W      -> sgemm(N, N, in, B, out, 1, W, in, dY, out, 0, dX, in)
 *   dW = dY^T X    -> sgemm(N, T, in, out, B, 1, X, in, dY, out, acc, dW, in)
 */
#include "model/mlp.h"

#include <errno.h>  /* errno */
#include <math.h>   /* sqrtf */
#include <stdio.h>  /* snprintf */
#include <stdlib.h> /* calloc, malloc, free, strtol */
#include <string.h> /* memcpy, strchr, strcmp, strcspn, strncmp */

#include "core/err.h"     /* mgpu_err, MGPU_TRY */
#include "core/hash.h"    /* mgpu_hash64 */
#include "core/rng.h"     /* struct mgpu_rng */
#include "data/samples.h" /* enum mgpu_dtype, mgpu_dtype_is_token */
#include "model/arch.h"      /* struct mgpu_arch */
#include "model/mm.h"        /* mgpu_mm: products in fp32 or bf16 */

/* ---- spec -------------------------------------------------------------- */

static const char *const act_names[] = { "none", "relu", "gelu", "tanh", NULL };

static const char *act_name(int act)
{
	return act >= 0 && act <= MGPU_ACT_TANH ? act_names[act] : "?";
}

static int parse_dims(struct mgpu_spec *s, const char *p, const char *end,
		      const char *origin)
{
	char *e;
	long v;

	s->nlayers = -1;
	while (p < end) {
		errno = 0;
		if (end - p >= 4 && strncmp(p, "auto", 4) == 0 && (end - p == 4 || p[4] == '-')) {
			if (s->nlayers + 1 > MGPU_MAX_LAYERS)
				return mgpu_err(MGPU_EINVAL, "%s: more than %d layers", origin,
						MGPU_MAX_LAYERS);
			s->dims[++s->nlayers] = MGPU_SPEC_AUTO;
			p += end - p == 4 ? 4 : 5;
			continue;
		}
		if (*p < '0' || *p > '9')
			return mgpu_err(MGPU_EINVAL, "%s: bad layer size at '%.*s'", origin,
					(int)(end - p), p);
		v = strtol(p, &e, 10);
		if (errno || v < 1 || v > 1 << 20 || e > end || (e < end && *e != '-'))
			return mgpu_err(MGPU_EINVAL, "%s: bad layer size at '%.*s'", origin,
					(int)(end - p), p);
		if (s->nlayers + 1 > MGPU_MAX_LAYERS)
			return mgpu_err(MGPU_EINVAL, "%s: more than %d layers", origin,
					MGPU_MAX_LAYERS);
		s->dims[++s->nlayers] = (int)v;
		p = e < end ? e + 1 : e;
	}
	if (s->nlayers < 1)
		return mgpu_err(MGPU_EINVAL, "%s: an mlp needs at least two sizes (in-out)",
				origin);
	for (int l = 1; l < s->nlayers; l++)
		if (s->dims[l] == MGPU_SPEC_AUTO)
			return mgpu_err(MGPU_EINVAL, "%s: a hidden size cannot be auto (only the "
					"input width and the class count come from the data)", origin);
	return 0;
}

static int parse_option(struct mgpu_spec *s, const char *opt, size_t len,
			const char *origin)
{
	char buf[64];
	const char *val;
	int i;

	if (len >= sizeof buf)
		return mgpu_err(MGPU_EINVAL, "%s: option '%.*s' too long", origin, (int)len, opt);
	memcpy(buf, opt, len);
	buf[len] = '\0';
	val = strchr(buf, '=');
	if (strcmp(buf, "layernorm") == 0) {
		s->layernorm = 1;
		return 0;
	}
	if (!val)
		return mgpu_err(MGPU_EINVAL, "%s: unknown option '%s'", origin, buf);
	val++;
	if (strncmp(buf, "act=", 4) == 0) {
		for (i = 1; act_names[i]; i++)
			if (strcmp(val, act_names[i]) == 0) {
				s->act = i;
				return 0;
			}
		return mgpu_err(MGPU_EINVAL, "%s: act '%s' is not relu|gelu|tanh", origin, val);
	}
	if (strncmp(buf, "dropout=", 8) == 0) {
		return mgpu_spec_dropout(s, val, origin);
	}
	if (strncmp(buf, "layernorm=", 10) == 0) {
		if (strcmp(val, "0") != 0 && strcmp(val, "1") != 0)
			return mgpu_err(MGPU_EINVAL, "%s: layernorm '%s' is not 0 or 1", origin, val);
		s->layernorm = val[0] == '1';
		return 0;
	}
	return mgpu_err(MGPU_EINVAL, "%s: unknown option '%s'", origin, buf);
}

static int parse(struct mgpu_spec *s, const char *body, const char *text, const char *origin)
{
	const char *p = body, *end = p + strcspn(p, ",");

	s->act = MGPU_ACT_RELU;
	MGPU_TRY(parse_dims(s, p, end, origin));
	if (*end == ',')
		MGPU_TRY(mgpu_spec_no_repeats(end + 1, origin));
	while (*end == ',') {
		p = end + 1;
		end = p + strcspn(p, ",");
		if (end == p)
			return mgpu_err(MGPU_EINVAL, "%s: empty option in '%s'", origin, text);
		MGPU_TRY(parse_option(s, p, (size_t)(end - p), origin));
	}
	return 0;
}

static int format(const struct mgpu_spec *s, char *buf, size_t len)
{
	char p[32];
	size_t o = (size_t)snprintf(buf, len, "mlp:");
	int i;

	for (i = 0; i <= s->nlayers && o < len; i++)
		o += s->dims[i] == MGPU_SPEC_AUTO ?
			     (size_t)snprintf(buf + o, len - o, "%sauto", i ? "-" : "") :
			     (size_t)snprintf(buf + o, len - o, "%s%d", i ? "-" : "", s->dims[i]);
	if (o < len)
		o += (size_t)snprintf(buf + o, len - o, ",act=%s", act_name(s->act));
	if (s->dropout > 0.0f && o < len)
		o += (size_t)snprintf(buf + o, len - o, ",dropout=%s",
				      mgpu_spec_dropout_str(s, p));
	if (s->layernorm && o < len)
		o += (size_t)snprintf(buf + o, len - o, ",layernorm");
	if (o >= len)
		return mgpu_err(MGPU_EINVAL, "model spec too long to print");
	return 0;
}

static int has_auto(const struct mgpu_spec *s)
{
	return s->nlayers >= 1 &&
	       (s->dims[0] == MGPU_SPEC_AUTO || s->dims[s->nlayers] == MGPU_SPEC_AUTO);
}

static void take_auto(struct mgpu_spec *s, const struct mgpu_spec *ck)
{
	if (ck->nlayers != s->nlayers)
		return;
	if (s->dims[0] == MGPU_SPEC_AUTO)
		s->dims[0] = ck->dims[0];
	if (s->dims[s->nlayers] == MGPU_SPEC_AUTO)
		s->dims[s->nlayers] = ck->dims[s->nlayers];
}

static int classes(const struct mgpu_spec *s)
{
	return s->dims[s->nlayers];
}

static int fit(struct mgpu_spec *s, const struct mgpu_data_desc *dd, const char *path)
{
	struct mgpu_spec want = *s;
	int n = s->nlayers, *C = &want.dims[n], d = dd->d, ncls = dd->classes;
	char fitted[512];

	if (mgpu_dtype_is_token(dd->dtype))
		return mgpu_err(MGPU_EINVAL, "'%s': token ids (%s) need a gpt model, not an mlp",
				path, mgpu_dtype_name(dd->dtype));
	if (want.dims[0] == MGPU_SPEC_AUTO)
		want.dims[0] = d;
	if (*C == MGPU_SPEC_AUTO)
		*C = mgpu_spec_auto_classes(dd);
	/* a target's outputs are checked against it once the data knows them */
	if (want.dims[0] == d && (*C >= ncls || dd->target)) {
		*s = want;
		return 0;
	}
	want.dims[0] = d;
	if (*C < ncls)
		*C = ncls;
	if (format(&want, fitted, sizeof fitted) < 0)
		fitted[0] = '\0';
	if (s->dims[0] != MGPU_SPEC_AUTO && s->dims[0] != d)
		return mgpu_err(MGPU_EINVAL, "'%s': samples have %d features but the model takes "
				"%d: write --model %s (auto takes a size from the data)", path, d,
				s->dims[0], fitted);
	return mgpu_err(MGPU_ERANGE, "'%s': labels go up to %d but the model has %d classes: "
			"write --model %s (auto takes a size from the data)", path, ncls - 1,
			s->dims[n], fitted);
}

static void out_shape(const struct mgpu_spec *s, int shape[3])
{
	shape[0] = s->dims[s->nlayers];
	shape[1] = shape[2] = 1;
}

static size_t count(const struct mgpu_spec *spec)
{
	size_t n = 0;
	int l;

	for (l = 0; l < spec->nlayers; l++) {
		n += (size_t)spec->dims[l + 1] * (size_t)(spec->dims[l] + 1);
		if (spec->layernorm && l + 1 < spec->nlayers)
			n += 2 * (size_t)spec->dims[l + 1];
	}
	return n;
}

/* ---- layout and memory ---------------------------------------------------- */

struct mgpu_mlp *mgpu_mlp_of(struct mgpu_model *m)
{
	return m->arch == &mgpu_arch_mlp ? m->fam : NULL;
}

static struct mgpu_param *add_param(struct mgpu_model *m, int layer, const char *what,
				    int rows, int cols, int decay)
{
	char name[48];

	snprintf(name, sizeof name, "layers.%d.%s", layer, what);
	return mgpu_model_add_param(m, name, rows, cols, decay);
}

static void layout(struct mgpu_model *m, struct mgpu_mlp *x)
{
	struct mgpu_layer *L;
	int l;

	for (l = 0; l < m->spec.nlayers; l++) {
		L = &x->layers[l];
		L->in = m->spec.dims[l];
		L->out = m->spec.dims[l + 1];
		L->hidden = l + 1 < m->spec.nlayers;
		L->w = add_param(m, l, "weight", L->out, L->in, 1);
		L->b = add_param(m, l, "bias", L->out, 0, 0);
		if (L->hidden && m->spec.layernorm) {
			L->gamma = add_param(m, l, "norm.weight", L->out, 0, 0);
			L->beta = add_param(m, l, "norm.bias", L->out, 0, 0);
		}
		mgpu_model_add_bucket(m, L->w, L->beta ? L->beta : L->b);
	}
}

static int alloc_layer(struct mgpu_model *m, struct mgpu_layer *L)
{
	size_t rows = (size_t)m->max_batch, act = rows * (size_t)L->out * sizeof(float);

	MGPU_TRY(mgpu_model_alloc(m, &L->lin, act));
	if (!L->hidden)
		return 0;
	if (L->gamma) {
		MGPU_TRY(mgpu_model_alloc(m, &L->norm, act));
		MGPU_TRY(mgpu_model_alloc(m, &L->mean, rows * sizeof(float)));
		MGPU_TRY(mgpu_model_alloc(m, &L->rstd, rows * sizeof(float)));
	}
	return mgpu_model_alloc(m, &L->y, act);
}

static int widest_hidden(const struct mgpu_model *m)
{
	int l, w = 1;

	for (l = 1; l < m->spec.nlayers; l++)
		if (m->spec.dims[l] > w)
			w = m->spec.dims[l];
	return w;
}

static int alloc_all(struct mgpu_model *m, struct mgpu_mlp *x)
{
	size_t B = (size_t)m->max_batch, D0 = (size_t)m->spec.dims[0];
	size_t C = (size_t)m->spec.dims[m->spec.nlayers], wide = (size_t)widest_hidden(m);
	int l;

	MGPU_TRY(mgpu_model_alloc_params(m));
	MGPU_TRY(mgpu_model_alloc(m, &x->x_u8, B * D0));
	MGPU_TRY(mgpu_model_alloc(m, &x->x, B * D0 * sizeof(float)));
	MGPU_TRY(mgpu_model_alloc(m, &m->labels, B * sizeof(int32_t)));
	MGPU_TRY(mgpu_model_alloc(m, &m->dlogits, B * C * sizeof(float)));
	MGPU_TRY(mgpu_model_alloc(m, &m->row_loss, B * sizeof(float)));
	MGPU_TRY(mgpu_model_alloc(m, &m->row_correct, B * sizeof(float)));
	MGPU_TRY(mgpu_model_alloc(m, &x->dbuf[0], B * wide * sizeof(float)));
	MGPU_TRY(mgpu_model_alloc(m, &x->dbuf[1], B * wide * sizeof(float)));
	MGPU_TRY(mgpu_model_alloc(m, &x->zeros, wide * sizeof(float)));
	MGPU_TRY(m->dev->ops->zero(m->dev, x->zeros, wide * sizeof(float)));
	for (l = 0; l < m->spec.nlayers; l++)
		MGPU_TRY(alloc_layer(m, &x->layers[l]));
	return 0;
}

static int create(struct mgpu_model *m)
{
	struct mgpu_mlp *x = calloc(1, sizeof *x);

	if (!x)
		return mgpu_err(MGPU_ENOMEM, "model: out of host memory");
	m->fam = x;
	layout(m, x);
	return alloc_all(m, x);
}

/* Upload buffers: B labels (the model's default), then B rows of float32 at
 * most. */
static size_t rows_nbytes(const struct mgpu_spec *s, int max_batch)
{
	return (size_t)max_batch * (size_t)s->dims[0] * sizeof(float);
}

/* ---- init and data ---------------------------------------------------------- */

/* torch.nn.Linear's default init, U(-1/sqrt(in), 1/sqrt(in)), seeded. */
static int init(struct mgpu_model *m, uint64_t seed)
{
	struct mgpu_mlp *x = m->fam;
	struct mgpu_rng r;
	float *h, bound;
	int l, rc;

	h = malloc(m->nparams * sizeof(float));
	if (!h)
		return mgpu_err(MGPU_ENOMEM, "model: out of host memory");
	mgpu_rng_seed(&r, seed, 1);
	for (l = 0; l < m->spec.nlayers; l++) {
		struct mgpu_layer *L = &x->layers[l];
		bound = 1.0f / sqrtf((float)L->in);
		mgpu_model_fill_uniform(&r, h + L->w->off, L->w->count, bound);
		mgpu_model_fill_uniform(&r, h + L->b->off, L->b->count, bound);
		if (L->gamma) {
			mgpu_model_fill(h + L->gamma->off, L->gamma->count, 1.0f);
			mgpu_model_fill(h + L->beta->off, L->beta->count, 0.0f);
		}
	}
	rc = mgpu_model_set(m, h);
	free(h);
	return rc;
}

/* uint8 rows are cast and normalised on the device; float32 rows (the
 * source normalised them) go straight to the decoded input. */
static int load(struct mgpu_model *m, const struct mgpu_batch_in *in)
{
	struct mgpu_mlp *x = m->fam;
	size_t n = (size_t)in->B * (size_t)m->spec.dims[0];

	if (in->dtype == MGPU_DTYPE_F32)
		return mgpu_model_stage(m, x->x, in->rows, n * sizeof(float), in->labels, in->B);
	if (in->dtype != MGPU_DTYPE_U8)
		return mgpu_err(MGPU_EINVAL, "model: an mlp reads uint8 or float32 features, not "
				"%s", mgpu_dtype_name(in->dtype));
	MGPU_TRY(mgpu_model_stage(m, x->x_u8, in->rows, n, in->labels, in->B));
	return m->dev->ops->u8_to_f32(m->dev, x->x, x->x_u8, n, in->scale, in->shift);
}

/* ---- forward -------------------------------------------------------------- */

/* The dropout stream of layer l: its own seed, offsets from the global row. */
static uint64_t drop_seed(const struct mgpu_model *m, int l)
{
	return mgpu_hash64(m->dropout_seed, (uint64_t)l);
}

/* (B, in) -> (B, out): linear, [layernorm], activation, [dropout]. */
static int layer_forward(struct mgpu_model *m, int l, const float *X, int B, int train)
{
	const struct mgpu_ops *o = m->dev->ops;
	struct mgpu_mlp *x = m->fam;
	struct mgpu_layer *L = &x->layers[l];
	const float *w = m->w;
	size_t n = (size_t)B * (size_t)L->out;

	MGPU_TRY(mgpu_mm(m, MGPU_T, MGPU_N, L->out, B, L->in, 1.0f, w + L->w->off,
			 L->in, X, L->in, 0.0f, L->lin, L->out));
	if (!L->hidden)
		return o->bias_act(m->dev, MGPU_ACT_NONE, L->lin, L->lin, w + L->b->off, B,
				   L->out);
	if (L->gamma) {
		MGPU_TRY(o->bias_act(m->dev, MGPU_ACT_NONE, L->lin, L->lin, w + L->b->off, B,
				     L->out));
		MGPU_TRY(o->ln_fwd(m->dev, L->norm, L->mean, L->rstd, L->lin,
				   w + L->gamma->off, w + L->beta->off, B, L->out, 1e-5f));
		MGPU_TRY(o->bias_act(m->dev, m->spec.act, L->y, L->norm, x->zeros, B, L->out));
	} else {
		MGPU_TRY(o->bias_act(m->dev, m->spec.act, L->y, L->lin, w + L->b->off, B,
				     L->out));
	}
	if (train && m->spec.dropout > 0.0f)
		MGPU_TRY(o->dropout(m->dev, L->y, L->y, n, m->spec.dropout, drop_seed(m, l),
				    m->row0 * (uint64_t)L->out));
	return 0;
}

static int forward(struct mgpu_model *m, int B, int train)
{
	struct mgpu_mlp *x = m->fam;
	const float *X = x->x;
	int l;

	for (l = 0; l < m->spec.nlayers; l++) {
		MGPU_TRY(layer_forward(m, l, X, B, train));
		X = x->layers[l].hidden ? x->layers[l].y : x->layers[l].lin;
	}
	return 0;
}

static int loss_acc(struct mgpu_model *m, int B, int want_grad, float grad_scale,
		    double *acc)
{
	struct mgpu_mlp *x = m->fam;
	const struct mgpu_layer *top = &x->layers[m->spec.nlayers - 1];
	const struct mgpu_ops *o = m->dev->ops;

	if (m->tgt.kind) /* a target's loss (model/target_loss.h) over the outputs */
		return mgpu_target_loss_acc(&m->tgt, m->dev, top->lin,
					    want_grad ? m->dlogits : NULL, B, grad_scale, acc);
	MGPU_TRY(o->xent(m->dev, want_grad ? m->dlogits : NULL, m->row_loss, m->row_correct,
			 top->lin, m->labels, B, top->out, top->out, grad_scale));
	MGPU_TRY(o->sum_acc(m->dev, acc, m->row_loss, (size_t)B, 0, 1.0));
	return o->sum_acc(m->dev, acc + 1, m->row_correct, (size_t)B, 0, 1.0);
}

static const float *logits(const struct mgpu_model *m, size_t *per_row, size_t *width,
			   size_t *ld)
{
	const struct mgpu_mlp *x = m->fam;
	const struct mgpu_layer *top = &x->layers[m->spec.nlayers - 1];

	*per_row = *width = *ld = (size_t)top->out;
	return top->lin;
}

/* ---- backward ------------------------------------------------------------- */

/* dY of a hidden layer -> gradient at its linear output, in place. */
static int hidden_backward(struct mgpu_model *m, int l, float *dY, float *tmp, int B,
			   float acc, float **dlin)
{
	const struct mgpu_ops *o = m->dev->ops;
	struct mgpu_mlp *x = m->fam;
	struct mgpu_layer *L = &x->layers[l];
	size_t n = (size_t)B * (size_t)L->out;

	if (m->spec.dropout > 0.0f)
		MGPU_TRY(o->dropout(m->dev, dY, dY, n, m->spec.dropout, drop_seed(m, l),
				    m->row0 * (uint64_t)L->out));
	MGPU_TRY(o->act_bwd(m->dev, m->spec.act, dY, dY, L->gamma ? L->norm : L->lin, n));
	*dlin = dY;
	if (!L->gamma)
		return 0;
	MGPU_TRY(o->ln_bwd(m->dev, tmp, m->g + L->gamma->off, m->g + L->beta->off, dY,
			   L->lin, L->mean, L->rstd, m->w + L->gamma->off, B, L->out, acc));
	*dlin = tmp;
	return 0;
}

/* The ping-pong buffer that is not p (p may be dlogits, outside both). */
static float *other_buf(struct mgpu_mlp *x, const float *p)
{
	return p == x->dbuf[0] ? x->dbuf[1] : x->dbuf[0];
}

static int backward(struct mgpu_model *m, int B, int accumulate)
{
	const struct mgpu_ops *o = m->dev->ops;
	struct mgpu_mlp *x = m->fam;
	float acc = accumulate ? 1.0f : 0.0f, *dY = m->dlogits, *dlin, *dX;
	int l;

	for (l = m->spec.nlayers - 1; l >= 0; l--) {
		struct mgpu_layer *L = &x->layers[l];
		const float *X = l ? x->layers[l - 1].y : x->x;
		const struct mgpu_bucket *bk = &m->buckets[l];

		dlin = dY;
		if (L->hidden)
			MGPU_TRY(hidden_backward(m, l, dY, other_buf(x, dY), B, acc, &dlin));
		MGPU_TRY(o->col_sum(m->dev, m->g + L->b->off, dlin, B, L->out, acc));
		MGPU_TRY(mgpu_mm(m, MGPU_N, MGPU_T, L->in, L->out, B, 1.0f, X, L->in,
				 dlin, L->out, acc, m->g + L->w->off, L->in));
		/* dY is dead once dlin exists, so dX may take its buffer. */
		dX = other_buf(x, dlin);
		if (l > 0) {
			mgpu_mm_reuse(m); /* dlin again, in the same operand slot */
			MGPU_TRY(mgpu_mm(m, MGPU_N, MGPU_N, L->in, B, L->out, 1.0f,
					 m->w + L->w->off, L->in, dlin, L->out, 0.0f, dX,
					 L->in));
		}
		if (m->grad_ready)
			MGPU_TRY(m->grad_ready(m->grad_ctx, l, bk->off, bk->count));
		dY = dX;
	}
	return 0;
}

const struct mgpu_arch mgpu_arch_mlp = {
	.name = "mlp",
	.parse = parse,
	.format = format,
	.fit = fit,
	.has_auto = has_auto,
	.take_auto = take_auto,
	.classes = classes,
	.count = count,
	.out_shape = out_shape,
	.create = create,
	.rows_nbytes = rows_nbytes,
	.init = init,
	.load = load,
	.forward = forward,
	.loss_acc = loss_acc,
	.backward = backward,
	.logits = logits,
};
