/* wgmma_common.cuh - the Hopper (sm_90a) primitives that the wgmma kernels
 * share (cuda_flash_wgmma in flash_wgmma_kernel.cuh, cuda_flash_bwd_wgmma in
 * flash_bwd_wgmma.cu): the 128-byte-swizzled slab geometry, mbarriers, TMA
 * box loads, shared-memory matrix descriptors, the warpgroup fence, commit
 * and wait, wgmma m64nNk16 with both operands from shared memory (ss) or A
 * from registers (rs), exp2 and the 16-bit pair packing.
 *
 * Everything is in an anonymous namespace: each translation unit that
 * includes it gets its own copy (the device code of a .cu file is compiled
 * on its own, without relocatable device code). The device functions exist
 * only in the sm_90a compilation (FA_WGMMA_DEVICE); the Makefile compiles
 * the files that include this header for sm_90a only.
 */
#ifndef FA_WGMMA_COMMON_CUH
#define FA_WGMMA_COMMON_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda.h> /* CUtensorMap; no libcuda symbol is linked */
#include <stdint.h>

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define FA_WGMMA_DEVICE 1
#else
#define FA_WGMMA_DEVICE 0
#endif

namespace {

constexpr int WG_THREADS = 128;              /* a warpgroup: 4 consecutive warps */

constexpr int SLAB_COLS = 64;                /* 128-byte swizzle rows: 64 16-bit elements */
constexpr int ROW_BYTES = SLAB_COLS * 2;     /* one swizzled row, 128 bytes */
constexpr int CORE_BYTES = 8 * ROW_BYTES;    /* 8 rows: one swizzle atom, 1024 bytes */

#if FA_WGMMA_DEVICE

__device__ __forceinline__ uint32_t smem_u32(const void *p)
{
	return (uint32_t)__cvta_generic_to_shared(p);
}

__device__ __forceinline__ void mbar_init(uint32_t bar, uint32_t count)
{
	asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}

__device__ __forceinline__ void mbar_expect_tx(uint32_t bar, uint32_t bytes)
{
	asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes)
		     : "memory");
}

__device__ __forceinline__ void mbar_arrive(uint32_t bar)
{
	asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}

/* Waits until the phase of parity `parity` of the barrier has completed (a
 * fresh barrier is in phase 0, so waiting on parity 1 returns at once). */
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity)
{
	uint32_t done;
	do {
		asm volatile("{\n\t.reg .pred p;\n\t"
			     "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
			     "selp.u32 %0, 1, 0, p;\n\t}"
			     : "=r"(done)
			     : "r"(bar), "r"(parity)
			     : "memory");
	} while (!done);
}

/* mbar_wait for the consumers: the warp converged again after its lanes
 * spun apart, as the .aligned wgmma instructions that follow require. */
__device__ __forceinline__ void mbar_wait_warp(uint32_t bar, uint32_t parity)
{
	mbar_wait(bar, parity);
	__syncwarp();
}

/* One box of the tensor map (64 columns x 128 or 64 rows x 1 head x 1 sequence)
 * into shared memory at dst, completing on bar. */
__device__ __forceinline__ void tma_load(uint32_t dst, const CUtensorMap *map, uint32_t bar,
					 int col, int row, int head, int seq)
{
	asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes"
		     " [%0], [%1, {%2, %3, %4, %5}], [%6];" ::"r"(dst),
		     "l"((uint64_t)map), "r"(col), "r"(row), "r"(head), "r"(seq), "r"(bar)
		     : "memory");
}

/* A shared-memory matrix descriptor (PTX ISA, "matrix descriptor format"):
 * start address, leading and stride byte offsets, all >> 4; bits 62-63 = 1:
 * the 128-byte swizzle; base offset 0 (every slab is 1024-byte aligned). */
__device__ __forceinline__ uint64_t wg_desc(uint32_t addr, uint32_t lbo_bytes, uint32_t sbo_bytes)
{
	return (uint64_t)((addr & 0x3FFFF) >> 4) | ((uint64_t)(lbo_bytes >> 4) << 16) |
	       ((uint64_t)(sbo_bytes >> 4) << 32) | (1ull << 62);
}

__device__ __forceinline__ void wg_fence(void)
{
	asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
}

__device__ __forceinline__ void wg_commit(void)
{
	asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}

