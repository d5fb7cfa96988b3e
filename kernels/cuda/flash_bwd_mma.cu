/* flash_bwd_mma.cu - cuda_flash_bwd_mma: the FlashAttention-2 backward on
 * tensor cores (mma.sync m16n8k16, fp16 or bf16 inputs, fp32 accumulators),
 * with the primitives and shared-memory tiles of the forward
 * (flash_mma.cuh: ldmatrix, cp.async, the swizzled tile layout). Its
 * forward is cuda_flash_simt, which writes the log-sum-exp.
 *
 * Three kernels on the backend's stream:
 *   1. delta: D_i = rowsum(dO_i * O_i) in fp32, one warp per query row,
 *      into the workspace (the dQ accumulator is cleared beside it).
 *   2. the main kernel: one CTA per (key block of BN keys, KV head,
 *      sequence), or per query head under split=1, started in key-block-major
 *      order. K and V of the block stay in shared memory; the CTA walks
 *      every query head of the GQA group (or its one) and, for each, the
 *      query blocks of BM rows that may see a key of the block
 *      (fa_cta_rows_for_keys: the forward's masks seen from the keys), Q,
 *      dO, lse and D double-buffered with cp.async. Per query block:
 *        S^T = K Q^T and dP^T = V dO^T (warp (wk, wd): keys 16 MT wk..,
 *        queries wd BM/NWD..), P^T = exp2(S^T scale log2e - lse log2e) from
 *        the stored LSE (0 where the mask hides the pair or the row attends
 *        no key: lse = +inf), dS^T = P^T (dP^T - D); P^T and dS^T go to
 *        shared memory in the input type;
 *        dV += P^T dO and dK += dS^T Q in registers (warp (wk, wd): keys 16
 *        MT wk.., column slice wd of whole 16-column groups);
 *        dQ += dS K (warp: 16 query rows and a column slice) into fp32:
 *        atomics into one accumulator (dq=atomic, the default), or stored
 *        into this key block's own partial (dq=det).
 *      The group's heads are summed inside the CTA, so dK and dV are each
 *      written once, by one CTA, in a fixed order: no race, no atomics;
 *      under split=1 each CTA stores its head's fp32 dK/dV partial.
 *   3. dQ: scale times the accumulator (dq=atomic) or the sum of the key
 *      blocks' partials in block order (dq=det: bit-identical from run to
 *      run), converted to the input type.
 *   4. split=1 with GQA: dK, dV = the group's partials summed in head order.
 * Head sizes (computed width, key block, warps):
 *   64, 128 and 72/80 (computed as 80, 72's columns 72..79 zero-filled by
 *   cp.async) under bn=128, the default: 128 keys, 8 warps of 32 keys x
 *   half the columns (FlashAttention-2's layout), one CTA per SM;
 *   64, 96, 128, 192/128 (bn=64 for 64 and 128): 64 keys, 8 warps (4 x 16
 *   keys, 2 column halves); 72/80 under bn=64: 64 keys, 4 warps; 256: 32
 *   keys, 8 warps (2 x 16 keys, 4 column slices).
 * Query blocks have 64 rows. Rows must be 16-byte aligned (strides multiples
 * of 8 elements); any other head size is refused by supports().
 */
#include <math.h>
#include <stdio.h>

#include "flash_bwd_common.cuh"
#include "flash_mma.cuh"
#include "problem_check.h"

