/*
 * stage.h - copies of gradient buckets between a device and a range of
 * host memory (the ranks' shared segment), on a copy stream of their own.
 *
 * For a GPU (cuda backend) the host range is page-locked once with
 * cudaHostRegister, so that cudaMemcpyAsync to and from it is truly
 * asynchronous (to pageable memory it would block the host). A copy to the
 * host starts once the work queued on the device's compute stream so far
 * is done (an event recorded there, waited for on the copy stream): the
 * caller queues it right after the backward of a bucket and goes on
 * queueing the rest of backward. Each such copy is tracked by a ticket
 * (an event); copies to the device run on the same copy stream in order.
 *
 * For host-memory devices (cpu, ref) every copy is done on return and
 * every ticket is complete, so the code above runs, and is tested, on CPU
 * ranks too.
 *
 * Invariants: one struct per rank, used by one thread. Host pointers must
 * lie inside the range given to mgpu_stage_open (checked: MGPU_EINVAL).
 * Before the host reads a bucket it waited for (done/wait) that bucket's
 * ticket; before it reuses memory a copy to the device reads, and before
 * the device's later work may use what was copied, mgpu_stage_drain.
 * Close before the host range is unmapped.
 */
#ifndef MGPU_GPU_STAGE_H
#define MGPU_GPU_STAGE_H

#include <stddef.h> /* size_t */

#include "ops/ops.h" /* struct mgpu_dev */

#define MGPU_STAGE_MAX_TICKETS 64

struct mgpu_stage {
	struct mgpu_dev *dev;
	char *host;                 /* the range copies go to and come from */
	size_t nbytes;
	int ntickets;
	void *impl;                 /* cuda: copy stream, events; NULL on host devices */
};

/* Prepare copies between dev and host[0, nbytes) with ntickets tickets
 * (1 to MGPU_STAGE_MAX_TICKETS). For a GPU, host should start on a page
 * boundary (an mmap'd segment): the pages it touches are registered. */
int mgpu_stage_open(struct mgpu_stage *st, struct mgpu_dev *dev, void *host, size_t nbytes,
		    int ntickets);
/* Queue dst_host[0, nbytes) = device src after the compute work queued so
 * far; ticket says when it is done. */
int mgpu_stage_to_host(struct mgpu_stage *st, int ticket, void *dst_host, const void *src,
		       size_t nbytes);
/* 1 when the copy of ticket is done, 0 when not yet, < 0 on a device error. */
int mgpu_stage_done(struct mgpu_stage *st, int ticket);
/* Block until the copy of ticket is done. */
int mgpu_stage_wait(struct mgpu_stage *st, int ticket);
/* Queue device dst[0, nbytes) = src_host, after the copies queued before. */
int mgpu_stage_to_dev(struct mgpu_stage *st, void *dst, const void *src_host, size_t nbytes);
/* Block until every queued copy is done: the host may reuse the range, and
 * work queued on the device from now on sees what was copied. */
int mgpu_stage_drain(struct mgpu_stage *st);
/* Release streams, events and the registration (errors ignored). */
void mgpu_stage_close(struct mgpu_stage *st);

#endif
