/*
 * spawn.c - run a program, capture its stdout and the tail of its stderr,
 * with a timeout (see spawn.h).
 */
#include "bench/spawn.h"

#include <errno.h>    /* errno, EINTR */
#include <fcntl.h>    /* open, O_RDONLY */
#include <poll.h>     /* poll */
#include <stdio.h>    /* snprintf */
#include <stdlib.h>   /* realloc, free */
#include <string.h>   /* memmove, strstr */
#include <sys/wait.h> /* waitpid */
#include <unistd.h>   /* fork, execv, pipe */

#include "core/clock.h" /* mgpu_now_ms */
#include "core/err.h" /* mgpu_err_errno */
#include "core/io.h"  /* mgpu_tmp_template */

static _Noreturn void child(char *const *argv, int out_fd, int err_fd)
{
	int nul = open("/dev/null", O_RDONLY);

	if (nul >= 0)
		dup2(nul, 0);
	dup2(out_fd, 1);
	dup2(err_fd, 2);
	execv(argv[0], argv);
	dprintf(2, "error: cannot run '%s': %s\n", argv[0], strerror(errno));
	_exit(127);
}

/* Append what fd has to the stdout buffer; 0 at EOF, 1 when more may come. */
static int read_out(int fd, struct mgpu_spawn_result *res, size_t *cap)
{
	ssize_t k;

	if (*cap - res->out_len < 65536) {
		char *p = realloc(res->out, *cap * 2 + 65536);
		if (!p)
			return mgpu_err(MGPU_ENOMEM, "out of memory reading a child's output");
		res->out = p;
		*cap = *cap * 2 + 65536;
	}
	k = read(fd, res->out + res->out_len, *cap - res->out_len - 1);
	if (k < 0)
		return errno == EINTR ? 1 : mgpu_err_errno(MGPU_EIO, "reading a child's output");
	res->out_len += (size_t)k;
	res->out[res->out_len] = '\0';
	return k > 0;
}

/* Keep the last sizeof err - 1 bytes of stderr. */
static int read_err(int fd, struct mgpu_spawn_result *res)
{
	char buf[2048];
	size_t have = strlen(res->err), cap = sizeof res->err - 1, drop;
	ssize_t k = read(fd, buf, sizeof buf);

	if (k <= 0)
		return k < 0 && errno == EINTR ? 1 : 0;
	if (have + (size_t)k > cap) {
		drop = have + (size_t)k - cap;
		drop = drop > have ? have : drop;
		memmove(res->err, res->err + drop, have - drop + 1);
		have -= drop;
	}
	if ((size_t)k > cap)
		k = (ssize_t)cap;
	memcpy(res->err + have, buf, (size_t)k);
	res->err[have + (size_t)k] = '\0';
	return 1;
}

/* How long a child may take to end after SIGTERM before SIGKILL. */
#define KILL_GRACE_MS 5000

/* SIGTERM, up to KILL_GRACE_MS for it to exit, then SIGKILL; the caller
 * reaps it. */
static void kill_child(pid_t pid)
{
	siginfo_t si;
	int i;

	kill(pid, SIGTERM);
	for (i = 0; i < KILL_GRACE_MS / 100; i++) {
		si.si_pid = 0;
		if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 &&
		    si.si_pid == pid)
			return;
		usleep(100000);
	}
	kill(pid, SIGKILL);
}

static int pump(pid_t pid, int ofd, int efd, int timeout_ms, volatile sig_atomic_t *stop,
		struct mgpu_spawn_result *res)
{
	struct pollfd p[2] = { { ofd, POLLIN, 0 }, { efd, POLLIN, 0 } };
	double t0 = mgpu_now_ms();
	size_t cap = 0;
	int open_n = 2, k;

	while (open_n > 0) {
		if ((stop && *stop) || (timeout_ms > 0 && mgpu_now_ms() - t0 > timeout_ms)) {
			res->timed_out = !(stop && *stop);
			kill_child(pid);
			return 0;
		}
		if (poll(p, 2, 200) < 0 && errno != EINTR)
			return mgpu_err_errno(MGPU_EIO, "poll");
		if (p[0].revents) {
			k = read_out(ofd, res, &cap);
			if (k < 0)
				return k;
			if (k == 0)
				p[0].fd = -1, open_n--;
		}
		if (p[1].revents && !read_err(efd, res))
			p[1].fd = -1, open_n--;
	}
	return 0;
}

int mgpu_spawn_capture(char *const *argv, int timeout_ms, volatile sig_atomic_t *stop,
		       struct mgpu_spawn_result *res)
{
	int po[2] = { -1, -1 }, pe[2] = { -1, -1 }, st, rc = 0;
	pid_t pid, w;

	memset(res, 0, sizeof *res);
	if (pipe(po) < 0 || pipe(pe) < 0) {
		rc = mgpu_err_errno(MGPU_EIO, "pipe");
		goto out;
	}
	pid = fork();
	if (pid < 0) {
		rc = mgpu_err_errno(MGPU_EIO, "fork");
		goto out;
	}
	if (pid == 0)
		child(argv, po[1], pe[1]);
	close(po[1]);
	close(pe[1]);
	po[1] = pe[1] = -1;
	rc = pump(pid, po[0], pe[0], timeout_ms, stop, res);
	if (rc < 0)
		kill_child(pid);
	while ((w = waitpid(pid, &st, 0)) < 0 && errno == EINTR)
		;
	if (w < 0 && rc == 0)
		rc = mgpu_err_errno(MGPU_EIO, "'%s': cannot wait for it", argv[0]);
	if (w >= 0) {
		res->exited = WIFEXITED(st);
		res->status = res->exited ? WEXITSTATUS(st) : WTERMSIG(st);
	}
out:
	for (st = 0; st < 2; st++) {
		if (po[st] >= 0)
			close(po[st]);
		if (pe[st] >= 0)
			close(pe[st]);
	}
	if (rc < 0) { /* callers free the output only on success */
		free(res->out);
		res->out = NULL;
	} else if (!res->out) {
		res->out = calloc(1, 1);
		if (!res->out)
			rc = mgpu_err(MGPU_ENOMEM, "out of memory");
	}
	return rc;
}

