/* compare.h - `fabench compare BASE HEAD`: the results of two runs (or two
 * pools of runs) side by side, matched by (case key, kernel, params), with a
 * FASTER / SLOWER / SAME / NOISY verdict per row from the raw samples
 * (fa_stats_verdict: Mann-Whitney test and a bootstrap interval of the
 * ratio, with a minimum effect), correctness changes (a result that passed
 * and now fails is listed first), and a summary: counts and geometric-mean
 * speedups per kernel and per suite.
 *
 * Two steps, so that other writers (plots, the HTML report) use the same
 * numbers: fa_compare_build() reads the database into a struct fa_compare
 * (plain data, owned by it), fa_compare_write() prints it as markdown, CSV
 * or JSON. Building is deterministic: the same database and options give
 * the same struct, and the writers the same bytes.
 *
 * Run specs (BASE, HEAD), tried in this order:
 *   - a decimal id: that run;
 *   - a label: every run with that label, pooled;
 *   - "latest": the most recent run;
 *   - a prefix of at least 4 hex digits of a git commit: every run of that
 *     commit, pooled.
 * Pooled: the timing samples of one (case key, kernel, params) in all the
 * runs of a side are taken together, as if one run had taken them all.
 *
 * All SQL uses bound parameters; specs are never pasted into SQL.
 */
#ifndef FA_COMPARE_H
#define FA_COMPARE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "../../kernels/common/fa_problem.h"
#include "../base/err.h"
#include "stats.h"
#include "../store/reader.h"
#include "../store/store.h"

/* The smallest commit prefix accepted as a spec (the reader's). */
#define FA_COMPARE_MIN_COMMIT_PREFIX FA_READER_MIN_COMMIT_PREFIX

/* What happened to one (case key, kernel, params) between BASE and HEAD.
 * Stored nowhere; printed by name (fa_compare_change_name). */
enum fa_cmp_change {
	FA_CMP_TIMED = 0,   /* passed and timed on both sides: row.verdict holds */
	FA_CMP_BROKEN = 1,  /* fails in HEAD (fail, error, timeout) and did not in BASE
	                       (passed, was skipped, or was not there) */
	FA_CMP_FIXED = 2,   /* failed in BASE, passes in HEAD */
	FA_CMP_FAILING = 3, /* fails on both sides */
	FA_CMP_ADDED = 4,   /* a result in HEAD only (that does not fail) */
	FA_CMP_REMOVED = 5, /* a result in BASE only */
	FA_CMP_UNTIMED = 6, /* on both sides, not failing in HEAD, not timed on both
	                       (skipped on a side, or no timing stored) */
	FA_CMP_CHANGE_COUNT
};

/* "timed", "broken", "fixed", "failing", "added", "removed", "untimed";
 * "unknown" for other values. */
const char *fa_compare_change_name(int change);

struct fa_compare_opts {
	struct fa_perf_cfg perf; /* alpha, min_effect, bootstrap; fa_stats_verdict_defaults()
	                            fills the defaults. The bootstrap seed of a row is
	                            perf.seed mixed with a hash of its (key, kernel,
	                            params), so rows resample independently and the
	                            output does not depend on row order. */
	int32_t ignore_params;   /* 1: match by (case key, kernel) only, so that one kernel
	                            run with other tunables in HEAD compares with BASE
	                            (row.base_params says BASE's); a side that ran a
	                            kernel with several params on one case is then an
	                            error (FA_ERR_USAGE) */
};

/* compare's default minimum effect: the A/A floor. Paired A/As flagged no
 * row whose interval lay beyond 4% (H100, 18 x 56 rows of cuda_flash_mma on
 * the smoke suite: 3 beyond 3%; this CPU VM, 20 x 16 rows: the largest
 * |ratio - 1| 2.5%), while a planted 5% slowdown is found in every row
 * (docs/compare.md). --min-effect lowers it on a quieter machine. */
#define FA_CMP_MIN_EFFECT 0.04

/* Fills o with the defaults (fa_stats_verdict_defaults, min_effect
 * FA_CMP_MIN_EFFECT). */
void fa_compare_opts_init(struct fa_compare_opts *o);

/* One run of a side, as stored (strings owned by the struct fa_compare;
 * "" for unknown text). */
