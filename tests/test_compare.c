/* test_compare.c - `fabench compare`: golden markdown, CSV and JSON of the
 * fixture database (base run 1 against main run 2), the verdicts, pooling
 * and run specs behind them through the API, the command's exit statuses,
 * and two end-to-end measurements through build/fabench: an A/A comparison
 * of the same build (no false FASTER/SLOWER beyond a small bound) and a
 * planted 5% slowdown of the test plugin's test_delay kernel (found).
 *
 * FABENCH_UPDATE_GOLDEN=1 rewrites the golden files instead of comparing.
 */
#include <inttypes.h>
#include <math.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../harness/report/compare.h"
#include "../harness/report/report.h"
#include "fixture.h"
#include "golden.h"
#include "proc.h"
#include "test.h"

/* ---- Helpers ----------------------------------------------------------------- */

/* The comparison written as format, malloc'd; *rc (rc may be NULL) the
 * writer's code. */
static char *compare_text(const struct fa_compare *cmp, int format, enum fa_rc *rc)
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
	*rc = fa_compare_write(cmp, format, f, &err);
	fclose(f);
	return buf;
}

/* The row of (case idx, kernel), or NULL. */
static const struct fa_cmp_row *row_of(const struct fa_compare *cmp, int idx, const char *kernel)
{
	for (int i = 0; i < cmp->n_rows; i++)
		if (cmp->rows[i].case_idx == idx && strcmp(cmp->rows[i].kernel, kernel) == 0)
			return &cmp->rows[i];
	return NULL;
}

/* Fields of one CSV line (RFC 4180 quotes), or -1 when a quote is open. */
static int csv_fields(const char *line, size_t len)
{
	int n = 1, quoted = 0;
	for (size_t i = 0; i < len; i++) {
		if (line[i] == '"')
			quoted = !quoted;
		else if (line[i] == ',' && !quoted)
			n++;
	}
	return quoted ? -1 : n;
}

/* ---- The fixture: golden output --------------------------------------------------- */

FA_TEST(compare, golden_base_vs_main)
{
	struct fa_store *s = fa_fixture_open();
	struct fa_compare cmp;
	struct fa_err err;
	enum fa_rc rc;
	char *md, *csv, *json;
	FA_REQUIRE(s);
	fa_err_clear(&err);
	rc = fa_compare_build(s, "1", "2", NULL, &cmp, &err);
	FA_REQUIRE(rc == FA_OK);
	md = compare_text(&cmp, FA_FMT_MD, &rc);
	FA_CHECK(rc == FA_OK && md);
	if (md)
		fa_golden_check("compare_main.md", md, strlen(md));
	csv = compare_text(&cmp, FA_FMT_CSV, &rc);
	FA_CHECK(rc == FA_OK && csv);
	if (csv)
		fa_golden_check("compare_main.csv", csv, strlen(csv));
	json = compare_text(&cmp, FA_FMT_JSON, &rc);
	FA_CHECK(rc == FA_OK && json);
	if (json)
		fa_golden_check("compare_main.json", json, strlen(json));
	/* a second build gives the same bytes (bootstrap seeds are per row) */
	struct fa_compare again;
	FA_REQUIRE(fa_compare_build(s, "baseline", "2", NULL, &again, &err) == FA_OK);
	char *csv2 = compare_text(&again, FA_FMT_CSV, &rc);
	FA_CHECK(csv && csv2 && strcmp(csv, csv2) == 0);
	free(csv2);
	fa_compare_free(&again);
	free(md);
	free(csv);
	free(json);
	fa_compare_free(&cmp);
	fa_store_close(s);
}

/* ---- The fixture: verdicts, correctness, summary ------------------------------------ */

FA_TEST(compare, fixture_verdicts)
{
	struct fa_store *s = fa_fixture_open();
	struct fa_compare cmp;
	struct fa_err err;
	const struct fa_cmp_row *r;
	FA_REQUIRE(s);
	fa_err_clear(&err);
	FA_REQUIRE(fa_compare_build(s, "1", "2", NULL, &cmp, &err) == FA_OK);
	FA_CHECK(cmp.base.n_runs == 1 && cmp.base.runs[0].id == 1);
	FA_CHECK(cmp.head.n_runs == 1 && cmp.head.runs[0].id == 2);
	FA_CHECK(strcmp(cmp.base.matched_by, "id") == 0);

	/* cpu_flash: 15% slower on case 0, 8% faster on 1, 2 and 5 */
	r = row_of(&cmp, 0, "cpu_flash");
	FA_REQUIRE(r);
	FA_CHECK(r->change == FA_CMP_TIMED && r->verdict == FA_PERF_SLOWER);
	FA_CHECK_NEAR(r->speedup, 1 / 1.15, 0.005);
	FA_CHECK(r->n_base == 12 && r->n_head == 10);
	FA_CHECK(r->perf.p < 0.05 && r->perf.lo > 1.02);
	for (int c = 1; c <= 5; c++) {
		r = row_of(&cmp, c, "cpu_flash");
		FA_REQUIRE(r);
		int want = (c == 1 || c == 2 || c == 5) ? FA_PERF_FASTER : FA_PERF_SAME;
		FA_CHECKF(r->verdict == want, "case %d: verdict %s", c,
			  fa_stats_verdict_name(r->verdict));
	}
	/* cpu_dense moves by < 1%: same everywhere it was timed */
	for (int c = 0; c < FA_FIXTURE_CASES; c++) {
		r = row_of(&cmp, c, "cpu_dense");
		FA_REQUIRE(r);
		if (c == 5) {
			FA_CHECK(r->change == FA_CMP_UNTIMED && r->verdict == -1 && isnan(r->speedup));
			FA_CHECK(r->base_status == FA_STATUS_SKIP && r->head_status == FA_STATUS_SKIP);
		} else {
			FA_CHECKF(r->verdict == FA_PERF_SAME, "dense case %d: %s", c,
				  fa_stats_verdict_name(r->verdict));
		}
	}
	/* correctness: cpu_flash errors on case 6; the new kernel fails case 1
	 * and times out on 7: broken, and listed first */
	FA_CHECK(cmp.changes[FA_CMP_BROKEN] == 3);
	for (int i = 0; i < 3; i++)
		FA_CHECK(cmp.rows[i].change == FA_CMP_BROKEN);
	r = row_of(&cmp, 6, "cpu_flash");
	FA_REQUIRE(r);
	FA_CHECK(r->change == FA_CMP_BROKEN && r->base_status == FA_STATUS_PASS &&
		 r->head_status == FA_STATUS_ERROR && strstr(r->head_reason, "workspace"));
	r = row_of(&cmp, 1, "cpu_flash_tiled");
	FA_REQUIRE(r);
	FA_CHECK(r->change == FA_CMP_BROKEN && r->base_status == -1 &&
		 r->head_status == FA_STATUS_FAIL);
	FA_CHECK(strcmp(r->params, "block_q=32,block_k=64") == 0);
	r = row_of(&cmp, 0, "cpu_flash_tiled");
	FA_REQUIRE(r);
	FA_CHECK(r->change == FA_CMP_ADDED && r->base_status == -1 && isnan(r->base_ms) &&
		 r->head_ms > 0);
	FA_CHECK(cmp.changes[FA_CMP_ADDED] == 6 && cmp.changes[FA_CMP_REMOVED] == 0);
	FA_CHECK(cmp.changes[FA_CMP_TIMED] == 14 && cmp.changes[FA_CMP_UNTIMED] == 1);
	FA_CHECK(cmp.n_rows == 24);

	/* the summary */
	FA_CHECK(cmp.verdicts[FA_PERF_FASTER] == 3 && cmp.verdicts[FA_PERF_SLOWER] == 1 &&
		 cmp.verdicts[FA_PERF_SAME] == 10 && cmp.verdicts[FA_PERF_NOISY] == 0);
	FA_CHECK(cmp.n_regressions == 1 + 3);
	FA_REQUIRE(cmp.n_kernels == 2 && cmp.n_suites == 1);
	FA_CHECK(strcmp(cmp.kernels[0].name, "cpu_dense") == 0 && cmp.kernels[0].n == 7);
	FA_CHECK(strcmp(cmp.kernels[1].name, "cpu_flash") == 0 && cmp.kernels[1].n == 7);
	FA_CHECK(strcmp(cmp.suites[0].name, "smoke") == 0 && cmp.suites[0].n == 14);
	/* cpu_flash: (1/1.15 * (1/0.92)^3) ^ (1/7) over its 7 timed cases */
	FA_CHECK_NEAR(cmp.kernels[1].geomean_speedup, pow(1 / 1.15 / pow(0.92, 3), 1.0 / 7), 0.002);
	FA_CHECK_NEAR(cmp.kernels[0].geomean_speedup, 1.0, 0.005);
	double logs = 0;
	int n = 0;
	for (int i = 0; i < cmp.n_rows; i++)
		if (cmp.rows[i].change == FA_CMP_TIMED) {
			logs += log(cmp.rows[i].speedup);
			n++;
		}
	FA_CHECK(n == 14);
	FA_CHECK_NEAR(cmp.geomean_speedup, exp(logs / n), 1e-12);
	FA_CHECK_NEAR(cmp.suites[0].geomean_speedup, cmp.geomean_speedup, 1e-12);
	/* columns: the parameters that vary, without the ones equal to a partner */
	int shown_q = 0, shown_kvlen = 0, shown_heads = 1;
	for (int j = 0; j < cmp.n_params; j++) {
		if (strcmp(cmp.param_names[j], "q_len") == 0)
			shown_q = cmp.shown[j];
		if (strcmp(cmp.param_names[j], "head_dim_v") == 0)
			shown_kvlen = cmp.shown[j];
		if (strcmp(cmp.param_names[j], "heads") == 0)
			shown_heads = cmp.shown[j];
	}
	FA_CHECK(shown_q && !shown_kvlen && !shown_heads);
	fa_compare_free(&cmp);
	fa_store_close(s);
}

