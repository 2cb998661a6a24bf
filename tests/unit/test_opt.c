/*
 * test_opt.c - the option table (core/opt.h): parsing every row type and
 * its errors, --help from the table, canonical rendering, the saved argv
 * round trip and the resume comparison of fixed rows.
 */
#include <stdint.h> /* int64_t, uint64_t */
#include <stdio.h>  /* open_memstream */
#include <stdlib.h> /* free */
#include <string.h> /* strcmp, strstr */

#include "../t.h"     /* T_RUN, T_CHECK, T_OK, T_FAILS */
#include "core/err.h" /* MGPU_EINVAL, mgpu_err */
#include "core/opt.h" /* the table */

struct o {
	int n, flag, choice, len, ranks;
	int64_t big;
	uint64_t seed;
	double lr;
	float mom;
	unsigned long long size;
	const char *name;
	char path[MGPU_OPT_PATH_MAX];
	struct mgpu_common_opts c;
};

static const char *const words[] = { "sgd", "adamw", NULL };

/* FUNC rows: --name-len WORD stores the length; "" is refused. */
static int set_len(void *t, const char *arg)
{
	if (!arg[0])
		return mgpu_err(MGPU_EINVAL, "--name-len: empty word");
	((struct o *)t)->len = (int)strlen(arg);
	return 0;
}

static void show_len(const void *t, char *buf, size_t len)
{
	snprintf(buf, len, "%.*s", ((const struct o *)t)->len, "xxxxxxxxxxxxxxxx");
}

static const struct mgpu_opt tab[] = {
	MGPU_OPT_HEAD("numbers"),
	MGPU_OPT_ROW(MGPU_OPT_INT, "count", 'n', struct o, n, 1, 100, "N", "a count", MGPU_OPT_FIXED),
	MGPU_OPT_ROW(MGPU_OPT_I64, "big", 0, struct o, big, 0, 9.3e18, "N", "a big one", MGPU_OPT_SAVED),
	MGPU_OPT_ROW(MGPU_OPT_U64, "seed", 0, struct o, seed, 0, 9.3e18, "N", "seed", MGPU_OPT_FIXED),
	MGPU_OPT_ROW(MGPU_OPT_DOUBLE, "lr", 0, struct o, lr, 0, 10, "X", "learning rate", MGPU_OPT_FIXED),
	MGPU_OPT_ROW(MGPU_OPT_FLOAT, "momentum", 0, struct o, mom, 0, 1, "X", "momentum", 0),
	MGPU_OPT_ROW(MGPU_OPT_SIZE, "size", 0, struct o, size, 1, 1ull << 40, "BYTES", "a size", 0),
	MGPU_OPT_HEAD("other"),
	MGPU_OPT_ROW(MGPU_OPT_FLAG, "flag", 0, struct o, flag, 0, 0, NULL, "a flag", MGPU_OPT_FIXED),
	MGPU_OPT_WORDS("optimizer", struct o, choice, words, "sgd|adamw", "optimizer", MGPU_OPT_FIXED),
	MGPU_OPT_ROW(MGPU_OPT_STR, "name", 0, struct o, name, 0, 0, "S", "a name", MGPU_OPT_NODEF),
	MGPU_OPT_ROW(MGPU_OPT_PATH, "path", 0, struct o, path, 0, 0, "DIR", "a path", MGPU_OPT_SAVED),
	MGPU_OPT_CALL("name-len", 0, set_len, show_len, "WORD", "a word's length", "none",
		      MGPU_OPT_SAVED),
	MGPU_OPT_ROWD(MGPU_OPT_INT, "ranks", 0, struct o, ranks, 1, 8, "N",
		      "ranks, with a help text long enough that it has to wrap onto a second line",
		      "1", MGPU_OPT_UNSET0),
	MGPU_OPT_COMMON(struct o, c),
	MGPU_OPT_TABLE_END,
};

static int parse(struct o *v, int argc, const char **argv, int stop, int *first,
		 struct mgpu_opt_given *g)
{
	/* getopt_long takes char **, test literals are const */
	return mgpu_opt_parse(tab, v, argc, (char **)(uintptr_t)argv, stop, first, g);
}

static void test_parse_types(void)
{
	struct o v = { .n = 3 };
	struct mgpu_opt_given g = { { 0 } };
	const char *argv[] = { "t", "-n", "7", "--big", "9000000000", "--seed=5", "--lr", "0.25",
			       "--momentum", "0.5", "--size", "4K", "--flag", "--optimizer",
			       "adamw", "--name", "bob", "--path", "/tmp/x", "--name-len",
			       "abc", "-qv", "--json", "-o", "out.tsv", "--format", "markdown",
			       "rest", NULL };
	int first = 0;

	T_OK(parse(&v, 28, argv, 1, &first, &g));
	T_CHECK(v.n == 7 && v.big == 9000000000LL && v.seed == 5, "%d %lld", v.n,
		(long long)v.big);
	T_CHECK(v.lr == 0.25 && v.mom == 0.5f && v.size == 4096, "%g %g %llu", v.lr,
		(double)v.mom, v.size);
	T_CHECK(v.flag == 1 && v.choice == 1 && strcmp(v.name, "bob") == 0, "flag/choice/name");
	T_CHECK(strcmp(v.path, "/tmp/x") == 0 && v.len == 3, "path %s len %d", v.path, v.len);
	T_CHECK(v.c.quiet && v.c.verbose && v.c.json && v.c.format == MGPU_FMT_MARKDOWN,
		"common flags");
	T_CHECK(v.c.output && strcmp(v.c.output, "out.tsv") == 0, "-o");
	T_CHECK(first == 27 && strcmp(argv[first], "rest") == 0, "first argument %d", first);
	T_CHECK(g.row[1] && !g.row[0] && g.row[2], "given rows");
}

