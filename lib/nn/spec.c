/*
 * spec.c - parse and print model specifications (see spec.h): mlp:...,
 * gpt:... and cnn:... strings (a conv net's lines are nn/cnn_spec.c's),
 * and spec files holding any of them.
 */
#include "nn/spec.h"

#include <errno.h>  /* errno */
#include <fcntl.h>  /* open */
#include <stdlib.h> /* strtol, strtof, free */
#include <string.h> /* strncmp, strchr, strcspn */
#include <unistd.h> /* close */

#include "core/err.h" /* mgpu_err */
#include "core/io.h"  /* mgpu_read_fd_max */
#include "core/opt.h" /* mgpu_opt_exact_num */
#include "nn/cnn_spec.h" /* mgpu_cnn_spec_*: conv nets */
#include "data/text.h" /* MGPU_TEXT_MAX_CONTEXT: a gpt's ctx */
#include "ops/ops.h"  /* enum mgpu_act */

static const char *const act_names[] = { "none", "relu", "gelu", "tanh", NULL };

const char *mgpu_act_name(int act)
{
	return act >= 0 && act <= MGPU_ACT_TANH ? act_names[act] : "?";
}

static int parse_dims(struct mgpu_spec *s, const char *p, const char *end,
		      const char *origin)
{
	char *e;
	long v;

	s->nlayers = -1;
	while (p < end) {
		errno = 0;
		if (end - p >= 4 && strncmp(p, "auto", 4) == 0 && (end - p == 4 || p[4] == '-')) {
			if (s->nlayers + 1 > MGPU_MAX_LAYERS)
				return mgpu_err(MGPU_EINVAL, "%s: more than %d layers", origin,
						MGPU_MAX_LAYERS);
			s->dims[++s->nlayers] = MGPU_SPEC_AUTO;
			p += end - p == 4 ? 4 : 5;
			continue;
		}
		if (*p < '0' || *p > '9')
			return mgpu_err(MGPU_EINVAL, "%s: bad layer size at '%.*s'", origin,
					(int)(end - p), p);
		v = strtol(p, &e, 10);
		if (errno || v < 1 || v > 1 << 20 || e > end || (e < end && *e != '-'))
			return mgpu_err(MGPU_EINVAL, "%s: bad layer size at '%.*s'", origin,
					(int)(end - p), p);
		if (s->nlayers + 1 > MGPU_MAX_LAYERS)
			return mgpu_err(MGPU_EINVAL, "%s: more than %d layers", origin,
					MGPU_MAX_LAYERS);
		s->dims[++s->nlayers] = (int)v;
		p = e < end ? e + 1 : e;
	}
	if (s->nlayers < 1)
		return mgpu_err(MGPU_EINVAL, "%s: an mlp needs at least two sizes (in-out)",
				origin);
	for (int l = 1; l < s->nlayers; l++)
		if (s->dims[l] == MGPU_SPEC_AUTO)
			return mgpu_err(MGPU_EINVAL, "%s: a hidden size cannot be auto (only the "
					"input width and the class count come from the data)", origin);
	return 0;
}

static int parse_option(struct mgpu_spec *s, const char *opt, size_t len,
			const char *origin)
{
	char buf[64], *e;
	const char *val;
	int i;

	if (len >= sizeof buf)
		return mgpu_err(MGPU_EINVAL, "%s: option '%.*s' too long", origin, (int)len, opt);
	memcpy(buf, opt, len);
	buf[len] = '\0';
	val = strchr(buf, '=');
	if (strcmp(buf, "layernorm") == 0) {
		s->layernorm = 1;
		return 0;
	}
	if (!val)
		return mgpu_err(MGPU_EINVAL, "%s: unknown option '%s'", origin, buf);
	val++;
	if (strncmp(buf, "act=", 4) == 0) {
		for (i = 1; act_names[i]; i++)
			if (strcmp(val, act_names[i]) == 0) {
				s->act = i;
				return 0;
			}
		return mgpu_err(MGPU_EINVAL, "%s: act '%s' is not relu|gelu|tanh", origin, val);
	}
	if (strncmp(buf, "dropout=", 8) == 0) {
		s->dropout = strtof(val, &e);
		if (*val == '\0' || *e != '\0' || !(s->dropout >= 0.0f && s->dropout < 1.0f))
			return mgpu_err(MGPU_EINVAL, "%s: dropout '%s' is not in [0, 1)", origin, val);
		return 0;
	}
	if (strncmp(buf, "layernorm=", 10) == 0) {
		if (strcmp(val, "0") != 0 && strcmp(val, "1") != 0)
			return mgpu_err(MGPU_EINVAL, "%s: layernorm '%s' is not 0 or 1", origin, val);
		s->layernorm = val[0] == '1';
		return 0;
	}
	return mgpu_err(MGPU_EINVAL, "%s: unknown option '%s'", origin, buf);
}

