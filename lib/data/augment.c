/*
 * augment.c - seeded crop and flip of image rows (see augment.h).
 *
 * One hash of (seed, epoch, row) gives a row's three draws; the pixels go
 * through a scratch copy of the row since the window overlaps the source.
 */
#include "data/augment.h"

#include <errno.h>  /* errno */
#include <math.h>   /* cosf, sinf, floorf, isnan, NAN, M_PI */
#include <stddef.h> /* max_align_t */
#include <stdio.h>  /* snprintf */
#include <stdlib.h> /* strtol */
#include <string.h> /* memcpy, strcmp, strncmp, strlen */

#include "core/err.h"     /* mgpu_err */
#include "core/hash.h"    /* mgpu_hash64 */
#include "data/samples.h" /* MGPU_DTYPE_*, MGPU_TARGET_*, mgpu_samples_shape_str */

/* A mask's padding: 255, the label no loss or metric counts. */
#define MGPU_MASK_PAD 255

/* Keeps the augmentation's draws apart from every other use of the seed. */
#define STREAM_AUGMENT 0x61756731ull
/* The rotation's draw, apart from the crop and flip's (which stay what
 * they were before rotations existed). */
#define STREAM_ROTATE 0x726f7431ull
/* malloc's alignment, which the scratch's two halves both keep. */
#define SCRATCH_ALIGN _Alignof(max_align_t)

/* Item p..e is KEY=V with V a whole number from 1 to max: V, else 0. */
static int int_item(const char *p, const char *e, const char *key, long max)
{
	size_t k = strlen(key);
	char *end;
	long v;

	if ((size_t)(e - p) <= k || strncmp(p, key, k) != 0 || p[k] < '0' || p[k] > '9')
		return 0;
	errno = 0;
	v = strtol(p + k, &end, 10);
	return end == e && !errno && v >= 1 && v <= max ? (int)v : 0;
}

int mgpu_augment_parse(const char *text, struct mgpu_augment *a, const char *what)
{
	struct mgpu_augment r;
	const char *p, *e;
	int v;

	r.crop = r.flip = r.rotate = 0;
	if (strcmp(text, "none") == 0)
		goto done;
	for (p = text; *text; p = e + 1) { /* each comma-separated item, none empty or twice */
		e = strchr(p, ',');
		e = e ? e : p + strlen(p);
		if (e - p == 4 && strncmp(p, "flip", 4) == 0 && !r.flip)
			r.flip = 1;
		else if ((v = int_item(p, e, "rotate=", MGPU_AUGMENT_MAX_ROTATE)) && !r.rotate)
			r.rotate = v;
		else if ((v = int_item(p, e, "crop=", MGPU_AUGMENT_MAX_CROP)) && !r.crop)
			r.crop = v;
		else
			return mgpu_err(MGPU_EINVAL, "%s: '%s' is not crop=P (1 to %d pixels), flip, "
					"rotate=D (1 to %d degrees), some joined by commas, or none",
					what, text, MGPU_AUGMENT_MAX_CROP, MGPU_AUGMENT_MAX_ROTATE);
		if (!*e)
			break;
	}
	if (!r.crop && !r.flip && !r.rotate)
		return mgpu_err(MGPU_EINVAL, "%s: '%s' asks for nothing (none turns it off)",
				what, text);
done: /* the symmetry pairs are mgpu_augment_parse_pairs', kept */
	a->crop = r.crop;
	a->flip = r.flip;
	a->rotate = r.rotate;
	return 0;
}

void mgpu_augment_format(const struct mgpu_augment *a, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	if (a->crop)
		used += (size_t)snprintf(buf, len, "crop=%d", a->crop);
	if (a->flip && used < len)
		used += (size_t)snprintf(buf + used, len - used, "%sflip", used ? "," : "");
	if (a->rotate && used < len)
		used += (size_t)snprintf(buf + used, len - used, "%srotate=%d", used ? "," : "",
					 a->rotate);
	if (!used)
		snprintf(buf, len, "none");
}

