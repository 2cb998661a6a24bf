/*
 * fuzz_idx.c - libFuzzer harness for the IDX parser: mgpu_idx_parse() on
 * arbitrary bytes must return 0 or an error, never read out of bounds; on
 * success every element must be readable and the sizes consistent.
 */
#include <stddef.h> /* size_t */
#include <stdint.h> /* uint8_t */
#include <stdlib.h> /* abort */

#include "data/idx.h" /* mgpu_idx_parse, mgpu_idx_value */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mgpu_idx idx;
	volatile double sink = 0;
	size_t i;

	if (mgpu_idx_parse(data, size, "fuzz", &idx) < 0)
		return 0;
	if (4 + 4 * (size_t)idx.ndim + idx.count * idx.elem_nbytes != size)
		abort();
	for (i = 0; i < idx.count; i++)
		sink += mgpu_idx_value(&idx, i);
	(void)sink;
	return 0;
}
