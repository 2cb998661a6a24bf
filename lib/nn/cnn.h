/*
 * cnn.h - the convolutional network behind a "cnn:" spec (man/mgpu-model.7),
 * internal to lib/nn: model.c's public functions (model.h) call these when
 * m->spec.kind is MGPU_MODEL_CNN, as they call gpt.h's for a gpt, so
 * training, sync and checkpoints see one struct mgpu_model.
 *
 * Data: a row is one sample, (C,H,W) or a series (C,L) run as (C,1,L),
 * float32 or uint8 (decoded on the device as the mlp's are); activations
 * are NCHW. Every layer is ops of the table (ops.h: conv_*, pool_*, bn_*,
 * gn_*, act_*, dropout, sgemm): nothing here knows the backend.
 *
 * Parameters (m->w, torch.nn.Sequential's names, one module per spec
 * line i): conv i.weight (K, C/g, kh, kw) (1-D: (K, C/g, k)) [i.bias];
 * bn and gn i.weight, i.bias (C); linear i.weight (N, in), i.bias (N); a
 * res block i.conv1, i.bn1, i.conv2, i.bn2 [i.downsample.0 (1x1 conv),
 * i.downsample.1 (bn)] as torchvision's BasicBlock. Buffers (m->state,
 * model.h): per bn i.running_mean, i.running_var (C) and
 * i.num_batches_tracked (a scalar, the count of training forwards).
 *
 * Gradient buckets: the lines with parameters in at most MGPU_MAX_LAYERS
 * groups of consecutive lines (nn/cnn_spec.h); backward reports a bucket
 * through grad_ready once its lowest line is done, weights read no more.
 */
#ifndef MGPU_NN_CNN_H
#define MGPU_NN_CNN_H

#include <stddef.h> /* size_t */

#include "nn/model.h" /* struct mgpu_model */
#include "nn/spec.h"  /* struct mgpu_spec */

/* Parameters of a fitted cnn spec, without building it. */
size_t mgpu_cnn_params(const struct mgpu_spec *s);
/* Lay out and allocate; m->spec (fitted), dev, max_batch, w, g, ext_* set. */
int mgpu_cnn_create(struct mgpu_model *m);
void mgpu_cnn_free(struct mgpu_model *m);
/* torch.nn's default init per module, seeded (man/mgpu-model.7). */
int mgpu_cnn_init(struct mgpu_model *m, uint64_t seed);
int mgpu_cnn_forward(struct mgpu_model *m, int B, int train);
int mgpu_cnn_backward(struct mgpu_model *m, int B, int accumulate);
/* The last forward's logits (B, classes) on the device. */
const float *mgpu_cnn_logits(const struct mgpu_model *m);
/* BatchNorm's num_batches_tracked: the host's count of training forwards,
 * which mgpu_model_state_get writes into every such buffer. */
int64_t *mgpu_cnn_batches(struct mgpu_model *m);

#endif
