/*
 * conv_cpu.c - the cpu backend's convolutions and pooling on oneDNN
 * (Debian's libdnnl 2.6, its C API; conv_host.h).
 *
 * Primitives are made once per device and shape and kept in a small cache
 * in the device's scratch (struct mgpu_cpu_scratch.dnnl), so a training
 * step reuses them; each holds memory objects without buffers whose data
 * handles are pointed at the caller's plain tensors (nchw, (g)oihw, x)
 * per call, or at the device's shared buffers for what lives only during
 * a call (blocked copies, scratchpads; struct state). Convolutions run in the layouts oneDNN prefers (blocked for
 * the vector width), through reorders made once and kept with the
 * primitive, and with oneDNN's direct algorithm (no Winograd: its rounding
 * differs from the formula's); pooling runs on the plain layouts, forward for training plus its backward on the workspace the
 * forward leaves (max pooling's winners), recomputed from x in pool_bwd as
 * ops.h defines it. oneDNN overwrites its outputs, so conv_bwd_weight with
 * acc != 0 computes into the entry's own buffers and adds.
 * A bf16 convolution (g->prec) asks oneDNN for bf16 inputs and f32
 * outputs: the reorders from the caller's f32 tensors round them (to
 * nearest even, as elem.h) and AVX512-BF16 or AMX multiply. Where this
 * oneDNN has no bf16 convolution for the CPU (AVX2 and older, or
 * ONEDNN_MAX_CPU_ISA), the entry says so and the call rounds its inputs
 * into the state's f32 buffers and runs the f32 primitive: the same
 * arithmetic (a product of bf16 values is exact in fp32).
 * One thread per rank: oneDNN runs on OpenMP, set to one thread by cpu's
 * init for the calling thread.
 */
#include "ops/conv_host.h"

#include <dnnl.h>       /* dnnl_* C API */
#include <stdlib.h>     /* calloc, free */
#include <string.h>     /* memcmp, memset */

#include "core/err.h"      /* mgpu_err, MGPU_TRY */
#include "ops/dnnl_call.h" /* DNNL, mgpu_dnnl_unconst */
#include "ops/elem.h"      /* mgpu_acc_store, mgpu_bf16_round */
#include "ops/loops.h"     /* ops_check_conv, ops_check_pool */
#include "ops/ops_cpu.h"   /* mgpu_cpu_scratch */

#define CACHE 64
#define MAXARG 6

enum kind { CONV_FWD, CONV_BWD_DATA, CONV_BWD_WEIGHT, POOL };

/* What identifies a primitive: compared bytewise, so always memset first. */
struct key {
	enum kind kind;
	int with_bias;
	struct mgpu_conv cg;
	struct mgpu_pool2d pg;
};

struct entry {
	int used;
	struct key key;
	dnnl_primitive_t prim, prim_bwd; /* pooling: forward (training), backward */
	dnnl_memory_t mem[MAXARG];       /* what the primitive reads or writes */
	dnnl_memory_t user[MAXARG];      /* the caller's plain tensor, where mem differs */
	dnnl_primitive_t reorder[MAXARG]; /* user -> mem (inputs) or mem -> user (outputs) */
	int out[MAXARG];                 /* argument i is an output */
	size_t need[MAXARG];             /* bytes of mem[i]'s own layout, 0: the caller's */
	dnnl_memory_t pad[2];            /* scratchpads of prim, prim_bwd (or NULL) */
	int arg[MAXARG], nfwd, nbwd;     /* arguments: [0, nfwd) forward, then backward */
	void *ws;                        /* pooling's workspace, its forward output */
	float *tmp_w, *tmp_b;            /* conv_bwd_weight's sums when acc != 0 */
	float *tmp_y;
	int emulate;                     /* bf16 without a oneDNN primitive: no prim */
};

/* The blocked copies and scratchpads live only during a call, so every
 * primitive shares the device's few buffers (buf[i] for the i-th
 * argument of a call, buf[MAXARG] the scratchpad), grown on demand: a
 * net's memory grows by its largest layer's, not by every layer's. */
