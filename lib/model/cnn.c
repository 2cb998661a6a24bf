/*
 * cnn.c - the "cnn:" family (model/arch.h): a convolutional network of one
 * layer or block per spec line (man/mgpu-model.7; the grammar is
 * cnn_spec.c's), its layout, forward and backward over the ops table.
 *
 * Data: a row is one sample, (C,H,W) or a series (C,L) run as (C,1,L),
 * float32 or uint8 (decoded on the device as the mlp's are); activations
 * are NCHW. Every layer is ops of the table (ops.h: conv_*, pool_*, bn_*,
 * gn_*, act_*, dropout, sgemm): nothing here knows the backend.
 *
 * Parameters (m->w, torch.nn.Sequential's names, one module per spec
 * line i): conv i.weight (K, C/g, kh, kw) (1-D: (K, C/g, k)) [i.bias];
 * tconv, torch's ConvTranspose2d, i.weight (C, K/g, kh, kw) [i.bias (K)];
 * bn and gn i.weight, i.bias (C); linear i.weight (N, in), i.bias (N); a
 * res block i.conv1, i.bn1, i.conv2, i.bn2 [i.downsample.0 (1x1 conv),
 * i.downsample.1 (bn)] as torchvision's BasicBlock. Buffers (m->buf,
 * model.h): per bn i.running_mean, i.running_var (C) and
 * i.num_batches_tracked (a scalar, the count of training forwards).
 *
 * Outputs: the last line's y, a linear's class logits (xent on the
 * labels) or a conv's or tconv's maps (c, h, w) taken whole; with targets
 * (m->tgt) the loss is theirs (model/target_loss.h) over either.
 *
 * Gradient buckets: the lines with parameters in at most MGPU_MAX_LAYERS
 * groups of consecutive lines (cnn_spec.h); backward reports a bucket
 * through grad_ready once its lowest line is done, weights read no more.
 *
 * Letters: B samples, C input and K output channels, (H, W) a sample's
 * extent (H = 1 for a series), HW = H W. Every line keeps its output y
 * (B, K, OH, OW) for the backward; flatten, and dropout outside training,
 * pass their input on (out points at it). A res block keeps c1 (conv1),
 * b1 (bn1), r1 (relu), c2 (conv2), b2 (bn2) and, with a projection, pc
 * and pb; its y is relu(b2 + shortcut), whose ReLU backward reads y itself
 * (y > 0 exactly where the sum was). The backward runs in four scratch
 * tensors of the widest activation: a ping-pong pair (dy in, dx out) and
 * two for a block's insides.
 *
 * --dtype bf16 (m->prec) is torch.autocast's: the convolutions get it in
 * their geometry (struct mgpu_conv prec: bf16 operands, fp32 outputs) and
 * the head's products through mm.c; norms, pooling, activations, the
 * loss, the weights and the optimizer stay fp32.
 *
 * The linear head is row-major (B, in) x W (N, in)^T, by ops.h's identity:
 *   Y = X W^T   -> sgemm(T, N, N_, B, in, 1, W, in, X, in, 0, Y, N_)
 *   dX = dY W   -> sgemm(N, N, in, B, N_, 1, W, in, dY, N_, 0, dX, in)
 *   dW += dY^T X-> sgemm(N, T, in, N_, B, 1, X, in, dY, N_, acc, dW, in)
 *
 * Skip connections (a U-Net's): a save line passes its input on and
 * names it; a cat line's y is (B, C + Cs, H, W), its input's channels
 * then the save's, per sample (torch.cat(dim=1)). Backward, a cat hands
 * the saved channels' gradient to its save's dsave (the last cat of a
 * save writes it, earlier ones add), and the save adds dsave to the
 * gradient passing through it. A transposed convolution is conv_bwd_data
 * of the convolution it transposes (ops.h), whose output is its input.
 */
#include <math.h>   /* sqrtf */
#include <stdint.h> /* int32_t, uint8_t, uint64_t */
#include <stdio.h>  /* snprintf */
#include <stdlib.h> /* calloc, malloc, free */
#include <string.h> /* memset */

#include "core/err.h"     /* mgpu_err, MGPU_TRY */
#include "core/hash.h"    /* mgpu_hash64 */
#include "core/rng.h"     /* struct mgpu_rng */
#include "data/samples.h" /* MGPU_DTYPE_U8, MGPU_DTYPE_F32 */
#include "model/arch.h"    /* struct mgpu_arch */
#include "model/cnn_spec.h" /* the grammar: parse, format, fit, walk, buckets */
#include "model/mm.h"      /* mgpu_mm */
#include "model/model.h"   /* struct mgpu_model, mgpu_model_add_param, buckets, buffers */

#define BN_EPS 1e-5f
#define BN_MOMENTUM 0.1f
#define GN_EPS 1e-5f

struct cnn_conv {
	struct mgpu_param *w, *b;
	struct mgpu_conv g;        /* N set per call */
};

/* A BatchNorm or GroupNorm: parameters, saved statistics, its sums. */
struct cnn_norm {
	struct mgpu_param *gamma, *beta;
	struct mgpu_param *rmean, *rvar, *nbt; /* bn: buffers */
	float *mean, *rstd;        /* bn (C); gn (B, G) */
	float *stats, *dstats;     /* bn (2, C) */
	double count;              /* bn: the forward's values per channel (summed) */
	int idx;                   /* bn: its layer index for mgpu_model_sum_stats */
	int C, G;
};

struct cnn_line {
	int op;
	struct mgpu_cnn_shape in, out;
	struct cnn_conv conv, conv2, proj; /* conv; res: conv1, conv2, downsample.0 */
	struct cnn_norm nm, nm2, pnm;      /* bn, gn; res: bn1, bn2, downsample.1 */
	struct mgpu_param *lw, *lb;        /* linear */
	struct mgpu_pool2d pool;
	float p_drop;
	float *y;                          /* (B, out) */
	const float *x_in, *out_p;         /* this forward's input and output */
	float *c1, *b1, *r1, *c2, *b2, *pc, *pb; /* res */
	float *dsave;                      /* save: its cats' gradient (B, in) */
	int ref;                           /* cat: its save's line */
	int first_bwd;                     /* cat: the save's last cat (its backward's first) */
	int up;                            /* up: the factor */
	int ready;                         /* bucket complete after this line's backward, or -1 */
};

