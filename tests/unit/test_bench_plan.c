/*
 * test_bench_plan.c - the sweep of mgpu-bench train (lib/bench/plan.h):
 * which configurations a set of lists gives and in which order (dp left
 * out over nodes, mpi on one node), a sweep larger than the table, each
 * row's mgpu-train command (CPU ranks, GPUs per node, nodes, mode, sync
 * backend, dtype, workload and extra words), and a saved command run
 * again with this mgpu-train.
 */
#include <stdio.h>  /* snprintf */
#include <string.h> /* strcmp, strcat, strstr */

#include "bench/plan.h" /* mgpu_bench_plan_rows, mgpu_bench_plan_argv */
#include "core/err.h"   /* mgpu_errmsg */
#include "t.h"          /* T_CHECK */

static const char *const workload[] = { "--epochs", "1", "--max-steps", "200" };
static char lr[] = "--lr", lr_v[] = "0.1";
static char *extra[] = { lr, lr_v };

static void plan_init(struct mgpu_bench_plan *p, const int *cpu, int ncpu, const int *nodes,
		      int nnodes)
{
	memset(p, 0, sizeof *p);
	p->train_bin = "/x/mgpu-train";
	p->workload = workload, p->nworkload = 4;
	p->extra = extra, p->nextra = 2;
	p->cpu = cpu, p->ncpu = ncpu;
	p->nodes = nodes, p->nnodes = nnodes;
	p->modes[0] = "ddp", p->modes[1] = "dp", p->nmodes = 2;
	p->syncs[0] = "auto", p->syncs[1] = "mpi", p->nsyncs = 2;
}

/* The words of c after mgpu-train's path, space-separated, in buf. */
static const char *words(const struct mgpu_bench_argv *c, char *buf, size_t cap)
{
	int i;

	buf[0] = '\0';
	for (i = 1; i < c->n && strlen(buf) + strlen(c->args[i]) + 2 < cap; i++) {
		strcat(buf, i > 1 ? " " : "");
		strcat(buf, c->args[i]);
	}
	return buf;
}

static void test_rows(void)
{
	static struct mgpu_bench_trow rows[16];
	static const char *const want[] = {
		"1 CPU rank", "2 nodes x 1 CPU rank (DDP)", "2 nodes x 1 CPU rank (DDP, mpi)",
		"2 CPU ranks (DDP)", "2 CPU ranks (DP)", "2 nodes x 2 CPU ranks (DDP)",
		"2 nodes x 2 CPU ranks (DDP, mpi)",
	};
	const int cpu[] = { 1, 2 }, nodes[] = { 1, 2 };
	struct mgpu_bench_plan p;
	int n = -1, i;

	plan_init(&p, cpu, 2, nodes, 2);
	T_OK(mgpu_bench_plan_rows(&p, rows, 16, &n));
	T_CHECK(n == 7, "%d rows", n);
	for (i = 0; i < n && i < 7; i++)
		T_CHECK(strcmp(rows[i].config, want[i]) == 0, "row %d: '%s', want '%s'", i,
			rows[i].config, want[i]);
	/* auto is no backend of the row; one node has no link */
	T_CHECK(rows[3].sync[0] == '\0' && strcmp(rows[2].sync, "mpi") == 0, "syncs '%s' '%s'",
		rows[3].sync, rows[2].sync);
	T_CHECK(rows[6].devices == 4 && rows[6].nodes == 2 && !rows[0].mode[0], "row 6: %d, %d",
		rows[6].devices, rows[6].nodes);
	T_FAILS(mgpu_bench_plan_rows(&p, rows, 6, &n), MGPU_EINVAL, "more than 6 configurations");
}

