/*
 * cache.c - reading mgpu caches (see cache.h and mgpu-formats(5)).
 *
 * The file is mapped read-only once. open() trusts nothing: the header and
 * the index carry XXH64 checksums and every field is range-checked against
 * the file size, so a corrupt or hostile file is an error, never an
 * out-of-bounds read. Chunks are checked (XXH64 of the stored bytes) when
 * first touched: by the chunk cache for rows(), by verify() for all.
 */
#include "data/cache.h"

#include <errno.h>    /* errno */
#include <fcntl.h>    /* open */
#include <stdio.h>    /* snprintf */
#include <stdlib.h>   /* calloc, malloc, free */
#include <string.h>   /* memcpy, memcmp, memset */
#include <sys/mman.h> /* mmap, munmap */
#include <sys/stat.h> /* fstat, S_ISDIR */
#include <unistd.h>   /* close, read */
#include <zstd.h>     /* ZSTD_decompressDCtx */

#include "core/cancel.h" /* mgpu_cancel_check */
#include "core/err.h"   /* mgpu_err */
#include "data/xxh64.h" /* mgpu_xxh64 */

enum { EMPTY, LOADING, READY };

struct mgpu_cache_slot {
	const unsigned char *ptr;  /* decoded chunk: buf, or into the map (raw) */
	unsigned char *buf;        /* owned decoded bytes (compressed caches) */
	size_t nbytes;
	int state, pins;
	uint64_t last;
};

static uint32_t rd32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static uint64_t rd64(const unsigned char *p)
{
	return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32;
}

/* Decode the fixed header; checks only the magic and checksum. */
static int decode_hdr(const unsigned char *b, const char *path, struct mgpu_cache_hdr *h)
{
	uint64_t bits;
	int s;

	if (memcmp(b, MGPU_CACHE_MAGIC, 8) != 0)
		return mgpu_err(MGPU_EFORMAT, "'%s': not an mgpu cache (bad magic)", path);
	if (rd64(b + 4088) != mgpu_xxh64(b, 4088, 0))
		return mgpu_err(MGPU_EFORMAT, "'%s': header checksum mismatch (corrupt "
				"header)", path);
	memset(h, 0, sizeof *h);
	h->version = rd32(b + 8);
	h->flags = rd32(b + 16);
	h->dtype = rd32(b + 20);
	h->ndim = rd32(b + 24);
	for (s = 0; s < 4; s++)
		h->shape[s] = rd32(b + 28 + 4 * s);
	h->classes = rd32(b + 44);
	h->chunk_rows = rd32(b + 48);
	h->level = (int32_t)rd32(b + 52);
	h->d = rd64(b + 56);
	for (s = 0; s < MGPU_NSPLITS; s++) {
		h->n[s] = rd64(b + 64 + 8 * s);
		h->first_chunk[s] = rd64(b + 88 + 8 * s);
		h->nchunks[s] = rd64(b + 112 + 8 * s);
	}
	h->total_chunks = rd64(b + 136);
	h->index_off = rd64(b + 144);
	h->norm_off = rd64(b + 152);
	bits = rd64(b + 160);
	memcpy(&h->mean, &bits, 8);
	bits = rd64(b + 168);
	memcpy(&h->sd, &bits, 8);
	memcpy(h->key, b + 176, 32);
	h->data_nbytes = rd64(b + 208);
	h->stored_nbytes = rd64(b + 216);
	h->index_xxh64 = rd64(b + 224);
	h->nnames = rd32(b + 232);
	if ((h->version != MGPU_CACHE_VERSION && h->version != MGPU_CACHE_VERSION_TARGETS) ||
	    rd32(b + 12) != MGPU_CACHE_HEADER_NBYTES)
		return mgpu_err(MGPU_EFORMAT, "'%s': cache format version %u is not supported "
				"(this reads versions %d and %d)", path, h->version,
				MGPU_CACHE_VERSION, MGPU_CACHE_VERSION_TARGETS);
	if (h->version == MGPU_CACHE_VERSION) {
		memcpy(h->names, b + MGPU_CACHE_NAMES_OFF, MGPU_CACHE_NAMES_NBYTES);
		return 0;
	}
	memcpy(h->names, b + MGPU_CACHE_NAMES_OFF, MGPU_CACHE_NAMES_NBYTES_V2);
	h->tkind = rd32(b + MGPU_CACHE_TARGET_OFF);
	h->tdtype = rd32(b + MGPU_CACHE_TARGET_OFF + 4);
	h->tndim = rd32(b + MGPU_CACHE_TARGET_OFF + 8);
	for (s = 0; s < 4; s++)
		h->tshape[s] = rd32(b + MGPU_CACHE_TARGET_OFF + 12 + 4 * s);
	h->t_nbytes = rd64(b + MGPU_CACHE_TARGET_OFF + 32);
	return 0;
}

