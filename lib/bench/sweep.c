/*
 * sweep.c - mgpu-bench train results: parsing mgpu-train's JSON Lines,
 * folding repeats, speedups, the table schemas and --compare (see sweep.h).
 */
#include "bench/sweep.h"

#include <inttypes.h> /* PRId64 */
#include <math.h>     /* NAN, isfinite */
#include <stdio.h>    /* snprintf */
#include <stdlib.h>   /* calloc, strtoll */
#include <string.h>   /* strcmp */

#include "bench/stats.h" /* mgpu_bench_median */
#include "core/err.h"    /* mgpu_err */
#include "core/json.h"   /* mgpu_json_parse */

struct parse_st {
	int64_t warmup, prev_step;
	double samples, secs;
	int got_summary;
};

static double num_of(const struct mgpu_json *o, const char *key)
{
	double v;

	if (mgpu_json_f64(mgpu_json_get(o, key), &v) < 0)
		return NAN;
	return v;
}

static void str_of(const struct mgpu_json *o, const char *key, char *dst, size_t cap)
{
	const char *s = mgpu_json_str(mgpu_json_get(o, key));
	snprintf(dst, cap, "%s", s ? s : "");
}

static int int_list(const struct mgpu_json *a, int64_t *out, int *n)
{
	size_t i;

	*n = 0;
	if (!a || a->type != MGPU_JSON_ARRAY)
		return MGPU_EFORMAT;
	for (i = 0; i < a->count && i < MGPU_BENCH_MAXDEV; i++)
		MGPU_TRY(mgpu_json_i64(&a->items[i], 0, INT64_MAX, &out[i]));
	*n = (int)i;
	return 0;
}

static void on_step(struct parse_st *st, const struct mgpu_json *o, struct mgpu_bench_run *run)
{
	double step = num_of(o, "step"), sps = num_of(o, "samples_per_s");
	double ms = num_of(o, "step_ms"), dt, k;

	if (!isfinite(step) || !isfinite(sps) || !isfinite(ms))
		return;
	k = step - (double)st->prev_step;
	if (st->prev_step >= st->warmup && k > 0) {
		dt = ms * 1e-3 * k;
		st->samples += sps * dt;
		st->secs += dt;
		run->steps_timed += (int64_t)k;
	}
	st->prev_step = (int64_t)step;
}

static int on_summary(const struct mgpu_json *o, struct mgpu_bench_run *run, const char *name,
		      int lineno)
{
	int n2;

	run->wall_s = num_of(o, "wall_s");
	run->steps = (int64_t)num_of(o, "step");
	run->effective_batch = (int64_t)num_of(o, "effective_batch");
	run->world = (int)num_of(o, "world_size");
	str_of(o, "mode", run->mode, sizeof run->mode);
	str_of(o, "sync_backend", run->sync, sizeof run->sync);
	if (int_list(mgpu_json_get(o, "peak_bytes"), run->peak_bytes, &run->ndev) < 0 ||
	    int_list(mgpu_json_get(o, "rss_bytes"), run->rss_bytes, &n2) < 0 ||
	    !isfinite(run->wall_s))
		return mgpu_err(MGPU_EFORMAT, "'%s': line %d: summary record lacks wall_s, "
				"peak_bytes or rss_bytes", name, lineno);
	return 0;
}

static int one_line(struct parse_st *st, const char *line, size_t len, const char *name,
		    int lineno, struct mgpu_bench_run *run)
{
	struct mgpu_json_doc doc;
	const char *kind;
	int rc = 0;

	if (mgpu_json_parse(line, len, name, &doc) < 0)
		return mgpu_err_prefix(MGPU_EFORMAT, "line %d", lineno);
	kind = mgpu_json_str(mgpu_json_get(doc.root, "kind"));
	if (kind && strcmp(kind, "step") == 0)
		on_step(st, doc.root, run);
	else if (kind && strcmp(kind, "summary") == 0) {
		rc = on_summary(doc.root, run, name, lineno);
		st->got_summary = 1;
	}
	mgpu_json_free(&doc);
	return rc;
}

int mgpu_bench_run_parse(const char *text, size_t len, int64_t warmup_steps, const char *name,
			 struct mgpu_bench_run *run)
{
	struct parse_st st = { .warmup = warmup_steps };
	size_t i = 0, j;
	int lineno = 0;

	memset(run, 0, sizeof *run);
	while (i < len) {
		for (j = i; j < len && text[j] != '\n'; j++)
			;
		lineno++;
		if (j > i)
			MGPU_TRY(one_line(&st, text + i, j - i, name, lineno, run));
		i = j + 1;
	}
	if (!st.got_summary)
		return mgpu_err(MGPU_EFORMAT, "'%s': no summary record", name);
	run->warmup_used = warmup_steps;
	/* small data: fewer steps than the warm-up; time the second half */
	if (!(st.secs > 0) && warmup_steps > 0 && run->steps >= 2 && run->steps <= warmup_steps)
		return mgpu_bench_run_parse(text, len, run->steps / 2, name, run);
	if (!(st.secs > 0))
		return mgpu_err(MGPU_EINVAL, "'%s': no step was timed after the %lld warm-up "
				"steps (%lld run): raise --max-steps or lower --warmup-steps",
				name, (long long)warmup_steps, (long long)run->steps);
	run->samples_per_s = st.samples / st.secs;
	return 0;
}

