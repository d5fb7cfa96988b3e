/* history.c - `fabench history`: every (case key, kernel, params) over the
 * selected runs, its latest and best medians, the change since the run
 * before, and the steps that change-point detection finds in its medians,
 * written as markdown (the nightly job's page), CSV (one line per point, for
 * spreadsheets) or JSON.
 *
 * Runs are selected in C from the reader's list of runs (store/reader.h:
 * label, date, suite, status); results are filtered in C by the kernel glob and the
 * where-expression, evaluated on a struct fa_case rebuilt from the cases
 * table. No filter text ever reaches SQL.
 */
#include "history.h"

#include <fnmatch.h>
#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "../suite/expr.h"
#include "report.h"
#include "stats.h"
#include "../suite/suite.h"
#include "table.h"
#include "../base/util.h"

#define N_OF(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* sqrt(pi / 2): the standard error of the median of n normal samples is
 * this times sigma / sqrt(n) (for large n). */
#define MEDIAN_SE_FACTOR 1.2533141373155003

/* A point timed with a single sample has an unknown noise: 5% of its median,
 * a typical run-to-run spread of CPU timings, keeps it from outweighing
 * points that were sampled properly. */
#define UNKNOWN_REL_SIGMA 0.05

void fa_history_opts_init(struct fa_history_opts *o)
{
	memset(o, 0, sizeof *o);
	o->min_effect = FA_STATS_MIN_EFFECT;
}

/* ---- Selection --------------------------------------------------------------- */

/* 1 when s is "YYYY-MM-DD", optionally followed by "THH:MM" or "THH:MM:SS"
 * and an optional 'Z'; the comparable prefix (without Z) into out. */
static int parse_since(const char *s, char *out, size_t size)
{
	static const char *const shapes[] = {"dddd-dd-dd", "dddd-dd-ddTdd:dd",
					     "dddd-dd-ddTdd:dd:dd"};
	size_t n = strlen(s);
	if (n > 0 && s[n - 1] == 'Z' && n > 10)
		n--;
	for (int k = 0; k < N_OF(shapes); k++) {
		const char *p = shapes[k];
		size_t i;
		if (strlen(p) != n)
			continue;
		for (i = 0; i < n; i++)
			if (p[i] == 'd' ? !(s[i] >= '0' && s[i] <= '9') : s[i] != p[i])
				break;
		if (i < n)
			continue;
		int month = (s[5] - '0') * 10 + (s[6] - '0'), day = (s[8] - '0') * 10 + (s[9] - '0');
		if (month < 1 || month > 12 || day < 1 || day > 31 || n + 1 > size)
			return 0;
		memcpy(out, s, n);
		out[n] = '\0';
		return 1;
	}
	return 0;
}

/* The side of a run in a `run --ab` group ("" when group is ""): the
 * suffix of its label LABEL-a or LABEL-b, else "a" for the group's first
 * run (earlier is 0 of them are older) and "b" for a later one. */
static const char *ab_side(const char *group, const char *label, int earlier)
{
	size_t n = strlen(label);
	if (!group[0])
		return "";
	if (n >= 2 && label[n - 2] == '-' && (label[n - 1] == 'a' || label[n - 1] == 'b'))
		return label[n - 1] == 'a' ? "a" : "b";
	return earlier == 0 ? "a" : "b";
}

/* Every run that passes the filters into h->runs, oldest first. */
static enum fa_rc select_runs(struct fa_store *s, struct fa_history *h, const char *since,
			      struct fa_err *err)
{
	const struct fa_history_opts *o = &h->opts;
	struct fa_reader_run *all;
	int32_t n_all, n = 0;
	enum fa_rc rc = fa_reader_runs_list(s, &h->arena, &all, &n_all, err);

	if (rc != FA_OK)
		return rc;
	if (n_all) {
		h->runs = fa_arena_alloc(&h->arena, (size_t)n_all * sizeof *h->runs);
		if (!h->runs)
			return fa_err_set(err, FA_ERR_NOMEM, "out of memory reading runs");
	}
	for (int i = 0; i < n_all; i++) {
		const struct fa_reader_run *rr = &all[i];
		if ((o->label && strcmp(rr->label, o->label) != 0) ||
		    (o->suite && strcmp(rr->suite_name, o->suite) != 0) ||
		    (since && strcmp(rr->started_at, since) < 0) ||
		    (!o->include_incomplete && strcmp(rr->status, "complete") != 0) ||
		    (o->no_ab && rr->ab_group[0]))
			continue;
		h->runs[n++] = (struct fa_hist_run){rr->id,
						    rr->started_at,
						    rr->git_commit,
						    rr->git_dirty,
						    rr->label,
						    rr->status,
						    rr->suite_name,
						    ab_side(rr->ab_group, rr->label, rr->ab_earlier),
						    rr->device_name,
						    rr->host};
	}
	h->n_runs = n;
	for (int i = 0; i < n; i++) {
		int seen = 0;
		for (int k = 0; k < i && !seen; k++)
			seen = strcmp(h->runs[k].device, h->runs[i].device) == 0;
		h->n_devices += !seen;
	}
	return FA_OK;
}