static int bad(const char *path, const char *what)
{
	return mgpu_err(MGPU_EFORMAT, "'%s': corrupt header: %s", path, what);
}

/* Shape, dtype and split layout must be self-consistent. */
static int check_hdr(const struct mgpu_cache_hdr *h, const char *path, size_t fsize)
{
	uint64_t d = 1, chunks = 0, ixn, end;
	uint32_t i;
	int s;

	if (mgpu_dtype_nbytes((int)h->dtype) == 0 || h->ndim < 1 || h->ndim > 4)
		return bad(path, "dtype or dimensions");
	for (i = 0; i < h->ndim; i++) {
		d *= h->shape[i];
		if (h->shape[i] == 0 || d >= MGPU_SAMPLES_MAX_D)
			return bad(path, "sample shape");
	}
	if (d != h->d || h->classes < 1 || h->classes > MGPU_SAMPLES_MAX_CLASSES ||
	    h->chunk_rows < 1 || h->n[MGPU_SPLIT_TRAIN] == 0)
		return bad(path, "features, classes, chunk rows or train samples");
	for (s = 0; s < MGPU_NSPLITS; s++) {
		if (h->n[s] > UINT32_MAX || h->first_chunk[s] != chunks ||
		    h->nchunks[s] != (h->n[s] + h->chunk_rows - 1) / h->chunk_rows)
			return bad(path, "split layout");
		chunks += h->nchunks[s];
	}
	if (chunks != h->total_chunks || chunks > fsize / 8)
		return bad(path, "chunk count");
	if (h->version == MGPU_CACHE_VERSION_TARGETS) { /* what samples.c would accept */
		struct mgpu_samples t;

		memset(&t, 0, sizeof t);
		if (h->tndim > 4 || mgpu_samples_set_target(&t, (int)h->tkind, (int)h->tndim,
							    h->tshape) < 0 || !h->tkind ||
		    (uint32_t)t.tdtype != h->tdtype || t.t_nbytes != h->t_nbytes ||
		    (h->tkind == MGPU_TARGET_MASK && h->ndim == 3 &&
		     (h->tshape[0] != h->shape[1] || h->tshape[1] != h->shape[2])))
			return bad(path, "target layout");
	}
	ixn = chunks * MGPU_CACHE_INDEX_ENTRY + (h->norm_off ? 8 * h->d : 0);
	if (h->index_off < MGPU_CACHE_HEADER_NBYTES || h->index_off > fsize ||
	    ixn > fsize - h->index_off)
		return bad(path, "index beyond the end of the file (truncated?)");
	end = h->index_off + chunks * MGPU_CACHE_INDEX_ENTRY;
	if (h->norm_off && h->norm_off != end)
		return bad(path, "normalisation table offset");
	return 0;
}

/* The header's class names, one pointer each, checked as a name list. */
static int split_names(struct mgpu_cache *c)
{
	char *p = c->h.names, *end = c->h.names + (c->h.version == MGPU_CACHE_VERSION ?
			MGPU_CACHE_NAMES_NBYTES : MGPU_CACHE_NAMES_NBYTES_V2);
	uint32_t k;

	if (c->h.nnames == 0)
		return 0;
	if (c->h.nnames > MGPU_SAMPLES_MAX_CLASSES)
		return bad(c->path, "class names");
	for (k = 0; k < c->h.nnames; k++) {
		char *nul = memchr(p, '\0', (size_t)(end - p));
		if (!nul)
			return bad(c->path, "class names");
		c->names[k] = p;
		p = nul + 1;
	}
	if (c->h.nnames < c->h.classes)
		return bad(c->path, "fewer class names than classes");
	return mgpu_class_names_check(c->names, (int)c->h.nnames, c->path);
}

