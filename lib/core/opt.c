/*
 * opt.c - options declared once in a table: parse, help, render, saved argv
 * and the resume comparison (see opt.h).
 *
 * getopt_long keeps global state (optind); parse resets it, so tables may
 * be parsed several times (a checkpoint's argv, then the command line), but
 * never from two threads at once.
 */
#include "core/opt.h"

#include <getopt.h>   /* getopt_long, struct option */
#include <inttypes.h> /* PRId64, PRIu64 */
#include <stdint.h>   /* int64_t, uint64_t */
#include <stdlib.h>   /* free, realloc, strtod */
#include <string.h>   /* strcmp, strlen */

#include "core/cli.h" /* mgpu_cli_* */
#include "core/err.h" /* mgpu_err */

const char *const mgpu_format_words[] = { "tsv", "json", "markdown", NULL };

typedef const char *cstr; /* so CFIELD(t, o, cstr) is a const pointer */

#define FIELD(t, o, type) ((type *)(void *)((char *)(t) + (o)->off))
#define CFIELD(t, o, type) ((const type *)(const void *)((const char *)(t) + (o)->off))

static int is_option(const struct mgpu_opt *o)
{
	return o->type != MGPU_OPT_GROUP;
}

static int set_number(const struct mgpu_opt *o, void *t, const char *flag, const char *arg)
{
	long long i;
	unsigned long long u;
	double d;

	switch (o->type) {
	case MGPU_OPT_INT:
		MGPU_TRY(mgpu_cli_int(flag, arg, (long long)o->min, (long long)o->max, &i));
		*FIELD(t, o, int) = (int)i;
		return 0;
	case MGPU_OPT_I64:
	case MGPU_OPT_U64:
		MGPU_TRY(mgpu_cli_int(flag, arg, (long long)o->min,
				      o->max >= 9.2e18 ? INT64_MAX : (long long)o->max, &i));
		if (o->type == MGPU_OPT_I64)
			*FIELD(t, o, int64_t) = i;
		else
			*FIELD(t, o, uint64_t) = (uint64_t)i;
		return 0;
	case MGPU_OPT_DOUBLE:
	case MGPU_OPT_FLOAT:
		MGPU_TRY(mgpu_cli_double(flag, arg, o->min, o->max, &d));
		if (o->type == MGPU_OPT_DOUBLE)
			*FIELD(t, o, double) = d;
		else
			*FIELD(t, o, float) = (float)d;
		return 0;
	case MGPU_OPT_SIZE:
		MGPU_TRY(mgpu_cli_size(flag, arg, (unsigned long long)o->max, &u));
		if (u < (unsigned long long)o->min)
			return mgpu_err(MGPU_EINVAL, "%s: %llu is out of range [%llu, %llu]", flag, u,
					(unsigned long long)o->min, (unsigned long long)o->max);
		*FIELD(t, o, unsigned long long) = u;
		return 0;
	default:
		return mgpu_err(MGPU_EINVAL, "%s: not a number option", flag);
	}
}

static int set_value(const struct mgpu_opt *o, void *t, const char *arg)
{
	char flag[80];
	int w;

	snprintf(flag, sizeof flag, "--%s", o->name);
	switch (o->type) {
	case MGPU_OPT_FLAG: *FIELD(t, o, int) = 1; return 0;
	case MGPU_OPT_CHOICE:
		MGPU_TRY(mgpu_cli_choice_n(flag, arg, o->words, o->max > 0 ? (int)o->max : -1, &w));
		*FIELD(t, o, int) = w;
		return 0;
	case MGPU_OPT_STR: *FIELD(t, o, const char *) = arg; return 0;
	case MGPU_OPT_PATH:
		if (!arg[0] || strlen(arg) >= MGPU_OPT_PATH_MAX)
			return mgpu_err(MGPU_EINVAL, "%s: bad path '%s'", flag, arg);
		memcpy(FIELD(t, o, char), arg, strlen(arg) + 1);
		return 0;
	case MGPU_OPT_FUNC: return o->fn(t, arg);
	default: return set_number(o, t, flag, arg);
	}
}

