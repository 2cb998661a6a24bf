/*
 * fuzz_manifest.c - libFuzzer harness for the shard manifest: any text
 * parses or gets an error naming "fuzz.tsv"; what parses is written back
 * by the manifest writer (unless it refuses a path) and parses again to
 * the same entries, so reader and writer agree on the format.
 */
#include <stddef.h> /* size_t */
#include <stdint.h> /* uint8_t */
#include <stdio.h>  /* open_memstream, fclose */
#include <stdlib.h> /* abort, free */
#include <string.h> /* strstr, strcmp */

#include "core/err.h"      /* mgpu_errmsg, MGPU_EINVAL */
#include "core/table.h"    /* MGPU_FMT_TSV */
#include "data/manifest.h" /* mgpu_manifest_* */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int same(const struct mgpu_manifest_entry *a, const struct mgpu_manifest_entry *b)
{
	return a->split == b->split && a->samples == b->samples && a->nbytes == b->nbytes &&
	       strcmp(a->path, b->path) == 0 && strcmp(a->sha256, b->sha256) == 0;
}

/* Write m back and parse it again: the same entries, or a refused path. */
static void round_trip(const struct mgpu_manifest *m)
{
	struct mgpu_manifest_writer w;
	struct mgpu_manifest again;
	const struct mgpu_manifest_entry *e;
	char *buf = NULL;
	size_t len = 0, i;
	FILE *fp = open_memstream(&buf, &len);
	int rc = 0;

	if (m->n == 0) { /* the writer writes the header with its first row */
		if (fp)
			fclose(fp);
		free(buf);
		return;
	}
	if (!fp || mgpu_manifest_writer_init(&w, fp, MGPU_FMT_TSV) < 0)
		abort();
	for (i = 0; i < m->n && rc == 0; i++) {
		e = &m->e[i];
		rc = mgpu_manifest_write(&w, e->split, e->path, e->samples, e->nbytes, e->sha256);
		if (rc < 0 && rc != MGPU_EINVAL)
			abort();
	}
	fclose(fp);
	if (rc == 0) {
		if (mgpu_manifest_parse(buf, len, "again", "", &again) < 0 || again.n != m->n)
			abort();
		for (i = 0; i < m->n; i++)
			if (!same(&m->e[i], &again.e[i]))
				abort();
		mgpu_manifest_free(&again);
	}
	free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mgpu_manifest m;

	if (mgpu_manifest_parse((const char *)data, size, "fuzz.tsv", "", &m) < 0) {
		if (!strstr(mgpu_errmsg(), "fuzz.tsv") || m.e || m.n)
			abort();
		return 0;
	}
	round_trip(&m);
	mgpu_manifest_free(&m);
	return 0;
}
