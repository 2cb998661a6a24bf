/*
 * ts.c - UEA/UCR .ts time-series files (see ts.h): the header's tags up to
 * @data, then a series a line, its values gathered per dimension and
 * checked against the first series' shape.
 *
 * Rows are pushed with the label's position in the @classLabel line; the
 * labels become class numbers or sorted class names once the whole file
 * is read.
 */
#include "data/ts.h"

#include <dirent.h>  /* opendir, readdir */
#include <errno.h>   /* errno, ERANGE */
#include <stdio.h>   /* snprintf */
#include <sys/stat.h> /* stat */
#include <math.h>    /* isfinite, fabs */
#include <stdlib.h>  /* strtod, strtol, malloc, realloc, free, qsort */
#include <string.h>  /* memset, strcmp, strlen, memcpy */
#include <strings.h> /* strncasecmp, strcasecmp */

#include "core/err.h"    /* mgpu_err, MGPU_TRY */
#include "data/decomp.h" /* mgpu_read_maybe_compressed */

#define WORD_MAX 128 /* a value's or a class name's longest text, with its NUL */

struct rd {
	const char *p, *end;       /* the text not read yet */
	const char *name;
	long line;                 /* the current line, 1-based */
	const char *s, *e;         /* the current line, without its line end */
	int dims, length;          /* the header's, 0 when it gives none */
	char *cls[MGPU_SAMPLES_MAX_CLASSES]; /* @classLabel's names, in its order */
	int ncls, have_cls;
	float *vals;               /* the current series, dimension after dimension */
	size_t nvals, cap;
	int C, L;                  /* the first series' shape; 0 before it */
};

static int is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v';
}

/* The next line into s..e (space at both ends cut); 0 at the end. */
static int next_line(struct rd *r)
{
	const char *nl;

	if (r->p >= r->end)
		return 0;
	nl = memchr(r->p, '\n', (size_t)(r->end - r->p));
	r->s = r->p;
	r->e = nl ? nl : r->end;
	r->p = nl ? nl + 1 : r->end;
	r->line++;
	while (r->s < r->e && is_space(*r->s))
		r->s++;
	while (r->e > r->s && is_space(r->e[-1]))
		r->e--;
	return 1;
}

/* The next space-separated word of q..e into buf; 0 when there is none. */
static int word(struct rd *r, const char **q, const char *e, char buf[WORD_MAX])
{
	const char *a;
	size_t n;

	while (*q < e && is_space(**q))
		(*q)++;
	a = *q;
	while (*q < e && !is_space(**q))
		(*q)++;
	n = (size_t)(*q - a);
	if (n >= WORD_MAX)
		return mgpu_err(MGPU_EFORMAT, "'%s': line %ld: a word of %zu bytes, more than %d",
				r->name, r->line, n, WORD_MAX - 1);
	memcpy(buf, a, n);
	buf[n] = '\0';
	return n > 0;
}

static int tag_is(const char *t, size_t n, const char *want)
{
	return strlen(want) == n && strncasecmp(t, want, n) == 0;
}

/* A tag's true or false. */
static int flag(struct rd *r, const char **q, const char *tag, int *v)
{
	char w[WORD_MAX];
	int got;

	MGPU_TRY(got = word(r, q, r->e, w));
	if (got && (strcasecmp(w, "true") == 0 || strcasecmp(w, "false") == 0)) {
		*v = strcasecmp(w, "true") == 0;
		return 0;
	}
	return mgpu_err(MGPU_EFORMAT, "'%s': line %ld: @%s wants true or false", r->name,
			r->line, tag);
}

/* A tag's positive count (up to 2^30). */
static int count(struct rd *r, const char **q, const char *tag, int *v)
{
	char w[WORD_MAX], *endp;
	long n = 0;
	int got;

	MGPU_TRY(got = word(r, q, r->e, w));
	if (got) {
		errno = 0;
		n = strtol(w, &endp, 10);
		if (*endp || errno || n < 1 || n > (1L << 30))
			n = 0;
	}
	if (n == 0)
		return mgpu_err(MGPU_EFORMAT, "'%s': line %ld: @%s wants a positive number",
				r->name, r->line, tag);
	*v = (int)n;
	return 0;
}

