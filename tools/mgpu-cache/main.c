/*
 * mgpu-cache - build a tensor cache from shards (once), verify one, or
 * print its header.
 *
 * Build flow: work out the cache key (the options that shape the bytes,
 * plus each input's identity: manifest sha256s and file size + mtime, or a
 * stream's sha256), stop early when the cache already has that key, else
 * read and check every input (nothing is created before that succeeds),
 * then lock the directory, re-check, write under a temporary name and
 * rename. Concurrent builders of one cache wait on the lock and find it
 * built.
 */
#include <stdio.h>    /* printf, fprintf */
#include <stdlib.h>   /* exit, free */
#include <string.h>   /* strcmp, strncmp, memcpy */
#include <sys/stat.h> /* stat */
#include <unistd.h>   /* read, access, isatty */

#include "../common.h"      /* die, usage_error */
#include "core/cancel.h"    /* mgpu_cancel_check */
#include "core/cli.h"       /* mgpu_cli_choice */
#include "core/io.h"        /* mgpu_read_fd */
#include "core/progress.h"  /* struct mgpu_progress */
#include "core/sha256.h"    /* mgpu_sha256_* */
#include "core/table.h"     /* struct mgpu_table */
#include "data/cache.h"     /* mgpu_cache_* */
#include "data/input.h"     /* mgpu_samples_append */
#include "data/manifest.h"  /* mgpu_manifest_* */
#include "data/sniff.h"     /* mgpu_sniff_* */
#include "data/wds.h"       /* mgpu_wds_read */

const char *const mgpu_tool_name = "mgpu-cache";

static const char *const dtype_words[] = { "u8", "f32", NULL };

struct opts {
	struct mgpu_cache_opts c;
	unsigned long long chunk_nbytes;
	int force, verify, info;
	struct mgpu_common_opts com; /* -o: the cache directory */
	char **in;
	int nin;
};

static int set_dtype(void *t, const char *arg)
{
	int k;

	MGPU_TRY(mgpu_cli_choice("--dtype", arg, dtype_words, &k));
	((struct opts *)t)->c.dtype = k == 0 ? MGPU_DTYPE_U8 : MGPU_DTYPE_F32;
	return 0;
}

static void show_dtype(const void *t, char *buf, size_t len)
{
	int d = ((const struct opts *)t)->c.dtype;

	snprintf(buf, len, "%s", d == MGPU_DTYPE_U8 ? "u8" : d == MGPU_DTYPE_F32 ? "f32" : "");
}

#define O struct opts
static const struct mgpu_opt options[] = {
	MGPU_OPT_HEAD("building"),
	MGPU_OPT_CALL("dtype", 0, set_dtype, show_dtype, "u8|f32", "stored element type",
		      "that of the samples", 0),
	MGPU_OPT_ROW(MGPU_OPT_FLAG, "normalize", 0, O, c.normalise, 0, 0, NULL,
		     "per-feature (x - mean) / std of train, stored as f32", 0),
	MGPU_OPT_ROW(MGPU_OPT_FLAG, "raw", 0, O, c.raw, 0, 0, NULL,
		     "uncompressed chunks, shared through the page cache", 0),
	MGPU_OPT_ROW(MGPU_OPT_INT, "level", 0, O, c.level, 1, 22, "N", "zstd level", 0),
	MGPU_OPT_ROW(MGPU_OPT_INT, "threads", 0, O, c.threads, 1, 64, "N",
		     "compression threads", 0),
	MGPU_OPT_ROWD(MGPU_OPT_SIZE, "chunk-size", 0, O, chunk_nbytes, 1, 1 << 30, "SIZE",
		      "decoded bytes per chunk, K/M/G suffixes", "1M", 0),
	MGPU_OPT_ROW(MGPU_OPT_FLAG, "force", 0, O, force, 0, 0, NULL,
		     "rebuild even when up to date", 0),
	MGPU_OPT_HEAD("checking"),
	MGPU_OPT_ROW(MGPU_OPT_FLAG, "verify", 0, O, verify, 0, 0, NULL,
		     "check every chunk of CACHE; exit 1 naming a bad one", 0),
	MGPU_OPT_ROW(MGPU_OPT_FLAG, "info", 0, O, info, 0, 0, NULL, "print CACHE's header", 0),
	MGPU_OPT_COMMON_OUT(O, com, "DIR", "the cache directory to build"),
	MGPU_OPT_TABLE_END,
};
#undef O