/* One gpt option, NAME=VALUE, into the spec. */
static int gpt_option(struct mgpu_spec *s, const char *opt, size_t len, const char *origin)
{
	static const struct {
		const char *name;
		long lo, hi;
	} ints[] = {
		{ "layers", 1, MGPU_GPT_MAX_BLOCKS }, { "heads", 1, 1024 }, { "dim", 1, 1 << 16 },
		{ "ctx", 1, (long)MGPU_TEXT_MAX_CONTEXT }, { "vocab", 2, 2147483647L },
		{ "padded_vocab", 2, 2147483647L },
	};
	int *const field[] = { &s->blocks, &s->heads, &s->dim, &s->ctx, &s->vocab,
			       &s->padded_vocab };
	char buf[64], *e;
	const char *val;
	size_t i;
	long v;

	if (len >= sizeof buf)
		return mgpu_err(MGPU_EINVAL, "%s: option '%.*s' too long", origin, (int)len, opt);
	memcpy(buf, opt, len);
	buf[len] = '\0';
	val = strchr(buf, '=');
	if (!val)
		return mgpu_err(MGPU_EINVAL, "%s: gpt option '%s' lacks '=VALUE'", origin, buf);
	val++;
	if (strncmp(buf, "dropout=", 8) == 0) {
		s->dropout = strtof(val, &e);
		if (*val == '\0' || *e != '\0' || !(s->dropout >= 0.0f && s->dropout < 1.0f))
			return mgpu_err(MGPU_EINVAL, "%s: dropout '%s' is not in [0, 1)", origin, val);
		return 0;
	}
	for (i = 0; i < sizeof ints / sizeof ints[0]; i++) {
		size_t nl = strlen(ints[i].name);
		if (strncmp(buf, ints[i].name, nl) != 0 || buf[nl] != '=')
			continue;
		errno = 0;
		v = strtol(val, &e, 10);
		if (*val < '0' || *val > '9' || *e != '\0' || errno || v < ints[i].lo ||
		    v > ints[i].hi)
			return mgpu_err(MGPU_EINVAL, "%s: %s '%s' is not an integer in [%ld, %ld]",
					origin, ints[i].name, val, ints[i].lo, ints[i].hi);
		*field[i] = (int)v;
		return 0;
	}
	return mgpu_err(MGPU_EINVAL, "%s: unknown gpt option '%s'", origin, buf);
}

/* The mlp-style description of a gpt (see spec.h). */
static int gpt_finish(struct mgpu_spec *s, const char *origin)
{
	int l;

	if (!s->blocks || !s->heads || !s->dim || !s->ctx)
		return mgpu_err(MGPU_EINVAL, "%s: a gpt needs layers=, heads=, dim= and ctx=",
				origin);
	if (s->dim % s->heads != 0)
		return mgpu_err(MGPU_EINVAL, "%s: dim %d is not a multiple of heads %d", origin,
				s->dim, s->heads);
	if (!s->padded_vocab)
		s->padded_vocab = s->vocab;
	if (s->padded_vocab < s->vocab)
		return mgpu_err(MGPU_EINVAL, "%s: padded_vocab %d is below vocab %d", origin,
				s->padded_vocab, s->vocab);
	s->nlayers = s->blocks + 2;
	s->dims[0] = s->ctx + 1;
	for (l = 1; l < s->nlayers; l++)
		s->dims[l] = s->dim;
	s->dims[s->nlayers] = s->vocab;
	return 0;
}

