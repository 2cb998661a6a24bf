/*
 * fuzz_tokens.c - libFuzzer harness for the token-file reader:
 * mgpu_tokens_parse() and mgpu_tokens_cut() on arbitrary bytes (an llm.c
 * header or raw ids), with the context (1..32), the width (0, 2 or 4) and
 * a vocab taken from the first two bytes, must return 0 or an error and
 * never read out of bounds; on success every id of every sample lies
 * inside the parsed ids and below the vocab.
 */
#include <stddef.h> /* size_t */
#include <stdint.h> /* uint8_t */
#include <stdlib.h> /* abort */
#include <string.h> /* memcpy */

#include "data/tokens.h" /* mgpu_tokens_parse, mgpu_tokens_cut */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const int widths[] = { 0, 2, 4, 2 };
	struct mgpu_tokens_opts o = { 0 };
	struct mgpu_samples s = { 0 };
	const unsigned char *ids;
	size_t count, k, t;
	uint32_t v;
	uint16_t h;
	int nbytes;

	if (size < 2)
		return 0;
	o.context = (size_t)(data[0] % 32) + 1;
	o.token_bytes = widths[data[0] >> 6];
	o.vocab = data[1] ? (uint64_t)data[1] * 300 : 0;
	data += 2;
	size -= 2;
	if (mgpu_tokens_parse(data, size, "fuzz", &o, &ids, &count, &nbytes) < 0)
		return 0;
	if (ids < data || ids + count * (size_t)nbytes > data + size)
		abort();
	if (mgpu_tokens_cut(ids, count, nbytes, "fuzz", &o, &s) < 0) {
		if (s.n != 0)
			abort(); /* left samples behind */
		return 0;
	}
	for (k = 0; k < s.n; k++)
		for (t = 0; t <= o.context; t++) {
			if (nbytes == 2) {
				memcpy(&h, s.x + k * s.row_nbytes + 2 * t, 2);
				v = h;
			} else {
				memcpy(&v, s.x + k * s.row_nbytes + 4 * t, 4);
			}
			if (o.vocab && v >= o.vocab)
				abort();
		}
	mgpu_samples_free(&s);
	return 0;
}