static const char synopsis[] =
	"usage: mgpu-cache -o DIR [options] INPUT...\n"
	"       mgpu-cache --verify CACHE\n"
	"       mgpu-cache --info CACHE\n"
	"Decode shards once into a tensor cache (zstd chunks with an index and\n"
	"checksums, or raw and memory-mapped); rebuilt only when inputs or options\n"
	"change. INPUT: a manifest, shard files (split from the name: train-*, val-*,\n"
	"test-*; else train) or - (a tar stream or a manifest on stdin). The cache's\n"
	"header goes to stdout as a table, one row per split.\n";

static const struct opts defaults = {
	.c = { .level = 3, .threads = 1 }, .chunk_nbytes = 1 << 20,
};

/* Everything read from the inputs, waiting for the build. */
struct inputs {
	struct mgpu_samples set[MGPU_NSPLITS];
	struct mgpu_sha256 key;
	unsigned char head[512];   /* sniffed start of stdin */
	size_t nhead;
	int stdin_manifest;
	/* progress on a terminal: shards and bytes keyed (the totals) and read */
	struct mgpu_progress bar;
	uint64_t nshards, nbytes, shards_read, bytes_read;
};

static void parse(struct opts *o, int argc, char **argv)
{
	const struct tool_cli cli = { options, synopsis, &defaults, 0 };
	int first = parse_options(&cli, o, &o->com, argc, argv, 0, NULL);

	o->in = argv + first;
	o->nin = argc - first;
	o->c.chunk_nbytes = (size_t)o->chunk_nbytes;
	if (o->verify + o->info > 1)
		usage_error("--verify and --info do not go together");
	if ((o->verify || o->info) && (o->nin != 1 || o->com.output))
		usage_error("--%s takes one CACHE and no -o", o->verify ? "verify" : "info");
	if (!o->verify && !o->info && !o->com.output)
		usage_error("no cache directory (-o DIR)");
	if (!o->verify && !o->info && o->nin == 0)
		usage_error("no INPUT given");
	if (o->c.normalise && o->c.dtype == MGPU_DTYPE_U8)
		usage_error("--normalize stores float32; it does not go with --dtype u8");
}

/* A failure, or SIGINT/SIGTERM: the library removed what it wrote. */
static _Noreturn void fail(void)
{
	exit_if_interrupted();
	die_lib();
}

/* ---- the cache key ---- */

/* One line "kind s a b" of the key's text. */
static void key_str(struct inputs *in, const char *kind, const char *s, unsigned long long a,
		    unsigned long long b)
{
	char buf[4500];
	int n = snprintf(buf, sizeof buf, "%s %s %llu %llu\n", kind, s, a, b);

	mgpu_sha256_update(&in->key, buf, n > 0 ? (size_t)n : 0);
}

static void key_file(struct inputs *in, const char *path)
{
	struct stat st;

	if (stat(path, &st) != 0)
		die("'%s': cannot open: no such file", path);
	in->nshards++;
	in->nbytes += (uint64_t)st.st_size;
	key_str(in, "file", path, (unsigned long long)st.st_size,
		(unsigned long long)st.st_mtim.tv_sec * 1000000000ull +
		(unsigned long long)st.st_mtim.tv_nsec);
}

static void key_options(const struct opts *o, struct inputs *in)
{
	char buf[256];
	int n = snprintf(buf, sizeof buf, "mgpu-cache %d dtype=%d normalise=%d raw=%d "
			 "level=%d chunk=%zu\n", MGPU_CACHE_VERSION, o->c.dtype, o->c.normalise,
			 o->c.raw, o->c.raw ? 0 : o->c.level, o->c.chunk_nbytes);

	mgpu_sha256_init(&in->key);
	mgpu_sha256_update(&in->key, buf, (size_t)n);
}

/* ---- reading inputs ---- */

