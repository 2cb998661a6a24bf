/*
 * test_safetensors.c - unit tests of lib/model/safetensors: write/read round
 * trip, foreign dtypes, every truncation of a valid file, and every
 * documented reader and writer error. Files go to a mkdtemp directory;
 * malformed inputs are built in memory and given to mgpu_st_parse().
 */
#include <dirent.h>   /* opendir, readdir */
#include <stdint.h>   /* uint16_t, uint64_t */
#include <stdio.h>    /* snprintf */
#include <stdlib.h>   /* malloc, free */
#include <string.h>   /* memcpy, strlen, strstr */
#include <sys/stat.h> /* stat */

#include "core/err.h"        /* mgpu_errmsg, MGPU_E* */
#include "core/io.h"         /* mgpu_read_file */
#include "model/safetensors.h"  /* mgpu_st_* */
#include "../t.h"            /* T_RUN, T_CHECK, T_OK, T_FAILS */
#include "../tmpdir.h" /* tmpdir, tpath, t_tmpdir_make */

static unsigned char fbuf[1 << 16];

/* A file image: length prefix, json, then data_nbytes of pattern bytes. */
static size_t mk(const char *json, size_t data_nbytes)
{
	uint64_t n = strlen(json);
	size_t i;

	memcpy(fbuf, &n, 8);
	memcpy(fbuf + 8, json, n);
	for (i = 0; i < data_nbytes; i++)
		fbuf[8 + n + i] = (unsigned char)(i * 31 + 7);
	return 8 + n + data_nbytes;
}

#define BAD(json, nbytes, code, sub)                                                 \
	do {                                                                          \
		struct mgpu_st st_;                                                   \
		T_FAILS(mgpu_st_parse(fbuf, mk(json, nbytes), "m.st", &st_), code, sub); \
		T_CHECK(st_.t == NULL && st_.doc == NULL, "failed parse not cleared");  \
	} while (0)

static float w[6] = {1.5f, -2, 3.25f, 0, -0.0f, 1e-30f};
static float b[3] = {0.5f, 0.25f, 0.125f};
static float s[1] = {42};

static void test_round_trip(void)
{
	struct mgpu_st_entry e[4] = {
		{"layers.0.weight", w, 2, {2, 3}}, {"layers.0.bias", b, 1, {3}},
		{"step \"quoted\"", s, 0, {0}},    {"empty", NULL, 2, {0, 5}},
	};
	const char *meta[] = {"format", "pt", "spec", "mlp:784-10\n"};
	const struct mgpu_st_tensor *t;
	struct mgpu_st st;
	uint64_t hn;
	float got[6];
	struct stat sb;

	T_OK(mgpu_st_write(tpath("m.safetensors"), e, 4, meta, 2));
	T_OK(mgpu_st_load(tpath("m.safetensors"), &st));
	T_CHECK(st.n == 4 && st.nmeta == 2, "n %d nmeta %d", st.n, st.nmeta);
	t = mgpu_st_find(&st, "layers.0.weight");
	T_CHECK(t && t->dtype == MGPU_ST_F32 && t->ndim == 2 && t->shape[0] == 2 &&
		t->shape[1] == 3 && t->count == 6 && t->begin == 0 && t->end == 24, "weight");
	if (t) {
		T_OK(mgpu_st_read_f32(t, got, 6));
		T_CHECK(memcmp(got, w, sizeof w) == 0, "weight data");
		T_FAILS(mgpu_st_read_f32(t, got, 5), MGPU_EINVAL, "has 6 elements, not 5");
	}
	t = mgpu_st_find(&st, "layers.0.bias");
	T_CHECK(t && t->begin == 24 && t->end == 36, "bias offsets");
	t = mgpu_st_find(&st, "step \"quoted\"");
	T_CHECK(t && t->ndim == 0 && t->count == 1 && t->end - t->begin == 4, "scalar");
	if (t) {
		T_OK(mgpu_st_read_f32(t, got, 1));
		T_CHECK(got[0] == 42, "scalar value");
	}
	t = mgpu_st_find(&st, "empty");
	T_CHECK(t && t->count == 0 && t->begin == t->end && t->begin == 40, "empty");
	T_CHECK(mgpu_st_find(&st, "nope") == NULL, "find missing");
	T_CHECK(strcmp(st.t[0].name, "layers.0.weight") == 0, "header order");
	T_CHECK(mgpu_st_meta(&st, "spec") && strcmp(mgpu_st_meta(&st, "spec"), "mlp:784-10\n")
		== 0, "meta");
	T_CHECK(mgpu_st_meta(&st, "none") == NULL, "meta missing");
	T_CHECK(st.data_nbytes == 40, "data %zu", st.data_nbytes);
	memcpy(&hn, st.owned, 8);
	T_CHECK(hn % 8 == 0, "header length %llu not a multiple of 8", (unsigned long long)hn);
	T_CHECK(stat(tpath("m.safetensors"), &sb) == 0 && (size_t)sb.st_size == 8 + hn + 40,
		"file size");
	mgpu_st_free(&st);
	T_CHECK(st.t == NULL && st.n == 0, "free zeroes");
	mgpu_st_free(&st);
	/* no tensors, no metadata */
	T_OK(mgpu_st_write(tpath("e.safetensors"), NULL, 0, NULL, 0));
	T_OK(mgpu_st_load(tpath("e.safetensors"), &st));
	T_CHECK(st.n == 0 && st.nmeta == 0 && st.data_nbytes == 0, "empty file");
	mgpu_st_free(&st);
}

