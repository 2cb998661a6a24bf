/*
 * arch.c - the table of model families (see arch.h): one line each,
 * indexed by enum mgpu_model_kind.
 */
#include "model/arch.h"

#include <stdio.h>  /* snprintf */
#include <string.h> /* strlen, strncmp */

static const struct mgpu_arch *const archs[MGPU_MODEL_KINDS] = {
	[MGPU_MODEL_MLP] = &mgpu_arch_mlp,
	[MGPU_MODEL_GPT] = &mgpu_arch_gpt,
	[MGPU_MODEL_CNN] = &mgpu_arch_cnn,
};

const struct mgpu_arch *mgpu_arch_of(const struct mgpu_spec *s)
{
	return archs[s->kind >= 0 && s->kind < MGPU_MODEL_KINDS ? s->kind : MGPU_MODEL_MLP];
}

const struct mgpu_arch *mgpu_arch_find(const char *text, int *kind)
{
	size_t n;
	int k;

	for (k = 0; k < MGPU_MODEL_KINDS; k++) {
		n = strlen(archs[k]->name);
		if (strncmp(text, archs[k]->name, n) == 0 && text[n] == ':') {
			if (kind)
				*kind = k;
			return archs[k];
		}
	}
	return NULL;
}

const char *mgpu_arch_names(char *buf, size_t len, int quoted)
{
	size_t o = 0;
	int k;

	buf[0] = '\0';
	for (k = 0; k < MGPU_MODEL_KINDS && o < len; k++) {
		if (k)
			o += (size_t)snprintf(buf + o, len - o, k + 1 < MGPU_MODEL_KINDS ? ", " : " or ");
		if (o < len)
			o += (size_t)snprintf(buf + o, len - o, quoted ? "'%s:'" : "%s:...",
					      archs[k]->name);
	}
	return buf;
}
