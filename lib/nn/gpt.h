/*
 * gpt.h - the decoder-only transformer behind a "gpt:" spec, internal to
 * lib/nn: model.c's public functions (model.h) call these when
 * m->spec.kind is MGPU_MODEL_GPT, so training, sync and checkpoints see one
 * struct mgpu_model whatever the architecture.
 *
 * The model (GPT-2's layout): token and position embeddings, L pre-LayerNorm
 * blocks (x += proj(attn(ln1(x))); x += mlp(ln2(x)) with a 4*D GELU MLP and
 * causal multi-head self-attention), a final LayerNorm, and an output head
 * tied to the token embedding (logits = ln_f(x) wte^T), trained with
 * cross-entropy over the next token. Dropout (the spec's P) follows the
 * embedding sum and each branch's output projection.
 *
 * Data: a sample is T+1 tokens (bytes of u8 rows, or the ids of u16 and
 * u32 rows: data/tokens.h); inputs are tokens 0..T-1, targets 1..T. The
 * loss of a sample is the mean over its T positions (nats per token), its
 * "correct" the fraction of positions whose argmax is the next token.
 *
 * Padded vocabulary (padded_vocab = Vp > V, as llm.c's 50304 for GPT-2's
 * 50257): wte has Vp rows so checkpoints keep the padded shape, but the
 * head's one product computes only the V real columns of the logits. The
 * softmax and the loss are therefore over the V real tokens exactly; the
 * padding rows are in no product, get a zero gradient (start at zero and
 * stay there: weight decay only shrinks zero), are never a target (an id
 * >= V is an error when a batch is loaded) and never generated.
 *
 * Logits (N,V) exist once: xent writes dloss/dlogits over them in place
 * as it goes row by row (llm.c's fused classifier), so the head costs one
 * (N,V) buffer, not two.
 *
 * Parameters sit in the flat buffers (model.h) in this order, with these
 * safetensors names (row-major, as torch.nn.Linear stores weight (out, in)):
 *   wte.weight (Vp,D), wpe.weight (T,D),
 *   blocks.I.{ln1,ln2}.{weight,bias} (D),
 *   blocks.I.attn.qkv.weight (3D,D) .bias (3D)   q, k, v stacked in that order
 *   blocks.I.attn.proj.weight (D,D) .bias (D)
 *   blocks.I.mlp.fc.weight (4D,D) .bias (4D)
 *   blocks.I.mlp.proj.weight (D,4D) .bias (D)
 *   ln_f.weight, ln_f.bias (D)
 * Gradient buckets (m->layers[b].w .. m->layers[b].b, what grad_ready
 * reports): 0 = both embeddings (ready last: the tied head adds to wte
 * first), 1..L = block b-1, L+1 = ln_f (ready first).
 */
#ifndef MGPU_NN_GPT_H
#define MGPU_NN_GPT_H

#include <stddef.h> /* size_t */
#include <stdint.h> /* uint8_t, uint64_t */

#include "nn/model.h" /* struct mgpu_model */
#include "nn/spec.h"  /* struct mgpu_spec */

/* model.c: the offset of a batch's rows (a gpt's ids) in m->up's
 * buffers; labels (targets) start at 0. */
size_t mgpu_model_rows_off(const struct mgpu_model *m);
/* Parameters of a gpt spec, without building it. */
size_t mgpu_gpt_count(const struct mgpu_spec *s);
/* Lay out and allocate; m->spec, dev, max_batch, w, g, ext_* are set. */
int mgpu_gpt_create(struct mgpu_model *m);
void mgpu_gpt_free(struct mgpu_model *m);
/* GPT-2's init (std 0.02, output projections 0.02 / sqrt(2L), as uniform
 * draws of that deviation), biases 0, LayerNorm 1 and 0; seeded. */
int mgpu_gpt_init(struct mgpu_model *m, uint64_t seed);
/* Rows of the token embedding: padded_vocab, or vocab where none. */
int mgpu_gpt_rows(const struct mgpu_spec *s);
/* B samples of T+1 bytes; a byte >= V is an error naming the sample. */
int mgpu_gpt_load_batch(struct mgpu_model *m, const uint8_t *x_host, int B);
/* B samples of T+1 token ids of nbytes (1, 2 or 4) each, host order; an
 * id >= V is an error naming the sample and position. */
int mgpu_gpt_load_tokens(struct mgpu_model *m, const void *x_host, int nbytes, int B);
/* 0, or MGPU_ERANGE with *pos and *id of the first id of one sample row
 * (T+1 ids of nbytes each) at or above the vocab; sets no message. */
int mgpu_gpt_check_row(const struct mgpu_model *m, const void *row, int nbytes, size_t *pos,
		       uint32_t *id);
int mgpu_gpt_forward(struct mgpu_model *m, int B, int train);
/* mgpu_model_loss_acc of a gpt: per-sample means. */
int mgpu_gpt_loss_acc(struct mgpu_model *m, int B, int want_grad, float grad_scale,
		      double *acc);
int mgpu_gpt_backward(struct mgpu_model *m, int B, int accumulate);
/* The last forward's logits (B*T, V) on the device. */
const float *mgpu_gpt_logits(const struct mgpu_model *m);
/* n bytes continuing prompt[0..plen) into out (model.h's
 * mgpu_model_generate says how they are chosen). */
int mgpu_gpt_generate(struct mgpu_model *m, const uint8_t *prompt, size_t plen, size_t n,
		      double temperature, uint64_t seed, uint8_t *out);
/* The same over token ids: n ids continuing prompt[0..plen) (plen >= 1). */
int mgpu_gpt_generate_tokens(struct mgpu_model *m, const int32_t *prompt, size_t plen,
			     size_t n, double temperature, uint64_t seed, int32_t *out);

#endif
