/*
 * input.h - load one outside data file or directory into memory samples:
 * the dispatcher mgpu-shard uses for its SOURCE arguments.
 *
 *   "-"                   a tar (or tar.gz, tar.zst, zip) stream on stdin
 *   a directory           IDX train-* files; its t10k-* files (when present)
 *                         are returned separately as the predefined test set;
 *                         or UEA/UCR NAME_TRAIN.ts (and NAME_TEST.ts, the test
 *                         set), their class names joined
 *   *.ts[.gz|...]         a UEA/UCR time-series file (data/ts.h)
 *                         without them, sub-folders of images (data/imgdir.h)
 *   *.csv[.gz|.zst|.xz]   CSV (label column by name or index; target
 *                         columns, when named, a regression vector)
 *   *.npy                 an array of samples (N, ...), labels from `labels`
 *   *-ubyte[.gz], *.idx   IDX images, labels from `labels`
 *   anything else         a WebDataset archive (tar, tar.gz, tar.zst, zip)
 *
 * PNG and JPEG images (folders, archive members) are resized to resize[0] x
 * resize[1] when resize[0] is not 0; else they must all be one size.
 *
 * With text_context set, every path (and "-") is plain text instead, cut
 * into byte-level language-model samples (data/text.h); with tokens set,
 * every path is a token file (llm.c or nanoGPT, data/tokens.h).
 *
 * Sample shapes (data/samples.h): IDX and .npy arrays (N,H,W) give
 * one-channel images (1,H,W), (N,C,H,W) give (C,H,W), (N,D) flat rows
 * (D); CSV rows are flat; with ndim set every source's rows are given
 * that shape instead (a series (N,C,L) .npy needs it).
 *
 * Samples are APPENDED to out (and test), which must agree in dtype and
 * shape with what they already hold. Every error names the file.
 */
#ifndef MGPU_DATA_INPUT_H
#define MGPU_DATA_INPUT_H

#include "data/samples.h" /* struct mgpu_samples */
#include "data/wds.h"     /* mgpu_wds_progress_fn */

struct mgpu_input_opts {
	const char *labels;        /* labels file for .npy and IDX images, or NULL */
	const char *label_column;  /* CSV label column, or NULL for "label" */
	const char *target_columns; /* CSV regression target columns, or NULL */
	unsigned long long text_context; /* > 0: paths are text, cut at this context */
	int tokens;                /* paths are token files, cut at text_context */
	int token_bytes;           /* their raw ids' width: 2, 4 (0: 2, or the header's) */
	unsigned long long vocab;  /* > 0: token ids must stay below it */
	unsigned long long text_max;     /* bytes of text per path at most; 0: no limit */
	uint32_t resize[2];        /* images to H x W; 0, 0: no resizing */
	/* Called while an archive is read (NULL: not): its bytes consumed
	 * and the samples read so far. */
	mgpu_wds_progress_fn progress;
	void *progress_ctx;
	int ndim;                  /* > 0: every source's rows take this shape */
	uint32_t shape[MGPU_SAMPLES_MAX_DIM]; /* (--shape; the same count of values) */
};

int mgpu_input_load(const char *path, const struct mgpu_input_opts *o,
		    struct mgpu_samples *out, struct mgpu_samples *test);
/* Append all of src to dst (a zeroed dst takes src's shape). */
int mgpu_samples_append(struct mgpu_samples *dst, const struct mgpu_samples *src,
			const char *name);

#endif
