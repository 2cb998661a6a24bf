/*
 * mgpu-train - train a model on one device (CPU rank or GPU).
 *
 * The options (opts.c, one table) resolve into a struct mgpu_train_cfg;
 * this file resolves the devices, the world and the batch, starts the
 * ranks of a ddp job or trains in this process, and writes the metrics
 * (rank 0 only) to standard output or -o FILE.
 */
#include <ctype.h>   /* isspace */
#include <errno.h>   /* errno, EPIPE */
#include <math.h>    /* log */
#include <stdio.h>   /* fprintf */
#include <stdint.h>  /* uint8_t */
#include <stdlib.h>  /* setenv, malloc */
#include <string.h>  /* strcmp, strerror */
#include <unistd.h>  /* gethostname */

#include "../common.h"     /* die, usage_error, output_open */
#include "core/cli.h"      /* mgpu_cli_int_list */
#include "core/json.h"     /* mgpu_json_escape_buf */
#include "core/table.h"    /* struct mgpu_table */
#include "data/tokenizer.h" /* mgpu_tokenizer_* */
#include "data/samples.h"  /* mgpu_dtype_is_token, mgpu_samples_shape_str */
#include "data/source.h"   /* mgpu_source_* */
#include "comm/launch.h"   /* mgpu_launch_env, mgpu_launch_run */
#include "comm/mpi.h"      /* mgpu_mpi_in_build */
#include "model/arch.h"      /* mgpu_arch_of: a family's flags */
#include "model/hf_gpt2.h"    /* mgpu_hf_gpt2_export */
#include "model/model.h"      /* mgpu_model_generate */
#include "train/sync.h"       /* mgpu_sync_name */
#include "gpu/gpu.h"       /* mgpu_gpu_enumerate, mgpu_gpu_resolve */
#include "train/train.h"      /* mgpu_train_run */
#include "opts.h"          /* struct train_opts, train_opts_parse */
#include "selftest.h"      /* train_selftest */
#include "tb.h"            /* train_tb_record */
#include "view.h"          /* struct view */

const char *const mgpu_tool_name = "mgpu-train";

/* No GPU to train on, and --cpu-fallback N: N CPU ranks instead (why:
 * the message, NULL in the ranks, which learn it from an empty MGPU_GPUS). */
static void fall_back(struct train_opts *o, const char *why)
{
	if (why)
		warn("%s: falling back to %d CPU rank%s (--cpu-fallback)", why, o->cpu_fallback,
		     o->cpu_fallback > 1 ? "s" : "");
	setenv("MGPU_GPUS", "", 1);
	o->gpus = NULL;
	o->cfg.ndevices = 0;
	o->cpu_ranks = o->cpu_fallback;
	snprintf(o->cfg.backend, sizeof o->cfg.backend, "cpu");
}

/* Standard input for --gpus - read whole here, so that an empty one (what
 * `mgpu-probe --ids` prints when no GPU is eligible) can fall back: 1 when
 * it holds nothing but white space, else 0 and *in reads it again. */
static int stdin_blank(char *buf, size_t cap, FILE **in)
{
	size_t n = fread(buf, 1, cap, stdin), i;

	if (ferror(stdin))
		die("--gpus -: cannot read standard input: %s", strerror(errno));
	for (i = 0; i < n && isspace((unsigned char)buf[i]); i++)
		;
	if (i == n)
		return 1;
	*in = fmemopen(buf, n, "r");
	if (!*in)
		die("--gpus -: cannot read standard input: %s", strerror(errno));
	return 0;
}

static int gpus_is(const struct train_opts *o, const char *word)
{
	return o->gpus && strcmp(o->gpus, word) == 0;
}

/* A GPU listed twice runs two ranks (multi-rank training tested on one
 * GPU): the cpu sync backend and mode dp allow it; NCCL does not (it needs
 * a device of its own per rank), so an explicit nccl refuses the list. */
static const char *no_repeat(const struct train_opts *o)
{
	if (o->sync == MGPU_SYNC_NCCL && o->cfg.mode == MGPU_MODE_DDP)
		return "--sync-backend nccl needs a GPU of its own for each rank "
		       "(--sync-backend cpu lets ranks share one, for testing)";
	return NULL;
}

/* --gpus LIST|all|auto|- through the selection rules mgpu-probe uses. The
 * ranks mgpu-train starts get the resolved list in MGPU_GPUS, so `-` reads
 * standard input once, in the launcher. */
