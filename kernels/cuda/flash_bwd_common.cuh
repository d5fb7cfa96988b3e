/* flash_bwd_common.cuh - the passes that the tensor-core backwards share
 * (cuda_flash_bwd_mma in flash_bwd_mma.cu, cuda_flash_bwd_wgmma in
 * flash_bwd_wgmma.cu) around their main kernels: the delta pre-pass D =
 * rowsum(dO * O) and the dQ pass (scale times the fp32 accumulator, or the
 * sum of per-key-block partials, converted to the input type).
 */
#ifndef FA_FLASH_BWD_COMMON_CUH
#define FA_FLASH_BWD_COMMON_CUH

#include "cuda_kernels.h"

namespace fa_bwd {

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

} /* namespace fa_bwd */

#endif /* FA_FLASH_BWD_COMMON_CUH */