/* ---- Series ------------------------------------------------------------------- */

struct entry {
	const struct fa_reader_result *r;
	int run;          /* index into h->runs */
	const char *side; /* h->runs[run].ab_side */
	const char *device; /* h->runs[run].device */
};

static int cmp_entry(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;
	int c = strcmp(x->r->key, y->r->key);
	if (!c)
		c = strcmp(x->r->kernel, y->r->kernel);
	if (!c)
		c = strcmp(x->r->params, y->r->params);
	if (!c)
		c = strcmp(x->side, y->side);
	if (!c)
		c = strcmp(x->device, y->device);
	if (!c)
		c = x->run - y->run;
	if (!c)
		c = (x->r->id > y->r->id) - (x->r->id < y->r->id);
	return c;
}

static int same_series(const struct entry *x, const struct entry *y)
{
	return strcmp(x->r->key, y->r->key) == 0 && strcmp(x->r->kernel, y->r->kernel) == 0 &&
	       strcmp(x->r->params, y->r->params) == 0 && strcmp(x->side, y->side) == 0 &&
	       strcmp(x->device, y->device) == 0;
}

/* The median and its standard error of a passing, timed result. */
static void point_of(const struct fa_reader_result *r, struct fa_hist_point *pt)
{
	double med = r->median_ms, mad;
	pt->median_ms = pt->sigma_ms = NAN;
	pt->n_samples = r->n_read ? r->n_read : r->n_samples;
	/* an imported pass nobody checked is still a timing */
	if (r->status != FA_STATUS_PASS && r->status != FA_STATUS_UNCHECKED)
		return;
	if (!(isfinite(med) && med > 0) && r->n_read > 0 &&
	    fa_stats_median(r->samples, r->n_read, &med, NULL) != FA_OK)
		return;
	if (!(isfinite(med) && med > 0))
		return;
	pt->median_ms = med;
	if (r->n_read >= 2 && fa_stats_mad(r->samples, r->n_read, &mad, NULL) == FA_OK)
		pt->sigma_ms = MEDIAN_SE_FACTOR * FA_STATS_MAD_TO_SIGMA * mad / sqrt(r->n_read);
	else if (r->n_samples >= 2 && isfinite(r->stdev_ms))
		pt->sigma_ms = MEDIAN_SE_FACTOR * r->stdev_ms / sqrt(r->n_samples);
	else
		pt->sigma_ms = UNKNOWN_REL_SIGMA * med;
	if (!(pt->sigma_ms >= FA_HISTORY_MIN_REL_SIGMA * med))
		pt->sigma_ms = FA_HISTORY_MIN_REL_SIGMA * med;
}

/* The latest selected run of each suite (and A/B side, and device), by run
 * index: h->runs[i] is the latest of its suite when no later run has the
 * same suite name, side and device. */
static int latest_of_suite(const struct fa_history *h, int run)
{
	for (int i = run + 1; i < h->n_runs; i++)
		if (strcmp(h->runs[i].suite_name, h->runs[run].suite_name) == 0 &&
		    strcmp(h->runs[i].ab_side, h->runs[run].ab_side) == 0 &&
		    strcmp(h->runs[i].device, h->runs[run].device) == 0)
			return 0;
	return 1;
}

/* Points, summary values and steps of the series made of e[0..n). */
static enum fa_rc build_series(struct fa_history *h, const struct entry *e, int n,
			       struct fa_hist_series *sr, struct fa_err *err)
{
	const struct fa_reader_result *rep = e[n - 1].r; /* the latest */
	double *y = NULL, *sigma = NULL, *means = NULL;
	int *idx = NULL, *cps = NULL, ncps = 0, np = 0;
	enum fa_rc rc = FA_OK;

	sr->suite = rep->suite;
	sr->key = rep->key;
	sr->case_idx = rep->case_idx;
	sr->kernel = rep->kernel;
	sr->params = rep->params;
	sr->ab_side = e[n - 1].side;
	sr->device = e[n - 1].device;
	sr->values = rep->values;
	sr->pass = rep->pass;
	sr->latest = sr->best = -1;
	sr->change_prev = NAN;
	sr->points = fa_arena_alloc(&h->arena, (size_t)n * sizeof *sr->points);
	if (!sr->points)
		return fa_err_set(err, FA_ERR_NOMEM, "out of memory building the history");
	for (int i = 0; i < n; i++) {
		struct fa_hist_point *pt;
		if (i > 0 && e[i].run == e[i - 1].run)
			continue; /* a kernel run twice on one case in one run: the first counts */
		pt = &sr->points[np++];
		pt->run = e[i].run;
		pt->status = e[i].r->status;
		pt->timing = e[i].r->timing;
		point_of(e[i].r, pt);
	}
	sr->n_points = np;

