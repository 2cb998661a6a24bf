/*
 * cancel.h - a process-wide request to stop, raised by a signal handler and
 * polled by the library's long loops (shard writing, cache building, lock
 * waits).
 *
 * The library never exits or prints on a request: a polling loop returns
 * MGPU_EINTR through mgpu_cancel_check(), cleaning up as for any failure
 * (temporary files removed), and the tool decides what to do (mgpu-shard
 * and mgpu-cache exit 128 + the signal). mgpu_cancel_raise() only stores a
 * sig_atomic_t, so it is async-signal-safe. Nothing polls until a tool's
 * handler raises the request, so code that never raises it is unaffected.
 */
#ifndef MGPU_CORE_CANCEL_H
#define MGPU_CORE_CANCEL_H

/* Ask the loops to stop because of signal sig (> 0). Async-signal-safe. */
void mgpu_cancel_raise(int sig);
/* "SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT" (the signals the tools stop
 * on), else NULL. */
const char *mgpu_signal_name(int sig);
/* The signal of a pending request, or 0. */
int mgpu_cancel_signal(void);
/* 0, or MGPU_EINTR with the message "interrupted by SIGINT" (or the signal's
 * name) when a request is pending. */
int mgpu_cancel_check(void);
/* For waits on peers that a clean stop still needs (a step's barrier, the
 * node leaders' sums: the peers finish the step too): 0 while no request
 * is pending or this wait first saw it less than MGPU_CANCEL_GRACE_MS ago,
 * then what mgpu_cancel_check() returns. So a stop waits for peers that
 * answer, and not long for peers that hang or never come. */
#define MGPU_CANCEL_GRACE_MS 1000
int mgpu_cancel_check_grace(void);
/* Forget a pending request (for tests). */
void mgpu_cancel_clear(void);

#endif
