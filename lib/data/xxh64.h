/*
 * xxh64.h - XXH64, the fast non-cryptographic 64-bit hash of xxHash, used
 * as the per-chunk checksum of mgpu caches (see mgpu-formats(5)).
 *
 * Provides a one-shot hash of a buffer. Reads the input as little-endian
 * words whatever the host, so a cache checks the same on every machine.
 * Known values: XXH64("", 0) = 0xef46db3751d8e999.
 */
#ifndef MGPU_DATA_XXH64_H
#define MGPU_DATA_XXH64_H

#include <stddef.h> /* size_t */
#include <stdint.h> /* uint64_t */

uint64_t mgpu_xxh64(const void *data, size_t len, uint64_t seed);

#endif
