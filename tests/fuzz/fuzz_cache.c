/*
 * fuzz_cache.c - libFuzzer harness for the cache reader: the input is
 * written as a cache file, opened, fetched from and verified. Any bytes
 * give data or an error, never an out-of-bounds read of the mapping.
 * The corpus seeds are small valid caches, so mutations reach the chunks.
 */
#include <stddef.h> /* size_t */
#include <stdint.h> /* uint8_t */
#include <stdio.h>  /* FILE, fopen, snprintf */
#include <stdlib.h> /* abort, malloc */
#include <unistd.h> /* getpid, unlink */

#include "data/cache.h" /* mgpu_cache_* */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char path[64];
	struct mgpu_cache c;
	unsigned char *x;
	int32_t y[4];
	uint32_t idx[4];
	size_t n, i;
	FILE *fp;
	int s;

	if (!path[0])
		snprintf(path, sizeof path, "/tmp/fuzz-cache-%ld", (long)getpid());
	fp = fopen(path, "wb");
	if (!fp || fwrite(data, 1, size, fp) != size)
		abort();
	fclose(fp);
	if (mgpu_cache_open(&c, path) == 0) {
		x = malloc(4 * c.row_nbytes + 1);
		for (s = 0; s < MGPU_NSPLITS && x; s++) {
			for (i = 0; i < 4 && c.h.n[s]; i++)
				idx[i] = (uint32_t)((i * 7919) % c.h.n[s]);
			if (c.h.n[s])
				(void)mgpu_cache_rows(&c, s, idx, 4, x, y);
		}
		(void)mgpu_cache_verify(&c, &n);
		free(x);
		mgpu_cache_close(&c);
	}
	unlink(path);
	return 0;
}
