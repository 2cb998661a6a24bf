/*
 * fuzz_csv.c - libFuzzer harness for the CSV reader: any text gives
 * samples or an error naming "fuzz"; on success the sizes are consistent
 * and every label is in range. The input's length picks the selectors: a
 * label column by index or by name, and target columns (mgpu-shard
 * --target-columns) by name, by index, or none; targets, when asked for,
 * are finite and one per named column.
 */
#include <math.h>   /* isfinite */
#include <stddef.h> /* size_t */
#include <stdint.h> /* uint8_t */
#include <stdlib.h> /* abort */
#include <string.h> /* strstr */

#include "core/err.h" /* mgpu_errmsg */
#include "data/csv.h" /* mgpu_csv_parse_t */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const targets[] = { NULL, "y", "2,0", "a,b", "1" };
	const char *tsel = targets[(size / 2) % 5];
	struct mgpu_samples s;
	const float *t;
	size_t i;

	if (mgpu_csv_parse_t((const char *)data, size, "fuzz", size % 2 ? "1" : NULL, tsel,
			     &s) < 0) {
		if (!strstr(mgpu_errmsg(), "fuzz") || s.x || s.n || s.t)
			abort();
		return 0;
	}
	if (s.n == 0 || s.d == 0 || s.dtype != MGPU_DTYPE_F32)
		abort();
	for (i = 0; i < s.n; i++)
		if (s.y[i] < 0 || s.y[i] >= s.classes)
			abort();
	if (!tsel != !s.tkind || (s.tkind && (s.tkind != MGPU_TARGET_VECTOR || !s.t ||
					      s.t_nbytes != s.tshape[0] * sizeof(float))))
		abort();
	t = (const float *)(const void *)s.t;
	for (i = 0; s.tkind && i < s.n * s.tshape[0]; i++)
		if (!isfinite(t[i]))
			abort();
	mgpu_samples_free(&s);
	return 0;
}
