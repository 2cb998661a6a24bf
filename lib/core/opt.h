/*
 * opt.h - command-line options declared once, in a table.
 *
 * A tool describes each option by one row (struct mgpu_opt): its name, the
 * type and place of the field it sets (offsetof in the tool's options
 * struct), its range or words, its help line and whether a checkpoint saves
 * it. That one row drives parsing (getopt_long underneath, values strictly
 * parsed by core/cli.h), --help, the canonical rendering of a value, the
 * argv saved in checkpoints and the resume comparison, as git's
 * parse-options does. Nothing here exits or prints to stdout: errors are
 * MGPU_EINVAL with a message naming the option; help goes to the FILE the
 * tool passes.
 *
 * The options every tool shares (-o, --format, --json, -q, -v, -V, -h) are
 * MGPU_OPT_COMMON rows over a struct mgpu_common_opts in the tool's struct.
 */
#ifndef MGPU_CORE_OPT_H
#define MGPU_CORE_OPT_H

#include <stddef.h> /* size_t, offsetof */
#include <stdio.h>  /* FILE */

#include "core/table.h" /* enum mgpu_format */

enum mgpu_opt_type {
	MGPU_OPT_END = 0, /* ends a table */
	MGPU_OPT_GROUP,   /* a heading in --help, no option */
	MGPU_OPT_FLAG,    /* no argument; sets an int to 1 */
	MGPU_OPT_INT,     /* int in [min, max] */
	MGPU_OPT_I64,     /* int64_t in [min, max] */
	MGPU_OPT_U64,     /* uint64_t in [min, max] */
	MGPU_OPT_DOUBLE,  /* double in [min, max] */
	MGPU_OPT_FLOAT,   /* float in [min, max] */
	MGPU_OPT_SIZE,    /* unsigned long long, K/M/G suffixes, in [min, max] */
	MGPU_OPT_CHOICE,  /* int: the index of the argument in words */
	MGPU_OPT_STR,     /* const char *: the argument itself (argv outlives it) */
	MGPU_OPT_PATH,    /* char[MGPU_OPT_PATH_MAX]: a copy, non-empty */
	MGPU_OPT_FUNC,    /* fn(target, arg) sets what it needs */
};

/* Row flags. */
#define MGPU_OPT_SAVED 1u /* recorded in checkpoints (mgpu_opt_saved_argv) */
#define MGPU_OPT_FIXED 2u /* saved, and a resumed run may not change it */
#define MGPU_OPT_NODEF 4u /* --help shows no default */
#define MGPU_OPT_META 8u  /* not a setting (-o, --help, --resume): left out of
			   * mgpu_opt_settings_argv */
#define MGPU_OPT_UNSET0 16u /* a number whose 0 means "not set", or is the
			     * default that goes without saying: left out
			     * of mgpu_opt_settings_argv at 0 */
#define MGPU_OPT_UNSETNEG 32u /* a number whose negative value means "not
			       * given": left out of mgpu_opt_settings_argv */

#define MGPU_OPT_PATH_MAX 4096
#define MGPU_OPT_MAX 128/* rows of one table, END excluded */

struct mgpu_opt {
	enum mgpu_opt_type type;
	const char *name;     /* long name without "--" (GROUP: the heading) */
	int key;              /* short option letter, or 0 */
	size_t off;           /* offsetof of the field in the target struct */
	double min, max;      /* numbers: the accepted range */
	const char *const *words; /* CHOICE: NULL-terminated; max > 0 takes
				   * only the first max of them */
	/* FUNC: parse arg into target (MGPU_EINVAL + message on a bad value);
	 * show: the value as a canonical argument, for help and checkpoints. */
	int (*fn)(void *target, const char *arg);
	void (*show)(const void *target, char *buf, size_t len);
	const char *argname;  /* "N", "X", "DIR"; NULL for flags */
	const char *help;     /* one line */
	const char *def;      /* --help's default text instead of the value */
	unsigned flags;       /* MGPU_OPT_SAVED, _FIXED, _NODEF */
};