static int split_of_name(const char *path)
{
	const char *b = strrchr(path, '/');
	int s;

	b = b ? b + 1 : path;
	for (s = 0; s < MGPU_NSPLITS; s++) {
		size_t n = strlen(mgpu_split_name(s));
		if (strncmp(b, mgpu_split_name(s), n) == 0 && b[n] == '-')
			return s;
	}
	return MGPU_SPLIT_TRAIN;
}

/* Read a shard into its split: checked against its manifest line e, or
 * (e NULL) a shard named on the command line. */
static void read_shard(struct inputs *in, const char *path, int split,
		       const struct mgpu_manifest_entry *e)
{
	struct mgpu_samples t = { 0 };
	struct stat st;

	if (e) {
		if (mgpu_manifest_read_shard(e, &in->set[split]) < 0 || mgpu_cancel_check() < 0)
			fail();
		in->bytes_read += e->nbytes;
	} else {
		if (mgpu_wds_read(path, &t, NULL) < 0 || mgpu_cancel_check() < 0 ||
		    mgpu_samples_append(&in->set[split], &t, path) < 0)
			fail();
		mgpu_samples_free(&t);
		in->bytes_read += stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
	}
	in->shards_read++;
	mgpu_progress_count(&in->bar, "reading", in->shards_read, in->nshards, "shards",
			    in->bytes_read, in->nbytes, in->shards_read == in->nshards);
}

static void manifest(struct inputs *in, const struct mgpu_manifest *m, int read)
{
	size_t i;
	int k, s;

	for (k = 0; k < m->nnames && !read; k++) /* names are part of what the cache holds */
		key_str(in, "class", m->names[k], (unsigned long long)k, 0);
	for (i = 0; i < m->n; i++) {
		const struct mgpu_manifest_entry *e = &m->e[i];
		if (!read) {
			key_str(in, "shard", e->sha256, (unsigned long long)e->split,
				e->samples);
			key_file(in, e->path);
		} else {
			read_shard(in, e->path, e->split, e);
		}
	}
	for (s = 0; s < MGPU_NSPLITS && read && m->names; s++) {
		struct mgpu_samples *t = &in->set[s];
		if (t->names && !mgpu_class_names_equal(t->names, t->nnames, m->names, m->nnames))
			die("the manifests' class names differ");
		if (!t->names && mgpu_class_names_copy(&t->names, &t->nnames, m->names,
						       m->nnames) < 0)
			fail();
	}
}

/* stdin: sniff; a manifest is read whole, a tar stream is read here. Both
 * go on reading fd 0 where the sniffing stopped: reopening /dev/stdin would
 * start a regular file over from its beginning. */
static void read_stdin(struct inputs *in, int read_now)
{
	struct mgpu_manifest m;
	unsigned char *all;
	char sha[MGPU_SHA256_HEX];
	ssize_t got;
	size_t len;

	while (in->nhead < sizeof in->head) {
		got = read(0, in->head + in->nhead, sizeof in->head - in->nhead);
		if (got <= 0)
			break;
		in->nhead += (size_t)got;
	}
	if (mgpu_sniff_head(in->head, in->nhead) != MGPU_SNIFF_MANIFEST) {
		if (mgpu_progress_due(&in->bar))
			mgpu_progress_draw(&in->bar, "reading a tar stream from standard input");
		if (mgpu_wds_read_fd(0, "-", in->head, in->nhead, &in->set[MGPU_SPLIT_TRAIN],
				     sha) < 0)
			fail();
		key_str(in, "stream", sha, 0, 0);
		return;
	}
	in->stdin_manifest = 1;
	all = malloc(in->nhead);
	if (!all)
		die("out of memory");
	memcpy(all, in->head, in->nhead);
	len = in->nhead;
	if (mgpu_read_fd(0, "-", &all, &len) < 0 ||
	    mgpu_manifest_parse((const char *)all, len, "-", "", &m) < 0)
		fail();
	free(all);
	manifest(in, &m, 0);
	if (read_now)
		manifest(in, &m, 1);
	mgpu_manifest_free(&m);
}

