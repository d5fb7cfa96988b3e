/* test_report.c - reports of the fixture database (tests/fixture.c) against
 * golden files in tests/golden/, compared byte for byte, and the behaviour
 * behind them: unknown runs, the baseline option, failures first, CSV that
 * parses back, and tables of runs without a dense kernel.
 *
 * FABENCH_UPDATE_GOLDEN=1 rewrites the golden files from the current output
 * instead of comparing (then read the diff before committing it).
 */
#include <inttypes.h>
#include <math.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <grp.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../harness/report/compare.h"
#include "../harness/report/history.h"
#include "../harness/report/report.h"
#include "../harness/report/table.h"
#include "fixture.h"
#include "golden.h"
#include "proc.h"
#include "test.h"

/* The report as a malloc'd string; *rc gets the return code, err its error. */
static char *report_text(struct fa_store *s, int64_t run_id, int format, const char *baseline,
			 enum fa_rc *rc, struct fa_err *err)
{
	struct fa_report_opts o = {format, baseline, FA_METRIC_ALL, FA_LAYOUT_WIDE};
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f) {
		*rc = FA_ERR_NOMEM;
		return NULL;
	}
	fa_err_clear(err);
	*rc = fa_report_write(s, run_id, &o, f, err);
	fclose(f);
	return buf;
}

static void golden_test(int64_t run_id, int format, const char *name)
{
	struct fa_store *s = fa_fixture_open();
	struct fa_err err;
	enum fa_rc rc;
	char *text;
	FA_REQUIRE(s);
	text = report_text(s, run_id, format, NULL, &rc, &err);
	FA_CHECKF(rc == FA_OK, "report: %s", err.msg);
	if (rc == FA_OK && text)
		fa_golden_check(name, text, strlen(text));
	free(text);
	fa_store_close(s);
}

FA_TEST(report, golden_main_md) { golden_test(FA_FIXTURE_RUN_MAIN, FA_FMT_MD, "report_main.md"); }

/* The command line and suite path a run stored, in code spans: a merged
 * database's may hold escape sequences, and `fabench report` prints to a
 * terminal (the code span kept them: only line feeds became spaces) */
FA_TEST(report, code_spans_hold_no_control_characters)
{
	struct fa_store *s = fa_fixture_open();
	struct fa_err err;
	enum fa_rc rc;
	char *text;
	FA_REQUIRE(s);
	FA_REQUIRE(sqlite3_exec(fa_store_db(s),
				"UPDATE runs SET command_line = 'fabench run x' || char(27) || '[2J' || "
				"char(13) || char(7) || char(127) || 'y', suite_path = 'p' || char(27) || "
				"']0;t' || char(7) || '.yaml'",
				NULL, NULL, NULL) == SQLITE_OK);
	text = report_text(s, FA_FIXTURE_RUN_MAIN, FA_FMT_MD, NULL, &rc, &err);
	FA_CHECKF(rc == FA_OK && text, "report: %s", err.msg);
	for (const char *p = text; p && *p; p++)
		if (((unsigned char)*p < 0x20 && *p != '\n') || *p == 0x7f) {
			FA_CHECKF(0, "control character 0x%02x at %ld: %.80s", (unsigned char)*p,
				  (long)(p - text), p > text + 40 ? p - 40 : text);
			break;
		}
	FA_CHECKF(text && strstr(text, "`fabench run x [2J   y`") && strstr(text, "`p ]0;t .yaml`"),
		  "%.600s", text);
	free(text);
	fa_store_close(s);
}
FA_TEST(report, golden_main_csv) { golden_test(FA_FIXTURE_RUN_MAIN, FA_FMT_CSV, "report_main.csv"); }
FA_TEST(report, golden_main_json)
{
	golden_test(FA_FIXTURE_RUN_MAIN, FA_FMT_JSON, "report_main.json");
}
FA_TEST(report, golden_base_md) { golden_test(FA_FIXTURE_RUN_BASE, FA_FMT_MD, "report_base.md"); }
FA_TEST(report, golden_partial_md)
{
	golden_test(FA_FIXTURE_RUN_PARTIAL, FA_FMT_MD, "report_partial.md");
}

FA_TEST(report, unknown_run)
{
	struct fa_store *s = fa_fixture_open();
	struct fa_err err;
	enum fa_rc rc;
	char want[1400];
	FA_REQUIRE(s);
	for (int format = FA_FMT_MD; format <= FA_FMT_JSON; format++) {
		char *text = report_text(s, 99, format, NULL, &rc, &err);
		FA_CHECK(rc == FA_ERR_NOT_FOUND);
		snprintf(want, sizeof want, "no run 99 in '%s'", fa_store_path(s));
		FA_CHECKF(strcmp(err.msg, want) == 0, "message '%s'", err.msg);
		FA_CHECK(text && text[0] == '\0'); /* nothing written */
		free(text);
	}
	fa_store_close(s);
}

FA_TEST(report, html_and_unknown_formats)
{
	struct fa_store *s = fa_fixture_open();
	struct fa_err err;
	enum fa_rc rc;
	char *text;
	FA_REQUIRE(s);
	/* html is tested in test_html.c */
	text = report_text(s, FA_FIXTURE_RUN_MAIN, FA_FMT_HTML, NULL, &rc, &err);
	FA_CHECK(rc == FA_OK && text && strncmp(text, "<!DOCTYPE html>\n", 16) == 0);
	free(text);
	text = report_text(s, FA_FIXTURE_RUN_MAIN, 17, NULL, &rc, &err);
	FA_CHECK(rc == FA_ERR_USAGE);
	free(text);
	FA_CHECK(fa_report_format_parse("md") == FA_FMT_MD);
	FA_CHECK(fa_report_format_parse("csv") == FA_FMT_CSV);
	FA_CHECK(fa_report_format_parse("json") == FA_FMT_JSON);
	FA_CHECK(fa_report_format_parse("html") == FA_FMT_HTML);
	FA_CHECK(fa_report_format_parse("pdf") == -1);
	FA_CHECK(fa_report_format_parse(NULL) == -1);
	fa_store_close(s);
}

/* ---- CSV parsing (RFC 4180), to check the output reads back ---------------- */

#define CSV_MAX_FIELDS 64

struct csv_record {
	int n;
	char *field[CSV_MAX_FIELDS];
};

/* Parses one record at *p (advancing it); fields are malloc'd. Returns 0 at
 * the end of the text, 1 for a record, -1 for malformed input. */
