/* sdpa_graph.c - cuDNN's fused flash attention (SDPA forward and backward)
 * as backend operation graphs, built from C, and their execution plans.
 *
 * The graph is the pattern cuDNN's fused attention engines match (the one
 * cudnn-frontend's composite SDPA node lowers to), on 4-d tensors
 * [batch, heads, seq, dim]:
 *
 *   S = Q K^T                      matmul, K described transposed by strides
 *   S = S * scale                  pointwise MUL, scale passed by value
 *   padding (varlen, bottom-right) row < seq_q[b] and col < seq_kv[b], else -inf
 *   causal (bottom-right)          row + seq_kv[b] - seq_q[b] >= col, else -inf
 *                                  (by-value int32 lengths when fixed: gb_masks)
 *     prefix_lm                      ... or col < prefix[b]
 *   sliding window (left bound)    col + window - seq_kv + seq_q > row, else -inf
 *   softmax                        max, sub, exp, sum, div; stats = max + log(sum)
 *                                  (fp32: fabench's LSE, or the workspace)
 *   O = P V                        matmul, P in the input type
 *
 * Masks are index tensors (GEN_INDEX over the score's row and column axes),
 * comparisons and a BINARY_SELECT of -inf. GQA needs nothing: K and V have
 * kv_heads heads and cuDNN broadcasts them over the query heads. Varlen
 * cases use ragged offsets (element offsets of each sequence, batch + 1
 * int32) on Q, K, V and O (and on fabench's LSE where the stats go there:
 * cu_seqlens_q[b] x heads), per-sequence lengths for the padding mask, and
 * the lengths as matmul M/N/K overrides. A masked case with fixed lengths
 * q_len != kv_len (bottom-right diagonal) takes q_len and kv_len as by-value
 * int32 scalars (the default form; $FABENCH_CUDNN_BR picks another to debug
 * with: gb_masks). The backward graph (gb_graph_bwd) recomputes P from the
 * stats with the same masks, varlen with the same ragged offsets (dO, dQ,
 * dK, dV those of O, Q, K, V).
 *
 * Every non-virtual tensor is used by an operation: the variant pack names
 * exactly the graph's tensors (a declared but unused tensor, as the -inf of
 * an unmasked graph was, fails execution with BAD_PARAM_NULL_POINTER).
 *
 * Every descriptor made for a plan is kept with it and destroyed with it.
 */
#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "cudnn_internal.h"

/* Engine configurations tried, best first by the heuristics. */
#define GB_MAX_CONFIGS 8
#define GB_MAX_OPS 64
/* Byte alignment declared for every tensor: fabench's buffers come from
 * cudaMalloc (256-byte aligned) and head rows are 16-byte multiples
 * (head_dim % 8 == 0 for 2-byte types). */
#define GB_ALIGN_BYTES 16

struct gb {
	struct fa_cudnn_api *api;
	struct fa_cudnn_plan *pl;
	cudnnBackendDescriptor_t ops[GB_MAX_OPS];
	int n_ops;
	int64_t next_uid;
	int failed;
	/* the variant tensors (pl->uids order) and whether an operation or a
	 * tensor uses each: the variant pack must name no unused tensor */
	cudnnBackendDescriptor_t variant[FA_CUDNN_MAX_VARIANTS];
	int used[FA_CUDNN_MAX_VARIANTS];
};

/* Marks d used when it is a variant tensor. */
static void gb_use(struct gb *g, cudnnBackendDescriptor_t d)
{
	for (int i = 0; d && i < g->pl->n_uids; i++)
		if (g->variant[i] == d)
			g->used[i] = 1;
}

static void gb_fail(struct gb *g, cudnnStatus_t st, const char *step)
{
	char txt[400];
	if (g->failed)
		return;
	fa_cudnn_status_text(g->api, st, txt, sizeof txt);
	snprintf(g->pl->why, sizeof g->pl->why, "cuDNN %s failed: %s", step, txt);
	g->pl->status = (int)st;
	g->failed = 1;
}

static void gb_fail_text(struct gb *g, const char *text)
{
	if (g->failed)
		return;
	snprintf(g->pl->why, sizeof g->pl->why, "%s", text);
	g->pl->status = (int)CUDNN_STATUS_INTERNAL_ERROR;
	g->failed = 1;
}

static cudnnBackendDescriptor_t gb_new(struct gb *g, cudnnBackendDescriptorType_t type,
				       const char *step)
{
	cudnnBackendDescriptor_t d = NULL;
	cudnnStatus_t st;
	if (g->failed)
		return NULL;
	if (g->pl->n_descs >= FA_CUDNN_MAX_DESCS) {
		gb_fail_text(g, "cudnn_sdpa: graph needs more descriptors than FA_CUDNN_MAX_DESCS");
		return NULL;
	}
	if ((st = g->api->create_desc(type, &d)) != CUDNN_STATUS_SUCCESS) {
		gb_fail(g, st, step);
		return NULL;
	}
	g->pl->descs[g->pl->n_descs++] = d;
	return d;
}

static void gb_set(struct gb *g, cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name,
		   cudnnBackendAttributeType_t type, int64_t n, const void *v, const char *step)
{
	cudnnStatus_t st;
	if (g->failed || !d)
		return;
	if ((st = g->api->set_attr(d, name, type, n, v)) != CUDNN_STATUS_SUCCESS)
		gb_fail(g, st, step);
}

static void gb_finalize(struct gb *g, cudnnBackendDescriptor_t d, const char *step)
{
	cudnnStatus_t st;
	if (g->failed || !d)
		return;
	if ((st = g->api->finalize(d)) != CUDNN_STATUS_SUCCESS)
		gb_fail(g, st, step);
}

/* A tensor: uid below FA_CUDNN_UID_FIRST_VIRTUAL names a variant pack
 * entry, uid 0 asks for a virtual tensor (a fresh id); f16x16: cuDNN's
 * F16x16 reordering (the backward's dQ accumulator). */
