/* flash_bwd_common.cuh - the passes that the tensor-core backwards share
 * (cuda_flash_bwd_mma in flash_bwd_mma.cu, cuda_flash_bwd_wgmma in
 * flash_bwd_wgmma.cu) around their main kernels: the delta pre-pass D =
 * rowsum(dO * O) (which clears the dQ accumulator besides), the dQ pass
 * (scale times the fp32 accumulator, or the sum of per-key-block partials,
 * converted to the input type) and, where a CTA per GQA query head left
 * fp32 dK/dV partials, their sum in head order; and the host sequence that
 * launches them (launch_pre, launch_post).
 */
#ifndef FA_FLASH_BWD_COMMON_CUH
#define FA_FLASH_BWD_COMMON_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>

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

/* Eight fp32 values from one 16-byte group of the 16-bit dtype DT. */
template <int DT> __device__ __forceinline__ void unpack8(uint4 v, float (&x)[8])
{
	const uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
	for (int i = 0; i < 4; i++) {
		float2 f;
		if constexpr (DT == FA_DTYPE_BF16)
			f = __bfloat1622float2(*(const __nv_bfloat162 *)&w[i]);
		else
			f = __half22float2(*(const __half2 *)&w[i]);
		x[2 * i] = f.x;
		x[2 * i + 1] = f.y;
	}
}

/* Eight fp32 values as one 16-byte group of DT (round to nearest). */
template <int DT> __device__ __forceinline__ uint4 pack8(const float (&x)[8])
{
	uint32_t w[4];
#pragma unroll
	for (int i = 0; i < 4; i++) {
		if constexpr (DT == FA_DTYPE_BF16) {
			__nv_bfloat162 v = __floats2bfloat162_rn(x[2 * i], x[2 * i + 1]);
			w[i] = *(uint32_t *)&v;
		} else {
			__half2 v = __floats2half2_rn(x[2 * i], x[2 * i + 1]);
			w[i] = *(uint32_t *)&v;
		}
	}
	return make_uint4(w[0], w[1], w[2], w[3]);
}

/* 1. D of query row (T * heads + h) = rowsum(dO * O), 16 threads a row,
 * 8 columns each with 16-byte loads (a row not on 16 bytes: one element at
 * a time); and the row's slices of the zparts fp32 dQ accumulators
 * ([zparts][rows][head_dim]) cleared, so no memset runs before. Head sizes
 * are multiples of 8 (every tensor-core instance's). */
template <int DT>
__global__ void __launch_bounds__(256)
	delta_kernel(const struct fa_problem p, const void *__restrict__ o,
		     const void *__restrict__ d_o, float *__restrict__ delta, float *__restrict__ acc,
		     int zparts)
{
	const int64_t rows = (int64_t)p.total_q * p.heads;
	const int64_t row = (int64_t)blockIdx.x * 16 + threadIdx.x / 16;
	const int l = threadIdx.x % 16;
	const unsigned half = 0xffffu << (threadIdx.x & 16); /* this row's 16 lanes */
	if (row >= rows)
		return; /* the row's 16 lanes together */
	const int64_t off = fa_tensor_offset(&p, FA_TENSOR_O, row / p.heads, (int)(row % p.heads));
	const uint16_t *ro = (const uint16_t *)o + off, *rd = (const uint16_t *)d_o + off;
	float s = 0.f;
	if ((((uintptr_t)ro | (uintptr_t)rd) & 15) == 0) {
		for (int c = 8 * l; c < p.head_dim_v; c += 128) {
			float a[8], b[8];
			unpack8<DT>(*(const uint4 *)(ro + c), a);
			unpack8<DT>(*(const uint4 *)(rd + c), b);
#pragma unroll
			for (int i = 0; i < 8; i++)
				s = fmaf(a[i], b[i], s);
		}
	} else {
		for (int c = l; c < p.head_dim_v; c += 16)
			s += fa_cuda_load<DT>(o, off + c) * fa_cuda_load<DT>(d_o, off + c);
	}
#pragma unroll
	for (int x = 8; x > 0; x >>= 1)
		s += __shfl_xor_sync(half, s, x);
	if (l == 0)
		delta[row] = s;
	const int64_t n = rows * p.head_dim;
	for (int k = 0; k < zparts; k++)
		for (int c = 4 * l; c < p.head_dim; c += 64)
			*(float4 *)(acc + k * n + row * p.head_dim + c) = make_float4(0.f, 0.f, 0.f, 0.f);
}

/* 3 and 4. Tensor t (rows of `width` columns, row = token x nh + head) =
 * mul x the sum of nparts fp32 partials ([nparts][rows][width]) in part
 * order (the same bits every run): dQ from its accumulator (or the
 * per-key-block partials), and under split dK and dV from the group's
 * partials. 8 columns a thread (width a multiple of 8): two 16-byte loads
 * a part, one 16-byte store where the output row is on 16 bytes. */
