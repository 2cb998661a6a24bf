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

#include "core/clock.h" /* mgpu_now_ms */
#include "core/err.h" /* mgpu_err */

enum { FREE, FILLING, READY };

struct mgpu_loader_slot {
	unsigned char *x;
	unsigned char *scratch;      /* one row, for the augmentation */
	int32_t *y;
	int64_t batch;
	int n, state, rc;
	char err[512];
};

/* Fetch batch b into slot s (no lock held). */
static void fill(struct mgpu_loader *l, struct mgpu_loader_slot *s, int64_t b)
{
	size_t first = (size_t)b * (size_t)l->batch;
	size_t n = l->nrows - first < (size_t)l->batch ? l->nrows - first : (size_t)l->batch;

	s->n = (int)n;
	s->rc = mgpu_source_rows(l->src, l->split, l->order + first, n, s->x, s->y);
	if (s->rc == 0 && l->split == MGPU_SPLIT_TRAIN && mgpu_augment_on(&l->aug))
		mgpu_augment_rows(&l->aug, l->aug_seed, (uint64_t)l->epoch, l->order + first, n,
				  s->x, l->src->dtype, l->src->shape, l->aug_pad, s->scratch);
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
	for (i = 0; i < l->ring; i++) {
		l->slot[i].x = malloc((size_t)batch * src->row_nbytes);
		l->slot[i].y = malloc((size_t)batch * sizeof(int32_t));
		l->slot[i].scratch = malloc(src->row_nbytes ? src->row_nbytes : 1);
		if (!l->slot[i].x || !l->slot[i].y || !l->slot[i].scratch) {
			mgpu_loader_free(l);
			return mgpu_err(MGPU_ENOMEM, "out of memory for %d batches of %d rows",
					l->ring, batch);
		}
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
	struct mgpu_loader_slot *s;

	*B = 0;
	*wait_ms = 0;
	if (l->next_out >= l->nbatches)
		return 1;
	MGPU_TRY(l->nthreads ? next_async(l, &s, wait_ms) : next_sync(l, &s, wait_ms));
	*x = s->x;
	*y = s->y;
	*B = s->n;
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
	}
	free(l->slot);
	memset(l, 0, sizeof *l);
}
