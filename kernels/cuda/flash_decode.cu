/* flash_decode.cu - the decode path of cuda_flash_mma: attention of a few
 * query rows per KV head (decode, speculative decode: group x q_len <= 16)
 * over a long KV cache, where the work is reading K and V once at the
 * memory's rate.
 *
 * One CTA takes every query row of one (sequence, KV head) - the query
 * heads of a GQA group and their positions, stacked into one m16 tile, so
 * K and V are read once per KV head - against one range of the keys (the
 * split of fa_decode_splits(), kernels/common/fa_decode.h). Its NW warps
 * work independently on interleaved 16-key tiles of that range (warp w
 * takes tiles w, w + NW, ...): each has its own ST-stage ring of K/V tiles
 * in shared memory fed by 16-byte cp.async copies (ST - 1 tiles in flight
 * per warp, no barrier between warps), computes S = Q K^T and O += P V with
 * mma.sync m16n8k16 (Q in registers, K and V through ldmatrix, the same
 * swizzled tiles and primitives as flash_mma.cuh) and the online softmax
 * of fa_cta.h. At the end the warps' (m, l, O) of the tile's real rows go
 * to shared memory, each warp's weight in each row is computed once (a
 * shuffle reduction per row), and the weighted sums are merged; the CTA
 * writes the output, or, when the keys are split, O / l and
 * log2-sum-exp2 of its range to the workspace, which flash_mma.cuh's
 * combine_kernel merges (the split-KV merge of cuda_flash_mma), or, for
 * up to FA_DECODE_FUSE_ROWS rows per KV head, the last CTA of the KV head
 * to finish (an arrival counter: no second launch), or, on sm_90+ with up
 * to FA_DECODE_CLUSTER_MAX ranges, the CTAs of a thread-block cluster
 * (one per range of a KV head) through distributed shared memory: each
 * stores its partial of every output into the shared memory of the CTA
 * that merges that slice of the outputs, and once they have landed each
 * merges its slice from its own shared memory (no workspace, no fence, no
 * counter, no remote load). Up to 8 ranges (tail_cluster) the stores are
 * st.async that count their bytes on the receiver's inbox barrier (an
 * mbarrier set up at the start, while the first tiles load), so each CTA
 * waits for its own inbox only, and the tail is cut to one CTA barrier and
 * short parallel steps; larger clusters wait at one cluster barrier.
 *
 * Masks, varlen, prefix-LM and windows: each row's allowed keys come from
 * fa_mask_range and fa_cta_work_of, as in flash_mma.cuh; rows that attend
 * no key get zeros. Requirements (fa_decode_fits): fp16/bf16, head sizes
 * 64/64, 128/128 or 256/256, rows 16-byte aligned.
 */
#include <string.h>

#include "../common/fa_decode.h"
#include "flash_decode.h"
#include "flash_mma.cuh"
#include "problem_check.h"

namespace fa_dec {

using fa_mma::params;

/* One instance: head size D, NW warps, ST stages per warp, MINB CTAs per
 * SM promised to the compiler. Shared memory: the warps' rings (NW x ST
 * stages of a 16 x D K tile and a 16 x D V tile), reused at the end for the
 * merge (each warp's fp32 O rows, padded by 8 floats against bank
 * conflicts, then m and l). */
template <int D_, int NW_, int ST_, int MINB_>
struct dcfg {
	static constexpr int D = D_, NW = NW_, ST = ST_, MINB = MINB_;
	static constexpr int NT = NW * 32;
	using KT = fa_mma::tile<FA_DECODE_TILE, D>;
	static constexpr int STAGE = 2 * KT::BYTES;
	static constexpr int RING = NW * ST * STAGE;
	static constexpr int DS = D + 8; /* merge row stride, floats */
	static constexpr int MERGE = (NW * FA_DECODE_ROWS * (DS + 3) + FA_DECODE_ROWS) * 4;
	/* the cluster merge's inbox, past the ring and the merge area (peers
	 * write it while this CTA may still stream its tiles): every range's
	 * share of this CTA's slice of the rows x D / 2 column pairs (float2),
	 * then every range's (M, L) of the 16 rows (float2, tail_cluster) or
	 * its log2-sum-exp2 (float, merge_pushed) */
	static constexpr int IN_PAIRS = FA_DECODE_ROWS * (D / 2) + FA_DECODE_CLUSTER_MAX;
	static constexpr int IN_BYTES = IN_PAIRS * 8 + FA_DECODE_CLUSTER_MAX * FA_DECODE_ROWS * 8;
	/* Q in registers up to 128 columns; wider (256: 64 more registers
	 * next to O's 128) it stays in shared memory after the rings, read
	 * with ldmatrix every tile (in registers it spilled on sm_90a) */
	static constexpr bool QREG = D <= 128;
	static constexpr int IN_OFF = RING > MERGE ? RING : MERGE;
	static constexpr int Q_OFF = IN_OFF + IN_BYTES;
	static constexpr int SMEM_BYTES = Q_OFF + (QREG ? 0 : KT::BYTES);
	static_assert(ST >= 2, "at least double buffering");
	/* the cluster tail (tail_cluster) keeps each warp's partial in its
	 * own ring: 16 rows of DS floats, then m and l of the 16 rows */
	static constexpr int WPART = (FA_DECODE_ROWS * DS + 2 * FA_DECODE_ROWS) * 4;
	static_assert(WPART <= ST * STAGE, "a warp's partial fits its ring");
	static_assert(D % 64 == 0, "whole 64-column panels: the copy below has no narrow panel");
};

/* Per head size: about 128 KB of K/V loads in flight per SM, which keeps an
 * H100's HBM3 busy (Little's law at ~1 us of loaded latency and ~25 GB/s
 * per SM needs ~32 KB; more covers the start and the tail):
 *   64:  4 warps x 4 stages x 4 KB = 64 KB, 3 CTAs per SM;
 *   128: 4 warps x 3 stages x 8 KB = 96 KB, 2 CTAs per SM;
 *   256: 2 warps x 4 stages x 16 KB = 128 KB, 1 CTA per SM (fits the
 *        163 KB an sm_80 block may opt in to). */
using cfg64 = dcfg<64, 4, 4, 3>;
using cfg128 = dcfg<128, 4, 3, 2>;
using cfg256 = dcfg<256, 2, 4, 1>;
/* Head size 128, deeper (tunable `decode_ring`): one CTA per SM with 192 KB
 * of rings, 128-160 KB of loads in flight per SM from the start: 1 = 4 warps
 * x 6 stages, 2 = 8 warps x 3 stages (the default: on an H100 with the
 * clean flush, batch 1 at 8k / 16k / 32k keys 1711 / 2221 / 2581 GB/s
 * against cfg128's 1647 / 2119 / 2550, batch 8 2839 / 2971 / 3069 against
 * 2766 / 2930 / 3021, batch 64 a tie; 4 x 6 no better than cfg128:
 * docs/BENCHMARKS.md). Eight warps each with its own ring keep more
 * independent loads and more math in flight per SM than four deeper ones. */
using cfg128s6 = dcfg<128, 4, 6, 1>;
using cfg128w8 = dcfg<128, 8, 3, 1>;

/* The cp.async copies of one 16-row tile (K or V: row r at base + r *
 * stride), rows >= nrows (>= 1) zero-filled from a clamped, valid address,
 * issued by one warp: lane l copies chunk l % 8 of every 64-column panel of
 * rows l / 8 + 4k, into the swizzled layout of fa_mma::tile. */
template <class KT>
static __device__ __forceinline__ void warp_load(uint32_t s_base, int lane, const uint16_t *base,
						 int64_t stride, int nrows)
{
	const int r_t = lane >> 3, c8 = lane & 7;
	fa_mma::static_for<KT::ROWS / 4>([&](auto ps_c) {
		constexpr int ps = decltype(ps_c)::value;
		const int row = r_t + 4 * ps;
		const bool ok = row < nrows;
		const uint16_t *src = base + (int64_t)(ok ? row : nrows - 1) * stride + c8 * 8;
		const uint32_t dst = s_base + (uint32_t)(row * 8 + (c8 ^ (row & 7))) * 16u;
		fa_mma::static_for<KT::P>([&](auto pn_c) {
			constexpr int pn = decltype(pn_c)::value;
			fa_mma::fa_mma_cp_async_16<pn * KT::ROWS * 8 * 16>(dst, src + pn * 64,
									   ok ? 16u : 0u);
		});
	});
}

/* How a launch of decode_kernel leaves its key ranges: unsplit or to the
 * workspace (combine_kernel merges), merged by the last CTA of each KV
 * head, or merged inside a thread-block cluster. */
enum { DEC_WS = 0, DEC_LAST = 1, DEC_CLUSTER = 2 };

#ifndef FA_DEC_ASYNC
#define FA_DEC_ASYNC 1
#endif
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
/* sm_90 cluster primitives: the barrier of every thread of the cluster
 * (release of this CTA's writes to shared memory, its own and its peers',
 * acquire of the others'), the CTA's rank, and stores into a peer's shared
 * memory at the address that mapa gives for rank `r`. */
static __device__ __forceinline__ void dec_cluster_sync()
{
	asm volatile("barrier.cluster.arrive.release.aligned;\n\t"
		     "barrier.cluster.wait.acquire.aligned;" ::: "memory");
}
static __device__ __forceinline__ uint32_t dec_cluster_rank()
{
	uint32_t r;
	asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
	return r;
}
static __device__ __forceinline__ uint32_t dec_cluster_map(uint32_t a, uint32_t r)
{
	uint32_t m;
	asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(m) : "r"(a), "r"(r));
	return m;
}
static __device__ __forceinline__ void dec_st_cluster(uint32_t a, float v)
{
	asm volatile("st.shared::cluster.f32 [%0], %1;" ::"r"(a), "f"(v) : "memory");
}
static __device__ __forceinline__ void dec_st_cluster2(uint32_t a, float x, float y)
{
	asm volatile("st.shared::cluster.v2.f32 [%0], {%1, %2};" ::"r"(a), "f"(x), "f"(y)
		     : "memory");
}
/* The inbox's transaction barrier: initialised by one thread to expect
 * `bytes`, made visible to the peers (the release fence, then every
 * thread's relaxed arrival at the cluster barrier; the peers wait on that
 * barrier before their first store); stores into a peer's shared memory
 * that count their bytes on the peer's barrier; the wait for them. */
