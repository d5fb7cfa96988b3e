/* flash_amd_mma.h - the flash-attention forward kernel on AMD matrix cores
 * (hip_flash_mfma: gfx90a/gfx942, wave64, MFMA 16x16x16; hip_flash_wmma:
 * gfx11 and gfx12, wave32, WMMA 16x16x16 in each arch's own layout).
 * fp16/bf16 inputs, fp32 accumulation; kernels/hip/hip_flash_amd_mma.hip
 * instantiates it per layout and head size.
 *
 * What it shares with cuda_flash_mma instead of copying it:
 *   - the grid (query tile x head or packed KV head x batch x splits), its
 *     launch order and GQA packing: fa_mma::params, make_params,
 *     grid_shape, workspace_bytes (kernels/cuda/flash_mma.cuh);
 *   - which rows and key tiles a block takes, the mask ranges, the split-KV
 *     ranges, the key predicate and the online-softmax rules (lazy
 *     rescaling, -inf rows, 1/l, the split's lse): kernels/common/fa_cta.h,
 *     which cuda_flash_mma calls too;
 *   - the split-KV merge: fa_mma::combine_row, run here in 32-lane groups
 *     (the shuffles below take width 32, so it is right at wave32 and 64);
 *   - the fragment layouts: kernels/common/amd_frag.h (tested on the CPU by
 *     tests/test_amd_frag.c); every operand is loaded and every accumulator
 *     stored through those maps, so the layout-specific code is the builtin
 *     call alone.
 *
 * One block: NW waves, each owning 16 query rows. Per K/V tile of BN = 32
 * keys: the block copies K and V into LDS (rows past the sequence and
 * columns past the true head size as zeros: head_dim 72 runs in the d80
 * instance, padded and masked, seed 002); each wave computes S = Q K^T for
 * its rows (16x16 tiles, D/16 products each) and stores S to its LDS
 * scratch through the C map; the softmax then takes a row per 16 lanes
 * (wave32: 2 lanes a row, wave64: 4), masks, moves the running max, writes
 * P as fp16/bf16 to LDS; O (in accumulator fragments) is rescaled and
 * O += P V reads P and V back through the A and B maps. Scores go to LDS
 * and back because the C and A layouts differ between every pair of these
 * architectures: one path, correct by construction of the maps, instead of
 * per-arch lane exchanges. LDS: at most 56 KiB (d256: 2 waves x 16 rows);
 * AMD gives a workgroup 64 KiB.
 *
 * Builtins are guarded by __GFX9__ / __GFX11__ / __GFX12__ inside the body
 * only: those macros exist in the device pass alone, and the host pass must
 * still see every kernel to emit its launch stub. A kernel compiled for an
 * arch whose matrix unit is not its own traps (supports() never lets it
 * launch there).
 *
 * Never run on AMD hardware (none exists where this was written): what was
 * verified is in docs/hip-mma.md.
 */
#ifndef FA_FLASH_AMD_MMA_H
#define FA_FLASH_AMD_MMA_H

#include <math.h>
#include <stdint.h>

/* FA_AMD_MMA_EXTERNAL: the includer (tests/hip_emu, which runs the kernel
 * body on CPU threads) supplies the HIP names this file uses and
 * fa_amd_external_mma(), the matrix instruction; the __global__ kernels and
 * launchers are left out. */
#ifndef FA_AMD_MMA_EXTERNAL
#include "../common/fa_gpu.h" /* first: hip_runtime.h defines __forceinline__ for FA_HD */
#endif
#include "../common/fa_dtype.h"

/* ---- the fa_mma primitives flash_mma.cuh's shared parts use, for HIP.
 * The tensor-core ones (ldmatrix, mma.sync, cp.async, st.shared) are only
 * declared: flash_cta and LOAD_ANY's gather_chunk, their only users, are
 * never called here. */
#define FA_MMA_EXTERNAL_PRIMITIVES 1
__device__ uint32_t fa_mma_smem_addr(const void *p);
template <int IMM>
__device__ void fa_mma_ldsm_x4(uint32_t (&r)[4], uint32_t addr);
template <int IMM>
__device__ void fa_mma_ldsm_x4_trans(uint32_t (&r)[4], uint32_t addr);
template <class T>
__device__ void fa_mma_16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1);
template <class T>
__device__ void fa_mma_16816_zero(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
				  uint32_t b1);