int mgpu_augment_parse_pairs(const char *text, struct mgpu_augment *a, const char *what)
{
	uint8_t m[MGPU_AUGMENT_MAX_PARTS];
	const char *p = text;
	char *end;
	long u, v;
	int i, n = 0;

	for (i = 0; i < MGPU_AUGMENT_MAX_PARTS; i++)
		m[i] = (uint8_t)i;
	if (strcmp(text, "none") != 0)
		for (;;) {
			errno = 0;
			u = *p >= '0' && *p <= '9' ? strtol(p, &end, 10) : -1;
			if (u < 0 || errno || *end != ':' || end[1] < '0' || end[1] > '9')
				goto bad;
			v = strtol(end + 1, &end, 10);
			if (errno || u >= MGPU_AUGMENT_MAX_PARTS || v >= MGPU_AUGMENT_MAX_PARTS ||
			    u == v || m[u] != u || m[v] != v)
				goto bad;
			m[u] = (uint8_t)v;
			m[v] = (uint8_t)u;
			n++;
			if (!*end)
				break;
			if (*end != ',')
				goto bad;
			p = end + 1;
		}
	memcpy(a->mirror, m, sizeof m);
	a->npairs = n;
	return 0;
bad:
	return mgpu_err(MGPU_EINVAL, "%s: '%s' is not pairs A:B of distinct part numbers "
			"(0 to %d, each in one pair) joined by commas, or none", what, text,
			MGPU_AUGMENT_MAX_PARTS - 1);
}

void mgpu_augment_format_pairs(const struct mgpu_augment *a, char *buf, size_t len)
{
	size_t used = 0;
	int p;

	buf[0] = '\0';
	for (p = 0; a->npairs && p < MGPU_AUGMENT_MAX_PARTS && used < len; p++)
		if (a->mirror[p] > p)
			used += (size_t)snprintf(buf + used, len - used, "%s%d:%d", used ? "," : "",
						 p, a->mirror[p]);
	if (!used)
		snprintf(buf, len, "none");
}

