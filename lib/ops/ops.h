/*
 * ops.h - THE backend interface: one function table for every backend.
 *
 * Backends: "ref" (obvious loops, the definition of each op), "cpu"
 * (OpenBLAS, one BLAS thread per rank) and "cuda" (cuBLAS + kernels, only in
 * builds with CUDA). Model, optimizer and training loop call these and never
 * ask which backend they run on.
 *
 * Invariants:
 * - Every float/int pointer argument of an op is a DEVICE pointer of the
 *   device passed (host memory for ref/cpu), except where named *_host.
 * - Ops are asynchronous on CUDA (one stream per device); results are
 *   visible to the host after mgpu_dev_to_host() or mgpu_dev_sync().
 * - Tensor letters: B = rows of a batch, D = features of a row, C = classes.
 *   Activations are row-major (B, D): element (i, j) is at i * D + j.
 * - gemm is COLUMN-major with BLAS's argument order and meaning; the very
 *   same arguments go to cblas_sgemm(CblasColMajor, ...) and cuBLAS.
 *   Row-major callers use the identity: row-major C = A.B is column-major
 *   C^T = B^T.A^T, so a row-major (R, K) matrix is a column-major (K, R)
 *   one with leading dimension K.
 * - A struct mgpu_dev is used by one thread at a time.
 * - Callers outside lib/ops ask what a backend can do with mgpu_ops_can,
 *   never by its name.
 */
#ifndef MGPU_OPS_OPS_H
#define MGPU_OPS_OPS_H

#include <stddef.h> /* size_t */
#include <stdint.h> /* uint8_t, uint16_t, int32_t, uint64_t */

