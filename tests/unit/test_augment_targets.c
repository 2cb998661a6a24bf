/*
 * test_augment_targets.c - targets move with their image (data/augment.h,
 * data/loader.h): a keypoint stays on the pixel it marked through crops,
 * flips and rotations; a flip swaps the parts of each symmetry pair; a
 * mask takes the image's pixels (its padding ignored, 255); and a pass
 * through a cache gives every row the same targets and confidence maps
 * whether one rank or two (each half of every global batch) load it, with
 * any prefetch.
 */
#include <math.h>   /* isnan, fabsf, NAN */
#include <stdlib.h> /* malloc, free */
#include <string.h> /* memcmp, memset */

#include "../t.h"         /* T_RUN, T_CHECK, T_OK */
#include "../tmpdir.h"    /* tpath, t_tmpdir_make */
#include "core/err.h"     /* mgpu_errmsg */
#include "core/hash.h"    /* mgpu_hash64 */
#include "data/augment.h" /* mgpu_augment_* */
#include "data/cache.h"   /* mgpu_cache_write */
#include "data/loader.h"  /* mgpu_loader_* */
#include "data/source.h"  /* mgpu_source_* */

enum { H = 20, W = 24, HW = H * W, N = 64, P = 2 };

static const uint32_t shape[3] = { 1, H, W };

static int same_floats(const float *a, const float *b, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!(a[i] == b[i] || (isnan(a[i]) && isnan(b[i]))))
			return 0;
	return 1;
}

/* Row r marks part 0 with a 3x3 bright square away from the border (part 1
 * at the mirror column, unmarked). */
static void marked(size_t r, unsigned char *img, float *kp)
{
	uint64_t h = mgpu_hash64(7, r);
	int x = 6 + (int)(h % (W - 12)), y = 6 + (int)((h >> 20) % (H - 12)), i, j;

	memset(img, 0, HW);
	for (i = -1; i <= 1; i++)
		for (j = -1; j <= 1; j++)
			img[(y + i) * W + x + j] = 200;
	kp[0] = (float)x;
	kp[1] = (float)y;
	kp[2] = (float)(W - 1 - x);
	kp[3] = (float)y;
}

/* Through crop=3, flip and rotate=20 the square's centre and part 0 stay
 * together (within a pixel: the rotation takes the nearest pixel) while
 * the square stays whole inside the image. */
static void test_keypoints_follow(void)
{
	struct mgpu_augment a = { .crop = 3, .flip = 1, .rotate = 20 };
	unsigned char img[N * HW], *sc = malloc(mgpu_augment_scratch_nbytes(HW, 16));
	float kp[N * 4], kp0[N * 4], cx, cy, cnt;
	uint32_t idx[N], kshape[2] = { P, 2 };
	size_t r, i, near = 0, rotated = 0;

	for (r = 0; r < N; r++) {
		marked(r, img + r * HW, kp + r * 4);
		idx[r] = (uint32_t)r;
	}
	memcpy(kp0, kp, sizeof kp);
	mgpu_augment_rows_t(&a, 42, 5, idx, N, img, MGPU_DTYPE_U8, shape, 0.0f,
			    MGPU_TARGET_KEYPOINTS, kshape, kp, 4 * sizeof(float), sc);
	for (r = 0; r < N; r++) {
		rotated += mgpu_augment_angle(&a, 42, 5, (uint32_t)r) != 0.0f;
		if (isnan(kp[r * 4]) || kp[r * 4] < 2.5f || kp[r * 4] > W - 3.5f ||
		    kp[r * 4 + 1] < 2.5f || kp[r * 4 + 1] > H - 3.5f)
			continue; /* near the border: part of the square is cut off */
		for (cx = cy = cnt = 0.0f, i = 0; i < HW; i++)
			if (img[r * HW + i]) {
				cx += (float)(i % W);
				cy += (float)(i / W);
				cnt += 1.0f;
			}
		T_CHECK(cnt >= 7.0f && fabsf(cx / cnt - kp[r * 4]) <= 1.0f &&
				fabsf(cy / cnt - kp[r * 4 + 1]) <= 1.0f,
			"row %zu: square of %g pixels centred at (%g, %g), part 0 at (%g, %g)", r,
			cnt, cx / cnt, cy / cnt, kp[r * 4], kp[r * 4 + 1]);
		near++;
	}
	T_CHECK(near > N / 2 && rotated == N, "%zu rows checked, %zu rotated", near, rotated);
	T_CHECK(memcmp(kp, kp0, sizeof kp) != 0, "nothing moved");
	free(sc);
}