static cudnnBackendDescriptor_t gb_tensor_r(struct gb *g, int64_t uid, cudnnDataType_t dt,
					    const int64_t dims[4], const int64_t strides[4],
					    int by_value, cudnnBackendDescriptor_t ragged, int f16x16)
{
	cudnnBackendDescriptor_t d = gb_new(g, CUDNN_BACKEND_TENSOR_DESCRIPTOR, "tensor create");
	int64_t align = GB_ALIGN_BYTES;
	bool is_virtual = uid == 0, bv = by_value != 0;
	if (!d)
		return NULL;
	if (is_virtual)
		uid = g->next_uid++;
	gb_set(g, d, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &dt, "tensor data type");
	gb_set(g, d, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims, "tensor dimensions");
	gb_set(g, d, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides, "tensor strides");
	gb_set(g, d, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid, "tensor uid");
	gb_set(g, d, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align,
	       "tensor alignment");
	gb_set(g, d, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &is_virtual,
	       "tensor is_virtual");
	if (bv)
		gb_set(g, d, CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &bv,
		       "tensor is_by_value");
	if (ragged)
		gb_set(g, d, CUDNN_ATTR_TENSOR_RAGGED_OFFSET_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
		       &ragged, "tensor ragged offset");
	if (f16x16) {
		cudnnBackendTensorReordering_t ro = CUDNN_TENSOR_REORDERING_F16x16;
		gb_set(g, d, CUDNN_ATTR_TENSOR_REORDERING_MODE, CUDNN_TYPE_TENSOR_REORDERING_MODE, 1,
		       &ro, "tensor reordering");
	}
	gb_finalize(g, d, "tensor finalize");
	if (!is_virtual && !g->failed) {
		if (g->pl->n_uids >= FA_CUDNN_MAX_VARIANTS) {
			gb_fail_text(g, "cudnn_sdpa: more variant tensors than FA_CUDNN_MAX_VARIANTS");
			return NULL;
		}
		g->variant[g->pl->n_uids] = d;
		g->pl->uids[g->pl->n_uids++] = uid;
	}
	gb_use(g, ragged);
	return g->failed ? NULL : d;
}

static cudnnBackendDescriptor_t gb_tensor(struct gb *g, int64_t uid, cudnnDataType_t dt,
					  const int64_t dims[4], const int64_t strides[4],
					  int by_value, cudnnBackendDescriptor_t ragged)
{
	return gb_tensor_r(g, uid, dt, dims, strides, by_value, ragged, 0);
}

/* A virtual tensor of dims, packed (last dimension contiguous). */
static cudnnBackendDescriptor_t gb_virtual(struct gb *g, cudnnDataType_t dt, const int64_t dims[4])
{
	int64_t s[4];
	s[3] = 1;
	s[2] = dims[3];
	s[1] = dims[2] * dims[3];
	s[0] = dims[1] * dims[2] * dims[3];
	return gb_tensor(g, 0, dt, dims, s, 0, NULL);
}

static void gb_op(struct gb *g, cudnnBackendDescriptor_t op)
{
	if (g->failed || !op)
		return;
	if (g->n_ops >= GB_MAX_OPS) {
		gb_fail_text(g, "cudnn_sdpa: graph has more operations than GB_MAX_OPS");
		return;
	}
	g->ops[g->n_ops++] = op;
}

/* y = mode(x, b, t); b and t may be NULL; axis < 0: not set. Returns y. */
static cudnnBackendDescriptor_t gb_pw(struct gb *g, cudnnPointwiseMode_t mode, cudnnDataType_t prec,
				      int64_t axis, cudnnBackendDescriptor_t x,
				      cudnnBackendDescriptor_t b, cudnnBackendDescriptor_t t,
				      cudnnBackendDescriptor_t y)
{
	cudnnBackendDescriptor_t pw = gb_new(g, CUDNN_BACKEND_POINTWISE_DESCRIPTOR, "pointwise create");
	cudnnBackendDescriptor_t op;
	gb_set(g, pw, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode,
	       "pointwise mode");
	gb_set(g, pw, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &prec,
	       "pointwise math precision");
	if (axis >= 0) {
		gb_set(g, pw, CUDNN_ATTR_POINTWISE_AXIS, CUDNN_TYPE_INT64, 1, &axis, "pointwise axis");
		g->pl->n_axis_other += mode != CUDNN_POINTWISE_GEN_INDEX;
	}
	gb_finalize(g, pw, "pointwise finalize");
	op = gb_new(g, CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, "pointwise operation create");
	gb_set(g, op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
	       &pw, "pointwise operation descriptor");
	gb_set(g, op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x,
	       "pointwise x");
	if (b)
		gb_set(g, op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
		       &b, "pointwise b");
	if (t)
		gb_set(g, op, CUDNN_ATTR_OPERATION_POINTWISE_TDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
		       &t, "pointwise t");
	gb_set(g, op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y,
	       "pointwise y");
	gb_finalize(g, op, "pointwise operation finalize");
	gb_op(g, op);
	gb_use(g, x), gb_use(g, b), gb_use(g, t), gb_use(g, y);
	return g->failed ? NULL : y;
}

/* y = reduce(x) over the last axis (y's last dimension is 1). */
static void gb_reduce(struct gb *g, cudnnReduceTensorOp_t how, cudnnBackendDescriptor_t x,
		      cudnnBackendDescriptor_t y)
{
	cudnnBackendDescriptor_t rd = gb_new(g, CUDNN_BACKEND_REDUCTION_DESCRIPTOR, "reduction create");
	cudnnBackendDescriptor_t op;
	cudnnDataType_t f32 = CUDNN_DATA_FLOAT;
	gb_set(g, rd, CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 1, &how,
	       "reduction operator");
	gb_set(g, rd, CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &f32,
	       "reduction compute type");
	gb_finalize(g, rd, "reduction finalize");
	op = gb_new(g, CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR, "reduction operation create");
	gb_set(g, op, CUDNN_ATTR_OPERATION_REDUCTION_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x,
	       "reduction x");
	gb_set(g, op, CUDNN_ATTR_OPERATION_REDUCTION_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y,
	       "reduction y");
	gb_set(g, op, CUDNN_ATTR_OPERATION_REDUCTION_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &rd,
	       "reduction descriptor");
	gb_finalize(g, op, "reduction operation finalize");
	gb_op(g, op);
	gb_use(g, x), gb_use(g, y);
}

/* c = a b, fp32 accumulation; m, n, k: per-batch GEMM size overrides (varlen) or NULL. */
static void gb_matmul(struct gb *g, cudnnBackendDescriptor_t a, cudnnBackendDescriptor_t b,
		      cudnnBackendDescriptor_t c, cudnnBackendDescriptor_t m,
		      cudnnBackendDescriptor_t n, cudnnBackendDescriptor_t k)
{
	cudnnBackendDescriptor_t md = gb_new(g, CUDNN_BACKEND_MATMUL_DESCRIPTOR, "matmul create");
	cudnnBackendDescriptor_t op;
	cudnnDataType_t f32 = CUDNN_DATA_FLOAT;
	gb_set(g, md, CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &f32,
	       "matmul compute type");
	gb_finalize(g, md, "matmul finalize");
	op = gb_new(g, CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR, "matmul operation create");
	gb_set(g, op, CUDNN_ATTR_OPERATION_MATMUL_ADESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &a,
	       "matmul a");
	gb_set(g, op, CUDNN_ATTR_OPERATION_MATMUL_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &b,
	       "matmul b");
	gb_set(g, op, CUDNN_ATTR_OPERATION_MATMUL_CDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &c,
	       "matmul c");
	gb_set(g, op, CUDNN_ATTR_OPERATION_MATMUL_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &md,
	       "matmul descriptor");
	if (m)
		gb_set(g, op, CUDNN_ATTR_OPERATION_MATMUL_GEMM_M_OVERRIDE_DESC,
		       CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &m, "matmul m override");
	if (n)
		gb_set(g, op, CUDNN_ATTR_OPERATION_MATMUL_GEMM_N_OVERRIDE_DESC,
		       CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, "matmul n override");
	if (k)
		gb_set(g, op, CUDNN_ATTR_OPERATION_MATMUL_GEMM_K_OVERRIDE_DESC,
		       CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &k, "matmul k override");
	gb_finalize(g, op, "matmul operation finalize");
	gb_op(g, op);
	gb_use(g, a), gb_use(g, b), gb_use(g, c);
	gb_use(g, m), gb_use(g, n), gb_use(g, k);
}

