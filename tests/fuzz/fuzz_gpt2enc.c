/*
 * fuzz_gpt2enc.c - libFuzzer harness for GPT-2's encoder.json reader:
 * mgpu_gpt2tok_parse() with the input as encoder.json and the fixture's
 * vocab.bpe (tests/data/gpt2tok, read once; run from the source tree)
 * must return 0 or an error; a tokenizer that loads must pass
 * gpt2_check.h.
 */
#include <stddef.h> /* size_t */
#include <stdint.h> /* uint8_t */
#include <stdlib.h> /* abort, free */

#include "core/io.h"     /* mgpu_read_file */
#include "gpt2_check.h"  /* gpt2_check */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static unsigned char *merges;
	static size_t merges_len;
	struct mgpu_gpt2tok t;

	if (!merges && mgpu_read_file("tests/data/gpt2tok/vocab.bpe", &merges, &merges_len) < 0)
		abort(); /* not run from the source tree */
	if (mgpu_gpt2tok_parse(&t, (const char *)data, size, "fuzz", (const char *)merges,
			       merges_len, "vocab.bpe") == 0) {
		gpt2_check(&t, data, size);
		mgpu_gpt2tok_free(&t);
	}
	return 0;
}