static void resolve_gpus(struct train_opts *o)
{
	const char *given = getenv("MGPU_LAUNCHED") ? getenv("MGPU_GPUS") : NULL;
	static char input[8192];
	struct mgpu_gpu_list list;
	FILE *in = stdin;
	int rc, i;
	char buf[8 * MGPU_MAX_DEVICES] = "";
	size_t len = 0;

	if (o->gpus && o->cpu_ranks)
		usage_error("--cpu-ranks and --gpus exclude each other");
	if (o->cpu_fallback && !gpus_is(o, "-") && !gpus_is(o, "auto"))
		usage_error("--cpu-fallback needs --gpus - or --gpus auto");
	if (!o->gpus)
		return;
	if (given) {
		if (!given[0])
			fall_back(o, NULL);
		else if (mgpu_cli_int_list("MGPU_GPUS", given, o->cfg.devices, MGPU_MAX_DEVICES,
					   &o->cfg.ndevices) < 0)
			die_lib();
		return;
	}
	if (o->cpu_fallback && gpus_is(o, "-") && stdin_blank(input, sizeof input, &in)) {
		fall_back(o, "--gpus -: no GPU ids on standard input");
		return;
	}
	rc = mgpu_gpu_enumerate(&list);
	if (rc == 0)
		rc = mgpu_gpu_resolve(o->gpus, in, &list, NULL, no_repeat(o), o->cfg.devices,
				      MGPU_MAX_DEVICES, &o->cfg.ndevices);
	if (in != stdin)
		fclose(in);
	/* auto finding no eligible GPU (or none at all) */
	if (rc == MGPU_ERANGE && o->cpu_fallback && gpus_is(o, "auto")) {
		fall_back(o, mgpu_errmsg());
		return;
	}
	if (rc == MGPU_EINVAL)
		usage_error("%s", mgpu_errmsg());
	if (rc < 0)
		die_lib();
	for (i = 0; i < o->cfg.ndevices; i++)
		len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%d", i ? "," : "",
					o->cfg.devices[i]);
	setenv("MGPU_GPUS", buf, 1);
}

static const char *const cols[] = {
	"kind", "step", "epoch", "loss", "lr", "samples_per_s", "step_ms", "data_ms",
	"val_loss", "val_acc", "test_loss", "test_acc", "wall_s", "effective_batch",
	"world_size", "mode", "sync_backend", "peak_bytes", "rss_bytes", "path",
	"bpb", "val_bpb", "test_bpb", "loss_scale", "skipped_steps",
	/* --per-class only: the class records' own columns */
	"class", "name", "samples",
};
#define NCOLS_PLAIN ((int)(sizeof cols / sizeof cols[0]) - 3)
/* Data with a target: its metrics' columns after the plain ones, by kind
 * (enum mgpu_target_kind: vector, mask, keypoints). */
static const char *const target_cols[][4] = {
	[MGPU_TARGET_VECTOR] = { "val_rmse", "test_rmse", NULL, NULL },
	[MGPU_TARGET_MASK] = { "val_miou", "test_miou", NULL, NULL },
	[MGPU_TARGET_KEYPOINTS] = { "val_kp_err_px", "val_pck", "test_kp_err_px", "test_pck" },
};

struct out {
	const struct mgpu_train_cfg *cfg;
	const struct train_opts *o;
	const char *resume_note;
	int quiet;
	struct mgpu_table t;
	struct view v;    /* what a person at a terminal sees */
	struct train_tb tb; /* --tensorboard */
	struct output *res; /* the metrics' file */
	const char *colv[MGPU_TABLE_MAXCOLS]; /* the table's columns */
};

/* START: data with a target get its metrics' columns (no record is out
 * yet, so the header has them). */
static void target_columns(struct out *out, int kind)
{
	int n = NCOLS_PLAIN, i;

	if (kind <= 0 || kind > MGPU_TARGET_KEYPOINTS)
		return;
	memcpy(out->colv, cols, (size_t)n * sizeof *cols);
	for (i = 0; i < 4 && target_cols[kind][i]; i++)
		out->colv[n++] = target_cols[kind][i];
	mgpu_table_init(&out->t, out->t.fp, out->t.format, out->colv, n);
}

/* An evaluation's target metrics, as the kind has them. */
static void put_target(struct out *out, const struct mgpu_record *r)
{
	struct mgpu_table *t = &out->t;
	int test = r->kind == MGPU_REC_SUMMARY;

	switch (r->target) {
	case MGPU_TARGET_VECTOR:
		mgpu_table_num(t, "val_rmse", r->val_t.rmse, 6);
		if (test)
			mgpu_table_num(t, "test_rmse", r->test_t.rmse, 6);
		break;
	case MGPU_TARGET_MASK:
		mgpu_table_num(t, "val_miou", r->val_t.miou, 6);
		if (test)
			mgpu_table_num(t, "test_miou", r->test_t.miou, 6);
		break;
	case MGPU_TARGET_KEYPOINTS:
		mgpu_table_num(t, "val_kp_err_px", r->val_t.kp_err_px, 6);
		mgpu_table_num(t, "val_pck", r->val_t.pck, 6);
		if (test) {
			mgpu_table_num(t, "test_kp_err_px", r->test_t.kp_err_px, 6);
			mgpu_table_num(t, "test_pck", r->test_t.pck, 6);
		}
		break;
	}
}

static const char *const kind_names[] = { "step", "eval", "summary", "checkpoint", "start",
					  "class" };

/* A gpt's loss is nats per token: also give it in bits per byte of text,
 * the unit text models are compared in (bytes: divided by ln 2; tokens of
 * a --tokenizer: by ln 2 and the split's bytes per token; other token
 * ids: NA). An mlp's classes are no text. */
static void put_bpb(struct out *out, const char *col, double nats, int split)
{
	if (mgpu_spec_is_lm(&out->cfg->spec) && out->v.bpt[split] > 0)
		mgpu_table_num(&out->t, col, view_bpb(&out->v, nats, split), 6);
}

