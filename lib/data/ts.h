/*
 * ts.h - UEA/UCR time-series classification files (.ts, the format of
 * timeseriesclassification.com, sktime and aeon) as labelled samples.
 *
 * Lines starting with '#' (or ARFF's '%') are comments, blank lines skipped. Header lines "@tag value..."
 * (tags in any case) come before "@data": @problemName, @timeStamps
 * (true is refused), @missing, @univariate, @dimensions C, @equalLength,
 * @seriesLength L and @classLabel true NAME... (the classes; false, or a
 * regression set's @targetLabel true, is refused). Other tags are ignored.
 * After @data, one series per line: its C dimensions separated by ':',
 * each L values separated by ',', the class label last:
 * "0.1,0.2,0.3:1.5,1.4,1.2:Walking" is C = 2 channels of L = 3 steps.
 *
 * A sample is float32 of shape (C, L), channels first: row i holds
 * dimension 0's L values, then dimension 1's, ... Labels as CSV's: when
 * every @classLabel name is an integer in [0, 256) they are the class
 * numbers; otherwise the names in sorted (strcmp) order are classes 0, 1,
 * ... and out->names keeps them, a class counting whether or not a series
 * holds it. Every series must have the first's C and L (and the header's,
 * when it gives them): unequal lengths are an error, never padded; so are
 * missing values ('?'), NaN, infinities and a label the @classLabel line
 * does not list. Errors name the file and the line:
 * "'x.ts': line 14: dimension 2 has 99 values, the first series 100".
 */
#ifndef MGPU_DATA_TS_H
#define MGPU_DATA_TS_H

#include <stddef.h> /* size_t */

#include "data/samples.h" /* struct mgpu_samples */

/* Parse text[0..len); name labels messages. out is zeroed on failure. */
int mgpu_ts_parse(const char *text, size_t len, const char *name, struct mgpu_samples *out);
/* Read a (possibly compressed) .ts file and parse it. */
int mgpu_ts_load(const char *path, struct mgpu_samples *out);
/*
 * A UEA/UCR directory (as the archive and aeon ship a set): the one
 * NAME_TRAIN.ts in dir goes to train_file (cap bytes) and *found is 1;
 * none: *found 0; several: an error naming dir.
 */
int mgpu_ts_find_train(const char *dir, char *train_file, size_t cap, int *found);
/* NAME_TRAIN.ts into train and NAME_TEST.ts beside it (when present) into
 * test, their class names joined so both number the classes alike. Both
 * zeroed on failure. */
int mgpu_ts_load_pair(const char *train_file, struct mgpu_samples *train,
		      struct mgpu_samples *test);

#endif
