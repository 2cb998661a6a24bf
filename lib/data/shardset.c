/*
 * shardset.c - a shard directory written beside and renamed into place
 * (see shardset.h).
 */
#include "data/shardset.h"

#include <dirent.h>   /* opendir, readdir */
#include <errno.h>    /* errno, EINVAL, ENOSYS */
#include <fcntl.h>    /* open */
#include <libgen.h>   /* dirname, basename */
#include <stdio.h>    /* snprintf, rename, renameat2 */
#include <stdlib.h>   /* qsort, free */
#include <string.h>   /* memcmp, strcmp, strlen, strspn */
#include <sys/stat.h> /* stat, mkdir */
#include <unistd.h>   /* getpid, rmdir */

#include "core/err.h"      /* mgpu_err */
#include "core/io.h"       /* mgpu_tmp_*, mgpu_rmdir_flat, mgpu_same_bytes */
#include "data/bpe.h"      /* MGPU_BPE_FILE */
#include "data/sniff.h"    /* mgpu_sniff_file */

int mgpu_shardset_is_shard(const char *name)
{
	static const char *const split[] = { "train-", "val-", "test-" };
	size_t i, n;

	if (strcmp(name, MGPU_BPE_FILE) == 0) /* mgpu-shard --bpe's tokenizer */
		return 1;
	for (i = 0; i < 3; i++) {
		n = strlen(split[i]);
		if (strncmp(name, split[i], n) == 0 && strspn(name + n, "0123456789") == 6 &&
		    strcmp(name + n + 6, ".tar") == 0)
			return 1;
	}
	return 0;
}

/* Does dir/name start like a manifest, in any --format mgpu-shard writes
 * it in (TSV, JSON Lines, Markdown)? */
static int is_manifest(const char *dir, const char *name)
{
	static const char json[] = "{\"split\":", md[] = "| split |";
	char path[4200], head[16];
	FILE *fp;
	size_t n = 0;

	snprintf(path, sizeof path, "%s/%s", dir, name);
	if (mgpu_sniff_file(path) == MGPU_SNIFF_MANIFEST)
		return 1;
	/* --json and --format markdown: no reader takes them, yet they are
	 * the set's own manifest */
	fp = fopen(path, "rb");
	if (fp) {
		n = fread(head, 1, sizeof head, fp);
		fclose(fp);
	}
	return (n >= sizeof json - 1 && memcmp(head, json, sizeof json - 1) == 0) ||
	       (n >= sizeof md - 1 && memcmp(head, md, sizeof md - 1) == 0);
}

static int by_name(const void *a, const void *b)
{
	return strcmp(a, b); /* each element is a NUL-terminated char[256] */
}

/* The files of a set directory, sorted, temporaries left out: *names is a
 * malloc'ed array of 256-byte names. A name that belongs to no set is an
 * error naming it. */
static int list_set(const char *dir, char (**names)[256], size_t *n)
{
	char (*v)[256] = NULL, (*nv)[256];
	struct dirent *de;
	DIR *d = opendir(dir);
	size_t cap = 0;
	int rc = 0;

	*n = 0;
	if (!d)
		return mgpu_err_errno(MGPU_EIO, "'%s': cannot open directory", dir);
	while (rc == 0 && (de = readdir(d))) {
		const char *s = de->d_name;
		if (!strcmp(s, ".") || !strcmp(s, "..") || mgpu_tmp_pid(s, NULL))
			continue;
		if (!mgpu_shardset_is_shard(s) && !is_manifest(dir, s)) {
			rc = mgpu_err(MGPU_EINVAL, "'%s': holds '%s', which is no part of a shard "
				      "set; shards need a directory of their own (-d DIR)", dir, s);
			break;
		}
		if (*n == cap) {
			cap = cap ? 2 * cap : 64;
			nv = realloc(v, cap * sizeof *v);
			if (!nv) {
				rc = mgpu_err(MGPU_ENOMEM, "out of memory");
				break;
			}
			v = nv;
		}
		snprintf(v[(*n)++], sizeof v[0], "%s", s);
	}
	closedir(d);
	if (rc == 0 && *n)
		qsort(v, *n, sizeof *v, by_name);
	if (rc < 0) {
		free(v);
		v = NULL;
		*n = 0;
	}
	*names = v;
	return rc;
}

/* What dir holds now; other files are an error. */
static int inspect(struct mgpu_shardset *w)
{
	char (*names)[256];
	struct stat st;
	size_t n;

	if (stat(w->dir, &st) != 0) {
		w->had = MGPU_SHARDSET_ABSENT;
		return 0;
	}
	if (!S_ISDIR(st.st_mode))
		return mgpu_err(MGPU_EINVAL, "'%s': not a directory", w->dir);
	MGPU_TRY(list_set(w->dir, &names, &n));
	free(names);
	w->had = n ? MGPU_SHARDSET_HELD : MGPU_SHARDSET_EMPTY;
	return 0;
}

