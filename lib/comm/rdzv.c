/*
 * rdzv.c - TCP rendezvous (see rdzv.h).
 *
 * Messages are fixed-size structs of 32-bit fields in host byte order (the
 * ranks of a job run one build on one kind of machine), sent whole; a peer
 * that sends less within the timeout is dropped. Every wait polls in
 * slices of SLICE_MS, so a stop request (core/cancel.h) ends it at once.
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

#include "core/cancel.h" /* mgpu_cancel_check */
#include "core/clock.h" /* mgpu_now_ms */
#include "core/err.h" /* mgpu_err */

#define MAGIC "MGPURDV3"
#define SLICE_MS 100

/* ST_IDENT: the hello's run identity differs from rank 0's; ST_ABORT:
 * another rank's did, the job is off. Both come with reply.why. */
enum { ST_OK = 0, ST_TOKEN = 1, ST_RANK = 2, ST_WORLD = 3, ST_DUP = 4, ST_IDENT = 5,
       ST_ABORT = 6 };

struct hello {
	char magic[8];
	char token[MGPU_TOKEN_LEN];
	uint32_t rank, world, local_world;
	char host[64];
	char ident[MGPU_IDENT_LEN];
};

struct reply {
	char magic[8];
	uint32_t status;
	uint32_t single_node;
	char shm_name[64];
	uint8_t nccl_id[128];
	char why[1024];
};

/* poll() for at most SLICE_MS of what is left before deadline: > 0 ready,
 * 0 nothing yet (call again), MGPU_ETIMEOUT past the deadline, MGPU_EINTR
 * on a stop request. */
static int poll_slice(struct pollfd *pfd, double deadline)
{
	int left = (int)(deadline - mgpu_now_ms()), k;

	MGPU_TRY(mgpu_cancel_check());
	if (left <= 0)
		return MGPU_ETIMEOUT;
	k = poll(pfd, 1, left < SLICE_MS ? left : SLICE_MS);
	return k < 0 && errno != EINTR ? MGPU_EIO : k < 0 ? 0 : k;
}

/* Read or write exactly n bytes before deadline (ms on the monotonic
 * clock): 0, -1 when the peer went away, MGPU_ETIMEOUT, or MGPU_EINTR on
 * a stop request. */