namespace fa_bwd_mma {

using fa_mma::bf16_t;
using fa_mma::fp16_t;
using fa_mma::static_for;
using fa_mma::tile;

constexpr float LOG2E = 1.4426950408889634f;
constexpr int PARAM_DQ = 0;    /* 0 atomic, 1 det */
constexpr int PARAM_BN = 1;    /* keys per CTA of head sizes 64, 72/80, 128: 64 or 128 */
constexpr int PARAM_SPLIT = 2; /* 0 a CTA per kv head, 1 a CTA per query head */

/* First 16-column group of slice s when x columns (a multiple of 16) are cut
 * into ns slices of whole groups (80 in 2: 32 and 48 columns). */
constexpr int slo(int x, int ns, int s)
{
	return s * (x / 16) / ns;
}

/* One instance's shape: D, DV the computed head sizes (multiples of 16), BM
 * query rows per step, NWK x NWD warps (BN = 16 MT NWK keys per CTA; NWD
 * query slices in the score step, column slices in the dK/dV step); the
 * column slices are whole 16-column groups (slo), DKW, DVW, DQW the widest. */
template <int D_, int DV_, int BM_, int NWK_, int NWD_, int MINB_, int MT_ = 1>
struct config {
	static constexpr int D = D_, DV = DV_, BM = BM_, NWK = NWK_, NWD = NWD_, MINB = MINB_;
	static constexpr int MT = MT_; /* 16-key tiles per warp (score, dK/dV steps) */
	static constexpr int BN = 16 * MT * NWK;
	static constexpr int NW = NWK * NWD, NT = 32 * NW;
	static constexpr int QW = BM / NWD;   /* queries per warp, score step */
	static constexpr int DKW = 16 * ((D / 16 + NWD - 1) / NWD);  /* dK columns per warp */
	static constexpr int DVW = 16 * ((DV / 16 + NWD - 1) / NWD); /* dV columns per warp */
	static constexpr int NQR = BM / 16;   /* 16-row groups of the dQ step */
	static constexpr int NQD = NW / NQR;  /* column slices of the dQ step */
	static constexpr int DQW = 16 * ((D / 16 + NQD - 1) / NQD);  /* dQ columns per warp */
	static_assert(QW % 16 == 0 && D % 16 == 0 && DV % 16 == 0,
		      "query slices and head sizes must be multiples of 16");
	static_assert(NW % NQR == 0, "dQ step: warps must cover the row groups");
	using TK = tile<BN, D>;
	using TV = tile<BN, DV>;
	using TQ = tile<BM, D>;
	using TO = tile<BM, DV>;
	using TP = tile<BN, BM>;
	static constexpr int OFF_K = 0;
	static constexpr int OFF_V = OFF_K + TK::BYTES;
	static constexpr int OFF_Q = OFF_V + TV::BYTES;           /* 2 stages */
	static constexpr int OFF_DO = OFF_Q + 2 * TQ::BYTES;      /* 2 stages */
	static constexpr int OFF_P = OFF_DO + 2 * TO::BYTES;
	static constexpr int OFF_DS = OFF_P + TP::BYTES;
	static constexpr int OFF_LSE = OFF_DS + TP::BYTES;        /* 2 x BM floats */
	static constexpr int OFF_DELTA = OFF_LSE + 2 * BM * 4;    /* 2 x BM floats */
	static constexpr int SMEM_BYTES = OFF_DELTA + 2 * BM * 4;
};

/* What the main kernel needs besides the problem. */
struct args {
	struct fa_problem p;
	const uint16_t *q, *k, *v, *d_o;
	const float *lse, *delta;
	uint16_t *dk, *dv;
	float *dq_acc;  /* dq=atomic: [total_q][heads][head_dim]; dq=det: one such per key block */
	float *dk_part, *dv_part; /* split with group > 1: [group][total_k][kv_heads][head_dim(_v)] */
	int det, split;
	int hpc;        /* query heads per CTA: the group, or 1 under split */
	int64_t dq_rows; /* total_q * heads */
	const int32_t *cu_q, *cu_k, *prefix_lens;
};

/* Byte offset of (row, element col) in tile TL (col even for 32-bit access). */
template <class TL>
static __device__ __forceinline__ uint32_t at(int row, int col)
{
	return (uint32_t)TL::at_rt(row, col >> 3) * 16u + (uint32_t)(col & 7) * 2u;
}

/* cp.async of `rows` rows of a ROWS x COLS tile: row r from src + row_off(r)
 * (elements), its first `width` columns; other chunks and rows zero-filled. */
template <class TL, int NT, class RowFn>
static __device__ __forceinline__ void load_tile(uint32_t base, int tid, const uint16_t *src,
						 int rows, int width, RowFn row_off)
{
	for (int e = tid; e < TL::ROWS * TL::C; e += NT) {
		const int r = e / TL::C, c = e - r * TL::C;
		const bool ok = r < rows && c * 8 < width;
		const uint16_t *g = ok ? src + row_off(r) + c * 8 : src;
		fa_mma::fa_mma_cp_async_16<0>(base + (uint32_t)TL::at_rt(r, c) * 16u, g, ok ? 16u : 0u);
	}
}

/* cp.async of one 4-byte word (src_size 0: zero-filled). */
static __device__ __forceinline__ void cp_async_4(uint32_t dst, const void *src, uint32_t n)
{
	asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(src), "r"(n)
		     : "memory");
}

/* row[0] += x, row[1] += y atomically (row 8-byte aligned): one vector
 * reduction on sm_90, two scalar ones before. */
static __device__ __forceinline__ void add2(float *row, float x, float y)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
	atomicAdd((float2 *)row, make_float2(x, y));
#else
	atomicAdd(row, x);
	atomicAdd(row + 1, y);
#endif
}

/* 1 when every (query, key) pair of query rows [i0, i0 + BM) and keys
 * [j0, j0 + BN) is real and allowed: no per-element mask. */
static __device__ __forceinline__ bool block_full(const struct fa_problem &p, int lq, int lk,
						  int pfx, int i0, int bm, int j0, int bn)
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

