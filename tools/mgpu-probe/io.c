/*
 * io.c - what the list (main.c) and --system (system.c) of mgpu-probe both
 * use: the output stream, stdout or an atomic -o file, and the GPU list
 * read from this machine or from a --from CSV (a file or standard input)
 * with CUDA_VISIBLE_DEVICES applied. Failures die naming the file.
 */
#include <stdio.h>  /* fread, fileno, ferror */
#include <stdlib.h> /* getenv, malloc, realloc, free */
#include <string.h> /* strcmp */
#include <unistd.h> /* isatty */

#include "../common.h" /* die, die_lib, output_open, output_commit */
#include "core/io.h"   /* mgpu_read_file */
#include "gpu/gpu.h"   /* mgpu_gpu_enumerate, mgpu_gpu_parse_smi_csv */
#include "probe.h"     /* struct opts, struct out */

#define STDIN_MAX (64LL << 20)

void out_open(struct out *out, const struct opts *o)
{
	out->fp = output_open(&out->o, &o->com);
	/* a person reads an aligned table, unless a format was asked for */
	out->tty = !o->com.json && !o->ids && !o->format_set && isatty(fileno(out->fp));
}

_Noreturn void out_fail(struct out *out)
{
	output_abort(&out->o);
	finish_stdout();
	die_lib();
}

void out_close(struct out *out)
{
	output_commit(&out->o);
}

static char *read_stdin(size_t *len)
{
	size_t cap = 65536, got;
	char *buf = malloc(cap), *nb;

	*len = 0;
	while (buf) {
		got = fread(buf + *len, 1, cap - *len, stdin);
		*len += got;
		if (got == 0)
			break;
		if (*len == cap) {
			if (cap >= (size_t)STDIN_MAX)
				die("--from -: standard input is larger than %lld bytes", STDIN_MAX);
			nb = realloc(buf, cap * 2);
			if (!nb)
				free(buf);
			buf = nb;
			cap *= 2;
		}
	}
	if (!buf)
		die("out of memory reading standard input");
	if (ferror(stdin))
		die("--from -: cannot read standard input");
	return buf;
}

void load_list(const struct opts *o, struct mgpu_gpu_list *list)
{
	unsigned char *data;
	char *text;
	size_t len;
	int rc;

	if (!o->from) {
		if (mgpu_gpu_enumerate(list) < 0)
			die_lib();
		return;
	}
	if (strcmp(o->from, "-") == 0) {
		text = read_stdin(&len);
		rc = mgpu_gpu_parse_smi_csv(text, len, "standard input", list);
		free(text);
	} else {
		if (mgpu_read_file(o->from, &data, &len) < 0)
			die_lib();
		rc = mgpu_gpu_parse_smi_csv((const char *)data, len, o->from, list);
		free(data);
	}
	if (rc < 0)
		die_lib();
	/* CUDA applies CUDA_VISIBLE_DEVICES itself; a captured list needs it done. */
	mgpu_gpu_apply_visible(list, getenv("CUDA_VISIBLE_DEVICES"));
}
