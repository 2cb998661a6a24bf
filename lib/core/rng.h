/*
 * rng.h - seeded, reproducible random numbers (xoshiro256**).
 *
 * The state is four 64-bit words, saved in checkpoints so a resumed run
 * continues the same stream. mgpu_rng_perm draws an unbiased permutation;
 * the same (seed, stream) gives the same sequence on every machine.
 */
#ifndef MGPU_CORE_RNG_H
#define MGPU_CORE_RNG_H

#include <stddef.h> /* size_t */
#include <stdint.h> /* uint64_t, uint32_t */

struct mgpu_rng {
	uint64_t s[4];
};

/* Seed from (seed, stream): independent streams for init, split, epochs. */
void mgpu_rng_seed(struct mgpu_rng *r, uint64_t seed, uint64_t stream);
uint64_t mgpu_rng_u64(struct mgpu_rng *r);
/* Uniform in [0, bound), unbiased (bound > 0). */
uint64_t mgpu_rng_below(struct mgpu_rng *r, uint64_t bound);
/* Uniform float in [0, 1). */
float mgpu_rng_float(struct mgpu_rng *r);
/* perm[i] = a permutation of 0..n-1. */
void mgpu_rng_perm(struct mgpu_rng *r, uint32_t *perm, size_t n);

#endif
