/*
 * launch.c - rank environment and the forking launcher (see launch.h).
 */
#include "comm/launch.h"

#include <errno.h>      /* errno, EINTR */
#include <fcntl.h>      /* fcntl, O_NONBLOCK */
#include <limits.h>     /* INT_MAX */
#include <stdio.h>      /* snprintf */
#include <stdlib.h>     /* getenv, setenv, strtol, _exit */
#include <string.h>     /* strcmp, strsignal, strchr */
#include <sys/prctl.h>  /* prctl, PR_SET_PDEATHSIG */
#include <sys/wait.h>   /* waitpid, WIFEXITED */
#include <time.h>       /* nanosleep, clock_gettime */
#include <unistd.h>     /* fork, execv, getppid */

#include "core/err.h"  /* mgpu_err */
#include "core/hash.h" /* mgpu_hash64 */

const char *mgpu_launcher_name(int launcher)
{
	static const char *const names[] = { "none", "mgpu-train", "torchrun", "slurm",
					     "openmpi" };
	return launcher >= 0 && launcher <= MGPU_LAUNCH_OMPI ? names[launcher] : "?";
}

/* A variable holding an int in [lo, hi]; absent: *out = dflt. */
static int env_int(const char *name, int lo, int hi, int dflt, int *out)
{
	const char *v = getenv(name);
	char *end;
	long x;

	*out = dflt;
	if (!v)
		return 0;
	errno = 0;
	x = strtol(v, &end, 10);
	if (*v == '\0' || *end != '\0' || errno || x < lo || x > hi)
		return mgpu_err(MGPU_EINVAL, "environment: %s='%s' is not an integer in [%d, %d]",
				name, v, lo, hi);
	*out = (int)x;
	return 0;
}

static int detect(struct mgpu_rank_env *e, const char **rank_v, const char **size_v,
		  const char **local_v, const char **local_size_v)
{
	const char *self = getenv("MGPU_LAUNCHED");

	*local_size_v = "LOCAL_WORLD_SIZE";
	if ((self && strcmp(self, "1") == 0) || (getenv("RANK") && getenv("WORLD_SIZE"))) {
		e->launcher = self ? MGPU_LAUNCH_SELF : MGPU_LAUNCH_TORCHRUN;
		*rank_v = "RANK", *size_v = "WORLD_SIZE", *local_v = "LOCAL_RANK";
	} else if (getenv("SLURM_PROCID") && getenv("SLURM_NTASKS")) {
		e->launcher = MGPU_LAUNCH_SLURM;
		*rank_v = "SLURM_PROCID", *size_v = "SLURM_NTASKS", *local_v = "SLURM_LOCALID";
		*local_size_v = "SLURM_NTASKS_PER_NODE";
	} else if (getenv("OMPI_COMM_WORLD_RANK") && getenv("OMPI_COMM_WORLD_SIZE")) {
		e->launcher = MGPU_LAUNCH_OMPI;
		*rank_v = "OMPI_COMM_WORLD_RANK", *size_v = "OMPI_COMM_WORLD_SIZE";
		*local_v = "OMPI_COMM_WORLD_LOCAL_RANK";
		*local_size_v = "OMPI_COMM_WORLD_LOCAL_SIZE";
	} else {
		e->launcher = MGPU_LAUNCH_NONE;
	}
	return e->launcher;
}

/* Slurm writes SLURM_NTASKS_PER_NODE as "2" or "2(x3)"; without it the
 * tasks are spread evenly over SLURM_NNODES. */
static int slurm_local_world(struct mgpu_rank_env *e)
{
	const char *v = getenv("SLURM_NTASKS_PER_NODE");
	char *end;
	long x;
	int nodes;

	if (v) {
		x = strtol(v, &end, 10);
		if (end == v || x < 1 || x > e->world || (*end && *end != '('))
			return mgpu_err(MGPU_EINVAL, "environment: SLURM_NTASKS_PER_NODE='%s' is "
					"not a task count", v);
		e->local_world = (int)x;
		return 0;
	}
	MGPU_TRY(env_int("SLURM_NNODES", 1, e->world, 1, &nodes));
	e->local_world = e->world / nodes;
	return 0;
}

