/*
 * mgpu-shard - split a labelled data set (seeded, optionally stratified)
 * and write it as WebDataset tar shards plus a manifest.
 *
 * Flow: load every SOURCE into one pool of samples (an IDX directory's
 * t10k files become the test split as they are), split the pool, cut each
 * split into shards (a multiple of --ranks, sizes differing by at most
 * one), write every shard (and the manifest when it lives beside them) into
 * a temporary directory beside the shard directory, then put the set in
 * place with one rename (data/shardset.h): an identical rerun changes
 * nothing, another set already there is refused without --force. On any
 * failure, or SIGINT/SIGTERM, the temporary directory and the parents this
 * run created are removed: nothing half-written stays.
 *
 * With --text the SOURCEs are plain text, cut into byte-level samples of
 * --context + 1 bytes (data/text.h), with --tokens token files cut into
 * samples of --context + 1 ids (data/tokens.h); both go through the same
 * split, shards and manifest as any labelled set (label 0).
 */
#include <errno.h>    /* errno, EPIPE */
#include <libgen.h>   /* dirname, basename */
#include <stdio.h>    /* printf, fprintf */
#include <stdlib.h>   /* malloc, free, realpath */
#include <string.h>   /* strcmp, strerror */
#include <sys/stat.h> /* stat, S_ISREG */
#include <unistd.h>   /* isatty */

#include "../common.h"      /* die, usage_error */
#include "core/cancel.h"    /* mgpu_cancel_check */
#include "core/io.h"        /* mgpu_afile_*, mgpu_tmp_sweep */
#include "core/progress.h"  /* struct mgpu_progress */
#include "data/image.h"     /* MGPU_IMAGE_MAX_PIXELS */
#include "data/bpe.h"       /* mgpu_bpe_* */
#include "data/input.h"     /* mgpu_input_load */
#include "data/manifest.h"  /* mgpu_manifest_writer, mgpu_manifest_write */
#include "data/shard.h"     /* mgpu_shard_write */
#include "data/shardset.h"  /* mgpu_shardset_* */
#include "data/split.h"     /* mgpu_split_* */
#include "data/text.h"      /* MGPU_TEXT_MAX_CONTEXT */
#include "data/tokenizer.h" /* mgpu_tokenizer_* */
#include "data/tokens.h"    /* mgpu_tokens_cut */

const char *const mgpu_tool_name = "mgpu-shard";

struct opts {
	unsigned long long seed, shard_size;
	double val, test;
	int stratify, ranks, force, text, bpe;
	const char *shard_dir, *resize;
	const char *tokenizer;       /* --tokenizer: GPT-2's files (or a bpe.txt) */
	struct mgpu_common_opts com; /* -o: the manifest */
	struct mgpu_input_opts in;
	char **src;
	int nsrc;
};

/* --shape CxHxW|CxL: each source's rows, reshaped (the same values). */
static int set_shape(void *t, const char *arg)
{
	struct opts *o = t;

	return mgpu_shape_parse(arg, &o->in.ndim, o->in.shape, "--shape");
}

static void show_shape(const void *t, char *buf, size_t len)
{
	const struct opts *o = t;

	mgpu_samples_shape_str(o->in.ndim, o->in.shape, buf, len);
}