int mgpu_opt_set(const struct mgpu_opt *o, void *target, const char *value)
{
	static const char *const truth[] = { "0", "no", "false", "off", "1", "yes", "true", "on",
					     NULL };
	char flag[80];
	int w;

	if (o->type != MGPU_OPT_FLAG)
		return set_value(o, target, value);
	snprintf(flag, sizeof flag, "--%s", o->name);
	MGPU_TRY(mgpu_cli_choice(flag, value, truth, &w));
	*FIELD(target, o, int) = w >= 4;
	return 0;
}

/* getopt_long's view of the table: val is the row index + 256, or the key. */
static int build(const struct mgpu_opt *tab, struct option *lo, char *shorts)
{
	int i, n = 0, s = 0;

	shorts[s++] = '+';
	for (i = 0; tab[i].type != MGPU_OPT_END; i++) {
		const struct mgpu_opt *o = &tab[i];
		int arg = o->type == MGPU_OPT_FLAG ? no_argument : required_argument;
		if (i >= MGPU_OPT_MAX)
			return mgpu_err(MGPU_EINVAL, "option table longer than %d rows",
					MGPU_OPT_MAX);
		if (!is_option(o))
			continue;
		lo[n++] = (struct option){ o->name, arg, NULL, 256 + i };
		if (o->key) {
			shorts[s++] = (char)o->key;
			if (arg == required_argument)
				shorts[s++] = ':';
		}
	}
	lo[n] = (struct option){ NULL, 0, NULL, 0 };
	shorts[s] = '\0';
	return 0;
}

static int row_of_key(const struct mgpu_opt *tab, int c)
{
	int i;

	if (c >= 256)
		return c - 256;
	for (i = 0; tab[i].type != MGPU_OPT_END; i++)
		if (is_option(&tab[i]) && tab[i].key == c)
			return i;
	return -1;
}

int mgpu_opt_parse(const struct mgpu_opt *tab, void *target, int argc, char **argv,
		   int stop_at_arg, int *first_arg, struct mgpu_opt_given *given)
{
	struct option lo[MGPU_OPT_MAX + 1];
	char shorts[2 * MGPU_OPT_MAX + 2];
	int c, row;

	MGPU_TRY(build(tab, lo, shorts));
	optind = 0; /* 0, not 1: also resets getopt's scan of grouped shorts */
	opterr = 0;
	while ((c = getopt_long(argc, argv, stop_at_arg ? shorts : shorts + 1, lo, NULL)) != -1) {
		row = c == '?' || c == ':' ? -1 : row_of_key(tab, c);
		if (row < 0)
			return mgpu_err(MGPU_EINVAL, "unknown or incomplete option '%s'",
					argv[optind - 1]);
		MGPU_TRY(set_value(&tab[row], target, optarg));
		if (given)
			given->row[row] = 1;
	}
	*first_arg = optind;
	return 0;
}

const struct mgpu_opt *mgpu_opt_find(const struct mgpu_opt *tab, const char *name)
{
	for (; tab->type != MGPU_OPT_END; tab++)
		if (is_option(tab) && strcmp(tab->name, name) == 0)
			return tab;
	return NULL;
}

int mgpu_opt_was_given(const struct mgpu_opt *tab, const struct mgpu_opt_given *given,
		       const char *name)
{
	const struct mgpu_opt *o = mgpu_opt_find(tab, name);

	return o && given->row[o - tab];
}

/* v with the fewest significant digits (at most max) that read back to
 * the same double (or, as_float, the same float): "0.05", not
 * "0.050000000000000003", yet exact. */
static void shortest(char *buf, size_t len, double v, int max, int as_float)
{
	int p;

	for (p = 1; p < max; p++) {
		double back;
		snprintf(buf, len, "%.*g", p, v);
		back = strtod(buf, NULL);
		if (as_float ? (float)back == (float)v : back == v)
			return;
	}
	snprintf(buf, len, "%.*g", max, v);
}