template <int IMM>
__device__ void fa_mma_cp_async_16(uint32_t dst, const void *src, uint32_t src_bytes);
__device__ void fa_mma_st_shared_16(uint32_t dst, const uint32_t (&w)[4]);
__device__ void fa_mma_cp_async_commit();
template <int N>
__device__ void fa_mma_cp_async_wait();
__device__ void fa_mma_syncwarp();

static __device__ __forceinline__ float fa_mma_exp2(float x)
{
	return exp2f(x); /* v_exp_f32; exp2(-inf) = +0, which masking relies on */
}

/* shuffles within groups of 32 lanes: the merge's rows are 32 lanes wide
 * on either wave size */
static __device__ __forceinline__ float fa_mma_shfl_xor(float v, int mask)
{
	return __shfl_xor(v, mask, 32);
}

static __device__ __forceinline__ float fa_mma_shfl(float v, int src_lane)
{
	return __shfl(v, src_lane, 32);
}

static __device__ __forceinline__ int fa_mma_any(int pred)
{
	return __any(pred);
}

static __device__ __forceinline__ void fa_mma_syncthreads()
{
	__syncthreads();
}

/* Two fp32 values rounded to nearest even and packed, lo in the low half
 * (the combine's output; the same bits as the CUDA kernel's cvt.rn). */
template <class T>
static __device__ __forceinline__ uint32_t fa_mma_pack2(float lo, float hi)
{
	if constexpr (T::dtype == FA_DTYPE_BF16)
		return (uint32_t)fa_f32_to_bf16(lo) | (uint32_t)fa_f32_to_bf16(hi) << 16;
	else
		return (uint32_t)fa_f32_to_f16(lo) | (uint32_t)fa_f32_to_f16(hi) << 16;
}

#include "../common/amd_frag.h"
#include "../common/fa_cta.h"
#include "../cuda/flash_mma.cuh"