/* Bytes of text per token in each split: 1 for byte data, measured by
 * decoding up to 4096 rows' targets with --tokenizer, else 0 (unknown). */
static void bytes_per_token(const struct train_opts *o, double bpt[3])
{
	enum { MAXROWS = 4096 };
	struct mgpu_tokenizer tk;
	struct mgpu_source src;
	size_t T = (size_t)o->cfg.spec.ctx, i, k, n, len, bytes, toks;
	int32_t *ids = malloc((T + 1) * sizeof *ids), y;
	unsigned char *row = NULL, *text;
	uint32_t idx;
	int s;

	bpt[0] = bpt[1] = bpt[2] = o->cfg.spec.vocab <= 256 && !o->tokenizer ? 1.0 : 0.0;
	if (!o->tokenizer || !ids || !mgpu_spec_is_lm(&o->cfg.spec))
		goto out;
	if (mgpu_tokenizer_open(&tk, o->tokenizer) < 0)
		goto out; /* the sample names the problem */
	if (mgpu_source_open(&src, o->cfg.data) < 0 || !mgpu_dtype_is_token(src.dtype) ||
	    src.d != (int)T + 1 || !(row = malloc(src.row_nbytes))) {
		mgpu_tokenizer_close(&tk);
		goto out;
	}
	for (s = 0; s < 3; s++) {
		n = src.n[s] < MAXROWS ? src.n[s] : MAXROWS;
		for (i = bytes = toks = 0; i < n; i++) {
			idx = (uint32_t)(i * src.n[s] / n);
			if (mgpu_source_rows(&src, s, &idx, 1, row, &y) < 0)
				break;
			for (k = 0; k <= T; k++) {
				uint16_t h;
				uint32_t w;
				if (src.dtype == MGPU_DTYPE_U16) {
					memcpy(&h, row + 2 * k, 2);
					ids[k] = h;
				} else {
					memcpy(&w, row + 4 * k, 4);
					ids[k] = (int32_t)w;
				}
			}
			if (mgpu_tokenizer_decode(&tk, ids + 1, T, &text, &len) < 0)
				break;
			free(text);
			bytes += len;
			toks += T;
		}
		bpt[s] = i == n && toks ? (double)bytes / (double)toks : 0.0;
	}
	free(row);
	mgpu_source_close(&src);
	mgpu_tokenizer_close(&tk);
out:
	free(ids);
}

/* --dtype fp16: the loss scale after the window and the steps skipped
 * for an overflow so far. */
static void put_scaler(struct out *out, const struct mgpu_record *r)
{
	if (out->cfg->prec != MGPU_PREC_FP16)
		return;
	mgpu_table_num(&out->t, "loss_scale", r->loss_scale, 6);
	mgpu_table_int(&out->t, "skipped_steps", r->skipped);
}

static int put_record(struct out *out, const struct mgpu_record *r)
{
	struct mgpu_table *t = &out->t;

	mgpu_table_str(t, "kind", kind_names[r->kind]);
	mgpu_table_int(t, "step", r->step);
	mgpu_table_int(t, "epoch", r->epoch);
	if (r->kind == MGPU_REC_CLASS) {
		mgpu_table_int(t, "class", r->class_id);
		mgpu_table_str(t, "name", r->class_name);
		mgpu_table_int(t, "samples", r->samples);
		mgpu_table_num(t, "val_acc", r->val_acc, 6);
		mgpu_table_num(t, "test_acc", r->test_acc, 6);
		return mgpu_table_emit(t);
	}
	if (r->kind == MGPU_REC_CKPT) {
		mgpu_table_str(t, "path", r->path);
		return mgpu_table_emit(t);
	}
	if (r->kind == MGPU_REC_STEP) {
		mgpu_table_num(t, "loss", r->loss, 6);
		mgpu_table_num(t, "lr", r->lr, 6);
		mgpu_table_num(t, "samples_per_s", r->samples_per_s, 6);
		mgpu_table_num(t, "step_ms", r->step_ms, 4);
		mgpu_table_num(t, "data_ms", r->data_ms, 4);
		put_bpb(out, "bpb", r->loss, 0);
		put_scaler(out, r);
		return mgpu_table_emit(t);
	}
	mgpu_table_num(t, "val_loss", r->val_loss, 6);
	if (!r->target || isfinite(r->val_acc)) /* a regression has no accuracy */
		mgpu_table_num(t, "val_acc", r->val_acc, 6);
	mgpu_table_num(t, "wall_s", r->wall_s, 5);
	put_bpb(out, "val_bpb", r->val_loss, 1);
	put_target(out, r);
	if (r->kind == MGPU_REC_SUMMARY) {
		put_bpb(out, "test_bpb", r->test_loss, 2);
		mgpu_table_num(t, "test_loss", r->test_loss, 6);
		if (!r->target || isfinite(r->test_acc))
			mgpu_table_num(t, "test_acc", r->test_acc, 6);
		mgpu_table_num(t, "samples_per_s", r->samples_per_s, 6);
		mgpu_table_int(t, "effective_batch", r->effective_batch);
		mgpu_table_int(t, "world_size", r->world);
		mgpu_table_str(t, "mode", mgpu_mode_name(r->mode));
		mgpu_table_str(t, "sync_backend", mgpu_sync_name(r->sync));
		mgpu_table_ints(t, "peak_bytes", r->peak_bytes, r->ndev);
		mgpu_table_ints(t, "rss_bytes", r->rss_bytes, r->ndev);
		put_scaler(out, r);
	}
	return mgpu_table_emit(t);
}

