/*
 * json.c - strict RFC 8259 parsing into an arena tree, and the string and
 * number writers (see json.h).
 *
 * The parser is recursive descent with an explicit depth limit, so stack use
 * is bounded by MGPU_JSON_MAX_DEPTH frames. Items of an array or object are
 * gathered in a temporary vector and copied into the arena when the
 * container closes. Every read of the text checks pos < len first; the text
 * need not be NUL-terminated. Numbers are validated against the RFC grammar
 * here and converted with strtod(), which assumes the "C" LC_NUMERIC locale
 * (the tools never call setlocale()).
 */
#include "core/json.h"

#include <errno.h>   /* errno, ERANGE */
#include <inttypes.h> /* PRId64 */
#include <math.h>    /* isfinite */
#include <stdlib.h>  /* malloc, free, strtod, strtoll, qsort */
#include <string.h>  /* memcpy, memcmp, strlen */

#include "core/err.h" /* mgpu_err, MGPU_E* */

#define BLOCK_NBYTES ((size_t)64 << 10)

struct block {
	struct block *next;
	size_t used, cap;
	_Alignas(16) unsigned char mem[];
};

struct parser {
	const char *s;
	size_t len, pos;
	int depth;
	const char *name;
	struct block *arena;
};

/* ---- arena ---- */

static void *arena_alloc(struct parser *p, size_t n)
{
	struct block *b = p->arena;
	size_t cap;

	n = (n + 15) & ~(size_t)15;
	if (!b || b->cap - b->used < n) {
		cap = n > BLOCK_NBYTES ? n : BLOCK_NBYTES;
		b = malloc(sizeof *b + cap);
		if (!b)
			return NULL;
		b->next = p->arena;
		b->used = 0;
		b->cap = cap;
		p->arena = b;
	}
	b->used += n;
	return b->mem + b->used - n;
}

static void arena_free(struct block *b)
{
	struct block *next;

	for (; b; b = next) {
		next = b->next;
		free(b);
	}
}

/* ---- errors and scanning ---- */

static int perr(struct parser *p, size_t at, const char *what)
{
	return mgpu_err(MGPU_EFORMAT, "'%s': bad JSON at byte %zu: %s",
			p->name ? p->name : "json", at, what);
}

static int nomem(struct parser *p)
{
	return mgpu_err(MGPU_ENOMEM, "'%s': out of memory parsing JSON",
			p->name ? p->name : "json");
}

static void skip_ws(struct parser *p)
{
	while (p->pos < p->len) {
		char c = p->s[p->pos];
		if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
			break;
		p->pos++;
	}
}

static int peek(const struct parser *p)
{
	return p->pos < p->len ? (unsigned char)p->s[p->pos] : -1;
}

static int expect(struct parser *p, char c, const char *what)
{
	skip_ws(p);
	if (peek(p) != (unsigned char)c)
		return perr(p, p->pos, p->pos < p->len ? what : "unexpected end of input");
	p->pos++;
	return 0;
}

/* ---- strings ---- */

/* Length of a valid UTF-8 sequence at s[0..n), or 0 when invalid. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
	unsigned c = s[0], need, cp, i;

	if (c < 0x80)
		return 1;
	if (c >= 0xC2 && c <= 0xDF)
		need = 1, cp = c & 0x1F;
	else if (c >= 0xE0 && c <= 0xEF)
		need = 2, cp = c & 0x0F;
	else if (c >= 0xF0 && c <= 0xF4)
		need = 3, cp = c & 0x07;
	else
		return 0;
	if (n < need + 1)
		return 0;
	for (i = 1; i <= need; i++) {
		if ((s[i] & 0xC0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3F);
	}
	if ((need == 2 && cp < 0x800) || (need == 3 && cp < 0x10000) || cp > 0x10FFFF ||
	    (cp >= 0xD800 && cp <= 0xDFFF))
		return 0;
	return need + 1;
}

static size_t put_utf8(char *o, unsigned cp)
{
	if (cp < 0x80) {
		o[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		o[0] = (char)(0xC0 | cp >> 6);
		o[1] = (char)(0x80 | (cp & 0x3F));
		return 2;
	}
	if (cp < 0x10000) {
		o[0] = (char)(0xE0 | cp >> 12);
		o[1] = (char)(0x80 | (cp >> 6 & 0x3F));
		o[2] = (char)(0x80 | (cp & 0x3F));
		return 3;
	}
	o[0] = (char)(0xF0 | cp >> 18);
	o[1] = (char)(0x80 | (cp >> 12 & 0x3F));
	o[2] = (char)(0x80 | (cp >> 6 & 0x3F));
	o[3] = (char)(0x80 | (cp & 0x3F));
	return 4;
}

/* Four hex digits at p->pos into *u. */
static int hex4(struct parser *p, unsigned *u)
{
	size_t i;
	int c;

	*u = 0;
	if (p->len - p->pos < 4)
		return perr(p, p->pos, "truncated \\u escape");
	for (i = 0; i < 4; i++) {
		c = (unsigned char)p->s[p->pos + i];
		if (c >= '0' && c <= '9')
			c -= '0';
		else if (c >= 'a' && c <= 'f')
			c -= 'a' - 10;
		else if (c >= 'A' && c <= 'F')
			c -= 'A' - 10;
		else
			return perr(p, p->pos + i, "bad hex digit in \\u escape");
		*u = *u << 4 | (unsigned)c;
	}
	p->pos += 4;
	return 0;
}

