/*
 * common.h - what every mgpu tool shares: the entry point each tool
 * provides, error exits and the standard --version output.
 *
 * common_main.c holds the one main(): it sets up signals (SIGPIPE is
 * ignored so a closed pipe is a write error, reported quietly), calls
 * cmd_main(), then checks that stdout was flushed.
 */
#ifndef MGPU_TOOLS_COMMON_H
#define MGPU_TOOLS_COMMON_H

#include <signal.h> /* sig_atomic_t */

#include "core/err.h" /* MGPU_PRINTF */
#include "core/io.h"  /* struct mgpu_afile */
#include "core/opt.h" /* struct mgpu_opt, struct mgpu_common_opts */

/* Each tool defines these two. */
extern const char *const mgpu_tool_name;
int cmd_main(int argc, char **argv);

/* Set by SIGINT/SIGTERM; tools poll it between steps. */
extern volatile sig_atomic_t mgpu_interrupted;
/* Prefix for diagnostics, e.g. "rank 1"; empty by default. */
extern char mgpu_diag_prefix[64];

/* "mgpu-x: error: <msg>" on stderr, exit 1. */
_Noreturn void die(const char *fmt, ...) MGPU_PRINTF(1, 2);
/* die() with the library's stored message. */
_Noreturn void die_lib(void);
/* After a failure: when SIGINT or SIGTERM asked to stop (core/cancel.h),
 * say so and exit 128 + the signal (130, 143); else return. */
void exit_if_interrupted(void);
/* "mgpu-x: <msg>\nTry 'mgpu-x --help'" on stderr, exit 2. */
_Noreturn void usage_error(const char *fmt, ...) MGPU_PRINTF(1, 2);
/* "mgpu-x: warning: <msg>" on stderr, unless -q. */
void warn(const char *fmt, ...) MGPU_PRINTF(1, 2);
/* "mgpu-x: error: <msg>" on stderr, without exiting (the caller goes on
 * to clean up, or reports several). */
void error_msg(const char *fmt, ...) MGPU_PRINTF(1, 2);
/* "mgpu-x: <msg>" on stderr: what the tool did or found. Callers decide
 * whether -q silences it; the rank prefix is left out (rank 0 speaks for
 * the job). */
void note(const char *fmt, ...) MGPU_PRINTF(1, 2);
/* Print the version (with verbose: features and library versions). */
void print_version(int verbose);
/* Flush stdout; end as exit_pipe_closed() when the reader went away. */
void finish_stdout(void);
/* The reader of standard output went away (EPIPE): end as Unix tools do,
 * quietly and killed by SIGPIPE (status 141 in a shell), so that a
 * pipeline's reader such as head(1) sees the usual status. A rank started
 * by mgpu-train's own launcher exits MGPU_EXIT_PIPE to it instead. */
_Noreturn void exit_pipe_closed(void);

/* Said before a usage error's message while a --config file's line is
 * applied ("run.conf:3: "); empty otherwise. */
extern char mgpu_usage_where[300];

/* -q was given: warn() says nothing (set by parse_options). */
extern int mgpu_quiet;

/* How a tool's command line is read: its option table (with the
 * MGPU_OPT_COMMON rows over com), the synopsis --help prints above the
 * options, and the defaults --help shows. */
struct tool_cli {
	const struct mgpu_opt *tab;
	const char *synopsis; /* "usage: mgpu-x ...\n<one line>\n" */
	const void *defaults;
	size_t size; /* of the target struct, for tools with MGPU_OPT_CONFIG rows */
};

/* Parse argv into target. With --config FILE (MGPU_OPT_CONFIG rows, cli's
 * size set) the file's settings come first and the command line's over
 * them; given then includes the rows the file set, and a bad line is a
 * usage error naming the file and line. A bad option is a usage error (exit 2); --help
 * prints the help and --version the version, both exiting 0. --json sets
 * --format json, "-o -" means standard output. Returns the index of the
 * first argument; given (may be NULL) gains the rows seen. */
int parse_options(const struct tool_cli *cli, void *target, struct mgpu_common_opts *com,
		  int argc, char **argv, int stop_at_arg, struct mgpu_opt_given *given);
/* The settings of target in the --config format (core/conf.h) on f,
 * titled with cmd ("mgpu-bench train"; NULL: the tool's name); dies on a
 * write error. */
void print_config(FILE *f, const struct tool_cli *cli, const void *target, const char *cmd);
/* Print the help of cli on stdout. */
void print_help(const struct tool_cli *cli);

/* The data output: standard output, or -o FILE written atomically (the
 * file appears complete or not at all). */
struct output {
	FILE *fp;
	struct mgpu_afile af;
	int to_file;
};
/* Open the output com names; dies when the file cannot be created. */
FILE *output_open(struct output *out, const struct mgpu_common_opts *com);
/* Flush and (-o) commit; a write error dies, a closed pipe exits quietly. */
void output_commit(struct output *out);
/* Remove a half-written -o file; nothing for standard output. */
void output_abort(struct output *out);

#endif