struct mgpu_cnn {
	int n, nbn;
	struct cnn_line L[MGPU_CNN_MAX_LINES];
	uint8_t *x_u8;                     /* (B, D0) raw batch */
	float *x;                          /* (B, D0) decoded input */
	float *scr[4];                     /* backward scratch (B, widest) */
	float *one;                        /* 1.0f: num_batches_tracked's step */
	size_t widest;                     /* floats per sample */
};

static size_t vol(struct mgpu_cnn_shape s)
{
	return (size_t)s.c * (size_t)s.h * (size_t)s.w;
}

/* ---- layout ---------------------------------------------------------- */

/* A parameter named "line.what" of ndim dims (torch's layout); rows and
 * cols only size it for the flat buffer. */
static struct mgpu_param *param(struct mgpu_model *m, const char *line, const char *what,
				int ndim, const int *shape, int decay)
{
	struct mgpu_param *p;
	char name[48];
	int d, rest = 1;

	for (d = 1; d < ndim; d++)
		rest *= shape[d];
	snprintf(name, sizeof name, "%s.%s", line, what);
	p = mgpu_model_add_param(m, name, shape[0], ndim > 1 ? rest : 0, decay);
	p->ndim = ndim;
	for (d = 0; d < ndim; d++)
		p->shape[d] = shape[d];
	return p;
}

/* A buffer (model.h) of C floats, or the scalar num_batches_tracked. */
static struct mgpu_param *buffer(struct mgpu_model *m, const char *line, const char *what,
				 int C)
{
	struct mgpu_param *p;
	char name[48];

	snprintf(name, sizeof name, "%s.%s", line, what);
	p = mgpu_model_add_buffer(m, name, C ? C : 1, 0);
	if (!C)
		p->ndim = 0;
	return p;
}

/* A conv's weight (K, C/g, k[, k]) and bias, named pre.weight, pre.bias. */
static void lay_conv(struct mgpu_model *m, struct cnn_conv *cv, const char *pre,
		     struct mgpu_cnn_shape in, int K, int k, int s, int p, int g, int d,
		     int bias, int oned)
{
	int shape[4] = { K, in.c / g, k, k };

	cv->w = param(m, pre, "weight", oned ? 3 : 4, shape, 1);
	cv->b = bias ? param(m, pre, "bias", 1, shape, 0) : NULL;
	cv->g = (struct mgpu_conv){ .N = 0, .C = in.c, .H = in.h, .W = in.w, .K = K,
				    .KH = oned ? 1 : k, .KW = k, .sh = oned ? 1 : s, .sw = s,
				    .ph = oned ? 0 : p, .pw = p, .dh = oned ? 1 : d, .dw = d,
				    .groups = g };
}

/* A transposed conv from in to out (K channels): the convolution it
 * transposes runs from out (C = K) to in (K = in.c), so its weight
 * (in.c, K/g, k, k) is torch's ConvTranspose2d's. */
static void lay_tconv(struct mgpu_model *m, struct cnn_conv *cv, const char *pre,
		      struct mgpu_cnn_shape in, struct mgpu_cnn_shape out,
		      const struct mgpu_cnn_line *sl, int oned)
{
	int shape[4] = { in.c, out.c / sl->g, sl->k, sl->k }, k = sl->k;

	cv->w = param(m, pre, "weight", oned ? 3 : 4, shape, 1);
	cv->b = sl->bias ? param(m, pre, "bias", 1, &out.c, 0) : NULL;
	cv->g = (struct mgpu_conv){ .N = 0, .C = out.c, .H = out.h, .W = out.w, .K = in.c,
				    .KH = oned ? 1 : k, .KW = k, .sh = oned ? 1 : sl->s,
				    .sw = sl->s, .ph = oned ? 0 : sl->p, .pw = sl->p,
				    .dh = oned ? 1 : sl->d, .dw = sl->d, .groups = sl->g };
}

static void lay_norm(struct mgpu_model *m, struct cnn_norm *nm, const char *pre, int C,
		     int G, int bn)
{
	int shape[1] = { C };

	nm->C = C;
	nm->G = G;
	nm->gamma = param(m, pre, "weight", 1, shape, 0);
	nm->beta = param(m, pre, "bias", 1, shape, 0);
	if (!bn)
		return;
	nm->idx = ((struct mgpu_cnn *)m->fam)->nbn++;
	nm->rmean = buffer(m, pre, "running_mean", C);
	nm->rvar = buffer(m, pre, "running_var", C);
	nm->nbt = buffer(m, pre, "num_batches_tracked", 0);
}

static void lay_res(struct mgpu_model *m, struct cnn_line *L, const struct mgpu_cnn_line *sl,
		    const char *pre, int oned)
{
	char name[32];
	int K = sl->n;

	snprintf(name, sizeof name, "%s.conv1", pre);
	lay_conv(m, &L->conv, name, L->in, K, 3, sl->s, 1, 1, 1, 0, oned);
	snprintf(name, sizeof name, "%s.bn1", pre);
	lay_norm(m, &L->nm, name, K, 0, 1);
	snprintf(name, sizeof name, "%s.conv2", pre);
	lay_conv(m, &L->conv2, name, L->out, K, 3, 1, 1, 1, 1, 0, oned);
	snprintf(name, sizeof name, "%s.bn2", pre);
	lay_norm(m, &L->nm2, name, K, 0, 1);
	if (sl->s == 1 && L->in.c == K)
		return;
	snprintf(name, sizeof name, "%s.downsample.0", pre);
	lay_conv(m, &L->proj, name, L->in, K, 1, sl->s, 0, 1, 1, 0, oned);
	snprintf(name, sizeof name, "%s.downsample.1", pre);
	lay_norm(m, &L->pnm, name, K, 0, 1);
}

