/*
 * gpu_int.h - what the files of lib/gpu share and nothing else uses.
 *
 * gpu_cuda.c asks the CUDA runtime (compiled in when MGPU_HAVE_CUDA),
 * gpu_nvml.c asks NVML (libnvidia-ml.so.1, loaded with dlopen whenever it
 * is there), gpu_host.c asks the operating system. Each fills its part of
 * a list or report and never fails: what it cannot learn stays -1 or "".
 */
#ifndef MGPU_GPU_GPU_INT_H
#define MGPU_GPU_GPU_INT_H

#include <stddef.h> /* size_t */

#include "gpu/gpu.h" /* struct mgpu_gpu_list, struct mgpu_gpu_system */

/* A GPU record with every field unknown. */
void mgpu_gpu_blank(struct mgpu_gpu *g);

/* Add NVML's facts to the GPUs of list, matched by UUID; 0 when NVML was
 * used, MGPU_EUNSUP with why when it cannot be loaded or initialised. */
int mgpu_gpu_nvml_fill(struct mgpu_gpu_list *list, char *why, size_t whylen);

/* NVML's driver version, GPU count and the NVLink matrix into s. */
void mgpu_gpu_nvml_system(const struct mgpu_gpu_list *list, struct mgpu_gpu_system *s);

/* CUDA driver, runtime and cuBLAS versions and the P2P matrix into s. */
void mgpu_gpu_cuda_system(const struct mgpu_gpu_list *list, struct mgpu_gpu_system *s);

#endif