static int csv_next(const char **p, struct csv_record *r)
{
	const char *s = *p;
	r->n = 0;
	if (!*s)
		return 0;
	for (;;) {
		char buf[4096];
		size_t len = 0;
		if (*s == '"') {
			s++;
			for (;;) {
				if (!*s)
					return -1;
				if (*s == '"' && s[1] == '"') {
					buf[len++] = '"';
					s += 2;
				} else if (*s == '"') {
					s++;
					break;
				} else {
					buf[len++] = *s++;
				}
				if (len + 1 >= sizeof buf)
					return -1;
			}
		} else {
			while (*s && *s != ',' && *s != '\n') {
				if (*s == '"' || len + 1 >= sizeof buf)
					return -1;
				buf[len++] = *s++;
			}
		}
		buf[len] = '\0';
		if (r->n == CSV_MAX_FIELDS)
			return -1;
		r->field[r->n++] = strdup(buf);
		if (*s == ',') {
			s++;
			continue;
		}
		if (*s == '\n')
			s++;
		else if (*s)
			return -1;
		*p = s;
		return 1;
	}
}

static void csv_free(struct csv_record *r)
{
	for (int i = 0; i < r->n; i++)
		free(r->field[i]);
	r->n = 0;
}

static int csv_col(const struct csv_record *head, const char *name)
{
	for (int i = 0; i < head->n; i++)
		if (strcmp(head->field[i], name) == 0)
			return i;
	return -1;
}

/* The median of (run, case idx, kernel) read from the database; NaN if none. */
/* The median of a result whose time counts against another's (a stored
 * pass; a failed result has no speedup), NAN for none. */
static double db_median(struct fa_store *s, int64_t run_id, int idx, const char *kernel)
{
	sqlite3_stmt *st;
	double v = NAN;
	if (sqlite3_prepare_v2(fa_store_db(s),
			       "SELECT r.median_ms FROM results r JOIN cases c ON c.id = r.case_id"
			       " WHERE r.run_id = ? AND c.idx = ? AND r.kernel = ? AND r.status = 'pass'",
			       -1, &st, NULL) != SQLITE_OK)
		return v;
	sqlite3_bind_int64(st, 1, run_id);
	sqlite3_bind_int(st, 2, idx);
	sqlite3_bind_text(st, 3, kernel, -1, SQLITE_STATIC);
	if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
		v = sqlite3_column_double(st, 0);
	sqlite3_finalize(st);
	return v;
}

/* Checks every CSV row's speedup against the medians in the database, for
 * the given baseline. Returns the number of rows with a speedup. */
static int check_csv_speedups(struct fa_store *s, const char *csv, const char *baseline)
{
	const char *p = csv;
	struct csv_record head, rec;
	int n_rows = 0, n_speedups = 0, rc;
	int c_idx, c_kernel, c_speedup, c_reason;
	if (csv_next(&p, &head) != 1) {
		fa_test_fail(__FILE__, __LINE__, "no CSV header");
		return 0;
	}
	c_idx = csv_col(&head, "case_idx");
	c_kernel = csv_col(&head, "kernel");
	c_speedup = csv_col(&head, "speedup");
	c_reason = csv_col(&head, "reason");
	FA_CHECK(c_idx == 1 && c_kernel > 0 && c_speedup > 0 && c_reason > 0);
	while ((rc = csv_next(&p, &rec)) == 1) {
		const char *kernel = rec.field[c_kernel];
		double base, mine, want;
		n_rows++;
		FA_CHECKF(rec.n == head.n, "row %d has %d fields, the header %d", n_rows, rec.n, head.n);
		if (rec.n != head.n) {
			csv_free(&rec);
			continue;
		}
		base = db_median(s, FA_FIXTURE_RUN_MAIN, atoi(rec.field[c_idx]), baseline);
		mine = db_median(s, FA_FIXTURE_RUN_MAIN, atoi(rec.field[c_idx]), kernel);
		want = strcmp(kernel, baseline) != 0 && !isnan(base) && !isnan(mine) ? base / mine : NAN;
		if (isnan(want)) {
			FA_CHECKF(rec.field[c_speedup][0] == '\0', "case %s %s: speedup '%s', want none",
				  rec.field[c_idx], kernel, rec.field[c_speedup]);
		} else {
			FA_CHECKF(strtod(rec.field[c_speedup], NULL) == want,
				  "case %s %s: speedup '%s', want %.17g", rec.field[c_idx], kernel,
				  rec.field[c_speedup], want);
			n_speedups++;
		}
		/* the reason with quotes and a comma reads back whole */
		if (strstr(rec.field[c_reason], "workspace"))
			FA_CHECK(strcmp(rec.field[c_reason],
					"cpu: workspace allocation of 96 MiB failed: \"Cannot allocate "
					"memory\", errno 12") == 0);
		csv_free(&rec);
	}
	FA_CHECK(rc == 0);
	FA_CHECKF(n_rows == 24, "%d CSV rows, want 24 (one per result)", n_rows);
	csv_free(&head);
	return n_speedups;
}

