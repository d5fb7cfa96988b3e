/* flash_mma_table.cu - the kernel table entry of the tensor-core
 * flash-attention kernel, cuda_flash_mma: its tunables, what it supports,
 * and the dispatch of a problem to one of the instances that
 * tools/gen-instances lists (FA_MMA_INSTANCES, kernels/cuda/instances/). The
 * CUDA plugin lists it after its own kernels through
 * fa_cuda_mma_kernel_count() / fa_cuda_mma_kernel().
 *
 * Decode shapes (few query rows per KV head, fa_decode_fits in
 * kernels/common/fa_decode.h) go to the decode path of
 * kernels/cuda/flash_decode.cu unless the tunable `decode` is 0 or `sched`
 * asks for stream-K; on sm_90a those of one query row per sequence at
 * head size 128 go to the Hopper decode kernel of
 * kernels/cuda/flash_decode_wg.cu under `decode` 5, or 1 by its rule
 * (fa_cuda_decode_wg_auto).
 *
 * Host code only; no kernel is defined here.
 */
#include <stdio.h>

#include "../common/fa_decode.h"
#include "../common/fa_gpu.h"
#include "../common/fa_split.h"
#include "flash_decode.h"
#include "flash_decode_wg.h"
#include "flash_mma.h"
#include "problem_check.h"

#define FP16_BF16 ((1u << FA_DTYPE_FP16) | (1u << FA_DTYPE_BF16))

/* The largest head size of any instance (the ANY ladder ends at 256). */
#define HEAD_DIM_MAX 256

/* 16-byte cp.async copies and 16-byte stores need every row start aligned:
 * each stride a multiple of 8 elements (base pointers are cudaMalloc'ed).
 * FULL, PAD and MASKED instances need it; ANY instances copy rows that are
 * not aligned element by element. */
#define ALIGN_ELEMS 8

/* Tunables, in the order fa_mma::PARAM_* (flash_mma.cuh) reads them; hd72
 * is read here. */
enum { PARAM_SPLITS = 0, PARAM_HD72 = 2, PARAM_SCHED = 3, PARAM_DECODE = 7, PARAM_DECODE_RING = 8 };
static const int32_t order_allowed[] = {0, 1};
static const int32_t hd72_allowed[] = {0, 1};
static const int32_t sched_allowed[] = {0, 1, 2, 3};
static const int32_t decode_allowed[] = {0, 1, 2, 3, 4, 5};
static const int32_t decode_ring_allowed[] = {0, 1, 2};
static const struct fa_kernel_param mma_params[] = {
	{"splits", 0, NULL, 0, 0, 64,
	 "split-KV: key ranges per (query tile, head), merged by a second kernel; 0 = auto "
	 "(split only a grid under 80% of one wave of resident CTAs, e.g. decode)"},
	{"order", 1, order_allowed, 2, 0, 1,
	 "block order: 1 = query tile by query tile across all heads, heaviest causal tiles "
	 "first; 0 = head by head"},
	{"hd72", 0, hd72_allowed, 2, 0, 1,
	 "head size 72: 0 = computed as 80, zero columns in shared memory (d72_pad80); "
	 "1 = every copy predicated at 72 (d72_masked)"},
	{"sched", 0, sched_allowed, 4, 0, 3,
	 "schedule: 0 auto (split-KV by its rule, as before stream-K) | 1 split-KV (`splits`) | "
	 "2 stream-K uniform (every output tile gets the same number of CTAs) | 3 stream-K "
	 "general (a fixed number of CTAs over all (tile, key block) pairs, rounded to uniform "
	 "by sk_round / sk_ratio)"},
	{"sk_ctas", 0, NULL, 0, 0, 1 << 20,
	 "stream-K: CTAs of the grid; 0 = SMs x CTAs per SM (capped at tiles x key blocks)"},
	{"sk_round", 5, NULL, 0, 0, 100,
	 "stream-K general: round the CTA count down to a multiple of the tile count (uniform "
	 "fixup) when that loses at most this many percent of the CTAs; 0 = never by loss"},
	{"sk_ratio", 0, NULL, 0, 0, 1024,
	 "stream-K general: also round down when the CTA count is at least this many times the "
	 "tile count (seed 001's 4x / 16x); 0 = never by ratio"},
	{"decode", 1, decode_allowed, 6, 0, 5,
	 "decode path for heads / kv_heads x q_len <= 16 at head sizes 64, 128, 256 (one CTA per "
	 "KV head and key range, warps streaming their own 16-key tiles; `splits` applies, 0 = "
	 "its own rule), where it fits and `sched` is 0 or 1: 1 = key ranges merged inside a "
	 "thread-block cluster per KV head where the device has clusters of that size (sm_90+, "
	 "up to 16 ranges) and holds them all at once, else by the last CTA of each KV head up "
	 "to 4 rows per KV head, else by a second kernel; and, with `splits` 0, the Hopper "
	 "decode kernel (TMA and wgmma, two passes, 8 ranges in a cluster; sm_90a, q_len 1, up "
	 "to 8 query heads per KV head, head size 128, every key visible) where batch x "
	 "kv_heads <= 8 and there are 4096 to 16384 keys; 2 = always by the last CTA; 3 = always "
	 "by a second kernel; 4 = by a cluster wherever the device has one of that size (else "
	 "as 2); 5 = the Hopper decode kernel wherever it fits (up to 16384 keys; else as 1); "
	 "0 = never (the tensor-core path)"},
	{"decode_ring", 2, decode_ring_allowed, 3, 0, 2,
	 "decode path, head size 128: 0 = 4 warps x 3 stages, 2 CTAs per SM; 1 = 4 warps x 6 "
	 "stages, 1 CTA per SM; 2 = 8 warps x 3 stages, 1 CTA per SM (1 and 2 take 202 KB of "
	 "shared memory: 0 where the device has less; other sizes: their one shape)"},
};
#define N_MMA_PARAMS ((int32_t)(sizeof mma_params / sizeof mma_params[0]))

