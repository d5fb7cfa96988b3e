/* test_import_report.c - fabench import of fabench's own reports (report
 * --format csv and --format json): the cases come back with the keys they
 * had, and each result with its status, reason and times. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fixture.h"
#include "proc.h"
#include "test.h"

static void path_in(char *buf, size_t size, const char *name)
{
	snprintf(buf, size, "%s/%s", fa_test_tmpdir(), name);
	unlink(buf);
}

/* The (key, kernel, status, reason, median) of every result of a database,
 * sorted and joined (malloc'd). */
static char *results_of(const char *db)
{
	return fa_test_db_text(
		db, "SELECT group_concat(x, ';') FROM (SELECT c.key || '|' || r.kernel || '|' || "
		    "r.status || '|' || coalesce(r.reason, '') || '|' || coalesce(printf('%.6g', "
		    "r.median_ms), '') AS x FROM results r JOIN cases c ON c.id = r.case_id ORDER BY x)");
}

/* Writes db's report in format fmt to STEM.fmt and imports it into a fresh
 * STEM-fmt.db, whose path goes to out; both commands must succeed. */
static void report_then_import(const char *db, const char *fmt, const char *stem, char *out,
			       size_t out_size)
{
	char rep[1024], name[64];
	struct fa_proc_result r;
	snprintf(name, sizeof name, "%s.%s", stem, fmt);
	path_in(rep, sizeof rep, name);
	snprintf(name, sizeof name, "%s-%s.db", stem, fmt);
	path_in(out, out_size, name);
	fa_proc_run((char *[]){"report", "--db", (char *)db, "--format", (char *)fmt, "--output",
			       rep, NULL},
		    NULL, 120, &r);
	FA_CHECKF(r.status == 0, "report %s: %s", fmt, r.err);
	fa_proc_free(&r);
	fa_proc_run((char *[]){"import", rep, "--db", out, NULL}, NULL, 120, &r);
	FA_CHECKF(r.status == 0, "import %s: %d %s", fmt, r.status, r.err);
	fa_proc_free(&r);
}

FA_TEST(import, own_reports_import_as_written)
{
	static const char *const formats[] = {"csv", "json"};
	char db[1024];
	struct fa_proc_result r;
	path_in(db, sizeof db, "own.db");
	/* smoke.yaml on the CPU: varlen batches, every mask, an explicit scale;
	 * the budget skips the dense kernel where its scores do not fit */
	fa_proc_run((char *[]){"run", "suites/smoke.yaml", "--backend", "cpu", "--mem-budget",
			       "200K", "--db", db, "--quiet", NULL},
		    NULL, 600, &r);
	FA_REQUIRE(r.status == 0);
	fa_proc_free(&r);
	char *want = results_of(db);
	FA_REQUIRE(want);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM cases WHERE varlen = 1") > 0);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM results WHERE status = 'skip'") > 0);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM cases WHERE scale_set = 1") > 0);
	for (size_t i = 0; i < 2; i++) {
		char out[1024];
		report_then_import(db, formats[i], "own", out, sizeof out);
		char *got = results_of(out);
		FA_CHECKF(got && strcmp(got, want) == 0, "%s: the imported results differ:\n%.400s\nvs\n%.400s",
			  formats[i], got ? got : "(none)", want);
		free(got);
		FA_CHECK(fa_test_db_int(out, "SELECT count(*) FROM cases") ==
			 fa_test_db_int(db, "SELECT count(*) FROM cases"));
	}
	/* a report written as version 1 (its members are version 2's) imports
	 * the same, as docs/json.md promises */
	char rep[1024], v1[1024], out[1024];
	snprintf(rep, sizeof rep, "%s/own.json", fa_test_tmpdir()); /* kept, not unlinked */
	path_in(v1, sizeof v1, "own-v1.json");
	path_in(out, sizeof out, "own-v1.db");
	char *text = fa_test_read_file(rep, NULL), *at = text ? strstr(text, "\"schema_version\": 2,") : NULL;
	FA_REQUIRE(at);
	at[strlen("\"schema_version\": ")] = '1';
	FA_REQUIRE(fa_test_write_file(v1, text) == 0);
	free(text);
	fa_proc_run((char *[]){"import", v1, "--db", out, NULL}, NULL, 120, &r);
	FA_CHECKF(r.status == 0, "import of a version-1 report: %d %s", r.status, r.err);
	fa_proc_free(&r);
	char *got = results_of(out);
	FA_CHECK(got && strcmp(got, want) == 0);
	free(got);
	free(want);
}

