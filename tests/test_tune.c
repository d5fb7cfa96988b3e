/* test_tune.c - `fabench tune`: on a planted sweep (times chosen so the
 * best value, the ties, the regret of each rule and the rule to fit are
 * known), the numbers through the API, golden markdown, CSV, JSON and C
 * header, every error path, and the command end to end, including a sweep
 * run on the CPU backend first.
 *
 * FABENCH_UPDATE_GOLDEN=1 rewrites the golden files instead of comparing.
 */
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../harness/report/plot.h"
#include "../harness/report/report.h"
#include "../harness/report/tune.h"
#include "../harness/store/store.h"
#include "fixture.h"
#include "golden.h"
#include "proc.h"
#include "test.h"

/* The planted sweep: kernel k_tune, param splits in {1, 4, 16} (order=1
 * fixed), built-in value 4, on batch {1, 8} x kv_len {1k, 4k, 16k}. The
 * truth is kv_len >= 16k ? 16 : (batch >= 8 ? 1 : 4). Relative medians per
 * case (idx = 3 * (batch == 8) + kv index): */
static const double planted[6][3] = {
	/*            1      4      16 */
	/* b1 1k */ {1.20, 1.00, NAN}, /* 16 failed its check: not timed */
	/* b1 4k */ {1.30, 1.00, 1.004}, /* 16 ties with 4 (0.4% < min effect) */
	/* b1 16k */ {2.00, 1.25, 1.00},
	/* b8 1k */ {1.00, 1.10, 1.40},
	/* b8 4k */ {1.00, 1.08, 1.20},
	/* b8 16k */ {1.30, 1.10, 1.00},
};
static const int planted_values[3] = {1, 4, 16};

#define N_SAMPLES 20

/* Writes the planted database at path (run 1: the sweep and three kernels
 * that cannot be tuned; run 2: no kernel with several params). */
static int plant(const char *path)
{
	struct fa_store *s = NULL;
	struct fa_run_info ri;
	struct fa_err err;
	int64_t run_id;
	double samples[3][N_SAMPLES];
	char keys[6][64];

	unlink(path);
	fa_err_clear(&err);
	if (fa_store_open(path, 1, &s, &err) != FA_OK)
		return -1;
	memset(&ri, 0, sizeof ri);
	ri.started_at = "2026-11-26T10:00:00Z";
	ri.backend = "cpu";
	ri.device_name = "planted";
	ri.suite_name = "sweep";
	ri.label = "sweep";
	ri.seed = 1;
	if (fa_store_run_begin(s, &ri, &run_id, &err) != FA_OK)
		goto fail;
	for (int ci = 0; ci < 6; ci++) {
		struct fa_case c;
		struct fa_result r[7];
		int nr = 0;
		memset(&c, 0, sizeof c);
		c.index = ci;
		c.p = (struct fa_problem){.batch = ci < 3 ? 1 : 8, .heads = 8, .kv_heads = 8,
					  .q_len = 1, .kv_len = 1024 << (2 * (ci % 3)),
					  .head_dim = 64, .head_dim_v = 64, .scale = 0.125f};
		c.p.total_q = c.p.batch;
		c.p.total_k = c.p.batch * c.p.kv_len;
		snprintf(keys[ci], sizeof keys[ci], "batch=%d,kv_len=%d", c.p.batch, c.p.kv_len);
		c.key = keys[ci];
		memset(r, 0, sizeof r);
		for (int v = 0; v < 3; v++) {
			static char params[3][32];
			struct fa_result *x = &r[nr++];
			snprintf(params[v], sizeof params[v], "splits=%d,order=1", planted_values[v]);
			x->kernel = "k_tune";
			x->backend = "cpu";
			x->params = params[v];
			x->tel = (struct fa_telemetry){NAN, NAN, NAN, NAN, -1};
			x->st.worst_index = -1;
			if (isnan(planted[ci][v])) {
				x->status = FA_STATUS_FAIL;
				snprintf(x->reason, sizeof x->reason, "max_abs 1 > 0.001");
				continue;
			}
			/* the same +-0.2% spread around every median: the ratios of
			 * medians are the planted ones exactly */
			for (int j = 0; j < N_SAMPLES; j++)
				samples[v][j] = planted[ci][v] * (1 + 0.002 * (((j * 7) % 11) - 5) / 5.0);
			x->status = FA_STATUS_PASS;
			x->t.n = N_SAMPLES;
			x->t.median_ms = planted[ci][v];
			x->samples = samples[v];
		}
		/* kernels that cannot be tuned: two params vary, one set only, words */
		static const char *const other[4][2] = {{"k_grid", "a=1,b=1"}, {"k_grid", "a=2,b=2"},
						       {"k_one", "x=1"}, {"k_word", ""}};
		for (int k = 0; k < 4; k++) {
			struct fa_result *x = &r[nr++];
			x->kernel = other[k][0];
			x->params = k == 3 ? (ci % 2 ? "mode=x" : "mode=y") : other[k][1];
			x->status = FA_STATUS_SKIP;
			x->tel = (struct fa_telemetry){NAN, NAN, NAN, NAN, -1};
			x->st.worst_index = -1;
		}
		if (fa_store_case_commit(s, run_id, &c, r, nr, NULL, &err) != FA_OK)
			goto fail;
	}
	if (fa_store_run_end(s, run_id, "complete", &err) != FA_OK)
		goto fail;
	ri.label = "flat";
	if (fa_store_run_begin(s, &ri, &run_id, &err) != FA_OK)
		goto fail;
	{
		struct fa_case c;
		struct fa_result x;
		memset(&c, 0, sizeof c);
		c.p = (struct fa_problem){.batch = 1, .heads = 8, .kv_heads = 8, .q_len = 1,
					  .kv_len = 64, .head_dim = 64, .head_dim_v = 64,
					  .total_q = 1, .total_k = 64, .scale = 0.125f};
		c.key = "flat";
		memset(&x, 0, sizeof x);
		x.kernel = "k_one";
		x.params = "x=1";
		x.status = FA_STATUS_SKIP;
		x.tel = (struct fa_telemetry){NAN, NAN, NAN, NAN, -1};
		x.st.worst_index = -1;
		if (fa_store_case_commit(s, run_id, &c, &x, 1, NULL, &err) != FA_OK)
			goto fail;
	}
	fa_store_close(s);
	return 0;
fail:
	fprintf(stderr, "plant: %s\n", err.msg);
	fa_store_close(s);
	return -1;
}

static const char *planted_db(void)
{
	static char path[1024];
	snprintf(path, sizeof path, "%s/tune.db", fa_test_tmpdir());
	if (plant(path) != 0)
		fa_test_fail(__FILE__, __LINE__, "cannot plant %s", path);
	return path;
}

static enum fa_rc build(const char *db, struct fa_tune_opts *o, struct fa_tune *t,
			struct fa_err *err)
{
	struct fa_store *s = NULL;
	fa_err_clear(err);
	memset(t, 0, sizeof *t);
	if (fa_store_open_readonly(db, &s, err) != FA_OK)
		return err->rc;
	if (!o->run_id)
		o->run_id = 1;
	enum fa_rc rc = fa_tune_build(s, o, t, err);
	fa_store_close(s);
	return rc;
}

static const struct fa_tune_rule *rule_named(const struct fa_tune *t, const char *name)
{
	for (int r = 0; r < t->n_rules; r++)
		if (strcmp(t->rules[r].name, name) == 0)
			return &t->rules[r];
	return NULL;
}

static void planted_opts(struct fa_tune_opts *o)
{
	fa_tune_opts_init(o);
	o->kernel = "k_tune";
	o->has_auto = 1;
	o->auto_value = 4;
	o->rules[o->n_rules++] = "kv_len >= 16k ? 16 : 4";
	o->rules[o->n_rules++] = "kv_len >= 16k ? 32 : 4"; /* 32 was not swept */
	o->by = "batch, kv_len";
}

FA_TEST(tune, planted_numbers)
{
	const char *db = planted_db();
	struct fa_tune_opts o;
	struct fa_tune t;
	struct fa_err err;
	planted_opts(&o);
	FA_REQUIRE(build(db, &o, &t, &err) == FA_OK);
	FA_CHECK(strcmp(t.param, "splits") == 0); /* the one that varies */
	FA_CHECK(strcmp(t.fixed, "order=1") == 0);
	FA_REQUIRE(t.n_values == 3 && t.values[0] == 1 && t.values[1] == 4 && t.values[2] == 16);
	FA_REQUIRE(t.n_cases == 6 && t.n_timed == 6);
	FA_CHECK(t.auto_idx == 1);
	/* the best values and ties */
	static const int best[6] = {1, 1, 2, 0, 0, 2};
	for (int i = 0; i < 6; i++)
		FA_CHECKF(t.cases[i].best == best[i], "case %d: best %d", i, t.cases[i].best);
	FA_CHECK(t.cases[1].tie[2] == 1 && t.cases[1].tie[0] == 0); /* 1.004 ties with 1.00 */
	FA_CHECK(t.cases[0].tie[2] == 0 && isnan(t.cases[0].median_ms[2])); /* failed */
	FA_CHECK(t.cases[3].tie[1] == 0);                                /* 10% is not a tie */
	FA_CHECK_NEAR(t.cases[2].speedup, 1.25, 1e-9);
	FA_CHECK(t.cases[2].auto_verdict == FA_PERF_SLOWER);
	FA_CHECK(t.cases[1].auto_verdict == FA_PERF_SAME && t.cases[1].speedup == 1);

	/* the built-in value: losses 0, 0, 25%, 10%, 8%, 10% */
	const struct fa_tune_rule *a = rule_named(&t, "auto");
	FA_REQUIRE(a);
	FA_CHECK_NEAR(a->geomean_loss, pow(1.25 * 1.10 * 1.08 * 1.10, 1.0 / 6) - 1, 1e-9);
	FA_CHECK_NEAR(a->worst_loss, 0.25, 1e-9);
	FA_CHECK(a->worst_case == 2 && a->n_over == 4 && a->n_slower == 4 && a->n_missing == 0);
	/* R1 fixes the long cases: losses 10% and 8% at batch 8 */
	const struct fa_tune_rule *r1 = rule_named(&t, "R1");
	FA_REQUIRE(r1);
	FA_CHECK_NEAR(r1->geomean_loss, pow(1.10 * 1.08, 1.0 / 6) - 1, 1e-9);
	FA_CHECK(r1->worst_case == 3 && r1->n_over == 2 && r1->n_missing == 0);
	FA_CHECK(r1->choice[2] == 2 && r1->choice[0] == 1);
	/* R2 asks for 32, never swept: those cases count as not timed */
	const struct fa_tune_rule *r2 = rule_named(&t, "R2");
	FA_REQUIRE(r2);
	FA_CHECK(r2->n_missing == 2 && r2->n_used == 4 && r2->choice[2] == -1);
	FA_CHECK(r2->choice_value[2] == 32);

	/* the fitted rule finds the truth; of the two trees of cost 0 the one
	 * with fewer leaves */
	FA_REQUIRE(t.fitted >= 0);
	const struct fa_tune_rule *fit = &t.rules[t.fitted];
	FA_CHECKF(strcmp(fit->text, "kv_len >= 16k ? 16 : (batch >= 8 ? 1 : 4)") == 0, "fitted '%s'",
		  fit->text);
	FA_CHECK_NEAR(fit->geomean_loss, 0, 1e-12);
	FA_CHECK(fit->n_over == 0 && fit->n_missing == 0);
	FA_REQUIRE(t.n_leaves == 3 && t.n_by == 2);
	FA_CHECK(t.leaves[0].lo[1] == 16384 && t.values[t.leaves[0].value] == 16);
	FA_CHECK(t.leaves[1].lo[0] == 8 && t.leaves[1].hi[1] == 16384);
	FA_CHECK(t.values[t.leaves[2].value] == 4 && t.leaves[2].hi[0] == 8);
	fa_tune_free(&t);

	/* depth 1: one threshold; on the batch-1 cases only, kv_len decides */
	planted_opts(&o);
	o.depth = 1;
	FA_REQUIRE(build(db, &o, &t, &err) == FA_OK);
	FA_CHECKF(strcmp(t.rules[t.fitted].text, "kv_len >= 16k ? 16 : 4") == 0, "depth 1: '%s'",
		  t.rules[t.fitted].text);
	fa_tune_free(&t);
	planted_opts(&o);
	o.where = "batch == 1";
	FA_REQUIRE(build(db, &o, &t, &err) == FA_OK);
	FA_CHECK(t.n_cases == 3);
	FA_CHECKF(strcmp(t.rules[t.fitted].text, "kv_len >= 16k ? 16 : 4") == 0, "where: '%s'",
		  t.rules[t.fitted].text);
	fa_tune_free(&t);

	/* a large --min-effect: no split gains enough, the fit is one value */
	planted_opts(&o);
	o.perf.min_effect = 0.9;
	FA_REQUIRE(build(db, &o, &t, &err) == FA_OK);
	FA_CHECK(t.n_leaves == 1);
	FA_CHECKF(strcmp(t.rules[t.fitted].text, "4") == 0, "'%s'", t.rules[t.fitted].text);
	fa_tune_free(&t);
}

