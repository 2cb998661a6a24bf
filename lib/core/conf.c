/*
 * conf.c - `key = value` configuration files over an option table (see
 * conf.h): the reader checks a file's lines and keys, the writer renders
 * a target's settings so that what it writes reads back to the same run.
 */
#include "core/conf.h"

#include <ctype.h>  /* isspace */
#include <errno.h>  /* errno */
#include <stdlib.h> /* malloc, realloc, free */
#include <string.h> /* strcmp, strlen, strerror */

#include "core/err.h" /* mgpu_err */
#include "core/io.h"  /* mgpu_read_file */

#define KEY_MAX 80

static char *skip_blank(char *p)
{
	while (*p == ' ' || *p == '\t' || *p == '\r')
		p++;
	return p;
}

/* The value after '=' in place: a quoted string unescaped, or the bare
 * text up to a ' #' comment with its blanks trimmed. NULL: a bad quote
 * (*why says what). */
static char *value_of(char *p, const char **why)
{
	char *out, *w, *end;

	p = skip_blank(p);
	if (*p != '"') {
		for (end = p; *end; end++)
			if (*end == '#' && end > p && (end[-1] == ' ' || end[-1] == '\t'))
				break;
		while (end > p && isspace((unsigned char)end[-1]))
			end--;
		*end = '\0';
		return p;
	}
	out = w = ++p;
	for (; *p && *p != '"'; p++) {
		if (*p != '\\') {
			*w++ = *p;
			continue;
		}
		switch (*++p) {
		case 'n': *w++ = '\n'; break;
		case 't': *w++ = '\t'; break;
		case '"': *w++ = '"'; break;
		case '\\': *w++ = '\\'; break;
		default: *why = "an unknown escape in a quoted value (\\\" \\\\ \\n \\t)"; return NULL;
		}
	}
	if (*p != '"') {
		*why = "a quoted value without its closing '\"'";
		return NULL;
	}
	p = skip_blank(p + 1);
	if (*p && *p != '#') {
		*why = "text after a quoted value";
		return NULL;
	}
	*w = '\0';
	return out;
}

static int refused(const char *name, const char *const *refuse)
{
	for (; refuse && *refuse; refuse++)
		if (strcmp(name, *refuse) == 0)
			return 1;
	return 0;
}

static int add(struct mgpu_conf *c, const struct mgpu_opt *row, const char *value, int line)
{
	struct mgpu_conf_entry *e = realloc(c->e, (size_t)(c->n + 1) * sizeof *e);

	if (!e)
		return mgpu_err(MGPU_ENOMEM, "out of memory");
	c->e = e;
	e[c->n].row = row;
	e[c->n].line = line;
	e[c->n].value = strdup(value);
	if (!e[c->n].value)
		return mgpu_err(MGPU_ENOMEM, "out of memory");
	c->n++;
	return 0;
}

/* One line (NUL-terminated, modified in place). */
static int parse_line(const struct mgpu_opt *tab, const char *const *refuse,
		      struct mgpu_conf *c, char *p, int line)
{
	char key[KEY_MAX];
	const struct mgpu_opt *row;
	const char *why = NULL;
	char *v;
	size_t n = 0;

	p = skip_blank(p);
	if (!*p || *p == '#')
		return 0;
	while (*p && *p != '=' && !isspace((unsigned char)*p) && n + 1 < sizeof key)
		key[n++] = *p == '_' ? '-' : *p, p++;
	key[n] = '\0';
	p = skip_blank(p);
	if (*p != '=')
		return mgpu_err(MGPU_EINVAL, "%s:%d: expected 'key = value'", c->path, line);
	row = mgpu_opt_find(tab, key);
	if (!row || refused(key, refuse))
		return mgpu_err(MGPU_EINVAL, "%s:%d: %s key '%s'", c->path, line,
				row ? "a configuration file cannot set the" : "unknown", key);
	v = value_of(p + 1, &why);
	if (!v)
		return mgpu_err(MGPU_EINVAL, "%s:%d: %s", c->path, line, why);
	return add(c, row, v, line);
}

