/*
 * test_bpe.c - the byte-level BPE (data/bpe.h): merges learned by count
 * with the documented tie rule and word split, deterministic, stopping
 * when no pair repeats; encode then decode gives back any bytes (text the
 * merges never saw, every byte value, UTF-8); encoding merges by rank, not
 * greedily by length; the file read back encodes the same; every bad file
 * an error naming it and the line.
 */
#include <stdio.h>  /* fopen, fputs */
#include <stdlib.h> /* free */
#include <string.h> /* memcmp, strlen */

#include "core/err.h"  /* MGPU_E* */
#include "data/bpe.h"  /* mgpu_bpe_* */
#include "../t.h"      /* T_RUN, T_CHECK, T_OK, T_FAILS */
#include "../tmpdir.h" /* t_tmpdir_make, tpath */

static const char corpus[] =
	"the cat sat on the mat. the cat ate the rat.\n"
	"  the hat is on the cat; 1234 cats, 56 hats.\n\ttabs\tand UTF-8: caf\xc3\xa9 caf\xc3\xa9\n";

static int learn(struct mgpu_bpe *b, const char *text, int n)
{
	return mgpu_bpe_learn(b, (const unsigned char *)text, strlen(text), n);
}

/* encode(text) then decode: the same bytes. */
static void roundtrip(const struct mgpu_bpe *b, const unsigned char *t, size_t len,
		      size_t *ntok)
{
	int32_t *ids = NULL;
	unsigned char *back = NULL;
	size_t n = 0, blen = 0;

	T_OK(mgpu_bpe_encode(b, t, len, &ids, &n));
	T_OK(mgpu_bpe_decode(b, ids, n, &back, &blen));
	T_CHECK(blen == len && (len == 0 || memcmp(back, t, len) == 0), "round trip of %zu "
		"bytes gave %zu", len, blen);
	if (ntok)
		*ntok = n;
	free(ids);
	free(back);
}

static void test_learn(void)
{
	struct mgpu_bpe a, b;
	size_t n;

	/* "aa" occurs 3 x 2 (twice per word, overlapping), "ab" 3 x 1 */
	T_OK(learn(&a, "aaab aaab aaab", 3));
	T_CHECK(a.nmerges >= 1 && a.pair[0][0] == 'a' && a.pair[0][1] == 'a',
		"first merge %d %d", a.pair[0][0], a.pair[0][1]);
	mgpu_bpe_free(&a);
	/* ties: "ab" and "cd" both twice; the smaller pair first */
	T_OK(learn(&a, "cd ab cd ab", 1));
	T_CHECK(a.nmerges == 1 && a.pair[0][0] == ' ' && a.pair[0][1] == 'a',
		"tie: %d %d", a.pair[0][0], a.pair[0][1]);
	mgpu_bpe_free(&a);
	/* nothing occurs twice: no merge at all, whatever was asked */
	T_OK(learn(&a, "abcdefg", 10));
	T_CHECK(a.nmerges == 0 && mgpu_bpe_vocab(&a) == 256, "merges %d", a.nmerges);
	mgpu_bpe_free(&a);
	/* no merge crosses a word: " cat" and "." never join */
	T_OK(learn(&a, corpus, 60));
	T_OK(learn(&b, corpus, 60));
	T_CHECK(a.nmerges == b.nmerges && a.nmerges > 10 &&
		memcmp(a.pair, b.pair, (size_t)a.nmerges * sizeof *a.pair) == 0,
		"two runs learned different merges");
	for (n = 0; n < (size_t)a.nmerges; n++) {
		unsigned char *t;
		size_t len;
		int32_t tok = 256 + (int32_t)n;
		T_OK(mgpu_bpe_decode(&a, &tok, 1, &t, &len));
		T_CHECK(!(len > 1 && t[len - 1] == ' '), "merge %zu ends in a space: '%s'", n, t);
		T_CHECK(!strchr((char *)t, '.') || len == 1 || strspn((char *)t, ".") == len,
			"merge %zu joins a period to a word: '%s'", n, t);
		free(t);
	}
	mgpu_bpe_free(&a);
	mgpu_bpe_free(&b);
	T_FAILS(learn(&a, "x", MGPU_BPE_MAX_MERGES + 1), MGPU_EINVAL, "merges out of range");
}

