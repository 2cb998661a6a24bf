/*
 * mgpu-shard - split a labelled data set (seeded, optionally stratified)
 * and write it as WebDataset tar shards plus a manifest.
 *
 * Flow: load every SOURCE into one pool of samples (an IDX directory's
 * t10k files become the test split as they are), split the pool, cut each
 * split into shards (a multiple of --ranks, sizes differing by at most
 * one), write each shard atomically, then the manifest. On any failure the
 * shards this run wrote are removed again, and a shard directory it
 * created too: nothing half-written stays.
 *
 * With --text the SOURCEs are plain text, cut into byte-level samples of
 * --context + 1 bytes (data/text.h) that go through the same split, shards
 * and manifest as any labelled set (label 0).
 */
#include <errno.h>    /* errno, EPIPE */
#include <libgen.h>   /* dirname */
#include <stdio.h>    /* printf, fprintf */
#include <stdlib.h>   /* malloc, free, realpath */
#include <string.h>   /* strcmp, strlen */
#include <sys/stat.h> /* stat */
#include <unistd.h>   /* unlink, rmdir */

#include "../common.h"      /* die, usage_error */
#include "core/cancel.h"    /* mgpu_cancel_check */
#include "core/io.h"        /* mgpu_afile_* */
#include "core/table.h"     /* struct mgpu_table */
#include "data/input.h"     /* mgpu_input_load */
#include "data/manifest.h"  /* MGPU_MANIFEST_HEADER columns */
#include "data/shard.h"     /* mgpu_shard_write */
#include "data/split.h"     /* mgpu_split_* */
#include "data/text.h"      /* MGPU_TEXT_MAX_CONTEXT */

const char *const mgpu_tool_name = "mgpu-shard";

struct opts {
	unsigned long long seed, shard_size;
	double val, test;
	int stratify, ranks, text;
	const char *shard_dir;
	struct mgpu_common_opts com; /* -o: the manifest */
	struct mgpu_input_opts in;
	char **src;
	int nsrc;
};

