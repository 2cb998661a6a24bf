/*
 * sniff.c - telling data inputs apart by content (see sniff.h).
 */
#include "data/sniff.h"

#include <errno.h>    /* errno, ENOENT, ENOTDIR */
#include <fcntl.h>    /* open */
#include <stdio.h>    /* snprintf */
#include <string.h>   /* memcmp, strlen */
#include <sys/stat.h> /* stat, S_ISDIR */
#include <unistd.h>   /* read, close */

#include "core/err.h"      /* mgpu_err_errno */
#include "data/cache.h"    /* MGPU_CACHE_MAGIC, MGPU_CACHE_FILE */
#include "data/manifest.h" /* mgpu_manifest_cols */
#include "data/ts.h"       /* mgpu_ts_find_train */

int mgpu_sniff_head(const void *head, size_t len)
{
	const char *first = mgpu_manifest_cols[0];
	size_t n = strlen(first);

	if (len >= 8 && memcmp(head, MGPU_CACHE_MAGIC, 8) == 0)
		return MGPU_SNIFF_CACHE;
	/* the first column name is enough: a wrong header then gets its error */
	if (len > n && memcmp(head, first, n) == 0 && ((const char *)head)[n] == '\t')
		return MGPU_SNIFF_MANIFEST;
	return MGPU_SNIFF_ARCHIVE;
}

int mgpu_sniff_file(const char *path)
{
	unsigned char b[MGPU_SNIFF_NBYTES];
	int fd = open(path, O_RDONLY);
	ssize_t got = 0;

	if (fd >= 0) {
		got = read(fd, b, sizeof b);
		close(fd);
	}
	return mgpu_sniff_head(b, got > 0 ? (size_t)got : 0);
}

/* Does dir hold name? Then *file is its path. */
static int holds(const char *dir, const char *name, char *file, size_t cap)
{
	char p[4200];
	struct stat st;

	snprintf(p, sizeof p, "%s/%s", dir, name);
	if (stat(p, &st) != 0)
		return 0;
	snprintf(file, cap, "%s", p);
	return 1;
}

int mgpu_sniff_path(const char *path, char *file, size_t cap)
{
	struct stat st;
	int found;

	snprintf(file, cap, "%s", path);
	if (stat(path, &st) != 0)
		return errno == ENOENT || errno == ENOTDIR ? MGPU_SNIFF_MISSING :
			mgpu_err_errno(MGPU_EIO, "'%s': cannot open", path);
	if (!S_ISDIR(st.st_mode))
		return mgpu_sniff_file(path);
	if (holds(path, MGPU_CACHE_FILE, file, cap))
		return MGPU_SNIFF_CACHE;
	if (holds(path, MGPU_SNIFF_MANIFEST_FILE, file, cap))
		return MGPU_SNIFF_MANIFEST;
	if (holds(path, "train-images-idx3-ubyte", file, cap) ||
	    holds(path, "train-images-idx3-ubyte.gz", file, cap)) {
		snprintf(file, cap, "%s", path); /* the directory is what is read */
		return MGPU_SNIFF_IDX_DIR;
	}
	MGPU_TRY(mgpu_ts_find_train(path, file, cap, &found));
	if (found)
		return MGPU_SNIFF_TS_DIR;
	snprintf(file, cap, "%s", path);
	return MGPU_SNIFF_NONE;
}
