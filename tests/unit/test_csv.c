/*
 * test_csv.c - unit tests of the CSV reader: label by name and by index,
 * quoting, CRLF and blank lines, and every documented error naming the
 * file, the line and the column.
 */
#include <string.h> /* strlen */

#include "core/err.h" /* mgpu_errmsg, MGPU_E* */
#include "data/csv.h" /* mgpu_csv_parse */
#include "../t.h"     /* T_RUN, T_CHECK, T_OK, T_FAILS */

static int parse(const char *text, const char *label, struct mgpu_samples *s)
{
	return mgpu_csv_parse(text, strlen(text), "t.csv", label, s);
}

static void test_basic(void)
{
	struct mgpu_samples s;
	const float *x;

	T_OK(parse("a,label,b\n1.5,2,-3\n\n4,0,5e1\n", NULL, &s));
	x = (const float *)(const void *)s.x;
	T_CHECK(s.n == 2 && s.d == 2 && s.dtype == MGPU_DTYPE_F32, "n %zu d %zu", s.n, s.d);
	T_CHECK(x[0] == 1.5f && x[1] == -3.0f && x[3] == 50.0f, "values");
	T_CHECK(s.y[0] == 2 && s.y[1] == 0 && s.classes == 3, "labels");
	mgpu_samples_free(&s);
	T_OK(parse("\"x 1\",\"y\"\r\n\" 7\",3\r\n", "1", &s));
	T_CHECK(s.n == 1 && s.y[0] == 3 && ((const float *)(const void *)s.x)[0] == 7.0f,
		"index label, quotes, CRLF");
	mgpu_samples_free(&s);
	T_OK(parse("cls,p\n1,2", "cls", &s));
	T_CHECK(s.n == 1 && s.y[0] == 1, "no final newline");
	mgpu_samples_free(&s);
}

static void test_errors(void)
{
	struct mgpu_samples s;

	T_FAILS(parse("a,label\n1,2\nx,1\n", NULL, &s), MGPU_EFORMAT,
		"'t.csv': line 3: column 'a': 'x' is not a number");
	T_CHECK(s.n == 0 && s.x == NULL, "output left on failure");
	T_FAILS(parse("a,label\n1,2\n1,2,3\n", NULL, &s), MGPU_EFORMAT,
		"line 3: more fields than the header's 2");
	T_FAILS(parse("a,b,label\n1,2\n", NULL, &s), MGPU_EFORMAT, "line 2: 2 fields, the "
		"header has 3");
	T_FAILS(parse("a,b\n1,2\n", NULL, &s), MGPU_EFORMAT, "no label column 'label'");
	T_FAILS(parse("a,label\n1,256\n", NULL, &s), MGPU_ERANGE, "label 256 out of range");
	T_FAILS(parse("a,label\n1,-1\n", NULL, &s), MGPU_ERANGE, "label -1 out of range");
	T_FAILS(parse("a,label\n1,2.5\n", NULL, &s), MGPU_EFORMAT, "'2.5' is not an integer");
	T_FAILS(parse("a,label\n1e999,2\n", NULL, &s), MGPU_EFORMAT, "'1e999' is not a number");
	T_FAILS(parse("a,label\nnan,2\n", NULL, &s), MGPU_EFORMAT, "'nan' is not a number");
	T_FAILS(parse("a,label\n", NULL, &s), MGPU_EFORMAT, "no data lines");
	T_FAILS(parse("", NULL, &s), MGPU_EFORMAT, "empty file");
	T_FAILS(parse("a,label\n\"1,2\n", NULL, &s), MGPU_EFORMAT, "unterminated quoted");
	T_FAILS(parse("label\n1\n", NULL, &s), MGPU_EFORMAT, "no feature columns");
	T_FAILS(mgpu_csv_load("/nonexistent.csv", NULL, &s), MGPU_EIO, "'/nonexistent.csv'");
}

int main(void)
{
	T_RUN(test_basic);
	T_RUN(test_errors);
	return T_DONE();
}
