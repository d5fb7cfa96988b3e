/* backend_hip.cpp - the HIP backend plugin, build/libfabench-hip.so: its
 * entry point fa_backend_plugin_init and the members of struct fa_backend_i
 * (SDK version 2: include/fabench/plugin.h) that HIP can give, on one AMD
 * device ($FABENCH_HIP_DEVICE, default 0) and one stream that every
 * operation is queued on.
 *
 * The kernels are the CUDA plugin's sources built as HIP (clang -x hip,
 * kernels/common/fa_gpu.h mapping cuda* to hip*): hip_dense is
 * kernels/cuda/cuda_dense.cu, hip_flash_simt kernels/cuda/flash_simt.cu
 * (with tiles that fit AMD's 64 KiB of LDS), and the input fill and the GPU
 * reference are data_gpu.cu and ref_gpu.cu. Their launchers take the same
 * context, struct fa_cuda_ctx (cuda_kernels.h), so this file fills one. The
 * members the CUDA plugin has too and the start-up are written once, in
 * kernels/common/fa_backend_gpu.h, which this file gives its HIP part.
 *
 * Left to the harness's fallbacks (members NULL): telemetry (ROCm SMI's
 * structs changed between releases, and no AMD GPU here could prove a
 * binding), graphs and calibrate (cuBLAS in the CUDA plugin). Return codes
 * are hipError_t values. Never run on AMD hardware: docs/hip.md.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/fa_backend_gpu.h"
#include "../cuda/cuda_kernels.h"
#include "hip_flash_amd_mma.h"

namespace {

/* ---- the kernel table ---- */

constexpr uint32_t HP_ALL_DTYPES =
	(1u << FA_DTYPE_FP32) | (1u << FA_DTYPE_FP16) | (1u << FA_DTYPE_BF16);

/* Positional: name, description, dtypes, head_dim_min, head_dim_max,
 * head_dims, n_head_dims, score_bytes, params, n_params, supports,
 * workspace_bytes, launch, test_only, struct_size (0: the version 1
 * members only, as the CUDA plugin's tables say by leaving it out), then
 * version 3's pass, writes_lse, fwd_kernel (read only where struct_size
 * covers them). */
const struct fa_kernel hp_kernels[] = {
	{"hip_dense",
	 "naive: scale Q K^T into an fp32 score tensor in global memory, mask, softmax, times V "
	 "(cuda_dense's source)",
	 HP_ALL_DTYPES, 1, 512, NULL, 0, 4 /* the fp32 score tensor */, NULL, 0,
	 fa_cuda_dense_supports, fa_cuda_dense_workspace_bytes, fa_cuda_dense_launch, 0, 0,
	 FA_PASS_FWD, 0, NULL},
	{"hip_flash_simt",
	 "FlashAttention-2 on vector ALUs (no matrix cores), fp32 accumulation, tiles within 64 KiB "
	 "of LDS (cuda_flash_simt's source)",
	 HP_ALL_DTYPES, 1, 256, NULL, 0, 0, NULL, 0, fa_cuda_flash_simt_supports, NULL,
	 fa_cuda_flash_simt_launch, 0, sizeof(struct fa_kernel), FA_PASS_FWD,
	 1 /* writes the LSE (for hip_flash_bwd_simt) */, NULL},
	{"hip_flash_bwd_simt",
	 "FlashAttention-2 backward on vector ALUs: delta pre-pass, P from the LSE, dK/dV per key "
	 "tile (cuda_flash_bwd_simt's source)",
	 HP_ALL_DTYPES, 1, 256, NULL, 0, 0, NULL, 0, fa_cuda_flash_bwd_simt_supports,
	 fa_cuda_flash_bwd_simt_workspace_bytes, fa_cuda_flash_bwd_simt_launch, 0,
	 sizeof(struct fa_kernel), FA_PASS_BWD, 0, "hip_flash_simt"},
	{"hip_test_fault", "test: stores to an unmapped address (a memory fault, sticky)",
	 HP_ALL_DTYPES, 1, 512, NULL, 0, 0, NULL, 0, NULL, NULL, fa_cuda_test_fault_launch, 1, 0,
	 FA_PASS_FWD, 0, NULL},
	{"hip_test_hang", "test: waits forever for a device flag that nothing sets", HP_ALL_DTYPES,
	 1, 512, NULL, 0, 0, NULL, 0, NULL, NULL, fa_cuda_test_hang_launch, 1, 0, FA_PASS_FWD, 0,
	 NULL},
};
constexpr int HP_N_OWN = (int)(sizeof hp_kernels / sizeof hp_kernels[0]);

/* The table the plugin hands out: hp_kernels, then the matrix-core kernels
 * (hip_flash_mfma, hip_flash_wmma: kernels/hip/hip_flash_amd_mma.hip), in
 * one array, built once. */
constexpr int HP_MAX_KERNELS = 16;

struct hp_table {
	struct fa_kernel k[HP_MAX_KERNELS];
	int n;
	hp_table() : k(), n(0)
	{
		int n_mma = 0;
		const struct fa_kernel *mma = fa_hip_mma_kernels(&n_mma);
		for (int i = 0; i < HP_N_OWN && n < HP_MAX_KERNELS; i++)
			k[n++] = hp_kernels[i];
		for (int i = 0; i < n_mma && n < HP_MAX_KERNELS; i++)
			k[n++] = mma[i];
	}
};

const hp_table &hp_all(void)
{
	static const hp_table t; /* C++11: initialized once, thread-safe */
	return t;
}

/* flush_cache writes this many times the L2, and at least HP_FLUSH_MIN_BYTES
 * (MI300X's 256 MB Infinity Cache sits behind the L2 and is not counted in
 * l2CacheSize: the minimum covers it) */
