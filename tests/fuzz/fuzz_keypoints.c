/*
 * fuzz_keypoints.c - libFuzzer harness for keypoint JSON (a WebDataset
 * KEY.json member, data/target.h): any text gives parts, "not a target"
 * (metadata) or an error naming "fuzz.json"; parts are finite positions in
 * range or NaN for a missing part, never more than asked for.
 */
#include <math.h>   /* isnan */
#include <stddef.h> /* size_t */
#include <stdint.h> /* uint8_t */
#include <stdlib.h> /* abort */
#include <string.h> /* strstr */

#include "core/err.h"    /* mgpu_errmsg */
#include "data/target.h" /* mgpu_keypoints_parse, mgpu_keypoints_render */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	float kp[2 * 8 + 2], maps[8 * 3 * 3];
	int np, rc, i;

	kp[16] = kp[17] = 12345.0f; /* a write past maxp parts would change these */
	rc = mgpu_keypoints_parse((const char *)data, size, "fuzz.json", kp, 8, &np);
	if (kp[16] != 12345.0f || kp[17] != 12345.0f)
		abort();
	if (rc < 0) {
		if (!strstr(mgpu_errmsg(), "fuzz.json") || np != 0)
			abort();
		return 0;
	}
	if ((rc == 1 && np != 0) || (rc == 0 && (np < 1 || np > 8)) || rc > 1)
		abort();
	for (i = 0; i < 2 * np; i++)
		if (!isnan(kp[i]) && (kp[i] < -1e6f || kp[i] > 1e6f))
			abort();
	if (np)
		mgpu_keypoints_render(kp, np, 3, 3, 2, 1.0f, maps, NULL);
	return 0;
}
