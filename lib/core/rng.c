/*
 * rng.c - xoshiro256** seeded through splitmix64 (see rng.h).
 */
#include "core/rng.h"

static uint64_t splitmix(uint64_t *x)
{
	uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

void mgpu_rng_seed(struct mgpu_rng *r, uint64_t seed, uint64_t stream)
{
	uint64_t x = seed ^ (stream * 0xD1B54A32D192ED03ull);
	int i;

	for (i = 0; i < 4; i++)
		r->s[i] = splitmix(&x);
}

static uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

uint64_t mgpu_rng_u64(struct mgpu_rng *r)
{
	uint64_t *s = r->s;
	uint64_t out = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return out;
}

uint64_t mgpu_rng_below(struct mgpu_rng *r, uint64_t bound)
{
	/* Rejection on the low zone keeps the draw unbiased for any bound. */
	uint64_t threshold = (0 - bound) % bound, x;

	do
		x = mgpu_rng_u64(r);
	while (x < threshold);
	return x % bound;
}

float mgpu_rng_float(struct mgpu_rng *r)
{
	return (float)(mgpu_rng_u64(r) >> 40) * (1.0f / 16777216.0f);
}

void mgpu_rng_perm(struct mgpu_rng *r, uint32_t *perm, size_t n)
{
	size_t i, j;
	uint32_t t;

	for (i = 0; i < n; i++)
		perm[i] = (uint32_t)i;
	for (i = n; i > 1; i--) {
		j = (size_t)mgpu_rng_below(r, i);
		t = perm[i - 1];
		perm[i - 1] = perm[j];
		perm[j] = t;
	}
}
