/*
 * samples.h - an in-memory labelled set of samples of one shape and dtype
 * (uint8 or float32 features, or uint16 or uint32 token ids): what every reader of outside data produces and what
 * mgpu-shard and mgpu-cache consume.
 *
 * x holds n rows of d elements of the dtype, row-major (row i starts at
 * x + i * row_nbytes); y holds n int32 labels in [0, MGPU_SAMPLES_MAX_CLASSES).
 * shape[0..ndim) is ONE sample's shape (d is its product), kept so shards
 * can write each sample back as an .npy of that shape and a conv net can
 * read it: (C,H,W) is an image, channels first and planar; (C,L) a series
 * of C channels and L steps; (D) flat features. Readers produce those
 * (mgpu-shard(1) lists each source's); --shape reshapes a flat source
 * (mgpu_samples_reshape). names, when not NULL,
 * names class k names[k] (k < nnames): labels that were words (a CSV's
 * "WALKING"), numbered in sorted (strcmp) order. Buffers are malloc'ed
 * and owned by the struct; mgpu_samples_free() releases them and is safe on a
 * zeroed struct. Readers leave a zeroed struct on failure.
 */
#ifndef MGPU_DATA_SAMPLES_H
#define MGPU_DATA_SAMPLES_H

#include <stddef.h> /* size_t */
#include <stdint.h> /* int32_t, uint32_t */

#define MGPU_SAMPLES_MAX_DIM 4
#define MGPU_SAMPLES_MAX_CLASSES 256
/* Features per sample must stay below this (fits an int, with room). */
#define MGPU_SAMPLES_MAX_D ((size_t)1 << 30)

/* The codes are stored in caches (mgpu-cache(5)): never renumber. U16 and
 * U32 hold token ids (data/tokens.h), which are never normalised. */
enum mgpu_dtype { MGPU_DTYPE_U8 = 1, MGPU_DTYPE_F32 = 2, MGPU_DTYPE_U16 = 3, MGPU_DTYPE_U32 = 4 };

/* Targets beyond a class id (data/target.h says what each holds). The
 * codes are stored in caches (mgpu-formats(5)): never renumber. */
enum mgpu_target_kind {
	MGPU_TARGET_NONE = 0,
	MGPU_TARGET_VECTOR = 1,    /* float32 (K): regression */
	MGPU_TARGET_MASK = 2,      /* uint8 (H,W): a class id per pixel */
	MGPU_TARGET_KEYPOINTS = 3, /* float32 (P,2): (x, y) per part, NaN missing */
};

struct mgpu_samples {
	size_t n;                          /* rows */
	size_t cap;                        /* rows allocated */
	int dtype;                         /* enum mgpu_dtype */
	int ndim;                          /* 1..MGPU_SAMPLES_MAX_DIM */
	uint32_t shape[MGPU_SAMPLES_MAX_DIM];
	size_t d;                          /* elements per row */
	size_t row_nbytes;                 /* d * element size */
	int classes;                       /* max label + 1 */
	unsigned char *x;
	int32_t *y;
	char **names;                      /* class names, or NULL: numbers only */
	int nnames;
	/* A target beyond the label (data/target.h), or tkind 0: none. t
	 * holds n rows of t_nbytes: tdtype elements of shape tshape[0..tndim). */
	int tkind;                         /* enum mgpu_target_kind */
	int tdtype;                        /* F32 (vector, keypoints), U8 (mask) */
	int tndim;
	uint32_t tshape[MGPU_SAMPLES_MAX_DIM];
	size_t t_nbytes;                   /* per row */
	unsigned char *t;
};

/* A class name's longest: a name fits one line of every format it goes in. */
#define MGPU_CLASS_NAME_MAX 128

/* "vector", "mask", "keypoints" or "none". */
const char *mgpu_target_kind_name(int kind);
/* Bytes per element (1, 4, 2, 4), or 0 for an unknown dtype. */
size_t mgpu_dtype_nbytes(int dtype);
/* "u8", "f32", "u16", "u32" or "?". */
const char *mgpu_dtype_name(int dtype);
/* The .npy descr of a dtype ("|u1", "<f4", "<u2", "<u4"), or NULL. */
const char *mgpu_dtype_npy_descr(int dtype);
/* The dtype an .npy element of kind ('u', 'f', ...) and size is read as:
 * |u1, <u2, <u4 as they are, <f4 and <f8 as float32; 0 for any other. */
