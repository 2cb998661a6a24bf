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
 * Or cnn:LINE;LINE;... : a convolutional network, one layer or block per
 * line (the grammar is man/mgpu-model.7's; nn/cnn_spec.c parses it). Its
 * input shape (in_c, in_h, in_w; in_h = 1 for a series) and class count
 * come from the data (mgpu_spec_fit_shape) unless the spec fixes them.
 * It too describes itself as the rest of mgpu reads a model: dims[0] =
 * in_c in_h in_w (0 until known), dims[nlayers] = the class count (the
 * last linear's size, MGPU_SPEC_AUTO until known), nlayers = its gradient
 * buckets (groups of consecutive lines with parameters, at most
 * MGPU_MAX_LAYERS), dims between them unused (1).
 *
 * A --model argument that starts with none of "mlp:", "gpt:", "cnn:" names
 * a file holding a spec: '#' starts a comment; a file whose first line is
 * "cnn" is a conv net of one layer per line, else whitespace or newlines
 * separate the options like commas.
 */
#ifndef MGPU_NN_SPEC_H
#define MGPU_NN_SPEC_H

#include <stddef.h> /* size_t */
#include <stdint.h> /* uint32_t */

#define MGPU_MAX_LAYERS 16
#define MGPU_SPEC_FILE_MAX (1 << 20) /* bytes of a spec file, comments included */
/* the longest printed spec (mgpu_spec_format), its NUL included */
#define MGPU_SPEC_TEXT_MAX 4096

enum mgpu_model_kind { MGPU_MODEL_MLP = 0, MGPU_MODEL_GPT = 1, MGPU_MODEL_CNN = 2 };

/* A conv net's lines (man/mgpu-model.7). */
#define MGPU_CNN_MAX_LINES 64

enum mgpu_cnn_op {
	MGPU_CNN_CONV = 1, /* n channels, k s p g d, bias */
	MGPU_CNN_BN,
	MGPU_CNN_GN,       /* n groups */
	MGPU_CNN_RELU,
	MGPU_CNN_SILU,
	MGPU_CNN_MAXPOOL,  /* k s p */
	MGPU_CNN_AVGPOOL,  /* k s p */
	MGPU_CNN_GAP,
	MGPU_CNN_DROPOUT,  /* p_drop */
	MGPU_CNN_RES,      /* n channels, s */
	MGPU_CNN_FLATTEN,
	MGPU_CNN_LINEAR,   /* n outputs (MGPU_SPEC_AUTO: the class count) */
};

struct mgpu_cnn_line {
	int op;            /* enum mgpu_cnn_op */
	int n;
	int k, s, p, g, d;
	int bias;
	float p_drop;
};

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
	int ncnn;                     /* cnn only: its lines */
	struct mgpu_cnn_line cnn[MGPU_CNN_MAX_LINES];
	int in_c, in_h, in_w;         /* cnn only: the sample (C,H,W), 0 until known */
	int in_1d;                    /* cnn only: the sample is a series (C,L) */
};

/* An mlp size taken from the data (dims[0] or dims[nlayers]). */
#define MGPU_SPEC_AUTO 0

int mgpu_spec_parse(struct mgpu_spec *s, const char *text, const char *origin);
/* Fit s to the data at path, whose samples have d features and labels
 * below classes: auto sizes become the data's; a size the data does not
 * fit (input width other than d, fewer than classes outputs; a gpt whose
 * ctx + 1 is not d) is an error that names the spec to write. */
int mgpu_spec_fit(struct mgpu_spec *s, int d, int classes, const char *path);
/* The same from the sample's shape (data/source.h's mgpu_source_shape:
 * ndim 3 an image, 2 a series, 1 flat features): a cnn takes its input
 * shape from it (flat D as one channel of length D) and checks every
 * line's shapes; mlp and gpt take shape's product as d. */
int mgpu_spec_fit_shape(struct mgpu_spec *s, int ndim, const uint32_t *shape, int classes,
			const char *path);
/* 1 when a size is still auto (an mlp's ends, a cnn's input or classes). */
int mgpu_spec_has_auto(const struct mgpu_spec *s);
/* Fill s's auto sizes from ck, the same spec fitted (a checkpoint's),
 * when both are of one kind and shape. */
void mgpu_spec_take_auto(struct mgpu_spec *s, const struct mgpu_spec *ck);
/* A spec string, or the path of a file holding one. */
int mgpu_spec_load(struct mgpu_spec *s, const char *arg);
/* The canonical string, which mgpu_spec_parse reads back to the same spec. */
int mgpu_spec_format(const struct mgpu_spec *s, char *buf, size_t len);
const char *mgpu_act_name(int act);

#endif