static char *text_of(const struct fa_tune *t, int format, int header)
{
	char *buf = NULL;
	size_t len = 0;
	struct fa_err err;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		return NULL;
	fa_err_clear(&err);
	enum fa_rc rc = header ? fa_tune_write_header(t, f, &err) : fa_tune_write(t, format, f, &err);
	fclose(f);
	if (rc != FA_OK) {
		free(buf);
		return NULL;
	}
	return buf;
}

FA_TEST(tune, golden)
{
	const char *db = planted_db();
	struct fa_tune_opts o;
	struct fa_tune t, t2;
	struct fa_err err;
	static const struct {
		int format, header;
		const char *name;
	} outs[] = {{FA_FMT_MD, 0, "tune_sweep.md"},
		    {FA_FMT_CSV, 0, "tune_sweep.csv"},
		    {FA_FMT_JSON, 0, "tune_sweep.json"},
		    {0, 1, "tune_sweep.h"}};
	planted_opts(&o);
	FA_REQUIRE(build(db, &o, &t, &err) == FA_OK);
	FA_REQUIRE(build(db, &o, &t2, &err) == FA_OK);
	for (size_t k = 0; k < sizeof outs / sizeof outs[0]; k++) {
		char *a = text_of(&t, outs[k].format, outs[k].header);
		char *b = text_of(&t2, outs[k].format, outs[k].header);
		FA_CHECK(a && b);
		if (a && b) {
			FA_CHECKF(strcmp(a, b) == 0, "%s differs between two builds", outs[k].name);
			fa_golden_check(outs[k].name, a, strlen(a));
		}
		free(a);
		free(b);
	}
	/* the header's rows say what the rule says */
	char *h = text_of(&t, 0, 1);
	FA_CHECK(h && strstr(h, "{{-HUGE_VAL, 16384.0}, {HUGE_VAL, HUGE_VAL}, 16},"));
	FA_CHECK(h && strstr(h, "static inline int k_tune_splits_choose(const double x[K_TUNE_SPLITS_N_BY])"));
	free(h);
	/* a kernel named with a digit first (a plugin's may be): still C */
	char *kernel = t.kernel, digit[] = "9k.tune-x";
	t.kernel = digit;
	h = text_of(&t, 0, 1);
	t.kernel = kernel;
	FA_CHECKF(h && strstr(h, "#ifndef FA_9K_TUNE_X_SPLITS_TUNE_H\n") &&
			  strstr(h, "static inline int fa_9k_tune_x_splits_choose(") &&
			  strstr(h, " * kernel 9k.tune-x, param splits"),
		  "%s", h ? h : "(null)");
	free(h);
	fa_tune_free(&t);
	fa_tune_free(&t2);
	/* no --by: no header */
	planted_opts(&o);
	o.by = NULL;
	FA_REQUIRE(build(db, &o, &t, &err) == FA_OK);
	FILE *f = fopen("/dev/null", "w");
	FA_REQUIRE(f);
	fa_err_clear(&err);
	FA_CHECK(fa_tune_write_header(&t, f, &err) == FA_ERR_INPUT);
	FA_CHECK(strstr(err.msg, "no fitted rule to write") != NULL);
	fa_err_clear(&err);
	FA_CHECK(fa_tune_write(&t, FA_FMT_HTML, f, &err) == FA_ERR_USAGE);
	fclose(f);
	fa_tune_free(&t);
}

/* The markdown and CSV write a byte of no UTF-8 sequence (a plugin's
 * device name, a merged database's case key) as U+FFFD, as the JSON does:
 * every output is UTF-8. */
FA_TEST(tune, text_outputs_replace_bytes_that_are_not_utf8)
{
	const char *db = planted_db();
	struct fa_store *s = NULL;
	struct fa_tune_opts o;
	struct fa_tune t;
	struct fa_err err;
	fa_err_clear(&err);
	FA_REQUIRE(fa_store_open(db, 0, &s, &err) == FA_OK);
	FA_REQUIRE(sqlite3_exec(fa_store_db(s),
				"UPDATE runs SET device_name = CAST(X'706C616E746564FF' AS TEXT); "
				"UPDATE cases SET key = key || CAST(X'80E282' AS TEXT) WHERE idx = 0",
				NULL, NULL, NULL) == SQLITE_OK);
	fa_store_close(s);
	planted_opts(&o);
	FA_REQUIRE(build(db, &o, &t, &err) == FA_OK);
	for (int format = FA_FMT_MD; format <= FA_FMT_JSON; format++) {
		char *text = text_of(&t, format, 0);
		long bad;
		FA_REQUIRE(text);
		bad = fa_test_utf8_invalid_at(text, strlen(text));
		FA_CHECKF(bad < 0, "format %d: byte 0x%02x at %ld", format,
			  bad < 0 ? 0 : (unsigned char)text[bad], bad);
		FA_CHECKF(strstr(text, format == FA_FMT_JSON ? "\\ufffd" : "\xef\xbf\xbd"),
			  "format %d: no replacement character:\n%s", format, text);
		free(text);
	}
	fa_tune_free(&t);
}

/* One error of fa_tune_build: its code and message. */
static struct fa_err last_err; /* expect_error's, for checks of its location */

static void expect_error(const char *db, struct fa_tune_opts *o, enum fa_rc want,
			 const char *msg, int line)
{
	struct fa_tune t;
	struct fa_err err;
	enum fa_rc rc = build(db, o, &t, &err);
	last_err = err;
	if (rc != want || strcmp(err.msg, msg) != 0)
		fa_test_fail(__FILE__, line, "got rc %d '%s', expected rc %d '%s'", rc, err.msg, want,
			     msg);
	fa_tune_free(&t);
}

