/* data.c - input generation and problem set-up: dense packed strides for
 * both layouts, the deterministic fill of Q/K/V from the counter RNG (same
 * bits for any thread count and any layout), and the exact FLOP, byte and
 * pair counts of a problem in closed form (O(batch), not O(rows)).
 */
#include "data.h"

#include <stdint.h>

#include "../../kernels/common/fa_dtype.h"
#include "../../kernels/common/fa_rng.h"
#include "../base/parallel.h"

/* a * b, or INT64_MAX where that overflows: a suite's case may be past any
 * size here (the suite loader refuses it afterwards, "Q is too large") */
static int64_t mul_sat(int64_t a, int64_t b)
{
	int64_t r;
	return __builtin_mul_overflow(a, b, &r) ? INT64_MAX : r;
}

/* Strides of one tensor with `len` tokens per sequence (`total` packed
 * tokens for varlen), `heads` heads of `dim` elements. */
static void set_tensor_strides(const struct fa_problem *p, int64_t len, int64_t total,
			       int64_t heads, int64_t dim, int64_t *sb, int64_t *ss, int64_t *sh)
{
	if (p->layout == FA_LAYOUT_BHSD) {
		/* [batch, heads, len, dim], varlen [heads, total, dim] */
		*ss = dim;
		*sh = mul_sat(p->varlen ? total : len, dim);
		*sb = p->varlen ? 0 : mul_sat(mul_sat(heads, len), dim);
	} else {
		/* [batch, len, heads, dim], varlen [total, heads, dim] */
		*sh = dim;
		*ss = mul_sat(heads, dim);
		*sb = p->varlen ? 0 : mul_sat(mul_sat(len, heads), dim);
	}
}

void fa_problem_set_strides(struct fa_problem *p)
{
	p->struct_size = (uint32_t)sizeof *p; /* every problem the harness builds passes here */
	set_tensor_strides(p, p->q_len, p->total_q, p->heads, p->head_dim, &p->q_stride_b,
			   &p->q_stride_s, &p->q_stride_h);
	set_tensor_strides(p, p->kv_len, p->total_k, p->kv_heads, p->head_dim, &p->k_stride_b,
			   &p->k_stride_s, &p->k_stride_h);
	set_tensor_strides(p, p->kv_len, p->total_k, p->kv_heads, p->head_dim_v, &p->v_stride_b,
			   &p->v_stride_s, &p->v_stride_h);
	set_tensor_strides(p, p->q_len, p->total_q, p->heads, p->head_dim_v, &p->o_stride_b,
			   &p->o_stride_s, &p->o_stride_h);
}

struct fill_ctx {
	const struct fa_problem *p;
	int tensor, dist;
	uint64_t seed;
	void *buf;
	int32_t heads, dim;
};

/* One chunk of (token, head) rows; row = T * heads + h is also the logical
 * row index, so element d of it has logical index row * dim + d. */
static void fill_rows(void *vctx, int64_t begin, int64_t end, int thread)
{
	const struct fill_ctx *c = vctx;
	(void)thread;
	for (int64_t row = begin; row < end; row++) {
		int64_t T = row / c->heads;
		int h = (int)(row % c->heads);
		int64_t off = fa_tensor_offset(c->p, c->tensor, T, h);
		uint64_t base = (uint64_t)row * (uint64_t)c->dim;
		for (int32_t d = 0; d < c->dim; d++)
			fa_store_f32(c->buf, c->p->dtype, off + d,
				     fa_rng_value(c->seed, c->tensor, c->dist, base + (uint64_t)d,
						  c->dim));
	}
}

void fa_data_fill(const struct fa_problem *p, int t, int dist, uint64_t seed, void *buf,
		  int nthreads)
{
	struct fill_ctx c = {.p = p, .tensor = t, .dist = dist, .seed = seed, .buf = buf};
	int64_t tokens;
	fa_tensor_shape(p, t, &tokens, &c.heads, &c.dim);
	if (c.heads <= 0 || c.dim <= 0 || tokens <= 0)
		return;
	if (nthreads <= 0)
		nthreads = fa_cpu_threads();
	/* 64 rows a chunk: at least 64 elements each, few enough chunks that the
	 * shared counter is not contended */
	fa_parallel_for(tokens * c.heads, 64, nthreads, fill_rows, &c);
}

/* sum over i in [0, n) of clamp(i + c, lo, hi), for lo <= hi, exactly. */
static int64_t sum_clamped(int64_t n, int64_t c, int64_t lo, int64_t hi)
{
	int64_t i1, i2;
	if (n <= 0)
		return 0;
	/* i < i1: i + c < lo (value lo); i >= i2: i + c >= hi (value hi) */
	i1 = lo - c;
	i1 = i1 < 0 ? 0 : i1 > n ? n : i1;
	i2 = hi - c;
	i2 = i2 < 0 ? 0 : i2 > n ? n : i2;
	/* middle i in [i1, i2): value i + c; (i1 + i2 - 1) * (i2 - i1) is even */
	return i1 * lo + (n - i2) * hi + (i2 - i1) * c + (i1 + i2 - 1) * (i2 - i1) / 2;
}

