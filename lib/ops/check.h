/*
 * check.h - run ops of one backend against a reference backend on identical
 * seeded inputs and report the relative error of each: the engine of
 * `mgpu-train --selftest` and of tests/ops/conformance.c.
 *
 * A case (struct mgpu_ops_case) names an op and its shape; a pair of devices
 * (struct mgpu_ops_pair: device [0] under test, device [1] reference) runs
 * it on both with the same arguments and appends one row per compared op to
 * a report (struct mgpu_ops_report). Nothing is printed: the caller formats
 * the rows (op, backend, ref_backend, max_rel_err, tol, ok).
 *
 * Error measure per output tensor: max|a - r| / max(max|r|, 1e-30), the
 * largest over the op's outputs; a NaN or Inf in either output, or a write
 * outside an output's m x n part (gemm's ldc padding), is an infinite error.
 * Inputs are deterministic functions of (seed, case); gemm's lda/ldb
 * padding holds NaN (must not be read) and beta == 0 cases get a NaN-filled
 * output (must not be read either; the same for col_sum, ln_bwd's acc).
 */
#ifndef MGPU_OPS_CHECK_H
#define MGPU_OPS_CHECK_H

#include <stdint.h> /* uint64_t */

#include "ops/ops.h" /* struct mgpu_ops, struct mgpu_dev, enums */

#define MGPU_OPS_REPORT_MAX 256

struct mgpu_ops_row {
	const char *op;          /* "gemm", "ln_bwd", ... */
	char shape[64];          /* "m=512 n=128 k=784 NN lda=512 ..." */
	const char *backend;     /* ops->name of the device under test */
	const char *ref_backend; /* ops->name of the reference */
	double max_rel_err;      /* see the measure above */
	double tol;              /* the op's tolerance */
	int ok;                  /* max_rel_err <= tol */
};

struct mgpu_ops_report {
	int nrows;  /* rows filled */
	int nfail;  /* rows with ok == 0 */
	int nlost;  /* rows that did not fit in row[] (counted in nfail if bad) */
	struct mgpu_ops_row row[MGPU_OPS_REPORT_MAX];
};

/*
 * One case: op names the kind (below), and each field means one thing;
 * a kind reads the fields it names and ignores the rest, so a table of
 * cases is written with designated initialisers. m, n, k are the sizes,
 * by kind:
 *   gemm      ta tb m n k, lda ldb ldc (0 = tightest legal), alpha, beta,
 *             prec (rows "gemm", "gemm_bf16", "gemm_f16"; 16-bit inputs
 *             rounded on the host); one product with strides 0, or with
 *             strided batch products (0 and up) strides apart (lda != 0
 *             also leaves a NaN gap of 5 elements between matrices, a
 *             sentinel between Cs)
 *   nrm2      n
 *   bias_act  act, m = B, n = D, in_place (Y == Z)
 *   act_bwd   act, n, in_place (dZ == dY)
 *   col_sum   m = B, n = D, acc
 *   ln        m = B, n = D, acc (rows "ln_fwd" and "ln_bwd")
 *   dropout   n, p, offset, in_place
 *   xent      m = B, n = C, ldc (the rows' stride, 0: C; the gaps hold
 *             1e30 logits and 7 in dlogits, which must stay unread and
 *             unwritten), in_place (dlogits == logits), scale (the
 *             gradient's), no_grad (dlogits NULL), ties (whole-number logits: a row's maximum repeats),
 *             nan_rows (every other row's first logit NaN and label 0: NaN
 *             loss and gradient, correct 1, as ref's scan from l[0] gives)
 *   u8_to_f32 n, scale, shift
 *   sgd       n, momentum (0: no buffer), nesterov; 2 steps
 *   adamw     n; 2 steps
 *   add       n, in_place: 0 Y apart, 1 Y == X1, 2 Y == X2
 *   emb       m = B, k = T, n = D, V, acc (rows "emb_fwd", "emb_bwd")
 *   flash     m = BH, n = T, k = Dh, scale, prec fp32 or bf16 (rows
 *             "attn_fwd", "attn_bwd", or under bf16 "attn_fwd_bf16",
 *             "attn_bwd_bf16"; the backward gets the reference's y, lse)
 *   heads     m = B, k = T, n = Dh, H, ldb = row stride (0 = H*Dh)
 *             (rows "heads_split", "heads_merge")
 *   bf16      n: NaN, Inf, ties and random bits (rows "f32_to_bf16",
 *             "bf16_to_f32", which must agree bit for bit)
 *   f16       the same for "f32_to_f16"
 *   sum_acc   n, scale, acc (the accumulator's start), squares, inf (one
 *             input is +inf)
 */
struct mgpu_ops_case {
	const char *op;
	int m, n, k;
	enum mgpu_trans ta, tb; /* gemm */
	int lda, ldb, ldc;      /* gemm; heads: ldb */
	float alpha, beta;      /* gemm */
	enum mgpu_prec prec;    /* gemm, flash */
	int strided, batch;     /* gemm */
	enum mgpu_act act;      /* bias_act, act_bwd */
	int in_place;           /* bias_act, act_bwd, dropout, add */
	float p;                /* dropout */
	uint64_t offset;        /* dropout */
	float scale, shift;     /* xent, u8_to_f32, flash, sum_acc (scale) */
	float acc;              /* col_sum, ln, emb, sum_acc */
	float momentum;         /* sgd */
	int nesterov;           /* sgd */
	int no_grad, ties, nan_rows; /* xent */
	int squares, inf;       /* sum_acc */
	int H, V;               /* heads, emb */
};

