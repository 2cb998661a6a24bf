/*
 * model.h - a model on one device, whatever its family (model/arch.h: mlp.c,
 * gpt.c): parameters, batches, forward, loss, backward, generation.
 *
 * Parameters and gradients each live in ONE flat device buffer (w, g), in
 * the order of m->params (each family lays its own out and names them as
 * torch does). One flat buffer makes the optimizer one fused pass and the
 * all-reduce a few large contiguous buckets: m->buckets are ranges of g
 * that backward finishes at once, in the order it finishes them last to
 * first, and it calls grad_ready (when set) with each bucket's index and
 * range as soon as the bucket is final (its weights are no longer read
 * this step), so data-parallel code can reduce it, and even update those
 * weights, while earlier layers compute.
 *
 * Shapes: a batch is B samples; every device buffer is sized for
 * max_batch of them. The model owns its device buffers; the struct
 * mgpu_dev belongs to the caller and outlives the model.
 *
 * Dropout masks are a pure function of (dropout_seed, site, global row,
 * column): a batch split over ranks or micro-steps (row0 = its first row in
 * the global batch) drops exactly what the whole batch on one device would.
 */
#ifndef MGPU_MODEL_MODEL_H
#define MGPU_MODEL_MODEL_H

#include <stddef.h> /* size_t */
#include <stdint.h> /* uint8_t, uint16_t, int32_t, uint64_t */

#include "gpu/upload.h" /* struct mgpu_upload */
#include "model/spec.h"    /* struct mgpu_spec */
#include "model/target_loss.h" /* struct mgpu_target_dev */
#include "ops/ops.h"    /* struct mgpu_dev, enum mgpu_prec */

struct mgpu_arch; /* model/arch.h */

/* an mlp has 4 per layer, a gpt 12 per block and 4 more, a cnn up to 9
 * per line (a res block) */
#define MGPU_MAX_PARAMS (9 * MGPU_CNN_MAX_LINES)
#define MGPU_MAX_BUCKETS MGPU_MAX_LAYERS
/* a BatchNorm keeps 3 (running_mean, running_var, num_batches_tracked),
 * a res block with a projection has 3 BatchNorms */
#define MGPU_MAX_BUFFERS (9 * MGPU_CNN_MAX_LINES)
#define MGPU_PARAM_MAX_DIM 4

struct mgpu_param {
	char name[48];   /* safetensors name, e.g. "layers.0.weight" */
	size_t off;      /* offset in the flat buffers, in floats */
	size_t count;
	int ndim;
	int shape[MGPU_PARAM_MAX_DIM];
	int decay;       /* weight decay applies (matrices only) */
};

/* A range of the flat gradient that backward finishes at once. */
struct mgpu_bucket {
	size_t off, count; /* in floats */
};

typedef int (*mgpu_grad_ready_fn)(void *ctx, int bucket, size_t off, size_t count);
/* Sums count floats of per-channel batch statistics (device memory of the
 * model's device) over the ranks, in place: see mgpu_model_sum_stats. */
typedef int (*mgpu_stat_sum_fn)(void *ctx, int layer, float *sums, size_t count);

