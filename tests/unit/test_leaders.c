/*
 * test_leaders.c - the rendezvous of a job of several nodes (3 nodes x 2
 * ranks as processes on loopback: rank 0's NCCL unique id reaches every
 * rank of every node, whole) and the node leaders' TCP all-reduce:
 * exact sums with the same bits on every node over several chunks, the
 * broadcast, a wrong job token refused while rank 0 goes on, a leader
 * that goes away named by node and rank, a rank running another job
 * (another run identity) failing the rendezvous at once on every side,
 * and a stop request ending its waits.
 */
#include <signal.h>   /* kill */
#include <stdlib.h>   /* malloc, free */
#include <string.h>   /* strstr */
#include <sys/wait.h> /* waitpid */
#include <unistd.h>   /* fork, _exit */

#include "core/cancel.h"  /* mgpu_cancel_raise */
#include "core/err.h"     /* mgpu_errmsg */
#include "comm/leaders.h" /* mgpu_leaders_* */
#include "comm/rdzv.h"    /* mgpu_rdzv_* */
#include "../t.h"         /* T_RUN, T_CHECK, T_OK */

#define WORLD 6
#define LOCAL 2
#define NODES (WORLD / LOCAL)
#define N 300000 /* floats: more than one 1 MiB chunk */
#define TOKEN "test-token"

/* Node k's element i: small integers, every sum exact in float. */
static float value(int node, size_t i)
{
	return (float)((i * 5 + (size_t)node * 11) % 37) - 18.0f;
}

/* Rank 0's stand-in for an ncclUniqueId: every one of the 128 bytes set. */
static void fake_id(uint8_t id[128])
{
	int i;

	for (i = 0; i < 128; i++)
		id[i] = (uint8_t)(i * 37 + 11) | 1;
}

static int check_sum(const float *b)
{
	size_t i;
	int k;

	for (i = 0; i < N; i++) {
		float want = 0;
		for (k = 0; k < NODES; k++)
			want += value(k, i);
		if (b[i] != want)
			return 1;
	}
	return 0;
}

/* A rank other than 0: join; a leader then sums and receives a broadcast.
 * mode 1: node 1's leader leaves instead. Exit status: 0 when all held. */
static _Noreturn void child(int port, int rank, int mode)
{
	struct mgpu_rdzv_info info;
	struct mgpu_leaders l;
	float *b = malloc(N * sizeof(float));
	double d[2] = { rank, 1 };
	uint8_t id[128];
	size_t i;
	int node = rank / LOCAL;

	if (!b || mgpu_rdzv_join("127.0.0.1", port, rank, WORLD, LOCAL, TOKEN, NULL, &info, 10000))
		_exit(10);
	fake_id(id);
	if (mode == 0 && memcmp(info.nccl_id, id, sizeof id) != 0)
		_exit(16);
	if (rank % LOCAL != 0)
		_exit(info.nleader_fds == 0 ? 0 : 11);
	if (mgpu_leaders_open(&l, &info, node, NODES, LOCAL, 10000) < 0)
		_exit(12);
	if (mode == 1)
		_exit(0);
	for (i = 0; i < N; i++)
		b[i] = value(node, i);
	if (mgpu_leaders_allreduce_f32(&l, b, N) < 0 || check_sum(b))
		_exit(13);
	if (mgpu_leaders_allreduce_f64(&l, d, 2) < 0 || d[0] != 0 + 2 + 4 || d[1] != NODES)
		_exit(14);
	if (mgpu_leaders_bcast_f32(&l, b, N) < 0 || b[7] != 42.0f)
		_exit(15);
	mgpu_leaders_close(&l);
	_exit(0);
}

static int start(int mode, pid_t *pid, int *lfd, int *port)
{
	int r;

	*port = 0;
	if (mgpu_rdzv_listen("127.0.0.1", port, lfd) < 0)
		return -1;
	for (r = 1; r < WORLD; r++)
		if ((pid[r] = fork()) == 0)
			child(*port, r, mode && r == LOCAL);
	return 0;
}

/* The last rank that failed (0: none); its exit status in *why. */
static int reap(const pid_t *pid, int *why)
{
	int r, st, bad = 0;

	*why = 0;
	for (r = 1; r < WORLD; r++)
		if (waitpid(pid[r], &st, 0) != pid[r] || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			bad = r;
			*why = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
		}
	return bad;
}