void mgpu_bench_label(struct mgpu_bench_trow *r, unsigned show)
{
	int gpu = strcmp(r->kind, "gpu") == 0, nodes = r->nodes > 1 ? r->nodes : 1;
	int per = r->devices / nodes, dtype = (show & MGPU_BENCH_LABEL_DTYPE) && r->dtype[0];
	const char *unit = gpu ? "device" : "CPU rank";
	char extra[80] = "", where[24] = "", link[48] = "";

	if (nodes > 1)
		snprintf(where, sizeof where, "%d nodes x ", nodes);
	if (nodes > 1 && r->link_rate[0])
		snprintf(link, sizeof link, ", %.31s", r->link_rate);
	if (nodes > 1 && r->link_delay_ms > 0)
		snprintf(link + strlen(link), sizeof link - strlen(link), ", +%gms",
			 r->link_delay_ms);
	if (r->devices > 1) {
		int sync = (show & MGPU_BENCH_LABEL_SYNC) && r->sync[0];
		snprintf(extra, sizeof extra, " (%s%s%s%s%s%s)",
			 strcmp(r->mode, "dp") == 0 ? "DP" : "DDP", sync ? ", " : "",
			 sync ? r->sync : "", link, dtype ? ", " : "", dtype ? r->dtype : "");
	} else if (dtype) {
		snprintf(extra, sizeof extra, " (%s)", r->dtype);
	}
	snprintf(r->config, sizeof r->config, "%s%d %s%s%s", where, per, unit, per > 1 ? "s" : "",
		 extra);
}

/* "--dtype", "--dtype=V" or an abbreviation getopt_long takes for it (no
 * other mgpu-train option starts with "dt"): 1, and *val the value when
 * it is in the word. */
static int dtype_word(const char *w, const char **val)
{
	size_t n;

	if (strncmp(w, "--dt", 4) != 0)
		return 0;
	n = strcspn(w + 2, "=");
	if (strncmp(w + 2, "dtype", n) != 0 || n > 5)
		return 0;
	*val = w[2 + n] == '=' ? w + 3 + n : NULL;
	return 1;
}

const char *mgpu_bench_argv_dtype(const char *const *argv)
{
	const char *v = NULL, *in;
	int i;

	for (i = 0; argv[i]; i++)
		if (dtype_word(argv[i], &in))
			v = in ? in : argv[i + 1];
	return v;
}

int mgpu_bench_show_dtype(const struct mgpu_bench_trow *rows, int n)
{
	int i;

	for (i = 0; i < n; i++)
		if (rows[i].dtype[0] && strcmp(rows[i].dtype, "fp32") != 0)
			return 1;
	return 0;
}

/* Per device: the mean of the runs' utilisations (unknown ones left out)
 * and the most memory any run had in use. */
static void fold_gpumon(struct mgpu_bench_trow *r, const struct mgpu_bench_run *runs, int k)
{
	int i, d, m;
	double sum;

	r->ngpumon = 0;
	for (i = 0; i < k; i++)
		r->ngpumon = runs[i].ngpumon > r->ngpumon ? runs[i].ngpumon : r->ngpumon;
	for (d = 0; d < r->ngpumon; d++) {
		r->gpu_mem_used_bytes[d] = -1;
		for (i = 0, m = 0, sum = 0; i < k; i++) {
			if (d >= runs[i].ngpumon)
				continue;
			if (isfinite(runs[i].gpu_util_pct[d])) {
				sum += runs[i].gpu_util_pct[d];
				m++;
			}
			if (runs[i].gpu_mem_used_bytes[d] > r->gpu_mem_used_bytes[d])
				r->gpu_mem_used_bytes[d] = runs[i].gpu_mem_used_bytes[d];
		}
		r->gpu_util_pct[d] = m ? sum / m : NAN;
	}
}

void mgpu_bench_trow_fold(struct mgpu_bench_trow *r, const struct mgpu_bench_run *runs, int n)
{
	double thr[256], wall[256];
	int i, k = n < 256 ? n : 256;

	r->repeats = n;
	r->samples_per_s = r->samples_per_s_min = r->samples_per_s_max = r->wall_s = NAN;
	if (k <= 0)
		return;
	for (i = 0; i < k; i++) {
		thr[i] = runs[i].samples_per_s;
		wall[i] = runs[i].wall_s;
	}
	r->samples_per_s = mgpu_bench_median(thr, k);
	r->samples_per_s_min = thr[0];
	r->samples_per_s_max = thr[k - 1];
	r->wall_s = mgpu_bench_median(wall, k);
	r->steps = runs[k - 1].steps;
	for (i = 0; i < k; i++) /* the fewest steps any repeat left out */
		if (runs[i].warmup_used < r->warmup_steps)
			r->warmup_steps = (int)runs[i].warmup_used;
	r->effective_batch = runs[k - 1].effective_batch;
	r->ndev = runs[k - 1].ndev;
	memcpy(r->peak_bytes, runs[k - 1].peak_bytes, sizeof r->peak_bytes);
	memcpy(r->rss_bytes, runs[k - 1].rss_bytes, sizeof r->rss_bytes);
	fold_gpumon(r, runs, k);
	if (!r->sync[0])
		snprintf(r->sync, sizeof r->sync, "%s", runs[k - 1].sync);
}

