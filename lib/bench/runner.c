/*
 * runner.c - running the rows of `mgpu-bench train` (see runner.h): here,
 * over namespace hosts with a launcher per node, or through mpirun; with
 * NVML sampling for GPU rows.
 */
#include "bench/runner.h"

#include <stdint.h> /* uintptr_t */
#include <stdio.h>  /* snprintf */
#include <stdlib.h> /* calloc, free */
#include <string.h> /* memset, strcmp */
#include <unistd.h> /* getpid */

#include "bench/gpumon.h" /* mgpu_gpumon_start */
#include "bench/lm.h"     /* mgpu_bench_lm_fill, mgpu_bench_peak_* */
#include "core/err.h"     /* mgpu_err, mgpu_errmsg, MGPU_TRY */

/* NVML's utilisation covers the last 1/6 to 1 s; sampling faster only
 * repeats it, slower misses the short runs of a sweep. */
#define GPUMON_INTERVAL_MS 100
/* How long the other nodes may take to end after node 0 did. */
#define NODES_GRACE_MS 30000

int mgpu_bench_runner_hosts(struct mgpu_bench_runner *rn, const struct mgpu_bench_trow *rows,
			    int n)
{
	const struct mgpu_bench_trow *shape = NULL;
	char why[512];
	int i, most = 1, rc;

	for (i = 0; i < n; i++)
		if (rows[i].nodes > most) {
			most = rows[i].nodes;
			shape = shape ? shape : &rows[i];
		}
	if (most == 1)
		return 0;
	for (i = 0; i < n; i++) /* before any run: not in the middle of the sweep */
		if (rows[i].nodes > 1 && strcmp(rows[i].sync, "mpi") == 0 && !rn->mpirun[0] &&
		    (rc = mgpu_netns_which("mpirun", rn->mpirun, sizeof rn->mpirun)) < 0) {
			snprintf(why, sizeof why, "%s", mgpu_errmsg());
			return mgpu_err(rc, "--sync-backends mpi: %s (Open MPI's openmpi-bin)", why);
		}
	if ((rc = mgpu_netns_up(&rn->hosts, most)) < 0)
		return mgpu_err_prefix(rc, "--nodes %d runs each node in a network namespace: ",
				       most);
	rn->hosts_made = 1;
	if ((rc = mgpu_netns_shape(&rn->hosts, shape->link_rate[0] ? shape->link_rate : NULL,
				   shape->link_delay_ms)) < 0)
		return mgpu_err_prefix(rc, "%s: ",
				       shape->link_delay_ms > 0 ? "--link-delay" : "--link-rate");
	return 0;
}

void mgpu_bench_runner_close(struct mgpu_bench_runner *rn)
{
	if (rn->hosts_made)
		mgpu_netns_down(&rn->hosts);
	rn->hosts_made = 0;
}

/* argv with two more words (and the NULL) into out. */
static int with2(char **args, const char *a, const char *b, char **out, int max)
{
	int n = 0;

	for (; args[n]; n++) {
		if (n + 3 >= max)
			return mgpu_err(MGPU_EINVAL, "mgpu-train command too long");
		out[n] = args[n];
	}
	out[n++] = (char *)(uintptr_t)a;
	out[n++] = (char *)(uintptr_t)b;
	out[n] = NULL;
	return 0;
}

/* Did a run end well? */
static int run_ok(const struct mgpu_spawn_result *res)
{
	return res->exited && res->status == 0 && !res->timed_out;
}

/* One launcher per node on hosts 1..nodes; node 0's output in res, and a
 * failure of another node when node 0 itself did not fail. Whatever goes
 * wrong, no launcher outlives the call: when node 0 cannot start, fails
 * or is stopped, the others have nobody to meet and are stopped (SIGTERM)
 * and reaped at once. */
