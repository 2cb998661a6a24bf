/*
 * safetensors.c - safetensors reading and writing (see safetensors.h).
 *
 * The reader checks the header before touching data: sizes are computed
 * with overflow checks and offsets are compared with the data section's
 * length, so a hostile file yields an error, never an out-of-bounds read.
 * Tensor names and metadata strings live in the parsed JSON document, which
 * the struct keeps until mgpu_st_free().
 */
#include "model/safetensors.h"

#include <stdio.h>  /* open_memstream, fprintf, fwrite */
#include <stdlib.h> /* malloc, calloc, free, qsort */
#include <string.h> /* memcpy, memset, strcmp, strlen */

#include "core/err.h"  /* mgpu_err, mgpu_err_prefix, MGPU_E* */
#include "core/io.h"   /* mgpu_afile_*, mgpu_read_file */
#include "core/json.h" /* mgpu_json_parse, mgpu_json_get, mgpu_json_i64 */

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "safetensors.c assumes a little-endian host"
#endif

#define META_KEY "__metadata__"

static const struct {
	const char *name;
	int dtype;
	size_t nbytes;
} dtypes[] = {
	{"BOOL", MGPU_ST_BOOL, 1},       {"U8", MGPU_ST_U8, 1},
	{"I8", MGPU_ST_I8, 1},           {"F8_E5M2", MGPU_ST_F8_E5M2, 1},
	{"F8_E4M3", MGPU_ST_F8_E4M3, 1}, {"I16", MGPU_ST_I16, 2},
	{"U16", MGPU_ST_U16, 2},         {"F16", MGPU_ST_F16, 2},
	{"BF16", MGPU_ST_BF16, 2},       {"I32", MGPU_ST_I32, 4},
	{"U32", MGPU_ST_U32, 4},         {"F32", MGPU_ST_F32, 4},
	{"F64", MGPU_ST_F64, 8},         {"I64", MGPU_ST_I64, 8},
	{"U64", MGPU_ST_U64, 8},
};
#define NDTYPES (sizeof dtypes / sizeof dtypes[0])

size_t mgpu_st_dtype_nbytes(int dtype)
{
	size_t i;

	for (i = 0; i < NDTYPES; i++)
		if (dtypes[i].dtype == dtype)
			return dtypes[i].nbytes;
	return 0;
}

const char *mgpu_st_dtype_name(int dtype)
{
	size_t i;

	for (i = 0; i < NDTYPES; i++)
		if (dtypes[i].dtype == dtype)
			return dtypes[i].name;
	return NULL;
}

static int dtype_from_name(const char *name)
{
	size_t i;

	for (i = 0; i < NDTYPES; i++)
		if (strcmp(dtypes[i].name, name) == 0)
			return dtypes[i].dtype;
	return 0;
}

/* ================= reading ================= */

/* A string without embedded NULs (keys and values we hand out as C strings). */
static int is_cstr(const char *s, size_t len)
{
	return strlen(s) == len;
}

static int read_dtype(const struct mgpu_json *v, const char *path,
		      struct mgpu_st_tensor *t)
{
	const char *s = mgpu_json_str(v);

	if (!s)
		return mgpu_err(MGPU_EFORMAT, "'%s': tensor '%s': dtype must be a string",
				path, t->name);
	t->dtype = dtype_from_name(s);
	if (!t->dtype)
		return mgpu_err(MGPU_EFORMAT, "'%s': tensor '%s': unknown dtype '%s'",
				path, t->name, s);
	return 0;
}

static int read_shape(const struct mgpu_json *v, const char *path,
		      struct mgpu_st_tensor *t)
{
	size_t i, count = 1;
	int64_t d;
	int rc;

	if (!v || v->type != MGPU_JSON_ARRAY)
		return mgpu_err(MGPU_EFORMAT, "'%s': tensor '%s': shape must be an array",
				path, t->name);
	if (v->count > MGPU_ST_MAX_DIM)
		return mgpu_err(MGPU_EFORMAT, "'%s': tensor '%s': %zu dimensions, at most "
				"%d supported", path, t->name, v->count, MGPU_ST_MAX_DIM);
	for (i = 0; i < v->count; i++) {
		rc = mgpu_json_i64(&v->items[i], 0, INT64_MAX, &d);
		if (rc < 0)
			return mgpu_err_prefix(rc, "'%s': tensor '%s': shape: ", path, t->name);
		if (__builtin_mul_overflow(count, (uint64_t)d, &count))
			return mgpu_err(MGPU_ERANGE, "'%s': tensor '%s': shape overflows",
					path, t->name);
		t->shape[i] = d;
	}
	t->ndim = (int)v->count;
	t->count = count;
	return 0;
}

