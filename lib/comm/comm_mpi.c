/*
 * comm_mpi.c - MPI between node leaders and between benchmark ranks (see
 * mpi.h). The one file that includes mpi.h; without MPI in the build every
 * entry point says so.
 */
#include "comm/mpi.h"

#include "config.h" /* MGPU_HAVE_MPI */

#include <stdlib.h> /* calloc, free */

#include "comm/rdzv.h" /* mgpu_rdzv_ident_differs, MGPU_IDENT_LEN */
#include "core/err.h" /* mgpu_err */

#if MGPU_HAVE_MPI
#include <limits.h> /* INT_MAX */
#include <mpi.h>    /* MPI_* */
#include <sched.h>  /* sched_yield */
#include <stdio.h>  /* snprintf */
#include <time.h>   /* nanosleep */
#include <unistd.h> /* gethostname */

#include "core/clock.h" /* mgpu_now_ms */

/* Elements per MPI call: counts are int. */
#define CHUNK ((size_t)1 << 28)
/* Started sums not yet waited for (a bucket is one, or one per CHUNK). */
#define MAX_PENDING 512

struct mgpu_mpi {
	MPI_Comm leaders;       /* MPI_COMM_NULL on other ranks */
	int rank, size;         /* in MPI_COMM_WORLD */
	int lrank, lsize;       /* in leaders, or -1 / 0 */
	int timeout_ms;
	int we_init;            /* this open called MPI_Init */
	MPI_Request pend[MAX_PENDING]; /* mgpu_mpi_iallreduce_f32's, in start order */
	int npend;
};

int mgpu_mpi_in_build(void)
{
	return 1;
}

const char *mgpu_mpi_version(void)
{
	static char v[MPI_MAX_LIBRARY_VERSION_STRING];
	int len = 0, i;

	if (!v[0] && MPI_Get_library_version(v, &len) == MPI_SUCCESS)
		for (i = 0; v[i]; i++) /* the first line only */
			if (v[i] == '\n' || v[i] == ',')
				v[i] = '\0';
	return v;
}

static int mpi_fail(int code, const char *what)
{
	char msg[MPI_MAX_ERROR_STRING] = "";
	int len = 0;

	MPI_Error_string(code, msg, &len);
	return mgpu_err(MGPU_EPEER, "mpi: %s failed: %s", what, msg);
}

/* Wait for the n requests of reqs, polling: spin briefly, then yield, then
 * nap, so that ranks sharing cores leave them to the rank that has work. */
static int wait_reqs(struct mgpu_mpi *m, int n, MPI_Request *reqs, const char *what)
{
	struct timespec nap = { 0, 200 * 1000 };
	double t0 = mgpu_now_ms();
	int done = 0, rc, k;

	for (k = 0;; k++) {
		rc = MPI_Testall(n, reqs, &done, MPI_STATUSES_IGNORE);
		if (rc != MPI_SUCCESS)
			return mpi_fail(rc, what);
		if (done)
			return 0;
		if (k < 1000)
			continue;
		if (mgpu_now_ms() - t0 > m->timeout_ms)
			return mgpu_err(MGPU_ETIMEOUT, "mpi: %s: no answer from the other ranks "
					"within %d s", what, m->timeout_ms / 1000);
		if (k < 5000)
			sched_yield();
		else
			nanosleep(&nap, NULL);
	}
}

static int wait_req(struct mgpu_mpi *m, MPI_Request *req, const char *what)
{
	return wait_reqs(m, 1, req, what);
}

int mgpu_mpi_open(struct mgpu_mpi **out, int leader, int timeout_ms)
{
	struct mgpu_mpi *m = calloc(1, sizeof *m);
	int inited = 0, provided = 0, rc;

	*out = NULL;
	if (!m)
		return mgpu_err(MGPU_ENOMEM, "mpi: out of memory");
	m->timeout_ms = timeout_ms;
	m->leaders = MPI_COMM_NULL;
	MPI_Initialized(&inited);
	if (!inited) {
		rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided);
		if (rc != MPI_SUCCESS) {
			free(m);
			return mpi_fail(rc, "MPI_Init_thread");
		}
		m->we_init = 1;
		/* errors come back as codes, so they get mgpu's messages */
		MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	}
	MPI_Comm_rank(MPI_COMM_WORLD, &m->rank);
	MPI_Comm_size(MPI_COMM_WORLD, &m->size);
	rc = MPI_Comm_split(MPI_COMM_WORLD, leader ? 0 : MPI_UNDEFINED, m->rank, &m->leaders);
	if (rc != MPI_SUCCESS) {
		rc = mpi_fail(rc, "MPI_Comm_split"); /* its text: MPI is still up */
		mgpu_mpi_close(m);
		return rc;
	}
	m->lrank = -1;
	if (m->leaders != MPI_COMM_NULL) {
		MPI_Comm_set_errhandler(m->leaders, MPI_ERRORS_RETURN);
		MPI_Comm_rank(m->leaders, &m->lrank);
		MPI_Comm_size(m->leaders, &m->lsize);
	}
	*out = m;
	return 0;
}