static int load_index(struct mgpu_cache *c)
{
	const struct mgpu_cache_hdr *h = &c->h;
	const unsigned char *p = c->map + h->index_off;
	size_t ixn = h->total_chunks * MGPU_CACHE_INDEX_ENTRY + (h->norm_off ? 8 * h->d : 0);
	uint64_t k, want_rows, raw_nbytes;
	int s;

	if (mgpu_xxh64(p, ixn, 0) != h->index_xxh64)
		return mgpu_err(MGPU_EFORMAT, "'%s': index checksum mismatch (corrupt index)",
				c->path);
	c->ix = calloc(h->total_chunks + 1, sizeof *c->ix);
	if (!c->ix)
		return mgpu_err(MGPU_ENOMEM, "'%s': out of memory", c->path);
	for (s = 0; s < MGPU_NSPLITS; s++) {
		for (k = 0; k < h->nchunks[s]; k++) {
			struct mgpu_cache_chunk *e = &c->ix[h->first_chunk[s] + k];
			const unsigned char *q = p + (h->first_chunk[s] + k) * MGPU_CACHE_INDEX_ENTRY;
			e->off = rd64(q);
			e->stored_nbytes = rd64(q + 8);
			e->rows = rd64(q + 16);
			e->first_row = rd64(q + 24);
			e->split = rd32(q + 32);
			e->xxh64 = rd64(q + 40);
			want_rows = h->n[s] - k * h->chunk_rows < h->chunk_rows ?
				h->n[s] - k * h->chunk_rows : h->chunk_rows;
			raw_nbytes = want_rows * c->rec_nbytes;
			if (e->split != (uint32_t)s || e->rows != want_rows ||
			    e->first_row != k * h->chunk_rows || e->off < MGPU_CACHE_HEADER_NBYTES ||
			    e->off > h->index_off || e->stored_nbytes > h->index_off - e->off ||
			    ((h->flags & MGPU_CACHE_RAW) && e->stored_nbytes != raw_nbytes))
				return mgpu_err(MGPU_EFORMAT, "'%s': corrupt index entry of chunk "
						"%llu", c->path,
						(unsigned long long)(h->first_chunk[s] + k));
		}
	}
	if (h->norm_off) {
		c->mean = (const float *)(const void *)(c->map + h->norm_off);
		c->std = c->mean + h->d;
	}
	return 0;
}

/* path, or path/MGPU_CACHE_FILE when path is a directory. */
static int resolve(const char *path, char *out, size_t cap)
{
	struct stat st;
	int n;

	if (stat(path, &st) != 0)
		return mgpu_err_errno(MGPU_EIO, "'%s': cannot open", path);
	n = S_ISDIR(st.st_mode) ? snprintf(out, cap, "%s/%s", path, MGPU_CACHE_FILE) :
		snprintf(out, cap, "%s", path);
	if (n < 0 || (size_t)n >= cap)
		return mgpu_err(MGPU_EINVAL, "'%s': path too long", path);
	return 0;
}

static int map_file(struct mgpu_cache *c)
{
	struct stat st;
	void *m;
	int fd = open(c->path, O_RDONLY);

	if (fd < 0)
		return mgpu_err_errno(MGPU_EIO, "'%s': cannot open", c->path);
	if (fstat(fd, &st) != 0 || st.st_size < MGPU_CACHE_HEADER_NBYTES) {
		close(fd);
		return mgpu_err(MGPU_EFORMAT, "'%s': truncated: %lld bytes, a cache header "
				"needs %d", c->path, (long long)st.st_size,
				MGPU_CACHE_HEADER_NBYTES);
	}
	m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		return mgpu_err_errno(MGPU_EIO, "'%s': cannot map", c->path);
	c->map = m;
	c->map_nbytes = (size_t)st.st_size;
	return 0;
}

int mgpu_cache_open(struct mgpu_cache *c, const char *path)
{
	int rc = 0;

	memset(c, 0, sizeof *c);
	MGPU_TRY(resolve(path, c->path, sizeof c->path));
	MGPU_TRY(map_file(c));
	MGPU_CHECK(decode_hdr(c->map, c->path, &c->h));
	MGPU_CHECK(check_hdr(&c->h, c->path, c->map_nbytes));
	MGPU_CHECK(split_names(c));
	c->row_nbytes = (size_t)c->h.d * mgpu_dtype_nbytes((int)c->h.dtype);
	c->rec_nbytes = c->row_nbytes + 1 + (size_t)c->h.t_nbytes;
	MGPU_CHECK(load_index(c));
	c->slot = calloc(c->h.total_chunks + 1, sizeof *c->slot);
	if (!c->slot) {
		rc = mgpu_err(MGPU_ENOMEM, "'%s': out of memory", c->path);
		goto out;
	}
	pthread_mutex_init(&c->mu, NULL);
	pthread_cond_init(&c->cv, NULL);
	c->locks_ok = 1;
	c->budget = MGPU_CACHE_BUDGET;
out:
	if (rc < 0)
		mgpu_cache_close(c);
	return rc;
}

void mgpu_cache_set_budget(struct mgpu_cache *c, size_t nbytes)
{
	c->budget = nbytes;
}

