/*
 * test_json.c - unit tests of lib/core/json: the strict parser (values,
 * escapes, numbers, every error with its byte offset, depth limit,
 * duplicates), the query helpers and the string and number writers.
 */
#include <math.h>   /* NAN, INFINITY */
#include <stdint.h> /* INT64_MAX */
#include <stdio.h>  /* open_memstream */
#include <stdlib.h> /* free */
#include <string.h> /* strlen, memcmp */

#include "core/err.h"  /* mgpu_errmsg, MGPU_E* */
#include "core/json.h" /* mgpu_json_* */
#include "../t.h"      /* T_RUN, T_CHECK, T_OK, T_FAILS */

static int parse(const char *s, struct mgpu_json_doc *doc)
{
	return mgpu_json_parse(s, strlen(s), "t.json", doc);
}

/* Parse must fail with MGPU_EFORMAT and a message containing sub. */
#define BAD(text, sub)                                              \
	do {                                                        \
		struct mgpu_json_doc d_;                            \
		T_FAILS(parse(text, &d_), MGPU_EFORMAT, sub);       \
		T_CHECK(d_.root == NULL && d_.arena == NULL, "doc not cleared"); \
	} while (0)

static void test_values(void)
{
	struct mgpu_json_doc doc;
	const struct mgpu_json *v, *a;
	int64_t i;
	double x;

	T_OK(parse(" {\"a\": [1, -2.5e1, true, false, null, \"s\"], \"b\": {}, \"c\": []}\n",
		   &doc));
	if (!doc.root)
		return;
	T_CHECK(doc.root->type == MGPU_JSON_OBJECT && doc.root->count == 3, "root");
	a = mgpu_json_get(doc.root, "a");
	T_CHECK(a && a->type == MGPU_JSON_ARRAY && a->count == 6, "a");
	T_OK(mgpu_json_i64(mgpu_json_at(a, 0), 0, 10, &i));
	T_CHECK(i == 1, "i %lld", (long long)i);
	T_OK(mgpu_json_f64(mgpu_json_at(a, 1), &x));
	T_CHECK(x == -25.0, "x %g", x);
	T_CHECK(mgpu_json_at(a, 2)->type == MGPU_JSON_TRUE, "true");
	T_CHECK(mgpu_json_at(a, 3)->type == MGPU_JSON_FALSE, "false");
	T_CHECK(mgpu_json_at(a, 4)->type == MGPU_JSON_NULL, "null");
	T_CHECK(strcmp(mgpu_json_str(mgpu_json_at(a, 5)), "s") == 0, "s");
	T_CHECK(mgpu_json_at(a, 6) == NULL, "past the end");
	T_CHECK(mgpu_json_str(mgpu_json_at(a, 0)) == NULL, "number is no string");
	v = mgpu_json_get(doc.root, "b");
	T_CHECK(v && v->type == MGPU_JSON_OBJECT && v->count == 0, "b");
	T_CHECK(mgpu_json_get(doc.root, "zz") == NULL, "missing key");
	T_CHECK(mgpu_json_get(a, "a") == NULL && mgpu_json_get(NULL, "a") == NULL, "not object");
	T_CHECK(strcmp(mgpu_json_at(doc.root, 2)->key, "c") == 0, "member order kept");
	T_CHECK(mgpu_json_at(doc.root, 1)->offset == 49, "offset %zu",
		mgpu_json_at(doc.root, 1)->offset);
	T_CHECK(strcmp(mgpu_json_type_name(MGPU_JSON_ARRAY), "array") == 0, "type name");
	mgpu_json_free(&doc);
	T_CHECK(doc.root == NULL, "free clears");
	mgpu_json_free(&doc);
	/* scalars at the top level */
	T_OK(parse("\"x\"", &doc));
	T_CHECK(doc.root && doc.root->type == MGPU_JSON_STRING, "top-level string");
	mgpu_json_free(&doc);
	T_OK(parse("-0", &doc));
	T_CHECK(doc.root && doc.root->num == 0, "-0");
	mgpu_json_free(&doc);
}

