/* runner.h - runs one case on one backend: memory estimate, inputs, the
 * reference, then for each kernel a poisoned check launch and the timed
 * samples. Prints nothing; the run command reports progress through a
 * callback and stores what comes back.
 */
#ifndef FA_RUNNER_H
#define FA_RUNNER_H

#include <stdint.h>

#include "backend.h"
#include "measure.h"
#include "../store/store.h"
#include "../suite/suite.h"

/* Room for any kernel's params as text: every param's longest name, '=',
 * an int32 ("-2147483648") and a ',' (the last one's room for the '\0'). */
#define FA_PARAMS_TEXT_SIZE (FA_KERNEL_MAX_PARAMS * (FA_KERNEL_PARAM_NAME_MAX + 13))

/* A kernel chosen for a case, with the values of its tunables. */
struct fa_case_kernel {
	const struct fa_kernel *k;
	struct fa_backend_slot *slot;
	int32_t params[FA_KERNEL_MAX_PARAMS];
	/* "block_q=16,block_k=64", "" without params: text that outlives ck
	 * and its copies (the plan's, written by fa_case_kernel_text) */
	const char *params_text;
};

/* Sets ck's parameters to the kernel's defaults, its params_text to "". */
void fa_case_kernel_init(struct fa_case_kernel *ck, const struct fa_kernel *k,
			 struct fa_backend_slot *slot);

/* Writes ck->params as text into buf (FA_PARAMS_TEXT_SIZE bytes hold any
 * kernel's) and points ck->params_text at it. */
void fa_case_kernel_text(struct fa_case_kernel *ck, char *buf, size_t size);

struct fa_runner;

/* The kernel whose launch, check or sample this process runs now (NULL while
 * a case's inputs and reference are prepared): the crash handler
 * (harness/run/crash.c) names it. */
extern const struct fa_case_kernel *volatile fa_runner_running;

/* Called after each kernel of a case finished (result complete). */
typedef void (*fa_runner_progress_fn)(void *ctx, const struct fa_case *c, int kernel_index,
				      const struct fa_result *res);

/* Called before kernel kernel_index of a case starts (-1: before the inputs
 * and the reference are prepared). */
typedef void (*fa_runner_start_fn)(void *ctx, const struct fa_case *c, int kernel_index);

#define FA_STUCK_GRACE_S 5.0

struct fa_runner_cfg {
	double mem_budget_bytes; /* 0: half of the device's free memory */
	double timeout_s;        /* > 0 overrides the suite's timeout_s */
	int32_t cache;           /* >= 0 overrides the suite's cache mode */
	int32_t graph_launches;  /* > 0 overrides the suite's graph_launches, -1
				  * times no graph, 0 keeps the suite's */
	int32_t nthreads;        /* CPU threads for kernels and the reference */
	volatile int *cancel;    /* set by a signal handler: stop as soon as possible */
	const char *dump_dir;    /* write .npy files of every case run here (NULL: no) */
	/* 1: check every kernel of a case first, then take their samples in turn
	 * (A B C A B C ...), so they share the machine's state; 0: one kernel
	 * after another (worker processes, whose parent times each kernel) */
	int32_t interleave;
	/* 1: a kernel (or the reference) that has not returned long after it
	 * was cancelled ends the process through fa_crash_stuck: as long again
	 * as its timeout (at least FA_STUCK_GRACE_S) after the timeout passed
	 * (status 1), FA_STUCK_GRACE_S after *cancel was set (status 130);
	 * 0: wait for it (worker processes, whose parent kills them) */
	int32_t stuck_exit;
	fa_runner_progress_fn progress; /* may be NULL */
	fa_runner_start_fn on_start;    /* may be NULL */
	void *progress_ctx;
};

/* Creates a runner for a loaded backend; starts the watchdog thread.
 * Returns NULL with err filled on failure. */
struct fa_runner *fa_runner_new(struct fa_backend_slot *slot, const struct fa_runner_cfg *cfg,
				struct fa_err *err);
void fa_runner_free(struct fa_runner *r);

/* The memory budget in bytes this runner applies. */
double fa_runner_budget(const struct fa_runner *r);

/* Bytes case c needs to run kernel ck (inputs, outputs, workspace, scores). */
double fa_runner_mem_estimate(const struct fa_case *c, const struct fa_case_kernel *ck);

