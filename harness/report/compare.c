/* compare.c - `fabench compare BASE HEAD`: two runs (or pools of runs) read
 * back from the database, their results matched by (case key, kernel,
 * params), a verdict per pair from the raw samples, and the comparison
 * written as markdown for a PR comment, CSV or JSON.
 *
 * Also the case-parameter columns that history.c shares (the second half
 * of compare.h). Runs and results come from the reader (store/reader.h).
 *
 * Output is deterministic: rows follow the suite order, groups are sorted by
 * name, the bootstrap seed of a row is a hash of the row, and nothing
 * depends on the clock or the database path.
 */
#include "compare.h"

#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"
#include "../suite/suite.h"
#include "table.h"
#include "../base/util.h"

#define N_OF(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* ---- Case parameters --------------------------------------------------------- */

/* The partner a parameter often equals (then it gets no column), -1 none. */
static const int8_t param_partner[FA_CMP_N_PARAMS] = {
	-1, -1, 1, -1, 3, -1, 5, -1, -1, -1, -1, -1, -1, -1, 13, -1, -1,
};

/* Parameters shown as numbers (right-aligned). */
static const int8_t param_numeric[FA_CMP_N_PARAMS] = {
	1, 1, 1, 1, 1, 1, 1, 0, 0, 1, 1, 0, 0, 0, 0, 0, 1,
};

int fa_compare_param_numeric(int j)
{
	return j >= 0 && j < FA_CMP_N_PARAMS && param_numeric[j];
}

static int param_varies(const char *const *const *values, int n, int j)
{
	for (int i = 1; i < n; i++)
		if (strcmp(values[0][j], values[i][j]) != 0)
			return 1;
	return 0;
}

static int param_same_everywhere(const char *const *const *values, int n, int a, int b)
{
	for (int i = 0; i < n; i++)
		if (strcmp(values[i][a], values[i][b]) != 0)
			return 0;
	return 1;
}

void fa_compare_shown(const char *const *const *values, int n, int32_t *shown)
{
	for (int j = 0; j < FA_CMP_N_PARAMS; j++) {
		int partner = param_partner[j];
		shown[j] = param_varies(values, n, j) &&
			   !(partner >= 0 && param_same_everywhere(values, n, j, partner));
	}
}

enum fa_rc fa_compare_shown_of(const void *items, int n, size_t item_size, size_t values_offset,
			       int32_t *shown, struct fa_err *err)
{
	const char *const **vals;
	if (n == 0)
		return FA_OK;
	vals = malloc((size_t)n * sizeof *vals);
	if (!vals)
		return fa_err_set(err, FA_ERR_NOMEM, "out of memory choosing the parameter columns");
	for (int i = 0; i < n; i++)
		memcpy(&vals[i], (const char *)items + (size_t)i * item_size + values_offset,
		       sizeof vals[i]);
	fa_compare_shown(vals, n, shown);
	free(vals);
	return FA_OK;
}

enum fa_rc fa_compare_md_case_cells(struct fa_table *t, int case_no,
				    const char *const *values, const int32_t *shown,
				    struct fa_err *err)
{
	char buf[16];
	enum fa_rc rc;
	snprintf(buf, sizeof buf, "%d", case_no);
	rc = fa_table_add_md(t, buf, err);
	for (int j = 0; rc == FA_OK && j < FA_CMP_N_PARAMS; j++)
		if (shown[j])
			rc = fa_table_add_md(t, values[j], err);
	return rc;
}

/* "Common to every case: heads=8, dtype=fp32; kv_len = q_len.\n\n" for
 * those values (nothing when there is nothing to say). */
static void md_common(FILE *f, const char *const *const *values, int n, const int32_t *shown)
{
	int k = 0;
	if (n == 0)
		return;
	for (int j = 0; j < FA_CMP_N_PARAMS; j++) {
		if (shown[j] || param_varies(values, n, j) || !values[0][j][0])
			continue;
		fprintf(f, "%s%s=", k++ ? ", " : "Common to every case: ",
			fa_reader_param_names[j]);
		fa_table_md_text(f, values[0][j]);
	}
	for (int j = 0, first = 1; j < FA_CMP_N_PARAMS; j++) {
		int partner = param_partner[j];
		if (partner < 0 || !param_varies(values, n, j) ||
		    !param_same_everywhere(values, n, j, partner))
			continue;
		fprintf(f, "%s%s = %s", first ? (k ? "; " : "Common to every case: ") : ", ",
			fa_reader_param_names[j], fa_reader_param_names[partner]);
		first = 0;
		k++;
	}
	if (k)
		fputs(".\n\n", f);
}

enum fa_rc fa_compare_suite_table(FILE *f, const char *title, const char *suite,
				  const char *const *const *values, int n,
				  const char *const *tail, const int32_t *tail_right, int n_tail,
				  int32_t *shown, struct fa_table *t, struct fa_err *err)
{
	int ncols = 1 + n_tail, c = 0;
	enum fa_rc rc;

	fa_compare_shown(values, n, shown);
	for (int j = 0; j < FA_CMP_N_PARAMS; j++)
		ncols += shown[j];
	fprintf(f, "\n## %s", title);
	if (suite[0]) {
		fputs(": ", f);
		fa_table_md_text(f, suite);
	}
	fputs("\n\n", f);
	md_common(f, values, n, shown);
	rc = fa_table_init(t, ncols, err);
	if (rc != FA_OK)
		return rc;
	t->right[c++] = 1;
	for (int j = 0; j < FA_CMP_N_PARAMS; j++)
		if (shown[j])
			t->right[c++] = fa_compare_param_numeric(j);
	for (int j = 0; j < n_tail; j++)
		t->right[c++] = tail_right[j];
	rc = fa_table_add_md(t, "#", err);
	for (int j = 0; rc == FA_OK && j < FA_CMP_N_PARAMS; j++)
		if (shown[j])
			rc = fa_table_add_md(t, fa_reader_param_names[j], err);
	for (int j = 0; rc == FA_OK && j < n_tail; j++)
		rc = fa_table_add_md(t, tail[j], err);
	return rc;
}

void fa_compare_json_run(FILE *f, int64_t id, const char *started_at, const char *git_commit,
			 int32_t git_dirty, const char *label, const char *status,
			 const char *suite)
{
	fprintf(f, "\"id\": %" PRId64 ", \"started_at\": ", id);
	fa_json_string(f, started_at);
	fputs(", \"git_commit\": ", f);
	fa_json_string(f, git_commit);
	if (git_dirty >= 0)
		fprintf(f, ", \"git_dirty\": %s", git_dirty ? "true" : "false");
	else
		fputs(", \"git_dirty\": null", f);
	fputs(", \"label\": ", f);
	fa_json_string(f, label);
	fputs(", \"status\": ", f);
	fa_json_string(f, status);
	fputs(", \"suite\": ", f);
	fa_json_string(f, suite);
}

void fa_compare_json_row_key(FILE *f, const char *suite, int32_t case_idx, const char *key,
			     const char *kernel, const char *params)
{
	fputs("\"suite\": ", f);
	fa_json_string(f, suite);
	fprintf(f, ", \"case_idx\": %d, \"key\": ", case_idx);
	fa_json_string(f, key);
	fputs(", \"kernel\": ", f);
	fa_json_string(f, kernel);
	fputs(", \"params\": ", f);
	fa_json_string(f, params);
}

void fa_compare_json_case(FILE *f, const char *const *values)
{
	fputs("\"case\": {", f);
	for (int j = 0; j < FA_CMP_N_PARAMS; j++) {
		fprintf(f, "%s\"%s\": ", j ? ", " : "", fa_reader_param_names[j]);
		if (!values[j][0])
			fputs("null", f);
		else if (fa_compare_param_numeric(j))
			fputs(values[j], f); /* an integer, or a float from fa_format_float */
		else
			fa_json_string(f, values[j]);
	}
	fputs("}", f);
}

/* ---- Reading results ----------------------------------------------------------- */

/* ---- Run specs ------------------------------------------------------------------ */

const char *fa_compare_change_name(int change)
{
	static const char *const names[] = {
		[FA_CMP_TIMED] = "timed",     [FA_CMP_BROKEN] = "broken", [FA_CMP_FIXED] = "fixed",
		[FA_CMP_FAILING] = "failing", [FA_CMP_ADDED] = "added",   [FA_CMP_REMOVED] = "removed",
		[FA_CMP_UNTIMED] = "untimed",
	};
	return change >= 0 && change < FA_CMP_CHANGE_COUNT ? names[change] : "unknown";
}

void fa_compare_opts_init(struct fa_compare_opts *o)
{
	memset(o, 0, sizeof *o);
	fa_stats_verdict_defaults(&o->perf);
	o->perf.min_effect = FA_CMP_MIN_EFFECT;
}

/* Resolves spec into side->runs (arena), oldest first. */
static enum fa_rc resolve_side(struct fa_store *s, const char *spec, struct fa_cmp_side *side,
			       struct fa_arena *a, struct fa_err *err)
{
	int64_t *ids = NULL;
	int n = 0;
	enum fa_rc frc;