static void test_strings(void)
{
	struct mgpu_json_doc doc;
	const char *s;
	const struct mgpu_json *v;

	T_OK(parse("[\"q\\\"b\\\\s\\/\\b\\f\\n\\r\\t\", \"\\u00e9\\u20AC\\ud83d\\ude00\", "
		   "\"a\\u0000b\", \"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"]", &doc));
	if (!doc.root)
		return;
	s = mgpu_json_str(mgpu_json_at(doc.root, 0));
	T_CHECK(s && strcmp(s, "q\"b\\s/\b\f\n\r\t") == 0, "simple escapes '%s'", s);
	s = mgpu_json_str(mgpu_json_at(doc.root, 1));
	T_CHECK(s && strcmp(s, "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80") == 0, "\\u escapes");
	v = mgpu_json_at(doc.root, 2);
	T_CHECK(v->len == 3 && memcmp(v->str, "a\0b", 3) == 0, "embedded NUL");
	s = mgpu_json_str(mgpu_json_at(doc.root, 3));
	T_CHECK(s && strcmp(s, "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80") == 0, "raw UTF-8");
	mgpu_json_free(&doc);
}

static void test_numbers(void)
{
	struct mgpu_json_doc doc;
	const struct mgpu_json *v;
	int64_t i = 0;
	double x;

	T_OK(parse("[9223372036854775807, -9223372036854775808, 9223372036854775808, "
		   "1.5, 1e2, 0.000001, 12, \"7\"]", &doc));
	if (!doc.root)
		return;
	v = doc.root;
	T_OK(mgpu_json_i64(mgpu_json_at(v, 0), INT64_MIN, INT64_MAX, &i));
	T_CHECK(i == INT64_MAX, "max");
	T_OK(mgpu_json_i64(mgpu_json_at(v, 1), INT64_MIN, INT64_MAX, &i));
	T_CHECK(i == INT64_MIN, "min");
	T_FAILS(mgpu_json_i64(mgpu_json_at(v, 2), INT64_MIN, INT64_MAX, &i), MGPU_ERANGE,
		"9223372036854775808 out of range");
	T_FAILS(mgpu_json_i64(mgpu_json_at(v, 3), 0, 10, &i), MGPU_EFORMAT,
		"expected an integer, got 1.5");
	T_FAILS(mgpu_json_i64(mgpu_json_at(v, 4), 0, 1000, &i), MGPU_EFORMAT,
		"expected an integer, got 1e2");
	T_FAILS(mgpu_json_i64(mgpu_json_at(v, 6), 0, 11, &i), MGPU_ERANGE,
		"12 out of range [0, 11]");
	T_FAILS(mgpu_json_i64(mgpu_json_at(v, 7), 0, 11, &i), MGPU_EFORMAT,
		"expected an integer, got string");
	T_FAILS(mgpu_json_i64(NULL, 0, 11, &i), MGPU_EFORMAT, "got nothing");
	T_FAILS(mgpu_json_f64(mgpu_json_at(v, 7), &x), MGPU_EFORMAT, "expected a number");
	T_OK(mgpu_json_f64(mgpu_json_at(v, 5), &x));
	T_CHECK(x == 0.000001, "%g", x);
	T_CHECK(strcmp(mgpu_json_at(v, 4)->str, "1e2") == 0, "literal kept");
	mgpu_json_free(&doc);
}

static void test_errors(void)
{
	char deep[300];
	int i;

	BAD("", "'t.json': bad JSON at byte 0: unexpected end of input");
	BAD("   ", "at byte 3: unexpected end of input");
	BAD("[1,]", "at byte 3: expected a value");
	BAD("[1 2]", "at byte 3: expected ',' or ']'");
	BAD("{\"a\" 1}", "at byte 5: expected ':'");
	BAD("{\"a\":1,}", "at byte 7: expected a string key");
	BAD("{\"a\":1 \"b\":2}", "at byte 7: expected ',' or '}'");
	BAD("{1:2}", "at byte 1: expected a string key");
	BAD("{\"a\":", "at byte 5: unexpected end of input");
	BAD("{\"a\"", "at byte 4: unexpected end of input");
	BAD("[1", "at byte 2: unexpected end of input");
	BAD("{", "at byte 1: unexpected end of input");
	BAD("1 2", "at byte 2: trailing characters after the value");
	BAD("nul", "at byte 0: expected a value");
	BAD("True", "at byte 0: expected a value");
	BAD("01", "at byte 1: trailing characters");
	BAD("-", "at byte 0: malformed number");
	BAD("1.", "at byte 0: malformed number");
	BAD(".5", "at byte 0: expected a value");
	BAD("1e", "at byte 0: malformed number");
	BAD("+1", "at byte 0: expected a value");
	BAD("1e400", "at byte 0: number out of range");
	BAD("\"abc", "at byte 0: unterminated string");
	BAD("\"a\\", "at byte 0: unterminated string");
	BAD("\"a\tb\"", "at byte 2: control character in a string");
	BAD("\"\\x\"", "at byte 1: bad escape in a string");
	BAD("\"\\u12g4\"", "at byte 5: bad hex digit");
	BAD("\"\\u12\"", "at byte 3: truncated \\u escape");
	BAD("\"\\udc00\"", "at byte 1: lone low surrogate");
	BAD("\"\\ud800\"", "at byte 1: high surrogate not followed by a low one");
	BAD("\"\\ud800\\u0041\"", "high surrogate not followed by a low one");
	BAD("\"\xff\"", "at byte 1: invalid UTF-8");
	BAD("\"\xc0\xaf\"", "invalid UTF-8");         /* overlong '/' */
	BAD("\"\xed\xa0\x80\"", "invalid UTF-8");     /* encoded surrogate */
	BAD("\"\xe2\x82\"", "invalid UTF-8");         /* cut sequence */
	BAD("\xef\xbb\xbf{}", "at byte 0: expected a value"); /* BOM */
	BAD("{\"a\":1,\"b\":2,\"a\":3}", "at byte 17: duplicate key");
	BAD("[\x01]", "expected a value");
	for (i = 0; i < MGPU_JSON_MAX_DEPTH + 1; i++)
		deep[i] = '[';
	deep[i] = '\0';
	BAD(deep, "at byte 64: nesting too deep");
	/* exactly the limit is fine */
	{
		struct mgpu_json_doc doc;
		for (i = 0; i < MGPU_JSON_MAX_DEPTH; i++)
			deep[i] = '[', deep[2 * MGPU_JSON_MAX_DEPTH - 1 - i] = ']';
		deep[2 * MGPU_JSON_MAX_DEPTH] = '\0';
		T_OK(parse(deep, &doc));
		mgpu_json_free(&doc);
	}
	/* not NUL-terminated: the parser stops at len */
	{
		struct mgpu_json_doc doc;
		T_OK(mgpu_json_parse("[1]xyz", 3, NULL, &doc));
		mgpu_json_free(&doc);
		T_FAILS(mgpu_json_parse("[1]", 2, NULL, &doc), MGPU_EFORMAT,
			"'json': bad JSON at byte 2");
	}
}

static void test_big(void)
{
	/* many members: exercises the arena blocks and the duplicate check */
	char *buf = NULL;
	size_t len = 0;
	FILE *fp = open_memstream(&buf, &len);
	struct mgpu_json_doc doc;
	const struct mgpu_json *v;
	int64_t x = 0;
	int i;

	fputc('{', fp);
	for (i = 0; i < 20000; i++)
		fprintf(fp, "%s\"k%d\":[%d,\"%0100d\"]", i ? "," : "", i, i, i);
	fputc('}', fp);
	fclose(fp);
	T_OK(mgpu_json_parse(buf, len, "big", &doc));
	v = mgpu_json_get(doc.root, "k19999");
	T_OK(mgpu_json_i64(mgpu_json_at(v, 0), 0, 100000, &x));
	T_CHECK(x == 19999, "%lld", (long long)x);
	T_CHECK(doc.root && doc.root->count == 20000, "count");
	mgpu_json_free(&doc);
	/* a duplicate far apart */
	memcpy(strstr(buf, "\"k19999\""), "\"k10000\"", 8);
	T_FAILS(mgpu_json_parse(buf, len, "big", &doc), MGPU_EFORMAT, "duplicate key");
	free(buf);
}

static void test_escape(void)
{
	const char *in = "a\"b\\c\n\x01\x1f\x7f\xc3\xa9/";
	const char *want = "\"a\\\"b\\\\c\\n\\u0001\\u001f\x7f\xc3\xa9/\"";
	char buf[64], small[6], *mem = NULL;
	size_t n, mlen = 0;
	FILE *fp;
	struct mgpu_json_doc doc;

	n = mgpu_json_escape_buf(buf, sizeof buf, in);
	T_CHECK(n == strlen(want) && strcmp(buf, want) == 0, "got '%s' (%zu)", buf, n);
	n = mgpu_json_escape_buf(small, sizeof small, in);
	T_CHECK(n == strlen(want) && strcmp(small, "\"a\\\"b") == 0, "truncated '%s'", small);
	T_CHECK(mgpu_json_escape_buf(NULL, 0, "") == 2, "empty needs 2");
	fp = open_memstream(&mem, &mlen);
	T_OK(mgpu_json_escape(fp, in));
	fclose(fp);
	T_CHECK(mem && strcmp(mem, want) == 0, "stream '%s'", mem);
	/* what we write, we read back */
	T_OK(parse(buf, &doc));
	T_CHECK(doc.root && strcmp(mgpu_json_str(doc.root), in) == 0, "round trip");
	mgpu_json_free(&doc);
	free(mem);
	/* a stream in error */
	fp = fopen("/dev/null", "r");
	if (fp) {
		T_FAILS(mgpu_json_escape(fp, "x"), MGPU_EIO, "write failed");
		fclose(fp);
	}
}

/* NaN and infinities have no JSON form: they are written as null, and
 * what is written parses. */
static void test_num(void)
{
	static const double in[] = { 1.5, -0.0, 0x1p1000, NAN, INFINITY, -INFINITY };
	const char *want = "[1.5,-0,1.0715086071862673e+301,null,null,null]";
	struct mgpu_json_doc doc;
	char *mem = NULL;
	size_t mlen = 0, i;
	FILE *fp;

	fp = open_memstream(&mem, &mlen);
	if (!fp)
		T_SKIP("open_memstream failed");
	fputc('[', fp);
	for (i = 0; i < sizeof in / sizeof in[0]; i++) {
		fputs(i ? "," : "", fp);
		T_OK(mgpu_json_num(fp, in[i], 17));
	}
	fputc(']', fp);
	fclose(fp);
	T_CHECK(mem && strcmp(mem, want) == 0, "got '%s'", mem);
	T_OK(parse(mem, &doc));
	T_CHECK(doc.root && doc.root->count == 6 && doc.root->items[3].type == MGPU_JSON_NULL,
		"parsed back");
	mgpu_json_free(&doc);
	free(mem);
	fp = fopen("/dev/null", "r");
	if (fp) {
		T_FAILS(mgpu_json_num(fp, NAN, 6), MGPU_EIO, "write failed");
		fclose(fp);
	}
}

int main(void)
{
	T_RUN(test_values);
	T_RUN(test_strings);
	T_RUN(test_numbers);
	T_RUN(test_errors);
	T_RUN(test_big);
	T_RUN(test_escape);
	T_RUN(test_num);
	return T_DONE();
}
