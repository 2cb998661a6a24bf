/*
 * cnn_spec.c - parse, print and fit conv-net specs (cnn_spec.h; the
 * grammar is man/mgpu-model.7's), and walk the shapes their lines make.
 */
#include "model/cnn_spec.h"

#include <ctype.h>  /* isspace */
#include <errno.h>  /* errno */
#include <limits.h> /* INT_MAX */
#include <stdarg.h> /* va_list */
#include <stdio.h>  /* vsnprintf */
#include <stdlib.h> /* strtol, strtof */
#include <string.h> /* strcmp, strchr, memset */

#include "core/err.h" /* mgpu_err, MGPU_TRY */
#include "core/opt.h" /* mgpu_opt_exact_num */
#include "data/samples.h" /* mgpu_dtype_is_token */
#include "ops/ops.h"  /* MGPU_CONV_OUT */

#define MAX_WORDS 12
#define MAX_CHANNELS (1 << 16)
#define MAX_KERNEL 255

static const char *const op_names[] = {
	[MGPU_CNN_CONV] = "conv",       [MGPU_CNN_BN] = "bn",
	[MGPU_CNN_GN] = "gn",           [MGPU_CNN_RELU] = "relu",
	[MGPU_CNN_SILU] = "silu",       [MGPU_CNN_MAXPOOL] = "maxpool",
	[MGPU_CNN_AVGPOOL] = "avgpool", [MGPU_CNN_GAP] = "gap",
	[MGPU_CNN_DROPOUT] = "dropout", [MGPU_CNN_RES] = "res",
	[MGPU_CNN_FLATTEN] = "flatten", [MGPU_CNN_LINEAR] = "linear",
	[MGPU_CNN_UP] = "up",           [MGPU_CNN_TCONV] = "tconv",
	[MGPU_CNN_SAVE] = "save",       [MGPU_CNN_CAT] = "cat",
};
#define NOPS ((int)(sizeof op_names / sizeof op_names[0]))

/* One line cut into words: positional ones, KEY=VALUE ones and flags. */
struct words {
	int n;
	char w[MAX_WORDS][32];
};

/* Where a message points: "ORIGIN: line N ('TEXT')". */
struct at {
	const char *origin;
	int line;
	const char *text;
};

#define AT_FMT "%s: line %d ('%s')"
#define AT_ARGS(a) (a)->origin, (a)->line, (a)->text

int mgpu_cnn_has_params(int op)
{
	return op == MGPU_CNN_CONV || op == MGPU_CNN_BN || op == MGPU_CNN_GN ||
	       op == MGPU_CNN_RES || op == MGPU_CNN_LINEAR || op == MGPU_CNN_TCONV;
}

/* The lines a net may end with: their outputs are the model's. */
static int is_head(int op)
{
	return op == MGPU_CNN_LINEAR || op == MGPU_CNN_CONV || op == MGPU_CNN_TCONV;
}

static int split_words(struct words *w, const char *line, const struct at *a)
{
	const char *p = line, *e;

	w->n = 0;
	while (*p) {
		while (isspace((unsigned char)*p))
			p++;
		if (!*p)
			break;
		for (e = p; *e && !isspace((unsigned char)*e); e++)
			;
		if (w->n == MAX_WORDS || (size_t)(e - p) >= sizeof w->w[0])
			return mgpu_err(MGPU_EINVAL, AT_FMT ": too many or too long words",
					AT_ARGS(a));
		memcpy(w->w[w->n], p, (size_t)(e - p));
		w->w[w->n++][e - p] = '\0';
		p = e;
	}
	return 0;
}

/* A whole decimal integer in [lo, hi]. */
static int int_in(const char *v, int lo, int hi, const char *what, int *out,
		  const struct at *a)
{
	char *e;
	long x;

	errno = 0;
	x = strtol(v, &e, 10);
	if (*v < '0' || *v > '9' || *e || errno || x < lo || x > hi)
		return mgpu_err(MGPU_EINVAL, AT_FMT ": %s '%s' is not an integer in [%d, %d]",
				AT_ARGS(a), what, v, lo, hi);
	*out = (int)x;
	return 0;
}

/* The words after the op: npos positional ones (at least minpos) into
 * pos, then KEY=VALUE for keys in `keys` (one letter each) into kv, and
 * the flag "bias" where allowed. */