/* A flip alone: parts 0 and 1 sit at mirror columns, so with the pair
 * 0:1 a flipped row's keypoints are exactly the stored ones; without the
 * pair they trade places. */
static void test_flip_pairs(void)
{
	struct mgpu_augment a = { .flip = 1 };
	unsigned char img[N * HW], *sc = malloc(mgpu_augment_scratch_nbytes(HW, 16));
	float kp[N * 4], kp0[N * 4], kq[N * 4];
	uint32_t idx[N], kshape[2] = { P, 2 };
	size_t r, flipped = 0;
	int dy, dx, flip;

	for (r = 0; r < N; r++) {
		marked(r, img + r * HW, kp + r * 4);
		idx[r] = (uint32_t)r;
	}
	memcpy(kp0, kp, sizeof kp);
	memcpy(kq, kp, sizeof kp);
	T_OK(mgpu_augment_parse_pairs("0:1", &a, "--flip-pairs"));
	mgpu_augment_rows_t(&a, 42, 1, idx, N, img, MGPU_DTYPE_U8, shape, 0.0f,
			    MGPU_TARGET_KEYPOINTS, kshape, kp, 16, sc);
	T_OK(mgpu_augment_parse_pairs("none", &a, "--flip-pairs"));
	mgpu_augment_rows_t(&a, 42, 1, idx, N, img, MGPU_DTYPE_U8, shape, 0.0f,
			    MGPU_TARGET_KEYPOINTS, kshape, kq, 16, sc);
	for (r = 0; r < N; r++) {
		mgpu_augment_draw(&a, 42, 1, (uint32_t)r, &dy, &dx, &flip);
		flipped += flip;
		T_CHECK(memcmp(kp + r * 4, kp0 + r * 4, 16) == 0, "row %zu (flip %d): paired parts "
			"moved", r, flip);
		T_CHECK(!flip || (kq[r * 4] == kp0[r * 4 + 2] && kq[r * 4 + 2] == kp0[r * 4]),
			"row %zu: unpaired parts did not trade places", r);
	}
	T_CHECK(flipped > N / 4 && flipped < 3 * N / 4, "%zu of %d rows flipped", flipped, N);
	free(sc);
}

/* A row whose drawn angle is exactly 0 (under rotate=D one in 2^24 is)
 * after a turned row: its keypoints are only cropped and flipped. Once
 * the turned row's angle stayed for it. Row 86315945 of seed 42, epoch 0
 * is such a row (found by trying rows in turn). */
static void test_unturned_after_turned(void)
{
	enum { Z = 86315945 };
	struct mgpu_augment a = { .crop = 2, .flip = 1, .rotate = 30 };
	unsigned char img[2 * HW], *sc = malloc(mgpu_augment_scratch_nbytes(HW, 16));
	uint32_t idx[2] = { 0, Z }, kshape[2] = { P, 2 };
	float kp[8] = { 3, 4, 12, 9, 10, 7, 5, 15 }, want[4];
	int dy, dx, flip, p;

	memset(img, 7, sizeof img);
	T_CHECK(fabsf(mgpu_augment_angle(&a, 42, 0, idx[0])) > 5.0f, "row 0 turned by %g",
		mgpu_augment_angle(&a, 42, 0, idx[0]));
	T_CHECK(mgpu_augment_angle(&a, 42, 0, Z) == 0.0f, "row %d turned by %g", Z,
		mgpu_augment_angle(&a, 42, 0, Z));
	mgpu_augment_draw(&a, 42, 0, Z, &dy, &dx, &flip);
	for (p = 0; p < P; p++) { /* the crop's shift, then the mirror */
		want[2 * p] = kp[4 + 2 * p] - (float)(dx - a.crop);
		want[2 * p + 1] = kp[4 + 2 * p + 1] - (float)(dy - a.crop);
		if (flip)
			want[2 * p] = (float)(W - 1) - want[2 * p];
	}
	T_CHECK(dy != a.crop || dx != a.crop || flip, "row %d is drawn unmoved", Z);
	mgpu_augment_rows_t(&a, 42, 0, idx, 2, img, MGPU_DTYPE_U8, shape, 0.0f,
			    MGPU_TARGET_KEYPOINTS, kshape, kp, 4 * sizeof(float), sc);
	T_CHECK(memcmp(kp + 4, want, sizeof want) == 0, "row %d's keypoints (%g, %g) (%g, %g), "
		"want (%g, %g) (%g, %g)", Z, kp[4], kp[5], kp[6], kp[7], want[0], want[1],
		want[2], want[3]);
	free(sc);
}

