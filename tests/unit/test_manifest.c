/*
 * test_manifest.c - unit tests of the shard manifest (data/manifest.h):
 * what the writer prints the parser reads back field for field, in the
 * header the format defines; JSON Lines carry the same rows; and every
 * malformed manifest gets its error naming the file and the line.
 */
#include <stdio.h>  /* open_memstream, fclose */
#include <stdlib.h> /* free */
#include <string.h> /* strcmp, strlen, strncmp */

#include "core/err.h"      /* mgpu_errmsg, MGPU_E* */
#include "core/table.h"    /* MGPU_FMT_* */
#include "data/manifest.h" /* mgpu_manifest_* */
#include "data/split.h"    /* MGPU_SPLIT_* */
#include "../t.h"          /* T_RUN, T_CHECK, T_OK, T_FAILS */

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

int main(void)
{
	T_RUN(test_write_read);
	T_RUN(test_write_json);
	T_RUN(test_write_paths);
	T_RUN(test_parse_errors);
	T_RUN(test_listed_twice);
	return T_DONE();
}