	y = malloc((size_t)np * sizeof *y);
	sigma = malloc((size_t)np * sizeof *sigma);
	means = malloc((size_t)np * sizeof *means);
	idx = malloc((size_t)np * sizeof *idx);
	cps = malloc((size_t)np * sizeof *cps);
	if (!y || !sigma || !means || !idx || !cps)
		rc = fa_err_set(err, FA_ERR_NOMEM, "out of memory building the history");
	for (int i = 0; rc == FA_OK && i < np; i++) {
		const struct fa_hist_point *pt = &sr->points[i];
		if (isnan(pt->median_ms))
			continue;
		idx[sr->n_timed] = i;
		y[sr->n_timed] = pt->median_ms;
		sigma[sr->n_timed++] = pt->sigma_ms;
		if (sr->best < 0 || pt->median_ms < sr->points[sr->best].median_ms)
			sr->best = i;
		sr->latest = i;
	}
	if (rc == FA_OK && sr->n_timed >= 2)
		sr->change_prev = y[sr->n_timed - 1] / y[sr->n_timed - 2] - 1;
	if (rc == FA_OK && sr->n_timed >= 2)
		rc = fa_stats_changepoints(y, sigma, sr->n_timed, h->opts.min_effect, h->opts.penalty,
					   cps, &ncps, err);
	if (rc == FA_OK && ncps > 0)
		rc = fa_stats_segment_means(y, sigma, sr->n_timed, cps, ncps, means, err);
	if (rc == FA_OK && ncps > 0) {
		sr->steps = fa_arena_alloc(&h->arena, (size_t)ncps * sizeof *sr->steps);
		if (!sr->steps)
			rc = fa_err_set(err, FA_ERR_NOMEM, "out of memory building the history");
	}
	for (int c = 0; rc == FA_OK && c < ncps; c++) {
		struct fa_hist_step *st = &sr->steps[c];
		st->at = idx[cps[c]];
		st->prev = idx[cps[c] - 1];
		st->before_ms = means[c];
		st->after_ms = means[c + 1];
		st->change = means[c + 1] / means[c] - 1;
		st->new_regression = c == ncps - 1 && cps[c] == sr->n_timed - 1 &&
				     st->at == np - 1 && st->change > h->opts.min_effect &&
				     latest_of_suite(h, sr->points[st->at].run);
		sr->new_regression |= st->new_regression;
		{
			const char *a = sr->points[st->prev].timing, *b = sr->points[st->at].timing;
			st->timing_changed = a[0] && b[0] && strcmp(a, b) != 0;
		}
	}
	sr->n_steps = rc == FA_OK ? ncps : 0;
	free(y);
	free(sigma);
	free(means);
	free(idx);
	free(cps);
	return rc;
}

static int cmp_series(const void *a, const void *b)
{
	const struct fa_hist_series *x = a, *y = b;
	int c = strcmp(x->suite, y->suite);
	if (!c)
		c = (x->case_idx > y->case_idx) - (x->case_idx < y->case_idx);
	if (!c)
		c = strcmp(x->kernel, y->kernel);
	if (!c)
		c = strcmp(x->params, y->params);
	if (!c)
		c = strcmp(x->ab_side, y->ab_side);
	if (!c)
		c = strcmp(x->device, y->device);
	if (!c)
		c = strcmp(x->key, y->key);
	return c;
}

/* Reads the selected runs' results, keeps those that pass the kernel glob
 * and the expression, into *out (malloc'd). */
static enum fa_rc read_entries(struct fa_store *s, struct fa_history *h,
			       const struct fa_expr *where, struct entry **out, int *n_out,
			       struct fa_err *err)
{
	struct entry *e = NULL;
	int n = 0, cap = 0;
	for (int i = 0; i < h->n_runs; i++) {
		struct fa_reader_result *res;
		int nr;
		enum fa_rc rc = fa_reader_results(s, h->runs[i].id, h->runs[i].suite_name,
						  FA_READER_SAMPLES, &h->arena, &res, &nr, err);
		if (rc != FA_OK) {
			free(e);
			return rc;
		}
		for (int k = 0; k < nr; k++) {
			if (h->opts.kernel && fnmatch(h->opts.kernel, res[k].kernel, 0) != 0)
				continue;
			if (where) {
				struct fa_case c;
				fa_reader_result_case(&res[k], &c);
				if (!fa_expr_eval(where, &c))
					continue;
			}
			if (n == cap) {
				int ncap = cap ? cap * 2 : 256;
				struct entry *ne = realloc(e, (size_t)ncap * sizeof *ne);
				if (!ne) {
					free(e);
					return fa_err_set(err, FA_ERR_NOMEM,
							  "out of memory building the history");
				}
				e = ne;
				cap = ncap;
			}
			e[n++] = (struct entry){&res[k], i, h->runs[i].ab_side, h->runs[i].device};
		}
	}
	*out = e;
	*n_out = n;
	return FA_OK;
}

enum fa_rc fa_history_build(struct fa_store *s, const struct fa_history_opts *opts,
			    struct fa_history *out, struct fa_err *err)
{
	static const struct fa_loc where_loc = {"--where", 1, 1};
	struct fa_history *h = out;
	struct fa_expr *where = NULL;
	struct entry *e = NULL;
	char since[32];
	int n = 0, groups = 0;
	enum fa_rc rc = FA_OK;

