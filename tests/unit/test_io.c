/*
 * test_io.c - unit tests of lib/core/io: reading a descriptor to its end
 * (regular files, pipes, appending after bytes already read) and whole-file
 * reads.
 */
#include <fcntl.h>  /* open */
#include <stdlib.h> /* malloc, free */
#include <string.h> /* memcmp, memcpy */
#include <sys/wait.h> /* waitpid */
#include <unistd.h> /* pipe, fork, read, write, close */

#include "core/err.h" /* mgpu_errmsg, MGPU_E* */
#include "core/io.h"  /* mgpu_read_fd, mgpu_read_file */
#include "../t.h"     /* T_RUN, T_CHECK, T_OK, T_FAILS */
#include "../tmpdir.h" /* tmpdir, tpath, t_tmpdir_make */

static const char text[] = "split\tpath\tsamples\tbytes\tsha256\ntrain\ta.tar\t1\t2\tff\n";

static void put_text(const char *path)
{
	FILE *fp = fopen(path, "wb");

	if (!fp || fwrite(text, 1, sizeof text - 1, fp) != sizeof text - 1)
		printf("cannot write fixture %s\n", path);
	if (fp)
		fclose(fp);
}

/* A regular file whose first bytes a sniffer already read: the rest comes
 * once, from where the descriptor stands, appended to the sniffed head. */
static void test_read_fd_regular_after_head(void)
{
	unsigned char *buf = malloc(10);
	size_t len = 0;
	ssize_t got;
	int fd;

	put_text(tpath("m.tsv"));
	fd = open(tpath("m.tsv"), O_RDONLY);
	T_CHECK(fd >= 0 && buf, "open");
	if (fd < 0 || !buf)
		return;
	got = read(fd, buf, 10);
	T_CHECK(got == 10, "head %zd", got);
	len = 10;
	T_OK(mgpu_read_fd(fd, "-", &buf, &len));
	close(fd);
	T_CHECK(len == sizeof text - 1, "len %zu, want %zu (read twice?)", len, sizeof text - 1);
	T_CHECK(buf && memcmp(buf, text, sizeof text - 1) == 0 && buf[len] == '\0', "bytes");
	free(buf);
}

/* A pipe, larger than one read, into an empty buffer. */
static void test_read_fd_pipe(void)
{
	enum { N = 200000 };
	unsigned char *src = malloc(N), *buf = NULL;
	size_t len = 0, i, off = 0;
	int p[2], st = -1;
	pid_t pid;

	T_CHECK(src && pipe(p) == 0, "pipe");
	if (!src)
		return;
	for (i = 0; i < N; i++)
		src[i] = (unsigned char)(i * 7);
	pid = fork();
	if (pid == 0) {
		close(p[0]);
		while (off < N) {
			ssize_t w = write(p[1], src + off, N - off);
			if (w <= 0)
				_exit(1);
			off += (size_t)w;
		}
		_exit(0);
	}
	close(p[1]);
	T_OK(mgpu_read_fd(p[0], "-", &buf, &len));
	close(p[0]);
	waitpid(pid, &st, 0);
	T_CHECK(st == 0, "writer exited %d", st);
	T_CHECK(len == N && buf && memcmp(buf, src, N) == 0, "len %zu", len);
	free(buf);
	free(src);
}

static void test_read_fd_errors(void)
{
	unsigned char *buf = malloc(4);
	size_t len = 4;

	if (buf)
		memcpy(buf, "abcd", 4);
	T_FAILS(mgpu_read_fd(-1, "-", &buf, &len), MGPU_EIO, "'-': read failed");
	T_CHECK(buf == NULL && len == 0, "buffer not released on failure");
}

static void test_read_file(void)
{
	unsigned char *buf;
	size_t len;

	put_text(tpath("f.txt"));
	T_OK(mgpu_read_file(tpath("f.txt"), &buf, &len));
	T_CHECK(len == sizeof text - 1 && memcmp(buf, text, len) == 0, "len %zu", len);
	free(buf);
	T_FAILS(mgpu_read_file(tpath("none"), &buf, &len), MGPU_EIO, "none': cannot open");
	T_CHECK(buf == NULL && len == 0, "out-parameters after failure");
}

int main(void)
{
	if (t_tmpdir_make("io") < 0)
		return 1;
	T_RUN(test_read_fd_regular_after_head);
	T_RUN(test_read_fd_pipe);
	T_RUN(test_read_fd_errors);
	T_RUN(test_read_file);
	t_tmpdir_remove();
	return T_DONE();
}
