/*
 * mlp.h - the "mlp:" family's state (model/arch.h's mgpu_arch_mlp, mlp.c),
 * for code that times an mlp's own products (bench/overhead.c).
 *
 * Parameters, per layer l in order, named as torch.nn.Linear and
 * LayerNorm: layers.l.weight (out, in), layers.l.bias (out), then for
 * hidden layers with layernorm layers.l.norm.weight, .norm.bias (out).
 * Gradient bucket l is layer l's parameters.
 */
#ifndef MGPU_MODEL_MLP_H
#define MGPU_MODEL_MLP_H

#include <stdint.h> /* uint8_t */

#include "model/model.h" /* struct mgpu_model, struct mgpu_param */

struct mgpu_layer {
	int in, out;
	int hidden;                  /* not the output layer */
	struct mgpu_param *w, *b, *gamma, *beta;
	float *lin;                  /* (B,out) X W^T + b */
	float *norm, *mean, *rstd;   /* layernorm output and stats, or NULL */
	float *y;                    /* (B,out) activation (+dropout) output */
};

struct mgpu_mlp {
	struct mgpu_layer layers[MGPU_MAX_LAYERS];
	uint8_t *x_u8;               /* (B, D0) raw batch */
	float *x;                    /* (B, D0) decoded input */
	float *dbuf[2];              /* ping-pong (B, widest hidden) gradients */
	float *zeros;                /* widest hidden: a zero bias */
};

/* The state of a model of the mlp family (NULL for another). */
struct mgpu_mlp *mgpu_mlp_of(struct mgpu_model *m);

#endif
