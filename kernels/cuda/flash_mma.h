/* flash_mma.h - the C interface of the tensor-core flash-attention kernels
 * (cuda_flash_mma*): the kernel table entries the CUDA plugin includes in its
 * own table, and the per-instance launchers behind them.
 *
 * The kernels (kernels/cuda/flash_mma.cuh) compute the FlashAttention-2
 * forward pass with mma.sync m16n8k16 on fp16 or bf16 inputs and fp32
 * accumulation; every mask, varlen, GQA (with query-head packing for short
 * queries), both layouts. Rows that may attend no key output zeros, never
 * NaN. Requirements (checked by each entry's supports()): dtype fp16/bf16,
 * the instance's head sizes, every stride a multiple of 8 elements (16-byte
 * copies), scale > 0, batch <= 65535 (grid z), and the instance's shared
 * memory within the device's per-block opt-in limit.
 *
 * Launchers only launch, on a->stream: no allocation, no synchronisation.
 * They return 0, or the cudaError_t of cudaFuncSetAttribute (first call of
 * an instance) or of cudaGetLastError() after the launch.
 *
 * Tunables (a->params, in this order): splits (split-KV: each (query tile,
 * head) CTA becomes `splits` CTAs over consecutive key ranges, writing fp32
 * partial outputs to the workspace that a second kernel merges; 0 = auto,
 * which splits only grids that fill less than one wave, as in decode) and
 * order (1, the default: query tile by query tile across all heads, the
 * heaviest causal tiles first, a longest-processing-time order; 0: head by
 * head, as FlashAttention-2's grid).
 */
#ifndef FA_FLASH_MMA_H
#define FA_FLASH_MMA_H

#include "../../harness/run/backend_impl.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Number of entries of the table (fixed). */
int fa_cuda_mma_kernel_count(void);

/* Entry i (0 <= i < count), a static object, or NULL when i is out of range. */
const struct fa_kernel *fa_cuda_mma_kernel(int i);

/* Instance launchers (kernels/cuda/instances/flash_mma_<name>.cu, generated
 * by tools/gen-instances) and the dynamic shared memory each CTA uses. */
int fa_cuda_mma_launch_d64(const struct fa_launch_args *a);
int fa_cuda_mma_launch_d80(const struct fa_launch_args *a);
int fa_cuda_mma_launch_d96(const struct fa_launch_args *a);
int fa_cuda_mma_launch_d128(const struct fa_launch_args *a);
int fa_cuda_mma_launch_d256(const struct fa_launch_args *a);
int fa_cuda_mma_launch_d192_128(const struct fa_launch_args *a);
int fa_cuda_mma_launch_d72_pad80(const struct fa_launch_args *a);
int fa_cuda_mma_launch_d72_masked(const struct fa_launch_args *a);
int fa_cuda_mma_smem_bytes_d64(void);
int fa_cuda_mma_smem_bytes_d80(void);
int fa_cuda_mma_smem_bytes_d96(void);
int fa_cuda_mma_smem_bytes_d128(void);
int fa_cuda_mma_smem_bytes_d256(void);
int fa_cuda_mma_smem_bytes_d192_128(void);
int fa_cuda_mma_smem_bytes_d72_pad80(void);
int fa_cuda_mma_smem_bytes_d72_masked(void);
/* Split-KV workspace of problem p under the tunables params (NULL: the
 * defaults); 0 when the launch does not split. */
size_t fa_cuda_mma_workspace_d64(const struct fa_problem *p, const int32_t *params);
size_t fa_cuda_mma_workspace_d80(const struct fa_problem *p, const int32_t *params);
size_t fa_cuda_mma_workspace_d96(const struct fa_problem *p, const int32_t *params);
size_t fa_cuda_mma_workspace_d128(const struct fa_problem *p, const int32_t *params);
size_t fa_cuda_mma_workspace_d256(const struct fa_problem *p, const int32_t *params);
size_t fa_cuda_mma_workspace_d192_128(const struct fa_problem *p, const int32_t *params);
size_t fa_cuda_mma_workspace_d72_pad80(const struct fa_problem *p, const int32_t *params);
size_t fa_cuda_mma_workspace_d72_masked(const struct fa_problem *p, const int32_t *params);

#ifdef __cplusplus
}
#endif

#endif /* FA_FLASH_MMA_H */
