/* flash_simt.cu - cuda_flash_simt: the FlashAttention-2 forward pass on CUDA
 * cores (no tensor cores), fp32 accumulation.
 *
 * One block of 128 threads computes a tile of 64 query rows of one head of
 * one sequence. The Q tile is staged once in shared memory (transposed, as
 * fp32); then for each tile of BN keys the block stages K^T, computes the
 * 64 x BN scores with 8 x (BN / 16) register micro-tiles, updates the online
 * softmax (running max and sum per row, accumulator rescaled), writes P^T to
 * shared memory, stages the V tile in the buffer K^T used, and accumulates
 * P V into 8 x Dv/16 registers per thread; when the harness asks
 * (fa_launch_args.lse, for cuda_flash_bwd_simt) it writes each row's
 * log-sum-exp. Key tiles outside every row's
 * allowed range are never visited (causal, sliding window, prefix-LM: the
 * prefix plus the causal range), and only tiles that cross a mask boundary
 * or the end of the keys pay for per-element masking.
 *
 * Thread layout: tid = ty * 16 + tx. Thread (ty, tx) owns query rows
 * ty*8 .. ty*8+7 of the tile; for scores it owns keys tx*CN .. tx*CN+CN-1,
 * for the output columns g*32 + tx*2 + {0, 1} of each 32-column group g. The
 * 16 threads sharing a row are one aligned half warp, so row reductions are
 * four xor shuffles.
 *
 * Instances by head-size bucket, (head_dim, head_dim_v) in (64, 64),
 * (128, 64), (128, 128), (256, 128), (256, 256); a problem runs on the first
 * that holds both sizes. The true sizes are runtime values, so any size from
 * 1 to 256 runs: 72 costs the 128 bucket's shared memory, but its score loop
 * stops at 72 and its output loop at 96 (the number of 32-column groups is
 * dispatched to a compile-time count). Expected speed on an H100: 15 to 30
 * TFLOP/s (fp32 FMA peak is about 67), not tensor-core speed.
 *
 * The same source is the HIP plugin's hip_flash_simt (kernels/common/fa_gpu.h
 * maps the runtime calls). AMD gives a workgroup 64 KiB of LDS, where the
 * 128 and 256 buckets need 83 and 108.5 KiB: under that cap (FA_SIMT_SMEM_LIMIT)
 * the 128 bucket takes 32-key tiles and the 256 bucket 32-row x 16-key
 * tiles (4 rows and 1 key per thread). Nothing here depends on the wave
 * size: lanes are grouped by 16 (row reductions) or 32 (staging) inside a
 * wave of 32 or 64.
 */
#include <math.h>
#include <stdio.h>

#include "../common/fa_dtype.h"
#include "cuda_kernels.h"
#include "problem_check.h"

