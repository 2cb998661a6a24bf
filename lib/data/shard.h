/*
 * shard.h - writing WebDataset tar shards, byte for byte reproducibly.
 *
 * A shard is a POSIX ustar archive: per sample KEY.npy (the sample as a
 * version 1.0 .npy of its shape and dtype) then KEY.cls (the label in
 * decimal, no newline), where KEY is the sample's index in its source,
 * zero-padded to 8 digits. Every header has mode 0644, uid/gid 0, empty
 * user and group names and mtime MGPU_SHARD_MTIME; the archive ends with two
 * zero blocks and is padded to a multiple of 10240 bytes (GNU tar's and
 * Python's record size). So the same samples give the same bytes on every
 * machine, and GNU tar, bsdtar and Python's tarfile read it.
 *
 * The shard is written atomically (core/io.h): a failure leaves nothing.
 * A stop request (core/cancel.h) is a failure with MGPU_EINTR.
 */
#ifndef MGPU_DATA_SHARD_H
#define MGPU_DATA_SHARD_H

#include <stddef.h> /* size_t */
#include <stdint.h> /* uint32_t, uint64_t */

#include "core/sha256.h"  /* MGPU_SHA256_HEX */
#include "data/samples.h" /* struct mgpu_samples */

/* 2000-01-01T00:00:00Z: fixed, and not old enough for tar to warn. */
#define MGPU_SHARD_MTIME 946684800L
#define MGPU_SHARD_RECORD 10240

/*
 * Write rows idx[0..n) of s as a shard at path. *nbytes and sha_hex (may be
 * NULL) receive the file's size and SHA-256.
 */
int mgpu_shard_write(const char *path, const struct mgpu_samples *s, const uint32_t *idx,
		     size_t n, uint64_t *nbytes, char *sha_hex);

#endif