struct mgpu_model {
	struct mgpu_spec spec;
	const struct mgpu_arch *arch; /* the spec's family (model/arch.h) */
	void *fam;                   /* the family's own state */
	struct mgpu_dev *dev;
	int max_batch;
	size_t nparams;
	float *w, *g;                /* flat parameters, gradients (device) */
	int nparam;
	struct mgpu_param params[MGPU_MAX_PARAMS];
	int nbuckets;
	struct mgpu_bucket buckets[MGPU_MAX_BUCKETS];
	/* Non-trainable state a checkpoint keeps beside the parameters (a
	 * BatchNorm's running_mean, running_var and num_batches_tracked, the
	 * last a float here): one flat device buffer buf of nbufvals floats,
	 * laid out by buffers as w is by params; in no gradient, optimizer
	 * or all-reduce. Each rank has its own (rank 0's is saved). */
	size_t nbufvals;
	float *buf;
	int nbuffer;                 /* at most MGPU_MAX_BUFFERS */
	struct mgpu_param *buffers;  /* host array the model owns; NULL: none */
	int params_failed;           /* an add_param found no room: alloc_params says so */
	struct mgpu_param param_lost; /* what it returned instead */
	int buffers_failed;          /* an add_buffer failed: alloc_params says so */
	struct mgpu_param buffer_lost; /* what a failed add_buffer returned */
	int32_t *labels;             /* (B) labels, or a gpt's (B*T) targets */
	/* A target beyond a class id (kind 0: none, the labels count): the
	 * batch's targets on the device, which a family's loss takes in
	 * place of xent's (mgpu_model_set_targets) */
	struct mgpu_target_dev tgt;
	float *dlogits, *row_loss, *row_correct;
	double *stats;               /* (MGPU_STATS) a step's statistics (device) */
	double *lstats;              /* (2) mgpu_model_loss's sums (device) */
	struct mgpu_upload up;       /* page-locked staging of input batches */
	size_t dev_bytes;            /* what this model allocated */
	int nallocs, allocs_cap;     /* ... in these buffers, released together */
	void **allocs;               /* (host array, grown as needed) */
	int ext_w, ext_g;            /* w, g belong to the caller */
	mgpu_grad_ready_fn grad_ready;
	void *grad_ctx;
	mgpu_stat_sum_fn stat_sum;   /* NULL: each rank keeps its own statistics */
	void *stat_ctx;
	int stat_ranks;              /* the ranks stat_sum sums over (its setter sets
				      * both); a training batch is the same size on
				      * each, so a sum covers stat_ranks batches */
	uint64_t dropout_seed;       /* set per step by the caller */
	uint64_t row0;               /* global row of the batch's first row */
	int prec;                    /* enum mgpu_prec of the products (model/mm.h) */
	uint16_t *w16;               /* bf16: w rounded at each forward */
	uint16_t *s16[2];            /* bf16: other product operands, rounded */
	size_t s16_cap[2];           /* their sizes, in elements */
	const float *s16_src[2];     /* what each holds rounded now (model/mm.h) */
	size_t s16_n[2];             /* and its span, in elements */
	int s16_keep;                /* mgpu_mm_reuse: the next product may reuse them */
};

/* The statistics a training step keeps on the device, in m->stats (zero
 * between steps): the host reads them once per optimizer step, after the
 * whole step is queued (train/sync.c), instead of draining the device in the
 * middle of each micro-step. */
enum mgpu_stat {
	MGPU_STAT_LOSS = 0,    /* summed loss of the step's rows (a gpt: per sample) */
	MGPU_STAT_CORRECT = 1, /* their correct count */
	MGPU_STAT_NORM2 = 2,   /* squared gradient norm (the optimizer, unclipped) */
	MGPU_STAT_HOST = 3,    /* first slot of host values the closing all-reduce adds */
	MGPU_STATS = 16,       /* slots */
};

/* A batch as the data source serves it (data/source.h): B rows of dtype
 * (enum mgpu_dtype: uint8 or float32 features, or token ids of 1, 2 or 4
 * bytes) and B labels. Each family takes the dtypes it reads. */
struct mgpu_batch_in {
	const void *rows;
	int dtype;
	const int32_t *labels;       /* NULL where the rows hold the targets (a gpt) */
	float scale, shift;          /* uint8 features: x = raw * scale + shift */
	int B;
};

int mgpu_model_create(struct mgpu_model *m, const struct mgpu_spec *spec,
		      struct mgpu_dev *dev, int max_batch);
/* The same with caller-owned parameter and gradient buffers (device
 * memory of dev, nparams floats each; NULL: allocate). Data-parallel ranks
 * on one node share w and give each rank a gradient slot this way. */
int mgpu_model_create_ext(struct mgpu_model *m, const struct mgpu_spec *spec,
			  struct mgpu_dev *dev, int max_batch, float *w, float *g);