	memset(h, 0, sizeof *h);
	if (opts)
		h->opts = *opts;
	else
		fa_history_opts_init(&h->opts);
	if (h->opts.since && !parse_since(h->opts.since, since, sizeof since))
		return fa_err_set(err, FA_ERR_USAGE,
				  "--since '%s' must be a date YYYY-MM-DD (or YYYY-MM-DDTHH:MM:SSZ)",
				  h->opts.since);
	if (h->opts.kernel && !h->opts.kernel[0])
		return fa_err_set(err, FA_ERR_USAGE, "an empty --kernel pattern matches no kernel");
	if (!(h->opts.min_effect >= 0 && h->opts.min_effect < 1))
		return fa_err_set(err, FA_ERR_USAGE, "min effect %g must be in [0, 1)",
				  h->opts.min_effect);
	if (!isfinite(h->opts.penalty))
		return fa_err_set(err, FA_ERR_USAGE, "change-point penalty %g must be finite",
				  h->opts.penalty);
	if (h->opts.where && (rc = fa_expr_parse(h->opts.where, &where_loc, &where, err)) != FA_OK) {
		fa_err_set_text(err, h->opts.where);
		return rc;
	}
	h->db_path = fa_arena_strdup(&h->arena, fa_store_path(s));
	h->n_params = FA_CMP_N_PARAMS;
	h->param_names = fa_reader_param_names;
	h->shown = fa_arena_alloc(&h->arena, FA_CMP_N_PARAMS * sizeof *h->shown);
	if (!h->db_path || !h->shown)
		rc = fa_err_set(err, FA_ERR_NOMEM, "out of memory building the history");
	if (rc == FA_OK)
		rc = select_runs(s, h, h->opts.since ? since : NULL, err);
	if (rc == FA_OK)
		rc = read_entries(s, h, where, &e, &n, err);
	fa_expr_free(where);
	if (rc == FA_OK && n) {
		qsort(e, (size_t)n, sizeof *e, cmp_entry);
		for (int i = 0; i < n; i++)
			groups += i == 0 || !same_series(&e[i], &e[i - 1]);
		h->series = fa_arena_alloc(&h->arena, (size_t)groups * sizeof *h->series);
		if (!h->series)
			rc = fa_err_set(err, FA_ERR_NOMEM, "out of memory building the history");
	}
	for (int i = 0; rc == FA_OK && i < n;) {
		int j = i + 1;
		while (j < n && same_series(&e[j], &e[i]))
			j++;
		rc = build_series(h, e + i, j - i, &h->series[h->n_series++], err);
		i = j;
	}
	free(e);
	if (rc == FA_OK && h->n_series) {
		qsort(h->series, (size_t)h->n_series, sizeof *h->series, cmp_series);
		for (int i = 0; i < h->n_series; i++) {
			h->n_steps += h->series[i].n_steps;
			h->n_new_regressions += h->series[i].new_regression;
		}
		rc = fa_compare_shown_of(h->series, h->n_series, sizeof *h->series,
					 offsetof(struct fa_hist_series, values), h->shown, err);
	}
	if (rc != FA_OK)
		fa_history_free(h);
	return rc;
}

void fa_history_free(struct fa_history *h)
{
	if (!h)
		return;
	fa_arena_free(&h->arena);
	memset(h, 0, sizeof *h);
}

/* ---- Markdown ------------------------------------------------------------------- */

static const char *status_word(int st)
{
	return st == FA_STATUS_FAIL ? "FAIL" : st < 0 ? "unknown" : fa_status_name(st);
}

/* "cpu_flash", "cpu_flash[block_q=32]", "cpu_flash (A/B side a)", and
 * " on DEVICE" when the runs ran on several devices */
static void kernel_label(const struct fa_history *h, const struct fa_hist_series *sr, char *buf,
			 size_t size)
{
	int n = sr->params[0] ? snprintf(buf, size, "%s[%s]", sr->kernel, sr->params)
			      : snprintf(buf, size, "%s", sr->kernel);
	if (sr->ab_side[0] && n >= 0 && (size_t)n < size)
		n += snprintf(buf + n, size - (size_t)n, " (A/B side %s)", sr->ab_side);
	if (h->n_devices > 1 && n >= 0 && (size_t)n < size)
		snprintf(buf + n, size - (size_t)n, " on %s",
			 sr->device[0] ? sr->device : "an unknown device");
}

static void md_kernel(FILE *f, const struct fa_history *h, const struct fa_hist_series *sr)
{
	char buf[1200];
	kernel_label(h, sr, buf, sizeof buf);
	fa_table_md_text(f, buf);
}

/* "+15.0%", "-8.0%" */
static void pct_text(double change, char *buf, size_t size)
{
	if (isnan(change))
		buf[0] = '\0';
	else
		snprintf(buf, size, "%+.1f%%", change * 100);
}

