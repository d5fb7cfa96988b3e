/* reader.c - the one reader of stored runs (reader.h): runs, cases and
 * results read back for report, compare, history and plot.
 *
 * Each query reads one run (or the runs table) with its parameters bound;
 * samples are read with one query per run, ordered by result id, and
 * matched against the results sorted by id.
 */
#include "reader.h"

#include <inttypes.h>
#include <math.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "../base/util.h"

#define N_OF(a) ((int)(sizeof(a) / sizeof((a)[0])))

static const char *col_text(sqlite3_stmt *st, int i)
{
	const unsigned char *t = sqlite3_column_text(st, i);
	return t ? (const char *)t : "";
}

static double col_real(sqlite3_stmt *st, int i)
{
	return sqlite3_column_type(st, i) == SQLITE_NULL ? NAN : sqlite3_column_double(st, i);
}

static enum fa_rc db_fail(struct fa_store *s, int64_t run_id, struct fa_err *err)
{
	return fa_err_set(err, FA_ERR_DB, "cannot read run %" PRId64 " from '%s': %s", run_id,
			  fa_store_path(s), sqlite3_errmsg(fa_store_db(s)));
}

/* ---- Runs ---------------------------------------------------------------- */

#define RUN_COLS                                                                         \
	"id, started_at, git_commit, git_dirty, label, status, suite_name, backend, "      \
	"device_name, host, ab_group, (SELECT count(*) FROM runs o WHERE "                 \
	"o.ab_group = runs.ab_group AND o.id < runs.id)"

/* The run of the current row of a RUN_COLS query; 0 or SQLITE_NOMEM. */
static int run_of(sqlite3_stmt *st, struct fa_arena *a, struct fa_reader_run *r)
{
	r->id = sqlite3_column_int64(st, 0);
	r->started_at = fa_arena_strdup(a, col_text(st, 1));
	r->git_commit = fa_arena_strdup(a, col_text(st, 2));
	r->git_dirty = sqlite3_column_type(st, 3) == SQLITE_NULL ? -1 : sqlite3_column_int(st, 3);
	r->label = fa_arena_strdup(a, col_text(st, 4));
	r->status = fa_arena_strdup(a, col_text(st, 5));
	r->suite_name = fa_arena_strdup(a, col_text(st, 6));
	r->backend = fa_arena_strdup(a, col_text(st, 7));
	r->device_name = fa_arena_strdup(a, col_text(st, 8));
	r->host = fa_arena_strdup(a, col_text(st, 9));
	r->ab_group = fa_arena_strdup(a, col_text(st, 10));
	r->ab_earlier = sqlite3_column_int(st, 11);
	return r->started_at && r->git_commit && r->label && r->status && r->suite_name &&
			       r->backend && r->device_name && r->host && r->ab_group
		       ? 0
		       : SQLITE_NOMEM;
}

enum fa_rc fa_reader_run_get(struct fa_store *s, int64_t id, struct fa_arena *a,
			     struct fa_reader_run *out, struct fa_err *err)
{
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(fa_store_db(s), "SELECT " RUN_COLS " FROM runs WHERE id = ?",
				    -1, &st, NULL);
	memset(out, 0, sizeof *out);
	if (rc == SQLITE_OK)
		rc = sqlite3_bind_int64(st, 1, id);
	if (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW)
		rc = run_of(st, a, out);
	if (rc != SQLITE_OK && rc != SQLITE_DONE && rc != SQLITE_NOMEM) {
		db_fail(s, id, err);
		sqlite3_finalize(st);
		return FA_ERR_DB;
	}
	sqlite3_finalize(st);
	if (rc == SQLITE_NOMEM)
		return fa_err_set(err, FA_ERR_NOMEM, "out of memory reading runs");
	if (rc == SQLITE_DONE)
		return fa_err_set(err, FA_ERR_NOT_FOUND, "no run %" PRId64 " in '%s'", id,
				  fa_store_path(s));
	return FA_OK;
}

enum fa_rc fa_reader_runs_list(struct fa_store *s, struct fa_arena *a,
			       struct fa_reader_run **out, int32_t *n, struct fa_err *err)
{
	sqlite3 *db = fa_store_db(s);
	sqlite3_stmt *st = NULL;
	struct fa_reader_run *runs = NULL;
	int count = 0, cap = 0;
	int rc = sqlite3_prepare_v2(db, "SELECT " RUN_COLS " FROM runs ORDER BY started_at, id", -1,
				    &st, NULL);

