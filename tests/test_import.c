/* test_import.c - fabench import: the bad files of tests/import/ and their
 * exact messages, the good JSON-lines and CSV files read field by field,
 * rows of one case that fill in its depth and labels' layers, random cases
 * whose imported key must equal the key the suite loader makes, storing as
 * a new run and into a fabench run (cases matched by key, nothing written
 * on a conflict: a result, depth or label's layers the run holds
 * otherwise), the command end to end beside `fabench run` and
 * `fabench report`, and bench/peers/torch_sdpa.py: its own unit tests and its
 * writer's output fed to `fabench import` (both when python3 is present). */
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../harness/run/data.h"
#include "../harness/store/import.h"
#include "../harness/store/store.h"
#include "../harness/suite/suite.h"
#include "../kernels/common/fa_rng.h"
#include "golden.h"
#include "proc.h"
#include "test.h"

/* The fewest bad files there are meant to be: a glob that finds fewer (wrong
 * folder) must not pass quietly. */
#define MIN_BAD_FILES 30

/* ---- helpers ---------------------------------------------------------------- */

/* One integer from sql (one int64 parameter bound when it has one), -999 on error. */
static int64_t q_int(sqlite3 *db, const char *sql, int64_t arg)
{
	sqlite3_stmt *st;
	int64_t v = -999;
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
		fprintf(stderr, "sql error: %s: %s\n", sql, sqlite3_errmsg(db));
		return v;
	}
	if (sqlite3_bind_parameter_count(st) > 0)
		sqlite3_bind_int64(st, 1, arg);
	if (sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

/* One text value into buf ("" when NULL or no row). */
static const char *q_text(sqlite3 *db, const char *sql, int64_t arg, char *buf, size_t size)
{
	sqlite3_stmt *st;
	buf[0] = '\0';
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return buf;
	if (sqlite3_bind_parameter_count(st) > 0)
		sqlite3_bind_int64(st, 1, arg);
	if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
		snprintf(buf, size, "%s", (const char *)sqlite3_column_text(st, 0));
	sqlite3_finalize(st);
	return buf;
}

static int is_null(sqlite3 *db, const char *sql, int64_t arg)
{
	sqlite3_stmt *st;
	int v = -1;
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return -1;
	if (sqlite3_bind_parameter_count(st) > 0)
		sqlite3_bind_int64(st, 1, arg);
	if (sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_type(st, 0) == SQLITE_NULL;
	sqlite3_finalize(st);
	return v;
}

/* A path in the test's folder, removed (with its WAL files) first. */
static void fresh(char *buf, size_t size, const char *name)
{
	char aux[PATH_MAX + 8];
	snprintf(buf, size, "%s/%s", fa_test_tmpdir(), name);
	unlink(buf);
	snprintf(aux, sizeof aux, "%s-wal", buf);
	unlink(aux);
	snprintf(aux, sizeof aux, "%s-shm", buf);
	unlink(aux);
}

static int exists(const char *p)
{
	struct stat s;
	return stat(p, &s) == 0;
}

static int write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return -1;
	fputs(text, f);
	return fclose(f);
}

/* Reads path relative to the repository root. */
static enum fa_rc read_fixture(const char *rel, struct fa_import *im, struct fa_err *err)
{
	char cwd[PATH_MAX];
	enum fa_rc rc;
	if (!getcwd(cwd, sizeof cwd) || chdir(fa_test_root()) != 0)
		return FA_ERR_IO;
	fa_err_clear(err);
	rc = fa_import_read(rel, FA_IMPORT_AUTO, im, err);
	if (chdir(cwd) != 0)
		return FA_ERR_IO;
	return rc;
}

/* The case of im with key, or NULL. */
static const struct fa_case *find_case(const struct fa_import *im, const char *key)
{
	for (int32_t i = 0; i < im->n_cases; i++)
		if (strcmp(im->cases[i].key, key) == 0)
			return &im->cases[i];
	return NULL;
}

/* python3 on the PATH: its full path into buf, or 0 when there is none. */
static int find_python(char *buf, size_t size)
{
	const char *path = getenv("PATH");
	char dirs[4096], *save = NULL;
	snprintf(dirs, sizeof dirs, "%s", path ? path : "/usr/bin:/bin");
	for (char *d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
		snprintf(buf, size, "%s/python3", *d ? d : ".");
		if (access(buf, X_OK) == 0)
			return 1;
	}
	return 0;
}

/* Runs argv (argv[0] a path) in the repository root with stdout and stderr
 * into out_path; returns the exit status, 128 + signal, or -1. Killed after
 * timeout_s. */
static int run_program(char *const argv[], const char *out_path, double timeout_s)
{
	pid_t pid = fork();
	int status;
	double waited = 0;
	if (pid < 0)
		return -1;
	if (pid == 0) {
		int fd = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd < 0 || chdir(fa_test_root()) != 0)
			_exit(127);
		dup2(fd, 1);
		dup2(fd, 2);
		close(fd);
		execv(argv[0], argv);
		_exit(127);
	}
	for (;;) {
		pid_t r = waitpid(pid, &status, WNOHANG);
		if (r == pid)
			break;
		if (r < 0)
			return -1;
		if (waited > timeout_s) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			break;
		}
		struct timespec ts = {0, 20 * 1000 * 1000};
		nanosleep(&ts, NULL);
		waited += 0.02;
	}
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : -1;
}

/* ---- bad files: exact messages ------------------------------------------------ */

static void check_bad(const char *rel)
{
	char expected_path[PATH_MAX];
	struct fa_import im;
	struct fa_err err;
	const char *dot = strrchr(rel, '.');
	enum fa_rc rc;
	snprintf(expected_path, sizeof expected_path, "%.*s.err", (int)(dot - rel), rel);
	fa_err_clear(&err);
	rc = fa_import_read(rel, FA_IMPORT_AUTO, &im, &err);
	FA_CHECKF(rc == FA_ERR_INPUT, "%s: read returned %s, expected input", rel, fa_rc_name(rc));
	FA_CHECKF(im.n_rows == 0 && im.rows == NULL && im.cases == NULL && im.mem == NULL,
		  "%s: a failed read left rows behind", rel);
	fa_import_free(&im);
	fa_golden_check_err(rel, expected_path, &err, "fabench import"); /* as the command prints it */
}

FA_TEST(import, golden_errors)
{
	char cwd[PATH_MAX];
	glob_t g;
	size_t n = 0;
	FA_REQUIRE(getcwd(cwd, sizeof cwd) != NULL);
	FA_REQUIRE(chdir(fa_test_root()) == 0);
	if (glob("tests/import/bad_*.jsonl", 0, NULL, &g) == 0) {
		for (size_t i = 0; i < g.gl_pathc; i++)
			check_bad(g.gl_pathv[i]);
		n += g.gl_pathc;
		globfree(&g);
	}
	if (glob("tests/import/bad_*.csv", 0, NULL, &g) == 0) {
		for (size_t i = 0; i < g.gl_pathc; i++)
			check_bad(g.gl_pathv[i]);
		n += g.gl_pathc;
		globfree(&g);
	}
	FA_CHECKF(n >= MIN_BAD_FILES, "only %zu bad import files under %s/tests/import", n,
		  fa_test_root());
	FA_CHECK(chdir(cwd) == 0);
}

/* Every .err has its bad file: a renamed fixture must not leave a stale golden. */
FA_TEST(import, no_orphan_golden_files)
{
	char cwd[PATH_MAX], a[PATH_MAX], b[PATH_MAX];
	glob_t g;
	FA_REQUIRE(getcwd(cwd, sizeof cwd) != NULL);
	FA_REQUIRE(chdir(fa_test_root()) == 0);
	if (glob("tests/import/*.err", 0, NULL, &g) == 0) {
		for (size_t i = 0; i < g.gl_pathc; i++) {
			size_t len = strlen(g.gl_pathv[i]);
			snprintf(a, sizeof a, "%.*s.jsonl", (int)(len - 4), g.gl_pathv[i]);
			snprintf(b, sizeof b, "%.*s.csv", (int)(len - 4), g.gl_pathv[i]);
			FA_CHECKF(exists(a) || exists(b), "%s has no bad file", g.gl_pathv[i]);
		}
		globfree(&g);
	}
	FA_CHECK(chdir(cwd) == 0);
}

/* ---- good files ------------------------------------------------------------------ */

/* The keys and seeds of good_tiny.* are those the suite loader gives
 * tests/suites/tiny.yaml (seed 7), and the fields are read as written. */
FA_TEST(import, good_jsonl_fields)
{
	struct fa_import im;
	struct fa_suite s;
	struct fa_err err;
	char path[PATH_MAX];
	const struct fa_import_row *r;
	FA_REQUIRE(read_fixture("tests/import/good_tiny.jsonl", &im, &err) == FA_OK);
	snprintf(path, sizeof path, "%s/tests/suites/tiny.yaml", fa_test_root());
	memset(&s, 0, sizeof s);
	fa_err_clear(&err);
	FA_REQUIRE(fa_suite_load(path, 0, &s, &err) == FA_OK);
	FA_CHECK(im.format == FA_IMPORT_JSONL);
	FA_CHECK(im.n_cases == s.n_cases + 1); /* and one case tiny does not have */
	FA_CHECK(im.n_rows == 6);
	for (int32_t i = 0; i < s.n_cases; i++) {
		const struct fa_case *c = find_case(&im, s.cases[i].key);
		FA_CHECKF(c != NULL, "suite key %s not imported", s.cases[i].key);
		if (c)
			FA_CHECKF(c->seed == s.cases[i].seed, "seed of %s: %llu, suite %llu", c->key,
				  (unsigned long long)c->seed, (unsigned long long)s.cases[i].seed);
	}
	FA_CHECK(find_case(&im, "batch=1,heads=2,kv_heads=2,q_len=64,kv_len=64,head_dim=32,"
				"head_dim_v=32,dtype=fp32,mask=none,layout=bshd,input=normal") != NULL);
	/* the header */
	FA_CHECK(strcmp(im.run.source, "peer-tool 1.0") == 0);
	FA_CHECK(strcmp(im.run.backend, "cuda") == 0 && strcmp(im.run.device_name, "Test GPU") == 0);
	FA_CHECK(im.run.seed_set && im.run.seed == 7);
	FA_CHECK(strcmp(im.run.started_at, "2026-11-25T21:40:00Z") == 0);
	FA_CHECK(im.run.runtime == NULL);
	/* row 1: the samples decide, not the median written (9.0) */
	r = &im.rows[0];
	FA_CHECK(strcmp(r->r.kernel, "peer_a") == 0 && r->r.status == FA_STATUS_PASS);
	FA_CHECK(r->r.t.n == 4 && r->r.samples && r->r.samples[1] == 0.25);
	FA_CHECK_NEAR(r->r.t.median_ms, 0.625, 1e-15);
	FA_CHECK_NEAR(r->r.t.min_ms, 0.25, 1e-15);
	FA_CHECK_NEAR(r->r.t.stdev_ms, sqrt(0.3125 / 3.0), 1e-12);
	FA_CHECK(r->r.t.stop < 0);
	{
		const struct fa_case *c = &im.cases[r->case_idx];
		double flops = fa_problem_flops(&c->p, NULL, NULL, NULL);
		FA_CHECK(flops == 4.0 * 2 * 16 * 16 * 32); /* 4 B H L L D, no mask */
		FA_CHECK(r->r.flops == flops && r->r.bytes == fa_problem_bytes(&c->p, NULL, NULL, FA_PASS_FWD));
		FA_CHECK_NEAR(r->r.tflops, flops / 0.625e-3 / 1e12, 1e-12);
	}
	FA_CHECK(r->r.checked && r->r.st.max_abs == 2.5e-7 && isnan(r->r.st.max_rel));
	FA_CHECK(r->r.st.nan_count == 0 && r->r.st.inf_count == -1 && r->r.st.rows_checked == 32);
	FA_CHECK(strcmp(r->r.timing, "cold") == 0 && strcmp(r->r.backend, "cuda") == 0);
	/* row 2: a median and a count only; params */
	r = &im.rows[1];
	FA_CHECK(strcmp(r->r.params, "block=64") == 0 && r->r.t.n == 20 && r->r.samples == NULL);
	FA_CHECK(r->r.t.median_ms == 0.125 && isnan(r->r.t.mean_ms) && !r->r.checked);
	FA_CHECK(r->case_idx == im.rows[0].case_idx);
	/* row 3: every parameter spelled out, min and max given */
	r = &im.rows[2];
	FA_CHECK(r->r.t.n == 1 && r->r.t.min_ms == 0.25 && r->r.t.max_ms == 1.0);
	FA_CHECK(im.cases[r->case_idx].p.mask == FA_MASK_CAUSAL);
	/* rows 4 and 5: fail and skip with their reasons, \u escapes decoded */
	FA_CHECK(im.rows[3].r.status == FA_STATUS_FAIL &&
		 strcmp(im.rows[3].r.reason, "max_abs 0.5 > 0.001") == 0);
	FA_CHECK(im.rows[4].r.status == FA_STATUS_SKIP && im.rows[4].r.t.n == 0);
	FA_CHECK(strcmp(im.rows[4].r.reason,
			"fp32 is not supported \xe2\x80\x94 \"flash\" needs fp16 or bf16") == 0);
	fa_suite_free(&s);
	fa_import_free(&im);
}