static void lay_line(struct mgpu_model *m, struct cnn_line *L, const struct mgpu_cnn_line *sl,
		     int i, int oned)
{
	char pre[16];
	int shape[2];

	snprintf(pre, sizeof pre, "%d", i);
	switch (sl->op) {
	case MGPU_CNN_CONV:
		lay_conv(m, &L->conv, pre, L->in, sl->n, sl->k, sl->s, sl->p, sl->g, sl->d,
			 sl->bias, oned);
		break;
	case MGPU_CNN_BN:
		lay_norm(m, &L->nm, pre, L->in.c, 0, 1);
		break;
	case MGPU_CNN_GN:
		lay_norm(m, &L->nm, pre, L->in.c, sl->n, 0);
		break;
	case MGPU_CNN_RES:
		lay_res(m, L, sl, pre, oned);
		break;
	case MGPU_CNN_TCONV:
		lay_tconv(m, &L->conv, pre, L->in, L->out, sl, oned);
		break;
	case MGPU_CNN_UP:
		L->up = sl->k;
		break;
	case MGPU_CNN_CAT:
		L->ref = sl->ref;
		break;
	case MGPU_CNN_LINEAR:
		shape[0] = sl->n;
		shape[1] = (int)vol(L->in);
		L->lw = param(m, pre, "weight", 2, shape, 1);
		L->lb = param(m, pre, "bias", 1, shape, 0);
		break;
	case MGPU_CNN_MAXPOOL:
	case MGPU_CNN_AVGPOOL:
		L->pool = (struct mgpu_pool2d){ .C = L->in.c, .H = L->in.h, .W = L->in.w,
						.KH = oned ? 1 : sl->k, .KW = sl->k,
						.sh = oned ? 1 : sl->s, .sw = sl->s,
						.ph = oned ? 0 : sl->p, .pw = sl->p,
						.mode = sl->op == MGPU_CNN_MAXPOOL ? MGPU_POOL_MAX :
										     MGPU_POOL_AVG };
		break;
	case MGPU_CNN_GAP:
		L->pool = (struct mgpu_pool2d){ .C = L->in.c, .H = L->in.h, .W = L->in.w,
						.KH = L->in.h, .KW = L->in.w, .sh = 1, .sw = 1,
						.mode = MGPU_POOL_AVG };
		break;
	default:
		break;
	}
}

/* Buckets (model.h): each spans its lines' parameters, first .. last. */
static void lay_buckets(struct mgpu_model *m, struct mgpu_cnn *c, const int *first_param,
			const int *line_np)
{
	int i, j = 0, np = 0, nb = m->spec.nbuckets, b, prev = -1, first = 0;

	for (i = 0; i < c->n; i++)
		np += line_np[i] > 0;
	for (i = 0; i < c->n; i++) {
		c->L[i].ready = -1;
		if (!line_np[i])
			continue;
		b = mgpu_cnn_bucket_of(j++, np, nb);
		if (b != prev) { /* the bucket's lowest line: the backward's last */
			c->L[i].ready = b;
			first = first_param[i];
		}
		if (b + 1 == nb ? j == np : mgpu_cnn_bucket_of(j, np, nb) != b)
			mgpu_model_add_bucket(m, &m->params[first],
					      &m->params[first_param[i] + line_np[i] - 1]);
		prev = b;
	}
}

/* Each save's last cat, the first to reach it backward, writes its dsave. */
static void mark_cats(struct mgpu_cnn *c)
{
	int i, j;

	for (i = 0; i < c->n; i++) {
		if (c->L[i].op != MGPU_CNN_CAT)
			continue;
		c->L[i].first_bwd = 1;
		for (j = i + 1; j < c->n; j++)
			if (c->L[j].op == MGPU_CNN_CAT && c->L[j].ref == c->L[i].ref)
				c->L[i].first_bwd = 0;
	}
}

static int layout(struct mgpu_model *m, struct mgpu_cnn *c)
{
	struct mgpu_cnn_shape sh[MGPU_CNN_MAX_LINES + 1];
	int first[MGPU_CNN_MAX_LINES], np[MGPU_CNN_MAX_LINES], i;
	const struct mgpu_spec *s = &m->spec;
	int oned = s->in_1d || s->in_h == 1;

	if (!s->in_c || mgpu_cnn_classes(s) == MGPU_SPEC_AUTO)
		return mgpu_err(MGPU_EINVAL, "cnn: the input shape is not known yet");
	MGPU_TRY(mgpu_cnn_walk(s, sh, "cnn"));
	c->n = s->ncnn;
	for (i = 0; i < c->n; i++) {
		struct cnn_line *L = &c->L[i];
		L->op = s->cnn[i].op;
		L->in = sh[i];
		L->out = sh[i + 1];
		L->p_drop = s->cnn[i].p_drop;
		first[i] = m->nparam;
		lay_line(m, L, &s->cnn[i], i, oned);
		np[i] = m->nparam - first[i];
	}
	lay_buckets(m, c, first, np);
	mark_cats(c);
	return 0;
}

/* ---- memory ------------------------------------------------------------ */

/* count elements of elem bytes (at least one: an empty tensor still gets
 * an address), released with the model. */
static int dalloc(struct mgpu_model *m, void *pp, size_t count, size_t elem)
{
	return mgpu_model_alloc(m, pp, (count ? count : 1) * elem);
}

#define F sizeof(float)

static int alloc_norm(struct mgpu_model *m, struct cnn_norm *nm, size_t B)
{
	if (nm->G) { /* gn: per (sample, group) */
		MGPU_TRY(dalloc(m, &nm->mean, B * (size_t)nm->G, F));
		return dalloc(m, &nm->rstd, B * (size_t)nm->G, F);
	}
	MGPU_TRY(dalloc(m, &nm->mean, (size_t)nm->C, F));
	MGPU_TRY(dalloc(m, &nm->rstd, (size_t)nm->C, F));
	MGPU_TRY(dalloc(m, &nm->stats, 2 * (size_t)nm->C, F));
	return dalloc(m, &nm->dstats, 2 * (size_t)nm->C, F);
}