template <class CFG, class T>
__global__ void __launch_bounds__(CFG::NT, CFG::MINB) bwd_kernel(const args a)
{
	constexpr int BM = CFG::BM, BN = CFG::BN, NT = CFG::NT;
	using TK = typename CFG::TK;
	using TV = typename CFG::TV;
	using TQ = typename CFG::TQ;
	using TO = typename CFG::TO;
	using TP = typename CFG::TP;
	extern __shared__ __align__(128) unsigned char smem[];
	const struct fa_problem &p = a.p;
	const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
	const int g = lane >> 2, t4 = lane & 3;
	/* the grid is (key blocks, heads, batch), but the blocks of one sequence
	 * are taken in key-block-major order, so every head's first key blocks
	 * (under a causal mask, the ones that see the most query rows) start
	 * first and the short ones fill the tail */
	const int lin = (int)(blockIdx.x + gridDim.x * blockIdx.y);
	const int b = blockIdx.z, kb = lin / (int)gridDim.y, hy = lin - kb * (int)gridDim.y;
	const int group = p.heads / p.kv_heads;
	/* split: this CTA's query head alone (hy), its dK and dV an fp32
	 * partial of the group's sum; else the kv head's whole group */
	const int hq0 = hy * a.hpc, hk = hq0 / group;
	fa_bwd::key_block kbk;
	if (!fa_bwd::key_block_of<BN, BM>(p, a.cu_q, a.cu_k, a.prefix_lens, b, kb, &kbk))
		return; /* the whole CTA: this sequence has fewer keys */
	const int lq = kbk.lq, lk = kbk.lk, j0 = kbk.j0, nk = kbk.nk, pfx = kbk.pfx;
	const int mb = kbk.mb, nmb = kbk.nmb, steps = a.hpc * nmb;
	const int64_t t0 = fa_seq_q_start(&p, a.cu_q, b);

	const uint32_t s0 = fa_mma::fa_mma_smem_addr(smem);
	const uint32_t sK = s0 + CFG::OFF_K, sV = s0 + CFG::OFF_V, sP = s0 + CFG::OFF_P,
		       sDS = s0 + CFG::OFF_DS;
	float *slse = (float *)(smem + CFG::OFF_LSE), *sdelta = (float *)(smem + CFG::OFF_DELTA);

	/* K and V of the block (with the first query block's group) */
	load_tile<TK, NT>(sK, tid, a.k, nk, p.head_dim,
			  [&](int r) { return fa_k_offset(&p, a.cu_k, b, j0 + r, hk); });
	load_tile<TV, NT>(sV, tid, a.v, nk, p.head_dim_v,
			  [&](int r) { return fa_v_offset(&p, a.cu_k, b, j0 + r, hk); });

	/* stage step s: Q, dO, lse, D of (head, query block) into buffer s & 1 */
	auto issue = [&](int s) {
		const int h = hq0 + s / nmb, i0 = (mb + s % nmb) * BM, st = s & 1;
		const int rows = lq - i0 < BM ? lq - i0 : BM;
		load_tile<TQ, NT>(s0 + CFG::OFF_Q + st * TQ::BYTES, tid, a.q, rows, p.head_dim,
				  [&](int r) { return fa_q_offset(&p, a.cu_q, b, i0 + r, h); });
		load_tile<TO, NT>(s0 + CFG::OFF_DO + st * TO::BYTES, tid, a.d_o, rows, p.head_dim_v,
				  [&](int r) { return fa_o_offset(&p, a.cu_q, b, i0 + r, h); });
		/* lse (+inf for a row that attends no key) and D with the tiles,
		 * asynchronously; padding rows read 0 (their P is masked to 0:
		 * a block with padding rows is never full) */
		for (int r = tid; r < BM; r += NT) {
			const bool ok = r < rows;
			const int64_t row = ok ? (t0 + i0 + r) * p.heads + h : 0;
			const uint32_t o = (uint32_t)(st * BM + r) * 4u;
			cp_async_4(s0 + CFG::OFF_LSE + o, a.lse + row, ok ? 4u : 0u);
			cp_async_4(s0 + CFG::OFF_DELTA + o, a.delta + row, ok ? 4u : 0u);
		}
	};
	if (steps > 0)
		issue(0);
	fa_mma::fa_mma_cp_async_commit();

	/* warp roles */
	const int wk = warp % CFG::NWK, wd = warp / CFG::NWK;
	const int kr0 = 16 * CFG::MT * wk;   /* this warp's keys (score, dK/dV steps) */
	const int q0 = wd * CFG::QW;         /* its queries in the score step */
	const int rq = warp % CFG::NQR, qd = warp / CFG::NQR; /* dQ step */
	const float scale_log2 = p.scale * LOG2E;
	/* the lanes' ldmatrix offsets (fa_mma::lane_off: the swizzle once, the
	 * rest immediates): pattern X (row l%8 + 8 ((l/8)%2), chunk l/16) for A
	 * from a [m][k] tile and .trans B from a [k][n] tile; pattern Y (row
	 * l%8 + 8 (l/16), chunk (l/8)%2) for B from a [n][k] tile and .trans A
	 * from a [k][m] tile */
	const int xr = (lane & 7) + ((lane >> 3) & 1) * 8, xc = lane >> 4;
	const int yr = (lane & 7) + (lane >> 4) * 8, yc = (lane >> 3) & 1;
	const fa_mma::lane_off<TK> lk_a(kr0 + xr, xc), lk_t(xr, xc);
	const fa_mma::lane_off<TV> lv_a(kr0 + xr, xc);
	const fa_mma::lane_off<TQ> lq_b(q0 + yr, yc), lq_t(xr, xc);
	const fa_mma::lane_off<TO> lo_b(q0 + yr, yc), lo_t(xr, xc);
	const fa_mma::lane_off<TP> lp_a(kr0 + xr, xc);
	const uint32_t ds_a = sDS + (uint32_t)TP::at_rt(yr, 2 * rq + yc) * 16u;
	static_assert(TP::P == 1 && TP::W == 0, "dS^T is one full panel of 64 queries");

	constexpr int MT = CFG::MT;
	float dk[MT][CFG::DKW / 8][4], dv[MT][CFG::DVW / 8][4];
	static_for<MT>([&](auto m) {
		constexpr int M = decltype(m)::value;
		static_for<CFG::DKW / 8>([&](auto n) {
			static_for<4>([&](auto e) {
				dk[M][decltype(n)::value][decltype(e)::value] = 0.f;
			});
		});
		static_for<CFG::DVW / 8>([&](auto n) {
			static_for<4>([&](auto e) {
				dv[M][decltype(n)::value][decltype(e)::value] = 0.f;
			});
		});
	});

	for (int s = 0; s < steps; s++) {
		const int st = s & 1;
		if (s + 1 < steps)
			issue(s + 1);
		fa_mma::fa_mma_cp_async_commit();
		fa_mma::fa_mma_cp_async_wait<1>();
		__syncthreads(); /* step s's tiles (and K, V) are in */
		const int h = hq0 + s / nmb, i0 = (mb + s % nmb) * BM;
		const uint32_t sQ = s0 + CFG::OFF_Q + st * TQ::BYTES;
		const uint32_t sO = s0 + CFG::OFF_DO + st * TO::BYTES;
		const float *lse_s = slse + st * BM, *del_s = sdelta + st * BM;

		/* ---- S^T = K Q^T, dP^T = V dO^T: 16 keys x QW queries ---- */
		float sc[MT][CFG::QW / 8][4], dp[MT][CFG::QW / 8][4];
		static_for<MT>([&](auto m) {
			static_for<CFG::QW / 8>([&](auto n) {
				static_for<4>([&](auto e) {
					constexpr int M = decltype(m)::value, N = decltype(n)::value,
						      E = decltype(e)::value;
					sc[M][N][E] = 0.f;
					dp[M][N][E] = 0.f;
				});
			});
		});
		static_for<CFG::D / 16>([&](auto kc) {
			constexpr int C = 2 * decltype(kc)::value;
			uint32_t af[MT][4];
			static_for<MT>([&](auto m) {
				fa_mma::ldsm<C, 16 * decltype(m)::value>(af[decltype(m)::value], sK, lk_a);
			});
			static_for<CFG::QW / 16>([&](auto nq) {
				constexpr int N = decltype(nq)::value;
				uint32_t bf[4];
				fa_mma::ldsm<C, 16 * N>(bf, sQ, lq_b);
				static_for<MT>([&](auto m) {
					constexpr int M = decltype(m)::value;
					fa_mma::fa_mma_16816<T>(sc[M][2 * N], af[M], bf[0], bf[1]);
					fa_mma::fa_mma_16816<T>(sc[M][2 * N + 1], af[M], bf[2], bf[3]);
				});
			});
		});
		static_for<CFG::DV / 16>([&](auto kc) {
			constexpr int C = 2 * decltype(kc)::value;
			uint32_t af[MT][4];
			static_for<MT>([&](auto m) {
				fa_mma::ldsm<C, 16 * decltype(m)::value>(af[decltype(m)::value], sV, lv_a);
			});
			static_for<CFG::QW / 16>([&](auto nq) {
				constexpr int N = decltype(nq)::value;
				uint32_t bf[4];
				fa_mma::ldsm<C, 16 * N>(bf, sO, lo_b);
				static_for<MT>([&](auto m) {
					constexpr int M = decltype(m)::value;
					fa_mma::fa_mma_16816<T>(dp[M][2 * N], af[M], bf[0], bf[1]);
					fa_mma::fa_mma_16816<T>(dp[M][2 * N + 1], af[M], bf[2], bf[3]);
				});
			});
		});

		/* ---- P^T, dS^T into shared memory ---- */
		const bool full = block_full(p, lq, lk, pfx, i0, BM, j0, BN);
		static_for<CFG::QW / 8>([&](auto n) {
			constexpr int N = decltype(n)::value;
			const int ql = q0 + 8 * N + 2 * t4; /* queries ql, ql + 1 */
			const float l0 = lse_s[ql] * LOG2E, l1 = lse_s[ql + 1] * LOG2E;
			const float d0 = del_s[ql], d1 = del_s[ql + 1];
			static_for<2 * MT>([&](auto hf) {
				constexpr int M = decltype(hf)::value / 2, H = decltype(hf)::value % 2;
				const int kl = kr0 + 16 * M + g + 8 * H; /* key */
				float pv[2], dsv[2];
				static_for<2>([&](auto ee) {
					constexpr int E = decltype(ee)::value;
					const float x = sc[M][N][2 * H + E];
					float pr = fa_mma::fa_mma_exp2(fmaf(x, scale_log2, -(E ? l1 : l0)));
					if (!full &&
					    !(i0 + ql + E < lq && j0 + kl < lk &&
					      fa_mask_allows(p.mask, i0 + ql + E, j0 + kl, lq, lk, pfx,
							     p.window)))
						pr = 0.f;
					pv[E] = pr;
					dsv[E] = pr * (dp[M][N][2 * H + E] - (E ? d1 : d0));
				});
				const uint32_t off = at<TP>(kl, ql);
				const uint32_t pw = fa_mma::fa_mma_pack2<T>(pv[0], pv[1]);
				const uint32_t dw = fa_mma::fa_mma_pack2<T>(dsv[0], dsv[1]);
				asm volatile("st.shared.u32 [%0], %1;\n" ::"r"(sP + off), "r"(pw) : "memory");
				asm volatile("st.shared.u32 [%0], %1;\n" ::"r"(sDS + off), "r"(dw) : "memory");
			});
		});
		__syncthreads(); /* P^T and dS^T complete */

		/* ---- dV += P^T dO, dK += dS^T Q: 16 keys x a column slice ---- */
		static_for<CFG::NWD>([&](auto wdc) {
			constexpr int WD = decltype(wdc)::value; /* the column slice, as a constant */
			if (wd != WD)
				return;
			static_for<BM / 16>([&](auto kq) {
				constexpr int C = 2 * decltype(kq)::value; /* query chunk */
				uint32_t ap[MT][4], ad[MT][4];
				static_for<MT>([&](auto m) {
					constexpr int M = decltype(m)::value;
					fa_mma::ldsm<C, 16 * M>(ap[M], sP, lp_a);
					fa_mma::ldsm<C, 16 * M>(ad[M], sDS, lp_a);
				});
				constexpr int VL = slo(CFG::DV, CFG::NWD, WD);
				constexpr int KL = slo(CFG::D, CFG::NWD, WD);
				static_for<slo(CFG::DV, CFG::NWD, WD + 1) - VL>([&](auto nd) {
					constexpr int N = decltype(nd)::value;
					uint32_t bf[4];
					fa_mma::ldsm_t<2 * (VL + N), 8 * C>(bf, sO, lo_t);
					static_for<MT>([&](auto m) {
						constexpr int M = decltype(m)::value;
						fa_mma::fa_mma_16816<T>(dv[M][2 * N], ap[M], bf[0], bf[1]);
						fa_mma::fa_mma_16816<T>(dv[M][2 * N + 1], ap[M], bf[2], bf[3]);
					});
				});
				static_for<slo(CFG::D, CFG::NWD, WD + 1) - KL>([&](auto nd) {
					constexpr int N = decltype(nd)::value;
					uint32_t bf[4];
					fa_mma::ldsm_t<2 * (KL + N), 8 * C>(bf, sQ, lq_t);
					static_for<MT>([&](auto m) {
						constexpr int M = decltype(m)::value;
						fa_mma::fa_mma_16816<T>(dk[M][2 * N], ad[M], bf[0], bf[1]);
						fa_mma::fa_mma_16816<T>(dk[M][2 * N + 1], ad[M], bf[2], bf[3]);
					});
				});
			});
		});

		/* ---- dQ += dS K: 16 query rows x DQW columns, into fp32 ---- */
		{
			float dq[CFG::DQW / 8][4];
			static_for<CFG::DQW / 8>([&](auto n) {
				static_for<4>([&](auto e) {
					dq[decltype(n)::value][decltype(e)::value] = 0.f;
				});
			});
			static_for<CFG::NQD>([&](auto qdc) {
				constexpr int QD = decltype(qdc)::value;
				if (qd != QD)
					return;
				static_for<BN / 16>([&](auto kk) {
					constexpr int K0 = 16 * decltype(kk)::value; /* key rows */
					uint32_t af[4];
					/* TP is one full panel: rows K0.. are K0 x 128 bytes on */
					fa_mma::fa_mma_ldsm_x4_trans<K0 * 128>(af, ds_a);
					constexpr int QL = slo(CFG::D, CFG::NQD, QD);
					static_for<slo(CFG::D, CFG::NQD, QD + 1) - QL>([&](auto nd) {
						constexpr int N = decltype(nd)::value;
						uint32_t bf[4];
						fa_mma::ldsm_t<2 * (QL + N), K0>(bf, sK, lk_t);
						fa_mma::fa_mma_16816<T>(dq[2 * N], af, bf[0], bf[1]);
						fa_mma::fa_mma_16816<T>(dq[2 * N + 1], af, bf[2], bf[3]);
					});
				});
			});
			float *dst = a.dq_acc + (a.det ? (int64_t)kb * a.dq_rows * p.head_dim : 0);
			static_for<2>([&](auto hf) {
				constexpr int H = decltype(hf)::value;
				const int i = i0 + 16 * rq + g + 8 * H;
				if (i < lq) {
					float *row = dst + ((t0 + i) * p.heads + h) * (int64_t)p.head_dim;
					static_for<CFG::DQW / 8>([&](auto n) {
						constexpr int N = decltype(n)::value;
						const int c = 16 * slo(CFG::D, CFG::NQD, qd) + 8 * N + 2 * t4;
						if (c < 16 * slo(CFG::D, CFG::NQD, qd + 1) && c < p.head_dim) {
							if (a.det) {
								row[c] = dq[N][2 * H];
								row[c + 1] = dq[N][2 * H + 1];
							} else {
								add2(row + c, dq[N][2 * H], dq[N][2 * H + 1]);
							}
						}
					});
				}
			});
		}
		__syncthreads(); /* the buffers of step s are used up */
	}
	fa_mma::fa_mma_cp_async_wait<0>(); /* no copy in flight at exit */

	/* ---- dK (scaled), dV: each element written once, by this CTA; under
	 * split with a group, this head's unscaled fp32 partial instead ---- */
	if (a.split && group > 1) {
		const int64_t krow0 = fa_seq_kv_start(&p, a.cu_k, b) + j0;
		const int64_t part = (int64_t)(hq0 % group) * p.total_k;
		static_for<2 * MT>([&](auto hf) {
			constexpr int M = decltype(hf)::value / 2, H = decltype(hf)::value % 2;
			const int kl = kr0 + 16 * M + g + 8 * H;
			if (kl < nk) {
				const int64_t row = (part + krow0 + kl) * p.kv_heads + hk;
				float *kp = a.dk_part + row * p.head_dim;
				float *vp = a.dv_part + row * p.head_dim_v;
				static_for<CFG::DKW / 8>([&](auto n) {
					constexpr int N = decltype(n)::value;
					const int c = 16 * slo(CFG::D, CFG::NWD, wd) + 8 * N + 2 * t4;
					if (c < 16 * slo(CFG::D, CFG::NWD, wd + 1) && c < p.head_dim)
						*(float2 *)(kp + c) = make_float2(dk[M][N][2 * H], dk[M][N][2 * H + 1]);
				});
				static_for<CFG::DVW / 8>([&](auto n) {
					constexpr int N = decltype(n)::value;
					const int c = 16 * slo(CFG::DV, CFG::NWD, wd) + 8 * N + 2 * t4;
					if (c < 16 * slo(CFG::DV, CFG::NWD, wd + 1) && c < p.head_dim_v)
						*(float2 *)(vp + c) = make_float2(dv[M][N][2 * H], dv[M][N][2 * H + 1]);
				});
			}
		});
		return;
	}
	static_for<2 * MT>([&](auto hf) {
		constexpr int M = decltype(hf)::value / 2, H = decltype(hf)::value % 2;
		const int kl = kr0 + 16 * M + g + 8 * H;
		if (kl < nk) {
			uint16_t *krow = a.dk + fa_k_offset(&p, a.cu_k, b, j0 + kl, hk);
			uint16_t *vrow = a.dv + fa_v_offset(&p, a.cu_k, b, j0 + kl, hk);
			static_for<CFG::DKW / 8>([&](auto n) {
				constexpr int N = decltype(n)::value;
				const int c = 16 * slo(CFG::D, CFG::NWD, wd) + 8 * N + 2 * t4;
				if (c < 16 * slo(CFG::D, CFG::NWD, wd + 1) && c < p.head_dim)
					*(uint32_t *)(krow + c) = fa_mma::fa_mma_pack2<T>(
						p.scale * dk[M][N][2 * H], p.scale * dk[M][N][2 * H + 1]);
			});
			static_for<CFG::DVW / 8>([&](auto n) {
				constexpr int N = decltype(n)::value;
				const int c = 16 * slo(CFG::DV, CFG::NWD, wd) + 8 * N + 2 * t4;
				if (c < 16 * slo(CFG::DV, CFG::NWD, wd + 1) && c < p.head_dim_v)
					*(uint32_t *)(vrow + c) =
						fa_mma::fa_mma_pack2<T>(dv[M][N][2 * H], dv[M][N][2 * H + 1]);
			});
		}
	});
}