static void test_three_nodes(void)
{
	struct mgpu_rdzv_info info;
	struct mgpu_leaders l;
	float *b = malloc(N * sizeof(float));
	double d[2] = { 0, 1 };
	pid_t pid[WORLD];
	int lfd, port, bad, why;
	size_t i;

	T_CHECK(start(0, pid, &lfd, &port) == 0, "start: %s", mgpu_errmsg());
	memset(&info, 0, sizeof info);
	fake_id(info.nccl_id);
	T_OK(mgpu_rdzv_serve(lfd, WORLD, LOCAL, TOKEN, NULL, &info, 10000));
	close(lfd);
	T_CHECK(info.nleader_fds == NODES && info.leader_fd[1] >= 0 && info.leader_fd[2] >= 0,
		"%d leader connections", info.nleader_fds);
	T_OK(mgpu_leaders_open(&l, &info, 0, NODES, LOCAL, 10000));
	for (i = 0; i < N; i++)
		b[i] = value(0, i);
	T_OK(mgpu_leaders_allreduce_f32(&l, b, N));
	T_CHECK(check_sum(b) == 0, "wrong sum on node 0");
	T_OK(mgpu_leaders_allreduce_f64(&l, d, 2));
	T_CHECK(d[0] == 6 && d[1] == NODES, "f64 sums %g %g", d[0], d[1]);
	b[7] = 42.0f;
	T_OK(mgpu_leaders_bcast_f32(&l, b, N));
	mgpu_leaders_close(&l);
	bad = reap(pid, &why);
	T_CHECK(bad == 0, "rank %d failed with status %d (16: a wrong NCCL id)", bad, why);
	free(b);
}

static void test_leader_gone(void)
{
	struct mgpu_rdzv_info info;
	struct mgpu_leaders l;
	float b[64] = { 0 };
	pid_t pid[WORLD];
	int lfd, port, r, st;

	T_CHECK(start(1, pid, &lfd, &port) == 0, "start: %s", mgpu_errmsg());
	memset(&info, 0, sizeof info);
	T_OK(mgpu_rdzv_serve(lfd, WORLD, LOCAL, TOKEN, NULL, &info, 10000));
	close(lfd);
	T_OK(mgpu_leaders_open(&l, &info, 0, NODES, LOCAL, 10000));
	T_FAILS(mgpu_leaders_allreduce_f32(&l, b, 64), MGPU_EPEER, "node 1 (rank 2) went away");
	mgpu_leaders_close(&l);
	for (r = 1; r < WORLD; r++) {
		kill(pid[r], SIGKILL); /* node 2's leader waits for the sum */
		waitpid(pid[r], &st, 0);
	}
}

/* Another job's token is refused while rank 0 goes on waiting for the
 * real rank (rank 0 runs in a child here, the joins in this process). */
static void test_wrong_token(void)
{
	struct mgpu_rdzv_info info;
	int lfd, port = 0, st;
	pid_t p;

	T_OK(mgpu_rdzv_listen("127.0.0.1", &port, &lfd));
	p = fork();
	if (p == 0) {
		memset(&info, 0, sizeof info);
		_exit(mgpu_rdzv_serve(lfd, 2, 2, TOKEN, NULL, &info, 10000) == 0 ? 0 : 1);
	}
	close(lfd);
	T_FAILS(mgpu_rdzv_join("127.0.0.1", port, 1, 2, 2, "other-job", NULL, &info, 10000),
		MGPU_EINVAL, "refused rank 1: bad job token");
	T_FAILS(mgpu_rdzv_join("127.0.0.1", port, 1, 4, 2, TOKEN, NULL, &info, 10000),
		MGPU_EINVAL, "another world size");
	T_OK(mgpu_rdzv_join("127.0.0.1", port, 1, 2, 2, TOKEN, NULL, &info, 10000));
	T_CHECK(waitpid(p, &st, 0) == p && WIFEXITED(st) && WEXITSTATUS(st) == 0,
		"rank 0 failed after the refusals");
}

