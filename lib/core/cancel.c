/*
 * cancel.c - the stop request set by signal handlers (see cancel.h).
 */
#include "core/cancel.h"

#include <signal.h> /* sig_atomic_t, SIGINT, SIGTERM */

#include "core/err.h" /* mgpu_err, MGPU_EINTR */

static volatile sig_atomic_t pending;

void mgpu_cancel_raise(int sig)
{
	pending = sig;
}

int mgpu_cancel_signal(void)
{
	return pending;
}

int mgpu_cancel_check(void)
{
	int sig = pending;

	if (!sig)
		return 0;
	if (sig == SIGINT || sig == SIGTERM)
		return mgpu_err(MGPU_EINTR, "interrupted by %s", sig == SIGINT ? "SIGINT" :
				"SIGTERM");
	return mgpu_err(MGPU_EINTR, "interrupted by signal %d", sig);
}

void mgpu_cancel_clear(void)
{
	pending = 0;
}
