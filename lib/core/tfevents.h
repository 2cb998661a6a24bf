/*
 * tfevents.h - TensorBoard event files: scalars and text a training run
 * writes for `tensorboard --logdir`.
 *
 * An event file is a TFRecord stream: each record is a little-endian
 * uint64 length, the masked CRC32C of those 8 bytes, the data and the
 * masked CRC32C of the data (mask: rotate right 15, add 0xa282ead8). The
 * data is an `Event` protobuf (tensorflow/core/util/event.proto): the
 * first carries file_version "brain.Event:2", the others a `Summary` of
 * one value, a simple_value scalar or a text tensor (plugin "text",
 * DT_STRING). The few fields are encoded here by hand; nothing needs
 * protoc or a protobuf library.
 *
 * Records go to a buffer and reach the file at mgpu_tb_flush, in one
 * write() followed by fdatasync: a crash loses what was not flushed (the
 * caller flushes at each evaluation) and at worst leaves a torn last
 * record, which TensorBoard's reader skips. Single-threaded; nothing
 * here prints or exits.
 */
#ifndef MGPU_CORE_TFEVENTS_H
#define MGPU_CORE_TFEVENTS_H

#include <stddef.h> /* size_t */
#include <stdint.h> /* uint32_t, int64_t */

struct mgpu_tb {
	int fd;              /* -1: closed */
	char path[4200];     /* the event file */
	unsigned char *buf;  /* records not yet written */
	size_t len, cap;
};

/* CRC32C (Castagnoli, reflected polynomial 0x82f63b78) of n bytes,
 * continuing crc (0 to start): crc32c("123456789") = 0xe3069283. */
uint32_t mgpu_crc32c(uint32_t crc, const void *p, size_t n);
/* The TFRecord mask of a CRC. */
uint32_t mgpu_tb_mask(uint32_t crc);

/* Make dir (mkdir -p) and a new event file in it,
 * events.out.tfevents.SECONDS.HOST.PID, starting with the file_version
 * event (written at once). */
int mgpu_tb_open(struct mgpu_tb *tb, const char *dir, double wall_time);
/* A scalar value called tag at step. */
int mgpu_tb_scalar(struct mgpu_tb *tb, const char *tag, int64_t step, double wall_time,
		   double value);
/* A text value (Markdown, as TensorBoard's text tab renders it). */
int mgpu_tb_text(struct mgpu_tb *tb, const char *tag, int64_t step, double wall_time,
		 const char *text);
/* Write the buffered records and fdatasync. */
int mgpu_tb_flush(struct mgpu_tb *tb);
/* Flush and close; safe on a closed one. The first error is returned. */
int mgpu_tb_close(struct mgpu_tb *tb);

#endif
