/* buildmatrix.h - `fabench build-matrix`: every kernel source compiled for
 * every target down to the ISA, and what the compilers said about each
 * kernel (registers, shared memory, scratch, spills, matrix instructions).
 *
 * The list of targets, sources and compiler flags is the one table in
 * buildmatrix.c. The compilers run without a shell (fa_run_output), one job
 * per source and target, on up to `jobs` threads; a compiler that is not
 * installed makes its jobs 'skipped' with the reason, not failed. */
#ifndef FA_BUILDMATRIX_H
#define FA_BUILDMATRIX_H

#include "../base/err.h"
#include "isa.h"

enum fa_bm_family { FA_BM_CUDA = 0, FA_BM_HIP = 1 };

enum fa_bm_status { FA_BM_OK = 0, FA_BM_FAILED = 1, FA_BM_SKIPPED = 2 };

/* "ok", "failed", "skipped"; NULL when unknown. */
const char *fa_bm_status_name(int status);
/* The status of a name, -1 when unknown. */
int fa_bm_status_parse(const char *name);
/* "cuda", "hip". */
const char *fa_bm_family_name(enum fa_bm_family f);

struct fa_bm_target {
	const char *arch; /* "gfx942", "sm_90a" */
	enum fa_bm_family family;
	int optional; /* compiled only when --targets names it */
};

/* Every target, in the order of the grid's columns. */
extern const struct fa_bm_target fa_bm_targets[];
extern const int fa_bm_n_targets;

struct fa_bm_opts {
	const char *root;            /* the tree the listed sources are under; NULL "." */
	const char *const *sources;  /* explicit sources (.cu; .hip, .cpp); NULL: the list's */
	int n_sources;
	const char *const *targets;  /* explicit targets; NULL: all */
	int n_targets;
	const char *nvcc, *clang;    /* compilers; NULL: looked up (nvcc on PATH or
	                                /usr/local/cuda/bin/nvcc; clang++-19 on PATH) */
	const char *cuobjdump;       /* NULL: next to nvcc, else on PATH; absent: the
	                                matrix count comes from the PTX */
	const char *device_libs;     /* ROCm device-library folder; NULL: an overlay
	                                made in the work folder (links to the system's
	                                bitcode plus the missing oclc_isa_version files) */
	const char *workdir;         /* where the outputs go; NULL: a temporary folder,
	                                removed at the end */
	int jobs;                    /* compilers at once; < 1: the online CPUs */
};

/* One source compiled for one target. */
struct fa_bm_job {
	char source[512];            /* as listed (relative to root) */
	const char *arch;
	enum fa_bm_family family;
	int listed;                  /* 1: from the list (gets the list's extra flags) */
	char compiler[512];          /* the program that ran ("" when skipped) */
	int status;                  /* enum fa_bm_status */
	char error[512];             /* failed: the first error line; skipped: why */
	double compile_s;            /* wall time of the compile and the ISA dump */
	struct fa_isa isa;           /* the kernels of an ok job */
	char **names;                /* isa.n short demangled names (malloc'd) */
};

struct fa_bm_plan {
	struct fa_bm_job *jobs;
	int n_jobs;
	char notes[1024];            /* e.g. that a family has no sources */
	char nvcc[512], clang[512], cuobjdump[512], cxxfilt[512]; /* "" when absent */
	char workdir[512];
	int own_workdir;             /* 1: a temporary folder removed by fa_bm_plan_free */
	char device_libs[700];
};

/* Resolves the sources, targets and compilers into jobs (jobs whose
 * compiler is missing are 'skipped: nvcc not found'). Nothing runs yet.
 * Returns FA_OK; FA_ERR_USAGE for an unknown target ('unknown target
 * 'gfx9000'') or a source that is neither .cu nor .hip; FA_ERR_NOT_FOUND
 * for a source that does not exist; FA_ERR_IO when the work folder cannot
 * be made. On error the plan holds nothing. */
enum fa_rc fa_bm_plan_make(const struct fa_bm_opts *o, struct fa_bm_plan *plan,
			   struct fa_err *err);

/* Called once per job as it finishes (skipped jobs first), under a lock:
 * never twice at once. done counts the jobs finished so far. A non-zero
 * return stops the jobs not yet started (they are left out). */
typedef int (*fa_bm_done_fn)(void *ctx, const struct fa_bm_job *job, int done, int total);

/* Runs the plan's jobs on up to o->jobs threads. Returns FA_OK, or the
 * first error of the callback's caller (err set by the callback's ctx). */
enum fa_rc fa_bm_execute(struct fa_bm_plan *plan, const struct fa_bm_opts *o,
			 fa_bm_done_fn done, void *ctx, struct fa_err *err);

/* Frees the jobs and removes a temporary work folder. */
void fa_bm_plan_free(struct fa_bm_plan *plan);

#endif /* FA_BUILDMATRIX_H */
