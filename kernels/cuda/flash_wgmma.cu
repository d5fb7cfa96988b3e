/* flash_wgmma.cu - cuda_flash_wgmma: a Hopper (sm_90a) flash-attention
 * forward with warpgroup matrix products (wgmma) from shared memory, tensor
 * memory access (TMA, cp.async.bulk.tensor) loads completing on mbarriers,
 * and producer/consumer warp specialisation with setmaxnreg.
 *
 * One CTA of 384 threads computes 128 query rows of one head of one
 * sequence (a work item): warpgroup 0 is the producer (one thread issues
 * every TMA copy; its registers go down to 40 per thread), warpgroups 1 and
 * 2 are the consumers, 64 query rows each (232 registers per thread;
 * head size 64 takes 3 consumers by default, 192 rows, 160 registers:
 * tunable consumers). The Q tile is loaded once per item; K and V tiles of 128 keys
 * (80 for head size 256, see layout) go through a 2-stage ring
 * (full barriers per stage for K and for V, completed by the copy engine's
 * transaction count; an empty barrier per stage that the 256 consumer threads
 * arrive on once the stage is read). Every tile lands in shared memory as
 * 64-column slabs of [rows][64] elements with the 128-byte swizzle, which is
 * the layout wgmma's 128-byte-swizzle descriptors read:
 *   S = Q K^T: m64n128k16 (m64n80k16 for head size 256), A (Q) and B (K)
 *     both K-major from shared memory
 *     (8-row core groups 1024 bytes apart: SBO 1024; a k-step of 16 columns
 *     is +32 bytes inside the swizzle row; every 4 k-steps the next slab);
 *   O += P V: m64nDk16 (D = 80 for head sizes 72 and 80: the second
 *     64-column atom of V read as far as its 16th column), A (P) from
 *     registers (the S accumulator layout
 *     repacked to 16-bit pairs, as FlashAttention-2 does with mma.sync), B
 *     (V, [keys][d] in memory) MN-major, transposed by the instruction
 *     (imm-trans-b 1): 8 keys per 1024-byte core group (SBO), the next 64
 *     columns one slab further (LBO = slab bytes).
 * Online softmax in registers (exp2 with the scale folded in, running max and
 * sum per row); rows that may attend no key output zeros, never NaN.
 *
 * Masks: every mask (causal and sliding window bottom-right aligned,
 * prefix-LM) is a key range per row plus the prefix (fa_mask_range); a CTA
 * visits only the key tiles some row of it may attend, and only tiles that
 * cross a row's range boundary or the end of the keys pay for per-element
 * masking. Lengths are arbitrary: the copy engine fills rows past the end of
 * the tensor with zeros; keys past the sequence are masked, query rows past
 * it not stored. Varlen packs tokens on one axis (the next sequence's keys
 * are read and masked). GQA maps query head h to key head h / (heads /
 * kv_heads). CTAs run the last query tiles (the heaviest when causal) first.
 * The grid is 1-d over the work items (query tiles x heads x batch x
 * split-KV ranges). Tunable `persistent`: one CTA per SM (or N) walks every
 * grid-th work item instead, the K/V ring, Q's barriers and the ping-pong
 * going on from one item to the next, so the next item's first loads run
 * under the end of this one.
 *
 * Tunable `dynamic` (kernels/common/fa_dyn.h): the dynamic persistent
 * schedule. A persistent grid (one CTA per SM, or `persistent`'s N) whose
 * CTA c runs item c first; then its producer thread, once it has issued
 * the last loads of its item, takes the next from a counter in device
 * memory (fa_wg_next: item gridDim.x + the value taken) and hands it to
 * the consumers through two slots in shared memory with full and empty
 * mbarriers, -1 for the end. The order: sections of (sequence, head) pairs
 * whose K and V fit in half the L2, the last (heaviest when causal) query
 * tiles of a section first, the key ranges of a tile next to each other.
 * So causal's uneven items balance across the SMs as under a grid of one
 * CTA per item, while the ring runs on from item to item. The counter is
 * 0 when a launch starts and the CTA that takes the launch's last value
 * puts it back (fa_dyn.h says why that is every launch's last take: with
 * more CTAs than items, split-KV and varlen's empty items too). 0 = auto
 * (the default): on only under a mask whose items differ (causal, prefix-LM,
 * sliding window) with more than one query tile, and without split-KV
 * (a split grid is a short one, and stays as it was); never without a
 * mask (an earlier trial of the schedule, branch s5-dyn, measured ViT
 * head size 72 at 1k tokens 8% slower under it on an H100, causal
 * prefill 1-5% faster). 1 = off: `persistent` as it is. 2 = on, whatever
 * the shape.
 * The producer keeps few registers (producer_regs(): 40, or 24 under
 * the 240-register build flag) and spills none: the item is recomputed
 * where used, the slots' and the counter's addresses are immediates.
 *
 * Tunable `overlap` (1 by default: faster on every shape measured on an
 * H100, docs/BENCHMARKS.md): 1 is FlashAttention-3's
 * intra-warpgroup overlap, S of key tile it and P V of tile it - 1 in
 * flight together and the softmax of tile it under P V (one more set of
 * live registers: S, P and O together); 0 waits for each product.
 *
 * Tunable `k_release` (1 by default): the ring's stages have a "K read"
 * barrier beside the "V read" one, so a consumer frees a stage's K as
 * soon as S of its tile is done and the producer loads the K two tiles on
 * under this tile's softmax and P V (FlashAttention-3's separate K and V
 * pipelines). 0 frees K with V once P V is done, as the ring did before,
 * where the next K was asked for just before S needed it. On the H100,
 * against cuDNN in the same call, peers.yaml went from 0.70-1.01x to
 * 0.90-1.09x (hd256 0.70 -> 0.91, hd128 0.90 -> 0.95-0.97;
 * docs/BENCHMARKS.md).
 *
 * Split-KV (tunable `split`, 0 = auto): where the grid of work items
 * (query tiles x heads x batch) leaves SMs idle - a short prompt over a long
 * context, decode - each item's visible key tiles (the mask's range, as
 * above) are cut into `split` consecutive ranges of equal tile counts, one
 * CTA each (split x the items of the grid; the ranges of a tile next to
 * each other).
 * A CTA writes its rows' O / l in fp32 and the log2-sum-exp2 m + log2(l)
 * of its range to the workspace (-inf, weight 0, for a range with no key
 * visible: its O is zeros, never NaN), and cuda_flash_mma's
 * fa_mma::combine_kernel merges the ranges of each row into O (and into the
 * LSE when asked). Auto is fa_split_count() (kernels/common/fa_split.h)
 * with one CTA per SM: no split when the items fill 80% of the SMs, else
 * the fewest splits within 95% of the best wave efficiency whose fp32
 * partials stay under a quarter of the K/V bytes (so a prefill with
 * q_len near kv_len never splits). split=1 is the kernel without it.
 *
 * LSE (fa_launch_args.lse, for a backward): each row's natural-log
 * log-sum-exp, +inf for a row that attends no key; written by the
 * epilogue, or by the merge under split-KV.
 *
 * Tunables kv_tile (256: 64 or 80 keys), pad128 (72/80: P V 128 columns,
 * the former layout) and consumers (64: 2 or 3) keep the former tiles
 * beside the new ones for same-call comparisons (docs/BENCHMARKS.md);
 * kv_tile128 (128: 176 keys, or the former 128), kv_tile80 (72/80: 128
 * keys, or 176).
 *
 * Tunable fold72 (1 by default, head size 72): where each token's K and V
 * heads are packed in one row (bshd, varlen) whose length is a multiple
 * of 32 bytes, head hk's 144-byte row starts on 32 bytes when hk is even
 * and 16 bytes past when it is odd; the copy engine reads a row that does
 * not start on 32 bytes in more, smaller pieces (Nsight Compute on the
 * H100: 20.8 million L2 requests at ViT 72 4k against 9.2 million at 80).
 * So an even head is read as columns 0-63 and 64-71 (both starting on 32
 * bytes), an odd one as 8-71 (through a map over the row of every head,
 * tk0) and 0-7 (through a map 8 columns wide, tk8, zeros past them); Q
 * comes in the same column order (its 8-15 in the second slab meet K's
 * zeros), P V's output columns come in that order and the epilogue puts
 * them back. 12.6 million L2 requests, +12-15%. 0 reads every head
 * through the per-head maps.
 *
 * Not done yet: head sizes other than 64, 72, 80, 128, 256 (Q, K and V
 * alike) and 192/128 (supports() refuses them); a TMA store of O (speed,
 * not correctness).
 *
 * The kernel body exists only in the sm_90a compilation
 * (__CUDA_ARCH_FEAT_SM90_ALL); the Makefile compiles this file for sm_90a
 * only, and supports() refuses every other device. cuTensorMapEncodeTiled
 * comes from the driver through cudaGetDriverEntryPointByVersion, so the
 * plugin does not link libcuda and loads where no driver is installed.
 */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda.h> /* CUtensorMap and its enums; no libcuda symbol is linked */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <type_traits>

#include "cuda_kernels.h"
#include "flash_mma.cuh" /* fa_mma::combine_kernel: the split-KV merge */
#include "flash_wgmma.h"
#include "../common/fa_dyn.h"
#include "problem_check.h"
#include "wgmma_common.cuh"

/* The dynamic schedule's counter (kernels/common/fa_dyn.h: CTA c runs item
 * c, then item gridDim.x + each value it takes; the launch's last take
 * puts it back to 0, so it is 0 between launches). One per loaded plugin
 * and device, as flash_decode.cu's arrival counters: two dynamic launches
 * in flight at once on different streams of one device would share it
 * (the harness launches one kernel after the other on one stream, a graph
 * capture included). */
extern "C" {
__device__ unsigned int fa_wg_next; /* C linkage: next_take() names it in PTX */
}

