/* test_history.c - `fabench history`: golden markdown and CSV of the fixture
 * database (tests/fixture.h: two complete runs and an incomplete one) and of
 * the nightly fixture (tests/fixture_history.h: twelve nights with planted
 * steps, a spike, a new regression and a new failure), the steps, commit
 * ranges and filters behind them through the API, and the command's exit
 * statuses and --where errors.
 *
 * FABENCH_UPDATE_GOLDEN=1 rewrites the golden files instead of comparing.
 */
#include <inttypes.h>
#include <math.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../harness/report/history.h"
#include "../harness/report/report.h"
#include "fixture.h"
#include "fixture_history.h"
#include "golden.h"
#include "proc.h"
#include "test.h"

/* ---- Helpers ----------------------------------------------------------------- */

static char *history_text(const struct fa_history *h, int format, enum fa_rc *rc)
{
	struct fa_err err;
	char *buf = NULL;
	size_t len = 0;
	enum fa_rc ignored;
	FILE *f = open_memstream(&buf, &len);
	if (!rc)
		rc = &ignored;
	if (!f) {
		*rc = FA_ERR_NOMEM;
		return NULL;
	}
	fa_err_clear(&err);
	*rc = fa_history_write(h, format, f, &err);
	fclose(f);
	return buf;
}

static const struct fa_hist_series *series_of(const struct fa_history *h, int idx,
					      const char *kernel)
{
	for (int i = 0; i < h->n_series; i++)
		if (h->series[i].case_idx == idx && strcmp(h->series[i].kernel, kernel) == 0)
			return &h->series[i];
	return NULL;
}

/* The run id of a series' point. */
static int64_t run_at(const struct fa_history *h, const struct fa_hist_series *sr, int point)
{
	return h->runs[sr->points[point].run].id;
}

/* ---- Golden output ----------------------------------------------------------------- */

FA_TEST(history, golden_fixture)
{
	struct fa_store *s = fa_fixture_open();
	struct fa_history h;
	struct fa_err err;
	enum fa_rc rc;
	FA_REQUIRE(s);
	fa_err_clear(&err);
	FA_REQUIRE(fa_history_build(s, NULL, &h, &err) == FA_OK);
	char *md = history_text(&h, FA_FMT_MD, &rc);
	FA_CHECK(rc == FA_OK && md);
	if (md)
		fa_golden_check("history_main.md", md, strlen(md));
	char *csv = history_text(&h, FA_FMT_CSV, &rc);
	FA_CHECK(rc == FA_OK && csv);
	if (csv)
		fa_golden_check("history_main.csv", csv, strlen(csv));
	free(md);
	free(csv);
	fa_history_free(&h);
	fa_store_close(s);
}

FA_TEST(history, golden_nightly)
{
	struct fa_store *s = fa_fixture_history_open();
	struct fa_history_opts o;
	struct fa_history h;
	struct fa_err err;
	enum fa_rc rc;
	FA_REQUIRE(s);
	fa_history_opts_init(&o);
	o.label = "nightly";
	fa_err_clear(&err);
	FA_REQUIRE(fa_history_build(s, &o, &h, &err) == FA_OK);
	char *md = history_text(&h, FA_FMT_MD, &rc);
	FA_CHECK(rc == FA_OK && md);
	if (md)
		fa_golden_check("history_nightly.md", md, strlen(md));
	char *json = history_text(&h, FA_FMT_JSON, &rc);
	FA_CHECK(rc == FA_OK && json);
	if (json)
		fa_golden_check("history_nightly.json", json, strlen(json));
	free(md);
	free(json);
	fa_history_free(&h);
	fa_store_close(s);
}

/* ---- Steps and the values behind the tables ----------------------------------------- */