void mgpu_bench_trows_finish(struct mgpu_bench_trow *rows, int n)
{
	int i, j;

	for (i = 0; i < n; i++) {
		double base = NAN;
		for (j = 0; j < n; j++)
			if (rows[j].devices == 1 && !rows[j].error[0] &&
			    strcmp(rows[j].kind, rows[i].kind) == 0 &&
			    strcmp(rows[j].dtype, rows[i].dtype) == 0) {
				base = rows[j].samples_per_s;
				break;
			}
		mgpu_bench_speedup(rows[i].error[0] ? NAN : rows[i].samples_per_s, base,
				   rows[i].devices, &rows[i].speedup, &rows[i].efficiency);
	}
}

static const char *const tcols[] = {
	"config", "kind", "devices", "mode", "sync_backend", "repeats", "warmup_steps",
	"samples_per_s", "samples_per_s_min", "samples_per_s_max", "spread_pct", "wall_s",
	"speedup", "efficiency", "effective_batch", "peak_bytes", "rss_bytes", "status",
	"error", "command", "blas_core", "blas_threads", "gpu_util_pct", "gpu_mem_used_bytes",
	"nodes", "link_rate", "link_delay_ms",
	"ctx", "tokens_per_s", "flops_per_token", "peak_flops", "mfu", "mem_estimate_bytes",
	"peak_how", "dtype", /* new columns go last: saved tables keep theirs */
};
static const int ttypes[] = {
	MGPU_TAB_STR, MGPU_TAB_STR, MGPU_TAB_NUM, MGPU_TAB_STR, MGPU_TAB_STR, MGPU_TAB_NUM,
	MGPU_TAB_NUM, MGPU_TAB_NUM, MGPU_TAB_NUM, MGPU_TAB_NUM, MGPU_TAB_NUM, MGPU_TAB_NUM,
	MGPU_TAB_NUM, MGPU_TAB_NUM, MGPU_TAB_NUM, MGPU_TAB_LIST, MGPU_TAB_LIST, MGPU_TAB_STR,
	MGPU_TAB_STR, MGPU_TAB_STR, MGPU_TAB_STR, MGPU_TAB_NUM, MGPU_TAB_LIST, MGPU_TAB_LIST,
	MGPU_TAB_NUM, MGPU_TAB_STR, MGPU_TAB_NUM,
	MGPU_TAB_NUM, MGPU_TAB_NUM, MGPU_TAB_NUM, MGPU_TAB_NUM, MGPU_TAB_NUM, MGPU_TAB_NUM,
	MGPU_TAB_STR, MGPU_TAB_STR,
};
_Static_assert(sizeof tcols / sizeof tcols[0] == sizeof ttypes / sizeof ttypes[0],
	       "a type for every column");

static int set_list(struct mgpu_tab *t, size_t r, const char *col, const int64_t *v, int n)
{
	char buf[MGPU_BENCH_MAXDEV * 21];
	size_t o = 0;
	int i;

	if (n == 0)
		return mgpu_tab_set(t, r, col, NULL);
	for (i = 0; i < n; i++)
		o += (size_t)snprintf(buf + o, sizeof buf - o, "%s%" PRId64, i ? "," : "", v[i]);
	return mgpu_tab_set(t, r, col, buf);
}

static int64_t max_of(const int64_t *v, int n)
{
	int64_t m = -1;
	int i;

	for (i = 0; i < n; i++)
		m = v[i] > m ? v[i] : m;
	return m;
}

/* A list of n utilisations ("97.5,96"), or missing when none is known. */
static int set_util_list(struct mgpu_tab *t, size_t r, const char *col, const double *v, int n)
{
	char buf[MGPU_BENCH_MAXDEV * 12];
	size_t o = 0;
	int i, known = 0;

	for (i = 0; i < n; i++) {
		known += isfinite(v[i]) != 0;
		/* JSON lists must stay numbers: an unknown device reads -1 */
		o += (size_t)snprintf(buf + o, sizeof buf - o, "%s%.4g", i ? "," : "",
				      isfinite(v[i]) ? v[i] : -1.0);
	}
	return mgpu_tab_set(t, r, col, known ? buf : NULL);
}