static void test_arguments_mixed(void)
{
	struct o v = { 0 };
	const char *a1[] = { "t", "src", "--count", "2", NULL };
	const char *a2[] = { "t", "src", "--count", "2", NULL };
	int first;

	/* GNU order: options after an argument still count, and the argument
	 * is left at first */
	T_OK(parse(&v, 4, a1, 0, &first, NULL));
	T_CHECK(v.n == 2 && first == 3 && strcmp(a1[first], "src") == 0, "n %d first %d", v.n,
		first);
	/* stop at the first argument (a tool passing the rest on) */
	v.n = 0;
	T_OK(parse(&v, 4, a2, 1, &first, NULL));
	T_CHECK(v.n == 0 && first == 1, "n %d first %d", v.n, first);
}

static void test_errors(void)
{
	struct o v = { 0 };
	const char *bad_int[] = { "t", "--count", "4x", NULL };
	const char *range[] = { "t", "--count", "101", NULL };
	const char *unknown[] = { "t", "--frob", NULL };
	const char *missing[] = { "t", "--count", NULL };
	const char *word[] = { "t", "--optimizer", "adam", NULL };
	const char *path[] = { "t", "--path", "", NULL };
	const char *fn[] = { "t", "--name-len", "", NULL };
	const char *dbl[] = { "t", "--lr", "nan", NULL };
	const char *size0[] = { "t", "--size", "0", NULL };
	int first;

	T_FAILS(parse(&v, 3, bad_int, 1, &first, NULL), MGPU_EINVAL, "--count: '4x' is not an integer");
	T_FAILS(parse(&v, 3, range, 1, &first, NULL), MGPU_EINVAL, "--count: 101 is out of range");
	T_FAILS(parse(&v, 2, unknown, 1, &first, NULL), MGPU_EINVAL,
		"unknown or incomplete option '--frob'");
	T_FAILS(parse(&v, 2, missing, 1, &first, NULL), MGPU_EINVAL,
		"unknown or incomplete option '--count'");
	T_FAILS(parse(&v, 3, word, 1, &first, NULL), MGPU_EINVAL, "--optimizer");
	T_FAILS(parse(&v, 3, path, 1, &first, NULL), MGPU_EINVAL, "--path: bad path");
	T_FAILS(parse(&v, 3, fn, 1, &first, NULL), MGPU_EINVAL, "--name-len: empty word");
	T_FAILS(parse(&v, 3, dbl, 1, &first, NULL), MGPU_EINVAL, "--lr");
	T_FAILS(parse(&v, 3, size0, 1, &first, NULL), MGPU_EINVAL,
		"--size: 0 is out of range [1, 1099511627776]");
}

static void test_help(void)
{
	struct o def = { .n = 3, .lr = 0.05, .choice = 0 };
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	T_CHECK(f != NULL, "open_memstream");
	if (!f)
		return;
	mgpu_opt_help(f, tab, &def);
	fclose(f);
	T_CHECK(strstr(buf, "numbers:\n") && strstr(buf, "other:\n") && strstr(buf, "output:\n"),
		"group headings: %s", buf);
	T_CHECK(strstr(buf, "  -n, --count N") && strstr(buf, "a count [3]"), "count row: %s", buf);
	T_CHECK(strstr(buf, "learning rate [0.05]\n"), "a double's default, rounded: %s", buf);
	T_CHECK(strstr(buf, "optimizer [sgd]\n") && strstr(buf, "a word's length [none]\n"),
		"choice default and a row's own default text: %s", buf);
	T_CHECK(strstr(buf, "a flag\n") && strstr(buf, "a name\n"), "flags and NODEF rows show none");
	T_CHECK(strstr(buf, "  -o, --output FILE") && strstr(buf, "  -V, --version"), "common rows");
	T_CHECK(strstr(buf, "  --ranks N               ranks, with a help text long enough that it has to\n"
			    "                          wrap onto a second line [1]\n"),
		"a long help line wraps under its column, with the row's default text: %s", buf);
	free(buf);
}

