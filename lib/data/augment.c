/*
 * augment.c - seeded crop and flip of image rows (see augment.h).
 *
 * One hash of (seed, epoch, row) gives a row's three draws; the pixels go
 * through a scratch copy of the row since the window overlaps the source.
 */
#include "data/augment.h"

#include <errno.h>  /* errno */
#include <stdio.h>  /* snprintf */
#include <stdlib.h> /* strtol */
#include <string.h> /* memcpy, strcmp, strncmp, strlen */

#include "core/err.h"     /* mgpu_err */
#include "core/hash.h"    /* mgpu_hash64 */
#include "data/samples.h" /* MGPU_DTYPE_*, mgpu_samples_shape_str */

/* Keeps the augmentation's draws apart from every other use of the seed. */
#define STREAM_AUGMENT 0x61756731ull

int mgpu_augment_parse(const char *text, struct mgpu_augment *a, const char *what)
{
	struct mgpu_augment r = { 0, 0 };
	const char *p = text, *e;
	char *end;
	size_t n;
	long v;

	if (strcmp(text, "none") == 0) {
		*a = r;
		return 0;
	}
	for (; *text; p = e + 1) { /* each comma-separated item, none empty */
		e = strchr(p, ',');
		e = e ? e : p + strlen(p);
		n = (size_t)(e - p);
		if (n == 4 && strncmp(p, "flip", 4) == 0 && !r.flip) {
			r.flip = 1;
			if (!*e)
				break;
			continue;
		}
		if (n > 5 && strncmp(p, "crop=", 5) == 0 && !r.crop) {
			errno = 0;
			v = strtol(p + 5, &end, 10);
			if (end == e && !errno && v >= 1 && v <= MGPU_AUGMENT_MAX_CROP &&
			    p[5] >= '0' && p[5] <= '9') {
				r.crop = (int)v;
				if (!*e)
					break;
				continue;
			}
		}
		return mgpu_err(MGPU_EINVAL, "%s: '%s' is not crop=P (1 to %d pixels), flip, "
				"both joined by a comma, or none", what, text,
				MGPU_AUGMENT_MAX_CROP);
	}
	if (!r.crop && !r.flip)
		return mgpu_err(MGPU_EINVAL, "%s: '%s' asks for nothing (none turns it off)",
				what, text);
	*a = r;
	return 0;
}

void mgpu_augment_format(const struct mgpu_augment *a, char *buf, size_t len)
{
	if (a->crop && a->flip)
		snprintf(buf, len, "crop=%d,flip", a->crop);
	else if (a->crop)
		snprintf(buf, len, "crop=%d", a->crop);
	else
		snprintf(buf, len, "%s", a->flip ? "flip" : "none");
}

int mgpu_augment_on(const struct mgpu_augment *a)
{
	return a->crop > 0 || a->flip;
}

int mgpu_augment_check(const struct mgpu_augment *a, int ndim, const uint32_t *shape,
		       const char *data)
{
	char s[64];

	if (!mgpu_augment_on(a) || ndim == 3)
		return 0;
	mgpu_samples_shape_str(ndim, shape, s, sizeof s);
	return mgpu_err(MGPU_EINVAL, "'%s': --augment crops and flips images (CxHxW), but its "
			"samples are %s (mgpu-shard --shape gives them one)", data, s);
}

void mgpu_augment_draw(const struct mgpu_augment *a, uint64_t seed, uint64_t epoch,
		       uint32_t idx, int *dy, int *dx, int *flip)
{
	uint64_t h = mgpu_hash64(mgpu_hash64(mgpu_hash64(seed, STREAM_AUGMENT), epoch), idx);
	uint64_t span = 2 * (uint64_t)a->crop + 1;

	*dy = a->crop ? (int)((h & 0xffffff) % span) : a->crop;
	*dx = a->crop ? (int)(((h >> 24) & 0xffffff) % span) : a->crop;
	*flip = a->flip ? (int)(h >> 63) : 0;
}

/* One channel plane: out(i, j) = in(i + dy - P, jj + dx - P), jj = j or
 * W - 1 - j when flipped, pad outside. T is the element type. */
#define PLANE(T)                                                                      \
	static void plane_##T(const T *in, T *out, long H, long W, long P, int dy, int dx, \
			      int flip, T pad)                                        \
	{                                                                             \
		long i, j, si, sj;                                                    \
		for (i = 0; i < H; i++) {                                             \
			si = i + dy - P;                                              \
			for (j = 0; j < W; j++) {                                     \
				sj = (flip ? W - 1 - j : j) + dx - P;                 \
				out[i * W + j] = si >= 0 && si < H && sj >= 0 && sj < W \
					? in[si * W + sj] : pad;                      \
			}                                                             \
		}                                                                     \
	}
typedef unsigned char u8;
PLANE(u8)
PLANE(float)

void mgpu_augment_rows(const struct mgpu_augment *a, uint64_t seed, uint64_t epoch,
		       const uint32_t *idx, size_t n, void *x, int dtype, const uint32_t *shape,
		       float pad, void *scratch)
{
	size_t hw = (size_t)shape[1] * shape[2], d = hw * shape[0], i, c;
	size_t esz = dtype == MGPU_DTYPE_U8 ? 1 : 4;
	int dy, dx, flip;
	unsigned char *row;

	if (!mgpu_augment_on(a))
		return;
	for (i = 0; i < n; i++) {
		mgpu_augment_draw(a, seed, epoch, idx[i], &dy, &dx, &flip);
		if (dy == a->crop && dx == a->crop && !flip)
			continue; /* the window at the centre, unflipped: the row itself */
		row = (unsigned char *)x + i * d * esz;
		memcpy(scratch, row, d * esz);
		for (c = 0; c < shape[0]; c++) {
			if (dtype == MGPU_DTYPE_U8)
				plane_u8((const u8 *)scratch + c * hw, (u8 *)row + c * hw,
					 shape[1], shape[2], a->crop, dy, dx, flip, 0);
			else
				plane_float((const float *)scratch + c * hw, (float *)(void *)row +
					    c * hw, shape[1], shape[2], a->crop, dy, dx, flip, pad);
		}
	}
}
