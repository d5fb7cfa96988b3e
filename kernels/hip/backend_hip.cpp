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
 * context, struct fa_cuda_ctx (cuda_kernels.h), so this file fills one.
 *
 * Left to the harness's fallbacks (members NULL): telemetry (ROCm SMI's
 * structs changed between releases, and no AMD GPU here could prove a
 * binding), graphs and calibrate (cuBLAS in the CUDA plugin). Return codes
 * are hipError_t values. Never run on AMD hardware: docs/hip.md.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

struct fa_cuda_ctx *hp_ctx(void *ctx)
{
	return (struct fa_cuda_ctx *)ctx;
}

/* Makes the plugin's device current on the calling thread. */
int hp_bind(struct fa_cuda_ctx *c)
{
	int cur = -1;
	if (hipGetDevice(&cur) == hipSuccess && cur == c->device)
		return 0;
	return (int)hipSetDevice(c->device);
}

/* ---- device description ---- */

void hp_version_text(int v, char *buf, size_t size)
{
	/* HIP encodes major * 10000000 + minor * 100000 + patch */
	snprintf(buf, size, "%d.%d", v / 10000000, (v / 100000) % 100);
}

int hp_fill_info(struct fa_cuda_ctx *c)
{
	struct fa_device_info *info = &c->info;
	hipDeviceProp_t prop;
	size_t free_b = 0, total_b = 0;
	int v = 0, code;
	memset(info, 0, sizeof *info);
	if ((code = (int)hipGetDeviceProperties(&prop, c->device)) != 0)
		return code;
	snprintf(info->name, sizeof info->name, "%.127s", prop.name);
	/* "gfx90a:sramecc+:xnack-": the arch is the part before the features */
	snprintf(info->arch, sizeof info->arch, "%.*s", (int)strcspn(prop.gcnArchName, ":"),
		 prop.gcnArchName);
	if (hipDriverGetVersion(&v) == hipSuccess)
		hp_version_text(v, info->driver, sizeof info->driver);
	if (hipRuntimeGetVersion(&v) == hipSuccess)
		hp_version_text(v, info->runtime, sizeof info->runtime);
	if ((code = (int)hipMemGetInfo(&free_b, &total_b)) != 0)
		return code;
	info->mem_total_bytes = (int64_t)total_b;
	info->mem_free_bytes = (int64_t)free_b;
	info->sm_count = prop.multiProcessorCount; /* compute units */
	info->l2_bytes = prop.l2CacheSize;
	info->clock_mhz = prop.clockRate / 1000.0; /* kHz */
	info->host_memory = 0;
	return 0;
}

int hp_device_info(void *ctx, struct fa_device_info *out)
{
	struct fa_cuda_ctx *c = hp_ctx(ctx);
	size_t free_b = 0, total_b = 0;
	int code;
	if ((code = hp_bind(c)) != 0)
		return code;
	if ((code = (int)hipMemGetInfo(&free_b, &total_b)) != 0)
		return code;
	c->info.mem_free_bytes = (int64_t)free_b;
	*out = c->info;
	return 0;
}

/* ---- memory ---- */

int hp_alloc(void *ctx, size_t bytes, void **ptr)
{
	struct fa_cuda_ctx *c = hp_ctx(ctx);
	int code;
	*ptr = NULL;
	if ((code = hp_bind(c)) != 0)
		return code;
	/* a zero-byte request still gets a real pointer: NULL means failure */
	code = (int)hipMalloc(ptr, bytes ? bytes : 1);
	if (code != 0) {
		*ptr = NULL;
		(void)hipGetLastError(); /* an out-of-memory must not haunt the next launch */
	}
	return code;
}

void hp_free(void *ctx, void *ptr)
{
	(void)ctx;
	if (ptr)
		(void)hipFree(ptr);
}

int hp_copy(struct fa_cuda_ctx *c, void *dst, const void *src, size_t bytes, hipMemcpyKind kind)
{
	int code;
	if (bytes == 0)
		return 0;
	if ((code = hp_bind(c)) != 0 ||
	    (code = (int)hipMemcpyAsync(dst, src, bytes, kind, c->stream)) != 0 ||
	    (code = (int)hipStreamSynchronize(c->stream)) != 0)
		return code;
	return 0;
}

int hp_upload(void *ctx, void *dst, const void *src, size_t bytes)
{
	return hp_copy(hp_ctx(ctx), dst, src, bytes, hipMemcpyHostToDevice);
}

int hp_download(void *ctx, void *dst, const void *src, size_t bytes)
{
	return hp_copy(hp_ctx(ctx), dst, src, bytes, hipMemcpyDeviceToHost);
}