static int chunk_error(const struct mgpu_cache *c, uint64_t k, const char *what)
{
	const struct mgpu_cache_chunk *e = &c->ix[k];

	return mgpu_err(MGPU_EFORMAT, "'%s': chunk %llu (%s rows %llu..%llu): %s", c->path,
			(unsigned long long)k, mgpu_split_name((int)e->split),
			(unsigned long long)e->first_row,
			(unsigned long long)(e->first_row + e->rows - 1), what);
}

/* Every label of decoded chunk k must be below the header's class count:
 * a bad one is an error naming the cache, not a failure inside the loss. */
static int check_labels(const struct mgpu_cache *c, uint64_t k, const unsigned char *chunk)
{
	const struct mgpu_cache_chunk *e = &c->ix[k];
	const unsigned char *y = chunk + (size_t)e->rows * c->row_nbytes;
	char what[128];
	uint64_t i;

	for (i = 0; i < e->rows; i++)
		if (y[i] >= c->h.classes) {
			snprintf(what, sizeof what, "label %u of row %llu is not below the "
				 "header's %u classes", y[i],
				 (unsigned long long)(e->first_row + i), c->h.classes);
			return chunk_error(c, k, what);
		}
	return 0;
}

/* Check chunk k and decode it into buf (raw: point into the map). */
static int decode_chunk(const struct mgpu_cache *c, uint64_t k, unsigned char *buf,
			const unsigned char **ptr)
{
	const struct mgpu_cache_chunk *e = &c->ix[k];
	const unsigned char *src = c->map + e->off;
	size_t want = (size_t)e->rows * c->rec_nbytes, got;
	ZSTD_DCtx *dctx;

	if (mgpu_xxh64(src, e->stored_nbytes, 0) != e->xxh64)
		return chunk_error(c, k, "checksum mismatch");
	if (c->h.flags & MGPU_CACHE_RAW) {
		*ptr = src;
		return check_labels(c, k, src);
	}
	dctx = ZSTD_createDCtx();
	if (!dctx)
		return mgpu_err(MGPU_ENOMEM, "out of memory for a zstd context");
	got = ZSTD_decompressDCtx(dctx, buf, want, src, e->stored_nbytes);
	ZSTD_freeDCtx(dctx);
	if (ZSTD_isError(got))
		return chunk_error(c, k, ZSTD_getErrorName(got));
	if (got != want)
		return chunk_error(c, k, "decoded size differs from the index");
	*ptr = buf;
	return check_labels(c, k, buf);
}

/* Free unpinned decoded chunks, least recently used first, down to the budget. */
static void evict(struct mgpu_cache *c, uint64_t keep)
{
	uint64_t k, victim;

	while (c->used > c->budget) {
		victim = UINT64_MAX;
		for (k = 0; k < c->h.total_chunks; k++) {
			struct mgpu_cache_slot *s = &c->slot[k];
			if (k != keep && s->state == READY && s->buf && s->pins == 0 &&
			    (victim == UINT64_MAX || s->last < c->slot[victim].last))
				victim = k;
		}
		if (victim == UINT64_MAX)
			return;
		free(c->slot[victim].buf);
		c->used -= c->slot[victim].nbytes;
		memset(&c->slot[victim], 0, sizeof c->slot[victim]);
	}
}

/* Pin chunk k decoded; *ptr stays valid until unpin(). Locks inside. */
static int pin(struct mgpu_cache *c, uint64_t k, const unsigned char **ptr)
{
	struct mgpu_cache_slot *s = &c->slot[k];
	size_t nbytes = (size_t)c->ix[k].rows * c->rec_nbytes;
	unsigned char *buf = NULL;
	int rc;

	pthread_mutex_lock(&c->mu);
	while (s->state == LOADING)
		pthread_cond_wait(&c->cv, &c->mu);
	if (s->state == READY) {
		s->pins++;
		s->last = ++c->tick;
		*ptr = s->ptr;
		pthread_mutex_unlock(&c->mu);
		return 0;
	}
	s->state = LOADING;
	pthread_mutex_unlock(&c->mu);
	if (!(c->h.flags & MGPU_CACHE_RAW) && !(buf = malloc(nbytes ? nbytes : 1)))
		rc = mgpu_err(MGPU_ENOMEM, "out of memory for a decoded chunk");
	else
		rc = decode_chunk(c, k, buf, ptr);
	pthread_mutex_lock(&c->mu);
	if (rc < 0) {
		free(buf);
		s->state = EMPTY;
	} else {
		s->state = READY;
		s->ptr = *ptr;
		s->buf = buf;
		s->nbytes = buf ? nbytes : 0;
		s->pins = 1;
		s->last = ++c->tick;
		c->used += s->nbytes;
		evict(c, k);
	}
	pthread_cond_broadcast(&c->cv);
	pthread_mutex_unlock(&c->mu);
	return rc;
}

