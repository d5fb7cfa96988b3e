#include <hip/hip_runtime.h>
typedef short s16 __attribute__((ext_vector_type(16)));
typedef float f8 __attribute__((ext_vector_type(8)));
__global__ void wmma_gfx11_only(const s16 *a, f8 *c)
{
	c[threadIdx.x] = __builtin_amdgcn_wmma_f32_16x16x16_bf16_w32(a[0], a[1], c[threadIdx.x]);
}