#define O struct opts
static const struct mgpu_opt options[] = {
	MGPU_OPT_HEAD("sources"),
	MGPU_OPT_ROW(MGPU_OPT_STR, "labels", 0, O, in.labels, 0, 0, "FILE",
		     "labels of an .npy or IDX images source", MGPU_OPT_NODEF),
	MGPU_OPT_ROWD(MGPU_OPT_STR, "label-column", 0, O, in.label_column, 0, 0, "NAME|INDEX",
		      "CSV label column", "label", 0),
	MGPU_OPT_ROW(MGPU_OPT_STR, "target-columns", 0, O, in.target_columns, 0, 0, "COLS",
		     "CSV columns (names or 0-based indices, joined by commas) that are a "
		     "regression target, not features; the label column is then optional",
		     MGPU_OPT_NODEF),
	MGPU_OPT_CALL("shape", 0, set_shape, show_shape, "CxHxW|CxL",
		      "give every sample this shape (an image, a series; the same count of "
		      "values)", "the source's", 0),
	MGPU_OPT_ROW(MGPU_OPT_STR, "resize", 0, O, resize, 0, 0, "HxW",
		     "resize every PNG and JPEG image to H x W (bilinear); without it "
		     "images of different sizes are an error", MGPU_OPT_NODEF),
	MGPU_OPT_ROW(MGPU_OPT_FLAG, "text", 0, O, text, 0, 0, NULL,
		     "SOURCEs are text, cut into samples of --context + 1 bytes", 0),
	MGPU_OPT_ROW(MGPU_OPT_INT, "bpe", 0, O, bpe, 1, MGPU_BPE_MAX_MERGES, "N",
		     "with --text: learn a byte-level BPE of N merges on the training split, "
		     "write it beside the shards (" MGPU_BPE_FILE ") and cut its token ids",
		     MGPU_OPT_NODEF),
	MGPU_OPT_ROW(MGPU_OPT_STR, "tokenizer", 0, O, tokenizer, 0, 0, "DIR",
		     "with --text: encode with GPT-2's tokenizer (DIR/encoder.json and "
		     "DIR/vocab.bpe) or a --bpe run's bpe.txt", MGPU_OPT_NODEF),
	MGPU_OPT_ROW(MGPU_OPT_FLAG, "tokens", 0, O, in.tokens, 0, 0, NULL,
		     "SOURCEs are token files (llm.c .bin, or raw ids as nanoGPT's), cut into "
		     "samples of --context + 1 ids", 0),
	MGPU_OPT_ROW(MGPU_OPT_SIZE, "context", 0, O, in.text_context, 1,
		     (double)MGPU_TEXT_MAX_CONTEXT, "T", "bytes (or tokens) of context of a "
		     "sample (the model's ctx, at most 65536)", MGPU_OPT_NODEF | MGPU_OPT_UNSET0),
	MGPU_OPT_ROW(MGPU_OPT_INT, "token-bytes", 0, O, in.token_bytes, 2, 4, "2|4",
		     "width of a raw token file's ids (an llm.c header says its own)",
		     MGPU_OPT_NODEF),
	MGPU_OPT_ROW(MGPU_OPT_SIZE, "vocab", 0, O, in.vocab, 1, 2147483648.0, "V",
		     "with --tokens: an id at or above V is an error", MGPU_OPT_NODEF |
		     MGPU_OPT_UNSET0),
	MGPU_OPT_ROW(MGPU_OPT_SIZE, "text-limit", 0, O, in.text_max, 1, 1e15, "BYTES",
		     "read at most this much text per SOURCE (a pipe that never ends is "
		     "an error, not a machine out of memory)", 0),
	MGPU_OPT_HEAD("split"),
	MGPU_OPT_ROW(MGPU_OPT_U64, "seed", 0, O, seed, 0, 9.3e18, "N", "seed of the split", 0),
	MGPU_OPT_ROW(MGPU_OPT_DOUBLE, "val-fraction", 0, O, val, 0, 0.99, "F",
		     "validation share", 0),
	MGPU_OPT_ROW(MGPU_OPT_DOUBLE, "test-fraction", 0, O, test, 0, 0.99, "F", "test share", 0),
	MGPU_OPT_ROW(MGPU_OPT_FLAG, "stratify", 0, O, stratify, 0, 0, NULL,
		     "keep each class's share in every split", 0),
	MGPU_OPT_HEAD("shards"),
	MGPU_OPT_ROW(MGPU_OPT_SIZE, "shard-size", 0, O, shard_size, 1, 4294967295.0, "N",
		     "samples per shard", 0),
	MGPU_OPT_ROW(MGPU_OPT_INT, "ranks", 0, O, ranks, 1, 65536, "N",
		     "shard count of each split a multiple of N", 0),
	MGPU_OPT_ROWD(MGPU_OPT_STR, "shard-dir", 'd', O, shard_dir, 0, 0, "DIR",
		      "where shards go", "directory of -o, else shards", 0),
	MGPU_OPT_ROW(MGPU_OPT_FLAG, "force", 0, O, force, 0, 0, NULL,
		     "replace another shard set in DIR", 0),
	MGPU_OPT_COMMON_OUT(O, com, "FILE", "write the manifest to FILE (atomically), the "
			    "shards beside it unless -d"),
	MGPU_OPT_TABLE_END,
};
#undef O

