/*
 * fuzz_bpe.c - libFuzzer harness for the BPE tokenizer: mgpu_bpe_parse()
 * on arbitrary text must return 0 or an error; a tokenizer that parses, or
 * one learned from the input itself (merges from its first byte), must
 * encode the input and decode it back to the same bytes.
 */
#include <stddef.h> /* size_t */
#include <stdint.h> /* uint8_t */
#include <stdlib.h> /* abort, malloc, free */
#include <string.h> /* memcpy, memcmp */

#include "data/bpe.h" /* mgpu_bpe_* */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void roundtrip(const struct mgpu_bpe *b, const uint8_t *data, size_t size)
{
	int32_t *ids;
	unsigned char *back;
	size_t n, len;

	if (mgpu_bpe_encode(b, data, size, &ids, &n) < 0)
		abort();
	if (mgpu_bpe_decode(b, ids, n, &back, &len) < 0 || len != size ||
	    (size && memcmp(back, data, size) != 0) || n > size)
		abort();
	free(ids);
	free(back);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mgpu_bpe b;
	char *text = malloc(size + 1);

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	if (mgpu_bpe_parse(&b, text, "fuzz") == 0) {
		roundtrip(&b, data, size);
		mgpu_bpe_free(&b);
	}
	free(text);
	if (size && mgpu_bpe_learn(&b, data + 1, size - 1, data[0]) == 0) {
		roundtrip(&b, data + 1, size - 1);
		mgpu_bpe_free(&b);
	}
	return 0;
}