void mgpu_opt_exact_num(char *buf, size_t len, double v, int as_float)
{
	shortest(buf, len, v, as_float ? 9 : 17, as_float);
}

void mgpu_opt_render(const struct mgpu_opt *o, const void *t, int exact, char *buf,
		     size_t len)
{
	const char *s;

	switch (o->type) {
	case MGPU_OPT_FLAG:
	case MGPU_OPT_INT: snprintf(buf, len, "%d", *CFIELD(t, o, int)); break;
	case MGPU_OPT_I64: snprintf(buf, len, "%" PRId64, *CFIELD(t, o, int64_t)); break;
	case MGPU_OPT_U64: snprintf(buf, len, "%" PRIu64, *CFIELD(t, o, uint64_t)); break;
	case MGPU_OPT_DOUBLE: shortest(buf, len, *CFIELD(t, o, double), exact ? 17 : 6, 0); break;
	case MGPU_OPT_FLOAT:
		shortest(buf, len, (double)*CFIELD(t, o, float), exact ? 9 : 6, 1);
		break;
	case MGPU_OPT_SIZE: snprintf(buf, len, "%llu", *CFIELD(t, o, unsigned long long)); break;
	case MGPU_OPT_CHOICE: snprintf(buf, len, "%s", o->words[*CFIELD(t, o, int)]); break;
	case MGPU_OPT_STR:
		s = *CFIELD(t, o, cstr);
		snprintf(buf, len, "%s", s ? s : "");
		break;
	case MGPU_OPT_PATH: snprintf(buf, len, "%s", CFIELD(t, o, char)); break;
	case MGPU_OPT_FUNC:
		if (o->show)
			o->show(t, buf, len);
		else if (len)
			buf[0] = '\0';
		break;
	default:
		if (len)
			buf[0] = '\0';
	}
}

#define HELP_COL 26   /* where the help text starts */
#define HELP_WIDTH 79 /* where it wraps */

/* text from column col on, wrapped at word boundaries under HELP_COL. */
static void help_text(FILE *f, const char *text, int col)
{
	const char *w = text;

	while (*w) {
		const char *end = strchr(w, ' ');
		int n = end ? (int)(end - w) : (int)strlen(w);

		if (col > HELP_COL && col + 1 + n > HELP_WIDTH) {
			fprintf(f, "\n%*s", HELP_COL, "");
			col = HELP_COL;
		} else if (col > HELP_COL) {
			fputc(' ', f);
			col++;
		}
		fprintf(f, "%.*s", n, w);
		col += n;
		w += n;
		while (*w == ' ')
			w++;
	}
	fputc('\n', f);
}

static void help_row(FILE *f, const struct mgpu_opt *o, const void *defaults)
{
	char left[80], def[128] = "", text[512];
	int n;

	if (o->key)
		n = snprintf(left, sizeof left, "  -%c, --%s", o->key, o->name);
	else
		n = snprintf(left, sizeof left, "  --%s", o->name);
	if (o->argname && n > 0 && (size_t)n < sizeof left)
		snprintf(left + n, sizeof left - (size_t)n, " %s", o->argname);
	if (o->def)
		snprintf(def, sizeof def, "%s%s%s", o->def[0] ? " [" : "", o->def,
			 o->def[0] ? "]" : "");
	else if (defaults && o->type != MGPU_OPT_FLAG && !(o->flags & MGPU_OPT_NODEF)) {
		char v[100];
		mgpu_opt_render(o, defaults, 0, v, sizeof v);
		if (v[0])
			snprintf(def, sizeof def, " [%s]", v);
	}
	snprintf(text, sizeof text, "%s%s", o->help ? o->help : "", def);
	if (strlen(left) < HELP_COL)
		fprintf(f, "%-*s", HELP_COL, left);
	else
		fprintf(f, "%s\n%-*s", left, HELP_COL, "");
	help_text(f, text, HELP_COL);
}