/* Set the precision of the products (enum mgpu_prec of ops.h; fp32 after
 * create); allocates the 16-bit copy of the weights. Before the first
 * forward. */
int mgpu_model_set_prec(struct mgpu_model *m, int prec);
/* Number of parameters a spec has, without building the model. */
size_t mgpu_model_count(const struct mgpu_spec *spec);
void mgpu_model_free(struct mgpu_model *m);
/* torch.nn.Linear's default init, U(-1/sqrt(in), 1/sqrt(in)), seeded. */
int mgpu_model_init(struct mgpu_model *m, uint64_t seed);
/* Copy a batch in. The bytes go through m->up (gpu/upload.h): the copies
 * are queued, the host does not wait for them, and in's arrays may be
 * reused on return. A dtype the family does not read is MGPU_EINVAL, a
 * value it cannot take (a token beyond the vocabulary) MGPU_ERANGE. */
int mgpu_model_load(struct mgpu_model *m, const struct mgpu_batch_in *in);
/* mgpu_model_load of B uint8 feature rows, x = raw * scale + shift. */
int mgpu_model_load_batch(struct mgpu_model *m, const uint8_t *x_host,
			  const int32_t *y_host, int B, float scale, float shift);
/* Forward; train enables dropout with m->dropout_seed. */
int mgpu_model_forward(struct mgpu_model *m, int B, int train);
/* Softmax cross-entropy of the last forward: summed loss and correct count
 * of the B rows; with want_grad, dlogits = dloss/dlogits * grad_scale.
 * One blocking read (both sums come back together). */
int mgpu_model_loss(struct mgpu_model *m, int B, int want_grad, float grad_scale,
		    double *loss_sum, double *correct);
/* The same, queued: acc[0] += the loss sum, acc[1] += the correct count
 * (device doubles, e.g. m->stats + MGPU_STAT_LOSS), summed by the ops'
 * sum_acc; nothing comes back to the host. */
int mgpu_model_loss_acc(struct mgpu_model *m, int B, int want_grad, float grad_scale,
			double *acc);
/* The last forward's logits to the host: (B, C) of an mlp, (B, T, V) of
 * a gpt; *per_row receives C or T*V. One blocking read. */
int mgpu_model_logits(struct mgpu_model *m, int B, float *host, size_t *per_row);
/* Floats mgpu_model_logits writes per row (C, or T*V), and per
 * prediction (C, or V: a gpt predicts T tokens a row). */
size_t mgpu_model_logits_per_row(const struct mgpu_model *m);
size_t mgpu_model_logits_width(const struct mgpu_model *m);
/* Backward from dlogits; accumulate adds into g instead of overwriting. */
int mgpu_model_backward(struct mgpu_model *m, int B, int accumulate);
/* A language model's continuation of prompt[0..plen): n bytes into out,
 * each chosen from the logits of a forward (no dropout) of one sequence
 * holding the last ctx bytes so far. temperature 0 takes the most likely
 * byte (the lowest on a tie); above 0 it draws from softmax(logits /
 * temperature) with a generator seeded by seed, so the same seed gives the
 * same text. An empty prompt starts at a line break ('\n', not copied to
 * out), or at byte 0 where vocab <= 10 has no line break. MGPU_EINVAL for
 * a family that does not generate (an mlp), MGPU_ERANGE for a prompt byte
 * >= vocab. */
int mgpu_model_generate(struct mgpu_model *m, const uint8_t *prompt, size_t plen, size_t n,
			double temperature, uint64_t seed, uint8_t *out);
/* The same over token ids (a gpt on u16/u32 token data): n ids into out,
 * continuing prompt[0..plen), plen >= 1. MGPU_ERANGE for a prompt id
 * outside [0, vocab). */
int mgpu_model_generate_tokens(struct mgpu_model *m, const int32_t *prompt, size_t plen,
			       size_t n, double temperature, uint64_t seed, int32_t *out);