/* A \u escape of four hex digits (p->pos after the 'u'), surrogate pairs joined. */
static int unicode_escape(struct parser *p, unsigned *cp)
{
	size_t at = p->pos - 2;
	unsigned lo;

	MGPU_TRY(hex4(p, cp));
	if (*cp >= 0xDC00 && *cp <= 0xDFFF)
		return perr(p, at, "lone low surrogate in \\u escape");
	if (*cp < 0xD800 || *cp > 0xDBFF)
		return 0;
	if (p->len - p->pos < 2 || p->s[p->pos] != '\\' || p->s[p->pos + 1] != 'u')
		return perr(p, at, "high surrogate not followed by a low one");
	p->pos += 2;
	MGPU_TRY(hex4(p, &lo));
	if (lo < 0xDC00 || lo > 0xDFFF)
		return perr(p, at, "high surrogate not followed by a low one");
	*cp = 0x10000 + ((*cp - 0xD800) << 10) + (lo - 0xDC00);
	return 0;
}

/* One escape after the backslash; writes its bytes to o, returns count. */
static int escape(struct parser *p, char *o, size_t *nout)
{
	unsigned cp;
	int c = peek(p);
	const char *from = "\"\\/bfnrt", *to = "\"\\/\b\f\n\r\t";
	const char *hit = c > 0 ? strchr(from, c) : NULL;

	if (c < 0)
		return perr(p, p->pos, "unexpected end of input in a string");
	p->pos++;
	if (hit) {
		o[0] = to[hit - from];
		*nout = 1;
		return 0;
	}
	if (c != 'u')
		return perr(p, p->pos - 2, "bad escape in a string");
	MGPU_TRY(unicode_escape(p, &cp));
	*nout = put_utf8(o, cp);
	return 0;
}

/* Find the closing quote from p->pos (after the opening one). */
static int string_extent(const struct parser *p, size_t *end)
{
	size_t i = p->pos;

	while (i < p->len && p->s[i] != '"')
		i += p->s[i] == '\\' ? 2 : 1;
	if (i >= p->len)
		return -1;
	*end = i;
	return 0;
}

/* A string at p->pos (the opening quote); decoded into the arena. */
static int parse_string(struct parser *p, const char **out, size_t *out_len)
{
	size_t start = p->pos, end, n = 0, k = 0;
	unsigned char c;
	char *o;

	p->pos++;
	if (string_extent(p, &end) < 0)
		return perr(p, start, "unterminated string");
	o = arena_alloc(p, end - p->pos + 1);
	if (!o)
		return nomem(p);
	while (p->pos < end) {
		c = (unsigned char)p->s[p->pos];
		if (c < 0x20)
			return perr(p, p->pos, "control character in a string");
		if (c == '\\') {
			p->pos++;
			MGPU_TRY(escape(p, o + n, &k));
		} else {
			k = utf8_seq((const unsigned char *)p->s + p->pos, end - p->pos);
			if (!k)
				return perr(p, p->pos, "invalid UTF-8 in a string");
			memcpy(o + n, p->s + p->pos, k);
			p->pos += k;
		}
		n += k;
	}
	p->pos = end + 1;
	o[n] = '\0';
	*out = o;
	*out_len = n;
	return 0;
}

/* ---- numbers and literals ---- */

