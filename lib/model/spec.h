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
 * given; at most 2^31 - 1; see model/gpt.h), whose samples are T+1 tokens
 * (inputs 0..T-1, next-token targets 1..T). padded_vocab (>= V, V unless
 * given) is the rows of the token embedding, as llm.c pads GPT-2's 50257
 * to 50304: the rows past V are never a token and never a logit.
 *
 * Or cnn:LINE; LINE; ... : a convolutional network, one layer or block per
 * line (man/mgpu-model.7; model/cnn_spec.c parses it), its input shape and
 * class count from the data unless the spec fixes them.
 *
 * Each family parses, prints and fits its own grammar (model/arch.h); this
 * file finds the family by the prefix and reads spec files.
 *
 * A --model argument that starts with no family's prefix names a file
 * holding a spec: '#' starts a comment; a file whose first line is "cnn" is
 * a conv net of one layer per line, else whitespace or newlines separate
 * the options like commas.
 */
#ifndef MGPU_MODEL_SPEC_H
#define MGPU_MODEL_SPEC_H

#include <stddef.h> /* size_t */

#define MGPU_MAX_LAYERS 16
#define MGPU_SPEC_FILE_MAX (1 << 20) /* bytes of a spec file, comments included */
/* the longest printed spec (mgpu_spec_format), its NUL included */
#define MGPU_SPEC_TEXT_MAX 4096

/* A spec's family: its line in the table of model/arch.c. */
enum mgpu_model_kind { MGPU_MODEL_MLP = 0, MGPU_MODEL_GPT = 1, MGPU_MODEL_CNN = 2,
		       MGPU_MODEL_KINDS };

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

/* The most transformer blocks (each is a gradient bucket, and so are the
 * embeddings and the final LayerNorm). */
#define MGPU_GPT_MAX_BLOCKS (MGPU_MAX_LAYERS - 2)

struct mgpu_spec {
	int kind;                     /* enum mgpu_model_kind */
	float dropout;                /* every family: 0 <= P < 1 */
	/* mlp */
	int nlayers;                  /* linear layers: dims has nlayers + 1 */
	int dims[MGPU_MAX_LAYERS + 1];
	int act;                      /* enum mgpu_act */
	int layernorm;
	/* gpt */
	int blocks, heads, dim, ctx, vocab; /* L, H, D, T, V */
	int padded_vocab;             /* rows of wte (>= vocab) */
	/* cnn */
	int ncnn;                     /* its lines */
	struct mgpu_cnn_line cnn[MGPU_CNN_MAX_LINES];
	int in_c, in_h, in_w;         /* the sample (C,H,W), 0 until known */
	int in_1d;                    /* the sample is a series (C,L): in_h 1 */
	int nbuckets;                 /* its gradient buckets (model/cnn_spec.h) */
};

/* What a family is fitted to (mgpu_spec_fit): the data's samples. */
struct mgpu_data_desc {
	int dtype;                    /* enum mgpu_dtype of the rows (data/samples.h) */
	int d;                        /* values per sample (features, or T+1 ids) */
	int ndim;                     /* data/source.h's mgpu_source_shape: */
	unsigned shape[4];            /* (C,H,W), (C,L) or (D) */
	int classes;                  /* labels are below this; with a target, its
				       * output channels (data/target.h: a vector's
				       * K, keypoints' P maps, a mask's classes) */
	int target;                   /* enum mgpu_target_kind of the samples' target
				       * (0: class labels) */
};

/* The class count an auto size takes from d: a target's channels exactly
 * (a regression of one value has one output), else at least 2. */
int mgpu_spec_auto_classes(const struct mgpu_data_desc *d);

/* An mlp size taken from the data (dims[0] or dims[nlayers]). */
#define MGPU_SPEC_AUTO 0

int mgpu_spec_parse(struct mgpu_spec *s, const char *text, const char *origin);
/* Fit s to the data at path (its samples described by d): auto sizes
 * become the data's; a size the data does not fit (input width other than
 * d, fewer than classes outputs; a gpt whose ctx + 1 is not d) or data
 * the family cannot read is an error that names the spec to write. */
int mgpu_spec_fit(struct mgpu_spec *s, const struct mgpu_data_desc *d, const char *path);
/* 1 when a size is still left to the data (auto). */
int mgpu_spec_has_auto(const struct mgpu_spec *s);
/* A resume: s takes its auto sizes from the checkpoint's spec ck. */
void mgpu_spec_take_auto(struct mgpu_spec *s, const struct mgpu_spec *ck);
/* The classes a model's labels may take (0 for a language model). */
int mgpu_spec_classes(const struct mgpu_spec *s);
/* One sample's outputs (c, h, w) of a fitted spec (an mlp's (n, 1, 1), a
 * conv net's last line's); MGPU_EINVAL for a family whose outputs are no
 * such tensor (a gpt's are per token), naming it; shape NULL: only that. */
int mgpu_spec_out_shape(const struct mgpu_spec *s, int shape[3]);
/* 1 for a language model over token ids (model/arch.h's MGPU_ARCH_TOKENS):
 * a loss per token, bits per byte, generation. */
int mgpu_spec_is_lm(const struct mgpu_spec *s);
/* A language model's logits row stride in floats: its token table's rows
 * (max(vocab, padded_vocab)) rounded up to a multiple of 8, so each row
 * starts 32-byte aligned (cuBLAS's vectorised kernels want 16). */
int mgpu_spec_logits_ld(const struct mgpu_spec *s);
/* For the families' parsers (model/arch.h): 0 when no option of the
 * comma-separated list opts is named twice; the dropout of "dropout=P";
 * P printed exactly (what a checkpoint records and a resume reads back). */
int mgpu_spec_no_repeats(const char *opts, const char *origin);
int mgpu_spec_dropout(struct mgpu_spec *s, const char *val, const char *origin);
const char *mgpu_spec_dropout_str(const struct mgpu_spec *s, char p[32]);
/* A spec string, or the path of a file holding one. */
int mgpu_spec_load(struct mgpu_spec *s, const char *arg);
/* The canonical string, which mgpu_spec_parse reads back to the same spec. */
int mgpu_spec_format(const struct mgpu_spec *s, char *buf, size_t len);

#endif