	side->spec = fa_arena_strdup(a, spec);
	frc = fa_reader_runs_match(s, spec, &ids, &n, &side->matched_by, err);
	if (frc != FA_OK)
		return frc;
	side->runs = fa_arena_alloc(a, (size_t)n * sizeof *side->runs);
	if (!side->runs)
		frc = fa_err_set(err, FA_ERR_NOMEM, "out of memory reading runs");
	for (int i = 0; frc == FA_OK && i < n; i++) {
		struct fa_cmp_run *r = &side->runs[i];
		struct fa_reader_run rr;
		frc = fa_reader_run_get(s, ids[i], a, &rr, err);
		if (frc == FA_OK)
			*r = (struct fa_cmp_run){rr.id,          rr.started_at, rr.git_commit,
						 rr.git_dirty,   rr.label,      rr.status,
						 rr.suite_name,  rr.backend,    rr.device_name,
						 rr.host,        rr.ab_group};
	}
	side->n_runs = n;
	for (int i = 0; frc == FA_OK && i < n; i++) {
		int seen = !side->runs[i].git_commit[0];
		for (int k = 0; k < i && !seen; k++)
			seen = strcmp(side->runs[k].git_commit, side->runs[i].git_commit) == 0;
		side->n_commits += !seen;
	}
	free(ids);
	return frc;
}

/* ---- Matching and verdicts ------------------------------------------------------- */

/* A result of either side, for sorting into (key, kernel, params) groups. */
struct entry {
	const struct fa_reader_result *r;
	int side;          /* 0 base, 1 head */
	int order;         /* run position within its side, then read order */
	int ignore_params; /* group by (key, kernel) only */
};

/* The order of groups; within a group, base before head, then read order. */
static int cmp_group_key(const struct entry *x, const struct entry *y)
{
	int c = strcmp(x->r->key, y->r->key);
	if (!c)
		c = strcmp(x->r->kernel, y->r->kernel);
	if (!c && !x->ignore_params)
		c = strcmp(x->r->params, y->r->params);
	return c;
}

static int cmp_entry(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;
	int c = cmp_group_key(x, y);
	if (!c)
		c = x->side - y->side;
	if (!c)
		c = (x->order > y->order) - (x->order < y->order);
	return c;
}

static int is_failure(int status)
{
	return status == FA_STATUS_FAIL || status == FA_STATUS_ERROR ||
	       status == FA_STATUS_TIMEOUT;
}

/* A pass, or a timing nobody checked (unchecked): what can be timed. */
static int is_timed_status(int status)
{
	return status == FA_STATUS_PASS || status == FA_STATUS_UNCHECKED;
}

/* Failures outrank a pass, a pass outranks unchecked, which outranks a
 * skip. */
static int status_rank(int status)
{
	return is_failure(status) ? 3 : status == FA_STATUS_PASS ? 2
	       : status == FA_STATUS_UNCHECKED ? 1 : 0;
}

/* Pools one side's results e[0..n): the worst status (the first of its
 * rank), and the samples of the passing results (a result without samples
 * but with a median gives its median). *samples is malloc'd (NULL when
 * none). */
static enum fa_rc pool_side(const struct entry *e, int n, int *status, const char **reason,
			    double **samples, int *n_samples)
{
	int best = -1, cap = 0, k = 0;
	double *x = NULL;
	*status = -1;
	*reason = "";
	for (int i = 0; i < n; i++) {
		const struct fa_reader_result *r = e[i].r;
		if (r->status >= 0 && status_rank(r->status) > best) {
			best = status_rank(r->status);
			*status = r->status;
			*reason = r->reason;
		}
		if (is_timed_status(r->status))
			cap += r->n_read > 0 ? r->n_read : 1;
	}
	if (cap > 0 && !(x = malloc((size_t)cap * sizeof *x)))
		return FA_ERR_NOMEM;
	for (int i = 0; i < n; i++) {
		const struct fa_reader_result *r = e[i].r;
		if (!is_timed_status(r->status))
			continue;
		/* fa_stats_verdict takes finite positive times only */
		for (int j = 0; j < r->n_read; j++)
			if (isfinite(r->samples[j]) && r->samples[j] > 0)
				x[k++] = r->samples[j];
		if (r->n_read == 0 && isfinite(r->median_ms) && r->median_ms > 0)
			x[k++] = r->median_ms;
	}
	*samples = x;
	*n_samples = k;
	return FA_OK;
}

/* The noise of a side: the relative standard deviation of its pooled
 * samples x[0..k) (stdev / mean), or for results without samples the stored
 * stdev over the stored median (of the first passing one); NaN when neither
 * is there. *stop gets the stop reason of e[0..n) as struct fa_cmp_row
 * describes. */
static double side_noise(const struct entry *e, int n, const double *x, int k, const char **stop)
{
	double rsd = NAN;
	*stop = "";
	for (int i = 0; i < n; i++) {
		const char *st = e[i].r->stop;
		if (e[i].r->status != FA_STATUS_PASS || !st[0])
			continue;
		if (strcmp(st, "converged") != 0) {
			*stop = st;
			break;
		}
		*stop = st;
	}
	if (k >= 2) {
		double m = fa_stats_mean(x, k);
		if (m > 0)
			rsd = fa_stats_stdev(x, k) / m;
	} else {
		for (int i = 0; i < n && isnan(rsd); i++) {
			const struct fa_reader_result *r = e[i].r;
			if (r->status == FA_STATUS_PASS && isfinite(r->stdev_ms) &&
			    r->median_ms > 0 && r->n_samples >= 2)
				rsd = r->stdev_ms / r->median_ms;
		}
	}
	return rsd;
}

static double median_of(const double *x, int n)
{
	double m = NAN;
	if (n > 0 && fa_stats_median(x, n, &m, NULL) != FA_OK)
		m = NAN;
	return m;
}

/* How a side's results were timed: its first passing result's timing, ""
 * when none says. */
static const char *side_timing(const struct entry *e, int n)
{
	for (int i = 0; i < n; i++)
		if (e[i].r->status == FA_STATUS_PASS && e[i].r->timing[0])
			return e[i].r->timing;
	return "";
}

/* The labels of group e[0..n) (nb base entries first) on row: every label
 * of its results, both sides and every pooled run, each name once, BASE's
 * first (a name given other layers on the other side keeps BASE's, as a
 * suite and import merge labels by name); and the suite's depth, HEAD's where it gave
 * one, else BASE's. A side alone (HEAD's labels, a labelled BASE against an
 * unlabelled HEAD) would show half of what the rows compared. */
static enum fa_rc row_labels(struct fa_compare *cmp, const struct entry *e, int n, int nb,
			     struct fa_cmp_row *row, struct fa_err *err)
{
	struct fa_case_tag *list;
	size_t total = 0, len = 1;
	int32_t k = 0;
	char *text, *p;

	row->depth = 0;
	for (int i = nb; i < n && !row->depth; i++)
		row->depth = e[i].r->depth;
	for (int i = 0; i < nb && !row->depth; i++)
		row->depth = e[i].r->depth;
	for (int i = 0; i < n; i++)
		total += (size_t)e[i].r->n_tags;
	row->tags = "";
	row->tag_list = NULL;
	row->n_tags = 0;
	if (!total)
		return FA_OK;
	if (!(list = fa_arena_alloc(&cmp->arena, total * sizeof *list)))
		return fa_err_set(err, FA_ERR_NOMEM, "out of memory comparing runs");
	for (int i = 0; i < n; i++)
		for (int32_t t = 0; t < e[i].r->n_tags; t++) {
			const struct fa_case_tag *tag = &e[i].r->tag_list[t];
			int32_t seen = 0;
			while (seen < k && strcmp(list[seen].name, tag->name) != 0)
				seen++;
			if (seen == k) {
				list[k++] = *tag;
				len += strlen(tag->name) + 2;
			}
		}
	if (!(text = fa_arena_alloc(&cmp->arena, len)))
		return fa_err_set(err, FA_ERR_NOMEM, "out of memory comparing runs");
	p = text;
	for (int32_t t = 0; t < k; t++)
		p += sprintf(p, "%s%s", t ? ", " : "", list[t].name);
	*p = '\0';
	row->tags = text;
	row->tag_list = list;
	row->n_tags = k;
	return FA_OK;
}

/* The row of group e[0..n) (one key, kernel, params; base entries first). */
static enum fa_rc make_row(struct fa_compare *cmp, const struct entry *e, int n,
			   struct fa_cmp_row *row, struct fa_err *err)
{
	int nb = 0, bs, hs, n_bs = 0, n_hs = 0;
	const char *br, *hr;
	double *bx = NULL, *hx = NULL;
	const struct fa_reader_result *rep;
	enum fa_rc rc;

	while (nb < n && e[nb].side == 0)
		nb++;
	/* matched without params: each side must have run one set of them */
	for (int i = 1; i < n; i++)
		if (e[i].side == e[i - 1].side && strcmp(e[i].r->params, e[i - 1].r->params) != 0)
			return fa_err_set(err, FA_ERR_USAGE,
					  "cannot ignore params: %s ran kernel '%s' with params '%s' "
					  "and '%s' on case %d '%s'",
					  e[i].side ? "head" : "base", e[i].r->kernel,
					  e[i - 1].r->params, e[i].r->params, e[i].r->case_idx,
					  e[i].r->key);
	rep = nb < n ? e[nb].r : e[0].r; /* HEAD's first result, else BASE's */
	row->suite = rep->suite;
	row->key = rep->key;
	row->case_idx = rep->case_idx;
	row->kernel = rep->kernel;
	row->params = rep->params;
	row->base_params = nb ? e[0].r->params : rep->params;
	row->values = rep->values;
	row->pass = rep->pass;
	if ((rc = row_labels(cmp, e, n, nb, row, err)) != FA_OK)
		return rc;
	rc = pool_side(e, nb, &bs, &br, &bx, &n_bs);
	if (rc == FA_OK)
		rc = pool_side(e + nb, n - nb, &hs, &hr, &hx, &n_hs);
	if (rc != FA_OK) {
		free(bx);
		return fa_err_set(err, FA_ERR_NOMEM, "out of memory comparing runs");
	}
	row->base_status = nb ? bs : -1;
	row->head_status = nb < n ? hs : -1;
	row->base_reason = br;
	row->head_reason = hr;
	row->n_base = n_bs;
	row->n_head = n_hs;
	row->base_ms = median_of(bx, n_bs);
	row->head_ms = median_of(hx, n_hs);
	row->base_rsd = side_noise(e, nb, bx, n_bs, &row->base_stop);
	row->head_rsd = side_noise(e + nb, n - nb, hx, n_hs, &row->head_stop);
	row->base_timing = side_timing(e, nb);
	row->head_timing = side_timing(e + nb, n - nb);
	row->speedup = NAN;
	row->verdict = -1;
	row->perf.lo = row->perf.hi = row->perf.ratio = row->perf.p = row->perf.effect = NAN;
	row->perf.verdict = -1;