FA_TEST(report, baseline_option_changes_speedups)
{
	struct fa_store *s = fa_fixture_open();
	struct fa_err err;
	enum fa_rc rc;
	char *md, *csv, *p;
	FA_REQUIRE(s);

	/* default: cpu_dense (the dense kernel) is the baseline */
	csv = report_text(s, FA_FIXTURE_RUN_MAIN, FA_FMT_CSV, NULL, &rc, &err);
	FA_REQUIRE(rc == FA_OK && csv);
	/* timed: cpu_dense on every case but 5 (skipped), cpu_flash on every
	 * case but 6 (error), cpu_flash_tiled on 0, 1, 5, 6 and 7, of which 1
	 * failed and 7 timed out. Speedups need both timed and neither failed:
	 * 6 for cpu_flash, 2 for cpu_flash_tiled (0 and 6) */
	FA_CHECK(check_csv_speedups(s, csv, "cpu_dense") == 6 + 2);
	free(csv);
	csv = report_text(s, FA_FIXTURE_RUN_MAIN, FA_FMT_CSV, "cpu_flash", &rc, &err);
	FA_REQUIRE(rc == FA_OK && csv);
	/* against cpu_flash: cpu_dense 6 (not 5, 6), cpu_flash_tiled 2 (0 and
	 * 5; not 1, 7 nor 6, where cpu_flash failed) */
	FA_CHECK(check_csv_speedups(s, csv, "cpu_flash") == 6 + 2);
	free(csv);

	/* markdown: the baseline's columns come first and it has no x column */
	md = report_text(s, FA_FIXTURE_RUN_MAIN, FA_FMT_MD, "cpu_flash", &rc, &err);
	FA_REQUIRE(rc == FA_OK && md);
	p = strstr(md, "\n| #");
	FA_REQUIRE(p);
	FA_CHECK(strstr(p, "cpu_flash ms") && strstr(p, "cpu_dense ms") &&
		 strstr(p, "cpu_flash ms") < strstr(p, "cpu_dense ms"));
	FA_CHECK(strstr(p, "cpu_dense x") && strstr(p, "cpu_flash_tiled x"));
	FA_CHECK(!strstr(p, "cpu_flash x"));
	FA_CHECK(strstr(md, "x: speedup over cpu_flash (its median / this kernel's; none where either "
			   "failed)"));
	free(md);
	md = report_text(s, FA_FIXTURE_RUN_MAIN, FA_FMT_MD, NULL, &rc, &err);
	FA_REQUIRE(rc == FA_OK && md);
	FA_CHECK(strstr(md, "cpu_flash x") && !strstr(md, "cpu_dense x"));
	free(md);

	/* a baseline that did not run */
	md = report_text(s, FA_FIXTURE_RUN_MAIN, FA_FMT_MD, "cuda_flash", &rc, &err);
	FA_CHECK(rc == FA_ERR_NOT_FOUND);
	FA_CHECKF(strcmp(err.msg, "baseline kernel 'cuda_flash' has no results in run 2") == 0,
		  "message '%s'", err.msg);
	free(md);
	fa_store_close(s);
}

FA_TEST(report, failures_come_first)
{
	struct fa_store *s = fa_fixture_open();
	struct fa_err err;
	enum fa_rc rc;
	char *md, *failures, *results, *fail, *error, *timeout;
	FA_REQUIRE(s);
	md = report_text(s, FA_FIXTURE_RUN_MAIN, FA_FMT_MD, NULL, &rc, &err);
	FA_REQUIRE(rc == FA_OK && md);
	failures = strstr(md, "\n## Failures\n");
	results = strstr(md, "\n## Results");
	FA_REQUIRE(failures && results);
	FA_CHECK(failures < results);
	/* one line each, in case order, before the table */
	fail = strstr(md, "\n- FAIL cpu_flash_tiled on case 2 `batch=2,");
	error = strstr(md, "\n- error cpu_flash on case 7 `");
	timeout = strstr(md, "\n- timeout cpu_flash_tiled on case 8 `");
	FA_CHECK(fail && error && timeout);
	FA_CHECK(fail > failures && fail < error && error < timeout && timeout < results);
	FA_CHECK(strstr(fail, ": max_abs 0.0123 > 0.0001 at b=1 t=300 h=5 d=17\n") != NULL);
	/* skips are not failures */
	FA_CHECK(!strstr(failures, "- skip"));
	free(md);
	/* a run where everything passed or was skipped has no such section */
	md = report_text(s, FA_FIXTURE_RUN_BASE, FA_FMT_MD, NULL, &rc, &err);
	FA_REQUIRE(rc == FA_OK && md);
	FA_CHECK(!strstr(md, "## Failures"));
	free(md);
	fa_store_close(s);
}

/* A run of one decode case and one kernel without "dense" in its name. */
FA_TEST(report, single_case_without_dense_kernel)
{
	char path[1200];
	struct fa_store *s = NULL;
	struct fa_run_info ri;
	struct fa_case c;
	struct fa_result r;
	struct fa_err err;
	double x[3] = {0.5, 0.25, 0.75};
	int64_t run_id;
	enum fa_rc rc;
	char *md, *json;

	snprintf(path, sizeof path, "%s/one.db", fa_test_tmpdir());
	unlink(path);
	fa_err_clear(&err);
	FA_REQUIRE(fa_store_open(path, 1, &s, &err) == FA_OK);
	memset(&ri, 0, sizeof ri);
	ri.started_at = "2026-11-25T21:40:00Z";
	ri.suite_name = "decode";
	ri.seed = 5;
	FA_REQUIRE(fa_store_run_begin(s, &ri, &run_id, &err) == FA_OK);
	memset(&c, 0, sizeof c);
	c.p = (struct fa_problem){.batch = 1, .heads = 32, .kv_heads = 8, .q_len = 1, .kv_len = 8192,
				  .head_dim = 128, .head_dim_v = 128, .dtype = FA_DTYPE_BF16,
				  .total_q = 1, .total_k = 8192, .scale = 0.0883883476f};
	c.key = "decode-key";
	memset(&r, 0, sizeof r);
	r.kernel = "cuda_flash_decode";
	r.params = "";
	r.status = FA_STATUS_PASS;
	r.t.n = 3;
	r.samples = x;
	r.t.median_ms = 0.5;
	r.gbps = 1234.7;
	r.tflops = 0.25;
	r.checked = 1;
	r.st.max_abs = 0.001953125;
	r.st.same_max_abs = -1;
	r.st.worst_index = -1;
	r.tel = (struct fa_telemetry){NAN, NAN, NAN, NAN, -1};
	FA_REQUIRE(fa_store_case_commit(s, run_id, &c, &r, 1, NULL, &err) == FA_OK);

	md = report_text(s, run_id, FA_FMT_MD, NULL, &rc, &err);
	FA_REQUIRE(rc == FA_OK && md);
	/* no parameter varies: only the index column; GB/s for a decode case;
	 * no baseline, so no speedup column */
	FA_CHECKF(strstr(md, "| #   | cuda_flash_decode ms | cuda_flash_decode GB/s | "
			     "cuda_flash_decode max_abs |\n") != NULL,
		  "header not found in:\n%s", md);
	FA_CHECK(strstr(md, "|   1 |                0.500 |                   1235 |") != NULL);
	FA_CHECK(strstr(md, "Common to every case: batch=1, heads=32, kv_heads=8, q_len=1, "
			    "kv_len=8192, head_dim=128, head_dim_v=128, dtype=bf16, mask=none, "
			    "layout=bshd, input=normal.") != NULL);
	FA_CHECK(!strstr(md, " x |") && !strstr(md, "speedup over"));
	FA_CHECK(strstr(md, "- status: incomplete") != NULL);
	free(md);
	json = report_text(s, run_id, FA_FMT_JSON, NULL, &rc, &err);
	FA_REQUIRE(rc == FA_OK && json);
	FA_CHECK(strstr(json, "\"baseline\": null,") != NULL);
	FA_CHECK(strstr(json, "\"speedup\": null,") != NULL);
	FA_CHECK(strstr(json, "\"gbps\": 1234.7,") != NULL);
	FA_CHECK(strstr(json, "\"max_abs\": 0.001953125,") != NULL);
	free(json);
	fa_store_close(s);
}

