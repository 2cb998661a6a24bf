/*
 * model.h - an MLP on one device: parameters, forward, loss, backward.
 *
 * Parameters and gradients each live in ONE flat device buffer (w, g), in
 * layer order: W (out x in, row-major as torch.nn.Linear), b (out), then
 * LayerNorm gamma, beta (out) for hidden layers with layernorm. One flat
 * buffer makes the optimizer one fused pass and the all-reduce a few large
 * contiguous buckets.
 *
 * Shapes: a batch is B rows; layer l maps (B, in) -> (B, out). All device
 * buffers are sized for max_batch rows. The model owns its device buffers;
 * the struct mgpu_dev belongs to the caller and outlives the model.
 *
 * Backward walks the layers last to first and calls grad_ready (when set)
 * with each layer's index and gradient range as soon as the layer is done
 * (its weights are no longer read this step), so data-parallel code can
 * reduce it, and even update those weights, while earlier layers compute.
 *
 * Dropout masks are a pure function of (dropout_seed, layer, global row,
 * column): a batch split over ranks or micro-steps (row0 = its first row in
 * the global batch) drops exactly what the whole batch on one device would.
 *
 * A "gpt:" spec builds the transformer of nn/gpt.h behind the same
 * functions: a row is a sample of T+1 bytes (labels unused), layers[] holds
 * its gradient buckets only (w and b: the first and last parameter of each;
 * see gpt.h) and the activations live in m->gpt. A "cnn:" spec builds the
 * conv net of nn/cnn.h the same way (a row is a sample (C,H,W) or (C,L),
 * activations in m->cnn).
 *
 * Buffers (bufs, state): tensors a checkpoint saves beside the weights
 * that are no parameters (a cnn's BatchNorm running statistics): one flat
 * device vector per model, never shared between ranks, never in the
 * gradient, the optimizer or weight decay. Training forwards update them.
 */
#ifndef MGPU_NN_MODEL_H
#define MGPU_NN_MODEL_H

#include <stddef.h> /* size_t */
#include <stdint.h> /* uint8_t, uint16_t, int32_t, uint64_t */

#include "gpu/upload.h" /* struct mgpu_upload */
#include "nn/spec.h"    /* struct mgpu_spec */
#include "ops/ops.h"    /* struct mgpu_dev */

/* an mlp has 4 per layer, a gpt 12 per block and 4 more, a cnn up to 6
 * per line (a res block) */
#define MGPU_MAX_PARAMS (6 * MGPU_CNN_MAX_LINES)
/* a cnn's BatchNorm: 3 per bn, 9 per res block */
#define MGPU_MAX_BUFS (3 * MGPU_CNN_MAX_LINES)
#define MGPU_PARAM_MAX_DIM 4

struct mgpu_param {
	char name[48];   /* safetensors name, e.g. "layers.0.weight" */
	size_t off;      /* offset in the flat buffers, in floats */
	size_t count;
	int ndim;        /* 0 (a scalar) .. MGPU_PARAM_MAX_DIM */
	int shape[MGPU_PARAM_MAX_DIM];
	int decay;       /* weight decay applies (matrices only) */
};

struct mgpu_layer {
	int in, out;
	int hidden;                  /* not the output layer */
	struct mgpu_param *w, *b, *gamma, *beta;
	float *lin;                  /* (B,out) X W^T + b */
	float *norm, *mean, *rstd;   /* layernorm output and stats, or NULL */
	float *y;                    /* (B,out) activation (+dropout) output */
};

typedef int (*mgpu_grad_ready_fn)(void *ctx, int layer, size_t off, size_t count);

