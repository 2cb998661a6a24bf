/*
 * bf16_dnnl.c - the cpu backend's bf16 GEMM on oneDNN's matmul primitive
 * (Debian's libdnnl 2.6, its C API), which bf16_cpu.c takes where the CPU
 * has AVX512-BF16 or AMX and the primitive passes its probe: there it runs
 * 2.1-2.6x the widening to cblas_sgemm (README, bench/conv.c).
 *
 * The column-major product C (m x n) = alpha op(A) op(B) + beta C is the
 * row-major C^T (n x m) = op(B)^T (n x k) op(A)^T (k x m): oneDNN's src is
 * op(B)^T, its weights op(A)^T and its dst C^T, each described by strides,
 * so transposes and leading dimensions need no copies; a strided batch is
 * a third dimension. alpha is an output scale, beta != 0 a sum post-op
 * (dst = beta dst + alpha AB); beta == 0 has no post-op, so oneDNN only
 * writes C and NaNs there are ignored, as BLAS does.
 *
 * A shape whose primitive is a reference implementation (slower than the
 * fallback) is declined: *done = 0 and the caller takes its fallback.
 * Primitives, declined shapes included, are made once per device and key
 * (shape, strides, alpha, beta) and kept in a small cache (struct state,
 * dev's scratch), so a training step pays only for setting three data
 * handles: about 0.45 us a call here, where making the descriptor again
 * to hit oneDNN's own primitive cache cost 1.4 us more. The scratchpad is
 * ours, one buffer per device grown on demand.
 * One thread per device: oneDNN runs on OpenMP, one thread for the
 * calling thread (cpu's init). The engine is this file's own, not
 * conv_cpu.c's: a CPU engine is a handle, and the two caches stay
 * independent.
 */
#include "ops/ops_cpu.h"

#include <dnnl.h>       /* dnnl_* C API */
#include <stdlib.h>     /* calloc, free, malloc */
#include <string.h>     /* memcmp, memset, strstr */

#include "core/err.h"      /* mgpu_err, MGPU_TRY */
#include "ops/dnnl_call.h" /* DNNL, mgpu_dnnl_unconst */

#define CACHE 64

/* What identifies a primitive: compared bytewise, so always memset first.
 * batch > 1 only where the products run as one 3-D primitive. */
struct key {
	int ta, tb, m, n, k, lda, ldb, ldc, batch;
	long long sa, sb, sc;
	float alpha, beta;
};

struct entry {
	int used;
	struct key key;
	dnnl_primitive_t prim;          /* NULL: declined (a reference implementation) */
	dnnl_memory_t src, wei, dst, pad; /* handles set per call; pad NULL if none */
	size_t pad_bytes;
};

struct state {
	dnnl_engine_t eng;
	dnnl_stream_t strm;
	void *pad;      /* the scratchpad every primitive of the device shares */
	size_t pad_cap; /* bytes */
	struct entry e[CACHE];
	int next; /* the entry replaced when the cache is full */
};

int mgpu_cpu_mm_isa(void)
{
	unsigned isa = (unsigned)dnnl_get_effective_cpu_isa();
	unsigned bf16 = (unsigned)dnnl_cpu_isa_avx512_core_bf16; /* AMX's value includes it */
	unsigned amx = (unsigned)dnnl_cpu_isa_avx512_core_amx;

	if ((isa & amx) == amx)
		return 2;
	return (isa & bf16) == bf16;
}

static void entry_free(struct entry *e)
{
	if (e->prim)
		dnnl_primitive_destroy(e->prim);
	if (e->src)
		dnnl_memory_destroy(e->src);
	if (e->wei)
		dnnl_memory_destroy(e->wei);
	if (e->dst)
		dnnl_memory_destroy(e->dst);
	if (e->pad)
		dnnl_memory_destroy(e->pad);
	memset(e, 0, sizeof *e);
}

void mgpu_cpu_mm_release(void *state)
{
	struct state *s = state;
	int i;

	if (!s)
		return;
	for (i = 0; i < CACHE; i++)
		entry_free(&s->e[i]);
	free(s->pad);
	if (s->strm)
		dnnl_stream_destroy(s->strm);
	if (s->eng)
		dnnl_engine_destroy(s->eng);
	free(s);
}

static int state_of(void **state, struct state **out)
{
	struct state *s = *state;

	if (!s) {
		dnnl_status_t rc;

		s = calloc(1, sizeof *s);
		if (!s)
			return mgpu_err(MGPU_ENOMEM, "cpu: out of memory");
		rc = dnnl_engine_create(&s->eng, dnnl_cpu, 0);
		if (rc == dnnl_success)
			rc = dnnl_stream_create(&s->strm, s->eng, dnnl_stream_default_flags);
		if (rc != dnnl_success) { /* kept, it would fail every later call */
			mgpu_cpu_mm_release(s);
			return mgpu_err(rc == dnnl_out_of_memory ? MGPU_ENOMEM : MGPU_EDEVICE,
					"oneDNN: no cpu engine and stream: %s", dnnl_status2str(rc));
		}
		*state = s;
	}
	*out = s;
	return 0;
}