FA_TEST(compare, swapped_sides_mirror)
{
	struct fa_store *s = fa_fixture_open();
	struct fa_compare ab, ba;
	struct fa_err err;
	FA_REQUIRE(s);
	fa_err_clear(&err);
	FA_REQUIRE(fa_compare_build(s, "1", "2", NULL, &ab, &err) == FA_OK);
	FA_REQUIRE(fa_compare_build(s, "2", "1", NULL, &ba, &err) == FA_OK);
	FA_CHECK(ba.verdicts[FA_PERF_FASTER] == ab.verdicts[FA_PERF_SLOWER]);
	FA_CHECK(ba.verdicts[FA_PERF_SLOWER] == ab.verdicts[FA_PERF_FASTER]);
	FA_CHECK_NEAR(ba.geomean_speedup * ab.geomean_speedup, 1.0, 1e-12);
	/* what broke one way was fixed the other way; added became removed */
	FA_CHECK(ba.changes[FA_CMP_FIXED] == 1 && ba.changes[FA_CMP_BROKEN] == 0);
	FA_CHECK(ba.changes[FA_CMP_REMOVED] == 8);
	const struct fa_cmp_row *r = row_of(&ba, 6, "cpu_flash");
	FA_CHECK(r && r->change == FA_CMP_FIXED && strstr(r->base_reason, "workspace"));
	fa_compare_free(&ab);
	fa_compare_free(&ba);
	fa_store_close(s);
}

FA_TEST(compare, same_run_is_all_same)
{
	struct fa_store *s = fa_fixture_open();
	struct fa_compare cmp;
	struct fa_err err;
	FA_REQUIRE(s);
	fa_err_clear(&err);
	FA_REQUIRE(fa_compare_build(s, "2", "2", NULL, &cmp, &err) == FA_OK);
	FA_CHECK(cmp.verdicts[FA_PERF_FASTER] == 0 && cmp.verdicts[FA_PERF_SLOWER] == 0);
	FA_CHECK(cmp.verdicts[FA_PERF_SAME] == cmp.changes[FA_CMP_TIMED]);
	FA_CHECK(cmp.changes[FA_CMP_FAILING] == 3 && cmp.changes[FA_CMP_BROKEN] == 0);
	FA_CHECK(cmp.n_regressions == 0);
	FA_CHECK_NEAR(cmp.geomean_speedup, 1.0, 1e-15);
	fa_compare_free(&cmp);
	fa_store_close(s);
}

FA_TEST(compare, options_change_verdicts)
{
	struct fa_store *s = fa_fixture_open();
	struct fa_compare cmp;
	struct fa_compare_opts o;
	struct fa_err err;
	FA_REQUIRE(s);
	/* a 20% threshold: the 15% and 8% changes are no longer reported */
	fa_compare_opts_init(&o);
	o.perf.min_effect = 0.20;
	fa_err_clear(&err);
	FA_REQUIRE(fa_compare_build(s, "1", "2", &o, &cmp, &err) == FA_OK);
	FA_CHECK(cmp.verdicts[FA_PERF_FASTER] == 0 && cmp.verdicts[FA_PERF_SLOWER] == 0);
	FA_CHECK(cmp.n_regressions == 3); /* the broken results still count */
	fa_compare_free(&cmp);
	/* bad options are usage errors */
	o.perf.min_effect = 1.5;
	fa_err_clear(&err);
	FA_CHECK(fa_compare_build(s, "1", "2", &o, &cmp, &err) == FA_ERR_USAGE);
	FA_CHECK(strstr(err.msg, "min effect 1.5") != NULL);
	FA_CHECK(cmp.n_rows == 0 && cmp.rows == NULL);
	fa_compare_free(&cmp); /* harmless on a failed build */
	fa_compare_opts_init(&o);
	o.perf.alpha = 0;
	fa_err_clear(&err);
	FA_CHECK(fa_compare_build(s, "1", "2", &o, &cmp, &err) == FA_ERR_USAGE);
	/* and a format compare does not write */
	fa_compare_opts_init(&o);
	FA_REQUIRE(fa_compare_build(s, "1", "2", &o, &cmp, &err) == FA_OK);
	enum fa_rc rc;
	char *txt = compare_text(&cmp, FA_FMT_HTML, &rc);
	FA_CHECK(rc == FA_ERR_USAGE);
	free(txt);
	fa_compare_free(&cmp);
	fa_store_close(s);
}

/* ---- Run specs and pooling ----------------------------------------------------------- */