	if (nb < n && is_failure(hs) && (nb == 0 || !is_failure(bs)))
		row->change = FA_CMP_BROKEN; /* a new result that fails counts too */
	else if (nb == 0)
		row->change = FA_CMP_ADDED;
	else if (nb == n)
		row->change = FA_CMP_REMOVED;
	else if (is_failure(hs))
		row->change = FA_CMP_FAILING;
	else if (is_failure(bs) && hs == FA_STATUS_PASS)
		row->change = FA_CMP_FIXED;
	else if (is_timed_status(bs) && is_timed_status(hs) && n_bs > 0 && n_hs > 0)
		row->change = FA_CMP_TIMED;
	else
		row->change = FA_CMP_UNTIMED;
	/* coverage lost: BASE timed it, HEAD does not (a failure is BROKEN instead) */
	row->lost = nb > 0 && is_timed_status(bs) && n_bs > 0 &&
		    (row->change == FA_CMP_REMOVED || row->change == FA_CMP_UNTIMED);

	if (row->change == FA_CMP_TIMED) {
		struct fa_perf_cfg cfg = cmp->opts.perf;
		uint64_t h = fa_fnv1a64(FA_FNV_OFFSET, row->key, strlen(row->key) + 1);
		h = fa_fnv1a64(h, row->kernel, strlen(row->kernel) + 1);
		h = fa_fnv1a64(h, row->params, strlen(row->params) + 1);
		cfg.seed ^= h; /* independent resampling per row, whatever the row order */
		/* one result a side from the two runs of one --ab: sample i of each
		 * was taken one after the other, so compare them in pairs */
		row->paired = cmp->paired && nb == 1 && n - nb == 1 && n_bs >= 6 && n_hs >= 6;
		if (row->paired) {
			/* the sides stop sampling apart: the pairs are the first
			 * min(n) samples, and the medians shown are theirs, so that
			 * the speedup and the verdict read the same samples */
			const int m = n_bs < n_hs ? n_bs : n_hs;
			row->n_base = row->n_head = m;
			row->base_ms = median_of(bx, m);
			row->head_ms = median_of(hx, m);
			rc = fa_stats_verdict_paired(bx, hx, m, &cfg, &row->perf, err);
		} else
			rc = fa_stats_verdict(bx, n_bs, hx, n_hs, &cfg, &row->perf, err);
		if (rc == FA_OK) {
			row->verdict = row->perf.verdict;
			/* paired: 1 / the median of the pairs' head/base, the
			 * ratio the verdict tests; the ratio of the two sides'
			 * medians can point the other way when the machine
			 * drifts between pairs (0.97x beside FASTER) */
			row->speedup = row->paired && row->perf.ratio > 0
					       ? 1.0 / row->perf.ratio
					       : row->base_ms / row->head_ms;
		}
	}
	free(bx);
	free(hx);
	return rc;
}

static int cmp_row(const void *a, const void *b)
{
	const struct fa_cmp_row *x = a, *y = b;
	int c = (y->change == FA_CMP_BROKEN) - (x->change == FA_CMP_BROKEN);
	if (!c)
		c = strcmp(x->suite, y->suite);
	if (!c)
		c = (x->case_idx > y->case_idx) - (x->case_idx < y->case_idx);
	if (!c)
		c = strcmp(x->kernel, y->kernel);
	if (!c)
		c = strcmp(x->params, y->params);
	if (!c)
		c = strcmp(x->key, y->key);
	return c;
}

/* Adds row to the group named name in *groups (sorted by name on the fly). */
static enum fa_rc group_add(struct fa_cmp_group **groups, int32_t *n, const char *name,
			    const struct fa_cmp_row *row, double **logs, int **nlogs)
{
	int i;
	for (i = 0; i < *n && strcmp((*groups)[i].name, name) != 0; i++)
		;
	if (i == *n) {
		struct fa_cmp_group *ng = realloc(*groups, (size_t)(*n + 1) * sizeof *ng);
		double *nl;
		int *nn;
		if (!ng)
			return FA_ERR_NOMEM;
		*groups = ng;
		nl = realloc(*logs, (size_t)(*n + 1) * sizeof *nl);
		if (!nl)
			return FA_ERR_NOMEM;
		*logs = nl;
		nn = realloc(*nlogs, (size_t)(*n + 1) * sizeof *nn);
		if (!nn)
			return FA_ERR_NOMEM;
		*nlogs = nn;
		memset(&ng[i], 0, sizeof ng[i]);
		ng[i].name = name;
		nl[i] = 0;
		nn[i] = 0;
		(*n)++;
	}
	(*groups)[i].n++;
	(*groups)[i].verdicts[row->verdict]++;
	if (row->speedup > 0 && isfinite(row->speedup)) {
		(*logs)[i] += log(row->speedup);
		(*nlogs)[i]++;
	}
	return FA_OK;
}

static int cmp_group(const void *a, const void *b)
{
	return strcmp(((const struct fa_cmp_group *)a)->name,
		      ((const struct fa_cmp_group *)b)->name);
}

/* Kernel and suite groups, into arena storage sorted by name. */
static enum fa_rc summarise(struct fa_compare *cmp, struct fa_err *err)
{
	struct fa_cmp_group *g[2] = {NULL, NULL};
	double *logs[2] = {NULL, NULL}, all = 0;
	int *nlogs[2] = {NULL, NULL}, nall = 0;
	int32_t ng[2] = {0, 0};
	enum fa_rc rc = FA_OK;

	for (int i = 0; i < cmp->n_rows; i++) {
		struct fa_cmp_row *row = &cmp->rows[i];
		cmp->changes[row->change]++;
		cmp->n_unchecked += row->base_status == FA_STATUS_UNCHECKED ||
				    row->head_status == FA_STATUS_UNCHECKED;
		if (row->change == FA_CMP_BROKEN)
			cmp->n_regressions++;
		if (row->lost) {
			cmp->n_lost++;
			cmp->lost_removed += row->change == FA_CMP_REMOVED;
			cmp->lost_untimed += row->change == FA_CMP_UNTIMED;
		}
		if (row->change != FA_CMP_TIMED)
			continue;
		if (row->base_timing[0] && row->head_timing[0] &&
		    strcmp(row->base_timing, row->head_timing) != 0) {
			row->timing_differs = 1;
			if (cmp->n_timing_differs++ == 0) {
				cmp->differs_base = row->base_timing;
				cmp->differs_head = row->head_timing;
			}
		}
		cmp->verdicts[row->verdict]++;
		cmp->n_regressions += row->verdict == FA_PERF_SLOWER;
		if (row->speedup > 0 && isfinite(row->speedup)) {
			all += log(row->speedup);
			nall++;
		}
		if (rc == FA_OK)
			rc = group_add(&g[0], &ng[0], row->kernel, row, &logs[0], &nlogs[0]);
		if (rc == FA_OK)
			rc = group_add(&g[1], &ng[1], row->suite, row, &logs[1], &nlogs[1]);
	}
	cmp->geomean_speedup = nall ? exp(all / nall) : NAN;
	cmp->median_rsd = NAN;
	if (cmp->changes[FA_CMP_TIMED] > 0) {
		double *noise = malloc((size_t)cmp->changes[FA_CMP_TIMED] * sizeof *noise);
		int k = 0;
		if (!noise)
			rc = FA_ERR_NOMEM;
		for (int i = 0; noise && i < cmp->n_rows; i++) {
			const struct fa_cmp_row *row = &cmp->rows[i];
			double b = row->base_rsd, h = row->head_rsd;
			if (row->change != FA_CMP_TIMED || (isnan(b) && isnan(h)))
				continue;
			noise[k++] = isnan(b) ? h : isnan(h) ? b : b > h ? b : h;
		}
		if (k > 0)
			cmp->median_rsd = median_of(noise, k);
		free(noise);
	}
	for (int k = 0; k < 2 && rc == FA_OK; k++) {
		struct fa_cmp_group *dst;
		for (int i = 0; i < ng[k]; i++)
			g[k][i].geomean_speedup = nlogs[k][i] ? exp(logs[k][i] / nlogs[k][i]) : NAN;
		if (ng[k])
			qsort(g[k], (size_t)ng[k], sizeof *g[k], cmp_group);
		dst = fa_arena_alloc(&cmp->arena, (size_t)ng[k] * sizeof *dst + 1);
		if (!dst) {
			rc = FA_ERR_NOMEM;
			break;
		}
		if (ng[k])
			memcpy(dst, g[k], (size_t)ng[k] * sizeof *dst);
		if (k == 0) {
			cmp->kernels = dst;
			cmp->n_kernels = ng[k];
		} else {
			cmp->suites = dst;
			cmp->n_suites = ng[k];
		}
	}
	for (int k = 0; k < 2; k++) {
		free(g[k]);
		free(logs[k]);
		free(nlogs[k]);
	}
	return rc == FA_OK ? FA_OK : fa_err_set(err, FA_ERR_NOMEM, "out of memory comparing runs");
}

