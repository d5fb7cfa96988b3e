/* flash_wgmma_kernel.cuh - cuda_flash_wgmma's kernel: a Hopper (sm_90a) flash-attention
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
 * (__CUDA_ARCH_FEAT_SM90_ALL); the Makefile compiles flash_wgmma.cu for
 * sm_90a only, and supports() refuses every other device. cuTensorMapEncodeTiled
 * comes from the driver through cudaGetDriverEntryPointByVersion, so the
 * plugin does not link libcuda and loads where no driver is installed.
 *
 * This header holds the kernel: its constants and shared-memory layout,
 * the arguments, the consumers' and the producer's parts and the kernel
 * template. flash_wgmma.cu, its one includer, holds the host half: the
 * tensor maps, the tunables table, supports() and the launch. The header
 * defines the __device__ counter fa_wg_next, so only one translation unit
 * may include it.
 */
#ifndef FA_FLASH_WGMMA_KERNEL_CUH
#define FA_FLASH_WGMMA_KERNEL_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda.h> /* CUtensorMap and its enums; no libcuda symbol is linked */
#include <math.h>
#include <type_traits>

#include "cuda_kernels.h"
#include "../common/fa_dyn.h"
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

/* The arguments of a launch without a mask, varlen, split-KV or the dynamic
 * schedule (wgmma_launch's "plain" instances: ViT, and head size 128
 * without a mask): the same fields, with those four as compile-time
 * constants that shadow the base's, so every branch on them folds away
 * (wgmma_fwd and the functions it calls read P through a template type).
 * The code of a CTA's start and end shrinks; at ViT 80 with 1k tokens that
 * is the part of the work where ours trailed cuDNN (docs/BENCHMARKS.md,
 * 2026-11-27 evening). */
