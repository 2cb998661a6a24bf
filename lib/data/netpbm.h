/*
 * netpbm.h - binary PGM (P5) and PPM (P6) images with maxval <= 255.
 *
 * Layout: magic, whitespace-separated width, height and maxval (with '#'
 * comments to end of line), exactly one whitespace byte, then height x
 * width x channels bytes. Trailing bytes and short data are errors. A
 * 16-bit image (maxval > 255) is rejected.
 *
 * mgpu_netpbm_parse() is pure and returns a VIEW into buf; its messages do
 * not name the input (callers prefix it).
 */
#ifndef MGPU_DATA_NETPBM_H
#define MGPU_DATA_NETPBM_H

#include <stddef.h> /* size_t */
#include <stdint.h> /* uint32_t */

struct mgpu_netpbm {
	uint32_t width, height;
	int channels;                /* 1 (P5) or 3 (P6) */
	int maxval;                  /* 1..255 */
	const unsigned char *data;   /* height * width * channels bytes */
};

int mgpu_netpbm_parse(const unsigned char *buf, size_t len, struct mgpu_netpbm *out);

#endif
