/*
 * test_target.c - keypoint JSON (every accepted form, every error) and
 * the confidence maps rendered from it (data/target.h).
 */
#include <math.h>   /* isnan, expf */
#include <stdio.h>  /* FILE: a crafted header */
#include <string.h> /* strlen, memcmp, memset */

#include "../t.h"        /* T_RUN, T_CHECK, T_FAILS */
#include "../tmpdir.h"   /* tpath, t_tmpdir_make */
#include "core/err.h"    /* mgpu_errmsg, MGPU_E* */
#include "data/cache.h"  /* mgpu_cache_write, mgpu_cache_rows_t */
#include "data/shard.h"  /* mgpu_shard_write */
#include "data/target.h" /* mgpu_keypoints_parse, mgpu_keypoints_render */
#include "data/wds.h"    /* mgpu_wds_read */
#include "data/xxh64.h"  /* mgpu_xxh64: a crafted header's checksum */

static int parse(const char *t, float *kp, int *np)
{
	return mgpu_keypoints_parse(t, strlen(t), "k.json", kp, 4, np);
}

static void test_forms(void)
{
	float kp[8];
	int np;

	T_OK(parse("[[1.5, 2], null, [3, 4, 0], [5, 6, 2]]", kp, &np));
	T_CHECK(np == 4 && kp[0] == 1.5f && kp[1] == 2.0f && isnan(kp[2]) && isnan(kp[3]) &&
			isnan(kp[4]) && kp[6] == 5.0f && kp[7] == 6.0f,
		"parsed %d parts wrong", np);
	T_OK(parse("{\"image\": \"a.png\", \"keypoints\": [[7, 8]]}", kp, &np));
	T_CHECK(np == 1 && kp[0] == 7.0f && kp[1] == 8.0f, "object form");
}

static void test_errors(void)
{
	float kp[8];
	int np;

	T_FAILS(parse("[", kp, &np), MGPU_EFORMAT, "'k.json': bad JSON");
	T_FAILS(parse("[]", kp, &np), MGPU_EFORMAT, "non-empty array");
	T_CHECK(parse("{\"kp\": [[1, 2]]}", kp, &np) == 1 && np == 0,
		"an object without keypoints is metadata");
	T_FAILS(parse("{\"keypoints\": 3}", kp, &np), MGPU_EFORMAT, "\"keypoints\"");
	T_FAILS(parse("[[1, 2], [3]]", kp, &np), MGPU_EFORMAT, "part 1 is not [x, y]");
	T_FAILS(parse("[[1, \"2\"]]", kp, &np), MGPU_EFORMAT, "part 0: string is not a number");
	T_FAILS(parse("[[1, 2], [1, 2], [1, 2], [1, 2], [1, 2]]", kp, &np), MGPU_ERANGE,
		"5 parts, more than 4");
	T_FAILS(parse("[[1e9, 2]]", kp, &np), MGPU_ERANGE, "not a pixel position");
	T_CHECK(np == 0, "a failed parse leaves no parts");
}

static void test_render(void)
{
	float kp[4] = { 8.0f, 4.0f, NAN, NAN }, maps[2 * 4 * 6], w[2];

	/* stride 2: part 0 at map (u 4, v 2) */
	mgpu_keypoints_render(kp, 2, 4, 6, 2, 1.0f, maps, w);
	T_NEAR(maps[2 * 6 + 4], 1.0f, 1e-7);
	T_NEAR(maps[2 * 6 + 5], expf(-0.5f), 1e-7);
	T_NEAR(maps[1 * 6 + 3], expf(-1.0f), 1e-7);
	T_CHECK(w[0] == 1.0f && w[1] == 0.0f, "weights %g %g", w[0], w[1]);
	T_CHECK(maps[24] == 0.0f && maps[47] == 0.0f, "a missing part's map is 0");
}

/* n samples of (1,4,6) uint8 with a target of kind: keypoints (3 parts,
 * part 1 missing in every other sample), a (4,6) mask, a vector of 5. */
static void make_set(struct mgpu_samples *s, int kind, size_t n)
{
	uint32_t shape[3] = { 1, 4, 6 }, kp[2] = { 3, 2 }, mk[2] = { 4, 6 }, vec[1] = { 5 };
	unsigned char row[24], t[24];
	float *f = (float *)(void *)t;
	size_t i, j;

	T_OK(mgpu_samples_init(s, MGPU_DTYPE_U8, 3, shape));
	T_OK(mgpu_samples_set_target(s, kind, kind == MGPU_TARGET_VECTOR ? 1 : 2,
				     kind == MGPU_TARGET_KEYPOINTS ? kp :
				     kind == MGPU_TARGET_MASK ? mk : vec));
	for (i = 0; i < n; i++) {
		for (j = 0; j < 24; j++)
			row[j] = (unsigned char)(i * 7 + j);
		if (kind == MGPU_TARGET_MASK)
			for (j = 0; j < 24; j++)
				t[j] = (unsigned char)((i + j) % 3);
		else
			for (j = 0; j < 6; j++)
				f[j] = kind == MGPU_TARGET_KEYPOINTS && j / 2 == 1 && i % 2 ?
					NAN : (float)i * 1.25f + (float)j / 3.0f;
		T_OK(mgpu_samples_push_t(s, row, (int32_t)(i % 2), t));
	}
}