/* Row constructors, so a table reads as one line per option. */
#define MGPU_OPT_ROW(t, n, k, ty, f, lo, hi, an, h, fl) \
	{ t, n, k, offsetof(ty, f), lo, hi, NULL, NULL, NULL, an, h, NULL, fl }
/* A row whose --help default is the text def ("" for none) instead of the value. */
#define MGPU_OPT_ROWD(t, n, k, ty, f, lo, hi, an, h, def, fl) \
	{ t, n, k, offsetof(ty, f), lo, hi, NULL, NULL, NULL, an, h, def, fl }
#define MGPU_OPT_WORDS(n, ty, f, w, an, h, fl) \
	{ MGPU_OPT_CHOICE, n, 0, offsetof(ty, f), 0, 0, w, NULL, NULL, an, h, NULL, fl }
/* A CHOICE of the first count words only: a word list kept once, beside
 * its enum, of which an option takes a part. */
#define MGPU_OPT_WORDS_N(n, ty, f, w, count, an, h, fl) \
	{ MGPU_OPT_CHOICE, n, 0, offsetof(ty, f), 0, count, w, NULL, NULL, an, h, NULL, fl }
#define MGPU_OPT_CALL(n, k, fnc, shw, an, h, def, fl) \
	{ MGPU_OPT_FUNC, n, k, 0, 0, 0, NULL, fnc, shw, an, h, def, fl }
#define MGPU_OPT_HEAD(title) \
	{ MGPU_OPT_GROUP, title, 0, 0, 0, 0, NULL, NULL, NULL, NULL, NULL, NULL, 0 }
#define MGPU_OPT_TABLE_END \
	{ MGPU_OPT_END, NULL, 0, 0, 0, 0, NULL, NULL, NULL, NULL, NULL, NULL, 0 }

/* The words of the common --format, indexed by enum mgpu_format. */
extern const char *const mgpu_format_words[];

struct mgpu_common_opts {
	int format;         /* enum mgpu_format (core/table.h); --json sets json */
	int json;
	const char *output; /* -o FILE; NULL or "-": standard output */
	int quiet, verbose, version, help;
	const char *config; /* --config FILE (MGPU_OPT_CONFIG rows); NULL: none */
	int print_config;   /* --print-config */
};

/* The shared rows, over the struct mgpu_common_opts member m of type ty. */
#define MGPU_OPT_COMMON(ty, m)                                                          \
	MGPU_OPT_COMMON_OUT(ty, m, "FILE",                                              \
			    "write the data to FILE (atomically) instead of standard output")
/* The same where -o names another output (mgpu-cache: the cache directory). */
#define MGPU_OPT_COMMON_OUT(ty, m, out_arg, out_help)                                   \
	MGPU_OPT_HEAD("output"),                                                        \
	MGPU_OPT_ROW(MGPU_OPT_STR, "output", 'o', ty, m.output, 0, 0, out_arg, out_help,  \
		     MGPU_OPT_NODEF | MGPU_OPT_META),                                   \
	MGPU_OPT_WORDS("format", ty, m.format, mgpu_format_words, "tsv|json|markdown",   \
		       "the data's format", MGPU_OPT_NODEF | MGPU_OPT_META),            \
	MGPU_OPT_ROW(MGPU_OPT_FLAG, "json", 0, ty, m.json, 0, 0, NULL,                  \
		     "the same as --format json (JSON Lines)", MGPU_OPT_META),          \
	MGPU_OPT_ROW(MGPU_OPT_FLAG, "quiet", 'q', ty, m.quiet, 0, 0, NULL,              \
		     "no messages on standard error but errors", MGPU_OPT_META),        \
	MGPU_OPT_ROW(MGPU_OPT_FLAG, "verbose", 'v', ty, m.verbose, 0, 0, NULL,          \
		     "more messages (with -V: the compiled-in features)", MGPU_OPT_META), \
	MGPU_OPT_ROW(MGPU_OPT_FLAG, "version", 'V', ty, m.version, 0, 0, NULL,          \
		     "print the version and exit", MGPU_OPT_META),                      \
	MGPU_OPT_ROW(MGPU_OPT_FLAG, "help", 'h', ty, m.help, 0, 0, NULL,                \
		     "print this help and exit", MGPU_OPT_META)

