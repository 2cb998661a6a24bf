/*
 * arch.h - model families as a table, as sync strategies (sync_int.h) and
 * op backends (ops.h) are: one struct mgpu_arch per family, defined in the
 * family's own file (mlp.c, gpt.c), one line in the table of arch.c, its
 * index the spec's kind (enum mgpu_model_kind, spec.h).
 *
 * model.c and spec.c reach a family only through this table: the common
 * parts (flat parameters and gradients, buckets, statistics, upload
 * buffers, precision) live in struct mgpu_model (model.h), the family's
 * own state behind m->fam. A new family is: its file defining a struct
 * mgpu_arch, one enum value and one table line, its spec grammar (parse,
 * format, fit), and its tests.
 *
 * Every hook is required unless its comment says NULL is allowed.
 */
#ifndef MGPU_MODEL_ARCH_H
#define MGPU_MODEL_ARCH_H

#include <stddef.h> /* size_t */
#include <stdint.h> /* int32_t, uint32_t, uint64_t */

#include "model/spec.h" /* struct mgpu_spec, struct mgpu_data_desc */

struct mgpu_model;    /* model/model.h */
struct mgpu_batch_in; /* model/model.h */

/* What the rest of mgpu may ask about a family instead of naming it. */
enum mgpu_arch_flags {
	/* A language model: samples are token ids (bytes or ids), loss per
	 * token (bits per byte), rates in tokens, text generation; the data's
	 * features are never normalised for it. */
	MGPU_ARCH_TOKENS = 1,
	/* Trains in fp32 or bf16 only (its convolutions have no fp16 form):
	 * --dtype fp16 is refused. */
	MGPU_ARCH_NO_FP16 = 2,
};

struct mgpu_arch {
	const char *name;   /* the spec's prefix before ':' ("mlp", "gpt") */
	unsigned flags;     /* enum mgpu_arch_flags */

	/* ---- the spec (spec.h) ---- */
	/* Parse what follows "name:" in text into s (zeroed, kind set);
	 * origin names where the text came from in messages. */
	int (*parse)(struct mgpu_spec *s, const char *body, const char *text,
		     const char *origin);
	/* The canonical string, which parse reads back to the same spec. */
	int (*format)(const struct mgpu_spec *s, char *buf, size_t len);
	/* Fit s to the data described by d (read from path): take sizes the
	 * spec left to the data, refuse data the family cannot read (a
	 * message naming path and the spec to write). */
	int (*fit)(struct mgpu_spec *s, const struct mgpu_data_desc *d, const char *path);
	/* 1 when a size is still left to the data (NULL: never). */
	int (*has_auto)(const struct mgpu_spec *s);
	/* A resumed run's spec s takes the sizes it left to the data from the
	 * checkpoint's ck, when ck is the same model (NULL: nothing to take). */
	void (*take_auto)(struct mgpu_spec *s, const struct mgpu_spec *ck);
	/* Classes its labels may take (an mlp's outputs; a gpt has none). */
	int (*classes)(const struct mgpu_spec *s);
	/* Parameters, without building the model. */
	size_t (*count)(const struct mgpu_spec *s);
	/* One sample's outputs (c, h, w) of a fitted spec, what a target's
	 * loss takes (model/target_loss.h); NULL: the family trains on class
	 * labels or tokens only. */
	void (*out_shape)(const struct mgpu_spec *s, int shape[3]);

	/* ---- the model (model.h) ---- */
	/* Lay out m->params, m->buckets (and m->buffers), allocate the
	 * activations through mgpu_model_alloc; m->spec, dev, max_batch and
	 * w, g (or NULL: allocate them here) are set. Host state in m->fam. */
	int (*create)(struct mgpu_model *m);
	/* Host state other than m->fam, which the model frees (device
	 * buffers are the model's to release); NULL: none. */
	void (*free)(struct mgpu_model *m);
	/* Bytes of a batch in an upload buffer: labels, then rows. NULL
	 * labels_nbytes: one int32 class id a row. */
	size_t (*labels_nbytes)(const struct mgpu_spec *s, int max_batch);
	size_t (*rows_nbytes)(const struct mgpu_spec *s, int max_batch);
	/* Seeded initial weights (and buffers). */
	int (*init)(struct mgpu_model *m, uint64_t seed);
	/* One batch in (model.h's struct mgpu_batch_in), queued. */
	int (*load)(struct mgpu_model *m, const struct mgpu_batch_in *in);
	/* B samples forward; train enables dropout (and batch statistics). */
	int (*forward)(struct mgpu_model *m, int B, int train);
	/* The loss of the last forward summed into acc[0], its correct count
	 * into acc[1] (device doubles); with want_grad, m->dlogits. */
	int (*loss_acc)(struct mgpu_model *m, int B, int want_grad, float grad_scale,
			double *acc);
	/* Backward from m->dlogits, calling m->grad_ready per bucket. */
	int (*backward)(struct mgpu_model *m, int B, int accumulate);
	/* The last forward's logits on the device; *per_row floats a sample,
	 * *width of them per prediction (per_row / width predictions), the
	 * predictions *ld >= *width floats apart on the device. */
	const float *(*logits)(const struct mgpu_model *m, size_t *per_row, size_t *width,
			       size_t *ld);
	/* n ids continuing prompt[0..plen) (model.h's mgpu_model_generate
	 * says how); NULL: the family does not generate. */
	int (*generate)(struct mgpu_model *m, const int32_t *prompt, size_t plen, size_t n,
			double temperature, uint64_t seed, int32_t *out);
	/* 0, or MGPU_ERANGE with *pos and *id of the first value of one stored
	 * sample row (of dtype, enum mgpu_dtype) the model cannot take; sets
	 * no message. NULL: every value is fine. */
	int (*check_row)(const struct mgpu_model *m, const void *row, int dtype, size_t *pos,
			 uint32_t *id);
};

extern const struct mgpu_arch mgpu_arch_mlp; /* model/mlp.c */
extern const struct mgpu_arch mgpu_arch_gpt; /* model/gpt.c */
extern const struct mgpu_arch mgpu_arch_cnn; /* model/cnn.c */

/* The family of a spec (its kind), or of the prefix of text before ':'
 * (NULL when no family has that name). */
const struct mgpu_arch *mgpu_arch_of(const struct mgpu_spec *s);
const struct mgpu_arch *mgpu_arch_find(const char *text, int *kind);
/* The families' prefixes joined for a message: "'mlp:' or 'gpt:'"
 * (quoted), "mlp:... or gpt:..." (not); returns buf. */
const char *mgpu_arch_names(char *buf, size_t len, int quoted);

#endif