/* The cells of one CSV line (RFC 4180 quoting, no newline inside a cell
 * here), written over line; at most max, their count returned. */
static int csv_split(char *line, char **cells, int max)
{
	int n = 0;
	char *p = line;
	while (n < max) {
		char *w = p;
		cells[n++] = w;
		if (*p == '"') {
			for (p++; *p; p++) {
				if (*p == '"' && p[1] == '"') {
					*w++ = '"';
					p++;
				} else if (*p == '"') {
					p++;
					break;
				} else {
					*w++ = *p;
				}
			}
		} else {
			while (*p && *p != ',')
				*w++ = *p++;
		}
		if (*p != ',') {
			*w = '\0';
			break;
		}
		*w = '\0';
		p++;
	}
	return n;
}

static int csv_col(char **head, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (strcmp(head[i], name) == 0)
			return i;
	return -1;
}

/* The gradients of every result of a database, per (key, kernel, params,
 * tensor), with cols (a SQL list of grad_stats g's columns, qualified: the
 * results have some of the same names) at full precision, sorted and joined
 * (malloc'd; "" when the query fails or finds nothing, which the callers
 * refuse). */
static char *grads_of(const char *db, const char *cols)
{
	char sql[1024];
	snprintf(sql, sizeof sql,
		 "SELECT group_concat(x, ';') FROM (SELECT c.key || '|' || r.kernel || '|' || "
		 "coalesce(r.params, '') || '|' || g.tensor || '|' || printf('%s', %s) AS x "
		 "FROM grad_stats g JOIN results r ON r.id = g.result_id JOIN cases c ON "
		 "c.id = r.case_id ORDER BY x)",
		 "%!.17g|%!.17g|%!.17g|%d|%d|%d", cols);
	return fa_test_db_text(db, sql);
}