namespace {

constexpr int FS_THREADS = 128; /* 4 warps: enough to stage tiles, few enough for 128 accumulators */
constexpr int FS_TX = 16;       /* threads along keys / output columns: a half warp */
constexpr int FS_TY = FS_THREADS / FS_TX; /* 8 row groups */
/* K^T and P^T rows are padded by 4 floats: rows stay 16-byte aligned for
 * float4 loads while the transposed stores spread over more banks. */
constexpr int FS_PAD = 4;
constexpr int FS_VG = 32;       /* output columns per group: 16 threads x 2 */

/* The shared memory a block may use, where the target caps it below what
 * the tiles want: AMD gives a workgroup 64 KiB of LDS, so the HIP build
 * picks smaller tiles (fs_cfg). 0: no cap (an H100 opts in to 227 KB; the
 * device's limit is still checked at setup). A CUDA build may set it
 * (NVCC_EXTRA=-DFA_SIMT_SMEM_LIMIT=65536) to run the AMD tiles on an
 * NVIDIA GPU: the same code, so their logic is tested there. */
#ifndef FA_SIMT_SMEM_LIMIT
#ifdef FA_GPU_HIP
#define FA_SIMT_SMEM_LIMIT 65536
#else
#define FA_SIMT_SMEM_LIMIT 0
#endif
#endif

/* Shared memory of a block with tiles of bm query rows and bn keys: Q^T,
 * then K^T or V (one buffer), then P^T. */
constexpr int fs_tile_bytes(int dmax, int dvmax, int bm, int bn)
{
	const int kv = dmax * (bn + FS_PAD) > bn * dvmax ? dmax * (bn + FS_PAD) : bn * dvmax;
	return (int)sizeof(float) * (dmax * bm + kv + bn * (bm + FS_PAD));
}

constexpr bool fs_tile_fits(int dmax, int dvmax, int bm, int bn)
{
	return FA_SIMT_SMEM_LIMIT == 0 || fs_tile_bytes(dmax, dvmax, bm, bn) <= FA_SIMT_SMEM_LIMIT;
}

/* The tile of a (head_dim, head_dim_v) bucket: 64 rows x 64 keys; 32 keys
 * when a head size is in the 256 bucket, to keep the block within 2 per
 * H100 SM in shared memory and registers. Under a shared-memory cap, the
 * first of 64 x 32, 64 x 16 and 32 x 16 that fits (64 KiB: the 128 bucket
 * takes 64 x 32, 58.5 KiB; the 256 bucket 32 x 16, 54.3 KiB). */
constexpr int fs_pick_bn(int dmax, int dvmax)
{
	const int bn0 = (dmax > 128 || dvmax > 128) ? 32 : 64;
	return fs_tile_fits(dmax, dvmax, 64, bn0) ? bn0 : fs_tile_fits(dmax, dvmax, 64, 32) ? 32 : 16;
}

constexpr int fs_pick_bm(int dmax, int dvmax)
{
	return fs_tile_fits(dmax, dvmax, 64, fs_pick_bn(dmax, dvmax)) ? 64 : 32;
}

template <int DMAX, int DVMAX> struct fs_cfg {
	static constexpr int BM = fs_pick_bm(DMAX, DVMAX); /* query rows per block */
	static constexpr int BN = fs_pick_bn(DMAX, DVMAX); /* keys per step */
	static constexpr int RM = BM / FS_TY;     /* rows per thread: 8 or 4 */
	static constexpr int CN = BN / FS_TX;     /* keys per thread: 4, 2 or 1 */
	static constexpr int NG = DVMAX / FS_VG;  /* output column groups */
	static constexpr int PSTRIDE = BM + FS_PAD;
	static constexpr int KSTRIDE = BN + FS_PAD;
	static constexpr int Q_FLOATS = DMAX * BM;
	static constexpr int K_FLOATS = DMAX * KSTRIDE;
	static constexpr int V_FLOATS = BN * DVMAX;
	static constexpr int KV_FLOATS = K_FLOATS > V_FLOATS ? K_FLOATS : V_FLOATS;
	static constexpr int SMEM_BYTES = fs_tile_bytes(DMAX, DVMAX, BM, BN);
	static_assert(RM == 4 || RM == 8, "rows per thread are moved as one or two float4");
	static_assert(CN == 1 || CN == 2 || CN == 4, "keys per thread are one load");
};

__device__ __forceinline__ int fs_min(int a, int b)
{
	return a < b ? a : b;
}

__device__ __forceinline__ int fs_max(int a, int b)
{
	return a > b ? a : b;
}

/* Max / sum over the 16 threads of an aligned half warp (xor offsets < 16
 * stay inside it; every lane of the warp takes part). */
__device__ __forceinline__ float fs_max16(float x)
{
#pragma unroll
	for (int o = FS_TX / 2; o > 0; o >>= 1)
		x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, o));
	return x;
}

__device__ __forceinline__ float fs_sum16(float x)
{
#pragma unroll
	for (int o = FS_TX / 2; o > 0; o >>= 1)
		x += __shfl_xor_sync(0xffffffffu, x, o);
	return x;
}

/* Global loads a thread keeps in flight while staging a tile: each batch
 * loads FS_BATCH elements into registers, then stores them, so a warp waits
 * for one memory latency per batch, not per element. */
constexpr int FS_BATCH = 8;

/* Stages rows [0, ROWS) x dims [0, d8) of a Q or K tile transposed into dst
 * (dst[d * stride + r]), as fp32; rows >= nvalid and dims >= D read as 0.
 * Element (r, d) is at base + r * stride_s + d. Each warp fills cells of 4
 * rows x 8 dims: the global reads are 4 runs of 8 elements; the shared
 * stores hit 32 distinct banks when stride % 32 == 4 (K^T; Q^T, staged once
 * per block, is not padded). */
