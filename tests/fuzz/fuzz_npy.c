/*
 * fuzz_npy.c - libFuzzer harness for the .npy and netpbm parsers: any
 * bytes give 0 or an error, never an out-of-bounds read; on success every
 * element is readable and the sizes add up.
 */
#include <stddef.h> /* size_t */
#include <stdint.h> /* uint8_t */
#include <stdlib.h> /* abort */

#include "data/netpbm.h" /* mgpu_netpbm_parse */
#include "data/npy.h"    /* mgpu_npy_parse */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mgpu_npy a;
	struct mgpu_netpbm im;
	volatile double sink = 0;
	size_t i;

	if (mgpu_npy_parse(data, size, &a) == 0) {
		if (a.data < data || a.data + a.count * a.elem_nbytes != data + size)
			abort();
		for (i = 0; i < a.count; i++)
			sink += mgpu_npy_value(&a, i);
	}
	if (mgpu_netpbm_parse(data, size, &im) == 0) {
		size_t n = (size_t)im.width * im.height * (size_t)im.channels;
		if (im.data + n != data + size)
			abort();
		for (i = 0; i < n; i++)
			sink += im.data[i];
	}
	(void)sink;
	return 0;
}
