/*
 * progress.h - a live one-line status on a terminal, redrawn in place, and
 * the number formats a person reads in it (durations, bytes, counts).
 *
 * The caller decides whether there is a terminal to draw on (isatty, -q)
 * and hands the fd over; everything here then only writes that fd. A draw
 * is rate-limited (mgpu_progress_due), cut to the terminal's width so that
 * "\r" can return to its start, and replaces the line before it. Whatever
 * else goes to the terminal must clear the line first: the tool's own
 * output through mgpu_progress_clear, its diagnostics through
 * mgpu_progress_hide, which clears the line this process has on screen.
 * Not thread-safe: one thread draws.
 */
#ifndef MGPU_CORE_PROGRESS_H
#define MGPU_CORE_PROGRESS_H

#include <stddef.h> /* size_t */
#include <stdint.h> /* uint64_t */

#include "core/err.h" /* MGPU_PRINTF */

/* At most this many draws per second, as zstd and tqdm draw. */
#define MGPU_PROGRESS_EVERY_S 0.2

struct mgpu_progress {
	int fd;          /* the terminal; -1: off, every call does nothing */
	double t0;       /* when the work began (mgpu_now_s) */
	double last;     /* the last draw; < 0: none yet */
	double every_s;  /* least time between two draws */
	int shown;       /* a line of ours is on the terminal */
};

/* Off unless on; t0 is now. */
void mgpu_progress_init(struct mgpu_progress *p, int fd, int on);
/* A new phase of the work: its rate and ETA count from now, and its first
 * draw is due at once. */
void mgpu_progress_restart(struct mgpu_progress *p);
/* Whether a draw is due: the first always is, then one per every_s. */
int mgpu_progress_due(const struct mgpu_progress *p);
/* The columns a line may take: the terminal's width less one. */
int mgpu_progress_width(const struct mgpu_progress *p);
/* Replace the line on the terminal with the text (no newline), cut to the
 * terminal's width. Not rate-limited: ask mgpu_progress_due first. */
void mgpu_progress_draw(struct mgpu_progress *p, const char *fmt, ...) MGPU_PRINTF(2, 3);
/* Take the line off the terminal (before anything else is written there). */
void mgpu_progress_clear(struct mgpu_progress *p);
/* Clear the line this process last drew, if it is still shown. */
void mgpu_progress_hide(void);

/* Counted work, drawn when due: "WHAT done/total UNIT, BYTES, RATE/s,
 * elapsed, ETA" (total 0: unknown, no ETA; nbytes_total 0: the ETA comes
 * from the count). force: draw even when not due (the last item). */
void mgpu_progress_count(struct mgpu_progress *p, const char *what, uint64_t done,
			 uint64_t total, const char *unit, uint64_t nbytes,
			 uint64_t nbytes_total, int force);

/* "42s", "3:05", "1:02:03"; "?" when negative or not finite. */
char *mgpu_fmt_duration(double s, char *buf, size_t cap);
/* "512 B", "1.5 KiB", "45.1 MiB", "2.00 GiB" (three digits). */
char *mgpu_fmt_bytes(double n, char *buf, size_t cap);
/* "950", "12.3k", "4.51M", "1.20G" (three digits). */
char *mgpu_fmt_count(double n, char *buf, size_t cap);

#endif
