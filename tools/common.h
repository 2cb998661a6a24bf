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
/* "mgpu-x: warning: <msg>" on stderr. */
void warn(const char *fmt, ...) MGPU_PRINTF(1, 2);
/* Print the version (with verbose: features and library versions). */
void print_version(int verbose);
/* Option values, strictly parsed (core/cli.h); a bad one is a usage error
 * naming the option. */
long long opt_int(const char *opt, const char *arg, long long lo, long long hi);
double opt_double(const char *opt, const char *arg, double lo, double hi);
unsigned long long opt_size(const char *opt, const char *arg, unsigned long long max);
/* The index of arg in the NULL-terminated words. */
int opt_choice(const char *opt, const char *arg, const char *const *words);
/* Write stdout; exit quietly with 1 when the reader went away. */
void finish_stdout(void);

#endif