/* The CSV form of the same rows reads the same. */
FA_TEST(import, csv_equals_jsonl)
{
	struct fa_import a, b;
	struct fa_err err;
	FA_REQUIRE(read_fixture("tests/import/good_tiny.jsonl", &a, &err) == FA_OK);
	if (read_fixture("tests/import/good_tiny.csv", &b, &err) != FA_OK) {
		FA_CHECKF(0, "good_tiny.csv: %s:%d:%d: %s", err.file, err.line, err.col, err.msg);
		fa_import_free(&a);
		return;
	}
	FA_CHECK(b.format == FA_IMPORT_CSV);
	FA_CHECK(a.n_cases == b.n_cases && a.n_rows == b.n_rows);
	for (int32_t i = 0; i < a.n_cases && i < b.n_cases; i++)
		FA_CHECKF(strcmp(a.cases[i].key, b.cases[i].key) == 0 &&
				  a.cases[i].seed == b.cases[i].seed,
			  "case %d: %s / %s", i, a.cases[i].key, b.cases[i].key);
	for (int32_t i = 0; i < a.n_rows && i < b.n_rows; i++) {
		const struct fa_result *x = &a.rows[i].r, *y = &b.rows[i].r;
		FA_CHECKF(strcmp(x->kernel, y->kernel) == 0 && strcmp(x->params, y->params) == 0 &&
				  x->status == y->status && a.rows[i].case_idx == b.rows[i].case_idx,
			  "row %d differs", i);
		FA_CHECKF((isnan(x->t.median_ms) && isnan(y->t.median_ms)) ||
				  x->t.median_ms == y->t.median_ms,
			  "row %d: median %g / %g", i, x->t.median_ms, y->t.median_ms);
	}
	FA_CHECK(b.rows[0].r.t.n == 4 && b.rows[0].r.t.median_ms == 0.625);
	FA_CHECK(strcmp(b.rows[3].r.reason, "max_abs 0.5 > 0.001, \"tolerance\"") == 0);
	FA_CHECK(strcmp(b.rows[4].r.reason, "fp32 is not supported\non two lines") == 0);
	FA_CHECK(b.rows[4].loc.line == 14 && b.rows[5].loc.line == 16); /* a two-line cell */
	FA_CHECK(strcmp(b.run.source, "peer-tool 1.0") == 0 && b.run.seed == 7);
	fa_import_free(&a);
	fa_import_free(&b);
}

/* Formats told apart by content; CRLF, blank lines, escapes, nulls. */
FA_TEST(import, parse_details)
{
	static const char jsonl[] =
		"\r\n{\"heads\": 4, \"head_dim\": 64, \"seq_len\": 8, \"kernel\": \"a\", "
		"\"reason\": \"\\ud83d\\ude00 \\t\\\"x\\\"\", \"dtype\": null}\r\n\r\n"
		"  {\"heads\":4,\"head_dim\":64,\"q_len\":8,\"kernel\":\"b\",\"status\":\"error\"}";
	static const char csv[] = "heads,head_dim,seqlens,kv_seqlens,kernel,samples\r\n"
				  "4,64,3/5;7,\"4 6 8\",a,1e-1 2e-1\r\n";
	struct fa_import im;
	struct fa_err err;
	fa_err_clear(&err);
	FA_REQUIRE(fa_import_parse("mem", jsonl, sizeof jsonl - 1, FA_IMPORT_AUTO, &im, &err) ==
		   FA_OK);
	FA_CHECK(im.format == FA_IMPORT_JSONL && im.n_rows == 2 && im.n_cases == 1);
	FA_CHECK(strcmp(im.rows[0].r.reason, "\xf0\x9f\x98\x80 \t\"x\"") == 0);
	FA_CHECK(im.cases[0].p.dtype == FA_DTYPE_FP16); /* null: the suite default */
	FA_CHECK(im.rows[1].loc.line == 4 && im.rows[1].loc.col == 3);
	FA_CHECK(im.rows[1].r.status == FA_STATUS_ERROR && im.rows[1].r.t.n == 0);
	fa_import_free(&im);
	fa_err_clear(&err);
	FA_REQUIRE(fa_import_parse("mem", csv, sizeof csv - 1, FA_IMPORT_AUTO, &im, &err) == FA_OK);
	FA_CHECK(im.format == FA_IMPORT_CSV && im.n_rows == 1);
	FA_CHECK(strcmp(im.cases[0].key, "batch=3,heads=4,kv_heads=4,q_len=7,kv_len=8,head_dim=64,"
					 "head_dim_v=64,dtype=fp16,mask=none,layout=bshd,input=normal,"
					 "seqlens=3/5/7,kv_seqlens=4/6/8") == 0);
	FA_CHECK(im.rows[0].r.t.n == 2);
	FA_CHECK_NEAR(im.rows[0].r.t.median_ms, 0.15, 1e-15);
	fa_import_free(&im);
	/* a file that cannot be read */
	fa_err_clear(&err);
	FA_CHECK(fa_import_read("/nonexistent/peers.jsonl", FA_IMPORT_AUTO, &im, &err) ==
		 FA_ERR_NOT_FOUND);
	FA_CHECK(strstr(err.msg, "cannot read import file '/nonexistent/peers.jsonl'") != NULL);
	fa_err_clear(&err);
	/* a folder is refused before reading (tests/test_hostile.c has the
	 * devices, FIFOs and files too large) */
	FA_CHECK(fa_import_read(fa_test_tmpdir(), FA_IMPORT_AUTO, &im, &err) == FA_ERR_INPUT);
	FA_CHECK(strstr(err.msg, "is not a regular file (a directory)") != NULL);
}

/* Rows of one case that repeat its depth and its labels' layers, or give
 * what an earlier row lacked (a depth, a tag's layers), import as one case
 * with every value, in JSON lines and CSV alike, and store so; different
 * values are errors (tests/import/bad_*layers_conflict*, bad_*depth_*). */
FA_TEST(import, consistent_repeats_fill_the_case)
{
	static const char jsonl[] =
		"{\"q_len\": 4, \"kv_len\": 20, \"model\": \"llama3-8b\", \"kernel\": \"a\", "
		"\"median_ms\": 1}\n"
		"{\"q_len\": 4, \"kv_len\": 20, \"model\": \"llama3-8b\", \"layers\": 32, "
		"\"tag\": \"mine\", \"depth\": 16, \"kernel\": \"b\", \"median_ms\": 1}\n"
		"{\"q_len\": 4, \"kv_len\": 20, \"heads\": 32, \"kv_heads\": 8, \"head_dim\": 128, "
		"\"depth\": 16, \"kernel\": \"c\", \"median_ms\": 1, \"tags\": [{\"name\": "
		"\"mine\", \"model\": false, \"layers\": 7}]}\n"
		"{\"q_len\": 4, \"kv_len\": 20, \"model\": \"llama3-8b\", \"tag\": \"mine\", "
		"\"kernel\": \"d\", \"median_ms\": 1}\n";
	static const char csv[] = "q_len,kv_len,heads,kv_heads,head_dim,depth,kernel,median_ms,"
				  "models,label_layers\n"
				  "4,20,32,8,128,,a,1,llama3-8b;mine,;\n"
				  "4,20,32,8,128,16,b,1,mine,7\n"
				  "4,20,32,8,128,16,c,1,llama3-8b;mine,32;7\n"
				  "4,20,32,8,128,,d,1,mine,\n";
	static const struct {
		const char *text;
		size_t len;
	} files[] = {{jsonl, sizeof jsonl - 1}, {csv, sizeof csv - 1}};
	for (size_t i = 0; i < 2; i++) {
		struct fa_import im;
		struct fa_store *s;
		struct fa_err err;
		struct fa_import_summary sum;
		struct fa_import_opts o = {NULL, NULL, "fabench import x", "9.9.9"};
		char buf[256];
		enum fa_rc rc;
		fa_err_clear(&err);
		rc = fa_import_parse("mem", files[i].text, files[i].len, FA_IMPORT_AUTO, &im, &err);
		if (rc != FA_OK) {
			FA_CHECKF(0, "file %zu: %s:%d:%d: %s", i, err.file, err.line, err.col,
				  err.msg);
			continue;
		}
		FA_CHECKF(im.n_rows == 4 && im.n_cases == 1, "file %zu: %d rows, %d cases", i,
			  im.n_rows, im.n_cases);
		const struct fa_case *c = &im.cases[0];
		FA_CHECKF(c->depth == 16, "file %zu: depth %d", i, c->depth);
		FA_REQUIRE(c->n_tags == 2);
		FA_CHECKF(strcmp(c->tags[0].name, "llama3-8b") == 0 && c->tags[0].model == 1 &&
				  c->tags[0].layers == 32,
			  "file %zu: %s %d", i, c->tags[0].name, c->tags[0].layers);
		FA_CHECKF(strcmp(c->tags[1].name, "mine") == 0 && c->tags[1].model == 0 &&
				  c->tags[1].layers == 7,
			  "file %zu: %s %d", i, c->tags[1].name, c->tags[1].layers);
		FA_REQUIRE(fa_store_open(":memory:", 1, &s, &err) == FA_OK);
		FA_CHECK(fa_import_store(s, &im, &o, &sum, &err) == FA_OK);
		FA_CHECK(strcmp(q_text(fa_store_db(s),
				       "SELECT group_concat(t.name || '|' || t.layers || '|' || "
				       "d.depth, ';') FROM (SELECT * FROM case_tags ORDER BY seq) "
				       "t JOIN case_depth d ON d.case_id = t.case_id",
				       0, buf, sizeof buf),
			     "llama3-8b|32|16;mine|7|16") == 0);
		fa_store_close(s);
		fa_import_free(&im);
	}
}

/* started_at names a real time: months 01-12, the month's days (February
 * 29 in leap years only), hours 00-23, minutes and seconds 00-59 (no leap
 * second); the error points at the field that is wrong. */
