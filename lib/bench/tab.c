/*
 * tab.c - mgpu-bench result tables: TSV, JSON Lines, Markdown, TSV input
 * (see tab.h).
 */
#include "bench/tab.h"

#include <math.h>   /* NAN, isfinite */
#include <stdarg.h> /* va_list */
#include <stdlib.h> /* calloc, strtod */
#include <string.h> /* strcmp, strdup */

#include "core/err.h"  /* mgpu_err */
#include "core/json.h" /* mgpu_json_escape */

int mgpu_tab_init(struct mgpu_tab *t, const char *const *cols, const int *types, int ncols)
{
	int i;

	memset(t, 0, sizeof *t);
	t->cols = calloc((size_t)ncols + 1, sizeof *t->cols);
	t->types = calloc((size_t)ncols + 1, sizeof *t->types);
	if (!t->cols || !t->types)
		goto nomem;
	t->ncols = ncols;
	for (i = 0; i < ncols; i++) {
		t->cols[i] = strdup(cols[i]);
		if (!t->cols[i])
			goto nomem;
		t->types[i] = types ? types[i] : MGPU_TAB_STR;
	}
	return 0;
nomem:
	mgpu_tab_free(t);
	return mgpu_err(MGPU_ENOMEM, "table: out of memory");
}

void mgpu_tab_free(struct mgpu_tab *t)
{
	size_t i;

	for (i = 0; t->cells && i < t->nrows * (size_t)t->ncols; i++)
		free(t->cells[i]);
	for (i = 0; t->cols && i < (size_t)t->ncols; i++)
		free(t->cols[i]);
	free(t->cells);
	free(t->cols);
	free(t->types);
	memset(t, 0, sizeof *t);
}

int mgpu_tab_add_row(struct mgpu_tab *t)
{
	size_t nc = (size_t)t->ncols;

	if (t->nrows == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 16;
		char **c = realloc(t->cells, cap * nc * sizeof *c);
		if (!c)
			return mgpu_err(MGPU_ENOMEM, "table: out of memory");
		t->cells = c;
		t->cap = cap;
	}
	memset(t->cells + t->nrows * nc, 0, nc * sizeof *t->cells);
	t->nrows++;
	return 0;
}

int mgpu_tab_col(const struct mgpu_tab *t, const char *name)
{
	int i;

	for (i = 0; i < t->ncols; i++)
		if (strcmp(t->cols[i], name) == 0)
			return i;
	return -1;
}

int mgpu_tab_set(struct mgpu_tab *t, size_t r, const char *col, const char *v)
{
	int c = mgpu_tab_col(t, col);
	char **cell;

	if (c < 0 || r >= t->nrows)
		return mgpu_err(MGPU_EINVAL, "table: no column '%s' or row %zu", col, r);
	cell = &t->cells[r * (size_t)t->ncols + (size_t)c];
	free(*cell);
	*cell = NULL;
	if (!v)
		return 0;
	*cell = strdup(v);
	return *cell ? 0 : mgpu_err(MGPU_ENOMEM, "table: out of memory");
}

int mgpu_tab_setf(struct mgpu_tab *t, size_t r, const char *col, const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	return mgpu_tab_set(t, r, col, buf);
}

int mgpu_tab_num(struct mgpu_tab *t, size_t r, const char *col, double v, int digits)
{
	if (!isfinite(v))
		return mgpu_tab_set(t, r, col, NULL);
	return mgpu_tab_setf(t, r, col, "%.*g", digits, v);
}

int mgpu_tab_fill(struct mgpu_tab *t, const char *col, const char *v)
{
	size_t r;

	if (mgpu_tab_col(t, col) < 0)
		return mgpu_err(MGPU_EINVAL, "table: no column '%s'", col);
	for (r = 0; r < t->nrows; r++)
		MGPU_TRY(mgpu_tab_set(t, r, col, v));
	return 0;
}

const char *mgpu_tab_get(const struct mgpu_tab *t, size_t r, const char *col)
{
	int c = mgpu_tab_col(t, col);

	if (c < 0 || r >= t->nrows)
		return NULL;
	return t->cells[r * (size_t)t->ncols + (size_t)c];
}

double mgpu_tab_getnum(const struct mgpu_tab *t, size_t r, const char *col)
{
	const char *s = mgpu_tab_get(t, r, col);
	char *end;
	double v;

	if (!s || !*s)
		return NAN;
	v = strtod(s, &end);
	return *end == '\0' && isfinite(v) ? v : NAN;
}

/* TSV cells may not hold tabs or newlines: they become spaces. */
static void put_tsv_cell(FILE *fp, const char *s)
{
	for (; *s; s++)
		fputc(*s == '\t' || *s == '\n' || *s == '\r' ? ' ' : *s, fp);
}

static void write_tsv(const struct mgpu_tab *t, FILE *fp)
{
	size_t r;
	int c;

	for (c = 0; c < t->ncols; c++)
		fprintf(fp, "%s%s", c ? "\t" : "", t->cols[c]);
	fputc('\n', fp);
	for (r = 0; r < t->nrows; r++) {
		for (c = 0; c < t->ncols; c++) {
			const char *v = t->cells[r * (size_t)t->ncols + (size_t)c];
			if (c)
				fputc('\t', fp);
			put_tsv_cell(fp, v ? v : "NA");
		}
		fputc('\n', fp);
	}
}

static void write_json_cell(FILE *fp, int type, const char *v)
{
	if (type == MGPU_TAB_NUM)
		fputs(v, fp);
	else if (type == MGPU_TAB_LIST)
		fprintf(fp, "[%s]", v);
	else
		mgpu_json_escape(fp, v);
}

