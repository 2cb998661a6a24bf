/*
 * spec.c - model specifications (see spec.h): the family named by the
 * prefix parses, prints and fits its own grammar (model/arch.h); here are
 * what every family shares and spec files.
 */
#include "model/spec.h"

#include <fcntl.h>  /* open */
#include <stdlib.h> /* strtof, malloc, free */
#include <string.h> /* memset, strlen, strncmp, strcspn */
#include <unistd.h> /* close */

#include "core/err.h" /* mgpu_err */
#include "core/io.h"  /* mgpu_read_fd_max */
#include "core/opt.h" /* mgpu_opt_exact_num */
#include "model/arch.h"  /* struct mgpu_arch: the families */

/* An option named twice in the comma-separated list opts (ctx=32,ctx=16)
 * would leave one of the two silently unused: refuse it. */
int mgpu_spec_no_repeats(const char *opts, const char *origin)
{
	const char *a, *b;
	size_t ka, kb;

	for (a = opts; *a; a += strcspn(a, ",") + (a[strcspn(a, ",")] == ',')) {
		ka = strcspn(a, ",=");
		for (b = opts; b < a; b += strcspn(b, ",") + 1) {
			kb = strcspn(b, ",=");
			if (ka == kb && strncmp(a, b, ka) == 0)
				return mgpu_err(MGPU_EINVAL, "%s: option '%.*s' given twice", origin,
						(int)ka, a);
		}
	}
	return 0;
}

int mgpu_spec_dropout(struct mgpu_spec *s, const char *val, const char *origin)
{
	char *e;

	s->dropout = strtof(val, &e);
	if (*val == '\0' || *e != '\0' || !(s->dropout >= 0.0f && s->dropout < 1.0f))
		return mgpu_err(MGPU_EINVAL, "%s: dropout '%s' is not in [0, 1)", origin, val);
	return 0;
}

int mgpu_spec_parse(struct mgpu_spec *s, const char *text, const char *origin)
{
	const struct mgpu_arch *a;
	char names[128];
	int kind;

	memset(s, 0, sizeof *s);
	a = mgpu_arch_find(text, &kind);
	if (!a)
		return mgpu_err(MGPU_EINVAL, "%s: model spec '%s' does not start with %s", origin,
				text, mgpu_arch_names(names, sizeof names, 1));
	s->kind = kind;
	return a->parse(s, text + strlen(a->name) + 1, text, origin);
}

/* Spec files: strip comments, turn whitespace runs into single commas. */
static void normalise(const char *in, char *out, size_t cap)
{
	size_t o = 0;
	int comment = 0, sep = 0;

	for (; *in && o + 1 < cap; in++) {
		if (*in == '\n')
			comment = 0;
		if (*in == '#')
			comment = 1;
		if (comment || *in == ' ' || *in == '\t' || *in == '\n' || *in == '\r' ||
		    *in == ',') {
			sep = o > 0;
			continue;
		}
		if (sep && o + 2 < cap)
			out[o++] = ',';
		sep = 0;
		out[o++] = *in;
	}
	out[o] = '\0';
}

/* A file whose first line (comments and blank lines aside) is a family's
 * name alone holds one entry per line: text becomes "NAME:" and every line
 * after the name joined by ';', comments dropped, blank lines kept empty,
 * so that the family's "line N" is the file's line N. 0 when the file is
 * not of that form (*out untouched); else *out is malloc'ed. */
static int lines_form(const char *text, char **out)
{
	const char *p = text, *e = text, *first = NULL, *q;
	size_t n, o;
	char *buf, name[16];
	int lines = 0;

	for (; *p && !first; p = *e ? e + 1 : e) {
		e = p + strcspn(p, "\n");
		lines++;
		first = p + strspn(p, " \t\r");
		if (first >= e || *first == '#')
			first = NULL;
	}
	if (!first)
		return 0;
	n = strcspn(first, " \t\r\n#");
	q = first + n + strspn(first + n, " \t\r");
	if (n + 2 > sizeof name || memchr(first, ':', n) || (*q && *q != '\n' && *q != '#'))
		return 0;
	memcpy(name, first, n);
	memcpy(name + n, ":", 2);
	if (!mgpu_arch_find(name, NULL) || !(buf = malloc(strlen(text) + (size_t)lines + n + 4)))
		return 0;
	memcpy(buf, name, n + 1);
	o = n + 1;
	while (lines-- > 0) /* the name's line and those above it: empty lines */
		buf[o++] = ';';
	for (; *p; p = *e ? e + 1 : e) {
		e = p + strcspn(p, "\n");
		n = strcspn(p, "#\n");
		memcpy(buf + o, p, n);
		o += n;
		buf[o++] = ';';
	}
	buf[o] = '\0';
	*out = buf;
	return 1;
}