FA_TEST(compare, run_specs_and_pooling)
{
	struct fa_store *s = fa_fixture_open();
	struct fa_compare cmp;
	struct fa_err err;
	const struct fa_cmp_row *r;
	FA_REQUIRE(s);

	/* a label: every run with it, pooled (runs 2 and 3 are "nightly") */
	fa_err_clear(&err);
	FA_REQUIRE(fa_compare_build(s, "baseline", "nightly", NULL, &cmp, &err) == FA_OK);
	FA_CHECK(strcmp(cmp.base.matched_by, "label") == 0 && cmp.base.n_runs == 1);
	FA_CHECK(strcmp(cmp.head.matched_by, "label") == 0 && cmp.head.n_runs == 2);
	FA_CHECK(cmp.head.runs[0].id == 2 && cmp.head.runs[1].id == 3);
	FA_CHECK(cmp.head.n_commits == 1);
	/* run 3 has cases 0-2: 10 + 10 samples there, 10 elsewhere */
	r = row_of(&cmp, 0, "cpu_flash");
	FA_CHECK(r && r->n_head == 20 && r->verdict == FA_PERF_SLOWER);
	r = row_of(&cmp, 3, "cpu_flash");
	FA_CHECK(r && r->n_head == 10);
	/* the error of run 2 on case 6 is not hidden by pooling */
	r = row_of(&cmp, 6, "cpu_flash");
	FA_CHECK(r && r->change == FA_CMP_BROKEN);
	fa_compare_free(&cmp);

	/* a commit prefix (any case, >= 4 hex digits): every run of it */
	FA_REQUIRE(fa_compare_build(s, "3F9A1C", "8c4e", NULL, &cmp, &err) == FA_OK);
	FA_CHECK(strcmp(cmp.base.matched_by, "commit") == 0 && cmp.base.n_runs == 1 &&
		 cmp.base.runs[0].id == 1);
	FA_CHECK(strcmp(cmp.head.matched_by, "commit") == 0 && cmp.head.n_runs == 2);
	FA_CHECK(strcmp(cmp.head.runs[0].git_commit, "8c4e2a1f9d3b7c5e0a2f4d6b8e1c3a5f7d9b0e2c") ==
		 0);
	fa_compare_free(&cmp);

	/* latest: the newest run */
	FA_REQUIRE(fa_compare_build(s, "1", "latest", NULL, &cmp, &err) == FA_OK);
	FA_CHECK(cmp.head.n_runs == 1 && cmp.head.runs[0].id == 3);
	FA_CHECK(strcmp(cmp.head.runs[0].status, "incomplete") == 0);
	/* run 3 stopped after case 2: the rest are removed, not regressions */
	FA_CHECK(cmp.changes[FA_CMP_REMOVED] == 2 * 5 && cmp.changes[FA_CMP_TIMED] == 2 * 3);
	fa_compare_free(&cmp);

	/* names that match nothing: not found, quoting the spec */
	static const char *const bad[] = {"99", "3f9", "nosuch",
					  "8c4e2a1f9d3b7c5e0a2f4d6b8e1c3a5f7d9b0e2cff", "' OR 1=1 --"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char want[128];
		fa_err_clear(&err);
		FA_CHECK(fa_compare_build(s, bad[i], "2", NULL, &cmp, &err) == FA_ERR_NOT_FOUND);
		snprintf(want, sizeof want, "no run '%s'", bad[i]);
		FA_CHECKF(strstr(err.msg, want) != NULL, "'%s': %s", bad[i], err.msg);
		FA_CHECK(cmp.rows == NULL && cmp.n_rows == 0);
	}
	fa_err_clear(&err);
	FA_CHECK(fa_compare_build(s, "1", "", NULL, &cmp, &err) == FA_ERR_USAGE);
	fa_store_close(s);
}

FA_TEST(compare, csv_and_json_shape)
{
	struct fa_store *s = fa_fixture_open();
	struct fa_compare cmp;
	struct fa_err err;
	enum fa_rc rc;
	FA_REQUIRE(s);
	fa_err_clear(&err);
	FA_REQUIRE(fa_compare_build(s, "1", "2", NULL, &cmp, &err) == FA_OK);
	char *csv = compare_text(&cmp, FA_FMT_CSV, &rc);
	FA_REQUIRE(rc == FA_OK && csv);
	int lines = 0, fields = -2;
	for (const char *p = csv; *p;) {
		size_t len = strcspn(p, "\n");
		/* keys hold commas inside quotes; every line has the header's fields */
		int nf = csv_fields(p, len);
		if (fields == -2)
			fields = nf;
		FA_CHECKF(nf == fields && nf > 30, "line %d has %d fields, header %d", lines + 1,
			  nf, fields);
		lines++;
		p += len + (p[len] == '\n');
	}
	FA_CHECK(lines == 1 + cmp.n_rows);
	FA_CHECK(strncmp(csv, "suite,case_idx,case_key,batch,", 30) == 0);
	/* broken first */
	FA_CHECK(strstr(csv, "\nsmoke,1,") < strstr(csv, "\nsmoke,0,"));
	free(csv);
	char *json = compare_text(&cmp, FA_FMT_JSON, &rc);
	FA_REQUIRE(rc == FA_OK && json);
	int depth = 0, ok = 1, in_str = 0;
	for (const char *p = json; *p; p++) {
		if (in_str) {
			if (*p == '\\')
				p++;
			else if (*p == '"')
				in_str = 0;
			continue;
		}
		if (*p == '"')
			in_str = 1;
		else if (*p == '{' || *p == '[')
			depth++;
		else if (*p == '}' || *p == ']')
			ok &= --depth >= 0;
	}
	FA_CHECK(ok && depth == 0 && !in_str);
	FA_CHECK(strstr(json, "\"regressions\": 4") != NULL);
	FA_CHECK(strstr(json, "NaN") == NULL && strstr(json, "nan") == NULL);
	free(json);
	fa_compare_free(&cmp);
	fa_store_close(s);
}

/* ---- The command ------------------------------------------------------------------------ */

FA_TEST(compare, command_exit_status)
{
	struct fa_proc_result r;
	struct fa_store *s = fa_fixture_open();
	char *db = (char *)fa_fixture_path();
	FA_REQUIRE(s);
	fa_store_close(s);
	fa_proc_run((char *[]){"compare", "--db", db, "1", "2", NULL}, NULL, 60, &r);
	FA_CHECKF(r.status == 0, "status %d: %s", r.status, r.err);
	FA_CHECK(strncmp(r.out, "# fabench compare: 1 vs 2\n", 26) == 0);
	fa_proc_free(&r);
	/* a slowdown and new failures: 1 with --fail-on-regression */
	fa_proc_run((char *[]){"compare", "--db", db, "--fail-on-regression", "1", "2", NULL}, NULL,
		    60, &r);
	FA_CHECK(r.status == 1);
	FA_CHECKF(strstr(r.err, "4 regressions (1 slower, 3 newly failing)") != NULL, "%s", r.err);
	fa_proc_free(&r);
	/* none when the threshold hides the slowdown and the head is the base */
	fa_proc_run((char *[]){"compare", "--db", db, "--fail-on-regression", "--min-effect", "50",
			       "--format", "csv", "2", "2", NULL},
		    NULL, 60, &r);
	FA_CHECKF(r.status == 0, "status %d: %s", r.status, r.err);
	FA_CHECK(strncmp(r.out, "suite,case_idx", 14) == 0);
	fa_proc_free(&r);
	/* unknown runs and bad usage: 2 */
	fa_proc_run((char *[]){"compare", "--db", db, "1", "nosuch", NULL}, NULL, 60, &r);
	FA_CHECK(r.status == 2 && strstr(r.err, "no run 'nosuch'") && r.out[0] == '\0');
	fa_proc_free(&r);
	static const char *const bad[][6] = {
		{"compare", "1", NULL},
		{"compare", "1", "2", "3", NULL},
		{"compare", "--format", "xml", "1", "2", NULL},
		{"compare", "--min-effect", "abc", "1", "2", NULL},
		{"compare", "--alpha", "1.5", "1", "2", NULL},
		{"compare", "--frobnicate", "1", "2", NULL},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char *argv[10];
		int n = 0;
		for (int k = 0; bad[i][k]; k++)
			argv[n++] = (char *)bad[i][k];
		argv[n++] = "--db";
		argv[n++] = db;
		argv[n] = NULL;
		fa_proc_run(argv, NULL, 60, &r);
		FA_CHECKF(r.status == 2 && strstr(r.err, "usage: fabench compare"),
			  "case %zu: status %d: %s", i, r.status, r.err);
		fa_proc_free(&r);
	}
	/* a database that does not exist: 2, and not created */
	char missing[1200];
	snprintf(missing, sizeof missing, "%s/none.db", fa_test_tmpdir());
	fa_proc_run((char *[]){"compare", "--db", missing, "1", "2", NULL}, NULL, 60, &r);
	FA_CHECK(r.status == 2 && access(missing, F_OK) != 0);
	fa_proc_free(&r);
	/* --output writes the file */
	char outp[1200];
	snprintf(outp, sizeof outp, "%s/sub/cmp.json", fa_test_tmpdir());
	fa_proc_run((char *[]){"compare", "--db", db, "--format", "json", "--output", outp, "1", "2",
			       NULL},
		    NULL, 60, &r);
	FA_CHECK(r.status == 0);
	char *txt = fa_test_read_file(outp, NULL);
	FA_CHECK(txt && txt[0] == '{' && strstr(txt, "\"rows\""));
	free(txt);
	fa_proc_free(&r);
}

/* ---- Lost coverage, noise, separate runs ------------------------------------------- */

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

/* The results of run 3 (killed after case 2) against run 1: every result of
 * cases 3-7 that run 1 timed is lost; a skip in run 3 loses one more. */
