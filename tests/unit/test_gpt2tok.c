/*
 * test_gpt2tok.c - GPT-2's tokenizer read from its own files
 * (data/gpt2tok.h), against tests/data/gpt2tok: a small encoder.json and
 * vocab.bpe in GPT-2's formats and the ids tiktoken encodes six sentences
 * to (make_fixture.py: contractions, numbers, whitespace runs, UTF-8,
 * letters no merge knows). The same ids come from the fixture as a
 * tiktoken ranks file, written here from its encoder.json. Decoding gives
 * the text back; text that is not UTF-8 and malformed files are errors
 * naming what is wrong. Run from the source tree (tests/run.sh does).
 */
#include <stdio.h>  /* fopen, fgets */
#include <stdlib.h> /* free, strtol */
#include <string.h> /* memcmp, strlen, strchr */

#include "core/err.h"     /* MGPU_E* */
#include "data/gpt2tok.h"   /* mgpu_gpt2tok_* */
#include "data/tokenizer.h" /* mgpu_tokenizer_open */
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

/* Every case of cases.tsv encodes to tiktoken's ids and decodes back. */
static void check_cases(const struct mgpu_gpt2tok *t, const char *what)
{
	char line[4096], *tab, *p, *e;
	unsigned char text[1024], *back;
	int32_t want[512], *ids;
	size_t len, n, nw, blen, k = 0;
	FILE *f = fopen(FIX "/cases.tsv", "r");

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
		T_OK(mgpu_gpt2tok_encode(t, text, len, &ids, &n));
		T_CHECK(n == nw && memcmp(ids, want, n * sizeof *ids) == 0,
			"%s: case %zu ('%.*s'): %zu ids, tiktoken's %zu", what, k, (int)len, text, n,
			nw);
		T_OK(mgpu_gpt2tok_decode(t, ids, n, &back, &blen));
		T_CHECK(blen == len && memcmp(back, text, len) == 0, "%s: case %zu: decode", what, k);
		free(ids);
		free(back);
		k++;
	}
	fclose(f);
	T_CHECK(k == 6, "%s: %zu cases", what, k);
}

