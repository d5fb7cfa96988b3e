/* flash_decode_wg.h - the Hopper decode path of cuda_flash_mma
 * (kernels/cuda/flash_decode_wg.cu, sm_90a only): one query row per
 * sequence and query head (q_len 1), up to 8 query heads per KV head, head
 * size 128, fp16/bf16, at most 16384 keys, every key visible. Its kernel
 * streams K and then V by TMA and multiplies by wgmma, with no per-tile
 * rescaling; 8 key ranges per KV head merged in a thread-block cluster.
 * flash_mma_table.cu sends a problem here under the tunable `decode` (5, or
 * 1 by the rule of fa_cuda_decode_wg_auto).
 *
 * The launcher only launches, on a->stream: no allocation, no
 * synchronisation.
 */
#ifndef FA_FLASH_DECODE_WG_H
#define FA_FLASH_DECODE_WG_H

#include <cuda.h>

#include "../../harness/run/backend_impl.h"

#ifdef __cplusplus
extern "C" {
#endif

/* 1 when the Hopper decode kernel can run p on the current device; why,
 * when not NULL, gets the first reason it cannot. */
int fa_cuda_decode_wg_fits(const struct fa_problem *p, const char **why);

/* 1 when `decode` 1 (auto) takes the Hopper decode kernel for p (it fits,
 * and the grid is one wave of its clusters: batch x kv_heads <= 8, 4096 to
 * 16384 keys, where it was measured faster: docs/BENCHMARKS.md). */
int fa_cuda_decode_wg_auto(const struct fa_problem *p);

/* Runs a->p (fa_cuda_decode_wg_fits true). Returns 0 or a cudaError_t. */
int fa_cuda_decode_wg_launch(const struct fa_launch_args *a);

/* The driver's cuTensorMapEncodeTiled is there (flash_wgmma.cu). */
int fa_cuda_wgmma_have_tma(void);

/* A 4-d tensor map (columns, tokens, heads, sequences) over base with boxes
 * of 64 columns x box_rows tokens and the 128-byte swizzle, zeros past the
 * ends, and the L2 promotion of 256 bytes when l2_256 (else none); strides
 * in elements (flash_wgmma.cu). Returns 0 or cudaErrorInvalidValue. */
int fa_cuda_wgmma_make_map(CUtensorMap *m, const void *base, int bf16, int d, int box_rows,
			   int64_t tokens, int heads, int seqs, int64_t ss, int64_t sh, int64_t sb,
			   int l2_256);

#ifdef __cplusplus
}
#endif

#endif /* FA_FLASH_DECODE_WG_H */
