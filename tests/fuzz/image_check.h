/*
 * image_check.h - what the image decoder harnesses ask of a decoder's
 * wrapper (data/image.h): any bytes give an image or an error, never a
 * crash, a leak (the library's longjmp out of a failed decode must free
 * everything) or a read past the input; a decoded image's every element is
 * readable, and so is a resize of it.
 */
#ifndef MGPU_FUZZ_IMAGE_CHECK_H
#define MGPU_FUZZ_IMAGE_CHECK_H

#include <stddef.h> /* size_t */
#include <stdint.h> /* uint8_t */
#include <stdlib.h> /* abort */

#include "data/image.h"   /* struct mgpu_image, mgpu_image_resize */
#include "data/samples.h" /* MGPU_DTYPE_U8 */

static int image_check(const uint8_t *data, size_t size,
		       int (*decode)(const void *, size_t, struct mgpu_image *))
{
	struct mgpu_image im;
	volatile double sink = 0;
	size_t n, i;

	if (decode(data, size, &im) != 0) {
		if (im.data)
			abort();
		return 0;
	}
	if ((im.channels != 1 && im.channels != 3) || !im.height || !im.width)
		abort();
	n = (size_t)im.channels * im.height * im.width;
	for (i = 0; i < n; i++)
		sink += im.dtype == MGPU_DTYPE_U8 ? ((const uint8_t *)im.data)[i] :
			((const float *)im.data)[i];
	if (mgpu_image_resize(&im, 3, 5) == 0)
		for (i = 0; i < (size_t)im.channels * 15; i++)
			sink += im.dtype == MGPU_DTYPE_U8 ? ((const uint8_t *)im.data)[i] :
				((const float *)im.data)[i];
	mgpu_image_free(&im);
	(void)sink;
	return 0;
}

#endif