static int read_offsets(const struct mgpu_json *v, const char *path,
			size_t data_nbytes, struct mgpu_st_tensor *t)
{
	int64_t b, e;
	int rc;

	if (!v || v->type != MGPU_JSON_ARRAY || v->count != 2)
		return mgpu_err(MGPU_EFORMAT, "'%s': tensor '%s': data_offsets must be "
				"an array of 2 integers", path, t->name);
	rc = mgpu_json_i64(&v->items[0], 0, INT64_MAX, &b);
	if (rc == 0)
		rc = mgpu_json_i64(&v->items[1], 0, INT64_MAX, &e);
	if (rc < 0)
		return mgpu_err_prefix(rc, "'%s': tensor '%s': data_offsets: ", path, t->name);
	if (b > e || (uint64_t)e > data_nbytes)
		return mgpu_err(MGPU_EFORMAT, "'%s': tensor '%s': data_offsets [%lld, %lld] "
				"outside the %zu bytes of data", path, t->name, (long long)b,
				(long long)e, data_nbytes);
	t->begin = (size_t)b;
	t->end = (size_t)e;
	return 0;
}

/* Only dtype, shape and data_offsets may appear, each exactly once. */
static int check_fields(const struct mgpu_json *v, const char *path, const char *name)
{
	size_t i;
	const char *k;

	for (i = 0; i < v->count; i++) {
		k = v->items[i].key;
		if (strcmp(k, "dtype") && strcmp(k, "shape") && strcmp(k, "data_offsets"))
			return mgpu_err(MGPU_EFORMAT, "'%s': tensor '%s': unknown field '%s'",
					path, name, k);
	}
	return 0;
}

static int read_tensor(const struct mgpu_json *m, const char *path, struct mgpu_st *st,
		       struct mgpu_st_tensor *t)
{
	size_t nbytes;

	t->name = m->key;
	if (!is_cstr(m->key, m->key_len))
		return mgpu_err(MGPU_EFORMAT, "'%s': tensor name with a NUL character", path);
	if (m->type != MGPU_JSON_OBJECT)
		return mgpu_err(MGPU_EFORMAT, "'%s': tensor '%s': expected an object, got %s",
				path, t->name, mgpu_json_type_name(m->type));
	MGPU_TRY(check_fields(m, path, t->name));
	MGPU_TRY(read_dtype(mgpu_json_get(m, "dtype"), path, t));
	MGPU_TRY(read_shape(mgpu_json_get(m, "shape"), path, t));
	MGPU_TRY(read_offsets(mgpu_json_get(m, "data_offsets"), path, st->data_nbytes, t));
	if (__builtin_mul_overflow(t->count, mgpu_st_dtype_nbytes(t->dtype), &nbytes) ||
	    nbytes != t->end - t->begin)
		return mgpu_err(MGPU_EFORMAT, "'%s': tensor '%s': %zu elements of %s need "
				"%zu bytes, data_offsets give %zu", path, t->name, t->count,
				mgpu_st_dtype_name(t->dtype), nbytes, t->end - t->begin);
	t->data = st->data + t->begin;
	return 0;
}

static int read_meta(const struct mgpu_json *m, const char *path, struct mgpu_st *st)
{
	size_t i;
	const struct mgpu_json *kv;

	if (m->type != MGPU_JSON_OBJECT)
		return mgpu_err(MGPU_EFORMAT, "'%s': " META_KEY " must be an object, got %s",
				path, mgpu_json_type_name(m->type));
	st->meta = calloc(2 * m->count + 1, sizeof *st->meta);
	if (!st->meta)
		return mgpu_err(MGPU_ENOMEM, "'%s': out of memory", path);
	for (i = 0; i < m->count; i++) {
		kv = &m->items[i];
		if (kv->type != MGPU_JSON_STRING || !is_cstr(kv->str, kv->len) ||
		    !is_cstr(kv->key, kv->key_len))
			return mgpu_err(MGPU_EFORMAT, "'%s': " META_KEY ": value of '%s' must "
					"be a string without NUL characters", path, kv->key);
		st->meta[2 * i] = kv->key;
		st->meta[2 * i + 1] = kv->str;
	}
	st->nmeta = (int)m->count;
	return 0;
}

