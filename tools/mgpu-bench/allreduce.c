/*
 * allreduce.c - `mgpu-bench allreduce`: the all-reduce of each backend
 * over a size sweep with N ranks, nccl-tests style (lib/bench/allreduce.h
 * does the measuring), and this machine's memcpy bandwidth as the limit.
 *
 * Ranks are processes forked from this one on one shared-memory segment;
 * rank 0 is this process and reports. For nccl the GPU count is asked in
 * a child process first, so CUDA is never initialised before the fork.
 * Any wrong element, or a backend that cannot run, makes the exit status 1.
 * Test hook: MGPU_BENCH_CORRUPT=1 in the environment changes one element
 * of one rank's result before the check (see mgpu-bench(1)).
 */
#include <stdio.h>    /* printf, fprintf */
#include <stdlib.h>   /* getenv */
#include <string.h>   /* strcmp */
#include <sys/wait.h> /* waitpid */
#include <unistd.h>   /* fork, pipe, getpid */

#include "../common.h"       /* die, usage_error */
#include "bench.h"           /* struct common */
#include "bench/allreduce.h" /* mgpu_bench_ar_rank */
#include "bench/stats.h"     /* mgpu_bench_sizes */
#include "bench/tab.h"       /* struct mgpu_tab */
#include "comm/shm.h"        /* mgpu_shm_create */
#include "core/cli.h"        /* mgpu_cli_choice */
#include "core/err.h"        /* mgpu_errmsg */
#include "ops/ops.h"         /* mgpu_ops_find */

#define MAX_SIZES 64

static const char help[] =
	"usage: mgpu-bench allreduce [options]\n"
	"Time the sum all-reduce of each backend over a size sweep, nccl-tests style:\n"
	"median time per op, algbw = bytes / time, busbw = algbw x 2(n-1)/n, and the\n"
	"wrong elements of seeded data (any: exit 1); then the memcpy limit.\n";

static const char *const backend_words[] = { "cpu", "nccl", "mpi", NULL };
enum { B_CPU, B_NCCL, B_MPI };

static const char *const cols[] = { "backend", "ranks", "size_bytes", "count", "time_us",
				    "algbw_gbps", "busbw_gbps", "wrong" };
static const int types[] = { MGPU_TAB_STR, MGPU_TAB_NUM, MGPU_TAB_NUM, MGPU_TAB_NUM,
			     MGPU_TAB_NUM, MGPU_TAB_NUM, MGPU_TAB_NUM, MGPU_TAB_NUM };

struct aopts {
	struct common co;
	int ranks, backends[3], nbackends, iters, timeout_s;
	size_t sizes[MAX_SIZES];
	int nsizes;
};

/* What rank 0's callback needs. */
struct sink {
	struct mgpu_tab *t;
	const char *backend;
	int ranks, progress;
};

static int set_sizes(void *t, const char *arg)
{
	struct aopts *o = t;

	return mgpu_bench_sizes("--sizes", arg, (size_t)1 << 34, o->sizes, MAX_SIZES, &o->nsizes);
}

