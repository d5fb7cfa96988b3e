/* test_reader.c - the reader of stored runs (harness/store/reader.h) and
 * its arena (harness/base/arena.h), on the fixture database (tests/
 * fixture.h): runs one by one and listed, the ids a spec names, typed cases
 * and results with and without samples, untyped rows, and the errors of a
 * run that is not there and of a database that lost a table.
 *
 * Report, compare, history and plot read through it; their golden tests
 * check the rest of what it returns.
 */
#include <math.h>
#include <sqlite3.h>
#include <stdalign.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../harness/base/arena.h"
#include "../harness/store/reader.h"
#include "fixture.h"
#include "test.h"

FA_TEST(reader, arena_alloc_strdup_free)
{
	struct fa_arena a = {0};
	char *p[64];
	/* many small blocks, each aligned, zeroed and apart from the others */
	for (int i = 0; i < 64; i++) {
		p[i] = fa_arena_alloc(&a, (size_t)i + 1);
		FA_REQUIRE(p[i]);
		FA_CHECK((uintptr_t)p[i] % alignof(max_align_t) == 0);
		for (int k = 0; k <= i; k++)
			FA_CHECK(p[i][k] == 0);
		memset(p[i], i + 1, (size_t)i + 1);
	}
	for (int i = 0; i < 64; i++)
		FA_CHECK(p[i][i] == (char)(i + 1) && p[i][0] == (char)(i + 1));
	/* larger than a block: its own, and the current block keeps serving */
	char *big = fa_arena_alloc(&a, (size_t)1 << 20);
	char *after = fa_arena_alloc(&a, 8);
	FA_REQUIRE(big && after);
	FA_CHECK(big[0] == 0 && big[((size_t)1 << 20) - 1] == 0);
	FA_CHECK(after < big || after >= big + ((size_t)1 << 20));
	FA_CHECK(strcmp(fa_arena_strdup(&a, "kernel"), "kernel") == 0);
	FA_CHECK(strcmp(fa_arena_strdup(&a, NULL), "") == 0);
	FA_CHECK(fa_arena_alloc(&a, 0) != NULL);
	fa_arena_free(&a);
	FA_CHECK(a.head == NULL);
	fa_arena_free(&a); /* empty: harmless */
	fa_arena_free(NULL);
}

FA_TEST(reader, runs_listed_oldest_first)
{
	struct fa_store *s = fa_fixture_open();
	struct fa_arena a = {0};
	struct fa_reader_run *runs, one;
	struct fa_err err;
	int32_t n;
	FA_REQUIRE(s);
	fa_err_clear(&err);
	FA_REQUIRE(fa_reader_runs_list(s, &a, &runs, &n, &err) == FA_OK);
	FA_REQUIRE(n == 3);
	for (int i = 0; i < 3; i++)
		FA_CHECK(runs[i].id == i + 1);
	FA_CHECK(strcmp(runs[0].label, "baseline") == 0 && runs[0].git_dirty == 0);
	FA_CHECK(strcmp(runs[1].label, "nightly") == 0 && runs[1].git_dirty == 1);
	FA_CHECK(strcmp(runs[2].status, "incomplete") == 0 && strcmp(runs[0].status, "complete") == 0);
	FA_CHECK(strcmp(runs[0].git_commit, "3f9a1c2e7b5d4f60a8e1c9b7d2f4a6e8c0b1d3f5") == 0);
	FA_CHECK(strcmp(runs[0].suite_name, "smoke") == 0 && strcmp(runs[0].backend, "cpu") == 0);
	FA_CHECK(strcmp(runs[0].ab_group, "") == 0 && runs[0].ab_earlier == 0);

	/* one run: the same row */
	FA_REQUIRE(fa_reader_run_get(s, 2, &a, &one, &err) == FA_OK);
	FA_CHECK(one.id == 2 && strcmp(one.started_at, runs[1].started_at) == 0 &&
		 strcmp(one.git_commit, runs[1].git_commit) == 0 && one.git_dirty == 1);

	/* one that is not there */
	char want[1100];
	fa_err_clear(&err);
	FA_CHECK(fa_reader_run_get(s, 99, &a, &one, &err) == FA_ERR_NOT_FOUND);
	snprintf(want, sizeof want, "no run 99 in '%s'", fa_store_path(s));
	FA_CHECKF(strcmp(err.msg, want) == 0, "message '%s'", err.msg);
	fa_arena_free(&a);
	fa_store_close(s);
}