/* The instances, in the generator's order. */
struct instance {
	const char *name;
	int d, dv, mode, dreal;
	int (*smem)(void);
	size_t (*workspace)(const struct fa_problem *, const int32_t *);
	int (*launch)(const struct fa_launch_args *);
};

#define FA_MMA_ROW(NAME, D, DV, MODE, DREAL) \
	{#NAME, D, DV, MODE, DREAL, fa_cuda_mma_smem_bytes_##NAME, fa_cuda_mma_workspace_##NAME, \
	 fa_cuda_mma_launch_##NAME},
static const struct instance instances[] = {FA_MMA_INSTANCES(FA_MMA_ROW)};
#undef FA_MMA_ROW
#define N_INSTANCES ((int)(sizeof instances / sizeof instances[0]))

/* The instance that runs p under the tunables params (NULL: the defaults),
 * or NULL when none can (head sizes above 256).
 *   72/72, aligned rows: d72_pad80 or d72_masked, as hd72 says;
 *   aligned rows: the FULL instance of exactly (head_dim, head_dim_v);
 *   else: the ANY instance with the smallest width holding both sizes. */
static const struct instance *pick(const struct fa_problem *p, const int32_t *params)
{
	const int aligned = fa_cuda_strides_multiple(p, ALIGN_ELEMS);
	const int hd72 = params ? params[PARAM_HD72] : mma_params[PARAM_HD72].default_value;
	const struct instance *best = NULL;
	if (aligned && p->head_dim == 72 && p->head_dim_v == 72)
		for (int i = 0; i < N_INSTANCES; i++)
			if (instances[i].dreal == 72 &&
			    instances[i].mode == (hd72 ? FA_MMA_MASKED : FA_MMA_PAD))
				return &instances[i];
	if (aligned)
		for (int i = 0; i < N_INSTANCES; i++)
			if (instances[i].mode == FA_MMA_FULL && instances[i].d == p->head_dim &&
			    instances[i].dv == p->head_dim_v)
				return &instances[i];
	for (int i = 0; i < N_INSTANCES; i++)
		if (instances[i].mode == FA_MMA_ANY && instances[i].d >= p->head_dim &&
		    instances[i].dv >= p->head_dim_v && (!best || instances[i].d < best->d))
			best = &instances[i];
	return best;
}

/* 1 when p runs on the decode path (flash_decode.cu) under the tunables
 * params (NULL: the defaults): `decode` on, no stream-K, a shape it takes,
 * and its shared memory within the device's limit. */
/* 1 when a decode kernel of smem_bytes of shared memory fits the device. */
static int decode_smem_fits(const struct fa_problem *p, int smem_bytes)
{
	struct fa_cuda_limits lim = {};
	char why[8];
	lim.smem_bytes = smem_bytes;
	lim.smem_optin = -1;
	return fa_cuda_check_problem(p, &lim, why, sizeof why);
}

/* The decode path's ring shape for p under params: `decode_ring`, or 0
 * where that shape's 202 KB of shared memory does not fit the device
 * (sm_80's 163 KB, sm_86's 99 KB). */
static int decode_ring(const struct fa_problem *p, const int32_t *params)
{
	const int ring =
		params ? params[PARAM_DECODE_RING] : mma_params[PARAM_DECODE_RING].default_value;
	if (ring != 0 && !decode_smem_fits(p, fa_cuda_decode_smem_bytes(p->head_dim, ring)))
		return 0;
	return ring;
}

static int use_decode(const struct fa_problem *p, const int32_t *params)
{
	const int on = params ? params[PARAM_DECODE] : mma_params[PARAM_DECODE].default_value;
	const int sched = params ? params[PARAM_SCHED] : mma_params[PARAM_SCHED].default_value;
	if (!on || sched >= FA_SCHED_SK_UNIFORM || !fa_decode_fits(p, NULL))
		return 0;
	return decode_smem_fits(p, fa_cuda_decode_smem_bytes(p->head_dim, decode_ring(p, params)));
}

static int mma_supports(const struct fa_problem *p, char *why, size_t why_size)
{
	struct fa_cuda_limits lim = {};
	lim.head_dim_max = HEAD_DIM_MAX;
	lim.dtypes = FP16_BF16;
	lim.dtype_why = "tensor-core kernel takes fp16 or bf16";
	lim.grid_yz = 1;
	lim.positive_scale = 1;
	lim.row_index_32 = 1;
	if (!fa_cuda_check_problem(p, &lim, why, why_size))
		return 0;
	const struct instance *in = pick(p, NULL);
	if (!in) { /* every size up to 256 has an ANY instance */
		snprintf(why, why_size, "head_dim %d / head_dim_v %d not instantiated", p->head_dim,
			 p->head_dim_v);
		return 0;
	}
	/* the shared memory of the instance the default hd72 picks; the other
	 * one at 72 has the same tiles */
	lim.smem_bytes = in->smem();
	lim.smem_optin = -1;
	return fa_cuda_check_problem(p, &lim, why, why_size);
}

static size_t mma_workspace(const struct fa_problem *p, const int32_t *params)
{
	const struct instance *in = pick(p, params);
	const size_t tiles = in ? in->workspace(p, params) : 0;
	if (use_decode(p, params)) {
		/* the decode path's, or the tile path's when the LSE is asked for
		 * (a backward's forward: the decode merges do not write it) */
		const size_t dec = fa_cuda_decode_workspace(p, params ? params[PARAM_SPLITS] : 0,
							    decode_ring(p, params));
		return dec > tiles ? dec : tiles;
	}
	return tiles;
}

static int mma_launch(const struct fa_launch_args *a)
{
	const int want_lse = FA_RECORD_HAS(struct fa_launch_args, a, lse) && a->lse;
	if (!want_lse && use_decode(a->p, a->params)) {
		const int d = a->params ? a->params[PARAM_DECODE] : mma_params[PARAM_DECODE].default_value;
		const int splits = a->params ? a->params[PARAM_SPLITS] : 0;
		if ((d == 5 && fa_cuda_decode_wg_fits(a->p, NULL)) ||
		    (d == 1 && splits == 0 && fa_cuda_decode_wg_auto(a->p)))
			return fa_cuda_decode_wg_launch(a);
		return fa_cuda_decode_launch(a, a->params ? a->params[PARAM_SPLITS] : 0,
					     d == 2   ? FA_DECODE_MERGE_CTA
					     : d == 3 ? FA_DECODE_MERGE_KERNEL
					     : d == 4 ? FA_DECODE_MERGE_CLUSTER
						      : FA_DECODE_MERGE_AUTO,
					     decode_ring(a->p, a->params));
	}
	const struct instance *in = pick(a->p, a->params);
	if (!in)
		return (int)cudaErrorInvalidValue; /* supports() said no */
	if (in->mode != FA_MMA_ANY &&
	    ((uintptr_t)a->q | (uintptr_t)a->k | (uintptr_t)a->v | (uintptr_t)a->o) % 16 != 0)
		return (int)cudaErrorMisalignedAddress; /* 16-byte copies from a base that is not */
	return in->launch(a);
}

/* Positional initialisers (C++17 has no designated ones), in the order of
 * struct fa_kernel: name, description, dtypes, head_dim_min, head_dim_max,
 * head_dims, n_head_dims, score_bytes, params, n_params, supports,
 * workspace_bytes, launch, test_only. */
static const struct fa_kernel mma_kernels[] = {
	{"cuda_flash_mma",
	 "FA2 forward on tensor cores (mma.sync m16n8k16, ldmatrix, cp.async), fp32 accumulation; "
	 "any head size to 256 (instances 64-256, padded between)",
	 FP16_BF16, 1, HEAD_DIM_MAX, NULL, 0, 0, mma_params, N_MMA_PARAMS, mma_supports,
	 mma_workspace, mma_launch, 0, sizeof(struct fa_kernel), FA_PASS_FWD,
	 1 /* writes the LSE (not under stream-K; the decode shapes then take the tile path) */,
	 NULL},
};

#define N_MMA_KERNELS ((int)(sizeof mma_kernels / sizeof mma_kernels[0]))

extern "C" int fa_cuda_mma_kernel_count(void)
{
	return N_MMA_KERNELS;
}

extern "C" const struct fa_kernel *fa_cuda_mma_kernel(int i)
{
	return i >= 0 && i < N_MMA_KERNELS ? &mma_kernels[i] : NULL;
}
