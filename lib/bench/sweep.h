/*
 * sweep.h - the results of `mgpu-bench train`: one row per configuration
 * (device count, nodes, mode, sync backend, dtype), built from mgpu-train's
 * JSON Lines, turned into the speedup and memory tables, saved as TSV and
 * read back for --compare.
 *
 * Throughput is measured from mgpu-train's step records after the warm-up
 * steps: every record covers the steps since the previous one
 * (samples_per_s x step_ms of each step), and only records whose window
 * starts at or after the warm-up count. Speedup is against the 1-device
 * row of the same kind (CPU ranks or GPUs) and the same dtype (a bf16 row
 * against the bf16 baseline); efficiency = speedup / devices.
 *
 * Everything here is pure: parse, compute, convert. bench/plan.h says
 * what to run, bench/runner.h runs it, bench/report.h writes the report;
 * the tool prints.
 */
#ifndef MGPU_BENCH_SWEEP_H
#define MGPU_BENCH_SWEEP_H

#include <stddef.h> /* size_t */
#include <stdint.h> /* int64_t */

#include "bench/tab.h" /* struct mgpu_tab */

#define MGPU_BENCH_MAXDEV 64
#define MGPU_BENCH_CMD 4096

/* What one mgpu-train run reported. */
struct mgpu_bench_run {
	double samples_per_s;      /* global samples / s after the warm-up */
	int64_t steps_timed;       /* steps inside the measured windows */
	int64_t steps;             /* steps run in all */
	int64_t warmup_used;       /* steps left out: the warm-up asked for, or fewer
				    * when the run was too short for it (half its steps) */
	double wall_s;             /* the summary's wall time */
	int64_t effective_batch;
	int world;
	char mode[8], sync[8];
	int ndev;
	int64_t peak_bytes[MGPU_BENCH_MAXDEV], rss_bytes[MGPU_BENCH_MAXDEV];
	/* sampled by mgpu-bench itself during the run (bench/gpumon.h); 0: not sampled */
	int ngpumon;
	double gpu_util_pct[MGPU_BENCH_MAXDEV];     /* mean over the busy window; NAN unknown */
	int64_t gpu_mem_used_bytes[MGPU_BENCH_MAXDEV]; /* most in use; -1 unknown */
};

/* Parse mgpu-train --json output (text[0..len)); name labels errors. The
 * first warmup_steps steps are not timed; a run too short to time a step
 * after them has its first half left out instead (run->warmup_used). */
int mgpu_bench_run_parse(const char *text, size_t len, int64_t warmup_steps, const char *name,
			 struct mgpu_bench_run *run);

/* One configuration of the sweep, over its repeats. */
struct mgpu_bench_trow {
	char config[96];           /* "2 CPU ranks (DDP)" */
	char kind[8];              /* "cpu" or "gpu" */
	int devices;               /* in all: nodes x devices per node */
	int nodes;                 /* 1, or namespace hosts (bench/netns.h) */
	char link_rate[32];        /* nodes > 1: each host's rate limit ("100mbit"), or "" */
	double link_delay_ms;      /* nodes > 1: each host's added delay, or 0 */
	char mode[8], sync[8];     /* as asked ("" for auto) or as reported */
	int repeats, warmup_steps;
	int64_t steps;             /* optimizer steps of each run (0 unknown: an old file) */
	double samples_per_s, samples_per_s_min, samples_per_s_max, wall_s;
	double speedup, efficiency; /* filled by mgpu_bench_trows_finish */
	int64_t effective_batch;
	int ndev;
	int64_t peak_bytes[MGPU_BENCH_MAXDEV], rss_bytes[MGPU_BENCH_MAXDEV];
	char error[512];           /* "" when every repeat succeeded */
	char command[MGPU_BENCH_CMD];
	char blas_core[48];        /* OpenBLAS's kernels ("Haswell"); "" unknown */
	int blas_threads;          /* BLAS threads per CPU rank; 0 unknown */
	int ngpumon;               /* devices sampled through NVML; 0: NA (CPU, no NVML) */
	double gpu_util_pct[MGPU_BENCH_MAXDEV];     /* mean over the repeats */
	int64_t gpu_mem_used_bytes[MGPU_BENCH_MAXDEV]; /* most over the repeats */
	/* a gpt workload (bench/lm.h, mgpu_bench_lm_fill); ctx 0: not one, the
	 * rest NAN / -1 / "" */
	int ctx;                   /* tokens per sample */
	double tokens_per_s;       /* samples_per_s x ctx */
	double flops_per_token;    /* 6 N + 12 L T D */
	double peak_flops;         /* of one device; NAN unknown */
	double mfu;                /* tokens_per_s x flops_per_token / (devices x peak) */
	int64_t mem_est_bytes;     /* per device, by hand; -1 unknown */
	char peak_how[200];        /* where peak_flops came from */
	char dtype[8];             /* mgpu-train's --dtype: "fp32" or "bf16"; "" unknown */
};

