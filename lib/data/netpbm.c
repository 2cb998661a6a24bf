/*
 * netpbm.c - binary PGM/PPM parsing (see netpbm.h).
 */
#include "data/netpbm.h"

#include <string.h> /* memset */

#include "core/err.h" /* mgpu_err */

/* Skip whitespace and comments, then read a decimal number. */
static int number(const unsigned char *buf, size_t len, size_t *pos, uint32_t *out,
		  const char *what)
{
	uint64_t v = 0;
	size_t p = *pos;

	for (;;) {
		while (p < len && (buf[p] == ' ' || buf[p] == '\t' || buf[p] == '\n' ||
				   buf[p] == '\r'))
			p++;
		if (p < len && buf[p] == '#') {
			while (p < len && buf[p] != '\n')
				p++;
			continue;
		}
		break;
	}
	if (p >= len || buf[p] < '0' || buf[p] > '9')
		return mgpu_err(MGPU_EFORMAT, p >= len ? "truncated netpbm header" :
				"netpbm header: bad %s", what);
	for (; p < len && buf[p] >= '0' && buf[p] <= '9'; p++) {
		v = v * 10 + (uint64_t)(buf[p] - '0');
		if (v > 0xffffffffu)
			return mgpu_err(MGPU_ERANGE, "netpbm header: %s too large", what);
	}
	*pos = p;
	*out = (uint32_t)v;
	return 0;
}

int mgpu_netpbm_parse(const unsigned char *buf, size_t len, struct mgpu_netpbm *out)
{
	uint32_t w, h, maxval;
	size_t pos = 2, nbytes;

	memset(out, 0, sizeof *out);
	if (len < 2 || buf[0] != 'P' || (buf[1] != '5' && buf[1] != '6'))
		return mgpu_err(MGPU_EFORMAT, "not a binary PGM or PPM image (magic P5/P6)");
	MGPU_TRY(number(buf, len, &pos, &w, "width"));
	MGPU_TRY(number(buf, len, &pos, &h, "height"));
	MGPU_TRY(number(buf, len, &pos, &maxval, "maxval"));
	if (w == 0 || h == 0 || maxval == 0)
		return mgpu_err(MGPU_EFORMAT, "netpbm header: zero width, height or maxval");
	if (maxval > 255)
		return mgpu_err(MGPU_EFORMAT, "netpbm maxval %u: 16-bit images are not "
				"supported", maxval);
	if (pos >= len)
		return mgpu_err(MGPU_EFORMAT, "truncated netpbm header");
	pos++; /* the single whitespace byte */
	out->channels = buf[1] == '5' ? 1 : 3;
	if (__builtin_mul_overflow((size_t)w, (size_t)h, &nbytes) ||
	    __builtin_mul_overflow(nbytes, (size_t)out->channels, &nbytes))
		return mgpu_err(MGPU_ERANGE, "netpbm header claims an absurd size");
	if (len - pos < nbytes)
		return mgpu_err(MGPU_EFORMAT, "truncated: %ux%u image needs %zu bytes, %zu "
				"present", w, h, nbytes, len - pos);
	if (len - pos > nbytes)
		return mgpu_err(MGPU_EFORMAT, "%zu bytes of trailing garbage after the image",
				len - pos - nbytes);
	out->width = w;
	out->height = h;
	out->maxval = (int)maxval;
	out->data = buf + pos;
	return 0;
}
