/*
 * model.c - what every model family shares (model.h): the flat parameter
 * and gradient buffers, the device buffers' bookkeeping, the step's
 * statistics, the upload of batches; everything else is the family's,
 * reached through its struct mgpu_arch (model/arch.h).
 */
#include "model/model.h"

#include <stdlib.h> /* malloc, realloc, calloc, free */
#include <string.h> /* memcpy, memset, strlen */

#include "core/err.h"     /* mgpu_err, MGPU_TRY */
#include "core/rng.h"     /* mgpu_rng_float */
#include "data/samples.h" /* enum mgpu_dtype */
#include "model/arch.h"      /* struct mgpu_arch: the family */
#include "model/mm.h"        /* mgpu_mm_round_weights, mgpu_mm_free */

int mgpu_model_alloc(struct mgpu_model *m, void *pp, size_t nbytes)
{
	void **a;
	int cap;

	if (m->nallocs == m->allocs_cap) {
		cap = m->allocs_cap ? 2 * m->allocs_cap : 64;
		a = realloc(m->allocs, (size_t)cap * sizeof *a);
		if (!a)
			return mgpu_err(MGPU_ENOMEM, "model: out of host memory");
		m->allocs = a;
		m->allocs_cap = cap;
	}
	MGPU_TRY(mgpu_dev_alloc(m->dev, (void **)pp, nbytes));
	m->allocs[m->nallocs++] = *(void **)pp;
	m->dev_bytes += nbytes;
	return 0;
}

int mgpu_model_alloc_params(struct mgpu_model *m)
{
	size_t nbytes = m->nparams * sizeof(float);

	if (m->params_failed)
		return mgpu_err(MGPU_EINVAL, "model: more than %d parameter tensors", MGPU_MAX_PARAMS);
	if (m->buffers_failed == MGPU_ENOMEM)
		return mgpu_err(MGPU_ENOMEM, "model: out of host memory");
	if (m->buffers_failed)
		return mgpu_err(MGPU_EINVAL, "model: more than %d buffers", MGPU_MAX_BUFFERS);
	if (!m->ext_w)
		MGPU_TRY(mgpu_model_alloc(m, &m->w, nbytes));
	if (!m->ext_g)
		MGPU_TRY(mgpu_model_alloc(m, &m->g, nbytes));
	if (m->nbufvals) {
		MGPU_TRY(mgpu_model_alloc(m, &m->buf, m->nbufvals * sizeof(float)));
		MGPU_TRY(m->dev->ops->zero(m->dev, m->buf, m->nbufvals * sizeof(float)));
	}
	return m->dev->ops->zero(m->dev, m->g, nbytes);
}

/* name and shape into p, which starts at *total floats; *total grows */
static void describe_param(struct mgpu_param *p, const char *name, int rows, int cols,
			   size_t *total)
{
	size_t n = strlen(name);

	if (n >= sizeof p->name) /* names are made to fit; a long one is cut */
		n = sizeof p->name - 1;
	memcpy(p->name, name, n);
	p->name[n] = '\0';
	p->off = *total;
	p->ndim = cols ? 2 : 1;
	p->shape[0] = rows;
	p->shape[1] = cols;
	p->count = (size_t)rows * (size_t)(cols ? cols : 1);
	*total += p->count;
}

void mgpu_model_fill_uniform(struct mgpu_rng *r, float *x, size_t n, float bound)
{
	size_t i;

	for (i = 0; i < n; i++)
		x[i] = (2.0f * mgpu_rng_float(r) - 1.0f) * bound;
}

void mgpu_model_fill(float *x, size_t n, float v)
{
	size_t i;

	for (i = 0; i < n; i++)
		x[i] = v;
}

struct mgpu_param *mgpu_model_add_buffer(struct mgpu_model *m, const char *name, int rows,
					 int cols)
{
	struct mgpu_param *p;

	if (!m->buffers)
		m->buffers = calloc(MGPU_MAX_BUFFERS, sizeof *m->buffers);
	if (!m->buffers || m->nbuffer == MGPU_MAX_BUFFERS) {
		m->buffers_failed = m->buffers ? MGPU_EINVAL : MGPU_ENOMEM;
		return &m->buffer_lost;
	}
	p = &m->buffers[m->nbuffer++];
	describe_param(p, name, rows, cols, &m->nbufvals);
	return p;
}

