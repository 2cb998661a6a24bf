/*
 * source.h - the trainer's view of a data set: train / val / test splits
 * with random-access row fetches, whatever the data is stored as.
 *
 * mgpu_source_open() takes
 *   - a cache (a directory holding mgpu.cache, or the file itself):
 *     rows are served from the mapped file (raw) or decoded chunks;
 *   - a shard manifest (a file starting with the manifest header, or a
 *     directory holding manifest.tsv): every shard is read into memory and
 *     its sha256 checked against the manifest;
 *   - a WebDataset archive (tar, tar.gz, tar.zst, zip): all train;
 *   - an IDX directory (train-*-ubyte[.gz], t10k-*-ubyte[.gz]): train, and
 *     test from t10k.
 *   - a UEA/UCR directory (NAME_TRAIN.ts, NAME_TEST.ts): train, and test
 *     from the TEST file (data/ts.h).
 * A path that does not exist, or a directory that holds none of these, is
 * an error that says so and lists the kinds of input above.
 * Absent splits have n[split] == 0; then the trainer keeps its own seeded
 * validation split of train and has no test set unless the source has one.
 *
 * Rows come back in the source's dtype: uint8 as stored (the device
 * normalises them as it casts, with the source's norm) or float32 with the
 * source's norm applied (data/norm.h). The norm is the identity until
 * mgpu_source_set_norm(); mgpu_source_norm() works out the trainer's.
 *
 * Threads: mgpu_source_rows() and mgpu_source_norm() may run on several
 * threads at once (the loader's workers); open, set_norm and close may not.
 */
#ifndef MGPU_DATA_SOURCE_H
#define MGPU_DATA_SOURCE_H

#include <stddef.h> /* size_t */
#include <stdint.h> /* uint32_t, int32_t */

#include "data/cache.h"   /* struct mgpu_cache */
#include "data/norm.h"    /* struct mgpu_norm */
#include "data/samples.h" /* struct mgpu_samples, MGPU_DTYPE_* */
#include "data/split.h"   /* MGPU_SPLIT_*, MGPU_NSPLITS */

enum { MGPU_SOURCE_MEMORY = 1, MGPU_SOURCE_CACHE = 2 };

struct mgpu_source {
	char path[4096];
	int kind;                  /* MGPU_SOURCE_* */
	const char *what;          /* "cache", "manifest", "archive", "IDX" */
	int dtype;                 /* MGPU_DTYPE_U8 or MGPU_DTYPE_F32 */
	int d;                     /* features per sample */
	int ndim;                  /* one sample's shape (data/samples.h): (C,H,W), */
	uint32_t shape[MGPU_SAMPLES_MAX_DIM]; /* (C,L) or (D) */
	int classes;               /* max label + 1 over every split */
	char *const *names;        /* class names (labels that were words), or NULL */
	int nnames;
	size_t row_nbytes;         /* d * element size */
	int tkind;                 /* each row's target (data/target.h), 0: none */
	int tndim;
	uint32_t tshape[MGPU_SAMPLES_MAX_DIM];
	size_t t_nbytes;           /* one row's target as stored */
	size_t n[MGPU_NSPLITS];    /* rows per split; 0: absent */
	int normalised;            /* cached per-feature normalised f32 */
	struct mgpu_norm norm;     /* applied to float32 rows; identity by default */
	struct mgpu_samples mem[MGPU_NSPLITS]; /* MEMORY sources */
	struct mgpu_cache cache;               /* CACHE sources */
};

int mgpu_source_open(struct mgpu_source *s, const char *path);
/* Rows idx[0..n) of split into x (n * row_nbytes) and y (n labels). */
int mgpu_source_rows(struct mgpu_source *s, int split, const uint32_t *idx, size_t n,
		     void *x, int32_t *y);
/* The same, and their targets as stored into t (n * t_nbytes; NULL: not
 * wanted). */
int mgpu_source_rows_t(struct mgpu_source *s, int split, const uint32_t *idx, size_t n,
		       void *x, int32_t *y, void *t);
/*
 * The whole-set norm of the train features (data/norm.h): mean and sd over
 * rows idx[0..n) of train as stored (idx NULL: all of train; a cache
 * answers that from its header without reading the rows).
 */
int mgpu_source_norm(struct mgpu_source *s, const uint32_t *idx, size_t n,
		     struct mgpu_norm *norm);
/* Apply norm to the float32 rows mgpu_source_rows() returns from now on. */
void mgpu_source_set_norm(struct mgpu_source *s, const struct mgpu_norm *norm);
/*
 * What a model takes from the data: one sample's shape into shape (ndim
 * returned: 3 (C,H,W) an image, 2 (C,L) a series, 1 (D) flat features,
 * 4 a shape no model reads) and the class count (named classes count
 * whether or not a split holds them).
 */
int mgpu_source_shape(const struct mgpu_source *s, uint32_t shape[MGPU_SAMPLES_MAX_DIM]);
int mgpu_source_nclasses(const struct mgpu_source *s);
/* Check every label of every split is below nclasses. */
int mgpu_source_check_classes(const struct mgpu_source *s, int nclasses);
void mgpu_source_close(struct mgpu_source *s);

#endif