/* Appends every result of a side's runs to *entries. */
static enum fa_rc read_side(struct fa_store *s, struct fa_compare *cmp, int side_no,
			    struct entry **entries, int *n, struct fa_err *err)
{
	const struct fa_cmp_side *side = side_no ? &cmp->head : &cmp->base;
	int order = 0;
	for (int i = 0; i < side->n_runs; i++) {
		struct fa_reader_result *res;
		int nr;
		struct entry *ne;
		enum fa_rc rc = fa_reader_results(s, side->runs[i].id, side->runs[i].suite_name,
						  FA_READER_SAMPLES, &cmp->arena, &res, &nr, err);
		if (rc != FA_OK)
			return rc;
		if (nr == 0)
			continue;
		ne = realloc(*entries, (size_t)(*n + nr) * sizeof *ne);
		if (!ne)
			return fa_err_set(err, FA_ERR_NOMEM, "out of memory comparing runs");
		*entries = ne;
		for (int k = 0; k < nr; k++)
			ne[(*n)++] = (struct entry){&res[k], side_no, order++,
						    cmp->opts.ignore_params != 0};
	}
	return FA_OK;
}

enum fa_rc fa_compare_build(struct fa_store *s, const char *base_spec, const char *head_spec,
			    const struct fa_compare_opts *opts, struct fa_compare *out,
			    struct fa_err *err)
{
	struct fa_compare *cmp = out;
	struct entry *e = NULL;
	int n = 0, groups = 0;
	enum fa_rc rc = FA_OK;

	memset(cmp, 0, sizeof *cmp);
	if (opts)
		cmp->opts = *opts;
	else
		fa_compare_opts_init(&cmp->opts);
	if (!base_spec || !*base_spec || !head_spec || !*head_spec)
		return fa_err_set(err, FA_ERR_USAGE, "an empty run spec names no run");
	if (!(cmp->opts.perf.alpha > 0 && cmp->opts.perf.alpha < 1))
		return fa_err_set(err, FA_ERR_USAGE, "alpha %g must be between 0 and 1",
				  cmp->opts.perf.alpha);
	if (!(cmp->opts.perf.min_effect >= 0 && cmp->opts.perf.min_effect < 1))
		return fa_err_set(err, FA_ERR_USAGE, "min effect %g must be in [0, 1)",
				  cmp->opts.perf.min_effect);
	cmp->db_path = fa_arena_strdup(&cmp->arena, fa_store_path(s));
	cmp->n_params = FA_CMP_N_PARAMS;
	cmp->param_names = fa_reader_param_names;
	cmp->shown = fa_arena_alloc(&cmp->arena, FA_CMP_N_PARAMS * sizeof *cmp->shown);
	if (!cmp->db_path || !cmp->shown)
		rc = fa_err_set(err, FA_ERR_NOMEM, "out of memory comparing runs");
	if (rc == FA_OK)
		rc = resolve_side(s, base_spec, &cmp->base, &cmp->arena, err);
	if (rc == FA_OK)
		rc = resolve_side(s, head_spec, &cmp->head, &cmp->arena, err);
	if (rc == FA_OK && cmp->base.n_runs == 1 && cmp->head.n_runs == 1 &&
	    cmp->base.runs[0].id != cmp->head.runs[0].id && cmp->base.runs[0].ab_group[0] &&
	    strcmp(cmp->base.runs[0].ab_group, cmp->head.runs[0].ab_group) == 0)
		cmp->paired = 1;
	if (rc == FA_OK && !cmp->paired) {
		/* separate: no run is on both sides (a run against itself is not) */
		cmp->separate = 1;
		for (int i = 0; i < cmp->base.n_runs; i++)
			for (int k = 0; k < cmp->head.n_runs; k++)
				if (cmp->base.runs[i].id == cmp->head.runs[k].id)
					cmp->separate = 0;
	}
	if (rc == FA_OK)
		rc = read_side(s, cmp, 0, &e, &n, err);
	if (rc == FA_OK)
		rc = read_side(s, cmp, 1, &e, &n, err);
	if (rc == FA_OK && n > 0) {
		qsort(e, (size_t)n, sizeof *e, cmp_entry);
		for (int i = 0; i < n; i++)
			groups += i == 0 || cmp_group_key(&e[i], &e[i - 1]) != 0;
		cmp->rows = fa_arena_alloc(&cmp->arena, (size_t)groups * sizeof *cmp->rows);
		if (!cmp->rows)
			rc = fa_err_set(err, FA_ERR_NOMEM, "out of memory comparing runs");
	}
	for (int i = 0; rc == FA_OK && i < n;) {
		int j = i + 1;
		while (j < n && cmp_group_key(&e[j], &e[i]) == 0)
			j++;
		rc = make_row(cmp, e + i, j - i, &cmp->rows[cmp->n_rows++], err);
		i = j;
	}
	free(e);
	if (rc == FA_OK && cmp->n_rows) {
		qsort(cmp->rows, (size_t)cmp->n_rows, sizeof *cmp->rows, cmp_row);
		rc = fa_compare_shown_of(cmp->rows, cmp->n_rows, sizeof *cmp->rows,
					 offsetof(struct fa_cmp_row, values), cmp->shown, err);
	}
	if (rc == FA_OK)
		rc = summarise(cmp, err);
	if (rc != FA_OK)
		fa_compare_free(cmp);
	return rc;
}

void fa_compare_free(struct fa_compare *cmp)
{
	if (!cmp)
		return;
	fa_arena_free(&cmp->arena);
	memset(cmp, 0, sizeof *cmp);
}

/* ---- Markdown ------------------------------------------------------------------- */

static const char *verdict_word(int v)
{
	switch (v) {
	case FA_PERF_FASTER: return "FASTER";
	case FA_PERF_SLOWER: return "SLOWER";
	case FA_PERF_SAME: return "same";
	case FA_PERF_NOISY: return "noisy";
	default: return "";
	}
}

static const char *status_word(int st)
{
	return st < 0 ? "absent" : st == FA_STATUS_FAIL ? "FAIL" : fa_status_name(st);
}

static void md_commit(FILE *f, const struct fa_cmp_run *r)
{
	if (!r->git_commit[0]) {
		fputs("git unknown", f);
		return;
	}
	/* as git describe --dirty */
	fprintf(f, "git %.*s%s", FA_TABLE_SHORT_COMMIT, r->git_commit, r->git_dirty == 1 ? "-dirty" : "");
}

/* "run 2 (nightly, git 8c4e2a1f9d3b (dirty), 2026-11-25T21:40:00Z)" */
static void md_run(FILE *f, const struct fa_cmp_run *r)
{
	fprintf(f, "run %" PRId64 " (", r->id);
	if (r->label[0]) {
		fputs("label ", f);
		fa_table_md_text(f, r->label);
		fputs(", ", f);
	}
	md_commit(f, r);
	fprintf(f, ", %s", r->started_at);
	if (strcmp(r->status, "complete") != 0)
		fprintf(f, ", %s", r->status);
	fputs(")", f);
}

static void md_side(FILE *f, const char *name, const struct fa_cmp_side *side)
{
	fprintf(f, "- %s ", name);
	fa_table_md_code(f, side->spec);
	fputs(": ", f);
	if (side->n_runs == 1) {
		md_run(f, &side->runs[0]);
	} else {
		fprintf(f, "%d runs pooled (by %s): ", side->n_runs, side->matched_by);
		for (int i = 0; i < side->n_runs; i++) {
			fputs(i ? ", " : "", f);
			md_run(f, &side->runs[i]);
		}
		if (side->n_commits > 1)
			fprintf(f, "; note: they span %d commits", side->n_commits);
	}
	fputs("\n", f);
}

/* "cpu on AMD EPYC 7B13 (2 threads)" of a run. */
static void md_device(FILE *f, const struct fa_cmp_run *r)
{
	fa_table_md_text(f, r->backend[0] ? r->backend : "unknown");
	if (r->device_name[0]) {
		fputs(" on ", f);
		fa_table_md_text(f, r->device_name);
	}
}

static int same_device(const struct fa_cmp_run *a, const struct fa_cmp_run *b)
{
	return strcmp(a->backend, b->backend) == 0 && strcmp(a->device_name, b->device_name) == 0;
}

