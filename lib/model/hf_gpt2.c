/*
 * hf_gpt2.c - gpt weights to and from Hugging Face's GPT-2 layout (see
 * hf_gpt2.h).
 */
#include "model/hf_gpt2.h"

#include <stdio.h>  /* snprintf, fprintf */
#include <stdlib.h> /* malloc, free */
#include <string.h> /* strncmp, strcmp, memcpy, memset */

#include "core/err.h"        /* mgpu_err */
#include "core/io.h"         /* mgpu_afile_*, mgpu_mkdirs, mgpu_path_join */
#include "model/safetensors.h"  /* mgpu_st_* */

/* HF's name of mgpu parameter name, and whether its weight is transposed. */
static int hf_name(const char *name, char *out, size_t len, int *transpose)
{
	static const struct {
		const char *mgpu, *hf;
		int t;
	} blk[] = {
		{ "ln1.weight", "ln_1.weight", 0 },         { "ln1.bias", "ln_1.bias", 0 },
		{ "ln2.weight", "ln_2.weight", 0 },         { "ln2.bias", "ln_2.bias", 0 },
		{ "attn.qkv.weight", "attn.c_attn.weight", 1 },
		{ "attn.qkv.bias", "attn.c_attn.bias", 0 },
		{ "attn.proj.weight", "attn.c_proj.weight", 1 },
		{ "attn.proj.bias", "attn.c_proj.bias", 0 },
		{ "mlp.fc.weight", "mlp.c_fc.weight", 1 },  { "mlp.fc.bias", "mlp.c_fc.bias", 0 },
		{ "mlp.proj.weight", "mlp.c_proj.weight", 1 },
		{ "mlp.proj.bias", "mlp.c_proj.bias", 0 },
	};
	const char *rest;
	size_t i;
	int l;

	*transpose = 0;
	if (strncmp(name, "blocks.", 7) != 0) { /* wte, wpe, ln_f keep their names */
		snprintf(out, len, "%s", name);
		return 0;
	}
	l = atoi(name + 7);
	rest = strchr(name + 7, '.');
	for (i = 0; rest && i < sizeof blk / sizeof blk[0]; i++)
		if (strcmp(rest + 1, blk[i].mgpu) == 0) {
			snprintf(out, len, "h.%d.%s", l, blk[i].hf);
			*transpose = blk[i].t;
			return 0;
		}
	return mgpu_err(MGPU_EINVAL, "hf: no GPT-2 name for '%s'", name);
}

/* dst (c, r) = src (r, c) transposed. */
static void transpose(float *dst, const float *src, int r, int c)
{
	int i, j;

	for (i = 0; i < r; i++)
		for (j = 0; j < c; j++)
			dst[(size_t)j * r + i] = src[(size_t)i * c + j];
}

/* GPT-2's config; bos and eos are the last token, as GPT-2's <|endoftext|>
 * (50256 of 50257). */
static int write_config(const struct mgpu_model *m, const char *dir)
{
	const struct mgpu_spec *s = &m->spec;
	struct mgpu_afile af;
	char path[4200];

	MGPU_TRY(mgpu_path_join(path, sizeof path, dir, "config.json"));
	MGPU_TRY(mgpu_afile_open(&af, path));
	fprintf(af.fp,
		"{\n  \"architectures\": [\"GPT2LMHeadModel\"],\n  \"model_type\": \"gpt2\",\n"
		"  \"vocab_size\": %d,\n  \"n_positions\": %d,\n  \"n_ctx\": %d,\n"
		"  \"n_embd\": %d,\n  \"n_layer\": %d,\n  \"n_head\": %d,\n"
		"  \"activation_function\": \"gelu\",\n  \"layer_norm_epsilon\": 1e-05,\n"
		"  \"resid_pdrop\": %.9g,\n  \"embd_pdrop\": %.9g,\n  \"attn_pdrop\": 0.0,\n"
		"  \"bos_token_id\": %d,\n  \"eos_token_id\": %d,\n"
		"  \"tie_word_embeddings\": true,\n  \"torch_dtype\": \"float32\"\n}\n",
		s->vocab, s->ctx, s->ctx, s->dim, s->blocks, s->heads, (double)s->dropout,
		(double)s->dropout, s->vocab - 1, s->vocab - 1);
	return mgpu_afile_commit(&af);
}

int mgpu_hf_gpt2_supports(const struct mgpu_spec *s)
{
	return s->kind == MGPU_MODEL_GPT; /* this file is the gpt family's layout */
}

