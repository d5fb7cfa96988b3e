// wmma-gfx11.hip - the gfx11 WMMA builtin without an arch guard (seed
// 000): compiles for gfx1100, fails in the back end for gfx1201 ("Cannot
// select: intrinsic %llvm.amdgcn.wmma...") and in the front end for gfx9.
#include <hip/hip_runtime.h>
typedef short s16 __attribute__((ext_vector_type(16)));
typedef float f8 __attribute__((ext_vector_type(8)));
__global__ void wmma_gfx11_only(const s16 *a, f8 *c)
{
	c[threadIdx.x] = __builtin_amdgcn_wmma_f32_16x16x16_bf16_w32(a[0], a[1], c[threadIdx.x]);
}