FA_TEST(import, bwd_report_csv_carries_gradients_and_round_trips)
{
	static const char *const tensors[] = {"dq", "dk", "dv"};
	static const char *const stats[] = {"max_abs", "rel_l2", "nmse", "unwritten"};
	char db[1024], csv[1024], json[1024], out[1024], *text, *line, *save = NULL;
	char *head[80], *cells[80];
	int nh, rows = 0;
	struct fa_proc_result r;
	path_in(db, sizeof db, "bwd.db");
	path_in(csv, sizeof csv, "bwd.csv");
	path_in(json, sizeof json, "bwd.json");
	fa_proc_run((char *[]){"run", "tests/suites/bwd.yaml", "--backend", "cpu", "--kernels",
			       "cpu_flash_bwd", "--db", db, "--quiet", NULL},
		    NULL, 600, &r);
	FA_REQUIRE(r.status == 0);
	fa_proc_free(&r);
	/* every result has its three gradients, none of them zero */
	FA_REQUIRE(fa_test_db_int(db, "SELECT count(*) FROM results") == 8);
	FA_REQUIRE(fa_test_db_int(db, "SELECT count(*) FROM grad_stats WHERE max_abs > 0") == 24);
	fa_proc_run((char *[]){"report", "--db", db, "--format", "csv", "--output", csv, NULL},
		    NULL, 120, &r);
	FA_REQUIRE(r.status == 0);
	fa_proc_free(&r);

	/* each row's dq_/dk_/dv_ columns hold the stored values, bit for bit
	 * (SQLite's printf gives 17 digits only with its ! flag) */
	text = fa_test_read_file(csv, NULL);
	FA_REQUIRE(text);
	line = strtok_r(text, "\n", &save);
	FA_REQUIRE(line);
	nh = csv_split(line, head, 80);
	FA_REQUIRE(csv_col(head, nh, "pass") >= 0 && csv_col(head, nh, "case_key") >= 0);
	while ((line = strtok_r(NULL, "\n", &save))) {
		int nc = csv_split(line, cells, 80);
		const char *key = cells[csv_col(head, nh, "case_key")];
		FA_REQUIRE(nc == nh);
		FA_CHECKF(strstr(key, ",pass=") != NULL && strcmp(cells[csv_col(head, nh, "pass")],
								   strstr(key, ",pass=") + 6) == 0,
			  "pass '%s' of '%s'", cells[csv_col(head, nh, "pass")], key);
		for (int t = 0; t < 3; t++)
			for (int s = 0; s < 4; s++) {
				char name[64], sql[1024];
				int col;
				snprintf(name, sizeof name, "%s_%s", tensors[t], stats[s]);
				col = csv_col(head, nh, name);
				FA_REQUIRE(col >= 0);
				FA_REQUIRE(strchr(key, '\'') == NULL);
				snprintf(sql, sizeof sql,
					 "SELECT printf('%%!.17g', g.%s) FROM grad_stats g JOIN results "
					 "r ON r.id = g.result_id JOIN cases c ON c.id = r.case_id WHERE "
					 "c.key = '%s' AND g.tensor = '%s'",
					 stats[s], key, tensors[t]);
				char *want = fa_test_db_text(db, sql);
				FA_REQUIRE(want && *want);
				FA_CHECKF(*cells[col] && strtod(cells[col], NULL) == strtod(want, NULL),
					  "%s of %s: csv '%s', stored %s", name, key, cells[col], want);
				free(want);
			}
		rows++;
	}
	FA_CHECKF(rows == 8, "%d rows", rows);
	free(text);

	/* the CSV and the JSON report import with their gradients: the CSV's
	 * columns, and every statistic the JSON has that import stores */
	fa_proc_run((char *[]){"report", "--db", db, "--format", "json", "--output", json, NULL},
		    NULL, 120, &r);
	FA_REQUIRE(r.status == 0);
	fa_proc_free(&r);
	{
		/* what each format has (an unknown count stored as NULL reads -1) */
		static const char csv_cols[] =
		    "g.max_abs, g.rel_l2, g.nmse, coalesce(g.unwritten, -1), 0, 0";
		static const char json_cols[] = "g.max_abs, g.max_rel, g.mean_abs, g.nan_count, "
						"g.rows_checked, coalesce(g.unwritten, -1)";
		char *want_csv = grads_of(db, csv_cols);
		char *want_json = grads_of(db, json_cols);
		char *got;
		FA_REQUIRE(want_csv && *want_csv && want_json && *want_json);
		path_in(out, sizeof out, "bwd-csv.db");
		fa_proc_run((char *[]){"import", csv, "--db", out, NULL}, NULL, 120, &r);
		FA_CHECKF(r.status == 0, "import csv: %s", r.err);
		fa_proc_free(&r);
		got = grads_of(out, csv_cols);
		FA_CHECK(fa_test_db_int(out, "SELECT count(*) FROM grad_stats WHERE unwritten = 0") ==
			 24);
		FA_CHECKF(got && want_csv && strcmp(got, want_csv) == 0, "csv:\n%.300s\nvs\n%.300s",
			  got ? got : "(none)", want_csv ? want_csv : "(none)");
		free(got);
		path_in(out, sizeof out, "bwd-json.db");
		fa_proc_run((char *[]){"import", json, "--db", out, NULL}, NULL, 120, &r);
		FA_CHECKF(r.status == 0, "import json: %s", r.err);
		fa_proc_free(&r);
		got = grads_of(out, json_cols);
		FA_CHECKF(got && want_json && strcmp(got, want_json) == 0,
			  "json:\n%.300s\nvs\n%.300s", got ? got : "(none)",
			  want_json ? want_json : "(none)");
		FA_CHECK(fa_test_db_int(out, "SELECT count(*) FROM cases WHERE pass = 'bwd'") == 4);
		free(got);
		free(want_csv);
		free(want_json);
	}
}

