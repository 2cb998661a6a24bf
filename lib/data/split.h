/*
 * split.h - seeded train/val/test splits and per-rank balanced shard
 * partitions.
 *
 * A split is a pure function of (labels, seed, fractions, stratify): the
 * same on every machine (xoshiro256** from core/rng.h, integer arithmetic
 * and IEEE doubles only). val gets round(n * val_fraction) samples, test
 * round(n * test_fraction), train the rest (at least one). With stratify,
 * each class contributes to val and test in proportion to its size
 * (largest-remainder rounding, so the totals stay as above). Within each
 * split the samples are in a seeded random order, the order shards are
 * written in.
 *
 * Shards: ceil(n / shard_size) of them, rounded up to a multiple of ranks,
 * with sizes that differ by at most one (the first n % count get one more).
 */
#ifndef MGPU_DATA_SPLIT_H
#define MGPU_DATA_SPLIT_H

#include <stddef.h> /* size_t */
#include <stdint.h> /* uint32_t, uint64_t, int32_t */

enum { MGPU_SPLIT_TRAIN, MGPU_SPLIT_VAL, MGPU_SPLIT_TEST, MGPU_NSPLITS };

struct mgpu_split {
	uint32_t *idx[MGPU_NSPLITS]; /* sample indices of each split */
	size_t n[MGPU_NSPLITS];
	uint32_t *block;             /* owns all three lists */
};

/* "train", "val", "test". */
const char *mgpu_split_name(int split);
/* The split named s, or -1. */
int mgpu_split_from_name(const char *s);

/* Split n samples with labels y (each in [0, classes)). */
int mgpu_split_make(struct mgpu_split *sp, const int32_t *y, size_t n, int classes,
		    uint64_t seed, double val_fraction, double test_fraction, int stratify);
void mgpu_split_free(struct mgpu_split *sp);

/* Shard count for n samples: ceil(n / shard_size) up to a multiple of ranks. */
size_t mgpu_split_nshards(size_t n, size_t shard_size, int ranks);
/* First sample and length of shard i of nshards over n samples. */
void mgpu_split_shard_range(size_t n, size_t nshards, size_t i, size_t *first, size_t *len);

#endif
