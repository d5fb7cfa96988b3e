/* tune.c - `fabench tune`: the best value of a tunable per case, the regret
 * of rules, and a rule fitted to the run (tune.h says what each is).
 *
 * The fit: over the timed cases, cost(S, v) = sum over s in S of
 * ln(median(s, v) / median(s, best(s))), infinite when v was not timed on a
 * case of S. A leaf takes the value of least cost (ties: the built-in value,
 * then the smallest). A node of depth d < depth may split S on one --by
 * expression x at a threshold t taken from the values of x in S (x >= t goes
 * right; an undefined x, NaN, goes left, as the rule's comparison is false); the search tries every expression and threshold, recursively, and
 * keeps the tree of least total cost. A split must gain at least
 * ln(1 + min_effect) (one case's worth of the smallest change compare
 * reports), so the noise of a few cases cannot buy one. Between trees of
 * equal cost the one with fewer leaves wins, then the earlier expression,
 * then the smaller threshold: the result depends on the run alone.
 */
#include "tune.h"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "../base/arena.h"
#include "../base/text.h"
#include "../base/util.h"
#include "../store/reader.h"
#include "../suite/expr.h"
#include "compare.h"
#include "report.h"
#include "table.h"

void fa_tune_opts_init(struct fa_tune_opts *o)
{
	memset(o, 0, sizeof *o);
	o->depth = FA_TUNE_DEFAULT_DEPTH;
	o->loss = FA_TUNE_DEFAULT_LOSS;
	fa_stats_verdict_defaults(&o->perf);
	o->perf.min_effect = FA_CMP_MIN_EFFECT; /* compare's, the A/A floor */
}

static enum fa_rc nomem(struct fa_err *err)
{
	return fa_err_set(err, FA_ERR_NOMEM, "out of memory tuning");
}

static enum fa_rc db_fail(struct fa_store *s, struct fa_err *err)
{
	return fa_err_set(err, FA_ERR_DB, "cannot read '%s': %s", fa_store_path(s),
			  sqlite3_errmsg(fa_store_db(s)));
}

static char *col_text(sqlite3_stmt *st, int i)
{
	const unsigned char *t = sqlite3_column_text(st, i);
	return strdup(t ? (const char *)t : "");
}

/* ---- params "a=1,b=2" ---------------------------------------------------------- */

/* The value of item name in params into *v (text, malloc'd); 0, or -1 when
 * absent. */
static int param_get(const char *params, const char *name, char **v)
{
	size_t n = strlen(name);
	const char *p = params;
	while (p && *p) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		if (len > n && strncmp(p, name, n) == 0 && p[n] == '=') {
			*v = strndup(p + n + 1, len - n - 1);
			return *v ? 0 : -1;
		}
		p = end ? end + 1 : NULL;
	}
	return -1;
}

/* params without the item name (malloc'd). */
static char *param_drop(const char *params, const char *name)
{
	size_t n = strlen(name), w = 0;
	char *out = malloc(strlen(params) + 1);
	const char *p = params;
	if (!out)
		return NULL;
	while (p && *p) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		if (!(len > n && strncmp(p, name, n) == 0 && p[n] == '=')) {
			if (w)
				out[w++] = ',';
			memcpy(out + w, p, len);
			w += len;
		}
		p = end ? end + 1 : NULL;
	}
	out[w] = '\0';
	return out;
}

/* ---- loading ------------------------------------------------------------------------ */

struct row {
	int64_t result_id, idx;
	char *params;
	int status, n_samples;
};

static void rows_free(struct row *rows, int n)
{
	for (int i = 0; i < n; i++)
		free(rows[i].params);
	free(rows);
}

/* The kernel with the most distinct params in the run into *out. */
static enum fa_rc pick_kernel(struct fa_store *s, int64_t run_id, char **out, struct fa_err *err)
{
	sqlite3_stmt *st = NULL;
	enum fa_rc rc = FA_OK;
	if (sqlite3_prepare_v2(fa_store_db(s),
			       "SELECT kernel, COUNT(DISTINCT params) AS n FROM results WHERE run_id = ?"
			       " GROUP BY kernel ORDER BY n DESC, kernel LIMIT 1",
			       -1, &st, NULL) != SQLITE_OK)
		return db_fail(s, err);
	sqlite3_bind_int64(st, 1, run_id);
	int src = sqlite3_step(st);
	if (src == SQLITE_ROW && sqlite3_column_int(st, 1) >= 2) {
		if (!(*out = col_text(st, 0)))
			rc = nomem(err);
	} else if (src == SQLITE_ROW || src == SQLITE_DONE) {
		rc = fa_err_set(err, FA_ERR_INPUT,
				"run %" PRId64 " has no kernel run with more than one set of params; "
				"sweep one with fabench run --param KERNEL.NAME=V1,V2",
				run_id);
	} else {
		rc = db_fail(s, err);
	}
	sqlite3_finalize(st);
	return rc;
}

static enum fa_rc load_run_row(struct fa_store *s, struct fa_tune *t, struct fa_err *err)
{
	sqlite3_stmt *st = NULL;
	enum fa_rc rc = FA_OK;
	if (sqlite3_prepare_v2(fa_store_db(s),
			       "SELECT label, suite_name, backend, device_name, status FROM runs "
			       "WHERE id = ?",
			       -1, &st, NULL) != SQLITE_OK)
		return db_fail(s, err);
	sqlite3_bind_int64(st, 1, t->run_id);
	int src = sqlite3_step(st);
	if (src == SQLITE_ROW) {
		t->label = col_text(st, 0);
		t->suite = col_text(st, 1);
		t->backend = col_text(st, 2);
		t->device = col_text(st, 3);
		t->status = col_text(st, 4);
		if (!t->label || !t->suite || !t->backend || !t->device || !t->status)
			rc = nomem(err);
	} else if (src == SQLITE_DONE) {
		rc = fa_err_set(err, FA_ERR_NOT_FOUND, "no run %" PRId64 " in '%s'", t->run_id,
				fa_store_path(s));
	} else {
		rc = db_fail(s, err);
	}
	sqlite3_finalize(st);
	return rc;
}

/* The kernel's results in the run, by case idx then params. */
static enum fa_rc load_rows(struct fa_store *s, struct fa_tune *t, struct row **out, int *n_out,
			    struct fa_err *err)
{
	sqlite3_stmt *st = NULL;
	struct row *rows = NULL;
	int n = 0, cap = 0, src;
	enum fa_rc rc = FA_OK;
	*out = NULL;
	*n_out = 0;
	if (sqlite3_prepare_v2(fa_store_db(s),
			       "SELECT r.id, c.idx, r.params, r.status, r.n_samples FROM results r"
			       " JOIN cases c ON c.id = r.case_id WHERE r.run_id = ? AND r.kernel = ?"
			       " ORDER BY c.idx, r.params, r.id",
			       -1, &st, NULL) != SQLITE_OK)
		return db_fail(s, err);
	sqlite3_bind_int64(st, 1, t->run_id);
	sqlite3_bind_text(st, 2, t->kernel, -1, SQLITE_STATIC);
	while ((src = sqlite3_step(st)) == SQLITE_ROW) {
		if (n == cap) {
			int ncap = cap ? 2 * cap : 64;
			struct row *nr = realloc(rows, (size_t)ncap * sizeof *nr);
			if (!nr) {
				rc = nomem(err);
				goto out;
			}
			rows = nr;
			cap = ncap;
		}
		struct row *r = &rows[n];
		r->result_id = sqlite3_column_int64(st, 0);
		r->idx = sqlite3_column_int64(st, 1);
		r->params = col_text(st, 2);
		r->status = fa_status_parse((const char *)sqlite3_column_text(st, 3));
		r->n_samples = sqlite3_column_int(st, 4);
		if (!r->params) {
			rc = nomem(err);
			goto out;
		}
		n++;
	}
	if (src != SQLITE_DONE)
		rc = db_fail(s, err);
out:
	sqlite3_finalize(st);
	if (rc != FA_OK) {
		rows_free(rows, n);
		return rc;
	}
	*out = rows;
	*n_out = n;
	return FA_OK;
}

/* The names of the params in "a=1,b=2" that differ between rows, into buf
 * ("a, b"); returns how many. */
static int varying_params(const struct row *rows, int n, char *buf, size_t size)
{
	int count = 0;
	buf[0] = '\0';
	const char *p = rows[0].params;
	while (*p) {
		const char *eq = strchr(p, '='), *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		if (eq && (!end || eq < end)) {
			char name[128], *v0 = NULL;
			snprintf(name, sizeof name, "%.*s", (int)(eq - p), p);
			param_get(rows[0].params, name, &v0);
			for (int i = 1; i < n; i++) {
				char *v = NULL;
				int differs = param_get(rows[i].params, name, &v) != 0 || !v0 ||
					      strcmp(v, v0) != 0;
				free(v);
				if (differs) {
					size_t used = strlen(buf);
					snprintf(buf + used, size - used, "%s%s", count ? ", " : "", name);
					count++;
					break;
				}
			}
			free(v0);
		}
		p += len;
		if (*p == ',')
			p++;
	}
	return count;
}

static int cmp_i32(const void *a, const void *b)
{
	int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
	return (x > y) - (x < y);
}

static int value_index(const struct fa_tune *t, int32_t v)
{
	for (int i = 0; i < t->n_values; i++)
		if (t->values[i] == v)
			return i;
	return -1;
}

/* The integer value of text, whole; 0, -1 when it is not an integer, -2
 * when it is one out of int32_t's range (a tunable's). */
