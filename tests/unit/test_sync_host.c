/*
 * test_sync_host.c - gradient sync on host buffers: the rank-order sum of the
 * slots (also into one of its own terms), the host side of gpu/stage.h,
 * and the cpu strategies run for real between forked ranks (rendezvous on
 * loopback, the node's shared segment): the staged strategy of GPU ranks
 * (sync_host.c, on CPU ranks through MGPU_SYNC_STAGED=1) must give exactly
 * the weights of one process stepping on the rank-order sum, and the
 * shared-buffer strategy (sync_shm.c) the same within rounding.
 */
#include <stdint.h>   /* uint64_t */
#include <stdio.h>    /* fprintf */
#include <stdlib.h>   /* setenv, calloc */
#include <string.h>   /* memset, memcmp */
#include <sys/mman.h> /* mmap */
#include <sys/wait.h> /* waitpid */
#include <unistd.h>   /* fork, _exit, close */

#include "../t.h"        /* T_RUN, T_CHECK, T_OK, T_FAILS */
#include "comm/launch.h" /* struct mgpu_rank_env */
#include "comm/rdzv.h"   /* mgpu_rdzv_listen, mgpu_rdzv_new_token */
#include "core/err.h"    /* mgpu_errmsg */
#include "gpu/stage.h"   /* mgpu_stage_* */
#include "model/model.h"    /* mgpu_model_* */
#include "train/optim.h"    /* mgpu_optim_* */
#include "model/spec.h"     /* mgpu_spec_parse */
#include "train/sync.h"     /* mgpu_sync_* */
#include "train/sync_int.h" /* mgpu_sync_sum_slots */

#define SPEC "mlp:7-6-5-3"
#define STEPS 3
#define MAXW 3

/* ---- the rank-order sum --------------------------------------------------- */

static void test_sum_slots_in_place(void)
{
	enum { N = 1300 }; /* more than one chunk */
	static float g[3][N], want[N];
	const float *const gs[3] = { g[0], g[1], g[2] };
	size_t i;
	int r;

	for (r = 0; r < 3; r++)
		for (i = 0; i < N; i++)
			g[r][i] = (float)((i * 37 + (size_t)r * 101) % 97) * 0.013f - 0.6f;
	for (i = 0; i < N; i++)
		want[i] = (g[0][i] + g[1][i]) + g[2][i];
	/* rank 2 reduces [5, 1299) into its own slot, one of the terms */
	mgpu_sync_sum_slots(g[2], gs, 3, 5, N - 1);
	T_CHECK(memcmp(g[2] + 5, want + 5, (N - 6) * sizeof(float)) == 0,
		"sum into slot 2 differs from ((g0 + g1) + g2)");
	T_CHECK(g[2][4] == (float)((4 * 37 + 202) % 97) * 0.013f - 0.6f &&
		g[2][N - 1] == (float)(((N - 1) * 37 + 202) % 97) * 0.013f - 0.6f,
		"the sum wrote outside [a, e)");
	mgpu_sync_sum_slots(g[0], gs, 1, 0, N); /* one rank: a copy onto itself */
	T_CHECK(g[0][7] == (float)((7 * 37) % 97) * 0.013f - 0.6f, "one slot changed");
}

/* ---- gpu/stage.h on a host device --------------------------------------- */

static void test_stage_host(void)
{
	static float seg[64], devbuf[16];
	struct mgpu_stage st;
	struct mgpu_dev dev;
	int i;

	T_OK(mgpu_dev_open(&dev, &mgpu_ops_cpu, 0));
	T_FAILS(mgpu_stage_open(&st, &dev, seg, sizeof seg, 0), MGPU_EINVAL, "0 tickets");
	T_OK(mgpu_stage_open(&st, &dev, seg, sizeof seg, 2));
	for (i = 0; i < 16; i++)
		devbuf[i] = (float)i;
	T_OK(mgpu_stage_to_host(&st, 1, seg + 48, devbuf, 16 * sizeof(float)));
	T_CHECK(mgpu_stage_done(&st, 1) == 1, "a host copy is done on return");
	T_OK(mgpu_stage_wait(&st, 1));
	T_CHECK(seg[48] == 0.0f && seg[63] == 15.0f, "copied %g %g", seg[48], seg[63]);
	T_FAILS(mgpu_stage_to_host(&st, 0, seg + 49, devbuf, 16 * sizeof(float)), MGPU_EINVAL,
		"outside the staged");
	T_FAILS(mgpu_stage_to_host(&st, 2, seg, devbuf, 4), MGPU_EINVAL, "ticket 2 of 2");
	T_FAILS(mgpu_stage_done(&st, -1), MGPU_EINVAL, "ticket -1");
	T_FAILS(mgpu_stage_to_dev(&st, devbuf, devbuf, 4), MGPU_EINVAL, "outside the staged");
	seg[0] = 42.0f;
	T_OK(mgpu_stage_to_dev(&st, devbuf + 3, seg, sizeof(float)));
	T_OK(mgpu_stage_drain(&st));
	T_CHECK(devbuf[3] == 42.0f, "copied back %g", devbuf[3]);
	mgpu_stage_close(&st);
	mgpu_dev_close(&dev);
}

