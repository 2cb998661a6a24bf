/*
 * mgpu-probe - which GPUs are eligible for training, and a system report.
 *
 * Lists the GPUs this process can use (CUDA runtime + NVML) or those of an
 * nvidia-smi CSV (--from), applies the selection policy that
 * `mgpu-train --gpus auto` applies (lib/gpu: mgpu_gpu_select) and prints
 * the GPUs with the reason each excluded one is excluded: an aligned table
 * on a terminal, TSV with a header otherwise, JSON Lines with --json, or
 * with --ids just the comma list `mgpu-train --gpus` takes. Exits 0 when a
 * GPU is eligible, 1 when none is (as grep does), 2 on usage errors.
 * --system (system.c) prints versions, the P2P matrix, the host and a
 * checklist; io.c reads the GPU list and opens the output for both.
 */
#include <stdio.h>  /* fprintf, snprintf */
#include <string.h> /* memset, strlen */

#include "../common.h"  /* usage_error, note, warn */
#include "core/table.h" /* struct mgpu_table */
#include "gpu/gpu.h"    /* mgpu_gpu_select */
#include "probe.h"      /* struct opts, struct out, load_list, out_open, system_report */

const char *const mgpu_tool_name = "mgpu-probe";

#define O struct opts
static const struct mgpu_opt options[] = {
	MGPU_OPT_HEAD("what to list"),
	MGPU_OPT_ROW(MGPU_OPT_STR, "from", 0, O, from, 0, 0, "FILE|-",
		     "read the GPUs from nvidia-smi's CSV output (the query is in "
		     "mgpu-probe(1)) instead of asking the CUDA runtime", MGPU_OPT_NODEF),
	MGPU_OPT_ROW(MGPU_OPT_FLAG, "system", 0, O, system, 0, 0, NULL,
		     "report versions, P2P, host and a checklist instead (with --from: of "
		     "the GPUs in FILE, e.g. whether this binary has code for their compute "
		     "capability)", 0),
	MGPU_OPT_HEAD("selection"),
	MGPU_OPT_ROW(MGPU_OPT_DOUBLE, "min-memory", 0, O, pol.min_memory_gb, 0, 1e6, "GB",
		     "total memory at least GB x 10^9 bytes", 0),
	MGPU_OPT_ROW(MGPU_OPT_FLAG, "include-display", 0, O, pol.include_display, 0, 0, NULL,
		     "allow GPUs that drive a display", 0),
	MGPU_OPT_ROWD(MGPU_OPT_DOUBLE, "max-used", 0, O, pol.max_used_pct, 0, 100, "PCT",
		      "exclude GPUs with more than PCT% of memory in use", "off", 0),
	MGPU_OPT_ROWD(MGPU_OPT_INT, "count", 0, O, pol.count, 1, MGPU_GPU_MAX, "N",
		      "keep the best N eligible GPUs", "all", 0),
	MGPU_OPT_ROW(MGPU_OPT_FLAG, "single", 0, O, single, 0, 0, NULL,
		     "keep the best one (--count 1)", 0),
	MGPU_OPT_ROW(MGPU_OPT_FLAG, "ids", 0, O, ids, 0, 0, NULL,
		     "print only the ordinals, comma-separated (for --gpus)", 0),
	MGPU_OPT_COMMON(O, com),
	MGPU_OPT_TABLE_END,
};
#undef O

static const char synopsis[] =
	"usage: mgpu-probe [options]\n"
	"List the GPUs eligible for training, best first, with the reason each other one\n"
	"is excluded; the same rules as mgpu-train --gpus auto. On a terminal the list is\n"
	"an aligned table unless --format says otherwise.\n"
	"Exit status: 0 a GPU is eligible, 1 none is (or an error), 2 usage error.\n";

static void check_combinations(struct opts *o)
{
	int count_set = mgpu_opt_was_given(options, &o->given, "count");

	if (o->single && count_set)
		usage_error("--single and --count: choose one (--single is --count 1)");
	if (o->single)
		o->pol.count = 1;
	if (o->ids && (o->com.json || o->format_set))
		usage_error("--ids and --%s: choose one output format",
			    o->com.json ? "json" : "format");
	if (o->system && (o->ids || o->single || count_set))
		usage_error("--system reports on this machine; it takes no --ids, --count or "
			    "--single");
}

