/*
 * csv.c - CSV samples (see csv.h).
 *
 * One pass over the text: a field reader that handles quotes yields fields
 * into a scratch buffer; the header line fixes the column count and the
 * label column; every data line must have the same count.
 */
#include "data/csv.h"

#include <errno.h>  /* errno, ERANGE */
#include <math.h>   /* isfinite */
#include <stdlib.h> /* strtod, strtol, malloc, free */
#include <string.h> /* strcmp, memset */

#include "core/err.h"    /* mgpu_err */
#include "data/decomp.h" /* mgpu_read_maybe_compressed */

#define FIELD_MAX 256

struct rd {
	const char *p, *end, *name;
	long line;             /* 1-based line of the record being read */
	char field[FIELD_MAX];
};

/* Read one field into r->field; *eol set when it ends its line. */
static int next_field(struct rd *r, int *eol)
{
	size_t n = 0;
	int quoted = r->p < r->end && *r->p == '"';

	if (quoted)
		r->p++;
	for (; r->p < r->end; r->p++) {
		char c = *r->p;
		if (quoted && c == '"') {
			if (r->p + 1 < r->end && r->p[1] == '"') {
				r->p++;
			} else {
				quoted = 0;
				continue;
			}
		} else if (!quoted && (c == ',' || c == '\n')) {
			break;
		} else if (!quoted && c == '\r' && (r->p + 1 == r->end || r->p[1] == '\n')) {
			continue;
		}
		if (c == '\n')
			r->line++;
		if (n + 1 >= FIELD_MAX)
			return mgpu_err(MGPU_EFORMAT, "'%s': line %ld: field longer than %d bytes",
					r->name, r->line, FIELD_MAX - 1);
		r->field[n++] = c;
	}
	if (quoted)
		return mgpu_err(MGPU_EFORMAT, "'%s': line %ld: unterminated quoted field",
				r->name, r->line);
	r->field[n] = '\0';
	*eol = r->p >= r->end || *r->p == '\n';
	if (r->p < r->end)
		r->p++;
	return 0;
}

static void skip_blank(struct rd *r)
{
	while (r->p < r->end && (*r->p == '\n' || *r->p == '\r')) {
		if (*r->p == '\n')
			r->line++;
		r->p++;
	}
}

/* The header: column count and the label column. */
static int header(struct rd *r, const char *sel, int *ncols, int *label, int label_optional)
{
	char first[FIELD_MAX] = "";
	int eol = 0, n = 0, want = -1;
	char *endp;
	long v;

	if (sel && sel[0] && strspn(sel, "0123456789") == strlen(sel)) {
		v = strtol(sel, &endp, 10);
		want = v > 100000 ? 100000 : (int)v;
	}
	*label = -1;
	while (!eol) {
		MGPU_TRY(next_field(r, &eol));
		if (n == 0)
			strcpy(first, r->field);
		if (want < 0 && *label >= 0 && strcmp(r->field, sel ? sel : "label") == 0)
			return mgpu_err(MGPU_EFORMAT, "'%s': line 1: columns %d and %d are both "
					"named '%s': which is the label?", r->name, *label, n,
					r->field);
		if ((want >= 0 && n == want) ||
		    (want < 0 && strcmp(r->field, sel ? sel : "label") == 0))
			*label = n;
		n++;
	}
	if (n < 2 && first[0] == '\0')
		return mgpu_err(MGPU_EFORMAT, "'%s': empty file, want a header line", r->name);
	if (*label < 0 && !(label_optional && !sel))
		return mgpu_err(MGPU_EFORMAT, "'%s': line 1: no label column '%s' in the "
				"header (--label-column NAME|INDEX)", r->name, sel ? sel : "label");
	if (n < 2)
		return mgpu_err(MGPU_EFORMAT, "'%s': line 1: no feature columns", r->name);
	*ncols = n;
	return 0;
}

/* The labels as read, one per data line, until all are in: numbers when
 * every one is an integer, else class names. */
struct labels {
	char **s;
	long *line;
	size_t n, cap;
	int words;       /* a label that is not an integer was seen */
};

static int keep_label(struct rd *r, const char *col, struct labels *L)
{
	char *endp;
	void *p;

	if (!r->field[0])
		return mgpu_err(MGPU_EFORMAT, "'%s': line %ld: label column '%s' is empty",
				r->name, r->line, col);
	if (L->n == L->cap) {
		L->cap = L->cap ? 2 * L->cap : 1024;
		if (!(p = realloc(L->s, L->cap * sizeof *L->s)))
			return mgpu_err(MGPU_ENOMEM, "'%s': out of memory", r->name);
		L->s = p;
		if (!(p = realloc(L->line, L->cap * sizeof *L->line)))
			return mgpu_err(MGPU_ENOMEM, "'%s': out of memory", r->name);
		L->line = p;
	}
	if (!(L->s[L->n] = strdup(r->field)))
		return mgpu_err(MGPU_ENOMEM, "'%s': out of memory", r->name);
	L->line[L->n++] = r->line;
	errno = 0;
	(void)strtol(r->field, &endp, 10);
	if (*endp || errno)
		L->words = 1;
	return 0;
}

