/*
 * test_sync.c - gradient sync strategies (train/sync.h): the table's names,
 * one rank, mode dp threads and mode ddp processes over shared memory.
 *
 * Each rank sets a known gradient (small multiples of 1/16, so every sum
 * is exact) and hands its buckets to the strategy as backward would, last
 * layer first. A rank's gradient is its share of the mean (the loss scaled
 * it by 1 / global batch), so after the step every replica must hold the
 * same weights, those of one SGD step on the sum of the ranks' gradients,
 * and every rank must report that sum's norm.
 */
#include <math.h>     /* sqrt */
#include <pthread.h>  /* pthread_create */
#include <stdio.h>    /* snprintf, fflush */
#include <stdlib.h>   /* malloc */
#include <string.h>   /* memcmp */
#include <sys/wait.h> /* waitpid */
#include <unistd.h>   /* fork, _exit */

#include "comm/rdzv.h" /* mgpu_rdzv_listen */
#include "comm/shm.h"  /* mgpu_shm_create_private */
#include "core/err.h"  /* mgpu_errmsg */
#include "model/model.h"  /* struct mgpu_model */
#include "train/optim.h"  /* struct mgpu_optim */
#include "model/spec.h"   /* mgpu_spec_parse */
#include "train/sync.h"   /* mgpu_sync_* */
#include "t.h"

#define SPEC "mlp:4-3-2"
#define LR 0.5f
#define MAXP 64

/* Rank r's gradient element i: a multiple of 1/16 in [-0.5, 0.5]. */
static float grad_of(int r, size_t i)
{
	return (float)((int)((r * 7 + (int)i * 5) % 17) - 8) / 16.0f;
}

/* What one rank of a job does, and what it saw. */
struct rank_run {
	struct mgpu_sync s;
	const struct mgpu_shm *dp_seg; /* mode dp; else ddp through env */
	struct mgpu_rank_env env;
	int kind;
	float clip;
	float w0[MAXP], w1[MAXP];      /* weights before and after the step */
	size_t nparams;
	double grad_norm;
	double vals[2];
	int rc;
};

static int rank_step(struct rank_run *x)
{
	struct mgpu_optim_cfg oc = { .kind = MGPU_OPT_SGD, .clip_norm = x->clip };
	struct mgpu_spec spec;
	struct mgpu_dev dev;
	struct mgpu_model m;
	struct mgpu_optim o;
	float *w, *g, *s0, *s1;
	size_t i;
	int l, rank = x->env.rank;

	memset(&m, 0, sizeof m);
	memset(&o, 0, sizeof o);
	MGPU_TRY(mgpu_spec_parse(&spec, SPEC, "test"));
	MGPU_TRY(mgpu_dev_open(&dev, mgpu_ops_find("cpu"), 0));
	if (x->dp_seg)
		MGPU_TRY(mgpu_sync_open_dp(&x->s, x->dp_seg, rank));
	else
		MGPU_TRY(mgpu_sync_open(&x->s, &x->env, x->kind, mgpu_model_count(&spec),
					mgpu_optim_nstate_for(&oc), &dev, 10000));
	mgpu_sync_model_buffers(&x->s, 1, &w, &g, &s0, &s1);
	MGPU_TRY(mgpu_model_create_ext(&m, &spec, &dev, 1, w, g));
	MGPU_TRY(mgpu_optim_create_ext(&o, &m, &oc, s0, s1));
	if (mgpu_sync_loads_state(&x->s))
		MGPU_TRY(mgpu_model_init(&m, 5));
	MGPU_TRY(mgpu_sync_bind(&x->s, &m, &o));
	x->nparams = m.nparams;
	memcpy(x->w0, m.w, m.nparams * sizeof(float));
	mgpu_sync_micro(&x->s, 1, LR);
	for (i = 0; i < m.nparams; i++)
		m.g[i] = grad_of(rank, i);
	for (l = spec.nlayers - 1; l >= 0; l--) /* as backward: last layer first */
		MGPU_TRY(m.grad_ready(m.grad_ctx, l, x->s.boff[l], x->s.bcnt[l]));
	x->vals[0] = rank;
	x->vals[1] = 1;
	MGPU_TRY(mgpu_sync_step(&x->s, x->vals, 2));
	x->grad_norm = x->s.grad_norm;
	memcpy(x->w1, m.w, m.nparams * sizeof(float));
	mgpu_optim_free(&o);
	mgpu_model_free(&m);
	mgpu_sync_close(&x->s);
	mgpu_dev_close(&dev);
	return 0;
}

/* The weights and gradient norm every rank of a world-rank job must end
 * with: SGD on the sum of the ranks' gradients, clipped to clip. */
static void check_result(const struct rank_run *x, int world, float clip)
{
	double sq = 0, norm, f;
	float sum[MAXP];
	size_t i;
	int r;

	for (i = 0; i < x->nparams; i++) {
		sum[i] = 0;
		for (r = 0; r < world; r++)
			sum[i] += grad_of(r, i);
		sq += (double)sum[i] * sum[i];
	}
	norm = sqrt(sq);
	f = clip > 0 && norm > clip ? clip / norm : 1.0;
	T_NEAR(x->grad_norm, norm, 1e-6 * norm);
	for (i = 0; i < x->nparams; i++)
		T_NEAR(x->w1[i], x->w0[i] - LR * (float)(sum[i] * f), 1e-6);
	T_NEAR(x->vals[0], world * (world - 1) / 2.0, 0);
	T_NEAR(x->vals[1], world, 0);
}