int fa_cudnn_key_padded(const struct fa_cudnn_key *k, int br)
{
	if (k->varlen)
		return 1;
	if (br == FA_CUDNN_BR_SCALAR || br == FA_CUDNN_BR_FLOAT || br == FA_CUDNN_BR_AXIS)
		return 0;
	return k->mask != FA_MASK_NONE && k->q_len != k->kv_len;
}

void fa_cudnn_key_of(const struct fa_problem *p, int kind, struct fa_cudnn_key *key)
{
	memset(key, 0, sizeof *key);
	key->kind = kind;
	key->dtype = p->dtype;
	key->batch = p->batch;
	key->heads = p->heads;
	key->kv_heads = p->kv_heads;
	key->q_len = p->q_len;
	key->kv_len = p->kv_len;
	key->head_dim = p->head_dim;
	key->head_dim_v = p->head_dim_v;
	key->mask = p->mask;
	key->window = p->mask == FA_MASK_SLIDING_WINDOW ? p->window : 0;
	key->prefix_len = p->mask == FA_MASK_PREFIX_LM ? p->prefix_len : 0;
	key->varlen = p->varlen;
	key->q_stride_b = p->q_stride_b;
	key->q_stride_s = p->q_stride_s;
	key->q_stride_h = p->q_stride_h;
	key->k_stride_b = p->k_stride_b;
	key->k_stride_s = p->k_stride_s;
	key->k_stride_h = p->k_stride_h;
	key->v_stride_b = p->v_stride_b;
	key->v_stride_s = p->v_stride_s;
	key->v_stride_h = p->v_stride_h;
	key->o_stride_b = p->o_stride_b;
	key->o_stride_s = p->o_stride_s;
	key->o_stride_h = p->o_stride_h;
}

/* The -inf of masked scores: a by-value fp32 tensor, made on first use so
 * that an unmasked graph declares no tensor it does not use. */
static cudnnBackendDescriptor_t gb_neg_inf(struct gb *g, cudnnBackendDescriptor_t *neg_inf)
{
	static const int64_t one4[4] = {1, 1, 1, 1};
	if (!*neg_inf) {
		/* cuDNN before 9.10 wants the lowest finite value for masked
		 * scores (cudnn-frontend's get_negative_inf_value) */
		g->pl->neg_inf = g->api->version < 91000 ? -FLT_MAX : -INFINITY;
		*neg_inf = gb_tensor(g, FA_CUDNN_UID_NEG_INF, CUDNN_DATA_FLOAT, one4, one4, 1, NULL);
	}
	return *neg_inf;
}

/* The masks, a boolean/int32/fp32 index pipeline per mask, as
 * cudnn-frontend's composite nodes build them (its padding_mask, and for
 * cuDNN before 9.21 its CompositeDiagonalBandMaskNode). seq_q and seq_kv
 * (device lengths, [batch, 1, 1, 1]) are given for varlen and, in the
 * legacy and padded forms, for masks aligned bottom-right; NULL otherwise.
 *
 * The forms ($FABENCH_CUDNN_BR, enum fa_cudnn_br; 4 unless set) differ
 * only where a mask is shifted (q_len != kv_len, varlen), and in two
 * attributes of the index operations. With the stats output, forms 2 and 4
 * passed every shifted case on an H100 (cuDNN 9.19, 2026-11-26; the
 * self-test's 10), form 3 gave wrong results, forms 0 and 1 were not
 * run so; without the stats every form faulted (fa_cudnn_plan_build):
 *   legacy (0)             CUDNN_ATTR_POINTWISE_AXIS 3 on ADD and SUB too;
 *                          GEN_INDEX in int32; fixed lengths padded.
 *   1, 2, 3                the axis on GEN_INDEX only: cudnn-frontend's
 *                          PointwiseDescBuilder sends the axis to cuDNN for
 *                          GEN_INDEX and drops it for every other mode;
 *                          GEN_INDEX of the diagonals in fp32, the graph's
 *                          compute type, which the frontend leaves them;
 *   1 (by-value lengths)   fixed lengths as two by-value int32 scalars,
 *                          row + kv_len - q_len >= col, no padding mask: the
 *                          frontend's graph for BOTTOM_RIGHT without one;
 *   2 (padded)             fixed lengths as device arrays [batch] with the
 *                          padding mask and the matmul overrides: the
 *                          frontend's graph with padding_mask set;
 *   3 (fp32 shift)         fixed lengths as one by-value fp32 kv_len - q_len
 *                          added to the row: no integer arithmetic. Wrong
 *                          results (max_abs 0.1 to 0.3): the engine does not
 *                          read this pattern as a shifted diagonal;
 *   4 (the default)        as 1, with the axis 3 on the int32 ADD and SUB
 *                          too: cudnn-frontend's CompositeDiagonalBandMaskNode
 *                          (its graph for cuDNN before 9.21).
 * Varlen takes the device arrays in every form. The left bound (sliding
 * window) with fixed lengths folds window - kv_len + q_len into one fp32
 * constant in every form but the padded ones (the frontend's fixed-length
 * left bound). */