/* The instances. */
using cfg64 = config<64, 64, 64, 4, 2, 2>;
using cfg80 = config<80, 80, 64, 4, 1, 2>;
using cfg96 = config<96, 96, 64, 4, 2, 2>;
using cfg128 = config<128, 128, 64, 4, 2, 2>;
using cfg192 = config<192, 128, 64, 4, 2, 1>;
using cfg256 = config<256, 256, 64, 2, 4, 1>;
/* bn=128, FlashAttention-2's layout: 128 keys, 8 warps of 32 keys x half
 * the columns (score step: 32 keys x 32 queries), one CTA per SM. */
using cfg64t = config<64, 64, 64, 4, 2, 1, 2>;
using cfg128t = config<128, 128, 64, 4, 2, 1, 2>;
using cfg80t = config<80, 80, 64, 4, 2, 1, 2>; /* dK/dV, dQ: slices of 32 and 48 */

/* The instance of head sizes (d, dv): its id (1..6), 0 when none. */
int instance_of(int d, int dv)
{
	if (d == 64 && dv == 64)
		return 1;
	if ((d == 72 && dv == 72) || (d == 80 && dv == 80))
		return 2;
	if (d == 96 && dv == 96)
		return 3;
	if (d == 128 && dv == 128)
		return 4;
	if (d == 192 && dv == 128)
		return 5;
	if (d == 256 && dv == 256)
		return 6;
	return 0;
}