static __device__ __forceinline__ void dec_bar_init(uint32_t bar, uint32_t bytes)
{
	asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n\t"
		     "mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n\t"
		     "fence.mbarrier_init.release.cluster;" ::"r"(bar),
		     "r"(bytes)
		     : "memory");
}
static __device__ __forceinline__ void dec_cluster_arrive_relaxed()
{
	asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
}
static __device__ __forceinline__ void dec_cluster_wait()
{
	asm volatile("barrier.cluster.wait.aligned;" ::: "memory");
}
static __device__ __forceinline__ void dec_st_async2(uint32_t a, float x, float y, uint32_t bar)
{
	asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v2.b32"
		     " [%0], {%1, %2}, [%3];" ::"r"(a),
		     "r"(__float_as_uint(x)), "r"(__float_as_uint(y)), "r"(bar)
		     : "memory");
}
static __device__ __forceinline__ void dec_bar_inval(uint32_t bar)
{
	asm volatile("mbarrier.inval.shared::cta.b64 [%0];" ::"r"(bar) : "memory");
}
static __device__ __forceinline__ void dec_bar_wait(uint32_t bar)
{
	asm volatile("{\n\t.reg .pred p;\n\tDEC_WAIT:\n\t"
		     "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], 0;\n\t"
		     "@!p bra DEC_WAIT;\n\t}" ::"r"(bar)
		     : "memory");
}
/* 1 when a cluster of S ranges merges through the inbox barrier
 * (tail_cluster; st.async: each CTA waits for its own inbox only, 1-3%
 * faster at batch 1 on an H100), 0 through barrier.cluster
 * (merge_pushed). Above the portable 8 CTAs
 * (forced clusters of 9-16) compute-sanitizer's synccheck reports "missing
 * wait" at the barrier's init, not understood: those keep the cluster
 * barrier (docs/BENCHMARKS.md, 2026-11-27 night). FA_DEC_ASYNC=0 builds
 * the barrier everywhere, for A/B runs. */
static __device__ __forceinline__ bool dec_async(int S)
{
	return FA_DEC_ASYNC && S <= 8;
}
#endif

/* The slice of a cluster merge: of the `items` column pairs (rows x D / 2)
 * of a KV head, rank k of a cluster of S merges [i0, i1), at most `per`
 * (the last ranks' slices may be short or empty). The inbox barrier's byte
 * count, the pushes and both merges take their slices from here. */
struct dec_slice {
	int per, i0, i1;
};
static __device__ __forceinline__ dec_slice dec_slice_of(int items, int S, int k)
{
	const int per = (items + S - 1) / S, i0 = k * per < items ? k * per : items;
	return {per, i0, i0 + per < items ? i0 + per : items};
}

/* One output column pair (x, y) at column c of the row that starts at
 * `row` (the row's address from the kernel's start, s_orow). */
template <class T>
static __device__ __forceinline__ void store_pair(uint16_t *row, int c, float x, float y)
{
	*reinterpret_cast<uint32_t *>(row + c) = fa_mma::fa_mma_pack2<T>(x, y);
}

/* The merge at the cluster barrier (forced clusters of 9-16 ranges, or
 * every cluster built with FA_DEC_ASYNC=0; else tail_cluster):
 * each CTA has already stored its partial of every column pair into the
 * inbox (at IN_OFF) of the CTA whose slice holds the pair, and its rows'
 * log2-sum-exp2 into every peer's (push_partial, push_lse); once they have
 * landed (the cluster barrier) each CTA merges its slice from its own
 * shared memory alone: no remote load and no second barrier on the tail. */