struct state {
	dnnl_engine_t eng;
	dnnl_stream_t strm;
	dnnl_primitive_attr_t attr; /* scratchpad supplied by us */
	void *buf[MAXARG + 1];
	size_t cap[MAXARG + 1];
	float *rnd[2];   /* an emulated bf16 call's rounded inputs */
	size_t rnd_cap[2];
	struct entry e[CACHE];
	int next; /* the entry replaced when the cache is full */
};

static void entry_free(struct entry *e)
{
	int i;

	if (e->prim)
		dnnl_primitive_destroy(e->prim);
	if (e->prim_bwd)
		dnnl_primitive_destroy(e->prim_bwd);
	for (i = 0; i < MAXARG; i++) {
		if (e->mem[i])
			dnnl_memory_destroy(e->mem[i]);
		if (e->user[i])
			dnnl_memory_destroy(e->user[i]);
		if (e->reorder[i])
			dnnl_primitive_destroy(e->reorder[i]);
	}
	for (i = 0; i < 2; i++)
		if (e->pad[i])
			dnnl_memory_destroy(e->pad[i]);
	free(e->ws);
	free(e->tmp_w);
	free(e->tmp_b);
	free(e->tmp_y);
	memset(e, 0, sizeof *e);
}

void mgpu_cpu_dnnl_release(void *state)
{
	struct state *s = state;
	int i;

	if (!s)
		return;
	for (i = 0; i < CACHE; i++)
		entry_free(&s->e[i]);
	for (i = 0; i <= MAXARG; i++)
		free(s->buf[i]);
	free(s->rnd[0]);
	free(s->rnd[1]);
	if (s->attr)
		dnnl_primitive_attr_destroy(s->attr);
	if (s->strm)
		dnnl_stream_destroy(s->strm);
	if (s->eng)
		dnnl_engine_destroy(s->eng);
	free(s);
}

static int state_of(struct mgpu_dev *dev, struct state **out)
{
	struct mgpu_cpu_scratch *sc;
	struct state *s;

	MGPU_TRY(mgpu_cpu_scratch(dev, &sc));
	if (!sc->dnnl) {
		s = calloc(1, sizeof *s);
		if (!s)
			return mgpu_err(MGPU_ENOMEM, "cpu: out of memory");
		sc->dnnl = s;
		DNNL(dnnl_engine_create(&s->eng, dnnl_cpu, 0));
		DNNL(dnnl_stream_create(&s->strm, s->eng, dnnl_stream_default_flags));
		DNNL(dnnl_primitive_attr_create(&s->attr));
		DNNL(dnnl_primitive_attr_set_scratchpad_mode(s->attr, dnnl_scratchpad_mode_user));
	}
	*out = sc->dnnl;
	return 0;
}

/* Argument `arg` of entry e, laid out as the primitive descriptor chose;
 * where that differs from the caller's plain layout (a blocked one, made
 * for the vector width), a buffer of the entry and a cached reorder
 * between the two. */
static int bind_as(struct state *s, struct entry *e, const_dnnl_primitive_desc_t pd, int arg,
		   const dnnl_memory_desc_t *plain, int out)
{
	const dnnl_memory_desc_t *md = dnnl_primitive_desc_query_md(pd, dnnl_query_exec_arg_md, arg);
	dnnl_primitive_desc_t rpd;
	int i = e->nfwd + e->nbwd;

	if (!md || i == MAXARG)
		return mgpu_err(MGPU_EDEVICE, "oneDNN: no memory for argument %d", arg);
	e->arg[i] = arg;
	e->out[i] = out;
	if (!plain || dnnl_memory_desc_equal(md, plain)) {
		DNNL(dnnl_memory_create(&e->mem[i], md, s->eng, DNNL_MEMORY_NONE));
		return 0;
	}
	e->need[i] = dnnl_memory_desc_get_size(md);
	DNNL(dnnl_memory_create(&e->mem[i], md, s->eng, DNNL_MEMORY_NONE));
	DNNL(dnnl_memory_create(&e->user[i], plain, s->eng, DNNL_MEMORY_NONE));
	DNNL(out ? dnnl_reorder_primitive_desc_create(&rpd, md, s->eng, plain, s->eng, NULL)
		 : dnnl_reorder_primitive_desc_create(&rpd, plain, s->eng, md, s->eng, NULL));
	if (dnnl_primitive_create(&e->reorder[i], rpd) != dnnl_success) {
		dnnl_primitive_desc_destroy(rpd);
		return mgpu_err(MGPU_EDEVICE, "oneDNN: creating a reorder failed");
	}
	dnnl_primitive_desc_destroy(rpd);
	return 0;
}