int mgpu_dtype_from_npy(char kind, size_t elem_nbytes);
/* A token dtype (U16, U32): ids for a language model, never features. */
int mgpu_dtype_is_token(int dtype);
/* Element j of row i of s as a double. */
double mgpu_samples_value(const struct mgpu_samples *s, size_t i, size_t j);

/* Index of the first NaN or infinity among x[0..count), or count when all
 * are finite: float features must be finite (one NaN turns every weight of
 * a model trained on it into NaN). */
size_t mgpu_f32_first_nonfinite(const float *x, size_t count);

/* Empty set of the given row shape; EINVAL for a bad shape or dtype. */
int mgpu_samples_init(struct mgpu_samples *s, int dtype, int ndim, const uint32_t *shape);
/* Reserve room for n rows in total. */
int mgpu_samples_reserve(struct mgpu_samples *s, size_t n);
/* Append one row (row_nbytes bytes of the set's dtype) and its label. */
int mgpu_samples_push(struct mgpu_samples *s, const void *row, int32_t label);
/* Give an empty set (n == 0) rows of a target of kind (enum
 * mgpu_target_kind, 0: none) of the shape shape[0..ndim): vector (K),
 * mask (H,W), keypoints (P,2). */
int mgpu_samples_set_target(struct mgpu_samples *s, int kind, int ndim, const uint32_t *shape);
/* Do a and b carry the same target (kind and shape; none and none too)? */
int mgpu_samples_same_target(const struct mgpu_samples *a, const struct mgpu_samples *b);
/* The target as text: "keypoints 2x2", "mask 96x96", "vector 3" or "none". */
void mgpu_samples_target_str(const struct mgpu_samples *s, char *buf, size_t len);
/* mgpu_samples_push with the row's target (t_nbytes bytes; ignored, and may
 * be NULL, when the set has none). */
int mgpu_samples_push_t(struct mgpu_samples *s, const void *row, int32_t label,
			const void *target);
/* Append row i of src (features, label and target) to dst. */
int mgpu_samples_push_row(struct mgpu_samples *dst, const struct mgpu_samples *src, size_t i);
/* Append rows idx[0..n) of src (same dtype and d, and target; an empty
 * dst without a target takes src's) to dst. */
int mgpu_samples_take(struct mgpu_samples *dst, const struct mgpu_samples *src,
		      const uint32_t *idx, size_t n);
/* Shape as text "28x28" into buf. */
void mgpu_samples_shape_str(int ndim, const uint32_t *shape, char *buf, size_t len);
/* Parse "CxHxW" or "CxL" (2 or 3 positive numbers joined by 'x') into
 * shape; what names the text in the error. */
int mgpu_shape_parse(const char *text, int *ndim, uint32_t shape[MGPU_SAMPLES_MAX_DIM],
		     const char *what);
/* Give every row the shape shape[0..ndim) of the same d (the bytes stay):
 * an error naming name when the element counts differ. */
int mgpu_samples_reshape(struct mgpu_samples *s, int ndim, const uint32_t *shape,
			 const char *name);
/* Same shape (ndim and every dimension). */
int mgpu_samples_same_shape(const struct mgpu_samples *s, int ndim, const uint32_t *shape);
void mgpu_samples_free(struct mgpu_samples *s);

/* Class names (class_names.c). */
/* Copies of names[0..n) into *out (NULL, 0 when n is 0). */
int mgpu_class_names_copy(char ***out, int *nout, char *const *names, int n);
void mgpu_class_names_free(char **names, int n);
/* Is names a valid list: 1 to MGPU_SAMPLES_MAX_CLASSES names, each 1 to
 * MGPU_CLASS_NAME_MAX printable bytes (no tab, line end or other control
 * character), in strictly increasing strcmp order? what names the list in
 * the error. */
int mgpu_class_names_check(char *const *names, int n, const char *what);
/* The same list (NULL and NULL are the same). */
int mgpu_class_names_equal(char *const *a, int na, char *const *b, int nb);
/* Append src to dst when their names differ: the union in sorted order
 * becomes dst's names and both sets' labels are renumbered into it. Sets
 * with and without names cannot be joined (an error naming src). */
int mgpu_class_names_join(struct mgpu_samples *dst, struct mgpu_samples *src,
			  const char *name);
/* Class k's name, or its number as text when there are no names. */
const char *mgpu_class_name(char *const *names, int n, int k, char buf[16]);

#endif
