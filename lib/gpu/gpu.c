/*
 * gpu.c - the pure half of lib/gpu (see gpu.h): nvidia-smi CSV parsing,
 * CUDA_VISIBLE_DEVICES, the selection policy and --gpus resolution.
 *
 * Nothing here touches CUDA, NVML or the file system (mgpu_gpu_resolve
 * reads the FILE* it is given), so every path is unit-tested and fuzzed on
 * machines without GPUs. Inputs are (pointer, length) pairs, never assumed
 * NUL-terminated.
 */
#include "gpu/gpu.h"

#include <ctype.h>  /* isdigit */
#include <math.h>   /* floor, isfinite */
#include <stdio.h>  /* snprintf, fread */
#include <string.h> /* memcpy, strcmp */
#include <strings.h> /* strncasecmp */

#include "core/cli.h" /* mgpu_cli_int_list */
#include "core/err.h" /* mgpu_err, MGPU_E* */
#include "gpu/gpu_int.h" /* mgpu_gpu_blank */

#define GB 1e9
#define MIB 1048576.0

void mgpu_gpu_policy_init(struct mgpu_gpu_policy *p)
{
	p->min_memory_gb = 8;
	p->include_display = 0;
	p->max_used_pct = -1;
	p->count = 0;
}

/* ---- nvidia-smi CSV ---------------------------------------------------- */

enum { C_INDEX, C_UUID, C_NAME, C_MEM_TOTAL, C_MEM_USED, C_DISPLAY, C_PCI, C_CC,
       C_MEM_FREE, C_UTIL, NCOL };

/* Column names as nvidia-smi's header prints them; the first 8 in the
 * order a header-less file must have. */
static const char *const col_names[NCOL] = {
	"index", "uuid", "name", "memory.total", "memory.used", "display_active",
	"pci.bus_id", "compute_cap", "memory.free", "utilization.gpu",
};
#define NDEFAULT 8
#define MAXFIELDS 64

/* A field: s[0..len), trimmed. */
struct span {
	const char *s;
	size_t len;
};

struct csv {
	const char *name;   /* the input, for messages */
	int line;           /* 1-based line number of the current line */
	int col_of[NCOL];   /* field number of each column, -1 absent */
	int nfields;        /* fields every data line must have */
	int has_header;
};

static int span_eq(struct span f, const char *w)
{
	return f.len == strlen(w) && strncasecmp(f.s, w, f.len) == 0;
}

static struct span trim(const char *s, size_t len)
{
	struct span f;

	while (len && (*s == ' ' || *s == '\t')) {
		s++;
		len--;
	}
	while (len && (s[len - 1] == ' ' || s[len - 1] == '\t' || s[len - 1] == '\r'))
		len--;
	f.s = s;
	f.len = len;
	return f;
}

/* Split a line at commas into trimmed fields; -1 when there are too many. */
static int split(const char *s, size_t len, struct span *f)
{
	size_t i, start = 0;
	int n = 0;

	for (i = 0; i <= len; i++) {
		if (i < len && s[i] != ',')
			continue;
		if (n == MAXFIELDS)
			return -1;
		f[n++] = trim(s + start, i - start);
		start = i + 1;
	}
	return n;
}

/* "[N/A]", "[Not Supported]" and friends: nvidia-smi's unknown values. */
static int unknown(struct span f)
{
	return (f.len >= 2 && f.s[0] == '[' && f.s[f.len - 1] == ']') || span_eq(f, "N/A");
}

/* A run of digits as an unsigned value (at most 15 digits, no overflow);
 * returns how many characters it used, 0 when none. */
static size_t digits(struct span f, long long *v)
{
	size_t i = 0;

	*v = 0;
	while (i < f.len && i < 15 && isdigit((unsigned char)f.s[i]))
		*v = *v * 10 + (f.s[i++] - '0');
	if (i < f.len && isdigit((unsigned char)f.s[i]))
		return 0;
	return i;
}

/* "12" or "12 UNIT" (any spaces between); rest of f after the number
 * must be empty or unit. */