int mgpu_augment_on(const struct mgpu_augment *a)
{
	return a->crop > 0 || a->flip || a->rotate > 0;
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

float mgpu_augment_angle(const struct mgpu_augment *a, uint64_t seed, uint64_t epoch,
			 uint32_t idx)
{
	uint64_t h = mgpu_hash64(mgpu_hash64(mgpu_hash64(seed, STREAM_AUGMENT), epoch), idx);
	float u = (float)(mgpu_hash64(h, STREAM_ROTATE) >> 40) * (1.0f / 16777216.0f);

	return a->rotate ? (2.0f * u - 1.0f) * (float)a->rotate : 0.0f;
}

/* Where the scratch's second half begins: float rows and keypoints are
 * read as floats there, and a uint8 row may have any size (3x5x5). */
static size_t second_half(size_t row_nbytes)
{
	return (row_nbytes + SCRATCH_ALIGN - 1) / SCRATCH_ALIGN * SCRATCH_ALIGN;
}

size_t mgpu_augment_scratch_nbytes(size_t row_nbytes, size_t t_nbytes)
{
	return second_half(row_nbytes) + row_nbytes + t_nbytes + 1;
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

/* One plane turned by angle (cs, sn) about its centre, nearest pixel:
 * out(i, j) = in(round(y), round(x)) with (x, y) the point that the
 * rotation carries to (j, i); pad outside. */
#define ROTATE(T)                                                                     \
	static void rotate_##T(const T *in, T *out, long H, long W, float cs, float sn,  \
			       T pad)                                                 \
	{                                                                             \
		float cy = 0.5f * (float)(H - 1), cx = 0.5f * (float)(W - 1), x, y;   \
		long i, j, si, sj;                                                    \
		for (i = 0; i < H; i++)                                               \
			for (j = 0; j < W; j++) {                                     \
				x = cx + cs * ((float)j - cx) + sn * ((float)i - cy); \
				y = cy - sn * ((float)j - cx) + cs * ((float)i - cy); \
				sj = (long)floorf(x + 0.5f);                          \
				si = (long)floorf(y + 0.5f);                          \
				out[i * W + j] = si >= 0 && si < H && sj >= 0 && sj < W \
					? in[si * W + sj] : pad;                      \
			}                                                             \
	}
ROTATE(u8)
ROTATE(float)

/* Keypoints moved as the pixels move: turned by (cs, sn) about the centre,
 * cut at (dy, dx) of the P-padded image, mirrored, the symmetry pairs
 * swapped when mirrored; a part off the image becomes NaN. */
static void move_keypoints(const struct mgpu_augment *a, float *kp, uint32_t np, long H, long W,
			   float cs, float sn, int dy, int dx, int flip, float *tmp)
{
	float cy = 0.5f * (float)(H - 1), cx = 0.5f * (float)(W - 1), x, y;
	uint32_t p, q;

	for (p = 0; p < np; p++) {
		x = kp[2 * p];
		y = kp[2 * p + 1];
		if (!isnan(x) && !isnan(y)) {
			/* the forward map of ROTATE's inverse one */
			float xr = cx + cs * (x - cx) - sn * (y - cy);
			float yr = cy + sn * (x - cx) + cs * (y - cy);
			x = xr - (float)(dx - a->crop);
			y = yr - (float)(dy - a->crop);
			if (flip)
				x = (float)(W - 1) - x;
			if (x < -0.5f || x > (float)W - 0.5f || y < -0.5f || y > (float)H - 0.5f)
				x = y = NAN;
		}
		q = flip && a->npairs && p < MGPU_AUGMENT_MAX_PARTS && a->mirror[p] < np ?
			    a->mirror[p] : p;
		tmp[2 * q] = x;
		tmp[2 * q + 1] = y;
	}
	memcpy(kp, tmp, (size_t)np * 2 * sizeof *kp);
}

void mgpu_augment_rows(const struct mgpu_augment *a, uint64_t seed, uint64_t epoch,
		       const uint32_t *idx, size_t n, void *x, int dtype, const uint32_t *shape,
		       float pad, void *scratch)
{
	mgpu_augment_rows_t(a, seed, epoch, idx, n, x, dtype, shape, pad, 0, NULL, NULL, 0,
			    scratch);
}

void mgpu_augment_rows_t(const struct mgpu_augment *a, uint64_t seed, uint64_t epoch,
			 const uint32_t *idx, size_t n, void *x, int dtype, const uint32_t *shape,
			 float pad, int tkind, const uint32_t *tshape, void *t, size_t t_nbytes,
			 void *scratch)
{
	size_t hw = (size_t)shape[1] * shape[2], d = hw * shape[0], i, c;
	size_t esz = dtype == MGPU_DTYPE_U8 ? 1 : 4;
	unsigned char *row, *src, *tr, *sc = scratch, *turned = sc + second_half(d * esz);
	int dy, dx, flip, rot;
	float ang, cs, sn;

	if (!mgpu_augment_on(a))
		return;
	for (i = 0; i < n; i++) {
		mgpu_augment_draw(a, seed, epoch, idx[i], &dy, &dx, &flip);
		ang = mgpu_augment_angle(a, seed, epoch, idx[i]);
		rot = ang != 0.0f;
		if (dy == a->crop && dx == a->crop && !flip && !rot)
			continue; /* the window at the centre, unflipped: the row itself */
		/* a row drawn unturned after a turned one must not keep its angle */
		cs = rot ? cosf(ang * (float)(M_PI / 180.0)) : 1.0f;
		sn = rot ? sinf(ang * (float)(M_PI / 180.0)) : 0.0f;
		row = (unsigned char *)x + i * d * esz;
		memcpy(scratch, row, d * esz);
		src = sc;
		for (c = 0; rot && c < shape[0]; c++) { /* turn first, into the second half */
			if (dtype == MGPU_DTYPE_U8)
				rotate_u8((const u8 *)sc + c * hw, (u8 *)turned + c * hw, shape[1],
					  shape[2], cs, sn, 0);
			else
				rotate_float((const float *)(void *)sc + c * hw,
					     (float *)(void *)turned + c * hw, shape[1], shape[2],
					     cs, sn, pad);
			src = turned;
		}
		for (c = 0; c < shape[0]; c++) {
			if (dtype == MGPU_DTYPE_U8)
				plane_u8((const u8 *)src + c * hw, (u8 *)row + c * hw,
					 shape[1], shape[2], a->crop, dy, dx, flip, 0);
			else
				plane_float((const float *)(void *)src + c * hw, (float *)(void *)row +
					    c * hw, shape[1], shape[2], a->crop, dy, dx, flip, pad);
		}
		if (!t || tkind == MGPU_TARGET_NONE || tkind == MGPU_TARGET_VECTOR)
			continue;
		tr = (unsigned char *)t + i * t_nbytes;
		if (tkind == MGPU_TARGET_KEYPOINTS) {
			move_keypoints(a, (float *)(void *)tr, tshape[0], shape[1], shape[2], cs, sn,
				       dy, dx, flip, (float *)(void *)turned);
			continue;
		}
		/* a mask: the image's pixels, padding ignored */
		memcpy(sc, tr, hw);
		src = sc;
		if (rot) {
			rotate_u8(sc, turned, shape[1], shape[2], cs, sn, MGPU_MASK_PAD);
			src = turned;
		}
		plane_u8(src, tr, shape[1], shape[2], a->crop, dy, dx, flip, MGPU_MASK_PAD);
	}
}