/* An argument in the caller's layout already (pooling, workspaces). */
static int bind(struct state *s, struct entry *e, const_dnnl_primitive_desc_t pd, int arg)
{
	return bind_as(s, e, pd, arg, NULL, 0);
}

/* The scratchpad primitive `which` (0: prim, 1: prim_bwd) of e asks for. */
static int bind_pad(struct state *s, struct entry *e, const_dnnl_primitive_desc_t pd, int which)
{
	const dnnl_memory_desc_t *md = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);

	if (md && dnnl_memory_desc_get_size(md) > 0)
		DNNL(dnnl_memory_create(&e->pad[which], md, s->eng, DNNL_MEMORY_NONE));
	return 0;
}

static int make_prim(dnnl_primitive_t *prim, dnnl_primitive_desc_t pd)
{
	dnnl_status_t rc = dnnl_primitive_create(prim, pd);

	if (rc != dnnl_success)
		return mgpu_err(MGPU_EDEVICE, "oneDNN: creating a primitive failed: %s",
				dnnl_status2str(rc));
	return 0;
}

static void md4(dnnl_memory_desc_t *md, dnnl_dim_t a, dnnl_dim_t b, dnnl_dim_t c, dnnl_dim_t d)
{
	dnnl_dims_t dims = { a, b, c, d };

	dnnl_memory_desc_init_by_tag(md, 4, dims, dnnl_f32, dnnl_nchw);
}

/* The three convolution descriptors share their memory descriptors: the
 * caller's plain ones (x, w, y) and layout-free ones (ax, aw, ay) that let
 * oneDNN pick its blocked layouts (nChw16c and friends, 2x the plain
 * layout's speed on AVX-512 at 64 channels, reorders included). */
struct conv_mds {
	dnnl_memory_desc_t x, w, b, y, ax, aw, ay;
	dnnl_dims_t strides, dil, pad;
};

/* The types oneDNN computes in for direction kind: under bf16 the inputs
 * (x, w forward; dy, w backward data; x, dy backward weights) bf16, the
 * outputs f32; everything f32 in fp32. The bias stays f32. */
static void conv_types(const struct mgpu_conv *g, enum kind kind, dnnl_data_type_t *x,
		       dnnl_data_type_t *w, dnnl_data_type_t *y)
{
	dnnl_data_type_t in = g->prec == MGPU_PREC_BF16 ? dnnl_bf16 : dnnl_f32;

	*x = kind == CONV_BWD_DATA ? dnnl_f32 : in;
	*w = kind == CONV_BWD_WEIGHT ? dnnl_f32 : in;
	*y = kind == CONV_FWD ? dnnl_f32 : in;
}

static void conv_mds(const struct mgpu_conv *g, enum kind kind, struct conv_mds *m)
{
	dnnl_data_type_t tx, tw, ty;
	int OH = MGPU_CONV_OUT(g->H, g->KH, g->sh, g->ph, g->dh);
	int OW = MGPU_CONV_OUT(g->W, g->KW, g->sw, g->pw, g->dw);
	dnnl_dims_t wg = { g->groups, g->K / g->groups, g->C / g->groups, g->KH, g->KW };
	dnnl_dims_t bk = { g->K };

	dnnl_dims_t xd = { g->N, g->C, g->H, g->W }, yd = { g->N, g->K, OH, OW };
	dnnl_dims_t wd = { g->K, g->C, g->KH, g->KW };

	conv_types(g, kind, &tx, &tw, &ty);
	md4(&m->x, g->N, g->C, g->H, g->W);
	md4(&m->y, g->N, g->K, OH, OW);
	dnnl_memory_desc_init_by_tag(&m->ax, 4, xd, tx, dnnl_format_tag_any);
	dnnl_memory_desc_init_by_tag(&m->ay, 4, yd, ty, dnnl_format_tag_any);
	if (g->groups == 1) {
		md4(&m->w, g->K, g->C, g->KH, g->KW);
		dnnl_memory_desc_init_by_tag(&m->aw, 4, wd, tw, dnnl_format_tag_any);
	} else {
		dnnl_memory_desc_init_by_tag(&m->w, 5, wg, dnnl_f32, dnnl_goihw);
		dnnl_memory_desc_init_by_tag(&m->aw, 5, wg, tw, dnnl_format_tag_any);
	}
	dnnl_memory_desc_init_by_tag(&m->b, 1, bk, dnnl_f32, dnnl_x);
	m->strides[0] = g->sh;
	m->strides[1] = g->sw;
	m->dil[0] = g->dh - 1; /* oneDNN counts the gaps: 0 is no dilation */
	m->dil[1] = g->dw - 1;
	m->pad[0] = g->ph; /* the same on the right: the floor of ops.h's extent */
	m->pad[1] = g->pw;
}

