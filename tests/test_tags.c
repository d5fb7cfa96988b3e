/* test_tags.c - model presets, free tags, depth and derived parameters:
 * what a suite expands to (shapes shared by several models keep every
 * name, suites/llama-pr.yaml's 144 rows in 90 cases), filters on them, the
 * store (case_tags and case_depth, and the migration from schema 3), and
 * the report's tokens/s per model. The errors are golden files under
 * suites/bad/ (test_badsuites.c). */
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../harness/base/arena.h"
#include "../harness/report/report.h"
#include "../harness/store/reader.h"
#include "../harness/store/store.h"
#include "../harness/suite/expr.h"
#include "../harness/suite/models.h"
#include "../harness/suite/suite.h"
#include "golden.h"
#include "proc.h"
#include "test.h"

/* Loads text written to a file of the test folder into s. */
static enum fa_rc load_text(const char *name, const char *text, struct fa_suite *s,
			    struct fa_err *err)
{
	char path[1024];
	snprintf(path, sizeof path, "%s/%s", fa_test_tmpdir(), name);
	FILE *f = fopen(path, "w");
	if (!f)
		return FA_ERR_IO;
	fputs(text, f);
	fclose(f);
	memset(s, 0, sizeof *s);
	fa_err_clear(err);
	return fa_suite_load(path, 0, s, err);
}

static int has_tag(const struct fa_case *c, const char *name)
{
	for (int k = 0; k < c->n_tags; k++)
		if (strcmp(c->tags[k].name, name) == 0)
			return 1;
	return 0;
}

FA_TEST(tags, presets_shape_and_layers)
{
	struct fa_suite s;
	struct fa_err err;
	FA_REQUIRE(load_text("p.yaml",
			     "defaults: {q_len: 1, kv_len: 1k}\n"
			     "axes:\n  model: [gpt-oss-20b, llama3-70b, qwen3-vl-vit]\n",
			     &s, &err) == FA_OK);
	FA_REQUIRE(s.n_cases == 3);
	const struct fa_problem *p = &s.cases[0].p;
	FA_CHECK(p->heads == 64 && p->kv_heads == 8 && p->head_dim == 64 && p->head_dim_v == 64);
	FA_CHECK(s.cases[0].n_tags == 1 && s.cases[0].tags[0].model == 1 &&
		 s.cases[0].tags[0].layers == 24 && has_tag(&s.cases[0], "gpt-oss-20b"));
	FA_CHECK(s.cases[1].p.heads == 64 && s.cases[1].p.head_dim == 128 &&
		 s.cases[1].tags[0].layers == 80);
	FA_CHECK(s.cases[2].p.head_dim == 72 && s.cases[2].p.kv_heads == 16 &&
		 s.cases[2].tags[0].layers == 27);
	fa_suite_free(&s);

	/* every preset is a valid attention shape */
	for (int i = 0; fa_models[i].name; i++) {
		const struct fa_model *m = &fa_models[i];
		FA_CHECKF(m->heads > 0 && m->kv_heads > 0 && m->heads % m->kv_heads == 0 &&
				  m->head_dim > 0 && m->layers > 0 && m->source,
			  "preset %s", m->name);
		FA_CHECK(fa_model_lookup(m->name) == i);
	}
	FA_CHECK(fa_model_lookup("llama3-8") < 0);
	FA_CHECK(fa_model_suggest("llama3-8") && strcmp(fa_model_suggest("llama3-8"), "llama3-8b") == 0);

	/* layers overrides the preset's; a model and a tag are both kept; the
	 * preset's shape fills only what the case does not give */
	FA_REQUIRE(load_text("o.yaml",
			     "defaults: {q_len: 1, kv_len: 1k, model: llama3-8b, layers: 4,\n"
			     "           tag: draft model, head_dim_v: 128}\n",
			     &s, &err) == FA_OK);
	FA_REQUIRE(s.n_cases == 1 && s.cases[0].n_tags == 2);
	FA_CHECK(s.cases[0].tags[0].layers == 4 && strcmp(s.cases[0].tags[1].name, "draft model") == 0 &&
		 s.cases[0].tags[1].model == 0 && s.cases[0].tags[1].layers == 0);
	fa_suite_free(&s);
}

/* Two models of one shape make one case that keeps both names, and where /
 * exclude see the labels, depth and layers. */
