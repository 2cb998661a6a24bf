/*
 * spawn.h - run a program and capture what it writes: the benchmark's way
 * of running mgpu-train once per configuration.
 *
 * The child gets stdin from /dev/null; its stdout is collected whole, its
 * stderr keeps the last few KiB (for the error line of a failed run). A
 * child still running after timeout_ms is killed (SIGTERM, then SIGKILL)
 * so a configuration never hangs the sweep. stop, when non-NULL and set
 * (by a signal handler), ends the child the same way. Several children
 * can run at once: one captured, the others in the background.
 */
#ifndef MGPU_BENCH_SPAWN_H
#define MGPU_BENCH_SPAWN_H

#include <signal.h> /* sig_atomic_t */
#include <stddef.h> /* size_t */

struct mgpu_spawn_result {
	char *out;          /* stdout, NUL-terminated, malloc'ed (free it) */
	size_t out_len;
	char err[4096];     /* the last bytes of stderr, NUL-terminated */
	int exited;         /* 1: exited with status; 0: killed by a signal */
	int status;         /* exit status, or the signal */
	int timed_out;
};

/* Run argv[0] (a path) with argv; 0 when it ran (whatever its status). */
int mgpu_spawn_capture(char *const *argv, int timeout_ms, volatile sig_atomic_t *stop,
		       struct mgpu_spawn_result *res);
/* A child running in the background (the other nodes of a multi-node run):
 * stdout goes to /dev/null, stderr to an unlinked temporary file, so it
 * never blocks on a pipe nobody reads. */
struct mgpu_spawn_bg {
	int pid;            /* 0 when not running */
	int err_fd;         /* the temporary file, or -1 */
};

/* Start argv[0] (a path) with argv. */
int mgpu_spawn_bg_start(char *const *argv, struct mgpu_spawn_bg *bg);
/* Wait up to timeout_ms for it (then kill it, as mgpu_spawn_capture does);
 * res gets its status and the tail of its stderr (no stdout). */
int mgpu_spawn_bg_wait(struct mgpu_spawn_bg *bg, int timeout_ms, volatile sig_atomic_t *stop,
		       struct mgpu_spawn_result *res);
/* Stop the running ones of bg[0..n) and reap them: SIGTERM to every one at
 * once, up to 5 s for all to end, then SIGKILL; their stderr is dropped.
 * For the other nodes of a run that failed, or was stopped, on its way. */
void mgpu_spawn_bg_stop(struct mgpu_spawn_bg *bg, int n);

/* The first line of res->err containing "error:" (else the last line, or
 * the reason above a usage error's closing "Try ..." line), in buf. */
void mgpu_spawn_err_line(const struct mgpu_spawn_result *res, char *buf, size_t cap);

#endif