int mgpu_conf_parse(const struct mgpu_opt *tab, const char *name, const char *data, size_t len,
		    const char *const *refuse, struct mgpu_conf *out)
{
	size_t i, start = 0;
	int rc = 0, line = 0;
	char *text;

	memset(out, 0, sizeof *out);
	out->path = strdup(name);
	if (!out->path)
		return mgpu_err(MGPU_ENOMEM, "out of memory");
	for (i = 0; i <= len && rc == 0; i++) {
		if (i < len && data[i] == '\0') {
			rc = mgpu_err(MGPU_EINVAL, "%s:%d: a NUL byte: not a text file", name,
				      line + 1);
			break;
		}
		if (i < len && data[i] != '\n')
			continue;
		line++;
		if (i == len && start == len)
			break;
		text = malloc(i - start + 1);
		if (!text) {
			rc = mgpu_err(MGPU_ENOMEM, "out of memory");
			break;
		}
		memcpy(text, data + start, i - start);
		text[i - start] = '\0';
		rc = parse_line(tab, refuse, out, text, line);
		free(text);
		start = i + 1;
	}
	if (rc < 0)
		mgpu_conf_free(out);
	return rc;
}

int mgpu_conf_read(const struct mgpu_opt *tab, const char *path, const char *const *refuse,
		   struct mgpu_conf *out)
{
	unsigned char *data = NULL;
	size_t len;
	int rc;

	memset(out, 0, sizeof *out);
	rc = mgpu_read_file(path, &data, &len);
	if (rc == 0)
		rc = mgpu_conf_parse(tab, path, (const char *)data, len, refuse, out);
	free(data);
	return rc;
}

void mgpu_conf_free(struct mgpu_conf *c)
{
	int i;

	for (i = 0; i < c->n; i++)
		free(c->e[i].value);
	free(c->e);
	free(c->path);
	memset(c, 0, sizeof *c);
}

/* A value that the bare form would change (blanks at its ends, a ' #',
 * a quote first, an escape, a line break) or that is empty. */
static int needs_quotes(const char *v)
{
	size_t n = strlen(v), i;

	if (!n || isspace((unsigned char)v[0]) || isspace((unsigned char)v[n - 1]) || v[0] == '"')
		return 1;
	for (i = 0; i < n; i++)
		if (v[i] == '#' || v[i] == '\\' || (unsigned char)v[i] < 0x20)
			return 1;
	return 0;
}

static void put_value(FILE *f, const char *v)
{
	if (!needs_quotes(v)) {
		fputs(v, f);
		return;
	}
	fputc('"', f);
	for (; *v; v++) {
		switch (*v) {
		case '"': fputs("\\\"", f); break;
		case '\\': fputs("\\\\", f); break;
		case '\n': fputs("\\n", f); break;
		case '\t': fputs("\\t", f); break;
		default: fputc(*v, f);
		}
	}
	fputc('"', f);
}

int mgpu_conf_write(FILE *f, const struct mgpu_opt *tab, const void *target, const char *title)
{
	struct mgpu_opt_argv a;
	const char *group = NULL;
	int j = 0;

	MGPU_TRY(mgpu_opt_settings_argv(tab, target, &a));
	fprintf(f, "# %s\n", title);
	/* a's options come in the table's order: walk both */
	for (; tab->type != MGPU_OPT_END && j < a.argc; tab++) {
		if (tab->type == MGPU_OPT_GROUP) {
			group = tab->name;
			continue;
		}
		if (strncmp(a.argv[j], "--", 2) != 0 || strcmp(a.argv[j] + 2, tab->name) != 0)
			continue;
		if (group)
			fprintf(f, "\n# %s\n", group);
		group = NULL;
		fprintf(f, "%s = ", tab->name);
		if (tab->type == MGPU_OPT_FLAG) {
			fputs("1", f);
			j++;
		} else {
			put_value(f, a.argv[j + 1]);
			j += 2;
		}
		fputc('\n', f);
	}
	mgpu_opt_argv_free(&a);
	if (fflush(f) != 0 || ferror(f))
		return mgpu_err(MGPU_EIO, "cannot write the settings: %s", strerror(errno));
	return 0;
}