namespace fa_amd {

using fa_mma::bf16_t;
using fa_mma::fp16_t;
using fa_mma::params;

typedef float f32x4 __attribute__((ext_vector_type(4)));
typedef float f32x8 __attribute__((ext_vector_type(8)));
typedef short i16x4 __attribute__((ext_vector_type(4)));
typedef short i16x8 __attribute__((ext_vector_type(8)));
typedef short i16x16 __attribute__((ext_vector_type(16)));
typedef _Float16 f16x4 __attribute__((ext_vector_type(4)));
typedef _Float16 f16x8 __attribute__((ext_vector_type(8)));
typedef _Float16 f16x16 __attribute__((ext_vector_type(16)));
typedef uint32_t u32x2 __attribute__((ext_vector_type(2)));
typedef uint32_t u32x4 __attribute__((ext_vector_type(4)));
typedef uint32_t u32x8 __attribute__((ext_vector_type(8)));

/* 1 when this device pass's matrix unit runs layout KIND (false in the
 * host pass). */
template <int KIND>
static __device__ constexpr bool native()
{
#if defined(FA_AMD_MMA_EXTERNAL)
	return true;
#elif defined(__GFX9__)
	return KIND == FA_FRAG_MFMA_16X16X16 || KIND == FA_FRAG_MFMA_32X32X8;
#elif defined(__GFX11__)
	return KIND == FA_FRAG_WMMA_GFX11;
#elif defined(__GFX12__)
	return KIND == FA_FRAG_WMMA_GFX12;
#else
	return false;
#endif
}

/* acc += A B for one 16x16x16 product; a, b: the lane's 16-bit elements in
 * the order of amd_frag.h's maps, two per word (element 2j in the low half
 * of word j: vector lane 2j of the builtin's operand), acc its fp32
 * accumulator elements. */
template <int KIND, class T, int AW, int CE>
static __device__ __forceinline__ void mma(float (&acc)[CE], const uint32_t (&a)[AW],
					   const uint32_t (&b)[AW])
{
#if defined(FA_AMD_MMA_EXTERNAL)
	fa_amd_external_mma<KIND, T::dtype>(acc, a, b);
#else
	(void)acc; /* the host pass and a foreign arch compile no builtin */
	(void)a;
	(void)b;
	if constexpr (KIND == FA_FRAG_MFMA_16X16X16) {
#if defined(__GFX9__)
		static_assert(AW == 2 && CE == 4, "mfma_f32_16x16x16: 4 + 4 -> 4");
		const i16x4 va = __builtin_bit_cast(i16x4, (u32x2){a[0], a[1]});
		const i16x4 vb = __builtin_bit_cast(i16x4, (u32x2){b[0], b[1]});
		f32x4 c;
#pragma unroll
		for (int i = 0; i < 4; ++i)
			c[i] = acc[i];
		if constexpr (T::dtype == FA_DTYPE_BF16)
			c = __builtin_amdgcn_mfma_f32_16x16x16bf16_1k(va, vb, c, 0, 0, 0);
		else
			c = __builtin_amdgcn_mfma_f32_16x16x16f16(__builtin_bit_cast(f16x4, va),
								 __builtin_bit_cast(f16x4, vb), c, 0, 0, 0);
#pragma unroll
		for (int i = 0; i < 4; ++i)
			acc[i] = c[i];
#endif
	} else if constexpr (KIND == FA_FRAG_WMMA_GFX11) {
#if defined(__GFX11__)
		static_assert(AW == 8 && CE == 8, "wmma gfx11: 16 + 16 -> 8");
		const i16x16 va = __builtin_bit_cast(
			i16x16, (u32x8){a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7]});
		const i16x16 vb = __builtin_bit_cast(
			i16x16, (u32x8){b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]});
		f32x8 c;
#pragma unroll
		for (int i = 0; i < 8; ++i)
			c[i] = acc[i];
		if constexpr (T::dtype == FA_DTYPE_BF16)
			c = __builtin_amdgcn_wmma_f32_16x16x16_bf16_w32(va, vb, c);
		else
			c = __builtin_amdgcn_wmma_f32_16x16x16_f16_w32(__builtin_bit_cast(f16x16, va),
								       __builtin_bit_cast(f16x16, vb), c);
#pragma unroll
		for (int i = 0; i < 8; ++i)
			acc[i] = c[i];
#endif
	} else if constexpr (KIND == FA_FRAG_WMMA_GFX12) {
#if defined(__GFX12__)
		static_assert(AW == 4 && CE == 8, "wmma gfx12: 8 + 8 -> 8");
		const i16x8 va = __builtin_bit_cast(i16x8, (u32x4){a[0], a[1], a[2], a[3]});
		const i16x8 vb = __builtin_bit_cast(i16x8, (u32x4){b[0], b[1], b[2], b[3]});
		f32x8 c;
#pragma unroll
		for (int i = 0; i < 8; ++i)
			c[i] = acc[i];
		if constexpr (T::dtype == FA_DTYPE_BF16)
			c = __builtin_amdgcn_wmma_f32_16x16x16_bf16_w32_gfx12(va, vb, c);
		else
			c = __builtin_amdgcn_wmma_f32_16x16x16_f16_w32_gfx12(
				__builtin_bit_cast(f16x8, va), __builtin_bit_cast(f16x8, vb), c);
#pragma unroll
		for (int i = 0; i < 8; ++i)
			acc[i] = c[i];
#endif
	}
#endif /* FA_AMD_MMA_EXTERNAL */
}

/* One fp32 value rounded to nearest even as the 16-bit type's bits. */
template <class T>
static __device__ __forceinline__ uint16_t pack1(float v)
{
	if constexpr (T::dtype == FA_DTYPE_BF16)
		return fa_f32_to_bf16(v);
	else
		return __builtin_bit_cast(uint16_t, (_Float16)v);
}

/* An instance's compile-time shape. KIND: the fragment layout; D: head
 * size as computed (multiple of 16; the d80 instance also runs 72); NW:
 * waves, each 16 query rows. BM, BN, DV, MINB and MODE are the names
 * fa_mma::make_params and workspace_bytes read. MODE is LOAD_MASKED, what
 * load_tile does: every copy predicated at the problem's run-time width
 * (DREAL unused), 16-byte rows (supports() requires strides of 8
 * elements); never LOAD_ANY, so make_params leaves params::gather 0 and
 * combine_row stores whole column pairs. */