/*
 * A case of the conv-net ops (check_conv.c), by op:
 *   conv      cv, bias, acc, prec (rows "conv_fwd",
 *             "conv_bwd_data", "conv_bwd_weight", under bf16 with "_bf16"
 *             after)
 *   im2col    cv, one sample (rows "im2col", "col2im")
 *   pool      cv's N C H W KH KW sh sw ph pw, mode
 *             (rows "pool_fwd", "pool_bwd")
 *   upsample  cv's N C H W and factors sh sw (rows "upsample_fwd", "_bwd")
 *   bn        cv's N C, HW = H W; train, shift (a shift given), acc;
 *             x centred at 3 (rows "bn_stats" (train only),
 *             "bn_fwd", "bn_bwd_stats", "bn_bwd_data"; each op gets the
 *             reference's outputs of the one before)
 *   gn        cv's N C, HW = H W, G = groups (rows "gn_fwd", "gn_bwd")
 *   act_fwd   n, act
 *   chan      cv's N C, HW = H W; acc (rows "chan_bias",
 *             "chan_sum")
 *   mse       cv's N = B, C = G, M = H W; weighted, nograd
 *   pix_xent  cv's N, C = classes, HW = H W; ignore, nograd, inplace
 */
struct mgpu_ops_conv_case {
	const char *op;
	int bias;                  /* conv: with a bias */
	int acc;                   /* conv, bn, chan: gradients added to (acc 1), else 0 */
	enum mgpu_pool_mode mode;  /* pool */
	int train, shift;          /* bn */
	int weighted;              /* mse: weights, every third group's 0 */
	int ignore;                /* pix_xent: every fifth pixel's label -1 */
	int nograd;                /* mse, pix_xent: no gradient asked for */
	int inplace;               /* pix_xent: the gradient over the logits */
	enum mgpu_prec prec;       /* conv: cv's precision (MGPU_CV leaves it fp32) */
	struct mgpu_conv cv;
	size_t n;
	enum mgpu_act act;
};

/* Designated initialisers of a struct mgpu_conv, in its field order. */
#define MGPU_CV(n_, c_, h_, w_, k_, kh_, kw_, sh_, sw_, ph_, pw_, dh_, dw_, g_)              \
	{ .N = (n_), .C = (c_), .H = (h_), .W = (w_), .K = (k_), .KH = (kh_), .KW = (kw_),   \
	  .sh = (sh_), .sw = (sw_), .ph = (ph_), .pw = (pw_), .dh = (dh_), .dw = (dw_),      \
	  .groups = (g_) }

struct mgpu_ops_pair {
	struct mgpu_dev dev[2]; /* [0] under test, [1] reference */
	uint64_t seed;
	uint64_t stream;        /* advances per random array */
	struct mgpu_ops_report *rep;
};

/* Open device `index` of ops and device 0 of ref; rep is cleared. */
int mgpu_ops_pair_open(struct mgpu_ops_pair *p, const struct mgpu_ops *ops, int index,
		       const struct mgpu_ops *ref, uint64_t seed, struct mgpu_ops_report *rep);
void mgpu_ops_pair_close(struct mgpu_ops_pair *p);

/* Run one case on both devices and append its row(s). A negative return is
 * a failure to run (allocation, copy, an op rejecting valid arguments), not
 * a mismatch; mismatches are rows with ok == 0. */
int mgpu_ops_check_case(struct mgpu_ops_pair *p, const struct mgpu_ops_case *c);

/* check_report.c: append a row (op, shape, error) to p's report, judged by
 * the op's tolerance. */
void mgpu_ops_report_add(struct mgpu_ops_pair *p, const char *op, const char *shape,
			 double err);

/* check_conv.c: run one case of the conv-net ops, as mgpu_ops_check_case. */
int mgpu_ops_check_conv_case(struct mgpu_ops_pair *p, const struct mgpu_ops_conv_case *c);

/* check_report.c: the tolerance of an op's row (0 for an unknown name). */
double mgpu_ops_tolerance(const char *op);

/* The selftest: every op on representative shapes (a training-like
 * 512x128x784 gemm and its two backward products, 128x512 element ops,
 * 128x10 xent, plus odd shapes; a small gpt block's attention and
 * embedding ops, LayerNorm at width 768 and xent over 256 tied logits;
 * the 768-wide, 12-head model's attention in bf16 (tensor cores on cuda)
 * and bf16 attention at a padded head width (100) and T (100);
 * the bf16 GEMM on the same products; the sums of a step's statistics;
 * a conv net's convolutions in fp32 and bf16 and its light ops),
 * ops device `index`
 * against ref device 0.
 * Returns 0 when everything ran (read rep->nfail for the verdict). */
int mgpu_ops_compare(const struct mgpu_ops *ops, int index, const struct mgpu_ops *ref,
		     uint64_t seed, struct mgpu_ops_report *rep);

#endif
