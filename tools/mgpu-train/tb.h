/*
 * tb.h - mgpu-train's TensorBoard log (--tensorboard DIR, by default
 * SAVE_DIR/tb): rank 0 turns the run's records into event files
 * (core/tfevents.h).
 *
 * At the start, the settings as text (the --config format); per step
 * record train/loss, train/lr, train/samples_per_s (a gpt: also
 * train/tokens_per_s), train/grad_norm (and train/bpb); per evaluation
 * val/loss, val/acc (val/bpb); at the end test/loss, test/acc (test/bpb).
 * The file is flushed at each evaluation, checkpoint and the end.
 */
#ifndef MGPU_TOOLS_TRAIN_TB_H
#define MGPU_TOOLS_TRAIN_TB_H

#include "core/tfevents.h" /* struct mgpu_tb */
#include "train/train.h"      /* struct mgpu_record */
#include "opts.h"          /* struct train_opts */

struct train_tb {
	struct mgpu_tb tb;
	const struct train_opts *o;
	char dir[4200]; /* "": no log */
	double t0;      /* wall clock of the start record */
};

/* Where the log goes for o ("" when nowhere); nothing is opened yet. */
void train_tb_init(struct train_tb *t, const struct train_opts *o);
/* One record of rank 0 (START opens the file). */
int train_tb_record(struct train_tb *t, const struct mgpu_record *r);
/* Flush and close (also after a failure: what was logged stays). */
int train_tb_close(struct train_tb *t);

#endif
