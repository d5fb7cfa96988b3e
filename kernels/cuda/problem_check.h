/* problem_check.h - the problem checks the CUDA kernels share (cuda_dense,
 * cuda_flash_simt, cuda_flash_mma): head sizes, dtype and mask, GQA, the
 * grid limits, the scale, row-index overflow and shared memory, each with
 * one wording, so a kernel states its limits in a struct instead of copying
 * the tests (ggml's launch_fattn is the model: one place for what every
 * flash-attention kernel needs). Host code.
 */
#ifndef FA_CUDA_PROBLEM_CHECK_H
#define FA_CUDA_PROBLEM_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include "../../harness/run/backend_impl.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A kernel's limits; zero members check nothing. */
struct fa_cuda_limits {
	int head_dim_max;     /* head_dim and head_dim_v in 1..this (0: the kernel checks) */
	uint32_t dtypes;      /* bit (1u << FA_DTYPE_x) per dtype taken; 0: every known one */
	const char *dtype_why; /* why another known dtype is refused ("tensor-core ...") */
	int grid_yz;          /* heads and batch are grid dimensions y and z (<= 65535) */
	int positive_scale;   /* the scale must be positive and finite */
	int row_index_32;     /* q_len x (heads / kv_heads) must fit 32-bit row indices */
	int smem_bytes;       /* dynamic shared memory per block (0: none to check) */
	int smem_optin;       /* the device's per-block limit; < 0: ask the current device */
};

/* 1 when p meets lim, else 0 with the reason in why (the first check that
 * fails, in the order of the members above, GQA after the dtype). A
 * device that cannot be asked for its shared-memory limit passes that
 * check (the launch then reports the error) and leaves no CUDA error set. */
int fa_cuda_check_problem(const struct fa_problem *p, const struct fa_cuda_limits *lim, char *why,
			  size_t why_size);

/* Attribute attr (a cudaDeviceAttr) of the current device into *value:
 * 0, or the CUDA error (then *value is 0 and the error is not left as the
 * last error). */
int fa_cuda_device_attr(int attr, int *value);

/* 1 when the current device runs sm_90a code (compute capability 9.0,
 * given in *major and *minor; 0 and 0 when it cannot be asked). */
int fa_cuda_device_is_sm90(int *major, int *minor);

/* 1 when every stride of p is a multiple of elems elements. */
int fa_cuda_strides_multiple(const struct fa_problem *p, int64_t elems);

#ifdef __cplusplus
}
#endif

#endif /* FA_CUDA_PROBLEM_CHECK_H */