/* The gpt columns (NA for an mlp, or what is unknown). */
static int put_lm(struct mgpu_tab *t, size_t i, const struct mgpu_bench_trow *r)
{
	if (r->ctx <= 0)
		return 0;
	MGPU_TRY(mgpu_tab_setf(t, i, "ctx", "%d", r->ctx));
	MGPU_TRY(mgpu_tab_num(t, i, "tokens_per_s", r->tokens_per_s, 6));
	MGPU_TRY(mgpu_tab_num(t, i, "flops_per_token", r->flops_per_token, 6));
	MGPU_TRY(mgpu_tab_num(t, i, "peak_flops", r->peak_flops, 6));
	MGPU_TRY(mgpu_tab_num(t, i, "mfu", r->mfu, 4));
	if (r->mem_est_bytes > 0)
		MGPU_TRY(mgpu_tab_setf(t, i, "mem_estimate_bytes", "%" PRId64, r->mem_est_bytes));
	return mgpu_tab_set(t, i, "peak_how", r->peak_how[0] ? r->peak_how : NULL);
}

static int put_trow(struct mgpu_tab *t, size_t i, const struct mgpu_bench_trow *r)
{
	int ok = !r->error[0];

	MGPU_TRY(mgpu_tab_set(t, i, "config", r->config));
	MGPU_TRY(mgpu_tab_set(t, i, "dtype", r->dtype[0] ? r->dtype : NULL));
	MGPU_TRY(mgpu_tab_set(t, i, "kind", r->kind));
	MGPU_TRY(mgpu_tab_setf(t, i, "devices", "%d", r->devices));
	MGPU_TRY(mgpu_tab_setf(t, i, "nodes", "%d", r->nodes > 1 ? r->nodes : 1));
	MGPU_TRY(mgpu_tab_set(t, i, "link_rate", r->link_rate[0] ? r->link_rate : NULL));
	MGPU_TRY(mgpu_tab_num(t, i, "link_delay_ms", r->link_delay_ms > 0 ? r->link_delay_ms :
			      NAN, 6));
	MGPU_TRY(mgpu_tab_set(t, i, "mode", r->mode[0] ? r->mode : NULL));
	MGPU_TRY(mgpu_tab_set(t, i, "sync_backend", r->sync[0] ? r->sync : NULL));
	MGPU_TRY(mgpu_tab_setf(t, i, "repeats", "%d", r->repeats));
	MGPU_TRY(mgpu_tab_setf(t, i, "warmup_steps", "%d", r->warmup_steps));
	MGPU_TRY(mgpu_tab_num(t, i, "samples_per_s", r->samples_per_s, 6));
	MGPU_TRY(mgpu_tab_num(t, i, "samples_per_s_min", r->samples_per_s_min, 6));
	MGPU_TRY(mgpu_tab_num(t, i, "samples_per_s_max", r->samples_per_s_max, 6));
	MGPU_TRY(mgpu_tab_num(t, i, "spread_pct", mgpu_bench_spread_pct(r->samples_per_s_min,
				r->samples_per_s_max, r->samples_per_s), 3));
	MGPU_TRY(mgpu_tab_num(t, i, "wall_s", r->wall_s, 5));
	MGPU_TRY(mgpu_tab_num(t, i, "speedup", r->speedup, 4));
	MGPU_TRY(mgpu_tab_num(t, i, "efficiency", r->efficiency, 4));
	if (r->effective_batch > 0)
		MGPU_TRY(mgpu_tab_setf(t, i, "effective_batch", "%" PRId64, r->effective_batch));
	MGPU_TRY(set_list(t, i, "peak_bytes", r->peak_bytes, r->ndev));
	MGPU_TRY(set_list(t, i, "rss_bytes", r->rss_bytes, r->ndev));
	MGPU_TRY(mgpu_tab_set(t, i, "status", ok ? "ok" : "error"));
	MGPU_TRY(mgpu_tab_set(t, i, "error", ok ? NULL : r->error));
	MGPU_TRY(mgpu_tab_set(t, i, "blas_core", r->blas_core[0] ? r->blas_core : NULL));
	if (r->blas_threads > 0)
		MGPU_TRY(mgpu_tab_setf(t, i, "blas_threads", "%d", r->blas_threads));
	MGPU_TRY(set_util_list(t, i, "gpu_util_pct", r->gpu_util_pct, r->ngpumon));
	MGPU_TRY(set_list(t, i, "gpu_mem_used_bytes", r->gpu_mem_used_bytes,
			  max_of(r->gpu_mem_used_bytes, r->ngpumon) >= 0 ? r->ngpumon : 0));
	MGPU_TRY(put_lm(t, i, r));
	return mgpu_tab_set(t, i, "command", r->command);
}

/* A row of the made table t per rows[i], through put; t is freed on failure. */
static int put_rows(struct mgpu_tab *t, const struct mgpu_bench_trow *rows, int n,
		    int (*put)(struct mgpu_tab *, size_t, const struct mgpu_bench_trow *))
{
	int i, rc;

	for (i = 0; i < n; i++) {
		MGPU_CHECK(mgpu_tab_add_row(t));
		MGPU_CHECK(put(t, t->nrows - 1, &rows[i]));
	}
	return 0;
out:
	mgpu_tab_free(t);
	return rc;
}

int mgpu_bench_trows_tab(const struct mgpu_bench_trow *rows, int n, struct mgpu_tab *t)
{
	MGPU_TRY(mgpu_tab_init(t, tcols, ttypes, (int)(sizeof tcols / sizeof tcols[0])));
	return put_rows(t, rows, n, put_trow);
}

