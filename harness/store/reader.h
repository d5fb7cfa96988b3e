/* reader.h - the one reader of stored runs: what report, compare, history
 * and plot ask of the database, so that none of them writes SQL.
 *
 *   runs      one run by id, every run, or the runs a compare spec names
 *             (an id, a label, "latest", a commit prefix);
 *   results   a run's results with their case (problem fields, parameters
 *             as text) and, when asked, their raw samples, as typed records;
 *   cases     a run's cases, typed, in suite order;
 *   rows      a run's row, cases or results as untyped cells, every stored
 *             column, for the writers that print each column as it is
 *             stored (report's CSV and JSON).
 *
 * Typed records live in the caller's arena (base/arena.h): strings are ""
 * where the database holds NULL, numbers NaN. Every query binds its
 * parameters; nothing from the user is pasted into SQL.
 */
#ifndef FA_READER_H
#define FA_READER_H

#include <stdint.h>

#include "../base/arena.h"
#include "../base/err.h"
#include "../suite/suite.h"
#include "store.h"

/* ---- Runs ---------------------------------------------------------------- */

/* A stored run (strings in the arena, "" unknown). */
struct fa_reader_run {
	int64_t id;
	const char *started_at;  /* ISO 8601 UTC */
	const char *git_commit;  /* full hash */
	int32_t git_dirty;       /* 1, 0, -1 unknown */
	const char *label;
	const char *status;      /* "complete", "incomplete" */
	const char *suite_name;
	const char *backend;
	const char *device_name;
	const char *host;
	const char *ab_group;    /* "" unless the run is one side of a run --ab */
	int32_t ab_earlier;      /* runs of its ab_group with a smaller id */
};

/* Reads run id into *out. Returns FA_OK; FA_ERR_NOT_FOUND ("no run N in
 * 'PATH'"); FA_ERR_DB; FA_ERR_NOMEM. */
enum fa_rc fa_reader_run_get(struct fa_store *s, int64_t id, struct fa_arena *a,
			     struct fa_reader_run *out, struct fa_err *err);

/* Every run, oldest first (by started_at, then id), into *out (an arena
 * array of *n; NULL when there is none). Returns FA_OK, FA_ERR_DB or
 * FA_ERR_NOMEM. */
enum fa_rc fa_reader_runs_list(struct fa_store *s, struct fa_arena *a,
			       struct fa_reader_run **out, int32_t *n, struct fa_err *err);

/* The smallest commit prefix fa_reader_runs_match takes: shorter hex
 * strings are too likely to be a typo of an id or to match many commits. */
#define FA_READER_MIN_COMMIT_PREFIX FA_MIN_COMMIT_PREFIX

/* The runs spec names, tried in this order: a decimal id (that run), a
 * label (every run with it), "latest" (the most recent run), a prefix of at
 * least FA_READER_MIN_COMMIT_PREFIX hex digits of a git commit (every run of
 * that commit, any case); several are oldest first. *ids is malloc'd (free
 * it), *n its length; *matched_by is "id", "label", "latest" or "commit".
 * Returns FA_OK; FA_ERR_NOT_FOUND quoting spec when nothing matches (*ids
 * NULL); FA_ERR_DB; FA_ERR_NOMEM. */
enum fa_rc fa_reader_runs_match(struct fa_store *s, const char *spec, int64_t **ids, int *n,
				const char **matched_by, struct fa_err *err);

/* ---- Cases and results ----------------------------------------------------- */

/* The case parameters as text, in the report's order: values[j] of a
 * result is parameter fa_reader_param_names[j]. */
#define FA_READER_N_PARAMS 17
extern const char *const fa_reader_param_names[FA_READER_N_PARAMS];

/* A stored case: enough of a struct fa_case for fa_expr_eval and labels
 * (index, problem, dist, scale_set, depth, pass; no key, lengths or seed). */
struct fa_reader_case {
	int64_t idx;
	struct fa_case c;
};

/* The cases of run_id in idx order into *out (arena), *n their number.
 * Returns FA_OK, FA_ERR_DB or FA_ERR_NOMEM. */
enum fa_rc fa_reader_cases(struct fa_store *s, int64_t run_id, struct fa_arena *a,
			   struct fa_reader_case **out, int *n, struct fa_err *err);