FA_TEST(tune, errors)
{
	const char *db = planted_db();
	struct fa_tune_opts o;
#define ERR(setup, want, msg)                                   \
	do {                                                    \
		planted_opts(&o);                               \
		setup;                                          \
		expect_error(db, &o, want, msg, __LINE__);      \
	} while (0)
	ERR(o.kernel = "nope", FA_ERR_NOT_FOUND, "no results of kernel 'nope' in run 1");
	ERR(o.param = "zzz", FA_ERR_NOT_FOUND,
	    "kernel 'k_tune' has no param 'zzz' in run 1 (its params: 'splits=1,order=1')");
	ERR(o.param = "order", FA_ERR_INPUT,
	    "params of 'k_tune' other than 'order' vary in run 1 (splits): tune one param at a "
	    "time, from a sweep of 'order' alone with the others fixed (fabench run --param "
	    "k_tune.order=V1,V2,... --param k_tune.NAME=V)");
	ERR(o.kernel = "k_grid", FA_ERR_INPUT,
	    "several params of 'k_grid' vary in run 1 (a, b): tune one param at a time, from a "
	    "sweep of one with the others fixed");
	ERR(o.kernel = "k_one", FA_ERR_INPUT,
	    "kernel 'k_one' ran with one set of params in run 1 ('x=1'): nothing to tune");
	ERR(o.kernel = "k_word", FA_ERR_INPUT,
	    "param 'mode' of 'k_word' is 'y' in run 1, not an integer");
	ERR((o.kernel = NULL, o.run_id = 2), FA_ERR_INPUT,
	    "run 2 has no kernel run with more than one set of params; sweep one with fabench "
	    "run --param KERNEL.NAME=V1,V2");
	/* rules' errors point into the rule as file "--rule", as --where's do */
	ERR(o.rules[0] = "kv_lne >= 16k ? 16 : 4", FA_ERR_INPUT,
	    "unknown name 'kv_lne' (did you mean 'kv_len'?)");
	FA_CHECK(strcmp(last_err.file, "--rule") == 0 && last_err.line == 1 && last_err.col == 1);
	FA_CHECK(strcmp(last_err.text, "kv_lne >= 16k ? 16 : 4") == 0);
	ERR(o.rules[0] = "kv_len >= 16k", FA_ERR_INPUT,
	    "the expression is a condition, not a number");
	ERR(o.rules[0] = "kv_len >= 16k ? 16", FA_ERR_INPUT,
	    "expected ':' of the '?' at column 15");
	FA_CHECK(strcmp(last_err.file, "--rule") == 0 && last_err.line == 1 &&
		 last_err.col == 19);
	ERR(o.by = ",", FA_ERR_INPUT,
	    "an empty item: give a case parameter or an expression between the commas");
	ERR(o.where = "batch == 3", FA_ERR_INPUT,
	    "--where 'batch == 3' keeps none of the k_tune cases of run 1");
	ERR(o.depth = 0, FA_ERR_USAGE, "--depth 0 must be 1 to 4");
	ERR(o.n_rules = FA_TUNE_MAX_RULES + 1, FA_ERR_USAGE, "more than 16 --rule options");
	/* an integer a tunable cannot hold is out of range, not "not an integer" */
	char big_db[1024];
	snprintf(big_db, sizeof big_db, "%s/tune-big.db", fa_test_tmpdir());
	FA_REQUIRE(fa_test_copy_file(db, big_db) == 0);
	FA_REQUIRE(fa_test_db_exec(big_db, "UPDATE results SET params = CASE params WHEN 'mode=y' "
					   "THEN 'mode=3000000000' ELSE 'mode=1' END WHERE kernel "
					   "= 'k_word'") == 0);
	planted_opts(&o);
	o.kernel = "k_word";
	expect_error(big_db, &o, FA_ERR_INPUT,
		     "param 'mode' of 'k_word' is '3000000000' in run 1, out of range: a tunable "
		     "is an integer from -2147483648 to 2147483647",
		     __LINE__);
	FA_REQUIRE(fa_test_db_exec(big_db, "UPDATE results SET params = "
					   "'mode=-99999999999999999999' WHERE params = "
					   "'mode=3000000000'") == 0);
	expect_error(big_db, &o, FA_ERR_INPUT,
		     "param 'mode' of 'k_word' is '-99999999999999999999' in run 1, out of range: a "
		     "tunable is an integer from -2147483648 to 2147483647",
		     __LINE__);
#undef ERR
	/* a --by error points at the expression's column */
	struct fa_tune t;
	struct fa_err err;
	planted_opts(&o);
	o.by = "batch, kv_lne";
	FA_CHECK(build(db, &o, &t, &err) == FA_ERR_INPUT);
	FA_CHECK(strcmp(err.file, "--by") == 0 && err.line == 1 && err.col == 8);
	FA_CHECK(strcmp(err.msg, "unknown name 'kv_lne' (did you mean 'kv_len'?)") == 0);
	fa_tune_free(&t);
	planted_opts(&o);
	o.by = "batch, ,kv_len"; /* at the column where the empty item begins */
	FA_CHECK(build(db, &o, &t, &err) == FA_ERR_INPUT);
	FA_CHECK(strcmp(err.file, "--by") == 0 && err.col == 7);
	FA_CHECK(strcmp(err.msg, "an empty item: give a case parameter or an expression between "
				 "the commas") == 0);
	fa_tune_free(&t);
	planted_opts(&o);
	o.run_id = 7;
	FA_CHECK(build(db, &o, &t, &err) == FA_ERR_NOT_FOUND);
	FA_CHECK(strncmp(err.msg, "no run 7 in '", 13) == 0);
	fa_tune_free(&t);
	planted_opts(&o);
	o.where = "batch ==";
	FA_CHECK(build(db, &o, &t, &err) == FA_ERR_INPUT);
	FA_CHECK(strcmp(err.file, "--where") == 0 && err.col == 9);
	fa_tune_free(&t);
}

static int run_tune(char *const argv[], struct fa_proc_result *r)
{
	fa_proc_run(argv, NULL, 120, r);
	return r->status;
}

FA_TEST(tune, command)
{
	const char *db = planted_db();
	char out[1024], hdr[1024], hdr2[1024];
	struct fa_proc_result r;
	snprintf(out, sizeof out, "%s/out.md", fa_test_tmpdir());
	snprintf(hdr, sizeof hdr, "%s/a.h", fa_test_tmpdir());
	snprintf(hdr2, sizeof hdr2, "%s/b.h", fa_test_tmpdir());

	char *help[] = {"tune", "--help", NULL};
	FA_CHECK(run_tune(help, &r) == 0 && strstr(r.out, "--rule EXPR") && strstr(r.out, "--by"));
	fa_proc_free(&r);
	char *none[] = {"tune", NULL};
	FA_CHECK(run_tune(none, &r) == 2 && strstr(r.err, "give --run RUN"));
	fa_proc_free(&r);
	char *both[] = {"tune", "x.yaml", "--run", "1", NULL};
	FA_CHECK(run_tune(both, &r) == 2 && strstr(r.err, "not both"));
	fa_proc_free(&r);
	char *bad_opt[] = {"tune", "--run", "1", "--frobnicate", NULL};
	FA_CHECK(run_tune(bad_opt, &r) == 2 && strstr(r.err, "unknown option '--frobnicate'"));
	fa_proc_free(&r);
	char *bad_depth[] = {"tune", "--run", "1", "--depth", "9", NULL};
	FA_CHECK(run_tune(bad_depth, &r) == 2 && strstr(r.err, "--depth '9' must be 1 to 4"));
	fa_proc_free(&r);
	char *bad_auto[] = {"tune", "--run", "1", "--auto", "x", NULL};
	FA_CHECK(run_tune(bad_auto, &r) == 2 && strstr(r.err, "--auto 'x' must be an integer"));
	fa_proc_free(&r);
	char *bad_loss[] = {"tune", "--run", "1", "--loss", "-1", NULL};
	FA_CHECK(run_tune(bad_loss, &r) == 2 && strstr(r.err, "--loss '-1' must be a percentage"));
	fa_proc_free(&r);
	char *bad_fmt[] = {"tune", "--run", "1", "--format", "html", NULL};
	FA_CHECK(run_tune(bad_fmt, &r) == 2 && strstr(r.err, "--format 'html' must be md"));
	fa_proc_free(&r);
	char *no_by[] = {"tune", "--run", "1", "--header", hdr, NULL};
	FA_CHECK(run_tune(no_by, &r) == 2 && strstr(r.err, "--header needs --by"));
	fa_proc_free(&r);
	char *vals[] = {"tune", "--run", "1", "--param", "splits=1,4", "--db", (char *)db, NULL};
	FA_CHECK(run_tune(vals, &r) == 2 && strstr(r.err, "values are for a sweep"));
	fa_proc_free(&r);
	char *label_run[] = {"tune", "--run", "1", "--label", "x", NULL};
	FA_CHECK(run_tune(label_run, &r) == 2 && strstr(r.err, "--label needs SUITE.yaml"));
	fa_proc_free(&r);
	char *suite_nok[] = {"tune", "suites/smoke.yaml", "--param", "block_q=8", NULL};
	FA_CHECK(run_tune(suite_nok, &r) == 2 && strstr(r.err, "needs --kernel K and --param"));
	fa_proc_free(&r);
	char missing[1024];
	snprintf(missing, sizeof missing, "%s/missing.db", fa_test_tmpdir());
	char *no_db[] = {"tune", "--run", "1", "--db", missing, NULL};
	FA_CHECK(run_tune(no_db, &r) == 2);
	FA_CHECK(access(missing, F_OK) != 0); /* never created */
	fa_proc_free(&r);
	char *no_run[] = {"tune", "--run", "nightly", "--db", (char *)db, NULL};
	FA_CHECK(run_tune(no_run, &r) == 2);
	fa_proc_free(&r);
	char *bad_rule[] = {"tune", "--run", "sweep", "--db", (char *)db, "--rule", "batch >", NULL};
	FA_CHECK(run_tune(bad_rule, &r) == 2 &&
		 strstr(r.err, "--rule:1:8: unexpected end of expression\n 1 | batch >\n   |        ^"));
	fa_proc_free(&r);
	char *bad_out[] = {"tune", "--run", "sweep", "--db", (char *)db, "--output", "/dev/null/x",
			   NULL};
	FA_CHECK(run_tune(bad_out, &r) == 1 && strstr(r.err, "cannot write '/dev/null/x'"));
	fa_proc_free(&r);
	char *bad_hdr[] = {"tune", "--run", "sweep", "--db", (char *)db, "--by", "batch",
			   "--header", "/dev/null/x.h", NULL};
	FA_CHECK(run_tune(bad_hdr, &r) == 1 && strstr(r.err, "cannot write '/dev/null/x.h'"));
	fa_proc_free(&r);

	/* one param and one kernel: a second --param or --kernel is refused,
	 * both named, not the first dropped */
	char *two_params[] = {"tune", "--run", "sweep", "--db", (char *)db, "--param", "splits",
			      "--param", "order", NULL};
	FA_CHECKF(run_tune(two_params, &r) == 2 &&
			  strstr(r.err, "--param given twice ('splits' and 'order'): tune settles "
					"one param"),
		  "%s", r.err);
	FA_CHECK(r.out[0] == '\0');
	fa_proc_free(&r);
	char *two_kernels[] = {"tune", "--run", "sweep", "--db", (char *)db, "--kernel", "k_grid",
			       "--kernel", "k_tune", NULL};
	FA_CHECKF(run_tune(two_kernels, &r) == 2 &&
			  strstr(r.err, "--kernel given twice ('k_grid' and 'k_tune')"),
		  "%s", r.err);
	FA_CHECK(r.out[0] == '\0');
	fa_proc_free(&r);
	/* --param K.P as run takes it: K is --kernel's, taken off; another
	 * kernel, or one without --kernel, is refused at its column */
	char *prefixed[] = {"tune", "--run", "sweep", "--db", (char *)db, "--kernel", "k_tune",
			    "--param", "k_tune.splits", NULL};
	FA_CHECKF(run_tune(prefixed, &r) == 0 &&
			  strstr(r.out, "# fabench tune: k_tune splits, run 1\n"),
		  "status %d: %s", r.status, r.err);
	fa_proc_free(&r);
	char *other_kernel[] = {"tune", "--run", "sweep", "--db", (char *)db, "--kernel", "k_tune",
				"--param", "k_grid.a", NULL};
	FA_CHECKF(run_tune(other_kernel, &r) == 2 &&
			  strstr(r.err, "--param:1:1: 'k_grid.' names another kernel than --kernel "
					"'k_tune': give the param alone (--param a)\n"),
		  "%s", r.err);
	fa_proc_free(&r);
	char *no_kernel[] = {"tune", "--run", "sweep", "--db", (char *)db, "--param",
			     "k_tune.splits", NULL};
	FA_CHECKF(run_tune(no_kernel, &r) == 2 &&
			  strstr(r.err, "'k_tune.' names a kernel: give the param alone and the "
					"kernel with --kernel (--kernel k_tune --param splits)"),
		  "%s", r.err);
	fa_proc_free(&r);
	/* --by X --by Y is --by X,Y: the same report, the fit on both */
	char *by_one[] = {"tune", "--run", "sweep", "--db", (char *)db, "--auto", "4", "--by",
			  "batch,kv_len", NULL};
	char *by_two[] = {"tune", "--run", "sweep", "--db", (char *)db, "--auto", "4", "--by",
			  "batch", "--by", "kv_len", NULL};
	FA_REQUIRE(run_tune(by_one, &r) == 0);
	char *one_out = strdup(r.out);
	fa_proc_free(&r);
	FA_CHECK(run_tune(by_two, &r) == 0);
	FA_CHECKF(one_out && strstr(one_out, "by `batch`, `kv_len`;") &&
			  strcmp(r.out, one_out) == 0,
		  "--by batch --by kv_len:\n%s\n--by batch,kv_len:\n%s", r.out, one_out);
	free(one_out);
	fa_proc_free(&r);
	/* the limit of expressions counts over every --by, not each alone */
	char *by_many[] = {"tune", "--run", "sweep", "--db", (char *)db, "--by",
			   "batch,kv_len,batch+1,batch+2,batch+3", "--by", "kv_len+1,kv_len+2,kv_len+3,kv_len+4",
			   NULL};
	FA_CHECKF(run_tune(by_many, &r) == 2 &&
			  strstr(r.err, "--by: more than 8 expressions over the 2 --by options"),
		  "%s", r.err);
	fa_proc_free(&r);
	/* an error in a later --by points into that --by */
	char *by_typo[] = {"tune", "--run", "sweep", "--db", (char *)db, "--by", "batch", "--by",
			   "kv_lne", NULL};
	FA_CHECKF(run_tune(by_typo, &r) == 2 &&
			  strstr(r.err, "--by:1:1: unknown name 'kv_lne' (did you mean 'kv_len'?)\n"
					" 1 | kv_lne\n"),
		  "%s", r.err);
	fa_proc_free(&r);

	/* the header through the command is the golden one, twice */
	char *ok[] = {"tune", "--run", "sweep", "--db", (char *)db, "--kernel", "k_tune", "--auto",
		      "4", "--rule", "kv_len >= 16k ? 16 : 4", "--rule", "kv_len >= 16k ? 32 : 4",
		      "--by", "batch, kv_len", "--header", hdr, "--output", out, NULL};
	FA_CHECK(run_tune(ok, &r) == 0);
	fa_proc_free(&r);
	ok[16] = hdr2;
	FA_CHECK(run_tune(ok, &r) == 0);
	fa_proc_free(&r);
	size_t la = 0, lb = 0, lm = 0;
	char *a = fa_test_read_file(hdr, &la), *b = fa_test_read_file(hdr2, &lb);
	char *m = fa_test_read_file(out, &lm);
	FA_CHECK(a && b && la == lb && memcmp(a, b, la) == 0);
	if (a)
		fa_golden_check("tune_sweep.h", a, la);
	if (m)
		fa_golden_check("tune_sweep.md", m, lm);
	free(a);
	free(b);
	free(m);
}