/* A comma list of integers >= min (-1 marks an unknown value where allowed). */
static int get_list(const char *s, int64_t *v, int *n, int64_t min)
{
	char *end;

	*n = 0;
	if (!s)
		return 0;
	while (*n < MGPU_BENCH_MAXDEV) {
		v[*n] = strtoll(s, &end, 10);
		if (end == s || v[*n] < min)
			return MGPU_EFORMAT;
		(*n)++;
		if (*end == '\0')
			return 0;
		if (*end != ',')
			return MGPU_EFORMAT;
		s = end + 1;
	}
	return MGPU_EFORMAT;
}

static int get_dlist(const char *s, double *v, int *n)
{
	char *end;

	*n = 0;
	if (!s)
		return 0;
	while (*n < MGPU_BENCH_MAXDEV) {
		v[*n] = strtod(s, &end);
		if (end == s || !isfinite(v[*n]))
			return MGPU_EFORMAT;
		if (v[*n] < 0)
			v[*n] = NAN;
		(*n)++;
		if (*end == '\0')
			return 0;
		if (*end != ',')
			return MGPU_EFORMAT;
		s = end + 1;
	}
	return MGPU_EFORMAT;
}

static void get_str(const struct mgpu_tab *t, size_t i, const char *col, char *dst, size_t cap)
{
	const char *s = mgpu_tab_get(t, i, col);
	snprintf(dst, cap, "%s", s ? s : "");
}

static void get_lm(const struct mgpu_tab *t, size_t i, struct mgpu_bench_trow *r)
{
	double ctx = mgpu_tab_getnum(t, i, "ctx"), est = mgpu_tab_getnum(t, i, "mem_estimate_bytes");

	r->ctx = isfinite(ctx) && ctx > 0 ? (int)ctx : 0;
	r->tokens_per_s = mgpu_tab_getnum(t, i, "tokens_per_s");
	r->flops_per_token = mgpu_tab_getnum(t, i, "flops_per_token");
	r->peak_flops = mgpu_tab_getnum(t, i, "peak_flops");
	r->mfu = mgpu_tab_getnum(t, i, "mfu");
	r->mem_est_bytes = isfinite(est) && est >= 0 ? (int64_t)est : -1;
	get_str(t, i, "peak_how", r->peak_how, sizeof r->peak_how);
}

/* The row's dtype: its column, or in a table saved before there was one,
 * what its command asks mgpu-train for. */
static void get_dtype(const struct mgpu_tab *t, size_t i, struct mgpu_bench_trow *r)
{
	char cmd[MGPU_BENCH_CMD], *argv[256];
	const char *v = NULL;
	int argc;

	get_str(t, i, "dtype", r->dtype, sizeof r->dtype);
	if (r->dtype[0])
		return;
	snprintf(cmd, sizeof cmd, "%s", r->command);
	if (mgpu_bench_split_command(cmd, argv, 256, &argc) == 0)
		v = mgpu_bench_argv_dtype((const char *const *)argv);
	snprintf(r->dtype, sizeof r->dtype, "%s", v ? v : "fp32");
}

static int get_trow(const struct mgpu_tab *t, size_t i, const char *name,
		    struct mgpu_bench_trow *r)
{
	double dev = mgpu_tab_getnum(t, i, "devices"), nodes = mgpu_tab_getnum(t, i, "nodes");
	double delay = mgpu_tab_getnum(t, i, "link_delay_ms");
	int n2;

	get_str(t, i, "config", r->config, sizeof r->config);
	get_str(t, i, "kind", r->kind, sizeof r->kind);
	get_str(t, i, "mode", r->mode, sizeof r->mode);
	get_str(t, i, "sync_backend", r->sync, sizeof r->sync);
	get_str(t, i, "error", r->error, sizeof r->error);
	get_str(t, i, "command", r->command, sizeof r->command);
	get_str(t, i, "blas_core", r->blas_core, sizeof r->blas_core);
	r->blas_threads = isfinite(mgpu_tab_getnum(t, i, "blas_threads")) ?
		(int)mgpu_tab_getnum(t, i, "blas_threads") : 0;
	if (!r->config[0] || !r->command[0] || !(dev >= 1 && dev <= MGPU_BENCH_MAXDEV))
		return mgpu_err(MGPU_EFORMAT, "'%s': row %zu lacks config, devices or command",
				name, i + 1);
	r->devices = (int)dev;
	/* tables saved before nodes existed ran on one */
	r->nodes = isfinite(nodes) && nodes >= 1 && nodes <= dev ? (int)nodes : 1;
	get_str(t, i, "link_rate", r->link_rate, sizeof r->link_rate);
	r->link_delay_ms = isfinite(delay) && delay > 0 ? delay : 0;
	r->repeats = (int)mgpu_tab_getnum(t, i, "repeats");
	r->warmup_steps = (int)mgpu_tab_getnum(t, i, "warmup_steps");
	r->samples_per_s = mgpu_tab_getnum(t, i, "samples_per_s");
	r->samples_per_s_min = mgpu_tab_getnum(t, i, "samples_per_s_min");
	r->samples_per_s_max = mgpu_tab_getnum(t, i, "samples_per_s_max");
	r->wall_s = mgpu_tab_getnum(t, i, "wall_s");
	r->speedup = mgpu_tab_getnum(t, i, "speedup");
	r->efficiency = mgpu_tab_getnum(t, i, "efficiency");
	r->effective_batch = (int64_t)mgpu_tab_getnum(t, i, "effective_batch");
	if (get_list(mgpu_tab_get(t, i, "peak_bytes"), r->peak_bytes, &r->ndev, 0) < 0 ||
	    get_list(mgpu_tab_get(t, i, "rss_bytes"), r->rss_bytes, &n2, 0) < 0)
		return mgpu_err(MGPU_EFORMAT, "'%s': row %zu: bad peak_bytes or rss_bytes list",
				name, i + 1);
	if (get_dlist(mgpu_tab_get(t, i, "gpu_util_pct"), r->gpu_util_pct, &r->ngpumon) < 0 ||
	    get_list(mgpu_tab_get(t, i, "gpu_mem_used_bytes"), r->gpu_mem_used_bytes, &n2, -1) < 0)
		return mgpu_err(MGPU_EFORMAT, "'%s': row %zu: bad gpu_util_pct or "
				"gpu_mem_used_bytes list", name, i + 1);
	get_lm(t, i, r);
	get_dtype(t, i, r);
	if (r->repeats < 1)
		r->repeats = 1;
	if (r->warmup_steps < 0)
		r->warmup_steps = 0;
	return 0;
}