FA_TEST(compare, lost_coverage_counted)
{
	struct fa_store *s = fa_fixture_open();
	struct fa_compare cmp;
	struct fa_err err;
	int lost = 0, removed_timed = 0;
	FA_REQUIRE(s);
	fa_err_clear(&err);
	FA_REQUIRE(fa_compare_build(s, "1", "3", NULL, &cmp, &err) == FA_OK);
	for (int i = 0; i < cmp.n_rows; i++) {
		const struct fa_cmp_row *r = &cmp.rows[i];
		lost += r->lost;
		removed_timed += r->change == FA_CMP_REMOVED && r->base_status == FA_STATUS_PASS;
		/* only rows BASE timed: a skip in BASE (cpu_dense, case 5) is not lost */
		if (r->lost)
			FA_CHECK(r->base_status == FA_STATUS_PASS && r->n_base > 0 &&
				 r->change == FA_CMP_REMOVED);
		else
			FA_CHECK(r->change != FA_CMP_REMOVED || r->base_status != FA_STATUS_PASS);
	}
	/* cases 3-7 of cpu_dense and cpu_flash, less cpu_dense's skip on case 5 */
	FA_CHECK(removed_timed == 9);
	FA_CHECKF(cmp.n_lost == 9 && lost == 9 && cmp.lost_removed == 9 && cmp.lost_untimed == 0,
		  "lost %d (rows %d), removed %d, untimed %d", cmp.n_lost, lost, cmp.lost_removed,
		  cmp.lost_untimed);
	fa_compare_free(&cmp);
	/* a result skipped in HEAD that BASE timed is lost too */
	FA_REQUIRE(exec_sql(s, "UPDATE results SET status = 'skip', reason = 'not supported', "
			       "median_ms = NULL, stdev_ms = NULL, n_samples = 0 WHERE run_id = 3 "
			       "AND kernel = 'cpu_flash' AND case_id IN (SELECT id FROM cases "
			       "WHERE run_id = 3 AND idx = 0)"));
	FA_REQUIRE(exec_sql(s, "DELETE FROM samples WHERE result_id IN (SELECT r.id FROM results "
			       "r WHERE r.run_id = 3 AND r.status = 'skip')"));
	FA_REQUIRE(fa_compare_build(s, "1", "3", NULL, &cmp, &err) == FA_OK);
	FA_CHECKF(cmp.n_lost == 10 && cmp.lost_removed == 9 && cmp.lost_untimed == 1,
		  "lost %d, removed %d, untimed %d", cmp.n_lost, cmp.lost_removed, cmp.lost_untimed);
	char *md = compare_text(&cmp, FA_FMT_MD, NULL);
	FA_CHECKF(md && strstr(md, "- **coverage lost**: 10 results timed in base are not timed in "
				   "head (9 removed, 1 not timed)\n"),
		  "%s", md ? md : "");
	free(md);
	fa_compare_free(&cmp);
	/* nothing lost against itself */
	FA_REQUIRE(fa_compare_build(s, "1", "1", NULL, &cmp, &err) == FA_OK);
	FA_CHECK(cmp.n_lost == 0);
	fa_compare_free(&cmp);
	fa_store_close(s);
}

FA_TEST(compare, gate_fails_on_lost_coverage)
{
	struct fa_proc_result r;
	struct fa_store *s = fa_fixture_open();
	char *db = (char *)fa_fixture_path();
	FA_REQUIRE(s);
	/* run 3 lost 9 results: nothing slower (50%) and nothing broken, yet 1 */
	fa_proc_run((char *[]){"compare", "--db", db, "--min-effect", "50", "1", "3", NULL}, NULL,
		    60, &r);
	FA_CHECKF(r.status == 0 && r.err[0] == '\0', "status %d: %s", r.status, r.err);
	fa_proc_free(&r);
	fa_proc_run((char *[]){"compare", "--db", db, "--fail-on-regression", "--min-effect", "50",
			       "1", "3", NULL},
		    NULL, 60, &r);
	FA_CHECKF(r.status == 1 && strcmp(r.err, "fabench compare: coverage lost: 9 results timed "
						 "in base '1' are not timed in head (9 removed, 0 "
						 "not timed)\n") == 0,
		  "status %d: %s", r.status, r.err);
	fa_proc_free(&r);
	/* the other way round nothing is lost (run 1 has every case): 0 */
	fa_proc_run((char *[]){"compare", "--db", db, "--fail-on-regression", "--min-effect", "50",
			       "3", "1", NULL},
		    NULL, 60, &r);
	FA_CHECKF(r.status == 0, "status %d: %s", r.status, r.err);
	fa_proc_free(&r);
	/* nothing timed in HEAD at all: every row lost, and nothing compared */
	FA_REQUIRE(exec_sql(s, "DELETE FROM samples WHERE result_id IN (SELECT id FROM results "
			       "WHERE run_id = 3)"));
	FA_REQUIRE(exec_sql(s, "UPDATE results SET status = 'skip', reason = 'not supported', "
			       "median_ms = NULL, stdev_ms = NULL, n_samples = 0 WHERE run_id = 3"));
	fa_store_close(s);
	fa_proc_run((char *[]){"compare", "--db", db, "--fail-on-regression", "--min-effect", "50",
			       "1", "3", NULL},
		    NULL, 60, &r);
	FA_CHECKF(r.status == 1 && strstr(r.out, "No result was timed on both sides") &&
			  strstr(r.err, "coverage lost: 15 results timed in base '1' are not timed "
					"in head (9 removed, 6 not timed)\n") &&
			  strstr(r.err, "fabench compare: no result was timed on both sides: "
					"nothing compared against base '1'\n"),
		  "status %d: %s", r.status, r.err);
	fa_proc_free(&r);
	/* neither side timed anything: nothing lost, but still nothing compared */
	fa_proc_run((char *[]){"compare", "--db", db, "--fail-on-regression", "3", "3", NULL}, NULL,
		    60, &r);
	FA_CHECKF(r.status == 1 && strcmp(r.err, "fabench compare: no result was timed on both "
						 "sides: nothing compared against base '3'\n") == 0,
		  "status %d: %s", r.status, r.err);
	fa_proc_free(&r);
}

/* The line of the markdown performance table for case idx and kernel. */
/* The markdown row of case idx (stored from 0, shown from 1) and kernel. */
static const char *md_row(const char *md, int idx, const char *kernel, char *buf, size_t size)
{
	char head[32];
	snprintf(head, sizeof head, "| %3d |", idx + 1);
	for (const char *p = md; p && *p;) {
		size_t len = strcspn(p, "\n");
		snprintf(buf, size, "%.*s", (int)len, p);
		if (strncmp(buf, head, strlen(head)) == 0) {
			char k[128];
			snprintf(k, sizeof k, "| %s ", kernel);
			if (strstr(buf, k))
				return buf;
		}
		p += len + (p[len] == '\n');
	}
	return NULL;
}

