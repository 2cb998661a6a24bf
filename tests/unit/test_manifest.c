/*
 * test_manifest.c - unit tests of the shard manifest (data/manifest.h) and
 * of telling inputs apart (data/sniff.h): what the writer prints the parser
 * reads back field for field, in the header the format defines; JSON Lines
 * carry the same rows; every malformed manifest gets its error naming the
 * file and the line; the verified reader refuses a shard that differs
 * from its line; caches, manifests, archives and directories sniff as
 * what they are.
 */
#include <stdio.h>  /* open_memstream, fclose */
#include <stdlib.h> /* free */
#include <string.h> /* strcmp, strlen, strncmp */
#include <sys/stat.h> /* mkdir */
#include <unistd.h>   /* truncate */

#include "core/err.h"      /* mgpu_errmsg, MGPU_E* */
#include "core/table.h"    /* MGPU_FMT_* */
#include "data/cache.h"    /* MGPU_CACHE_MAGIC, MGPU_CACHE_FILE */
#include "data/manifest.h" /* mgpu_manifest_* */
#include "data/shard.h"    /* mgpu_shard_write */
#include "data/sniff.h"    /* mgpu_sniff_* */
#include "data/split.h"    /* MGPU_SPLIT_* */
#include "../t.h"          /* T_RUN, T_CHECK, T_OK, T_FAILS */
#include "../tmpdir.h"     /* tmpdir, tpath, t_tmpdir_make */

static const char sha_a[] = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
static const char sha_b[] = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

/* Two rows written in format; the text (malloc'ed) into *buf. */
static size_t write_two(int format, char **buf)
{
	struct mgpu_manifest_writer w;
	size_t len = 0;
	FILE *fp = open_memstream(buf, &len);

	T_OK(mgpu_manifest_writer_init(&w, fp, format));
	T_OK(mgpu_manifest_write(&w, MGPU_SPLIT_TRAIN, "train-000000.tar", 5, 10240, sha_a));
	T_OK(mgpu_manifest_write(&w, MGPU_SPLIT_VAL, "sub/val-000000.tar", 1, 20480, sha_b));
	fclose(fp);
	return len;
}

static void test_write_read(void)
{
	struct mgpu_manifest m;
	char *buf;
	size_t len = write_two(MGPU_FMT_TSV, &buf);

	T_CHECK(strncmp(buf, "split\tpath\tsamples\tbytes\tsha256\n", 32) == 0,
		"header: %.40s", buf);
	T_OK(mgpu_manifest_parse(buf, len, "m.tsv", "d", &m));
	T_CHECK(m.n == 2, "%zu entries", m.n);
	if (m.n == 2) {
		T_CHECK(m.e[0].split == MGPU_SPLIT_TRAIN && m.e[0].samples == 5 &&
			m.e[0].nbytes == 10240 && strcmp(m.e[0].sha256, sha_a) == 0 &&
			strcmp(m.e[0].path, "d/train-000000.tar") == 0, "row 1: %s", m.e[0].path);
		T_CHECK(m.e[1].split == MGPU_SPLIT_VAL && m.e[1].samples == 1 &&
			m.e[1].nbytes == 20480 && strcmp(m.e[1].sha256, sha_b) == 0 &&
			strcmp(m.e[1].path, "d/sub/val-000000.tar") == 0, "row 2: %s", m.e[1].path);
	}
	mgpu_manifest_free(&m);
	free(buf);
}

static void test_write_json(void)
{
	char *buf;

	write_two(MGPU_FMT_JSON, &buf);
	T_CHECK(strncmp(buf, "{\"split\":\"train\",\"path\":\"train-000000.tar\",\"samples\":5,"
			"\"bytes\":10240,\"sha256\":\"e3b0", 82) == 0, "json: %s", buf);
	free(buf);
}

/* A path of any length the readers take comes back whole (a table cell
 * would cut it); one a line cannot hold is refused, not altered. */
