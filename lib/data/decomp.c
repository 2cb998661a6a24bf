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

/* Copy the single raw entry's data into a growing buffer: at most
 * max_nbytes + 1 bytes are ever decoded, the one over the limit telling
 * that the stream is longer. */
static int drain(struct archive *a, const char *path, size_t max_nbytes,
		 unsigned char **buf, size_t *cap, size_t *len)
{
	la_ssize_t got;
	size_t want;

	for (;;) {
		want = max_nbytes - *len + 1;
		if (want > CHUNK_NBYTES)
			want = CHUNK_NBYTES;
		MGPU_TRY(grow(buf, cap, *len + want, path));
		got = archive_read_data(a, *buf + *len, want);
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

/* Open path as one decoded stream in *ap (freed by the caller, also on
 * failure): 1 when it has data, 0 when it is empty, or an error. */
static int open_stream(const char *path, struct archive **ap)
{
	struct archive_entry *ent;
	struct stat st;
	int r;

	*ap = NULL;
	if (stat(path, &st) != 0)
		return mgpu_err_errno(MGPU_EIO, "'%s': cannot open", path);
	if (S_ISDIR(st.st_mode))
		return mgpu_err(MGPU_EIO, "'%s': is a directory", path);
	*ap = archive_read_new();
	if (!*ap)
		return mgpu_err(MGPU_ENOMEM, "'%s': out of memory", path);
	archive_read_support_filter_all(*ap);
	archive_read_support_format_raw(*ap);
	archive_read_support_format_empty(*ap);
	if (archive_read_open_filename(*ap, path, 1 << 16) != ARCHIVE_OK)
		return open_error(*ap, path);
	r = archive_read_next_header(*ap, &ent);
	if (r != ARCHIVE_OK && r != ARCHIVE_EOF)
		return mgpu_err(MGPU_EFORMAT, "'%s': cannot decompress: %s", path,
				arch_msg(*ap));
	return r == ARCHIVE_OK; /* EOF: the empty format, nothing to read */
}

int mgpu_read_maybe_compressed_max(const char *path, size_t max_nbytes,
				   unsigned char **data, size_t *len)
{
	struct archive *a;
	unsigned char *buf = NULL;
	size_t cap = 0, n = 0;
	int rc = 0, has;

	*data = NULL;
	*len = 0;
	has = open_stream(path, &a);
	MGPU_CHECK(has);
	MGPU_CHECK(grow(&buf, &cap, 0, path));
	if (has)
		MGPU_CHECK(drain(a, path, max_nbytes, &buf, &cap, &n));
	buf[n] = '\0';
	*data = buf;
	*len = n;
	buf = NULL;
out:
	free(buf);
	if (a)
		archive_read_free(a);
	return rc < 0 ? rc : 0;
}

int mgpu_read_maybe_compressed_head(const char *path, unsigned char *buf, size_t cap,
				    size_t *n)
{
	struct archive *a;
	la_ssize_t got = 1;
	int rc;

	*n = 0;
	rc = open_stream(path, &a);
	while (rc > 0 && *n < cap && got > 0) {
		got = archive_read_data(a, buf + *n, cap - *n);
		if (got < 0)
			rc = mgpu_err(MGPU_EFORMAT, "'%s': cannot decompress: %s", path,
				      arch_msg(a));
		else
			*n += (size_t)got;
	}
	if (a)
		archive_read_free(a);
	return rc < 0 ? rc : 0;
}

int mgpu_read_maybe_compressed(const char *path, unsigned char **data, size_t *len)
{
	return mgpu_read_maybe_compressed_max(path, MGPU_DECOMP_MAX_NBYTES, data, len);
}
