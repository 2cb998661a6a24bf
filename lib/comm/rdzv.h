/*
 * rdzv.h - TCP rendezvous of the ranks of one job.
 *
 * Rank 0 listens on MASTER_ADDR:MASTER_PORT; every other rank connects and
 * sends a hello (rank, world size, job token, host name). Rank 0 answers
 * each with what the backends need: the shared-memory segment name, the
 * NCCL unique id, and whether every rank so far runs on its host. A hello
 * with the wrong token, a rank out of range or twice, or another world size
 * is refused (the connection gets a refusal and is closed) and rank 0 keeps
 * waiting for the real ranks. Every wait is bounded by timeout_ms.
 */
#ifndef MGPU_COMM_RDZV_H
#define MGPU_COMM_RDZV_H

#include <stdint.h> /* uint8_t */

#define MGPU_TOKEN_LEN 64 /* hex characters, NUL-padded */

struct mgpu_rdzv_info {
	char shm_name[64];
	uint8_t nccl_id[128];
	int single_node;      /* every rank reported rank 0's host name */
};

/* Rank 0: listen on addr:port (port 0: any free port, read back in *port). */
int mgpu_rdzv_listen(const char *addr, int *port, int *fd);
/* Rank 0: accept world - 1 ranks presenting token; refused hellos do not
 * count. info->single_node is filled in. */
int mgpu_rdzv_serve(int listen_fd, int world, const char *token,
		    struct mgpu_rdzv_info *info, int timeout_ms);
/* Ranks 1..world-1: connect (retrying while rank 0 starts) and get info. */
int mgpu_rdzv_join(const char *addr, int port, int rank, int world, const char *token,
		   struct mgpu_rdzv_info *info, int timeout_ms);
/* A random token of 32 hex digits. */
int mgpu_rdzv_new_token(char token[MGPU_TOKEN_LEN + 1]);

#endif