static void test_foreign_dtypes(void)
{
	/* F16 1.0 -2.0 65504 2^-24 | BF16 1.0 -3.0 | F64 0.1 | I64 */
	static const char *json =
		"{\"h\":{\"dtype\":\"F16\",\"shape\":[4],\"data_offsets\":[0,8]},"
		"\"b\":{\"shape\":[2],\"dtype\":\"BF16\",\"data_offsets\":[8,12]},"
		"\"d\":{\"dtype\":\"F64\",\"shape\":[1,1],\"data_offsets\":[12,20]},"
		"\"i\":{\"dtype\":\"I64\",\"shape\":[],\"data_offsets\":[20,28]},"
		"\"__metadata__\":{}}";
	uint16_t h[6] = {0x3C00, 0xC000, 0x7BFF, 0x0001, 0x3F80, 0xC040};
	double d = 0.1;
	size_t n = mk(json, 28), hl = strlen(json);
	struct mgpu_st st;
	float got[4];

	memcpy(fbuf + 8 + hl, h, 12);
	memcpy(fbuf + 8 + hl + 12, &d, 8);
	T_OK(mgpu_st_parse(fbuf, n, "f.st", &st));
	T_CHECK(st.n == 4 && st.nmeta == 0, "n %d", st.n);
	if (st.n != 4)
		return;
	T_OK(mgpu_st_read_f32(mgpu_st_find(&st, "h"), got, 4));
	T_CHECK(got[0] == 1 && got[1] == -2 && got[2] == 65504 && got[3] == 0x1p-24f,
		"f16 %g %g %g %g", got[0], got[1], got[2], got[3]);
	T_OK(mgpu_st_read_f32(mgpu_st_find(&st, "b"), got, 2));
	T_CHECK(got[0] == 1 && got[1] == -3, "bf16 %g %g", got[0], got[1]);
	T_OK(mgpu_st_read_f32(mgpu_st_find(&st, "d"), got, 1));
	T_CHECK(got[0] == 0.1f, "f64");
	T_FAILS(mgpu_st_read_f32(mgpu_st_find(&st, "i"), got, 1), MGPU_EUNSUP,
		"cannot convert I64 to F32");
	T_CHECK(mgpu_st_find(&st, "i")->data == st.data + 20, "view into the buffer");
	T_CHECK(mgpu_st_dtype_nbytes(MGPU_ST_BF16) == 2 && mgpu_st_dtype_nbytes(99) == 0 &&
		strcmp(mgpu_st_dtype_name(MGPU_ST_U64), "U64") == 0 &&
		mgpu_st_dtype_name(0) == NULL, "dtype table");
	mgpu_st_free(&st);
}

static void test_truncated(void)
{
	struct mgpu_st_entry e[2] = {{"a", w, 1, {6}}, {"b", b, 1, {3}}};
	unsigned char *buf = NULL;
	size_t len = 0, cut;
	struct mgpu_st st;
	int bad = 0;

	T_OK(mgpu_st_write(tpath("t.safetensors"), e, 2, NULL, 0));
	T_OK(mgpu_read_file(tpath("t.safetensors"), &buf, &len));
	for (cut = 0; cut < len; cut++) {
		if (mgpu_st_parse(buf, cut, "t.st", &st) == 0) {
			bad++;
			mgpu_st_free(&st);
		} else if (!strstr(mgpu_errmsg(), "'t.st': ")) {
			T_CHECK(0, "message '%s' does not name the file", mgpu_errmsg());
		}
	}
	T_CHECK(bad == 0, "%d truncations of %zu parsed", bad, len);
	T_FAILS(mgpu_st_parse(buf, 5, "t.st", &st), MGPU_EFORMAT,
		"'t.st': truncated: 5 bytes, need 8");
	T_FAILS(mgpu_st_parse(buf, 20, "t.st", &st), MGPU_EFORMAT,
		"'t.st': truncated: header says");
	T_FAILS(mgpu_st_parse(buf, len - 1, "t.st", &st), MGPU_EFORMAT,
		"'t.st': tensor 'b': data_offsets [24, 36] outside the 35 bytes of data");
	T_OK(mgpu_st_parse(buf, len, "t.st", &st));
	mgpu_st_free(&st);
	free(buf);
	T_FAILS(mgpu_st_load(tpath("missing"), &st), MGPU_EIO, "missing': cannot open");
}

