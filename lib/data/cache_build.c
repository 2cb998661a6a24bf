/*
 * cache_build.c - writing mgpu caches (see cache.h, mgpu-formats(5)).
 *
 * Chunks are produced in waves: the worker threads each convert and
 * compress chunks of the wave (each with its own zstd context), then the
 * wave is written in chunk order, so the file is the same bytes whatever
 * the thread count. The header goes last, at offset 0, once the index and
 * its checksum are known. The file is written under a temporary name and
 * renamed (core/io.h).
 */
#include "data/cache.h"

#include <errno.h>    /* errno, EINTR, EWOULDBLOCK */
#include <fcntl.h>    /* open */
#include <stdio.h>    /* fwrite, fseek */
#include <stdlib.h>   /* malloc, calloc, free */
#include <string.h>   /* memcpy, memset */
#include <sys/file.h> /* flock */
#include <sys/stat.h> /* stat, mkdir */
#include <time.h>     /* nanosleep */
#include <unistd.h>   /* close, unlink, rmdir */
#include <zstd.h>     /* ZSTD_compressCCtx */

#include "core/cancel.h" /* mgpu_cancel_check, mgpu_cancel_signal */
#include "core/err.h"   /* mgpu_err */
#include "core/io.h"    /* mgpu_afile_* */
#include "data/norm.h"  /* mgpu_norm_*, mgpu_moments_* */
#include "data/xxh64.h" /* mgpu_xxh64 */

/* One chunk of the wave being produced. */
struct job {
	int split;
	uint64_t first_row, rows;
	unsigned char *out;        /* stored bytes (owned) */
	size_t out_nbytes;
	int rc;
	char err[256];
};

struct build {
	struct mgpu_samples *const *split;
	const struct mgpu_cache_opts *o;
	int dtype;
	size_t d, row_nbytes;
	size_t t_nbytes;           /* a row's target (0: none), after the labels */
	const double *mean, *std;  /* per-feature normalisation, or NULL */
	struct job *jobs;
	size_t njobs;
	size_t next;               /* next job to take */
	pthread_mutex_t mu;
};

static void wr32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)v, p[1] = (unsigned char)(v >> 8);
	p[2] = (unsigned char)(v >> 16), p[3] = (unsigned char)(v >> 24);
}

static void wr64(unsigned char *p, uint64_t v)
{
	wr32(p, (uint32_t)v);
	wr32(p + 4, (uint32_t)(v >> 32));
}


/* Convert one row into the stored dtype (normalised when asked). */
static void convert_row(const struct build *b, const struct mgpu_samples *s, size_t i,
			unsigned char *dst)
{
	float *f = (float *)(void *)dst;
	size_t j;

	if (b->dtype == s->dtype && !b->mean) {
		memcpy(dst, s->x + i * s->row_nbytes, b->row_nbytes);
		return;
	}
	for (j = 0; j < b->d; j++) {
		double v = mgpu_samples_value(s, i, j);
		f[j] = (float)(b->mean ? mgpu_norm_feature(v, b->mean[j], b->std[j]) : v);
	}
}

static void make_chunk(struct build *b, struct job *jb, unsigned char *raw, ZSTD_CCtx *cc)
{
	const struct mgpu_samples *s = b->split[jb->split];
	size_t raw_nbytes = (size_t)jb->rows * (b->row_nbytes + 1 + b->t_nbytes), bound, r;
	uint64_t i;

	for (i = 0; i < jb->rows; i++) {
		convert_row(b, s, jb->first_row + i, raw + i * b->row_nbytes);
		raw[jb->rows * b->row_nbytes + i] = (unsigned char)s->y[jb->first_row + i];
		if (b->t_nbytes)
			memcpy(raw + jb->rows * (b->row_nbytes + 1) + i * b->t_nbytes,
			       s->t + (jb->first_row + i) * b->t_nbytes, b->t_nbytes);
	}
	bound = b->o->raw ? raw_nbytes : ZSTD_compressBound(raw_nbytes);
	jb->out = malloc(bound ? bound : 1);
	if (!jb->out) {
		jb->rc = MGPU_ENOMEM;
		snprintf(jb->err, sizeof jb->err, "out of memory for a chunk");
		return;
	}
	if (b->o->raw) {
		memcpy(jb->out, raw, raw_nbytes);
		jb->out_nbytes = raw_nbytes;
		return;
	}
	r = ZSTD_compressCCtx(cc, jb->out, bound, raw, raw_nbytes, b->o->level);
	if (ZSTD_isError(r)) {
		jb->rc = MGPU_EFORMAT;
		snprintf(jb->err, sizeof jb->err, "zstd: %s", ZSTD_getErrorName(r));
		return;
	}
	jb->out_nbytes = r;
}