/* The run's shape, on stderr once everything is loaded. */
static void announce(const struct out *out, const struct mgpu_record *r)
{
	const struct mgpu_train_cfg *c = out->cfg;
	const struct mgpu_batch_plan *p = &c->plan;
	char spec[MGPU_SPEC_TEXT_MAX], nodes[32] = "", shape[64];

	if (out->quiet)
		return;
	mgpu_spec_format(r->spec ? r->spec : &c->spec, spec, sizeof spec);
	if (c->evaluate) {
		note("evaluating the checkpoint %s (model %s, step %lld) on %s with %d %s %s",
		     c->resume, spec, (long long)r->first_step, c->data, c->plan.world,
		     c->backend, c->plan.world > 1 ? "devices" : "device");
		return;
	}
	if (c->env.nnodes > 1)
		snprintf(nodes, sizeof nodes, " on %d nodes", c->env.nnodes);
	note("model %s; %d %s %s%s (mode %s, sync %s); effective batch "
		"%lld (%d per device x %d accumulation step%s x %d device%s); %d steps per "
		"epoch, %lld to run%s%s", spec, p->world, c->backend,
		p->world > 1 ? "devices" : "device", nodes, mgpu_mode_name(c->mode),
		mgpu_sync_name(r->sync), (long long)r->effective_batch, p->batch, p->accum,
		p->accum > 1 ? "s" : "", p->world, p->world > 1 ? "s" : "", r->epoch,
		(long long)(r->step - r->first_step), c->resume[0] ? "; resuming from " : "",
		c->resume);
	if (out->o->com.verbose) {
		mgpu_samples_shape_str(r->sample_ndim, r->sample_shape, shape, sizeof shape);
		if (r->target)
			note("data %s: samples %s, %s targets: the model gives %d output channels",
			     c->data, shape, mgpu_target_kind_name(r->target), r->classes);
		else
			note("data %s: samples %s, %d classes", c->data, shape, r->classes);
	}
	if (out->resume_note[0])
		note("%s", out->resume_note);
	if (r->first_step >= r->step)
		note("the checkpoint is already at the last step (%lld): "
		     "nothing to train (a larger --epochs extends the run)",
		     (long long)r->first_step);
}

static int on_record(void *ctx, const struct mgpu_record *r)
{
	struct out *out = ctx;

	MGPU_TRY(train_tb_record(&out->tb, r));
	if (r->kind == MGPU_REC_START) {
		target_columns(out, r->target);
		announce(out, r);
		view_record(&out->v, r);
		return 0;
	}
	if (view_record(&out->v, r)) /* shown in place of the record */
		return 0;
	if (put_record(out, r) < 0) {
		if (errno == EPIPE) /* the reader went away: stop every rank quietly */
			return mgpu_err(MGPU_ECLOSED, "output closed");
		die_lib();
	}
	view_after(&out->v, r);
	return 0;
}

/* A JSON string of n bytes, which may hold NUL and need not be UTF-8:
 * each byte is the character of its value (U+0000..U+00FF), so bytes of
 * 0x80 and above are escaped and the string reads back as Latin-1. */
static void json_bytes(FILE *fp, const uint8_t *b, size_t n)
{
	char one[2] = "", e[16];
	size_t i;

	putc('"', fp);
	for (i = 0; i < n; i++) {
		one[0] = (char)b[i];
		if (!b[i] || b[i] >= 0x80)
			fprintf(fp, "\\u%04x", b[i]);
		else if (mgpu_json_escape_buf(e, sizeof e, one) < sizeof e)
			fwrite(e + 1, 1, strlen(e) - 2, fp); /* without its quotes */
	}
	putc('"', fp);
}

/* A sample as text after the metrics, or (--json) one more record. */
static void print_text(const struct train_opts *o, const uint8_t *p, size_t plen,
		       const uint8_t *text, size_t n)
{
	if (o->com.format == MGPU_FMT_JSON) {
		fputs("{\"kind\":\"sample\",\"prompt\":", stdout);
		json_bytes(stdout, p, plen);
		fputs(",\"text\":", stdout);
		json_bytes(stdout, text, n);
		fputs("}\n", stdout);
		return;
	}
	fwrite(p, 1, plen, stdout);
	fwrite(text, 1, n, stdout);
	putchar('\n');
}

/* --prompt of a model on token ids: ids separated by spaces or commas
 * (none: the continuation starts at id 0). */
static int prompt_ids(const char *p, int32_t **ids, size_t *n)
{
	size_t cap = strlen(p) / 2 + 2;
	char *e;
	long v;

	*n = 0;
	*ids = malloc(cap * sizeof **ids);
	if (!*ids)
		return mgpu_err(MGPU_ENOMEM, "--prompt: out of memory");
	while (*p) {
		if (*p == ' ' || *p == ',') {
			p++;
			continue;
		}
		errno = 0;
		v = strtol(p, &e, 10);
		if (e == p || errno || v < 0 || v > INT32_MAX || (*e && *e != ' ' && *e != ','))
			return mgpu_err(MGPU_EINVAL, "--prompt: '%s' is not a list of token ids "
					"(the data are tokens)", p);
		(*ids)[(*n)++] = (int32_t)v;
		p = e;
	}
	if (!*n)
		(*ids)[(*n)++] = 0;
	return 0;
}