struct wg_args_plain : wg_args {
	static constexpr int32_t mask = FA_MASK_NONE, varlen = 0, splits = 1, dynamic = 0;
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

/* Independent chains of a row's max and of its sum in softmax_tile with
 * two consumer warpgroups (the CTA's 384 threads at 232 registers); with
 * three (head size 64, 160 registers) one chain was faster (build flag for
 * same-call comparisons; docs/BENCHMARKS.md, 2026-11-27 evening). */
#ifndef FA_WG_SOFTMAX_CHAINS
#define FA_WG_SOFTMAX_CHAINS 4
#endif

/* Masks the scores of the key tile at k0 and turns them into probabilities
 * against the updated running max; alpha gets the factor the accumulator
 * must be multiplied by before this tile's P V is added. Only tiles crossing
 * some row's range or the end of the keys pay for masking.
 *
 * The scale goes into the exponent's FFMA (p = 2^(s c - m), c = scale x
 * log2 e) instead of a multiply per score: supports() takes only a positive
 * scale, so the row max of the raw scores, times c, is the max of the scaled
 * ones, and the running max mx stays in the scaled domain. The row max and
 * the row sum run as CH (1, 2 or 4) independent chains, combined at the end:
 * one chain of 16 dependent maxima and one of 32 dependent adds per row left
 * the warp waiting on each result (Nsight Compute, ViT 80 at 1k tokens:
 * "wait" the largest stall reason). Both together, paired builds on the
 * H200: 1.02-1.03x at head sizes 72, 80 and 128, 1.06x at 64 (one chain),
 * the same at 256 (docs/BENCHMARKS.md). */
template <int BN, int CH>
__device__ __forceinline__ void softmax_tile(float (&s)[BN / 2], rows_state &rs, int k0, int t,
					     bool full, int prefix, float scale_log2,
					     float (&alpha)[2])
{
	static_assert(CH == 1 || CH == 2 || CH == 4, "1, 2 or 4 chains");
	/* the unmasked and the masked path apart: the first carries no branch
	 * per element (left to the compiler, the consumer inside the
	 * persistent loop got one loop with a branch per element, 17% slower
	 * at hd128 on the H100) */
	if (!full) {
#pragma unroll
		for (int j = 0; j < BN / 8; j++)
#pragma unroll
			for (int e = 0; e < 4; e++) {
				const int r = e >> 1, col = k0 + 8 * j + 2 * t + (e & 1);
				if (!(col < prefix || (col >= rs.lo[r] && col < rs.hi[r])))
					s[4 * j + e] = -INFINITY;
			}
	}
	/* rows g (e 0, 1) and g + 8 (e 2, 3); the four threads of a quad share a row */
#pragma unroll
	for (int r = 0; r < 2; r++) {
		float mc[4] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY};
#pragma unroll
		for (int j = 0; j < BN / 8; j++)
			mc[j % CH] = fmaxf(mc[j % CH], fmaxf(s[4 * j + 2 * r], s[4 * j + 2 * r + 1]));
		float m = CH == 1 ? mc[0] : fmaxf(fmaxf(mc[0], mc[1]), fmaxf(mc[2], mc[3]));
		m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 1));
		m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 2));
		const float m_new = fmaxf(rs.mx[r], m * scale_log2);
		/* a row with no key so far: exponents against 0, all give 0 */
		const float m_use = m_new == -INFINITY ? 0.f : m_new;
		alpha[r] = ex2(rs.mx[r] - m_use);
		rs.mx[r] = m_new;
		float pc[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
		for (int j = 0; j < BN / 8; j++)
#pragma unroll
			for (int e = 0; e < 2; e++) {
				const float x = fmaf(s[4 * j + 2 * r + e], scale_log2, -m_use);
				const float p = ex2(x);
				s[4 * j + 2 * r + e] = p;
				pc[(2 * j + e) % CH] += p;
			}
		/* per thread; quad sum at the end */
		rs.sum[r] = rs.sum[r] * alpha[r] + (CH == 1 ? pc[0] : (pc[0] + pc[1]) + (pc[2] + pc[3]));
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
template <int DK, int DV, int BN_, int NC, bool BF16, bool OVERLAP, class A>
__device__ __forceinline__ void consumer(const A &P, int cw, int m0, int lq, int lk,
					 int q_tok, int b, int h, int prefix, int t0, int n_tiles,
					 int lo_last, int hi_first, uint32_t s_q, uint32_t s_k,
					 uint32_t s_v, uint32_t bar_q, uint32_t bar_k, uint32_t bar_v,
					 uint32_t bar_e, int it_base, int qn, uint32_t bar_qe, int sp)
{
	using L = layout<DK, DV, BN_, NC>;
	constexpr int BN = L::BN;
	constexpr int CH = NC == 3 ? 1 : FA_WG_SOFTMAX_CHAINS; /* softmax_tile's chains */
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
			softmax_tile<BN, CH>(s, rs, k0, t, is_full(k0), prefix, P.scale_log2, alpha);
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
		softmax_tile<BN, CH>(s, rs, t0 * BN, t, is_full(t0 * BN), prefix, P.scale_log2,
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
			softmax_tile<BN, CH>(s, rs, k0, t, is_full(k0), prefix, P.scale_log2, alpha);
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

template <int BLOCK_M, int BN, class A>
__device__ __forceinline__ tile_info tile_of(const A &P, int mt_rev, int h, int b, int sp)
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
template <int DK, int DV, int BN, int NC, class A>
__device__ __forceinline__ void produce(const A &P, const tile_info &T, int it_base, int qn,
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

template <int DK, int DV, int BN, int NC, bool BF16, bool OVERLAP, class A = wg_args>
__global__ void __launch_bounds__(threads_of<NC>(), 1)
	wgmma_fwd(const __grid_constant__ CUtensorMap tq, const __grid_constant__ CUtensorMap tk,
		  const __grid_constant__ CUtensorMap tv, const __grid_constant__ CUtensorMap tk0,
		  const __grid_constant__ CUtensorMap tv0, const __grid_constant__ CUtensorMap tk8,
		  const __grid_constant__ CUtensorMap tv8, const A P)
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

} // namespace

#endif /* FA_FLASH_WGMMA_KERNEL_CUH */
