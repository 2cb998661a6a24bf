/*
 * shm.c - shared-memory segment, barriers and small all-reduces (shm.h).
 */
#include "comm/shm.h"

#include <errno.h>     /* errno, ESRCH */
#include <fcntl.h>     /* O_CREAT, O_EXCL, O_RDWR */
#include <sched.h>     /* sched_yield */
#include <signal.h>    /* kill */
#include <stdatomic.h> /* atomic_load_explicit, atomic_store_explicit */
#include <string.h>    /* memcpy, memset */
#include <sys/mman.h>  /* mmap, shm_open, shm_unlink */
#include <sys/stat.h>  /* fstat */
#include <time.h>      /* clock_gettime, nanosleep */
#include <unistd.h>    /* ftruncate, getpid, close */

#include "core/cancel.h" /* mgpu_cancel_check_grace */
#include "core/clock.h" /* mgpu_now_ms */
#include "core/err.h" /* mgpu_err */

#define MAGIC 0x6d67707573686d31ull /* "mgpushm1" */
#define ALIGN 64

struct slot {
	_Atomic uint64_t v;
	char pad[ALIGN - sizeof(uint64_t)];
};

struct mgpu_shm_ctl {
	uint64_t magic;
	int world, nstate;
	size_t nparams;
	_Atomic int abort_rank;             /* 0: none; r + 1: rank r failed */
	_Atomic int abort_quiet;            /* it failed because its output closed */
	_Atomic int pid[MGPU_SHM_MAX_RANKS];
	struct slot arrive[MGPU_SHM_MAX_RANKS];
	double vals[2][MGPU_SHM_MAX_RANKS][MGPU_SHM_MAX_VALS];
	float fvals[2][MGPU_SHM_MAX_RANKS][MGPU_SHM_MAX_FLOATS]; /* banked as vals */
	struct {
		_Atomic uint64_t n[MGPU_SHM_MAX_BUCKETS];
	} bucket[MGPU_SHM_MAX_RANKS];
};

static size_t round_up(size_t n)
{
	return (n + ALIGN - 1) / ALIGN * ALIGN;
}

size_t mgpu_shm_size(int world, size_t nparams, int nstate)
{
	size_t vec = round_up(nparams * sizeof(float));

	return round_up(sizeof(struct mgpu_shm_ctl)) + vec * (size_t)(1 + nstate + world);
}

static int check_args(int world, int nstate, const char *what)
{
	if (world < 1 || world > MGPU_SHM_MAX_RANKS)
		return mgpu_err(MGPU_EINVAL, "%s: %d ranks (1 to %d)", what, world,
				MGPU_SHM_MAX_RANKS);
	if (nstate < 0 || nstate > 2)
		return mgpu_err(MGPU_EINVAL, "%s: %d state vectors", what, nstate);
	return 0;
}

/* Point the buffers of s into the mapping. */
static void carve(struct mgpu_shm *s)
{
	size_t vec = round_up(s->nparams * sizeof(float));
	char *p = (char *)s->base + round_up(sizeof(struct mgpu_shm_ctl));
	int i;

	s->ctl = s->base;
	s->w = (float *)p;
	p += vec;
	for (i = 0; i < 2; i++) {
		s->state[i] = i < s->nstate ? (float *)p : NULL;
		if (i < s->nstate)
			p += vec;
	}
	for (i = 0; i < s->world; i++, p += vec)
		s->g[i] = (float *)p;
}

static void init_ctl(struct mgpu_shm *s)
{
	memset(s->ctl, 0, sizeof *s->ctl);
	s->ctl->world = s->world;
	s->ctl->nstate = s->nstate;
	s->ctl->nparams = s->nparams;
	atomic_store_explicit(&s->ctl->pid[0], (int)getpid(), memory_order_relaxed);
	atomic_store_explicit((_Atomic uint64_t *)&s->ctl->magic, MAGIC, memory_order_release);
}

static void fill(struct mgpu_shm *s, int rank, int world, size_t nparams, int nstate,
		 int timeout_ms)
{
	memset(s, 0, sizeof *s);
	s->rank = rank;
	s->world = world;
	s->nparams = nparams;
	s->nstate = nstate;
	s->timeout_ms = timeout_ms;
	s->nbytes = mgpu_shm_size(world, nparams, nstate);
}

/* The creator of the existing segment name, when it holds a finished
 * control block: its pid, else 0 (unknown: left alone). */
