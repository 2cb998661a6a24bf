/*
 * fuzz_jpeg.c - libFuzzer harness for the JPEG decoder's wrapper around
 * its library: image_check.h's checks over mgpu_image_decode_jpeg.
 */
#include "data/image.h"  /* mgpu_image_decode_jpeg */
#include "image_check.h" /* image_check */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return image_check(data, size, mgpu_image_decode_jpeg);
}
