/*
 * hash.h - a counter-based 64-bit hash (splitmix64's finaliser), host and
 * device: a pure function of (seed, index), so dropout masks, synthetic
 * data and job tokens derived from it are the same on every rank, backend
 * and run, and need no state or mask buffer.
 */
#ifndef MGPU_CORE_HASH_H
#define MGPU_CORE_HASH_H

#include <stdint.h> /* uint64_t */

#include "core/hd.h" /* MGPU_HD */

MGPU_HD static inline uint64_t mgpu_hash64(uint64_t seed, uint64_t i)
{
	uint64_t z = seed + (i + 1) * 0x9E3779B97F4A7C15ull;
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

#endif