static void *worker(void *arg)
{
	struct build *b = arg;
	ZSTD_CCtx *cc = ZSTD_createCCtx();
	unsigned char *raw = NULL;
	size_t k, cap = 0, need;

	for (;;) {
		pthread_mutex_lock(&b->mu);
		k = b->next++;
		pthread_mutex_unlock(&b->mu);
		if (k >= b->njobs || mgpu_cancel_signal())
			break;
		need = (size_t)b->jobs[k].rows * (b->row_nbytes + 1 + b->t_nbytes);
		if (need > cap) {
			free(raw);
			raw = malloc(need);
			cap = raw ? need : 0;
		}
		if (!raw || !cc) {
			b->jobs[k].rc = MGPU_ENOMEM;
			snprintf(b->jobs[k].err, sizeof b->jobs[k].err, "out of memory");
			continue;
		}
		make_chunk(b, &b->jobs[k], raw, cc);
	}
	free(raw);
	ZSTD_freeCCtx(cc);
	return NULL;
}

/* Produce the wave's chunks on up to o->threads threads. */
static int run_wave(struct build *b)
{
	pthread_t th[64];
	int t, n = b->o->threads < 1 ? 1 : b->o->threads > 64 ? 64 : b->o->threads;
	int started = 0;
	size_t k;

	b->next = 0;
	for (t = 1; t < n; t++)
		if (pthread_create(&th[t], NULL, worker, b) == 0)
			started = t;
		else
			break;
	worker(b);
	for (t = 1; t <= started; t++)
		pthread_join(th[t], NULL);
	MGPU_TRY(mgpu_cancel_check()); /* the workers stopped taking chunks */
	for (k = 0; k < b->njobs; k++)
		if (b->jobs[k].rc < 0)
			return mgpu_err(b->jobs[k].rc, "%s", b->jobs[k].err);
	return 0;
}

/* Mean and sd over all features of train's stored values (the header's). */
static void global_stats(const struct build *b, double *mean, double *sd)
{
	const struct mgpu_samples *s = b->split[MGPU_SPLIT_TRAIN];
	struct mgpu_moments m = { 0 };
	size_t i, j;
	double v;

	for (i = 0; i < s->n; i++)
		for (j = 0; j < b->d; j++) {
			v = mgpu_samples_value(s, i, j);
			if (b->mean)
				v = mgpu_norm_feature(v, b->mean[j], b->std[j]);
			mgpu_moments_add(&m, b->dtype == MGPU_DTYPE_F32 ? (double)(float)v : v);
		}
	mgpu_moments_get(&m, mean, sd);
}

static int check_splits(struct build *b)
{
	struct mgpu_samples *const *sp = b->split;
	const struct mgpu_samples *t = sp[MGPU_SPLIT_TRAIN];
	int s;

	if (!t || t->n == 0)
		return mgpu_err(MGPU_EINVAL, "no training samples to cache");
	for (s = 1; s < MGPU_NSPLITS; s++)
		if (sp[s] && sp[s]->n && (sp[s]->dtype != t->dtype || sp[s]->d != t->d))
			return mgpu_err(MGPU_EFORMAT, "the %s split's samples differ in shape or "
					"dtype from train's", mgpu_split_name(s));
	for (s = 1; s < MGPU_NSPLITS; s++)
		if (sp[s] && sp[s]->n && !mgpu_samples_same_target(sp[s], t))
			return mgpu_err(MGPU_EFORMAT, "the %s split's targets differ from train's",
					mgpu_split_name(s));
	b->dtype = b->o->normalise ? MGPU_DTYPE_F32 : b->o->dtype ? b->o->dtype : t->dtype;
	if (mgpu_dtype_is_token(t->dtype) && b->dtype != t->dtype) /* ids are not values */
		return mgpu_err(MGPU_EINVAL, "the samples are %s token ids, stored as they are: "
				"drop --dtype and --normalize", mgpu_dtype_name(t->dtype));
	if (b->dtype == MGPU_DTYPE_U8 && t->dtype != MGPU_DTYPE_U8)
		return mgpu_err(MGPU_EINVAL, "--dtype u8: the samples are float32; store them "
				"as f32");
	b->d = t->d;
	b->row_nbytes = b->d * mgpu_dtype_nbytes(b->dtype);
	b->t_nbytes = t->tkind ? t->t_nbytes : 0;
	return 0;
}

