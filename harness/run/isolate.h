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
 *
 * Under --devices a worker stays (struct fa_isolate_worker): it reads the
 * next case to run, as a line "CASE FROM", from the same socket, and sends a
 * "done" record after its last kernel; it keeps its plugin, device context
 * and warm state from case to case. A worker that faults is replaced by a
 * fresh one for what is left, exactly as above.
 */
#ifndef FA_ISOLATE_H
#define FA_ISOLATE_H

#include <sys/types.h>

#include "measure.h"
#include "runner.h"
#include "../store/store.h"

/* The records a worker sends: a header, then for a result the struct
 * fa_result and n_samples doubles (ms); a start (index: the kernel, -1 the
 * set-up) and a done (index: the case) are the header alone. */
#define FA_ISO_REC_MAGIC 0x46414953u /* "FAIS" */
#define FA_ISO_REC_START 1
#define FA_ISO_REC_RESULT 2
#define FA_ISO_REC_DONE 3 /* a staying worker finished the case it was sent */
struct fa_iso_rec_hdr {
	uint32_t magic;
	int32_t type, index, n_samples, timing;
};

/* The exit status of a worker whose device became unusable (a CUDA sticky
 * error) after it reported the kernel that caused it. */
#define FA_WORKER_STICKY 3

/* Worker side: report that kernel i (-1: set-up) starts / finished. */

void fa_isolate_send_start(int fd, int i);
void fa_isolate_send_result(int fd, int i, const struct fa_result *res,
			    const struct fa_samples *samples);
/* Worker side, a staying worker (--worker-serve): waits for the next command
 * on fd. Returns 1 with *case_index and *from set, 0 at end of input (the
 * parent has no more cases: exit), -1 on a malformed command or a read error. */
int fa_isolate_read_command(int fd, int *case_index, int *from);
/* Worker side: the case sent last is finished; the worker waits for the next. */
void fa_isolate_send_done(int fd, int case_index);

/* A worker process that stays for case after case (one per device under
 * --devices). Zero it (or fa_isolate_worker_init) before use; the first
 * fa_isolate_run_case that gets it starts the process. Used by one thread
 * at a time: the one that started the process, since the worker dies with
 * that thread (PR_SET_PDEATHSIG). */
struct fa_isolate_worker {
	pid_t pid; /* 0: no process (not started yet, or it died and was reaped) */
	int fd;  /* the parent's end of the socket */
	int n_started; /* processes started over its life: 1 when none faulted */
};

void fa_isolate_worker_init(struct fa_isolate_worker *w);
/* Lets the worker go: closes its socket (it exits at end of input) and
 * waits for it; kills it when it has not exited after a few seconds. */
void fa_isolate_worker_stop(struct fa_isolate_worker *w);

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
	/* NULL: a fresh worker process for the case (--isolate). Else the
	 * staying worker to run it in (started here when it has no process;
	 * replaced here when it faults) */
	struct fa_isolate_worker *worker;
};

/* Parent side: runs one case in workers until every kernel has a result.
 * results/samples as for fa_runner_run_case (the result's string fields point
 * into the kernels array; reasons are copied). With ic->worker, the worker
 * is left running after a case that it finished, and reaped (pid 0) after
 * one in which it died or was killed. Returns FA_OK, or
 * FA_ERR_CANCELLED, or FA_ERR_INTERNAL when no worker could be started. */
enum fa_rc fa_isolate_run_case(const struct fa_isolate_case *ic, struct fa_result *results,
			       struct fa_samples *samples, struct fa_err *err);

#endif /* FA_ISOLATE_H */