/* --tokenizer: the prompt's text encoded (a line break when empty), the
 * generated ids decoded back to text. */
static int sample_bpe(const struct train_opts *o, struct mgpu_model *m)
{
	const char *p = o->prompt && *o->prompt ? o->prompt : "\n";
	size_t plen, n = (size_t)o->sample, tlen;
	int32_t *pid = NULL, *ids = malloc(n * sizeof *ids);
	unsigned char *text = NULL;
	struct mgpu_tokenizer b;
	int rc;

	if (!ids)
		return mgpu_err(MGPU_ENOMEM, "--sample %zu: out of memory", n);
	rc = mgpu_tokenizer_open(&b, o->tokenizer);
	if (rc == 0 && mgpu_tokenizer_vocab(&b) > m->spec.vocab)
		rc = mgpu_err(MGPU_EINVAL, "'%s': a tokenizer of %d tokens, the model's vocab is "
			      "%d", o->tokenizer, mgpu_tokenizer_vocab(&b), m->spec.vocab);
	if (rc == 0)
		rc = mgpu_tokenizer_encode(&b, (const unsigned char *)p, strlen(p), &pid, &plen);
	if (rc == 0)
		rc = mgpu_model_generate_tokens(m, pid, plen, n, o->temperature, o->cfg.seed, ids);
	if (rc == 0)
		rc = mgpu_tokenizer_decode(&b, ids, n, &text, &tlen);
	if (rc == 0)
		print_text(o, (const uint8_t *)(o->prompt ? o->prompt : ""),
			   o->prompt ? strlen(o->prompt) : 0, text, tlen);
	mgpu_tokenizer_close(&b); /* zeroed by a failed open */
	free(pid);
	free(ids);
	free(text);
	return rc;
}

/* A gpt on token data samples ids: printed as decimal ids, a space apart. */
static int sample_tokens(const struct train_opts *o, struct mgpu_model *m)
{
	size_t plen, n = (size_t)o->sample, i;
	int32_t *p = NULL, *ids;
	int rc;

	if (o->tokenizer)
		return sample_bpe(o, m);
	ids = malloc(n * sizeof *ids);
	if (!ids)
		return mgpu_err(MGPU_ENOMEM, "--sample %zu: out of memory", n);
	rc = prompt_ids(o->prompt ? o->prompt : "", &p, &plen);
	if (rc == 0)
		rc = mgpu_model_generate_tokens(m, p, plen, n, o->temperature, o->cfg.seed, ids);
	if (rc == 0 && o->com.format == MGPU_FMT_JSON) {
		fputs("{\"kind\":\"sample\",\"prompt_ids\":[", stdout);
		for (i = 0; i < plen; i++)
			printf("%s%d", i ? "," : "", (int)p[i]);
		fputs("],\"ids\":[", stdout);
		for (i = 0; i < n; i++)
			printf("%s%d", i ? "," : "", (int)ids[i]);
		fputs("]}\n", stdout);
	} else if (rc == 0) {
		for (i = 0; i < plen + n; i++)
			printf("%s%d", i ? " " : "", (int)(i < plen ? p[i] : ids[i - plen]));
		putchar('\n');
	}
	free(p);
	free(ids);
	return rc;
}

/* --sample: the trained gpt's continuation of --prompt on standard output,
 * as text after the metrics, or (--json) as one more record. */
static int on_model(void *ctx, struct mgpu_model *m, int data_dtype)
{
	const struct train_opts *o = ((struct out *)ctx)->o;
	const char *p = o->prompt ? o->prompt : "";
	size_t plen = strlen(p), n = (size_t)o->sample;
	uint8_t *text;
	int rc;

	if (o->export_hf[0])
		MGPU_TRY(mgpu_hf_gpt2_export(m, o->export_hf));
	if (!n)
		return 0;
	if (mgpu_dtype_is_token(data_dtype)) {
		rc = sample_tokens(o, m);
		goto flush;
	}
	if (o->tokenizer)
		return mgpu_err(MGPU_EINVAL, "--tokenizer: the data are bytes, not token ids");
	text = malloc(n);
	if (!text)
		return mgpu_err(MGPU_ENOMEM, "--sample %zu: out of memory", n);
	rc = mgpu_model_generate(m, (const uint8_t *)p, plen, n, o->temperature, o->cfg.seed,
				 text);
	if (rc == 0)
		print_text(o, (const uint8_t *)p, plen, text, n);
	free(text);
flush:
	if (rc == 0 && fflush(stdout) != 0)
		rc = errno == EPIPE ? mgpu_err(MGPU_ECLOSED, "output closed") :
				      mgpu_err(MGPU_EIO, "standard output: %s", strerror(errno));
	return rc;
}

