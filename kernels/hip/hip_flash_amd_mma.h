/* hip_flash_amd_mma.h - the C interface of the AMD matrix-core flash
 * kernels (kernels/hip/hip_flash_amd_mma.hip): the table entries the HIP
 * backend appends to its own list.
 *
 *   hip_flash_mfma  gfx90a, gfx94x (MFMA 16x16x16, wave64)
 *   hip_flash_wmma  gfx11, gfx12 (WMMA 16x16x16, wave32; the layout of the
 *                   device's arch, chosen at launch)
 *
 * fp16/bf16, head sizes 64, 72, 80, 96, 128, 256 (D == DV), every mask,
 * GQA (with query-head packing for short queries), varlen, split-KV
 * (tunable `splits`, workspace from workspace_bytes()), tunable `order`:
 * the semantics of cuda_flash_mma (kernels/cuda/flash_mma.h). supports()
 * asks the current device's gcnArchName. Launchers use a->stream.
 */
#ifndef FA_HIP_FLASH_AMD_MMA_H
#define FA_HIP_FLASH_AMD_MMA_H

#include "../../harness/run/backend_impl.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The entries (static objects) and their count in *n. */
const struct fa_kernel *fa_hip_mma_kernels(int *n);

#ifdef __cplusplus
}
#endif

#endif /* FA_HIP_FLASH_AMD_MMA_H */
