/*
 * tokenizer.c - mgpu's BPE or GPT-2's, by what the path holds (see
 * tokenizer.h): a file that starts "mgpu-bpe " is ours, any other file a
 * tiktoken ranks file.
 */
#include "data/tokenizer.h"

#include <stdio.h>    /* snprintf, fopen, fread */
#include <string.h>   /* memset, memcmp */
#include <sys/stat.h> /* stat, S_ISDIR */

#include "core/err.h" /* mgpu_err */

/* Our file starts with its name; anything else is read as tiktoken's. */
static int is_bpe_file(const char *path)
{
	char head[9] = { 0 };
	FILE *f = fopen(path, "rb");
	size_t n = f ? fread(head, 1, sizeof head, f) : 0;

	if (f)
		fclose(f);
	return n == sizeof head && memcmp(head, "mgpu-bpe ", sizeof head) == 0;
}

int mgpu_tokenizer_open(struct mgpu_tokenizer *t, const char *path)
{
	char f[4200];
	struct stat st;

	memset(t, 0, sizeof *t);
	if (stat(path, &st) != 0)
		return mgpu_err_errno(MGPU_EIO, "'%s': cannot open", path);
	if (!S_ISDIR(st.st_mode)) {
		if (is_bpe_file(path)) {
			MGPU_TRY(mgpu_bpe_load(&t->bpe, path));
			t->kind = MGPU_TOKENIZER_BPE;
		} else {
			MGPU_TRY(mgpu_gpt2tok_load_ranks(&t->gpt2, path));
			t->kind = MGPU_TOKENIZER_GPT2;
		}
		return 0;
	}
	snprintf(f, sizeof f, "%s/encoder.json", path);
	if (stat(f, &st) == 0) {
		MGPU_TRY(mgpu_gpt2tok_load(&t->gpt2, path));
		t->kind = MGPU_TOKENIZER_GPT2;
		return 0;
	}
	snprintf(f, sizeof f, "%s/%s", path, MGPU_BPE_FILE);
	if (stat(f, &st) != 0)
		return mgpu_err(MGPU_EIO, "'%s': holds neither encoder.json and vocab.bpe (GPT-2) "
				"nor %s (mgpu-shard --bpe)", path, MGPU_BPE_FILE);
	MGPU_TRY(mgpu_bpe_load(&t->bpe, f));
	t->kind = MGPU_TOKENIZER_BPE;
	return 0;
}

int mgpu_tokenizer_vocab(const struct mgpu_tokenizer *t)
{
	return t->kind == MGPU_TOKENIZER_GPT2 ? t->gpt2.vocab : mgpu_bpe_vocab(&t->bpe);
}

int mgpu_tokenizer_encode(const struct mgpu_tokenizer *t, const unsigned char *text,
			  size_t len, int32_t **ids, size_t *n)
{
	if (t->kind == MGPU_TOKENIZER_GPT2)
		return mgpu_gpt2tok_encode(&t->gpt2, text, len, ids, n);
	return mgpu_bpe_encode(&t->bpe, text, len, ids, n);
}

int mgpu_tokenizer_decode(const struct mgpu_tokenizer *t, const int32_t *ids, size_t n,
			  unsigned char **text, size_t *len)
{
	if (t->kind == MGPU_TOKENIZER_GPT2)
		return mgpu_gpt2tok_decode(&t->gpt2, ids, n, text, len);
	return mgpu_bpe_decode(&t->bpe, ids, n, text, len);
}

void mgpu_tokenizer_close(struct mgpu_tokenizer *t)
{
	mgpu_bpe_free(&t->bpe);
	mgpu_gpt2tok_free(&t->gpt2);
	t->kind = 0;
}
