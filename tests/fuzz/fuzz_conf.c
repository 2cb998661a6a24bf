/*
 * fuzz_conf.c - libFuzzer harness for configuration files (core/conf.h):
 * any text is entries or an error naming "fuzz" and a line; the entries
 * applied to a table and written back read back to the same settings.
 */
#include <stddef.h> /* size_t */
#include <stdint.h> /* uint8_t */
#include <stdio.h>  /* open_memstream */
#include <stdlib.h> /* abort, free */
#include <string.h> /* strcmp, strstr */

#include "core/conf.h" /* mgpu_conf_parse, mgpu_conf_write */
#include "core/err.h"  /* mgpu_errmsg */

struct o {
	int n, flag;
	double lr;
	const char *name;
	struct mgpu_common_opts c;
};

static const struct mgpu_opt tab[] = {
	MGPU_OPT_HEAD("numbers"),
	MGPU_OPT_ROW(MGPU_OPT_INT, "batch-size", 0, struct o, n, 0, 100, "N", "a count", 0),
	MGPU_OPT_ROW(MGPU_OPT_DOUBLE, "lr", 0, struct o, lr, 0, 10, "X", "rate", 0),
	MGPU_OPT_ROW(MGPU_OPT_FLAG, "flag", 0, struct o, flag, 0, 0, NULL, "a flag", 0),
	MGPU_OPT_ROW(MGPU_OPT_STR, "name", 0, struct o, name, 0, 0, "S", "a name", 0),
	MGPU_OPT_CONFIG(struct o, c),
	MGPU_OPT_COMMON(struct o, c),
	MGPU_OPT_TABLE_END,
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const refuse[] = { "config", NULL };
	struct mgpu_conf c, c2;
	struct o v = { 0 }, w = { 0 };
	char *buf = NULL;
	size_t len = 0;
	FILE *f;
	int i;

	if (mgpu_conf_parse(tab, "fuzz", (const char *)data, size, refuse, &c) < 0) {
		if (!strstr(mgpu_errmsg(), "fuzz:") || c.n)
			abort();
		return 0;
	}
	for (i = 0; i < c.n; i++)
		if (mgpu_opt_set(c.e[i].row, &v, c.e[i].value) < 0 && !strstr(mgpu_errmsg(), "--"))
			abort();
	v.c = (struct mgpu_common_opts){ 0 }; /* META rows are not written */
	f = open_memstream(&buf, &len);
	if (!f || mgpu_conf_write(f, tab, &v, "t") < 0)
		abort();
	fclose(f);
	if (mgpu_conf_parse(tab, "again", buf, len, refuse, &c2) < 0)
		abort();
	for (i = 0; i < c2.n; i++)
		if (mgpu_opt_set(c2.e[i].row, &w, c2.e[i].value) < 0)
			abort();
	if (w.n != v.n || w.flag != v.flag || !(w.lr == v.lr || (w.lr != w.lr && v.lr != v.lr)) ||
	    (v.name && v.name[0] && (!w.name || strcmp(w.name, v.name) != 0)))
		abort();
	mgpu_conf_free(&c2);
	mgpu_conf_free(&c);
	free(buf);
	return 0;
}