/* A run stored before any case finished. */
FA_TEST(report, empty_run)
{
	char path[1200];
	struct fa_store *s = NULL;
	struct fa_run_info ri;
	struct fa_err err;
	int64_t run_id;
	enum fa_rc rc;
	char *text;
	snprintf(path, sizeof path, "%s/empty.db", fa_test_tmpdir());
	unlink(path);
	fa_err_clear(&err);
	FA_REQUIRE(fa_store_open(path, 1, &s, &err) == FA_OK);
	memset(&ri, 0, sizeof ri);
	ri.started_at = "2026-11-25T21:40:00Z";
	ri.seed = 5;
	FA_REQUIRE(fa_store_run_begin(s, &ri, &run_id, &err) == FA_OK);
	text = report_text(s, run_id, FA_FMT_MD, NULL, &rc, &err);
	FA_CHECK(rc == FA_OK && text && strstr(text, "No cases were stored.\n"));
	free(text);
	text = report_text(s, run_id, FA_FMT_CSV, NULL, &rc, &err);
	FA_CHECK(rc == FA_OK && text && strncmp(text, "run_id,case_idx,case_key,", 25) == 0 &&
		 strchr(text, '\n') == text + strlen(text) - 1);
	free(text);
	text = report_text(s, run_id, FA_FMT_JSON, NULL, &rc, &err);
	FA_CHECK(rc == FA_OK && text && strstr(text, "\"results\": []\n}\n"));
	free(text);
	fa_store_close(s);
}

/* One kernel run with two sets of params (a tuning run) gets a column per
 * set, named by the params that differ and ordered by their values as
 * numbers; an explicit scale shows in its shortest float form, only where
 * set. */
FA_TEST(report, kernel_params_and_scale)
{
	char path[1200], key[2][16];
	struct fa_store *s = NULL;
	struct fa_run_info ri;
	struct fa_case c;
	struct fa_result r[2];
	struct fa_err err;
	double x[2] = {1.0, 2.0};
	int64_t run_id;
	enum fa_rc rc;
	char *md;

	snprintf(path, sizeof path, "%s/params.db", fa_test_tmpdir());
	unlink(path);
	fa_err_clear(&err);
	FA_REQUIRE(fa_store_open(path, 1, &s, &err) == FA_OK);
	memset(&ri, 0, sizeof ri);
	ri.seed = 3;
	FA_REQUIRE(fa_store_run_begin(s, &ri, &run_id, &err) == FA_OK);
	for (int i = 0; i < 2; i++) {
		memset(&c, 0, sizeof c);
		c.index = i;
		c.p = (struct fa_problem){.batch = 1, .heads = 4, .kv_heads = 4, .q_len = 64,
					  .kv_len = 64, .head_dim = 64, .head_dim_v = 64,
					  .total_q = 64, .total_k = 64,
					  .scale = i ? 0.3f : 0.125f};
		c.scale_set = i;
		snprintf(key[i], sizeof key[i], "k%d", i);
		c.key = key[i];
		memset(r, 0, sizeof r);
		for (int k = 0; k < 2; k++) {
			r[k].kernel = "cuda_flash";
			r[k].params = k ? "block=128,order=1" : "block=64,order=1";
			r[k].status = FA_STATUS_PASS;
			r[k].t.n = 2;
			r[k].samples = x;
			r[k].t.median_ms = 1.0 + k;
			r[k].tflops = 10.0 / (1 + k);
			r[k].checked = 1; /* checked by fabench: a pass, not unchecked */
			r[k].st.same_max_abs = -1;
			r[k].st.worst_index = -1;
			r[k].tel = (struct fa_telemetry){NAN, NAN, NAN, NAN, -1};
		}
		FA_REQUIRE(fa_store_case_commit(s, run_id, &c, r, 2, NULL, &err) == FA_OK);
	}
	md = report_text(s, run_id, FA_FMT_MD, NULL, &rc, &err);
	FA_REQUIRE(rc == FA_OK && md);
	FA_CHECKF(strstr(md, "| #   | scale | cuda_flash[block=64] ms | cuda_flash[block=64] "
			     "TFLOP/s | cuda_flash[block=64] max_abs | cuda_flash[block=128] ms |") !=
			  NULL,
		  "header not found in:\n%s", md);
	FA_CHECK(strstr(md, "order=1]") == NULL); /* common to both sets: not in the names */
	FA_CHECK(strstr(md, "|   1 |       |") != NULL);
	FA_CHECK(strstr(md, "|   2 |   0.3 |") != NULL);
	free(md);
	/* either set can be the baseline, by its column name */
	md = report_text(s, run_id, FA_FMT_MD, "cuda_flash[block=64]", &rc, &err);
	FA_REQUIRE(rc == FA_OK && md);
	FA_CHECK(strstr(md, "| cuda_flash[block=128] x |") != NULL);
	FA_CHECK(strstr(md, "0.500x") != NULL);
	free(md);
	fa_store_close(s);
}