static void test_write_paths(void)
{
	struct mgpu_manifest_writer w;
	struct mgpu_manifest m;
	char path[600], *buf = NULL;
	size_t len = 0;
	FILE *fp = open_memstream(&buf, &len);

	memset(path, 'd', sizeof path - 1);
	path[sizeof path - 1] = '\0';
	memcpy(path + 100, "/\"quoted\" \\ a|b/", 17);
	T_OK(mgpu_manifest_writer_init(&w, fp, MGPU_FMT_TSV));
	T_OK(mgpu_manifest_write(&w, MGPU_SPLIT_TEST, path, 1, 2, sha_a));
	T_FAILS(mgpu_manifest_write(&w, MGPU_SPLIT_TRAIN, "a\tb.tar", 1, 2, sha_a),
		MGPU_EINVAL, "shard path 'a\tb.tar': a control character");
	T_FAILS(mgpu_manifest_write(&w, MGPU_SPLIT_TRAIN, "a\nb.tar", 1, 2, sha_a),
		MGPU_EINVAL, "cannot go in a manifest");
	fclose(fp);
	T_OK(mgpu_manifest_parse(buf, len, "m.tsv", "", &m));
	T_CHECK(m.n == 1 && strcmp(m.e[0].path, path) == 0, "%zu rows, path %.120s", m.n,
		m.n ? m.e[0].path : "");
	mgpu_manifest_free(&m);
	free(buf);
	fp = open_memstream(&buf, &len);
	T_OK(mgpu_manifest_writer_init(&w, fp, MGPU_FMT_JSON));
	T_OK(mgpu_manifest_write(&w, MGPU_SPLIT_TEST, "a\"b\\c.tar", 1, 2, sha_a));
	fclose(fp);
	T_CHECK(strstr(buf, "\"path\":\"a\\\"b\\\\c.tar\",") != NULL, "json: %s", buf);
	free(buf);
}

/* Class names: written as "#class" lines (JSON records), read back; the
 * reader takes them in order and sorted only. */
static void test_classes(void)
{
	static const char *hdr = "split\tpath\tsamples\tbytes\tsha256\n";
	char n0[] = "LAYING", n1[] = "WALKING", *names[] = { n0, n1 }, *buf = NULL, text[512];
	struct mgpu_manifest_writer w;
	struct mgpu_manifest m;
	size_t len = 0;
	FILE *fp;

	fp = open_memstream(&buf, &len);
	T_OK(mgpu_manifest_writer_init(&w, fp, MGPU_FMT_TSV));
	T_OK(mgpu_manifest_write_classes(&w, names, 2));
	T_OK(mgpu_manifest_write(&w, MGPU_SPLIT_TRAIN, "t.tar", 1, 2, sha_a));
	fclose(fp);
	T_CHECK(strncmp(buf, "split\tpath\tsamples\tbytes\tsha256\n#class\t0\tLAYING\n"
			"#class\t1\tWALKING\ntrain\tt.tar\t", 60) == 0, "tsv: %s", buf);
	T_OK(mgpu_manifest_parse(buf, len, "m.tsv", "", &m));
	T_CHECK(m.n == 1 && m.nnames == 2 && !strcmp(m.names[1], "WALKING"), "read back %d",
		m.nnames);
	mgpu_manifest_free(&m);
	free(buf);
	buf = NULL;
	fp = open_memstream(&buf, &len);
	T_OK(mgpu_manifest_writer_init(&w, fp, MGPU_FMT_JSON));
	T_OK(mgpu_manifest_write_classes(&w, names, 2));
	fclose(fp);
	T_CHECK(strcmp(buf, "{\"class\":0,\"name\":\"LAYING\"}\n{\"class\":1,\"name\":"
			    "\"WALKING\"}\n") == 0, "json: %s", buf);
	free(buf);
	snprintf(text, sizeof text, "%s#class\t1\tA\n", hdr);
	T_FAILS(mgpu_manifest_parse(text, strlen(text), "m.tsv", "", &m), MGPU_EFORMAT,
		"line 2: class '1' out of order (want 0)");
	snprintf(text, sizeof text, "%s#class\t0\tB\n#class\t1\tA\n", hdr);
	T_FAILS(mgpu_manifest_parse(text, strlen(text), "m.tsv", "", &m), MGPU_EFORMAT,
		"'B' and 'A' are not in sorted order");
	snprintf(text, sizeof text, "%s# a comment\n", hdr);
	T_FAILS(mgpu_manifest_parse(text, strlen(text), "m.tsv", "", &m), MGPU_EFORMAT,
		"a '#' line must be '#class<TAB>K<TAB>NAME'");
}

