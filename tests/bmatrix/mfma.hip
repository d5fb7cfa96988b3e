// mfma.hip - a small HIP source for the build-matrix tests: one 16x16x16
// bf16 matrix product on the matrix cores of every AMD target, each arch
// through its own builtin (MFMA on gfx9, WMMA on gfx11, the _gfx12 WMMA on
// gfx12), guarded by __GFX9__ / __GFX11__ / __GFX12__.
#include <hip/hip_runtime.h>
typedef __bf16 bf16x8 __attribute__((ext_vector_type(8)));
typedef short s4 __attribute__((ext_vector_type(4)));
typedef float f4 __attribute__((ext_vector_type(4)));
typedef float f8 __attribute__((ext_vector_type(8)));
typedef short s8 __attribute__((ext_vector_type(8)));
typedef short s16 __attribute__((ext_vector_type(16)));
__global__ void mm(const short *a, const short *b, float *c)
{
	int l = threadIdx.x;
#if defined(__GFX9__)
	s4 x = *(const s4 *)(a + 4 * l), y = *(const s4 *)(b + 4 * l);
	f4 acc = {0, 0, 0, 0};
	acc = __builtin_amdgcn_mfma_f32_16x16x16bf16_1k(x, y, acc, 0, 0, 0);
	*(f4 *)(c + 4 * l) = acc;
#elif defined(__GFX11__)
	s16 x = *(const s16 *)(a + 16 * l), y = *(const s16 *)(b + 16 * l);
	f8 acc = {};
	acc = __builtin_amdgcn_wmma_f32_16x16x16_bf16_w32(x, y, acc);
	*(f8 *)(c + 8 * l) = acc;
#elif defined(__GFX12__)
	s8 x = *(const s8 *)(a + 8 * l), y = *(const s8 *)(b + 8 * l);
	f8 acc = {};
	acc = __builtin_amdgcn_wmma_f32_16x16x16_bf16_w32_gfx12(x, y, acc);
	*(f8 *)(c + 8 * l) = acc;
#endif
}