static int alloc_line(struct mgpu_model *m, struct cnn_line *L, size_t B)
{
	size_t out = B * vol(L->out);

	if (L->op == MGPU_CNN_FLATTEN)
		return 0;
	if (L->op == MGPU_CNN_SAVE)
		return dalloc(m, &L->dsave, B * vol(L->in), F);
	MGPU_TRY(dalloc(m, &L->y, out, F));
	if (L->op == MGPU_CNN_BN || L->op == MGPU_CNN_GN)
		return alloc_norm(m, &L->nm, B);
	if (L->op != MGPU_CNN_RES)
		return 0;
	MGPU_TRY(alloc_norm(m, &L->nm, B));
	MGPU_TRY(alloc_norm(m, &L->nm2, B));
	MGPU_TRY(dalloc(m, &L->c1, out, F));
	MGPU_TRY(dalloc(m, &L->b1, out, F));
	MGPU_TRY(dalloc(m, &L->r1, out, F));
	MGPU_TRY(dalloc(m, &L->c2, out, F));
	MGPU_TRY(dalloc(m, &L->b2, out, F));
	if (!L->proj.w)
		return 0;
	MGPU_TRY(alloc_norm(m, &L->pnm, B));
	MGPU_TRY(dalloc(m, &L->pc, out, F));
	return dalloc(m, &L->pb, out, F);
}

static int alloc_all(struct mgpu_model *m, struct mgpu_cnn *c)
{
	const struct mgpu_spec *s = &m->spec;
	size_t B = (size_t)m->max_batch, D0 = (size_t)s->in_c * s->in_h * s->in_w;
	size_t C = vol(c->L[c->n - 1].out); /* outputs a sample: logits or maps */
	int i;

	MGPU_TRY(mgpu_model_alloc_params(m));
	MGPU_TRY(dalloc(m, &c->x_u8, B * D0, 1));
	MGPU_TRY(dalloc(m, &c->x, B * D0, F));
	MGPU_TRY(dalloc(m, &m->labels, B, sizeof(int32_t)));
	MGPU_TRY(dalloc(m, &m->dlogits, B * C, F));
	MGPU_TRY(dalloc(m, &m->row_loss, B, F));
	MGPU_TRY(dalloc(m, &m->row_correct, B, F));
	MGPU_TRY(dalloc(m, &c->one, 1, F));
	MGPU_TRY(mgpu_dev_from_host(m->dev, c->one, &(float){ 1.0f }, sizeof(float)));
	c->widest = D0;
	for (i = 0; i < c->n; i++) {
		MGPU_TRY(alloc_line(m, &c->L[i], B));
		if (vol(c->L[i].out) > c->widest)
			c->widest = vol(c->L[i].out);
	}
	for (i = 0; i < 4; i++)
		MGPU_TRY(dalloc(m, &c->scr[i], B * c->widest, F));
	return 0;
}

/* torch's fresh BatchNorm buffers: running_var 1, the others 0. Every
 * rank's own, set here since only the rank that loads the state runs
 * init (a replica sharing rank 0's weights would keep its buffers as
 * allocated). */
static int reset_buffers(struct mgpu_model *m)
{
	float *h = malloc(m->nbufvals * sizeof(float) + 1);
	int i, rc;
	size_t k;

	if (!h)
		return mgpu_err(MGPU_ENOMEM, "cnn: out of host memory");
	for (i = 0; i < m->nbuffer; i++) {
		const struct mgpu_param *p = &m->buffers[i];
		for (k = 0; k < p->count; k++)
			h[p->off + k] = strstr(p->name, "running_var") ? 1.0f : 0.0f;
	}
	rc = mgpu_model_set_buffers(m, h);
	free(h);
	return rc;
}

static int create(struct mgpu_model *m)
{
	struct mgpu_cnn *c = calloc(1, sizeof *c);

	if (!c)
		return mgpu_err(MGPU_ENOMEM, "cnn: out of host memory");
	m->fam = c;
	MGPU_TRY(layout(m, c));
	MGPU_TRY(alloc_all(m, c));
	return reset_buffers(m);
}

/* Upload buffers: B labels (the model's default), then B rows of float32 at
 * most. */
static size_t rows_nbytes(const struct mgpu_spec *s, int max_batch)
{
	return (size_t)max_batch * (size_t)s->in_c * (size_t)s->in_h * (size_t)s->in_w *
	       sizeof(float);
}

/* ---- init -------------------------------------------------------------- */

/* Fan-in of a weight: every dimension but the first. */
static float fan_bound(const struct mgpu_param *w)
{
	return 1.0f / sqrtf((float)(w->count / (size_t)w->shape[0]));
}

/* p is w's module's bias: "X.bias" after "X.weight". */
static int bias_of(const struct mgpu_param *p, const struct mgpu_param *w)
{
	size_t n = strlen(p->name);

	return n > 5 && strcmp(p->name + n - 5, ".bias") == 0 &&
	       strncmp(p->name, w->name, n - 5) == 0 && strcmp(w->name + n - 5, ".weight") == 0;
}

static int init(struct mgpu_model *m, uint64_t seed)
{
	float *h = malloc(m->nparams * sizeof(float) + 1), bound = 1.0f;
	struct mgpu_rng r;
	int i, rc;

	if (!h)
		return mgpu_err(MGPU_ENOMEM, "cnn: out of host memory");
	mgpu_rng_seed(&r, seed, 1);
	/* torch.nn's defaults: a weight's bias shares its U(+-1/sqrt(fan_in));
	 * norms start at weight 1, bias 0 (their params without decay that
	 * follow no weight of their module) */
	for (i = 0; i < m->nparam; i++) {
		const struct mgpu_param *p = &m->params[i];
		if (p->decay) {
			bound = fan_bound(p);
			mgpu_model_fill_uniform(&r, h + p->off, p->count, bound);
		} else if (i > 0 && m->params[i - 1].decay && bias_of(p, &m->params[i - 1])) {
			mgpu_model_fill_uniform(&r, h + p->off, p->count, bound);
		} else {
			mgpu_model_fill(h + p->off, p->count, strstr(p->name, ".weight") ? 1.0f : 0.0f);
		}
	}
	rc = mgpu_model_set(m, h);
	if (rc == 0)
		rc = reset_buffers(m);
	free(h);
	return rc;
}