int hp_memset(void *ctx, void *dst, int byte, size_t bytes)
{
	struct fa_cuda_ctx *c = hp_ctx(ctx);
	int code;
	if (bytes == 0)
		return 0;
	if ((code = hp_bind(c)) != 0)
		return code;
	return (int)hipMemsetAsync(dst, byte, bytes, c->stream);
}

int hp_synchronize(void *ctx)
{
	struct fa_cuda_ctx *c = hp_ctx(ctx);
	int code;
	if ((code = hp_bind(c)) != 0)
		return code;
	return (int)hipStreamSynchronize(c->stream);
}

/* ---- events ---- */

int hp_event_create(void *ctx, void **ev)
{
	struct fa_cuda_ctx *c = hp_ctx(ctx);
	hipEvent_t e = NULL;
	int code;
	*ev = NULL;
	if ((code = hp_bind(c)) != 0 || (code = (int)hipEventCreate(&e)) != 0)
		return code;
	*ev = (void *)e;
	return 0;
}

int hp_event_record(void *ctx, void *ev)
{
	return (int)hipEventRecord((hipEvent_t)ev, hp_ctx(ctx)->stream);
}

int hp_event_elapsed_ms(void *ctx, void *start, void *stop, double *ms)
{
	float f = 0.0f;
	int code;
	(void)ctx;
	*ms = 0.0;
	if ((code = (int)hipEventSynchronize((hipEvent_t)stop)) != 0 ||
	    (code = (int)hipEventElapsedTime(&f, (hipEvent_t)start, (hipEvent_t)stop)) != 0)
		return code;
	*ms = f;
	return 0;
}

