/*
 * leaders.h - sums between the leaders of the nodes of a job over TCP: the
 * connections the rendezvous kept open (rdzv.h), for jobs that mgpu-train's
 * own launcher, torchrun or Slurm started on several nodes (under mpirun,
 * comm/mpi.h does this).
 *
 * A star around node 0: every other leader sends its whole buffer, node 0
 * adds them to its own in node order, ((b0 + b1) + b2) + ..., and sends the
 * sum back to each. So the sum has the same bits on every node and in every
 * run, which keeps the nodes' weight replicas identical. Node 0 reads each
 * node's buffer whole before answering any: with chunked streams in both
 * directions at once, full socket buffers could block both ends.
 *
 * Failures name the node and its leader's rank: a closed connection
 * (the peer died) is MGPU_EPEER, silence for timeout_ms MGPU_ETIMEOUT.
 * Closing makes the peers fail at once instead of waiting out the timeout.
 */
#ifndef MGPU_COMM_LEADERS_H
#define MGPU_COMM_LEADERS_H

#include <stddef.h> /* size_t */

#include "comm/rdzv.h" /* struct mgpu_rdzv_info, MGPU_MAX_NODES */

struct mgpu_leaders {
	int node, nnodes;
	int local_world;            /* ranks per node: node k's leader is rank k * this */
	int timeout_ms;
	int fd[MGPU_MAX_NODES];     /* node 0: fd[k] to node k; others: fd[0] */
	void *chunk;                /* node 0: where a peer's values arrive */
};

/* Take over the connections of info (which then holds none). */
int mgpu_leaders_open(struct mgpu_leaders *l, struct mgpu_rdzv_info *info, int node,
		      int nnodes, int local_world, int timeout_ms);
/* Sum n values over the nodes' leaders, in place. */
int mgpu_leaders_allreduce_f32(struct mgpu_leaders *l, float *buf, size_t n);
int mgpu_leaders_allreduce_f64(struct mgpu_leaders *l, double *buf, size_t n);
/* Node 0's buf to every leader. */
int mgpu_leaders_bcast_f32(struct mgpu_leaders *l, float *buf, size_t n);
void mgpu_leaders_close(struct mgpu_leaders *l);

#endif