/* Node by node placement, checked: ranks of a node are consecutive. */
static int place(struct mgpu_rank_env *e)
{
	if (e->world % e->local_world != 0 || e->local_rank != e->rank % e->local_world)
		return mgpu_err(MGPU_EINVAL, "environment: rank %d is local rank %d of %d on "
				"its node, in a world of %d: ranks must be placed node by node "
				"(rank = node x ranks per node + local rank; mpirun --map-by "
				"slot, the default)", e->rank, e->local_rank, e->local_world,
				e->world);
	e->nnodes = e->world / e->local_world;
	e->node = e->rank / e->local_world;
	return 0;
}

/* Ranks of one job derive the same token from what their launcher shares. */
static void derive_token(struct mgpu_rank_env *e)
{
	static const char *const ids[] = { "TORCHELASTIC_RUN_ID", "SLURM_JOB_ID",
					   "SLURM_STEP_ID", "OMPI_MCA_ess_base_jobid",
					   "PMIX_NAMESPACE", NULL };
	uint64_t h = 0x6d677075;
	const char *v;
	size_t i, j;

	for (i = 0; ids[i]; i++)
		for (v = getenv(ids[i]), j = 0; v && v[j]; j++)
			h = mgpu_hash64(h, (uint64_t)(unsigned char)v[j] + (i << 8));
	for (j = 0; e->addr[j]; j++)
		h = mgpu_hash64(h, (uint64_t)(unsigned char)e->addr[j]);
	h = mgpu_hash64(h, ((uint64_t)e->port << 32) | (uint64_t)e->world);
	snprintf(e->token, sizeof e->token, "derived-%016llx", (unsigned long long)h);
}

int mgpu_launch_env(struct mgpu_rank_env *e)
{
	const char *rank_v, *size_v, *local_v, *local_size_v, *v;

	memset(e, 0, sizeof *e);
	e->listen_fd = -1;
	e->world = e->local_world = e->nnodes = 1;
	snprintf(e->addr, sizeof e->addr, "127.0.0.1");
	e->port = 29500;
	if (detect(e, &rank_v, &size_v, &local_v, &local_size_v) == MGPU_LAUNCH_NONE)
		return 0;
	MGPU_TRY(env_int(size_v, 1, 1 << 20, 1, &e->world));
	MGPU_TRY(env_int(rank_v, 0, e->world - 1, 0, &e->rank));
	MGPU_TRY(env_int(local_v, 0, e->world - 1, e->rank, &e->local_rank));
	if (e->launcher == MGPU_LAUNCH_SLURM)
		MGPU_TRY(slurm_local_world(e));
	else
		MGPU_TRY(env_int(local_size_v, 1, e->world, e->world, &e->local_world));
	MGPU_TRY(place(e));
	MGPU_TRY(env_int("MASTER_PORT", 0, 65535, 29500, &e->port));
	MGPU_TRY(env_int("MGPU_RDZV_FD", 0, INT_MAX, -1, &e->listen_fd));
	if ((v = getenv("MASTER_ADDR")) && *v) {
		snprintf(e->addr, sizeof e->addr, "%s", v);
		e->addr_given = 1;
	}
	if ((v = getenv("MGPU_JOB_TOKEN")) && *v) {
		if (strlen(v) > MGPU_TOKEN_LEN)
			return mgpu_err(MGPU_EINVAL, "environment: MGPU_JOB_TOKEN is longer than "
					"%d characters", MGPU_TOKEN_LEN);
		snprintf(e->token, sizeof e->token, "%s", v);
	} else {
		derive_token(e);
	}
	return 0;
}

static void set_env_int(const char *name, int v)
{
	char buf[32];
	snprintf(buf, sizeof buf, "%d", v);
	setenv(name, buf, 1);
}

/* What every rank of this launcher gets. */
struct job {
	int local, world, node;
	char addr[256];
	int port;
	char token[MGPU_TOKEN_LEN + 1];
	int lfd;               /* node 0: the rendezvous socket, for rank 0 */
	int report_w;          /* the ranks' end of the report pipe, or -1 */
	pid_t parent;
};

