/* backend_cuda.cu - the CUDA backend plugin, build/libfabench-cuda.so: its
 * entry point fa_backend_plugin_init and every member of struct
 * fa_backend_i (SDK version 2: include/fabench/plugin.h), on one device ($FABENCH_CUDA_DEVICE, default 0) and one
 * stream that every operation is queued on. The kernel table is ours
 * (cuda_dense, cuda_flash_simt, cuda_flash_bwd_simt, two test kernels) followed by the
 * tensor-core family's (flash_mma_table.cu) and the Hopper one's
 * (flash_wgmma.cu).
 *
 * Return codes are cudaError_t values, plus FA_CUDA_ERR_CUBLAS + status and
 * FA_CUDA_ERR_NVML + status (cuda_kernels.h). The CUDA-only host parts each
 * have their own section: NVML telemetry (dlopen'ed, no header needed) and
 * graph capture; cuBLAS lives in calibrate.cu.
 */
#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_kernels.h"
#include "flash_mma.h"
#include "flash_wgmma.h"

namespace {

/* ---- the kernel table ---- */

constexpr uint32_t CU_ALL_DTYPES =
	(1u << FA_DTYPE_FP32) | (1u << FA_DTYPE_FP16) | (1u << FA_DTYPE_BF16);

/* Positional: name, description, dtypes, head_dim_min, head_dim_max,
 * head_dims, n_head_dims, score_bytes, params, n_params, supports,
 * workspace_bytes, launch, test_only, then (where given) struct_size and
 * version 3's pass, writes_lse, fwd_kernel. */
const struct fa_kernel cu_kernels[] = {
	{"cuda_dense",
	 "naive: scale Q K^T into an fp32 score tensor in global memory, mask, softmax, times V",
	 CU_ALL_DTYPES, 1, 1024, NULL, 0, 4 /* the fp32 score tensor */, NULL, 0,
	 fa_cuda_dense_supports, fa_cuda_dense_workspace_bytes, fa_cuda_dense_launch, 0},
	{"cuda_flash_simt",
	 "FlashAttention-2 on CUDA cores (no tensor cores), fp32 accumulation, 64-row query tiles",
	 CU_ALL_DTYPES, 1, 256, NULL, 0, 0, NULL, 0, fa_cuda_flash_simt_supports, NULL,
	 fa_cuda_flash_simt_launch, 0, sizeof(struct fa_kernel), FA_PASS_FWD, 1 /* writes the LSE */,
	 NULL},
	{"cuda_flash_bwd_simt",
	 "FlashAttention-2 backward on CUDA cores: delta pre-pass, P from the LSE, dK/dV per key tile",
	 CU_ALL_DTYPES, 1, 256, NULL, 0, 0, NULL, 0, fa_cuda_flash_bwd_simt_supports,
	 fa_cuda_flash_bwd_simt_workspace_bytes, fa_cuda_flash_bwd_simt_launch, 0,
	 sizeof(struct fa_kernel), FA_PASS_BWD, 0, "cuda_flash_simt"},
	{"cuda_test_fault", "test: stores to an unmapped address (cudaErrorIllegalAddress, sticky)",
	 CU_ALL_DTYPES, 1, 512, NULL, 0, 0, NULL, 0, NULL, NULL, fa_cuda_test_fault_launch, 1},
	{"cuda_test_hang", "test: waits forever for a device flag that nothing sets",
	 CU_ALL_DTYPES, 1, 512, NULL, 0, 0, NULL, 0, NULL, NULL, fa_cuda_test_hang_launch, 1},
};
constexpr int CU_N_KERNELS = (int)(sizeof cu_kernels / sizeof cu_kernels[0]);

/* flush_cache writes this many times the L2, and at least CU_FLUSH_MIN_BYTES
 * (the harness asks for 2x; the margin covers L2s that keep lines in two
 * partitions, as the H100's does) */
constexpr int64_t CU_FLUSH_L2_FACTOR = 4;
constexpr int64_t CU_FLUSH_MIN_BYTES = (int64_t)64 << 20;

struct fa_cuda_ctx *cu_ctx(void *ctx)
{
	return (struct fa_cuda_ctx *)ctx;
}

/* Makes the plugin's device current on the calling thread (the runtime's
 * current device is per thread; the harness may call from several). */
int cu_bind(struct fa_cuda_ctx *c)
{
	int cur = -1;
	if (cudaGetDevice(&cur) == cudaSuccess && cur == c->device)
		return 0;
	return (int)cudaSetDevice(c->device);
}

/* ---- device description ---- */

void cu_version_text(int v, char *buf, size_t size)
{
	/* the runtime encodes 13.0 as 13000 */
	snprintf(buf, size, "%d.%d", v / 1000, (v % 1000) / 10);
}

int cu_fill_info(struct fa_cuda_ctx *c)
{
	struct fa_device_info *info = &c->info;
	cudaDeviceProp prop;
	size_t free_b = 0, total_b = 0;
	int v = 0, code;
	memset(info, 0, sizeof *info);
	if ((code = (int)cudaGetDeviceProperties(&prop, c->device)) != 0)
		return code;
	snprintf(info->name, sizeof info->name, "%.127s", prop.name);
	snprintf(info->arch, sizeof info->arch, "sm_%d%d", prop.major, prop.minor);
	if (cudaDriverGetVersion(&v) == cudaSuccess)
		cu_version_text(v, info->driver, sizeof info->driver);
	if (cudaRuntimeGetVersion(&v) == cudaSuccess)
		cu_version_text(v, info->runtime, sizeof info->runtime);
	if ((code = (int)cudaMemGetInfo(&free_b, &total_b)) != 0)
		return code;
	info->mem_total_bytes = (int64_t)total_b;
	info->mem_free_bytes = (int64_t)free_b;
	info->sm_count = prop.multiProcessorCount;
	info->l2_bytes = prop.l2CacheSize;
	if (cudaDeviceGetAttribute(&v, cudaDevAttrClockRate, c->device) == cudaSuccess)
		info->clock_mhz = v / 1000.0; /* kHz */
	info->host_memory = 0;
	return 0;
}

int cu_device_info(void *ctx, struct fa_device_info *out)
{
	struct fa_cuda_ctx *c = cu_ctx(ctx);
	size_t free_b = 0, total_b = 0;
	int code;
	if ((code = cu_bind(c)) != 0)
		return code;
	if ((code = (int)cudaMemGetInfo(&free_b, &total_b)) != 0)
		return code;
	c->info.mem_free_bytes = (int64_t)free_b;
	*out = c->info;
	return 0;
}

/* ---- memory ---- */

int cu_alloc(void *ctx, size_t bytes, void **ptr)
{
	struct fa_cuda_ctx *c = cu_ctx(ctx);
	int code;
	*ptr = NULL;
	if ((code = cu_bind(c)) != 0)
		return code;
	/* a zero-byte request still gets a real pointer: NULL means failure */
	code = (int)cudaMalloc(ptr, bytes ? bytes : 1);
	if (code != 0) {
		*ptr = NULL;
		(void)cudaGetLastError(); /* an out-of-memory must not haunt the next launch */
	}
	return code;
}

void cu_free(void *ctx, void *ptr)
{
	(void)ctx;
	if (ptr)
		(void)cudaFree(ptr);
}

int cu_copy(struct fa_cuda_ctx *c, void *dst, const void *src, size_t bytes, cudaMemcpyKind kind)
{
	int code;
	if (bytes == 0)
		return 0;
	if ((code = cu_bind(c)) != 0 ||
	    (code = (int)cudaMemcpyAsync(dst, src, bytes, kind, c->stream)) != 0 ||
	    (code = (int)cudaStreamSynchronize(c->stream)) != 0)
		return code;
	return 0;
}

int cu_upload(void *ctx, void *dst, const void *src, size_t bytes)
{
	return cu_copy(cu_ctx(ctx), dst, src, bytes, cudaMemcpyHostToDevice);
}

int cu_download(void *ctx, void *dst, const void *src, size_t bytes)
{
	return cu_copy(cu_ctx(ctx), dst, src, bytes, cudaMemcpyDeviceToHost);
}

int cu_memset(void *ctx, void *dst, int byte, size_t bytes)
{
	struct fa_cuda_ctx *c = cu_ctx(ctx);
	int code;
	if (bytes == 0)
		return 0;
	if ((code = cu_bind(c)) != 0)
		return code;
	return (int)cudaMemsetAsync(dst, byte, bytes, c->stream);
}

int cu_synchronize(void *ctx)
{
	struct fa_cuda_ctx *c = cu_ctx(ctx);
	int code;
	if ((code = cu_bind(c)) != 0)
		return code;
	return (int)cudaStreamSynchronize(c->stream);
}

/* ---- events ---- */

int cu_event_create(void *ctx, void **ev)
{
	struct fa_cuda_ctx *c = cu_ctx(ctx);
	cudaEvent_t e = NULL;
	int code;
	*ev = NULL;
	if ((code = cu_bind(c)) != 0 || (code = (int)cudaEventCreate(&e)) != 0)
		return code;
	*ev = (void *)e;
	return 0;
}

int cu_event_record(void *ctx, void *ev)
{
	return (int)cudaEventRecord((cudaEvent_t)ev, cu_ctx(ctx)->stream);
}

int cu_event_elapsed_ms(void *ctx, void *start, void *stop, double *ms)
{
	float f = 0.0f;
	int code;
	(void)ctx;
	*ms = 0.0;
	if ((code = (int)cudaEventSynchronize((cudaEvent_t)stop)) != 0 ||
	    (code = (int)cudaEventElapsedTime(&f, (cudaEvent_t)start, (cudaEvent_t)stop)) != 0)
		return code;
	*ms = f;
	return 0;
}

void cu_event_destroy(void *ctx, void *ev)
{
	(void)ctx;
	if (ev)
		(void)cudaEventDestroy((cudaEvent_t)ev);
}

/* ---- kernels: ours, then the tensor-core family's (flash_mma_table.cu),
 * then the Hopper one's (flash_wgmma.cu) ---- */

int cu_kernel_count(void *ctx)
{
	(void)ctx;
	return CU_N_KERNELS + fa_cuda_mma_kernel_count() + fa_cuda_wgmma_kernel_count();
}

const struct fa_kernel *cu_kernel_get(void *ctx, int i)
{
	(void)ctx;
	if (i >= 0 && i < CU_N_KERNELS)
		return &cu_kernels[i];
	if (i >= CU_N_KERNELS && i < CU_N_KERNELS + fa_cuda_mma_kernel_count())
		return fa_cuda_mma_kernel(i - CU_N_KERNELS);
	return fa_cuda_wgmma_kernel(i - CU_N_KERNELS - fa_cuda_mma_kernel_count());
}

/* ---- errors ---- */

const char *cu_error_string(void *ctx, int code)
{
	/* per thread, valid until this thread's next call */
	static thread_local char buf[256];
	(void)ctx;
	if (code == FA_CUDA_ERR_NVML + FA_CUDA_NVML_LIBRARY_NOT_FOUND)
		snprintf(buf, sizeof buf, "NVML not available (libnvidia-ml.so.1 not found)");
	else if (code == FA_CUDA_ERR_NVML + FA_CUDA_NVML_FUNCTION_NOT_FOUND)
		snprintf(buf, sizeof buf, "NVML lacks a function fabench needs");
	else if (code >= FA_CUDA_ERR_NVML && code < FA_CUDA_ERR_NVML + 0x10000)
		snprintf(buf, sizeof buf, "NVML error %d", code - FA_CUDA_ERR_NVML);
	else if (code >= FA_CUDA_ERR_CUBLAS && code < FA_CUDA_ERR_CUBLAS + 0x10000)
		snprintf(buf, sizeof buf, "cuBLAS status %d", code - FA_CUDA_ERR_CUBLAS);
	else
		snprintf(buf, sizeof buf, "%s (%s)", cudaGetErrorName((cudaError_t)code),
			 cudaGetErrorString((cudaError_t)code));
	return buf;
}

/* The errors after which "the process must be terminated and relaunched"
 * (driver_types.h): the context is lost and every later call fails. */
int cu_is_sticky(void *ctx, int code)
{
	(void)ctx;
	switch (code) {
	case cudaErrorIllegalAddress:
	case cudaErrorLaunchTimeout:
	case cudaErrorAssert:
	case cudaErrorHardwareStackError:
	case cudaErrorIllegalInstruction:
	case cudaErrorMisalignedAddress:
	case cudaErrorInvalidAddressSpace:
	case cudaErrorInvalidPc:
	case cudaErrorLaunchFailure:
	case cudaErrorTensorMemoryLeak:
	case cudaErrorECCUncorrectable:
	case cudaErrorContained:
	case cudaErrorExternalDevice:
	case cudaErrorMpsClientTerminated:
		return 1;
	default:
		return 0;
	}
}

/* ---- data, cache, reference ---- */

int cu_fill_random(void *ctx, void *dst, const struct fa_problem *p, int tensor, int dist,
		   uint64_t seed)
{
	struct fa_cuda_ctx *c = cu_ctx(ctx);
	int code;
	if ((code = cu_bind(c)) != 0)
		return code;
	return fa_cuda_fill_random(c->stream, dst, p, tensor, dist, seed);
}

/* FABENCH_FLUSH=clean: after the memset, read the flush buffer back, so
 * that the L2 ends full of clean lines. The memset alone leaves up to an
 * L2 of dirty lines, written back while the next timed kernel runs (on the
 * H100 about 50 MB, ~16 us: most of a batch-1 decode's time). A sink
 * store that never happens keeps the loads. */
static __global__ void cu_flush_read_kernel(const uint4 *buf, size_t n, unsigned *sink)
{
	unsigned acc = 0;
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x) {
		const uint4 v = buf[i];
		acc ^= v.x ^ v.y ^ v.z ^ v.w;
	}
	if (acc == 0x9e3779b9u && threadIdx.x == 1023)
		*sink = acc;
}