static int read_args(const struct words *w, int minpos, int maxpos, const char *keys,
		     int allow_bias, const char **pos, int *npos, const char **kv,
		     int *bias, const struct at *a)
{
	int i;

	*npos = 0;
	for (i = 1; i < w->n; i++) {
		const char *s = w->w[i], *eq = strchr(s, '=');
		if (allow_bias && strcmp(s, "bias") == 0) {
			if (*bias)
				return mgpu_err(MGPU_EINVAL, AT_FMT ": 'bias' given twice", AT_ARGS(a));
			*bias = 1;
			continue;
		}
		if (!eq) {
			if (*npos == maxpos || i > *npos + 1)
				return mgpu_err(MGPU_EINVAL, AT_FMT ": unexpected '%s'", AT_ARGS(a), s);
			pos[(*npos)++] = s;
			continue;
		}
		if (eq != s + 1 || !strchr(keys, s[0]))
			return mgpu_err(MGPU_EINVAL, AT_FMT ": unknown option '%s'", AT_ARGS(a), s);
		if (kv[strchr(keys, s[0]) - keys])
			return mgpu_err(MGPU_EINVAL, AT_FMT ": option '%c' given twice", AT_ARGS(a),
					s[0]);
		kv[strchr(keys, s[0]) - keys] = eq + 1;
	}
	if (*npos < minpos)
		return mgpu_err(MGPU_EINVAL, AT_FMT ": '%s' needs %s", AT_ARGS(a), w->w[0],
				minpos > 1 ? "more numbers" : "a number");
	return 0;
}

/* conv and tconv: K (or auto: the class count), k s p g d, a tconv's o. */
static int parse_conv(struct mgpu_cnn_line *L, const struct words *w, const struct at *a)
{
	const char *pos[1], *kv[6] = { 0 };
	int np, tconv = L->op == MGPU_CNN_TCONV;

	MGPU_TRY(read_args(w, 1, 1, tconv ? "kspgdo" : "kspgd", 1, pos, &np, kv, &L->bias, a));
	if (strcmp(pos[0], "auto") == 0)
		L->n = MGPU_SPEC_AUTO;
	else
		MGPU_TRY(int_in(pos[0], 1, MAX_CHANNELS, "channel count", &L->n, a));
	if (!kv[0])
		return mgpu_err(MGPU_EINVAL, AT_FMT ": %s needs its kernel size, k=K", AT_ARGS(a),
				w->w[0]);
	MGPU_TRY(int_in(kv[0], 1, MAX_KERNEL, "kernel size k", &L->k, a));
	L->s = 1, L->p = 0, L->g = 1, L->d = 1;
	if (kv[1])
		MGPU_TRY(int_in(kv[1], 1, MAX_KERNEL, "stride s", &L->s, a));
	if (kv[2])
		MGPU_TRY(int_in(kv[2], 0, MAX_KERNEL, "padding p", &L->p, a));
	if (kv[3])
		MGPU_TRY(int_in(kv[3], 1, MAX_CHANNELS, "groups g", &L->g, a));
	if (kv[4])
		MGPU_TRY(int_in(kv[4], 1, MAX_KERNEL, "dilation d", &L->d, a));
	/* below the stride, narrower than torch's "below the stride or the
	 * dilation": a tconv runs as the convolution from its output back to
	 * its input, which maps (in - 1) s - 2p + d(k - 1) + o + 1 rows to
	 * in + floor(o / s), the input's extent only when o < s */
	if (kv[5])
		MGPU_TRY(int_in(kv[5], 0, L->s - 1, "output padding o (below the stride)", &L->o,
				a));
	if (L->n % L->g)
		return mgpu_err(MGPU_EINVAL, AT_FMT ": groups %d do not divide %d channels",
				AT_ARGS(a), L->g, L->n);
	return 0;
}