/* The params of a tuning run (fabench's own, --param) come back from its
 * reports as they were: what fabench writes, import takes. */
FA_TEST(import, report_params_import_as_written)
{
	static const char *const formats[] = {"csv", "json"};
	static const char sql[] =
		"SELECT group_concat(x, ';') FROM (SELECT c.key || '|' || r.kernel || '|' || "
		"r.params AS x FROM results r JOIN cases c ON c.id = r.case_id ORDER BY x)";
	char db[1024];
	struct fa_proc_result r;
	path_in(db, sizeof db, "params.db");
	fa_proc_run((char *[]){"run", "tests/suites/tiny.yaml", "--backend", "cpu", "--kernels",
			       "cpu_flash", "--where", "q_len == 16", "--param",
			       "cpu_flash.block_q=8,32", "--param", "cpu_flash.block_k=16", "--db", db,
			       "--quiet", NULL},
		    NULL, 300, &r);
	FA_REQUIRE(r.status == 0);
	fa_proc_free(&r);
	char *want = fa_test_db_text(db, sql);
	FA_REQUIRE(want && strstr(want, "|cpu_flash|block_q=8,block_k=16") &&
		   strstr(want, "|cpu_flash|block_q=32,block_k=16"));
	for (size_t i = 0; i < 2; i++) {
		char out[1024];
		report_then_import(db, formats[i], "params", out, sizeof out);
		char *got = fa_test_db_text(out, sql);
		FA_CHECKF(got && strcmp(got, want) == 0, "%s: params differ:\n%s\nvs\n%s", formats[i],
			  got ? got : "(none)", want);
		free(got);
	}
	free(want);
}

/* A run whose cases carry models, tags and a depth: its CSV and JSON
 * reports import back with the same labels (model or not, layers) and
 * depths (a report with labels did not import: 'unknown column models');
 * the CSV carries a free tag's own layers in label_layers. */
FA_TEST(import, report_labels_and_depth_import_as_written)
{
	static const char *const formats[] = {"csv", "json"};
	char db[1024], suite[1024];
	struct fa_proc_result r;
	path_in(db, sizeof db, "labels.db");
	path_in(suite, sizeof suite, "labels.yaml");
	FA_REQUIRE(fa_test_write_file(suite,
				      "suite: labels\n"
				      "defaults: {dtype: fp32, mask: causal, q_len: 2, kv_len: depth + "
				      "q_len, depth: 30}\n"
				      "groups:\n"
				      "  - axes: {model: [llama3-8b, qwen3-4b]}\n"
				      "  - defaults: {heads: 4, head_dim: 32, tag: draft, layers: 12}\n") ==
		   0);
	fa_proc_run((char *[]){"run", suite, "--backend", "cpu", "--kernels", "cpu_flash", "--db",
			       db, "--quiet", NULL},
		    NULL, 300, &r);
	FA_REQUIRE(r.status == 0);
	fa_proc_free(&r);
	const char *sql = "SELECT group_concat(c.key || '|' || t.name || '|' || t.model || '|' || "
			  "coalesce(t.layers, 0) || '|' || d.depth, ';') FROM (SELECT * FROM case_tags ORDER BY "
			  "case_id, seq) t JOIN cases c ON c.id = t.case_id JOIN case_depth d ON "
			  "d.case_id = c.id";
	char *want = fa_test_db_text(db, sql);
	FA_REQUIRE(want && strstr(want, "|llama3-8b|1|32|30") && strstr(want, "|qwen3-4b|1|36|30") &&
		   strstr(want, "|draft|0|12|30"));
	for (size_t i = 0; i < 2; i++) {
		char out[1024];
		report_then_import(db, formats[i], "labels", out, sizeof out);
		char *got = fa_test_db_text(out, sql);
		FA_CHECKF(got && strcmp(got, want) == 0, "%s: labels differ:\n%s\nvs\n%s",
			  formats[i], got ? got : "(null)", want);
		free(got);
	}
	free(want);
}

