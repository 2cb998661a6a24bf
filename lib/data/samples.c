/*
 * samples.c - in-memory labelled sample sets (see samples.h).
 */
#include "data/samples.h"

#include <errno.h>  /* errno */
#include <math.h>   /* isfinite */
#include <stdio.h>  /* snprintf */
#include <stdlib.h> /* realloc, free, strtoull */
#include <string.h> /* memset, memcpy */

#include "core/err.h" /* mgpu_err */

/* Indexed by enum mgpu_dtype. */
static const struct {
	size_t nbytes;
	const char *name, *descr;
} dtypes[] = {
	[MGPU_DTYPE_U8] = { 1, "u8", "|u1" },
	[MGPU_DTYPE_F32] = { 4, "f32", "<f4" },
	[MGPU_DTYPE_U16] = { 2, "u16", "<u2" },
	[MGPU_DTYPE_U32] = { 4, "u32", "<u4" },
};

static int known(int dtype)
{
	return dtype > 0 && dtype < (int)(sizeof dtypes / sizeof dtypes[0]) && dtypes[dtype].name;
}

size_t mgpu_dtype_nbytes(int dtype)
{
	return known(dtype) ? dtypes[dtype].nbytes : 0;
}

const char *mgpu_dtype_npy_descr(int dtype)
{
	return known(dtype) ? dtypes[dtype].descr : NULL;
}

int mgpu_dtype_from_npy(char kind, size_t elem_nbytes)
{
	if (kind == 'f' && (elem_nbytes == 4 || elem_nbytes == 8))
		return MGPU_DTYPE_F32;
	if (kind != 'u')
		return 0;
	return elem_nbytes == 1 ? MGPU_DTYPE_U8 : elem_nbytes == 2 ? MGPU_DTYPE_U16 :
		elem_nbytes == 4 ? MGPU_DTYPE_U32 : 0;
}

int mgpu_dtype_is_token(int dtype)
{
	return dtype == MGPU_DTYPE_U16 || dtype == MGPU_DTYPE_U32;
}

double mgpu_samples_value(const struct mgpu_samples *s, size_t i, size_t j)
{
	const unsigned char *row = s->x + i * s->row_nbytes;

	switch (s->dtype) {
	case MGPU_DTYPE_U8:
		return row[j];
	case MGPU_DTYPE_U16:
		return ((const uint16_t *)(const void *)row)[j];
	case MGPU_DTYPE_U32:
		return ((const uint32_t *)(const void *)row)[j];
	}
	return ((const float *)(const void *)row)[j];
}

size_t mgpu_f32_first_nonfinite(const float *x, size_t count)
{
	size_t i;

	for (i = 0; i < count; i++)
		if (!isfinite(x[i]))
			return i;
	return count;
}

const char *mgpu_dtype_name(int dtype)
{
	return known(dtype) ? dtypes[dtype].name : "?";
}

int mgpu_samples_init(struct mgpu_samples *s, int dtype, int ndim, const uint32_t *shape)
{
	size_t d = 1;
	int i;

	memset(s, 0, sizeof *s);
	if (!mgpu_dtype_nbytes(dtype) || ndim < 1 || ndim > MGPU_SAMPLES_MAX_DIM)
		return mgpu_err(MGPU_EINVAL, "bad sample dtype %d or %d dimensions", dtype,
				ndim);
	for (i = 0; i < ndim; i++) {
		d *= shape[i];
		if (shape[i] == 0 || d >= MGPU_SAMPLES_MAX_D)
			return mgpu_err(MGPU_ERANGE, "sample shape has %s dimension",
					shape[i] ? "too large a" : "a zero");
		s->shape[i] = shape[i];
	}
	s->dtype = dtype;
	s->ndim = ndim;
	s->d = d;
	s->row_nbytes = d * mgpu_dtype_nbytes(dtype);
	return 0;
}