static int number_unit(struct span f, const char *unit, long long *v)
{
	size_t i = digits(f, v);
	struct span rest;

	if (i == 0)
		return -1;
	rest = trim(f.s + i, f.len - i);
	return rest.len == 0 || span_eq(rest, unit) ? 0 : -1;
}

static int bad_value(const struct csv *c, int col, struct span f, const char *want)
{
	return mgpu_err(MGPU_EFORMAT, "'%s' line %d: %s '%.*s' is not %s", c->name, c->line,
			col_names[col], (int)(f.len > 40 ? 40 : f.len), f.s, want);
}

static void copy_text(char *dst, size_t cap, struct span f)
{
	size_t n = f.len < cap - 1 ? f.len : cap - 1;

	memcpy(dst, f.s, n);
	dst[n] = '\0';
}

static int put_mib(const struct csv *c, int col, struct span f, int64_t *out)
{
	long long v;

	if (unknown(f))
		return 0;
	if (number_unit(f, "MiB", &v) < 0)
		return bad_value(c, col, f, "a number of MiB");
	if (v > 1LL << 40) /* 1 EiB: beyond any GPU, and bytes still fit in int64 */
		return bad_value(c, col, f, "a plausible number of MiB");
	*out = (int64_t)v * 1048576;
	return 0;
}

static int put_display(const struct csv *c, struct span f, int *out)
{
	if (unknown(f))
		return 0;
	if (span_eq(f, "Enabled"))
		*out = 1;
	else if (span_eq(f, "Disabled"))
		*out = 0;
	else
		return bad_value(c, C_DISPLAY, f, "Enabled or Disabled");
	return 0;
}

static int put_cc(const struct csv *c, struct span f, struct mgpu_gpu *g)
{
	long long ma, mi;
	size_t i;
	struct span rest;

	if (unknown(f))
		return 0;
	i = digits(f, &ma);
	if (i == 0 || i > 3 || i + 1 >= f.len || f.s[i] != '.')
		return bad_value(c, C_CC, f, "a compute capability like 8.9");
	rest.s = f.s + i + 1;
	rest.len = f.len - i - 1;
	if (digits(rest, &mi) != rest.len || rest.len > 3)
		return bad_value(c, C_CC, f, "a compute capability like 8.9");
	g->cc_major = (int)ma;
	g->cc_minor = (int)mi;
	return 0;
}

static int put_text(const struct csv *c, int col, struct span f, char *dst, size_t cap)
{
	if (unknown(f))
		return 0;
	if (f.len >= cap && col != C_NAME)
		return bad_value(c, col, f, "a plausible value (too long)");
	copy_text(dst, cap, f);
	return 0;
}

void mgpu_gpu_blank(struct mgpu_gpu *g)
{
	memset(g, 0, sizeof *g);
	g->index = g->smi_index = -1;
	g->mem_total_bytes = g->mem_used_bytes = g->mem_free_bytes = -1;
	g->display_active = g->watchdog = -1;
	g->cc_major = g->cc_minor = g->sm_count = -1;
	g->util_pct = g->nprocs = g->nvlinks = -1;
}

static int put_field(const struct csv *c, int col, struct span f, struct mgpu_gpu *g)
{
	long long v;

	switch (col) {
	case C_INDEX:
		if (digits(f, &v) != f.len || f.len == 0 || v > 1000000)
			return bad_value(c, col, f, "a GPU index");
		g->smi_index = (int)v;
		return 0;
	case C_UUID: return put_text(c, col, f, g->uuid, sizeof g->uuid);
	case C_NAME: return put_text(c, col, f, g->name, sizeof g->name);
	case C_PCI: return put_text(c, col, f, g->pci_bus_id, sizeof g->pci_bus_id);
	case C_MEM_TOTAL: return put_mib(c, col, f, &g->mem_total_bytes);
	case C_MEM_USED: return put_mib(c, col, f, &g->mem_used_bytes);
	case C_MEM_FREE: return put_mib(c, col, f, &g->mem_free_bytes);
	case C_DISPLAY: return put_display(c, f, &g->display_active);
	case C_CC: return put_cc(c, f, g);
	case C_UTIL:
		if (unknown(f))
			return 0;
		if (number_unit(f, "%", &v) < 0 || v > 100)
			return bad_value(c, col, f, "a percentage");
		g->util_pct = (int)v;
		return 0;
	default: return 0;
	}
}