/* Key every input (reading only stdin), or read them all. */
static void inputs(const struct opts *o, struct inputs *in, int read)
{
	struct mgpu_manifest m;
	int i;

	for (i = 0; i < o->nin; i++) {
		const char *p = o->in[i];
		if (strcmp(p, "-") == 0) {
			if (!read)
				read_stdin(in, 1);
			continue;
		}
		if (access(p, R_OK) != 0)
			die("'%s': cannot open", p);
		if (mgpu_sniff_file(p) == MGPU_SNIFF_MANIFEST) {
			if (mgpu_manifest_load(p, &m) < 0)
				fail();
			manifest(in, &m, read);
			mgpu_manifest_free(&m);
		} else if (read) {
			read_shard(in, p, split_of_name(p), NULL);
		} else {
			key_file(in, p);
		}
	}
}

static int hand_over(void *ctx, struct mgpu_samples split[MGPU_NSPLITS])
{
	struct inputs *in = ctx;

	memcpy(split, in->set, sizeof in->set);
	memset(in->set, 0, sizeof in->set);
	return 0;
}

/* ---- output ---- */

static const char *const cols[] = {
	"split", "samples", "shape", "dtype", "classes", "chunks", "chunk_rows", "compression",
	"normalised", "data_bytes", "stored_bytes", "ratio", "status", "key", "class_names",
	"target",
};

/* The classes' names, comma-separated, or NA where labels were numbers. */
static void names_str(const struct mgpu_cache *c, char *buf, size_t len)
{
	size_t at = 0;
	uint32_t i;

	snprintf(buf, len, "NA");
	for (i = 0; i < c->h.nnames && at < len; i++)
		at += (size_t)snprintf(buf + at, len - at, "%s%s", i ? "," : "", c->names[i]);
}

static void rows(const struct opts *o, const char *dir, const char *status)
{
	struct mgpu_cache c;
	struct mgpu_table t;
	static char names[MGPU_CACHE_NAMES_NBYTES + MGPU_SAMPLES_MAX_CLASSES];
	char shape[64], comp[32], key[MGPU_SHA256_HEX], target[96];
	struct mgpu_samples tl = { 0 };
	uint64_t k, data, stored;
	int s;

	if (mgpu_cache_open(&c, dir) < 0)
		die_lib();
	names_str(&c, names, sizeof names);
	mgpu_table_init(&t, stdout, o->com.format, cols, (int)(sizeof cols / sizeof cols[0]));
	mgpu_samples_shape_str((int)c.h.ndim, c.h.shape, shape, sizeof shape);
	snprintf(comp, sizeof comp, c.h.flags & MGPU_CACHE_RAW ? "raw" : "zstd-%d", c.h.level);
	mgpu_sha256_hex(c.h.key, key);
	tl.tkind = (int)c.h.tkind; /* "keypoints 17x2", "mask 96x96", "vector 3" or NA */
	tl.tndim = (int)c.h.tndim;
	memcpy(tl.tshape, c.h.tshape, sizeof tl.tshape);
	mgpu_samples_target_str(&tl, target, sizeof target);
	if (!c.h.tkind)
		snprintf(target, sizeof target, "NA");
	for (s = 0; s < MGPU_NSPLITS; s++) {
		if (!c.h.n[s])
			continue;
		data = stored = 0;
		for (k = 0; k < c.h.nchunks[s]; k++) {
			data += c.ix[c.h.first_chunk[s] + k].rows * c.rec_nbytes;
			stored += c.ix[c.h.first_chunk[s] + k].stored_nbytes;
		}
		mgpu_table_str(&t, "split", mgpu_split_name(s));
		mgpu_table_int(&t, "samples", (int64_t)c.h.n[s]);
		mgpu_table_str(&t, "shape", shape);
		mgpu_table_str(&t, "dtype", mgpu_dtype_name((int)c.h.dtype));
		mgpu_table_int(&t, "classes", c.h.classes);
		mgpu_table_int(&t, "chunks", (int64_t)c.h.nchunks[s]);
		mgpu_table_int(&t, "chunk_rows", c.h.chunk_rows);
		mgpu_table_str(&t, "compression", comp);
		mgpu_table_int(&t, "normalised", (c.h.flags & MGPU_CACHE_NORMALISED) != 0);
		mgpu_table_int(&t, "data_bytes", (int64_t)data);
		mgpu_table_int(&t, "stored_bytes", (int64_t)stored);
		mgpu_table_num(&t, "ratio", stored ? (double)data / (double)stored : 0, 4);
		mgpu_table_str(&t, "status", status);
		mgpu_table_str(&t, "key", key);
		mgpu_table_str(&t, "class_names", names);
		mgpu_table_str(&t, "target", target);
		if (mgpu_table_emit(&t) < 0) {
			finish_stdout(); /* a closed pipe: exit 1 quietly */
			die_lib();
		}
	}
	mgpu_cache_close(&c);
}

