/*
 * fuzz_safetensors.c - libFuzzer harness for the safetensors reader:
 * mgpu_st_parse() on arbitrary bytes; on success every tensor's bytes are
 * read (inside the buffer, by the parser's promise), names and metadata
 * looked up, and float tensors converted.
 *
 * Inputs starting with "J" are taken as a bare JSON header (the length
 * prefix is added here and the rest of the input becomes the data), so the
 * fuzzer reaches the header checks without guessing a valid length.
 */
#include <stddef.h> /* size_t */
#include <stdint.h> /* uint8_t, uint64_t */
#include <stdlib.h> /* abort, malloc, free */
#include <string.h> /* memcpy, memchr */

#include "model/safetensors.h" /* mgpu_st_* */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const struct mgpu_st *st, const uint8_t *buf, size_t size)
{
	volatile unsigned sink = 0;
	float *f;
	size_t j;
	int i;

	for (i = 0; i < st->n; i++) {
		const struct mgpu_st_tensor *t = &st->t[i];
		if (t->data < buf || t->data + (t->end - t->begin) > buf + size)
			abort();
		for (j = t->begin; j < t->end; j++)
			sink += st->data[j];
		if (mgpu_st_find(st, t->name) == NULL)
			abort();
		f = malloc(t->count * sizeof *f + 1);
		if (f && t->count < 1 << 20)
			mgpu_st_read_f32(t, f, t->count);
		free(f);
	}
	for (i = 0; i < st->nmeta; i++)
		if (mgpu_st_meta(st, st->meta[2 * i]) == NULL)
			abort();
	(void)sink;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nl;
	uint8_t *buf = NULL;
	uint64_t n;
	struct mgpu_st st;

	if (size > 0 && data[0] == 'J') {
		/* "J<json>\n<data>" */
		nl = memchr(data, '\n', size);
		n = nl ? (uint64_t)(nl - data - 1) : size - 1;
		buf = malloc(size + 8);
		if (!buf)
			return 0;
		memcpy(buf, &n, 8);
		memcpy(buf + 8, data + 1, n);
		if (nl)
			memcpy(buf + 8 + n, nl + 1, size - (size_t)(nl + 1 - data));
		size = 8 + size - (nl ? 2 : 1);
		data = buf;
	}
	if (mgpu_st_parse(data, size, "fuzz", &st) == 0) {
		check(&st, data, size);
		mgpu_st_free(&st);
	}
	free(buf);
	return 0;
}
