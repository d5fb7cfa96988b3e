/* data.h - host-side input generation and problem set-up helpers. */
#ifndef FA_DATA_H
#define FA_DATA_H

#include <stdint.h>

#include "../../kernels/common/fa_problem.h"

/* Fills the host buffer of tensor t (enum fa_tensor) of p with
 * fa_rng_value(seed, t, dist, logical index, dim) rounded to p->dtype, for
 * every element, on nthreads threads (<= 0: all CPUs). The buffer holds
 * fa_tensor_elems(p, t) elements laid out as p's strides say. */
void fa_data_fill(const struct fa_problem *p, int t, int dist, uint64_t seed, void *buf,
		  int nthreads);

/* Sets the strides of p for its layout, dense and packed (varlen or not),
 * from batch, heads, kv_heads, lengths, head dims and total_q / total_k,
 * and p->struct_size (the SDK's version 2 member). */
void fa_problem_set_strides(struct fa_problem *p);

/* Exact forward FLOPs: 2 * (unmasked (q, k) pairs) * (head_dim + head_dim_v),
 * summed over sequences and query heads. */
double fa_problem_flops(const struct fa_problem *p, const int32_t *cu_seqlens_q,
			const int32_t *cu_seqlens_k, const int32_t *prefix_lens);

/* What the FLOPs of a pass are in units of the forward's: 1 (fwd), 2.5
 * (bwd: the flash-attention convention, two matrix products forward, five
 * backward) and 3.5 (fwd_bwd). */
double fa_pass_flops_factor(int pass);

/* Bytes a pass (enum fa_pass) must move at least. The forward reads Q, K
 * and V and writes O once; the backward reads Q, K, V, O and dO and writes
 * dQ, dK and dV; fwd_bwd is both. Exact for varlen batches with empty
 * sequences: no kernel needs the K and V rows of a sequence with no queries
 * or the Q, O and dO rows of a sequence with no keys, so those reads are not
 * counted, while every output row is (a row with no key is written as
 * zeros, and so are the gradients of an empty sequence's other side).
 * Without empty sequences bwd is twice the forward's bytes and fwd_bwd
 * three times. cu_seqlens_q and cu_seqlens_k may be NULL unless p->varlen. */
double fa_problem_bytes(const struct fa_problem *p, const int32_t *cu_seqlens_q,
			const int32_t *cu_seqlens_k, int pass);

/* Unmasked (q, k) pairs per query head, summed over sequences (one head's
 * count: multiply by heads for the whole problem). Exact, O(batch). */
int64_t fa_problem_pairs(const struct fa_problem *p, const int32_t *cu_seqlens_q,
			 const int32_t *cu_seqlens_k, const int32_t *prefix_lens);

#endif /* FA_DATA_H */