/* The forward descriptor, also the hint of both backward ones; its
 * status (dnnl_unimplemented: no such convolution here). */
static dnnl_status_t conv_fwd_pd(struct state *s, const struct conv_mds *m, int with_bias,
				 dnnl_primitive_desc_t *pd)
{
	dnnl_convolution_desc_t d;
	dnnl_status_t rc;

	*pd = NULL;
	rc = dnnl_dilated_convolution_forward_desc_init(
		&d, dnnl_forward_training, dnnl_convolution_direct, &m->ax, &m->aw,
		with_bias ? &m->b : NULL, &m->ay, m->strides, m->dil, m->pad, m->pad);
	if (rc == dnnl_success)
		rc = dnnl_primitive_desc_create(pd, &d, s->attr, s->eng, NULL);
	return rc;
}

/* The next forward argument of e in the caller's layout plain, while
 * everything before succeeded. */
#define BIND(arg, plain, out)                                                   \
	do {                                                                    \
		if (rc == 0)                                                    \
			rc = bind_as(s, e, pd, (arg), (plain), (out));          \
		e->nfwd += rc == 0;                                             \
	} while (0)

static int conv_entry(struct state *s, struct entry *e)
{
	const struct mgpu_conv *g = &e->key.cg;
	dnnl_primitive_desc_t fpd = NULL, pd = NULL;
	dnnl_convolution_desc_t d;
	struct conv_mds m, mf;
	int rc;

	conv_mds(g, e->key.kind, &m);
	conv_mds(g, CONV_FWD, &mf);
	rc = conv_fwd_pd(s, &mf, e->key.with_bias, &fpd);
	if (rc == dnnl_success && e->key.kind == CONV_FWD) {
		pd = fpd;
		fpd = NULL;
	} else if (rc == dnnl_success && e->key.kind == CONV_BWD_DATA) {
		rc = dnnl_dilated_convolution_backward_data_desc_init(
			&d, dnnl_convolution_direct, &m.ax, &m.aw, &m.ay, m.strides, m.dil, m.pad,
			m.pad);
		if (rc == dnnl_success)
			rc = dnnl_primitive_desc_create(&pd, &d, s->attr, s->eng, fpd);
	} else if (rc == dnnl_success) {
		rc = dnnl_dilated_convolution_backward_weights_desc_init(
			&d, dnnl_convolution_direct, &m.ax, &m.aw, e->key.with_bias ? &m.b : NULL,
			&m.ay, m.strides, m.dil, m.pad, m.pad);
		if (rc == dnnl_success)
			rc = dnnl_primitive_desc_create(&pd, &d, s->attr, s->eng, fpd);
	}
	if (fpd)
		dnnl_primitive_desc_destroy(fpd);
	if (!pd && rc == dnnl_unimplemented && g->prec == MGPU_PREC_BF16) {
		e->emulate = 1; /* rounded inputs on the f32 primitive */
		return 0;
	}
	if (!pd)
		return mgpu_err(rc == dnnl_out_of_memory ? MGPU_ENOMEM : MGPU_EDEVICE,
				"oneDNN: no %s convolution for %dx%d kernel, groups %d: %s",
				mgpu_prec_name(g->prec), g->KH, g->KW, g->groups,
				dnnl_status2str((dnnl_status_t)rc));
	rc = make_prim(&e->prim, pd);
	if (rc == 0)
		rc = bind_pad(s, e, pd, 0);
	if (e->key.kind == CONV_FWD) {
		BIND(DNNL_ARG_SRC, &m.x, 0);
		BIND(DNNL_ARG_WEIGHTS, &m.w, 0);
		if (e->key.with_bias)
			BIND(DNNL_ARG_BIAS, &m.b, 0);
		BIND(DNNL_ARG_DST, &m.y, 1);
	} else if (e->key.kind == CONV_BWD_DATA) {
		BIND(DNNL_ARG_DIFF_DST, &m.y, 0);
		BIND(DNNL_ARG_WEIGHTS, &m.w, 0);
		BIND(DNNL_ARG_DIFF_SRC, &m.x, 1);
	} else {
		BIND(DNNL_ARG_SRC, &m.x, 0);
		BIND(DNNL_ARG_DIFF_DST, &m.y, 0);
		BIND(DNNL_ARG_DIFF_WEIGHTS, &m.w, 1);
		if (e->key.with_bias)
			BIND(DNNL_ARG_DIFF_BIAS, &m.b, 1);
	}
	dnnl_primitive_desc_destroy(pd);
	return rc;
}