/* The 128-key instance of instance inst (64: 7, 72/80: 9, 128: 8), or inst
 * itself where there is none. */
int wide_of(int inst)
{
	return inst == 1 ? 7 : inst == 2 ? 9 : inst == 4 ? 8 : inst;
}

int smem_of(int inst)
{
	switch (inst) {
	case 7: return cfg64t::SMEM_BYTES;
	case 8: return cfg128t::SMEM_BYTES;
	case 9: return cfg80t::SMEM_BYTES;
	case 1: return cfg64::SMEM_BYTES;
	case 2: return cfg80::SMEM_BYTES;
	case 3: return cfg96::SMEM_BYTES;
	case 4: return cfg128::SMEM_BYTES;
	case 5: return cfg192::SMEM_BYTES;
	case 6: return cfg256::SMEM_BYTES;
	default: return 0;
	}
}

int bn_of(int inst)
{
	switch (inst) {
	case 1: return cfg64::BN;
	case 2: return cfg80::BN;
	case 3: return cfg96::BN;
	case 4: return cfg128::BN;
	case 5: return cfg192::BN;
	case 7: return cfg64t::BN;
	case 8: return cfg128t::BN;
	case 9: return cfg80t::BN;
	default: return cfg256::BN;
	}
}

/* Workspace: D (fp32 per query row), then the dQ accumulator (fp32
 * [total_q][heads][head_dim]), once (atomic) or per key block (det). */
