/*
 * io.c - whole-file reads and atomic writes (see io.h).
 */
#include "core/io.h"

#include <dirent.h>   /* opendir, readdir */
#include <errno.h>    /* errno, EEXIST, EINTR, ESRCH */
#include <fcntl.h>    /* open */
#include <signal.h>   /* kill */
#include <libgen.h>   /* dirname */
#include <poll.h>     /* poll */
#include <stdlib.h>   /* malloc, free */
#include <string.h>   /* strlen, memcpy */
#include <sys/stat.h> /* mkdir, stat */
#include <unistd.h>   /* fsync, getpid, unlink, read */

#include "core/cancel.h" /* mgpu_cancel_check */
#include "core/err.h" /* mgpu_err */

/* The dead temporaries of path in its directory. */
static void sweep_dead(const char *path)
{
	char dir[4096], base[4096];

	snprintf(dir, sizeof dir, "%s", path);
	snprintf(base, sizeof base, "%s", path);
	mgpu_tmp_sweep(dirname(dir), basename(base));
}

int mgpu_afile_open(struct mgpu_afile *af, const char *path)
{
	struct stat st;

	af->fp = NULL;
	af->tmp[0] = '\0';
	if (strlen(path) >= sizeof af->path)
		return mgpu_err(MGPU_EINVAL, "'%s': path too long", path);
	snprintf(af->path, sizeof af->path, "%s", path);
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
		return mgpu_err(MGPU_EINVAL, "'%s': is a directory", path);
	if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
		af->fp = fopen(path, "wb");
		if (!af->fp)
			return mgpu_err_errno(MGPU_EIO, "'%s': cannot open", path);
		return 0;
	}
	sweep_dead(path); /* what killed writers of path left (SIGKILL) */
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

	if (!af->tmp[0]) { /* a device or FIFO, written in place */
		bad = fflush(af->fp) != 0 || ferror(af->fp);
		bad |= fclose(af->fp) != 0;
		af->fp = NULL;
		return bad ? mgpu_err_errno(MGPU_EIO, "'%s': write failed", af->path) : 0;
	}
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

/* Make room for at least one more byte after n, plus the NUL. */
static int room(unsigned char **buf, size_t *cap, size_t n, const char *name)
{
	unsigned char *nb;
	size_t ncap;

	if (n + 1 < *cap)
		return 0;
	ncap = *cap < 65536 ? 65536 : *cap * 2;
	nb = realloc(*buf, ncap);
	if (!nb)
		return mgpu_err(MGPU_ENOMEM, "'%s': out of memory", name);
	*buf = nb;
	*cap = ncap;
	return 0;
}

int mgpu_wait_input(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int k;

	if (fd < 0) /* poll would wait on it forever: read() says what is wrong */
		return 0;
	for (;;) {
		MGPU_TRY(mgpu_cancel_check());
		k = poll(&p, 1, 100);
		if (k > 0 || (k < 0 && errno != EINTR))
			return 0; /* ready, or an error read() reports */
	}
}

int mgpu_read_fd(int fd, const char *name, unsigned char **data, size_t *len)
{
	return mgpu_read_fd_max(fd, name, (size_t)-1, data, len);
}

int mgpu_read_fd_max(int fd, const char *name, size_t max, unsigned char **data,
		     size_t *len)
{
	unsigned char *buf = *data;
	size_t n = *len, cap = n; /* the caller's buffer holds at least n bytes */
	ssize_t got;
	int rc = 0;

	for (;;) {
		MGPU_CHECK(room(&buf, &cap, n, name));
		MGPU_CHECK(mgpu_wait_input(fd));
		got = read(fd, buf + n, cap - n - 1);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			rc = mgpu_err_errno(MGPU_EIO, "'%s': read failed", name);
			goto out;
		}
		if (got == 0)
			break;
		n += (size_t)got;
		if (n > max) {
			rc = mgpu_err(MGPU_ERANGE, "'%s': more than %zu bytes", name, max);
			goto out;
		}
	}
	buf[n] = '\0';