FA_TEST(history, fixture_two_runs)
{
	struct fa_store *s = fa_fixture_open();
	struct fa_history h;
	struct fa_err err;
	const struct fa_hist_series *sr;
	FA_REQUIRE(s);
	fa_err_clear(&err);
	FA_REQUIRE(fa_history_build(s, NULL, &h, &err) == FA_OK);
	/* the incomplete run 3 is left out by default */
	FA_REQUIRE(h.n_runs == 2);
	FA_CHECK(h.runs[0].id == 1 && h.runs[1].id == 2);
	FA_CHECK(h.n_series == 24); /* 8 cases x 3 kernels */
	/* cpu_flash on case 0: 15% slower at run 2, the latest: new */
	sr = series_of(&h, 0, "cpu_flash");
	FA_REQUIRE(sr && sr->n_points == 2 && sr->n_steps == 1);
	FA_CHECK(sr->steps[0].at == 1 && sr->steps[0].prev == 0);
	FA_CHECK_NEAR(sr->steps[0].change, 0.15, 0.003);
	FA_CHECK(sr->steps[0].new_regression && sr->new_regression);
	FA_CHECK_NEAR(sr->change_prev, 0.15, 0.003);
	FA_CHECK(sr->best == 0 && sr->latest == 1);
	/* 8% faster on 1, 2 and 5: steps, not regressions */
	for (int c = 1; c <= 5; c++) {
		sr = series_of(&h, c, "cpu_flash");
		FA_REQUIRE(sr);
		if (c == 1 || c == 2 || c == 5) {
			FA_CHECKF(sr->n_steps == 1 && sr->steps[0].change < -0.07 &&
					  !sr->new_regression,
				  "case %d: %d steps", c, sr->n_steps);
		} else {
			FA_CHECKF(sr->n_steps == 0, "case %d: %d steps", c, sr->n_steps);
		}
	}
	/* cpu_dense moves < 1%: no step anywhere */
	for (int c = 0; c < FA_FIXTURE_CASES; c++) {
		sr = series_of(&h, c, "cpu_dense");
		FA_REQUIRE(sr);
		FA_CHECKF(sr->n_steps == 0, "dense case %d: %d steps", c, sr->n_steps);
	}
	/* a skipped result has a point without a median */
	sr = series_of(&h, 5, "cpu_dense");
	FA_CHECK(sr->n_points == 2 && sr->n_timed == 0 && sr->latest == -1 && sr->best == -1 &&
		 isnan(sr->points[1].median_ms) && sr->points[1].status == FA_STATUS_SKIP);
	/* cpu_flash errors on case 6 in run 2 */
	sr = series_of(&h, 6, "cpu_flash");
	FA_CHECK(sr && sr->n_points == 2 && sr->n_timed == 1 && sr->latest == 0 &&
		 sr->points[1].status == FA_STATUS_ERROR && isnan(sr->change_prev));
	/* the noise of a point: standard error of the median, from the samples */
	sr = series_of(&h, 0, "cpu_dense");
	FA_CHECK(sr->points[0].n_samples == 12 && sr->points[1].n_samples == 10);
	FA_CHECK(sr->points[0].sigma_ms > 0 &&
		 sr->points[0].sigma_ms < 0.01 * sr->points[0].median_ms);
	FA_CHECK(h.n_new_regressions == 1);
	fa_history_free(&h);

	/* with the incomplete run: run 3 is the latest; it has cases 0-2 only,
	 * so the step at run 2 is no longer new */
	struct fa_history_opts o;
	fa_history_opts_init(&o);
	o.include_incomplete = 1;
	FA_REQUIRE(fa_history_build(s, &o, &h, &err) == FA_OK);
	FA_CHECK(h.n_runs == 3 && h.n_new_regressions == 0);
	sr = series_of(&h, 0, "cpu_flash");
	FA_CHECK(sr && sr->n_points == 3 && sr->n_steps == 1 && sr->steps[0].at == 1 &&
		 !sr->new_regression);
	fa_history_free(&h);
	fa_store_close(s);
}

