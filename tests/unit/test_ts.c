/*
 * test_ts.c - unit tests of the UEA/UCR .ts reader: a hand-made file gives
 * (C, L) float32 samples dimension after dimension, classes numbered in
 * sorted name order with the names kept (or the numbers as they are);
 * every bad input (unequal lengths, a missing value, a label not listed,
 * time stamps, a regression set, a header that disagrees) is an error
 * naming the file and the line; a file cut at any byte parses or fails
 * cleanly, and a compressed file reads alike.
 */
#include <stdio.h>  /* FILE, fopen */
#include <stdlib.h> /* free */
#include <string.h> /* strlen, strstr */

#include "core/err.h"     /* mgpu_errmsg, MGPU_E* */
#include "data/ts.h"      /* mgpu_ts_parse, mgpu_ts_load */
#include "../t.h"         /* T_RUN, T_CHECK, T_OK, T_FAILS */
#include "../tmpdir.h"    /* tpath, t_tmpdir_make */

/* tests/data/ts/Tiny_TRAIN.ts, which the CLI tests read */
static const char tiny[] =
	"#A hand-made UEA/UCR file for the tests: 2 dimensions of 3 steps,\n"
	"#classes listed out of sorted order, comments, a blank line, a CR LF line.\n"
	"@problemName Tiny\n@timeStamps false\n@missing false\n@univariate false\n"
	"@dimensions 2\n@equalLength true\n@seriesLength 3\n"
	"@classLabel true walk run sit\n@data\n"
	"0.5,1,-2:3,4e-1,5:walk\n\n1,2,3:4,5,6:run\n% an ARFF-style comment\n"
	"-1.25, 0 ,7:8,9,10:sit\n10,20,30:40,50,60:sit\r\n";

static void test_tiny(void)
{
	static const float want0[6] = { 0.5f, 1, -2, 3, 0.4f, 5 };
	struct mgpu_samples s;
	const float *x;
	int i;

	T_OK(mgpu_ts_parse(tiny, strlen(tiny), "tiny.ts", &s));
	T_CHECK(s.n == 4 && s.dtype == MGPU_DTYPE_F32 && s.ndim == 2 && s.shape[0] == 2 &&
		s.shape[1] == 3 && s.d == 6, "n %zu, %d dims %ux%u", s.n, s.ndim, s.shape[0],
		s.shape[1]);
	x = (const float *)(const void *)s.x;
	for (i = 0; s.x && i < 6; i++)
		T_CHECK(x[i] == want0[i], "x[%d] = %g", i, (double)x[i]);
	T_CHECK(s.x && x[2 * 6 + 0] == -1.25f && x[2 * 6 + 1] == 0 && x[3 * 6 + 5] == 60,
		"spaces around values, CR LF");
	/* sorted names: run 0, sit 1, walk 2 */
	T_CHECK(s.nnames == 3 && s.names && strcmp(s.names[0], "run") == 0 &&
		strcmp(s.names[1], "sit") == 0 && strcmp(s.names[2], "walk") == 0, "names");
	T_CHECK(s.y && s.y[0] == 2 && s.y[1] == 0 && s.y[2] == 1 && s.y[3] == 1 &&
		s.classes == 3, "labels %d %d %d %d, classes %d", s.y[0], s.y[1], s.y[2],
		s.y[3], s.classes);
	mgpu_samples_free(&s);
}

static void test_numbers_and_univariate(void)
{
	static const char t[] = "@problemName N\n@timestamps false\n@univariate true\n"
				"@CLASSLABEL true 1 3 2\n@data\n1,2,3,4:3\n5,6,7,8:1\n";
	struct mgpu_samples s;

	T_OK(mgpu_ts_parse(t, strlen(t), "n.ts", &s));
	/* integer names are the class numbers, as CSV's */
	T_CHECK(s.n == 2 && s.ndim == 2 && s.shape[0] == 1 && s.shape[1] == 4 && !s.names &&
		s.y[0] == 3 && s.y[1] == 1 && s.classes == 4, "n %zu classes %d", s.n,
		s.classes);
	mgpu_samples_free(&s);
}

/* text must fail with MGPU_EFORMAT naming "b.ts" and containing sub. */
static void bad(const char *text, const char *sub)
{
	struct mgpu_samples s;

	T_FAILS(mgpu_ts_parse(text, strlen(text), "b.ts", &s), MGPU_EFORMAT, sub);
	T_CHECK(strstr(mgpu_errmsg(), "'b.ts'") && !s.x && !s.n, "%s", mgpu_errmsg());
}

#define H "@problemName B\n@classLabel true a b\n@data\n"