static cudnnBackendDescriptor_t gb_masks(struct gb *g, const struct fa_cudnn_key *k,
					 cudnnBackendDescriptor_t s, const int64_t sd[4],
					 cudnnBackendDescriptor_t seq_q,
					 cudnnBackendDescriptor_t seq_kv)
{
	static const int64_t one4[4] = {1, 1, 1, 1};
	const cudnnDataType_t i32 = CUDNN_DATA_INT32, f32 = CUDNN_DATA_FLOAT,
			      b8 = CUDNN_DATA_BOOLEAN;
	struct fa_cudnn_plan *pl = g->pl;
	const int br = g->api->br;
	const int legacy = br == FA_CUDNN_BR_LEGACY;
	/* the axis of ADD and SUB (-1: not set), the precision of GEN_INDEX */
	const int64_t ax = legacy || br == FA_CUDNN_BR_AXIS ? 3 : -1;
	const cudnnDataType_t ip = legacy ? i32 : f32;
	const int shifted = k->varlen || k->q_len != k->kv_len;
	cudnnBackendDescriptor_t row, col, r, c, neg_inf = NULL;

	if (seq_q) {
		/* padding: rows and columns past this sequence's lengths */
		row = gb_pw(g, CUDNN_POINTWISE_GEN_INDEX, i32, 2, s, NULL, NULL, gb_virtual(g, i32, sd));
		col = gb_pw(g, CUDNN_POINTWISE_GEN_INDEX, i32, 3, s, NULL, NULL, gb_virtual(g, i32, sd));
		r = gb_pw(g, CUDNN_POINTWISE_CMP_LT, b8, -1, row, seq_q, NULL, gb_virtual(g, b8, sd));
		c = gb_pw(g, CUDNN_POINTWISE_CMP_LT, b8, -1, col, seq_kv, NULL, gb_virtual(g, b8, sd));
		c = gb_pw(g, CUDNN_POINTWISE_LOGICAL_AND, b8, -1, r, c, NULL, gb_virtual(g, b8, sd));
		s = gb_pw(g, CUDNN_POINTWISE_BINARY_SELECT, f32, -1, s, gb_neg_inf(g, &neg_inf), c,
			  gb_virtual(g, f32, sd));
	}
	if (k->mask == FA_MASK_NONE)
		return s;

	/* right bound: col <= row + (seq_kv - seq_q) */
	row = gb_pw(g, CUDNN_POINTWISE_GEN_INDEX, ip, 2, s, NULL, NULL, gb_virtual(g, i32, sd));
	col = gb_pw(g, CUDNN_POINTWISE_GEN_INDEX, ip, 3, s, NULL, NULL, gb_virtual(g, i32, sd));
	r = row;
	if (seq_q) {
		r = gb_pw(g, CUDNN_POINTWISE_ADD, i32, ax, r, seq_kv, NULL, gb_virtual(g, i32, sd));
		r = gb_pw(g, CUDNN_POINTWISE_SUB, i32, ax, r, seq_q, NULL, gb_virtual(g, i32, sd));
	} else if (shifted && br == FA_CUDNN_BR_FLOAT) {
		pl->shift_is_float = 1;
		pl->shift_f = (float)((int64_t)k->kv_len - k->q_len);
		cudnnBackendDescriptor_t sh = gb_tensor(g, FA_CUDNN_UID_SKV, f32, one4, one4, 1, NULL);
		r = gb_pw(g, CUDNN_POINTWISE_ADD, f32, -1, r, sh, NULL, gb_virtual(g, f32, sd));
	} else if (shifted) {
		pl->shift_is_float = 0;
		pl->skv_i = k->kv_len;
		pl->sq_i = k->q_len;
		cudnnBackendDescriptor_t skv = gb_tensor(g, FA_CUDNN_UID_SKV, i32, one4, one4, 1, NULL);
		cudnnBackendDescriptor_t sq = gb_tensor(g, FA_CUDNN_UID_SQ, i32, one4, one4, 1, NULL);
		r = gb_pw(g, CUDNN_POINTWISE_ADD, i32, ax, r, skv, NULL, gb_virtual(g, i32, sd));
		r = gb_pw(g, CUDNN_POINTWISE_SUB, i32, ax, r, sq, NULL, gb_virtual(g, i32, sd));
	}
	c = gb_pw(g, CUDNN_POINTWISE_CMP_GE, b8, -1, r, col, NULL, gb_virtual(g, b8, sd));
	if (k->mask == FA_MASK_PREFIX_LM) {
		int64_t pd[4] = {k->batch, 1, 1, 1};
		cudnnBackendDescriptor_t pt = gb_tensor(g, FA_CUDNN_UID_PREFIX, i32, pd, one4, 0, NULL);
		cudnnBackendDescriptor_t pm =
			gb_pw(g, CUDNN_POINTWISE_CMP_LT, b8, -1, col, pt, NULL, gb_virtual(g, b8, sd));
		c = gb_pw(g, CUDNN_POINTWISE_LOGICAL_OR, b8, -1, c, pm, NULL, gb_virtual(g, b8, sd));
	}
	s = gb_pw(g, CUDNN_POINTWISE_BINARY_SELECT, f32, -1, s, gb_neg_inf(g, &neg_inf), c,
		  gb_virtual(g, f32, sd));
	if (k->mask != FA_MASK_SLIDING_WINDOW)
		return s;

	/* left bound: col + window - (seq_kv - seq_q) > row */
	row = gb_pw(g, CUDNN_POINTWISE_GEN_INDEX, ip, 2, s, NULL, NULL, gb_virtual(g, i32, sd));
	col = gb_pw(g, CUDNN_POINTWISE_GEN_INDEX, ip, 3, s, NULL, NULL, gb_virtual(g, i32, sd));
	if (!seq_q) {
		/* fixed lengths: window - kv_len + q_len as one fp32 constant */
		pl->window_is_float = 1;
		pl->window_f = (float)((int64_t)k->window - k->kv_len + k->q_len);
		cudnnBackendDescriptor_t w = gb_tensor(g, FA_CUDNN_UID_WINDOW, f32, one4, one4, 1, NULL);
		c = gb_pw(g, CUDNN_POINTWISE_ADD, f32, ax, col, w, NULL, gb_virtual(g, f32, sd));
	} else {
		pl->window_is_float = 0;
		pl->window_i = k->window;
		cudnnBackendDescriptor_t w = gb_tensor(g, FA_CUDNN_UID_WINDOW, i32, one4, one4, 1, NULL);
		c = gb_pw(g, CUDNN_POINTWISE_ADD, i32, ax, col, w, NULL, gb_virtual(g, i32, sd));
		c = gb_pw(g, CUDNN_POINTWISE_SUB, i32, ax, c, seq_kv, NULL, gb_virtual(g, i32, sd));
		c = gb_pw(g, CUDNN_POINTWISE_ADD, i32, ax, c, seq_q, NULL, gb_virtual(g, i32, sd));
	}
	c = gb_pw(g, CUDNN_POINTWISE_CMP_GT, b8, -1, c, row, NULL, gb_virtual(g, b8, sd));
	return gb_pw(g, CUDNN_POINTWISE_BINARY_SELECT, f32, -1, s, gb_neg_inf(g, &neg_inf), c,
		     gb_virtual(g, f32, sd));
}

/* Checks that every variant tensor is used, and finalizes the operation
 * graph of g's operations; returns it, or NULL. */
static cudnnBackendDescriptor_t gb_finish(struct gb *g)
{
	struct fa_cudnn_plan *pl = g->pl;
	cudnnBackendDescriptor_t graph;
	for (int i = 0; i < pl->n_uids && !g->failed; i++) {
		char text[120];
		if (g->used[i])
			continue;
		snprintf(text, sizeof text, "cudnn_sdpa: tensor uid %lld is used by no operation",
			 (long long)pl->uids[i]);
		gb_fail_text(g, text);
	}
	graph = gb_new(g, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, "operation graph create");
	if (g->api->handle) /* NULL only in device-less checks */
		gb_set(g, graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1,
		       &g->api->handle, "operation graph handle");
	gb_set(g, graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, g->n_ops,
	       g->ops, "operation graph operations");
	gb_finalize(g, graph, "operation graph finalize");
	return g->failed ? NULL : graph;
}

