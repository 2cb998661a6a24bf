/*
 * fuzz_text.c - libFuzzer harness for the text reader: mgpu_text_cut() on
 * arbitrary bytes, with the context taken from the first byte (1..64) and
 * appended twice into one set, must return 0 or an error, never read out of
 * bounds; on success sample k must be the bytes [k*T, k*T+T] of the text.
 */
#include <stddef.h> /* size_t */
#include <stdint.h> /* uint8_t */
#include <stdlib.h> /* abort */
#include <string.h> /* memcmp */

#include "data/text.h" /* mgpu_text_cut, mgpu_text_nsamples */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mgpu_samples s = { 0 };
	size_t T, n, k;

	if (size == 0)
		return 0;
	T = (size_t)(data[0] % 64) + 1;
	data++;
	size--;
	n = mgpu_text_nsamples(size, T);
	if (mgpu_text_cut(data, size, T, "fuzz", &s) < 0) {
		if (n != 0 || s.n != 0)
			abort(); /* refused text that has a sample, or left some behind */
		return 0;
	}
	if (s.n != n || n == 0 || s.d != T + 1 || mgpu_text_cut(data, size, T, "fuzz", &s) < 0 ||
	    s.n != 2 * n)
		abort();
	for (k = 0; k < s.n; k++)
		if (memcmp(s.x + k * (T + 1), data + (k % n) * T, T + 1) != 0 || s.y[k] != 0)
			abort();
	mgpu_samples_free(&s);
	return 0;
}
