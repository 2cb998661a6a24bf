/*
 * test_tokens.c - unit tests of the token-file reader (data/tokens.h):
 * llm.c files of both versions and raw uint16/uint32 ids cut into the
 * windows text gets, the rows' dtype, a header that decides the width, the
 * vocab check naming file and position, and every malformed file (short
 * header, a count the file does not hold, a stray byte, a bad version, a
 * width the header contradicts) an error naming the file.
 */
#include <stdio.h>  /* fopen, fwrite */
#include <string.h> /* memcmp, memcpy */

#include "core/err.h"     /* mgpu_errmsg, MGPU_E* */
#include "data/input.h"   /* mgpu_input_load */
#include "data/tokens.h"  /* mgpu_tokens_* */
#include "../t.h"         /* T_RUN, T_CHECK, T_OK, T_FAILS */
#include "../tmpdir.h"    /* t_tmpdir_make, tpath */

static void put32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)v, p[1] = (unsigned char)(v >> 8);
	p[2] = (unsigned char)(v >> 16), p[3] = (unsigned char)(v >> 24);
}

/* An llm.c file of version ver holding ids[0..n) (declared count: decl). */
static size_t llmc(unsigned char *buf, int ver, const uint32_t *ids, size_t n, uint32_t decl)
{
	size_t w = ver == 1 ? 2 : 4, i;

	memset(buf, 0, MGPU_TOKENS_LLMC_HEADER_NBYTES);
	put32(buf, MGPU_TOKENS_LLMC_MAGIC);
	put32(buf + 4, (uint32_t)ver);
	put32(buf + 8, decl);
	for (i = 0; i < n; i++) {
		unsigned char *p = buf + MGPU_TOKENS_LLMC_HEADER_NBYTES + i * w;
		if (w == 2)
			p[0] = (unsigned char)ids[i], p[1] = (unsigned char)(ids[i] >> 8);
		else
			put32(p, ids[i]);
	}
	return MGPU_TOKENS_LLMC_HEADER_NBYTES + n * w;
}

static void write_file(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "wb");

	T_CHECK(f && fwrite(data, 1, len, f) == len, "writing %s", path);
	if (f)
		fclose(f);
}

static uint32_t row_id(const struct mgpu_samples *s, size_t r, size_t t)
{
	uint16_t h;
	uint32_t w;

	if (s->dtype == MGPU_DTYPE_U16) {
		memcpy(&h, s->x + r * s->row_nbytes + t * 2, 2);
		return h;
	}
	memcpy(&w, s->x + r * s->row_nbytes + t * 4, 4);
	return w;
}

static const uint32_t ids[] = { 7, 300, 65535, 2, 9, 1000, 11, 12, 40000, 5, 6 };
#define NIDS (sizeof ids / sizeof ids[0])

/* 11 ids at context 3: windows [0..3], [3..6], [6..9], the tail dropped. */
static void check_windows(const struct mgpu_samples *s, int dtype, const char *what)
{
	size_t k, t;

	T_CHECK(s->n == 3 && s->dtype == dtype && s->ndim == 1 && s->shape[0] == 4 &&
		s->row_nbytes == 4 * mgpu_dtype_nbytes(dtype), "%s: n %zu dtype %d", what, s->n,
		s->dtype);
	for (k = 0; k < s->n && k < 3; k++)
		for (t = 0; t < 4; t++)
			T_CHECK(row_id(s, k, t) == ids[k * 3 + t], "%s: sample %zu id %zu is %u",
				what, k, t, row_id(s, k, t));
}

static void test_llmc(void)
{
	static unsigned char buf[MGPU_TOKENS_LLMC_HEADER_NBYTES + 4 * NIDS];
	struct mgpu_tokens_opts o = { .context = 3 };
	struct mgpu_samples s = { 0 };
	size_t n;

	n = llmc(buf, 1, ids, NIDS, NIDS);
	write_file(tpath("v1.bin"), buf, n);
	T_OK(mgpu_tokens_load(tpath("v1.bin"), &o, &s));
	check_windows(&s, MGPU_DTYPE_U16, "version 1");
	mgpu_samples_free(&s);
	n = llmc(buf, 2, ids, NIDS, NIDS);
	write_file(tpath("v2.bin"), buf, n);
	T_OK(mgpu_tokens_load(tpath("v2.bin"), &o, &s));
	check_windows(&s, MGPU_DTYPE_U32, "version 2");
	T_FAILS(mgpu_tokens_load(tpath("v1.bin"), &o, &s), MGPU_EFORMAT,
		"v1.bin': token samples are u16 4, earlier sources gave u32 4");
	mgpu_samples_free(&s);
}

