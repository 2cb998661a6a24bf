/*
 * plan.h - what `mgpu-bench train` runs: the rows of a sweep (one per
 * configuration, in table order) and the mgpu-train command of each.
 *
 * A row's command is `mgpu-train -q --json --log-every 1 DEVICES
 * [--nnodes K] [--mode M [--sync-backend S]] WORKLOAD [--dtype D] EXTRA`:
 * DEVICES is --cpu-ranks N or --gpus 0,..,N-1 per node, WORKLOAD the
 * caller's defaults (mgpu-bench: --epochs 1 --max-steps 200 --batch-size
 * 64) and EXTRA the caller's words that override them. A --compare run
 * takes the saved row's own command with this mgpu-train in front.
 * Nothing here runs, prints or exits.
 */
#ifndef MGPU_BENCH_PLAN_H
#define MGPU_BENCH_PLAN_H

#include "bench/sweep.h" /* struct mgpu_bench_trow, MGPU_BENCH_CMD */
#include "ops/ops.h"     /* MGPU_PREC_FP16: the dtypes */
#include "train/sync.h"  /* MGPU_SYNC_KINDS: the sync backends */

/* The lists a sweep spans, words as mgpu-train takes them, and the words
 * of every run's command. */
struct mgpu_bench_plan {
	const char *train_bin;         /* mgpu-train, by path */
	const char *const *workload;   /* WORKLOAD above */
	int nworkload;
	char *const *extra;            /* EXTRA above */
	int nextra;
	const int *cpu, *gpu;          /* CPU rank counts, GPU counts (GPUs 0..N-1) */
	int ncpu, ngpu;
	const int *nodes;              /* node counts; a row of k > 1 runs on k hosts */
	int nnodes;
	const char *link_rate;         /* nodes > 1: each host's rate ("100mbit"), or NULL */
	double link_delay_ms;          /* nodes > 1: each host's added delay, or 0 */
	const char *modes[2];          /* "ddp", "dp" */
	int nmodes;
	const char *syncs[MGPU_SYNC_KINDS]; /* "auto", "cpu", "nccl", "mpi" */
	int nsyncs;
	const char *dtypes[MGPU_PREC_FP16 + 1]; /* "fp32", "bf16", "fp16"; none: the workload's */
	int ndtypes;
};

/* The rows of p, at most max (more is an error): device counts per node,
 * then nodes, modes, sync backends and dtypes (the dtypes of one
 * configuration side by side). A configuration that cannot exist is left
 * out: dp runs in one process (one node), mpi runs over several nodes.
 * Each row is labelled (mgpu_bench_label); everything it measures is 0. */
int mgpu_bench_plan_rows(const struct mgpu_bench_plan *p, struct mgpu_bench_trow *rows, int max,
			 int *n);

/* One run's argv: words in store, pointers in args (NULL-terminated). */
struct mgpu_bench_argv {
	char store[8][64];
	char cmd[MGPU_BENCH_CMD]; /* a saved command, split in place */
	char *args[256];
	int n;
};

/* Row r's command (see above; --dtype when r->dtype is set: a row of a
 * sweep over dtypes). */
int mgpu_bench_plan_argv(const struct mgpu_bench_plan *p, const struct mgpu_bench_trow *r,
			 struct mgpu_bench_argv *c);
/* A saved row's own command run again with train_bin; name (the saved
 * file) labels a command that does not split into words. */
int mgpu_bench_plan_rerun_argv(const char *train_bin, const struct mgpu_bench_trow *old,
			       const char *name, struct mgpu_bench_argv *c);

#endif
