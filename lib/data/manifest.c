/*
 * manifest.c - writing and reading shard manifests (see manifest.h): both
 * sides take the columns from mgpu_manifest_cols.
 */
#include "data/manifest.h"

#include <errno.h>  /* errno, EPIPE */
#include <libgen.h> /* dirname */
#include <stdio.h>  /* snprintf */
#include <stdlib.h> /* realloc, free, strtoull */
#include <string.h> /* strncmp, memchr */
#include <sys/stat.h> /* stat */

#include "core/err.h"   /* mgpu_err */
#include "core/io.h"    /* mgpu_read_file */
#include "core/json.h"  /* mgpu_json_escape */
#include "data/split.h" /* mgpu_split_from_name, mgpu_split_name */
#include "data/wds.h"   /* mgpu_wds_read */

const char *const mgpu_manifest_cols[MGPU_MANIFEST_NCOLS] = {
	"split", "path", "samples", "bytes", "sha256",
};

/* The column names joined by sep: the header line, or a list for messages. */
static const char *cols_joined(const char *sep, char *buf, size_t cap)
{
	size_t o = 0;
	int i;

	buf[0] = '\0';
	for (i = 0; i < MGPU_MANIFEST_NCOLS && o < cap; i++)
		o += (size_t)snprintf(buf + o, cap - o, "%s%s", i ? sep : "",
				      mgpu_manifest_cols[i]);
	return buf;
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

/* "#class<TAB>K<TAB>NAME": class K's name, K the next one. */
static int class_line(struct mgpu_manifest *m, char *line, const char *name, long ln)
{
	char *f[3], *tab, **nv;
	uint64_t k;
	int i;

	f[0] = line;
	for (i = 1; i < 3; i++) {
		if (!(tab = strchr(f[i - 1], '\t')))
			break;
		*tab = '\0';
		f[i] = tab + 1;
	}
	if (i < 3 || strcmp(f[0], "#class") != 0 || strchr(f[2], '\t'))
		return mgpu_err(MGPU_EFORMAT, "'%s': line %ld: a '#' line must be "
				"'#class<TAB>K<TAB>NAME'", name, ln);
	if (m->n)
		return mgpu_err(MGPU_EFORMAT, "'%s': line %ld: class names come before the "
				"shards", name, ln);
	if (u64_field(f[1], &k) < 0 || k != (uint64_t)m->nnames ||
	    m->nnames >= MGPU_SAMPLES_MAX_CLASSES)
		return mgpu_err(MGPU_EFORMAT, "'%s': line %ld: class '%s' out of order (want "
				"%d)", name, ln, f[1], m->nnames);
	nv = realloc(m->names, (size_t)(m->nnames + 1) * sizeof *nv);
	if (!nv)
		return mgpu_err(MGPU_ENOMEM, "'%s': out of memory", name);
	m->names = nv;
	if (!(m->names[m->nnames] = strdup(f[2])))
		return mgpu_err(MGPU_ENOMEM, "'%s': out of memory", name);
	m->nnames++;
	return 0;
}

int mgpu_manifest_parse(const char *text, size_t len, const char *name, const char *dir,
			struct mgpu_manifest *m)
{
	char line[8192], want[64];
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
		if (memchr(p, '\0', n)) { /* the string functions below would stop there */
			rc = mgpu_err(MGPU_EFORMAT, "'%s': line %ld: a NUL byte", name, ln);
			goto out;
		}
		memcpy(line, p, n);
		line[n] = '\0';
		if (n && line[n - 1] == '\r')
			line[--n] = '\0';
		if (ln == 1) {
			if (strcmp(line, cols_joined("\t", want, sizeof want)) != 0)
				rc = mgpu_err(MGPU_EFORMAT, "'%s': line 1: not a shard manifest "
					      "(want the header '%s')", name,
					      cols_joined(", ", want, sizeof want));
			if (rc < 0)
				goto out;
			continue;
		}
		if (n == 0)
			continue;
		if (line[0] == '#') {
			MGPU_CHECK(class_line(m, line, name, ln));
			continue;
		}
		MGPU_CHECK(add(m, name));
		MGPU_CHECK(entry(line, name, ln, dir, &m->e[m->n - 1]));
		MGPU_CHECK(no_repeat(m, name, ln));
	}
	if (ln == 0)
		rc = mgpu_err(MGPU_EFORMAT, "'%s': empty manifest", name);
	else if (m->names)
		rc = mgpu_class_names_check(m->names, m->nnames, name);
out:
	if (rc < 0)
		mgpu_manifest_free(m);
	return rc;
}