namespace {

/* NC consumer warpgroups of 64 query rows each (wgmma M is 64): 2, or 3
 * for head size 64 (tunable consumers), as FlashAttention-3's 192-row tile */
template <int NC> constexpr int threads_of(void)
{
	return WG_THREADS * (1 + NC);
}
template <int NC> constexpr int block_m(void)
{
	return 64 * NC;
}
constexpr int STAGES = 2;                    /* K/V ring depth */
/* The ring's "K read" barriers, [stage] at + 8 * stage, past the "V read"
 * (bar_e) ones and the Q-read barrier: bar_e + EK_OFF. */
constexpr int EK_OFF = 8 * STAGES + 8;
/* Registers per thread after setmaxnreg. The CTA is launched with 168 a
 * thread (384 threads: 64512) or 128 (512 threads, three consumers:
 * 65536); setmaxnreg.inc waits for ever past that pool, so the producer
 * keeps what the consumers leave. Two consumers take
 * FA_WG_CONSUMER_REGS_WIDE, the producer the rest: 232 and 40 (128 x 40 +
 * 256 x 232 = 64512), or with the build flag at 240 (for same-call
 * comparisons) 240 and 24. Three consumers take 160, the producer 32
 * (128 x 32 + 384 x 160 = 65536). 232 was 2-3% faster than 240 at hd128
 * on all four peers.yaml rows, paired in one `fabench run --ab` of the two
 * builds on the H100 (docs/BENCHMARKS.md, 2026-11-27 mid-morning); the
 * producer's 40 hold tunable q_first's early Q load at 72/80 (8 bytes of
 * spill at 32) and the separate K and V waits of k_release. */
#ifndef FA_WG_CONSUMER_REGS_WIDE
#define FA_WG_CONSUMER_REGS_WIDE 232
#endif
template <int NC> constexpr int consumer_regs(void)
{
	return NC == 2 ? FA_WG_CONSUMER_REGS_WIDE : 160;
}
template <int NC> constexpr int producer_regs(void)
{
	return NC == 2 ? (64512 - 256 * consumer_regs<2>()) / 128 : 32;
}
static_assert(producer_regs<2>() >= 24 && producer_regs<2>() % 8 == 0 &&
		      consumer_regs<2>() <= 240 && consumer_regs<2>() % 8 == 0,
	      "setmaxnreg: multiples of 8 from 24 to 256, within the launch's 64512");

/* An instance is <DK, DV, BN, NC>: DK the columns of Q and K that S = Q K^T
 * sums over (a multiple of 16), DV the columns of V and O that P V computes
 * (a multiple of 16), BN the keys of a K/V tile, NC the consumer
 * warpgroups. Head sizes 72 and 80 run as <80, 80>: the tensor maps end at
 * the real head size and the copy engine fills the columns past it with
 * zeros, so S sums 5 k-steps of 16 (72's last 8 columns are zeros) and P V
 * is m64n80k16 over V in the same two 128-byte-swizzled slabs (the second
 * read only as far as column 80: the descriptor's LBO still steps a whole
 * slab); 72's columns 72-79 of O are zeros and not stored. pad128=1 runs
 * <80, 128> (P V 128 columns wide), the former instance. */

/* Keys per K/V tile (BN): 128, but 176 at head size 128 (tunable
 * kv_tile128; FlashAttention-3's non-causal hd128 tile, here faster causal
 * too: Q 32 KiB and two stages of K and V of 44 KiB each, 208 KiB; S 88
 * registers a thread beside O's 64 and P's 44, within the consumers' 232;
 * the fixed costs of a tile - barriers, the row max and sum, the rescale
 * of O - over 1.4x the keys), 128 at head sizes 72 and 80 (tunable
 * kv_tile80 keeps 176: Q 32 KiB, two stages of K and V of 44 KiB,
 * 208 KiB; S 88 beside O's 40 and P's 44 within 232; since k_release it
 * is no faster at 4k and 8k tokens and its longer first and last tiles
 * cost 5-22% up to 1k), and 80 for DV = 256 (FlashAttention-3's
 * tile), where shared memory holds Q (64 KiB) and two stages of K and V
 * (40 KiB each) only with tiles of at most 80 keys, and a consumer's
 * registers hold O (64 x 256 fp32: 128 a thread) beside S and P only when S
 * is 64 x 80 (40 a thread). 64 (the former tile, tunable kv_tile) is kept
 * for comparison: S = Q K^T of m64n64k16 reads 4 KiB of shared memory per
 * 32 clocks of the tensor core, the whole 128 bytes a clock an SM's shared
 * memory delivers, where m64n80k16 needs 115. */
template <int DK, int DV, int BN_, int NC = 2> struct layout {
	static_assert(DK % 16 == 0 && DV % 16 == 0, "k-steps and P V widths of 16");
	static_assert(BN_ % 16 == 0 && BN_ <= 256, "key tiles: k-steps of 16, one TMA box");
	static constexpr int BN = BN_;
	static constexpr int QK_SLABS = (DK + SLAB_COLS - 1) / SLAB_COLS;
	static constexpr int V_SLABS = (DV + SLAB_COLS - 1) / SLAB_COLS;
	static constexpr int KV_SLAB = BN * ROW_BYTES; /* one 64-column slab of K or V */
	static constexpr int Q_SLAB_BYTES = block_m<NC>() * ROW_BYTES; /* 16 or 24 KiB */
	static constexpr int Q_TILE = QK_SLABS * Q_SLAB_BYTES;
	static constexpr int K_TILE = QK_SLABS * KV_SLAB;
	static constexpr int V_TILE = V_SLABS * KV_SLAB;
	static constexpr int Q = 0;
	static constexpr int K = Q + Q_TILE;
	static constexpr int V = K + STAGES * K_TILE;
	/* 10 mbarriers of 8 bytes (Q, the ring's: K full, V full, V empty;
	 * Q read, the ring's K empty), then the dynamic schedule's: its 2 item
	 * slots' full and empty barriers and the 2 slots (4 bytes each, 8
	 * apart: see item_put) */
	static constexpr int BAR = V + STAGES * V_TILE;
	static constexpr int ITEM_BAR = BAR + 80, ITEM_SLOT = ITEM_BAR + 32;
	/* + the barriers and slots, + 1024 to align the base: the swizzle
	 * pattern is taken from address bits 7-9, so every slab starts on 1024
	 * bytes */
	static constexpr int BYTES = ITEM_SLOT + 16 + 1024;
	static_assert(KV_SLAB % 1024 == 0, "every slab on 1024 bytes");
};

/* The kernel's arguments besides the three tensor maps. */
struct wg_args {
	void *o;
	int64_t o_sb, o_ss, o_sh;
	const int32_t *cu_q, *cu_k, *prefix_lens;
	int32_t q_len, kv_len, group, mask, window, prefix_len, varlen, n_mtiles;
	int32_t head_dim_v; /* columns of O stored (<= the instance's DV) */
	int32_t pingpong;   /* tunable pingpong (with overlap only) */
	/* the grid (1-d): gridDim.x CTAs walk the n_items work items, one
	 * each (gridDim.x = n_items) or a persistent grid's */
	int32_t n_items;    /* n_mtiles x heads x batch x splits */
	int32_t dynamic;    /* 1: the dynamic schedule, items from fa_wg_next (fa_dyn.h) */
	int32_t sect, n_bh; /* dynamic: (sequence, head) pairs per section, and in all */
	int32_t heads, batch;
	float scale_log2; /* scale * log2(e): scores go straight to exp2 */
	/* split-KV (tunable split): splits > 1 key ranges per work item, each
	 * CTA's rows into ws_o ([splits][ws_rows][DV] fp32 O / l) and ws_lse
	 * ([splits][ws_rows] log2-sum-exp2), row token * heads + h */
	int32_t splits;
	float *ws_o, *ws_lse;
	int64_t ws_rows;
	float *lse; /* without split-KV: each row's LSE (fa_launch_args.lse), or NULL */
	/* tunable fold72: 72 where it applies (head size 72, each token's K
	 * and V heads packed in a row of 32-byte multiples), else 0; an odd
	 * KV head's columns then sit in shared memory, in S's k order and in
	 * O, as 8-71 and 0-7 (produce(), and the epilogue puts them back) */
	int32_t fold;
	int32_t k_release; /* tunable k_release */
	int32_t q_first;   /* tunable q_first */
};

#if FA_WGMMA_DEVICE

/* Named barriers of the ping-pong (ids 1 to NC; 0 is __syncthreads'):
 * 256 threads each, one consumer warpgroup waiting on its own, the one
 * before it arriving on it. */
constexpr int PINGPONG_THREADS = 2 * WG_THREADS;

__device__ __forceinline__ void named_sync(int id)
{
	asm volatile("bar.sync %0, %1;" ::"r"(id), "n"(PINGPONG_THREADS) : "memory");
}

__device__ __forceinline__ void named_arrive(int id)
{
	asm volatile("bar.arrive %0, %1;" ::"r"(id), "n"(PINGPONG_THREADS) : "memory");
}

#endif /* FA_WGMMA_DEVICE */

#if FA_WGMMA_DEVICE

/* The per-thread state of a consumer: its two rows (g and g + 8 of its
 * warp's 16), their key ranges, running max and sum. */
struct rows_state {
	int row[2], lo[2], hi[2];
	float mx[2], sum[2];
};

/* S = Q K^T for one K stage (dk already at the stage). */
/* (Q's slabs are block_m<NC>() rows apart) */
template <int DK, int DV, int NC, bool BF16, int NS>
__device__ __forceinline__ void issue_s(float (&s)[NS], uint64_t dq, uint64_t dk)
{
	constexpr int Q_SLAB_BYTES = layout<DK, DV, 2 * NS, NC>::Q_SLAB_BYTES;
	constexpr int BN = 2 * NS; /* the key tile: S holds BN / 2 a thread */
#pragma unroll
	for (int kk = 0; kk < DK / 16; kk++) {
		/* 16 columns: +32 bytes in the swizzled row, a slab per 4 */
		const uint64_t oq = (uint64_t)((kk / 4) * Q_SLAB_BYTES + (kk % 4) * 32) >> 4;
		const uint64_t ok = (uint64_t)((kk / 4) * BN * ROW_BYTES + (kk % 4) * 32) >> 4;
		wgmma_ss<BN, BF16>(s, dq + oq, dk + ok, kk > 0);
	}
}

/* O += P V for one V stage (dv already at the stage). */
template <int DV, bool BF16, int KS>
__device__ __forceinline__ void issue_pv(float (&o)[DV / 2], const uint32_t (&pa)[KS][4], uint64_t dv)
{
#pragma unroll
	for (int kk = 0; kk < KS; kk++) /* 16 keys: 2 core groups further */
		wgmma_rs<DV, BF16>(o, pa[kk], dv + ((uint64_t)(kk * 2 * CORE_BYTES) >> 4));
}

/* Scales and masks the scores of the key tile at k0 and turns them into
 * probabilities against the updated running max; alpha gets the factor the
 * accumulator must be multiplied by before this tile's P V is added. Only
 * tiles crossing some row's range or the end of the keys pay for masking. */
template <int BN>
__device__ __forceinline__ void softmax_tile(float (&s)[BN / 2], rows_state &rs, int k0, int t,
					     bool full, int prefix, float scale_log2,
					     float (&alpha)[2])
{
	/* the unmasked and the masked loop apart: the first carries no branch
	 * per element (left to the compiler, the consumer inside the
	 * persistent loop got one loop with a branch per element, 17% slower
	 * at hd128 on the H100) */
	if (full) {
#pragma unroll
		for (int i = 0; i < BN / 2; i++)
			s[i] *= scale_log2;
	} else {
#pragma unroll
		for (int j = 0; j < BN / 8; j++)
#pragma unroll
			for (int e = 0; e < 4; e++) {
				const int r = e >> 1, col = k0 + 8 * j + 2 * t + (e & 1);
				const float x = s[4 * j + e] * scale_log2;
				s[4 * j + e] = col < prefix || (col >= rs.lo[r] && col < rs.hi[r])
						       ? x
						       : -INFINITY;
			}
	}
	/* rows g (e 0, 1) and g + 8 (e 2, 3); the four threads of a quad share a row */
#pragma unroll
	for (int r = 0; r < 2; r++) {
		float m = -INFINITY;
#pragma unroll
		for (int j = 0; j < BN / 8; j++)
			m = fmaxf(m, fmaxf(s[4 * j + 2 * r], s[4 * j + 2 * r + 1]));
		m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 1));
		m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 2));
		const float m_new = fmaxf(rs.mx[r], m);
		/* a row with no key so far: exponents against 0, all give 0 */
		const float m_use = m_new == -INFINITY ? 0.f : m_new;
		alpha[r] = ex2(rs.mx[r] - m_use);
		rs.mx[r] = m_new;
		float part = 0.f;
