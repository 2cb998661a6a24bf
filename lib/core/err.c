/*
 * err.c - thread-local error message storage (see err.h).
 */
#include "core/err.h"

#include <errno.h>  /* errno */
#include <stdarg.h> /* va_list */
#include <stdio.h>  /* vsnprintf */
#include <string.h> /* strerror_r */

#define MSG_MAX 1024

static _Thread_local char msg[MSG_MAX];

int mgpu_err(int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return code;
}

int mgpu_err_errno(int code, const char *fmt, ...)
{
	int saved = errno;
	char buf[256];
	va_list ap;
	size_t len;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	len = strlen(msg);
	snprintf(buf, sizeof buf, "%s", strerror(saved));
	snprintf(msg + len, sizeof msg - len, ": %s", buf);
	return code;
}

int mgpu_err_prefix(int code, const char *fmt, ...)
{
	char old[MSG_MAX];
	va_list ap;
	size_t len;

	memcpy(old, msg, sizeof old);
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	len = strlen(msg);
	snprintf(msg + len, sizeof msg - len, "%s", old);
	return code;
}

const char *mgpu_errmsg(void)
{
	return msg;
}

void mgpu_err_clear(void)
{
	msg[0] = '\0';
}

const char *mgpu_strerror(int code)
{
	switch (code) {
	case MGPU_OK: return "success";
	case MGPU_EIO: return "i/o error";
	case MGPU_EFORMAT: return "format error";
	case MGPU_ENOMEM: return "out of memory";
	case MGPU_EINVAL: return "invalid argument";
	case MGPU_EDEVICE: return "device error";
	case MGPU_EUNSUP: return "not supported by this build";
	case MGPU_ERANGE: return "value out of range";
	case MGPU_ETIMEOUT: return "timed out";
	case MGPU_EPEER: return "peer failed";
	case MGPU_EINTR: return "interrupted";
	case MGPU_ECLOSED: return "output closed";
	}
	return "unknown error";
}
