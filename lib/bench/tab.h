/*
 * tab.h - the result tables of mgpu-bench: a grid of text cells with a
 * column schema, rendered as TSV (header line, "NA" for missing cells),
 * JSON Lines (missing cells left out) or a Markdown table, and read back
 * from TSV (for --compare).
 *
 * Unlike core/table.h a table keeps all its rows (Markdown needs column
 * widths, the tools need baselines and plots) and cells have no length
 * limit (a cell may hold a whole command line).
 *
 * Ownership: the table owns copies of every column name and cell; a NULL
 * cell is missing. Column types only affect JSON: MGPU_TAB_STR is quoted,
 * MGPU_TAB_NUM is written bare, MGPU_TAB_LIST ("1,2") becomes [1,2].
 * Markdown right-aligns NUM columns. Nothing here prints unless given a
 * stream; nothing exits.
 */
#ifndef MGPU_BENCH_TAB_H
#define MGPU_BENCH_TAB_H

#include <stddef.h> /* size_t */
#include <stdio.h>  /* FILE */

#include "core/table.h" /* enum mgpu_format */

enum { MGPU_TAB_STR = 0, MGPU_TAB_NUM = 1, MGPU_TAB_LIST = 2 };
/* The formats are core/table.h's, shared with every tool's --format. */
#define MGPU_FMT_MD MGPU_FMT_MARKDOWN

struct mgpu_tab {
	int ncols;
	char **cols;
	int *types;
	size_t nrows, cap;
	char **cells; /* nrows * ncols, row-major; NULL: missing */
};

/* A table with ncols columns named cols[] of types[] (types NULL: all STR). */
int mgpu_tab_init(struct mgpu_tab *t, const char *const *cols, const int *types, int ncols);
void mgpu_tab_free(struct mgpu_tab *t);
/* Append an empty row; its index is t->nrows - 1. */
int mgpu_tab_add_row(struct mgpu_tab *t);
/* Column index of name, or -1. */
int mgpu_tab_col(const struct mgpu_tab *t, const char *name);
/* Set a cell of row r (v NULL: missing); MGPU_EINVAL names an unknown column. */
int mgpu_tab_set(struct mgpu_tab *t, size_t r, const char *col, const char *v);
int mgpu_tab_setf(struct mgpu_tab *t, size_t r, const char *col, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* A number with digits significant digits; NaN and inf become missing. */
int mgpu_tab_num(struct mgpu_tab *t, size_t r, const char *col, double v, int digits);
/* Set column col of every row to v (a fact of the whole run). */
int mgpu_tab_fill(struct mgpu_tab *t, const char *col, const char *v);
/* Cell text of row r, column name; NULL when missing or no such column. */
const char *mgpu_tab_get(const struct mgpu_tab *t, size_t r, const char *col);
/* The cell as a number; NAN when missing or not a number. */
double mgpu_tab_getnum(const struct mgpu_tab *t, size_t r, const char *col);
/* Write every row in fmt (MGPU_FMT_*); MGPU_EIO when the stream fails. */
int mgpu_tab_write(const struct mgpu_tab *t, FILE *fp, int fmt);
/* Parse TSV text (header line first; "NA" cells missing); name labels errors. */
int mgpu_tab_parse_tsv(struct mgpu_tab *t, const char *text, size_t len, const char *name);

#endif