int mgpu_spawn_bg_start(char *const *argv, struct mgpu_spawn_bg *bg)
{
	char path[64];
	int nul, fd;
	pid_t pid;

	bg->pid = 0;
	bg->err_fd = -1;
	MGPU_TRY(mgpu_tmp_template(path, sizeof path, "/tmp/mgpu-bench-err-"));
	fd = mkostemp(path, O_CLOEXEC);
	if (fd < 0)
		return mgpu_err_errno(MGPU_EIO, "cannot make a temporary file in /tmp");
	unlink(path);
	pid = fork();
	if (pid < 0) {
		close(fd);
		return mgpu_err_errno(MGPU_EIO, "fork");
	}
	if (pid == 0) {
		nul = open("/dev/null", O_WRONLY);
		child(argv, nul >= 0 ? nul : 1, fd);
	}
	bg->pid = pid;
	bg->err_fd = fd;
	return 0;
}

/* Reap b when it has ended (options 0: wait for it); 1 when reaped. */
static int reap_bg(struct mgpu_spawn_bg *b, int options)
{
	pid_t got;
	int st;

	while ((got = waitpid(b->pid, &st, options)) < 0 && errno == EINTR)
		;
	if (got == 0)
		return 0;
	close(b->err_fd);
	b->pid = 0;
	b->err_fd = -1;
	return 1;
}

void mgpu_spawn_bg_stop(struct mgpu_spawn_bg *bg, int n)
{
	double t0 = mgpu_now_ms();
	int i, left = 1;

	/* all at once: a launcher stopped alone would wait for the others at
	 * its next collective, and each would pay the wait in turn */
	for (i = 0; i < n; i++)
		if (bg[i].pid > 0)
			kill(bg[i].pid, SIGTERM);
	while (left) {
		for (left = 0, i = 0; i < n; i++)
			left += bg[i].pid > 0 && !reap_bg(&bg[i], WNOHANG);
		if (left && mgpu_now_ms() - t0 > KILL_GRACE_MS) {
			for (i = 0; i < n; i++)
				if (bg[i].pid > 0) {
					kill(bg[i].pid, SIGKILL);
					reap_bg(&bg[i], 0);
				}
			return;
		}
		if (left)
			usleep(20000);
	}
}

/* The last sizeof res->err - 1 bytes of the file fd. */
static void tail_of(int fd, struct mgpu_spawn_result *res)
{
	off_t end = lseek(fd, 0, SEEK_END), from;
	ssize_t k;

	from = end > (off_t)sizeof res->err - 1 ? end - (off_t)sizeof res->err + 1 : 0;
	k = end > 0 ? pread(fd, res->err, (size_t)(end - from), from) : 0;
	res->err[k > 0 ? k : 0] = '\0';
}

int mgpu_spawn_bg_wait(struct mgpu_spawn_bg *bg, int timeout_ms, volatile sig_atomic_t *stop,
		       struct mgpu_spawn_result *res)
{
	double t0 = mgpu_now_ms();
	int st = 0, killed = 0;
	pid_t got;

	memset(res, 0, sizeof *res);
	if (bg->pid <= 0)
		return mgpu_err(MGPU_EINVAL, "no background child to wait for");
	while ((got = waitpid(bg->pid, &st, WNOHANG)) == 0 || (got < 0 && errno == EINTR)) {
		if (!killed && ((stop && *stop) || mgpu_now_ms() - t0 > timeout_ms)) {
			res->timed_out = !(stop && *stop);
			kill_child(bg->pid);
			killed = 1;
		}
		usleep(20000);
	}
	res->exited = got > 0 && WIFEXITED(st);
	res->status = res->exited ? WEXITSTATUS(st) : got > 0 ? WTERMSIG(st) : -1;
	tail_of(bg->err_fd, res);
	close(bg->err_fd);
	bg->pid = 0;
	bg->err_fd = -1;
	res->out = calloc(1, 1);
	return res->out ? 0 : mgpu_err(MGPU_ENOMEM, "out of memory");
}

void mgpu_spawn_err_line(const struct mgpu_spawn_result *res, char *buf, size_t cap)
{
	const char *line, *nl, *first_err = NULL, *last = NULL, *before = NULL, *best, *e;
	size_t len;

	for (line = res->err; *line; line = nl + 1) {
		nl = strchr(line, '\n');
		if (!nl)
			nl = line + strlen(line);
		e = strstr(line, "error:");
		if (!first_err && e && e < nl)
			first_err = line;
		if (nl > line) {
			before = last;
			last = line;
		}
		if (!*nl)
			break;
	}
	/* a usage error ends with "Try 'TOOL --help' ...": the reason is the
	 * line before it */
	if (!first_err && last && before && strncmp(last, "Try '", 5) == 0)
		last = before;
	best = first_err ? first_err : last;
	if (!best) {
		snprintf(buf, cap, "%s", "");
		return;
	}
	nl = strchr(best, '\n');
	len = nl ? (size_t)(nl - best) : strlen(best);
	snprintf(buf, cap, "%.*s", (int)len, best);
}