/* A shard read for entry e against it: size on disk, sha256, samples. */
static int check_shard(const struct mgpu_manifest_entry *e, const char *sha_hex,
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

int mgpu_manifest_read_shard(const struct mgpu_manifest_entry *e, struct mgpu_samples *out)
{
	char sha[MGPU_SHA256_HEX];
	size_t before = out->n;

	MGPU_TRY(mgpu_wds_read(e->path, out, sha));
	return check_shard(e, sha, out->n - before);
}

int mgpu_manifest_read(const struct mgpu_manifest *m, struct mgpu_samples split[MGPU_NSPLITS])
{
	size_t i;

	int s;

	for (i = 0; i < m->n; i++)
		MGPU_TRY(mgpu_manifest_read_shard(&m->e[i], &split[m->e[i].split]));
	for (s = 0; s < MGPU_NSPLITS && m->names; s++) {
		mgpu_class_names_free(split[s].names, split[s].nnames);
		MGPU_TRY(mgpu_class_names_copy(&split[s].names, &split[s].nnames, m->names,
					       m->nnames));
	}
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
	mgpu_class_names_free(m->names, m->nnames);
	memset(m, 0, sizeof *m);
}

int mgpu_manifest_writer_init(struct mgpu_manifest_writer *w, FILE *fp, int format)
{
	memset(w, 0, sizeof *w);
	w->fp = fp;
	w->format = format;
	return mgpu_table_init(&w->t, fp, format, mgpu_manifest_cols, MGPU_MANIFEST_NCOLS);
}

/* A path the readers get back as written: no control character (a tab or
 * line end would cut the line), and one their entries can hold. */
static int path_ok(const char *path)
{
	const unsigned char *p = (const unsigned char *)path;

	for (; *p; p++)
		if (*p < 0x20 || *p == 0x7f)
			return mgpu_err(MGPU_EINVAL, "shard path '%s': a control character "
					"(tab, line end) cannot go in a manifest", path);
	if ((size_t)(p - (const unsigned char *)path) >=
	    sizeof ((struct mgpu_manifest_entry *)0)->path)
		return mgpu_err(MGPU_EINVAL, "shard path '%.64s...': too long for a manifest",
				path);
	return 0;
}

static int markdown_row(struct mgpu_manifest_writer *w, const char *split, const char *path,
			uint64_t samples, uint64_t nbytes, const char *sha_hex)
{
	const char *const *c = mgpu_manifest_cols;

	mgpu_table_str(&w->t, c[0], split);
	mgpu_table_str(&w->t, c[1], path);
	mgpu_table_int(&w->t, c[2], (int64_t)samples);
	mgpu_table_int(&w->t, c[3], (int64_t)nbytes);
	mgpu_table_str(&w->t, c[4], sha_hex);
	return mgpu_table_emit(&w->t);
}

static void json_row(FILE *fp, const char *split, const char *path, uint64_t samples,
		     uint64_t nbytes, const char *sha_hex)
{
	const char *const *c = mgpu_manifest_cols;

	fprintf(fp, "{\"%s\":\"%s\",\"%s\":", c[0], split, c[1]);
	mgpu_json_escape(fp, path);
	fprintf(fp, ",\"%s\":%llu,\"%s\":%llu,\"%s\":\"%s\"}\n", c[2],
		(unsigned long long)samples, c[3], (unsigned long long)nbytes, c[4], sha_hex);
}

int mgpu_manifest_write(struct mgpu_manifest_writer *w, int split, const char *path,
			uint64_t samples, uint64_t nbytes, const char *sha_hex)
{
	const char *s = mgpu_split_name(split);
	char head[64];

	MGPU_TRY(path_ok(path));
	if (w->format == MGPU_FMT_MARKDOWN)
		return markdown_row(w, s, path, samples, nbytes, sha_hex);
	if (w->format == MGPU_FMT_JSON) {
		json_row(w->fp, s, path, samples, nbytes, sha_hex);
	} else {
		if (!w->header_done)
			fprintf(w->fp, "%s\n", cols_joined("\t", head, sizeof head));
		w->header_done = 1;
		fprintf(w->fp, "%s\t%s\t%llu\t%llu\t%s\n", s, path,
			(unsigned long long)samples, (unsigned long long)nbytes, sha_hex);
	}
	w->rows++;
	if (fflush(w->fp) != 0 || ferror(w->fp))
		return mgpu_err_errno(errno == EPIPE ? MGPU_ECLOSED : MGPU_EIO,
				      "cannot write output");
	return 0;
}

int mgpu_manifest_write_classes(struct mgpu_manifest_writer *w, char *const *names, int n)
{
	char head[64];
	int k;

	if (!names || w->format == MGPU_FMT_MARKDOWN)
		return 0;
	MGPU_TRY(mgpu_class_names_check(names, n, "class names"));
	if (w->format == MGPU_FMT_TSV && !w->header_done) {
		fprintf(w->fp, "%s\n", cols_joined("\t", head, sizeof head));
		w->header_done = 1;
	}
	for (k = 0; k < n; k++) {
		if (w->format == MGPU_FMT_JSON) {
			fprintf(w->fp, "{\"class\":%d,\"name\":", k);
			mgpu_json_escape(w->fp, names[k]);
			fputs("}\n", w->fp);
		} else {
			fprintf(w->fp, "#class\t%d\t%s\n", k, names[k]);
		}
	}
	if (fflush(w->fp) != 0 || ferror(w->fp))
		return mgpu_err_errno(errno == EPIPE ? MGPU_ECLOSED : MGPU_EIO,
				      "cannot write output");
	return 0;
}
