/* flash_bwd_common.cuh - the passes that the tensor-core backwards share
 * (cuda_flash_bwd_mma in flash_bwd_mma.cu, cuda_flash_bwd_wgmma in
 * flash_bwd_wgmma.cu) around their main kernels: the delta pre-pass D =
 * rowsum(dO * O), the dQ pass (scale times the fp32 accumulator, or the
 * sum of per-key-block partials, converted to the input type) and, where a
 * CTA per GQA query head left fp32 dK/dV partials, their sum in head order.
 */
#ifndef FA_FLASH_BWD_COMMON_CUH
#define FA_FLASH_BWD_COMMON_CUH

#include "../common/fa_cta.h"
#include "cuda_kernels.h"

namespace fa_bwd {

/* What a main-kernel CTA of BN keys (key block kb of sequence b) visits:
 * the sequence's lengths, its first key j0 and key count nk, the prefix
 * (prefix-LM), and the query blocks of BM rows [mb, mb + nmb) some row of
 * which sees one of its keys. */
struct key_block {
	int lq, lk, j0, nk, pfx, mb, nmb;
};

/* Fills kbk; 0 when the sequence has no key in the block (the CTA has
 * nothing to do). */
template <int BN, int BM>
__device__ __forceinline__ int key_block_of(const struct fa_problem &p, const int32_t *cu_q,
					    const int32_t *cu_k, const int32_t *prefix_lens, int b,
					    int kb, key_block *kbk)
{
	kbk->lq = fa_seq_q_len(&p, cu_q, b);
	kbk->lk = fa_seq_kv_len(&p, cu_k, b);
	kbk->j0 = kb * BN;
	if (kbk->j0 >= kbk->lk)
		return 0;
	kbk->nk = kbk->lk - kbk->j0 < BN ? kbk->lk - kbk->j0 : BN;
	kbk->pfx = 0;
	if (p.mask == FA_MASK_PREFIX_LM) {
		const int x = fa_seq_prefix(&p, prefix_lens, b);
		kbk->pfx = x < 0 ? 0 : x > kbk->lk ? kbk->lk : x;
	}
	int ib, ie;
	fa_cta_rows_for_keys(p.mask, kbk->lq, kbk->lk, p.window, kbk->pfx, kbk->j0, kbk->nk, &ib,
			     &ie);
	kbk->mb = ib / BM;
	kbk->nmb = (ie > ib ? (ie + BM - 1) / BM : kbk->mb) - kbk->mb;
	return 1;
}

/* 1. D of query row (T * heads + h) = blockIdx.x * 4 + warp. */
template <int DT>
__global__ void __launch_bounds__(128)
	delta_kernel(const struct fa_problem p, const void *__restrict__ o,
		     const void *__restrict__ d_o, float *__restrict__ delta)
{
	const int64_t row = (int64_t)blockIdx.x * 4 + threadIdx.x / 32;
	const int lane = threadIdx.x % 32;
	if (row >= (int64_t)p.total_q * p.heads)
		return; /* the whole warp */
	const int64_t off = fa_tensor_offset(&p, FA_TENSOR_O, row / p.heads, (int)(row % p.heads));
	float s = 0.f;
	for (int d = lane; d < p.head_dim_v; d += 32)
		s += fa_cuda_load<DT>(o, off + d) * fa_cuda_load<DT>(d_o, off + d);
#pragma unroll
	for (int x = 16; x > 0; x >>= 1)
		s += __shfl_xor_sync(0xffffffffu, s, x);
	if (lane == 0)
		delta[row] = s;
}

/* 3. dQ = scale x (the accumulator, or the sum of nparts partials in key
 * block order), one thread per element. */
template <int DT>
__global__ void __launch_bounds__(256)
	dq_kernel(const struct fa_problem p, const float *__restrict__ acc, int nparts, void *dq)
{
	const int64_t n = (int64_t)p.total_q * p.heads * p.head_dim;
	const int64_t e = (int64_t)blockIdx.x * 256 + threadIdx.x;
	if (e >= n)
		return;
	const int64_t row = e / p.head_dim;
	const int d = (int)(e - row * p.head_dim);
	float s = 0.f;
	for (int k = 0; k < nparts; k++)
		s += acc[(int64_t)k * n + e];
	fa_store_f32(dq, DT,
		     fa_tensor_offset(&p, FA_TENSOR_DQ, row / p.heads, (int)(row % p.heads)) + d,
		     p.scale * s);
}

/* 4. split with a group: dK = scale x, dV = the sum of the group's
 * partials in head order (the same bits every run), one thread per element
 * of [total_k][kv_heads][width] for tensor t (FA_TENSOR_DK or _DV). */
template <int DT>
__global__ void __launch_bounds__(256)
	kv_sum_kernel(const struct fa_problem p, const float *__restrict__ part, int width, int t,
		      float mul, void *out)
{
	const int64_t n = (int64_t)p.total_k * p.kv_heads * width;
	const int64_t e = (int64_t)blockIdx.x * 256 + threadIdx.x;
	if (e >= n)
		return;
	const int group = p.heads / p.kv_heads;
	const int64_t row = e / width;
	const int c = (int)(e - row * width);
	float s = 0.f;
	for (int k = 0; k < group; k++)
		s += part[(int64_t)k * n + e];
	fa_store_f32(out, DT, fa_tensor_offset(&p, t, row / p.kv_heads, (int)(row % p.kv_heads)) + c,
		     mul * s);
}

} /* namespace fa_bwd */

#endif /* FA_FLASH_BWD_COMMON_CUH */