int mgpu_bench_trows_from_tab(const struct mgpu_tab *t, const char *name,
			      struct mgpu_bench_trow **rows, int *n)
{
	size_t i;
	int rc = 0;

	*rows = NULL;
	*n = 0;
	if (mgpu_tab_col(t, "config") < 0 || mgpu_tab_col(t, "command") < 0 ||
	    mgpu_tab_col(t, "samples_per_s") < 0)
		return mgpu_err(MGPU_EFORMAT, "'%s': not an mgpu-bench train table (no config, "
				"command or samples_per_s column)", name);
	if (t->nrows == 0)
		return mgpu_err(MGPU_EFORMAT, "'%s': no rows", name);
	*rows = calloc(t->nrows, sizeof **rows);
	if (!*rows)
		return mgpu_err(MGPU_ENOMEM, "'%s': out of memory", name);
	for (i = 0; i < t->nrows; i++)
		MGPU_CHECK(get_trow(t, i, name, &(*rows)[i]));
	*n = (int)t->nrows;
out:
	if (rc < 0) {
		free(*rows);
		*rows = NULL;
	}
	return rc;
}

/* The last two only when a row is a gpt's. The third is the wall time of
 * a run: every row runs the same steps, so it is no epoch time (more
 * devices train on more samples in it); its name says how many steps
 * (time_col). */
static char time_col[48] = "Time of the Steps (s)";
static const char *const scols[] = { "Configuration", "Throughput (samples/s)", time_col,
				     "Speedup", "Efficiency", "Tokens/s", "MFU" };

/* "Time for 200 Steps (s)" when every row ran that many, else "Time of
 * the Steps (s)". */
static void name_time_col(const struct mgpu_bench_trow *rows, int n)
{
	int64_t steps = 0;
	int i;

	for (i = 0; i < n; i++) {
		if (rows[i].error[0])
			continue;
		if (rows[i].steps <= 0 || (steps && rows[i].steps != steps)) {
			steps = -1;
			break;
		}
		steps = rows[i].steps;
	}
	if (steps > 0)
		snprintf(time_col, sizeof time_col, "Time for %lld Steps (s)", (long long)steps);
	else
		snprintf(time_col, sizeof time_col, "Time of the Steps (s)");
}
static const int stypes[] = { MGPU_TAB_STR, MGPU_TAB_NUM, MGPU_TAB_NUM, MGPU_TAB_NUM,
			      MGPU_TAB_NUM, MGPU_TAB_NUM, MGPU_TAB_NUM };

static int any_lm(const struct mgpu_bench_trow *rows, int n)
{
	int i;

	for (i = 0; i < n; i++)
		if (rows[i].ctx > 0)
			return 1;
	return 0;
}

static int put_lm_cells(struct mgpu_tab *t, size_t i, const struct mgpu_bench_trow *r)
{
	if (r->ctx <= 0 || r->error[0])
		return 0;
	MGPU_TRY(mgpu_tab_setf(t, i, scols[5], "%.0f", r->tokens_per_s));
	if (isfinite(r->mfu))
		MGPU_TRY(mgpu_tab_setf(t, i, scols[6], "%.*f%%", r->mfu < 0.01 ? 2 : 1,
				       100 * r->mfu));
	return 0;
}