static int owner_of(const char *name)
{
	struct mgpu_shm_ctl *ctl;
	struct stat st;
	int fd = shm_open(name, O_RDONLY, 0), pid = 0;

	if (fd < 0)
		return 0;
	if (fstat(fd, &st) == 0 && (size_t)st.st_size >= sizeof *ctl) {
		ctl = mmap(NULL, sizeof *ctl, PROT_READ, MAP_SHARED, fd, 0);
		if (ctl != MAP_FAILED) {
			if (atomic_load_explicit((_Atomic uint64_t *)&ctl->magic,
						 memory_order_acquire) == MAGIC)
				pid = atomic_load_explicit(&ctl->pid[0], memory_order_relaxed);
			munmap(ctl, sizeof *ctl);
		}
	}
	close(fd);
	return pid;
}

/* A segment of this name exists: remove it when its creator is gone (a
 * job killed before it could unlink: SIGKILL, a crash), as stale .tmp.PID
 * files are swept; 1 when removed, else 0 with the error set. */
static int sweep_stale(const char *name)
{
	int pid = owner_of(name);

	if (pid > 0 && kill(pid, 0) != 0 && errno == ESRCH)
		return shm_unlink(name) == 0 || errno == ENOENT;
	if (pid > 0)
		mgpu_err(MGPU_EIO, "shared memory '%s' is in use by process %d (another job with "
			 "the same port and job token?)", name, pid);
	else
		mgpu_err(MGPU_EIO, "shared memory '%s': cannot create: File exists (of an "
			 "unknown owner: remove /dev/shm%s when no job uses it)", name, name);
	return 0;
}