static void test_errors(void)
{
	bad(H "1,2:3,4:a\n1,2,3:4,5,6:b\n", "line 5: dimension 1 has 3 values, the first series 2 "
	    "(unequal lengths are not supported)");
	bad(H "1,2,3:4,5:a\n", "line 4: dimension 2 has 2 values, dimension 1 3");
	bad(H "1,2:3,4:a\n1,2:b\n", "line 5: 1 dimensions, the first series 2");
	bad(H "1,?,3:a\n", "line 4: dimension 1, value 2 is missing ('?')");
	bad(H "1,nan,3:a\n", "line 4: dimension 1, value 2: 'nan' is not a finite number");
	bad(H "1,x,3:a\n", "'x' is not a finite number");
	bad(H "1,,3:a\n", "dimension 1, value 2 is empty");
	bad(H "1,1e39:a\n", "'1e39' is not a finite number");
	bad(H "1,2,3:c\n", "line 4: label 'c' is not one of @classLabel's");
	bad(H "1,2,3\n", "line 4: no ':' before a class label");
	bad(H "1,2,3:\n", "line 4: the class label after the last ':' is empty");
	bad(H "1,2,3:a b\n", "is not one word");
	bad(H, "no series after @data");
	bad("@problemName B\n@classLabel true a b\n", "no @data line: not a .ts file");
	bad("", "no @data line");
	bad("@problemName B\n@data\n1:a\n", "no @classLabel line before @data");
	bad("1,2:a\n@data\n", "line 1: a series before @data");
	bad("@timeStamps true\n@classLabel true a\n@data\n", "line 1: series with time stamps");
	bad("@targetLabel true\n@data\n1:0.5\n", "a regression set (@targetLabel true)");
	bad("@classLabel false\n@data\n", "@classLabel false: the series have no classes");
	bad("@classLabel true\n@data\n", "@classLabel true lists no classes");
	bad("@classLabel true a b a\n@data\n", "class 'a' is listed twice");
	bad("@classLabel true a\n@classLabel true b\n@data\n", "a second @classLabel line");
	bad("@dimensions two\n@classLabel true a\n@data\n", "@dimensions wants a positive number");
	bad("@seriesLength 0\n@classLabel true a\n@data\n", "@seriesLength wants a positive");
	bad("@univariate maybe\n@classLabel true a\n@data\n", "@univariate wants true or false");
	bad("@dimensions 2\n@classLabel true a\n@data\n1,2:a\n", "line 4: 1 dimensions, the "
	    "header says 2");
	bad("@univariate true\n@classLabel true a\n@data\n1,2:3,4:a\n", "2 dimensions, the header "
	    "says 1");
	bad("@seriesLength 3\n@classLabel true a\n@data\n1,2:a\n", "line 4: 2 values per "
	    "dimension, @seriesLength says 3");
}

/* A file cut anywhere either parses (at a line's end: fewer series) or
 * fails naming the file; never anything else. */
static void test_truncated(void)
{
	struct mgpu_samples s;
	size_t n, len = strlen(tiny), ok = 0;
	int rc;

	for (n = 0; n < len; n++) {
		rc = mgpu_ts_parse(tiny, n, "cut.ts", &s);
		if (rc == 0) {
			ok++;
			T_CHECK(s.n >= 1 && s.n <= 4 && s.d == 6, "cut at %zu: n %zu", n, s.n);
			mgpu_samples_free(&s);
		} else {
			T_CHECK(rc == MGPU_EFORMAT && strstr(mgpu_errmsg(), "'cut.ts'") && !s.x,
				"cut at %zu: rc %d: %s", n, rc, mgpu_errmsg());
		}
	}
	T_CHECK(ok > 0, "no cut parsed");
}

static void test_load_compressed(void)
{
	struct mgpu_samples s;
	char cmd[8400];
	FILE *fp = fopen(tpath("Tiny.ts"), "w");

	T_CHECK(fp && fputs(tiny, fp) >= 0 && fclose(fp) == 0, "fixture");
	snprintf(cmd, sizeof cmd, "gzip -c '%s' > '%s'", tpath("Tiny.ts"), tpath("Tiny.ts.gz"));
	T_CHECK(system(cmd) == 0, "gzip");
	T_OK(mgpu_ts_load(tpath("Tiny.ts.gz"), &s));
	T_CHECK(s.n == 4 && s.d == 6 && s.nnames == 3, "n %zu", s.n);
	mgpu_samples_free(&s);
	T_FAILS(mgpu_ts_load(tpath("none.ts"), &s), MGPU_EIO, "none.ts'");
}

int main(void)
{
	if (t_tmpdir_make("ts") < 0)
		return 1;
	T_RUN(test_tiny);
	T_RUN(test_numbers_and_univariate);
	T_RUN(test_errors);
	T_RUN(test_truncated);
	T_RUN(test_load_compressed);
	t_tmpdir_remove();
	return T_DONE();
}
