/* data_gpu.cu - the device fill of test inputs, bit for bit what fa_data_fill
 * (harness/run/data.c) writes on the host: element d of (packed token T, head h)
 * gets fa_rng_value(seed, tensor, dist, (T * heads + h) * dim + d, dim),
 * rounded to the dtype with fa_dtype.h's integer conversions, at
 * fa_tensor_offset(T, h) + d.
 *
 * Exactness: fa_rng_value uses 64-bit integer operations, int-to-float and
 * double-to-float conversions (round to nearest on both sides) and single
 * multiplies with no add after them, so nvcc has nothing to contract into a
 * fused multiply-add; fa_dtype.h's conversions are integer code. No -fmad
 * flag is needed (the PTX of fill_kernel has no fma: checked with cuobjdump).
 */
#include "../common/fa_dtype.h"
#include "../common/fa_rng.h"
#include "cuda_kernels.h"

namespace {

constexpr int FILL_TX = 32; /* threads along the head dimension: coalesced stores */
constexpr int FILL_TY = 8;  /* (token, head) rows per block */
constexpr int64_t FILL_MAX_BLOCKS = 1 << 16; /* grid-stride beyond this */

__global__ void __launch_bounds__(FILL_TX * FILL_TY)
	fill_kernel(const struct fa_problem p, int tensor, int dist, uint64_t seed, void *dst,
		    int64_t n_rows, int32_t heads, int32_t dim)
{
	for (int64_t row = (int64_t)blockIdx.x * FILL_TY + threadIdx.y; row < n_rows;
	     row += (int64_t)gridDim.x * FILL_TY) {
		const int64_t T = row / heads;
		const int h = (int)(row % heads);
		const int64_t off = fa_tensor_offset(&p, tensor, T, h);
		const uint64_t base = (uint64_t)row * (uint64_t)dim;
		for (int32_t d = threadIdx.x; d < dim; d += FILL_TX)
			fa_store_f32(dst, p.dtype, off + d,
				     fa_rng_value(seed, tensor, dist, base + (uint64_t)d, dim));
	}
}

} /* namespace */

extern "C" int fa_cuda_fill_random(cudaStream_t stream, void *dst, const struct fa_problem *p,
				   int tensor, int dist, uint64_t seed)
{
	int64_t tokens, n_rows, blocks;
	int32_t heads, dim;
	if (tensor < FA_TENSOR_Q || tensor > FA_TENSOR_O || dist < 0 || dist >= FA_DIST_COUNT ||
	    p->dtype < 0 || p->dtype >= FA_DTYPE_COUNT)
		return (int)cudaErrorInvalidValue;
	fa_tensor_shape(p, tensor, &tokens, &heads, &dim);
	if (heads <= 0 || dim <= 0 || tokens <= 0)
		return 0; /* nothing to fill, as on the host */
	if (!dst)
		return (int)cudaErrorInvalidValue;
	n_rows = tokens * heads;
	blocks = (n_rows + FILL_TY - 1) / FILL_TY;
	if (blocks > FILL_MAX_BLOCKS)
		blocks = FILL_MAX_BLOCKS;
	(void)cudaGetLastError(); /* report this launch's error, not an older one */
	fill_kernel<<<(unsigned)blocks, dim3(FILL_TX, FILL_TY), 0, stream>>>(*p, tensor, dist, seed,
									      dst, n_rows, heads, dim);
	return (int)cudaGetLastError();
}
