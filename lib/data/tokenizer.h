/*
 * tokenizer.h - one face for the two tokenizers mgpu reads: its own BPE
 * (data/bpe.h, a bpe.txt file, or a directory holding one) and GPT-2's
 * (data/gpt2tok.h, a directory holding encoder.json and vocab.bpe, or a
 * tiktoken ranks file such as gpt2.tiktoken).
 */
#ifndef MGPU_DATA_TOKENIZER_H
#define MGPU_DATA_TOKENIZER_H

#include <stddef.h> /* size_t */
#include <stdint.h> /* int32_t */

#include "data/bpe.h"     /* struct mgpu_bpe */
#include "data/gpt2tok.h" /* struct mgpu_gpt2tok */

enum { MGPU_TOKENIZER_BPE = 1, MGPU_TOKENIZER_GPT2 = 2 };

struct mgpu_tokenizer {
	int kind;
	struct mgpu_bpe bpe;
	struct mgpu_gpt2tok gpt2;
};

/* path: a bpe.txt or a tiktoken ranks file (by its first bytes), or a
 * directory with encoder.json (GPT-2) or bpe.txt. */
int mgpu_tokenizer_open(struct mgpu_tokenizer *t, const char *path);
int mgpu_tokenizer_vocab(const struct mgpu_tokenizer *t);
int mgpu_tokenizer_encode(const struct mgpu_tokenizer *t, const unsigned char *text,
			  size_t len, int32_t **ids, size_t *n);
int mgpu_tokenizer_decode(const struct mgpu_tokenizer *t, const int32_t *ids, size_t n,
			  unsigned char **text, size_t *len);
void mgpu_tokenizer_close(struct mgpu_tokenizer *t);

#endif
