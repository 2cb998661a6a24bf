/*
 * model.c - MLP forward and backward through the ops interface (model.h);
 * a gpt: spec's model is nn/gpt.c's, a cnn: spec's nn/cnn.c's, reached
 * through the same functions.
 *
 * Row-major activations meet column-major sgemm through the identity in
 * ops.h: a row-major (R, K) matrix is a column-major (K, R) one, lda = K.
 * With W (out, in) row-major, X (B, in), Y (B, out):
 *   Y = X W^T      -> sgemm(T, N, out, B, in, 1, W, in, X, in, 0, Y, out)
 *   dX = dY W      -> sgemm(N, N, in, B, out, 1, W, in, dY, out, 0, dX, in)
 *   dW = dY^T X    -> sgemm(N, T, in, out, B, 1, X, in, dY, out, acc, dW, in)
 */
#include "nn/model.h"

#include <math.h>   /* sqrtf */
#include <stdio.h>  /* snprintf */
#include <stdlib.h> /* calloc, free */
#include <string.h> /* memcpy, memset */

#include "core/err.h" /* mgpu_err, MGPU_TRY */
#include "core/hash.h" /* mgpu_hash64 */
#include "core/rng.h" /* struct mgpu_rng */
#include "nn/cnn.h"   /* mgpu_cnn_*: the conv net behind a cnn: spec */
#include "nn/gpt.h"   /* mgpu_gpt_*: the transformer behind a gpt: spec */
#include "nn/mm.h"    /* mgpu_mm: products in fp32 or bf16 */

static struct mgpu_param *add_param(struct mgpu_model *m, int layer, const char *what,
				    int rows, int cols, int decay)
{
	struct mgpu_param *p = &m->params[m->nparam++];

	snprintf(p->name, sizeof p->name, "layers.%d.%s", layer, what);
	p->off = m->nparams;
	p->ndim = cols ? 2 : 1;
	p->shape[0] = rows;
	p->shape[1] = cols;
	p->count = (size_t)rows * (size_t)(cols ? cols : 1);
	p->decay = decay;
	m->nparams += p->count;
	return p;
}

static void layout(struct mgpu_model *m)
{
	struct mgpu_layer *L;
	int l;

	for (l = 0; l < m->spec.nlayers; l++) {
		L = &m->layers[l];
		L->in = m->spec.dims[l];
		L->out = m->spec.dims[l + 1];
		L->hidden = l + 1 < m->spec.nlayers;
		L->w = add_param(m, l, "weight", L->out, L->in, 1);
		L->b = add_param(m, l, "bias", L->out, 0, 0);
		if (L->hidden && m->spec.layernorm) {
			L->gamma = add_param(m, l, "norm.weight", L->out, 0, 0);
			L->beta = add_param(m, l, "norm.bias", L->out, 0, 0);
		}
	}
}

static int dalloc(struct mgpu_model *m, void *pp, size_t nbytes)
{
	MGPU_TRY(mgpu_dev_alloc(m->dev, (void **)pp, nbytes));
	m->dev_bytes += nbytes;
	return 0;
}

static int alloc_layer(struct mgpu_model *m, struct mgpu_layer *L)
{
	size_t rows = (size_t)m->max_batch, act = rows * (size_t)L->out * sizeof(float);

	MGPU_TRY(dalloc(m, &L->lin, act));
	if (!L->hidden)
		return 0;
	if (L->gamma) {
		MGPU_TRY(dalloc(m, &L->norm, act));
		MGPU_TRY(dalloc(m, &L->mean, rows * sizeof(float)));
		MGPU_TRY(dalloc(m, &L->rstd, rows * sizeof(float)));
	}
	return dalloc(m, &L->y, act);
}

static int widest_hidden(const struct mgpu_model *m)
{
	int l, w = 1;

	for (l = 1; l < m->spec.nlayers; l++)
		if (m->spec.dims[l] > w)
			w = m->spec.dims[l];
	return w;
}

