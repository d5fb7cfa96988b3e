/* flash_wgmma.h - the C interface of the Hopper flash-attention kernels:
 * the forward (cuda_flash_wgmma, kernels/cuda/flash_wgmma.cu and its
 * kernel, flash_wgmma_kernel.cuh) and the
 * backward (cuda_flash_bwd_wgmma, kernels/cuda/flash_bwd_wgmma.cu): their
 * kernel tables, which the CUDA plugin lists after its own kernels and the
 * tensor-core family's.
 *
 * The kernel is built for sm_90a only (the Makefile gives its object its own
 * -gencode); supports() refuses every other device, so the plugin keeps
 * working on sm_80 and sm_89 through cuda_flash_mma.
 */
#ifndef FA_FLASH_WGMMA_H
#define FA_FLASH_WGMMA_H

#include "../../harness/run/backend_impl.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Number of entries of the table (fixed). */
int fa_cuda_wgmma_kernel_count(void);

/* Entry i (0 <= i < count), a static object, or NULL when i is out of range. */
const struct fa_kernel *fa_cuda_wgmma_kernel(int i);

/* The backward's table: the same contract. */
int fa_cuda_bwd_wgmma_kernel_count(void);
const struct fa_kernel *fa_cuda_bwd_wgmma_kernel(int i);

#ifdef __cplusplus
}
#endif

#endif /* FA_FLASH_WGMMA_H */