/* A rows x cols row-major view whose element (r, c) lies at r * rs + c * cs,
 * after a batch dimension of `batch` matrices `bs` apart when nd == 3. */
static void md_of(dnnl_memory_desc_t *md, int nd, dnnl_data_type_t dt, int batch, long long bs,
		  int rows, int cols, long long rs, long long cs)
{
	dnnl_dims_t d = { 0 }, st = { 0 };
	int o = nd - 2;

	if (nd == 3) {
		d[0] = batch;
		st[0] = bs;
	}
	d[o] = rows;
	d[o + 1] = cols;
	st[o] = rs;
	st[o + 1] = cs;
	dnnl_memory_desc_init_by_strides(md, nd, d, dt, st);
}

/* The primitive of key k into e, or e declined when oneDNN has only a
 * reference implementation for it (or none). */
static int make(struct state *s, struct entry *e, const struct key *k)
{
	int nd = k->batch > 1 ? 3 : 2;
	dnnl_memory_desc_t src, wei, dst;
	dnnl_matmul_desc_t d;
	dnnl_primitive_attr_t attr = NULL;
	dnnl_post_ops_t po = NULL;
	dnnl_primitive_desc_t pd = NULL;
	const dnnl_memory_desc_t *pmd;
	const char *info = NULL;
	dnnl_status_t rc;
	int ret = 0;

	memset(e, 0, sizeof *e);
	e->used = 1;
	e->key = *k;
	/* op(B)^T (n x k): B is k x n (ldb) untransposed, n x k transposed */
	md_of(&src, nd, dnnl_bf16, k->batch, k->sb, k->n, k->k, k->tb == MGPU_N ? k->ldb : 1,
	      k->tb == MGPU_N ? 1 : k->ldb);
	/* op(A)^T (k x m): A is m x k (lda) untransposed, k x m transposed */
	md_of(&wei, nd, dnnl_bf16, k->batch, k->sa, k->k, k->m, k->ta == MGPU_N ? k->lda : 1,
	      k->ta == MGPU_N ? 1 : k->lda);
	md_of(&dst, nd, dnnl_f32, k->batch, k->sc, k->n, k->m, k->ldc, 1);
	if (dnnl_matmul_desc_init(&d, &src, &wei, NULL, &dst) != dnnl_success)
		return 0; /* declined: not a layout oneDNN describes */
	DNNL(dnnl_primitive_attr_create(&attr));
	rc = dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user);
	if (rc == dnnl_success && k->alpha != 1.0f)
		rc = dnnl_primitive_attr_set_output_scales(attr, 1, 0, &k->alpha);
	if (rc == dnnl_success && k->beta != 0.0f) {
		rc = dnnl_post_ops_create(&po);
		if (rc == dnnl_success)
			rc = dnnl_post_ops_append_sum(po, k->beta);
		if (rc == dnnl_success)
			rc = dnnl_primitive_attr_set_post_ops(attr, po);
	}
	if (rc != dnnl_success) {
		ret = mgpu_err(MGPU_EDEVICE, "oneDNN: matmul attributes: %s", dnnl_status2str(rc));
		goto out;
	}
	if (dnnl_primitive_desc_create(&pd, &d, attr, s->eng, NULL) != dnnl_success) {
		pd = NULL;
		goto out; /* declined: no implementation at all */
	}
	if (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &info) != dnnl_success ||
	    !info || strstr(info, "ref"))
		goto out; /* declined: the fallback is faster than a reference loop */
	rc = dnnl_primitive_create(&e->prim, pd);
	if (rc == dnnl_success)
		rc = dnnl_memory_create(&e->src, &src, s->eng, DNNL_MEMORY_NONE);
	if (rc == dnnl_success)
		rc = dnnl_memory_create(&e->wei, &wei, s->eng, DNNL_MEMORY_NONE);
	if (rc == dnnl_success)
		rc = dnnl_memory_create(&e->dst, &dst, s->eng, DNNL_MEMORY_NONE);
	pmd = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
	if (rc == dnnl_success && pmd && (e->pad_bytes = dnnl_memory_desc_get_size(pmd)) > 0)
		rc = dnnl_memory_create(&e->pad, pmd, s->eng, DNNL_MEMORY_NONE);
	if (rc != dnnl_success) {
		entry_free(e);
		ret = mgpu_err(rc == dnnl_out_of_memory ? MGPU_ENOMEM : MGPU_EDEVICE,
			       "oneDNN: creating a matmul failed: %s", dnnl_status2str(rc));
	}