static int alloc_all(struct mgpu_model *m)
{
	size_t B = (size_t)m->max_batch, D0 = (size_t)m->spec.dims[0];
	size_t C = (size_t)m->spec.dims[m->spec.nlayers], wide = (size_t)widest_hidden(m);
	int l;

	if (!m->ext_w)
		MGPU_TRY(dalloc(m, &m->w, m->nparams * sizeof(float)));
	if (!m->ext_g)
		MGPU_TRY(dalloc(m, &m->g, m->nparams * sizeof(float)));
	MGPU_TRY(dalloc(m, &m->x_u8, B * D0));
	MGPU_TRY(dalloc(m, &m->x, B * D0 * sizeof(float)));
	MGPU_TRY(dalloc(m, &m->labels, B * sizeof(int32_t)));
	MGPU_TRY(dalloc(m, &m->dlogits, B * C * sizeof(float)));
	MGPU_TRY(dalloc(m, &m->row_loss, B * sizeof(float)));
	MGPU_TRY(dalloc(m, &m->row_correct, B * sizeof(float)));
	MGPU_TRY(dalloc(m, &m->dbuf[0], B * wide * sizeof(float)));
	MGPU_TRY(dalloc(m, &m->dbuf[1], B * wide * sizeof(float)));
	MGPU_TRY(dalloc(m, &m->zeros, wide * sizeof(float)));
	MGPU_TRY(m->dev->ops->zero(m->dev, m->zeros, wide * sizeof(float)));
	MGPU_TRY(m->dev->ops->zero(m->dev, m->g, m->nparams * sizeof(float)));
	for (l = 0; l < m->spec.nlayers; l++)
		MGPU_TRY(alloc_layer(m, &m->layers[l]));
	return 0;
}

/* Every model, mlp or gpt: the step's statistics and mgpu_model_loss's
 * sums, one block, zero. */
static int alloc_stats(struct mgpu_model *m)
{
	size_t nbytes = (MGPU_STATS + 2) * sizeof(double);

	MGPU_TRY(dalloc(m, &m->stats, nbytes));
	m->lstats = m->stats + MGPU_STATS;
	return m->dev->ops->zero(m->dev, m->stats, nbytes);
}

/* Where a batch's labels and rows sit in an upload buffer: labels (or a
 * gpt's targets) first, rows (float32 at most, or a gpt's ids) after. */
size_t mgpu_model_rows_off(const struct mgpu_model *m)
{
	size_t n = (size_t)m->max_batch * sizeof(int32_t);

	if (m->spec.kind == MGPU_MODEL_GPT)
		n *= (size_t)m->spec.ctx;
	return (n + 63) / 64 * 64;
}

static size_t upload_nbytes(const struct mgpu_model *m)
{
	size_t row = m->spec.kind == MGPU_MODEL_GPT ? (size_t)m->spec.ctx * sizeof(int32_t) :
						     (size_t)m->spec.dims[0] * sizeof(float);

	return mgpu_model_rows_off(m) + (size_t)m->max_batch * row;
}

int mgpu_model_create_ext(struct mgpu_model *m, const struct mgpu_spec *spec,
			  struct mgpu_dev *dev, int max_batch, float *w, float *g)
{
	int rc;

	memset(m, 0, sizeof *m);
	m->spec = *spec;
	m->dev = dev;
	m->max_batch = max_batch;
	m->w = w;
	m->g = g;
	m->ext_w = w != NULL;
	m->ext_g = g != NULL;
	if (spec->kind == MGPU_MODEL_GPT) {
		rc = mgpu_gpt_create(m);
	} else if (spec->kind == MGPU_MODEL_CNN) {
		rc = mgpu_cnn_create(m);
	} else {
		layout(m);
		rc = alloc_all(m);
	}
	if (rc == 0)
		rc = alloc_stats(m);
	if (rc == 0)
		rc = mgpu_upload_open(&m->up, dev, upload_nbytes(m));
	if (rc < 0)
		mgpu_model_free(m);
	return rc;
}

int mgpu_model_create(struct mgpu_model *m, const struct mgpu_spec *spec,
		      struct mgpu_dev *dev, int max_batch)
{
	return mgpu_model_create_ext(m, spec, dev, max_batch, NULL, NULL);
}

size_t mgpu_model_count(const struct mgpu_spec *spec)
{
	size_t n = 0;
	int l;

	if (spec->kind == MGPU_MODEL_GPT)
		return mgpu_gpt_count(spec);
	if (spec->kind == MGPU_MODEL_CNN)
		return mgpu_cnn_params(spec);
	for (l = 0; l < spec->nlayers; l++) {
		n += (size_t)spec->dims[l + 1] * (size_t)(spec->dims[l] + 1);
		if (spec->layernorm && l + 1 < spec->nlayers)
			n += 2 * (size_t)spec->dims[l + 1];
	}
	return n;
}

static void free_buf(struct mgpu_model *m, void *p)
{
	/* Sizes are only needed for accounting; the total is released at once. */
	if (p)
		m->dev->ops->release(m->dev, p);
}

