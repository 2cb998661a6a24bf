/*
 * cnn_spec.h - a conv net's spec (man/mgpu-model.7), internal to
 * lib/model: the cnn family (cnn.c, model/arch.h) parses, prints and fits
 * its specs here, and walks the shapes their lines make.
 *
 * Shapes are (c, h, w) per sample; a series (C,L) is (C, 1, L), so every
 * 2-D layer runs it with a kernel of height 1 (torch's Conv1d is Conv2d
 * with kh = 1). A linear's output is (n, 1, 1).
 */
#ifndef MGPU_MODEL_CNN_SPEC_H
#define MGPU_MODEL_CNN_SPEC_H

#include <stddef.h> /* size_t */
#include <stdint.h> /* uint32_t */

#include "model/spec.h" /* struct mgpu_spec, struct mgpu_data_desc */

struct mgpu_cnn_shape {
	int c, h, w;
};

/* Parse body (what follows "cnn:" in text), lines separated by ';' (a
 * spec file's lines, model/spec.c); '#' comments to the end of a line;
 * empty lines skipped, but counted in the "line N" of messages. */
int mgpu_cnn_spec_parse(struct mgpu_spec *s, const char *body, const char *text,
			const char *origin);
/* The canonical inline form ("cnn:input C H W; conv ..."), every argument
 * written out; mgpu_cnn_spec_parse reads it back to the same spec. */
int mgpu_cnn_spec_format(const struct mgpu_spec *s, char *buf, size_t len);
/* Take the sample shape (ndim 3, 2 or 1) and class count; check shapes. */
int mgpu_cnn_spec_fit(struct mgpu_spec *s, const struct mgpu_data_desc *d, const char *path);
/* model/arch.h's has_auto, take_auto, classes. */
int mgpu_cnn_has_auto(const struct mgpu_spec *s);
void mgpu_cnn_take_auto(struct mgpu_spec *s, const struct mgpu_spec *ck);
int mgpu_cnn_classes(const struct mgpu_spec *s);
/* out[0] = the input, out[i + 1] = the shape after line i, the input
 * shape known; an error names the line whose output is empty or whose
 * channels its groups do not divide. */
int mgpu_cnn_walk(const struct mgpu_spec *s, struct mgpu_cnn_shape *out, const char *origin);
/* 1 when line op has parameters (conv, bn, gn, res, linear). */
int mgpu_cnn_has_params(int op);
/* Gradient buckets: the lines with parameters in at most MGPU_MAX_LAYERS
 * groups; bucket of the j-th such line (0-based) of np. */
int mgpu_cnn_nbuckets(const struct mgpu_spec *s);
int mgpu_cnn_bucket_of(int j, int np, int nb);
/* Parameters (floats) of a fitted spec, without building it. */
size_t mgpu_cnn_count(const struct mgpu_spec *s);

#endif