template <int ROWS, int DT>
__device__ __forceinline__ void fs_stage_t(float *dst, int stride, const void *src, int64_t base,
					   int64_t stride_s, int nvalid, int D, int d8)
{
	const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
	const int cells = (ROWS / 4) * (d8 / 8);
	for (int c0 = warp; c0 < cells; c0 += FS_BATCH * (FS_THREADS / 32)) {
		float x[FS_BATCH];
#pragma unroll
		for (int u = 0; u < FS_BATCH; u++) {
			const int c = c0 + u * (FS_THREADS / 32);
			const int r = (c % (ROWS / 4)) * 4 + lane % 4;
			const int d = (c / (ROWS / 4)) * 8 + lane / 4;
			x[u] = 0.0f;
			if (c < cells && r < nvalid && d < D)
				x[u] = fa_cuda_load<DT>(src, base + (int64_t)r * stride_s + d);
		}
#pragma unroll
		for (int u = 0; u < FS_BATCH; u++) {
			const int c = c0 + u * (FS_THREADS / 32);
			const int r = (c % (ROWS / 4)) * 4 + lane % 4;
			const int d = (c / (ROWS / 4)) * 8 + lane / 4;
			if (c < cells)
				dst[d * stride + r] = x[u];
		}
	}
}

/* Stages the V tile row-major into dst (dst[r * DVMAX + col]) for columns
 * [0, dv32); rows >= nvalid and columns >= DV read as 0 (the masked and
 * missing keys then contribute 0 * 0, never 0 * garbage). */
template <int BN, int DVMAX, int DT>
__device__ __forceinline__ void fs_stage_v(float *dst, const void *src, int64_t base,
					   int64_t stride_s, int nvalid, int DV, int dv32)
{
	const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
	const int cells = BN * (dv32 / 32);
	for (int c0 = warp; c0 < cells; c0 += FS_BATCH * (FS_THREADS / 32)) {
		float x[FS_BATCH];
#pragma unroll
		for (int u = 0; u < FS_BATCH; u++) {
			const int c = c0 + u * (FS_THREADS / 32);
			const int r = c % BN, col = (c / BN) * 32 + lane;
			x[u] = 0.0f;
			if (c < cells && r < nvalid && col < DV)
				x[u] = fa_cuda_load<DT>(src, base + (int64_t)r * stride_s + col);
		}
#pragma unroll
		for (int u = 0; u < FS_BATCH; u++) {
			const int c = c0 + u * (FS_THREADS / 32);
			if (c < cells)
				dst[(c % BN) * DVMAX + (c / BN) * 32 + lane] = x[u];
		}
	}
}

/* The staging functions for a runtime (block-uniform) dtype. */
template <int ROWS>
__device__ __forceinline__ void fs_stage_t_any(float *dst, int stride, const void *src, int dtype,
					       int64_t base, int64_t stride_s, int nvalid, int D,
					       int d8)
{
	if (dtype == FA_DTYPE_FP32)
		fs_stage_t<ROWS, FA_DTYPE_FP32>(dst, stride, src, base, stride_s, nvalid, D, d8);
	else if (dtype == FA_DTYPE_FP16)
		fs_stage_t<ROWS, FA_DTYPE_FP16>(dst, stride, src, base, stride_s, nvalid, D, d8);
	else
		fs_stage_t<ROWS, FA_DTYPE_BF16>(dst, stride, src, base, stride_s, nvalid, D, d8);
}

template <int BN, int DVMAX>
__device__ __forceinline__ void fs_stage_v_any(float *dst, const void *src, int dtype,
					       int64_t base, int64_t stride_s, int nvalid, int DV,
					       int dv32)
{
	if (dtype == FA_DTYPE_FP32)
		fs_stage_v<BN, DVMAX, FA_DTYPE_FP32>(dst, src, base, stride_s, nvalid, DV, dv32);
	else if (dtype == FA_DTYPE_FP16)
		fs_stage_v<BN, DVMAX, FA_DTYPE_FP16>(dst, src, base, stride_s, nvalid, DV, dv32);
	else
		fs_stage_v<BN, DVMAX, FA_DTYPE_BF16>(dst, src, base, stride_s, nvalid, DV, dv32);
}

