/*
 * source.c - data sources for the trainer (see source.h).
 *
 * What a path is gets decided by looking at it (data/sniff.h): a directory
 * by the files it holds, a file by its first bytes (cache magic, manifest
 * header), else it is handed to libarchive as a WebDataset archive.
 */
#include "data/source.h"

#include <stdlib.h>   /* malloc, free */
#include <string.h>   /* memcpy, memset, strcpy */

#include "core/err.h"      /* mgpu_err */
#include "data/idx.h"      /* mgpu_idx_load_dir */
#include "data/manifest.h" /* mgpu_manifest_load, mgpu_manifest_read */
#include "data/sniff.h"    /* mgpu_sniff_path */
#include "data/ts.h"       /* mgpu_ts_load_pair */
#include "data/wds.h"      /* mgpu_wds_read */

static int open_idx(struct mgpu_source *s, const char *dir)
{
	MGPU_TRY(mgpu_idx_load_dir(dir, &s->mem[MGPU_SPLIT_TRAIN], &s->mem[MGPU_SPLIT_TEST]));
	s->what = "IDX";
	return 0;
}

static int open_manifest(struct mgpu_source *s, const char *file)
{
	struct mgpu_manifest m;
	int rc;

	MGPU_TRY(mgpu_manifest_load(file, &m));
	rc = mgpu_manifest_read(&m, s->mem);
	mgpu_manifest_free(&m);
	s->what = "manifest";
	return rc;
}

/* What a data path may be, for the errors about one that is none. */
#define KINDS "a cache (DIR or DIR/" MGPU_CACHE_FILE "), a shard manifest (FILE or " \
	"DIR/" MGPU_SNIFF_MANIFEST_FILE "), a WebDataset archive (tar, tar.gz, tar.zst, " \
	"zip), an IDX directory (train-images-idx3-ubyte[.gz] ...) or a UEA/UCR directory " \
	"(NAME_TRAIN.ts, NAME_TEST.ts)"

static int open_path(struct mgpu_source *s, const char *path)
{
	char file[4200];
	int kind = mgpu_sniff_path(path, file, sizeof file);

	switch (kind) {
	case MGPU_SNIFF_MISSING:
		return mgpu_err(MGPU_EIO, "'%s': does not exist; want " KINDS, path);
	case MGPU_SNIFF_NONE:
		return mgpu_err(MGPU_EIO, "'%s': holds no data; want " KINDS, path);
	case MGPU_SNIFF_CACHE:
		return MGPU_SOURCE_CACHE;
	case MGPU_SNIFF_MANIFEST:
		return open_manifest(s, file);
	case MGPU_SNIFF_IDX_DIR:
		return open_idx(s, path);
	case MGPU_SNIFF_TS_DIR:
		s->what = "UEA/UCR";
		return mgpu_ts_load_pair(file, &s->mem[MGPU_SPLIT_TRAIN], &s->mem[MGPU_SPLIT_TEST]);
	case MGPU_SNIFF_ARCHIVE:
		s->what = "archive";
		return mgpu_wds_read(path, &s->mem[MGPU_SPLIT_TRAIN], NULL);
	}
	return kind; /* < 0: the path could not be looked at */
}

static int open_cache(struct mgpu_source *s)
{
	const struct mgpu_cache_hdr *h;
	int k;

	MGPU_TRY(mgpu_cache_open(&s->cache, s->path));
	h = &s->cache.h;
	s->kind = MGPU_SOURCE_CACHE;
	s->what = "cache";
	s->dtype = (int)h->dtype;
	s->d = (int)h->d;
	s->ndim = (int)h->ndim;
	memcpy(s->shape, h->shape, sizeof s->shape);
	s->classes = (int)h->classes;
	s->row_nbytes = s->cache.row_nbytes;
	s->tkind = (int)h->tkind;
	s->tndim = (int)h->tndim;
	memcpy(s->tshape, h->tshape, sizeof s->tshape);
	s->t_nbytes = (size_t)h->t_nbytes;
	s->normalised = (h->flags & MGPU_CACHE_NORMALISED) != 0;
	for (k = 0; k < MGPU_NSPLITS; k++)
		s->n[k] = (size_t)h->n[k];
	return 0;
}