/* uint8 rows are cast and normalised on the device; float32 rows (the
 * source normalised them) go straight to the decoded input. */
static int load(struct mgpu_model *m, const struct mgpu_batch_in *in)
{
	struct mgpu_cnn *c = m->fam;
	size_t n = (size_t)in->B * (size_t)m->spec.in_c * m->spec.in_h * m->spec.in_w;

	if (in->B < 1 || in->B > m->max_batch)
		return mgpu_err(MGPU_EINVAL, "model: batch of %d rows, room for %d", in->B,
				m->max_batch);
	if (in->dtype == MGPU_DTYPE_F32)
		return mgpu_model_stage(m, c->x, in->rows, n * sizeof(float), in->labels, in->B);
	if (in->dtype != MGPU_DTYPE_U8)
		return mgpu_err(MGPU_EINVAL, "model: a cnn reads uint8 or float32 samples, not %s",
				mgpu_dtype_name(in->dtype));
	MGPU_TRY(mgpu_model_stage(m, c->x_u8, in->rows, n, in->labels, in->B));
	return m->dev->ops->u8_to_f32(m->dev, c->x, c->x_u8, n, in->scale, in->shift);
}

/* ---- forward ----------------------------------------------------------- */

static int conv_fwd(struct mgpu_model *m, struct cnn_conv *cv, int B, float *y, const float *x)
{
	struct mgpu_conv g = cv->g;

	g.N = B;
	g.prec = (enum mgpu_prec)m->prec;
	return m->dev->ops->conv_fwd(m->dev, &g, y, x, m->w + cv->w->off,
				     cv->b ? m->w + cv->b->off : NULL);
}

static struct mgpu_bn bn_desc(const struct cnn_norm *nm, int B, int HW, int train)
{
	return (struct mgpu_bn){ .N = B, .C = nm->C, .HW = HW, .eps = BN_EPS,
				 .momentum = BN_MOMENTUM, .count = nm->count, .train = train };
}

/*
 * BatchNorm forward. Training: bn_stats makes this rank's per-channel
 * sums (2, C) of x - running_mean and their squares; then THE CROSS-RANK
 * POINT: mgpu_model_sum_stats(m, idx, stats, 2C), where --sync-bn's sum
 * (m->stat_sum, model.h) replaces them by their sums over m->stat_ranks
 * ranks, whose batches are as large as this one, so count grows as many
 * times; without it each rank keeps its own, as torch DDP. bn_fwd then
 * takes the moments from the sums, moves the running statistics and
 * normalises; num_batches_tracked counts the forward.
 */
static int bn_fwd(struct mgpu_model *m, struct cnn_norm *nm, int B, int HW, int train,
		  float *y, const float *x)
{
	const struct mgpu_ops *o = m->dev->ops;
	struct mgpu_cnn *c = m->fam;
	float *rm = m->buf + nm->rmean->off, *rv = m->buf + nm->rvar->off;
	float *nbt = m->buf + nm->nbt->off;
	struct mgpu_bn bn;

	nm->count = (double)B * HW;
	bn = bn_desc(nm, B, HW, train);
	if (train) {
		MGPU_TRY(o->bn_stats(m->dev, &bn, nm->stats, x, rm));
		MGPU_TRY(mgpu_model_sum_stats(m, nm->idx, nm->stats, 2 * (size_t)nm->C));
		if (m->stat_sum && m->stat_ranks > 1)
			nm->count *= m->stat_ranks;
		if (nm->count <= 1.0)
			return mgpu_err(MGPU_EINVAL, "cnn: BatchNorm '%s' trains on %g value%s per "
					"channel: it needs more than 1 (a larger batch)",
					nm->gamma->name, nm->count, nm->count == 1.0 ? "" : "s");
		bn.count = nm->count;
		MGPU_TRY(o->add(m->dev, nbt, nbt, c->one, 1));
	}
	return o->bn_fwd(m->dev, &bn, y, nm->mean, nm->rstd, x, nm->stats, rm,
			 m->w + nm->gamma->off, m->w + nm->beta->off, rm, rv);
}

static int gn_fwd(struct mgpu_model *m, struct cnn_norm *nm, int B, int HW, float *y,
		  const float *x)
{
	return m->dev->ops->gn_fwd(m->dev, B, nm->C, HW, nm->G, y, nm->mean, nm->rstd, x,
				   m->w + nm->gamma->off, m->w + nm->beta->off, GN_EPS);
}

static int res_fwd(struct mgpu_model *m, struct cnn_line *L, int B, int train, const float *x)
{
	const struct mgpu_ops *o = m->dev->ops;
	size_t n = (size_t)B * vol(L->out);
	int HW = L->out.h * L->out.w;
	const float *sc = x;

	MGPU_TRY(conv_fwd(m, &L->conv, B, L->c1, x));
	MGPU_TRY(bn_fwd(m, &L->nm, B, HW, train, L->b1, L->c1));
	MGPU_TRY(o->act_fwd(m->dev, MGPU_ACT_RELU, L->r1, L->b1, n));
	MGPU_TRY(conv_fwd(m, &L->conv2, B, L->c2, L->r1));
	MGPU_TRY(bn_fwd(m, &L->nm2, B, HW, train, L->b2, L->c2));
	if (L->proj.w) {
		MGPU_TRY(conv_fwd(m, &L->proj, B, L->pc, x));
		MGPU_TRY(bn_fwd(m, &L->pnm, B, HW, train, L->pb, L->pc));
		sc = L->pb;
	}
	MGPU_TRY(o->add(m->dev, L->y, L->b2, sc, n));
	return o->act_fwd(m->dev, MGPU_ACT_RELU, L->y, L->y, n);
}

/* The dropout stream of line i: its own seed, offsets from the global row. */
static uint64_t drop_seed(const struct mgpu_model *m, int i)
{
	return mgpu_hash64(m->dropout_seed, (uint64_t)i);
}

static int pool_fwd(struct mgpu_model *m, struct cnn_line *L, int B, const float *x)
{
	struct mgpu_pool2d g = L->pool;

	g.N = B;
	return m->dev->ops->pool_fwd(m->dev, &g, L->y, x);
}