static void labels_free(struct labels *L)
{
	size_t i;

	for (i = 0; i < L->n; i++)
		free(L->s[i]);
	free(L->s);
	free(L->line);
}

static int by_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Word labels: the distinct ones in sorted order are the classes. */
static int word_labels(const struct labels *L, const char *name, struct mgpu_samples *out)
{
	char **u = malloc(L->n * sizeof *u), **hit;
	size_t i, nu = 0;
	int rc = 0;

	if (!u)
		return mgpu_err(MGPU_ENOMEM, "'%s': out of memory", name);
	memcpy(u, L->s, L->n * sizeof *u);
	qsort(u, L->n, sizeof *u, by_str);
	for (i = 0; i < L->n; i++)
		if (nu == 0 || strcmp(u[nu - 1], u[i]) != 0)
			u[nu++] = u[i];
	if (nu > MGPU_SAMPLES_MAX_CLASSES)
		rc = mgpu_err(MGPU_ERANGE, "'%s': %zu distinct labels, more than %d classes",
			      name, nu, MGPU_SAMPLES_MAX_CLASSES);
	if (rc == 0)
		rc = mgpu_class_names_check(u, (int)nu, name);
	for (i = 0; rc == 0 && i < L->n; i++) {
		hit = bsearch(&L->s[i], u, nu, sizeof *u, by_str);
		out->y[i] = (int32_t)(hit - u);
	}
	if (rc == 0)
		rc = mgpu_class_names_copy(&out->names, &out->nnames, u, (int)nu);
	out->classes = (int)nu;
	free(u);
	return rc;
}

static int number_labels(const struct labels *L, const char *name, struct mgpu_samples *out)
{
	size_t i;
	long v;

	out->classes = 0;
	for (i = 0; i < L->n; i++) {
		v = strtol(L->s[i], NULL, 10);
		if (v < 0 || v >= MGPU_SAMPLES_MAX_CLASSES)
			return mgpu_err(MGPU_ERANGE, "'%s': line %ld: label %ld out of range [0,%d)",
					name, L->line[i], v, MGPU_SAMPLES_MAX_CLASSES);
		out->y[i] = (int32_t)v;
		if ((int)v + 1 > out->classes)
			out->classes = (int)v + 1;
	}
	return 0;
}

static int parse_num(struct rd *r, const char *col, float *x)
{
	char *endp, *s = r->field;
	double v;

	while (*s == ' ')
		s++;
	errno = 0;
	v = strtod(s, &endp);
	while (*endp == ' ')
		endp++;
	if (!*s || *endp || !isfinite(v) || errno == ERANGE || fabs(v) > 3.4e38)
		return mgpu_err(MGPU_EFORMAT, "'%s': line %ld: column '%s': '%s' is not a "
				"number", r->name, r->line, col, r->field);
	*x = (float)v;
	return 0;
}

/* Column names, kept to name columns in messages. */
static int names_of(const char *text, size_t len, const char *name, int ncols, char ***out)
{
	struct rd r = { text, text + len, name, 1, "" };
	char **v = calloc((size_t)ncols, sizeof *v);
	int i, eol = 0;

	if (!v)
		return mgpu_err(MGPU_ENOMEM, "'%s': out of memory", name);
	for (i = 0; i < ncols; i++) {
		if (next_field(&r, &eol) < 0 || !(v[i] = strdup(r.field)))
			break;
	}
	*out = v;
	return 0;
}

static void names_free(char **v, int n)
{
	int i;

	for (i = 0; v && i < n; i++)
		free(v[i]);
	free(v);
}

/*
 * Which columns are targets: tcol[i] = 1 + its place in the target vector,
 * 0 for the others, from sel, names or 0-based indices joined by commas
 * (each a column other than the label, once).
 */
static int target_cols(const char *sel, const char *name, char **names, int ncols, int label,
		       int *tcol, int *nt)
{
	char item[FIELD_MAX + 1];
	const char *p = sel, *e;
	size_t n;
	int i, c;

	*nt = 0;
	for (i = 0; i < ncols; i++)
		tcol[i] = 0;
	for (;; p = e + 1) {
		e = strchr(p, ',');
		e = e ? e : p + strlen(p);
		n = (size_t)(e - p);
		if (n == 0 || n > FIELD_MAX)
			return mgpu_err(MGPU_EINVAL, "'%s': --target-columns '%s': an empty or "
					"overlong column name", name, sel);
		memcpy(item, p, n);
		item[n] = '\0';
		c = -1;
		if (strspn(item, "0123456789") == n)
			c = n < 7 && atoi(item) < ncols ? atoi(item) : -1;
		for (i = 0; c < 0 && i < ncols; i++)
			if (names[i] && strcmp(names[i], item) == 0)
				c = i;
		if (c < 0)
			return mgpu_err(MGPU_EINVAL, "'%s': --target-columns: no column '%s' in the "
					"header", name, item);
		if (c == label || tcol[c])
			return mgpu_err(MGPU_EINVAL, "'%s': --target-columns: column '%s' is %s",
					name, item, c == label ? "the label" : "named twice");
		tcol[c] = ++*nt;
		if (!*e)
			break;
	}
	if (*nt == 0)
		return mgpu_err(MGPU_EINVAL, "'%s': --target-columns '%s' names no column", name,
				sel);
	if (ncols - *nt - (label >= 0) < 1)
		return mgpu_err(MGPU_EINVAL, "'%s': --target-columns leaves no feature column",
				name);
	return 0;
}