static size_t digits(const struct parser *p, size_t i)
{
	while (i < p->len && p->s[i] >= '0' && p->s[i] <= '9')
		i++;
	return i;
}

/* End of a number literal per the RFC grammar, or 0 when malformed. */
static size_t number_end(const struct parser *p)
{
	size_t i = p->pos, j;

	if (i < p->len && p->s[i] == '-')
		i++;
	if (i < p->len && p->s[i] == '0')
		i++;
	else if ((j = digits(p, i)) > i)
		i = j;
	else
		return 0;
	if (i < p->len && p->s[i] == '.') {
		if ((j = digits(p, i + 1)) == i + 1)
			return 0;
		i = j;
	}
	if (i < p->len && (p->s[i] == 'e' || p->s[i] == 'E')) {
		i++;
		if (i < p->len && (p->s[i] == '+' || p->s[i] == '-'))
			i++;
		if ((j = digits(p, i)) == i)
			return 0;
		i = j;
	}
	return i;
}

static int parse_number(struct parser *p, struct mgpu_json *v)
{
	size_t end = number_end(p), n;
	char *text;

	if (!end)
		return perr(p, p->pos, "malformed number");
	n = end - p->pos;
	text = arena_alloc(p, n + 1);
	if (!text)
		return nomem(p);
	memcpy(text, p->s + p->pos, n);
	text[n] = '\0';
	v->num = strtod(text, NULL);
	if (!isfinite(v->num))
		return perr(p, p->pos, "number out of range");
	v->type = MGPU_JSON_NUMBER;
	v->str = text;
	v->len = n;
	p->pos = end;
	return 0;
}

static int parse_literal(struct parser *p, struct mgpu_json *v)
{
	static const struct { const char *word; int type; } lits[] = {
		{"null", MGPU_JSON_NULL}, {"false", MGPU_JSON_FALSE}, {"true", MGPU_JSON_TRUE},
	};
	size_t i, n;

	for (i = 0; i < sizeof lits / sizeof lits[0]; i++) {
		n = strlen(lits[i].word);
		if (p->len - p->pos >= n && memcmp(p->s + p->pos, lits[i].word, n) == 0) {
			v->type = lits[i].type;
			p->pos += n;
			return 0;
		}
	}
	return perr(p, p->pos, "expected a value");
}

/* ---- containers ---- */

struct vec {
	struct mgpu_json *v;
	size_t n, cap;
};

static int vec_push(struct parser *p, struct vec *vec, const struct mgpu_json *x)
{
	struct mgpu_json *nv;
	size_t ncap;

	if (vec->n == vec->cap) {
		ncap = vec->cap ? vec->cap * 2 : 8;
		nv = realloc(vec->v, ncap * sizeof *nv);
		if (!nv)
			return nomem(p);
		vec->v = nv;
		vec->cap = ncap;
	}
	vec->v[vec->n++] = *x;
	return 0;
}

/* Move the gathered items into the arena as v's children. */
static int vec_finish(struct parser *p, struct vec *vec, struct mgpu_json *v)
{
	v->count = vec->n;
	if (!vec->n)
		return 0;
	v->items = arena_alloc(p, vec->n * sizeof *vec->v);
	if (!v->items)
		return nomem(p);
	memcpy(v->items, vec->v, vec->n * sizeof *vec->v);
	return 0;
}

static int key_cmp(const void *a, const void *b)
{
	const struct mgpu_json *x = *(const struct mgpu_json *const *)a;
	const struct mgpu_json *y = *(const struct mgpu_json *const *)b;
	size_t n = x->key_len < y->key_len ? x->key_len : y->key_len;
	int c = memcmp(x->key, y->key, n);

	if (c)
		return c;
	return (x->key_len > y->key_len) - (x->key_len < y->key_len);
}

/* Duplicate keys are errors: sort pointers by key, compare neighbours. */
static int check_dup_keys(struct parser *p, const struct mgpu_json *obj)
{
	const struct mgpu_json **s;
	size_t i;
	int rc = 0;

	if (obj->count < 2)
		return 0;
	s = malloc(obj->count * sizeof *s);
	if (!s)
		return nomem(p);
	for (i = 0; i < obj->count; i++)
		s[i] = &obj->items[i];
	qsort(s, obj->count, sizeof *s, key_cmp);
	for (i = 1; i < obj->count && !rc; i++)
		if (key_cmp(&s[i - 1], &s[i]) == 0)
			rc = perr(p, s[i - 1]->offset > s[i]->offset ? s[i - 1]->offset :
				  s[i]->offset, "duplicate key in an object");
	free(s);
	return rc;
}