/* A transposed conv: y (B, K, H, W) from x (B, C, OH, OW) of the
 * convolution it transposes, plus its bias. */
static int tconv_fwd(struct mgpu_model *m, struct cnn_line *L, int B, const float *x)
{
	const struct mgpu_ops *o = m->dev->ops;
	struct mgpu_conv g = L->conv.g;

	g.N = B;
	g.prec = (enum mgpu_prec)m->prec;
	MGPU_TRY(o->conv_bwd_data(m->dev, &g, L->y, x, m->w + L->conv.w->off));
	return L->conv.b ? o->chan_bias(m->dev, B, g.C, g.H * g.W, L->y,
					m->w + L->conv.b->off) : 0;
}

/*
 * Per-sample channel blocks: dst's rows (B of them, ld floats apart, from
 * dst) get n floats of each of src's rows (packed), or (split) dst's
 * packed rows get n floats of src's rows ld apart. heads_merge and
 * heads_split with one head and one position are just those copies.
 */
static int rows_merge(struct mgpu_model *m, float *dst, int ld, const float *src, int B,
		      size_t n)
{
	return m->dev->ops->heads_merge(m->dev, dst, ld, src, B, 1, 1, (int)n);
}

static int rows_split(struct mgpu_model *m, float *dst, const float *src, int ld, int B,
		      size_t n)
{
	return m->dev->ops->heads_split(m->dev, dst, src, ld, B, 1, 1, (int)n);
}

/* cat: y (B, C + Cs, HW) = x (B, C, HW), then the save's (B, Cs, HW). */
static int cat_fwd(struct mgpu_model *m, struct cnn_line *L, int B, const float *x)
{
	const struct cnn_line *sv = &((struct mgpu_cnn *)m->fam)->L[L->ref];
	size_t a = vol(L->in), b = vol(sv->in);
	int ld = (int)vol(L->out);

	MGPU_TRY(rows_merge(m, L->y, ld, x, B, a));
	return rows_merge(m, L->y + a, ld, sv->x_in, B, b);
}

static int line_fwd(struct mgpu_model *m, int i, int B, int train, const float *x)
{
	const struct mgpu_ops *o = m->dev->ops;
	struct cnn_line *L = &((struct mgpu_cnn *)m->fam)->L[i];
	size_t n = (size_t)B * vol(L->out);
	int HW = L->in.h * L->in.w, in = (int)vol(L->in), N_ = L->out.c;

	L->x_in = x;
	switch (L->op) {
	case MGPU_CNN_CONV:
		MGPU_TRY(conv_fwd(m, &L->conv, B, L->y, x));
		break;
	case MGPU_CNN_BN:
		MGPU_TRY(bn_fwd(m, &L->nm, B, HW, train, L->y, x));
		break;
	case MGPU_CNN_GN:
		MGPU_TRY(gn_fwd(m, &L->nm, B, HW, L->y, x));
		break;
	case MGPU_CNN_RELU:
	case MGPU_CNN_SILU:
		MGPU_TRY(o->act_fwd(m->dev, L->op == MGPU_CNN_RELU ? MGPU_ACT_RELU : MGPU_ACT_SILU,
				    L->y, x, n));
		break;
	case MGPU_CNN_MAXPOOL:
	case MGPU_CNN_AVGPOOL:
	case MGPU_CNN_GAP:
		MGPU_TRY(pool_fwd(m, L, B, x));
		break;
	case MGPU_CNN_DROPOUT:
		if (!train || L->p_drop == 0.0f) {
			L->out_p = x;
			return 0;
		}
		MGPU_TRY(o->dropout(m->dev, L->y, x, n, L->p_drop, drop_seed(m, i),
				    m->row0 * (uint64_t)vol(L->out)));
		break;
	case MGPU_CNN_RES:
		MGPU_TRY(res_fwd(m, L, B, train, x));
		break;
	case MGPU_CNN_FLATTEN:
	case MGPU_CNN_SAVE: /* its cats read x_in */
		L->out_p = x;
		return 0;
	case MGPU_CNN_UP:
		MGPU_TRY(o->upsample_fwd(m->dev, B, L->in.c, L->in.h, L->in.w,
					 L->out.h / L->in.h, L->up, L->y, x));
		break;
	case MGPU_CNN_TCONV:
		MGPU_TRY(tconv_fwd(m, L, B, x));
		break;
	case MGPU_CNN_CAT:
		MGPU_TRY(cat_fwd(m, L, B, x));
		break;
	case MGPU_CNN_LINEAR:
		MGPU_TRY(mgpu_mm(m, MGPU_T, MGPU_N, N_, B, in, 1.0f, m->w + L->lw->off, in, x, in,
				 0.0f, L->y, N_));
		MGPU_TRY(o->bias_act(m->dev, MGPU_ACT_NONE, L->y, L->y, m->w + L->lb->off, B, N_));
		break;
	}
	L->out_p = L->y;
	return 0;
}

static int forward(struct mgpu_model *m, int B, int train)
{
	struct mgpu_cnn *c = m->fam;
	const float *x = c->x;
	int i;

	if (B < 1 || B > m->max_batch)
		return mgpu_err(MGPU_EINVAL, "cnn: batch of %d rows, room for %d", B,
				m->max_batch);
	for (i = 0; i < c->n; i++) {
		MGPU_TRY(line_fwd(m, i, B, train, x));
		x = c->L[i].out_p;
	}
	return 0;
}

static int loss_acc(struct mgpu_model *m, int B, int want_grad, float grad_scale,
		    double *acc)
{
	const struct mgpu_cnn *c = m->fam;
	const struct mgpu_ops *o = m->dev->ops;
	struct mgpu_cnn_shape out = c->L[c->n - 1].out;

	if (m->tgt.kind) /* a target's loss (model/target_loss.h) over the outputs */
		return mgpu_target_loss_acc(&m->tgt, m->dev, c->L[c->n - 1].y,
					    want_grad ? m->dlogits : NULL, B, grad_scale, acc);
	if (out.h * out.w != 1)
		return mgpu_err(MGPU_EINVAL, "cnn: the model outputs %d x %d x %d maps a sample, "
				"not a row of class logits: class labels need a head that ends "
				"in 1 x 1 (gap; linear auto), maps need targets", out.c, out.h,
				out.w);
	MGPU_TRY(o->xent(m->dev, want_grad ? m->dlogits : NULL, m->row_loss, m->row_correct,
			 c->L[c->n - 1].y, m->labels, B, mgpu_cnn_classes(&m->spec),
			 mgpu_cnn_classes(&m->spec), grad_scale));
	MGPU_TRY(o->sum_acc(m->dev, acc, m->row_loss, (size_t)B, 0, 1.0));
	return o->sum_acc(m->dev, acc + 1, m->row_correct, (size_t)B, 0, 1.0);
}