/* Dynamic shared memory a block may opt in to on the current device (0
 * when the runtime cannot say). */
int device_smem_optin()
{
	int v;
	(void)fa_cuda_device_attr(cudaDevAttrMaxSharedMemoryPerBlockOptin, &v); /* 0 when unknown */
	return v;
}

/* The instance that runs p under params: bn=128 (the default) takes the
 * 128-key instance where there is one and the device gives a block its
 * shared memory (161 KB at head size 128; sm_86/89 give 99 KB), else the
 * 64-key one. */
int instance_for(const struct fa_problem *p, const int32_t *params)
{
	const int inst = instance_of(p->head_dim, p->head_dim_v);
	const int bn = params ? params[PARAM_BN] : 128;
	const int w = wide_of(inst);
	if (bn != 128 || w == inst || smem_of(w) > device_smem_optin())
		return inst;
	return w;
}

/* CTAs of instance inst an SM holds at once (its MINB). */
int minb_of(int inst)
{
	switch (inst) {
	case 1: return cfg64::MINB;
	case 2: return cfg80::MINB;
	case 3: return cfg96::MINB;
	case 4: return cfg128::MINB;
	case 5: return cfg192::MINB;
	case 7: return cfg64t::MINB;
	case 8: return cfg128t::MINB;
	case 9: return cfg80t::MINB;
	default: return cfg256::MINB;
	}
}

