/*
 * test_augment.c - unit tests of the seeded crop and flip (data/augment.h)
 * and of the loader that applies it: the text form parses and prints back;
 * every augmented row is its image shifted by the drawn offsets (zero
 * padding) and mirrored when drawn, checked against a plain reference; the
 * draws depend on (seed, epoch, row) only, so the rows a pass yields do not
 * change with the prefetch threads, the batch a row falls in, or the way
 * two ranks split a global batch; only training passes are augmented; rows
 * that are no images are refused.
 */
#include <stdlib.h> /* malloc, free */
#include <string.h> /* memcmp, memcpy, strcmp */

#include "core/err.h"     /* mgpu_errmsg, MGPU_E* */
#include "data/augment.h" /* mgpu_augment_* */
#include "data/cache.h"   /* mgpu_cache_write */
#include "data/loader.h"  /* mgpu_loader_* */
#include "data/source.h"  /* mgpu_source_* */
#include "../t.h"         /* T_RUN, T_CHECK, T_OK, T_FAILS */
#include "../tmpdir.h"    /* tpath, t_tmpdir_make */

enum { C = 2, H = 5, W = 7, D = C * H * W, N = 200, G = 192 /* whole global batches */ };

static void test_parse(void)
{
	struct mgpu_augment a;
	char buf[64];

	T_OK(mgpu_augment_parse("crop=4,flip", &a, "--augment"));
	T_CHECK(a.crop == 4 && a.flip == 1, "crop %d flip %d", a.crop, a.flip);
	mgpu_augment_format(&a, buf, sizeof buf);
	T_CHECK(strcmp(buf, "crop=4,flip") == 0, "%s", buf);
	T_OK(mgpu_augment_parse("flip,crop=2", &a, "--augment"));
	T_CHECK(a.crop == 2 && a.flip == 1, "either order");
	T_OK(mgpu_augment_parse("flip", &a, "--augment"));
	mgpu_augment_format(&a, buf, sizeof buf);
	T_CHECK(a.crop == 0 && strcmp(buf, "flip") == 0, "%s", buf);
	T_OK(mgpu_augment_parse("none", &a, "--augment"));
	mgpu_augment_format(&a, buf, sizeof buf);
	T_CHECK(!mgpu_augment_on(&a) && strcmp(buf, "none") == 0, "%s", buf);
	T_FAILS(mgpu_augment_parse("crop=0", &a, "--augment"), MGPU_EINVAL,
		"--augment: 'crop=0' is not crop=P (1 to 64 pixels)");
	T_FAILS(mgpu_augment_parse("crop=65", &a, "--augment"), MGPU_EINVAL, "'crop=65'");
	T_FAILS(mgpu_augment_parse("crop=4x", &a, "--augment"), MGPU_EINVAL, "'crop=4x'");
	T_FAILS(mgpu_augment_parse("crop=-1", &a, "--augment"), MGPU_EINVAL, "'crop=-1'");
	T_FAILS(mgpu_augment_parse("flip,flip", &a, "--augment"), MGPU_EINVAL, "'flip,flip'");
	T_FAILS(mgpu_augment_parse("rotate", &a, "--augment"), MGPU_EINVAL, "'rotate'");
	T_FAILS(mgpu_augment_parse("", &a, "--augment"), MGPU_EINVAL, "asks for nothing");
	T_FAILS(mgpu_augment_parse("flip,", &a, "--augment"), MGPU_EINVAL, "'flip,'");
}

/* The image of row r: distinct non-zero values, so any shift shows. */
static float px(size_t r, size_t c, size_t i, size_t j)
{
	return (float)(1 + r * 1000 + c * 100 + i * 10 + j);
}

static void image(size_t r, float *x)
{
	size_t c, i, j;

	for (c = 0; c < C; c++)
		for (i = 0; i < H; i++)
			for (j = 0; j < W; j++)
				x[(c * H + i) * W + j] = px(r, c, i, j);
}

/* What row r must become: the reference, written from the definition. */
static void expect_row(size_t r, int P, int dy, int dx, int flip, float pad, float *out)
{
	long c, i, j, si, sj;

	for (c = 0; c < C; c++)
		for (i = 0; i < H; i++)
			for (j = 0; j < W; j++) {
				/* pad by P, cut the window at (dy, dx), then mirror */
				si = i + dy;
				sj = (flip ? W - 1 - j : j) + dx;
				out[(c * H + i) * W + j] =
					si < P || si >= H + P || sj < P || sj >= W + P ?
					pad : px((size_t)r, (size_t)c, (size_t)(si - P),
						 (size_t)(sj - P));
			}
}

