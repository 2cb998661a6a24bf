/*
 * tokens.c - llm.c and nanoGPT token files into language-model samples
 * (see tokens.h).
 */
#include "data/tokens.h"

#include <stdlib.h> /* free */
#include <string.h> /* memcpy, strcmp */

#include "core/err.h" /* mgpu_err */
#include "core/io.h"  /* mgpu_read_file, mgpu_read_fd */
#include "data/text.h" /* mgpu_text_nsamples */

static uint32_t rd32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

/* Token i of ids of nbytes each (little-endian on disk). */
static uint32_t id_at(const unsigned char *ids, size_t i, int nbytes)
{
	const unsigned char *p = ids + i * (size_t)nbytes;

	return nbytes == 2 ? (uint32_t)p[0] | (uint32_t)p[1] << 8 : rd32(p);
}

static int llmc(const unsigned char *data, size_t len, const char *name,
		const struct mgpu_tokens_opts *o, const unsigned char **ids, size_t *count,
		int *nbytes)
{
	uint32_t version, n;
	size_t want;

	if (len < MGPU_TOKENS_LLMC_HEADER_NBYTES)
		return mgpu_err(MGPU_EFORMAT, "'%s': llm.c token file cut short in its header "
				"(%zu of %d bytes)", name, len, MGPU_TOKENS_LLMC_HEADER_NBYTES);
	version = rd32(data + 4);
	n = rd32(data + 8);
	if (version != 1 && version != 2)
		return mgpu_err(MGPU_EFORMAT, "'%s': llm.c token file version %u (want 1: "
				"uint16 ids, or 2: uint32 ids)", name, version);
	*nbytes = version == 1 ? 2 : 4;
	if (o->token_bytes && o->token_bytes != *nbytes)
		return mgpu_err(MGPU_EFORMAT, "'%s': llm.c token file version %u holds %d-byte "
				"ids, not --token-bytes %d", name, version, *nbytes,
				o->token_bytes);
	want = MGPU_TOKENS_LLMC_HEADER_NBYTES + (size_t)n * (size_t)*nbytes;
	if (len != want)
		return mgpu_err(MGPU_EFORMAT, "'%s': llm.c header says %u tokens (%zu bytes), "
				"the file has %zu bytes%s", name, n, want, len,
				len < want ? ": cut short" : "");
	*ids = data + MGPU_TOKENS_LLMC_HEADER_NBYTES;
	*count = n;
	return 0;
}

int mgpu_tokens_parse(const unsigned char *data, size_t len, const char *name,
		      const struct mgpu_tokens_opts *o, const unsigned char **ids,
		      size_t *count, int *nbytes)
{
	if (o->token_bytes && o->token_bytes != 2 && o->token_bytes != 4)
		return mgpu_err(MGPU_EINVAL, "'%s': token bytes %d (want 2 or 4)", name,
				o->token_bytes);
	if (len >= 4 && rd32(data) == MGPU_TOKENS_LLMC_MAGIC)
		return llmc(data, len, name, o, ids, count, nbytes);
	*nbytes = o->token_bytes ? o->token_bytes : 2;
	if (len % (size_t)*nbytes)
		return mgpu_err(MGPU_EFORMAT, "'%s': %zu bytes is not a whole number of %d-byte "
				"token ids (no llm.c header either)", name, len, *nbytes);
	*ids = data;
	*count = len / (size_t)*nbytes;
	return 0;
}

/* out empty: give it the shape; else it must already have it. */
static int want_shape(struct mgpu_samples *out, int dtype, size_t context, const char *name)
{
	uint32_t w = (uint32_t)(context + 1);
	char have[64];

	if (!out->dtype)
		return mgpu_samples_init(out, dtype, 1, &w);
	if (out->dtype == dtype && mgpu_samples_same_shape(out, 1, &w))
		return 0;
	mgpu_samples_shape_str(out->ndim, out->shape, have, sizeof have);
	return mgpu_err(MGPU_EFORMAT, "'%s': token samples are %s %u, earlier sources gave "
			"%s %s", name, mgpu_dtype_name(dtype), w, mgpu_dtype_name(out->dtype),
			have);
}

static int check_vocab(const unsigned char *ids, size_t count, int nbytes, const char *name,
		       uint64_t vocab)
{
	size_t i;
	uint32_t v;

	for (i = 0; vocab && i < count; i++)
		if ((v = id_at(ids, i, nbytes)) >= vocab)
			return mgpu_err(MGPU_ERANGE, "'%s': token %u at position %zu is not below "
					"vocab %llu", name, v, i, (unsigned long long)vocab);
	return 0;
}

int mgpu_tokens_cut(const unsigned char *ids, size_t count, int nbytes, const char *name,
		    const struct mgpu_tokens_opts *o, struct mgpu_samples *out)
{
	int dtype = nbytes == 2 ? MGPU_DTYPE_U16 : MGPU_DTYPE_U32;
	size_t T = o->context, k, n, i;
	unsigned char *row;

	if (T < 1 || T > MGPU_TOKENS_MAX_CONTEXT)
		return mgpu_err(MGPU_EINVAL, "'%s': context %zu out of range [1,%zu]", name, T,
				MGPU_TOKENS_MAX_CONTEXT);
	if (count == 0)
		return mgpu_err(MGPU_EFORMAT, "'%s': no tokens to cut into samples", name);
	n = mgpu_text_nsamples(count, T); /* the same windows as text's bytes */
	if (n == 0)
		return mgpu_err(MGPU_EFORMAT, "'%s': %zu tokens, shorter than one sample of %zu "
				"(context %zu + 1)", name, count, T + 1, T);
	MGPU_TRY(check_vocab(ids, count, nbytes, name, o->vocab));
	MGPU_TRY(want_shape(out, dtype, T, name));
	MGPU_TRY(mgpu_samples_reserve(out, out->n + n));
	for (k = 0; k < n; k++) {
		/* host order in memory: decode rather than copy the file's bytes */
		row = out->x + out->n * out->row_nbytes;
		for (i = 0; i <= T; i++) {
			uint32_t v = id_at(ids, k * T + i, nbytes);
			if (nbytes == 2) {
				uint16_t h = (uint16_t)v;
				memcpy(row + i * 2, &h, 2);
			} else {
				memcpy(row + i * 4, &v, 4);
			}
		}
		out->y[out->n++] = 0;
	}
	if (out->classes < 1)
		out->classes = 1;
	return 0;
}

int mgpu_tokens_load(const char *path, const struct mgpu_tokens_opts *o,
		     struct mgpu_samples *out)
{
	const unsigned char *ids;
	unsigned char *buf = NULL;
	size_t len = 0, count;
	int rc, nbytes;

	if (strcmp(path, "-") == 0)
		rc = mgpu_read_fd(0, "-", &buf, &len);
	else
		rc = mgpu_read_file(path, &buf, &len);
	if (rc == 0)
		rc = mgpu_tokens_parse(buf, len, path, o, &ids, &count, &nbytes);
	if (rc == 0)
		rc = mgpu_tokens_cut(ids, count, nbytes, path, o, out);
	free(buf);
	return rc;
}