out:
	if (rc < 0) {
		free(buf);
		buf = NULL;
		n = 0;
	}
	*data = buf;
	*len = n;
	return rc;
}

int mgpu_read_file(const char *path, unsigned char **data, size_t *len)
{
	int fd, rc;

	*data = NULL;
	*len = 0;
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return mgpu_err_errno(MGPU_EIO, "'%s': cannot open", path);
	rc = mgpu_read_fd(fd, path, data, len);
	close(fd);
	return rc;
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

long mgpu_tmp_pid(const char *name, const char *stem)
{
	const char *t = strstr(name, ".tmp.");
	long pid = 0;

	if (stem)
		t = strncmp(name, stem, strlen(stem)) == 0 ? name + strlen(stem) : NULL;
	else
		while (t && strstr(t + 1, ".tmp."))
			t = strstr(t + 1, ".tmp.");
	if (!t || strncmp(t, ".tmp.", 5) != 0 || t == name)
		return 0;
	for (t += 5; *t >= '0' && *t <= '9' && pid < 1L << 40; t++)
		pid = pid * 10 + (*t - '0');
	return *t == '\0' ? pid : 0;
}

int mgpu_tmp_sweep(const char *dir, const char *stem)
{
	char path[4096];
	struct dirent *de;
	struct stat st;
	DIR *d = opendir(dir);
	long pid;
	int n = 0;

	while (d && (de = readdir(d))) {
		pid = mgpu_tmp_pid(de->d_name, stem);
		if (pid <= 0 || pid == (long)getpid() || kill((pid_t)pid, 0) == 0 ||
		    errno != ESRCH || mgpu_path_join(path, sizeof path, dir, de->d_name) < 0 ||
		    lstat(path, &st) != 0)
			continue;
		if (S_ISDIR(st.st_mode) ? mgpu_rmdir_flat(path) == 0 : unlink(path) == 0)
			n++;
	}
	if (d)
		closedir(d);
	mgpu_err_clear();
	return n;
}

int mgpu_rmdir_flat(const char *dir)
{
	char path[4096];
	struct dirent *de;
	DIR *d = opendir(dir);

	if (!d)
		return mgpu_err_errno(MGPU_EIO, "'%s': cannot open directory", dir);
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0 &&
		    mgpu_path_join(path, sizeof path, dir, de->d_name) == 0)
			unlink(path);
	closedir(d);
	if (rmdir(dir) != 0)
		return mgpu_err_errno(MGPU_EIO, "'%s': cannot remove directory", dir);
	return 0;
}

int mgpu_same_bytes(const char *a, const char *b)
{
	enum { BUF = 1 << 16 };
	unsigned char *ba = malloc(2 * BUF), *bb = ba + BUF;
	FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
	size_t na, nb;
	int same = fa && fb && ba;

	while (same) {
		na = fread(ba, 1, BUF, fa);
		nb = fread(bb, 1, BUF, fb);
		same = na == nb && memcmp(ba, bb, na) == 0;
		if (na < BUF)
			break;
	}
	if (!ba)
		same = mgpu_err(MGPU_ENOMEM, "out of memory");
	else if (!fa || !fb)
		same = mgpu_err_errno(MGPU_EIO, "'%s': cannot open", fa ? b : a);
	else if (ferror(fa) || ferror(fb))
		same = mgpu_err_errno(MGPU_EIO, "'%s': read failed", ferror(fa) ? a : b);
	if (fa)
		fclose(fa);
	if (fb)
		fclose(fb);
	free(ba);
	return same;
}

int mgpu_tmp_template(char *buf, size_t cap, const char *prefix)
{
	size_t n = strlen(prefix);

	if (n + 7 > cap)
		return mgpu_err(MGPU_EINVAL, "'%s': temporary name too long", prefix);
	memcpy(buf, prefix, n);
	memset(buf + n, 'X', 6); /* what mkstemp and mkdtemp replace */
	buf[n + 6] = '\0';
	return 0;
}
