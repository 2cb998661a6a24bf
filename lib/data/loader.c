/*
 * loader.c - prefetching batch loader (see loader.h).
 *
 * Batch b of a pass lives in slot b % ring. A worker takes the next batch
 * to fill only when its slot is free, i.e. b < released + ring, where
 * released counts the batches the consumer is done with; the consumer waits
 * until its batch's slot is READY, or fetches the batch itself when no
 * worker has started it (workers starved of CPU then cost no extra wait). One mutex and one condition variable
 * guard the counters and slot states; the fetch itself runs unlocked.
 */
#include "data/loader.h"

#include <stdio.h>  /* snprintf */
#include <stdlib.h> /* calloc, malloc, free */
#include <string.h> /* memset */

#include "core/clock.h"   /* mgpu_now_ms */
#include "core/err.h"     /* mgpu_err */
#include "data/target.h"  /* mgpu_keypoints_render, MGPU_TARGET_* */

enum { FREE, FILLING, READY };

struct mgpu_loader_slot {
	unsigned char *x;
	unsigned char *scratch;      /* the augmentation's (mgpu_augment_scratch_nbytes) */
	int32_t *y;
	unsigned char *t;            /* targets as stored (moved by the augmentation) */
	int32_t *mask;               /* MASK: class ids, -1 ignored */
	float *maps, *weight;        /* KEYPOINTS: rendered */
	int64_t batch;
	int n, state, rc;
	char err[512];
};

/* Keypoint maps' extent along an axis of n pixels. */
static int map_extent(uint32_t n, int stride)
{
	return (int)((n + (uint32_t)stride - 1) / (uint32_t)stride);
}

/* What the loss takes from n stored targets in s->t. */
static void render(const struct mgpu_loader *l, struct mgpu_loader_slot *s, size_t n)
{
	const struct mgpu_source *src = l->src;
	size_t i, hw = (size_t)src->tshape[0] * (src->tkind == MGPU_TARGET_MASK ?
						  src->tshape[1] : 0);
	int P = (int)src->tshape[0], h, w;

	if (src->tkind == MGPU_TARGET_MASK)
		for (i = 0; i < n * hw; i++)
			s->mask[i] = s->t[i] == 255 ? -1 : (int32_t)s->t[i];
	if (src->tkind != MGPU_TARGET_KEYPOINTS)
		return;
	h = map_extent(src->shape[1], l->topt.stride);
	w = map_extent(src->shape[2], l->topt.stride);
	for (i = 0; i < n; i++)
		mgpu_keypoints_render((const float *)(const void *)(s->t + i * src->t_nbytes), P, h,
				      w, l->topt.stride, l->topt.sigma,
				      s->maps + i * (size_t)P * h * w, s->weight + i * (size_t)P);
}

/* Fetch batch b into slot s (no lock held). */
static void fill(struct mgpu_loader *l, struct mgpu_loader_slot *s, int64_t b)
{
	size_t first = (size_t)b * (size_t)l->batch;
	size_t n = l->nrows - first < (size_t)l->batch ? l->nrows - first : (size_t)l->batch;
	const struct mgpu_source *src = l->src;

	s->n = (int)n;
	s->rc = mgpu_source_rows_t(l->src, l->split, l->order + first, n, s->x, s->y, s->t);
	if (s->rc == 0 && l->split == MGPU_SPLIT_TRAIN && mgpu_augment_on(&l->aug))
		mgpu_augment_rows_t(&l->aug, l->aug_seed, (uint64_t)l->epoch, l->order + first, n,
				    s->x, src->dtype, src->shape, l->aug_pad, src->tkind,
				    src->tshape, s->t, src->t_nbytes, s->scratch);
	if (s->rc == 0 && src->tkind)
		render(l, s, n);
	if (s->rc < 0)
		snprintf(s->err, sizeof s->err, "%s", mgpu_errmsg());
}

/* Fill batch b into slot s, the caller holding mu: unlocked while the rows
 * are fetched, locked again on return with the slot READY. */
static void fill_unlocked(struct mgpu_loader *l, struct mgpu_loader_slot *s, int64_t b)
{
	s->state = FILLING;
	s->batch = b;
	pthread_mutex_unlock(&l->mu);
	fill(l, s, b);
	pthread_mutex_lock(&l->mu);
	s->state = READY;
}

static void *worker(void *arg)
{
	struct mgpu_loader *l = arg;
	struct mgpu_loader_slot *s;
	int64_t b;

	pthread_mutex_lock(&l->mu);
	for (;;) {
		while (!l->stop && !(l->next_fill < l->nbatches &&
				     l->next_fill < l->released + l->ring))
			pthread_cond_wait(&l->cv, &l->mu);
		if (l->stop)
			break;
		b = l->next_fill++;
		s = &l->slot[b % l->ring];
		fill_unlocked(l, s, b);
		pthread_cond_broadcast(&l->cv);
	}
	pthread_mutex_unlock(&l->mu);
	return NULL;
}

