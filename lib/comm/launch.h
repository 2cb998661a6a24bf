/*
 * launch.h - who this process is in a job, and the launcher that forks a
 * job's ranks.
 *
 * A rank learns its place from the environment: mgpu-train's own launcher
 * (MGPU_LAUNCHED=1 plus the torchrun names), torchrun (RANK, WORLD_SIZE,
 * LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT), Slurm
 * (SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID) or OpenMPI
 * (OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK). No such variables: a job of
 * one. The job token is MGPU_JOB_TOKEN, or else derived from the launcher's
 * job id and the rendezvous address, so ranks of two jobs never mix.
 *
 * Ranks are numbered node by node: node k holds ranks k x local_world ..
 * k x local_world + local_world - 1 (mpirun's and srun's default block
 * placement, and torchrun's); another placement is an error naming it.
 *
 * mgpu_launch_run() forks the ranks, each re-executing this program with
 * those variables set, and supervises them: the first rank that fails makes
 * it stop the others and report that rank. Children die with the launcher
 * (PR_SET_PDEATHSIG), so none outlives it. Across nodes one launcher runs
 * on each node (--nnodes, --node-rank, MASTER_ADDR, MASTER_PORT as
 * torchrun takes them): node 0's listens for the rendezvous on every
 * interface at MASTER_PORT, and the job token is MGPU_JOB_TOKEN or else
 * derived from the address, port and world size, the same on every node.
 */
#ifndef MGPU_COMM_LAUNCH_H
#define MGPU_COMM_LAUNCH_H

#include <signal.h> /* sig_atomic_t */

#include "comm/rdzv.h" /* MGPU_TOKEN_LEN */

enum mgpu_launcher {
	MGPU_LAUNCH_NONE = 0,
	MGPU_LAUNCH_SELF,
	MGPU_LAUNCH_TORCHRUN,
	MGPU_LAUNCH_SLURM,
	MGPU_LAUNCH_OMPI,
};

struct mgpu_rank_env {
	int launcher;          /* enum mgpu_launcher */
	int rank, world;
	int local_rank, local_world;
	int node, nnodes;      /* rank / local_world, world / local_world */
	char addr[256];
	int addr_given;        /* MASTER_ADDR was set (else addr is the loopback) */
	int port;
	char token[MGPU_TOKEN_LEN + 1];
	int listen_fd;         /* rank 0 of a forked job: inherited socket, else -1 */
	const char *ident;     /* the run's identity the rendezvous compares (rdzv.h);
				  NULL: none */
};

/* Exit status of a rank that stopped because another rank failed, so the
 * launcher names the rank that failed first. Before exiting so, a rank of
 * the own launcher reports what it saw (mgpu_launch_report): on a node
 * whose ranks all followed another node's failure, that report (which
 * names the failed node and rank) is the launcher's last word. */
#define MGPU_EXIT_PEER 3
/* Exit status of a rank whose standard output was closed by its reader:
 * the launcher then stops the job quietly (exit 1, no message). */
#define MGPU_EXIT_PIPE 4

const char *mgpu_launcher_name(int launcher);
/* Read the environment; errors name the variable. */
int mgpu_launch_env(struct mgpu_rank_env *e);

struct mgpu_launch_result {
	int status;           /* for the tool: 0, 1 or 130 */
	int quiet;            /* the reader of stdout went away: say nothing */
	int failed_rank;      /* -1 when none */
	int elsewhere;        /* every local rank followed another node's failure:
				 why is the report of one ("node 1 (rank 2) went away: ...") */
	char why[512];        /* "killed by signal 9", "exited with status 1" */
};

/* In a rank of mgpu-train's own launcher: tell it why this rank stops
 * (one line, before exiting with MGPU_EXIT_PEER); elsewhere nothing. */
void mgpu_launch_report(int rank, const char *why);

/* Fork world ranks running argv (re-executing /proc/self/exe); return when
 * all ended. A raised *stop is forwarded to the ranks as SIGINT. */
int mgpu_launch_run(int world, char *const argv[], volatile sig_atomic_t *stop,
		    struct mgpu_launch_result *res);

/* This node's part of a job of nnodes nodes of local ranks each. */
struct mgpu_launch_nodes {
	int nnodes, node_rank;
	char addr[256];        /* MASTER_ADDR: node 0's address */
	int port;              /* MASTER_PORT */
	char token[MGPU_TOKEN_LEN + 1];
};

/* Fill n from --nnodes, --node-rank and the environment (MASTER_ADDR must
 * be set when nnodes > 1; MASTER_PORT defaults to 29500). */
int mgpu_launch_nodes_env(struct mgpu_launch_nodes *n, int nnodes, int node_rank,
			  int local);
/* Fork this node's local ranks of the job of n (ranks node_rank x local ..);
 * the result names ranks by their global number. */
int mgpu_launch_run_nodes(int local, const struct mgpu_launch_nodes *n, char *const argv[],
			  volatile sig_atomic_t *stop, struct mgpu_launch_result *res);

#endif
