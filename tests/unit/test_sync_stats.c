/*
 * test_sync_stats.c - mgpu_sync_stats (train/sync.h), the cross-rank sum of
 * --sync-bn, on every strategy CPU ranks can run here: one rank, 2 and 4
 * ranks over shared memory (mode ddp), the staged path of GPU ranks
 * (MGPU_SYNC_STAGED=1), threads of mode dp, and 2 nodes x 2 ranks whose
 * leaders meet over TCP on the loopback, with node 1's second rank late
 * at every bucket so that the leaders meet a sum with different buckets
 * in hand (tests/sync_stats_rank.h does the rank's part and checks every
 * sum and the step's weights, and that every rank took rank 0's BatchNorm
 * buffers when binding); a model without BatchNorm refuses the hook. Two
 * network-namespace nodes and mpirun:
 * tests/cli/50b-sync-bn-nodes.sh.
 */
#include <pthread.h>  /* pthread_create */
#include <stdio.h>    /* snprintf, fflush */
#include <stdlib.h>   /* setenv, unsetenv */
#include <sys/wait.h> /* waitpid */
#include <unistd.h>   /* fork, _exit */

#include "comm/rdzv.h" /* mgpu_rdzv_listen */
#include "comm/shm.h"  /* mgpu_shm_create_private */
#include "t.h"
#include "../sync_stats_rank.h" /* sr_run */

#define STEPS 3

/* A job of nnodes x local ranks forked on this host; children report
 * through their exit status. */
static void ddp_job(int nnodes, int local, int skew_ms)
{
	struct sr_job j = { .kind = MGPU_SYNC_CPU, .steps = STEPS, .skew_ms = skew_ms };
	int world = nnodes * local, r, port = 0, fd = -1, status;
	pid_t pid[8];

	T_OK(mgpu_rdzv_listen("127.0.0.1", &port, &fd));
	j.env = (struct mgpu_rank_env){ .world = world, .local_world = local, .nnodes = nnodes,
					.addr_given = nnodes > 1, .port = port,
					.listen_fd = -1 };
	snprintf(j.env.addr, sizeof j.env.addr, "127.0.0.1");
	snprintf(j.env.token, sizeof j.env.token, "test-sbn-%d", (int)getpid());
	fflush(stdout);
	for (r = 1; r < world; r++) {
		pid[r] = fork();
		if (pid[r] == 0) {
			close(fd);
			j.env.rank = r;
			j.env.local_rank = r % local;
			j.env.node = r / local;
			if (sr_run(&j) < 0) {
				printf("  rank %d: %s\n", r, mgpu_errmsg());
				fflush(stdout);
				_exit(1);
			}
			_exit(0);
		}
	}
	j.env.listen_fd = fd;
	T_OK(sr_run(&j));
	T_CHECK(j.sums == STEPS * 7, "rank 0 checked %ld sums", j.sums);
	for (r = 1; r < world; r++) {
		waitpid(pid[r], &status, 0);
		T_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
			"rank %d of %d nodes x %d failed", r, nnodes, local);
	}
}

static void test_one_rank(void)
{
	struct sr_job j = { .env = { .world = 1, .local_world = 1, .nnodes = 1,
				     .listen_fd = -1 },
			    .kind = MGPU_SYNC_CPU, .steps = STEPS };

	T_OK(sr_run(&j));
	T_CHECK(j.sums == STEPS * 7, "%ld sums", j.sums);
}

/* The hook needs a BatchNorm to serve: a model without buffers is refused. */
static void test_no_bn(void)
{
	struct mgpu_rank_env env = { .world = 1, .local_world = 1, .nnodes = 1,
				     .listen_fd = -1 };
	struct mgpu_optim_cfg oc = { .kind = MGPU_OPT_SGD };
	struct mgpu_spec spec;
	struct mgpu_dev dev;
	struct mgpu_model m;
	struct mgpu_optim o;
	struct mgpu_sync s;

	T_OK(mgpu_spec_parse(&spec, SR_SPEC, "test"));
	T_OK(mgpu_dev_open(&dev, mgpu_ops_find("cpu"), 0));
	T_OK(mgpu_sync_open(&s, &env, MGPU_SYNC_CPU, mgpu_model_count(&spec), 0, &dev, 1000));
	T_OK(mgpu_model_create(&m, &spec, &dev, 1));
	T_OK(mgpu_optim_create(&o, &m, &oc));
	T_OK(mgpu_sync_bind(&s, &m, &o));
	T_FAILS(mgpu_sync_bind_bn(&s, &m), MGPU_EINVAL,
		"--sync-bn: the model has no BatchNorm layer to sync");
	T_CHECK(m.stat_sum == NULL, "hook set anyway");
	mgpu_optim_free(&o);
	mgpu_model_free(&m);
	mgpu_sync_close(&s);
	mgpu_dev_close(&dev);
}

static void test_ddp(void)
{
	ddp_job(1, 2, 0);
	ddp_job(1, 4, 0);
}

/* sync_host.c, GPU ranks' strategy, on CPU ranks. */
static void test_staged(void)
{
	setenv("MGPU_SYNC_STAGED", "1", 1);
	ddp_job(1, 2, 0);
	ddp_job(1, 4, 0);
	unsetenv("MGPU_SYNC_STAGED");
}

/* Leaders over TCP; node 1's rank 3 naps before each bucket. */
static void test_nodes(void)
{
	ddp_job(2, 2, 30);
	ddp_job(2, 1, 0);
}

struct dp_arg {
	struct sr_job j;
	int rc;
	char why[256];
};

static void *dp_thread(void *p)
{
	struct dp_arg *a = p;

	a->rc = sr_run(&a->j);
	if (a->rc < 0)
		snprintf(a->why, sizeof a->why, "%s", mgpu_errmsg());
	return NULL;
}

static void dp_job(int world)
{
	struct dp_arg a[4];
	pthread_t tid[4];
	struct mgpu_shm seg;
	struct mgpu_spec spec;
	int r;

	memset(&seg, 0, sizeof seg);
	memset(a, 0, sizeof a);
	T_OK(mgpu_spec_parse(&spec, SR_SPEC, "test"));
	T_OK(mgpu_shm_create_private(&seg, world, mgpu_model_count(&spec), 0, 20000));
	for (r = 0; r < world; r++) {
		a[r].j.dp_seg = &seg;
		a[r].j.env.rank = r;
		a[r].j.steps = STEPS;
		T_CHECK(pthread_create(&tid[r], NULL, dp_thread, &a[r]) == 0, "thread %d", r);
	}
	for (r = 0; r < world; r++)
		pthread_join(tid[r], NULL);
	for (r = 0; r < world; r++)
		T_CHECK(a[r].rc == 0 && a[r].j.sums == STEPS * 7, "dp rank %d of %d: %s (%ld sums)",
			r, world, a[r].why, a[r].j.sums);
	mgpu_shm_close(&seg);
}

static void test_dp(void)
{
	dp_job(2);
	dp_job(4);
}

int main(void)
{
	T_RUN(test_one_rank);
	T_RUN(test_no_bn);
	T_RUN(test_ddp);
	T_RUN(test_staged);
	T_RUN(test_dp);
	T_RUN(test_nodes);
	return T_DONE();
}
