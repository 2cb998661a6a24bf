/*
 * decomp.c - whole-file reads through libarchive's decompression filters
 * (see decomp.h).
 *
 * libarchive is opened with every filter and the "raw" format, so a plain
 * file and a compressed one come out the same way: one entry whose data is
 * the decoded stream. libarchive reports a truncated stream as ARCHIVE_FATAL
 * (or at least a warning) from archive_read_data(); both are errors here.
 * The "empty" format is enabled too: the raw format refuses to bid on an
 * empty stream (an empty file or a compressed nothing). Open failures are
 * format errors unless libarchive reports a system errno.
 */
#include "data/decomp.h"

#include <archive.h>  /* archive_read_*, archive_errno, archive_error_string */
#include <archive_entry.h> /* struct archive_entry */
#include <errno.h>    /* EILSEQ, EINVAL */
#include <stdlib.h>   /* malloc, realloc, free */
#include <sys/stat.h> /* stat */

#include "core/err.h" /* mgpu_err, MGPU_E* */

#define CHUNK_NBYTES ((size_t)1 << 20)

static const char *arch_msg(struct archive *a)
{
	const char *s = archive_error_string(a);
	return s ? s : "unknown libarchive error";
}

/* Grow buf so that it holds at least need + 1 bytes (the NUL). */
static int grow(unsigned char **buf, size_t *cap, size_t need, const char *path)
{
	size_t ncap = *cap ? *cap : CHUNK_NBYTES;
	unsigned char *nb;

	while (ncap < need + 1)
		ncap = ncap / 2 * 3 + CHUNK_NBYTES;
	if (ncap == *cap)
		return 0;
	nb = realloc(*buf, ncap);
	if (!nb)
		return mgpu_err(MGPU_ENOMEM, "'%s': out of memory reading %zu bytes", path, need);
	*buf = nb;
	*cap = ncap;
	return 0;
}

/* Copy the single raw entry's data into a growing buffer. */
static int drain(struct archive *a, const char *path, size_t max_nbytes,
		 unsigned char **buf, size_t *cap, size_t *len)
{
	la_ssize_t got;

	for (;;) {
		MGPU_TRY(grow(buf, cap, *len + CHUNK_NBYTES, path));
		got = archive_read_data(a, *buf + *len, CHUNK_NBYTES);
		if (got < 0)
			return mgpu_err(MGPU_EFORMAT, "'%s': cannot decompress: %s", path,
					arch_msg(a));
		if (got == 0)
			return 0;
		*len += (size_t)got;
		if (*len > max_nbytes)
			return mgpu_err(MGPU_ERANGE, "'%s': decompressed size exceeds %zu bytes",
					path, max_nbytes);
	}
}

/* Failing to open the stream: a system error, or data libarchive rejects. */
static int open_error(struct archive *a, const char *path)
{
	int e = archive_errno(a);

	/* libarchive's private ARCHIVE_ERRNO_FILE_FORMAT, _PROGRAMMER, _MISC */
	if (e == EILSEQ || e == EINVAL || e <= 0)
		return mgpu_err(MGPU_EFORMAT, "'%s': cannot decompress: %s", path,
				arch_msg(a));
	return mgpu_err(MGPU_EIO, "'%s': cannot open: %s", path, arch_msg(a));
}

int mgpu_read_maybe_compressed_max(const char *path, size_t max_nbytes,
				   unsigned char **data, size_t *len)
{
	struct archive *a = NULL;
	struct archive_entry *ent;
	struct stat st;
	unsigned char *buf = NULL;
	size_t cap = 0, n = 0;
	int rc = 0, r;

	*data = NULL;
	*len = 0;
	if (stat(path, &st) != 0)
		return mgpu_err_errno(MGPU_EIO, "'%s': cannot open", path);
	if (S_ISDIR(st.st_mode))
		return mgpu_err(MGPU_EIO, "'%s': is a directory", path);
	a = archive_read_new();
	if (!a)
		return mgpu_err(MGPU_ENOMEM, "'%s': out of memory", path);
	archive_read_support_filter_all(a);
	archive_read_support_format_raw(a);
	archive_read_support_format_empty(a);
	if (archive_read_open_filename(a, path, 1 << 16) != ARCHIVE_OK) {
		rc = open_error(a, path);
		goto out;
	}
	r = archive_read_next_header(a, &ent);
	if (r != ARCHIVE_OK && r != ARCHIVE_EOF) {
		rc = mgpu_err(MGPU_EFORMAT, "'%s': cannot decompress: %s", path, arch_msg(a));
		goto out;
	}
	MGPU_CHECK(grow(&buf, &cap, 0, path));
	if (r == ARCHIVE_OK) /* EOF: the empty format, nothing to read */
		MGPU_CHECK(drain(a, path, max_nbytes, &buf, &cap, &n));
	buf[n] = '\0';
	*data = buf;
	*len = n;
	buf = NULL;
out:
	free(buf);
	if (a)
		archive_read_free(a);
	return rc;
}

int mgpu_read_maybe_compressed(const char *path, unsigned char **data, size_t *len)
{
	return mgpu_read_maybe_compressed_max(path, MGPU_DECOMP_MAX_NBYTES, data, len);
}