static void test_rows_match_reference(void)
{
	static const uint32_t shape[3] = { C, H, W };
	struct mgpu_augment a = { .crop = 3, .flip = 1 };
	float x[D], want[D], scratch[D];
	int dy, dx, flip, hist[7] = { 0 }, flips = 0, k;
	uint32_t r;
	size_t bad = 0;

	for (r = 0; r < 2000; r++) {
		image(r, x);
		mgpu_augment_rows(&a, 42, 5, &r, 1, x, MGPU_DTYPE_F32, shape, -9.0f, scratch);
		mgpu_augment_draw(&a, 42, 5, r, &dy, &dx, &flip);
		T_CHECK(dy >= 0 && dy <= 6 && dx >= 0 && dx <= 6, "offsets %d %d", dy, dx);
		hist[dy]++;
		flips += flip;
		expect_row(r, 3, dy, dx, flip, -9.0f, want);
		bad += memcmp(x, want, sizeof x) != 0;
	}
	T_CHECK(bad == 0, "%zu rows differ from the reference", bad);
	/* 2000 fair draws: each offset ~286 times, ~1000 flips */
	for (k = 0; k < 7; k++)
		T_CHECK(hist[k] > 200 && hist[k] < 380, "offset %d drawn %d times", k, hist[k]);
	T_CHECK(flips > 900 && flips < 1100, "%d flips of 2000", flips);
}

static void test_u8_and_draws(void)
{
	static const uint32_t shape[3] = { 1, 4, 4 };
	struct mgpu_augment a = { .crop = 2 }, f = { .flip = 1 };
	unsigned char x[16], y[16], scratch[16];
	int dy, dx, flip, dy2, dx2, flip2, same = 0, i;
	uint32_t r;

	for (i = 0; i < 16; i++)
		x[i] = (unsigned char)(i + 1);
	/* draws are a function of (seed, epoch, row): again the same, another
	 * epoch or seed mostly not */
	for (r = 0; r < 100; r++) {
		mgpu_augment_draw(&a, 7, 1, r, &dy, &dx, &flip);
		mgpu_augment_draw(&a, 7, 1, r, &dy2, &dx2, &flip2);
		T_CHECK(dy == dy2 && dx == dx2 && flip == 0, "row %u drew twice differently", r);
		mgpu_augment_draw(&a, 7, 2, r, &dy2, &dx2, &flip2);
		same += dy == dy2 && dx == dx2;
	}
	T_CHECK(same < 30, "%d of 100 rows drew the same in the next epoch", same);
	/* uint8: padding is 0 */
	for (r = 0; r < 50; r++) {
		memcpy(y, x, 16);
		mgpu_augment_rows(&a, 7, 1, &r, 1, y, MGPU_DTYPE_U8, shape, 99.0f, scratch);
		mgpu_augment_draw(&a, 7, 1, r, &dy, &dx, &flip);
		for (i = 0; i < 16; i++) {
			int si = i / 4 + dy - 2, sj = i % 4 + dx - 2;
			int w = si >= 0 && si < 4 && sj >= 0 && sj < 4 ? x[si * 4 + sj] : 0;
			T_CHECK(y[i] == w, "row %u pixel %d: %d, want %d", r, i, y[i], w);
		}
	}
	/* flip alone: each row as it is or mirrored */
	for (r = 0; r < 20; r++) {
		memcpy(y, x, 16);
		mgpu_augment_rows(&f, 7, 1, &r, 1, y, MGPU_DTYPE_U8, shape, 0, scratch);
		mgpu_augment_draw(&f, 7, 1, r, &dy, &dx, &flip);
		for (i = 0; i < 16; i++)
			T_CHECK(y[i] == x[flip ? i / 4 * 4 + 3 - i % 4 : i], "flip row %u", r);
	}
}

/* A float32 cache of N images (C,H,W) and a source over it. */
static void open_source(struct mgpu_source *s)
{
	static const uint32_t shape[3] = { C, H, W };
	struct mgpu_samples set, *p[3] = { &set, NULL, &set };
	struct mgpu_cache_opts o = { .level = 1, .threads = 1, .chunk_nbytes = 4096 };
	struct mgpu_cache_stats st;
	float x[D];
	size_t r;

	T_OK(mgpu_samples_init(&set, MGPU_DTYPE_F32, 3, shape));
	for (r = 0; r < N; r++) {
		image(r, x);
		T_OK(mgpu_samples_push(&set, x, (int32_t)(r % 3)));
	}
	T_OK(mgpu_cache_write(tpath("aug.cache"), p, &o, &st));
	mgpu_samples_free(&set);
	T_OK(mgpu_source_open(s, tpath("aug.cache")));
}

