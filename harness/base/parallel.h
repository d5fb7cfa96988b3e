/* parallel.h - a minimal parallel for over an index range with POSIX threads,
 * shared by the CPU kernels, the reference and input generation. */
#ifndef FA_PARALLEL_H
#define FA_PARALLEL_H

#include <stdint.h>

/* Called with a chunk [begin, end) of the range; thread is 0..nthreads-1. */
typedef void (*fa_parallel_fn)(void *ctx, int64_t begin, int64_t end, int thread);

/* Runs fn over [0, n) in chunks of `grain` items (at least 1), on up to
 * nthreads threads (the caller's thread is one of them). Returns 0, or -1 when
 * threads could not be started (the work is then done on the caller's
 * thread, so the result is still complete). */
int fa_parallel_for(int64_t n, int64_t grain, int nthreads, fa_parallel_fn fn, void *ctx);

/* Threads to use by default: $FABENCH_THREADS when set, else the online CPUs. */
int fa_cpu_threads(void);

#endif /* FA_PARALLEL_H */
