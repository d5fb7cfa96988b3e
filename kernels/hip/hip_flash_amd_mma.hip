/* hip_flash_amd_mma.hip - the AMD matrix-core flash kernels' instances and
 * table entries: hip_flash_mfma (gfx90a, gfx94x: MFMA, wave64) and
 * hip_flash_wmma (gfx11 and gfx12: WMMA, wave32, the layout picked by the
 * device's architecture at launch). Head sizes 64, 72 (the d80 instance,
 * zero-padded and masked at the true width), 80, 96, 128, 256; D == DV.
 *
 * The HIP backend lists these through fa_hip_mma_kernels(). Launchers use
 * a->stream (the harness sets it: SDK version 2). Built with
 *   clang++ -x hip -std=c++17 -O3 --offload-arch=gfx90a ... (tools/hip-mma-check)
 */
#include <stdio.h>
#include <string.h>

#include "flash_amd_mma.h"
#include "hip_flash_amd_mma.h"

namespace {

using fa_amd::config;

/* d256 takes 2 waves (32 rows) to stay within 64 KiB of LDS */
template <int KIND, int D>
using cfg = config<KIND, D, D == 256 ? 2 : 4>;

/* The computed head size of head_dim d, or 0. */
int computed_dim(int d)
{
	switch (d) {
	case 64: case 80: case 96: case 128: case 256: return d;
	case 72: return 80; /* seed 002: padded to 80, masked at 72 */
	default: return 0;
	}
}

template <int KIND>
int launch_kind(const struct fa_launch_args *a)
{
	switch (computed_dim(a->p->head_dim)) {
	case 64: return fa_amd::launch<cfg<KIND, 64>>(a);
	case 80: return fa_amd::launch<cfg<KIND, 80>>(a);
	case 96: return fa_amd::launch<cfg<KIND, 96>>(a);
	case 128: return fa_amd::launch<cfg<KIND, 128>>(a);
	case 256: return fa_amd::launch<cfg<KIND, 256>>(a);
	default: return (int)hipErrorInvalidValue; /* supports() said no */
	}
}

template <int KIND>
size_t workspace_kind(const struct fa_problem *p, const int32_t *params)
{
	switch (computed_dim(p->head_dim)) {
	case 64: return fa_mma::workspace_bytes<cfg<KIND, 64>>(p, params);
	case 80: return fa_mma::workspace_bytes<cfg<KIND, 80>>(p, params);
	case 96: return fa_mma::workspace_bytes<cfg<KIND, 96>>(p, params);
	case 128: return fa_mma::workspace_bytes<cfg<KIND, 128>>(p, params);
	case 256: return fa_mma::workspace_bytes<cfg<KIND, 256>>(p, params);
	default: return 0;
	}
}

/* The fragment layout of the current device's matrix unit; -1 for an arch
 * without one of these units (its name in `arch`), -2 when no device
 * answers (the runtime's error name in `arch`). */
int device_kind(char *arch, size_t arch_size)
{
	int dev = 0;
	hipDeviceProp_t prop;
	hipError_t e = hipGetDevice(&dev);
	if (e == hipSuccess)
		e = hipGetDeviceProperties(&prop, dev);
	if (e != hipSuccess) {
		snprintf(arch, arch_size, "%s", hipGetErrorName(e));
		(void)hipGetLastError();
		return -2;
	}
	snprintf(arch, arch_size, "%.*s", (int)strcspn(prop.gcnArchName, ":"), prop.gcnArchName);
	if (!strcmp(arch, "gfx90a") || !strncmp(arch, "gfx94", 5))
		return FA_FRAG_MFMA_16X16X16;
	if (!strncmp(arch, "gfx11", 5))
		return FA_FRAG_WMMA_GFX11;
	if (!strncmp(arch, "gfx12", 5))
		return FA_FRAG_WMMA_GFX12;
	return -1;
}

/* The checks both kernels share (those of cuda_flash_mma's supports). */
int supports_common(const struct fa_problem *p, char *why, size_t why_size)
{
	if (p->dtype != FA_DTYPE_FP16 && p->dtype != FA_DTYPE_BF16) {
		snprintf(why, why_size, "dtype %s not supported: matrix-core kernel takes fp16 or bf16",
			 p->dtype == FA_DTYPE_FP32 ? "fp32" : "unknown");
		return 0;
	}
	if (!computed_dim(p->head_dim) || p->head_dim_v != p->head_dim) {
		snprintf(why, why_size,
			 "head_dim %d / head_dim_v %d not instantiated (64, 72, 80, 96, 128, 256, equal)",
			 p->head_dim, p->head_dim_v);
		return 0;
	}
	const int64_t strides[] = {p->q_stride_b, p->q_stride_s, p->q_stride_h, p->k_stride_b,
				   p->k_stride_s, p->k_stride_h, p->v_stride_b, p->v_stride_s,
				   p->v_stride_h, p->o_stride_b, p->o_stride_s, p->o_stride_h};
	for (size_t i = 0; i < sizeof strides / sizeof strides[0]; i++)
		if (strides[i] % 8 != 0) {
			snprintf(why, why_size, "stride %lld not a multiple of 8 elements (16-byte loads)",
				 (long long)strides[i]);
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
	if (p->batch > 65535 || p->heads > 65535) {
		snprintf(why, why_size, "batch %d or heads %d above the grid limit 65535", p->batch,
			 p->heads);
		return 0;
	}
	if ((int64_t)p->q_len * (p->heads / p->kv_heads) > INT32_MAX) {
		snprintf(why, why_size, "q_len %d times the GQA group overflows 32-bit row indices",
			 p->q_len);
		return 0;
	}
	return 1;
}

int mfma_supports(const struct fa_problem *p, char *why, size_t why_size)
{
	char arch[64];
	if (!supports_common(p, why, why_size))
		return 0;
	const int kind = device_kind(arch, sizeof arch);
	if (kind == -2) {
		snprintf(why, why_size, "no HIP device to ask for its architecture (%s)", arch);
		return 0;
	}
	if (kind != FA_FRAG_MFMA_16X16X16) {
		snprintf(why, why_size, "device '%s' has no MFMA bf16_1k unit (gfx90a, gfx94x)", arch);
		return 0;
	}
	return 1;
}

int wmma_supports(const struct fa_problem *p, char *why, size_t why_size)
{
	char arch[64];
	if (!supports_common(p, why, why_size))
		return 0;
	const int kind = device_kind(arch, sizeof arch);
	if (kind == -2) {
		snprintf(why, why_size, "no HIP device to ask for its architecture (%s)", arch);
		return 0;
	}
	if (kind != FA_FRAG_WMMA_GFX11 && kind != FA_FRAG_WMMA_GFX12) {
		snprintf(why, why_size, "device '%s' has no WMMA unit (gfx11, gfx12)", arch);
		return 0;
	}
	return 1;
}

int mfma_launch(const struct fa_launch_args *a)
{
	return launch_kind<FA_FRAG_MFMA_16X16X16>(a);
}

size_t mfma_workspace(const struct fa_problem *p, const int32_t *params)
{
	return workspace_kind<FA_FRAG_MFMA_16X16X16>(p, params);
}

/* gfx11 or gfx12, asked once per device ordinal (a benign race: every
 * writer stores the same value). */
int wmma_kind_cached(void)
{
	static int cache[64]; /* 0: not asked; else kind + 1 */
	int dev = 0;
	char arch[64];
	if (hipGetDevice(&dev) != hipSuccess || dev < 0 || dev >= 64)
		return device_kind(arch, sizeof arch);
	const int k = __atomic_load_n(&cache[dev], __ATOMIC_RELAXED);
	if (k)
		return k - 1;
	const int kind = device_kind(arch, sizeof arch);
	if (kind >= 0) /* a failed query is asked again next time */
		__atomic_store_n(&cache[dev], kind + 1, __ATOMIC_RELAXED);
	return kind;
}

int wmma_launch(const struct fa_launch_args *a)
{
	const int kind = wmma_kind_cached();
	if (kind == FA_FRAG_WMMA_GFX11)
		return launch_kind<FA_FRAG_WMMA_GFX11>(a);
	if (kind == FA_FRAG_WMMA_GFX12)
		return launch_kind<FA_FRAG_WMMA_GFX12>(a);
	return (int)hipErrorInvalidDeviceFunction; /* supports() said no */
}

size_t wmma_workspace(const struct fa_problem *p, const int32_t *params)
{
	/* both layouts share the tile shape (BM, BN, DV), hence the workspace */
	return workspace_kind<FA_FRAG_WMMA_GFX12>(p, params);
}

const int32_t dims[] = {64, 72, 80, 96, 128, 256};

/* Tunables, in the order fa_mma::PARAM_* reads them (make_params). */
const int32_t order_allowed[] = {0, 1};
const struct fa_kernel_param amd_params[] = {
	{"splits", 0, NULL, 0, 0, 64,
	 "split-KV: key ranges per (query tile, head), merged by a second kernel; 0 = auto "
	 "(split only a grid under 80% of one wave of resident blocks, e.g. decode)"},
	{"order", 1, order_allowed, 2, 0, 1,
	 "block order: 1 = query tile by query tile across all heads, heaviest causal tiles "
	 "first; 0 = head by head"},
};

/* Positional initialisers, in the order of struct fa_kernel: name,
 * description, dtypes, head_dim_min, head_dim_max, head_dims, n_head_dims,
 * score_bytes, params, n_params, supports, workspace_bytes, launch,
 * test_only, struct_size. */
const struct fa_kernel amd_kernels[] = {
	{"hip_flash_mfma",
	 "FA2 forward on CDNA matrix cores (mfma_f32_16x16x16 f16/bf16_1k, wave64), fp32 "
	 "accumulation; gfx90a, gfx94x",
	 (1u << FA_DTYPE_FP16) | (1u << FA_DTYPE_BF16), 64, 256, dims, 6, 0, amd_params, 2,
	 mfma_supports, mfma_workspace, mfma_launch, 0, (uint32_t)sizeof(struct fa_kernel),
	 FA_PASS_FWD, 0, NULL},
	{"hip_flash_wmma",
	 "FA2 forward on RDNA matrix cores (wmma_f32_16x16x16 f16/bf16, wave32, gfx11 or gfx12 "
	 "layout), fp32 accumulation",
	 (1u << FA_DTYPE_FP16) | (1u << FA_DTYPE_BF16), 64, 256, dims, 6, 0, amd_params, 2,
	 wmma_supports, wmma_workspace, wmma_launch, 0, (uint32_t)sizeof(struct fa_kernel),
	 FA_PASS_FWD, 0, NULL},
};

} /* namespace */

extern "C" const struct fa_kernel *fa_hip_mma_kernels(int *n)
{
	*n = (int)(sizeof amd_kernels / sizeof amd_kernels[0]);
	return amd_kernels;
}
