/*
 * test_image.c - unit tests of the PNG and JPEG decoders: images written
 * by libpng and libjpeg themselves (gray, RGB, RGBA, palette, 1-bit,
 * 16-bit, interlaced; baseline and progressive) decode to the pixels put
 * in, channel first; every truncation and a flipped byte is an error,
 * never a crash (that no library message reaches stderr is checked by
 * tests/cli/37b-shard-images.sh: one line per error); bilinear resizing
 * gives torch's values.
 */
#include <stdio.h> /* FILE, before jpeglib.h */

#include <jpeglib.h> /* jpeg_* (the encoder) */
#include <png.h>     /* png_* (the encoder) */
#include <stdlib.h>  /* malloc, free */
#include <string.h>  /* memcpy */

#include "core/err.h"     /* mgpu_errmsg */
#include "data/image.h"   /* mgpu_image_* */
#include "data/samples.h" /* MGPU_DTYPE_* */
#include "../t.h"         /* T_RUN, T_CHECK, T_OK, T_FAILS */

struct buf {
	unsigned char *p;
	size_t n, cap;
};

static void on_write(png_structp p, png_bytep d, size_t n)
{
	struct buf *b = png_get_io_ptr(p);

	if (b->n + n > b->cap) {
		b->cap = (b->n + n) * 2;
		b->p = realloc(b->p, b->cap);
	}
	memcpy(b->p + b->n, d, n);
	b->n += n;
}

static void on_flush(png_structp p)
{
	(void)p;
}

/* A w x h PNG of color type ct, depth bits, whose sample i (interleaved)
 * is px[i] (16-bit: big-endian pairs). */
static struct buf png(int w, int h, int ct, int depth, int interlace, const unsigned char *px)
{
	struct buf b = { 0 };
	png_structp p = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
	png_infop info = png_create_info_struct(p);
	png_color pal[2] = { { 10, 20, 30 }, { 200, 210, 220 } };
	int ch = ct == PNG_COLOR_TYPE_GRAY || ct == PNG_COLOR_TYPE_PALETTE ? 1 :
		ct == PNG_COLOR_TYPE_RGB ? 3 : ct == PNG_COLOR_TYPE_RGB_ALPHA ? 4 : 2;
	size_t stride = ((size_t)w * ch * depth + 7) / 8;
	int y, pass, np;

	png_set_write_fn(p, &b, on_write, on_flush);
	png_set_IHDR(p, info, w, h, depth, ct, interlace ? PNG_INTERLACE_ADAM7 :
		     PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
	if (ct == PNG_COLOR_TYPE_PALETTE)
		png_set_PLTE(p, info, pal, 2);
	png_write_info(p, info);
	np = interlace ? png_set_interlace_handling(p) : 1;
	for (pass = 0; pass < np; pass++)
		for (y = 0; y < h; y++)
			png_write_row(p, px + y * stride);
	png_write_end(p, NULL);
	png_destroy_write_struct(&p, &info);
	return b;
}

static struct buf jpeg(int w, int h, int ch, int progressive, unsigned char *px)
{
	struct jpeg_compress_struct c;
	struct jpeg_error_mgr e;
	unsigned char *out = NULL;
	unsigned long n = 0;
	struct buf b;
	JSAMPROW row;
	int y;

