/*
 * test_progress.c - unit tests of lib/core/progress: the number formats
 * of a status line, what a draw, a clear and a hide write, the cut to the
 * terminal's width, the rate limit, and counted work with and without a
 * known total, and a new phase's clock.
 */
#include <fcntl.h>  /* open */
#include <stdlib.h> /* setenv */
#include <string.h> /* strcmp, strstr */
#include <unistd.h> /* read, lseek, close */

#include "core/clock.h"    /* mgpu_now_s */
#include "core/err.h"      /* mgpu_errmsg */
#include "core/progress.h" /* mgpu_progress_*, mgpu_fmt_* */
#include "../t.h"          /* T_RUN, T_CHECK */
#include "../tmpdir.h"     /* tpath, t_tmpdir_make */

static char buf[64];

#define FMT_IS(call, want) \
	T_CHECK(strcmp(call, want) == 0, "got '%s', want '%s'", buf, want)

static void test_durations(void)
{
	FMT_IS(mgpu_fmt_duration(0, buf, sizeof buf), "0s");
	FMT_IS(mgpu_fmt_duration(59.4, buf, sizeof buf), "59s");
	FMT_IS(mgpu_fmt_duration(59.6, buf, sizeof buf), "1:00");
	FMT_IS(mgpu_fmt_duration(3599.4, buf, sizeof buf), "59:59");
	FMT_IS(mgpu_fmt_duration(3725, buf, sizeof buf), "1:02:05");
	FMT_IS(mgpu_fmt_duration(-1, buf, sizeof buf), "?");
	FMT_IS(mgpu_fmt_duration(1.0 / 0.0, buf, sizeof buf), "?");
}

static void test_bytes_and_counts(void)
{
	FMT_IS(mgpu_fmt_bytes(0, buf, sizeof buf), "0 B");
	FMT_IS(mgpu_fmt_bytes(1023, buf, sizeof buf), "1023 B");
	FMT_IS(mgpu_fmt_bytes(1024, buf, sizeof buf), "1.00 KiB");
	FMT_IS(mgpu_fmt_bytes(1536, buf, sizeof buf), "1.50 KiB");
	FMT_IS(mgpu_fmt_bytes(45.1 * 1048576, buf, sizeof buf), "45.1 MiB");
	FMT_IS(mgpu_fmt_bytes(3.0 * 1073741824, buf, sizeof buf), "3.00 GiB");
	FMT_IS(mgpu_fmt_count(950, buf, sizeof buf), "950");
	FMT_IS(mgpu_fmt_count(999.6, buf, sizeof buf), "1.00k");
	FMT_IS(mgpu_fmt_count(12345, buf, sizeof buf), "12.3k");
	FMT_IS(mgpu_fmt_count(4.51e6, buf, sizeof buf), "4.51M");
	FMT_IS(mgpu_fmt_count(-3, buf, sizeof buf), "0");
}

static off_t seen; /* of the file being read */

/* What went to the file at fd since the last call. */
static const char *written(int fd)
{
	static char got[2048];
	ssize_t n;

	n = pread(fd, got, sizeof got - 1, seen);
	got[n > 0 ? n : 0] = '\0';
	seen += n > 0 ? n : 0;
	return got;
}

/* A draw replaces the line: "\r", erase, the text cut to the width less
 * one column; clear and hide take it off once; off writes nothing. */
static void test_draw_clear_hide(void)
{
	struct mgpu_progress p, off;
	int fd = open(tpath("tty"), O_RDWR | O_CREAT | O_TRUNC, 0644);
	const char *w;

	seen = 0;
	T_CHECK(fd >= 0, "open");
	if (fd < 0)
		return;
	setenv("COLUMNS", "20", 1); /* a file has no window size */
	mgpu_progress_init(&p, fd, 1);
	T_CHECK(mgpu_progress_due(&p), "the first draw is due");
	mgpu_progress_draw(&p, "step %d of %d, and a long tail", 3, 9);
	w = written(fd);
	T_CHECK(strcmp(w, "\r\033[Kstep 3 of 9, and a ") == 0, "draw wrote '%s'", w);
	p.every_s = 1e9;
	T_CHECK(!mgpu_progress_due(&p), "a second draw at once is not due");
	mgpu_progress_hide();
	T_CHECK(strcmp(written(fd), "\r\033[K") == 0, "hide clears the line shown");
	mgpu_progress_clear(&p);
	mgpu_progress_hide();
	T_CHECK(strcmp(written(fd), "") == 0, "nothing to clear twice");
	mgpu_progress_init(&off, fd, 0);
	T_CHECK(!mgpu_progress_due(&off), "off is never due");
	mgpu_progress_draw(&off, "x");
	mgpu_progress_count(&off, "x", 1, 2, "items", 1, 2, 1);
	mgpu_progress_clear(&off);
	T_CHECK(strcmp(written(fd), "") == 0, "off writes nothing");
	close(fd);
}

/* Counted work: done/total, bytes, rate, elapsed and ETA; no total, no
 * ETA; not due, no draw unless forced. */
static void test_count(void)
{
	struct mgpu_progress p;
	int fd = open(tpath("count"), O_RDWR | O_CREAT | O_TRUNC, 0644);
	const char *w;

	seen = 0;
	T_CHECK(fd >= 0, "open");
	if (fd < 0)
		return;
	setenv("COLUMNS", "200", 1);
	mgpu_progress_init(&p, fd, 1);
	p.t0 = mgpu_now_s() - 10; /* ten seconds in, half done: ten to go */
	mgpu_progress_count(&p, "writing", 5, 10, "shards", 1536, 0, 0);
	w = written(fd);
	T_CHECK(strstr(w, "writing 5/10 shards, 1.50 KiB, ") && strstr(w, " B/s, 10s, ETA 10s"),
		"'%s'", w);
	mgpu_progress_count(&p, "writing", 6, 10, "shards", 2048, 0, 0);
	T_CHECK(strcmp(written(fd), "") == 0, "rate-limited");
	mgpu_progress_count(&p, "reading", 6, 0, "shards", 3 << 20, 0, 1);
	w = written(fd);
	T_CHECK(strstr(w, "reading 6 shards, 3.00 MiB, ") && !strstr(w, "ETA"), "'%s'", w);
	/* bytes of a known total say how far it is, not the count */
	mgpu_progress_count(&p, "reading", 1, 4, "shards", 750, 1000, 1);
	w = written(fd);
	T_CHECK(strstr(w, "ETA 3s"), "'%s'", w);
	/* a new phase counts its time from now, and draws at once */
	p.every_s = 1e9;
	mgpu_progress_restart(&p);
	T_CHECK(mgpu_progress_due(&p), "a new phase's first draw is due");
	mgpu_progress_count(&p, "caching", 1, 4, "rows", 10, 0, 1);
	w = written(fd);
	T_CHECK(strstr(w, "/s, 0s, ETA 0s"), "'%s'", w);
	close(fd);
}

int main(void)
{
	if (t_tmpdir_make("progress") < 0)
		return 1;
	T_RUN(test_durations);
	T_RUN(test_bytes_and_counts);
	T_RUN(test_draw_clear_hide);
	T_RUN(test_count);
	t_tmpdir_remove();
	return T_DONE();
}
