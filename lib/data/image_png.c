/*
 * image_png.c - PNG through libpng (see image.h).
 *
 * libpng reports errors by longjmp: our error function keeps the message
 * and jumps back here, where everything allocated is freed; warnings are
 * dropped (ancillary-chunk complaints such as a known-wrong sRGB profile
 * say nothing about the pixels, and critical ones are errors already).
 */
#include "data/image.h"

#include <png.h>    /* png_* */
#include <setjmp.h> /* setjmp */
#include <stdio.h>  /* snprintf */
#include <stdlib.h> /* malloc, free */
#include <string.h> /* memcpy, memset */

#include "core/err.h"     /* mgpu_err */
#include "data/samples.h" /* MGPU_DTYPE_* */

struct png_src {
	const unsigned char *buf;
	size_t len, pos;
	char msg[200];
};

static void on_error(png_structp p, png_const_charp msg)
{
	struct png_src *s = png_get_error_ptr(p);

	snprintf(s->msg, sizeof s->msg, "%s", msg);
	png_longjmp(p, 1);
}

static void on_warning(png_structp p, png_const_charp msg)
{
	(void)p;
	(void)msg;
}

static void on_read(png_structp p, png_bytep data, size_t n)
{
	struct png_src *s = png_get_io_ptr(p);

	if (s->len - s->pos < n)
		png_error(p, "truncated");
	memcpy(data, s->buf + s->pos, n);
	s->pos += n;
}

/* 16-bit big-endian samples to float32 in [0, 1], in place from the end. */
static void widen16(unsigned char *row, size_t n)
{
	float *f = (float *)(void *)row;
	size_t i = n;

	while (i-- > 0)
		f[i] = (float)((row[2 * i] << 8) | row[2 * i + 1]) / 65535.0f;
}

int mgpu_image_decode_png(const void *buf, size_t len, struct mgpu_image *out)
{
	struct png_src s = { .buf = buf, .len = len };
	png_structp p;
	png_infop info = NULL;
	unsigned char *volatile pix = NULL;
	png_bytep *volatile rows = NULL;
	png_uint_32 w, h, y;
	int depth, color, rc = 0;
	size_t stride, es;

	memset(out, 0, sizeof *out);
	p = png_create_read_struct(PNG_LIBPNG_VER_STRING, &s, on_error, on_warning);
	if (p)
		info = png_create_info_struct(p);
	if (!p || !info) {
		png_destroy_read_struct(p ? &p : NULL, NULL, NULL);
		return mgpu_err(MGPU_ENOMEM, "out of memory for a PNG decoder");
	}
	if (setjmp(png_jmpbuf(p))) {
		rc = mgpu_err(MGPU_EFORMAT, "corrupt PNG: %s", s.msg[0] ? s.msg : "?");
		goto out;
	}
	png_set_read_fn(p, &s, on_read);
	png_set_user_limits(p, 1u << 16, 1u << 16);
	png_read_info(p, info);
	png_get_IHDR(p, info, &w, &h, &depth, &color, NULL, NULL, NULL);
	if ((size_t)w * h > MGPU_IMAGE_MAX_PIXELS) {
		rc = mgpu_err(MGPU_ERANGE, "PNG of %ux%u: more than %zu pixels", (unsigned)w,
			      (unsigned)h, MGPU_IMAGE_MAX_PIXELS);
		goto out;
	}
	if (color == PNG_COLOR_TYPE_PALETTE)
		png_set_palette_to_rgb(p);
	if (color == PNG_COLOR_TYPE_GRAY && depth < 8)
		png_set_expand_gray_1_2_4_to_8(p);
	png_set_strip_alpha(p);
	png_set_interlace_handling(p);
	png_read_update_info(p, info);
	out->channels = png_get_channels(p, info);
	out->height = h;
	out->width = w;
	out->dtype = png_get_bit_depth(p, info) == 16 ? MGPU_DTYPE_F32 : MGPU_DTYPE_U8;
	es = out->dtype == MGPU_DTYPE_F32 ? 4 : 1;
	if (out->channels != 1 && out->channels != 3) {
		rc = mgpu_err(MGPU_EFORMAT, "PNG with %u channels", out->channels);
		goto out;
	}
	/* room for float32 rows: 16-bit samples widen in place */
	stride = (size_t)w * out->channels * es;
	pix = malloc(stride * h);
	rows = malloc(h * sizeof *rows);
	if (!pix || !rows) {
		rc = mgpu_err(MGPU_ENOMEM, "out of memory for a %ux%u PNG", (unsigned)w,
			      (unsigned)h);
		goto out;
	}
	for (y = 0; y < h; y++)
		rows[y] = pix + y * stride;
	png_read_image(p, rows);
	png_read_end(p, NULL);
	if (es == 4)
		for (y = 0; y < h; y++)
			widen16(rows[y], (size_t)w * out->channels);
	rc = mgpu_image_planar(out, pix);
out:
	png_destroy_read_struct(&p, &info, NULL);
	free(pix);
	free(rows);
	if (rc < 0)
		memset(out, 0, sizeof *out);
	return rc;
}
