/*
 * fuzz_wds.c - libFuzzer harness for the WebDataset reader (libarchive
 * plus the npy/netpbm/image member parsers and the targets: keypoint JSON,
 * masks, vectors): any archive bytes give samples or an
 * error naming the archive, never a crash, leak or out-of-bounds access.
 */
#include <stddef.h> /* size_t */
#include <stdint.h> /* uint8_t */
#include <stdlib.h> /* abort */
#include <string.h> /* strstr */

#include "core/err.h" /* mgpu_errmsg */
#include "data/wds.h" /* mgpu_wds_read_mem */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mgpu_samples s = { 0 };
	size_t i;

	if (mgpu_wds_read_mem(data, size, "fuzz.tar", &s) < 0) {
		if (!strstr(mgpu_errmsg(), "fuzz.tar"))
			abort();
	} else {
		for (i = 0; i < s.n; i++)
			if (s.y[i] < 0 || s.y[i] >= s.classes || !s.row_nbytes)
				abort();
		/* a target's rows are all there, of the size its shape says */
		if (s.tkind && (!s.t || !s.t_nbytes || (s.tkind == MGPU_TARGET_KEYPOINTS &&
							 s.t_nbytes != (size_t)s.tshape[0] * 8)))
			abort();
	}
	mgpu_samples_free(&s);
	return 0;
}