FA_TEST(reader, runs_match_by_spec)
{
	struct fa_store *s = fa_fixture_open();
	struct fa_err err;
	int64_t *ids;
	int n;
	const char *by;
	FA_REQUIRE(s);
	fa_err_clear(&err);
	FA_REQUIRE(fa_reader_runs_match(s, "nightly", &ids, &n, &by, &err) == FA_OK);
	FA_CHECK(n == 2 && ids[0] == 2 && ids[1] == 3 && strcmp(by, "label") == 0);
	free(ids);
	FA_REQUIRE(fa_reader_runs_match(s, "1", &ids, &n, &by, &err) == FA_OK);
	FA_CHECK(n == 1 && ids[0] == 1 && strcmp(by, "id") == 0);
	free(ids);
	FA_REQUIRE(fa_reader_runs_match(s, "latest", &ids, &n, &by, &err) == FA_OK);
	FA_CHECK(n == 1 && ids[0] == 3 && strcmp(by, "latest") == 0);
	free(ids);
	FA_REQUIRE(fa_reader_runs_match(s, "8C4E", &ids, &n, &by, &err) == FA_OK);
	FA_CHECK(n == 2 && ids[0] == 2 && ids[1] == 3 && strcmp(by, "commit") == 0);
	free(ids);
	fa_err_clear(&err);
	FA_CHECK(fa_reader_runs_match(s, "8c4", &ids, &n, &by, &err) == FA_ERR_NOT_FOUND);
	FA_CHECK(ids == NULL && n == 0 && strstr(err.msg, "no run '8c4'") == err.msg);
	fa_store_close(s);
}

FA_TEST(reader, cases_and_results)
{
	struct fa_store *s = fa_fixture_open();
	struct fa_arena a = {0};
	struct fa_reader_case *cs;
	struct fa_reader_result *res, *bare;
	struct fa_err err;
	int nc, nr, nb, skips = 0;
	FA_REQUIRE(s);
	fa_err_clear(&err);
	FA_REQUIRE(fa_reader_cases(s, 1, &a, &cs, &nc, &err) == FA_OK);
	FA_REQUIRE(nc == FA_FIXTURE_CASES);
	for (int i = 0; i < nc; i++)
		FA_CHECK(cs[i].idx == i && cs[i].c.index == i);
	FA_CHECK(cs[4].c.p.q_len == 1 && cs[4].c.p.kv_len == 2048 && cs[4].c.p.heads == 8 &&
		 cs[4].c.p.kv_heads == 2);
	FA_CHECK(cs[3].c.p.head_dim == 72 && cs[3].c.p.mask == FA_MASK_CAUSAL);
	FA_CHECK(cs[5].c.p.mask == FA_MASK_SLIDING_WINDOW && cs[5].c.p.window == 256);
	FA_CHECK(cs[7].c.p.varlen == 1 && cs[0].c.p.varlen == 0);

	/* run 1: cpu_dense and cpu_flash on 8 cases, cpu_dense skipped on case 5 */
	FA_REQUIRE(fa_reader_results(s, 1, "smoke", FA_READER_SAMPLES, &a, &res, &nr, &err) ==
		   FA_OK);
	FA_REQUIRE(nr == 16);
	for (int i = 0; i < nr; i++) {
		const struct fa_reader_result *r = &res[i];
		FA_CHECK(r->run_id == 1 && r->case_idx == i / 2 && strcmp(r->suite, "smoke") == 0);
		FA_CHECK(strcmp(r->kernel, i % 2 ? "cpu_flash" : "cpu_dense") == 0);
		FA_CHECK(r->p.head_dim == cs[r->case_idx].c.p.head_dim);
		FA_CHECK(strcmp(r->values[5], "") != 0); /* head_dim as text */
		if (r->status == FA_STATUS_SKIP) {
			skips++;
			FA_CHECK(r->case_idx == 5 && r->reason[0] && isnan(r->median_ms) &&
				 r->n_read == 0);
		} else {
			FA_CHECK(r->status == FA_STATUS_PASS && r->median_ms > 0 && r->tflops > 0);
			FA_CHECK(r->n_samples == 12 && r->n_read == 12 && r->samples[0] > 0);
		}
	}
	FA_CHECK(skips == 1);
	FA_CHECK(strcmp(fa_reader_param_names[5], "head_dim") == 0);
	/* without samples: the same rows, no samples attached */
	FA_REQUIRE(fa_reader_results(s, 1, "smoke", 0, &a, &bare, &nb, &err) == FA_OK);
	FA_REQUIRE(nb == nr);
	for (int i = 0; i < nb; i++)
		FA_CHECK(bare[i].id == res[i].id && bare[i].samples == NULL && bare[i].n_read == 0 &&
			 bare[i].n_samples == res[i].n_samples);
	struct fa_case c;
	fa_reader_result_case(&res[8], &c);
	FA_CHECK(c.index == 4 && c.p.q_len == 1 && c.key == NULL);
	/* a run that is not there has no results */
	FA_CHECK(fa_reader_results(s, 99, "", 0, &a, &bare, &nb, &err) == FA_OK && nb == 0 &&
		 bare == NULL);
	fa_arena_free(&a);
	fa_store_close(s);
}