/* A mask that equals its image takes the same pixels; padding is 255. */
static void test_mask_follows(void)
{
	struct mgpu_augment a = { .crop = 4, .flip = 1, .rotate = 30 };
	unsigned char img[N * HW], mask[N * HW], *sc = malloc(mgpu_augment_scratch_nbytes(HW, HW));
	uint32_t idx[N], mshape[2] = { H, W };
	size_t i, padded = 0;

	for (i = 0; i < N * HW; i++)
		img[i] = mask[i] = (unsigned char)(1 + mgpu_hash64(3, i) % 9);
	for (i = 0; i < N; i++)
		idx[i] = (uint32_t)i;
	mgpu_augment_rows_t(&a, 42, 2, idx, N, img, MGPU_DTYPE_U8, shape, 0.0f,
			    MGPU_TARGET_MASK, mshape, mask, HW, sc);
	for (i = 0; i < N * HW; i++) {
		padded += mask[i] == 255;
		if (img[i] == 0 ? mask[i] != 255 : mask[i] != img[i]) {
			T_CHECK(0, "pixel %zu: image %d, mask %d", i, img[i], mask[i]);
			break;
		}
	}
	T_CHECK(padded > 0, "no padding at all");
	free(sc);
}

/* float32 rows turn, crop and flip as uint8 ones do (the same pixels; a
 * float row's padding is the pad value given). */
static void test_float_rows(void)
{
	struct mgpu_augment a = { .crop = 2, .flip = 1, .rotate = 40 };
	unsigned char u[N * HW], *sc = malloc(mgpu_augment_scratch_nbytes(HW * 4, 0));
	float *f = malloc(N * HW * sizeof *f);
	uint32_t idx[N];
	size_t i, bad = 0;

	for (i = 0; i < N * HW; i++) {
		u[i] = (unsigned char)(1 + mgpu_hash64(9, i) % 200);
		f[i] = (float)u[i];
	}
	for (i = 0; i < N; i++)
		idx[i] = (uint32_t)i;
	mgpu_augment_rows(&a, 7, 0, idx, N, u, MGPU_DTYPE_U8, shape, 0.0f, sc);
	mgpu_augment_rows(&a, 7, 0, idx, N, f, MGPU_DTYPE_F32, shape, -1.0f, sc);
	for (i = 0; i < N * HW; i++)
		bad += u[i] == 0 ? f[i] != -1.0f : f[i] != (float)u[i];
	T_CHECK(bad == 0, "%zu float pixels differ from the uint8 ones", bad);
	free(f);
	free(sc);
}

/* uint8 rows of an odd size (3x5x5: 75 bytes) move their keypoints as
 * float rows do; the keypoints' scratch lies after the row's bytes, and
 * was once misaligned there (UBSan's alignment check in `make test`). */
static void test_odd_rows(void)
{
	enum { C = 3, S = 5, D = C * S * S };
	static const uint32_t odd[3] = { C, S, S }, ks[2] = { 1, 2 };
	struct mgpu_augment a = { .crop = 1, .flip = 1, .rotate = 30 };
	unsigned char u[N * D], *sc = malloc(mgpu_augment_scratch_nbytes(D * 4, 8));
	float *f = malloc(N * D * sizeof *f), ku[N * 2], kf[N * 2];
	uint32_t idx[N];
	size_t i, bad = 0, moved = 0;

	for (i = 0; i < N * D; i++) {
		u[i] = (unsigned char)(1 + mgpu_hash64(5, i) % 200);
		f[i] = (float)u[i];
	}
	for (i = 0; i < N; i++) {
		idx[i] = (uint32_t)i;
		ku[2 * i] = kf[2 * i] = (float)(i % S);
		ku[2 * i + 1] = kf[2 * i + 1] = (float)(i / S % S);
	}
	mgpu_augment_rows_t(&a, 3, 1, idx, N, u, MGPU_DTYPE_U8, odd, 0.0f, MGPU_TARGET_KEYPOINTS,
			    ks, ku, 8, sc);
	mgpu_augment_rows_t(&a, 3, 1, idx, N, f, MGPU_DTYPE_F32, odd, -1.0f,
			    MGPU_TARGET_KEYPOINTS, ks, kf, 8, sc);
	for (i = 0; i < N * D; i++)
		bad += u[i] == 0 ? f[i] != -1.0f : f[i] != (float)u[i];
	for (i = 0; i < N; i++)
		moved += !isnan(ku[2 * i]) && (ku[2 * i] != (float)(i % S) ||
					      ku[2 * i + 1] != (float)(i / S % S));
	T_CHECK(bad == 0, "%zu float pixels differ from the uint8 ones", bad);
	T_CHECK(same_floats(ku, kf, N * 2), "uint8 and float rows moved their keypoints apart");
	T_CHECK(moved > N / 2, "%zu of %d keypoints moved", moved, N);
	free(f);
	free(sc);
}

