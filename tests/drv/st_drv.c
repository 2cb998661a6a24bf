/* st_drv write PATH | st_drv read PATH: the C side of
 * tests/cli/15-safetensors-python.sh, built by make so that the test needs no
 * compiler or development libraries where it runs (a GPU machine). */
#include <stdio.h>
#include <string.h>
#include "core/err.h"
#include "model/safetensors.h"

static int wr(const char *path)
{
	static float w[6] = {1.5f, -2.0f, 3.25f, 0.0f, 1e-3f, 7.0f}, b[3] = {0.5f, -0.25f, 8.0f};
	static float s = 42.0f;
	struct mgpu_st_entry e[4] = {
		{"fc1.weight", w, 2, {2, 3}}, {"fc1.bias", b, 1, {3}},
		{"step", &s, 0, {0}}, {"zero", NULL, 2, {0, 4}},
	};
	const char *meta[] = {"format", "pt", "note", "caf\xc3\xa9 \"q\"\n"};
	return mgpu_st_write(path, e, 4, meta, 2);
}

static int rd(const char *path)
{
	struct mgpu_st st;
	float v[64];
	int i, k;
	size_t j;

	if (mgpu_st_load(path, &st) < 0)
		return -1;
	for (i = 0; i < st.n; i++) {
		printf("%s %s [", st.t[i].name, mgpu_st_dtype_name(st.t[i].dtype));
		for (k = 0; k < st.t[i].ndim; k++)
			printf("%s%lld", k ? "," : "", (long long)st.t[i].shape[k]);
		printf("]");
		if (st.t[i].count <= 64 && mgpu_st_read_f32(&st.t[i], v, st.t[i].count) == 0)
			for (j = 0; j < st.t[i].count; j++)
				printf(" %g", v[j]);
		printf("\n");
	}
	printf("meta %s\n", mgpu_st_meta(&st, "who") ? mgpu_st_meta(&st, "who") : "-");
	mgpu_st_free(&st);
	return 0;
}

int main(int argc, char **argv)
{
	int rc;

	if (argc != 3)
		return 2;
	rc = strcmp(argv[1], "write") == 0 ? wr(argv[2]) : rd(argv[2]);
	if (rc < 0)
		fprintf(stderr, "st_drv: error: %s\n", mgpu_errmsg());
	return rc < 0;
}