int mgpu_mpi_world_rank(const struct mgpu_mpi *m) { return m->rank; }
int mgpu_mpi_world_size(const struct mgpu_mpi *m) { return m->size; }
int mgpu_mpi_leader_rank(const struct mgpu_mpi *m) { return m->lrank; }
int mgpu_mpi_leader_count(const struct mgpu_mpi *m) { return m->lsize; }

int mgpu_mpi_barrier(struct mgpu_mpi *m)
{
	MPI_Request req;
	int rc = MPI_Ibarrier(MPI_COMM_WORLD, &req);

	return rc != MPI_SUCCESS ? mpi_fail(rc, "barrier") : wait_req(m, &req, "barrier");
}

static int leaders_only(const struct mgpu_mpi *m, const char *what)
{
	if (m->leaders == MPI_COMM_NULL)
		return mgpu_err(MGPU_EINVAL, "mpi: %s on rank %d, which is no node leader", what,
				m->rank);
	return 0;
}

static int allreduce(struct mgpu_mpi *m, void *buf, size_t n, MPI_Datatype t, size_t esize)
{
	MPI_Request req;
	char *p = buf;
	size_t k;
	int rc;

	MGPU_TRY(leaders_only(m, "all-reduce"));
	for (; n > 0; n -= k, p += k * esize) {
		k = n < CHUNK ? n : CHUNK;
		rc = MPI_Iallreduce(MPI_IN_PLACE, p, (int)k, t, MPI_SUM, m->leaders, &req);
		if (rc != MPI_SUCCESS)
			return mpi_fail(rc, "all-reduce");
		MGPU_TRY(wait_req(m, &req, "all-reduce"));
	}
	return 0;
}

int mgpu_mpi_allreduce_f32(struct mgpu_mpi *m, float *buf, size_t n)
{
	return allreduce(m, buf, n, MPI_FLOAT, sizeof(float));
}

int mgpu_mpi_allreduce_f64(struct mgpu_mpi *m, double *buf, size_t n)
{
	return allreduce(m, buf, n, MPI_DOUBLE, sizeof(double));
}

int mgpu_mpi_iallreduce_f32(struct mgpu_mpi *m, float *buf, size_t n)
{
	size_t k;
	int rc;

	MGPU_TRY(leaders_only(m, "all-reduce"));
	for (; n > 0; n -= k, buf += k) {
		k = n < CHUNK ? n : CHUNK;
		if (m->npend == MAX_PENDING)
			MGPU_TRY(mgpu_mpi_wait_all(m));
		rc = MPI_Iallreduce(MPI_IN_PLACE, buf, (int)k, MPI_FLOAT, MPI_SUM, m->leaders,
				    &m->pend[m->npend]);
		if (rc != MPI_SUCCESS)
			return mpi_fail(rc, "all-reduce");
		m->npend++;
	}
	return 0;
}

int mgpu_mpi_progress(struct mgpu_mpi *m)
{
	int done = 0, rc;

	if (m->npend == 0)
		return 0;
	rc = MPI_Testall(m->npend, m->pend, &done, MPI_STATUSES_IGNORE);
	if (rc != MPI_SUCCESS)
		return mpi_fail(rc, "all-reduce");
	if (done)
		m->npend = 0;
	return 0;
}

int mgpu_mpi_wait_all(struct mgpu_mpi *m)
{
	int n = m->npend;

	m->npend = 0;
	return n ? wait_reqs(m, n, m->pend, "all-reduce") : 0;
}

int mgpu_mpi_bcast_f32(struct mgpu_mpi *m, float *buf, size_t n)
{
	MPI_Request req;
	size_t k;
	int rc;

	MGPU_TRY(leaders_only(m, "broadcast"));
	for (; n > 0; n -= k, buf += k) {
		k = n < CHUNK ? n : CHUNK;
		rc = MPI_Ibcast(buf, (int)k, MPI_FLOAT, 0, m->leaders, &req);
		if (rc != MPI_SUCCESS)
			return mpi_fail(rc, "broadcast");
		MGPU_TRY(wait_req(m, &req, "broadcast"));
	}
	return 0;
}