/* --evaluate reads a checkpoint and writes none. */
static void check_evaluate(const struct train_opts *o)
{
	if (o->cfg.evaluate && !o->cfg.resume[0])
		usage_error("--evaluate needs the checkpoint to evaluate: --resume DIR");
	if (o->cfg.evaluate && o->cfg.save_dir[0])
		usage_error("--evaluate trains nothing and saves no checkpoint: drop --save-dir");
	if (o->cfg.predict_class && !o->cfg.predict[0])
		usage_error("--predict-as needs --predict FILE.npy");
	if (o->cfg.augment.npairs && !o->cfg.augment.flip)
		usage_error("--flip-pairs swaps parts in a flip: give --augment flip too");
}

/* Stopped by a signal: the metrics so far are complete, commit them now
 * (mpirun kills its ranks a second after it forwarded a signal, before
 * they could leave MPI; finish() then has nothing left to do). */
static void on_stop(void *ctx)
{
	output_commit(((struct out *)ctx)->res);
}

/* --prompt and --temperature shape --sample, which only a gpt does. */
static void check_sample(const struct train_opts *o)
{
	size_t i;

	if (!o->sample && (train_opts_given(o, "prompt") || train_opts_given(o, "temperature")))
		usage_error("--%s needs --sample N", train_opts_given(o, "prompt") ? "prompt" :
			    "temperature");
	if (o->sample && !mgpu_spec_is_lm(&o->cfg.spec))
		usage_error("--sample needs a gpt model (--model gpt:...); the %s family "
			    "classifies, it does not generate text", mgpu_arch_of(&o->cfg.spec)->name);
	if (o->cfg.prec == MGPU_PREC_FP16 && (mgpu_arch_of(&o->cfg.spec)->flags & MGPU_ARCH_NO_FP16))
		usage_error("--dtype fp16: a %s trains in fp32 or bf16 (its convolutions have no "
			    "fp16 form)", mgpu_arch_of(&o->cfg.spec)->name);
	if ((o->export_hf[0] || o->cfg.init[0]) && !mgpu_hf_gpt2_supports(&o->cfg.spec))
		usage_error("--%s needs a gpt model", o->export_hf[0] ? "export-hf" : "init");
	if (o->cfg.init[0] && o->cfg.resume[0])
		usage_error("--init starts from weights, --resume from a whole checkpoint: not "
			    "both");
	for (i = 0; o->sample && !o->tokenizer && o->prompt && o->prompt[i]; i++)
		if ((unsigned char)o->prompt[i] >= o->cfg.spec.vocab)
			usage_error("--prompt: byte %d at position %zu is not below the model's "
				    "vocab %d", (unsigned char)o->prompt[i], i, o->cfg.spec.vocab);
}

/* --sync-bn sums what BatchNorm layers compute: a conv net's bn lines and
 * res blocks; an mlp and a gpt have none. A resumed run's model is the
 * checkpoint's, which the ranks check (mgpu_sync_bind_bn). */
static void check_sync_bn(const struct train_opts *o)
{
	const struct mgpu_spec *s = &o->cfg.spec;
	int i;

	if (!o->cfg.sync_bn || o->cfg.resume[0])
		return;
	if (s->kind == MGPU_MODEL_MLP || s->kind == MGPU_MODEL_GPT)
		usage_error("--sync-bn: %s has no BatchNorm layer to sync",
			    s->kind == MGPU_MODEL_MLP ? "an mlp" : "a gpt");
	for (i = 0; i < s->ncnn; i++)
		if (s->cnn[i].op == MGPU_CNN_BN || s->cnn[i].op == MGPU_CNN_RES)
			return;
	usage_error("--sync-bn: the conv net has no BatchNorm layer to sync (no bn line or "
		    "res block)");
}

static void on_progress(void *ctx, const struct mgpu_step_info *s)
{
	view_step(&((struct out *)ctx)->v, s);
}

/* The world size and this process's place: from an outside launcher's
 * environment, or from --cpu-ranks / --gpus when mgpu-train launches. */