#pragma unroll
		for (int j = 0; j < BN / 8; j++)
#pragma unroll
			for (int e = 0; e < 2; e++) {
				const float p = ex2(s[4 * j + 2 * r + e] - m_use);
				s[4 * j + 2 * r + e] = p;
				part += p;
			}
		rs.sum[r] = rs.sum[r] * alpha[r] + part; /* per thread; quad sum at the end */
	}
}

/* P as wgmma A fragments, one per 16 keys (the accumulator layout of S
 * repacked: registers {row g, k 2t}, {g + 8, 2t}, {g, 2t + 8}, {g + 8, 2t + 8}). */
template <int BN, bool BF16>
__device__ __forceinline__ void pack_p(const float (&s)[BN / 2], uint32_t (&pa)[BN / 16][4])
{
#pragma unroll
	for (int kk = 0; kk < BN / 16; kk++)
#pragma unroll
		for (int q = 0; q < 4; q++)
			pa[kk][q] = pack2<BF16>(s[8 * kk + 2 * q], s[8 * kk + 2 * q + 1]);
}

template <int D> __device__ __forceinline__ void rescale(float (&o)[D / 2], const float (&alpha)[2])
{
#pragma unroll
	for (int i = 0; i < D / 2; i++)
		o[i] *= alpha[(i >> 1) & 1];
}

/* A consumer warpgroup (cw 0 or 1: query rows m0 + 64 cw ..). OVERLAP false:
 * per tile S, softmax, P V, each product waited for. OVERLAP true (the
 * intra-warpgroup overlap of FlashAttention-3): the products of tile it
 * (S) and tile it - 1 (P V) are in flight together, and the softmax of tile
 * it runs while P V of tile it - 1 is still on the tensor cores. */
template <int DK, int DV, int BN_, int NC, bool BF16, bool OVERLAP>
__device__ __forceinline__ void consumer(const wg_args &P, int cw, int m0, int lq, int lk,
					 int q_tok, int b, int h, int prefix, int t0, int n_tiles,
					 int lo_last, int hi_first, uint32_t s_q, uint32_t s_k,
					 uint32_t s_v, uint32_t bar_q, uint32_t bar_k, uint32_t bar_v,
					 uint32_t bar_e, int it_base, int qn, uint32_t bar_qe, int sp)
{
	using L = layout<DK, DV, BN_, NC>;
	constexpr int BN = L::BN;
	const int tid = threadIdx.x % WG_THREADS;
	const int warp = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
	rows_state rs;
	rs.row[0] = m0 + cw * 64 + warp * 16 + g;
	rs.row[1] = rs.row[0] + 8;
#pragma unroll
	for (int r = 0; r < 2; r++) {
		fa_mask_range(P.mask, rs.row[r], lq, lk, P.window, &rs.lo[r], &rs.hi[r]);
		rs.mx[r] = -INFINITY;
		rs.sum[r] = 0.f;
	}
	float o[DV / 2];
#pragma unroll
	for (int i = 0; i < DV / 2; i++)
		o[i] = 0.f;
	float s[BN / 2];
#pragma unroll
	for (int i = 0; i < BN / 2; i++)
		s[i] = 0.f;
	uint32_t pa[BN / 16][4];
	float alpha[2];

	/* descriptors: Q rows cw*64.. of each slab; K-major, SBO one core group */
	const uint64_t dq = wg_desc(s_q + cw * 64 * ROW_BYTES, 16, CORE_BYTES);
	const uint64_t dk = wg_desc(s_k, 16, CORE_BYTES);
	/* V MN-major: LBO the next 64 columns (a slab), SBO the next 8 keys */
	const uint64_t dv = wg_desc(s_v, L::KV_SLAB, CORE_BYTES);
	/* descriptor offsets of the K and the V stage of key tile it */
	/* (the ring goes on from the CTA's earlier work items: it_base) */
	auto ring = [&](int it) { return (it_base + it) % STAGES; };
	auto k_off = [&](int it) { return (uint64_t)(ring(it) * L::K_TILE) >> 4; };
	auto stage_off = [&](int it) { return (uint64_t)(ring(it) * L::V_TILE) >> 4; };
	auto phase = [&](int it) { return (uint32_t)((it_base + it) / STAGES) & 1; };
	auto is_full = [&](int k0) {
		return (k0 >= lo_last && k0 + BN <= hi_first) || k0 + BN <= prefix;
	};

	if (n_tiles > 0)
		mbar_wait_warp(bar_q, (uint32_t)qn & 1);
	if (!OVERLAP) {
		for (int it = 0; it < n_tiles; it++) {
			const int st = ring(it), k0 = (t0 + it) * BN;
			mbar_wait_warp(bar_k + 8 * st, phase(it));
			fence_regs(s);
			wg_fence();
			issue_s<DK, DV, NC, BF16>(s, dq, dk + k_off(it));
			wg_commit();
			wg_wait0();
			fence_regs(s);
			mbar_arrive(bar_e + EK_OFF + 8 * st); /* K read */
			softmax_tile<BN>(s, rs, k0, t, is_full(k0), prefix, P.scale_log2, alpha);
			pack_p<BN, BF16>(s, pa);
			rescale<DV>(o, alpha);
			mbar_wait_warp(bar_v + 8 * st, phase(it));
			fence_regs(o);
			wg_fence();
			issue_pv<DV, BF16>(o, pa, dv + stage_off(it));
			wg_commit();
			wg_wait0();
			fence_regs(o);
			mbar_arrive(bar_e + 8 * st); /* V read: this thread is done with the stage */
		}
		if (n_tiles > 0)
			mbar_arrive(bar_qe); /* every S done: Q may be overwritten */
	} else if (n_tiles > 0) {
		/* pingpong (FlashAttention-3's inter-warpgroup overlap): the
		 * consumers take turns, in the order 0, 1 (, 2), to issue their
		 * products, each waiting on its own named barrier (1 + cw) and,
		 * once its products are issued, arriving on the next one's
		 * (bar_other), so one's softmax runs while another's products
		 * hold the tensor cores. All issue n_tiles + 1 times (the CTA's
		 * tile range is theirs), consumer 0 first: the last consumer
		 * arrives on consumer 0's barrier once to start, and consumer 0
		 * takes that barrier's last arrival at the end, so no barrier is
		 * left half-arrived at exit. */
		const bool pp = P.pingpong != 0;
		const int bar_mine = 1 + cw, bar_other = 1 + (cw + 1) % NC;
		if (pp && cw == NC - 1)
			named_arrive(1);
		/* tile 0: S and its softmax (O is 0, alpha 0) */
		mbar_wait_warp(bar_k + 8 * ring(0), phase(0));
		if (pp)
			named_sync(bar_mine);
		fence_regs(s);
		wg_fence();
		issue_s<DK, DV, NC, BF16>(s, dq, dk + k_off(0));
		wg_commit();
		if (pp)
			named_arrive(bar_other);
		wg_wait0();
		fence_regs(s);
		if (P.k_release)
			mbar_arrive(bar_e + EK_OFF + 8 * ring(0)); /* K of tile 0 read */
		softmax_tile<BN>(s, rs, t0 * BN, t, is_full(t0 * BN), prefix, P.scale_log2,
			     alpha);
		for (int it = 1; it < n_tiles; it++) {
			const int st = ring(it), prev = ring(it - 1);
			const int k0 = (t0 + it) * BN;
			/* s holds P of tile it - 1: into A fragments, O to its max */
			pack_p<BN, BF16>(s, pa);
			rescale<DV>(o, alpha);
			/* both stages ready before the fence: nothing between the
			 * two issues touches a register */
			mbar_wait_warp(bar_v + 8 * prev, phase(it - 1));
			mbar_wait_warp(bar_k + 8 * st, phase(it));
			if (pp)
				named_sync(bar_mine);
			fence_regs(s);
			fence_regs(o);
			wg_fence();
			issue_s<DK, DV, NC, BF16>(s, dq, dk + k_off(it));
			wg_commit();
			issue_pv<DV, BF16>(o, pa, dv + stage_off(it - 1));
			wg_commit();
			if (pp)
				named_arrive(bar_other);
			asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory"); /* S done */
			fence_regs(s);
			if (P.k_release)
				mbar_arrive(bar_e + EK_OFF + 8 * st); /* K of tile it read */
			softmax_tile<BN>(s, rs, k0, t, is_full(k0), prefix, P.scale_log2, alpha);
			wg_wait0(); /* P V of tile it - 1 done */
			fence_regs(o);
			if (!P.k_release)
				mbar_arrive(bar_e + EK_OFF + 8 * prev);
			mbar_arrive(bar_e + 8 * prev);
		}
		/* the last tile's P V */
		const int last = n_tiles - 1;
		pack_p<BN, BF16>(s, pa);
		rescale<DV>(o, alpha);
		mbar_wait_warp(bar_v + 8 * ring(last), phase(last));
		if (pp)
			named_sync(bar_mine);
		fence_regs(o);
		wg_fence();
		issue_pv<DV, BF16>(o, pa, dv + stage_off(last));
		wg_commit();
		if (pp)
			named_arrive(bar_other);
		/* consumer 0 takes the last consumer's last arrival before it
		 * frees Q: the next work item's Q (which the last consumer
		 * waits for before its first arrival there) cannot come first */
		if (pp && cw == 0)
			named_sync(bar_mine);
		mbar_arrive(bar_qe); /* every S done: Q may be overwritten */
		wg_wait0();
		fence_regs(o);
		if (!P.k_release)
			mbar_arrive(bar_e + EK_OFF + 8 * ring(last));
		mbar_arrive(bar_e + 8 * ring(last));
	}

	/* normalise and store: 4-byte pairs, rows past the sequence skipped.
	 * Column of O pair j (8 j + 2 t): under fold72 an odd KV head's 0-63
	 * are columns 8-71 and 64-71 are 0-7 (72-79 zeros, not stored) */
	const int fs = DK == 80 && DV == 80 && P.fold && ((h / P.group) & 1) ? 8 : 0;
	auto col_of = [&](int j) { return 8 * j + 2 * t + (j < 8 ? fs : j == 8 ? -8 * fs : 0); };
#pragma unroll
	for (int r = 0; r < 2; r++) {
		float tot = rs.sum[r];
		tot += __shfl_xor_sync(0xffffffffu, tot, 1);
		tot += __shfl_xor_sync(0xffffffffu, tot, 2);
		const float inv = tot > 0.f ? 1.f / tot : 0.f;
		if (rs.row[r] >= lq)
			continue;
		/* the row's index in the LSE and the workspace: token * heads + h */
		const int64_t wr = ((int64_t)(P.varlen ? q_tok : b * lq) + rs.row[r]) * P.heads + h;
		if (P.splits > 1) {
			/* split-KV: O / l of this key range in fp32 and the range's
			 * log2-sum-exp2 (-inf when it saw no key: weight 0) to the
			 * workspace; fa_mma::combine_kernel merges */
			float *ws = P.ws_o + ((int64_t)sp * P.ws_rows + wr) * DV + 2 * t;
#pragma unroll
			for (int j = 0; j < DV / 8; j++)
				*reinterpret_cast<float2 *>(ws + col_of(j) - 2 * t) =
					make_float2(o[4 * j + 2 * r] * inv, o[4 * j + 2 * r + 1] * inv);
			if (t == 0)
				P.ws_lse[(int64_t)sp * P.ws_rows + wr] = fa_online_lse(rs.mx[r], tot);
			continue;
		}
		if (P.lse && t == 0) /* natural log: (m + log2 l) ln 2; +inf without a key */
			P.lse[wr] = tot > 0.f ? (rs.mx[r] + log2f(tot)) * 0.6931471805599453f
					      : INFINITY;
		const int64_t base = (P.varlen ? (int64_t)q_tok * P.o_ss : (int64_t)b * P.o_sb) +
				     (int64_t)rs.row[r] * P.o_ss + (int64_t)h * P.o_sh;
		uint32_t *dst = (uint32_t *)((uint16_t *)P.o + base);
#pragma unroll
		for (int j = 0; j < DV / 8; j++)
			if (col_of(j) < P.head_dim_v) /* 72 and 80 in a DV of 128: multiples of 8 */
				dst[col_of(j) / 2] = pack2<BF16>(o[4 * j + 2 * r] * inv,
								 o[4 * j + 2 * r + 1] * inv);
	}
}

