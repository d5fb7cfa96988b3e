/* fa_backend_gpu.h - the members of struct fa_backend_i that the CUDA and the
 * HIP backend plugins share (device description, memory, the stream, events,
 * the input fill, the L2 flush, the GPU reference, shutdown), and the start-up
 * both run (fa_gpu_plugin_init), written once in CUDA spelling.
 *
 * kernels/cuda/backend_cuda.cu and kernels/hip/backend_hip.cpp each include it
 * once; in the HIP build kernels/common/fa_gpu.h (pre-included) maps the
 * cuda* names to hip*, as it does for the kernel sources. What differs stays
 * in the backend files: the kernel tables, the fa_backend_i records, error
 * words, sticky errors, and the CUDA-only NVML, graphs and cuBLAS. Each
 * backend defines the three small functions declared under "the backend's
 * part" below, and describes itself to fa_gpu_plugin_init with a struct
 * fa_gpu_plugin.
 *
 * Everything here has internal linkage (an anonymous namespace): the plugin
 * exports only its entry points. The context is struct fa_cuda_ctx
 * (kernels/cuda/cuda_kernels.h), which both plugins' launchers take.
 */
#ifndef FA_BACKEND_GPU_H
#define FA_BACKEND_GPU_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../cuda/cuda_kernels.h"
#include "fa_gpu_flush.cuh"

/* the two runtime type names only this file uses (kept here rather than in
 * fa_gpu.h, which every kernel source includes) */
#if defined(FA_GPU_HIP)
#define cudaMemcpyKind hipMemcpyKind
#define cudaDeviceAttr hipDeviceAttribute_t
#endif