	*out = NULL;
	*n = 0;
	while (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (count == cap) {
			int ncap = cap ? cap * 2 : 32;
			struct fa_reader_run *nr = realloc(runs, (size_t)ncap * sizeof *nr);
			if (!nr) {
				rc = SQLITE_NOMEM;
				break;
			}
			runs = nr;
			cap = ncap;
		}
		rc = run_of(st, a, &runs[count++]);
	}
	sqlite3_finalize(st);
	if (rc == SQLITE_DONE && count) {
		/* into the arena, so that the caller frees nothing */
		if ((*out = fa_arena_alloc(a, (size_t)count * sizeof **out)))
			memcpy(*out, runs, (size_t)count * sizeof **out);
		else
			rc = SQLITE_NOMEM;
	}
	free(runs);
	if (rc == SQLITE_NOMEM)
		return fa_err_set(err, FA_ERR_NOMEM, "out of memory reading runs");
	if (rc != SQLITE_DONE)
		return fa_err_set(err, FA_ERR_DB, "cannot read runs from '%s': %s", fa_store_path(s),
				  sqlite3_errmsg(db));
	*n = count;
	return FA_OK;
}

/* The ids a query with one bound text (or none) returns, appended to ids;
 * a second parameter, when the query has one, is bound to the text's
 * length. */
