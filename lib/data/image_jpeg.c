/*
 * image_jpeg.c - JPEG through libjpeg-turbo's libjpeg API (see image.h).
 *
 * The libjpeg API rather than TurboJPEG: its error manager lets every
 * message be caught (error_exit jumps back here, output_message prints
 * nothing) and every warning be made an error: libjpeg only warns about a
 * truncated file and fills the missing rows with gray. It is also what
 * Debian's libjpeg-dev installs.
 */
#include <stdio.h> /* FILE, which jpeglib.h needs first */

#include <jpeglib.h> /* jpeg_* */
#include <setjmp.h>  /* setjmp, longjmp */
#include <stdlib.h>  /* malloc, free */
#include <string.h>  /* memset */

#include "core/err.h"     /* mgpu_err */
#include "data/image.h"
#include "data/samples.h" /* MGPU_DTYPE_U8 */

struct jerr {
	struct jpeg_error_mgr mgr;
	jmp_buf jump;
	char msg[JMSG_LENGTH_MAX];
};

static void on_exit_(j_common_ptr c)
{
	struct jerr *e = (struct jerr *)(void *)c->err;

	e->mgr.format_message(c, e->msg);
	longjmp(e->jump, 1);
}

/* level -1 is a warning (corrupt data): an error here; traces are dropped */
static void on_message(j_common_ptr c, int level)
{
	if (level < 0)
		on_exit_(c);
}

static void on_output(j_common_ptr c)
{
	(void)c;
}

int mgpu_image_decode_jpeg(const void *buf, size_t len, struct mgpu_image *out)
{
	struct jpeg_decompress_struct d;
	struct jerr e;
	unsigned char *volatile pix = NULL;
	JSAMPROW row;
	size_t stride;
	int rc = 0;

	memset(out, 0, sizeof *out);
	memset(&e, 0, sizeof e);
	d.err = jpeg_std_error(&e.mgr);
	e.mgr.error_exit = on_exit_;
	e.mgr.emit_message = on_message;
	e.mgr.output_message = on_output;
	if (setjmp(e.jump)) {
		rc = mgpu_err(MGPU_EFORMAT, "corrupt JPEG: %s", e.msg[0] ? e.msg : "?");
		goto out;
	}
	jpeg_create_decompress(&d);
	if (len > (size_t)(unsigned long)-1) /* jpeg_mem_src takes unsigned long */
		len = (size_t)(unsigned long)-1;
	jpeg_mem_src(&d, buf, (unsigned long)len);
	jpeg_read_header(&d, TRUE);
	if (d.num_components == 1)
		d.out_color_space = JCS_GRAYSCALE;
	else if (d.jpeg_color_space == JCS_YCbCr || d.jpeg_color_space == JCS_RGB)
		d.out_color_space = JCS_RGB;
	else {
		rc = mgpu_err(MGPU_EFORMAT, "JPEG of %d components in a color space other "
			      "than gray, YCbCr or RGB (CMYK?)", d.num_components);
		goto out;
	}
	if ((size_t)d.image_width * d.image_height > MGPU_IMAGE_MAX_PIXELS) {
		rc = mgpu_err(MGPU_ERANGE, "JPEG of %ux%u: more than %zu pixels",
			      (unsigned)d.image_width, (unsigned)d.image_height,
			      MGPU_IMAGE_MAX_PIXELS);
		goto out;
	}
	jpeg_start_decompress(&d);
	out->channels = (uint32_t)d.output_components;
	out->height = d.output_height;
	out->width = d.output_width;
	out->dtype = MGPU_DTYPE_U8;
	stride = (size_t)d.output_width * (size_t)d.output_components;
	pix = malloc(stride * d.output_height);
	if (!pix) {
		rc = mgpu_err(MGPU_ENOMEM, "out of memory for a %ux%u JPEG", out->width,
			      out->height);
		goto out;
	}
	while (d.output_scanline < d.output_height) {
		row = pix + (size_t)d.output_scanline * stride;
		jpeg_read_scanlines(&d, &row, 1);
	}
	jpeg_finish_decompress(&d);
	rc = mgpu_image_planar(out, pix);
out:
	jpeg_destroy_decompress(&d);
	free(pix);
	if (rc < 0)
		memset(out, 0, sizeof *out);
	return rc;
}