template <int D, int NT, class T>
static __device__ __forceinline__ void merge_pushed(const params &prm, uint16_t *const *orow,
						    int rows, int tid, const float2 *in,
						    const float *in_lse)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
	const int S = prm.splits;
	dec_cluster_sync();
	const int items = rows * (D / 2);
	const dec_slice sl = dec_slice_of(items, S, (int)dec_cluster_rank());
	const int per = sl.per, i0 = sl.i0, i1 = sl.i1;
	for (int idx = i0 + tid; idx < i1; idx += NT) {
		const int r = idx / (D / 2), c = 2 * (idx - r * (D / 2)), slot = idx - i0;
		float lse[FA_DECODE_CLUSTER_MAX], mx = -INFINITY;
#pragma unroll
		for (int k = 0; k < FA_DECODE_CLUSTER_MAX; ++k) {
			lse[k] = k < S ? in_lse[k * FA_DECODE_ROWS + r] : -INFINITY;
			mx = fmaxf(mx, lse[k]);
		}
		const float mu = fa_online_m_use(mx); /* every range empty: weights 0 */
		float sum = 0.f, ox = 0.f, oy = 0.f;
#pragma unroll
		for (int k = 0; k < FA_DECODE_CLUSTER_MAX; ++k)
			if (k < S) {
				const float wt = fa_mma::fa_mma_exp2(lse[k] - mu);
				const float2 v = in[k * per + slot];
				sum += wt;
				ox = fmaf(wt, v.x, ox);
				oy = fmaf(wt, v.y, oy);
			}
		const float inv = sum > 0.f ? 1.f / sum : 0.f;
		store_pair<T>(orow[r], c, ox * inv, oy * inv);
	}
#else
	(void)prm, (void)orow, (void)rows, (void)tid, (void)in, (void)in_lse;
	__trap(); /* the launcher takes clusters on sm_90+ only */
#endif
}

/* This CTA's (rank `me`) partial (x, y) of column pair idx of `items`:
 * into the inbox of the CTA whose slice holds the pair (a_in: this CTA's
 * inbox, at the same offset in every peer). */
static __device__ __forceinline__ void push_partial(int S, int me, int items, int idx, float x,
						    float y, uint32_t a_in, uint32_t bar)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
	const int per = dec_slice_of(items, S, 0).per, k = idx / per, slot = idx - k * per;
	const uint32_t a = dec_cluster_map(a_in + 8u * (uint32_t)(me * per + slot), (uint32_t)k);
	if (dec_async(S))
		dec_st_async2(a, x, y, dec_cluster_map(bar, (uint32_t)k));
	else
		dec_st_cluster2(a, x, y);
#else
	(void)S, (void)me, (void)items, (void)idx, (void)x, (void)y, (void)a_in, (void)bar;
#endif
}

/* Row r's log2-sum-exp2 of this CTA's range (rank `me`) into peer k's
 * inbox (a_in_lse: the lse part of this CTA's inbox), for merge_pushed. */
static __device__ __forceinline__ void push_lse(int r, int k, int me, float lse, uint32_t a_in_lse)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
	dec_st_cluster(dec_cluster_map(a_in_lse + 4u * (uint32_t)(me * FA_DECODE_ROWS + r), (uint32_t)k),
		       lse);
#else
	(void)r, (void)k, (void)me, (void)lse, (void)a_in_lse;
#endif
}

/* Merge by the last CTA (launcher's `fuse`): one arrival counter per
 * (sequence, KV head), zero between launches (the last CTA puts it back),
 * so the merge needs no second launch. Units past the array use
 * combine_kernel instead. The counters are the device's, one set per
 * loaded plugin: two fused launches in flight at once on different
 * streams of one device would share them (the harness launches on one
 * stream, one kernel after the other). */
#define FA_DEC_COUNTERS (1 << 16)
#define FA_DEC_DEVICES 64 /* devices whose cluster capacity is kept */
__device__ unsigned int fa_dec_count[FA_DEC_COUNTERS];

/* The last CTA of a split (sequence b, KV head): every split's partial
 * rows from the workspace (through L2: other SMs wrote them), weighted as
 * combine_row does, into the output. s_w: rows x splits floats of shared
 * memory. */
template <int D, int NT, class T>
static __device__ __forceinline__ void merge_splits(const params &prm, uint16_t *const *orow,
						    int h0, int lq, int rows, int64_t tok0, int tid,
						    float *s_w)
{
	const struct fa_problem &p = prm.p;
	const int S = prm.splits, warp = tid >> 5, lane = tid & 31;
	for (int idx = tid; idx < rows * S; idx += NT) {
		const int r = idx / S, sp = idx - r * S;
		int h, i;
		fa_cta_row_head_pos(1, h0, lq, r, &h, &i);
		s_w[idx] = __ldcg(prm.ws_lse + sp * prm.ws_rows + (tok0 + i) * p.heads + h);
	}
	fa_mma::fa_mma_syncthreads();
	for (int r = warp; r < rows; r += NT / 32) { /* a warp per row: weights sum to 1 */
		float *wr = s_w + r * S;
		const float l0 = lane < S ? wr[lane] : -INFINITY;
		const float l1 = lane + 32 < S ? wr[lane + 32] : -INFINITY;
		float mx = fmaxf(l0, l1);
#pragma unroll
		for (int d = 16; d > 0; d >>= 1)
			mx = fmaxf(mx, fa_mma::fa_mma_shfl_xor(mx, d));
		const float mu = fa_online_m_use(mx); /* every range empty: weights 0 */
		const float w0 = fa_mma::fa_mma_exp2(l0 - mu), w1 = fa_mma::fa_mma_exp2(l1 - mu);
		float sum = w0 + w1;
#pragma unroll
		for (int d = 16; d > 0; d >>= 1)
			sum += fa_mma::fa_mma_shfl_xor(sum, d);
		const float inv = sum > 0.f ? 1.f / sum : 0.f;
		fa_mma::fa_mma_syncwarp();
		if (lane < S)
			wr[lane] = w0 * inv;
		if (lane + 32 < S)
			wr[lane + 32] = w1 * inv;
	}
	fa_mma::fa_mma_syncthreads();
	for (int idx = tid; idx < rows * (D / 2); idx += NT) {
		const int r = idx / (D / 2), c = 2 * (idx - r * (D / 2));
		int h, i;
		fa_cta_row_head_pos(1, h0, lq, r, &h, &i);
		const float *src = prm.ws_o + ((tok0 + i) * p.heads + h) * D + c;
		const int64_t sstride = prm.ws_rows * D;
		float ox = 0.f, oy = 0.f;
#pragma unroll 8
		for (int sp = 0; sp < S; ++sp) {
			const float2 v = __ldcg(reinterpret_cast<const float2 *>(src + sp * sstride));
			const float wt = s_w[r * S + sp];
			ox = fmaf(wt, v.x, ox);
			oy = fmaf(wt, v.y, oy);
		}
		store_pair<T>(orow[r], c, ox, oy);
	}
}

/* The tail of a cluster that merges through inbox barriers (dec_async:
 * up to 8 ranges). While one warp or a few work the rest wait, so every
 * step of a tail costs its latency; the steps here are few and short
 * (docs/BENCHMARKS.md, 2026-12-01): (1) each warp, once its own loop is
 * done, puts its (m, l, O) in its own ring (no barrier before: no other
 * warp's tiles are there); (2) after one CTA barrier each thread takes a
 * column pair of a row, weighs the warps' O by exp2(m_w - M) itself (M,
 * the warps' largest m) and stores the unnormalised sum into the inbox of
 * the CTA whose slice holds the pair, and the threads of the row's first S
 * pairs store the row's (M, L = sum of exp2(m_w - M) l_w) into peer `pair`'s
 * inbox; (3) each CTA, once its inbox is complete, merges its slice with
 * eight threads a pair, one a range, reduced by shuffles. */