FA_TEST(history, nightly_steps)
{
	struct fa_store *s = fa_fixture_history_open();
	struct fa_history_opts o;
	struct fa_history h;
	struct fa_err err;
	const struct fa_hist_series *sr;
	char commit[48], c2[48];
	FA_REQUIRE(s);
	fa_history_opts_init(&o);
	o.label = "nightly";
	fa_err_clear(&err);
	FA_REQUIRE(fa_history_build(s, &o, &h, &err) == FA_OK);
	FA_REQUIRE(h.n_runs == FA_FIXTURE_HISTORY_NIGHTLY);
	for (int n = 1; n <= FA_FIXTURE_HISTORY_NIGHTLY; n++)
		FA_CHECK(h.runs[n - 1].id == FA_FIXTURE_HISTORY_NIGHT_RUN(n));
	FA_CHECK(h.n_series == 6);

	/* flat with drift: no step */
	sr = series_of(&h, 0, "cpu_dense");
	FA_REQUIRE(sr);
	FA_CHECK(sr->n_points == 12 && sr->n_timed == 12 && sr->n_steps == 0);
	/* 10% slower from night 5: one step, from night 4's commit to night 5's */
	sr = series_of(&h, 0, "cpu_flash");
	FA_REQUIRE(sr && sr->n_steps == 1);
	FA_CHECK(run_at(&h, sr, sr->steps[0].at) == FA_FIXTURE_HISTORY_NIGHT_RUN(5));
	FA_CHECK(run_at(&h, sr, sr->steps[0].prev) == FA_FIXTURE_HISTORY_NIGHT_RUN(4));
	FA_CHECK_NEAR(sr->steps[0].change, 0.10, 0.01);
	FA_CHECK(!sr->steps[0].new_regression);
	FA_CHECK_NEAR(sr->steps[0].before_ms, 12.0, 0.1);
	/* 6% faster from night 8 (the PR run between nights 6 and 7 is not
	 * selected, so night 7 follows night 6 directly) */
	sr = series_of(&h, 1, "cpu_flash");
	FA_REQUIRE(sr && sr->n_steps == 1);
	FA_CHECK(run_at(&h, sr, sr->steps[0].at) == FA_FIXTURE_HISTORY_NIGHT_RUN(8));
	FA_CHECK_NEAR(sr->steps[0].change, -0.06, 0.01);
	FA_CHECK_NEAR(sr->change_prev, 0.0, 0.015);
	FA_CHECK(run_at(&h, sr, sr->best) >= FA_FIXTURE_HISTORY_NIGHT_RUN(8));
	/* a spike on night 7: up and down again */
	sr = series_of(&h, 2, "cpu_flash");
	FA_REQUIRE(sr && sr->n_steps == 2);
	FA_CHECK(run_at(&h, sr, sr->steps[0].at) == FA_FIXTURE_HISTORY_NIGHT_RUN(7));
	FA_CHECK(run_at(&h, sr, sr->steps[1].at) == FA_FIXTURE_HISTORY_NIGHT_RUN(8));
	FA_CHECK(sr->steps[0].change > 0.2 && sr->steps[1].change < -0.15);
	FA_CHECK(!sr->new_regression);
	/* 7% slower on the latest night: the new regression */
	sr = series_of(&h, 2, "cpu_dense");
	FA_REQUIRE(sr && sr->n_steps == 1);
	FA_CHECK(sr->steps[0].at == 11 && sr->new_regression && sr->steps[0].new_regression);
	FA_CHECK_NEAR(sr->steps[0].change, 0.07, 0.01);
	fa_fixture_history_commit(FA_FIXTURE_HISTORY_NIGHT_RUN(11), commit, sizeof commit);
	fa_fixture_history_commit(FA_FIXTURE_HISTORY_NIGHT_RUN(12), c2, sizeof c2);
	FA_CHECK(strcmp(h.runs[sr->points[sr->steps[0].prev].run].git_commit, commit) == 0);
	FA_CHECK(strcmp(h.runs[sr->points[sr->steps[0].at].run].git_commit, c2) == 0);
	/* a failure on the latest night: no median there, no step */
	sr = series_of(&h, 1, "cpu_dense");
	FA_REQUIRE(sr);
	FA_CHECK(sr->n_points == 12 && sr->n_timed == 11 && sr->n_steps == 0 &&
		 sr->points[11].status == FA_STATUS_FAIL && sr->latest == 10);
	FA_CHECK(h.n_new_regressions == 1 && h.n_steps == 5);
	fa_history_free(&h);

	/* without --label the 30% slower PR run sits between nights 6 and 7: a
	 * one-point segment, two more steps in every series */
	fa_history_opts_init(&o);
	FA_REQUIRE(fa_history_build(s, &o, &h, &err) == FA_OK);
	FA_CHECK(h.n_runs == FA_FIXTURE_HISTORY_NIGHTLY + 1);
	sr = series_of(&h, 0, "cpu_dense");
	FA_REQUIRE(sr && sr->n_steps == 2);
	FA_CHECK(run_at(&h, sr, sr->steps[0].at) == FA_FIXTURE_HISTORY_PR_RUN);
	fa_history_free(&h);
	fa_store_close(s);
}

/* ---- Filters ---------------------------------------------------------------------------- */

