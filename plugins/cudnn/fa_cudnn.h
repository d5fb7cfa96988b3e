/* fa_cudnn.h - the cuDNN plugin's entry points: what its kernel-only plugin
 * entry (fa_kernel_plugin_init in glue.c, for the cuda backend) and the
 * self-test call to add cuDNN's fused SDPA to an already loaded CUDA
 * backend. The plugin sees only the SDK header (include/fabench/plugin.h).
 *
 *     char why[256];
 *     if (fa_cudnn_init(why, sizeof why) == 0) {
 *             const struct fa_kernel *ks;
 *             int n = fa_cudnn_kernels(&ks);   ... register ks[0..n) ...
 *     }
 *     ...
 *     fa_cudnn_shutdown();
 *
 * Call fa_cudnn_init with the backend's device current on the calling
 * thread: the cuDNN handle is created there. The library is opened with
 * dlopen ($FABENCH_CUDNN, a path, first; else "libcudnn.so.9"), so the
 * plugin builds and loads where cuDNN is absent: init then fails with the
 * reason ("libcudnn.so.9 not found: ...").
 *
 * Launch return codes are cudaError_t values (the aux kernel of varlen
 * cases) or FA_CUDNN_ERR + a cudnnStatus_t; fa_cudnn_error_string turns
 * both kinds into words.
 */
#ifndef FA_CUDNN_H
#define FA_CUDNN_H

#include <stddef.h>

#include "../../include/fabench/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

/* cuDNN failures: base + the cudnnStatus_t (at most 5004), above the CUDA
 * plugin's cuBLAS (0x10000) and NVML (0x20000) ranges. */
#define FA_CUDNN_ERR 0x30000

/* Opens cuDNN, resolves its entry points, creates the handle. Returns 0, or
 * nonzero with a one-line reason in why. Calling it again after a success
 * is a no-op returning 0. */
int fa_cudnn_init(char *why, size_t why_size);

/* Sets *out to the plugin's kernel table (valid until fa_cudnn_shutdown)
 * and returns its length; 0 (and *out NULL) before a successful init. */
int fa_cudnn_kernels(const struct fa_kernel **out);

/* Words for a launch return code ("CUDNN_STATUS_NOT_SUPPORTED: ..." or the
 * CUDA runtime's name). The string is static or lives until shutdown. */
const char *fa_cudnn_error_string(int code);

/* Destroys every cached plan, the handle, and closes the library. */
void fa_cudnn_shutdown(void);

#ifdef __cplusplus
}
#endif

#endif /* FA_CUDNN_H */
