/*
 * common_opts.c - what every tool does with the options they all share
 * (MGPU_OPT_COMMON in core/opt.h): reading the command line through the
 * tool's option table with usage errors, --help and --version, and the
 * data output that -o and --format select (see common.h).
 */
#include "common.h"

#include <stdio.h>  /* printf, fflush */
#include <stdlib.h> /* exit, malloc */
#include <string.h> /* strcmp */

#include "core/conf.h"  /* mgpu_conf_read */
#include "core/table.h" /* MGPU_FMT_JSON */

void print_help(const struct tool_cli *cli)
{
	fputs(cli->synopsis, stdout);
	fputc('\n', stdout);
	mgpu_opt_help(stdout, cli->tab, cli->defaults);
	printf("\nSee %s(1); the options every tool shares: mgpu(7).\n", mgpu_tool_name);
}

/* --json is --format json; with another --format it is a contradiction. */
static void settle_format(const struct tool_cli *cli, struct mgpu_common_opts *com,
			  const struct mgpu_opt_given *given)
{
	if (!com->json)
		return;
	if (mgpu_opt_was_given(cli->tab, given, "format") && com->format != MGPU_FMT_JSON)
		usage_error("--json and --format %s: choose one", mgpu_format_words[com->format]);
	com->format = MGPU_FMT_JSON;
}

/* The --config of argv, found by parsing it into a copy of target (so
 * that an argument that merely looks like -f is not taken for one);
 * NULL when none. A bad command line is left to the real parse. */
static const char *config_path(const struct tool_cli *cli, const void *target,
			       const struct mgpu_common_opts *com, int argc, char **argv,
			       int stop_at_arg)
{
	size_t at = (size_t)((const char *)com - (const char *)target);
	const char *path = NULL;
	char *copy;
	int first;

	if (!cli->size || !mgpu_opt_find(cli->tab, "config"))
		return NULL;
	copy = malloc(cli->size);
	if (!copy)
		die("out of memory");
	memcpy(copy, target, cli->size);
	if (mgpu_opt_parse(cli->tab, copy, argc, argv, stop_at_arg, &first, NULL) == 0)
		path = ((const struct mgpu_common_opts *)(const void *)(copy + at))->config;
	free(copy);
	return path;
}

/* Files read stay in memory: MGPU_OPT_STR rows point into them. */
static struct mgpu_conf confs[8];
static int nconfs;

/* The settings of the file at path into target, each row marked in seen. */
static void apply_config(const struct tool_cli *cli, void *target, const char *path,
			 struct mgpu_opt_given *seen)
{
	static const char *const refuse[] = { "config", "print-config", "help", "version",
					       NULL };
	struct mgpu_conf *c;
	int i, rc;

	if (nconfs == (int)(sizeof confs / sizeof confs[0]))
		die("--config: too many configuration files read");
	c = &confs[nconfs++];
	rc = mgpu_conf_read(cli->tab, path, refuse, c);
	if (rc == MGPU_EINVAL)
		usage_error("%s", mgpu_errmsg());
	if (rc < 0)
		die("--config: %s", mgpu_errmsg());
	for (i = 0; i < c->n; i++) {
		/* a setter that exits (usage_error) still names the line */
		snprintf(mgpu_usage_where, sizeof mgpu_usage_where, "%s:%d: ", path, c->e[i].line);
		if (mgpu_opt_set(c->e[i].row, target, c->e[i].value) < 0)
			usage_error("%s", mgpu_errmsg());
		seen->row[c->e[i].row - cli->tab] = 1;
	}
	mgpu_usage_where[0] = '\0';
}

void print_config(FILE *f, const struct tool_cli *cli, const void *target, const char *cmd)
{
	char title[160];

	if (!cmd)
		cmd = mgpu_tool_name;
	snprintf(title, sizeof title, "%s settings (%s --config FILE reads them back)", cmd, cmd);
	if (mgpu_conf_write(f, cli->tab, target, title) < 0)
		die_lib();
}

int parse_options(const struct tool_cli *cli, void *target, struct mgpu_common_opts *com,
		  int argc, char **argv, int stop_at_arg, struct mgpu_opt_given *given)
{
	struct mgpu_opt_given seen;
	const char *conf = config_path(cli, target, com, argc, argv, stop_at_arg);
	int first;

	memset(&seen, 0, sizeof seen);
	if (conf)
		apply_config(cli, target, conf, &seen);
	if (mgpu_opt_parse(cli->tab, target, argc, argv, stop_at_arg, &first, &seen) < 0)
		usage_error("%s", mgpu_errmsg());
	if (given)
		*given = seen;
	if (com->help) {
		print_help(cli);
		finish_stdout();
		exit(0);
	}
	if (com->version) {
		print_version(com->verbose);
		finish_stdout();
		exit(0);
	}
	settle_format(cli, com, &seen);
	if (com->output && !com->output[0])
		usage_error("--output: empty file name");
	if (com->output && strcmp(com->output, "-") == 0)
		com->output = NULL;
	mgpu_quiet = com->quiet;
	return first;
}

FILE *output_open(struct output *out, const struct mgpu_common_opts *com)
{
	memset(out, 0, sizeof *out);
	out->fp = stdout;
	if (!com->output)
		return out->fp;
	if (mgpu_afile_open(&out->af, com->output) < 0)
		die_lib();
	out->fp = out->af.fp;
	out->to_file = 1;
	return out->fp;
}

void output_commit(struct output *out)
{
	if (!out->to_file) {
		finish_stdout();
		return;
	}
	if (mgpu_afile_commit(&out->af) < 0) {
		mgpu_afile_abort(&out->af);
		die_lib();
	}
	out->to_file = 0;
}

void output_abort(struct output *out)
{
	if (out->to_file)
		mgpu_afile_abort(&out->af);
	out->to_file = 0;
}