#endif /* FA_WGMMA_DEVICE */

#if FA_WGMMA_DEVICE

/* One work item of a CTA: BLOCK_M query rows of head h of sequence b, with
 * the key tiles some row of it may attend. rows 0: no query row (varlen: a
 * shorter sequence). */
struct tile_info {
	int rows, b, h, m0, lq, lk, q_tok, k_tok, seq, prefix, lo_last, hi_first, t0, n_tiles;
};

template <int BLOCK_M, int BN>
__device__ __forceinline__ tile_info tile_of(const wg_args &P, int mt_rev, int h, int b, int sp)
{
	tile_info T;
	T.b = b;
	T.h = h;
	T.m0 = (P.n_mtiles - 1 - mt_rev) * BLOCK_M; /* last tiles first */
	T.lq = P.q_len;
	T.lk = P.kv_len;
	T.q_tok = T.k_tok = 0;
	T.seq = b;
	if (P.varlen) {
		T.q_tok = P.cu_q[b];
		T.k_tok = P.cu_k[b];
		T.lq = P.cu_q[b + 1] - T.q_tok;
		T.lk = P.cu_k[b + 1] - T.k_tok;
		T.seq = 0;
	}
	T.rows = T.m0 < T.lq;
	T.prefix = 0;
	if (P.mask == FA_MASK_PREFIX_LM) {
		int prefix = P.prefix_lens ? P.prefix_lens[b] : P.prefix_len;
		T.prefix = prefix < 0 ? 0 : prefix > T.lk ? T.lk : prefix;
	}
	/* key tiles some row of the CTA may attend: lo and hi grow with the row */
	int lo_first, hi_last;
	const int last = (T.m0 + BLOCK_M < T.lq ? T.m0 + BLOCK_M : T.lq) - 1;
	fa_mask_range(P.mask, T.m0, T.lq, T.lk, P.window, &lo_first, &T.hi_first);
	fa_mask_range(P.mask, last, T.lq, T.lk, P.window, &T.lo_last, &hi_last);
	const int kbeg = T.prefix > 0 ? 0 : lo_first;
	const int kend = hi_last > T.prefix ? hi_last : T.prefix;
	T.t0 = kbeg / BN;
	T.n_tiles = T.rows && kend > kbeg ? (kend + BN - 1) / BN - T.t0 : 0;
	if (P.splits > 1) {
		/* split-KV: range sp of splits over the visible tiles, tiles
		 * [n sp / splits, n (sp + 1) / splits): none empty when n >=
		 * splits; an empty one still stores its rows (weight 0) */
		/* (32-bit unsigned: n < 2^25 + 2 tiles of 64 keys or more,
		 * times at most FA_SPLIT_MAX ranges, fits; a 64-bit division
		 * here spilled the producer's registers) */
		const int n = T.n_tiles;
		const int a = (int)((unsigned)n * (unsigned)sp / (unsigned)P.splits);
		const int e = (int)((unsigned)n * (unsigned)(sp + 1) / (unsigned)P.splits);
		T.t0 += a;
		T.n_tiles = e - a;
	}
	return T;
}

/* The producer thread's copies for one work item: Q once (after the
 * consumers have read the previous item's, bar_qe; behind the first K/V
 * tile, so the ring refills while they finish), then K and V tile by tile
 * through the ring; it_base counts the ring's tiles of earlier items, qn
 * their Q loads. */