#define O struct opts
static const struct mgpu_opt options[] = {
	MGPU_OPT_HEAD("sources"),
	MGPU_OPT_ROW(MGPU_OPT_STR, "labels", 0, O, in.labels, 0, 0, "FILE",
		     "labels of an .npy or IDX images source", MGPU_OPT_NODEF),
	MGPU_OPT_ROWD(MGPU_OPT_STR, "label-column", 0, O, in.label_column, 0, 0, "NAME|INDEX",
		      "CSV label column", "label", 0),
	MGPU_OPT_ROW(MGPU_OPT_FLAG, "text", 0, O, text, 0, 0, NULL,
		     "SOURCEs are text, cut into samples of --context + 1 bytes", 0),
	MGPU_OPT_ROW(MGPU_OPT_SIZE, "context", 0, O, in.text_context, 1,
		     (double)MGPU_TEXT_MAX_CONTEXT, "T", "bytes of context of a text sample "
		     "(the model's ctx)", MGPU_OPT_NODEF | MGPU_OPT_UNSET0),
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
	"or .npy (with --labels), .csv, a tar/tar.gz/tar.zst/zip archive, - (stdin);\n"
	"with --text: text files, each cut into windows of --context + 1 bytes.\n";

static const struct opts defaults = { .seed = 42, .shard_size = 10000, .ranks = 1 };

/* What this run wrote, to undo on failure. */
struct written {
	char (*path)[4200];
	size_t n, cap;
	char made_dir[4096];
	struct mgpu_afile *manifest;  /* open under its temporary name, or NULL */
};

static struct written wr;

/* --text and --context go together; labels mean nothing for text. */
static void check_text(const struct opts *o, const struct mgpu_opt_given *g)
{
	if (!o->text) {
		if (o->in.text_context)
			usage_error("--context needs --text");
		return;
	}
	if (!o->in.text_context)
		usage_error("--text needs --context T (the model's context, ctx=T)");
	if (mgpu_opt_was_given(options, g, "labels") ||
	    mgpu_opt_was_given(options, g, "label-column"))
		usage_error("--text samples have no labels: drop --labels and --label-column");
}

static void parse(struct opts *o, int argc, char **argv)
{
	const struct tool_cli cli = { options, synopsis, &defaults };
	struct mgpu_opt_given given = { { 0 } };
	int first = parse_options(&cli, o, &o->com, argc, argv, 0, &given);

	o->src = argv + first;
	o->nsrc = argc - first;
	if (o->nsrc == 0)
		usage_error("no SOURCE given");
	if (o->val + o->test >= 1.0)
		usage_error("--val-fraction + --test-fraction must stay below 1");
	check_text(o, &given);
}

static void undo(void)
{
	size_t i;

	if (wr.manifest)
		mgpu_afile_abort(wr.manifest);
	for (i = 0; i < wr.n; i++)
		unlink(wr.path[i]);
	if (wr.made_dir[0])
		rmdir(wr.made_dir);
}

/* A failure, or SIGINT/SIGTERM (exit 130/143): nothing of the run stays. */
static _Noreturn void fail(void)
{
	undo();
	exit_if_interrupted();
	die_lib();
}

static void remember(const char *path)
{
	if (wr.n == wr.cap) {
		wr.cap = wr.cap ? 2 * wr.cap : 64;
		wr.path = realloc(wr.path, wr.cap * sizeof *wr.path);
		if (!wr.path)
			die("out of memory");
	}
	snprintf(wr.path[wr.n++], sizeof wr.path[0], "%s", path);
}

/* Load every source: the pool, and the predefined test set. */
static void load(const struct opts *o, struct mgpu_samples *pool, struct mgpu_samples *test)
{
	int i;

	for (i = 0; i < o->nsrc; i++)
		if (mgpu_input_load(o->src[i], &o->in, pool, test) < 0 ||
		    mgpu_cancel_check() < 0)
			fail();
	if (pool->n == 0)
		die("no samples in the sources");
	if (test->n && o->test > 0)
		die("'%s': has its own test set (t10k); --test-fraction must be 0",
		    o->src[0]);
	if (test->n && (test->dtype != pool->dtype || test->d != pool->d))
		die("the test set's samples differ in shape from the training samples");
}

static void prepare_dir(const char *dir)
{
	struct stat st;

	if (stat(dir, &st) == 0) {
		if (!S_ISDIR(st.st_mode))
			die("'%s': not a directory", dir);
		return;
	}
	if (mgpu_mkdirs(dir) < 0)
		die_lib();
	snprintf(wr.made_dir, sizeof wr.made_dir, "%s", dir);
}

struct plan {
	const struct mgpu_samples *set[MGPU_NSPLITS];
	const uint32_t *idx[MGPU_NSPLITS];
	size_t n[MGPU_NSPLITS];
};

/* Write the shards of one split; a manifest row each. */
static void write_split(const struct opts *o, const struct plan *p, int s, const char *dir,
			int rel, struct mgpu_table *t)
{
	size_t k, nsh = mgpu_split_nshards(p->n[s], o->shard_size, o->ranks), first, len;
	char path[4200], name[64], sha[MGPU_SHA256_HEX];
	uint64_t nbytes;

	for (k = 0; k < nsh; k++) {
		mgpu_split_shard_range(p->n[s], nsh, k, &first, &len);
		snprintf(name, sizeof name, "%s-%06zu.tar", mgpu_split_name(s), k);
		snprintf(path, sizeof path, "%s/%s", dir, name);
		remember(path);
		if (mgpu_shard_write(path, p->set[s], p->idx[s] + first, len, &nbytes, sha) < 0)
			fail();
		mgpu_table_str(t, "split", mgpu_split_name(s));
		mgpu_table_str(t, "path", rel ? name : path);
		mgpu_table_int(t, "samples", (int64_t)len);
		mgpu_table_int(t, "bytes", (int64_t)nbytes);
		mgpu_table_str(t, "sha256", sha);
		if (mgpu_table_emit(t) < 0) {
			if (errno == EPIPE) { /* the reader went away: quietly undo */
				undo();
				exit(1);
			}
			fail();
		}
	}
	if (o->com.verbose)
		note("%s: %zu samples in %zu shards", mgpu_split_name(s), p->n[s], nsh);
}

static void write_all(const struct opts *o, const struct plan *p)
{
	static const char *const cols[] = { "split", "path", "samples", "bytes", "sha256" };
	char mdir[4096], dir[4096];
	struct mgpu_afile af = { .fp = NULL };
	struct mgpu_table t;
	FILE *fp = stdout;
	int s, rel = 0;

	snprintf(mdir, sizeof mdir, "%s", o->com.output ? o->com.output : ".");
	snprintf(dir, sizeof dir, "%s", o->shard_dir ? o->shard_dir :
		 o->com.output ? dirname(mdir) : "shards");
	if (o->com.output) {
		snprintf(mdir, sizeof mdir, "%s", o->com.output);
		rel = !o->shard_dir || strcmp(dir, dirname(mdir)) == 0;
	}
	prepare_dir(dir);
	if (o->com.output) {
		if (mgpu_afile_open(&af, o->com.output) < 0)
			fail();
		wr.manifest = &af;
		fp = af.fp;
	}
	mgpu_table_init(&t, fp, o->com.format, cols, 5);
	for (s = 0; s < MGPU_NSPLITS; s++)
		write_split(o, p, s, dir, rel, &t);
	if (mgpu_cancel_check() < 0) /* the last moment a stop leaves nothing */
		fail();
	if (o->com.output && mgpu_afile_commit(&af) < 0)
		fail();
	wr.manifest = NULL;
}

int cmd_main(int argc, char **argv)
{
	struct opts o = defaults;
	struct mgpu_samples pool = { 0 }, test = { 0 };
	struct mgpu_split sp;
	struct plan p;
	uint32_t *tidx;
	size_t i;

	parse(&o, argc, argv);
	load(&o, &pool, &test);
	if (mgpu_split_make(&sp, pool.y, pool.n, pool.classes, o.seed, o.val, o.test,
			    o.stratify) < 0)
		die_lib();
	memset(&p, 0, sizeof p);
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
	write_all(&o, &p);
	if (!o.com.quiet)
		note("%zu train, %zu val, %zu test samples (seed %llu%s)", p.n[0], p.n[1], p.n[2],
		     o.seed, o.stratify ? ", stratified" : "");
	free(tidx);
	free(wr.path);
	mgpu_split_free(&sp);
	mgpu_samples_free(&pool);
	mgpu_samples_free(&test);
	return 0;
}
