/*
 * runner.h - running the rows of `mgpu-bench train`: each row's command
 * (bench/plan.h) R times, on this machine or over network-namespace hosts,
 * folded into the row (bench/sweep.h).
 *
 * A row of k > 1 nodes runs on hosts made once for the sweep
 * (mgpu_bench_runner_hosts, as root; bench/netns.h): one mgpu-train
 * launcher per host with --nnodes k --node-rank i (leaders over TCP), or
 * for sync backend mpi one mpirun on the first host reaching the others
 * through a remote shell into the namespaces. The command kept is node
 * 0's without --node-rank; a failure of another node is the row's when
 * node 0 itself did not fail. GPU rows are sampled through NVML while
 * they run (bench/gpumon.h); a gpt's tokens/s, MFU and memory estimate
 * are filled from its command (bench/lm.h). A run that fails or times out
 * fills the row's error and ends its repeats, never a hang; no launcher
 * of a run outlives it, whether it ends, fails, cannot start every node
 * or is stopped (by stop).
 *
 * Nothing here prints or exits: what the caller may say (progress, a row
 * measured without GPU sampling, a warm-up longer than the runs) comes back
 * through on_run and struct mgpu_bench_said.
 */
#ifndef MGPU_BENCH_RUNNER_H
#define MGPU_BENCH_RUNNER_H

#include <signal.h> /* sig_atomic_t */

#include "bench/netns.h" /* struct mgpu_netns, struct mgpu_netns_cmd */
#include "bench/spawn.h" /* struct mgpu_spawn_bg */
#include "bench/sweep.h" /* struct mgpu_bench_trow */
#include "gpu/gpu.h"     /* struct mgpu_gpu_list */

#define MGPU_BENCH_MAX_REPEAT 100

struct mgpu_bench_runner {
	const char *train_bin;        /* mgpu-train, by path */
	int timeout_s;                /* a run still going after this fails */
	volatile sig_atomic_t *stop;  /* set (by a signal): end the run, run no more; or NULL */
	/* after each run that worked: run k (1-based) of repeats; NULL: none */
	void (*on_run)(void *ctx, const struct mgpu_bench_trow *r, int k, int repeats,
		       double samples_per_s);
	void *ctx;
	/* private: filled as needed */
	struct mgpu_netns hosts;
	int hosts_made;
	char mpirun[4096];            /* its path, once a row needs it */
	unsigned job;                 /* runs over the nodes so far */
	struct mgpu_netns_cmd cmd[MGPU_NETNS_MAX_HOSTS];
	struct mgpu_spawn_bg bg[MGPU_NETNS_MAX_HOSTS];
	struct mgpu_gpu_list gpus;    /* this machine's, listed once */
	int gpus_listed;
	char blas_core[48];           /* "" until asked */
	int blas_threads;
};

/* What a measurement leaves the caller to say (nothing when the row failed). */
struct mgpu_bench_said {
	char unsampled[200];          /* why a GPU row's utilisation was not sampled, or "" */
	int warmup_asked;             /* > 0: the runs were shorter than this warm-up, so
				       * r->warmup_steps was lowered to fit them */
};

/* Make the hosts of the largest node count among rows[0..n) (none when
 * every row runs here), their links shaped as the first node row says,
 * and find mpirun when a node row runs sync backend mpi. */
int mgpu_bench_runner_hosts(struct mgpu_bench_runner *rn, const struct mgpu_bench_trow *rows,
			    int n);
/* Remove the hosts; safe to call again. */
void mgpu_bench_runner_close(struct mgpu_bench_runner *rn);

/* Run args (mgpu-train's argv, NULL-terminated) repeats times for row r,
 * up to MGPU_BENCH_MAX_REPEAT, and fold the runs into it: its dtype and
 * command, throughput over the steps after r->warmup_steps, memory, GPU
 * utilisation, BLAS columns and the gpt columns. A failed run fills
 * r->error; a negative return is a failure to run anything at all. */
int mgpu_bench_measure(struct mgpu_bench_runner *rn, struct mgpu_bench_trow *r, char **args,
		       int repeats, struct mgpu_bench_said *said);

#endif