/* A header field "memory.total [MiB]": its column, -1 when not ours. */
static int header_col(struct span f)
{
	static const char *const alias[][2] = {
		{ "gpu_uuid", "uuid" }, { "gpu_name", "name" }, { "gpu_bus_id", "pci.bus_id" },
		{ "compute_capability", "compute_cap" }, { "utilization.gpu", "utilization.gpu" },
	};
	size_t k;
	int i;

	for (k = 0; k < f.len && f.s[k] != '['; k++)
		;
	f = trim(f.s, k);
	for (i = 0; i < NCOL; i++)
		if (span_eq(f, col_names[i]))
			return i;
	for (k = 0; k < sizeof alias / sizeof alias[0]; k++)
		if (span_eq(f, alias[k][0]))
			for (i = 0; i < NCOL; i++)
				if (strcmp(alias[k][1], col_names[i]) == 0)
					return i;
	return -1;
}

static int parse_header(struct csv *c, const struct span *f, int n)
{
	int i, col;

	for (i = 0; i < NCOL; i++)
		c->col_of[i] = -1;
	for (i = 0; i < n; i++) {
		col = header_col(f[i]);
		if (col < 0)
			continue;
		if (c->col_of[col] >= 0)
			return mgpu_err(MGPU_EFORMAT, "'%s' line %d: column '%s' appears twice",
					c->name, c->line, col_names[col]);
		c->col_of[col] = i;
	}
	for (i = 0; i < 2; i++) {
		col = i ? C_MEM_TOTAL : C_INDEX;
		if (c->col_of[col] < 0)
			return mgpu_err(MGPU_EFORMAT, "'%s' line %d: missing column '%s' in the header",
					c->name, c->line, col_names[col]);
	}
	c->nfields = n;
	c->has_header = 1;
	return 0;
}

static void default_layout(struct csv *c)
{
	int i;

	for (i = 0; i < NCOL; i++)
		c->col_of[i] = i < NDEFAULT ? i : -1;
	c->nfields = NDEFAULT;
}

/* A header is a first line whose first field names a column. */
static int is_header(const struct span *f)
{
	return f[0].len > 0 && !isdigit((unsigned char)f[0].s[0]) && header_col(f[0]) >= 0;
}

static int parse_row(struct csv *c, const struct span *f, int n, struct mgpu_gpu_list *list)
{
	struct mgpu_gpu *g;
	int col, i;

	if (n != c->nfields) {
		if (!c->has_header)
			return mgpu_err(MGPU_EFORMAT, "'%s' line %d: %d fields, expected %d (index, "
					"uuid, name, memory.total, memory.used, display_active, "
					"pci.bus_id, compute_cap) or a header line", c->name,
					c->line, n, NDEFAULT);
		return mgpu_err(MGPU_EFORMAT, "'%s' line %d: %d fields, the header has %d",
				c->name, c->line, n, c->nfields);
	}
	if (list->n == MGPU_GPU_MAX)
		return mgpu_err(MGPU_EFORMAT, "'%s' line %d: more than %d GPUs", c->name, c->line,
				MGPU_GPU_MAX);
	g = &list->gpu[list->n];
	mgpu_gpu_blank(g);
	for (col = 0; col < NCOL; col++)
		if (c->col_of[col] >= 0)
			MGPU_TRY(put_field(c, col, f[c->col_of[col]], g));
	if (g->smi_index < 0)
		return bad_value(c, C_INDEX, f[c->col_of[C_INDEX]], "a GPU index");
	for (i = 0; i < list->n; i++)
		if (list->gpu[i].smi_index == g->smi_index)
			return mgpu_err(MGPU_EFORMAT, "'%s' line %d: GPU index %d listed twice",
					c->name, c->line, g->smi_index);
	if (g->mem_free_bytes < 0 && g->mem_total_bytes >= 0 && g->mem_used_bytes >= 0 &&
	    g->mem_used_bytes <= g->mem_total_bytes)
		g->mem_free_bytes = g->mem_total_bytes - g->mem_used_bytes;
	list->n++;
	return 0;
}