FA_TEST(compare, noise_and_stop_shown)
{
	struct fa_store *s = fa_fixture_open();
	struct fa_compare cmp;
	struct fa_err err;
	sqlite3_stmt *st = NULL;
	double x[64], sum = 0, ss = 0, mean, rsd;
	int n = 0;
	char line[1024];
	FA_REQUIRE(s);
	fa_err_clear(&err);
	/* run 2's cpu_flash on case 0 ran out of time before its noise settled */
	FA_REQUIRE(exec_sql(s, "UPDATE results SET stop_reason = 'max_time' WHERE run_id = 2 AND "
			       "kernel = 'cpu_flash' AND case_id IN (SELECT id FROM cases WHERE "
			       "run_id = 2 AND idx = 0)"));
	FA_REQUIRE(sqlite3_prepare_v2(fa_store_db(s),
				      "SELECT s.time_ms FROM samples s JOIN results r ON r.id = "
				      "s.result_id JOIN cases c ON c.id = r.case_id WHERE r.run_id = 2 "
				      "AND r.kernel = 'cpu_flash' AND c.idx = 0 ORDER BY s.seq",
				      -1, &st, NULL) == SQLITE_OK);
	while (sqlite3_step(st) == SQLITE_ROW && n < 64)
		x[n++] = sqlite3_column_double(st, 0);
	sqlite3_finalize(st);
	FA_REQUIRE(n >= 2);
	for (int i = 0; i < n; i++)
		sum += x[i];
	mean = sum / n;
	for (int i = 0; i < n; i++)
		ss += (x[i] - mean) * (x[i] - mean);
	rsd = sqrt(ss / (n - 1)) / mean;

	FA_REQUIRE(fa_compare_build(s, "1", "2", NULL, &cmp, &err) == FA_OK);
	const struct fa_cmp_row *r = row_of(&cmp, 0, "cpu_flash");
	FA_REQUIRE(r);
	FA_CHECKF(fabs(r->head_rsd - rsd) < 1e-12 * rsd, "head rsd %.17g, from the samples %.17g",
		  r->head_rsd, rsd);
	FA_CHECK(r->base_rsd > 0 && isfinite(r->base_rsd));
	FA_CHECK(strcmp(r->head_stop, "max_time") == 0 && strcmp(r->base_stop, "converged") == 0);
	/* a row not timed in HEAD (cpu_flash errors on case 6) has no head noise */
	const struct fa_cmp_row *broken = row_of(&cmp, 6, "cpu_flash");
	FA_REQUIRE(broken);
	FA_CHECK(isnan(broken->head_rsd) && broken->head_stop[0] == '\0');
	char *md = compare_text(&cmp, FA_FMT_MD, NULL);
	char want[64];
	FA_REQUIRE(md);
	/* "| base ms | base rsd | head ms | head rsd |": the head's noise marked "~" */
	snprintf(want, sizeof want, " %.1f%%~ |", rsd * 100);
	FA_CHECKF(md_row(md, 0, "cpu_flash", line, sizeof line) && strstr(line, want), "%s", line);
	snprintf(want, sizeof want, " %.1f%% |", r->base_rsd * 100);
	FA_CHECKF(strstr(line, want) != NULL, "%s", line);
	FA_CHECK(md_row(md, 0, "cpu_dense", line, sizeof line) && !strchr(line, '~'));
	FA_CHECK(strstr(md, "| base ms | base rsd | head ms | head rsd |") &&
		 strstr(md, " ~: that side's sampling stopped at its time or sample limit"));
	free(md);
	char *csv = compare_text(&cmp, FA_FMT_CSV, NULL);
	FA_CHECK(csv && strstr(csv, ",base_rsd,head_rsd,base_stop,head_stop,lost,base_timing,"
				    "head_timing,pass,depth,models\n") &&
		 strstr(csv, ",converged,max_time,0,cpu,cpu,fwd,,\n"));
	free(csv);
	fa_compare_free(&cmp);
	/* without a stop that hit a limit there is no marker and no footnote */
	FA_REQUIRE(exec_sql(s, "UPDATE results SET stop_reason = 'converged' WHERE run_id = 2"));
	FA_REQUIRE(fa_compare_build(s, "1", "2", NULL, &cmp, &err) == FA_OK);
	md = compare_text(&cmp, FA_FMT_MD, NULL);
	FA_CHECK(md && !strstr(md, "~"));
	free(md);
	fa_compare_free(&cmp);
	fa_store_close(s);
}

/* Rows timed one way in BASE and another in HEAD (a graph against single
 * launches, hot against cold) are counted in the header and marked in the
 * table, and CSV and JSON carry each side's timing. */
FA_TEST(compare, timing_mismatch_marked)
{
	struct fa_store *s = fa_fixture_open();
	struct fa_compare cmp;
	struct fa_err err;
	char line[1024];
	FA_REQUIRE(s);
	fa_err_clear(&err);
	FA_REQUIRE(fa_compare_build(s, "1", "2", NULL, &cmp, &err) == FA_OK);
	FA_CHECK(cmp.n_timing_differs == 0);
	char *md = compare_text(&cmp, FA_FMT_MD, NULL);
	FA_CHECK(md && !strstr(md, "- timing:") && !strstr(md, "(timing)"));
	free(md);
	fa_compare_free(&cmp);
	/* HEAD's cpu_flash on case 0 timed as a cold graph */
	FA_REQUIRE(exec_sql(s, "UPDATE results SET timing = 'graph-cold' WHERE run_id = 2 AND "
			       "kernel = 'cpu_flash' AND case_id IN (SELECT id FROM cases WHERE "
			       "run_id = 2 AND idx = 0)"));
	FA_REQUIRE(fa_compare_build(s, "1", "2", NULL, &cmp, &err) == FA_OK);
	FA_CHECK(cmp.n_timing_differs == 1);
	const struct fa_cmp_row *r = row_of(&cmp, 0, "cpu_flash"), *o = row_of(&cmp, 0, "cpu_dense");
	FA_REQUIRE(r && o);
	FA_CHECK(r->timing_differs && strcmp(r->base_timing, "cpu") == 0 &&
		 strcmp(r->head_timing, "graph-cold") == 0);
	FA_CHECK(!o->timing_differs && strcmp(o->head_timing, "cpu") == 0);
	md = compare_text(&cmp, FA_FMT_MD, NULL);
	FA_REQUIRE(md);
	FA_CHECKF(strstr(md, "- timing: 1 timed row was measured differently on the two sides "
			     "(base cpu, head graph-cold; marked `timing`)"),
		  "%s", md);
	FA_CHECKF(md_row(md, 0, "cpu_flash", line, sizeof line) && strstr(line, " (timing) |"), "%s",
		  line);
	FA_CHECK(md_row(md, 0, "cpu_dense", line, sizeof line) && !strstr(line, "(timing)"));
	free(md);
	char *csv = compare_text(&cmp, FA_FMT_CSV, NULL);
	FA_CHECK(csv && strstr(csv, ",cpu,graph-cold,fwd,,\n"));
	free(csv);
	char *json = compare_text(&cmp, FA_FMT_JSON, NULL);
	FA_CHECK(json && strstr(json, "\"head_timing\": \"graph-cold\", \"timing_differs\": true"));
	free(json);
	fa_compare_free(&cmp);
	fa_store_close(s);
}

FA_TEST(compare, separate_runs_noted)
{
	static const char note[] = "\nNote: BASE and HEAD are separate runs: drift between runs on "
				   "a shared machine can exceed the effects shown; `fabench run "
				   "--ab` pairs samples.";
	struct fa_store *s = fa_fixture_open();
	struct fa_compare_opts o;
	struct fa_compare cmp;
	struct fa_err err;
	char *md;
	FA_REQUIRE(s);
	fa_err_clear(&err);
	FA_REQUIRE(fa_compare_build(s, "1", "2", NULL, &cmp, &err) == FA_OK);
	FA_CHECK(cmp.separate && !cmp.paired);
	md = compare_text(&cmp, FA_FMT_MD, NULL);
	/* the fixture's samples spread by about 0.5%: under the 2% minimum effect */
	FA_CHECKF(md && strstr(md, note) && !strstr(md, "Here the samples are noisy"), "%s", md);
	free(md);
	fa_compare_free(&cmp);
	/* noisy against the minimum effect: the note says how noisy */
	fa_compare_opts_init(&o);
	o.perf.min_effect = 0.001;
	FA_REQUIRE(fa_compare_build(s, "1", "2", &o, &cmp, &err) == FA_OK);
	md = compare_text(&cmp, FA_FMT_MD, NULL);
	FA_CHECKF(md && strstr(md, note) && strstr(md, " Here the samples are noisy: a result's "
						       "relative standard deviation is "),
		  "%s", md);
	FA_CHECK(cmp.median_rsd > 0.001 && cmp.median_rsd < 0.05);
	free(md);
	fa_compare_free(&cmp);
	/* a run against itself, and a pool that shares a run, are not separate */
	FA_REQUIRE(fa_compare_build(s, "2", "2", NULL, &cmp, &err) == FA_OK);
	FA_CHECK(!cmp.separate);
	md = compare_text(&cmp, FA_FMT_MD, NULL);
	FA_CHECK(md && !strstr(md, "separate runs"));
	free(md);
	fa_compare_free(&cmp);
	FA_REQUIRE(fa_compare_build(s, "nightly", "2", NULL, &cmp, &err) == FA_OK);
	FA_CHECK(!cmp.separate);
	fa_compare_free(&cmp);
	/* the two sides of one run --ab are paired, not separate */
	FA_REQUIRE(exec_sql(s, "UPDATE runs SET ab_group = 'g' WHERE id IN (1, 2)"));
	FA_REQUIRE(fa_compare_build(s, "1", "2", NULL, &cmp, &err) == FA_OK);
	FA_CHECK(cmp.paired && !cmp.separate);
	md = compare_text(&cmp, FA_FMT_MD, NULL);
	FA_CHECK(md && !strstr(md, "separate runs"));
	/* the footnote names the test the paired verdicts use */
	FA_CHECK(md && strstr(md, "ms: median of the paired samples") &&
		 strstr(md, "when the sign test of the pairs gives p <") &&
		 !strstr(md, "Mann-Whitney"));
	free(md);
	fa_compare_free(&cmp);
	fa_store_close(s);
}

