/*
 * test_shm_stale.c - a shared-memory segment left by a job killed before
 * it could remove it (SIGKILL during the rendezvous) does not block the
 * next job of the same name (issue 19): mgpu_shm_create removes a segment
 * whose creator is gone, and refuses one whose creator lives, naming it.
 */
#include <stdio.h>    /* snprintf */
#include <sys/wait.h> /* waitpid */
#include <unistd.h>   /* fork, _exit, getpid */

#include "comm/shm.h" /* mgpu_shm_* */
#include "core/err.h" /* mgpu_errmsg */
#include "t.h"

static char name[64];

static void test_stale_removed(void)
{
	struct mgpu_shm s;
	int st;
	pid_t p = fork();

	if (p == 0) /* creates and dies without unlinking, as SIGKILL leaves it */
		_exit(mgpu_shm_create(&s, name, 2, 100, 0, 1000) == 0 ? 0 : 1);
	T_CHECK(waitpid(p, &st, 0) == p && WIFEXITED(st) && WEXITSTATUS(st) == 0,
		"the child could not create %s", name);
	T_OK(mgpu_shm_create(&s, name, 2, 100, 0, 1000));
	T_CHECK(s.ctl && s.w, "not mapped");
	mgpu_shm_close(&s);
}

static void test_live_refused(void)
{
	struct mgpu_shm s, t;
	char want[128];

	/* this process made it (test_stale_removed): it lives */
	snprintf(want, sizeof want, "is in use by process %d", (int)getpid());
	T_FAILS(mgpu_shm_create(&t, name, 2, 100, 0, 1000), MGPU_EIO, want);
	T_OK(mgpu_shm_unlink(name));
	T_OK(mgpu_shm_create(&s, name, 2, 100, 0, 1000));
	mgpu_shm_close(&s);
	T_OK(mgpu_shm_unlink(name));
}

int main(void)
{
	snprintf(name, sizeof name, "/mgpu-test-stale-%d", (int)getpid());
	T_RUN(test_stale_removed);
	T_RUN(test_live_refused);
	mgpu_shm_unlink(name);
	return T_DONE();
}