FA_TEST(history, filters)
{
	struct fa_store *s = fa_fixture_history_open();
	struct fa_history_opts o;
	struct fa_history h;
	struct fa_err err;
	FA_REQUIRE(s);
	fa_err_clear(&err);

	/* --since: nights 9 to 12 (a date, or a time of day) */
	fa_history_opts_init(&o);
	o.label = "nightly";
	o.since = "2026-12-09";
	FA_REQUIRE(fa_history_build(s, &o, &h, &err) == FA_OK);
	FA_CHECK(h.n_runs == 4 && h.runs[0].id == FA_FIXTURE_HISTORY_NIGHT_RUN(9));
	FA_CHECK(h.n_new_regressions == 1);
	fa_history_free(&h);
	o.since = "2026-12-08T03:00:01Z";
	FA_REQUIRE(fa_history_build(s, &o, &h, &err) == FA_OK);
	FA_CHECK(h.n_runs == 4);
	fa_history_free(&h);

	/* --kernel: a glob */
	fa_history_opts_init(&o);
	o.label = "nightly";
	o.kernel = "*_fl?sh";
	FA_REQUIRE(fa_history_build(s, &o, &h, &err) == FA_OK);
	FA_CHECK(h.n_series == 3 && h.n_new_regressions == 0);
	for (int i = 0; i < h.n_series; i++)
		FA_CHECK(strcmp(h.series[i].kernel, "cpu_flash") == 0);
	fa_history_free(&h);

	/* --where: the suite language on the stored cases */
	static const struct {
		const char *where;
		int cases;
	} wh[] = {
		{"q_len == 1", 1},
		{"head_dim == 128 && mask == none", 2},
		{"gqa == 4 || mask == causal", 2},
		{"tokens >= 1024 and not (mask == causal)", 1},
		{"dtype == bf16", 0},
	};
	for (size_t i = 0; i < sizeof wh / sizeof wh[0]; i++) {
		fa_history_opts_init(&o);
		o.label = "nightly";
		o.where = wh[i].where;
		FA_REQUIRE(fa_history_build(s, &o, &h, &err) == FA_OK);
		FA_CHECKF(h.n_series == 2 * wh[i].cases, "'%s': %d series", wh[i].where,
			  h.n_series);
		fa_history_free(&h);
	}

	/* --suite, --label: exact names; nothing matching is an empty history */
	fa_history_opts_init(&o);
	o.suite = "smoke";
	o.label = "pr";
	FA_REQUIRE(fa_history_build(s, &o, &h, &err) == FA_OK);
	FA_CHECK(h.n_runs == 1 && h.runs[0].id == FA_FIXTURE_HISTORY_PR_RUN && h.n_steps == 0);
	fa_history_free(&h);
	o.suite = "vit";
	FA_REQUIRE(fa_history_build(s, &o, &h, &err) == FA_OK);
	FA_CHECK(h.n_runs == 0 && h.n_series == 0);
	enum fa_rc rc;
	char *md = history_text(&h, FA_FMT_MD, &rc);
	FA_CHECK(rc == FA_OK && md && strstr(md, "No results match"));
	free(md);
	fa_history_free(&h);
	/* filter text is data, never SQL */
	o.suite = NULL;
	o.label = "nightly' OR '1'='1";
	FA_REQUIRE(fa_history_build(s, &o, &h, &err) == FA_OK);
	FA_CHECK(h.n_runs == 0);
	fa_history_free(&h);

	/* --include-incomplete: the killed night 13 joins */
	fa_history_opts_init(&o);
	o.label = "nightly";
	o.include_incomplete = 1;
	FA_REQUIRE(fa_history_build(s, &o, &h, &err) == FA_OK);
	FA_CHECK(h.n_runs == FA_FIXTURE_HISTORY_NIGHTLY + 1);
	FA_CHECK(h.runs[h.n_runs - 1].id == FA_FIXTURE_HISTORY_INCOMPLETE_RUN);
	FA_CHECK(strcmp(h.runs[h.n_runs - 1].status, "incomplete") == 0);
	/* it has no case 2, so the step of night 12 is not at the latest run */
	FA_CHECK(h.n_new_regressions == 0);
	fa_history_free(&h);
	fa_store_close(s);
}

/* Runs sql on the store's database; 1 on success. */
static int exec_sql(struct fa_store *s, const char *sql)
{
	char *msg = NULL;
	int rc = sqlite3_exec(fa_store_db(s), sql, NULL, NULL, &msg);
	if (rc != SQLITE_OK)
		fa_test_fail(__FILE__, __LINE__, "%s: %s", sql, msg ? msg : "?");
	sqlite3_free(msg);
	return rc == SQLITE_OK;
}

/* The series of (case idx, kernel, params, side), or NULL. */
static const struct fa_hist_series *series_side(const struct fa_history *h, int idx,
						const char *kernel, const char *params,
						const char *side)
{
	for (int i = 0; i < h->n_series; i++) {
		const struct fa_hist_series *sr = &h->series[i];
		if (sr->case_idx == idx && strcmp(sr->kernel, kernel) == 0 &&
		    strcmp(sr->params, params) == 0 && strcmp(sr->ab_side, side) == 0)
			return sr;
	}
	return NULL;
}

/* Night 6 and the PR run (30% slower) become the two sides of one run --ab,
 * and night 12 runs cpu_flash with other params (a tuning run): none of
 * them may join the nightly series. */
