/*
 * test_io.c - unit tests of lib/core/io: reading a descriptor to its end
 * (regular files, pipes, appending after bytes already read), whole-file
 * reads, and atomic writes (also to a device, which must stay a device).
 */
#include <fcntl.h>  /* open */
#include <stdlib.h> /* malloc, free */
#include <string.h> /* memcmp, memcpy */
#include <sys/stat.h> /* mkdir, mknod, stat */
#include <sys/sysmacros.h> /* makedev */
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

/* The first n bytes of text at path. */
static void put_file_n(const char *path, size_t n)
{
	FILE *fp = fopen(path, "wb");

	if (fp) {
		fwrite(text, 1, n, fp);
		fclose(fp);
	}
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

static void test_tmp_names(void)
{
	T_CHECK(mgpu_tmp_pid("m.tsv.tmp.123", "m.tsv") == 123, "stem");
	T_CHECK(mgpu_tmp_pid("m.tsv.tmp.123", NULL) == 123, "any stem");
	T_CHECK(mgpu_tmp_pid("a.tmp.b.tmp.7", NULL) == 7, "last .tmp.");
	T_CHECK(mgpu_tmp_pid("m.tsv.tmp.123", "x.tsv") == 0, "other stem");
	T_CHECK(mgpu_tmp_pid("m.tsv.tmp.12x", NULL) == 0, "not digits");
	T_CHECK(mgpu_tmp_pid("m.tsv", NULL) == 0, "no .tmp.");
	T_CHECK(mgpu_tmp_pid(".tmp.5", NULL) == 0, "no stem at all");
	T_CHECK(mgpu_tmp_pid("m.tsv.tmp.", "m.tsv") == 0, "no pid");
}

/* An atomic write replaces a regular file whole; a device (as -o /dev/null)
 * is written in place, never renamed over: once that turned /dev/null into
 * a regular file for the whole machine. The device here is a private null
 * device node in the test's directory (root only). */
static void test_afile_targets(void)
{
	struct mgpu_afile af;
	struct stat st;
	const char *path = tpath("null");

	T_OK(mgpu_afile_open(&af, tpath("out.txt")));
	fputs("whole", af.fp);
	T_OK(mgpu_afile_commit(&af));
	T_CHECK(stat(tpath("out.txt"), &st) == 0 && st.st_size == 5, "regular file");
	T_FAILS(mgpu_afile_open(&af, tmpdir), MGPU_EINVAL, "is a directory");
	if (mknod(path, S_IFCHR | 0666, makedev(1, 3)) != 0)
		T_SKIP("cannot make a device node here (not root?)");
	T_OK(mgpu_afile_open(&af, path));
	fputs("discarded", af.fp);
	T_OK(mgpu_afile_commit(&af));
	T_CHECK(stat(path, &st) == 0 && S_ISCHR(st.st_mode), "the device was replaced");
	unlink(path);
}

static void test_tmp_template(void)
{
	char buf[16];

	T_OK(mgpu_tmp_template(buf, sizeof buf, "/tmp/a-"));
	T_CHECK(strcmp(buf, "/tmp/a-XXXXXX") == 0, "template '%s'", buf);
	T_FAILS(mgpu_tmp_template(buf, sizeof buf, "/tmp/abcdefghi"), MGPU_EINVAL, "too long");
}

/* Temporaries of a process that is gone are swept; a live one's, another
 * stem's, and ordinary files stay. */
/* Opening an atomic file removes what killed writers of it left. */
static void test_afile_sweeps(void)
{
	struct mgpu_afile af;
	char dead[600];
	pid_t pid = fork();
	int st;

	if (pid == 0)
		_exit(0);
	waitpid(pid, &st, 0); /* pid is now free: no such process */
	snprintf(dead, sizeof dead, "%s.tmp.%ld", tpath("o.tsv"), (long)pid);
	put_text(dead);
	T_OK(mgpu_afile_open(&af, tpath("o.tsv")));
	T_CHECK(access(dead, F_OK) != 0, "the dead writer's %s stayed", dead);
	T_OK(mgpu_afile_commit(&af));
}

static void test_tmp_sweep(void)
{
	char dead[600], live[600], dir[600];
	pid_t pid = fork();
	int st;

	if (pid == 0)
		_exit(0);
	waitpid(pid, &st, 0); /* pid is now free: no such process */
	snprintf(dead, sizeof dead, "%s.tmp.%ld", tpath("s.tsv"), (long)pid);
	snprintf(live, sizeof live, "%s.tmp.%ld", tpath("s.tsv"), (long)getppid());
	snprintf(dir, sizeof dir, "%s.tmp.%ld", tpath("set"), (long)pid);
	put_text(dead);
	put_text(live);
	put_text(tpath("s.tsv"));
	T_CHECK(mkdir(dir, 0777) == 0, "mkdir");
	put_text(tpath("x"));
	snprintf(dir + strlen(dir), sizeof dir - strlen(dir), "/%s", "a.tar");
	put_text(dir);
	T_CHECK(mgpu_tmp_sweep(tmpdir, "s.tsv") == 1, "one dead temporary of s.tsv");
	T_CHECK(access(dead, F_OK) != 0 && access(live, F_OK) == 0 &&
		access(tpath("s.tsv"), F_OK) == 0, "swept the wrong files");
	T_CHECK(mgpu_tmp_sweep(tmpdir, "set") == 1, "a dead temporary directory");
	T_CHECK(access(dir, F_OK) != 0, "the directory stayed");
	unlink(live);
	T_CHECK(mgpu_same_bytes(tpath("s.tsv"), tpath("x")) == 1, "same bytes");
	put_file_n(tpath("y"), 5);
	T_CHECK(mgpu_same_bytes(tpath("s.tsv"), tpath("y")) == 0, "other bytes");
	T_FAILS(mgpu_same_bytes(tpath("s.tsv"), tpath("none")), MGPU_EIO, "none': cannot open");
}

int main(void)
{
	if (t_tmpdir_make("io") < 0)
		return 1;
	T_RUN(test_read_fd_regular_after_head);
	T_RUN(test_read_fd_pipe);
	T_RUN(test_read_fd_errors);
	T_RUN(test_read_file);
	T_RUN(test_tmp_names);
	T_RUN(test_tmp_sweep);
	T_RUN(test_afile_sweeps);
	T_RUN(test_afile_targets);
	T_RUN(test_tmp_template);
	t_tmpdir_remove();
	return T_DONE();
}
