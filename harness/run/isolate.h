/* isolate.h - `fabench run --isolate`: each case runs in a worker process
 * (this same executable, started fresh with --worker-*), so a kernel that
 * faults or hangs cannot take the run down.
 *
 * The worker sends, over a pipe, a "start" record before each kernel (and
 * before the set-up, index -1) and a "result" record after each. The parent
 * stores what arrives; when the worker dies, the kernel it was running is
 * stored as `error` with the signal or exit reason; when no record arrives
 * within the timeout, the worker is killed and the kernel is stored as
 * `timeout`. A new worker then continues with the next kernel.
 */
#ifndef FA_ISOLATE_H
#define FA_ISOLATE_H

#include "measure.h"
#include "runner.h"
#include "../store/store.h"

/* The exit status of a worker whose device became unusable (a CUDA sticky
 * error) after it reported the kernel that caused it. */
#define FA_WORKER_STICKY 3

/* Worker side: report that kernel i (-1: set-up) starts / finished. */
void fa_isolate_send_start(int fd, int i);
void fa_isolate_send_result(int fd, int i, const struct fa_result *res,
			    const struct fa_samples *samples);

struct fa_isolate_case {
	const char *const *worker_argv; /* argv of the worker minus the --worker-* options */
	int case_index;
	int n_kernels;
	const struct fa_case_kernel *kernels;
	double kernel_timeout_s; /* a kernel silent for longer than this (plus grace) is killed */
	double setup_timeout_s;  /* likewise for the inputs and the reference */
	volatile int *cancel;
	/* "NAME=value" entries (NULL-terminated; NULL: none) the worker's
	 * environment gets on top of this process's, replacing the same names:
	 * --devices pins each worker to its device with FABENCH_CUDA_DEVICE */
	const char *const *env_extra;
};

/* Parent side: runs one case in workers until every kernel has a result.
 * results/samples as for fa_runner_run_case (the result's string fields point
 * into the kernels array; reasons are copied). Returns FA_OK, or
 * FA_ERR_CANCELLED, or FA_ERR_INTERNAL when no worker could be started. */
enum fa_rc fa_isolate_run_case(const struct fa_isolate_case *ic, struct fa_result *results,
			       struct fa_samples *samples, struct fa_err *err);

#endif /* FA_ISOLATE_H */
