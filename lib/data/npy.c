/*
 * npy.c - .npy parsing and header writing (see npy.h).
 *
 * The header dict is parsed by a small recursive-descent reader that only
 * knows what .npy headers contain: quoted strings, True/False and a tuple
 * of non-negative integers. Every size is computed with overflow checks, so
 * a header may claim anything and the result is an error, never an
 * out-of-bounds read or a huge allocation.
 */
#include "data/npy.h"

#include <stdio.h>  /* snprintf */
#include <stdlib.h> /* free */
#include <string.h> /* memcmp, memset, memcpy */

#include "core/err.h"    /* mgpu_err, MGPU_E* */
#include "data/decomp.h" /* mgpu_read_maybe_compressed */

struct cur {
	const char *p, *end;
};

static void skip_ws(struct cur *c)
{
	while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' ||
				 *c->p == '\r'))
		c->p++;
}

static int eat(struct cur *c, char ch)
{
	skip_ws(c);
	if (c->p < c->end && *c->p == ch) {
		c->p++;
		return 1;
	}
	return 0;
}

/* A quoted string ('x' or "x") into buf. */
static int quoted(struct cur *c, char *buf, size_t cap)
{
	char q;
	size_t n = 0;

	skip_ws(c);
	if (c->p >= c->end || (*c->p != '\'' && *c->p != '"'))
		return mgpu_err(MGPU_EFORMAT, "npy header: expected a quoted string");
	q = *c->p++;
	while (c->p < c->end && *c->p != q) {
		if (n + 1 >= cap)
			return mgpu_err(MGPU_EFORMAT, "npy header: string too long");
		buf[n++] = *c->p++;
	}
	if (c->p >= c->end)
		return mgpu_err(MGPU_EFORMAT, "npy header: unterminated string");
	c->p++;
	buf[n] = '\0';
	return 0;
}

static int word(struct cur *c, const char *w)
{
	size_t n = strlen(w);

	skip_ws(c);
	if ((size_t)(c->end - c->p) >= n && memcmp(c->p, w, n) == 0) {
		c->p += n;
		return 1;
	}
	return 0;
}

/* (a, b, ...) with an optional trailing comma; () is a scalar. */
static int shape_tuple(struct cur *c, struct mgpu_npy *a)
{
	uint64_t v;

	if (!eat(c, '('))
		return mgpu_err(MGPU_EFORMAT, "npy header: 'shape' is not a tuple");
	a->ndim = 0;
	while (!eat(c, ')')) {
		skip_ws(c);
		if (c->p >= c->end || *c->p < '0' || *c->p > '9')
			return mgpu_err(MGPU_EFORMAT, "npy header: bad 'shape' entry");
		for (v = 0; c->p < c->end && *c->p >= '0' && *c->p <= '9'; c->p++)
			if (__builtin_mul_overflow(v, 10, &v) ||
			    __builtin_add_overflow(v, (uint64_t)(*c->p - '0'), &v))
				return mgpu_err(MGPU_ERANGE, "npy header claims an absurd size: "
						"a dimension overflows");
		if (c->p < c->end && *c->p == 'L') /* Python 2 longs */
			c->p++;
		if (a->ndim == MGPU_NPY_MAX_DIM)
			return mgpu_err(MGPU_EFORMAT, "npy header: more than %d dimensions",
					MGPU_NPY_MAX_DIM);
		a->dims[a->ndim++] = v;
		if (!eat(c, ',')) {
			if (!eat(c, ')'))
				return mgpu_err(MGPU_EFORMAT, "npy header: bad 'shape' tuple");
			break;
		}
	}
	return 0;
}

static int set_descr(struct mgpu_npy *a, const char *d)
{
	char order = d[0];

	if (order == '>' && d[2] != '1')
		return mgpu_err(MGPU_EFORMAT, "npy dtype '%s': big-endian data is not "
				"supported", d);
	if ((order != '<' && order != '|' && order != '=' && order != '>') || !d[1] ||
	    !strchr("uibf", d[1]) || !d[2] || d[3] || !strchr("1248", d[2]))
		return mgpu_err(MGPU_EFORMAT, "npy dtype '%s' is not supported (want u1, "
				"f4, f8 or an integer type)", d);
	a->kind = d[1];
	a->elem_nbytes = (size_t)(d[2] - '0');
	if ((a->kind == 'f' && a->elem_nbytes < 4) || (a->kind == 'b' && a->elem_nbytes != 1))
		return mgpu_err(MGPU_EFORMAT, "npy dtype '%s' is not supported", d);
	return 0;
}