/* @classLabel true NAME...: the classes, each listed once. */
static int class_labels(struct rd *r, const char **q)
{
	char w[WORD_MAX];
	int on, got, k;

	MGPU_TRY(flag(r, q, "classLabel", &on));
	if (!on)
		return mgpu_err(MGPU_EFORMAT, "'%s': line %ld: @classLabel false: the series have "
				"no classes to learn", r->name, r->line);
	if (r->have_cls)
		return mgpu_err(MGPU_EFORMAT, "'%s': line %ld: a second @classLabel line",
				r->name, r->line);
	r->have_cls = 1;
	while ((got = word(r, q, r->e, w)) > 0) {
		for (k = 0; k < r->ncls; k++)
			if (strcmp(r->cls[k], w) == 0)
				return mgpu_err(MGPU_EFORMAT, "'%s': line %ld: class '%s' is listed "
						"twice", r->name, r->line, w);
		if (r->ncls == MGPU_SAMPLES_MAX_CLASSES)
			return mgpu_err(MGPU_ERANGE, "'%s': line %ld: more than %d classes",
					r->name, r->line, MGPU_SAMPLES_MAX_CLASSES);
		if (!(r->cls[r->ncls] = strdup(w)))
			return mgpu_err(MGPU_ENOMEM, "'%s': out of memory", r->name);
		r->ncls++;
	}
	if (got < 0)
		return got;
	if (r->ncls == 0)
		return mgpu_err(MGPU_EFORMAT, "'%s': line %ld: @classLabel true lists no classes",
				r->name, r->line);
	return 0;
}

/* One header line (s..e starts with '@'); *data set at @data. */
static int header_line(struct rd *r, int *data)
{
	const char *t = r->s + 1, *q = t;
	size_t n;
	int v;

	while (q < r->e && !is_space(*q))
		q++;
	n = (size_t)(q - t);
	if (tag_is(t, n, "data")) {
		*data = 1;
		return 0;
	}
	if (tag_is(t, n, "timeStamps")) {
		MGPU_TRY(flag(r, &q, "timeStamps", &v));
		if (v)
			return mgpu_err(MGPU_EFORMAT, "'%s': line %ld: series with time stamps "
					"are not supported", r->name, r->line);
	} else if (tag_is(t, n, "univariate")) {
		MGPU_TRY(flag(r, &q, "univariate", &v));
		if (v && !r->dims)
			r->dims = 1;
	} else if (tag_is(t, n, "dimensions")) {
		MGPU_TRY(count(r, &q, "dimensions", &r->dims));
	} else if (tag_is(t, n, "seriesLength")) {
		MGPU_TRY(count(r, &q, "seriesLength", &r->length));
	} else if (tag_is(t, n, "targetLabel")) {
		MGPU_TRY(flag(r, &q, "targetLabel", &v));
		if (v)
			return mgpu_err(MGPU_EFORMAT, "'%s': line %ld: a regression set "
					"(@targetLabel true): want class labels", r->name, r->line);
	} else if (tag_is(t, n, "classLabel")) {
		MGPU_TRY(class_labels(r, &q));
	} else if (tag_is(t, n, "missing") || tag_is(t, n, "equalLength")) {
		MGPU_TRY(flag(r, &q, tag_is(t, n, "missing") ? "missing" : "equalLength", &v));
	} /* @problemName and tags of later versions say nothing about the values */
	return 0;
}

static int header(struct rd *r)
{
	int data = 0;

	while (!data && next_line(r)) {
		if (r->s == r->e || *r->s == '#' || *r->s == '%')
			continue;
		if (*r->s != '@')
			return mgpu_err(MGPU_EFORMAT, "'%s': line %ld: a series before @data",
					r->name, r->line);
		MGPU_TRY(header_line(r, &data));
	}
	if (!data)
		return mgpu_err(MGPU_EFORMAT, "'%s': no @data line: not a .ts file", r->name);
	if (!r->have_cls)
		return mgpu_err(MGPU_EFORMAT, "'%s': no @classLabel line before @data", r->name);
	return 0;
}

/* Value j of dimension dim (1-based) from a..b into vals. */
static int value(struct rd *r, const char *a, const char *b, int dim, size_t j)
{
	char buf[WORD_MAX], *endp;
	float *nv;
	double v;
	size_t n;

	while (a < b && is_space(*a))
		a++;
	while (b > a && is_space(b[-1]))
		b--;
	n = (size_t)(b - a);
	if (n == 1 && *a == '?')
		return mgpu_err(MGPU_EFORMAT, "'%s': line %ld: dimension %d, value %zu is missing "
				"('?'): fill or drop such series first", r->name, r->line, dim, j);
	if (n == 0 || n >= WORD_MAX)
		return mgpu_err(MGPU_EFORMAT, "'%s': line %ld: dimension %d, value %zu is %s",
				r->name, r->line, dim, j, n ? "too long" : "empty");
	memcpy(buf, a, n);
	buf[n] = '\0';
	errno = 0;
	v = strtod(buf, &endp);
	if (*endp || errno == ERANGE || !isfinite(v) || fabs(v) > 3.4e38)
		return mgpu_err(MGPU_EFORMAT, "'%s': line %ld: dimension %d, value %zu: '%s' is "
				"not a finite number", r->name, r->line, dim, j, buf);
	if (r->nvals == r->cap) {
		nv = realloc(r->vals, (r->cap ? 2 * r->cap : 1024) * sizeof *nv);
		if (!nv)
			return mgpu_err(MGPU_ENOMEM, "'%s': out of memory", r->name);
		r->vals = nv;
		r->cap = r->cap ? 2 * r->cap : 1024;
	}
	r->vals[r->nvals++] = (float)v;
	return 0;
}

