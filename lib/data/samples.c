/*
 * samples.c - in-memory labelled sample sets (see samples.h).
 */
#include "data/samples.h"

#include <math.h>   /* isfinite */
#include <stdio.h>  /* snprintf */
#include <stdlib.h> /* realloc, free */
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

int mgpu_samples_take(struct mgpu_samples *dst, const struct mgpu_samples *src,
		      const uint32_t *idx, size_t n)
{
	size_t i;

	if (dst->dtype != src->dtype || dst->d != src->d)
		return mgpu_err(MGPU_EINVAL, "sample sets differ in dtype or shape");
	MGPU_TRY(mgpu_samples_reserve(dst, dst->n + n));
	for (i = 0; i < n; i++)
		MGPU_TRY(mgpu_samples_push(dst, src->x + (size_t)idx[i] * src->row_nbytes,
					   src->y[idx[i]]));
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
	mgpu_class_names_free(s->names, s->nnames);
	memset(s, 0, sizeof *s);
}
