/*
 * gpt2tok.h - GPT-2's tokenizer from its own files, to encode text the way
 * GPT-2 did (`mgpu-shard --text --tokenizer DIR`) and to decode what a gpt
 * trained on such ids generates (`mgpu-train --tokenizer DIR`).
 *
 * DIR holds OpenAI's two files: encoder.json (token string -> id, token
 * strings in GPT-2's printable alphabet of the 256 bytes: byte b is the
 * character cs[b] of encoder.py's bytes_to_unicode) and vocab.bpe (a
 * "#version" line, then one merge per line, "A B", ranked by line). Text
 * is cut into pieces by GPT-2's pattern
 *   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 * (PCRE2, UTF-8 with Unicode properties; text that is not UTF-8 is an error
 * naming the byte), and each piece's bytes are merged as encoder.py's bpe()
 * does: the adjacent pair of the lowest rank, every occurrence of it left
 * to right, until no pair is a merge; the parts' ids come from
 * encoder.json. Special tokens ("<|endoftext|>") are ids of their own that
 * text never encodes to.
 *
 * Or a tiktoken ranks file (tiktoken's gpt2.tiktoken, r50k_base.tiktoken):
 * a line per token, its bytes in standard base64, a space and its rank;
 * the ranks are the ids and must be 0..N-1, each once, every single byte
 * among them, and id N is "<|endoftext|>" (vocab N + 1, as tiktoken's gpt2
 * encoding adds it). The same pattern cuts the text, and each piece is
 * encoded as tiktoken's byte_pair_merge does: a piece that is a token is
 * that token, else its bytes merge, lowest rank first (the leftmost on a
 * tie), each adjacent pair whose bytes together are a token, ranked by
 * that token. For GPT-2's files both readers give the same ids.
 */
#ifndef MGPU_DATA_GPT2TOK_H
#define MGPU_DATA_GPT2TOK_H

#include <stddef.h> /* size_t */
#include <stdint.h> /* int32_t */

struct mgpu_gpt2tok {
	int vocab;                 /* ids 0..vocab-1 */
	uint32_t *off, *len;       /* id -> its bytes in pool */
	unsigned char *pool;
	size_t npool;
	int32_t *ids_slot;         /* bytes -> id hash (slot: id + 1) */
	size_t ids_cap;
	int nmerges;
	uint32_t (*merge)[4];      /* rank -> a off, a len, b off, b len (pool) */
	int32_t *merge_slot;       /* pair -> rank hash (slot: rank + 1) */
	size_t merge_cap;
	void *re;                  /* pcre2_code_8 */
	int by_rank;               /* a ranks file: a pair ranks as its bytes' id */
};

/* Read dir/encoder.json and dir/vocab.bpe. */
int mgpu_gpt2tok_load(struct mgpu_gpt2tok *t, const char *dir);
/* The same from the two files' text (the paths name them in errors). */
int mgpu_gpt2tok_parse(struct mgpu_gpt2tok *t, const char *enc, size_t enc_len,
		       const char *enc_path, const char *merges, size_t merges_len,
		       const char *merges_path);
/* Read a tiktoken ranks file; or its text. */
int mgpu_gpt2tok_load_ranks(struct mgpu_gpt2tok *t, const char *path);
int mgpu_gpt2tok_parse_ranks(struct mgpu_gpt2tok *t, const char *text, size_t len,
			     const char *path);
int mgpu_gpt2tok_encode(const struct mgpu_gpt2tok *t, const unsigned char *text, size_t len,
			int32_t **ids, size_t *n);
/* The bytes of ids (malloc'ed, NUL-terminated); an unknown id is MGPU_ERANGE. */
int mgpu_gpt2tok_decode(const struct mgpu_gpt2tok *t, const int32_t *ids, size_t n,
			unsigned char **text, size_t *len);
void mgpu_gpt2tok_free(struct mgpu_gpt2tok *t);

#endif