static const float *logits(const struct mgpu_model *m, size_t *per_row, size_t *width,
			   size_t *ld)
{
	const struct mgpu_cnn *c = m->fam;

	/* a linear's logits, or a conv's or tconv's maps (c, h, w) taken whole */
	*per_row = *width = *ld = vol(c->L[c->n - 1].out);
	return c->L[c->n - 1].y;
}

static void out_shape(const struct mgpu_spec *s, int shape[3])
{
	struct mgpu_cnn_shape sh[MGPU_CNN_MAX_LINES + 1];

	shape[0] = shape[1] = shape[2] = 0;
	if (mgpu_cnn_walk(s, sh, "cnn") == 0) {
		shape[0] = sh[s->ncnn].c;
		shape[1] = sh[s->ncnn].h;
		shape[2] = sh[s->ncnn].w;
	}
}

/* ---- backward ---------------------------------------------------------- */

/* dx (may be NULL: the input's gradient is not wanted) and the weight's
 * gradient from dy. */
static int conv_bwd(struct mgpu_model *m, struct cnn_conv *cv, int B, float *dx,
		    const float *dy, const float *x, float acc)
{
	const struct mgpu_ops *o = m->dev->ops;
	struct mgpu_conv g = cv->g;

	g.N = B;
	g.prec = (enum mgpu_prec)m->prec;
	MGPU_TRY(o->conv_bwd_weight(m->dev, &g, m->g + cv->w->off, cv->b ? m->g + cv->b->off : NULL,
				    x, dy, acc));
	return dx ? o->conv_bwd_data(m->dev, &g, dx, dy, m->w + cv->w->off) : 0;
}

/* BatchNorm backward: bn_bwd_stats makes this rank's (2, C) sums of dy
 * and dy xhat (and the parameters' gradients), mgpu_model_sum_stats sums
 * them over the ranks under --sync-bn (the cross-rank point of the
 * backward), bn_bwd_data uses them. */
static int bn_bwd(struct mgpu_model *m, struct cnn_norm *nm, int B, int HW, float *dx,
		  const float *dy, const float *x, float acc)
{
	const struct mgpu_ops *o = m->dev->ops;
	struct mgpu_bn bn = bn_desc(nm, B, HW, 1);

	MGPU_TRY(o->bn_bwd_stats(m->dev, &bn, nm->dstats, m->g + nm->gamma->off,
				 m->g + nm->beta->off, dy, x, nm->mean, nm->rstd, acc));
	MGPU_TRY(mgpu_model_sum_stats(m, nm->idx, nm->dstats, 2 * (size_t)nm->C));
	return o->bn_bwd_data(m->dev, &bn, dx, dy, x, nm->mean, nm->rstd, m->w + nm->gamma->off,
			      nm->dstats);
}

/* A res block: dy (in place: it becomes the sum's gradient) -> dx (NULL:
 * not wanted); t1, t2 scratch of the block's widest. Its norms go in the
 * reverse of their forward order (downsample, bn2, bn1): every backward
 * meets the ranks at its norms in the reverse of the forward's order. */
static int res_bwd(struct mgpu_model *m, struct cnn_line *L, int B, float *dx, float *dy,
		   float *t1, float *t2, float acc)
{
	const struct mgpu_ops *o = m->dev->ops;
	size_t n = (size_t)B * vol(L->out), nin = (size_t)B * vol(L->in);
	int HW = L->out.h * L->out.w;

	MGPU_TRY(o->act_bwd(m->dev, MGPU_ACT_RELU, dy, dy, L->y, n));
	if (L->proj.w) { /* the shortcut's gradient first, into dx */
		MGPU_TRY(bn_bwd(m, &L->pnm, B, HW, t1, dy, L->pc, acc));
		MGPU_TRY(conv_bwd(m, &L->proj, B, dx, t1, L->x_in, acc));
	}
	MGPU_TRY(bn_bwd(m, &L->nm2, B, HW, t1, dy, L->c2, acc));
	MGPU_TRY(conv_bwd(m, &L->conv2, B, t2, t1, L->r1, acc));
	MGPU_TRY(o->act_bwd(m->dev, MGPU_ACT_RELU, t2, t2, L->b1, n));
	MGPU_TRY(bn_bwd(m, &L->nm, B, HW, t1, t2, L->c1, acc));
	MGPU_TRY(conv_bwd(m, &L->conv, B, dx ? t2 : NULL, t1, L->x_in, acc));
	if (!dx)
		return 0;
	/* dx = the main branch's + the shortcut's (dy itself, or the projection's) */
	return o->add(m->dev, dx, t2, L->proj.w ? dx : dy, nin);
}

/* A transposed conv's backward: its weight's gradient is the transposed
 * convolution's with x and dy swapped, its dx that convolution forward. */
static int tconv_bwd(struct mgpu_model *m, struct cnn_line *L, int B, float *dx,
		     const float *dy, float acc)
{
	const struct mgpu_ops *o = m->dev->ops;
	struct cnn_conv *cv = &L->conv;
	struct mgpu_conv g = cv->g;

	g.N = B;
	g.prec = (enum mgpu_prec)m->prec;
	MGPU_TRY(o->conv_bwd_weight(m->dev, &g, m->g + cv->w->off, NULL, dy, L->x_in, acc));
	if (cv->b)
		MGPU_TRY(o->chan_sum(m->dev, B, g.C, g.H * g.W, m->g + cv->b->off, dy, acc));
	return dx ? o->conv_fwd(m->dev, &g, dx, dy, m->w + cv->w->off, NULL) : 0;
}