static void write_json(const struct mgpu_tab *t, FILE *fp)
{
	size_t r;
	int c, first;

	for (r = 0; r < t->nrows; r++) {
		fputc('{', fp);
		for (c = 0, first = 1; c < t->ncols; c++) {
			const char *v = t->cells[r * (size_t)t->ncols + (size_t)c];
			if (!v)
				continue;
			fputs(first ? "" : ",", fp);
			mgpu_json_escape(fp, t->cols[c]);
			fputc(':', fp);
			write_json_cell(fp, t->types[c], v);
			first = 0;
		}
		fputs("}\n", fp);
	}
}

/* Width of a Markdown cell in characters: '|' is escaped (2), UTF-8
 * continuation bytes take no column. */
static size_t md_len(const char *s)
{
	size_t n = 0;

	for (; *s; s++)
		n += *s == '|' ? 2 : ((unsigned char)*s & 0xC0) == 0x80 ? 0 : 1;
	return n;
}

static void md_cell(FILE *fp, const char *s, size_t width, int right)
{
	size_t pad = width - md_len(s), i;

	fputs("| ", fp);
	for (i = 0; right && i < pad; i++)
		fputc(' ', fp);
	for (; *s; s++) {
		if (*s == '|')
			fputs("\\|", fp);
		else
			fputc(*s == '\t' || *s == '\n' ? ' ' : *s, fp);
	}
	for (i = 0; !right && i < pad; i++)
		fputc(' ', fp);
	fputc(' ', fp);
}

static void write_md(const struct mgpu_tab *t, FILE *fp)
{
	size_t w[64], r, i;
	int c, nc = t->ncols < 64 ? t->ncols : 64;

	for (c = 0; c < nc; c++) {
		w[c] = md_len(t->cols[c]) < 3 ? 3 : md_len(t->cols[c]);
		for (r = 0; r < t->nrows; r++) {
			const char *v = t->cells[r * (size_t)t->ncols + (size_t)c];
			size_t l = md_len(v ? v : "NA");
			w[c] = l > w[c] ? l : w[c];
		}
	}
	for (c = 0; c < nc; c++)
		md_cell(fp, t->cols[c], w[c], 0);
	fputs("|\n", fp);
	for (c = 0; c < nc; c++) {
		fputs("|", fp);
		for (i = 0; i < w[c] + 1; i++)
			fputc('-', fp);
		fputs(t->types[c] == MGPU_TAB_NUM ? ":" : "-", fp);
	}
	fputs("|\n", fp);
	for (r = 0; r < t->nrows; r++) {
		for (c = 0; c < nc; c++) {
			const char *v = t->cells[r * (size_t)t->ncols + (size_t)c];
			md_cell(fp, v ? v : "NA", w[c], t->types[c] == MGPU_TAB_NUM);
		}
		fputs("|\n", fp);
	}
}

int mgpu_tab_write(const struct mgpu_tab *t, FILE *fp, int fmt)
{
	if (fmt == MGPU_FMT_JSON)
		write_json(t, fp);
	else if (fmt == MGPU_FMT_MD)
		write_md(t, fp);
	else
		write_tsv(t, fp);
	if (ferror(fp))
		return mgpu_err(MGPU_EIO, "cannot write the table");
	return 0;
}

/* Split line[0..len) on tabs into at most max fields (NUL-terminated in place). */
static int split_tabs(char *line, char **f, int max)
{
	int n = 0;
	char *p = line;

	f[n++] = p;
	for (; *p; p++) {
		if (*p != '\t')
			continue;
		*p = '\0';
		if (n == max)
			return max + 1;
		f[n++] = p + 1;
	}
	return n;
}

static int parse_row(struct mgpu_tab *t, char *line, int lineno, const char *name)
{
	char *f[64];
	int n = split_tabs(line, f, 64), c;

	if (n != t->ncols)
		return mgpu_err(MGPU_EFORMAT, "'%s': line %d has %d fields, the header %d", name,
				lineno, n, t->ncols);
	MGPU_TRY(mgpu_tab_add_row(t));
	for (c = 0; c < n; c++)
		if (strcmp(f[c], "NA") != 0)
			MGPU_TRY(mgpu_tab_set(t, t->nrows - 1, t->cols[c], f[c]));
	return 0;
}

int mgpu_tab_parse_tsv(struct mgpu_tab *t, const char *text, size_t len, const char *name)
{
	char *buf = malloc(len + 1), *line, *nl, *f[64];
	int rc = 0, n, lineno = 1;

	memset(t, 0, sizeof *t);
	if (!buf)
		return mgpu_err(MGPU_ENOMEM, "'%s': out of memory", name);
	memcpy(buf, text, len);
	buf[len] = '\0';
	if (strlen(buf) != len || len == 0 || !strchr(buf, '\n')) {
		rc = mgpu_err(MGPU_EFORMAT, "'%s': not a TSV table with a header line", name);
		goto out;
	}
	line = buf;
	nl = strchr(line, '\n');
	*nl = '\0';
	n = split_tabs(line, f, 64);
	if (n > 64) {
		rc = mgpu_err(MGPU_EFORMAT, "'%s': more than 64 columns", name);
		goto out;
	}
	MGPU_CHECK(mgpu_tab_init(t, (const char *const *)f, NULL, n));
	for (line = nl + 1; *line; line = nl + 1) {
		lineno++;
		nl = strchr(line, '\n');
		if (!nl) {
			rc = mgpu_err(MGPU_EFORMAT, "'%s': line %d is cut short (no newline)",
				      name, lineno);
			goto out;
		}
		*nl = '\0';
		MGPU_CHECK(parse_row(t, line, lineno, name));
	}
out:
	if (rc < 0)
		mgpu_tab_free(t);
	free(buf);
	return rc;
}
