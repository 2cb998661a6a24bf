/*
 * common_main.c - the one main() of every mgpu tool (see common.h).
 */
#include "common.h"

#include <errno.h>  /* errno, EPIPE */
#include <stdarg.h> /* va_list */
#include <stdio.h>  /* fprintf */
#include <stdlib.h> /* exit */
#include <string.h> /* memset, strlen */
#include <unistd.h> /* write, isatty */
#include <zstd.h>   /* ZSTD_versionString */
#include <archive.h> /* archive_version_string */

#include "config.h" /* MGPU_HAVE_CUDA, MGPU_HAVE_MPI */
#include "comm/launch.h" /* MGPU_EXIT_PIPE */
#include "comm/mpi.h"    /* mgpu_mpi_version */
#include "core/cancel.h" /* mgpu_cancel_raise, mgpu_cancel_signal */
#include "core/progress.h" /* mgpu_progress_hide */
#include "ops/ops.h" /* mgpu_ops_all */

volatile sig_atomic_t mgpu_interrupted;
char mgpu_diag_prefix[64];
char mgpu_usage_where[300];
int mgpu_quiet;

static void on_signal(int sig)
{
	mgpu_interrupted = sig;
	mgpu_cancel_raise(sig); /* the library's long loops poll this one */
}

/* One diagnostic line, "HEAD" then the message, in one write(2): ranks share
 * stderr, and stderr is unbuffered, so pieces written one by one interleave
 * with another rank's (a line up to PIPE_BUF bytes reaches a pipe whole).
 * On a terminal the line first clears a status line (core/progress.h):
 * this process's, or rank 0's when another rank or the launcher speaks. */
static void vline(const char *head, const char *fmt, va_list ap)
{
	static int tty = -1;
	char line[4096];
	size_t n;

	if (tty < 0)
		tty = isatty(2);
	mgpu_progress_hide();
	snprintf(line, sizeof line, "%s%s", tty ? "\r\033[K" : "", head);
	n = strlen(line);
	vsnprintf(line + n, sizeof line - n, fmt, ap);
	n = strlen(line);
	if (n == sizeof line - 1)
		n--;
	line[n++] = '\n';
	fflush(stderr);
	if (write(2, line, n) < 0)
		return; /* nowhere left to say it */
}

static void vreport(const char *kind, const char *fmt, va_list ap)
{
	char head[256];

	snprintf(head, sizeof head, "%s: %s%s%s", mgpu_tool_name, mgpu_diag_prefix,
		 mgpu_diag_prefix[0] ? ": " : "", kind);
	vline(head, fmt, ap);
}

void die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vreport("error: ", fmt, ap);
	va_end(ap);
	exit(1);
}

void die_lib(void)
{
	/* A write to a reader that went away: end quietly, as finish_stdout
	 * does, not with "Broken pipe" on stderr. */
	if (errno == EPIPE)
		finish_stdout();
	die("%s", mgpu_errmsg()[0] ? mgpu_errmsg() : "unknown failure");
}

void exit_if_interrupted(void)
{
	int sig = mgpu_cancel_signal();

	if (!sig)
		return;
	mgpu_progress_hide();
	fprintf(stderr, "%s: %s%sinterrupted by %s; partial output removed\n", mgpu_tool_name,
		mgpu_diag_prefix, mgpu_diag_prefix[0] ? ": " : "",
		mgpu_signal_name(sig) ? mgpu_signal_name(sig) : "a signal");
	exit(128 + sig);
}

void usage_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vreport(mgpu_usage_where, fmt, ap);
	va_end(ap);
	fprintf(stderr, "Try '%s --help' for more information.\n", mgpu_tool_name);
	exit(2);
}

void warn(const char *fmt, ...)
{
	va_list ap;

	if (mgpu_quiet)
		return;
	va_start(ap, fmt);
	vreport("warning: ", fmt, ap);
	va_end(ap);
}

void error_msg(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vreport("error: ", fmt, ap);
	va_end(ap);
}

void note(const char *fmt, ...)
{
	char head[128];
	va_list ap;

	snprintf(head, sizeof head, "%s: ", mgpu_tool_name);
	va_start(ap, fmt);
	vline(head, fmt, ap);
	va_end(ap);
}

void print_version(int verbose)
{
	const struct mgpu_ops *const *o;

	printf("%s %s\n", mgpu_tool_name, MGPU_VERSION);
	if (!verbose)
		return;
	printf("features: cuda=%d nccl=%d mpi=%d\n", MGPU_HAVE_CUDA, MGPU_HAVE_NCCL,
	       MGPU_HAVE_MPI);
	printf("gpu code: %s\n", MGPU_CUDA_ARCHS[0] ? MGPU_CUDA_ARCHS : "none (built without CUDA)");
	printf("backends:");
	for (o = mgpu_ops_all(); *o; o++)
		printf(" %s", (*o)->name);
	printf("\nzstd: %s\n%s\n", ZSTD_versionString(), archive_version_string());
	if (MGPU_HAVE_MPI) /* MPI_Get_library_version needs no MPI_Init */
		printf("mpi: %s\n", mgpu_mpi_version());
}

void exit_pipe_closed(void)
{
	/* A rank tells the launcher that started it, which then ends so. */
	if (getenv("MGPU_LAUNCHED"))
		exit(MGPU_EXIT_PIPE);
	fflush(stderr);
	signal(SIGPIPE, SIG_DFL); /* ignored since main() began */
	raise(SIGPIPE);
	_exit(128 + SIGPIPE); /* not reached */
}

void finish_stdout(void)
{
	if (fflush(stdout) != 0 || ferror(stdout)) {
		if (errno == EPIPE)
			exit_pipe_closed();
		die("cannot write to standard output");
	}
}

int main(int argc, char **argv)
{
	struct sigaction sa, old;
	int rc;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sa.sa_flags = SA_RESTART; /* a signal only raises the flag; I/O goes on */
	/* a closed terminal (HUP) or Ctrl-\ (QUIT) stops as cleanly as Ctrl-C:
	 * checkpoint, temporaries removed */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGQUIT, &sa, NULL);
	if (sigaction(SIGHUP, NULL, &old) == 0 && old.sa_handler != SIG_IGN) /* nohup */
		sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	rc = cmd_main(argc, argv);
	finish_stdout();
	return rc;
}