/* Runs c for kernels ks[0..n). results[i] and samples[i] receive kernel i's
 * outcome (samples[i].ms is malloc'd: free with fa_samples_free). Returns
 * FA_OK when every kernel has a result (pass, fail, skip, error, timeout),
 * FA_ERR_CANCELLED when stopped by the cancel flag (results incomplete),
 * FA_ERR_STICKY when the device became unusable (the failing kernel and the
 * ones after it are marked error; err says why). */
enum fa_rc fa_runner_run_case(struct fa_runner *r, const struct fa_case *c,
			      const struct fa_case_kernel *ks, int n, struct fa_result *results,
			      struct fa_samples *samples, struct fa_err *err);

/* The same in steps, so that the kernels of two runners (--ab) can be
 * sampled in turn: prepare() does the skips, inputs, reference and (when
 * interleaving) every checked launch; sample() takes one sample of the next
 * kernel still sampling and sets *done when none is left; finish() reports
 * progress and frees the case. Return codes as fa_runner_run_case; after
 * any return of prepare() or sample(), finish() must be called. */
enum fa_rc fa_runner_prepare(struct fa_runner *r, const struct fa_case *c,
			     const struct fa_case_kernel *ks, int n, struct fa_result *results,
			     struct fa_samples *samples, struct fa_err *err);
enum fa_rc fa_runner_sample(struct fa_runner *r, int *done, struct fa_err *err);
void fa_runner_finish(struct fa_runner *r);

/* 1 when runners of backends a and b may share buffers in --ab: the same
 * backend, both with host memory or both not, on devices that describe
 * themselves alike (name, arch, memory, multiprocessors). Two loads of one
 * GPU plugin share the process's runtime and the device's context, and both
 * pick the device from the same environment, so a pointer from one is valid
 * in the other; two loads of a host-memory plugin share the address space.
 * Else 0 with the reason in why. */
int fa_runner_can_share(const struct fa_backend_slot *a, const struct fa_backend_slot *b,
			char *why, size_t why_size);

/* 1 when runners of backends a and b, which do not share buffers, may swap
 * them in --ab (fa_runner_cross): the same backend with device memory, on
 * devices that describe themselves alike, so that a pointer from one is
 * valid in the other (one runtime, the device's primary context). Else 0
 * with the reason in why. */
int fa_runner_can_cross(const struct fa_backend_slot *a, const struct fa_backend_slot *b,
			char *why, size_t why_size);

/* --ab with swapped buffers: pairs runners a and b (NULL, NULL: unpairs),
 * each preparing its own buffers as without sharing. fa_runner_set_crossed
 * then says, before each round of samples, whether this round runs each
 * side on the OTHER side's buffers: kernel i of one side samples on the
 * other's Q, K, V, O, cu_seqlens and prefix_lens, and on the workspace of
 * the other's kernel i when that has the same name and holds at least the
 * size this one asks for (else on its own). A coin flip per round makes
 * where the buffers lie a random effect on both sides instead of a bias of
 * one (docs/compare.md, "Swapped buffers"). Checks always run on a side's
 * own buffers; graph launches (captured on them) are not swapped. */
void fa_runner_cross(struct fa_runner *a, struct fa_runner *b);
void fa_runner_set_crossed(struct fa_runner *r, int crossed);

/* Samples kernel launches of this runner took on the other side's buffers
 * (fa_runner_cross), since it was created: a test's and the run header's
 * evidence that swapping happened. */
long fa_runner_crossed_samples(const struct fa_runner *r);

/* --ab with shared buffers: runner b runs the next case on runner a's
 * buffers. Call before a's fa_runner_prepare of each case with the kernels
 * b runs on it (b NULL: stop sharing), then prepare a, then b. b then
 * uses a's Q, K, V, O, cu_seqlens and prefix_lens (filled once), and its
 * kernel i the workspace of a's kernel i when both have the same name (a
 * allocates the larger of the two sizes once); each side still poisons O
 * before its own checked launch and checks its own output. b allocates its
 * own where a has none (a skipped every kernel or failed to allocate). a
 * frees what both used in its fa_runner_finish, which must come after b's. */
void fa_runner_share(struct fa_runner *a, struct fa_runner *b, const struct fa_case_kernel *bks,
		     int bn);

#endif /* FA_RUNNER_H */
