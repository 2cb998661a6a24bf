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

/* Labels that are words: classes in sorted order, the names kept; a number
 * among words is a word too. */
static void test_words(void)
{
	struct mgpu_samples s;

	T_OK(parse("a,label\n1,WALKING\n2,LAYING\n3,WALKING\n4,SITTING\n5,2.5\n", NULL, &s));
	T_CHECK(s.n == 5 && s.nnames == 4 && s.classes == 4, "n %zu names %d classes %d", s.n,
		s.nnames, s.classes);
	T_CHECK(s.nnames == 4 && !strcmp(s.names[0], "2.5") && !strcmp(s.names[1], "LAYING") &&
		!strcmp(s.names[2], "SITTING") && !strcmp(s.names[3], "WALKING"), "names");
	T_CHECK(s.y[0] == 3 && s.y[1] == 1 && s.y[2] == 3 && s.y[3] == 2 && s.y[4] == 0,
		"labels %d %d %d %d %d", s.y[0], s.y[1], s.y[2], s.y[3], s.y[4]);
	mgpu_samples_free(&s);
	T_OK(parse("a,label\n1,3\n2,0\n", NULL, &s));
	T_CHECK(s.names == NULL && s.classes == 4 && s.y[0] == 3, "numbers stay numbers");
	mgpu_samples_free(&s);
}

static void test_join(void)
{
	struct mgpu_samples a, b, c;

	T_OK(parse("x,label\n1,cat\n2,dog\n", NULL, &a));
	T_OK(parse("x,label\n1,ant\n2,dog\n3,emu\n", NULL, &b));
	T_OK(mgpu_class_names_join(&a, &b, "b.csv"));
	T_CHECK(a.nnames == 4 && !strcmp(a.names[0], "ant") && !strcmp(a.names[3], "emu"),
		"union %d", a.nnames);
	T_CHECK(a.y[0] == 1 && a.y[1] == 2, "dst renumbered: %d %d", a.y[0], a.y[1]);
	T_CHECK(b.y[0] == 0 && b.y[1] == 2 && b.y[2] == 3, "src renumbered: %d %d %d", b.y[0],
		b.y[1], b.y[2]);
	T_OK(parse("x,label\n1,0\n", NULL, &c));
	T_FAILS(mgpu_class_names_join(&a, &c, "c.csv"), MGPU_EFORMAT,
		"'c.csv': its labels are numbers, an earlier source's are words");
	mgpu_samples_free(&a);
	mgpu_samples_free(&b);
	mgpu_samples_free(&c);
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
	T_FAILS(parse("a,label\n1,\n", NULL, &s), MGPU_EFORMAT, "line 2: label column 'label' is empty");
	T_FAILS(parse("a,label\n1,\"x\ty\"\n", NULL, &s), MGPU_EFORMAT, "control character");
	T_FAILS(parse("a,label\n1e999,2\n", NULL, &s), MGPU_EFORMAT, "'1e999' is not a number");
	T_FAILS(parse("a,label\nnan,2\n", NULL, &s), MGPU_EFORMAT, "'nan' is not a number");
	T_FAILS(parse("a,label\n", NULL, &s), MGPU_EFORMAT, "no data lines");
	T_FAILS(parse("", NULL, &s), MGPU_EFORMAT, "empty file");
	T_FAILS(parse("a,label\n\"1,2\n", NULL, &s), MGPU_EFORMAT, "unterminated quoted");
	T_FAILS(parse("label\n1\n", NULL, &s), MGPU_EFORMAT, "no feature columns");
	T_FAILS(mgpu_csv_load("/nonexistent.csv", NULL, &s), MGPU_EIO, "'/nonexistent.csv'");
}

/* --target-columns: a regression vector in the order named, by name or
 * index; the label column optional; each mistake an error naming it. */
static void test_targets(void)
{
	static const char text[] = "a,y1,b,y2\n1,2,3,4\n5,6,7,8\n";
	static const char lab[] = "a,label,y\n1,3,0.5\n2,1,-0.25\n";
	struct mgpu_samples s;
	const float *x, *t;

	T_OK(mgpu_csv_parse_t(text, strlen(text), "t.csv", NULL, "y2,1", &s));
	x = (const float *)(const void *)s.x;
	t = (const float *)(const void *)s.t;
	T_CHECK(s.n == 2 && s.d == 2 && s.tkind == MGPU_TARGET_VECTOR && s.tshape[0] == 2 &&
			s.classes == 1 && s.y[1] == 0,
		"n %zu d %zu kind %d", s.n, s.d, s.tkind);
	T_CHECK(x[0] == 1 && x[1] == 3 && x[2] == 5 && x[3] == 7, "features");
	T_CHECK(t[0] == 4 && t[1] == 2 && t[2] == 8 && t[3] == 6, "targets in the order named");
	mgpu_samples_free(&s);
	T_OK(mgpu_csv_parse_t(lab, strlen(lab), "l.csv", NULL, "y", &s));
	t = (const float *)(const void *)s.t;
	T_CHECK(s.d == 1 && s.classes == 4 && s.y[0] == 3 && t[1] == -0.25f, "with a label");
	mgpu_samples_free(&s);
	T_FAILS(mgpu_csv_parse_t(text, strlen(text), "t.csv", NULL, "y3", &s), MGPU_EINVAL,
		"'t.csv': --target-columns: no column 'y3' in the header");
	T_FAILS(mgpu_csv_parse_t(lab, strlen(lab), "l.csv", NULL, "label", &s), MGPU_EINVAL,
		"column 'label' is the label");
	T_FAILS(mgpu_csv_parse_t(text, strlen(text), "t.csv", NULL, "y1,1", &s), MGPU_EINVAL,
		"column '1' is named twice");
	T_FAILS(mgpu_csv_parse_t(text, strlen(text), "t.csv", NULL, "0,1,2,3", &s), MGPU_EINVAL,
		"leaves no feature column");
	T_FAILS(mgpu_csv_parse_t(text, strlen(text), "t.csv", NULL, "y1,", &s), MGPU_EINVAL,
		"an empty or overlong column name");
	T_FAILS(mgpu_csv_parse_t(text, strlen(text), "t.csv", "nope", "y1", &s), MGPU_EFORMAT,
		"no label column 'nope'");
	T_FAILS(mgpu_csv_parse_t("a,y\n1,x\n", 10, "t.csv", NULL, "y", &s), MGPU_EFORMAT,
		"line 2: column 'y': 'x' is not a number");
}

int main(void)
{
	T_RUN(test_basic);
	T_RUN(test_errors);
	T_RUN(test_words);
	T_RUN(test_join);
	T_RUN(test_targets);
	return T_DONE();
}
