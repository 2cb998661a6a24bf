/*
 * lm.h - what `mgpu-bench train` adds to a row when the workload is a gpt:
 * tokens/s, model FLOPs utilisation against the device's peak, and the
 * memory per device computed by hand, to print next to the measured peak.
 *
 * Model FLOPs per token (PaLM's appendix B, as nanoGPT counts them):
 *   6 N + 12 L T D
 * N the parameters that take part in a matrix product (all but the
 * position embedding; the token embedding counts once, as the tied head),
 * 6 = 2 forward + 4 backward FLOPs per parameter and token; 12 L T D is the
 * attention scores and their use (q k^T and P v, forward and backward) over
 * the full T x T square, causal mask or not. MFU = tokens/s x that /
 * (devices x the peak FLOP/s of one device).
 *
 * Peak of one device (struct mgpu_bench_peak, with a line saying how):
 *  - a CPU rank computes with one BLAS thread, so its device is one core:
 *    clock x fp32 FLOPs per cycle of the widest vector ISA the CPU reports,
 *    taking 2 FMA (or add + multiply) pipes: AVX-512 64, AVX2 + FMA 32,
 *    AVX 16, SSE 8. The clock is cpufreq's cpuinfo_max_freq where the
 *    kernel has one, else /proc/cpuinfo's "cpu MHz" (the clock now).
 *  - a GPU: a table of dense tensor-core bf16 and plain fp32 peaks by name
 *    (datasheet figures, no sparsity), e.g. H100 SXM 989 and 67 TFLOP/s.
 *
 * Memory by hand, per device, 4-byte floats, micro-batch B:
 *   weights N' + gradients N' + optimizer state s N' (AdamW s = 2, SGD with
 *   momentum 1, without 0), N' all parameters; with W CPU ranks in mode ddp
 *   the weights and state are shared, each rank counting its 1/W share
 *   (as mgpu-train's peak_bytes does); plus the activations kept for the
 *   backward pass, per token: per block 16 D + H (LayerNorm outputs D +
 *   D, q k v 3D, the attention rows' log-sum-exp H, heads' output D,
 *   residual D, MLP pre- and post-activation 8D, block output D), and 2 D
 *   + V more (the embedding sum, the final LayerNorm, the logits, whose
 *   gradient the loss writes over them in place; V the real vocab, not
 *   padded_vocab), the backward's scratch 11 D (seven (N,D) buffers and
 *   one (N,4D)) and 4 more for the ids, targets, row losses and correct
 *   flags. The fused attention stores nothing of size T x T.
 * In bf16 (--dtype bf16, lib/model/mm.c) each rank also holds 2-byte copies:
 *   the rounded weights, N' (its own, never shared), and two scratch buffers
 *   that the products' non-weight operands are rounded into, each grown to
 *   the largest such operand: first operands B T 4D (the MLP output's
 *   weight gradient reads the GELU output), second B T max(4D, V) (the
 *   MLP's input gradient, the logits' gradient in the tied head's
 *   products), so 2 (N' + B T (4D + max(4D, V))) bytes more (attention
 *   rounds its own operands inside the fused op).
 * Everything here is pure but mgpu_bench_peak_cpu_host, which reads /proc.
 */
#ifndef MGPU_BENCH_LM_H
#define MGPU_BENCH_LM_H

#include <stdint.h> /* int64_t */

#include "bench/sweep.h" /* struct mgpu_bench_trow */
#include "model/spec.h"     /* struct mgpu_spec */

struct mgpu_bench_peak {
	double flops;   /* FLOP/s of one device; 0: unknown */
	char how[200];  /* "1 core x 2.45 GHz (...) x 32 FLOP/cycle (AVX2 + FMA)" */
};

/* The peak of one CPU core from a /proc/cpuinfo flags line and a clock in
 * MHz (clock_src names where it came from). */
void mgpu_bench_peak_cpu(const char *flags, double mhz, const char *clock_src,
			 struct mgpu_bench_peak *p);
/* The same for this host. */
void mgpu_bench_peak_cpu_host(struct mgpu_bench_peak *p);
/* A GPU by its name ("NVIDIA H100 80GB HBM3"); bf16 picks the tensor-core
 * bf16 peak, else fp32. flops 0 and how saying so when it is not in the
 * table. */
void mgpu_bench_peak_gpu(const char *name, int bf16, struct mgpu_bench_peak *p);

/* 6 N + 12 L T D of a gpt spec (N without the position table and the
 * padding rows of the token embedding, which are in no product); 0 for an
 * mlp. */
double mgpu_bench_gpt_flops_per_token(const struct mgpu_spec *s);

/* Memory by hand of one device (see above): a gpt, micro-batch B, nstate
 * optimizer slots per parameter, share = W when the weights and state are
 * split over W ranks (CPU ranks, mode ddp), else 1; bf16 adds the bf16
 * copies. */
int64_t mgpu_bench_gpt_mem_estimate(const struct mgpu_spec *s, int B, int nstate, int share,
				    int bf16);

/* What a workload's mgpu-train arguments say about the model: the last
 * --model (a spec or a file), --optimizer, --momentum, --grad-accum-steps
 * and --dtype, each as "--opt V" or "--opt=V" (NULL-terminated argv).
 * No --model: the defaults of mgpu-train, an mlp. */
struct mgpu_bench_workload {
	struct mgpu_spec spec;
	int nstate;  /* optimizer slots per parameter */
	int accum;   /* micro-steps per step */
	int bf16;    /* --dtype bf16 */
};
int mgpu_bench_workload_parse(const char *const *argv, struct mgpu_bench_workload *w);

/* r's gpt columns from what it measured (samples_per_s, effective_batch,
 * devices, kind, mode): ctx 0 and the rest unknown for an mlp; the memory
 * estimate is left unknown in mode dp (device 0 holds more). */
void mgpu_bench_lm_fill(struct mgpu_bench_trow *r, const struct mgpu_bench_workload *w,
			const struct mgpu_bench_peak *pk);

#endif
