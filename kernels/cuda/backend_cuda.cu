/* backend_cuda.cu - the CUDA backend plugin, build/libfabench-cuda.so: its
 * entry point fa_backend_plugin_init and every member of struct
 * fa_backend_i (SDK version 2: include/fabench/plugin.h), on one device ($FABENCH_CUDA_DEVICE, default 0) and one
 * stream that every operation is queued on. The kernel table is ours
 * (cuda_dense, cuda_flash_simt, cuda_flash_bwd_simt, cuda_flash_bwd_mma, two test kernels) followed by the
 * tensor-core family's (flash_mma_table.cu) and the Hopper ones
 * (flash_wgmma.cu, flash_bwd_wgmma.cu).
 *
 * The members the HIP plugin has too (device description, memory, events,
 * the input fill, the L2 flush, the reference, shutdown) and the start-up
 * are written once, in kernels/common/fa_backend_gpu.h; this file gives
 * that header its CUDA part. Return codes are cudaError_t values, plus
 * FA_CUDA_ERR_CUBLAS + status and FA_CUDA_ERR_NVML + status
 * (cuda_kernels.h). The CUDA-only host parts each have their own section:
 * NVML telemetry (dlopen'ed, no header needed) and graph capture; cuBLAS
 * lives in calibrate.cu.
 */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/fa_backend_gpu.h"
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
	{"cuda_flash_bwd_mma",
	 "FlashAttention-2 backward on tensor cores (mma.sync m16n8k16): delta pre-pass, dK/dV per "
	 "key block, dQ by fp32 atomics or deterministic (dq=1)",
	 (1u << FA_DTYPE_FP16) | (1u << FA_DTYPE_BF16), 1, 256, NULL, 0, 0,
	 fa_cuda_flash_bwd_mma_params, FA_CUDA_BWD_MMA_N_PARAMS, fa_cuda_flash_bwd_mma_supports,
	 fa_cuda_flash_bwd_mma_workspace_bytes, fa_cuda_flash_bwd_mma_launch, 0,
	 sizeof(struct fa_kernel), FA_PASS_BWD, 0, "cuda_flash_mma"},
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

/* ---- the backend's part of fa_backend_gpu.h ---- */

void fa_gpu_version_text(int v, char *buf, size_t size)
{
	/* the runtime encodes 13.0 as 13000 */
	snprintf(buf, size, "%d.%d", v / 1000, (v % 1000) / 10);
}

void fa_gpu_describe(const struct fa_cuda_ctx *c, const cudaDeviceProp *prop,
		     struct fa_device_info *info)
{
	int v = 0;
	snprintf(info->arch, sizeof info->arch, "sm_%d%d", prop->major, prop->minor);
	if (cudaDeviceGetAttribute(&v, cudaDevAttrClockRate, c->device) == cudaSuccess)
		info->clock_mhz = v / 1000.0; /* kHz */
}

/* One line for a runtime error: "cudaErrorX (what it means)". */
void fa_gpu_why(char *why, size_t why_size, const char *what, cudaError_t e)
{
	snprintf(why, why_size, "%s: %s (%s)", what, cudaGetErrorName(e), cudaGetErrorString(e));
}

/* ---- kernels: ours, then the tensor-core family's (flash_mma_table.cu),
 * then the Hopper ones (flash_wgmma.cu, flash_bwd_wgmma.cu) ---- */

int cu_kernel_count(void *ctx)
{
	(void)ctx;
	return CU_N_KERNELS + fa_cuda_mma_kernel_count() + fa_cuda_wgmma_kernel_count() +
	       fa_cuda_bwd_wgmma_kernel_count();
}