void mgpu_model_free(struct mgpu_model *m)
{
	int l;

	if (!m->dev)
		return;
	mgpu_mm_free(m);
	mgpu_upload_close(&m->up);
	free_buf(m, m->stats);
	if (m->gpt || m->cnn) {
		if (m->gpt)
			mgpu_gpt_free(m);
		else
			mgpu_cnn_free(m);
		memset(m, 0, sizeof *m);
		return;
	}
	for (l = 0; l < m->spec.nlayers; l++) {
		struct mgpu_layer *L = &m->layers[l];
		free_buf(m, L->lin);
		free_buf(m, L->norm);
		free_buf(m, L->mean);
		free_buf(m, L->rstd);
		free_buf(m, L->y);
	}
	if (!m->ext_w)
		free_buf(m, m->w);
	if (!m->ext_g)
		free_buf(m, m->g);
	free_buf(m, m->x_u8);
	free_buf(m, m->x);
	free_buf(m, m->labels);
	free_buf(m, m->dlogits);
	free_buf(m, m->row_loss);
	free_buf(m, m->row_correct);
	free_buf(m, m->dbuf[0]);
	free_buf(m, m->dbuf[1]);
	free_buf(m, m->zeros);
	m->dev->bytes_cur -= m->dev_bytes;
	memset(m, 0, sizeof *m);
}

int mgpu_model_init(struct mgpu_model *m, uint64_t seed)
{
	struct mgpu_rng r;
	float *h, bound;
	size_t i;
	int l, rc;

	if (m->gpt)
		return mgpu_gpt_init(m, seed);
	if (m->cnn)
		return mgpu_cnn_init(m, seed);
	h = malloc(m->nparams * sizeof(float));
	if (!h)
		return mgpu_err(MGPU_ENOMEM, "model: out of host memory");
	mgpu_rng_seed(&r, seed, 1);
	for (l = 0; l < m->spec.nlayers; l++) {
		struct mgpu_layer *L = &m->layers[l];
		bound = 1.0f / sqrtf((float)L->in);
		for (i = 0; i < L->w->count; i++)
			h[L->w->off + i] = (2.0f * mgpu_rng_float(&r) - 1.0f) * bound;
		for (i = 0; i < L->b->count; i++)
			h[L->b->off + i] = (2.0f * mgpu_rng_float(&r) - 1.0f) * bound;
		for (i = 0; L->gamma && i < L->gamma->count; i++) {
			h[L->gamma->off + i] = 1.0f;
			h[L->beta->off + i] = 0.0f;
		}
	}
	rc = mgpu_model_set(m, h);
	free(h);
	return rc;
}

int mgpu_model_get(struct mgpu_model *m, float *w_host)
{
	return mgpu_dev_to_host(m->dev, w_host, m->w, m->nparams * sizeof(float));
}

int mgpu_model_set(struct mgpu_model *m, const float *w_host)
{
	return mgpu_dev_from_host(m->dev, m->w, w_host, m->nparams * sizeof(float));
}

/* num_batches_tracked (the scalar buffers) is the host's count: written
 * into the vector on the way out, taken from it on the way in. */
int mgpu_model_state_get(struct mgpu_model *m, float *host)
{
	int i;

	if (!m->nstate)
		return 0;
	MGPU_TRY(mgpu_dev_to_host(m->dev, host, m->state, m->nstate * sizeof(float)));
	for (i = 0; i < m->nbuf && m->cnn; i++)
		if (m->bufs[i].ndim == 0)
			host[m->bufs[i].off] = (float)*mgpu_cnn_batches(m);
	return 0;
}

int mgpu_model_state_set(struct mgpu_model *m, const float *host)
{
	int i;

	if (!m->nstate)
		return 0;
	for (i = 0; i < m->nbuf && m->cnn; i++)
		if (m->bufs[i].ndim == 0)
			*mgpu_cnn_batches(m) = (int64_t)host[m->bufs[i].off];
	return mgpu_dev_from_host(m->dev, m->state, host, m->nstate * sizeof(float));
}

/* nbytes of rows to x_dev and B labels, through the next upload buffer. */
static int stage_batch(struct mgpu_model *m, void *x_dev, const void *x_host, size_t nbytes,
		       const int32_t *y_host, int B)
{
	size_t ny = (size_t)B * sizeof(int32_t), off = mgpu_model_rows_off(m);
	char *h;

	MGPU_TRY(mgpu_upload_begin(&m->up, &h));
	memcpy(h, y_host, ny);
	memcpy(h + off, x_host, nbytes);
	MGPU_TRY(mgpu_upload_copy(&m->up, m->labels, 0, ny));
	MGPU_TRY(mgpu_upload_copy(&m->up, x_dev, off, nbytes));
	return mgpu_upload_end(&m->up);
}