/* acc += P V for the first NGA column groups (the rest are padding when
 * head_dim_v is below the bucket's size). P^T is sP[key][row], V is
 * sV[key][col]. */
/* RM consecutive floats of shared memory (RM / 4 float4 loads) into v. */
template <int RM> __device__ __forceinline__ void fs_load_rows(const float *src, float (&v)[RM])
{
#pragma unroll
	for (int q = 0; q < RM / 4; q++) {
		const float4 t = *reinterpret_cast<const float4 *>(src + 4 * q);
		v[4 * q] = t.x;
		v[4 * q + 1] = t.y;
		v[4 * q + 2] = t.z;
		v[4 * q + 3] = t.w;
	}
}

template <int NGA, int NG, int BN, int DVMAX, int RM, int PSTRIDE>
__device__ __forceinline__ void fs_pv(const float *sP, const float *sV, int ty, int tx,
				      float (&acc)[RM][NG][2])
{
#pragma unroll 2
	for (int j = 0; j < BN; j++) {
		float pv[RM];
		fs_load_rows<RM>(sP + j * PSTRIDE + ty * RM, pv);
#pragma unroll
		for (int g = 0; g < NGA; g++) {
			const float2 vv =
				*reinterpret_cast<const float2 *>(sV + j * DVMAX + g * FS_VG + tx * 2);
#pragma unroll
			for (int r = 0; r < RM; r++) {
				acc[r][g][0] += pv[r] * vv.x;
				acc[r][g][1] += pv[r] * vv.y;
			}
		}
	}
}

/* fs_pv<nga> for a runtime nga in 1..N (block-uniform). */
template <int N, int NG, int BN, int DVMAX, int RM, int PSTRIDE>
__device__ __forceinline__ void fs_pv_dispatch(int nga, const float *sP, const float *sV, int ty,
					       int tx, float (&acc)[RM][NG][2])
{
	if (nga >= N)
		fs_pv<N, NG, BN, DVMAX, RM, PSTRIDE>(sP, sV, ty, tx, acc);
	else if constexpr (N > 1)
		fs_pv_dispatch<N - 1, NG, BN, DVMAX, RM, PSTRIDE>(nga, sP, sV, ty, tx, acc);
}

