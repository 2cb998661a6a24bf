/*
 * text.c - text files into byte-level language-model samples (see text.h).
 */
#include "data/text.h"

#include <fcntl.h>  /* open */
#include <stdint.h> /* uint32_t */
#include <stdlib.h> /* free */
#include <string.h> /* strcmp */
#include <unistd.h> /* close */

#include "core/err.h"     /* mgpu_err */
#include "core/io.h"      /* mgpu_read_fd_max */

size_t mgpu_text_nsamples(size_t len, size_t context)
{
	return context && len > context ? (len - 1) / context : 0;
}

/* out empty: give it the shape (context+1); else it must already have it. */
static int want_shape(struct mgpu_samples *out, size_t context, const char *name)
{
	uint32_t w = (uint32_t)(context + 1);
	char have[64];

	if (!out->dtype)
		return mgpu_samples_init(out, MGPU_DTYPE_U8, 1, &w);
	if (out->dtype == MGPU_DTYPE_U8 && mgpu_samples_same_shape(out, 1, &w))
		return 0;
	mgpu_samples_shape_str(out->ndim, out->shape, have, sizeof have);
	return mgpu_err(MGPU_EFORMAT, "'%s': text samples are u8 %u, earlier sources gave %s %s",
			name, w, mgpu_dtype_name(out->dtype), have);
}

int mgpu_text_cut(const unsigned char *text, size_t len, size_t context, const char *name,
		  struct mgpu_samples *out)
{
	size_t k, n;

	if (context < 1 || context > MGPU_TEXT_MAX_CONTEXT)
		return mgpu_err(MGPU_EINVAL, "'%s': context %zu out of range [1,%zu]", name,
				context, MGPU_TEXT_MAX_CONTEXT);
	if (len == 0)
		return mgpu_err(MGPU_EFORMAT, "'%s': empty, no text to cut into samples", name);
	n = mgpu_text_nsamples(len, context);
	if (n == 0)
		return mgpu_err(MGPU_EFORMAT, "'%s': %zu bytes, shorter than one sample of %zu "
				"(context %zu + 1)", name, len, context + 1, context);
	MGPU_TRY(want_shape(out, context, name));
	MGPU_TRY(mgpu_samples_reserve(out, out->n + n));
	for (k = 0; k < n; k++)
		MGPU_TRY(mgpu_samples_push(out, text + k * context, 0));
	return 0;
}

int mgpu_text_load(const char *path, size_t context, size_t max, struct mgpu_samples *out)
{
	unsigned char *buf = NULL;
	size_t len = 0;
	int fd = 0, rc;

	if (strcmp(path, "-") != 0 && (fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return mgpu_err_errno(MGPU_EIO, "'%s': cannot open", path);
	rc = mgpu_read_fd_max(fd, path, max ? max : (size_t)-1, &buf, &len);
	if (fd != 0)
		close(fd);
	if (rc == MGPU_ERANGE)
		rc = mgpu_err(rc, "'%s': more than %zu bytes of text (--text-limit): a pipe "
			      "that does not end?", path, max);
	if (rc == 0)
		rc = mgpu_text_cut(buf, len, context, path, out);
	free(buf);
	return rc;
}
