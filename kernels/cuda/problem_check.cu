/* problem_check.cu - the problem checks the CUDA kernels share
 * (problem_check.h). Host code only.
 */
#include "problem_check.h"

#include <math.h>
#include <stdio.h>

#include "../common/fa_dtype.h"
#include "../common/fa_gpu.h"

/* grid.y and grid.z are limited to 65535 */
#define GRID_YZ_MAX 65535

static const char *dtype_text(int dtype)
{
	switch (dtype) {
	case FA_DTYPE_FP32: return "fp32";
	case FA_DTYPE_FP16: return "fp16";
	case FA_DTYPE_BF16: return "bf16";
	default: return "unknown";
	}
}

extern "C" int fa_cuda_device_attr(int attr, int *value)
{
	int dev = 0;
	cudaError_t e = cudaGetDevice(&dev);
	*value = 0;
	if (e == cudaSuccess)
		e = cudaDeviceGetAttribute(value, (cudaDeviceAttr)attr, dev);
	if (e != cudaSuccess) {
		(void)cudaGetLastError(); /* the failed query must not linger as the last error */
		*value = 0;
	}
	return (int)e;
}

extern "C" int fa_cuda_device_is_sm90(int *major, int *minor)
{
	if (fa_cuda_device_attr(cudaDevAttrComputeCapabilityMajor, major) ||
	    fa_cuda_device_attr(cudaDevAttrComputeCapabilityMinor, minor))
		return 0;
	return *major == 9 && *minor == 0;
}

/* The device's per-block shared-memory limit, or -1 when it cannot be asked. */
static int device_smem_optin(void)
{
	int optin;
	return fa_cuda_device_attr(cudaDevAttrMaxSharedMemoryPerBlockOptin, &optin) ? -1 : optin;
}

extern "C" int fa_cuda_check_problem(const struct fa_problem *p, const struct fa_cuda_limits *lim,
				     char *why, size_t why_size)
{
	if (lim->head_dim_max > 0 && (p->head_dim < 1 || p->head_dim > lim->head_dim_max ||
				      p->head_dim_v < 1 || p->head_dim_v > lim->head_dim_max)) {
		snprintf(why, why_size, "head_dim %d / head_dim_v %d outside 1..%d", p->head_dim,
			 p->head_dim_v, lim->head_dim_max);
		return 0;
	}
	if (p->dtype < 0 || p->dtype >= FA_DTYPE_COUNT || p->mask < 0 || p->mask >= FA_MASK_COUNT) {
		snprintf(why, why_size, "dtype %d or mask %d unknown", p->dtype, p->mask);
		return 0;
	}
	if (lim->dtypes && !(lim->dtypes & (1u << p->dtype))) {
		snprintf(why, why_size, "dtype %s not supported: %s", dtype_text(p->dtype),
			 lim->dtype_why ? lim->dtype_why : "not instantiated");
		return 0;
	}
	if (p->kv_heads < 1 || p->heads % p->kv_heads != 0) {
		snprintf(why, why_size, "heads %d not divisible by kv_heads %d", p->heads, p->kv_heads);
		return 0;
	}
	if (lim->grid_yz && (p->heads > GRID_YZ_MAX || p->batch > GRID_YZ_MAX)) {
		snprintf(why, why_size, "heads %d or batch %d above the grid limit %d", p->heads,
			 p->batch, GRID_YZ_MAX);
		return 0;
	}
	if (lim->positive_scale && (!(p->scale > 0.f) || !isfinite(p->scale))) {
		snprintf(why, why_size, "scale %g must be positive and finite (folded into exp2)",
			 (double)p->scale);
		return 0;
	}
	if (lim->row_index_32 && (int64_t)p->q_len * (p->heads / p->kv_heads) > INT32_MAX) {
		snprintf(why, why_size, "q_len %d times the GQA group overflows 32-bit row indices",
			 p->q_len);
		return 0;
	}
	if (lim->smem_bytes > 0) {
		/* an H100 allows 227 KB per block, an A100 163 KB, an RTX 4090 99 KB */
		const int optin = lim->smem_optin < 0 ? device_smem_optin() : lim->smem_optin;
		if (optin > 0 && lim->smem_bytes > optin) {
			snprintf(why, why_size,
				 "head sizes %d/%d need %d bytes of shared memory per block, the "
				 "device allows %d",
				 p->head_dim, p->head_dim_v, lim->smem_bytes, optin);
			return 0;
		}
	}
	return 1;
}

extern "C" int fa_cuda_strides_multiple(const struct fa_problem *p, int64_t elems)
{
	const int64_t s[] = {p->q_stride_b, p->q_stride_s, p->q_stride_h, p->k_stride_b,
			     p->k_stride_s, p->k_stride_h, p->v_stride_b, p->v_stride_s,
			     p->v_stride_h, p->o_stride_b, p->o_stride_s, p->o_stride_h};
	for (size_t i = 0; i < sizeof s / sizeof s[0]; i++)
		if (s[i] % elems != 0)
			return 0;
	return 1;
}