static const char synopsis[] =
	"usage: mgpu-shard [options] SOURCE...\n"
	"Split a labelled data set and write WebDataset tar shards; the manifest\n"
	"(split, path, samples, bytes, sha256) goes to stdout or -o FILE.\n"
	"SOURCE: an IDX directory (its t10k files are the test split), IDX images\n"
	"or .npy (with --labels), .csv, UEA/UCR .ts (or a directory of NAME_TRAIN.ts\n"
	"and NAME_TEST.ts, the test split), a tar/tar.gz/tar.zst/zip archive, - (stdin),\n"
	"a folder of class folders of .png/.jpg images (torchvision's ImageFolder);\n"
	"with --text: text files, each cut into windows of --context + 1 bytes;\n"
	"with --tokens: token files (llm.c .bin, raw uint16/uint32 ids), windows of\n"
	"--context + 1 ids.\n";

static const struct opts defaults = { .seed = 42, .shard_size = 10000, .ranks = 1,
				      .in.text_max = 1ull << 30 };

/* What this run wrote, to undo on failure. */
struct written {
	struct mgpu_shardset set;     /* the temporary shard directory */
	int begun;
	struct mgpu_afile *manifest;  /* open under its temporary name, or NULL */
};

static struct written wr;

/* Progress on a terminal: samples and bytes written of all splits. */
static struct {
	struct mgpu_progress bar;
	uint64_t done, total, nbytes;
} prog;

/* --resize HxW: two whole numbers of 1 to 65535 whose product is an image
 * size the decoders accept. */
static void parse_resize(struct opts *o)
{
	unsigned long h, w;
	int end = 0;

	if (!o->resize)
		return;
	if (sscanf(o->resize, "%lux%lu%n", &h, &w, &end) != 2 || o->resize[end] ||
	    o->resize[0] < '0' || o->resize[0] > '9' || h < 1 || w < 1 || h > 65535 ||
	    w > 65535 || (size_t)h * w > MGPU_IMAGE_MAX_PIXELS)
		usage_error("--resize '%s': want HxW, e.g. 96x96 (each 1 to 65535, at most %zu "
			    "pixels)", o->resize, MGPU_IMAGE_MAX_PIXELS);
	o->in.resize[0] = (uint32_t)h;
	o->in.resize[1] = (uint32_t)w;
}

/* --text or --tokens and --context go together; labels mean nothing for
 * language-model samples. */
static void check_text(const struct opts *o, const struct mgpu_opt_given *g)
{
	if (!o->in.tokens && (mgpu_opt_was_given(options, g, "token-bytes") ||
			      mgpu_opt_was_given(options, g, "vocab")))
		usage_error("--token-bytes and --vocab need --tokens");
	if (o->in.token_bytes == 3)
		usage_error("--token-bytes: 3 is not a width (want 2 or 4)");
	if (o->text && o->in.tokens)
		usage_error("--text and --tokens exclude each other");
	if (o->bpe && !o->text)
		usage_error("--bpe needs --text");
	if (o->tokenizer && !o->text)
		usage_error("--tokenizer needs --text");
	if (o->tokenizer && o->bpe)
		usage_error("--bpe learns a tokenizer, --tokenizer reads one: not both");
	if ((o->bpe || o->tokenizer) && o->stratify)
		usage_error("text samples have no classes to stratify");
	if (!o->text && !o->in.tokens) {
		if (o->in.text_context)
			usage_error("--context needs --text or --tokens");
		if (mgpu_opt_was_given(options, g, "text-limit"))
			usage_error("--text-limit needs --text");
		return;
	}
	if (!o->in.text_context)
		usage_error("--%s needs --context T (the model's context, ctx=T)",
			    o->text ? "text" : "tokens");
	if (o->in.ndim)
		usage_error(o->text ? "--text samples are bytes of a window: drop --shape"
				    : "--tokens samples are ids of a window: drop --shape");
	if (o->resize)
		usage_error("--%s samples are not images: drop --resize",
			    o->text ? "text" : "tokens");
	if (mgpu_opt_was_given(options, g, "labels") ||
	    mgpu_opt_was_given(options, g, "label-column"))
		usage_error("--%s samples have no labels: drop --labels and --label-column",
			    o->text ? "text" : "tokens");
}

