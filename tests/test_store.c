/* test_store.c - the SQLite store: creating, migrating and refusing files,
 * the round trip of every field, transactions that fail whole, run lookup,
 * two writers on one file and bound parameters. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../harness/store/store.h"
#include "test.h"

/* ---- helpers --------------------------------------------------------------- */

/* A fresh database path in the test's folder (the file and its WAL removed). */
static const char *fresh_db(const char *name)
{
	static char path[1200];
	char aux[1300];
	snprintf(path, sizeof path, "%s/%s", fa_test_tmpdir(), name);
	unlink(path);
	snprintf(aux, sizeof aux, "%s-wal", path);
	unlink(aux);
	snprintf(aux, sizeof aux, "%s-shm", path);
	unlink(aux);
	return path;
}

static int file_exists(const char *path)
{
	struct stat sb;
	return stat(path, &sb) == 0;
}

/* One integer from a query without parameters (or with one int64 run_id
 * bound when the SQL has a '?'); -999 on error. */
static int64_t query_int(sqlite3 *db, const char *sql, int64_t arg)
{
	sqlite3_stmt *st;
	int64_t v = -999;
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return v;
	if (sqlite3_bind_parameter_count(st) > 0)
		sqlite3_bind_int64(st, 1, arg);
	if (sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

/* Raw SQLite handle on path, outside the store (to forge files). */
static sqlite3 *raw_open(const char *path)
{
	sqlite3 *db = NULL;
	if (sqlite3_open(path, &db) != SQLITE_OK) {
		sqlite3_close(db);
		return NULL;
	}
	return db;
}

static void fill_run_info(struct fa_run_info *ri, const char *label)
{
	memset(ri, 0, sizeof *ri);
	ri->started_at = "2026-11-25T21:40:00Z";
	ri->git_commit = "8c4e2a1f9d3b7c5e0a2f4d6b8e1c3a5f7d9b0e2c";
	ri->git_dirty = 1;
	ri->host = "bench-01";
	ri->backend = "cuda";
	ri->device_name = "NVIDIA H100 80GB HBM3";
	ri->device_arch = "sm_90";
	ri->driver = "550.54.15";
	ri->runtime = "12.4";
	ri->suite_path = "suites/smoke.yaml";
	ri->suite_name = "smoke";
	ri->suite_hash = "9f2c41d07be3a815";
	ri->command_line = "fabench run suites/smoke.yaml";
	ri->label = label;
	ri->seed = 18446744073709551557ull;
	ri->version = "0.1.0";
	ri->source = "fabench";
}

/* A plain case: batch 2, 8 heads, 128 tokens, head_dim 64, fp32, no mask. */
static void simple_case(struct fa_case *c, int idx, char *key, size_t key_size)
{
	memset(c, 0, sizeof *c);
	c->index = idx;
	c->p.batch = 2;
	c->p.heads = c->p.kv_heads = 8;
	c->p.q_len = c->p.kv_len = 128;
	c->p.head_dim = c->p.head_dim_v = 64;
	c->p.dtype = FA_DTYPE_FP32;
	c->p.mask = FA_MASK_NONE;
	c->p.layout = FA_LAYOUT_BSHD;
	c->p.total_q = c->p.total_k = 256;
	c->p.scale = 0.125f;
	c->dist = FA_DIST_NORMAL;
	c->seed = 7;
	snprintf(key, key_size, "case-%d", idx);
	c->key = key;
}

/* A passing result with n samples of about ms. */
static void simple_result(struct fa_result *r, const char *kernel, double *samples, int n,
			  double ms)
{
	memset(r, 0, sizeof *r);
	r->kernel = kernel;
	r->backend = "cpu";
	r->params = "";
	r->status = FA_STATUS_PASS;
	r->timing = "cpu";
	for (int i = 0; i < n; i++)
		samples[i] = ms * (1 + 0.01 * i);
	r->samples = samples;
	r->t.n = n;
	r->t.median_ms = r->t.mean_ms = r->t.min_ms = r->t.max_ms = ms;
	r->flops = 1e9;
	r->tflops = 1;
	r->bytes = 1e6;
	r->gbps = 1;
	r->st.same_max_abs = -1;
	r->st.worst_index = -1;
	r->tel.sm_clock_mhz = r->tel.sm_clock_max_mhz = r->tel.temp_c = r->tel.power_w = NAN;
	r->tel.throttle_reasons = -1;
}

/* splitmix64: the test's own stream of values drawn from its seed. */
static uint64_t next_u64(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* A value in [lo, 2 lo): never zero. */
static double draw(uint64_t *state, double lo)
{
	return lo * (1.0 + (double)(next_u64(state) >> 11) * 0x1.0p-53);
}

/* A non-NULL pointer that fa_store_open must overwrite with NULL on error. */
static char sentinel;
#define NOT_NULL ((struct fa_store *)(void *)&sentinel)

/* ---- opening --------------------------------------------------------------- */

FA_TEST(store, create_makes_folders_and_schema)
{
	char path[1200];
	struct fa_store *s = NULL;
	struct fa_err err;
	sqlite3 *db;
	snprintf(path, sizeof path, "%s/nested/deeper/fabench.db", fa_test_tmpdir());
	unlink(path);
	fa_err_clear(&err);
	FA_REQUIRE(fa_store_open(path, 1, &s, &err) == FA_OK);
	FA_REQUIRE(s != NULL);
	FA_CHECK(file_exists(path));
	FA_CHECK(strcmp(fa_store_path(s), path) == 0);
	db = fa_store_db(s);
	FA_CHECK(query_int(db, "PRAGMA user_version", 0) == FA_STORE_SCHEMA_VERSION);
	FA_CHECK(query_int(db, "PRAGMA foreign_keys", 0) == 1);
	/* the wait for another writer is a busy handler (it announces itself),
	 * not PRAGMA busy_timeout: store/a_writer_outwaits_a_long_transaction */
	FA_CHECK(query_int(db, "SELECT count(*) FROM pragma_journal_mode WHERE journal_mode = 'wal'",
			   0) == 1);
	FA_CHECK(query_int(db, "PRAGMA synchronous", 0) == 1); /* NORMAL */
	FA_CHECK(query_int(db,
			   "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN "
			   "('runs', 'cases', 'results', 'samples', 'calibrations')",
			   0) == 5);
	FA_CHECK(query_int(db, "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name IN "
			       "('runs_by_label', 'runs_by_commit', 'cases_by_key', "
			       "'results_by_run', 'results_by_case')",
			   0) == 5);
	fa_store_close(s);
}

FA_TEST(store, memory_database)
{
	struct fa_store *s = NULL;
	struct fa_err err;
	fa_err_clear(&err);
	FA_REQUIRE(fa_store_open(":memory:", 1, &s, &err) == FA_OK);
	FA_CHECK(query_int(fa_store_db(s), "PRAGMA user_version", 0) == FA_STORE_SCHEMA_VERSION);
	fa_store_close(s);
}


FA_TEST(store, missing_file_without_create)
{
	const char *path = fresh_db("absent.db");
	struct fa_store *s = NOT_NULL;
	struct fa_err err;
	char want[1300];
	fa_err_clear(&err);
	FA_CHECK(fa_store_open(path, 0, &s, &err) == FA_ERR_NOT_FOUND);
	FA_CHECK(s == NULL);
	snprintf(want, sizeof want, "no database at '%s'", path);
	FA_CHECKF(strcmp(err.msg, want) == 0, "message '%s'", err.msg);
	FA_CHECK(!file_exists(path));
}

FA_TEST(store, reopen_keeps_data)
{
	const char *path = fresh_db("reopen.db");
	struct fa_store *s = NULL;
	struct fa_run_info ri;
	struct fa_err err;
	int64_t id = 0, found = 0;
	fa_err_clear(&err);
	fill_run_info(&ri, "first");
	FA_REQUIRE(fa_store_open(path, 1, &s, &err) == FA_OK);
	FA_REQUIRE(fa_store_run_begin(s, &ri, &id, &err) == FA_OK);
	FA_CHECK(id > 0);
	fa_store_close(s);
	s = NULL;
	/* create = 0: the file must be there and keep its run */
	FA_REQUIRE(fa_store_open(path, 0, &s, &err) == FA_OK);
	FA_CHECK(query_int(fa_store_db(s), "PRAGMA user_version", 0) == FA_STORE_SCHEMA_VERSION);
	FA_CHECK(query_int(fa_store_db(s), "SELECT count(*) FROM runs", 0) == 1);
	FA_CHECK(fa_store_find_run(s, "first", &found, &err) == FA_OK);
	FA_CHECK(found == id);
	fa_store_close(s);
}

FA_TEST(store, migrates_an_empty_version_0_file)
{
	const char *path = fresh_db("v0.db");
	struct fa_store *s = NULL;
	struct fa_err err;
	sqlite3 *raw = raw_open(path);
	FA_REQUIRE(raw);
	/* a database of another tool that happens to be version 0 */
	FA_REQUIRE(sqlite3_exec(raw, "CREATE TABLE notes (t TEXT); INSERT INTO notes VALUES ('x')",
				NULL, NULL, NULL) == SQLITE_OK);
	sqlite3_close(raw);
	fa_err_clear(&err);
	FA_REQUIRE(fa_store_open(path, 0, &s, &err) == FA_OK);
	FA_CHECK(query_int(fa_store_db(s), "PRAGMA user_version", 0) == FA_STORE_SCHEMA_VERSION);
	FA_CHECK(query_int(fa_store_db(s), "SELECT count(*) FROM runs", 0) == 0);
	FA_CHECK(query_int(fa_store_db(s), "SELECT count(*) FROM notes", 0) == 1);
	fa_store_close(s);
}

FA_TEST(store, failed_migration_rolls_back)
{
	const char *path = fresh_db("clash.db");
	struct fa_store *s = NOT_NULL;
	struct fa_err err;
	sqlite3 *raw = raw_open(path);
	FA_REQUIRE(raw);
	FA_REQUIRE(sqlite3_exec(raw, "CREATE TABLE runs (x INTEGER)", NULL, NULL, NULL) == SQLITE_OK);
	sqlite3_close(raw);
	fa_err_clear(&err);
	FA_CHECK(fa_store_open(path, 0, &s, &err) == FA_ERR_DB);
	FA_CHECK(s == NULL);
	FA_CHECKF(strstr(err.msg, "cannot migrate to schema version 1 in '") &&
			  strstr(err.msg, "table runs already exists"),
		  "message '%s'", err.msg);
	raw = raw_open(path);
	FA_REQUIRE(raw);
	/* nothing of the half-applied migration is left */
	FA_CHECK(query_int(raw, "PRAGMA user_version", 0) == 0);
	FA_CHECK(query_int(raw, "SELECT count(*) FROM sqlite_master WHERE name = 'cases'", 0) == 0);
	sqlite3_close(raw);
}

FA_TEST(store, newer_schema_refused)
{
	const char *path = fresh_db("future.db");
	struct fa_store *s = NULL;
	struct fa_err err;
	char want[1400];
	sqlite3 *raw;
	fa_err_clear(&err);
	FA_REQUIRE(fa_store_open(path, 1, &s, &err) == FA_OK);
	fa_store_close(s);
	raw = raw_open(path);
	FA_REQUIRE(raw);
	FA_REQUIRE(sqlite3_exec(raw, "PRAGMA user_version = 99", NULL, NULL, NULL) == SQLITE_OK);
	sqlite3_close(raw);
	s = NOT_NULL;
	FA_CHECK(fa_store_open(path, 1, &s, &err) == FA_ERR_DB);
	FA_CHECK(s == NULL);
	snprintf(want, sizeof want,
		 "database '%s' has schema version 99, newer than this fabench supports (%d)", path, FA_STORE_SCHEMA_VERSION);
	FA_CHECKF(strcmp(err.msg, want) == 0, "message '%s'", err.msg);
}

FA_TEST(store, garbage_file_refused)
{
	const char *path = fresh_db("garbage.db");
	struct fa_store *s = NOT_NULL;
	struct fa_err err;
	char want[1300];
	FILE *f = fopen(path, "w");
	FA_REQUIRE(f);
	/* more than a page of text, so SQLite reads a header that is not its own */
	for (int i = 0; i < 200; i++)
		fputs("this is not a database, it is a text file\n", f);
	fclose(f);
	fa_err_clear(&err);
	FA_CHECK(fa_store_open(path, 0, &s, &err) == FA_ERR_DB);
	FA_CHECK(s == NULL);
	snprintf(want, sizeof want, "file '%s' is not a SQLite database", path);
	FA_CHECKF(strcmp(err.msg, want) == 0, "message '%s'", err.msg);
}

FA_TEST(store, unusable_paths)
{
	char path[1200], file[1200];
	struct fa_store *s = NOT_NULL;
	struct fa_err err;
	FILE *f;
	/* a folder where the file should be */
	snprintf(path, sizeof path, "%s/a-folder.db", fa_test_tmpdir());
	mkdir(path, 0777);
	fa_err_clear(&err);
	FA_CHECK(fa_store_open(path, 1, &s, &err) == FA_ERR_IO);
	FA_CHECK(s == NULL);
	FA_CHECKF(strstr(err.msg, "is a folder") != NULL, "message '%s'", err.msg);
	/* a file where a parent folder should be */
	snprintf(file, sizeof file, "%s/plain-file", fa_test_tmpdir());
	f = fopen(file, "w");
	FA_REQUIRE(f);
	fclose(f);
	snprintf(path, sizeof path, "%s/plain-file/sub/x.db", fa_test_tmpdir());
	fa_err_clear(&err);
	s = NOT_NULL;
	FA_CHECK(fa_store_open(path, 1, &s, &err) == FA_ERR_IO);
	FA_CHECK(s == NULL);
	FA_CHECKF(strstr(err.msg, "cannot open database '") == err.msg && strstr(err.msg, path),
		  "message '%s'", err.msg);
}

/* A writer refuses a database it may not write (no write bit: its owner
 * meant it to stay as it is, root included) and one in a read-only folder,
 * where SQLite cannot keep its -wal: before SQLite opens it, so nothing is
 * left beside it. (It opened, left a -wal and -shm there that the file's
 * owner might not write, and failed at the run's first write.) */
FA_TEST(store, writer_refuses_what_it_may_not_write)
{
	char dir[1100], path[1200], aux[1300];
	struct fa_store *s = NULL;
	struct fa_err err;
	char want[2600];

	snprintf(path, sizeof path, "%s", fresh_db("ro-writer.db"));
	fa_err_clear(&err);
	FA_REQUIRE(fa_store_open(path, 1, &s, &err) == FA_OK);
	fa_store_close(s);
	FA_REQUIRE(chmod(path, 0444) == 0);
	s = NOT_NULL;
	FA_CHECK(fa_store_open(path, 0, &s, &err) == FA_ERR_IO);
	FA_CHECK(s == NULL);
	snprintf(want, sizeof want, "database '%s' is read-only: this command writes to it", path);
	FA_CHECKF(strcmp(err.msg, want) == 0, "message '%s'", err.msg);
	snprintf(aux, sizeof aux, "%s-wal", path);
	FA_CHECK(!file_exists(aux));
	snprintf(aux, sizeof aux, "%s-shm", path);
	FA_CHECK(!file_exists(aux));
	/* the readers still read it */
	FA_CHECK(fa_store_open_readonly(path, &s, &err) == FA_OK);
	fa_store_close(s);
	chmod(path, 0644);

	/* a read-only folder: neither an existing file nor a new one */
	snprintf(dir, sizeof dir, "%s/ro-folder", fa_test_tmpdir());
	mkdir(dir, 0755);
	chmod(dir, 0755);
	snprintf(path, sizeof path, "%s/old.db", dir);
	unlink(path);
	FA_REQUIRE(fa_store_open(path, 1, &s, &err) == FA_OK);
	fa_store_close(s);
	snprintf(aux, sizeof aux, "%s/new.db", dir);
	unlink(aux);
	FA_REQUIRE(chmod(dir, 0555) == 0);
	fa_err_clear(&err);
	FA_CHECK(fa_store_open(path, 0, &s, &err) == FA_ERR_IO);
	snprintf(want, sizeof want,
		 "cannot write database '%s': its folder '%s' is read-only (SQLite keeps its -wal "
		 "and -shm files beside it)",
		 path, dir);
	FA_CHECKF(strcmp(err.msg, want) == 0, "message '%s'", err.msg);
	fa_err_clear(&err);
	FA_CHECK(fa_store_open(aux, 1, &s, &err) == FA_ERR_IO);
	FA_CHECK(strstr(err.msg, "its folder '") != NULL);
	chmod(dir, 0755);
	FA_CHECK(!file_exists(aux));
}

/* ---- round trip ------------------------------------------------------------ */

/* Column checks on the current row of st, by name. */
static int col_of(sqlite3_stmt *st, const char *name)
{
	for (int i = 0; i < sqlite3_column_count(st); i++)
		if (strcmp(sqlite3_column_name(st, i), name) == 0)
			return i;
	fa_test_fail(__FILE__, __LINE__, "no column '%s'", name);
	return 0;
}

static void check_text(sqlite3_stmt *st, const char *name, const char *want)
{
	int i = col_of(st, name);
	const char *got = (const char *)sqlite3_column_text(st, i);
	if (!want) {
		FA_CHECKF(sqlite3_column_type(st, i) == SQLITE_NULL, "%s: want NULL, got '%s'", name,
			  got);
		return;
	}
	FA_CHECKF(sqlite3_column_type(st, i) == SQLITE_TEXT && strcmp(got, want) == 0,
		  "%s: want '%s', got '%s'", name, want, got ? got : "NULL");
}

static void check_int(sqlite3_stmt *st, const char *name, int64_t want)
{
	int i = col_of(st, name);
	FA_CHECKF(sqlite3_column_type(st, i) == SQLITE_INTEGER && sqlite3_column_int64(st, i) == want,
		  "%s: want %" PRId64 ", got %s", name, want,
		  sqlite3_column_text(st, i) ? (const char *)sqlite3_column_text(st, i) : "NULL");
}

static void check_real(sqlite3_stmt *st, const char *name, double want)
{
	int i = col_of(st, name);
	FA_CHECKF(sqlite3_column_type(st, i) == SQLITE_FLOAT && sqlite3_column_double(st, i) == want,
		  "%s: want %.17g, got %.17g (type %d)", name, want, sqlite3_column_double(st, i),
		  sqlite3_column_type(st, i));
}

static void check_null(sqlite3_stmt *st, const char *name)
{
	int i = col_of(st, name);
	FA_CHECKF(sqlite3_column_type(st, i) == SQLITE_NULL, "%s: want NULL, got '%s'", name,
		  sqlite3_column_text(st, i) ? (const char *)sqlite3_column_text(st, i) : "");
}

static sqlite3_stmt *select_row(sqlite3 *db, const char *sql, int64_t id)
{
	sqlite3_stmt *st = NULL;
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return NULL;
	sqlite3_bind_int64(st, 1, id);
	if (sqlite3_step(st) != SQLITE_ROW) {
		sqlite3_finalize(st);
		return NULL;
	}
	return st;
}

/* Every column of a result row against what was stored. */
static void check_result_row(sqlite3 *db, int64_t id, int64_t run_id, int64_t case_id,
			     const struct fa_result *r, const char *status, const char *stop)
{
	sqlite3_stmt *st = select_row(db, "SELECT * FROM results WHERE id = ?", id);
	int timed = r->t.n > 0;
	FA_REQUIRE(st);
	check_int(st, "run_id", run_id);
	check_int(st, "case_id", case_id);
	check_text(st, "kernel", r->kernel);
	check_text(st, "backend", r->backend);
	check_text(st, "params", r->params);
	check_text(st, "status", status);
	check_text(st, "reason", r->reason[0] ? r->reason : NULL);
	check_text(st, "timing", r->timing);
	check_int(st, "n_samples", r->t.n);
	check_int(st, "discarded", r->t.discarded);
	check_text(st, "stop_reason", stop);
	if (timed) {
		check_real(st, "median_ms", r->t.median_ms);
		check_real(st, "mean_ms", r->t.mean_ms);
		check_real(st, "min_ms", r->t.min_ms);
		check_real(st, "max_ms", r->t.max_ms);
		check_real(st, "stdev_ms", r->t.stdev_ms);
		check_real(st, "tflops", r->tflops);
		check_real(st, "gbps", r->gbps);
	} else {
		check_null(st, "median_ms");
		check_null(st, "mean_ms");
		check_null(st, "min_ms");
		check_null(st, "max_ms");
		check_null(st, "stdev_ms");
		check_null(st, "tflops");
		check_null(st, "gbps");
	}
	check_real(st, "flops", r->flops);
	check_real(st, "bytes", r->bytes);
	check_int(st, "checked", r->checked);
	if (r->checked) {
		check_real(st, "max_abs", r->st.max_abs);
		check_real(st, "max_rel", r->st.max_rel);
		check_real(st, "mean_abs", r->st.mean_abs);
		check_real(st, "rel_l2", r->st.rel_l2);
		check_real(st, "nmse", r->st.nmse);
		if (r->st.same_max_abs >= 0)
			check_real(st, "same_max_abs", r->st.same_max_abs);
		else
			check_null(st, "same_max_abs");
		check_int(st, "nan_count", r->st.nan_count);
		check_int(st, "inf_count", r->st.inf_count);
		check_int(st, "unwritten", r->st.unwritten);
		check_int(st, "worst_index", r->st.worst_index);
		check_real(st, "worst_out", r->st.worst_out);
		check_real(st, "worst_ref", r->st.worst_ref);
		check_int(st, "rows_checked", r->st.rows_checked);
		check_int(st, "elems_checked", r->st.elems_checked);
		check_text(st, "rule", r->rule);
	} else {
		static const char *const stats[] = {
			"max_abs",   "max_rel",     "mean_abs",  "rel_l2",       "nmse",
			"same_max_abs", "nan_count", "inf_count", "unwritten",   "worst_index",
			"worst_out", "worst_ref",   "rows_checked", "elems_checked", "rule"};
		for (size_t i = 0; i < sizeof stats / sizeof stats[0]; i++)
			check_null(st, stats[i]);
	}
	check_real(st, "mem_bytes", r->mem_bytes);
	if (isnan(r->tel.sm_clock_mhz)) {
		check_null(st, "sm_clock_mhz");
		check_null(st, "sm_clock_max_mhz");
		check_null(st, "temp_c");
		check_null(st, "power_w");
		check_null(st, "throttle_reasons");
	} else {
		check_real(st, "sm_clock_mhz", r->tel.sm_clock_mhz);
		check_real(st, "sm_clock_max_mhz", r->tel.sm_clock_max_mhz);
		check_real(st, "temp_c", r->tel.temp_c);
		check_real(st, "power_w", r->tel.power_w);
		check_int(st, "throttle_reasons", r->tel.throttle_reasons);
	}
	FA_CHECK(sqlite3_column_type(st, col_of(st, "created_at")) == SQLITE_TEXT);
	sqlite3_finalize(st);
}

FA_TEST(store, round_trip_every_field)
{
	const char *path = fresh_db("round.db");
	uint64_t seed = fa_test_seed(), rng = seed;
	struct fa_store *s = NULL;
	struct fa_run_info ri;
	struct fa_err err;
	struct fa_case ca, cb;
	struct fa_result ra[2], rb[3];
	double samples_a[17], samples_b[5];
	int32_t cu_q[4] = {0, 100, 128, 384}, cu_k[4] = {0, 120, 150, 420}, prefixes[3] = {7, 0, 64};
	int64_t run_id = 0, case_a = 0, case_b = 0, ids[5];
	sqlite3_stmt *st;
	sqlite3 *db;

	fa_err_clear(&err);
	FA_REQUIRE(fa_store_open(path, 1, &s, &err) == FA_OK);
	db = fa_store_db(s);
	fill_run_info(&ri, "round trip");
	ri.git_dirty = 0;
	FA_REQUIRE(fa_store_run_begin(s, &ri, &run_id, &err) == FA_OK);

	/* case a: varlen prefix_lm with per-sequence prefixes, bhsd, bf16 */
	memset(&ca, 0, sizeof ca);
	ca.index = 0;
	ca.p = (struct fa_problem){.batch = 3, .heads = 16, .kv_heads = 4, .q_len = 256,
				   .kv_len = 270, .head_dim = 128, .head_dim_v = 64,
				   .dtype = FA_DTYPE_BF16, .mask = FA_MASK_PREFIX_LM, .layout = FA_LAYOUT_BHSD,
				   .prefix_len = 5, .window = 9, .varlen = 1, .total_q = 384,
				   .total_k = 420, .scale = 0.0883883476f};
	ca.cu_seqlens_q = cu_q;
	ca.cu_seqlens_k = cu_k;
	ca.prefix_lens = prefixes;
	ca.dist = FA_DIST_OUTLIERS;
	ca.seed = next_u64(&rng) | (1ull << 63); /* above INT64_MAX on purpose */
	ca.key = "key a, with \"quotes\"";

	/* result a0: pass with random samples and known telemetry */
	memset(ra, 0, sizeof ra);
	ra[0].kernel = "cuda_flash";
	ra[0].backend = "cuda";
	ra[0].params = "split_k=2";
	ra[0].status = FA_STATUS_PASS;
	ra[0].timing = "cold";
	ra[0].t.n = 17;
	ra[0].t.discarded = 2;
	ra[0].t.stop = FA_STOP_MAX_TIME;
	for (int i = 0; i < 17; i++)
		samples_a[i] = draw(&rng, 0.5);
	ra[0].samples = samples_a;
	ra[0].t.median_ms = draw(&rng, 0.5);
	ra[0].t.mean_ms = draw(&rng, 0.5);
	ra[0].t.min_ms = draw(&rng, 0.25);
	ra[0].t.max_ms = draw(&rng, 1);
	ra[0].t.stdev_ms = draw(&rng, 0.001);
	ra[0].flops = draw(&rng, 1e12);
	ra[0].tflops = draw(&rng, 100);
	ra[0].bytes = draw(&rng, 1e8);
	ra[0].gbps = draw(&rng, 1000);
	ra[0].checked = 1;
	ra[0].st = (struct fa_err_stats){draw(&rng, 1e-3), draw(&rng, 1e-2), draw(&rng, 1e-4),
					 draw(&rng, 1e-3), draw(&rng, 1e-6), draw(&rng, 1e-3),
					 1, 2, 3, (int64_t)(next_u64(&rng) >> 20),
					 draw(&rng, 0.5), -draw(&rng, 0.5), 256, 16384, -1};
	snprintf(ra[0].rule, sizeof ra[0].rule, "fa");
	ra[0].mem_bytes = draw(&rng, 1e9);
	ra[0].tel = (struct fa_telemetry){draw(&rng, 1000), draw(&rng, 1500), draw(&rng, 40),
					  draw(&rng, 300), 0x20};
	/* result a1: skipped, nothing measured or checked */
	ra[1].kernel = "cuda_dense";
	ra[1].backend = "cuda";
	ra[1].params = "";
	ra[1].status = FA_STATUS_SKIP;
	snprintf(ra[1].reason, sizeof ra[1].reason, "head_dim 128 with head_dim_v 64 not instantiated");
	ra[1].flops = draw(&rng, 1e12);
	ra[1].bytes = draw(&rng, 1e8);
	ra[1].mem_bytes = draw(&rng, 1e9);
	ra[1].st.same_max_abs = -1;
	ra[1].st.worst_index = -1;
	ra[1].tel = (struct fa_telemetry){NAN, NAN, NAN, NAN, -1};
	FA_REQUIRE(fa_store_case_commit(s, run_id, &ca, ra, 2, &case_a, &err) == FA_OK);
	FA_CHECK(case_a > 0);

	/* case b: sliding window, explicit scale; fail, error, timeout */
	memset(&cb, 0, sizeof cb);
	cb.index = 1;
	cb.p = (struct fa_problem){.batch = 1, .heads = 8, .kv_heads = 8, .q_len = 1,
				   .kv_len = 4096, .head_dim = 64, .head_dim_v = 64,
				   .dtype = FA_DTYPE_FP16, .mask = FA_MASK_SLIDING_WINDOW,
				   .layout = FA_LAYOUT_BSHD, .prefix_len = 3, .window = 512,
				   .total_q = 1, .total_k = 4096, .scale = 0.25f};
	cb.scale_set = 1;
	cb.dist = FA_DIST_UNIFORM;
	cb.seed = 12345;
	cb.key = "key b";
	memset(rb, 0, sizeof rb);
	for (int i = 0; i < 3; i++) {
		rb[i].backend = "cuda";
		rb[i].params = "";
		rb[i].st.same_max_abs = -1;
		rb[i].st.worst_index = -1;
		rb[i].tel = (struct fa_telemetry){NAN, NAN, NAN, NAN, -1};
		rb[i].flops = draw(&rng, 1e9);
		rb[i].bytes = draw(&rng, 1e6);
		rb[i].mem_bytes = draw(&rng, 1e7);
	}
	rb[0].kernel = "cuda_flash";
	rb[0].status = FA_STATUS_FAIL;
	snprintf(rb[0].reason, sizeof rb[0].reason, "max_abs 0.031 > 0.01 at b=0 t=0 h=2 d=17");
	rb[0].timing = "graph";
	rb[0].t.n = 5;
	for (int i = 0; i < 5; i++)
		samples_b[i] = draw(&rng, 0.01);
	rb[0].samples = samples_b;
	rb[0].t.median_ms = rb[0].t.mean_ms = rb[0].t.min_ms = rb[0].t.max_ms = draw(&rng, 0.01);
	rb[0].t.stdev_ms = draw(&rng, 1e-5);
	rb[0].tflops = draw(&rng, 1);
	rb[0].gbps = draw(&rng, 100);
	rb[0].checked = 1;
	rb[0].st = (struct fa_err_stats){0.031, draw(&rng, 1), draw(&rng, 1e-3), draw(&rng, 1e-2),
					 draw(&rng, 1e-4), -1, 0, 0, 0, 17, 0.5, 0.469, 1, 64, -1};
	snprintf(rb[0].rule, sizeof rb[0].rule, "tolerance");
	rb[1].kernel = "cuda_dense";
	rb[1].status = FA_STATUS_ERROR;
	snprintf(rb[1].reason, sizeof rb[1].reason, "cuda: cudaErrorIllegalAddress");
	rb[1].t.stop = FA_STOP_ERROR;
	rb[2].kernel = "cuda_slow";
	rb[2].status = FA_STATUS_TIMEOUT;
	snprintf(rb[2].reason, sizeof rb[2].reason, "case ran past its timeout of 60 s");
	rb[2].timing = "hot";
	rb[2].t.n = 2;
	rb[2].samples = samples_b;
	rb[2].t.median_ms = rb[2].t.mean_ms = draw(&rng, 20000);
	rb[2].t.min_ms = draw(&rng, 10000);
	rb[2].t.max_ms = draw(&rng, 40000);
	rb[2].t.stdev_ms = draw(&rng, 100);
	rb[2].t.stop = FA_STOP_TIMEOUT;
	rb[2].tflops = draw(&rng, 1e-6);
	rb[2].gbps = draw(&rng, 1e-3);
	FA_REQUIRE(fa_store_case_commit(s, run_id, &cb, rb, 3, &case_b, &err) == FA_OK);
	FA_CHECK(case_b > case_a);
	FA_REQUIRE(fa_store_run_end(s, run_id, "complete", &err) == FA_OK);

	/* the run */
	st = select_row(db, "SELECT * FROM runs WHERE id = ?", run_id);
	FA_REQUIRE(st);
	check_text(st, "started_at", ri.started_at);
	FA_CHECK(sqlite3_column_type(st, col_of(st, "finished_at")) == SQLITE_TEXT);
	check_text(st, "git_commit", ri.git_commit);
	check_int(st, "git_dirty", 0);
	check_text(st, "host", ri.host);
	check_text(st, "backend", ri.backend);
	check_text(st, "device_name", ri.device_name);
	check_text(st, "device_arch", ri.device_arch);
	check_text(st, "driver", ri.driver);
	check_text(st, "runtime", ri.runtime);
	check_text(st, "suite_path", ri.suite_path);
	check_text(st, "suite_name", ri.suite_name);
	check_text(st, "suite_hash", ri.suite_hash);
	check_text(st, "command_line", ri.command_line);
	check_text(st, "label", "round trip");
	check_text(st, "seed", "18446744073709551557");
	check_text(st, "version", ri.version);
	check_text(st, "source", ri.source);
	check_text(st, "status", "complete");
	sqlite3_finalize(st);

	/* case a */
	st = select_row(db, "SELECT * FROM cases WHERE id = ?", case_a);
	FA_REQUIRE(st);
	{
		char seed_text[24];
		snprintf(seed_text, sizeof seed_text, "%" PRIu64, ca.seed);
		check_int(st, "run_id", run_id);
		check_int(st, "idx", 0);
		check_text(st, "key", ca.key);
		check_int(st, "batch", 3);
		check_int(st, "heads", 16);
		check_int(st, "kv_heads", 4);
		check_int(st, "q_len", 256);
		check_int(st, "kv_len", 270);
		check_int(st, "head_dim", 128);
		check_int(st, "head_dim_v", 64);
		check_text(st, "dtype", "bf16");
		check_text(st, "mask", "prefix_lm");
		check_null(st, "prefix_len"); /* per-sequence prefixes instead */
		check_null(st, "window");     /* not a sliding window */
		check_text(st, "layout", "bhsd");
		check_text(st, "input", "outliers");
		check_int(st, "varlen", 1);
		check_text(st, "seqlens", "100/28/256");
		check_text(st, "kv_seqlens", "120/30/270");
		check_text(st, "prefix_lens", "7/0/64");
		check_int(st, "total_q", 384);
		check_int(st, "total_k", 420);
		check_real(st, "scale", (double)0.0883883476f);
		check_int(st, "scale_set", 0);
		check_text(st, "seed", seed_text);
	}
	sqlite3_finalize(st);
	/* case b */
	st = select_row(db, "SELECT * FROM cases WHERE id = ?", case_b);
	FA_REQUIRE(st);
	check_int(st, "idx", 1);
	check_text(st, "dtype", "fp16");
	check_text(st, "mask", "sliding_window");
	check_null(st, "prefix_len");
	check_int(st, "window", 512);
	check_text(st, "input", "uniform");
	check_int(st, "varlen", 0);
	check_null(st, "seqlens");
	check_null(st, "kv_seqlens");
	check_null(st, "prefix_lens");
	check_real(st, "scale", 0.25);
	check_int(st, "scale_set", 1);
	check_text(st, "seed", "12345");
	sqlite3_finalize(st);

	/* results, in insertion order */
	{
		sqlite3_stmt *q;
		int n = 0;
		FA_REQUIRE(sqlite3_prepare_v2(db, "SELECT id FROM results WHERE run_id = ? ORDER BY id",
					      -1, &q, NULL) == SQLITE_OK);
		sqlite3_bind_int64(q, 1, run_id);
		while (sqlite3_step(q) == SQLITE_ROW && n < 5)
			ids[n++] = sqlite3_column_int64(q, 0);
		sqlite3_finalize(q);
		FA_REQUIRE(n == 5);
	}
	check_result_row(db, ids[0], run_id, case_a, &ra[0], "pass", "max_time");
	check_result_row(db, ids[1], run_id, case_a, &ra[1], "skip", NULL);
	check_result_row(db, ids[2], run_id, case_b, &rb[0], "fail", "converged");
	check_result_row(db, ids[3], run_id, case_b, &rb[1], "error", "error");
	check_result_row(db, ids[4], run_id, case_b, &rb[2], "timeout", "timeout");

	/* samples: every one, in the order taken, bit for bit */
	{
		const struct {
			int64_t id;
			const double *x;
			int n;
		} want[5] = {{ids[0], samples_a, 17}, {ids[1], NULL, 0}, {ids[2], samples_b, 5},
			     {ids[3], NULL, 0}, {ids[4], samples_b, 2}};
		for (int w = 0; w < 5; w++) {
			sqlite3_stmt *q;
			int n = 0;
			FA_REQUIRE(sqlite3_prepare_v2(db,
						      "SELECT seq, time_ms FROM samples WHERE result_id = ?"
						      " ORDER BY seq",
						      -1, &q, NULL) == SQLITE_OK);
			sqlite3_bind_int64(q, 1, want[w].id);
			while (sqlite3_step(q) == SQLITE_ROW) {
				FA_CHECK(n < want[w].n);
				if (n < want[w].n) {
					FA_CHECK(sqlite3_column_int(q, 0) == n);
					FA_CHECKF(sqlite3_column_double(q, 1) == want[w].x[n],
						  "sample %d of result %d: %.17g != %.17g", n, w,
						  sqlite3_column_double(q, 1), want[w].x[n]);
				}
				n++;
			}
			sqlite3_finalize(q);
			FA_CHECKF(n == want[w].n, "result %d has %d samples, want %d", w, n, want[w].n);
		}
	}
	fa_store_close(s);
}

FA_TEST(store, run_info_optional_fields)
{
	const char *path = fresh_db("optional.db");
	struct fa_store *s = NULL;
	struct fa_run_info ri;
	struct fa_err err;
	sqlite3_stmt *st;
	int64_t id = 0;
	fa_err_clear(&err);
	FA_REQUIRE(fa_store_open(path, 1, &s, &err) == FA_OK);
	memset(&ri, 0, sizeof ri);
	ri.git_commit = "";
	ri.label = "";
	ri.git_dirty = -1;
	ri.seed = 1;
	FA_REQUIRE(fa_store_run_begin(s, &ri, &id, &err) == FA_OK);
	st = select_row(fa_store_db(s), "SELECT * FROM runs WHERE id = ?", id);
	FA_REQUIRE(st);
	/* started_at defaults to now; unknowns are NULL; source is fabench */
	FA_CHECK(sqlite3_column_type(st, col_of(st, "started_at")) == SQLITE_TEXT);
	FA_CHECK(strlen((const char *)sqlite3_column_text(st, col_of(st, "started_at"))) == 20);
	check_null(st, "finished_at");
	check_null(st, "git_commit");
	check_null(st, "git_dirty");
	check_null(st, "label");
	check_null(st, "host");
	check_text(st, "seed", "1");
	check_text(st, "source", "fabench");
	check_text(st, "status", "incomplete");
	sqlite3_finalize(st);
	fa_store_close(s);
}

FA_TEST(store, run_end)
{
	const char *path = fresh_db("end.db");
	struct fa_store *s = NULL;
	struct fa_run_info ri;
	struct fa_err err;
	int64_t id = 0;
	fa_err_clear(&err);
	FA_REQUIRE(fa_store_open(path, 1, &s, &err) == FA_OK);
	fill_run_info(&ri, "x");
	FA_REQUIRE(fa_store_run_begin(s, &ri, &id, &err) == FA_OK);
	FA_CHECK(query_int(fa_store_db(s),
			   "SELECT count(*) FROM runs WHERE id = ? AND status = 'incomplete' AND "
			   "finished_at IS NULL",
			   id) == 1);
	FA_CHECK(fa_store_run_end(s, id, "complete", &err) == FA_OK);
	FA_CHECK(query_int(fa_store_db(s),
			   "SELECT count(*) FROM runs WHERE id = ? AND status = 'complete' AND "
			   "finished_at LIKE '____-__-__T__:__:__Z'",
			   id) == 1);
	FA_CHECK(fa_store_run_end(s, id, "incomplete", &err) == FA_OK);
	FA_CHECK(query_int(fa_store_db(s), "SELECT count(*) FROM runs WHERE status = 'incomplete'",
			   0) == 1);
	FA_CHECK(fa_store_run_end(s, id, "done", &err) == FA_ERR_INTERNAL);
	FA_CHECKF(strcmp(err.msg, "run status 'done' must be 'complete' or 'incomplete'") == 0,
		  "message '%s'", err.msg);
	fa_err_clear(&err);
	FA_CHECK(fa_store_run_end(s, id + 100, "complete", &err) == FA_ERR_NOT_FOUND);
	FA_CHECKF(strstr(err.msg, "no run ") == err.msg, "message '%s'", err.msg);
	fa_store_close(s);
}

/* ---- transactions ---------------------------------------------------------- */

static int64_t count_for_run(sqlite3 *db, const char *table, int64_t run_id)
{
	char sql[160];
	if (strcmp(table, "samples") == 0)
		snprintf(sql, sizeof sql, "SELECT count(*) FROM samples JOIN results ON "
					  "results.id = samples.result_id WHERE results.run_id = ?");
	else
		snprintf(sql, sizeof sql, "SELECT count(*) FROM %s WHERE run_id = ?", table);
	return query_int(db, sql, run_id);
}

FA_TEST(store, failed_commit_leaves_nothing)
{
	const char *path = fresh_db("atomic.db");
	struct fa_store *s = NULL;
	struct fa_run_info ri;
	struct fa_err err;
	struct fa_case c;
	struct fa_result r[2];
	double x0[4], x1[4];
	char key[32];
	int64_t run_id = 0, case_id = 77;
	sqlite3 *db;

	fa_err_clear(&err);
	FA_REQUIRE(fa_store_open(path, 1, &s, &err) == FA_OK);
	db = fa_store_db(s);
	fill_run_info(&ri, "atomic");
	FA_REQUIRE(fa_store_run_begin(s, &ri, &run_id, &err) == FA_OK);
	simple_case(&c, 0, key, sizeof key);
	simple_result(&r[0], "cpu_dense", x0, 4, 2.0);
	simple_result(&r[1], "cpu_flash", x1, 4, 1.0);
	/* the second result is bad: the case and the first result with its
	 * samples were already written inside the transaction */
	r[1].status = 9;
	FA_CHECK(fa_store_case_commit(s, run_id, &c, r, 2, &case_id, &err) == FA_ERR_INTERNAL);
	FA_CHECKF(strcmp(err.msg, "result 1 of case 0 has unknown status 9") == 0, "message '%s'",
		  err.msg);
	FA_CHECK(case_id == 0);
	FA_CHECK(count_for_run(db, "cases", run_id) == 0);
	FA_CHECK(count_for_run(db, "results", run_id) == 0);
	FA_CHECK(query_int(db, "SELECT count(*) FROM samples", 0) == 0);
	FA_CHECK(sqlite3_get_autocommit(db) != 0); /* no transaction left open */

	/* the store is still usable: the same case, fixed, commits */
	r[1].status = FA_STATUS_PASS;
	fa_err_clear(&err);
	FA_REQUIRE(fa_store_case_commit(s, run_id, &c, r, 2, &case_id, &err) == FA_OK);
	FA_CHECK(case_id > 0);
	FA_CHECK(count_for_run(db, "results", run_id) == 2);
	FA_CHECK(count_for_run(db, "samples", run_id) == 8);

	/* a constraint of SQLite's own: the same case index twice in a run */
	simple_result(&r[0], "cpu_other", x0, 4, 3.0);
	FA_CHECK(fa_store_case_commit(s, run_id, &c, r, 1, &case_id, &err) == FA_ERR_DB);
	FA_CHECKF(strstr(err.msg, "cannot store case 0 of run ") == err.msg &&
			  strstr(err.msg, "UNIQUE constraint failed: cases.run_id, cases.idx"),
		  "message '%s'", err.msg);
	FA_CHECK(case_id == 0);
	FA_CHECK(count_for_run(db, "cases", run_id) == 1);
	FA_CHECK(count_for_run(db, "results", run_id) == 2);
	FA_CHECK(count_for_run(db, "samples", run_id) == 8);

	/* a run that does not exist: the foreign key refuses */
	fa_err_clear(&err);
	simple_case(&c, 1, key, sizeof key);
	FA_CHECK(fa_store_case_commit(s, run_id + 1000, &c, r, 1, NULL, &err) == FA_ERR_DB);
	FA_CHECKF(strstr(err.msg, "FOREIGN KEY constraint failed") != NULL, "message '%s'", err.msg);
	FA_CHECK(query_int(db, "SELECT count(*) FROM cases", 0) == 1);
	FA_CHECK(sqlite3_get_autocommit(db) != 0);
	fa_store_close(s);
}

/* ---- run lookup ------------------------------------------------------------ */

FA_TEST(store, find_run)
{
	const char *path = fresh_db("find.db");
	static const char *const labels[] = {"a", "b", "a", "12"};
	struct fa_store *s = NULL;
	struct fa_run_info ri;
	struct fa_err err;
	int64_t ids[4], id = -1;
	char spec[32], want[1300];

	fa_err_clear(&err);
	FA_REQUIRE(fa_store_open(path, 1, &s, &err) == FA_OK);
	/* an empty database has no latest run */
	FA_CHECK(fa_store_find_run(s, "latest", &id, &err) == FA_ERR_NOT_FOUND);
	snprintf(want, sizeof want, "no runs in '%s'", path);
	FA_CHECKF(strcmp(err.msg, want) == 0, "message '%s'", err.msg);
	static const char *const commits[] = {"0a1b2c3d4e5f", "0a1b2c3d4e5f", "0A1B99", "12ab34"};
	for (int i = 0; i < 4; i++) {
		fill_run_info(&ri, labels[i]);
		ri.git_commit = commits[i];
		FA_REQUIRE(fa_store_run_begin(s, &ri, &ids[i], &err) == FA_OK);
	}
	fa_err_clear(&err);
	FA_CHECK(fa_store_find_run(s, "latest", &id, &err) == FA_OK && id == ids[3]);
	/* a commit prefix of 4 hex digits or more, either case: its latest run */
	FA_CHECK(fa_store_find_run(s, "0a1b2c", &id, &err) == FA_OK && id == ids[1]);
	FA_CHECK(fa_store_find_run(s, "0A1B9", &id, &err) == FA_OK && id == ids[2]);
	FA_CHECK(fa_store_find_run(s, "12ab", &id, &err) == FA_OK && id == ids[3]);
	FA_CHECK(fa_store_find_run(s, "0a1", &id, &err) == FA_ERR_NOT_FOUND);
	fa_err_clear(&err);
	snprintf(spec, sizeof spec, "%" PRId64, ids[1]);
	FA_CHECK(fa_store_find_run(s, spec, &id, &err) == FA_OK && id == ids[1]);
	/* a label: its latest run */
	FA_CHECK(fa_store_find_run(s, "a", &id, &err) == FA_OK && id == ids[2]);
	FA_CHECK(fa_store_find_run(s, "b", &id, &err) == FA_OK && id == ids[1]);
	/* digits that are no run id fall back to a label */
	FA_CHECK(fa_store_find_run(s, "12", &id, &err) == FA_OK && id == ids[3]);
	FA_CHECK(fa_store_find_run(s, "xyz", &id, &err) == FA_ERR_NOT_FOUND);
	snprintf(want, sizeof want,
		 "no run 'xyz' in '%s' (not a run id, a label, latest or a commit prefix of at least "
		 "4 hex digits)",
		 path);
	FA_CHECKF(strcmp(err.msg, want) == 0, "message '%s'", err.msg);
	fa_err_clear(&err);
	FA_CHECK(fa_store_find_run(s, "999", &id, &err) == FA_ERR_NOT_FOUND);
	snprintf(want, sizeof want,
		 "no run '999' in '%s' (not a run id, a label, latest or a commit prefix of at least "
		 "4 hex digits)",
		 path);
	FA_CHECKF(strcmp(err.msg, want) == 0, "message '%s'", err.msg);
	fa_err_clear(&err);
	FA_CHECK(fa_store_find_run(s, "", &id, &err) == FA_ERR_NOT_FOUND);
	fa_store_close(s);
}

/* ---- two writers ------------------------------------------------------------- */

#define WRITER_CASES 20

struct writer {
	const char *path;
	const char *label;
	int64_t run_id;
	enum fa_rc rc;
	char msg[FA_ERR_MSG_MAX];
};

/* Opens its own connection and commits WRITER_CASES cases of one run. */
static void *writer_main(void *arg)
{
	struct writer *w = arg;
	struct fa_store *s = NULL;
	struct fa_run_info ri;
	struct fa_err err;
	fa_err_clear(&err);
	w->rc = fa_store_open(w->path, 1, &s, &err);
	fill_run_info(&ri, w->label);
	if (w->rc == FA_OK)
		w->rc = fa_store_run_begin(s, &ri, &w->run_id, &err);
	for (int i = 0; i < WRITER_CASES && w->rc == FA_OK; i++) {
		struct fa_case c;
		struct fa_result r;
		double x[8];
		char key[32];
		simple_case(&c, i, key, sizeof key);
		simple_result(&r, "cpu_flash", x, 8, 1.0 + i);
		w->rc = fa_store_case_commit(s, w->run_id, &c, &r, 1, NULL, &err);
	}
	if (w->rc == FA_OK)
		w->rc = fa_store_run_end(s, w->run_id, "complete", &err);
	snprintf(w->msg, sizeof w->msg, "%s", err.msg);
	fa_store_close(s);
	return NULL;
}

FA_TEST(store, two_writers_share_a_file)
{
	const char *path = fresh_db("shared.db");
	struct writer w[2] = {{path, "one", 0, FA_OK, ""}, {path, "two", 0, FA_OK, ""}};
	pthread_t th[2];
	struct fa_store *s = NULL, *holder = NULL;
	struct fa_err err;
	struct timespec pause = {0, 200 * 1000 * 1000};

	fa_err_clear(&err);
	FA_REQUIRE(fa_store_open(path, 1, &s, &err) == FA_OK);
	FA_REQUIRE(fa_store_open(path, 0, &holder, &err) == FA_OK);
	/* another process holds the write lock while both writers start: they
	 * must wait on the busy timeout, not fail */
	FA_REQUIRE(sqlite3_exec(fa_store_db(holder), "BEGIN IMMEDIATE", NULL, NULL, NULL) ==
		   SQLITE_OK);
	for (int i = 0; i < 2; i++)
		FA_REQUIRE(pthread_create(&th[i], NULL, writer_main, &w[i]) == 0);
	nanosleep(&pause, NULL);
	FA_CHECK(sqlite3_exec(fa_store_db(holder), "COMMIT", NULL, NULL, NULL) == SQLITE_OK);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < 2; i++) {
		FA_CHECKF(w[i].rc == FA_OK, "writer %d: %s", i, w[i].msg);
		FA_CHECK(count_for_run(fa_store_db(s), "cases", w[i].run_id) == WRITER_CASES);
		FA_CHECK(count_for_run(fa_store_db(s), "samples", w[i].run_id) == 8 * WRITER_CASES);
	}
	FA_CHECK(w[0].run_id != w[1].run_id);
	FA_CHECK(query_int(fa_store_db(s), "SELECT count(*) FROM runs WHERE status = 'complete'",
			   0) == 2);
	fa_store_close(holder);
	fa_store_close(s);
}

/* A reader reads one snapshot: a case a run commits while a report reads
 * (report read the run's results, then its cases, and met a result
 * without its case) is not seen until the reader opens again. */
FA_TEST(store, reader_sees_one_snapshot)
{
	const char *path = fresh_db("snapshot.db");
	struct fa_store *w = NULL, *r = NULL;
	struct fa_run_info ri;
	struct fa_case c;
	struct fa_result res;
	struct fa_err err;
	int64_t run_id;
	double x[4];
	char key[32];

	fa_err_clear(&err);
	fill_run_info(&ri, "live");
	FA_REQUIRE(fa_store_open(path, 1, &w, &err) == FA_OK);
	FA_REQUIRE(fa_store_run_begin(w, &ri, &run_id, &err) == FA_OK);
	simple_case(&c, 0, key, sizeof key);
	simple_result(&res, "cpu_flash", x, 4, 1.0);
	FA_REQUIRE(fa_store_case_commit(w, run_id, &c, &res, 1, NULL, &err) == FA_OK);
	FA_REQUIRE(fa_store_open_readonly(path, &r, &err) == FA_OK);
	FA_CHECK(count_for_run(fa_store_db(r), "cases", run_id) == 1);
	/* the run goes on while the reader reads */
	simple_case(&c, 1, key, sizeof key);
	FA_REQUIRE(fa_store_case_commit(w, run_id, &c, &res, 1, NULL, &err) == FA_OK);
	FA_REQUIRE(fa_store_run_end(w, run_id, "complete", &err) == FA_OK);
	FA_CHECK(count_for_run(fa_store_db(r), "cases", run_id) == 1);
	FA_CHECK(count_for_run(fa_store_db(r), "results", run_id) == 1);
	FA_CHECK(count_for_run(fa_store_db(r), "samples", run_id) == 4);
	FA_CHECK(query_int(fa_store_db(r), "SELECT count(*) FROM runs WHERE status = 'incomplete'",
			   0) == 1);
	fa_store_close(r);
	/* opened again: all of it */
	FA_REQUIRE(fa_store_open_readonly(path, &r, &err) == FA_OK);
	FA_CHECK(count_for_run(fa_store_db(r), "cases", run_id) == 2);
	FA_CHECK(count_for_run(fa_store_db(r), "samples", run_id) == 8);
	fa_store_close(r);
	fa_store_close(w);
}

/* A run is claimed by the store that began it: another store (another
 * process) cannot claim it nor import into it, nothing written, until the
 * first is closed; a run's claim never stops another run's. */
FA_TEST(store, runs_are_claimed_by_their_writer)
{
	const char *path = fresh_db("claims.db");
	struct fa_store *a = NULL, *b = NULL;
	struct fa_run_info ri;
	struct fa_case c;
	struct fa_result res;
	struct fa_store_import_out out;
	struct fa_err err;
	int64_t one, two;
	int32_t which = 0;
	double x[4];
	char key[32], want[1400];

	fa_err_clear(&err);
	fill_run_info(&ri, "live");
	FA_REQUIRE(fa_store_open(path, 1, &a, &err) == FA_OK);
	FA_REQUIRE(fa_store_open(path, 0, &b, &err) == FA_OK);
	FA_REQUIRE(fa_store_run_begin(a, &ri, &one, &err) == FA_OK);
	FA_REQUIRE(fa_store_run_begin(b, &ri, &two, &err) == FA_OK);
	FA_CHECK(fa_store_run_claim(a, one, &err) == FA_OK); /* its own: again */
	FA_CHECK(fa_store_run_claim(b, one, &err) == FA_ERR_DB);
	snprintf(want, sizeof want,
		 "run %lld in '%s' is being written by another process (a run, run --resume or "
		 "import --run-into of it); try again once that has ended",
		 (long long)one, path);
	FA_CHECKF(strcmp(err.msg, want) == 0, "message '%s'", err.msg);
	fa_err_clear(&err);
	FA_CHECK(fa_store_run_claim(a, two, &err) == FA_ERR_DB);
	simple_case(&c, 0, key, sizeof key);
	simple_result(&res, "peer", x, 4, 1.0);
	fa_err_clear(&err);
	FA_CHECK(fa_store_import(b, &ri, one, "peer 1.0", &c, 1, &res, &which, 1, &out, &err) ==
		 FA_ERR_DB);
	FA_CHECK(strcmp(err.msg, want) == 0);
	FA_CHECK(out.run_id == 0);
	FA_CHECK(count_for_run(fa_store_db(b), "cases", one) == 0);
	FA_CHECK(query_int(fa_store_db(b), "SELECT count(*) FROM runs WHERE source = 'fabench'",
			   0) == 2);
	/* the writer goes on; closed, its run is free */
	fa_err_clear(&err);
	FA_CHECK(fa_store_case_commit(a, one, &c, &res, 1, NULL, &err) == FA_OK);
	fa_store_close(a);
	FA_CHECK(fa_store_run_claim(b, one, &err) == FA_OK);
	FA_CHECK(fa_store_import(b, &ri, one, "peer 1.0", &c, 1, &res, &which, 1, &out, &err) ==
		 FA_ERR_INPUT); /* claimed; its result already there */
	fa_store_close(b);
}

/* A writer outwaits a long transaction of another process (a merge or an
 * import of millions of samples holds the file for tens of seconds): its
 * case is stored once the file is free. With 10 s it gave up, "database is
 * locked", and the run stopped with the case lost. This test waits 11 s. */
FA_TEST(store, a_writer_outwaits_a_long_transaction)
{
	const char *path = fresh_db("long-lock.db");
	struct writer w = {path, "waits", 0, FA_OK, ""};
	struct fa_store *s = NULL, *holder = NULL;
	struct fa_err err;
	struct timespec hold = {11, 0};
	pthread_t th;

	fa_err_clear(&err);
	FA_REQUIRE(fa_store_open(path, 1, &s, &err) == FA_OK);
	FA_REQUIRE(fa_store_open(path, 0, &holder, &err) == FA_OK);
	FA_REQUIRE(sqlite3_exec(fa_store_db(holder), "BEGIN IMMEDIATE", NULL, NULL, NULL) ==
		   SQLITE_OK);
	/* the writer's stderr: it says once that it waits */
	char said_path[1100];
	snprintf(said_path, sizeof said_path, "%s/stderr.txt", fa_test_tmpdir());
	fflush(stderr);
	int saved = dup(2), fd = open(said_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	FA_REQUIRE(saved >= 0 && fd >= 0);
	dup2(fd, 2);
	close(fd);
	FA_REQUIRE(pthread_create(&th, NULL, writer_main, &w) == 0);
	nanosleep(&hold, NULL);
	FA_CHECK(sqlite3_exec(fa_store_db(holder), "COMMIT", NULL, NULL, NULL) == SQLITE_OK);
	pthread_join(th, NULL);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	FA_CHECKF(w.rc == FA_OK, "writer: %s", w.msg);
	FA_CHECK(count_for_run(fa_store_db(s), "cases", w.run_id) == WRITER_CASES);
	char *said = fa_test_read_file(said_path, NULL);
	FA_CHECKF(said && fa_test_count(said, "fabench: waiting for another process that is "
						"writing") == 1 &&
			  strstr(said, "long-lock.db' (at most 10 minutes)\n"),
		  "stderr: '%s'", said ? said : "");
	free(said);
	fa_store_close(holder);
	fa_store_close(s);
}

/* ---- bound parameters ------------------------------------------------------ */

FA_TEST(store, text_is_bound_not_pasted)
{
	const char *path = fresh_db("inject.db");
	const char *label = "it's \"quoted\"'; DROP TABLE runs; --";
	struct fa_store *s = NULL;
	struct fa_run_info ri;
	struct fa_err err;
	struct fa_case c;
	struct fa_result r;
	double x[2];
	char key[64];
	int64_t id = 0, found = 0;
	sqlite3_stmt *st;

	fa_err_clear(&err);
	FA_REQUIRE(fa_store_open(path, 1, &s, &err) == FA_OK);
	fill_run_info(&ri, label);
	ri.command_line = "fabench run --label \"it's\"; DROP TABLE results; --";
	FA_REQUIRE(fa_store_run_begin(s, &ri, &id, &err) == FA_OK);
	simple_case(&c, 0, key, sizeof key);
	snprintf(key, sizeof key, "k'); DELETE FROM cases; --");
	simple_result(&r, "cpu_x'); DROP TABLE samples; --", x, 2, 1.0);
	FA_REQUIRE(fa_store_case_commit(s, id, &c, &r, 1, NULL, &err) == FA_OK);
	FA_CHECK(query_int(fa_store_db(s),
			   "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN "
			   "('runs', 'cases', 'results', 'samples')",
			   0) == 4);
	st = select_row(fa_store_db(s), "SELECT * FROM runs WHERE id = ?", id);
	FA_REQUIRE(st);
	check_text(st, "label", label);
	check_text(st, "command_line", ri.command_line);
	sqlite3_finalize(st);
	FA_CHECK(query_int(fa_store_db(s), "SELECT count(*) FROM cases WHERE key = "
					   "'k''); DELETE FROM cases; --'",
			   0) == 1);
	FA_CHECK(query_int(fa_store_db(s), "SELECT count(*) FROM results WHERE kernel = "
					   "'cpu_x''); DROP TABLE samples; --'",
			   0) == 1);
	FA_CHECK(fa_store_find_run(s, label, &found, &err) == FA_OK && found == id);
	fa_store_close(s);
}

/* ---- names and calibrations ------------------------------------------------ */

FA_TEST(store, status_names)
{
	static const char *const names[] = {"pass", "fail", "skip", "error", "timeout"};
	for (int i = 0; i < 5; i++) {
		FA_CHECK(strcmp(fa_status_name(i), names[i]) == 0);
		FA_CHECK(fa_status_parse(names[i]) == i);
	}
	/* never stored: what readers call a pass nobody checked */
	FA_CHECK(strcmp(fa_status_name(FA_STATUS_UNCHECKED), "unchecked") == 0);
	FA_CHECK(fa_status_parse("unchecked") == FA_STATUS_UNCHECKED);
	FA_CHECK(fa_status_effective(FA_STATUS_PASS, 0) == FA_STATUS_UNCHECKED);
	FA_CHECK(fa_status_effective(FA_STATUS_PASS, 1) == FA_STATUS_PASS);
	FA_CHECK(fa_status_effective(FA_STATUS_SKIP, 0) == FA_STATUS_SKIP);
	FA_CHECK(fa_status_name(6) == NULL);
	FA_CHECK(fa_status_name(-1) == NULL);
	FA_CHECK(fa_status_parse("PASS") == -1);
	FA_CHECK(fa_status_parse("") == -1);
	FA_CHECK(fa_status_parse(NULL) == -1);
}

FA_TEST(store, calibrations)
{
	const char *path = fresh_db("cal.db");
	struct fa_store *s = NULL;
	struct fa_err err;
	struct fa_device_info dev;
	struct fa_calibration cal, got;
	fa_err_clear(&err);
	FA_REQUIRE(fa_store_open(path, 1, &s, &err) == FA_OK);
	memset(&dev, 0, sizeof dev);
	snprintf(dev.name, sizeof dev.name, "NVIDIA H100 80GB HBM3");
	snprintf(dev.arch, sizeof dev.arch, "sm_90");
	memset(&cal, 0, sizeof cal);
	cal.copy_gbps = 2900.5;
	cal.matmul_tflops = 700.25;
	snprintf(cal.method, sizeof cal.method, "cublasGemmEx bf16 8192^3");
	FA_CHECK(fa_store_calibration_get(s, dev.name, &got, &err) == FA_ERR_NOT_FOUND);
	fa_err_clear(&err);
	FA_REQUIRE(fa_store_calibration_save(s, "cuda", &dev, &cal, "2026-11-25T21:00:00Z", &err) ==
		   FA_OK);
	cal.copy_gbps = 3000.75; /* a later calibration wins */
	cal.matmul_fp32_tflops = 51.5;
	FA_REQUIRE(fa_store_calibration_save(s, "cuda", &dev, &cal, "2026-11-26T21:00:00Z", &err) ==
		   FA_OK);
	FA_REQUIRE(fa_store_calibration_get(s, dev.name, &got, &err) == FA_OK);
	FA_CHECK(got.copy_gbps == 3000.75);
	FA_CHECK(got.matmul_tflops == 700.25);
	FA_CHECK(got.matmul_fp32_tflops == 51.5);
	FA_CHECK(strcmp(got.method, cal.method) == 0);
	FA_CHECK(fa_store_calibration_get(s, "AMD EPYC", &got, &err) == FA_ERR_NOT_FOUND);
	fa_store_close(s);
}

FA_TEST(store, migrates_version_1_to_2)
{
	char path[1024];
	struct fa_store *s = NULL;
	struct fa_err err;
	sqlite3 *raw = NULL;
	snprintf(path, sizeof path, "%s/v1.db", fa_test_tmpdir());
	unlink(path);
	fa_err_clear(&err);
	FA_REQUIRE(fa_store_open(path, 1, &s, &err) == FA_OK);
	fa_store_close(s);
	/* make it a version-1 file: no ab_group column (nor running, of version 3) */
	FA_REQUIRE(sqlite3_open(path, &raw) == SQLITE_OK);
	FA_REQUIRE(sqlite3_exec(raw,
				"ALTER TABLE runs DROP COLUMN shard; ALTER TABLE runs DROP COLUMN devices; ALTER TABLE runs DROP COLUMN merged_from; ALTER TABLE results DROP COLUMN device; "
				"ALTER TABLE runs DROP COLUMN ab_group; ALTER TABLE runs DROP COLUMN "
				"running; DROP TABLE build_results; DROP TABLE build_runs; "
				"ALTER TABLE cases DROP COLUMN pass; DROP TABLE grad_stats; "
				"ALTER TABLE runs DROP COLUMN uid; PRAGMA user_version = 1",
				NULL, NULL, NULL) == SQLITE_OK);
	sqlite3_close(raw);
	FA_REQUIRE(fa_store_open(path, 0, &s, &err) == FA_OK);
	FA_CHECK(query_int(fa_store_db(s), "PRAGMA user_version", 0) == FA_STORE_SCHEMA_VERSION);
	FA_CHECK(query_int(fa_store_db(s), "SELECT count(*) FROM pragma_table_info('runs') WHERE "
					   "name = 'ab_group'", 0) == 1);
	/* version 4: the build-matrix tables */
	FA_CHECK(query_int(fa_store_db(s), "SELECT count(*) FROM sqlite_master WHERE name IN "
					   "('build_runs', 'build_results')", 0) == 2);
	FA_CHECK(query_int(fa_store_db(s), "SELECT count(*) FROM pragma_table_info('runs') WHERE "
					   "name = 'running'", 0) == 1);
	fa_store_close(s);
}

/* Version 3's runs.running: a version-2 file with a run gains the column
 * (NULL for the old run); a mark is committed at once (another connection
 * sees it, as a report after a crash would), and run_end clears it. */
FA_TEST(store, running_mark_migrates_and_clears)
{
	char path[1024];
	struct fa_store *s = NULL;
	struct fa_err err;
	struct fa_run_info ri;
	int64_t old_id = 0, id = 0;
	sqlite3 *raw = NULL, *other = NULL;
	sqlite3_stmt *st = NULL;
	snprintf(path, sizeof path, "%s/v2.db", fa_test_tmpdir());
	unlink(path);
	fa_err_clear(&err);
	memset(&ri, 0, sizeof ri);
	ri.seed = 7;
	ri.source = "fabench";
	FA_REQUIRE(fa_store_open(path, 1, &s, &err) == FA_OK);
	FA_REQUIRE(fa_store_run_begin(s, &ri, &old_id, &err) == FA_OK);
	fa_store_close(s);
	FA_REQUIRE(sqlite3_open(path, &raw) == SQLITE_OK);
	FA_REQUIRE(sqlite3_exec(raw, "ALTER TABLE runs DROP COLUMN shard; ALTER TABLE runs DROP COLUMN devices; ALTER TABLE runs DROP COLUMN merged_from; ALTER TABLE results DROP COLUMN device; "
				     "ALTER TABLE runs DROP COLUMN running; DROP TABLE build_results; DROP TABLE build_runs; ALTER TABLE cases DROP COLUMN pass; DROP TABLE grad_stats; ALTER TABLE runs DROP COLUMN uid; PRAGMA user_version = 2",
				NULL, NULL, NULL) == SQLITE_OK);
	sqlite3_close(raw);
	FA_REQUIRE(fa_store_open(path, 0, &s, &err) == FA_OK);
	FA_CHECK(query_int(fa_store_db(s), "PRAGMA user_version", 0) == FA_STORE_SCHEMA_VERSION);
	FA_CHECK(query_int(fa_store_db(s), "SELECT count(*) FROM runs WHERE running IS NULL", -1) ==
		 1);
	FA_REQUIRE(fa_store_run_begin(s, &ri, &id, &err) == FA_OK);
	FA_REQUIRE(fa_store_run_running(s, id, "case 2/5 b1_h2 kernel k'x", &err) == FA_OK);
	FA_REQUIRE(sqlite3_open_v2(path, &other, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK);
	FA_REQUIRE(sqlite3_prepare_v2(other, "SELECT running FROM runs WHERE id = ?", -1, &st,
				      NULL) == SQLITE_OK);
	sqlite3_bind_int64(st, 1, id);
	FA_REQUIRE(sqlite3_step(st) == SQLITE_ROW);
	FA_CHECKF(sqlite3_column_text(st, 0) &&
			  strcmp((const char *)sqlite3_column_text(st, 0),
				 "case 2/5 b1_h2 kernel k'x") == 0,
		  "running is '%s'", (const char *)sqlite3_column_text(st, 0));
	sqlite3_reset(st);
	FA_REQUIRE(fa_store_run_end(s, id, "complete", &err) == FA_OK);
	FA_REQUIRE(sqlite3_step(st) == SQLITE_ROW);
	FA_CHECK(sqlite3_column_type(st, 0) == SQLITE_NULL);
	sqlite3_finalize(st);
	sqlite3_close(other);
	fa_store_close(s);
}

/* ---- read-only opening (report, compare, history, plot) -------------------- */

FA_TEST(store, readonly_uri)
{
	char buf[256];
	FA_REQUIRE(fa_store_readonly_uri("/data/a b/x?#%.db", 0, buf, sizeof buf) == 0);
	FA_CHECKF(strcmp(buf, "file:///data/a%20b/x%3F%23%25.db?mode=ro&immutable=1") == 0,
		  "uri '%s'", buf);
	FA_REQUIRE(fa_store_readonly_uri("results/fabench.db", 1, buf, sizeof buf) == 0);
	FA_CHECKF(strcmp(buf, "file:results/fabench.db?mode=ro") == 0, "uri '%s'", buf);
	/* "//x" must not become a host */
	FA_REQUIRE(fa_store_readonly_uri("//x.db", 1, buf, sizeof buf) == 0);
	FA_CHECKF(strcmp(buf, "file:////x.db?mode=ro") == 0, "uri '%s'", buf);
	FA_CHECK(fa_store_readonly_uri("results/fabench.db", 1, buf, 20) == -1);
}

FA_TEST(store, readonly_never_creates)
{
	const char *path = fresh_db("ro-absent.db");
	struct fa_store *s = NOT_NULL;
	struct fa_err err;
	char want[1300];
	fa_err_clear(&err);
	FA_CHECK(fa_store_open_readonly(path, &s, &err) == FA_ERR_NOT_FOUND);
	FA_CHECK(s == NULL);
	snprintf(want, sizeof want, "no database at '%s'", path);
	FA_CHECKF(strcmp(err.msg, want) == 0, "message '%s'", err.msg);
	FA_CHECK(!file_exists(path));
}

/* The names in a folder, sorted and joined by spaces (malloc'd). */
static char *list_folder(const char *dir)
{
	char cmd[1400], *out = calloc(1, 4096);
	FILE *p;
	size_t n;
	snprintf(cmd, sizeof cmd, "ls -A '%s'", dir);
	if (!out || !(p = popen(cmd, "r")))
		return out;
	n = fread(out, 1, 4095, p);
	out[n] = '\0';
	pclose(p);
	return out;
}

/* A database whose file and folder are read-only (chmod; root passes
 * access(), so the write bits decide): opened immutable, read, refuses a
 * write, and leaves nothing beside it. */
FA_TEST(store, readonly_file_and_folder)
{
	char dir[1100], path[1200], *before, *after;
	struct fa_store *s = NULL;
	struct fa_run_info ri;
	struct fa_err err;
	int64_t id = 0;
	snprintf(dir, sizeof dir, "%s/ro", fa_test_tmpdir());
	snprintf(path, sizeof path, "%s/fabench.db", dir);
	chmod(dir, 0755);
	unlink(path);
	fa_err_clear(&err);
	fill_run_info(&ri, "kept");
	FA_REQUIRE(fa_store_open(path, 1, &s, &err) == FA_OK);
	FA_REQUIRE(fa_store_run_begin(s, &ri, &id, &err) == FA_OK);
	fa_store_close(s);
	s = NULL;
	FA_REQUIRE(chmod(path, 0444) == 0 && chmod(dir, 0555) == 0);
	before = list_folder(dir);
	FA_REQUIRE(fa_store_open_readonly(path, &s, &err) == FA_OK);
	FA_CHECK(query_int(fa_store_db(s), "SELECT count(*) FROM runs WHERE label = 'kept'", 0) == 1);
	FA_CHECK(sqlite3_db_readonly(fa_store_db(s), "main") == 1);
	FA_CHECK(query_int(fa_store_db(s), "PRAGMA main.query_only", 0) == 0);
	FA_CHECK(sqlite3_exec(fa_store_db(s), "DELETE FROM runs", NULL, NULL, NULL) != SQLITE_OK);
	after = list_folder(dir);
	FA_CHECKF(strcmp(before, after) == 0, "while open: '%s' became '%s'", before, after);
	fa_store_close(s);
	free(after);
	after = list_folder(dir);
	FA_CHECKF(strcmp(before, after) == 0, "after close: '%s' became '%s'", before, after);
	FA_CHECKF(strcmp(before, "fabench.db\n") == 0, "folder holds '%s'", before);
	free(before);
	free(after);
	chmod(dir, 0755);
	chmod(path, 0644);
}

/* A read-only file of an older schema cannot be migrated: refused, named. */
FA_TEST(store, readonly_old_schema)
{
	const char *path = fresh_db("ro-v1.db");
	struct fa_store *s = NULL;
	struct fa_err err;
	sqlite3 *raw = NULL;
	char want[1400];
	fa_err_clear(&err);
	FA_REQUIRE(fa_store_open(path, 1, &s, &err) == FA_OK);
	fa_store_close(s);
	FA_REQUIRE(sqlite3_open(path, &raw) == SQLITE_OK);
	FA_REQUIRE(sqlite3_exec(raw, "ALTER TABLE runs DROP COLUMN shard; ALTER TABLE runs DROP COLUMN devices; ALTER TABLE runs DROP COLUMN merged_from; ALTER TABLE results DROP COLUMN device; "
				     "ALTER TABLE runs DROP COLUMN ab_group; ALTER TABLE runs DROP COLUMN running; "
				"DROP TABLE build_results; DROP TABLE build_runs; ALTER TABLE cases DROP COLUMN pass; DROP TABLE grad_stats; ALTER TABLE runs DROP COLUMN uid; PRAGMA user_version = 1",
				NULL, NULL, NULL) == SQLITE_OK);
	sqlite3_close(raw);
	/* writable: migrated as a writer would, then read */
	FA_REQUIRE(fa_store_open_readonly(path, &s, &err) == FA_OK);
	FA_CHECK(query_int(fa_store_db(s), "PRAGMA user_version", 0) == FA_STORE_SCHEMA_VERSION);
	fa_store_close(s);
	FA_REQUIRE(sqlite3_open(path, &raw) == SQLITE_OK);
	FA_REQUIRE(sqlite3_exec(raw, "ALTER TABLE runs DROP COLUMN shard; ALTER TABLE runs DROP COLUMN devices; ALTER TABLE runs DROP COLUMN merged_from; ALTER TABLE results DROP COLUMN device; "
				     "ALTER TABLE runs DROP COLUMN ab_group; ALTER TABLE runs DROP COLUMN running; "
				"DROP TABLE build_results; DROP TABLE build_runs; ALTER TABLE cases DROP COLUMN pass; DROP TABLE grad_stats; ALTER TABLE runs DROP COLUMN uid; PRAGMA user_version = 1",
				NULL, NULL, NULL) == SQLITE_OK);
	sqlite3_close(raw);
	FA_REQUIRE(chmod(path, 0444) == 0);
	s = NOT_NULL;
	fa_err_clear(&err);
	FA_CHECK(fa_store_open_readonly(path, &s, &err) == FA_ERR_DB);
	FA_CHECK(s == NULL);
	snprintf(want, sizeof want,
		 "database '%s' has schema version 1 and is read-only: this fabench reads version "
		 "%d (a writer such as fabench import migrates it)",
		 path, FA_STORE_SCHEMA_VERSION);
	FA_CHECKF(strcmp(err.msg, want) == 0, "message '%s'", err.msg);
	chmod(path, 0644);
}

/* A file with no tables (an empty file, or a SQLite file of nothing) is a
 * database with no runs to a reader: it opens, every fabench table is
 * there and empty, "latest" is not found with the file's name, writes are
 * refused, and the file is left byte for byte as it was, with nothing
 * beside it (no -wal, no -shm), writable or not. */
FA_TEST(store, readonly_empty_file_has_no_runs)
{
	char dir[1100], path[1200], want[1400], *before, *after, *bytes;
	size_t n_before = 0, n_after = 0;
	for (int kind = 0; kind < 3; kind++) {
		struct fa_store *s = NULL;
		struct fa_err err;
		int64_t id = 0;
		snprintf(dir, sizeof dir, "%s/empty%d", fa_test_tmpdir(), kind);
		snprintf(path, sizeof path, "%s/fabench.db", dir);
		chmod(dir, 0755);
		mkdir(dir, 0755);
		unlink(path);
		if (kind == 2) {
			/* SQLite's own file of no tables: a header page, user_version 0 */
			sqlite3 *raw = raw_open(path);
			FA_REQUIRE(raw);
			FA_REQUIRE(sqlite3_exec(raw, "CREATE TABLE t (x); DROP TABLE t; VACUUM", NULL,
						NULL, NULL) == SQLITE_OK);
			sqlite3_close(raw);
		} else {
			FA_REQUIRE(fa_test_write_file(path, "") == 0);
		}
		if (kind == 1) /* read-only: opened immutable */
			FA_REQUIRE(chmod(path, 0444) == 0 && chmod(dir, 0555) == 0);
		bytes = fa_test_read_file(path, &n_before);
		FA_REQUIRE(bytes);
		before = list_folder(dir);
		fa_err_clear(&err);
		FA_REQUIRE(fa_store_open_readonly(path, &s, &err) == FA_OK);
		FA_CHECK(strcmp(fa_store_path(s), path) == 0);
		FA_CHECK(query_int(fa_store_db(s), "SELECT count(*) FROM runs", 0) == 0);
		FA_CHECK(query_int(fa_store_db(s), "SELECT count(*) FROM results", 0) == 0);
		FA_CHECK(query_int(fa_store_db(s), "SELECT count(*) FROM build_runs", 0) == 0);
		FA_CHECK(query_int(fa_store_db(s), "PRAGMA user_version", 0) ==
			 FA_STORE_SCHEMA_VERSION);
		FA_CHECK(fa_store_find_run(s, "latest", &id, &err) == FA_ERR_NOT_FOUND);
		snprintf(want, sizeof want, "no runs in '%s'", path);
		FA_CHECKF(strcmp(err.msg, want) == 0, "kind %d: message '%s'", kind, err.msg);
		FA_CHECK(sqlite3_exec(fa_store_db(s), "DELETE FROM runs", NULL, NULL, NULL) ==
			 SQLITE_READONLY);
		fa_store_close(s);
		after = list_folder(dir);
		FA_CHECKF(strcmp(before, after) == 0 && strcmp(after, "fabench.db\n") == 0,
			  "kind %d: '%s' became '%s'", kind, before, after);
		free(after);
		after = fa_test_read_file(path, &n_after);
		FA_CHECKF(after && n_after == n_before && memcmp(after, bytes, n_before) == 0,
			  "kind %d: the file went from %zu to %zu bytes", kind, n_before, n_after);
		free(after);
		free(before);
		free(bytes);
		chmod(dir, 0755);
		chmod(path, 0644);
	}
}

/* The read-only open refuses what the writer's open refuses. */
FA_TEST(store, readonly_refusals)
{
	char path[1200], want[1400];
	struct fa_store *s = NOT_NULL;
	struct fa_err err;
	FILE *f;
	fa_err_clear(&err);
	FA_CHECK(fa_store_open_readonly(fa_test_tmpdir(), &s, &err) == FA_ERR_IO);
	FA_CHECK(s == NULL);
	snprintf(want, sizeof want, "database '%s' is a folder", fa_test_tmpdir());
	FA_CHECKF(strcmp(err.msg, want) == 0, "message '%s'", err.msg);
	snprintf(path, sizeof path, "%s", fresh_db("ro-text.db"));
	f = fopen(path, "w");
	FA_REQUIRE(f);
	fputs("not a database, but long enough to have a header of one: ..........\n", f);
	fclose(f);
	s = NOT_NULL;
	fa_err_clear(&err);
	FA_CHECK(fa_store_open_readonly(path, &s, &err) == FA_ERR_DB);
	FA_CHECK(s == NULL);
	snprintf(want, sizeof want, "file '%s' is not a SQLite database", path);
	FA_CHECKF(strcmp(err.msg, want) == 0, "message '%s'", err.msg);
	s = NOT_NULL;
	FA_CHECK(fa_store_open_readonly(":memory:", &s, &err) == FA_ERR_NOT_FOUND);
	FA_CHECK(s == NULL);
}

/* Version 4: a version-3 file with a forward case gains cases.pass ('fwd'
 * for it) and grad_stats; a bwd case then stores its pass and one
 * grad_stats row per gradient, a forward result none. */
FA_TEST(store, backward_pass_and_grad_stats)
{
	const char *path = fresh_db("v3-bwd.db");
	struct fa_store *s = NULL;
	struct fa_err err;
	struct fa_run_info ri;
	struct fa_case c;
	struct fa_result r[2];
	double samples[3];
	char key[32];
	int64_t run_id = 0, case_id = 0;
	sqlite3 *raw = NULL;
	fa_err_clear(&err);
	fill_run_info(&ri, NULL);
	FA_REQUIRE(fa_store_open(path, 1, &s, &err) == FA_OK);
	FA_REQUIRE(fa_store_run_begin(s, &ri, &run_id, &err) == FA_OK);
	simple_case(&c, 0, key, sizeof key);
	simple_result(&r[0], "cpu_flash", samples, 3, 1.0);
	FA_REQUIRE(fa_store_case_commit(s, run_id, &c, r, 1, &case_id, &err) == FA_OK);
	fa_store_close(s);
	FA_REQUIRE(sqlite3_open(path, &raw) == SQLITE_OK);
	FA_REQUIRE(sqlite3_exec(raw,
				"ALTER TABLE cases DROP COLUMN pass; DROP TABLE grad_stats; "
				"DROP TABLE case_tags; DROP TABLE case_depth; DROP TABLE build_results; "
				"DROP TABLE build_runs; ALTER TABLE runs DROP COLUMN shard; "
				"ALTER TABLE runs DROP COLUMN devices; ALTER TABLE runs DROP COLUMN "
				"merged_from; ALTER TABLE results DROP COLUMN device; "
				"ALTER TABLE runs DROP COLUMN uid; PRAGMA user_version = 3",
				NULL, NULL, NULL) == SQLITE_OK);
	sqlite3_close(raw);
	FA_REQUIRE(fa_store_open(path, 0, &s, &err) == FA_OK);
	FA_CHECK(query_int(fa_store_db(s), "PRAGMA user_version", 0) == FA_STORE_SCHEMA_VERSION);
	FA_CHECK(query_int(fa_store_db(s), "SELECT count(*) FROM cases WHERE pass = 'fwd'", 0) == 1);
	simple_case(&c, 1, key, sizeof key);
	c.pass = FA_PASS_BWD;
	simple_result(&r[0], "cpu_flash_bwd", samples, 3, 2.5);
	r[0].checked = 1;
	r[0].grad_checked = 1;
	for (int g = 0; g < FA_GRAD_COUNT; g++)
		r[0].st_grad[g] = (struct fa_err_stats){.max_abs = 0.25 * (g + 1), .rel_l2 = 1e-3,
							.same_max_abs = -1, .worst_index = -1,
							.rows_checked = 10 + g, .elems_checked = 640,
							.unwritten = g == 2 ? 5 : 0};
	simple_result(&r[1], "cpu_dense_bwd", samples, 3, 3.0);
	FA_REQUIRE(fa_store_case_commit(s, run_id, &c, r, 2, &case_id, &err) == FA_OK);
	sqlite3 *db = fa_store_db(s);
	FA_CHECK(query_int(db, "SELECT count(*) FROM cases WHERE pass = 'bwd' AND id = ?", case_id) ==
		 1);
	FA_CHECK(query_int(db, "SELECT count(*) FROM grad_stats", 0) == 3);
	FA_CHECK(query_int(db, "SELECT rows_checked FROM grad_stats WHERE tensor = 'dk'", 0) == 11);
	FA_CHECK(query_int(db, "SELECT unwritten FROM grad_stats WHERE tensor = 'dv'", 0) == 5);
	FA_CHECK(query_int(db, "SELECT count(*) FROM grad_stats WHERE tensor = 'dq' AND "
			       "max_abs = 0.25 AND same_max_abs IS NULL AND worst_index IS NULL",
			   0) == 1);
	fa_store_close(s);
}