FA_TEST(import, started_at_must_be_a_real_time)
{
	static const struct {
		const char *at;
		int col;          /* 0: accepted */
		const char *says;
	} cases[] = {
		{"2024-02-29T23:59:59Z", 0, NULL},
		{"2000-02-29T00:00:00Z", 0, NULL}, /* divisible by 400: a leap year */
		{"2026-12-31T00:00:00Z", 0, NULL},
		{"2100-02-29T00:00:00Z", 33, "has day 29 (2100-02 has days 01 to 28)"},
		{"2026-04-31T00:00:00Z", 33, "has day 31 (2026-04 has days 01 to 30)"},
		{"2026-01-00T00:00:00Z", 33, "has day 00 (2026-01 has days 01 to 31)"},
		{"2026-00-10T00:00:00Z", 30, "has month 00 (01 to 12)"},
		{"2026-13-45T99:99:99Z", 30, "has month 13 (01 to 12)"},
		{"2026-11-25T24:00:00Z", 36, "has hour 24 (00 to 23)"},
		{"2026-11-25T12:60:00Z", 39, "has minute 60 (00 to 59)"},
		{"2026-12-31T23:59:60Z", 42, "has second 60 (00 to 59)"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char text[256];
		struct fa_import im;
		struct fa_err err;
		enum fa_rc rc;
		int n = snprintf(text, sizeof text,
				 "{\"run\": {\"started_at\": \"%s\"}}\n"
				 "{\"heads\": 2, \"head_dim\": 32, \"seq_len\": 16, \"kernel\": \"p\"}\n",
				 cases[i].at);
		fa_err_clear(&err);
		rc = fa_import_parse("t.jsonl", text, (size_t)n, FA_IMPORT_AUTO, &im, &err);
		if (!cases[i].col) {
			FA_CHECKF(rc == FA_OK && strcmp(im.run.started_at, cases[i].at) == 0,
				  "%s: %s", cases[i].at, err.msg);
			fa_import_free(&im);
			continue;
		}
		FA_CHECKF(rc == FA_ERR_INPUT && err.line == 1 && err.col == cases[i].col &&
				  strstr(err.msg, cases[i].says) != NULL,
			  "%s: %d at 1:%d: %s", cases[i].at, rc, err.col, err.msg);
		/* the same in a CSV header line, the value at column 15 */
		n = snprintf(text, sizeof text, "# started_at: %s\nheads,head_dim,seq_len,kernel\n2,32,16,p\n",
			     cases[i].at);
		fa_err_clear(&err);
		rc = fa_import_parse("t.csv", text, (size_t)n, FA_IMPORT_AUTO, &im, &err);
		FA_CHECKF(rc == FA_ERR_INPUT && err.line == 1 && err.col == cases[i].col - 25 + 15 &&
				  strstr(err.msg, cases[i].says) != NULL,
			  "csv %s: %d at 1:%d: %s", cases[i].at, rc, err.col, err.msg);
	}
}

/* Parses text named name; FA_OK or the error's rc with err filled. */
static enum fa_rc parse_text(const char *name, const char *text, struct fa_import *im,
			     struct fa_err *err)
{
	fa_err_clear(err);
	return fa_import_parse(name, text, strlen(text), FA_IMPORT_AUTO, im, err);
}

/* A CSV cell may hold what a JSON string may: tabs, and line breaks inside
 * quotes (a CRLF's CR too); any other control character is refused where
 * it is, as JSON refuses it. */
FA_TEST(import, csv_control_characters_as_json)
{
	static const struct {
		const char *text;
		int line, col; /* 0: accepted */
		const char *says;
	} cases[] = {
		{"heads,head_dim,seq_len,kernel,reason\n2,32,16,p,a\tb\n", 0, 0, "a\tb"},
		{"heads,head_dim,seq_len,kernel,reason\r\n2,32,16,p,\"x\r\ny\"\r\n", 0, 0, "x\r\ny"},
		{"heads,head_dim,seq_len,kernel,reason\n2,32,16,p,\"\ty\n\"\n", 0, 0, "\ty\n"},
		{"heads,head_dim,seq_len,kernel,reason\n2,32,16,p,a\x01" "b\n", 2, 12,
		 "control character 0x01 in a cell"},
		{"heads,head_dim,seq_len,kernel,reason\n2,32,16,p,a\rb\n", 2, 12,
		 "control character 0x0d in a cell"},
		{"heads,head_dim,seq_len,kernel,reason\n2,32,16,p,\"\xc3\xa9\n\xc3\xa9\x7f\x1f\"\n", 3, 3,
		 "control character 0x1f in a cell"},
		{"heads,head_dim,seq_len,ker\x02nel\n2,32,16,p\n", 1, 27,
		 "control character 0x02 in a cell"},
		{"# label: a\x1b" "b\nheads,head_dim,seq_len,kernel\n2,32,16,p\n", 1, 11,
		 "control character 0x1b in a header line"},
		/* a comment that names no run field may hold anything */
		{"# made\x01 by a tool\nheads,head_dim,seq_len,kernel\n2,32,16,p\n", 0, 0, NULL},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct fa_import im;
		struct fa_err err;
		enum fa_rc rc = parse_text("t.csv", cases[i].text, &im, &err);
		if (!cases[i].line) {
			FA_CHECKF(rc == FA_OK, "case %zu: %s", i, err.msg);
			if (rc == FA_OK && cases[i].says)
				FA_CHECKF(strcmp(im.rows[0].r.reason, cases[i].says) == 0,
					  "case %zu: reason '%s'", i, im.rows[0].r.reason);
			fa_import_free(&im);
			continue;
		}
		FA_CHECKF(rc == FA_ERR_INPUT && err.line == cases[i].line && err.col == cases[i].col &&
				  strcmp(err.msg, cases[i].says) == 0,
			  "case %zu: %d at %d:%d: %s", i, rc, err.line, err.col, err.msg);
	}
	/* JSON's words for the same byte */
	{
		struct fa_import im;
		struct fa_err err;
		FA_CHECK(parse_text("t.jsonl",
				    "{\"heads\": 2, \"head_dim\": 32, \"seq_len\": 16, \"kernel\": \"p\", "
				    "\"reason\": \"a\x01" "b\"}\n",
				    &im, &err) == FA_ERR_INPUT);
		FA_CHECK(err.col == 72 && strcmp(err.msg, "control character 0x01 in a string") == 0);
	}
}

/* A run field given twice by "# key: value" lines is an error at the
 * second, as a duplicate JSON field is; comments may repeat. */
FA_TEST(import, csv_run_field_given_twice)
{
	struct fa_import im;
	struct fa_err err;
	FA_CHECK(parse_text("t.csv",
			    "# label: a\n# made by hand\n# made by hand\n# source: t\n#  label:  b\n"
			    "heads,head_dim,seq_len,kernel\n2,32,16,p\n",
			    &im, &err) == FA_ERR_INPUT);
	FA_CHECK(err.line == 5 && err.col == 4 &&
		 strcmp(err.msg, "duplicate run field 'label' (first on line 1)") == 0);
	/* an empty value counts as given */
	FA_CHECK(parse_text("t.csv", "# host:\n# host: x\nheads,head_dim,seq_len,kernel\n2,32,16,p\n",
			    &im, &err) == FA_ERR_INPUT);
	FA_CHECK(err.line == 2 && strstr(err.msg, "'host' (first on line 1)") != NULL);
	/* each once: read */
	FA_REQUIRE(parse_text("t.csv", "# label: a\n# source: t\n# made by hand\n# made by hand\n"
				       "heads,head_dim,seq_len,kernel\n2,32,16,p\n",
			      &im, &err) == FA_OK);
	FA_CHECK(strcmp(im.run.label, "a") == 0 && strcmp(im.run.source, "t") == 0);
	fa_import_free(&im);
}

/* A UTF-8 byte order mark opening the file is skipped, in JSON lines, a
 * report's JSON and CSV, as the suite loader skips it; columns count from
 * after it. Elsewhere it is a character like any other. */
FA_TEST(import, byte_order_mark_is_skipped)
{
	static const char *const good[][2] = {
		{"t.jsonl", "\xef\xbb\xbf{\"heads\": 2, \"head_dim\": 32, \"seq_len\": 16, "
			    "\"kernel\": \"p\", \"median_ms\": 0.5}\n"},
		{"t.csv", "\xef\xbb\xbfheads,head_dim,seq_len,kernel,median_ms\n2,32,16,p,0.5\n"},
		{"t.csv", "\xef\xbb\xbf# source: tool\nheads,head_dim,seq_len,kernel,median_ms\n"
			  "2,32,16,p,0.5\n"},
		{"t.json", "\xef\xbb\xbf{\n\"schema_version\": 1, \"results\": [{\"case\": {\"heads\": 2, "
			   "\"head_dim\": 32, \"q_len\": 16, \"kv_len\": 16}, \"kernel\": \"p\", "
			   "\"median_ms\": 0.5}]}\n"},
		{"no-suffix", "\xef\xbb\xbf{\"heads\": 2, \"head_dim\": 32, \"seq_len\": 16, "
			      "\"kernel\": \"p\", \"median_ms\": 0.5}\n"}, /* told apart by content */
	};
	struct fa_import im;
	struct fa_err err;
	for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
		enum fa_rc rc = parse_text(good[i][0], good[i][1], &im, &err);
		FA_CHECKF(rc == FA_OK, "%zu: %d:%d: %s", i, err.line, err.col, err.msg);
		if (rc != FA_OK)
			continue;
		FA_CHECKF(im.n_rows == 1 && im.cases[0].p.heads == 2 && im.rows[0].r.t.median_ms == 0.5,
			  "%zu: rows %d", i, im.n_rows);
		fa_import_free(&im);
	}
	/* columns on line 1 count from after it */
	FA_CHECK(parse_text("t.csv", "\xef\xbb\xbfheads,head_dimm,seq_len,kernel\n2,32,16,p\n", &im,
			    &err) == FA_ERR_INPUT);
	FA_CHECK(err.line == 1 && err.col == 7 && strstr(err.msg, "unknown column 'head_dimm'"));
	/* one later in the file is no byte order mark */
	FA_CHECK(parse_text("t.jsonl", "{\"heads\": 2, \"head_dim\": 32, \"seq_len\": 16, "
				       "\"kernel\": \"p\"}\n\xef\xbb\xbf{\"heads\": 4}\n",
			    &im, &err) == FA_ERR_INPUT);
	FA_CHECK(err.line == 2 && err.col == 1 && strstr(err.msg, "got byte 0xef"));
	FA_CHECK(parse_text("t.csv", "heads,head_dim,seq_len,kernel\n\xef\xbb\xbf" "2,32,16,p\n", &im,
			    &err) == FA_ERR_INPUT);
	FA_CHECK(err.line == 2 && err.col == 1 && strstr(err.msg, "for 'heads'"));
}

/* A report's JSON imports whatever its layout: as fabench writes it (the
 * first line "{" alone) and rewritten on one line (jq -c, Python's
 * json.dump), told apart from JSON lines by its first member,
 * "schema_version"; a line of JSON lines that opens with that name is
 * still the report's error, not an unknown field. */
FA_TEST(import, report_json_on_one_line)
{
	static const char *const good[][2] = {
		{"r.json", "{\n  \"schema_version\": 2,\n  \"run\": {\"label\": \"x\"},\n"
			   "  \"results\": [{\"case\": {\"heads\": 2, \"head_dim\": 32, \"q_len\": 16, "
			   "\"kv_len\": 16, \"seqlens\": null}, \"kernel\": \"p\", \"n_samples\": 3, "
			   "\"median_ms\": 0.5}]\n}\n"},
		{"r.json", "{\"schema_version\": 2, \"run\": {\"label\": \"x\"}, \"results\": "
			   "[{\"case\": {\"heads\": 2, \"head_dim\": 32, \"q_len\": 16, \"kv_len\": 16, "
			   "\"seqlens\": null}, \"kernel\": \"p\", \"n_samples\": 3, \"median_ms\": "
			   "0.5}]}\n"},
		{"r.jsonl", " {\"schema_version\":2,\"run\":{\"label\":\"x\"},\"results\":[{\"case\":"
			    "{\"heads\":2,\"head_dim\":32,\"q_len\":16,\"kv_len\":16,\"seqlens\":null},"
			    "\"kernel\":\"p\",\"n_samples\":3,\"median_ms\":0.5}]}"},
	};
	struct fa_import im;
	struct fa_err err;
	for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
		enum fa_rc rc = parse_text(good[i][0], good[i][1], &im, &err);
		FA_CHECKF(rc == FA_OK, "%zu: %d:%d: %s", i, err.line, err.col, err.msg);
		if (rc != FA_OK)
			continue;
		FA_CHECKF(im.n_rows == 1 && im.cases[0].p.heads == 2 && im.rows[0].r.t.n == 3 &&
				  im.rows[0].r.t.median_ms == 0.5 && im.run.label &&
				  strcmp(im.run.label, "x") == 0,
			  "%zu: rows %d", i, im.n_rows);
		fa_import_free(&im);
	}
	/* one line, then more: the document must end the file */
	FA_CHECK(parse_text("r.json", "{\"schema_version\": 2, \"results\": []}\n{\"heads\": 2}\n",
			    &im, &err) == FA_ERR_INPUT);
	FA_CHECKF(err.line == 2 && err.col == 1 &&
			  strstr(err.msg, "expected the end of the file after the report"),
		  "%d:%d: %s", err.line, err.col, err.msg);
	/* a version this fabench does not know is refused as a report's */
	FA_CHECK(parse_text("r.json", "{\"schema_version\": 9, \"results\": []}\n", &im, &err) ==
		 FA_ERR_INPUT);
	FA_CHECKF(strstr(err.msg, "report schema_version '9' is not 1 or 2"), "%s", err.msg);
}

/* params are what fabench writes (NAME=VALUE, a 32-bit integer as %d
 * prints it, joined by single commas, each name once; a name of letters,
 * digits and '_', a letter or '_' first, at most 63, as a kernel's param
 * may be called): anything else is an
 * error at the item, a control character at the character, past escapes. */