struct fa_cmp_run {
	int64_t id;
	const char *started_at;  /* ISO 8601 UTC */
	const char *git_commit;  /* full hash, "" unknown */
	int32_t git_dirty;       /* 1, 0, -1 unknown */
	const char *label;
	const char *status;      /* "complete", "incomplete" */
	const char *suite_name;
	const char *backend;
	const char *device_name;
	const char *host;
	const char *ab_group;    /* "" unless the run is one side of a run --ab */
};

/* BASE or HEAD: the spec as given and the runs it named (oldest first). */
struct fa_cmp_side {
	const char *spec;
	const char *matched_by;  /* "id", "label", "latest" or "commit" */
	struct fa_cmp_run *runs;
	int32_t n_runs;
	int32_t n_commits;       /* distinct non-empty git_commit values among runs */
};

/* One (case key, kernel, params). Pooled over a side's runs: its status is
 * the worst one there (timeout, error and fail before pass, pass before
 * skip), its samples are those of its passing results. */
struct fa_cmp_row {
	const char *suite;       /* the suite name of the run it came from (HEAD's when both) */
	const char *key;         /* the case's canonical key */
	int32_t case_idx;        /* its position in the suite (HEAD's when both) */
	const char *kernel;
	const char *params;      /* "" when none */
	const char *const *values; /* the case's parameters, cmp->n_params entries, as
	                            text ("" where a parameter does not apply):
	                            values[j] is parameter cmp->param_names[j] */
	int32_t change;          /* enum fa_cmp_change */
	int32_t base_status;     /* enum fa_status; -1 when absent */
	int32_t head_status;
	const char *base_reason; /* the reason of a side's non-pass status, "" none */
	const char *head_reason;
	int32_t n_base, n_head;  /* pooled samples of each side */
	double base_ms, head_ms; /* median of the pooled samples (or the stored median
	                            when a result has no samples); NaN when untimed */
	double speedup;          /* base_ms / head_ms: > 1 HEAD is faster; NaN unless TIMED */
	int32_t verdict;         /* enum fa_perf_verdict when TIMED, else -1 */
	int32_t paired;          /* 1: decided on paired samples (fa_stats_verdict_paired) */
	struct fa_perf_result perf; /* the verdict's details when TIMED (ratio is
	                               head / base, the inverse of speedup) */
	const char *base_params; /* BASE's params: equal to params (HEAD's, or BASE's for a
	                            row in BASE only) unless opts.ignore_params */
	double base_rsd, head_rsd; /* relative standard deviation of a side's pooled
	                            samples (stdev / mean; the stored stdev / median
	                            when a result has no samples); NaN when untimed or
	                            unknown */
	const char *base_stop, *head_stop; /* why a side's sampling stopped: the first
	                            of its passing results that did not stop on the
	                            noise ("max_time", "max_samples", "timeout"), else
	                            "converged"; "" when unknown (an import) or untimed */
	int32_t lost;            /* 1: timed in BASE (passed, with timings) and not timed
	                            in HEAD: removed, skipped or untimed there (a BROKEN
	                            row is a regression, not counted here) */
	const char *tags;        /* the case's labels (models) joined by ", ", "" none:
	                            those of both sides and every pooled run, each
	                            (name, model, layers) once, BASE's first */
	const struct fa_case_tag *tag_list; /* the same labels in order, n_tags of them */
	int32_t n_tags;
	int32_t depth;           /* the suite's depth of the case, HEAD's where it gave one,
	                            else BASE's; 0 when neither did */
	int32_t pass;            /* enum fa_pass of the case */
	const char *base_timing, *head_timing; /* how a side's passing results were timed
	                            (the first one's timing: "cold-clean", "graph-cold",
	                            ...), "" unknown */
	int32_t timing_differs;  /* 1: TIMED and both timings known and different: the
	                            speedup compares two ways of timing (a graph against
	                            single launches, hot against cold) as much as two
	                            builds */
};

/* Geometric-mean speedup of the TIMED rows of one kernel or one suite, and
 * the verdict counts among them. */
struct fa_cmp_group {
	const char *name;        /* kernel or suite name */
	int32_t n;               /* TIMED rows in the group */
	double geomean_speedup;  /* NaN when n == 0 */
	int32_t verdicts[4];     /* indexed by enum fa_perf_verdict */
};

