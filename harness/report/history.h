/* history.h - `fabench history`: for each (case key, kernel, params), the
 * series of its results over the stored runs (oldest first, by start time),
 * with the latest value, the best, the change since the previous run and
 * the steps found in the series of medians (fa_stats_changepoints, each
 * point weighted by its noise), each step with the commit range where it
 * happened. For the nightly job: a step to slower times whose new segment
 * is the latest run alone is a new regression.
 *
 * Two steps, as compare.h: fa_history_build() reads the database into a
 * struct fa_history (plain data, owned by it) and fa_history_write() prints
 * it as markdown, CSV or JSON. Deterministic: the same database and options
 * give the same bytes.
 *
 * Filters are applied in C after bound-parameter queries: the label, date,
 * suite name, kernel glob and where-expression are never pasted into SQL.
 */
#ifndef FA_HISTORY_H
#define FA_HISTORY_H

#include <stdint.h>
#include <stdio.h>

#include "compare.h"
#include "../base/err.h"
#include "../store/store.h"

/* A point's noise (the standard error of its median) is never taken below
 * this fraction of the median: timer resolution and rounding in stored
 * values make a smaller one meaningless, and a zero one would give the
 * point infinite weight. */
#define FA_HISTORY_MIN_REL_SIGMA 0.001

struct fa_history_opts {
	const char *since;          /* runs started on or after this date, "YYYY-MM-DD"
	                               or "YYYY-MM-DDTHH:MM:SSZ"; NULL: all */
	const char *suite;          /* runs of this suite name only; NULL: all */
	const char *kernel;         /* fnmatch glob on the kernel name; NULL: all */
	const char *where;          /* a suite expression on the case (expr.h); NULL: all */
	const char *label;          /* runs with this label only; NULL: all */
	int32_t include_incomplete; /* 1: also runs whose status is 'incomplete' */
	int32_t no_ab;              /* 1: leave out the runs of `run --ab` (by default
	                               each side makes series of its own) */
	double min_effect;          /* steps smaller than this relative change are
	                               merged away, and a new regression must exceed it
	                               (default FA_STATS_MIN_EFFECT) */
	double penalty;             /* change-point penalty; <= 0: the default of
	                               fa_stats_changepoints */
};

/* Fills o with the defaults: no filters, complete runs only, min_effect
 * FA_STATS_MIN_EFFECT, the default penalty. */
void fa_history_opts_init(struct fa_history_opts *o);

/* One selected run (strings owned by the struct fa_history, "" unknown). */
struct fa_hist_run {
	int64_t id;
	const char *started_at;
	const char *git_commit;
	int32_t git_dirty;      /* 1, 0, -1 unknown */
	const char *label;
	const char *status;     /* "complete", "incomplete" */
	const char *suite_name;
	const char *ab_side;    /* "" for a plain run; for one side of a `run --ab`, "a"
	                           or "b" (from its label LABEL-a / LABEL-b, else its
	                           place in the group) */
	const char *device;     /* its device_name ("" unknown) */
	const char *host;
};

/* One result of a series: what the run at h->runs[run] gave. */
struct fa_hist_point {
	int32_t run;            /* index into h->runs */
	int32_t status;         /* enum fa_status */
	int32_t n_samples;
	double median_ms;       /* NaN unless the result passed and was timed */
	double sigma_ms;        /* standard error of the median (from the samples' MAD,
	                           else the stored stdev, 5% of the median for a single
	                           sample; at least FA_HISTORY_MIN_REL_SIGMA of the
	                           median); NaN untimed */
	const char *timing;     /* how it was timed ("cold-clean", "graph-cold", ...),
	                           "" unknown */
};