static int set_backends(void *t, const char *arg)
{
	struct aopts *o = t;
	char buf[64], *p, *save = NULL;
	int v;

	if (strlen(arg) >= sizeof buf || !arg[0])
		return mgpu_err(MGPU_EINVAL, "--backends: bad list '%s'", arg);
	snprintf(buf, sizeof buf, "%s", arg);
	o->nbackends = 0;
	for (p = strtok_r(buf, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
		MGPU_TRY(mgpu_cli_choice("--backends", p, backend_words, &v));
		if (o->nbackends == 3)
			return mgpu_err(MGPU_EINVAL, "--backends: a backend given twice in '%s'", arg);
		o->backends[o->nbackends++] = v;
	}
	return 0;
}

#define O struct aopts
static const struct mgpu_opt options[] = {
	MGPU_OPT_HEAD("the sweep"),
	MGPU_OPT_ROW(MGPU_OPT_INT, "ranks", 0, O, ranks, 1, MGPU_SHM_MAX_RANKS, "N",
		     "ranks (processes)", 0),
	MGPU_OPT_CALL("sizes", 0, set_sizes, NULL, "LO:HI|LIST",
		      "sizes in bytes, doubling from LO, K/M/G suffixes", "4K:256M", 0),
	MGPU_OPT_CALL("backends", 0, set_backends, NULL, "LIST",
		      "cpu (shared memory), nccl (one GPU per rank), mpi", "cpu", 0),
	MGPU_OPT_ROWD(MGPU_OPT_INT, "iters", 0, O, iters, 1, 1000, "N", "timed ops per size",
		      "50; 10 from 16M", 0),
	MGPU_OPT_ROW(MGPU_OPT_INT, "timeout", 0, O, timeout_s, 1, 86400, "SECONDS",
		     "a rank that stops answering fails the run", 0),
	MGPU_OPT_COMMON(O, co.opts),
	MGPU_OPT_TABLE_END,
};
#undef O

static void parse(struct aopts *o, int argc, char **argv)
{
	static const struct aopts def = { .ranks = 2, .timeout_s = 60 };
	const struct tool_cli cli = { options, help, &def };
	int first;

	memset(o, 0, sizeof *o);
	o->ranks = 2;
	o->timeout_s = 60;
	o->backends[0] = B_CPU;
	o->nbackends = 1;
	if (mgpu_bench_sizes("--sizes", "4K:256M", (size_t)1 << 34, o->sizes, MAX_SIZES,
			     &o->nsizes) < 0)
		die_lib();
	first = common_parse(&cli, o, &o->co, argc, argv, 1);
	if (first < argc)
		usage_error("unexpected argument '%s'", argv[first]);
}

static int on_row(void *ctx, const struct mgpu_bench_ar_row *r)
{
	struct sink *s = ctx;
	struct mgpu_tab *t = s->t;
	size_t i;

	if (mgpu_tab_add_row(t) < 0)
		return -1;
	i = t->nrows - 1;
	mgpu_tab_set(t, i, "backend", s->backend);
	mgpu_tab_setf(t, i, "ranks", "%d", s->ranks);
	mgpu_tab_setf(t, i, "size_bytes", "%zu", r->nbytes);
	mgpu_tab_setf(t, i, "count", "%zu", r->count);
	mgpu_tab_num(t, i, "time_us", r->time_us, 5);
	mgpu_tab_num(t, i, "algbw_gbps", r->algbw_gbps, 4);
	mgpu_tab_num(t, i, "busbw_gbps", r->busbw_gbps, 4);
	mgpu_tab_setf(t, i, "wrong", "%lld", (long long)r->wrong);
	if (s->progress)
		note("allreduce %s: %zu bytes: %.1f us, busbw %.3f GB/s", s->backend, r->nbytes,
		     r->time_us, r->busbw_gbps);
	return 0;
}

/* GPUs the cuda backend sees, asked in a child so this process has no CUDA
 * context when it forks the ranks. */
static int gpu_count(char *why, size_t cap)
{
	const struct mgpu_ops *cuda = mgpu_ops_find("cuda");
	int fd[2], n = 0, st;
	pid_t pid;
	char msg[256] = "";

	if (!cuda) {
		snprintf(why, cap, "this build has no CUDA backend");
		return 0;
	}
	if (pipe(fd) < 0 || (pid = fork()) < 0)
		die("cannot start a process to count GPUs");
	if (pid == 0) {
		close(fd[0]);
		if (cuda->device_count(&n, msg, sizeof msg) < 0)
			n = 0;
		if (write(fd[1], &n, sizeof n) < 0 || write(fd[1], msg, sizeof msg) < 0)
			_exit(1);
		_exit(0);
	}
	close(fd[1]);
	if (read(fd[0], &n, sizeof n) != (ssize_t)sizeof n || read(fd[0], msg, sizeof msg) <= 0)
		n = 0;
	msg[sizeof msg - 1] = '\0';
	close(fd[0]);
	waitpid(pid, &st, 0);
	snprintf(why, cap, "%s", msg[0] ? msg : "none found");
	return n;
}

static _Noreturn void child_rank(const char *name, int r, const struct aopts *o,
				 const struct mgpu_bench_ar_cfg *cfg)
{
	struct mgpu_shm c;
	int64_t wrong;

	snprintf(mgpu_diag_prefix, sizeof mgpu_diag_prefix, "rank %d", r);
	if (mgpu_shm_attach(&c, name, r, o->ranks, mgpu_bench_ar_nparams(cfg), 0,
			    1000 * o->timeout_s) < 0) {
		error_msg("%s", mgpu_errmsg());
		_exit(1);
	}
	if (mgpu_bench_ar_rank(&c, cfg, &wrong) < 0) {
		error_msg("%s", mgpu_errmsg());
		_exit(1);
	}
	_exit(0);
}

/* One backend's sweep over the ranks; 0, or -1 after printing why. */
static int run_backend(const struct aopts *o, int b, struct mgpu_tab *t, int64_t *wrong)
{
	struct sink sk = { t, backend_words[b], o->ranks, common_progress(&o->co) };
	struct mgpu_bench_ar_cfg cfg = { b == B_NCCL ? MGPU_AR_NCCL : MGPU_AR_CPU, o->sizes,
					 o->nsizes, o->iters, 0, on_row, &sk };
	const char *corrupt = getenv("MGPU_BENCH_CORRUPT");
	struct mgpu_shm s;
	pid_t pid[MGPU_SHM_MAX_RANKS];
	char name[64];
	int r, st, rc, bad = 0;

	cfg.corrupt = corrupt && strcmp(corrupt, "1") == 0;
	snprintf(name, sizeof name, "/mgpu-bench-%ld-%s", (long)getpid(), backend_words[b]);
	if (mgpu_shm_create(&s, name, o->ranks, mgpu_bench_ar_nparams(&cfg), 0,
			    1000 * o->timeout_s) < 0) {
		error_msg("allreduce %s: %s", sk.backend, mgpu_errmsg());
		return -1;
	}
	fflush(NULL);
	for (r = 1; r < o->ranks; r++) {
		pid[r] = fork();
		if (pid[r] == 0)
			child_rank(name, r, o, &cfg);
	}
	rc = mgpu_bench_ar_rank(&s, &cfg, wrong);
	if (rc < 0)
		error_msg("allreduce %s: %s", sk.backend, mgpu_errmsg());
	for (r = 1; r < o->ranks; r++)
		if (pid[r] < 0 || waitpid(pid[r], &st, 0) < 0 || !WIFEXITED(st) ||
		    WEXITSTATUS(st) != 0)
			bad = 1;
	mgpu_shm_unlink(name);
	mgpu_shm_close(&s);
	if (bad && rc == 0)
		error_msg("allreduce %s: a rank failed", sk.backend);
	return rc < 0 || bad ? -1 : 0;
}

/* Can backend b run here? 0, or -1 after printing why not. */
static int available(const struct aopts *o, int b)
{
	char why[256];
	int n;

	if (b == B_MPI) {
		error_msg("allreduce mpi: no MPI all-reduce in this build (lib/comm has no MPI "
			  "backend yet)");
		return -1;
	}
	if (b != B_NCCL)
		return 0;
	n = gpu_count(why, sizeof why);
	if (n >= o->ranks)
		return 0;
	error_msg("allreduce nccl: needs %d GPUs (one per rank), %d found: %s", o->ranks, n, why);
	return -1;
}

static void add_limit(struct mgpu_tab *t, double gbps, size_t nbytes)
{
	size_t i;

	if (mgpu_tab_add_row(t) < 0)
		die_lib();
	i = t->nrows - 1;
	mgpu_tab_set(t, i, "backend", "memcpy");
	mgpu_tab_set(t, i, "ranks", "1");
	mgpu_tab_setf(t, i, "size_bytes", "%zu", nbytes);
	mgpu_tab_num(t, i, "algbw_gbps", gbps, 4);
	mgpu_tab_set(t, i, "wrong", "0");
}

static void write_out(struct aopts *o, struct mgpu_tab *t, double gbps, size_t nbytes)
{
	FILE *fp = common_open(&o->co);

	if (o->co.fmt != MGPU_FMT_MD)
		add_limit(t, gbps, nbytes);
	if (mgpu_tab_write(t, fp, o->co.fmt) < 0)
		die_lib();
	if (o->co.fmt == MGPU_FMT_MD)
		fprintf(fp, "\nLimit: memcpy %.3f GB/s on this machine (one core, best of 5 "
			"copies of %zu MiB).\nalgbw = bytes / time; busbw = algbw x 2(n-1)/n "
			"(nccl-tests).\n", gbps, nbytes >> 20);
	common_close(&o->co);
}

int bench_allreduce(int argc, char **argv)
{
	struct aopts o;
	struct mgpu_tab t;
	int64_t wrong, wrong_all = 0;
	size_t cp = (size_t)64 << 20;
	double gbps = 0;
	int i, failed = 0;

	parse(&o, argc, argv);
	if (mgpu_tab_init(&t, cols, types, 8) < 0)
		die_lib();
	for (i = 0; i < o.nbackends && !mgpu_interrupted; i++) {
		if (available(&o, o.backends[i]) < 0 ||
		    run_backend(&o, o.backends[i], &t, &wrong) < 0) {
			failed = 1;
			continue;
		}
		wrong_all += wrong;
	}
	if (mgpu_bench_memcpy_gbps(cp, &gbps) < 0)
		die_lib();
	write_out(&o, &t, gbps, cp);
	mgpu_tab_free(&t);
	if (wrong_all)
		error_msg("allreduce: %lld wrong element%s", (long long)wrong_all,
			  wrong_all > 1 ? "s" : "");
	if (mgpu_interrupted)
		return 130;
	return failed || wrong_all ? 1 : 0;
}