FA_TEST(report, percent_of_calibrated_peak)
{
	struct fa_store *s = fa_fixture_open();
	struct fa_device_info dev;
	struct fa_calibration cal;
	struct fa_err err;
	enum fa_rc rc;
	char *md, want[64];
	FA_REQUIRE(s != NULL);
	/* no calibration of the fixture's device: no column */
	md = report_text(s, FA_FIXTURE_RUN_BASE, FA_FMT_MD, NULL, &rc, &err);
	FA_REQUIRE(md != NULL);
	FA_CHECK(strstr(md, "% peak") == NULL);
	free(md);
	memset(&dev, 0, sizeof dev);
	memset(&cal, 0, sizeof cal);
	snprintf(dev.name, sizeof dev.name, "AMD EPYC 7B13 (2 threads)");
	cal.copy_gbps = 100.0;
	cal.matmul_tflops = 0.010;
	cal.matmul_fp32_tflops = 0.0001; /* 0.1 TFLOP/s: the fixture's fp32 cases against it */
	snprintf(cal.method, sizeof cal.method, "test");
	fa_err_clear(&err);
	FA_REQUIRE(fa_store_calibration_save(s, "cpu", &dev, &cal, "2026-11-26T00:00:00Z", &err) ==
		   FA_OK);
	md = report_text(s, FA_FIXTURE_RUN_BASE, FA_FMT_MD, NULL, &rc, &err);
	FA_REQUIRE(md != NULL && rc == FA_OK);
	FA_CHECK(strstr(md, "cpu_flash % peak") != NULL);
	FA_CHECK(strstr(md, "% peak: throughput over the device's latest calibration") != NULL);
	/* a timed fp32 prefill result's cell: its TFLOP/s over the fp32 rate */
	{
		sqlite3_stmt *st = NULL;
		double tf = 0;
		if (sqlite3_prepare_v2(fa_store_db(s),
				       "SELECT r.tflops FROM results r JOIN cases c ON c.id = r.case_id "
				       "WHERE r.run_id = ? AND r.kernel = 'cpu_flash' AND r.tflops > 0 "
				       "AND c.dtype = 'fp32' AND c.q_len > 16 ORDER BY r.id LIMIT 1",
				       -1, &st, NULL) == SQLITE_OK) {
			sqlite3_bind_int64(st, 1, FA_FIXTURE_RUN_BASE);
			if (sqlite3_step(st) == SQLITE_ROW)
				tf = sqlite3_column_double(st, 0);
		}
		sqlite3_finalize(st);
		FA_REQUIRE(tf > 0);
		snprintf(want, sizeof want, " %.0f%% |", 100.0 * tf / 0.0001);
		FA_CHECKF(strstr(md, want) != NULL, "no cell '%s' in:\n%s", want, md);
	}
	FA_CHECKF(strstr(md, "calibrate: 0.01 TFLOP/s 16-bit matrix product, fp32 cases against "
			     "the fp32 rate, 100 GB/s copy)"),
		  "%s", md);
	free(md);
	/* the CPU's calibration: one fp32 rate for both (calibrate says "fp32;
	 * no 16-bit matrix unit used"), and the note says what was measured */
	cal.matmul_tflops = cal.matmul_fp32_tflops = 0.0001;
	FA_REQUIRE(fa_store_calibration_save(s, "cpu", &dev, &cal, "2026-11-27T00:00:00Z", &err) ==
		   FA_OK);
	md = report_text(s, FA_FIXTURE_RUN_BASE, FA_FMT_MD, NULL, &rc, &err);
	FA_REQUIRE(md != NULL && rc == FA_OK);
	FA_CHECKF(strstr(md, "calibrate: 0.0001 TFLOP/s fp32 matrix product, the rate of every "
			     "dtype: no 16-bit matrix unit used; 100 GB/s copy)"),
		  "%s", md);
	FA_CHECK(!strstr(md, "16-bit matrix product"));
	free(md);
	fa_store_close(s);
}

/* ---- readers on a read-only database --------------------------------------- */

/* The names in a folder, sorted, newline-separated (malloc'd). */
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

/* Drops root for user and group nobody (65534); 0 on success. */
static int become_nobody(void)
{
	return setgroups(0, NULL) != 0 || setgid(65534) != 0 || setuid(65534) != 0;
}

/* 1 when user nobody can run fabench and read path (a checkout under a
 * private home folder is out of its reach), or when not root. */
static int nobody_can_read(const char *path)
{
	pid_t pid;
	if (geteuid() != 0)
		return 1;
	pid = fork();
	if (pid == 0)
		_exit(become_nobody() || access(fa_proc_bin(), X_OK) != 0 ||
		      access(path, R_OK) != 0);
	return pid > 0 && fa_proc_wait(pid) == 0;
}

/* Runs fabench with args (no program name), as user and group nobody when
 * as_nobody and the tests run as root, so permissions hold as they do for a
 * user; as itself otherwise. Its stderr goes to err_text (truncated).
 * Returns its exit status, or 128 + signal, or -1 when it cannot start. */
static int run_unprivileged(char *const args[], int as_nobody, char *err_text, size_t size)
{
	char *argv[16];
	FILE *errf = tmpfile();
	int n = 0, status;
	pid_t pid;
	err_text[0] = '\0';
	if (!errf)
		return -1;
	argv[n++] = (char *)fa_proc_bin();
	for (int k = 0; args[k] && n < 15; k++)
		argv[n++] = args[k];
	argv[n] = NULL;
	pid = fork();
	if (pid < 0) {
		fclose(errf);
		return -1;
	}
	if (pid == 0) {
		int devnull = open("/dev/null", O_WRONLY);
		dup2(devnull, 1);
		dup2(fileno(errf), 2);
		if (as_nobody && geteuid() == 0 && become_nobody())
			_exit(126);
		execv(argv[0], argv);
		_exit(127);
	}
	status = fa_proc_wait(pid);
	rewind(errf);
	err_text[fread(err_text, 1, size - 1, errf)] = '\0';
	fclose(errf);
	return status;
}

/* report, compare, history and plot read a database whose file and folder
 * are read-only, and create nothing beside it (no -wal, no -shm). CI runs
 * as root, which passes permission checks: the listing before and after is
 * what proves it, and the commands run as nobody there. */
FA_TEST(report, readers_on_readonly_folder)
{
	char dir[1100], path[1200], *before, *after;
	int as_nobody;
	snprintf(dir, sizeof dir, "%s/ro", fa_test_tmpdir());
	snprintf(path, sizeof path, "%s/fixture.db", dir);
	chmod(dir, 0755);
	FA_REQUIRE(fa_fixture_build(path) == FA_OK);
	FA_REQUIRE(chmod(path, 0444) == 0 && chmod(dir, 0555) == 0);
	before = list_folder(dir);
	FA_CHECKF(strcmp(before, "fixture.db\n") == 0, "folder holds '%s'", before);
	as_nobody = nobody_can_read(path);
	if (!as_nobody)
		fa_test_skip("user nobody cannot reach %s: the readers run as root (the listing "
			     "still proves nothing is written)",
			     path);
	{
		char *const cmds[][12] = {
			{"report", "--db", path, "--run", "2", NULL},
			{"report", "--db", path, "--run", "2", "--format", "json", NULL},
			{"compare", "--db", path, "1", "2", NULL},
			{"history", "--db", path, "--label", "nightly", NULL},
			{"plot", "throughput", "--db", path, "--run", "1", "--script", "/dev/null",
			 "--output", "x.png", NULL},
		};
		for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
			char err_text[4096];
			int status = run_unprivileged(cmds[i], as_nobody, err_text, sizeof err_text);
			FA_CHECKF(status == 0, "%s: status %d: %s", cmds[i][0], status, err_text);
			FA_CHECKF(!strstr(err_text, "readonly"), "%s: %s", cmds[i][0], err_text);
		}
	}
	after = list_folder(dir);
	FA_CHECKF(strcmp(before, after) == 0, "'%s' became '%s'", before, after);
	free(before);
	free(after);
	chmod(dir, 0755);
	chmod(path, 0644);
}