int mgpu_shm_create(struct mgpu_shm *s, const char *name, int world, size_t nparams,
		    int nstate, int timeout_ms)
{
	int fd;

	MGPU_TRY(check_args(world, nstate, name));
	fill(s, 0, world, nparams, nstate, timeout_ms);
	fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
	if (fd < 0 && errno == EEXIST) {
		if (!sweep_stale(name))
			return MGPU_EIO;
		fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
	}
	if (fd < 0)
		return mgpu_err_errno(MGPU_EIO, "shared memory '%s': cannot create", name);
	/* tmpfs accepts any ftruncate and raises SIGBUS on the first page past
	 * its limit: reserve the pages now, so a small /dev/shm is an error. */
	if (ftruncate(fd, (off_t)s->nbytes) != 0 ||
	    (errno = posix_fallocate(fd, 0, (off_t)s->nbytes)) != 0) {
		mgpu_err_errno(MGPU_EIO, "shared memory '%s': cannot reserve %zu bytes (is "
			       "/dev/shm large enough?)", name, s->nbytes);
		close(fd);
		shm_unlink(name);
		return MGPU_EIO;
	}
	s->base = mmap(NULL, s->nbytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (s->base == MAP_FAILED) {
		s->base = NULL;
		shm_unlink(name);
		return mgpu_err_errno(MGPU_EIO, "shared memory '%s': cannot map", name);
	}
	s->owner = 1;
	carve(s);
	init_ctl(s);
	return 0;
}

int mgpu_shm_attach(struct mgpu_shm *s, const char *name, int rank, int world,
		    size_t nparams, int nstate, int timeout_ms)
{
	int fd;

	MGPU_TRY(check_args(world, nstate, name));
	fill(s, rank, world, nparams, nstate, timeout_ms);
	fd = shm_open(name, O_RDWR, 0600);
	if (fd < 0)
		return mgpu_err_errno(MGPU_EIO, "shared memory '%s': cannot open", name);
	s->base = mmap(NULL, s->nbytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (s->base == MAP_FAILED) {
		s->base = NULL;
		return mgpu_err_errno(MGPU_EIO, "shared memory '%s': cannot map", name);
	}
	carve(s);
	if (atomic_load_explicit((_Atomic uint64_t *)&s->ctl->magic, memory_order_acquire) !=
		    MAGIC ||
	    s->ctl->world != world || s->ctl->nparams != nparams || s->ctl->nstate != nstate) {
		mgpu_shm_close(s);
		return mgpu_err(MGPU_EFORMAT, "shared memory '%s': made for another job", name);
	}
	atomic_store_explicit(&s->ctl->pid[rank], (int)getpid(), memory_order_release);
	return 0;
}

int mgpu_shm_create_private(struct mgpu_shm *s, int world, size_t nparams, int nstate,
			    int timeout_ms)
{
	MGPU_TRY(check_args(world, nstate, "threads"));
	fill(s, 0, world, nparams, nstate, timeout_ms);
	s->base = mmap(NULL, s->nbytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		       -1, 0);
	if (s->base == MAP_FAILED) {
		s->base = NULL;
		return mgpu_err_errno(MGPU_ENOMEM, "cannot map %zu bytes", s->nbytes);
	}
	s->owner = 1;
	carve(s);
	init_ctl(s);
	return 0;
}

void mgpu_shm_view(struct mgpu_shm *view, const struct mgpu_shm *owner, int rank)
{
	*view = *owner;
	view->rank = rank;
	view->owner = 0;
	view->base = NULL; /* the owner unmaps */
}

void mgpu_shm_close(struct mgpu_shm *s)
{
	if (s->base)
		munmap(s->base, s->nbytes);
	s->base = NULL;
	s->ctl = NULL;
}

int mgpu_shm_unlink(const char *name)
{
	if (shm_unlink(name) != 0 && errno != ENOENT)
		return mgpu_err_errno(MGPU_EIO, "shared memory '%s': cannot remove", name);
	return 0;
}

static void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

/* The first rank for which done() is false, or -1 when all are done. */
typedef int (*pending_fn)(const struct mgpu_shm *s, const void *arg);

static int peer_gone(const struct mgpu_shm *s, int r)
{
	int pid = atomic_load_explicit(&s->ctl->pid[r], memory_order_acquire);
	return pid > 0 && kill(pid, 0) != 0 && errno == ESRCH;
}

/* Spin for the first 50 us, then yield until 2 ms, then sleep in short
 * naps: a peer on another core answers within microseconds, and ranks that
 * outnumber the cores still get the CPU they wait for. */
#define SPIN_MS 0.05
#define YIELD_MS 2.0

static int wait_for(struct mgpu_shm *s, pending_fn pending, const void *arg, const char *what)
{
	struct timespec nap = { 0, 20000 };
	double t0 = mgpu_now_ms(), t, next_check = t0 + 100;
	long iter;
	int r, a;

	for (iter = 0;; iter++) {
		if ((r = pending(s, arg)) < 0)
			return 0;
		if ((iter & 63) != 63) {
			cpu_relax();
			continue;
		}
		a = atomic_load_explicit(&s->ctl->abort_rank, memory_order_acquire);
		if (a > 0 && a - 1 != s->rank)
			return atomic_load_explicit(&s->ctl->abort_quiet, memory_order_acquire) ?
				       mgpu_err(MGPU_ECLOSED, "rank %d: output closed", a - 1) :
				       mgpu_err(MGPU_EPEER, "rank %d failed", a - 1);
		t = mgpu_now_ms();
		if (t >= next_check) {
			if (peer_gone(s, r))
				return mgpu_err(MGPU_EPEER, "rank %d died (%s)", r, what);
			if (mgpu_cancel_check_grace() < 0)
				return mgpu_err(MGPU_EINTR, "interrupted by %s while waiting for "
						"rank %d (%s)", mgpu_signal_name(mgpu_cancel_signal()) ?
						mgpu_signal_name(mgpu_cancel_signal()) : "a signal", r,
						what);
			next_check = t + 100;
		}
		if (t - t0 > s->timeout_ms)
			return mgpu_err(MGPU_ETIMEOUT, "rank %d did not answer within %d s (%s)",
					r, s->timeout_ms / 1000, what);
		if (t - t0 > YIELD_MS)
			nanosleep(&nap, NULL);
		else if (t - t0 > SPIN_MS)
			sched_yield();
	}
}

static int barrier_pending(const struct mgpu_shm *s, const void *arg)
{
	uint64_t gen = *(const uint64_t *)arg;
	int r;

	for (r = 0; r < s->world; r++)
		if (atomic_load_explicit(&s->ctl->arrive[r].v, memory_order_acquire) < gen)
			return r;
	return -1;
}

int mgpu_shm_barrier(struct mgpu_shm *s)
{
	uint64_t gen = ++s->gen;

	atomic_store_explicit(&s->ctl->arrive[s->rank].v, gen, memory_order_release);
	return wait_for(s, barrier_pending, &gen, "barrier");
}

int mgpu_shm_allreduce_f64(struct mgpu_shm *s, double *vals, int n)
{
	double (*bank)[MGPU_SHM_MAX_VALS] = s->ctl->vals[(s->gen + 1) % 2];
	int r, i;

	if (n < 0 || n > MGPU_SHM_MAX_VALS)
		return mgpu_err(MGPU_EINVAL, "all-reduce of %d values (max %d)", n,
				MGPU_SHM_MAX_VALS);
	for (i = 0; i < n; i++)
		bank[s->rank][i] = vals[i];
	MGPU_TRY(mgpu_shm_barrier(s));
	for (i = 0; i < n; i++) {
		vals[i] = 0;
		for (r = 0; r < s->world; r++)
			vals[i] += bank[r][i];
	}
	return 0;
}

/* One chunk of at most MGPU_SHM_MAX_FLOATS: the banks alternate by
 * barrier generation as vals' do, so chunks need no barrier of their own
 * between writing and reading. */
static int allreduce_f32_chunk(struct mgpu_shm *s, float *vals, size_t n)
{
	float (*bank)[MGPU_SHM_MAX_FLOATS] = s->ctl->fvals[(s->gen + 1) % 2];
	double acc;
	size_t i;
	int r;

	memcpy(bank[s->rank], vals, n * sizeof *vals);
	MGPU_TRY(mgpu_shm_barrier(s));
	for (i = 0; i < n; i++) {
		for (acc = 0, r = 0; r < s->world; r++)
			acc += bank[r][i];
		vals[i] = (float)acc;
	}
	return 0;
}

int mgpu_shm_allreduce_f32(struct mgpu_shm *s, float *vals, size_t n)
{
	size_t k;

	for (; n > 0; n -= k, vals += k) {
		k = n < MGPU_SHM_MAX_FLOATS ? n : MGPU_SHM_MAX_FLOATS;
		MGPU_TRY(allreduce_f32_chunk(s, vals, k));
	}
	return 0;
}

void mgpu_shm_bucket_ready(struct mgpu_shm *s, int b)
{
	atomic_store_explicit(&s->ctl->bucket[s->rank].n[b], ++s->bucket_gen[b],
			      memory_order_release);
}

struct bucket_arg {
	int b;
	uint64_t gen;
};

static int bucket_pending(const struct mgpu_shm *s, const void *arg)
{
	const struct bucket_arg *a = arg;
	int r;

	for (r = 0; r < s->world; r++)
		if (atomic_load_explicit(&s->ctl->bucket[r].n[a->b], memory_order_acquire) <
		    a->gen)
			return r;
	return -1;
}

int mgpu_shm_bucket_poll(const struct mgpu_shm *s, int b)
{
	struct bucket_arg a = { b, s->bucket_gen[b] };

	return bucket_pending(s, &a) < 0;
}

int mgpu_shm_bucket_wait(struct mgpu_shm *s, int b)
{
	struct bucket_arg a = { b, s->bucket_gen[b] };

	return wait_for(s, bucket_pending, &a, "gradient bucket");
}

static void shard_of(const struct mgpu_shm *s, int r, size_t n, size_t *a, size_t *e)
{
	*a = n * (size_t)r / (size_t)s->world;
	*e = n * (size_t)(r + 1) / (size_t)s->world;
}

int mgpu_shm_allreduce_slots(struct mgpu_shm *s, size_t n)
{
	float *const *g = s->g, *mine = s->g[s->rank];
	size_t a, e, i;
	int r;

	if (n > s->nparams)
		return mgpu_err(MGPU_EINVAL, "all-reduce of %zu floats in slots of %zu", n,
				s->nparams);
	MGPU_TRY(mgpu_shm_barrier(s)); /* every slot holds its input */
	shard_of(s, s->rank, n, &a, &e);
	for (r = 0; r < s->world; r++) {
		if (r == s->rank)
			continue;
		for (i = a; i < e; i++)
			mine[i] += g[r][i];
	}
	MGPU_TRY(mgpu_shm_barrier(s)); /* every shard is reduced */
	for (r = 0; r < s->world; r++) {
		if (r == s->rank)
			continue;
		shard_of(s, r, n, &a, &e);
		memcpy(mine + a, g[r] + a, (e - a) * sizeof(float));
	}
	return mgpu_shm_barrier(s); /* nobody reuses its slot before all copied */
}

void mgpu_shm_abort(struct mgpu_shm *s, int quiet)
{
	if (!s->ctl)
		return;
	atomic_store_explicit(&s->ctl->abort_quiet, quiet, memory_order_release);
	atomic_store_explicit(&s->ctl->abort_rank, s->rank + 1, memory_order_release);
}
