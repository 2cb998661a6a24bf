/*
 * test_npy.c - unit tests of the .npy parser and header writer and of the
 * netpbm (PGM/PPM) parser: valid inputs in every accepted form, and each
 * documented error (truncated, absurd size, Fortran order, bad magic,
 * trailing bytes, 16-bit images).
 */
#include <stdint.h> /* uint8_t */
#include <stdio.h>  /* snprintf */
#include <string.h> /* memcpy, strlen */

#include "core/err.h"    /* mgpu_errmsg, MGPU_E* */
#include "data/netpbm.h" /* mgpu_netpbm_parse */
#include "data/npy.h"    /* mgpu_npy_* */
#include "../t.h"        /* T_RUN, T_CHECK, T_OK, T_FAILS */

static unsigned char buf[4096];

/* A v1 file: header dict (padded to 64) + data. */
static size_t npy1(const char *dict, const void *data, size_t n)
{
	size_t d = strlen(dict), total = (10 + d + 1 + 63) / 64 * 64;

	memcpy(buf, "\x93NUMPY\x01\x00", 8);
	buf[8] = (unsigned char)((total - 10) & 255);
	buf[9] = (unsigned char)((total - 10) >> 8);
	memcpy(buf + 10, dict, d);
	memset(buf + 10 + d, ' ', total - 11 - d);
	buf[total - 1] = '\n';
	memcpy(buf + total, data, n);
	return total + n;
}

static void test_u8_and_f8(void)
{
	const unsigned char u[6] = { 1, 2, 3, 250, 5, 6 };
	const double f[2] = { 1.5, -2.25 };
	struct mgpu_npy a;
	size_t n;

	n = npy1("{'descr': '|u1', 'fortran_order': False, 'shape': (2, 3), }", u, 6);
	T_OK(mgpu_npy_parse(buf, n, &a));
	T_CHECK(a.ndim == 2 && a.dims[0] == 2 && a.dims[1] == 3 && a.count == 6, "shape");
	T_NEAR(mgpu_npy_value(&a, 3), 250, 0);
	n = npy1("{\"shape\":(2,),\"fortran_order\":False,\"descr\":\"<f8\"}", f, 16);
	T_OK(mgpu_npy_parse(buf, n, &a));
	T_NEAR(mgpu_npy_value(&a, 1), -2.25, 0);
	T_CHECK(strcmp(mgpu_npy_descr(&a), "<f8") == 0, "%s", mgpu_npy_descr(&a));
}

static void test_v2_and_signed(void)
{
	const int16_t v[2] = { -3, 300 };
	struct mgpu_npy a;
	size_t n = npy1("{'descr': '<i2', 'fortran_order': False, 'shape': (2,), }", v, 4);

	memmove(buf + 12, buf + 10, n - 10);
	buf[6] = 2;
	buf[8] = (unsigned char)((n - 14) & 255), buf[9] = (unsigned char)((n - 14) >> 8);
	buf[10] = buf[11] = 0;
	T_OK(mgpu_npy_parse(buf, n + 2, &a));
	if (t_cur_failed)
		return;
	T_NEAR(mgpu_npy_value(&a, 0), -3, 0);
	T_NEAR(mgpu_npy_value(&a, 1), 300, 0);
}

/* The writer's header is byte for byte what numpy.save writes. */
static void test_header_like_numpy(void)
{
	char h[MGPU_NPY_HEADER_MAX];
	const char *want1 = "{'descr': '|u1', 'fortran_order': False, 'shape': (784,), }";
	const char *want2 = "{'descr': '<f4', 'fortran_order': False, 'shape': (28, 28), }";
	uint32_t s1 = 784, s2[2] = { 28, 28 };
	struct mgpu_npy a;
	size_t n;
	static unsigned char z[784 * 4];

	n = mgpu_npy_header(h, "|u1", 1, &s1);
	T_CHECK(n == 128 && memcmp(h + 10, want1, strlen(want1)) == 0 && h[127] == '\n',
		"%zu '%.60s'", n, h + 10);
	n = mgpu_npy_header(h, "<f4", 2, s2);
	T_CHECK(n == 128 && memcmp(h + 10, want2, strlen(want2)) == 0, "'%.70s'", h + 10);
	memcpy(buf, h, n);
	memcpy(buf + n, z, sizeof z < sizeof buf - n ? sizeof z : 0);
	T_OK(mgpu_npy_parse(buf, n + 784 * 4, &a));
}

