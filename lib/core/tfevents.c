/*
 * tfevents.c - TensorBoard event files (see tfevents.h): CRC32C, the
 * TFRecord framing and a minimal protobuf encoder of Event, Summary and
 * its scalar and text values.
 *
 * Field numbers, from tensorflow/core/util/event.proto and
 * tensorflow/core/framework/{summary,tensor,tensor_shape}.proto:
 *   Event:           1 wall_time (double), 2 step (int64),
 *                    3 file_version (string), 5 summary (Summary)
 *   Summary:         1 value (repeated Value)
 *   Summary.Value:   1 tag, 2 simple_value (float), 8 tensor (TensorProto),
 *                    9 metadata (SummaryMetadata)
 *   SummaryMetadata: 1 plugin_data (PluginData: 1 plugin_name)
 *   TensorProto:     1 dtype (DT_STRING = 7), 2 tensor_shape (empty:
 *                    a scalar), 8 string_val (repeated bytes)
 */
#include "core/tfevents.h"

#include <errno.h>    /* errno, EINTR */
#include <fcntl.h>    /* open */
#include <stdio.h>    /* snprintf */
#include <stdlib.h>   /* realloc, free */
#include <string.h>   /* memcpy, strlen */
#include <unistd.h>   /* write, fdatasync, close, gethostname, getpid */

#include "core/err.h" /* mgpu_err */
#include "core/io.h"  /* mgpu_mkdirs */

uint32_t mgpu_crc32c(uint32_t crc, const void *p, size_t n)
{
	static uint32_t table[256];
	const unsigned char *b = p;
	uint32_t c;
	int i, k;

	if (!table[1]) /* filled once; the same values from any thread */
		for (i = 0; i < 256; i++) {
			c = (uint32_t)i;
			for (k = 0; k < 8; k++)
				c = c & 1 ? (c >> 1) ^ 0x82f63b78u : c >> 1;
			table[i] = c;
		}
	crc = ~crc;
	while (n--)
		crc = table[(crc ^ *b++) & 0xff] ^ (crc >> 8);
	return ~crc;
}

