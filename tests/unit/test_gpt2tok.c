/*
 * test_gpt2tok.c - GPT-2's tokenizer read from its own files
 * (data/gpt2tok.h), against tests/data/gpt2tok: a small encoder.json and
 * vocab.bpe in GPT-2's formats and the ids tiktoken encodes six sentences
 * to (make_fixture.py: contractions, numbers, whitespace runs, UTF-8,
 * letters no merge knows). Decoding gives the text back; text that is not
 * UTF-8 and malformed files are errors naming what is wrong. Run from the
 * source tree (tests/run.sh does).
 */
#include <stdio.h>  /* fopen, fgets */
#include <stdlib.h> /* free, strtol */
#include <string.h> /* memcmp, strlen, strchr */

#include "core/err.h"     /* MGPU_E* */
#include "data/gpt2tok.h" /* mgpu_gpt2tok_* */
#include "../t.h"         /* T_RUN, T_CHECK, T_OK, T_FAILS */
#include "../tmpdir.h"    /* t_tmpdir_make, tpath */

#define FIX "tests/data/gpt2tok"

static size_t unhex(const char *h, unsigned char *out)
{
	size_t n = 0;
	unsigned v;

	while (h[0] && h[1] && sscanf(h, "%2x", &v) == 1) {
		out[n++] = (unsigned char)v;
		h += 2;
	}
	return n;
}

static void test_cases(void)
{
	struct mgpu_gpt2tok t;
	char line[4096], *tab, *p, *e;
	unsigned char text[1024], *back;
	int32_t want[512], *ids;
	size_t len, n, nw, blen, k = 0;
	FILE *f;

	T_OK(mgpu_gpt2tok_load(&t, FIX));
	T_CHECK(t.vocab == 302 + 1 && t.nmerges > 40, "vocab %d merges %d", t.vocab, t.nmerges);
	f = fopen(FIX "/cases.tsv", "r");
	T_CHECK(f != NULL, "no " FIX "/cases.tsv (run from the source tree)");
	if (!f)
		return;
	T_CHECK(fgets(line, sizeof line, f) != NULL, "header");
	while (fgets(line, sizeof line, f)) {
		tab = strchr(line, '\t');
		T_CHECK(tab != NULL, "line %zu", k);
		if (!tab)
			break;
		*tab = '\0';
		len = unhex(line, text);
		for (nw = 0, p = tab + 1; (want[nw] = (int32_t)strtol(p, &e, 10)), e != p; p = e)
			nw++;
		T_OK(mgpu_gpt2tok_encode(&t, text, len, &ids, &n));
		T_CHECK(n == nw && memcmp(ids, want, n * sizeof *ids) == 0,
			"case %zu ('%.*s'): %zu ids, tiktoken's %zu; first difference at %zu", k,
			(int)len, text, n, nw, n);
		T_OK(mgpu_gpt2tok_decode(&t, ids, n, &back, &blen));
		T_CHECK(blen == len && memcmp(back, text, len) == 0, "case %zu: decode", k);
		free(ids);
		free(back);
		k++;
	}
	fclose(f);
	T_CHECK(k == 6, "%zu cases", k);
	{
		static const unsigned char bad[] = "ok \xff\xfe bytes";
		int32_t big = t.vocab;
		T_FAILS(mgpu_gpt2tok_encode(&t, bad, sizeof bad - 1, &ids, &n), MGPU_EFORMAT,
			"text is not UTF-8 at byte 3");
		T_FAILS(mgpu_gpt2tok_decode(&t, &big, 1, &back, &blen), MGPU_ERANGE,
			"not below its vocab");
	}
	mgpu_gpt2tok_free(&t);
}

static void put(const char *dir, const char *name, const char *text)
{
	char path[600];
	FILE *f;

	snprintf(path, sizeof path, "%s/%s", dir, name);
	f = fopen(path, "w");
	T_CHECK(f != NULL, "%s", path);
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

/* The fixture's encoder.json with one change, into dir. */
static void copy_encoder(const char *dir, const char *from, const char *to)
{
	char buf[8192];
	FILE *f = fopen(FIX "/encoder.json", "r");
	size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
	char *at;

	if (f)
		fclose(f);
	buf[n] = '\0';
	at = strstr(buf, from);
	T_CHECK(at != NULL, "fixture lacks %s", from);
	if (at) {
		char out[8400];
		snprintf(out, sizeof out, "%.*s%s%s", (int)(at - buf), buf, to, at + strlen(from));
		put(dir, "encoder.json", out);
	}
}

static void test_errors(void)
{
	struct mgpu_gpt2tok t;
	const char *d = tpath("");

	T_FAILS(mgpu_gpt2tok_load(&t, "/nonexistent"), MGPU_EIO, "/nonexistent/encoder.json");
	copy_encoder(d, "\"!\": 0,", "\"!\": 1,");
	put(d, "vocab.bpe", "#version: 0.2\n");
	T_FAILS(mgpu_gpt2tok_load(&t, d), MGPU_EFORMAT, "its id is taken already");
	copy_encoder(d, "\"!\": 0,", "\"!\": 0, \"x\xe6\xbc\xa2\": 900,");
	T_FAILS(mgpu_gpt2tok_load(&t, d), MGPU_EFORMAT, "want an id in [0,");
	copy_encoder(d, "\"!\": 0,", "\"!\": 0,");
	put(d, "vocab.bpe", "#version: 0.2\nh e\nonlyone\n");
	T_FAILS(mgpu_gpt2tok_load(&t, d), MGPU_EFORMAT, "vocab.bpe': line 3: want two token strings");
	put(d, "vocab.bpe", "#version: 0.2\nh \xe6\xbc\xa2\n");
	T_FAILS(mgpu_gpt2tok_load(&t, d), MGPU_EFORMAT, "vocab.bpe': line 2");
	/* merges that make a token encoder.json lacks */
	put(d, "vocab.bpe", "#version: 0.2\nq z\n");
	T_OK(mgpu_gpt2tok_load(&t, d));
	{
		int32_t *ids;
		size_t n;
		T_FAILS(mgpu_gpt2tok_encode(&t, (const unsigned char *)"qz", 2, &ids, &n),
			MGPU_EFORMAT, "encoder.json has no id for the merged bytes at 0");
	}
	mgpu_gpt2tok_free(&t);
}

int main(void)
{
	if (t_tmpdir_make("gpt2tok") < 0)
		return 1;
	T_RUN(test_cases);
	T_RUN(test_errors);
	t_tmpdir_remove();
	return T_DONE();
}