/* In the child: become local rank r and re-execute; never returns. */
static void exec_rank(const struct job *j, int r, char *const argv[])
{
	int rank = j->node * j->local + r;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != j->parent)
		_exit(1);
	setenv("MGPU_LAUNCHED", "1", 1);
	set_env_int("RANK", rank);
	set_env_int("WORLD_SIZE", j->world);
	set_env_int("LOCAL_RANK", r);
	set_env_int("LOCAL_WORLD_SIZE", j->local);
	set_env_int("GROUP_RANK", j->node); /* torchrun's name for the node */
	setenv("MASTER_ADDR", j->addr, 1);
	set_env_int("MASTER_PORT", j->port);
	setenv("MGPU_JOB_TOKEN", j->token, 1);
	/* One BLAS thread per rank: without this OpenBLAS starts a pool of
	 * idle threads in every rank, as many as the machine has cores. */
	setenv("OPENBLAS_NUM_THREADS", "1", 0);
	unsetenv("MGPU_RDZV_FD");
	if (rank == 0 && j->lfd >= 0) {
		int fd = dup(j->lfd); /* without FD_CLOEXEC, so it survives exec */
		set_env_int("MGPU_RDZV_FD", fd);
	}
	unsetenv("MGPU_REPORT_FD");
	if (j->report_w >= 0)
		set_env_int("MGPU_REPORT_FD", dup(j->report_w));
	execv("/proc/self/exe", argv);
	_exit(127);
}

static void describe(int status, char *why, size_t len)
{
	if (WIFSIGNALED(status))
		snprintf(why, len, "killed by signal %d (%s)", WTERMSIG(status),
			 strsignal(WTERMSIG(status)));
	else
		snprintf(why, len, "exited with status %d", WEXITSTATUS(status));
}

struct kids {
	int world, alive;           /* world: this launcher's ranks */
	int first, nnodes, node;    /* global number of local rank 0; for messages */
	int report_r;               /* the report pipe (non-blocking), or -1 */
	char line[1024];            /* a report line still arriving */
	size_t nline;
	char lead[512], other[512]; /* the leader's report, the first other one */
	pid_t pid[4096];
	int status[4096];
	int done[4096];
};

static void signal_all(struct kids *k, int sig)
{
	int r;
	for (r = 0; r < k->world; r++)
		if (!k->done[r])
			kill(k->pid[r], sig);
}

/* Reap what has ended; returns the number reaped. */
static int reap(struct kids *k, int block)
{
	int st, r, n = 0;
	pid_t p;

	while ((p = waitpid(-1, &st, block && n == 0 ? 0 : WNOHANG)) > 0) {
		for (r = 0; r < k->world; r++)
			if (k->pid[r] == p && !k->done[r]) {
				k->done[r] = 1;
				k->status[r] = st;
				k->alive--;
				n++;
			}
	}
	return n;
}

static int failed(int st)
{
	return WIFSIGNALED(st) || (WEXITSTATUS(st) != 0 && WEXITSTATUS(st) != 130);
}

static int peer_exit(int st)
{
	return WIFEXITED(st) && WEXITSTATUS(st) == MGPU_EXIT_PEER;
}

static int pipe_exit(int st)
{
	return WIFEXITED(st) && WEXITSTATUS(st) == MGPU_EXIT_PIPE;
}

/* The rank to blame: a primary failure beats one that followed a peer. */
static int blame(const struct kids *k)
{
	int r, best = -1;

	for (r = 0; r < k->world; r++) {
		if (!k->done[r] || !failed(k->status[r]))
			continue;
		/* a closed stdout explains the others' complaints too */
		if (best < 0 || peer_exit(k->status[best]) || pipe_exit(k->status[r]))
			best = r;
	}
	return best;
}

/* Only peers' complaints so far: a rank still running stopped answering. */
static int silent_rank(const struct kids *k, int best)
{
	int r;

	if (best < 0 || !peer_exit(k->status[best]))
		return -1;
	for (r = 0; r < k->world; r++)
		if (!k->done[r])
			return r;
	return -1;
}

void mgpu_launch_report(int rank, const char *why)
{
	const char *v = getenv("MGPU_REPORT_FD");
	char line[512];
	size_t n;
	int fd;

	if (!v || (fd = atoi(v)) < 3)
		return;
	snprintf(line, sizeof line - 1, "%d\t%s", rank, why);
	n = strcspn(line, "\n");
	line[n++] = '\n';
	/* one write of less than PIPE_BUF bytes: the lines of ranks never mix */
	if (write(fd, line, n) < 0)
		return; /* the launcher is gone: nobody to tell */
}

/* One report line "RANK\tWHY": the node leader's (local rank 0) is kept,
 * since it talks to the other nodes, and the first of the others. */
static void take_report(struct kids *k, const char *line)
{
	const char *tab = strchr(line, '\t');
	int rank = atoi(line);

	if (!tab)
		return;
	if (rank == k->first && !k->lead[0])
		snprintf(k->lead, sizeof k->lead, "%s", tab + 1);
	else if (rank != k->first && !k->other[0])
		snprintf(k->other, sizeof k->other, "%s", tab + 1);
}