template <class CFG, class T>
static __device__ __forceinline__ void tail_cluster(const params &prm, uint16_t *const *orow,
						    int rows, int sp, int tid, const float (*o)[4],
						    const float *m_run, const float *l_run,
						    unsigned char *smem, uint32_t bar)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
	constexpr int D = CFG::D, NW = CFG::NW, NT = CFG::NT, DS = CFG::DS, H = D / 2, NO = D / 8;
	constexpr int WSTRIDE = CFG::ST * CFG::STAGE / 4; /* floats from one warp's ring to the next */
	const int warp = tid >> 5, lane = tid & 31, g = lane >> 2, t4 = lane & 3;
	float *const part = reinterpret_cast<float *>(smem); /* warp v: part + v WSTRIDE */
	constexpr int M_OFF = FA_DECODE_ROWS * DS, L_OFF = M_OFF + FA_DECODE_ROWS;

	/* (1) this warp's partial into its ring, once its own copies and
	 * reads of it are done */
	fa_mma::fa_mma_cp_async_wait<0>();
	fa_mma::fa_mma_syncwarp();
	float *const mine_w = part + warp * WSTRIDE;
#pragma unroll
	for (int hf = 0; hf < 2; ++hf) {
		if (hf == 1 && rows <= 8)
			break;
		const int R = g + 8 * hf;
		const float l = fa_mma::quad_sum(l_run[hf]);
		if (R < rows) {
			if (t4 == 0) {
				mine_w[M_OFF + R] = m_run[hf];
				mine_w[L_OFF + R] = l;
			}
#pragma unroll
			for (int jj = 0; jj < NO; ++jj)
				*reinterpret_cast<float2 *>(mine_w + R * DS + 8 * jj + 2 * t4) =
					make_float2(o[jj][2 * hf], o[jj][2 * hf + 1]);
		}
	}
	fa_mma::fa_mma_syncthreads();

	/* (2) the CTA's partial of each pair, pushed */
	const int S = prm.splits, items = rows * H;
	const dec_slice sl = dec_slice_of(items, S, (int)dec_cluster_rank());
	const int per = sl.per;
	const uint32_t a_in = fa_mma::fa_mma_smem_addr(smem) + (uint32_t)CFG::IN_OFF;
	const uint32_t a_ml = a_in + 8u * CFG::IN_PAIRS;
	dec_cluster_wait(); /* every peer has started and set up its inbox barrier */
	for (int idx = tid; idx < items; idx += NT) {
		const int r = idx / H, pair = idx - r * H;
		float mv[NW], mx = -INFINITY;
#pragma unroll
		for (int v = 0; v < NW; ++v) {
			mv[v] = part[v * WSTRIDE + M_OFF + r];
			mx = fmaxf(mx, mv[v]);
		}
		const float mu = fa_online_m_use(mx); /* no key in any warp: weights 0 */
		float l = 0.f, ox = 0.f, oy = 0.f;
#pragma unroll
		for (int v = 0; v < NW; ++v) {
			const float e = fa_mma::fa_mma_exp2(mv[v] - mu);
			const float2 ov = *reinterpret_cast<const float2 *>(part + v * WSTRIDE + r * DS + 2 * pair);
			l = fmaf(e, part[v * WSTRIDE + L_OFF + r], l);
			ox = fmaf(e, ov.x, ox);
			oy = fmaf(e, ov.y, oy);
		}
		push_partial(S, sp, items, idx, ox, oy, a_in, bar);
		if (pair < S) { /* the row's (M, L) into peer `pair` */
			const uint32_t a = dec_cluster_map(
				a_ml + 8u * (uint32_t)(r * FA_DECODE_CLUSTER_MAX + sp), (uint32_t)pair);
			dec_st_async2(a, mx, l, dec_cluster_map(bar, (uint32_t)pair));
		}
	}

	/* (3) this CTA's slice [i0, i1): 8 lanes a pair, lane k taking range k */
	const int i0 = sl.i0, n8 = 8 * (sl.i1 - i0);
	const float2 *in = reinterpret_cast<const float2 *>(smem + CFG::IN_OFF);
	const float2 *in_ml = in + CFG::IN_PAIRS;
	dec_bar_wait(bar); /* every range's stores into this inbox landed */
	for (int base = warp * 32; base < n8; base += NT) { /* whole warps: the shuffles */
		const int u = base + lane, slot = u >> 3, k = u & 7;
		const bool on = u < n8 && k < S;
		const int idx = i0 + (u < n8 ? slot : 0), r = idx / H;
		const float2 ml = on ? in_ml[r * FA_DECODE_CLUSTER_MAX + k] : make_float2(-INFINITY, 0.f);
		const float2 ov = on ? in[k * per + slot] : make_float2(0.f, 0.f);
		float mx = ml.x;
#pragma unroll
		for (int dd = 1; dd < 8; dd <<= 1)
			mx = fmaxf(mx, fa_mma::fa_mma_shfl_xor(mx, dd));
		const float e = fa_mma::fa_mma_exp2(ml.x - fa_online_m_use(mx)); /* 0 off a range */
		float l = e * ml.y, ox = e * ov.x, oy = e * ov.y;
#pragma unroll
		for (int dd = 1; dd < 8; dd <<= 1) {
			l += fa_mma::fa_mma_shfl_xor(l, dd);
			ox += fa_mma::fa_mma_shfl_xor(ox, dd);
			oy += fa_mma::fa_mma_shfl_xor(oy, dd);
		}
		if (u < n8 && k == 0) {
			const float inv = fa_online_inv_l(l); /* no key in any range: zeros */
			store_pair<T>(orow[r], 2 * (idx - r * H), ox * inv, oy * inv);
		}
	}
	fa_mma::fa_mma_syncthreads(); /* every thread past its wait */
	if (tid == 0)
		dec_bar_inval(bar);
#else
	(void)prm, (void)orow, (void)rows, (void)sp, (void)tid, (void)o;
	(void)m_run, (void)l_run, (void)smem, (void)bar;
	__trap(); /* the launcher takes clusters on sm_90+ only */
#endif
}