/* Memory splits must agree with train; fill the summary fields. */
static int settle_memory(struct mgpu_source *s)
{
	const struct mgpu_samples *t = &s->mem[MGPU_SPLIT_TRAIN];
	int k;

	if (t->n == 0)
		return mgpu_err(MGPU_EFORMAT, "'%s': no training samples", s->path);
	s->kind = MGPU_SOURCE_MEMORY;
	s->dtype = t->dtype;
	s->d = (int)t->d;
	s->ndim = t->ndim;
	memcpy(s->shape, t->shape, sizeof s->shape);
	s->row_nbytes = t->row_nbytes;
	s->tkind = t->tkind;
	s->tndim = t->tndim;
	memcpy(s->tshape, t->tshape, sizeof s->tshape);
	s->t_nbytes = t->tkind ? t->t_nbytes : 0;
	for (k = 0; k < MGPU_NSPLITS; k++) {
		const struct mgpu_samples *m = &s->mem[k];
		if (m->n && (m->dtype != t->dtype || m->d != t->d))
			return mgpu_err(MGPU_EFORMAT, "'%s': %s samples differ in shape or dtype "
					"from train's", s->path, mgpu_split_name(k));
		if (m->n && !mgpu_samples_same_target(m, t))
			return mgpu_err(MGPU_EFORMAT, "'%s': %s samples' targets differ from "
					"train's", s->path, mgpu_split_name(k));
		s->n[k] = m->n;
		if (m->classes > s->classes)
			s->classes = m->classes;
	}
	return 0;
}

int mgpu_source_open(struct mgpu_source *s, const char *path)
{
	int rc;

	memset(s, 0, sizeof *s);
	if (strlen(path) >= sizeof s->path)
		return mgpu_err(MGPU_EINVAL, "'%s': path too long", path);
	strcpy(s->path, path);
	s->norm.scale = 1.0f; /* the identity until the caller sets one */
	rc = open_path(s, path);
	if (rc == MGPU_SOURCE_CACHE)
		rc = open_cache(s);
	else if (rc == 0)
		rc = settle_memory(s);
	/* the class names live in the cache's mapping or the train samples */
	if (rc == 0 && s->kind == MGPU_SOURCE_CACHE && s->cache.h.nnames) {
		s->names = s->cache.names;
		s->nnames = (int)s->cache.h.nnames;
	} else if (rc == 0 && s->mem[MGPU_SPLIT_TRAIN].names) {
		s->names = s->mem[MGPU_SPLIT_TRAIN].names;
		s->nnames = s->mem[MGPU_SPLIT_TRAIN].nnames;
	}
	if (rc < 0)
		mgpu_source_close(s);
	return rc;
}

/* Rows as stored: no normalisation. */
static int rows_raw(struct mgpu_source *s, int split, const uint32_t *idx, size_t n, void *x,
		    int32_t *y, void *t)
{
	const struct mgpu_samples *m;
	unsigned char *xo = x;
	size_t i;

	if (s->kind == MGPU_SOURCE_CACHE)
		return mgpu_cache_rows_t(&s->cache, split, idx, n, x, y, t);
	if (split < 0 || split >= MGPU_NSPLITS)
		return mgpu_err(MGPU_EINVAL, "no split %d", split);
	m = &s->mem[split];
	for (i = 0; i < n; i++) {
		if (idx[i] >= m->n)
			return mgpu_err(MGPU_EINVAL, "'%s': %s row %u out of range (%zu rows)",
					s->path, mgpu_split_name(split), idx[i], m->n);
		memcpy(xo + i * m->row_nbytes, m->x + (size_t)idx[i] * m->row_nbytes,
		       m->row_nbytes);
		y[i] = m->y[idx[i]];
		if (t && m->tkind)
			memcpy((unsigned char *)t + i * m->t_nbytes,
			       m->t + (size_t)idx[i] * m->t_nbytes, m->t_nbytes);
	}
	return 0;
}

int mgpu_source_rows(struct mgpu_source *s, int split, const uint32_t *idx, size_t n,
		     void *x, int32_t *y)
{
	return mgpu_source_rows_t(s, split, idx, n, x, y, NULL);
}