/* y = x viewed with y's dims and strides (a transpose), cuDNN's RESHAPE. */
static cudnnBackendDescriptor_t gb_reshape(struct gb *g, cudnnBackendDescriptor_t x,
					   cudnnBackendDescriptor_t y)
{
	cudnnBackendDescriptor_t op =
		gb_new(g, CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR, "reshape operation create");
	gb_set(g, op, CUDNN_ATTR_OPERATION_RESHAPE_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x,
	       "reshape x");
	gb_set(g, op, CUDNN_ATTR_OPERATION_RESHAPE_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y,
	       "reshape y");
	gb_finalize(g, op, "reshape operation finalize");
	gb_op(g, op);
	gb_use(g, x), gb_use(g, y);
	return g->failed ? NULL : y;
}

/* The operation graph of the key; returns it finalized, or NULL. */
/* The varlen graphs' ragged offsets of Q, K, V and O (B + 1 int32 each;
 * NULL without varlen), and the batch strides of Q, K, V, O: varlen batch
 * strides are never used (the ragged offsets place each sequence), so they
 * are given as for a padded batch of the longest. */
struct gb_rag {
	cudnnBackendDescriptor_t q, k, v, o;
	int64_t qsb, ksb, vsb, osb;
};

static void gb_ragged(struct gb *g, const struct fa_cudnn_key *k, struct gb_rag *r)
{
	static const int64_t one4[4] = {1, 1, 1, 1};
	const int64_t rd[4] = {k->batch + 1, 1, 1, 1};
	memset(r, 0, sizeof *r);
	if (k->varlen) {
		r->q = gb_tensor(g, FA_CUDNN_UID_RAG_Q, CUDNN_DATA_INT32, rd, one4, 0, NULL);
		r->k = gb_tensor(g, FA_CUDNN_UID_RAG_K, CUDNN_DATA_INT32, rd, one4, 0, NULL);
		r->v = gb_tensor(g, FA_CUDNN_UID_RAG_V, CUDNN_DATA_INT32, rd, one4, 0, NULL);
		r->o = gb_tensor(g, FA_CUDNN_UID_RAG_O, CUDNN_DATA_INT32, rd, one4, 0, NULL);
	}
	r->qsb = k->varlen ? (int64_t)k->q_len * k->q_stride_s : k->q_stride_b;
	r->ksb = k->varlen ? (int64_t)k->kv_len * k->k_stride_s : k->k_stride_b;
	r->vsb = k->varlen ? (int64_t)k->kv_len * k->v_stride_s : k->v_stride_b;
	r->osb = k->varlen ? (int64_t)k->q_len * k->o_stride_s : k->o_stride_b;
}

static cudnnBackendDescriptor_t gb_graph(struct gb *g)
{
	static const int64_t one4[4] = {1, 1, 1, 1};
	const struct fa_cudnn_key *k = &g->pl->key;
	struct fa_cudnn_plan *pl = g->pl;
	const cudnnDataType_t io = k->dtype == FA_DTYPE_BF16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_HALF;
	const cudnnDataType_t f32 = CUDNN_DATA_FLOAT, i32 = CUDNN_DATA_INT32;
	int64_t B = k->batch, H = k->heads, Hk = k->kv_heads, Sq = k->q_len, Skv = k->kv_len;
	int64_t D = k->head_dim, Dv = k->head_dim_v;
	struct gb_rag rag;
	cudnnBackendDescriptor_t seq_q = NULL, seq_kv = NULL;
	cudnnBackendDescriptor_t tq, tk, tv, to, scale, s, mx, e, z, pmat;

	gb_ragged(g, k, &rag);
	if (fa_cudnn_key_padded(k, g->api->br)) {
		int64_t ld[4] = {B, 1, 1, 1};
		seq_q = gb_tensor(g, FA_CUDNN_UID_SEQ_Q, i32, ld, one4, 0, NULL);
		seq_kv = gb_tensor(g, FA_CUDNN_UID_SEQ_KV, i32, ld, one4, 0, NULL);
	}
	const int64_t qd[4] = {B, H, Sq, D}, qs[4] = {rag.qsb, k->q_stride_h, k->q_stride_s, 1};
	/* K^T: [b, h, d, s] over K's memory */
	const int64_t kd[4] = {B, Hk, D, Skv}, ks[4] = {rag.ksb, k->k_stride_h, 1, k->k_stride_s};
	const int64_t vd[4] = {B, Hk, Skv, Dv}, vs[4] = {rag.vsb, k->v_stride_h, k->v_stride_s, 1};
	const int64_t od[4] = {B, H, Sq, Dv}, os[4] = {rag.osb, k->o_stride_h, k->o_stride_s, 1};
	const int64_t sd[4] = {B, H, Sq, Skv};
	const int64_t rowd[4] = {B, H, Sq, 1};
	tq = gb_tensor(g, FA_CUDNN_UID_Q, io, qd, qs, 0, rag.q);
	tk = gb_tensor(g, FA_CUDNN_UID_K, io, kd, ks, 0, rag.k);
	tv = gb_tensor(g, FA_CUDNN_UID_V, io, vd, vs, 0, rag.v);
	to = gb_tensor(g, FA_CUDNN_UID_O, io, od, os, 0, rag.o);
	scale = gb_tensor(g, FA_CUDNN_UID_SCALE, f32, one4, one4, 1, NULL);

	s = gb_virtual(g, f32, sd);
	gb_matmul(g, tq, tk, s, seq_q, seq_kv, NULL);
	s = gb_pw(g, CUDNN_POINTWISE_MUL, f32, -1, s, scale, NULL, gb_virtual(g, f32, sd));
	s = gb_masks(g, k, s, sd, seq_q, seq_kv);

	/* softmax without stats: P = exp(S - max) / sum */
	mx = gb_virtual(g, f32, rowd);
	gb_reduce(g, CUDNN_REDUCE_TENSOR_MAX, s, mx);
	e = gb_pw(g, CUDNN_POINTWISE_SUB, f32, -1, s, mx, NULL, gb_virtual(g, f32, sd));
	e = gb_pw(g, CUDNN_POINTWISE_EXP, f32, -1, e, NULL, NULL, gb_virtual(g, f32, sd));
	z = gb_virtual(g, f32, rowd);
	gb_reduce(g, CUDNN_REDUCE_TENSOR_ADD, e, z);
	if (pl->with_stats) {
		/* stats = max + log(sum), fp32 [b, h, s_q, 1]: packed in the
		 * workspace, or fabench's LSE, lse[(b s_q + i) heads + h], and
		 * varlen lse[(cu_seqlens_q[b] + i) heads + h]: token-major with a
		 * ragged offset of cu_seqlens_q[b] heads elements */
		const int64_t packed[4] = {H * Sq, Sq, 1, 1}, lse[4] = {Sq * H, 1, H, 1};
		const int lse_out = k->kind == FA_CUDNN_FWD_LSE;
		cudnnBackendDescriptor_t lg, st, rst = NULL;
		if (lse_out && k->varlen) {
			int64_t rd[4] = {B + 1, 1, 1, 1};
			rst = gb_tensor(g, FA_CUDNN_UID_RAG_STATS, i32, rd, one4, 0, NULL);
		}
		lg = gb_pw(g, CUDNN_POINTWISE_LOG, f32, -1, z, NULL, NULL, gb_virtual(g, f32, rowd));
		st = gb_tensor(g, FA_CUDNN_UID_STATS, f32, rowd, lse_out ? lse : packed, 0, rst);
		gb_pw(g, CUDNN_POINTWISE_ADD, f32, -1, mx, lg, NULL, st);
	}
	/* P V takes P in the input type */
	pmat = gb_pw(g, CUDNN_POINTWISE_DIV, f32, -1, e, z, NULL, gb_virtual(g, io, sd));
	gb_matmul(g, pmat, tv, to, seq_q, NULL, seq_kv);

	return gb_finish(g);
}