/* Reject bytes no text CSV holds: NUL and other control characters. */
static int check_text(const struct csv *c, const char *s, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++) {
		unsigned char b = (unsigned char)s[i];
		if ((b < 0x20 && b != '\t' && b != '\r') || b == 0x7f)
			return mgpu_err(MGPU_EFORMAT, "'%s' line %d: control character 0x%02x: "
					"not nvidia-smi CSV", c->name, c->line, b);
	}
	return 0;
}

static int parse_line(struct csv *c, const char *s, size_t len, struct mgpu_gpu_list *list,
		      int *seen_first, int *no_devices)
{
	struct span f[MAXFIELDS];
	int n;

	MGPU_TRY(check_text(c, s, len));
	if (trim(s, len).len == 0)
		return 0;
	n = split(s, len, f);
	if (n < 0)
		return mgpu_err(MGPU_EFORMAT, "'%s' line %d: more than %d fields", c->name, c->line,
				MAXFIELDS);
	if (*seen_first) {
		if (*no_devices)
			return mgpu_err(MGPU_EFORMAT, "'%s' line %d: text after 'No devices were found'",
					c->name, c->line);
		return parse_row(c, f, n, list);
	}
	*seen_first = 1;
	if (n == 1 && span_eq(f[0], "No devices were found")) {
		*no_devices = 1;
		return 0;
	}
	if (is_header(f))
		return parse_header(c, f, n);
	default_layout(c);
	return parse_row(c, f, n, list);
}

static void list_blank(struct mgpu_gpu_list *list, const char *source)
{
	memset(list, 0, sizeof *list);
	snprintf(list->source, sizeof list->source, "%s", source);
}

/* Sort by nvidia-smi index (PCI order) and number the GPUs 0.. */
static void number_gpus(struct mgpu_gpu_list *list)
{
	struct mgpu_gpu t;
	int i, j;

	for (i = 1; i < list->n; i++) {
		t = list->gpu[i];
		for (j = i; j > 0 && list->gpu[j - 1].smi_index > t.smi_index; j--)
			list->gpu[j] = list->gpu[j - 1];
		list->gpu[j] = t;
	}
	for (i = 0; i < list->n; i++)
		list->gpu[i].index = i;
	list->nvisible = list->n;
}

int mgpu_gpu_parse_smi_csv(const char *buf, size_t len, const char *name,
			   struct mgpu_gpu_list *list)
{
	struct csv c;
	size_t start = 0, i;
	int seen_first = 0, no_devices = 0;

	list_blank(list, "nvidia-smi csv");
	memset(&c, 0, sizeof c);
	c.name = name;
	for (i = 0; i <= len; i++) {
		if (i < len && buf[i] != '\n')
			continue;
		c.line++;
		MGPU_TRY(parse_line(&c, buf + start, i - start, list, &seen_first, &no_devices));
		start = i + 1;
	}
	if (!seen_first)
		return mgpu_err(MGPU_EFORMAT, "'%s': empty input, not the CSV of nvidia-smi "
				"--query-gpu=index,memory.total,... --format=csv", name);
	number_gpus(list);
	if (list->n == 0)
		snprintf(list->why, sizeof list->why, "'%s' lists no GPU%s", name,
			 no_devices ? " (No devices were found)" : "");
	return 0;
}

/* ---- CUDA_VISIBLE_DEVICES -------------------------------------------- */