static int pool_entry(struct state *s, struct entry *e)
{
	const struct mgpu_pool2d *g = &e->key.pg;
	static const dnnl_alg_kind_t alg[] = { dnnl_pooling_max, dnnl_pooling_avg_include_padding,
					       dnnl_pooling_avg_exclude_padding };
	int OH = MGPU_CONV_OUT(g->H, g->KH, g->sh, g->ph, 1);
	int OW = MGPU_CONV_OUT(g->W, g->KW, g->sw, g->pw, 1);
	dnnl_dims_t strides = { g->sh, g->sw }, kernel = { g->KH, g->KW }, pad = { g->ph, g->pw };
	dnnl_primitive_desc_t fpd = NULL, bpd = NULL;
	dnnl_memory_desc_t x, y;
	const dnnl_memory_desc_t *wmd;
	dnnl_pooling_desc_t d;
	int rc;

	md4(&x, g->N, g->C, g->H, g->W);
	md4(&y, g->N, g->C, OH, OW);
	DNNL(dnnl_pooling_forward_desc_init(&d, dnnl_forward_training, alg[g->mode], &x, &y,
					    strides, kernel, pad, pad));
	DNNL(dnnl_primitive_desc_create(&fpd, &d, s->attr, s->eng, NULL));
	rc = dnnl_pooling_backward_desc_init(&d, alg[g->mode], &x, &y, strides, kernel, pad, pad);
	if (rc == dnnl_success)
		rc = dnnl_primitive_desc_create(&bpd, &d, s->attr, s->eng, fpd);
	if (rc != dnnl_success) {
		dnnl_primitive_desc_destroy(fpd);
		return mgpu_err(MGPU_EDEVICE, "oneDNN: no pooling backward: %s",
				dnnl_status2str((dnnl_status_t)rc));
	}
	rc = make_prim(&e->prim, fpd);
	if (rc == 0)
		rc = make_prim(&e->prim_bwd, bpd);
	if (rc == 0)
		rc = bind_pad(s, e, fpd, 0);
	if (rc == 0)
		rc = bind_pad(s, e, bpd, 1);
	wmd = dnnl_primitive_desc_query_md(fpd, dnnl_query_workspace_md, 0);
	if (rc == 0 && wmd && dnnl_memory_desc_get_size(wmd) > 0) {
		e->ws = calloc(1, dnnl_memory_desc_get_size(wmd));
		if (!e->ws)
			rc = mgpu_err(MGPU_ENOMEM, "cpu: out of memory for a pooling workspace");
	}
	/* forward: SRC, DST (+ WORKSPACE); backward: DIFF_DST, DIFF_SRC (+ WORKSPACE) */
	if (rc == 0)
		rc = bind(s, e, fpd, DNNL_ARG_SRC);
	e->nfwd += rc == 0;
	if (rc == 0)
		rc = bind(s, e, fpd, DNNL_ARG_DST);
	e->nfwd += rc == 0;
	if (rc == 0 && e->ws) {
		rc = bind(s, e, fpd, DNNL_ARG_WORKSPACE);
		e->nfwd += rc == 0;
	}
	if (rc == 0)
		rc = bind(s, e, bpd, DNNL_ARG_DIFF_DST);
	e->nbwd += rc == 0;
	if (rc == 0)
		rc = bind(s, e, bpd, DNNL_ARG_DIFF_SRC);
	e->nbwd += rc == 0;
	if (rc == 0 && e->ws) {
		rc = bind(s, e, bpd, DNNL_ARG_WORKSPACE);
		e->nbwd += rc == 0;
	}
	dnnl_primitive_desc_destroy(fpd);
	dnnl_primitive_desc_destroy(bpd);
	return rc;
}