/* What a label names besides devices, nodes, mode and link (flags). */
#define MGPU_BENCH_LABEL_SYNC 1  /* the sync backend: a sweep over several */
#define MGPU_BENCH_LABEL_DTYPE 2 /* the dtype: a sweep over --dtypes */
/* The row's label: "1 CPU rank", "2 devices (DDP)", "4 devices (DP, nccl)" (sync
 * named with LABEL_SYNC), "2 nodes x 2 CPU ranks (DDP, 100mbit, +5ms)",
 * "1 CPU rank (bf16)" and "2 CPU ranks (DDP, bf16)" (with LABEL_DTYPE). */
void mgpu_bench_label(struct mgpu_bench_trow *r, unsigned show);
/* The value of the last --dtype of an mgpu-train argv (NULL-terminated):
 * "--dtype V", "--dtype=V" or an abbreviation getopt takes ("--dt V");
 * NULL when there is none (mgpu-train's default, fp32). */
const char *mgpu_bench_argv_dtype(const char *const *argv);
/* Whether the tables need a Dtype column: some row ran in another dtype
 * than mgpu-train's default fp32. */
int mgpu_bench_show_dtype(const struct mgpu_bench_trow *rows, int n);
/* Fold the runs of one configuration into r: median throughput and wall time,
 * min/max, the memory of the last run, and of the GPU samples the mean
 * utilisation and the most memory in use over the runs. */
void mgpu_bench_trow_fold(struct mgpu_bench_trow *r, const struct mgpu_bench_run *runs, int n);
/* Speedup and efficiency of every row against the 1-device row of its kind
 * and dtype. */
void mgpu_bench_trows_finish(struct mgpu_bench_trow *rows, int n);

/* The TSV / JSON schema (one column each). */
int mgpu_bench_trows_tab(const struct mgpu_bench_trow *rows, int n, struct mgpu_tab *t);
/* Read rows back from a table in that schema (e.g. a saved TSV). A table
 * saved before the dtype column existed: each row's dtype is its command's
 * (mgpu_bench_argv_dtype, else fp32). */
int mgpu_bench_trows_from_tab(const struct mgpu_tab *t, const char *name,
			      struct mgpu_bench_trow **rows, int *n);
/* The two display tables: "Configuration | Throughput | Training Time |
 * Speedup | Efficiency" (and "Tokens/s | MFU" when a row is a gpt's), and
 * "Devices | Mode | dev 0 | dev 1 | ..." (MiB; "Estimate" first when a row
 * has one, and "Dtype" after Mode when mgpu_bench_show_dtype). */
int mgpu_bench_speedup_tab(const struct mgpu_bench_trow *rows, int n, struct mgpu_tab *t);
int mgpu_bench_memory_tab(const struct mgpu_bench_trow *rows, int n, struct mgpu_tab *t);
/* "Devices | Mode | dev 0 | ..." of mean GPU utilisation (%), for the rows
 * that were sampled (Dtype as above); a table with no rows when none was. */
int mgpu_bench_util_tab(const struct mgpu_bench_trow *rows, int n, struct mgpu_tab *t);

/* A regression found by --compare: the row's label and what got worse. */
struct mgpu_bench_regression {
	char config[96];
	char what[256];
};
/*
 * Compare new rows against old ones (matched by config label): throughput
 * lower by more than tol, peak memory (largest device) higher by more than
 * tol, a row that failed, or an old row with no new one. Fills at most max
 * regressions and sets *n to how many were found.
 */
void mgpu_bench_compare(const struct mgpu_bench_trow *old_rows, int nold,
			const struct mgpu_bench_trow *new_rows, int nnew, double tol,
			struct mgpu_bench_regression *out, int max, int *n);

/* argv as one shell command line (words quoted with '' where needed). */
int mgpu_bench_quote_argv(char *const *argv, char *buf, size_t cap);
/* Split such a command line back into words, in place (quotes removed);
 * at most max words; argv[*argc] = NULL. */
int mgpu_bench_split_command(char *cmd, char **argv, int max, int *argc);

#endif
