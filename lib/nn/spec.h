/*
 * spec.h - model specifications: "mlp:784-512-256-10" plus options.
 *
 * Grammar: mlp:D0-D1-...-Dn[,OPTION...] where OPTION is act=relu|gelu|tanh,
 * dropout=P (0 <= P < 1, after each hidden activation), layernorm (or
 * layernorm=0|1, before each hidden activation). A --model argument that
 * does not start with "mlp:" names a file holding a spec: '#' starts a
 * comment, and whitespace or newlines separate the options like commas.
 */
#ifndef MGPU_NN_SPEC_H
#define MGPU_NN_SPEC_H

#include <stddef.h> /* size_t */

#define MGPU_MAX_LAYERS 16

struct mgpu_spec {
	int nlayers;                  /* linear layers: dims has nlayers + 1 */
	int dims[MGPU_MAX_LAYERS + 1];
	int act;                      /* enum mgpu_act */
	float dropout;
	int layernorm;
};

int mgpu_spec_parse(struct mgpu_spec *s, const char *text, const char *origin);
/* A spec string, or the path of a file holding one. */
int mgpu_spec_load(struct mgpu_spec *s, const char *arg);
/* The canonical string, which mgpu_spec_parse reads back to the same spec. */
int mgpu_spec_format(const struct mgpu_spec *s, char *buf, size_t len);
const char *mgpu_act_name(int act);

#endif