int cu_flush_cache(void *ctx)
{
	struct fa_cuda_ctx *c = cu_ctx(ctx);
	int code;
	if (!c->flush_buf) {
		int64_t bytes = CU_FLUSH_L2_FACTOR * c->info.l2_bytes;
		if (bytes < CU_FLUSH_MIN_BYTES)
			bytes = CU_FLUSH_MIN_BYTES;
		if ((code = cu_alloc(ctx, (size_t)bytes, &c->flush_buf)) != 0)
			return code;
		c->flush_bytes = (size_t)bytes;
	}
	/* a different byte each time, so no write can be elided as a no-op */
	code = (int)cudaMemsetAsync(c->flush_buf, (int)(c->flush_count++ & 0xffu), c->flush_bytes,
				    c->stream);
	const char *mode = getenv("FABENCH_FLUSH");
	if (code == 0 && mode && strcmp(mode, "clean") == 0) {
		cu_flush_read_kernel<<<1024, 512, 0, c->stream>>>(
			static_cast<const uint4 *>(c->flush_buf), c->flush_bytes / 16,
			static_cast<unsigned *>(c->flush_buf));
		code = (int)cudaGetLastError();
	}
	return code;
}

int cu_reference(void *ctx, const struct fa_launch_args *a, const int64_t *rows, int64_t n_rows,
		 double *out)
{
	struct fa_cuda_ctx *c = cu_ctx(ctx);
	int code;
	if ((code = cu_bind(c)) != 0)
		return code;
	return fa_cuda_reference(c->stream, a, rows, n_rows, out);
}

