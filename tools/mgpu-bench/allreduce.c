/*
 * allreduce.c - `mgpu-bench allreduce`: the all-reduce of each backend
 * over a size sweep with N ranks, nccl-tests style (lib/bench/allreduce.h
 * does the measuring), and this machine's memcpy bandwidth as the limit.
 *
 * Ranks are processes forked from this one on one shared-memory segment;
 * rank 0 is this process and reports. The mpi backend needs processes
 * that mpirun started: run under mpirun (`mpirun -np 4 mgpu-bench allreduce
 * --backends mpi`), each process is one rank and rank 0 writes the table;
 * otherwise this process runs mpirun on itself that way and reads the
 * rows back. For nccl the GPU count is asked in
 * a child process first, so CUDA is never initialised before the fork.
 * Any wrong element, or a backend that cannot run, makes the exit status 1.
 * Test hook: MGPU_BENCH_CORRUPT=1 in the environment changes one element
 * of one rank's result before the check (see mgpu-bench(1)).
 */
#include <signal.h>   /* kill, SIGTERM */
#include <stdio.h>    /* printf, fprintf */
#include <stdlib.h>   /* getenv */
#include <string.h>   /* strcmp */
#include <sys/wait.h> /* waitpid */
#include <unistd.h>   /* fork, pipe, getpid */

#include "../common.h"       /* die, usage_error */
#include "bench.h"           /* struct common */
#include "bench/allreduce.h" /* mgpu_bench_ar_rank */
#include "bench/spawn.h"     /* mgpu_spawn_capture */
#include "bench/sweep.h"     /* mgpu_bench_split_command */
#include "bench/stats.h"     /* mgpu_bench_sizes */
#include "bench/tab.h"       /* struct mgpu_tab */
#include "comm/mpi.h"        /* mgpu_mpi_open */
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
				    "algbw_gbps", "busbw_gbps", "wrong", "blas_core",
				    "blas_threads" };
static const int types[] = { MGPU_TAB_STR, MGPU_TAB_NUM, MGPU_TAB_NUM, MGPU_TAB_NUM,
			     MGPU_TAB_NUM, MGPU_TAB_NUM, MGPU_TAB_NUM, MGPU_TAB_NUM,
			     MGPU_TAB_STR, MGPU_TAB_NUM };

struct aopts {
	struct common co;
	int ranks, backends[3], nbackends, iters, timeout_s;
	int ranks_set;
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
	if (!o->nbackends) /* "," would measure nothing and succeed */
		return mgpu_err(MGPU_EINVAL, "--backends: no backend in '%s'", arg);
	return 0;
}

static void show_sizes(const void *t, char *buf, size_t len)
{
	const struct aopts *o = t;
	size_t at = 0;
	int i, k;

	if (len)
		buf[0] = '\0';
	for (i = 0; i < o->nsizes && at < len; i++) {
		k = snprintf(buf + at, len - at, "%s%zu", i ? "," : "", o->sizes[i]);
		at += k > 0 ? (size_t)k : 0;
	}
}

static void show_backends(const void *t, char *buf, size_t len)
{
	const struct aopts *o = t;
	bench_show_list(buf, len, o->backends, o->nbackends, backend_words);
}

#define O struct aopts
static const struct mgpu_opt options[] = {
	MGPU_OPT_HEAD("the sweep"),
	MGPU_OPT_ROW(MGPU_OPT_INT, "ranks", 0, O, ranks, 1, MGPU_SHM_MAX_RANKS, "N",
		     "ranks (processes)", 0),
	MGPU_OPT_CALL("sizes", 0, set_sizes, show_sizes, "LO:HI|LIST",
		      "sizes in bytes, doubling from LO, K/M/G suffixes", "4K:256M", 0),
	MGPU_OPT_CALL("backends", 0, set_backends, show_backends, "LIST",
		      "cpu (shared memory), nccl (one GPU per rank), mpi", "cpu", 0),
	MGPU_OPT_ROWD(MGPU_OPT_INT, "iters", 0, O, iters, 1, 1000, "N", "timed ops per size",
		      "50; 10 from 16M", 0),
	MGPU_OPT_ROW(MGPU_OPT_INT, "timeout", 0, O, timeout_s, 1, 86400, "SECONDS",
		     "a rank that stops answering fails the run", 0),
	MGPU_OPT_CONFIG(O, co.opts),
	MGPU_OPT_COMMON(O, co.opts),
	MGPU_OPT_TABLE_END,
};
#undef O

