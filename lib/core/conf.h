/*
 * conf.h - configuration files over an option table (core/opt.h): one
 * option a line as `key = value`, the key an option's long name, so that
 * a file holds exactly what a command line can say.
 *
 * Syntax (mgpu(7) CONFIGURATION FILES): blank lines and lines whose first
 * non-blank character is '#' are comments; `key = value` sets the option
 * called key ('_' may stand for '-'); the value runs to the end of the
 * line, blanks trimmed, up to a ' #' comment; a value in double quotes
 * keeps its blanks and '#', with \" \\ \n \t escapes. Flags take 1/0
 * (yes/no, true/false, on/off).
 *
 * Reading checks the syntax and the keys; the caller applies each entry
 * (mgpu_opt_set, core/opt.h) so that a bad value is reported with the entry's line.
 * Writing renders the settings of a target in the same syntax, so a file
 * written is a file read. Nothing here prints or exits.
 */
#ifndef MGPU_CORE_CONF_H
#define MGPU_CORE_CONF_H

#include <stddef.h> /* size_t */
#include <stdio.h>  /* FILE */

#include "core/opt.h" /* struct mgpu_opt */

struct mgpu_conf_entry {
	const struct mgpu_opt *row;
	char *value; /* owned by the conf; MGPU_OPT_STR rows point into it */
	int line;
};

struct mgpu_conf {
	char *path;
	struct mgpu_conf_entry *e;
	int n;
};

/* Read path against tab. Errors: MGPU_EIO when it cannot be read;
 * MGPU_EINVAL "PATH:LINE: ..." for a bad line or an unknown key, or a key
 * whose row is in refuse (rows a file may not set: NULL-terminated names,
 * may be NULL). */
int mgpu_conf_read(const struct mgpu_opt *tab, const char *path, const char *const *refuse,
		   struct mgpu_conf *out);
/* The same over len bytes of text at data, name standing for the file
 * in messages. */
int mgpu_conf_parse(const struct mgpu_opt *tab, const char *name, const char *data, size_t len,
		    const char *const *refuse, struct mgpu_conf *out);
void mgpu_conf_free(struct mgpu_conf *c);

/* The settings of target (as mgpu_opt_settings_argv picks them) as
 * `key = value` lines under '#' headings of the table's groups, after a
 * comment line with title. Returns 0, or MGPU_EIO on a write error. */
int mgpu_conf_write(FILE *f, const struct mgpu_opt *tab, const void *target, const char *title);

#endif