/* An empty item of --param's values and of --by's list, blank or not, first
 * or last, is refused the same way (one check): status 2, the option, its
 * value and the column where the empty item begins; the database as it was,
 * no sweep run. */
FA_TEST(tune, empty_items_of_param_and_by_refused_alike)
{
	static const struct {
		const char *param, *by; /* the same mistake in each */
		int param_col, by_col;
	} cases[] = {
		{"block_q=8,,16", "batch,,kv_len", 11, 7},
		{"block_q=8, ,16", "batch, ,kv_len", 11, 7},
		{"block_q=8,\t,16", "batch,\t,kv_len", 11, 7},
		{"block_q=8,16,", "batch,kv_len,", 14, 14},
		{"block_q=8,16, ", "batch,kv_len, ", 14, 14},
		{"block_q=,8", ",batch", 9, 1},
		{"block_q= ,8", " ,batch", 9, 1},
		{"block_q=8,,", "batch,,", 11, 7},
	};
	char db[1024];
	struct fa_proc_result r;
	size_t before_len = 0, after_len = 0;
	snprintf(db, sizeof db, "%s/empty-items.db", fa_test_tmpdir());
	FA_REQUIRE(fa_test_copy_file(planted_db(), db) == 0);
	char *before = fa_test_read_file(db, &before_len);
	FA_REQUIRE(before);
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		for (int by = 0; by < 2; by++) {
			const char *arg = by ? cases[i].by : cases[i].param;
			const int col = by ? cases[i].by_col : cases[i].param_col;
			char want[512], *after;
			char *param_argv[] = {"tune", "tests/suites/tiny.yaml", "--backend", "cpu",
					      "--kernel", "cpu_flash", "--param", (char *)arg,
					      "--db", db, NULL};
			char *by_argv[] = {"tune", "--run", "sweep", "--db", db, "--by", (char *)arg,
					   NULL};
			snprintf(want, sizeof want,
				 "%s:1:%d: an empty item: give %s between the commas\n 1 | %s\n   | %*s\n",
				 by ? "--by" : "--param", col,
				 by ? "a case parameter or an expression" : "a value", arg, col, "^");
			fa_proc_run(by ? by_argv : param_argv, NULL, 120, &r);
			FA_CHECKF(r.status == 2 && strcmp(r.err, want) == 0 && r.out[0] == '\0',
				  "%s '%s': status %d\nstderr:\n%s\nwanted:\n%s", by ? "--by" : "--param",
				  arg, r.status, r.err, want);
			fa_proc_free(&r);
			after = fa_test_read_file(db, &after_len);
			FA_CHECKF(after && after_len == before_len &&
					  memcmp(after, before, before_len) == 0,
				  "'%s' changed the database", arg);
			free(after);
		}
	}
	/* in a second --by, the column is in that --by */
	char *second[] = {"tune", "--run", "sweep", "--db", db, "--by", "batch", "--by", "kv_len,",
			  NULL};
	fa_proc_run(second, NULL, 60, &r);
	FA_CHECKF(r.status == 2 && strstr(r.err, "--by:1:8: an empty item: give a case parameter "
						 "or an expression between the commas\n"
						 " 1 | kv_len,\n"),
		  "status %d: %s", r.status, r.err);
	fa_proc_free(&r);
	free(before);
}

/* tune SUITE: the sweep runs on the CPU backend first (the built-in
 * block_q 16 added), is stored under its label, then tuned. */
FA_TEST(tune, sweep_first)
{
	char db[1024], suite[1024];
	struct fa_proc_result r;
	snprintf(db, sizeof db, "%s/sweep.db", fa_test_tmpdir());
	snprintf(suite, sizeof suite, "%s/tiny.yaml", fa_test_tmpdir());
	unlink(db);
	FILE *f = fopen(suite, "w");
	FA_REQUIRE(f);
	fputs("suite: tiny\n"
	      "measure: {warmup: 1, min_samples: 5, max_samples: 10, min_time_ms: 1, max_time_ms: 10}\n"
	      "defaults: {heads: 2, head_dim: 32, dtype: fp32}\n"
	      "axes:\n  q_len: [16, 64]\n  kv_len: [64]\n",
	      f);
	fclose(f);
	char *argv[] = {"tune", suite, "--db", db, "--backend", "cpu", "--kernel", "cpu_flash",
			"--param", "block_q=8,64", "--label", "bq", "--by", "q_len", "--format",
			"json", NULL};
	FA_REQUIRE(run_tune(argv, &r) == 0);
	/* standard output is the JSON alone: run's progress went to stderr */
	FA_CHECK(strncmp(r.out, "{\"schema_version\": 2,", 21) == 0);
	FA_CHECK(strstr(r.out, "\"kernel\": \"cpu_flash\", \"param\": \"block_q\""));
	FA_CHECK(strstr(r.out, "\"values\": [8, 16, 64], \"auto\": 16"));
	FA_CHECK(strstr(r.out, "\"label\": \"bq\""));
	FA_CHECK(strstr(r.err, "2 cases"));
	fa_proc_free(&r);
	/* the stored run tunes again by its label, the built-in value from the
	 * registry */
	char *again[] = {"tune", "--run", "bq", "--db", db, NULL};
	FA_CHECK(run_tune(again, &r) == 0 && strstr(r.out, "- built-in value (auto): 16\n"));
	fa_proc_free(&r);
	/* a suite that does not load: 2, as run says */
	char *bad[] = {"tune", "suites/bad/empty.yaml", "--db", db, "--kernel", "cpu_flash",
		       "--param", "block_q=8", NULL};
	FA_CHECK(run_tune(bad, &r) == 2);
	fa_proc_free(&r);
	/* a typo in --by or --rule fails (2, the option and column named)
	 * before the sweep: no run is stored and nothing runs */
	char db2[1024];
	snprintf(db2, sizeof db2, "%s/sweep-typo.db", fa_test_tmpdir());
	unlink(db2);
	char *typo_by[] = {"tune", suite, "--db", db2, "--backend", "cpu", "--kernel", "cpu_flash",
			   "--param", "block_q=8,64", "--by", "q_len, seq_len", NULL};
	FA_CHECK(run_tune(typo_by, &r) == 2);
	FA_CHECK(strstr(r.err, "--by:1:8: unknown name 'seq_len'"));
	FA_CHECK(!strstr(r.err, "cases"));
	FA_CHECK(access(db2, F_OK) != 0);
	fa_proc_free(&r);
	char *typo_rule[] = {"tune", suite, "--db", db2, "--backend", "cpu", "--kernel",
			     "cpu_flash", "--param", "block_q=8,64", "--rule", "q_len >= 32 ? 8",
			     NULL};
	FA_CHECK(run_tune(typo_rule, &r) == 2);
	FA_CHECK(strstr(r.err, "--rule:1:16: expected ':' of the '?' at column 13\n 1 | q_len >= 32 ? 8\n"));
	FA_CHECK(access(db2, F_OK) != 0);
	fa_proc_free(&r);
	/* --kernel is one kernel by its exact name: a glob or a list fails (2,
	 * the column of the glob or the comma) before the sweep, not after a
	 * sweep of every kernel it matched was stored */
	char *glob_kernel[] = {"tune", suite, "--db", db2, "--backend", "cpu", "--kernel",
			       "cpu_fl*", "--param", "block_q=8,64", NULL};
	FA_CHECK(run_tune(glob_kernel, &r) == 2);
	FA_CHECKF(strstr(r.err, "--kernel:1:7: '*' makes a glob: tune takes one kernel by its "
				"exact name") &&
			  strstr(r.err, " 1 | cpu_fl*\n   |       ^\n"),
		  "%s", r.err);
	FA_CHECK(!strstr(r.err, "cases"));
	FA_CHECK(access(db2, F_OK) != 0);
	fa_proc_free(&r);
	char *list_kernel[] = {"tune", suite, "--db", db2, "--backend", "cpu", "--kernel",
			       "cpu_flash,cpu_flash_bwd", "--param", "block_q=8,64", NULL};
	FA_CHECK(run_tune(list_kernel, &r) == 2);
	FA_CHECKF(strstr(r.err, "--kernel:1:10: ',' makes a list: tune takes one kernel") &&
			  !strstr(r.err, "--param 'cpu_flash,"),
		  "%s", r.err);
	FA_CHECK(access(db2, F_OK) != 0);
	fa_proc_free(&r);
	/* --param K.P with K --kernel's sweeps P (not K.K.P) */
	char db3[1024];
	snprintf(db3, sizeof db3, "%s/sweep-prefixed.db", fa_test_tmpdir());
	unlink(db3);
	char *prefixed[] = {"tune", suite, "--db", db3, "--backend", "cpu", "--kernel", "cpu_flash",
			    "--param", "cpu_flash.block_q=8,64", "--format", "json", NULL};
	FA_CHECKF(run_tune(prefixed, &r) == 0 &&
			  strstr(r.out, "\"kernel\": \"cpu_flash\", \"param\": \"block_q\"") &&
			  strstr(r.out, "\"values\": [8, 16, 64], \"auto\": 16"),
		  "status %d: %s", r.status, r.err);
	fa_proc_free(&r);
	/* without gnuplot, --heatmap fails (1, as fabench plot) before the
	 * sweep: nothing runs or is stored */
	char heat[1100];
	snprintf(heat, sizeof heat, "%s/heat.png", fa_test_tmpdir());
	char *no_gnuplot[] = {"tune", suite, "--db", db2, "--backend", "cpu", "--kernel",
			      "cpu_flash", "--param", "block_q=8,64", "--heatmap", heat, NULL};
	fa_proc_run(no_gnuplot, (char *[]){"FABENCH_GNUPLOT=gnuplot-that-is-not-installed", NULL},
		    120, &r);
	FA_CHECKF(r.status == 1 && strstr(r.err, "fabench tune: error: gnuplot is not installed: "
						 "--heatmap needs it"),
		  "status %d: %s", r.status, r.err);
	FA_CHECK(!strstr(r.err, "cases") && r.out[0] == '\0');
	FA_CHECK(access(db2, F_OK) != 0 && access(heat, F_OK) != 0);
	fa_proc_free(&r);
	/* a value run refuses: run's message, then the sweep's command, which
	 * shows the built-in value tune added */
	char *bad_value[] = {"tune", suite, "--db", db2, "--backend", "cpu", "--kernel",
			     "cpu_flash", "--param", "block_q=7,32", NULL};
	FA_CHECK(run_tune(bad_value, &r) == 2);
	FA_CHECKF(strstr(r.err, "'7' is not an allowed value of cpu_flash.block_q") &&
			  strstr(r.err, "fabench tune: its sweep was: fabench run ") &&
			  strstr(r.err, "--param cpu_flash.block_q=7,32,16 (16, the built-in value, "
					"added to score auto)"),
		  "%s", r.err);
	FA_CHECK(access(db2, F_OK) != 0);
	fa_proc_free(&r);
	/* a file it cannot write is found before the sweep, not after it */
	char under_file[1100];
	snprintf(under_file, sizeof under_file, "%s/sub/o.md", db);
	const char *flags[] = {"--output", "--header", "--heatmap"};
	for (int i = 0; i < 3; i++) {
		char path[1200];
		snprintf(path, sizeof path, "%s%s", under_file, i == 2 ? ".png" : "");
		char *bad_path[] = {"tune", suite, "--db", db2, "--backend", "cpu", "--kernel",
				    "cpu_flash", "--param", "block_q=8,64", "--by", "q_len",
				    (char *)flags[i], path, NULL};
		FA_CHECK(run_tune(bad_path, &r) == 1);
		FA_CHECKF(strstr(r.err, "cannot write") && strstr(r.err, "Not a directory"), "%s",
			  r.err);
		FA_CHECK(access(db2, F_OK) != 0);
		fa_proc_free(&r);
	}
}