static int parse_i32(const char *text, int32_t *v)
{
	char *end;
	errno = 0;
	long long x = strtoll(text, &end, 10);
	if (end == text || *end)
		return -1;
	if (errno == ERANGE || x < INT32_MIN || x > INT32_MAX)
		return -2;
	*v = (int32_t)x;
	return 0;
}

static enum fa_rc load_samples(struct fa_store *s, int64_t result_id, double **out, int32_t *n_out,
			       struct fa_err *err)
{
	sqlite3_stmt *st = NULL;
	double *x = NULL;
	int n = 0, cap = 0, src;
	*out = NULL;
	*n_out = 0;
	if (sqlite3_prepare_v2(fa_store_db(s),
			       "SELECT time_ms FROM samples WHERE result_id = ? ORDER BY seq", -1, &st,
			       NULL) != SQLITE_OK)
		return db_fail(s, err);
	sqlite3_bind_int64(st, 1, result_id);
	while ((src = sqlite3_step(st)) == SQLITE_ROW) {
		double v = sqlite3_column_double(st, 0);
		if (!(isfinite(v) && v > 0))
			continue; /* not a time: the tests cannot take it */
		if (n == cap) {
			int ncap = cap ? 2 * cap : 16;
			double *nx = realloc(x, (size_t)ncap * sizeof *nx);
			if (!nx) {
				free(x);
				sqlite3_finalize(st);
				return nomem(err);
			}
			x = nx;
			cap = ncap;
		}
		x[n++] = v;
	}
	sqlite3_finalize(st);
	if (src != SQLITE_DONE) {
		free(x);
		return db_fail(s, err);
	}
	*out = x;
	*n_out = n;
	return FA_OK;
}

/* Reads the cases of the run that have a result of the kernel (rows sorted
 * by idx) and applies --where. The case as expressions see it (problem,
 * input, scale, depth, pass) comes from the reader, as the heatmap's does, so
 * --where, --rule and --by read every name the suite language has; the key
 * and the labels from here. */
static enum fa_rc load_cases(struct fa_store *s, struct fa_tune *t, const struct row *rows,
			     int n_rows, const struct fa_expr *where, struct fa_err *err)
{
	sqlite3_stmt *st = NULL;
	struct fa_arena arena = {0};
	struct fa_reader_case *rcs = NULL;
	enum fa_rc rc = FA_OK;
	int distinct = 0, n_rcs = 0, j = 0;
	for (int i = 0; i < n_rows; i++)
		if (i == 0 || rows[i].idx != rows[i - 1].idx)
			distinct++;
	t->cases = calloc((size_t)distinct + 1, sizeof *t->cases);
	if (!t->cases)
		return nomem(err);
	if ((rc = fa_reader_cases(s, t->run_id, &arena, &rcs, &n_rcs, err)) != FA_OK)
		return rc;
	if (sqlite3_prepare_v2(fa_store_db(s),
			       "SELECT key, id FROM cases WHERE run_id = ? AND idx = ?", -1, &st,
			       NULL) != SQLITE_OK) {
		fa_arena_free(&arena);
		return db_fail(s, err);
	}
	for (int i = 0; i < n_rows && rc == FA_OK; i++) {
		if (i > 0 && rows[i].idx == rows[i - 1].idx)
			continue;
		/* both in idx order */
		while (j < n_rcs && rcs[j].idx < rows[i].idx)
			j++;
		sqlite3_reset(st);
		sqlite3_bind_int64(st, 1, t->run_id);
		sqlite3_bind_int64(st, 2, rows[i].idx);
		if (j == n_rcs || rcs[j].idx != rows[i].idx || sqlite3_step(st) != SQLITE_ROW) {
			rc = db_fail(s, err);
			break;
		}
		struct fa_tune_case *tc = &t->cases[t->n_cases];
		tc->idx = rows[i].idx;
		tc->c = rcs[j].c;
		if (!(tc->key = col_text(st, 0))) {
			rc = nomem(err);
			break;
		}
		if (where && !fa_expr_eval(where, &tc->c)) {
			free(tc->key);
			memset(tc, 0, sizeof *tc);
			continue;
		}
		/* the models that share the case, for the reader */
		{
			struct fa_case_tag *tags = NULL;
			int32_t nt = 0;
			size_t len = 1;
			int64_t case_id = sqlite3_column_int64(st, 1);
			if ((rc = fa_store_case_tags(s, case_id, &tags, &nt, err)) != FA_OK)
				break;
			for (int32_t k = 0; k < nt; k++)
				len += strlen(tags[k].name) + 2;
			if (!(tc->models = malloc(len))) {
				fa_store_tags_free(tags, nt);
				rc = nomem(err);
				break;
			}
			tc->models[0] = '\0';
			for (int32_t k = 0; k < nt; k++) {
				if (k)
					strcat(tc->models, ", ");
				strcat(tc->models, tags[k].name);
			}
			fa_store_tags_free(tags, nt);
			t->any_models |= nt > 0;
		}
		t->n_cases++;
	}
	sqlite3_finalize(st);
	fa_arena_free(&arena);
	return rc;
}