static void test_corrupt_header(void)
{
	uint64_t huge = (uint64_t)1 << 40;

	memcpy(fbuf, &huge, 8);
	{
		struct mgpu_st st;
		T_FAILS(mgpu_st_parse(fbuf, 100, "m.st", &st), MGPU_EFORMAT,
			"header length 1099511627776 exceeds the limit");
	}
	BAD(" {}", 0, MGPU_EFORMAT, "'m.st': header does not start with '{'");
	BAD("[]", 0, MGPU_EFORMAT, "header does not start with '{'");
	BAD("{\"a\":}", 0, MGPU_EFORMAT, "'m.st': bad JSON at byte 5");
	BAD("{} x", 0, MGPU_EFORMAT, "trailing characters");
	BAD("{\"a\":1}", 0, MGPU_EFORMAT, "tensor 'a': expected an object, got number");
	BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4],\"x\":1}}", 4,
	    MGPU_EFORMAT, "tensor 'a': unknown field 'x'");
	BAD("{\"a\":{\"dtype\":32,\"shape\":[1],\"data_offsets\":[0,4]}}", 4, MGPU_EFORMAT,
	    "tensor 'a': dtype must be a string");
	BAD("{\"a\":{\"shape\":[1],\"data_offsets\":[0,4]}}", 4, MGPU_EFORMAT,
	    "tensor 'a': dtype must be a string");
	BAD("{\"a\":{\"dtype\":\"F33\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4,
	    MGPU_EFORMAT, "tensor 'a': unknown dtype 'F33'");
	BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":2,\"data_offsets\":[0,8]}}", 8, MGPU_EFORMAT,
	    "tensor 'a': shape must be an array");
	BAD("{\"a\":{\"dtype\":\"U8\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,1]}}",
	    1, MGPU_EFORMAT, "tensor 'a': 9 dimensions, at most 8");
	BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}}", 4,
	    MGPU_ERANGE, "'m.st': tensor 'a': shape: at byte 29: -1 out of range");
	BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[1.0],\"data_offsets\":[0,4]}}", 4,
	    MGPU_EFORMAT, "tensor 'a': shape: at byte 29: expected an integer, got 1.0");
	BAD("{\"a\":{\"dtype\":\"U8\",\"shape\":[4294967296,4294967296],"
	    "\"data_offsets\":[0,4]}}", 4, MGPU_ERANGE, "tensor 'a': shape overflows");
	BAD("{\"a\":{\"dtype\":\"F64\",\"shape\":[4611686018427387904],"
	    "\"data_offsets\":[0,4]}}", 4, MGPU_EFORMAT, "need 0 bytes, data_offsets give 4");
	BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0]}}", 4, MGPU_EFORMAT,
	    "tensor 'a': data_offsets must be an array of 2 integers");
	BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,\"4\"]}}", 4,
	    MGPU_EFORMAT, "tensor 'a': data_offsets: at byte 50: expected an integer, got string");
	BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[-4,0]}}", 4,
	    MGPU_ERANGE, "tensor 'a': data_offsets: at byte 48: -4 out of range");
	BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[4,0]}}", 4,
	    MGPU_EFORMAT, "tensor 'a': data_offsets [4, 0] outside the 4 bytes of data");
	BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 4,
	    MGPU_EFORMAT, "data_offsets [0, 8] outside the 4 bytes of data");
	BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,20]}}", 20,
	    MGPU_EFORMAT, "tensor 'a': 6 elements of F32 need 24 bytes, data_offsets give 20");
	BAD("{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]},"
	    "\"b\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[2,6]}}", 6, MGPU_EFORMAT,
	    "tensor 'b': data_offsets start at 2, expected 4 (overlap)");
	BAD("{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]},"
	    "\"b\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[5,9]}}", 9, MGPU_EFORMAT,
	    "tensor 'b': data_offsets start at 5, expected 4 (gap)");
	BAD("{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[1,5]}}", 5, MGPU_EFORMAT,
	    "tensor 'a': data_offsets start at 1, expected 0 (gap)");
	BAD("{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]}}", 6, MGPU_EFORMAT,
	    "data section has 6 bytes, tensors cover 4");
	BAD("{\"__metadata__\":[]}", 0, MGPU_EFORMAT, "__metadata__ must be an object, got array");
	BAD("{\"__metadata__\":{\"k\":1}}", 0, MGPU_EFORMAT,
	    "__metadata__: value of 'k' must be a string");
	BAD("{\"__metadata__\":{\"k\":\"a\\u0000b\"}}", 0, MGPU_EFORMAT,
	    "value of 'k' must be a string without NUL");
	BAD("{\"a\\u0000\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[0,0]}}", 0,
	    MGPU_EFORMAT, "tensor name with a NUL character");
	BAD("{\"a\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[0,0]},"
	    "\"a\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[0,0]}}", 0, MGPU_EFORMAT,
	    "duplicate key");
	/* the same tensors in data order different from header order are fine */
	{
		struct mgpu_st st;
		size_t n = mk("{\"b\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[3,5]},"
			      "\"z\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[3,3]},"
			      "\"a\":{\"dtype\":\"I8\",\"shape\":[3],\"data_offsets\":[0,3]}}   ", 5);
		T_OK(mgpu_st_parse(fbuf, n, "m.st", &st));
		T_CHECK(st.n == 3 && strcmp(st.t[0].name, "b") == 0, "order");
		mgpu_st_free(&st);
	}
}

