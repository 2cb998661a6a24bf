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
 */
#include <errno.h>    /* errno, EPIPE */
#include <getopt.h>   /* getopt_long */
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

const char *const mgpu_tool_name = "mgpu-shard";

enum { O_SEED = 256, O_VAL, O_TEST, O_STRATIFY, O_SHARD_SIZE, O_RANKS, O_LABELS,
       O_LABEL_COL, O_JSON };

static const struct option longopts[] = {
	{ "seed", required_argument, NULL, O_SEED },
	{ "val-fraction", required_argument, NULL, O_VAL },
	{ "test-fraction", required_argument, NULL, O_TEST },
	{ "stratify", no_argument, NULL, O_STRATIFY },
	{ "shard-size", required_argument, NULL, O_SHARD_SIZE },
	{ "ranks", required_argument, NULL, O_RANKS },
	{ "labels", required_argument, NULL, O_LABELS },
	{ "label-column", required_argument, NULL, O_LABEL_COL },
	{ "shard-dir", required_argument, NULL, 'd' },
	{ "output", required_argument, NULL, 'o' },
	{ "json", no_argument, NULL, O_JSON },
	{ "quiet", no_argument, NULL, 'q' },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 },
};

struct opts {
	unsigned long long seed, shard_size;
	double val, test;
	int stratify, ranks, json, quiet, verbose, version;
	const char *shard_dir, *output;
	struct mgpu_input_opts in;
	char **src;
	int nsrc;
};

/* What this run wrote, to undo on failure. */
struct written {
	char (*path)[4200];
	size_t n, cap;
	char made_dir[4096];
	struct mgpu_afile *manifest;  /* open under its temporary name, or NULL */
};

static struct written wr;

static void usage(void)
{
	printf("usage: mgpu-shard [options] SOURCE...\n"
	       "Split a labelled data set and write WebDataset tar shards; the manifest\n"
	       "(split, path, samples, bytes, sha256) goes to stdout or -o FILE.\n\n"
	       "sources: an IDX directory (its t10k files are the test split), IDX images\n"
	       "  or .npy (with --labels), .csv, tar/tar.gz/tar.zst/zip archives, - (stdin)\n"
	       "  --labels FILE         labels of an .npy or IDX images source\n"
	       "  --label-column NAME|INDEX  CSV label column [label]\n"
	       "split:\n"
	       "  --seed N [42]   --val-fraction F [0]   --test-fraction F [0]   --stratify\n"
	       "shards:\n"
	       "  --shard-size N        samples per shard [10000]\n"
	       "  --ranks N             shard count of each split a multiple of N [1]\n"
	       "  -d, --shard-dir DIR   where shards go [directory of -o, else shards]\n"
	       "output:\n"
	       "  -o, --output FILE     manifest file [stdout]   --json\n"
	       "  -q, --quiet   -v, --verbose   -h, --help   -V, --version\n");
}

static void parse(struct opts *o, int argc, char **argv)
{
	int c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "d:o:qvhV", longopts, NULL)) != -1) {
		switch (c) {
		case O_SEED:
			o->seed = (unsigned long long)opt_int("--seed", optarg, 0, INT64_MAX);
			break;
		case O_VAL: o->val = opt_double("--val-fraction", optarg, 0, 0.99); break;
		case O_TEST: o->test = opt_double("--test-fraction", optarg, 0, 0.99); break;
		case O_STRATIFY: o->stratify = 1; break;
		case O_SHARD_SIZE:
			o->shard_size = opt_size("--shard-size", optarg, UINT32_MAX);
			if (o->shard_size == 0)
				usage_error("--shard-size: 0 is out of range [1, 4294967295]");
			break;
		case O_RANKS: o->ranks = (int)opt_int("--ranks", optarg, 1, 65536); break;
		case O_LABELS: o->in.labels = optarg; break;
		case O_LABEL_COL: o->in.label_column = optarg; break;
		case 'd': o->shard_dir = optarg; break;
		case 'o': o->output = optarg; break;
		case O_JSON: o->json = 1; break;
		case 'q': o->quiet = 1; break;
		case 'v': o->verbose = 1; break;
		case 'V': o->version = 1; break;
		case 'h': usage(); exit(0);
		default: usage_error("unknown or incomplete option '%s'", argv[optind - 1]);
		}
	}
	o->src = argv + optind;
	o->nsrc = argc - optind;
	if (!o->version && o->nsrc == 0)
		usage_error("no SOURCE given");
	if (o->val + o->test >= 1.0)
		usage_error("--val-fraction + --test-fraction must stay below 1");
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
	if (o->verbose)
		fprintf(stderr, "mgpu-shard: %s: %zu samples in %zu shards\n",
			mgpu_split_name(s), p->n[s], nsh);
}

static void write_all(const struct opts *o, const struct plan *p)
{
	static const char *const cols[] = { "split", "path", "samples", "bytes", "sha256" };
	char mdir[4096], dir[4096];
	struct mgpu_afile af = { .fp = NULL };
	struct mgpu_table t;
	FILE *fp = stdout;
	int s, rel = 0;

	snprintf(mdir, sizeof mdir, "%s", o->output ? o->output : ".");
	snprintf(dir, sizeof dir, "%s", o->shard_dir ? o->shard_dir :
		 o->output ? dirname(mdir) : "shards");
	if (o->output) {
		snprintf(mdir, sizeof mdir, "%s", o->output);
		rel = !o->shard_dir || strcmp(dir, dirname(mdir)) == 0;
	}
	prepare_dir(dir);
	if (o->output) {
		if (mgpu_afile_open(&af, o->output) < 0)
			fail();
		wr.manifest = &af;
		fp = af.fp;
	}
	mgpu_table_init(&t, fp, o->json, cols, 5);
	for (s = 0; s < MGPU_NSPLITS; s++)
		write_split(o, p, s, dir, rel, &t);
	if (mgpu_cancel_check() < 0) /* the last moment a stop leaves nothing */
		fail();
	if (o->output && mgpu_afile_commit(&af) < 0)
		fail();
	wr.manifest = NULL;
}

int cmd_main(int argc, char **argv)
{
	struct opts o = { .seed = 42, .shard_size = 10000, .ranks = 1 };
	struct mgpu_samples pool = { 0 }, test = { 0 };
	struct mgpu_split sp;
	struct plan p;
	uint32_t *tidx;
	size_t i;

	parse(&o, argc, argv);
	if (o.version) {
		print_version(o.verbose);
		return 0;
	}
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
	if (!o.quiet)
		fprintf(stderr, "mgpu-shard: %zu train, %zu val, %zu test samples (seed %llu%s)\n",
			p.n[0], p.n[1], p.n[2], o.seed, o.stratify ? ", stratified" : "");
	free(tidx);
	free(wr.path);
	mgpu_split_free(&sp);
	mgpu_samples_free(&pool);
	mgpu_samples_free(&test);
	return 0;
}
