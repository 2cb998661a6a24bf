/*
 * safetensors.h - read and write the safetensors tensor file format.
 *
 * Layout: an 8-byte little-endian header length N, N bytes of UTF-8 JSON
 * starting with '{' (may be padded with trailing spaces), then the data.
 * The JSON maps each tensor name to {"dtype", "shape", "data_offsets":
 * [begin, end]} with offsets relative to the start of the data, plus an
 * optional "__metadata__" object of string -> string.
 *
 * Reading validates as strictly as the reference implementation: the header
 * fits the file and is at most 100,000,000 bytes, the JSON is well formed,
 * every dtype is known, shape product x dtype size == end - begin, and the
 * tensors, sorted by offsets, tile the data section exactly (no overlap, no
 * gap, nothing after the last). A parsed struct mgpu_st is a VIEW of the
 * buffer given to mgpu_st_parse() (which must outlive it); mgpu_st_load()
 * makes it own the file's bytes. Tensor data is little-endian and not
 * necessarily aligned: copy it out (mgpu_st_read_f32) rather than cast.
 * Byte offsets in JSON error messages count from the start of the header
 * (file offset - 8).
 *
 * Writing produces F32 tensors in the entry order, contiguous, with the
 * header padded with spaces to a multiple of 8 bytes, atomically (a temp
 * file renamed into place). Host must be little-endian.
 */
#ifndef MGPU_MODEL_SAFETENSORS_H
#define MGPU_MODEL_SAFETENSORS_H

#include <stddef.h> /* size_t */
#include <stdint.h> /* int64_t */

#define MGPU_ST_MAX_DIM 8                  /* most dimensions read */
#define MGPU_ST_WRITE_MAX_DIM 4            /* most dimensions written */
#define MGPU_ST_MAX_HEADER_NBYTES 100000000 /* as the reference reader */

enum mgpu_st_dtype {
	MGPU_ST_BOOL = 1,
	MGPU_ST_U8,
	MGPU_ST_I8,
	MGPU_ST_F8_E5M2,
	MGPU_ST_F8_E4M3,
	MGPU_ST_I16,
	MGPU_ST_U16,
	MGPU_ST_F16,
	MGPU_ST_BF16,
	MGPU_ST_I32,
	MGPU_ST_U32,
	MGPU_ST_F32,
	MGPU_ST_F64,
	MGPU_ST_I64,
	MGPU_ST_U64,
};

/* One tensor to write: name, host data (count = product of shape). */
struct mgpu_st_entry {
	const char *name;
	const float *data;
	int ndim;                             /* 0..MGPU_ST_WRITE_MAX_DIM */
	int64_t shape[MGPU_ST_WRITE_MAX_DIM];
};

/* One tensor read. */
struct mgpu_st_tensor {
	const char *name;                   /* NUL-terminated UTF-8 */
	int dtype;                          /* enum mgpu_st_dtype */
	int ndim;
	int64_t shape[MGPU_ST_MAX_DIM];
	size_t count;                       /* product of shape */
	size_t begin, end;                  /* offsets in the data section */
	const unsigned char *data;          /* end - begin bytes, little-endian */
};

struct mgpu_st {
	int n;                          /* tensors, in header order */
	struct mgpu_st_tensor *t;
	int nmeta;                      /* metadata pairs */
	const char **meta;              /* 2 * nmeta: key, value, key, value ... */
	const unsigned char *data;      /* the data section */
	size_t data_nbytes;
	/* private */
	void *doc;
	unsigned char *owned;
};

/*
 * Write n F32 tensors and nmeta_pairs metadata pairs (meta_kv holds
 * key0, value0, key1, value1, ...; may be NULL when nmeta_pairs is 0).
 * Names must be unique, non-empty and not "__metadata__".
 */
int mgpu_st_write(const char *path, const struct mgpu_st_entry *e, int n,
		  const char *const *meta_kv, int nmeta_pairs);
/* Parse buf[0..len) (a view: buf must outlive st); path names it in messages. */
int mgpu_st_parse(const unsigned char *buf, size_t len, const char *path,
		  struct mgpu_st *st);
/* Read and parse a file; st owns the bytes. */
int mgpu_st_load(const char *path, struct mgpu_st *st);
/* The tensor called name, or NULL. */
const struct mgpu_st_tensor *mgpu_st_find(const struct mgpu_st *st, const char *name);
/* The metadata value of key, or NULL. */
const char *mgpu_st_meta(const struct mgpu_st *st, const char *key);
/* Copy a F32, F16, BF16 or F64 tensor to count floats (MGPU_EUNSUP else). */
int mgpu_st_read_f32(const struct mgpu_st_tensor *t, float *dst, size_t count);
/* Bytes per element of a dtype (1..8), 0 when unknown. */
size_t mgpu_st_dtype_nbytes(int dtype);
/* "F32" etc., or NULL. */
const char *mgpu_st_dtype_name(int dtype);
/* Release everything; safe on a zeroed or failed struct. */
void mgpu_st_free(struct mgpu_st *st);

#endif
