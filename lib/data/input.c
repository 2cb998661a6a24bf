/*
 * input.c - outside data files into memory samples (see input.h).
 */
#include "data/input.h"

#include <stdio.h>    /* snprintf */
#include <stdlib.h>   /* malloc, free */
#include <string.h>   /* strcmp, strlen, memset */
#include <sys/stat.h> /* stat, S_ISDIR */

#include "core/err.h"     /* mgpu_err */
#include "data/csv.h"     /* mgpu_csv_load */
#include "data/idx.h"     /* mgpu_idx_load_samples, mgpu_idx_load_dir */
#include "data/imgdir.h"  /* mgpu_imgdir_is, mgpu_imgdir_load */
#include "data/npy.h"     /* mgpu_npy_load */
#include "data/text.h"    /* mgpu_text_load */
#include "data/tokens.h"  /* mgpu_tokens_load */
#include "data/ts.h"      /* mgpu_ts_load */
#include "data/wds.h"     /* mgpu_wds_read */

static int ends(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);
	return a >= b && strcmp(s + a - b, suffix) == 0;
}

/* name without a compression suffix ends with suffix */
static int kind_is(const char *s, const char *suffix)
{
	static const char *const z[] = { "", ".gz", ".zst", ".xz", ".bz2", NULL };
	char buf[4200];
	int i;

	for (i = 0; z[i]; i++) {
		snprintf(buf, sizeof buf, "%s%s", suffix, z[i]);
		if (ends(s, buf))
			return 1;
	}
	return 0;
}

int mgpu_samples_append(struct mgpu_samples *dst, const struct mgpu_samples *src,
			const char *name)
{
	char a[64], b[64];
	size_t i;

	if (src->n == 0)
		return 0;
	if (!dst->dtype) { /* an empty set: its class names (a join's) stay */
		char **names = dst->names;
		int nnames = dst->nnames;
		MGPU_TRY(mgpu_samples_init(dst, src->dtype, src->ndim, src->shape));
		dst->names = names;
		dst->nnames = nnames;
		MGPU_TRY(mgpu_samples_set_target(dst, src->tkind, src->tndim, src->tshape));
	}
	if (dst->dtype != src->dtype || !mgpu_samples_same_shape(dst, src->ndim, src->shape)) {
		mgpu_samples_shape_str(src->ndim, src->shape, a, sizeof a);
		mgpu_samples_shape_str(dst->ndim, dst->shape, b, sizeof b);
		return mgpu_err(MGPU_EFORMAT, "'%s': samples are %s %s, earlier sources gave "
				"%s %s", name, mgpu_dtype_name(src->dtype), a,
				mgpu_dtype_name(dst->dtype), b);
	}
	if (!mgpu_samples_same_target(dst, src)) {
		mgpu_samples_target_str(src, a, sizeof a);
		mgpu_samples_target_str(dst, b, sizeof b);
		return mgpu_err(MGPU_EFORMAT, "'%s': targets are %s, earlier sources gave %s",
				name, a, b);
	}
	MGPU_TRY(mgpu_samples_reserve(dst, dst->n + src->n));
	for (i = 0; i < src->n; i++)
		MGPU_TRY(mgpu_samples_push_row(dst, src, i));
	return 0;
}

/* Append t to out, then free t (whether or not that worked); class names
 * that differ are joined, both sets renumbered. */
/* --shape: t's rows take the shape asked for (the same count of values). */
static int shaped(struct mgpu_samples *t, const struct mgpu_input_opts *o, const char *name)
{
	return o->ndim && t->n ? mgpu_samples_reshape(t, o->ndim, o->shape, name) : 0;
}

static int append_free(struct mgpu_samples *out, struct mgpu_samples *t, const char *name,
		       const struct mgpu_input_opts *o)
{
	int rc = shaped(t, o, name);

	if (rc == 0)
		rc = mgpu_class_names_join(out, t, name);

	if (rc == 0)
		rc = mgpu_samples_append(out, t, name);

	mgpu_samples_free(t);
	return rc;
}

static int idx_dir(const char *dir, const struct mgpu_input_opts *o, struct mgpu_samples *out,
		   struct mgpu_samples *test)
{
	struct mgpu_samples tr, te;
	int rc;

	MGPU_TRY(mgpu_idx_load_dir(dir, &tr, &te));
	rc = append_free(out, &tr, dir, o);
	if (rc == 0)
		rc = append_free(test, &te, dir, o);
	mgpu_samples_free(&te); /* when train failed */
	return rc;
}

