/* backend_impl.h - what a backend implements: the plugin ABI.
 *
 * The ABI is public: include/fabench/plugin.h holds all of it (the problem
 * descriptor, dtype helpers, struct fa_kernel, fa_launch_args, fa_backend,
 * fa_kernel_plugin and their versions) and includes nothing of the harness.
 * This header stays for the harness's and fabench's own plugins' sources;
 * what only the harness needs about loaded backends is in backend.h.
 */
#ifndef FA_BACKEND_IMPL_H
#define FA_BACKEND_IMPL_H

#include "../../include/fabench/plugin.h"

#endif /* FA_BACKEND_IMPL_H */