out:
	if (pd)
		dnnl_primitive_desc_destroy(pd);
	if (po)
		dnnl_post_ops_destroy(po);
	if (attr)
		dnnl_primitive_attr_destroy(attr);
	return ret;
}

/* The cache's entry for k, made on a miss. */
static int lookup(struct state *s, const struct key *k, struct entry **out)
{
	int i, hole = -1;

	/* every slot: one whose making failed is empty between used ones */
	for (i = 0; i < CACHE; i++) {
		if (!s->e[i].used) {
			hole = hole < 0 ? i : hole;
			continue;
		}
		if (!memcmp(&s->e[i].key, k, sizeof *k)) {
			*out = &s->e[i];
			return 0;
		}
	}
	i = hole;
	if (i < 0) {
		i = s->next;
		s->next = (s->next + 1) % CACHE;
		entry_free(&s->e[i]);
	}
	*out = &s->e[i];
	return make(s, &s->e[i], k);
}

/* One primitive run on the given operands. */
static int run(struct state *s, struct entry *e, const uint16_t *A, const uint16_t *Bm, float *C)
{
	dnnl_exec_arg_t a[4];
	int na = 3;

	DNNL(dnnl_memory_set_data_handle(e->src, mgpu_dnnl_unconst(Bm)));
	DNNL(dnnl_memory_set_data_handle(e->wei, mgpu_dnnl_unconst(A)));
	DNNL(dnnl_memory_set_data_handle(e->dst, C));
	a[0] = (dnnl_exec_arg_t){ DNNL_ARG_SRC, e->src };
	a[1] = (dnnl_exec_arg_t){ DNNL_ARG_WEIGHTS, e->wei };
	a[2] = (dnnl_exec_arg_t){ DNNL_ARG_DST, e->dst };
	if (e->pad) {
		if (e->pad_bytes > s->pad_cap) {
			free(s->pad);
			s->pad = malloc(e->pad_bytes);
			s->pad_cap = s->pad ? e->pad_bytes : 0;
			if (!s->pad)
				return mgpu_err(MGPU_ENOMEM, "cpu: out of memory for %zu bytes of "
						"oneDNN scratchpad", e->pad_bytes);
		}
		DNNL(dnnl_memory_set_data_handle(e->pad, s->pad));
		a[na++] = (dnnl_exec_arg_t){ DNNL_ARG_SCRATCHPAD, e->pad };
	}
	DNNL(dnnl_primitive_execute(e->prim, s->strm, na, a));
	DNNL(dnnl_stream_wait(s->strm));
	return 0;
}

/* Elements a column-major rows x cols matrix with leading dimension ld spans. */
static long long span(int rows, int cols, int ld)
{
	return (long long)ld * (cols - 1) + rows;
}

int mgpu_cpu_mm_bf16(void **state, enum mgpu_trans ta, enum mgpu_trans tb, int m, int n, int k,
		     float alpha, const uint16_t *A, int lda, long long sa, const uint16_t *Bm,
		     int ldb, long long sb, float beta, float *C, int ldc, long long sc, int batch,
		     int *done)
{
	struct state *s = NULL;
	struct entry *e;
	struct key key;
	int i;

	*done = 0;
	if (m <= 0 || n <= 0 || k <= 0 || batch <= 0)
		return 0; /* nothing oneDNN should see: the caller's business */
	MGPU_TRY(state_of(state, &s));
	memset(&key, 0, sizeof key);
	key.ta = ta;
	key.tb = tb;
	key.m = m;
	key.n = n;
	key.k = k;
	key.lda = lda;
	key.ldb = ldb;
	key.ldc = ldc;
	key.alpha = alpha;
	key.beta = beta;
	key.batch = 1;
	/* One 3-D primitive where the products are apart: each C its own and
	 * A, B not shared (a stride 0 would need oneDNN's broadcast); else one
	 * 2-D primitive per product, in order, as BLAS would run them. */
	if (batch > 1 && sc >= span(m, n, ldc) &&
	    sa >= span(ta == MGPU_N ? m : k, ta == MGPU_N ? k : m, lda) &&
	    sb >= span(tb == MGPU_N ? k : n, tb == MGPU_N ? n : k, ldb)) {
		key.batch = batch;
		key.sa = sa;
		key.sb = sb;
		key.sc = sc;
	}
	MGPU_TRY(lookup(s, &key, &e));
	if (!e->prim)
		return 0;
	if (key.batch == batch) {
		MGPU_TRY(run(s, e, A, Bm, C));
	} else {
		for (i = 0; i < batch; i++)
			MGPU_TRY(run(s, e, A + i * sa, Bm + i * sb, C + i * sc));
	}
	*done = 1;
	return 0;
}