static int cmp_offsets(const void *a, const void *b)
{
	const struct mgpu_st_tensor *x = *(const struct mgpu_st_tensor *const *)a;
	const struct mgpu_st_tensor *y = *(const struct mgpu_st_tensor *const *)b;

	if (x->begin != y->begin)
		return x->begin < y->begin ? -1 : 1;
	return (x->end > y->end) - (x->end < y->end);
}

/* Sorted by offsets, the tensors must tile the data section exactly. */
static int check_coverage(const struct mgpu_st *st, const char *path)
{
	const struct mgpu_st_tensor **s;
	size_t at = 0;
	int i, rc = 0;

	s = malloc((size_t)(st->n ? st->n : 1) * sizeof *s);
	if (!s)
		return mgpu_err(MGPU_ENOMEM, "'%s': out of memory", path);
	for (i = 0; i < st->n; i++)
		s[i] = &st->t[i];
	qsort(s, (size_t)st->n, sizeof *s, cmp_offsets);
	for (i = 0; i < st->n && !rc; i++) {
		if (s[i]->begin != at)
			rc = mgpu_err(MGPU_EFORMAT, "'%s': tensor '%s': data_offsets start at "
				      "%zu, expected %zu (%s)", path, s[i]->name, s[i]->begin,
				      at, s[i]->begin < at ? "overlap" : "gap");
		at = s[i]->end;
	}
	if (!rc && at != st->data_nbytes)
		rc = mgpu_err(MGPU_EFORMAT, "'%s': data section has %zu bytes, tensors "
			      "cover %zu", path, st->data_nbytes, at);
	free(s);
	return rc;
}

/* Check the length prefix and where the header starts; *n = header bytes. */
static int read_prefix(const unsigned char *buf, size_t len, const char *path, size_t *n)
{
	uint64_t hn;

	if (len < 8)
		return mgpu_err(MGPU_EFORMAT, "'%s': truncated: %zu bytes, need 8 for the "
				"header length", path, len);
	memcpy(&hn, buf, 8);
	if (hn > MGPU_ST_MAX_HEADER_NBYTES)
		return mgpu_err(MGPU_EFORMAT, "'%s': header length %llu exceeds the limit "
				"of %d bytes", path, (unsigned long long)hn,
				MGPU_ST_MAX_HEADER_NBYTES);
	if (hn > len - 8)
		return mgpu_err(MGPU_EFORMAT, "'%s': truncated: header says %llu bytes of "
				"JSON, file has %zu after the length", path,
				(unsigned long long)hn, len - 8);
	if (hn < 2 || buf[8] != '{')
		return mgpu_err(MGPU_EFORMAT, "'%s': header does not start with '{'", path);
	*n = (size_t)hn;
	return 0;
}

static int read_members(const struct mgpu_json *root, const char *path, struct mgpu_st *st)
{
	size_t i;

	st->t = calloc(root->count + 1, sizeof *st->t);
	if (!st->t)
		return mgpu_err(MGPU_ENOMEM, "'%s': out of memory", path);
	for (i = 0; i < root->count; i++) {
		if (strcmp(root->items[i].key, META_KEY) == 0)
			MGPU_TRY(read_meta(&root->items[i], path, st));
		else
			MGPU_TRY(read_tensor(&root->items[i], path, st, &st->t[st->n++]));
	}
	return 0;
}

int mgpu_st_parse(const unsigned char *buf, size_t len, const char *path,
		  struct mgpu_st *st)
{
	struct mgpu_json_doc *doc;
	size_t hn = 0;
	int rc = 0;

	memset(st, 0, sizeof *st);
	MGPU_TRY(read_prefix(buf, len, path, &hn));
	doc = calloc(1, sizeof *doc);
	if (!doc)
		return mgpu_err(MGPU_ENOMEM, "'%s': out of memory", path);
	st->doc = doc;
	/* starts with '{', so a successful parse is an object */
	MGPU_CHECK(mgpu_json_parse((const char *)buf + 8, hn, path, doc));
	st->data = buf + 8 + hn;
	st->data_nbytes = len - 8 - hn;
	MGPU_CHECK(read_members(doc->root, path, st));
	MGPU_CHECK(check_coverage(st, path));
out:
	if (rc < 0)
		mgpu_st_free(st);
	return rc;
}

int mgpu_st_load(const char *path, struct mgpu_st *st)
{
	unsigned char *buf;
	size_t len;
	int rc;

	memset(st, 0, sizeof *st);
	MGPU_TRY(mgpu_read_file(path, &buf, &len));
	rc = mgpu_st_parse(buf, len, path, st);
	if (rc < 0) {
		free(buf);
		return rc;
	}
	st->owned = buf;
	return 0;
}