static void resolve_world(struct train_opts *o)
{
	struct mgpu_train_cfg *c = &o->cfg;
	int asked = c->ndevices ? c->ndevices : (o->cpu_ranks ? o->cpu_ranks : 1);
	int repeated = mgpu_gpu_repeated(c->devices, c->ndevices);

	if (mgpu_launch_env(&c->env) < 0)
		usage_error("%s", mgpu_errmsg());
	o->world = asked;
	if (o->nnodes < 1)
		o->nnodes = 1;
	if (o->node_rank >= o->nnodes)
		usage_error("--node-rank %d is not below --nnodes %d", o->node_rank, o->nnodes);
	if (o->nnodes > 1 && c->env.launcher != MGPU_LAUNCH_NONE &&
	    c->env.launcher != MGPU_LAUNCH_SELF)
		usage_error("--nnodes is for mgpu-train's own launcher; %s placed the ranks",
			    mgpu_launcher_name(c->env.launcher));
	if (o->nnodes > 1 && c->mode == MGPU_MODE_DP)
		usage_error("--mode dp runs in one process; it cannot span --nnodes %d", o->nnodes);
	o->world = asked * o->nnodes;
	if (c->env.launcher != MGPU_LAUNCH_NONE) {
		/* the devices listed are this node's; other nodes have their own */
		if ((o->cpu_ranks || c->ndevices > 1) && asked != c->env.local_world)
			usage_error("%d devices asked for, but %s started %d ranks on this node",
				    asked, mgpu_launcher_name(c->env.launcher),
				    c->env.local_world);
		if (c->mode == MGPU_MODE_DP)
			usage_error("--mode dp runs in one process; start it without %s",
				    mgpu_launcher_name(c->env.launcher));
		o->world = c->env.world;
	}
	if (o->sync == 0) /* auto: NCCL cannot run two ranks on one GPU */
		c->sync = strcmp(c->backend, "cuda") == 0 && c->mode == MGPU_MODE_DDP &&
					  repeated < 0 ? MGPU_SYNC_NCCL : MGPU_SYNC_CPU;
	else
		c->sync = o->sync;
	/* once per job: not in the ranks mgpu-train starts */
	if (repeated >= 0 && c->env.rank == 0 && !getenv("MGPU_LAUNCHED") && !o->com.quiet)
		note("GPU %d is listed more than once: its ranks share it, which is for "
		     "testing multi-rank training on one GPU (sync backend %s)", repeated,
		     c->mode == MGPU_MODE_DP ? "of mode dp" : mgpu_sync_name(c->sync));
	if (c->sync == MGPU_SYNC_NCCL && strcmp(c->backend, "cuda") != 0)
		usage_error("--sync-backend nccl needs GPU devices (--gpus)");
	if (c->sync == MGPU_SYNC_MPI && (strcmp(c->backend, "cuda") == 0 ||
					 c->mode == MGPU_MODE_DP))
		usage_error("--sync-backend mpi is for CPU ranks in mode ddp (GPU ranks on "
			    "several nodes: nccl)");
	/* what mgpu_sync_set_grad_prec would refuse in every rank, once here */
	if (c->grad_prec == MGPU_PREC_BF16 && o->world > 1 && c->mode == MGPU_MODE_DDP &&
	    c->sync != MGPU_SYNC_NCCL && (c->sync == MGPU_SYNC_MPI || c->env.nnodes > 1 ||
					  o->nnodes > 1 || strcmp(c->backend, "cuda") == 0))
		usage_error("--grad-dtype bf16 needs sync backend cpu with CPU ranks on one node, "
			    "or nccl; not %s", strcmp(c->backend, "cuda") == 0 ?
			    "cpu for GPU ranks (use nccl)" : c->sync == MGPU_SYNC_MPI ?
			    "--sync-backend mpi" : "cpu across nodes");
	if (c->sync == MGPU_SYNC_MPI && !mgpu_mpi_in_build())
		die("--sync-backend mpi: this build has no MPI (install libopenmpi-dev and "
		    "rebuild)");
}

/* --batch-size with --global-batch-size must agree with the split (as in
 * the settings line -v prints, which repeats the run). */
static void resolve_batch(struct train_opts *o)
{
	struct mgpu_train_cfg *c = &o->cfg;

	if (mgpu_batch_plan_make(&c->plan, o->batch, o->global_batch, o->accum, o->world) < 0)
		usage_error("%s", mgpu_errmsg());
	if (o->global_batch && train_opts_given(o, "batch-size") && o->batch != c->plan.batch)
		usage_error("--batch-size %d and --global-batch-size %lld disagree: the global "
			    "batch gives %d per device", o->batch, (long long)o->global_batch,
			    c->plan.batch);
	o->batch = c->plan.batch;
}

/* An option contradicting the checkpoint is a usage error, whether it is
 * one the checkpoint records (--lr) or one that changes what it does not
 * (--cpu-ranks changes the global batch). */
static void check_resume(const struct train_opts *o)
{
	int rc;

	if (!o->cfg.resume[0])
		return;
	rc = mgpu_train_check_resume(&o->cfg);
	if (rc == MGPU_EINVAL)
		usage_error("%s", mgpu_errmsg());
	if (rc < 0)
		die_lib();
}

/* mgpu-train starts the ranks of a ddp job itself and supervises them. */
static int launch(struct train_opts *o, char **argv)
{
	struct mgpu_launch_result res;

	struct mgpu_launch_nodes nodes;
	int local = o->world / o->nnodes;

	if (mgpu_train_precheck(&o->cfg) < 0)
		die_lib();
	if (o->nnodes > 1 && mgpu_launch_nodes_env(&nodes, o->nnodes, o->node_rank, local) < 0)
		usage_error("%s", mgpu_errmsg());
	if ((o->nnodes > 1 ? mgpu_launch_run_nodes(local, &nodes, argv, &mgpu_interrupted, &res) :
			     mgpu_launch_run(o->world, argv, &mgpu_interrupted, &res)) < 0)
		die_lib();
	if (res.failed_rank >= 0 && res.quiet)
		exit_pipe_closed();
	if (res.elsewhere) /* the real cause last: the node and rank that failed */
		die("node %d's ranks stopped after a failure elsewhere: %s", o->node_rank,
		    res.why);
	if (res.failed_rank >= 0)
		die("rank %d failed: %s", res.failed_rank, res.why);
	return res.status;
}

/* The metrics' end: kept (-o commits) after a run that finished or was
 * interrupted with a checkpoint, removed after a failure. */