static int parse_value(struct parser *p, struct mgpu_json *v);

static int parse_member(struct parser *p, struct mgpu_json *m)
{
	const char *key;
	size_t key_len;

	skip_ws(p);
	if (peek(p) != '"')
		return perr(p, p->pos, p->pos < p->len ? "expected a string key" :
			    "unexpected end of input");
	MGPU_TRY(parse_string(p, &key, &key_len));
	MGPU_TRY(expect(p, ':', "expected ':'"));
	MGPU_TRY(parse_value(p, m));
	m->key = key;
	m->key_len = key_len;
	return 0;
}

/* Array or object at p->pos (the bracket); close is ']' or '}'. */
static int parse_container(struct parser *p, struct mgpu_json *v, char close)
{
	struct vec vec = {0};
	struct mgpu_json item;
	int rc = 0;

	if (++p->depth > MGPU_JSON_MAX_DEPTH) {
		rc = perr(p, p->pos, "nesting too deep");
		goto out;
	}
	v->type = close == ']' ? MGPU_JSON_ARRAY : MGPU_JSON_OBJECT;
	p->pos++;
	skip_ws(p);
	if (peek(p) == (unsigned char)close) {
		p->pos++;
		goto out;
	}
	for (;;) {
		memset(&item, 0, sizeof item);
		MGPU_CHECK(close == ']' ? parse_value(p, &item) : parse_member(p, &item));
		MGPU_CHECK(vec_push(p, &vec, &item));
		skip_ws(p);
		if (peek(p) == (unsigned char)close)
			break;
		MGPU_CHECK(expect(p, ',', close == ']' ? "expected ',' or ']'" :
				  "expected ',' or '}'"));
	}
	p->pos++;
	MGPU_CHECK(vec_finish(p, &vec, v));
	if (close == '}')
		MGPU_CHECK(check_dup_keys(p, v));
out:
	free(vec.v);
	p->depth--;
	return rc;
}

static int parse_value(struct parser *p, struct mgpu_json *v)
{
	int c;

	skip_ws(p);
	memset(v, 0, sizeof *v);
	v->offset = p->pos;
	c = peek(p);
	if (c < 0)
		return perr(p, p->pos, "unexpected end of input");
	if (c == '{')
		return parse_container(p, v, '}');
	if (c == '[')
		return parse_container(p, v, ']');
	if (c == '"') {
		v->type = MGPU_JSON_STRING;
		return parse_string(p, &v->str, &v->len);
	}
	if (c == '-' || (c >= '0' && c <= '9'))
		return parse_number(p, v);
	return parse_literal(p, v);
}

int mgpu_json_parse(const char *text, size_t len, const char *name,
		    struct mgpu_json_doc *doc)
{
	struct parser p = {text, len, 0, 0, name, NULL};
	int rc = 0;

	doc->root = NULL;
	doc->arena = NULL;
	doc->root = arena_alloc(&p, sizeof *doc->root);
	if (!doc->root) {
		rc = nomem(&p);
		goto out;
	}
	MGPU_CHECK(parse_value(&p, doc->root));
	skip_ws(&p);
	if (p.pos < p.len)
		rc = perr(&p, p.pos, "trailing characters after the value");
out:
	if (rc < 0) {
		arena_free(p.arena);
		doc->root = NULL;
		return rc;
	}
	doc->arena = p.arena;
	return 0;
}

void mgpu_json_free(struct mgpu_json_doc *doc)
{
	arena_free(doc->arena);
	doc->arena = NULL;
	doc->root = NULL;
}

/* ---- queries ---- */

const struct mgpu_json *mgpu_json_get(const struct mgpu_json *obj, const char *key)
{
	size_t i, n;

	if (!obj || obj->type != MGPU_JSON_OBJECT || !key)
		return NULL;
	n = strlen(key);
	for (i = 0; i < obj->count; i++)
		if (obj->items[i].key_len == n && memcmp(obj->items[i].key, key, n) == 0)
			return &obj->items[i];
	return NULL;
}

const struct mgpu_json *mgpu_json_at(const struct mgpu_json *v, size_t i)
{
	if (!v || (v->type != MGPU_JSON_ARRAY && v->type != MGPU_JSON_OBJECT) ||
	    i >= v->count)
		return NULL;
	return &v->items[i];
}

