/*
 * cnn_util.h - helpers shared by the conv-net family's unit tests
 * (test_cnn.c, test_unet.c): how far apart two passes' values are, and
 * a spec file written from a string.
 */
#ifndef MGPU_TESTS_CNN_UTIL_H
#define MGPU_TESTS_CNN_UTIL_H

#include <math.h>   /* fabs, fmax */
#include <stddef.h> /* size_t */
#include <stdio.h>  /* FILE, fopen */

/* max |a - b| / max |b| over n values */
static double rel_diff(const float *a, const float *b, size_t n)
{
	double num = 0, den = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		num = fmax(num, fabs((double)a[i] - b[i]));
		den = fmax(den, fabs((double)b[i]));
	}
	return den > 0 ? num / den : num;
}

static int write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return -1;
	fputs(text, f);
	return fclose(f) == 0 ? 0 : -1;
}

#endif
