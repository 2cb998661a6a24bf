/*
 * test_table.c - unit tests of lib/core/table: one schema rendered as TSV
 * (every column, NA when unset or not finite), as JSON Lines (the
 * columns set, null when not finite), each JSON line valid for the strict
 * parser whatever the values, and as a Markdown table.
 */
#include <math.h>   /* NAN, INFINITY */
#include <stdio.h>  /* open_memstream */
#include <stdlib.h> /* free */
#include <string.h> /* strcmp, strchr */

#include "core/err.h"   /* mgpu_errmsg */
#include "core/json.h"  /* mgpu_json_parse */
#include "core/table.h" /* mgpu_table_* */
#include "../t.h"       /* T_RUN, T_CHECK, T_OK */

static const char *const cols[] = { "name", "loss", "lr", "n", "peaks" };

/* One record with awkward values, rendered in format; the text in *mem
 * (free it). */
static void render(int format, char **mem)
{
	static const int64_t peaks[] = { 1, 2 };
	struct mgpu_table t;
	size_t len = 0;
	FILE *fp = open_memstream(mem, &len);

	if (!fp)
		return;
	T_OK(mgpu_table_init(&t, fp, format, cols, 5));
	T_OK(mgpu_table_str(&t, "name", "a\tb\"c\\d\r\x01"));
	T_OK(mgpu_table_num(&t, "loss", NAN, 6));
	T_OK(mgpu_table_num(&t, "lr", -INFINITY, 6));
	T_OK(mgpu_table_ints(&t, "peaks", peaks, 2));
	T_OK(mgpu_table_emit(&t));
	T_OK(mgpu_table_num(&t, "loss", INFINITY, 6));
	T_OK(mgpu_table_num(&t, "lr", 0.25, 6));
	T_OK(mgpu_table_int(&t, "n", 7));
	T_OK(mgpu_table_emit(&t));
	fclose(fp);
}

static void test_tsv(void)
{
	char *mem = NULL;

	render(0, &mem);
	T_CHECK(mem && strcmp(mem, "name\tloss\tlr\tn\tpeaks\n"
				   "a b'c'd  \tNA\tNA\tNA\t1,2\n"
				   "NA\tNA\t0.25\t7\tNA\n") == 0, "got '%s'", mem);
	free(mem);
}

static void test_json(void)
{
	struct mgpu_json_doc doc;
	char *mem = NULL, *line, *nl;
	int n = 0;

	render(1, &mem);
	T_CHECK(mem && strcmp(mem, "{\"name\":\"a b'c'd  \",\"loss\":null,\"lr\":null,"
				   "\"peaks\":[1,2]}\n"
				   "{\"loss\":null,\"lr\":0.25,\"n\":7}\n") == 0, "got '%s'", mem);
	for (line = mem; line && (nl = strchr(line, '\n')); line = nl + 1, n++) {
		T_OK(mgpu_json_parse(line, (size_t)(nl - line), "line", &doc));
		mgpu_json_free(&doc);
	}
	T_CHECK(n == 2, "%d lines", n);
	free(mem);
}

static void test_markdown(void)
{
	struct mgpu_table t;
	char *mem = NULL;
	size_t len = 0;
	FILE *fp;

	render(MGPU_FMT_MARKDOWN, &mem);
	/* every column, NA when unset or not finite, a separator line */
	T_CHECK(mem && strcmp(mem, "| name | loss | lr | n | peaks |\n"
				   "| --- | --- | --- | --- | --- |\n"
				   "| a b'c'd   | NA | NA | NA | 1,2 |\n"
				   "| NA | NA | 0.25 | 7 | NA |\n") == 0, "got '%s'", mem);
	free(mem);
	/* a '|' in a cell would end it early */
	mem = NULL;
	fp = open_memstream(&mem, &len);
	if (!fp)
		return;
	T_OK(mgpu_table_init(&t, fp, MGPU_FMT_MARKDOWN, cols, 5));
	T_OK(mgpu_table_str(&t, "name", "a|b"));
	T_OK(mgpu_table_emit(&t));
	fclose(fp);
	T_CHECK(mem && strstr(mem, "| a\\|b | NA |"), "pipe escaped: '%s'", mem);
	free(mem);
	T_FAILS(mgpu_table_init(&t, stdout, 3, cols, 5), MGPU_EINVAL, "unknown format");
}

int main(void)
{
	T_RUN(test_tsv);
	T_RUN(test_json);
	T_RUN(test_markdown);
	return T_DONE();
}