/*
 * Where a cnn's BatchNorm layers meet across ranks (--sync-bn; nothing sums
 * them without it, and each rank normalises with its own batch, as torch
 * DDP). Called in a training forward and its backward for every bn (bn =
 * its index in forward order, 0..nbn-1; a res block's bn1, bn2 and
 * downsample bn each count), always in that order on every rank:
 *   MGPU_BN_FWD: v = stats (2,C) on the device: per channel sum(x - shift)
 *     and sum((x - shift)^2), shift the layer's running mean (the same on
 *     every rank when the sums are summed, since the running statistics then
 *     follow the same batch statistics); *count = this rank's N HW values
 *     per channel. Replace both by their sums over the ranks; bn_fwd then
 *     takes the moments from them.
 *   MGPU_BN_BWD: v = dstats (2,C): per channel sum(dy) and sum(dy xhat);
 *     count NULL (the forward's summed count is kept). Replace v by its sum.
 * n = 2C floats. Not called in evaluation (running statistics) nor for gn.
 */
enum mgpu_bn_phase { MGPU_BN_FWD = 0, MGPU_BN_BWD = 1 };
typedef int (*mgpu_bn_sync_fn)(void *ctx, int phase, int bn, float *v, int n, double *count);

struct mgpu_model {
	struct mgpu_spec spec;
	struct mgpu_dev *dev;
	int max_batch;
	size_t nparams;
	float *w, *g;                /* flat parameters, gradients (device) */
	int nparam;
	struct mgpu_param params[MGPU_MAX_PARAMS];
	struct mgpu_layer layers[MGPU_MAX_LAYERS];
	uint8_t *x_u8;               /* (B, D0) raw batch */
	float *x;                    /* (B, D0) decoded input */
	int32_t *labels;             /* (B) */
	float *dlogits, *row_loss, *row_correct;
	float *dbuf[2];              /* ping-pong (B, widest hidden) gradients */
	float *zeros;                /* widest hidden: a zero bias */
	double *stats;               /* (MGPU_STATS) a step's statistics (device) */
	double *lstats;              /* (2) mgpu_model_loss's sums (device) */
	struct mgpu_upload up;       /* page-locked staging of input batches */
	size_t dev_bytes;            /* what this model allocated */
	int ext_w, ext_g;            /* w, g belong to the caller */
	mgpu_grad_ready_fn grad_ready;
	void *grad_ctx;
	uint64_t dropout_seed;       /* set per step by the caller */
	uint64_t row0;               /* global row of the batch's first row */
	struct mgpu_gpt *gpt;        /* a gpt spec's state (nn/gpt.h), else NULL */
	struct mgpu_cnn *cnn;        /* a cnn spec's state (nn/cnn.h), else NULL */
	int nbuf;                    /* buffers (see above) */
	struct mgpu_param bufs[MGPU_MAX_BUFS]; /* offsets into state */
	size_t nstate;               /* floats of state */
	float *state;                /* (nstate) device */
	mgpu_bn_sync_fn bn_sync;     /* NULL: each rank its own batch statistics */
	void *bn_ctx;
	int prec;                    /* enum mgpu_prec of the products (nn/mm.h) */
	uint16_t *w16;               /* bf16: w rounded at each forward */
	uint16_t *s16[2];            /* bf16: other product operands, rounded */
	size_t s16_cap[2];           /* their sizes, in elements */
};

/* The statistics a training step keeps on the device, in m->stats (zero
 * between steps): the host reads them once per optimizer step, after the
 * whole step is queued (nn/sync.c), instead of draining the device in the
 * middle of each micro-step. */
enum mgpu_stat {
	MGPU_STAT_LOSS = 0,    /* summed loss of the step's rows (a gpt: per sample) */
	MGPU_STAT_CORRECT = 1, /* their correct count */
	MGPU_STAT_NORM2 = 2,   /* squared gradient norm (the optimizer, unclipped) */
	MGPU_STAT_HOST = 3,    /* first slot of host values the closing all-reduce adds */
	MGPU_STATS = 16,       /* slots */
};

/* What the model's matrix products take: fp32, or bf16 inputs with fp32
 * accumulation (mixed precision: fp32 master weights, gradients,
 * optimizer state and reductions; see nn/mm.h). */