/* An empty file named by --db is a database with no runs: each reader says
 * so and exits as it does on a database without runs, and the file stays
 * empty with nothing beside it (the readers wrote fabench's tables into
 * it, and a -wal and -shm beside it). */
FA_TEST(report, readers_leave_an_empty_file_empty)
{
	char dir[1100], path[1200], script[1200], *listing;
	struct stat st;
	snprintf(dir, sizeof dir, "%s/e", fa_test_tmpdir());
	snprintf(path, sizeof path, "%s/empty.db", dir);
	snprintf(script, sizeof script, "%s/p.gp", fa_test_tmpdir());
	mkdir(dir, 0755);
	FA_REQUIRE(fa_test_write_file(path, "") == 0);
	struct {
		char *args[12];
		int status;
		const char *says;
	} cmds[] = {
		{{"report", "--db", path, NULL}, 2, "no runs in '"},
		{{"report", "--db", path, "--format", "json", NULL}, 2, "no runs in '"},
		{{"compare", "--db", path, "1", "2", NULL}, 2, "no run '1' in '"},
		{{"history", "--db", path, NULL}, 0, "there is no history to show"},
		{{"plot", "speedup", "latest", "latest", "--db", path, "--script", script, NULL},
		 2,
		 "no run 'latest' in '"},
		{{"plot", "history", "--db", path, "--script", script, NULL}, 2, "nothing to plot"},
		{{"plot", "throughput", "--db", path, "--script", script, NULL}, 2, "no runs in '"},
		{{"tune", "--db", path, "--run", "latest", NULL}, 2, "no runs in '"},
	};
	for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
		struct fa_proc_result r;
		fa_proc_run(cmds[i].args, NULL, 60, &r);
		FA_CHECKF(r.status == cmds[i].status &&
				  strstr(cmds[i].status ? r.err : r.out, cmds[i].says),
			  "%s %s: status %d\n%s%s", cmds[i].args[0], cmds[i].args[1], r.status, r.out,
			  r.err);
		fa_proc_free(&r);
		FA_CHECKF(stat(path, &st) == 0 && st.st_size == 0, "%s %s: the file has %lld bytes",
			  cmds[i].args[0], cmds[i].args[1], (long long)st.st_size);
		listing = list_folder(dir);
		FA_CHECKF(strcmp(listing, "empty.db\n") == 0, "%s %s: the folder holds '%s'",
			  cmds[i].args[0], cmds[i].args[1], listing);
		free(listing);
	}
	FA_CHECK(access(script, F_OK) != 0);
}

/* A reader never creates a missing database. */
FA_TEST(report, reader_never_creates)
{
	char path[1200];
	struct fa_proc_result r;
	snprintf(path, sizeof path, "%s/absent/fabench.db", fa_test_tmpdir());
	char *argv[] = {"report", "--db", path, NULL};
	fa_proc_run(argv, NULL, 60, &r);
	FA_CHECKF(r.status != 0 && strstr(r.err, "no database at '"), "status %d: %s", r.status,
		  r.err);
	FA_CHECK(access(path, F_OK) != 0);
	fa_proc_free(&r);
}

/* ---- kernel families, metrics, the long layout, unchecked imports ---------- */

static void families_test(int format, int metric, int layout, const char *name)
{
	char path[1200];
	struct fa_store *s;
	struct fa_report_opts o = {format, NULL, metric, layout};
	struct fa_err err;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;
	snprintf(path, sizeof path, "%s/families.db", fa_test_tmpdir());
	s = fa_fixture_open_built(path, fa_fixture_build_families, "the families fixture");
	FA_REQUIRE(s);
	f = open_memstream(&buf, &len);
	FA_REQUIRE(f);
	fa_err_clear(&err);
	FA_CHECKF(fa_report_write(s, 1, &o, f, &err) == FA_OK, "report: %s", err.msg);
	fclose(f);
	fa_golden_check(name, buf, strlen(buf));
	free(buf);
	fa_store_close(s);
}

FA_TEST(report, golden_families_md)
{
	families_test(FA_FMT_MD, FA_METRIC_ALL, FA_LAYOUT_WIDE, "report_families.md");
}
FA_TEST(report, golden_families_metric_md)
{
	families_test(FA_FMT_MD, FA_METRIC_TFLOPS, FA_LAYOUT_WIDE, "report_families_tflops.md");
}
FA_TEST(report, golden_families_long_md)
{
	families_test(FA_FMT_MD, FA_METRIC_ALL, FA_LAYOUT_LONG, "report_families_long.md");
}
FA_TEST(report, golden_families_long_csv)
{
	families_test(FA_FMT_CSV, FA_METRIC_MS, FA_LAYOUT_LONG, "report_families_long_ms.csv");
}
FA_TEST(report, golden_families_json)
{
	families_test(FA_FMT_JSON, FA_METRIC_ALL, FA_LAYOUT_WIDE, "report_families.json");
}

/* The family's column holds what its instances ran; an overlapping instance
 * keeps its own; unchecked imports are counted apart from passes. */
FA_TEST(report, families_fold_complementary_instances)
{
	char path[1200], *md;
	struct fa_store *s;
	struct fa_err err;
	enum fa_rc rc;
	snprintf(path, sizeof path, "%s/families.db", fa_test_tmpdir());
	s = fa_fixture_open_built(path, fa_fixture_build_families, "the families fixture");
	FA_REQUIRE(s);
	md = report_text(s, 1, FA_FMT_MD, NULL, &rc, &err);
	FA_REQUIRE(rc == FA_OK && md);
	FA_CHECK(strstr(md, "| cuda_flash_mma ms |") != NULL);
	FA_CHECK(strstr(md, "cuda_flash_mma_d192_128 ms") == NULL);
	FA_CHECK(strstr(md, "cuda_flash_mma_d72_pad80 ms") == NULL);
	FA_CHECK(strstr(md, "| cuda_flash_mma_d72_masked ms |") != NULL);
	FA_CHECK(strstr(md, "cases run by an instance: 3 `cuda_flash_mma_d192_128`, 4 "
			    "`cuda_flash_mma_d72_pad80`.") != NULL);
	FA_CHECK(strstr(md, "(9 pass, 2 fail, 14 skip, 5 unchecked)") != NULL);
	FA_CHECK(strstr(md, "Skipped (4):") != NULL);
	free(md);
	fa_store_close(s);
}