int mgpu_model_load_batch(struct mgpu_model *m, const uint8_t *x_host,
			  const int32_t *y_host, int B, float scale, float shift)
{
	size_t n = (size_t)B * (size_t)m->spec.dims[0];

	if (m->gpt) /* byte tokens: no labels, no normalisation */
		return mgpu_gpt_load_batch(m, x_host, B);
	if (B < 1 || B > m->max_batch)
		return mgpu_err(MGPU_EINVAL, "model: batch of %d rows, room for %d", B,
				m->max_batch);
	MGPU_TRY(stage_batch(m, m->x_u8, x_host, n, y_host, B));
	return m->dev->ops->u8_to_f32(m->dev, m->x, m->x_u8, n, scale, shift);
}

/* The dropout stream of layer l: its own seed, offsets from the global row. */
static uint64_t drop_seed(const struct mgpu_model *m, int l)
{
	return mgpu_hash64(m->dropout_seed, (uint64_t)l);
}

/* (B, in) -> (B, out): linear, [layernorm], activation, [dropout]. */
static int layer_forward(struct mgpu_model *m, int l, const float *X, int B, int train)
{
	const struct mgpu_ops *o = m->dev->ops;
	struct mgpu_layer *L = &m->layers[l];
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
		MGPU_TRY(o->bias_act(m->dev, m->spec.act, L->y, L->norm, m->zeros, B, L->out));
	} else {
		MGPU_TRY(o->bias_act(m->dev, m->spec.act, L->y, L->lin, w + L->b->off, B,
				     L->out));
	}
	if (train && m->spec.dropout > 0.0f)
		MGPU_TRY(o->dropout(m->dev, L->y, L->y, n, m->spec.dropout, drop_seed(m, l),
				    m->row0 * (uint64_t)L->out));
	return 0;
}

int mgpu_model_forward(struct mgpu_model *m, int B, int train)
{
	const float *X = m->x;
	int l;

	MGPU_TRY(mgpu_mm_round_weights(m));
	if (m->gpt)
		return mgpu_gpt_forward(m, B, train);
	if (m->cnn)
		return mgpu_cnn_forward(m, B, train);
	for (l = 0; l < m->spec.nlayers; l++) {
		MGPU_TRY(layer_forward(m, l, X, B, train));
		X = m->layers[l].hidden ? m->layers[l].y : m->layers[l].lin;
	}
	return 0;
}

int mgpu_model_loss_acc(struct mgpu_model *m, int B, int want_grad, float grad_scale,
			double *acc)
{
	const struct mgpu_layer *top = &m->layers[m->spec.nlayers - 1];
	const struct mgpu_ops *o = m->dev->ops;
	const float *logits = m->cnn ? mgpu_cnn_logits(m) : top->lin;

	if (m->gpt)
		return mgpu_gpt_loss_acc(m, B, want_grad, grad_scale, acc);
	MGPU_TRY(o->xent(m->dev, want_grad ? m->dlogits : NULL, m->row_loss, m->row_correct,
			 logits, m->labels, B, m->spec.dims[m->spec.nlayers], grad_scale));
	MGPU_TRY(o->sum_acc(m->dev, acc, m->row_loss, (size_t)B, 0, 1.0));
	return o->sum_acc(m->dev, acc + 1, m->row_correct, (size_t)B, 0, 1.0);
}

size_t mgpu_model_logits_per_row(const struct mgpu_model *m)
{
	if (m->gpt)
		return (size_t)m->spec.ctx * (size_t)m->spec.vocab;
	return (size_t)m->spec.dims[m->spec.nlayers];
}

int mgpu_model_logits(struct mgpu_model *m, int B, float *host, size_t *per_row)
{
	const float *src = m->gpt ? mgpu_gpt_logits(m) :
			   m->cnn ? mgpu_cnn_logits(m) : m->layers[m->spec.nlayers - 1].lin;

	*per_row = mgpu_model_logits_per_row(m);
	return mgpu_dev_to_host(m->dev, host, src, (size_t)B * *per_row * sizeof(float));
}