enum mgpu_prec { MGPU_PREC_FP32 = 0, MGPU_PREC_BF16 = 1, MGPU_PREC_FP16 = 2 };

int mgpu_model_create(struct mgpu_model *m, const struct mgpu_spec *spec,
		      struct mgpu_dev *dev, int max_batch);
/* The same with caller-owned parameter and gradient buffers (device
 * memory of dev, nparams floats each; NULL: allocate). Data-parallel ranks
 * on one node share w and give each rank a gradient slot this way. */
int mgpu_model_create_ext(struct mgpu_model *m, const struct mgpu_spec *spec,
			  struct mgpu_dev *dev, int max_batch, float *w, float *g);
/* Set the precision of the products (fp32 after create); allocates the
 * bf16 copy of the weights. Before the first forward. */
int mgpu_model_set_prec(struct mgpu_model *m, int prec);
/* "fp32" or "bf16". */
const char *mgpu_prec_name(int prec);
/* Number of parameters a spec has, without building the model. */
size_t mgpu_model_count(const struct mgpu_spec *spec);
void mgpu_model_free(struct mgpu_model *m);
/* torch.nn.Linear's default init, U(-1/sqrt(in), 1/sqrt(in)), seeded. */
int mgpu_model_init(struct mgpu_model *m, uint64_t seed);
/* Copy a batch of B raw uint8 rows and labels in; x = raw * scale + shift.
 * The bytes go through m->up (gpu/upload.h): the copies are queued, the
 * host does not wait for them, and x_host may be reused on return. */
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
/* Floats mgpu_model_logits writes per row (C, or T*V). */
size_t mgpu_model_logits_per_row(const struct mgpu_model *m);
/* Backward from dlogits; accumulate adds into g instead of overwriting. */
int mgpu_model_backward(struct mgpu_model *m, int B, int accumulate);
/* A gpt's continuation of prompt[0..plen): n bytes into out, each chosen
 * from the logits of a forward (no dropout) of one sequence holding the last
 * ctx bytes so far. temperature 0 takes the most likely byte (the lowest
 * on a tie); above 0 it draws from softmax(logits / temperature) with a
 * generator seeded by seed, so the same seed gives the same text. An empty
 * prompt starts at a line break ('\n', not copied to out), or at byte 0
 * where vocab <= 10 has no line break. MGPU_EINVAL for
 * an mlp, MGPU_ERANGE for a prompt byte >= vocab. */
int mgpu_model_generate(struct mgpu_model *m, const uint8_t *prompt, size_t plen, size_t n,
			double temperature, uint64_t seed, uint8_t *out);
/* The same over token ids (a gpt on u16/u32 token data): n ids into out,
 * continuing prompt[0..plen), plen >= 1. MGPU_ERANGE for a prompt id
 * outside [0, vocab). */
int mgpu_model_generate_tokens(struct mgpu_model *m, const int32_t *prompt, size_t plen,
			       size_t n, double temperature, uint64_t seed, int32_t *out);
/* Copy a batch of B gpt samples of T+1 token ids, nbytes (1, 2, 4) each. */
int mgpu_model_load_tokens(struct mgpu_model *m, const void *x_host, int nbytes, int B);
/* Whole flat vectors to and from the host (nparams floats). */
int mgpu_model_get(struct mgpu_model *m, float *w_host);
int mgpu_model_set(struct mgpu_model *m, const float *w_host);
/* The buffers to and from the host (nstate floats, m->bufs' offsets). */
int mgpu_model_state_get(struct mgpu_model *m, float *host);
int mgpu_model_state_set(struct mgpu_model *m, const float *host);

/* Copy a batch of B float32 rows (already normalised) and labels in. */
int mgpu_model_load_batch_f32(struct mgpu_model *m, const float *x_host,
			      const int32_t *y_host, int B);

#endif