struct layout {
	struct mgpu_cache_hdr h;
	unsigned char *index;      /* total_chunks entries + norm table */
	size_t index_nbytes;
	uint64_t pos;              /* bytes written so far */
};

static size_t nrows(const struct build *b, int s)
{
	return b->split[s] ? b->split[s]->n : 0;
}

/* names into the header (mgpu_cache_write checked that they fit). */
static void put_names(struct mgpu_cache_hdr *h, char *const *names, int n)
{
	size_t o = 0, len;
	int k;

	for (k = 0; k < n; k++) {
		len = strlen(names[k]) + 1;
		memcpy(h->names + o, names[k], len);
		o += len;
	}
	h->nnames = (uint32_t)n;
}

/* Do the class names of the splits fit the header, and agree? */
static int names_fit(struct mgpu_samples *const split[MGPU_NSPLITS], const char *file)
{
	const struct mgpu_samples *w = NULL;
	size_t total = 0;
	size_t room = split[MGPU_SPLIT_TRAIN] && split[MGPU_SPLIT_TRAIN]->tkind ?
		      MGPU_CACHE_NAMES_NBYTES_V2 : MGPU_CACHE_NAMES_NBYTES;
	int s, k;

	for (s = 0; s < MGPU_NSPLITS; s++) {
		if (!split[s] || !split[s]->names)
			continue;
		if (w && !mgpu_class_names_equal(w->names, w->nnames, split[s]->names,
						 split[s]->nnames))
			return mgpu_err(MGPU_EINVAL, "'%s': the splits' class names differ", file);
		w = split[s];
	}
	if (!w)
		return 0;
	MGPU_TRY(mgpu_class_names_check(w->names, w->nnames, file));
	for (k = 0; k < w->nnames; k++)
		total += strlen(w->names[k]) + 1;
	if (total > room)
		return mgpu_err(MGPU_EINVAL, "'%s': the class names take %zu bytes, more than the "
				"header's %zu", file, total, room);
	return 0;
}

static void plan(struct build *b, struct layout *L, const struct mgpu_samples *t)
{
	struct mgpu_cache_hdr *h = &L->h;
	size_t cr = b->o->chunk_nbytes / (b->row_nbytes + b->t_nbytes);
	uint64_t chunks = 0;
	int s;

	memset(h, 0, sizeof *h);
	h->version = MGPU_CACHE_VERSION;
	h->flags = (b->o->raw ? MGPU_CACHE_RAW : 0) | (b->mean ? MGPU_CACHE_NORMALISED : 0);
	h->dtype = (uint32_t)b->dtype;
	h->ndim = (uint32_t)t->ndim;
	memcpy(h->shape, t->shape, sizeof h->shape);
	if (t->tkind) {
		h->version = MGPU_CACHE_VERSION_TARGETS;
		h->tkind = (uint32_t)t->tkind;
		h->tdtype = (uint32_t)t->tdtype;
		h->tndim = (uint32_t)t->tndim;
		memcpy(h->tshape, t->tshape, sizeof h->tshape);
		h->t_nbytes = t->t_nbytes;
	}
	h->chunk_rows = cr < 1 ? 1 : cr > (1u << 30) ? (1u << 30) : (uint32_t)cr;
	h->level = b->o->raw ? 0 : b->o->level;
	h->d = b->d;
	for (s = 0; s < MGPU_NSPLITS; s++) {
		h->n[s] = nrows(b, s);
		h->first_chunk[s] = chunks;
		h->nchunks[s] = (h->n[s] + h->chunk_rows - 1) / h->chunk_rows;
		chunks += h->nchunks[s];
		if (b->split[s] && b->split[s]->classes > (int)h->classes)
			h->classes = (uint32_t)b->split[s]->classes;
	}
	h->total_chunks = chunks;
	memcpy(h->key, b->o->key, 32);
	for (s = 0; s < MGPU_NSPLITS && !h->nnames; s++)
		if (b->split[s] && b->split[s]->names)
			put_names(h, b->split[s]->names, b->split[s]->nnames);
	L->index_nbytes = chunks * MGPU_CACHE_INDEX_ENTRY + (b->mean ? 8 * b->d : 0);
}