/* The cached entry for key, made on a miss (replacing the oldest when the
 * cache is full). */
static int lookup(struct mgpu_dev *dev, const struct key *k, struct state **ps,
		  struct entry **out)
{
	struct state *s = NULL;
	struct entry *e;
	int i, rc;

	MGPU_TRY(state_of(dev, &s));
	*ps = s;
	for (i = 0; i < CACHE; i++)
		if (s->e[i].used && memcmp(&s->e[i].key, k, sizeof *k) == 0) {
			*out = &s->e[i];
			return 0;
		}
	e = &s->e[s->next];
	s->next = (s->next + 1) % CACHE;
	entry_free(e);
	e->key = *k;
	rc = k->kind == POOL ? pool_entry(s, e) : conv_entry(s, e);
	if (rc < 0) {
		entry_free(e);
		return rc;
	}
	e->used = 1;
	*out = e;
	return 0;
}

/* Reorder argument i between the caller's tensor and the primitive's. */
static int reorder(struct state *s, struct entry *e, int i)
{
	dnnl_exec_arg_t a[2] = { { DNNL_ARG_FROM, e->out[i] ? e->mem[i] : e->user[i] },
				 { DNNL_ARG_TO, e->out[i] ? e->user[i] : e->mem[i] } };

	DNNL(dnnl_primitive_execute(e->reorder[i], s->strm, 2, a));
	return 0;
}

/* state buffer i holding at least nbytes; *p its address. */
static int shared_buf(struct state *s, int i, size_t nbytes, void **p)
{
	void *q;

	if (s->cap[i] < nbytes) {
		free(s->buf[i]);
		s->cap[i] = 0;
		if (posix_memalign(&q, 64, nbytes) != 0)
			return mgpu_err(MGPU_ENOMEM, "cpu: out of memory for %zu bytes of "
					"oneDNN buffers", nbytes);
		s->buf[i] = q;
		s->cap[i] = nbytes;
	}
	*p = s->buf[i];
	return 0;
}

/* Run prim with the entry's arguments [from, from + n) on handles h:
 * inputs reordered in, the primitive, outputs reordered out. */
static int run(struct state *s, struct entry *e, dnnl_primitive_t prim, int from, int n,
	       void *const *h)
{
	dnnl_exec_arg_t a[MAXARG + 1] = { { 0, NULL } };
	dnnl_memory_t pad = e->pad[prim == e->prim_bwd];
	void *p;
	int i, k, na = n;

	for (i = 0; i < n; i++) {
		k = from + i;
		DNNL(dnnl_memory_set_data_handle(e->user[k] ? e->user[k] : e->mem[k], h[i]));
		if (e->need[k]) {
			MGPU_TRY(shared_buf(s, i, e->need[k], &p));
			DNNL(dnnl_memory_set_data_handle(e->mem[k], p));
		}
		if (e->reorder[k] && !e->out[k])
			MGPU_TRY(reorder(s, e, k));
		a[i].arg = e->arg[k];
		a[i].memory = e->mem[k];
	}
	if (pad) {
		const dnnl_memory_desc_t *md;

		DNNL(dnnl_memory_get_memory_desc(pad, &md));
		MGPU_TRY(shared_buf(s, MAXARG, dnnl_memory_desc_get_size(md), &p));
		DNNL(dnnl_memory_set_data_handle(pad, p));
		a[na].arg = DNNL_ARG_SCRATCHPAD;
		a[na++].memory = pad;
	}
	DNNL(dnnl_primitive_execute(prim, s->strm, na, a));
	for (i = 0; i < n; i++)
		if (e->reorder[from + i] && e->out[from + i])
			MGPU_TRY(reorder(s, e, from + i));
	DNNL(dnnl_stream_wait(s->strm));
	return 0;
}