static void test_cases(void)
{
	struct mgpu_gpt2tok t;
	unsigned char *back;
	int32_t *ids;
	size_t n, blen;

	T_OK(mgpu_gpt2tok_load(&t, FIX));
	T_CHECK(t.vocab == 302 + 1 && t.nmerges > 40, "vocab %d merges %d", t.vocab, t.nmerges);
	check_cases(&t, "encoder.json");
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
	{ /* a token string longer than any token (found by fuzz_gpt2merges) */
		char longline[2100] = "#version: 0.2\nh e\n";
		size_t at = strlen(longline);
		memset(longline + at, 'a', 2000);
		strcpy(longline + at + 2000, " b\n");
		put(d, "vocab.bpe", longline);
		T_FAILS(mgpu_gpt2tok_load(&t, d), MGPU_EFORMAT,
			"vocab.bpe': line 3: a token string of over 1024 characters");
	}
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

static void b64(FILE *f, const unsigned char *p, size_t n)
{
	static const char a[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t i;

	for (i = 0; i < n; i += 3) {
		unsigned v = (unsigned)p[i] << 16 | (i + 1 < n ? (unsigned)p[i + 1] << 8 : 0) |
			     (i + 2 < n ? p[i + 2] : 0);
		fprintf(f, "%c%c%c%c", a[v >> 18], a[v >> 12 & 63], i + 1 < n ? a[v >> 6 & 63] : '=',
			i + 2 < n ? a[v & 63] : '=');
	}
}

/* The fixture as a tiktoken ranks file, made from its encoder.json: a
 * token's bytes in base64 and its id as its rank, "<|endoftext|>" left
 * out (tiktoken adds it), lines in reverse order, one CRLF and one empty. */
static void write_ranks(const char *path)
{
	struct mgpu_gpt2tok g;
	FILE *f;
	int id;

	T_OK(mgpu_gpt2tok_load(&g, FIX));
	f = fopen(path, "w");
	T_CHECK(f != NULL, "%s", path);
	if (!f)
		return;
	for (id = g.vocab - 2; id >= 0; id--) {
		b64(f, g.pool + g.off[id], g.len[id]);
		fprintf(f, " %d%s\n", id, id == 7 ? "\r" : id == 9 ? "\n" : "");
	}
	fclose(f);
	mgpu_gpt2tok_free(&g);
}

static void test_ranks(void)
{
	struct mgpu_gpt2tok t;
	struct mgpu_tokenizer tk;
	const char *path = tpath("fixture.tiktoken");
	unsigned char *back;
	int32_t eot = 302, *ids;
	size_t n, blen;

	write_ranks(path);
	T_OK(mgpu_gpt2tok_load_ranks(&t, path));
	T_CHECK(t.vocab == 302 + 1, "vocab %d", t.vocab);
	check_cases(&t, "ranks");
	T_OK(mgpu_gpt2tok_decode(&t, &eot, 1, &back, &blen));
	T_CHECK(blen == 13 && memcmp(back, "<|endoftext|>", 13) == 0, "id 302: '%s'", back);
	free(back);
	/* no text encodes to the special token */
	T_OK(mgpu_gpt2tok_encode(&t, (const unsigned char *)"<|endoftext|>", 13, &ids, &n));
	T_CHECK(n > 1, "'<|endoftext|>' encoded to %zu ids", n);
	free(ids);
	mgpu_gpt2tok_free(&t);
	/* --tokenizer FILE: not mgpu-bpe's header, so tiktoken's */
	T_OK(mgpu_tokenizer_open(&tk, path));
	T_CHECK(tk.kind == MGPU_TOKENIZER_GPT2 && mgpu_tokenizer_vocab(&tk) == 303, "kind %d",
		tk.kind);
	mgpu_tokenizer_close(&tk);
}

static void test_ranks_errors(void)
{
	static const struct {
		const char *text, *msg;
	} bad[] = {
		{ "QQ== 0\nQg 1\n", "line 2: want a token's bytes in base64" },
		{ "QQ== 0\nQg== x\n", "line 2: want a token's bytes in base64" },
		{ "QQ== 0\nQg==\n", "line 2: want a token's bytes in base64" },
		{ "QQ== 0\nQ*== 1\n", "line 2: want a token's bytes in base64" },
		{ "QQ== 0\n 1\n", "line 2: want a token's bytes in base64" },
		{ "QQ== 0\nQg== 0\n", "line 2: rank 0 is taken already" },
		{ "QQ== 0\nQg== 7\n", "line 2: rank 7 is beyond the file's lines" },
		{ "QQ== 0\nQQ== 1\n", "line 2: two ranks for one token's bytes" },
		{ "QQ== 0\n\n\nQg== 2\n", "no token of rank 1" },
		{ "QQ== 0\nQg== 1\n", "no token for byte 0" },
	};
	struct mgpu_gpt2tok t;
	size_t i;

	for (i = 0; i < sizeof bad / sizeof *bad; i++)
		T_FAILS(mgpu_gpt2tok_parse_ranks(&t, bad[i].text, strlen(bad[i].text), "r.tiktoken"),
			MGPU_EFORMAT, bad[i].msg);
	T_FAILS(mgpu_gpt2tok_load_ranks(&t, "/nonexistent.tiktoken"), MGPU_EIO,
		"/nonexistent.tiktoken");
}

int main(void)
{
	if (t_tmpdir_make("gpt2tok") < 0)
		return 1;
	T_RUN(test_cases);
	T_RUN(test_errors);
	T_RUN(test_ranks);
	T_RUN(test_ranks_errors);
	t_tmpdir_remove();
	return T_DONE();
}
