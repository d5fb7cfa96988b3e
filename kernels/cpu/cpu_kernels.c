/* cpu_kernels.c - the table of the CPU backend's kernels (what `fabench
 * kernels` lists for the cpu backend) and the words for their return codes.
 */
#include "cpu_kernels.h"

/* FA2 tile sizes: multiples of 8 so the score and accumulator loops
 * vectorise whole; the scratch of the largest pair at head_dim 512 is under
 * 1 MiB per thread. */
static const int32_t block_q_allowed[] = {8, 16, 32, 64};
static const int32_t block_k_allowed[] = {16, 32, 64, 128};

static const struct fa_kernel_param flash_params[] = {
	{.name = "block_q", .default_value = 16, .allowed = block_q_allowed, .n_allowed = 4,
	 .min_value = 8, .max_value = 64, .help = "query rows per tile (Br)"},
	{.name = "block_k", .default_value = 64, .allowed = block_k_allowed, .n_allowed = 4,
	 .min_value = 16, .max_value = 128, .help = "keys per tile (Bc)"},
};

#define ALL_DTYPES ((1u << FA_DTYPE_FP32) | (1u << FA_DTYPE_FP16) | (1u << FA_DTYPE_BF16))

const struct fa_kernel fa_cpu_kernels[] = {
	{
		.name = "cpu_dense",
		.description = "naive math path: fp32 score tensor in memory, softmax, P V",
		.dtypes = ALL_DTYPES,
		.head_dim_min = 1,
		.head_dim_max = 512,
		.score_bytes = 4, /* one fp32 score per (query, key, head) */
		.workspace_bytes = fa_cpu_dense_workspace_bytes,
		.launch = fa_cpu_dense_launch,
		.struct_size = sizeof(struct fa_kernel),
		.writes_lse = 1,
	},
	{
		.name = "cpu_flash",
		.description = "FlashAttention-2: query/key tiles, online softmax, fp32",
		.dtypes = ALL_DTYPES,
		.head_dim_min = 1,
		.head_dim_max = 512,
		.params = flash_params,
		.n_params = 2,
		.launch = fa_cpu_flash_launch,
		.struct_size = sizeof(struct fa_kernel),
		.writes_lse = 1,
	},
	{
		.name = "cpu_dense_bwd",
		.description = "naive math path backward: fp32 P and dS tensors in memory",
		.dtypes = ALL_DTYPES,
		.head_dim_min = 1,
		.head_dim_max = 512,
		.score_bytes = 8, /* fp32 P and dS per (query, key, head) */
		.workspace_bytes = fa_cpu_dense_bwd_workspace_bytes,
		.launch = fa_cpu_dense_bwd_launch,
		.struct_size = sizeof(struct fa_kernel),
		.pass = FA_PASS_BWD,
		.fwd_kernel = "cpu_dense",
	},
	{
		.name = "cpu_flash_bwd",
		.description = "FlashAttention-2 backward: delta pre-pass, P from the LSE, dK/dV per KV tile",
		.dtypes = ALL_DTYPES,
		.head_dim_min = 1,
		.head_dim_max = 512,
		.params = flash_params,
		.n_params = 2,
		.workspace_bytes = fa_cpu_flash_bwd_workspace_bytes,
		.launch = fa_cpu_flash_bwd_launch,
		.struct_size = sizeof(struct fa_kernel),
		.pass = FA_PASS_BWD,
		.fwd_kernel = "cpu_flash",
	},
};

const int fa_cpu_n_kernels = (int)(sizeof fa_cpu_kernels / sizeof fa_cpu_kernels[0]);

const char *fa_cpu_kernel_strerror(int code)
{
	switch (code) {
	case 0:
		return "success";
	case FA_KERNEL_CANCELLED:
		return "cancelled";
	case FA_CPU_ERR_WORKSPACE:
		return "workspace missing or smaller than the kernel needs";
	case FA_CPU_ERR_NOMEM:
		return "out of memory for per-thread scratch";
	case FA_CPU_ERR_PARAM:
		return "block size the kernel cannot run";
	case FA_CPU_ERR_BWD_ARGS:
		return "backward launched without lse, dO or gradient buffers";
	default:
		return "unknown cpu kernel error";
	}
}