static struct fa_tune_case *case_of(struct fa_tune *t, int64_t idx)
{
	int lo = 0, hi = t->n_cases - 1;
	while (lo <= hi) {
		int mid = (lo + hi) / 2;
		if (t->cases[mid].idx == idx)
			return &t->cases[mid];
		if (t->cases[mid].idx < idx)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return NULL;
}

/* The verdict of value v against the case's best (v's samples as head);
 * -1 when either has no samples. */
static enum fa_rc verdict_vs_best(const struct fa_tune *t, const struct fa_tune_case *tc, int v,
				  int *verdict, struct fa_err *err)
{
	struct fa_perf_cfg cfg;
	struct fa_perf_result r;
	*verdict = -1;
	if (tc->best < 0 || v < 0 || !tc->n_samples[v] || !tc->n_samples[tc->best])
		return FA_OK;
	if (v == tc->best) {
		*verdict = FA_PERF_SAME;
		return FA_OK;
	}
	cfg.alpha = t->alpha;
	cfg.min_effect = t->min_effect;
	cfg.resamples = FA_STATS_BOOT_RESAMPLES;
	cfg.level = FA_STATS_BOOT_LEVEL;
	/* independent resampling per case and value, the same on every read */
	cfg.seed = FA_STATS_SEED ^ ((uint64_t)tc->idx * 0x9e3779b97f4a7c15ull) ^ (uint64_t)v;
	enum fa_rc rc = fa_stats_verdict(tc->samples[tc->best], tc->n_samples[tc->best],
					 tc->samples[v], tc->n_samples[v], &cfg, &r, err);
	if (rc == FA_OK)
		*verdict = r.verdict;
	return rc;
}

/* ---- rules ----------------------------------------------------------------------------- */

static enum fa_rc rule_alloc(struct fa_tune *t, struct fa_tune_rule *r, const char *name,
			     const char *text, struct fa_err *err)
{
	size_t n = (size_t)t->n_cases + 1;
	r->name = strdup(name);
	r->text = strdup(text);
	r->choice = calloc(n, sizeof *r->choice);
	r->choice_value = calloc(n, sizeof *r->choice_value);
	r->loss = calloc(n, sizeof *r->loss);
	r->verdict = calloc(n, sizeof *r->verdict);
	if (!r->name || !r->text || !r->choice || !r->choice_value || !r->loss || !r->verdict)
		return nomem(err);
	return FA_OK;
}

/* Fills the per-case losses and the summary of r from r->choice_value. */
static enum fa_rc rule_score(struct fa_tune *t, struct fa_tune_rule *r, struct fa_err *err)
{
	double log_sum = 0;
	r->worst_loss = NAN;
	r->worst_case = -1;
	for (int i = 0; i < t->n_cases; i++) {
		struct fa_tune_case *tc = &t->cases[i];
		double v = r->choice_value[i];
		int k = -1;
		if (isfinite(v) && v == floor(v) && fabs(v) < 2147483648.0)
			k = value_index(t, (int32_t)v);
		if (k >= 0 && !isfinite(tc->median_ms[k]))
			k = -1;
		r->choice[i] = k;
		r->loss[i] = NAN;
		r->verdict[i] = -1;
		if (tc->best < 0)
			continue;
		if (k < 0) {
			r->n_missing++;
			continue;
		}
		r->loss[i] = tc->median_ms[k] / tc->median_ms[tc->best] - 1;
		enum fa_rc rc = verdict_vs_best(t, tc, k, &r->verdict[i], err);
		if (rc != FA_OK)
			return rc;
		log_sum += log1p(r->loss[i]);
		r->n_used++;
		if (r->worst_case < 0 || r->loss[i] > r->worst_loss) {
			r->worst_loss = r->loss[i];
			r->worst_case = i;
		}
		if (r->loss[i] > t->loss) {
			r->n_over++;
			if (r->verdict[i] == FA_PERF_SLOWER)
				r->n_slower++;
		}
	}
	r->geomean_loss = r->n_used ? expm1(log_sum / r->n_used) : NAN;
	if (r->worst_case >= 0 && !(r->worst_loss > 0))
		r->worst_case = -1; /* no case loses anything: none is the worst */
	return FA_OK;
}

/* A --rule (or the like: `option`) parsed, its errors prefixed with the
 * option and the text: "--rule 'TEXT': unknown name ...". */
static enum fa_rc parse_rule_expr(const char *text, const char *option, struct fa_expr **e,
				  struct fa_err *err)
{
	/* errors point into the text as file "--rule", as --where's do */
	const struct fa_loc loc = {option, 1, 1};
	enum fa_rc rc = fa_expr_parse_number(text, &loc, e, err);
	if (rc != FA_OK)
		fa_err_set_text(err, text);
	return rc;
}

static enum fa_rc add_rule_expr(struct fa_tune *t, const char *name, const char *text,
				const char *option, struct fa_err *err)
{
	struct fa_expr *e = NULL;
	struct fa_tune_rule *r = &t->rules[t->n_rules];
	enum fa_rc rc = parse_rule_expr(text, option, &e, err);
	if (rc != FA_OK)
		return rc;
	t->n_rules++;
	rc = rule_alloc(t, r, name, text, err);
	for (int i = 0; rc == FA_OK && i < t->n_cases; i++)
		r->choice_value[i] = fa_expr_number(e, &t->cases[i].c);
	fa_expr_free(e);
	return rc == FA_OK ? rule_score(t, r, err) : rc;
}

/* --by's comma-separated expressions, parsed into ex[0..*n) (at most
 * FA_TUNE_MAX_BY) with their trimmed texts into names[] when names is not
 * NULL (strdup'ed; the caller frees them, and the expressions, either way). */
static enum fa_rc parse_by(const char *by, struct fa_expr **ex, char **names, int *n,
			   struct fa_err *err)
{
	enum fa_rc rc = FA_OK;
	char *copy, *save = NULL;
	*n = 0;
	/* no item is empty (or blank), as with --param's values: each holds one */
	if (fa_list_check_items("--by", by, by, "a case parameter or an expression", err) != FA_OK)
		return FA_ERR_INPUT;
	if (!(copy = strdup(by)))
		return nomem(err);
	int col = 1;
	(void)save;
	for (char *tok = copy, *next; tok; tok = next) {
		next = strchr(tok, ',');
		if (next)
			*next++ = '\0';
		/* the column of tok in --by's text, for messages */
		col = (int)(tok - copy) + 1;
		while (*tok == ' ') {
			tok++;
			col++;
		}
		char *end = tok + strlen(tok);
		while (end > tok && end[-1] == ' ')
			*--end = '\0';
		if (*n == FA_TUNE_MAX_BY) {
			rc = fa_err_set(err, FA_ERR_INPUT, "--by '%s': more than %d expressions at column %d",
					by, FA_TUNE_MAX_BY, col);
			break;
		}
		struct fa_loc loc = {"--by", 1, col};
		rc = fa_expr_parse_number(tok, &loc, &ex[*n], err);
		if (rc != FA_OK) {
			fa_err_set_text(err, by);
			break;
		}
		if (names && !(names[*n] = strdup(tok))) {
			fa_expr_free(ex[*n]);
			ex[*n] = NULL;
			rc = nomem(err);
			break;
		}
		++*n;
	}
	free(copy);
	return rc;
}

enum fa_rc fa_tune_check_opts(const struct fa_tune_opts *o, struct fa_err *err)
{
	enum fa_rc rc = FA_OK;
	for (int i = 0; rc == FA_OK && i < o->n_rules; i++) {
		struct fa_expr *e = NULL;
		rc = parse_rule_expr(o->rules[i], "--rule", &e, err);
		fa_expr_free(e);
	}
	if (rc == FA_OK && o->by) {
		struct fa_expr *ex[FA_TUNE_MAX_BY] = {0};
		int n = 0;
		rc = parse_by(o->by, ex, NULL, &n, err);
		for (int f = 0; f < FA_TUNE_MAX_BY; f++)
			fa_expr_free(ex[f]);
	}
	return rc;
}

/* ---- the fit ----------------------------------------------------------------------------- */

struct node {
	int leaf;           /* 1: value; 0: split */
	int value;          /* leaf: index into values */
	int f;              /* split: the --by index */
	double thr;         /* split: x >= thr goes right */
	struct node *l, *r;
	double cost;
};

static void node_free(struct node *n)
{
	if (!n)
		return;
	node_free(n->l);
	node_free(n->r);
	free(n);
}

struct fit {
	struct fa_tune *t;
	double **lr;        /* lr[case][value]: ln(median / best median), INFINITY untimed */
	double gain;        /* the least gain a split must bring */
	int oom;
};

/* The best leaf for the cases set[0..n): its value and cost. */
static double leaf_cost(const struct fit *ft, const int *set, int n, int *value)
{
	const struct fa_tune *t = ft->t;
	double best = INFINITY;
	*value = t->auto_idx >= 0 ? t->auto_idx : 0;
	/* the built-in value first, so it wins exact ties */
	for (int pass = 0; pass < 2; pass++)
		for (int v = 0; v < t->n_values; v++) {
			if ((pass == 0) != (v == t->auto_idx))
				continue;
			double c = 0;
			for (int i = 0; i < n && c < INFINITY; i++)
				c += ft->lr[set[i]][v];
			if (c < best) {
				best = c;
				*value = v;
			}
		}
	return best;
}

static int count_leaves(const struct node *n)
{
	return n->leaf ? 1 : count_leaves(n->r) + count_leaves(n->l);
}

/* Costs closer than this are equal: sums of logs of the same ratios taken
 * in another order differ in the last bits. */
#define FIT_EPS 1e-9

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* The tree of least cost of depth <= depth over set[0..n) (NULL when out of
 * memory: ft->oom). A split replaces the leaf only when it gains ft->gain. */
static struct node *grow(struct fit *ft, const int *set, int n, int depth)
{
	struct fa_tune *t = ft->t;
	struct node *leaf = calloc(1, sizeof *leaf), *best = NULL;
	int *left = NULL, *right = NULL;
	double *xs = NULL;
	if (!leaf) {
		ft->oom = 1;
		return NULL;
	}
	leaf->leaf = 1;
	leaf->cost = leaf_cost(ft, set, n, &leaf->value);
	if (depth == 0 || n < 2)
		return leaf;
	left = malloc((size_t)n * sizeof *left);
	right = malloc((size_t)n * sizeof *right);
	xs = malloc((size_t)n * sizeof *xs);
	if (!left || !right || !xs) {
		ft->oom = 1;
		goto out;
	}
	for (int f = 0; f < t->n_by && !ft->oom; f++) {
		/* the thresholds: the finite values of x above its least, and its
		 * least too when some x is NaN (undefined: x >= t is false, so
		 * such a case goes left of every threshold). NaN stays out of the
		 * sort, which it would scramble (it compares equal to everything). */
		int nx = 0;
		for (int i = 0; i < n; i++)
			if (!isnan(t->cases[set[i]].x[f]))
				xs[nx++] = t->cases[set[i]].x[f];
		qsort(xs, (size_t)nx, sizeof *xs, cmp_double);
		for (int j = nx < n ? 0 : 1; j < nx && !ft->oom; j++) {
			if ((j > 0 && !(xs[j] > xs[j - 1])) || !isfinite(xs[j]))
				continue; /* the same threshold again, or infinite */
			double thr = xs[j];
			int nl = 0, nr = 0;
			for (int i = 0; i < n; i++) {
				if (t->cases[set[i]].x[f] >= thr)
					right[nr++] = set[i];
				else
					left[nl++] = set[i];
			}
			if (!nl || !nr)
				continue;
			struct node *l = grow(ft, left, nl, depth - 1);
			struct node *r = l ? grow(ft, right, nr, depth - 1) : NULL;
			struct node *sp = r ? calloc(1, sizeof *sp) : NULL;
			if (!sp) {
				ft->oom = 1;
				node_free(l);
				node_free(r);
				break;
			}
			sp->f = f;
			sp->thr = thr;
			sp->l = l;
			sp->r = r;
			sp->cost = l->cost + r->cost;
			/* equal costs (within rounding): the tree with fewer leaves */
			int better = !best || sp->cost < best->cost - FIT_EPS ||
				     (sp->cost <= best->cost + FIT_EPS &&
				      count_leaves(sp) < count_leaves(best));
			if (sp->cost < leaf->cost - ft->gain && better) {
				node_free(best);
				best = sp;
			} else {
				node_free(sp);
			}
		}
	}
out:
	free(left);
	free(right);
	free(xs);
	if (best) {
		node_free(leaf);
		return best;
	}
	return leaf;
}

/* The tree as an expression into buf (grows it): "x >= t ? R : L". */
static void tree_text(const struct fa_tune *t, const struct node *n, int top, char **buf,
		      size_t *len, size_t *cap)
{
	char piece[512], num[64];
	if (n->leaf) {
		snprintf(piece, sizeof piece, "%" PRId32, t->values[n->value]);
	} else {
		const char *x = t->by[n->f];
		int plain = 1;
		for (const char *p = x; *p; p++)
			if (!(isalnum((unsigned char)*p) || *p == '_'))
				plain = 0;
		if (n->thr == floor(n->thr) && fabs(n->thr) < 1e15) {
			long long v = (long long)n->thr;
			if (v >= 1024 && v % 1024 == 0)
				snprintf(num, sizeof num, "%lldk", v / 1024);
			else
				snprintf(num, sizeof num, "%lld", v);
		} else {
			fa_table_fmt_real(n->thr, num, sizeof num);
		}
		snprintf(piece, sizeof piece, "%s%s%s%s >= %s ? ", top ? "" : "(", plain ? "" : "(",
			 x, plain ? "" : ")", num);
	}
	size_t pl = strlen(piece);
	if (*len + pl + 8 > *cap) {
		size_t ncap = (*cap + pl + 8) * 2;
		char *nb = realloc(*buf, ncap);
		if (!nb)
			return;
		*buf = nb;
		*cap = ncap;
	}
	memcpy(*buf + *len, piece, pl + 1);
	*len += pl;
	if (n->leaf)
		return;
	tree_text(t, n->r, 0, buf, len, cap);
	if (*len + 8 > *cap)
		return;
	memcpy(*buf + *len, " : ", 4);
	*len += 3;
	tree_text(t, n->l, 0, buf, len, cap);
	if (!top && *len + 2 <= *cap) {
		(*buf)[(*len)++] = ')';
		(*buf)[*len] = '\0';
	}
}

/* The leaves as boxes, right (x >= thr) before left, as tree_text reads. */
static void collect_leaves(struct fa_tune *t, const struct node *n, double *lo, double *hi,
			   int *k)
{
	if (n->leaf) {
		struct fa_tune_leaf *lf = &t->leaves[(*k)++];
		memcpy(lf->lo, lo, (size_t)t->n_by * sizeof *lo);
		memcpy(lf->hi, hi, (size_t)t->n_by * sizeof *hi);
		lf->value = n->value;
		return;
	}
	double save_lo = lo[n->f], save_hi = hi[n->f];
	if (n->thr > lo[n->f])
		lo[n->f] = n->thr;
	collect_leaves(t, n->r, lo, hi, k);
	lo[n->f] = save_lo;
	if (n->thr < hi[n->f])
		hi[n->f] = n->thr;
	collect_leaves(t, n->l, lo, hi, k);
	hi[n->f] = save_hi;
}

static enum fa_rc fit_rule(struct fa_tune *t, const char *by, struct fa_err *err)
{
	enum fa_rc rc = FA_OK;
	struct fa_expr *ex[FA_TUNE_MAX_BY] = {0};
	struct fit ft = {.t = t, .gain = log1p(t->min_effect)};
	int *set = NULL, n = 0;
	struct node *root = NULL;
	t->by = calloc(FA_TUNE_MAX_BY, sizeof *t->by);
	if (!t->by)
		return nomem(err);
	rc = parse_by(by, ex, t->by, &t->n_by, err);
	if (rc != FA_OK)
		goto out;
	for (int i = 0; i < t->n_cases; i++) {
		t->cases[i].x = calloc((size_t)t->n_by, sizeof *t->cases[i].x);
		if (!t->cases[i].x) {
			rc = nomem(err);
			goto out;
		}
		for (int f = 0; f < t->n_by; f++)
			t->cases[i].x[f] = fa_expr_number(ex[f], &t->cases[i].c);
	}
	ft.lr = calloc((size_t)t->n_cases + 1, sizeof *ft.lr);
	set = calloc((size_t)t->n_cases + 1, sizeof *set);
	if (!ft.lr || !set) {
		rc = nomem(err);
		goto out;
	}
	for (int i = 0; i < t->n_cases; i++) {
		struct fa_tune_case *tc = &t->cases[i];
		if (tc->best < 0)
			continue;
		if (!(ft.lr[i] = calloc((size_t)t->n_values, sizeof *ft.lr[i]))) {
			rc = nomem(err);
			goto out;
		}
		for (int v = 0; v < t->n_values; v++)
			ft.lr[i][v] = isfinite(tc->median_ms[v])
					      ? log(tc->median_ms[v] / tc->median_ms[tc->best])
					      : INFINITY;
		set[n++] = i;
	}
	root = grow(&ft, set, n, t->depth);
	if (!root || ft.oom) {
		rc = nomem(err);
		goto out;
	}
	/* the rule as text, and as boxes */
	size_t len = 0, cap = 256;
	char *text = malloc(cap);
	if (!text) {
		rc = nomem(err);
		goto out;
	}
	text[0] = '\0';
	tree_text(t, root, 1, &text, &len, &cap);
	t->n_leaves = count_leaves(root);
	t->leaves = calloc((size_t)t->n_leaves, sizeof *t->leaves);
	double lo[FA_TUNE_MAX_BY], hi[FA_TUNE_MAX_BY];
	for (int f = 0; f < t->n_by; f++) {
		lo[f] = -INFINITY;
		hi[f] = INFINITY;
	}
	if (!t->leaves) {
		free(text);
		rc = nomem(err);
		goto out;
	}
	for (int k = 0; k < t->n_leaves; k++) {
		t->leaves[k].lo = calloc((size_t)t->n_by, sizeof(double));
		t->leaves[k].hi = calloc((size_t)t->n_by, sizeof(double));
		if (!t->leaves[k].lo || !t->leaves[k].hi) {
			free(text);
			rc = nomem(err);
			goto out;
		}
	}
	int k = 0;
	collect_leaves(t, root, lo, hi, &k);
	/* scored by parsing its own text: what is printed is what is measured */
	t->fitted = t->n_rules;
	rc = add_rule_expr(t, "fitted", text, "the fitted rule", err);
	free(text);
out:
	node_free(root);
	if (ft.lr)
		for (int i = 0; i < t->n_cases; i++)
			free(ft.lr[i]);
	free(ft.lr);
	free(set);
	for (int f = 0; f < FA_TUNE_MAX_BY; f++)
		fa_expr_free(ex[f]);
	return rc;
}

/* ---- build ------------------------------------------------------------------------------- */

enum fa_rc fa_tune_build(struct fa_store *s, const struct fa_tune_opts *o, struct fa_tune *t,
			 struct fa_err *err)
{
	struct row *rows = NULL;
	int n_rows = 0;
	struct fa_expr *where = NULL;
	enum fa_rc rc;
	char names[512];

