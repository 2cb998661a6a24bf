/*
 * idx.c - IDX parsing (see idx.h).
 *
 * The parser only reads inside buf[0..len) and checks the header before
 * trusting it: every size is computed with overflow checks, so a header may
 * claim anything and the result is an error, never an out-of-bounds read.
 */
#include "data/idx.h"

#include <stdlib.h> /* free */
#include <string.h> /* memset, memcpy */

#include "core/err.h"    /* mgpu_err, MGPU_E* */
#include "data/decomp.h" /* mgpu_read_maybe_compressed */

static uint32_t be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint64_t be64(const unsigned char *p)
{
	return (uint64_t)be32(p) << 32 | be32(p + 4);
}

static size_t type_nbytes(int type)
{
	switch (type) {
	case MGPU_IDX_U8:
	case MGPU_IDX_S8: return 1;
	case MGPU_IDX_I16: return 2;
	case MGPU_IDX_I32:
	case MGPU_IDX_F32: return 4;
	case MGPU_IDX_F64: return 8;
	}
	return 0;
}

const char *mgpu_idx_type_name(int type)
{
	switch (type) {
	case MGPU_IDX_U8: return "u8";
	case MGPU_IDX_S8: return "s8";
	case MGPU_IDX_I16: return "i16";
	case MGPU_IDX_I32: return "i32";
	case MGPU_IDX_F32: return "f32";
	case MGPU_IDX_F64: return "f64";
	}
	return NULL;
}

/* Check the 4-byte magic and fill type, ndim and elem_nbytes. */
static int parse_magic(const unsigned char *buf, size_t len, const char *path,
		       struct mgpu_idx *out)
{
	uint32_t magic;

	if (len < 4)
		return mgpu_err(MGPU_EFORMAT, "'%s': truncated: %zu bytes, an IDX header "
				"needs at least 4", path, len);
	magic = be32(buf);
	if (buf[0] != 0 || buf[1] != 0 || !type_nbytes(buf[2]))
		return mgpu_err(MGPU_EFORMAT, "'%s': bad IDX magic 0x%08x", path, magic);
	if (buf[3] == 0 || buf[3] > MGPU_IDX_MAX_DIM)
		return mgpu_err(MGPU_EFORMAT, "'%s': IDX has %d dimensions, want 1 to %d",
				path, buf[3], MGPU_IDX_MAX_DIM);
	out->type = buf[2];
	out->ndim = buf[3];
	out->elem_nbytes = type_nbytes(buf[2]);
	return 0;
}

/* Read the header from buf[0..len): *hdr its size, *nbytes the data's. */
static int parse_header(const unsigned char *buf, size_t len, const char *path,
			struct mgpu_idx *out, size_t *hdr, size_t *nbytes)
{
	size_t count = 1;
	int i;

	memset(out, 0, sizeof *out);
	MGPU_TRY(parse_magic(buf, len, path, out));
	*hdr = 4 + 4 * (size_t)out->ndim;
	if (len < *hdr)
		return mgpu_err(MGPU_EFORMAT, "'%s': truncated: %zu bytes, the IDX header "
				"of %d dimensions needs %zu", path, len, out->ndim, *hdr);
	for (i = 0; i < out->ndim; i++) {
		out->dims[i] = be32(buf + 4 + 4 * i);
		if (__builtin_mul_overflow(count, (size_t)out->dims[i], &count))
			return mgpu_err(MGPU_ERANGE, "'%s': IDX dimensions overflow", path);
	}
	if (__builtin_mul_overflow(count, out->elem_nbytes, nbytes))
		return mgpu_err(MGPU_ERANGE, "'%s': IDX dimensions overflow", path);
	out->count = count;
	return 0;
}

int mgpu_idx_parse(const unsigned char *buf, size_t len, const char *path,
		   struct mgpu_idx *out)
{
	size_t hdr, nbytes;
	int rc;

	rc = parse_header(buf, len, path, out, &hdr, &nbytes);
	if (rc == 0 && len - hdr < nbytes)
		rc = mgpu_err(MGPU_EFORMAT, "'%s': truncated: header says %zu bytes of "
			      "data, file has %zu", path, nbytes, len - hdr);
	if (rc == 0 && len - hdr > nbytes)
		rc = mgpu_err(MGPU_EFORMAT, "'%s': %zu bytes of trailing garbage after "
			      "%zu bytes of data", path, len - hdr - nbytes, nbytes);
	if (rc < 0) {
		memset(out, 0, sizeof *out);
		return rc;
	}
	out->data = buf + hdr;
	return 0;
}

/* The bytes a (compressed) file may decode to: what its header declares,
 * plus some slack so that trailing garbage gets its own message. */
static int declared_nbytes(const char *path, size_t *max)
{
	unsigned char head[4 + 4 * MGPU_IDX_MAX_DIM];
	struct mgpu_idx h;
	size_t n, hdr, nbytes;

	MGPU_TRY(mgpu_read_maybe_compressed_head(path, head, sizeof head, &n));
	MGPU_TRY(parse_header(head, n, path, &h, &hdr, &nbytes));
	if (__builtin_add_overflow(hdr + MGPU_IDX_SLACK_NBYTES, nbytes, max))
		return mgpu_err(MGPU_ERANGE, "'%s': IDX dimensions overflow", path);
	return 0;
}

int mgpu_idx_load(const char *path, struct mgpu_idx *out)
{
	unsigned char *buf;
	size_t len, max;
	int rc;

	memset(out, 0, sizeof *out);
	MGPU_TRY(declared_nbytes(path, &max));
	rc = mgpu_read_maybe_compressed_max(path, max, &buf, &len);
	if (rc == MGPU_ERANGE) /* a decompression bomb, or garbage after the data */
		return mgpu_err(MGPU_EFORMAT, "'%s': decodes to more than the %zu bytes its "
				"IDX header declares (stopped reading)", path,
				max - MGPU_IDX_SLACK_NBYTES);
	MGPU_TRY(rc);
	rc = mgpu_idx_parse(buf, len, path, out);
	if (rc < 0) {
		free(buf);
		memset(out, 0, sizeof *out);
		return rc;
	}
	out->owned = buf;
	return 0;
}

double mgpu_idx_value(const struct mgpu_idx *idx, size_t i)
{
	const unsigned char *p = idx->data + i * idx->elem_nbytes;
	uint32_t u32;
	uint64_t u64;
	float f;
	double d;

	switch (idx->type) {
	case MGPU_IDX_U8: return p[0];
	case MGPU_IDX_S8: return (int8_t)p[0];
	case MGPU_IDX_I16: return (int16_t)(uint16_t)(p[0] << 8 | p[1]);
	case MGPU_IDX_I32: return (int32_t)be32(p);
	case MGPU_IDX_F32:
		u32 = be32(p);
		memcpy(&f, &u32, sizeof f);
		return f;
	case MGPU_IDX_F64:
		u64 = be64(p);
		memcpy(&d, &u64, sizeof d);
		return d;
	}
	return 0;
}

void mgpu_idx_free(struct mgpu_idx *idx)
{
	free(idx->owned);
	memset(idx, 0, sizeof *idx);
}