int cu_calibrate(void *ctx, struct fa_calibration *out)
{
	struct fa_cuda_ctx *c = cu_ctx(ctx);
	int code;
	if ((code = cu_bind(c)) != 0)
		return code;
	return fa_cuda_calibrate(c->stream, &c->info, out);
}

/* ---- NVML telemetry (CUDA only): dlopen'ed, types and values of nvml.h
 * declared here. Absent NVML is not an error: telemetry says unknown. ---- */

} /* namespace */

struct fa_cuda_nvml {
	void *dl;
	void *dev; /* nvmlDevice_t */
	int (*shutdown)(void);
	int (*clock)(void *dev, int type, unsigned *mhz);
	int (*max_clock)(void *dev, int type, unsigned *mhz);
	int (*temperature)(void *dev, int sensor, unsigned *celsius);
	int (*power)(void *dev, unsigned *milliwatts);
	int (*reasons)(void *dev, unsigned long long *bits);
};

namespace {

enum { CU_NVML_CLOCK_SM = 1, CU_NVML_TEMPERATURE_GPU = 0 };

void cu_nvml_close(struct fa_cuda_nvml *n)
{
	if (!n)
		return;
	if (n->shutdown)
		n->shutdown();
	if (n->dl)
		dlclose(n->dl);
	free(n);
}

/* Opens NVML and finds the plugin's device by its PCI bus id (NVML numbers
 * devices differently from CUDA_VISIBLE_DEVICES). Returns 0 or a code. */
int cu_nvml_open(struct fa_cuda_ctx *c)
{
	struct fa_cuda_nvml *n = (struct fa_cuda_nvml *)calloc(1, sizeof *n);
	int (*init)(void);
	int (*by_pci)(const char *bus_id, void **dev);
	int (*by_index)(unsigned index, void **dev);
	char bus_id[32];
	int st = FA_CUDA_NVML_LIBRARY_NOT_FOUND;
	if (!n)
		return (int)cudaErrorMemoryAllocation;
	n->dl = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!n->dl)
		goto fail;
	st = FA_CUDA_NVML_FUNCTION_NOT_FOUND;
	*(void **)&init = dlsym(n->dl, "nvmlInit_v2");
	*(void **)&by_pci = dlsym(n->dl, "nvmlDeviceGetHandleByPciBusId_v2");
	*(void **)&by_index = dlsym(n->dl, "nvmlDeviceGetHandleByIndex_v2");
	*(void **)&n->shutdown = dlsym(n->dl, "nvmlShutdown");
	*(void **)&n->clock = dlsym(n->dl, "nvmlDeviceGetClockInfo");
	*(void **)&n->max_clock = dlsym(n->dl, "nvmlDeviceGetMaxClockInfo");
	*(void **)&n->temperature = dlsym(n->dl, "nvmlDeviceGetTemperature");
	*(void **)&n->power = dlsym(n->dl, "nvmlDeviceGetPowerUsage");
	*(void **)&n->reasons = dlsym(n->dl, "nvmlDeviceGetCurrentClocksEventReasons");
	if (!n->reasons) /* the name before driver 535 */
		*(void **)&n->reasons = dlsym(n->dl, "nvmlDeviceGetCurrentClocksThrottleReasons");
	if (!init || !n->shutdown || !n->clock) {
		n->shutdown = NULL; /* NVML was not initialised */
		goto fail;
	}
	if ((st = init()) != 0) {
		n->shutdown = NULL; /* nothing to shut down */
		goto fail;
	}
	st = FA_CUDA_NVML_FUNCTION_NOT_FOUND;
	if (by_pci && cudaDeviceGetPCIBusId(bus_id, (int)sizeof bus_id, c->device) == cudaSuccess)
		st = by_pci(bus_id, &n->dev);
	if (st != 0 && by_index)
		st = by_index((unsigned)c->device, &n->dev);
	if (st != 0)
		goto fail;
	c->nvml = n;
	return 0;
fail:
	cu_nvml_close(n);
	c->nvml_code = FA_CUDA_ERR_NVML + (st > 0 ? st : 999);
	return c->nvml_code;
}

