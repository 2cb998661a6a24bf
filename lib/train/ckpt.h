/*
 * ckpt.h - checkpoints: a directory per save, made whole before it appears.
 *
 * SAVE_DIR/step-NNNNNNNN/ holds model.safetensors (weights, and a cnn's
 * BatchNorm running statistics, rank 0's, as torch names them; loadable by
 * safetensors.torch.load_file), optim.safetensors (optimizer state under
 * "<param>.momentum" or "<param>.exp_avg"/"<param>.exp_avg_sq") and
 * state.json (step, epoch, position in the epoch, seeds, world size, data
 * normalisation and the resolved options as an argv array). The directory is written under
 * a temporary name, every file fsynced, then renamed; SAVE_DIR/latest names
 * the newest one and is itself replaced atomically. A crash at any point
 * leaves the previous latest checkpoint intact.
 */
#ifndef MGPU_TRAIN_CKPT_H
#define MGPU_TRAIN_CKPT_H

#include <stddef.h> /* size_t */
#include <stdint.h> /* int64_t, uint64_t */

#include "model/model.h" /* struct mgpu_model */
#include "train/optim.h" /* struct mgpu_optim */

#define MGPU_CKPT_PATH 4200

struct mgpu_ckpt_state {
	int64_t step;       /* optimizer steps done */
	int epoch;          /* 0-based epoch of the next step */
	int64_t epoch_pos;  /* steps of that epoch already done */
	int64_t optim_t;
	uint64_t seed;
	int world_size;
	int64_t global_batch; /* samples per optimizer step when saved */
	double norm_scale, norm_shift;
	char spec[MGPU_SPEC_TEXT_MAX];
	/* --dtype fp16: the loss scale (0: none saved), clean steps since it
	 * last changed, steps skipped so far */
	double loss_scale;
	int64_t loss_scale_clean, skipped_steps;
	/* class names (labels that were words), or NULL: saved as state.json's
	 * "classes" and model.safetensors' metadata "mgpu_classes" (a JSON
	 * list); not read back */
	char *const *names;
	int nnames;
};

/*
 * The save directory of a run, held from before training to its end:
 * created when missing, and locked so that a second run cannot interleave
 * its checkpoints (flock on SAVE_DIR/lock, which holds the holder's pid;
 * the lock dies with the process, so a killed run leaves none behind).
 * Closing unlocks, removes the lock file, and removes the directories the
 * open created when nothing was saved in them.
 */
struct mgpu_ckpt_dir {
	char path[MGPU_CKPT_PATH];  /* "" : not open */
	size_t made;                /* see mgpu_mkdirs_made */
	int fd;                     /* of the lock file */
};

/* Open save_dir for this run: MGPU_EIO when it cannot be created or
 * written, or another process holds it (the message names its pid). */
int mgpu_ckpt_dir_open(struct mgpu_ckpt_dir *d, const char *save_dir);
/* Safe on a zeroed or failed one. */
void mgpu_ckpt_dir_close(struct mgpu_ckpt_dir *d);

/* Write a checkpoint and point latest at it; keep the newest `keep` ones
 * (0 keeps all). out_dir receives the checkpoint's directory. */
int mgpu_ckpt_save(const char *save_dir, int keep, const struct mgpu_ckpt_state *st,
		   struct mgpu_model *m, struct mgpu_optim *o, const char *const *argv,
		   int argc, char *out_dir, size_t out_len);
/* A save dir (follows latest) or a checkpoint dir -> the checkpoint dir. */
int mgpu_ckpt_resolve(const char *path, char *dir, size_t len);
/* Read state.json; when argv is not NULL it receives the saved options
 * (malloc'ed, free with mgpu_ckpt_free_argv). */
int mgpu_ckpt_load_state(const char *dir, struct mgpu_ckpt_state *st, char ***argv,
			 int *argc);
void mgpu_ckpt_free_argv(char **argv, int argc);
/* Load weights and optimizer state into a model built from st.spec. */
int mgpu_ckpt_load_tensors(const char *dir, struct mgpu_model *m, struct mgpu_optim *o);

#endif