/* cat: dx gets the input's channels of dy; the save's dsave its own
 * (written by the save's last cat, added by earlier ones through t). */
static int cat_bwd(struct mgpu_model *m, struct cnn_line *L, int B, float *dx,
		   const float *dy, float *t)
{
	struct cnn_line *sv = &((struct mgpu_cnn *)m->fam)->L[L->ref];
	size_t a = vol(L->in), b = vol(sv->in);
	int ld = (int)vol(L->out);

	if (dx)
		MGPU_TRY(rows_split(m, dx, dy, ld, B, a));
	if (L->first_bwd)
		return rows_split(m, sv->dsave, dy + a, ld, B, b);
	MGPU_TRY(rows_split(m, t, dy + a, ld, B, b));
	return m->dev->ops->add(m->dev, sv->dsave, sv->dsave, t, (size_t)B * b);
}

/* Line i's backward: dy -> dx (NULL for the first line). */
static int line_bwd(struct mgpu_model *m, int i, int B, float *dx, float *dy, float acc)
{
	const struct mgpu_ops *o = m->dev->ops;
	struct mgpu_cnn *c = m->fam;
	struct cnn_line *L = &c->L[i];
	size_t n = (size_t)B * vol(L->out);
	int HW = L->in.h * L->in.w, in = (int)vol(L->in), N_ = L->out.c;
	struct mgpu_pool2d pg = L->pool;

	switch (L->op) {
	case MGPU_CNN_CONV:
		return conv_bwd(m, &L->conv, B, dx, dy, L->x_in, acc);
	case MGPU_CNN_BN:
		return bn_bwd(m, &L->nm, B, HW, dx ? dx : c->scr[2], dy, L->x_in, acc);
	case MGPU_CNN_GN:
		return o->gn_bwd(m->dev, B, L->nm.C, HW, L->nm.G, dx ? dx : c->scr[2],
				 m->g + L->nm.gamma->off, m->g + L->nm.beta->off, dy, L->x_in,
				 L->nm.mean, L->nm.rstd, m->w + L->nm.gamma->off, acc);
	case MGPU_CNN_RELU:
	case MGPU_CNN_SILU:
		return dx ? o->act_bwd(m->dev, L->op == MGPU_CNN_RELU ? MGPU_ACT_RELU :
									MGPU_ACT_SILU,
				       dx, dy, L->x_in, n) : 0;
	case MGPU_CNN_MAXPOOL:
	case MGPU_CNN_AVGPOOL:
	case MGPU_CNN_GAP:
		pg.N = B;
		return dx ? o->pool_bwd(m->dev, &pg, dx, dy, L->x_in) : 0;
	case MGPU_CNN_DROPOUT:
		return dx ? o->dropout(m->dev, dx, dy, n, L->p_drop, drop_seed(m, i),
				       m->row0 * (uint64_t)vol(L->out)) : 0;
	case MGPU_CNN_RES:
		return res_bwd(m, L, B, dx, dy, c->scr[2], c->scr[3], acc);
	case MGPU_CNN_UP:
		return dx ? o->upsample_bwd(m->dev, B, L->in.c, L->in.h, L->in.w,
					    L->out.h / L->in.h, L->up, dx, dy) : 0;
	case MGPU_CNN_TCONV:
		return tconv_bwd(m, L, B, dx, dy, acc);
	case MGPU_CNN_CAT:
		return cat_bwd(m, L, B, dx, dy, c->scr[2]);
	case MGPU_CNN_FLATTEN:
	case MGPU_CNN_SAVE:
		return 0; /* not reached: the backward passes dy on */
	case MGPU_CNN_LINEAR:
		MGPU_TRY(o->col_sum(m->dev, m->g + L->lb->off, dy, B, N_, acc));
		MGPU_TRY(mgpu_mm(m, MGPU_N, MGPU_T, in, N_, B, 1.0f, L->x_in, in, dy, N_, acc,
				 m->g + L->lw->off, in));
		return dx ? mgpu_mm(m, MGPU_N, MGPU_N, in, B, N_, 1.0f, m->w + L->lw->off, in, dy,
				    N_, 0.0f, dx, in) : 0;
	}
	return 0;
}

static int backward(struct mgpu_model *m, int B, int accumulate)
{
	struct mgpu_cnn *c = m->fam;
	float acc = accumulate ? 1.0f : 0.0f, *dy = m->dlogits, *dx;
	int i;

	for (i = c->n - 1; i >= 0; i--) {
		struct cnn_line *L = &c->L[i];
		const struct mgpu_bucket *b = L->ready >= 0 ? &m->buckets[L->ready] : NULL;
		/* passes dy on: flatten, a save (with its cats' gradient added),
		 * and a dropout that dropped nothing */
		int pass = L->op == MGPU_CNN_FLATTEN || L->op == MGPU_CNN_SAVE ||
			   (L->op == MGPU_CNN_DROPOUT && L->p_drop == 0.0f);

		if (L->op == MGPU_CNN_SAVE && i > 0)
			MGPU_TRY(m->dev->ops->add(m->dev, dy, dy, L->dsave, (size_t)B * vol(L->in)));
		dx = i == 0 || pass ? NULL : (dy == c->scr[0] ? c->scr[1] : c->scr[0]);
		if (!pass)
			MGPU_TRY(line_bwd(m, i, B, dx, dy, acc));
		if (b && m->grad_ready)
			MGPU_TRY(m->grad_ready(m->grad_ctx, L->ready, b->off, b->count));
		if (!pass)
			dy = dx;
	}
	return 0;
}

const struct mgpu_arch mgpu_arch_cnn = {
	.name = "cnn",
	.flags = MGPU_ARCH_NO_FP16,
	.parse = mgpu_cnn_spec_parse,
	.format = mgpu_cnn_spec_format,
	.fit = mgpu_cnn_spec_fit,
	.has_auto = mgpu_cnn_has_auto,
	.take_auto = mgpu_cnn_take_auto,
	.classes = mgpu_cnn_classes,
	.count = mgpu_cnn_count,
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