int cu_telemetry(void *ctx, struct fa_telemetry *out)
{
	struct fa_cuda_ctx *c = cu_ctx(ctx);
	struct fa_cuda_nvml *n;
	unsigned u = 0;
	unsigned long long bits = 0;
	int code;
	out->sm_clock_mhz = out->sm_clock_max_mhz = out->temp_c = out->power_w = NAN;
	out->throttle_reasons = -1;
	if (c->nvml_code)
		return c->nvml_code;
	if (!c->nvml && (code = cu_nvml_open(c)) != 0)
		return code;
	n = c->nvml;
	/* the clock is what the harness needs; the rest may be unsupported */
	if ((code = n->clock(n->dev, CU_NVML_CLOCK_SM, &u)) != 0)
		return FA_CUDA_ERR_NVML + code;
	out->sm_clock_mhz = u;
	if (n->max_clock && n->max_clock(n->dev, CU_NVML_CLOCK_SM, &u) == 0)
		out->sm_clock_max_mhz = u;
	if (n->temperature && n->temperature(n->dev, CU_NVML_TEMPERATURE_GPU, &u) == 0)
		out->temp_c = u;
	if (n->power && n->power(n->dev, &u) == 0)
		out->power_w = u / 1000.0;
	if (n->reasons && n->reasons(n->dev, &bits) == 0)
		out->throttle_reasons = (int64_t)bits;
	return 0;
}