/* "run 2 (3f9a1c2e7b5d..8c4e2a1f9d3b)": where a step happened. */
static void step_where(const struct fa_history *h, const struct fa_hist_series *sr,
		       const struct fa_hist_step *st, char *buf, size_t size)
{
	const struct fa_hist_run *a = &h->runs[sr->points[st->prev].run];
	const struct fa_hist_run *b = &h->runs[sr->points[st->at].run];
	if (!a->git_commit[0] || !b->git_commit[0])
		snprintf(buf, size, "run %" PRId64, b->id);
	else if (strcmp(a->git_commit, b->git_commit) == 0)
		snprintf(buf, size, "run %" PRId64 " (%.*s, same commit)", b->id, FA_TABLE_SHORT_COMMIT,
			 b->git_commit);
	else
		snprintf(buf, size, "run %" PRId64 " (%.*s..%.*s)", b->id, FA_TABLE_SHORT_COMMIT,
			 a->git_commit, FA_TABLE_SHORT_COMMIT, b->git_commit);
}

static void md_run(FILE *f, const struct fa_hist_run *r)
{
	fprintf(f, "run %" PRId64 " (%s", r->id, r->started_at);
	if (r->git_commit[0])
		fprintf(f, ", git %.*s", FA_TABLE_SHORT_COMMIT, r->git_commit);
	if (r->git_commit[0] && r->git_dirty == 1)
		fputs("-dirty", f);
	fputs(")", f);
}

static void md_header(FILE *f, const struct fa_history *h)
{
	const struct fa_history_opts *o = &h->opts;
	int k = 0;
	fputs("# fabench history\n\n", f);
	fprintf(f, "- runs: %d %s%s", h->n_runs, o->include_incomplete ? "run" : "complete run",
		h->n_runs == 1 ? "" : "s");
	if (o->include_incomplete)
		fputs(" (complete or not)", f);
	if (h->n_runs == 1) {
		fputs(": ", f);
		md_run(f, &h->runs[0]);
	} else if (h->n_runs) {
		fputs(", from ", f);
		md_run(f, &h->runs[0]);
		fputs(" to ", f);
		md_run(f, &h->runs[h->n_runs - 1]);
	}
	fputs("\n", f);
	if (o->label || o->since || o->suite || o->kernel || o->where || o->no_ab) {
		fputs("- selection:", f);
		if (o->label) {
			fputs(k++ ? ", label " : " label ", f);
			fa_table_md_text(f, o->label);
		}
		if (o->since) {
			fputs(k++ ? ", since " : " since ", f);
			fa_table_md_text(f, o->since);
		}
		if (o->suite) {
			fputs(k++ ? ", suite " : " suite ", f);
			fa_table_md_text(f, o->suite);
		}
		if (o->kernel) {
			fputs(k++ ? ", kernel " : " kernel ", f);
			fa_table_md_code(f, o->kernel);
		}
		if (o->where) {
			fputs(k++ ? ", where " : " where ", f);
			fa_table_md_code(f, o->where);
		}
		if (o->no_ab)
			fputs(k++ ? ", no `run --ab` runs" : " no `run --ab` runs", f);
		fputs("\n", f);
	}
	if (h->n_devices > 1) {
		fprintf(f, "- devices: %d, each with series of its own (times of two devices are "
			   "not one series):", h->n_devices);
		for (int i = 0; i < h->n_runs; i++) {
			int seen = 0;
			for (int j = 0; j < i && !seen; j++)
				seen = strcmp(h->runs[j].device, h->runs[i].device) == 0;
			if (seen)
				continue;
			fputs(i ? ", " : " ", f);
			fa_table_md_text(f, h->runs[i].device[0] ? h->runs[i].device : "unknown");
			if (h->runs[i].host[0]) {
				fputs(" (", f);
				fa_table_md_text(f, h->runs[i].host);
				fputs(")", f);
			}
		}
		fputs("\n", f);
	}
	fprintf(f, "- series: %d; steps: %d; new regressions: %d\n", h->n_series, h->n_steps,
		h->n_new_regressions);
}

static void md_regressions(FILE *f, const struct fa_history *h)
{
	char buf[256];
	if (!h->n_new_regressions)
		return;
	fputs("\n## New regressions\n\n", f);
	for (int i = 0; i < h->n_series; i++) {
		const struct fa_hist_series *sr = &h->series[i];
		for (int k = 0; k < sr->n_steps; k++) {
			const struct fa_hist_step *st = &sr->steps[k];
			char a[64], b[64], pct[32];
			if (!st->new_regression)
				continue;
			fputs("- ", f);
			md_kernel(f, h, sr);
			fprintf(f, " on case %d ", sr->case_idx + 1); /* from 1, as the table */
			fa_table_md_code(f, sr->key);
			fa_table_fmt_sig3(st->before_ms, a, sizeof a);
			fa_table_fmt_sig3(st->after_ms, b, sizeof b);
			pct_text(st->change, pct, sizeof pct);
			step_where(h, sr, st, buf, sizeof buf);
			fprintf(f, ": %s -> %s ms (%s) at %s", a, b, pct, buf);
			if (st->timing_changed) {
				fputs(" (timing changed: ", f);
				fa_table_md_text(f, sr->points[st->prev].timing);
				fputs(" -> ", f);
				fa_table_md_text(f, sr->points[st->at].timing);
				fputs(")", f);
			}
			fputc('\n', f);
		}
	}
}

static int series_untimed_last(const struct fa_hist_series *sr)
{
	int st = sr->n_points > 0 ? sr->points[sr->n_points - 1].status : FA_STATUS_PASS;
	return st != FA_STATUS_PASS && st != FA_STATUS_UNCHECKED;
}