/* Multiprocessors of the current device (0 when the runtime cannot say). */
int device_sms()
{
	int v;
	(void)fa_cuda_device_attr(cudaDevAttrMultiProcessorCount, &v); /* 0 when unknown */
	return v;
}

/* 1 when the group's heads run in their own CTAs with fp32 dK/dV partials:
 * split=1 under GQA, or split=2 (auto, the default) under GQA when a CTA
 * per kv head would leave SMs idle (fewer CTAs than the device holds at
 * once; the H100 run: 32/8 heads at 2k keys 76 -> 120 TFLOP/s, no gain from
 * 4k on). */
int split_of(const struct fa_problem *p, const int32_t *params)
{
	const int mode = params ? params[PARAM_SPLIT] : 2;
	if (!mode || p->kv_heads <= 0 || p->heads <= p->kv_heads)
		return 0;
	if (mode == 1)
		return 1;
	const int inst = instance_for(p, params);
	if (!inst)
		return 0;
	const int64_t ctas = (int64_t)((p->kv_len + bn_of(inst) - 1) / bn_of(inst)) *
			     p->kv_heads * p->batch;
	return ctas < (int64_t)device_sms() * minb_of(inst);
}

size_t dq_parts(const struct fa_problem *p, const int32_t *params)
{
	const int inst = instance_for(p, params);
	const int det = params ? params[PARAM_DQ] : 0;
	if (!inst || !det)
		return 1;
	const int bn = bn_of(inst);
	return (size_t)((p->kv_len + bn - 1) / bn);
}

template <class CFG, class T>
cudaError_t launch_main(const args &x, cudaStream_t st)
{
	static const cudaError_t attr = cudaFuncSetAttribute(
		bwd_kernel<CFG, T>, cudaFuncAttributeMaxDynamicSharedMemorySize, CFG::SMEM_BYTES);
	if (attr != cudaSuccess)
		return attr;
	const dim3 grid((unsigned)((x.p.kv_len + CFG::BN - 1) / CFG::BN),
			(unsigned)(x.split ? x.p.heads : x.p.kv_heads), (unsigned)x.p.batch);
	if (grid.x > 0 && grid.z > 0)
		bwd_kernel<CFG, T><<<grid, CFG::NT, CFG::SMEM_BYTES, st>>>(x);
	return cudaGetLastError();
}

template <class T>
cudaError_t launch_inst(int inst, const args &x, cudaStream_t st)
{
	switch (inst) {
	case 1: return launch_main<cfg64, T>(x, st);
	case 2: return launch_main<cfg80, T>(x, st);
	case 3: return launch_main<cfg96, T>(x, st);
	case 4: return launch_main<cfg128, T>(x, st);
	case 5: return launch_main<cfg192, T>(x, st);
	case 7: return launch_main<cfg64t, T>(x, st);
	case 8: return launch_main<cfg128t, T>(x, st);
	case 9: return launch_main<cfg80t, T>(x, st);
	default: return launch_main<cfg256, T>(x, st);
	}
}