__device__ __forceinline__ void wg_wait0(void)
{
	asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
}

/* All but the last committed group of products done. */
__device__ __forceinline__ void wg_wait1(void)
{
	asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
}

/* Keeps the compiler from moving accesses of accumulator registers across
 * the asynchronous products (CUTLASS's warpgroup_fence_operand). */
template <int N> __device__ __forceinline__ void fence_regs(float (&r)[N])
{
#pragma unroll
	for (int i = 0; i < N; i++)
		asm volatile("" : "+f"(r[i])::"memory");
}

#define FA_WG_ACC8(d, i)                                                                       \
	"+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), \
		"+f"(d[i + 6]), "+f"(d[i + 7])
#define FA_WG_ACC32(d, i) FA_WG_ACC8(d, i), FA_WG_ACC8(d, i + 8), FA_WG_ACC8(d, i + 16), FA_WG_ACC8(d, i + 24)
#define FA_WG_R32                                                                               \
	"%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, " \
	"%20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
#define FA_WG_R64                                                                               \
	FA_WG_R32 ", %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, " \
		  "%47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
#define FA_WG_R40 FA_WG_R32 ", %32, %33, %34, %35, %36, %37, %38, %39"
#define FA_WG_R128                                                                              \
	FA_WG_R64 ", %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, " \
		  "%79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, " \
		  "%95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, "  \
		  "%109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, "  \
		  "%122, %123, %124, %125, %126, %127"
#define FA_WG_R88 FA_WG_R64 ", %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87"
#define FA_WG_ACC40(d) FA_WG_ACC32(d, 0), FA_WG_ACC8(d, 32)
#define FA_WG_ACC88(d) FA_WG_ACC32(d, 0), FA_WG_ACC32(d, 32), FA_WG_ACC8(d, 64), FA_WG_ACC8(d, 72), FA_WG_ACC8(d, 80)
#define FA_WG_ACC128(d) FA_WG_ACC32(d, 0), FA_WG_ACC32(d, 32), FA_WG_ACC32(d, 64), FA_WG_ACC32(d, 96)

/* S (64 x 128, fp32) = or += A (64 x 16, shared) * B (16 x 128, shared),
 * both K-major; scale_d 0 overwrites d. */
#define FA_WG_SS_N128(TY)                                                                      \
	asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %66, 0;\n\t"                          \
		     "wgmma.mma_async.sync.aligned.m64n128k16.f32." TY "." TY " {" FA_WG_R64 "},"   \
		     " %64, %65, p, 1, 1, 0, 0;\n\t}"                                             \
		     : FA_WG_ACC32(d, 0), FA_WG_ACC32(d, 32)                                      \
		     : "l"(da), "l"(db), "r"(scale_d))
#define FA_WG_SS_N64(TY)                                                                       \
	asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %34, 0;\n\t"                          \
		     "wgmma.mma_async.sync.aligned.m64n64k16.f32." TY "." TY " {" FA_WG_R32 "},"    \
		     " %32, %33, p, 1, 1, 0, 0;\n\t}"                                             \
		     : FA_WG_ACC32(d, 0)                                                          \
		     : "l"(da), "l"(db), "r"(scale_d))
#define FA_WG_SS_N176(TY)                                                                      \
	asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %90, 0;\n\t"                          \
		     "wgmma.mma_async.sync.aligned.m64n176k16.f32." TY "." TY " {" FA_WG_R88 "},"   \
		     " %88, %89, p, 1, 1, 0, 0;\n\t}"                                             \
		     : FA_WG_ACC88(d)                                                             \
		     : "l"(da), "l"(db), "r"(scale_d))
#define FA_WG_SS_N80(TY)                                                                       \
	asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %42, 0;\n\t"                          \
		     "wgmma.mma_async.sync.aligned.m64n80k16.f32." TY "." TY " {" FA_WG_R40 "},"    \
		     " %40, %41, p, 1, 1, 0, 0;\n\t}"                                             \
		     : FA_WG_ACC40(d)                                                             \
		     : "l"(da), "l"(db), "r"(scale_d))
