/*
 * progress.c - the live status line and its number formats (see progress.h).
 */
#include "core/progress.h"

#include <math.h>      /* isfinite */
#include <stdarg.h>    /* va_list */
#include <stdio.h>     /* snprintf */
#include <stdlib.h>    /* getenv, strtol */
#include <string.h>    /* strlen */
#include <sys/ioctl.h> /* ioctl, TIOCGWINSZ */
#include <unistd.h>    /* write */

#include "core/clock.h" /* mgpu_now_s */

/* "\r" goes back to the line's start, ESC [ K erases to its end. */
static const char clear_seq[] = "\r\033[K";

static struct mgpu_progress *on_screen; /* the line mgpu_progress_hide clears */

void mgpu_progress_init(struct mgpu_progress *p, int fd, int on)
{
	p->fd = on ? fd : -1;
	p->t0 = mgpu_now_s();
	p->last = -1;
	p->every_s = MGPU_PROGRESS_EVERY_S;
	p->shown = 0;
}

void mgpu_progress_restart(struct mgpu_progress *p)
{
	p->t0 = mgpu_now_s();
	p->last = -1;
}

int mgpu_progress_due(const struct mgpu_progress *p)
{
	return p->fd >= 0 && (p->last < 0 || mgpu_now_s() - p->last >= p->every_s);
}

static void put(int fd, const char *s, size_t n)
{
	ssize_t w;

	while (n) {
		w = write(fd, s, n);
		if (w <= 0)
			return; /* a status line is not worth failing over */
		s += w;
		n -= (size_t)w;
	}
}

/* The terminal's columns; COLUMNS, then 80, when it does not say. */
static int columns(int fd)
{
	struct winsize ws;
	const char *env = getenv("COLUMNS");
	long c = env ? strtol(env, NULL, 10) : 0;

	if (ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
		return ws.ws_col;
	return c > 0 && c < 10000 ? (int)c : 80;
}

int mgpu_progress_width(const struct mgpu_progress *p)
{
	/* the last column stays free: a full line wraps on some terminals,
	 * and a wrapped line is no longer one "\r" can return to */
	return p->fd < 0 ? 0 : columns(p->fd) - 1;
}

void mgpu_progress_draw(struct mgpu_progress *p, const char *fmt, ...)
{
	char line[1024];
	size_t n = sizeof clear_seq - 1, w;
	va_list ap;

	if (p->fd < 0)
		return;
	memcpy(line, clear_seq, n);
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof line - n, fmt, ap);
	va_end(ap);
	w = (size_t)mgpu_progress_width(p);
	if (strlen(line + n) > w)
		line[n + w] = '\0';
	put(p->fd, line, strlen(line));
	p->last = mgpu_now_s();
	p->shown = 1;
	on_screen = p;
}

void mgpu_progress_clear(struct mgpu_progress *p)
{
	if (p->fd < 0 || !p->shown)
		return;
	put(p->fd, clear_seq, sizeof clear_seq - 1);
	p->shown = 0;
}

void mgpu_progress_hide(void)
{
	if (on_screen)
		mgpu_progress_clear(on_screen);
}

void mgpu_progress_count(struct mgpu_progress *p, const char *what, uint64_t done,
			 uint64_t total, const char *unit, uint64_t nbytes,
			 uint64_t nbytes_total, int force)
{
	char cnt[32], tot[32], by[32], rate[32], el[32], eta[48] = "";
	double t = mgpu_now_s() - p->t0, frac = 0;

	if (p->fd < 0 || (!force && !mgpu_progress_due(p)))
		return;
	if (nbytes_total)
		frac = (double)nbytes / (double)nbytes_total;
	else if (total)
		frac = (double)done / (double)total;
	if (frac > 0 && frac < 1 && t > 0) {
		memcpy(eta, ", ETA ", 7);
		mgpu_fmt_duration(t / frac - t, eta + 6, sizeof eta - 6);
	}
	mgpu_fmt_count((double)done, cnt, sizeof cnt);
	snprintf(tot, sizeof tot, "/");
	if (total)
		mgpu_fmt_count((double)total, tot + 1, sizeof tot - 1);
	else
		tot[0] = '\0';
	mgpu_fmt_bytes((double)nbytes, by, sizeof by);
	mgpu_fmt_bytes(t > 0 ? (double)nbytes / t : 0, rate, sizeof rate);
	mgpu_fmt_duration(t, el, sizeof el);
	mgpu_progress_draw(p, "%s %s%s %s, %s, %s/s, %s%s", what, cnt, tot, unit, by, rate, el,
			   eta);
}

char *mgpu_fmt_duration(double s, char *buf, size_t cap)
{
	long long v;

	if (!isfinite(s) || s < 0) {
		snprintf(buf, cap, "?");
		return buf;
	}
	v = (long long)(s + 0.5);
	if (v < 60)
		snprintf(buf, cap, "%llds", v);
	else if (v < 3600)
		snprintf(buf, cap, "%lld:%02lld", v / 60, v % 60);
	else
		snprintf(buf, cap, "%lld:%02lld:%02lld", v / 3600, v / 60 % 60, v % 60);
	return buf;
}

/* Three significant digits of n / div^k with the k-th suffix. */
static char *scaled(double n, double div, const char *const *suffix, int nsuffix, char *buf,
		    size_t cap)
{
	int k = 0;

	if (!isfinite(n) || n < 0)
		n = 0;
	while (n >= div - 0.5 && k + 1 < nsuffix) { /* "1023 B", then "1.00 KiB" */
		n /= div;
		k++;
	}
	if (k == 0)
		snprintf(buf, cap, "%.0f%s", n, suffix[0]);
	else
		snprintf(buf, cap, "%.*f%s", n < 9.995 ? 2 : n < 99.95 ? 1 : 0, n, suffix[k]);
	return buf;
}

char *mgpu_fmt_bytes(double n, char *buf, size_t cap)
{
	static const char *const sfx[] = { " B", " KiB", " MiB", " GiB", " TiB" };

	return scaled(n, 1024, sfx, 5, buf, cap);
}

char *mgpu_fmt_count(double n, char *buf, size_t cap)
{
	static const char *const sfx[] = { "", "k", "M", "G", "T" };

	return scaled(n, 1000, sfx, 5, buf, cap);
}