template <int DK, int DV, int BN, int NC>
__device__ __forceinline__ void produce(const wg_args &P, const tile_info &T, int it_base, int qn,
					const CUtensorMap *tq, const CUtensorMap *tk,
					const CUtensorMap *tv, const CUtensorMap *tk0,
					const CUtensorMap *tv0, const CUtensorMap *tk8,
					const CUtensorMap *tv8, uint32_t s_q, uint32_t s_k, uint32_t s_v,
					uint32_t bar_q, uint32_t bar_qe, uint32_t bar_k, uint32_t bar_v,
					uint32_t bar_e)
{
	using L = layout<DK, DV, BN, NC>;
	const int hk = T.h / P.group;
	/* bytes per tile: what the copy engine must deliver */
	/* (the columns the copy engine fills with zeros count too) */
	constexpr uint32_t Q_TX = (uint32_t)L::Q_TILE, K_TX = (uint32_t)L::K_TILE,
			   V_TX = (uint32_t)L::V_TILE;
	/* Q of the item, once Q of the last one is read (qn > 0) */
	auto load_q = [&]() {
		if (qn > 0)
			mbar_wait(bar_qe, (uint32_t)(qn - 1) & 1);
		mbar_expect_tx(bar_q, Q_TX);
		if constexpr (DK == 80 && DV == 80) {
			/* Q in K's column order (an odd head under fold72:
			 * 8-71, then 0-63, whose 8-15 meet K's zeros) */
			const bool odd = P.fold && (hk & 1);
			tma_load(s_q, tq, bar_q, odd ? 8 : 0, T.q_tok + T.m0, T.h, T.seq);
			tma_load(s_q + L::Q_SLAB_BYTES, tq, bar_q, odd ? 0 : SLAB_COLS,
				 T.q_tok + T.m0, T.h, T.seq);
		} else {
#pragma unroll
			for (int c = 0; c < L::QK_SLABS; c++)
				tma_load(s_q + c * L::Q_SLAB_BYTES, tq, bar_q, c * SLAB_COLS,
					 T.q_tok + T.m0, T.h, T.seq);
		}
	};
	/* tunable q_first: the CTA's first item loads Q ahead of its first K
	 * and V (S of the first tile needs Q and K, P V needs V later); a
	 * later item's Q waits for the last item's S, so its K and V go
	 * first, under the end of that item */
	if (qn == 0 && P.q_first)
		load_q();
	for (int it = 0; it < T.n_tiles; it++) {
		const int st = (it_base + it) % STAGES;
		const uint32_t ph = (uint32_t)((it_base + it) / STAGES) & 1;
		const int k0 = (T.t0 + it) * BN;
		/* K of the stage read (tunable k_release 1: once S of its tile
		 * is done, so K two tiles on loads under this tile's softmax and
		 * P V), then V (once that tile's P V is done) */
		mbar_wait(bar_e + EK_OFF + 8 * st, ph ^ 1);
		mbar_expect_tx(bar_k + 8 * st, K_TX);
		if constexpr (DK == 80 && DV == 80) {
			/* head sizes 72 and 80: fold72 (P.fold 72) reads head hk's
			 * 144-byte rows in two pieces that start on 32 bytes: an
			 * even head's columns 0-63 (slab 0, through the map over
			 * the row of every head, tk0) and 64-71 (slab 1); an odd
			 * head's 8-71 (slab 0) and 0-7 (slab 1, through the map of
			 * 8 columns, tk8: zeros past them). Without it (P.fold 0,
			 * tk0 the per-head map) columns 0-63 and 64-79. */
			const bool odd = P.fold && (hk & 1);
			tma_load(s_k + st * L::K_TILE, tk0, bar_k + 8 * st,
				 hk * P.fold + (odd ? 8 : 0), T.k_tok + k0, P.fold ? 0 : hk, T.seq);
			tma_load(s_k + st * L::K_TILE + L::KV_SLAB, odd ? tk8 : tk, bar_k + 8 * st,
				 odd ? 0 : SLAB_COLS, T.k_tok + k0, hk, T.seq);
			mbar_wait(bar_e + 8 * st, ph ^ 1);
			mbar_expect_tx(bar_v + 8 * st, V_TX);
			tma_load(s_v + st * L::V_TILE, tv0, bar_v + 8 * st,
				 hk * P.fold + (odd ? 8 : 0), T.k_tok + k0, P.fold ? 0 : hk, T.seq);
			tma_load(s_v + st * L::V_TILE + L::KV_SLAB, odd ? tv8 : tv, bar_v + 8 * st,
				 odd ? 0 : SLAB_COLS, T.k_tok + k0, hk, T.seq);
		} else {
#pragma unroll
			for (int c = 0; c < L::QK_SLABS; c++)
				tma_load(s_k + st * L::K_TILE + c * L::KV_SLAB, tk, bar_k + 8 * st,
					 c * SLAB_COLS, T.k_tok + k0, hk, T.seq);
			mbar_wait(bar_e + 8 * st, ph ^ 1);
			mbar_expect_tx(bar_v + 8 * st, V_TX);
#pragma unroll
			for (int c = 0; c < L::V_SLABS; c++)
				tma_load(s_v + st * L::V_TILE + c * L::KV_SLAB, tv, bar_v + 8 * st,
					 c * SLAB_COLS, T.k_tok + k0, hk, T.seq);
		}
		if (it == 0 && !(qn == 0 && P.q_first))
			load_q();
	}
}

/* The dynamic schedule's hand-off of the CTA's item j from the producer
 * thread to the consumers: slot j % 2 (ITEM_SLOT + 8 (j % 2)), its full
 * barrier (ITEM_BAR + 8 (j % 2): the producer arrives once it wrote the
 * slot, which releases the write; the consumers' wait acquires it) and
 * its empty barrier (16 bytes further: every consumer thread arrives once
 * it read the slot). The addresses are immediate offsets from one
 * register, s_base + 8 (j % 2): the producer has few registers, and the
 * addresses ptxas would keep live across the item's copies spilled. */
template <int OFF> __device__ __forceinline__ void slot_wait(uint32_t b, uint32_t parity)
{
	uint32_t done;
	do {
		asm volatile("{\n\t.reg .pred p;\n\t"
			     "mbarrier.try_wait.parity.shared::cta.b64 p, [%1+%3], %2;\n\t"
			     "selp.u32 %0, 1, 0, p;\n\t}"
			     : "=r"(done)
			     : "r"(b), "r"(parity), "n"(OFF)
			     : "memory");
	} while (!done);
}

template <int OFF> __device__ __forceinline__ void slot_arrive(uint32_t b)
{
	asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0+%1];" ::"r"(b), "n"(OFF) : "memory");
}

/* The producer: item j (-1: the end) into its slot, once the consumers
 * have read item j - 2 from it. */
template <class L> __device__ __forceinline__ void item_put(uint32_t s_base, int j, int item)
{
	const uint32_t b = s_base + 8 * (j & 1);
	slot_wait<L::ITEM_BAR + 16>(b, ((uint32_t)(j >> 1) & 1) ^ 1);
	asm volatile("st.shared.b32 [%0+%1], %2;" ::"r"(b), "n"(L::ITEM_SLOT), "r"(item) : "memory");
	slot_arrive<L::ITEM_BAR>(b);
}

/* A consumer thread: item j from its slot. */
template <class L> __device__ __forceinline__ int item_get(uint32_t s_base, int j)
{
	const uint32_t b = s_base + 8 * (j & 1);
	int item;
	slot_wait<L::ITEM_BAR>(b, (uint32_t)(j >> 1) & 1);
	__syncwarp(); /* converged again for the .aligned wgmma that follow */
	asm volatile("ld.shared.b32 %0, [%1+%2];" : "=r"(item) : "r"(b), "n"(L::ITEM_SLOT) : "memory");
	slot_arrive<L::ITEM_BAR + 16>(b); /* read: the producer may write the slot again */
	return item;
}

/* The dynamic schedule's next value from the counter (atomicAdd), its
 * address an immediate (the symbol), for the same reason. */
__device__ __forceinline__ unsigned next_take(void)
{
	unsigned v;
	asm volatile("atom.global.add.u32 %0, [fa_wg_next], 1;" : "=r"(v) : : "memory");
	return v;
}

__device__ __forceinline__ void next_reset(void)
{
	asm volatile("st.relaxed.gpu.global.u32 [fa_wg_next], 0;" ::: "memory");
}

#endif /* FA_WGMMA_DEVICE */

template <int DK, int DV, int BN, int NC, bool BF16, bool OVERLAP>
__global__ void __launch_bounds__(threads_of<NC>(), 1)
	wgmma_fwd(const __grid_constant__ CUtensorMap tq, const __grid_constant__ CUtensorMap tk,
		  const __grid_constant__ CUtensorMap tv, const __grid_constant__ CUtensorMap tk0,
		  const __grid_constant__ CUtensorMap tv0, const __grid_constant__ CUtensorMap tk8,
		  const __grid_constant__ CUtensorMap tv8, const wg_args P)
{
#if FA_WGMMA_DEVICE
	using L = layout<DK, DV, BN, NC>;
	constexpr int BLOCK_M = block_m<NC>();
	extern __shared__ unsigned char smem_raw[];
	unsigned char *smem =
		smem_raw + ((1024 - (smem_u32(smem_raw) & 1023)) & 1023); /* 1024-byte aligned */
	const uint32_t s_base = smem_u32(smem);
	const uint32_t s_q = s_base + L::Q, s_k = s_base + L::K, s_v = s_base + L::V;
	const uint32_t bar_q = s_base + L::BAR;
	const uint32_t bar_k = bar_q + 8, bar_v = bar_q + 8 + 8 * STAGES;
	const uint32_t bar_e = bar_q + 8 + 16 * STAGES; /* [stage] at + 8 * stage */
	const uint32_t bar_qe = bar_e + 8 * STAGES;        /* Q read: the next may load */

	if (threadIdx.x == 0) {
		mbar_init(bar_q, 1);
		mbar_init(bar_qe, NC * WG_THREADS);
		for (int s = 0; s < STAGES; s++) {
			mbar_init(bar_k + 8 * s, 1);
			mbar_init(bar_v + 8 * s, 1);
			mbar_init(bar_e + 8 * s, NC * WG_THREADS); /* every consumer thread */
			mbar_init(bar_e + EK_OFF + 8 * s, NC * WG_THREADS);
		}
		for (int s = 0; s < 2; s++) { /* the dynamic schedule's item slots */
			mbar_init(s_base + L::ITEM_BAR + 8 * s, 1);                   /* full */
			mbar_init(s_base + L::ITEM_BAR + 16 + 8 * s, NC * WG_THREADS); /* empty */
		}
		/* the inits visible to the copy engine (the async proxy) */
		asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
		asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
	}
	__syncthreads();

	/* the CTA's work items, of P.n_items (query tiles x heads x batch x
	 * splits). Static (P.dynamic 0): items blockIdx.x + j gridDim.x, j =
	 * 0, 1, ..: one item a CTA (gridDim.x = P.n_items) or, persistent,
	 * every gridDim.x-th, in the order a grid of one CTA per item starts
	 * them: the query tiles of a head together, the last (the heaviest
	 * when causal) first (the CTAs that run at once share its K and V in
	 * the L2), the key ranges of a tile next to each other. Dynamic: item
	 * blockIdx.x, then the producer thread takes each next one from
	 * fa_wg_next (fa_dyn_after) and hands it to the consumers through the
	 * two item slots (item_put, item_get), -1 for the end; the order is
	 * fa_dyn_item's. The K/V ring's count (it_base) and Q's phase (qn) go
	 * on from one item to the next. Item j is computed where it is used:
	 * no register of the producer's few holds it across the copies. */
	auto static_item = [&](int j) { return (int)(blockIdx.x + (unsigned)j * gridDim.x); };
	/* an item's tile and (split-KV) key range sp */
	auto item_of = [&](int item, int &sp) {
		int mt, bh; /* bh: head h of sequence b, b * heads + h */
		if (P.dynamic) {
			fa_dyn_item(item, P.n_mtiles, P.splits, P.sect, P.n_bh, &mt, &bh, &sp);
		} else {
			/* (no division without a split: the producer's registers) */
			const int it = P.splits > 1 ? item / P.splits : item;
			sp = item - it * P.splits;
			bh = it / P.n_mtiles;
			mt = it - bh * P.n_mtiles;
		}
		return tile_of<BLOCK_M, BN>(P, mt, bh % P.heads, bh / P.heads, sp);
	};
	const int wg = threadIdx.x / WG_THREADS;
	const bool dyn = P.dynamic != 0;
	int it_base = 0, qn = 0;
	if (wg == 0) {
		asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(producer_regs<NC>()));
		/* the copies of one item (none: no rows, varlen, or no key) */
		auto run = [&](int item) {
			int sp;
			const tile_info T = item_of(item, sp);
			if (T.n_tiles > 0) {
				produce<DK, DV, BN, NC>(P, T, it_base, qn, &tq, &tk, &tv, &tk0, &tv0,
							 &tk8, &tv8,
							 s_q, s_k, s_v,
							 bar_q, bar_qe, bar_k, bar_v, bar_e);
				it_base += T.n_tiles;
				qn++;
			}
		};
		/* one loop for both schedules, whose state across the copies is
		 * only j (the CTA's item count), it_base and qn: item j is
		 * static_item(j), or item c and then the counter's
		 * (dynamic), so the producer's few registers hold it */
		if (threadIdx.x == 0)
			for (int j = 0;; j++) {
				int item = static_item(j);
				if (dyn) {
					if (j > 0) {
						int reset;
						item = fa_dyn_after(next_take(), (int)gridDim.x,
								    P.n_items, &reset);
						if (reset) /* the launch's last take */
							next_reset();
					}
					item_put<L>(s_base, j, item);
				}
				if (item < 0 || item >= P.n_items)
					break;
				run(item);
			}
	} else {
		asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(consumer_regs<NC>()));
		for (int j = 0;; j++) {
			int item = static_item(j);
			if (dyn) /* the producer's item j */
				item = item_get<L>(s_base, j);
			if (item < 0 || item >= P.n_items)
				break;
			int sp;
			const tile_info T = item_of(item, sp);
			if (!T.rows)
				continue; /* varlen: a shorter sequence */
			consumer<DK, DV, BN, NC, BF16, OVERLAP>(P, wg - 1, T.m0, T.lq, T.lk, T.q_tok, T.b,
								T.h, T.prefix, T.t0, T.n_tiles,
								T.lo_last, T.hi_first, s_q, s_k, s_v,
								bar_q, bar_k, bar_v, bar_e, it_base, qn,
								bar_qe, sp);
			if (T.n_tiles > 0) {
				it_base += T.n_tiles;
				qn++;
			}
		}
	}
