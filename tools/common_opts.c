/*
 * common_opts.c - what every tool does with the options they all share
 * (MGPU_OPT_COMMON in core/opt.h): reading the command line through the
 * tool's option table with usage errors, --help and --version, and the
 * data output that -o and --format select (see common.h).
 */
#include "common.h"

#include <stdio.h>  /* printf, fflush */
#include <stdlib.h> /* exit */
#include <string.h> /* strcmp */

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

int parse_options(const struct tool_cli *cli, void *target, struct mgpu_common_opts *com,
		  int argc, char **argv, int stop_at_arg, struct mgpu_opt_given *given)
{
	struct mgpu_opt_given seen;
	int first;

	memset(&seen, 0, sizeof seen);
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