FA_TEST(history, ab_sides_and_params_apart)
{
	struct fa_store *s = fa_fixture_history_open();
	struct fa_history_opts o;
	struct fa_history h;
	struct fa_err err;
	struct fa_proc_result r;
	const int64_t night6 = FA_FIXTURE_HISTORY_NIGHT_RUN(6), pr = FA_FIXTURE_HISTORY_PR_RUN;
	const int64_t night12 = FA_FIXTURE_HISTORY_NIGHT_RUN(12);
	char sql[512];
	FA_REQUIRE(s);
	fa_err_clear(&err);
	snprintf(sql, sizeof sql,
		 "UPDATE runs SET ab_group = 'g', label = 'ab-a' WHERE id = %" PRId64 "; "
		 "UPDATE runs SET ab_group = 'g', label = 'ab-b' WHERE id = %" PRId64 "; "
		 "UPDATE results SET params = 'block_q=32' WHERE run_id = %" PRId64
		 " AND kernel = 'cpu_flash'",
		 night6, pr, night12);
	FA_REQUIRE(exec_sql(s, sql));

	fa_history_opts_init(&o);
	FA_REQUIRE(fa_history_build(s, &o, &h, &err) == FA_OK);
	/* 3 cases x (cpu_dense, cpu_flash, cpu_flash[block_q=32]) plain, and each
	 * side's 3 x 2 */
	FA_CHECKF(h.n_series == 9 + 6 + 6, "%d series", h.n_series);
	for (int c = 0; c < 3; c++) {
		const struct fa_hist_series *plain = series_side(&h, c, "cpu_dense", "", "");
		const struct fa_hist_series *a = series_side(&h, c, "cpu_dense", "", "a");
		const struct fa_hist_series *b = series_side(&h, c, "cpu_dense", "", "b");
		const struct fa_hist_series *tuned = series_side(&h, c, "cpu_flash", "block_q=32", "");
		const struct fa_hist_series *flash = series_side(&h, c, "cpu_flash", "", "");
		FA_REQUIRE(plain && a && b && tuned && flash);
		/* nights 1-5 and 7-12 */
		FA_CHECKF(plain->n_points == 11, "case %d: %d points", c, plain->n_points);
		for (int p = 0; p < plain->n_points; p++)
			FA_CHECK(run_at(&h, plain, p) != night6 && run_at(&h, plain, p) != pr);
		FA_CHECK(a->n_points == 1 && run_at(&h, a, 0) == night6);
		FA_CHECK(b->n_points == 1 && run_at(&h, b, 0) == pr);
		/* the PR side is 30% slower than the A side: in a series of its own */
		FA_CHECK(b->points[0].median_ms > 1.25 * a->points[0].median_ms);
		FA_CHECK(tuned->n_points == 1 && run_at(&h, tuned, 0) == night12);
		FA_CHECKF(flash->n_points == 10, "case %d: %d points", c, flash->n_points);
		for (int p = 0; p < flash->n_points; p++)
			FA_CHECK(run_at(&h, flash, p) != night12);
	}
	/* cpu_dense case 0 is flat over the nights: mixing the 30% slower side in
	 * would make a spike of it */
	FA_CHECK(series_side(&h, 0, "cpu_dense", "", "")->n_steps == 0);
	char *md = history_text(&h, FA_FMT_MD, NULL);
	FA_CHECK(md && strstr(md, "cpu_dense (A/B side b)") && strstr(md, "cpu_flash[block_q=32]"));
	free(md);
	fa_history_free(&h);

	/* --no-ab: the A/B runs are left out */
	o.no_ab = 1;
	FA_REQUIRE(fa_history_build(s, &o, &h, &err) == FA_OK);
	FA_CHECKF(h.n_series == 9 && h.n_runs == 11, "%d series, %d runs", h.n_series, h.n_runs);
	for (int i = 0; i < h.n_runs; i++)
		FA_CHECK(h.runs[i].id != night6 && h.runs[i].id != pr && !h.runs[i].ab_side[0]);
	fa_history_free(&h);

	/* labels without a side: the group's first run is side a */
	FA_REQUIRE(exec_sql(s, "UPDATE runs SET label = 'x' WHERE ab_group = 'g'"));
	fa_history_opts_init(&o);
	FA_REQUIRE(fa_history_build(s, &o, &h, &err) == FA_OK);
	FA_CHECK(h.n_series == 21);
	const struct fa_hist_series *a = series_side(&h, 1, "cpu_flash", "", "a");
	FA_CHECK(a && a->n_points == 1 && run_at(&h, a, 0) == night6);
	fa_history_free(&h);
	fa_store_close(s);

	/* the command: the sides in the CSV, --no-ab in the selection */
	const char *db = fa_fixture_history_path();
	fa_proc_run((char *[]){"history", "--db", (char *)db, "--format", "csv", NULL}, NULL, 60, &r);
	FA_CHECKF(r.status != 2 && strstr(r.out, ",new_regression,ab_side,device,host\n") &&
			  strstr(r.out, ",0,a,") && strstr(r.out, ",0,b,"),
		  "status %d: %s", r.status, r.err);
	fa_proc_free(&r);
	fa_proc_run((char *[]){"history", "--db", (char *)db, "--no-ab", NULL}, NULL, 60, &r);
	FA_CHECKF(r.status != 2 && strstr(r.out, "- selection: no `run --ab` runs\n") &&
			  !strstr(r.out, "A/B side"),
		  "status %d: %s", r.status, r.err);
	fa_proc_free(&r);
}

/* A step whose points on either side were timed differently (single
 * launches, then a cold graph) is marked: the method may have made it. */
