/*
 * view.h - what a person at a terminal sees of a run (rank 0 only).
 *
 * Records for scripts (TSV or JSON on stdout or -o) are main.c's; this is
 * the rest: on stderr, when it is a terminal and without -q, a live status
 * line after every step (rate-limited) and a final summary; on stdout,
 * when it is a terminal and no format or -o was asked for, an aligned line
 * per evaluation (only the columns this model has) and the summary in
 * place of the records. The summary says where the checkpoint is and the
 * command that continues the run.
 */
#ifndef MGPU_TOOLS_TRAIN_VIEW_H
#define MGPU_TOOLS_TRAIN_VIEW_H

#include <stdint.h> /* int64_t */
#include <stdio.h>  /* FILE */

#include "core/progress.h" /* struct mgpu_progress */
#include "train/train.h"      /* struct mgpu_record, struct mgpu_step_info */

/* A class's line of the --per-class table, kept until the run ends so the
 * names' column fits the longest. */
struct view_class {
	int id;
	char name[128];
	int64_t samples;
	double acc;
	int on_test;        /* acc is the test split's (else validation's) */
};

struct view {
	const struct mgpu_train_cfg *cfg;
	struct mgpu_spec spec;     /* the model, auto sizes filled in (START) */
	int table;          /* stdout shows eval lines and the summary, not records */
	int records_tty;    /* records go to a terminal (a status line to clear) */
	FILE *sum;          /* where the summary goes; NULL: nowhere */
	char *const *argv;  /* the command line, for the resume command */
	int argc;
	struct mgpu_progress bar;
	int64_t total, per_epoch;  /* steps of the run, and per epoch (START) */
	int64_t first;             /* the step training starts from (START) */
	int gpt;
	/* a gpt's bytes of text per token, per split (1 for bytes; measured
	 * through --tokenizer; 0: unknown, no bits per byte) */
	double bpt[3];
	/* the live status: steps since the last draw */
	double win_loss, rate, t_mark;
	int64_t win_steps, step_mark;
	/* the eval line: the steps' records since the last evaluation */
	double ep_loss, ep_secs;
	int64_t ep_steps, ep_samples, last_step;
	int header_done;
	int class_header_done; /* --per-class lines: their header is out */
	char ckpt[MGPU_PATH_MAX]; /* the last checkpoint written, or "" */
	struct view_class *classes; /* --per-class, table only */
	int nclasses, cap_classes;
};

/* Choose what is shown: format_given (--format or --json), to_file (-o),
 * quiet (-q). */
void view_init(struct view *v, const struct mgpu_train_cfg *cfg, int argc, char *const *argv,
	       int format_given, int to_file, int quiet);
/* Before a record goes out: note it, and show it. Returns 1 when the
 * record is shown in place of the TSV/JSON one (the table), else 0. */
int view_record(struct view *v, const struct mgpu_record *r);
/* After a record went out as TSV/JSON (view_record returned 0): the
 * summary on stderr. */
void view_after(struct view *v, const struct mgpu_record *r);
/* Bits per byte of a gpt's loss of nats per token on split s; NaN when
 * the bytes per token are unknown. */
double view_bpb(const struct view *v, double nats, int s);
/* After the run: the table's per-class accuracy (--per-class), if any;
 * frees what the view holds. */
void view_done(struct view *v);
/* After each step: the live status. */
void view_step(struct view *v, const struct mgpu_step_info *s);
/* After the run stopped at a signal, a checkpoint written: the command
 * that continues it (on the summary's stream). */
void view_interrupted(struct view *v);

#endif