/* The visible GPU (position in list) an entry names, or -1 with why. */
static int match_entry(const struct mgpu_gpu_list *list, struct span e, char *why, size_t len)
{
	long long v;
	int i, found = -1, nmatch = 0;

	if (e.len == 0) {
		snprintf(why, len, "is empty");
		return -1;
	}
	if (e.len >= 4 && strncasecmp(e.s, "MIG-", 4) == 0) {
		snprintf(why, len, "is a MIG instance, which mgpu does not select");
		return -1;
	}
	if (e.len >= 4 && strncasecmp(e.s, "GPU-", 4) == 0) {
		for (i = 0; i < list->nvisible; i++)
			if (strncasecmp(list->gpu[i].uuid, e.s, e.len) == 0 &&
			    strlen(list->gpu[i].uuid) >= e.len) {
				found = i;
				nmatch++;
			}
		if (nmatch == 1)
			return found;
		snprintf(why, len, nmatch ? "is ambiguous (%d GPUs match)" : "matches no GPU UUID",
			 nmatch);
		return -1;
	}
	if (digits(e, &v) != e.len || v >= list->nvisible) {
		snprintf(why, len, "is not a GPU ordinal (%d visible)", list->nvisible);
		return -1;
	}
	return (int)v;
}

int mgpu_gpu_apply_visible(struct mgpu_gpu_list *list, const char *spec)
{
	struct mgpu_gpu out[MGPU_GPU_MAX];
	char taken[MGPU_GPU_MAX], why[96];
	size_t len, start = 0, i;
	int k = 0, j, pos;

	if (!spec)
		return 0;
	memset(taken, 0, sizeof taken);
	len = strlen(spec);
	for (i = 0; i <= len && len > 0; i++) {
		struct span e;
		if (i < len && spec[i] != ',')
			continue;
		e = trim(spec + start, i - start);
		start = i + 1;
		pos = match_entry(list, e, why, sizeof why);
		if (pos >= 0 && taken[pos]) {
			snprintf(why, sizeof why, "names GPU %d a second time", pos);
			pos = -1;
		}
		if (pos < 0) {
			snprintf(list->note, sizeof list->note, "CUDA_VISIBLE_DEVICES='%.80s': entry "
				 "'%.*s' %s; CUDA ignores it and every entry after it", spec,
				 (int)(e.len > 40 ? 40 : e.len), e.s, why);
			break;
		}
		taken[pos] = 1;
		out[k++] = list->gpu[pos];
	}
	for (j = 0; j < k; j++)
		out[j].index = j;
	for (pos = 0; pos < list->n; pos++)
		if (pos >= list->nvisible || !taken[pos]) {
			out[j] = list->gpu[pos];
			out[j++].index = -1;
		}
	memcpy(list->gpu, out, (size_t)list->n * sizeof out[0]);
	list->nvisible = k;
	if (k == 0 && list->n > 0)
		snprintf(list->why, sizeof list->why, "CUDA_VISIBLE_DEVICES='%.80s' hides all %d GPUs",
			 spec, list->n);
	return 0;
}

/* ---- selection ---------------------------------------------------------- */

static double floor2(double x)
{
	return floor(x * 100) / 100;
}

void mgpu_gpu_exclusion(const struct mgpu_gpu *g, const struct mgpu_gpu_policy *p,
			char *buf, size_t len)
{
	double gb = (double)g->mem_total_bytes / GB;
	double used;

	buf[0] = '\0';
	if (g->index < 0)
		snprintf(buf, len, "hidden by CUDA_VISIBLE_DEVICES");
	else if (g->mem_total_bytes < 0)
		snprintf(buf, len, "total memory unknown");
	else if (gb < p->min_memory_gb)
		snprintf(buf, len, "%.2f GB memory < %g GB (--min-memory)", floor2(gb),
			 p->min_memory_gb);
	else if (!p->include_display && g->display_active == 1)
		snprintf(buf, len, "drives a display (--include-display)");
	else if (!p->include_display && g->watchdog == 1)
		snprintf(buf, len, "has a display watchdog (--include-display)");
	else if (p->max_used_pct >= 0 && g->mem_used_bytes >= 0 && g->mem_total_bytes > 0) {
		used = 100.0 * (double)g->mem_used_bytes / (double)g->mem_total_bytes;
		if (used > p->max_used_pct)
			snprintf(buf, len, "%.0f%% memory in use > %g%% (--max-used)", used,
				 p->max_used_pct);
	}
}