/* An option named twice in the comma-separated list opts (ctx=32,ctx=16)
 * would leave one of the two silently unused: refuse it. */
static int no_repeats(const char *opts, const char *origin)
{
	const char *a, *b;
	size_t ka, kb;

	for (a = opts; *a; a += strcspn(a, ",") + (a[strcspn(a, ",")] == ',')) {
		ka = strcspn(a, ",=");
		for (b = opts; b < a; b += strcspn(b, ",") + 1) {
			kb = strcspn(b, ",=");
			if (ka == kb && strncmp(a, b, ka) == 0)
				return mgpu_err(MGPU_EINVAL, "%s: option '%.*s' given twice", origin,
						(int)ka, a);
		}
	}
	return 0;
}

static int gpt_parse(struct mgpu_spec *s, const char *text, const char *origin)
{
	const char *p = text + 4, *end;

	s->kind = MGPU_MODEL_GPT;
	s->act = MGPU_ACT_GELU;
	s->layernorm = 1;
	s->vocab = 256;
	MGPU_TRY(no_repeats(p, origin));
	while (*p) {
		end = p + strcspn(p, ",");
		if (end == p)
			return mgpu_err(MGPU_EINVAL, "%s: empty option in '%s'", origin, text);
		MGPU_TRY(gpt_option(s, p, (size_t)(end - p), origin));
		p = *end ? end + 1 : end;
		if (*end && !*p)
			return mgpu_err(MGPU_EINVAL, "%s: empty option in '%s'", origin, text);
	}
	return gpt_finish(s, origin);
}

int mgpu_spec_parse(struct mgpu_spec *s, const char *text, const char *origin)
{
	const char *p, *end;

	memset(s, 0, sizeof *s);
	s->act = MGPU_ACT_RELU;
	if (strncmp(text, "gpt:", 4) == 0)
		return gpt_parse(s, text, origin);
	if (strncmp(text, "cnn:", 4) == 0)
		return mgpu_cnn_spec_parse(s, text + 4, ';', origin);
	if (strncmp(text, "mlp:", 4) != 0)
		return mgpu_err(MGPU_EINVAL,
				"%s: model spec '%s' does not start with 'mlp:', 'gpt:' or 'cnn:'",
				origin, text);
	p = text + 4;
	end = p + strcspn(p, ",");
	MGPU_TRY(parse_dims(s, p, end, origin));
	if (*end == ',')
		MGPU_TRY(no_repeats(end + 1, origin));
	while (*end == ',') {
		p = end + 1;
		end = p + strcspn(p, ",");
		if (end == p)
			return mgpu_err(MGPU_EINVAL, "%s: empty option in '%s'", origin, text);
		MGPU_TRY(parse_option(s, p, (size_t)(end - p), origin));
	}
	return 0;
}

/* Spec files: strip comments, turn whitespace runs into single commas. */
static void normalise(const char *in, char *out, size_t cap)
{
	size_t o = 0;
	int comment = 0, sep = 0;

	for (; *in && o + 1 < cap; in++) {
		if (*in == '\n')
			comment = 0;
		if (*in == '#')
			comment = 1;
		if (comment || *in == ' ' || *in == '\t' || *in == '\n' || *in == '\r' ||
		    *in == ',') {
			sep = o > 0;
			continue;
		}
		if (sep && o + 2 < cap)
			out[o++] = ',';
		sep = 0;
		out[o++] = *in;
	}
	out[o] = '\0';
}