template <int DT>
__global__ void __launch_bounds__(256)
	sum_store_kernel(const struct fa_problem p, const float *__restrict__ part, int64_t rows,
			 int nh, int width, int nparts, int t, float mul, void *out)
{
	const int w8 = width / 8;
	const int64_t e8 = (int64_t)blockIdx.x * 256 + threadIdx.x;
	if (e8 >= rows * w8)
		return;
	const int64_t row = e8 / w8;
	const int c = (int)(e8 - row * w8) * 8;
	const int64_t n = rows * width;
	float x[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
	for (int k = 0; k < nparts; k++) {
		const float4 *src = (const float4 *)(part + k * n + row * width + c);
		const float4 u = src[0], v = src[1];
		x[0] += u.x, x[1] += u.y, x[2] += u.z, x[3] += u.w;
		x[4] += v.x, x[5] += v.y, x[6] += v.z, x[7] += v.w;
	}
#pragma unroll
	for (int i = 0; i < 8; i++)
		x[i] *= mul;
	const int64_t off = fa_tensor_offset(&p, t, row / nh, (int)(row % nh)) + c;
	uint16_t *dst = (uint16_t *)out + off;
	if (((uintptr_t)dst & 15) == 0) {
		*(uint4 *)dst = pack8<DT>(x);
	} else {
#pragma unroll
		for (int i = 0; i < 8; i++)
			fa_store_f32(out, DT, off + i, x[i]);
	}
}

/* The workspace of both backwards: D (fp32 per query row), the dQ
 * accumulator (`parts` slices of [rows][head_dim] fp32), each on 256 bytes,
 * then under split the dK and dV partials (fp32 [group][total_k][kv_heads]
 * rows of head_dim, then of head_dim_v). */
struct workspace {
	float *delta, *acc, *dk_part, *dv_part;
};

static inline size_t align256(size_t x)
{
	return (x + 255) & ~(size_t)255;
}

static inline size_t workspace_bytes(const struct fa_problem *p, size_t parts, int split)
{
	const size_t rows = (size_t)p->total_q * (size_t)p->heads;
	size_t n = align256(sizeof(float) * rows) +
		   align256(sizeof(float) * rows * (size_t)p->head_dim * parts);
	if (split)
		n += sizeof(float) * (size_t)p->heads * (size_t)p->total_k *
		     (size_t)(p->head_dim + p->head_dim_v);
	return n;
}

static inline workspace workspace_of(const struct fa_problem *p, void *base, size_t parts)
{
	const size_t rows = (size_t)p->total_q * (size_t)p->heads;
	const int group = p->kv_heads > 0 ? p->heads / p->kv_heads : 1;
	workspace w;
	w.delta = (float *)base;
	w.acc = (float *)((char *)base + align256(sizeof(float) * rows));
	w.dk_part = (float *)((char *)w.acc + align256(sizeof(float) * rows * (size_t)p->head_dim * parts));
	w.dv_part = w.dk_part + (size_t)group * (size_t)p->total_k * (size_t)p->kv_heads *
					(size_t)p->head_dim;
	return w;
}

/* The passes around a main kernel on stream st, shared by both backwards
 * (workspace: D, then the dQ accumulator of `parts` slices, then under
 * split the dK and dV partials). Before: D and the cleared accumulator. */
template <int DT>
cudaError_t launch_pre(const struct fa_problem *p, const struct fa_launch_args *a, float *delta,
		       float *acc, int parts, cudaStream_t st)
{
	const int64_t rows = (int64_t)p->total_q * p->heads;
	if (rows > 0)
		delta_kernel<DT><<<(unsigned)((rows + 15) / 16), 256, 0, st>>>(*p, a->o, a->d_o, delta,
									       acc, parts);
	return cudaGetLastError();
}

/* After: dQ = scale x the accumulator's parts, and with split, dK = scale
 * x and dV = the sum of the group's partials. */
template <int DT>
cudaError_t launch_post(const struct fa_problem *p, const struct fa_launch_args *a,
			const float *acc, int parts, int split, const float *dk_part,
			const float *dv_part, cudaStream_t st)
{
	auto sum = [&](const float *part, int64_t rows, int nh, int width, int nparts, int t,
		       float mul, void *out) {
		const int64_t n8 = rows * (width / 8);
		if (n8 > 0)
			sum_store_kernel<DT><<<(unsigned)((n8 + 255) / 256), 256, 0, st>>>(
				*p, part, rows, nh, width, nparts, t, mul, out);
	};
	sum(acc, (int64_t)p->total_q * p->heads, p->heads, p->head_dim, parts, FA_TENSOR_DQ,
	    p->scale, a->dq);
	if (split) {
		const int64_t kr = (int64_t)p->total_k * p->kv_heads;
		const int group = p->heads / p->kv_heads;
		sum(dk_part, kr, p->kv_heads, p->head_dim, group, FA_TENSOR_DK, p->scale, a->dk);
		sum(dv_part, kr, p->kv_heads, p->head_dim_v, group, FA_TENSOR_DV, 1.f, a->dv);
	}
	return cudaGetLastError();
}

} /* namespace fa_bwd */

#endif /* FA_FLASH_BWD_COMMON_CUH */
