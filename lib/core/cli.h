/*
 * cli.h - strict parsing of command-line numbers and lists.
 *
 * Every parser rejects trailing garbage ("4x"), empty strings, overflow and
 * values outside [min, max], storing a message that names the option.
 * Sizes accept K, M, G (powers of 1024) suffixes.
 */
#ifndef MGPU_CORE_CLI_H
#define MGPU_CORE_CLI_H

#include <stddef.h> /* size_t */

int mgpu_cli_int(const char *opt, const char *s, long long min, long long max,
		 long long *out);
int mgpu_cli_size(const char *opt, const char *s, unsigned long long max,
		  unsigned long long *out);
int mgpu_cli_double(const char *opt, const char *s, double min, double max, double *out);
/* One of a NULL-terminated list of words; *out is its index. */
int mgpu_cli_choice(const char *opt, const char *s, const char *const *words, int *out);
/* The same over the first n words only (n < 0: all of them). */
int mgpu_cli_choice_n(const char *opt, const char *s, const char *const *words, int n,
		      int *out);
/* A comma list of non-negative ints ("0,1,3"), at most max_n of them. */
int mgpu_cli_int_list(const char *opt, const char *s, int *out, int max_n, int *n);

#endif