template <int N, bool BF16>
__device__ __forceinline__ void wgmma_ss(float (&d)[N / 2], uint64_t da, uint64_t db, int scale_d)
{
	if constexpr (N == 176) {
		if constexpr (BF16)
			FA_WG_SS_N176("bf16");
		else
			FA_WG_SS_N176("f16");
	} else if constexpr (N == 128) {
		if constexpr (BF16)
			FA_WG_SS_N128("bf16");
		else
			FA_WG_SS_N128("f16");
	} else if constexpr (N == 80) {
		if constexpr (BF16)
			FA_WG_SS_N80("bf16");
		else
			FA_WG_SS_N80("f16");
	} else {
		static_assert(N == 64, "key tiles: 64, 80, 128 and 176");
		if constexpr (BF16)
			FA_WG_SS_N64("bf16");
		else
			FA_WG_SS_N64("f16");
	}
}

/* O (64 x N, fp32) += A (64 x 16, registers) * B (16 x N, shared, MN-major:
 * imm-trans-b 1). */
#define FA_WG_RS_N128(TY)                                                                      \
	asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %69, 0;\n\t"                          \
		     "wgmma.mma_async.sync.aligned.m64n128k16.f32." TY "." TY " {" FA_WG_R64 "},"   \
		     " {%64, %65, %66, %67}, %68, p, 1, 1, 1;\n\t}"                               \
		     : FA_WG_ACC32(d, 0), FA_WG_ACC32(d, 32)                                      \
		     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(1))
#define FA_WG_RS_N64(TY)                                                                       \
	asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %37, 0;\n\t"                          \
		     "wgmma.mma_async.sync.aligned.m64n64k16.f32." TY "." TY " {" FA_WG_R32 "},"    \
		     " {%32, %33, %34, %35}, %36, p, 1, 1, 1;\n\t}"                               \
		     : FA_WG_ACC32(d, 0)                                                          \
		     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(1))
#define FA_WG_RS_N80(TY)                                                                       \
	asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %45, 0;\n\t"                          \
		     "wgmma.mma_async.sync.aligned.m64n80k16.f32." TY "." TY " {" FA_WG_R40 "},"    \
		     " {%40, %41, %42, %43}, %44, p, 1, 1, 1;\n\t}"                               \
		     : FA_WG_ACC40(d)                                                             \
		     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(1))
#define FA_WG_RS_N256(TY)                                                                      \
	asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %133, 0;\n\t"                         \
		     "wgmma.mma_async.sync.aligned.m64n256k16.f32." TY "." TY " {" FA_WG_R128 "},"  \
		     " {%128, %129, %130, %131}, %132, p, 1, 1, 1;\n\t}"                          \
		     : FA_WG_ACC128(d)                                                            \
		     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(1))
/* N 80 (head sizes 72 and 80): the second 64-column atom of V is read only
 * as far as its first 16 columns (the descriptor's LBO still steps a whole
 * slab); N 256: four atoms, one instruction (A read from registers once). */
template <int N, bool BF16>
__device__ __forceinline__ void wgmma_rs(float (&d)[N / 2], const uint32_t (&a)[4], uint64_t db)
{
	if constexpr (N == 256) {
		if constexpr (BF16)
			FA_WG_RS_N256("bf16");
		else
			FA_WG_RS_N256("f16");
	} else if constexpr (N == 128) {
		if constexpr (BF16)
			FA_WG_RS_N128("bf16");
		else
			FA_WG_RS_N128("f16");
	} else if constexpr (N == 80) {
		if constexpr (BF16)
			FA_WG_RS_N80("bf16");
		else
			FA_WG_RS_N80("f16");
	} else {
		static_assert(N == 64, "P V widths: 64, 80, 128 and 256");
		if constexpr (BF16)
			FA_WG_RS_N64("bf16");
		else
			FA_WG_RS_N64("f16");
	}
}

__device__ __forceinline__ float ex2(float x)
{
	float y;
	asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x)); /* ex2(-inf) = +0 */
	return y;
}

/* Two fp32 values as one 32-bit pair of the dtype, lo in the low half (the
 * lower column, as wgmma's A fragments and the output stores want). */
template <bool BF16> __device__ __forceinline__ uint32_t pack2(float lo, float hi)
{
	if constexpr (BF16) {
		__nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
		return *(uint32_t *)&v;
	} else {
		__half2 v = __floats2half2_rn(lo, hi);
		return *(uint32_t *)&v;
	}
}

#endif /* FA_WGMMA_DEVICE */

} // namespace

#endif /* FA_WGMMA_COMMON_CUH */
