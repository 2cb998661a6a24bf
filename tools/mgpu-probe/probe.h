/*
 * probe.h - what the files of mgpu-probe share: the parsed options, the
 * output stream (stdout or an atomic -o file) and the GPU list as the
 * options ask for it (io.c), and the --system report (system.c).
 */
#ifndef MGPU_TOOLS_PROBE_H
#define MGPU_TOOLS_PROBE_H

#include <stdio.h> /* FILE */

#include "../common.h" /* struct output */
#include "core/opt.h" /* struct mgpu_common_opts, struct mgpu_opt_given */
#include "gpu/gpu.h"  /* struct mgpu_gpu_policy, struct mgpu_gpu_list */

struct opts {
	struct mgpu_gpu_policy pol;
	const char *from;
	int ids, system, single;
	int format_set;              /* --format was given: no aligned text */
	struct mgpu_common_opts com; /* -o, --format, --json, -q, -v, -V, -h */
	struct mgpu_opt_given given; /* options given on the command line */
};

/* Where the output goes: stdout, or an atomic file (-o). */
struct out {
	struct output o; /* stdout or the -o file (tools/common.h) */
	FILE *fp;        /* o.fp */
	int tty;         /* aligned text for a person, not TSV */
};

/* io.c: open stdout or the -o file; out->tty when a person reads it. */
void out_open(struct out *out, const struct opts *o);
/* Remove a partial -o file and die with the library's message. */
_Noreturn void out_fail(struct out *out);
/* Flush and commit; dies on a write error. */
void out_close(struct out *out);
/* The GPUs of this machine, or of the --from CSV with CUDA_VISIBLE_DEVICES
 * applied; dies naming the file on bad input. */
void load_list(const struct opts *o, struct mgpu_gpu_list *list);

/* mgpu-probe --system: versions, GPUs, P2P, host and the checklist. */
int system_report(const struct opts *o);

#endif