static int same_target_rows(const unsigned char *a, const unsigned char *b, size_t nbytes,
			    int kind)
{
	const float *fa = (const float *)(const void *)a, *fb = (const float *)(const void *)b;
	size_t i;

	if (kind == MGPU_TARGET_MASK)
		return memcmp(a, b, nbytes) == 0;
	for (i = 0; i < nbytes / 4; i++)
		if (!(fa[i] == fb[i] || (isnan(fa[i]) && isnan(fb[i]))))
			return 0;
	return 1;
}

/* Every kind survives a shard (written, read back) and a cache. */
static void test_roundtrip(void)
{
	static const int kinds[] = { MGPU_TARGET_KEYPOINTS, MGPU_TARGET_MASK, MGPU_TARGET_VECTOR };
	struct mgpu_cache_opts o = { .level = 3, .threads = 1, .chunk_nbytes = 100 };
	struct mgpu_samples a, b, *sp[3];
	struct mgpu_cache_stats st;
	struct mgpu_cache c;
	uint32_t idx[9];
	unsigned char x[9 * 24], t[9 * 24];
	int32_t y[9];
	uint64_t nbytes;
	size_t i, k;

	for (i = 0; i < 9; i++)
		idx[i] = (uint32_t)(8 - i);
	for (k = 0; k < 3; k++) {
		memset(&b, 0, sizeof b);
		make_set(&a, kinds[k], 9);
		T_OK(mgpu_shard_write(tpath("t.tar"), &a, idx, 9, &nbytes, NULL));
		T_OK(mgpu_wds_read(tpath("t.tar"), &b, NULL));
		T_CHECK(b.n == 9 && mgpu_samples_same_target(&a, &b), "%s: shard read back %zu "
			"rows, kind %d", mgpu_target_kind_name(kinds[k]), b.n, b.tkind);
		for (i = 0; b.n == 9 && i < 9; i++)
			T_CHECK(same_target_rows(a.t + idx[i] * a.t_nbytes, b.t + i * b.t_nbytes,
						 a.t_nbytes, kinds[k]), "%s row %zu",
				mgpu_target_kind_name(kinds[k]), i);
		sp[0] = &a, sp[1] = sp[2] = NULL;
		T_OK(mgpu_cache_write(tpath("t.cache"), sp, &o, &st));
		T_OK(mgpu_cache_open(&c, tpath("t.cache")));
		T_CHECK(c.h.version == 2 && c.h.tkind == (uint32_t)kinds[k] &&
			c.h.t_nbytes == a.t_nbytes, "cache header: version %u kind %u",
			c.h.version, c.h.tkind);
		T_OK(mgpu_cache_rows_t(&c, 0, idx, 9, x, y, t));
		for (i = 0; i < 9; i++)
			T_CHECK(y[i] == a.y[idx[i]] && !memcmp(x + i * 24, a.x + idx[i] * 24, 24) &&
				same_target_rows(t + i * a.t_nbytes, a.t + idx[i] * a.t_nbytes,
						 a.t_nbytes, kinds[k]), "%s cache row %zu",
				mgpu_target_kind_name(kinds[k]), i);
		mgpu_cache_close(&c);
		mgpu_samples_free(&a);
		mgpu_samples_free(&b);
	}
}

static void put_le(unsigned char *p, uint64_t v, int n)
{
	int i;

	for (i = 0; i < n; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

/* A cache whose header rewrites its target layout, checksum made good:
 * (tkind, tndim, tshape[0], tshape[1], t_nbytes). Every reader of a row
 * takes keypoints as (P,2) and a mask as the image's (H,W), so a header
 * that says otherwise would send them past each row. */
static void crafted(int kind, uint32_t tndim, uint32_t t0, uint32_t t1, uint64_t nbytes)
{
	struct mgpu_cache_opts o = { .level = 3, .threads = 1, .chunk_nbytes = 100 };
	struct mgpu_samples a, *sp[3] = { &a, NULL, NULL };
	struct mgpu_cache_stats st;
	struct mgpu_cache c;
	unsigned char b[4096];
	FILE *f;

	make_set(&a, kind, 4);
	T_OK(mgpu_cache_write(tpath("x.cache"), sp, &o, &st));
	mgpu_samples_free(&a);
	f = fopen(tpath("x.cache"), "r+b");
	T_CHECK(f && fread(b, 1, sizeof b, f) == sizeof b, "read the header");
	if (!f)
		return;
	put_le(b + MGPU_CACHE_TARGET_OFF + 8, tndim, 4);
	put_le(b + MGPU_CACHE_TARGET_OFF + 12, t0, 4);
	put_le(b + MGPU_CACHE_TARGET_OFF + 16, t1, 4);
	put_le(b + MGPU_CACHE_TARGET_OFF + 32, nbytes, 8);
	put_le(b + 4088, mgpu_xxh64(b, 4088, 0), 8);
	T_CHECK(fseek(f, 0, SEEK_SET) == 0 && fwrite(b, 1, sizeof b, f) == sizeof b,
		"write the header");
	fclose(f);
	T_FAILS(mgpu_cache_open(&c, tpath("x.cache")), MGPU_EFORMAT, "target layout");
}

static void test_crafted_layout(void)
{
	crafted(MGPU_TARGET_KEYPOINTS, 1, 3, 2, 12); /* 3 floats a row, read as 3 (x, y) */
	crafted(MGPU_TARGET_MASK, 2, 2, 6, 12);      /* a 2x6 mask on a 4x6 image */
}

int main(void)
{
	T_RUN(test_forms);
	T_RUN(test_errors);
	T_RUN(test_render);
	if (t_tmpdir_make("target") < 0)
		return 1;
	T_RUN(test_roundtrip);
	T_RUN(test_crafted_layout);
	t_tmpdir_remove();
	return T_DONE();
}