/* A rank that runs another job (another run identity) fails the
 * rendezvous at once on both sides, naming the rank, its node and the
 * first differing line; so does a rank that had already joined. */
static void test_other_job(void)
{
	const char *mine = "--model mlp:4-2\n--seed 42\n--lr 0.1";
	struct mgpu_rdzv_info info;
	int lfd, port = 0, st;
	char d[256];
	pid_t p, q;

	T_CHECK(mgpu_rdzv_ident_differs(mine, mine, d, sizeof d) == 0 && !d[0], "same: %s", d);
	T_CHECK(mgpu_rdzv_ident_differs("--seed 7\n--lr 0.1", "--seed 42\n--lr 0.1", d,
					sizeof d) == 1 && strcmp(d, "--seed 7 against 42") == 0,
		"%s", d);
	T_CHECK(mgpu_rdzv_ident_differs("--a 1", "--a 1\n--b 2", d, sizeof d) == 1 &&
			strcmp(d, "'' against '--b 2'") == 0, "%s", d);
	T_OK(mgpu_rdzv_listen("127.0.0.1", &port, &lfd));
	p = fork();
	if (p == 0) {
		memset(&info, 0, sizeof info);
		st = mgpu_rdzv_serve(lfd, 4, 2, TOKEN, mine, &info, 30000);
		_exit(st == MGPU_EINVAL && strstr(mgpu_errmsg(), "rank 3 (node 1, host ") &&
		      strstr(mgpu_errmsg(), "--seed 7 against 42") ? 0 : 1);
	}
	q = fork(); /* rank 1 joins first, as it should, and learns the job is off */
	if (q == 0) {
		st = mgpu_rdzv_join("127.0.0.1", port, 1, 4, 2, TOKEN, mine, &info, 30000);
		_exit(st == MGPU_EINVAL && strstr(mgpu_errmsg(), "refused rank 1: rank 3 (node 1")
		      ? 0 : 1);
	}
	close(lfd);
	usleep(200 * 1000);
	T_FAILS(mgpu_rdzv_join("127.0.0.1", port, 3, 4, 2, TOKEN,
			       "--model mlp:4-2\n--seed 7\n--lr 0.1", &info, 30000),
		MGPU_EINVAL, "--seed 7 against 42; every rank of a job needs the same");
	T_CHECK(waitpid(p, &st, 0) == p && WIFEXITED(st) && WEXITSTATUS(st) == 0,
		"rank 0 did not fail naming rank 3 and the seed");
	T_CHECK(waitpid(q, &st, 0) == q && WIFEXITED(st) && WEXITSTATUS(st) == 0,
		"rank 1 did not learn why the job is off");
}

/* A stop request (SIGINT, SIGTERM) ends every wait of the rendezvous at
 * once with MGPU_EINTR, not after the timeout. */
static void test_interrupted(void)
{
	struct mgpu_rdzv_info info;
	int lfd, port = 0;

	T_OK(mgpu_rdzv_listen("127.0.0.1", &port, &lfd));
	mgpu_cancel_raise(SIGINT);
	T_FAILS(mgpu_rdzv_serve(lfd, 2, 2, TOKEN, NULL, &info, 600000), MGPU_EINTR,
		"interrupted by SIGINT");
	close(lfd); /* nobody listens: the join retries until stopped */
	T_FAILS(mgpu_rdzv_join("127.0.0.1", port, 1, 2, 2, TOKEN, NULL, &info, 600000),
		MGPU_EINTR, "interrupted by SIGINT");
	mgpu_cancel_clear();
}

static void test_bad_layout(void)
{
	struct mgpu_rdzv_info info;
	int lfd, port = 0;

	T_OK(mgpu_rdzv_listen("127.0.0.1", &port, &lfd));
	T_FAILS(mgpu_rdzv_serve(lfd, 5, 2, TOKEN, NULL, &info, 1000), MGPU_EINVAL,
		"5 ranks do not make nodes of 2");
	close(lfd);
}

int main(void)
{
	T_RUN(test_three_nodes);
	T_RUN(test_leader_gone);
	T_RUN(test_wrong_token);
	T_RUN(test_bad_layout);
	T_RUN(test_other_job);
	T_RUN(test_interrupted);
	return T_DONE();
}
