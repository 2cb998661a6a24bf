/*
 * test_tfevents.c - TensorBoard event files (core/tfevents.h): CRC32C
 * against the published check values (RFC 3720 B.4 and the "123456789"
 * check), the mask, and the TFRecord framing and Event encoding of a
 * written file byte by byte.
 */
#include <stdint.h> /* uint32_t */
#include <stdlib.h> /* free */
#include <string.h> /* memcmp, memset, strstr */
#include <dirent.h> /* opendir */

#include "../t.h"          /* T_RUN, T_CHECK, T_OK */
#include "../tmpdir.h"     /* t_tmpdir_make, tpath */
#include "core/err.h"      /* mgpu_errmsg */
#include "core/io.h"       /* mgpu_read_file */
#include "core/tfevents.h" /* mgpu_crc32c, mgpu_tb_* */

static void test_crc32c(void)
{
	unsigned char b[32];
	int i;

	T_CHECK(mgpu_crc32c(0, "123456789", 9) == 0xe3069283u, "check value %08x",
		mgpu_crc32c(0, "123456789", 9));
	memset(b, 0, sizeof b);
	T_CHECK(mgpu_crc32c(0, b, 32) == 0x8a9136aau, "32 zeros: %08x", mgpu_crc32c(0, b, 32));
	memset(b, 0xff, sizeof b);
	T_CHECK(mgpu_crc32c(0, b, 32) == 0x62a8ab43u, "32 ones: %08x", mgpu_crc32c(0, b, 32));
	for (i = 0; i < 32; i++)
		b[i] = (unsigned char)i;
	T_CHECK(mgpu_crc32c(0, b, 32) == 0x46dd794eu, "ascending: %08x", mgpu_crc32c(0, b, 32));
	for (i = 0; i < 32; i++)
		b[i] = (unsigned char)(31 - i);
	T_CHECK(mgpu_crc32c(0, b, 32) == 0x113fdb5cu, "descending: %08x", mgpu_crc32c(0, b, 32));
	/* in pieces: the same as at once */
	T_CHECK(mgpu_crc32c(mgpu_crc32c(0, "1234", 4), "56789", 5) == 0xe3069283u, "continued");
	T_CHECK(mgpu_crc32c(0, "", 0) == 0, "empty");
	/* the mask: rotate right 15, add 0xa282ead8 */
	T_CHECK(mgpu_tb_mask(0) == 0xa282ead8u, "mask(0) %08x", mgpu_tb_mask(0));
	T_CHECK(mgpu_tb_mask(0x00008000u) == 0xa282ead9u, "mask(1 << 15) %08x",
		mgpu_tb_mask(0x00008000u));
	T_CHECK(mgpu_tb_mask(1) == 0xa282ead8u + 0x20000u, "mask(1) %08x", mgpu_tb_mask(1));
}

static uint64_t le(const unsigned char *p, int n)
{
	uint64_t v = 0;

	while (n--)
		v = v << 8 | p[n];
	return v;
}

/* The record at *at of buf (len bytes): its data and length, the framing
 * checked. */
static const unsigned char *next_record(const unsigned char *buf, size_t len, size_t *at,
					size_t *n)
{
	const unsigned char *h = buf + *at;

	T_CHECK(*at + 12 <= len, "no header at %zu of %zu", *at, len);
	if (*at + 12 > len)
		return NULL;
	*n = (size_t)le(h, 8);
	T_CHECK(le(h + 8, 4) == mgpu_tb_mask(mgpu_crc32c(0, h, 8)), "header crc");
	T_CHECK(*at + 16 + *n <= len, "record of %zu past the end", *n);
	if (*at + 16 + *n > len)
		return NULL;
	T_CHECK(le(h + 12 + *n, 4) == mgpu_tb_mask(mgpu_crc32c(0, h + 12, *n)), "data crc");
	*at += 16 + *n;
	return h + 12;
}

static void test_file(void)
{
	static const unsigned char version[] = {
		0x09, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f,          /* wall_time 1.0 */
		0x1a, 13, 'b', 'r', 'a', 'i', 'n', '.', 'E', 'v', 'e', 'n', 't', ':', '2',
	};
	static const unsigned char scalar[] = {
		0x09, 0, 0, 0, 0, 0, 0, 0xe0, 0x3f,          /* wall_time 0.5 */
		0x10, 0x96, 0x01,                            /* step 150 */
		0x2a, 10, 0x0a, 8,                           /* summary { value { */
		0x0a, 1, 'a', 0x15, 0, 0, 0x80, 0x3f,        /* tag "a", simple_value 1 */
	};
	static const unsigned char text[] = {
		0x09, 0, 0, 0, 0, 0, 0, 0, 0x40,             /* wall_time 2.0 */
		0x10, 0x02,                                  /* step 2 */
		0x2a, 26, 0x0a, 24,                          /* summary { value { */
		0x0a, 1, 's',                                /* tag "s" */
		0x42, 9, 0x08, 7, 0x12, 0, 0x42, 3, 'h', 'i', '!', /* tensor: DT_STRING, shape {}, "hi!" */
		0x4a, 8, 0x0a, 6, 0x0a, 4, 't', 'e', 'x', 't', /* metadata { plugin_data { "text" } } */
	};
	struct mgpu_tb tb;
	unsigned char *buf = NULL;
	const unsigned char *d;
	size_t len = 0, at = 0, n = 0;
	struct dirent *de;
	char path[4200] = "";
	DIR *dir;

	T_OK(mgpu_tb_open(&tb, tpath("tb/run"), 1.0));
	T_CHECK(strstr(tb.path, "/events.out.tfevents.1.") != NULL, "file name %s", tb.path);
	snprintf(path, sizeof path, "%s", tb.path);
	T_OK(mgpu_tb_scalar(&tb, "a", 150, 0.5, 1.0));
	T_OK(mgpu_read_file(path, &buf, &len));
	T_CHECK(len == 16 + sizeof version, "before the flush the file holds %zu bytes", len);
	free(buf);
	T_OK(mgpu_tb_text(&tb, "s", 2, 2.0, "hi!"));
	T_OK(mgpu_tb_flush(&tb));
	T_OK(mgpu_tb_close(&tb));
	T_OK(mgpu_tb_close(&tb)); /* twice: a no-op */
	T_OK(mgpu_read_file(path, &buf, &len));
	d = next_record(buf, len, &at, &n);
	T_CHECK(d && n == sizeof version && memcmp(d, version, n) == 0, "file_version event");
	d = next_record(buf, len, &at, &n);
	T_CHECK(d && n == sizeof scalar && memcmp(d, scalar, n) == 0, "scalar event (%zu bytes)", n);
	d = next_record(buf, len, &at, &n);
	T_CHECK(d && n == sizeof text && memcmp(d, text, n) == 0, "text event (%zu bytes)", n);
	T_CHECK(at == len, "%zu bytes after the records", len - at);
	free(buf);
	dir = opendir(tpath("tb/run"));
	n = 0;
	while (dir && (de = readdir(dir)))
		n += de->d_name[0] != '.';
	if (dir)
		closedir(dir);
	T_CHECK(n == 1, "%zu files in the log dir", n);
	T_CHECK(mgpu_tb_open(&tb, "/proc/no/such", 1.0) < 0, "a dir that cannot be made");
}

int main(void)
{
	if (t_tmpdir_make("tfevents") < 0)
		return 1;
	T_RUN(test_crc32c);
	T_RUN(test_file);
	t_tmpdir_remove();
	return T_DONE();
}