static int count_files(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	while (d && (de = readdir(d)))
		n += de->d_name[0] != '.';
	if (d)
		closedir(d);
	return n;
}

static void test_write_errors(void)
{
	struct mgpu_st_entry e[2] = {{"a", w, 1, {6}}, {"b", b, 1, {3}}};
	const char *meta[] = {"k", "v", "k", "w"};
	const char *nullmeta[] = {"k", NULL};
	const char *p = tpath("w.safetensors");
	int before = count_files(tmpdir);

	e[1].name = "a";
	T_FAILS(mgpu_st_write(p, e, 2, NULL, 0), MGPU_EINVAL, "duplicate tensor name 'a'");
	e[1].name = NULL;
	T_FAILS(mgpu_st_write(p, e, 2, NULL, 0), MGPU_EINVAL, "tensor 1: missing or reserved");
	e[1].name = "";
	T_FAILS(mgpu_st_write(p, e, 2, NULL, 0), MGPU_EINVAL, "tensor 1: missing or reserved");
	e[1].name = "__metadata__";
	T_FAILS(mgpu_st_write(p, e, 2, NULL, 0), MGPU_EINVAL, "tensor 1: missing or reserved");
	e[1].name = "b";
	e[1].ndim = 5;
	T_FAILS(mgpu_st_write(p, e, 2, NULL, 0), MGPU_EINVAL, "tensor 'b': 5 dimensions");
	e[1].ndim = 1;
	e[1].shape[0] = -3;
	T_FAILS(mgpu_st_write(p, e, 2, NULL, 0), MGPU_EINVAL, "tensor 'b': bad shape");
	e[1].shape[0] = 3;
	e[1].data = NULL;
	T_FAILS(mgpu_st_write(p, e, 2, NULL, 0), MGPU_EINVAL, "tensor 'b': no data");
	e[1].data = b;
	T_FAILS(mgpu_st_write(p, e, 2, meta, 2), MGPU_EINVAL, "duplicate metadata key 'k'");
	T_FAILS(mgpu_st_write(p, e, 2, nullmeta, 1), MGPU_EINVAL, "metadata pair 0 has a NULL");
	T_FAILS(mgpu_st_write(p, e, -1, NULL, 0), MGPU_EINVAL, "bad tensor or metadata count");
	T_FAILS(mgpu_st_write(p, e, 2, NULL, 1), MGPU_EINVAL, "bad tensor or metadata count");
	T_CHECK(count_files(tmpdir) == before, "a failed write left a file");
	T_FAILS(mgpu_st_write(tpath("no/such/dir.st"), e, 2, NULL, 0), MGPU_EIO,
		"cannot create");
	/* a good write leaves exactly one file, no temporary */
	T_OK(mgpu_st_write(p, e, 2, NULL, 0));
	T_CHECK(count_files(tmpdir) == before + 1, "temporary left behind");
}

int main(void)
{
	if (t_tmpdir_make("st") < 0)
		return 1;
	T_RUN(test_round_trip);
	T_RUN(test_foreign_dtypes);
	T_RUN(test_truncated);
	T_RUN(test_corrupt_header);
	T_RUN(test_write_errors);
	t_tmpdir_remove();
	return T_DONE();
}