int mgpu_model_sum_stats(struct mgpu_model *m, int layer, float *sums, size_t count)
{
	return m->stat_sum ? m->stat_sum(m->stat_ctx, layer, sums, count) : 0;
}

struct mgpu_param *mgpu_model_add_param(struct mgpu_model *m, const char *name, int rows,
					int cols, int decay)
{
	struct mgpu_param *p;

	if (m->nparam == MGPU_MAX_PARAMS) {
		m->params_failed = 1;
		return &m->param_lost;
	}
	p = &m->params[m->nparam++];
	describe_param(p, name, rows, cols, &m->nparams);
	p->decay = decay;
	return p;
}

void mgpu_model_add_bucket(struct mgpu_model *m, const struct mgpu_param *first,
			   const struct mgpu_param *last)
{
	struct mgpu_bucket *b = &m->buckets[m->nbuckets++];

	b->off = first->off;
	b->count = last->off + last->count - first->off;
}

/* Every model: the step's statistics and mgpu_model_loss's sums, one
 * block, zero. */
static int alloc_stats(struct mgpu_model *m)
{
	size_t nbytes = (MGPU_STATS + 2) * sizeof(double);

	MGPU_TRY(mgpu_model_alloc(m, &m->stats, nbytes));
	m->lstats = m->stats + MGPU_STATS;
	return m->dev->ops->zero(m->dev, m->stats, nbytes);
}

/* Where a batch's labels and rows sit in an upload buffer: labels (or a
 * gpt's targets) first, rows (float32 at most, or a gpt's ids) after. */
size_t mgpu_model_rows_off(const struct mgpu_model *m)
{
	size_t n = m->arch->labels_nbytes ? m->arch->labels_nbytes(&m->spec, m->max_batch) :
						    (size_t)m->max_batch * sizeof(int32_t);

	return (n + 63) / 64 * 64;
}

int mgpu_model_create_ext(struct mgpu_model *m, const struct mgpu_spec *spec,
			  struct mgpu_dev *dev, int max_batch, float *w, float *g)
{
	int rc;

	memset(m, 0, sizeof *m);
	m->spec = *spec;
	m->arch = mgpu_arch_of(spec);
	m->dev = dev;
	m->max_batch = max_batch;
	m->w = w;
	m->g = g;
	m->ext_w = w != NULL;
	m->ext_g = g != NULL;
	rc = m->arch->create(m);
	if (rc == 0)
		rc = alloc_stats(m);
	if (rc == 0)
		rc = mgpu_upload_open(&m->up, dev, mgpu_model_rows_off(m) +
						   m->arch->rows_nbytes(spec, max_batch));
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
	return mgpu_arch_of(spec)->count(spec);
}

void mgpu_model_free(struct mgpu_model *m)
{
	int i;

	if (!m->dev)
		return;
	mgpu_mm_free(m);
	mgpu_target_dev_free(&m->tgt, m->dev);
	mgpu_upload_close(&m->up);
	if (m->arch->free)
		m->arch->free(m);
	free(m->fam);
	m->fam = NULL;
	/* w and g are in allocs only when this model allocated them */
	for (i = 0; i < m->nallocs; i++)
		m->dev->ops->release(m->dev, m->allocs[i]);
	free(m->allocs);
	free(m->buffers);
	/* sizes are only needed for accounting: the total is released at once */
	m->dev->bytes_cur -= m->dev_bytes;
	memset(m, 0, sizeof *m);
}

int mgpu_model_set_targets(struct mgpu_model *m, int kind, int K, int P, int h, int w,
			   int classes)
{
	mgpu_target_dev_free(&m->tgt, m->dev);
	return mgpu_target_dev_alloc(&m->tgt, m->dev, kind, K, P, h, w, classes, m->max_batch);
}