template <int DT>
cudaError_t launch_typed(const struct fa_launch_args *a, int inst, int det, int split)
{
	const struct fa_problem *p = a->p;
	cudaStream_t st = fa_cuda_stream_of(a);
	const int64_t rows = (int64_t)p->total_q * p->heads;
	const size_t parts = dq_parts(p, a->params);
	const fa_bwd::workspace w = fa_bwd::workspace_of(p, a->workspace, parts);
	cudaError_t e = fa_bwd::launch_pre<DT>(p, a, w.delta, w.acc, (int)parts, st);
	if (e != cudaSuccess)
		return e;
	args x;
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
	x.det = det;
	x.split = split;
	x.hpc = split ? 1 : p->heads / (p->kv_heads > 0 ? p->kv_heads : 1);
	x.dk_part = w.dk_part;
	x.dv_part = w.dv_part;
	x.dq_rows = rows;
	x.cu_q = a->cu_seqlens_q;
	x.cu_k = a->cu_seqlens_k;
	x.prefix_lens = a->prefix_lens;
	e = DT == FA_DTYPE_BF16 ? launch_inst<bf16_t>(inst, x, st) : launch_inst<fp16_t>(inst, x, st);
	if (e != cudaSuccess)
		return e;
	return fa_bwd::launch_post<DT>(p, a, w.acc, (int)parts, split, w.dk_part, w.dv_part, st);
}

} /* namespace fa_bwd_mma */

using namespace fa_bwd_mma;

static const int32_t dq_allowed[] = {0, 1};
static const int32_t bn_allowed[] = {64, 128};
static const int32_t split_allowed[] = {0, 1, 2};
extern "C" const struct fa_kernel_param fa_cuda_flash_bwd_mma_params[FA_CUDA_BWD_MMA_N_PARAMS] = {
	{"dq", 0, dq_allowed, 2, 0, 1,
	 "dQ accumulation: 0 = fp32 atomics into one accumulator (fast; the sum order varies "
	 "from run to run) | 1 = deterministic: each key block stores its own fp32 partial, "
	 "summed in block order by a second kernel (bit-identical runs; workspace key blocks x "
	 "dQ in fp32)"},
	{"bn", 128, bn_allowed, 2, 64, 128,
	 "keys per CTA at head sizes 64, 72/80 and 128 (others keep theirs): 128 = "
	 "FlashAttention-2's layout, 8 warps of 32 keys x half the columns, one CTA per SM "
	 "(64 where the device gives a block less shared memory: 161 KB at head size 128) | "
	 "64 = 16-key warps, two CTAs per SM (twice the dQ accumulations and Q/dO reads)"},
	{"split", 2, split_allowed, 3, 0, 2,
	 "GQA group: 0 = one CTA per kv head walks every query head of its group | 1 = one CTA "
	 "per query head (group x the CTAs), dK/dV as fp32 partials summed in head order by a "
	 "last kernel (workspace group x dK and dV in fp32; the same bits every run) | 2 = "
	 "auto: 1 where a CTA per kv head would leave SMs idle, else 0"},
};

extern "C" int fa_cuda_flash_bwd_mma_supports(const struct fa_problem *p, char *why,
					      size_t why_size)
{
	const int inst = instance_of(p->head_dim, p->head_dim_v);
	if (!inst) {
		snprintf(why, why_size,
			 "head_dim %d / head_dim_v %d not instantiated (64, 72, 80, 96, 128, 256, "
			 "192/128)",
			 p->head_dim, p->head_dim_v);
		return 0;
	}
	struct fa_cuda_limits lim = {};
	lim.dtypes = (1u << FA_DTYPE_FP16) | (1u << FA_DTYPE_BF16);
	lim.dtype_why = "tensor-core kernel takes fp16 or bf16";
	lim.grid_yz = 1;
	lim.positive_scale = 1;
	lim.row_index_32 = 1;
	lim.smem_bytes = smem_of(inst);
	lim.smem_optin = -1;
	if (!fa_cuda_check_problem(p, &lim, why, why_size))
		return 0;
	if (!fa_cuda_strides_multiple(p, 8)) {
		snprintf(why, why_size, "strides not multiples of 8 elements (16-byte rows)");
		return 0;
	}
	return 1;
}

extern "C" size_t fa_cuda_flash_bwd_mma_workspace_bytes(const struct fa_problem *p,
							const int32_t *params)
{
	return fa_bwd::workspace_bytes(p, dq_parts(p, params), split_of(p, params));
}

extern "C" int fa_cuda_flash_bwd_mma_launch(const struct fa_launch_args *a)
{
	const struct fa_problem *p = a->p;
	char why[160];
	if (!fa_cuda_flash_bwd_mma_supports(p, why, sizeof why) ||
	    !FA_RECORD_HAS(struct fa_launch_args, a, dv) || !a->lse || !a->d_o || !a->dq ||
	    !a->dk || !a->dv || !a->workspace ||
	    a->workspace_bytes < fa_cuda_flash_bwd_mma_workspace_bytes(p, a->params))
		return (int)cudaErrorInvalidValue;
	if (((uintptr_t)a->q | (uintptr_t)a->k | (uintptr_t)a->v | (uintptr_t)a->d_o |
	     (uintptr_t)a->dk | (uintptr_t)a->dv) % 16 != 0)
		return (int)cudaErrorMisalignedAddress; /* 16-byte copies */
	const int inst = instance_for(p, a->params);
	const int det = a->params ? a->params[PARAM_DQ] : 0;
	const int split = split_of(p, a->params);
	(void)cudaGetLastError(); /* report this launch's error, not an older one */
	if (p->dtype == FA_DTYPE_BF16)
		return (int)launch_typed<FA_DTYPE_BF16>(a, inst, det, split);
	return (int)launch_typed<FA_DTYPE_FP16>(a, inst, det, split);
}