struct fa_compare {
	struct fa_compare_opts opts;     /* the options it was built with */
	const char *db_path;
	struct fa_cmp_side base, head;
	int32_t paired; /* 1: BASE and HEAD are the two runs of one `run --ab`, so
	                   rows with one result a side compare samples in pairs */

	/* The case parameters, in the report's order (batch, heads, kv_heads,
	 * q_len, kv_len, head_dim, head_dim_v, dtype, mask, prefix_len, window,
	 * layout, input, seqlens, kv_seqlens, prefix_lens, scale). Those that
	 * vary between the rows, and that do not equal their partner everywhere
	 * (kv_heads = heads, ...), have shown[j] = 1: the table's columns. */
	int32_t n_params;
	const char *const *param_names;  /* static strings */
	int32_t *shown;

	/* Rows: BROKEN first, then every other row by (suite, case_idx, kernel,
	 * params). */
	struct fa_cmp_row *rows;
	int32_t n_rows;

	/* Summary. */
	int32_t changes[FA_CMP_CHANGE_COUNT]; /* rows per enum fa_cmp_change */
	int32_t verdicts[4];                  /* TIMED rows per enum fa_perf_verdict */
	double geomean_speedup;               /* over every TIMED row; NaN when none */
	struct fa_cmp_group *kernels;         /* by name */
	int32_t n_kernels;
	struct fa_cmp_group *suites;          /* by name */
	int32_t n_suites;
	int32_t n_regressions;                /* SLOWER rows plus BROKEN rows: what
	                                         --fail-on-regression gates on */
	int32_t n_unchecked;                  /* rows with a side unchecked: an import
	                                         nobody compared against the reference
	                                         (timed like a pass, never verified) */
	int32_t n_lost;                       /* rows with lost = 1: coverage lost,
	                                         which --fail-on-regression also fails on,
	                                         as it does when no row is TIMED */
	int32_t lost_removed, lost_untimed;   /* n_lost split: REMOVED, UNTIMED rows */
	int32_t n_timing_differs;             /* rows with timing_differs = 1 */
	const char *differs_base, *differs_head; /* the first such row's timings */
	int32_t separate;                     /* 1: BASE and HEAD are separate runs (not
	                                         paired, no run on both sides) */
	double median_rsd;                    /* median over the TIMED rows of the larger
	                                         side's base_rsd/head_rsd; NaN when none */
	int32_t rows_left_out;                /* TIMED rows fa_compare_write_md_fit left
	                                         out of the tables (a note says so) */
	int32_t fit_chars;                    /* the limit they were left out for */

	struct fa_arena arena;                /* private: owns every string and array above */
};

/* Resolves base_spec and head_spec, reads both sides' results and samples,
 * matches them and computes every verdict. opts NULL means the defaults.
 * Returns FA_OK with *out filled (free with fa_compare_free); FA_ERR_NOT_FOUND
 * when a spec names no run (the message quotes it); FA_ERR_USAGE for an empty
 * spec, bad options (alpha, min_effect) or params that --ignore-params
 * cannot match; FA_ERR_DB; FA_ERR_NOMEM. On failure *out holds no runs and
 * no rows, and fa_compare_free on it is harmless. */
enum fa_rc fa_compare_build(struct fa_store *s, const char *base_spec, const char *head_spec,
			    const struct fa_compare_opts *opts, struct fa_compare *out,
			    struct fa_err *err);

/* Writes cmp to f as format (enum fa_report_format: FA_FMT_MD, FA_FMT_CSV or
 * FA_FMT_JSON). Markdown is for a PR comment: the sides and the counts,
 * the correctness changes, the summary table, then one table per suite (the
 * case columns that vary, kernel, base and head medians, speedup, verdict). CSV has one line
 * per row with full-precision numbers; JSON holds the sides, the summary and
 * every row. Returns FA_OK; FA_ERR_USAGE for another format; FA_ERR_IO when
 * f cannot be written; FA_ERR_NOMEM. */
enum fa_rc fa_compare_write(const struct fa_compare *cmp, int format, FILE *f,
			    struct fa_err *err);