static void md_header(FILE *f, const struct fa_compare *cmp)
{
	const struct fa_perf_cfg *p = &cmp->opts.perf;
	int same = 1;
	fputs("# fabench compare: ", f);
	fa_table_md_text(f, cmp->base.spec);
	fputs(" vs ", f);
	fa_table_md_text(f, cmp->head.spec);
	fputs("\n\n", f);
	md_side(f, "base", &cmp->base);
	md_side(f, "head", &cmp->head);
	for (int s = 0; s < 2; s++) {
		const struct fa_cmp_side *side = s ? &cmp->head : &cmp->base;
		for (int i = 0; i < side->n_runs; i++)
			same &= same_device(&side->runs[i], &cmp->base.runs[0]);
	}
	fputs("- device: ", f);
	if (same) {
		md_device(f, &cmp->base.runs[0]);
	} else {
		fputs("base ", f);
		md_device(f, &cmp->base.runs[0]);
		fputs(", head ", f);
		md_device(f, &cmp->head.runs[cmp->head.n_runs - 1]);
		fputs(" (**different devices: the times do not compare like for like**)", f);
	}
	fprintf(f,
		"\n- verdicts: %d FASTER, %d SLOWER, %d same, %d noisy (faster or slower: %s p < %g "
		"and the %g%% bootstrap interval of the time ratio beyond %g%%, or excluding 1 and "
		"narrow with the median ratio beyond it)\n",
		cmp->verdicts[FA_PERF_FASTER], cmp->verdicts[FA_PERF_SLOWER],
		cmp->verdicts[FA_PERF_SAME], cmp->verdicts[FA_PERF_NOISY],
		cmp->paired ? "sign test" : "Mann-Whitney", p->alpha,
		(p->level > 0 ? p->level : FA_STATS_BOOT_LEVEL) * 100, p->min_effect * 100);
	if (cmp->n_timing_differs) {
		fprintf(f, "- timing: %d timed row%s measured differently on the two sides (base ",
			cmp->n_timing_differs, cmp->n_timing_differs == 1 ? " was" : "s were");
		fa_table_md_text(f, cmp->differs_base);
		fputs(", head ", f);
		fa_table_md_text(f, cmp->differs_head);
		fputs("; marked `timing`): **their speedups compare two ways of timing, not only two "
		      "builds** (`fabench run --graph`, `--cache`)\n",
		      f);
	}
	if (cmp->opts.ignore_params)
		fputs("- matched by case key and kernel, kernel params ignored\n", f);
	if (cmp->paired)
		fputs("- paired: the two runs of one `run --ab` took their samples in turn, so each "
		      "row compares sample i of both sides (sign test, bootstrap of the median of "
		      "head/base)\n",
		      f);
	fprintf(f,
		"- correctness: %d broken, %d fixed, %d still failing; %d added, %d removed, "
		"%d not timed on both sides\n",
		cmp->changes[FA_CMP_BROKEN], cmp->changes[FA_CMP_FIXED],
		cmp->changes[FA_CMP_FAILING], cmp->changes[FA_CMP_ADDED],
		cmp->changes[FA_CMP_REMOVED], cmp->changes[FA_CMP_UNTIMED]);
	if (cmp->n_unchecked)
		fprintf(f, "- unchecked: %d row%s hold%s results imported from another tool that "
			   "nobody checked against the reference (timed, not verified)\n",
			cmp->n_unchecked, cmp->n_unchecked == 1 ? "" : "s",
			cmp->n_unchecked == 1 ? "s" : "");
	if (cmp->n_lost)
		fprintf(f,
			"- **coverage lost**: %d result%s timed in base %s not timed in head (%d "
			"removed, %d not timed)\n",
			cmp->n_lost, cmp->n_lost == 1 ? "" : "s", cmp->n_lost == 1 ? "is" : "are",
			cmp->lost_removed, cmp->lost_untimed);
}

/* "cpu_flash_tiled[block_q=32,block_k=64]" into f. */
/* "cpu_flash", "cpu_flash[block_q=32]", or with params ignored and
 * different, "test_delay[delay_pct=0 -> delay_pct=5]". */
static void kernel_label(const struct fa_cmp_row *row, char *buf, size_t size)
{
	if (strcmp(row->base_params, row->params) != 0)
		snprintf(buf, size, "%s[%s -> %s]", row->kernel, row->base_params, row->params);
	else if (row->params[0])
		snprintf(buf, size, "%s[%s]", row->kernel, row->params);
	else
		snprintf(buf, size, "%s", row->kernel);
}

static void md_kernel(FILE *f, const struct fa_cmp_row *row)
{
	char buf[1200];
	kernel_label(row, buf, sizeof buf);
	fa_table_md_text(f, buf);
}

static void md_case_ref(FILE *f, const struct fa_cmp_row *row)
{
	fprintf(f, " on case %d ", row->case_idx + 1); /* counted from 1, as run shows */
	fa_table_md_code(f, row->key);
}

/* Broken, fixed and still failing results one by one; added, removed and
 * untimed ones counted per (kernel, statuses). */
static enum fa_rc md_changes(FILE *f, const struct fa_compare *cmp, struct fa_err *err)
{
	int any = 0; /* of the rows listed (--only-changed leaves untimed ones out) */
	static const int order[] = {FA_CMP_BROKEN, FA_CMP_FIXED, FA_CMP_FAILING};
	static const int grouped[] = {FA_CMP_ADDED, FA_CMP_REMOVED, FA_CMP_UNTIMED};
	int *done;
	for (int i = 0; i < cmp->n_rows && !any; i++)
		any = cmp->rows[i].change != FA_CMP_TIMED;
	if (!any)
		return FA_OK;
	if (!(done = calloc((size_t)cmp->n_rows + 1, sizeof *done)))
		return fa_err_set(err, FA_ERR_NOMEM, "out of memory writing a comparison");
	fputs("\n## Correctness and coverage\n\n", f);
	for (int o = 0; o < N_OF(order); o++)
		for (int i = 0; i < cmp->n_rows; i++) {
			const struct fa_cmp_row *row = &cmp->rows[i];
			const char *why = row->change == FA_CMP_FIXED ? row->base_reason
								      : row->head_reason;
			if (row->change != order[o])
				continue;
			fprintf(f, "- %s ", row->change == FA_CMP_BROKEN  ? "BROKEN"
					    : row->change == FA_CMP_FIXED ? "fixed"
									  : "still failing");
			md_kernel(f, row);
			md_case_ref(f, row);
			if (row->base_status < 0)
				fprintf(f, ": new, %s", status_word(row->head_status));
			else
				fprintf(f, ": %s -> %s", status_word(row->base_status),
					status_word(row->head_status));
			if (why[0]) {
				fputs(row->change == FA_CMP_FIXED ? " (was: " : ": ", f);
				fa_table_md_text(f, why);
				fputs(row->change == FA_CMP_FIXED ? ")" : "", f);
			}
			fputs("\n", f);
		}
	for (int o = 0; o < N_OF(grouped); o++)
		for (int i = 0; i < cmp->n_rows; i++) {
			const struct fa_cmp_row *row = &cmp->rows[i];
			char li[600], lk[600];
			int count = 0, nst = 0;
			int st_b[64], st_h[64], st_n[64]; /* distinct status pairs: a handful */
			if (row->change != grouped[o] || done[i])
				continue;
			kernel_label(row, li, sizeof li);
			for (int k = i; k < cmp->n_rows; k++) {
				const struct fa_cmp_row *rk = &cmp->rows[k];
				int d;
				if (rk->change != row->change || done[k])
					continue;
				kernel_label(rk, lk, sizeof lk);
				if (strcmp(li, lk) != 0)
					continue;
				done[k] = 1;
				count++;
				for (d = 0; d < nst && !(st_b[d] == rk->base_status &&
							 st_h[d] == rk->head_status);
				     d++)
					;
				if (d == nst && nst < N_OF(st_n)) {
					st_b[nst] = rk->base_status;
					st_h[nst] = rk->head_status;
					st_n[nst++] = 0;
				}
				if (d < nst)
					st_n[d]++;
			}
			fprintf(f, "- %s: ", row->change == FA_CMP_ADDED     ? "added (head only)"
					     : row->change == FA_CMP_REMOVED ? "removed (base only)"
									     : "not timed on both sides");
			md_kernel(f, row);
			fprintf(f, ", %d case%s (", count, count == 1 ? "" : "s");
			for (int d = 0; d < nst; d++) {
				fprintf(f, "%s%d ", d ? ", " : "", st_n[d]);
				if (row->change == FA_CMP_ADDED)
					fputs(status_word(st_h[d]), f);
				else if (row->change == FA_CMP_REMOVED)
					fputs(status_word(st_b[d]), f);
				else
					fprintf(f, "%s -> %s", status_word(st_b[d]),
						status_word(st_h[d]));
			}
			fputs(")\n", f);
		}
	free(done);
	return FA_OK;
}

static void speedup_text(double x, char *buf, size_t size)
{
	if (isnan(x))
		buf[0] = '\0';
	else
		snprintf(buf, size, "%.2fx", x);
}

/* The summary table: per kernel, per suite, and over everything. */
static enum fa_rc md_summary(FILE *f, const struct fa_compare *cmp, struct fa_err *err)
{
	static const char *const head[] = {"", "results", "speedup (geomean)",
					   "FASTER", "SLOWER", "same", "noisy"};
	struct fa_table t;
	char buf[256];
	enum fa_rc rc = fa_table_init(&t, N_OF(head), err);
	int total = cmp->verdicts[0] + cmp->verdicts[1] + cmp->verdicts[2] + cmp->verdicts[3];
	for (int j = 1; j < N_OF(head); j++)
		t.right[j] = 1;
	for (int j = 0; rc == FA_OK && j < N_OF(head); j++)
		rc = fa_table_add_md(&t, head[j], err);
	for (int g = 0; rc == FA_OK && g <= cmp->n_kernels + cmp->n_suites; g++) {
		const struct fa_cmp_group *grp = g < cmp->n_kernels ? &cmp->kernels[g]
						 : g < cmp->n_kernels + cmp->n_suites
							 ? &cmp->suites[g - cmp->n_kernels]
							 : NULL;
		int n = grp ? grp->n : total;
		const int32_t *v = grp ? grp->verdicts : cmp->verdicts;
		if (grp)
			snprintf(buf, sizeof buf, "%s %s", g < cmp->n_kernels ? "kernel" : "suite",
				 grp->name);
		else
			snprintf(buf, sizeof buf, "all");
		rc = fa_table_add_md(&t, buf, err);
		snprintf(buf, sizeof buf, "%d", n);
		if (rc == FA_OK)
			rc = fa_table_add_md(&t, buf, err);
		speedup_text(grp ? grp->geomean_speedup : cmp->geomean_speedup, buf, sizeof buf);
		if (rc == FA_OK)
			rc = fa_table_add_md(&t, buf, err);
		for (int k = 0; rc == FA_OK && k < 4; k++) {
			static const int vorder[] = {FA_PERF_FASTER, FA_PERF_SLOWER, FA_PERF_SAME,
						     FA_PERF_NOISY};
			snprintf(buf, sizeof buf, "%d", v[vorder[k]]);
			rc = fa_table_add_md(&t, buf, err);
		}
	}
	if (rc == FA_OK) {
		fputs("\n## Summary\n\n", f);
		rc = fa_table_print_md(f, &t, err);
	}
	if (rc == FA_OK)
		fprintf(f,
			"\nspeedup: geometric mean of %s over the results timed on both sides "
			"(above 1: head is faster).\n",
			cmp->paired ? "the rows' speedups (1 / the median of head/base over a row's "
				      "pairs)"
				    : "base median / head median");
	fa_table_free(&t);
	return rc;
}