static int parse_pool(struct mgpu_cnn_line *L, const struct words *w, const struct at *a)
{
	const char *pos[2], *kv[3] = { 0 };
	int np, bias = 0;

	MGPU_TRY(read_args(w, 0, 2, "ksp", 0, pos, &np, kv, &bias, a));
	if ((np >= 1 && kv[0]) || (np >= 2 && kv[1]))
		return mgpu_err(MGPU_EINVAL, AT_FMT ": a size given twice", AT_ARGS(a));
	if (np >= 1)
		kv[0] = pos[0];
	if (np >= 2)
		kv[1] = pos[1];
	if (!kv[0])
		return mgpu_err(MGPU_EINVAL, AT_FMT ": %s needs its window size", AT_ARGS(a),
				w->w[0]);
	MGPU_TRY(int_in(kv[0], 1, MAX_KERNEL, "window size", &L->k, a));
	L->s = L->k;
	if (kv[1])
		MGPU_TRY(int_in(kv[1], 1, MAX_KERNEL, "stride", &L->s, a));
	if (kv[2])
		MGPU_TRY(int_in(kv[2], 0, L->k / 2, "padding (at most half the window)", &L->p,
				a));
	return 0;
}

/* save NAME (a new name) or cat NAME (a saved one: ref is its line). */
static int parse_name(struct mgpu_spec *s, struct mgpu_cnn_line *L, const struct words *w,
		      const struct at *a)
{
	const char *pos[1], *kv[1] = { 0 }, *c;
	int np, bias = 0, i;

	MGPU_TRY(read_args(w, 1, 1, "", 0, pos, &np, kv, &bias, a));
	for (c = pos[0]; *c && (isalnum((unsigned char)*c) || *c == '_'); c++)
		;
	if (*c || !isalpha((unsigned char)pos[0][0]) || c - pos[0] >= MGPU_CNN_NAME_MAX)
		return mgpu_err(MGPU_EINVAL, AT_FMT ": '%s' is no name (a letter, then letters, "
				"digits or '_', at most %d)", AT_ARGS(a), pos[0],
				MGPU_CNN_NAME_MAX - 1);
	strcpy(L->name, pos[0]);
	for (i = 0; i < s->ncnn; i++)
		if (s->cnn[i].op == MGPU_CNN_SAVE && strcmp(s->cnn[i].name, L->name) == 0)
			break;
	if (L->op == MGPU_CNN_SAVE && i < s->ncnn)
		return mgpu_err(MGPU_EINVAL, AT_FMT ": '%s' is saved already on line %d",
				AT_ARGS(a), L->name, s->cnn[i].line);
	if (L->op == MGPU_CNN_CAT && i == s->ncnn)
		return mgpu_err(MGPU_EINVAL, AT_FMT ": no 'save %s' before it", AT_ARGS(a),
				L->name);
	L->ref = i;
	return 0;
}

