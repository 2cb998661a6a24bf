/*
 * image_decode.c - which decoder an image goes to (see image.h): by name
 * for archive members and folders, by signature for the bytes themselves.
 */
#include "data/image.h"

#include <string.h>  /* memcmp, memset, strlen */
#include <strings.h> /* strcasecmp */

#include "core/err.h" /* mgpu_err */

int mgpu_image_name(const char *name)
{
	static const char *const ext[] = { ".png", ".jpg", ".jpeg" };
	size_t n = strlen(name), k, i;

	for (i = 0; i < sizeof ext / sizeof *ext; i++) {
		k = strlen(ext[i]);
		if (n > k && strcasecmp(name + n - k, ext[i]) == 0)
			return 1;
	}
	return 0;
}

int mgpu_image_decode(const void *buf, size_t len, struct mgpu_image *out)
{
	static const unsigned char png[8] = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n' };
	const unsigned char *b = buf;

	memset(out, 0, sizeof *out);
	if (len >= 8 && memcmp(b, png, 8) == 0)
		return mgpu_image_decode_png(buf, len, out);
	if (len >= 3 && b[0] == 0xff && b[1] == 0xd8 && b[2] == 0xff)
		return mgpu_image_decode_jpeg(buf, len, out);
	return mgpu_err(MGPU_EFORMAT, "neither a PNG nor a JPEG image (no signature)");
}