/* "0.4%", "12%", "" unknown; a "~" after it when the side's sampling
 * stopped on a limit (max_time, max_samples, timeout) rather than on its
 * noise. Returns 1 when it wrote the marker. */
static int noise_text(double rsd, const char *stop, char *buf, size_t size)
{
	int limit = stop[0] && strcmp(stop, "converged") != 0;
	if (isnan(rsd))
		snprintf(buf, size, "%s", limit ? "~" : "");
	else if (rsd * 100 < 9.95)
		snprintf(buf, size, "%.1f%%%s", rsd * 100, limit ? "~" : "");
	else
		snprintf(buf, size, "%.0f%%%s", rsd * 100, limit ? "~" : "");
	return limit;
}

/* One table of the TIMED rows of a suite. */
static enum fa_rc md_suite(FILE *f, const struct fa_compare *cmp, const char *suite,
			   int *any_low, int *any_unconverged, struct fa_err *err)
{
	static const char *const all_tail[] = {"pass",     "models",  "depth",    "kernel",
					       "base ms",  "base rsd", "head ms", "head rsd",
					       "speedup",  "verdict"};
	static const int32_t all_right[] = {0, 0, 1, 0, 1, 1, 1, 1, 1, 0};
	const char *tail[N_OF(all_tail)];
	int32_t tail_right[N_OF(all_tail)];
	const char *const **vals = malloc(((size_t)cmp->n_rows + 1) * sizeof *vals);
	int32_t shown[FA_CMP_N_PARAMS];
	/* the pass column where a backward is timed (a bwd and a fwd_bwd row
	 * of one shape and kernel differ in nothing else), the models column
	 * only where a case has labels, depth where the suite gave one
	 * (llama-bench's n_depth: kv_len is depth + q_len) */
	int n = 0, passes = 0, tagged = 0, deep = 0, n_tail = 0;
	struct fa_table t;
	char buf[640];
	enum fa_rc rc;

	if (!vals)
		return fa_err_set(err, FA_ERR_NOMEM, "out of memory writing a comparison");
	for (int i = 0; i < cmp->n_rows; i++)
		if (cmp->rows[i].change == FA_CMP_TIMED && strcmp(cmp->rows[i].suite, suite) == 0)
			vals[n++] = cmp->rows[i].values;
	if (n == 0) { /* every timed row of the suite left out (compare --only-changed) */
		free(vals);
		fprintf(f, "\n## Performance%s", suite[0] ? ": " : "");
		fa_table_md_text(f, suite);
		fputs("\n\nNo row changed.\n", f);
		return FA_OK;
	}
	for (int i = 0; i < cmp->n_rows; i++) {
		const struct fa_cmp_row *row = &cmp->rows[i];
		if (row->change != FA_CMP_TIMED || strcmp(row->suite, suite) != 0)
			continue;
		passes |= row->pass != FA_PASS_FWD;
		tagged |= row->tags && row->tags[0];
		deep |= row->depth > 0;
	}
	for (int j = 0; j < N_OF(all_tail); j++) {
		if ((j == 0 && !passes) || (j == 1 && !tagged) || (j == 2 && !deep))
			continue;
		tail[n_tail] = all_tail[j];
		tail_right[n_tail++] = all_right[j];
	}
	rc = fa_compare_suite_table(f, "Performance", suite, vals, n, tail, tail_right, n_tail,
				    shown, &t, err);
	free(vals);
	for (int i = 0; rc == FA_OK && i < cmp->n_rows; i++) {
		const struct fa_cmp_row *row = &cmp->rows[i];
		if (row->change != FA_CMP_TIMED || strcmp(row->suite, suite) != 0)
			continue;
		rc = fa_compare_md_case_cells(&t, row->case_idx + 1, row->values, shown, err);
		if (passes && rc == FA_OK)
			rc = fa_table_add_md(&t, fa_pass_name(row->pass), err);
		if (tagged && rc == FA_OK)
			rc = fa_table_add_md(&t, row->tags ? row->tags : "", err);
		if (deep && rc == FA_OK) {
			if (row->depth > 0)
				snprintf(buf, sizeof buf, "%d", (int)row->depth);
			else
				buf[0] = '\0';
			rc = fa_table_add_md(&t, buf, err);
		}
		kernel_label(row, buf, sizeof buf);
		if (rc == FA_OK)
			rc = fa_table_add_md(&t, buf, err);
		fa_table_fmt_sig3(row->base_ms, buf, sizeof buf);
		if (rc == FA_OK)
			rc = fa_table_add_md(&t, buf, err);
		*any_unconverged |= noise_text(row->base_rsd, row->base_stop, buf, sizeof buf);
		if (rc == FA_OK)
			rc = fa_table_add_md(&t, buf, err);
		fa_table_fmt_sig3(row->head_ms, buf, sizeof buf);
		if (rc == FA_OK)
			rc = fa_table_add_md(&t, buf, err);
		*any_unconverged |= noise_text(row->head_rsd, row->head_stop, buf, sizeof buf);
		if (rc == FA_OK)
			rc = fa_table_add_md(&t, buf, err);
		speedup_text(row->speedup, buf, sizeof buf);
		if (rc == FA_OK)
			rc = fa_table_add_md(&t, buf, err);
		snprintf(buf, sizeof buf, "%s%s%s", verdict_word(row->verdict),
			 row->perf.low_samples ? "*" : "", row->timing_differs ? " (timing)" : "");
		*any_low |= row->perf.low_samples;
		if (rc == FA_OK)
			rc = fa_table_add_md(&t, buf, err);
	}
	if (rc == FA_OK)
		rc = fa_table_print_md(f, &t, err);
	fa_table_free(&t);
	return rc;
}

/* 1 when some added and removed rows share a case and kernel (their params
 * differ): --ignore-params would match them. */
static int params_differ_only(const struct fa_compare *cmp)
{
	for (int i = 0; i < cmp->n_rows; i++) {
		const struct fa_cmp_row *a = &cmp->rows[i];
		if (a->change != FA_CMP_ADDED)
			continue;
		for (int k = 0; k < cmp->n_rows; k++) {
			const struct fa_cmp_row *b = &cmp->rows[k];
			if (b->change == FA_CMP_REMOVED && strcmp(a->key, b->key) == 0 &&
			    strcmp(a->kernel, b->kernel) == 0)
				return 1;
		}
	}
	return 0;
}

static enum fa_rc write_md(FILE *f, const struct fa_compare *cmp, struct fa_err *err)
{
	const struct fa_perf_cfg *p = &cmp->opts.perf;
	enum fa_rc rc;
	int any_low = 0, any_unconverged = 0;

	md_header(f, cmp);
	rc = md_changes(f, cmp, err);
	if (rc == FA_OK && cmp->changes[FA_CMP_TIMED] == 0) {
		fputs("\nNo result was timed on both sides: there is nothing to compare.", f);
		if (!cmp->opts.ignore_params && params_differ_only(cmp))
			fputs(" The same kernels ran with other params on each side: "
			      "--ignore-params compares them.",
			      f);
		fputs("\n", f);
		return FA_OK;
	}
	if (rc == FA_OK)
		rc = md_summary(f, cmp, err);
	if (rc == FA_OK && cmp->rows_left_out > 0)
		fprintf(f,
			"\n**%d timed row%s left out** to fit %d characters (--max-chars): SLOWER "
			"rows are kept first, then FASTER. The counts and the summary above cover "
			"every row; the same command without --max-chars lists them all.\n",
			cmp->rows_left_out, cmp->rows_left_out == 1 ? " is" : "s are", cmp->fit_chars);
	for (int s = 0; rc == FA_OK && s < cmp->n_suites; s++)
		rc = md_suite(f, cmp, cmp->suites[s].name, &any_low, &any_unconverged, err);
	if (rc != FA_OK)
		return rc;
	/* a paired --ab reads sample i of each side together (the sign test of
	 * their ratios); separate runs pool each side's samples */
	fprintf(f,
		"\nms: median of the %s. speedup: %s (above 1: head is faster). verdict: "
		"FASTER or SLOWER when the %s gives p < %g and the %g%% bootstrap interval of the "
		"%s lies beyond %g%%; same when the interval lies within %g%%, or the ratio does "
		"and the interval is narrow; noisy when the samples cannot tell.",
		cmp->paired ? "paired samples (sample i of each side, taken in turn; the first n "
			      "of each, n the smaller side's count)"
			    : "samples (of every run of a side, pooled)",
		cmp->paired ? "1 / the median of head/base over the pairs, base / head for a row "
			      "with too few pairs"
			    : "base / head",
		cmp->paired ? "sign test of the pairs" : "Mann-Whitney test", p->alpha,
		(p->level > 0 ? p->level : FA_STATS_BOOT_LEVEL) * 100,
		cmp->paired ? "median of head/base" : "time ratio", p->min_effect * 100,
		p->min_effect * 100);
	fputs(" rsd: relative standard deviation of a side's samples (stdev / mean).", f);
	if (any_unconverged)
		fputs(" ~: that side's sampling stopped at its time or sample limit (or the "
		      "timeout), not because its noise fell under max_noise.",
		      f);
	if (any_low)
		fputs(" *: too few samples for the rank test; decided on the ratio alone.", f);
	fputs("\n", f);
	if (cmp->separate) {
		fputs("\nNote: BASE and HEAD are separate runs: drift between runs on a shared "
		      "machine can exceed the effects shown; `fabench run --ab` pairs samples.",
		      f);
		if (cmp->median_rsd > cmp->opts.perf.min_effect)
			fprintf(f,
				" Here the samples are noisy: a result's relative standard "
				"deviation is %.1f%% (median over the rows), above the %g%% minimum "
				"effect.",
				cmp->median_rsd * 100, cmp->opts.perf.min_effect * 100);
		fputs("\n", f);
	}
	return FA_OK;
}