static int parse_line(struct mgpu_spec *s, const struct words *w, const struct at *a)
{
	struct mgpu_cnn_line *L = &s->cnn[s->ncnn];
	const char *pos[3], *kv[1] = { 0 };
	int op, np, bias = 0, i;
	char *e;

	if (strcmp(w->w[0], "input") == 0) {
		if (s->ncnn || s->in_c)
			return mgpu_err(MGPU_EINVAL, AT_FMT ": 'input' may only be the first line",
					AT_ARGS(a));
		MGPU_TRY(read_args(w, 2, 3, "", 0, pos, &np, kv, &bias, a));
		MGPU_TRY(int_in(pos[0], 1, MAX_CHANNELS, "channel count", &s->in_c, a));
		s->in_1d = np == 2;
		s->in_h = 1;
		if (np == 3)
			MGPU_TRY(int_in(pos[1], 1, 1 << 20, "height", &s->in_h, a));
		return int_in(pos[np - 1], 1, 1 << 24, "width", &s->in_w, a);
	}
	for (op = 1; op < NOPS && strcmp(w->w[0], op_names[op]) != 0; op++)
		;
	if (op == NOPS)
		return mgpu_err(MGPU_EINVAL, AT_FMT ": unknown layer '%s' (conv, tconv, bn, gn, "
				"relu, silu, maxpool, avgpool, gap, up, dropout, res, save, cat, "
				"flatten, linear)", AT_ARGS(a), w->w[0]);
	if (s->ncnn == MGPU_CNN_MAX_LINES)
		return mgpu_err(MGPU_EINVAL, "%s: more than %d lines", a->origin,
				MGPU_CNN_MAX_LINES);
	memset(L, 0, sizeof *L);
	L->op = op;
	L->line = a->line;
	switch (op) {
	case MGPU_CNN_CONV:
	case MGPU_CNN_TCONV:
		MGPU_TRY(parse_conv(L, w, a));
		break;
	case MGPU_CNN_UP:
		MGPU_TRY(read_args(w, 1, 1, "", 0, pos, &np, kv, &bias, a));
		MGPU_TRY(int_in(pos[0], 1, MAX_KERNEL, "scale factor", &L->k, a));
		break;
	case MGPU_CNN_SAVE:
	case MGPU_CNN_CAT:
		MGPU_TRY(parse_name(s, L, w, a));
		break;
	case MGPU_CNN_MAXPOOL:
	case MGPU_CNN_AVGPOOL:
		MGPU_TRY(parse_pool(L, w, a));
		break;
	case MGPU_CNN_GN:
		MGPU_TRY(read_args(w, 1, 1, "", 0, pos, &np, kv, &bias, a));
		MGPU_TRY(int_in(pos[0], 1, MAX_CHANNELS, "group count", &L->n, a));
		break;
	case MGPU_CNN_DROPOUT:
		MGPU_TRY(read_args(w, 1, 1, "", 0, pos, &np, kv, &bias, a));
		L->p_drop = strtof(pos[0], &e);
		if (*e || !(L->p_drop >= 0.0f && L->p_drop < 1.0f))
			return mgpu_err(MGPU_EINVAL, AT_FMT ": dropout '%s' is not in [0, 1)",
					AT_ARGS(a), pos[0]);
		break;
	case MGPU_CNN_RES:
		MGPU_TRY(read_args(w, 1, 1, "s", 0, pos, &np, kv, &bias, a));
		MGPU_TRY(int_in(pos[0], 1, MAX_CHANNELS, "channel count", &L->n, a));
		L->s = 1;
		if (kv[0])
			MGPU_TRY(int_in(kv[0], 1, MAX_KERNEL, "stride s", &L->s, a));
		break;
	case MGPU_CNN_LINEAR:
		MGPU_TRY(read_args(w, 1, 1, "", 0, pos, &np, kv, &bias, a));
		if (strcmp(pos[0], "auto") == 0)
			L->n = MGPU_SPEC_AUTO;
		else
			MGPU_TRY(int_in(pos[0], 1, 1 << 24, "size", &L->n, a));
		break;
	default: /* no arguments */
		for (i = 1; i < w->n; i++)
			return mgpu_err(MGPU_EINVAL, AT_FMT ": '%s' takes no '%s'", AT_ARGS(a),
					w->w[0], w->w[i]);
	}
	s->ncnn++;
	return 0;
}

/* Whether a later cat reads line i's save. */
static int is_used(const struct mgpu_spec *s, int i)
{
	int j;

	for (j = i + 1; j < s->ncnn; j++)
		if (s->cnn[j].op == MGPU_CNN_CAT && s->cnn[j].ref == i)
			return 1;
	return 0;
}

/* After the last line: a head last (linear: class logits; conv or tconv:
 * maps), auto only there, every save read; the buckets. */
static int finish(struct mgpu_spec *s, const char *origin)
{
	int i;

	if (s->ncnn == 0 || !is_head(s->cnn[s->ncnn - 1].op))
		return mgpu_err(MGPU_EINVAL, "%s: a conv net ends with a 'linear' line (its "
				"outputs are the class logits) or a 'conv' or 'tconv' (maps of "
				"C x H x W)", origin);
	for (i = 0; i + 1 < s->ncnn; i++) {
		const struct mgpu_cnn_line *L = &s->cnn[i];
		if (is_head(L->op) && L->n == MGPU_SPEC_AUTO)
			return mgpu_err(MGPU_EINVAL, "%s: line %d: only the last line may be "
					"'auto' (the class count)", origin, L->line);
		if (L->op == MGPU_CNN_SAVE && !is_used(s, i))
			return mgpu_err(MGPU_EINVAL, "%s: line %d: 'save %s' is never read by a "
					"'cat %s'", origin, L->line, L->name, L->name);
	}
	s->nbuckets = mgpu_cnn_nbuckets(s);
	return 0;
}