static int policy_check(const struct mgpu_gpu_policy *p)
{
	if (!isfinite(p->min_memory_gb) || p->min_memory_gb < 0)
		return mgpu_err(MGPU_EINVAL, "--min-memory: %g is not a size in GB", p->min_memory_gb);
	if (!isfinite(p->max_used_pct) || p->max_used_pct > 100)
		return mgpu_err(MGPU_EINVAL, "--max-used: %g is not a percentage", p->max_used_pct);
	if (p->count < 0)
		return mgpu_err(MGPU_EINVAL, "--count: %d is negative", p->count);
	return 0;
}

/* Does GPU a come before GPU b: more memory, then the lower ordinal. */
static int better(const struct mgpu_gpu *a, const struct mgpu_gpu *b)
{
	if (a->mem_total_bytes != b->mem_total_bytes)
		return a->mem_total_bytes > b->mem_total_bytes;
	return a->index < b->index;
}

int mgpu_gpu_select(const struct mgpu_gpu_list *list, const struct mgpu_gpu_policy *p,
		    struct mgpu_gpu_selection *sel)
{
	int i, j, t;

	MGPU_TRY(policy_check(p));
	memset(sel, 0, sizeof *sel);
	for (i = 0; i < list->n; i++) {
		mgpu_gpu_exclusion(&list->gpu[i], p, sel->reason[i], sizeof sel->reason[i]);
		if (sel->reason[i][0])
			continue;
		t = i;
		for (j = sel->n; j > 0 && better(&list->gpu[t], &list->gpu[sel->pick[j - 1]]); j--)
			sel->pick[j] = sel->pick[j - 1];
		sel->pick[j] = t;
		sel->n++;
	}
	sel->neligible = sel->n;
	if (p->count > 0 && sel->n > p->count) {
		for (j = p->count; j < sel->n; j++)
			snprintf(sel->reason[sel->pick[j]], sizeof sel->reason[0],
				 "not among the best %d (--count)", p->count);
		sel->n = p->count;
	}
	for (j = 0; j < sel->n; j++)
		sel->order[sel->pick[j]] = j + 1;
	return 0;
}

/* ---- --gpus ------------------------------------------------------------- */

static int visible_error(const char *what, const struct mgpu_gpu_list *list, int id)
{
	if (list->nvisible == 0)
		return mgpu_err(MGPU_ERANGE, "%s: GPU %d requested but 0 GPUs are visible: %s", what,
				id, list->why[0] ? list->why : "none found");
	return mgpu_err(MGPU_ERANGE, "%s: GPU %d requested but %d GPU%s visible (ordinals 0-%d)",
			what, id, list->nvisible, list->nvisible == 1 ? " is" : "s are",
			list->nvisible - 1);
}

int mgpu_gpu_repeated(const int *ids, int n)
{
	int i, j;

	for (i = 0; i < n; i++)
		for (j = 0; j < i; j++)
			if (ids[j] == ids[i])
				return ids[i];
	return -1;
}

/* Repeats first: whether they are allowed does not depend on the GPUs. */
static int check_ids(const char *what, const struct mgpu_gpu_list *list, const char *no_repeat,
		     const int *ids, int n)
{
	int i, r = mgpu_gpu_repeated(ids, n);

	if (no_repeat && r >= 0)
		return mgpu_err(MGPU_EINVAL, "%s: GPU %d listed twice%s%s", what, r,
				no_repeat[0] ? ": " : "", no_repeat);
	for (i = 0; i < n; i++)
		if (ids[i] >= list->nvisible)
			return visible_error(what, list, ids[i]);
	return 0;
}