/* Bytes of cuDNN's dP workspace above which the backward takes the fp32
 * dQ accumulator instead (cudnn-frontend's default limit on Hopper). */
#define GB_DP_WORKSPACE_LIMIT (256ll << 20)

/* The backward graph of the key, cudnn-frontend's CompositeSDPABackwardNode
 * without dropout, bias or alibi:
 *
 *   softmax_sum = sum(dO * O) * 1      [b, h, s_q, 1]
 *   S = Q K^T * scale, masks           as the forward
 *   P = exp(S - stats)                 stats: fabench's LSE
 *   dV = P^T dO                        P^T a RESHAPE in the input type;
 *                                      GQA: [b, h, s_kv, d] summed over the group
 *   dS = (dO V^T * 1 - softmax_sum) * P * scale
 *   dK = dS^T Q                        as dV
 *   dQ = dS K                          K a RESHAPE of K^T; through an fp32
 *                                      accumulator (F16x16) when cuDNN's dP
 *                                      workspace would pass GB_DP_WORKSPACE_LIMIT
 *
 * Varlen as the forward: ragged offsets on Q and dQ, K (and its RESHAPE)
 * and dK, V and dV, O and dO, and on the stats (fabench's LSE, token-major:
 * cu_seqlens_q[b] x heads elements); the lengths as the padding mask and
 * as the M/N/K overrides of every matmul; the stats subtracted before the
 * masks, in the frontend's order (a row with no key then gets its -inf
 * from the mask whatever its stats). The intermediates (softmax_sum, the
 * dQ accumulator, GQA's full-head dK and dV) stay [b, h, s, d] of the
 * longest sequences, the frontend's form without max_total_seq_len. */