	c.err = jpeg_std_error(&e);
	jpeg_create_compress(&c);
	jpeg_mem_dest(&c, &out, &n);
	c.image_width = (JDIMENSION)w;
	c.image_height = (JDIMENSION)h;
	c.input_components = ch;
	c.in_color_space = ch == 1 ? JCS_GRAYSCALE : JCS_RGB;
	jpeg_set_defaults(&c);
	jpeg_set_quality(&c, 100, TRUE);
	if (progressive)
		jpeg_simple_progression(&c);
	jpeg_start_compress(&c, TRUE);
	for (y = 0; y < h; y++) {
		row = (JSAMPROW)(px + (size_t)y * w * ch);
		jpeg_write_scanlines(&c, &row, 1);
	}
	jpeg_finish_compress(&c);
	jpeg_destroy_compress(&c);
	b.p = out;
	b.n = b.cap = n;
	return b;
}

static const unsigned char *u8(const struct mgpu_image *im)
{
	return im->data;
}

static void test_png_kinds(void)
{
	/* 3 x 2 RGB: pixel (y, x) is (10y + x, 100 + x, 200 - y) */
	unsigned char rgb[18], rgba[24], gray[6], pal[2] = { 0x40, 0x80 }, bits[2] = { 0xa0, 0x40 };
	unsigned char g16[12];
	struct mgpu_image im;
	struct buf b;
	int y, x, i;

	for (y = 0; y < 2; y++)
		for (x = 0; x < 3; x++) {
			i = y * 3 + x;
			rgb[3 * i] = rgba[4 * i] = (unsigned char)(10 * y + x);
			rgb[3 * i + 1] = rgba[4 * i + 1] = (unsigned char)(100 + x);
			rgb[3 * i + 2] = rgba[4 * i + 2] = (unsigned char)(200 - y);
			rgba[4 * i + 3] = 7;
			gray[i] = (unsigned char)(50 * i);
			g16[2 * i] = (unsigned char)(i * 40);
			g16[2 * i + 1] = (unsigned char)i;
		}
	for (i = 0; i < 2; i++) { /* RGB, and RGBA with alpha dropped; plain and interlaced */
		b = png(3, 2, i ? PNG_COLOR_TYPE_RGB_ALPHA : PNG_COLOR_TYPE_RGB, 8, i, i ? rgba : rgb);
		T_OK(mgpu_image_decode(b.p, b.n, &im));
		T_CHECK(im.channels == 3 && im.height == 2 && im.width == 3 &&
			im.dtype == MGPU_DTYPE_U8, "%ux%ux%u", im.channels, im.height, im.width);
		/* channel first: plane k holds channel k of every pixel */
		for (y = 0; y < 2 && im.data; y++)
			for (x = 0; x < 3; x++) {
				T_CHECK(u8(&im)[0 * 6 + y * 3 + x] == 10 * y + x, "R %d %d", y, x);
				T_CHECK(u8(&im)[1 * 6 + y * 3 + x] == 100 + x, "G %d %d", y, x);
				T_CHECK(u8(&im)[2 * 6 + y * 3 + x] == 200 - y, "B %d %d", y, x);
			}
		mgpu_image_free(&im);
		free(b.p);
	}
	b = png(3, 2, PNG_COLOR_TYPE_GRAY, 8, 0, gray);
	T_OK(mgpu_image_decode(b.p, b.n, &im));
	T_CHECK(im.channels == 1 && im.data && memcmp(im.data, gray, 6) == 0, "gray");
	mgpu_image_free(&im);
	free(b.p);
	/* palette indices 0,1,0 / 1,0,0 (1-bit) become RGB */
	b = png(3, 2, PNG_COLOR_TYPE_PALETTE, 1, 0, pal);
	T_OK(mgpu_image_decode(b.p, b.n, &im));
	T_CHECK(im.channels == 3 && im.data && u8(&im)[0] == 10 && u8(&im)[1] == 200 &&
		u8(&im)[3] == 200 && u8(&im)[6 + 1] == 210, "palette");
	mgpu_image_free(&im);
	free(b.p);
	/* 1-bit gray 101 / 010 scales to 0..255 */
	b = png(3, 2, PNG_COLOR_TYPE_GRAY, 1, 0, bits);
	T_OK(mgpu_image_decode(b.p, b.n, &im));
	T_CHECK(im.channels == 1 && im.data && u8(&im)[0] == 255 && u8(&im)[1] == 0 &&
		u8(&im)[2] == 255 && u8(&im)[4] == 255, "1-bit");
	mgpu_image_free(&im);
	free(b.p);
	/* 16-bit: float32 v / 65535 */
	b = png(3, 2, PNG_COLOR_TYPE_GRAY, 16, 0, g16);
	T_OK(mgpu_image_decode(b.p, b.n, &im));
	T_CHECK(im.channels == 1 && im.dtype == MGPU_DTYPE_F32, "16-bit dtype %d", im.dtype);
	for (i = 0; i < 6 && im.data; i++)
		T_NEAR(((float *)im.data)[i], (i * 40 * 256 + i) / 65535.0, 1e-7);
	mgpu_image_free(&im);
	free(b.p);
}

static void test_jpeg_kinds(void)
{
	unsigned char px[16 * 8 * 3];
	struct mgpu_image im;
	struct buf b;
	int i, ch, prog;

	for (ch = 1; ch <= 3; ch += 2)
		for (prog = 0; prog < 2; prog++) {
			for (i = 0; i < 16 * 8 * ch; i++)
				px[i] = (unsigned char)(ch == 1 ? 90 : i % 3 == 0 ? 200 : i % 3 == 1 ? 40 : 120);
			b = jpeg(16, 8, ch, prog, px);
			T_OK(mgpu_image_decode(b.p, b.n, &im));
			T_CHECK(im.channels == (uint32_t)ch && im.height == 8 && im.width == 16 &&
				im.dtype == MGPU_DTYPE_U8, "%d ch: %ux%ux%u", ch, im.channels,
				im.height, im.width);
			/* a solid colour at quality 100 comes back within 2 */
			for (i = 0; i < 16 * 8 * ch && im.data; i++)
				T_CHECK(abs(u8(&im)[i] - (ch == 1 ? 90 : i / 128 == 0 ? 200 :
						i / 128 == 1 ? 40 : 120)) <= 2, "%d ch, [%d] = %d", ch,
					i, u8(&im)[i]);
			mgpu_image_free(&im);
			free(b.p);
		}
}

/* Every prefix and one flipped byte of each image: an error, no crash. */
static void bad_all(const char *what, struct buf b, const char *sub)
{
	struct mgpu_image im;
	size_t n;
	int rc, bad = 0;

	for (n = 0; n < b.n; n++) {
		rc = mgpu_image_decode(b.p, n, &im);
		if (rc == 0 || im.data)
			bad++;
		if (rc < 0 && n > 8 && !strstr(mgpu_errmsg(), sub))
			T_CHECK(0, "%s, %zu bytes: '%s' lacks '%s'", what, n, mgpu_errmsg(), sub);
		mgpu_image_free(&im);
	}
	T_CHECK(bad == 0, "%s: %d truncations decoded", what, bad);
}

static void test_truncated_corrupt(void)
{
	unsigned char px[8 * 8 * 3];
	struct mgpu_image im;
	struct buf b;
	int i;

	for (i = 0; i < 8 * 8 * 3; i++)
		px[i] = (unsigned char)(i * 37);
	b = png(8, 8, PNG_COLOR_TYPE_RGB, 8, 0, px);
	bad_all("png", b, "corrupt PNG");
	b.p[b.n - 20] ^= 0x55; /* in IDAT: its CRC no longer matches */
	T_FAILS(mgpu_image_decode(b.p, b.n, &im), MGPU_EFORMAT, "corrupt PNG");
	T_CHECK(!im.data, "data after a failure");
	free(b.p);
	for (i = 0; i < 2; i++) {
		b = jpeg(8, 8, 3, i, px);
		bad_all(i ? "progressive jpeg" : "jpeg", b, "JPEG");
		b.p[b.n / 2] ^= 0xff;
		b.p[b.n / 2 + 1] ^= 0xff;
		T_CHECK(mgpu_image_decode(b.p, b.n, &im) < 0 || im.data, "flipped jpeg");
		mgpu_image_free(&im);
		free(b.p);
	}
	T_FAILS(mgpu_image_decode("GIF89a..", 8, &im), MGPU_EFORMAT, "neither a PNG nor a JPEG");
	T_CHECK(mgpu_image_name("a/b.PNG") && mgpu_image_name("x.jpeg") &&
		mgpu_image_name("x.Jpg") && !mgpu_image_name("png") &&
		!mgpu_image_name("x.gif"), "names");
}

static void test_resize(void)
{
	/* torch.nn.functional.interpolate(torch.tensor([[[[0., 100.], [200., 40.]]]]),
	 * size=(4, 4), mode="bilinear", align_corners=False) */
	static const float want[16] = { 0, 25, 75, 100, 50, 58.75, 76.25, 85, 150, 126.25,
					 78.75, 55, 200, 160, 80, 40 };
	unsigned char src[4] = { 0, 100, 200, 40 };
	struct mgpu_image im = { 1, 2, 2, MGPU_DTYPE_U8, NULL };
	float *f;
	int i;

	im.data = malloc(4);
	memcpy(im.data, src, 4);
	T_OK(mgpu_image_resize(&im, 2, 2)); /* the same size: untouched */
	T_CHECK(memcmp(im.data, src, 4) == 0, "identity");
	T_OK(mgpu_image_resize(&im, 4, 4));
	for (i = 0; i < 16 && im.height == 4; i++)
		T_CHECK(u8(&im)[i] == (unsigned char)(want[i] + 0.5f), "[%d] %d, want %g", i,
			u8(&im)[i], (double)want[i]);
	mgpu_image_free(&im);
	im = (struct mgpu_image){ 1, 2, 2, MGPU_DTYPE_F32, malloc(16) };
	f = im.data;
	for (i = 0; i < 4; i++)
		f[i] = src[i];
	T_OK(mgpu_image_resize(&im, 4, 4));
	for (i = 0; i < 16 && im.height == 4; i++)
		T_NEAR(((float *)im.data)[i], want[i], 1e-4);
	/* shrinking 4x4 to 1x1 takes the centre: the mean of the middle four */
	T_OK(mgpu_image_resize(&im, 1, 1));
	T_NEAR(((float *)im.data)[0], (58.75 + 76.25 + 126.25 + 78.75) / 4, 1e-4);
	T_FAILS(mgpu_image_resize(&im, 0, 3), MGPU_ERANGE, "resize to 0x3");
	mgpu_image_free(&im);
}

int main(void)
{
	T_RUN(test_png_kinds);
	T_RUN(test_jpeg_kinds);
	T_RUN(test_truncated_corrupt);
	T_RUN(test_resize);
	return T_DONE();
}