FA_TEST(tags, shared_shape_keeps_every_name)
{
	struct fa_suite s;
	struct fa_err err;
	FA_REQUIRE(load_text("s.yaml",
			     "defaults: {mask: causal, kv_len: depth + q_len}\n"
			     "axes:\n  model: [llama3-8b, qwen3-4b, qwen3-30b-a3b]\n"
			     "  q_len: [1, 16]\n  depth: [8k, 16k]\n",
			     &s, &err) == FA_OK);
	FA_REQUIRE(s.n_cases == 8); /* 12 combinations, 2 shapes */
	for (int i = 0; i < 4; i++) {
		FA_CHECK(s.cases[i].n_tags == 2 && has_tag(&s.cases[i], "llama3-8b") &&
			 has_tag(&s.cases[i], "qwen3-4b"));
		FA_CHECK(s.cases[i].tags[0].layers == 32 && s.cases[i].tags[1].layers == 36);
	}
	FA_CHECK(s.cases[4].n_tags == 1 && has_tag(&s.cases[4], "qwen3-30b-a3b"));
	FA_CHECK(s.cases[0].depth == 8192 && s.cases[0].p.kv_len == 8193 && s.cases[0].p.q_len == 1);
	FA_CHECK(s.cases[3].depth == 16384 && s.cases[3].p.kv_len == 16400);
	FA_CHECK(fa_suite_filter(&s, "depth == 16k && q_len == 16", &err) == FA_OK);
	FA_CHECK(s.n_cases == 2 && s.cases[0].p.kv_len == 16400);
	fa_suite_free(&s);

	/* exclude by model keeps a shared case for the other model */
	FA_REQUIRE(load_text("x.yaml",
			     "defaults: {q_len: 1, kv_len: 1k}\n"
			     "axes:\n  model: [llama3-8b, qwen3-4b, gpt-oss-20b]\n"
			     "exclude:\n  - {model: [llama3-8b, gpt-oss-20b]}\n",
			     &s, &err) == FA_OK);
	FA_REQUIRE(s.n_cases == 1);
	FA_CHECK(s.cases[0].n_tags == 1 && has_tag(&s.cases[0], "qwen3-4b"));
	fa_suite_free(&s);
	FA_REQUIRE(load_text("l.yaml",
			     "defaults: {q_len: 1, kv_len: 1k}\n"
			     "axes:\n  model: [llama3-8b, gpt-oss-20b]\n"
			     "exclude:\n  - {layers: [24]}\n  - {tag: [none]}\n",
			     &s, &err) == FA_OK);
	FA_CHECK(s.n_cases == 1 && has_tag(&s.cases[0], "llama3-8b"));
	fa_suite_free(&s);

	/* depth without kv_len: kv_len = depth + q_len; an explicit kv_len wins */
	FA_REQUIRE(load_text("d.yaml",
			     "defaults: {heads: 8, head_dim: 64, q_len: 4, depth: 100}\n"
			     "axes:\n  kv_len: [50, depth * 2 + q_len]\n",
			     &s, &err) == FA_OK);
	FA_REQUIRE(s.n_cases == 2);
	FA_CHECK(s.cases[0].p.kv_len == 50 && s.cases[1].p.kv_len == 204);
	fa_suite_free(&s);
	FA_REQUIRE(load_text("d2.yaml", "defaults: {heads: 8, head_dim: 64, q_len: 4, depth: 100}\n",
			     &s, &err) == FA_OK);
	FA_CHECK(s.n_cases == 1 && s.cases[0].p.kv_len == 104 && s.cases[0].depth == 100);
	fa_suite_free(&s);
	/* a derived value may be filtered away before its error counts */
	FA_REQUIRE(load_text("f.yaml",
			     "defaults: {heads: 8, head_dim: 64, kv_len: q_len - 8}\n"
			     "axes:\n  q_len: [4, 16]\n"
			     "where: q_len > 8\n",
			     &s, &err) == FA_OK);
	FA_CHECK(s.n_cases == 1 && s.cases[0].p.kv_len == 8);
	fa_suite_free(&s);
}

/* Repeats of one case keep what each says: the same layer count twice is
 * no conflict, and a repeat gives the case what it lacked (a tag's layers,
 * a depth); different values are errors (suites/bad/layers_conflict*.yaml,
 * depth_kv_*.yaml). */
