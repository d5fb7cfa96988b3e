/* flash_mma_table.cu - the kernel table entries of the tensor-core
 * flash-attention family (cuda_flash_mma*): names, dtypes, head sizes, what
 * each instance supports, and the launchers (kernels/cuda/instances/). The
 * CUDA plugin lists these after its own kernels through
 * fa_cuda_mma_kernel_count() / fa_cuda_mma_kernel().
 *
 * Host code only; no kernel is defined here.
 */
#include <math.h>
#include <stdio.h>

#include "../common/fa_gpu.h"
#include "flash_mma.h"

#define FP16_BF16 ((1u << FA_DTYPE_FP16) | (1u << FA_DTYPE_BF16))

/* 16-byte cp.async copies and 16-byte stores need every row start aligned:
 * each stride a multiple of 8 elements (base pointers are cudaMalloc'ed). */
#define ALIGN_ELEMS 8

/* grid.y = heads (or kv_heads) and grid.z = batch are limited to 65535 */
#define GRID_YZ_MAX 65535

/* The checks every instance shares; d, dv: the instance's head sizes;
 * smem_bytes: its dynamic shared memory per CTA. */
static int supports_common(const struct fa_problem *p, int d, int dv, int smem_bytes, char *why,
			   size_t why_size)
{
	if (p->dtype != FA_DTYPE_FP16 && p->dtype != FA_DTYPE_BF16) {
		snprintf(why, why_size, "dtype %s not supported: tensor-core kernel takes fp16 or bf16",
			 p->dtype == FA_DTYPE_FP32 ? "fp32" : "unknown");
		return 0;
	}
	if (p->head_dim != d || p->head_dim_v != dv) {
		snprintf(why, why_size, "head_dim %d / head_dim_v %d not instantiated (this one: %d / %d)",
			 p->head_dim, p->head_dim_v, d, dv);
		return 0;
	}
	const struct {
		const char *name;
		int64_t v;
	} strides[] = {
		{"q_stride_b", p->q_stride_b}, {"q_stride_s", p->q_stride_s}, {"q_stride_h", p->q_stride_h},
		{"k_stride_b", p->k_stride_b}, {"k_stride_s", p->k_stride_s}, {"k_stride_h", p->k_stride_h},
		{"v_stride_b", p->v_stride_b}, {"v_stride_s", p->v_stride_s}, {"v_stride_h", p->v_stride_h},
		{"o_stride_b", p->o_stride_b}, {"o_stride_s", p->o_stride_s}, {"o_stride_h", p->o_stride_h},
	};
	for (size_t i = 0; i < sizeof strides / sizeof strides[0]; i++)
		if (strides[i].v % ALIGN_ELEMS != 0) {
			snprintf(why, why_size,
				 "%s %lld not a multiple of %d elements (16-byte copies)", strides[i].name,
				 (long long)strides[i].v, ALIGN_ELEMS);
			return 0;
		}
	if (!(p->scale > 0.f) || !isfinite(p->scale)) {
		snprintf(why, why_size, "scale %g must be positive and finite (folded into exp2)",
			 (double)p->scale);
		return 0;
	}
	if (p->kv_heads <= 0 || p->heads % p->kv_heads != 0) {
		snprintf(why, why_size, "heads %d not divisible by kv_heads %d", p->heads, p->kv_heads);
		return 0;
	}
	if (p->batch > GRID_YZ_MAX || p->heads > GRID_YZ_MAX) {
		snprintf(why, why_size, "batch %d or heads %d above the grid limit %d", p->batch,
			 p->heads, GRID_YZ_MAX);
		return 0;
	}
	if ((int64_t)p->q_len * (p->heads / p->kv_heads) > INT32_MAX) {
		snprintf(why, why_size, "q_len %d times the GQA group overflows 32-bit row indices",
			 p->q_len);
		return 0;
	}
	/* Shared memory: an H100 allows 227 KB per block, an A100 163 KB, an
	 * RTX 4090 99 KB.
	 * When the device cannot be asked, the launch reports the error. */
	int dev = 0, optin = 0;
	if (cudaGetDevice(&dev) != cudaSuccess ||
	    cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev) !=
		    cudaSuccess) {
		(void)cudaGetLastError(); /* the failed query must not linger as the last error */
		return 1;
	}
	if (optin > 0 && smem_bytes > optin) {
		snprintf(why, why_size,
			 "needs %d bytes of shared memory per block, the device allows %d", smem_bytes,
			 optin);
		return 0;
	}
	return 1;
}

/* ---- cuda_flash_mma: head sizes 64, 80, 96, 128, 256 (D == DV) ---- */

static const int32_t main_dims[] = {64, 80, 96, 128, 256};

