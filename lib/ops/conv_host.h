/*
 * conv_host.h - internal to lib/ops: the convolutional-network ops of the
 * host backends (ops.h states what each computes).
 *
 * conv_ref.c holds ref's definitions: the convolutions as direct loops
 * accumulating in double (independent of the im2col arithmetic, which they
 * check), and the loops over elem.h for the light ops, which cpu shares
 * (memory-bound passes with nothing to gain from a second version).
 * conv_cpu.c holds cpu's oneDNN convolutions and pooling; conv_gemm.c the
 * im2col + gemm convolution over any backend's table (cuda's without
 * cuDNN, and the conformance suite's check of the im2col arithmetic).
 */
#ifndef MGPU_OPS_CONV_HOST_H
#define MGPU_OPS_CONV_HOST_H

#include <stddef.h> /* size_t */

#include "ops/ops.h" /* struct mgpu_dev, struct mgpu_conv, struct mgpu_pool2d, struct mgpu_bn */

#ifdef __cplusplus
extern "C" {
#endif

/* conv_ref.c: ref's convolutions and pooling */
int mgpu_ref_conv_fwd(struct mgpu_dev *dev, const struct mgpu_conv *g, float *y, const float *x,
		      const float *w, const float *bias);
int mgpu_ref_conv_bwd_data(struct mgpu_dev *dev, const struct mgpu_conv *g, float *dx,
			   const float *dy, const float *w);
int mgpu_ref_conv_bwd_weight(struct mgpu_dev *dev, const struct mgpu_conv *g, float *dw,
			     float *db, const float *x, const float *dy, float acc);
int mgpu_ref_pool_fwd(struct mgpu_dev *dev, const struct mgpu_pool2d *g, float *y,
		      const float *x);
int mgpu_ref_pool_bwd(struct mgpu_dev *dev, const struct mgpu_pool2d *g, float *dx,
		      const float *dy, const float *x);

/* conv_ref.c: the light ops of ref and cpu */
int mgpu_host_act_fwd(struct mgpu_dev *dev, enum mgpu_act act, float *Y, const float *X,
		      size_t n);
int mgpu_host_im2col(struct mgpu_dev *dev, const struct mgpu_conv *g, float *col,
		     const float *x);
int mgpu_host_col2im(struct mgpu_dev *dev, const struct mgpu_conv *g, float *dx,
		     const float *col);
int mgpu_host_upsample_fwd(struct mgpu_dev *dev, int N, int C, int H, int W, int sh, int sw,
			   float *y, const float *x);
int mgpu_host_upsample_bwd(struct mgpu_dev *dev, int N, int C, int H, int W, int sh, int sw,
			   float *dx, const float *dy);
int mgpu_host_bn_stats(struct mgpu_dev *dev, const struct mgpu_bn *bn, float *stats,
		       const float *x, const float *shift);
int mgpu_host_bn_fwd(struct mgpu_dev *dev, const struct mgpu_bn *bn, float *y, float *mean,
		     float *rstd, const float *x, const float *stats, const float *shift,
		     const float *gamma, const float *beta, float *running_mean,
		     float *running_var);
int mgpu_host_bn_bwd_stats(struct mgpu_dev *dev, const struct mgpu_bn *bn, float *dstats,
			   float *dgamma, float *dbeta, const float *dy, const float *x,
			   const float *mean, const float *rstd, float acc);
int mgpu_host_bn_bwd_data(struct mgpu_dev *dev, const struct mgpu_bn *bn, float *dx,
			  const float *dy, const float *x, const float *mean, const float *rstd,
			  const float *gamma, const float *dstats);
int mgpu_host_gn_fwd(struct mgpu_dev *dev, int N, int C, int HW, int G, float *y, float *mean,
		     float *rstd, const float *x, const float *gamma, const float *beta,
		     float eps);
int mgpu_host_gn_bwd(struct mgpu_dev *dev, int N, int C, int HW, int G, float *dx,
		     float *dgamma, float *dbeta, const float *dy, const float *x,
		     const float *mean, const float *rstd, const float *gamma, float acc);
int mgpu_host_chan_bias(struct mgpu_dev *dev, int N, int C, int HW, float *y,
			const float *bias);
int mgpu_host_chan_sum(struct mgpu_dev *dev, int N, int C, int HW, float *db, const float *dy,
		       float acc);

/* conv_cpu.c: oneDNN (primitives cached per device and shape) */
int mgpu_cpu_conv_fwd(struct mgpu_dev *dev, const struct mgpu_conv *g, float *y, const float *x,
		      const float *w, const float *bias);
int mgpu_cpu_conv_bwd_data(struct mgpu_dev *dev, const struct mgpu_conv *g, float *dx,
			   const float *dy, const float *w);
int mgpu_cpu_conv_bwd_weight(struct mgpu_dev *dev, const struct mgpu_conv *g, float *dw,
			     float *db, const float *x, const float *dy, float acc);
int mgpu_cpu_pool_fwd(struct mgpu_dev *dev, const struct mgpu_pool2d *g, float *y,
		      const float *x);
int mgpu_cpu_pool_bwd(struct mgpu_dev *dev, const struct mgpu_pool2d *g, float *dx,
		      const float *dy, const float *x);
/* dev's primitives and their buffers, freed (cpu's fini). */
void mgpu_cpu_dnnl_release(void *state);

/* conv_gemm.c: the im2col convolution on dev's own im2col, col2im and
 * gemm, one sample at a time, every group in one strided
 * product. The same semantics and checks as the ops; scratch columns are
 * allocated per call through the device (counted). */
int mgpu_gemm_conv_fwd(struct mgpu_dev *dev, const struct mgpu_conv *g, float *y,
		       const float *x, const float *w, const float *bias);
int mgpu_gemm_conv_bwd_data(struct mgpu_dev *dev, const struct mgpu_conv *g, float *dx,
			    const float *dy, const float *w);
int mgpu_gemm_conv_bwd_weight(struct mgpu_dev *dev, const struct mgpu_conv *g, float *dw,
			      float *db, const float *x, const float *dy, float acc);

#ifdef __cplusplus
}
#endif

#endif