/* gnuplot there when tune looks for it but gone when the heatmap is drawn
 * (here: the sweep's run asks git for the commit, and a stand-in git
 * removes the stand-in gnuplot) is status 1, as no gnuplot at all is, and as
 * fabench plot gives (plot/render_without_gnuplot_exits_1): not bad input. */
FA_TEST(tune, heatmap_gnuplot_gone_by_the_draw_exits_1)
{
	const char *dir = fa_test_tmpdir();
	char bin[1024], gp[1100], git[1100], script[1400], db[1100], heat[1100];
	char env_gp[1200], env_path[8192];
	struct fa_proc_result r;
	snprintf(bin, sizeof bin, "%s/fakebin", dir);
	snprintf(gp, sizeof gp, "%s/gnuplot", bin);
	snprintf(git, sizeof git, "%s/git", bin);
	snprintf(db, sizeof db, "%s/gone.db", dir);
	snprintf(heat, sizeof heat, "%s/gone.png", dir);
	mkdir(bin, 0777);
	unlink(db);
	unlink(heat);
	FA_REQUIRE(fa_test_write_script(gp, "#!/bin/sh\nexit 0\n") == 0);
	snprintf(script, sizeof script, "#!/bin/sh\nrm -f '%s'\nexit 1\n", gp);
	FA_REQUIRE(fa_test_write_script(git, script) == 0);
	snprintf(env_gp, sizeof env_gp, "FABENCH_GNUPLOT=%s", gp);
	snprintf(env_path, sizeof env_path, "PATH=%s:%s", bin, getenv("PATH") ? getenv("PATH") : "");
	char *argv[] = {"tune", "tests/suites/tiny.yaml", "--db", db, "--backend", "cpu",
			"--kernel", "cpu_flash", "--where", "q_len == 16", "--param", "block_q=8,64",
			"--heatmap", heat, NULL};
	fa_proc_run(argv, (char *[]){env_gp, env_path, NULL}, 120, &r);
	FA_CHECKF(r.status == 1 && strstr(r.err, "fabench tune: error: gnuplot is not installed ("),
		  "status %d: %s", r.status, r.err);
	FA_CHECK(access(gp, F_OK) != 0 && access(heat, F_OK) != 0);
	fa_proc_free(&r);
}

/* The heatmap of the sweep rings the marked rule's choice per case; the
 * rule's text reaches gnuplot only as a quoted string. */
FA_TEST(tune, heatmap_marks)
{
	const char *db = planted_db();
	struct fa_tune_opts o;
	struct fa_tune t;
	struct fa_err err;
	struct fa_store *s = NULL;
	char *buf = NULL;
	size_t len = 0;
	planted_opts(&o);
	o.by = NULL;
	o.rules[o.n_rules++] = "mask == 'causal' ? 16 : 4"; /* quotes: the marked rule */
	FA_REQUIRE(build(db, &o, &t, &err) == FA_OK);
	int rule = fa_tune_mark_rule(&t);
	FA_REQUIRE(rule == t.n_rules - 1 && strcmp(t.rules[rule].name, "R3") == 0);
	int64_t idx[6];
	const char *params[6];
	for (int i = 0; i < 6; i++) {
		idx[i] = t.cases[i].idx;
		params[i] = t.rules[rule].choice[i] >= 0 ? t.value_params[t.rules[rule].choice[i]]
							 : NULL;
	}
	FA_CHECK(params[0] && strcmp(params[0], "splits=4,order=1") == 0);
	struct fa_plot_opts po;
	memset(&po, 0, sizeof po);
	po.kind = FA_PLOT_HEATMAP;
	po.run_id = 1;
	po.kernel = "k_tune";
	po.mark_idx = idx;
	po.mark_params = params;
	po.n_marks = 6;
	po.mark_label = "R3: mask == 'causal' ? 16 : 4 `rm -rf x` $(id) @x";
	FA_REQUIRE(fa_store_open_readonly(db, &s, &err) == FA_OK);
	FILE *f = open_memstream(&buf, &len);
	FA_REQUIRE(f);
	FA_CHECK(fa_plot_script(s, &po, f, &err) == FA_OK);
	fclose(f);
	fa_store_close(s);
	/* every case is mask none: 4 everywhere, column 1 of splits 1, 4, 16 */
	FA_CHECK(buf && strstr(buf, "$marks << EOD\n# params_index case_row\n1 0\n1 1\n1 2\n1 3\n1 4\n1 5\nEOD\n"));
	FA_CHECK(buf && strstr(buf, "title 'R3: mask == ''causal'' ? 16 : 4 `rm -rf x` $(id) @x'\n"));
	FA_CHECK(buf && strstr(buf, "set key outside top left horizontal\n"));
	free(buf);
	fa_tune_free(&t);

	/* through the command: a bad extension, and an SVG where gnuplot is */
	struct fa_proc_result r;
	char *bad[] = {"tune", "--run", "1", "--db", (char *)db, "--heatmap", "x.gif", NULL};
	FA_CHECK(run_tune(bad, &r) == 2 && strstr(r.err, "--heatmap 'x.gif' must end in .png or .svg"));
	fa_proc_free(&r);
	/* without gnuplot: 1, as fabench plot heatmap gives, before the report */
	char none[1024];
	snprintf(none, sizeof none, "%s/none.svg", fa_test_tmpdir());
	unlink(none);
	char *no_gnuplot[] = {"tune", "--run", "1", "--db", (char *)db, "--heatmap", none, NULL};
	fa_proc_run(no_gnuplot, (char *[]){"FABENCH_GNUPLOT=gnuplot-that-is-not-installed", NULL},
		    60, &r);
	FA_CHECKF(r.status == 1 && strstr(r.err, "gnuplot is not installed: --heatmap needs it; "
						 "install the gnuplot-nox package"),
		  "status %d: %s", r.status, r.err);
	FA_CHECK(r.out[0] == '\0' && access(none, F_OK) != 0);
	fa_proc_free(&r);
	if (!fa_plot_gnuplot_available()) {
		fa_test_skip("gnuplot is not installed: the heatmap is not drawn");
		return;
	}
	char svg[1024];
	snprintf(svg, sizeof svg, "%s/heat.svg", fa_test_tmpdir());
	char *ok[] = {"tune", "--run", "1", "--db", (char *)db, "--auto", "4", "--by", "batch,kv_len",
		      "--heatmap", svg, NULL};
	FA_CHECK(run_tune(ok, &r) == 0);
	fa_proc_free(&r);
	size_t n = 0;
	char *img = fa_test_read_file(svg, &n);
	FA_CHECK(img && strstr(img, "<svg") && strstr(img, "16k ? 16 : (batch "));
	free(img);
	/* a rule wider than the cells: gnuplot leaves out a key that does not
	 * fit, so the plot widens to keep the rule's name on it */
	char *long_rule[] = {"tune", "--run", "1", "--db", (char *)db, "--auto", "4", "--rule",
			     "batch * 0 + kv_len * 0 + q_len * 0 + heads * 0 + kv_heads * 0 + "
			     "head_dim * 0 + head_dim_v * 0 + 4",
			     "--heatmap", svg, NULL};
	FA_CHECK(run_tune(long_rule, &r) == 0);
	fa_proc_free(&r);
	img = fa_test_read_file(svg, &n);
	FA_CHECKF(img && strstr(img, "R1: batch * 0 + kv_len * 0 + q_len * 0 + heads * 0 + kv_heads "
				     "* 0 + head_dim * 0 + head_dim_v * 0 + 4"),
		  "the key naming the rule is not in the SVG");
	free(img);
}