static int ts_file(const char *path, const struct mgpu_input_opts *o, struct mgpu_samples *out)
{
	struct mgpu_samples t;

	MGPU_TRY(mgpu_ts_load(path, &t));
	return append_free(out, &t, path, o);
}

/* NAME_TRAIN.ts, and NAME_TEST.ts when present as the predefined test set. */
static int ts_dir(const char *train, const struct mgpu_input_opts *o,
		  struct mgpu_samples *out, struct mgpu_samples *test)
{
	struct mgpu_samples tr, te;
	int rc;

	MGPU_TRY(mgpu_ts_load_pair(train, &tr, &te));
	rc = append_free(out, &tr, train, o);
	if (rc == 0 && te.n)
		rc = append_free(test, &te, train, o);
	mgpu_samples_free(&tr);
	mgpu_samples_free(&te);
	return rc;
}

static int image_dir(const char *dir, const struct mgpu_input_opts *o,
		     struct mgpu_samples *out)
{
	struct mgpu_samples t;

	MGPU_TRY(mgpu_imgdir_load(dir, o->resize[0] ? o->resize : NULL, &t));
	return append_free(out, &t, dir, o);
}

static int dir_source(const char *dir, const struct mgpu_input_opts *o,
		      struct mgpu_samples *out, struct mgpu_samples *test)
{
	char train[4200];
	int n;

	if (strlen(dir) > 4000)
		return mgpu_err(MGPU_EINVAL, "'%s': directory name too long", dir);
	MGPU_TRY(mgpu_ts_find_train(dir, train, sizeof train, &n));
	if (n)
		return ts_dir(train, o, out, test);
	return mgpu_imgdir_is(dir) ? image_dir(dir, o, out) : idx_dir(dir, o, out, test);
}

static int need_labels(const char *path, const struct mgpu_input_opts *o)
{
	if (!o->labels)
		return mgpu_err(MGPU_EINVAL, "'%s': needs its labels (--labels FILE)", path);
	return 0;
}

/* 1-D integer labels in [0, 256), one per sample. */
static int npy_labels(const char *path, size_t n, int32_t *y)
{
	struct mgpu_npy a;
	size_t i;
	double v;
	int rc = 0;

	MGPU_TRY(mgpu_npy_load(path, &a));
	if (a.ndim != 1 || a.count != n || a.kind == 'f' || a.kind == 'b') {
		rc = mgpu_err(MGPU_EFORMAT, "'%s': labels must be a 1-D integer array of %zu, "
			      "not %s of %zu", path, n, mgpu_npy_descr(&a), a.count);
		goto out;
	}
	for (i = 0; i < n; i++) {
		v = mgpu_npy_value(&a, i);
		if (v < 0 || v >= MGPU_SAMPLES_MAX_CLASSES) {
			rc = mgpu_err(MGPU_ERANGE, "'%s': entry %zu: label %.0f out of range "
				      "[0,%d)", path, i, v, MGPU_SAMPLES_MAX_CLASSES);
			goto out;
		}
		y[i] = (int32_t)v;
	}
out:
	mgpu_npy_free(&a);
	return rc;
}

/* Rows of an (N, ...) array as samples; f8 becomes f32. */
static int npy_rows(const char *path, const struct mgpu_npy *a, struct mgpu_samples *t)
{
	uint32_t shape[MGPU_SAMPLES_MAX_DIM];
	size_t i;
	int k, nd;

	if (!((a->kind == 'u' && a->elem_nbytes == 1) || a->kind == 'f') || a->ndim < 2 ||
	    a->ndim > MGPU_SAMPLES_MAX_DIM + 1 || a->dims[0] == 0)
		return mgpu_err(MGPU_EFORMAT, "'%s': want an array of samples (N, ...) of |u1, "
				"<f4 or <f8 with 2 to 5 dimensions, not %s of %d", path,
				mgpu_npy_descr(a), a->ndim);
	/* (N,H,W) is taken for one-channel images, (1,H,W); series (N,C,L)
	 * need --shape CxL */
	nd = a->ndim == 3 ? 3 : a->ndim - 1;
	shape[0] = 1;
	for (k = 1; k < a->ndim; k++)
		shape[k - 1 + nd - (a->ndim - 1)] =
			a->dims[k] > UINT32_MAX ? 0 : (uint32_t)a->dims[k];
	MGPU_TRY(mgpu_samples_init(t, a->kind == 'u' ? MGPU_DTYPE_U8 : MGPU_DTYPE_F32, nd,
				   shape));
	MGPU_TRY(mgpu_samples_reserve(t, (size_t)a->dims[0]));
	t->n = (size_t)a->dims[0];
	if (a->kind == 'u' || a->elem_nbytes == 4)
		memcpy(t->x, a->data, a->count * a->elem_nbytes);
	else
		for (i = 0; i < a->count; i++)
			((float *)(void *)t->x)[i] = (float)mgpu_npy_value(a, i);
	i = a->kind == 'u' ? a->count :
		mgpu_f32_first_nonfinite((const float *)(const void *)t->x, a->count);
	if (i < a->count)
		return mgpu_err(MGPU_EFORMAT, "'%s': sample %zu, element %zu is %g; features "
				"must be finite", path, i / t->d, i % t->d,
				(double)((const float *)(const void *)t->x)[i]);
	return 0;
}