/* A step between two segments of a series' timed points. */
struct fa_hist_step {
	int32_t at;             /* index into points of the first point after the step */
	int32_t prev;           /* index into points of the last timed point before it */
	double before_ms;       /* weighted mean of the segment before */
	double after_ms;        /* and of the segment after */
	double change;          /* after_ms / before_ms - 1: > 0 slower */
	int32_t new_regression; /* 1: slower by more than min_effect and the segment
	                           after it is the series' latest point alone, taken
	                           in the latest selected run of its suite */
	int32_t timing_changed; /* 1: the points on either side were timed differently
	                           (single launches, then run --graph): the step may be
	                           the method's, not the kernel's */
};

/* The history of one (case key, kernel, params, A/B side) over the selected
 * runs: the two sides of a `run --ab` and runs with other kernel params (a
 * tuning sweep) never share a series. */
struct fa_hist_series {
	const char *suite;      /* the suite of its latest point's run */
	const char *key;
	int32_t case_idx;       /* its position in that suite */
	const char *kernel;
	const char *params;     /* "" when none */
	const char *ab_side;    /* its runs' ab_side: "" plain runs, "a" or "b" */
	const char *device;     /* its runs' device: times of two GPU models are two
	                           series, never one with a step between them */
	const char *const *values; /* the case's parameters as text, h->n_params entries
	                           ("" where one does not apply) */
	int32_t pass;           /* the case's enum fa_pass: fwd, bwd, fwd_bwd (not in
	                           values, as in compare: a column where not fwd) */
	struct fa_hist_point *points; /* oldest first, one per run that has it */
	int32_t n_points;
	int32_t n_timed;        /* points with a median */
	int32_t latest;         /* index of the latest timed point; -1 none */
	int32_t best;           /* index of the timed point with the smallest median; -1 */
	double change_prev;     /* latest timed median / the timed one before - 1; NaN
	                           with fewer than 2 timed points */
	struct fa_hist_step *steps; /* oldest first */
	int32_t n_steps;
	int32_t new_regression; /* 1 when a step is a new regression */
};

struct fa_history {
	struct fa_history_opts opts;    /* as built (strings point to the caller's) */
	const char *db_path;
	struct fa_hist_run *runs;       /* selected runs, oldest first */
	int32_t n_runs;

	/* The case parameters, as in compare.h: names in the report's order,
	 * shown[j] = 1 for those that vary between series (the table columns). */
	int32_t n_params;
	const char *const *param_names;
	int32_t *shown;

	int32_t n_devices;              /* distinct devices of the selected runs */
	struct fa_hist_series *series;  /* by (suite, case_idx, kernel, params, ab_side,
	                                   device) */
	int32_t n_series;
	int32_t n_steps;                /* over every series */
	int32_t n_new_regressions;      /* series with a new regression: exit status 1 */

	struct fa_arena arena;          /* private: owns every string and array above */
};

/* Selects runs (opts NULL: the defaults), reads their results and samples,
 * builds the series and finds their steps. Returns FA_OK with *out filled
 * (free with fa_history_free; no run matching is not an error: the history
 * is empty); FA_ERR_USAGE for a bad --since date, kernel glob or
 * min_effect; FA_ERR_INPUT for an expression that does not parse (err
 * points into it as file "--where", line 1, with its text attached);
 * FA_ERR_DB; FA_ERR_NOMEM. On failure *out holds no runs and no series,
 * and fa_history_free on it is harmless. */
enum fa_rc fa_history_build(struct fa_store *s, const struct fa_history_opts *opts,
			    struct fa_history *out, struct fa_err *err);

/* Writes h to f as format (enum fa_report_format: md, csv or json). Markdown:
 * the selection, new regressions first, then one table per suite (the case
 * columns that vary, kernel, runs, latest, best, change since the previous
 * run, steps with their commit ranges). CSV: one line per series; JSON: the
 * runs and every series with its points and steps. Returns FA_OK;
 * FA_ERR_USAGE for another format; FA_ERR_IO; FA_ERR_NOMEM. */
enum fa_rc fa_history_write(const struct fa_history *h, int format, FILE *f,
			    struct fa_err *err);

/* Frees everything h owns and zeroes it. h may be NULL. */
void fa_history_free(struct fa_history *h);

#endif /* FA_HISTORY_H */