FA_TEST(tags, repeats_fill_what_the_case_lacks)
{
	struct fa_suite s;
	struct fa_err err;
	/* the preset's 32 given again, and 10 twice */
	FA_REQUIRE(load_text("same.yaml",
			     "defaults: {q_len: 4, kv_len: 20}\n"
			     "groups:\n"
			     "  - axes: {model: [llama3-8b]}\n"
			     "  - axes: {model: [llama3-8b]}\n    defaults: {layers: 32}\n"
			     "  - axes: {model: [qwen3-4b]}\n    defaults: {layers: 10}\n"
			     "  - axes: {model: [qwen3-4b]}\n    defaults: {layers: 10}\n",
			     &s, &err) == FA_OK);
	FA_REQUIRE(s.n_cases == 1 && s.cases[0].n_tags == 2);
	FA_CHECK(s.cases[0].tags[0].layers == 32 && s.cases[0].tags[1].layers == 10);
	fa_suite_free(&s);
	/* a tag given no layers takes a repeat's */
	FA_REQUIRE(load_text("tag.yaml",
			     "defaults: {heads: 4, head_dim: 64, seq_len: 16, tag: foo}\n"
			     "groups:\n  - defaults: {}\n  - defaults: {layers: 7}\n"
			     "  - defaults: {}\n",
			     &s, &err) == FA_OK);
	FA_REQUIRE(s.n_cases == 1 && s.cases[0].n_tags == 1);
	FA_CHECK(s.cases[0].tags[0].layers == 7);
	fa_suite_free(&s);
	/* a case made without depth, then with one that makes the same kv_len:
	 * the case is labelled with it, and --where finds it */
	FA_REQUIRE(load_text("depth.yaml",
			     "defaults: {heads: 2, head_dim: 16, q_len: 4}\n"
			     "groups:\n"
			     "  - defaults: {kv_len: 20}\n"
			     "  - defaults: {depth: 16, kv_len: depth + q_len}\n"
			     "  - defaults: {kv_len: 20}\n",
			     &s, &err) == FA_OK);
	FA_REQUIRE(s.n_cases == 1);
	FA_CHECK(s.cases[0].depth == 16 && s.cases[0].p.kv_len == 20);
	FA_CHECK(fa_suite_filter(&s, "depth == 16", &err) == FA_OK && s.n_cases == 1);
	fa_suite_free(&s);
	/* one depth twice is no conflict, kv_len given or not */
	FA_REQUIRE(load_text("depth2.yaml",
			     "defaults: {heads: 2, head_dim: 16, q_len: 4, depth: 16}\n"
			     "groups:\n  - defaults: {kv_len: 20}\n  - defaults: {}\n",
			     &s, &err) == FA_OK);
	FA_CHECK(s.n_cases == 1 && s.cases[0].depth == 16);
	fa_suite_free(&s);
}

/* suites/llama-pr.yaml: seed 001's 8 models x 6 x 3 = 144 rows, 90 cases. */
FA_TEST(tags, llama_pr_grid)
{
	struct fa_suite s;
	struct fa_err err;
	static const char *const models[] = {"qwen3-30b-a3b", "gpt-oss-20b", "gpt-oss-120b",
					      "qwen3-4b",      "llama3-8b",   "qwen3-14b",
					      "qwen2-32b",     "llama3-70b"};
	memset(&s, 0, sizeof s);
	fa_err_clear(&err);
	FA_REQUIRE(fa_suite_load("suites/llama-pr.yaml", 0, &s, &err) == FA_OK);
	FA_CHECK(s.n_cases == 90);
	int tags = 0, per_model[8] = {0};
	for (int i = 0; i < s.n_cases; i++) {
		const struct fa_case *c = &s.cases[i];
		tags += c->n_tags;
		FA_CHECK(c->p.kv_len == c->depth + c->p.q_len && c->p.mask == FA_MASK_CAUSAL);
		for (int m = 0; m < 8; m++)
			per_model[m] += has_tag(c, models[m]);
	}
	FA_CHECK(tags == 144);
	for (int m = 0; m < 8; m++)
		FA_CHECKF(per_model[m] == 18, "%s on %d cases", models[m], per_model[m]);
	fa_suite_free(&s);
}

