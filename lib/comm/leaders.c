/*
 * leaders.c - sums between node leaders over TCP (see leaders.h).
 */
#include "comm/leaders.h"

#include <errno.h>      /* errno, EINTR */
#include <poll.h>       /* poll */
#include <stdlib.h>     /* malloc, free */
#include <string.h>     /* memset */
#include <sys/socket.h> /* send, recv */
#include <unistd.h>     /* close */

#include "core/cancel.h" /* mgpu_cancel_check_grace */
#include "core/clock.h" /* mgpu_now_ms */
#include "core/err.h"   /* mgpu_err */

#define CHUNK_BYTES ((size_t)1 << 20)

int mgpu_leaders_open(struct mgpu_leaders *l, struct mgpu_rdzv_info *info, int node,
		      int nnodes, int local_world, int timeout_ms)
{
	int i, want = node == 0 ? nnodes : 1;

	memset(l, 0, sizeof *l);
	l->node = node;
	l->nnodes = nnodes;
	l->local_world = local_world;
	l->timeout_ms = timeout_ms;
	for (i = 0; i < MGPU_MAX_NODES; i++)
		l->fd[i] = -1;
	if (nnodes < 1 || nnodes > MGPU_MAX_NODES || info->nleader_fds < want) {
		mgpu_rdzv_close_leaders(info);
		return mgpu_err(MGPU_EINVAL, "leaders: node %d of %d has %d connections", node,
				nnodes, info->nleader_fds);
	}
	for (i = 0; i < want; i++)
		l->fd[i] = info->leader_fd[i];
	info->nleader_fds = 0;
	if (node == 0 && !(l->chunk = malloc(CHUNK_BYTES))) {
		mgpu_leaders_close(l);
		return mgpu_err(MGPU_ENOMEM, "leaders: out of memory");
	}
	return 0;
}

/* The peer at the other end of fd[k], for messages. */
static int peer_node(const struct mgpu_leaders *l, int k)
{
	return l->node == 0 ? k : 0;
}

/* Move n bytes on fd[k] before the timeout; errors name the peer node. */
static int xfer(struct mgpu_leaders *l, int k, void *buf, size_t n, int writing)
{
	struct pollfd pfd = { .fd = l->fd[k], .events = writing ? POLLOUT : POLLIN };
	double deadline = mgpu_now_ms() + l->timeout_ms;
	int node = peer_node(l, k), left, rc;
	char *p = buf;
	ssize_t got;

	while (n > 0) {
		MGPU_TRY(mgpu_cancel_check_grace());
		left = (int)(deadline - mgpu_now_ms());
		rc = left > 0 ? poll(&pfd, 1, left < 100 ? left : 100) : 0;
		if ((rc < 0 && errno == EINTR) || (rc == 0 && left > 100))
			continue;
		if (rc == 0)
			return mgpu_err(MGPU_ETIMEOUT, "node %d (rank %d) did not answer the "
					"node leaders' all-reduce within %d s", node,
					node * l->local_world, l->timeout_ms / 1000);
		got = writing ? send(l->fd[k], p, n, MSG_NOSIGNAL) : recv(l->fd[k], p, n, 0);
		if (got < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (got <= 0)
			return mgpu_err(MGPU_EPEER, "node %d (rank %d) went away: its connection "
					"closed during the node leaders' all-reduce", node,
					node * l->local_world);
		p += got;
		n -= (size_t)got;
		deadline = mgpu_now_ms() + l->timeout_ms; /* progress: silence is what counts */
	}
	return 0;
}

/* Node 0: add node k's n values of esize bytes to buf, reading in chunks. */
static int add_from(struct mgpu_leaders *l, int k, void *buf, size_t n, size_t esize)
{
	size_t per = CHUNK_BYTES / esize, m, i;

	for (; n > 0; n -= m) {
		m = n < per ? n : per;
		MGPU_TRY(xfer(l, k, l->chunk, m * esize, 0));
		if (esize == sizeof(float))
			for (i = 0; i < m; i++)
				((float *)buf)[i] += ((const float *)l->chunk)[i];
		else
			for (i = 0; i < m; i++)
				((double *)buf)[i] += ((const double *)l->chunk)[i];
		buf = (char *)buf + m * esize;
	}
	return 0;
}

static int allreduce(struct mgpu_leaders *l, void *buf, size_t n, size_t esize)
{
	int k;

	if (l->nnodes == 1)
		return 0;
	if (l->node != 0) {
		MGPU_TRY(xfer(l, 0, buf, n * esize, 1));
		return xfer(l, 0, buf, n * esize, 0);
	}
	for (k = 1; k < l->nnodes; k++) /* node order: the same sum every run */
		MGPU_TRY(add_from(l, k, buf, n, esize));
	for (k = 1; k < l->nnodes; k++)
		MGPU_TRY(xfer(l, k, buf, n * esize, 1));
	return 0;
}

int mgpu_leaders_allreduce_f32(struct mgpu_leaders *l, float *buf, size_t n)
{
	return allreduce(l, buf, n, sizeof(float));
}

int mgpu_leaders_allreduce_f64(struct mgpu_leaders *l, double *buf, size_t n)
{
	return allreduce(l, buf, n, sizeof(double));
}

int mgpu_leaders_bcast_f32(struct mgpu_leaders *l, float *buf, size_t n)
{
	int k;

	if (l->node != 0)
		return l->nnodes > 1 ? xfer(l, 0, buf, n * sizeof(float), 0) : 0;
	for (k = 1; k < l->nnodes; k++)
		MGPU_TRY(xfer(l, k, buf, n * sizeof(float), 1));
	return 0;
}

void mgpu_leaders_close(struct mgpu_leaders *l)
{
	int i;

	for (i = 0; i < MGPU_MAX_NODES; i++)
		if (l->fd[i] >= 0) {
			close(l->fd[i]);
			l->fd[i] = -1;
		}
	free(l->chunk);
	l->chunk = NULL;
}
