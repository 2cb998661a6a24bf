/*
 * rdzv.c - TCP rendezvous (see rdzv.h).
 *
 * Messages are fixed-size structs with explicit little-endian 32-bit
 * fields, sent whole; a peer that sends less within the timeout is dropped.
 */
#include "comm/rdzv.h"

#include <arpa/inet.h>   /* inet_pton, htons */
#include <errno.h>       /* errno */
#include <netdb.h>       /* getaddrinfo */
#include <netinet/in.h>  /* sockaddr_in */
#include <netinet/tcp.h> /* TCP_NODELAY */
#include <poll.h>        /* poll */
#include <stdio.h>       /* snprintf */
#include <string.h>      /* memcpy, memset */
#include <sys/random.h>  /* getrandom */
#include <sys/socket.h>  /* socket, bind, listen, accept */
#include <time.h>        /* clock_gettime, nanosleep */
#include <unistd.h>      /* close, gethostname */

#include "core/clock.h" /* mgpu_now_ms */
#include "core/err.h" /* mgpu_err */

#define MAGIC "MGPURDV1"

enum { ST_OK = 0, ST_TOKEN = 1, ST_RANK = 2, ST_WORLD = 3, ST_DUP = 4 };

struct hello {
	char magic[8];
	char token[MGPU_TOKEN_LEN];
	uint32_t rank, world;
	char host[64];
};

struct reply {
	char magic[8];
	uint32_t status;
	uint32_t single_node;
	char shm_name[64];
	uint8_t nccl_id[128];
};

/* Read or write exactly n bytes before deadline (ms on the monotonic clock). */
static int xfer(int fd, void *buf, size_t n, int writing, double deadline)
{
	char *p = buf;
	struct pollfd pfd = { .fd = fd, .events = writing ? POLLOUT : POLLIN };
	ssize_t k;
	int left;

	while (n > 0) {
		left = (int)(deadline - mgpu_now_ms());
		if (left <= 0 || poll(&pfd, 1, left) <= 0)
			return -1;
		k = writing ? send(fd, p, n, MSG_NOSIGNAL) : recv(fd, p, n, 0);
		if (k <= 0) {
			if (k < 0 && (errno == EINTR || errno == EAGAIN))
				continue;
			return -1;
		}
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

static int resolve(const char *addr, int port, struct sockaddr_in *sa)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM }, *res;

	memset(sa, 0, sizeof *sa);
	sa->sin_family = AF_INET;
	sa->sin_port = htons((uint16_t)port);
	if (inet_pton(AF_INET, addr, &sa->sin_addr) == 1)
		return 0;
	if (getaddrinfo(addr, NULL, &hints, &res) != 0 || !res)
		return mgpu_err(MGPU_EINVAL, "rendezvous: cannot resolve '%s'", addr);
	sa->sin_addr = ((struct sockaddr_in *)res->ai_addr)->sin_addr;
	freeaddrinfo(res);
	return 0;
}