/* run --ab-params: one build, two sets of params, samples taken in turn;
 * compare pairs them as it does the two builds of --ab. */
FA_TEST(tune, ab_params)
{
	char db[1024], suite[1024], gate_db[1024];
	struct fa_proc_result r;
	snprintf(db, sizeof db, "%s/ab.db", fa_test_tmpdir());
	snprintf(gate_db, sizeof gate_db, "%s/never.db", fa_test_tmpdir());
	snprintf(suite, sizeof suite, "%s/tiny.yaml", fa_test_tmpdir());
	unlink(db);
	FILE *f = fopen(suite, "w");
	FA_REQUIRE(f);
	fputs("suite: tiny\n"
	      "measure: {warmup: 1, min_samples: 8, max_samples: 12, min_time_ms: 1, max_time_ms: 20}\n"
	      "defaults: {heads: 2, head_dim: 32, dtype: fp32}\n"
	      "axes:\n  q_len: [16, 64]\n  kv_len: [64]\n",
	      f);
	fclose(f);
	char *run[] = {"run", suite, "--db", db, "--backend", "cpu", "--kernels", "cpu_flash",
		       "--ab-params", "--param", "a:cpu_flash.block_q=16", "--param",
		       "b:cpu_flash.block_q=64", "--label", "bq", NULL};
	fa_proc_run(run, NULL, 120, &r);
	FA_CHECKF(r.status == 0, "run --ab-params: %d %s", r.status, r.err);
	FA_CHECK(strstr(r.out, "A --param cpu_flash.block_q=16"));
	FA_CHECK(strstr(r.out, "B --param cpu_flash.block_q=64"));
	FA_CHECK(strstr(r.out, "both sides run on the same buffers"));
	FA_CHECK(strstr(r.out, "compare: fabench compare --db"));
	FA_CHECK(strstr(r.out, " --ignore-params bq-a bq-b\n"));
	fa_proc_free(&r);
	char *cmp[] = {"compare", "--db", db, "--ignore-params", "bq-a", "bq-b", NULL};
	fa_proc_run(cmp, NULL, 60, &r);
	FA_CHECK(r.status == 0);
	FA_CHECK(strstr(r.out, "- paired: the two runs of one `run --ab`"));
	FA_CHECK(strstr(r.out, "cpu_flash[block_q=16,block_k=64 -> block_q=64,block_k=64]"));
	fa_proc_free(&r);

	/* usage errors: nothing written */
	char *both[] = {"run", suite, "--db", gate_db, "--ab", "x.so:y.so", "--ab-params", NULL};
	fa_proc_run(both, NULL, 60, &r);
	FA_CHECK(r.status == 2 && strstr(r.err, "--ab and --ab-params do not go together"));
	fa_proc_free(&r);
	char *iso[] = {"run", suite, "--db", gate_db, "--ab-params", "--isolate", NULL};
	fa_proc_run(iso, NULL, 60, &r);
	FA_CHECK(r.status == 2 && strstr(r.err, "--ab-params does not go with --isolate"));
	fa_proc_free(&r);
	char *side[] = {"run", suite, "--db", gate_db, "--param", "a:cpu_flash.block_q=16", NULL};
	fa_proc_run(side, NULL, 60, &r);
	FA_CHECK(r.status == 2 &&
		 strstr(r.err, "a side (a: or b:) goes with --ab or --ab-params only"));
	fa_proc_free(&r);
	char *badk[] = {"run", suite, "--db", gate_db, "--backend", "cpu", "--ab-params",
			"--param", "b:nope.block_q=16", NULL};
	fa_proc_run(badk, NULL, 60, &r);
	FA_CHECK(r.status == 2);
	fa_proc_free(&r);
	FA_CHECK(access(gate_db, F_OK) != 0);
}

/* The selection is part of the result: --where shows in the markdown, the
 * JSON options and the header, whose "made by" line is the command that
 * makes it again (quoted for a shell); a rule that loses nothing has no
 * worst case. */
FA_TEST(tune, where_and_command_recorded)
{
	const char *db = planted_db();
	struct fa_tune_opts o;
	struct fa_tune t;
	struct fa_err err;
	planted_opts(&o);
	o.where = "input == 'normal' || kv_len >= 1";
	FA_REQUIRE(build(db, &o, &t, &err) == FA_OK);
	char *md = text_of(&t, FA_FMT_MD, 0), *js = text_of(&t, FA_FMT_JSON, 0),
	     *h = text_of(&t, 0, 1);
	FA_CHECK(md && strstr(md, "- selection: where `input == 'normal' || kv_len >= 1`\n"));
	FA_CHECK(js && strstr(js, "\"where\": \"input == 'normal' || kv_len >= 1\"}"));
	FA_CHECKF(h && strstr(h, " * made by: fabench tune --run 1 --kernel k_tune --param splits "
				 "--by 'batch,kv_len' --depth 2 --where 'input == '\\''normal'\\'' || "
				 "kv_len >= 1' --auto 4 --min-effect 4 --alpha 0.05\n"),
		  "%s", h ? h : "(null)");
	FA_CHECK(md && strstr(md, "| fitted | `kv_len >= 16k ? 16 : (batch >= 8 ? 1 : 4)` |") &&
		 strstr(md, "+0.0% | -          |"));
	free(md);
	free(js);
	free(h);
	/* a name a shell splits is quoted, and --min-effect and --alpha read
	 * back as the values used (%g kept 6 digits: 1.23457) */
	char *param = t.param, p2[] = "sp lits";
	t.param = p2;
	t.min_effect = 0.012345678;
	t.alpha = 0.0123456789;
	h = text_of(&t, 0, 1);
	t.param = param;
	FA_CHECKF(h && strstr(h, " --kernel k_tune --param 'sp lits' --by ") &&
			  strstr(h, " --min-effect 1.2345678 --alpha 0.0123456789\n"),
		  "%s", h ? h : "(null)");
	free(h);
	fa_tune_free(&t);
}

/* The list of cases a rule loses on uses the per-case table's words: a
 * value among the ties is a tie there too (it said "same"). */
FA_TEST(tune, loss_list_says_tie_as_the_table_does)
{
	const char *db = planted_db();
	struct fa_tune_opts o;
	struct fa_tune t;
	struct fa_err err;
	planted_opts(&o);
	o.rules[o.n_rules++] = "kv_len >= 4k ? 16 : 4";
	o.loss = 0.001;
	FA_REQUIRE(build(db, &o, &t, &err) == FA_OK);
	char *md = text_of(&t, FA_FMT_MD, 0);
	FA_CHECKF(md && strstr(md, "- case 2 `batch=1,kv_len=4096`: 16 is +0.4% (tie) against 4\n") &&
			  strstr(md, "- case 5 `batch=8,kv_len=4096`: 16 is +20.0% (slower) against 1\n"),
		  "%s", md ? md : "(null)");
	free(md);
	fa_tune_free(&t);
}

/* A sweep that was interrupted or stopped is said to be so: its figures
 * cover only the cases it stored (markdown, JSON). */
FA_TEST(tune, incomplete_run_is_said)
{
	const char *db = planted_db();
	struct fa_tune_opts o;
	struct fa_tune t;
	struct fa_err err;
	planted_opts(&o);
	FA_REQUIRE(build(db, &o, &t, &err) == FA_OK);
	char *md = text_of(&t, FA_FMT_MD, 0), *js = text_of(&t, FA_FMT_JSON, 0);
	FA_CHECK(md && !strstr(md, "is incomplete") && js && strstr(js, "\"status\": \"complete\"}"));
	free(md);
	free(js);
	fa_tune_free(&t);
	FA_REQUIRE(fa_test_db_exec(db, "UPDATE runs SET status = 'incomplete'") == 0);
	planted_opts(&o);
	FA_REQUIRE(build(db, &o, &t, &err) == FA_OK);
	md = text_of(&t, FA_FMT_MD, 0);
	js = text_of(&t, FA_FMT_JSON, 0);
	FA_CHECKF(md && strstr(md, "\n- **run 1 is incomplete**: the figures below cover only the "
				  "cases it stored (`fabench run --resume 1` finishes an "
				  "interrupted run)\n"),
		  "%s", md ? md : "(null)");
	FA_CHECK(js && strstr(js, "\"status\": \"incomplete\"}"));
	free(md);
	free(js);
	fa_tune_free(&t);
}

/* A --by that takes one value over the run's cases cannot split them: the
 * markdown says so rather than fit nothing on it in silence. */
FA_TEST(tune, by_without_variation_is_noted)
{
	const char *db = planted_db();
	struct fa_tune_opts o;
	struct fa_tune t;
	struct fa_err err;
	planted_opts(&o);
	o.by = "batch, head_dim";
	FA_REQUIRE(build(db, &o, &t, &err) == FA_OK);
	char *md = text_of(&t, FA_FMT_MD, 0);
	FA_CHECKF(md && strstr(md, "Note: `head_dim` is ") &&
			  strstr(md, " in every case of the run, so no threshold can be put on it"),
		  "%s", md ? md : "(null)");
	FA_CHECK(md && !strstr(md, "Note: `batch`"));
	free(md);
	fa_tune_free(&t);
}


/* ---- the fit against brute force ---------------------------------------------------------- */

/* A random tune table: n cases (batch, q_len, kv_len drawn from small sets,
 * so some repeat and a --by may be constant), n_values values of splits with
 * medians from a small set (exact ties), some failed or skipped. */
struct rnd_table {
	int n, n_values, values[4];
	int batch[8], q_len[8], kv_len[8];
	double med[8][4]; /* NaN: failed (status 1) or skipped (status 2) */
	int status[8][4];
	int pass[8];      /* enum fa_pass; 0: fwd */
};

static uint64_t rnd_next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static int rnd_below(uint64_t *s, int n)
{
	return (int)(rnd_next(s) % (uint64_t)n);
}

