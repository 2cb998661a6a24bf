/*
 * opts.h - mgpu-train's command line: every option declared once, in the
 * table of opts.c (core/opt.h), which drives parsing, --help, the argv a
 * checkpoint saves, the resume check and the settings -v prints.
 *
 * The options fill a struct train_opts: the trainer's own configuration
 * (struct mgpu_train_cfg) plus what main.c resolves before the run
 * (devices, world, sync backend, global batch).
 */
#ifndef MGPU_TOOLS_TRAIN_OPTS_H
#define MGPU_TOOLS_TRAIN_OPTS_H

#include <stdint.h> /* int64_t */
#include <stdio.h>  /* FILE */

#include "core/opt.h" /* struct mgpu_common_opts, struct mgpu_opt_given */
#include "train/train.h" /* struct mgpu_train_cfg */

struct train_opts {
	struct mgpu_train_cfg cfg;
	struct mgpu_common_opts com;    /* -o, --format, --json, -q, -v, -V, -h */
	int selftest;
	int cpu_ranks;                  /* 0: not given */
	const char *gpus;               /* --gpus as given; NULL: CPU ranks */
	int cpu_fallback;               /* CPU ranks when --gpus finds none; 0: fail */
	int sync;                       /* --sync-backend: 0 auto, else enum mgpu_sync_kind */
	int timeout_s;
	int nnodes, node_rank;          /* this launcher's place: --nnodes, --node-rank */
	int port;                       /* --port (MASTER_PORT); 0: not given */
	int64_t global_batch;           /* 0: not given */
	int batch, accum;               /* --batch-size, --grad-accum-steps */
	int world;                      /* ranks in the job, resolved by main.c */
	int sample;                     /* --sample N bytes after training; 0: none */
	const char *prompt;             /* --prompt; NULL: none */
	double temperature;             /* --temperature; 0: greedy */
	const char *tokenizer;          /* --tokenizer FILE; NULL: none */
	char export_hf[MGPU_OPT_PATH_MAX]; /* --export-hf DIR; "": none */
	char tensorboard[MGPU_OPT_PATH_MAX]; /* --tensorboard DIR; "": SAVE_DIR/tb or none */
	struct mgpu_opt_given given;    /* options given on the command line */
	char resume_note[256];          /* said when training starts, or "" */
	int64_t resume_step;            /* --resume: the checkpoint's step */
};

/* Defaults, then the command line; with --resume, the checkpoint's saved
 * settings between the two (a usage error when the command line changes
 * one a resumed run must keep). --help and --version exit here. */
void train_opts_parse(struct train_opts *o, int argc, char **argv);
/* Whether the option called name was given on the command line. */
int train_opts_given(const struct train_opts *o, const char *name);
/* The settings a checkpoint records, as an argv (free with
 * mgpu_opt_argv_free). */
void train_opts_saved(const struct train_opts *o, struct mgpu_opt_argv *out);
/* The run's identity every rank of a job must share (comm/rdzv.h): the
 * settings a checkpoint saves but --data, the resolved batch split and
 * sync, and the checkpoint's step, one "--name value" line each. */
void train_opts_ident(const struct train_opts *o, char *buf, size_t len);
/* Every setting as resolved, in the --config format (core/conf.h) on f:
 * -v prints it on stderr, --print-config on stdout. */
void train_opts_show(const struct train_opts *o, FILE *f);

#endif