/* ---- graphs (CUDA only): n launches captured from the stream ---- */

int cu_graph_create(void *ctx, const struct fa_kernel *k, const struct fa_launch_args *a,
		    int n_launches, void **graph)
{
	struct fa_cuda_ctx *c = cu_ctx(ctx);
	struct fa_launch_args ca = *a;
	cudaGraph_t g = NULL;
	cudaGraphExec_t ge = NULL;
	int code, end;
	*graph = NULL;
	if (!k || !k->launch || n_launches < 1)
		return (int)cudaErrorInvalidValue;
	if ((code = cu_bind(c)) != 0)
		return code;
	ca.stream = (void *)c->stream; /* the launcher must queue where we capture */
	ca.backend_ctx = ctx;
	if ((code = (int)cudaStreamBeginCapture(c->stream, cudaStreamCaptureModeThreadLocal)) != 0)
		return code;
	for (int i = 0; i < n_launches && code == 0; i++)
		code = k->launch(&ca);
	end = (int)cudaStreamEndCapture(c->stream, &g); /* always: the stream leaves capture mode */
	if (code == 0)
		code = end;
	if (code == 0)
		code = (int)cudaGraphInstantiate(&ge, g, 0);
	if (g)
		(void)cudaGraphDestroy(g); /* the executable graph keeps what it needs */
	if (code != 0) {
		(void)cudaGetLastError();
		return code;
	}
	*graph = (void *)ge;
	return 0;
}