uint32_t mgpu_tb_mask(uint32_t crc)
{
	return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

/* A growing byte buffer for one message; ok drops to 0 on no memory. */
struct pb {
	unsigned char *b;
	size_t len, cap;
	int ok;
};

static void put(struct pb *m, const void *p, size_t n)
{
	if (!m->ok || n == 0) /* an empty string may come as NULL: memcpy must not see it */
		return;
	if (m->len + n > m->cap) {
		size_t cap = m->cap ? m->cap : 64;
		unsigned char *nb;
		while (cap < m->len + n)
			cap *= 2;
		nb = realloc(m->b, cap);
		if (!nb) {
			m->ok = 0;
			return;
		}
		m->b = nb;
		m->cap = cap;
	}
	memcpy(m->b + m->len, p, n);
	m->len += n;
}

static void varint(struct pb *m, uint64_t v)
{
	unsigned char b[10];
	size_t n = 0;

	do {
		b[n++] = (unsigned char)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
		v >>= 7;
	} while (v);
	put(m, b, n);
}

enum { WT_VARINT = 0, WT_64 = 1, WT_LEN = 2, WT_32 = 5 };

static void key(struct pb *m, int field, int wt)
{
	varint(m, (uint64_t)field << 3 | (uint64_t)wt);
}

static void bytes(struct pb *m, int field, const void *p, size_t n)
{
	key(m, field, WT_LEN);
	varint(m, n);
	put(m, p, n);
}

static void sub(struct pb *m, int field, struct pb *inner)
{
	bytes(m, field, inner->b, inner->len);
	m->ok &= inner->ok;
	free(inner->b);
	*inner = (struct pb){ .ok = 1 };
}

static void le(unsigned char *b, uint64_t v, int n)
{
	int i;

	for (i = 0; i < n; i++)
		b[i] = (unsigned char)(v >> (8 * i));
}

static void f64(struct pb *m, int field, double v)
{
	unsigned char b[8];
	uint64_t u;

	memcpy(&u, &v, 8);
	le(b, u, 8);
	key(m, field, WT_64);
	put(m, b, 8);
}

static void f32(struct pb *m, int field, float v)
{
	unsigned char b[4];
	uint32_t u;

	memcpy(&u, &v, 4);
	le(b, u, 4);
	key(m, field, WT_32);
	put(m, b, 4);
}

/* An Event with what (a Summary, or NULL for the file_version event) as
 * one TFRecord appended to tb's buffer. */
static int record(struct mgpu_tb *tb, int64_t step, double wall_time, struct pb *summary)
{
	struct pb ev = { .ok = 1 }, rec = { .b = tb->buf, .len = tb->len, .cap = tb->cap, .ok = 1 };
	unsigned char hdr[12], crc[4];

	f64(&ev, 1, wall_time);
	if (step) /* proto3: a zero is left out */
		key(&ev, 2, WT_VARINT), varint(&ev, (uint64_t)step);
	if (summary)
		sub(&ev, 5, summary);
	else
		bytes(&ev, 3, "brain.Event:2", 13);
	le(hdr, ev.len, 8);
	le(hdr + 8, mgpu_tb_mask(mgpu_crc32c(0, hdr, 8)), 4);
	le(crc, mgpu_tb_mask(mgpu_crc32c(0, ev.b, ev.len)), 4);
	put(&rec, hdr, 12);
	put(&rec, ev.b, ev.len);
	put(&rec, crc, 4);
	tb->buf = rec.b;
	tb->cap = rec.cap;
	free(ev.b);
	if (!rec.ok || !ev.ok)
		return mgpu_err(MGPU_ENOMEM, "'%s': out of memory", tb->path);
	tb->len = rec.len;
	return 0;
}

int mgpu_tb_scalar(struct mgpu_tb *tb, const char *tag, int64_t step, double wall_time,
		   double value)
{
	struct pb val = { .ok = 1 }, sum = { .ok = 1 };

	bytes(&val, 1, tag, strlen(tag));
	f32(&val, 2, (float)value);
	sub(&sum, 1, &val);
	return record(tb, step, wall_time, &sum);
}

int mgpu_tb_text(struct mgpu_tb *tb, const char *tag, int64_t step, double wall_time,
		 const char *text)
{
	struct pb val = { .ok = 1 }, meta = { .ok = 1 }, plugin = { .ok = 1 };
	struct pb tensor = { .ok = 1 }, shape = { .ok = 1 }, sum = { .ok = 1 };

	bytes(&plugin, 1, "text", 4);
	sub(&meta, 1, &plugin);
	key(&tensor, 1, WT_VARINT);
	varint(&tensor, 7); /* DT_STRING */
	sub(&tensor, 2, &shape);
	bytes(&tensor, 8, text, strlen(text));
	bytes(&val, 1, tag, strlen(tag));
	sub(&val, 8, &tensor);
	sub(&val, 9, &meta);
	sub(&sum, 1, &val);
	return record(tb, step, wall_time, &sum);
}

int mgpu_tb_flush(struct mgpu_tb *tb)
{
	size_t at = 0;
	ssize_t n;

	if (tb->fd < 0)
		return 0;
	while (at < tb->len) {
		n = write(tb->fd, tb->buf + at, tb->len - at);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return mgpu_err_errno(MGPU_EIO, "'%s': cannot write", tb->path);
		at += (size_t)n;
	}
	tb->len = 0;
	if (fdatasync(tb->fd) < 0)
		return mgpu_err_errno(MGPU_EIO, "'%s': cannot sync", tb->path);
	return 0;
}

int mgpu_tb_open(struct mgpu_tb *tb, const char *dir, double wall_time)
{
	char host[64] = "localhost";
	int rc;

	memset(tb, 0, sizeof *tb);
	tb->fd = -1;
	MGPU_TRY(mgpu_mkdirs(dir));
	gethostname(host, sizeof host - 1);
	host[sizeof host - 1] = '\0';
	if (snprintf(tb->path, sizeof tb->path, "%s/events.out.tfevents.%lld.%s.%ld", dir,
		     (long long)wall_time, host, (long)getpid()) >= (int)sizeof tb->path)
		return mgpu_err(MGPU_EINVAL, "'%s': path too long", dir);
	tb->fd = open(tb->path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (tb->fd < 0)
		return mgpu_err_errno(MGPU_EIO, "'%s': cannot create", tb->path);
	rc = record(tb, 0, wall_time, NULL);
	if (rc == 0)
		rc = mgpu_tb_flush(tb);
	if (rc < 0) {
		close(tb->fd);
		tb->fd = -1;
		free(tb->buf);
		tb->buf = NULL;
	}
	return rc;
}

int mgpu_tb_close(struct mgpu_tb *tb)
{
	int rc = mgpu_tb_flush(tb);

	if (tb->fd >= 0 && close(tb->fd) < 0 && rc == 0)
		rc = mgpu_err_errno(MGPU_EIO, "'%s': cannot close", tb->path);
	tb->fd = -1;
	free(tb->buf);
	tb->buf = NULL;
	tb->len = tb->cap = 0;
	return rc;
}
