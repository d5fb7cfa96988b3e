/* fa_gpu_flush.cuh - the read pass of the harness's clean L2 flush (CUDA
 * and HIP): every 16-byte word of buf[0..n) loaded, so the L2 ends full of
 * clean lines. A sink store that never happens keeps the loads. Included
 * by kernels/common/fa_backend_gpu.h and by the standalone programs of
 * bench/ (bench/timing.cuh), which time a kernel after the same flush. */
#ifndef FA_GPU_FLUSH_CUH
#define FA_GPU_FLUSH_CUH

#include <stddef.h>

static __global__ void fa_gpu_flush_read_kernel(const uint4 *buf, size_t n, unsigned *sink)
{
	unsigned acc = 0;
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x) {
		const uint4 v = buf[i];
		acc ^= v.x ^ v.y ^ v.z ^ v.w;
	}
	if (acc == 0x9e3779b9u && threadIdx.x == 1023)
		*sink = acc;
}

#endif