int mgpu_spec_load(struct mgpu_spec *s, const char *arg)
{
	unsigned char *data = NULL;
	char *norm, *lines, origin[4200], names[128];
	size_t len = 0;
	int fd, rc;

	if (mgpu_arch_find(arg, NULL))
		return mgpu_spec_parse(s, arg, "--model");
	fd = open(arg, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		mgpu_err_errno(MGPU_EIO, "'%s': cannot open", arg);
		return mgpu_err_prefix(MGPU_EINVAL, "--model: not a spec (%s) and ",
				       mgpu_arch_names(names, sizeof names, 0));
	}
	/* comments may make a spec file long, never this long (/dev/zero) */
	rc = mgpu_read_fd_max(fd, arg, MGPU_SPEC_FILE_MAX, &data, &len);
	close(fd);
	if (rc == MGPU_ERANGE)
		return mgpu_err(MGPU_EINVAL, "'%s': more than %d bytes: not a model spec file",
				arg, MGPU_SPEC_FILE_MAX);
	if (rc < 0)
		return mgpu_err_prefix(MGPU_EINVAL, "--model: not a spec (%s) and ",
				       mgpu_arch_names(names, sizeof names, 0));
	if (strlen((char *)data) != len || !(norm = malloc(len + 2))) {
		free(data);
		return mgpu_err(MGPU_EINVAL, "'%s': not a model spec file", arg);
	}
	snprintf(origin, sizeof origin, "'%s'", arg);
	if (lines_form((char *)data, &lines)) {
		free(norm);
		norm = lines;
	} else {
		normalise((char *)data, norm, len + 2);
	}
	free(data);
	rc = mgpu_spec_parse(s, norm, origin);
	free(norm);
	return rc;
}

/* The printed spec is what a checkpoint records and a resume parses
 * back: the dropout exactly ("%g" would turn 0.1234567 into 0.123457). */
const char *mgpu_spec_dropout_str(const struct mgpu_spec *s, char p[32])
{
	mgpu_opt_exact_num(p, 32, (double)s->dropout, 1);
	return p;
}

int mgpu_spec_format(const struct mgpu_spec *s, char *buf, size_t len)
{
	return mgpu_arch_of(s)->format(s, buf, len);
}

int mgpu_spec_has_auto(const struct mgpu_spec *s)
{
	const struct mgpu_arch *a = mgpu_arch_of(s);

	return a->has_auto && a->has_auto(s);
}

void mgpu_spec_take_auto(struct mgpu_spec *s, const struct mgpu_spec *ck)
{
	const struct mgpu_arch *a = mgpu_arch_of(s);

	if (a->take_auto && ck->kind == s->kind)
		a->take_auto(s, ck);
}

int mgpu_spec_fit(struct mgpu_spec *s, const struct mgpu_data_desc *d, const char *path)
{
	return mgpu_arch_of(s)->fit(s, d, path);
}

int mgpu_spec_auto_classes(const struct mgpu_data_desc *d)
{
	return d->target || d->classes > 1 ? d->classes : 2;
}

int mgpu_spec_out_shape(const struct mgpu_spec *s, int shape[3])
{
	const struct mgpu_arch *a = mgpu_arch_of(s);

	if (!a->out_shape)
		return mgpu_err(MGPU_EINVAL, "a %s model trains on %s, not on targets", a->name,
				a->flags & MGPU_ARCH_TOKENS ? "token ids" : "class labels");
	if (shape)
		a->out_shape(s, shape);
	return 0;
}

int mgpu_spec_classes(const struct mgpu_spec *s)
{
	return mgpu_arch_of(s)->classes(s);
}

int mgpu_spec_is_lm(const struct mgpu_spec *s)
{
	return (mgpu_arch_of(s)->flags & MGPU_ARCH_TOKENS) != 0;
}

int mgpu_spec_logits_ld(const struct mgpu_spec *s)
{
	long long rows = s->padded_vocab > s->vocab ? s->padded_vocab : s->vocab;

	/* padded_vocab is at most 2^31 - 1: the rounding may need a long long,
	 * a stride past INT_MAX is left unpadded (no product that size runs) */
	rows = (rows + 7) / 8 * 8;
	return rows > 2147483647LL ? 2147483647 : (int)rows;
}
