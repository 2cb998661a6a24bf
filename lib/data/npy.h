/*
 * npy.h - NumPy's .npy array format, versions 1.0, 2.0 and 3.0.
 *
 * Layout: "\x93NUMPY", major and minor version bytes, the header length
 * (little-endian uint16 for 1.x, uint32 for 2.x/3.x), an ASCII dict literal
 * {'descr': ..., 'fortran_order': ..., 'shape': (...)} padded with spaces
 * and '\n', then the elements in C order.
 *
 * Accepted: little-endian or byte-sized types u1 i1 b1 u2 i2 u4 i4 u8 i8
 * f4 f8, C order, up to MGPU_NPY_MAX_DIM dimensions. The data must be
 * exactly what the shape says: short data, trailing bytes and a shape whose
 * size overflows are errors.
 *
 * mgpu_npy_parse() is pure (no I/O, no allocation) and returns a VIEW into
 * buf; its messages do not name the input (callers prefix the name, e.g.
 * "'x.tar': entry 'k.npy': "). mgpu_npy_load() reads a (possibly
 * compressed) file, owns the buffer and prefixes "'path': ".
 * mgpu_npy_header() writes a version 1.0 header for the writers.
 */
#ifndef MGPU_DATA_NPY_H
#define MGPU_DATA_NPY_H

#include <stddef.h> /* size_t */
#include <stdint.h> /* uint64_t */

#define MGPU_NPY_MAX_DIM 8
/* Room for any header mgpu_npy_header() writes. */
#define MGPU_NPY_HEADER_MAX 256

struct mgpu_npy {
	char kind;                        /* 'u', 'i', 'b' or 'f' */
	size_t elem_nbytes;               /* 1, 2, 4 or 8 */
	int ndim;                         /* 0..MGPU_NPY_MAX_DIM */
	uint64_t dims[MGPU_NPY_MAX_DIM];
	size_t count;                     /* product of dims (1 for a scalar) */
	const unsigned char *data;        /* count * elem_nbytes bytes, little-endian */
	unsigned char *owned;             /* buffer to free, NULL for a view */
};

/* Parse buf[0..len) as one .npy array. */
int mgpu_npy_parse(const unsigned char *buf, size_t len, struct mgpu_npy *out);
/* Read and parse a file (compressed or not); out owns the bytes. */
int mgpu_npy_load(const char *path, struct mgpu_npy *out);
/* Element i (< count) as a double (exact up to 2^53). */
double mgpu_npy_value(const struct mgpu_npy *a, size_t i);
/* "<f4"-style descr of the array ("|u1", "<i8", ...). */
const char *mgpu_npy_descr(const struct mgpu_npy *a);
/*
 * Write a 1.0 header for descr ("|u1", "<f4") and shape into buf (at least
 * MGPU_NPY_HEADER_MAX bytes); returns its length (a multiple of 64).
 */
size_t mgpu_npy_header(char *buf, const char *descr, int ndim, const uint32_t *shape);
void mgpu_npy_free(struct mgpu_npy *a);

#endif
