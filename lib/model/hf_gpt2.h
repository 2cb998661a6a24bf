/*
 * hf_gpt2.h - a gpt's weights in and out of Hugging Face's GPT-2 layout:
 * the model.safetensors and config.json that transformers'
 * GPT2LMHeadModel.from_pretrained(DIR) reads, and weights-only starts
 * (mgpu-train --init FILE) from such a file or from an mgpu checkpoint.
 *
 * HF's GPT-2 keeps its projections as Conv1D, weight (in, out): the
 * transposes of mgpu's torch.nn.Linear (out, in). Names, mgpu -> HF:
 *   wte.weight (the V real rows; padding rows are not written)  wte.weight
 *   wpe.weight                                                   wpe.weight
 *   blocks.I.ln1 / ln2 .weight .bias                      h.I.ln_1 / ln_2
 *   blocks.I.attn.qkv.weight (3D,D) .bias      h.I.attn.c_attn.weight (D,3D)
 *   blocks.I.attn.proj.weight (D,D) .bias      h.I.attn.c_proj.weight (D,D)
 *   blocks.I.mlp.fc.weight (4D,D) .bias          h.I.mlp.c_fc.weight (D,4D)
 *   blocks.I.mlp.proj.weight (D,4D) .bias      h.I.mlp.c_proj.weight (4D,D)
 *   ln_f.weight .bias                                         ln_f.weight
 * No lm_head.weight: the head is tied to wte in both. config.json says
 * activation_function "gelu" (the exact erf GELU mgpu computes; GPT-2's
 * own checkpoints use "gelu_new", the tanh form, which differs by < 1e-3)
 * and layer_norm_epsilon 1e-5.
 *
 * Reading takes HF names with or without the "transformer." prefix (F32,
 * F16 or BF16), or mgpu's own names (a checkpoint's model.safetensors);
 * HF's wte must have the spec's vocab rows (padding rows start at zero),
 * its wpe at least ctx rows (the first ctx are taken).
 */
#ifndef MGPU_MODEL_HF_GPT2_H
#define MGPU_MODEL_HF_GPT2_H

#include "model/model.h" /* struct mgpu_model */

/* 1 when models of spec s have this layout (a gpt). */
int mgpu_hf_gpt2_supports(const struct mgpu_spec *s);
/* Write dir/model.safetensors and dir/config.json (dir is created). */
int mgpu_hf_gpt2_export(struct mgpu_model *m, const char *dir);
/* The weights of a gpt from path (HF GPT-2 layout or mgpu names). */
int mgpu_hf_gpt2_load(struct mgpu_model *m, const char *path);

#endif
