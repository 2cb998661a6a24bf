/*
 * table.h - one column schema, three renderings: TSV with a header line,
 * JSON Lines, or a Markdown table.
 *
 * A table is created with its full column list; each record sets some
 * columns and is emitted. TSV and Markdown print every column ("NA" when
 * unset); JSON prints only the columns set. Values are formatted when set,
 * so a record costs no allocation. The header (TSV, Markdown) is printed
 * before the first record. Records stream out one by one, so Markdown
 * columns are not padded to a common width (renderers align them).
 */
#ifndef MGPU_CORE_TABLE_H
#define MGPU_CORE_TABLE_H

#include <stdint.h> /* int64_t */
#include <stdio.h>  /* FILE */

/* Output formats (the words of --format: tsv, json, markdown). */
enum mgpu_format { MGPU_FMT_TSV = 0, MGPU_FMT_JSON = 1, MGPU_FMT_MARKDOWN = 2 };

#define MGPU_TABLE_MAXCOLS 48
#define MGPU_TABLE_CELL 160

struct mgpu_table {
	FILE *fp;
	int format; /* enum mgpu_format */
	int ncols;
	int header_done;
	const char *const *cols;
	char cell[MGPU_TABLE_MAXCOLS][MGPU_TABLE_CELL];
	char quoted[MGPU_TABLE_MAXCOLS]; /* 1 when JSON needs quotes */
	char set[MGPU_TABLE_MAXCOLS];
};

/* format: enum mgpu_format (0 TSV and 1 JSON, so a json flag works too). */
int mgpu_table_init(struct mgpu_table *t, FILE *fp, int format, const char *const *cols,
		    int ncols);
int mgpu_table_str(struct mgpu_table *t, const char *col, const char *v);
int mgpu_table_int(struct mgpu_table *t, const char *col, int64_t v);
/* %.*g with the given significant digits; NaN/inf print as NA / null. */
int mgpu_table_num(struct mgpu_table *t, const char *col, double v, int digits);
/* A list of integers: "1,2" in TSV, [1,2] in JSON. */
int mgpu_table_ints(struct mgpu_table *t, const char *col, const int64_t *v, int n);
/* Print the record and clear it; fails when the stream fails
 * (MGPU_ECLOSED when its reader went away, errno EPIPE). */
int mgpu_table_emit(struct mgpu_table *t);

#endif