int mgpu_spec_load(struct mgpu_spec *s, const char *arg)
{
	unsigned char *data = NULL;
	char *norm, origin[4200];
	size_t len = 0;
	int fd, rc;

	if (strncmp(arg, "mlp:", 4) == 0 || strncmp(arg, "gpt:", 4) == 0 ||
	    strncmp(arg, "cnn:", 4) == 0)
		return mgpu_spec_parse(s, arg, "--model");
	fd = open(arg, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		mgpu_err_errno(MGPU_EIO, "'%s': cannot open", arg);
		return mgpu_err_prefix(MGPU_EINVAL, "--model: not a spec (mlp:..., gpt:... or cnn:...) and ");
	}
	/* comments may make a spec file long, never this long (/dev/zero) */
	rc = mgpu_read_fd_max(fd, arg, MGPU_SPEC_FILE_MAX, &data, &len);
	close(fd);
	if (rc == MGPU_ERANGE)
		return mgpu_err(MGPU_EINVAL, "'%s': more than %d bytes: not a model spec file",
				arg, MGPU_SPEC_FILE_MAX);
	if (rc < 0)
		return mgpu_err_prefix(MGPU_EINVAL, "--model: not a spec (mlp:..., gpt:... or cnn:...) and ");
	if (strlen((char *)data) != len || !(norm = malloc(len + 2))) {
		free(data);
		return mgpu_err(MGPU_EINVAL, "'%s': not a model spec file", arg);
	}
	normalise((char *)data, norm, len + 2);
	snprintf(origin, sizeof origin, "'%s'", arg);
	/* "cnn" first: one layer per line, whose blanks mean something */
	if (strcmp(norm, "cnn") == 0 || strncmp(norm, "cnn,", 4) == 0)
		rc = mgpu_cnn_spec_parse(s, (char *)data, '\n', origin);
	else
		rc = mgpu_spec_parse(s, norm, origin);
	free(data);
	free(norm);
	return rc;
}

/* The printed spec is what a checkpoint records and a resume parses
 * back: the dropout exactly ("%g" would turn 0.1234567 into 0.123457). */
static const char *dropout_str(const struct mgpu_spec *s, char p[32])
{
	mgpu_opt_exact_num(p, 32, (double)s->dropout, 1);
	return p;
}

static int gpt_format(const struct mgpu_spec *s, char *buf, size_t len)
{
	char p[32];
	int n = snprintf(buf, len, "gpt:layers=%d,heads=%d,dim=%d,ctx=%d,vocab=%d", s->blocks,
			 s->heads, s->dim, s->ctx, s->vocab);

	if (n >= 0 && (size_t)n < len && s->padded_vocab != s->vocab)
		n += snprintf(buf + n, len - (size_t)n, ",padded_vocab=%d", s->padded_vocab);
	if (n >= 0 && (size_t)n < len && s->dropout > 0.0f)
		n += snprintf(buf + n, len - (size_t)n, ",dropout=%s", dropout_str(s, p));
	if (n < 0 || (size_t)n >= len)
		return mgpu_err(MGPU_EINVAL, "model spec too long to print");
	return 0;
}

int mgpu_spec_format(const struct mgpu_spec *s, char *buf, size_t len)
{
	char p[32];
	size_t o;
	int i;

	if (s->kind == MGPU_MODEL_GPT)
		return gpt_format(s, buf, len);
	if (s->kind == MGPU_MODEL_CNN)
		return mgpu_cnn_spec_format(s, buf, len);
	o = (size_t)snprintf(buf, len, "mlp:");

	for (i = 0; i <= s->nlayers && o < len; i++)
		o += s->dims[i] == MGPU_SPEC_AUTO ?
			     (size_t)snprintf(buf + o, len - o, "%sauto", i ? "-" : "") :
			     (size_t)snprintf(buf + o, len - o, "%s%d", i ? "-" : "", s->dims[i]);
	if (o < len)
		o += (size_t)snprintf(buf + o, len - o, ",act=%s", mgpu_act_name(s->act));
	if (s->dropout > 0.0f && o < len)
		o += (size_t)snprintf(buf + o, len - o, ",dropout=%s", dropout_str(s, p));
	if (s->layernorm && o < len)
		o += (size_t)snprintf(buf + o, len - o, ",layernorm");
	if (o >= len)
		return mgpu_err(MGPU_EINVAL, "model spec too long to print");
	return 0;
}