template <class CFG, class T, int MODE>
__global__ void __launch_bounds__(CFG::NT, CFG::MINB) decode_kernel(const params prm)
{
	extern __shared__ __align__(128) unsigned char fa_dec_smem[];
	constexpr int D = CFG::D, NW = CFG::NW, ST = CFG::ST, NT = CFG::NT, DS = CFG::DS;
	constexpr int KS = D / 16; /* k16 steps of S = Q K^T */
	constexpr int NO = D / 8;  /* n8 tiles of O */
	constexpr int TK = FA_DECODE_TILE;
	using KT = typename CFG::KT;
	const struct fa_problem &p = prm.p;
	const int tid = (int)threadIdx.x, warp = tid >> 5, lane = tid & 31;
	const int g = lane >> 2, t4 = lane & 3;

	/* rows and key tiles of the block: all packed rows of KV head
	 * blockIdx.y, key range blockIdx.z % splits of sequence blockIdx.z /
	 * splits */
	const struct fa_grid gr = {prm.group, 1, 1, 0, 0, prm.splits};
	struct fa_cta_work w;
	if (!fa_cta_work_of(&p, &gr, prm.cu_q, prm.cu_k, prm.prefix_lens, FA_DECODE_ROWS, TK, 0,
			    (int)blockIdx.y, (int)blockIdx.z, &w))
		return; /* a sequence without query rows (varlen) */
	const int b = w.b, lq = w.lq, lk = w.lk, rows = w.rows_total, h0 = w.h0, pfx = w.pfx;
	const uint16_t *kbase = prm.k + fa_k_offset(&p, prm.cu_k, b, 0, w.hk);
	const uint16_t *vbase = prm.v + fa_v_offset(&p, prm.cu_k, b, 0, w.hk);
	const int64_t kss = p.k_stride_s, vss = p.v_stride_s;

	/* this warp's tiles: n_begin + warp + j NW for j < nt */
	const int left = w.n_end - w.n_begin - warp;
	const int nt = left > 0 ? (left + NW - 1) / NW : 0;
	const uint32_t a_ring = fa_mma::fa_mma_smem_addr(fa_dec_smem) +
				(uint32_t)(warp * ST * CFG::STAGE);
	auto tile_key0 = [&](int j) { return (w.n_begin + warp + j * NW) * TK; };
	auto load = [&](int j) { /* key tile j of the warp into its stage j % ST (key0 < lk) */
		const int n0 = tile_key0(j);
		const uint32_t a = a_ring + (uint32_t)((j % ST) * CFG::STAGE);
		warp_load<KT>(a, lane, kbase + n0 * kss, kss, lk - n0);
		warp_load<KT>(a + KT::BYTES, lane, vbase + n0 * vss, vss, lk - n0);
	};
#pragma unroll
	for (int s = 0; s < ST - 1; ++s) { /* empty groups keep the counting uniform */
		if (s < nt)
			load(s);
		fa_mma::fa_mma_cp_async_commit();
	}

	/* the cluster merge's inbox barrier (tail_cluster): this CTA's slice
	 * of the column pairs from every range, and every range's (M, L) of
	 * every row */
	__shared__ __align__(8) uint64_t s_inbar;
	const uint32_t a_inbar = fa_mma::fa_mma_smem_addr(&s_inbar);
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
	if constexpr (MODE == DEC_CLUSTER) {
		if (prm.splits > 1) {
			if (dec_async(prm.splits) && tid == 0) {
				const int S = prm.splits;
				const dec_slice sl = dec_slice_of(rows * (D / 2), S, w.sp);
				dec_bar_init(a_inbar, (uint32_t)(S * ((sl.i1 - sl.i0) * 8 + rows * 8)));
			}
			/* waited on before the first store into a peer: every CTA of
			 * the cluster has started (its shared memory is its own) and
			 * has set up its inbox barrier */
			dec_cluster_arrive_relaxed();
		}
	}
#endif

	/* Q as the A operand, straight from global memory (16 rows, once):
	 * a0 = Q[g][16ks + 2t4..], a1 = Q[g + 8][..], a2 = Q[g][16ks + 8 + 2t4..],
	 * a3 = Q[g + 8][16ks + 8 + ..]; rows past the tile's rows are zeros and
	 * attend no key. Each lane also keeps the allowed keys of its two rows. */
	int lo[2], hi[2];
	const uint16_t *qrow[2];
#pragma unroll
	for (int hf = 0; hf < 2; ++hf) {
		const int R = g + 8 * hf;
		int h, i;
		lo[hf] = hi[hf] = 0;
		qrow[hf] = NULL;
		if (R < rows) {
			fa_cta_row_head_pos(1, h0, lq, R, &h, &i);
			qrow[hf] = prm.q + fa_q_offset(&p, prm.cu_q, b, i, h);
			fa_mask_range(p.mask, i, lq, lk, p.window, &lo[hf], &hi[hf]);
		}
	}
	/* the output rows' addresses, once, for every path's stores
	 * (store_pair; each path passes a CTA barrier before it stores) */
	__shared__ uint16_t *s_orow[FA_DECODE_ROWS];
	if (tid < rows) {
		int h, i;
		fa_cta_row_head_pos(1, h0, lq, tid, &h, &i);
		s_orow[tid] = prm.o + fa_o_offset(&p, prm.cu_q, b, i, h);
	}
	uint32_t qf[CFG::QREG ? KS : 1][4];
	const uint32_t a_q = fa_mma::fa_mma_smem_addr(fa_dec_smem) + (uint32_t)CFG::Q_OFF;
	if constexpr (CFG::QREG) {
		fa_mma::static_for<KS>([&](auto ks_c) {
			constexpr int ks = decltype(ks_c)::value;
			const int c = 16 * ks + 2 * t4;
			qf[ks][0] = qrow[0] ? *reinterpret_cast<const uint32_t *>(qrow[0] + c) : 0u;
			qf[ks][1] = qrow[1] ? *reinterpret_cast<const uint32_t *>(qrow[1] + c) : 0u;
			qf[ks][2] = qrow[0] ? *reinterpret_cast<const uint32_t *>(qrow[0] + c + 8) : 0u;
			qf[ks][3] = qrow[1] ? *reinterpret_cast<const uint32_t *>(qrow[1] + c + 8) : 0u;
		});
	} else {
		/* the 16 x D tile, 16-byte chunks into fa_mma::tile's layout;
		 * rows past the tile's rows are zeros */
		for (int u = tid; u < FA_DECODE_ROWS * (D / 8); u += NT) {
			const int r = u / (D / 8), c = u - r * (D / 8);
			uint4 v = make_uint4(0u, 0u, 0u, 0u);
			if (r < rows) {
				int h, i;
				fa_cta_row_head_pos(1, h0, lq, r, &h, &i);
				v = *reinterpret_cast<const uint4 *>(prm.q + fa_q_offset(&p, prm.cu_q, b, i, h) +
								     c * 8);
			}
			*reinterpret_cast<uint4 *>(fa_dec_smem + CFG::Q_OFF + KT::at_rt(r, c) * 16) = v;
		}
		fa_mma::fa_mma_syncthreads();
	}
	/* A operand of rows 0..15, chunk pair 2 ks (flash_mma.cuh's Q addressing) */
	const fa_mma::lane_off<KT> qo((lane & 7) + ((lane >> 3) & 1) * 8, lane >> 4);

	/* fragment addressing of K (B of S, plain ldmatrix) and V (B of O,
	 * ldmatrix.trans): flash_mma.cuh's, for one 16-key tile */
	const fa_mma::lane_off<KT> ko((lane & 7) + (lane >> 4) * 8, (lane >> 3) & 1);
	const fa_mma::lane_off<KT> vo((lane & 7) + ((lane >> 3) & 1) * 8, lane >> 4);
	float o[NO][4];
	float m_run[2] = {-INFINITY, -INFINITY}, l_run[2] = {0.f, 0.f};
#pragma unroll
	for (int j = 0; j < NO; ++j)
		o[j][0] = o[j][1] = o[j][2] = o[j][3] = 0.f;
	const float c_log2 = prm.scale_log2;

	for (int j = 0; j < nt; ++j) {
		/* tile j is group j: ST - 1 + j groups committed, at most ST - 2
		 * pending means it landed for this lane; the warp barrier makes
		 * every lane's copies visible and ends every lane's reads of the
		 * stage the next copy overwrites (tile j - 1's) */
		fa_mma::fa_mma_cp_async_wait<ST - 2>();
		fa_mma::fa_mma_syncwarp();
		if (j + ST - 1 < nt)
			load(j + ST - 1);
		fa_mma::fa_mma_cp_async_commit();
		const uint32_t a_k = a_ring + (uint32_t)((j % ST) * CFG::STAGE);
		const uint32_t a_v = a_k + KT::BYTES;
		const int n0 = tile_key0(j);

		/* S = Q K^T: s[nn][e] is row (e >> 1) * 8 + g, key n0 + 8 nn + 2 t4 + (e & 1) */
		float s[2][4];
		fa_mma::static_for<KS>([&](auto ks_c) {
			constexpr int ks = decltype(ks_c)::value;
			uint32_t kb[4], qa[4];
			if constexpr (CFG::QREG) {
#pragma unroll
				for (int e = 0; e < 4; ++e)
					qa[e] = qf[ks][e];
			} else {
				fa_mma::ldsm<2 * ks, 0>(qa, a_q, qo);
			}
			fa_mma::ldsm<2 * ks, 0>(kb, a_k, ko);
			if constexpr (ks == 0) {
				fa_mma::fa_mma_16816_zero<T>(s[0], qa, kb[0], kb[1]);
				fa_mma::fa_mma_16816_zero<T>(s[1], qa, kb[2], kb[3]);
			} else {
				fa_mma::fa_mma_16816<T>(s[0], qa, kb[0], kb[1]);
				fa_mma::fa_mma_16816<T>(s[1], qa, kb[2], kb[3]);
			}
		});

		/* mask, only on tiles some row may not see whole (edges, the
		 * diagonal, keys past the sequence) */
		if (!fa_cta_chunk_full(&w, n0, TK)) {
			const int kb0 = n0 + 2 * t4;
#pragma unroll
			for (int hf = 0; hf < 2; ++hf)
#pragma unroll
				for (int nn = 0; nn < 2; ++nn)
#pragma unroll
					for (int e = 2 * hf; e < 2 * hf + 2; ++e)
						if (!fa_cta_key_allowed(8 * nn + (e & 1), lo[hf] - kb0,
									hi[hf] - kb0, pfx - kb0))
							s[nn][e] = -INFINITY;
		}

		/* online softmax in the exp2 domain (fa_cta.h's rules) */
		float alpha[2];
		int grow = 0;
#pragma unroll
		for (int hf = 0; hf < 2; ++hf) {
			float mx = fmaxf(fmaxf(s[0][2 * hf], s[0][2 * hf + 1]),
					 fmaxf(s[1][2 * hf], s[1][2 * hf + 1]));
			mx = fmaxf(mx, fa_mma::fa_mma_shfl_xor(mx, 1));
			mx = fmaxf(mx, fa_mma::fa_mma_shfl_xor(mx, 2));
			mx *= c_log2;
			const bool up = fa_online_moves(m_run[hf], mx);
			alpha[hf] = up ? fa_mma::fa_mma_exp2(m_run[hf] - mx) : 1.f;
			m_run[hf] = up ? mx : m_run[hf];
			grow |= up;
		}
		if (fa_mma::fa_mma_any(grow)) {
#pragma unroll
			for (int jj = 0; jj < NO; ++jj) {
				o[jj][0] *= alpha[0];
				o[jj][1] *= alpha[0];
				o[jj][2] *= alpha[1];
				o[jj][3] *= alpha[1];
			}
		}
#pragma unroll
		for (int hf = 0; hf < 2; ++hf) {
			const float m_use = fa_online_m_use(m_run[hf]);
			float sum = 0.f;
#pragma unroll
			for (int nn = 0; nn < 2; ++nn)
#pragma unroll
				for (int e = 2 * hf; e < 2 * hf + 2; ++e) {
					const float pv = fa_mma::fa_mma_exp2(fmaf(s[nn][e], c_log2, -m_use));
					s[nn][e] = pv;
					sum += pv;
				}
			l_run[hf] = l_run[hf] * alpha[hf] + sum;
		}

		/* O += P V: the C fragments of S are the A operand of one k16 step */
		const uint32_t pa[4] = {fa_mma::fa_mma_pack2<T>(s[0][0], s[0][1]),
					fa_mma::fa_mma_pack2<T>(s[0][2], s[0][3]),
					fa_mma::fa_mma_pack2<T>(s[1][0], s[1][1]),
					fa_mma::fa_mma_pack2<T>(s[1][2], s[1][3])};
		fa_mma::static_for<NO / 2>([&](auto dp_c) {
			constexpr int dp = decltype(dp_c)::value;
			uint32_t vb[4];
			fa_mma::ldsm_t<2 * dp, 0>(vb, a_v, vo);
			fa_mma::fa_mma_16816<T>(o[2 * dp], pa, vb[0], vb[1]);
			fa_mma::fa_mma_16816<T>(o[2 * dp + 1], pa, vb[2], vb[3]);
		});
	}

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
	if constexpr (MODE == DEC_CLUSTER) {
		if (prm.splits > 1 && dec_async(prm.splits)) {
			tail_cluster<CFG, T>(prm, s_orow, rows, w.sp, tid, o, m_run, l_run,
					     fa_dec_smem, a_inbar);
			return;
		}
	}
#endif

	/* ---- merge the warps: (m, l, O) of each through shared memory, which
	 * every warp's ring is done with after the barrier ---- */
	fa_mma::fa_mma_cp_async_wait<0>();
	fa_mma::fa_mma_syncthreads();
	float *const s_o = reinterpret_cast<float *>(fa_dec_smem); /* [NW][16][DS] */
	float *const s_m = s_o + NW * FA_DECODE_ROWS * DS;          /* [NW][16] */
	float *const s_l = s_m + NW * FA_DECODE_ROWS;               /* [NW][16] */
	float *const s_wt = s_l + NW * FA_DECODE_ROWS;              /* [16][NW] */
	float *const s_lse = s_wt + FA_DECODE_ROWS * NW;            /* [16] */
	/* the tile's real rows only: with up to 8 (GQA decode) the second
	 * half of the fragments (rows g + 8) holds none */
#pragma unroll
	for (int hf = 0; hf < 2; ++hf) {
		if (hf == 1 && rows <= 8)
			break;
		const int R = g + 8 * hf, r = warp * FA_DECODE_ROWS + R;
		const float l = fa_mma::quad_sum(l_run[hf]);
		if (R < rows) {
			if (t4 == 0) {
				s_m[r] = m_run[hf];
				s_l[r] = l;
			}
#pragma unroll
			for (int jj = 0; jj < NO; ++jj)
				*reinterpret_cast<float2 *>(s_o + r * DS + 8 * jj + 2 * t4) =
					make_float2(o[jj][2 * hf], o[jj][2 * hf + 1]);
		}
	}
	fa_mma::fa_mma_syncthreads();
	/* each warp's weight in each row, once: thread r NW + v of the first
	 * 16 NW takes warp v of row r, the NW lanes of a row reduce by
	 * shuffles; weight exp2(m_v - mu) / l (0 for a row with no key) and
	 * the row's log2-sum-exp2 for the merge of the key ranges */
	if (tid < FA_DECODE_ROWS * NW) {
		const int r = tid / NW, v = tid - r * NW, rr = v * FA_DECODE_ROWS + r;
		const bool real = r < rows;
		const float m = real ? s_m[rr] : -INFINITY;
		float mx = m;
#pragma unroll
		for (int d = NW / 2; d > 0; d >>= 1)
			mx = fmaxf(mx, fa_mma::fa_mma_shfl_xor(mx, d));
		const float wt = fa_mma::fa_mma_exp2(m - fa_online_m_use(mx)); /* no key in any warp: 0 */
		float l = real ? wt * s_l[rr] : 0.f;
#pragma unroll
		for (int d = NW / 2; d > 0; d >>= 1)
			l += fa_mma::fa_mma_shfl_xor(l, d);
		if (real) {
			s_wt[tid] = wt * fa_online_inv_l(l); /* no allowed key: zeros */
			if (v == 0)
				s_lse[r] = fa_online_lse(mx, l);
		}
	}
	fa_mma::fa_mma_syncthreads();

	const int sp = w.sp;
	const uint32_t a_in = fa_mma::fa_mma_smem_addr(fa_dec_smem) + (uint32_t)CFG::IN_OFF;
	const uint32_t a_in_lse = a_in + 8u * CFG::IN_PAIRS;
	const int64_t tok0 = fa_seq_q_start(&p, prm.cu_q, b);
	const int items = rows * (D / 2);
	if constexpr (MODE == DEC_CLUSTER) { /* every row's lse into every peer's inbox */
		if (prm.splits > 1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
			/* every peer has started; without this wait the stores of a
			 * forced cluster of 9-16 could reach a peer that racecheck
			 * finds "might not have entered yet" */
			dec_cluster_wait();
#endif
			for (int u = tid; u < rows * prm.splits; u += NT)
				push_lse(u / prm.splits, u % prm.splits, sp, s_lse[u / prm.splits], a_in_lse);
		}
	}
	for (int idx = tid; idx < items; idx += NT) {
		const int r = idx / (D / 2), c = 2 * (idx - r * (D / 2));
		float ox = 0.f, oy = 0.f;
#pragma unroll
		for (int v = 0; v < NW; ++v) {
			const float wt = s_wt[r * NW + v];
			const float2 ov =
				*reinterpret_cast<const float2 *>(s_o + (v * FA_DECODE_ROWS + r) * DS + c);
			ox = fmaf(wt, ov.x, ox);
			oy = fmaf(wt, ov.y, oy);
		}
		if (prm.splits == 1) {
			store_pair<T>(s_orow[r], c, ox, oy);
		} else if constexpr (MODE == DEC_CLUSTER) {
			push_partial(prm.splits, sp, items, idx, ox, oy, a_in, a_inbar);
		} else {
			int h, i;
			fa_cta_row_head_pos(1, h0, lq, r, &h, &i);
			const int64_t wr = (int64_t)sp * prm.ws_rows + (tok0 + i) * p.heads + h;
			*reinterpret_cast<float2 *>(prm.ws_o + wr * D + c) = make_float2(ox, oy);
			if (c == 0) /* no key in the range: -inf, weight 0 in the merge */
				prm.ws_lse[wr] = s_lse[r];
		}
	}
	if constexpr (MODE == DEC_CLUSTER) {
		if (prm.splits > 1)
			merge_pushed<D, NT, T>(
				prm, s_orow, rows, tid,
				reinterpret_cast<const float2 *>(fa_dec_smem + CFG::IN_OFF),
				reinterpret_cast<const float *>(fa_dec_smem + CFG::IN_OFF + 8 * CFG::IN_PAIRS));
	}
	if constexpr (MODE == DEC_LAST) {
		/* the last CTA of this (sequence, KV head) to arrive merges (the
		 * threadFenceReduction pattern: partials visible device-wide
		 * before the count, read after it) */
		__shared__ unsigned int s_last;
		const int64_t unit = (int64_t)b * p.kv_heads + w.hk;
		__threadfence();
		fa_mma::fa_mma_syncthreads();
		if (tid == 0)
			s_last = atomicAdd(&fa_dec_count[unit], 1u) == (unsigned)prm.splits - 1;
		fa_mma::fa_mma_syncthreads();
		if (!s_last)
			return;
		__threadfence();
		merge_splits<D, NT, T>(prm, s_orow, h0, lq, rows, tok0, tid, s_o);
		if (tid == 0)
			fa_dec_count[unit] = 0; /* for the next launch */
	}
}