namespace {

/* ---- the backend's part: each backend file defines these ---- */

/* Writes the runtime's version number v (cudaDriverGetVersion's encoding or
 * HIP's) as "major.minor" into buf. */
void fa_gpu_version_text(int v, char *buf, size_t size);

/* Fills what the runtimes report differently: info->arch ("sm_90",
 * "gfx942") and info->clock_mhz. */
void fa_gpu_describe(const struct fa_cuda_ctx *c, const cudaDeviceProp *prop,
		     struct fa_device_info *info);

/* One line for a runtime error e after what, into why: "what: name (text)". */
void fa_gpu_why(char *why, size_t why_size, const char *what, cudaError_t e);

/* ---- context ---- */

struct fa_cuda_ctx *fa_gpu_ctx(void *ctx)
{
	return (struct fa_cuda_ctx *)ctx;
}

/* Makes the plugin's device current on the calling thread (the runtime's
 * current device is per thread; the harness may call from several). */
int fa_gpu_bind(struct fa_cuda_ctx *c)
{
	int cur = -1;
	if (cudaGetDevice(&cur) == cudaSuccess && cur == c->device)
		return 0;
	return (int)cudaSetDevice(c->device);
}

/* ---- device description ---- */

int fa_gpu_fill_info(struct fa_cuda_ctx *c)
{
	struct fa_device_info *info = &c->info;
	cudaDeviceProp prop;
	size_t free_b = 0, total_b = 0;
	int v = 0, code;
	memset(info, 0, sizeof *info);
	if ((code = (int)cudaGetDeviceProperties(&prop, c->device)) != 0)
		return code;
	snprintf(info->name, sizeof info->name, "%.127s", prop.name);
	if (cudaDriverGetVersion(&v) == cudaSuccess)
		fa_gpu_version_text(v, info->driver, sizeof info->driver);
	if (cudaRuntimeGetVersion(&v) == cudaSuccess)
		fa_gpu_version_text(v, info->runtime, sizeof info->runtime);
	if ((code = (int)cudaMemGetInfo(&free_b, &total_b)) != 0)
		return code;
	info->mem_total_bytes = (int64_t)total_b;
	info->mem_free_bytes = (int64_t)free_b;
	info->sm_count = prop.multiProcessorCount; /* compute units on AMD */
	info->l2_bytes = prop.l2CacheSize;
	fa_gpu_describe(c, &prop, info);
	info->host_memory = 0;
	return 0;
}

int fa_gpu_device_info(void *ctx, struct fa_device_info *out)
{
	struct fa_cuda_ctx *c = fa_gpu_ctx(ctx);
	size_t free_b = 0, total_b = 0;
	int code;
	if ((code = fa_gpu_bind(c)) != 0)
		return code;
	if ((code = (int)cudaMemGetInfo(&free_b, &total_b)) != 0)
		return code;
	c->info.mem_free_bytes = (int64_t)free_b;
	*out = c->info;
	return 0;
}

/* ---- memory ---- */

int fa_gpu_alloc(void *ctx, size_t bytes, void **ptr)
{
	struct fa_cuda_ctx *c = fa_gpu_ctx(ctx);
	int code;
	*ptr = NULL;
	if ((code = fa_gpu_bind(c)) != 0)
		return code;
	/* a zero-byte request still gets a real pointer: NULL means failure */
	code = (int)cudaMalloc(ptr, bytes ? bytes : 1);
	if (code != 0) {
		*ptr = NULL;
		(void)cudaGetLastError(); /* an out-of-memory must not haunt the next launch */
	}
	return code;
}

void fa_gpu_free(void *ctx, void *ptr)
{
	(void)ctx;
	if (ptr)
		(void)cudaFree(ptr);
}

int fa_gpu_copy(struct fa_cuda_ctx *c, void *dst, const void *src, size_t bytes,
		cudaMemcpyKind kind)
{
	int code;
	if (bytes == 0)
		return 0;
	if ((code = fa_gpu_bind(c)) != 0 ||
	    (code = (int)cudaMemcpyAsync(dst, src, bytes, kind, c->stream)) != 0 ||
	    (code = (int)cudaStreamSynchronize(c->stream)) != 0)
		return code;
	return 0;
}

int fa_gpu_upload(void *ctx, void *dst, const void *src, size_t bytes)
{
	return fa_gpu_copy(fa_gpu_ctx(ctx), dst, src, bytes, cudaMemcpyHostToDevice);
}

int fa_gpu_download(void *ctx, void *dst, const void *src, size_t bytes)
{
	return fa_gpu_copy(fa_gpu_ctx(ctx), dst, src, bytes, cudaMemcpyDeviceToHost);
}

int fa_gpu_memset(void *ctx, void *dst, int byte, size_t bytes)
{
	struct fa_cuda_ctx *c = fa_gpu_ctx(ctx);
	int code;
	if (bytes == 0)
		return 0;
	if ((code = fa_gpu_bind(c)) != 0)
		return code;
	return (int)cudaMemsetAsync(dst, byte, bytes, c->stream);
}

int fa_gpu_synchronize(void *ctx)
{
	struct fa_cuda_ctx *c = fa_gpu_ctx(ctx);
	int code;
	if ((code = fa_gpu_bind(c)) != 0)
		return code;
	return (int)cudaStreamSynchronize(c->stream);
}

/* ---- events ---- */

int fa_gpu_event_create(void *ctx, void **ev)
{
	struct fa_cuda_ctx *c = fa_gpu_ctx(ctx);
	cudaEvent_t e = NULL;
	int code;
	*ev = NULL;
	if ((code = fa_gpu_bind(c)) != 0 || (code = (int)cudaEventCreate(&e)) != 0)
		return code;
	*ev = (void *)e;
	return 0;
}

int fa_gpu_event_record(void *ctx, void *ev)
{
	return (int)cudaEventRecord((cudaEvent_t)ev, fa_gpu_ctx(ctx)->stream);
}

int fa_gpu_event_elapsed_ms(void *ctx, void *start, void *stop, double *ms)
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

void fa_gpu_event_destroy(void *ctx, void *ev)
{
	(void)ctx;
	if (ev)
		(void)cudaEventDestroy((cudaEvent_t)ev);
}

/* ---- data, cache, reference ---- */

int fa_gpu_fill_random(void *ctx, void *dst, const struct fa_problem *p, int tensor, int dist,
		       uint64_t seed)
{
	struct fa_cuda_ctx *c = fa_gpu_ctx(ctx);
	int code;
	if ((code = fa_gpu_bind(c)) != 0)
		return code;
	return fa_cuda_fill_random(c->stream, dst, p, tensor, dist, seed);
}

/* flush_cache with a buffer of l2_factor times the L2 and at least min_bytes,
 * allocated on first use: a memset of it, then (unless FABENCH_FLUSH is
 * "write", the harness's --cache cold) the buffer read back, so that the L2
 * ends full of clean lines. The memset alone leaves up to an L2 of dirty
 * lines, written back while the next timed kernel runs: on an H100 a bare
 * read of 33.5 MB takes 14.7 us after the clean flush and 17.3 us after the
 * write (bench/read_ceiling.cu, docs/BENCHMARKS.md). The read pass is
 * fa_gpu_flush_read_kernel (fa_gpu_flush.cuh). */
int fa_gpu_flush_cache(void *ctx, int64_t l2_factor, int64_t min_bytes)
{
	struct fa_cuda_ctx *c = fa_gpu_ctx(ctx);
	int code;
	if (!c->flush_buf) {
		int64_t bytes = l2_factor * c->info.l2_bytes;
		if (bytes < min_bytes)
			bytes = min_bytes;
		if ((code = fa_gpu_alloc(ctx, (size_t)bytes, &c->flush_buf)) != 0)
			return code;
		c->flush_bytes = (size_t)bytes;
	}
	/* a different byte each time, so no write can be elided as a no-op */
	code = (int)cudaMemsetAsync(c->flush_buf, (int)(c->flush_count++ & 0xffu), c->flush_bytes,
				    c->stream);
	const char *mode = getenv("FABENCH_FLUSH");
	if (code == 0 && !(mode && strcmp(mode, "write") == 0)) {
		fa_gpu_flush_read_kernel<<<1024, 512, 0, c->stream>>>(
			static_cast<const uint4 *>(c->flush_buf), c->flush_bytes / 16,
			static_cast<unsigned *>(c->flush_buf));
		code = (int)cudaGetLastError();
	}
	return code;
}

int fa_gpu_reference(void *ctx, const struct fa_launch_args *a, const int64_t *rows,
		     int64_t n_rows, double *out)
{
	struct fa_cuda_ctx *c = fa_gpu_ctx(ctx);
	int code;
	if ((code = fa_gpu_bind(c)) != 0)
		return code;
	return fa_cuda_reference(c->stream, a, rows, n_rows, out);
}

/* ---- stream (version 2): the harness passes it to every launch, ours and
 * kernel plugins' ---- */

void *fa_gpu_stream(void *ctx)
{
	return (void *)fa_gpu_ctx(ctx)->stream;
}

/* ---- shutdown ---- */

/* Waits for the stream and releases the device's part of c: the flush buffer
 * and the stream. The caller frees c and whatever it added. */
void fa_gpu_release(struct fa_cuda_ctx *c)
{
	fa_gpu_bind(c);
	(void)cudaStreamSynchronize(c->stream);
	if (c->flush_buf)
		(void)cudaFree(c->flush_buf);
	(void)cudaStreamDestroy(c->stream);
}

/* ---- start-up ---- */

/* What a backend tells fa_gpu_plugin_init about itself. */
struct fa_gpu_plugin {
	const char *name;     /* the backend's name: "cuda" */
	const char *runtime;  /* in messages: "CUDA" */
	const char *env;      /* the device ordinal's variable: "FABENCH_CUDA_DEVICE" */
	cudaDeviceAttr smem_attr; /* the shared memory (LDS) a block may use */
	const char *built_for; /* appended to the arch when the kernels cannot be set up */
	/* writes why the runtime cannot count devices (e, not "no device") */
	void (*why_unusable)(cudaError_t e, char *why, size_t why_size);
	const struct fa_backend_i *iface;
};

/* The device ordinal from $env (default 0); -1 with a reason when it is not
 * a number. */
int fa_gpu_device_from_env(const char *env_name, char *why, size_t why_size)
{
	const char *env = getenv(env_name);
	char *end = NULL;
	long v;
	if (!env || !*env)
		return 0;
	errno = 0;
	v = strtol(env, &end, 10);
	if (errno || *end || v < 0 || v > 1024) {
		snprintf(why, why_size, "%s '%s' is not a device number", env_name, env);
		return -1;
	}
	return (int)v;
}

/* fa_backend_plugin_init for the backend pl: on one device ($pl->env) and one
 * stream; 0, or 1 with the reason in why. */
int fa_gpu_plugin_init(const struct fa_gpu_plugin *pl, int harness_api_version,
		       struct fa_backend *out, char *why, size_t why_size)
{
	struct fa_cuda_ctx *c = NULL;
	int dev, count = 0, optin = 0;
	char what[200];
	cudaError_t e;
	if (harness_api_version < FA_BACKEND_API_VERSION) {
		snprintf(why, why_size,
			 "harness reads backend API versions up to %d; the %s plugin is version %d",
			 harness_api_version, pl->name, FA_BACKEND_API_VERSION);
		return 1;
	}
	if ((dev = fa_gpu_device_from_env(pl->env, why, why_size)) < 0)
		return 1;
	/* without a GPU the runtime answers cudaErrorNoDevice (hipErrorNoDevice
	 * where HIP finds no /dev/kfd or no agent): say that, in its words */
	e = cudaGetDeviceCount(&count);
	if (e == cudaErrorNoDevice || (e == cudaSuccess && count == 0)) {
		snprintf(what, sizeof what, "no %s device", pl->runtime);
		fa_gpu_why(why, why_size, what, cudaErrorNoDevice);
		(void)cudaGetLastError();
		return 1;
	}
	if (e != cudaSuccess) {
		pl->why_unusable(e, why, why_size);
		return 1;
	}
	if (dev >= count) {
		snprintf(why, why_size, "%s %d out of range: %d %s device%s", pl->env, dev, count,
			 pl->runtime, count == 1 ? "" : "s");
		return 1;
	}
	if ((e = cudaSetDevice(dev)) != cudaSuccess) {
		snprintf(what, sizeof what, "cannot use %s device", pl->runtime);
		fa_gpu_why(why, why_size, what, e);
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
		snprintf(what, sizeof what, "cannot create a %s stream", pl->runtime);
		fa_gpu_why(why, why_size, what, e);
		free(c);
		return 1;
	}
	if ((e = (cudaError_t)fa_gpu_fill_info(c)) != cudaSuccess) {
		snprintf(what, sizeof what, "cannot describe the %s device", pl->runtime);
		fa_gpu_why(why, why_size, what, e);
		goto fail;
	}
	if ((e = cudaDeviceGetAttribute(&optin, pl->smem_attr, dev)) != cudaSuccess) {
		fa_gpu_why(why, why_size, "cannot query shared memory", e);
		goto fail;
	}
	c->smem_optin_bytes = optin;
	/* also proves the build has code for this device */
	if ((e = (cudaError_t)fa_cuda_flash_simt_setup(optin)) != cudaSuccess) {
		snprintf(what, sizeof what, "cannot set up kernels on %.127s (%.15s%s)", c->info.name,
			 c->info.arch, pl->built_for);
		fa_gpu_why(why, why_size, what, e);
		goto fail;
	}

	memset(out, 0, sizeof *out);
	out->api_version = FA_BACKEND_API_VERSION;
	out->struct_size = (uint32_t)sizeof *out;
	out->name = pl->name;
	out->context = c;
	out->iface = pl->iface;
	return 0;
fail:
	(void)cudaStreamDestroy(c->stream);
	free(c);
	(void)cudaGetLastError();
	return 1;
}

} /* namespace */

#endif /* FA_BACKEND_GPU_H */
