/*
 * allreduce.h - the all-reduce benchmark, nccl-tests style: one rank's side
 * of a size sweep, for the shared-memory (cpu) and NCCL backends.
 *
 * The caller starts world processes (fork), rank 0 creating an mgpu_shm
 * segment of mgpu_bench_ar_nparams() floats and the others attaching it,
 * and calls mgpu_bench_ar_rank() in each. For every size (bytes, a
 * multiple of 4) a rank fills its buffer with seeded small integers
 * (every sum is exact in float), the ranks meet at a barrier, and the
 * in-place sum all-reduce is timed; iters timed ops follow 3 untimed ones.
 * After the last op each rank counts the elements that differ from the
 * exact sum; the counts are summed over the ranks. Rank 0 reports each
 * size through on_row: the median time per op, algbw = bytes / time and
 * busbw = algbw x 2(n-1)/n. A pending signal (core/cancel.h) ends a
 * rank's sweep before its next op with MGPU_EINTR, and its failure the
 * other ranks' (mgpu_shm_abort).
 *
 * Test hook: corrupt makes the last rank change one element of its result
 * before the check, so the wrong-element count (and the caller's exit
 * status) can be shown to catch a broken backend.
 *
 * The mpi backend is MPI_Allreduce (comm/mpi.h) between processes that
 * mpirun started, each calling mgpu_bench_ar_rank_mpi() after
 * mgpu_mpi_open(); barriers and counts then go through MPI too.
 *
 * The cpu backend is mgpu_shm_allreduce_slots (the sync of mgpu-train's CPU
 * ranks) on each rank's gradient slot. The nccl backend runs
 * ncclAllReduce through comm/nccl.h on device `rank` of the cuda backend,
 * the unique id passed through the segment; it needs a build with NCCL and
 * one GPU per rank. Nothing here prints or exits.
 */
#ifndef MGPU_BENCH_ALLREDUCE_H
#define MGPU_BENCH_ALLREDUCE_H

#include <stddef.h> /* size_t */
#include <stdint.h> /* int64_t */

#include "comm/mpi.h" /* struct mgpu_mpi */
#include "comm/shm.h" /* struct mgpu_shm */

enum mgpu_ar_backend { MGPU_AR_CPU = 0, MGPU_AR_NCCL = 1, MGPU_AR_MPI = 2 };

struct mgpu_bench_ar_row {
	size_t nbytes, count;
	double time_us;             /* median time per op (rank 0's) */
	double algbw_gbps, busbw_gbps;
	int64_t wrong;              /* wrong elements, summed over the ranks */
};

struct mgpu_bench_ar_cfg {
	int backend;                /* enum mgpu_ar_backend */
	const size_t *sizes;        /* bytes, ascending */
	int nsizes;
	int iters;                  /* timed ops per size; 0: 50, or 10 from 16 MiB */
	int corrupt;                /* test hook: see above */
	int (*on_row)(void *ctx, const struct mgpu_bench_ar_row *row); /* rank 0 */
	void *ctx;
};

/* Floats each rank's slot of the segment needs for this sweep. */
size_t mgpu_bench_ar_nparams(const struct mgpu_bench_ar_cfg *c);
/* One rank's side of the sweep; *wrong_total: every wrong element seen. */
int mgpu_bench_ar_rank(struct mgpu_shm *s, const struct mgpu_bench_ar_cfg *c,
		       int64_t *wrong_total);
/* One MPI rank's side of the sweep (every rank of MPI_COMM_WORLD a leader). */
int mgpu_bench_ar_rank_mpi(struct mgpu_mpi *m, const struct mgpu_bench_ar_cfg *c,
			   int64_t *wrong_total);
/* This machine's memcpy bandwidth (GB/s, best of 5 copies of nbytes). */
int mgpu_bench_memcpy_gbps(size_t nbytes, double *gbps);

#endif