#else
	(void)tq;
	(void)tk;
	(void)tv;
	(void)P;
#endif
}

/* ---- host side ---- */

#define FP16_BF16 ((1u << FA_DTYPE_FP16) | (1u << FA_DTYPE_BF16))
/* TMA needs every global stride a multiple of 16 bytes */
#define ALIGN_ELEMS 8

typedef CUresult (*encode_tiled_fn)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *,
				    const cuuint64_t *, const cuuint64_t *, const cuuint32_t *,
				    const cuuint32_t *, CUtensorMapInterleave, CUtensorMapSwizzle,
				    CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

/* The driver's cuTensorMapEncodeTiled (CUDA 12.0 ABI), or NULL where there is
 * no driver or it lacks the entry point. Looked up once. */
encode_tiled_fn encode_tiled(void)
{
	static const encode_tiled_fn fn = []() -> encode_tiled_fn {
		void *p = NULL;
		cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
		if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000,
						     cudaEnableDefault, &q) != cudaSuccess ||
		    q != cudaDriverEntryPointSuccess) {
			(void)cudaGetLastError();
			return NULL;
		}
		return (encode_tiled_fn)p;
	}();
	return fn;
}

/* The instance families, one per (head_dim, head_dim_v) served; the
 * tunables kv_tile (256) and pad128 (72, 80) pick the member. */
enum { INST_64, INST_80, INST_128, INST_192_128, INST_256, N_INST };

/* The family that runs head sizes hd/hdv, or -1 where none does. */
int instance_of(int hd, int hdv)
{
	if (hd == hdv && hd == 64)
		return INST_64;
	if (hd == hdv && (hd == 72 || hd == 80))
		return INST_80;
	if (hd == hdv && hd == 128)
		return INST_128;
	if (hd == 192 && hdv == 128)
		return INST_192_128;
	if (hd == hdv && hd == 256)
		return INST_256;
	return -1;
}

/* The most shared memory a member of the family takes. */
int smem_bytes(int inst)
{
	switch (inst) {
	case INST_64:
		return layout<64, 64, 128, 3>::BYTES;
	case INST_80:
		return layout<80, 80, 176>::BYTES > layout<80, 128, 128>::BYTES
			       ? layout<80, 80, 176>::BYTES
			       : layout<80, 128, 128>::BYTES;
	case INST_128:
		return layout<128, 128, 176>::BYTES;
	case INST_192_128:
		return layout<192, 128, 128>::BYTES;
	default:
		return layout<256, 256, 80>::BYTES;
	}
}

int wgmma_supports(const struct fa_problem *p, char *why, size_t why_size)
{
	struct fa_cuda_limits lim = {};
	lim.head_dim_max = 256;
	lim.dtypes = FP16_BF16;
	lim.dtype_why = "wgmma kernel takes fp16 or bf16";
	lim.grid_yz = 1;
	lim.positive_scale = 1;
	if (!fa_cuda_check_problem(p, &lim, why, why_size))
		return 0;
	if (instance_of(p->head_dim, p->head_dim_v) < 0) {
		snprintf(why, why_size,
			 "head sizes %d/%d not instantiated (64, 72, 80, 128, 256 and 192/128 only)",
			 p->head_dim, p->head_dim_v);
		return 0;
	}
	if (p->q_len < 1 || p->kv_len < 1) {
		snprintf(why, why_size, "q_len %d or kv_len %d empty (no tensor map of zero rows)",
			 p->q_len, p->kv_len);
		return 0;
	}
	if (!fa_cuda_strides_multiple(p, ALIGN_ELEMS)) {
		snprintf(why, why_size, "strides not multiples of %d elements (16-byte TMA strides)",
			 ALIGN_ELEMS);
		return 0;
	}
	int major, minor;
	if (!fa_cuda_device_is_sm90(&major, &minor)) {
		snprintf(why, why_size, "device sm_%d%d is not sm_90a (wgmma, TMA, setmaxnreg)", major,
			 minor);
		return 0;
	}
	if (!encode_tiled()) {
		snprintf(why, why_size, "the driver has no cuTensorMapEncodeTiled");
		return 0;
	}
	lim.smem_bytes = smem_bytes(instance_of(p->head_dim, p->head_dim_v));
	lim.smem_optin = -1;
	return fa_cuda_check_problem(p, &lim, why, why_size);
}

/* A 4-d tensor map (columns, tokens, heads, sequences) over base, boxes of
 * 64 columns x box_rows tokens, 128-byte swizzle, zeros past the ends.
 * Strides in elements. Returns 0 or cudaErrorInvalidValue. */
