/*
 * shard.c - deterministic WebDataset tar shards (see shard.h).
 *
 * The ustar headers are written here by hand rather than through
 * libarchive, so that every byte (padding, checksum format, empty names) is
 * fixed by this file and not by the library version.
 */
#include "data/shard.h"

#include <math.h>   /* isnan */
#include <stdio.h>  /* snprintf, sprintf, fwrite */
#include <stdlib.h> /* malloc, free, strtof */
#include <string.h> /* memset, memcpy, strlen */

#include "core/cancel.h" /* mgpu_cancel_check */
#include "core/err.h" /* mgpu_err */
#include "core/io.h"  /* mgpu_afile_* */
#include "data/npy.h" /* mgpu_npy_header */

struct out {
	struct mgpu_afile af;
	struct mgpu_sha256 sha;
	uint64_t nbytes;
};

static int put(struct out *o, const void *p, size_t n)
{
	if (n && fwrite(p, 1, n, o->af.fp) != n)
		return mgpu_err_errno(MGPU_EIO, "'%s': write failed", o->af.path);
	mgpu_sha256_update(&o->sha, p, n);
	o->nbytes += n;
	return 0;
}

static int pad(struct out *o, size_t to)
{
	static const unsigned char zero[MGPU_SHARD_RECORD];
	size_t n = (size_t)((to - o->nbytes % to) % to);

	return put(o, zero, n);
}

static void octal(char *field, size_t width, uint64_t v)
{
	snprintf(field, width, "%0*llo", (int)width - 1, (unsigned long long)v);
}

static int header(struct out *o, const char *name, size_t size)
{
	unsigned char h[512];
	unsigned sum = 0;
	int i;

	memset(h, 0, sizeof h);
	if (strlen(name) >= 100)
		return mgpu_err(MGPU_EINVAL, "'%s': member name '%s' too long", o->af.path, name);
	memcpy(h, name, strlen(name));
	octal((char *)h + 100, 8, 0644);
	octal((char *)h + 108, 8, 0);
	octal((char *)h + 116, 8, 0);
	octal((char *)h + 124, 12, size);
	octal((char *)h + 136, 12, (uint64_t)MGPU_SHARD_MTIME);
	memset(h + 148, ' ', 8);
	h[156] = '0';
	memcpy(h + 257, "ustar\0" "00", 8);
	for (i = 0; i < 512; i++)
		sum += h[i];
	snprintf((char *)h + 148, 8, "%06o", sum); /* then NUL, and the space stays */
	h[155] = ' ';
	return put(o, h, sizeof h);
}

static int member(struct out *o, const char *name, const void *a, size_t an, const void *b,
		  size_t bn)
{
	MGPU_TRY(header(o, name, an + bn));
	MGPU_TRY(put(o, a, an));
	MGPU_TRY(put(o, b, bn));
	return pad(o, 512);
}

/* v with the fewest significant digits (6 to 9) that read back as the
 * same float: 47.525, not 47.5250015. */
static int shortest(char *buf, float v)
{
	int prec, n = 0;

	for (prec = 6; prec <= 9; prec++) {
		n = sprintf(buf, "%.*g", prec, (double)v);
		if (strtof(buf, NULL) == v)
			break;
	}
	return n;
}

/* Keypoints as the JSON they came in: [[x, y], null, ...], each float
 * in the fewest digits that read back as it. */
static int keypoints_json(struct out *o, const char *name, const float *kp, uint32_t np)
{
	char *text = malloc((size_t)np * 40 + 3);
	size_t len = 0;
	uint32_t p;
	int rc;

	if (!text)
		return mgpu_err(MGPU_ENOMEM, "out of memory");
	text[len++] = '[';
	for (p = 0; p < np; p++) {
		if (isnan(kp[2 * p]))
			len += (size_t)sprintf(text + len, "%snull", p ? ", " : "");
		else {
			len += (size_t)sprintf(text + len, "%s[", p ? ", " : "");
			len += (size_t)shortest(text + len, kp[2 * p]);
			len += (size_t)sprintf(text + len, ", ");
			len += (size_t)shortest(text + len, kp[2 * p + 1]);
			text[len++] = ']';
		}
	}
	text[len++] = ']';
	rc = member(o, name, text, len, NULL, 0);
	free(text);
	return rc;
}

/* The sample's target: KEY.json (keypoints), KEY.target.npy (a vector) or
 * KEY.mask.npy (a mask), between its .npy and .cls. */
static int target(struct out *o, const struct mgpu_samples *s, uint32_t i)
{
	const unsigned char *t = s->t + (size_t)i * s->t_nbytes;
	char name[40], hdr[MGPU_NPY_HEADER_MAX];
	size_t hn;

	if (s->tkind == MGPU_TARGET_KEYPOINTS) {
		snprintf(name, sizeof name, "%08u.json", i);
		return keypoints_json(o, name, (const float *)(const void *)t, s->tshape[0]);
	}
	hn = mgpu_npy_header(hdr, mgpu_dtype_npy_descr(s->tdtype), s->tndim, s->tshape);
	snprintf(name, sizeof name, "%08u.%s.npy", i,
		 s->tkind == MGPU_TARGET_MASK ? "mask" : "target");
	return member(o, name, hdr, hn, t, s->t_nbytes);
}

static int sample(struct out *o, const struct mgpu_samples *s, uint32_t i)
{
	char name[32], hdr[MGPU_NPY_HEADER_MAX], cls[16];
	size_t hn;
	int cn;

	hn = mgpu_npy_header(hdr, mgpu_dtype_npy_descr(s->dtype), s->ndim, s->shape);
	snprintf(name, sizeof name, "%08u.npy", i);
	MGPU_TRY(member(o, name, hdr, hn, s->x + (size_t)i * s->row_nbytes, s->row_nbytes));
	if (s->tkind)
		MGPU_TRY(target(o, s, i));
	cn = snprintf(cls, sizeof cls, "%d", (int)s->y[i]);
	snprintf(name, sizeof name, "%08u.cls", i);
	return member(o, name, cls, (size_t)cn, NULL, 0);
}

int mgpu_shard_write(const char *path, const struct mgpu_samples *s, const uint32_t *idx,
		     size_t n, uint64_t *nbytes, char *sha_hex)
{
	struct out o;
	uint8_t dig[MGPU_SHA256_NBYTES];
	size_t i;
	int rc = 0;

	memset(&o, 0, sizeof o);
	mgpu_sha256_init(&o.sha);
	MGPU_TRY(mgpu_afile_open(&o.af, path));
	for (i = 0; i < n; i++) {
		if (i % 256 == 0) /* SIGINT: stop, and the temporary goes */
			MGPU_CHECK(mgpu_cancel_check());
		MGPU_CHECK(sample(&o, s, idx[i]));
	}
	MGPU_CHECK(pad(&o, 512));
	MGPU_CHECK(put(&o, (const unsigned char[1024]){ 0 }, 1024));
	MGPU_CHECK(pad(&o, MGPU_SHARD_RECORD));
	MGPU_CHECK(mgpu_afile_commit(&o.af));
	mgpu_sha256_final(&o.sha, dig);
	if (sha_hex)
		mgpu_sha256_hex(dig, sha_hex);
	*nbytes = o.nbytes;
	return 0;
out:
	mgpu_afile_abort(&o.af);
	return rc;
}