/* SMs of the current device, 0 when unknown. */
static int64_t device_sms()
{
	int sms;
	(void)fa_cuda_device_attr(cudaDevAttrMultiProcessorCount, &sms); /* 0 when unknown */
	return sms;
}

template <class CFG>
static int splits_of(const struct fa_problem *p, int requested)
{
	return fa_decode_splits((int64_t)p->batch * p->kv_heads,
				(p->kv_len + FA_DECODE_TILE - 1) / FA_DECODE_TILE,
				device_sms() * CFG::MINB, p->batch, requested);
}

template <class CFG>
static size_t workspace_of(const struct fa_problem *p, int requested)
{
	const int s = splits_of<CFG>(p, requested);
	return s > 1 ? (size_t)s * (size_t)p->total_q * (size_t)p->heads * (CFG::D + 1) * sizeof(float)
		     : 0;
}

/* The launch of decode_kernel<CFG, ., DEC_CLUSTER> as clusters of `size`
 * CTAs along z, one per KV head of a sequence: grid (1, kv_heads, batch x
 * size), CFG's block and shared memory; *at (which cfg points to) holds
 * the cluster's dimension. The occupancy query and the launch both take it. */
template <class CFG>
static cudaLaunchConfig_t cluster_config(int kv_heads, int batch, int size, cudaStream_t st,
					 cudaLaunchAttribute *at)
{
	cudaLaunchConfig_t cfg = {};
	cfg.gridDim = dim3(1, (unsigned)kv_heads, (unsigned)(batch * size));
	cfg.blockDim = dim3(CFG::NT);
	cfg.dynamicSmemBytes = CFG::SMEM_BYTES;
	cfg.stream = st;
	at->id = cudaLaunchAttributeClusterDimension;
	at->val.clusterDim.x = 1;
	at->val.clusterDim.y = 1;
	at->val.clusterDim.z = (unsigned)size;
	cfg.attrs = at;
	cfg.numAttrs = 1;
	return cfg;
}