static void test_parse_errors(void)
{
	static const char good[] = "split\tpath\tsamples\tbytes\tsha256\n"
		"train\tt-0.tar\t5\t10240\t"
		"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\n";
	struct mgpu_manifest m;

	T_OK(mgpu_manifest_parse(good, strlen(good), "m.tsv", "dir", &m));
	T_CHECK(m.n == 1 && strcmp(m.e[0].path, "dir/t-0.tar") == 0 && m.e[0].samples == 5,
		"n %zu", m.n);
	mgpu_manifest_free(&m);
	T_FAILS(mgpu_manifest_parse("a\tb\n", 4, "m.tsv", "", &m), MGPU_EFORMAT,
		"'m.tsv': line 1: not a shard manifest (want the header 'split, path, samples, "
		"bytes, sha256')");
	T_FAILS(mgpu_manifest_parse("", 0, "m.tsv", "", &m), MGPU_EFORMAT, "empty manifest");
	T_FAILS(mgpu_manifest_parse("split\tpath\tsamples\tbytes\tsha256\nfoo\tx\t1\t1\tab\n",
				    46, "m.tsv", "", &m), MGPU_EFORMAT,
		"line 2: split 'foo' is not train");
	T_FAILS(mgpu_manifest_parse("split\tpath\tsamples\tbytes\tsha256\ntrain\tx\t1x\t1\tab\n",
				    48, "m.tsv", "", &m), MGPU_EFORMAT, "decimal");
	T_FAILS(mgpu_manifest_parse("split\tpath\tsamples\tbytes\tsha256\ntrain\tx\t1\t1\tab\n",
				    47, "m.tsv", "", &m), MGPU_EFORMAT, "64 hex");
	T_FAILS(mgpu_manifest_parse("split\tpath\tsamples\tbytes\tsha256\ntrain\tx\t1\t1\n",
				    44, "m.tsv", "", &m), MGPU_EFORMAT,
		"line 2: want 5 tab-separated fields");
	/* a NUL byte would end the header (or a field) early for strcmp: once a
	 * header with junk after a NUL passed, hiding the rows behind it */
	T_FAILS(mgpu_manifest_parse("split\tpath\tsamples\tbytes\tsha256\0junk\n", 37, "m.tsv",
				    "", &m), MGPU_EFORMAT, "'m.tsv': line 1: a NUL byte");
}

static void test_listed_twice(void)
{
	char text[512];
	struct mgpu_manifest m;
	int n = snprintf(text, sizeof text, "split\tpath\tsamples\tbytes\tsha256\n"
			 "train\ta.tar\t1\t2\t%s\nval\tb.tar\t1\t2\t%s\ntest\ta.tar\t1\t2\t%s\n",
			 sha_a, sha_a, sha_b);

	T_FAILS(mgpu_manifest_parse(text, (size_t)n, "m.tsv", "", &m), MGPU_EFORMAT,
		"'m.tsv': line 4: shard 'a.tar' is listed twice");
}

static void put(const char *path, const char *text)
{
	FILE *fp = fopen(path, "w");

	T_CHECK(fp != NULL, "cannot write %s", path);
	if (fp) {
		fputs(text, fp);
		fclose(fp);
	}
}

/* A shard of 3 rows and its manifest line; then the line lies in each
 * field the reader checks, and the shard changes under it. */
static void test_read_shard(void)
{
	struct mgpu_samples s, got[MGPU_NSPLITS] = { { 0 } };
	struct mgpu_manifest_entry e = { .split = MGPU_SPLIT_VAL };
	struct mgpu_manifest m = { .n = 1, .e = &e };
	uint32_t shape = 2, idx[3] = { 0, 1, 2 };
	unsigned char row[2] = { 1, 2 };
	int k;

	T_OK(mgpu_samples_init(&s, MGPU_DTYPE_U8, 1, &shape));
	for (k = 0; k < 3; k++)
		T_OK(mgpu_samples_push(&s, row, k));
	snprintf(e.path, sizeof e.path, "%s", tpath("val-000000.tar"));
	T_OK(mgpu_shard_write(e.path, &s, idx, 3, &e.nbytes, e.sha256));
	e.samples = 3;
	T_OK(mgpu_manifest_read(&m, got));
	T_CHECK(got[MGPU_SPLIT_VAL].n == 3 && got[MGPU_SPLIT_TRAIN].n == 0 &&
		got[MGPU_SPLIT_VAL].y[2] == 2, "val %zu rows", got[MGPU_SPLIT_VAL].n);
	e.samples = 4;
	T_FAILS(mgpu_manifest_read_shard(&e, &got[0]), MGPU_EFORMAT,
		"val-000000.tar': 3 samples, the manifest says 4");
	e.samples = 3;
	e.sha256[0] = e.sha256[0] == '0' ? '1' : '0';
	T_FAILS(mgpu_manifest_read_shard(&e, &got[0]), MGPU_EFORMAT,
		"sha256 differs from the manifest's");
	e.nbytes++;
	T_FAILS(mgpu_manifest_read_shard(&e, &got[0]), MGPU_EFORMAT,
		"bytes, the manifest says");
	T_CHECK(truncate(e.path, 1000) == 0, "truncate");
	T_FAILS(mgpu_manifest_read_shard(&e, &got[0]), MGPU_EFORMAT, "val-000000.tar'");
	for (k = 0; k < MGPU_NSPLITS; k++)
		mgpu_samples_free(&got[k]);
	mgpu_samples_free(&s);
}