int mgpu_model_load_targets(struct mgpu_model *m, const struct mgpu_target_batch *tb, int B)
{
	return mgpu_target_dev_load(&m->tgt, m->dev, tb, B);
}

int mgpu_model_init(struct mgpu_model *m, uint64_t seed)
{
	return m->arch->init(m, seed);
}

int mgpu_model_get(struct mgpu_model *m, float *w_host)
{
	return mgpu_dev_to_host(m->dev, w_host, m->w, m->nparams * sizeof(float));
}

int mgpu_model_set(struct mgpu_model *m, const float *w_host)
{
	return mgpu_dev_from_host(m->dev, m->w, w_host, m->nparams * sizeof(float));
}

int mgpu_model_get_buffers(struct mgpu_model *m, float *host)
{
	if (!m->nbufvals)
		return 0;
	return mgpu_dev_to_host(m->dev, host, m->buf, m->nbufvals * sizeof(float));
}

int mgpu_model_set_buffers(struct mgpu_model *m, const float *host)
{
	if (!m->nbufvals)
		return 0;
	return mgpu_dev_from_host(m->dev, m->buf, host, m->nbufvals * sizeof(float));
}

int mgpu_model_stage(struct mgpu_model *m, void *rows_dev, const void *rows, size_t nbytes,
		     const int32_t *labels, int B)
{
	size_t ny = (size_t)B * sizeof(int32_t), off = mgpu_model_rows_off(m);
	char *h;

	MGPU_TRY(mgpu_upload_begin(&m->up, &h));
	memcpy(h, labels, ny);
	memcpy(h + off, rows, nbytes);
	MGPU_TRY(mgpu_upload_copy(&m->up, m->labels, 0, ny));
	MGPU_TRY(mgpu_upload_copy(&m->up, rows_dev, off, nbytes));
	return mgpu_upload_end(&m->up);
}

int mgpu_model_load(struct mgpu_model *m, const struct mgpu_batch_in *in)
{
	if (in->B < 1 || in->B > m->max_batch)
		return mgpu_err(MGPU_EINVAL, "model: batch of %d rows, room for %d", in->B,
				m->max_batch);
	return m->arch->load(m, in);
}

int mgpu_model_load_batch(struct mgpu_model *m, const uint8_t *x_host,
			  const int32_t *y_host, int B, float scale, float shift)
{
	struct mgpu_batch_in in = { .rows = x_host, .dtype = MGPU_DTYPE_U8, .labels = y_host,
				    .scale = scale, .shift = shift, .B = B };

	return mgpu_model_load(m, &in);
}

/* float32 rows go straight to the model: the data source normalised them
 * on the host (data/norm.h), unlike uint8 rows, which the family
 * normalises on the device as it casts them. */
int mgpu_model_load_batch_f32(struct mgpu_model *m, const float *x_host,
			      const int32_t *y_host, int B)
{
	struct mgpu_batch_in in = { .rows = x_host, .dtype = MGPU_DTYPE_F32, .labels = y_host,
				    .scale = 1.0f, .B = B };

	return mgpu_model_load(m, &in);
}

int mgpu_model_load_tokens(struct mgpu_model *m, const void *x_host, int nbytes, int B)
{
	struct mgpu_batch_in in = { .rows = x_host, .scale = 1.0f, .B = B };

	switch (nbytes) {
	case 1: in.dtype = MGPU_DTYPE_U8; break;
	case 2: in.dtype = MGPU_DTYPE_U16; break;
	case 4: in.dtype = MGPU_DTYPE_U32; break;
	default: return mgpu_err(MGPU_EINVAL, "model: tokens of %d bytes", nbytes);
	}
	if (!(m->arch->flags & MGPU_ARCH_TOKENS))
		return mgpu_err(MGPU_EINVAL,
				"model: token ids need a gpt; the %s family reads features",
				m->arch->name);
	return mgpu_model_load(m, &in);
}