static int put(struct mgpu_afile *af, struct layout *L, const void *p, size_t n)
{
	if (n && fwrite(p, 1, n, af->fp) != n)
		return mgpu_err_errno(MGPU_EIO, "'%s': write failed", af->path);
	L->pos += n;
	return 0;
}

static int align(struct mgpu_afile *af, struct layout *L, size_t to)
{
	static const unsigned char zero[4096];
	return put(af, L, zero, (size_t)((to - L->pos % to) % to));
}

/* Tell o->progress the rows of the splits before s and s's first r. */
static void wave_done(const struct build *b, const struct layout *L,
		      const struct mgpu_cache_stats *st, int s, uint64_t r)
{
	uint64_t rows = r, total = 0, nbytes = 0;
	int k;

	for (k = 0; k < MGPU_NSPLITS; k++) {
		total += L->h.n[k];
		rows += k < s ? L->h.n[k] : 0;
		nbytes += st->data_nbytes[k];
	}
	b->o->progress(b->o->progress_ctx, rows < total ? rows : total, total, nbytes);
}

/* Produce and write every chunk, wave by wave; fill the index. */
static int write_chunks(struct build *b, struct layout *L, struct mgpu_afile *af,
			struct mgpu_cache_stats *st)
{
	size_t wave = (size_t)(b->o->threads < 1 ? 1 : b->o->threads) * 4, k, w;
	uint64_t c = 0, r;
	int s, rc = 0;

	b->jobs = calloc(wave, sizeof *b->jobs);
	if (!b->jobs)
		return mgpu_err(MGPU_ENOMEM, "out of memory");
	for (s = 0; s < MGPU_NSPLITS; s++) {
		for (r = 0; r < L->h.n[s];) {
			for (w = 0; w < wave && r < L->h.n[s]; w++, r += L->h.chunk_rows) {
				struct job *jb = &b->jobs[w];
				memset(jb, 0, sizeof *jb);
				jb->split = s;
				jb->first_row = r;
				jb->rows = L->h.n[s] - r < L->h.chunk_rows ? L->h.n[s] - r :
					L->h.chunk_rows;
			}
			b->njobs = w;
			rc = run_wave(b);
			for (k = 0; k < w && rc == 0; k++, c++) {
				struct job *jb = &b->jobs[k];
				unsigned char *e = L->index + c * MGPU_CACHE_INDEX_ENTRY;
				rc = align(af, L, b->o->raw ? 4096 : 64);
				wr64(e, L->pos);
				wr64(e + 8, jb->out_nbytes);
				wr64(e + 16, jb->rows);
				wr64(e + 24, jb->first_row);
				wr32(e + 32, (uint32_t)s);
				wr64(e + 40, mgpu_xxh64(jb->out, jb->out_nbytes, 0));
				if (rc == 0)
					rc = put(af, L, jb->out, jb->out_nbytes);
				st->chunks[s]++;
				st->data_nbytes[s] += jb->rows * (b->row_nbytes + 1 + b->t_nbytes);
				st->stored_nbytes[s] += jb->out_nbytes;
				L->h.stored_nbytes += jb->out_nbytes;
			}
			for (k = 0; k < w; k++)
				free(b->jobs[k].out);
			if (rc < 0)
				goto out;
			if (b->o->progress)
				wave_done(b, L, st, s, r);
		}
		st->n[s] = L->h.n[s];
	}
out:
	free(b->jobs);
	b->jobs = NULL;
	return rc;
}

