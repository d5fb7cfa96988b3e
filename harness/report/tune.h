/* tune.h - `fabench tune`: settle a kernel's tunable from a stored sweep.
 *
 * A tuning run holds one kernel run with several values of one tunable
 * (fabench run --param K.P=V1,V2,...). From its stored samples this module
 * finds, per case, the fastest value and the values tied with it (not
 * significantly slower: the verdict of compare, stats.h), the speed-up of
 * the best over the kernel's built-in value (`auto`, its default), and the
 * regret of rules: the built-in one, rules given as number-valued
 * expressions over case parameters (expr.h: `kv_len >= 16k ? 16 : 4`), and
 * a rule fitted to the run: a decision tree of depth <= depth on the case
 * parameters named by `by`, each split a threshold `x >= t`, found by an
 * exhaustive, deterministic search that minimises the summed log regret
 * (time of the chosen value over time of the best).
 *
 * Nothing here prints except the writers, which write to the FILE given.
 */
#ifndef FA_TUNE_H
#define FA_TUNE_H

#include <stdint.h>
#include <stdio.h>

#include "../base/err.h"
#include "../store/store.h"
#include "../suite/suite.h"
#include "stats.h"

/* The deepest fitted rule (--depth): 2^4 leaves already outnumber the cases
 * of most sweeps, and the exhaustive search grows as thresholds^depth. */
#define FA_TUNE_MAX_DEPTH 4
#define FA_TUNE_DEFAULT_DEPTH 2
/* The most --rule and --by entries. */
#define FA_TUNE_MAX_RULES 16
#define FA_TUNE_MAX_BY 8
/* The default --loss: a case whose chosen value is more than 5% slower than
 * its best is listed. */
#define FA_TUNE_DEFAULT_LOSS 0.05

struct fa_tune_opts {
	int64_t run_id;
	const char *kernel;        /* NULL: the kernel with the most sets of params */
	const char *param;         /* NULL: the one param that varies */
	int32_t has_auto;          /* 1: auto_value is the built-in value */
	int32_t auto_value;
	const char *rules[FA_TUNE_MAX_RULES]; /* number-valued expressions */
	int32_t n_rules;
	const char *by;            /* "batch,kv_len": fit a rule on these; NULL: none */
	int32_t depth;             /* the fitted tree's depth, 1..FA_TUNE_MAX_DEPTH */
	double loss;               /* list cases losing more than this fraction */
	const char *where;         /* keep the cases for which it holds; NULL: all */
	struct fa_perf_cfg perf;   /* alpha and min_effect of the tie test */
};

/* Fills o with the defaults (depth 2, loss 5%, compare's alpha and min
 * effect, no rules, no fit). */
void fa_tune_opts_init(struct fa_tune_opts *o);

struct fa_tune_case {
	int64_t idx;               /* the case's idx in the run (from 0) */
	char *key;
	struct fa_case c;          /* problem, dist, scale_set: for expressions */
	double *median_ms;         /* per value; NaN when not timed (failed, skipped) */
	double **samples;          /* per value, the raw samples (NULL when none) */
	int32_t *n_samples;
	int32_t best;              /* the value with the lowest median; -1: none timed */
	uint8_t *tie;              /* per value: 1 when not significantly slower than best */
	int32_t auto_verdict;      /* best against auto: enum fa_perf_verdict; -1 none */
	double speedup;            /* auto median / best median; NaN none */
	double *x;                 /* the --by values of the case */
	char *models;              /* its labels (case_tags) joined by ", ", "" none */
};

struct fa_tune_rule {
	char *name;                /* "auto", "R1", ..., "fitted" */
	char *text;                /* the expression ("16" for auto) */
	int32_t *choice;           /* per case: the value index; -1 when the rule's value
	                              was not swept, is undefined or was not timed */
	double *choice_value;      /* per case: the value the rule gave (NaN undefined) */
	double *loss;              /* per case: chosen / best - 1; NaN when no choice */
	int32_t *verdict;          /* per case: chosen against best; -1 none */
	double geomean_loss;       /* over the cases with a choice; NaN when none */
	double worst_loss;
	int32_t worst_case;        /* index into cases, -1 none */
	int32_t n_over;            /* cases with loss > opts.loss */
	int32_t n_slower;          /* of those, significantly slower */
	int32_t n_missing;         /* timed cases without a choice */
	int32_t n_used;
};

struct fa_tune_leaf {
	double *lo, *hi;           /* per --by: lo <= x < hi (-inf / +inf: open) */
	int32_t value;             /* index into values */
};

struct fa_tune {
	int64_t run_id;
	char *label, *suite, *backend, *device;
	char *status;              /* the run's: complete, incomplete, running */
	char *kernel, *param;
	char *fixed;               /* the kernel's other params (the same in every result) */
	char *where;               /* --where's text, NULL when none */
	int32_t *values;           /* the swept values, ascending */
	char **value_params;       /* per value, the params stored with it ("splits=4,order=1") */
	int32_t n_values;
	int32_t has_auto, auto_value;
	int32_t auto_idx;          /* index of auto_value in values, -1 when not swept */
	struct fa_tune_case *cases;
	int32_t n_cases, n_timed;  /* n_timed: cases with a best */
	struct fa_tune_rule *rules; /* auto (when has_auto), the --rule ones, fitted */
	int32_t n_rules;
	char **by;                 /* the --by expressions */
	int32_t n_by, depth;
	struct fa_tune_leaf *leaves; /* the fitted rule as boxes, in tree order */
	int32_t n_leaves;
	int32_t fitted;            /* index of the fitted rule in rules, -1 none */
	int32_t any_models;        /* 1: some case carries labels (a models column) */
	double loss, alpha, min_effect;
};

/* Parses o's --rule and --by expressions only (no run needed), so a
 * typo fails before a sweep rather than after it: FA_OK or FA_ERR_INPUT
 * (the message names the option and column, as fa_tune_build's would). */
enum fa_rc fa_tune_check_opts(const struct fa_tune_opts *o, struct fa_err *err);

/* Reads the run, finds the kernel and param, computes everything above.
 * Returns FA_OK; FA_ERR_NOT_FOUND (no such run, kernel in the run or
 * param); FA_ERR_INPUT (no kernel with several params, several params
 * varying, a value that is not an integer or one out of int32_t's range, a
 * rule or --by expression that does not parse: the message names the
 * option and column, a --where that keeps no case); FA_ERR_DB;
 * FA_ERR_NOMEM. *t is freeable on any return. */
enum fa_rc fa_tune_build(struct fa_store *s, const struct fa_tune_opts *o, struct fa_tune *t,
			 struct fa_err *err);
void fa_tune_free(struct fa_tune *t);

/* Writes the tuning report: format is FA_FMT_MD, FA_FMT_CSV or FA_FMT_JSON
 * (report.h). Returns FA_OK, FA_ERR_USAGE for another format, FA_ERR_NOMEM. */
enum fa_rc fa_tune_write(const struct fa_tune *t, int format, FILE *f, struct fa_err *err);

/* The rule a heatmap marks: the fitted one, else the last --rule, else the
 * built-in value; -1 when there is none. */
int fa_tune_mark_rule(const struct fa_tune *t);

/* Writes the fitted rule as a C header (a threshold table and a function
 * choosing the value), byte for byte the same for the same run and options.
 * FA_ERR_INPUT when no rule was fitted (no --by). */
enum fa_rc fa_tune_write_header(const struct fa_tune *t, FILE *f, struct fa_err *err);

#endif /* FA_TUNE_H */
