/* flash_bwd_wgmma.cu - cuda_flash_bwd_wgmma: a Hopper (sm_90a) flash-attention
 * backward with warpgroup matrix products (wgmma), after FlashAttention-3's
 * design: the key block stays in shared memory, the query blocks stream
 * past it, and the products that FlashAttention-2 (cuda_flash_bwd_mma)
 * serialises in mma.sync warps run as asynchronous warpgroup products.
 *
 * Three kernels on the backend's stream, the first and last shared with
 * cuda_flash_bwd_mma (flash_bwd_common.cuh):
 *   1. delta: D_i = rowsum(dO_i * O_i) (the dQ accumulator is cleared);
 *   2. the main kernel: one CTA of 256 threads (two warpgroups, 64 keys
 *      each) per (block of 128 keys, KV head, sequence), started in
 *      key-block-major order. K and V of the block are loaded once; the
 *      CTA walks every query head of the GQA group (or, under tunable
 *      `split`, one query head: a CTA per query head, dK and dV fp32
 *      partials summed in head order by a last kernel, the kv_sum pass
 *      shared with cuda_flash_bwd_mma) and, for each, the query blocks of
 *      64 rows that may see a key of the block (fa_cta_rows_for_keys), Q,
 *      dO, lse and D in three stages with cp.async into 128-byte-swizzled
 *      slabs (the layout wgmma's
 *      descriptors read, as the TMA boxes of cuda_flash_wgmma). Per query
 *      block, warpgroup cw (keys 64 cw ..):
 *        S^T = K Q^T and dP^T = V dO^T: m64n64k16, A (K, V) and B (Q, dO)
 *          both K-major from shared memory, in flight together;
 *        P^T = exp2(S^T scale log2e - lse log2e) (lse per column), 0 where
 *          the mask hides the pair; dS^T = P^T (dP^T - D);
 *        dV += P^T dO and dK += dS^T Q: m64nDk16 with A from registers (the
 *          accumulator repacked to 16-bit pairs, as the forward's P V) and
 *          B (dO, Q) MN-major, transposed by the instruction;
 *        dS^T to shared memory ([128 keys][64 queries], one swizzled slab);
 *          after a barrier, dQ (64 x D) = dS K: A (dS) and B (K) both
 *          MN-major from shared memory, warpgroup cw the columns 64 cw ..,
 *          added into the fp32 accumulator with vector atomics.
 *      Without split the group's heads are summed in the CTA, so dK
 *      (scaled) and dV are written once, by one CTA: no atomics for them.
 *   3. dQ: scale times the accumulator, converted to the input type.
 * The dQ sum order varies from run to run (atomics); there is no
 * deterministic variant (cuda_flash_bwd_mma dq=1 has one).
 *
 * Head sizes 128 and, as one instance of D = 80, 72 and 80 (ViT): 80's
 * products stop at column 80 of two slabs (S^T and dP^T 5 k-steps, dV and
 * dK m64n80k16, dQ 64 columns a warpgroup, warpgroup 1 storing 16); 72
 * reads zeros into columns 72-79 and stores none of them. Every mask and
 * varlen; not done yet: other head sizes (supports() refuses them), a
 * producer warp with TMA loads and a TMA
 * reduction of dQ (FlashAttention-3's).
 *
 * The kernel body exists only in the sm_90a compilation (FA_WGMMA_DEVICE);
 * the Makefile compiles this file for sm_90a only, and supports() refuses
 * every other device.
 */
#include <math.h>
#include <stdio.h>

#include "flash_bwd_common.cuh"
#include "flash_mma.cuh"
#include "flash_wgmma.h"
#include "problem_check.h"
#include "wgmma_common.cuh"