/* How many clusters of `size` CTAs of kernel fn (CFG's block and shared
 * memory) the current device holds at once: 0 where it has no clusters
 * (before sm_90) or the size does not fit. Asked of the driver once per
 * (device, size) and kept: the query must not sit between the events that
 * time a launch. */
template <class CFG, class K>
static int clusters_resident(K *fn, int size)
{
	static int known[FA_DEC_DEVICES][FA_DECODE_CLUSTER_MAX + 1]; /* count + 1; 0 = not asked */
	int dev = 0, major = 0;
	if (size < 2 || size > FA_DECODE_CLUSTER_MAX || cudaGetDevice(&dev) != cudaSuccess ||
	    dev < 0 || dev >= FA_DEC_DEVICES) {
		(void)cudaGetLastError();
		return 0;
	}
	if (known[dev][size])
		return known[dev][size] - 1;
	int n = 0;
	if (fa_cuda_device_attr(cudaDevAttrComputeCapabilityMajor, &major) == 0 && major >= 9) {
		cudaLaunchAttribute at;
		const cudaLaunchConfig_t cfg = cluster_config<CFG>(1, 1, size, 0, &at);
		if (cudaOccupancyMaxActiveClusters(&n, fn, &cfg) != cudaSuccess) {
			(void)cudaGetLastError();
			n = 0;
		}
	}
	known[dev][size] = n + 1;
	return n;
}