int mgpu_spec_has_auto(const struct mgpu_spec *s)
{
	if (s->kind == MGPU_MODEL_CNN)
		return !s->in_c || s->cnn[s->ncnn - 1].n == MGPU_SPEC_AUTO;
	return s->kind == MGPU_MODEL_MLP && s->nlayers >= 1 &&
	       (s->dims[0] == MGPU_SPEC_AUTO || s->dims[s->nlayers] == MGPU_SPEC_AUTO);
}

int mgpu_spec_fit(struct mgpu_spec *s, int d, int classes, const char *path)
{
	struct mgpu_spec want = *s;
	int n = s->nlayers, *C = &want.dims[n];
	char fit[MGPU_SPEC_TEXT_MAX];

	if (s->kind == MGPU_MODEL_GPT) {
		if (d == s->dims[0])
			return 0;
		want.ctx = d - 1;
		if (d < 2 || gpt_finish(&want, "--model") < 0 ||
		    mgpu_spec_format(&want, fit, sizeof fit) < 0)
			return mgpu_err(MGPU_EINVAL, "'%s': samples have %d features but the model "
					"takes %d (a gpt's ctx + 1)", path, d, s->dims[0]);
		return mgpu_err(MGPU_EINVAL, "'%s': samples have %d features but the model takes "
				"%d (a gpt's ctx + 1): write --model %s", path, d, s->dims[0], fit);
	}
	if (want.dims[0] == MGPU_SPEC_AUTO)
		want.dims[0] = d;
	if (*C == MGPU_SPEC_AUTO)
		*C = classes > 1 ? classes : 2;
	if (want.dims[0] == d && *C >= classes) {
		*s = want;
		return 0;
	}
	want.dims[0] = d;
	if (*C < classes)
		*C = classes;
	if (mgpu_spec_format(&want, fit, sizeof fit) < 0)
		fit[0] = '\0';
	if (s->dims[0] != MGPU_SPEC_AUTO && s->dims[0] != d)
		return mgpu_err(MGPU_EINVAL, "'%s': samples have %d features but the model takes "
				"%d: write --model %s (auto takes a size from the data)", path, d,
				s->dims[0], fit);
	return mgpu_err(MGPU_ERANGE, "'%s': labels go up to %d but the model has %d classes: "
			"write --model %s (auto takes a size from the data)", path, classes - 1,
			s->dims[n], fit);
}

int mgpu_spec_fit_shape(struct mgpu_spec *s, int ndim, const uint32_t *shape, int classes,
			const char *path)
{
	long long d = 1;
	int i;

	if (s->kind == MGPU_MODEL_CNN)
		return mgpu_cnn_spec_fit(s, ndim, shape, classes, path);
	for (i = 0; i < ndim; i++)
		d *= shape[i];
	return mgpu_spec_fit(s, d > 1 << 30 ? 0 : (int)d, classes, path);
}

void mgpu_spec_take_auto(struct mgpu_spec *s, const struct mgpu_spec *ck)
{
	struct mgpu_cnn_line *top;

	if (ck->kind != s->kind || ck->nlayers != s->nlayers)
		return;
	if (s->kind == MGPU_MODEL_CNN) {
		if (ck->ncnn != s->ncnn)
			return;
		top = &s->cnn[s->ncnn - 1];
		if (!s->in_c) {
			s->in_c = ck->in_c, s->in_h = ck->in_h, s->in_w = ck->in_w;
			s->in_1d = ck->in_1d;
			s->dims[0] = ck->dims[0];
		}
		if (top->n == MGPU_SPEC_AUTO)
			top->n = s->dims[s->nlayers] = ck->cnn[ck->ncnn - 1].n;
		return;
	}
	if (s->dims[0] == MGPU_SPEC_AUTO)
		s->dims[0] = ck->dims[0];
	if (s->dims[s->nlayers] == MGPU_SPEC_AUTO)
		s->dims[s->nlayers] = ck->dims[s->nlayers];
}
