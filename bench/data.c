/*
 * data.c - cache decode throughput: every chunk of a cache decoded (and
 * its checksum checked) on one thread, the path mgpu-train's loader takes,
 * against zstd alone decoding the same frames into the same buffer.
 *
 * usage: data CACHE [REPEATS]
 * Prints one TSV row: chunks, data_bytes, stored_bytes, ratio,
 * mgpu_gbps (decoded GB/s per core through mgpu_cache_verify, which checks
 * and decodes each chunk as mgpu_cache_rows does), zstd_gbps (bare
 * ZSTD_decompressDCtx with one reused context, no checksum) and
 * mgpu_vs_zstd; best of REPEATS (default 5) passes.
 */
#include <stdio.h>  /* printf */
#include <stdlib.h> /* atoi, malloc */
#include <zstd.h>   /* ZSTD_decompressDCtx */

#include "core/clock.h" /* mgpu_now_s */
#include "core/err.h"   /* mgpu_errmsg */
#include "data/cache.h" /* mgpu_cache_* */

/* One pass of bare zstd over every chunk; -1 on a decode error. */
static double zstd_pass(const struct mgpu_cache *c, unsigned char *buf, size_t cap)
{
	ZSTD_DCtx *d = ZSTD_createDCtx();
	double t0 = mgpu_now_s();
	uint64_t k;
	size_t r;

	for (k = 0; k < c->h.total_chunks; k++) {
		r = ZSTD_decompressDCtx(d, buf, cap, c->map + c->ix[k].off, c->ix[k].stored_nbytes);
		if (ZSTD_isError(r))
			return -1;
	}
	t0 = mgpu_now_s() - t0;
	ZSTD_freeDCtx(d);
	return t0;
}

int main(int argc, char **argv)
{
	struct mgpu_cache c;
	unsigned char *buf;
	double best_m = 1e30, best_z = 1e30, t, gb;
	size_t n, cap;
	int i, reps = argc > 2 ? atoi(argv[2]) : 5;

	if (argc < 2 || reps < 1) {
		fprintf(stderr, "usage: data CACHE [REPEATS]\n");
		return 2;
	}
	if (mgpu_cache_open(&c, argv[1]) < 0) {
		fprintf(stderr, "data: %s\n", mgpu_errmsg());
		return 1;
	}
	cap = (size_t)c.h.chunk_rows * (c.row_nbytes + 1);
	buf = malloc(cap);
	for (i = 0; i < reps; i++) {
		t = mgpu_now_s();
		if (mgpu_cache_verify(&c, &n) < 0) {
			fprintf(stderr, "data: %s\n", mgpu_errmsg());
			return 1;
		}
		t = mgpu_now_s() - t;
		best_m = t < best_m ? t : best_m;
		if (!(c.h.flags & MGPU_CACHE_RAW)) {
			t = zstd_pass(&c, buf, cap);
			best_z = t >= 0 && t < best_z ? t : best_z;
		}
	}
	gb = (double)c.h.data_nbytes * 1e-9;
	printf("chunks\tdata_bytes\tstored_bytes\tratio\tmgpu_gbps\tzstd_gbps\tmgpu_vs_zstd\n");
	printf("%llu\t%llu\t%llu\t%.3f\t%.3f\t%.3f\t%.3f\n", (unsigned long long)n,
	       (unsigned long long)c.h.data_nbytes, (unsigned long long)c.h.stored_nbytes,
	       (double)c.h.data_nbytes / (double)c.h.stored_nbytes, gb / best_m,
	       best_z < 1e30 ? gb / best_z : 0.0, best_z < 1e30 ? best_z / best_m : 0.0);
	free(buf);
	mgpu_cache_close(&c);
	return 0;
}
