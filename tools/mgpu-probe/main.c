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
 * --system prints versions, the P2P matrix, the host and a checklist.
 */
#include <stdarg.h> /* va_list */
#include <stdio.h>  /* printf, fprintf */
#include <stdlib.h> /* getenv, malloc */
#include <string.h> /* strcmp */
#include <unistd.h> /* isatty */

#include "../common.h"  /* die, usage_error, warn */
#include "core/io.h"    /* mgpu_afile, mgpu_read_file */
#include "core/table.h" /* struct mgpu_table */
#include "gpu/gpu.h"    /* mgpu_gpu_enumerate, mgpu_gpu_select */

const char *const mgpu_tool_name = "mgpu-probe";

#define SHM_MIN_BYTES (256LL << 20) /* /dev/shm free space the checklist wants */
#define STDIN_MAX (64LL << 20)

struct opts {
	struct mgpu_gpu_policy pol;
	const char *from;
	int ids, system, single;
	struct mgpu_common_opts com;
	struct mgpu_opt_given given;
};

#define O struct opts
static const struct mgpu_opt options[] = {
	MGPU_OPT_HEAD("what to list"),
	MGPU_OPT_ROW(MGPU_OPT_STR, "from", 0, O, from, 0, 0, "FILE|-",
		     "read the GPUs from nvidia-smi's CSV output (the query is in "
		     "mgpu-probe(1)) instead of asking the CUDA runtime", MGPU_OPT_NODEF),
	MGPU_OPT_ROW(MGPU_OPT_FLAG, "system", 0, O, system, 0, 0, NULL,
		     "report versions, P2P, host and a checklist instead", 0),
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

/* Where the output goes: stdout, or an atomic file (-o). */
struct out {
	FILE *fp;
	struct mgpu_afile af;
	int to_file;
	int tty;   /* aligned text for a person, not TSV */
};

static void check_combinations(struct opts *o)
{
	int count_set = mgpu_opt_was_given(options, &o->given, "count");
	int format_set = mgpu_opt_was_given(options, &o->given, "format");

	if (o->single && count_set)
		usage_error("--single and --count: choose one (--single is --count 1)");
	if (o->single)
		o->pol.count = 1;
	if (o->ids && (o->com.json || format_set))
		usage_error("--ids and --%s: choose one output format",
			    o->com.json ? "json" : "format");
	if (o->system && (o->from || o->ids || o->single || count_set))
		usage_error("--system reports on this machine; it takes no --from, --ids, "
			    "--count or --single");
}

static void parse(struct opts *o, int argc, char **argv)
{
	static struct opts def;
	const struct tool_cli cli = { options, synopsis, &def };
	int first;

	mgpu_gpu_policy_init(&def.pol);
	first = parse_options(&cli, o, &o->com, argc, argv, 1, &o->given);
	if (first < argc)
		usage_error("unexpected argument '%s'", argv[first]);
	check_combinations(o);
}

/* ---- output ------------------------------------------------------------- */

static void out_open(struct out *out, const struct opts *o)
{
	memset(out, 0, sizeof *out);
	out->fp = stdout;
	if (o->com.output) {
		if (mgpu_afile_open(&out->af, o->com.output) < 0)
			die_lib();
		out->fp = out->af.fp;
		out->to_file = 1;
	}
	/* a person reads an aligned table, unless a format was asked for */
	out->tty = !o->com.json && !o->ids && !mgpu_opt_was_given(options, &o->given, "format") &&
		   isatty(fileno(out->fp));
}

static void out_fail(struct out *out)
{
	if (out->to_file)
		mgpu_afile_abort(&out->af);
	finish_stdout();
	die_lib();
}

static void out_close(struct out *out)
{
	if (fflush(out->fp) != 0 || ferror(out->fp)) {
		mgpu_err_errno(MGPU_EIO, "cannot write output");
		out_fail(out);
	}
	if (out->to_file && mgpu_afile_commit(&out->af) < 0)
		die_lib();
}

/* ---- the GPU list ------------------------------------------------------- */

static char *read_stdin(size_t *len)
{
	size_t cap = 65536, got;
	char *buf = malloc(cap), *nb;

	*len = 0;
	while (buf) {
		got = fread(buf + *len, 1, cap - *len, stdin);
		*len += got;
		if (got == 0)
			break;
		if (*len == cap) {
			if (cap >= (size_t)STDIN_MAX)
				die("--from -: standard input is larger than %lld bytes", STDIN_MAX);
			nb = realloc(buf, cap * 2);
			if (!nb)
				free(buf);
			buf = nb;
			cap *= 2;
		}
	}
	if (!buf)
		die("out of memory reading standard input");
	if (ferror(stdin))
		die("--from -: cannot read standard input");
	return buf;
}

static void load_list(const struct opts *o, struct mgpu_gpu_list *list)
{
	unsigned char *data;
	char *text;
	size_t len;
	int rc;

	if (!o->from) {
		if (mgpu_gpu_enumerate(list) < 0)
			die_lib();
		return;
	}
	if (strcmp(o->from, "-") == 0) {
		text = read_stdin(&len);
		rc = mgpu_gpu_parse_smi_csv(text, len, "standard input", list);
		free(text);
	} else {
		if (mgpu_read_file(o->from, &data, &len) < 0)
			die_lib();
		rc = mgpu_gpu_parse_smi_csv((const char *)data, len, o->from, list);
		free(data);
	}
	if (rc < 0)
		die_lib();
	/* CUDA applies CUDA_VISIBLE_DEVICES itself; a captured list needs it done. */
	mgpu_gpu_apply_visible(list, getenv("CUDA_VISIBLE_DEVICES"));
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

/* ---- --system ----------------------------------------------------------- */

struct report {
	struct out *out;
	struct mgpu_table t;
	char section[32];
};

static const char *const sys_cols[] = { "section", "item", "value", "check" };

/* One report line: check is "pass", "fail" or NULL (not a check). */
static void row(struct report *r, const char *section, const char *item, const char *check,
		const char *fmt, ...) MGPU_PRINTF(5, 6);

static void row(struct report *r, const char *section, const char *item, const char *check,
		const char *fmt, ...)
{
	char value[400];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(value, sizeof value, fmt, ap);
	va_end(ap);
	if (r->out->tty) {
		if (strcmp(r->section, section) != 0)
			fprintf(r->out->fp, "%s%s\n", r->section[0] ? "\n" : "", section);
		snprintf(r->section, sizeof r->section, "%s", section);
		if (check)
			fprintf(r->out->fp, "  [%s] %-22s %s\n", strcmp(check, "pass") ? "FAIL" : "pass",
				item, value);
		else
			fprintf(r->out->fp, "  %-22s %s\n", item, value);
		return;
	}
	mgpu_table_str(&r->t, "section", section);
	mgpu_table_str(&r->t, "item", item);
	mgpu_table_str(&r->t, "value", value);
	if (check)
		mgpu_table_str(&r->t, "check", check);
	if (mgpu_table_emit(&r->t) < 0)
		out_fail(r->out);
}

static const char *cuda_version(int v, char *buf, size_t len)
{
	if (v < 0)
		snprintf(buf, len, "NA (built without CUDA)");
	else if (v == 0)
		snprintf(buf, len, "none (no NVIDIA driver)");
	else
		snprintf(buf, len, "%d.%d", v / 1000, (v % 1000) / 10);
	return buf;
}

static double gib(int64_t b)
{
	return (double)b / (1024.0 * 1024 * 1024);
}

static void report_versions(struct report *r, const struct mgpu_gpu_system *s)
{
	char b[64];
	int v = s->nccl_version;

	row(r, "versions", "cuda_driver", NULL, "%s", cuda_version(s->cuda_driver_version, b, sizeof b));
	row(r, "versions", "cuda_runtime", NULL, "%s",
	    cuda_version(s->cuda_runtime_version, b, sizeof b));
	if (s->cublas_version[0] >= 0)
		row(r, "versions", "cublas", NULL, "%d.%d.%d", s->cublas_version[0],
		    s->cublas_version[1], s->cublas_version[2]);
	else
		row(r, "versions", "cublas", NULL, "NA (%s)", s->cuda_runtime_version < 0 ?
		    "built without CUDA" : "libcublas is not loadable");
	if (v >= 0)
		row(r, "versions", "nccl", NULL, "%d.%d.%d", v / 10000, (v / 100) % 100, v % 100);
	else
		row(r, "versions", "nccl", NULL, "NA (%s)", s->nccl_why);
	if (s->nvml_driver[0])
		row(r, "versions", "nvidia_driver", NULL, "%s (NVML)", s->nvml_driver);
	else
		row(r, "versions", "nvidia_driver", NULL, "NA (%s)",
		    s->nvml_why[0] ? s->nvml_why : "NVML gave no version");
}

static void report_gpus(struct report *r, const struct mgpu_gpu_list *list,
			const struct mgpu_gpu_system *s)
{
	const struct mgpu_gpu *g;
	char item[32];
	int i;

	row(r, "gpus", "cuda_visible_devices", NULL, "%s",
	    getenv("CUDA_VISIBLE_DEVICES") ? getenv("CUDA_VISIBLE_DEVICES") : "(unset)");
	row(r, "gpus", "cuda_gpus", NULL, "%d%s%s", list->nvisible, list->why[0] ? ": " : "",
	    list->why);
	if (s->nvml_gpus >= 0)
		row(r, "gpus", "nvml_gpus", NULL, "%d (all GPUs, before CUDA_VISIBLE_DEVICES)",
		    s->nvml_gpus);
	for (i = 0; i < list->nvisible; i++) {
		g = &list->gpu[i];
		snprintf(item, sizeof item, "gpu %d", i);
		row(r, "gpus", item, NULL, "%s, %.1f GiB, cc %d.%d, %d SMs, PCI %s, %s", g->name,
		    gib(g->mem_total_bytes), g->cc_major, g->cc_minor, g->sm_count,
		    g->pci_bus_id, g->uuid);
	}
}

static const char *link_word(int v)
{
	return v == 1 ? "yes" : v == 0 ? "no" : "unknown";
}

/* The P2P matrix: a grid on a terminal, one row per ordered pair else. */
static void report_p2p(struct report *r, const struct mgpu_gpu_system *s)
{
	char item[32];
	int i, j;

	if (s->ngpus < 2) {
		row(r, "p2p", "pairs", NULL, "none (%d GPU%s visible)", s->ngpus,
		    s->ngpus == 1 ? "" : "s");
		return;
	}
	if (r->out->tty) {
		fprintf(r->out->fp, "\np2p (cudaDeviceCanAccessPeer; +nvl: NVLink per NVML)\n     ");
		snprintf(r->section, sizeof r->section, "p2p");
		for (j = 0; j < s->ngpus; j++)
			fprintf(r->out->fp, " %-7d", j);
		for (i = 0; i < s->ngpus; i++) {
			fprintf(r->out->fp, "\n  %-3d", i);
			for (j = 0; j < s->ngpus; j++)
				fprintf(r->out->fp, " %-3s%-4s", i == j ? "-" : link_word(s->p2p[i][j]),
					s->nvlink[i][j] == 1 ? "+nvl" : "");
		}
		fputc('\n', r->out->fp);
		return;
	}
	for (i = 0; i < s->ngpus; i++)
		for (j = 0; j < s->ngpus; j++)
			if (i != j) {
				snprintf(item, sizeof item, "%d->%d", i, j);
				row(r, "p2p", item, NULL, "%s%s", link_word(s->p2p[i][j]),
				    s->nvlink[i][j] == 1 ? " nvlink" : "");
			}
}

static void report_host(struct report *r, const struct mgpu_gpu_system *s)
{
	row(r, "host", "cpu_model", NULL, "%s", s->cpu_model[0] ? s->cpu_model : "NA");
	row(r, "host", "cpu_cores", NULL, "%d", s->cpu_cores);
	if (s->mem_total_bytes >= 0)
		row(r, "host", "memory", NULL, "%.1f GiB total, %.1f GiB available",
		    gib(s->mem_total_bytes), gib(s->mem_avail_bytes));
	if (s->shm_total_bytes >= 0)
		row(r, "host", "dev_shm", NULL, "%.1f GiB total, %.1f GiB free",
		    gib(s->shm_total_bytes), gib(s->shm_free_bytes));
	else
		row(r, "host", "dev_shm", NULL, "missing");
}

static void report_checks(struct report *r, const struct mgpu_gpu_list *list,
			  const struct mgpu_gpu_system *s)
{
	int drv = s->cuda_driver_version, rt = s->cuda_runtime_version;
	int shm_ok = s->shm_free_bytes >= SHM_MIN_BYTES;
	char d[40], t[40];

	row(r, "checklist", "gpus_visible", list->nvisible ? "pass" : "fail", "%d GPU%s%s%s",
	    list->nvisible, list->nvisible == 1 ? "" : "s", list->why[0] ? ": " : "", list->why);
	row(r, "checklist", "driver_supports_runtime", drv > 0 && drv >= rt ? "pass" : "fail",
	    "driver supports CUDA %s, runtime is %s", cuda_version(drv, d, sizeof d),
	    cuda_version(rt, t, sizeof t));
	if (s->nccl_version >= 0)
		row(r, "checklist", "nccl_loadable", "pass", "libnccl.so.2 %d.%d.%d",
		    s->nccl_version / 10000, (s->nccl_version / 100) % 100, s->nccl_version % 100);
	else
		row(r, "checklist", "nccl_loadable", "fail", "%s", s->nccl_why);
	row(r, "checklist", "rendezvous_port_free", s->port_free ? "pass" : "fail",
	    "127.0.0.1:%d%s%s", s->port, s->port_free ? " can be bound" : ": ", s->port_why);
	row(r, "checklist", "shm_large_enough", shm_ok ? "pass" : "fail",
	    "/dev/shm %.0f MiB free, want >= %lld MiB",
	    s->shm_free_bytes >= 0 ? (double)s->shm_free_bytes / 1048576 : 0.0, SHM_MIN_BYTES >> 20);
}

static int system_report(const struct opts *o)
{
	static struct mgpu_gpu_list list;
	static struct mgpu_gpu_system s;
	struct report r;
	struct out out;

	if (mgpu_gpu_enumerate(&list) < 0 || mgpu_gpu_system(&list, &s) < 0)
		die_lib();
	out_open(&out, o);
	memset(&r, 0, sizeof r);
	r.out = &out;
	mgpu_table_init(&r.t, out.fp, o->com.format, sys_cols, 4);
	report_versions(&r, &s);
	report_gpus(&r, &list, &s);
	report_p2p(&r, &s);
	report_host(&r, &s);
	report_checks(&r, &list, &s);
	out_close(&out);
	return 0;
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