/* The first series fixes the shape, which the header must agree with. */
static int first_shape(struct rd *r, int C, size_t L, struct mgpu_samples *out)
{
	uint32_t shape[2];
	int rc;

	if (r->dims && C != r->dims)
		return mgpu_err(MGPU_EFORMAT, "'%s': line %ld: %d dimensions, the header says %d",
				r->name, r->line, C, r->dims);
	if (r->length && L != (size_t)r->length)
		return mgpu_err(MGPU_EFORMAT, "'%s': line %ld: %zu values per dimension, "
				"@seriesLength says %d", r->name, r->line, L, r->length);
	shape[0] = (uint32_t)C;
	shape[1] = L > UINT32_MAX ? 0 : (uint32_t)L;
	rc = mgpu_samples_init(out, MGPU_DTYPE_F32, 2, shape);
	if (rc < 0)
		return mgpu_err_prefix(rc, "'%s': line %ld: ", r->name, r->line);
	r->C = C;
	r->L = (int)L;
	return 0;
}

/* One series: its dimensions' values, then its label's place in cls. */
static int series(struct rd *r, struct mgpu_samples *out)
{
	const char *last = r->e, *a, *b, *c;
	char lab[WORD_MAX];
	size_t n0;
	int dim = 0, k;

	while (last > r->s && last[-1] != ':')
		last--;
	if (last == r->s)
		return mgpu_err(MGPU_EFORMAT, "'%s': line %ld: no ':' before a class label",
				r->name, r->line);
	c = last;
	MGPU_TRY(k = word(r, &c, r->e, lab));
	if (k == 0 || c != r->e)
		return mgpu_err(MGPU_EFORMAT, "'%s': line %ld: the class label after the last "
				"':' is %s", r->name, r->line, c == r->e ? "empty" : "not one word");
	for (k = 0; k < r->ncls && strcmp(r->cls[k], lab) != 0; k++)
		;
	if (k == r->ncls)
		return mgpu_err(MGPU_EFORMAT, "'%s': line %ld: label '%s' is not one of "
				"@classLabel's", r->name, r->line, lab);
	r->nvals = 0;
	for (a = r->s; a < last; a = b + 1) { /* last[-1] is a ':': every b stops */
		dim++;
		n0 = r->nvals;
		for (b = a; *b != ':'; b++)
			;
		for (c = a; ; c++)
			if (c == b || *c == ',') {
				MGPU_TRY(value(r, a, c, dim, r->nvals - n0 + 1));
				a = c + 1;
				if (c == b)
					break;
			}
		if (r->C && r->nvals - n0 != (size_t)r->L)
			return mgpu_err(MGPU_EFORMAT, "'%s': line %ld: dimension %d has %zu values, "
					"the first series %d (unequal lengths are not supported)",
					r->name, r->line, dim, r->nvals - n0, r->L);
		if (!r->C && dim > 1 && r->nvals - n0 != n0 / (size_t)(dim - 1))
			return mgpu_err(MGPU_EFORMAT, "'%s': line %ld: dimension %d has %zu values, "
					"dimension 1 %zu (unequal lengths are not supported)",
					r->name, r->line, dim, r->nvals - n0, n0 / (size_t)(dim - 1));
	}
	if (r->C && dim != r->C)
		return mgpu_err(MGPU_EFORMAT, "'%s': line %ld: %d dimensions, the first series %d",
				r->name, r->line, dim, r->C);
	if (!r->C)
		MGPU_TRY(first_shape(r, dim, r->nvals / (size_t)dim, out));
	return mgpu_samples_push(out, r->vals, k);
}

