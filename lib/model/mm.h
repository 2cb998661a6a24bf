/*
 * mm.h - the models' matrix products in the precision the model was set
 * to (model.h: mgpu_model_set_prec), internal to lib/model: the families
 * call these instead of the gemm op, with its fp32 arguments.
 *
 * fp32: straight to gemm. bf16: A and B are rounded to bf16 (round to
 * nearest even) and go to gemm in bf16, which accumulates in fp32 into the
 * fp32 C; everything outside the products
 * (master weights, gradients, optimizer state, LayerNorm, softmax, the
 * loss) stays fp32. An operand inside the flat weight buffer m->w is read
 * from m->w16, the copy mgpu_mm_round_weights rounds at the start of each
 * forward (so updates made during backward, as the sharded ddp sync does,
 * never mix old and new weights within a step); any other operand (an
 * activation or a gradient) is rounded into one of two scratch buffers of
 * the model's device, grown to the largest operand seen. fp16 does the
 * same with IEEE binary16 (gemm in fp16): its narrower range is what the loss
 * scaling of the training loop (train/train.h) is for.
 */
#ifndef MGPU_MODEL_MM_H
#define MGPU_MODEL_MM_H

#include "model/model.h" /* struct mgpu_model */

/* C = alpha op(A) op(B) + beta C, column-major, one product of ops.h's gemm. */
int mgpu_mm(struct mgpu_model *m, enum mgpu_trans ta, enum mgpu_trans tb, int M, int N,
	    int K, float alpha, const float *A, int lda, const float *Bm, int ldb, float beta,
	    float *C, int ldc);
/* The same for `batch` products strides apart. */
int mgpu_mm_strided(struct mgpu_model *m, enum mgpu_trans ta, enum mgpu_trans tb, int M,
		    int N, int K, float alpha, const float *A, int lda, long long sa,
		    const float *Bm, int ldb, long long sb, float beta, float *C, int ldc,
		    long long sc, int batch);
/* Promise that nothing has written the last product's non-weight operands
 * since: the next product (only) reads an operand's rounded copy again
 * where it is the same pointer and span in the same scratch slot, instead
 * of rounding it anew (a linear layer's backward reads dY twice, the head's
 * the (N,V) logits' gradient). No effect in fp32. */
void mgpu_mm_reuse(struct mgpu_model *m);
/* bf16, fp16: round m->w into m->w16 (a forward's first call); fp32: nothing. */
int mgpu_mm_round_weights(struct mgpu_model *m);
/* Release w16 and the scratch (the model's free). */
void mgpu_mm_free(struct mgpu_model *m);

#endif
