/*
 * test_nccl_setup.c - what the NCCL sync strategy says when a multi-node
 * set-up fails, testable without a GPU: rank 0 cannot make the unique id
 * when NCCL_SOCKET_IFNAME names no interface of this host (NCCL's
 * bootstrap finds none), and the error names the rank, its node and host
 * and the interface asked for; a rank of a job of several nodes without
 * MASTER_ADDR stops at once instead of knocking at its own loopback until
 * the timeout. In builds without NCCL the same prefix comes before "not in
 * this build".
 */
#include <stdio.h>  /* snprintf */
#include <stdlib.h> /* setenv */
#include <string.h> /* strstr */
#include <unistd.h> /* gethostname */

#include "comm/launch.h" /* struct mgpu_rank_env */
#include "core/clock.h"  /* mgpu_now_ms */
#include "core/err.h"    /* mgpu_errmsg */
#include "train/sync.h"     /* mgpu_sync_open, MGPU_SYNC_NCCL */
#include "t.h"

/* Rank rank of a job of 2 nodes x 1 rank meeting on the loopback. */
static void two_nodes(struct mgpu_rank_env *e, int rank, int addr_given)
{
	memset(e, 0, sizeof *e);
	e->launcher = MGPU_LAUNCH_TORCHRUN;
	e->rank = e->node = rank;
	e->world = e->nnodes = 2;
	e->local_world = 1;
	e->listen_fd = -1;
	e->addr_given = addr_given;
	snprintf(e->addr, sizeof e->addr, "127.0.0.1");
	snprintf(e->token, sizeof e->token, "test-nccl-setup");
}

static void test_no_interface(void)
{
	struct mgpu_rank_env e;
	struct mgpu_sync s;
	char host[64] = "", want[160];
	int rc;

	setenv("NCCL_SOCKET_IFNAME", "mgpu-no-such-if", 1);
	two_nodes(&e, 0, 1);
	gethostname(host, sizeof host - 1);
	snprintf(want, sizeof want, "NCCL set-up of rank 0 on node 0 (host %s, "
		 "NCCL_SOCKET_IFNAME mgpu-no-such-if): ", host);
	rc = mgpu_sync_open(&s, &e, MGPU_SYNC_NCCL, 16, 0, NULL, 2000);
	T_CHECK(rc < 0, "the set-up worked with no interface to use");
	T_CHECK(strncmp(mgpu_errmsg(), want, strlen(want)) == 0, "'%s'", mgpu_errmsg());
	T_CHECK(strstr(mgpu_errmsg(), "no socket interface found") ||
		strstr(mgpu_errmsg(), "not in this build"), "'%s'", mgpu_errmsg());
	unsetenv("NCCL_SOCKET_IFNAME");
}

static void test_no_master_addr(void)
{
	struct mgpu_rank_env e;
	struct mgpu_sync s;
	double t0 = mgpu_now_ms();

	two_nodes(&e, 1, 0);
	T_FAILS(mgpu_sync_open(&s, &e, MGPU_SYNC_NCCL, 16, 0, NULL, 30000), MGPU_EINVAL,
		"the ranks of a job of 2 nodes meet at node 0's address, but MASTER_ADDR is not "
		"set");
	T_CHECK(mgpu_now_ms() - t0 < 5000, "took %.0f ms: waited for the timeout",
		mgpu_now_ms() - t0);
}

int main(void)
{
	T_RUN(test_no_interface);
	T_RUN(test_no_master_addr);
	return T_DONE();
}