static void parse(struct opts *o, int argc, char **argv)
{
	static struct opts def;
	const struct tool_cli cli = { options, synopsis, &def, 0 };
	int first;

	mgpu_gpu_policy_init(&def.pol);
	first = parse_options(&cli, o, &o->com, argc, argv, 1, &o->given);
	o->format_set = mgpu_opt_was_given(options, &o->given, "format");
	if (first < argc)
		usage_error("unexpected argument '%s'", argv[first]);
	check_combinations(o);
}

/* The order rows are printed in: kept GPUs best first, then the rest. */
static int row_order(const struct mgpu_gpu_list *list, const struct mgpu_gpu_selection *sel,
		     int *rows)
{
	int i, n = 0;

	for (i = 0; i < sel->n; i++)
		rows[n++] = sel->pick[i];
	for (i = 0; i < list->n; i++)
		if (!sel->order[i])
			rows[n++] = i;
	return n;
}

static const char *const cols[] = {
	"index", "selected", "order", "name", "mem_total_bytes", "mem_used_bytes",
	"mem_free_bytes", "display_active", "watchdog", "compute_cap", "sm_count", "util_pct",
	"procs", "nvlinks", "uuid", "pci_bus_id", "smi_index", "reason",
};

static void put_known(struct mgpu_table *t, const char *col, int64_t v)
{
	if (v >= 0)
		mgpu_table_int(t, col, v);
}

static int put_gpu(struct mgpu_table *t, const struct mgpu_gpu *g, int order, const char *why)
{
	char cc[16];

	put_known(t, "index", g->index);
	mgpu_table_int(t, "selected", order > 0);
	if (order > 0)
		mgpu_table_int(t, "order", order);
	if (g->name[0])
		mgpu_table_str(t, "name", g->name);
	put_known(t, "mem_total_bytes", g->mem_total_bytes);
	put_known(t, "mem_used_bytes", g->mem_used_bytes);
	put_known(t, "mem_free_bytes", g->mem_free_bytes);
	put_known(t, "display_active", g->display_active);
	put_known(t, "watchdog", g->watchdog);
	if (g->cc_major >= 0) {
		snprintf(cc, sizeof cc, "%d.%d", g->cc_major, g->cc_minor);
		mgpu_table_str(t, "compute_cap", cc);
	}
	put_known(t, "sm_count", g->sm_count);
	put_known(t, "util_pct", g->util_pct);
	put_known(t, "procs", g->nprocs);
	put_known(t, "nvlinks", g->nvlinks);
	if (g->uuid[0])
		mgpu_table_str(t, "uuid", g->uuid);
	if (g->pci_bus_id[0])
		mgpu_table_str(t, "pci_bus_id", g->pci_bus_id);
	put_known(t, "smi_index", g->smi_index);
	if (why[0])
		mgpu_table_str(t, "reason", why);
	return mgpu_table_emit(t);
}

static void write_records(struct out *out, const struct opts *o,
			  const struct mgpu_gpu_list *list, const struct mgpu_gpu_selection *sel)
{
	struct mgpu_table t;
	int rows[MGPU_GPU_MAX], n, i;

	mgpu_table_init(&t, out->fp, o->com.format, cols, (int)(sizeof cols / sizeof cols[0]));
	n = row_order(list, sel, rows);
	for (i = 0; i < n; i++)
		if (put_gpu(&t, &list->gpu[rows[i]], sel->order[rows[i]], sel->reason[rows[i]]) < 0)
			out_fail(out);
}

/* One cell of the terminal table per column. */
enum { T_GPU, T_NAME, T_MEM, T_USED, T_DISP, T_CC, T_PCI, T_STATUS, T_NCOL };

static void term_cells(const struct mgpu_gpu *g, int order, const char *why,
		       char cell[T_NCOL][MGPU_GPU_REASON + 16])
{
	const size_t n = MGPU_GPU_REASON + 16;

	if (g->index >= 0)
		snprintf(cell[T_GPU], n, "%d", g->index);
	else
		snprintf(cell[T_GPU], n, "-");
	snprintf(cell[T_NAME], n, "%s", g->name[0] ? g->name : "?");
	if (g->mem_total_bytes >= 0)
		snprintf(cell[T_MEM], n, "%lld MiB", (long long)(g->mem_total_bytes >> 20));
	else
		snprintf(cell[T_MEM], n, "?");
	if (g->mem_used_bytes >= 0 && g->mem_total_bytes > 0)
		snprintf(cell[T_USED], n, "%.0f%%",
			 100.0 * (double)g->mem_used_bytes / (double)g->mem_total_bytes);
	else
		snprintf(cell[T_USED], n, "?");
	snprintf(cell[T_DISP], n, "%s", g->display_active == 1 ? "yes" : g->watchdog == 1 ?
		 "watchdog" : g->display_active == 0 ? "no" : "?");
	if (g->cc_major >= 0)
		snprintf(cell[T_CC], n, "%d.%d", g->cc_major, g->cc_minor);
	else
		snprintf(cell[T_CC], n, "?");
	snprintf(cell[T_PCI], n, "%s", g->pci_bus_id[0] ? g->pci_bus_id : "?");
	if (order > 0)
		snprintf(cell[T_STATUS], n, "yes (#%d)", order);
	else
		snprintf(cell[T_STATUS], n, "no: %s", why);
}

