/*
 * t.h - the tiny test harness of the C test binaries.
 *
 * A test is `static void test_x(void)`; main() calls T_RUN(test_x) for each
 * and returns T_DONE(). Each test prints one line, "PASS name", "FAIL name:
 * why" or "SKIP name: why", which tests/run.sh counts; the exit status is
 * non-zero when any check failed, so a binary alone is a verdict too.
 */
#ifndef MGPU_TESTS_T_H
#define MGPU_TESTS_T_H

#include <math.h>   /* fabs */
#include <stdio.h>  /* printf */
#include <string.h> /* strstr */

static int t_failed_total, t_cur_failed, t_cur_skipped;
static char t_skip_why[256];

#define T_CHECK(cond, ...)                                                   \
	do {                                                                 \
		if (!(cond)) {                                               \
			if (!t_cur_failed)                                   \
				printf("FAIL %s: ", t_cur_name);             \
			else                                                 \
				printf("  also: ");                          \
			printf("%s:%d: %s: ", __FILE__, __LINE__, #cond);     \
			printf(__VA_ARGS__);                                 \
			printf("\n");                                        \
			t_cur_failed++;                                      \
		}                                                            \
	} while (0)

/* A library call that must succeed; mgpu_errmsg() says why when not. */
#define T_OK(expr) T_CHECK((expr) == 0, "%s", mgpu_errmsg())

/* A library call that must fail with code and a message containing sub. */
#define T_FAILS(expr, code, sub)                                              \
	do {                                                                  \
		int t_rc_ = (expr);                                           \
		T_CHECK(t_rc_ == (code), "rc %d, want %d (%s)", t_rc_, (code), \
			mgpu_errmsg());                                       \
		T_CHECK(strstr(mgpu_errmsg(), (sub)) != NULL,                 \
			"message '%s' lacks '%s'", mgpu_errmsg(), (sub));      \
	} while (0)

#define T_NEAR(a, b, tol)                                                     \
	T_CHECK(fabs((double)(a) - (double)(b)) <= (tol), "%.9g vs %.9g (tol %g)", \
		(double)(a), (double)(b), (double)(tol))

#define T_SKIP(...)                                                       \
	do {                                                              \
		snprintf(t_skip_why, sizeof t_skip_why, __VA_ARGS__);     \
		t_cur_skipped = 1;                                        \
		return;                                                   \
	} while (0)

static const char *t_cur_name = "";

#define T_RUN(fn)                                                     \
	do {                                                          \
		t_cur_name = #fn;                                     \
		t_cur_failed = 0;                                     \
		t_cur_skipped = 0;                                    \
		fn();                                                 \
		if (t_cur_failed)                                     \
			t_failed_total++;                             \
		else if (t_cur_skipped)                               \
			printf("SKIP %s: %s\n", #fn, t_skip_why);     \
		else                                                  \
			printf("PASS %s\n", #fn);                     \
		fflush(stdout);                                       \
	} while (0)

#define T_DONE() (t_failed_total ? 1 : 0)

#endif