FA_TEST(report, metric_and_layout_options)
{
	static char *const bad[][8] = {
		{"report", "--metric", "flops", NULL},
		{"report", "--layout", "tall", NULL},
		{"report", "--layout", "long", "--format", "json", NULL},
		{"report", "--layout", "long", "--format", "html", NULL},
		{"report", "--metric", "ms", "--format", "json", NULL},
		{"report", "--metric", "ms", "--format", "csv", NULL},
	};
	static const char *const want[] = {
		"--metric 'flops' must be ms, tflops or gbps",
		"--layout 'tall' must be wide or long",
		"--layout long applies to --format md and csv",
		"--layout long applies to --format md and csv",
		"--metric applies to --format md, html and csv --layout long",
		"--metric applies to --format md, html and csv --layout long",
	};
	struct fa_proc_result r;
	char path[1200];
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		fa_proc_run(bad[i], NULL, 60, &r);
		FA_CHECKF(r.status == 2 && strstr(r.err, want[i]), "%s %s: status %d: %s", bad[i][1],
			  bad[i][2], r.status, r.err);
		fa_proc_free(&r);
	}
	snprintf(path, sizeof path, "%s/families.db", fa_test_tmpdir());
	FA_REQUIRE(fa_fixture_build_families(path) == FA_OK);
	fa_proc_run((char *[]){"report", "--db", path, "--metric", "gbps", "--layout", "long",
			       "--format", "csv", NULL},
		    NULL, 60, &r);
	FA_CHECKF(r.status == 0, "status %d: %s", r.status, r.err);
	FA_CHECK(strncmp(r.out, "#,q_len,kv_len,head_dim,head_dim_v,mask,kernel,instance,status,GB/s,"
				"noise,stop,max_abs\n",
			 87) == 0);
	fa_proc_free(&r);
	/* the library refuses what the command line refuses */
	{
		struct fa_store *s = fa_fixture_open_db(path);
		struct fa_report_opts o = {FA_FMT_JSON, NULL, FA_METRIC_ALL, FA_LAYOUT_LONG};
		struct fa_err err;
		FA_REQUIRE(s);
		fa_err_clear(&err);
		FA_CHECK(fa_report_write(s, 1, &o, stdout, &err) == FA_ERR_USAGE);
		o.layout = 7;
		FA_CHECK(fa_report_write(s, 1, &o, stdout, &err) == FA_ERR_USAGE);
		o.layout = FA_LAYOUT_WIDE;
		o.metric = 9;
		FA_CHECK(fa_report_write(s, 1, &o, stdout, &err) == FA_ERR_USAGE);
		fa_store_close(s);
	}
	FA_CHECK(fa_report_metric_parse("tflops") == FA_METRIC_TFLOPS);
	FA_CHECK(fa_report_metric_parse("all") == -1);
	FA_CHECK(fa_report_layout_parse("long") == FA_LAYOUT_LONG);
	FA_CHECK(fa_report_layout_parse(NULL) == -1);
}

/* Table cells from names a user chose (tags, labels, rules, params) cannot
 * end the cell or become markup in a PR comment, and stay readable: '|',
 * '<', '*', '`', '\' and a link's "](" escaped, lone brackets kept, line
 * breaks and control characters as spaces; a code cell escapes '|', which
 * GitHub reads as a cell's end even inside a code span. */
FA_TEST(report, markdown_cells_escape_user_text)
{
	struct fa_table t;
	struct fa_err err;
	FA_REQUIRE(fa_table_init(&t, 2, &err) == FA_OK);
	FA_REQUIRE(fa_table_add_md(&t, "a|b <i>x</i> *y* `z` \\ [t](u) cpu_flash[block_q=32]\nnext\x1b[31m",
				   &err) == FA_OK);
	FA_REQUIRE(fa_table_add_code(&t, "kv_len > 8 || batch > 1\n? 8 : 16", &err) == FA_OK);
	FA_REQUIRE(fa_table_add_md(&t, NULL, &err) == FA_OK);
	FA_REQUIRE(fa_table_add_code(&t, "a `b` c", &err) == FA_OK);
	FA_CHECKF(strcmp(fa_table_cell(&t, 0, 0),
			 "a\\|b \\<i>x\\</i> \\*y\\* \\`z\\` \\\\ [t\\](u) cpu_flash[block_q=32] next [31m") == 0,
		  "'%s'", fa_table_cell(&t, 0, 0));
	FA_CHECKF(strcmp(fa_table_cell(&t, 0, 1), "`kv_len > 8 \\|\\| batch > 1 ? 8 : 16`") == 0, "'%s'",
		  fa_table_cell(&t, 0, 1));
	FA_CHECK(strcmp(fa_table_cell(&t, 1, 0), "") == 0);
	FA_CHECKF(strcmp(fa_table_cell(&t, 1, 1), "`` a `b` c ``") == 0, "'%s'", fa_table_cell(&t, 1, 1));
	fa_table_free(&t);
}

/* A column is as wide as its widest cell counted as it is printed: a byte
 * that is not UTF-8 is one character, the U+FFFD it becomes (a lone
 * continuation byte counted none, and its row came out one short). */
static enum fa_rc print_md_text(FILE *m, const void *t, struct fa_err *err)
{
	return fa_table_print_md(m, t, err);
}

FA_TEST(report, table_width_counts_a_replaced_byte_as_one)
{
	struct fa_table t;
	struct fa_err err;
	FILE *f;
	char *buf = NULL, *line, *save = NULL;
	size_t len = 0;
	long width = -1;
	FA_REQUIRE(fa_table_init(&t, 2, &err) == FA_OK);
	static const char *const cells[] = {"name", "n", "a\x80\x80", "1", "\xe2\x82", "2",
					    "\xc3\xa9t\xc3\xa9", "3"};
	for (size_t i = 0; i < sizeof cells / sizeof cells[0]; i++)
		FA_REQUIRE(fa_table_add(&t, cells[i], &err) == FA_OK);
	f = open_memstream(&buf, &len);
	FA_REQUIRE(f);
	FA_CHECK(fa_table_write_text(f, print_md_text, &t, "the table", &err) == FA_OK);
	fclose(f);
	FA_REQUIRE(buf);
	FA_CHECKF(fa_test_utf8_invalid_at(buf, len) < 0, "%s", buf);
	FA_CHECKF(strstr(buf, "| a\xef\xbf\xbd\xef\xbf\xbd  | 1   |\n") &&
			  strstr(buf, "| \xef\xbf\xbd\xef\xbf\xbd   | 2   |\n") &&
			  strstr(buf, "| \xc3\xa9t\xc3\xa9  | 3   |\n"),
		  "%s", buf);
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		long chars = 0;
		for (const char *p = line; *p; p++)
			chars += ((unsigned char)*p & 0xc0) != 0x80;
		if (width < 0)
			width = chars;
		FA_CHECKF(chars == width, "'%s': %ld characters, the header %ld", line, chars, width);
	}
	free(buf);
	fa_table_free(&t);
}