/* Input i of an emulated bf16 call: p (n floats) rounded into the
 * state's buffer i (elem.h's rounding, as oneDNN's reorders round). */
static int round_into(struct state *s, int i, const float *p, size_t n, const float **out)
{
	size_t j;

	MGPU_TRY(mgpu_cpu_grow(&s->rnd[i], &s->rnd_cap[i], n));
	for (j = 0; j < n; j++)
		s->rnd[i][j] = mgpu_bf16_round(p[j]);
	*out = s->rnd[i];
	return 0;
}

/* g as the f32 primitive of an emulated call sees it, and the element
 * counts of x, w and y. */
static struct mgpu_conv emulated(const struct mgpu_conv *g, size_t *nx, size_t *nw, size_t *ny)
{
	struct mgpu_conv f = *g;

	f.prec = MGPU_PREC_FP32;
	*nx = (size_t)g->N * g->C * g->H * g->W;
	*nw = (size_t)g->K * (g->C / g->groups) * g->KH * g->KW;
	*ny = (size_t)g->N * g->K * MGPU_CONV_OUT(g->H, g->KH, g->sh, g->ph, g->dh) *
	      MGPU_CONV_OUT(g->W, g->KW, g->sw, g->pw, g->dw);
	return f;
}

static void conv_key(struct key *k, enum kind kind, const struct mgpu_conv *g, int with_bias)
{
	memset(k, 0, sizeof *k);
	k->kind = kind;
	k->with_bias = with_bias;
	k->cg = *g;
}

int mgpu_cpu_conv_fwd(struct mgpu_dev *dev, const struct mgpu_conv *g, float *y, const float *x,
		      const float *w, const float *bias)
{
	struct state *s;
	struct entry *e;
	struct key k;
	void *h[4];
	int n = 0;

	MGPU_TRY(ops_check_conv("conv_fwd", g));
	if (g->N == 0)
		return 0;
	conv_key(&k, CONV_FWD, g, bias != NULL);
	MGPU_TRY(lookup(dev, &k, &s, &e));
	if (e->emulate) {
		size_t nx, nw, ny;
		struct mgpu_conv f = emulated(g, &nx, &nw, &ny);

		MGPU_TRY(round_into(s, 0, x, nx, &x));
		MGPU_TRY(round_into(s, 1, w, nw, &w));
		return mgpu_cpu_conv_fwd(dev, &f, y, x, w, bias);
	}
	h[n++] = mgpu_dnnl_unconst(x);
	h[n++] = mgpu_dnnl_unconst(w);
	if (bias)
		h[n++] = mgpu_dnnl_unconst(bias);
	h[n++] = y;
	return run(s, e, e->prim, 0, e->nfwd, h);
}

int mgpu_cpu_conv_bwd_data(struct mgpu_dev *dev, const struct mgpu_conv *g, float *dx,
			   const float *dy, const float *w)
{
	struct state *s;
	struct entry *e;
	struct key k;
	void *h[3];

	MGPU_TRY(ops_check_conv("conv_bwd_data", g));
	if (g->N == 0)
		return 0;
	conv_key(&k, CONV_BWD_DATA, g, 0);
	MGPU_TRY(lookup(dev, &k, &s, &e));
	if (e->emulate) {
		size_t nx, nw, ny;
		struct mgpu_conv f = emulated(g, &nx, &nw, &ny);

		MGPU_TRY(round_into(s, 0, dy, ny, &dy));
		MGPU_TRY(round_into(s, 1, w, nw, &w));
		return mgpu_cpu_conv_bwd_data(dev, &f, dx, dy, w);
	}
	h[0] = mgpu_dnnl_unconst(dy);
	h[1] = mgpu_dnnl_unconst(w);
	h[2] = dx;
	return run(s, e, e->prim, 0, e->nfwd, h);
}

static int grow(float **p, size_t n)
{
	if (!*p && !(*p = malloc(n ? n * sizeof **p : 1)))
		return mgpu_err(MGPU_ENOMEM, "cpu: out of memory");
	return 0;
}