int mgpu_cnn_spec_parse(struct mgpu_spec *s, const char *body, const char *text,
			const char *origin)
{
	char line[512];
	struct words w;
	struct at a = { origin, 0, line };
	const char *p = body, *e;
	size_t n;

	(void)text;
	s->act = MGPU_ACT_RELU;
	snprintf(s->origin, sizeof s->origin, "%s", origin);
	for (; *p; p = *e ? e + 1 : e) {
		e = strchr(p, ';');
		if (!e)
			e = p + strlen(p);
		a.line++;
		n = strcspn(p, "#");
		n = n < (size_t)(e - p) ? n : (size_t)(e - p);
		while (n && isspace((unsigned char)p[n - 1]))
			n--;
		while (n && isspace((unsigned char)*p))
			p++, n--;
		if (n >= sizeof line)
			return mgpu_err(MGPU_EINVAL, "%s: line %d is too long", origin, a.line);
		memcpy(line, p, n);
		line[n] = '\0';
		MGPU_TRY(split_words(&w, line, &a));
		if (w.n == 0)
			continue;
		MGPU_TRY(parse_line(s, &w, &a));
	}
	return finish(s, origin);
}

static MGPU_PRINTF(4, 5) int put(char *buf, size_t len, size_t *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf + *o, len - *o, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= len - *o)
		return mgpu_err(MGPU_EINVAL, "model spec too long to print");
	*o += (size_t)n;
	return 0;
}

/* One line's canonical text: every argument written out. */
static int format_line(const struct mgpu_cnn_line *L, char *buf, size_t len, size_t *o)
{
	char p[32];

	MGPU_TRY(put(buf, len, o, "%s", op_names[L->op]));
	switch (L->op) {
	case MGPU_CNN_CONV:
	case MGPU_CNN_TCONV:
		if (L->n == MGPU_SPEC_AUTO)
			MGPU_TRY(put(buf, len, o, " auto"));
		else
			MGPU_TRY(put(buf, len, o, " %d", L->n));
		MGPU_TRY(put(buf, len, o, " k=%d s=%d p=%d", L->k, L->s, L->p));
		if (L->g != 1)
			MGPU_TRY(put(buf, len, o, " g=%d", L->g));
		if (L->d != 1)
			MGPU_TRY(put(buf, len, o, " d=%d", L->d));
		if (L->o)
			MGPU_TRY(put(buf, len, o, " o=%d", L->o));
		return L->bias ? put(buf, len, o, " bias") : 0;
	case MGPU_CNN_UP:
		return put(buf, len, o, " %d", L->k);
	case MGPU_CNN_SAVE:
	case MGPU_CNN_CAT:
		return put(buf, len, o, " %s", L->name);
	case MGPU_CNN_MAXPOOL:
	case MGPU_CNN_AVGPOOL:
		MGPU_TRY(put(buf, len, o, " k=%d s=%d", L->k, L->s));
		return L->p ? put(buf, len, o, " p=%d", L->p) : 0;
	case MGPU_CNN_GN:
		return put(buf, len, o, " %d", L->n);
	case MGPU_CNN_DROPOUT:
		mgpu_opt_exact_num(p, sizeof p, (double)L->p_drop, 1);
		return put(buf, len, o, " %s", p);
	case MGPU_CNN_RES:
		MGPU_TRY(put(buf, len, o, " %d", L->n));
		return L->s != 1 ? put(buf, len, o, " s=%d", L->s) : 0;
	case MGPU_CNN_LINEAR:
		return L->n == MGPU_SPEC_AUTO ? put(buf, len, o, " auto") :
						put(buf, len, o, " %d", L->n);
	default:
		return 0;
	}
}

int mgpu_cnn_spec_format(const struct mgpu_spec *s, char *buf, size_t len)
{
	size_t o = 0;
	int i;

	MGPU_TRY(put(buf, len, &o, "cnn:"));
	if (s->in_c) {
		MGPU_TRY(put(buf, len, &o, "input %d", s->in_c));
		if (!s->in_1d)
			MGPU_TRY(put(buf, len, &o, " %d", s->in_h));
		MGPU_TRY(put(buf, len, &o, " %d", s->in_w));
	}
	for (i = 0; i < s->ncnn; i++) {
		if (i > 0 || s->in_c)
			MGPU_TRY(put(buf, len, &o, "; "));
		MGPU_TRY(format_line(&s->cnn[i], buf, len, &o));
	}
	return 0;
}

