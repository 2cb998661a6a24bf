/*
 * cli.c - strict number and list parsing for options (see cli.h).
 */
#include "core/cli.h"

#include <errno.h>  /* errno, ERANGE */
#include <stdio.h>  /* snprintf */
#include <math.h>   /* isfinite */
#include <stdlib.h> /* strtoll, strtod */
#include <string.h> /* strcmp */

#include "core/err.h" /* mgpu_err */

int mgpu_cli_int(const char *opt, const char *s, long long min, long long max,
		 long long *out)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (*s == '\0' || *end != '\0' || s[0] == ' ')
		return mgpu_err(MGPU_EINVAL, "%s: '%s' is not an integer", opt, s);
	if (errno == ERANGE || v < min || v > max)
		return mgpu_err(MGPU_EINVAL, "%s: %s is out of range [%lld, %lld]", opt, s,
				min, max);
	*out = v;
	return 0;
}

int mgpu_cli_size(const char *opt, const char *s, unsigned long long max,
		  unsigned long long *out)
{
	char *end;
	unsigned long long v, mul = 1;

	errno = 0;
	if (*s < '0' || *s > '9')
		return mgpu_err(MGPU_EINVAL, "%s: '%s' is not a size", opt, s);
	v = strtoull(s, &end, 10);
	switch (*end) {
	case 'K': case 'k': mul = 1ull << 10; end++; break;
	case 'M': case 'm': mul = 1ull << 20; end++; break;
	case 'G': case 'g': mul = 1ull << 30; end++; break;
	default: break;
	}
	if (*end != '\0')
		return mgpu_err(MGPU_EINVAL, "%s: '%s' is not a size", opt, s);
	if (errno == ERANGE || v > max / mul)
		return mgpu_err(MGPU_EINVAL, "%s: %s is too large (max %llu)", opt, s, max);
	*out = v * mul;
	return 0;
}

int mgpu_cli_double(const char *opt, const char *s, double min, double max, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (*s == '\0' || *end != '\0' || s[0] == ' ' || !isfinite(v))
		return mgpu_err(MGPU_EINVAL, "%s: '%s' is not a number", opt, s);
	if (errno == ERANGE || v < min || v > max)
		return mgpu_err(MGPU_EINVAL, "%s: %s is out of range [%g, %g]", opt, s, min,
				max);
	*out = v;
	return 0;
}

int mgpu_cli_choice(const char *opt, const char *s, const char *const *words, int *out)
{
	return mgpu_cli_choice_n(opt, s, words, -1, out);
}

int mgpu_cli_choice_n(const char *opt, const char *s, const char *const *words, int n,
		      int *out)
{
	char list[256] = "";
	size_t len = 0;
	int i;

	for (i = 0; words[i] && (n < 0 || i < n); i++) {
		if (strcmp(s, words[i]) == 0) {
			*out = i;
			return 0;
		}
		len += (size_t)snprintf(list + len, len < sizeof list ? sizeof list - len : 0,
					"%s%s", i ? "|" : "", words[i]);
	}
	return mgpu_err(MGPU_EINVAL, "%s: '%s' is not one of %s", opt, s, list);
}

int mgpu_cli_int_list(const char *opt, const char *s, int *out, int max_n, int *n)
{
	const char *p = s;
	char *end;
	long v;

	*n = 0;
	if (*s == '\0')
		return mgpu_err(MGPU_EINVAL, "%s: empty list", opt);
	for (;;) {
		errno = 0;
		if (*p < '0' || *p > '9')
			return mgpu_err(MGPU_EINVAL, "%s: '%s' is not a list of integers", opt, s);
		v = strtol(p, &end, 10);
		if (errno == ERANGE || v > 1000000)
			return mgpu_err(MGPU_EINVAL, "%s: '%s': number out of range", opt, s);
		if (*n == max_n)
			return mgpu_err(MGPU_EINVAL, "%s: more than %d entries", opt, max_n);
		out[(*n)++] = (int)v;
		if (*end == '\0')
			return 0;
		if (*end != ',')
			return mgpu_err(MGPU_EINVAL, "%s: '%s' is not a list of integers", opt, s);
		p = end + 1;
	}
}