static int by_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Positions in cls become class numbers, or places in the sorted names. */
static int classes(struct rd *r, struct mgpu_samples *out)
{
	char *u[MGPU_SAMPLES_MAX_CLASSES], *endp;
	int map[MGPU_SAMPLES_MAX_CLASSES], k, j, numbers = 1;
	long v;
	size_t i;

	for (k = 0; k < r->ncls; k++) {
		errno = 0;
		v = strtol(r->cls[k], &endp, 10);
		numbers &= !*endp && !errno && v >= 0 && v < MGPU_SAMPLES_MAX_CLASSES &&
			   r->cls[k][0] >= '0' && r->cls[k][0] <= '9';
		map[k] = (int)v;
	}
	if (!numbers) {
		memcpy(u, r->cls, (size_t)r->ncls * sizeof *u);
		qsort(u, (size_t)r->ncls, sizeof *u, by_str);
		MGPU_TRY(mgpu_class_names_check(u, r->ncls, r->name));
		for (k = 0; k < r->ncls; k++)
			for (j = 0; j < r->ncls; j++)
				if (u[j] == r->cls[k])
					map[k] = j;
		MGPU_TRY(mgpu_class_names_copy(&out->names, &out->nnames, u, r->ncls));
	}
	out->classes = 0;
	for (k = 0; k < r->ncls; k++)
		if (map[k] + 1 > out->classes)
			out->classes = map[k] + 1;
	for (i = 0; i < out->n; i++)
		out->y[i] = map[out->y[i]];
	return 0;
}

int mgpu_ts_parse(const char *text, size_t len, const char *name, struct mgpu_samples *out)
{
	struct rd r;
	int rc = 0, k;

	memset(out, 0, sizeof *out);
	memset(&r, 0, sizeof r);
	r.p = text;
	r.end = text + len;
	r.name = name;
	MGPU_CHECK(header(&r));
	while (next_line(&r))
		if (r.s < r.e && *r.s != '#' && *r.s != '%')
			MGPU_CHECK(series(&r, out));
	if (out->n == 0)
		rc = mgpu_err(MGPU_EFORMAT, "'%s': no series after @data", name);
	else
		rc = classes(&r, out);
out:
	for (k = 0; k < r.ncls; k++)
		free(r.cls[k]);
	free(r.vals);
	if (rc < 0)
		mgpu_samples_free(out);
	return rc;
}

int mgpu_ts_load(const char *path, struct mgpu_samples *out)
{
	unsigned char *buf;
	size_t len;
	int rc;

	memset(out, 0, sizeof *out);
	MGPU_TRY(mgpu_read_maybe_compressed(path, &buf, &len));
	rc = mgpu_ts_parse((const char *)buf, len, path, out);
	free(buf);
	return rc;
}

int mgpu_ts_find_train(const char *dir, char *train_file, size_t cap, int *found)
{
	static const char tail[] = "_TRAIN.ts";
	struct dirent *de;
	DIR *d = opendir(dir);
	size_t n, t = sizeof tail - 1;
	int rc = 0;

	*found = 0;
	if (!d)
		return mgpu_err_errno(MGPU_EIO, "'%s': cannot open", dir);
	while (rc == 0 && (de = readdir(d))) {
		n = strlen(de->d_name);
		if (n <= t || strcmp(de->d_name + n - t, tail) != 0)
			continue;
		if (++*found > 1)
			rc = mgpu_err(MGPU_EFORMAT, "'%s': holds more than one *_TRAIN.ts (name "
				      "the file)", dir);
		else if ((size_t)snprintf(train_file, cap, "%s/%s", dir, de->d_name) >= cap)
			rc = mgpu_err(MGPU_EINVAL, "'%s': path too long", dir);
	}
	closedir(d);
	return rc;
}

int mgpu_ts_load_pair(const char *train_file, struct mgpu_samples *train,
		      struct mgpu_samples *test)
{
	char test_file[4200];
	size_t n = strlen(train_file);
	struct stat st;
	int rc = 0;

	memset(test, 0, sizeof *test);
	if (n < 9 || n > 4000)
		return mgpu_err(MGPU_EINVAL, "'%s': not a NAME_TRAIN.ts path", train_file);
	snprintf(test_file, sizeof test_file, "%.*s_TEST.ts", (int)(n - 9), train_file);
	MGPU_TRY(mgpu_ts_load(train_file, train));
	if (stat(test_file, &st) == 0)
		rc = mgpu_ts_load(test_file, test);
	if (rc == 0 && test->n)
		rc = mgpu_class_names_join(train, test, test_file);
	if (rc < 0) {
		mgpu_samples_free(train);
		mgpu_samples_free(test);
	}
	return rc;
}
