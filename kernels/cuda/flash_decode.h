/* flash_decode.h - the decode path of cuda_flash_mma
 * (kernels/cuda/flash_decode.cu): few query rows per KV head (group x
 * q_len <= 16), head sizes 64, 128 and 256, fp16/bf16. flash_mma_table.cu
 * sends a problem here when fa_decode_fits() (kernels/common/fa_decode.h)
 * holds and the tunables allow it (`decode` 1, `sched` split-KV or auto).
 *
 * Launchers only launch, on a->stream: no allocation, no synchronisation.
 */
#ifndef FA_FLASH_DECODE_H
#define FA_FLASH_DECODE_H

#include "../../harness/run/backend_impl.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Dynamic shared memory per CTA of the decode kernel of head size d (64,
 * 128, 256) with ring shape `ring` (tunable decode_ring: 0 the default, 1
 * and 2 deeper at head size 128, the same as 0 at other sizes), or 0 for
 * another size. */
int fa_cuda_decode_smem_bytes(int d, int ring);

/* The workspace of problem p on the decode path with `splits` requested
 * (0 = the rule of fa_decode_splits on the current device): the fp32
 * partials of every split, or 0 when the launch does not split. */
size_t fa_cuda_decode_workspace(const struct fa_problem *p, int splits, int ring);

/* How split key ranges are merged: by the rule (the CTAs of a cluster per
 * sequence and KV head where the device has clusters of the split's size
 * and holds them all at once; else the last CTA of each sequence and KV
 * head when it has at most FA_DECODE_FUSE_ROWS rows, else a second
 * kernel), always by the last CTA, always by a second kernel, by a cluster
 * wherever the device has clusters of that size (sm_90+, at most
 * FA_DECODE_CLUSTER_MAX ranges; else by the last CTA). */
enum {
	FA_DECODE_MERGE_AUTO = 0,
	FA_DECODE_MERGE_CTA = 1,
	FA_DECODE_MERGE_KERNEL = 2,
	FA_DECODE_MERGE_CLUSTER = 3
};

/* Runs a->p (fa_decode_fits true) with `splits` requested (0 = auto) and
 * the ranges merged as `merge` (FA_DECODE_MERGE_*) says, with ring shape
 * `ring`. Returns 0 or a cudaError_t: cudaErrorMisalignedAddress for a base
 * that is not 16-byte aligned, cudaErrorInvalidValue for a split launch
 * without the workspace of fa_cuda_decode_workspace(), or the error of the
 * launch. */
int fa_cuda_decode_launch(const struct fa_launch_args *a, int splits, int merge, int ring);

#ifdef __cplusplus
}
#endif

#endif /* FA_FLASH_DECODE_H */