int mgpu_samples_reserve(struct mgpu_samples *s, size_t n)
{
	unsigned char *nx;
	int32_t *ny;
	size_t nbytes;

	if (n <= s->cap)
		return 0;
	if (__builtin_mul_overflow(n, s->row_nbytes, &nbytes))
		return mgpu_err(MGPU_ENOMEM, "%zu samples do not fit in memory", n);
	nx = realloc(s->x, nbytes ? nbytes : 1);
	if (!nx)
		return mgpu_err(MGPU_ENOMEM, "out of memory for %zu samples", n);
	s->x = nx;
	ny = realloc(s->y, n * sizeof *ny);
	if (!ny)
		return mgpu_err(MGPU_ENOMEM, "out of memory for %zu labels", n);
	s->y = ny;
	if (s->tkind) {
		if (__builtin_mul_overflow(n, s->t_nbytes, &nbytes))
			return mgpu_err(MGPU_ENOMEM, "%zu targets do not fit in memory", n);
		nx = realloc(s->t, nbytes ? nbytes : 1);
		if (!nx)
			return mgpu_err(MGPU_ENOMEM, "out of memory for %zu targets", n);
		s->t = nx;
	}
	s->cap = n;
	return 0;
}

int mgpu_samples_push(struct mgpu_samples *s, const void *row, int32_t label)
{
	if (label < 0 || label >= MGPU_SAMPLES_MAX_CLASSES)
		return mgpu_err(MGPU_ERANGE, "label %d out of range [0,%d)", (int)label,
				MGPU_SAMPLES_MAX_CLASSES);
	if (s->n == s->cap)
		MGPU_TRY(mgpu_samples_reserve(s, s->cap ? s->cap * 2 : 256));
	memcpy(s->x + s->n * s->row_nbytes, row, s->row_nbytes);
	s->y[s->n++] = label;
	if (label + 1 > s->classes)
		s->classes = label + 1;
	return 0;
}

const char *mgpu_target_kind_name(int kind)
{
	switch (kind) {
	case MGPU_TARGET_VECTOR: return "vector";
	case MGPU_TARGET_MASK: return "mask";
	case MGPU_TARGET_KEYPOINTS: return "keypoints";
	}
	return "none";
}

int mgpu_samples_set_target(struct mgpu_samples *s, int kind, int ndim, const uint32_t *shape)
{
	size_t count = 1;
	int i;

	if (s->n || s->cap)
		return mgpu_err(MGPU_EINVAL, "a target is set before the first sample");
	s->tkind = s->tdtype = s->tndim = 0;
	s->t_nbytes = 0;
	memset(s->tshape, 0, sizeof s->tshape);
	if (kind == MGPU_TARGET_NONE)
		return 0;
	/* a vector is (K), a mask (H,W), keypoints (P,2): what every reader of
	 * a row assumes, so a cache header must not say otherwise */
	if (kind < MGPU_TARGET_VECTOR || kind > MGPU_TARGET_KEYPOINTS ||
	    ndim != (kind == MGPU_TARGET_VECTOR ? 1 : 2) ||
	    (kind == MGPU_TARGET_KEYPOINTS && shape[1] != 2))
		return mgpu_err(MGPU_EINVAL, "bad target kind %d or %d dimensions", kind, ndim);
	for (i = 0; i < ndim; i++) {
		count *= shape[i];
		if (shape[i] == 0 || count >= MGPU_SAMPLES_MAX_D)
			return mgpu_err(MGPU_ERANGE, "target shape has %s dimension",
					shape[i] ? "too large a" : "a zero");
		s->tshape[i] = shape[i];
	}
	s->tkind = kind;
	s->tdtype = kind == MGPU_TARGET_MASK ? MGPU_DTYPE_U8 : MGPU_DTYPE_F32;
	s->tndim = ndim;
	s->t_nbytes = count * mgpu_dtype_nbytes(s->tdtype);
	return 0;
}

int mgpu_samples_same_target(const struct mgpu_samples *a, const struct mgpu_samples *b)
{
	int i;

	if (a->tkind != b->tkind || a->tndim != b->tndim)
		return 0;
	for (i = 0; i < a->tndim; i++)
		if (a->tshape[i] != b->tshape[i])
			return 0;
	return 1;
}

void mgpu_samples_target_str(const struct mgpu_samples *s, char *buf, size_t len)
{
	char sh[64];

	mgpu_samples_shape_str(s->tndim, s->tshape, sh, sizeof sh);
	if (s->tkind)
		snprintf(buf, len, "%s %s", mgpu_target_kind_name(s->tkind), sh);
	else
		snprintf(buf, len, "none");
}