/* Chunks checked so far, on the terminal. */
struct checking {
	struct mgpu_progress bar;
	uint64_t nbytes; /* stored bytes of every chunk */
};

static void on_checked(void *ctx, uint64_t done, uint64_t total, uint64_t nbytes)
{
	struct checking *ck = ctx;

	mgpu_progress_count(&ck->bar, "verifying", done, total, "chunks", nbytes, ck->nbytes,
			    done == total);
}

static int verify(const struct opts *o)
{
	struct mgpu_cache c;
	struct checking ck = { .nbytes = 0 };
	uint64_t k;
	size_t n;

	if (mgpu_cache_open(&c, o->in[0]) < 0)
		die_lib();
	for (k = 0; k < c.h.total_chunks; k++)
		ck.nbytes += c.ix[k].stored_nbytes;
	mgpu_progress_init(&ck.bar, 2, !o->com.quiet && isatty(2));
	if (mgpu_cache_verify_progress(&c, &n, on_checked, &ck) < 0)
		fail();
	mgpu_progress_clear(&ck.bar);
	mgpu_cache_close(&c);
	if (!o->com.quiet)
		note("'%s': all %zu chunks check out", o->in[0], n);
	rows(o, o->in[0], "verified");
	return 0;
}

/* "'a', 'b'": the inputs, for messages about all of them. */
static const char *input_names(const struct opts *o)
{
	static char buf[512];
	size_t n = 0;
	int i, k;

	for (i = 0; i < o->nin && n < sizeof buf; i++) {
		k = snprintf(buf + n, sizeof buf - n, "%s'%s'", i ? ", " : "", o->in[i]);
		n += k > 0 ? (size_t)k : 0;
	}
	return buf;
}

/* Chunks written so far, on the terminal. */
static void on_chunks(void *ctx, uint64_t rows, uint64_t total_rows, uint64_t data_nbytes)
{
	struct mgpu_progress *bar = ctx;

	mgpu_progress_count(bar, "caching", rows, total_rows, "samples", data_nbytes, 0,
			    rows == total_rows);
}

static int build(struct opts *o)
{
	static struct inputs in;
	struct mgpu_progress bar;
	struct mgpu_cache_stats st;
	uint8_t key[32];
	int built;

	mgpu_progress_init(&in.bar, 2, !o->com.quiet && isatty(2));
	key_options(o, &in);
	inputs(o, &in, 0);
	mgpu_sha256_final(&in.key, key);
	memcpy(o->c.key, key, 32);
	if (!o->force && mgpu_cache_is_current(o->com.output, key)) {
		mgpu_progress_clear(&in.bar);
		if (!o->com.quiet)
			note("'%s' is up to date", o->com.output);
		rows(o, o->com.output, "current");
		return 0;
	}
	inputs(o, &in, 1);
	if (in.set[MGPU_SPLIT_TRAIN].n == 0)
		die("%s: no training samples to cache (want train shards, or a tar stream "
		    "on stdin)", input_names(o));
	o->c.force = o->force;
	mgpu_progress_clear(&in.bar);
	mgpu_progress_init(&bar, 2, in.bar.fd >= 0);
	o->c.progress = on_chunks;
	o->c.progress_ctx = &bar;
	if (mgpu_cache_ensure(o->com.output, &o->c, hand_over, &in, &st, &built) < 0)
		fail();
	mgpu_progress_clear(&bar);
	if (!o->com.quiet)
		note("'%s' %s", o->com.output,
		     built ? "built" : "is up to date (built by another process)");
	rows(o, o->com.output, built ? "built" : "current");
	return 0;
}

int cmd_main(int argc, char **argv)
{
	struct opts o = defaults;

	parse(&o, argc, argv);
	if (o.verify)
		return verify(&o);
	if (o.info) {
		rows(&o, o.in[0], "info");
		return 0;
	}
	return build(&o);
}
