/*
 * cudnn_dl.h - cuDNN 9, loaded at run time with dlopen on the first
 * convolution (conv_cuda.cu), as cuBLAS is (cublas_dl.h): a process that
 * never convolves neither pays for it nor needs it installed. The table
 * holds the entry points of the (legacy) convolution API mgpu calls,
 * resolved by their exported names from libcudnn.so.9, which loads its
 * sub-libraries itself.
 */
#ifndef MGPU_OPS_CUDNN_DL_H
#define MGPU_OPS_CUDNN_DL_H

#include <cudnn.h> /* cudnnHandle_t, descriptors, enums, perf structs */

#ifdef __cplusplus
extern "C" {
#endif

struct mgpu_cudnn {
	size_t (*get_version)(void);
	const char *(*error_string)(cudnnStatus_t s);
	cudnnStatus_t (*create)(cudnnHandle_t *h);
	cudnnStatus_t (*destroy)(cudnnHandle_t h);
	cudnnStatus_t (*set_stream)(cudnnHandle_t h, cudaStream_t s);
	cudnnStatus_t (*create_tensor)(cudnnTensorDescriptor_t *d);
	cudnnStatus_t (*destroy_tensor)(cudnnTensorDescriptor_t d);
	cudnnStatus_t (*set_tensor4d)(cudnnTensorDescriptor_t d, cudnnTensorFormat_t f,
				      cudnnDataType_t t, int n, int c, int h, int w);
	cudnnStatus_t (*create_filter)(cudnnFilterDescriptor_t *d);
	cudnnStatus_t (*destroy_filter)(cudnnFilterDescriptor_t d);
	cudnnStatus_t (*set_filter4d)(cudnnFilterDescriptor_t d, cudnnDataType_t t,
				      cudnnTensorFormat_t f, int k, int c, int h, int w);
	cudnnStatus_t (*create_conv)(cudnnConvolutionDescriptor_t *d);
	cudnnStatus_t (*destroy_conv)(cudnnConvolutionDescriptor_t d);
	cudnnStatus_t (*set_conv2d)(cudnnConvolutionDescriptor_t d, int ph, int pw, int sh,
				    int sw, int dh, int dw, cudnnConvolutionMode_t mode,
				    cudnnDataType_t compute);
	cudnnStatus_t (*set_conv_groups)(cudnnConvolutionDescriptor_t d, int groups);
	cudnnStatus_t (*set_conv_math)(cudnnConvolutionDescriptor_t d, cudnnMathType_t m);
	cudnnStatus_t (*fwd_algo)(cudnnHandle_t h, cudnnTensorDescriptor_t x,
				  cudnnFilterDescriptor_t w, cudnnConvolutionDescriptor_t c,
				  cudnnTensorDescriptor_t y, int want, int *got,
				  cudnnConvolutionFwdAlgoPerf_t *perf);
	cudnnStatus_t (*bwd_data_algo)(cudnnHandle_t h, cudnnFilterDescriptor_t w,
				       cudnnTensorDescriptor_t dy, cudnnConvolutionDescriptor_t c,
				       cudnnTensorDescriptor_t dx, int want, int *got,
				       cudnnConvolutionBwdDataAlgoPerf_t *perf);
	cudnnStatus_t (*bwd_filter_algo)(cudnnHandle_t h, cudnnTensorDescriptor_t x,
					 cudnnTensorDescriptor_t dy, cudnnConvolutionDescriptor_t c,
					 cudnnFilterDescriptor_t dw, int want, int *got,
					 cudnnConvolutionBwdFilterAlgoPerf_t *perf);
	cudnnStatus_t (*fwd)(cudnnHandle_t h, const void *alpha, cudnnTensorDescriptor_t xd,
			     const void *x, cudnnFilterDescriptor_t wd, const void *w,
			     cudnnConvolutionDescriptor_t c, cudnnConvolutionFwdAlgo_t algo,
			     void *ws, size_t ws_bytes, const void *beta,
			     cudnnTensorDescriptor_t yd, void *y);
	cudnnStatus_t (*bwd_data)(cudnnHandle_t h, const void *alpha, cudnnFilterDescriptor_t wd,
				  const void *w, cudnnTensorDescriptor_t dyd, const void *dy,
				  cudnnConvolutionDescriptor_t c, cudnnConvolutionBwdDataAlgo_t algo,
				  void *ws, size_t ws_bytes, const void *beta,
				  cudnnTensorDescriptor_t dxd, void *dx);
	cudnnStatus_t (*bwd_filter)(cudnnHandle_t h, const void *alpha, cudnnTensorDescriptor_t xd,
				    const void *x, cudnnTensorDescriptor_t dyd, const void *dy,
				    cudnnConvolutionDescriptor_t c,
				    cudnnConvolutionBwdFilterAlgo_t algo, void *ws, size_t ws_bytes,
				    const void *beta, cudnnFilterDescriptor_t dwd, void *dw);
	cudnnStatus_t (*bwd_bias)(cudnnHandle_t h, const void *alpha, cudnnTensorDescriptor_t dyd,
				  const void *dy, const void *beta, cudnnTensorDescriptor_t dbd,
				  void *db);
	cudnnStatus_t (*add_tensor)(cudnnHandle_t h, const void *alpha, cudnnTensorDescriptor_t ad,
				    const void *a, const void *beta, cudnnTensorDescriptor_t cd,
				    void *c);
};

/* Load libcudnn.so.9 once (thread-safe); MGPU_EUNSUP with dlerror's text
 * (or the missing symbol, or a version below 9) when it cannot be used. */
int mgpu_cudnn_load(const struct mgpu_cudnn **api);

#ifdef __cplusplus
}
#endif

#endif
