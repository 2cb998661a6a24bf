/*
 * manifest.c - reading shard manifests (see manifest.h). Writing is the
 * tool's job (a core/table.h table with the same columns).
 */
#include "data/manifest.h"

#include <errno.h>  /* errno */
#include <libgen.h> /* dirname */
#include <stdio.h>  /* snprintf */
#include <stdlib.h> /* realloc, free, strtoull */
#include <string.h> /* strncmp, memchr */
#include <sys/stat.h> /* stat */

#include "core/err.h"   /* mgpu_err */
#include "core/io.h"    /* mgpu_read_file */
#include "data/split.h" /* mgpu_split_from_name */

int mgpu_manifest_sniff(const void *text, size_t len)
{
	/* the first column name is enough: a wrong header then gets its error */
	return len >= 6 && memcmp(text, "split\t", 6) == 0;
}

static int u64_field(const char *s, uint64_t *v)
{
	char *end;

	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	*v = strtoull(s, &end, 10);
	return *end || errno ? -1 : 0;
}

static int is_hex64(const char *s)
{
	return strlen(s) == 64 && strspn(s, "0123456789abcdef") == 64;
}

/* Split line (NUL-terminated, modified) into exactly 5 fields. */
static int fields(char *line, char **f)
{
	int n = 0;
	char *p = line, *tab;

	while (n < 5) {
		f[n++] = p;
		tab = strchr(p, '\t');
		if (!tab)
			break;
		*tab = '\0';
		p = tab + 1;
	}
	return n == 5 && !strchr(f[4], '\t') ? 0 : -1;
}

static int entry(char *line, const char *name, long ln, const char *dir,
		 struct mgpu_manifest_entry *e)
{
	char *f[5];
	int n;

	if (fields(line, f) < 0)
		return mgpu_err(MGPU_EFORMAT, "'%s': line %ld: want 5 tab-separated fields",
				name, ln);
	e->split = mgpu_split_from_name(f[0]);
	if (e->split < 0)
		return mgpu_err(MGPU_EFORMAT, "'%s': line %ld: split '%s' is not train, val or "
				"test", name, ln, f[0]);
	if (!f[1][0])
		return mgpu_err(MGPU_EFORMAT, "'%s': line %ld: empty path", name, ln);
	if (u64_field(f[2], &e->samples) < 0 || u64_field(f[3], &e->nbytes) < 0)
		return mgpu_err(MGPU_EFORMAT, "'%s': line %ld: samples and bytes must be "
				"decimal integers", name, ln);
	if (!is_hex64(f[4]))
		return mgpu_err(MGPU_EFORMAT, "'%s': line %ld: sha256 '%s' is not 64 hex "
				"digits", name, ln, f[4]);
	memcpy(e->sha256, f[4], MGPU_SHA256_HEX);
	n = f[1][0] == '/' || !dir[0] ?
		snprintf(e->path, sizeof e->path, "%s", f[1]) :
		snprintf(e->path, sizeof e->path, "%s/%s", dir, f[1]);
	if (n < 0 || (size_t)n >= sizeof e->path)
		return mgpu_err(MGPU_EFORMAT, "'%s': line %ld: path too long", name, ln);
	return 0;
}

/* The last entry must not name a shard an earlier line named. */
static int no_repeat(const struct mgpu_manifest *m, const char *name, long ln)
{
	const struct mgpu_manifest_entry *e = &m->e[m->n - 1];
	size_t i;

	for (i = 0; i + 1 < m->n; i++)
		if (strcmp(m->e[i].path, e->path) == 0)
			return mgpu_err(MGPU_EFORMAT, "'%s': line %ld: shard '%s' is listed "
					"twice", name, ln, e->path);
	return 0;
}

static int add(struct mgpu_manifest *m, const char *name)
{
	struct mgpu_manifest_entry *ne;

	if ((m->n & (m->n - 1)) == 0) {
		ne = realloc(m->e, (m->n ? m->n * 2 : 1) * sizeof *ne);
		if (!ne)
			return mgpu_err(MGPU_ENOMEM, "'%s': out of memory", name);
		m->e = ne;
	}
	m->n++;
	return 0;
}

int mgpu_manifest_parse(const char *text, size_t len, const char *name, const char *dir,
			struct mgpu_manifest *m)
{
	char line[8192];
	const char *p = text, *end = text + len, *nl;
	long ln = 0;
	int rc = 0;

	memset(m, 0, sizeof *m);
	for (; p < end; p = nl + 1) {
		size_t n;
		nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl)
			nl = end;
		n = (size_t)(nl - p);
		ln++;
		if (n >= sizeof line) {
			rc = mgpu_err(MGPU_EFORMAT, "'%s': line %ld too long", name, ln);
			goto out;
		}
		memcpy(line, p, n);
		line[n] = '\0';
		if (n && line[n - 1] == '\r')
			line[--n] = '\0';
		if (ln == 1) {
			if (strcmp(line, MGPU_MANIFEST_HEADER) != 0)
				rc = mgpu_err(MGPU_EFORMAT, "'%s': line 1: not a shard manifest "
					      "(want the header '%s')", name,
					      "split, path, samples, bytes, sha256");
			if (rc < 0)
				goto out;
			continue;
		}
		if (n == 0)
			continue;
		MGPU_CHECK(add(m, name));
		MGPU_CHECK(entry(line, name, ln, dir, &m->e[m->n - 1]));
		MGPU_CHECK(no_repeat(m, name, ln));
	}
	if (ln == 0)
		rc = mgpu_err(MGPU_EFORMAT, "'%s': empty manifest", name);
out:
	if (rc < 0)
		mgpu_manifest_free(m);
	return rc;
}

int mgpu_manifest_check_shard(const struct mgpu_manifest_entry *e, const char *sha_hex,
			      uint64_t nsamples)
{
	struct stat st;

	if (stat(e->path, &st) != 0)
		return mgpu_err_errno(MGPU_EIO, "'%s': cannot open", e->path);
	if ((uint64_t)st.st_size != e->nbytes)
		return mgpu_err(MGPU_EFORMAT, "'%s': %llu bytes, the manifest says %llu",
				e->path, (unsigned long long)st.st_size,
				(unsigned long long)e->nbytes);
	if (strcmp(sha_hex, e->sha256) != 0)
		return mgpu_err(MGPU_EFORMAT, "'%s': sha256 differs from the manifest's (shard "
				"changed or corrupt)", e->path);
	if (nsamples != e->samples)
		return mgpu_err(MGPU_EFORMAT, "'%s': %llu samples, the manifest says %llu",
				e->path, (unsigned long long)nsamples,
				(unsigned long long)e->samples);
	return 0;
}

int mgpu_manifest_load(const char *path, struct mgpu_manifest *m)
{
	unsigned char *buf;
	char dir[4096];
	size_t len;
	int rc;

	memset(m, 0, sizeof *m);
	MGPU_TRY(mgpu_read_file(path, &buf, &len));
	snprintf(dir, sizeof dir, "%s", path);
	rc = mgpu_manifest_parse((const char *)buf, len, path, dirname(dir), m);
	free(buf);
	return rc;
}

void mgpu_manifest_free(struct mgpu_manifest *m)
{
	free(m->e);
	memset(m, 0, sizeof *m);
}
