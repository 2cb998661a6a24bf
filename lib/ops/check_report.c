/*
 * check_report.c - the report of a check (check.h): each op's tolerance,
 * and the rows the cases of check.c and check_conv.c append, each judged
 * by its op's tolerance.
 */
#include "ops/check.h"

#include <stdio.h>  /* snprintf */
#include <string.h> /* strcmp */

static const struct {
	const char *op;
	double tol;
} tolerances[] = {
	{ "gemm", 2e-5 },    { "nrm2", 1e-5 },
	{ "bias_act", 1e-5 }, { "act_bwd", 1e-5 }, { "col_sum", 1e-5 },
	{ "ln_fwd", 1e-5 },  { "ln_bwd", 1e-4 },  { "dropout", 1e-6 },
	{ "xent", 1e-5 },    { "u8_to_f32", 1e-6 }, { "sgd", 1e-6 },
	{ "adamw", 1e-5 },
	{ "add", 1e-6 },     { "emb_fwd", 1e-6 },
	{ "emb_bwd", 1e-5 },
	{ "heads_split", 1e-6 },    { "heads_merge", 1e-6 },  { "f32_to_bf16", 1e-6 },
	{ "bf16_to_f32", 1e-6 },
	/* fused attention: fp32 sums in another order than ref's exact ones */
	{ "attn_fwd", 2e-5 }, { "attn_bwd", 5e-5 },
	/* under bf16 a probability (or ds) that lands next to a rounding
	 * boundary rounds one way here and the other way in ref: one bf16
	 * step (2^-8 of the value) in a product, and the rows with few
	 * positions have probabilities near 1; cpu against ref stays
	 * below 6e-4 */
	{ "attn_fwd_bf16", 4e-3 }, { "attn_bwd_bf16", 4e-3 },
	/* fp32 accumulation of exact bf16 products against ref's double sum;
	 * looser than fp32's for tensor cores' summation order (bf16
	 * accumulation would be off by 1e-3 and more) */
	{ "gemm_bf16", 1e-4 },      { "gemm_f16", 1e-4 },     { "f32_to_f16", 1e-6 },
	/* every backend adds in elem.h's order: the same bits (the bound is
	 * not 0 only so that a row always has one) */
	{ "sum_acc", 1e-15 },
	/* conv nets: fp32 sums of up to a few thousand products (oneDNN's,
	 * cuDNN's and gemm's orders) against ref's double ones; the weight
	 * gradient sums over N OH OW */
	{ "conv_fwd", 2e-5 }, { "conv_bwd_data", 2e-5 }, { "conv_bwd_weight", 5e-5 },
	/* bf16: the same rounded operands on both sides, so only the order
	 * of fp32 sums differs (AVX512-BF16's pairs, tensor cores' blocks);
	 * an operand left unrounded or truncated instead of rounded moves a
	 * sum by about 2^-9 of its size, 20 times this */
	{ "conv_fwd_bf16", 1e-4 }, { "conv_bwd_data_bf16", 1e-4 },
	{ "conv_bwd_weight_bf16", 1e-4 },
	{ "im2col", 1e-6 },   { "col2im", 1e-6 },
	{ "pool_fwd", 1e-6 }, { "pool_bwd", 1e-6 },
	{ "upsample_fwd", 1e-6 }, { "upsample_bwd", 1e-6 },
	{ "bn_stats", 1e-5 }, { "bn_fwd", 1e-5 }, { "bn_bwd_stats", 1e-5 },
	{ "bn_bwd_data", 1e-4 }, { "gn_fwd", 1e-5 }, { "gn_bwd", 1e-4 },
	{ "act_fwd", 1e-5 }, { "chan_bias", 1e-6 }, { "chan_sum", 1e-5 },
	{ "mse", 1e-5 }, { "pix_xent", 1e-5 },
};

double mgpu_ops_tolerance(const char *op)
{
	size_t i;

	for (i = 0; i < sizeof tolerances / sizeof tolerances[0]; i++)
		if (strcmp(tolerances[i].op, op) == 0)
			return tolerances[i].tol;
	return 0.0;
}

void mgpu_ops_report_add(struct mgpu_ops_pair *p, const char *op, const char *shape,
			 double err)
{
	struct mgpu_ops_report *rep = p->rep;
	struct mgpu_ops_row *row;
	double tol = mgpu_ops_tolerance(op);
	int ok = err <= tol;

	rep->nfail += !ok;
	if (rep->nrows == MGPU_OPS_REPORT_MAX) {
		rep->nlost++;
		return;
	}
	row = &rep->row[rep->nrows++];
	row->op = op;
	snprintf(row->shape, sizeof row->shape, "%s", shape);
	row->backend = p->dev[0].ops->name;
	row->ref_backend = p->dev[1].ops->name;
	row->max_rel_err = err;
	row->tol = tol;
	row->ok = ok;
}