static int run_launchers(struct mgpu_bench_runner *rn, const struct mgpu_bench_trow *r,
			 char **args, struct mgpu_spawn_result *res)
{
	struct mgpu_spawn_result other;
	char addr[32], envs[3][96], *env[4], ranks[MGPU_NETNS_MAX_HOSTS][12], *argv[300];
	struct mgpu_spawn_bg *bg = rn->bg + 1;
	int k, rc = 0, wrc, nbg = r->nodes - 1;

	mgpu_netns_addr(1, addr, sizeof addr);
	snprintf(envs[0], sizeof envs[0], "MASTER_ADDR=%s", addr);
	snprintf(envs[1], sizeof envs[1], "MASTER_PORT=29500");
	/* a launcher left over from an earlier run can never join this one */
	snprintf(envs[2], sizeof envs[2], "MGPU_JOB_TOKEN=mgpu-bench-%d-%u", (int)getpid(),
		 ++rn->job);
	env[0] = envs[0], env[1] = envs[1], env[2] = envs[2], env[3] = NULL;
	for (k = 0; k < nbg; k++)
		bg[k].pid = 0, bg[k].err_fd = -1;
	for (k = r->nodes - 1; k >= 0 && rc == 0; k--) {
		snprintf(ranks[k], sizeof ranks[k], "%d", k);
		rc = with2(args, "--node-rank", ranks[k], argv, 300);
		if (rc == 0)
			rc = mgpu_netns_wrap(&rn->hosts, k + 1, env, argv, &rn->cmd[k]);
		if (rc == 0 && k > 0)
			rc = mgpu_spawn_bg_start(rn->cmd[k].argv, &rn->bg[k]);
	}
	if (rc == 0)
		rc = mgpu_spawn_capture(rn->cmd[0].argv, 1000 * rn->timeout_s, rn->stop, res);
	if (rc < 0 || !run_ok(res) || (rn->stop && *rn->stop)) {
		mgpu_spawn_bg_stop(bg, nbg);
		return rc;
	}
	for (k = 0; k < nbg; k++) {
		if (rn->stop && *rn->stop) { /* while waiting for one: the rest at once */
			mgpu_spawn_bg_stop(bg + k, nbg - k);
			break;
		}
		if ((wrc = mgpu_spawn_bg_wait(&bg[k], NODES_GRACE_MS, rn->stop, &other)) < 0) {
			mgpu_spawn_bg_stop(bg + k, nbg - k);
			free(res->out);
			return wrc;
		}
		free(other.out);
		if (run_ok(res) && !run_ok(&other)) {
			other.out = res->out; /* node 0's metrics go with the verdict */
			*res = other;
		}
	}
	return 0;
}

/* mpirun on host 1, onto hosts 1..nodes through the namespaces' remote
 * shell; every rank gets OPENBLAS_NUM_THREADS=1 as the own launcher's do. */
static int run_mpirun(struct mgpu_bench_runner *rn, const struct mgpu_bench_trow *r,
		      char **args, struct mgpu_spawn_result *res)
{
	char list[512], np[16], pfx[64], addr[32], *argv[300];
	const char *rsh;
	char *env[] = { pfx, (char *)(uintptr_t)"OMPI_ALLOW_RUN_AS_ROOT=1",
			(char *)(uintptr_t)"OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1", NULL };
	int per = r->devices / r->nodes, k, n = 0;
	size_t len = 0;

	MGPU_TRY(mgpu_netns_rsh(&rn->hosts, &rsh));
	snprintf(pfx, sizeof pfx, "NETNS_PFX=%s", rn->hosts.prefix);
	list[0] = '\0';
	for (k = 1; k <= r->nodes; k++) {
		mgpu_netns_addr(k, addr, sizeof addr);
		len += (size_t)snprintf(list + len, sizeof list - len, "%s%s:%d", k > 1 ? "," : "",
					addr, per);
	}
	snprintf(np, sizeof np, "%d", r->devices);
	{
		const char *head[] = { rn->mpirun, "--host", list, "-np", np, "--bind-to", "none",
				       "--mca", "plm_rsh_agent", rsh, "-x", "NETNS_PFX",
				       "-x", "OPENBLAS_NUM_THREADS=1",
				       "--mca", "btl_tcp_if_include", mgpu_netns_net(),
				       "--mca", "oob_tcp_if_include", mgpu_netns_net(), NULL };
		for (k = 0; head[k]; k++)
			argv[n++] = (char *)(uintptr_t)head[k];
	}
	for (k = 0; args[k] && n < 299; k++)
		argv[n++] = args[k];
	argv[n] = NULL;
	MGPU_TRY(mgpu_netns_wrap(&rn->hosts, 1, env, argv, &rn->cmd[0]));
	return mgpu_spawn_capture(rn->cmd[0].argv, 1000 * rn->timeout_s, rn->stop, res);
}