FA_TEST(reader, rows_every_column)
{
	struct fa_store *s = fa_fixture_open();
	struct fa_rows run, cases, res;
	struct fa_err err;
	double v;
	FA_REQUIRE(s);
	fa_err_clear(&err);
	FA_REQUIRE(fa_reader_rows(s, FA_ROWS_RUN, 3, &run, &err) == FA_OK);
	FA_CHECK(run.nrows == 1 && strcmp(run.cols[0], "id") == 0);
	FA_CHECK(fa_rows_int(&run, 0, "id") == 3);
	FA_CHECK(fa_rows_cell(&run, 0, "finished_at")->type == FA_CELL_NULL); /* killed */
	FA_CHECK(strcmp(fa_rows_text(&run, 0, "label"), "nightly") == 0);
	FA_CHECK(fa_rows_text(&run, 0, "id") == NULL);     /* not text */
	FA_CHECK(fa_rows_cell(&run, 0, "nosuch") == NULL); /* no such column */
	FA_CHECK(!fa_rows_real(&run, 0, "label", &v));
	FA_CHECK(fa_rows_real(&run, 0, "id", &v) && v == 3);
	fa_rows_free(&run);

	FA_REQUIRE(fa_reader_rows(s, FA_ROWS_CASES, 1, &cases, &err) == FA_OK);
	FA_CHECK(cases.nrows == FA_FIXTURE_CASES);
	FA_CHECK(strcmp(cases.cols[FA_ROWS_CASE_FIRST_PARAM], "batch") == 0);
	FA_CHECK(strcmp(cases.cols[FA_ROWS_CASE_END_PARAM - 1], "scale_set") == 0);
	FA_CHECK(fa_rows_int(&cases, 4, "q_len") == 1);
	fa_rows_free(&cases);

	FA_REQUIRE(fa_reader_rows(s, FA_ROWS_RESULTS, 1, &res, &err) == FA_OK);
	FA_CHECK(res.nrows == 16 && strcmp(res.cols[FA_ROWS_RESULT_FIRST_FIELD], "kernel") == 0);
	FA_CHECK(fa_rows_real(&res, 0, "median_ms", &v) && v > 0);
	fa_rows_free(&res);

	/* no run: no rows; an unknown kind: a usage error */
	FA_REQUIRE(fa_reader_rows(s, FA_ROWS_RUN, 99, &run, &err) == FA_OK);
	FA_CHECK(run.nrows == 0);
	fa_rows_free(&run);
	fa_err_clear(&err);
	FA_CHECK(fa_reader_rows(s, 7, 1, &run, &err) == FA_ERR_USAGE);
	FA_CHECK(strcmp(err.msg, "unknown kind of rows 7") == 0);
	fa_rows_free(&run);
	fa_store_close(s);
}

/* A database whose samples and cases tables are gone (the schema version
 * still says 3): every read that needs them fails with FA_ERR_DB naming the
 * run and the file. */
FA_TEST(reader, lost_table_is_a_db_error)
{
	struct fa_store *s = fa_fixture_open();
	struct fa_arena a = {0};
	struct fa_reader_result *res;
	struct fa_reader_case *cs;
	struct fa_rows rows;
	struct fa_err err;
	sqlite3 *db;
	char want[1100];
	int n;
	FA_REQUIRE(s);
	fa_store_close(s);
	FA_REQUIRE(sqlite3_open(fa_fixture_path(), &db) == SQLITE_OK);
	FA_REQUIRE(sqlite3_exec(db, "DROP TABLE samples", NULL, NULL, NULL) == SQLITE_OK);
	sqlite3_close(db);
	FA_REQUIRE(s = fa_fixture_open_db(fa_fixture_path()));
	snprintf(want, sizeof want, "cannot read run 1 from '%s': ", fa_store_path(s));

	fa_err_clear(&err);
	FA_CHECK(fa_reader_results(s, 1, "smoke", FA_READER_SAMPLES, &a, &res, &n, &err) ==
		 FA_ERR_DB);
	FA_CHECKF(strstr(err.msg, want) == err.msg, "message '%s'", err.msg);
	/* without samples it still reads */
	FA_CHECK(fa_reader_results(s, 1, "smoke", 0, &a, &res, &n, &err) == FA_OK && n == 16);
	fa_store_close(s);

	FA_REQUIRE(sqlite3_open(fa_fixture_path(), &db) == SQLITE_OK);
	FA_REQUIRE(sqlite3_exec(db, "PRAGMA foreign_keys = OFF; DROP TABLE results; "
				    "DROP TABLE cases",
				NULL, NULL, NULL) == SQLITE_OK);
	sqlite3_close(db);
	FA_REQUIRE(s = fa_fixture_open_db(fa_fixture_path()));
	fa_err_clear(&err);
	FA_CHECK(fa_reader_cases(s, 1, &a, &cs, &n, &err) == FA_ERR_DB);
	FA_CHECKF(strstr(err.msg, want) == err.msg, "message '%s'", err.msg);
	fa_err_clear(&err);
	FA_CHECK(fa_reader_results(s, 1, "smoke", 0, &a, &res, &n, &err) == FA_ERR_DB);
	FA_CHECKF(strstr(err.msg, want) == err.msg, "message '%s'", err.msg);
	fa_err_clear(&err);
	FA_CHECK(fa_reader_rows(s, FA_ROWS_CASES, 1, &rows, &err) == FA_ERR_DB);
	FA_CHECKF(strstr(err.msg, want) == err.msg, "message '%s'", err.msg);
	fa_rows_free(&rows);
	fa_arena_free(&a);
	fa_store_close(s);
}