static void test_saved_round_trip(void)
{
	struct o v = { .n = 9, .big = 7000000000LL, .seed = 12345678901234ull, .lr = 0.1, .choice = 1,
		       .len = 4, .flag = 1 };
	struct o back = { 0 };
	struct mgpu_opt_argv a;
	const char *full[64];
	int i, first;

	strcpy(v.path, "/data/x y");
	T_OK(mgpu_opt_saved_argv(tab, &v, &a));
	/* only SAVED and FIXED rows; the exact double survives */
	T_CHECK(a.argc == 15, "argc %d", a.argc);
	full[0] = "t";
	for (i = 0; i < a.argc && i < 62; i++)
		full[i + 1] = a.argv[i];
	full[i + 1] = NULL;
	T_OK(parse(&back, a.argc + 1, full, 1, &first, NULL));
	T_CHECK(back.n == 9 && back.big == 7000000000LL && back.seed == v.seed && back.lr == v.lr,
		"numbers back: %d %lld %g", back.n, (long long)back.big, back.lr);
	T_CHECK(back.choice == 1 && back.flag == 1 && back.len == 4 &&
			strcmp(back.path, "/data/x y") == 0,
		"the rest back");
	T_CHECK(back.mom == 0 && back.size == 0, "unsaved rows stay unset");
	mgpu_opt_argv_free(&a);
	T_CHECK(a.argv == NULL && a.argc == 0, "freed");
}

static void test_fixed_differs(void)
{
	struct o saved = { .n = 5, .lr = 0.1 }, now = saved;
	struct mgpu_opt_given g = { { 0 } };
	const char *argv[] = { "t", "--lr", "0.2", "--momentum", "0.7", NULL };
	const struct mgpu_opt *d;
	int first;

	T_OK(parse(&now, 5, argv, 1, &first, &g));
	d = mgpu_opt_fixed_differs(tab, &saved, &now, &g);
	T_CHECK(d && strcmp(d->name, "lr") == 0, "lr differs: %s", d ? d->name : "none");
	/* a fixed row given with the same value, and a free row changed: fine */
	now = saved;
	now.mom = 0.7f;
	T_CHECK(mgpu_opt_fixed_differs(tab, &saved, &now, &g) == NULL, "same lr is no change");
	/* a fixed row that differs but was not given on this command line */
	memset(&g, 0, sizeof g);
	now.n = 6;
	T_CHECK(mgpu_opt_fixed_differs(tab, &saved, &now, &g) == NULL, "not given: not compared");
	T_CHECK(mgpu_opt_find(tab, "lr") == &tab[4] && mgpu_opt_find(tab, "numbers") == NULL,
		"find names options, not headings");
}

static void test_settings_argv(void)
{
	struct o v = { .n = 4, .lr = 0.05, .mom = 0.9f, .flag = 0, .name = "" };
	struct mgpu_opt_argv a;
	char joined[1024] = "";
	int i;

	v.c.quiet = 1;
	v.c.output = "x.tsv";
	T_OK(mgpu_opt_settings_argv(tab, &v, &a));
	for (i = 0; i < a.argc; i++)
		snprintf(joined + strlen(joined), sizeof joined - strlen(joined), " %s", a.argv[i]);
	/* every setting with a value, numbers as short as exact: 0.05, not
	 * 0.050000000000000003; 0.9f as 0.9 */
	T_CHECK(strstr(joined, " --count 4 ") && strstr(joined, " --lr 0.05 ") &&
			strstr(joined, " --momentum 0.9 ") && strstr(joined, " --optimizer sgd"),
		"settings: %s", joined);
	/* no unset flag, empty string, unset-0 row or common (META) row */
	T_CHECK(!strstr(joined, "--flag") && !strstr(joined, "--name ") &&
			!strstr(joined, "--ranks") && !strstr(joined, "--quiet") &&
			!strstr(joined, "--output"),
		"left out: %s", joined);
	mgpu_opt_argv_free(&a);
	v.ranks = 3;
	v.lr = 0.1 + 0.2; /* 0.30000000000000004: needs all 17 digits */
	T_OK(mgpu_opt_settings_argv(tab, &v, &a));
	joined[0] = '\0';
	for (i = 0; i < a.argc; i++)
		snprintf(joined + strlen(joined), sizeof joined - strlen(joined), " %s", a.argv[i]);
	T_CHECK(strstr(joined, " --ranks 3") && strstr(joined, " --lr 0.30000000000000004 "),
		"a set unset-0 row, an exact double: %s", joined);
	mgpu_opt_argv_free(&a);
}

static void test_was_given(void)
{
	struct o v = { 0 };
	struct mgpu_opt_given g = { { 0 } };
	const char *argv[] = { "t", "--lr", "0.5", "--json", NULL };
	int first;

	T_OK(parse(&v, 4, argv, 1, &first, &g));
	T_CHECK(mgpu_opt_was_given(tab, &g, "lr") && mgpu_opt_was_given(tab, &g, "json"),
		"given rows by name");
	T_CHECK(!mgpu_opt_was_given(tab, &g, "count") && !mgpu_opt_was_given(tab, &g, "nope"),
		"rows not given, and no such row");
}

int main(void)
{
	T_RUN(test_parse_types);
	T_RUN(test_arguments_mixed);
	T_RUN(test_errors);
	T_RUN(test_help);
	T_RUN(test_saved_round_trip);
	T_RUN(test_fixed_differs);
	T_RUN(test_settings_argv);
	T_RUN(test_was_given);
	return T_DONE();
}