template <class CFG, class T>
static int launch_typed(const struct fa_launch_args *a, int requested, int merge)
{
	static const cudaError_t attr_err = [] {
		cudaError_t e = fa_mma::configure_fn(decode_kernel<CFG, T, DEC_WS>, CFG::SMEM_BYTES);
		if (e == cudaSuccess)
			e = fa_mma::configure_fn(decode_kernel<CFG, T, DEC_LAST>, CFG::SMEM_BYTES);
		if (e == cudaSuccess)
			e = fa_mma::configure_fn(decode_kernel<CFG, T, DEC_CLUSTER>, CFG::SMEM_BYTES);
		if (e == cudaSuccess) { /* clusters of 16 (more than the portable 8), where there are */
			int major = 0;
			if (fa_cuda_device_attr(cudaDevAttrComputeCapabilityMajor, &major) == 0 &&
			    major >= 9)
				e = cudaFuncSetAttribute(decode_kernel<CFG, T, DEC_CLUSTER>,
							 cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
		}
		return e;
	}(); /* once */
	if (attr_err != cudaSuccess)
		return (int)attr_err;
	const struct fa_problem *p = a->p;
	if (p->batch <= 0 || p->heads <= 0 || p->total_q <= 0)
		return 0;
	params prm;
	memset(&prm, 0, sizeof prm);
	prm.p = *p;
	prm.q = static_cast<const uint16_t *>(a->q);
	prm.k = static_cast<const uint16_t *>(a->k);
	prm.v = static_cast<const uint16_t *>(a->v);
	prm.o = static_cast<uint16_t *>(a->o);
	prm.cu_q = a->cu_seqlens_q;
	prm.cu_k = a->cu_seqlens_k;
	prm.prefix_lens = a->prefix_lens;
	prm.scale_log2 = p->scale * 1.4426950408889634f; /* log2(e) */
	prm.group = p->heads / p->kv_heads;
	prm.packed = 1;
	prm.m_tiles = 1;
	prm.splits = splits_of<CFG>(p, requested);
	prm.ws_rows = (int64_t)p->total_q * p->heads;
	if (prm.splits > 1) {
		if (!a->workspace || a->workspace_bytes < workspace_of<CFG>(p, requested))
			return (int)cudaErrorInvalidValue; /* the harness allocates workspace_bytes() */
		prm.ws_o = static_cast<float *>(a->workspace);
		prm.ws_lse = prm.ws_o + (int64_t)prm.splits * prm.ws_rows * CFG::D;
	}
	cudaStream_t st = fa_cuda_stream_of(a);
	const dim3 grid(1, (unsigned)p->kv_heads, (unsigned)(p->batch * prm.splits));
	const int64_t units = (int64_t)p->batch * p->kv_heads;
	if (prm.splits > 1 && (merge == FA_DECODE_MERGE_CLUSTER || merge == FA_DECODE_MERGE_AUTO)) {
		/* a cluster per KV head where the device has clusters of the
		 * split's size (fa_decode_cluster_splits: auto only when they are
		 * all resident at once, maybe with fewer ranges) */
		int resident[FA_DECODE_CLUSTER_MAX + 1] = {0};
		for (int c = 2; c <= FA_DECODE_CLUSTER_MAX && c <= prm.splits; ++c)
			resident[c] = clusters_resident<CFG>(decode_kernel<CFG, T, DEC_CLUSTER>, c);
		const int cs = fa_decode_cluster_splits(prm.splits, units, resident,
							merge == FA_DECODE_MERGE_CLUSTER, requested <= 0);
		if (cs > 0) {
			prm.splits = cs; /* <= the workspace's count: the cluster needs none */
			cudaLaunchAttribute at;
			const cudaLaunchConfig_t cfg =
				cluster_config<CFG>(p->kv_heads, p->batch, cs, st, &at);
			const cudaError_t e =
				cudaLaunchKernelEx(&cfg, decode_kernel<CFG, T, DEC_CLUSTER>, prm);
			return e != cudaSuccess ? (int)e : (int)cudaGetLastError();
		}
	}
	const int fuse = prm.splits > 1 && units <= FA_DEC_COUNTERS &&
			 (merge == FA_DECODE_MERGE_CTA || merge == FA_DECODE_MERGE_CLUSTER ||
			  (merge == FA_DECODE_MERGE_AUTO && prm.group * p->q_len <= FA_DECODE_FUSE_ROWS));
	if (fuse) {
		decode_kernel<CFG, T, DEC_LAST><<<grid, CFG::NT, CFG::SMEM_BYTES, st>>>(prm);
		return (int)cudaGetLastError();
	}
	decode_kernel<CFG, T, DEC_WS><<<grid, CFG::NT, CFG::SMEM_BYTES, st>>>(prm);
	if (prm.splits > 1) {
		const cudaError_t e = cudaGetLastError();
		if (e != cudaSuccess)
			return (int)e;
		fa_mma::combine_kernel<CFG::D, T><<<(unsigned)((prm.ws_rows + 3) / 4), 128, 0, st>>>(prm);
	}
	return (int)cudaGetLastError();
}

template <class CFG>
static int launch_cfg(const struct fa_launch_args *a, int requested, int merge)
{
	if (a->p->dtype == FA_DTYPE_BF16)
		return launch_typed<CFG, fa_mma::bf16_t>(a, requested, merge);
	return launch_typed<CFG, fa_mma::fp16_t>(a, requested, merge);
}

} /* namespace fa_dec */

extern "C" int fa_cuda_decode_smem_bytes(int d, int ring)
{
	return d == 64 ? fa_dec::cfg64::SMEM_BYTES
	       : d == 128 ? (ring == 1   ? fa_dec::cfg128s6::SMEM_BYTES
			     : ring == 2 ? fa_dec::cfg128w8::SMEM_BYTES
					 : fa_dec::cfg128::SMEM_BYTES)
	       : d == 256 ? fa_dec::cfg256::SMEM_BYTES
			  : 0;
}

extern "C" size_t fa_cuda_decode_workspace(const struct fa_problem *p, int splits, int ring)
{
	switch (p->head_dim) {
	case 64: return fa_dec::workspace_of<fa_dec::cfg64>(p, splits);
	case 128:
		return ring == 1   ? fa_dec::workspace_of<fa_dec::cfg128s6>(p, splits)
		       : ring == 2 ? fa_dec::workspace_of<fa_dec::cfg128w8>(p, splits)
				   : fa_dec::workspace_of<fa_dec::cfg128>(p, splits);
	case 256: return fa_dec::workspace_of<fa_dec::cfg256>(p, splits);
	default: return 0;
	}
}

extern "C" int fa_cuda_decode_launch(const struct fa_launch_args *a, int splits, int merge,
				     int ring)
{
	if (!fa_decode_fits(a->p, NULL))
		return (int)cudaErrorInvalidValue;
	if (((uintptr_t)a->q | (uintptr_t)a->k | (uintptr_t)a->v | (uintptr_t)a->o) % 16 != 0)
		return (int)cudaErrorMisalignedAddress; /* 16-byte copies from a base that is not */
	switch (a->p->head_dim) {
	case 64: return fa_dec::launch_cfg<fa_dec::cfg64>(a, splits, merge);
	case 128:
		return ring == 1   ? fa_dec::launch_cfg<fa_dec::cfg128s6>(a, splits, merge)
		       : ring == 2 ? fa_dec::launch_cfg<fa_dec::cfg128w8>(a, splits, merge)
				   : fa_dec::launch_cfg<fa_dec::cfg128>(a, splits, merge);
	default: return fa_dec::launch_cfg<fa_dec::cfg256>(a, splits, merge);
	}
}
