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

enum { O_RANKS = 300, O_SIZES, O_BACKENDS, O_ITERS, O_TIMEOUT };

static const struct option longopts[] = {
	{ "ranks", required_argument, NULL, O_RANKS },
	{ "sizes", required_argument, NULL, O_SIZES },
	{ "backends", required_argument, NULL, O_BACKENDS },
	{ "iters", required_argument, NULL, O_ITERS },
	{ "timeout", required_argument, NULL, O_TIMEOUT },
	COMMON_LONGOPTS,
	{ NULL, 0, NULL, 0 },
};

static const char help[] =
	"usage: mgpu-bench allreduce [options]\n"
	"Time the sum all-reduce of each backend over a size sweep, nccl-tests style:\n"
	"median time per op, algbw = bytes / time, busbw = algbw x 2(n-1)/n, and the\n"
	"wrong elements of seeded data (any: exit 1); then the memcpy limit.\n\n"
	"  --ranks N             ranks (processes) [2]\n"
	"  --sizes LO:HI|LIST    sizes in bytes, doubling from LO, K/M/G suffixes [4K:256M]\n"
	"  --backends LIST       cpu (shared memory), nccl (one GPU per rank), mpi [cpu]\n"
	"  --iters N             timed ops per size [50; 10 from 16M]\n"
	"  --timeout SECONDS     a rank that stops answering fails the run [60]\n"
	"  --json   --format tsv|json|markdown   -o, --output FILE   -q   -v\n"
	"  -h, --help   -V, --version\n";

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

static void parse(struct aopts *o, int argc, char **argv)
{
	int c, v;

	memset(o, 0, sizeof *o);
	o->co.fmt = -1;
	o->ranks = 2;
	o->timeout_s = 60;
	o->backends[0] = B_CPU;
	o->nbackends = 1;
	if (mgpu_bench_sizes("--sizes", "4K:256M", (size_t)1 << 34, o->sizes, MAX_SIZES,
			     &o->nsizes) < 0)
		die_lib();
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+" COMMON_SHORTOPTS, longopts, NULL)) != -1) {
		switch (c) {
		case O_RANKS: o->ranks = (int)opt_int("--ranks", optarg, 1, MGPU_SHM_MAX_RANKS); break;
		case O_ITERS: o->iters = (int)opt_int("--iters", optarg, 1, 1000); break;
		case O_TIMEOUT: o->timeout_s = (int)opt_int("--timeout", optarg, 1, 86400); break;
		case O_SIZES:
			if (mgpu_bench_sizes("--sizes", optarg, (size_t)1 << 34, o->sizes, MAX_SIZES,
					     &o->nsizes) < 0)
				usage_error("%s", mgpu_errmsg());
			break;
		case O_BACKENDS: {
			char buf[64], *p, *save = NULL;
			if (strlen(optarg) >= sizeof buf || !optarg[0])
				usage_error("--backends: bad list '%s'", optarg);
			snprintf(buf, sizeof buf, "%s", optarg);
			o->nbackends = 0;
			for (p = strtok_r(buf, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
				if (mgpu_cli_choice("--backends", p, backend_words, &v) < 0)
					usage_error("%s", mgpu_errmsg());
				if (o->nbackends == 3)
					usage_error("--backends: a backend given twice in '%s'", optarg);
				o->backends[o->nbackends++] = v;
			}
			break;
		}
		case '?': case ':':
			usage_error("unknown or incomplete option '%s'", argv[optind - 1]);
		default:
			if (!common_opt(&o->co, c, optarg, help))
				usage_error("unknown option");
		}
	}
	if (optind < argc)
		usage_error("unexpected argument '%s'", argv[optind]);
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
		fprintf(stderr, "mgpu-bench: allreduce %s: %zu bytes: %.1f us, busbw %.3f GB/s\n",
			s->backend, r->nbytes, r->time_us, r->busbw_gbps);
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

	if (mgpu_shm_attach(&c, name, r, o->ranks, mgpu_bench_ar_nparams(cfg), 0,
			    1000 * o->timeout_s) < 0) {
		fprintf(stderr, "mgpu-bench: rank %d: error: %s\n", r, mgpu_errmsg());
		_exit(1);
	}
	if (mgpu_bench_ar_rank(&c, cfg, &wrong) < 0) {
		fprintf(stderr, "mgpu-bench: rank %d: error: %s\n", r, mgpu_errmsg());
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
		fprintf(stderr, "mgpu-bench: error: allreduce %s: %s\n", sk.backend, mgpu_errmsg());
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
		fprintf(stderr, "mgpu-bench: error: allreduce %s: %s\n", sk.backend, mgpu_errmsg());
	for (r = 1; r < o->ranks; r++)
		if (pid[r] < 0 || waitpid(pid[r], &st, 0) < 0 || !WIFEXITED(st) ||
		    WEXITSTATUS(st) != 0)
			bad = 1;
	mgpu_shm_unlink(name);
	mgpu_shm_close(&s);
	if (bad && rc == 0)
		fprintf(stderr, "mgpu-bench: error: allreduce %s: a rank failed\n", sk.backend);
	return rc < 0 || bad ? -1 : 0;
}

/* Can backend b run here? 0, or -1 after printing why not. */
static int available(const struct aopts *o, int b)
{
	char why[256];
	int n;

	if (b == B_MPI) {
		fprintf(stderr, "mgpu-bench: error: allreduce mpi: no MPI all-reduce in this "
			"build (lib/comm has no MPI backend yet)\n");
		return -1;
	}
	if (b != B_NCCL)
		return 0;
	n = gpu_count(why, sizeof why);
	if (n >= o->ranks)
		return 0;
	fprintf(stderr, "mgpu-bench: error: allreduce nccl: needs %d GPUs (one per rank), %d "
		"found: %s\n", o->ranks, n, why);
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
		fprintf(stderr, "mgpu-bench: error: allreduce: %lld wrong element%s\n",
			(long long)wrong_all, wrong_all > 1 ? "s" : "");
	if (mgpu_interrupted)
		return 130;
	return failed || wrong_all ? 1 : 0;
}