int mgpu_loader_create(struct mgpu_loader *l, struct mgpu_source *src, int batch,
		       int prefetch)
{
	int i;

	memset(l, 0, sizeof *l);
	if (batch < 1 || prefetch < 0 || prefetch > MGPU_LOADER_MAX_THREADS)
		return mgpu_err(MGPU_EINVAL, "loader: batch %d, prefetch %d (0..%d)", batch,
				prefetch, MGPU_LOADER_MAX_THREADS);
	pthread_mutex_init(&l->mu, NULL);
	pthread_cond_init(&l->cv, NULL);
	l->src = src;
	l->batch = batch;
	l->prefetch = prefetch;
	l->ring = prefetch ? 2 * prefetch : 1;
	l->slot = calloc((size_t)l->ring, sizeof *l->slot);
	if (!l->slot)
		return mgpu_err(MGPU_ENOMEM, "out of memory for the loader");
	l->scratch_nbytes = mgpu_augment_scratch_nbytes(src->row_nbytes, src->t_nbytes);
	for (i = 0; i < l->ring; i++) {
		l->slot[i].x = malloc((size_t)batch * src->row_nbytes);
		l->slot[i].y = malloc((size_t)batch * sizeof(int32_t));
		l->slot[i].scratch = malloc(l->scratch_nbytes);
		l->slot[i].t = malloc((size_t)batch * src->t_nbytes + 1);
		if (!l->slot[i].x || !l->slot[i].y || !l->slot[i].scratch || !l->slot[i].t) {
			mgpu_loader_free(l);
			return mgpu_err(MGPU_ENOMEM, "out of memory for %d batches of %d rows",
					l->ring, batch);
		}
	}
	l->topt.sigma = 2.0f;
	l->topt.stride = 1;
	if (src->tkind && (i = mgpu_loader_targets(l, &l->topt)) < 0) {
		mgpu_loader_free(l);
		return i;
	}
	for (i = 0; i < prefetch; i++) {
		if (pthread_create(&l->th[i], NULL, worker, l) != 0) {
			mgpu_loader_free(l);
			return mgpu_err(MGPU_ENOMEM, "loader: cannot start thread %d", i);
		}
		l->nthreads++;
	}
	return 0;
}

/* Wait until no worker is filling (the consumer holds mu). */
static void quiesce(struct mgpu_loader *l)
{
	int i, busy = 1;

	while (busy) {
		busy = 0;
		for (i = 0; i < l->ring; i++)
			busy |= l->slot[i].state == FILLING;
		if (busy)
			pthread_cond_wait(&l->cv, &l->mu);
	}
}

int mgpu_loader_augment(struct mgpu_loader *l, const struct mgpu_augment *a, uint64_t seed)
{
	struct mgpu_norm zero = l->src->norm;
	float pad = 0;

	memset(&l->aug, 0, sizeof l->aug);
	if (!a)
		return 0;
	MGPU_TRY(mgpu_augment_check(a, l->src->ndim, l->src->shape, l->src->path));
	mgpu_norm_apply(&zero, &pad, 1); /* padding is a stored 0, normalised as rows are */
	l->aug = *a;
	l->aug_seed = seed;
	l->aug_pad = pad;
	return 0;
}

int mgpu_loader_targets(struct mgpu_loader *l, const struct mgpu_target_opts *o)
{
	const struct mgpu_source *src = l->src;
	size_t B = (size_t)l->batch, P = src->tshape[0], hw;
	int i;

	if (!(o->sigma > 0.0f && o->sigma <= 1000.0f) || o->stride < 1 || o->stride > 64)
		return mgpu_err(MGPU_EINVAL, "keypoint maps: sigma %g (want (0, 1000]) or output "
				"stride %d (want 1 to 64) out of range", (double)o->sigma, o->stride);
	l->topt = *o;
	if (src->tkind == MGPU_TARGET_KEYPOINTS && src->ndim != 3)
		return mgpu_err(MGPU_EINVAL, "'%s': keypoint targets need image samples (CxHxW)",
				src->path);
	for (i = 0; i < l->ring; i++) {
		struct mgpu_loader_slot *s = &l->slot[i];

		free(s->mask);
		free(s->maps);
		free(s->weight);
		s->mask = NULL;
		s->maps = s->weight = NULL;
		if (src->tkind == MGPU_TARGET_MASK) {
			hw = (size_t)src->tshape[0] * src->tshape[1];
			if (!(s->mask = malloc(B * hw * sizeof *s->mask)))
				return mgpu_err(MGPU_ENOMEM, "out of memory for masks");
		}
		if (src->tkind == MGPU_TARGET_KEYPOINTS) {
			hw = (size_t)map_extent(src->shape[1], o->stride) *
			     (size_t)map_extent(src->shape[2], o->stride);
			s->maps = malloc(B * P * hw * sizeof *s->maps);
			s->weight = malloc(B * P * sizeof *s->weight);
			if (!s->maps || !s->weight)
				return mgpu_err(MGPU_ENOMEM, "out of memory for confidence maps");
		}
	}
	return 0;
}

