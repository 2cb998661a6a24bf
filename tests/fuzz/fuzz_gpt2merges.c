/*
 * fuzz_gpt2merges.c - libFuzzer harness for GPT-2's vocab.bpe reader:
 * mgpu_gpt2tok_parse() with the fixture's encoder.json
 * (tests/data/gpt2tok, read once; run from the source tree) and the input
 * as vocab.bpe must return 0 or an error; a tokenizer that loads must pass
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
	static unsigned char *enc;
	static size_t enc_len;
	struct mgpu_gpt2tok t;

	if (!enc && mgpu_read_file("tests/data/gpt2tok/encoder.json", &enc, &enc_len) < 0)
		abort(); /* not run from the source tree */
	if (mgpu_gpt2tok_parse(&t, (const char *)enc, enc_len, "encoder.json", (const char *)data,
			       size, "fuzz") == 0) {
		gpt2_check(&t, data, size);
		mgpu_gpt2tok_free(&t);
	}
	return 0;
}