FA_TEST(history, timing_change_marked)
{
	struct fa_store *s = fa_fixture_open();
	struct fa_history h;
	struct fa_err err;
	enum fa_rc rc;
	FA_REQUIRE(s);
	fa_err_clear(&err);
	FA_REQUIRE(exec_sql(s, "UPDATE results SET timing = 'graph-cold' WHERE run_id = 2 AND "
			       "kernel = 'cpu_flash' AND case_id IN (SELECT id FROM cases WHERE "
			       "run_id = 2 AND idx = 0)"));
	FA_REQUIRE(fa_history_build(s, NULL, &h, &err) == FA_OK);
	const struct fa_hist_series *sr = series_of(&h, 0, "cpu_flash"),
				     *other = series_of(&h, 1, "cpu_flash");
	FA_REQUIRE(sr && sr->n_steps == 1 && other && other->n_steps == 1);
	FA_CHECK(sr->steps[0].timing_changed && !other->steps[0].timing_changed);
	FA_CHECK(strcmp(sr->points[0].timing, "cpu") == 0 &&
		 strcmp(sr->points[1].timing, "graph-cold") == 0);
	char *md = history_text(&h, FA_FMT_MD, &rc);
	FA_REQUIRE(rc == FA_OK && md);
	FA_CHECKF(strstr(md, "ms (+15.0%) at ") && strstr(md, " (timing changed: cpu -> graph-cold)\n"),
		  "%s", md);
	FA_CHECK(strstr(md, " NEW (timing)") != NULL);
	free(md);
	char *json = history_text(&h, FA_FMT_JSON, &rc);
	FA_CHECK(rc == FA_OK && json && strstr(json, "\"timing_changed\": true") &&
		 strstr(json, "\"timing_changed\": false"));
	free(json);
	fa_history_free(&h);
	fa_store_close(s);
}

/* The "New regressions" list names a case by the number the table gives
 * it (from 1): the table's row marked NEW for that kernel has the same
 * number as the list's "on case N". */
static void check_regression_numbers(const struct fa_history *h, const char *md)
{
	int listed = 0;
	for (int i = 0; i < h->n_series; i++) {
		const struct fa_hist_series *sr = &h->series[i];
		char want[600];
		const char *line;
		int row_no = -1;
		if (!sr->new_regression)
			continue;
		listed++;
		snprintf(want, sizeof want, "- %s on case %d `%s`", sr->kernel, sr->case_idx + 1,
			 sr->key);
		FA_CHECKF(strstr(md, want) != NULL, "no '%s' in:\n%s", want, md);
		/* the table row: "|   N | ... | KERNEL ... | ... NEW |" */
		snprintf(want, sizeof want, "| %s ", sr->kernel);
		for (line = md; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
			const char *end = strchr(line, '\n');
			size_t n = end ? (size_t)(end - line) : strlen(line);
			char buf[4096];
			if (n >= sizeof buf || line[0] != '|')
				continue;
			memcpy(buf, line, n);
			buf[n] = '\0';
			if (strstr(buf, want) && strstr(buf, " NEW")) {
				row_no = atoi(buf + 1);
				break;
			}
		}
		FA_CHECKF(row_no == sr->case_idx + 1, "%s: the table's NEW row is #%d, the list says %d",
			  sr->kernel, row_no, sr->case_idx + 1);
	}
	FA_CHECK(listed == h->n_new_regressions && listed > 0);
	FA_CHECKF(!strstr(md, " on case 0 "), "a case numbered 0:\n%s", md);
}

FA_TEST(history, regressions_numbered_as_the_table)
{
	struct fa_store *s = fa_fixture_open(), *n = fa_fixture_history_open();
	struct fa_history_opts o;
	struct fa_history h;
	struct fa_err err;
	enum fa_rc rc;
	char *md;
	FA_REQUIRE(s && n);
	fa_err_clear(&err);
	/* cpu_flash's new regression is on the fixture's first case, idx 0 */
	FA_REQUIRE(fa_history_build(s, NULL, &h, &err) == FA_OK);
	md = history_text(&h, FA_FMT_MD, &rc);
	FA_REQUIRE(rc == FA_OK && md);
	FA_CHECKF(strstr(md, "- cpu_flash on case 1 `batch=2,") != NULL, "%s", md);
	check_regression_numbers(&h, md);
	free(md);
	fa_history_free(&h);
	fa_history_opts_init(&o);
	o.label = "nightly";
	FA_REQUIRE(fa_history_build(n, &o, &h, &err) == FA_OK);
	md = history_text(&h, FA_FMT_MD, &rc);
	FA_REQUIRE(rc == FA_OK && md);
	check_regression_numbers(&h, md);
	free(md);
	fa_history_free(&h);
	fa_store_close(n);
	fa_store_close(s);
}