	memset(t, 0, sizeof *t);
	t->run_id = o->run_id;
	t->auto_idx = -1;
	t->fitted = -1;
	t->depth = o->depth;
	if (o->where && !(t->where = strdup(o->where)))
		return nomem(err);
	t->loss = o->loss;
	t->alpha = o->perf.alpha;
	t->min_effect = o->perf.min_effect;
	if (o->depth < 1 || o->depth > FA_TUNE_MAX_DEPTH)
		return fa_err_set(err, FA_ERR_USAGE, "--depth %d must be 1 to %d", o->depth,
				  FA_TUNE_MAX_DEPTH);
	if (o->where) {
		static const struct fa_loc where_loc = {"--where", 1, 1};
		if ((rc = fa_expr_parse(o->where, &where_loc, &where, err)) != FA_OK) {
			fa_err_set_text(err, o->where);
			return rc;
		}
	}
	if ((rc = load_run_row(s, t, err)) != FA_OK)
		goto out;
	if (o->kernel) {
		if (!(t->kernel = strdup(o->kernel))) {
			rc = nomem(err);
			goto out;
		}
	} else if ((rc = pick_kernel(s, t->run_id, &t->kernel, err)) != FA_OK) {
		goto out;
	}
	if ((rc = load_rows(s, t, &rows, &n_rows, err)) != FA_OK)
		goto out;
	if (n_rows == 0) {
		rc = fa_err_set(err, FA_ERR_NOT_FOUND, "no results of kernel '%s' in run %" PRId64,
				t->kernel, t->run_id);
		goto out;
	}
	int n_vary = varying_params(rows, n_rows, names, sizeof names);
	if (o->param) {
		char *v = NULL;
		if (param_get(rows[0].params, o->param, &v) != 0) {
			rc = fa_err_set(err, FA_ERR_NOT_FOUND,
					"kernel '%s' has no param '%s' in run %" PRId64 " (its params: '%s')",
					t->kernel, o->param, t->run_id, rows[0].params);
			goto out;
		}
		free(v);
		if (!(t->param = strdup(o->param))) {
			rc = nomem(err);
			goto out;
		}
		if (n_vary > 1 || (n_vary == 1 && strcmp(names, o->param) != 0)) {
			rc = fa_err_set(err, FA_ERR_INPUT,
					"params of '%s' other than '%s' vary in run %" PRId64
					" (%s): tune one param at a time, from a sweep of '%s' alone "
					"with the others fixed (fabench run --param %s.%s=V1,V2,... "
					"--param %s.NAME=V)",
					t->kernel, o->param, t->run_id, names, o->param, t->kernel,
					o->param, t->kernel);
			goto out;
		}
	} else {
		if (n_vary != 1) {
			rc = fa_err_set(err, FA_ERR_INPUT,
					n_vary == 0 ? "kernel '%s' ran with one set of params in run %" PRId64
						      " ('%s'): nothing to tune"
						    : "several params of '%s' vary in run %" PRId64
						      " (%s): tune one param at a time, from a sweep of "
						      "one with the others fixed",
					t->kernel, t->run_id, n_vary == 0 ? rows[0].params : names);
			goto out;
		}
		if (!(t->param = strdup(names))) {
			rc = nomem(err);
			goto out;
		}
	}
	if (!(t->fixed = param_drop(rows[0].params, t->param))) {
		rc = nomem(err);
		goto out;
	}
	/* the values */
	t->values = calloc((size_t)n_rows, sizeof *t->values);
	t->value_params = calloc((size_t)n_rows, sizeof *t->value_params);
	if (!t->values || !t->value_params) {
		rc = nomem(err);
		goto out;
	}
	for (int i = 0; i < n_rows; i++) {
		char *v = NULL;
		int32_t x;
		int bad = param_get(rows[i].params, t->param, &v) != 0 ? -1 : parse_i32(v, &x);
		if (bad) {
			rc = fa_err_set(err, FA_ERR_INPUT,
					bad == -2 ? "param '%s' of '%s' is '%s' in run %" PRId64
						    ", out of range: a tunable is an integer from "
						    "-2147483648 to 2147483647"
						  : "param '%s' of '%s' is '%s' in run %" PRId64
						    ", not an integer",
					t->param, t->kernel, v ? v : "", t->run_id);
			free(v);
			goto out;
		}
		free(v);
		if (value_index(t, x) < 0)
			t->values[t->n_values++] = x;
	}
	qsort(t->values, (size_t)t->n_values, sizeof *t->values, cmp_i32);
	for (int i = 0; i < n_rows; i++) {
		char *v = NULL;
		int32_t x = 0;
		param_get(rows[i].params, t->param, &v);
		parse_i32(v, &x);
		free(v);
		int k = value_index(t, x);
		if (!t->value_params[k] && !(t->value_params[k] = strdup(rows[i].params))) {
			rc = nomem(err);
			goto out;
		}
	}
	t->has_auto = o->has_auto;
	t->auto_value = o->auto_value;
	if (t->has_auto)
		t->auto_idx = value_index(t, t->auto_value);