/* ---- ranks stepping through a strategy --------------------------------- */

/* What every rank writes back: its weights, summed values and norm. */
struct result {
	float w[MAXW][128];
	double vals[MAXW];
	double norm[MAXW];
	int shared[MAXW];           /* the rank's weights were the node's one copy */
};

static float grad_of(int rank, int step, size_t i)
{
	return (float)((i * 31 + (size_t)rank * 7919 + (size_t)step * 104729) % 1000) * 1e-3f -
	       0.5f;
}

static struct mgpu_optim_cfg optim_cfg(float clip)
{
	struct mgpu_optim_cfg c;

	memset(&c, 0, sizeof c);
	c.kind = MGPU_OPT_SGD;
	c.momentum = 0.9f;
	c.weight_decay = 0.01f;
	c.clip_norm = clip;
	return c;
}

static size_t nparams(void)
{
	struct mgpu_spec spec;

	return mgpu_spec_parse(&spec, SPEC, "test") < 0 ? 0 : mgpu_model_count(&spec);
}

struct job {
	int world, port, listen_fd;
	char token[MGPU_TOKEN_LEN + 1];
	float clip;
};

/* Build the rank's model and optimizer on the buffers the strategy asks. */
static int build(struct mgpu_sync *s, struct mgpu_dev *dev, struct mgpu_model *m,
		 struct mgpu_optim *o, const struct mgpu_optim_cfg *oc)
{
	struct mgpu_spec spec;
	float *w, *g, *s0, *s1;

	MGPU_TRY(mgpu_spec_parse(&spec, SPEC, "test"));
	mgpu_sync_model_buffers(s, 1, &w, &g, &s0, &s1);
	MGPU_TRY(mgpu_model_create_ext(m, &spec, dev, 4, w, g));
	if (s0 || s1 || !mgpu_sync_owns_optimizer(s))
		MGPU_TRY(mgpu_optim_create_ext(o, m, oc, s0, s1));
	else
		MGPU_TRY(mgpu_optim_create(o, m, oc));
	if (mgpu_sync_loads_state(s))
		MGPU_TRY(mgpu_model_init(m, 1));
	return mgpu_sync_bind(s, m, o);
}

/* One optimizer step: this rank's gradient, its buckets as backward would
 * hand them over (last layer first), then the step. */
static int step(struct mgpu_sync *s, struct mgpu_model *m, int rank, int t, double *val)
{
	size_t i;
	int l;

	for (i = 0; i < m->nparams; i++)
		m->g[i] = grad_of(rank, t, i);
	mgpu_sync_micro(s, 1, 0.1f);
	for (l = m->spec.nlayers - 1; l >= 0; l--)
		MGPU_TRY(m->grad_ready(m->grad_ctx, l, s->boff[l], s->bcnt[l]));
	*val = rank + 1;
	return mgpu_sync_step(s, val, 1);
}

static int rank_run(const struct job *j, int rank, struct result *res)
{
	struct mgpu_optim_cfg oc = optim_cfg(j->clip);
	struct mgpu_rank_env env;
	struct mgpu_sync s;
	struct mgpu_dev dev;
	struct mgpu_model m;
	struct mgpu_optim o;
	int t;

	memset(&env, 0, sizeof env);
	memset(&m, 0, sizeof m);
	memset(&o, 0, sizeof o);
	env.launcher = MGPU_LAUNCH_SELF;
	env.rank = env.local_rank = rank;
	env.world = env.local_world = j->world;
	snprintf(env.addr, sizeof env.addr, "127.0.0.1");
	env.port = j->port;
	memcpy(env.token, j->token, sizeof env.token);
	env.listen_fd = rank == 0 ? j->listen_fd : -1;
	MGPU_TRY(mgpu_dev_open(&dev, &mgpu_ops_cpu, 0));
	MGPU_TRY(mgpu_sync_open(&s, &env, MGPU_SYNC_CPU, nparams(), mgpu_optim_nstate_for(&oc),
				&dev, 20000));
	MGPU_TRY(build(&s, &dev, &m, &o, &oc));
	for (t = 0; t < STEPS; t++)
		MGPU_TRY(step(&s, &m, rank, t, &res->vals[rank]));
	memcpy(res->w[rank], m.w, m.nparams * sizeof(float));
	res->norm[rank] = s.grad_norm;
	res->shared[rank] = s.shared_w != NULL;
	mgpu_sync_close(&s);
	return 0;
}