void mgpu_opt_help(FILE *f, const struct mgpu_opt *tab, const void *defaults)
{
	for (; tab->type != MGPU_OPT_END; tab++) {
		if (tab->type == MGPU_OPT_GROUP)
			fprintf(f, "%s:\n", tab->name);
		else
			help_row(f, tab, defaults);
	}
}

static int push(struct mgpu_opt_argv *a, const char *s)
{
	char **nv = realloc(a->argv, (size_t)(a->argc + 2) * sizeof *nv);

	if (!nv)
		return mgpu_err(MGPU_ENOMEM, "out of memory");
	a->argv = nv;
	a->argv[a->argc] = strdup(s);
	if (!a->argv[a->argc])
		return mgpu_err(MGPU_ENOMEM, "out of memory");
	a->argv[++a->argc] = NULL;
	return 0;
}

/* The rows picked by keep() as an argv; flags only when set, and with
 * skip_empty no row whose value renders empty. */
static int to_argv(const struct mgpu_opt *tab, const void *target,
		   int (*keep)(const struct mgpu_opt *), int skip_empty, struct mgpu_opt_argv *out)
{
	char flag[80], v[MGPU_OPT_PATH_MAX + 16];
	int rc = 0;

	out->argv = NULL;
	out->argc = 0;
	for (; tab->type != MGPU_OPT_END && rc == 0; tab++) {
		if (!is_option(tab) || !keep(tab))
			continue;
		snprintf(flag, sizeof flag, "--%s", tab->name);
		mgpu_opt_render(tab, target, 1, v, sizeof v);
		if (tab->type == MGPU_OPT_FLAG) {
			if (strcmp(v, "0") != 0)
				rc = push(out, flag);
			continue;
		}
		if (skip_empty && (!v[0] || ((tab->flags & MGPU_OPT_UNSET0) && strcmp(v, "0") == 0) ||
				   ((tab->flags & MGPU_OPT_UNSETNEG) && v[0] == '-')))
			continue;
		rc = push(out, flag);
		if (rc == 0)
			rc = push(out, v);
	}
	if (rc < 0)
		mgpu_opt_argv_free(out);
	return rc;
}

static int is_saved(const struct mgpu_opt *o)
{
	return (o->flags & (MGPU_OPT_SAVED | MGPU_OPT_FIXED)) != 0;
}

static int is_setting(const struct mgpu_opt *o)
{
	return !(o->flags & MGPU_OPT_META);
}

int mgpu_opt_saved_argv(const struct mgpu_opt *tab, const void *target,
			struct mgpu_opt_argv *out)
{
	return to_argv(tab, target, is_saved, 0, out);
}

int mgpu_opt_settings_argv(const struct mgpu_opt *tab, const void *target,
			   struct mgpu_opt_argv *out)
{
	return to_argv(tab, target, is_setting, 1, out);
}

void mgpu_opt_argv_free(struct mgpu_opt_argv *a)
{
	int i;

	for (i = 0; i < a->argc; i++)
		free(a->argv[i]);
	free(a->argv);
	a->argv = NULL;
	a->argc = 0;
}

const struct mgpu_opt *mgpu_opt_fixed_differs(const struct mgpu_opt *tab, const void *saved,
					      const void *now,
					      const struct mgpu_opt_given *given)
{
	char a[MGPU_OPT_PATH_MAX + 16], b[MGPU_OPT_PATH_MAX + 16];
	int i;

	for (i = 0; tab[i].type != MGPU_OPT_END; i++) {
		if (!(tab[i].flags & MGPU_OPT_FIXED) || !given->row[i])
			continue;
		mgpu_opt_render(&tab[i], saved, 1, a, sizeof a);
		mgpu_opt_render(&tab[i], now, 1, b, sizeof b);
		if (strcmp(a, b) != 0)
			return &tab[i];
	}
	return NULL;
}
