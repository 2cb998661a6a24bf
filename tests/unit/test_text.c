/*
 * test_text.c - unit tests of the text reader (data/text.h): how many
 * windows a length gives, that sample k holds bytes [k*T, k*T+T] of its
 * file, that files append in order and must agree on the context, that
 * mgpu-shard's dispatcher sends every path to it when a context is set,
 * and every error naming the file.
 */
#include <stdio.h>  /* fopen, fwrite */
#include <string.h> /* memcmp, strlen */

#include "core/err.h"     /* mgpu_errmsg, MGPU_E* */
#include "data/input.h"   /* mgpu_input_load */
#include "data/text.h"    /* mgpu_text_* */
#include "../t.h"         /* T_RUN, T_CHECK, T_OK, T_FAILS */
#include "../tmpdir.h"    /* t_tmpdir_make, tpath */

static int cut(const char *text, size_t context, struct mgpu_samples *s)
{
	return mgpu_text_cut((const unsigned char *)text, strlen(text), context, "t.txt", s);
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "wb");

	T_CHECK(f && fwrite(text, 1, strlen(text), f) == strlen(text), "writing %s", path);
	if (f)
		fclose(f);
}

static void test_nsamples(void)
{
	T_CHECK(mgpu_text_nsamples(0, 4) == 0, "empty");
	T_CHECK(mgpu_text_nsamples(4, 4) == 0, "T bytes are no sample");
	T_CHECK(mgpu_text_nsamples(5, 4) == 1, "T+1 bytes are one");
	T_CHECK(mgpu_text_nsamples(8, 4) == 1, "a tail of 3 is dropped");
	T_CHECK(mgpu_text_nsamples(9, 4) == 2, "windows share their end byte");
	T_CHECK(mgpu_text_nsamples(10, 1) == 9, "context 1: every pair");
	T_CHECK(mgpu_text_nsamples(10, 0) == 0, "context 0");
}

static void test_windows(void)
{
	static const char *const want[] = { "abcd", "defg", "ghij" };
	struct mgpu_samples s = { 0 };
	size_t k;

	T_OK(cut("abcdefghijk", 3, &s)); /* (11-1)/3 = 3, "k" dropped */
	T_CHECK(s.n == 3 && s.dtype == MGPU_DTYPE_U8 && s.ndim == 1 && s.shape[0] == 4 &&
		s.d == 4, "n %zu dtype %d shape %u", s.n, s.dtype, s.shape[0]);
	for (k = 0; k < 3 && k < s.n; k++) {
		T_CHECK(memcmp(s.x + k * 4, want[k], 4) == 0, "sample %zu is '%.4s'", k,
			(const char *)s.x + k * 4);
		T_CHECK(s.y[k] == 0, "label %d", (int)s.y[k]);
	}
	T_CHECK(s.classes == 1, "classes %d", s.classes);
	T_OK(cut("WXYZ!?!", 3, &s)); /* a second file follows, cut on its own */
	T_CHECK(s.n == 5 && memcmp(s.x + 3 * 4, "WXYZZ!?!", 8) == 0,
		"second file's windows after the first's");
	mgpu_samples_free(&s);
}

static void test_errors(void)
{
	struct mgpu_samples s = { 0 };

	T_FAILS(cut("", 3, &s), MGPU_EFORMAT, "'t.txt': empty");
	T_FAILS(cut("abc", 3, &s), MGPU_EFORMAT,
		"'t.txt': 3 bytes, shorter than one sample of 4 (context 3 + 1)");
	T_FAILS(cut("abcd", 0, &s), MGPU_EINVAL, "'t.txt': context 0 out of range");
	T_CHECK(s.n == 0 && s.dtype == 0, "output touched by a failure");
	T_OK(cut("abcdefgh", 3, &s));
	T_FAILS(cut("abcdefgh", 4, &s), MGPU_EFORMAT,
		"'t.txt': text samples are u8 5, earlier sources gave u8 4");
	T_CHECK(s.n == 2, "a refused file appended %zu samples", s.n - 2);
	mgpu_samples_free(&s);
	T_FAILS(mgpu_text_load("/nonexistent.txt", 3, 0, &s), MGPU_EIO, "'/nonexistent.txt'");
}

/* Through mgpu-shard's dispatcher: with a context every path is text, even
 * one named like a CSV file, and the files' samples come in order. */
static void test_input(void)
{
	struct mgpu_input_opts o = { .text_context = 2 };
	struct mgpu_samples s = { 0 }, test = { 0 };

	write_file(tpath("a.csv"), "a,b\n1");
	write_file(tpath("b.txt"), "xyz");
	T_OK(mgpu_input_load(tpath("a.csv"), &o, &s, &test));
	T_OK(mgpu_input_load(tpath("b.txt"), &o, &s, &test));
	T_CHECK(s.n == 3 && memcmp(s.x, "a,bb\n1xyz", 9) == 0 && test.n == 0,
		"n %zu, bytes '%.9s'", s.n, (const char *)s.x);
	write_file(tpath("c.txt"), "");
	T_FAILS(mgpu_input_load(tpath("c.txt"), &o, &s, &test), MGPU_EFORMAT, "c.txt': empty");
	mgpu_samples_free(&s);
}

int main(void)
{
	if (t_tmpdir_make("text") < 0)
		return 1;
	T_RUN(test_nsamples);
	T_RUN(test_windows);
	T_RUN(test_errors);
	T_RUN(test_input);
	t_tmpdir_remove();
	return T_DONE();
}