namespace {

constexpr int BW_THREADS = 2 * WG_THREADS; /* two consumer warpgroups, no producer */
constexpr int BW_BN = 128;                  /* keys per CTA: 64 per warpgroup (wgmma M) */
constexpr int BW_BM = 64;                   /* query rows per step: wgmma N of S^T */
constexpr float BW_LOG2E = 1.4426950408889634f;
/* Stages of Q, dO, lse and D: 3 (and 2 buffers of dS^T), so that a step
 * ends without a barrier: step s + 2's copies, issued at the start of step
 * s, overwrite step s - 1's stage, which every thread finished reading
 * before the dS^T barrier of step s - 1 (194.5 KiB at head size 128). */
constexpr int BW_STAGES = 3;

/* Shared memory of head size D (128, or 80 for head sizes 72 and 80): K
 * and V of the block, BW_STAGES stages of Q and dO, 2 buffers of dS^T,
 * BW_STAGES stages of lse and D. Every tile is 64-column slabs of [rows][64]
 * 16-bit elements with the 128-byte swizzle (16-byte chunk c of row r at
 * chunk c ^ (r % 8)), each slab on 1024 bytes; at 80 the second slab holds
 * columns 64-79 only (its chunks 2-7 are never written: the products stop
 * at column 80, as cuda_flash_wgmma's P V of 80 columns, except dQ's, whose
 * columns past 80 are dropped). */
template <int D> struct bw_layout {
	static_assert(D == 80 || D == 128, "instances: 80 (72 and 80) and 128");
	static constexpr int SLABS = (D + SLAB_COLS - 1) / SLAB_COLS;
	static constexpr int KV_SLAB = BW_BN * ROW_BYTES; /* 16 KiB */
	static constexpr int QO_SLAB = BW_BM * ROW_BYTES; /* 8 KiB */
	static constexpr int QO_TILE = SLABS * QO_SLAB;
	static constexpr int K = 0;
	static constexpr int V = K + SLABS * KV_SLAB;
	static constexpr int Q = V + SLABS * KV_SLAB;      /* BW_STAGES stages */
	static constexpr int DO = Q + BW_STAGES * QO_TILE; /* BW_STAGES stages */
	static constexpr int DS_BYTES = BW_BN * ROW_BYTES; /* [BN keys][BM queries]: one slab */
	static constexpr int DS = DO + BW_STAGES * QO_TILE; /* 2 buffers */
	static constexpr int LSE = DS + 2 * DS_BYTES;       /* BW_STAGES x BM floats */
	static constexpr int DELTA = LSE + BW_STAGES * BW_BM * 4; /* BW_STAGES x BM floats */
	/* + 1024 to align the base (the swizzle comes from address bits 7-9) */
	static constexpr int BYTES = DELTA + BW_STAGES * BW_BM * 4 + 1024;
	static_assert(BW_BM == SLAB_COLS, "dS^T: 64 queries, one slab wide");
};

/* What the main kernel needs besides the problem. */
struct bw_args {
	struct fa_problem p;
	const uint16_t *q, *k, *v, *d_o;
	const float *lse, *delta;
	uint16_t *dk, *dv;
	float *dq_acc; /* [total_q][heads][head_dim], fp32 */
	float *dk_part, *dv_part; /* split with a group: [group][total_k][kv_heads][head_dim], fp32 */
	int split;     /* 1: a CTA per query head (grid.y heads), else per kv head */
	const int32_t *cu_q, *cu_k, *prefix_lens;
	float scale_log2;
};

#if FA_WGMMA_DEVICE

/* dQ (64 x 64, fp32) += A (64 x 16) * B (16 x 64), both from shared memory
 * MN-major (imm-trans-a 1, imm-trans-b 1); scale_d 0 overwrites d. */
#define FA_BW_SS_TT_N64(TY)                                                                    \
	asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %34, 0;\n\t"                          \
		     "wgmma.mma_async.sync.aligned.m64n64k16.f32." TY "." TY " {" FA_WG_R32 "},"    \
		     " %32, %33, p, 1, 1, 1, 1;\n\t}"                                             \
		     : FA_WG_ACC32(d, 0)                                                          \
		     : "l"(da), "l"(db), "r"(scale_d))
template <bool BF16>
__device__ __forceinline__ void wgmma_ss_tt64(float (&d)[32], uint64_t da, uint64_t db, int scale_d)
{
	if constexpr (BF16)
		FA_BW_SS_TT_N64("bf16");
	else
		FA_BW_SS_TT_N64("f16");
}

/* cp.async of `rows` rows of a ROWS x DC-chunk tile into its swizzled slabs
 * at base: row r from src + off0 + r * stride (elements), its first `width`
 * columns; other chunks (up to DC) and rows zero-filled (no global read). A
 * thread copies the same chunk of every RPI-th row: one address computed,
 * then constant steps (RPI a multiple of 8: the same swizzle phase). DC 10
 * (80 columns) takes the threads of 16 chunks, those of chunks 10-15 idle. */
template <int ROWS, int DC>
__device__ __forceinline__ void load_swz(uint32_t base, int tid, const uint16_t *src, int64_t off0,
					 int64_t stride, int rows, int width)
{
	constexpr int DCP = DC <= 8 ? 8 : 16; /* chunks a pass spans */
	constexpr int RPI = BW_THREADS / DCP;
	static_assert(DC <= DCP && RPI % 8 == 0 && ROWS % RPI == 0, "whole passes");
	const int c = tid % DCP, r0 = tid / DCP;
	if (DC < DCP && c >= DC)
		return;
	const bool cok = c * 8 < width;
	const uint16_t *g0 = src + off0 + (int64_t)r0 * stride + c * 8;
	const uint32_t dst = base + (uint32_t)((c / 8) * ROWS * ROW_BYTES + r0 * ROW_BYTES +
					       (((c % 8) ^ (r0 % 8)) * 16));
#pragma unroll
	for (int k = 0; k < ROWS / RPI; k++) {
		const bool ok = cok && r0 + k * RPI < rows;
		fa_mma::fa_mma_cp_async_16<0>(dst + (uint32_t)(k * RPI * ROW_BYTES),
					      ok ? g0 + (int64_t)k * RPI * stride : src, ok ? 16u : 0u);
	}
}