/* Tags and depth are stored, read back, reported as tokens/s. */
FA_TEST(tags, stored_and_reported)
{
	char path[1024];
	struct fa_store *st = NULL;
	struct fa_run_info ri;
	struct fa_suite s;
	struct fa_err err;
	int64_t run_id, case_id = 0;
	FA_REQUIRE(load_text("r.yaml",
			     "defaults: {mask: causal, q_len: 4, depth: 60}\n"
			     "axes:\n  model: [llama3-8b, qwen3-4b]\n",
			     &s, &err) == FA_OK);
	FA_REQUIRE(s.n_cases == 1);
	snprintf(path, sizeof path, "%s/tags.db", fa_test_tmpdir());
	unlink(path);
	FA_REQUIRE(fa_store_open(path, 1, &st, &err) == FA_OK);
	memset(&ri, 0, sizeof ri);
	ri.started_at = "2026-11-26T10:00:00Z";
	ri.backend = "cpu";
	ri.suite_name = "r";
	ri.seed = 1;
	FA_REQUIRE(fa_store_run_begin(st, &ri, &run_id, &err) == FA_OK);
	struct fa_result r;
	double samples[3] = {2.0, 2.0, 2.0};
	memset(&r, 0, sizeof r);
	r.kernel = "k";
	r.params = "";
	r.status = FA_STATUS_PASS;
	r.t.n = 3;
	r.t.median_ms = 2.0;
	r.samples = samples;
	r.tel = (struct fa_telemetry){NAN, NAN, NAN, NAN, -1};
	r.st.worst_index = -1;
	FA_REQUIRE(fa_store_case_commit(st, run_id, &s.cases[0], &r, 1, &case_id, &err) == FA_OK);
	FA_REQUIRE(fa_store_run_end(st, run_id, "complete", &err) == FA_OK);
	struct fa_case_tag *tags = NULL;
	int32_t n = 0;
	FA_REQUIRE(fa_store_case_tags(st, case_id, &tags, &n, &err) == FA_OK);
	FA_CHECK(n == 2 && strcmp(tags[0].name, "llama3-8b") == 0 && tags[0].layers == 32 &&
		 tags[0].model == 1 && strcmp(tags[1].name, "qwen3-4b") == 0 && tags[1].layers == 36);
	fa_store_tags_free(tags, n);
	sqlite3_stmt *q = NULL;
	FA_REQUIRE(sqlite3_prepare_v2(fa_store_db(st), "SELECT depth FROM case_depth WHERE case_id = ?",
				      -1, &q, NULL) == SQLITE_OK);
	sqlite3_bind_int64(q, 1, case_id);
	FA_CHECK(sqlite3_step(q) == SQLITE_ROW && sqlite3_column_int(q, 0) == 60);
	sqlite3_finalize(q);
	fa_store_close(st);
	fa_suite_free(&s);

	/* the report: 4 tokens in 2 ms through 32 layers = 62.5 tokens/s */
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	FA_REQUIRE(f);
	FA_REQUIRE(fa_store_open_readonly(path, &st, &err) == FA_OK);
	struct fa_report_opts ro;
	memset(&ro, 0, sizeof ro);
	ro.format = FA_FMT_MD;
	FA_CHECK(fa_report_write(st, run_id, &ro, f, &err) == FA_OK);
	fclose(f);
	FA_CHECK(buf && strstr(buf, "## Models\n"));
	FA_CHECK(buf && strstr(buf, "|   1 | llama3-8b |     32 |       62.5 |"));
	FA_CHECK(buf && strstr(buf, "|   1 | qwen3-4b  |     36 |       55.6 |"));
	free(buf);
	buf = NULL;
	f = open_memstream(&buf, &len);
	FA_REQUIRE(f);
	ro.format = FA_FMT_JSON;
	FA_CHECK(fa_report_write(st, run_id, &ro, f, &err) == FA_OK);
	fclose(f);
	FA_CHECK(buf && strstr(buf, "\"tags\": [{\"name\": \"llama3-8b\", \"model\": true, "
				    "\"layers\": 32, \"tokens_per_s\": 62.5}, "));
	free(buf);
	/* the readers behind plot, history and compare see the depth too, so
	 * their --where 'depth == N' selects as run's and tune's do (they read
	 * 0 once) */
	struct fa_arena a = {0};
	struct fa_reader_case *rc = NULL;
	struct fa_reader_result *rr = NULL;
	int nc = 0, nr = 0;
	FA_REQUIRE(fa_reader_cases(st, run_id, &a, &rc, &nc, &err) == FA_OK && nc == 1);
	FA_REQUIRE(fa_reader_results(st, run_id, "r", 0, &a, &rr, &nr, &err) == FA_OK && nr == 1);
	struct fa_case rcase;
	fa_reader_result_case(&rr[0], &rcase);
	FA_CHECK(rc[0].c.depth == 60 && rr[0].depth == 60 && rcase.depth == 60);
	struct fa_expr *e = NULL;
	FA_REQUIRE(fa_expr_parse("depth == 60 && kv_len == 64", NULL, &e, &err) == FA_OK);
	FA_CHECK(fa_expr_eval(e, &rc[0].c) && fa_expr_eval(e, &rcase));
	fa_expr_free(e);
	fa_arena_free(&a);
	fa_store_close(st);
}