FA_TEST(history, bad_options)
{
	struct fa_store *s = fa_fixture_open();
	struct fa_history_opts o;
	struct fa_history h;
	struct fa_err err;
	FA_REQUIRE(s);
	static const char *const dates[] = {"yesterday", "2026-13-01", "2026-11-5", "2026-11-05T1",
					    "2026-11-05 03:00", ""};
	for (size_t i = 0; i < sizeof dates / sizeof dates[0]; i++) {
		fa_history_opts_init(&o);
		o.since = dates[i];
		fa_err_clear(&err);
		FA_CHECKF(fa_history_build(s, &o, &h, &err) == FA_ERR_USAGE, "since '%s'", dates[i]);
		FA_CHECK(strstr(err.msg, "--since") != NULL && h.series == NULL);
	}
	fa_history_opts_init(&o);
	o.where = "q_len == = 16";
	fa_err_clear(&err);
	FA_CHECK(fa_history_build(s, &o, &h, &err) == FA_ERR_INPUT);
	FA_CHECK(strcmp(err.file, "--where") == 0 && err.line == 1 && err.col == 10);
	FA_CHECK(strcmp(err.text, "q_len == = 16") == 0);
	fa_history_opts_init(&o);
	o.where = "colour == red";
	fa_err_clear(&err);
	FA_CHECK(fa_history_build(s, &o, &h, &err) == FA_ERR_INPUT && err.col == 1);
	fa_history_opts_init(&o);
	o.min_effect = -0.1;
	fa_err_clear(&err);
	FA_CHECK(fa_history_build(s, &o, &h, &err) == FA_ERR_USAGE);
	fa_history_opts_init(&o);
	o.kernel = "";
	fa_err_clear(&err);
	FA_CHECK(fa_history_build(s, &o, &h, &err) == FA_ERR_USAGE);
	fa_history_free(&h); /* harmless after a failure */
	fa_store_close(s);
}

/* ---- The command -------------------------------------------------------------------------- */

FA_TEST(history, command_exit_status)
{
	struct fa_proc_result r;
	struct fa_store *s = fa_fixture_history_open();
	char db[1200];
	FA_REQUIRE(s);
	fa_store_close(s);
	snprintf(db, sizeof db, "%s", fa_fixture_history_path());
	/* the nightly job: a new regression exits 1 after writing the page */
	fa_proc_run((char *[]){"history", "--db", db, "--label", "nightly", NULL}, NULL, 60, &r);
	FA_CHECKF(r.status == 1, "status %d: %s", r.status, r.err);
	FA_CHECK(strncmp(r.out, "# fabench history\n", 18) == 0 &&
		 strstr(r.out, "## New regressions"));
	FA_CHECK(strstr(r.err, "1 new regression at the latest run") != NULL);
	fa_proc_free(&r);
	/* without that kernel: 0 */
	fa_proc_run((char *[]){"history", "--db", db, "--label", "nightly", "--kernel", "cpu_flash",
			       "--format", "csv", NULL},
		    NULL, 60, &r);
	FA_CHECKF(r.status == 0, "status %d: %s", r.status, r.err);
	int lines = 0;
	for (const char *p = r.out; *p; p++)
		lines += *p == '\n';
	FA_CHECK(lines == 1 + 3 * FA_FIXTURE_HISTORY_NIGHTLY);
	fa_proc_free(&r);
	/* a 10% threshold hides the 7% step */
	fa_proc_run((char *[]){"history", "--db", db, "--label", "nightly", "--min-effect", "10",
			       "--format", "json", NULL},
		    NULL, 60, &r);
	FA_CHECK(r.status == 0 && strstr(r.out, "\"new_regressions\": 0"));
	fa_proc_free(&r);
	/* a bad expression points into it, as fabench run --where does */
	fa_proc_run((char *[]){"history", "--db", db, "--where", "q_len == = 16", NULL}, NULL, 60,
		    &r);
	FA_CHECK(r.status == 2);
	FA_CHECKF(strncmp(r.err, "--where:1:10: ", 14) == 0 && strstr(r.err, " 1 | q_len == = 16\n") &&
			  strstr(r.err, "^"),
		  "stderr:\n%s", r.err);
	fa_proc_free(&r);
	static const char *const bad[][4] = {
		{"history", "--since", "last-week", NULL},
		{"history", "--format", "html", NULL},
		{"history", "--min-effect", "x", NULL},
		{"history", "extra", NULL},
		{"history", "--bogus", NULL},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char *argv[8];
		int n = 0;
		for (int k = 0; bad[i][k]; k++)
			argv[n++] = (char *)bad[i][k];
		argv[n++] = "--db";
		argv[n++] = db;
		argv[n] = NULL;
		fa_proc_run(argv, NULL, 60, &r);
		FA_CHECKF(r.status == 2, "case %zu: status %d: %s", i, r.status, r.err);
		fa_proc_free(&r);
	}
	char missing[1200];
	snprintf(missing, sizeof missing, "%s/none.db", fa_test_tmpdir());
	fa_proc_run((char *[]){"history", "--db", missing, NULL}, NULL, 60, &r);
	FA_CHECK(r.status == 2 && access(missing, F_OK) != 0);
	fa_proc_free(&r);
}