int mgpu_model_loss(struct mgpu_model *m, int B, int want_grad, float grad_scale,
		    double *loss_sum, double *correct)
{
	double h[2];

	MGPU_TRY(m->dev->ops->zero(m->dev, m->lstats, sizeof h));
	MGPU_TRY(mgpu_model_loss_acc(m, B, want_grad, grad_scale, m->lstats));
	MGPU_TRY(mgpu_dev_to_host(m->dev, h, m->lstats, sizeof h));
	*loss_sum = h[0];
	*correct = h[1];
	return 0;
}

/* dY of a hidden layer -> gradient at its linear output, in place. */
static int hidden_backward(struct mgpu_model *m, int l, float *dY, float *tmp, int B,
			   float acc, float **dlin)
{
	const struct mgpu_ops *o = m->dev->ops;
	struct mgpu_layer *L = &m->layers[l];
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
static float *other_buf(struct mgpu_model *m, const float *p)
{
	return p == m->dbuf[0] ? m->dbuf[1] : m->dbuf[0];
}

int mgpu_model_backward(struct mgpu_model *m, int B, int accumulate)
{
	const struct mgpu_ops *o = m->dev->ops;
	float acc = accumulate ? 1.0f : 0.0f, *dY = m->dlogits, *dlin, *dX;
	int l;

	if (m->gpt)
		return mgpu_gpt_backward(m, B, accumulate);
	if (m->cnn)
		return mgpu_cnn_backward(m, B, accumulate);
	for (l = m->spec.nlayers - 1; l >= 0; l--) {
		struct mgpu_layer *L = &m->layers[l];
		const float *X = l ? m->layers[l - 1].y : m->x;
		const struct mgpu_param *lastp = L->beta ? L->beta : L->b;

		dlin = dY;
		if (L->hidden)
			MGPU_TRY(hidden_backward(m, l, dY, other_buf(m, dY), B, acc, &dlin));
		MGPU_TRY(o->col_sum(m->dev, m->g + L->b->off, dlin, B, L->out, acc));
		MGPU_TRY(mgpu_mm(m, MGPU_N, MGPU_T, L->in, L->out, B, 1.0f, X, L->in,
				 dlin, L->out, acc, m->g + L->w->off, L->in));
		/* dY is dead once dlin exists, so dX may take its buffer. */
		dX = other_buf(m, dlin);
		if (l > 0)
			MGPU_TRY(mgpu_mm(m, MGPU_N, MGPU_N, L->in, B, L->out, 1.0f,
					 m->w + L->w->off, L->in, dlin, L->out, 0.0f, dX,
					 L->in));
		if (m->grad_ready)
			MGPU_TRY(m->grad_ready(m->grad_ctx, l, L->w->off,
					       lastp->off + lastp->count - L->w->off));
		dY = dX;
	}
	return 0;
}

/* float32 rows go straight to the decoded-input buffer: the data source
 * normalised them on the host (data/norm.h), unlike uint8 rows, which
 * mgpu_model_load_batch() normalises on the device as it casts them. */
int mgpu_model_load_batch_f32(struct mgpu_model *m, const float *x_host,
			      const int32_t *y_host, int B)
{
	size_t n = (size_t)B * (size_t)m->spec.dims[0];

	if (m->gpt)
		return mgpu_err(MGPU_EINVAL, "model: a gpt reads byte tokens, not float32 "
				"features");
	if (B < 1 || B > m->max_batch)
		return mgpu_err(MGPU_EINVAL, "model: batch of %d rows, room for %d", B,
				m->max_batch);
	return stage_batch(m, m->x, x_host, n * sizeof(float), y_host, B);
}

int mgpu_model_generate(struct mgpu_model *m, const uint8_t *prompt, size_t plen, size_t n,
			double temperature, uint64_t seed, uint8_t *out)
{
	if (!m->gpt)
		return mgpu_err(MGPU_EINVAL, "model: only a gpt generates text; an mlp "
				"classifies");
	return mgpu_gpt_generate(m, prompt, plen, n, temperature, seed, out);
}

int mgpu_model_generate_tokens(struct mgpu_model *m, const int32_t *prompt, size_t plen,
			       size_t n, double temperature, uint64_t seed, int32_t *out)
{
	if (!m->gpt)
		return mgpu_err(MGPU_EINVAL, "model: only a gpt generates text; an mlp "
				"classifies");
	return mgpu_gpt_generate_tokens(m, prompt, plen, n, temperature, seed, out);
}

int mgpu_model_load_tokens(struct mgpu_model *m, const void *x_host, int nbytes, int B)
{
	if (!m->gpt)
		return mgpu_err(MGPU_EINVAL, "model: token ids need a gpt; an mlp reads features");
	return mgpu_gpt_load_tokens(m, x_host, nbytes, B);
}