	/* the cases, their times and samples */
	if ((rc = load_cases(s, t, rows, n_rows, where, err)) != FA_OK)
		goto out;
	if (t->n_cases == 0) {
		rc = fa_err_set(err, FA_ERR_INPUT, "--where '%s' keeps none of the %s cases of run %" PRId64,
				o->where ? o->where : "", t->kernel, t->run_id);
		goto out;
	}
	for (int i = 0; i < t->n_cases; i++) {
		struct fa_tune_case *tc = &t->cases[i];
		size_t nv = (size_t)t->n_values;
		tc->median_ms = malloc(nv * sizeof *tc->median_ms);
		tc->samples = calloc(nv, sizeof *tc->samples);
		tc->n_samples = calloc(nv, sizeof *tc->n_samples);
		tc->tie = calloc(nv, sizeof *tc->tie);
		if (!tc->median_ms || !tc->samples || !tc->n_samples || !tc->tie) {
			rc = nomem(err);
			goto out;
		}
		for (size_t v = 0; v < nv; v++)
			tc->median_ms[v] = NAN;
		tc->best = -1;
		tc->auto_verdict = -1;
		tc->speedup = NAN;
	}
	for (int i = 0; i < n_rows; i++) {
		struct fa_tune_case *tc = case_of(t, rows[i].idx);
		char *v = NULL;
		int32_t x = 0;
		if (!tc || rows[i].status != FA_STATUS_PASS || rows[i].n_samples <= 0)
			continue;
		param_get(rows[i].params, t->param, &v);
		parse_i32(v, &x);
		free(v);
		int k = value_index(t, x);
		if (tc->samples[k])
			continue; /* a second result of one value (cannot be stored twice) */
		if ((rc = load_samples(s, rows[i].result_id, &tc->samples[k], &tc->n_samples[k],
				       err)) != FA_OK)
			goto out;
		if (tc->n_samples[k] > 0 &&
		    (rc = fa_stats_median(tc->samples[k], tc->n_samples[k], &tc->median_ms[k], err)) !=
			    FA_OK)
			goto out;
	}
	for (int i = 0; i < t->n_cases; i++) {
		struct fa_tune_case *tc = &t->cases[i];
		for (int v = 0; v < t->n_values; v++)
			if (isfinite(tc->median_ms[v]) &&
			    (tc->best < 0 || tc->median_ms[v] < tc->median_ms[tc->best]))
				tc->best = v;
		if (tc->best < 0)
			continue;
		t->n_timed++;
		for (int v = 0; v < t->n_values; v++) {
			int verdict;
			if (!isfinite(tc->median_ms[v]))
				continue;
			if ((rc = verdict_vs_best(t, tc, v, &verdict, err)) != FA_OK)
				goto out;
			tc->tie[v] = verdict != FA_PERF_SLOWER;
		}
		if (t->auto_idx >= 0 && isfinite(tc->median_ms[t->auto_idx])) {
			tc->speedup = tc->median_ms[t->auto_idx] / tc->median_ms[tc->best];
			/* the verdict of auto against the best: slower, or tied */
			if ((rc = verdict_vs_best(t, tc, t->auto_idx, &tc->auto_verdict, err)) != FA_OK)
				goto out;
		}
	}

	/* the rules: auto, --rule, fitted */
	t->rules = calloc(FA_TUNE_MAX_RULES + 2, sizeof *t->rules);
	if (!t->rules) {
		rc = nomem(err);
		goto out;
	}
	if (t->has_auto) {
		char text[32];
		snprintf(text, sizeof text, "%" PRId32, t->auto_value);
		if ((rc = add_rule_expr(t, "auto", text, "--auto", err)) != FA_OK)
			goto out;
	}
	if (o->n_rules > FA_TUNE_MAX_RULES) {
		rc = fa_err_set(err, FA_ERR_USAGE, "more than %d --rule options", FA_TUNE_MAX_RULES);
		goto out;
	}
	for (int i = 0; i < o->n_rules; i++) {
		char name[16];
		snprintf(name, sizeof name, "R%d", i + 1);
		if ((rc = add_rule_expr(t, name, o->rules[i], "--rule", err)) != FA_OK)
			goto out;
	}
	if (o->by && (rc = fit_rule(t, o->by, err)) != FA_OK)
		goto out;
	rc = FA_OK;
out:
	rows_free(rows, n_rows);
	fa_expr_free(where);
	return rc;
}

void fa_tune_free(struct fa_tune *t)
{
	if (!t)
		return;
	free(t->label);
	free(t->suite);
	free(t->status);
	free(t->backend);
	free(t->device);
	free(t->kernel);
	free(t->param);
	free(t->fixed);
	free(t->where);
	for (int i = 0; i < t->n_cases; i++) {
		struct fa_tune_case *tc = &t->cases[i];
		free(tc->key);
		free(tc->models);
		free(tc->median_ms);
		if (tc->samples)
			for (int v = 0; v < t->n_values; v++)
				free(tc->samples[v]);
		free(tc->samples);
		free(tc->n_samples);
		free(tc->tie);
		free(tc->x);
	}
	free(t->cases);
	for (int v = 0; t->value_params && v < t->n_values; v++)
		free(t->value_params[v]);
	free(t->value_params);
	free(t->values);
	for (int i = 0; t->rules && i < FA_TUNE_MAX_RULES + 2; i++) {
		struct fa_tune_rule *r = &t->rules[i];
		free(r->name);
		free(r->text);
		free(r->choice);
		free(r->choice_value);
		free(r->loss);
		free(r->verdict);
	}
	free(t->rules);
	if (t->by)
		for (int f = 0; f < FA_TUNE_MAX_BY; f++)
			free(t->by[f]);
	free(t->by);
	for (int k = 0; t->leaves && k < t->n_leaves; k++) {
		free(t->leaves[k].lo);
		free(t->leaves[k].hi);
	}
	free(t->leaves);
	memset(t, 0, sizeof *t);
}

/* ---- writers ------------------------------------------------------------------------------ */

static void fmt_pct(double x, char *buf, size_t size)
{
	if (!isfinite(x))
		snprintf(buf, size, "-");
	else
		snprintf(buf, size, "%+.1f%%", 100 * x);
}

static void fmt_ms(double x, char *buf, size_t size)
{
	if (!isfinite(x))
		snprintf(buf, size, "-");
	else
		fa_table_fmt_sig3(x, buf, size);
}

static const char *verdict_word(int v)
{
	return v < 0 ? "" : fa_stats_verdict_name(v);
}

static void ties_text(const struct fa_tune *t, const struct fa_tune_case *tc, const char *sep,
		      char *buf, size_t size)
{
	size_t used = 0;
	buf[0] = '\0';
	for (int v = 0; v < t->n_values; v++)
		if (tc->tie[v] && v != tc->best && used < size) {
			used += (size_t)snprintf(buf + used, size - used, "%s%" PRId32,
						 used ? sep : "", t->values[v]);
		}
}

static void rule_cell(const struct fa_tune *t, const struct fa_tune_rule *r, int i, char *buf,
		      size_t size)
{
	const struct fa_tune_case *tc = &t->cases[i];
	char pct[32];
	if (tc->best < 0) {
		snprintf(buf, size, "-");
		return;
	}
	if (r->choice[i] < 0) {
		if (isfinite(r->choice_value[i]))
			snprintf(buf, size, "%g not timed", r->choice_value[i]);
		else
			snprintf(buf, size, "undefined");
		return;
	}
	fmt_pct(r->loss[i], pct, sizeof pct);
	if (r->choice[i] == tc->best)
		snprintf(buf, size, "%" PRId32 " best", t->values[r->choice[i]]);
	else
		snprintf(buf, size, "%" PRId32 " %s%s", t->values[r->choice[i]], pct,
			 r->verdict[i] == FA_PERF_SLOWER ? " slower" :
			 tc->tie[r->choice[i]] ? " tie" : "");
}

static enum fa_rc write_md(const struct fa_tune *t, FILE *f, struct fa_err *err)
{
	struct fa_table tb;
	char buf[512], a[64], b[64], c[64];
	enum fa_rc rc;

