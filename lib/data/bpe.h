/*
 * bpe.h - a byte-level BPE tokenizer of our own: learned from text
 * (`mgpu-shard --text --bpe N`), saved beside the shards, read back to
 * encode prompts and decode what a gpt generates (`mgpu-train --tokenizer`).
 *
 * Tokens 0..255 are the bytes; merge i makes token 256 + i of the pair
 * (a, b) of tokens before it. Text is first cut into words, which no merge
 * crosses: a word is a run of letters (ASCII letters and every byte >= 128,
 * so UTF-8 stays whole), of digits, or of other printable bytes, each with
 * at most one space before it; a run of whitespace is a word of its own,
 * less a last space that starts the next word (GPT-2's split, in bytes).
 *
 * Learning is deterministic: each merge takes the pair of adjacent tokens
 * most frequent over all words (weighted by how often a word occurs), the
 * smallest pair (a, then b) on a tie; it stops early when no pair occurs
 * twice. Encoding merges, in each word, the adjacent pair of the lowest
 * merge rank until none is a merge: the same ids whichever text the word
 * sits in.
 *
 * The file (text): a line "mgpu-bpe 1 N", then N lines "A B", the pair of
 * merge i (token 256 + i) as decimal token ids.
 */
#ifndef MGPU_DATA_BPE_H
#define MGPU_DATA_BPE_H

#include <stddef.h> /* size_t */
#include <stdint.h> /* int32_t */

#define MGPU_BPE_FILE "bpe.txt"   /* beside the shards it encoded */
#define MGPU_BPE_MAX_MERGES 65280 /* vocab 256 + N fits uint16 ids */

struct mgpu_bpe {
	int nmerges;
	int32_t (*pair)[2];      /* merge i: the pair that makes 256 + i */
	uint64_t *keys;          /* pair -> rank hash (open addressing) */
	int32_t *ranks;
	size_t cap;              /* slots of keys/ranks, a power of two */
	uint32_t *off, *len;     /* token t: bytes[off[t] .. off[t] + len[t]) */
	unsigned char *bytes;
};

/* The vocabulary: 256 + nmerges. */
int mgpu_bpe_vocab(const struct mgpu_bpe *b);
/* Learn up to nmerges merges from text[0..len). */
int mgpu_bpe_learn(struct mgpu_bpe *b, const unsigned char *text, size_t len, int nmerges);
/* Encode text[0..len) into *ids (malloc'ed, *n of them). */
int mgpu_bpe_encode(const struct mgpu_bpe *b, const unsigned char *text, size_t len,
		    int32_t **ids, size_t *n);
/* The bytes of ids[0..n) into *text (malloc'ed, NUL-terminated, *len
 * bytes); an id outside the vocabulary is MGPU_ERANGE naming it. */
int mgpu_bpe_decode(const struct mgpu_bpe *b, const int32_t *ids, size_t n,
		    unsigned char **text, size_t *len);
/* The decoding of every byte-level tokenizer (this one, GPT-2's): ids[0..n)
 * joined into *text (malloc'ed, NUL-terminated, *nbytes bytes), token t
 * being pool[off[t] .. off[t] + len[t]); an id not below vocab is
 * MGPU_ERANGE, its message starting with who. */
int mgpu_bpe_join(const unsigned char *pool, const uint32_t *off, const uint32_t *len,
		  int vocab, const int32_t *ids, size_t n, const char *who, unsigned char **text,
		  size_t *nbytes);
/* Write the file at path atomically; read one back. */
int mgpu_bpe_save(const struct mgpu_bpe *b, const char *path);
int mgpu_bpe_load(struct mgpu_bpe *b, const char *path);
/* The same from the file's NUL-terminated text (path names it in errors). */
int mgpu_bpe_parse(struct mgpu_bpe *b, const char *text, const char *path);
void mgpu_bpe_free(struct mgpu_bpe *b);

#endif
