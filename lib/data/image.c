/*
 * image.c - what the PNG and JPEG decoders share (see image.h): the
 * channel-first layout, bilinear resizing. Telling the two apart is
 * image_decode.c's, so that the decoders and this file do not need each
 * other.
 */
#include "data/image.h"

#include <math.h>    /* floorf, lrintf */
#include <stdlib.h>  /* malloc, free */
#include <string.h>  /* memset */

#include "core/err.h"     /* mgpu_err */
#include "data/samples.h" /* MGPU_DTYPE_*, mgpu_dtype_nbytes */

int mgpu_image_planar(struct mgpu_image *out, const void *hwc)
{
	size_t c = out->channels, hw = (size_t)out->height * out->width, i, k;
	size_t es = mgpu_dtype_nbytes(out->dtype);
	const unsigned char *s = hwc;
	unsigned char *d = malloc(c * hw * es);

	if (!d)
		return mgpu_err(MGPU_ENOMEM, "out of memory for a %ux%u image", out->width,
				out->height);
	for (k = 0; k < c; k++)
		for (i = 0; i < hw; i++)
			memcpy(d + (k * hw + i) * es, s + (i * c + k) * es, es);
	out->data = d;
	return 0;
}

/* Source coordinate of destination index i: half-pixel centres. */
static void tap(uint32_t i, uint32_t dst, uint32_t src, uint32_t *i0, uint32_t *i1, float *t)
{
	float x = ((float)i + 0.5f) * (float)src / (float)dst - 0.5f;
	float f;

	if (x < 0)
		x = 0;
	f = floorf(x);
	*i0 = (uint32_t)f;
	if (*i0 >= src - 1) {
		*i0 = *i1 = src - 1;
		*t = 0;
		return;
	}
	*i1 = *i0 + 1;
	*t = x - f;
}

static float at(const struct mgpu_image *im, size_t k, uint32_t y, uint32_t x)
{
	size_t i = (k * im->height + y) * im->width + x;

	return im->dtype == MGPU_DTYPE_U8 ? (float)((const unsigned char *)im->data)[i] :
		((const float *)im->data)[i];
}

int mgpu_image_resize(struct mgpu_image *im, uint32_t h, uint32_t w)
{
	size_t es = mgpu_dtype_nbytes(im->dtype), k;
	uint32_t y, x, y0, y1, x0, x1;
	float ty, tx, v;
	unsigned char *d;
	size_t i = 0;

	if (im->height == h && im->width == w)
		return 0;
	if (h == 0 || w == 0 || (size_t)h * w > MGPU_IMAGE_MAX_PIXELS)
		return mgpu_err(MGPU_ERANGE, "resize to %ux%u: not 1 to %zu pixels", h, w,
				MGPU_IMAGE_MAX_PIXELS);
	d = malloc(im->channels * (size_t)h * w * es);
	if (!d)
		return mgpu_err(MGPU_ENOMEM, "out of memory resizing to %ux%u", h, w);
	for (k = 0; k < im->channels; k++)
		for (y = 0; y < h; y++) {
			tap(y, h, im->height, &y0, &y1, &ty);
			for (x = 0; x < w; x++, i++) {
				tap(x, w, im->width, &x0, &x1, &tx);
				v = (1 - ty) * ((1 - tx) * at(im, k, y0, x0) + tx * at(im, k, y0, x1)) +
				    ty * ((1 - tx) * at(im, k, y1, x0) + tx * at(im, k, y1, x1));
				if (im->dtype == MGPU_DTYPE_U8)
					d[i] = (unsigned char)lrintf(v < 0 ? 0 : v > 255 ? 255 : v);
				else
					((float *)(void *)d)[i] = v;
			}
		}
	free(im->data);
	im->data = d;
	im->height = h;
	im->width = w;
	return 0;
}

void mgpu_image_free(struct mgpu_image *im)
{
	free(im->data);
	memset(im, 0, sizeof *im);
}
