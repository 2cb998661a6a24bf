/*
 * fuzz_ts.c - libFuzzer harness for the UEA/UCR .ts reader: any text gives
 * samples or an error naming "fuzz"; on success every sample is float32 of
 * shape (C, L) with finite values and every label is below the class
 * count (and the names, when there are any, cover it).
 */
#include <math.h>   /* isfinite */
#include <stddef.h> /* size_t */
#include <stdint.h> /* uint8_t */
#include <stdlib.h> /* abort */
#include <string.h> /* strstr */

#include "core/err.h" /* mgpu_errmsg */
#include "data/ts.h"  /* mgpu_ts_parse */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mgpu_samples s;
	const float *x;
	size_t i;

	if (mgpu_ts_parse((const char *)data, size, "fuzz", &s) < 0) {
		if (!strstr(mgpu_errmsg(), "fuzz") || s.x || s.n)
			abort();
		return 0;
	}
	if (s.n == 0 || s.dtype != MGPU_DTYPE_F32 || s.ndim != 2 ||
	    s.d != (size_t)s.shape[0] * s.shape[1] || (s.names && s.nnames != s.classes))
		abort();
	x = (const float *)(const void *)s.x;
	for (i = 0; i < s.n * s.d; i++)
		if (!isfinite(x[i]))
			abort();
	for (i = 0; i < s.n; i++)
		if (s.y[i] < 0 || s.y[i] >= s.classes)
			abort();
	mgpu_samples_free(&s);
	return 0;
}
