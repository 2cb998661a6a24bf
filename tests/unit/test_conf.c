/*
 * test_conf.c - configuration files over an option table (core/conf.h):
 * the syntax (comments, quotes, '_' keys, flags as words), every error
 * with its file and line, and a written file reading back to the same
 * settings.
 */
#include <stdio.h>  /* fopen, fputs, open_memstream */
#include <stdlib.h> /* free */
#include <string.h> /* strcmp, strstr */

#include "../t.h"      /* T_RUN, T_CHECK, T_OK, T_FAILS */
#include "../tmpdir.h" /* t_tmpdir_make, tpath */
#include "core/conf.h" /* mgpu_conf_read, mgpu_conf_write */
#include "core/err.h"  /* MGPU_EINVAL */

struct o {
	int n, flag;
	double lr;
	const char *name;
	struct mgpu_common_opts c;
};

static const struct mgpu_opt tab[] = {
	MGPU_OPT_HEAD("numbers"),
	MGPU_OPT_ROW(MGPU_OPT_INT, "batch-size", 0, struct o, n, 1, 100, "N", "a count", 0),
	MGPU_OPT_ROW(MGPU_OPT_DOUBLE, "lr", 0, struct o, lr, 0, 10, "X", "rate", 0),
	MGPU_OPT_HEAD("other"),
	MGPU_OPT_ROW(MGPU_OPT_FLAG, "flag", 0, struct o, flag, 0, 0, NULL, "a flag", 0),
	MGPU_OPT_ROW(MGPU_OPT_STR, "name", 0, struct o, name, 0, 0, "S", "a name", 0),
	MGPU_OPT_CONFIG(struct o, c),
	MGPU_OPT_COMMON(struct o, c),
	MGPU_OPT_TABLE_END,
};

static const char *const refuse[] = { "config", NULL };

static const char *put(const char *name, const char *text)
{
	const char *p = tpath(name);
	FILE *f = fopen(p, "w");

	if (f) {
		fputs(text, f);
		fclose(f);
	}
	return p;
}

/* Read text and apply it to v; the first failing rc, or 0. The confs
 * stay (STR rows point into them), reachable from here. */
static struct mgpu_conf kept[32];
static int nkept;

static int apply(const char *text, struct o *v)
{
	struct mgpu_conf *c = &kept[nkept++ % 32];
	int i, rc = mgpu_conf_read(tab, put("c.conf", text), refuse, c);

	for (i = 0; rc == 0 && i < c->n; i++)
		rc = mgpu_opt_set(c->e[i].row, v, c->e[i].value);
	return rc;
}

static void test_syntax(void)
{
	struct o v = { .n = 1 };

	T_OK(apply("# comment\n  # indented\n\nbatch_size = 7 # per device\r\n"
		   "lr=0.5\nflag = yes\nname = \"a # b \\\"c\\\"\\t\"  # after\n", &v));
	T_CHECK(v.n == 7, "batch_size: %d", v.n);
	T_CHECK(v.lr == 0.5, "lr: %g", v.lr);
	T_CHECK(v.flag == 1, "flag: %d", v.flag);
	T_CHECK(v.name && strcmp(v.name, "a # b \"c\"\t") == 0, "name: '%s'", v.name);
	T_OK(apply("flag = off\nname = x#y\nlr = 1\nlr = 2", &v)); /* no final newline */
	T_CHECK(v.flag == 0, "flag off: %d", v.flag);
	T_CHECK(strcmp(v.name, "x#y") == 0, "a '#' inside a word: '%s'", v.name);
	T_CHECK(v.lr == 2, "the later line wins: %g", v.lr);
}

static void test_errors(void)
{
	struct o v = { .n = 1 };
	struct mgpu_conf c;

	T_FAILS(apply("lr = 1\n\nbogus = 2\n", &v), MGPU_EINVAL, "c.conf:3: unknown key 'bogus'");
	T_FAILS(apply("lr 1\n", &v), MGPU_EINVAL, "c.conf:1: expected 'key = value'");
	T_FAILS(apply("config = x\n", &v), MGPU_EINVAL, "cannot set the key 'config'");
	T_FAILS(apply("name = \"open\n", &v), MGPU_EINVAL, "c.conf:1: a quoted value without");
	T_FAILS(apply("name = \"a\" b\n", &v), MGPU_EINVAL, "text after a quoted value");
	T_FAILS(apply("name = \"\\q\"\n", &v), MGPU_EINVAL, "unknown escape");
	T_FAILS(apply("flag = maybe\n", &v), MGPU_EINVAL, "--flag: 'maybe' is not one of");
	T_FAILS(apply("batch-size = 4x\n", &v), MGPU_EINVAL, "--batch-size: '4x'");
	{
		FILE *f = fopen(tpath("nul.conf"), "w");
		if (f) {
			fwrite("lr = 1\n\0\n", 1, 9, f);
			fclose(f);
		}
	}
	T_FAILS(mgpu_conf_read(tab, tpath("nul.conf"), refuse, &c), MGPU_EINVAL,
		"nul.conf:2: a NUL byte");
	T_FAILS(mgpu_conf_read(tab, tpath("absent.conf"), refuse, &c), MGPU_EIO, "cannot open");
}

static void test_round_trip(void)
{
	struct o v = { .n = 9, .lr = 0.1, .flag = 1, .name = " lead #1 \"q\"\n" }, w = { .n = 1 };
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	T_CHECK(f != NULL, "open_memstream");
	if (!f)
		return;
	T_OK(mgpu_conf_write(f, tab, &v, "t settings"));
	fclose(f);
	T_CHECK(strstr(buf, "# t settings\n\n# numbers\nbatch-size = 9\nlr = 0.1\n\n# other\n"
			    "flag = 1\nname = \" lead #1 \\\"q\\\"\\n\"\n") != NULL, "written: %s", buf);
	T_CHECK(strstr(buf, "config") == NULL, "META rows written: %s", buf);
	T_OK(apply(buf, &w));
	T_CHECK(w.n == 9 && w.lr == 0.1 && w.flag == 1, "read back: %d %g %d", w.n, w.lr, w.flag);
	T_CHECK(w.name && strcmp(w.name, v.name) == 0, "name read back: '%s'", w.name);
	free(buf);
}

int main(void)
{
	if (t_tmpdir_make("conf") < 0)
		return 1;
	T_RUN(test_syntax);
	T_RUN(test_errors);
	T_RUN(test_round_trip);
	t_tmpdir_remove();
	return T_DONE();
}