static void test_names(void)
{
	struct mgpu_rank_env env = { .rank = 0, .world = 2, .listen_fd = -1 };
	struct mgpu_sync s;

	T_CHECK(strcmp(mgpu_sync_name(MGPU_SYNC_NONE), "none") == 0, "none");
	T_CHECK(strcmp(mgpu_sync_name(MGPU_SYNC_CPU), "cpu") == 0, "cpu");
	T_CHECK(strcmp(mgpu_sync_name(MGPU_SYNC_NCCL), "nccl") == 0, "nccl");
	T_CHECK(strcmp(mgpu_sync_name(MGPU_SYNC_MPI), "mpi") == 0, "mpi");
	T_CHECK(strcmp(mgpu_sync_name(MGPU_SYNC_NODES), "cpu") == 0, "cpu across nodes");
	T_CHECK(strcmp(mgpu_sync_name(99), "?") == 0, "past the table");
	T_CHECK(strcmp(mgpu_sync_name(-1), "?") == 0, "negative");
	T_FAILS(mgpu_sync_open(&s, &env, 9, 10, 0, NULL, 100), MGPU_EINVAL,
		"sync backend 9 does not exist");
}

/* One rank: strategy none whatever was asked, its own buffers. */
static void test_one_rank(void)
{
	struct rank_run x = { .env = { .world = 1, .local_world = 1, .listen_fd = -1 },
			      .kind = MGPU_SYNC_CPU };
	float *w, *g, *s0, *s1;

	T_OK(rank_step(&x));
	check_result(&x, 1, 0);
	T_OK(mgpu_sync_open(&x.s, &x.env, MGPU_SYNC_CPU, 10, 0, NULL, 100));
	T_CHECK(x.s.kind == MGPU_SYNC_NONE, "kind %d", x.s.kind);
	mgpu_sync_model_buffers(&x.s, 1, &w, &g, &s0, &s1);
	T_CHECK(!w && !g && !s0 && !s1, "one rank uses shared buffers");
	T_CHECK(mgpu_sync_loads_state(&x.s) && mgpu_sync_owns_optimizer(&x.s), "state");
	mgpu_sync_close(&x.s);
}

static void *dp_thread(void *arg)
{
	struct rank_run *x = arg;

	x->rc = rank_step(x);
	return NULL;
}

/* Mode dp: threads of one process; rank 0 steps, the others copy back. */
static void dp_job(int world, float clip)
{
	struct rank_run *x = calloc((size_t)world, sizeof *x);
	pthread_t tid[4];
	struct mgpu_shm seg;
	struct mgpu_spec spec;
	int r;

	memset(&seg, 0, sizeof seg);
	T_OK(mgpu_spec_parse(&spec, SPEC, "test"));
	T_OK(mgpu_shm_create_private(&seg, world, mgpu_model_count(&spec), 0, 10000));
	for (r = 0; r < world; r++) {
		x[r].dp_seg = &seg;
		x[r].env.rank = r;
		x[r].clip = clip;
		T_CHECK(pthread_create(&tid[r], NULL, dp_thread, &x[r]) == 0, "thread %d", r);
	}
	for (r = 0; r < world; r++)
		pthread_join(tid[r], NULL);
	for (r = 0; r < world; r++) {
		T_CHECK(x[r].rc == 0, "rank %d: %s", r, mgpu_errmsg());
		check_result(&x[r], world, clip);
		T_CHECK(memcmp(x[r].w1, x[0].w1, x[0].nparams * sizeof(float)) == 0,
			"rank %d's replica differs from rank 0's", r);
	}
	mgpu_shm_close(&seg);
	free(x);
}

static void test_dp(void)
{
	dp_job(2, 0);
	dp_job(3, 0);
	dp_job(3, 0.05f);
}

/* Mode ddp: world processes meeting through the rendezvous and a named
 * segment; the fused, sharded reduce + update (and with clip, the update
 * after the global norm). Children report through their exit status. */
static void ddp_job(int world, float clip)
{
	struct rank_run x = { .kind = MGPU_SYNC_CPU, .clip = clip };
	pid_t pid[4];
	int r, port = 0, fd = -1, status, bad;

	T_OK(mgpu_rdzv_listen("127.0.0.1", &port, &fd));
	x.env = (struct mgpu_rank_env){ .world = world, .local_world = world, .port = port,
					.listen_fd = -1 };
	snprintf(x.env.addr, sizeof x.env.addr, "127.0.0.1");
	snprintf(x.env.token, sizeof x.env.token, "test-sync-%d", (int)getpid());
	for (r = 1; r < world; r++) {
		pid[r] = fork();
		if (pid[r] == 0) {
			close(fd);
			x.env.rank = x.env.local_rank = r;
			t_cur_failed = 0;
			if (rank_step(&x) < 0) {
				printf("  rank %d: %s\n", r, mgpu_errmsg());
				fflush(stdout);
				_exit(2);
			}
			check_result(&x, world, clip);
			fflush(stdout);
			_exit(t_cur_failed ? 1 : 0);
		}
	}
	x.env.listen_fd = fd;
	T_OK(rank_step(&x));
	check_result(&x, world, clip);
	for (r = 1; r < world; r++) {
		waitpid(pid[r], &status, 0);
		bad = !WIFEXITED(status) || WEXITSTATUS(status) != 0;
		T_CHECK(!bad, "ddp rank %d of %d (clip %g) failed", r, world, (double)clip);
	}
}

static void test_ddp(void)
{
	fflush(stdout);
	ddp_job(2, 0);
	ddp_job(3, 0);
	ddp_job(3, 0.05f);
}

int main(void)
{
	T_RUN(test_names);
	T_RUN(test_one_rank);
	T_RUN(test_dp);
	T_RUN(test_ddp);
	return T_DONE();
}