static void unpin(struct mgpu_cache *c, uint64_t k)
{
	pthread_mutex_lock(&c->mu);
	c->slot[k].pins--;
	pthread_mutex_unlock(&c->mu);
}

int mgpu_cache_rows(struct mgpu_cache *c, int split, const uint32_t *idx, size_t n,
		    void *x, int32_t *y)
{
	return mgpu_cache_rows_t(c, split, idx, n, x, y, NULL);
}

int mgpu_cache_rows_t(struct mgpu_cache *c, int split, const uint32_t *idx, size_t n,
		      void *x, int32_t *y, void *t)
{
	size_t tb = (size_t)c->h.t_nbytes;
	const unsigned char *p = NULL;
	unsigned char *xo = x;
	uint64_t k, cur = UINT64_MAX, base, rows = 0;
	size_t i, j, rb = c->row_nbytes;

	if (split < 0 || split >= MGPU_NSPLITS || c->h.n[split] == 0)
		return mgpu_err(MGPU_EINVAL, "'%s': no %s split", c->path, mgpu_split_name(split));
	base = c->h.first_chunk[split];
	for (i = 0; i < n; i++) {
		if (idx[i] >= c->h.n[split]) {
			if (cur != UINT64_MAX)
				unpin(c, cur);
			return mgpu_err(MGPU_EINVAL, "'%s': %s row %u out of range (%llu rows)",
					c->path, mgpu_split_name(split), idx[i],
					(unsigned long long)c->h.n[split]);
		}
		k = base + idx[i] / c->h.chunk_rows;
		j = idx[i] % c->h.chunk_rows;
		if (k != cur) {
			if (cur != UINT64_MAX)
				unpin(c, cur);
			cur = UINT64_MAX;
			MGPU_TRY(pin(c, k, &p));
			cur = k;
			rows = c->ix[k].rows;
		}
		memcpy(xo + i * rb, p + j * rb, rb);
		y[i] = p[rows * rb + j];
		if (t && tb) /* the targets follow the chunk's labels */
			memcpy((unsigned char *)t + i * tb, p + rows * (rb + 1) + j * tb, tb);
	}
	if (cur != UINT64_MAX)
		unpin(c, cur);
	return 0;
}

int mgpu_cache_verify(struct mgpu_cache *c, size_t *nchecked)
{
	return mgpu_cache_verify_progress(c, nchecked, NULL, NULL);
}

int mgpu_cache_verify_progress(struct mgpu_cache *c, size_t *nchecked, mgpu_cache_progress_fn fn,
			       void *ctx)
{
	unsigned char *buf = NULL;
	const unsigned char *p;
	size_t cap = 0, need;
	uint64_t k, nbytes = 0;
	int rc = 0;

	*nchecked = 0;
	for (k = 0; k < c->h.total_chunks; k++) {
		MGPU_CHECK(mgpu_cancel_check());
		need = (size_t)c->ix[k].rows * c->rec_nbytes;
		if (need > cap) {
			free(buf);
			cap = need;
			buf = malloc(cap);
			if (!buf) {
				rc = mgpu_err(MGPU_ENOMEM, "out of memory");
				goto out;
			}
		}
		MGPU_CHECK(decode_chunk(c, k, buf, &p));
		++*nchecked;
		nbytes += c->ix[k].stored_nbytes;
		if (fn)
			fn(ctx, k + 1, c->h.total_chunks, nbytes);
	}
out:
	free(buf);
	return rc;
}

void mgpu_cache_close(struct mgpu_cache *c)
{
	uint64_t k;

	for (k = 0; c->slot && k < c->h.total_chunks; k++)
		free(c->slot[k].buf);
	free(c->slot);
	free(c->ix);
	if (c->map)
		munmap((void *)(uintptr_t)c->map, c->map_nbytes);
	if (c->locks_ok) {
		pthread_mutex_destroy(&c->mu);
		pthread_cond_destroy(&c->cv);
	}
	memset(c, 0, sizeof *c);
}

int mgpu_cache_read_hdr(const char *file, struct mgpu_cache_hdr *h)
{
	unsigned char b[MGPU_CACHE_HEADER_NBYTES];
	ssize_t got;
	int fd = open(file, O_RDONLY);

	if (fd < 0)
		return mgpu_err_errno(MGPU_EIO, "'%s': cannot open", file);
	got = read(fd, b, sizeof b);
	close(fd);
	if (got != (ssize_t)sizeof b)
		return mgpu_err(MGPU_EFORMAT, "'%s': truncated cache header", file);
	return decode_hdr(b, file, h);
}
