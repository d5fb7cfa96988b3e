/* fa_problem.h - the attention problem descriptor that every kernel, backend,
 * the reference and the harness share.
 *
 * One struct describes one forward attention call:
 *   O[b, i, h, :] = softmax_j(scale * Q[b, i, h, :] . K[b, j, h / g, :] + mask) V[b, j, h / g, :]
 * with g = heads / kv_heads (GQA by index mapping, K/V are never copied).
 *
 * Plain C, no allocation, usable from C11 host code and from CUDA/HIP device
 * code (FA_HD marks functions callable on both sides).
 *
 * Conventions (documented for users in docs/suites.md):
 * - Masks are aligned bottom-right when q_len != kv_len (the flash-attention
 *   2.1+ convention): query row i of a sequence with lq queries and lk keys has
 *   its diagonal at key diag = i + (lk - lq).
 *     causal          j <= diag
 *     prefix_lm       j < prefix_len  or  j <= diag  (bidirectional prefix)
 *     sliding_window  diag - window < j <= diag      (window keys, self included)
 * - A row that may attend no key at all produces zeros, never NaN.
 * - Varlen: sequences are packed along the token axis; sequence b owns tokens
 *   cu_seqlens[b] .. cu_seqlens[b+1]-1 and attends only within itself.
 * - Addresses are in elements; the head dimension is always contiguous.
 */
#ifndef FA_PROBLEM_H
#define FA_PROBLEM_H

#include <stdint.h>

#if defined(__CUDACC__) || defined(__HIPCC__)
#define FA_HD __host__ __device__ __forceinline__
#else
#define FA_HD static inline
#endif

/* Stored in the database by name, never by number; the numbers may change. */
enum fa_dtype { FA_DTYPE_FP32 = 0, FA_DTYPE_FP16 = 1, FA_DTYPE_BF16 = 2, FA_DTYPE_COUNT };
enum fa_mask {
	FA_MASK_NONE = 0,
	FA_MASK_CAUSAL = 1,
	FA_MASK_PREFIX_LM = 2,
	FA_MASK_SLIDING_WINDOW = 3,
	FA_MASK_COUNT
};
enum fa_layout { FA_LAYOUT_BSHD = 0, FA_LAYOUT_BHSD = 1, FA_LAYOUT_COUNT };
enum fa_dist { FA_DIST_NORMAL = 0, FA_DIST_UNIFORM = 1, FA_DIST_OUTLIERS = 2, FA_DIST_COUNT };
enum fa_tensor { FA_TENSOR_Q = 0, FA_TENSOR_K = 1, FA_TENSOR_V = 2, FA_TENSOR_O = 3 };

struct fa_problem {
	int32_t batch;      /* sequences; for varlen the number of packed sequences */
	int32_t heads;      /* query heads */
	int32_t kv_heads;   /* key/value heads; heads % kv_heads == 0 */
	int32_t q_len;      /* queries per sequence; varlen: the longest */
	int32_t kv_len;     /* keys per sequence; varlen: the longest */
	int32_t head_dim;   /* Q and K */
	int32_t head_dim_v; /* V and O */
	int32_t dtype;      /* enum fa_dtype, of Q, K, V and O */
	int32_t mask;       /* enum fa_mask */
	int32_t layout;     /* enum fa_layout */
	int32_t prefix_len; /* FA_MASK_PREFIX_LM: used when prefix_lens is NULL */
	int32_t window;     /* FA_MASK_SLIDING_WINDOW: keys per query, itself included */
	int32_t varlen;     /* 1: lengths come from cu_seqlens_q / cu_seqlens_k */
	int32_t total_q;    /* query tokens over the batch (batch * q_len unless varlen) */
	int32_t total_k;    /* key tokens over the batch */
	float scale;        /* softmax scale, usually 1/sqrt(head_dim) */
	/* Element strides. Token t of sequence b, head h, starts at
	 *   (varlen ? cu_seqlens[b] * stride_s : b * stride_b) + t * stride_s + h * stride_h */
	int64_t q_stride_b, q_stride_s, q_stride_h;
	int64_t k_stride_b, k_stride_s, k_stride_h;
	int64_t v_stride_b, v_stride_s, v_stride_h;
	int64_t o_stride_b, o_stride_s, o_stride_h;
};

/* Bytes of one element of dtype. */
FA_HD int fa_dtype_size(int dtype)
{
	return dtype == FA_DTYPE_FP32 ? 4 : 2;
}

/* Query length of sequence b (cu may be NULL when the problem is not varlen). */
FA_HD int32_t fa_seq_q_len(const struct fa_problem *p, const int32_t *cu_q, int b)
{
	return p->varlen ? cu_q[b + 1] - cu_q[b] : p->q_len;
}

FA_HD int32_t fa_seq_kv_len(const struct fa_problem *p, const int32_t *cu_k, int b)
{
	return p->varlen ? cu_k[b + 1] - cu_k[b] : p->kv_len;
}

/* First token of sequence b along the packed token axis. */
FA_HD int64_t fa_seq_q_start(const struct fa_problem *p, const int32_t *cu_q, int b)
{
	return p->varlen ? (int64_t)cu_q[b] : (int64_t)b * p->q_len;
}

FA_HD int64_t fa_seq_kv_start(const struct fa_problem *p, const int32_t *cu_k, int b)
{
	return p->varlen ? (int64_t)cu_k[b] : (int64_t)b * p->kv_len;
}

