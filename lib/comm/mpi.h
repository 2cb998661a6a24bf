/*
 * mpi.h - the bytes mgpu moves over MPI: between the leaders of the nodes
 * of a job started by mpirun (or srun with PMIx), and between every rank
 * of `mgpu-bench allreduce --backends mpi`.
 *
 * mgpu_mpi_open() initialises MPI once per process (MPI_THREAD_FUNNELED:
 * only the thread that opened it calls MPI) and splits MPI_COMM_WORLD: the
 * ranks that open with leader = 1 form the leaders' communicator, ordered
 * by their world rank; the others only take part in world barriers and in
 * the final MPI_Finalize. Every rank of the job must open and close.
 *
 * Sums are MPI_Iallreduce(MPI_SUM) in place, waited for at once or (the
 * gradient buckets) started as backward produces them and waited for
 * after it. Open MPI's all-reduce
 * algorithms combine each element once (ring) or pairwise in the same
 * pairs on every rank (recursive doubling), so every leader gets the same
 * bits, which keeps the weight replicas of the nodes identical.
 *
 * Waits poll a non-blocking operation and give up after timeout_ms with
 * MGPU_ETIMEOUT, so a stopped peer fails the job instead of hanging it (a
 * peer that dies makes mpirun end the job). Builds without MPI: every
 * function fails with MGPU_EUNSUP, and mgpu_mpi_in_build() says 0.
 */
#ifndef MGPU_COMM_MPI_H
#define MGPU_COMM_MPI_H

#include <stddef.h> /* size_t */

struct mgpu_mpi;

/* 1 when this build has MPI. */
int mgpu_mpi_in_build(void);
/* The MPI library's version line ("Open MPI v4.1.4, ..."), or "". */
const char *mgpu_mpi_version(void);
/* Join the job; *out is freed by mgpu_mpi_close. timeout_ms bounds waits. */
int mgpu_mpi_open(struct mgpu_mpi **out, int leader, int timeout_ms);
/* This rank's place in MPI_COMM_WORLD, and in the leaders' communicator
 * (-1 when not a leader). */
int mgpu_mpi_world_rank(const struct mgpu_mpi *m);
int mgpu_mpi_world_size(const struct mgpu_mpi *m);
int mgpu_mpi_leader_rank(const struct mgpu_mpi *m);
int mgpu_mpi_leader_count(const struct mgpu_mpi *m);
/* Every rank of the job. */
int mgpu_mpi_barrier(struct mgpu_mpi *m);
/* Leaders only: sum in place over the leaders. */
int mgpu_mpi_allreduce_f32(struct mgpu_mpi *m, float *buf, size_t n);
int mgpu_mpi_allreduce_f64(struct mgpu_mpi *m, double *buf, size_t n);
/* Leaders only: start summing buf in place over the leaders and return;
 * buf must stay untouched until mgpu_mpi_wait_all. Sums started on every
 * leader in the same order pair up; they progress in mgpu_mpi_progress
 * (which never blocks) and in any wait. */
int mgpu_mpi_iallreduce_f32(struct mgpu_mpi *m, float *buf, size_t n);
int mgpu_mpi_progress(struct mgpu_mpi *m);
/* Wait (up to the timeout) for every sum started. */
int mgpu_mpi_wait_all(struct mgpu_mpi *m);
/* Leaders only: the first leader's buf to every leader. */
int mgpu_mpi_bcast_f32(struct mgpu_mpi *m, float *buf, size_t n);
/* Every rank of the job: compare this rank's run identity (comm/rdzv.h)
 * with rank 0's, as the TCP rendezvous does; MGPU_EINVAL on every rank
 * when one differs, with one message naming the first such rank, its node
 * (rank / local_world) and host, and the first differing line. */
int mgpu_mpi_same_ident(struct mgpu_mpi *m, const char *ident, int local_world);
/* A failure elsewhere: end the whole job now (MPI_Abort), with code. */
void mgpu_mpi_abort(struct mgpu_mpi *m, int code);
/* Leave the job (MPI_Finalize after a world barrier). */
void mgpu_mpi_close(struct mgpu_mpi *m);

#endif