/* One table of a suite's series. */
static enum fa_rc md_suite(FILE *f, const struct fa_history *h, const char *suite,
			   struct fa_err *err)
{
	/* the pass column only where a backward is timed (a bwd and a fwd_bwd
	 * series of one shape differ in nothing else), the status column only
	 * where a series' latest point did not pass */
	static const char *const heads[] = {"pass",        "kernel",      "runs",
					    "latest ms",   "best ms",     "best run",
					    "vs previous", "latest status", "steps"};
	static const int32_t right[] = {0, 0, 1, 1, 1, 1, 1, 0, 0};
	const int pass_col = 0, status_col = 7;
	const char *const **vals = malloc(((size_t)h->n_series + 1) * sizeof *vals);
	const char *tail[N_OF(heads)];
	int32_t shown[FA_CMP_N_PARAMS], tail_right[N_OF(heads)];
	int n = 0, n_tail = 0, any_status = 0, any_pass = 0;
	struct fa_table t;
	char buf[4096];
	enum fa_rc rc;

	if (!vals)
		return fa_err_set(err, FA_ERR_NOMEM, "out of memory writing the history");
	for (int i = 0; i < h->n_series; i++)
		if (strcmp(h->series[i].suite, suite) == 0) {
			vals[n++] = h->series[i].values;
			any_status |= series_untimed_last(&h->series[i]);
			any_pass |= h->series[i].pass != FA_PASS_FWD;
		}
	for (int j = 0; j < N_OF(heads); j++)
		if ((j != status_col || any_status) && (j != pass_col || any_pass)) {
			tail[n_tail] = heads[j];
			tail_right[n_tail++] = right[j];
		}
	rc = fa_compare_suite_table(f, "History", suite, vals, n, tail, tail_right, n_tail, shown,
				    &t, err);
	free(vals);
	for (int i = 0; rc == FA_OK && i < h->n_series; i++) {
		const struct fa_hist_series *sr = &h->series[i];
		size_t len = 0;
		if (strcmp(sr->suite, suite) != 0)
			continue;
		rc = fa_compare_md_case_cells(&t, sr->case_idx + 1, sr->values, shown, err);
		if (rc == FA_OK && any_pass)
			rc = fa_table_add_md(&t, fa_pass_name(sr->pass), err);
		kernel_label(h, sr, buf, sizeof buf);
		if (rc == FA_OK)
			rc = fa_table_add_md(&t, buf, err);
		if (sr->n_timed == sr->n_points)
			snprintf(buf, sizeof buf, "%d", sr->n_points);
		else
			snprintf(buf, sizeof buf, "%d of %d", sr->n_timed, sr->n_points);
		if (rc == FA_OK)
			rc = fa_table_add_md(&t, buf, err);
		fa_table_fmt_sig3(sr->latest >= 0 ? sr->points[sr->latest].median_ms : NAN, buf,
				    sizeof buf);
		if (rc == FA_OK)
			rc = fa_table_add_md(&t, buf, err);
		fa_table_fmt_sig3(sr->best >= 0 ? sr->points[sr->best].median_ms : NAN, buf,
				    sizeof buf);
		if (rc == FA_OK)
			rc = fa_table_add_md(&t, buf, err);
		buf[0] = '\0';
		if (sr->best >= 0)
			snprintf(buf, sizeof buf, "%" PRId64, h->runs[sr->points[sr->best].run].id);
		if (rc == FA_OK)
			rc = fa_table_add_md(&t, buf, err);
		pct_text(sr->change_prev, buf, sizeof buf);
		if (rc == FA_OK)
			rc = fa_table_add_md(&t, buf, err);
		if (rc == FA_OK && any_status)
			rc = fa_table_add_md(
				&t,
				series_untimed_last(sr) ? status_word(sr->points[sr->n_points - 1].status)
							: "",
				err);
		buf[0] = '\0';
		for (int k = 0; k < sr->n_steps && len + 200 < sizeof buf; k++) {
			const struct fa_hist_step *st = &sr->steps[k];
			char pct[32], where[160];
			pct_text(st->change, pct, sizeof pct);
			step_where(h, sr, st, where, sizeof where);
			len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%s at %s%s%s",
						k ? "; " : "", pct, where,
						st->new_regression ? " NEW" : "",
						st->timing_changed ? " (timing)" : "");
		}
		if (rc == FA_OK)
			rc = fa_table_add_md(&t, buf, err);
	}
	if (rc == FA_OK)
		rc = fa_table_print_md(f, &t, err);
	fa_table_free(&t);
	return rc;
}

