/*
 * io.c - whole-file reads and atomic writes (see io.h).
 */
#include "core/io.h"

#include <errno.h>    /* errno, EEXIST */
#include <fcntl.h>    /* open */
#include <libgen.h>   /* dirname */
#include <stdlib.h>   /* malloc, free */
#include <string.h>   /* strlen, memcpy */
#include <sys/stat.h> /* mkdir, stat */
#include <unistd.h>   /* fsync, getpid, unlink */

#include "core/err.h" /* mgpu_err */

int mgpu_afile_open(struct mgpu_afile *af, const char *path)
{
	af->fp = NULL;
	af->tmp[0] = '\0';
	if (strlen(path) >= sizeof af->path)
		return mgpu_err(MGPU_EINVAL, "'%s': path too long", path);
	snprintf(af->path, sizeof af->path, "%s", path);
	snprintf(af->tmp, sizeof af->tmp, "%s.tmp.%ld", path, (long)getpid());
	af->fp = fopen(af->tmp, "wb");
	if (!af->fp) {
		af->tmp[0] = '\0';
		return mgpu_err_errno(MGPU_EIO, "'%s': cannot create", path);
	}
	return 0;
}

int mgpu_fsync_dir(const char *path)
{
	char buf[4096];
	int fd, rc = 0;

	snprintf(buf, sizeof buf, "%s", path);
	fd = open(buf, O_RDONLY | O_DIRECTORY);
	if (fd < 0)
		return mgpu_err_errno(MGPU_EIO, "'%s': cannot open directory", path);
	if (fsync(fd) != 0 && errno != EINVAL)
		rc = mgpu_err_errno(MGPU_EIO, "'%s': fsync failed", path);
	close(fd);
	return rc;
}

int mgpu_afile_commit(struct mgpu_afile *af)
{
	char dir[4096];
	int bad;

	bad = fflush(af->fp) != 0 || ferror(af->fp) || fsync(fileno(af->fp)) != 0;
	if (bad) {
		mgpu_err_errno(MGPU_EIO, "'%s': write failed", af->path);
		mgpu_afile_abort(af);
		return MGPU_EIO;
	}
	bad = fclose(af->fp) != 0;
	af->fp = NULL;
	if (bad || rename(af->tmp, af->path) != 0) {
		mgpu_err_errno(MGPU_EIO, "'%s': cannot complete write", af->path);
		mgpu_afile_abort(af);
		return MGPU_EIO;
	}
	af->tmp[0] = '\0';
	snprintf(dir, sizeof dir, "%s", af->path);
	return mgpu_fsync_dir(dirname(dir));
}

void mgpu_afile_abort(struct mgpu_afile *af)
{
	if (af->fp)
		fclose(af->fp);
	af->fp = NULL;
	if (af->tmp[0])
		unlink(af->tmp);
	af->tmp[0] = '\0';
}

int mgpu_write_file_atomic(const char *path, const void *data, size_t len)
{
	struct mgpu_afile af;

	MGPU_TRY(mgpu_afile_open(&af, path));
	if (len && fwrite(data, 1, len, af.fp) != len) {
		mgpu_afile_abort(&af);
		return mgpu_err_errno(MGPU_EIO, "'%s': write failed", path);
	}
	return mgpu_afile_commit(&af);
}

int mgpu_read_file(const char *path, unsigned char **data, size_t *len)
{
	FILE *fp;
	unsigned char *buf = NULL, *nb;
	size_t cap = 0, n = 0, got;

	*data = NULL;
	*len = 0;
	fp = fopen(path, "rb");
	if (!fp)
		return mgpu_err_errno(MGPU_EIO, "'%s': cannot open", path);
	for (;;) {
		if (n + 1 >= cap) {
			cap = cap ? cap * 2 : 65536;
			nb = realloc(buf, cap);
			if (!nb) {
				free(buf);
				fclose(fp);
				return mgpu_err(MGPU_ENOMEM, "'%s': out of memory", path);
			}
			buf = nb;
		}
		got = fread(buf + n, 1, cap - n - 1, fp);
		n += got;
		if (got == 0)
			break;
	}
	if (ferror(fp)) {
		free(buf);
		fclose(fp);
		return mgpu_err_errno(MGPU_EIO, "'%s': read failed", path);
	}
	fclose(fp);
	buf[n] = '\0';
	*data = buf;
	*len = n;
	return 0;
}

int mgpu_mkdirs_made(const char *path, size_t *made)
{
	char buf[4096];
	size_t i, len = strlen(path);

	*made = 0;
	if (len == 0 || len >= sizeof buf)
		return mgpu_err(MGPU_EINVAL, "'%s': bad directory name", path);
	memcpy(buf, path, len + 1);
	for (i = 1; i <= len; i++) {
		if (buf[i] != '/' && buf[i] != '\0')
			continue;
		buf[i] = '\0';
		if (mkdir(buf, 0777) == 0) {
			if (*made == 0)
				*made = i;
		} else if (errno != EEXIST) {
			return mgpu_err_errno(MGPU_EIO, "'%s': cannot create directory", buf);
		}
		buf[i] = path[i];
	}
	return 0;
}

int mgpu_mkdirs(const char *path)
{
	size_t made;

	return mgpu_mkdirs_made(path, &made);
}

int mgpu_path_join(char *buf, size_t len, const char *dir, const char *name)
{
	int n = snprintf(buf, len, "%s/%s", dir, name);

	if (n < 0 || (size_t)n >= len)
		return mgpu_err(MGPU_EINVAL, "'%s/%s': path too long", dir, name);
	return 0;
}