static void parse(struct opts *o, int argc, char **argv)
{
	const struct tool_cli cli = { options, synopsis, &defaults, 0 };
	struct mgpu_opt_given given = { { 0 } };
	int first = parse_options(&cli, o, &o->com, argc, argv, 0, &given);

	o->src = argv + first;
	o->nsrc = argc - first;
	if (o->nsrc == 0)
		usage_error("no SOURCE given");
	if (o->val + o->test >= 1.0)
		usage_error("--val-fraction + --test-fraction must stay below 1");
	check_text(o, &given);
	parse_resize(o);
}

static void undo(void)
{
	if (wr.manifest)
		mgpu_afile_abort(wr.manifest);
	wr.manifest = NULL;
	if (wr.begun)
		mgpu_shardset_abort(&wr.set);
	wr.begun = 0;
}

/* A failure, or SIGINT/SIGTERM (exit 130/143): nothing of the run stays. */
static _Noreturn void fail(void)
{
	undo();
	exit_if_interrupted();
	die_lib();
}

/* The source being read, for the progress of an archive. */
struct reading {
	const char *path;
	uint64_t nbytes; /* its size; 0: unknown (a stream) */
	size_t before;   /* samples of the sources before it */
};

static void on_read(void *ctx, uint64_t nbytes, size_t nsamples)
{
	const struct reading *rs = ctx;
	char what[4200];

	if (!mgpu_progress_due(&prog.bar))
		return;
	snprintf(what, sizeof what, "reading '%s':", rs->path);
	mgpu_progress_count(&prog.bar, what, rs->before + nsamples, 0, "samples", nbytes,
			    rs->nbytes, 1);
}

/* Load every source: the pool, and the predefined test set. */
static void load(const struct opts *o, struct mgpu_samples *pool, struct mgpu_samples *test)
{
	struct mgpu_input_opts in = o->in;
	struct reading rs;
	struct stat st;
	int i;

	in.progress = on_read;
	in.progress_ctx = &rs;
	for (i = 0; i < o->nsrc; i++) {
		rs.path = o->src[i];
		rs.nbytes = strcmp(o->src[i], "-") != 0 && stat(o->src[i], &st) == 0 &&
				    S_ISREG(st.st_mode) ? (uint64_t)st.st_size : 0;
		rs.before = pool->n + test->n;
		if (mgpu_progress_due(&prog.bar))
			mgpu_progress_draw(&prog.bar, "reading '%s' (source %d of %d), %zu samples so far",
					   o->src[i], i + 1, o->nsrc, pool->n + test->n);
		/* an archive's rate and ETA are its own, from its first member */
		mgpu_progress_restart(&prog.bar);
		if (mgpu_input_load(o->src[i], &in, pool, test) < 0 ||
		    mgpu_cancel_check() < 0)
			fail();
	}
	if (pool->n == 0)
		die("no samples in the sources");
	if (test->n && o->test > 0)
		die("'%s': has its own test set (t10k files, a _TEST.ts); --test-fraction must be 0",
		    o->src[0]);
	if (test->n && (test->dtype != pool->dtype ||
			!mgpu_samples_same_shape(test, pool->ndim, pool->shape)))
		die("the test set's samples differ in shape from the training samples");
}

struct plan {
	const struct mgpu_samples *set[MGPU_NSPLITS];
	const uint32_t *idx[MGPU_NSPLITS];
	size_t n[MGPU_NSPLITS];
	char *const *names;   /* class names (labels that were words), or NULL */
	int nnames;
	const struct mgpu_bpe *bpe;   /* --bpe: the tokenizer to write beside the shards */
};

/* Where the manifest goes and what its paths are relative to. */
struct out {
	char dir[4096];       /* the shard directory */
	char shown[4200];     /* how the manifest names it ("" when beside it) */
	char mname[4096];     /* -o: the manifest's file name inside dir, or "" */
	struct mgpu_afile af; /* the manifest file (-o) */
	char *buf;            /* the manifest for stdout, printed once in place */
	size_t nbuf;
	FILE *fp;             /* where rows go: af.fp or a memory stream on buf */
};