static cudnnBackendDescriptor_t gb_graph_bwd(struct gb *g)
{
	static const int64_t one4[4] = {1, 1, 1, 1};
	const struct fa_cudnn_key *k = &g->pl->key;
	struct fa_cudnn_plan *pl = g->pl;
	const cudnnDataType_t io = k->dtype == FA_DTYPE_BF16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_HALF;
	const cudnnDataType_t f32 = CUDNN_DATA_FLOAT, i32 = CUDNN_DATA_INT32;
	int64_t B = k->batch, H = k->heads, Hk = k->kv_heads, Sq = k->q_len, Skv = k->kv_len;
	int64_t D = k->head_dim, Dv = k->head_dim_v;
	cudnnBackendDescriptor_t tq, tkt, tvt, to, tdo, tdq, tdk, tdv, st, scale, one;
	cudnnBackendDescriptor_t x, ssum, s, p, pt, dp, ds, dst, kr;
	struct gb_rag rag;
	cudnnBackendDescriptor_t rst = NULL;
	cudnnBackendDescriptor_t seq_q = NULL, seq_kv = NULL;

	gb_ragged(g, k, &rag);
	if (k->varlen) {
		int64_t rd[4] = {B + 1, 1, 1, 1}, ld[4] = {B, 1, 1, 1};
		rst = gb_tensor(g, FA_CUDNN_UID_RAG_STATS, i32, rd, one4, 0, NULL);
		seq_q = gb_tensor(g, FA_CUDNN_UID_SEQ_Q, i32, ld, one4, 0, NULL);
		seq_kv = gb_tensor(g, FA_CUDNN_UID_SEQ_KV, i32, ld, one4, 0, NULL);
	}
	const int64_t qd[4] = {B, H, Sq, D}, qs[4] = {rag.qsb, k->q_stride_h, k->q_stride_s, 1};
	const int64_t kd[4] = {B, Hk, Skv, D}, ks[4] = {rag.ksb, k->k_stride_h, k->k_stride_s, 1};
	const int64_t ktd[4] = {B, Hk, D, Skv}, kts[4] = {rag.ksb, k->k_stride_h, 1, k->k_stride_s};
	const int64_t vd[4] = {B, Hk, Skv, Dv}, vs[4] = {rag.vsb, k->v_stride_h, k->v_stride_s, 1};
	const int64_t vtd[4] = {B, Hk, Dv, Skv}, vts[4] = {rag.vsb, k->v_stride_h, 1, k->v_stride_s};
	const int64_t od[4] = {B, H, Sq, Dv}, os[4] = {rag.osb, k->o_stride_h, k->o_stride_s, 1};
	const int64_t sd[4] = {B, H, Sq, Skv}, ss[4] = {H * Sq * Skv, Sq * Skv, Skv, 1};
	const int64_t std_[4] = {B, H, Skv, Sq}, sts[4] = {H * Sq * Skv, Sq * Skv, 1, Skv};
	const int64_t rowd[4] = {B, H, Sq, 1}, rows[4] = {H * Sq, Sq, 1, 1};
	const int64_t lses[4] = {Sq * H, 1, H, 1};
	const int64_t dod[4] = {B, H, Sq, Dv}, dos[4] = {H * Sq * Dv, Sq * Dv, H * Dv, 1};

	tq = gb_tensor(g, FA_CUDNN_UID_Q, io, qd, qs, 0, rag.q);
	tkt = gb_tensor(g, FA_CUDNN_UID_K, io, ktd, kts, 0, rag.k);
	tvt = gb_tensor(g, FA_CUDNN_UID_V, io, vtd, vts, 0, rag.v);
	to = gb_tensor(g, FA_CUDNN_UID_O, io, od, os, 0, rag.o);
	tdo = gb_tensor(g, FA_CUDNN_UID_DO, io, od, os, 0, rag.o);
	st = gb_tensor(g, FA_CUDNN_UID_STATS, f32, rowd, lses, 0, rst);
	scale = gb_tensor(g, FA_CUDNN_UID_SCALE, f32, one4, one4, 1, NULL);
	one = gb_tensor(g, FA_CUDNN_UID_ONE, f32, one4, one4, 1, NULL);
	pl->one_f = 1.0f;
	tdq = gb_tensor(g, FA_CUDNN_UID_DQ, io, qd, qs, 0, rag.q);
	tdk = gb_tensor(g, FA_CUDNN_UID_DK, io, kd, ks, 0, rag.k);
	tdv = gb_tensor(g, FA_CUDNN_UID_DV, io, vd, vs, 0, rag.v);

	/* softmax_sum = sum(dO * O) * 1 */
	x = gb_pw(g, CUDNN_POINTWISE_MUL, f32, -1, tdo, to, NULL,
		  gb_tensor(g, 0, f32, dod, dos, 0, NULL));
	ssum = gb_tensor(g, 0, f32, rowd, rows, 0, NULL);
	gb_reduce(g, CUDNN_REDUCE_TENSOR_ADD, x, ssum);
	ssum = gb_pw(g, CUDNN_POINTWISE_MUL, f32, -1, ssum, one, NULL,
		     gb_tensor(g, 0, f32, rowd, rows, 0, NULL));

	/* P = exp(Q K^T * scale, masked, - stats) */
	s = gb_tensor(g, 0, f32, sd, ss, 0, NULL);
	gb_matmul(g, tq, tkt, s, seq_q, seq_kv, NULL);
	s = gb_pw(g, CUDNN_POINTWISE_MUL, f32, -1, s, scale, NULL, gb_virtual(g, f32, sd));
	if (k->varlen) {
		s = gb_pw(g, CUDNN_POINTWISE_SUB, f32, -1, s, st, NULL, gb_virtual(g, f32, sd));
		s = gb_masks(g, k, s, sd, seq_q, seq_kv);
	} else {
		s = gb_masks(g, k, s, sd, NULL, NULL);
		s = gb_pw(g, CUDNN_POINTWISE_SUB, f32, -1, s, st, NULL, gb_virtual(g, f32, sd));
	}
	p = gb_pw(g, CUDNN_POINTWISE_EXP, f32, -1, s, NULL, NULL, gb_virtual(g, f32, sd));

	/* dV = P^T dO */
	pt = gb_reshape(g, p, gb_tensor(g, 0, io, std_, sts, 0, NULL));
	if (H == Hk) {
		gb_matmul(g, pt, tdo, tdv, seq_kv, NULL, seq_q);
	} else {
		const int64_t fd[4] = {B, H, Skv, Dv};
		cudnnBackendDescriptor_t full = gb_virtual(g, io, fd);
		gb_matmul(g, pt, tdo, full, seq_kv, NULL, seq_q);
		gb_reduce(g, CUDNN_REDUCE_TENSOR_ADD, full, tdv);
	}

	/* dS = (dO V^T * 1 - softmax_sum) * P * scale */
	dp = gb_tensor(g, 0, f32, sd, ss, 0, NULL);
	gb_matmul(g, tdo, tvt, dp, seq_q, seq_kv, NULL);
	dp = gb_pw(g, CUDNN_POINTWISE_MUL, f32, -1, dp, one, NULL, gb_virtual(g, f32, sd));
	dp = gb_pw(g, CUDNN_POINTWISE_SUB, f32, -1, dp, ssum, NULL, gb_virtual(g, f32, sd));
	ds = gb_pw(g, CUDNN_POINTWISE_MUL, f32, -1, dp, p, NULL, gb_virtual(g, f32, sd));
	ds = gb_pw(g, CUDNN_POINTWISE_MUL, f32, -1, ds, scale, NULL, gb_virtual(g, f32, sd));

	/* dK = dS^T Q */
	dst = gb_reshape(g, ds, gb_tensor(g, 0, io, std_, sts, 0, NULL));
	if (H == Hk) {
		gb_matmul(g, dst, tq, tdk, seq_kv, NULL, seq_q);
	} else {
		const int64_t fd[4] = {B, H, Skv, D};
		cudnnBackendDescriptor_t full = gb_virtual(g, io, fd);
		gb_matmul(g, dst, tq, full, seq_kv, NULL, seq_q);
		gb_reduce(g, CUDNN_REDUCE_TENSOR_ADD, full, tdk);
	}

	/* dQ = dS K */
	kr = gb_reshape(g, tkt, gb_tensor(g, 0, io, kd, ks, 0, rag.k));
	int64_t wsq = (Sq + 63) / 64 * 64, wskv = (Skv + 63) / 64 * 64;
	if (B * H * wsq * wskv * 2 > GB_DP_WORKSPACE_LIMIT) {
		const int64_t ad[4] = {B, H, Sq, D}, as[4] = {H * Sq * D, Sq * D, D, 1};
		cudnnBackendDescriptor_t acc =
			gb_tensor_r(g, FA_CUDNN_UID_DQ_ACCUM, f32, ad, as, 0, NULL, 1);
		gb_matmul(g, ds, kr, acc, seq_q, NULL, seq_kv);
		gb_pw(g, CUDNN_POINTWISE_IDENTITY, f32, -1, acc, NULL, NULL, tdq);
		pl->dq_accum_bytes = (size_t)(B * H * Sq * D) * sizeof(float);
	} else {
		gb_matmul(g, ds, kr, tdq, seq_q, NULL, seq_kv);
	}
	return gb_finish(g);
}

/* batch int32 copies of value on the device, in *dst (NULL on failure,
 * then the build fails with the reason). */
static void gb_int_buffer(struct gb *g, void **dst, int32_t value, const char *what)
{
	size_t bytes = (size_t)g->pl->key.batch * sizeof(int32_t);
	int32_t *host = malloc(bytes);
	cudaError_t e;
	char text[160];
	if (!host) {
		gb_fail_text(g, "cudnn_sdpa: out of host memory");
		return;
	}
	for (int32_t b = 0; b < g->pl->key.batch; b++)
		host[b] = value;
	e = cudaMalloc(dst, bytes);
	if (e == cudaSuccess)
		e = cudaMemcpy(*dst, host, bytes, cudaMemcpyHostToDevice);
	free(host);
	if (e != cudaSuccess) {
		(void)cudaGetLastError();
		snprintf(text, sizeof text, "cudnn_sdpa: %s buffer: %s", what, cudaGetErrorName(e));
		gb_fail_text(g, text);
	}
}

/* cuDNN's global index of the engine of cfg, -1 when it cannot say. */
static int64_t plan_engine(struct fa_cudnn_api *api, cudnnBackendDescriptor_t cfg)
{
	cudnnBackendDescriptor_t eng = NULL;
	int64_t n = 0, idx = -1;
	if (api->create_desc(CUDNN_BACKEND_ENGINE_DESCRIPTOR, &eng) != CUDNN_STATUS_SUCCESS)
		return -1;
	if (api->get_attr(cfg, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n,
			  &eng) != CUDNN_STATUS_SUCCESS ||
	    api->get_attr(eng, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &n, &idx) !=
		    CUDNN_STATUS_SUCCESS)
		idx = -1;
	(void)api->destroy_desc(eng);
	return idx;
}