static void encode_hdr(const struct mgpu_cache_hdr *h, unsigned char *b)
{
	uint64_t bits;
	int s;

	memset(b, 0, MGPU_CACHE_HEADER_NBYTES);
	memcpy(b, MGPU_CACHE_MAGIC, 8);
	wr32(b + 8, h->version);
	wr32(b + 12, MGPU_CACHE_HEADER_NBYTES);
	wr32(b + 16, h->flags);
	wr32(b + 20, h->dtype);
	wr32(b + 24, h->ndim);
	for (s = 0; s < 4; s++)
		wr32(b + 28 + 4 * s, h->shape[s]);
	wr32(b + 44, h->classes);
	wr32(b + 48, h->chunk_rows);
	wr32(b + 52, (uint32_t)h->level);
	wr64(b + 56, h->d);
	for (s = 0; s < MGPU_NSPLITS; s++) {
		wr64(b + 64 + 8 * s, h->n[s]);
		wr64(b + 88 + 8 * s, h->first_chunk[s]);
		wr64(b + 112 + 8 * s, h->nchunks[s]);
	}
	wr64(b + 136, h->total_chunks);
	wr64(b + 144, h->index_off);
	wr64(b + 152, h->norm_off);
	memcpy(&bits, &h->mean, 8);
	wr64(b + 160, bits);
	memcpy(&bits, &h->sd, 8);
	wr64(b + 168, bits);
	memcpy(b + 176, h->key, 32);
	wr64(b + 208, h->data_nbytes);
	wr64(b + 216, h->stored_nbytes);
	wr64(b + 224, h->index_xxh64);
	wr32(b + 232, h->nnames);
	if (h->version == MGPU_CACHE_VERSION) {
		memcpy(b + MGPU_CACHE_NAMES_OFF, h->names, MGPU_CACHE_NAMES_NBYTES);
	} else {
		memcpy(b + MGPU_CACHE_NAMES_OFF, h->names, MGPU_CACHE_NAMES_NBYTES_V2);
		wr32(b + MGPU_CACHE_TARGET_OFF, h->tkind);
		wr32(b + MGPU_CACHE_TARGET_OFF + 4, h->tdtype);
		wr32(b + MGPU_CACHE_TARGET_OFF + 8, h->tndim);
		for (s = 0; s < 4; s++)
			wr32(b + MGPU_CACHE_TARGET_OFF + 12 + 4 * s, h->tshape[s]);
		wr64(b + MGPU_CACHE_TARGET_OFF + 32, h->t_nbytes);
	}
	wr64(b + 4088, mgpu_xxh64(b, 4088, 0));
}

/* Index, normalisation table, then the header at offset 0. */
static int finish(struct build *b, struct layout *L, struct mgpu_afile *af)
{
	unsigned char hdr[MGPU_CACHE_HEADER_NBYTES];
	unsigned char *norm = L->index + L->h.total_chunks * MGPU_CACHE_INDEX_ENTRY;
	size_t j;
	float f;

	MGPU_TRY(align(af, L, 64));
	L->h.index_off = L->pos;
	if (b->mean) {
		L->h.norm_off = L->pos + L->h.total_chunks * MGPU_CACHE_INDEX_ENTRY;
		for (j = 0; j < b->d; j++) {
			uint32_t u;
			f = (float)b->mean[j];
			memcpy(&u, &f, 4);
			wr32(norm + 4 * j, u);
			f = (float)b->std[j];
			memcpy(&u, &f, 4);
			wr32(norm + 4 * (b->d + j), u);
		}
	}
	L->h.index_xxh64 = mgpu_xxh64(L->index, L->index_nbytes, 0);
	MGPU_TRY(put(af, L, L->index, L->index_nbytes));
	encode_hdr(&L->h, hdr);
	if (fseek(af->fp, 0, SEEK_SET) != 0 || fwrite(hdr, 1, sizeof hdr, af->fp) != sizeof hdr)
		return mgpu_err_errno(MGPU_EIO, "'%s': write failed", af->path);
	return 0;
}

