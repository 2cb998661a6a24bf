/*
 * hd.h - MGPU_HD marks a function compiled for both host and device:
 * __host__ __device__ under nvcc, nothing under a C compiler. Header-only
 * math that CPU loops and CUDA kernels share (ops/elem.h, core/hash.h)
 * carries it, so the arithmetic is written once.
 */
#ifndef MGPU_CORE_HD_H
#define MGPU_CORE_HD_H

#ifdef __CUDACC__
#define MGPU_HD __host__ __device__
#else
#define MGPU_HD
#endif

#endif
