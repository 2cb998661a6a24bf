/*
 * manifest.h - the shard manifest of mgpu-shard, written and read here
 * (the one definition of the format): TSV with the header
 * "split<TAB>path<TAB>samples<TAB>bytes<TAB>sha256" and one line per shard.
 *
 * split is train, val or test; path is the shard file, relative to the
 * manifest's directory (relative to the working directory when the manifest
 * is read from standard input); samples and bytes are decimal; sha256 is 64
 * lower-case hex digits. Parsing is strict: every error names the manifest
 * and the line; a shard listed twice is an error too.
 *
 * Class names (labels that were words, see samples.h) come as lines
 * "#class<TAB>K<TAB>NAME" after the header, K = 0, 1, ... in order and the
 * names in sorted order; tools that read TSV with '#' comments skip them.
 */
#ifndef MGPU_DATA_MANIFEST_H
#define MGPU_DATA_MANIFEST_H

#include <stddef.h> /* size_t */
#include <stdint.h> /* uint64_t */

#include <stdio.h>  /* FILE */

#include "core/sha256.h" /* MGPU_SHA256_HEX */
#include "core/table.h"  /* struct mgpu_table */
#include "data/samples.h" /* struct mgpu_samples */
#include "data/split.h"   /* MGPU_NSPLITS */

/* The columns of the header and of every line, in order. */
#define MGPU_MANIFEST_NCOLS 5
extern const char *const mgpu_manifest_cols[MGPU_MANIFEST_NCOLS];

struct mgpu_manifest_entry {
	int split;                  /* MGPU_SPLIT_* */
	char path[4096];            /* resolved against the manifest's directory */
	uint64_t samples, nbytes;
	char sha256[MGPU_SHA256_HEX];
};

struct mgpu_manifest {
	size_t n;
	struct mgpu_manifest_entry *e;  /* malloc'ed */
	char **names;                   /* class names, or NULL */
	int nnames;
};

/* Parse text; name labels messages, dir ("" for none) resolves paths. */
int mgpu_manifest_parse(const char *text, size_t len, const char *name, const char *dir,
			struct mgpu_manifest *m);
/* Read and parse a manifest file. */
int mgpu_manifest_load(const char *path, struct mgpu_manifest *m);
void mgpu_manifest_free(struct mgpu_manifest *m);

/*
 * The verified reader: read the shard of entry e, APPENDING its samples to
 * out, and check it against e: its size on disk, the sha256 of the bytes
 * read and its sample count. The error names the shard and says what
 * differs ("'s.tar': sha256 differs from the manifest's ...").
 */
int mgpu_manifest_read_shard(const struct mgpu_manifest_entry *e, struct mgpu_samples *out);
/* Every shard of m, each into split[its split], each checked as above;
 * every split gets a copy of m's class names. */
int mgpu_manifest_read(const struct mgpu_manifest *m, struct mgpu_samples split[MGPU_NSPLITS]);

/*
 * Writing: rows go to fp in format (enum mgpu_format), the header before
 * the first row. TSV is the manifest the readers take; JSON Lines carry the
 * same fields (the path as a JSON string); Markdown shows them to people
 * (through core/table.h, so a path there is cut at its cell size). path is
 * written whole, as the readers will resolve it; a path a TSV line cannot
 * hold (a control character: tab, line end) or one longer than the
 * readers' is refused (MGPU_EINVAL), never written altered.
 */
struct mgpu_manifest_writer {
	FILE *fp;
	int format;
	int rows;               /* rows written so far */
	int header_done;        /* TSV: the header line is out */
	struct mgpu_table t;    /* Markdown */
};

int mgpu_manifest_writer_init(struct mgpu_manifest_writer *w, FILE *fp, int format);
/* One shard's line; fails when fp does (MGPU_ECLOSED: its reader went away). */
int mgpu_manifest_write(struct mgpu_manifest_writer *w, int split, const char *path,
			uint64_t samples, uint64_t nbytes, const char *sha_hex);
/* The class names, before the first shard's line: "#class" lines in TSV,
 * {"class":K,"name":...} records in JSON Lines; Markdown shows none. */
int mgpu_manifest_write_classes(struct mgpu_manifest_writer *w, char *const *names, int n);

#endif