static int put_speedup_row(struct mgpu_tab *t, size_t i, const struct mgpu_bench_trow *r)
{
	double sp = mgpu_bench_spread_pct(r->samples_per_s_min, r->samples_per_s_max,
					  r->samples_per_s);

	MGPU_TRY(mgpu_tab_set(t, i, scols[0], r->config));
	MGPU_TRY(put_lm_cells(t, i, r));
	if (r->error[0]) /* the message goes below the table, once */
		return mgpu_tab_set(t, i, scols[1], "failed");
	if (r->repeats > 1 && isfinite(sp))
		MGPU_TRY(mgpu_tab_setf(t, i, scols[1], "%.0f ± %.1f%%", r->samples_per_s, sp));
	else
		MGPU_TRY(mgpu_tab_setf(t, i, scols[1], "%.0f", r->samples_per_s));
	MGPU_TRY(mgpu_tab_setf(t, i, scols[2], "%.2f", r->wall_s));
	if (isfinite(r->speedup)) {
		MGPU_TRY(mgpu_tab_setf(t, i, scols[3], "%.2fx", r->speedup));
		MGPU_TRY(mgpu_tab_setf(t, i, scols[4], "%.0f%%", 100 * r->efficiency));
	}
	return 0;
}

int mgpu_bench_speedup_tab(const struct mgpu_bench_trow *rows, int n, struct mgpu_tab *t)
{
	name_time_col(rows, n);
	MGPU_TRY(mgpu_tab_init(t, scols, stypes, any_lm(rows, n) ? 7 : 5));
	return put_rows(t, rows, n, put_speedup_row);
}

/* The memory table's estimate column: whether any row has one. */
static int any_estimate(const struct mgpu_bench_trow *rows, int n)
{
	int i;

	for (i = 0; i < n; i++)
		if (rows[i].ctx > 0 && rows[i].mem_est_bytes > 0 && !rows[i].error[0])
			return 1;
	return 0;
}

#define EST_COL "Estimate (MiB)"

/* The leading cells of a per-device row: devices, mode, and the dtype and
 * estimate where those columns are. */
static int put_dev_head(struct mgpu_tab *t, size_t i, const struct mgpu_bench_trow *r,
			int dtype, int est)
{
	MGPU_TRY(mgpu_tab_setf(t, i, "Devices", "%d", r->devices));
	MGPU_TRY(mgpu_tab_set(t, i, "Mode", r->devices == 1 ? "-" :
			      strcmp(r->mode, "dp") == 0 ? "DP" : "DDP"));
	if (dtype)
		MGPU_TRY(mgpu_tab_set(t, i, "Dtype", r->dtype[0] ? r->dtype : "-"));
	if (est && r->ctx > 0 && r->mem_est_bytes > 0)
		MGPU_TRY(mgpu_tab_setf(t, i, EST_COL, "%.1f", (double)r->mem_est_bytes / (1 << 20)));
	return 0;
}

/* One row per configuration, one column per device: peak MiB, or (util)
 * mean GPU utilisation of the sampled rows. */
static int per_dev_tab(const struct mgpu_bench_trow *rows, int n, struct mgpu_tab *t, int util)
{
	char names[MGPU_BENCH_MAXDEV][16];
	const char *cols[MGPU_BENCH_MAXDEV + 4];
	int types[MGPU_BENCH_MAXDEV + 4], i, d, maxdev = 1, rc, nd, est, dtype, c0 = 0;

	for (i = 0; i < n; i++) {
		nd = util ? rows[i].ngpumon : rows[i].ndev;
		maxdev = nd > maxdev ? nd : maxdev;
	}
	est = !util && any_estimate(rows, n);
	dtype = mgpu_bench_show_dtype(rows, n);
	cols[c0] = "Devices", types[c0++] = MGPU_TAB_NUM;
	cols[c0] = "Mode", types[c0++] = MGPU_TAB_STR;
	if (dtype)
		cols[c0] = "Dtype", types[c0++] = MGPU_TAB_STR;
	if (est)
		cols[c0] = EST_COL, types[c0++] = MGPU_TAB_NUM;
	for (d = 0; d < maxdev; d++) {
		if (snprintf(names[d], sizeof names[d], "dev %d (%s)", d, util ? "%" : "MiB") >=
		    (int)sizeof names[d])
			return mgpu_err(MGPU_EINVAL, "memory table: device %d", d);
		cols[d + c0] = names[d];
		types[d + c0] = MGPU_TAB_NUM;
	}
	MGPU_TRY(mgpu_tab_init(t, cols, types, maxdev + c0));
	for (i = 0; i < n; i++) {
		const struct mgpu_bench_trow *r = &rows[i];
		nd = util ? r->ngpumon : r->ndev;
		if (r->error[0] || nd == 0)
			continue;
		MGPU_CHECK(mgpu_tab_add_row(t));
		MGPU_CHECK(put_dev_head(t, t->nrows - 1, r, dtype, est));
		for (d = 0; d < maxdev; d++)
			MGPU_CHECK(d >= nd ? mgpu_tab_set(t, t->nrows - 1, names[d], "-") : util ?
				   mgpu_tab_num(t, t->nrows - 1, names[d], r->gpu_util_pct[d], 3) :
				   mgpu_tab_setf(t, t->nrows - 1, names[d], "%.1f",
						 (double)r->peak_bytes[d] / (1 << 20)));
	}
	return 0;
out:
	mgpu_tab_free(t);
	return rc;
}

