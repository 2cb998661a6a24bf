/*
 * err.h - error codes and the per-thread error message of libmgpu.
 *
 * Library functions return 0 or a negative MGPU_E* code and never exit or
 * print. The failing function records a one-line message with mgpu_err();
 * callers pass failures up with MGPU_TRY and the tool prints mgpu_errmsg().
 * The message buffer is thread-local, so rank threads do not clobber it.
 */
#ifndef MGPU_CORE_ERR_H
#define MGPU_CORE_ERR_H

#ifdef __cplusplus
extern "C" { /* C linkage when included by the CUDA (C++) backend */
#endif

enum {
	MGPU_OK = 0,
	MGPU_EIO = -1,      /* open/read/write/rename failed */
	MGPU_EFORMAT = -2,  /* outside data is malformed */
	MGPU_ENOMEM = -3,   /* host or device allocation failed */
	MGPU_EINVAL = -4,   /* bad argument or option value */
	MGPU_EDEVICE = -5,  /* CUDA, cuBLAS or NCCL reported an error */
	MGPU_EUNSUP = -6,   /* backend or feature absent from this build */
	MGPU_ERANGE = -7,   /* value out of range (label, shape) */
	MGPU_ETIMEOUT = -8, /* a peer did not answer in time */
	MGPU_EPEER = -9,    /* a peer rank failed */
	MGPU_EINTR = -10,   /* interrupted by a signal */
	MGPU_ECLOSED = -11, /* the reader of the output went away */
};

#if defined(__GNUC__)
#define MGPU_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define MGPU_PRINTF(a, b)
#endif

/* Store the formatted message and return code, for `return mgpu_err(...)`. */
int mgpu_err(int code, const char *fmt, ...) MGPU_PRINTF(2, 3);
/* Same, appending ": strerror(errno)". */
int mgpu_err_errno(int code, const char *fmt, ...) MGPU_PRINTF(2, 3);
/* Prefix the stored message with more context ("'file': " + old message). */
int mgpu_err_prefix(int code, const char *fmt, ...) MGPU_PRINTF(2, 3);
/* The last stored message of this thread ("" when none). */
const char *mgpu_errmsg(void);
/* Forget the stored message. */
void mgpu_err_clear(void);
/* A short name for a code ("format error"). */
const char *mgpu_strerror(int code);

#define MGPU_TRY(expr)                  \
	do {                            \
		int mgpu_try_rc_ = (expr); \
		if (mgpu_try_rc_ < 0)      \
			return mgpu_try_rc_; \
	} while (0)

/* Inside functions with one cleanup label: set rc and jump to out. */
#define MGPU_CHECK(expr)          \
	do {                      \
		rc = (expr);      \
		if (rc < 0)       \
			goto out; \
	} while (0)

#ifdef __cplusplus
}
#endif

#endif