int mgpu_rdzv_listen(const char *addr, int *port, int *fd)
{
	struct sockaddr_in sa;
	socklen_t len = sizeof sa;
	int s, one = 1;

	MGPU_TRY(resolve(addr, *port, &sa));
	s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return mgpu_err_errno(MGPU_EIO, "rendezvous: socket");
	setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (bind(s, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(s, 64) != 0) {
		mgpu_err_errno(MGPU_EIO, "rendezvous: cannot listen on %s:%d", addr, *port);
		close(s);
		return MGPU_EIO;
	}
	getsockname(s, (struct sockaddr *)&sa, &len);
	*port = ntohs(sa.sin_port);
	*fd = s;
	return 0;
}

static void my_host(char host[64])
{
	memset(host, 0, 64);
	if (gethostname(host, 63) != 0)
		snprintf(host, 64, "?");
}

/* Check one hello; ST_OK records the rank as joined. */
static int judge(const struct hello *h, int world, const char *token, char *joined)
{
	char want[MGPU_TOKEN_LEN] = { 0 };
	unsigned diff = 0;
	size_t i;

	memcpy(want, token, strnlen(token, sizeof want));
	for (i = 0; i < sizeof want; i++) /* constant time: no early exit */
		diff |= (unsigned)(want[i] ^ h->token[i]);
	if (memcmp(h->magic, MAGIC, 8) != 0 || diff)
		return ST_TOKEN;
	if ((int)h->world != world)
		return ST_WORLD;
	if (h->rank < 1 || (int)h->rank >= world)
		return ST_RANK;
	if (joined[h->rank])
		return ST_DUP;
	joined[h->rank] = 1;
	return ST_OK;
}

/* Serve one connection: read its hello, answer it; 1 when a rank joined. */
static int serve_one(int c, int world, const char *token, struct mgpu_rdzv_info *info,
		     char *joined, const char *host0)
{
	struct hello h;
	struct reply rep;
	double deadline = mgpu_now_ms() + 5000;
	int st;

	if (xfer(c, &h, sizeof h, 0, deadline) != 0)
		return 0;
	st = judge(&h, world, token, joined);
	h.host[63] = '\0';
	if (st == ST_OK && strcmp(h.host, host0) != 0)
		info->single_node = 0;
	memset(&rep, 0, sizeof rep);
	memcpy(rep.magic, MAGIC, 8);
	rep.status = (uint32_t)st;
	rep.single_node = (uint32_t)info->single_node;
	memcpy(rep.shm_name, info->shm_name, sizeof rep.shm_name);
	memcpy(rep.nccl_id, info->nccl_id, sizeof rep.nccl_id);
	if (xfer(c, &rep, sizeof rep, 1, deadline) != 0 && st == ST_OK)
		joined[h.rank] = 0;
	return st == ST_OK && joined[h.rank];
}

int mgpu_rdzv_serve(int listen_fd, int world, const char *token,
		    struct mgpu_rdzv_info *info, int timeout_ms)
{
	struct pollfd pfd = { .fd = listen_fd, .events = POLLIN };
	char joined[4096] = { 0 }, host0[64];
	double deadline = mgpu_now_ms() + timeout_ms;
	int n = 1, c, left, k;

	if (world > (int)sizeof joined)
		return mgpu_err(MGPU_EINVAL, "rendezvous: world size %d too large", world);
	my_host(host0);
	info->single_node = 1;
	while (n < world) {
		left = (int)(deadline - mgpu_now_ms());
		k = left > 0 ? poll(&pfd, 1, left) : 0;
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return mgpu_err(MGPU_ETIMEOUT, "rendezvous: %d of %d ranks joined within "
					"%d s", n, world, timeout_ms / 1000);
		c = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
		if (c < 0)
			continue;
		n += serve_one(c, world, token, info, joined, host0);
		close(c);
	}
	return 0;
}

static int connect_retry(const struct sockaddr_in *sa, const char *addr, int port,
			 double deadline)
{
	struct timespec nap = { 0, 50 * 1000000 };
	int s, one = 1;

	for (;;) {
		s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (s < 0)
			return mgpu_err_errno(MGPU_EIO, "rendezvous: socket");
		if (connect(s, (const struct sockaddr *)sa, sizeof *sa) == 0) {
			setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
			return s;
		}
		close(s);
		if (mgpu_now_ms() > deadline)
			return mgpu_err_errno(MGPU_ETIMEOUT, "rendezvous: cannot reach rank 0 "
					      "at %s:%d", addr, port);
		nanosleep(&nap, NULL);
	}
}

static const char *refusal(uint32_t st)
{
	switch (st) {
	case ST_TOKEN: return "bad job token (set the same MGPU_JOB_TOKEN on every rank)";
	case ST_WORLD: return "another world size";
	case ST_RANK: return "rank out of range";
	case ST_DUP: return "rank already joined";
	}
	return "unknown refusal";
}

int mgpu_rdzv_join(const char *addr, int port, int rank, int world, const char *token,
		   struct mgpu_rdzv_info *info, int timeout_ms)
{
	struct sockaddr_in sa;
	struct hello h;
	struct reply rep;
	double deadline = mgpu_now_ms() + timeout_ms;
	int s, rc;

	MGPU_TRY(resolve(addr, port, &sa));
	s = connect_retry(&sa, addr, port, deadline);
	if (s < 0)
		return s;
	memset(&h, 0, sizeof h);
	memcpy(h.magic, MAGIC, 8);
	memcpy(h.token, token, strnlen(token, sizeof h.token));
	h.rank = (uint32_t)rank;
	h.world = (uint32_t)world;
	my_host(h.host);
	rc = xfer(s, &h, sizeof h, 1, deadline) || xfer(s, &rep, sizeof rep, 0, deadline);
	close(s);
	if (rc || memcmp(rep.magic, MAGIC, 8) != 0)
		return mgpu_err(MGPU_EPEER, "rendezvous at %s:%d: no answer from rank 0", addr,
				port);
	if (rep.status != ST_OK)
		return mgpu_err(MGPU_EINVAL, "rendezvous at %s:%d refused rank %d: %s", addr,
				port, rank, refusal(rep.status));
	memcpy(info->shm_name, rep.shm_name, sizeof info->shm_name);
	info->shm_name[sizeof info->shm_name - 1] = '\0';
	memcpy(info->nccl_id, rep.nccl_id, sizeof info->nccl_id);
	info->single_node = (int)rep.single_node;
	return 0;
}

int mgpu_rdzv_new_token(char token[MGPU_TOKEN_LEN + 1])
{
	unsigned char r[16];
	int i;

	if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r)
		return mgpu_err_errno(MGPU_EIO, "rendezvous: no random bytes for a token");
	memset(token, 0, MGPU_TOKEN_LEN + 1);
	for (i = 0; i < 16; i++)
		snprintf(token + 2 * i, 3, "%02x", r[i]);
	return 0;
}