static int xfer(int fd, void *buf, size_t n, int writing, double deadline)
{
	char *p = buf;
	struct pollfd pfd = { .fd = fd, .events = writing ? POLLOUT : POLLIN };
	ssize_t k;
	int rc;

	while (n > 0) {
		rc = poll_slice(&pfd, deadline);
		if (rc == MGPU_EINTR || rc == MGPU_ETIMEOUT)
			return rc;
		if (rc == 0)
			continue;
		if (rc < 0)
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
static int judge(const struct hello *h, int world, int local_world, const char *token,
		 const char *ident, char *joined)
{
	char want[MGPU_TOKEN_LEN] = { 0 };
	unsigned diff = 0;
	size_t i;

	memcpy(want, token, strnlen(token, sizeof want));
	for (i = 0; i < sizeof want; i++) /* constant time: no early exit */
		diff |= (unsigned)(want[i] ^ h->token[i]);
	if (memcmp(h->magic, MAGIC, 8) != 0 || diff)
		return ST_TOKEN;
	if ((int)h->world != world || (int)h->local_world != local_world)
		return ST_WORLD;
	if (h->rank < 1 || (int)h->rank >= world)
		return ST_RANK;
	if (joined[h->rank])
		return ST_DUP;
	if (strncmp(h->ident, ident, sizeof h->ident) != 0)
		return ST_IDENT;
	joined[h->rank] = 1;
	return ST_OK;
}

/* A rank whose connection stays open: a leader of another node. */
static int is_leader(int rank, int world, int local_world)
{
	return local_world < world && rank > 0 && rank % local_world == 0;
}

static int send_reply(int c, int st, const struct mgpu_rdzv_info *info, const char *why,
		      double deadline)
{
	struct reply rep;

	memset(&rep, 0, sizeof rep);
	snprintf(rep.why, sizeof rep.why, "%s", why ? why : "");
	memcpy(rep.magic, MAGIC, 8);
	rep.status = (uint32_t)st;
	rep.single_node = (uint32_t)info->single_node;
	memcpy(rep.shm_name, info->shm_name, sizeof rep.shm_name);
	memcpy(rep.nccl_id, info->nccl_id, sizeof rep.nccl_id);
	return xfer(c, &rep, sizeof rep, 1, deadline);
}

/* The job is off: tell every rank that joined why, and close. */
static void abort_all(int world, const struct mgpu_rdzv_info *info, int *conn,
		      const char *why)
{
	double deadline = mgpu_now_ms() + 5000;
	int r;

	for (r = 1; r < world; r++) {
		if (conn[r] < 0)
			continue;
		if (why)
			send_reply(conn[r], ST_ABORT, info, why, deadline);
		close(conn[r]);
		conn[r] = -1;
	}
}

/* A rank runs another job than rank 0's: the error both sides report. */
static int mismatch(const struct hello *h, int local_world, const char *ident,
		    const char *host0, char *why, size_t len)
{
	char d[600];

	mgpu_rdzv_ident_differs(h->ident, ident, d, sizeof d);
	snprintf(why, len, "rank %u (node %u, host %.63s) does not run rank 0's job (host "
		 "%.63s): %s; every rank of a job needs the same settings and data",
		 h->rank, h->rank / (uint32_t)local_world, h->host, host0, d);
	return mgpu_err(MGPU_EINVAL, "%s", why);
}

/* Read one connection's hello: the rank it joins as (its connection kept
 * in conn[]), -1 after refusing it, or an error that ends the rendezvous
 * (MGPU_EINVAL: the rank runs another job; why holds the message). */
static int admit(int c, int world, int local_world, const char *token, const char *ident,
		 struct mgpu_rdzv_info *info, char *joined, int *conn, const char *host0,
		 char *why, size_t len)
{
	struct hello h;
	double deadline = mgpu_now_ms() + 5000;
	int st, rc;

	rc = xfer(c, &h, sizeof h, 0, deadline);
	if (rc != 0) {
		close(c);
		return rc == MGPU_EINTR ? rc : -1;
	}
	h.host[63] = '\0';
	h.ident[sizeof h.ident - 1] = '\0';
	st = judge(&h, world, local_world, token, ident, joined);
	if (st == ST_IDENT) {
		rc = mismatch(&h, local_world, ident, host0, why, len);
		send_reply(c, st, info, why, deadline);
		close(c);
		return rc;
	}
	if (st != ST_OK) {
		send_reply(c, st, info, NULL, deadline);
		close(c);
		return -1;
	}
	if (strcmp(h.host, host0) != 0)
		info->single_node = 0;
	conn[h.rank] = c;
	return (int)h.rank;
}

/* Everyone joined: answer each; keep the leaders' connections. */
static void answer_all(int world, int local_world, struct mgpu_rdzv_info *info, int *conn)
{
	double deadline = mgpu_now_ms() + 5000;
	int r, one = 1;

	info->nleader_fds = local_world < world ? world / local_world : 0;
	for (r = 0; r < info->nleader_fds; r++)
		info->leader_fd[r] = -1;
	for (r = 1; r < world; r++) {
		if (send_reply(conn[r], ST_OK, info, NULL, deadline) == 0 &&
		    is_leader(r, world, local_world)) {
			setsockopt(conn[r], IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
			info->leader_fd[r / local_world] = conn[r];
		} else {
			close(conn[r]);
		}
		conn[r] = -1;
	}
}

int mgpu_rdzv_serve(int listen_fd, int world, int local_world, const char *token,
		    const char *ident, struct mgpu_rdzv_info *info, int timeout_ms)
{
	struct pollfd pfd = { .fd = listen_fd, .events = POLLIN };
	static int conn[4096];
	char joined[4096] = { 0 }, host0[64], why[1024];
	double deadline = mgpu_now_ms() + timeout_ms;
	int n = 1, c, k, r;

	if (world > (int)sizeof joined)
		return mgpu_err(MGPU_EINVAL, "rendezvous: world size %d too large", world);
	if (local_world < 1 || world % local_world || world / local_world > MGPU_MAX_NODES)
		return mgpu_err(MGPU_EINVAL, "rendezvous: %d ranks do not make nodes of %d (at "
				"most %d nodes)", world, local_world, MGPU_MAX_NODES);
	my_host(host0);
	info->single_node = 1;
	for (r = 0; r < world; r++)
		conn[r] = -1;
	if (!ident)
		ident = "";
	while (n < world) {
		k = poll_slice(&pfd, deadline);
		if (k == 0)
			continue;
		if (k == MGPU_EINTR) {
			abort_all(world, info, conn, NULL);
			return k;
		}
		if (k < 0) {
			abort_all(world, info, conn, NULL);
			return mgpu_err(MGPU_ETIMEOUT, "rendezvous: %d of %d ranks joined within "
					"%d s", n, world, timeout_ms / 1000);
		}
		c = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
		if (c < 0)
			continue;
		k = admit(c, world, local_world, token, ident, info, joined, conn, host0, why,
			  sizeof why);
		if (k < -1) { /* -1: a refused hello, go on */
			abort_all(world, info, conn, k == MGPU_EINVAL ? why : NULL);
			return k;
		}
		n += k > 0;
	}
	answer_all(world, local_world, info, conn);
	return 0;
}

void mgpu_rdzv_close_leaders(struct mgpu_rdzv_info *info)
{
	int i;

	for (i = 0; i < info->nleader_fds; i++)
		if (info->leader_fd[i] >= 0)
			close(info->leader_fd[i]);
	info->nleader_fds = 0;
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
		MGPU_TRY(mgpu_cancel_check());
		nanosleep(&nap, NULL);
	}
}

static const char *refusal(uint32_t st)
{
	switch (st) {
	case ST_TOKEN: return "bad job token (set the same MGPU_JOB_TOKEN on every rank)";
	case ST_WORLD: return "another world size or number of ranks per node";
	case ST_RANK: return "rank out of range";
	case ST_DUP: return "rank already joined";
	case ST_IDENT: case ST_ABORT: return "another rank runs another job";
	}
	return "unknown refusal";
}

int mgpu_rdzv_join(const char *addr, int port, int rank, int world, int local_world,
		   const char *token, const char *ident, struct mgpu_rdzv_info *info,
		   int timeout_ms)
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
	h.local_world = (uint32_t)local_world;
	my_host(h.host);
	snprintf(h.ident, sizeof h.ident, "%s", ident ? ident : "");
	rc = xfer(s, &h, sizeof h, 1, deadline);
	if (rc == 0)
		rc = xfer(s, &rep, sizeof rep, 0, deadline);
	info->nleader_fds = 0;
	if (rc == MGPU_EINTR) {
		close(s);
		return mgpu_cancel_check();
	}
	if (rc == 0 && rep.status == ST_OK && is_leader(rank, world, local_world)) {
		info->nleader_fds = 1;
		info->leader_fd[0] = s;
	} else {
		close(s);
	}
	if (rc == MGPU_ETIMEOUT)
		return mgpu_err(MGPU_EPEER, "rendezvous at %s:%d: no answer from rank 0 within "
				"%d s", addr, port, timeout_ms / 1000);
	if (rc || memcmp(rep.magic, MAGIC, 8) != 0) {
		mgpu_rdzv_close_leaders(info);
		return mgpu_err(MGPU_EPEER, "rendezvous at %s:%d: rank 0 went away without an "
				"answer (see its own error)", addr, port);
	}
	rep.why[sizeof rep.why - 1] = '\0';
	if (rep.status != ST_OK)
		return mgpu_err(MGPU_EINVAL, "rendezvous at %s:%d refused rank %d: %s", addr,
				port, rank, rep.why[0] ? rep.why : refusal(rep.status));
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

/* The line of text at *p (without its newline), and p moved past it. */
static size_t next_line(const char **p, const char **line)
{
	const char *e = strchr(*p, '\n');
	size_t n = e ? (size_t)(e - *p) : strlen(*p);

	*line = *p;
	*p += n + (e != NULL);
	return n;
}

int mgpu_rdzv_ident_differs(const char *a, const char *b, char *buf, size_t len)
{
	const char *la, *lb, *key;
	size_t na, nb, k;

	while (*a || *b) {
		na = next_line(&a, &la);
		nb = next_line(&b, &lb);
		if (na == nb && memcmp(la, lb, na) == 0)
			continue;
		key = na ? la : lb;
		k = strcspn(key, " \n");
		/* the values after the key, or the whole line where keys differ */
		if (na > k && nb > k && memcmp(la, lb, k) == 0 && la[k] == ' ' && lb[k] == ' ')
			snprintf(buf, len, "%.*s %.*s against %.*s", (int)k, key,
				 (int)(na - k - 1), la + k + 1, (int)(nb - k - 1), lb + k + 1);
		else
			snprintf(buf, len, "'%.*s' against '%.*s'", (int)na, la, (int)nb, lb);
		return 1;
	}
	if (len)
		buf[0] = '\0';
	return 0;
}