/* The per-case table shows tokens/s beside the throughput: a run of two
 * cases, one shared by two models of 32 and 36 layers (two values), one of
 * a single model, two kernels; markdown, CSV and JSON are golden files. */
static void models_golden(int format, const char *name)
{
	static const char *const kernels[] = {"k1", "k2"};
	char path[1024];
	struct fa_store *st = NULL;
	struct fa_run_info ri;
	struct fa_suite s;
	struct fa_err err;
	int64_t run_id, case_id = 0;
	FA_REQUIRE(load_text("g.yaml",
			     "suite: models\n"
			     "defaults: {mask: causal, q_len: 4, depth: 60}\n"
			     "axes:\n  model: [llama3-8b, qwen3-4b, gpt-oss-20b]\n",
			     &s, &err) == FA_OK);
	FA_REQUIRE(s.n_cases == 2);
	snprintf(path, sizeof path, "%s/models-golden.db", fa_test_tmpdir());
	unlink(path);
	FA_REQUIRE(fa_store_open(path, 1, &st, &err) == FA_OK);
	memset(&ri, 0, sizeof ri);
	ri.started_at = "2026-11-26T10:00:00Z";
	ri.backend = "cpu";
	ri.suite_name = "models";
	ri.seed = 1;
	FA_REQUIRE(fa_store_run_begin(st, &ri, &run_id, &err) == FA_OK);
	for (int c = 0; c < s.n_cases; c++) {
		struct fa_result r[2];
		double samples[2][3] = {{2.0, 2.0, 2.0}, {0.5, 0.5, 0.5}};
		for (int k = 0; k < 2; k++) {
			memset(&r[k], 0, sizeof r[k]);
			r[k].kernel = kernels[k];
			r[k].params = "";
			r[k].status = FA_STATUS_PASS;
			r[k].t.n = 3;
			r[k].t.median_ms = r[k].t.mean_ms = r[k].t.min_ms = r[k].t.max_ms =
				samples[k][0] * (c + 1);
			r[k].samples = samples[k];
			r[k].bytes = 1e6 * (c + 1);
			r[k].gbps = r[k].bytes / (r[k].t.median_ms * 1e6);
			r[k].checked = 1;
			r[k].st.max_abs = 0.001;
			r[k].st.rows_checked = r[k].st.elems_checked = 4;
			snprintf(r[k].rule, sizeof r[k].rule, "tolerance");
			r[k].tel = (struct fa_telemetry){NAN, NAN, NAN, NAN, -1};
			r[k].st.worst_index = -1;
		}
		FA_REQUIRE(fa_store_case_commit(st, run_id, &s.cases[c], r, 2, &case_id, &err) ==
			   FA_OK);
	}
	FA_REQUIRE(fa_store_run_end(st, run_id, "complete", &err) == FA_OK);
	FA_REQUIRE(sqlite3_exec(fa_store_db(st),
				"UPDATE runs SET finished_at = '2026-11-26T10:00:01Z'", NULL, NULL,
				NULL) == SQLITE_OK);
	fa_store_close(st);
	fa_suite_free(&s);

	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	FA_REQUIRE(f);
	FA_REQUIRE(fa_store_open_readonly(path, &st, &err) == FA_OK);
	struct fa_report_opts ro;
	memset(&ro, 0, sizeof ro);
	ro.format = format;
	FA_CHECK(fa_report_write(st, run_id, &ro, f, &err) == FA_OK);
	fclose(f);
	fa_golden_check(name, buf, len);
	free(buf);
	fa_store_close(st);
}

FA_TEST(tags, golden_models_md) { models_golden(FA_FMT_MD, "report_models.md"); }
FA_TEST(tags, golden_models_csv) { models_golden(FA_FMT_CSV, "report_models.csv"); }
FA_TEST(tags, golden_models_json) { models_golden(FA_FMT_JSON, "report_models.json"); }