static void test_roundtrip(void)
{
	static const char unseen[] = "dogs and frogs: 7890 \xe2\x82\xac!\r\n  x";
	unsigned char all[512];
	struct mgpu_bpe b;
	size_t i, n, nb;

	T_OK(learn(&b, corpus, 80));
	for (i = 0; i < sizeof all; i++)
		all[i] = (unsigned char)(i * 7);
	roundtrip(&b, all, sizeof all, NULL);
	roundtrip(&b, (const unsigned char *)unseen, strlen(unseen), NULL);
	roundtrip(&b, (const unsigned char *)"", 0, &n);
	T_CHECK(n == 0, "empty text: %zu tokens", n);
	roundtrip(&b, (const unsigned char *)corpus, strlen(corpus), &n);
	nb = strlen(corpus);
	T_CHECK(n < nb * 2 / 3, "the corpus in %zu tokens for %zu bytes", n, nb);
	{
		int32_t bad = mgpu_bpe_vocab(&b);
		unsigned char *t;
		size_t len;
		T_FAILS(mgpu_bpe_decode(&b, &bad, 1, &t, &len), MGPU_ERANGE,
			"is not below its vocab");
	}
	mgpu_bpe_free(&b);
}

/* Merges apply by rank: with "ab" before "bc", "abc" is [ab][c] even
 * though a later merge makes "bcd" longer. */
static void test_rank_order(void)
{
	struct mgpu_bpe b;
	int32_t *ids;
	size_t n;

	T_OK(learn(&b, "ab ab ab ab bc bc bc", 2));
	T_CHECK(b.nmerges == 2, "merges %d", b.nmerges);
	T_OK(mgpu_bpe_encode(&b, (const unsigned char *)"abc", 3, &ids, &n));
	T_CHECK(n == 2 && ids[0] == 256 + (b.pair[0][0] == 'a' ? 0 : 1) && ids[1] == 'c',
		"abc -> %zu tokens: %d %d", n, n ? ids[0] : -1, n > 1 ? ids[1] : -1);
	free(ids);
	mgpu_bpe_free(&b);
}

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	T_CHECK(f != NULL, "%s", path);
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

static void test_file(void)
{
	struct mgpu_bpe a, b;
	int32_t *x, *y;
	size_t nx, ny;

	T_OK(learn(&a, corpus, 40));
	T_OK(mgpu_bpe_save(&a, tpath("bpe.txt")));
	T_OK(mgpu_bpe_load(&b, tpath("bpe.txt")));
	T_CHECK(b.nmerges == a.nmerges, "merges %d, saved %d", b.nmerges, a.nmerges);
	T_OK(mgpu_bpe_encode(&a, (const unsigned char *)corpus, strlen(corpus), &x, &nx));
	T_OK(mgpu_bpe_encode(&b, (const unsigned char *)corpus, strlen(corpus), &y, &ny));
	T_CHECK(nx == ny && memcmp(x, y, nx * sizeof *x) == 0, "the file encodes otherwise");
	free(x);
	free(y);
	mgpu_bpe_free(&a);
	mgpu_bpe_free(&b);
	write_text(tpath("v.txt"), "mgpu-bpe 2 0\n");
	T_FAILS(mgpu_bpe_load(&b, tpath("v.txt")), MGPU_EFORMAT, "v.txt': not an mgpu BPE file");
	write_text(tpath("f.txt"), "mgpu-bpe 1 2\n97 98\n257 256\n");
	T_FAILS(mgpu_bpe_load(&b, tpath("f.txt")), MGPU_EFORMAT,
		"f.txt': line 3: want two token ids below 257 (merge 1)");
	write_text(tpath("s.txt"), "mgpu-bpe 1 2\n97 98\n");
	T_FAILS(mgpu_bpe_load(&b, tpath("s.txt")), MGPU_EFORMAT, "s.txt': line 3");
	write_text(tpath("l.txt"), "mgpu-bpe 1 1\n97 98\n97 97\n");
	T_FAILS(mgpu_bpe_load(&b, tpath("l.txt")), MGPU_EFORMAT,
		"l.txt': line 3: more than the 1 merges");
	write_text(tpath("n.txt"), "mgpu-bpe 1 x\n");
	T_FAILS(mgpu_bpe_load(&b, tpath("n.txt")), MGPU_EFORMAT, "n.txt': line 1: bad merge count");
	T_FAILS(mgpu_bpe_load(&b, tpath("none.txt")), MGPU_EIO, "none.txt");
}

int main(void)
{
	if (t_tmpdir_make("bpe") < 0)
		return 1;
	T_RUN(test_learn);
	T_RUN(test_roundtrip);
	T_RUN(test_rank_order);
	T_RUN(test_file);
	t_tmpdir_remove();
	return T_DONE();
}