/* Write the shards of one split into the temporary directory; a row each. */
static void write_split(const struct opts *o, const struct plan *p, int s, struct out *w,
			struct mgpu_manifest_writer *mw)
{
	size_t k, nsh = mgpu_split_nshards(p->n[s], o->shard_size, o->ranks), first, len;
	char path[4200], shown[4300], name[64], sha[MGPU_SHA256_HEX];
	uint64_t nbytes;

	for (k = 0; k < nsh; k++) {
		mgpu_split_shard_range(p->n[s], nsh, k, &first, &len);
		snprintf(name, sizeof name, "%s-%06zu.tar", mgpu_split_name(s), k);
		snprintf(path, sizeof path, "%s/%s", wr.set.tmp, name);
		snprintf(shown, sizeof shown, "%s%s%s", w->shown, w->shown[0] ? "/" : "", name);
		if (mgpu_shard_write(path, p->set[s], p->idx[s] + first, len, &nbytes, sha) < 0)
			fail();
		if (mgpu_manifest_write(mw, s, shown, len, nbytes, sha) < 0)
			fail();
		prog.done += len;
		prog.nbytes += nbytes;
		mgpu_progress_count(&prog.bar, "writing", prog.done, prog.total, "samples",
				    prog.nbytes, 0, prog.done == prog.total);
	}
	if (o->com.verbose)
		note("%s: %zu samples in %zu shards", mgpu_split_name(s), p->n[s], nsh);
}

/* The shard directory, and how manifest rows name it: by file name when
 * the manifest (-o) lives in it; else, with -o elsewhere, by absolute path
 * (the manifest's readers resolve against the manifest's directory); else
 * (stdout) as given. */
static void place(const struct opts *o, struct out *w)
{
	char a[4096], b[4096], real[4096];

	snprintf(a, sizeof a, "%s", o->com.output ? o->com.output : "");
	snprintf(w->dir, sizeof w->dir, "%s", o->shard_dir ? o->shard_dir :
		 o->com.output ? dirname(a) : "shards");
	if (o->com.output) {
		snprintf(a, sizeof a, "%s", o->com.output);
		snprintf(b, sizeof b, "%s", o->com.output);
		if (!o->shard_dir || strcmp(w->dir, dirname(a)) == 0)
			snprintf(w->mname, sizeof w->mname, "%s", basename(b));
	}
	if (mgpu_shardset_begin(&wr.set, w->dir) < 0)
		fail();
	wr.begun = 1;
	if (o->com.output && !w->mname[0]) { /* what killed runs left beside -o */
		snprintf(a, sizeof a, "%s", o->com.output);
		snprintf(b, sizeof b, "%s", o->com.output);
		mgpu_tmp_sweep(dirname(a), basename(b));
	}
	if (w->mname[0] || !o->com.output)
		snprintf(w->shown, sizeof w->shown, "%s", w->mname[0] ? "" : w->dir);
	else if (realpath(wr.set.parent, real))
		snprintf(w->shown, sizeof w->shown, "%s/%s", real, basename(wr.set.dir));
	else
		die("'%s': cannot resolve: %s", wr.set.parent, strerror(errno));
}

/* Open where the rows go: the manifest beside the shards (in the temporary
 * directory), the -o file elsewhere, or a buffer for stdout. */
static void open_rows(const struct opts *o, struct out *w)
{
	char path[8300];

	if (o->com.output) {
		if (w->mname[0])
			snprintf(path, sizeof path, "%s/%s", wr.set.tmp, w->mname);
		if (mgpu_afile_open(&w->af, w->mname[0] ? path : o->com.output) < 0)
			fail();
		wr.manifest = &w->af;
		w->fp = w->af.fp;
		return;
	}
	w->fp = open_memstream(&w->buf, &w->nbuf);
	if (!w->fp)
		die("out of memory");
}

/* stdout gets the manifest before the set is put in place (a failure to
 * write it still leaves nothing; readers such as mgpu-cache - read to the
 * end, which comes when this process exits, after the rename). */