static enum fa_rc write_md(FILE *f, const struct fa_history *h, struct fa_err *err)
{
	char pct[32];
	enum fa_rc rc = FA_OK;
	md_header(f, h);
	if (h->n_series == 0) {
		fputs("\nNo results match: there is no history to show.\n", f);
		return FA_OK;
	}
	md_regressions(f, h);
	/* series are sorted by suite: a table at each new suite name */
	for (int i = 0; rc == FA_OK && i < h->n_series; i++)
		if (i == 0 || strcmp(h->series[i].suite, h->series[i - 1].suite) != 0)
			rc = md_suite(f, h, h->series[i].suite, err);
	if (rc != FA_OK)
		return rc;
	snprintf(pct, sizeof pct, "%g%%", h->opts.min_effect * 100);
	fprintf(f,
		"\nruns: runs that have the result (\"2 of 3\": timed in 2). latest, best: "
		"medians in ms. vs previous: the latest median against the one before (+ is "
		"slower). steps: where the medians change level (PELT change points, each median "
		"weighted by its noise; steps of %s or less merged away), the change of the mean "
		"level and the commits between the last run before and the first run after it; "
		"NEW: a step to slower times of more than %s at the latest run, a new "
		"regression; (timing): the results on either side of the step were timed "
		"differently (single launches, then `run --graph`), so the step may be the "
		"method's.\n",
		pct, pct);
	return FA_OK;
}

/* ---- CSV and JSON ---------------------------------------------------------------- */

/* The segment mean of each point (NaN untimed) and the step starting at
 * it (or NULL), for CSV and JSON. */
static void point_segment(const struct fa_hist_series *sr, int p, double *segment,
			  const struct fa_hist_step **step)
{
	double mean = NAN;
	int k;
	*step = NULL;
	*segment = NAN;
	if (isnan(sr->points[p].median_ms))
		return;
	for (k = 0; k < sr->n_steps && sr->steps[k].at <= p; k++)
		if (sr->steps[k].at == p)
			*step = &sr->steps[k];
	if (sr->n_steps == 0) { /* one segment: its weighted mean */
		double sw = 0, swy = 0;
		for (int i = 0; i < sr->n_points; i++) {
			const struct fa_hist_point *pt = &sr->points[i];
			if (isnan(pt->median_ms))
				continue;
			sw += 1 / (pt->sigma_ms * pt->sigma_ms);
			swy += pt->median_ms / (pt->sigma_ms * pt->sigma_ms);
		}
		mean = swy / sw;
	} else {
		mean = k == 0 ? sr->steps[0].before_ms : sr->steps[k - 1].after_ms;
	}
	*segment = mean;
}

static void write_csv(FILE *f, const struct fa_history *h);

/* fa_table_write_text's writers of the md and the csv */
static enum fa_rc md_text(FILE *m, const void *h, struct fa_err *err)
{
	return write_md(m, h, err);
}

static enum fa_rc csv_text(FILE *m, const void *h, struct fa_err *err)
{
	(void)err;
	write_csv(m, h);
	return FA_OK;
}

static void write_csv(FILE *f, const struct fa_history *h)
{
	fputs("suite,case_idx,case_key,kernel,params,run_id,started_at,git_commit,label,status,"
	      "n_samples,median_ms,sigma_ms,segment_ms,step_change,new_regression,ab_side,device,"
	      "host\n",
	      f);
	for (int i = 0; i < h->n_series; i++) {
		const struct fa_hist_series *sr = &h->series[i];
		for (int p = 0; p < sr->n_points; p++) {
			const struct fa_hist_point *pt = &sr->points[p];
			const struct fa_hist_run *r = &h->runs[pt->run];
			const struct fa_hist_step *st;
			double seg;
			point_segment(sr, p, &seg, &st);
			fa_table_csv_text(f, sr->suite);
			fprintf(f, ",%d,", sr->case_idx);
			fa_table_csv_text(f, sr->key);
			fputc(',', f);
			fa_table_csv_text(f, sr->kernel);
			fputc(',', f);
			fa_table_csv_text(f, sr->params);
			fprintf(f, ",%" PRId64 ",", r->id);
			fa_table_csv_text(f, r->started_at);
			fputc(',', f);
			fa_table_csv_text(f, r->git_commit);
			fputc(',', f);
			fa_table_csv_text(f, r->label);
			fprintf(f, ",%s,%d,", pt->status >= 0 ? fa_status_name(pt->status) : "",
				pt->n_samples);
			fa_table_csv_real(f, pt->median_ms);
			fputc(',', f);
			fa_table_csv_real(f, pt->sigma_ms);
			fputc(',', f);
			fa_table_csv_real(f, seg);
			fputc(',', f);
			if (st)
				fa_table_csv_real(f, st->change);
			fprintf(f, ",%d,%s,", st ? st->new_regression : 0, sr->ab_side);
			fa_table_csv_text(f, r->device);
			fputc(',', f);
			fa_table_csv_text(f, r->host);
			fputc('\n', f);
		}
	}
}

static void json_opt(FILE *f, const char *name, const char *v)
{
	fprintf(f, "\"%s\": ", name);
	if (v)
		fa_json_string(f, v);
	else
		fputs("null", f);
}