int mgpu_source_rows_t(struct mgpu_source *s, int split, const uint32_t *idx, size_t n,
		       void *x, int32_t *y, void *t)
{
	MGPU_TRY(rows_raw(s, split, idx, n, x, y, t));
	if (s->dtype == MGPU_DTYPE_F32 && !mgpu_norm_is_identity(&s->norm))
		mgpu_norm_apply(&s->norm, x, n * (size_t)s->d);
	return 0;
}

void mgpu_source_set_norm(struct mgpu_source *s, const struct mgpu_norm *norm)
{
	s->norm = *norm;
}

/* The moments of rows idx[0..n) of train (idx NULL: rows 0..n), a block at
 * a time. */
static int train_moments(struct mgpu_source *s, const uint32_t *idx, size_t n,
			 struct mgpu_moments *mo)
{
	enum { BLOCK = 256 };
	unsigned char *x = malloc(BLOCK * s->row_nbytes);
	int32_t y[BLOCK];
	uint32_t ib[BLOCK];
	size_t i, k, m, cnt = (size_t)s->d;
	int rc = 0;

	if (!x)
		return mgpu_err(MGPU_ENOMEM, "out of memory");
	for (i = 0; i < n; i += m) {
		m = n - i < BLOCK ? n - i : BLOCK;
		for (k = 0; k < m; k++)
			ib[k] = idx ? idx[i + k] : (uint32_t)(i + k);
		MGPU_CHECK(rows_raw(s, MGPU_SPLIT_TRAIN, ib, m, x, y, NULL));
		if (s->dtype == MGPU_DTYPE_U8)
			mgpu_moments_add_u8(mo, x, m * cnt);
		else
			mgpu_moments_add_f32(mo, (const float *)(const void *)x, m * cnt);
	}
out:
	free(x);
	return rc;
}

int mgpu_source_norm(struct mgpu_source *s, const uint32_t *idx, size_t n,
		     struct mgpu_norm *norm)
{
	struct mgpu_moments mo = { 0 };
	double mean, sd;

	if (s->kind == MGPU_SOURCE_CACHE && !idx) {
		*norm = mgpu_norm_from(s->cache.h.mean, s->cache.h.sd);
		return 0;
	}
	if (!idx)
		n = s->n[MGPU_SPLIT_TRAIN];
	if (n == 0)
		return mgpu_err(MGPU_EINVAL, "'%s': no training rows to normalise over", s->path);
	MGPU_TRY(train_moments(s, idx, n, &mo));
	mgpu_moments_get(&mo, &mean, &sd);
	*norm = mgpu_norm_from(mean, sd);
	return 0;
}

int mgpu_source_shape(const struct mgpu_source *s, uint32_t shape[MGPU_SAMPLES_MAX_DIM])
{
	memcpy(shape, s->shape, sizeof s->shape);
	return s->ndim;
}

int mgpu_source_nclasses(const struct mgpu_source *s)
{
	return s->nnames > s->classes ? s->nnames : s->classes;
}

int mgpu_source_check_classes(const struct mgpu_source *s, int nclasses)
{
	size_t i;
	int k;

	for (k = 0; k < MGPU_NSPLITS && s->kind == MGPU_SOURCE_MEMORY; k++)
		for (i = 0; i < s->mem[k].n; i++)
			if (s->mem[k].y[i] >= nclasses)
				return mgpu_err(MGPU_ERANGE, "'%s': %s%slabel %d out of range "
						"[0,%d) at index %zu", s->path,
						k ? mgpu_split_name(k) : "", k ? " " : "",
						(int)s->mem[k].y[i], nclasses, i);
	if (s->classes > nclasses)
		return mgpu_err(MGPU_ERANGE, "'%s': label %d out of range [0,%d): the model "
				"has %d classes", s->path, s->classes - 1, nclasses, nclasses);
	return 0;
}

void mgpu_source_close(struct mgpu_source *s)
{
	int k;

	for (k = 0; k < MGPU_NSPLITS; k++)
		mgpu_samples_free(&s->mem[k]);
	if (s->kind == MGPU_SOURCE_CACHE)
		mgpu_cache_close(&s->cache);
	s->kind = 0;
	s->names = NULL;
	s->nnames = 0;
}