	fprintf(f, "# fabench tune: %s %s, run %" PRId64 "\n\n", t->kernel, t->param, t->run_id);
	fprintf(f, "- run %" PRId64 ": suite ", t->run_id);
	fa_table_md_text(f, t->suite[0] ? t->suite : "-");
	fputs(", label ", f);
	fa_table_md_text(f, t->label[0] ? t->label : "-");
	fputs(", ", f);
	fa_table_md_text(f, t->backend);
	fputs(" on ", f);
	fa_table_md_text(f, t->device[0] ? t->device : "-");
	if (strcmp(t->status, "complete") != 0) {
		fprintf(f, "\n- **run %" PRId64 " is ", t->run_id);
		fa_table_md_text(f, t->status);
		fprintf(f, "**: the figures below cover only the cases it stored (`fabench run "
			   "--resume %" PRId64 "` finishes an interrupted run)",
			t->run_id);
	}
	fprintf(f, "\n- values of %s:", t->param);
	for (int v = 0; v < t->n_values; v++)
		fprintf(f, "%s %" PRId32, v ? "," : "", t->values[v]);
	if (t->fixed[0]) {
		fputs("; other params ", f);
		fa_table_md_code(f, t->fixed);
	}
	fputc('\n', f);
	if (!t->has_auto)
		fputs("- built-in value: unknown (the kernel is not registered here: give --auto V)\n",
		      f);
	else if (t->auto_idx < 0)
		fprintf(f, "- built-in value (auto): %" PRId32 ", not swept in this run\n",
			t->auto_value);
	else
		fprintf(f, "- built-in value (auto): %" PRId32 "\n", t->auto_value);
	if (t->where) {
		fputs("- selection: where ", f);
		fa_table_md_code(f, t->where);
		fputc('\n', f);
	}
	fprintf(f,
		"- cases: %d, %d with a timed value; ties: values not significantly slower than the "
		"best (Mann-Whitney p < %g and the bootstrap interval beyond %g%%, as compare)\n\n",
		t->n_cases, t->n_timed, t->alpha, 100 * t->min_effect);

	/* the rules */
	fputs("## Rules\n\n", f);
	if ((rc = fa_table_init(&tb, 8, err)) != FA_OK)
		return rc;
	const char *head[] = {"rule", "expression", "regret (geomean)", "worst", "worst case",
			      "", "slower", "not timed"};
	snprintf(buf, sizeof buf, "cases > %g%%", 100 * t->loss);
	for (int k = 0; k < 8 && rc == FA_OK; k++)
		rc = fa_table_add_md(&tb, k == 5 ? buf : head[k], err);
	for (int k = 5; k < 8; k++)
		tb.right[k] = 1;
	tb.right[2] = tb.right[3] = 1;
	for (int r = 0; r < t->n_rules && rc == FA_OK; r++) {
		const struct fa_tune_rule *ru = &t->rules[r];
		fmt_pct(ru->geomean_loss, a, sizeof a);
		fmt_pct(ru->worst_loss, b, sizeof b);
		snprintf(c, sizeof c, "%" PRId64, ru->worst_case >= 0 ? t->cases[ru->worst_case].idx + 1 : 0);
		rc = fa_table_add_md(&tb, ru->name, err);
		if (rc == FA_OK)
			rc = fa_table_add_code(&tb, ru->text, err);
		if (rc == FA_OK)
			rc = fa_table_add(&tb, a, err);
		if (rc == FA_OK)
			rc = fa_table_add(&tb, b, err);
		if (rc == FA_OK)
			rc = fa_table_add(&tb, ru->worst_case >= 0 ? c : "-", err);
		snprintf(a, sizeof a, "%d", ru->n_over);
		snprintf(b, sizeof b, "%d", ru->n_slower);
		snprintf(c, sizeof c, "%d", ru->n_missing);
		if (rc == FA_OK)
			rc = fa_table_add(&tb, a, err);
		if (rc == FA_OK)
			rc = fa_table_add(&tb, b, err);
		if (rc == FA_OK)
			rc = fa_table_add(&tb, c, err);
	}
	if (rc == FA_OK && t->n_rules)
		rc = fa_table_print_md(f, &tb, err);
	fa_table_free(&tb);
	if (rc != FA_OK)
		return rc;
	if (!t->n_rules)
		fputs("No rule to score: give --auto, --rule or --by.\n", f);
	fprintf(f,
		"\nregret: median time of the rule's value over the case's best median, minus 1; "
		"geometric mean over the timed cases. slower: of the cases > %g%%, those where the "
		"rule's value is significantly slower than the best.\n",
		100 * t->loss);
	if (t->fitted >= 0) {
		fputs("\n## Fitted rule\n\n", f);
		fprintf(f, "by ");
		for (int k = 0; k < t->n_by; k++) {
			fputs(k ? ", " : "", f);
			fa_table_md_code(f, t->by[k]);
		}
		fprintf(f, "; depth <= %d; %d %s:\n\n", t->depth, t->n_leaves,
			t->n_leaves == 1 ? "leaf" : "leaves");
		fprintf(f, "    %s\n", t->rules[t->fitted].text);
		/* a --by that takes one value over the run's cases cannot split them */
		for (int k = 0; k < t->n_by; k++) {
			int varies = 0;
			for (int i = 1; i < t->n_cases && !varies; i++)
				varies = t->cases[i].x[k] != t->cases[0].x[k];
			if (varies || t->n_cases < 2)
				continue;
			fputs("\nNote: ", f);
			fa_table_md_code(f, t->by[k]);
			fprintf(f, " is %g in every case of the run, so no threshold can be "
				   "put on it; sweep cases where it varies.\n",
				t->cases[0].x[k]);
		}
	}

	/* cases losing more than --loss */
	for (int r = 0; r < t->n_rules; r++) {
		const struct fa_tune_rule *ru = &t->rules[r];
		if (!ru->n_over)
			continue;
		fprintf(f, "\n## %s: cases losing more than %g%%\n\n", ru->name, 100 * t->loss);
		for (int i = 0; i < t->n_cases; i++) {
			if (!(isfinite(ru->loss[i]) && ru->loss[i] > t->loss))
				continue;
			fmt_pct(ru->loss[i], a, sizeof a);
			fprintf(f, "- case %" PRId64 " ", t->cases[i].idx + 1);
			fa_table_md_code(f, t->cases[i].key);
			/* the per-case table's words: a value among the ties is a
			 * tie, whatever the test of it alone said */
			const char *w = ru->verdict[i] == FA_PERF_SLOWER  ? "slower"
					: t->cases[i].tie[ru->choice[i]] ? "tie"
									  : verdict_word(ru->verdict[i]);
			fprintf(f, ": %" PRId32 " is %s (%s) against %" PRId32 "\n",
				t->values[ru->choice[i]], a, w, t->values[t->cases[i].best]);
		}
	}