/* A shape while it is walked: wide enough that no product overflows. */
struct big {
	long long c, h, w;
};

static long long out_extent(long long in, int k, int st, int p, int d)
{
	return in + 2 * p < (long long)d * (k - 1) + 1 ? 0 : MGPU_CONV_OUT(in, k, st, p, d);
}

/* torch's ConvTranspose2d: (in - 1) s - 2 p + d (k - 1) + o + 1 (0: empty). */
static long long tconv_extent(long long in, const struct mgpu_cnn_line *L)
{
	long long e = (in - 1) * L->s - 2LL * L->p + (long long)L->d * (L->k - 1) + L->o + 1;

	return e > 0 ? e : 0;
}

static int line_no(const struct mgpu_cnn_line *L, int i)
{
	return L->line ? L->line : i + 1;
}

/* The spec's own name for messages about its lines. */
static const char *spec_origin(const struct mgpu_spec *s, const char *origin)
{
	return s->origin[0] ? s->origin : origin;
}

/* Floats per row of a line's weight (every dimension but the first). */
static long long weight_row(const struct mgpu_cnn_line *L, struct big x, int oned)
{
	long long k2 = (long long)L->k * (oned ? 1 : L->k);

	switch (L->op) {
	case MGPU_CNN_CONV:
		return x.c / L->g * k2;
	case MGPU_CNN_TCONV:
		return (long long)L->n / L->g * k2;
	case MGPU_CNN_RES:
		return (x.c > L->n ? x.c : L->n) * 9LL;
	case MGPU_CNN_LINEAR:
		return x.c * x.h * x.w;
	default:
		return 0;
	}
}

/* Line i's output y from its input x (out[] holds the earlier shapes: a
 * cat reads its save's); the checks that need the input's shape. */
static int line_shape(const struct mgpu_spec *s, int i, const struct mgpu_cnn_shape *out,
		      struct big x, struct big *y, const char *origin)
{
	const struct mgpu_cnn_line *L = &s->cnn[i];
	int oned = s->in_1d || s->in_h == 1, ln = line_no(L, i);
	struct mgpu_cnn_shape sv;

	*y = x;
	switch (L->op) {
	case MGPU_CNN_CONV:
	case MGPU_CNN_TCONV:
		if (x.c % L->g || L->n % L->g)
			return mgpu_err(MGPU_EINVAL, "%s: line %d (%s): groups %d do not divide its "
					"%lld input channels or its %d output ones", origin, ln,
					op_names[L->op], L->g, x.c, L->n);
		y->c = L->n;
		if (L->op == MGPU_CNN_TCONV) {
			y->h = oned ? 1 : tconv_extent(x.h, L);
			y->w = tconv_extent(x.w, L);
		} else {
			y->h = oned ? 1 : out_extent(x.h, L->k, L->s, L->p, L->d);
			y->w = out_extent(x.w, L->k, L->s, L->p, L->d);
		}
		break;
	case MGPU_CNN_GN:
		if (x.c % L->n)
			return mgpu_err(MGPU_EINVAL, "%s: line %d (gn): %d groups do not divide "
					"%lld channels", origin, ln, L->n, x.c);
		break;
	case MGPU_CNN_MAXPOOL:
	case MGPU_CNN_AVGPOOL:
		y->h = oned ? 1 : out_extent(x.h, L->k, L->s, L->p, 1);
		y->w = out_extent(x.w, L->k, L->s, L->p, 1);
		break;
	case MGPU_CNN_GAP:
		y->h = y->w = 1;
		break;
	case MGPU_CNN_UP:
		y->h = oned ? 1 : x.h * L->k;
		y->w = x.w * L->k;
		break;
	case MGPU_CNN_CAT:
		sv = out[L->ref];
		if (sv.h != x.h || sv.w != x.w)
			return mgpu_err(MGPU_EINVAL, "%s: line %d ('cat %s') gets %lld x %lld x %lld "
					"but line %d saved %d x %d x %d there: their heights and "
					"widths differ (samples of %s)", spec_origin(s, origin), ln,
					L->name, x.c, x.h, x.w, s->cnn[L->ref].line, sv.c, sv.h,
					sv.w, origin);
		y->c = x.c + sv.c;
		break;
	case MGPU_CNN_RES:
		y->c = L->n;
		y->h = oned ? 1 : out_extent(x.h, 3, L->s, 1, 1);
		y->w = out_extent(x.w, 3, L->s, 1, 1);
		break;
	case MGPU_CNN_FLATTEN:
		*y = (struct big){ x.c * x.h * x.w, 1, 1 };
		break;
	case MGPU_CNN_LINEAR:
		*y = (struct big){ L->n ? L->n : 1, 1, 1 };
		break;
	default:
		break;
	}
	if (y->h < 1 || y->w < 1)
		return mgpu_err(MGPU_EINVAL, "%s: line %d (%s) gets %lld x %lld x %lld: its output "
				"would be empty", origin, ln, op_names[L->op], x.c, x.h, x.w);
	/* every size of a layer (its values a sample, a weight's row) is an int */
	if (y->h > INT_MAX / y->w || y->c > INT_MAX / (y->h * y->w) ||
	    weight_row(L, x, oned) > INT_MAX)
		return mgpu_err(MGPU_EINVAL, "%s: line %d (%s) gets %lld x %lld x %lld (samples of "
				"%s): its output or weights would hold more than %d values a "
				"sample or a row", spec_origin(s, origin), ln, op_names[L->op],
				x.c, x.h, x.w, origin, INT_MAX);
	return 0;
}