FA_TEST(import, params_as_fabench_writes_them)
{
	/* the JSON source of the params string; the text starts at column 71 */
	static const struct {
		const char *json;
		int col; /* 0: accepted */
		const char *says;
	} cases[] = {
		{"", 0, NULL},
		{"block=64", 0, NULL},
		{"block_q=16,block_k=64", 0, NULL},
		{"a=-8,B_2=0,x=2147483647,y=-2147483648", 0, NULL},
		{"_2d=1,_=0", 0, NULL},
		/* as fa_kernel_validate lets a param be called: a letter or '_'
		 * first, at most 63 characters */
		{"a=1,2d=1", 75, "params name '2d' starts with a digit (a kernel's param begins "
				 "with a letter or '_')"},
		{"p23456789012345678901234567890123456789012345678901234567890123=1", 0, NULL},
		{"a=1,p234567890123456789012345678901234567890123456789012345678901234=1", 75,
		 "params name 'p234567890123456789012345678901234567890123456789012345678901234...' "
		 "is longer than 63 characters"},
		{"a=1,,=b,c", 75, "empty item in params 'a=1,,=b,c' (params are NAME=VALUE items "
				  "separated by single commas)"},
		{"a=1,", 75, "empty item in params 'a=1,'"},
		{",a=1", 71, "empty item in params ',a=1'"},
		{"c", 71, "params item 'c' is not NAME=VALUE"},
		{"a=1,=b", 75, "params item '=b' is not NAME=VALUE"},
		{"a=1, b=2", 75, "params name ' b' must be letters, digits and '_'"},
		{"$(rm -rf ~)=1", 71, "params name '$(rm -rf ~)' must be letters, digits and '_'"},
		{"\xc3\xa9=1", 71, "params name '\xc3\xa9' must be letters, digits and '_'"},
		{"a=1,b=x", 75, "params item 'b=x' must have an integer value as fabench writes it "
				"(-8, 0, 64)"},
		{"a=064", 71, "params item 'a=064' must have an integer value"},
		{"a=+1", 71, "params item 'a=+1' must have an integer value"},
		{"a=-0", 71, "params item 'a=-0' must have an integer value"},
		{"a=", 71, "params item 'a=' must have an integer value"},
		{"a=1.5", 71, "params item 'a=1.5' must have an integer value"},
		{"a=\\\"1\\\"", 71, "params item 'a=\"1\"' must have an integer value"},
		{"a=1=2", 71, "params item 'a=1=2' must have an integer value"},
		{"a=2147483648", 71, "params item 'a=2147483648' has a value outside 32-bit integers"},
		{"a=-2147483649", 71, "has a value outside 32-bit integers"},
		{"a=99999999999999999999", 71, "has a value outside 32-bit integers"},
		{"a=1,a=2", 75, "params name 'a' given twice"},
		{"ab=1,a=2,ab=3", 80, "params name 'ab' given twice"},
		{"a=1,\\nb=2", 75, "control character 0x0a in params"},
		{"a=1\\t", 74, "control character 0x09 in params"},
		/* columns past escapes: \u0031 is six characters of the line, one byte */
		{"a=\\u0031,a=2", 80, "params name 'a' given twice"},
		{"a=\\u0031,\\u0001", 80, "control character 0x01 (escaped) in a string"},
		/* as many items as a kernel has params (16), no more */
		{"a=1,b=2,c=3,d=4,e=5,f=6,g=7,h=8,i=9,j=10,k=11,l=12,m=13,n=14,o=15,p=16", 0, NULL},
		{"a=1,b=2,c=3,d=4,e=5,f=6,g=7,h=8,i=9,j=10,k=11,l=12,m=13,n=14,o=15,p=16,q=17", 142,
		 "params has more than 16 items (a kernel has at most 16 params)"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char text[512];
		struct fa_import im;
		struct fa_err err;
		enum fa_rc rc;
		snprintf(text, sizeof text,
			 "{\"heads\": 2, \"head_dim\": 32, \"seq_len\": 16, \"kernel\": \"p\", "
			 "\"params\": \"%s\"}\n",
			 cases[i].json);
		rc = parse_text("t.jsonl", text, &im, &err);
		if (!cases[i].col) {
			FA_CHECKF(rc == FA_OK && strcmp(im.rows[0].r.params, cases[i].json) == 0,
				  "'%s': %s", cases[i].json, err.msg);
			if (rc == FA_OK)
				fa_import_free(&im);
			continue;
		}
		FA_CHECKF(rc == FA_ERR_INPUT && err.line == 1 && err.col == cases[i].col &&
				  strstr(err.msg, cases[i].says) != NULL,
			  "'%s': %d at %d:%d: %s", cases[i].json, rc, err.line, err.col, err.msg);
	}
	/* CSV: a quoted cell (the text from column 12), across lines, unquoted */
	{
		struct fa_import im;
		struct fa_err err;
		const char *head = "heads,head_dim,seq_len,kernel,params\n";
		char text[256];
		snprintf(text, sizeof text, "%s2,32,16,p,\"a=1,b=2\"\n", head);
		FA_REQUIRE(parse_text("t.csv", text, &im, &err) == FA_OK);
		FA_CHECK(strcmp(im.rows[0].r.params, "a=1,b=2") == 0);
		fa_import_free(&im);
		snprintf(text, sizeof text, "%s2,32,16,p,\"a=1,b=2,\"\"c\"\"=3\"\n", head);
		FA_CHECK(parse_text("t.csv", text, &im, &err) == FA_ERR_INPUT);
		FA_CHECK(err.line == 2 && err.col == 20 &&
			 strcmp(err.msg, "params name '\"c\"' must be letters, digits and '_'") == 0);
		snprintf(text, sizeof text, "%s2,32,16,p,\"a=1,b=2,\nc=3\"\n", head);
		FA_CHECK(parse_text("t.csv", text, &im, &err) == FA_ERR_INPUT);
		FA_CHECK(err.line == 2 && err.col == 20 &&
			 strcmp(err.msg, "control character 0x0a in params") == 0);
		snprintf(text, sizeof text, "%s2,32,16,p,a=1;b=2\n", head);
		FA_CHECK(parse_text("t.csv", text, &im, &err) == FA_ERR_INPUT);
		FA_CHECK(err.line == 2 && err.col == 11 && strstr(err.msg, "'a=1;b=2' must have"));
	}
}

/* Columns are counted along a line once: a line of 8 MB with a million
 * values (non-ASCII text and escapes before them) and an error at its end
 * is read in well under the time limit, and the column is its character. */
FA_TEST(import, long_line_columns_in_linear_time)
{
	char path[PATH_MAX], db[PATH_MAX], want[PATH_MAX + 64];
	struct fa_proc_result r;
	FILE *f;
	long col = 0;
	snprintf(path, sizeof path, "%s/long.jsonl", fa_test_tmpdir());
	fresh(db, sizeof db, "long.db");
	FA_REQUIRE((f = fopen(path, "w")) != NULL);
	col += fprintf(f, "{\"heads\": 2, \"head_dim\": 32, \"seq_len\": 16, \"kernel\": \"p\", "
			  "\"reason\": \"");
	for (int i = 0; i < 100000; i++) {
		fputs("\xc3\xa9\\u00e9", f); /* two bytes and one column, six and six */
		col += 7;
	}
	col += fprintf(f, "\", \"samples\": [0.5");
	for (int i = 0; i < 1000000; i++)
		col += fprintf(f, ",0.5");
	col += fprintf(f, ", ");
	fprintf(f, "-1]}\n");
	FA_REQUIRE(fclose(f) == 0);
	fa_proc_run((char *[]){"import", path, "--db", db, NULL}, NULL, 60, &r);
	snprintf(want, sizeof want, "%s:1:%ld: samples entry -1 must be positive", path, col + 1);
	FA_CHECKF(r.status == 2 && strstr(r.err, want), "status %d (137: killed at 60 s)\n%.300s",
		  r.status, r.err);
	/* the excerpt shows the mistake with the caret under it, though the
	 * line is far longer than the excerpt's buffer (it showed the line's
	 * first 4 KB, the caret under none of the mistake) */
	{
		const char *ex = strstr(r.err, "\n 1 | ..."), *caret = ex ? strchr(ex + 1, '\n') : NULL;
		const char *bad = ex ? strstr(ex, ",0.5, -1]}\n") : NULL;
		FA_CHECKF(ex && caret && bad && bad < caret &&
				  strncmp(caret + 1 + (bad + 6 - ex - 1), "^\n", 2) == 0,
			  "excerpt:\n%.400s", ex ? ex : r.err);
	}
	FA_CHECK(!exists(db));
	fa_proc_free(&r);
}

/* An object of 300000 fields, the last a duplicate, is read in linear time
 * (each new name was compared with every earlier one: minutes), and the
 * duplicate is found where it is. */
FA_TEST(import, wide_object_duplicates_in_linear_time)
{
	char path[PATH_MAX], db[PATH_MAX], want[PATH_MAX + 160];
	struct fa_proc_result r;
	FILE *f;
	long col = 0, first = 0;
	snprintf(path, sizeof path, "%s/wide.jsonl", fa_test_tmpdir());
	fresh(db, sizeof db, "wide.db");
	FA_REQUIRE((f = fopen(path, "w")) != NULL);
	col += fprintf(f, "{\"heads\": 2");
	for (int i = 0; i < 300000; i++) {
		col += fprintf(f, ", ");
		if (i == 123456)
			first = col + 1;
		col += fprintf(f, "\"x%d\": 1", i);
	}
	col += fprintf(f, ", ");
	fprintf(f, "\"x123456\": 2}\n");
	FA_REQUIRE(fclose(f) == 0);
	fa_proc_run((char *[]){"import", path, "--db", db, NULL}, NULL, 60, &r);
	snprintf(want, sizeof want, "%s:1:%ld: duplicate field 'x123456' (first at column %ld)", path,
		 col + 1, first);
	FA_CHECKF(r.status == 2 && strstr(r.err, want), "status %d (137: killed at 60 s)\n%.300s",
		  r.status, r.err);
	FA_CHECK(!exists(db));
	fa_proc_free(&r);
}

/* ---- random cases: the import makes the suite loader's key ---------------------- */

struct rng {
	uint64_t s;
};

static uint32_t rnd(struct rng *r, uint32_t n)
{
	r->s = fa_rng_mix64(r->s + 0x9e3779b97f4a7c15ull);
	return (uint32_t)(r->s % n);
}

/* One random valid case as a YAML mapping body, a JSON object and a CSV
 * header + row (the same parameters). */
static void random_case(struct rng *r, char *yaml, char *json, char *csv_head, char *csv_row,
			size_t size)
{
	static const char *const dtypes[] = {"fp32", "fp16", "bf16"};
	static const char *const masks[] = {"none", "causal", "prefix_lm", "sliding_window"};
	static const char *const layouts[] = {"bshd", "bhsd"};
	static const char *const inputs[] = {"normal", "uniform", "outliers"};
	static const int heads_opts[] = {1, 2, 4, 6, 8, 12, 16, 32};
	int heads = heads_opts[rnd(r, 8)], kv = heads, head_dim = 8 + (int)rnd(r, 249);
	int varlen = rnd(r, 3) == 0, n = 1 + (int)rnd(r, 4), lq[4], lk[4], mink = INT_MAX, maxk = 0;
	const char *mask = masks[rnd(r, 4)];
	size_t y = 0, j = 0, h = 0, c = 0;
	while (rnd(r, 2) && kv > 1 && heads % (kv / 2) == 0 && kv % 2 == 0)
		kv /= 2;
	for (int b = 0; b < n; b++) {
		lq[b] = 1 + (int)rnd(r, 64);
		lk[b] = rnd(r, 2) ? lq[b] : 1 + (int)rnd(r, 64);
		/* a varlen batch may hold empty sequences: no queries, no keys */
		if (varlen && rnd(r, 6) == 0)
			lq[b] = 0;
		if (varlen && rnd(r, 6) == 0)
			lk[b] = 0;
	}
	if (lq[n - 1] == 0 && lk[n - 1] == 0) /* at least one query and one key */
		lq[n - 1] = lk[n - 1] = 1;
	else if (lq[n - 1] == 0 || lk[n - 1] == 0)
		lq[0] = lk[0] = 3;
	for (int b = 0; b < n; b++) {
		mink = lk[b] < mink ? lk[b] : mink;
		maxk = lk[b] > maxk ? lk[b] : maxk;
	}
#define ADD(name, fmt, ...)                                                                  \
	do {                                                                                 \
		y += (size_t)snprintf(yaml + y, size - y, "%s" name ": " fmt, y ? ", " : "", \
				      __VA_ARGS__);                                          \
		j += (size_t)snprintf(json + j, size - j, "%s\"" name "\": " fmt, j ? ", " : "", \
				      __VA_ARGS__);                                          \
	} while (0)
#define CSV(name, fmt, ...)                                                                  \
	do {                                                                                 \
		h += (size_t)snprintf(csv_head + h, size - h, "%s" name, h ? "," : "");     \
		c += (size_t)snprintf(csv_row + c, size - c, "%s" fmt, c ? "," : "", __VA_ARGS__); \
	} while (0)
	ADD("heads", "%d", heads);
	CSV("heads", "%d", heads);
	if (kv != heads || rnd(r, 2)) {
		ADD("kv_heads", "%d", kv);
		CSV("kv_heads", "%d", kv);
	}
	ADD("head_dim", "%d", head_dim);
	CSV("head_dim", "%d", head_dim);
	if (rnd(r, 4) == 0) {
		int dv = 8 + (int)rnd(r, 249);
		ADD("head_dim_v", "%d", dv);
		CSV("head_dim_v", "%d", dv);
	}
	if (rnd(r, 4)) {
		const char *d = dtypes[rnd(r, 3)];
		ADD("dtype", "\"%s\"", d);
		CSV("dtype", "%s", d);
	}
	ADD("mask", "\"%s\"", mask);
	CSV("mask", "%s", mask);
	if (rnd(r, 2)) {
		const char *l = layouts[rnd(r, 2)];
		ADD("layout", "\"%s\"", l);
		CSV("layout", "%s", l);
	}
	if (rnd(r, 2)) {
		const char *in = inputs[rnd(r, 3)];
		ADD("input", "\"%s\"", in);
		CSV("input", "%s", in);
	}
	if (varlen) {
		char a[64] = "", b[64] = "", ca[64] = "", cb[64] = "";
		for (int k = 0; k < n; k++) {
			snprintf(a + strlen(a), sizeof a - strlen(a), "%s%d", k ? ", " : "", lq[k]);
			snprintf(b + strlen(b), sizeof b - strlen(b), "%s%d", k ? ", " : "", lk[k]);
			snprintf(ca + strlen(ca), sizeof ca - strlen(ca), "%s%d", k ? "/" : "", lq[k]);
			snprintf(cb + strlen(cb), sizeof cb - strlen(cb), "%s%d", k ? "/" : "", lk[k]);
		}
		ADD("seqlens", "[%s]", a);
		CSV("seqlens", "%s", ca);
		ADD("kv_seqlens", "[%s]", b);
		CSV("kv_seqlens", "%s", cb);
		if (!strcmp(mask, "prefix_lm") && rnd(r, 2)) {
			char p[64] = "", cp[64] = "";
			for (int k = 0; k < n; k++) {
				int v = (int)rnd(r, (uint32_t)lk[k] + 1);
				snprintf(p + strlen(p), sizeof p - strlen(p), "%s%d", k ? ", " : "", v);
				snprintf(cp + strlen(cp), sizeof cp - strlen(cp), "%s%d", k ? "/" : "", v);
			}
			ADD("prefix_lens", "[%s]", p);
			CSV("prefix_lens", "%s", cp);
		} else if (!strcmp(mask, "prefix_lm")) {
			int v = (int)rnd(r, (uint32_t)mink + 1);
			ADD("prefix_len", "%d", v);
			CSV("prefix_len", "%d", v);
		}
	} else {
		if (lq[0] == lk[0] && rnd(r, 2)) {
			ADD("seq_len", "%d", lq[0]);
			CSV("seq_len", "%d", lq[0]);
		} else {
			ADD("q_len", "%d", lq[0]);
			CSV("q_len", "%d", lq[0]);
			ADD("kv_len", "%d", lk[0]);
			CSV("kv_len", "%d", lk[0]);
		}
		if (n > 1 || rnd(r, 2)) {
			ADD("batch", "%d", n);
			CSV("batch", "%d", n);
		}
		maxk = mink = lk[0];
		if (!strcmp(mask, "prefix_lm")) {
			int v = (int)rnd(r, (uint32_t)lk[0] + 1);
			ADD("prefix_len", "%d", v);
			CSV("prefix_len", "%d", v);
		}
	}
	if (!strcmp(mask, "sliding_window")) {
		int w = 1 + (int)rnd(r, (uint32_t)maxk);
		ADD("window", "%d", w);
		CSV("window", "%d", w);
	}
	if (rnd(r, 5) == 0) {
		double sc = (1 + rnd(r, 999)) / 1000.0;
		ADD("scale", "%g", sc);
		CSV("scale", "%g", sc);
	}
	j += (size_t)snprintf(json + j, size - j, ", \"kernel\": \"k\"");
	CSV("kernel", "%s", "k");
#undef ADD
#undef CSV
}

FA_TEST(import, random_cases_match_suite_keys)
{
	struct rng r = {fa_test_seed()};
	char yaml[2048], json[2048], head[2048], row[2048], text[8192], path[PATH_MAX];
	snprintf(path, sizeof path, "%s/case.yaml", fa_test_tmpdir());
	for (int i = 0; i < 60; i++) {
		struct fa_suite s;
		struct fa_import a, b;
		struct fa_err err;
		random_case(&r, yaml, json, head, row, sizeof yaml);
		snprintf(text, sizeof text, "suite: r\nseed: 5\ndefaults: {%s}\n", yaml);
		FA_REQUIRE(write_file(path, text) == 0);
		memset(&s, 0, sizeof s);
		fa_err_clear(&err);
		if (fa_suite_load(path, 0, &s, &err) != FA_OK) {
			FA_CHECKF(0, "suite {%s}: %s", yaml, err.msg);
			continue;
		}
		snprintf(text, sizeof text, "{\"run\": {\"seed\": 5}}\n{%s}\n", json);
		fa_err_clear(&err);
		if (fa_import_parse("r.jsonl", text, strlen(text), FA_IMPORT_AUTO, &a, &err) != FA_OK) {
			FA_CHECKF(0, "{%s}: %s:%d:%d: %s", json, err.file, err.line, err.col, err.msg);
			fa_suite_free(&s);
			continue;
		}
		FA_CHECKF(strcmp(a.cases[0].key, s.cases[0].key) == 0 && a.cases[0].seed == s.cases[0].seed,
			  "json {%s}: key %s, suite %s", json, a.cases[0].key, s.cases[0].key);
		FA_CHECK(a.rows[0].r.flops == fa_problem_flops(&s.cases[0].p, s.cases[0].cu_seqlens_q,
							       s.cases[0].cu_seqlens_k,
							       s.cases[0].prefix_lens));
		FA_CHECK(a.rows[0].r.bytes == fa_problem_bytes(&s.cases[0].p, s.cases[0].cu_seqlens_q,
							       s.cases[0].cu_seqlens_k, FA_PASS_FWD));
		snprintf(text, sizeof text, "# seed: 5\n%s\n%s\n", head, row);
		fa_err_clear(&err);
		if (fa_import_parse("r.csv", text, strlen(text), FA_IMPORT_AUTO, &b, &err) != FA_OK) {
			FA_CHECKF(0, "csv %s / %s: %s:%d:%d: %s", head, row, err.file, err.line,
				  err.col, err.msg);
		} else {
			FA_CHECKF(strcmp(b.cases[0].key, s.cases[0].key) == 0,
				  "csv %s / %s: key %s, suite %s", head, row, b.cases[0].key,
				  s.cases[0].key);
			fa_import_free(&b);
		}
		fa_import_free(&a);
		fa_suite_free(&s);
	}
}

/* ---- storing --------------------------------------------------------------------- */

FA_TEST(import, store_new_run)
{
	struct fa_import im;
	struct fa_store *s;
	struct fa_err err;
	struct fa_import_summary sum;
	struct fa_import_opts o = {NULL, NULL, "fabench import x", "9.9.9"};
	char buf[256];
	sqlite3 *db;
	FA_REQUIRE(read_fixture("tests/import/good_tiny.jsonl", &im, &err) == FA_OK);
	fa_err_clear(&err);
	FA_REQUIRE(fa_store_open(":memory:", 1, &s, &err) == FA_OK);
	FA_REQUIRE(fa_import_store(s, &im, &o, &sum, &err) == FA_OK);
	db = fa_store_db(s);
	FA_CHECK(sum.run_id == 1 && !sum.into && sum.cases_added == 5 && sum.results == 6);
	/* one pass with error statistics; three without: nobody checked them */
	FA_CHECK(sum.by_status[FA_STATUS_PASS] == 1 && sum.by_status[FA_STATUS_UNCHECKED] == 3 &&
		 sum.by_status[FA_STATUS_FAIL] == 1 && sum.by_status[FA_STATUS_SKIP] == 1);
	FA_CHECK(strcmp(q_text(db, "SELECT source FROM runs WHERE id = ?", 1, buf, sizeof buf),
			"peer-tool 1.0") == 0);
	FA_CHECK(strcmp(q_text(db, "SELECT status FROM runs", 0, buf, sizeof buf), "complete") == 0);
	FA_CHECK(strcmp(q_text(db, "SELECT backend || '|' || device_name || '|' || label || '|' || "
				   "seed || '|' || version || '|' || started_at || '|' || "
				   "command_line FROM runs",
			       0, buf, sizeof buf),
			"cuda|Test GPU|peers|7|9.9.9|2026-11-25T21:40:00Z|fabench import x") == 0);
	FA_CHECK(is_null(db, "SELECT git_commit FROM runs", 0) == 1);
	FA_CHECK(q_int(db, "SELECT count(*) FROM cases", 0) == 5);
	FA_CHECK(q_int(db, "SELECT max(idx) FROM cases", 0) == 4);
	FA_CHECK(q_int(db, "SELECT count(*) FROM results", 0) == 6);
	FA_CHECK(q_int(db, "SELECT count(*) FROM samples", 0) == 4 + 1);
	/* the first row: recomputed times, given statistics, unknown ones NULL */
	FA_CHECK(q_int(db, "SELECT n_samples FROM results WHERE id = 1", 0) == 4);
	FA_CHECK(q_int(db, "SELECT median_ms = 0.625 AND min_ms = 0.25 AND max_ms = 1.0 "
			   "FROM results WHERE id = 1", 0) == 1);
	FA_CHECK(q_int(db, "SELECT abs(tflops - flops / 0.625e-3 / 1e12) < 1e-18 AND "
			   "abs(gbps - bytes / 0.625e-3 / 1e9) < 1e-12 FROM results WHERE id = 1",
		       0) == 1);
	FA_CHECK(is_null(db, "SELECT stop_reason FROM results WHERE id = 1", 0) == 1);
	FA_CHECK(is_null(db, "SELECT inf_count FROM results WHERE id = 1", 0) == 1);
	FA_CHECK(is_null(db, "SELECT max_rel FROM results WHERE id = 1", 0) == 1);
	FA_CHECK(q_int(db, "SELECT nan_count FROM results WHERE id = 1", 0) == 0);
	FA_CHECK(q_int(db, "SELECT checked FROM results WHERE id = 1", 0) == 1);
	FA_CHECK(strcmp(q_text(db, "SELECT timing FROM results WHERE id = 1", 0, buf, sizeof buf),
			"cold") == 0);
	/* the median-only row: no samples, no mean */
	FA_CHECK(q_int(db, "SELECT n_samples FROM results WHERE kernel = 'peer_b'", 0) == 20);
	FA_CHECK(is_null(db, "SELECT mean_ms FROM results WHERE kernel = 'peer_b'", 0) == 1);
	FA_CHECK(q_int(db, "SELECT count(*) FROM samples WHERE result_id = 2", 0) == 0);
	/* the skip: untimed, unchecked, FLOPs still there */
	FA_CHECK(q_int(db, "SELECT count(*) FROM results WHERE status = 'skip' AND median_ms IS NULL "
			   "AND tflops IS NULL AND checked = 0 AND flops > 0",
		       0) == 1);
	fa_store_close(s);
	fa_import_free(&im);
}

/* A fabench-like run of tiny.yaml (cases and a cpu_flash result each). */
static int64_t fake_fabench_run(struct fa_store *s, const struct fa_suite *suite)
{
	struct fa_run_info ri;
	struct fa_err err;
	int64_t run_id = 0;
	memset(&ri, 0, sizeof ri);
	ri.git_dirty = -1;
	ri.backend = "cpu";
	ri.device_name = "cpu";
	ri.suite_name = suite->name;
	ri.suite_hash = suite->hash;
	ri.seed = suite->seed;
	ri.source = "fabench";
	ri.label = "ours";
	fa_err_clear(&err);
	if (fa_store_run_begin(s, &ri, &run_id, &err) != FA_OK)
		return 0;
	for (int32_t i = 0; i < suite->n_cases; i++) {
		struct fa_result r;
		double x = 1.0 + i;
		memset(&r, 0, sizeof r);
		r.kernel = "cpu_flash";
		r.backend = "cpu";
		r.params = "";
		r.status = FA_STATUS_PASS;
		r.t.n = 1;
		r.t.median_ms = r.t.mean_ms = r.t.min_ms = r.t.max_ms = x;
		r.samples = &x;
		r.timing = "cpu";
		r.tel.sm_clock_mhz = r.tel.sm_clock_max_mhz = r.tel.temp_c = r.tel.power_w = NAN;
		r.tel.throttle_reasons = -1;
		if (fa_store_case_commit(s, run_id, &suite->cases[i], &r, 1, NULL, &err) != FA_OK)
			return 0;
	}
	return fa_store_run_end(s, run_id, "complete", &err) == FA_OK ? run_id : 0;
}

FA_TEST(import, run_into_matches_cases_by_key)
{
	struct fa_import im;
	struct fa_suite suite;
	struct fa_store *s;
	struct fa_err err;
	struct fa_import_summary sum;
	struct fa_import_opts o = {NULL, "ours", NULL, "9.9.9"};
	char path[PATH_MAX], buf[256];
	int64_t run_id;
	sqlite3 *db;
	snprintf(path, sizeof path, "%s/tests/suites/tiny.yaml", fa_test_root());
	memset(&suite, 0, sizeof suite);
	fa_err_clear(&err);
	FA_REQUIRE(fa_suite_load(path, 0, &suite, &err) == FA_OK);
	FA_REQUIRE(read_fixture("tests/import/good_tiny.jsonl", &im, &err) == FA_OK);
	FA_REQUIRE(fa_store_open(":memory:", 1, &s, &err) == FA_OK);
	db = fa_store_db(s);
	FA_REQUIRE((run_id = fake_fabench_run(s, &suite)) == 1);
	fa_err_clear(&err);
	FA_REQUIRE(fa_import_store(s, &im, &o, &sum, &err) == FA_OK);
	FA_CHECK(sum.into && sum.run_id == 1 && sum.cases_matched == 4 && sum.cases_added == 1);
	FA_CHECK(q_int(db, "SELECT count(*) FROM runs", 0) == 1);
	FA_CHECK(q_int(db, "SELECT count(*) FROM cases WHERE run_id = 1", 0) == 5);
	FA_CHECK(q_int(db, "SELECT idx FROM cases WHERE q_len = 64", 0) == 4);
	FA_CHECK(q_int(db, "SELECT count(*) FROM results WHERE run_id = 1", 0) == 4 + 6);
	/* every imported result sits on the case fabench stored for its key */
	FA_CHECK(q_int(db, "SELECT count(DISTINCT case_id) FROM results WHERE kernel = 'peer_a' AND "
			   "case_id IN (SELECT case_id FROM results WHERE kernel = 'cpu_flash')",
		       0) == 4);
	FA_CHECK(strcmp(q_text(db, "SELECT source FROM runs", 0, buf, sizeof buf),
			"fabench + peer-tool 1.0") == 0);
	/* the device differs: said in the note */
	FA_CHECK(strstr(sum.note, "measured on 'Test GPU', run 1 on 'cpu'") != NULL);
	/* again: the run holds those results already, so nothing is written */
	fa_err_clear(&err);
	FA_CHECK(fa_import_store(s, &im, &o, &sum, &err) == FA_ERR_INPUT);
	FA_CHECK(strcmp(err.msg, "run 1 already has a result of kernel 'peer_a' for this case") == 0);
	FA_CHECK(err.line == 2 && err.col == 1 && strstr(err.file, "good_tiny.jsonl"));
	FA_CHECK(sum.run_id == 0);
	FA_CHECK(q_int(db, "SELECT count(*) FROM cases", 0) == 5);
	FA_CHECK(q_int(db, "SELECT count(*) FROM results", 0) == 10);
	FA_CHECK(strcmp(q_text(db, "SELECT source FROM runs", 0, buf, sizeof buf),
			"fabench + peer-tool 1.0") == 0);
	/* a run that is not there */
	o.run_into = "99";
	fa_err_clear(&err);
	FA_CHECK(fa_import_store(s, &im, &o, &sum, &err) == FA_ERR_NOT_FOUND);
	fa_store_close(s);
	fa_import_free(&im);
	fa_suite_free(&suite);
}

/* ---- --run-into: the rows against the run's own cases and results ------------ */

/* Every row of every table of db, as text, into a malloc'd string: two
 * databases hold the same when their dumps are equal. */
static char *dump_db(sqlite3 *db)
{
	sqlite3_stmt *tables, *st;
	char *out = NULL, sql[256];
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);
	if (!f)
		return NULL;
	if (sqlite3_prepare_v2(db, "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name",
			       -1, &tables, NULL) == SQLITE_OK) {
		while (sqlite3_step(tables) == SQLITE_ROW) {
			const char *t = (const char *)sqlite3_column_text(tables, 0);
			fprintf(f, "[%s]\n", t);
			snprintf(sql, sizeof sql, "SELECT * FROM \"%s\" ORDER BY rowid", t);
			if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
				continue;
			while (sqlite3_step(st) == SQLITE_ROW) {
				for (int c = 0; c < sqlite3_column_count(st); c++) {
					const unsigned char *v = sqlite3_column_text(st, c);
					fprintf(f, "%s|", v ? (const char *)v : "NULL");
				}
				fputc('\n', f);
			}
			sqlite3_finalize(st);
		}
		sqlite3_finalize(tables);
	}
	fclose(f);
	return out;
}