#ifdef __cplusplus
extern "C" { /* C linkage when included by the CUDA (C++) backend */
#endif

enum mgpu_trans { MGPU_N = 0, MGPU_T = 1 };

/* The element type of a product's inputs (--dtype): fp32, or bfloat16 or
 * IEEE fp16 bit patterns (uint16_t) with fp32 accumulation, master
 * weights and optimizer state (mixed precision); attention's rounding.
 * Its words, indexed by it and NULL-terminated (an option table's word
 * list), are mgpu_prec_words: the one place they are spelled. */
enum mgpu_prec { MGPU_PREC_FP32 = 0, MGPU_PREC_BF16 = 1, MGPU_PREC_FP16 = 2 };
extern const char *const mgpu_prec_words[]; /* "fp32", "bf16", "fp16", NULL */
/* The word of prec; "fp32" for a value outside the enum. */
const char *mgpu_prec_name(int prec);

/* What a backend can do beyond the ops every backend has (mgpu_ops_can). */
enum mgpu_cap {
	/* Its device pointers are host pointers: the host may read and write
	 * them, shared memory may back them, nothing needs staging. */
	MGPU_CAP_HOST_MEMORY = 0,
	/* sgd_sum and adamw_sum: the fused reduce + update of the
	 * shared-memory gradient sync (host memory only). */
	MGPU_CAP_SUM_UPDATE = 1,
};

/* The largest head dimension attn_fwd / attn_bwd take (the cuda kernels
 * keep a row of a head in registers). */
#define MGPU_ATTN_MAX_DH 128

enum mgpu_act {
	MGPU_ACT_NONE = 0,
	MGPU_ACT_RELU = 1,
	MGPU_ACT_GELU = 2, /* exact (erf) form, as torch.nn.GELU() */
	MGPU_ACT_TANH = 3,
	MGPU_ACT_SILU = 4, /* z * sigmoid(z), as torch.nn.SiLU() */
};

/* Hyper-parameters of one SGD update; see mgpu_sgd_elem in elem.h. */
struct mgpu_sgd_hp {
	float lr;
	float momentum;     /* 0 disables the momentum buffer */
	float weight_decay; /* L2, added to the gradient as in torch.optim.SGD */
	float grad_scale;   /* multiplies the raw gradient (averaging, clipping) */
	int nesterov;
};

/* Hyper-parameters of one AdamW update; see mgpu_adamw_elem in elem.h. */
struct mgpu_adamw_hp {
	float lr;
	float beta1, beta2, eps;
	float weight_decay; /* decoupled, as torch.optim.AdamW */
	float grad_scale;
	float bias_corr1;   /* 1 - beta1^t, computed on the host */
	float bias_corr2;   /* 1 - beta2^t */
};

/*
 * Convolutional-network geometry (the ops at the end of struct mgpu_ops).
 * Images are NCHW, row-major: element (n, c, h, w) of an (N, C, H, W)
 * tensor is at ((n C + c) H + h) W + w. Letters: N samples, C input
 * channels, K output channels, (H, W) input and (OH, OW) output extent.
 * A 1-D convolution (sensor windows (N, C, L)) is conv2d with H = 1,
 * KH = 1, sh = dh = 1, ph = 0: there is no separate conv1d entry.
 */
struct mgpu_conv {
	int N, C, H, W; /* input x (N, C, H, W) */
	int K;          /* output y (N, K, OH, OW) */
	int KH, KW;     /* weight (K, C / groups, KH, KW), as torch.nn.Conv2d; bias (K) */
	int sh, sw;     /* stride, >= 1 */
	int ph, pw;     /* zero padding on both sides, >= 0 */
	int dh, dw;     /* dilation, >= 1 (1: none) */
	int groups;     /* divides C and K; groups == C == K is depthwise */
	/* The type of the products' inputs (--dtype, as gemm's prec; 0, what
	 * an initialiser that leaves it out gives, is fp32): under
	 * MGPU_PREC_BF16 the convolutions read x, w and dy rounded to bf16
	 * (round to nearest even, elem.h's mgpu_bf16_round) and accumulate,
	 * and write y, dx, dw and db, in fp32; the bias is added unrounded.
	 * MGPU_PREC_FP16 is not a convolution precision (EINVAL). */
	enum mgpu_prec prec;
};

/* Output extent along one axis, floor rounding as torch (conv and pool). */
#define MGPU_CONV_OUT(in, k, s, p, d) (((in) + 2 * (p) - (d) * ((k) - 1) - 1) / (s) + 1)

enum mgpu_pool_mode {
	MGPU_POOL_MAX = 0,      /* padding never wins (as -inf) */
	MGPU_POOL_AVG = 1,      /* sum / (KH KW), padding counted: torch's default */
	MGPU_POOL_AVG_EXCL = 2, /* sum / the window's elements inside the image */
};

/* x (N, C, H, W) -> y (N, C, OH, OW), OH = MGPU_CONV_OUT(H, KH, sh, ph, 1).
 * ph <= KH / 2 and pw <= KW / 2 (torch's rule: no window is all padding).
 * Global average pooling is AVG with KH = H, KW = W, no padding. */
struct mgpu_pool2d {
	int N, C, H, W;
	int KH, KW, sh, sw, ph, pw;
	enum mgpu_pool_mode mode;
};

/* BatchNorm over x (N, C, HW): statistics per channel over N * HW values
 * (over every rank's, under --sync-bn). */
struct mgpu_bn {
	int N, C, HW;
	float eps;      /* 1e-5 in torch */
	float momentum; /* running = (1 - momentum) running + momentum batch; 0.1 */
	double count;   /* values per channel the statistics sum: N * HW on one
			 * rank, the sum over the ranks under --sync-bn */
	int train;      /* 1: batch statistics, update the running ones;
			 * 0: normalise with the running ones (eval) */
};

struct mgpu_dev;

struct mgpu_ops {
	const char *name;
	int host_memory; /* 1 when device pointers are host pointers; callers
			  * outside lib/ops ask mgpu_ops_can */

	/* Devices of this backend (1 for ref/cpu). Zero GPUs is not an error:
	 * *n = 0 and `why` says why (no driver, driver too old, none found). */
	int (*device_count)(int *n, char *why, size_t whylen);
	int (*init)(struct mgpu_dev *dev, int index);
	void (*fini)(struct mgpu_dev *dev);

	int (*alloc)(struct mgpu_dev *dev, void **p, size_t nbytes);
	void (*release)(struct mgpu_dev *dev, void *p);
	int (*to_dev)(struct mgpu_dev *dev, void *dst, const void *src_host, size_t nbytes);
	int (*to_host)(struct mgpu_dev *dev, void *dst_host, const void *src, size_t nbytes);
	int (*zero)(struct mgpu_dev *dev, void *p, size_t nbytes);
	int (*sync)(struct mgpu_dev *dev);

	/*
	 * The one matrix product: `batch` products
	 *   C_i = alpha * op(A_i) * op(B_i) + beta * C_i,
	 * column-major, op(A) m x k, op(B) k x n, C m x n, the i-th A, B, C
	 * starting strideA, strideB, strideC elements after the (i-1)-th
	 * (batch 1 with strides 0: one product). beta == 0 ignores C's old
	 * contents (NaNs too); k == 0 or alpha == 0 reads neither A nor B.
	 * prec is the type of A and B: float for fp32, uint16_t bit patterns
	 * for bf16 and fp16; C and the accumulation are fp32 always (a
	 * product of two 16-bit values is exact in fp32). The same arguments
	 * go to cuBLAS (cublasGemm[StridedBatched]Ex, CUDA_R_32F, _16BF or
	 * _16F inputs, CUBLAS_COMPUTE_32F: no TF32) and to cblas_sgemm (16-bit
	 * inputs widened to fp32, which is exact, or for bf16 oneDNN's matmul
	 * or OpenBLAS's cblas_sbgemm where they pass a probe).
	 */
	int (*gemm)(struct mgpu_dev *dev, enum mgpu_prec prec, enum mgpu_trans ta,
		    enum mgpu_trans tb, int m, int n, int k, float alpha, const void *A, int lda,
		    long long strideA, const void *Bm, int ldb, long long strideB, float beta,
		    float *C, int ldc, long long strideC, int batch);
	/* *out_host = sqrt(sum x[i]^2), as BLAS snrm2. */
	int (*nrm2)(struct mgpu_dev *dev, size_t n, const float *x, float *out_host);

	/* Z (B,D) += b (D) per row, then Y = act(Z). Y may equal Z. */
	int (*bias_act)(struct mgpu_dev *dev, enum mgpu_act act, float *Y, float *Z,
			const float *b, int B, int D);
	/* dZ = dY * act'(Z), n elements. dZ may equal dY. */
	int (*act_bwd)(struct mgpu_dev *dev, enum mgpu_act act, float *dZ,
		       const float *dY, const float *Z, size_t n);
	/* db (D) = beta * db + sum over rows of dY (B,D). */
	int (*col_sum)(struct mgpu_dev *dev, float *db, const float *dY, int B, int D,
		       float beta);
	/* Per row: Y = (X - mean) * rstd * gamma + beta; saves mean, rstd (B). */
	int (*ln_fwd)(struct mgpu_dev *dev, float *Y, float *mean, float *rstd,
		      const float *X, const float *gamma, const float *beta, int B,
		      int D, float eps);
	/* dX (B,D) from dY; dgamma, dbeta (D) = acc * old + this batch's sums. */
	int (*ln_bwd)(struct mgpu_dev *dev, float *dX, float *dgamma, float *dbeta,
		      const float *dY, const float *X, const float *mean,
		      const float *rstd, const float *gamma, int B, int D, float acc);
	/* Y = X * keep(seed, offset + i) / (1 - p); the same call on dY is the
	 * backward pass, since the mask is a pure function of (seed, index). */
	int (*dropout)(struct mgpu_dev *dev, float *Y, const float *X, size_t n,
		       float p, uint64_t seed, uint64_t offset);
	/* Softmax cross-entropy per row of logits (B,C) with labels (B):
	 * row_loss (B), row_correct (B, 1 or 0 for argmax == label) and, when
	 * dlogits is not NULL, dlogits = (softmax - onehot) * grad_scale.
	 * dlogits may be logits itself: the gradient then overwrites the
	 * logits in place (the gpt's head keeps one (N,V) buffer). Row i of
	 * logits and dlogits starts at i * ld, ld >= C: the columns C..ld-1
	 * are neither read nor written (the gpt pads its logits' rows to a
	 * multiple of 8 floats so cuBLAS keeps its vectorised kernels). */
	int (*xent)(struct mgpu_dev *dev, float *dlogits, float *row_loss,
		    float *row_correct, const float *logits, const int32_t *labels,
		    int B, int C, int ld, float grad_scale);
	/* Y = X * scale + shift, decoding uint8 samples on the device. */
	int (*u8_to_f32)(struct mgpu_dev *dev, float *Y, const uint8_t *X, size_t n,
			 float scale, float shift);
	/* One fused optimizer pass over n parameters. mom may be NULL when
	 * hp->momentum == 0. */
	int (*sgd)(struct mgpu_dev *dev, float *w, const float *g, float *mom, size_t n,
		   const struct mgpu_sgd_hp *hp);
	int (*adamw)(struct mgpu_dev *dev, float *w, const float *g, float *m, float *v,
		     size_t n, const struct mgpu_adamw_hp *hp);
	/* sgd and adamw on the sum of ng >= 1 gradients, g[0][i] + g[1][i] +
	 * ... + g[ng-1][i] added in that order and fed straight into the
	 * update (the sum is never stored): the fused reduce + update of the
	 * shared-memory gradient sync, pointers already offset to the slice
	 * to update. Host backends only (MGPU_CAP_SUM_UPDATE); NULL on cuda. */
	int (*sgd_sum)(struct mgpu_dev *dev, float *w, const float *const *g, int ng,
		       float *mom, size_t n, const struct mgpu_sgd_hp *hp);
	int (*adamw_sum)(struct mgpu_dev *dev, float *w, const float *const *g, int ng,
			 float *m, float *v, size_t n, const struct mgpu_adamw_hp *hp);

	/* ---- transformer ops. Letters: T positions of a sequence, H heads,
	 * Dh = D / H features per head, V vocabulary; "(B,T,D)" is row-major
	 * with B*T rows of D. ---- */

	/* Y = X1 + X2, n elements (residual connections, gradient sums); Y may
	 * equal X1 or X2. */
	int (*add)(struct mgpu_dev *dev, float *Y, const float *X1, const float *X2, size_t n);
	/* Y (B,T,D) = wte[ids] + wpe[t]: token ids (B,T) in [0, V), wte (V,D),
	 * wpe (T,D). An id outside [0, V) is an error on host backends and a
	 * NaN row on cuda (which cannot read it back without a round trip). */
	int (*emb_fwd)(struct mgpu_dev *dev, float *Y, const int32_t *ids, const float *wte,
		       const float *wpe, int B, int T, int V, int D);
	/* dwte (V,D) = acc * dwte + the rows of dY (B,T,D) summed by token id;
	 * dwpe (T,D) = acc * dwpe + dY summed over B. acc == 0 overwrites.
	 * Deterministic on every backend (no floating-point atomics). */
	int (*emb_bwd)(struct mgpu_dev *dev, float *dwte, float *dwpe, const float *dY,
		       const int32_t *ids, int B, int T, int V, int D, float acc);
	/*
	 * Fused causal attention (flash attention): the (T,T) scores and
	 * probabilities never reach memory. q, k, v, y, dy, dq, dk, dv are
	 * (BH,T,Dh) as heads_split makes them, 1 <= Dh <= MGPU_ATTN_MAX_DH;
	 * lse is (BH,T). This is THE statement of attention's arithmetic: the
	 * kernels' files, ARCHITECTURE.md and the tests point here. Per block,
	 * with r(x) = x rounded to bf16 (elem.h's mgpu_attn_in) when prec is
	 * MGPU_PREC_BF16 and r(x) = x for MGPU_PREC_FP32 (fp16 is not an
	 * attention precision: EINVAL), every product accumulating in fp32,
	 * and row i seeing the positions j <= i:
	 *   s_ij  = r(q_i) . r(k_j)            (over Dh)
	 *   mx_i  = max_j scale s_ij,  sum_i = sum_j exp(scale s_ij - mx_i)
	 *   lse_i = mx_i + log(sum_i)          (saved for the backward)
	 *   y_i   = sum_j r(p_ij) r(v_j),      p_ij = exp(scale s_ij - mx_i) / sum_i
	 * exp is elem.h's mgpu_exp_neg; bf16 rounds what --dtype bf16's GEMMs
	 * round (the operands of each product).
	 */
	int (*attn_fwd)(struct mgpu_dev *dev, float *y, float *lse, const float *q,
			const float *k, const float *v, int BH, int T, int Dh, float scale,
			enum mgpu_prec prec);
	/* The backward of attn_fwd from its inputs, y, lse and dy, recomputing
	 * the probabilities from q, k and lse (nothing of size T*T is saved):
	 *   p_ij  = exp(scale s_ij - lse_i),   dp_ij = r(dy_i) . r(v_j)
	 *   D_i   = dy_i . y_i,                ds_ij = scale p_ij (dp_ij - D_i)
	 *   dv_j  = sum_i r(p_ij) r(dy_i),     dq_i = sum_j r(ds_ij) r(k_j),
	 *   dk_j  = sum_i r(ds_ij) r(q_i)
	 * dq, dk, dv are overwritten. */
	int (*attn_bwd)(struct mgpu_dev *dev, float *dq, float *dk, float *dv, const float *q,
			const float *k, const float *v, const float *y, const float *dy,
			const float *lse, int BH, int T, int Dh, float scale,
			enum mgpu_prec prec);
	/* Y (B*H,T,Dh) = the heads of X (B,T,H*Dh) whose rows are ldx >= H*Dh
	 * floats apart. heads_merge is the inverse (and each is the other's
	 * backward): Y (B,T,H*Dh, rows ldy apart) from X (B*H,T,Dh); it leaves
	 * the columns of Y's rows beyond H*Dh as they were. */
	int (*heads_split)(struct mgpu_dev *dev, float *Y, const float *X, int ldx, int B,
			   int T, int H, int Dh);
	int (*heads_merge)(struct mgpu_dev *dev, float *Y, int ldy, const float *X, int B,
			   int T, int H, int Dh);
	/* bfloat16 (the top half of a float32) conversions, n elements:
	 * round to nearest even, NaN kept NaN; bf16 -> f32 is exact. */
	int (*f32_to_bf16)(struct mgpu_dev *dev, uint16_t *Y, const float *X, size_t n);
	int (*bf16_to_f32)(struct mgpu_dev *dev, float *Y, const uint16_t *X, size_t n);
	/* IEEE fp16 (binary16): f32 -> f16 rounded to nearest even (from 65520
	 * up to Inf, subnormals below 2^-14, NaN kept NaN; elem.h's
	 * mgpu_f16_from_f32): gemm's inputs under --dtype fp16. */
	int (*f32_to_f16)(struct mgpu_dev *dev, uint16_t *Y, const float *X, size_t n);
	/* *acc (ONE device double) += scale * the sum of x[0..n) (with squares,
	 * of x[i]^2), each element widened to double and added in the fixed
	 * order of elem.h's mgpu_sum_* (chunks, lanes, a pairwise fold): the
	 * same bits on every backend, whatever the GPU's grid. Nothing comes
	 * back to the host: the per-step loss, correct count and squared
	 * gradient norm accumulate on the device and are read once per step. */
	int (*sum_acc)(struct mgpu_dev *dev, double *acc, const float *x, size_t n,
		       int squares, double scale);

	/* ---- convolutional networks (issue 21); geometry and layout in
	 * struct mgpu_conv above. cpu runs oneDNN (conv_cpu.c), cuda cuDNN
	 * loaded on first use, or im2col + sgemm where cuDNN is missing
	 * (conv_gemm.c); the normalisations and the light ops are elem.h loops
	 * on every backend. ---- */

	/* Y = act(X), n elements; Y may equal X. Its backward is act_bwd with
	 * Z = X (ReLU and SiLU of the conv nets, any enum mgpu_act). */
	int (*act_fwd)(struct mgpu_dev *dev, enum mgpu_act act, float *Y, const float *X,
		       size_t n);
	/*
	 * Convolution (cross-correlation, as torch), y overwritten:
	 *   y[n,k,oh,ow] = bias[k] + sum over c' < C/groups, kh, kw of
	 *       w[k,c',kh,kw] x[n, g C/groups + c', oh sh - ph + kh dh, ow sw - pw + kw dw]
	 * with g = k / (K/groups) and x zero outside the image; bias may be NULL.
	 * conv_bwd_data: dx (N,C,H,W) = the transpose of that map applied to dy
	 * (overwritten). conv_bwd_weight: dw = acc dw + sum_n dy (x) its inputs,
	 * db (K, may be NULL) = acc db + dy summed over n, oh, ow; acc 0
	 * overwrites (NaNs too). A transposed convolution (torch's
	 * ConvTranspose2d, weight (in, out/groups, kh, kw)) is conv_bwd_data
	 * forward plus chan_bias; its backward is conv_fwd (data, no bias),
	 * conv_bwd_weight with its input as dy and its dy as x (weights) and
	 * chan_sum (bias), struct mgpu_conv describing the convolution it
	 * transposes (C = its out channels, K = its in ones).
	 * Under g->prec bf16 every x, w and dy above is r(x), r(w), r(dy) with
	 * r() the rounding to bf16 (db too sums r(dy)), each product exact and
	 * the sums fp32 or wider: torch.autocast's bf16 convolution with fp32
	 * outputs (cpu: oneDNN with bf16 operands and f32 results; cuda:
	 * im2col + cuBLAS's bf16 GEMM, gemm's contract).
	 */
	int (*conv_fwd)(struct mgpu_dev *dev, const struct mgpu_conv *g, float *y,
			const float *x, const float *w, const float *bias);
	int (*conv_bwd_data)(struct mgpu_dev *dev, const struct mgpu_conv *g, float *dx,
			     const float *dy, const float *w);
	int (*conv_bwd_weight)(struct mgpu_dev *dev, const struct mgpu_conv *g, float *dw,
			       float *db, const float *x, const float *dy, float acc);
	/* One sample's columns: col (C KH KW, OH OW) row-major, row
	 * (c KH + kh) KW + kw, column oh OW + ow, holds the x (C,H,W) value
	 * conv_fwd multiplies by w[., c mod C/groups, kh, kw] at (oh, ow) (0 in
	 * the padding); group g's rows are the g-th block of C/groups KH KW.
	 * col2im is its transpose, dx (C,H,W) overwritten with the sum of the
	 * col entries each pixel fed (gathered: no atomics). The kernels of the
	 * im2col convolution (conv_gemm.c); index arithmetic in elem.h. */
	int (*im2col)(struct mgpu_dev *dev, const struct mgpu_conv *g, float *col,
		      const float *x);
	int (*col2im)(struct mgpu_dev *dev, const struct mgpu_conv *g, float *dx,
		      const float *col);
	/* y (N,C,OH,OW) = max or mean of each window of x; pool_bwd: dx
	 * (overwritten) gets dy back through the same windows (max: to the
	 * window's first largest element in (kh, kw) order, recomputed from x). */
	int (*pool_fwd)(struct mgpu_dev *dev, const struct mgpu_pool2d *g, float *y,
			const float *x);
	int (*pool_bwd)(struct mgpu_dev *dev, const struct mgpu_pool2d *g, float *dx,
			const float *dy, const float *x);
	/* Nearest upsampling by integer factors: y (N,C,H sh,W sw)[.,.,h,w] =
	 * x (N,C,H,W)[.,.,h/sh,w/sw]; upsample_bwd: dx (overwritten) = the sums of
	 * dy's sh x sw blocks. */
	int (*upsample_fwd)(struct mgpu_dev *dev, int N, int C, int H, int W, int sh, int sw,
			    float *y, const float *x);
	int (*upsample_bwd)(struct mgpu_dev *dev, int N, int C, int H, int W, int sh, int sw,
			    float *dx, const float *dy);
	/*
	 * BatchNorm (struct mgpu_bn), cut where --sync-bn sums over ranks:
	 *   bn_stats:     stats (2,C) = per channel sum(x - shift_c) and
	 *                 sum((x - shift_c)^2) over this rank's N HW values
	 *                 (shift may be NULL: 0; the running mean makes the
	 *                 sums well conditioned);
	 *   [--sync-bn:   all-reduce (sum) stats and count over the ranks]
	 *   bn_fwd:       train: m = s1/count, mean = shift + m,
	 *                 var = s2/count - m^2 (biased), rstd = 1/sqrt(var + eps),
	 *                 running_mean += momentum (mean - running_mean),
	 *                 running_var += momentum (var count/(count-1) - running_var)
	 *                 (unbiased, as torch); eval: mean, var = the running ones,
	 *                 stats and shift unused, nothing updated. Both: y =
	 *                 (x - mean) rstd gamma + beta; mean, rstd (C) saved.
	 *   bn_bwd_stats: dstats (2,C) = per channel sum(dy) and sum(dy xhat),
	 *                 xhat = (x - mean) rstd, this rank's values; dbeta,
	 *                 dgamma (C) = acc * old + those (this rank's: the
	 *                 parameters' gradients are summed by the gradient sync
	 *                 like any other);
	 *   [--sync-bn:   all-reduce (sum) dstats over the ranks]
	 *   bn_bwd_data:  train: dx = gamma rstd (dy - (sum(dy) + xhat
	 *                 sum(dy xhat)) / count); eval: dx = gamma rstd dy.
	 * Without --sync-bn the caller skips both all-reduces (count = N HW):
	 * each rank normalises with its own batch, as torch DDP does. Sums
	 * accumulate in double; stats and dstats are float for the all-reduce.
	 */
	int (*bn_stats)(struct mgpu_dev *dev, const struct mgpu_bn *bn, float *stats,
			const float *x, const float *shift);
	int (*bn_fwd)(struct mgpu_dev *dev, const struct mgpu_bn *bn, float *y, float *mean,
		      float *rstd, const float *x, const float *stats, const float *shift,
		      const float *gamma, const float *beta, float *running_mean,
		      float *running_var);
	int (*bn_bwd_stats)(struct mgpu_dev *dev, const struct mgpu_bn *bn, float *dstats,
			    float *dgamma, float *dbeta, const float *dy, const float *x,
			    const float *mean, const float *rstd, float acc);
	int (*bn_bwd_data)(struct mgpu_dev *dev, const struct mgpu_bn *bn, float *dx,
			   const float *dy, const float *x, const float *mean, const float *rstd,
			   const float *gamma, const float *dstats);
	/* GroupNorm (torch.nn.GroupNorm): x (N,C,HW) in G groups of C/G
	 * channels; per (n, group) mean and rstd (N,G) over its C/G HW values
	 * (biased variance, two passes), y = (x - mean) rstd gamma[c] + beta[c].
	 * gn_bwd: dx from dy; dgamma, dbeta (C) = acc * old + this batch's sums. */
	int (*gn_fwd)(struct mgpu_dev *dev, int N, int C, int HW, int G, float *y, float *mean,
		      float *rstd, const float *x, const float *gamma, const float *beta,
		      float eps);
	int (*gn_bwd)(struct mgpu_dev *dev, int N, int C, int HW, int G, float *dx,
		      float *dgamma, float *dbeta, const float *dy, const float *x,
		      const float *mean, const float *rstd, const float *gamma, float acc);
	/* Per-channel bias of an (N,C,HW) tensor: y[n,c,.] += bias[c]; its
	 * backward chan_sum: db[c] = acc db[c] + the sum of dy[n,c,.] over n
	 * and HW (acc 0 overwrites). The bias of a layer without one built in:
	 * a transposed convolution's (conv_bwd_data computes none). */
	int (*chan_bias)(struct mgpu_dev *dev, int N, int C, int HW, float *y, const float *bias);
	int (*chan_sum)(struct mgpu_dev *dev, int N, int C, int HW, float *db, const float *dy,
			float acc);

	/* ---- losses of targets beyond a class id (issue 24; loss_ref.c,
	 * loss_cuda.cu). ---- */

	/*
	 * Mean squared error of pred against target, both (B,G,M): G groups of
	 * M values per row (a regression vector is G = 1, M = its length;
	 * confidence maps are G = parts, M = the map's pixels). weight (B,G)
	 * scales each group (0: a missing keypoint's map adds nothing); NULL
	 * is all 1. loss (B,G) = w / (G M) sum over m of (p - t)^2 (summed in
	 * double), so a row's loss is its mean over G M values, as
	 * torch.nn.MSELoss; dpred (may be NULL, may be pred) = grad_scale
	 * 2 w (p - t) / (G M).
	 */
	int (*mse)(struct mgpu_dev *dev, float *dpred, float *loss, const float *pred,
		   const float *target, const float *weight, int B, int G, int M,
		   float grad_scale);
	/*
	 * Per-pixel softmax cross-entropy of logits (N,C,HW) against labels
	 * (N,HW), each in [0, C) or -1 (an ignored pixel: loss, correct and
	 * gradient 0). pix_loss, pix_correct (N,HW): the pixel's loss / HW and
	 * 1 where the first maximum over channels is the label; the sum over a
	 * row's pixels is its mean loss (ignored pixels counting 0) and its
	 * pixel accuracy. dlogits (may be NULL, may be logits) = grad_scale
	 * (softmax - onehot) / HW. A label outside [-1, C) is an error on host
	 * backends and a NaN loss on cuda.
	 */
	int (*pix_xent)(struct mgpu_dev *dev, float *dlogits, float *pix_loss, float *pix_correct,
			const float *logits, const int32_t *labels, int N, int C, int HW,
			float grad_scale);
};

/* One device of one backend, owned by one rank (thread or process). */
struct mgpu_dev {
	const struct mgpu_ops *ops;
	int index;         /* device ordinal in its backend */
	size_t bytes_cur;  /* device bytes allocated now, through mgpu_dev_alloc */
	size_t bytes_peak; /* the most ever allocated at once */
	/* Host traffic, counted by mgpu_dev_to_host, mgpu_dev_from_host and
	 * mgpu_dev_nrm2 on every backend: a device-to-host read blocks the
	 * host until the device has run everything queued before it, so the
	 * training loop keeps them to one per optimizer step (tests count). */
	uint64_t d2h_count, d2h_nbytes; /* blocking device-to-host reads */
	uint64_t h2d_count, h2d_nbytes; /* host-to-device copies */
	void *impl;        /* backend state (cuBLAS handle, stream) */
};

extern const struct mgpu_ops mgpu_ops_ref;
extern const struct mgpu_ops mgpu_ops_cpu;

/* The backend named "ref", "cpu" or "cuda"; NULL when absent from the build. */
const struct mgpu_ops *mgpu_ops_find(const char *name);
/* All backends in this build, NULL-terminated. */
const struct mgpu_ops *const *mgpu_ops_all(void);
/* 1 when ops can do cap (enum mgpu_cap), else 0. */
int mgpu_ops_can(const struct mgpu_ops *ops, enum mgpu_cap cap);

int mgpu_dev_open(struct mgpu_dev *dev, const struct mgpu_ops *ops, int index);
void mgpu_dev_close(struct mgpu_dev *dev);

/* Allocations through these are counted in bytes_cur / bytes_peak. */
int mgpu_dev_alloc(struct mgpu_dev *dev, void **p, size_t nbytes);
void mgpu_dev_free(struct mgpu_dev *dev, void *p, size_t nbytes);
/* Host to device (dst on the device) and device to host. */
int mgpu_dev_from_host(struct mgpu_dev *dev, void *dst, const void *src_host,
		       size_t nbytes);
int mgpu_dev_to_host(struct mgpu_dev *dev, void *dst_host, const void *src, size_t nbytes);
/* ops->nrm2, counted as a blocking read of one float. */
int mgpu_dev_nrm2(struct mgpu_dev *dev, size_t n, const float *x, float *out_host);
/* Count a blocking read of nbytes made outside mgpu_dev_to_host (the NCCL
 * all-reduce of the step's statistics reads them on its own stream). */
void mgpu_dev_count_read(struct mgpu_dev *dev, size_t nbytes);

#ifdef __cplusplus
}
#endif

#endif
