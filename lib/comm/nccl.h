/*
 * nccl.h - the NCCL side of gradient synchronisation (GPU ranks).
 *
 * One communicator per rank, on a communication stream of its own: each
 * bucket's all-reduce (sum, in place, on the device gradient) waits for the
 * compute stream through an event and then runs while backward continues.
 * The communicator is non-blocking, so every wait polls
 * ncclCommGetAsyncError and gives up after the timeout (aborting the
 * communicator) instead of hanging. In builds without NCCL every function
 * fails with MGPU_EUNSUP.
 */
#ifndef MGPU_COMM_NCCL_H
#define MGPU_COMM_NCCL_H

#include <stddef.h> /* size_t */
#include <stdint.h> /* uint8_t, uint16_t */

#include "ops/ops.h" /* struct mgpu_dev */

#ifdef __cplusplus
extern "C" {
#endif

/* Rank 0: a fresh unique id (128 bytes) to hand to every rank. */
int mgpu_nccl_unique_id(uint8_t id[128]);
/* Join the communicator of world ranks on device dev. */
int mgpu_nccl_open(void **st, struct mgpu_dev *dev, int rank, int world,
		   const uint8_t id[128], int timeout_ms);
/* All-reduce (sum) n floats of dev in place, after the work queued so far. */
int mgpu_nccl_bucket(void *st, struct mgpu_dev *dev, float *buf, size_t n);
/* The same for n bfloat16 values (--grad-dtype bf16, ncclBfloat16). */
int mgpu_nccl_bucket_bf16(void *st, struct mgpu_dev *dev, uint16_t *buf, size_t n);
/* Sum n floats of dev in place over the ranks between two ops of the
 * compute stream (BatchNorm's statistics, --sync-bn): on the communication
 * stream after the work queued so far, in issue order with the buckets,
 * and the compute stream waits for it on the device; the host does not
 * wait (a dead peer is seen by the step's closing read). */
int mgpu_nccl_allreduce_inline(void *st, struct mgpu_dev *dev, float *buf, size_t n);
/* Make the compute stream wait for every bucket; scale is applied later.
 * The host waits too, watching for errors and the timeout. */
int mgpu_nccl_wait(void *st, struct mgpu_dev *dev);
/* The same without the host wait: the compute stream waits on the device,
 * and the next mgpu_nccl_allreduce_stats waits (watching) for it all. */
int mgpu_nccl_join(void *st, struct mgpu_dev *dev);
/* Sum the n (<= 16) device doubles v_dev over the ranks in place, after
 * the work queued on the compute stream so far; host[k0..n) replace
 * v_dev[k0..n) first, and host[0..n) = the sums on return (through
 * page-locked memory: the one blocking read of a training step). */
int mgpu_nccl_allreduce_stats(void *st, struct mgpu_dev *dev, double *v_dev, double *host,
			      int k0, int n);
/* Sum n (<= 16) host doubles over the ranks. */
int mgpu_nccl_allreduce_f64(void *st, struct mgpu_dev *dev, double *v, int n);
void mgpu_nccl_abort(void *st);
void mgpu_nccl_close(void *st);

#ifdef __cplusplus
}
#endif

#endif