/* The instances behind cuda_flash_mma, one per head size. */
static const struct {
	int32_t d;
	int (*smem)(void);
	size_t (*workspace)(const struct fa_problem *, const int32_t *);
	int (*launch)(const struct fa_launch_args *);
} main_instances[] = {
	{64, fa_cuda_mma_smem_bytes_d64, fa_cuda_mma_workspace_d64, fa_cuda_mma_launch_d64},
	{80, fa_cuda_mma_smem_bytes_d80, fa_cuda_mma_workspace_d80, fa_cuda_mma_launch_d80},
	{96, fa_cuda_mma_smem_bytes_d96, fa_cuda_mma_workspace_d96, fa_cuda_mma_launch_d96},
	{128, fa_cuda_mma_smem_bytes_d128, fa_cuda_mma_workspace_d128, fa_cuda_mma_launch_d128},
	{256, fa_cuda_mma_smem_bytes_d256, fa_cuda_mma_workspace_d256, fa_cuda_mma_launch_d256},
};

/* The index of head size d in main_instances, or -1. */
static int main_instance(int d)
{
	for (int i = 0; i < (int)(sizeof main_instances / sizeof main_instances[0]); i++)
		if (main_instances[i].d == d)
			return i;
	return -1;
}

static int main_supports(const struct fa_problem *p, char *why, size_t why_size)
{
	const int i = main_instance(p->head_dim);
	if (i < 0) {
		snprintf(why, why_size, "head_dim %d not instantiated", p->head_dim);
		return 0;
	}
	return supports_common(p, p->head_dim, p->head_dim, main_instances[i].smem(), why,
			       why_size);
}

static size_t main_workspace(const struct fa_problem *p, const int32_t *params)
{
	const int i = main_instance(p->head_dim);
	return i < 0 ? 0 : main_instances[i].workspace(p, params);
}

static int main_launch(const struct fa_launch_args *a)
{
	const int i = main_instance(a->p->head_dim);
	return i < 0 ? (int)cudaErrorInvalidValue /* supports() said no */
		     : main_instances[i].launch(a);
}

/* ---- the single-shape instances ---- */

static const int32_t d192_dims[] = {192};
static const int32_t d72_dims[] = {72};

static int d192_128_supports(const struct fa_problem *p, char *why, size_t why_size)
{
	return supports_common(p, 192, 128, fa_cuda_mma_smem_bytes_d192_128(), why, why_size);
}

static int d72_pad80_supports(const struct fa_problem *p, char *why, size_t why_size)
{
	return supports_common(p, 72, 72, fa_cuda_mma_smem_bytes_d72_pad80(), why, why_size);
}

static int d72_masked_supports(const struct fa_problem *p, char *why, size_t why_size)
{
	return supports_common(p, 72, 72, fa_cuda_mma_smem_bytes_d72_masked(), why, why_size);
}

/* Tunables, in the order fa_mma::PARAM_* (flash_mma.cuh) reads them. */
static const int32_t order_allowed[] = {0, 1};
static const struct fa_kernel_param mma_params[] = {
	{"splits", 0, NULL, 0, 0, 64,
	 "split-KV: key ranges per (query tile, head), merged by a second kernel; 0 = auto "
	 "(split only a grid under 80% of one wave of resident CTAs, e.g. decode)"},
	{"order", 1, order_allowed, 2, 0, 1,
	 "block order: 1 = query tile by query tile across all heads, heaviest causal tiles "
	 "first; 0 = head by head"},
};
#define N_MMA_PARAMS ((int32_t)(sizeof mma_params / sizeof mma_params[0]))

/* Positional initialisers (C++17 has no designated ones), in the order of
 * struct fa_kernel: name, description, dtypes, head_dim_min, head_dim_max,
 * head_dims, n_head_dims, score_bytes, params, n_params, supports,
 * workspace_bytes, launch, test_only. */
static const struct fa_kernel mma_kernels[] = {
	{"cuda_flash_mma",
	 "FA2 forward on tensor cores (mma.sync m16n8k16, ldmatrix, cp.async), fp32 accumulation",
	 FP16_BF16, 64, 256, main_dims, 5, 0, mma_params, N_MMA_PARAMS, main_supports, main_workspace,
	 main_launch, 0},
	{"cuda_flash_mma_d192_128",
	 "cuda_flash_mma at head_dim 192, head_dim_v 128 (MLA-style prefill)", FP16_BF16, 128, 192,
	 d192_dims, 1, 0, mma_params, N_MMA_PARAMS, d192_128_supports,
	 fa_cuda_mma_workspace_d192_128, fa_cuda_mma_launch_d192_128, 0},
	{"cuda_flash_mma_d72_pad80",
	 "cuda_flash_mma at head_dim 72 computed as 80: zero columns in shared memory, no copies",
	 FP16_BF16, 72, 72, d72_dims, 1, 0, mma_params, N_MMA_PARAMS, d72_pad80_supports,
	 fa_cuda_mma_workspace_d72_pad80,
	 fa_cuda_mma_launch_d72_pad80, 0},
	{"cuda_flash_mma_d72_masked",
	 "cuda_flash_mma at head_dim 72 with every load predicated at the true width",
	 FP16_BF16, 72, 72, d72_dims, 1, 0, mma_params, N_MMA_PARAMS, d72_masked_supports,
	 fa_cuda_mma_workspace_d72_masked,
	 fa_cuda_mma_launch_d72_masked, 0},
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