static int resolve_auto(const struct mgpu_gpu_list *list, const struct mgpu_gpu_policy *p,
			int *ordinals, int max_n, int *n)
{
	struct mgpu_gpu_selection sel;
	struct mgpu_gpu_policy def;
	char why[512] = "";
	size_t o = 0;
	int i;

	if (!p) {
		mgpu_gpu_policy_init(&def);
		p = &def;
	}
	MGPU_TRY(mgpu_gpu_select(list, p, &sel));
	if (list->nvisible == 0)
		return mgpu_err(MGPU_ERANGE, "--gpus auto: no GPU is visible: %s",
				list->why[0] ? list->why : "none found");
	if (sel.n == 0) {
		for (i = 0; i < list->nvisible && o < sizeof why; i++)
			o += (size_t)snprintf(why + o, sizeof why - o, "%sGPU %d %s", i ? "; " : "",
					      i, sel.reason[i]);
		return mgpu_err(MGPU_ERANGE, "--gpus auto: none of the %d visible GPUs is eligible: %s",
				list->nvisible, why);
	}
	for (i = 0; i < sel.n && i < max_n; i++)
		ordinals[i] = list->gpu[sel.pick[i]].index;
	*n = i;
	return 0;
}

/* One line of ids from in, as `mgpu-probe --ids` prints it. */
static int resolve_stdin(FILE *in, const struct mgpu_gpu_list *list, const char *no_repeat,
			 int *ordinals, int max_n, int *n)
{
	char buf[4097];
	size_t len;

	if (!in)
		return mgpu_err(MGPU_EINVAL, "--gpus -: no input stream");
	len = fread(buf, 1, sizeof buf - 1, in);
	if (ferror(in))
		return mgpu_err_errno(MGPU_EIO, "--gpus -: cannot read standard input");
	if (len == sizeof buf - 1)
		return mgpu_err(MGPU_EFORMAT, "--gpus -: more than %zu bytes on standard input", len);
	buf[len] = '\0';
	if (len && buf[len - 1] == '\n')
		buf[--len] = '\0';
	if (len && buf[len - 1] == '\r')
		buf[--len] = '\0';
	if (len == 0)
		return mgpu_err(MGPU_EFORMAT, "--gpus -: no GPU ids on standard input "
				"(mgpu-probe --ids prints none when no GPU is eligible)");
	if (strlen(buf) != len || strchr(buf, '\n'))
		return mgpu_err(MGPU_EFORMAT, "--gpus -: standard input is not one line of GPU ids");
	if (mgpu_cli_int_list("--gpus -", buf, ordinals, max_n, n) < 0)
		return MGPU_EFORMAT;
	return check_ids("--gpus -", list, no_repeat, ordinals, *n);
}

static int resolve_any(const char *arg, FILE *in, const struct mgpu_gpu_list *list,
		       const struct mgpu_gpu_policy *p, const char *no_repeat, int *ordinals,
		       int max_n, int *n)
{
	int i;

	if (!arg || !arg[0])
		return mgpu_err(MGPU_EINVAL, "--gpus: empty argument");
	if (strcmp(arg, "auto") == 0)
		return resolve_auto(list, p, ordinals, max_n, n);
	if (strcmp(arg, "-") == 0)
		return resolve_stdin(in, list, no_repeat, ordinals, max_n, n);
	if (strcmp(arg, "all") == 0) {
		if (list->nvisible == 0)
			return mgpu_err(MGPU_ERANGE, "--gpus all: no GPU is visible: %s",
					list->why[0] ? list->why : "none found");
		for (i = 0; i < list->nvisible && i < max_n; i++)
			ordinals[i] = i;
		*n = i;
		return 0;
	}
	if (mgpu_cli_int_list("--gpus", arg, ordinals, max_n, n) < 0) {
		if (strstr(mgpu_errmsg(), "is not a list"))
			return mgpu_err(MGPU_EINVAL, "--gpus: '%s' is not a list of GPU ordinals, "
					"all, auto or -", arg);
		return MGPU_EINVAL;
	}
	return check_ids("--gpus", list, no_repeat, ordinals, *n);
}

int mgpu_gpu_resolve(const char *arg, FILE *in, const struct mgpu_gpu_list *list,
		     const struct mgpu_gpu_policy *p, const char *no_repeat, int *ordinals,
		     int max_n, int *n)
{
	int rc;

	*n = 0;
	rc = resolve_any(arg, in, list, p, no_repeat, ordinals, max_n, n);
	if (rc < 0)
		*n = 0;
	return rc;
}