int mgpu_samples_push_t(struct mgpu_samples *s, const void *row, int32_t label,
			const void *target)
{
	if (s->tkind && !target)
		return mgpu_err(MGPU_EINVAL, "a sample without the set's %s target",
				mgpu_target_kind_name(s->tkind));
	MGPU_TRY(mgpu_samples_push(s, row, label));
	if (s->tkind)
		memcpy(s->t + (s->n - 1) * s->t_nbytes, target, s->t_nbytes);
	return 0;
}

int mgpu_samples_push_row(struct mgpu_samples *dst, const struct mgpu_samples *src, size_t i)
{
	return mgpu_samples_push_t(dst, src->x + i * src->row_nbytes, src->y[i],
				   src->tkind ? src->t + i * src->t_nbytes : NULL);
}

int mgpu_samples_take(struct mgpu_samples *dst, const struct mgpu_samples *src,
		      const uint32_t *idx, size_t n)
{
	size_t i;

	if (dst->dtype != src->dtype || dst->d != src->d)
		return mgpu_err(MGPU_EINVAL, "sample sets differ in dtype or shape");
	if (!dst->n && !dst->cap && !dst->tkind && src->tkind)
		MGPU_TRY(mgpu_samples_set_target(dst, src->tkind, src->tndim, src->tshape));
	if (!mgpu_samples_same_target(dst, src))
		return mgpu_err(MGPU_EINVAL, "sample sets differ in their targets");
	MGPU_TRY(mgpu_samples_reserve(dst, dst->n + n));
	for (i = 0; i < n; i++)
		MGPU_TRY(mgpu_samples_push_row(dst, src, idx[i]));
	return 0;
}

void mgpu_samples_shape_str(int ndim, const uint32_t *shape, char *buf, size_t len)
{
	size_t used = 0;
	int i;

	buf[0] = '\0';
	for (i = 0; i < ndim && used < len; i++)
		used += (size_t)snprintf(buf + used, len - used, "%s%u", i ? "x" : "",
					 shape[i]);
}

int mgpu_shape_parse(const char *text, int *ndim, uint32_t shape[MGPU_SAMPLES_MAX_DIM],
		     const char *what)
{
	const char *p = text;
	unsigned long long v;
	char *end;
	int k = 0;

	for (;;) {
		if (*p < '0' || *p > '9' || k == 3)
			break;
		errno = 0;
		v = strtoull(p, &end, 10);
		if (errno || v == 0 || v > UINT32_MAX)
			break;
		shape[k++] = (uint32_t)v;
		p = end;
		if (*p == '\0' && k >= 2) {
			*ndim = k;
			return 0;
		}
		if (*p++ != 'x')
			break;
	}
	return mgpu_err(MGPU_EINVAL, "%s: '%s' is not a shape CxHxW or CxL (positive numbers "
			"joined by x)", what, text);
}

int mgpu_samples_reshape(struct mgpu_samples *s, int ndim, const uint32_t *shape,
			 const char *name)
{
	char a[64], b[64];
	size_t d = 1;
	int i;

	for (i = 0; i < ndim; i++)
		if (__builtin_mul_overflow(d, shape[i], &d))
			d = SIZE_MAX;
	if (ndim < 1 || ndim > MGPU_SAMPLES_MAX_DIM || d != s->d) {
		mgpu_samples_shape_str(ndim, shape, a, sizeof a);
		mgpu_samples_shape_str(s->ndim, s->shape, b, sizeof b);
		return mgpu_err(MGPU_EFORMAT, "'%s': --shape %s holds %zu values, but its "
				"samples are %s (%zu values)", name, a, d, b, s->d);
	}
	memset(s->shape, 0, sizeof s->shape);
	for (i = 0; i < ndim; i++)
		s->shape[i] = shape[i];
	s->ndim = ndim;
	return 0;
}

int mgpu_samples_same_shape(const struct mgpu_samples *s, int ndim, const uint32_t *shape)
{
	int i;

	if (s->ndim != ndim)
		return 0;
	for (i = 0; i < ndim; i++)
		if (s->shape[i] != shape[i])
			return 0;
	return 1;
}

void mgpu_samples_free(struct mgpu_samples *s)
{
	free(s->x);
	free(s->y);
	free(s->t);
	mgpu_class_names_free(s->names, s->nnames);
	memset(s, 0, sizeof *s);
}