/* cp.async of one 4-byte word (n 0: zero-filled). */
__device__ __forceinline__ void cp_async_4(uint32_t dst, const void *src, uint32_t n)
{
	asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(src), "r"(n)
		     : "memory");
}

/* This thread's generic-proxy writes to shared memory (st.shared, cp.async
 * once waited for) made visible to wgmma's reads (the async proxy). */
__device__ __forceinline__ void fence_async_smem(void)
{
	asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

/* 1 when every (query, key) pair of rows [i0, i0 + bm) and keys [j0, j0 +
 * bn) is real and allowed: no per-element mask. */
__device__ __forceinline__ bool bw_block_full(const struct fa_problem &p, int lq, int lk, int pfx,
					      int i0, int bm, int j0, int bn)
{
	if (i0 + bm > lq || j0 + bn > lk)
		return false;
	if (p.mask == FA_MASK_NONE || j0 + bn <= pfx)
		return true;
	int lo0, hi0, lo1, hi1;
	fa_mask_range(p.mask, i0, lq, lk, p.window, &lo0, &hi0);
	fa_mask_range(p.mask, i0 + bm - 1, lq, lk, p.window, &lo1, &hi1);
	return j0 >= lo1 && j0 + bn <= hi0;
}

#endif /* FA_WGMMA_DEVICE */

/* acc (64 x 64, fp32) = A B^T over D columns, A and B 64 rows each, K-major
 * from shared memory in 64-column slabs A_SLAB and B_SLAB bytes apart;
 * overwritten by the first k-step (S^T = K Q^T, dP^T = V dO^T). */
#if FA_WGMMA_DEVICE
template <int D, int A_SLAB, int B_SLAB, bool BF16>
__device__ __forceinline__ void issue_kmajor64(float (&acc)[32], uint64_t da, uint64_t db)
{
#pragma unroll
	for (int kk = 0; kk < D / 16; kk++) {
		/* 16 columns: +32 bytes in the swizzled row, a slab per 4 */
		const uint64_t oa = (uint64_t)((kk / 4) * A_SLAB + (kk % 4) * 32) >> 4;
		const uint64_t ob = (uint64_t)((kk / 4) * B_SLAB + (kk % 4) * 32) >> 4;
		wgmma_ss<64, BF16>(acc, da + oa, db + ob, kk > 0);
	}
}
#endif

template <int D, bool BF16, bool OV>
__global__ void __launch_bounds__(BW_THREADS, 1) bwd_wgmma_kernel(const bw_args a)
{
#if FA_WGMMA_DEVICE
	using L = bw_layout<D>;
	constexpr int BM = BW_BM, BN = BW_BN;
	extern __shared__ unsigned char smem_raw[];
	unsigned char *smem =
		smem_raw + ((1024 - (smem_u32(smem_raw) & 1023)) & 1023); /* 1024-byte aligned */
	const uint32_t s0 = smem_u32(smem);
	const float *slse = (const float *)(smem + L::LSE), *sdel = (const float *)(smem + L::DELTA);
	const struct fa_problem &p = a.p;
	const int tid = threadIdx.x, cw = tid / WG_THREADS;
	const int warp = (tid % WG_THREADS) / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
	/* key-block-major order (as cuda_flash_bwd_mma): every head's first
	 * key blocks (causal: the ones that see the most query rows) first */
	const int lin = (int)(blockIdx.x + gridDim.x * blockIdx.y);
	const int b = blockIdx.z, kb = lin / (int)gridDim.y, hy = lin - kb * (int)gridDim.y;
	/* split: this CTA's query head alone (hy), its dK and dV an fp32
	 * partial of the group's sum; else the kv head hy's whole group */
	const int group = p.heads / p.kv_heads, hpc = a.split ? 1 : group;
	const int hq0 = hy * hpc, hk = hq0 / group;
	fa_bwd::key_block kbk;
	if (!fa_bwd::key_block_of<BN, BM>(p, a.cu_q, a.cu_k, a.prefix_lens, b, kb, &kbk))
		return; /* the whole CTA: this sequence has fewer keys */
	const int lq = kbk.lq, lk = kbk.lk, j0 = kbk.j0, nk = kbk.nk, pfx = kbk.pfx;
	const int mb = kbk.mb, nmb = kbk.nmb, steps = hpc * nmb;
	const int t0 = (int)fa_seq_q_start(&p, a.cu_q, b); /* row_index_32 */

	/* K and V of the block (with the first step's group) */
	load_swz<BN, D / 8>(s0 + L::K, tid, a.k, fa_k_offset(&p, a.cu_k, b, j0, hk), p.k_stride_s,
			    nk, p.head_dim);
	load_swz<BN, D / 8>(s0 + L::V, tid, a.v, fa_v_offset(&p, a.cu_k, b, j0, hk), p.v_stride_s,
			    nk, p.head_dim_v);
	/* step s: Q, dO, lse, D of (head, query block) into stage s % BW_STAGES */
	auto issue = [&](int s) {
		const int h = hq0 + s / nmb, i0 = (mb + s % nmb) * BM, st = s % BW_STAGES;
		const int rows = lq - i0 < BM ? lq - i0 : BM;
		load_swz<BM, D / 8>(s0 + L::Q + st * L::QO_TILE, tid, a.q,
				    fa_q_offset(&p, a.cu_q, b, i0, h), p.q_stride_s, rows, p.head_dim);
		load_swz<BM, D / 8>(s0 + L::DO + st * L::QO_TILE, tid, a.d_o,
				    fa_o_offset(&p, a.cu_q, b, i0, h), p.o_stride_s, rows,
				    p.head_dim_v);
		/* lse (+inf for a row that attends no key) and D; padding rows
		 * read 0 (their P is masked: a block with them is never full) */
		for (int r = tid; r < BM; r += BW_THREADS) {
			const bool ok = r < rows;
			const int64_t row = ok ? (int64_t)(t0 + i0 + r) * p.heads + h : 0;
			const uint32_t o = (uint32_t)(st * BM + r) * 4u;
			cp_async_4(s0 + L::LSE + o, a.lse + row, ok ? 4u : 0u);
			cp_async_4(s0 + L::DELTA + o, a.delta + row, ok ? 4u : 0u);
		}
	};
	if (steps > 0)
		issue(0);
	fa_mma::fa_mma_cp_async_commit();
	if (steps > 1)
		issue(1);
	fa_mma::fa_mma_cp_async_commit();

	/* descriptors (128-byte swizzle; K-major: SBO one core group of 8
	 * rows; MN-major: LBO the next 64 columns, SBO the next 8 rows) */
	const uint64_t dk_a = wg_desc(s0 + L::K + cw * 64 * ROW_BYTES, 16, CORE_BYTES);
	const uint64_t dv_a = wg_desc(s0 + L::V + cw * 64 * ROW_BYTES, 16, CORE_BYTES);
	const uint64_t dds_a = wg_desc(s0 + L::DS, L::KV_SLAB, CORE_BYTES); /* dS^T as dS, MN-major */
	constexpr uint64_t DS_STEP = (uint64_t)L::DS_BYTES >> 4; /* the second buffer */
	/* K as dQ's B: columns 64 cw .. 64 cw + 63 (at 80, 80-127 unwritten) */
	const uint64_t dk_b = wg_desc(s0 + L::K + cw * L::KV_SLAB, L::KV_SLAB, CORE_BYTES);
	constexpr int DQ1 = D - SLAB_COLS; /* warpgroup 1's dQ columns stored: 64 or 16 */
	static_assert(DQ1 == 64 || DQ1 == 16, "dQ: 64 columns, then 64 or 16");

	float dk[D / 2], dv[D / 2];
#pragma unroll
	for (int i = 0; i < D / 2; i++)
		dk[i] = dv[i] = 0.f;
	const int kr = cw * 64 + warp * 16 + g; /* this thread's keys kr, kr + 8 (of the block) */

	for (int s = 0; s < steps; s++) {
		/* one commit group a step (empty past the end): group s done when
		 * at most two are pending. Step s + 2 overwrites step s - 1's
		 * stage, which every product of every thread had finished reading
		 * before the dS^T barrier of step s - 1. */
		const int st = s % BW_STAGES;
		if (s + 2 < steps)
			issue(s + 2);
		fa_mma::fa_mma_cp_async_commit();
		fa_mma::fa_mma_cp_async_wait<2>();
		fence_async_smem();
		__syncthreads(); /* step s's tiles (and K, V) are in */
		const int h = hq0 + s / nmb, i0 = (mb + s % nmb) * BM;
		const uint32_t sq = s0 + L::Q + st * L::QO_TILE, so = s0 + L::DO + st * L::QO_TILE;
		const float *lse_s = slse + st * BM, *del_s = sdel + st * BM;

		/* ---- S^T = K Q^T, dP^T = V dO^T (64 keys x 64 queries) ---- */
		/* S^T, dP^T and dQ are overwritten by their first k-step (scale_d
		 * 0): left undefined, not live from one step to the next */
		float sc[32], dp[32], dq[32];
		const uint64_t dq_b = wg_desc(sq, 16, CORE_BYTES), do_b = wg_desc(so, 16, CORE_BYTES);
		fence_regs(sc);
		fence_regs(dp);
		wg_fence();
		issue_kmajor64<D, L::KV_SLAB, L::QO_SLAB, BF16>(sc, dk_a, dq_b);
		wg_commit();
		if constexpr (OV) { /* dP^T runs under P^T's exponentials */
			issue_kmajor64<D, L::KV_SLAB, L::QO_SLAB, BF16>(dp, dv_a, do_b);
			wg_commit();
			wg_wait1(); /* S^T done */
		} else {
			wg_wait0(); /* S^T done */
		}
		fence_regs(sc);

		/* ---- P^T (in sc): element (key kr + 8 (e / 2), query 8 j + 2 t + e % 2) ---- */
		const bool full = bw_block_full(p, lq, lk, pfx, i0, BM, j0, BN);
		if (full) {
#pragma unroll
			for (int j = 0; j < 8; j++)
#pragma unroll
				for (int e = 0; e < 4; e++) {
					const int ql = 8 * j + 2 * t + (e & 1);
					sc[4 * j + e] = ex2(fmaf(sc[4 * j + e], a.scale_log2,
								 -lse_s[ql] * BW_LOG2E));
				}
		} else {
			/* the query rows [qlo, qhi) of the step (from i0) that may
			 * see each of the thread's keys: the mask seen from one key
			 * (rows past the sequence excluded; none for keys past it) */
			int qlo[2], qhi[2];
#pragma unroll
			for (int r = 0; r < 2; r++) {
				int x = 0, y = 0;
				if (j0 + kr + 8 * r < lk)
					fa_cta_rows_for_keys(p.mask, lq, lk, p.window, pfx,
							     j0 + kr + 8 * r, 1, &x, &y);
				qlo[r] = x - i0;
				qhi[r] = y - i0;
			}
#pragma unroll
			for (int j = 0; j < 8; j++)
#pragma unroll
				for (int e = 0; e < 4; e++) {
					const int ql = 8 * j + 2 * t + (e & 1), r = e >> 1;
					const float pr = ex2(fmaf(sc[4 * j + e], a.scale_log2,
								  -lse_s[ql] * BW_LOG2E));
					sc[4 * j + e] = ql >= qlo[r] && ql < qhi[r] ? pr : 0.f;
				}
		}
		if constexpr (!OV) {
			fence_regs(dp);
			wg_fence();
			issue_kmajor64<D, L::KV_SLAB, L::QO_SLAB, BF16>(dp, dv_a, do_b);
			wg_commit();
			wg_wait0(); /* dP^T done */
		}
		/* ---- P^T as A fragments; with OV, dV += P^T dO goes now and
		 * runs under dS^T's arithmetic and store ---- */
		const uint64_t do_t = wg_desc(so, L::QO_SLAB, CORE_BYTES), q_t = wg_desc(sq, L::QO_SLAB, CORE_BYTES);
		uint32_t pa[4][4], da[4][4];
#pragma unroll
		for (int kk = 0; kk < 4; kk++)
#pragma unroll
			for (int x = 0; x < 4; x++)
				pa[kk][x] = pack2<BF16>(sc[8 * kk + 2 * x], sc[8 * kk + 2 * x + 1]);
		if constexpr (OV) {
			fence_regs(dv);
			wg_fence();
#pragma unroll
			for (int kk = 0; kk < 4; kk++) /* 16 queries: 2 core groups further */
				wgmma_rs<D, BF16>(dv, pa[kk], do_t + ((uint64_t)(kk * 2 * CORE_BYTES) >> 4));
			wg_commit();
			wg_wait1(); /* dP^T done (dV may still run) */
		}
		fence_regs(dp);
		/* ---- dS^T = P^T (dP^T - D) as A fragments ---- */
#pragma unroll
		for (int kk = 0; kk < 4; kk++)
#pragma unroll
			for (int x = 0; x < 4; x++) {
				const int i = 8 * kk + 2 * x;            /* = 4 j + 2 r */
				const int ql = 16 * kk + 8 * (x / 2) + 2 * t; /* 8 j + 2 t */
				da[kk][x] = pack2<BF16>(sc[i] * (dp[i] - del_s[ql]),
							sc[i + 1] * (dp[i + 1] - del_s[ql + 1]));
			}
		/* dS^T into shared memory: row key, 16-byte chunk j of queries */
#pragma unroll
		for (int j = 0; j < 8; j++)
#pragma unroll
			for (int r = 0; r < 2; r++) {
				const int row = kr + 8 * r;
				const uint32_t addr = s0 + L::DS + (s & 1) * L::DS_BYTES + (uint32_t)(row * ROW_BYTES +
									  ((j ^ (row % 8)) * 16) + 4 * t);
				asm volatile("st.shared.u32 [%0], %1;" ::"r"(addr), "r"(da[j / 2][(j % 2) * 2 + r])
					     : "memory");
			}
		fence_async_smem();

		/* ---- dV += P^T dO (unless issued above), dK += dS^T Q (64 keys x D) ---- */
		if constexpr (!OV)
			fence_regs(dv);
		fence_regs(dk);
		wg_fence();
		if constexpr (!OV) {
#pragma unroll
			for (int kk = 0; kk < 4; kk++) /* 16 queries: 2 core groups further */
				wgmma_rs<D, BF16>(dv, pa[kk], do_t + ((uint64_t)(kk * 2 * CORE_BYTES) >> 4));
		}
#pragma unroll
		for (int kk = 0; kk < 4; kk++)
			wgmma_rs<D, BF16>(dk, da[kk], q_t + ((uint64_t)(kk * 2 * CORE_BYTES) >> 4));
		wg_commit();
		/* done before dQ starts: P^T and dS^T's registers free for dQ's
		 * (the tensor core runs one warpgroup's products in order anyway) */
		wg_wait0();
		fence_regs(dv);
		fence_regs(dk);
		__syncthreads(); /* both warpgroups' dS^T stored */

		/* ---- dQ (64 queries x 64 columns) = dS K over the 128 keys:
		 * warpgroup 0 columns 0-63, 1 columns 64-127. At 80 warpgroup 1
		 * adds only its first 16 (64-79); the other 48 are products of
		 * K's unwritten columns, not stored: a product of 16 columns in
		 * warpgroup 1 alone would be a branch around wgmma, and for one
		 * ptxas serialises every product of the kernel (C7520) ---- */
		fence_regs(dq);
		wg_fence();
		const uint64_t ds_d = dds_a + (s & 1) * DS_STEP;
#pragma unroll
		for (int kk = 0; kk < BN / 16; kk++) /* 16 keys: 2 core groups further */
			wgmma_ss_tt64<BF16>(dq, ds_d + ((uint64_t)(kk * 2 * CORE_BYTES) >> 4),
					    dk_b + ((uint64_t)(kk * 2 * CORE_BYTES) >> 4), kk > 0);
		wg_commit();
		wg_wait0(); /* dQ done */
		fence_regs(dq);
		const int dqn = cw == 0 ? 8 : DQ1 / 8; /* 8-column groups of this warpgroup */
#pragma unroll
		for (int r = 0; r < 2; r++) {
			const int i = i0 + warp * 16 + g + 8 * r;
			if (i >= lq)
				continue;
			float *row = a.dq_acc + ((int64_t)(t0 + i) * p.heads + h) * p.head_dim +
				     cw * SLAB_COLS;
#pragma unroll
			for (int j = 0; j < 8; j++)
				if (j < dqn && cw * SLAB_COLS + 8 * j < p.head_dim) /* 72: not 72-79 */
					atomicAdd((float2 *)(row + 8 * j + 2 * t),
						  make_float2(dq[4 * j + 2 * r], dq[4 * j + 2 * r + 1]));
		}
	}
	fa_mma::fa_mma_cp_async_wait<0>(); /* no copy in flight at exit */

	/* ---- dK (scaled), dV: each element written once, by this CTA; under
	 * split with a group, this head's unscaled fp32 partial instead ---- */
	if (a.split && group > 1) {
		const int64_t krow0 = fa_seq_kv_start(&p, a.cu_k, b) + j0;
		const int64_t part = (int64_t)(hq0 % group) * p.total_k;
#pragma unroll
		for (int r = 0; r < 2; r++) {
			const int kl = kr + 8 * r;
			if (kl >= nk)
				continue;
			const int64_t row = (part + krow0 + kl) * p.kv_heads + hk;
			float *kp = a.dk_part + row * p.head_dim, *vp = a.dv_part + row * p.head_dim_v;
#pragma unroll
			for (int j = 0; j < D / 8; j++) {
				const int c = 8 * j + 2 * t;
				if (c < p.head_dim)
					*(float2 *)(kp + c) = make_float2(dk[4 * j + 2 * r], dk[4 * j + 2 * r + 1]);
				if (c < p.head_dim_v)
					*(float2 *)(vp + c) = make_float2(dv[4 * j + 2 * r], dv[4 * j + 2 * r + 1]);
			}
		}
		return;
	}
#pragma unroll
	for (int r = 0; r < 2; r++) {
		const int kl = kr + 8 * r;
		if (kl >= nk)
			continue;
		uint16_t *krow = a.dk + fa_k_offset(&p, a.cu_k, b, j0 + kl, hk);
		uint16_t *vrow = a.dv + fa_v_offset(&p, a.cu_k, b, j0 + kl, hk);
#pragma unroll
		for (int j = 0; j < D / 8; j++) {
			const int c = 8 * j + 2 * t;
			if (c < p.head_dim)
				*(uint32_t *)(krow + c) = pack2<BF16>(p.scale * dk[4 * j + 2 * r],
								       p.scale * dk[4 * j + 2 * r + 1]);
			if (c < p.head_dim_v)
				*(uint32_t *)(vrow + c) = pack2<BF16>(dv[4 * j + 2 * r], dv[4 * j + 2 * r + 1]);
		}
	}
#else
	(void)a;
#endif
}

/* ---- host side ---- */

#define BW_FP16_BF16 ((1u << FA_DTYPE_FP16) | (1u << FA_DTYPE_BF16))

/* The instance's D for the head sizes: 80 for 72 and 80 (72's columns
 * 72-79 zeros in shared memory, not stored), 128; -1 for the rest. */
int bw_inst_of(const struct fa_problem *p)
{
	if (p->head_dim != p->head_dim_v)
		return -1;
	if (p->head_dim == 72 || p->head_dim == 80)
		return 80;
	return p->head_dim == 128 ? 128 : -1;
}

int bw_supports(const struct fa_problem *p, char *why, size_t why_size)
{
	if (bw_inst_of(p) < 0) {
		snprintf(why, why_size, "head sizes %d/%d not instantiated (72, 80 and 128 only)",
			 p->head_dim, p->head_dim_v);
		return 0;
	}
	struct fa_cuda_limits lim = {};
	lim.dtypes = BW_FP16_BF16;
	lim.dtype_why = "wgmma kernel takes fp16 or bf16";
	lim.grid_yz = 1;
	lim.positive_scale = 1;
	lim.row_index_32 = 1;
	if (!fa_cuda_check_problem(p, &lim, why, why_size))
		return 0;
	if (!fa_cuda_strides_multiple(p, 8)) {
		snprintf(why, why_size, "strides not multiples of 8 elements (16-byte rows)");
		return 0;
	}
	int major, minor;
	if (!fa_cuda_device_is_sm90(&major, &minor)) {
		snprintf(why, why_size, "device sm_%d%d is not sm_90a (wgmma)", major, minor);
		return 0;
	}
	lim.smem_bytes = bw_inst_of(p) == 80 ? bw_layout<80>::BYTES : bw_layout<128>::BYTES;
	lim.smem_optin = -1;
	return fa_cuda_check_problem(p, &lim, why, why_size);
}

/* Multiprocessors of the current device (0 when the runtime cannot say). */
int bw_device_sms(void)
{
	int dev = 0, v = 0;
	if (cudaGetDevice(&dev) != cudaSuccess ||
	    cudaDeviceGetAttribute(&v, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess) {
		(void)cudaGetLastError();
		return 0;
	}
	return v;
}

/* 1 when the group's query heads run in their own CTAs with fp32 dK/dV
 * partials: split=1 under GQA, or split=2 (auto, the default) under GQA
 * with a mask when a CTA per kv head would leave SMs idle (one CTA per SM:
 * 32/8 heads at 2k keys make 128 CTAs for 132 SMs, each walking 4 heads;
 * on the H200 causal went from 140 to 205 TFLOP/s split, while without a
 * mask, where the 128 CTAs have equal work, splitting lost 284 -> 262). */
int bw_split_of(const struct fa_problem *p, const int32_t *params)
{
	const int mode = params ? params[0] : 2;
	if (!mode || p->kv_heads <= 0 || p->heads <= p->kv_heads)
		return 0;
	if (mode == 1)
		return 1;
	if (p->mask == FA_MASK_NONE)
		return 0;
	const int64_t ctas = (int64_t)((p->kv_len + BW_BN - 1) / BW_BN) * p->kv_heads * p->batch;
	return ctas < (int64_t)bw_device_sms();
}

/* Workspace (fa_bwd::workspace): D, one dQ accumulator (as
 * cuda_flash_bwd_mma's dq=0) and, under split with a group, the dK and dV
 * partials. */
size_t bw_workspace_bytes(const struct fa_problem *p, const int32_t *params)
{
	return fa_bwd::workspace_bytes(p, 1, bw_split_of(p, params));
}

template <int D, bool BF16, bool OV> cudaError_t bw_launch_main(const bw_args &x, cudaStream_t st)
{
	constexpr int smem = bw_layout<D>::BYTES;
	static const cudaError_t attr = cudaFuncSetAttribute(
		bwd_wgmma_kernel<D, BF16, OV>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
	if (attr != cudaSuccess)
		return attr;
	const dim3 grid((unsigned)((x.p.kv_len + BW_BN - 1) / BW_BN),
			(unsigned)(x.split ? x.p.heads : x.p.kv_heads), (unsigned)x.p.batch);
	if (grid.x > 0 && grid.z > 0)
		bwd_wgmma_kernel<D, BF16, OV><<<grid, BW_THREADS, smem, st>>>(x);
	return cudaGetLastError();
}

template <int DT> cudaError_t bw_launch_typed(const struct fa_launch_args *a)
{
	const struct fa_problem *p = a->p;
	cudaStream_t st = fa_cuda_stream_of(a);
	const fa_bwd::workspace w = fa_bwd::workspace_of(p, a->workspace, 1);
	const int split = bw_split_of(p, a->params);
	cudaError_t e = fa_bwd::launch_pre<DT>(p, a, w.delta, w.acc, 1, st);
	if (e != cudaSuccess)
		return e;
	bw_args x;
	x.p = *p;
	x.q = (const uint16_t *)a->q;
	x.k = (const uint16_t *)a->k;
	x.v = (const uint16_t *)a->v;
	x.d_o = (const uint16_t *)a->d_o;
	x.lse = a->lse;
	x.delta = w.delta;
	x.dk = (uint16_t *)a->dk;
	x.dv = (uint16_t *)a->dv;
	x.dq_acc = w.acc;
	x.dk_part = w.dk_part;
	x.dv_part = w.dv_part;
	x.split = split;
	x.cu_q = a->cu_seqlens_q;
	x.cu_k = a->cu_seqlens_k;
	x.prefix_lens = a->prefix_lens;
	x.scale_log2 = p->scale * BW_LOG2E;
	constexpr bool BF = DT == FA_DTYPE_BF16;
	const bool ov = a->params ? a->params[1] != 0 : true;
	e = bw_inst_of(p) == 80
				? (ov ? bw_launch_main<80, BF, true>(x, st) : bw_launch_main<80, BF, false>(x, st))
				: (ov ? bw_launch_main<128, BF, true>(x, st)
				      : bw_launch_main<128, BF, false>(x, st));
	if (e != cudaSuccess)
		return e;
	return fa_bwd::launch_post<DT>(p, a, w.acc, 1, split, w.dk_part, w.dv_part, st);
}

int bw_launch(const struct fa_launch_args *a)
{
	const struct fa_problem *p = a->p;
	char why[160];
	if (!bw_supports(p, why, sizeof why) || !FA_RECORD_HAS(struct fa_launch_args, a, dv) ||
	    !a->lse || !a->d_o || !a->dq || !a->dk || !a->dv || !a->workspace ||
	    a->workspace_bytes < bw_workspace_bytes(p, a->params))
		return (int)cudaErrorInvalidValue;
	if (((uintptr_t)a->q | (uintptr_t)a->k | (uintptr_t)a->v | (uintptr_t)a->d_o |
	     (uintptr_t)a->dk | (uintptr_t)a->dv) % 16 != 0)
		return (int)cudaErrorMisalignedAddress; /* 16-byte copies */
	(void)cudaGetLastError(); /* report this launch's error, not an older one */
	if (p->dtype == FA_DTYPE_BF16)
		return (int)bw_launch_typed<FA_DTYPE_BF16>(a);
	return (int)bw_launch_typed<FA_DTYPE_FP16>(a);
}

const int32_t bw_head_dims[] = {72, 80, 128};
const int32_t bw_split_allowed[] = {0, 1, 2};
const int32_t bw_overlap_allowed[] = {0, 1};
const struct fa_kernel_param bw_params[] = {
	{"split", 2, bw_split_allowed, 3, 0, 2,
	 "GQA group: 0 = one CTA per kv head walks every query head of its group | 1 = one CTA "
	 "per query head (group x the CTAs), dK/dV as fp32 partials summed in head order by a "
	 "last kernel (workspace group x dK and dV in fp32) | 2 = auto: 1 under a mask where a "
	 "CTA per kv head would leave SMs idle (uneven blocks in one wave), else 0"},
	{"overlap", 1, bw_overlap_allowed, 2, 0, 1,
	 "1 = a warpgroup's products overlap its arithmetic: dP^T in flight under P^T's "
	 "exponentials, dV += P^T dO under dS^T's arithmetic and store | 0 = each product waited "
	 "for before the next step (the former order)"},
};

/* Positional, in the order of struct fa_kernel (see backend_cuda.cu). */
const struct fa_kernel bw_kernels[] = {
	{"cuda_flash_bwd_wgmma",
	 "Hopper FA backward (sm_90a): wgmma, two warpgroups of 64 keys per 128-key block, S^T "
	 "and dP^T from shared memory, dV and dK with P^T and dS^T from registers, dQ by fp32 "
	 "atomics (no deterministic variant: cuda_flash_bwd_mma dq=1 has one); head sizes 72, 80 "
	 "and 128, every mask, varlen; tunable split (a CTA per GQA query head)",
	 BW_FP16_BF16, 72, 128, bw_head_dims, 3, 0, bw_params, 2, bw_supports, bw_workspace_bytes,
	 bw_launch, 0, sizeof(struct fa_kernel), FA_PASS_BWD, 0,
	 "cuda_flash_wgmma" /* writes the LSE; fwd_bwd times the Hopper forward */},
};

} // namespace

extern "C" int fa_cuda_bwd_wgmma_kernel_count(void)
{
	return (int)(sizeof bw_kernels / sizeof bw_kernels[0]);
}

extern "C" const struct fa_kernel *fa_cuda_bwd_wgmma_kernel(int i)
{
	return i >= 0 && i < fa_cuda_bwd_wgmma_kernel_count() ? &bw_kernels[i] : NULL;
}