static void test_dtype_rows(void)
{
	static struct mgpu_bench_trow rows[8];
	const int cpu[] = { 2 }, nodes[] = { 1 };
	struct mgpu_bench_plan p;
	int n = -1;

	plan_init(&p, cpu, 1, nodes, 1);
	p.nmodes = 1, p.nsyncs = 1;
	p.dtypes[0] = "fp32", p.dtypes[1] = "bf16", p.ndtypes = 2;
	T_OK(mgpu_bench_plan_rows(&p, rows, 8, &n));
	T_CHECK(n == 2 && strcmp(rows[0].config, "2 CPU ranks (DDP, fp32)") == 0 &&
		strcmp(rows[1].dtype, "bf16") == 0, "%d rows: '%s'", n, rows[0].config);
}

static void test_argv(void)
{
	static struct mgpu_bench_trow r;
	struct mgpu_bench_argv c;
	struct mgpu_bench_plan p;
	const int cpu[] = { 1 }, nodes[] = { 1 };
	char buf[512];

	plan_init(&p, cpu, 1, nodes, 1);
	snprintf(r.kind, sizeof r.kind, "cpu");
	r.devices = 1, r.nodes = 1;
	T_OK(mgpu_bench_plan_argv(&p, &r, &c));
	T_CHECK(strcmp(c.args[0], "/x/mgpu-train") == 0 && c.args[c.n] == NULL, "%s", c.args[0]);
	T_CHECK(strcmp(words(&c, buf, sizeof buf), "-q --json --log-every 1 --cpu-ranks 1 "
		       "--epochs 1 --max-steps 200 --lr 0.1") == 0, "'%s'", buf);
	/* 4 GPUs over 2 nodes in bf16: two per node, each node told the count */
	snprintf(r.kind, sizeof r.kind, "gpu");
	snprintf(r.mode, sizeof r.mode, "ddp");
	snprintf(r.sync, sizeof r.sync, "nccl");
	snprintf(r.dtype, sizeof r.dtype, "bf16");
	r.devices = 4, r.nodes = 2;
	T_OK(mgpu_bench_plan_argv(&p, &r, &c));
	T_CHECK(strcmp(words(&c, buf, sizeof buf), "-q --json --log-every 1 --gpus 0,1 --nnodes 2 "
		       "--mode ddp --sync-backend nccl --epochs 1 --max-steps 200 --dtype bf16 "
		       "--lr 0.1") == 0, "'%s'", buf);
	/* mpirun places the ranks of mpi itself */
	snprintf(r.kind, sizeof r.kind, "cpu");
	snprintf(r.sync, sizeof r.sync, "mpi");
	r.dtype[0] = '\0';
	T_OK(mgpu_bench_plan_argv(&p, &r, &c));
	T_CHECK(strstr(words(&c, buf, sizeof buf), "--cpu-ranks 2 --mode ddp --sync-backend mpi "
			 "--epochs") && !strstr(buf, "--nnodes"), "'%s'", buf);
}

static void test_rerun_argv(void)
{
	static struct mgpu_bench_trow old;
	struct mgpu_bench_argv c;
	char buf[512];

	snprintf(old.config, sizeof old.config, "1 CPU rank");
	snprintf(old.command, sizeof old.command, "/old/mgpu-train -q --model 'mlp:64-4'");
	T_OK(mgpu_bench_plan_rerun_argv("/new/mgpu-train", &old, "s.tsv", &c));
	T_CHECK(strcmp(c.args[0], "/new/mgpu-train") == 0 &&
		strcmp(words(&c, buf, sizeof buf), "-q --model mlp:64-4") == 0, "'%s'", buf);
	snprintf(old.command, sizeof old.command, "/old/mgpu-train");
	T_FAILS(mgpu_bench_plan_rerun_argv("/new/mgpu-train", &old, "s.tsv", &c), MGPU_EFORMAT,
		"'s.tsv': 1 CPU rank: bad command '/old/mgpu-train'");
}

int main(void)
{
	T_RUN(test_rows);
	T_RUN(test_dtype_rows);
	T_RUN(test_argv);
	T_RUN(test_rerun_argv);
	return T_DONE();
}
