/*
 * cache.h - mgpu tensor caches: decoded samples of up to three splits in
 * one file, zstd-compressed chunks (or raw, memory-mapped ones) with an
 * index and a checksum per chunk. The byte layout is documented in
 * mgpu-formats(5); MGPU_CACHE_* below mirror it.
 *
 * Reading: mgpu_cache_open() maps the file read-only and checks the header
 * and index checksums; mgpu_cache_rows() fetches any rows of a split.
 * A chunk's checksum is checked the first time the process touches it, so
 * a corrupt chunk is an error naming it ("'c/mgpu.cache': chunk 3 (train
 * rows 384..511): checksum mismatch"), never wrong data. Decoded chunks are
 * kept up to a memory budget (default MGPU_CACHE_BUDGET, least recently
 * used evicted); raw chunks are served straight from the mapping, so the
 * ranks of a node share one copy in the page cache.
 *
 * Threads: mgpu_cache_rows() may be called from several threads at once
 * (the loader's workers); a chunk is decoded by one of them while the
 * others wait for it. open/close/verify are single-threaded.
 *
 * Writing (cache_build.c): mgpu_cache_write() builds a file atomically from
 * in-memory splits; mgpu_cache_ensure() is the lock + up-to-date check
 * around it for a cache directory. Both poll core/cancel.h between chunks
 * and while waiting for the lock: a stop request fails them with
 * MGPU_EINTR, leaving nothing half-written.
 */
#ifndef MGPU_DATA_CACHE_H
#define MGPU_DATA_CACHE_H

#include <pthread.h> /* pthread_mutex_t, pthread_cond_t */
#include <stddef.h>  /* size_t */
#include <stdint.h>  /* uint64_t, uint32_t, uint8_t */

#include "data/samples.h" /* struct mgpu_samples */
#include "data/split.h"   /* MGPU_NSPLITS */

#define MGPU_CACHE_MAGIC "MGPUCACH"
#define MGPU_CACHE_VERSION 1
/* Version 2: a cache whose samples carry targets (data/target.h); the
 * names end at MGPU_CACHE_TARGET_OFF, where the target's layout starts.
 * Caches without targets stay version 1, byte for byte. */
#define MGPU_CACHE_VERSION_TARGETS 2
#define MGPU_CACHE_TARGET_OFF 3968
#define MGPU_CACHE_HEADER_NBYTES 4096
#define MGPU_CACHE_INDEX_ENTRY 48
#define MGPU_CACHE_FILE "mgpu.cache"   /* the file inside a cache directory */
#define MGPU_CACHE_LOCK ".lock"
#define MGPU_CACHE_BUDGET ((size_t)2 << 30)
/* Class names in the header: a u32 count at 232, then the names from 240,
 * each NUL-terminated, up to the checksum at 4088. */
#define MGPU_CACHE_NAMES_OFF 240
#define MGPU_CACHE_NAMES_NBYTES (4088 - MGPU_CACHE_NAMES_OFF)
#define MGPU_CACHE_NAMES_NBYTES_V2 (MGPU_CACHE_TARGET_OFF - MGPU_CACHE_NAMES_OFF)

enum { MGPU_CACHE_RAW = 1, MGPU_CACHE_NORMALISED = 2 };

/* The parsed header (host byte order). */
struct mgpu_cache_hdr {
	uint32_t version, flags, dtype, ndim, shape[4], classes, chunk_rows;
	int32_t level;
	uint64_t d;
	uint64_t n[MGPU_NSPLITS], first_chunk[MGPU_NSPLITS], nchunks[MGPU_NSPLITS];
	uint64_t total_chunks, index_off, norm_off;
	double mean, sd;          /* of the train split's stored values, all features */
	uint8_t key[32];          /* what it was built from (mgpu-cache's key) */
	uint64_t data_nbytes, stored_nbytes, index_xxh64;
	uint32_t nnames;          /* class names (labels that were words); 0: none */
	char names[MGPU_CACHE_NAMES_NBYTES]; /* nnames NUL-terminated names */
	/* version 2: each row's target (enum mgpu_target_kind; 0: none) */
	uint32_t tkind, tdtype, tndim, tshape[4];
	uint64_t t_nbytes;        /* per row */
};

struct mgpu_cache_chunk {
	uint64_t off, stored_nbytes, rows, first_row, xxh64;
	uint32_t split;
};

struct mgpu_cache_slot;