static void parse(struct aopts *o, int argc, char **argv)
{
	static const struct aopts def = { .ranks = 2, .timeout_s = 60 };
	const struct tool_cli cli = { options, help, &def, sizeof *o };
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
	common_settings(&cli, o, &o->co, "mgpu-bench allreduce");
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
	int rc;

	snprintf(mgpu_diag_prefix, sizeof mgpu_diag_prefix, "rank %d", r);
	rc = mgpu_shm_attach(&c, name, r, o->ranks, mgpu_bench_ar_nparams(cfg), 0,
			     1000 * o->timeout_s);
	if (rc == 0)
		rc = mgpu_bench_ar_rank(&c, cfg, &wrong);
	if (rc < 0) {
		/* stopped, or a peer failed: rank 0 says why (rank 0 itself, as
		 * its failure shows here first, or the peer it waited for) */
		if (!mgpu_interrupted && rc != MGPU_EPEER)
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
	if (rc < 0 && !mgpu_interrupted)
		error_msg("allreduce %s: %s", sk.backend, mgpu_errmsg());
	/* failed or interrupted: the others would wait for rank 0 until
	 * --timeout (a signal to this process alone never reaches them) */
	for (r = 1; rc < 0 && r < o->ranks; r++)
		if (pid[r] > 0)
			kill(pid[r], SIGTERM);
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

/* Whether mpirun started this process (Open MPI's variables). */
static int under_mpirun(void)
{
	return getenv("OMPI_COMM_WORLD_SIZE") != NULL;
}

/* Search PATH for prog; 0 and the path in buf when found. */
static int find_in_path(const char *prog, char *buf, size_t cap)
{
	const char *p = getenv("PATH"), *e;

	for (; p && *p; p = *e ? e + 1 : e) {
		e = strchr(p, ':');
		if (!e)
			e = p + strlen(p);
		snprintf(buf, cap, "%.*s/%s", (int)(e - p), p, prog);
		if (e > p && access(buf, X_OK) == 0)
			return 0;
	}
	return -1;
}

/* The rows of the mpi run's TSV output, through the table's callback. */
static int take_rows(const char *out, size_t len, struct sink *sk, int64_t *wrong)
{
	struct mgpu_tab in;
	struct mgpu_bench_ar_row row;
	size_t i;
	int rc = 0;

	if (mgpu_tab_init(&in, NULL, NULL, 0) < 0 || mgpu_tab_parse_tsv(&in, out, len, "mpirun") < 0)
		return -1;
	for (i = 0; i < in.nrows && rc == 0; i++) {
		const char *b = mgpu_tab_get(&in, i, "backend");
		if (!b || strcmp(b, "mpi") != 0)
			continue;
		memset(&row, 0, sizeof row);
		row.nbytes = (size_t)mgpu_tab_getnum(&in, i, "size_bytes");
		row.count = (size_t)mgpu_tab_getnum(&in, i, "count");
		row.time_us = mgpu_tab_getnum(&in, i, "time_us");
		row.algbw_gbps = mgpu_tab_getnum(&in, i, "algbw_gbps");
		row.busbw_gbps = mgpu_tab_getnum(&in, i, "busbw_gbps");
		row.wrong = (int64_t)mgpu_tab_getnum(&in, i, "wrong");
		*wrong += row.wrong;
		rc = on_row(sk, &row);
	}
	mgpu_tab_free(&in);
	return rc;
}

/* The comma list of o's sizes in bytes, for the command line of mpirun. */
static void size_list(const struct aopts *o, char *buf, size_t cap)
{
	size_t len = 0;
	int i;

	buf[0] = '\0';
	for (i = 0; i < o->nsizes && len < cap; i++)
		len += (size_t)snprintf(buf + len, cap - len, "%s%zu", i ? "," : "", o->sizes[i]);
}

/* Not under mpirun: run mpirun -np ranks on this program's mpi sweep. */
static int run_mpirun(const struct aopts *o, struct mgpu_tab *t, int64_t *wrong)
{
	struct sink sk = { t, "mpi", o->ranks, common_progress(&o->co) };
	struct mgpu_spawn_result res;
	char mpirun[2048], self[2048], sizes[MAX_SIZES * 24], cmd[8192], line[512], *argv[32],
		iters[32] = "";
	int n = 0, rc;
	ssize_t k = readlink("/proc/self/exe", self, sizeof self - 1);

	if (find_in_path("mpirun", mpirun, sizeof mpirun) < 0 || k <= 0) {
		fprintf(stderr, "mgpu-bench: error: allreduce mpi: mpirun not found on PATH "
			"(install openmpi-bin)\n");
		return -1;
	}
	self[k] = '\0';
	size_list(o, sizes, sizeof sizes);
	if (o->iters)
		snprintf(iters, sizeof iters, "--iters %d", o->iters);
	/* More ranks than cores is what a benchmark on 2 cores does; unbound,
	 * so that the ranks do not pile onto one core. Root: asked for by the
	 * user who ran this as root. */
	snprintf(cmd, sizeof cmd, "'%s' -np %d --oversubscribe --bind-to none %s '%s' allreduce "
		 "--backends mpi --sizes %s --timeout %d %s --format tsv -q", mpirun, o->ranks,
		 geteuid() == 0 ? "--allow-run-as-root" : "", self, sizes, o->timeout_s, iters);
	if (mgpu_bench_split_command(cmd, argv, 32, &n) < 0)
		die_lib();
	if (mgpu_spawn_capture(argv, 1000 * (o->timeout_s + 600), &mgpu_interrupted, &res) < 0) {
		error_msg("allreduce mpi: %s", mgpu_errmsg());
		return -1;
	}
	/* rows with wrong elements make mpirun fail: they are still the result */
	rc = res.out_len > 0 ? take_rows(res.out, res.out_len, &sk, wrong) : -1;
	if (rc == 0 && !(res.exited && res.status == 0) && *wrong == 0)
		rc = -1;
	if (rc < 0) {
		mgpu_spawn_err_line(&res, line, sizeof line);
		fprintf(stderr, "mgpu-bench: error: allreduce mpi: mpirun %s %d: %s\n",
			res.exited ? "exited with status" : "killed by signal", res.status, line);
	}
	free(res.out);
	return rc;
}

/* Under mpirun: this process is one rank of the mpi sweep; rank 0 reports. */
static int run_mpi_rank(const struct aopts *o, struct mgpu_tab *t, int64_t *wrong,
			int *root)
{
	struct sink sk = { t, "mpi", 0, common_progress(&o->co) };
	struct mgpu_bench_ar_cfg cfg = { MGPU_AR_MPI, o->sizes, o->nsizes, o->iters, 0,
					 on_row, &sk };
	const char *corrupt = getenv("MGPU_BENCH_CORRUPT");
	struct mgpu_mpi *m;
	int rc;

	cfg.corrupt = corrupt && strcmp(corrupt, "1") == 0;
	*root = 1;
	if (mgpu_mpi_open(&m, 1, 1000 * o->timeout_s) < 0) {
		fprintf(stderr, "mgpu-bench: error: allreduce mpi: %s\n", mgpu_errmsg());
		return -1;
	}
	sk.ranks = mgpu_mpi_world_size(m);
	*root = mgpu_mpi_world_rank(m) == 0;
	if (o->ranks_set && o->ranks != sk.ranks) {
		fprintf(stderr, "mgpu-bench: error: allreduce mpi: --ranks %d, but mpirun started "
			"%d\n", o->ranks, sk.ranks);
		mgpu_mpi_close(m);
		return -1;
	}
	rc = mgpu_bench_ar_rank_mpi(m, &cfg, wrong);
	if (rc < 0) {
		fprintf(stderr, "mgpu-bench: rank %d: error: allreduce mpi: %s\n",
			mgpu_mpi_world_rank(m), mgpu_errmsg());
		mgpu_mpi_abort(m, 1);
	}
	mgpu_mpi_close(m);
	return rc < 0 ? -1 : 0;
}

/* Can backend b run here? 0, or -1 after printing why not. */
static int available(const struct aopts *o, int b)
{
	char why[256];
	int n;

	if (b == B_MPI) {
		if (mgpu_mpi_in_build())
			return 0;
		error_msg("allreduce mpi: this build has no MPI (install libopenmpi-dev and "
			  "rebuild)");
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
	bench_blas_fill(t);
	if (mgpu_tab_write(t, fp, o->co.fmt) < 0)
		common_fail(&o->co);
	if (o->co.fmt == MGPU_FMT_MD)
		fprintf(fp, "\nLimit: memcpy %.3f GB/s on this machine (one core, best of 5 "
			"copies of %zu MiB).\nalgbw = bytes / time; busbw = algbw x 2(n-1)/n "
			"(nccl-tests).\n", gbps, nbytes >> 20);
	common_close(&o->co);
}

static int report_wrong(int64_t wrong)
{
	if (wrong)
		error_msg("allreduce: %lld wrong element%s", (long long)wrong,
			  wrong > 1 ? "s" : "");
	return wrong != 0;
}

/* Under mpirun: only the mpi backend, rank 0 writes the table (no memcpy
 * limit line: the process that ran mpirun adds its own). */
static int mpi_main(struct aopts *o, struct mgpu_tab *t)
{
	int64_t wrong = 0;
	int root = 1, failed;

	if (o->nbackends != 1 || o->backends[0] != B_MPI)
		usage_error("under mpirun only --backends mpi runs");
	failed = available(o, B_MPI) < 0 || run_mpi_rank(o, t, &wrong, &root) < 0;
	if (root && !failed) {
		FILE *fp = common_open(&o->co);
		if (mgpu_tab_write(t, fp, o->co.fmt) < 0)
			common_fail(&o->co);
		common_close(&o->co);
	}
	mgpu_tab_free(t);
	if (root && report_wrong(wrong))
		failed = 1;
	return failed ? 1 : 0;
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
	if (mgpu_tab_init(&t, cols, types, 10) < 0)
		die_lib();
	if (under_mpirun())
		return mpi_main(&o, &t);
	for (i = 0; i < o.nbackends && !mgpu_interrupted; i++) {
		wrong = 0;
		if (available(&o, o.backends[i]) < 0 ||
		    (o.backends[i] == B_MPI ? run_mpirun(&o, &t, &wrong) :
					      run_backend(&o, o.backends[i], &t, &wrong)) < 0) {
			failed = 1;
			continue;
		}
		wrong_all += wrong;
	}
	exit_if_interrupted(); /* the ranks stopped and reaped, nothing written */
	if (mgpu_bench_memcpy_gbps(cp, &gbps) < 0)
		die_lib();
	write_out(&o, &t, gbps, cp);
	mgpu_tab_free(&t);
	report_wrong(wrong_all);
	return failed || wrong_all ? 1 : 0;
}
