/*
 * ops_cuda.h - internal to the cuda backend: the ops that live in their
 * own .cu files beside ops_cuda.cu, for its ops table, and the accessors
 * of a cuda device's state that C code (lib/gpu, lib/comm) needs.
 * Same semantics and argument checks as ops.h states; device pointers.
 */
#ifndef MGPU_OPS_OPS_CUDA_H
#define MGPU_OPS_OPS_CUDA_H

#include "ops/ops.h" /* struct mgpu_dev */

#ifdef __cplusplus
extern "C" {
#endif

/* rows_cuda.cu: a warp per row, a block per column tile. */
int mgpu_cuda_col_sum(struct mgpu_dev *dev, float *db, const float *dY, int B, int D,
		      float beta);
int mgpu_cuda_ln_fwd(struct mgpu_dev *dev, float *Y, float *mean, float *rstd, const float *X,
		     const float *gamma, const float *beta, int B, int D, float eps);
int mgpu_cuda_ln_bwd(struct mgpu_dev *dev, float *dX, float *dgamma, float *dbeta,
		     const float *dY, const float *X, const float *mean, const float *rstd,
		     const float *gamma, int B, int D, float acc);
int mgpu_cuda_xent(struct mgpu_dev *dev, float *dlogits, float *row_loss, float *row_correct,
		   const float *logits, const int32_t *labels, int B, int C, float grad_scale);

/* gpt_cuda.cu: the transformer ops besides attention. */
int mgpu_cuda_add(struct mgpu_dev *dev, float *Y, const float *X1, const float *X2, size_t n);
int mgpu_cuda_emb_fwd(struct mgpu_dev *dev, float *Y, const int32_t *ids, const float *wte,
		      const float *wpe, int B, int T, int V, int D);
int mgpu_cuda_emb_bwd(struct mgpu_dev *dev, float *dwte, float *dwpe, const float *dY,
		      const int32_t *ids, int B, int T, int V, int D, float acc);
int mgpu_cuda_heads_split(struct mgpu_dev *dev, float *Y, const float *X, int ldx, int B,
			  int T, int H, int Dh);
int mgpu_cuda_heads_merge(struct mgpu_dev *dev, float *Y, int ldy, const float *X, int B,
			  int T, int H, int Dh);

/* bf16_cuda.cu: 16-bit conversions. */
int mgpu_cuda_f32_to_bf16(struct mgpu_dev *dev, uint16_t *Y, const float *X, size_t n);
int mgpu_cuda_bf16_to_f32(struct mgpu_dev *dev, float *Y, const uint16_t *X, size_t n);
int mgpu_cuda_f32_to_f16(struct mgpu_dev *dev, uint16_t *Y, const float *X, size_t n);

/* attn_cuda.cu: fused causal attention, tiled, on dev's stream. */
int mgpu_cuda_attn_fwd(struct mgpu_dev *dev, float *y, float *lse, const float *q,
		       const float *k, const float *v, int BH, int T, int Dh, float scale,
		       enum mgpu_prec prec);
int mgpu_cuda_attn_bwd(struct mgpu_dev *dev, float *dq, float *dk, float *dv, const float *q,
		       const float *k, const float *v, const float *y, const float *dy,
		       const float *lse, int BH, int T, int Dh, float scale, enum mgpu_prec prec);

/* attn_wmma.cu: the bf16 attention on tensor cores. mgpu_cuda_attn_tc
 * says whether dev runs it at head dimension Dh (compute capability 8.0
 * or newer, the binary's code for it built for sm_80 or newer, enough
 * shared memory; bwd: the backward's kernels); the
 * launchers take attn_cuda.cu's grid (ntiles tiles of
 * MGPU_CUDA_ATTN_TC_ROWS rows per block of BH, blocks in all) and its
 * checked arguments. */
#define MGPU_CUDA_ATTN_TC_ROWS 64
int mgpu_cuda_attn_tc(struct mgpu_dev *dev, int Dh, int bwd);
int mgpu_cuda_attn_fwd_tc(struct mgpu_dev *dev, float *y, float *lse, const float *q,
			  const float *k, const float *v, int T, int Dh, float scale, int ntiles,
			  unsigned blocks);
int mgpu_cuda_attn_bwd_tc(struct mgpu_dev *dev, float *dq, float *dk, float *dv, const float *q,
			  const float *k, const float *v, const float *y, const float *dy,
			  const float *lse, int T, int Dh, float scale, int ntiles, unsigned blocks);

/* emb_cuda.cu: emb_bwd's token table dwte (V,D) from dY (N,D) and ids (N),
 * ref's sums bit for bit (checked arguments; dev need not be current). */
int mgpu_cuda_emb_tok(struct mgpu_dev *dev, float *dwte, const float *dY, const int32_t *ids,
		      size_t N, int V, int D, float acc);

/* attn_gemm.cu: attn_fwd and attn_bwd of the table: attn_gemm.c's cuBLAS
 * form where mgpu_attn_gemm_takes says so, else the fused kernels above;
 * mgpu_cuda_attn_gemm_release frees dev's scratch (dev's close). */
int mgpu_cuda_attn_any_fwd(struct mgpu_dev *dev, float *y, float *lse, const float *q,
			   const float *k, const float *v, int BH, int T, int Dh, float scale,
			   enum mgpu_prec prec);
int mgpu_cuda_attn_any_bwd(struct mgpu_dev *dev, float *dq, float *dk, float *dv,
			   const float *q, const float *k, const float *v, const float *y,
			   const float *dy, const float *lse, int BH, int T, int Dh, float scale,
			   enum mgpu_prec prec);
void mgpu_cuda_attn_gemm_release(struct mgpu_dev *dev);

/* dev_cuda.cu: the stream every op of dev is queued on; the device's
 * compute capability (10 major + minor) and the shared memory a block may
 * opt in to, both asked once when dev opens. */
void *mgpu_cuda_stream(struct mgpu_dev *dev);
int mgpu_cuda_cc(struct mgpu_dev *dev);
int mgpu_cuda_smem_optin(struct mgpu_dev *dev);

/* dev_cuda.cu: where conv_cuda.cu keeps dev's cuDNN state (NULL until the
 * first conv-net op); conv_cuda.cu frees it when dev closes. */
void **mgpu_cuda_conv_slot(struct mgpu_dev *dev);
void mgpu_cuda_conv_release(struct mgpu_dev *dev);

/* conv_cuda.cu: the conv-net ops (ops.h) on dev's stream. */
int mgpu_cuda_act_fwd(struct mgpu_dev *dev, enum mgpu_act act, float *Y, const float *X,
		      size_t n);
int mgpu_cuda_conv_fwd(struct mgpu_dev *dev, const struct mgpu_conv *g, float *y,
		       const float *x, const float *w, const float *bias);
int mgpu_cuda_conv_bwd_data(struct mgpu_dev *dev, const struct mgpu_conv *g, float *dx,
			    const float *dy, const float *w);
int mgpu_cuda_conv_bwd_weight(struct mgpu_dev *dev, const struct mgpu_conv *g, float *dw,
			      float *db, const float *x, const float *dy, float acc);
int mgpu_cuda_im2col(struct mgpu_dev *dev, const struct mgpu_conv *g, float *col,
		     const float *x);
int mgpu_cuda_col2im(struct mgpu_dev *dev, const struct mgpu_conv *g, float *dx,
		     const float *col);
int mgpu_cuda_pool_fwd(struct mgpu_dev *dev, const struct mgpu_pool2d *g, float *y,
		       const float *x);
int mgpu_cuda_pool_bwd(struct mgpu_dev *dev, const struct mgpu_pool2d *g, float *dx,
		       const float *dy, const float *x);
int mgpu_cuda_upsample_fwd(struct mgpu_dev *dev, int N, int C, int H, int W, int sh, int sw,
			   float *y, const float *x);
int mgpu_cuda_upsample_bwd(struct mgpu_dev *dev, int N, int C, int H, int W, int sh, int sw,
			   float *dx, const float *dy);
int mgpu_cuda_bn_stats(struct mgpu_dev *dev, const struct mgpu_bn *bn, float *stats,
		       const float *x, const float *shift);
int mgpu_cuda_bn_fwd(struct mgpu_dev *dev, const struct mgpu_bn *bn, float *y, float *mean,
		     float *rstd, const float *x, const float *stats, const float *shift,
		     const float *gamma, const float *beta, float *running_mean,
		     float *running_var);
int mgpu_cuda_bn_bwd_stats(struct mgpu_dev *dev, const struct mgpu_bn *bn, float *dstats,
			   float *dgamma, float *dbeta, const float *dy, const float *x,
			   const float *mean, const float *rstd, float acc);
int mgpu_cuda_bn_bwd_data(struct mgpu_dev *dev, const struct mgpu_bn *bn, float *dx,
			  const float *dy, const float *x, const float *mean, const float *rstd,
			  const float *gamma, const float *dstats);
int mgpu_cuda_gn_fwd(struct mgpu_dev *dev, int N, int C, int HW, int G, float *y, float *mean,
		     float *rstd, const float *x, const float *gamma, const float *beta,
		     float eps);
int mgpu_cuda_gn_bwd(struct mgpu_dev *dev, int N, int C, int HW, int G, float *dx,
		     float *dgamma, float *dbeta, const float *dy, const float *x,
		     const float *mean, const float *rstd, const float *gamma, float acc);
int mgpu_cuda_chan_bias(struct mgpu_dev *dev, int N, int C, int HW, float *y,
			const float *bias);
int mgpu_cuda_chan_sum(struct mgpu_dev *dev, int N, int C, int HW, float *db, const float *dy,
		       float acc);

#ifdef __cplusplus
}
#endif

#endif