static int finish(const struct train_opts *o, struct output *res, struct view *v, int rc)
{
	if (rc < 0 && rc != MGPU_EINTR)
		output_abort(res);
	else
		output_commit(res);
	if (rc == MGPU_ECLOSED) {
		if (o->cfg.env.launcher == MGPU_LAUNCH_SELF)
			exit(MGPU_EXIT_PIPE);
		exit_pipe_closed();
	}
	if (rc == MGPU_EINTR) {
		if (!o->com.quiet && o->cfg.env.rank == 0)
			note("%s%s", mgpu_errmsg(), o->cfg.save_dir[0] ? ", checkpoint written" : "");
		view_interrupted(v); /* where the summary would go, if anywhere */
		return 130;
	}
	/* Tell our own launcher this rank only followed another's failure. */
	if ((rc == MGPU_EPEER || rc == MGPU_ETIMEOUT) && o->cfg.env.launcher == MGPU_LAUNCH_SELF) {
		error_msg("%s", mgpu_errmsg());
		mgpu_launch_report(o->cfg.env.rank, mgpu_errmsg());
		exit(MGPU_EXIT_PEER);
	}
	if (rc < 0)
		die_lib();
	return 0;
}

static int selftest(const struct train_opts *o)
{
	struct output res;
	int bad = train_selftest(output_open(&res, &o->com), o->com.format, o->com.quiet);

	output_commit(&res);
	return bad;
}

/* -v in a job of several nodes: where each rank runs, and what it got of
 * the environment NCCL reads (a launcher that does not pass it on leaves
 * NCCL choosing its own interface on that node). */
static void show_place(const struct train_opts *o)
{
	const struct mgpu_rank_env *e = &o->cfg.env;
	const char *ifname = getenv("NCCL_SOCKET_IFNAME");
	char host[64] = "?";

	if (!o->com.verbose || e->nnodes < 2)
		return;
	gethostname(host, sizeof host - 1);
	note("rank %d: node %d of %d (host %s), local rank %d of %d, started by %s; "
	     "NCCL_SOCKET_IFNAME %s", e->rank, e->node, e->nnodes, host, e->local_rank,
	     e->local_world,
	     mgpu_launcher_name(e->launcher), ifname ? ifname : "unset");
}

/* Train in this process (one rank of a ddp job, or every device in dp). */
static int train(struct train_opts *o, int argc, char **argv)
{
	struct mgpu_opt_argv saved;
	struct output res;
	struct out out;
	struct mgpu_train_hooks h = { on_record, on_progress, &out, on_model, on_stop };
	static char ident[MGPU_IDENT_LEN];
	int rc;

	if (o->world > 1 && o->cfg.mode == MGPU_MODE_DDP)
		snprintf(mgpu_diag_prefix, sizeof mgpu_diag_prefix, "rank %d", o->cfg.env.rank);
	show_place(o);
	train_opts_saved(o, &saved);
	o->cfg.argv = (const char *const *)saved.argv;
	o->cfg.argc = saved.argc;
	o->cfg.stop = &mgpu_interrupted;
	train_opts_ident(o, ident, sizeof ident);
	o->cfg.ident = ident;
	memset(&out, 0, sizeof out);
	memset(&res, 0, sizeof res);
	out.res = &res;
	res.fp = stdout;
	if (o->cfg.env.rank == 0) /* only rank 0 writes the metrics */
		output_open(&res, &o->com);
	/* only rank 0 shows anything */
	view_init(&out.v, &o->cfg, argc, argv, o->com.json || train_opts_given(o, "format") ||
		  o->cfg.env.rank != 0, res.to_file, o->com.quiet || o->cfg.env.rank != 0);
	if (o->cfg.env.rank == 0)
		bytes_per_token(o, out.v.bpt);
	out.quiet = o->com.quiet;
	out.cfg = &o->cfg;
	out.o = o;
	out.resume_note = o->resume_note;
	mgpu_table_init(&out.t, res.fp, o->com.format, cols,
			o->cfg.per_class ? NCOLS_PLAIN + 3 : NCOLS_PLAIN);
	train_tb_init(&out.tb, o);
	rc = mgpu_train_run(&o->cfg, &h);
	if (train_tb_close(&out.tb) < 0 && rc == 0)
		rc = MGPU_EIO;
	mgpu_opt_argv_free(&saved);
	view_done(&out.v);
	return finish(o, &res, &out.v, rc);
}

int cmd_main(int argc, char **argv)
{
	static struct train_opts o;

	train_opts_parse(&o, argc, argv);
	if (o.selftest)
		return selftest(&o);
	check_sample(&o);
	check_sync_bn(&o);
	check_evaluate(&o);
	resolve_gpus(&o);
	resolve_world(&o);
	resolve_batch(&o);
	check_resume(&o);
	if (o.com.print_config) {
		train_opts_show(&o, stdout);
		finish_stdout();
		return 0;
	}
	if (o.com.verbose && o.cfg.env.rank == 0 && o.cfg.env.launcher != MGPU_LAUNCH_SELF)
		train_opts_show(&o, stderr);
	if (o.cfg.env.launcher == MGPU_LAUNCH_NONE && o.world > 1 &&
	    o.cfg.mode == MGPU_MODE_DDP)
		return launch(&o, argv);
	return train(&o, argc, argv);
}