/* mgpu_model_load of B samples of token ids, nbytes (1, 2, 4) each. */
int mgpu_model_load_tokens(struct mgpu_model *m, const void *x_host, int nbytes, int B);
/* 0, or MGPU_ERANGE with the row *row (of n stored rows of row_nbytes and
 * dtype), *pos and *id of the first value the model cannot take (a token
 * id at or above a gpt's vocab); sets no message. A family that takes
 * every value (an mlp) does not look at the rows. */
int mgpu_model_check_rows(const struct mgpu_model *m, const void *rows, size_t n,
			  size_t row_nbytes, int dtype, size_t *row, size_t *pos, uint32_t *id);

/* For the families (model/arch.h). A device buffer of nbytes into *pp, owned
 * by the model (released by mgpu_model_free). */
int mgpu_model_alloc(struct mgpu_model *m, void *pp, size_t nbytes);
/* w and g (unless the caller gave them), g zeroed, and buf: a create's
 * first call after its layout. */
int mgpu_model_alloc_params(struct mgpu_model *m);
/* Host initial values for a family's init: n draws of U(-bound, bound)
 * from r, or n copies of v. */
struct mgpu_rng;
void mgpu_model_fill_uniform(struct mgpu_rng *r, float *x, size_t n, float bound);
void mgpu_model_fill(float *x, size_t n, float v);
/* The next buffer (m->buffers): name, shape (ndim 1 or 2: rows, cols).
 * Past MGPU_MAX_BUFFERS or out of host memory it returns a stand-in (never
 * NULL, so a layout need not check) and mgpu_model_alloc_params fails. */
struct mgpu_param *mgpu_model_add_buffer(struct mgpu_model *m, const char *name, int rows,
					 int cols);
/* A layer's per-channel batch statistics (sums, count floats, device)
 * summed over the ranks in place through m->stat_sum, which --sync-bn's
 * sync strategy sets; without it, nothing (each rank normalises its own
 * batch, as torch DDP without SyncBatchNorm). A family calls it between
 * the ops that make the sums and those that use them. */
int mgpu_model_sum_stats(struct mgpu_model *m, int layer, float *sums, size_t count);
/* The next parameter: name, shape (ndim 1 or 2: rows, cols), weight decay. */
struct mgpu_param *mgpu_model_add_param(struct mgpu_model *m, const char *name, int rows,
					int cols, int decay);
/* The next gradient bucket: parameters first..last. */
void mgpu_model_add_bucket(struct mgpu_model *m, const struct mgpu_param *first,
			   const struct mgpu_param *last);
/* Where a batch's rows start in an upload buffer (its labels at 0). */
size_t mgpu_model_rows_off(const struct mgpu_model *m);
/* nbytes of rows to rows_dev and B labels to m->labels, queued through
 * the next upload buffer. */
int mgpu_model_stage(struct mgpu_model *m, void *rows_dev, const void *rows, size_t nbytes,
		     const int32_t *labels, int B);
/* Whole flat vectors to and from the host (nparams floats). */
int mgpu_model_get(struct mgpu_model *m, float *w_host);
int mgpu_model_set(struct mgpu_model *m, const float *w_host);
/* The same for the buffers (nbufvals floats; nothing when there are none). */
int mgpu_model_get_buffers(struct mgpu_model *m, float *host);
int mgpu_model_set_buffers(struct mgpu_model *m, const float *host);

/* Train on targets of kind (enum mgpu_target_kind; model/target_loss.h
 * says the sizes) instead of the labels: device room for max_batch of
 * them, and the loss becomes the target's. The model's outputs per sample
 * must be mgpu_target_outputs (the caller checks the spec). */
int mgpu_model_set_targets(struct mgpu_model *m, int kind, int K, int P, int h, int w,
			   int classes);
/* A batch's targets (the loader's) to the device, queued after what the
 * device runs now (the loss of an earlier batch still reads the old). */
int mgpu_model_load_targets(struct mgpu_model *m, const struct mgpu_target_batch *tb, int B);

/* Copy a batch of B float32 rows (already normalised) and labels in. */
int mgpu_model_load_batch_f32(struct mgpu_model *m, const float *x_host,
			      const int32_t *y_host, int B);

#endif