/* A nightly database into which another machine's nights were merged: the
 * fixture's latest night (the new regression) run on another GPU. The
 * times of two devices made one series, so a machine's difference was a
 * step, and a new regression, and nothing said which card a night ran on. */
FA_TEST(history, devices_are_series_of_their_own)
{
	struct fa_proc_result r;
	struct fa_store *s = fa_fixture_history_open();
	char db[1200];
	FA_REQUIRE(s);
	FA_REQUIRE(exec_sql(s, "UPDATE runs SET device_name = 'NVIDIA H200', host = 'gpu-07' "
			       "WHERE id = (SELECT max(id) FROM runs WHERE label = 'nightly' AND "
			       "status = 'complete')"));
	fa_store_close(s);
	snprintf(db, sizeof db, "%s", fa_fixture_history_path());
	fa_proc_run((char *[]){"history", "--db", db, "--label", "nightly", NULL}, NULL, 60, &r);
	FA_CHECKF(r.status == 0, "status %d: %s", r.status, r.err);
	FA_CHECKF(strstr(r.out, "- devices: 2, each with series of its own") &&
			  strstr(r.out, "NVIDIA H200 (gpu-07)") &&
			  strstr(r.out, "| cpu_flash on NVIDIA H200 ") && strstr(r.out, "on AMD EPYC") &&
			  strstr(r.out, "new regressions: 0"),
		  "%s", r.out);
	fa_proc_free(&r);
	fa_proc_run((char *[]){"history", "--db", db, "--label", "nightly", "--format", "csv", NULL},
		    NULL, 60, &r);
	FA_CHECKF(r.status == 0 && strstr(r.out, ",NVIDIA H200,gpu-07\n"), "%d %s", r.status,
		  r.err);
	fa_proc_free(&r);
	fa_proc_run((char *[]){"history", "--db", db, "--label", "nightly", "--format", "json", NULL},
		    NULL, 60, &r);
	FA_CHECKF(r.status == 0 && strstr(r.out, "\"device\": \"NVIDIA H200\", \"host\": \"gpu-07\""),
		  "%d %s", r.status, r.err);
	fa_proc_free(&r);
	/* the plot names each device's series too (both were 'cpu_flash', in
	 * one colour) */
	char gp[1300];
	snprintf(gp, sizeof gp, "%s/devices.gp", fa_test_tmpdir());
	fa_proc_run((char *[]){"plot", "history", "--db", db, "--label", "nightly", "--script", gp,
			       NULL},
		    NULL, 60, &r);
	char *script = fa_test_read_file(gp, NULL);
	FA_CHECKF(r.status == 0 && script && strstr(script, "title 'cpu_flash on NVIDIA H200'") &&
			  strstr(script, "title 'cpu_flash on AMD EPYC"),
		  "%d %s", r.status, r.err);
	free(script);
	fa_proc_free(&r);
}

/* A backward and a forward-and-backward of one shape differ only in their
 * pass: the history table names it in a pass column, and the plot's panels
 * in their titles, so the two series are told apart. */
FA_TEST(history, backward_series_name_their_pass)
{
	char db[1200], script[1200], *text;
	struct fa_proc_result r;
	snprintf(db, sizeof db, "%s/hist_bwd.db", fa_test_tmpdir());
	snprintf(script, sizeof script, "%s/hist_bwd.gp", fa_test_tmpdir());
	unlink(db);
	for (int i = 0; i < 2; i++) {
		fa_proc_run((char *[]){"run", "tests/suites/bwd.yaml", "--backend", "cpu", "--kernels",
				       "cpu_flash_bwd", "--where", "q_len == 16 && mask == none",
				       "--db", db, "--quiet", NULL},
			    NULL, 120, &r);
		FA_REQUIRE(r.status == 0);
		fa_proc_free(&r);
	}
	fa_proc_run((char *[]){"history", "--db", db, NULL}, NULL, 60, &r);
	FA_CHECKF(r.status == 0 || r.status == 1, "status %d: %s", r.status, r.err);
	FA_CHECKF(strstr(r.out, "| pass ") && strstr(r.out, "| bwd ") &&
			  strstr(r.out, "| fwd_bwd "),
		  "%s", r.out);
	fa_proc_free(&r);
	fa_proc_run((char *[]){"plot", "history", "--db", db, "--script", script, NULL}, NULL, 60,
		    &r);
	FA_CHECKF(r.status == 0, "status %d: %s", r.status, r.err);
	fa_proc_free(&r);
	text = fa_test_read_file(script, NULL);
	FA_CHECKF(text && strstr(text, " pass=bwd'") && strstr(text, " pass=fwd_bwd'"), "%s",
		  text ? text : "(null)");
	free(text);
}
