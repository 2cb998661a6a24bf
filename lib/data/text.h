/*
 * text.h - plain text as byte-level language-model samples: what
 * `mgpu-shard --text --context T` makes of its files.
 *
 * A sample is T+1 consecutive bytes of one file, a u8 row of shape (T+1)
 * with label 0 (labels mean nothing here; the gpt model reads bytes 0..T-1
 * as inputs and bytes 1..T as their next-byte targets). Windows start every
 * T bytes: sample k of a file holds its bytes [k*T, k*T+T], so the last
 * byte of one sample is the first of the next and every byte after a
 * file's first is a target exactly once. A file of L bytes gives
 * floor((L-1)/T) samples; the last (L-1) mod T bytes, too few for another
 * window, are dropped. Each file is cut on its own (no window spans two
 * files, no separator is added), and its samples follow those of the files
 * before it.
 *
 * Empty text, and text shorter than one sample (T+1 bytes), are errors
 * naming the file: a file that gives nothing is almost always the wrong
 * file or the wrong context.
 */
#ifndef MGPU_DATA_TEXT_H
#define MGPU_DATA_TEXT_H

#include <stddef.h> /* size_t */

#include "data/samples.h" /* struct mgpu_samples */

/* Largest context: the largest ctx of a gpt (model/spec.c takes it from
 * here), so that no shard set is cut for a model that cannot exist. */
#define MGPU_TEXT_MAX_CONTEXT ((size_t)1 << 16)

/* Samples that len bytes of text give at context T (0 when len <= T). */
size_t mgpu_text_nsamples(size_t len, size_t context);

/*
 * Cut text[0..len) into samples of context+1 bytes and APPEND them to out
 * (a zeroed out takes the shape (context+1); otherwise it must be u8 of
 * that shape). name labels the errors.
 */
int mgpu_text_cut(const unsigned char *text, size_t len, size_t context, const char *name,
		  struct mgpu_samples *out);

/* Read the file at path ("-": standard input) and cut it as above; more
 * than max bytes (0: no limit) is an error (MGPU_ERANGE), so that a pipe
 * that never ends stops before memory runs out. */
int mgpu_text_load(const char *path, size_t context, size_t max, struct mgpu_samples *out);

#endif