	/* per case */
	fputs("\n## Best value per case\n\n", f);
	int ncol = 7 + t->any_models + t->n_rules - (t->has_auto ? 1 : 0);
	if ((rc = fa_table_init(&tb, ncol, err)) != FA_OK)
		return rc;
	const char *ch[] = {"case", "key", "best", "ties", "best ms", "auto ms", "auto / best"};
	for (int k = 0; k < 7 && rc == FA_OK; k++) {
		rc = fa_table_add(&tb, ch[k], err);
		if (k == 1 && t->any_models && rc == FA_OK)
			rc = fa_table_add(&tb, "models", err);
	}
	for (int r = t->has_auto ? 1 : 0; r < t->n_rules && rc == FA_OK; r++)
		rc = fa_table_add_md(&tb, t->rules[r].name, err);
	tb.right[0] = 1;
	for (int k = 4; k < 7; k++)
		tb.right[k + t->any_models] = 1;
	for (int i = 0; i < t->n_cases && rc == FA_OK; i++) {
		const struct fa_tune_case *tc = &t->cases[i];
		char ties[256], sp[96];
		snprintf(a, sizeof a, "%" PRId64, tc->idx + 1);

		snprintf(b, sizeof b, tc->best >= 0 ? "%" PRId32 : "-",
			 tc->best >= 0 ? t->values[tc->best] : 0);
		ties_text(t, tc, ", ", ties, sizeof ties);
		rc = fa_table_add(&tb, a, err);
		if (rc == FA_OK)
			rc = fa_table_add_code(&tb, tc->key, err);
		if (rc == FA_OK && t->any_models)
			rc = fa_table_add_md(&tb, tc->models, err);
		if (rc == FA_OK)
			rc = fa_table_add(&tb, b, err);
		if (rc == FA_OK)
			rc = fa_table_add(&tb, ties, err);
		fmt_ms(tc->best >= 0 ? tc->median_ms[tc->best] : NAN, a, sizeof a);
		if (rc == FA_OK)
			rc = fa_table_add(&tb, a, err);
		fmt_ms(t->auto_idx >= 0 ? tc->median_ms[t->auto_idx] : NAN, a, sizeof a);
		if (rc == FA_OK)
			rc = fa_table_add(&tb, a, err);
		if (isfinite(tc->speedup))
			snprintf(sp, sizeof sp, "%.2fx%s%s", tc->speedup,
				 tc->auto_verdict == FA_PERF_SLOWER ? "" : " ",
				 tc->auto_verdict == FA_PERF_SLOWER ? "" : "tie");
		else
			snprintf(sp, sizeof sp, "-");
		if (rc == FA_OK)
			rc = fa_table_add(&tb, sp, err);
		for (int r = t->has_auto ? 1 : 0; r < t->n_rules && rc == FA_OK; r++) {
			rule_cell(t, &t->rules[r], i, buf, sizeof buf);
			rc = fa_table_add(&tb, buf, err);
		}
	}
	if (rc == FA_OK)
		rc = fa_table_print_md(f, &tb, err);
	fa_table_free(&tb);
	if (rc == FA_OK)
		fputs("\nauto / best: the built-in value's median over the best's (\"tie\": the built-in "
		      "value is not significantly slower). A rule's cell: its value and its loss "
		      "against the best.\n",
		      f);
	return rc;
}

static void csv_int_or_empty(FILE *f, int ok, int64_t v)
{
	if (ok)
		fprintf(f, "%" PRId64, v);
}

static enum fa_rc write_csv(const struct fa_tune *t, FILE *f)
{
	fputs("case_idx,key,best,ties,best_ms,auto_ms,auto_over_best,auto_verdict", f);
	for (int r = 0; r < t->n_rules; r++)
		fprintf(f, ",rule_%s_value,rule_%s_loss,rule_%s_verdict", t->rules[r].name,
			t->rules[r].name, t->rules[r].name);
	fputc('\n', f);
	for (int i = 0; i < t->n_cases; i++) {
		const struct fa_tune_case *tc = &t->cases[i];
		char ties[256];
		fprintf(f, "%" PRId64 ",", tc->idx);
		fa_table_csv_text(f, tc->key);
		fputc(',', f);
		csv_int_or_empty(f, tc->best >= 0, tc->best >= 0 ? t->values[tc->best] : 0);
		fputc(',', f);
		ties_text(t, tc, "/", ties, sizeof ties);
		fa_table_csv_text(f, ties);
		fputc(',', f);
		fa_table_csv_real(f, tc->best >= 0 ? tc->median_ms[tc->best] : NAN);
		fputc(',', f);
		fa_table_csv_real(f, t->auto_idx >= 0 ? tc->median_ms[t->auto_idx] : NAN);
		fputc(',', f);
		fa_table_csv_real(f, tc->speedup);
		fputc(',', f);
		fputs(verdict_word(tc->auto_verdict), f);
		for (int r = 0; r < t->n_rules; r++) {
			const struct fa_tune_rule *ru = &t->rules[r];
			fputc(',', f);
			fa_table_csv_real(f, ru->choice_value[i]);
			fputc(',', f);
			fa_table_csv_real(f, ru->loss[i]);
			fputc(',', f);
			fputs(verdict_word(ru->verdict[i]), f);
		}
		fputc('\n', f);
	}
	return FA_OK;
}

/* fa_json_string: valid JSON for any bytes (a device name that is not
 * UTF-8, from a plugin or a merged database) */
static void json_str(FILE *f, const char *s)
{
	fa_json_string(f, s);
}

static void json_str_or_null(FILE *f, const char *s)
{
	if (s && *s)
		json_str(f, s);
	else
		fputs("null", f);
}

static void json_bound(FILE *f, double x)
{
	if (isfinite(x))
		fa_table_json_real(f, x);
	else
		fputs("null", f);
}

static enum fa_rc write_json(const struct fa_tune *t, FILE *f)
{
	fprintf(f, "{\"schema_version\": %d,\n \"run\": {\"id\": %" PRId64 ", \"label\": ",
		FA_JSON_SCHEMA_VERSION, t->run_id);
	json_str_or_null(f, t->label);
	fputs(", \"suite\": ", f);
	json_str_or_null(f, t->suite);
	fputs(", \"backend\": ", f);
	json_str_or_null(f, t->backend);
	fputs(", \"device\": ", f);
	json_str_or_null(f, t->device);
	fputs(", \"status\": ", f);
	json_str_or_null(f, t->status);
	fputs("},\n \"kernel\": ", f);
	json_str(f, t->kernel);
	fputs(", \"param\": ", f);
	json_str(f, t->param);
	fputs(", \"fixed_params\": ", f);
	json_str(f, t->fixed);
	fputs(",\n \"values\": [", f);
	for (int v = 0; v < t->n_values; v++)
		fprintf(f, "%s%" PRId32, v ? ", " : "", t->values[v]);
	fputs("], \"auto\": ", f);
	if (t->has_auto)
		fprintf(f, "%" PRId32, t->auto_value);
	else
		fputs("null", f);
	fputs(",\n \"options\": {\"alpha\": ", f);
	fa_table_json_real(f, t->alpha);
	fputs(", \"min_effect\": ", f);
	fa_table_json_real(f, t->min_effect);
	fputs(", \"loss\": ", f);
	fa_table_json_real(f, t->loss);
	fprintf(f, ", \"depth\": %d, \"where\": ", t->depth);
	json_str_or_null(f, t->where);
	fputs("},\n \"rules\": [", f);
	for (int r = 0; r < t->n_rules; r++) {
		const struct fa_tune_rule *ru = &t->rules[r];
		fputs(r ? ",\n  {\"name\": " : "\n  {\"name\": ", f);
		json_str(f, ru->name);
		fputs(", \"expression\": ", f);
		json_str(f, ru->text);
		fputs(", \"geomean_loss\": ", f);
		fa_table_json_real(f, ru->geomean_loss);
		fputs(", \"worst_loss\": ", f);
		fa_table_json_real(f, ru->worst_loss);
		fputs(", \"worst_case_idx\": ", f);
		if (ru->worst_case >= 0)
			fprintf(f, "%" PRId64, t->cases[ru->worst_case].idx);
		else
			fputs("null", f);
		fprintf(f, ", \"cases_over_loss\": %d, \"cases_slower\": %d, \"cases_not_timed\": %d}",
			ru->n_over, ru->n_slower, ru->n_missing);
	}
	fputs("],\n \"fitted\": ", f);
	if (t->fitted < 0) {
		fputs("null", f);
	} else {
		fputs("{\"by\": [", f);
		for (int k = 0; k < t->n_by; k++) {
			fputs(k ? ", " : "", f);
			json_str(f, t->by[k]);
		}
		fputs("], \"expression\": ", f);
		json_str(f, t->rules[t->fitted].text);
		fputs(", \"leaves\": [", f);
		for (int k = 0; k < t->n_leaves; k++) {
			fputs(k ? ", {\"lo\": [" : "{\"lo\": [", f);
			for (int x = 0; x < t->n_by; x++) {
				fputs(x ? ", " : "", f);
				json_bound(f, t->leaves[k].lo[x]);
			}
			fputs("], \"hi\": [", f);
			for (int x = 0; x < t->n_by; x++) {
				fputs(x ? ", " : "", f);
				json_bound(f, t->leaves[k].hi[x]);
			}
			fprintf(f, "], \"value\": %" PRId32 "}", t->values[t->leaves[k].value]);
		}
		fputs("]}", f);
	}
	fputs(",\n \"cases\": [", f);
	for (int i = 0; i < t->n_cases; i++) {
		const struct fa_tune_case *tc = &t->cases[i];
		fprintf(f, "%s\n  {\"case_idx\": %" PRId64 ", \"key\": ", i ? "," : "", tc->idx);
		json_str(f, tc->key);
		if (tc->models && tc->models[0]) {
			fputs(", \"models\": ", f);
			json_str(f, tc->models);
		}
		fputs(", \"best\": ", f);
		if (tc->best >= 0)
			fprintf(f, "%" PRId32, t->values[tc->best]);
		else
			fputs("null", f);
		fputs(", \"ties\": [", f);
		for (int v = 0, first = 1; v < t->n_values; v++)
			if (tc->tie[v] && v != tc->best) {
				fprintf(f, "%s%" PRId32, first ? "" : ", ", t->values[v]);
				first = 0;
			}
		fputs("], \"median_ms\": {", f);
		for (int v = 0; v < t->n_values; v++) {
			fprintf(f, "%s\"%" PRId32 "\": ", v ? ", " : "", t->values[v]);
			fa_table_json_real(f, tc->median_ms[v]);
		}
		fputs("}, \"auto_over_best\": ", f);
		fa_table_json_real(f, tc->speedup);
		fputs(", \"auto_verdict\": ", f);
		json_str_or_null(f, verdict_word(tc->auto_verdict));
		fputs(", \"rules\": {", f);
		for (int r = 0; r < t->n_rules; r++) {
			const struct fa_tune_rule *ru = &t->rules[r];
			fputs(r ? ", " : "", f);
			json_str(f, ru->name);
			fputs(": {\"value\": ", f);
			fa_table_json_real(f, ru->choice_value[i]);
			fputs(", \"loss\": ", f);
			fa_table_json_real(f, ru->loss[i]);
			fputs(", \"verdict\": ", f);
			json_str_or_null(f, verdict_word(ru->verdict[i]));
			fputc('}', f);
		}
		fputs("}}", f);
	}
	fputs("]}\n", f);
	return FA_OK;
}

/* fa_table_write_text's writers of the md and the csv */
static enum fa_rc md_text(FILE *m, const void *t, struct fa_err *err)
{
	return write_md(t, m, err);
}

static enum fa_rc csv_text(FILE *m, const void *t, struct fa_err *err)
{
	(void)err;
	return write_csv(t, m);
}

enum fa_rc fa_tune_write(const struct fa_tune *t, int format, FILE *f, struct fa_err *err)
{
	switch (format) {
	case FA_FMT_MD:
	case FA_FMT_CSV:
		/* through memory, every byte then valid UTF-8 (json escapes its own) */
		return fa_table_write_text(f, format == FA_FMT_MD ? md_text : csv_text, t,
					   "the tuning", err);
	case FA_FMT_JSON: return write_json(t, f);
	default:
		return fa_err_set(err, FA_ERR_USAGE, "tune writes md, csv or json, not format %d",
				  format);
	}
}

int fa_tune_mark_rule(const struct fa_tune *t)
{
	if (t->fitted >= 0)
		return t->fitted;
	return t->n_rules - 1;
}

/* ---- the C header --------------------------------------------------------------------------- */

/* name as a C identifier: letters, digits and '_' kept (lowercased, or
 * uppercased when upper), anything else '_'. */
static void c_ident(const char *name, int upper, char *buf, size_t size)
{
	size_t n = 0;
	for (const char *p = name; *p && n + 1 < size; p++) {
		unsigned char ch = (unsigned char)*p;
		buf[n++] = isalnum(ch) ? (char)(upper ? toupper(ch) : tolower(ch)) : '_';
	}
	buf[n] = '\0';
}

/* s inside a C comment: printable ASCII only, never the end of one, and
 * never "/" "*", which -Wcomment (in -Wall) reports inside one. */
static void c_comment_text_n(FILE *f, const char *s, size_t n)
{
	for (const char *p = s, *end = s + n; p < end; p++) {
		unsigned char ch = (unsigned char)*p;
		const char next = p + 1 < end ? p[1] : '\0';
		if (ch < 0x20 || ch > 0x7e)
			fputc('?', f);
		else if ((ch == '*' && next == '/') || (ch == '/' && next == '*'))
			fprintf(f, "%c ", ch);
		else
			fputc(ch, f);
	}
}

static void c_comment_text(FILE *f, const char *s)
{
	c_comment_text_n(f, s, strlen(s));
}

/* s in single quotes for a shell, inside a C comment: ' as '\'' (the runs
 * between quotes whole, so that every slash is seen beside its star) */
static void c_comment_shell(FILE *f, const char *s)
{
	fputc('\'', f);
	for (const char *p = s; *p;) {
		const size_t n = strcspn(p, "'");
		c_comment_text_n(f, p, n);
		p += n;
		if (*p == '\'') {
			fputs("'\\''", f);
			p++;
		}
	}
	fputc('\'', f);
}

/* A name in the "made by" command: as it is where a shell reads it as one
 * word, else quoted as c_comment_shell quotes. */
static void c_comment_arg(FILE *f, const char *s)
{
	int plain = *s != '\0';
	for (const char *p = s; *p && plain; p++)
		plain = isalnum((unsigned char)*p) || strchr("_-.,:/+=@%", *p);
	if (plain)
		c_comment_text(f, s);
	else
		c_comment_shell(f, s);
}

/* The shortest %g text of v that reads back (strtod, then / scale) as
 * v / scale exactly, so the "made by" options give the same values. */
static void g_exact(double v, double scale, char *buf, size_t n)
{
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(buf, n, "%.*g", prec, v * scale);
		if (strtod(buf, NULL) / scale == v)
			return;
	}
}