static void test_errors(void)
{
	const unsigned char u[6] = { 0 };
	struct mgpu_npy a;
	size_t n;

	n = npy1("{'descr': '|u1', 'fortran_order': False, 'shape': (2, 3), }", u, 6);
	T_FAILS(mgpu_npy_parse(buf, n - 1, &a), MGPU_EFORMAT, "truncated");
	T_FAILS(mgpu_npy_parse(buf, 9, &a), MGPU_EFORMAT, "truncated npy header");
	buf[n] = 0;
	T_FAILS(mgpu_npy_parse(buf, n + 1, &a), MGPU_EFORMAT, "trailing garbage");
	n = npy1("{'descr': '|u1', 'fortran_order': True, 'shape': (2, 3), }", u, 6);
	T_FAILS(mgpu_npy_parse(buf, n, &a), MGPU_EFORMAT, "Fortran order");
	n = npy1("{'descr': '<u1', 'fortran_order': False, 'shape': (4294967296, "
		 "4294967296, 4294967296), }", u, 6);
	T_FAILS(mgpu_npy_parse(buf, n, &a), MGPU_ERANGE, "absurd size");
	n = npy1("{'descr': '|u1', 'fortran_order': False, 'shape': (99999999999999999999,), }",
		 u, 6);
	T_FAILS(mgpu_npy_parse(buf, n, &a), MGPU_ERANGE, "absurd size");
	n = npy1("{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }", u, 6);
	T_FAILS(mgpu_npy_parse(buf, n, &a), MGPU_EFORMAT, "not supported");
	n = npy1("{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }", u, 4);
	T_FAILS(mgpu_npy_parse(buf, n, &a), MGPU_EFORMAT, "big-endian");
	n = npy1("{'descr': '|u1', 'shape': (1,), }", u, 1);
	T_FAILS(mgpu_npy_parse(buf, n, &a), MGPU_EFORMAT, "lacks 'fortran_order'");
	buf[0] = 'X';
	T_FAILS(mgpu_npy_parse(buf, n, &a), MGPU_EFORMAT, "bad magic");
	buf[0] = 0x93;
	buf[8] = 0xff, buf[9] = 0xff;
	T_FAILS(mgpu_npy_parse(buf, n, &a), MGPU_EFORMAT, "truncated npy header");
	T_FAILS(mgpu_npy_load("/nonexistent.npy", &a), MGPU_EIO, "'/nonexistent.npy'");
}

static void test_netpbm(void)
{
	static const unsigned char pgm[] = "P5\n# c\n3 2\n255\n\1\2\3\4\5\6";
	static const unsigned char ppm[] = "P6 1 1 255 \7\10\11";
	struct mgpu_netpbm im;

	T_OK(mgpu_netpbm_parse(pgm, sizeof pgm - 1, &im));
	T_CHECK(im.width == 3 && im.height == 2 && im.channels == 1 && im.data[5] == 6, "pgm");
	T_OK(mgpu_netpbm_parse(ppm, sizeof ppm - 1, &im));
	T_CHECK(im.channels == 3 && im.data[2] == 9, "ppm");
	T_FAILS(mgpu_netpbm_parse(pgm, sizeof pgm - 2, &im), MGPU_EFORMAT, "truncated");
	T_FAILS(mgpu_netpbm_parse(pgm, sizeof pgm, &im), MGPU_EFORMAT, "trailing");
	T_FAILS(mgpu_netpbm_parse((const unsigned char *)"P5 2 2 65535 ", 13, &im),
		MGPU_EFORMAT, "16-bit");
	T_FAILS(mgpu_netpbm_parse((const unsigned char *)"P2 1 1 9 1", 10, &im),
		MGPU_EFORMAT, "P5/P6");
	T_FAILS(mgpu_netpbm_parse((const unsigned char *)"P5 99999 99999 255 ", 19, &im),
		MGPU_EFORMAT, "truncated");
}

int main(void)
{
	T_RUN(test_u8_and_f8);
	T_RUN(test_v2_and_signed);
	T_RUN(test_header_like_numpy);
	T_RUN(test_errors);
	T_RUN(test_netpbm);
	return T_DONE();
}
