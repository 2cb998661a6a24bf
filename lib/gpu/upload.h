/*
 * upload.h - a model's input batches on their way to the device, through
 * two page-locked host buffers taken in turn.
 *
 * cudaMemcpyAsync from pageable memory returns only once the driver has
 * staged the bytes, and may wait for the stream first: a training step's
 * upload would stall the host that should be queueing the step. Here the
 * caller writes a batch into one page-locked buffer and queues its copies
 * from there, which return at once; the next batch goes into the other
 * buffer while the device may still be copying this one. An event recorded
 * after a buffer's copies guards it: the host waits for that event (done
 * long before, in a running loop) only when it takes the buffer again,
 * two batches later.
 *
 * Host-memory devices (cpu, ref) take the same calls with plain buffers:
 * their copies are done on return, so the CPU tests run this code.
 *
 * Invariants: one struct per model, used by one thread. Between begin and
 * end the caller writes only the buffer begin returned; copies go through
 * mgpu_dev_from_host (counted in the device's h2d counters) on the
 * device's one stream, so the work queued after them sees the bytes.
 */
#ifndef MGPU_GPU_UPLOAD_H
#define MGPU_GPU_UPLOAD_H

#include <stddef.h> /* size_t */

#include "ops/ops.h" /* struct mgpu_dev */

struct mgpu_upload {
	struct mgpu_dev *dev;
	size_t cap;        /* bytes of each buffer */
	char *buf[2];
	int cur;           /* the buffer begin returned last */
	void *impl;        /* cuda: one event per buffer; NULL on host devices */
};

/* Two buffers of cap bytes for dev (page-locked for a GPU). */
int mgpu_upload_open(struct mgpu_upload *u, struct mgpu_dev *dev, size_t cap);
/* The buffer the next batch goes into, once the copies that last read it
 * are done. */
int mgpu_upload_begin(struct mgpu_upload *u, char **host);
/* Queue device dst = the buffer's bytes [off, off + nbytes). */
int mgpu_upload_copy(struct mgpu_upload *u, void *dst, size_t off, size_t nbytes);
/* The batch's copies are queued: the buffer is busy until they are done. */
int mgpu_upload_end(struct mgpu_upload *u);
/* Waits for queued copies, then frees (errors ignored). */
void mgpu_upload_close(struct mgpu_upload *u);

#endif