int make_map(CUtensorMap *m, const void *base, int bf16, int d, int box_rows, int64_t tokens,
	     int heads, int seqs, int64_t ss, int64_t sh, int64_t sb)
{
	const cuuint64_t dims[4] = {(cuuint64_t)d, (cuuint64_t)tokens, (cuuint64_t)heads,
				    (cuuint64_t)seqs};
	const cuuint64_t strides[3] = {(cuuint64_t)ss * 2, (cuuint64_t)sh * 2, (cuuint64_t)sb * 2};
	const cuuint32_t box[4] = {SLAB_COLS, (cuuint32_t)box_rows, 1, 1};
	const cuuint32_t elem_strides[4] = {1, 1, 1, 1};
	const CUresult r = encode_tiled()(
		m, bf16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 4,
		(void *)base, dims, strides, box, elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
		CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
		CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
	return r == CUDA_SUCCESS ? 0 : (int)cudaErrorInvalidValue;
}

/* Tunables, in this order. */
enum {
	PARAM_OVERLAP = 0,
	PARAM_PINGPONG,
	PARAM_KV_TILE,
	PARAM_PAD128,
	PARAM_CONSUMERS,
	PARAM_PERSISTENT,
	PARAM_KV_TILE128,
	PARAM_SPLIT,
	PARAM_DYNAMIC,
	PARAM_FOLD72,
	PARAM_KV_TILE80,
	PARAM_K_RELEASE,
	PARAM_Q_FIRST
};
const int32_t overlap_allowed[] = {0, 1};
const int32_t pingpong_allowed[] = {0, 1};
const int32_t kv_tile_allowed[] = {64, 80};
const int32_t pad128_allowed[] = {0, 1};
const int32_t consumers_allowed[] = {2, 3};
const int32_t kv_tile128_allowed[] = {128, 176};
const int32_t fold72_allowed[] = {0, 1};
const int32_t kv_tile80_allowed[] = {128, 176};
const int32_t k_release_allowed[] = {0, 1};
const int32_t q_first_allowed[] = {0, 1};
const int32_t dynamic_allowed[] = {FA_DYN_AUTO, FA_DYN_OFF, FA_DYN_ON};
const struct fa_kernel_param wgmma_params[] = {
	{"overlap", 1, overlap_allowed, 2, 0, 1,
	 "1 = intra-warpgroup overlap: S of the next key tile and P V of this one in flight "
	 "together, the softmax under P V; 0 = each product waited for"},
	{"pingpong", 1, pingpong_allowed, 2, 0, 1,
	 "1 = inter-warpgroup ping-pong (with overlap=1 only): the consumer warpgroups take "
	 "turns to issue their products (named barriers), one's softmax under another's "
	 "products (the default: faster or within 1% on every shape measured on the H100); "
	 "0 = each issues when ready"},
	{"kv_tile", 80, kv_tile_allowed, 2, 64, 80,
	 "head size 256 only: keys per K/V tile, 80 (FlashAttention-3's) or 64 (the former "
	 "tile); 128 and 72/80 have their own (kv_tile128, kv_tile80), the others take 128"},
	{"pad128", 0, pad128_allowed, 2, 0, 1,
	 "head sizes 72 and 80 only: 1 = P V and O 128 columns wide (the former padding), 0 = "
	 "80 columns (m64n80k16); Q K^T sums 80 columns either way"},
	{"consumers", 3, consumers_allowed, 2, 2, 3,
	 "head size 64 only: consumer warpgroups of 64 query rows per CTA, 3 (192 rows, 160 "
	 "registers a thread, FlashAttention-3's hd64 tile; the default: 1.22x on the H100) or "
	 "2 (128 rows, 232 registers); every other head size takes 2"},
	{"persistent", 0, NULL, 0, 0, 65535,
	 "1 = a persistent grid, one CTA per SM, each walking every grid-th work item (query "
	 "tile, head, sequence, key range; the last query tiles of every head first) or, under "
	 "the dynamic schedule, taking its items from a counter; the next item's loads under "
	 "the end of this one; N > 1 = N CTAs (tests, sweeps); at most one CTA per work item; "
	 "0 = one CTA per work item (the dynamic schedule takes one per SM)"},
	{"kv_tile128", 176, kv_tile128_allowed, 2, 128, 176,
	 "head size 128 only: keys per K/V tile, 176 (FlashAttention-3's non-causal tile: S 64 x "
	 "176 a consumer, the fixed costs of a tile over 1.4x the keys; the default: +3-4% on the "
	 "H100 without a mask and causal from 8k, -1% at causal 4k) or 128 (the former tile)"},
	{"split", 0, NULL, 0, 0, FA_SPLIT_MAX,
	 "split-KV: each work item's visible key tiles in N ranges, one CTA each, merged by "
	 "cuda_flash_mma's combine kernel; 0 = auto (fa_split_count, one CTA per SM: splits only "
	 "when the items fill under 80% of the SMs and the fp32 partials stay under a quarter of "
	 "the K/V bytes), 1 = off, N = N ranges (capped at the key tiles)"},
	{"dynamic", FA_DYN_AUTO, dynamic_allowed, 3, FA_DYN_AUTO, FA_DYN_ON,
	 "the dynamic schedule: a persistent grid (one CTA per SM, or tunable persistent's N) "
	 "whose CTAs run item c first, then take the next from a counter in device memory, in "
	 "sections of heads whose K and V fit in half the L2, the last query tiles first, so "
	 "uneven items balance while the K/V ring runs on; 0 = auto (the default): on only "
	 "under a mask (causal, prefix-LM, sliding window) with more than one query tile and "
	 "no split-KV, never without a mask; 1 = off (tunable persistent as it is); 2 = on"},
	{"fold72", 1, fold72_allowed, 2, 0, 1,
	 "head size 72 with each token's K and V heads packed in a row of 32-byte multiples "
	 "(bshd, varlen): 1 = an odd KV head's 144-byte rows read from 32-byte boundaries, "
	 "columns 8-71 then 0-7 (the copy engine fetches a row that starts 16 bytes off in more, "
	 "smaller pieces; the default: +12-15% at ViT 72 on the H100), 0 = every head's rows "
	 "from where they start"},
	{"kv_tile80", 128, kv_tile80_allowed, 2, 128, 176,
	 "head sizes 72 and 80 (pad128=0) only: keys per K/V tile, 128 (the default: `fabench "
	 "tune` on the H100 over ViT 256-8k tokens, batch 1 and 4, fitted 128 everywhere, 0.2% "
	 "from each case's best; 176 is 5-22% slower up to 1k tokens and 0-3.5% past it) or "
	 "176"},
	{"k_release", 1, k_release_allowed, 2, 0, 1,
	 "with overlap=1: 1 = a consumer frees a K/V stage's K as soon as S of its tile is done, "
	 "so the K two tiles on loads under that tile's softmax and P V (the default: on the H100 "
	 "hd256 0.70x -> 0.91x cuDNN, hd128 0.90x -> 0.95-0.97x); 0 = K and V together once P V "
	 "is done (as before: the next K loads just before S needs it)"},
	{"q_first", 1, q_first_allowed, 2, 0, 1,
	 "1 = a CTA's first work item loads Q ahead of its first K and V tiles, so S of the "
	 "first tile waits for Q and K only (the default: `fabench tune` on the H100, faster or "
	 "tied on every peers.yaml and ViT 256-4k case, 3-9% at ViT 512-1k); 0 = Q after them "
	 "(as a later item's Q, which waits for the last item's S)"},
};
#define N_WGMMA_PARAMS ((int32_t)(sizeof wgmma_params / sizeof wgmma_params[0]))

/* Tunable i of the launch, or its default. */
int32_t param_of(const struct fa_launch_args *a, int i)
{
	return a->params ? a->params[i] : wgmma_params[i].default_value;
}

/* Split-KV ranges per work item of p for an instance of block_m query rows,
 * bn keys per tile and dv columns of O, under the tunable split (0 auto):
 * fa_split_count() with one CTA per SM (every instance takes one, its
 * shared memory over half an SM's). */
int splits_of(const struct fa_problem *p, int32_t split, int block_m_rows, int bn, int dv)
{
	int64_t sms = 0;
	if (split == 0) {
		int n; /* 0 when unknown: fa_split_count() does not split */
		(void)fa_cuda_device_attr(cudaDevAttrMultiProcessorCount, &n);
		sms = n;
	}
	const int64_t items =
		(int64_t)((p->q_len + block_m_rows - 1) / block_m_rows) * p->heads * p->batch;
	return fa_split_count(p, items, sms, (p->kv_len + bn - 1) / bn, dv, split);
}

/* The shape the launch of p under tunables params (NULL: the defaults)
 * takes, as wgmma_launch() dispatches it: query rows per CTA, keys per
 * tile, columns of O computed. Keep in step with wgmma_launch()'s switch:
 * the split-KV workspace is sized from it. */
void shape_of(const struct fa_problem *p, const int32_t *params, int *bm, int *bn, int *dv)
{
	auto t = [&](int i) { return params ? params[i] : wgmma_params[i].default_value; };
	*bm = 128;
	*bn = 128;
	*dv = p->head_dim_v;
	switch (instance_of(p->head_dim, p->head_dim_v)) {
	case INST_64:
		*bm = t(PARAM_CONSUMERS) == 3 ? 192 : 128;
		break;
	case INST_80:
		*dv = t(PARAM_PAD128) ? 128 : 80;
		*bn = !t(PARAM_PAD128) && t(PARAM_KV_TILE80) == 176 ? 176 : 128;
		break;
	case INST_128:
		*bn = t(PARAM_KV_TILE128) == 128 ? 128 : 176;
		break;
	case INST_256:
		*bn = t(PARAM_KV_TILE) == 64 ? 64 : 80;
		break;
	default: /* 192/128: <192, 128, 128> */
		break;
	}
}

/* Workspace of split-KV: fp32 O (DV columns) and one lse per row and range;
 * 0 without a split. */
size_t wgmma_workspace_bytes(const struct fa_problem *p, const int32_t *params)
{
	int bm, bn, dv;
	if (instance_of(p->head_dim, p->head_dim_v) < 0)
		return 0;
	shape_of(p, params, &bm, &bn, &dv);
	const int32_t split = params ? params[PARAM_SPLIT] : wgmma_params[PARAM_SPLIT].default_value;
	const int splits = splits_of(p, split, bm, bn, dv);
	if (splits <= 1)
		return 0;
	return (size_t)splits * (size_t)p->total_q * (size_t)p->heads * (size_t)(dv + 1) *
	       sizeof(float);
}

template <int DK, int DV, int BN, int NC, bool BF16, bool OVERLAP>
int launch_inst(const struct fa_launch_args *a)
{
	const struct fa_problem *p = a->p;
	const int bf16 = BF16;
	CUtensorMap tq, tk, tv, tk0, tv0, tk8, tv8;
	/* varlen: one packed token axis and one "sequence"; its stride unused */
	const int seqs = p->varlen ? 1 : p->batch;
	const int64_t q_tokens = p->varlen ? p->total_q : p->q_len;
	const int64_t k_tokens = p->varlen ? p->total_k : p->kv_len;
	int e;
	using L = layout<DK, DV, BN, NC>;
	constexpr int BLOCK_M = block_m<NC>();
	/* the maps end at the real head sizes: zeros past them (72 in 80) */
	if ((e = make_map(&tq, a->q, bf16, p->head_dim, BLOCK_M, q_tokens, p->heads, seqs, p->q_stride_s,
			  p->q_stride_h, p->varlen ? p->q_stride_s : p->q_stride_b)) ||
	    (e = make_map(&tk, a->k, bf16, p->head_dim, L::BN, k_tokens, p->kv_heads, seqs, p->k_stride_s,
			  p->k_stride_h, p->varlen ? p->k_stride_s : p->k_stride_b)) ||
	    (e = make_map(&tv, a->v, bf16, p->head_dim_v, L::BN, k_tokens, p->kv_heads, seqs, p->v_stride_s,
			  p->v_stride_h, p->varlen ? p->v_stride_s : p->v_stride_b)))
		return e;
	wg_args g = {};
	/* head size 72 with K's and V's heads packed in each token's row
	 * (bshd, varlen) on 32-byte rows: tunable fold72 (see produce()) */
	g.fold = DK == 80 && DV == 80 && p->head_dim == 72 && p->head_dim_v == 72 &&
				 p->k_stride_h == 72 && p->v_stride_h == 72 &&
				 p->k_stride_s % 16 == 0 && p->v_stride_s % 16 == 0 &&
				 (p->varlen || (p->k_stride_b % 16 == 0 && p->v_stride_b % 16 == 0)) &&
				 ((uintptr_t)a->k | (uintptr_t)a->v) % 32 == 0 &&
				 param_of(a, PARAM_FOLD72)
			 ? 72
			 : 0;
	if (!g.fold) {
		tk0 = tk8 = tk;
		tv0 = tv8 = tv;
	} else if ((e = make_map(&tk0, a->k, bf16, 72 * p->kv_heads, L::BN, k_tokens, 1, seqs,
				 p->k_stride_s, p->k_stride_s,
				 p->varlen ? p->k_stride_s : p->k_stride_b)) ||
		   (e = make_map(&tv0, a->v, bf16, 72 * p->kv_heads, L::BN, k_tokens, 1, seqs,
				 p->v_stride_s, p->v_stride_s,
				 p->varlen ? p->v_stride_s : p->v_stride_b)) ||
		   (e = make_map(&tk8, a->k, bf16, 8, L::BN, k_tokens, p->kv_heads, seqs,
				 p->k_stride_s, p->k_stride_h,
				 p->varlen ? p->k_stride_s : p->k_stride_b)) ||
		   (e = make_map(&tv8, a->v, bf16, 8, L::BN, k_tokens, p->kv_heads, seqs,
				 p->v_stride_s, p->v_stride_h,
				 p->varlen ? p->v_stride_s : p->v_stride_b)))
		return e;
	g.o = a->o;
	g.o_sb = p->o_stride_b;
	g.o_ss = p->o_stride_s;
	g.o_sh = p->o_stride_h;
	g.cu_q = a->cu_seqlens_q;
	g.cu_k = a->cu_seqlens_k;
	g.prefix_lens = a->prefix_lens;
	g.q_len = p->q_len;
	g.kv_len = p->kv_len;
	g.group = p->heads / p->kv_heads;
	g.mask = p->mask;
	g.window = p->window;
	g.prefix_len = p->prefix_len;
	g.varlen = p->varlen;
	g.n_mtiles = (p->q_len + BLOCK_M - 1) / BLOCK_M;
	g.scale_log2 = p->scale * 1.4426950408889634f; /* log2(e) */
	g.head_dim_v = p->head_dim_v;
	g.pingpong = param_of(a, PARAM_PINGPONG);
	g.k_release = param_of(a, PARAM_K_RELEASE);
	g.q_first = param_of(a, PARAM_Q_FIRST);
	g.heads = p->heads;
	g.batch = p->batch;
	/* the split count as wgmma_workspace_bytes() takes it (shape_of()
	 * mirrors the dispatch; a shape_of() out of step with it changes only
	 * the count, and a workspace too small for this DV is refused below) */
	int sbm, sbn, sdv;
	shape_of(p, a->params, &sbm, &sbn, &sdv);
	g.splits = splits_of(p, param_of(a, PARAM_SPLIT), sbm, sbn, sdv);
	g.ws_rows = (int64_t)p->total_q * p->heads;
	float *const lse = FA_RECORD_HAS(struct fa_launch_args, a, lse) ? a->lse : NULL;
	if (g.splits > 1) {
		const size_t need = (size_t)g.splits * (size_t)g.ws_rows * (DV + 1) * sizeof(float);
		if (!a->workspace || a->workspace_bytes < need)
			return (int)cudaErrorInvalidValue; /* the harness allocates workspace_bytes() */
		g.ws_o = static_cast<float *>(a->workspace);
		g.ws_lse = g.ws_o + (int64_t)g.splits * g.ws_rows * DV;
	} else {
		g.lse = lse;
	}
	const int smem = L::BYTES;
	cudaError_t ce = cudaFuncSetAttribute(wgmma_fwd<DK, DV, BN, NC, BF16, OVERLAP>,
					      cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
	if (ce != cudaSuccess)
		return (int)ce;
	/* the grid: one CTA per work item, or persistent (tunable persistent,
	 * or the dynamic schedule: fa_dyn_wanted() under tunable dynamic) */
	g.n_bh = p->heads * p->batch;
	g.n_items = g.n_mtiles * g.n_bh * g.splits; /* far below 2^31: an item is 64 rows or
						     * more of Q, O or the fp32 partials */
	const int32_t persistent = param_of(a, PARAM_PERSISTENT);
	g.dynamic = fa_dyn_wanted(param_of(a, PARAM_DYNAMIC), p->mask, g.n_mtiles, g.splits);
	g.sect = g.n_bh;
	unsigned ctas = (unsigned)g.n_items;
	if (persistent || g.dynamic) {
		int sms = 0;
		if (persistent <= 1 && (e = fa_cuda_device_attr(cudaDevAttrMultiProcessorCount, &sms)))
			return e;
		ctas = (unsigned)fa_dyn_ctas(g.dynamic, persistent, sms, g.n_items);
		if (g.dynamic) {
			/* sections of (sequence, head) pairs whose K and V fit in
			 * half the L2 (unknown: one section) */
			int l2;
			(void)fa_cuda_device_attr(cudaDevAttrL2CacheSize, &l2); /* 0 when unknown */
			const double kv_bytes =
				(double)p->kv_len * (p->head_dim + p->head_dim_v) * 2 / g.group;
			g.sect = fa_dyn_sect(l2, kv_bytes, g.n_bh);
		}
	}
	wgmma_fwd<DK, DV, BN, NC, BF16, OVERLAP>
		<<<ctas, threads_of<NC>(), smem, fa_cuda_stream_of(a)>>>(tq, tk, tv, tk0, tv0, tk8, tv8,
									 g);
	if (g.splits <= 1)
		return (int)cudaGetLastError();
	if ((ce = cudaGetLastError()) != cudaSuccess)
		return (int)ce;
	/* the merge: cuda_flash_mma's combine kernel over the same workspace
	 * layout (its params: the problem, O, the workspace, the LSE) */
	fa_mma::params m;
	memset(&m, 0, sizeof m);
	m.p = *p;
	m.o = static_cast<uint16_t *>(a->o);
	m.splits = g.splits;
	m.ws_o = g.ws_o;
	m.ws_lse = g.ws_lse;
	m.ws_rows = g.ws_rows;
	m.lse = lse;
	m.gather = 0; /* supports(): strides multiples of 8, bases 16-byte aligned */
	using TT = typename std::conditional<BF16, fa_mma::bf16_t, fa_mma::fp16_t>::type;
	fa_mma::combine_kernel<DV, TT>
		<<<(unsigned)((g.ws_rows + 3) / 4), 128, 0, fa_cuda_stream_of(a)>>>(m);
	return (int)cudaGetLastError();
}

/* The instance <DK, DV, BN, NC> for the dtype and the schedule. */
template <int DK, int DV, int BN = 128, int NC = 2>
int launch_dt(bool bf16, bool ov, const struct fa_launch_args *a)
{
	if (bf16)
		return ov ? launch_inst<DK, DV, BN, NC, true, true>(a)
			  : launch_inst<DK, DV, BN, NC, true, false>(a);
	return ov ? launch_inst<DK, DV, BN, NC, false, true>(a)
		  : launch_inst<DK, DV, BN, NC, false, false>(a);
}


int wgmma_launch(const struct fa_launch_args *a)
{
	const struct fa_problem *p = a->p;
	if (!encode_tiled())
		return (int)cudaErrorNotSupported; /* supports() said no */
	if (((uintptr_t)a->q | (uintptr_t)a->k | (uintptr_t)a->v | (uintptr_t)a->o) % 16 != 0)
		return (int)cudaErrorMisalignedAddress; /* TMA needs 16-byte aligned bases */
	const bool bf16 = p->dtype == FA_DTYPE_BF16;
	const bool ov = param_of(a, PARAM_OVERLAP) != 0;
	switch (instance_of(p->head_dim, p->head_dim_v)) {
	case INST_64:
		return param_of(a, PARAM_CONSUMERS) == 3 ? launch_dt<64, 64, 128, 3>(bf16, ov, a)
							 : launch_dt<64, 64>(bf16, ov, a);
	case INST_80:
		if (param_of(a, PARAM_PAD128))
			return launch_dt<80, 128>(bf16, ov, a);
		return param_of(a, PARAM_KV_TILE80) == 176 ? launch_dt<80, 80, 176>(bf16, ov, a)
							    : launch_dt<80, 80>(bf16, ov, a);
	case INST_128: {
		return param_of(a, PARAM_KV_TILE128) == 128 ? launch_dt<128, 128>(bf16, ov, a)
							     : launch_dt<128, 128, 176>(bf16, ov, a);
	}
	case INST_192_128:
		return launch_dt<192, 128>(bf16, ov, a);
	case INST_256:
		return param_of(a, PARAM_KV_TILE) == 64 ? launch_dt<256, 256, 64>(bf16, ov, a)
							: launch_dt<256, 256, 80>(bf16, ov, a);
	default:
		return (int)cudaErrorInvalidValue; /* supports() said no */
	}
}

const int32_t wgmma_head_dims[] = {64, 72, 80, 128, 192, 256};

/* Positional, in the order of struct fa_kernel (see flash_mma_table.cu). */
const struct fa_kernel wgmma_kernels[] = {
	{"cuda_flash_wgmma",
	 "Hopper FA forward (sm_90a): wgmma from shared memory, TMA loads on mbarriers, a producer "
	 "warpgroup and two consumer warpgroups (setmaxnreg); head sizes 64, 72, 80, 128, 256 and "
	 "192/128",
	 FP16_BF16, 64, 256, wgmma_head_dims, 6, 0, wgmma_params, N_WGMMA_PARAMS, wgmma_supports,
	 wgmma_workspace_bytes, wgmma_launch, 0, sizeof(struct fa_kernel), FA_PASS_FWD,
	 1 /* writes the LSE */, NULL},
};

} // namespace

extern "C" int fa_cuda_wgmma_kernel_count(void)
{
	return (int)(sizeof wgmma_kernels / sizeof wgmma_kernels[0]);
}

extern "C" const struct fa_kernel *fa_cuda_wgmma_kernel(int i)
{
	return i >= 0 && i < fa_cuda_wgmma_kernel_count() ? &wgmma_kernels[i] : NULL;
}