int mgpu_cache_write(const char *file, struct mgpu_samples *const split[MGPU_NSPLITS],
		     const struct mgpu_cache_opts *o, struct mgpu_cache_stats *st)
{
	struct build b = { .split = split, .o = o };
	struct layout L;
	struct mgpu_afile af = { .fp = NULL };
	double *mean = NULL, *std = NULL;
	int s, rc = 0;

	memset(st, 0, sizeof *st);
	memset(&L, 0, sizeof L);
	pthread_mutex_init(&b.mu, NULL);
	MGPU_CHECK(check_splits(&b));
	MGPU_CHECK(names_fit(split, file));
	if (o->normalise)
		MGPU_CHECK(mgpu_norm_features(split[MGPU_SPLIT_TRAIN], &mean, &std));
	b.mean = mean, b.std = std;
	plan(&b, &L, split[MGPU_SPLIT_TRAIN]);
	global_stats(&b, &L.h.mean, &L.h.sd);
	for (s = 0; s < MGPU_NSPLITS; s++)
		L.h.data_nbytes += L.h.n[s] * (b.row_nbytes + 1 + b.t_nbytes);
	L.index = calloc(L.index_nbytes + 1, 1);
	if (!L.index) {
		rc = mgpu_err(MGPU_ENOMEM, "out of memory for the index");
		goto out;
	}
	MGPU_CHECK(mgpu_afile_open(&af, file));
	MGPU_CHECK(put(&af, &L, (const unsigned char[MGPU_CACHE_HEADER_NBYTES]){ 0 },
		       MGPU_CACHE_HEADER_NBYTES));
	MGPU_CHECK(write_chunks(&b, &L, &af, st));
	MGPU_CHECK(finish(&b, &L, &af));
	st->file_nbytes = L.pos;
	rc = mgpu_afile_commit(&af);
out:
	if (rc < 0)
		mgpu_afile_abort(&af);
	free(L.index);
	free(mean);
	pthread_mutex_destroy(&b.mu);
	return rc;
}

int mgpu_cache_is_current(const char *dir, const uint8_t key[32])
{
	struct mgpu_cache_hdr h;
	char file[4096];

	if (mgpu_path_join(file, sizeof file, dir, MGPU_CACHE_FILE) < 0)
		return 0;
	if (mgpu_cache_read_hdr(file, &h) < 0) {
		mgpu_err_clear();
		return 0;
	}
	return memcmp(h.key, key, 32) == 0;
}

/* Wait for the exclusive lock, polling so that SIGINT stops the wait (a
 * blocking flock would be restarted after the handler). */
static int lock_dir(const char *dir, int *fd)
{
	const struct timespec tick = { 0, 20 * 1000 * 1000 };
	char path[4096];
	int rc;

	MGPU_TRY(mgpu_path_join(path, sizeof path, dir, MGPU_CACHE_LOCK));
	*fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
	if (*fd < 0)
		return mgpu_err_errno(MGPU_EIO, "'%s': cannot create the lock file", path);
	while (flock(*fd, LOCK_EX | LOCK_NB) != 0) {
		rc = errno == EWOULDBLOCK || errno == EINTR ? mgpu_cancel_check() :
			mgpu_err_errno(MGPU_EIO, "'%s': cannot lock", path);
		if (rc < 0) {
			close(*fd);
			*fd = -1;
			return rc;
		}
		nanosleep(&tick, NULL);
	}
	return 0;
}

/* Remove what a failed first build left: the lock file and the directory. */
static void undo_dir(const char *dir)
{
	char path[4096];

	if (mgpu_path_join(path, sizeof path, dir, MGPU_CACHE_LOCK) == 0)
		unlink(path);
	rmdir(dir);
}

int mgpu_cache_ensure(const char *dir, const struct mgpu_cache_opts *o, mgpu_cache_load_fn load,
		      void *ctx, struct mgpu_cache_stats *st, int *built)
{
	struct mgpu_samples sets[MGPU_NSPLITS];
	struct mgpu_samples *ptr[MGPU_NSPLITS] = { &sets[0], &sets[1], &sets[2] };
	struct stat sb;
	char file[4096];
	int fd = -1, created, s, rc = 0;

	*built = 0;
	memset(st, 0, sizeof *st);
	memset(sets, 0, sizeof sets);
	MGPU_TRY(mgpu_path_join(file, sizeof file, dir, MGPU_CACHE_FILE));
	created = stat(dir, &sb) != 0;
	if (!created && !S_ISDIR(sb.st_mode))
		return mgpu_err(MGPU_EIO, "'%s': not a directory", dir);
	MGPU_TRY(mgpu_mkdirs(dir));
	MGPU_CHECK(lock_dir(dir, &fd));
	mgpu_tmp_sweep(dir, MGPU_CACHE_FILE); /* what killed builders left */
	if (!o->force && mgpu_cache_is_current(dir, o->key))
		goto out;
	MGPU_CHECK(load(ctx, sets));
	MGPU_CHECK(mgpu_cache_write(file, ptr, o, st));
	*built = 1;
out:
	for (s = 0; s < MGPU_NSPLITS; s++)
		mgpu_samples_free(&sets[s]);
	if (rc < 0 && created)
		undo_dir(dir);
	if (fd >= 0)
		close(fd);
	return rc;
}
