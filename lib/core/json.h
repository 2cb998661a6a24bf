/*
 * json.h - a small strict JSON (RFC 8259) parser into a queryable tree, and
 * string and number writers for JSON output.
 *
 * Strict: one value with optional whitespace around it; UTF-8 text only
 * (no BOM, no overlong or surrogate encodings); no control characters in
 * strings; \u escapes (four hex digits) must pair surrogates; numbers follow the RFC
 * grammar and must be finite as doubles; duplicate keys in one object are
 * errors; nesting deeper than MGPU_JSON_MAX_DEPTH is an error. Errors give
 * the byte offset: "'NAME': bad JSON at byte 17: expected ':'".
 *
 * Ownership: every node and string lives in the document's arena and stays
 * valid until mgpu_json_free(doc); the input text is not referenced after
 * mgpu_json_parse() returns. Children of an array or object are one
 * contiguous array (items[0..count)), so indexing is O(1) and members keep
 * the order of the text. Query functions take NULL and wrong types
 * gracefully (NULL result or an error code), so lookups chain.
 */
#ifndef MGPU_CORE_JSON_H
#define MGPU_CORE_JSON_H

#include <stddef.h> /* size_t */
#include <stdint.h> /* int64_t */
#include <stdio.h>  /* FILE */

#define MGPU_JSON_MAX_DEPTH 64

enum mgpu_json_type {
	MGPU_JSON_NULL = 1,
	MGPU_JSON_FALSE,
	MGPU_JSON_TRUE,
	MGPU_JSON_NUMBER,
	MGPU_JSON_STRING,
	MGPU_JSON_ARRAY,
	MGPU_JSON_OBJECT,
};

struct mgpu_json {
	int type;                 /* enum mgpu_json_type */
	size_t offset;            /* byte offset of the value in the text */
	const char *key;          /* member name inside an object, else NULL */
	size_t key_len;           /* bytes of key (it may hold \u0000) */
	const char *str;          /* STRING: decoded UTF-8; NUMBER: the literal */
	size_t len;               /* bytes of str; str is NUL-terminated too */
	double num;               /* NUMBER: the value as a double */
	size_t count;             /* ARRAY, OBJECT: number of items */
	struct mgpu_json *items;  /* ARRAY, OBJECT: the items */
};

struct mgpu_json_doc {
	struct mgpu_json *root;
	void *arena; /* private */
};

/* Parse text[0..len); name (may be NULL) labels error messages. */
int mgpu_json_parse(const char *text, size_t len, const char *name,
		    struct mgpu_json_doc *doc);
/* Release the document; safe on a zeroed or failed one. */
void mgpu_json_free(struct mgpu_json_doc *doc);

/* Member key of an object (first match), or NULL. */
const struct mgpu_json *mgpu_json_get(const struct mgpu_json *obj, const char *key);
/* Item i of an array or object, or NULL when out of range. */
const struct mgpu_json *mgpu_json_at(const struct mgpu_json *v, size_t i);
/* The string of a STRING value, or NULL for any other value. */
const char *mgpu_json_str(const struct mgpu_json *v);
/*
 * An integer literal (no fraction or exponent) in [lo, hi]: 0, or
 * MGPU_EFORMAT (not an integer) / MGPU_ERANGE with a message that starts
 * "at byte N: ..." (callers prefix the file name with mgpu_err_prefix).
 */
int mgpu_json_i64(const struct mgpu_json *v, int64_t lo, int64_t hi, int64_t *out);
/* A number as a double: 0 or MGPU_EFORMAT. */
int mgpu_json_f64(const struct mgpu_json *v, double *out);
/* "null", "false", "true", "number", "string", "array", "object". */
const char *mgpu_json_type_name(int type);

/*
 * Write s (UTF-8, NUL-terminated) as a quoted JSON string: '"' and '\\'
 * escaped, control characters as \n, \t, ... or \u00XX. Returns 0 or
 * MGPU_EIO when the stream reports an error.
 */
int mgpu_json_escape(FILE *fp, const char *s);
/* Same into buf (always NUL-terminated when cap > 0); returns the length
 * the full result needs, excluding the NUL, like snprintf. */
size_t mgpu_json_escape_buf(char *buf, size_t cap, const char *s);
/*
 * Write v as a JSON number of `digits` significant digits (%.*g), or null
 * when v is NaN or infinite, which JSON cannot represent (printf would
 * write "nan" or "-inf", and no reader takes the file). Returns 0 or
 * MGPU_EIO when the stream reports an error.
 */
int mgpu_json_num(FILE *fp, double v, int digits);

#endif