/* One run of row r: here, or over the nodes. */
static int run_row(struct mgpu_bench_runner *rn, const struct mgpu_bench_trow *r, char **args,
		   struct mgpu_spawn_result *res)
{
	if (r->nodes <= 1)
		return mgpu_spawn_capture(args, 1000 * rn->timeout_s, rn->stop, res);
	return strcmp(r->sync, "mpi") == 0 ? run_mpirun(rn, r, args, res) :
					     run_launchers(rn, r, args, res);
}

static void run_failed(struct mgpu_bench_trow *r, const struct mgpu_spawn_result *res,
		       int timeout_s)
{
	char line[400];

	mgpu_spawn_err_line(res, line, sizeof line);
	if (res->timed_out)
		snprintf(r->error, sizeof r->error, "timed out after %d s", timeout_s);
	else if (line[0])
		snprintf(r->error, sizeof r->error, "%s", line);
	else
		snprintf(r->error, sizeof r->error, "mgpu-train %s %d", res->exited ?
			 "exited with status" : "was killed by signal", res->status);
}

/* This machine's GPUs, listed once (none when they cannot be). */
static const struct mgpu_gpu_list *gpus(struct mgpu_bench_runner *rn)
{
	if (!rn->gpus_listed && mgpu_gpu_enumerate(&rn->gpus) < 0)
		rn->gpus.nvisible = 0;
	rn->gpus_listed = 1;
	return &rn->gpus;
}

/* NVML sampling of the GPUs a run uses, as `nvidia-smi dmon` would. */
struct sampler {
	struct mgpu_gpu_nvml_mon nv;
	struct mgpu_gpumon mon;
	int on;
};

/* Start sampling CUDA ordinals 0..n-1 (what `--gpus 0,..,n-1` uses);
 * when that cannot be, s->on stays 0 and why says so. */
static void sampler_start(struct mgpu_bench_runner *rn, struct sampler *s, int n, char *why,
			  size_t whylen)
{
	const struct mgpu_gpu_list *list = gpus(rn);
	const char *uuids[MGPU_GPU_MAX];
	int i;

	memset(s, 0, sizeof *s);
	if (n > list->nvisible || n > MGPU_GPU_MAX) {
		snprintf(why, whylen, "%d GPU%s visible to mgpu-bench", list->nvisible,
			 list->nvisible == 1 ? "" : "s");
		return;
	}
	for (i = 0; i < n; i++)
		uuids[i] = list->gpu[i].uuid;
	if (mgpu_gpu_nvml_open(&s->nv, uuids, n, why, whylen) < 0)
		return;
	if (mgpu_gpumon_start(&s->mon, n, GPUMON_INTERVAL_MS, mgpu_gpumon_read_nvml, &s->nv) < 0) {
		snprintf(why, whylen, "%s", mgpu_errmsg());
		mgpu_gpu_nvml_close(&s->nv);
		return;
	}
	s->on = 1;
}

/* Stop sampling and keep the figures in run (after its output is parsed). */
static void sampler_stop(struct sampler *s, struct mgpu_bench_run *run)
{
	int d;

	if (!s->on)
		return;
	mgpu_gpumon_stop(&s->mon);
	mgpu_gpu_nvml_close(&s->nv);
	run->ngpumon = s->mon.ndev;
	for (d = 0; d < s->mon.ndev; d++) {
		run->gpu_util_pct[d] = mgpu_gpumon_acc_util(&s->mon.acc[d]);
		run->gpu_mem_used_bytes[d] = mgpu_gpumon_acc_mem(&s->mon.acc[d]);
	}
	s->on = 0;
}

/* The peak of one device of r's kind: a CPU core of this host, or GPU 0
 * (a sweep uses GPUs 0..N-1) by its name, in the workload's dtype. */
static void device_peak(struct mgpu_bench_runner *rn, const struct mgpu_bench_trow *r, int bf16,
			struct mgpu_bench_peak *pk)
{
	const struct mgpu_gpu_list *list;