/* The rows a pass over order[0..n) yields, in order, into out (n rows). */
static void pass(struct mgpu_source *s, const struct mgpu_augment *a, int batch, int prefetch,
		 int split, const uint32_t *order, size_t n, int64_t epoch, float *out)
{
	struct mgpu_loader l;
	const void *x;
	const int32_t *y;
	double w;
	size_t seen = 0;
	int B;

	T_OK(mgpu_loader_create(&l, s, batch, prefetch));
	T_OK(mgpu_loader_augment(&l, a, 42));
	T_OK(mgpu_loader_begin_epoch(&l, split, order, n, epoch));
	while (mgpu_loader_next(&l, &x, &y, &B, &w) == 0) {
		memcpy(out + seen * D, x, (size_t)B * D * sizeof *out);
		seen += (size_t)B;
	}
	T_CHECK(seen == n, "%zu of %zu rows", seen, n);
	mgpu_loader_free(&l);
}

static void test_loader(void)
{
	struct mgpu_augment a = { .crop = 2, .flip = 1 };
	struct mgpu_source s;
	uint32_t order[N], rank0[G / 2], rank1[G / 2];
	float *one = malloc(N * D * sizeof *one), *other = malloc(N * D * sizeof *other);
	float *ranks = malloc(N * D * sizeof *ranks), *plain = malloc(N * D * sizeof *plain);
	size_t i, changed = 0;

	open_source(&s);
	for (i = 0; i < N; i++)
		order[i] = (uint32_t)((i * 37 + 11) % N);
	pass(&s, &a, 16, 0, MGPU_SPLIT_TRAIN, order, N, 3, one);
	/* prefetch threads and batch sizes change nothing */
	pass(&s, &a, 16, 3, MGPU_SPLIT_TRAIN, order, N, 3, other);
	T_CHECK(memcmp(one, other, N * D * sizeof *one) == 0, "prefetch 3 gave other rows");
	pass(&s, &a, 7, 2, MGPU_SPLIT_TRAIN, order, N, 3, other);
	T_CHECK(memcmp(one, other, N * D * sizeof *one) == 0, "batch 7 gave other rows");
	/* two ranks, each half of every global batch of 16 (as the trainer
	 * splits it): together the rows of the one-rank pass */
	for (i = 0; i < G; i++)
		(i % 16 < 8 ? rank0 : rank1)[i / 16 * 8 + i % 8] = order[i];
	pass(&s, &a, 8, 1, MGPU_SPLIT_TRAIN, rank0, G / 2, 3, ranks);
	pass(&s, &a, 8, 2, MGPU_SPLIT_TRAIN, rank1, G / 2, 3, ranks + G / 2 * D);
	for (i = 0; i < G; i++) {
		const float *r = ranks + ((i % 16 < 8 ? 0 : G / 2) + i / 16 * 8 + i % 8) * D;
		T_CHECK(memcmp(one + i * D, r, D * sizeof *r) == 0, "global row %zu differs on "
			"two ranks", i);
	}
	/* without augmentation, or on the test split: the rows as stored */
	pass(&s, NULL, 16, 0, MGPU_SPLIT_TRAIN, order, N, 3, plain);
	pass(&s, &a, 16, 2, MGPU_SPLIT_TEST, order, N, 3, other);
	T_CHECK(memcmp(plain, other, N * D * sizeof *one) == 0, "the test split was augmented");
	for (i = 0; i < N; i++)
		changed += memcmp(plain + i * D, one + i * D, D * sizeof *one) != 0;
	T_CHECK(changed > N * 3 / 4, "only %zu of %d rows augmented", changed, N);
	/* another epoch draws again */
	pass(&s, &a, 16, 0, MGPU_SPLIT_TRAIN, order, N, 4, other);
	T_CHECK(memcmp(one, other, N * D * sizeof *one) != 0, "epoch 4 = epoch 3");
	mgpu_source_close(&s);
	free(one);
	free(other);
	free(ranks);
	free(plain);
}

static void test_refused(void)
{
	struct mgpu_augment a = { .crop = 2 };
	static const uint32_t flat[1] = { 784 }, series[2] = { 6, 100 };

	T_FAILS(mgpu_augment_check(&a, 1, flat, "d.csv"), MGPU_EINVAL,
		"'d.csv': --augment crops and flips images (CxHxW), but its samples are 784");
	T_FAILS(mgpu_augment_check(&a, 2, series, "bm"), MGPU_EINVAL, "samples are 6x100");
	a.crop = 0;
	T_OK(mgpu_augment_check(&a, 1, flat, "off: anything goes"));
}

int main(void)
{
	if (t_tmpdir_make("augment") < 0)
		return 1;
	T_RUN(test_parse);
	T_RUN(test_rows_match_reference);
	T_RUN(test_u8_and_draws);
	T_RUN(test_loader);
	T_RUN(test_refused);
	t_tmpdir_remove();
	return T_DONE();
}
