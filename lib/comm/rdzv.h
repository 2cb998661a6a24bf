/*
 * rdzv.h - TCP rendezvous of the ranks of one job.
 *
 * Rank 0 listens on MASTER_ADDR:MASTER_PORT; every other rank connects and
 * sends a hello (rank, world size, ranks per node, job token, host name).
 * A hello with the wrong token, a rank out of range or twice, or another
 * world size is refused at once (the connection gets a refusal and is
 * closed) and rank 0 keeps waiting for the real ranks. Once every rank has
 * joined, rank 0 answers each with what the backends need: the
 * shared-memory segment name, the NCCL unique id, and whether every rank
 * runs on its host. So a rank that has its answer knows that every rank
 * got as far as joining (node leaders create their node's segment first).
 * Every wait is bounded by timeout_ms, and ends with MGPU_EINTR as soon as
 * SIGINT or SIGTERM asks to stop (core/cancel.h).
 *
 * Each hello also carries the rank's run identity: lines "KEY VALUE" (the
 * settings that shape the arithmetic, the data), which the rendezvous
 * compares without knowing what they mean. A rank whose identity differs
 * from rank 0's fails the job at once: rank 0 refuses it and every rank
 * already joined with one message naming the rank, its node and host, and
 * the first differing line, and returns that error itself.
 *
 * In a job of several nodes (local_world < world) the connections of the
 * node leaders (local rank 0 of nodes 1..) stay open after the answer:
 * rank 0 keeps one per node in info->leader_fd[node], each leader its own
 * in info->leader_fd[0]; comm/leaders.h moves gradients over them. Nodes
 * hold ranks node * local_world .. + local_world - 1.
 */
#ifndef MGPU_COMM_RDZV_H
#define MGPU_COMM_RDZV_H

#include <stddef.h> /* size_t */
#include <stdint.h> /* uint8_t */

#define MGPU_TOKEN_LEN 64 /* hex characters, NUL-padded */
#define MGPU_MAX_NODES 256
#define MGPU_IDENT_LEN 2048 /* a run identity, NUL-terminated */

struct mgpu_rdzv_info {
	char shm_name[64];
	uint8_t nccl_id[128];
	int single_node;      /* every rank reported rank 0's host name */
	int nleader_fds;      /* leader_fd[0..nleader_fds) are open (or -1) */
	int leader_fd[MGPU_MAX_NODES]; /* see above */
};

/* Rank 0: listen on addr:port (port 0: any free port, read back in *port). */
int mgpu_rdzv_listen(const char *addr, int *port, int *fd);
/* Rank 0: accept world - 1 ranks presenting token; refused hellos do not
 * count. info->single_node and the leaders' connections are filled in. */
int mgpu_rdzv_serve(int listen_fd, int world, int local_world, const char *token,
		    const char *ident, struct mgpu_rdzv_info *info, int timeout_ms);
/* Ranks 1..world-1: connect (retrying while rank 0 starts) and get info. */
int mgpu_rdzv_join(const char *addr, int port, int rank, int world, int local_world,
		   const char *token, const char *ident, struct mgpu_rdzv_info *info,
		   int timeout_ms);
/* The first line where identities a and b differ, as "KEY: A against B"
 * (KEY is the line's first word) in buf; 0 when they agree, else 1. */
int mgpu_rdzv_ident_differs(const char *a, const char *b, char *buf, size_t len);
/* Close the leaders' connections info holds. */
void mgpu_rdzv_close_leaders(struct mgpu_rdzv_info *info);
/* A random token of 32 hex digits. */
int mgpu_rdzv_new_token(char token[MGPU_TOKEN_LEN + 1]);

#endif
