/*
 * tokens.h - pre-tokenised language-model data: what
 * `mgpu-shard --tokens --context T` makes of its files.
 *
 * Two layouts people keep token ids in:
 *   llm.c      a header of 256 little-endian int32 (magic 20240520, version,
 *              token count, the rest unused) and then the ids: uint16 for
 *              version 1 (GPT-2), uint32 for version 2 (LLaMA 3);
 *   nanoGPT    the ids alone, little-endian uint16 (np.memmap(..., uint16)),
 *              or uint32 where ids pass 65535 (token_bytes 4).
 * A file whose first int32 is the magic is read as llm.c's (its version
 * fixes the width, which token_bytes, when given, must agree with); any
 * other file is raw ids of token_bytes (2 unless given).
 *
 * Samples are windows of T+1 ids cut as text.h cuts bytes (stride T, the
 * last id of a window the first of the next, each file on its own, a
 * short tail dropped), rows of u16 (2-byte ids) or u32 (4-byte ids) with
 * label 0. With vocab > 0 an id at or above it is an error naming the file
 * and the id's position (its index among the file's ids).
 */
#ifndef MGPU_DATA_TOKENS_H
#define MGPU_DATA_TOKENS_H

#include <stddef.h> /* size_t */
#include <stdint.h> /* uint64_t */

#include "data/samples.h" /* struct mgpu_samples */
#include "data/text.h"    /* MGPU_TEXT_MAX_CONTEXT */

#define MGPU_TOKENS_LLMC_MAGIC 20240520
#define MGPU_TOKENS_LLMC_HEADER_NBYTES (256 * 4)
/* Largest context: as text's. */
#define MGPU_TOKENS_MAX_CONTEXT MGPU_TEXT_MAX_CONTEXT

struct mgpu_tokens_opts {
	size_t context;     /* T: samples hold T+1 ids */
	int token_bytes;    /* 2 or 4; 0: the header's, else 2 */
	uint64_t vocab;     /* > 0: ids must stay below it */
};

/*
 * The ids of one file's bytes data[0..len): *ids points into data, *count
 * ids of *nbytes (2 or 4) bytes each. name labels the errors.
 */
int mgpu_tokens_parse(const unsigned char *data, size_t len, const char *name,
		      const struct mgpu_tokens_opts *o, const unsigned char **ids,
		      size_t *count, int *nbytes);

/*
 * Cut count ids of nbytes each into samples of context+1 ids and APPEND
 * them to out (a zeroed out takes the shape; otherwise it must hold the
 * same dtype and shape). Checks the ids against o->vocab first.
 */
int mgpu_tokens_cut(const unsigned char *ids, size_t count, int nbytes, const char *name,
		    const struct mgpu_tokens_opts *o, struct mgpu_samples *out);

/* Read the file at path ("-": standard input), parse and cut it as above. */
int mgpu_tokens_load(const char *path, const struct mgpu_tokens_opts *o,
		     struct mgpu_samples *out);

#endif
