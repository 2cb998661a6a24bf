/*
 * gpt2_check.h - what the GPT-2 tokenizer harnesses ask of a tokenizer
 * that loaded: a few texts (the fuzz input among them) encode to ids below
 * its vocab, or fail with an error (text that is not UTF-8, merges that
 * make a token encoder.json lacks), and ids that encode decode back to the
 * text. Any crash, leak or sanitizer report is the finding.
 */
#ifndef MGPU_FUZZ_GPT2_CHECK_H
#define MGPU_FUZZ_GPT2_CHECK_H

#include <stdlib.h> /* abort, free */
#include <string.h> /* memcmp, strlen */

#include "data/gpt2tok.h" /* mgpu_gpt2tok_* */

static void gpt2_roundtrip(const struct mgpu_gpt2tok *t, const unsigned char *text, size_t len)
{
	unsigned char *back;
	int32_t *ids;
	size_t n, blen, i;

	if (mgpu_gpt2tok_encode(t, text, len, &ids, &n) < 0)
		return;
	if (n > len)
		abort();
	for (i = 0; i < n; i++)
		if (ids[i] < 0 || ids[i] >= t->vocab)
			abort();
	if (mgpu_gpt2tok_decode(t, ids, n, &back, &blen) < 0 || blen != len ||
	    (len && memcmp(back, text, len) != 0))
		abort();
	free(ids);
	free(back);
}

static void gpt2_check(const struct mgpu_gpt2tok *t, const unsigned char *data, size_t size)
{
	static const char *const texts[] = {
		"The quick brown fox jumps over the lazy dog.",
		"they'll meet again at 10:45; it's 'em   \n\n lines\t\n",
		"Th\xc3\xa9 caf\xc3\xa9 \xe2\x80\x94 \xe2\x82\xac" "12.50! \xe6\xbc\xa2\xe5\xad\x97",
	};
	size_t i;

	for (i = 0; i < sizeof texts / sizeof *texts; i++)
		gpt2_roundtrip(t, (const unsigned char *)texts[i], strlen(texts[i]));
	gpt2_roundtrip(t, data, size);
}

#endif