template <int KIND_, int D_, int NW_>
struct config {
	static constexpr int KIND = KIND_, D = D_, DV = D_, NW = NW_;
	static constexpr fa_frag_shape S = fa_frag_shape_of(KIND);
	static constexpr int WAVE = S.wave, AE = S.a_elems, CE = S.c_elems;
	static constexpr int NT = NW * WAVE;
	static constexpr int BM = 16 * NW, BN = 32;
	static constexpr int MINB = 1; /* blocks per CU assumed by the split rule */
	static constexpr int MODE = fa_mma::LOAD_MASKED;
	static constexpr int LD = D + 8;   /* Q/K/V row stride in LDS (elements): 16-byte rows, staggered banks */
	static constexpr int LS = BN + 1;  /* S scratch row stride (fp32) */
	static constexpr int LP = BN + 8;  /* P scratch row stride (16-bit) */
	static constexpr int LVT = BN + 8; /* V^T row stride (16-bit): V is stored transposed */
	static constexpr int AW = AE / 2;  /* 32-bit words of an A or B fragment */
	static constexpr int NPART = WAVE / 16; /* lanes per softmax row */
	static constexpr int KP = BN / NPART;   /* keys per lane in the softmax */
	static_assert(S.m == 16 && S.n == 16 && S.k == 16, "the kernel tiles 16x16x16 products");
	static_assert(S.a_elems == S.b_elems, "A and B fragments of one size");
	static_assert(D % 16 == 0 && BN % 16 == 0, "tile shape");
};

template <class CFG>
struct smem {
	alignas(16) uint16_t q[CFG::BM * CFG::LD];
	alignas(16) uint16_t k[CFG::BN * CFG::LD];
	alignas(16) uint16_t vt[CFG::DV * CFG::LVT]; /* V transposed: vt[dv][key] */
	float s[CFG::NW][16][CFG::LS];
	alignas(4) uint16_t p[CFG::NW][16][CFG::LP];
	float alpha[CFG::NW][16];
	int2 range[CFG::BM];
};

/* Copy a rows x D tile of 16-bit elements into LDS (row stride LD), 16
 * bytes at a time; row r comes from row_ptr(r, &src) (false: outside, zeros)
 * and columns at or past width are zeros. width is a multiple of 8. */
template <class CFG, class RowFn>
static __device__ __forceinline__ void load_tile(uint16_t *dst, int rows, int tid, int width,
						 RowFn row_ptr)
{
	constexpr int C = CFG::D / 8;
	for (int idx = tid; idx < rows * C; idx += CFG::NT) {
		const int r = idx / C, c = idx - (idx / C) * C;
		const uint16_t *src;
		uint4 v;
		v.x = v.y = v.z = v.w = 0u;
		if (row_ptr(r, src) && c * 8 < width)
			v = *reinterpret_cast<const uint4 *>(src + c * 8);
		*reinterpret_cast<uint4 *>(dst + r * CFG::LD + c * 8) = v;
	}
}

/* V tile n0.. transposed into LDS: vt[dv][key] (row stride LVT), so that
 * the B operand of P V, B[k][n] = V[key k][dv n], has consecutive k
 * adjacent; keys past lk and columns past width are zeros. */