/* Collect the lines the ranks wrote on the report pipe. */
static void read_reports(struct kids *k)
{
	char c;

	if (k->report_r < 0)
		return;
	while (read(k->report_r, &c, 1) == 1) {
		if (c != '\n' && k->nline < sizeof k->line - 1) {
			k->line[k->nline++] = c;
			continue;
		}
		k->line[k->nline] = '\0';
		if (c == '\n') {
			take_report(k, k->line);
			k->nline = 0;
		}
	}
}

/* The best report in res->why, or 0 when none came. */
static int best_report(struct kids *k, struct mgpu_launch_result *res)
{
	read_reports(k);
	if (!k->lead[0] && !k->other[0])
		return 0;
	snprintf(res->why, sizeof res->why, "%s", k->lead[0] ? k->lead : k->other);
	return 1;
}

static void nap_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

/* Stop the survivors: SIGTERM, then SIGKILL after a grace period. */
static void stop_all(struct kids *k)
{
	int i;

	signal_all(k, SIGTERM);
	for (i = 0; i < 100 && k->alive > 0; i++) {
		reap(k, 0);
		nap_ms(20);
	}
	signal_all(k, SIGKILL);
	while (k->alive > 0 && reap(k, 1) > 0)
		;
}

static void supervise(struct kids *k, volatile sig_atomic_t *stop,
		      struct mgpu_launch_result *res)
{
	int forwarded = 0, r, i;

	while (k->alive > 0) {
		if (stop && *stop && !forwarded) {
			signal_all(k, SIGINT);
			forwarded = 1;
		}
		read_reports(k);
		if (reap(k, 0) == 0) {
			nap_ms(10);
			continue;
		}
		if (blame(k) >= 0) {
			/* let near-simultaneous exits arrive, then blame the first cause;
			 * across nodes give the leader, whose report names the other
			 * node, up to 2 s to tell */
			for (i = 0; k->alive > 0 && (i < 20 || (k->nnodes > 1 && !k->done[0] &&
							       i < 200)); i++, nap_ms(10))
				reap(k, 0);
			break;
		}
	}
	r = blame(k);
	if (r >= 0) {
		res->status = 1;
		res->quiet = WIFEXITED(k->status[r]) && WEXITSTATUS(k->status[r]) == MGPU_EXIT_PIPE;
		res->failed_rank = k->first + r;
		describe(k->status[r], res->why, sizeof res->why);
		if (k->nnodes > 1 && peer_exit(k->status[r]) && best_report(k, res)) {
			/* this node only followed: what its first rank to stop saw
			 * names the node and rank that failed */
			res->elsewhere = 1;
		} else if ((i = silent_rank(k, r)) >= 0) {
			res->failed_rank = k->first + i;
			snprintf(res->why, sizeof res->why, "stopped answering (rank %d gave up "
				 "waiting for it)", k->first + r);
		} else if (k->nnodes > 1 && peer_exit(k->status[r])) {
			snprintf(res->why, sizeof res->why, "stopped after a rank on another node "
				 "failed or stopped answering (its error above)");
		}
		if (k->nnodes > 1 && !res->elsewhere) {
			size_t len = strlen(res->why);
			snprintf(res->why + len, sizeof res->why - len, " on node %d", k->node);
		}
		stop_all(k);
		return;
	}
	for (r = 0; r < k->world; r++)
		if (WEXITSTATUS(k->status[r]) == 130)
			res->status = 130;
}

/* The ranks have what they need of j: the launcher keeps only the
 * report pipe's read end. */
static void close_job(struct job *j)
{
	if (j->lfd >= 0)
		close(j->lfd);
	if (j->report_w >= 0)
		close(j->report_w);
	j->lfd = j->report_w = -1;
}