/* --config FILE and --print-config, for tools whose settings a file can
 * hold (core/conf.h); the tool's struct tool_cli gives its size. */
#define MGPU_OPT_CONFIG(ty, m)                                                          \
	MGPU_OPT_HEAD("configuration files"),                                            \
	MGPU_OPT_ROW(MGPU_OPT_STR, "config", 'f', ty, m.config, 0, 0, "FILE",             \
		     "read settings from FILE, 'key = value' lines; the command line "     \
		     "overrides them", MGPU_OPT_NODEF | MGPU_OPT_META),                    \
	MGPU_OPT_ROW(MGPU_OPT_FLAG, "print-config", 0, ty, m.print_config, 0, 0, NULL,    \
		     "print the resolved settings as such a file and exit", MGPU_OPT_META)

/* Which rows a parse set: given[i] for row i. */
struct mgpu_opt_given {
	unsigned char row[MGPU_OPT_MAX];
};

/* Parse argv[1..] into target. Options stop at the first non-option when
 * stop_at_arg (so a tool can pass the rest on), else they may be mixed with
 * arguments (GNU order). *first_arg: the index of the first argument left.
 * given (may be NULL) gains the rows seen. */
int mgpu_opt_parse(const struct mgpu_opt *tab, void *target, int argc, char **argv,
		   int stop_at_arg, int *first_arg, struct mgpu_opt_given *given);
/* Set row o of target to value as the command line would (a config file's
 * value, core/conf.h); a flag takes 1/0, yes/no, true/false or on/off and
 * may be cleared. MGPU_EINVAL naming the option on a bad value. */
int mgpu_opt_set(const struct mgpu_opt *o, void *target, const char *value);
/* The row of the option called name ("lr", without dashes); NULL if none. */
const struct mgpu_opt *mgpu_opt_find(const struct mgpu_opt *tab, const char *name);
/* Whether the option called name was given (a parse set it in given). */
int mgpu_opt_was_given(const struct mgpu_opt *tab, const struct mgpu_opt_given *given,
		       const char *name);
/* A row's value in target as the canonical argument ("0.05", "adamw"):
 * numbers with the fewest digits that read back to the same value; flags
 * render as "0" or "1". exact=0 rounds numbers to 6 digits for --help. */
void mgpu_opt_render(const struct mgpu_opt *o, const void *target, int exact, char *buf,
		     size_t len);
/* v as mgpu_opt_render writes an exact number: the fewest digits that
 * read back to the same double (as_float: the same float). */
void mgpu_opt_exact_num(char *buf, size_t len, double v, int as_float);
/* Options, one per line under their group headings, with the defaults of
 * the struct defaults (may be NULL). */
void mgpu_opt_help(FILE *f, const struct mgpu_opt *tab, const void *defaults);

/* The saved rows of target as an argv ("--lr", "0.05", ...) for a
 * checkpoint; flags appear only when set. Free with mgpu_opt_argv_free. */
struct mgpu_opt_argv {
	char **argv;
	int argc;
};
int mgpu_opt_saved_argv(const struct mgpu_opt *tab, const void *target,
			struct mgpu_opt_argv *out);
/* Every setting of target (all rows but MGPU_OPT_META ones) with a value
 * as an argv: the resolved command line a verbose tool prints. Empty
 * strings, unset flags and MGPU_OPT_UNSET0 rows at 0 are left out. */
int mgpu_opt_settings_argv(const struct mgpu_opt *tab, const void *target,
			   struct mgpu_opt_argv *out);
void mgpu_opt_argv_free(struct mgpu_opt_argv *a);

/* The first MGPU_OPT_FIXED row given on this command line whose value in
 * now differs from the value in saved; NULL when none. */
const struct mgpu_opt *mgpu_opt_fixed_differs(const struct mgpu_opt *tab, const void *saved,
					      const void *now,
					      const struct mgpu_opt_given *given);

#endif