static void rnd_table_draw(struct rnd_table *rt, uint64_t *s, int max_cases)
{
	static const int batches[] = {1, 2, 3, 8}, qs[] = {1, 16, 64}, kvs[] = {64, 1024, 4096};
	static const double meds[] = {1.0, 1.0, 1.05, 1.2, 1.5, 2.0, 3.0};
	memset(rt, 0, sizeof *rt);
	rt->n = 1 + rnd_below(s, max_cases);
	rt->n_values = 2 + rnd_below(s, 3);
	for (int v = 0; v < rt->n_values; v++)
		rt->values[v] = 1 << (2 * v); /* 1, 4, 16, 64 */
	int constant_batch = rnd_below(s, 4) == 0;
	for (int i = 0; i < rt->n; i++) {
		rt->batch[i] = constant_batch ? 2 : batches[rnd_below(s, 4)];
		rt->q_len[i] = qs[rnd_below(s, 3)];
		rt->kv_len[i] = kvs[rnd_below(s, 3)];
		for (int v = 0; v < rt->n_values; v++) {
			int r = rnd_below(s, 20);
			rt->status[i][v] = r == 0 ? 1 : r == 1 ? 2 : 0;
			rt->med[i][v] = rt->status[i][v] ? NAN : meds[rnd_below(s, 7)];
		}
	}
}

#define RND_SAMPLES 5

/* The table as run 1 of a database at path, kernel k_rnd, param splits. */
static int rnd_table_plant(const struct rnd_table *rt, const char *path)
{
	struct fa_store *s = NULL;
	struct fa_run_info ri;
	struct fa_err err;
	int64_t run_id;
	unlink(path);
	fa_err_clear(&err);
	if (fa_store_open(path, 1, &s, &err) != FA_OK)
		return -1;
	memset(&ri, 0, sizeof ri);
	ri.started_at = "2026-11-26T10:00:00Z";
	ri.backend = "cpu";
	ri.device_name = "random";
	ri.suite_name = "rnd";
	ri.label = "rnd";
	ri.seed = 1;
	if (fa_store_run_begin(s, &ri, &run_id, &err) != FA_OK)
		goto fail;
	for (int i = 0; i < rt->n; i++) {
		struct fa_case c;
		struct fa_result r[4];
		char key[96], params[4][32];
		double samples[4][RND_SAMPLES];
		memset(&c, 0, sizeof c);
		c.index = i;
		c.p = (struct fa_problem){.batch = rt->batch[i], .heads = 8, .kv_heads = 8,
					  .q_len = rt->q_len[i], .kv_len = rt->kv_len[i],
					  .head_dim = 64, .head_dim_v = 64, .scale = 0.125f};
		c.p.total_q = c.p.batch * c.p.q_len;
		c.p.total_k = c.p.batch * c.p.kv_len;
		c.pass = rt->pass[i];
		snprintf(key, sizeof key, "case%d", i);
		c.key = key;
		memset(r, 0, sizeof r);
		for (int v = 0; v < rt->n_values; v++) {
			struct fa_result *x = &r[v];
			snprintf(params[v], sizeof params[v], "splits=%d", rt->values[v]);
			x->kernel = "k_rnd";
			x->backend = "cpu";
			x->params = params[v];
			x->tel = (struct fa_telemetry){NAN, NAN, NAN, NAN, -1};
			x->st.worst_index = -1;
			if (rt->status[i][v]) {
				x->status = rt->status[i][v] == 1 ? FA_STATUS_FAIL : FA_STATUS_SKIP;
				snprintf(x->reason, sizeof x->reason, "planted");
				continue;
			}
			for (int j = 0; j < RND_SAMPLES; j++) /* the median is med exactly */
				samples[v][j] = rt->med[i][v] * (1 + 0.001 * (j - RND_SAMPLES / 2));
			x->status = FA_STATUS_PASS;
			x->t.n = RND_SAMPLES;
			x->t.median_ms = rt->med[i][v];
			x->samples = samples[v];
		}
		if (fa_store_case_commit(s, run_id, &c, r, rt->n_values, NULL, &err) != FA_OK)
			goto fail;
	}
	if (fa_store_run_end(s, run_id, "complete", &err) != FA_OK)
		goto fail;
	fa_store_close(s);
	return 0;
fail:
	fprintf(stderr, "plant: %s\n", err.msg);
	fa_store_close(s);
	return -1;
}

/* The brute force: every tree of depth <= depth over the cases set[0..n),
 * each split `x >= t` with t a finite value of x in the set (a NaN x fails
 * every x >= t, as the rule's comparison does), kept only when every split
 * gains more than gain over a leaf at its node. Appends each kept tree's
 * (cost, leaves) to out (cap entries at most; returns the count, -1 past
 * cap). */
struct bf_tree {
	double cost;
	int leaves;
};

struct bf_ctx {
	int n_values, n_by;
	double lr[8][4];  /* ln(median / best), INFINITY untimed */
	double x[8][3];   /* the --by values */
	double gain;
};

static double bf_leaf(const struct bf_ctx *b, const int *set, int n)
{
	double best = INFINITY;
	for (int v = 0; v < b->n_values; v++) {
		double c = 0;
		for (int i = 0; i < n; i++)
			c += b->lr[set[i]][v];
		if (c < best)
			best = c;
	}
	return best;
}

static int bf_trees(const struct bf_ctx *b, const int *set, int n, int depth, struct bf_tree *out,
		    int cap)
{
	double leaf = bf_leaf(b, set, n);
	int count = 0;
	if (cap < 1)
		return -1;
	out[count++] = (struct bf_tree){leaf, 1};
	if (depth == 0)
		return count;
	for (int f = 0; f < b->n_by; f++) {
		for (int k = 0; k < n; k++) {
			double thr = b->x[set[k]][f];
			int dup = !isfinite(thr);
			for (int j = 0; j < k && !dup; j++)
				dup = b->x[set[j]][f] == thr;
			if (dup)
				continue;
			int l[8], r[8], nl = 0, nr = 0;
			for (int i = 0; i < n; i++) {
				if (b->x[set[i]][f] >= thr)
					r[nr++] = set[i];
				else
					l[nl++] = set[i];
			}
			if (!nl || !nr)
				continue;
			struct bf_tree *lt = malloc(4096 * sizeof *lt), *rt = malloc(4096 * sizeof *rt);
			int cl = lt ? bf_trees(b, l, nl, depth - 1, lt, 4096) : -1;
			int cr = rt ? bf_trees(b, r, nr, depth - 1, rt, 4096) : -1;
			for (int a = 0; cl >= 0 && cr >= 0 && a < cl && count >= 0; a++)
				for (int c = 0; c < cr && count >= 0; c++) {
					double cost = lt[a].cost + rt[c].cost;
					if (!(cost < leaf - b->gain))
						continue;
					if (count == cap)
						count = -1;
					else
						out[count++] = (struct bf_tree){cost, lt[a].leaves + rt[c].leaves};
				}
			if (cl < 0 || cr < 0)
				count = -1;
			free(lt);
			free(rt);
			if (count < 0)
				return -1;
		}
	}
	return count;
}

/* The --by expressions the test draws from, and their values for case i
 * of rt: kv_len / (batch - 1) is undefined (NaN) at batch 1, an integer
 * division by zero. */
static const char *const rnd_by_text[4] = {"batch", "kv_len", "kv_len / (batch - 1)", "q_len"};

static double rnd_by(const struct rnd_table *rt, int i, int f)
{
	switch (f) {
	case 0: return rt->batch[i];
	case 1: return rt->kv_len[i];
	case 2: return rt->batch[i] == 1 ? NAN : (double)(rt->kv_len[i] / (rt->batch[i] - 1));
	default: return rt->q_len[i];
	}
}

/* The fitted rule on random tables: its summed log regret is the least of
 * every tree the brute force finds in the same rule space, with as few
 * leaves as the fewest of those, and the cases get the value its boxes (the
 * header's table) give them. */