int cu_graph_launch(void *ctx, void *graph)
{
	return (int)cudaGraphLaunch((cudaGraphExec_t)graph, cu_ctx(ctx)->stream);
}

void cu_graph_destroy(void *ctx, void *graph)
{
	(void)ctx;
	if (graph)
		(void)cudaGraphExecDestroy((cudaGraphExec_t)graph);
}

/* ---- shutdown ---- */

void cu_shutdown(void *ctx)
{
	struct fa_cuda_ctx *c = cu_ctx(ctx);
	if (!c)
		return;
	cu_bind(c);
	(void)cudaStreamSynchronize(c->stream);
	if (c->flush_buf)
		(void)cudaFree(c->flush_buf);
	(void)cudaStreamDestroy(c->stream);
	cu_nvml_close(c->nvml);
	free(c);
}

/* ---- stream (version 2): the harness passes it to every launch, ours and
 * kernel plugins' ---- */

void *cu_stream(void *ctx)
{
	return (void *)cu_ctx(ctx)->stream;
}

/* Every member of struct fa_backend_i, in its order (C++17 has no
 * designated initialisers). */
const struct fa_backend_i cu_iface = {
	cu_device_info,
	cu_alloc,
	cu_free,
	cu_upload,
	cu_download,
	cu_memset,
	cu_synchronize,
	cu_event_create,
	cu_event_record,
	cu_event_elapsed_ms,
	cu_event_destroy,
	cu_kernel_count,
	cu_kernel_get,
	cu_error_string,
	cu_is_sticky,
	cu_fill_random,
	cu_flush_cache,
	cu_shutdown,
	cu_reference,
	cu_telemetry,
	cu_graph_create,
	cu_graph_launch,
	cu_graph_destroy,
	cu_calibrate,
	/* version 2 */
	cu_stream,
};

/* ---- start-up ---- */

/* One line for a runtime error: "cudaErrorX (what it means)". */
void cu_why(char *why, size_t why_size, const char *what, cudaError_t e)
{
	snprintf(why, why_size, "%s: %s (%s)", what, cudaGetErrorName(e), cudaGetErrorString(e));
}