/* One key: value pair of the header dict. */
static int dict_item(struct cur *c, struct mgpu_npy *a, int *seen)
{
	char key[32], val[32];

	MGPU_TRY(quoted(c, key, sizeof key));
	if (!eat(c, ':'))
		return mgpu_err(MGPU_EFORMAT, "npy header: expected ':' after '%s'", key);
	if (strcmp(key, "descr") == 0) {
		MGPU_TRY(quoted(c, val, sizeof val));
		MGPU_TRY(set_descr(a, val));
		*seen |= 1;
	} else if (strcmp(key, "fortran_order") == 0) {
		if (word(c, "True"))
			return mgpu_err(MGPU_EFORMAT, "npy array is in Fortran order; only C "
					"order is supported");
		if (!word(c, "False"))
			return mgpu_err(MGPU_EFORMAT, "npy header: bad 'fortran_order'");
		*seen |= 2;
	} else if (strcmp(key, "shape") == 0) {
		MGPU_TRY(shape_tuple(c, a));
		*seen |= 4;
	} else {
		return mgpu_err(MGPU_EFORMAT, "npy header: unknown key '%s'", key);
	}
	return 0;
}

static int parse_dict(const char *text, size_t len, struct mgpu_npy *a)
{
	struct cur c = { text, text + len };
	int seen = 0;

	if (!eat(&c, '{'))
		return mgpu_err(MGPU_EFORMAT, "npy header is not a dict");
	while (!eat(&c, '}')) {
		MGPU_TRY(dict_item(&c, a, &seen));
		if (!eat(&c, ',')) {
			if (!eat(&c, '}'))
				return mgpu_err(MGPU_EFORMAT, "npy header: expected ',' or '}'");
			break;
		}
	}
	skip_ws(&c);
	if (c.p != c.end)
		return mgpu_err(MGPU_EFORMAT, "npy header: garbage after the dict");
	if (seen != 7)
		return mgpu_err(MGPU_EFORMAT, "npy header lacks '%s'", !(seen & 1) ? "descr" :
				!(seen & 2) ? "fortran_order" : "shape");
	return 0;
}

/* Magic, version and header length: the offset of the dict and its size. */
static int preamble(const unsigned char *buf, size_t len, size_t *hoff, size_t *hlen)
{
	if (len < 10 || memcmp(buf, "\x93NUMPY", 6) != 0)
		return mgpu_err(MGPU_EFORMAT, len < 10 && len > 0 && buf[0] == 0x93 ?
				"truncated npy header" : "not an npy file (bad magic)");
	if (buf[6] == 1) {
		*hoff = 10;
		*hlen = (size_t)buf[8] | (size_t)buf[9] << 8;
	} else if (buf[6] == 2 || buf[6] == 3) {
		if (len < 12)
			return mgpu_err(MGPU_EFORMAT, "truncated npy header");
		*hoff = 12;
		*hlen = (size_t)buf[8] | (size_t)buf[9] << 8 | (size_t)buf[10] << 16 |
			(size_t)buf[11] << 24;
	} else {
		return mgpu_err(MGPU_EFORMAT, "npy version %d.%d is not supported", buf[6],
				buf[7]);
	}
	if (*hlen > len - *hoff)
		return mgpu_err(MGPU_EFORMAT, "truncated npy header: it claims %zu bytes, "
				"%zu remain", *hlen, len - *hoff);
	return 0;
}