/* The column (from 1) just past needle on line `line` of text; 0 when not there. */
static int col_after(const char *text, int line, const char *needle)
{
	const char *p = text, *hit, *end;
	for (int l = 1; l < line && p; l++)
		p = (p = strchr(p, '\n')) ? p + 1 : NULL;
	if (!p || !(hit = strstr(p, needle)) || ((end = strchr(p, '\n')) && hit > end))
		return 0;
	return (int)(hit - p + strlen(needle)) + 1;
}

/* The run that --run-into adds to: one case of llama3-8b's shape (kv_len
 * given) with depth 16, the model's 32 layers and a tag 'mine' of 7. */
static const char into_base[] =
	"{\"q_len\": 4, \"kv_len\": 20, \"model\": \"llama3-8b\", \"depth\": 16, \"kernel\": \"a\", "
	"\"median_ms\": 1, \"tags\": [{\"name\": \"mine\", \"model\": false, \"layers\": 7}]}\n";

/* Files that contradict into_base's run where each alone is a good file:
 * the rule of a file's repeated rows, applied to the case the run holds.
 * at: what precedes the error's column on that line. */
static const struct {
	const char *text;
	int line;
	const char *at, *msg;
} into_bad[] = {
	{"{\"q_len\": 4, \"kv_len\": 20, \"model\": \"llama3-8b\", \"layers\": 10, \"kernel\": \"b\", "
	 "\"median_ms\": 1}\n",
	 1, "\"layers\": ",
	 "label 'llama3-8b' has layers 10 here but 32 in run 1, on the same case: a label has "
	 "one layer count per case"},
	{"{\"q_len\": 4, \"kv_len\": 20, \"heads\": 32, \"kv_heads\": 8, \"head_dim\": 128, "
	 "\"kernel\": \"b\", \"median_ms\": 1, \"tags\": [{\"name\": \"mine\", \"model\": false, "
	 "\"layers\": 9}]}\n",
	 1, "\"layers\": ",
	 "label 'mine' has layers 9 here but 7 in run 1, on the same case: a label has one "
	 "layer count per case"},
	{"{\"q_len\": 4, \"kv_len\": 20, \"model\": \"llama3-8b\", \"depth\": 8, \"kernel\": \"b\", "
	 "\"median_ms\": 1}\n",
	 1, "\"depth\": ",
	 "depth 8 makes the same case as depth 16 (in run 1): kv_len is given, so depth does not "
	 "change the case; for a cache of depth keys before the queries, a row's kv_len is "
	 "depth + q_len"},
	/* a good first row (a new case, a result) is not kept either */
	{"{\"q_len\": 8, \"kv_len\": 24, \"model\": \"llama3-8b\", \"kernel\": \"b\", \"median_ms\": 1}\n"
	 "{\"q_len\": 4, \"kv_len\": 20, \"model\": \"llama3-8b\", \"layers\": 31, \"kernel\": \"b\", "
	 "\"median_ms\": 1}\n",
	 2, "\"layers\": ",
	 "label 'llama3-8b' has layers 31 here but 32 in run 1, on the same case: a label has "
	 "one layer count per case"},
	/* the result the run holds: at its row */
	{"{\"q_len\": 4, \"kv_len\": 20, \"model\": \"llama3-8b\", \"kernel\": \"b\", \"median_ms\": 1}\n"
	 "{\"q_len\": 4, \"kv_len\": 20, \"model\": \"llama3-8b\", \"kernel\": \"a\", \"median_ms\": 2}\n",
	 2, "", "run 1 already has a result of kernel 'a' for this case"},
};