const char *mgpu_json_str(const struct mgpu_json *v)
{
	return v && v->type == MGPU_JSON_STRING ? v->str : NULL;
}

const char *mgpu_json_type_name(int type)
{
	switch (type) {
	case MGPU_JSON_NULL: return "null";
	case MGPU_JSON_FALSE: return "false";
	case MGPU_JSON_TRUE: return "true";
	case MGPU_JSON_NUMBER: return "number";
	case MGPU_JSON_STRING: return "string";
	case MGPU_JSON_ARRAY: return "array";
	case MGPU_JSON_OBJECT: return "object";
	}
	return "missing value";
}

int mgpu_json_i64(const struct mgpu_json *v, int64_t lo, int64_t hi, int64_t *out)
{
	long long x;
	char *end;

	if (!v)
		return mgpu_err(MGPU_EFORMAT, "expected an integer, got nothing");
	if (v->type != MGPU_JSON_NUMBER || strpbrk(v->str, ".eE"))
		return mgpu_err(MGPU_EFORMAT, "at byte %zu: expected an integer, got %s",
				v->offset, v->type == MGPU_JSON_NUMBER ? v->str :
				mgpu_json_type_name(v->type));
	errno = 0;
	x = strtoll(v->str, &end, 10);
	if (errno == ERANGE || x < lo || x > hi)
		return mgpu_err(MGPU_ERANGE, "at byte %zu: %s out of range [%" PRId64
				", %" PRId64 "]", v->offset, v->str, lo, hi);
	*out = x;
	return 0;
}

int mgpu_json_f64(const struct mgpu_json *v, double *out)
{
	if (!v || v->type != MGPU_JSON_NUMBER)
		return mgpu_err(MGPU_EFORMAT, "at byte %zu: expected a number, got %s",
				v ? v->offset : 0, mgpu_json_type_name(v ? v->type : 0));
	*out = v->num;
	return 0;
}

/* ---- writing ---- */

/* The escape for byte c into e (at least 7 bytes); its length. */
static size_t escape_char(unsigned char c, char *e)
{
	static const char hex[] = "0123456789abcdef";

	switch (c) {
	case '"': memcpy(e, "\\\"", 2); return 2;
	case '\\': memcpy(e, "\\\\", 2); return 2;
	case '\b': memcpy(e, "\\b", 2); return 2;
	case '\f': memcpy(e, "\\f", 2); return 2;
	case '\n': memcpy(e, "\\n", 2); return 2;
	case '\r': memcpy(e, "\\r", 2); return 2;
	case '\t': memcpy(e, "\\t", 2); return 2;
	}
	if (c < 0x20) {
		memcpy(e, "\\u00", 4);
		e[4] = hex[c >> 4];
		e[5] = hex[c & 15];
		return 6;
	}
	e[0] = (char)c;
	return 1;
}

/* Append e[0..k) to buf, keeping room for the NUL; *n counts everything. */
static void put(char *buf, size_t cap, size_t *n, const char *e, size_t k)
{
	size_t i;

	for (i = 0; i < k; i++, (*n)++)
		if (*n + 1 < cap)
			buf[*n] = e[i];
}

size_t mgpu_json_escape_buf(char *buf, size_t cap, const char *s)
{
	char e[8];
	size_t n = 0;

	put(buf, cap, &n, "\"", 1);
	for (; *s; s++)
		put(buf, cap, &n, e, escape_char((unsigned char)*s, e));
	put(buf, cap, &n, "\"", 1);
	if (cap)
		buf[n < cap ? n : cap - 1] = '\0';
	return n;
}

int mgpu_json_escape(FILE *fp, const char *s)
{
	char e[8];
	size_t k;

	putc('"', fp);
	for (; *s; s++) {
		k = escape_char((unsigned char)*s, e);
		fwrite(e, 1, k, fp);
	}
	putc('"', fp);
	return ferror(fp) ? mgpu_err(MGPU_EIO, "write failed") : 0;
}

int mgpu_json_num(FILE *fp, double v, int digits)
{
	if (isfinite(v))
		fprintf(fp, "%.*g", digits, v);
	else
		fputs("null", fp);
	return ferror(fp) ? mgpu_err(MGPU_EIO, "write failed") : 0;
}
