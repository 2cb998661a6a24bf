/*
 * cancel.c - the stop request set by signal handlers (see cancel.h).
 */
#include "core/cancel.h"

#include <signal.h>    /* sig_atomic_t, SIGINT, SIGTERM */
#include <stdatomic.h> /* atomic_* */

#include "core/clock.h" /* mgpu_now_ms */
#include "core/err.h"   /* mgpu_err, MGPU_EINTR */

static volatile sig_atomic_t pending;
static _Atomic long long seen_ms; /* when a grace wait first saw it; 0: not yet */

void mgpu_cancel_raise(int sig)
{
	pending = sig;
}

int mgpu_cancel_signal(void)
{
	return pending;
}

const char *mgpu_signal_name(int sig)
{
	switch (sig) {
	case SIGINT: return "SIGINT";
	case SIGTERM: return "SIGTERM";
	case SIGHUP: return "SIGHUP";
	case SIGQUIT: return "SIGQUIT";
	}
	return NULL;
}

int mgpu_cancel_check(void)
{
	int sig = pending;

	if (!sig)
		return 0;
	if (mgpu_signal_name(sig))
		return mgpu_err(MGPU_EINTR, "interrupted by %s", mgpu_signal_name(sig));
	return mgpu_err(MGPU_EINTR, "interrupted by signal %d", sig);
}

int mgpu_cancel_check_grace(void)
{
	long long now, first;

	if (!pending)
		return 0;
	now = (long long)mgpu_now_ms() + 1; /* never 0 */
	first = atomic_load(&seen_ms);
	if (!first && atomic_compare_exchange_strong(&seen_ms, &first, now))
		return 0;
	return now - first < MGPU_CANCEL_GRACE_MS ? 0 : mgpu_cancel_check();
}

void mgpu_cancel_clear(void)
{
	pending = 0;
	atomic_store(&seen_ms, 0);
}