/* A suite of varlen batches with empty sequences (no queries, queries over
 * no keys, the first and the last empty) runs end to end on the CPU: every
 * kernel passes every case, the FLOPs and bytes stored are the exact counts
 * (a sequence with no queries or no keys adds no pair; the keys that no
 * query reads are not charged), and the reports import back with the same
 * keys (seqlens=0/5/3) and results. */
FA_TEST(import, empty_sequences_run_and_round_trip)
{
	static const char *const formats[] = {"csv", "json"};
	char db[1024];
	struct fa_proc_result r;
	path_in(db, sizeof db, "empty.db");
	fa_proc_run((char *[]){"run", "tests/suites/empty-seqs.yaml", "--backend", "cpu", "--db", db,
			       "--quiet", NULL},
		    NULL, 600, &r);
	FA_REQUIRE(r.status == 0);
	FA_CHECK(strstr(r.out, "8 cases in") && strstr(r.out, "16 pass, 0 fail"));
	fa_proc_free(&r);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM results WHERE status = 'pass' AND "
				    "unwritten = 0 AND nan_count = 0 AND rows_checked > 0") == 16);
	/* seqlens 0/5/3 over 4/6/0, 2 heads over 1, head size 8, bf16: 5 x 6
	 * pairs x 2 heads x 2 x 16 FLOPs; Q of the 5 queries with keys, K and
	 * V of the 6 keys with queries, O of all 8 rows, 2 bytes each */
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM results r JOIN cases c ON c.id = r.case_id "
				    "WHERE c.seqlens = '0/5/3' AND c.kv_seqlens = '4/6/0' AND "
				    "c.mask = 'none' AND c.pass = 'fwd' AND r.flops = 1920 AND "
				    "r.bytes = 2 * (5 * 2 * 8 + 6 * 8 * 2 + 8 * 2 * 8)") == 2);
	/* its backward: Q, K, V, O and dO read where needed, every row of dQ,
	 * dK and dV written (the zeros of the other sides too) */
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM results r JOIN cases c ON c.id = r.case_id "
				    "WHERE c.seqlens = '0/5/3' AND c.pass = 'bwd' AND "
				    "r.flops = 2.5 * 1920 AND r.bytes = 2 * (80 + 96 + 80 + 80 + "
				    "8 * 2 * 8 + 10 * 8 + 10 * 8)") == 2);
	char *want = results_of(db);
	FA_REQUIRE(want);
	FA_CHECK(strstr(want, "seqlens=0/17/0/9/0,kv_seqlens=0/17/0/30/0") != NULL);
	for (size_t i = 0; i < 2; i++) {
		char out[1024];
		report_then_import(db, formats[i], "empty", out, sizeof out);
		char *got = results_of(out);
		FA_CHECKF(got && strcmp(got, want) == 0,
			  "%s: the imported results differ:\n%.400s\nvs\n%.400s", formats[i],
			  got ? got : "(none)", want);
		free(got);
		FA_CHECK(fa_test_db_int(out, "SELECT count(*) FROM results r JOIN cases c ON "
					     "c.id = r.case_id WHERE c.seqlens = '0/5/3' AND "
					     "c.mask = 'none' AND c.pass = 'fwd' AND r.flops = 1920 AND "
					     "r.bytes = 608") == 2);
		/* the counts come back too: elements never written (0 here, not
		 * unknown) from both; NaNs and rows checked from the JSON, which
		 * has them (the CSV has not) */
		FA_CHECKF(fa_test_db_int(out, i == 0 ? "SELECT count(*) FROM results WHERE status = "
						       "'pass' AND unwritten = 0"
						     : "SELECT count(*) FROM results WHERE status = "
						       "'pass' AND unwritten = 0 AND nan_count = 0 AND "
						       "rows_checked > 0") == 16,
			  "%s: the counts", formats[i]);
	}
	free(want);
}