/* A cache of N keypoint samples for the loader. */
static void write_cache(struct mgpu_source *src)
{
	struct mgpu_cache_opts o = { .level = 1, .threads = 1, .chunk_nbytes = 4096 };
	struct mgpu_samples s, *sp[3] = { &s, NULL, NULL };
	struct mgpu_cache_stats st;
	uint32_t ks[2] = { P, 2 };
	unsigned char img[HW];
	float kp[4];
	size_t r;

	T_OK(mgpu_samples_init(&s, MGPU_DTYPE_U8, 3, shape));
	T_OK(mgpu_samples_set_target(&s, MGPU_TARGET_KEYPOINTS, 2, ks));
	for (r = 0; r < N; r++) {
		marked(r, img, kp);
		if (r % 5 == 0)
			kp[2] = kp[3] = NAN; /* part 1 missing */
		T_OK(mgpu_samples_push_t(&s, img, 0, kp));
	}
	T_OK(mgpu_cache_write(tpath("kp.cache"), sp, &o, &st));
	mgpu_samples_free(&s);
	T_OK(mgpu_source_open(src, tpath("kp.cache")));
}

/* One pass over rows order[0..n): maps (P h w floats) and keypoints per row. */
static void pass(struct mgpu_source *src, int batch, int prefetch, const uint32_t *order,
		 size_t n, float *maps, float *kp, size_t *mapn)
{
	struct mgpu_augment a = { .crop = 2, .flip = 1, .rotate = 15 };
	struct mgpu_target_opts to = { .sigma = 1.5f, .stride = 2 };
	struct mgpu_target_batch t;
	struct mgpu_loader l;
	const void *x;
	const int32_t *y;
	size_t seen = 0;
	double w;
	int B;

	T_OK(mgpu_augment_parse_pairs("0:1", &a, "--flip-pairs"));
	T_OK(mgpu_loader_create(&l, src, batch, prefetch));
	T_OK(mgpu_loader_augment(&l, &a, 42));
	to.stride = 65;
	T_FAILS(mgpu_loader_targets(&l, &to), MGPU_EINVAL, "output stride 65 (want 1 to 64)");
	to.stride = 2;
	T_OK(mgpu_loader_targets(&l, &to));
	T_OK(mgpu_loader_begin_epoch(&l, MGPU_SPLIT_TRAIN, order, n, 3));
	while (mgpu_loader_next_t(&l, &x, &y, &t, &B, &w) == 0) {
		*mapn = (size_t)t.P * t.h * t.w;
		T_CHECK(t.kind == MGPU_TARGET_KEYPOINTS && t.P == P && t.h == H / 2 && t.w == W / 2,
			"batch targets: kind %d, %d maps of %dx%d", t.kind, t.P, t.h, t.w);
		memcpy(maps + seen * *mapn, t.maps, (size_t)B * *mapn * sizeof *maps);
		memcpy(kp + seen * 4, t.kp, (size_t)B * 4 * sizeof *kp);
		seen += (size_t)B;
	}
	T_CHECK(seen == n, "%zu of %zu rows", seen, n);
	mgpu_loader_free(&l);
}

