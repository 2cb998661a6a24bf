/*
 * dnnl_call.h - what the cpu backend's two users of oneDNN's C API
 * (conv_cpu.c: convolutions and pooling; bf16_dnnl.c: bf16 matrix
 * products) share: a status check that turns oneDNN's failures into
 * mgpu errors, and the cast its non-const input handles need.
 */
#ifndef MGPU_OPS_DNNL_CALL_H
#define MGPU_OPS_DNNL_CALL_H

#include <dnnl.h>       /* dnnl_status_t */
#include <dnnl_debug.h> /* dnnl_status2str */
#include <stdint.h>     /* uintptr_t */

#include "core/err.h" /* mgpu_err */

/* Run a oneDNN call; on failure return the mgpu error naming it (out of
 * memory as MGPU_ENOMEM, anything else as a device error). */
#define DNNL(expr)                                                                       \
	do {                                                                             \
		dnnl_status_t dn_rc_ = (expr);                                           \
		if (dn_rc_ != dnnl_success)                                              \
			return mgpu_err(dn_rc_ == dnnl_out_of_memory ? MGPU_ENOMEM : MGPU_EDEVICE, \
					"oneDNN: %s failed: %s", #expr,                  \
					dnnl_status2str(dn_rc_));                        \
	} while (0)

/* oneDNN takes inputs through non-const handles and only reads them. */
static inline void *mgpu_dnnl_unconst(const void *p)
{
	return (void *)(uintptr_t)p;
}

#endif
