/*
 * fuzz_json.c - libFuzzer harness for the JSON parser: mgpu_json_parse() on
 * arbitrary bytes, then a walk of the whole tree through the query API
 * (every string read to its length, every number as i64 and f64), and an
 * escape/re-parse round trip of every string without NULs.
 */
#include <stddef.h> /* size_t */
#include <stdint.h> /* uint8_t, int64_t */
#include <stdlib.h> /* abort, malloc, free */
#include <string.h> /* strlen, strcmp */

#include "core/json.h" /* mgpu_json_* */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void round_trip(const char *s)
{
	size_t n = mgpu_json_escape_buf(NULL, 0, s);
	char *buf = malloc(n + 1);
	struct mgpu_json_doc doc;

	if (!buf)
		return;
	if (mgpu_json_escape_buf(buf, n + 1, s) != n || strlen(buf) != n)
		abort();
	if (mgpu_json_parse(buf, n, "rt", &doc) != 0 || strcmp(mgpu_json_str(doc.root), s))
		abort();
	mgpu_json_free(&doc);
	free(buf);
}

static void walk(const struct mgpu_json *v, int depth)
{
	volatile size_t sink = 0;
	int64_t i;
	double d;
	size_t k;

	if (depth > MGPU_JSON_MAX_DEPTH)
		abort();
	if (v->key)
		for (k = 0; k < v->key_len; k++)
			sink += (unsigned char)v->key[k];
	if (v->type == MGPU_JSON_STRING) {
		for (k = 0; k <= v->len; k++)
			sink += (unsigned char)v->str[k];
		if (strlen(v->str) == v->len)
			round_trip(v->str);
	}
	if (v->type == MGPU_JSON_NUMBER) {
		mgpu_json_i64(v, INT64_MIN, INT64_MAX, &i);
		mgpu_json_f64(v, &d);
	}
	for (k = 0; k < v->count; k++) {
		if (mgpu_json_at(v, k) != &v->items[k])
			abort();
		walk(&v->items[k], depth + 1);
		if (v->type == MGPU_JSON_OBJECT && strlen(v->items[k].key) == v->items[k].key_len &&
		    !mgpu_json_get(v, v->items[k].key))
			abort();
	}
	(void)sink;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mgpu_json_doc doc;

	if (mgpu_json_parse((const char *)data, size, "fuzz", &doc) < 0)
		return 0;
	walk(doc.root, 0);
	mgpu_json_free(&doc);
	return 0;
}
