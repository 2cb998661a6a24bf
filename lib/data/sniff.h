/*
 * sniff.h - what a data path or stream holds, told by looking at it: the
 * one place lib/data tells its inputs apart by content (mgpu-train's
 * --data, mgpu-bench data, mgpu-cache's inputs, mgpu-shard's shard
 * directories all ask here).
 *
 * A file is a cache when it starts with the cache magic, a shard manifest
 * when it starts with the manifest's first column and a tab (a wrong
 * header then gets the parser's error), and else an archive: libarchive
 * reads it or says what is wrong. A directory is a cache when it holds
 * MGPU_CACHE_FILE, a manifest when it holds manifest.tsv (in that order),
 * an IDX directory when it holds train-images-idx3-ubyte[.gz], a UEA/UCR
 * directory when it holds one NAME_TRAIN.ts (*file: that file), else it
 * holds none of them. Nothing is read beyond MGPU_SNIFF_NBYTES of a file.
 */
#ifndef MGPU_DATA_SNIFF_H
#define MGPU_DATA_SNIFF_H

#include <stddef.h> /* size_t */

/* Bytes of a file's start that decide its kind. */
#define MGPU_SNIFF_NBYTES 8
/* The manifest a directory of shards holds. */
#define MGPU_SNIFF_MANIFEST_FILE "manifest.tsv"

enum mgpu_sniff_kind {
	MGPU_SNIFF_NONE = 0,     /* a directory holding none of the kinds */
	MGPU_SNIFF_MISSING,      /* no such path */
	MGPU_SNIFF_ARCHIVE,      /* any other file: a WebDataset archive, maybe */
	MGPU_SNIFF_MANIFEST,
	MGPU_SNIFF_CACHE,
	MGPU_SNIFF_IDX_DIR,
	MGPU_SNIFF_TS_DIR,       /* a UEA/UCR NAME_TRAIN.ts (+ NAME_TEST.ts) directory */
};

/* The kind the first len bytes of a file or stream say (ARCHIVE, MANIFEST
 * or CACHE). */
int mgpu_sniff_head(const void *head, size_t len);
/* The kind of the file at path by its first bytes; an unreadable file is
 * an archive (whose reader then says why). */
int mgpu_sniff_file(const char *path);
/*
 * The kind of path, a file or a directory; *file (cap bytes) gets the file
 * to open: path itself, or the cache or manifest inside the directory.
 * Fails (MGPU_EIO, naming path) only when path cannot be looked at for
 * another reason than not existing.
 */
int mgpu_sniff_path(const char *path, char *file, size_t cap);

#endif
