/*
 * fuzz_tiktoken.c - libFuzzer harness for the tiktoken ranks reader:
 * mgpu_gpt2tok_parse_ranks() on arbitrary text must return 0 or an error;
 * a tokenizer that loads must pass gpt2_check.h, and its last id must
 * decode to "<|endoftext|>".
 */
#include <stddef.h> /* size_t */
#include <stdint.h> /* uint8_t */
#include <stdlib.h> /* abort, free */
#include <string.h> /* memcmp */

#include "gpt2_check.h" /* gpt2_check */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mgpu_gpt2tok t;
	unsigned char *back;
	size_t blen;
	int32_t eot;

	if (mgpu_gpt2tok_parse_ranks(&t, (const char *)data, size, "fuzz") != 0)
		return 0;
	gpt2_check(&t, data, size);
	eot = t.vocab - 1;
	if (mgpu_gpt2tok_decode(&t, &eot, 1, &back, &blen) < 0 || blen != 13 ||
	    memcmp(back, "<|endoftext|>", 13) != 0)
		abort();
	free(back);
	mgpu_gpt2tok_free(&t);
	return 0;
}