int mgpu_hf_gpt2_export(struct mgpu_model *m, const char *dir)
{
	static const char *const meta[] = { "format", "pt" };
	struct mgpu_st_entry e[MGPU_MAX_PARAMS];
	char names[MGPU_MAX_PARAMS][64], path[4200];
	float *w = NULL, *t = NULL;
	int i, tr, rc = 0;

	if (!mgpu_hf_gpt2_supports(&m->spec))
		return mgpu_err(MGPU_EINVAL, "hf: only a gpt exports as GPT-2");
	w = malloc(m->nparams * sizeof *w);
	t = malloc(m->nparams * sizeof *t);
	if (!w || !t) {
		rc = mgpu_err(MGPU_ENOMEM, "hf: out of host memory");
		goto out;
	}
	MGPU_CHECK(mgpu_model_get(m, w));
	for (i = 0; i < m->nparam; i++) {
		const struct mgpu_param *p = &m->params[i];
		MGPU_CHECK(hf_name(p->name, names[i], sizeof names[i], &tr));
		e[i].name = names[i];
		e[i].ndim = p->ndim;
		e[i].shape[0] = p->shape[0];
		e[i].shape[1] = p->shape[1];
		e[i].data = w + p->off;
		if (i == 0) /* wte: the real vocabulary's rows only */
			e[i].shape[0] = m->spec.vocab;
		if (tr) {
			transpose(t + p->off, w + p->off, p->shape[0], p->shape[1]);
			e[i].data = t + p->off;
			e[i].shape[0] = p->shape[1];
			e[i].shape[1] = p->shape[0];
		}
	}
	MGPU_CHECK(mgpu_mkdirs(dir));
	MGPU_CHECK(mgpu_path_join(path, sizeof path, dir, "model.safetensors"));
	MGPU_CHECK(mgpu_st_write(path, e, m->nparam, meta, 1));
	rc = write_config(m, dir);
out:
	free(w);
	free(t);
	return rc;
}

/* The tensor of p in st: HF's name (bare or "transformer.") when hf. */
static const struct mgpu_st_tensor *find(const struct mgpu_st *st, const char *name, int hf)
{
	char pre[96];
	const struct mgpu_st_tensor *t = mgpu_st_find(st, name);

	if (t || !hf)
		return t;
	snprintf(pre, sizeof pre, "transformer.%s", name);
	return mgpu_st_find(st, pre);
}

int mgpu_hf_gpt2_load(struct mgpu_model *m, const char *path)
{
	struct mgpu_st st = { 0 };
	const struct mgpu_st_tensor *t;
	float *w = NULL, *tmp = NULL;
	char name[64];
	int i, tr, hf, rows, cols, rc = 0;

	if (!mgpu_hf_gpt2_supports(&m->spec))
		return mgpu_err(MGPU_EINVAL, "--init: only a gpt reads GPT-2 weights");
	MGPU_TRY(mgpu_st_load(path, &st));
	hf = find(&st, "h.0.attn.c_attn.weight", 1) != NULL;
	w = calloc(m->nparams, sizeof *w);
	if (!w) {
		rc = mgpu_err(MGPU_ENOMEM, "--init: out of host memory");
		goto out;
	}
	for (i = 0; i < m->nparam; i++) {
		const struct mgpu_param *p = &m->params[i];
		tr = 0;
		if (hf)
			MGPU_CHECK(hf_name(p->name, name, sizeof name, &tr));
		else
			snprintf(name, sizeof name, "%s", p->name);
		t = find(&st, name, hf);
		if (!t) {
			rc = mgpu_err(MGPU_EFORMAT, "'%s': no tensor '%s' (%s layout)", path, name,
				      hf ? "Hugging Face GPT-2" : "mgpu");
			goto out;
		}
		rows = p->ndim == 2 ? (tr ? p->shape[1] : p->shape[0]) : p->shape[0];
		cols = p->ndim == 2 ? (tr ? p->shape[0] : p->shape[1]) : 1;
		if (i == 0 && hf)
			rows = m->spec.vocab; /* HF's wte: the real vocabulary */
		if (i == 1 && hf && t->ndim == 2 && t->shape[0] >= rows && t->shape[1] == cols)
			rows = (int)t->shape[0]; /* a longer wpe: its first ctx rows */
		if (t->ndim != p->ndim || t->shape[0] != rows ||
		    (p->ndim == 2 && t->shape[1] != cols)) {
			rc = mgpu_err(MGPU_EFORMAT, "'%s': tensor '%s' is %lldx%lld, the model wants "
				      "%dx%d", path, name, (long long)t->shape[0],
				      (long long)(t->ndim > 1 ? t->shape[1] : 1), rows, cols);
			goto out;
		}
		free(tmp);
		tmp = malloc(t->count * sizeof *tmp + 1);
		if (!tmp) {
			rc = mgpu_err(MGPU_ENOMEM, "--init: out of host memory");
			goto out;
		}
		MGPU_CHECK(mgpu_st_read_f32(t, tmp, t->count));
		if (tr)
			transpose(w + p->off, tmp, rows, cols);
		else if (hf && i <= 1) /* wte keeps its zero padding rows; wpe takes ctx rows */
			memcpy(w + p->off, tmp, (size_t)(i == 0 ? m->spec.vocab : m->spec.ctx) *
			       (size_t)cols * sizeof *w);
		else
			memcpy(w + p->off, tmp, p->count * sizeof *w);
	}
	rc = mgpu_model_set(m, w);
out:
	mgpu_st_free(&st);
	free(w);
	free(tmp);
	return rc;
}