static void print_rows(struct out *w)
{
	if (fclose(w->fp) != 0)
		die("out of memory");
	if (w->nbuf && fwrite(w->buf, 1, w->nbuf, stdout) != w->nbuf)
		errno = errno ? errno : EIO;
	if (fflush(stdout) != 0 || ferror(stdout)) {
		if (errno == EPIPE) { /* the reader went away: quietly undo */
			undo();
			exit_pipe_closed();
		}
		mgpu_err_errno(MGPU_EIO, "cannot write to standard output");
		fail();
	}
	free(w->buf);
}
/* --bpe: a split's windows, in file order, as one stream of bytes (the T
 * new bytes of each window: consecutive windows join up into the text they
 * were cut from). */
static unsigned char *split_stream(const struct mgpu_samples *pool, const uint32_t *idx,
				   size_t n, size_t T, size_t *len)
{
	unsigned char *mark = calloc(pool->n + 1, 1), *out = malloc(n * T + 1);
	size_t i, j;

	if (!mark || !out)
		die("out of memory for the text of a split");
	for (i = 0; i < n; i++)
		mark[idx[i]] = 1;
	for (i = j = 0; i < pool->n; i++)
		if (mark[i])
			memcpy(out + T * j++, pool->x + i * pool->row_nbytes, T);
	free(mark);
	*len = n * T;
	return out;
}

/* --bpe or --tokenizer: with --bpe learn the merges on the training
 * split's text only, then encode every split's text and cut it into
 * windows of T+1 token ids (uint16, or uint32 for a vocab past 65536),
 * which replace the byte windows in the plan (each split a set of its own). */
static void token_plan(const struct opts *o, const struct mgpu_samples *pool, struct plan *p,
		       struct mgpu_samples tok[MGPU_NSPLITS], uint32_t **ident,
		       struct mgpu_tokenizer *tk)
{
	struct mgpu_tokens_opts to = { (size_t)o->in.text_context, 0, 0 };
	size_t T = (size_t)o->in.text_context, len, n, i, maxn = 0;
	unsigned char *text, *le;
	int32_t *ids;
	int s, w;

	if (o->tokenizer && mgpu_tokenizer_open(tk, o->tokenizer) < 0)
		fail();
	for (s = 0; s < MGPU_NSPLITS; s++) {
		text = split_stream(pool, p->idx[s], p->n[s], T, &len);
		if (s == MGPU_SPLIT_TRAIN && o->bpe) {
			if (mgpu_bpe_learn(&tk->bpe, text, len, o->bpe) < 0)
				fail();
			tk->kind = MGPU_TOKENIZER_BPE;
			if (o->com.verbose)
				note("bpe: %d merges learned on %zu bytes of training text",
				     tk->bpe.nmerges, len);
		}
		if (mgpu_tokenizer_encode(tk, text, len, &ids, &n) < 0) {
			mgpu_err_prefix(MGPU_EFORMAT, "the %s text: ", mgpu_split_name(s));
			fail();
		}
		free(text);
		w = mgpu_tokenizer_vocab(tk) > 65536 ? 4 : 2;
		to.token_bytes = w;
		le = malloc((size_t)w * n + 1);
		if (!le)
			die("out of memory for token ids");
		for (i = 0; i < n; i++) { /* little-endian, as a token file */
			le[w * i] = (unsigned char)ids[i];
			le[w * i + 1] = (unsigned char)(ids[i] >> 8);
			if (w == 4) {
				le[w * i + 2] = (unsigned char)(ids[i] >> 16);
				le[w * i + 3] = (unsigned char)(ids[i] >> 24);
			}
		}
		free(ids);
		/* a split too short for one window of tokens is empty; train may not be */
		if (n > T && mgpu_tokens_cut(le, n, w, mgpu_split_name(s), &to, &tok[s]) < 0)
			fail();
		free(le);
		if (s == MGPU_SPLIT_TRAIN && tok[s].n == 0)
			die("the training text encodes to %zu tokens, fewer than one sample of %zu "
			    "(context %zu + 1)", n, T + 1, T);
		p->set[s] = &tok[s];
		p->n[s] = tok[s].n;
		maxn = tok[s].n > maxn ? tok[s].n : maxn;
	}
	*ident = malloc((maxn + 1) * sizeof **ident);
	if (!*ident)
		die("out of memory");
	for (i = 0; i < maxn; i++)
		(*ident)[i] = (uint32_t)i;
	for (s = 0; s < MGPU_NSPLITS; s++)
		p->idx[s] = *ident;
	p->bpe = o->bpe ? &tk->bpe : NULL;
}

