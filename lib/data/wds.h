/*
 * wds.h - WebDataset archives through libarchive: tar, tar.gz, tar.zst,
 * tar.xz, zip (any filter libarchive knows), from a file or a stream.
 *
 * A sample is a run of consecutive members sharing a key: the member path
 * up to the first dot after its last slash ("d/abc.input.npy" has key
 * "d/abc", extension "input.npy"). Its input is the member with extension
 * "npy" (uint8, float32 or float64, C order; float64 becomes float32), "pgm"
 * or "ppm" (binary, maxval <= 255, uint8 of shape (1,H,W) or (3,H,W): the
 * pixels made planar, channels first), "png", "jpg" or "jpeg" (any case;
 * C x H x W, data/image.h); its label the member "cls" (a
 * decimal integer in [0, 256), whitespace around it allowed). The last part of the extension decides ("img.pgm" is a pgm
 * input). Members with other extensions, and directories, are ignored.
 *
 * Every sample must have one input and one label, and the same shape and
 * dtype as the first sample (including samples already in `out`).
 * Errors name the archive and the entry:
 * "'a.tar': entry '00007.cls': label 'cat' is not a decimal integer".
 *
 * Samples are APPENDED to out (a zeroed struct starts a new set); on
 * failure out may hold the samples read before the bad one (the caller
 * frees it). A stop request (core/cancel.h) ends a read with MGPU_EINTR.
 */
#ifndef MGPU_DATA_WDS_H
#define MGPU_DATA_WDS_H

#include <stddef.h> /* size_t */
#include <stdint.h> /* uint64_t */

#include "core/sha256.h"  /* MGPU_SHA256_HEX */
#include "data/samples.h" /* struct mgpu_samples */

/* The largest member read: 1 GiB. */
#define MGPU_WDS_MEMBER_MAX ((size_t)1 << 30)

/*
 * Read the archive at path ("-": standard input). When sha_hex is not NULL
 * it receives the SHA-256 of the whole file as read (computed on the way
 * when the reader did not seek, else by a second pass).
 */
int mgpu_wds_read(const char *path, struct mgpu_samples *out, char *sha_hex);
/* Progress of a long read: the archive's bytes consumed so far (as
 * stored, before decompression) and the samples read. */
typedef void (*mgpu_wds_progress_fn)(void *ctx, uint64_t nbytes, size_t nsamples);

/* mgpu_wds_read, calling fn (may be NULL) after each member. */
int mgpu_wds_read_watched(const char *path, struct mgpu_samples *out, char *sha_hex,
			  mgpu_wds_progress_fn fn, void *ctx);
/* mgpu_wds_read_watched, with PNG and JPEG inputs resized to resize[0] x
 * resize[1] (resize NULL: images of another size than the first are an
 * error naming the member). */
int mgpu_wds_read_resized(const char *path, struct mgpu_samples *out, char *sha_hex,
			  mgpu_wds_progress_fn fn, void *ctx, const uint32_t *resize);
/*
 * Read an archive from fd, whose first bytes prefix[0..plen) were already
 * consumed by the caller (to sniff the stream); name labels messages.
 */
int mgpu_wds_read_fd(int fd, const char *name, const unsigned char *prefix, size_t plen,
		     struct mgpu_samples *out, char *sha_hex);
/* Read an archive held in memory. */
int mgpu_wds_read_mem(const void *buf, size_t len, const char *name,
		      struct mgpu_samples *out);
/* The key and extension of a member path: key_len bytes of path, ext. */
void mgpu_wds_split_name(const char *path, size_t *key_len, const char **ext);

#endif