int mgpu_npy_parse(const unsigned char *buf, size_t len, struct mgpu_npy *out)
{
	size_t hoff = 0, hlen = 0, count = 1, nbytes, have;
	int i;

	memset(out, 0, sizeof *out);
	MGPU_TRY(preamble(buf, len, &hoff, &hlen));
	MGPU_TRY(parse_dict((const char *)buf + hoff, hlen, out));
	for (i = 0; i < out->ndim; i++)
		if (out->dims[i] > SIZE_MAX ||
		    __builtin_mul_overflow(count, (size_t)out->dims[i], &count))
			return mgpu_err(MGPU_ERANGE, "npy header claims an absurd size: the "
					"shape overflows");
	if (__builtin_mul_overflow(count, out->elem_nbytes, &nbytes))
		return mgpu_err(MGPU_ERANGE, "npy header claims an absurd size: the "
				"shape overflows");
	have = len - hoff - hlen;
	if (have < nbytes)
		return mgpu_err(MGPU_EFORMAT, "truncated: the npy header claims %zu bytes "
				"of data, %zu present", nbytes, have);
	if (have > nbytes)
		return mgpu_err(MGPU_EFORMAT, "%zu bytes of trailing garbage after %zu bytes "
				"of npy data", have - nbytes, nbytes);
	out->count = count;
	out->data = buf + hoff + hlen;
	return 0;
}

int mgpu_npy_load(const char *path, struct mgpu_npy *out)
{
	unsigned char *buf;
	size_t len;
	int rc;

	memset(out, 0, sizeof *out);
	MGPU_TRY(mgpu_read_maybe_compressed(path, &buf, &len));
	rc = mgpu_npy_parse(buf, len, out);
	if (rc < 0) {
		free(buf);
		memset(out, 0, sizeof *out);
		return mgpu_err_prefix(rc, "'%s': ", path);
	}
	out->owned = buf;
	return 0;
}

static uint64_t le(const unsigned char *p, size_t n)
{
	uint64_t v = 0;

	while (n--)
		v = v << 8 | p[n];
	return v;
}

double mgpu_npy_value(const struct mgpu_npy *a, size_t i)
{
	const unsigned char *p = a->data + i * a->elem_nbytes;
	uint64_t u = le(p, a->elem_nbytes);
	int sh = 64 - 8 * (int)a->elem_nbytes;
	uint32_t u32;
	float f;
	double d;

	switch (a->kind) {
	case 'u':
	case 'b': return (double)u;
	case 'i': return (double)((int64_t)(u << sh) >> sh);
	}
	if (a->elem_nbytes == 4) {
		u32 = (uint32_t)u;
		memcpy(&f, &u32, 4);
		return f;
	}
	memcpy(&d, &u, 8);
	return d;
}

const char *mgpu_npy_descr(const struct mgpu_npy *a)
{
	static const char *const names[] = { "|u1", "<u2", "<u4", "<u8", "|i1", "<i2",
					     "<i4", "<i8", "<f4", "<f8", "|b1" };
	int k = a->elem_nbytes == 1 ? 0 : a->elem_nbytes == 2 ? 1 : a->elem_nbytes == 4 ? 2 : 3;

	switch (a->kind) {
	case 'u': return names[k];
	case 'i': return names[4 + k];
	case 'f': return names[k == 2 ? 8 : 9];
	case 'b': return names[10];
	}
	return "?";
}

size_t mgpu_npy_header(char *buf, const char *descr, int ndim, const uint32_t *shape)
{
	char dict[160];
	size_t n, total;
	int i;

	n = (size_t)snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, "
			     "'shape': (", descr);
	for (i = 0; i < ndim; i++)
		n += (size_t)snprintf(dict + n, sizeof dict - n, "%s%u%s", i ? ", " : "",
				      shape[i], ndim == 1 ? "," : ""); /* Python's repr */
	n += (size_t)snprintf(dict + n, sizeof dict - n, "), }");
	total = (10 + n + 1 + 63) / 64 * 64;
	memcpy(buf, "\x93NUMPY\x01\x00", 8);
	buf[8] = (char)((total - 10) & 255);
	buf[9] = (char)((total - 10) >> 8);
	memcpy(buf + 10, dict, n);
	memset(buf + 10 + n, ' ', total - 10 - n - 1);
	buf[total - 1] = '\n';
	return total;
}

void mgpu_npy_free(struct mgpu_npy *a)
{
	free(a->owned);
	memset(a, 0, sizeof *a);
}
