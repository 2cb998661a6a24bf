/*
 * sha256.h - SHA-256 (FIPS 180-4), incremental, for shard checksums and
 * cache keys.
 *
 * Provides init/update/final over a struct that lives on the caller's
 * stack (no allocation), and a one-shot hex helper. The digest is
 * byte-identical on every machine (big-endian words, as the standard says).
 */
#ifndef MGPU_CORE_SHA256_H
#define MGPU_CORE_SHA256_H

#include <stddef.h> /* size_t */
#include <stdint.h> /* uint32_t, uint64_t, uint8_t */

#define MGPU_SHA256_NBYTES 32
#define MGPU_SHA256_HEX 65 /* 64 hex digits + NUL */

struct mgpu_sha256 {
	uint32_t h[8];
	uint64_t nbytes;      /* message bytes so far */
	uint8_t block[64];    /* pending partial block */
	size_t fill;          /* bytes in block */
};

void mgpu_sha256_init(struct mgpu_sha256 *c);
void mgpu_sha256_update(struct mgpu_sha256 *c, const void *data, size_t len);
/* Finish and write the 32-byte digest; c must be re-initialised to reuse. */
void mgpu_sha256_final(struct mgpu_sha256 *c, uint8_t out[MGPU_SHA256_NBYTES]);
/* Lower-case hex of a digest into hex[65]. */
void mgpu_sha256_hex(const uint8_t digest[MGPU_SHA256_NBYTES], char hex[MGPU_SHA256_HEX]);
/* One shot: hex digest of data[0..len). */
void mgpu_sha256_buf_hex(const void *data, size_t len, char hex[MGPU_SHA256_HEX]);

#endif