static void write_json(FILE *f, const struct fa_history *h)
{
	const struct fa_history_opts *o = &h->opts;
	fprintf(f, "{\n  \"schema_version\": %d,\n  \"selection\": {", FA_JSON_SCHEMA_VERSION);
	json_opt(f, "label", o->label);
	fputs(", ", f);
	json_opt(f, "since", o->since);
	fputs(", ", f);
	json_opt(f, "suite", o->suite);
	fputs(", ", f);
	json_opt(f, "kernel", o->kernel);
	fputs(", ", f);
	json_opt(f, "where", o->where);
	fprintf(f, ", \"include_incomplete\": %s, \"no_ab\": %s, \"min_effect\": ",
		o->include_incomplete ? "true" : "false", o->no_ab ? "true" : "false");
	fa_table_json_real(f, o->min_effect);
	fprintf(f, "},\n  \"steps\": %d, \"new_regressions\": %d,\n  \"runs\": [", h->n_steps,
		h->n_new_regressions);
	for (int i = 0; i < h->n_runs; i++) {
		const struct fa_hist_run *r = &h->runs[i];
		fputs(i ? ",\n    {" : "\n    {", f);
		fa_compare_json_run(f, r->id, r->started_at, r->git_commit, r->git_dirty, r->label,
				    r->status, r->suite_name);
		fputs(", \"device\": ", f);
		fa_json_string(f, r->device);
		fputs(", \"host\": ", f);
		fa_json_string(f, r->host);
		fputs("}", f);
	}
	fputs(h->n_runs ? "\n  ],\n  \"series\": [" : "],\n  \"series\": [", f);
	for (int i = 0; i < h->n_series; i++) {
		const struct fa_hist_series *sr = &h->series[i];
		fputs(i ? ",\n    {" : "\n    {", f);
		fa_compare_json_row_key(f, sr->suite, sr->case_idx, sr->key, sr->kernel, sr->params);
		fputs(", \"ab_side\": ", f);
		fa_json_string(f, sr->ab_side);
		fputs(", \"device\": ", f);
		fa_json_string(f, sr->device);
		fputs(",\n     \"latest_ms\": ", f);
		fa_table_json_real(f, sr->latest >= 0 ? sr->points[sr->latest].median_ms : NAN);
		fputs(", \"best_ms\": ", f);
		fa_table_json_real(f, sr->best >= 0 ? sr->points[sr->best].median_ms : NAN);
		fputs(", \"best_run\": ", f);
		if (sr->best >= 0)
			fprintf(f, "%" PRId64, h->runs[sr->points[sr->best].run].id);
		else
			fputs("null", f);
		fputs(", \"change_prev\": ", f);
		fa_table_json_real(f, sr->change_prev);
		fprintf(f, ", \"new_regression\": %s,\n     \"points\": [",
			sr->new_regression ? "true" : "false");
		for (int p = 0; p < sr->n_points; p++) {
			const struct fa_hist_point *pt = &sr->points[p];
			fprintf(f, "%s{\"run\": %" PRId64 ", \"status\": \"%s\", \"n_samples\": %d, "
				   "\"median_ms\": ",
				p ? ", " : "", h->runs[pt->run].id,
				pt->status >= 0 ? fa_status_name(pt->status) : "unknown",
				pt->n_samples);
			fa_table_json_real(f, pt->median_ms);
			fputs(", \"sigma_ms\": ", f);
			fa_table_json_real(f, pt->sigma_ms);
			fputs("}", f);
		}
		fputs("],\n     \"steps\": [", f);
		for (int k = 0; k < sr->n_steps; k++) {
			const struct fa_hist_step *st = &sr->steps[k];
			const struct fa_hist_run *a = &h->runs[sr->points[st->prev].run];
			const struct fa_hist_run *b = &h->runs[sr->points[st->at].run];
			fprintf(f, "%s{\"from_run\": %" PRId64 ", \"to_run\": %" PRId64
				   ", \"from_commit\": ",
				k ? ", " : "", a->id, b->id);
			fa_json_string(f, a->git_commit);
			fputs(", \"to_commit\": ", f);
			fa_json_string(f, b->git_commit);
			fputs(", \"before_ms\": ", f);
			fa_table_json_real(f, st->before_ms);
			fputs(", \"after_ms\": ", f);
			fa_table_json_real(f, st->after_ms);
			fputs(", \"change\": ", f);
			fa_table_json_real(f, st->change);
			fprintf(f, ", \"new_regression\": %s, \"timing_changed\": %s}",
				st->new_regression ? "true" : "false",
				st->timing_changed ? "true" : "false");
		}
		fputs("],\n     ", f);
		fa_compare_json_case(f, sr->values);
		fputs("}", f);
	}
	fputs(h->n_series ? "\n  ]\n}\n" : "]\n}\n", f);
}

enum fa_rc fa_history_write(const struct fa_history *h, int format, FILE *f, struct fa_err *err)
{
	enum fa_rc rc = FA_OK;
	if (format == FA_FMT_MD || format == FA_FMT_CSV) {
		/* through memory, every byte then valid UTF-8 (json escapes its own) */
		rc = fa_table_write_text(f, format == FA_FMT_MD ? md_text : csv_text, h,
					 "the history", err);
	} else if (format == FA_FMT_JSON)
		write_json(f, h);
	else
		return fa_err_set(err, FA_ERR_USAGE, "history cannot be written as format %d",
				  format);
	if (rc == FA_OK && (fflush(f) != 0 || ferror(f)))
		rc = fa_err_set(err, FA_ERR_IO, "cannot write the history");
	return rc;
}