template <class CFG>
static __device__ __forceinline__ void load_vt(uint16_t *vt, int tid, int width,
					       const uint16_t *vbase, int64_t vss, int n0, int lk)
{
	constexpr int C = CFG::DV / 8;
	for (int idx = tid; idx < CFG::BN * C; idx += CFG::NT) {
		const int c = idx / CFG::BN, r = idx - (idx / CFG::BN) * CFG::BN; /* key fastest */
		uint4 v;
		v.x = v.y = v.z = v.w = 0u;
		if (n0 + r < lk && c * 8 < width)
			v = *reinterpret_cast<const uint4 *>(vbase + (int64_t)(n0 + r) * vss + c * 8);
		const uint32_t w4[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
		for (int e = 0; e < 4; ++e) {
			vt[(c * 8 + 2 * e) * CFG::LVT + r] = (uint16_t)(w4[e] & 0xffffu);
			vt[(c * 8 + 2 * e + 1) * CFG::LVT + r] = (uint16_t)(w4[e] >> 16);
		}
	}
}

/* Word j of a fragment: elements 2j (low half) and 2j+1, adjacent in LDS
 * because amd_frag.h's A and B maps pair consecutive k (checked by
 * tests/test_amd_frag.c, amd_frag/pairs_are_adjacent_along_k). */
static __device__ __forceinline__ uint32_t lds_pair(const uint16_t *base, int idx)
{
	return *reinterpret_cast<const uint32_t *>(base + idx);
}

template <class CFG, class T>
static __device__ __forceinline__ void flash_amd_cta(const params &prm, int tid, int bx, int by,
						     int bz)
{
	constexpr int KIND = CFG::KIND, D = CFG::D, DV = CFG::DV, BM = CFG::BM, BN = CFG::BN;
	constexpr int AW = CFG::AW, CE = CFG::CE, LD = CFG::LD, KP = CFG::KP;
	constexpr int LP = CFG::LP, LVT = CFG::LVT;
	constexpr int WAVE = CFG::WAVE;
	__shared__ smem<CFG> sm;
	const struct fa_problem &p = prm.p;
	const int wave = tid / WAVE, lane = tid - (tid / WAVE) * WAVE;
	const int rr = lane % 16, part = lane / 16; /* the softmax's row and key part */

	const struct fa_grid gr = {prm.group, prm.packed, prm.m_tiles, prm.reverse, prm.tile_major,
				   prm.splits};
	struct fa_cta_work w;
	if (!fa_cta_work_of(&p, &gr, prm.cu_q, prm.cu_k, prm.prefix_lens, BM, BN, bx, by, bz, &w))
		return; /* past this sequence: the whole block leaves */
	const int b = w.b;
	const uint16_t *kbase = prm.k + fa_k_offset(&p, prm.cu_k, b, 0, w.hk);
	const uint16_t *vbase = prm.v + fa_v_offset(&p, prm.cu_k, b, 0, w.hk);

	/* Q rows (zeros past the sequence) and every row's allowed keys */
	load_tile<CFG>(sm.q, BM, tid, p.head_dim, [&](int r, const uint16_t *&src) {
		const int R = w.row0 + r;
		if (R >= w.rows_total)
			return false;
		int h, i;
		fa_cta_row_head_pos(prm.packed, w.h0, w.lq, R, &h, &i);
		src = prm.q + fa_q_offset(&p, prm.cu_q, b, i, h);
		return true;
	});
	for (int r = tid; r < BM; r += CFG::NT) {
		const int R = w.row0 + r;
		int h, i, lo = 0, hi = 0;
		fa_cta_row_head_pos(prm.packed, w.h0, w.lq, R, &h, &i);
		if (R < w.rows_total)
			fa_mask_range(p.mask, i, w.lq, w.lk, p.window, &lo, &hi);
		sm.range[r] = make_int2(lo, hi);
	}

	float o[DV / 16][CE];
#pragma unroll
	for (int j = 0; j < DV / 16; ++j)
#pragma unroll
		for (int e = 0; e < CE; ++e)
			o[j][e] = 0.f;
	float m_run = -INFINITY, l_run = 0.f; /* of row rr of this wave */
	const float c_log2 = prm.scale_log2;

	for (int n = w.n_begin; n < w.n_end; ++n) {
		const int n0 = n * BN;
		__syncthreads(); /* every wave is done with the previous K/V tile */
		load_tile<CFG>(sm.k, BN, tid, p.head_dim, [&](int r, const uint16_t *&src) {
			src = kbase + (int64_t)(n0 + r) * p.k_stride_s;
			return n0 + r < w.lk;
		});
		load_vt<CFG>(sm.vt, tid, p.head_dim_v, vbase, p.v_stride_s, n0, w.lk);
		__syncthreads();

		/* ---- S = Q K^T for this wave's 16 rows, to the LDS scratch ----
		 * (ks is unrolled only in part: at d256 a full unroll keeps every
		 * fragment in flight and spills) */
		float acc[BN / 16][CE];
#pragma unroll
		for (int j = 0; j < BN / 16; ++j)
#pragma unroll
			for (int e = 0; e < CE; ++e)
				acc[j][e] = 0.f;
#pragma unroll 2
		for (int ks = 0; ks < D / 16; ++ks) {
			uint32_t a[AW];
#pragma unroll
			for (int e = 0; e < AW; ++e) {
				const fa_frag_rc x = fa_frag_a(KIND, lane, 2 * e); /* (m, k) */
				a[e] = lds_pair(sm.q, (wave * 16 + x.row) * LD + ks * 16 + x.col);
			}
#pragma unroll
			for (int j = 0; j < BN / 16; ++j) {
				uint32_t bb[AW];
#pragma unroll
				for (int e = 0; e < AW; ++e) {
					const fa_frag_rc y = fa_frag_b(KIND, lane, 2 * e); /* (k, n): K[key n][k] */
					bb[e] = lds_pair(sm.k, (j * 16 + y.col) * LD + ks * 16 + y.row);
				}
				mma<KIND, T>(acc[j], a, bb);
			}
		}
#pragma unroll
		for (int j = 0; j < BN / 16; ++j)
#pragma unroll
			for (int e = 0; e < CE; ++e) {
				const fa_frag_rc x = fa_frag_c(KIND, lane, e);
				sm.s[wave][x.row][j * 16 + x.col] = acc[j][e];
			}
		__syncthreads();

		/* ---- mask and online softmax: row rr, keys part*KP.. ---- */
		const bool full = fa_cta_chunk_full(&w, n0, BN);
		const int2 rg = sm.range[wave * 16 + rr];
		float sv[KP];
		float mx = -INFINITY;
#pragma unroll
		for (int e = 0; e < KP; ++e) {
			const int kc = part * KP + e;
			float v = sm.s[wave][rr][kc];
			if (!full && !fa_cta_key_allowed(n0 + kc, rg.x, rg.y, w.pfx))
				v = -INFINITY;
			sv[e] = v;
			mx = fmaxf(mx, v);
		}
#pragma unroll
		for (int off = 16; off < WAVE; off <<= 1)
			mx = fmaxf(mx, __shfl_xor(mx, off, WAVE));
		mx *= c_log2; /* -inf stays -inf */
		const bool up = fa_online_moves(m_run, mx);
		const float alpha = up ? fa_mma_exp2(m_run - mx) : 1.f; /* exp2(-inf) = 0 */
		m_run = up ? mx : m_run;
		const float m_use = fa_online_m_use(m_run);
		float sum = 0.f;
#pragma unroll
		for (int e = 0; e < KP; ++e) {
			const float pv = fa_mma_exp2(fmaf(sv[e], c_log2, -m_use));
			sum += pv;
			sm.p[wave][rr][part * KP + e] = pack1<T>(pv);
		}
#pragma unroll
		for (int off = 16; off < WAVE; off <<= 1)
			sum += __shfl_xor(sum, off, WAVE);
		l_run = l_run * alpha + sum;
		if (part == 0)
			sm.alpha[wave][rr] = alpha;
		__syncthreads();

		/* ---- O = O * alpha + P V ---- */
#pragma unroll
		for (int e = 0; e < CE; ++e) {
			const float al = sm.alpha[wave][fa_frag_c(KIND, lane, e).row];
#pragma unroll
			for (int j = 0; j < DV / 16; ++j)
				o[j][e] *= al;
		}
#pragma unroll
		for (int kk = 0; kk < BN / 16; ++kk) {
			uint32_t a[AW];
#pragma unroll
			for (int e = 0; e < AW; ++e) {
				const fa_frag_rc x = fa_frag_a(KIND, lane, 2 * e); /* (row, key) */
				a[e] = lds_pair(&sm.p[wave][0][0], x.row * LP + kk * 16 + x.col);
			}
#pragma unroll
			for (int j = 0; j < DV / 16; ++j) {
				uint32_t bb[AW];
#pragma unroll
				for (int e = 0; e < AW; ++e) {
					const fa_frag_rc y = fa_frag_b(KIND, lane, 2 * e); /* (key, dv): vt[dv][key] */
					bb[e] = lds_pair(sm.vt, (j * 16 + y.col) * LVT + kk * 16 + y.row);
				}
				mma<KIND, T>(o[j], a, bb);
			}
		}
	}

	/* ---- epilogue: O / l to the output, or O / l and the lse of this
	 * key range to the split-KV workspace (fa_mma::combine_row merges) ---- */
	__syncthreads(); /* alpha is reused for 1 / l */
	const int R_soft = w.row0 + wave * 16 + rr;
	if (part == 0) {
		sm.alpha[wave][rr] = fa_online_inv_l(l_run);
		if (prm.splits > 1 && R_soft < w.rows_total) {
			int h, i;
			fa_cta_row_head_pos(prm.packed, w.h0, w.lq, R_soft, &h, &i);
			const int64_t wr = (fa_seq_q_start(&p, prm.cu_q, b) + i) * p.heads + h;
			prm.ws_lse[w.sp * prm.ws_rows + wr] = fa_online_lse(m_run, l_run);
		}
	}
	__syncthreads();
#pragma unroll
	for (int e = 0; e < CE; ++e) {
		const fa_frag_rc x = fa_frag_c(KIND, lane, e);
		const int R = w.row0 + wave * 16 + x.row;
		if (R >= w.rows_total)
			continue;
		const float inv = sm.alpha[wave][x.row];
		int h, i;
		fa_cta_row_head_pos(prm.packed, w.h0, w.lq, R, &h, &i);
		if (prm.splits > 1) {
			const int64_t wr = (fa_seq_q_start(&p, prm.cu_q, b) + i) * p.heads + h;
			float *dst = prm.ws_o + (w.sp * prm.ws_rows + wr) * DV;
#pragma unroll
			for (int j = 0; j < DV / 16; ++j)
				dst[j * 16 + x.col] = o[j][e] * inv;
		} else {
			uint16_t *dst = prm.o + fa_o_offset(&p, prm.cu_q, b, i, h);
#pragma unroll
			for (int j = 0; j < DV / 16; ++j)
				if (j * 16 + x.col < p.head_dim_v)
					dst[j * 16 + x.col] = pack1<T>(o[j][e] * inv);
		}
	}
}

#ifndef FA_AMD_MMA_EXTERNAL
template <class CFG, class T>
__global__ void __launch_bounds__(CFG::NT) flash_amd_kernel(const params prm)
{
	if constexpr (native<CFG::KIND>())
		flash_amd_cta<CFG, T>(prm, (int)threadIdx.x, (int)blockIdx.x, (int)blockIdx.y,
				      (int)blockIdx.z);
	else
		__builtin_trap(); /* not this arch's matrix unit: supports() never launches it */
}

/* The split-KV merge of cuda_flash_mma: one row per 32 lanes, 4 rows per
 * 128-thread block on either wave size. */
template <int DV, class T>
__global__ void __launch_bounds__(128) combine_kernel(const params prm)
{
	const int64_t r = (int64_t)blockIdx.x * 4 + (threadIdx.x >> 5);
	if (r < prm.ws_rows)
		fa_mma::combine_row<DV, T>(prm, r, (int)(threadIdx.x & 31));
}

template <class CFG, class T>
static int launch_typed(const struct fa_launch_args *a)
{
	params prm;
	unsigned grid[3];
	if (!fa_mma::make_params<CFG>(a, &prm, grid))
		return 0;
	if (prm.splits > 1 &&
	    (!a->workspace || a->workspace_bytes < fa_mma::workspace_bytes<CFG>(a->p, a->params)))
		return (int)hipErrorInvalidValue; /* the harness allocates workspace_bytes() */
	const hipStream_t st = (hipStream_t)a->stream;
	hipLaunchKernelGGL((flash_amd_kernel<CFG, T>), dim3(grid[0], grid[1], grid[2]),
			   dim3(CFG::NT), 0, st, prm);
	if (prm.splits > 1) {
		const hipError_t e = hipGetLastError();
		if (e != hipSuccess)
			return (int)e;
		hipLaunchKernelGGL((combine_kernel<CFG::DV, T>),
				   dim3((unsigned)((prm.ws_rows + 3) / 4)), dim3(128), 0, st, prm);
	}
	return (int)hipGetLastError();
}

template <class CFG>
static int launch(const struct fa_launch_args *a)
{
	if (a->p->dtype == FA_DTYPE_BF16)
		return launch_typed<CFG, bf16_t>(a);
	if (a->p->dtype == FA_DTYPE_FP16)
		return launch_typed<CFG, fp16_t>(a);
	return (int)hipErrorInvalidValue; /* supports() rejects other dtypes */
}
#endif /* FA_AMD_MMA_EXTERNAL */

} /* namespace fa_amd */

#endif /* FA_FLASH_AMD_MMA_H */