/* A world broadcast of n bytes from root, waited for within the timeout. */
static int bcast_bytes(struct mgpu_mpi *m, void *buf, int n, int root, const char *what)
{
	MPI_Request req;
	int rc = MPI_Ibcast(buf, n, MPI_CHAR, root, MPI_COMM_WORLD, &req);

	return rc != MPI_SUCCESS ? mpi_fail(rc, what) : wait_req(m, &req, what);
}

int mgpu_mpi_same_ident(struct mgpu_mpi *m, const char *ident, int local_world)
{
	static char first[MGPU_IDENT_LEN + 64];
	char diff[600 + 64], host[64] = "?"; /* the difference, then its host */
	MPI_Request req;
	int bad, worst, rc;

	/* rank 0's identity and host, then the first rank that differs */
	gethostname(host, sizeof host - 1);
	snprintf(first, sizeof first, "%.63s", host);
	if (m->rank == 0)
		snprintf(first + 64, MGPU_IDENT_LEN, "%s", ident ? ident : "");
	MGPU_TRY(bcast_bytes(m, first, (int)sizeof first, 0, "run identity"));
	bad = mgpu_rdzv_ident_differs(ident ? ident : "", first + 64, diff, 600) ?
		      m->rank : m->size;
	rc = MPI_Iallreduce(&bad, &worst, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD, &req);
	MGPU_TRY(rc != MPI_SUCCESS ? mpi_fail(rc, "run identity") :
				     wait_req(m, &req, "run identity"));
	if (worst >= m->size)
		return 0;
	if (m->rank == worst) /* its view of the difference, to every rank */
		snprintf(diff + 600, 64, "%.63s", host);
	MGPU_TRY(bcast_bytes(m, diff, (int)sizeof diff, worst, "run identity"));
	return mgpu_err(MGPU_EINVAL, "rank %d (node %d, host %s) does not run rank 0's job "
			"(host %s): %.600s; every rank of a job needs the same settings and "
			"data", worst, worst / (local_world > 0 ? local_world : 1),
			diff + 600, first, diff);
}

void mgpu_mpi_abort(struct mgpu_mpi *m, int code)
{
	(void)m;
	MPI_Abort(MPI_COMM_WORLD, code);
}

void mgpu_mpi_close(struct mgpu_mpi *m)
{
	if (!m)
		return;
	if (m->leaders != MPI_COMM_NULL)
		MPI_Comm_free(&m->leaders);
	if (m->we_init)
		MPI_Finalize();
	free(m);
}

#else /* !MGPU_HAVE_MPI */

struct mgpu_mpi {
	int unused;
};

static int absent(void)
{
	return mgpu_err(MGPU_EUNSUP, "MPI is not in this build (built without mpicc; "
			"install libopenmpi-dev and rebuild)");
}

int mgpu_mpi_in_build(void) { return 0; }
const char *mgpu_mpi_version(void) { return ""; }

int mgpu_mpi_open(struct mgpu_mpi **out, int leader, int timeout_ms)
{
	(void)leader, (void)timeout_ms;
	*out = NULL;
	return absent();
}

int mgpu_mpi_world_rank(const struct mgpu_mpi *m) { (void)m; return -1; }
int mgpu_mpi_world_size(const struct mgpu_mpi *m) { (void)m; return 0; }
int mgpu_mpi_leader_rank(const struct mgpu_mpi *m) { (void)m; return -1; }
int mgpu_mpi_leader_count(const struct mgpu_mpi *m) { (void)m; return 0; }
int mgpu_mpi_barrier(struct mgpu_mpi *m) { (void)m; return absent(); }

int mgpu_mpi_allreduce_f32(struct mgpu_mpi *m, float *buf, size_t n)
{
	(void)m, (void)buf, (void)n;
	return absent();
}

int mgpu_mpi_allreduce_f64(struct mgpu_mpi *m, double *buf, size_t n)
{
	(void)m, (void)buf, (void)n;
	return absent();
}

int mgpu_mpi_bcast_f32(struct mgpu_mpi *m, float *buf, size_t n)
{
	(void)m, (void)buf, (void)n;
	return absent();
}

int mgpu_mpi_same_ident(struct mgpu_mpi *m, const char *ident, int local_world)
{
	(void)m, (void)ident, (void)local_world;
	return absent();
}

int mgpu_mpi_iallreduce_f32(struct mgpu_mpi *m, float *buf, size_t n)
{
	(void)m, (void)buf, (void)n;
	return absent();
}

int mgpu_mpi_progress(struct mgpu_mpi *m) { (void)m; return absent(); }
int mgpu_mpi_wait_all(struct mgpu_mpi *m) { (void)m; return absent(); }

void mgpu_mpi_abort(struct mgpu_mpi *m, int code) { (void)m, (void)code; }
void mgpu_mpi_close(struct mgpu_mpi *m) { free(m); }

#endif