int mgpu_cnn_walk(const struct mgpu_spec *s, struct mgpu_cnn_shape *out, const char *origin)
{
	struct big x = { s->in_c, s->in_h, s->in_w }, y;
	int i;

	if (x.h > INT_MAX / x.w || x.c > INT_MAX / (x.h * x.w))
		return mgpu_err(MGPU_EINVAL, "%s: samples of %lld x %lld x %lld hold more than %d "
				"values", origin, x.c, x.h, x.w, INT_MAX);
	out[0] = (struct mgpu_cnn_shape){ s->in_c, s->in_h, s->in_w };
	for (i = 0; i < s->ncnn; i++) {
		MGPU_TRY(line_shape(s, i, out, x, &y, origin));
		out[i + 1] = (struct mgpu_cnn_shape){ (int)y.c, (int)y.h, (int)y.w };
		x = y;
	}
	return 0;
}

int mgpu_cnn_nbuckets(const struct mgpu_spec *s)
{
	int i, np = 0;

	for (i = 0; i < s->ncnn; i++)
		np += mgpu_cnn_has_params(s->cnn[i].op);
	return np < MGPU_MAX_LAYERS ? np : MGPU_MAX_LAYERS;
}

int mgpu_cnn_bucket_of(int j, int np, int nb)
{
	return (int)((long long)j * nb / np);
}

/* Floats of a conv's weight (and bias): K (C/g) kh kw (+ K). */
static size_t conv_count(int K, int C, int g, int k, int oned, int bias)
{
	return (size_t)K * (size_t)(C / g) * (size_t)k * (size_t)(oned ? 1 : k) +
	       (bias ? (size_t)K : 0);
}

size_t mgpu_cnn_count(const struct mgpu_spec *s)
{
	struct mgpu_cnn_shape sh[MGPU_CNN_MAX_LINES + 1];
	int i, oned = s->in_1d || s->in_h == 1;
	size_t n = 0;

	if (!s->in_c || mgpu_cnn_walk(s, sh, "cnn") < 0)
		return 0;
	for (i = 0; i < s->ncnn; i++) {
		const struct mgpu_cnn_line *L = &s->cnn[i];
		int C = sh[i].c, K = L->n;
		switch (L->op) {
		case MGPU_CNN_CONV:
		case MGPU_CNN_TCONV: /* (C, K/g, k, k): as many as a conv's */
			n += conv_count(K, C, L->g, L->k, oned, L->bias);
			break;
		case MGPU_CNN_BN:
		case MGPU_CNN_GN:
			n += 2 * (size_t)C;
			break;
		case MGPU_CNN_RES:
			n += conv_count(K, C, 1, 3, oned, 0) + conv_count(K, K, 1, 3, oned, 0) +
			     4 * (size_t)K;
			if (L->s != 1 || C != K)
				n += conv_count(K, C, 1, 1, oned, 0) + 2 * (size_t)K;
			break;
		case MGPU_CNN_LINEAR:
			n += (size_t)K * (size_t)(sh[i].c * sh[i].h * sh[i].w + 1);
			break;
		default:
			break;
		}
	}
	return n;
}