int mgpu_loader_begin(struct mgpu_loader *l, int split, const uint32_t *order, size_t nrows)
{
	return mgpu_loader_begin_epoch(l, split, order, nrows, 0);
}

int mgpu_loader_begin_epoch(struct mgpu_loader *l, int split, const uint32_t *order,
			    size_t nrows, int64_t epoch)
{
	int i;

	if (l->nthreads)
		pthread_mutex_lock(&l->mu);
	l->nbatches = 0; /* stop workers taking batches of the old pass */
	if (l->nthreads)
		quiesce(l);
	for (i = 0; i < l->ring; i++)
		l->slot[i].state = FREE;
	l->split = split;
	l->epoch = epoch;
	l->order = order;
	l->nrows = nrows;
	l->next_fill = l->next_out = l->released = 0;
	l->held = 0;
	l->nbatches = (int64_t)((nrows + (size_t)l->batch - 1) / (size_t)l->batch);
	if (l->nthreads) {
		pthread_cond_broadcast(&l->cv);
		pthread_mutex_unlock(&l->mu);
	}
	return 0;
}

static int next_sync(struct mgpu_loader *l, struct mgpu_loader_slot **out, double *wait_ms)
{
	struct mgpu_loader_slot *s = &l->slot[0];
	double t0 = mgpu_now_ms();

	fill(l, s, l->next_out);
	*wait_ms = mgpu_now_ms() - t0;
	s->batch = l->next_out++;
	*out = s;
	return s->rc < 0 ? mgpu_err(s->rc, "%s", s->err) : 0;
}

static int next_async(struct mgpu_loader *l, struct mgpu_loader_slot **out, double *wait_ms)
{
	struct mgpu_loader_slot *s;
	double t0 = mgpu_now_ms();
	int64_t b;

	pthread_mutex_lock(&l->mu);
	if (l->held) {
		l->slot[(l->next_out - 1) % l->ring].state = FREE;
		l->released++;
		l->held = 0;
		pthread_cond_broadcast(&l->cv);
	}
	b = l->next_out;
	s = &l->slot[b % l->ring];
	if (l->next_fill == b) { /* no worker has started it: fetch it here */
		l->next_fill++;
		fill_unlocked(l, s, b);
	}
	while (!(s->state == READY && s->batch == b))
		pthread_cond_wait(&l->cv, &l->mu);
	l->next_out++;
	l->held = 1;
	pthread_mutex_unlock(&l->mu);
	*wait_ms = mgpu_now_ms() - t0;
	*out = s;
	return s->rc < 0 ? mgpu_err(s->rc, "%s", s->err) : 0;
}

int mgpu_loader_next(struct mgpu_loader *l, const void **x, const int32_t **y, int *B,
		     double *wait_ms)
{
	struct mgpu_target_batch t;

	return mgpu_loader_next_t(l, x, y, &t, B, wait_ms);
}

int mgpu_loader_next_t(struct mgpu_loader *l, const void **x, const int32_t **y,
		       struct mgpu_target_batch *t, int *B, double *wait_ms)
{
	const struct mgpu_source *src = l->src;
	struct mgpu_loader_slot *s;

	*B = 0;
	*wait_ms = 0;
	memset(t, 0, sizeof *t);
	if (l->next_out >= l->nbatches)
		return 1;
	MGPU_TRY(l->nthreads ? next_async(l, &s, wait_ms) : next_sync(l, &s, wait_ms));
	*x = s->x;
	*y = s->y;
	*B = s->n;
	t->kind = src->tkind;
	if (src->tkind == MGPU_TARGET_VECTOR) {
		t->vec = (const float *)(const void *)s->t;
		t->K = (int)src->tshape[0];
	} else if (src->tkind == MGPU_TARGET_MASK) {
		t->mask = s->mask;
		t->h = (int)src->tshape[0];
		t->w = (int)src->tshape[1];
	} else if (src->tkind == MGPU_TARGET_KEYPOINTS) {
		t->maps = s->maps;
		t->weight = s->weight;
		t->kp = (const float *)(const void *)s->t;
		t->P = (int)src->tshape[0];
		t->h = map_extent(src->shape[1], l->topt.stride);
		t->w = map_extent(src->shape[2], l->topt.stride);
	}
	return 0;
}

void mgpu_loader_free(struct mgpu_loader *l)
{
	int i;

	if (l->nthreads) {
		pthread_mutex_lock(&l->mu);
		l->stop = 1;
		pthread_cond_broadcast(&l->cv);
		pthread_mutex_unlock(&l->mu);
		for (i = 0; i < l->nthreads; i++)
			pthread_join(l->th[i], NULL);
	}
	if (l->ring) {
		pthread_mutex_destroy(&l->mu);
		pthread_cond_destroy(&l->cv);
	}
	for (i = 0; l->slot && i < l->ring; i++) {
		free(l->slot[i].x);
		free(l->slot[i].y);
		free(l->slot[i].scratch);
		free(l->slot[i].t);
		free(l->slot[i].mask);
		free(l->slot[i].maps);
		free(l->slot[i].weight);
	}
	free(l->slot);
	memset(l, 0, sizeof *l);
}
