/*
 * plan.c - the rows of a `mgpu-bench train` sweep and the mgpu-train
 * command of each (see plan.h).
 */
#include "bench/plan.h"

#include <stdint.h> /* uintptr_t */
#include <stdio.h>  /* snprintf */
#include <string.h> /* memset, strcmp */

#include "core/err.h" /* mgpu_err */

/* Row r: kind, per devices on each of nodes, mode m, sync backend s and
 * (with dtypes) dtype t, labelled. */
static void plan_one(const struct mgpu_bench_plan *p, struct mgpu_bench_trow *r, int kind,
		     int per, int nodes, int m, int s, int t)
{
	int devices = per * nodes;

	memset(r, 0, sizeof *r);
	snprintf(r->kind, sizeof r->kind, "%s", kind ? "gpu" : "cpu");
	r->devices = devices;
	r->nodes = nodes;
	if (nodes > 1) {
		snprintf(r->link_rate, sizeof r->link_rate, "%s", p->link_rate ? p->link_rate : "");
		r->link_delay_ms = p->link_delay_ms;
	}
	if (devices > 1) {
		snprintf(r->mode, sizeof r->mode, "%s", p->modes[m]);
		/* auto is what mgpu-train does unasked: the row names no backend */
		snprintf(r->sync, sizeof r->sync, "%s",
			 strcmp(p->syncs[s], "auto") != 0 ? p->syncs[s] : "");
	}
	if (p->ndtypes)
		snprintf(r->dtype, sizeof r->dtype, "%s", p->dtypes[t]);
	mgpu_bench_label(r, (p->nsyncs > 1 ? MGPU_BENCH_LABEL_SYNC : 0) |
			 (p->ndtypes ? MGPU_BENCH_LABEL_DTYPE : 0));
}

/* The rows of one configuration, one per dtype (one row without dtypes),
 * unless the combination does not exist. */
static int plan_row(const struct mgpu_bench_plan *p, struct mgpu_bench_trow *rows, int max,
		    int *n, int kind, int per, int nodes, int m, int s)
{
	int t;

	if (per * nodes > 1 && ((nodes > 1 && strcmp(p->modes[m], "dp") == 0) ||
				(nodes == 1 && strcmp(p->syncs[s], "mpi") == 0)))
		return 0;
	for (t = 0; t < (p->ndtypes ? p->ndtypes : 1); t++) {
		if (*n >= max)
			return mgpu_err(MGPU_EINVAL, "more than %d configurations", max);
		plan_one(p, &rows[(*n)++], kind, per, nodes, m, s, t);
	}
	return 0;
}

int mgpu_bench_plan_rows(const struct mgpu_bench_plan *p, struct mgpu_bench_trow *rows, int max,
			 int *n)
{
	int kind, i, k, m, s, d;

	*n = 0;
	for (kind = 0; kind < 2; kind++) {
		const int *list = kind ? p->gpu : p->cpu;
		int nl = kind ? p->ngpu : p->ncpu;
		for (i = 0; i < nl; i++)
			for (k = 0; k < p->nnodes; k++) {
				d = list[i] * p->nodes[k];
				for (m = 0; m < (d > 1 ? p->nmodes : 1); m++)
					for (s = 0; s < (d > 1 ? p->nsyncs : 1); s++)
						MGPU_TRY(plan_row(p, rows, max, n, kind, list[i],
								  p->nodes[k], m, s));
			}
	}
	return 0;
}

static int add(struct mgpu_bench_argv *c, const char *w)
{
	if (c->n >= 254)
		return mgpu_err(MGPU_EINVAL, "too many mgpu-train options");
	c->args[c->n++] = (char *)(uintptr_t)w;
	c->args[c->n] = NULL;
	return 0;
}

int mgpu_bench_plan_argv(const struct mgpu_bench_plan *p, const struct mgpu_bench_trow *r,
			 struct mgpu_bench_argv *c)
{
	int k = 0, i, gpu = strcmp(r->kind, "gpu") == 0;
	int per = r->devices / (r->nodes > 1 ? r->nodes : 1);
	size_t len = 0;

	c->n = 0;
	MGPU_TRY(add(c, p->train_bin));
	MGPU_TRY(add(c, "-q"));
	MGPU_TRY(add(c, "--json"));
	MGPU_TRY(add(c, "--log-every"));
	MGPU_TRY(add(c, "1"));
	MGPU_TRY(add(c, gpu ? "--gpus" : "--cpu-ranks"));
	if (gpu) {
		for (i = 0; i < per && len + 4 < sizeof c->store[k]; i++)
			len += (size_t)snprintf(c->store[k] + len, sizeof c->store[k] - len, "%s%d",
						i ? "," : "", i);
	} else {
		snprintf(c->store[k], sizeof c->store[k], "%d", per);
	}
	MGPU_TRY(add(c, c->store[k++]));
	if (r->nodes > 1 && strcmp(r->sync, "mpi") != 0) { /* mpirun places its ranks */
		MGPU_TRY(add(c, "--nnodes"));
		snprintf(c->store[k], sizeof c->store[k], "%d", r->nodes);
		MGPU_TRY(add(c, c->store[k++]));
	}
	if (r->devices > 1) {
		MGPU_TRY(add(c, "--mode"));
		MGPU_TRY(add(c, r->mode));
		if (r->sync[0] && strcmp(r->sync, "auto") != 0) {
			MGPU_TRY(add(c, "--sync-backend"));
			MGPU_TRY(add(c, r->sync));
		}
	}
	for (i = 0; i < p->nworkload; i++)
		MGPU_TRY(add(c, p->workload[i]));
	if (r->dtype[0]) { /* a sweep over dtypes: never in extra too (the tool refuses that) */
		MGPU_TRY(add(c, "--dtype"));
		MGPU_TRY(add(c, r->dtype));
	}
	for (i = 0; i < p->nextra; i++)
		MGPU_TRY(add(c, p->extra[i]));
	return 0;
}

int mgpu_bench_plan_rerun_argv(const char *train_bin, const struct mgpu_bench_trow *old,
			       const char *name, struct mgpu_bench_argv *c)
{
	snprintf(c->cmd, sizeof c->cmd, "%s", old->command);
	if (mgpu_bench_split_command(c->cmd, c->args, 256, &c->n) < 0 || c->n < 2)
		return mgpu_err(MGPU_EFORMAT, "'%s': %s: bad command '%s'", name, old->config,
				old->command);
	c->args[0] = (char *)(uintptr_t)train_bin;
	return 0;
}