/* Fork j's local ranks and supervise them. */
static int run(struct job *j, volatile sig_atomic_t *stop, struct mgpu_launch_result *res,
	       char *const argv[])
{
	static struct kids k;
	int r, pfd[2];

	memset(&k, 0, sizeof k);
	k.world = j->local;
	k.first = j->node * j->local;
	k.nnodes = j->world / j->local;
	k.node = j->node;
	k.report_r = j->report_w = -1;
	/* without a report pipe the ranks' own messages still say it all */
	if (pipe2(pfd, O_CLOEXEC) == 0) {
		k.report_r = pfd[0];
		j->report_w = pfd[1];
		fcntl(k.report_r, F_SETFL, O_NONBLOCK);
	}
	fflush(NULL);
	for (r = 0; r < j->local; r++) {
		k.pid[r] = fork();
		if (k.pid[r] == 0)
			exec_rank(j, r, argv);
		if (k.pid[r] < 0) {
			mgpu_err_errno(MGPU_EIO, "launch: cannot fork rank %d", k.first + r);
			k.world = r;
			close_job(j);
			stop_all(&k);
			if (k.report_r >= 0)
				close(k.report_r);
			return MGPU_EIO;
		}
		k.alive++;
	}
	close_job(j);
	supervise(&k, stop, res);
	if (k.report_r >= 0)
		close(k.report_r);
	return 0;
}

int mgpu_launch_run(int world, char *const argv[], volatile sig_atomic_t *stop,
		    struct mgpu_launch_result *res)
{
	struct job j;

	memset(res, 0, sizeof *res);
	res->failed_rank = -1;
	if (world < 1 || world > 4096)
		return mgpu_err(MGPU_EINVAL, "launch: %d ranks", world);
	memset(&j, 0, sizeof j);
	j.local = j.world = world;
	j.parent = getpid();
	snprintf(j.addr, sizeof j.addr, "127.0.0.1");
	MGPU_TRY(mgpu_rdzv_new_token(j.token));
	MGPU_TRY(mgpu_rdzv_listen(j.addr, &j.port, &j.lfd));
	return run(&j, stop, res, argv);
}

int mgpu_launch_nodes_env(struct mgpu_launch_nodes *n, int nnodes, int node_rank, int local)
{
	struct mgpu_rank_env e;
	const char *v;

	memset(n, 0, sizeof *n);
	n->nnodes = nnodes;
	n->node_rank = node_rank;
	if (nnodes < 1 || node_rank < 0 || node_rank >= nnodes)
		return mgpu_err(MGPU_EINVAL, "--node-rank %d is not in [0, %d) (--nnodes %d)",
				node_rank, nnodes, nnodes);
	if (!(v = getenv("MASTER_ADDR")) || !*v)
		return mgpu_err(MGPU_EINVAL, "--nnodes %d needs MASTER_ADDR, the address of node "
				"0, in the environment of every node", nnodes);
	if (strlen(v) >= sizeof n->addr)
		return mgpu_err(MGPU_EINVAL, "environment: MASTER_ADDR is too long");
	snprintf(n->addr, sizeof n->addr, "%s", v);
	MGPU_TRY(env_int("MASTER_PORT", 1, 65535, 29500, &n->port));
	if ((v = getenv("MGPU_JOB_TOKEN")) && *v) {
		if (strlen(v) > MGPU_TOKEN_LEN)
			return mgpu_err(MGPU_EINVAL, "environment: MGPU_JOB_TOKEN is longer than "
					"%d characters", MGPU_TOKEN_LEN);
		snprintf(n->token, sizeof n->token, "%s", v);
		return 0;
	}
	memset(&e, 0, sizeof e);
	snprintf(e.addr, sizeof e.addr, "%s", n->addr);
	e.port = n->port;
	e.world = nnodes * local;
	derive_token(&e);
	snprintf(n->token, sizeof n->token, "%s", e.token);
	return 0;
}

int mgpu_launch_run_nodes(int local, const struct mgpu_launch_nodes *n, char *const argv[],
			  volatile sig_atomic_t *stop, struct mgpu_launch_result *res)
{
	struct job j;

	memset(res, 0, sizeof *res);
	res->failed_rank = -1;
	if (local < 1 || local > 4096 || (long)local * n->nnodes > 1 << 20)
		return mgpu_err(MGPU_EINVAL, "launch: %d ranks on each of %d nodes", local,
				n->nnodes);
	memset(&j, 0, sizeof j);
	j.local = local;
	j.world = local * n->nnodes;
	j.node = n->node_rank;
	j.port = n->port;
	j.lfd = -1;
	j.parent = getpid();
	snprintf(j.addr, sizeof j.addr, "%s", n->addr);
	snprintf(j.token, sizeof j.token, "%s", n->token);
	/* node 0 takes the rendezvous port before any rank starts: a port in
	 * use fails here, once, with its number */
	if (j.node == 0)
		MGPU_TRY(mgpu_rdzv_listen("0.0.0.0", &j.port, &j.lfd));
	return run(&j, stop, res, argv);
}