static int query_ids(sqlite3 *db, const char *sql, const char *arg, int64_t **ids, int *n)
{
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
	if (rc == SQLITE_OK && arg)
		rc = sqlite3_bind_text(st, 1, arg, -1, SQLITE_TRANSIENT);
	if (rc == SQLITE_OK && arg && sqlite3_bind_parameter_count(st) >= 2)
		rc = sqlite3_bind_int(st, 2, (int)strlen(arg));
	while (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t *ni = realloc(*ids, (size_t)(*n + 1) * sizeof *ni);
		rc = SQLITE_OK;
		if (!ni) {
			rc = SQLITE_NOMEM;
			break;
		}
		*ids = ni;
		(*ids)[(*n)++] = sqlite3_column_int64(st, 0);
	}
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

enum fa_rc fa_reader_runs_match(struct fa_store *s, const char *spec, int64_t **ids, int *n,
				const char **matched_by, struct fa_err *err)
{
	sqlite3 *db = fa_store_db(s);
	size_t len = strlen(spec);
	char lower[64];
	int rc = SQLITE_OK;

	*ids = NULL;
	*n = 0;
	*matched_by = "";
	/* a decimal id (at most 18 digits: always fits an int64) */
	if (len <= 18 && strspn(spec, "0123456789") == len) {
		rc = query_ids(db, "SELECT id FROM runs WHERE id = CAST(? AS INTEGER)", spec, ids, n);
		*matched_by = "id";
	}
	if (rc == SQLITE_OK && *n == 0) {
		rc = query_ids(db, "SELECT id FROM runs WHERE label = ? ORDER BY started_at, id", spec,
			       ids, n);
		*matched_by = "label";
	}
	if (rc == SQLITE_OK && *n == 0 && strcmp(spec, "latest") == 0) {
		rc = query_ids(db, "SELECT id FROM runs ORDER BY id DESC LIMIT 1", NULL, ids, n);
		*matched_by = "latest";
	}
	if (rc == SQLITE_OK && *n == 0 && len >= FA_READER_MIN_COMMIT_PREFIX &&
	    len < sizeof lower && strspn(spec, "0123456789abcdefABCDEF") == len) {
		for (size_t i = 0; i <= len; i++)
			lower[i] = (char)(spec[i] >= 'A' && spec[i] <= 'F' ? spec[i] - 'A' + 'a'
									  : spec[i]);
		rc = query_ids(db,
			       "SELECT id FROM runs WHERE substr(lower(git_commit), 1, ?2) = ?1 "
			       "ORDER BY started_at, id",
			       lower, ids, n);
		*matched_by = "commit";
	}
	if (rc == SQLITE_OK && *n > 0)
		return FA_OK;
	free(*ids);
	*ids = NULL;
	*n = 0;
	if (rc == SQLITE_NOMEM)
		return fa_err_set(err, FA_ERR_NOMEM, "out of memory reading runs");
	if (rc != SQLITE_OK)
		return fa_err_set(err, FA_ERR_DB, "cannot read runs from '%s': %s", fa_store_path(s),
				  sqlite3_errmsg(db));
	return fa_err_set(err, FA_ERR_NOT_FOUND,
			  "no run '%s' in '%s' (not a run id, a label, latest or a commit "
			  "prefix of at least %d hex digits)",
			  spec, fa_store_path(s), FA_READER_MIN_COMMIT_PREFIX);
}

/* ---- Cases and results ----------------------------------------------------- */

const char *const fa_reader_param_names[FA_READER_N_PARAMS] = {
	"batch",  "heads",  "kv_heads", "q_len",   "kv_len",     "head_dim",
	"head_dim_v", "dtype", "mask",  "prefix_len", "window",  "layout",
	"input",  "seqlens", "kv_seqlens", "prefix_lens", "scale",
};

/* The case columns a typed case is read from, at column CQ_FIRST of a
 * query: fa_reader_param_names in order, then the rest. */
#define CASE_SQL                                                                         \
	"c.batch, c.heads, c.kv_heads, c.q_len, c.kv_len, c.head_dim, c.head_dim_v, "      \
	"c.dtype, c.mask, c.prefix_len, c.window, c.layout, c.input, c.seqlens, "          \
	"c.kv_seqlens, c.prefix_lens, c.scale, c.scale_set, c.varlen, c.total_q, c.total_k, " \
	"(SELECT d.depth FROM case_depth d WHERE d.case_id = c.id), c.pass"
enum {
	CQ_BATCH, CQ_HEADS, CQ_KV_HEADS, CQ_Q_LEN, CQ_KV_LEN, CQ_HEAD_DIM, CQ_HEAD_DIM_V, CQ_DTYPE,
	CQ_MASK, CQ_PREFIX_LEN, CQ_WINDOW, CQ_LAYOUT, CQ_INPUT, CQ_SEQLENS, CQ_KV_SEQLENS,
	CQ_PREFIX_LENS, CQ_SCALE, CQ_SCALE_SET, CQ_VARLEN, CQ_TOTAL_Q, CQ_TOTAL_K, CQ_DEPTH, CQ_PASS,
	CQ_END
};

static int name_or(int v, int fallback)
{
	return v < 0 ? fallback : v;
}

/* The problem fields, dist, scale_set, depth and pass of the CASE_SQL
 * columns from at (NULL reads as 0: a depth not given; an unknown name as
 * the first of its enum: a pass as fwd). */
static void case_of(sqlite3_stmt *st, int at, struct fa_problem *p, int32_t *dist,
		    int32_t *scale_set, int32_t *depth, int32_t *pass)
{
	memset(p, 0, sizeof *p);
	p->batch = sqlite3_column_int(st, at + CQ_BATCH);
	p->heads = sqlite3_column_int(st, at + CQ_HEADS);
	p->kv_heads = sqlite3_column_int(st, at + CQ_KV_HEADS);
	p->q_len = sqlite3_column_int(st, at + CQ_Q_LEN);
	p->kv_len = sqlite3_column_int(st, at + CQ_KV_LEN);
	p->head_dim = sqlite3_column_int(st, at + CQ_HEAD_DIM);
	p->head_dim_v = sqlite3_column_int(st, at + CQ_HEAD_DIM_V);
	p->dtype = name_or(fa_dtype_parse(col_text(st, at + CQ_DTYPE)), 0);
	p->mask = name_or(fa_mask_parse(col_text(st, at + CQ_MASK)), 0);
	p->prefix_len = sqlite3_column_int(st, at + CQ_PREFIX_LEN);
	p->window = sqlite3_column_int(st, at + CQ_WINDOW);
	p->layout = name_or(fa_layout_parse(col_text(st, at + CQ_LAYOUT)), 0);
	p->scale = (float)sqlite3_column_double(st, at + CQ_SCALE);
	p->varlen = sqlite3_column_int(st, at + CQ_VARLEN);
	p->total_q = sqlite3_column_int(st, at + CQ_TOTAL_Q);
	p->total_k = sqlite3_column_int(st, at + CQ_TOTAL_K);
	*dist = name_or(fa_dist_parse(col_text(st, at + CQ_INPUT)), 0);
	*scale_set = sqlite3_column_int(st, at + CQ_SCALE_SET);
	*depth = sqlite3_column_int(st, at + CQ_DEPTH);
	*pass = name_or(fa_pass_parse(col_text(st, at + CQ_PASS)), FA_PASS_FWD);
}

enum fa_rc fa_reader_cases(struct fa_store *s, int64_t run_id, struct fa_arena *a,
			   struct fa_reader_case **out, int *n, struct fa_err *err)
{
	sqlite3_stmt *st = NULL;
	struct fa_reader_case *cs = NULL;
	int count = 0, cap = 0;
	int rc = sqlite3_prepare_v2(fa_store_db(s),
				    "SELECT c.idx, " CASE_SQL " FROM cases c WHERE c.run_id = ? "
				    "ORDER BY c.idx",
				    -1, &st, NULL);

	*out = NULL;
	*n = 0;
	if (rc == SQLITE_OK)
		rc = sqlite3_bind_int64(st, 1, run_id);
	while (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct fa_reader_case *rc_;
		rc = SQLITE_OK;
		if (count == cap) {
			int ncap = cap ? cap * 2 : 16;
			struct fa_reader_case *nc = realloc(cs, (size_t)ncap * sizeof *nc);
			if (!nc) {
				rc = SQLITE_NOMEM;
				break;
			}
			cs = nc;
			cap = ncap;
		}
		rc_ = &cs[count++];
		memset(rc_, 0, sizeof *rc_);
		rc_->idx = sqlite3_column_int64(st, 0);
		rc_->c.index = (int32_t)rc_->idx;
		case_of(st, 1, &rc_->c.p, &rc_->c.dist, &rc_->c.scale_set, &rc_->c.depth,
			&rc_->c.pass);
	}
	if (rc != SQLITE_DONE && rc != SQLITE_NOMEM)
		db_fail(s, run_id, err);
	sqlite3_finalize(st);
	if (rc == SQLITE_DONE && count) {
		if ((*out = fa_arena_alloc(a, (size_t)count * sizeof **out)))
			memcpy(*out, cs, (size_t)count * sizeof **out);
		else
			rc = SQLITE_NOMEM;
	}
	free(cs);
	if (rc == SQLITE_NOMEM)
		return fa_err_set(err, FA_ERR_NOMEM, "out of memory reading run %" PRId64, run_id);
	if (rc != SQLITE_DONE)
		return FA_ERR_DB;
	*n = count;
	return FA_OK;
}

/* The columns of the result query, in order. */
enum {
	RQ_ID, RQ_RUN, RQ_IDX, RQ_KEY, RQ_KERNEL, RQ_PARAMS, RQ_STATUS, RQ_REASON, RQ_MEDIAN,
	RQ_STDEV, RQ_NSAMPLES, RQ_CHECKED, RQ_STOP, RQ_TFLOPS, RQ_GBPS, RQ_TAGS, RQ_TIMING,
	RQ_CASE /* CASE_SQL's columns */
};

static const char result_sql[] =
	"SELECT r.id, r.run_id, c.idx, c.key, r.kernel, r.params, r.status, r.reason, "
	"r.median_ms, r.stdev_ms, r.n_samples, r.checked, r.stop_reason, r.tflops, r.gbps, "
	"(SELECT group_concat(name, ', ') FROM (SELECT name FROM case_tags t "
	"WHERE t.case_id = c.id ORDER BY seq)), r.timing, "
	CASE_SQL " FROM results r JOIN cases c ON c.id = r.case_id WHERE r.run_id = ? "
	"ORDER BY c.idx, r.kernel, r.params, r.id";

static const char samples_sql[] =
	"SELECT s.result_id, s.time_ms FROM samples s JOIN results r ON r.id = s.result_id "
	"WHERE r.run_id = ? ORDER BY s.result_id, s.seq";

/* The text of parameter j of the current row (arena), "" when NULL; a
 * scale only where the suite gave one, as in the key. */
static const char *param_value(sqlite3_stmt *st, int j, struct fa_arena *a)
{
	char buf[64];
	int i = RQ_CASE + j;
	switch (sqlite3_column_type(st, i)) {
	case SQLITE_INTEGER:
		snprintf(buf, sizeof buf, "%" PRId64, (int64_t)sqlite3_column_int64(st, i));
		return fa_arena_strdup(a, buf);
	case SQLITE_FLOAT:
		if (j == CQ_SCALE && !sqlite3_column_int(st, RQ_CASE + CQ_SCALE_SET))
			return fa_arena_strdup(a, "");
		fa_format_float(sqlite3_column_double(st, i), buf, sizeof buf);
		return fa_arena_strdup(a, buf);
	case SQLITE_TEXT: return fa_arena_strdup(a, col_text(st, i));
	default: return fa_arena_strdup(a, "");
	}
}

static enum fa_rc read_row(sqlite3_stmt *st, const char *suite, struct fa_arena *a,
			   struct fa_reader_result *r)
{
	memset(r, 0, sizeof *r);
	r->id = sqlite3_column_int64(st, RQ_ID);
	r->run_id = sqlite3_column_int64(st, RQ_RUN);
	r->case_idx = sqlite3_column_int(st, RQ_IDX);
	r->suite = fa_arena_strdup(a, suite);
	r->key = fa_arena_strdup(a, col_text(st, RQ_KEY));
	r->kernel = fa_arena_strdup(a, col_text(st, RQ_KERNEL));
	r->params = fa_arena_strdup(a, col_text(st, RQ_PARAMS));
	r->reason = fa_arena_strdup(a, col_text(st, RQ_REASON));
	r->stop = fa_arena_strdup(a, col_text(st, RQ_STOP));
	r->tags = fa_arena_strdup(a, col_text(st, RQ_TAGS));
	r->timing = fa_arena_strdup(a, col_text(st, RQ_TIMING));
	/* a pass nobody checked (an import) reads as unchecked */
	r->status = fa_status_effective(fa_status_parse(col_text(st, RQ_STATUS)),
					sqlite3_column_int(st, RQ_CHECKED));
	r->median_ms = col_real(st, RQ_MEDIAN);
	r->stdev_ms = col_real(st, RQ_STDEV);
	r->tflops = col_real(st, RQ_TFLOPS);
	r->gbps = col_real(st, RQ_GBPS);
	r->n_samples = sqlite3_column_int(st, RQ_NSAMPLES);
	for (int j = 0; j < FA_READER_N_PARAMS; j++)
		if (!(r->values[j] = param_value(st, j, a)))
			return FA_ERR_NOMEM;
	if (!r->suite || !r->key || !r->kernel || !r->params || !r->reason || !r->stop || !r->tags ||
	    !r->timing)
		return FA_ERR_NOMEM;
	case_of(st, RQ_CASE, &r->p, &r->dist, &r->scale_set, &r->depth, &r->pass);
	return FA_OK;
}

static int cmp_result_id(const void *a, const void *b)
{
	int64_t x = (*(struct fa_reader_result *const *)a)->id;
	int64_t y = (*(struct fa_reader_result *const *)b)->id;
	return (x > y) - (x < y);
}

/* Attaches the samples of run_id to its results res[0..n). */
static enum fa_rc read_samples(sqlite3 *db, int64_t run_id, struct fa_reader_result *res, int n,
			       struct fa_arena *a)
{
	struct fa_reader_result **by_id = malloc(((size_t)n + 1) * sizeof *by_id);
	sqlite3_stmt *st = NULL;
	int rc = SQLITE_OK, at = 0;
	if (!by_id)
		return FA_ERR_NOMEM;
	for (int i = 0; i < n; i++) {
		by_id[i] = &res[i];
		/* room for the stored count (more are never taken) */
		if (res[i].n_samples > 0 &&
		    !(res[i].samples = fa_arena_alloc(
			      a, (size_t)res[i].n_samples * sizeof *res[i].samples))) {
			free(by_id);
			return FA_ERR_NOMEM;
		}
	}
	qsort(by_id, (size_t)n, sizeof *by_id, cmp_result_id);
	rc = sqlite3_prepare_v2(db, samples_sql, -1, &st, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_bind_int64(st, 1, run_id);
	while (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t rid = sqlite3_column_int64(st, 0);
		struct fa_reader_result *r;
		rc = SQLITE_OK;
		while (at < n && by_id[at]->id < rid)
			at++;
		if (at == n || by_id[at]->id != rid)
			continue;
		r = by_id[at];
		if (r->n_read < r->n_samples)
			r->samples[r->n_read++] = sqlite3_column_double(st, 1);
	}
	sqlite3_finalize(st);
	free(by_id);
	return rc == SQLITE_DONE ? FA_OK : FA_ERR_DB;
}

static const char tags_sql[] =
	"SELECT c.idx, t.name, t.model, t.layers FROM case_tags t JOIN cases c ON c.id = t.case_id "
	"WHERE c.run_id = ? ORDER BY c.idx, t.seq";

/* Attaches the labels of each result's case (case_tags, in order) to
 * res[0..n), which are in case idx order; the names in the arena. */
static enum fa_rc read_tags(sqlite3 *db, int64_t run_id, struct fa_reader_result *res, int n,
			    struct fa_arena *a)
{
	struct fa_case_tag *tags = NULL;
	int32_t *idx = NULL;
	int cap = 0, count = 0, rc;
	enum fa_rc frc = FA_OK;
	sqlite3_stmt *st = NULL;

	rc = sqlite3_prepare_v2(db, tags_sql, -1, &st, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_bind_int64(st, 1, run_id);
	while (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		rc = SQLITE_OK;
		if (count == cap) {
			int ncap = cap ? cap * 2 : 16;
			struct fa_case_tag *nt = realloc(tags, (size_t)ncap * sizeof *nt);
			int32_t *ni = nt ? realloc(idx, (size_t)ncap * sizeof *ni) : NULL;
			if (nt)
				tags = nt;
			if (ni)
				idx = ni;
			if (!nt || !ni) {
				frc = FA_ERR_NOMEM;
				break;
			}
			cap = ncap;
		}
		idx[count] = sqlite3_column_int(st, 0);
		tags[count].name = fa_arena_strdup(a, col_text(st, 1));
		tags[count].model = sqlite3_column_int(st, 2);
		tags[count].layers = sqlite3_column_int(st, 3);
		if (!tags[count++].name) {
			frc = FA_ERR_NOMEM;
			break;
		}
	}
	sqlite3_finalize(st);
	if (frc == FA_OK && rc != SQLITE_DONE)
		frc = FA_ERR_DB;
	if (frc == FA_OK && count) {
		struct fa_case_tag *kept = fa_arena_alloc(a, (size_t)count * sizeof *kept);
		if (!kept) {
			frc = FA_ERR_NOMEM;
		} else {
			memcpy(kept, tags, (size_t)count * sizeof *kept);
			for (int i = 0, at = 0; i < n; i++) {
				while (at < count && idx[at] < res[i].case_idx)
					at++;
				res[i].tag_list = kept + at;
				for (int e = at; e < count && idx[e] == res[i].case_idx; e++)
					res[i].n_tags++;
			}
		}
	}
	free(tags);
	free(idx);
	return frc;
}

enum fa_rc fa_reader_results(struct fa_store *s, int64_t run_id, const char *suite, int flags,
			     struct fa_arena *a, struct fa_reader_result **out, int *n,
			     struct fa_err *err)
{
	sqlite3 *db = fa_store_db(s);
	sqlite3_stmt *st = NULL;
	struct fa_reader_result *res = NULL;
	int cap = 0, count = 0, rc;
	enum fa_rc frc = FA_OK;

	*out = NULL;
	*n = 0;
	rc = sqlite3_prepare_v2(db, result_sql, -1, &st, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_bind_int64(st, 1, run_id);
	while (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		rc = SQLITE_OK;
		if (count == cap) {
			int ncap = cap ? cap * 2 : 64;
			struct fa_reader_result *nr = realloc(res, (size_t)ncap * sizeof *nr);
			if (!nr) {
				frc = FA_ERR_NOMEM;
				break;
			}
			res = nr;
			cap = ncap;
		}
		if ((frc = read_row(st, suite, a, &res[count++])) != FA_OK)
			break;
	}
	sqlite3_finalize(st);
	if (frc == FA_OK && rc != SQLITE_DONE)
		frc = FA_ERR_DB;
	if (frc == FA_OK && count && (flags & FA_READER_SAMPLES))
		frc = read_samples(db, run_id, res, count, a);
	if (frc == FA_OK && count)
		frc = read_tags(db, run_id, res, count, a);
	if (frc == FA_OK && count) {
		/* into the arena, so that the caller frees nothing */
		*out = fa_arena_alloc(a, (size_t)count * sizeof **out);
		if (!*out)
			frc = FA_ERR_NOMEM;
		else
			memcpy(*out, res, (size_t)count * sizeof **out);
	}
	free(res);
	if (frc == FA_ERR_NOMEM) {
		*out = NULL;
		return fa_err_set(err, FA_ERR_NOMEM, "out of memory reading run %" PRId64, run_id);
	}
	if (frc != FA_OK)
		return db_fail(s, run_id, err);
	*n = count;
	return FA_OK;
}

void fa_reader_result_case(const struct fa_reader_result *r, struct fa_case *c)
{
	memset(c, 0, sizeof *c);
	c->p = r->p;
	c->dist = r->dist;
	c->scale_set = r->scale_set;
	c->depth = r->depth;
	c->pass = r->pass;
	c->index = r->case_idx;
}

/* ---- Rows ------------------------------------------------------------------ */

static const char *const run_cols[] = {
	"id",         "started_at", "finished_at", "git_commit",  "git_dirty",
	"host",       "backend",    "device_name", "device_arch", "driver",
	"runtime",    "suite_path", "suite_name",  "suite_hash",  "command_line",
	"label",      "seed",       "version",     "source",      "status",
	"running",
};

/* The case columns: id and idx, key, the parameters, then the data seed. */
static const char *const case_cols[] = {
	"id",       "idx",        "key",     "batch",      "heads",      "kv_heads",
	"q_len",    "kv_len",     "head_dim", "head_dim_v", "dtype",     "mask",
	"prefix_len", "window",   "layout",  "input",      "varlen",     "seqlens",
	"kv_seqlens", "prefix_lens", "total_q", "total_k", "scale",      "scale_set",
	"seed",     "pass", /* after the CSV's parameters: reported where not fwd */
};
_Static_assert(FA_ROWS_CASE_END_PARAM == N_OF(case_cols) - 2, "scale_set is before seed");

/* The backward's per-gradient statistics of the run's results. */
static const char *const grad_cols[] = {
	"result_id", "tensor",    "max_abs",   "max_rel",      "mean_abs",      "rel_l2", "nmse",
	"same_max_abs", "nan_count", "inf_count", "unwritten", "rows_checked", "elems_checked",
};

static const char *const result_cols[] = {
	"id",           "case_id",      "kernel",      "backend",    "params",
	"status",       "reason",       "timing",      "n_samples",  "discarded",
	"stop_reason",  "median_ms",    "mean_ms",     "min_ms",     "max_ms",
	"stdev_ms",     "flops",        "tflops",      "bytes",      "gbps",
	"checked",      "max_abs",      "max_rel",     "mean_abs",   "rel_l2",
	"nmse",         "same_max_abs", "nan_count",   "inf_count",  "unwritten",
	"worst_index",  "worst_out",    "worst_ref",   "rows_checked", "elems_checked",
	"rule",         "mem_bytes",    "sm_clock_mhz", "sm_clock_max_mhz", "temp_c",
	"power_w",      "throttle_reasons", "device",
};

static const struct {
	const char *const *cols;
	int ncols;
	const char *from; /* with run_id as its one parameter */
} rows_of[] = {
	[FA_ROWS_RUN] = {run_cols, N_OF(run_cols), "runs WHERE id = ?"},
	[FA_ROWS_CASES] = {case_cols, N_OF(case_cols), "cases WHERE run_id = ? ORDER BY idx"},
	[FA_ROWS_RESULTS] = {result_cols, N_OF(result_cols), "results WHERE run_id = ? ORDER BY id"},
	[FA_ROWS_GRADS] = {grad_cols, N_OF(grad_cols),
			   "grad_stats WHERE result_id IN (SELECT id FROM results WHERE run_id = ?) "
			   "ORDER BY result_id, tensor"},
};

void fa_rows_free(struct fa_rows *t)
{
	for (int i = 0; i < t->nrows * t->ncols; i++)
		free(t->c[i].s);
	free(t->c);
	memset(t, 0, sizeof *t);
}

enum fa_rc fa_reader_rows(struct fa_store *s, int kind, int64_t run_id, struct fa_rows *t,
			  struct fa_err *err)
{
	sqlite3 *db = fa_store_db(s);
	sqlite3_stmt *st = NULL;
	char sql[2048];
	size_t len = 0;
	int rc, ncols;

	memset(t, 0, sizeof *t);
	if (kind < 0 || kind >= N_OF(rows_of))
		return fa_err_set(err, FA_ERR_USAGE, "unknown kind of rows %d", kind);
	t->cols = rows_of[kind].cols;
	t->ncols = ncols = rows_of[kind].ncols;
	/* identifiers are this file's constants; the run id is bound */
	len += (size_t)snprintf(sql + len, sizeof sql - len, "SELECT ");
	for (int i = 0; i < ncols; i++)
		len += (size_t)snprintf(sql + len, sizeof sql - len, "%s%s", i ? ", " : "",
					t->cols[i]);
	snprintf(sql + len, sizeof sql - len, " FROM %s", rows_of[kind].from);
	rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_bind_int64(st, 1, run_id);
	while (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct fa_cell *row;
		rc = SQLITE_OK;
		if (t->nrows == t->cap) {
			int cap = t->cap ? t->cap * 2 : 16;
			struct fa_cell *nc = realloc(t->c, (size_t)cap * ncols * sizeof *nc);
			if (!nc) {
				rc = SQLITE_NOMEM;
				break;
			}
			t->c = nc;
			t->cap = cap;
		}
		row = &t->c[(size_t)t->nrows * ncols];
		memset(row, 0, (size_t)ncols * sizeof *row);
		t->nrows++;
		for (int i = 0; i < ncols; i++) {
			switch (sqlite3_column_type(st, i)) {
			case SQLITE_INTEGER:
				row[i].type = FA_CELL_INT;
				row[i].i = sqlite3_column_int64(st, i);
				break;
			case SQLITE_FLOAT:
				row[i].type = FA_CELL_REAL;
				row[i].d = sqlite3_column_double(st, i);
				break;
			case SQLITE_TEXT:
				row[i].type = FA_CELL_TEXT;
				row[i].s = strdup((const char *)sqlite3_column_text(st, i));
				if (!row[i].s)
					rc = SQLITE_NOMEM;
				break;
			default: row[i].type = FA_CELL_NULL; /* blobs are not ours */
			}
		}
	}
	sqlite3_finalize(st);
	if (rc == SQLITE_DONE)
		return FA_OK;
	if (rc == SQLITE_NOMEM)
		return fa_err_set(err, FA_ERR_NOMEM, "out of memory reading '%s'",
				  fa_store_path(s));
	return db_fail(s, run_id, err);
}

const struct fa_cell *fa_rows_cell(const struct fa_rows *t, int row, const char *name)
{
	for (int i = 0; i < t->ncols; i++)
		if (strcmp(t->cols[i], name) == 0)
			return &t->c[(size_t)row * t->ncols + i];
	return NULL;
}

const char *fa_rows_text(const struct fa_rows *t, int row, const char *name)
{
	const struct fa_cell *c = fa_rows_cell(t, row, name);
	return c && c->type == FA_CELL_TEXT ? c->s : NULL;
}

int64_t fa_rows_int(const struct fa_rows *t, int row, const char *name)
{
	const struct fa_cell *c = fa_rows_cell(t, row, name);
	return c && c->type == FA_CELL_INT ? c->i : 0;
}

int fa_rows_real(const struct fa_rows *t, int row, const char *name, double *v)
{
	const struct fa_cell *c = fa_rows_cell(t, row, name);
	if (!c || (c->type != FA_CELL_REAL && c->type != FA_CELL_INT))
		return 0;
	*v = c->type == FA_CELL_REAL ? c->d : (double)c->i;
	return 1;
}
