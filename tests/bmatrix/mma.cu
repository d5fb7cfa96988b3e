// mma.cu - a small CUDA source for the build-matrix tests: one kernel with
// a tensor-core mma.sync (HMMA in the SASS) and one with 1 KiB of static
// shared memory and no matrix instruction. Compiled for sm_80, sm_90, sm_90a.
#include <cuda_bf16.h>

extern "C" __global__ void bm_mma(const unsigned *a, const unsigned *b, float *c)
{
	const int l = threadIdx.x;
	unsigned a0 = a[4 * l], a1 = a[4 * l + 1], a2 = a[4 * l + 2], a3 = a[4 * l + 3];
	unsigned b0 = b[2 * l], b1 = b[2 * l + 1];
	float d0 = 0.f, d1 = 0.f, d2 = 0.f, d3 = 0.f;
	asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
		     "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
		     : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)
		     : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
	c[4 * l] = d0;
	c[4 * l + 1] = d1;
	c[4 * l + 2] = d2;
	c[4 * l + 3] = d3;
}

template <int N>
__global__ void bm_smem(const float *x, float *y)
{
	__shared__ float tile[N];
	tile[threadIdx.x % N] = x[threadIdx.x];
	__syncthreads();
	y[threadIdx.x] = tile[(threadIdx.x + 1) % N];
}

template __global__ void bm_smem<256>(const float *, float *);
