/* cuda_kernels.h - what the CUDA plugin's translation units share: the plugin
 * context, the kernels' launchers and the device-side services (input fill,
 * reference, calibration). Internal to kernels/cuda: the harness only sees
 * the struct fa_backend that backend_cuda.cu fills.
 *
 * Return codes are cudaError_t values (0 success), plus the plugin's own
 * ranges below for errors that are not the runtime's.
 */
#ifndef FA_CUDA_KERNELS_H
#define FA_CUDA_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "../../harness/run/backend_impl.h"
#include "../common/fa_dtype.h"
#include "../common/fa_gpu.h"

/* cuBLAS and NVML failures: base + the library's status, far above every
 * cudaError_t (the largest is cudaErrorUnknown, 999). */
#define FA_CUDA_ERR_CUBLAS 0x10000
#define FA_CUDA_ERR_NVML 0x20000
/* NVML's own codes for a missing library or entry point (nvml.h) */
#define FA_CUDA_NVML_LIBRARY_NOT_FOUND 12
#define FA_CUDA_NVML_FUNCTION_NOT_FOUND 13

struct fa_cuda_nvml; /* backend_cuda.cu: the dlopen'ed NVML entry points */

/* The plugin context (struct fa_backend.context, and fa_launch_args.backend_ctx). */
struct fa_cuda_ctx {
	cudaStream_t stream;   /* every operation of the plugin is queued here */
	int device;            /* CUDA ordinal */
	int smem_optin_bytes;  /* dynamic shared memory a block may opt in to */
	struct fa_device_info info;
	void *flush_buf;       /* flush_cache's buffer, allocated on first use */
	size_t flush_bytes;
	unsigned flush_count;  /* varies the fill byte from one flush to the next */
	struct fa_cuda_nvml *nvml; /* NULL until telemetry first asks */
	int nvml_code;         /* nonzero: why NVML could not be used (not retried) */
};

/* The stream a launcher queues on: a->stream, which the harness sets to the
 * backend's stream (struct fa_backend_i.stream, SDK version 2), else the
 * plugin's own stream from the context (what version 1 harnesses and the
 * tests that build their own fa_launch_args rely on). */
static inline cudaStream_t fa_cuda_stream_of(const struct fa_launch_args *a)
{
	if (a->stream)
		return (cudaStream_t)a->stream;
	if (a->backend_ctx)
		return ((const struct fa_cuda_ctx *)a->backend_ctx)->stream;
	return (cudaStream_t)0;
}

#ifdef __cplusplus
/* Element i of a buffer of dtype DT as fp32, exactly: fa_load_f32 with the
 * dtype known at compile time, so a loop of loads has no branches between
 * them; fp16 by the hardware conversion on the device (exact, as
 * fa_f16_to_f32 is). */
template <int DT> __device__ __forceinline__ float fa_cuda_load(const void *buf, int64_t i)
{
	if constexpr (DT == FA_DTYPE_FP32) {
		return ((const float *)buf)[i];
	} else if constexpr (DT == FA_DTYPE_BF16) {
		return fa_bf16_to_f32(((const uint16_t *)buf)[i]);
	} else {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
		return __half2float(__ushort_as_half(((const unsigned short *)buf)[i]));
#else
		return fa_f16_to_f32(((const uint16_t *)buf)[i]);
#endif
	}
}
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* cuda_dense.cu: Q K^T into an fp32 score tensor, softmax, times V. */
int fa_cuda_dense_supports(const struct fa_problem *p, char *why, size_t why_size);
size_t fa_cuda_dense_workspace_bytes(const struct fa_problem *p, const int32_t *params);
int fa_cuda_dense_launch(const struct fa_launch_args *a);

/* flash_simt.cu: FlashAttention-2 on CUDA cores. setup opts every instance
 * in to the shared memory it needs (instances needing more than
 * smem_optin_bytes are left unsupported); call it once before any launch.
 * Returns a cudaError_t. */
int fa_cuda_flash_simt_setup(int smem_optin_bytes);
int fa_cuda_flash_simt_supports(const struct fa_problem *p, char *why, size_t why_size);
int fa_cuda_flash_simt_launch(const struct fa_launch_args *a);

/* flash_bwd_simt.cu: the backward on CUDA cores (dQ, dK, dV), after
 * cuda_flash_simt's forward (which writes the LSE); deterministic. */
int fa_cuda_flash_bwd_simt_supports(const struct fa_problem *p, char *why, size_t why_size);
size_t fa_cuda_flash_bwd_simt_workspace_bytes(const struct fa_problem *p, const int32_t *params);
int fa_cuda_flash_bwd_simt_launch(const struct fa_launch_args *a);

/* flash_bwd_mma.cu: the backward on tensor cores (fp16/bf16, head sizes 64,
 * 72, 80, 96, 128, 256 and 192/128), after cuda_flash_simt's forward;
 * tunables dq (0 atomics, 1 deterministic), tile (key block), split (GQA). */
#define FA_CUDA_BWD_MMA_N_PARAMS 3
extern const struct fa_kernel_param fa_cuda_flash_bwd_mma_params[FA_CUDA_BWD_MMA_N_PARAMS];
int fa_cuda_flash_bwd_mma_supports(const struct fa_problem *p, char *why, size_t why_size);
size_t fa_cuda_flash_bwd_mma_workspace_bytes(const struct fa_problem *p, const int32_t *params);
int fa_cuda_flash_bwd_mma_launch(const struct fa_launch_args *a);

/* test_kernels.cu: a kernel that faults (cudaErrorIllegalAddress) and one
 * that never ends, for the harness's own tests. */
int fa_cuda_test_fault_launch(const struct fa_launch_args *a);
int fa_cuda_test_hang_launch(const struct fa_launch_args *a);

/* data_gpu.cu: fills tensor `tensor` of p at dst (device memory) exactly as
 * fa_data_fill does on the host. Queued on stream, not waited for. */
int fa_cuda_fill_random(cudaStream_t stream, void *dst, const struct fa_problem *p, int tensor,
			int dist, uint64_t seed);

/* ref_gpu.cu: the dense reference of rows[0..n_rows) (host array of row ids
 * T * heads + h) into out (host, n_rows * head_dim_v doubles). Synchronous:
 * allocates its scratch, waits for the stream, frees. */
int fa_cuda_reference(cudaStream_t stream, const struct fa_launch_args *a, const int64_t *rows,
		      int64_t n_rows, double *out);

/* calibrate.cu: copy bandwidth and matrix-product ceilings (seconds). */
int fa_cuda_calibrate(cudaStream_t stream, const struct fa_device_info *info,
		      struct fa_calibration *out);

#ifdef __cplusplus
}
#endif

#endif /* FA_CUDA_KERNELS_H */
