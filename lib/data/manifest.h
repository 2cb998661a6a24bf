/*
 * manifest.h - the shard manifest of mgpu-shard: TSV with the header
 * "split<TAB>path<TAB>samples<TAB>bytes<TAB>sha256" and one line per shard.
 *
 * split is train, val or test; path is the shard file, relative to the
 * manifest's directory (relative to the working directory when the manifest
 * is read from standard input); samples and bytes are decimal; sha256 is 64
 * lower-case hex digits. Parsing is strict: every error names the manifest
 * and the line; a shard listed twice is an error too.
 */
#ifndef MGPU_DATA_MANIFEST_H
#define MGPU_DATA_MANIFEST_H

#include <stddef.h> /* size_t */
#include <stdint.h> /* uint64_t */

#include "core/sha256.h" /* MGPU_SHA256_HEX */

#define MGPU_MANIFEST_HEADER "split\tpath\tsamples\tbytes\tsha256"

struct mgpu_manifest_entry {
	int split;                  /* MGPU_SPLIT_* */
	char path[4096];            /* resolved against the manifest's directory */
	uint64_t samples, nbytes;
	char sha256[MGPU_SHA256_HEX];
};

struct mgpu_manifest {
	size_t n;
	struct mgpu_manifest_entry *e;  /* malloc'ed */
};

/* Does text start like a manifest ("split<TAB>")? */
int mgpu_manifest_sniff(const void *text, size_t len);
/* Parse text; name labels messages, dir ("" for none) resolves paths. */
int mgpu_manifest_parse(const char *text, size_t len, const char *name, const char *dir,
			struct mgpu_manifest *m);
/*
 * Check a shard read for entry e against it: size on disk (bytes), sha256
 * (sha_hex, of the bytes read) and sample count. The error names the shard
 * and says what differs.
 */
int mgpu_manifest_check_shard(const struct mgpu_manifest_entry *e, const char *sha_hex,
			      uint64_t nsamples);
/* Read and parse a manifest file. */
int mgpu_manifest_load(const char *path, struct mgpu_manifest *m);
void mgpu_manifest_free(struct mgpu_manifest *m);

#endif