static int npy_file(const char *path, const struct mgpu_input_opts *o,
		    struct mgpu_samples *out)
{
	struct mgpu_npy a;
	struct mgpu_samples t = { 0 };
	size_t i;
	int rc;

	MGPU_TRY(need_labels(path, o));
	MGPU_TRY(mgpu_npy_load(path, &a));
	rc = npy_rows(path, &a, &t);
	mgpu_npy_free(&a);
	if (rc == 0)
		rc = npy_labels(o->labels, t.n, t.y);
	for (i = 0; rc == 0 && i < t.n; i++)
		if (t.y[i] + 1 > t.classes)
			t.classes = t.y[i] + 1;
	if (rc == 0)
		rc = shaped(&t, o, path);
	if (rc == 0)
		rc = mgpu_samples_append(out, &t, path);
	mgpu_samples_free(&t);
	return rc;
}

static int idx_file(const char *path, const struct mgpu_input_opts *o,
		    struct mgpu_samples *out)
{
	struct mgpu_samples t;

	MGPU_TRY(need_labels(path, o));
	MGPU_TRY(mgpu_idx_load_samples(path, o->labels, &t));
	return append_free(out, &t, path, o);
}

static int csv_file(const char *path, const struct mgpu_input_opts *o,
		    struct mgpu_samples *out)
{
	struct mgpu_samples t;

	MGPU_TRY(mgpu_csv_load_t(path, o->label_column, o->target_columns, &t));
	return append_free(out, &t, path, o);
}

static int archive(const char *path, const struct mgpu_input_opts *o,
		   struct mgpu_samples *out)
{
	struct mgpu_samples t = { 0 };
	int rc;

	rc = mgpu_wds_read_resized(path, &t, NULL, o->progress, o->progress_ctx,
				   o->resize[0] ? o->resize : NULL);
	if (rc == 0 && t.n == 0)
		rc = mgpu_err(MGPU_EFORMAT, "'%s': no samples in the archive", path);
	if (rc == 0)
		rc = shaped(&t, o, path);
	if (rc == 0)
		rc = mgpu_samples_append(out, &t, path);
	mgpu_samples_free(&t);
	return rc;
}

int mgpu_input_load(const char *path, const struct mgpu_input_opts *o,
		    struct mgpu_samples *out, struct mgpu_samples *test)
{
	struct stat st;

	if (o->tokens) {
		struct mgpu_tokens_opts to = { (size_t)o->text_context, o->token_bytes,
					       (uint64_t)o->vocab };
		return mgpu_tokens_load(path, &to, out);
	}
	if (o->text_context)
		return mgpu_text_load(path, (size_t)o->text_context, (size_t)o->text_max, out);
	if (strcmp(path, "-") == 0)
		return archive(path, o, out);
	if (stat(path, &st) != 0)
		return mgpu_err_errno(MGPU_EIO, "'%s': cannot open", path);
	if (S_ISDIR(st.st_mode))
		return dir_source(path, o, out, test);
	if (o->target_columns && !kind_is(path, ".csv"))
		return mgpu_err(MGPU_EINVAL, "'%s': --target-columns names CSV columns, and this "
				"is no .csv (an archive's targets are its members: KEY.json, "
				"KEY.target.npy, KEY.mask.png)", path);
	if (kind_is(path, ".ts"))
		return ts_file(path, o, out);
	if (kind_is(path, ".csv"))
		return csv_file(path, o, out);
	if (kind_is(path, ".npy"))
		return npy_file(path, o, out);
	if (kind_is(path, "-ubyte") || kind_is(path, ".idx"))
		return idx_file(path, o, out);
	return archive(path, o, out);
}