static void write_terminal(struct out *out, const struct mgpu_gpu_list *list,
			   const struct mgpu_gpu_selection *sel)
{
	static const char *const head[T_NCOL] = { "GPU", "NAME", "MEMORY", "USED", "DISPLAY",
						  "CC", "PCI BUS ID", "SELECTED" };
	static char cell[MGPU_GPU_MAX][T_NCOL][MGPU_GPU_REASON + 16];
	int rows[MGPU_GPU_MAX], w[T_NCOL], n, i, k;

	n = row_order(list, sel, rows);
	for (k = 0; k < T_NCOL; k++)
		w[k] = (int)strlen(head[k]);
	for (i = 0; i < n; i++) {
		term_cells(&list->gpu[rows[i]], sel->order[rows[i]], sel->reason[rows[i]], cell[i]);
		for (k = 0; k < T_NCOL; k++)
			if ((int)strlen(cell[i][k]) > w[k])
				w[k] = (int)strlen(cell[i][k]);
	}
	if (n == 0)
		return;
	w[T_NCOL - 1] = 0; /* the last column is not padded */
	for (k = 0; k < T_NCOL; k++)
		fprintf(out->fp, "%-*s%s", w[k], head[k], k < T_NCOL - 1 ? "  " : "\n");
	for (i = 0; i < n; i++)
		for (k = 0; k < T_NCOL; k++)
			fprintf(out->fp, "%-*s%s", w[k], cell[i][k], k < T_NCOL - 1 ? "  " : "\n");
}

static void write_ids(struct out *out, const struct mgpu_gpu_list *list,
		      const struct mgpu_gpu_selection *sel)
{
	int i;

	for (i = 0; i < sel->n; i++)
		fprintf(out->fp, "%s%d", i ? "," : "", list->gpu[sel->pick[i]].index);
	if (sel->n)
		fputc('\n', out->fp);
}

/* Why nothing was selected, in one line on stderr. */
static void say_none(const struct mgpu_gpu_list *list, const struct mgpu_gpu_selection *sel)
{
	char buf[600];
	size_t o = 0;
	int i;

	if (list->nvisible == 0) {
		note("no GPUs: %s", list->why[0] ? list->why : "none found");
		return;
	}
	for (i = 0; i < list->nvisible && o < sizeof buf; i++)
		o += (size_t)snprintf(buf + o, sizeof buf - o, "%sGPU %d %s", i ? "; " : "", i,
				      sel->reason[i]);
	note("no eligible GPU among %d: %s", list->nvisible, buf);
}

static int probe(const struct opts *o)
{
	static struct mgpu_gpu_list list;
	static struct mgpu_gpu_selection sel;
	struct out out;

	load_list(o, &list);
	if (list.note[0])
		warn("%s", list.note);
	if (mgpu_gpu_select(&list, &o->pol, &sel) < 0)
		usage_error("%s", mgpu_errmsg());
	out_open(&out, o);
	if (o->ids)
		write_ids(&out, &list, &sel);
	else if (out.tty)
		write_terminal(&out, &list, &sel);
	else
		write_records(&out, o, &list, &sel);
	out_close(&out);
	if (o->com.verbose)
		note("%d GPU%s from %s, %d visible, %d eligible, %d kept", list.n,
		     list.n == 1 ? "" : "s", list.source, list.nvisible, sel.neligible, sel.n);
	if (sel.n == 0 && !o->com.quiet)
		say_none(&list, &sel);
	else if (o->pol.count > sel.n)
		warn("--count %d: only %d GPU%s eligible", o->pol.count, sel.n,
		     sel.n == 1 ? " is" : "s are");
	return sel.n > 0 ? 0 : 1;
}

int cmd_main(int argc, char **argv)
{
	struct opts o;

	memset(&o, 0, sizeof o);
	mgpu_gpu_policy_init(&o.pol);
	parse(&o, argc, argv);
	if (o.system)
		return system_report(&o);
	return probe(&o);
}