/* The device ordinal from $FABENCH_CUDA_DEVICE (default 0); -1 with a reason
 * when it is not a number. */
int cu_device_from_env(char *why, size_t why_size)
{
	const char *env = getenv("FABENCH_CUDA_DEVICE");
	char *end = NULL;
	long v;
	if (!env || !*env)
		return 0;
	errno = 0;
	v = strtol(env, &end, 10);
	if (errno || *end || v < 0 || v > 1024) {
		snprintf(why, why_size, "FABENCH_CUDA_DEVICE '%s' is not a device number", env);
		return -1;
	}
	return (int)v;
}

} /* namespace */

extern "C" int fa_backend_plugin_init(int harness_api_version, struct fa_backend *out, char *why,
				      size_t why_size)
{
	struct fa_cuda_ctx *c = NULL;
	int dev, count = 0, optin = 0;
	cudaError_t e;
	if (harness_api_version < FA_BACKEND_API_VERSION) {
		snprintf(why, why_size,
			 "harness reads backend API versions up to %d; the cuda plugin is version %d",
			 harness_api_version, FA_BACKEND_API_VERSION);
		return 1;
	}
	if ((dev = cu_device_from_env(why, why_size)) < 0)
		return 1;
	e = cudaGetDeviceCount(&count);
	if (e == cudaErrorNoDevice || (e == cudaSuccess && count == 0)) {
		cu_why(why, why_size, "no CUDA device", cudaErrorNoDevice);
		(void)cudaGetLastError();
		return 1;
	}
	if (e == cudaErrorInsufficientDriver) {
		/* the usual cause on a machine without a GPU: no driver at all */
		void *drv = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
		if (drv)
			dlclose(drv);
		cu_why(why, why_size, drv ? "CUDA driver too old for this runtime"
					  : "no CUDA driver (libcuda.so.1 not found)",
		       e);
		return 1;
	}
	if (e != cudaSuccess) {
		cu_why(why, why_size, "CUDA runtime unusable", e);
		return 1;
	}
	if (dev >= count) {
		snprintf(why, why_size, "FABENCH_CUDA_DEVICE %d out of range: %d CUDA device%s", dev,
			 count, count == 1 ? "" : "s");
		return 1;
	}
	if ((e = cudaSetDevice(dev)) != cudaSuccess) {
		cu_why(why, why_size, "cannot use CUDA device", e);
		return 1;
	}
	c = (struct fa_cuda_ctx *)calloc(1, sizeof *c);
	if (!c) {
		snprintf(why, why_size, "out of memory");
		return 1;
	}
	c->device = dev;
	/* A blocking stream: work a launcher queues on the legacy default stream
	 * (a->stream NULL, as the runner passes) is still ordered with it and
	 * inside its timing events. */
	if ((e = cudaStreamCreateWithFlags(&c->stream, cudaStreamDefault)) != cudaSuccess) {
		cu_why(why, why_size, "cannot create a CUDA stream", e);
		free(c);
		return 1;
	}
	if ((e = (cudaError_t)cu_fill_info(c)) != cudaSuccess) {
		cu_why(why, why_size, "cannot describe the CUDA device", e);
		goto fail;
	}
	if ((e = cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev)) !=
	    cudaSuccess) {
		cu_why(why, why_size, "cannot query shared memory", e);
		goto fail;
	}
	c->smem_optin_bytes = optin;
	/* also proves the build has code for this device */
	if ((e = (cudaError_t)fa_cuda_flash_simt_setup(optin)) != cudaSuccess) {
		char what[200];
		snprintf(what, sizeof what, "cannot set up kernels on %.127s (%.15s)", c->info.name,
			 c->info.arch);
		cu_why(why, why_size, what, e);
		goto fail;
	}

	memset(out, 0, sizeof *out);
	out->api_version = FA_BACKEND_API_VERSION;
	out->struct_size = (uint32_t)sizeof *out;
	out->name = "cuda";
	out->context = c;
	out->iface = &cu_iface;
	return 0;
fail:
	(void)cudaStreamDestroy(c->stream);
	free(c);
	(void)cudaGetLastError();
	return 1;
}
