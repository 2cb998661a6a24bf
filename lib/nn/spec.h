/*
 * spec.h - model specifications: "mlp:784-512-256-10" plus options.
 *
 * Grammar: mlp:D0-D1-...-Dn[,OPTION...] where D0 (the input width) and Dn
 * (the class count) may be "auto": taken from the data by mgpu_spec_fit
 * (dims 0 until then); OPTION is act=relu|gelu|tanh,
 * dropout=P (0 <= P < 1, after each hidden activation), layernorm (or
 * layernorm=0|1, before each hidden activation).
 *
 * Or gpt:layers=L,heads=H,dim=D,ctx=T[,vocab=V][,padded_vocab=P][,dropout=P]:
 * a decoder-only transformer over tokens (V = 256, the byte values, unless
 * given; at most 2^31 - 1; see nn/gpt.h), whose samples are T+1 tokens
 * (inputs 0..T-1, next-token targets 1..T). padded_vocab (>= V, V unless
 * given) is the rows of the token embedding, as llm.c pads GPT-2's 50257
 * to 50304: the rows past V are never a token and never a logit. Its
 * nlayers and dims describe it the way the rest of mgpu reads a model:
 * nlayers = L + 2 (embeddings, L blocks, final LayerNorm with the tied
 * head), dims = { T+1, D, ..., D, V }: dims[0] is the sample width and
 * dims[nlayers] the number of classes (token values), as for an mlp.
 *
 * A --model argument that starts with neither "mlp:" nor "gpt:" names a file
 * holding a spec: '#' starts a comment, and whitespace or newlines separate
 * the options like commas.
 */
#ifndef MGPU_NN_SPEC_H
#define MGPU_NN_SPEC_H

#include <stddef.h> /* size_t */

#define MGPU_MAX_LAYERS 16
#define MGPU_SPEC_FILE_MAX (1 << 20) /* bytes of a spec file, comments included */

enum mgpu_model_kind { MGPU_MODEL_MLP = 0, MGPU_MODEL_GPT = 1 };

/* The most transformer blocks: two of the layers go to the embeddings and
 * the final LayerNorm. */
#define MGPU_GPT_MAX_BLOCKS (MGPU_MAX_LAYERS - 2)

struct mgpu_spec {
	int nlayers;                  /* linear layers: dims has nlayers + 1 */
	int dims[MGPU_MAX_LAYERS + 1];
	int act;                      /* enum mgpu_act */
	float dropout;
	int layernorm;
	int kind;                     /* enum mgpu_model_kind */
	int blocks, heads, dim, ctx, vocab; /* gpt only: L, H, D, T, V */
	int padded_vocab;             /* gpt only: rows of wte (>= vocab) */
};

/* An mlp size taken from the data (dims[0] or dims[nlayers]). */
#define MGPU_SPEC_AUTO 0

int mgpu_spec_parse(struct mgpu_spec *s, const char *text, const char *origin);
/* Fit s to the data at path, whose samples have d features and labels
 * below classes: auto sizes become the data's; a size the data does not
 * fit (input width other than d, fewer than classes outputs; a gpt whose
 * ctx + 1 is not d) is an error that names the spec to write. */
int mgpu_spec_fit(struct mgpu_spec *s, int d, int classes, const char *path);
/* 1 when an mlp size is still auto. */
int mgpu_spec_has_auto(const struct mgpu_spec *s);
/* A spec string, or the path of a file holding one. */
int mgpu_spec_load(struct mgpu_spec *s, const char *arg);
/* The canonical string, which mgpu_spec_parse reads back to the same spec. */
int mgpu_spec_format(const struct mgpu_spec *s, char *buf, size_t len);
const char *mgpu_act_name(int act);

#endif
