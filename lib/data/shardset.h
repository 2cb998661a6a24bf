/*
 * shardset.h - putting a directory of shards in place as a whole.
 *
 * mgpu-shard writes a shard set (its tar shards, and its manifest when that
 * lives beside them) into a temporary directory "DIR.tmp.PID" beside the
 * final DIR, then puts it in place with one rename: a reader of DIR sees the
 * old set or the new one, never a mix, and a failed or killed run leaves at
 * most its temporary, which the next run removes (core/io.h sweep).
 *
 * DIR must be a directory of its own: absent, empty, or holding one shard
 * set and nothing else (shards SPLIT-NNNNNN.tar, manifests, temporaries,
 * the tokenizer of --bpe).
 *
 *   begin   inspect DIR (other files: an error naming one), remove the
 *           temporaries of dead runs beside it, create missing parents and
 *           the temporary directory w->tmp, where the caller writes
 *   commit  DIR already holds the same files, byte for byte: the temporary
 *           goes and *same = 1 (an identical rerun changes nothing); DIR
 *           holds another set: an error naming DIR and --force, unless
 *           force, which swaps the new set in with one atomic exchange
 *           (renameat2 RENAME_EXCHANGE) and removes the old one; else a
 *           rename puts the set in place
 *   abort   remove the temporary and the parents begin created; safe after
 *           a failed begin or commit, and twice
 */
#ifndef MGPU_DATA_SHARDSET_H
#define MGPU_DATA_SHARDSET_H

#include <stddef.h> /* size_t */

enum { MGPU_SHARDSET_ABSENT, MGPU_SHARDSET_EMPTY, MGPU_SHARDSET_HELD };

struct mgpu_shardset {
	char dir[4096];       /* the final directory */
	char tmp[4096 + 32];  /* dir.tmp.PID, or "" when there is none */
	char parent[4096];    /* dir's parent */
	size_t made;          /* prefix length of parent that begin created (0: none) */
	int had;              /* what dir held at begin: MGPU_SHARDSET_* */
};

/* Is name a member of a shard set: a shard, a temporary? (Manifests are
 * told by their first bytes, in the directory.) */
int mgpu_shardset_is_shard(const char *name);
int mgpu_shardset_begin(struct mgpu_shardset *w, const char *dir);
int mgpu_shardset_commit(struct mgpu_shardset *w, int force, int *same);
void mgpu_shardset_abort(struct mgpu_shardset *w);

#endif