struct mgpu_cache {
	char path[4096];
	struct mgpu_cache_hdr h;
	size_t row_nbytes;
	size_t rec_nbytes;            /* a row's bytes in a chunk: features, label, target */
	const unsigned char *map;     /* the whole file, read-only */
	size_t map_nbytes;
	struct mgpu_cache_chunk *ix;  /* total_chunks entries */
	const float *mean, *std;      /* per-feature normalisation, or NULL */
	char *names[MGPU_SAMPLES_MAX_CLASSES]; /* h.nnames names, into h.names */
	/* the chunk cache */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct mgpu_cache_slot *slot;
	size_t budget, used;
	uint64_t tick;
	int locks_ok;
};

/* Open a cache file, or the MGPU_CACHE_FILE inside a directory. */
int mgpu_cache_open(struct mgpu_cache *c, const char *path);
/* Decoded-chunk memory budget in bytes (at least one chunk is kept). */
void mgpu_cache_set_budget(struct mgpu_cache *c, size_t nbytes);
/*
 * Rows idx[0..n) of split into x (n * row_nbytes bytes, the cache's dtype)
 * and y (n labels). Thread-safe.
 */
int mgpu_cache_rows(struct mgpu_cache *c, int split, const uint32_t *idx, size_t n,
		    void *x, int32_t *y);
/* The same, with their targets into t (n * h.t_nbytes; NULL: not wanted). */
int mgpu_cache_rows_t(struct mgpu_cache *c, int split, const uint32_t *idx, size_t n,
		      void *x, int32_t *y, void *t);
/* Progress of long work on a cache: done of total (chunks, or rows) and
 * the bytes they hold so far. */
typedef void (*mgpu_cache_progress_fn)(void *ctx, uint64_t done, uint64_t total,
				       uint64_t nbytes);

/* Check every chunk (checksum, and that it decodes); the error names the first bad one. */
int mgpu_cache_verify(struct mgpu_cache *c, size_t *nchecked);
/* The same, calling fn (may be NULL) after each chunk with the chunks
 * checked and their stored bytes. SIGINT/SIGTERM stop it (MGPU_EINTR). */
int mgpu_cache_verify_progress(struct mgpu_cache *c, size_t *nchecked, mgpu_cache_progress_fn fn,
			       void *ctx);
void mgpu_cache_close(struct mgpu_cache *c);
/* Read only the header of a cache file (for the up-to-date check). */
int mgpu_cache_read_hdr(const char *file, struct mgpu_cache_hdr *h);

/* ---- writing (cache_build.c) ---- */

struct mgpu_cache_opts {
	int dtype;              /* MGPU_DTYPE_U8/F32; 0: the source's */
	int normalise;          /* per-feature (x - mean) / std of train, stored f32 */
	int raw;                /* uncompressed, page-aligned chunks */
	int level;              /* zstd level */
	int threads;            /* compression threads (>= 1) */
	size_t chunk_nbytes;    /* decoded bytes per chunk (rows rounded down, >= 1 row) */
	int force;              /* mgpu_cache_ensure: rebuild even when current */
	uint8_t key[32];
	/* After each wave of chunks is written (NULL: none): rows stored so
	 * far of every split's rows, and their decoded bytes. */
	mgpu_cache_progress_fn progress;
	void *progress_ctx;
};

struct mgpu_cache_stats {
	uint64_t n[MGPU_NSPLITS], chunks[MGPU_NSPLITS];
	uint64_t data_nbytes[MGPU_NSPLITS], stored_nbytes[MGPU_NSPLITS];
	uint64_t file_nbytes;
};

/* Write a cache file atomically from the splits (NULL or n == 0: absent; train required). */
int mgpu_cache_write(const char *file, struct mgpu_samples *const split[MGPU_NSPLITS],
		     const struct mgpu_cache_opts *o, struct mgpu_cache_stats *st);

/* Load the splits to cache: called at most once, under the lock. */
typedef int (*mgpu_cache_load_fn)(void *ctx, struct mgpu_samples split[MGPU_NSPLITS]);

/*
 * Make dir/MGPU_CACHE_FILE hold the cache for o->key: under an exclusive
 * lock on dir/MGPU_CACHE_LOCK (concurrent callers wait), return *built = 0
 * when it already does, else load, write and set *built = 1. A directory
 * this call created is removed again when it fails. o->force rebuilds.
 */
int mgpu_cache_ensure(const char *dir, const struct mgpu_cache_opts *o, mgpu_cache_load_fn load,
		      void *ctx, struct mgpu_cache_stats *st, int *built);
/* Is dir/MGPU_CACHE_FILE a cache built for key (no lock)? */
int mgpu_cache_is_current(const char *dir, const uint8_t key[32]);

#endif