/* Keys attended by all lq rows of one sequence, summed: the closed form of
 * sum_i fa_mask_row_count(mask, i, lq, lk, prefix, window). */
static int64_t seq_pairs(int mask, int64_t lq, int64_t lk, int64_t prefix, int64_t window)
{
	/* row i has its diagonal at i + (lk - lq); c = first row's diag + 1 */
	int64_t c = lk - lq + 1;
	if (lq <= 0 || lk <= 0)
		return 0;
	switch (mask) {
	case FA_MASK_NONE:
		return lq * lk;
	case FA_MASK_CAUSAL: /* clamp(diag + 1, 0, lk) */
		return sum_clamped(lq, c, 0, lk);
	case FA_MASK_PREFIX_LM: { /* max(clamp(diag + 1, 0, lk), clamp(prefix, 0, lk)) */
		int64_t pl = prefix < 0 ? 0 : prefix > lk ? lk : prefix;
		return sum_clamped(lq, c, pl, lk);
	}
	case FA_MASK_SLIDING_WINDOW: /* clamp(diag + 1) - clamp(diag - window + 1) */
		if (window < 1)
			return 0;
		return sum_clamped(lq, c, 0, lk) - sum_clamped(lq, c - window, 0, lk);
	default:
		return 0;
	}
}

int64_t fa_problem_pairs(const struct fa_problem *p, const int32_t *cu_seqlens_q,
			 const int32_t *cu_seqlens_k, const int32_t *prefix_lens)
{
	int64_t pairs = 0;
	if (!p->varlen && !prefix_lens)
		return (int64_t)p->batch *
		       seq_pairs(p->mask, p->q_len, p->kv_len, p->prefix_len, p->window);
	for (int b = 0; b < p->batch; b++)
		pairs += seq_pairs(p->mask, fa_seq_q_len(p, cu_seqlens_q, b),
				   fa_seq_kv_len(p, cu_seqlens_k, b),
				   fa_seq_prefix(p, prefix_lens, b), p->window);
	return pairs;
}

double fa_problem_flops(const struct fa_problem *p, const int32_t *cu_seqlens_q,
			const int32_t *cu_seqlens_k, const int32_t *prefix_lens)
{
	/* one multiply-add (2 FLOPs) per element of q.k and of p * v */
	return 2.0 * (double)fa_problem_pairs(p, cu_seqlens_q, cu_seqlens_k, prefix_lens) *
	       (double)p->heads * ((double)p->head_dim + (double)p->head_dim_v);
}

double fa_pass_flops_factor(int pass)
{
	return pass == FA_PASS_BWD ? 2.5 : pass == FA_PASS_FWD_BWD ? 3.5 : 1.0;
}

/* Elements of tensor t (enum fa_tensor) that a kernel must read: all of
 * them, but for the rows of a varlen sequence whose other side is empty
 * (the keys of a sequence with no queries, the queries, O and dO of one
 * with no keys), which no query and no key depends on. */
static double read_elems(const struct fa_problem *p, const int32_t *cu_q, const int32_t *cu_k,
			 int t)
{
	const int qlike = t == FA_TENSOR_Q || t == FA_TENSOR_O || t == FA_TENSOR_DO;
	int64_t tokens;
	int32_t heads, dim;
	fa_tensor_shape(p, t, &tokens, &heads, &dim);
	for (int b = 0; p->varlen && b < p->batch; b++) {
		int32_t lq = fa_seq_q_len(p, cu_q, b), lk = fa_seq_kv_len(p, cu_k, b);
		if (qlike && lk == 0)
			tokens -= lq;
		else if (!qlike && lq == 0)
			tokens -= lk;
	}
	return (double)tokens * heads * dim;
}

double fa_problem_bytes(const struct fa_problem *p, const int32_t *cu_seqlens_q,
			const int32_t *cu_seqlens_k, int pass)
{
	const int32_t *cq = cu_seqlens_q, *ck = cu_seqlens_k;
	/* the forward: Q, K, V read, every row of O written */
	double fwd = read_elems(p, cq, ck, FA_TENSOR_Q) + read_elems(p, cq, ck, FA_TENSOR_K) +
		     read_elems(p, cq, ck, FA_TENSOR_V) + (double)fa_tensor_elems(p, FA_TENSOR_O);
	/* the backward: Q, K, V, O and dO read, every row of dQ, dK, dV written */
	double bwd = read_elems(p, cq, ck, FA_TENSOR_Q) + read_elems(p, cq, ck, FA_TENSOR_K) +
		     read_elems(p, cq, ck, FA_TENSOR_V) + read_elems(p, cq, ck, FA_TENSOR_O) +
		     read_elems(p, cq, ck, FA_TENSOR_DO) + (double)fa_tensor_elems(p, FA_TENSOR_DQ) +
		     (double)fa_tensor_elems(p, FA_TENSOR_DK) +
		     (double)fa_tensor_elems(p, FA_TENSOR_DV);
	double elems = pass == FA_PASS_BWD ? bwd : pass == FA_PASS_FWD_BWD ? fwd + bwd : fwd;
	return elems * fa_dtype_size(p->dtype);
}