static void test_world_sizes(void)
{
	enum { G = 16 };
	struct mgpu_source src;
	uint32_t order[N], r0[N / 2], r1[N / 2];
	size_t mn = P * (H / 2) * (W / 2), i, k;
	float *m1 = malloc(N * mn * sizeof *m1), *m2 = malloc(N * mn * sizeof *m2);
	float k1[N * 4], k2[N * 4];

	write_cache(&src);
	if (t_cur_failed)
		return;
	for (i = 0; i < N; i++)
		order[i] = (uint32_t)((i * 29 + 3) % N);
	pass(&src, G, 0, order, N, m1, k1, &mn);
	for (i = 0; i < N; i++) /* rank r takes half r of every global batch */
		(i % G < G / 2 ? r0 : r1)[i / G * (G / 2) + i % (G / 2)] = order[i];
	pass(&src, G / 2, 2, r0, N / 2, m2, k2, &mn);
	pass(&src, G / 2, 1, r1, N / 2, m2 + N / 2 * mn, k2 + N / 2 * 4, &mn);
	for (i = 0; i < N; i++) {
		k = (i % G < G / 2 ? 0 : N / 2) + i / G * (G / 2) + i % (G / 2);
		T_CHECK(same_floats(k1 + i * 4, k2 + k * 4, 4) &&
				same_floats(m1 + i * mn, m2 + k * mn, mn),
			"global row %zu (row %u): targets differ on two ranks", i, order[i]);
	}
	mgpu_source_close(&src);
	free(m1);
	free(m2);
}

/* rotate=D joins crop and flip; pairs parse, print back and refuse
 * what is not a pairing. */
static void test_parse(void)
{
	struct mgpu_augment a = { 0 };
	char buf[64];

	T_OK(mgpu_augment_parse("flip,rotate=10,crop=2", &a, "--augment"));
	mgpu_augment_format(&a, buf, sizeof buf);
	T_CHECK(a.rotate == 10 && strcmp(buf, "crop=2,flip,rotate=10") == 0, "%s", buf);
	T_OK(mgpu_augment_parse("rotate=45", &a, "--augment"));
	T_FAILS(mgpu_augment_parse("rotate=46", &a, "--augment"), MGPU_EINVAL,
		"rotate=D (1 to 45 degrees)");
	T_FAILS(mgpu_augment_parse("rotate=0", &a, "--augment"), MGPU_EINVAL, "'rotate=0'");
	T_OK(mgpu_augment_parse_pairs("1:2,5:3", &a, "--flip-pairs"));
	T_CHECK(a.npairs == 2 && a.mirror[1] == 2 && a.mirror[2] == 1 && a.mirror[3] == 5 &&
			a.mirror[0] == 0, "pairs %d", a.npairs);
	mgpu_augment_format_pairs(&a, buf, sizeof buf);
	T_CHECK(strcmp(buf, "1:2,3:5") == 0, "%s", buf);
	T_OK(mgpu_augment_parse("crop=1", &a, "--augment")); /* keeps the pairs */
	T_CHECK(a.npairs == 2 && a.rotate == 0, "--augment after --flip-pairs");
	T_FAILS(mgpu_augment_parse_pairs("1:1", &a, "--flip-pairs"), MGPU_EINVAL, "'1:1'");
	T_FAILS(mgpu_augment_parse_pairs("1:2,2:3", &a, "--flip-pairs"), MGPU_EINVAL,
		"each in one pair");
	T_FAILS(mgpu_augment_parse_pairs("1:256", &a, "--flip-pairs"), MGPU_EINVAL, "0 to 255");
	T_FAILS(mgpu_augment_parse_pairs("1:2,", &a, "--flip-pairs"), MGPU_EINVAL, "'1:2,'");
	T_FAILS(mgpu_augment_parse_pairs("-1:2", &a, "--flip-pairs"), MGPU_EINVAL, "'-1:2'");
	T_CHECK(a.npairs == 2, "a refused list changed the pairs");
	T_OK(mgpu_augment_parse_pairs("none", &a, "--flip-pairs"));
	mgpu_augment_format_pairs(&a, buf, sizeof buf);
	T_CHECK(a.npairs == 0 && strcmp(buf, "none") == 0, "%s", buf);
}

int main(void)
{
	if (t_tmpdir_make("augtgt") < 0)
		return 1;
	T_RUN(test_parse);
	T_RUN(test_keypoints_follow);
	T_RUN(test_flip_pairs);
	T_RUN(test_unturned_after_turned);
	T_RUN(test_mask_follows);
	T_RUN(test_float_rows);
	T_RUN(test_odd_rows);
	T_RUN(test_world_sizes);
	t_tmpdir_remove();
	return T_DONE();
}