/* ---- CSV and JSON ---------------------------------------------------------------- */

static const char *status_csv(int st)
{
	return st < 0 ? "" : fa_status_name(st);
}

static void write_csv(FILE *f, const struct fa_compare *cmp);

/* fa_table_write_text's writers of the md and the csv */
static enum fa_rc md_text(FILE *m, const void *cmp, struct fa_err *err)
{
	return write_md(m, cmp, err);
}

static enum fa_rc csv_text(FILE *m, const void *cmp, struct fa_err *err)
{
	(void)err;
	write_csv(m, cmp);
	return FA_OK;
}

static void write_csv(FILE *f, const struct fa_compare *cmp)
{
	fputs("suite,case_idx,case_key", f);
	for (int j = 0; j < FA_CMP_N_PARAMS; j++)
		fprintf(f, ",%s", fa_reader_param_names[j]);
	fputs(",kernel,params,base_params,change,base_status,head_status,n_base,n_head,base_ms,"
	      "head_ms,speedup,ratio,ratio_lo,ratio_hi,p,effect,verdict,low_samples,base_reason,"
	      "head_reason,base_rsd,head_rsd,base_stop,head_stop,lost,base_timing,head_timing,"
	      "pass,depth,models\n", /* the last three appended: the others keep their places */
	      f);
	for (int i = 0; i < cmp->n_rows; i++) {
		const struct fa_cmp_row *r = &cmp->rows[i];
		int timed = r->change == FA_CMP_TIMED;
		fa_table_csv_text(f, r->suite);
		fprintf(f, ",%d,", r->case_idx);
		fa_table_csv_text(f, r->key);
		for (int j = 0; j < FA_CMP_N_PARAMS; j++) {
			fputc(',', f);
			fa_table_csv_text(f, r->values[j]);
		}
		fputc(',', f);
		fa_table_csv_text(f, r->kernel);
		fputc(',', f);
		fa_table_csv_text(f, r->params);
		fputc(',', f);
		fa_table_csv_text(f, r->base_params);
		fprintf(f, ",%s,%s,%s,%d,%d,", fa_compare_change_name(r->change),
			status_csv(r->base_status), status_csv(r->head_status), r->n_base, r->n_head);
		fa_table_csv_real(f, r->base_ms);
		fputc(',', f);
		fa_table_csv_real(f, r->head_ms);
		fputc(',', f);
		fa_table_csv_real(f, r->speedup);
		fputc(',', f);
		if (timed) {
			fa_table_csv_real(f, r->perf.ratio);
			fputc(',', f);
			fa_table_csv_real(f, r->perf.lo);
			fputc(',', f);
			fa_table_csv_real(f, r->perf.hi);
			fputc(',', f);
			fa_table_csv_real(f, r->perf.p);
			fputc(',', f);
			fa_table_csv_real(f, r->perf.effect);
			fprintf(f, ",%s,%d,", fa_stats_verdict_name(r->verdict), r->perf.low_samples);
		} else {
			fputs(",,,,,,,", f);
		}
		fa_table_csv_text(f, r->base_reason);
		fputc(',', f);
		fa_table_csv_text(f, r->head_reason);
		fputc(',', f);
		fa_table_csv_real(f, r->base_rsd);
		fputc(',', f);
		fa_table_csv_real(f, r->head_rsd);
		fputc(',', f);
		fa_table_csv_text(f, r->base_stop);
		fputc(',', f);
		fa_table_csv_text(f, r->head_stop);
		fprintf(f, ",%d,", r->lost);
		fa_table_csv_text(f, r->base_timing);
		fputc(',', f);
		fa_table_csv_text(f, r->head_timing);
		/* what the case times, the suite's depth (empty when none), its
		 * labels joined by ';' as in the report's CSV */
		fprintf(f, ",%s,", fa_pass_name(r->pass));
		if (r->depth > 0)
			fprintf(f, "%d", (int)r->depth);
		fputc(',', f);
		{
			char names[1200];
			size_t n = 0;
			names[0] = '\0';
			for (int k = 0; k < r->n_tags && n < sizeof names; k++)
				n += (size_t)snprintf(names + n, sizeof names - n, "%s%s", k ? ";" : "",
						      r->tag_list[k].name);
			fa_table_csv_text(f, names);
		}
		fputc('\n', f);
	}
}

static void json_side(FILE *f, const char *name, const struct fa_cmp_side *side)
{
	fprintf(f, "  \"%s\": {\"spec\": ", name);
	fa_json_string(f, side->spec);
	fputs(", \"matched_by\": ", f);
	fa_json_string(f, side->matched_by);
	fputs(", \"runs\": [", f);
	for (int i = 0; i < side->n_runs; i++) {
		const struct fa_cmp_run *r = &side->runs[i];
		fputs(i ? ",\n    {" : "\n    {", f);
		fa_compare_json_run(f, r->id, r->started_at, r->git_commit, r->git_dirty, r->label,
				    r->status, r->suite_name);
		fputs(", \"backend\": ", f);
		fa_json_string(f, r->backend);
		fputs(", \"device\": ", f);
		fa_json_string(f, r->device_name);
		fputs("}", f);
	}
	fputs(side->n_runs ? "\n  ]},\n" : "]},\n", f);
}

static void json_verdicts(FILE *f, const int32_t *v)
{
	fprintf(f, "{\"faster\": %d, \"slower\": %d, \"same\": %d, \"noisy\": %d}",
		v[FA_PERF_FASTER], v[FA_PERF_SLOWER], v[FA_PERF_SAME], v[FA_PERF_NOISY]);
}

static void json_groups(FILE *f, const char *name, const struct fa_cmp_group *g, int n)
{
	fprintf(f, "    \"%s\": [", name);
	for (int i = 0; i < n; i++) {
		fprintf(f, "%s\n      {\"name\": ", i ? "," : "");
		fa_json_string(f, g[i].name);
		fprintf(f, ", \"n\": %d, \"geomean_speedup\": ", g[i].n);
		fa_table_json_real(f, g[i].geomean_speedup);
		fputs(", \"verdicts\": ", f);
		json_verdicts(f, g[i].verdicts);
		fputs("}", f);
	}
	fputs(n ? "\n    ]" : "]", f);
}