FA_TEST(tune, fit_matches_brute_force)
{
	uint64_t seed = fa_test_seed(), s = seed | 1;
	char path[1024];
	int checked = 0, split = 0, infinite = 0;
	struct bf_tree *all = malloc(200000 * sizeof *all);
	FA_REQUIRE(all);
	snprintf(path, sizeof path, "%s/rnd.db", fa_test_tmpdir());
	for (int trial = 0; trial < 150; trial++) {
		struct rnd_table rt;
		struct fa_tune_opts o;
		struct fa_tune t;
		struct fa_err err;
		int depth = 1 + rnd_below(&s, 3);
		rnd_table_draw(&rt, &s, depth == 3 ? 4 : 6);
		FA_REQUIRE(rnd_table_plant(&rt, path) == 0);
		fa_tune_opts_init(&o);
		o.kernel = "k_rnd";
		o.depth = depth;
		o.has_auto = rnd_below(&s, 2);
		o.auto_value = rt.values[rnd_below(&s, rt.n_values)];
		/* 1 to 3 distinct --by expressions in a random order */
		int n_by = 1 + rnd_below(&s, 3), feat[4] = {0, 1, 2, 3};
		char by[128] = "";
		for (int f = 0; f < n_by; f++) {
			int k = f + rnd_below(&s, 4 - f), tmp = feat[f];
			feat[f] = feat[k];
			feat[k] = tmp;
			snprintf(by + strlen(by), sizeof by - strlen(by), "%s%s", f ? ", " : "",
				 rnd_by_text[feat[f]]);
		}
		o.by = by;
		enum fa_rc rc = build(path, &o, &t, &err);
		FA_REQUIRE(rc == FA_OK || (fprintf(stderr, "trial %d: %s\n", trial, err.msg), 0));
		FA_REQUIRE(t.fitted >= 0 && t.n_by == n_by);
		const struct fa_tune_rule *fit = &t.rules[t.fitted];

		/* the brute force, on the medians of the table */
		struct bf_ctx b;
		int set[8], n = 0;
		memset(&b, 0, sizeof b);
		b.n_values = rt.n_values;
		b.n_by = n_by;
		b.gain = log1p(t.min_effect);
		for (int i = 0; i < rt.n; i++) {
			double best = INFINITY;
			for (int v = 0; v < rt.n_values; v++)
				if (rt.med[i][v] < best)
					best = rt.med[i][v];
			if (!isfinite(best))
				continue; /* nothing timed: no regret */
			for (int v = 0; v < rt.n_values; v++)
				b.lr[i][v] = isnan(rt.med[i][v]) ? INFINITY : log(rt.med[i][v] / best);
			for (int f = 0; f < n_by; f++)
				b.x[i][f] = rnd_by(&rt, i, feat[f]);
			set[n++] = i;
		}
		int count = bf_trees(&b, set, n, depth, all, 200000);
		FA_REQUIRE(count > 0);
		double min_cost = INFINITY;
		for (int k = 0; k < count; k++)
			if (all[k].cost < min_cost)
				min_cost = all[k].cost;
		int min_leaves = 99;
		for (int k = 0; k < count; k++)
			if (all[k].cost <= min_cost + 1e-9 && all[k].leaves < min_leaves)
				min_leaves = all[k].leaves;
		/* the fit's cost, from its scored rule (the parsed text) */
		double cost = 0;
		for (int i = 0; i < t.n_cases; i++)
			if (t.cases[i].best >= 0)
				cost += isnan(fit->loss[i]) ? INFINITY : log1p(fit->loss[i]);
		if (isfinite(min_cost)) {
			FA_CHECKF(fabs(cost - min_cost) < 1e-9 && fit->n_missing == 0,
				  "seed %llu trial %d: fitted '%s' costs %.12g (%d not timed), brute "
				  "force %.12g (by %s, depth %d)",
				  (unsigned long long)seed, trial, fit->text, cost, fit->n_missing,
				  min_cost, o.by, depth);
			FA_CHECKF(t.n_leaves == min_leaves,
				  "seed %llu trial %d: fitted '%s' has %d leaves, brute force %d",
				  (unsigned long long)seed, trial, fit->text, t.n_leaves, min_leaves);
			if (n)
				FA_CHECK_NEAR(fit->geomean_loss, expm1(min_cost / n), 1e-9);
			else /* no case timed: no regret */
				FA_CHECK(isnan(fit->geomean_loss) && fit->n_used == 0);
		} else {
			/* every tree leaves a case with a value that was not timed */
			FA_CHECK(fit->n_missing > 0);
			infinite++;
		}
		/* the boxes give each case the value the rule's text gives it; a
		 * NaN x fails every x >= t, so it sits below every threshold */
		for (int i = 0; i < t.n_cases; i++) {
			int in_boxes = 0, value = -1;
			for (int k = 0; k < t.n_leaves; k++) {
				int in = 1;
				for (int f = 0; f < n_by; f++) {
					double x = t.cases[i].x[f];
					if (isnan(x))
						x = -INFINITY;
					in = in && t.leaves[k].lo[f] <= x &&
					     (x < t.leaves[k].hi[f] || t.leaves[k].hi[f] == INFINITY);
				}
				if (in) {
					in_boxes++;
					value = t.values[t.leaves[k].value];
				}
			}
			FA_CHECKF(in_boxes == 1 && value == fit->choice_value[i],
				  "seed %llu trial %d case %d: in %d boxes, value %d, rule '%s' %g",
				  (unsigned long long)seed, trial, i, in_boxes, value, fit->text,
				  fit->choice_value[i]);
		}
		/* one leaf: the value of least cost, the built-in value on a tie,
		 * else the smallest */
		if (t.n_leaves == 1 && isfinite(min_cost)) {
			double c[4] = {0, 0, 0, 0}, least = INFINITY;
			int want = -1;
			for (int v = 0; v < rt.n_values; v++) {
				for (int k = 0; k < n; k++)
					c[v] += b.lr[set[k]][v];
				least = fmin(least, c[v]);
			}
			for (int v = 0; v < rt.n_values; v++)
				if (c[v] == least &&
				    (want < 0 || (o.has_auto && rt.values[v] == o.auto_value)))
					want = v;
			FA_CHECKF(t.values[t.leaves[0].value] == rt.values[want],
				  "seed %llu trial %d: one leaf of %d, expected %d (auto %d)",
				  (unsigned long long)seed, trial, t.values[t.leaves[0].value],
				  rt.values[want], o.has_auto ? o.auto_value : -1);
		}
		/* a single case, or one --by that is constant: no split */
		int varies = 0;
		for (int i = 1; i < rt.n; i++)
			varies |= !(rnd_by(&rt, i, feat[0]) == rnd_by(&rt, 0, feat[0]));
		if (rt.n == 1 || (n_by == 1 && !varies))
			FA_CHECK(t.n_leaves == 1);
		split += t.n_leaves > 1;
		checked++;
		fa_tune_free(&t);
	}
	free(all);
	printf("  tune/fit_matches_brute_force: %d tables, %d fitted with a split, %d where no "
	       "tree times every case\n",
	       checked, split, infinite);
}

/* The C header compiles under the project's warnings as an error, for an
 * awkward kernel and param name (a comment's opening in one) and several
 * --by expressions, and its choose() gives every case of the run the value
 * the printed rule gives it, a case whose --by value is undefined (NaN:
 * kv_len / (batch - 1) at batch 1) included: the rule's x >= t is false for
 * it. */
FA_TEST(tune, header_compiles_and_agrees)
{
	const char *db = planted_db();
	struct fa_tune_opts o;
	struct fa_tune t;
	struct fa_err err;
	char dir[512], hpath[600], cpath[600], bin[600], cmd[4096];
	if (system("cc --version >/dev/null 2>&1") != 0) {
		fa_test_skip("no cc: the header is not compiled");
		return;
	}
	snprintf(dir, sizeof dir, "%s", fa_test_tmpdir());
	snprintf(hpath, sizeof hpath, "%s/awk.h", dir);
	snprintf(cpath, sizeof cpath, "%s/awk.c", dir);
	snprintf(bin, sizeof bin, "%s/awk", dir);
	planted_opts(&o);
	o.by = "kv_len / (batch - 1), kv_len";
	FA_REQUIRE(build(db, &o, &t, &err) == FA_OK);
	FA_REQUIRE(t.fitted >= 0 && t.n_by == 2);
	const struct fa_tune_rule *fit = &t.rules[t.fitted];
	FA_CHECKF(strcmp(fit->text, "kv_len >= 16k ? 16 : ((kv_len / (batch - 1)) >= 146 ? 1 : 4)") == 0,
		  "fitted '%s'", fit->text);
	char *kernel = t.kernel, *param = t.param, k2[] = "9k.tune-x/*", p2[] = "sp lits";
	t.kernel = k2;
	t.param = p2;
	char *h = text_of(&t, 0, 1);
	t.kernel = kernel;
	t.param = param;
	FA_REQUIRE(h && fa_test_write_file(hpath, h) == 0);
	FILE *f = fopen(cpath, "w");
	FA_REQUIRE(f);
	fprintf(f, "#include <math.h>\n#include <stdio.h>\n#include \"awk.h\"\n\n"
		   "int main(void)\n{\n\tstatic const double x[][2] = {\n");
	for (int i = 0; i < t.n_cases; i++) {
		fputs("\t\t{", f);
		for (int k = 0; k < 2; k++) {
			double x = t.cases[i].x[k];
			if (isnan(x))
				fprintf(f, "%sNAN", k ? ", " : "");
			else
				fprintf(f, "%s%.17g", k ? ", " : "", x);
		}
		fputs("},\n", f);
	}
	/* an infinite x lies above every threshold, as in the rule: 1 */
	fputs("\t\t{HUGE_VAL, 1024},\n", f);
	fprintf(f, "\t};\n\tfor (unsigned i = 0; i < sizeof x / sizeof x[0]; i++)\n"
		   "\t\tprintf(\"%%d\\n\", fa_9k_tune_x___sp_lits_choose(x[i]));\n\treturn 0;\n}\n");
	fclose(f);
	snprintf(cmd, sizeof cmd,
		 "cc -std=c11 -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes "
		 "-Wmissing-prototypes -Wvla -o '%s' '%s' -lm > '%s/cc.txt' 2>&1 && '%s' > '%s/out.txt'",
		 bin, cpath, dir, bin, dir);
	int st = system(cmd);
	snprintf(cmd, sizeof cmd, "%s/cc.txt", dir);
	char *cc_out = fa_test_read_file(cmd, NULL);
	FA_CHECKF(st == 0, "the header does not compile or run: %s\n%s", cc_out ? cc_out : "", h);
	free(cc_out);
	snprintf(cmd, sizeof cmd, "%s/out.txt", dir);
	char *out = fa_test_read_file(cmd, NULL), *p = out;
	int nan_cases = 0;
	for (int i = 0; i < t.n_cases && p; i++) {
		long v = strtol(p, &p, 10);
		FA_CHECKF(v == (long)fit->choice_value[i],
			  "case %d (x %g, %g): the header chooses %ld, the rule '%s' %g", i,
			  t.cases[i].x[0], t.cases[i].x[1], v, fit->text, fit->choice_value[i]);
		nan_cases += isnan(t.cases[i].x[0]);
	}
	long inf_value = p ? strtol(p, &p, 10) : -1;
	FA_CHECKF(inf_value == 1, "x {HUGE_VAL, 1024}: the header chooses %ld, the rule 1",
		  inf_value);
	FA_CHECK(out && nan_cases == 3);
	free(out);
	free(h);
	fa_tune_free(&t);
}

/* A stored case is read whole for --where, --rule and --by: the pass too
 * (a backward kernel's sweep), as the heatmap reads it. */
FA_TEST(tune, expressions_read_the_pass)
{
	struct rnd_table rt;
	struct fa_tune_opts o;
	struct fa_tune t;
	struct fa_err err;
	char path[1024];
	memset(&rt, 0, sizeof rt);
	rt.n = 4;
	rt.n_values = 2;
	rt.values[0] = 1;
	rt.values[1] = 4;
	for (int i = 0; i < 4; i++) {
		rt.batch[i] = 1;
		rt.q_len[i] = 64;
		rt.kv_len[i] = i % 2 ? 4096 : 1024;
		rt.pass[i] = i < 2 ? FA_PASS_FWD : FA_PASS_BWD;
		rt.med[i][0] = i < 2 ? 1.0 : 2.0; /* 1 on the forward, 4 on the backward */
		rt.med[i][1] = i < 2 ? 2.0 : 1.0;
	}
	snprintf(path, sizeof path, "%s/pass.db", fa_test_tmpdir());
	FA_REQUIRE(rnd_table_plant(&rt, path) == 0);
	fa_tune_opts_init(&o);
	o.kernel = "k_rnd";
	o.where = "pass == 'bwd'";
	o.rules[o.n_rules++] = "pass == 'bwd' ? 4 : 1";
	o.by = "kv_len, pass == 'fwd' ? 0 : 1";
	FA_REQUIRE(build(path, &o, &t, &err) == FA_OK || (fprintf(stderr, "%s\n", err.msg), 0));
	FA_CHECK(t.n_cases == 2 && t.cases[0].idx == 2 && t.cases[1].idx == 3);
	FA_CHECK(t.rules[0].n_used == 2 && t.rules[0].geomean_loss == 0);
	fa_tune_free(&t);
	o.where = NULL;
	FA_REQUIRE(build(path, &o, &t, &err) == FA_OK);
	FA_CHECK(t.n_cases == 4 && t.rules[0].geomean_loss == 0);
	FA_REQUIRE(t.fitted >= 0);
	FA_CHECKF(strcmp(t.rules[t.fitted].text, "(pass == 'fwd' ? 0 : 1) >= 1 ? 4 : 1") == 0,
		  "fitted '%s'", t.rules[t.fitted].text);
	fa_tune_free(&t);
}
