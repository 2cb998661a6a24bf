/*
 * test_target.c - keypoint JSON (every accepted form, every error) and
 * the confidence maps rendered from it (data/target.h).
 */
#include <math.h>   /* isnan, expf */
#include <string.h> /* strlen */

#include "../t.h"        /* T_RUN, T_CHECK, T_FAILS */
#include "core/err.h"    /* mgpu_errmsg, MGPU_E* */
#include "data/target.h" /* mgpu_keypoints_parse, mgpu_keypoints_render */

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
	T_FAILS(parse("{\"kp\": [[1, 2]]}", kp, &np), MGPU_EFORMAT, "\"keypoints\"");
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

int main(void)
{
	T_RUN(test_forms);
	T_RUN(test_errors);
	T_RUN(test_render);
	return T_DONE();
}