/* Every text output (markdown and CSV of report, compare and history, as
 * JSON and HTML already did) writes a byte that starts no valid UTF-8
 * sequence, as a plugin's device name, a skip or failure reason, a label
 * may hold, as U+FFFD: the output is UTF-8 whatever the database holds. */
static char *writer_text(int which, int format, struct fa_store *s)
{
	struct fa_report_opts ro = {format, NULL, FA_METRIC_ALL, FA_LAYOUT_WIDE};
	struct fa_compare cmp;
	struct fa_history h;
	struct fa_err err;
	enum fa_rc rc = FA_ERR_INTERNAL;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		return NULL;
	fa_err_clear(&err);
	if (which == 0 || which == 1) { /* report, wide and long */
		ro.layout = which == 1 ? FA_LAYOUT_LONG : FA_LAYOUT_WIDE;
		rc = fa_report_write(s, FA_FIXTURE_RUN_MAIN, &ro, f, &err);
	} else if (which == 2 || which == 3) { /* compare, and compare --max-chars */
		if ((rc = fa_compare_build(s, "1", "2", NULL, &cmp, &err)) == FA_OK) {
			rc = which == 3 ? fa_compare_write_md_fit(&cmp, 3000, f, &err)
					: fa_compare_write(&cmp, format, f, &err);
			fa_compare_free(&cmp);
		}
	} else if ((rc = fa_history_build(s, NULL, &h, &err)) == FA_OK) {
		rc = fa_history_write(&h, format, f, &err);
		fa_history_free(&h);
	}
	fclose(f);
	if (rc != FA_OK) {
		fa_test_fail(__FILE__, __LINE__, "writer %d format %d: %s", which, format, err.msg);
		free(buf);
		return NULL;
	}
	return buf;
}

FA_TEST(report, text_outputs_replace_bytes_that_are_not_utf8)
{
	struct fa_store *s = fa_fixture_open();
	static const char *const names[] = {"report", "report --layout long", "compare",
					    "compare --max-chars", "history"};
	FA_REQUIRE(s);
	/* a device name and a failure reason with bytes of no sequence: 0xff,
	 * a lone continuation byte, a sequence cut short; a model label */
	FA_REQUIRE(sqlite3_exec(fa_store_db(s),
				"UPDATE runs SET device_name = CAST(X'6370752DFF' AS TEXT) WHERE id = 2; "
				"UPDATE results SET reason = CAST(X'77687980E282' AS TEXT) "
				"WHERE run_id = 2 AND reason IS NOT NULL AND reason != ''; "
				"INSERT INTO case_tags (case_id, seq, name, model, layers) SELECT id, 0, "
				"CAST(X'6C6C616D61FE' AS TEXT), 1, 32 FROM cases WHERE run_id IN (1, 2) "
				"AND idx = 0",
				NULL, NULL, NULL) == SQLITE_OK);
	for (int which = 0; which < 5; which++)
		for (int format = FA_FMT_MD; format <= FA_FMT_JSON; format++) {
			char *text;
			long bad;
			if ((which == 1 || which == 3) && format != FA_FMT_MD &&
			    !(which == 1 && format == FA_FMT_CSV))
				continue; /* --layout long is md and csv; --max-chars md */
			text = writer_text(which, format, s);
			if (!text)
				continue;
			bad = fa_test_utf8_invalid_at(text, strlen(text));
			FA_CHECKF(bad < 0, "%s, format %d: byte 0x%02x at %ld: %.60s", names[which],
				  format, bad < 0 ? 0 : (unsigned char)text[bad], bad,
				  bad < 0 ? "" : text + (bad > 30 ? bad - 30 : 0));
			/* (the long csv has no device name, reason or label) */
			FA_CHECKF(strstr(text, format == FA_FMT_JSON ? "\\ufffd" : "\xef\xbf\xbd") ||
					  (which == 1 && format == FA_FMT_CSV),
				  "%s, format %d: no replacement character", names[which], format);
			free(text);
		}
	fa_store_close(s);
}

/* --baseline names a forward kernel in a run that times the backward too:
 * the forward cases' speed-ups are over it, and the backward cases keep
 * their dense backward as the baseline, where they had a baseline that ran
 * none of them (empty x columns, and "bwd": "cpu_flash" in the JSON). */
FA_TEST(report, baseline_of_the_passes_it_ran)
{
	char db[1024];
	char suite[] = "tests/suites/fwd-bwd.yaml";
	struct fa_proc_result r;
	snprintf(db, sizeof db, "%s/base-pass.db", fa_test_tmpdir());
	unlink(db);
	fa_proc_run((char *[]){"run", suite, "--backend", "cpu", "--db", db, "--quiet", NULL}, NULL,
		    120, &r);
	FA_REQUIRE(r.status == 0);
	fa_proc_free(&r);
	fa_proc_run((char *[]){"report", "--db", db, "--baseline", "cpu_flash", "--format", "json",
			       NULL},
		    NULL, 60, &r);
	FA_CHECKF(r.status == 0 && strstr(r.out, "\"baselines\": {\"fwd\": \"cpu_flash\", \"bwd\": "
						 "\"cpu_dense_bwd\", \"fwd_bwd\": null}"),
		  "%s", r.out);
	fa_proc_free(&r);
	fa_proc_run((char *[]){"report", "--db", db, "--baseline", "cpu_flash", NULL}, NULL, 60, &r);
	FA_CHECKF(r.status == 0 && strstr(r.out, "| cpu_dense x |") &&
			  strstr(r.out, "| cpu_flash_bwd x |") && !strstr(r.out, "cpu_dense_bwd x") &&
			  strstr(r.out, "x: speedup over cpu_flash on forward cases, cpu_dense_bwd on "
					"backward cases"),
		  "%s", r.out);
	fa_proc_free(&r);
}