/* A database of schema 3 (no case_tags, no case_depth) upgrades in place. */
FA_TEST(tags, schema_3_upgrades)
{
	char path[1024];
	struct fa_store *st = NULL;
	struct fa_err err;
	sqlite3 *raw = NULL;
	snprintf(path, sizeof path, "%s/v3.db", fa_test_tmpdir());
	unlink(path);
	fa_err_clear(&err);
	FA_REQUIRE(fa_store_open(path, 1, &st, &err) == FA_OK);
	fa_store_close(st);
	FA_REQUIRE(sqlite3_open(path, &raw) == SQLITE_OK);
	/* a version-3 file: without what versions 4 (shards, devices), 5
	 * (build-matrix) and 6 (tags, depth) added */
	FA_REQUIRE(sqlite3_exec(raw, "DROP TABLE case_tags; DROP TABLE case_depth; "
				     "DROP TABLE build_results; DROP TABLE build_runs; "
				     "ALTER TABLE runs DROP COLUMN shard; ALTER TABLE runs DROP COLUMN devices; "
				     "ALTER TABLE runs DROP COLUMN merged_from; "
				     "ALTER TABLE results DROP COLUMN device; "
				     "ALTER TABLE cases DROP COLUMN pass; DROP TABLE grad_stats; ALTER TABLE runs DROP COLUMN uid; PRAGMA user_version = 3",
				NULL, NULL, NULL) == SQLITE_OK);
	sqlite3_close(raw);
	FA_REQUIRE(fa_store_open(path, 0, &st, &err) == FA_OK);
	sqlite3_stmt *q = NULL;
	FA_REQUIRE(sqlite3_prepare_v2(fa_store_db(st),
				      "SELECT (SELECT count(*) FROM sqlite_master WHERE name IN "
				      "('case_tags', 'case_depth')), (SELECT user_version FROM "
				      "pragma_user_version)",
				      -1, &q, NULL) == SQLITE_OK);
	FA_CHECK(sqlite3_step(q) == SQLITE_ROW && sqlite3_column_int(q, 0) == 2 &&
		 sqlite3_column_int(q, 1) == FA_STORE_SCHEMA_VERSION);
	sqlite3_finalize(q);
	fa_store_close(st);
}

/* compare names the models of each row where the cases carry labels, and
 * the depth where the suite gave one (seed 001's table: model x n_ubatch x
 * depth). */
FA_TEST(tags, compare_shows_models)
{
	char db[1024], suite[1024];
	struct fa_proc_result r;
	snprintf(db, sizeof db, "%s/cmp.db", fa_test_tmpdir());
	snprintf(suite, sizeof suite, "%s/m.yaml", fa_test_tmpdir());
	unlink(db);
	FILE *f = fopen(suite, "w");
	FA_REQUIRE(f);
	fputs("suite: m\n"
	      "measure: {warmup: 1, min_samples: 5, max_samples: 8, min_time_ms: 1, max_time_ms: 10}\n"
	      "defaults: {dtype: fp32, mask: causal, q_len: 1, depth: 30}\n"
	      "axes:\n  model: [llama3-8b, qwen3-4b]\n",
	      f);
	fclose(f);
	for (int i = 0; i < 2; i++) {
		char *run[] = {"run", suite, "--db", db, "--backend", "cpu", "--kernels", "cpu_flash",
			       "--label", i ? "head" : "base", "--quiet", NULL};
		fa_proc_run(run, NULL, 120, &r);
		FA_CHECKF(r.status == 0, "run: %d %s", r.status, r.err);
		fa_proc_free(&r);
	}
	char *cmp[] = {"compare", "--db", db, "base", "head", NULL};
	fa_proc_run(cmp, NULL, 60, &r);
	FA_CHECK(r.status == 0);
	FA_CHECKF(strstr(r.out, "| models              | depth | kernel ") &&
			  strstr(r.out, "| llama3-8b, qwen3-4b |    30 | cpu_flash"),
		  "%s", r.out);
	fa_proc_free(&r);
	char *js[] = {"compare", "--db", db, "--format", "json", "base", "head", NULL};
	fa_proc_run(js, NULL, 60, &r);
	/* the labels as report and list write them: objects with their layers */
	FA_CHECKF(r.status == 0 &&
			  strstr(r.out, ", \"tags\": [{\"name\": \"llama3-8b\", \"model\": true, "
					"\"layers\": 32}, {\"name\": \"qwen3-4b\", \"model\": true, "
					"\"layers\": 36}], \"depth\": 30, \"pass\": \"fwd\"}"),
		  "%s", r.out);
	fa_proc_free(&r);
	/* and CSV: the pass, the depth and the labels, appended */
	char *cs[] = {"compare", "--db", db, "--format", "csv", "base", "head", NULL};
	fa_proc_run(cs, NULL, 60, &r);
	FA_CHECKF(r.status == 0 && strstr(r.out, ",head_timing,pass,depth,models\n") &&
			  strstr(r.out, ",fwd,30,llama3-8b;qwen3-4b\n"),
		  "%s", r.out);
	fa_proc_free(&r);
	char *ls[] = {"list", suite, NULL};
	fa_proc_run(ls, NULL, 60, &r);
	FA_CHECK(r.status == 0 && strstr(r.out, "  [llama3-8b, qwen3-4b]\n"));
	fa_proc_free(&r);
}