	if (strcmp(r->kind, "gpu") != 0) {
		mgpu_bench_peak_cpu_host(pk);
		return;
	}
	list = gpus(rn);
	if (list->nvisible < 1) {
		pk->flops = 0;
		snprintf(pk->how, sizeof pk->how, "no GPU visible to mgpu-bench");
		return;
	}
	mgpu_bench_peak_gpu(list->gpu[0].name, bf16, pk);
}

/* r's tokens/s, MFU and memory estimate when its command trains a gpt. */
static void fill_lm(struct mgpu_bench_runner *rn, struct mgpu_bench_trow *r, char *const *args)
{
	struct mgpu_bench_workload w;
	struct mgpu_bench_peak pk;

	memset(&w, 0, sizeof w);
	if (mgpu_bench_workload_parse((const char *const *)args, &w) < 0) /* mgpu-train says why */
		memset(&w, 0, sizeof w); /* no language model: no tokens/s */
	memset(&pk, 0, sizeof pk);
	if (mgpu_spec_is_lm(&w.spec))
		device_peak(rn, r, w.bf16, &pk);
	mgpu_bench_lm_fill(r, &w, &pk);
}

int mgpu_bench_measure(struct mgpu_bench_runner *rn, struct mgpu_bench_trow *r, char **args,
		       int repeats, struct mgpu_bench_said *said)
{
	struct mgpu_bench_run *runs;
	struct mgpu_spawn_result res;
	struct sampler smp;
	char why[200] = "";
	const char *dtype;
	int k, rc = 0, gpu = strcmp(r->kind, "gpu") == 0, unsampled = 0, asked = r->warmup_steps;

	memset(said, 0, sizeof *said);
	if (repeats > MGPU_BENCH_MAX_REPEAT)
		repeats = MGPU_BENCH_MAX_REPEAT;
	if (!rn->blas_core[0]) {
		snprintf(rn->blas_core, sizeof rn->blas_core, "%s", mgpu_gpu_blas_core());
		rn->blas_threads = mgpu_gpu_blas_rank_threads();
	}
	snprintf(r->blas_core, sizeof r->blas_core, "%s", rn->blas_core);
	r->blas_threads = rn->blas_threads;
	/* the dtype the command asks for (args may hold r->dtype itself) */
	dtype = mgpu_bench_argv_dtype((const char *const *)args);
	if (dtype != r->dtype)
		snprintf(r->dtype, sizeof r->dtype, "%s", dtype ? dtype : "fp32");
	MGPU_TRY(mgpu_bench_quote_argv(args, r->command, sizeof r->command));
	runs = calloc((size_t)(repeats > 0 ? repeats : 1), sizeof *runs);
	if (!runs)
		return mgpu_err(MGPU_ENOMEM, "out of memory for %d runs", repeats);
	for (k = 0; k < repeats && !(rn->stop && *rn->stop); k++) {
		if (gpu) {
			sampler_start(rn, &smp, r->devices, why, sizeof why);
			unsampled |= !smp.on;
		}
		if ((rc = run_row(rn, r, args, &res)) < 0) {
			if (gpu)
				sampler_stop(&smp, &runs[k]);
			goto out;
		}
		if (!run_ok(&res))
			run_failed(r, &res, rn->timeout_s);
		else if (mgpu_bench_run_parse(res.out, res.out_len, r->warmup_steps,
					      "mgpu-train output", &runs[k]) < 0)
			snprintf(r->error, sizeof r->error, "%s", mgpu_errmsg());
		if (gpu)
			sampler_stop(&smp, &runs[k]);
		free(res.out);
		if (r->error[0])
			break;
		if (rn->on_run)
			rn->on_run(rn->ctx, r, k + 1, repeats, runs[k].samples_per_s);
	}
	/* said only of runs that worked: a failed row says enough */
	if (unsampled && !r->error[0])
		snprintf(said->unsampled, sizeof said->unsampled, "%s", why);
	mgpu_bench_trow_fold(r, runs, r->error[0] ? 0 : k);
	/* small data: the warm-up was lowered to fit the run */
	if (!r->error[0] && k > 0 && r->warmup_steps < asked)
		said->warmup_asked = asked;
	fill_lm(rn, r, args);
	if (!r->mode[0] && !r->error[0] && k > 0)
		snprintf(r->mode, sizeof r->mode, "%s", runs[k - 1].mode);
out:
	free(runs);
	return rc < 0 ? rc : 0;
}