static void test_sniff(void)
{
	char file[4200];

	T_CHECK(mgpu_sniff_head(MGPU_CACHE_MAGIC "xx", 10) == MGPU_SNIFF_CACHE, "magic");
	T_CHECK(mgpu_sniff_head("split\tpa", 8) == MGPU_SNIFF_MANIFEST, "header");
	T_CHECK(mgpu_sniff_head("splits\t", 8) == MGPU_SNIFF_ARCHIVE, "splits");
	T_CHECK(mgpu_sniff_head("split", 5) == MGPU_SNIFF_ARCHIVE, "short");
	T_CHECK(mgpu_sniff_head("", 0) == MGPU_SNIFF_ARCHIVE, "empty");
	put(tpath("m.tsv"), "split\tpath\n");
	put(tpath("c"), MGPU_CACHE_MAGIC "rest");
	put(tpath("a.tar"), "not really a tar");
	T_CHECK(mgpu_sniff_file(tpath("m.tsv")) == MGPU_SNIFF_MANIFEST, "m.tsv");
	T_CHECK(mgpu_sniff_file(tpath("c")) == MGPU_SNIFF_CACHE, "c");
	T_CHECK(mgpu_sniff_file(tpath("a.tar")) == MGPU_SNIFF_ARCHIVE, "a.tar");
	T_CHECK(mgpu_sniff_file(tpath("none")) == MGPU_SNIFF_ARCHIVE, "none");
	T_CHECK(mgpu_sniff_path(tpath("none"), file, sizeof file) == MGPU_SNIFF_MISSING, "missing");
	T_CHECK(mgpu_sniff_path(tpath("a.tar/x"), file, sizeof file) == MGPU_SNIFF_MISSING,
		"under a file");
	T_CHECK(mgpu_sniff_path(tpath("m.tsv"), file, sizeof file) == MGPU_SNIFF_MANIFEST &&
		strcmp(file, tpath("m.tsv")) == 0, "file %s", file);
	mkdir(tpath("d"), 0755);
	T_CHECK(mgpu_sniff_path(tpath("d"), file, sizeof file) == MGPU_SNIFF_NONE, "empty dir");
	put(tpath("d/train-images-idx3-ubyte.gz"), "");
	T_CHECK(mgpu_sniff_path(tpath("d"), file, sizeof file) == MGPU_SNIFF_IDX_DIR &&
		strcmp(file, tpath("d")) == 0, "idx: %s", file);
	put(tpath("d/" MGPU_SNIFF_MANIFEST_FILE), "split\t");
	T_CHECK(mgpu_sniff_path(tpath("d"), file, sizeof file) == MGPU_SNIFF_MANIFEST &&
		strcmp(file, tpath("d/manifest.tsv")) == 0, "manifest: %s", file);
	put(tpath("d/" MGPU_CACHE_FILE), MGPU_CACHE_MAGIC);
	T_CHECK(mgpu_sniff_path(tpath("d"), file, sizeof file) == MGPU_SNIFF_CACHE &&
		strcmp(file, tpath("d/mgpu.cache")) == 0, "cache: %s", file);
}

int main(void)
{
	if (t_tmpdir_make("manifest") < 0)
		return 1;
	T_RUN(test_write_read);
	T_RUN(test_write_json);
	T_RUN(test_write_paths);
	T_RUN(test_parse_errors);
	T_RUN(test_classes);
	T_RUN(test_listed_twice);
	T_RUN(test_read_shard);
	T_RUN(test_sniff);
	t_tmpdir_remove();
	return T_DONE();
}