/* fa_compare_write's markdown in at most max_chars characters (a GitHub PR
 * comment holds 65536): when the whole is longer, TIMED rows are left out
 * of the tables, the SLOWER ones kept first, then FASTER, then the rest, as
 * few as it takes; a note says how many. The correctness lines, the
 * counts and the summary always stay (they cover every row). When even
 * they are too long, the text is cut at a line and says so. Returns as
 * fa_compare_write. */
enum fa_rc fa_compare_write_md_fit(struct fa_compare *cmp, long max_chars, FILE *f,
				   struct fa_err *err);

/* Frees everything cmp owns and zeroes it. cmp may be NULL. */
void fa_compare_free(struct fa_compare *cmp);

/* ---- Shared with history.c ---------------------------------------------------
 * The case-parameter columns that compare and history both print (their
 * text helpers are table.h's; the results come from store/reader.h). Not an
 * interface for other modules: read the structs above. */

/* The case parameters shown as columns, in the report's order: the
 * reader's values[] (fa_reader_param_names). */
#define FA_CMP_N_PARAMS FA_READER_N_PARAMS
/* 1 for the parameters that are numbers (right-aligned in tables). */
int fa_compare_param_numeric(int j);

/* shown[j] (FA_CMP_N_PARAMS entries) = 1 for the parameters that make
 * columns among the n value arrays values[i][0..FA_CMP_N_PARAMS): those that
 * vary and do not equal their partner (kv_heads = heads, kv_len = q_len,
 * head_dim_v = head_dim, kv_seqlens = seqlens) everywhere. */
void fa_compare_shown(const char *const *const *values, int n, int32_t *shown);

/* fa_compare_shown over n records of item_size bytes from items, each
 * holding its value array (const char *const *) values_offset bytes in
 * (offsetof): compare's rows, history's series. Returns FA_OK, or
 * FA_ERR_NOMEM with shown untouched. */
enum fa_rc fa_compare_shown_of(const void *items, int n, size_t item_size, size_t values_offset,
			       int32_t *shown, struct fa_err *err);

/* Adds the first cells of a suite table's row (fa_compare_suite_table):
 * case_no, then the values of the parameters shown. Returns FA_OK or
 * FA_ERR_NOMEM. */
struct fa_table;
enum fa_rc fa_compare_md_case_cells(struct fa_table *t, int case_no,
				    const char *const *values, const int32_t *shown,
				    struct fa_err *err);

/* The start of a markdown table of one suite's rows, as compare and history
 * print them: "\n## <title>: <suite>\n\n" (no ": <suite>" when suite is
 * ""), then "Common to every case: heads=8, dtype=fp32; kv_len = q_len.\n\n"
 * for the parameters that do not vary among the n value arrays values[i]
 * (nothing when there is nothing to say), and *t initialised with the
 * columns "#", the parameters that vary (shown[j] = 1, as
 * fa_compare_shown) and the n_tail columns of tail (their headers and their
 * alignment, tail_right), its header row added. Returns FA_OK or
 * FA_ERR_NOMEM; *t is to be freed with fa_table_free either way. */
struct fa_table;
enum fa_rc fa_compare_suite_table(FILE *f, const char *title, const char *suite,
				  const char *const *const *values, int n,
				  const char *const *tail, const int32_t *tail_right, int n_tail,
				  int32_t *shown, struct fa_table *t, struct fa_err *err);

/* The JSON fields (without braces) that a run's object has in compare and
 * history: "id", "started_at", "git_commit", "git_dirty" (true, false, or
 * null for -1), "label", "status" and "suite". */
void fa_compare_json_run(FILE *f, int64_t id, const char *started_at, const char *git_commit,
			 int32_t git_dirty, const char *label, const char *status,
			 const char *suite);

/* The JSON fields (without braces) that name a compare row or a history
 * series: "suite", "case_idx", "key", "kernel" and "params". */
void fa_compare_json_row_key(FILE *f, const char *suite, int32_t case_idx, const char *key,
			     const char *kernel, const char *params);

/* "case": {...}: the case parameters values[0..FA_CMP_N_PARAMS) in JSON,
 * each a number, a string, or null where it is "". */
void fa_compare_json_case(FILE *f, const char *const *values);

#endif /* FA_COMPARE_H */