static void test_raw(void)
{
	unsigned char b16[2 * NIDS], b32[4 * NIDS];
	struct mgpu_tokens_opts o = { .context = 3 };
	struct mgpu_samples s = { 0 };
	size_t i;

	for (i = 0; i < NIDS; i++) {
		b16[2 * i] = (unsigned char)ids[i], b16[2 * i + 1] = (unsigned char)(ids[i] >> 8);
		put32(b32 + 4 * i, ids[i]);
	}
	write_file(tpath("raw16.bin"), b16, sizeof b16);
	T_OK(mgpu_tokens_load(tpath("raw16.bin"), &o, &s));
	check_windows(&s, MGPU_DTYPE_U16, "raw uint16");
	mgpu_samples_free(&s);
	o.token_bytes = 4;
	write_file(tpath("raw32.bin"), b32, sizeof b32);
	T_OK(mgpu_tokens_load(tpath("raw32.bin"), &o, &s));
	check_windows(&s, MGPU_DTYPE_U32, "raw uint32");
	mgpu_samples_free(&s);
	/* through mgpu-shard's dispatcher: every path is a token file */
	{
		struct mgpu_input_opts io = { .text_context = 3, .tokens = 1 };
		struct mgpu_samples test = { 0 };
		write_file(tpath("ids.csv"), b16, sizeof b16);
		T_OK(mgpu_input_load(tpath("ids.csv"), &io, &s, &test));
		check_windows(&s, MGPU_DTYPE_U16, "dispatcher");
		mgpu_samples_free(&s);
	}
}

static void test_vocab(void)
{
	static unsigned char buf[MGPU_TOKENS_LLMC_HEADER_NBYTES + 4 * NIDS];
	struct mgpu_tokens_opts o = { .context = 3, .vocab = 65535 };
	struct mgpu_samples s = { 0 };

	write_file(tpath("g.bin"), buf, llmc(buf, 1, ids, NIDS, NIDS));
	T_FAILS(mgpu_tokens_load(tpath("g.bin"), &o, &s), MGPU_ERANGE,
		"g.bin': token 65535 at position 2 is not below vocab 65535");
	T_CHECK(s.n == 0, "a refused file appended %zu samples", s.n);
	o.vocab = 65536;
	T_OK(mgpu_tokens_load(tpath("g.bin"), &o, &s));
	mgpu_samples_free(&s);
}

static void test_errors(void)
{
	static unsigned char buf[MGPU_TOKENS_LLMC_HEADER_NBYTES + 4 * NIDS + 1];
	struct mgpu_tokens_opts o = { .context = 3 };
	struct mgpu_samples s = { 0 };
	size_t n;

	n = llmc(buf, 1, ids, NIDS, NIDS);
	write_file(tpath("short.bin"), buf, 100);
	T_FAILS(mgpu_tokens_load(tpath("short.bin"), &o, &s), MGPU_EFORMAT,
		"short.bin': llm.c token file cut short in its header (100 of 1024 bytes)");
	write_file(tpath("cut.bin"), buf, n - 3);
	T_FAILS(mgpu_tokens_load(tpath("cut.bin"), &o, &s), MGPU_EFORMAT,
		"cut.bin': llm.c header says 11 tokens (1046 bytes), the file has 1043 bytes: "
		"cut short");
	llmc(buf, 1, ids, NIDS, NIDS - 1);
	write_file(tpath("long.bin"), buf, n);
	T_FAILS(mgpu_tokens_load(tpath("long.bin"), &o, &s), MGPU_EFORMAT,
		"long.bin': llm.c header says 10 tokens");
	llmc(buf, 3, ids, NIDS, NIDS);
	write_file(tpath("v3.bin"), buf, n);
	T_FAILS(mgpu_tokens_load(tpath("v3.bin"), &o, &s), MGPU_EFORMAT,
		"v3.bin': llm.c token file version 3");
	llmc(buf, 1, ids, NIDS, NIDS);
	write_file(tpath("v1.bin"), buf, n);
	o.token_bytes = 4;
	T_FAILS(mgpu_tokens_load(tpath("v1.bin"), &o, &s), MGPU_EFORMAT,
		"v1.bin': llm.c token file version 1 holds 2-byte ids, not --token-bytes 4");
	o.token_bytes = 0;
	write_file(tpath("odd.bin"), "\001\000\002", 3);
	T_FAILS(mgpu_tokens_load(tpath("odd.bin"), &o, &s), MGPU_EFORMAT,
		"odd.bin': 3 bytes is not a whole number of 2-byte token ids");
	write_file(tpath("few.bin"), "\001\000\002\000\003\000", 6);
	T_FAILS(mgpu_tokens_load(tpath("few.bin"), &o, &s), MGPU_EFORMAT,
		"few.bin': 3 tokens, shorter than one sample of 4 (context 3 + 1)");
	write_file(tpath("empty.bin"), "", 0);
	T_FAILS(mgpu_tokens_load(tpath("empty.bin"), &o, &s), MGPU_EFORMAT,
		"empty.bin': no tokens");
	T_FAILS(mgpu_tokens_load("/nonexistent.bin", &o, &s), MGPU_EIO, "/nonexistent.bin");
	T_CHECK(s.n == 0 && s.dtype == 0, "output touched by a failure");
}

int main(void)
{
	if (t_tmpdir_make("tokens") < 0)
		return 1;
	T_RUN(test_llmc);
	T_RUN(test_raw);
	T_RUN(test_vocab);
	T_RUN(test_errors);
	t_tmpdir_remove();
	return T_DONE();
}