/* One stored result with its case and its run's suite (strings in the arena). */
struct fa_reader_result {
	int64_t id, run_id;
	const char *suite, *key, *kernel, *params, *reason;
	const char *stop;      /* stop_reason as stored ("converged", "max_time", ...), "" NULL */
	const char *tags;      /* the case's labels joined by ", " (case_tags), "" none */
	const struct fa_case_tag *tag_list; /* the same labels in order (arena), n_tags of them */
	int32_t n_tags;
	const char *timing;    /* how it was timed as stored ("cold-clean", "graph-cold",
	                          ...), "" NULL */
	int32_t case_idx;
	int32_t status;        /* enum fa_status, as fa_status_effective gives it: a pass
	                          nobody checked reads FA_STATUS_UNCHECKED; -1 unknown */
	int32_t n_samples;     /* as stored in results.n_samples */
	double median_ms;      /* NaN when NULL */
	double stdev_ms;       /* NaN when NULL */
	double tflops, gbps;   /* NaN when NULL */
	double *samples;       /* FA_READER_SAMPLES: the rows of samples, in order taken */
	int32_t n_read;        /* how many samples were read */
	const char *values[FA_READER_N_PARAMS]; /* parameters as text, "" when NULL */
	struct fa_problem p;   /* the fields the where-language reads */
	int32_t dist;          /* enum fa_dist */
	int32_t scale_set;     /* 1 when the suite gave scale */
	int32_t depth;         /* the suite's depth: of the case, 0 when not given */
	int32_t pass;          /* enum fa_pass of the case */
};

/* fa_reader_results flags. */
enum { FA_READER_SAMPLES = 1 };

/* Reads every result of run_id (by case idx, kernel, params, id), with its
 * samples when flags has FA_READER_SAMPLES, into *out (arena), *n their
 * number. suite is stored with each result (the run's suite name). Returns
 * FA_OK, FA_ERR_DB or FA_ERR_NOMEM. */
enum fa_rc fa_reader_results(struct fa_store *s, int64_t run_id, const char *suite, int flags,
			     struct fa_arena *a, struct fa_reader_result **out, int *n,
			     struct fa_err *err);

/* A case for fa_expr_eval from a result's problem fields. */
void fa_reader_result_case(const struct fa_reader_result *r, struct fa_case *c);

/* ---- Rows: every stored column, untyped ------------------------------------ */

/* One value as the database holds it. */
enum fa_cell_type { FA_CELL_NULL = 0, FA_CELL_INT, FA_CELL_REAL, FA_CELL_TEXT };

struct fa_cell {
	int type;              /* enum fa_cell_type */
	int64_t i;
	double d;
	char *s;               /* FA_CELL_TEXT: malloc'd, owned by the rows */
};

/* Rows of one table: cols[0..ncols) names its columns (static strings), c
 * holds nrows * ncols cells row by row. */
struct fa_rows {
	const char *const *cols;
	int ncols, nrows, cap;
	struct fa_cell *c;
};

/* Which rows fa_reader_rows reads, and their columns:
 *   FA_ROWS_RUN      the run's row (0 or 1 row): id, started_at, finished_at,
 *                    git_commit, git_dirty, host, backend, device_name,
 *                    device_arch, driver, runtime, suite_path, suite_name,
 *                    suite_hash, command_line, label, seed, version, source,
 *                    status, running;
 *   FA_ROWS_CASES    its cases by idx: id, idx, key, the parameters from
 *                    FA_ROWS_CASE_FIRST_PARAM (batch) to before
 *                    FA_ROWS_CASE_END_PARAM (one past scale_set), seed, pass;
 *   FA_ROWS_RESULTS  its results by id: id, case_id, then from
 *                    FA_ROWS_RESULT_FIRST_FIELD (kernel) every field a report
 *                    prints (timing, errors, telemetry, the device index
 *                    of a --devices run);
 *   FA_ROWS_GRADS    the gradients' statistics of its backward results
 *                    (grad_stats) by result id and tensor: result_id,
 *                    tensor (dq, dk, dv), max_abs, max_rel, mean_abs,
 *                    rel_l2, nmse, same_max_abs, nan_count, inf_count,
 *                    unwritten, rows_checked, elems_checked. */
enum fa_rows_kind { FA_ROWS_RUN = 0, FA_ROWS_CASES, FA_ROWS_RESULTS, FA_ROWS_GRADS };
#define FA_ROWS_CASE_FIRST_PARAM 3
#define FA_ROWS_CASE_END_PARAM 24
#define FA_ROWS_RESULT_FIRST_FIELD 2

/* Reads the rows of kind for run_id into *rows (free with fa_rows_free,
 * also on error). Returns FA_OK; FA_ERR_DB ("cannot read run N from
 * 'PATH': ..."); FA_ERR_NOMEM. */
enum fa_rc fa_reader_rows(struct fa_store *s, int kind, int64_t run_id, struct fa_rows *rows,
			  struct fa_err *err);
void fa_rows_free(struct fa_rows *rows);

/* The cell of column name in row row, NULL for an unknown column. */
const struct fa_cell *fa_rows_cell(const struct fa_rows *rows, int row, const char *name);
/* Its text, NULL unless it is text. */
const char *fa_rows_text(const struct fa_rows *rows, int row, const char *name);
/* Its integer, 0 unless it is an integer. */
int64_t fa_rows_int(const struct fa_rows *rows, int row, const char *name);
/* 1 and *v when it is a number (integer or real), else 0. */
int fa_rows_real(const struct fa_rows *rows, int row, const char *name, double *v);

#endif /* FA_READER_H */