constexpr int64_t HP_FLUSH_L2_FACTOR = 4;
constexpr int64_t HP_FLUSH_MIN_BYTES = (int64_t)512 << 20;

/* ---- the backend's part of fa_backend_gpu.h ---- */

void fa_gpu_version_text(int v, char *buf, size_t size)
{
	/* HIP encodes major * 10000000 + minor * 100000 + patch */
	snprintf(buf, size, "%d.%d", v / 10000000, (v / 100000) % 100);
}

void fa_gpu_describe(const struct fa_cuda_ctx *c, const hipDeviceProp_t *prop,
		     struct fa_device_info *info)
{
	(void)c;
	/* "gfx90a:sramecc+:xnack-": the arch is the part before the features */
	snprintf(info->arch, sizeof info->arch, "%.*s", (int)strcspn(prop->gcnArchName, ":"),
		 prop->gcnArchName);
	info->clock_mhz = prop->clockRate / 1000.0; /* kHz */
}

/* One line for a runtime error: "hipErrorX (what it means)", or just the
 * name where the runtime's string is the name again (ROCm 5.2). */
void fa_gpu_why(char *why, size_t why_size, const char *what, hipError_t e)
{
	const char *name = hipGetErrorName(e), *text = hipGetErrorString(e);
	if (strcmp(name, text) == 0)
		snprintf(why, why_size, "%s: %s", what, name);
	else
		snprintf(why, why_size, "%s: %s (%s)", what, name, text);
}

/* ---- kernels ---- */

int hp_kernel_count(void *ctx)
{
	(void)ctx;
	return hp_all().n;
}

const struct fa_kernel *hp_kernel_get(void *ctx, int i)
{
	(void)ctx;
	return i >= 0 && i < hp_all().n ? &hp_all().k[i] : NULL;
}

/* ---- errors ---- */

const char *hp_error_string(void *ctx, int code)
{
	/* per thread, valid until this thread's next call */
	static thread_local char buf[256];
	(void)ctx;
	const char *name = hipGetErrorName((hipError_t)code);
	const char *text = hipGetErrorString((hipError_t)code);
	if (strcmp(name, text) == 0)
		snprintf(buf, sizeof buf, "%s", name);
	else
		snprintf(buf, sizeof buf, "%s (%s)", name, text);
	return buf;
}

/* The errors after which the device is unusable for this process: a memory
 * fault or an aborted kernel leaves the queue in error. */
int hp_is_sticky(void *ctx, int code)
{
	(void)ctx;
	switch (code) {
	case hipErrorIllegalAddress:
	case hipErrorLaunchFailure:
	case hipErrorLaunchTimeOut:
	case hipErrorAssert:
	case hipErrorECCNotCorrectable:
		return 1;
	default:
		return 0;
	}
}

/* ---- data, cache, reference ---- */

int hp_flush_cache(void *ctx)
{
	return fa_gpu_flush_cache(ctx, HP_FLUSH_L2_FACTOR, HP_FLUSH_MIN_BYTES);
}

/* ---- shutdown ---- */

void hp_shutdown(void *ctx)
{
	struct fa_cuda_ctx *c = fa_gpu_ctx(ctx);
	if (!c)
		return;
	fa_gpu_release(c);
	free(c);
}

/* Every member of struct fa_backend_i, in its order (C++17 has no
 * designated initialisers); NULL: the harness's fallback. */
const struct fa_backend_i hp_iface = {
	fa_gpu_device_info,
	fa_gpu_alloc,
	fa_gpu_free,
	fa_gpu_upload,
	fa_gpu_download,
	fa_gpu_memset,
	fa_gpu_synchronize,
	fa_gpu_event_create,
	fa_gpu_event_record,
	fa_gpu_event_elapsed_ms,
	fa_gpu_event_destroy,
	hp_kernel_count,
	hp_kernel_get,
	hp_error_string,
	hp_is_sticky,
	fa_gpu_fill_random,
	hp_flush_cache,
	hp_shutdown,
	fa_gpu_reference,
	NULL, /* telemetry */
	NULL, /* graph_create */
	NULL, /* graph_launch */
	NULL, /* graph_destroy */
	NULL, /* calibrate */
	/* version 2 */
	fa_gpu_stream,
	/* version 4 */
	NULL, /* graph_create_sets */
};

/* ---- start-up ---- */

/* Why hipGetDeviceCount failed with e, other than for want of a device. */
void hp_why_unusable(hipError_t e, char *why, size_t why_size)
{
	fa_gpu_why(why, why_size, "HIP runtime unusable", e);
	(void)hipGetLastError();
}

const struct fa_gpu_plugin hp_plugin = {
	"hip",
	"HIP",
	"FABENCH_HIP_DEVICE",
	/* the LDS a workgroup may use (64 KiB on CDNA and RDNA) */
	hipDeviceAttributeMaxSharedMemoryPerBlock,
	"; built for gfx90a gfx942 gfx1100 gfx1151 gfx1201",
	hp_why_unusable,
	&hp_iface,
};

} /* namespace */

/* The table without a device, for `fabench kernels` where init refused
 * (FA_PLUGIN_KERNELS_SYMBOL): touches no runtime call. */
extern "C" const struct fa_kernel *fa_backend_plugin_kernels(int harness_api_version, int *n)
{
	/* an array of this header's records: only for a harness of the same
	 * version, which steps through it with the same record size */
	if (harness_api_version != FA_BACKEND_API_VERSION) {
		*n = 0;
		return NULL;
	}
	*n = hp_all().n;
	return hp_all().k;
}

extern "C" int fa_backend_plugin_init(int harness_api_version, struct fa_backend *out, char *why,
				      size_t why_size)
{
	return fa_gpu_plugin_init(&hp_plugin, harness_api_version, out, why, why_size);
}