int mgpu_bench_memory_tab(const struct mgpu_bench_trow *rows, int n, struct mgpu_tab *t)
{
	return per_dev_tab(rows, n, t, 0);
}

int mgpu_bench_util_tab(const struct mgpu_bench_trow *rows, int n, struct mgpu_tab *t)
{
	return per_dev_tab(rows, n, t, 1);
}

static int64_t max_peak(const struct mgpu_bench_trow *r)
{
	int64_t m = -1;
	int d;

	for (d = 0; d < r->ndev; d++)
		m = r->peak_bytes[d] > m ? r->peak_bytes[d] : m;
	return m;
}

static void add_reg(struct mgpu_bench_regression *out, int max, int *n, const char *config,
		    const char *what)
{
	if (*n < max) {
		snprintf(out[*n].config, sizeof out[*n].config, "%s", config);
		snprintf(out[*n].what, sizeof out[*n].what, "%s", what);
	}
	(*n)++;
}

static void compare_one(const struct mgpu_bench_trow *o, const struct mgpu_bench_trow *w,
			double tol, struct mgpu_bench_regression *out, int max, int *n)
{
	char what[256];
	int64_t po, pw;

	if (!w) {
		add_reg(out, max, n, o->config, "not measured again");
		return;
	}
	po = max_peak(o);
	pw = max_peak(w);
	if (w->error[0]) {
		snprintf(what, sizeof what, "failed: %.200s", w->error);
		add_reg(out, max, n, o->config, what);
		return;
	}
	if (mgpu_bench_slower(o->samples_per_s, w->samples_per_s, tol)) {
		snprintf(what, sizeof what, "samples_per_s %.6g -> %.6g (%+.1f%%, tolerance %.3g%%)",
			 o->samples_per_s, w->samples_per_s,
			 100 * (w->samples_per_s / o->samples_per_s - 1), 100 * tol);
		add_reg(out, max, n, o->config, what);
	}
	if (po >= 0 && pw >= 0 && mgpu_bench_bigger((double)po, (double)pw, tol)) {
		snprintf(what, sizeof what, "peak_bytes %lld -> %lld (%+.1f%%, tolerance %.3g%%)",
			 (long long)po, (long long)pw, 100 * ((double)pw / (double)po - 1),
			 100 * tol);
		add_reg(out, max, n, o->config, what);
	}
}

void mgpu_bench_compare(const struct mgpu_bench_trow *old_rows, int nold,
			const struct mgpu_bench_trow *new_rows, int nnew, double tol,
			struct mgpu_bench_regression *out, int max, int *n)
{
	int i, j;

	*n = 0;
	for (i = 0; i < nold; i++) {
		const struct mgpu_bench_trow *w = NULL;
		for (j = 0; j < nnew && !w; j++)
			if (strcmp(old_rows[i].config, new_rows[j].config) == 0)
				w = &new_rows[j];
		compare_one(&old_rows[i], w, tol, out, max, n);
	}
}

/* A word needs quotes unless it is made only of these. */
static int plain(const char *s)
{
	if (!*s)
		return 0;
	for (; *s; s++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
			    "-_./:=,+@%", *s))
			return 0;
	return 1;
}

int mgpu_bench_quote_argv(char *const *argv, char *buf, size_t cap)
{
	size_t o = 0;
	int i;
	const char *p;

	for (i = 0; argv[i]; i++) {
		if (i && o < cap)
			buf[o++] = ' ';
		if (plain(argv[i])) {
			for (p = argv[i]; *p && o < cap; p++)
				buf[o++] = *p;
			continue;
		}
		if (o < cap)
			buf[o++] = '\'';
		for (p = argv[i]; *p; p++) {
			const char *q = *p == '\'' ? "'\\''" : NULL;
			if (q)
				for (; *q && o < cap; q++)
					buf[o++] = *q;
			else if (o < cap)
				buf[o++] = *p;
		}
		if (o < cap)
			buf[o++] = '\'';
	}
	if (o >= cap)
		return mgpu_err(MGPU_EINVAL, "command line longer than %zu bytes", cap - 1);
	buf[o] = '\0';
	return 0;
}

int mgpu_bench_split_command(char *cmd, char **argv, int max, int *argc)
{
	char *r = cmd, *w = cmd;

	*argc = 0;
	for (;;) {
		while (*r == ' ')
			r++;
		if (!*r)
			break;
		if (*argc >= max - 1)
			return mgpu_err(MGPU_EINVAL, "command: more than %d words", max - 1);
		argv[(*argc)++] = w;
		while (*r && *r != ' ') {
			if (*r == '\\' && r[1]) {
				*w++ = r[1];
				r += 2;
			} else if (*r == '\'') {
				for (r++; *r && *r != '\''; )
					*w++ = *r++;
				if (!*r)
					return mgpu_err(MGPU_EFORMAT, "command: unbalanced quote");
				r++;
			} else {
				*w++ = *r++;
			}
		}
		if (*r)
			r++;
		*w++ = '\0';
	}
	argv[*argc] = NULL;
	return 0;
}