template <int DMAX, int DVMAX>
__global__ void __launch_bounds__(FS_THREADS)
	fs_kernel(const struct fa_problem p, const void *__restrict__ q, const void *__restrict__ k,
		  const void *__restrict__ v, void *__restrict__ o, const int32_t *cu_q,
		  const int32_t *cu_k, const int32_t *prefix_lens, float scale_log2,
		  float *__restrict__ lse)
{
	typedef fs_cfg<DMAX, DVMAX> C;
	constexpr int BM = C::BM, BN = C::BN, RM = C::RM, CN = C::CN, NG = C::NG;
	extern __shared__ float4 fs_smem[];
	float *sQ = reinterpret_cast<float *>(fs_smem);  /* [DMAX][BM]: Q^T */
	float *sKV = sQ + C::Q_FLOATS;  /* [DMAX][KSTRIDE]: K^T, then [BN][DVMAX]: V */
	float *sP = sKV + C::KV_FLOATS; /* [BN][PSTRIDE]: P^T */

	const int tid = threadIdx.x, tx = tid % FS_TX, ty = tid / FS_TX;
	const int b = blockIdx.z, h = blockIdx.y;
	/* the last query tiles see the most keys under causal masks: start them first */
	const int i0 = (int)(gridDim.x - 1 - blockIdx.x) * BM;
	const int32_t lq = fa_seq_q_len(&p, cu_q, b), lk = fa_seq_kv_len(&p, cu_k, b);
	if (i0 >= lq)
		return; /* the whole block: this sequence is shorter than the longest */
	const int hk = h / (p.heads / p.kv_heads);
	const int D = p.head_dim, DV = p.head_dim_v;
	const int d8 = (D + 7) & ~7, dv32 = (DV + 31) & ~31;
	const int nrows = fs_min(BM, lq - i0);
	int32_t prefix = 0;
	if (p.mask == FA_MASK_PREFIX_LM)
		prefix = fs_max(0, fs_min(fa_seq_prefix(&p, prefix_lens, b), lk));

	/* Keys any row of the tile may attend: ranges move right with the row,
	 * so [lo(first row), hi(last row)), plus the prefix for prefix_lm (whose
	 * lo is 0). A key tile needs no per-element mask when it lies inside
	 * every row's range: at or after lo(last row) and up to hi(first row). */
	int32_t lo_first, hi_first, lo_last, hi_last;
	fa_mask_range(p.mask, i0, lq, lk, p.window, &lo_first, &hi_first);
	fa_mask_range(p.mask, i0 + nrows - 1, lq, lk, p.window, &lo_last, &hi_last);
	const int32_t kv_begin = lo_first;
	const int32_t kv_end = fs_max(hi_last, prefix);
	const int32_t full_hi = fs_max(hi_first, prefix);

	fs_stage_t_any<BM>(sQ, BM, q, p.dtype, fa_q_offset(&p, cu_q, b, i0, h), p.q_stride_s,
			      nrows, D, d8);

	float m[RM], l[RM], acc[RM][NG][2];
#pragma unroll
	for (int r = 0; r < RM; r++) {
		m[r] = -INFINITY;
		l[r] = 0.0f; /* this thread's share of the row sum; reduced at the end */
#pragma unroll
		for (int g = 0; g < NG; g++)
			acc[r][g][0] = acc[r][g][1] = 0.0f;
	}

	for (int32_t j0 = kv_begin; j0 < kv_end; j0 += BN) {
		const int kvalid = fs_min(BN, lk - j0);
		const bool full = j0 >= lo_last && j0 + BN <= full_hi;

		__syncthreads(); /* the previous tile's P V is done with sKV and sP */
		fs_stage_t_any<BN>(sKV, C::KSTRIDE, k, p.dtype, fa_k_offset(&p, cu_k, b, j0, hk),
				   p.k_stride_s, kvalid, D, d8);
		__syncthreads(); /* K^T (and, the first time, Q^T) staged */

		float s[RM][CN];
#pragma unroll
		for (int r = 0; r < RM; r++)
#pragma unroll
			for (int c = 0; c < CN; c++)
				s[r][c] = 0.0f;
		/* dims [D, d8) are zero in both tiles */
		for (int kb = 0; kb < d8; kb += 8) {
#pragma unroll
			for (int kk = 0; kk < 8; kk++) {
				float qv[RM];
				fs_load_rows<RM>(sQ + (kb + kk) * BM + ty * RM, qv);
				const float *kp = sKV + (kb + kk) * C::KSTRIDE + tx * CN;
				float kv[CN];
				if constexpr (CN == 4) {
					const float4 t = *reinterpret_cast<const float4 *>(kp);
					kv[0] = t.x;
					kv[1] = t.y;
					kv[2] = t.z;
					kv[3] = t.w;
				} else if constexpr (CN == 2) {
					const float2 t = *reinterpret_cast<const float2 *>(kp);
					kv[0] = t.x;
					kv[1] = t.y;
				} else {
					kv[0] = *kp;
				}
#pragma unroll
				for (int r = 0; r < RM; r++)
#pragma unroll
					for (int c = 0; c < CN; c++)
						s[r][c] += qv[r] * kv[c];
			}
		}

		/* to log2 units; masked and missing keys (and padding rows) to -inf */
#pragma unroll
		for (int r = 0; r < RM; r++) {
			const int32_t i = i0 + ty * RM + r;
#pragma unroll
			for (int c = 0; c < CN; c++) {
				const int32_t j = j0 + tx * CN + c;
				float x = s[r][c] * scale_log2;
				if (!full && (i >= lq || j >= lk ||
					      !fa_mask_allows(p.mask, i, j, lq, lk, prefix, p.window)))
					x = -INFINITY;
				s[r][c] = x;
			}
		}

		/* online softmax: new running max, rescale, P = exp2(s - max) */
#pragma unroll
		for (int r = 0; r < RM; r++) {
			float mx = s[r][0];
#pragma unroll
			for (int c = 1; c < CN; c++)
				mx = fmaxf(mx, s[r][c]);
			mx = fs_max16(mx);
			const float mnew = fmaxf(m[r], mx);
			float alpha = 1.0f, sum = 0.0f;
			if (mnew == -INFINITY) {
				/* nothing allowed yet in this row: keep everything at 0,
				 * and never compute exp2(-inf - -inf) */
#pragma unroll
				for (int c = 0; c < CN; c++)
					s[r][c] = 0.0f;
			} else {
				alpha = exp2f(m[r] - mnew); /* 0 when m was -inf */
#pragma unroll
				for (int c = 0; c < CN; c++) {
					s[r][c] = exp2f(s[r][c] - mnew); /* 0 for -inf */
					sum += s[r][c];
				}
			}
			m[r] = mnew;
			l[r] = l[r] * alpha + sum;
#pragma unroll
			for (int g = 0; g < NG; g++) {
				acc[r][g][0] *= alpha;
				acc[r][g][1] *= alpha;
			}
		}
		/* P^T: sP[key][row], this thread's keys x its RM rows */
#pragma unroll
		for (int c = 0; c < CN; c++) {
			float *pp = sP + (tx * CN + c) * C::PSTRIDE + ty * RM;
#pragma unroll
			for (int q4 = 0; q4 < RM / 4; q4++)
				*reinterpret_cast<float4 *>(pp + 4 * q4) =
					make_float4(s[4 * q4][c], s[4 * q4 + 1][c], s[4 * q4 + 2][c],
						    s[4 * q4 + 3][c]);
		}

		__syncthreads(); /* every thread is done reading K^T */
		fs_stage_v_any<BN, DVMAX>(sKV, v, p.dtype, fa_v_offset(&p, cu_k, b, j0, hk),
					  p.v_stride_s, kvalid, DV, dv32);
		__syncthreads(); /* V and P^T staged */

		/* the output groups that hold real columns, as a compile-time count */
		fs_pv_dispatch<NG, NG, BN, DVMAX, RM, C::PSTRIDE>(dv32 / FS_VG, sP, sKV, ty, tx, acc);
	}

	/* O = acc / l; a row that attended no key has l == 0 and writes zeros.
	 * The LSE, when asked, in natural-log units of scale * q.k: m is the
	 * row's max in log2 units, so lse = (m + log2 l) ln 2; +inf for a row
	 * with no key (the backward's exp(s - lse) is then 0). */
#pragma unroll
	for (int r = 0; r < RM; r++) {
		const float lt = fs_sum16(l[r]);
		const int32_t i = i0 + ty * RM + r;
		if (i >= lq)
			continue;
		if (lse && tx == 0)
			lse[(fa_seq_q_start(&p, cu_q, b) + i) * p.heads + h] =
				lt > 0.0f ? (m[r] + log2f(lt)) * 0.69314718055994531f : INFINITY;
		const int64_t ob = fa_o_offset(&p, cu_q, b, i, h);
#pragma unroll
		for (int g = 0; g < NG; g++)
#pragma unroll
			for (int e = 0; e < 2; e++) {
				const int col = g * FS_VG + tx * 2 + e;
				if (col < DV)
					fa_store_f32(o, p.dtype, ob + col, lt > 0.0f ? acc[r][g][e] / lt : 0.0f);
			}
	}
}