static void plan_attempt(struct fa_cudnn_api *api, struct fa_cudnn_plan *pl)
{
	struct gb g;
	cudnnBackendDescriptor_t graph, heur = NULL, cfgs[GB_MAX_CONFIGS];
	cudnnBackendHeurMode_t mode;
	int64_t n_cfg = 0;
	cudnnStatus_t st;
	char first_reason[400] = "";
	cudnnStatus_t first_status = CUDNN_STATUS_SUCCESS;

	memset(&g, 0, sizeof g);
	g.api = api;
	g.pl = pl;
	g.next_uid = FA_CUDNN_UID_FIRST_VIRTUAL;
	pl->ready = 0;
	pl->why[0] = '\0';

	graph = pl->key.kind == FA_CUDNN_BWD ? gb_graph_bwd(&g) : gb_graph(&g);
	pl->graph_ok = graph != NULL;
	/* heuristics mode A, then the fallback list when A names no engine */
	for (int m = 0; m < 2 && n_cfg <= 0; m++) {
		mode = m == 0 ? CUDNN_HEUR_MODE_A : CUDNN_HEUR_MODE_FALLBACK;
		heur = gb_new(&g, CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, "heuristics create");
		gb_set(&g, heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH,
		       CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph, "heuristics graph");
		gb_set(&g, heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode,
		       "heuristics mode");
		gb_finalize(&g, heur, "heuristics finalize");
		if (g.failed)
			return;
		st = api->get_attr(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
				   CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &n_cfg, NULL);
		if (st != CUDNN_STATUS_SUCCESS) {
			gb_fail(&g, st, "heuristics result count");
			return;
		}
	}
	if (n_cfg <= 0) {
		gb_fail_text(&g, "cuDNN heuristics found no engine for this SDPA graph");
		pl->status = (int)CUDNN_STATUS_NOT_SUPPORTED;
		return;
	}
	if (n_cfg > GB_MAX_CONFIGS)
		n_cfg = GB_MAX_CONFIGS;
	for (int64_t i = 0; i < n_cfg; i++)
		cfgs[i] = gb_new(&g, CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, "engine config create");
	if (g.failed)
		return;
	int64_t got = 0;
	st = api->get_attr(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, n_cfg,
			   &got, cfgs);
	if (st != CUDNN_STATUS_SUCCESS) {
		gb_fail(&g, st, "heuristics results");
		return;
	}
	for (int64_t i = 0; i < got && i < n_cfg; i++) {
		cudnnBackendDescriptor_t plan = NULL;
		if ((st = api->create_desc(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &plan)) !=
		    CUDNN_STATUS_SUCCESS) {
			gb_fail(&g, st, "execution plan create");
			return;
		}
		st = api->set_attr(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1,
				   &api->handle);
		if (st == CUDNN_STATUS_SUCCESS)
			st = api->set_attr(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
					   CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cfgs[i]);
		if (st == CUDNN_STATUS_SUCCESS)
			st = api->finalize(plan);
		if (st != CUDNN_STATUS_SUCCESS) {
			/* keep cuDNN's reason for the best-ranked engine */
			if (first_status == CUDNN_STATUS_SUCCESS) {
				first_status = st;
				fa_cudnn_status_text(api, st, first_reason, sizeof first_reason);
			}
			(void)api->destroy_desc(plan);
			continue;
		}
		int64_t ws = 0, n = 0;
		st = api->get_attr(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1,
				   &n, &ws);
		if (st != CUDNN_STATUS_SUCCESS) {
			(void)api->destroy_desc(plan);
			gb_fail(&g, st, "execution plan workspace size");
			return;
		}
		pl->plan = plan;
		pl->plan_ws_bytes = ws;
		pl->engine = plan_engine(api, cfgs[i]);
		pl->heur_rank = (int)i;
		break;
	}
	if (!pl->plan) {
		snprintf(pl->why, sizeof pl->why, "cuDNN execution plan finalize failed: %s",
			 first_reason[0] ? first_reason : "no engine configuration");
		pl->status = (int)(first_status ? first_status : CUDNN_STATUS_NOT_SUPPORTED);
		return;
	}
	/* device inputs the launch does not bring: prefix_lm lengths when the
	 * case has no per-sequence ones, fixed lengths of a bottom-right case */
	if (pl->key.mask == FA_MASK_PREFIX_LM)
		gb_int_buffer(&g, &pl->prefix_dev, pl->key.prefix_len, "prefix");
	if (fa_cudnn_key_padded(&pl->key, api->br) && !pl->key.varlen &&
	    pl->key.kind != FA_CUDNN_BWD) {
		gb_int_buffer(&g, &pl->seq_q_dev, pl->key.q_len, "q_len");
		gb_int_buffer(&g, &pl->seq_kv_dev, pl->key.kv_len, "kv_len");
	}
	if (g.failed) {
		(void)api->destroy_desc(pl->plan);
		pl->plan = NULL;
		return;
	}
	if (pl->with_stats && pl->key.kind == FA_CUDNN_FWD)
		pl->stats_bytes = (size_t)pl->key.batch * (size_t)pl->key.heads *
				  (size_t)pl->key.q_len * sizeof(float);
	/* varlen: ragged offsets of Q, K, V, O (batch + 1 each), the
	 * lengths of Q and KV (batch each) and the LSE's ragged offsets, int32,
	 * each array 16-byte aligned (the alignment the graph declares) */
	pl->aux_pitch_bytes = ((size_t)(pl->key.batch + 1) * sizeof(int32_t) + GB_ALIGN_BYTES - 1) /
			      GB_ALIGN_BYTES * GB_ALIGN_BYTES;
	pl->aux_bytes = pl->key.varlen ? FA_CUDNN_AUX_ARRAYS * pl->aux_pitch_bytes : 0;
	pl->ready = 1;
	pl->status = 0;
}

void fa_cudnn_plan_build(struct fa_cudnn_api *api, struct fa_cudnn_plan *pl)
{
	/* Every graph has the softmax stats: the backward reads them, the
	 * forwards write them (to fabench's LSE, or to the workspace). The
	 * inference form without stats is not built: on cuDNN 9.19 (H100,
	 * 2026-11-26) no engine took it unless a mask was aligned bottom-right,
	 * and then engine 2 (cudnn_generated_fort_native_sdpa_sm90_flash_fprop_
	 * wgmma_f16_knob_7) took it and wrote 4-byte values through the host
	 * pointer of a by-value scalar (compute-sanitizer: invalid __global__
	 * write to the stack), an illegal address that ended the context. */
	pl->with_stats = 1;
	plan_attempt(api, pl);
}

void fa_cudnn_plan_release(struct fa_cudnn_api *api, struct fa_cudnn_plan *pl)
{
	if (pl->plan)
		(void)api->destroy_desc(pl->plan);
	pl->plan = NULL;
	/* operations before the tensors they point at: reverse creation order */
	for (int i = pl->n_descs - 1; i >= 0; i--)
		(void)api->destroy_desc(pl->descs[i]);
	pl->n_descs = 0;
	void **bufs[] = {&pl->prefix_dev, &pl->seq_q_dev, &pl->seq_kv_dev};
	for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) {
		if (*bufs[i])
			(void)cudaFree(*bufs[i]);
		*bufs[i] = NULL;
	}
}
