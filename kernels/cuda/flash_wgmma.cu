/* flash_wgmma.cu - cuda_flash_wgmma, the host half of the Hopper (sm_90a)
 * flash-attention forward: the head sizes it serves and supports(), the
 * tensor maps (cuTensorMapEncodeTiled through the driver's entry point),
 * the tunables table, the split-KV workspace, the launch (grid, shared
 * memory, the persistent and dynamic schedules, the split-KV merge) and
 * the kernel table. The kernel and its design notes are in
 * flash_wgmma_kernel.cuh.
 *
 * The Makefile compiles this file for sm_90a only; supports() refuses
 * every other device, so the plugin keeps working on sm_80 and sm_89
 * through cuda_flash_mma.
 */
#include <cuda.h>
#include <stdio.h>
#include <string.h>

#include "cuda_kernels.h"
#include "flash_mma.cuh" /* fa_mma::combine_kernel: the split-KV merge */
#include "flash_decode_wg.h"
#include "flash_wgmma.h"
#include "flash_wgmma_kernel.cuh"
#include "../common/fa_dyn.h"
#include "problem_check.h"

namespace {

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
int make_map_l2(CUtensorMap *m, const void *base, int bf16, int d, int box_rows, int64_t tokens,
		int heads, int seqs, int64_t ss, int64_t sh, int64_t sb, CUtensorMapL2promotion promo)
{
	const cuuint64_t dims[4] = {(cuuint64_t)d, (cuuint64_t)tokens, (cuuint64_t)heads,
				    (cuuint64_t)seqs};
	const cuuint64_t strides[3] = {(cuuint64_t)ss * 2, (cuuint64_t)sh * 2, (cuuint64_t)sb * 2};
	const cuuint32_t box[4] = {SLAB_COLS, (cuuint32_t)box_rows, 1, 1};
	const cuuint32_t elem_strides[4] = {1, 1, 1, 1};
	const CUresult r = encode_tiled()(
		m, bf16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 4,
		(void *)base, dims, strides, box, elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
		CU_TENSOR_MAP_SWIZZLE_128B, promo,
		CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
	return r == CUDA_SUCCESS ? 0 : (int)cudaErrorInvalidValue;
}

/* make_map_l2 with the L2 promotion of 256 bytes (the kernels' maps). */
int make_map(CUtensorMap *m, const void *base, int bf16, int d, int box_rows, int64_t tokens,
	     int heads, int seqs, int64_t ss, int64_t sh, int64_t sb)
{
	return make_map_l2(m, base, bf16, d, box_rows, tokens, heads, seqs, ss, sh, sb,
			   CU_TENSOR_MAP_L2_PROMOTION_L2_256B);
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

/* Shapes with a plain instance (wg_args_plain; build flag FA_WG_PLAIN 0 for
 * same-call comparisons): the ViT tile and head size 128's, with overlap. */
#ifndef FA_WG_PLAIN
#define FA_WG_PLAIN 1
#endif
template <int DK, int DV, int BN, bool OVERLAP> constexpr bool has_plain()
{
	return FA_WG_PLAIN && OVERLAP &&
	       ((DK == 80 && DV == 80 && BN == 128) || (DK == 128 && DV == 128 && BN == 176));
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
	/* the plain instance (wg_args_plain) where the launch has no mask,
	 * varlen, split-KV or dynamic schedule and the shape has one */
	cudaError_t ce;
	bool launched = false;
	if constexpr (has_plain<DK, DV, BN, OVERLAP>()) {
		if (g.mask == FA_MASK_NONE && !g.varlen && g.splits <= 1 && !g.dynamic) {
			wg_args_plain gp;
			static_cast<wg_args &>(gp) = g;
			ce = cudaFuncSetAttribute(wgmma_fwd<DK, DV, BN, NC, BF16, OVERLAP, wg_args_plain>,
						  cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
			if (ce != cudaSuccess)
				return (int)ce;
			wgmma_fwd<DK, DV, BN, NC, BF16, OVERLAP, wg_args_plain>
				<<<ctas, threads_of<NC>(), smem, fa_cuda_stream_of(a)>>>(
					tq, tk, tv, tk0, tv0, tk8, tv8, gp);
			launched = true;
		}
	}
	if (!launched) {
		ce = cudaFuncSetAttribute(wgmma_fwd<DK, DV, BN, NC, BF16, OVERLAP>,
					  cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
		if (ce != cudaSuccess)
			return (int)ce;
		wgmma_fwd<DK, DV, BN, NC, BF16, OVERLAP>
			<<<ctas, threads_of<NC>(), smem, fa_cuda_stream_of(a)>>>(
				tq, tk, tv, tk0, tv0, tk8, tv8, g);
	}
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

extern "C" int fa_cuda_wgmma_have_tma(void)
{
	return encode_tiled() != NULL;
}

extern "C" int fa_cuda_wgmma_make_map(CUtensorMap *m, const void *base, int bf16, int d,
				      int box_rows, int64_t tokens, int heads, int seqs, int64_t ss,
				      int64_t sh, int64_t sb, int l2_256)
{
	return make_map_l2(m, base, bf16, d, box_rows, tokens, heads, seqs, ss, sh, sb,
			   l2_256 ? CU_TENSOR_MAP_L2_PROMOTION_L2_256B : CU_TENSOR_MAP_L2_PROMOTION_NONE);
}