const struct mgpu_st_tensor *mgpu_st_find(const struct mgpu_st *st, const char *name)
{
	int i;

	for (i = 0; i < st->n; i++)
		if (strcmp(st->t[i].name, name) == 0)
			return &st->t[i];
	return NULL;
}

const char *mgpu_st_meta(const struct mgpu_st *st, const char *key)
{
	int i;

	for (i = 0; i < st->nmeta; i++)
		if (strcmp(st->meta[2 * i], key) == 0)
			return st->meta[2 * i + 1];
	return NULL;
}

static float half_to_float(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000) << 16, ex = h >> 10 & 0x1F, man = h & 0x3FF;
	uint32_t bits;
	float f;

	if (ex == 0x1F) {
		bits = sign | 0x7F800000 | man << 13;
	} else if (ex == 0) {
		f = (float)man * (1.0f / 16777216.0f); /* man * 2^-24 */
		return sign ? -f : f;
	} else {
		bits = sign | (ex + 112) << 23 | man << 13;
	}
	memcpy(&f, &bits, sizeof f);
	return f;
}

int mgpu_st_read_f32(const struct mgpu_st_tensor *t, float *dst, size_t count)
{
	size_t i;
	uint16_t h;
	uint32_t u;
	double d;

	if (count != t->count)
		return mgpu_err(MGPU_EINVAL, "tensor '%s' has %zu elements, not %zu",
				t->name, t->count, count);
	for (i = 0; i < count; i++) {
		switch (t->dtype) {
		case MGPU_ST_F32:
			memcpy(&dst[i], t->data + 4 * i, 4);
			break;
		case MGPU_ST_F64:
			memcpy(&d, t->data + 8 * i, 8);
			dst[i] = (float)d;
			break;
		case MGPU_ST_F16:
			memcpy(&h, t->data + 2 * i, 2);
			dst[i] = half_to_float(h);
			break;
		case MGPU_ST_BF16:
			memcpy(&h, t->data + 2 * i, 2);
			u = (uint32_t)h << 16;
			memcpy(&dst[i], &u, 4);
			break;
		default:
			return mgpu_err(MGPU_EUNSUP, "tensor '%s': cannot convert %s to F32",
					t->name, mgpu_st_dtype_name(t->dtype));
		}
	}
	return 0;
}

void mgpu_st_free(struct mgpu_st *st)
{
	if (st->doc)
		mgpu_json_free(st->doc);
	free(st->doc);
	free(st->t);
	free(st->meta);
	free(st->owned);
	memset(st, 0, sizeof *st);
}

/* ================= writing ================= */

static int check_entry(const struct mgpu_st_entry *e, int i, const char *path,
		       size_t *count)
{
	int d;

	*count = 1;
	if (!e->name || !e->name[0] || strcmp(e->name, META_KEY) == 0)
		return mgpu_err(MGPU_EINVAL, "'%s': tensor %d: missing or reserved name",
				path, i);
	if (e->ndim < 0 || e->ndim > MGPU_ST_WRITE_MAX_DIM)
		return mgpu_err(MGPU_EINVAL, "'%s': tensor '%s': %d dimensions, want 0 to %d",
				path, e->name, e->ndim, MGPU_ST_WRITE_MAX_DIM);
	for (d = 0; d < e->ndim; d++)
		if (e->shape[d] < 0 ||
		    __builtin_mul_overflow(*count, (uint64_t)e->shape[d], count) ||
		    *count > SIZE_MAX / 4)
			return mgpu_err(MGPU_EINVAL, "'%s': tensor '%s': bad shape", path,
					e->name);
	if (*count && !e->data)
		return mgpu_err(MGPU_EINVAL, "'%s': tensor '%s': no data", path, e->name);
	return 0;
}

/* Names unique among entries, keys unique among metadata. */
static int check_unique(const struct mgpu_st_entry *e, int n, const char *const *kv,
			int nkv, const char *path)
{
	int i, j;

	for (i = 0; i < n; i++)
		for (j = 0; j < i; j++)
			if (strcmp(e[i].name, e[j].name) == 0)
				return mgpu_err(MGPU_EINVAL, "'%s': duplicate tensor name '%s'",
						path, e[i].name);
	for (i = 0; i < nkv; i++) {
		if (!kv[2 * i] || !kv[2 * i + 1])
			return mgpu_err(MGPU_EINVAL, "'%s': metadata pair %d has a NULL", path, i);
		for (j = 0; j < i; j++)
			if (strcmp(kv[2 * i], kv[2 * j]) == 0)
				return mgpu_err(MGPU_EINVAL, "'%s': duplicate metadata key '%s'",
						path, kv[2 * i]);
	}
	return 0;
}

