/*
 * class_names.c - the names of classes whose labels were words (see
 * samples.h): copies, checks, and the join of two labelled sets whose
 * names differ (their union, both sets renumbered into it).
 */
#include "data/samples.h"

#include <stdio.h>  /* snprintf */
#include <stdlib.h> /* calloc, free, qsort */
#include <string.h> /* strcmp, strdup, strlen */

#include "core/err.h" /* mgpu_err, MGPU_TRY */

void mgpu_class_names_free(char **names, int n)
{
	int i;

	for (i = 0; names && i < n; i++)
		free(names[i]);
	free(names);
}

int mgpu_class_names_copy(char ***out, int *nout, char *const *names, int n)
{
	char **v;
	int i;

	*out = NULL;
	*nout = 0;
	if (n <= 0)
		return 0;
	v = calloc((size_t)n, sizeof *v);
	if (!v)
		return mgpu_err(MGPU_ENOMEM, "out of memory for %d class names", n);
	for (i = 0; i < n; i++)
		if (!(v[i] = strdup(names[i]))) {
			mgpu_class_names_free(v, i);
			return mgpu_err(MGPU_ENOMEM, "out of memory for %d class names", n);
		}
	*out = v;
	*nout = n;
	return 0;
}

int mgpu_class_names_check(char *const *names, int n, const char *what)
{
	const unsigned char *p;
	size_t len;
	int i;

	if (n < 1 || n > MGPU_SAMPLES_MAX_CLASSES)
		return mgpu_err(MGPU_EFORMAT, "%s: %d class names, not 1 to %d", what, n,
				MGPU_SAMPLES_MAX_CLASSES);
	for (i = 0; i < n; i++) {
		len = strlen(names[i]);
		if (len < 1 || len > MGPU_CLASS_NAME_MAX)
			return mgpu_err(MGPU_EFORMAT, "%s: class %d: a name of %zu bytes, not 1 "
					"to %d", what, i, len, MGPU_CLASS_NAME_MAX);
		for (p = (const unsigned char *)names[i]; *p; p++)
			if (*p < 0x20 || *p == 0x7f)
				return mgpu_err(MGPU_EFORMAT, "%s: class %d: a control character "
						"(tab, line end) in its name", what, i);
		if (i > 0 && strcmp(names[i - 1], names[i]) >= 0)
			return mgpu_err(MGPU_EFORMAT, "%s: class names '%s' and '%s' are not in "
					"sorted order", what, names[i - 1], names[i]);
	}
	return 0;
}

int mgpu_class_names_equal(char *const *a, int na, char *const *b, int nb)
{
	int i;

	if (na != nb)
		return 0;
	for (i = 0; i < na; i++)
		if (strcmp(a[i], b[i]) != 0)
			return 0;
	return 1;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Where name sits in the sorted list u[0..n). */
static int find(char *const *u, int n, const char *name)
{
	char *const *hit = bsearch(&name, u, (size_t)n, sizeof *u, by_name);

	return hit ? (int)(hit - u) : -1;
}

static void renumber(struct mgpu_samples *s, char *const *u, int nu)
{
	int map[MGPU_SAMPLES_MAX_CLASSES];
	size_t i;
	int k;

	for (k = 0; k < s->nnames; k++)
		map[k] = find(u, nu, s->names[k]);
	s->classes = 0;
	for (i = 0; i < s->n; i++) {
		s->y[i] = map[s->y[i]];
		if (s->y[i] + 1 > s->classes)
			s->classes = s->y[i] + 1;
	}
}

int mgpu_class_names_join(struct mgpu_samples *dst, struct mgpu_samples *src, const char *name)
{
	char *all[2 * MGPU_SAMPLES_MAX_CLASSES], **u;
	int n = 0, nu = 0, k, rc;

	if (!src->names && !dst->names)
		return 0;
	if (!dst->names && dst->n == 0)
		return mgpu_class_names_copy(&dst->names, &dst->nnames, src->names, src->nnames);
	if (!src->names || !dst->names)
		return mgpu_err(MGPU_EFORMAT, "'%s': its labels are %s, an earlier source's are "
				"%s: one set takes one kind", name, src->names ? "words" : "numbers",
				dst->names ? "words" : "numbers");
	if (mgpu_class_names_equal(dst->names, dst->nnames, src->names, src->nnames))
		return 0;
	for (k = 0; k < dst->nnames; k++)
		all[n++] = dst->names[k];
	for (k = 0; k < src->nnames; k++)
		all[n++] = src->names[k];
	qsort(all, (size_t)n, sizeof *all, by_name);
	for (k = 0; k < n; k++)
		if (nu == 0 || strcmp(all[nu - 1], all[k]) != 0)
			all[nu++] = all[k];
	if (nu > MGPU_SAMPLES_MAX_CLASSES)
		return mgpu_err(MGPU_ERANGE, "'%s': with the earlier sources' there are %d class "
				"names, more than %d", name, nu, MGPU_SAMPLES_MAX_CLASSES);
	MGPU_TRY(mgpu_class_names_copy(&u, &k, all, nu));
	renumber(dst, u, nu);
	renumber(src, u, nu);
	mgpu_class_names_free(src->names, src->nnames);
	rc = mgpu_class_names_copy(&src->names, &src->nnames, u, nu);
	mgpu_class_names_free(dst->names, dst->nnames);
	dst->names = u;
	dst->nnames = nu;
	return rc;
}

const char *mgpu_class_name(char *const *names, int n, int k, char buf[16])
{
	if (names && k >= 0 && k < n)
		return names[k];
	snprintf(buf, 16, "%d", k);
	return buf;
}