const struct fa_kernel *cu_kernel_get(void *ctx, int i)
{
	(void)ctx;
	if (i >= 0 && i < CU_N_KERNELS)
		return &cu_kernels[i];
	if (i >= CU_N_KERNELS && i < CU_N_KERNELS + fa_cuda_mma_kernel_count())
		return fa_cuda_mma_kernel(i - CU_N_KERNELS);
	i -= CU_N_KERNELS + fa_cuda_mma_kernel_count();
	if (i < fa_cuda_wgmma_kernel_count())
		return fa_cuda_wgmma_kernel(i);
	return fa_cuda_bwd_wgmma_kernel(i - fa_cuda_wgmma_kernel_count());
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

int cu_flush_cache(void *ctx)
{
	return fa_gpu_flush_cache(ctx, CU_FLUSH_L2_FACTOR, CU_FLUSH_MIN_BYTES);
}

int cu_calibrate(void *ctx, struct fa_calibration *out)
{
	struct fa_cuda_ctx *c = fa_gpu_ctx(ctx);
	int code;
	if ((code = fa_gpu_bind(c)) != 0)
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
	struct fa_cuda_ctx *c = fa_gpu_ctx(ctx);
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

/* Launch i with a[i % n_sets] (version 4; graph_create is n_sets 1). */
int cu_graph_create_sets(void *ctx, const struct fa_kernel *k, const struct fa_launch_args *a,
			 int n_sets, int n_launches, void **graph)
{
	struct fa_cuda_ctx *c = fa_gpu_ctx(ctx);
	cudaGraph_t g = NULL;
	cudaGraphExec_t ge = NULL;
	int code, end;
	*graph = NULL;
	if (!k || !k->launch || n_launches < 1 || n_sets < 1)
		return (int)cudaErrorInvalidValue;
	if ((code = fa_gpu_bind(c)) != 0)
		return code;
	if ((code = (int)cudaStreamBeginCapture(c->stream, cudaStreamCaptureModeThreadLocal)) != 0)
		return code;
	for (int i = 0; i < n_launches && code == 0; i++) {
		struct fa_launch_args ca = a[i % n_sets];
		ca.stream = (void *)c->stream; /* the launcher must queue where we capture */
		ca.backend_ctx = ctx;
		code = k->launch(&ca);
	}
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

int cu_graph_create(void *ctx, const struct fa_kernel *k, const struct fa_launch_args *a,
		    int n_launches, void **graph)
{
	return cu_graph_create_sets(ctx, k, a, 1, n_launches, graph);
}

int cu_graph_launch(void *ctx, void *graph)
{
	return (int)cudaGraphLaunch((cudaGraphExec_t)graph, fa_gpu_ctx(ctx)->stream);
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
	struct fa_cuda_ctx *c = fa_gpu_ctx(ctx);
	if (!c)
		return;
	fa_gpu_release(c);
	cu_nvml_close(c->nvml);
	free(c);
}

/* Every member of struct fa_backend_i, in its order (C++17 has no
 * designated initialisers). */
const struct fa_backend_i cu_iface = {
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
	cu_kernel_count,
	cu_kernel_get,
	cu_error_string,
	cu_is_sticky,
	fa_gpu_fill_random,
	cu_flush_cache,
	cu_shutdown,
	fa_gpu_reference,
	cu_telemetry,
	cu_graph_create,
	cu_graph_launch,
	cu_graph_destroy,
	cu_calibrate,
	/* version 2 */
	fa_gpu_stream,
	/* version 4 */
	cu_graph_create_sets,
};

/* ---- start-up ---- */

/* Why cudaGetDeviceCount failed with e, other than for want of a device. */
void cu_why_unusable(cudaError_t e, char *why, size_t why_size)
{
	if (e == cudaErrorInsufficientDriver) {
		/* the usual cause on a machine without a GPU: no driver at all */
		void *drv = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
		if (drv)
			dlclose(drv);
		fa_gpu_why(why, why_size, drv ? "CUDA driver too old for this runtime"
					      : "no CUDA driver (libcuda.so.1 not found)",
			   e);
		return;
	}
	fa_gpu_why(why, why_size, "CUDA runtime unusable", e);
}

const struct fa_gpu_plugin cu_plugin = {
	"cuda",
	"CUDA",
	"FABENCH_CUDA_DEVICE",
	cudaDevAttrMaxSharedMemoryPerBlockOptin,
	"",
	cu_why_unusable,
	&cu_iface,
};

} /* namespace */

extern "C" int fa_backend_plugin_init(int harness_api_version, struct fa_backend *out, char *why,
				      size_t why_size)
{
	return fa_gpu_plugin_init(&cu_plugin, harness_api_version, out, why, why_size);
}