/* Fork world ranks of one job; 0 when all succeeded. */
static int run_job(int world, const char *staged, float clip, struct result *res)
{
	struct job j;
	pid_t pid[MAXW];
	int r, st, bad = 0;

	memset(&j, 0, sizeof j);
	j.world = world;
	j.clip = clip;
	if (mgpu_rdzv_new_token(j.token) < 0 || mgpu_rdzv_listen("127.0.0.1", &j.port,
								&j.listen_fd) < 0)
		return -1;
	setenv("MGPU_SYNC_STAGED", staged, 1);
	for (r = 0; r < world; r++) {
		pid[r] = fork();
		if (pid[r] == 0) {
			if (rank_run(&j, r, res) < 0) {
				fprintf(stderr, "rank %d: %s\n", r, mgpu_errmsg());
				_exit(1);
			}
			_exit(0);
		}
	}
	close(j.listen_fd);
	for (r = 0; r < world; r++)
		if (pid[r] < 0 || waitpid(pid[r], &st, 0) < 0 || !WIFEXITED(st) ||
		    WEXITSTATUS(st) != 0)
			bad = 1;
	return bad ? -1 : 0;
}

/* One process stepping on the rank-order sum (the strategies do not
 * scale it: the loss averages over the global batch). */
static int reference(int world, float clip, float *w, double *norm)
{
	struct mgpu_optim_cfg oc = optim_cfg(clip);
	struct mgpu_spec spec;
	struct mgpu_dev dev;
	struct mgpu_model m;
	struct mgpu_optim o;
	size_t i;
	int t, r;

	MGPU_TRY(mgpu_dev_open(&dev, &mgpu_ops_cpu, 0));
	MGPU_TRY(mgpu_spec_parse(&spec, SPEC, "test"));
	MGPU_TRY(mgpu_model_create(&m, &spec, &dev, 4));
	MGPU_TRY(mgpu_optim_create(&o, &m, &oc));
	MGPU_TRY(mgpu_model_init(&m, 1));
	for (t = 0; t < STEPS; t++) {
		for (i = 0; i < m.nparams; i++) {
			float x = grad_of(0, t, i);
			for (r = 1; r < world; r++)
				x += grad_of(r, t, i);
			m.g[i] = x;
		}
		MGPU_TRY(mgpu_optim_step(&o, 0.1f, 1.0f));
	}
	memcpy(w, m.w, m.nparams * sizeof(float));
	*norm = o.last_norm;
	mgpu_optim_free(&o);
	mgpu_model_free(&m);
	mgpu_dev_close(&dev);
	return 0;
}

static void check_job(int world, const char *staged, float clip, int exact)
{
	struct result *res = mmap(NULL, sizeof *res, PROT_READ | PROT_WRITE,
				  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	float want[128];
	double norm = 0;
	size_t n = nparams(), i;
	int r;

	T_CHECK(res != MAP_FAILED && n > 0 && n <= 128, "mmap, or %zu parameters", n);
	if (res == MAP_FAILED || n == 0 || n > 128)
		return;
	memset(res, 0, sizeof *res);
	T_OK(reference(world, clip, want, &norm));
	T_CHECK(run_job(world, staged, clip, res) == 0, "%d ranks (staged=%s, clip %g) failed",
		world, staged, clip);
	for (r = 0; r < world; r++) {
		T_CHECK(res->vals[r] == world * (world + 1) / 2.0, "rank %d: summed value %g", r,
			res->vals[r]);
		T_CHECK(memcmp(res->w[r], res->w[0], n * sizeof(float)) == 0,
			"rank %d's weights differ from rank 0's", r);
		T_NEAR(res->norm[r], norm, 1e-6 * norm);
		T_CHECK(res->shared[r] == !exact, "rank %d ran the %s strategy", r,
			res->shared[r] ? "shared-buffer" : "staged");
	}
	for (i = 0; i < n; i++) {
		if (exact)
			T_CHECK(res->w[0][i] == want[i], "w[%zu] = %.9g, one process %.9g", i,
				res->w[0][i], want[i]);
		else
			T_NEAR(res->w[0][i], want[i], 1e-6);
	}
	munmap(res, sizeof *res);
}

/* The strategy of GPU ranks, on CPU ranks: each rank steps its replica on
 * the rank-order sum, bit for bit what one process does. */
static void test_staged_two_ranks(void)
{
	check_job(2, "1", 0.0f, 1);
}

/* Three ranks (a rank reduces into its own slot, a term of the sum), with
 * clipping. */
static void test_staged_three_ranks_clip(void)
{
	check_job(3, "1", 0.05f, 1);
}

/* The shared-buffer strategy of CPU ranks agrees within rounding: the GPU
 * ranks' results equal the CPU ranks'. */
static void test_shm_agrees(void)
{
	check_job(2, "0", 0.0f, 0);
	check_job(3, "0", 0.05f, 0);
}

int main(void)
{
	T_RUN(test_sum_slots_in_place);
	T_RUN(test_stage_host);
	T_RUN(test_staged_two_ranks);
	T_RUN(test_staged_three_ranks_clip);
	T_RUN(test_shm_agrees);
	return T_DONE();
}
