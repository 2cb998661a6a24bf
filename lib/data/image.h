/*
 * image.h - PNG and JPEG files decoded into samples (libpng, libjpeg-turbo).
 *
 * A decoded image is channel-first, C x H x W as PyTorch holds it: C is 1
 * (gray) or 3 (RGB). 8-bit images (and PNG's 1/2/4-bit gray and palettes,
 * expanded) are uint8; a 16-bit PNG is float32 v / 65535 in [0, 1], which
 * keeps all 16 bits (uint8 would drop the low byte the camera paid for).
 * An alpha channel is dropped, as PIL's convert("RGB") does; a palette
 * becomes RGB. JPEG's CMYK is refused.
 *
 * The content decides the decoder (PNG or JPEG signature), not the name.
 * Every warning of either library is an error: a truncated JPEG would
 * otherwise decode "fine" with its missing rows gray. Nothing any library
 * says reaches stderr; its message ends up in the one-line error, which
 * does not name the input (callers prefix it).
 */
#ifndef MGPU_DATA_IMAGE_H
#define MGPU_DATA_IMAGE_H

#include <stddef.h> /* size_t */
#include <stdint.h> /* uint32_t */

/* The most pixels (H x W) one image may claim: 64 Mi (8192 x 8192). */
#define MGPU_IMAGE_MAX_PIXELS ((size_t)1 << 26)

struct mgpu_image {
	uint32_t channels, height, width;
	int dtype;  /* MGPU_DTYPE_U8, or MGPU_DTYPE_F32 for a 16-bit PNG */
	void *data; /* channels * height * width elements, channel-first; malloc'ed */
};

/* Is name an image file or member by its extension (.png, .jpg, .jpeg,
 * any case)? */
int mgpu_image_name(const char *name);
/* PNG or JPEG by the signature of buf[0..len). */
int mgpu_image_decode(const void *buf, size_t len, struct mgpu_image *out);
int mgpu_image_decode_png(const void *buf, size_t len, struct mgpu_image *out);
int mgpu_image_decode_jpeg(const void *buf, size_t len, struct mgpu_image *out);
/* Resize to h x w in place: bilinear, pixel centres aligned as
 * torch.nn.functional.interpolate(align_corners=False, antialias=False);
 * uint8 rounds to nearest. Same size: nothing changes. */
int mgpu_image_resize(struct mgpu_image *im, uint32_t h, uint32_t w);
/* For the decoders: out (channels, height, width, dtype set) takes the
 * channel-first copy of hwc, height x width x channels interleaved. */
int mgpu_image_planar(struct mgpu_image *out, const void *hwc);
/* Safe on a zeroed struct; leaves it zeroed. */
void mgpu_image_free(struct mgpu_image *im);

#endif
