/*
 * table.c - TSV, JSON Lines or Markdown records from one schema (see
 * table.h).
 */
#include "core/table.h"

#include <errno.h>    /* errno, EPIPE */
#include <inttypes.h> /* PRId64 */
#include <math.h>     /* isfinite */
#include <string.h>   /* strcmp */

#include "core/err.h" /* mgpu_err */

int mgpu_table_init(struct mgpu_table *t, FILE *fp, int format, const char *const *cols,
		    int ncols)
{
	memset(t, 0, sizeof *t);
	if (ncols > MGPU_TABLE_MAXCOLS)
		return mgpu_err(MGPU_EINVAL, "table: %d columns, max %d", ncols,
				MGPU_TABLE_MAXCOLS);
	if (format < MGPU_FMT_TSV || format > MGPU_FMT_MARKDOWN)
		return mgpu_err(MGPU_EINVAL, "table: unknown format %d", format);
	t->fp = fp;
	t->format = format;
	t->cols = cols;
	t->ncols = ncols;
	return 0;
}

static int col_index(const struct mgpu_table *t, const char *col)
{
	int i;

	for (i = 0; i < t->ncols; i++)
		if (strcmp(t->cols[i], col) == 0)
			return i;
	return mgpu_err(MGPU_EINVAL, "table: no column '%s'", col);
}

static int put(struct mgpu_table *t, const char *col, int quoted, const char *v)
{
	int i = col_index(t, col);

	if (i < 0)
		return i;
	snprintf(t->cell[i], MGPU_TABLE_CELL, "%s", v);
	t->quoted[i] = (char)quoted;
	t->set[i] = 1;
	return 0;
}

int mgpu_table_str(struct mgpu_table *t, const char *col, const char *v)
{
	char buf[MGPU_TABLE_CELL];
	size_t o = 0;

	/* Tabs and line ends would break TSV rows; quotes and other control
	 * characters would make the JSON line invalid. */
	for (; *v && o + 2 < sizeof buf; v++) {
		if ((unsigned char)*v < 0x20)
			buf[o++] = ' ';
		else if (*v == '"' || *v == '\\')
			buf[o++] = '\'';
		else
			buf[o++] = *v;
	}
	buf[o] = '\0';
	return put(t, col, 1, buf);
}

int mgpu_table_int(struct mgpu_table *t, const char *col, int64_t v)
{
	char buf[32];

	snprintf(buf, sizeof buf, "%" PRId64, v);
	return put(t, col, 0, buf);
}

int mgpu_table_num(struct mgpu_table *t, const char *col, double v, int digits)
{
	char buf[64];

	if (!isfinite(v))
		return put(t, col, 0, t->format == MGPU_FMT_JSON ? "null" : "NA");
	snprintf(buf, sizeof buf, "%.*g", digits, v);
	return put(t, col, 0, buf);
}

int mgpu_table_ints(struct mgpu_table *t, const char *col, const int64_t *v, int n)
{
	char buf[MGPU_TABLE_CELL];
	size_t o = 0;
	int i;

	int json = t->format == MGPU_FMT_JSON;

	if (json)
		o += (size_t)snprintf(buf, sizeof buf, "[");
	for (i = 0; i < n && o < sizeof buf; i++)
		o += (size_t)snprintf(buf + o, sizeof buf - o, "%s%" PRId64, i ? "," : "", v[i]);
	if (json && o < sizeof buf)
		snprintf(buf + o, sizeof buf - o, "]");
	return put(t, col, 0, buf);
}

static void emit_tsv(struct mgpu_table *t)
{
	int i;

	if (!t->header_done) {
		for (i = 0; i < t->ncols; i++)
			fprintf(t->fp, "%s%s", i ? "\t" : "", t->cols[i]);
		fputc('\n', t->fp);
		t->header_done = 1;
	}
	for (i = 0; i < t->ncols; i++)
		fprintf(t->fp, "%s%s", i ? "\t" : "", t->set[i] ? t->cell[i] : "NA");
	fputc('\n', t->fp);
}

static void emit_json(struct mgpu_table *t)
{
	int i, first = 1;

	fputc('{', t->fp);
	for (i = 0; i < t->ncols; i++) {
		if (!t->set[i])
			continue;
		fprintf(t->fp, "%s\"%s\":", first ? "" : ",", t->cols[i]);
		fprintf(t->fp, t->quoted[i] ? "\"%s\"" : "%s", t->cell[i]);
		first = 0;
	}
	fputs("}\n", t->fp);
}

/* A Markdown cell: '|' would end the cell early, so it is escaped. */
static void md_cell(FILE *fp, const char *v)
{
	fputs("| ", fp);
	for (; *v; v++) {
		if (*v == '|')
			fputc('\\', fp);
		fputc(*v, fp);
	}
	fputc(' ', fp);
}

static void emit_markdown(struct mgpu_table *t)
{
	int i;

	if (!t->header_done) {
		for (i = 0; i < t->ncols; i++)
			md_cell(t->fp, t->cols[i]);
		fputs("|\n", t->fp);
		for (i = 0; i < t->ncols; i++)
			fputs("| --- ", t->fp);
		fputs("|\n", t->fp);
		t->header_done = 1;
	}
	for (i = 0; i < t->ncols; i++)
		md_cell(t->fp, t->set[i] ? t->cell[i] : "NA");
	fputs("|\n", t->fp);
}

int mgpu_table_emit(struct mgpu_table *t)
{
	if (t->format == MGPU_FMT_JSON)
		emit_json(t);
	else if (t->format == MGPU_FMT_MARKDOWN)
		emit_markdown(t);
	else
		emit_tsv(t);
	memset(t->set, 0, sizeof t->set);
	if (fflush(t->fp) != 0 || ferror(t->fp)) {
		if (errno == EPIPE)
			return mgpu_err_errno(MGPU_ECLOSED, "cannot write output");
		return mgpu_err_errno(MGPU_EIO, "cannot write output");
	}
	return 0;
}