int mgpu_cpu_conv_bwd_weight(struct mgpu_dev *dev, const struct mgpu_conv *g, float *dw,
			     float *db, const float *x, const float *dy, float acc)
{
	size_t nw, i;
	struct state *s;
	struct entry *e;
	struct key k;
	void *h[4];
	int n = 0;

	MGPU_TRY(ops_check_conv("conv_bwd_weight", g));
	nw = (size_t)g->K * (g->C / g->groups) * g->KH * g->KW;
	if (g->N == 0) {
		for (i = 0; i < nw; i++)
			mgpu_acc_store(&dw[i], acc, 0.0f);
		for (i = 0; db && i < (size_t)g->K; i++)
			mgpu_acc_store(&db[i], acc, 0.0f);
		return 0;
	}
	conv_key(&k, CONV_BWD_WEIGHT, g, db != NULL);
	MGPU_TRY(lookup(dev, &k, &s, &e));
	if (e->emulate) {
		size_t nx, ny;
		struct mgpu_conv f = emulated(g, &nx, &nw, &ny);

		MGPU_TRY(round_into(s, 0, x, nx, &x));
		MGPU_TRY(round_into(s, 1, dy, ny, &dy));
		return mgpu_cpu_conv_bwd_weight(dev, &f, dw, db, x, dy, acc);
	}
	if (acc != 0.0f) {
		MGPU_TRY(grow(&e->tmp_w, nw));
		if (db)
			MGPU_TRY(grow(&e->tmp_b, (size_t)g->K));
	}
	h[n++] = mgpu_dnnl_unconst(x);
	h[n++] = mgpu_dnnl_unconst(dy);
	h[n++] = acc != 0.0f ? e->tmp_w : dw;
	if (db)
		h[n++] = acc != 0.0f ? e->tmp_b : db;
	MGPU_TRY(run(s, e, e->prim, 0, e->nfwd, h));
	if (acc == 0.0f)
		return 0;
	for (i = 0; i < nw; i++)
		dw[i] = acc * dw[i] + e->tmp_w[i];
	for (i = 0; db && i < (size_t)g->K; i++)
		db[i] = acc * db[i] + e->tmp_b[i];
	return 0;
}

static int pool_lookup(struct mgpu_dev *dev, const struct mgpu_pool2d *g, struct state **s,
		       struct entry **e)
{
	struct key k;

	memset(&k, 0, sizeof k);
	k.kind = POOL;
	k.pg = *g;
	return lookup(dev, &k, s, e);
}

int mgpu_cpu_pool_fwd(struct mgpu_dev *dev, const struct mgpu_pool2d *g, float *y,
		      const float *x)
{
	struct state *s;
	struct entry *e;
	void *h[3];

	MGPU_TRY(ops_check_pool("pool_fwd", g));
	if ((size_t)g->N * g->C == 0)
		return 0;
	MGPU_TRY(pool_lookup(dev, g, &s, &e));
	h[0] = mgpu_dnnl_unconst(x);
	h[1] = y;
	h[2] = e->ws;
	return run(s, e, e->prim, 0, e->nfwd, h);
}

/* The forward again for max pooling's workspace (its winners), then the
 * backward: ops.h's pool_bwd takes x, not a saved workspace. */
int mgpu_cpu_pool_bwd(struct mgpu_dev *dev, const struct mgpu_pool2d *g, float *dx,
		      const float *dy, const float *x)
{
	struct state *s;
	struct entry *e;
	void *h[3];
	size_t ny;

	MGPU_TRY(ops_check_pool("pool_bwd", g));
	if ((size_t)g->N * g->C == 0)
		return 0;
	MGPU_TRY(pool_lookup(dev, g, &s, &e));
	if (e->ws) {
		ny = (size_t)g->N * g->C * MGPU_CONV_OUT(g->H, g->KH, g->sh, g->ph, 1) *
		     MGPU_CONV_OUT(g->W, g->KW, g->sw, g->pw, 1);
		MGPU_TRY(grow(&e->tmp_y, ny));
		h[0] = mgpu_dnnl_unconst(x);
		h[1] = e->tmp_y;
		h[2] = e->ws;
		MGPU_TRY(run(s, e, e->prim, 0, e->nfwd, h));
	}
	h[0] = mgpu_dnnl_unconst(dy);
	h[1] = dx;
	h[2] = e->ws;
	MGPU_TRY(run(s, e, e->prim_bwd, e->nfwd, e->nbwd, h));
	return 0;
}