int mgpu_model_check_rows(const struct mgpu_model *m, const void *rows, size_t n,
			  size_t row_nbytes, int dtype, size_t *row, size_t *pos, uint32_t *id)
{
	size_t i;

	for (i = 0; m->arch->check_row && i < n; i++)
		if (m->arch->check_row(m, (const char *)rows + i * row_nbytes, dtype, pos, id)) {
			*row = i;
			return MGPU_ERANGE;
		}
	return 0;
}

int mgpu_model_forward(struct mgpu_model *m, int B, int train)
{
	MGPU_TRY(mgpu_mm_round_weights(m));
	return m->arch->forward(m, B, train);
}

int mgpu_model_loss_acc(struct mgpu_model *m, int B, int want_grad, float grad_scale,
			double *acc)
{
	return m->arch->loss_acc(m, B, want_grad, grad_scale, acc);
}

size_t mgpu_model_logits_per_row(const struct mgpu_model *m)
{
	size_t per_row, width, ld;

	m->arch->logits(m, &per_row, &width, &ld);
	return per_row;
}

size_t mgpu_model_logits_width(const struct mgpu_model *m)
{
	size_t per_row, width, ld;

	m->arch->logits(m, &per_row, &width, &ld);
	return width;
}

int mgpu_model_logits(struct mgpu_model *m, int B, float *host, size_t *per_row)
{
	size_t width, ld, rows, i;
	const float *src = m->arch->logits(m, per_row, &width, &ld);
	float *pad;
	int rc;

	if (ld == width)
		return mgpu_dev_to_host(m->dev, host, src, (size_t)B * *per_row * sizeof(float));
	/* the rows' gaps dropped on the host: one copy, not one a prediction */
	rows = (size_t)B * (*per_row / width);
	pad = malloc(rows * ld * sizeof(float));
	if (!pad)
		return mgpu_err(MGPU_ENOMEM, "model: out of host memory for the logits");
	rc = mgpu_dev_to_host(m->dev, pad, src, rows * ld * sizeof(float));
	for (i = 0; rc == 0 && i < rows; i++)
		memcpy(host + i * width, pad + i * ld, width * sizeof(float));
	free(pad);
	return rc;
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

int mgpu_model_backward(struct mgpu_model *m, int B, int accumulate)
{
	return m->arch->backward(m, B, accumulate);
}

int mgpu_model_generate_tokens(struct mgpu_model *m, const int32_t *prompt, size_t plen,
			       size_t n, double temperature, uint64_t seed, int32_t *out)
{
	if (!m->arch->generate)
		return mgpu_err(MGPU_EINVAL, "model: only a gpt generates text; the %s family "
				"classifies", m->arch->name);
	return m->arch->generate(m, prompt, plen, n, temperature, seed, out);
}

int mgpu_model_generate(struct mgpu_model *m, const uint8_t *prompt, size_t plen, size_t n,
			double temperature, uint64_t seed, uint8_t *out)
{
	/* an empty prompt starts after a line break, or byte 0 in a vocabulary
	 * too small to hold one (vocab 2 to 10) */
	int V = mgpu_spec_classes(&m->spec);
	int32_t *p = malloc((plen + 1) * sizeof *p), *o = malloc((n + 1) * sizeof *o);
	size_t i;
	int rc = 0;

	if (!p || !o) {
		rc = mgpu_err(MGPU_ENOMEM, "model: out of host memory for generation");
		goto out;
	}
	for (i = 0; i < plen; i++)
		p[i] = prompt[i];
	if (!plen)
		p[plen++] = '\n' < V ? '\n' : 0;
	MGPU_CHECK(mgpu_model_generate_tokens(m, p, plen, n, temperature, seed, o));
	for (i = 0; i < n; i++) {
		if (o[i] > 255) { /* text is bytes: never narrow an id */
			rc = mgpu_err(MGPU_ERANGE, "model: generated token %d does not fit the "
				      "byte text (vocab %d is above 256)", (int)o[i], V);
			goto out;
		}
		out[i] = (uint8_t)o[i];
	}
out:
	free(p);
	free(o);
	return rc;
}
