/*
 * decomp.h - read a whole file that may be compressed.
 *
 * mgpu_read_maybe_compressed() returns the decoded bytes of a file that is
 * gzip, zstd, xz, lzma, bzip2, lz4 (anything libarchive's filters know, also
 * stacked: .gz of a .gz) or plain. It never stops early: a truncated or
 * corrupt compressed stream is an error naming the file, not short data.
 *
 * Ownership: on success *data is a malloc'ed buffer of *len bytes plus a
 * terminating NUL (not counted), which the caller frees; on failure *data is
 * NULL and *len 0. An empty file gives len 0 and a valid buffer.
 */
#ifndef MGPU_DATA_DECOMP_H
#define MGPU_DATA_DECOMP_H

#include <stddef.h> /* size_t */

/* The most decoded bytes mgpu_read_maybe_compressed() accepts: 4 GiB. */
#define MGPU_DECOMP_MAX_NBYTES ((size_t)4 << 30)

/* Read path whole, decompressing when it is compressed (limit 4 GiB). */
int mgpu_read_maybe_compressed(const char *path, unsigned char **data, size_t *len);

/* Same with a caller-chosen limit on the decoded size (MGPU_ERANGE above). */
int mgpu_read_maybe_compressed_max(const char *path, size_t max_nbytes,
				   unsigned char **data, size_t *len);

/* The first cap decoded bytes of path into buf (fewer when the stream is
 * shorter; *n says how many), without decoding the rest: for formats whose
 * header declares their size, so the whole read can then be bounded. */
int mgpu_read_maybe_compressed_head(const char *path, unsigned char *buf, size_t cap,
				    size_t *n);

#endif
