/*
 * idx.h - the IDX tensor format of MNIST and Fashion-MNIST.
 *
 * Layout (all big-endian): two zero bytes, a type byte, the number of
 * dimensions (1..4), one uint32 per dimension, then the elements row-major.
 * Types: 0x08 u8, 0x09 s8, 0x0B i16, 0x0C i32, 0x0D f32, 0x0E f64.
 *
 * mgpu_idx_parse() is pure (no I/O, no allocation) and returns a VIEW:
 * out->data points into the caller's buffer, which must outlive out; the
 * elements stay big-endian, read them with mgpu_idx_value(). mgpu_idx_load()
 * reads a (possibly gzip/zstd/xz-compressed) file and makes out OWN its
 * buffer; release it with mgpu_idx_free(), which is also safe on a parsed
 * view and on a zeroed struct.
 *
 * The whole input must be exactly header + data: short data and trailing
 * bytes are both errors. mgpu_idx_load() decodes a compressed file only as
 * far as its header's size plus MGPU_IDX_SLACK_NBYTES, so a small file that
 * decompresses to gigabytes is refused without using that memory.
 *
 * As labelled samples (idx_samples.c): images are u8 with ndim >= 2, one
 * sample per outermost index, a u8 row of d values, d the product of the
 * other dimensions, its shape (1,H,W) for an (N,H,W) file, (D) for (N,D),
 * the file's own for 4 or 5 dimensions (more are flattened); labels are 1-D of an integer type (u8, s8, i16, i32),
 * one per image, each in [0, MGPU_SAMPLES_MAX_CLASSES). Failures leave the
 * samples zeroed.
 */
#ifndef MGPU_DATA_IDX_H
#define MGPU_DATA_IDX_H

#include <stddef.h> /* size_t */
#include <stdint.h> /* uint32_t */

#include "data/samples.h" /* struct mgpu_samples */

#define MGPU_IDX_MAX_DIM 4
/* Bytes past the declared size that mgpu_idx_load() still decodes, to
 * report how much trailing garbage there is. */
#define MGPU_IDX_SLACK_NBYTES ((size_t)4096)

enum {
	MGPU_IDX_U8 = 0x08,
	MGPU_IDX_S8 = 0x09,
	MGPU_IDX_I16 = 0x0B,
	MGPU_IDX_I32 = 0x0C,
	MGPU_IDX_F32 = 0x0D,
	MGPU_IDX_F64 = 0x0E,
};

struct mgpu_idx {
	int type;                         /* MGPU_IDX_* */
	int ndim;                         /* 1..MGPU_IDX_MAX_DIM */
	uint32_t dims[MGPU_IDX_MAX_DIM];  /* dims[0] is the outermost */
	size_t count;                     /* product of dims */
	size_t elem_nbytes;               /* 1, 2, 4 or 8 */
	const unsigned char *data;        /* count * elem_nbytes big-endian bytes */
	unsigned char *owned;             /* buffer to free (NULL for a view) */
};

/* Parse buf[0..len) as IDX; path only names the input in messages. */
int mgpu_idx_parse(const unsigned char *buf, size_t len, const char *path,
		   struct mgpu_idx *out);
/* Read and parse a file, compressed or not; out owns the bytes. */
int mgpu_idx_load(const char *path, struct mgpu_idx *out);
/* Element i (< count) converted to double (exact for every IDX type). */
double mgpu_idx_value(const struct mgpu_idx *idx, size_t i);
/* Free what mgpu_idx_load() allocated and zero the struct. */
void mgpu_idx_free(struct mgpu_idx *idx);
/* "u8", "s8", "i16", "i32", "f32", "f64" or NULL for an unknown type byte. */
const char *mgpu_idx_type_name(int type);

/* An images file and its labels file (compressed or not) as samples. */
int mgpu_idx_load_samples(const char *images, const char *labels, struct mgpu_samples *out);
/*
 * The MNIST-layout pair of sets in dir: train-images-idx3-ubyte,
 * train-labels-idx1-ubyte, t10k-images-idx3-ubyte, t10k-labels-idx1-ubyte,
 * each with or without ".gz" (the plain name wins when both exist). Both
 * sets must have the same d.
 */
int mgpu_idx_load_dir(const char *dir, struct mgpu_samples *train, struct mgpu_samples *test);

#endif