static void write_meta(FILE *fp, const char *const *kv, int nkv)
{
	int i;

	fputs("\"" META_KEY "\":{", fp);
	for (i = 0; i < nkv; i++) {
		if (i)
			putc(',', fp);
		mgpu_json_escape(fp, kv[2 * i]);
		putc(':', fp);
		mgpu_json_escape(fp, kv[2 * i + 1]);
	}
	putc('}', fp);
}

static void write_entry(FILE *fp, const struct mgpu_st_entry *e, size_t begin, size_t end)
{
	int d;

	mgpu_json_escape(fp, e->name);
	fputs(":{\"dtype\":\"F32\",\"shape\":[", fp);
	for (d = 0; d < e->ndim; d++)
		fprintf(fp, "%s%lld", d ? "," : "", (long long)e->shape[d]);
	fprintf(fp, "],\"data_offsets\":[%zu,%zu]}", begin, end);
}

/* The JSON header, space-padded to a multiple of 8, into *hdr (malloc'ed). */
static int build_header(const struct mgpu_st_entry *e, const size_t *counts, int n,
			const char *const *kv, int nkv, const char *path,
			char **hdr, size_t *hlen)
{
	FILE *fp = open_memstream(hdr, hlen);
	size_t off = 0;
	int i, bad;

	if (!fp)
		return mgpu_err(MGPU_ENOMEM, "'%s': out of memory", path);
	putc('{', fp);
	if (nkv)
		write_meta(fp, kv, nkv);
	for (i = 0; i < n; i++) {
		if (i || nkv)
			putc(',', fp);
		write_entry(fp, &e[i], off, off + 4 * counts[i]);
		off += 4 * counts[i];
	}
	putc('}', fp);
	while (ftell(fp) % 8)
		putc(' ', fp);
	bad = ferror(fp);
	if (fclose(fp) != 0 || bad) {
		free(*hdr);
		*hdr = NULL;
		return mgpu_err(MGPU_ENOMEM, "'%s': cannot build the header", path);
	}
	return 0;
}

static int write_body(FILE *fp, const char *hdr, size_t hlen,
		      const struct mgpu_st_entry *e, const size_t *counts, int n)
{
	uint64_t n64 = hlen;
	int i;

	if (fwrite(&n64, 8, 1, fp) != 1 || fwrite(hdr, 1, hlen, fp) != hlen)
		return -1;
	for (i = 0; i < n; i++)
		if (counts[i] && fwrite(e[i].data, 4, counts[i], fp) != counts[i])
			return -1;
	return 0;
}

int mgpu_st_write(const char *path, const struct mgpu_st_entry *e, int n,
		  const char *const *meta_kv, int nmeta_pairs)
{
	struct mgpu_afile af = {0};
	size_t *counts = NULL, hlen = 0;
	char *hdr = NULL;
	int i, rc = 0, opened = 0;

	if (n < 0 || nmeta_pairs < 0 || (nmeta_pairs && !meta_kv) || (n && !e))
		return mgpu_err(MGPU_EINVAL, "'%s': bad tensor or metadata count", path);
	counts = calloc((size_t)n + 1, sizeof *counts);
	if (!counts)
		return mgpu_err(MGPU_ENOMEM, "'%s': out of memory", path);
	for (i = 0; i < n; i++)
		MGPU_CHECK(check_entry(&e[i], i, path, &counts[i]));
	MGPU_CHECK(check_unique(e, n, meta_kv, nmeta_pairs, path));
	MGPU_CHECK(build_header(e, counts, n, meta_kv, nmeta_pairs, path, &hdr, &hlen));
	MGPU_CHECK(mgpu_afile_open(&af, path));
	opened = 1;
	if (write_body(af.fp, hdr, hlen, e, counts, n) != 0) {
		rc = mgpu_err_errno(MGPU_EIO, "'%s': write failed", path);
		goto out;
	}
	opened = 0;
	rc = mgpu_afile_commit(&af);
out:
	if (opened)
		mgpu_afile_abort(&af);
	free(hdr);
	free(counts);
	return rc;
}