/* What agrees with into_base's run: its labels and depth repeated or left
 * out, a tag without layers, a new case, new kernels. */
static const char into_good[] =
	"{\"q_len\": 4, \"kv_len\": 20, \"model\": \"llama3-8b\", \"layers\": 32, \"depth\": 16, "
	"\"tag\": \"mine\", \"kernel\": \"b\", \"median_ms\": 1}\n"
	"{\"q_len\": 4, \"kv_len\": 20, \"heads\": 32, \"kv_heads\": 8, \"head_dim\": 128, "
	"\"kernel\": \"c\", \"median_ms\": 1, \"tags\": [{\"name\": \"mine\", \"model\": false, "
	"\"layers\": 7}]}\n"
	"{\"q_len\": 8, \"kv_len\": 24, \"model\": \"llama3-8b\", \"kernel\": \"b\", \"median_ms\": 1}\n";

/* A row of a file imported with --run-into is checked against the cases
 * and results the run already holds, by the rules it meets against the
 * file's other rows: another depth or other layers of a label for a case
 * of the run is an input error at the value, naming the run, as a second
 * result of a kernel is at its row; nothing of the file is written. */
FA_TEST(import, run_into_checks_the_runs_cases)
{
	struct fa_import im;
	struct fa_store *s;
	struct fa_err err;
	struct fa_import_summary sum;
	struct fa_import_opts o = {NULL, NULL, "fabench import base", "9.9.9"};
	sqlite3 *db;
	char *before, *after;
	fa_err_clear(&err);
	FA_REQUIRE(fa_import_parse("base.jsonl", into_base, sizeof into_base - 1, FA_IMPORT_AUTO,
				   &im, &err) == FA_OK);
	FA_REQUIRE(fa_store_open(":memory:", 1, &s, &err) == FA_OK);
	FA_REQUIRE(fa_import_store(s, &im, &o, &sum, &err) == FA_OK && sum.run_id == 1);
	fa_import_free(&im);
	db = fa_store_db(s);
	FA_REQUIRE(q_int(db, "SELECT count(*) FROM case_tags", 0) == 2);
	FA_REQUIRE(q_int(db, "SELECT depth FROM case_depth", 0) == 16);
	before = dump_db(db);
	FA_REQUIRE(before != NULL);
	o.run_into = "1";
	for (size_t i = 0; i < sizeof into_bad / sizeof into_bad[0]; i++) {
		const char *text = into_bad[i].text;
		int col = into_bad[i].at[0] ? col_after(text, into_bad[i].line, into_bad[i].at) : 1;
		fa_err_clear(&err);
		/* each file alone is good */
		if (fa_import_parse("into.jsonl", text, strlen(text), FA_IMPORT_AUTO, &im, &err) !=
		    FA_OK) {
			FA_CHECKF(0, "file %zu: %s:%d:%d: %s", i, err.file, err.line, err.col, err.msg);
			continue;
		}
		FA_CHECKF(fa_import_store(s, &im, &o, &sum, &err) == FA_ERR_INPUT, "file %zu: %s", i,
			  err.msg);
		FA_CHECKF(strcmp(err.file, "into.jsonl") == 0 && err.line == into_bad[i].line &&
				  err.col == col,
			  "file %zu: at %s:%d:%d, expected into.jsonl:%d:%d", i, err.file, err.line,
			  err.col, into_bad[i].line, col);
		FA_CHECKF(strcmp(err.msg, into_bad[i].msg) == 0, "file %zu: '%s'", i, err.msg);
		FA_CHECK(sum.run_id == 0);
		after = dump_db(db);
		FA_CHECKF(after && strcmp(after, before) == 0, "file %zu changed the database", i);
		free(after);
		fa_import_free(&im);
	}
	/* what agrees is imported: the case matched, the new one added */
	fa_err_clear(&err);
	FA_REQUIRE(fa_import_parse("good.jsonl", into_good, sizeof into_good - 1, FA_IMPORT_AUTO,
				   &im, &err) == FA_OK);
	FA_CHECKF(fa_import_store(s, &im, &o, &sum, &err) == FA_OK, "%s:%d:%d: %s", err.file,
		  err.line, err.col, err.msg);
	FA_CHECK(sum.into && sum.run_id == 1 && sum.cases_matched == 1 && sum.cases_added == 1);
	FA_CHECK(q_int(db, "SELECT count(*) FROM results", 0) == 4);
	FA_CHECK(q_int(db, "SELECT count(*) FROM cases", 0) == 2);
	/* the run's case keeps its labels and depth */
	FA_CHECK(q_int(db, "SELECT count(*) FROM case_tags WHERE case_id = 1", 0) == 2);
	FA_CHECK(q_int(db, "SELECT depth FROM case_depth WHERE case_id = 1", 0) == 16);
	fa_import_free(&im);
	free(before);
	fa_store_close(s);
}