/* One data line into row (its targets into trow), its label into L. */
static int record(struct rd *r, int ncols, int label, char **names, const int *tcol,
		  float *row, float *trow, struct labels *L)
{
	int i, k = 0, eol = 0;

	for (i = 0; i < ncols; i++) {
		if (eol)
			return mgpu_err(MGPU_EFORMAT, "'%s': line %ld: %d fields, the header has "
					"%d", r->name, r->line, i, ncols);
		MGPU_TRY(next_field(r, &eol));
		if (i == label)
			MGPU_TRY(keep_label(r, names[i] ? names[i] : "?", L));
		else if (tcol && tcol[i])
			MGPU_TRY(parse_num(r, names[i] ? names[i] : "?", &trow[tcol[i] - 1]));
		else
			MGPU_TRY(parse_num(r, names[i] ? names[i] : "?", &row[k++]));
	}
	if (!eol)
		return mgpu_err(MGPU_EFORMAT, "'%s': line %ld: more fields than the header's %d",
				r->name, r->line, ncols);
	return 0;
}

int mgpu_csv_parse(const char *text, size_t len, const char *name, const char *label_col,
		   struct mgpu_samples *out)
{
	return mgpu_csv_parse_t(text, len, name, label_col, NULL, out);
}

int mgpu_csv_parse_t(const char *text, size_t len, const char *name, const char *label_col,
		     const char *target_col, struct mgpu_samples *out)
{
	struct rd r = { text, text + len, name, 1, "" };
	struct labels L = { 0 };
	char **names = NULL;
	float *row = NULL, *trow = NULL;
	int *tcol = NULL;
	uint32_t d, nt32;
	int ncols = 0, label, nt = 0, rc = 0;

	memset(out, 0, sizeof *out);
	MGPU_CHECK(header(&r, label_col, &ncols, &label, target_col != NULL));
	MGPU_CHECK(names_of(text, len, name, ncols, &names));
	if (target_col) {
		if (!(tcol = malloc((size_t)ncols * sizeof *tcol))) {
			rc = mgpu_err(MGPU_ENOMEM, "'%s': out of memory", name);
			goto out;
		}
		MGPU_CHECK(target_cols(target_col, name, names, ncols, label, tcol, &nt));
	}
	d = (uint32_t)(ncols - (label >= 0) - nt);
	MGPU_CHECK(mgpu_samples_init(out, MGPU_DTYPE_F32, 1, &d));
	nt32 = (uint32_t)nt;
	if (nt)
		MGPU_CHECK(mgpu_samples_set_target(out, MGPU_TARGET_VECTOR, 1, &nt32));
	row = malloc(d * sizeof *row);
	trow = malloc(((size_t)nt + 1) * sizeof *trow);
	if (!row || !trow) {
		rc = mgpu_err(MGPU_ENOMEM, "'%s': out of memory", name);
		goto out;
	}
	r.line++;
	for (skip_blank(&r); r.p < r.end; skip_blank(&r)) {
		MGPU_CHECK(record(&r, ncols, label, names, tcol, row, trow, &L));
		MGPU_CHECK(mgpu_samples_push_t(out, row, 0, trow));
		r.line++;
	}
	if (out->n == 0)
		rc = mgpu_err(MGPU_EFORMAT, "'%s': no data lines after the header", name);
	else if (label < 0)
		out->classes = 1; /* targets alone: every label 0 */
	else if (L.words)
		rc = word_labels(&L, name, out);
	else
		rc = number_labels(&L, name, out);
out:
	free(row);
	free(trow);
	free(tcol);
	labels_free(&L);
	names_free(names, ncols);
	if (rc < 0)
		mgpu_samples_free(out);
	return rc;
}

int mgpu_csv_load(const char *path, const char *label_col, struct mgpu_samples *out)
{
	return mgpu_csv_load_t(path, label_col, NULL, out);
}

int mgpu_csv_load_t(const char *path, const char *label_col, const char *target_col,
		    struct mgpu_samples *out)
{
	unsigned char *buf;
	size_t len;
	int rc;

	memset(out, 0, sizeof *out);
	MGPU_TRY(mgpu_read_maybe_compressed(path, &buf, &len));
	rc = mgpu_csv_parse_t((const char *)buf, len, path, label_col, target_col, out);
	free(buf);
	return rc;
}