static void write_json(FILE *f, const struct fa_compare *cmp)
{
	const struct fa_perf_cfg *p = &cmp->opts.perf;
	fprintf(f, "{\n  \"schema_version\": %d,\n", FA_JSON_SCHEMA_VERSION);
	json_side(f, "base", &cmp->base);
	json_side(f, "head", &cmp->head);
	fputs("  \"options\": {\"alpha\": ", f);
	fa_table_json_real(f, p->alpha);
	fputs(", \"min_effect\": ", f);
	fa_table_json_real(f, p->min_effect);
	fprintf(f, ", \"resamples\": %d, \"level\": ",
		p->resamples > 0 ? p->resamples : FA_STATS_BOOT_RESAMPLES);
	fa_table_json_real(f, p->level > 0 ? p->level : FA_STATS_BOOT_LEVEL);
	fprintf(f, ", \"seed\": \"%" PRIu64 "\", \"ignore_params\": %s},\n", p->seed,
		cmp->opts.ignore_params ? "true" : "false");
	fputs("  \"summary\": {\n    \"changes\": {", f);
	for (int c = 0; c < FA_CMP_CHANGE_COUNT; c++)
		fprintf(f, "%s\"%s\": %d", c ? ", " : "", fa_compare_change_name(c), cmp->changes[c]);
	fputs("},\n    \"verdicts\": ", f);
	json_verdicts(f, cmp->verdicts);
	fputs(",\n    \"geomean_speedup\": ", f);
	fa_table_json_real(f, cmp->geomean_speedup);
	fprintf(f, ",\n    \"regressions\": %d,\n    \"unchecked\": %d,\n    \"lost\": %d, "
		   "\"separate\": %s, \"median_rsd\": ",
		cmp->n_regressions, cmp->n_unchecked, cmp->n_lost, cmp->separate ? "true" : "false");
	fa_table_json_real(f, cmp->median_rsd);
	fputs(",\n", f);
	json_groups(f, "kernels", cmp->kernels, cmp->n_kernels);
	fputs(",\n", f);
	json_groups(f, "suites", cmp->suites, cmp->n_suites);
	fputs("\n  },\n  \"rows\": [", f);
	for (int i = 0; i < cmp->n_rows; i++) {
		const struct fa_cmp_row *r = &cmp->rows[i];
		fputs(i ? ",\n    {" : "\n    {", f);
		fa_compare_json_row_key(f, r->suite, r->case_idx, r->key, r->kernel, r->params);
		fputs(", \"base_params\": ", f);
		fa_json_string(f, r->base_params);
		fprintf(f, ",\n     \"change\": \"%s\", \"base_status\": ",
			fa_compare_change_name(r->change));
		if (r->base_status >= 0)
			fa_json_string(f, fa_status_name(r->base_status));
		else
			fputs("null", f);
		fputs(", \"head_status\": ", f);
		if (r->head_status >= 0)
			fa_json_string(f, fa_status_name(r->head_status));
		else
			fputs("null", f);
		fputs(", \"base_reason\": ", f);
		fa_json_string(f, r->base_reason);
		fputs(", \"head_reason\": ", f);
		fa_json_string(f, r->head_reason);
		fprintf(f, ",\n     \"n_base\": %d, \"n_head\": %d, \"base_ms\": ", r->n_base,
			r->n_head);
		fa_table_json_real(f, r->base_ms);
		fputs(", \"head_ms\": ", f);
		fa_table_json_real(f, r->head_ms);
		fputs(", \"speedup\": ", f);
		fa_table_json_real(f, r->speedup);
		fputs(",\n     \"base_rsd\": ", f);
		fa_table_json_real(f, r->base_rsd);
		fputs(", \"head_rsd\": ", f);
		fa_table_json_real(f, r->head_rsd);
		fputs(", \"base_stop\": ", f);
		fa_json_string(f, r->base_stop);
		fputs(", \"head_stop\": ", f);
		fa_json_string(f, r->head_stop);
		fprintf(f, ", \"lost\": %s", r->lost ? "true" : "false");
		fputs(",\n     \"base_timing\": ", f);
		fa_json_string(f, r->base_timing);
		fputs(", \"head_timing\": ", f);
		fa_json_string(f, r->head_timing);
		fprintf(f, ", \"timing_differs\": %s", r->timing_differs ? "true" : "false");
		if (r->change == FA_CMP_TIMED) {
			fputs(",\n     \"verdict\": ", f);
			fa_json_string(f, fa_stats_verdict_name(r->verdict));
			fputs(", \"ratio\": ", f);
			fa_table_json_real(f, r->perf.ratio);
			fputs(", \"ratio_lo\": ", f);
			fa_table_json_real(f, r->perf.lo);
			fputs(", \"ratio_hi\": ", f);
			fa_table_json_real(f, r->perf.hi);
			fputs(", \"p\": ", f);
			fa_table_json_real(f, r->perf.p);
			fputs(", \"effect\": ", f);
			fa_table_json_real(f, r->perf.effect);
			fprintf(f, ", \"low_samples\": %s", r->perf.low_samples ? "true" : "false");
		} else {
			fputs(",\n     \"verdict\": null", f);
		}
		fputs(",\n     ", f);
		fa_compare_json_case(f, r->values);
		if (r->n_tags) { /* the case's labels, as report and list write them */
			fputs(", \"tags\": [", f);
			for (int k = 0; k < r->n_tags; k++) {
				fputs(k ? ", " : "", f);
				fa_table_json_tag_open(f, &r->tag_list[k]);
				fputc('}', f);
			}
			fputc(']', f);
		}
		if (r->depth > 0) /* the suite's depth, where it gave one */
			fprintf(f, ", \"depth\": %d", (int)r->depth);
		fprintf(f, ", \"pass\": \"%s\"", fa_pass_name(r->pass)); /* as the CSV's column */
		fputs("}", f);
	}
	fputs(cmp->n_rows ? "\n  ]\n}\n" : "]\n}\n", f);
}

/* Characters of UTF-8 text s[0..n) (bytes that do not continue one). */
static long utf8_chars(const char *s, size_t n)
{
	long c = 0;
	for (size_t i = 0; i < n; i++)
		c += ((unsigned char)s[i] & 0xc0) != 0x80;
	return c;
}

/* cmp's markdown with only the first keep TIMED rows by rank (SLOWER,
 * FASTER, the rest; ties in row order) into *text (malloc'd), *len bytes. */
static enum fa_rc md_keeping(struct fa_compare *cmp, const int32_t *rank_of, int32_t keep,
			     int32_t n_timed, char **text, size_t *len, struct fa_err *err)
{
	struct fa_cmp_row *all = cmp->rows, *some = malloc(((size_t)cmp->n_rows + 1) * sizeof *some);
	int32_t n_all = cmp->n_rows, n = 0;
	enum fa_rc rc;
	FILE *m;
	if (!some)
		return fa_err_set(err, FA_ERR_NOMEM, "out of memory writing a comparison");
	for (int32_t i = 0; i < n_all; i++)
		if (all[i].change != FA_CMP_TIMED || rank_of[i] < keep)
			some[n++] = all[i];
	*text = NULL;
	*len = 0;
	if (!(m = open_memstream(text, len))) {
		free(some);
		return fa_err_set(err, FA_ERR_NOMEM, "out of memory writing a comparison");
	}
	cmp->rows = some;
	cmp->n_rows = n;
	cmp->rows_left_out = n_timed - (keep < n_timed ? keep : n_timed);
	/* valid UTF-8 before it is measured (a replaced byte is a character) */
	rc = fa_table_write_text(m, md_text, cmp, "a comparison", err);
	cmp->rows = all;
	cmp->n_rows = n_all;
	if (fclose(m) != 0 && rc == FA_OK)
		rc = fa_err_set(err, FA_ERR_NOMEM, "out of memory writing a comparison");
	free(some);
	if (rc != FA_OK) {
		free(*text);
		*text = NULL;
	}
	return rc;
}

enum fa_rc fa_compare_write_md_fit(struct fa_compare *cmp, long max_chars, FILE *f,
				   struct fa_err *err)
{
	int32_t *rank_of = malloc(((size_t)cmp->n_rows + 1) * sizeof *rank_of), n_timed = 0;
	char *text = NULL;
	size_t len = 0;
	enum fa_rc rc;
	if (!rank_of)
		return fa_err_set(err, FA_ERR_NOMEM, "out of memory writing a comparison");
	/* each TIMED row's place in the order rows are kept in */
	for (int pass = 0; pass < 3; pass++)
		for (int32_t i = 0; i < cmp->n_rows; i++) {
			const struct fa_cmp_row *r = &cmp->rows[i];
			int want = r->verdict == FA_PERF_SLOWER ? 0 : r->verdict == FA_PERF_FASTER ? 1 : 2;
			if (r->change == FA_CMP_TIMED && want == pass)
				rank_of[i] = n_timed++;
		}
	cmp->fit_chars = (int32_t)(max_chars < INT32_MAX ? max_chars : INT32_MAX);
	rc = md_keeping(cmp, rank_of, n_timed, n_timed, &text, &len, err);
	if (rc == FA_OK && utf8_chars(text, len) > max_chars) {
		/* the most rows that fit: the text grows with the rows kept */
		int32_t lo = 0, hi = n_timed - 1;
		while (rc == FA_OK && lo < hi) {
			int32_t mid = lo + (hi - lo + 1) / 2;
			free(text);
			rc = md_keeping(cmp, rank_of, mid, n_timed, &text, &len, err);
			if (rc == FA_OK && utf8_chars(text, len) <= max_chars)
				lo = mid;
			else
				hi = mid - 1;
		}
		free(text);
		text = NULL;
		if (rc == FA_OK)
			rc = md_keeping(cmp, rank_of, lo, n_timed, &text, &len, err);
	}
	if (rc == FA_OK && utf8_chars(text, len) > max_chars) {
		/* even the lines every row has are too long: cut at a line */
		static const char cut[] = "\n**Cut here** to fit --max-chars; the same command "
					  "without it writes the rest.\n";
		long room = max_chars - (long)(sizeof cut - 1);
		size_t at = 0;
		long chars = 0;
		for (size_t i = 0; i < len; i++) {
			chars += ((unsigned char)text[i] & 0xc0) != 0x80;
			if (chars > room)
				break;
			if (text[i] == '\n')
				at = i + 1;
		}
		fwrite(text, 1, at, f);
		fputs(cut, f);
	} else if (rc == FA_OK) {
		fwrite(text, 1, len, f);
	}
	free(text);
	free(rank_of);
	cmp->rows_left_out = 0;
	if (rc == FA_OK && (fflush(f) != 0 || ferror(f)))
		rc = fa_err_set(err, FA_ERR_IO, "cannot write the comparison");
	return rc;
}

enum fa_rc fa_compare_write(const struct fa_compare *cmp, int format, FILE *f,
			    struct fa_err *err)
{
	enum fa_rc rc = FA_OK;
	if (format == FA_FMT_MD || format == FA_FMT_CSV) {
		/* through memory, every byte then valid UTF-8 (json escapes its own) */
		rc = fa_table_write_text(f, format == FA_FMT_MD ? md_text : csv_text, cmp,
					 "a comparison", err);
	} else if (format == FA_FMT_JSON)
		write_json(f, cmp);
	else
		return fa_err_set(err, FA_ERR_USAGE, "compare cannot be written as format %d",
				  format);
	if (rc == FA_OK && (fflush(f) != 0 || ferror(f)))
		rc = fa_err_set(err, FA_ERR_IO, "cannot write the comparison");
	return rc;
}