/* The command: a conflicting file with --run-into exits 2 with the value's
 * FILE:LINE:COL and the line under it, and leaves the database byte for
 * byte as it was; a file that agrees is then imported into the same run. */
FA_TEST(import, e2e_run_into_conflict_writes_nothing)
{
	char db[PATH_MAX], base[PATH_MAX], bad[PATH_MAX], good[PATH_MAX], want[PATH_MAX + 200];
	struct fa_proc_result r;
	size_t before_len, after_len;
	char *before, *after;
	fresh(db, sizeof db, "into.db");
	snprintf(base, sizeof base, "%s/into_base.jsonl", fa_test_tmpdir());
	snprintf(bad, sizeof bad, "%s/into_bad.jsonl", fa_test_tmpdir());
	snprintf(good, sizeof good, "%s/into_good.jsonl", fa_test_tmpdir());
	FA_REQUIRE(write_file(base, into_base) == 0 && write_file(bad, into_bad[3].text) == 0 &&
		   write_file(good, into_good) == 0);
	fa_proc_run((char *[]){"import", base, "--db", db, "--label", "ours", NULL}, NULL, 60, &r);
	FA_REQUIRE(r.status == 0);
	fa_proc_free(&r);
	before = fa_test_read_file(db, &before_len);
	FA_REQUIRE(before && before_len > 0);
	fa_proc_run((char *[]){"import", bad, "--db", db, "--run-into", "ours", NULL}, NULL, 60, &r);
	FA_CHECKF(r.status == 2, "status %d: %s", r.status, r.err);
	snprintf(want, sizeof want, "%s:2:%d: %s\n 2 | ", bad,
		 col_after(into_bad[3].text, 2, into_bad[3].at), into_bad[3].msg);
	FA_CHECKF(strncmp(r.err, want, strlen(want)) == 0, "stderr:\n%s\nexpected it to begin:\n%s",
		  r.err, want);
	fa_proc_free(&r);
	after = fa_test_read_file(db, &after_len);
	FA_CHECK(after && after_len == before_len && memcmp(after, before, before_len) == 0);
	free(after);
	free(before);
	fa_proc_run((char *[]){"import", good, "--db", db, "--run-into", "ours", NULL}, NULL, 60,
		    &r);
	FA_CHECKF(r.status == 0, "status %d: %s", r.status, r.err);
	FA_CHECKF(strstr(r.out, "imported 3 results of 2 cases") &&
			  strstr(r.out, "into run 1 (1 case matched, 1 added)"),
		  "stdout: %s", r.out);
	fa_proc_free(&r);
}

/* ---- end to end: fabench run, import, report ------------------------------------- */

FA_TEST(import, e2e_beside_fabench_run)
{
	char db[PATH_MAX], rep[PATH_MAX], buf[512];
	struct fa_proc_result r;
	sqlite3 *h = NULL;
	char *text, *line;
	fresh(db, sizeof db, "e2e.db");
	fresh(rep, sizeof rep, "report.md");
	fa_proc_run((char *[]){"run", "tests/suites/tiny.yaml", "--backend", "cpu", "--kernels",
			       "cpu_flash", "--db", db, "--label", "ours", "--quiet", NULL},
		    NULL, 120, &r);
	FA_REQUIRE(r.status == 0);
	fa_proc_free(&r);
	fa_proc_run((char *[]){"import", "tests/import/good_tiny.jsonl", "--db", db, "--run-into",
			       "ours", NULL},
		    NULL, 60, &r);
	FA_CHECKF(r.status == 0, "status %d: %s", r.status, r.err);
	FA_CHECK(strstr(r.out, "imported 6 results of 5 cases from tests/import/good_tiny.jsonl "
			       "into run 1 (4 cases matched, 1 added): 1 pass, 1 fail, 1 skip, "
			       "3 unchecked") != NULL);
	FA_CHECK(strstr(r.err, "note: ") != NULL); /* measured on another device */
	fa_proc_free(&r);
	/* the CSV as a run of its own: the same keys as fabench's run */
	fa_proc_run((char *[]){"import", "tests/import/good_tiny.csv", "--db", db, "--label", "csv",
			       NULL},
		    NULL, 60, &r);
	FA_CHECKF(r.status == 0, "status %d: %s", r.status, r.err);
	fa_proc_free(&r);
	FA_REQUIRE(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK);
	FA_CHECK(q_int(h, "SELECT count(*) FROM cases a JOIN cases b ON a.key = b.key AND "
			  "a.seed = b.seed WHERE a.run_id = 1 AND b.run_id = 2",
		       0) == 5);
	FA_CHECK(q_int(h, "SELECT count(*) FROM cases WHERE run_id = 1", 0) == 5);
	FA_CHECK(strcmp(q_text(h, "SELECT source || '/' || label FROM runs WHERE id = 2", 0, buf,
			       sizeof buf),
			"peer-tool 1.0/csv") == 0);
	sqlite3_close(h);
	/* one report, one table with fabench's kernel and the peer's */
	fa_proc_run((char *[]){"report", "--db", db, "--run", "ours", "--output", rep, NULL}, NULL,
		    60, &r);
	FA_CHECKF(r.status == 0, "report: %s", r.err);
	fa_proc_free(&r);
	text = fa_test_read_file(rep, NULL);
	FA_REQUIRE(text != NULL);
	line = strstr(text, "| #");
	FA_CHECKF(line != NULL, "no table in\n%s", text);
	if (line) {
		char *end = strchr(line, '\n');
		if (end)
			*end = '\0';
		FA_CHECKF(strstr(line, "cpu_flash") && strstr(line, "peer_a") && strstr(line, "peer_b"),
			  "table header without both kernels: %s", line);
	}
	free(text);
}

FA_TEST(import, e2e_bad_file_writes_nothing)
{
	char db[PATH_MAX], none[PATH_MAX], expect_path[PATH_MAX];
	struct fa_proc_result r;
	char *expected;
	sqlite3 *h = NULL;
	fresh(db, sizeof db, "keep.db");
	fresh(none, sizeof none, "none.db");
	fa_proc_run((char *[]){"import", "tests/import/good_tiny.jsonl", "--db", db, NULL}, NULL, 60,
		    &r);
	FA_REQUIRE(r.status == 0);
	fa_proc_free(&r);
	/* the error of the second row: the first row was fine, nothing is kept */
	fa_proc_run((char *[]){"import", "tests/import/bad_duplicate_result.jsonl", "--db", db, NULL},
		    NULL, 60, &r);
	snprintf(expect_path, sizeof expect_path, "%s/tests/import/bad_duplicate_result.err",
		 fa_test_root());
	expected = fa_test_read_file(expect_path, NULL);
	FA_CHECK(r.status == 2);
	FA_CHECKF(expected && strcmp(r.err, expected) == 0, "stderr:\n%s\nexpected:\n%s", r.err,
		  expected ? expected : "(none)");
	free(expected);
	fa_proc_free(&r);
	FA_REQUIRE(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK);
	FA_CHECK(q_int(h, "SELECT count(*) FROM runs", 0) == 1);
	FA_CHECK(q_int(h, "SELECT count(*) FROM results", 0) == 6);
	sqlite3_close(h);
	/* a bad file never creates the database */
	fa_proc_run((char *[]){"import", "tests/import/bad_csv_median.csv", "--db", none, NULL}, NULL,
		    60, &r);
	FA_CHECK(r.status == 2 && strstr(r.err, "bad_csv_median.csv:2:16: "));
	FA_CHECK(!exists(none));
	fa_proc_free(&r);
	/* usage */
	fa_proc_run((char *[]){"import", "--db", none, NULL}, NULL, 60, &r);
	FA_CHECK(r.status == 2 && strstr(r.err, "missing FILE"));
	fa_proc_free(&r);
	fa_proc_run((char *[]){"import", "tests/import/good_tiny.csv", "--run-into", "1", "--label",
			       "x", "--db", db, NULL},
		    NULL, 60, &r);
	FA_CHECK(r.status == 2 && strstr(r.err, "--label names a new run"));
	fa_proc_free(&r);
	/* --run-into a database that is not there: not created */
	fa_proc_run((char *[]){"import", "tests/import/good_tiny.csv", "--run-into", "1", "--db", none,
			       NULL},
		    NULL, 60, &r);
	FA_CHECK(r.status == 2 && strstr(r.err, "no database at"));
	FA_CHECK(!exists(none));
	fa_proc_free(&r);
}

/* ---- bench/peers/torch_sdpa.py ------------------------------------------------------ */

FA_TEST(import, python_unit_tests)
{
	char py[PATH_MAX], out[PATH_MAX];
	char *text;
	int status;
	if (!find_python(py, sizeof py)) {
		fa_test_skip("python3 not found on PATH: bench/peers/test_torch_sdpa.py not run");
		return;
	}
	snprintf(out, sizeof out, "%s/unittest.out", fa_test_tmpdir());
	status = run_program((char *[]){py, "bench/peers/test_torch_sdpa.py", NULL}, out, 120);
	text = fa_test_read_file(out, NULL);
	FA_CHECKF(status == 0, "python3 bench/peers/test_torch_sdpa.py: status %d\n%s", status,
		  text ? text : "");
	FA_CHECK(text && strstr(text, "OK"));
	free(text);
}

/* The script finds fabench's dump by key and reads its .npy files (without
 * numpy) with the shapes it expects: GQA, both layouts, varlen, bf16 (dumped
 * as float32) and fp16, per-sequence prefixes. */
FA_TEST(import, python_reads_fabench_dump)
{
	static const char where[] = "kv_heads < heads && head_dim == 72 || varlen && dtype == fp16 "
				    "|| dtype == fp16 && q_len == 1";
	static const char code[] =
		"import struct, sys\n"
		"sys.path.insert(0, 'bench/peers')\n"
		"import torch_sdpa as ts\n"
		"suite, cases = ts.load_cases(sys.argv[1])\n"
		"dumps = ts.find_dumps(sys.argv[2])\n"
		"assert sorted(dumps) == sorted(c['key'] for c in cases), sorted(dumps)\n"
		"for c in cases:\n"
		"    s, p = ts.Shape(c), dumps[c['key']]\n"
		"    for t in 'qkv':\n"
		"        d, shape, raw = ts.read_npy(p + '_%s.npy' % t)\n"
		"        want = '<f2' if c['dtype'] == 'fp16' else '<f4'\n"
		"        assert (d, shape) == (want, s.tensor_shape(t)), (c['key'], t, d, shape)\n"
		"    _, rs, rows = ts.read_npy(p + '_ref_rows.npy')\n"
		"    _, fs, _ = ts.read_npy(p + '_ref.npy')\n"
		"    ids = struct.unpack('<%dq' % rs[0], rows)\n"
		"    assert fs == [rs[0], c['head_dim_v']], (fs, rs)\n"
		"    assert ids[0] == 0 and ids[-1] == s.total_q * s.heads - 1, ids\n"
		"print('read', len(cases), 'dumps')\n";
	char py[PATH_MAX], cases[PATH_MAX], out[PATH_MAX], dump[PATH_MAX], db[PATH_MAX];
	struct fa_proc_result r;
	char *text;
	int status;
	if (!find_python(py, sizeof py)) {
		fa_test_skip("python3 not found on PATH: torch_sdpa.py's dump reader not checked");
		return;
	}
	snprintf(cases, sizeof cases, "%s/cases.json", fa_test_tmpdir());
	snprintf(out, sizeof out, "%s/reader.out", fa_test_tmpdir());
	snprintf(dump, sizeof dump, "%s/dump", fa_test_tmpdir());
	fresh(db, sizeof db, "dump.db");
	fa_proc_run((char *[]){"list", "suites/smoke.yaml", "--where", (char *)where, "--format",
			       "json", NULL},
		    NULL, 60, &r);
	FA_REQUIRE(r.status == 0 && write_file(cases, r.out) == 0);
	fa_proc_free(&r);
	fa_proc_run((char *[]){"run", "suites/smoke.yaml", "--where", (char *)where, "--backend",
			       "cpu", "--kernels", "cpu_flash", "--db", db, "--dump", dump, "--quiet",
			       NULL},
		    NULL, 120, &r);
	FA_REQUIRE(r.status == 0);
	fa_proc_free(&r);
	status = run_program((char *[]){py, "-c", (char *)code, cases, dump, NULL}, out, 60);
	text = fa_test_read_file(out, NULL);
	FA_CHECKF(status == 0 && text && strstr(text, "read 12 dumps"),
		  "python3 dump reader: status %d\n%s", status, text ? text : "");
	free(text);
}