void hp_event_destroy(void *ctx, void *ev)
{
	(void)ctx;
	if (ev)
		(void)hipEventDestroy((hipEvent_t)ev);
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

int hp_fill_random(void *ctx, void *dst, const struct fa_problem *p, int tensor, int dist,
		   uint64_t seed)
{
	struct fa_cuda_ctx *c = hp_ctx(ctx);
	int code;
	if ((code = hp_bind(c)) != 0)
		return code;
	return fa_cuda_fill_random(c->stream, dst, p, tensor, dist, seed);
}

int hp_flush_cache(void *ctx)
{
	struct fa_cuda_ctx *c = hp_ctx(ctx);
	int code;
	if (!c->flush_buf) {
		int64_t bytes = HP_FLUSH_L2_FACTOR * c->info.l2_bytes;
		if (bytes < HP_FLUSH_MIN_BYTES)
			bytes = HP_FLUSH_MIN_BYTES;
		if ((code = hp_alloc(ctx, (size_t)bytes, &c->flush_buf)) != 0)
			return code;
		c->flush_bytes = (size_t)bytes;
	}
	/* a different byte each time, so no write can be elided as a no-op */
	return (int)hipMemsetAsync(c->flush_buf, (int)(c->flush_count++ & 0xffu), c->flush_bytes,
				   c->stream);
}

int hp_reference(void *ctx, const struct fa_launch_args *a, const int64_t *rows, int64_t n_rows,
		 double *out)
{
	struct fa_cuda_ctx *c = hp_ctx(ctx);
	int code;
	if ((code = hp_bind(c)) != 0)
		return code;
	return fa_cuda_reference(c->stream, a, rows, n_rows, out);
}

/* ---- shutdown ---- */

void hp_shutdown(void *ctx)
{
	struct fa_cuda_ctx *c = hp_ctx(ctx);
	if (!c)
		return;
	hp_bind(c);
	(void)hipStreamSynchronize(c->stream);
	if (c->flush_buf)
		(void)hipFree(c->flush_buf);
	(void)hipStreamDestroy(c->stream);
	free(c);
}

void *hp_stream(void *ctx)
{
	return (void *)hp_ctx(ctx)->stream;
}

/* Every member of struct fa_backend_i, in its order (C++17 has no
 * designated initialisers); NULL: the harness's fallback. */
const struct fa_backend_i hp_iface = {
	hp_device_info,
	hp_alloc,
	hp_free,
	hp_upload,
	hp_download,
	hp_memset,
	hp_synchronize,
	hp_event_create,
	hp_event_record,
	hp_event_elapsed_ms,
	hp_event_destroy,
	hp_kernel_count,
	hp_kernel_get,
	hp_error_string,
	hp_is_sticky,
	hp_fill_random,
	hp_flush_cache,
	hp_shutdown,
	hp_reference,
	NULL, /* telemetry */
	NULL, /* graph_create */
	NULL, /* graph_launch */
	NULL, /* graph_destroy */
	NULL, /* calibrate */
	/* version 2 */
	hp_stream,
};

/* ---- start-up ---- */

/* One line for a runtime error: "hipErrorX (what it means)", or just the
 * name where the runtime's string is the name again (ROCm 5.2). */
void hp_why(char *why, size_t why_size, const char *what, hipError_t e)
{
	const char *name = hipGetErrorName(e), *text = hipGetErrorString(e);
	if (strcmp(name, text) == 0)
		snprintf(why, why_size, "%s: %s", what, name);
	else
		snprintf(why, why_size, "%s: %s (%s)", what, name, text);
}

/* The device ordinal from $FABENCH_HIP_DEVICE (default 0); -1 with a reason
 * when it is not a number. */
int hp_device_from_env(char *why, size_t why_size)
{
	const char *env = getenv("FABENCH_HIP_DEVICE");
	char *end = NULL;
	long v;
	if (!env || !*env)
		return 0;
	errno = 0;
	v = strtol(env, &end, 10);
	if (errno || *end || v < 0 || v > 1024) {
		snprintf(why, why_size, "FABENCH_HIP_DEVICE '%s' is not a device number", env);
		return -1;
	}
	return (int)v;
}

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
	struct fa_cuda_ctx *c = NULL;
	int dev, count = 0, optin = 0;
	hipError_t e;
	if (harness_api_version < FA_BACKEND_API_VERSION) {
		snprintf(why, why_size,
			 "harness reads backend API versions up to %d; the hip plugin is version %d",
			 harness_api_version, FA_BACKEND_API_VERSION);
		return 1;
	}
	if ((dev = hp_device_from_env(why, why_size)) < 0)
		return 1;
	/* without an AMD GPU (no /dev/kfd, or no agent) the runtime answers
	 * hipErrorNoDevice: say that, in the runtime's words */
	e = hipGetDeviceCount(&count);
	if (e == hipErrorNoDevice || (e == hipSuccess && count == 0)) {
		hp_why(why, why_size, "no HIP device", hipErrorNoDevice);
		(void)hipGetLastError();
		return 1;
	}
	if (e != hipSuccess) {
		hp_why(why, why_size, "HIP runtime unusable", e);
		(void)hipGetLastError();
		return 1;
	}
	if (dev >= count) {
		snprintf(why, why_size, "FABENCH_HIP_DEVICE %d out of range: %d HIP device%s", dev,
			 count, count == 1 ? "" : "s");
		return 1;
	}
	if ((e = hipSetDevice(dev)) != hipSuccess) {
		hp_why(why, why_size, "cannot use HIP device", e);
		return 1;
	}
	c = (struct fa_cuda_ctx *)calloc(1, sizeof *c);
	if (!c) {
		snprintf(why, why_size, "out of memory");
		return 1;
	}
	c->device = dev;
	/* a blocking stream: work queued on the null stream stays ordered with it */
	if ((e = hipStreamCreateWithFlags(&c->stream, hipStreamDefault)) != hipSuccess) {
		hp_why(why, why_size, "cannot create a HIP stream", e);
		free(c);
		return 1;
	}
	if ((e = (hipError_t)hp_fill_info(c)) != hipSuccess) {
		hp_why(why, why_size, "cannot describe the HIP device", e);
		goto fail;
	}
	/* the LDS a workgroup may use (64 KiB on CDNA and RDNA) */
	if ((e = hipDeviceGetAttribute(&optin, hipDeviceAttributeMaxSharedMemoryPerBlock, dev)) !=
	    hipSuccess) {
		hp_why(why, why_size, "cannot query shared memory", e);
		goto fail;
	}
	c->smem_optin_bytes = optin;
	/* also proves the build has code for this device */
	if ((e = (hipError_t)fa_cuda_flash_simt_setup(optin)) != hipSuccess) {
		char what[200];
		snprintf(what, sizeof what,
			 "cannot set up kernels on %.127s (%.15s; built for gfx90a gfx942 gfx1100 "
			 "gfx1151 gfx1201)",
			 c->info.name, c->info.arch);
		hp_why(why, why_size, what, e);
		goto fail;
	}

	memset(out, 0, sizeof *out);
	out->api_version = FA_BACKEND_API_VERSION;
	out->struct_size = (uint32_t)sizeof *out;
	out->name = "hip";
	out->context = c;
	out->iface = &hp_iface;
	return 0;
fail:
	(void)hipStreamDestroy(c->stream);
	free(c);
	(void)hipGetLastError();
	return 1;
}