/* A row's labels are those of both sides: one shape run as llama3-8b in
 * BASE and as qwen3-4b in HEAD names both (it named HEAD's alone), a
 * labelled BASE against an unlabelled HEAD keeps the models and depth
 * columns (they were dropped), and a pooled side gives the labels of all
 * its runs; in markdown, CSV and JSON alike. */
FA_TEST(tags, compare_joins_the_labels_of_both_sides)
{
	static const char *const suites[][2] = {
		{"llama", "axes:\n  model: [llama3-8b]\ndefaults: {depth: 30, "},
		{"qwen", "axes:\n  model: [qwen3-4b]\ndefaults: {depth: 30, "},
		/* the same case key, no label and no depth */
		{"plain", "defaults: {kv_len: 31, heads: 32, kv_heads: 8, head_dim: 128, "},
		/* llama3-8b again, with other layers: one name on the row */
		{"llama10", "axes:\n  model: [llama3-8b]\ndefaults: {depth: 30, layers: 10, "},
	};
	char db[1024], suite[1024];
	struct fa_proc_result r;
	snprintf(db, sizeof db, "%s/join.db", fa_test_tmpdir());
	unlink(db);
	for (int i = 0; i < 4; i++) {
		char text[512];
		snprintf(suite, sizeof suite, "%s/%s.yaml", fa_test_tmpdir(), suites[i][0]);
		snprintf(text, sizeof text,
			 "suite: m\n"
			 "measure: {warmup: 0, min_samples: 3, max_samples: 3, min_time_ms: 0, "
			 "max_time_ms: 10}\n"
			 "%sdtype: fp32, mask: causal, q_len: 1}\n",
			 suites[i][1]);
		FA_REQUIRE(fa_test_write_file(suite, text) == 0);
		/* run ids: llama 1, qwen 2, plain 3, llama10 4; labels pool (1, 2),
		 * plain and other */
		char *run[] = {"run", suite, "--db", db, "--backend", "cpu", "--kernels", "cpu_flash",
			       "--label", i < 2 ? "pool" : i == 2 ? "plain" : "other", "--quiet", NULL};
		fa_proc_run(run, NULL, 120, &r);
		FA_REQUIRE(r.status == 0);
		fa_proc_free(&r);
	}
	static const struct {
		const char *base, *head;
		const char *md, *csv, *json;
	} cases[] = {
		{"1", "2", "| llama3-8b, qwen3-4b |    30 | cpu_flash", ",fwd,30,llama3-8b;qwen3-4b\n",
		 "\"tags\": [{\"name\": \"llama3-8b\", \"model\": true, \"layers\": 32}, {\"name\": "
		 "\"qwen3-4b\", \"model\": true, \"layers\": 36}], \"depth\": 30,"},
		{"1", "3", "| llama3-8b |    30 | cpu_flash", ",fwd,30,llama3-8b\n",
		 "\"tags\": [{\"name\": \"llama3-8b\", \"model\": true, \"layers\": 32}], \"depth\": 30,"},
		{"3", "2", "| qwen3-4b |    30 | cpu_flash", ",fwd,30,qwen3-4b\n",
		 "\"tags\": [{\"name\": \"qwen3-4b\", \"model\": true, \"layers\": 36}], \"depth\": 30,"},
		/* pooled: the two runs labelled pool against plain, and back */
		{"plain", "pool", "| llama3-8b, qwen3-4b |    30 | cpu_flash",
		 ",fwd,30,llama3-8b;qwen3-4b\n", "{\"name\": \"qwen3-4b\", \"model\": true, "},
		{"pool", "plain", "| llama3-8b, qwen3-4b |    30 | cpu_flash",
		 ",fwd,30,llama3-8b;qwen3-4b\n", "{\"name\": \"qwen3-4b\", \"model\": true, "},
		/* one name with 32 and 10 layers: once, BASE's layers */
		{"1", "4", "| llama3-8b |    30 | cpu_flash", ",fwd,30,llama3-8b\n",
		 "\"tags\": [{\"name\": \"llama3-8b\", \"model\": true, \"layers\": 32}], \"depth\": 30,"},
		{"4", "1", "| llama3-8b |    30 | cpu_flash", ",fwd,30,llama3-8b\n",
		 "\"tags\": [{\"name\": \"llama3-8b\", \"model\": true, \"layers\": 10}], \"depth\": 30,"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		static const char *const formats[] = {"md", "csv", "json"};
		for (int k = 0; k < 3; k++) {
			const char *want = k == 0 ? cases[i].md : k == 1 ? cases[i].csv : cases[i].json;
			char *cmp[] = {"compare", "--db", db, "--format", (char *)formats[k],
				       (char *)cases[i].base, (char *)cases[i].head, NULL};
			fa_proc_run(cmp, NULL, 60, &r);
			FA_CHECKF(r.status == 0 && strstr(r.out, want),
				  "compare %s %s --format %s: status %d, no '%s' in:\n%s%s",
				  cases[i].base, cases[i].head, formats[k], r.status, want, r.out, r.err);
			fa_proc_free(&r);
		}
	}
}

/* tune names the models of each case and reads depth back from the store. */
FA_TEST(tags, tune_shows_models)
{
	char db[1024], suite[1024];
	struct fa_proc_result r;
	snprintf(db, sizeof db, "%s/tune.db", fa_test_tmpdir());
	snprintf(suite, sizeof suite, "%s/t.yaml", fa_test_tmpdir());
	unlink(db);
	FILE *f = fopen(suite, "w");
	FA_REQUIRE(f);
	fputs("suite: t\n"
	      "measure: {warmup: 1, min_samples: 5, max_samples: 8, min_time_ms: 1, max_time_ms: 10}\n"
	      "defaults: {dtype: fp32, mask: causal, q_len: 1}\n"
	      "axes:\n  model: [llama3-8b, qwen3-4b]\n  depth: [15, 31]\n",
	      f);
	fclose(f);
	char *argv[] = {"tune", suite, "--db", db, "--backend", "cpu", "--kernel", "cpu_flash",
			"--param", "block_q=8,64", "--where", "depth > 20", "--label", "t", NULL};
	fa_proc_run(argv, NULL, 120, &r);
	FA_CHECKF(r.status == 0, "tune: %d %s", r.status, r.err);
	FA_CHECK(strstr(r.out, "| models ") && strstr(r.out, "| llama3-8b, qwen3-4b |"));
	FA_CHECK(strstr(r.out, "- cases: 1, 1 with a timed value"));
	fa_proc_free(&r);
	char *again[] = {"tune", "--run", "t", "--db", db, "--where", "depth == 31", "--format",
			 "json", NULL};
	fa_proc_run(again, NULL, 60, &r);
	FA_CHECK(r.status == 0 && strstr(r.out, "\"models\": \"llama3-8b, qwen3-4b\""));
	fa_proc_free(&r);
}

/* Imported rows may name a model: the case gets its shape and label, and
 * rows of one shape for two models share the case with both names. */
FA_TEST(tags, import_names_models)
{
	char db[1024], file[1024];
	struct fa_proc_result r;
	snprintf(db, sizeof db, "%s/imp.db", fa_test_tmpdir());
	snprintf(file, sizeof file, "%s/rows.jsonl", fa_test_tmpdir());
	unlink(db);
	FILE *f = fopen(file, "w");
	FA_REQUIRE(f);
	fputs("{\"kernel\": \"peer_a\", \"q_len\": 4, \"depth\": 60, \"dtype\": \"bf16\", "
	      "\"mask\": \"causal\", \"model\": \"llama3-8b\", \"median_ms\": 2, \"status\": \"pass\"}\n"
	      "{\"kernel\": \"peer_b\", \"q_len\": 4, \"depth\": 60, \"dtype\": \"bf16\", "
	      "\"mask\": \"causal\", \"model\": \"qwen3-4b\", \"median_ms\": 2, \"status\": \"pass\"}\n",
	      f);
	fclose(f);
	char *imp[] = {"import", file, "--db", db, "--label", "peers", NULL};
	fa_proc_run(imp, NULL, 60, &r);
	FA_CHECKF(r.status == 0 && strstr(r.out, "2 results of 1 case"), "import: %d %s %s", r.status,
		  r.out, r.err);
	fa_proc_free(&r);
	char *rep[] = {"report", "--db", db, "--run", "peers", NULL};
	fa_proc_run(rep, NULL, 60, &r);
	FA_CHECK(r.status == 0 && strstr(r.out, "|   1 | llama3-8b |     32 |") &&
		 strstr(r.out, "|   1 | qwen3-4b  |     36 |") && strstr(r.out, "kv_len") &&
		 strstr(r.out, "62.5"));
	fa_proc_free(&r);
}
