/*
 * csv.h - labelled numeric samples from CSV text (RFC 4180 quoting).
 *
 * The first line is a header naming the columns. One column holds the
 * label: by name, or by 0-based index when the selector is all digits;
 * NULL selects the column named "label". When every label is an integer
 * they are the class ids (in [0, 256)); else every label is a word, the
 * distinct words in sorted (strcmp) order are classes 0, 1, ... and
 * out->names holds them ("WALKING" in the Human Activity Recognition set). Every
 * other column is a feature and must hold a finite number in every row.
 * Blank lines are skipped; "\r\n" line ends are accepted. The result is a
 * float32 set of shape (d) with d = columns - 1.
 *
 * With target columns (mgpu-shard --target-columns: names or 0-based
 * indices joined by commas) those columns are each row's regression
 * target instead, a float32 vector in the order given (data/target.h);
 * the label column is then optional: without one every label is 0.
 *
 * Errors name the file, the line and the column:
 * "'x.csv': line 4: column 'px2': 'abc' is not a number".
 */
#ifndef MGPU_DATA_CSV_H
#define MGPU_DATA_CSV_H

#include <stddef.h> /* size_t */

#include "data/samples.h" /* struct mgpu_samples */

/* Parse text[0..len); name labels messages. out is zeroed on failure. */
int mgpu_csv_parse(const char *text, size_t len, const char *name, const char *label_col,
		   struct mgpu_samples *out);
/* Read a (possibly compressed) CSV file and parse it. */
int mgpu_csv_load(const char *path, const char *label_col, struct mgpu_samples *out);
/* The same with target columns (NULL: none). */
int mgpu_csv_parse_t(const char *text, size_t len, const char *name, const char *label_col,
		     const char *target_col, struct mgpu_samples *out);
int mgpu_csv_load_t(const char *path, const char *label_col, const char *target_col,
		    struct mgpu_samples *out);

#endif