/* Returns 1 when the directory already held this very set. */
static int write_all(const struct opts *o, const struct plan *p)
{
	static struct out w;
	struct mgpu_manifest_writer mw;
	int s, same;

	for (s = 0; s < MGPU_NSPLITS; s++)
		prog.total += p->n[s];
	mgpu_progress_restart(&prog.bar); /* the rate is the writing's */
	place(o, &w);
	if (p->bpe) { /* part of the set: it goes in place with the shards */
		char path[4200];
		snprintf(path, sizeof path, "%s/%s", wr.set.tmp, MGPU_BPE_FILE);
		if (mgpu_bpe_save(p->bpe, path) < 0)
			fail();
	}
	open_rows(o, &w);
	if (mgpu_manifest_writer_init(&mw, w.fp, o->com.format) < 0 ||
	    mgpu_manifest_write_classes(&mw, p->names, p->nnames) < 0)
		fail();
	for (s = 0; s < MGPU_NSPLITS; s++)
		write_split(o, p, s, &w, &mw);
	if (w.mname[0]) {
		if (mgpu_afile_commit(&w.af) < 0)
			fail();
		wr.manifest = NULL;
	}
	if (mgpu_cancel_check() < 0) /* the last moment a stop leaves nothing */
		fail();
	mgpu_progress_clear(&prog.bar);
	if (!o->com.output)
		print_rows(&w);
	if (mgpu_shardset_commit(&wr.set, o->force, &same) < 0)
		fail();
	wr.begun = 0;
	if (o->com.output && !w.mname[0]) { /* the manifest elsewhere: the set is there */
		if (mgpu_afile_commit(&w.af) < 0)
			fail();
		wr.manifest = NULL;
	}
	return same;
}

int cmd_main(int argc, char **argv)
{
	struct opts o = defaults;
	struct mgpu_samples pool = { 0 }, test = { 0 }, tok[MGPU_NSPLITS] = { { 0 } };
	struct mgpu_tokenizer tk = { 0 };
	uint32_t *ident = NULL;
	struct mgpu_split sp;
	struct plan p;
	uint32_t *tidx;
	size_t i;

	parse(&o, argc, argv);
	mgpu_progress_init(&prog.bar, 2, !o.com.quiet && isatty(2));
	load(&o, &pool, &test);
	if (mgpu_split_make(&sp, pool.y, pool.n, pool.classes, o.seed, o.val, o.test,
			    o.stratify) < 0)
		die_lib();
	memset(&p, 0, sizeof p);
	p.names = pool.names;
	p.nnames = pool.nnames;
	for (i = 0; i < MGPU_NSPLITS; i++) {
		p.set[i] = &pool;
		p.idx[i] = sp.idx[i];
		p.n[i] = sp.n[i];
	}
	tidx = malloc((test.n + 1) * sizeof *tidx);
	if (!tidx)
		die("out of memory");
	for (i = 0; i < test.n; i++)
		tidx[i] = (uint32_t)i;
	if (test.n) {
		p.set[MGPU_SPLIT_TEST] = &test;
		p.idx[MGPU_SPLIT_TEST] = tidx;
		p.n[MGPU_SPLIT_TEST] = test.n;
	}
	if (o.bpe || o.tokenizer)
		token_plan(&o, &pool, &p, tok, &ident, &tk);
	if (write_all(&o, &p) && !o.com.quiet)
		note("'%s' already holds this shard set", wr.set.dir);
	if (!o.com.quiet)
		note("%zu train, %zu val, %zu test samples (seed %llu%s)", p.n[0], p.n[1], p.n[2],
		     o.seed, o.stratify ? ", stratified" : "");
	free(tidx);
	free(ident);
	for (i = 0; i < MGPU_NSPLITS; i++)
		mgpu_samples_free(&tok[i]);
	mgpu_tokenizer_close(&tk);
	mgpu_split_free(&sp);
	mgpu_samples_free(&pool);
	mgpu_samples_free(&test);
	return 0;
}