/* The instances, cheapest first: (head_dim bucket, head_dim_v bucket). A
 * problem runs on the first one that holds both of its head sizes. */
#define FS_INSTANCES(X) X(64, 64) X(128, 64) X(128, 128) X(256, 128) X(256, 256)

/* The instance for head sizes (d, dv) into *dq, *dv_; 0 when none. */
int fs_pick(int d, int dv, int *dq, int *dvq)
{
	*dq = *dvq = 0;
	if (d < 1 || dv < 1)
		return 0;
#define FS_PICK(DQ, DV_) \
	if (d <= DQ && dv <= DV_) { \
		*dq = DQ; \
		*dvq = DV_; \
		return 1; \
	}
	FS_INSTANCES(FS_PICK)
#undef FS_PICK
	return 0;
}

/* Shared memory of the instance (DQ, DV_). */
int fs_smem_bytes(int dq, int dv)
{
#define FS_SMEM(DQ, DV_) \
	if (dq == DQ && dv == DV_) \
		return fs_cfg<DQ, DV_>::SMEM_BYTES;
	FS_INSTANCES(FS_SMEM)
#undef FS_SMEM
	return 0;
}

int fs_smem_optin; /* set by setup: the device's opt-in limit */

template <int DQ, int DV_> cudaError_t fs_setup_one(void)
{
	typedef fs_cfg<DQ, DV_> C;
	cudaError_t e;
	if (C::SMEM_BYTES > fs_smem_optin)
		return cudaSuccess; /* supports() refuses it */
	e = cudaFuncSetAttribute(fs_kernel<DQ, DV_>, cudaFuncAttributeMaxDynamicSharedMemorySize,
				 C::SMEM_BYTES);
#ifdef FA_GPU_CUDA
	/* all of the unified L1 as shared memory, so two blocks fit per SM
	 * (the default carveout may pick the smallest one that holds one) */
	if (e == cudaSuccess)
		e = cudaFuncSetAttribute(fs_kernel<DQ, DV_>,
					 cudaFuncAttributePreferredSharedMemoryCarveout,
					 (int)cudaSharedmemCarveoutMaxShared);
#endif
	return e;
}

