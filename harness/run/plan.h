/* plan.h - which kernels run on which case: the backend chosen, kernel names
 * and globs (the suite's and --kernels) validated against the registry and
 * resolved per case, short case labels, progress weights, and the per-kernel
 * tallies printed at the end of a run. */
#ifndef FA_PLAN_H
#define FA_PLAN_H

#include <stdint.h>
#include <stdio.h>

#include "backend.h"
#include "runner.h"
#include "../store/store.h"
#include "../suite/suite.h"

struct fa_plan_kstat {
	const struct fa_kernel *k;
	struct fa_case_kernel *variants; /* one per combination of --param values */
	char *texts;                     /* their params_text, FA_PARAMS_TEXT_SIZE each */
	int32_t n_variants;
	int32_t count[5];        /* by enum fa_status */
	double log_speedup_sum;  /* over cases where both it and the baseline of its
	                            pass were timed */
	int32_t n_speedup;
};

struct fa_plan {
	struct fa_backend_slot *slot;    /* the backend the run uses */
	int32_t n_cases;
	struct fa_case_kernel **kernels; /* per case, n_kernels[i] entries */
	int32_t *n_kernels;
	int64_t n_pairs;                 /* (case, kernel) pairs in all */
	char **labels;                   /* per case: the key's parameters that vary */
	double *work_cum;                /* cumulative share of the estimated work */
	struct fa_plan_kstat *kstats;
	int32_t n_kstats;
	const struct fa_kernel *baseline; /* first forward kernel named *dense* that
	                                     runs a case, or NULL */
	const struct fa_kernel *baseline_bwd; /* the same among backward kernels */
};

/* The loaded backend called want ("auto": cuda, then hip, then cpu,
 * whichever loaded) into *out; FA_ERR_USAGE when there is none. */
enum fa_rc fa_plan_pick_backend(struct fa_registry *reg, const char *want,
				struct fa_backend_slot **out, struct fa_err *err);

/* Chooses the backend ("auto": cuda, then hip, then cpu, whichever loaded;
 * or a slot name such as a plugin loaded for --ab), checks every kernel
 * pattern of the suite (errors at the pattern's file:line:col) and of
 * kernels_csv (may be NULL), applies the --param settings
 * ("KERNEL.NAME=V1,V2,...", KERNEL a name or glob; several values make a
 * sweep: the kernel runs once per combination), and lists each case's
 * kernels. Errors: FA_ERR_USAGE (backend not available, bad --kernels or
 * --param) or FA_ERR_INPUT (unknown kernel in the suite). pl is freeable on
 * error. */
enum fa_rc fa_plan_build(struct fa_plan *pl, const struct fa_suite *s, struct fa_registry *reg,
			 const char *backend, const char *kernels_csv, char *const *params,
			 int n_params, struct fa_err *err);
/* The same with the backend given as a loaded slot (used by --ab, where two
 * slots carry the same backend name). */
enum fa_rc fa_plan_build_slot(struct fa_plan *pl, const struct fa_suite *s, struct fa_registry *reg,
			      struct fa_backend_slot *slot, const char *kernels_csv,
			      char *const *params, int n_params, struct fa_err *err);
void fa_plan_free(struct fa_plan *pl);

/* Share of the run's estimated work done once case ci has finished (0..1). */
double fa_plan_progress(const struct fa_plan *pl, int ci);

/* Adds case ci's results (n, in the order of pl->kernels[ci]) to the tallies. */
void fa_plan_tally_case(struct fa_plan *pl, int ci, const struct fa_result *res, int n);

/* `--dry-run`: each case with its kernels, memory estimates and skip reasons;
 * skip (NULL: none) flags the cases left out (--case). */
void fa_plan_print_dry(const struct fa_plan *pl, const struct fa_suite *s, struct fa_runner *r,
		       const char *skip, FILE *f);

/* The per-kernel table printed at the end of a run. */
void fa_plan_print_summary(const struct fa_plan *pl, const struct fa_suite *s, FILE *f);

#endif /* FA_PLAN_H */