/* The script's writer, on synthetic results for every case of smoke.yaml
 * (every mask, varlen, per-sequence prefixes, GQA, layouts, an explicit
 * scale), makes a file fabench imports: each row's key is checked by the
 * import against the parameters the script sent. */
FA_TEST(import, python_writer_output_imports)
{
	static const char code[] =
		"import sys\n"
		"sys.path.insert(0, 'bench/peers')\n"
		"import torch_sdpa as ts\n"
		"suite, cases = ts.load_cases(sys.argv[1])\n"
		"rows = []\n"
		"for i, c in enumerate(cases):\n"
		"    rows.append(ts.result_row(c, 'torch_sdpa_flash', 'pass',\n"
		"        samples=[0.5 + i, 0.25 + i, 0.75 + i],\n"
		"        stats={'max_abs': 1e-4, 'rel_l2': float('nan'), 'nan_count': 0,\n"
		"               'inf_count': 0, 'rows_checked': 8, 'elems_checked': 512}))\n"
		"    rows.append(ts.result_row(c, 'torch_flex', 'skip', 'no compiler'))\n"
		"ts.write_jsonl(sys.argv[2], ts.make_header(suite, 'Test GPU', '2.11.0+cu130',\n"
		"    started_at='2026-11-25T21:40:00Z'), rows)\n";
	char py[PATH_MAX], cases[PATH_MAX], out[PATH_MAX], jsonl[PATH_MAX], db[PATH_MAX];
	char buf[256];
	struct fa_proc_result r;
	struct fa_suite s;
	struct fa_err err;
	sqlite3 *h = NULL;
	char *text;
	int status;
	if (!find_python(py, sizeof py)) {
		fa_test_skip("python3 not found on PATH: torch_sdpa.py's writer not checked");
		return;
	}
	snprintf(cases, sizeof cases, "%s/cases.json", fa_test_tmpdir());
	snprintf(out, sizeof out, "%s/writer.out", fa_test_tmpdir());
	snprintf(jsonl, sizeof jsonl, "%s/peers.jsonl", fa_test_tmpdir());
	fresh(db, sizeof db, "peers.db");
	fa_proc_run((char *[]){"list", "suites/smoke.yaml", "--format", "json", NULL}, NULL, 60, &r);
	FA_REQUIRE(r.status == 0 && write_file(cases, r.out) == 0);
	fa_proc_free(&r);
	status = run_program((char *[]){py, "-c", (char *)code, cases, jsonl, NULL}, out, 60);
	text = fa_test_read_file(out, NULL);
	FA_CHECKF(status == 0, "python3 writer: status %d\n%s", status, text ? text : "");
	free(text);
	if (status != 0)
		return;
	fa_proc_run((char *[]){"import", jsonl, "--db", db, NULL}, NULL, 60, &r);
	FA_CHECKF(r.status == 0, "import of the script's file: status %d\n%s", r.status, r.err);
	fa_proc_free(&r);
	memset(&s, 0, sizeof s);
	fa_err_clear(&err);
	snprintf(buf, sizeof buf, "%s/suites/smoke.yaml", fa_test_root());
	FA_REQUIRE(fa_suite_load(buf, 0, &s, &err) == FA_OK);
	FA_REQUIRE(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK);
	FA_CHECK(q_int(h, "SELECT count(*) FROM cases", 0) == s.n_cases);
	FA_CHECK(q_int(h, "SELECT count(*) FROM results", 0) == 2LL * s.n_cases);
	for (int32_t i = 0; i < s.n_cases; i++) {
		sqlite3_stmt *st;
		int found = 0;
		if (sqlite3_prepare_v2(h, "SELECT seed FROM cases WHERE key = ?", -1, &st, NULL) ==
		    SQLITE_OK) {
			sqlite3_bind_text(st, 1, s.cases[i].key, -1, SQLITE_STATIC);
			if (sqlite3_step(st) == SQLITE_ROW)
				found = strtoull((const char *)sqlite3_column_text(st, 0), NULL, 10) ==
					s.cases[i].seed;
			sqlite3_finalize(st);
		}
		FA_CHECKF(found, "case %s not imported with its seed", s.cases[i].key);
	}
	FA_CHECK(q_int(h, "SELECT count(*) FROM results WHERE kernel = 'torch_sdpa_flash' AND "
			  "n_samples = 3 AND timing = 'cold' AND checked = 1 AND rel_l2 IS NULL AND "
			  "nan_count = 0 AND elems_checked = 512",
		       0) == s.n_cases);
	FA_CHECK(q_int(h, "SELECT count(*) FROM results r JOIN cases c ON c.id = r.case_id WHERE "
			  "r.kernel = 'torch_sdpa_flash' AND r.median_ms = c.idx + 0.5",
		       0) == s.n_cases);
	FA_CHECK(strcmp(q_text(h, "SELECT source || '/' || suite_name || '/' || device_name FROM runs",
			       0, buf, sizeof buf),
			"torch 2.11.0+cu130/smoke/Test GPU") == 0);
	sqlite3_close(h);
	fa_suite_free(&s);
}

/* A peers file of backward results as the script writes them (pass bwd and
 * fwd_bwd cases of tests/suites/bwd.yaml, O's statistics and dq_/dk_/dv_
 * ones) imports into the cases fabench makes of the suite, each result with
 * its three gradients in grad_stats; --run-into a fabench run of the suite
 * lands them on the run's own cases. */
FA_TEST(import, python_bwd_rows_import_with_gradients)
{
	static const char code[] =
		"import sys\n"
		"sys.path.insert(0, 'bench/peers')\n"
		"import torch_sdpa as ts\n"
		"suite, cases = ts.load_cases(sys.argv[1])\n"
		"rows = []\n"
		"for i, c in enumerate(cases):\n"
		"    assert ts.case_pass(c) in ('bwd', 'fwd_bwd'), c['key']\n"
		"    g = {n: {'max_abs': (i + 1) * 10 ** -(j + 4), 'rel_l2': 2e-5, 'nan_count': 0,\n"
		"             'inf_count': 0, 'rows_checked': 4, 'elems_checked': 128, 'ref_max': 2.0}\n"
		"         for j, n in enumerate(ts.GRADS)}\n"
		"    st, why = ts.grad_verdict(c['dtype'], None, g)\n"
		"    rows.append(ts.result_row(c, 'torch_sdpa_efficient', st, why,\n"
		"        samples=[0.5 + i, 0.25 + i], stats={'max_abs': 1e-4, 'rel_l2': 1e-5},\n"
		"        grads=g))\n"
		"    rows.append(ts.result_row(c, 'torch_sdpa_flash', 'skip', 'flash takes fp16 and bf16'))\n"
		"ts.write_jsonl(sys.argv[2], ts.make_header(suite, 'Test GPU', '2.11.0+cu130',\n"
		"    started_at='2026-11-25T21:40:00Z'), rows)\n";
	char py[PATH_MAX], cases[PATH_MAX], out[PATH_MAX], jsonl[PATH_MAX], db[PATH_MAX];
	struct fa_proc_result r;
	sqlite3 *h = NULL;
	char *text;
	int status;
	if (!find_python(py, sizeof py)) {
		fa_test_skip("python3 not found on PATH: torch_sdpa.py's backward rows not checked");
		return;
	}
	snprintf(cases, sizeof cases, "%s/bwd-cases.json", fa_test_tmpdir());
	snprintf(out, sizeof out, "%s/bwd-writer.out", fa_test_tmpdir());
	snprintf(jsonl, sizeof jsonl, "%s/bwd-peers.jsonl", fa_test_tmpdir());
	fresh(db, sizeof db, "bwd-peers.db");
	fa_proc_run((char *[]){"list", "tests/suites/bwd.yaml", "--format", "json", NULL}, NULL, 60,
		    &r);
	FA_REQUIRE(r.status == 0 && write_file(cases, r.out) == 0);
	fa_proc_free(&r);
	status = run_program((char *[]){py, "-c", (char *)code, cases, jsonl, NULL}, out, 60);
	text = fa_test_read_file(out, NULL);
	FA_CHECKF(status == 0, "python3 writer: status %d\n%s", status, text ? text : "");
	free(text);
	if (status != 0)
		return;
	/* a fabench run of the suite first, so that the import matches its cases */
	fa_proc_run((char *[]){"run", "tests/suites/bwd.yaml", "--backend", "cpu", "--kernels",
			       "cpu_flash_bwd", "--db", db, "--label", "ours", "--quiet", NULL},
		    NULL, 600, &r);
	FA_REQUIRE(r.status == 0);
	fa_proc_free(&r);
	fa_proc_run((char *[]){"import", jsonl, "--db", db, "--run-into", "ours", NULL}, NULL, 60,
		    &r);
	FA_CHECKF(r.status == 0, "import of the script's file: status %d\n%s", r.status, r.err);
	fa_proc_free(&r);
	FA_REQUIRE(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK);
	/* 8 cases, matched by key: none added */
	FA_CHECK(q_int(h, "SELECT count(*) FROM cases", 0) == 8);
	FA_CHECK(q_int(h, "SELECT count(*) FROM results WHERE kernel = 'torch_sdpa_efficient' AND "
			  "status = 'pass' AND checked = 1 AND n_samples = 2 AND max_abs = 1e-4",
		       0) == 8);
	/* its gradients beside the CPU kernel's: dq 1e-4, dk 1e-5, dv 1e-6 times
	 * (case index + 1); counts as sent; what it did not send is NULL */
	FA_CHECK(q_int(h, "SELECT count(*) FROM grad_stats g JOIN results r ON r.id = g.result_id "
			  "WHERE r.kernel = 'torch_sdpa_efficient'",
		       0) == 24);
	FA_CHECK(q_int(h, "SELECT count(*) FROM grad_stats g JOIN results r ON r.id = g.result_id "
			  "JOIN cases c ON c.id = r.case_id WHERE r.kernel = 'torch_sdpa_efficient' "
			  "AND abs(g.max_abs / (c.idx + 1) - CASE g.tensor WHEN 'dq' THEN 1e-4 "
			  "WHEN 'dk' THEN 1e-5 ELSE 1e-6 END) < 1e-12 AND g.rel_l2 = 2e-5 AND "
			  "g.nan_count = 0 AND g.rows_checked = 4 AND g.elems_checked = 128 AND "
			  "g.unwritten IS NULL AND g.max_rel IS NULL",
		       0) == 24);
	FA_CHECK(q_int(h, "SELECT count(*) FROM grad_stats g JOIN results r ON r.id = g.result_id "
			  "WHERE r.kernel = 'cpu_flash_bwd'",
		       0) == 24);
	/* the skipped flash rows have none, and every bwd case's FLOPs are 2.5x
	 * its forward's (fwd_bwd 3.5x): the same as the CPU kernel's */
	FA_CHECK(q_int(h, "SELECT count(*) FROM grad_stats g JOIN results r ON r.id = g.result_id "
			  "WHERE r.kernel = 'torch_sdpa_flash'",
		       0) == 0);
	FA_CHECK(q_int(h, "SELECT count(*) FROM results a JOIN results b ON a.case_id = b.case_id "
			  "WHERE a.kernel = 'torch_sdpa_efficient' AND b.kernel = 'cpu_flash_bwd' AND "
			  "a.flops = b.flops AND a.flops > 0",
		       0) == 8);
	sqlite3_close(h);
}
