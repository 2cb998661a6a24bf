/*
 * shm.h - the shared-memory segment of the ranks of one node: barriers,
 * small all-reduces, per-bucket readiness, and the big buffers.
 *
 * Layout: a control block, then the shared master weights w (nparams
 * floats), nstate optimizer state vectors (nparams each), then one gradient
 * slot per rank (nparams each). Every buffer is 64-byte aligned.
 *
 * Invariants:
 * - Each rank writes only its own control words (arrival counters, values,
 *   bucket counters); the rest is read-only to it, so no atomic
 *   read-modify-write is needed: stores are release, loads acquire.
 * - Values exchanged at barrier generation g live in bank g % 2: a rank can
 *   only reach barrier g + 2 after everyone has left barrier g + 1, i.e.
 *   after everyone has read bank g % 2.
 * - Waits give up after timeout_ms, notice a dead peer (its pid is gone)
 *   within about 100 ms, and see another rank's abort at once; the error
 *   names the rank.
 * - The same code serves processes (a named POSIX segment) and threads of
 *   one process (an anonymous mapping): mode dp uses the latter.
 */
#ifndef MGPU_COMM_SHM_H
#define MGPU_COMM_SHM_H

#include <stddef.h> /* size_t */
#include <stdint.h> /* uint64_t */

#define MGPU_SHM_MAX_RANKS 64
#define MGPU_SHM_MAX_VALS 16
#define MGPU_SHM_MAX_FLOATS 512 /* per barrier of mgpu_shm_allreduce_f32 */
#define MGPU_SHM_MAX_BUCKETS 64

struct mgpu_shm_ctl;

struct mgpu_shm {
	int rank, world;
	size_t nparams;
	int nstate;
	int timeout_ms;
	void *base;                 /* the mapping */
	size_t nbytes;
	struct mgpu_shm_ctl *ctl;
	float *w;                   /* shared master weights */
	float *state[2];            /* shared optimizer state, or NULL */
	float *g[MGPU_SHM_MAX_RANKS]; /* per-rank gradient slots */
	uint64_t gen;               /* this rank's barrier generation */
	uint64_t bucket_gen[MGPU_SHM_MAX_BUCKETS];
	int owner;                  /* created the mapping */
};

/* Bytes a segment needs. */
size_t mgpu_shm_size(int world, size_t nparams, int nstate);
/* Rank 0: create the named segment (name "/mgpu-..."); O_EXCL. A segment
 * of that name whose creator is gone (killed before it could unlink) is
 * removed first; one whose creator lives is an error naming its pid. */
int mgpu_shm_create(struct mgpu_shm *s, const char *name, int world, size_t nparams,
		    int nstate, int timeout_ms);
/* Other ranks: map the segment rank 0 created. */
int mgpu_shm_attach(struct mgpu_shm *s, const char *name, int rank, int world,
		    size_t nparams, int nstate, int timeout_ms);
/* Threads of one process: an anonymous segment; then mgpu_shm_view per rank. */
int mgpu_shm_create_private(struct mgpu_shm *s, int world, size_t nparams, int nstate,
			    int timeout_ms);
/* A per-thread handle on a private segment, for rank `rank`. */
void mgpu_shm_view(struct mgpu_shm *view, const struct mgpu_shm *owner, int rank);
void mgpu_shm_close(struct mgpu_shm *s);
/* Remove the name (rank 0, once everyone attached: nothing outlives a crash). */
int mgpu_shm_unlink(const char *name);

/* Wait until every rank arrived; with vals: sum n doubles over the ranks
 * (in rank order, so every rank gets the same bits). */
int mgpu_shm_barrier(struct mgpu_shm *s);
int mgpu_shm_allreduce_f64(struct mgpu_shm *s, double *vals, int n);
/* Sum n floats over the ranks in place, MGPU_SHM_MAX_FLOATS per barrier:
 * each element accumulated in double in rank order and rounded once, so
 * every rank gets the same bits (BatchNorm's statistics, --sync-bn). */
int mgpu_shm_allreduce_f32(struct mgpu_shm *s, float *vals, size_t n);
/* Bucket b of this rank's gradient is final / wait until every rank's is. */
void mgpu_shm_bucket_ready(struct mgpu_shm *s, int b);
int mgpu_shm_bucket_wait(struct mgpu_shm *s, int b);
/* 1 when every rank has marked bucket b as often as this rank, without waiting. */
int mgpu_shm_bucket_poll(const struct mgpu_shm *s, int b);
/* All-reduce (sum) of the first n floats of every rank's gradient slot, in
 * place: each rank sums its shard over the slots, then copies the others'
 * shards into its own slot (reduce-scatter + all-gather, as NCCL's ring
 * does, over shared memory). The same bits on every rank. */
int mgpu_shm_allreduce_slots(struct mgpu_shm *s, size_t n);
/* Tell the other ranks this one failed (they stop waiting at once, with
 * MGPU_EPEER, or MGPU_ECLOSED when quiet: its output was closed). */
void mgpu_shm_abort(struct mgpu_shm *s, int quiet);

#endif