template <int DQ, int DV_> cudaError_t fs_launch_one(const struct fa_launch_args *a, float scale_log2)
{
	typedef fs_cfg<DQ, DV_> C;
	const struct fa_problem *p = a->p;
	dim3 grid((unsigned)((p->q_len + C::BM - 1) / C::BM), (unsigned)p->heads, (unsigned)p->batch);
	fs_kernel<DQ, DV_><<<grid, FS_THREADS, C::SMEM_BYTES, fa_cuda_stream_of(a)>>>(
		*a->p, a->q, a->k, a->v, a->o, a->cu_seqlens_q, a->cu_seqlens_k, a->prefix_lens,
		scale_log2, FA_RECORD_HAS(struct fa_launch_args, a, lse) ? a->lse : NULL);
	return cudaGetLastError();
}

} /* namespace */

extern "C" int fa_cuda_flash_simt_setup(int smem_optin_bytes)
{
	cudaError_t e = cudaSuccess;
	fs_smem_optin = smem_optin_bytes;
#define FS_SETUP(DQ, DV_) \
	if (e == cudaSuccess) \
		e = fs_setup_one<DQ, DV_>();
	FS_INSTANCES(FS_SETUP)
#undef FS_SETUP
	return (int)e;
}

extern "C" int fa_cuda_flash_simt_supports(const struct fa_problem *p, char *why, size_t why_size)
{
	int dq, dv;
	struct fa_cuda_limits lim = {};
	/* 256: the largest bucket. 576/512 (MLA decode) would need a 64-row
	 * block's fp32 Q tile (147 KB) plus a K tile in shared memory, past an
	 * H100's 227 KB, and 256 fp32 accumulators per thread. */
	lim.head_dim_max = 256;
	lim.grid_yz = 1; /* heads and sequences are grid dimensions y and z */
	if (!fa_cuda_check_problem(p, &lim, why, why_size))
		return 0;
	if (!fs_pick(p->head_dim, p->head_dim_v, &dq, &dv)) /* every size in 1..256 has one */
		return 0;
	lim.smem_bytes = fs_smem_bytes(dq, dv);
	lim.smem_optin = fs_smem_optin;
	return fa_cuda_check_problem(p, &lim, why, why_size);
}

extern "C" int fa_cuda_flash_simt_launch(const struct fa_launch_args *a)
{
	const struct fa_problem *p = a->p;
	char why[160];
	int dq, dv;
	if (!fa_cuda_flash_simt_supports(p, why, sizeof why) ||
	    !fs_pick(p->head_dim, p->head_dim_v, &dq, &dv))
		return (int)cudaErrorInvalidValue;
	if (p->batch <= 0 || p->heads <= 0 || p->q_len <= 0)
		return 0; /* no output rows */
	/* scores in log2 units: exp2(s * scale * log2(e) - max) == exp(s * scale - max') */
	const float scale_log2 = (float)((double)p->scale * 1.4426950408889634);
	(void)cudaGetLastError(); /* report this launch's error, not an older one */
#define FS_LAUNCH(DQ, DV_) \
	if (dq == DQ && dv == DV_) \
		return (int)fs_launch_one<DQ, DV_>(a, scale_log2);
	FS_INSTANCES(FS_LAUNCH)
#undef FS_LAUNCH
	return (int)cudaErrorInvalidValue;
}