static void c_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (const char *p = s; *p; p++) {
		unsigned char ch = (unsigned char)*p;
		if (ch == '"' || ch == '\\')
			fprintf(f, "\\%c", ch);
		else if (ch < 0x20 || ch > 0x7e)
			fprintf(f, "\\%03o", ch);
		else
			fputc(ch, f);
	}
	fputc('"', f);
}

static void c_bound(FILE *f, double x)
{
	char num[64];
	if (x == -INFINITY)
		fputs("-HUGE_VAL", f);
	else if (x == INFINITY)
		fputs("HUGE_VAL", f);
	else {
		fa_table_fmt_real(x, num, sizeof num);
		fputs(num, f);
		if (!strpbrk(num, ".eEn"))
			fputs(".0", f);
	}
}

enum fa_rc fa_tune_write_header(const struct fa_tune *t, FILE *f, struct fa_err *err)
{
	char id[256], up[256], pct_g[32], pct_w[32];
	if (t->fitted < 0)
		return fa_err_set(err, FA_ERR_INPUT, "no fitted rule to write: name the case "
						     "parameters to fit on with --by");
	const struct fa_tune_rule *ru = &t->rules[t->fitted];
	snprintf(pct_g, sizeof pct_g, "%s", "");
	/* a kernel (a plugin's, an imported one) may be named with a digit
	 * first, which no C identifier may be */
	snprintf(id, sizeof id, "%s", isdigit((unsigned char)t->kernel[0]) ? "fa_" : "");
	c_ident(t->kernel, 0, id + strlen(id), sizeof id / 2);
	size_t n = strlen(id);
	snprintf(id + n, sizeof id - n, "_");
	c_ident(t->param, 0, id + n + 1, sizeof id - n - 1);
	c_ident(id, 1, up, sizeof up);
	fmt_pct(ru->geomean_loss, pct_g, sizeof pct_g);
	fmt_pct(ru->worst_loss, pct_w, sizeof pct_w);

	fprintf(f, "/* %s_tune.h - generated by fabench tune from run %" PRId64 ", do not edit.\n",
		id, t->run_id);
	fputs(" *\n * kernel ", f);
	c_comment_text(f, t->kernel);
	fputs(", param ", f);
	c_comment_text(f, t->param);
	if (t->fixed[0]) {
		fputs(" (with ", f);
		c_comment_text(f, t->fixed);
		fputc(')', f);
	}
	fputs("; suite ", f);
	c_comment_text(f, t->suite[0] ? t->suite : "-");
	fputs(", label ", f);
	c_comment_text(f, t->label[0] ? t->label : "-");
	fputs(", ", f);
	c_comment_text(f, t->backend);
	fputs(" on ", f);
	c_comment_text(f, t->device[0] ? t->device : "-");
	fputs("\n * rule: ", f);
	c_comment_text(f, ru->text);
	/* what made it: the same run and these options make the same header */
	fprintf(f, "\n * made by: fabench tune --run %" PRId64 " --kernel ", t->run_id);
	c_comment_arg(f, t->kernel);
	fputs(" --param ", f);
	c_comment_arg(f, t->param);
	fputs(" --by ", f);
	char by[1024] = "";
	size_t bl = 0;
	for (int k = 0; k < t->n_by && bl < sizeof by; k++)
		bl += (size_t)snprintf(by + bl, sizeof by - bl, "%s%s", k ? "," : "", t->by[k]);
	c_comment_shell(f, by);
	fprintf(f, " --depth %d", t->depth);
	if (t->where) {
		fputs(" --where ", f);
		c_comment_shell(f, t->where);
	}
	if (t->has_auto)
		fprintf(f, " --auto %" PRId32, t->auto_value);
	char me[40], al[40];
	g_exact(t->min_effect, 100, me, sizeof me);
	g_exact(t->alpha, 1, al, sizeof al);
	fprintf(f, " --min-effect %s --alpha %s", me, al);
	fprintf(f, "\n * regret over the run's %d timed cases: geometric mean %s, worst %s\n */\n",
		ru->n_used, pct_g, pct_w);
	fprintf(f, "#ifndef %s_TUNE_H\n#define %s_TUNE_H\n\n#include <math.h>\n\n", up, up);
	fprintf(f, "#define %s_N_BY %d\n\n", up, t->n_by);
	fputs("/* the case parameters the thresholds are on, the order of lo[] and hi[] */\n", f);
	fprintf(f, "static const char *const %s_by[%s_N_BY] = {", id, up);
	for (int k = 0; k < t->n_by; k++) {
		fputs(k ? ", " : "", f);
		c_string(f, t->by[k]);
	}
	fputs("};\n\n", f);
	fputs("/* one row per leaf of the rule: a case takes the value of the row with\n"
	      " * lo[i] <= x[i] < hi[i] for every i (x[i] <= hi[i] where hi[i] is HUGE_VAL);\n"
	      " * the rows do not overlap and cover all x. A NaN x[i] (an undefined\n"
	      " * expression) counts as -HUGE_VAL: the rule's x >= t is false for it */\n",
	      f);
	fprintf(f, "static const struct {\n\tdouble lo[%s_N_BY], hi[%s_N_BY];\n\tint value;\n} %s_table[%d] = {\n",
		up, up, id, t->n_leaves);
	for (int k = 0; k < t->n_leaves; k++) {
		fputs("\t{{", f);
		for (int x = 0; x < t->n_by; x++) {
			fputs(x ? ", " : "", f);
			c_bound(f, t->leaves[k].lo[x]);
		}
		fputs("}, {", f);
		for (int x = 0; x < t->n_by; x++) {
			fputs(x ? ", " : "", f);
			c_bound(f, t->leaves[k].hi[x]);
		}
		fprintf(f, "}, %" PRId32 "},\n", t->values[t->leaves[k].value]);
	}
	fputs("};\n\n", f);
	fprintf(f, "/* The value of %s for a case whose parameters are x (in %s_by's order). */\n",
		t->param, id);
	fprintf(f, "static inline int %s_choose(const double x[%s_N_BY])\n{\n", id, up);
	fprintf(f, "\tfor (unsigned r = 0; r < sizeof %s_table / sizeof %s_table[0]; r++) {\n", id, id);
	fputs("\t\tint in = 1;\n", f);
	fprintf(f, "\t\tfor (int i = 0; i < %s_N_BY; i++) {\n", up);
	fputs("\t\t\tdouble xi = isnan(x[i]) ? -HUGE_VAL : x[i];\n", f);
	fprintf(f, "\t\t\tin = in && %s_table[r].lo[i] <= xi &&\n"
		   "\t\t\t     (xi < %s_table[r].hi[i] || %s_table[r].hi[i] == HUGE_VAL);\n\t\t}\n",
		id, id, id);
	fprintf(f, "\t\tif (in)\n\t\t\treturn %s_table[r].value;\n\t}\n", id);
	fprintf(f, "\treturn %s_table[0].value; /* not reached: the rows cover every x */\n}\n\n"
		   "#endif /* %s_TUNE_H */\n", id, up);
	return FA_OK;
}