int mgpu_cnn_spec_fit(struct mgpu_spec *s, const struct mgpu_data_desc *dd, const char *path)
{
	int ndim = dd->ndim, classes = dd->classes;
	const unsigned *shape = dd->shape;
	struct mgpu_spec want = *s;
	struct mgpu_cnn_line *top = &want.cnn[want.ncnn - 1];
	struct mgpu_cnn_shape sh[MGPU_CNN_MAX_LINES + 1];
	char fit[MGPU_SPEC_TEXT_MAX];

	if (mgpu_dtype_is_token(dd->dtype))
		return mgpu_err(MGPU_EINVAL, "'%s': token ids (%s) need a gpt model, not a cnn",
				path, mgpu_dtype_name(dd->dtype));
	if (ndim < 1 || ndim > 3)
		return mgpu_err(MGPU_EINVAL, "'%s': samples of %d dimensions: a conv net reads "
				"images (C,H,W) or series (C,L)", path, ndim);
	want.in_1d = ndim < 3;
	want.in_c = ndim == 1 ? 1 : (int)shape[0];
	want.in_h = ndim == 3 ? (int)shape[1] : 1;
	want.in_w = (int)shape[ndim - 1];
	if (top->n == MGPU_SPEC_AUTO)
		top->n = mgpu_spec_auto_classes(dd);
	else if (top->n < classes && !dd->target)
		top->n = classes;
	if (mgpu_cnn_spec_format(&want, fit, sizeof fit) < 0)
		fit[0] = '\0';
	if (!dd->target && top->op != MGPU_CNN_LINEAR)
		return mgpu_err(MGPU_EINVAL, "'%s': class labels need a conv net that ends with "
				"'linear' (a 'conv' last gives maps, for targets)", path);
	if (s->in_c && (s->in_c != want.in_c || s->in_h != want.in_h || s->in_w != want.in_w ||
			s->in_1d != want.in_1d))
		return mgpu_err(MGPU_EINVAL, "'%s': samples are %d x %d x %d but the model's input "
				"line says %d x %d x %d: write --model '%s'", path, want.in_c,
				want.in_h, want.in_w, s->in_c, s->in_h, s->in_w, fit);
	if (s->cnn[s->ncnn - 1].n != MGPU_SPEC_AUTO && s->cnn[s->ncnn - 1].n < classes &&
	    !dd->target)
		return mgpu_err(MGPU_ERANGE, "'%s': labels go up to %d but the model has %d "
				"classes: write --model '%s' (linear auto takes the class count "
				"from the data)", path, classes - 1, s->cnn[s->ncnn - 1].n, fit);
	MGPU_TRY(mgpu_cnn_walk(&want, sh, path));
	if (!fit[0]) /* checkpoints record the printed spec */
		return mgpu_err(MGPU_EINVAL, "'%s': the model spec is longer than %d characters "
				"printed", path, MGPU_SPEC_TEXT_MAX - 1);
	*s = want;
	return 0;
}

int mgpu_cnn_has_auto(const struct mgpu_spec *s)
{
	return !s->in_c || s->cnn[s->ncnn - 1].n == MGPU_SPEC_AUTO;
}

void mgpu_cnn_take_auto(struct mgpu_spec *s, const struct mgpu_spec *ck)
{
	struct mgpu_cnn_line *top = &s->cnn[s->ncnn - 1];

	if (ck->ncnn != s->ncnn)
		return;
	if (!s->in_c) {
		s->in_c = ck->in_c, s->in_h = ck->in_h, s->in_w = ck->in_w;
		s->in_1d = ck->in_1d;
	}
	if (top->n == MGPU_SPEC_AUTO)
		top->n = ck->cnn[ck->ncnn - 1].n;
}

int mgpu_cnn_classes(const struct mgpu_spec *s)
{
	return s->cnn[s->ncnn - 1].n;
}
