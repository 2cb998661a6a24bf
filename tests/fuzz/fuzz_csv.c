/*
 * fuzz_csv.c - libFuzzer harness for the CSV reader: any text gives
 * samples or an error naming "fuzz"; on success the sizes are consistent
 * and every label is in range.
 */
#include <stddef.h> /* size_t */
#include <stdint.h> /* uint8_t */
#include <stdlib.h> /* abort */
#include <string.h> /* strstr */

#include "core/err.h" /* mgpu_errmsg */
#include "data/csv.h" /* mgpu_csv_parse */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mgpu_samples s;
	size_t i;

	if (mgpu_csv_parse((const char *)data, size, "fuzz", size % 2 ? "1" : NULL, &s) < 0) {
		if (!strstr(mgpu_errmsg(), "fuzz") || s.x || s.n)
			abort();
		return 0;
	}
	if (s.n == 0 || s.d == 0 || s.dtype != MGPU_DTYPE_F32)
		abort();
	for (i = 0; i < s.n; i++)
		if (s.y[i] < 0 || s.y[i] >= s.classes)
			abort();
	mgpu_samples_free(&s);
	return 0;
}
