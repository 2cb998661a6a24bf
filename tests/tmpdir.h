/*
 * tmpdir.h - a fresh temporary directory per test binary, for the tests
 * that write fixture files (include after t.h).
 *
 * t_tmpdir_make("name") makes /tmp/mgpu-test-name-XXXXXX; tpath("f") is
 * a path inside it, in a rotating buffer so a few can be live at once;
 * t_tmpdir_remove() deletes it, or keeps it and says where when a test
 * failed, for a look at the fixtures.
 */
#ifndef MGPU_TESTS_TMPDIR_H
#define MGPU_TESTS_TMPDIR_H

#include <stdio.h>  /* snprintf, perror */
#include <stdlib.h> /* mkdtemp, system */

static char tmpdir[256];

static int t_tmpdir_make(const char *tag)
{
	snprintf(tmpdir, sizeof tmpdir, "/tmp/mgpu-test-%s-XXXXXX", tag);
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return -1;
	}
	return 0;
}

static const char *tpath(const char *name)
{
	static char bufs[8][512];
	static int next;
	char *b = bufs[next++ % 8];

	snprintf(b, sizeof bufs[0], "%s/%s", tmpdir, name);
	return b;
}

static void t_tmpdir_remove(void)
{
	char cmd[300];

	if (t_failed_total) {
		printf("note: fixtures kept in %s\n", tmpdir);
		return;
	}
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
	if (system(cmd) != 0)
		printf("note: could not remove %s\n", tmpdir);
}

#endif