/* Paired rows (the two sides of one run --ab): the speedup is 1 / the
 * median of the pairs' head/base, the ratio the verdict tests, not the
 * ratio of the two sides' medians, which can point the other way when the
 * machine drifts between pairs (seen on the CPU VM: 0.97x FASTER). Here 16
 * of 20 pairs have head 0.8x base and 4 pairs a slow head: the medians
 * give 0.63x, the pairs 1.25x FASTER. */
FA_TEST(compare, paired_speedup_follows_the_pairs)
{
	struct fa_store *s = fa_fixture_open();
	struct fa_compare cmp;
	struct fa_err err;
	const struct fa_cmp_row *row;
	char sql[512];
	char *md;
	FA_REQUIRE(s);
	fa_err_clear(&err);
	FA_REQUIRE(exec_sql(s, "UPDATE runs SET ab_group = 'g' WHERE id IN (1, 2)"));
	for (int side = 0; side < 2; side++) {
		int run = side ? 2 : 1;
		snprintf(sql, sizeof sql,
			 "DELETE FROM samples WHERE result_id = (SELECT r.id FROM results r JOIN "
			 "cases c ON c.id = r.case_id WHERE r.run_id = %d AND c.idx = 0 AND "
			 "r.kernel = 'cpu_dense')",
			 run);
		FA_REQUIRE(exec_sql(s, sql));
		for (int i = 0; i < 20; i++) {
			double b = i < 10 ? 1.0 + 0.001 * i : i < 16 ? 3.0 + 0.001 * i : 1.0 + 0.001 * i;
			double h = i < 16 ? 0.8 * b : 3.5 + 0.001 * i;
			snprintf(sql, sizeof sql,
				 "INSERT INTO samples (result_id, seq, time_ms) SELECT r.id, %d, %.17g "
				 "FROM results r JOIN cases c ON c.id = r.case_id WHERE r.run_id = %d "
				 "AND c.idx = 0 AND r.kernel = 'cpu_dense'",
				 i, side ? h : b, run);
			FA_REQUIRE(exec_sql(s, sql));
		}
		snprintf(sql, sizeof sql,
			 "UPDATE results SET n_samples = 20 WHERE run_id = %d AND kernel = "
			 "'cpu_dense' AND case_id = (SELECT id FROM cases WHERE run_id = %d AND "
			 "idx = 0)",
			 run, run);
		FA_REQUIRE(exec_sql(s, sql));
	}
	FA_REQUIRE(fa_compare_build(s, "1", "2", NULL, &cmp, &err) == FA_OK);
	FA_REQUIRE(cmp.paired);
	row = row_of(&cmp, 0, "cpu_dense");
	FA_REQUIRE(row && row->paired);
	FA_CHECKF(row->verdict == FA_PERF_FASTER && fabs(row->perf.ratio - 0.8) < 1e-9,
		  "verdict %d ratio %g", row->verdict, row->perf.ratio);
	FA_CHECKF(fabs(row->speedup - 1.25) < 1e-9, "speedup %g, medians %g / %g", row->speedup,
		  row->base_ms, row->head_ms);
	md = compare_text(&cmp, FA_FMT_MD, NULL);
	FA_CHECKF(md && strstr(md, " 1.25x | FASTER") && !strstr(md, "0.627x") &&
			  strstr(md, "speedup: 1 / the median of head/base over the pairs"),
		  "%s", md ? md : "");
	free(md);
	fa_compare_free(&cmp);
	fa_store_close(s);
}

/* ---- tools/aa-study -------------------------------------------------------------------- */

/* Runs tools/aa-study with args (NULL-terminated): fa_proc_script. */
static int aa_study(char *const *args, char **out, char **err)
{
	return fa_proc_script("tools/aa-study", args, out, err);
}

/* FASTER and SLOWER rows in a compare CSV, counted here independently of
 * the script. */
static int csv_flagged(const char *csv, int *rows)
{
	int flagged = 0;
	*rows = 0;
	for (const char *p = csv; p && *p;) {
		size_t len = strcspn(p, "\n");
		char line[8192];
		snprintf(line, sizeof line, "%.*s", (int)len, p);
		if (strstr(line, ",timed,")) {
			(*rows)++;
			flagged += strstr(line, ",faster,") || strstr(line, ",slower,");
		}
		p += len + (p[len] == '\n');
	}
	return flagged;
}