int mgpu_shardset_begin(struct mgpu_shardset *w, const char *dir)
{
	char buf[4096], stem[4096];
	size_t len = strlen(dir);
	int rc;

	memset(w, 0, sizeof *w);
	while (len > 1 && dir[len - 1] == '/')
		len--;
	if (len == 0 || len >= sizeof w->dir - 1)
		return mgpu_err(MGPU_EINVAL, "'%s': bad directory name", dir);
	memcpy(w->dir, dir, len);
	snprintf(buf, sizeof buf, "%s", w->dir);
	snprintf(stem, sizeof stem, "%s", basename(buf));
	if (!strcmp(stem, ".") || !strcmp(stem, "..") || !strcmp(stem, "/"))
		return mgpu_err(MGPU_EINVAL, "'%s': shards need a directory of their own "
				"(-d DIR)", dir);
	snprintf(buf, sizeof buf, "%s", w->dir);
	snprintf(w->parent, sizeof w->parent, "%s", dirname(buf));
	MGPU_TRY(inspect(w));
	if (w->had != MGPU_SHARDSET_ABSENT)
		mgpu_tmp_sweep(w->dir, NULL); /* what older, killed runs left inside */
	rc = mgpu_mkdirs_made(w->parent, &w->made);
	if (rc == 0) {
		mgpu_tmp_sweep(w->parent, stem);
		snprintf(w->tmp, sizeof w->tmp, "%s.tmp.%ld", w->dir, (long)getpid());
		if (mkdir(w->tmp, 0777) != 0)
			rc = mgpu_err_errno(MGPU_EIO, "'%s': cannot create directory", w->tmp);
	}
	if (rc < 0) {
		w->tmp[0] = '\0';
		mgpu_shardset_abort(w); /* the parents it made */
	}
	return rc;
}

/* Do dir and the temporary hold the same files, byte for byte? */
static int identical(const struct mgpu_shardset *w)
{
	char (*a)[256] = NULL, (*b)[256] = NULL, pa[4200], pb[4200];
	size_t na, nb, i;
	int same;

	same = list_set(w->dir, &a, &na);
	if (same == 0)
		same = list_set(w->tmp, &b, &nb);
	if (same == 0)
		same = na == nb;
	for (i = 0; same == 1 && i < na; i++) {
		snprintf(pa, sizeof pa, "%s/%s", w->dir, a[i]);
		snprintf(pb, sizeof pb, "%s/%s", w->tmp, b[i]);
		same = strcmp(a[i], b[i]) == 0 ? mgpu_same_bytes(pa, pb) : 0;
	}
	free(a);
	free(b);
	return same;
}

/* Swap the temporary and dir in one step where the file system can; else
 * move dir aside first (a moment without dir). The old set ends in tmp. */
static int exchange(struct mgpu_shardset *w)
{
	char old[sizeof w->tmp];

	if (renameat2(AT_FDCWD, w->tmp, AT_FDCWD, w->dir, RENAME_EXCHANGE) == 0)
		return 0;
	if (errno != EINVAL && errno != ENOSYS)
		return mgpu_err_errno(MGPU_EIO, "'%s': cannot replace", w->dir);
	snprintf(old, sizeof old, "%s.old.%ld", w->dir, (long)getpid());
	if (rename(w->dir, old) != 0)
		return mgpu_err_errno(MGPU_EIO, "'%s': cannot move aside", w->dir);
	if (rename(w->tmp, w->dir) != 0) {
		rename(old, w->dir);
		return mgpu_err_errno(MGPU_EIO, "'%s': cannot replace", w->dir);
	}
	snprintf(w->tmp, sizeof w->tmp, "%s", old);
	return 0;
}

int mgpu_shardset_commit(struct mgpu_shardset *w, int force, int *same)
{
	*same = 0;
	MGPU_TRY(mgpu_fsync_dir(w->tmp));
	MGPU_TRY(inspect(w)); /* another run may have put a set there meanwhile */
	if (w->had == MGPU_SHARDSET_HELD) {
		*same = identical(w);
		MGPU_TRY(*same);
		if (*same) {
			mgpu_rmdir_flat(w->tmp);
			w->tmp[0] = '\0';
			return 0;
		}
		if (!force)
			return mgpu_err(MGPU_EINVAL, "'%s': holds another shard set; --force "
					"replaces it", w->dir);
		MGPU_TRY(exchange(w));
		mgpu_rmdir_flat(w->tmp); /* the old set */
	} else if (rename(w->tmp, w->dir) != 0) {
		return mgpu_err_errno(MGPU_EIO, "'%s': cannot put the shards in place", w->dir);
	}
	w->tmp[0] = '\0';
	w->made = 0; /* the parents now hold the set */
	return mgpu_fsync_dir(w->parent);
}

void mgpu_shardset_abort(struct mgpu_shardset *w)
{
	char buf[4096], why[1024];

	snprintf(why, sizeof why, "%s", mgpu_errmsg()); /* the failure to report */
	if (w->tmp[0])
		mgpu_rmdir_flat(w->tmp);
	w->tmp[0] = '\0';
	/* the parents begin made, deepest first, up to the shallowest it made */
	snprintf(buf, sizeof buf, "%s", w->parent);
	while (w->made && strlen(buf) >= w->made && rmdir(buf) == 0)
		snprintf(buf, sizeof buf, "%s", dirname(buf));
	w->made = 0;
	if (why[0])
		mgpu_err(MGPU_EIO, "%s", why);
}