/* Element offset of Q[b, t, h, 0]. */
FA_HD int64_t fa_q_offset(const struct fa_problem *p, const int32_t *cu_q, int b, int64_t t, int h)
{
	int64_t base = p->varlen ? (int64_t)cu_q[b] * p->q_stride_s : (int64_t)b * p->q_stride_b;
	return base + t * p->q_stride_s + (int64_t)h * p->q_stride_h;
}

FA_HD int64_t fa_k_offset(const struct fa_problem *p, const int32_t *cu_k, int b, int64_t t, int h)
{
	int64_t base = p->varlen ? (int64_t)cu_k[b] * p->k_stride_s : (int64_t)b * p->k_stride_b;
	return base + t * p->k_stride_s + (int64_t)h * p->k_stride_h;
}

FA_HD int64_t fa_v_offset(const struct fa_problem *p, const int32_t *cu_k, int b, int64_t t, int h)
{
	int64_t base = p->varlen ? (int64_t)cu_k[b] * p->v_stride_s : (int64_t)b * p->v_stride_b;
	return base + t * p->v_stride_s + (int64_t)h * p->v_stride_h;
}

FA_HD int64_t fa_o_offset(const struct fa_problem *p, const int32_t *cu_q, int b, int64_t t, int h)
{
	int64_t base = p->varlen ? (int64_t)cu_q[b] * p->o_stride_s : (int64_t)b * p->o_stride_b;
	return base + t * p->o_stride_s + (int64_t)h * p->o_stride_h;
}

/* Tokens along the packed token axis, heads and head size of tensor t
 * (enum fa_tensor). Every buffer is dense: tokens * heads * dim elements. */
FA_HD void fa_tensor_shape(const struct fa_problem *p, int t, int64_t *tokens, int32_t *heads,
			   int32_t *dim)
{
	*tokens = (t == FA_TENSOR_Q || t == FA_TENSOR_O) ? p->total_q : p->total_k;
	*heads = (t == FA_TENSOR_Q || t == FA_TENSOR_O) ? p->heads : p->kv_heads;
	*dim = (t == FA_TENSOR_Q || t == FA_TENSOR_K) ? p->head_dim : p->head_dim_v;
}

FA_HD int64_t fa_tensor_elems(const struct fa_problem *p, int t)
{
	int64_t tokens;
	int32_t heads, dim;
	fa_tensor_shape(p, t, &tokens, &heads, &dim);
	return tokens * heads * dim;
}

/* Element offset of (packed token T, head h, 0) in tensor t. For varlen the
 * packed token is the memory token; otherwise T = b * len + t. */
FA_HD int64_t fa_tensor_offset(const struct fa_problem *p, int t, int64_t T, int h)
{
	int64_t sb, ss, sh, len;
	switch (t) {
	case FA_TENSOR_Q: sb = p->q_stride_b; ss = p->q_stride_s; sh = p->q_stride_h; len = p->q_len; break;
	case FA_TENSOR_K: sb = p->k_stride_b; ss = p->k_stride_s; sh = p->k_stride_h; len = p->kv_len; break;
	case FA_TENSOR_V: sb = p->v_stride_b; ss = p->v_stride_s; sh = p->v_stride_h; len = p->kv_len; break;
	default: sb = p->o_stride_b; ss = p->o_stride_s; sh = p->o_stride_h; len = p->q_len; break;
	}
	if (p->varlen)
		return T * ss + (int64_t)h * sh;
	return (T / len) * sb + (T % len) * ss + (int64_t)h * sh;
}

/* Prefix length of sequence b (prefix_lens may be NULL). */
FA_HD int32_t fa_seq_prefix(const struct fa_problem *p, const int32_t *prefix_lens, int b)
{
	return prefix_lens ? prefix_lens[b] : p->prefix_len;
}

/* Half-open key range [*lo, *hi) that query row i of a sequence with lq
 * queries and lk keys may attend, ignoring the prefix of prefix_lm (which adds
 * [0, prefix) on top). Every mask here is one contiguous range plus, for
 * prefix_lm, the prefix; kernels use this to skip whole tiles. */
FA_HD void fa_mask_range(int mask, int32_t i, int32_t lq, int32_t lk, int32_t window, int32_t *lo,
			 int32_t *hi)
{
	int64_t diag = (int64_t)i + lk - lq;
	int64_t l = 0, h = lk;
	if (mask != FA_MASK_NONE) {
		h = diag + 1;
		if (mask == FA_MASK_SLIDING_WINDOW)
			l = diag - window + 1;
	}
	if (l < 0)
		l = 0;
	if (h > lk)
		h = lk;
	if (h < l)
		h = l;
	*lo = (int32_t)l;
	*hi = (int32_t)h;
}

/* 1 when query row i may attend key j. prefix is this sequence's prefix length. */
FA_HD int fa_mask_allows(int mask, int32_t i, int32_t j, int32_t lq, int32_t lk, int32_t prefix,
			 int32_t window)
{
	int32_t lo, hi;
	if (mask == FA_MASK_PREFIX_LM && j < prefix)
		return 1;
	fa_mask_range(mask, i, lq, lk, window, &lo, &hi);
	return j >= lo && j < hi;
}

/* Number of keys query row i attends (the exact count, prefix included). */
FA_HD int64_t fa_mask_row_count(int mask, int32_t i, int32_t lq, int32_t lk, int32_t prefix,
				int32_t window)
{
	int32_t lo, hi;
	fa_mask_range(mask, i, lq, lk, window, &lo, &hi);
	if (mask == FA_MASK_PREFIX_LM) {
		int32_t p = prefix < lk ? prefix : lk;
		/* union of [0, p) and [lo, hi) where lo == 0 for prefix_lm */
		return hi > p ? hi : p;
	}
	return hi - lo;
}

#endif /* FA_PROBLEM_H */