FA_TEST(compare, aa_study_script)
{
	char dir[1200], path[1300], want[256], *out = NULL, *err = NULL;
	const char *plugin = getenv("FABENCH_TEST_PLUGIN");
	int flagged = 0, rows = 0, reps_flagged = 0;
	snprintf(dir, sizeof dir, "%s/study", fa_test_tmpdir());
	char *args[] = {"--plugin", (char *)(plugin ? plugin : "build/libfabench-test.so"),
			"--suite", "tests/suites/tiny.yaml", "--kernels", "test_correct",
			"--reps", "2", "--out", dir, NULL};
	int st = aa_study(args, &out, &err);
	FA_REQUIRE(out && err);
	FA_CHECKF(st == 0, "status %d: %s%s", st, out, err);
	for (int i = 1; i <= 2; i++) {
		int r, f;
		snprintf(path, sizeof path, "%s/rep-%02d.csv", dir, i);
		char *csv = fa_test_read_file(path, NULL);
		snprintf(path, sizeof path, "%s/rep-%02d.md", dir, i);
		char *md = fa_test_read_file(path, NULL);
		snprintf(want, sizeof want, "# fabench compare: aa%02d-a vs aa%02d-b\n", i, i);
		FA_CHECK(md && strncmp(md, want, strlen(want)) == 0 &&
			 strstr(md, "- paired: the two runs of one `run --ab`"));
		f = csv_flagged(csv, &r);
		FA_CHECKF(r == 4, "rep %d: %d timed rows", i, r); /* tiny.yaml: 4 cases */
		flagged += f;
		rows += r;
		reps_flagged += f > 0;
		free(csv);
		free(md);
	}
	snprintf(want, sizeof want, "false positives: %d of %d rows (", flagged, rows);
	FA_CHECKF(strstr(out, want) != NULL, "want '%s' in\n%s", want, out);
	snprintf(want, sizeof want, "repetitions with any flag: %d of 2 (", reps_flagged);
	FA_CHECKF(strstr(out, want) != NULL, "want '%s' in\n%s", want, out);
	FA_CHECK(strstr(out, "|ratio - 1| over all rows: median ") &&
		 strstr(out, "effect floor: --min-effect "));
	snprintf(path, sizeof path, "%s/summary.txt", dir);
	char *summary = fa_test_read_file(path, NULL);
	FA_CHECK(summary && strstr(out, summary)); /* the summary is what it printed last */
	free(summary);
	free(out);
	free(err);

	/* bad usage: 2, with what is wrong */
	static const struct {
		const char *args[4], *msg;
	} bad[] = {
		{{"--reps", "0", NULL}, "aa-study: --reps '0' must be a positive integer\n"},
		{{"--frobnicate", NULL}, "aa-study: unknown argument '--frobnicate'\n"},
		{{"--suite", "no/such.yaml", NULL}, "aa-study: cannot read suite 'no/such.yaml'\n"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		st = aa_study((char *const *)bad[i].args, &out, &err);
		FA_CHECKF(st == 2 && err && strcmp(err, bad[i].msg) == 0, "case %zu: status %d: %s", i,
			  st, err ? err : "");
		free(out);
		free(err);
	}
	/* runs on another backend than the one named: 1 after the first repetition */
	char *wrong[] = {"--plugin", (char *)(plugin ? plugin : "build/libfabench-test.so"),
			 "--suite", "tests/suites/tiny.yaml", "--kernels", "test_correct",
			 "--backend", "cuda", "--reps", "2", "--out", dir, NULL};
	st = aa_study(wrong, &out, &err);
	FA_CHECKF(st == 1 && err && strstr(err, "aa-study: rep 01: the runs are not on backend "
						"'cuda': - device: test on "),
		  "status %d: %s", st, err ? err : "");
	free(out);
	free(err);
}

/* ---- End to end: A/A and a planted slowdown --------------------------------------------- */

/* Compares labels a and b of db (CSV, --ignore-params when ignore) and
 * counts the timed rows and their verdicts (by enum fa_perf_verdict).
 * Returns the number of timed rows; *csv (may be NULL) gets the output. */
static int count_verdicts(const char *db, const char *a, const char *b, int ignore, int counts[4],
			  char **csv)
{
	struct fa_proc_result r;
	char *argv[10];
	int timed = 0, n = 0;
	argv[n++] = "compare";
	argv[n++] = "--db";
	argv[n++] = (char *)db;
	argv[n++] = "--format";
	argv[n++] = "csv";
	if (ignore)
		argv[n++] = "--ignore-params";
	argv[n++] = (char *)a;
	argv[n++] = (char *)b;
	argv[n] = NULL;
	memset(counts, 0, 4 * sizeof *counts);
	fa_proc_run(argv, NULL, 60, &r);
	FA_CHECKF(r.status == 0, "compare %s %s: status %d: %s", a, b, r.status, r.err);
	for (const char *p = r.out; *p;) {
		size_t len = strcspn(p, "\n");
		char line[4096];
		snprintf(line, sizeof line, "%.*s", (int)len, p);
		if (strstr(line, ",timed,")) {
			timed++;
			if (strstr(line, ",faster,"))
				counts[FA_PERF_FASTER]++;
			else if (strstr(line, ",slower,"))
				counts[FA_PERF_SLOWER]++;
			else if (strstr(line, ",noisy,"))
				counts[FA_PERF_NOISY]++;
			else if (strstr(line, ",same,"))
				counts[FA_PERF_SAME]++;
		}
		p += len + (p[len] == '\n');
	}
	if (csv) {
		*csv = r.out;
		r.out = NULL;
	}
	fa_proc_free(&r);
	return timed;
}

/* How much CPU other processes took while the measurements ran: the busy
 * time of every CPU (/proc/stat) minus this test's and its children's, over
 * the wall time. Timing verdicts are only meaningful when the measured
 * kernels had the machine to themselves: on a 2-core box shared with a
 * compiler, two runs a second apart differ by 20-40% for real (the A/A
 * measurements in docs/compare.md), and no rule with a 2% threshold can
 * call that noise. */
struct busy {
	double wall_s, all_s, mine_s;
};

static void busy_read(struct busy *b)
{
	struct rusage self, kids;
	struct timespec ts;
	unsigned long long v[8] = {0};
	double tick = (double)sysconf(_SC_CLK_TCK);
	FILE *f = fopen("/proc/stat", "r");
	b->all_s = 0;
	if (f && fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2],
			&v[3], &v[4], &v[5], &v[6], &v[7]) == 8)
		/* user nice system [idle iowait] irq softirq steal */
		b->all_s = (double)(v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / tick;
	if (f)
		fclose(f);
	getrusage(RUSAGE_SELF, &self);
	getrusage(RUSAGE_CHILDREN, &kids);
	b->mine_s = (double)(self.ru_utime.tv_sec + self.ru_stime.tv_sec + kids.ru_utime.tv_sec +
			     kids.ru_stime.tv_sec) +
		    1e-6 * (double)(self.ru_utime.tv_usec + self.ru_stime.tv_usec +
				    kids.ru_utime.tv_usec + kids.ru_stime.tv_usec);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	b->wall_s = (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Cores' worth of CPU that other processes used between a and b. */
static double busy_others(const struct busy *a, const struct busy *b)
{
	double wall = b->wall_s - a->wall_s, others = (b->all_s - a->all_s) - (b->mine_s - a->mine_s);
	return wall > 0 && others > 0 ? others / wall : 0;
}

/* The machine counts as quiet when other processes used less than this many
 * cores on average: the kernels run on one thread (--threads 1), so a light
 * background job on the other core does not slow them. */
#define QUIET_OTHER_CORES 0.3
/* Tries per measurement. A busy machine is often quiet a few seconds later,
 * and one quiet try that meets the bound passes: a compare that is wrong
 * (every row SAME, or verdicts from the bare ratio) fails every try, where a
 * burst of background work the probe averaged away spoils one. */
#define E2E_TRIES 3

/* At most this many of the 16 A/A rows may be FASTER or SLOWER in a quiet
 * try. fa_stats_verdict's simulations (stats.h) give 0% false verdicts on
 * 1% noise and about 2% on 20% noise; tools/aa-study measured 1 row in 320
 * on the shared VM once each side's buffers were page-aligned (before: 2-4
 * rows in most tries); 2 of 16 (12%) leaves room for CPU timings that are
 * not independent draws (docs/compare.md). */
#define AA_MAX_FALSE 2

/* The outcome of the tries of an e2e measurement. */
struct tries {
	int quiet, passed; /* quiet tries, and those that met the bound */
	double least;      /* the smallest share of other processes seen */
	char first_failure[256];
};

/* Records a try: quiet or not, and whether it met the bound. 1 when the
 * test can stop (a quiet try passed). */
static int tries_note(struct tries *t, double others, int ok, const char *what)
{
	if (others < t->least)
		t->least = others;
	if (others >= QUIET_OTHER_CORES)
		return 0;
	t->quiet++;
	if (ok)
		t->passed++;
	else if (!t->first_failure[0])
		snprintf(t->first_failure, sizeof t->first_failure, "%s", what);
	return ok;
}

/* After the last try: fails when every quiet try missed the bound, skips
 * when no try was quiet. */
static void tries_end(const struct tries *t, const char *name)
{
	if (t->passed)
		return;
	if (t->quiet) {
		fa_test_fail(__FILE__, __LINE__, "%s: %d quiet tries, none within the bound; first: %s",
			     name, t->quiet, t->first_failure);
		return;
	}
	fa_test_skip("%s verdicts not checked: other processes used %.2f cores or more during each "
		     "of %d tries (quiet is < %.2f)",
		     name, t->least, E2E_TRIES, QUIET_OTHER_CORES);
}

/* A second copy of the test plugin, so `run --ab` loads two builds (dlopen
 * of one path twice would give the same handle). Returns the copy's path. */
static const char *plugin_copy(char *buf, size_t size)
{
	const char *p = getenv("FABENCH_TEST_PLUGIN");
	snprintf(buf, size, "%s/libfabench-test-copy.so", fa_test_tmpdir());
	return fa_test_copy_file(p ? p : "build/libfabench-test.so", buf) == 0 ? buf : NULL;
}

/* Runs planted.yaml with --ab (the test plugin and its copy, samples taken
 * in turn) into db with label, plus extra arguments; 1 on success. */
static int run_ab(const char *db, const char *label, const char *copy, char *const *extra)
{
	char ab[2400], *argv[40];
	const char *p = getenv("FABENCH_TEST_PLUGIN");
	int n = 0;
	struct fa_proc_result r;
	static char *env[] = {"FABENCH_TEST_KERNELS=1", NULL};
	snprintf(ab, sizeof ab, "%s:%s", p ? p : "build/libfabench-test.so", copy);
	argv[n++] = "run";
	argv[n++] = "tests/suites/planted.yaml";
	argv[n++] = "--ab";
	argv[n++] = ab;
	argv[n++] = "--threads";
	argv[n++] = "1";
	argv[n++] = "--db";
	argv[n++] = (char *)db;
	argv[n++] = "--label";
	argv[n++] = (char *)label;
	argv[n++] = "--quiet";
	for (int i = 0; extra && extra[i] && n < 39; i++)
		argv[n++] = extra[i];
	argv[n] = NULL;
	fa_proc_run(argv, env, 180, &r);
	int ok = r.status == 0;
	if (!ok)
		fa_test_fail(__FILE__, __LINE__, "run --ab %s: status %d\n%s\n%s", label, r.status,
			     r.out, r.err);
	fa_proc_free(&r);
	return ok;
}

/* The A/A and planted-slowdown studies time 16 rows of 400-500 samples a
 * side (half a minute each on one core). Under the sanitizer build
 * (tools/run-tests exports FABENCH_TEST_VARIANT=san) the times are the
 * sanitizer's, and what they drive (run --ab, compare's paired verdicts)
 * is what the release pass checks and the other compare tests run under
 * the sanitizers: they are skipped there. */
static int timing_study_skipped(void)
{
	const char *v = getenv("FABENCH_TEST_VARIANT");
	if (v && strcmp(v, "san") == 0) {
		fa_test_skip("a timing study: it runs in the release build (make test), not under "
			     "the sanitizers");
		return 1;
	}
	return 0;
}

FA_TEST(compare, aa_same_build_twice)
{
	char db[1200], copy[1200], label[16], la[32], lb[32], what[256];
	static char *extra[] = {"--kernels", "test_correct,test_delay", NULL};
	struct tries tr = {0, 0, 1e9, ""};
	int counts[4];
	if (timing_study_skipped())
		return;
	snprintf(db, sizeof db, "%s/aa.db", fa_test_tmpdir());
	unlink(db);
	if (!plugin_copy(copy, sizeof copy)) {
		fa_test_fail(__FILE__, __LINE__, "cannot copy the test plugin");
		return;
	}
	for (int t = 0; t < E2E_TRIES; t++) {
		struct busy b0, b1;
		snprintf(label, sizeof label, "aa%d", t);
		snprintf(la, sizeof la, "%s-a", label);
		snprintf(lb, sizeof lb, "%s-b", label);
		busy_read(&b0);
		if (!run_ab(db, label, copy, extra))
			return;
		busy_read(&b1);
		double others = busy_others(&b0, &b1);
		char *csv = NULL;
		int timed = count_verdicts(db, la, lb, 0, counts, &csv);
		int wrong = counts[FA_PERF_FASTER] + counts[FA_PERF_SLOWER];
		free(csv);
		printf("  A/A try %d: %d faster, %d slower, %d noisy, %d same of %d rows; other "
		       "processes used %.2f cores\n",
		       t + 1, counts[FA_PERF_FASTER], counts[FA_PERF_SLOWER], counts[FA_PERF_NOISY],
		       counts[FA_PERF_SAME], timed, others);
		/* two kernels on all 8 cases, every row with a verdict */
		FA_CHECK(timed == 16);
		FA_CHECK(counts[0] + counts[1] + counts[2] + counts[3] == timed);
		snprintf(what, sizeof what, "%d of %d rows FASTER or SLOWER (at most %d allowed)",
			 wrong, timed, AA_MAX_FALSE);
		if (tries_note(&tr, others, timed == 16 && wrong <= AA_MAX_FALSE, what))
			return;
	}
	tries_end(&tr, "A/A");
}

FA_TEST(compare, planted_slowdown_found)
{
	char db[1200], copy[1200], label[16], la[32], lb[32], what[256];
	static char *extra[] = {"--kernels", "test_delay", "--param", "b:test_delay.delay_pct=5",
				NULL};
	struct fa_proc_result r;
	struct tries tr = {0, 0, 1e9, ""};
	int counts[4];
	if (timing_study_skipped())
		return;
	snprintf(db, sizeof db, "%s/planted.db", fa_test_tmpdir());
	unlink(db);
	if (!plugin_copy(copy, sizeof copy)) {
		fa_test_fail(__FILE__, __LINE__, "cannot copy the test plugin");
		return;
	}
	for (int t = 0; t < E2E_TRIES; t++) {
		struct busy b0, b1;
		snprintf(label, sizeof label, "pl%d", t);
		snprintf(la, sizeof la, "%s-a", label);
		snprintf(lb, sizeof lb, "%s-b", label);
		busy_read(&b0);
		if (!run_ab(db, label, copy, extra))
			return;
		busy_read(&b1);
		double others = busy_others(&b0, &b1);
		/* without --ignore-params the two sides do not match at all */
		char *csv = NULL;
		FA_CHECK(count_verdicts(db, la, lb, 0, counts, &csv) == 0);
		FA_CHECK(csv && strstr(csv, ",removed,") && strstr(csv, ",added,"));
		free(csv);
		if (t == 0) { /* and the markdown says what to do, and that samples are paired */
			fa_proc_run((char *[]){"compare", "--db", db, la, lb, NULL}, NULL, 60, &r);
			FA_CHECK(r.status == 0 && strstr(r.out, "--ignore-params compares them"));
			fa_proc_free(&r);
			fa_proc_run((char *[]){"compare", "--db", db, "--ignore-params", la, lb, NULL},
				    NULL, 60, &r);
			FA_CHECK(r.status == 0 && strstr(r.out, "- paired: the two runs of one"));
			fa_proc_free(&r);
		}
		int timed = count_verdicts(db, la, lb, 1, counts, NULL);
		printf("  planted 5%%, try %d: %d slower, %d noisy, %d same, %d faster of %d rows; "
		       "other processes used %.2f cores\n",
		       t + 1, counts[FA_PERF_SLOWER], counts[FA_PERF_NOISY], counts[FA_PERF_SAME],
		       counts[FA_PERF_FASTER], timed, others);
		FA_CHECK(timed == 8);
		/* at least 95% of the cases: all 8 */
		snprintf(what, sizeof what, "%d of %d rows SLOWER, %d FASTER", counts[FA_PERF_SLOWER],
			 timed, counts[FA_PERF_FASTER]);
		if (tries_note(&tr, others,
			       timed == 8 && counts[FA_PERF_SLOWER] == 8 && !counts[FA_PERF_FASTER],
			       what))
			return;
	}
	tries_end(&tr, "planted slowdown");
}


/* Imported rows nobody checked are compared on time like passes but counted
 * apart: they never make a run look verified. */
FA_TEST(compare, unchecked_imports_counted_apart)
{
	char path[1200];
	struct fa_store *s;
	struct fa_compare cmp;
	struct fa_err err;
	int unchecked_rows = 0;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;
	snprintf(path, sizeof path, "%s/families.db", fa_test_tmpdir());
	s = fa_fixture_open_built(path, fa_fixture_build_families, "the families fixture");
	FA_REQUIRE(s);
	fa_err_clear(&err);
	FA_REQUIRE(fa_compare_build(s, "1", "1", NULL, &cmp, &err) == FA_OK);
	FA_CHECKF(cmp.n_unchecked == 5, "unchecked %d", cmp.n_unchecked);
	for (int i = 0; i < cmp.n_rows; i++)
		if (strcmp(cmp.rows[i].kernel, "torch_sdpa_flash") == 0) {
			unchecked_rows++;
			FA_CHECK(cmp.rows[i].head_status == FA_STATUS_UNCHECKED);
			FA_CHECK(cmp.rows[i].change == FA_CMP_TIMED);
		} else {
			FA_CHECK(cmp.rows[i].head_status != FA_STATUS_UNCHECKED);
		}
	FA_CHECK(unchecked_rows == 5);
	f = open_memstream(&buf, &len);
	FA_REQUIRE(f);
	FA_CHECK(fa_compare_write(&cmp, FA_FMT_MD, f, &err) == FA_OK);
	fclose(f);
	FA_CHECKF(strstr(buf, "- unchecked: 5 rows hold results imported from another tool that "
			      "nobody checked against the reference (timed, not verified)\n") != NULL,
		  "%s", buf);
	free(buf);
	fa_compare_free(&cmp);
	fa_store_close(s);
}

