/* test_plot.c - `fabench plot`: the gnuplot scripts of the four kinds against
 * golden files (tests/golden/plot_*.gp, byte for byte: labels, colours and
 * data, without depending on gnuplot's rendering), what the scripts must
 * hold (every kernel, axis labels with units, consistent colours), the
 * errors (unknown run, nothing to plot, a bad --where, no tuned kernel,
 * gnuplot missing or failing, with its temporary folder removed), and, where
 * gnuplot is installed, real PNG and SVG images of every kind, and hostile
 * text (backquotes, macros, quotes, line breaks) through every kind: never
 * run by gnuplot, always inside single quotes or datablocks.
 *
 * Data: the report fixture (tests/fixture.h) for throughput and speedup,
 * the history fixture (tests/fixture_history.h) for history, and a tuning
 * run built here (one kernel with six sets of params) for the heatmap.
 *
 * FABENCH_UPDATE_GOLDEN=1 rewrites the golden files instead of comparing.
 */
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../harness/base/text.h"
#include "../harness/cli/cmd.h"
#include "../harness/report/compare.h"
#include "../harness/report/history.h"
#include "../harness/run/measure.h"
#include "../harness/report/plot.h"
#include "fixture.h"
#include "fixture_history.h"
#include "golden.h"
#include "proc.h"
#include "test.h"

/* ---- Databases ------------------------------------------------------------- */

/* The tuning run: cuda_flash_mma with block_q 64 / 128 x block_k 32 / 64 /
 * 128 (six sets, stored in a scrambled order) and cuda_dense without
 * params, on q_len 512 / 2048 / 8192 x head_dim 64 / 128 (fp16, causal).
 * block_q=128,block_k=128 is skipped on head_dim 128 (shared memory) and
 * block_q=64,block_k=32 fails its check on case 0. Times follow a fixed
 * model: large tiles win on long sequences, small ones on short. */
#define TUNE_KERNEL "cuda_flash_mma"
#define TUNE_SETS 6
#define TUNE_CASES 6
static const char *const tune_params[TUNE_SETS] = {
	"block_q=128,block_k=64", "block_q=64,block_k=32",  "block_q=128,block_k=128",
	"block_q=64,block_k=64",  "block_q=128,block_k=32", "block_q=64,block_k=128",
};

static enum fa_rc build_tuning_db(const char *path, int64_t *run_id)
{
	struct fa_store *s = NULL;
	struct fa_run_info ri;
	struct fa_err err;
	enum fa_rc rc;

	fa_err_clear(&err);
	rc = fa_fixture_create(path, &s, &err);
	memset(&ri, 0, sizeof ri);
	ri.started_at = "2026-11-27T10:00:00Z";
	ri.backend = "cuda";
	ri.device_name = "NVIDIA H100 80GB HBM3";
	ri.suite_name = "tune-mma";
	ri.label = "tune";
	ri.seed = 7;
	if (rc == FA_OK)
		rc = fa_store_run_begin(s, &ri, run_id, &err);
	for (int idx = 0; rc == FA_OK && idx < TUNE_CASES; idx++) {
		static const int q_lens[3] = {512, 2048, 8192};
		int q = q_lens[idx % 3], hd = idx < 3 ? 64 : 128;
		struct fa_case c;
		struct fa_result res[TUNE_SETS + 1];
		double samples[TUNE_SETS + 1][5];
		char key[256];
		double flops = 2.0 * 16 * 2 * (double)q * q * 2.0 * hd; /* causal: half */
		memset(&c, 0, sizeof c);
		c.index = idx;
		c.p = (struct fa_problem){.batch = 2, .heads = 16, .kv_heads = 16, .q_len = q,
					  .kv_len = q, .head_dim = hd, .head_dim_v = hd,
					  .dtype = FA_DTYPE_FP16, .mask = FA_MASK_CAUSAL,
					  .total_q = 2 * q, .total_k = 2 * q,
					  .scale = 1.0f / sqrtf((float)hd)};
		snprintf(key, sizeof key,
			 "batch=2,heads=16,kv_heads=16,q_len=%d,kv_len=%d,head_dim=%d,head_dim_v=%d,"
			 "dtype=fp16,mask=causal,layout=bshd,input=normal",
			 q, q, hd, hd);
		c.key = key;
		for (int k = 0; k <= TUNE_SETS; k++) {
			struct fa_result *r = &res[k];
			int bq = 0, bk = 0;
			double tflops;
			memset(r, 0, sizeof *r);
			r->kernel = k < TUNE_SETS ? TUNE_KERNEL : "cuda_dense";
			r->params = k < TUNE_SETS ? tune_params[k] : "";
			r->backend = "cuda";
			r->timing = "cold";
			r->tel = (struct fa_telemetry){NAN, NAN, NAN, NAN, -1};
			r->st.same_max_abs = -1;
			r->st.worst_index = -1;
			if (k < TUNE_SETS)
				sscanf(tune_params[k], "block_q=%d,block_k=%d", &bq, &bk);
			if (bq == 128 && bk == 128 && hd == 128) {
				r->status = FA_STATUS_SKIP;
				snprintf(r->reason, sizeof r->reason,
					 "shared memory 160 KiB exceeds the 99 KiB of a block");
				continue;
			}
			/* efficiency: long sequences like big tiles, short ones
			 * small; each case has one best set */
			tflops = k == TUNE_SETS
					 ? 38
					 : 310 * (1 - 0.1 * fabs(log2(bq / 64.0) + 0.6 * log2(bk / 32.0) -
								  idx % 3)) *
						   (hd == 128 ? 1.08 : 1);
			for (int i = 0; i < 5; i++)
				samples[k][i] = flops / (tflops * 1e12) * 1e3 * (1 + 0.003 * (i - 2));
			r->samples = samples[k];
			fa_stats_compute(samples[k], 5, &r->t);
			r->flops = flops;
			r->tflops = flops / (r->t.median_ms * 1e-3) / 1e12;
			r->bytes = 2.0 * 4 * 2 * q * 16 * hd;
			r->gbps = r->bytes / (r->t.median_ms * 1e-3) / 1e9;
			r->checked = 1;
			r->st.max_abs = 4.8e-4;
			r->status = FA_STATUS_PASS;
			if (idx == 0 && bq == 64 && bk == 32) {
				r->status = FA_STATUS_FAIL;
				r->st.max_abs = 0.25;
				snprintf(r->reason, sizeof r->reason, "max_abs 0.25 > 0.002");
			}
		}
		rc = fa_store_case_commit(s, *run_id, &c, res, TUNE_SETS + 1, NULL, &err);
	}
	if (rc == FA_OK)
		rc = fa_store_run_end(s, *run_id, "complete", &err);
	if (rc != FA_OK)
		fprintf(stderr, "tuning db: %s\n", err.msg);
	fa_store_close(s);
	return rc;
}

static struct fa_store *open_tuning_db(int64_t *run_id)
{
	char path[1200];
	snprintf(path, sizeof path, "%s/tuning.db", fa_test_tmpdir());
	if (build_tuning_db(path, run_id) != FA_OK) {
		fa_test_fail(__FILE__, __LINE__, "cannot build the tuning run at '%s'", path);
		return NULL;
	}
	return fa_fixture_open_db(path);
}

/* ---- Scripts ------------------------------------------------------------------ */

/* The script of o as a malloc'd string; *rc and err get the result. */
static char *script_text(struct fa_store *s, const struct fa_plot_opts *o, enum fa_rc *rc,
			 struct fa_err *err)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f) {
		*rc = FA_ERR_NOMEM;
		return NULL;
	}
	fa_err_clear(err);
	*rc = fa_plot_script(s, o, f, err);
	fclose(f);
	return buf;
}

static struct fa_plot_opts opts_of(int kind, int format)
{
	struct fa_plot_opts o;
	memset(&o, 0, sizeof o);
	o.kind = kind;
	o.format = format;
	return o;
}

/* opts_of for a plot of one run (throughput, heatmap). */
static struct fa_plot_opts run_opts(int kind, int format, int64_t run_id)
{
	struct fa_plot_opts o = opts_of(kind, format);
	o.run_id = run_id;
	return o;
}

/* The script of o (malloc'd), or NULL after failing the test at the
 * caller's line with the error's message. */
#define SCRIPT_OK(s, o) script_ok(__LINE__, s, o)
static char *script_ok(int line, struct fa_store *s, const struct fa_plot_opts *o)
{
	struct fa_err err;
	enum fa_rc rc;
	char *text = script_text(s, o, &rc, &err);
	if (rc == FA_OK && text)
		return text;
	fa_test_fail(__FILE__, line, "script: rc %d: %s", (int)rc, err.msg);
	free(text);
	return NULL;
}

/* Fails the test at the caller's line unless o's script fails with want and
 * exactly the message msg. */
#define CHECK_SCRIPT_FAILS(s, o, want, msg) check_script_fails(__LINE__, s, o, want, msg)
static void check_script_fails(int line, struct fa_store *s, const struct fa_plot_opts *o,
			       enum fa_rc want, const char *msg)
{
	struct fa_err err;
	enum fa_rc rc;
	char *text = script_text(s, o, &rc, &err);
	if (rc != want || strcmp(err.msg, msg) != 0)
		fa_test_fail(__FILE__, line, "rc %d, want %d; message '%s', want '%s'", (int)rc,
			     (int)want, err.msg, msg);
	free(text);
}

/* The compare of fixture runs 1 (BASE) and 2 (HEAD). */
static int fixture_compare(struct fa_store *s, struct fa_compare *cmp)
{
	struct fa_err err;
	fa_err_clear(&err);
	if (fa_compare_build(s, "1", "2", NULL, cmp, &err) != FA_OK) {
		fa_test_fail(__FILE__, __LINE__, "compare 1 2: %s", err.msg);
		return -1;
	}
	return 0;
}

/* The history of the nightly runs of the history fixture. */
static int fixture_history(struct fa_store *s, struct fa_history *h)
{
	struct fa_history_opts ho;
	struct fa_err err;
	fa_history_opts_init(&ho);
	ho.label = "nightly";
	fa_err_clear(&err);
	if (fa_history_build(s, &ho, h, &err) != FA_OK) {
		fa_test_fail(__FILE__, __LINE__, "history: %s", err.msg);
		return -1;
	}
	return 0;
}

FA_TEST(plot, names_and_formats)
{
	FA_CHECK(fa_plot_kind_parse("throughput") == FA_PLOT_THROUGHPUT);
	FA_CHECK(fa_plot_kind_parse("speedup") == FA_PLOT_SPEEDUP);
	FA_CHECK(fa_plot_kind_parse("history") == FA_PLOT_HISTORY);
	FA_CHECK(fa_plot_kind_parse("heatmap") == FA_PLOT_HEATMAP);
	FA_CHECK(fa_plot_kind_parse("pie") == -1 && fa_plot_kind_parse(NULL) == -1);
	for (int k = FA_PLOT_THROUGHPUT; k <= FA_PLOT_HEATMAP; k++)
		FA_CHECK(fa_plot_kind_parse(fa_plot_kind_name(k)) == k);
	FA_CHECK(fa_plot_kind_name(4) == NULL && fa_plot_kind_name(-1) == NULL);
	FA_CHECK(fa_plot_format_of_path("a/b.png") == FA_PLOT_PNG);
	FA_CHECK(fa_plot_format_of_path("B.SVG") == FA_PLOT_SVG);
	FA_CHECK(fa_plot_format_of_path("b.jpg") == -1);
	FA_CHECK(fa_plot_format_of_path(".png") == -1); /* no name */
	FA_CHECK(fa_plot_format_of_path("png") == -1 && fa_plot_format_of_path(NULL) == -1);
}

FA_TEST(plot, kernel_colours_are_stable_and_distinct)
{
	static const char *const known[] = {"cpu_dense",       "cpu_flash",      "cpu_flash_tiled",
					    "cuda_dense",      "cuda_flash",     "cuda_flash_simt",
					    "cuda_flash_mma", "cuda_flash_decode"};
	char name[64];
	/* the shipped kernels never share a colour */
	for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
		const char *c = fa_plot_kernel_colour(known[i]);
		FA_CHECKF(c[0] == '#' && strlen(c) == 7, "colour '%s' of %s", c, known[i]);
		for (size_t j = 0; j < i; j++)
			FA_CHECKF(strcmp(c, fa_plot_kernel_colour(known[j])) != 0,
				  "%s and %s share %s", known[i], known[j], c);
	}
	/* any other name: the same colour every time, from the palette, and
	 * names spread over several colours */
	{
		const char *seen[64];
		int n_seen = 0;
		for (int i = 0; i < 40; i++) {
			const char *c;
			int k;
			snprintf(name, sizeof name, "plugin_kernel_%d", i);
			c = fa_plot_kernel_colour(name);
			FA_CHECK(strcmp(c, fa_plot_kernel_colour(name)) == 0);
			FA_CHECK(c[0] == '#' && strlen(c) == 7);
			for (k = 0; k < n_seen && strcmp(seen[k], c) != 0; k++)
				;
			if (k == n_seen)
				seen[n_seen++] = c;
		}
		FA_CHECKF(n_seen >= 6, "40 names got only %d colours", n_seen);
	}
	FA_CHECK(fa_plot_kernel_colour(NULL)[0] == '#');
}

/* A tuning run's throughput: each set of params is a kernel of its own, and
 * the seven of them get seven colours (hashing alone would repeat some). */
FA_TEST(plot, tuning_kernels_get_distinct_colours)
{
	int64_t run_id = 0;
	struct fa_store *s = open_tuning_db(&run_id);
	struct fa_plot_opts o = run_opts(FA_PLOT_THROUGHPUT, FA_PLOT_PNG, run_id);
	char *text, colour[16][8], title[16][64];
	int n = 0;
	const char *p, *end;
	FA_REQUIRE(s);
	text = SCRIPT_OK(s, &o);
	FA_REQUIRE(text);
	/* the first panel's series: "lc rgb '#rrggbb' dt 1 pt 7 title 'NAME'" */
	p = strstr(text, "# panel 1\n");
	end = strstr(text, "# panel 2\n");
	FA_REQUIRE(p && end);
	while ((p = strstr(p, "lc rgb '")) && p < end && n < 16) {
		if (sscanf(p, "lc rgb '%7[^']' dt 1 pt 7 title '%63[^']'", colour[n], title[n]) == 2)
			n++;
		p++;
	}
	FA_CHECKF(n == TUNE_SETS + 1, "%d titled series in panel 1", n);
	for (int i = 0; i < n; i++)
		for (int j = 0; j < i; j++)
			FA_CHECKF(strcmp(colour[i], colour[j]) != 0, "%s and %s share %s", title[i],
				  title[j], colour[i]);
	/* the kernel without params keeps its own colour */
	for (int i = 0; i < n; i++)
		if (strcmp(title[i], "cuda_dense") == 0)
			FA_CHECK(strcmp(colour[i], fa_plot_kernel_colour("cuda_dense")) == 0);
	free(text);
	fa_store_close(s);
}

FA_TEST(plot, golden_throughput_script)
{
	struct fa_store *s = fa_fixture_open();
	struct fa_plot_opts o = run_opts(FA_PLOT_THROUGHPUT, FA_PLOT_PNG, FA_FIXTURE_RUN_MAIN);
	char *text;
	FA_REQUIRE(s);
	text = SCRIPT_OK(s, &o);
	if (text)
		fa_golden_check("plot_throughput.gp", text, strlen(text));
	free(text);
	fa_store_close(s);
}

FA_TEST(plot, throughput_script_content)
{
	struct fa_store *s = fa_fixture_open();
	struct fa_plot_opts o = run_opts(FA_PLOT_THROUGHPUT, FA_PLOT_SVG, FA_FIXTURE_RUN_MAIN);
	char *text, want[128];
	FA_REQUIRE(s);
	text = SCRIPT_OK(s, &o);
	FA_REQUIRE(text);
	FA_CHECK(strstr(text, "set terminal svg size ") && strstr(text, "set output 'plot.svg'"));
	FA_CHECK(!strstr(text, "pngcairo"));
	/* five panels: head_dim 64, whose five variants (four masks of batch
	 * 2, the varlen batch of 3) are more than a panel takes, split in two by
	 * batch; 72, 128, and the decode case (GB/s) */
	FA_CHECK(strstr(text, "set multiplot layout 2,3 title 'throughput of run 2 (nightly): "
			      "suite smoke, cpu on AMD EPYC 7B13 (2 threads)'"));
	FA_CHECK(strstr(text, "set title 'head_dim 64, batch 2'") &&
		 strstr(text, "set title 'head_dim 64, batch 3'") &&
		 strstr(text, "set title 'head_dim 72'") && strstr(text, "set title 'head_dim 128'") &&
		 strstr(text, "set title 'head_dim 128, decode-like (q_len <= 16)'"));
	FA_CHECK(strstr(text, "set title 'head_dim 64, batch 3'") <
		 strstr(text, "set title 'head_dim 72'"));
	FA_CHECK(fa_test_count(text, "set ylabel 'TFLOP/s'") == 4);
	FA_CHECK(fa_test_count(text, "set ylabel 'GB/s") == 1);
	FA_CHECK(strstr(text, "set xlabel 'q_len (queries per sequence, log2 scale)'") &&
		 strstr(text, "set xlabel 'kv_len (keys per sequence, log2 scale)'"));
	FA_CHECK(fa_test_count(text, "set logscale x 2") == 5);
	/* every kernel in a legend, in its own colour */
	for (int k = 0; k < 3; k++) {
		static const char *const kn[] = {"cpu_dense", "cpu_flash", "cpu_flash_tiled"};
		const char *entry;
		int in_colour = 0;
		snprintf(want, sizeof want, "title '%s'\n", kn[k]);
		entry = strstr(text, want);
		if (!entry) {
			snprintf(want, sizeof want, "title '%s',", kn[k]);
			entry = strstr(text, want);
		}
		/* the line of the entry has the kernel's colour */
		if (entry) {
			const char *line = entry;
			snprintf(want, sizeof want, "lc rgb '%s'", fa_plot_kernel_colour(kn[k]));
			while (line > text && line[-1] != '\n')
				line--;
			in_colour = strstr(line, want) && strstr(line, want) < entry;
		}
		FA_CHECKF(entry && in_colour, "no legend entry of %s in its colour", kn[k]);
	}
	/* only passed results: cpu_flash_tiled passed on cases 0, 5 and 6 */
	FA_CHECK(strstr(text, "\n128 0.0361 0\n") && strstr(text, "\n4096 0.0360468 5\n"));
	/* in the batch 2 panel the four masks are the variants, named by the
	 * mask alone (what differs among its cases), and nothing more */
	FA_CHECK(strstr(text, "title 'no mask'") && strstr(text, "title 'causal'") &&
		 strstr(text, "title 'sliding_window 256'") && strstr(text, "title 'prefix_lm 64'"));
	FA_CHECK(fa_test_count(text, "lc rgb '#333333'") == 4);
	FA_CHECK(!strstr(text, "title 'batch"));
	/* kernel names are drawn as typed: no enhanced-text subscripts */
	FA_CHECK(strstr(text, "set termoption noenhanced"));
	free(text);
	fa_store_close(s);
}

/* Every timed result that passed is a point, and no other: counted from the
 * data blocks against the database. */
FA_TEST(plot, throughput_points_are_the_passed_results)
{
	struct fa_store *s = fa_fixture_open();
	struct fa_plot_opts o = run_opts(FA_PLOT_THROUGHPUT, FA_PLOT_PNG, FA_FIXTURE_RUN_MAIN);
	char *text;
	int points = 0;
	FA_REQUIRE(s);
	text = SCRIPT_OK(s, &o);
	FA_REQUIRE(text);
	/* data rows are "x y case": lines starting with a digit inside blocks */
	for (const char *p = text; *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : p + strlen(p)) {
		double x, y;
		int idx;
		if (*p >= '0' && *p <= '9' && sscanf(p, "%lf %lf %d", &x, &y, &idx) == 3)
			points++;
	}
	/* run 2: cpu_dense 7 (skipped on 5), cpu_flash 7 (error on 6),
	 * cpu_flash_tiled 3 (fail on 1, skips on 2-4, timeout on 7) */
	FA_CHECKF(points == 17, "%d points, want 17", points);
	free(text);
	fa_store_close(s);
}

FA_TEST(plot, throughput_where_filters_cases)
{
	struct fa_store *s = fa_fixture_open();
	struct fa_plot_opts o = run_opts(FA_PLOT_THROUGHPUT, FA_PLOT_PNG, FA_FIXTURE_RUN_MAIN);
	struct fa_err err;
	enum fa_rc rc;
	char *text;
	FA_REQUIRE(s);
	o.where = "head_dim == 128";
	text = SCRIPT_OK(s, &o);
	FA_REQUIRE(text);
	FA_CHECK(strstr(text, "set multiplot layout 1,2 "));
	FA_CHECK(strstr(text, "cases where head_dim == 128'"));
	FA_CHECK(!strstr(text, "set title 'head_dim 64'") && strstr(text, "set title 'head_dim 128'"));
	free(text);

	/* nothing left */
	o.where = "head_dim == 256";
	CHECK_SCRIPT_FAILS(s, &o, FA_ERR_NOT_FOUND,
			   "no passed, timed result of run 2 in the cases where 'head_dim == 256'");

	/* an expression that does not parse points into it */
	o.where = "head_dim == == 1";
	text = script_text(s, &o, &rc, &err);
	FA_CHECK(rc == FA_ERR_INPUT);
	FA_CHECK(strcmp(err.file, "--where") == 0 && err.line == 1 && err.col > 1);
	FA_CHECK(strcmp(err.text, "head_dim == == 1") == 0);
	free(text);
	fa_store_close(s);
}

FA_TEST(plot, unknown_run_and_bad_options)
{
	struct fa_store *s = fa_fixture_open();
	struct fa_plot_opts o = run_opts(FA_PLOT_THROUGHPUT, FA_PLOT_PNG, 99);
	char want[1400];
	FA_REQUIRE(s);
	snprintf(want, sizeof want, "no run 99 in '%s'", fa_store_path(s));
	CHECK_SCRIPT_FAILS(s, &o, FA_ERR_NOT_FOUND, want);
	o.kind = FA_PLOT_HEATMAP;
	CHECK_SCRIPT_FAILS(s, &o, FA_ERR_NOT_FOUND, want);
	o.kind = 9;
	CHECK_SCRIPT_FAILS(s, &o, FA_ERR_USAGE, "unknown plot kind 9");
	o.kind = FA_PLOT_THROUGHPUT;
	o.format = 5;
	CHECK_SCRIPT_FAILS(s, &o, FA_ERR_USAGE, "unknown plot format 5");
	/* speedup and history need their data */
	o = opts_of(FA_PLOT_SPEEDUP, FA_PLOT_PNG);
	CHECK_SCRIPT_FAILS(NULL, &o, FA_ERR_USAGE, "a speedup plot needs a compare");
	o.kind = FA_PLOT_HISTORY;
	CHECK_SCRIPT_FAILS(NULL, &o, FA_ERR_USAGE, "a history plot needs a history");
	o.kind = FA_PLOT_THROUGHPUT;
	CHECK_SCRIPT_FAILS(NULL, &o, FA_ERR_USAGE, "a throughput plot needs a database");
	fa_store_close(s);
}

FA_TEST(plot, golden_speedup_script)
{
	struct fa_store *s = fa_fixture_open();
	struct fa_plot_opts o = opts_of(FA_PLOT_SPEEDUP, FA_PLOT_PNG);
	struct fa_compare cmp;
	char *text;
	FA_REQUIRE(s);
	memset(&cmp, 0, sizeof cmp);
	if (fixture_compare(s, &cmp) == 0) {
		int timed = 0, bars = 0;
		o.compare = &cmp;
		text = SCRIPT_OK(s, &o);
		if (text) {
			fa_golden_check("plot_speedup.gp", text, strlen(text));
			/* one bar per timed row, in the block of its kernel (a panel:
			 * cpu_dense, cpu_flash) and verdict */
			for (int i = 0; i < cmp.n_rows; i++)
				timed += cmp.rows[i].change == FA_CMP_TIMED;
			for (int k = 0; k < 2; k++)
				for (int v = 0; v < 4; v++) {
					char name[32];
					const char *p;
					snprintf(name, sizeof name, "$k%d_%s << EOD\n", k,
						 fa_stats_verdict_name(v));
					p = strstr(text, name);
					FA_REQUIRE(p);
					p = strchr(strchr(p, '\n') + 1, '\n') + 1; /* past the comment */
					for (; strncmp(p, "EOD\n", 4) != 0; p = strchr(p, '\n') + 1)
						bars++;
				}
			FA_CHECKF(bars == timed, "%d bars, %d timed rows", bars, timed);
			FA_CHECK(!strstr(text, "$k2_"));
			FA_CHECK(strstr(text, "set title 'cpu_dense'") &&
				 strstr(text, "set title 'cpu_flash'"));
			/* a case is a row of every panel, named once, left of the first */
			FA_CHECK(fa_test_count(text, "'#7  ") == 1 &&
				 fa_test_count(text, "set ytics ('") == 1);
			FA_CHECK(strstr(text, "'speedup = BASE median / HEAD median"));
			FA_CHECK(strstr(text, "title 'faster (3)'") && strstr(text, "title 'slower (1)'"));
			/* cpu_flash on case 0 is 15% slower: 1/1.15 */
			FA_CHECK(strstr(text, "\"0.870x\""));
		}
		free(text);
	}
	fa_compare_free(&cmp);
	fa_store_close(s);
}

FA_TEST(plot, golden_history_script)
{
	struct fa_store *s = fa_fixture_history_open();
	struct fa_plot_opts o = opts_of(FA_PLOT_HISTORY, FA_PLOT_PNG);
	struct fa_history h;
	char *text;
	FA_REQUIRE(s);
	memset(&h, 0, sizeof h);
	if (fixture_history(s, &h) == 0) {
		o.history = &h;
		text = SCRIPT_OK(s, &o);
		if (text) {
			fa_golden_check("plot_history.gp", text, strlen(text));
			/* one panel per case, both kernels in each */
			FA_CHECK(strstr(text, "set multiplot layout 2,2 "));
			FA_CHECK(fa_test_count(text, "# panel ") == 3);
			FA_CHECK(fa_test_count(text, "title 'cpu_flash'") == 3 &&
				 fa_test_count(text, "title 'cpu_dense'") == 3);
			/* the planted steps, the spike as two, and the new regression */
			FA_CHECK(strstr(text, "\"+10%\"") && strstr(text, "\"-6%\"") &&
				 strstr(text, "\"+7% new\""));
			FA_CHECK(strstr(text, "set ylabel 'median time (ms)'") &&
				 strstr(text, "set xlabel 'run (id and date, oldest first)'"));
			/* the PR run (7) is not among the nightly runs on the x axis */
			FA_CHECK(strstr(text, "'6'.\"\\n\".'12-06' 5, '8'.\"\\n\".'12-07' 6"));
		}
		free(text);
	}
	fa_history_free(&h);
	fa_store_close(s);
}

FA_TEST(plot, golden_heatmap_script)
{
	int64_t run_id = 0;
	struct fa_store *s = open_tuning_db(&run_id);
	struct fa_plot_opts o = run_opts(FA_PLOT_HEATMAP, FA_PLOT_PNG, run_id);
	char *text;
	FA_REQUIRE(s);
	text = SCRIPT_OK(s, &o);
	if (text) {
		const char *a, *b;
		int cells = 0;
		fa_golden_check("plot_heatmap.gp", text, strlen(text));
		/* the params sorted by value, not as text or as stored */
		FA_CHECK(strstr(text, "set xtics ('block_q=64,block_k=32' 0, 'block_q=64,block_k=64' 1, "
				      "'block_q=64,block_k=128' 2, 'block_q=128,block_k=32' 3"));
		FA_CHECK(strstr(text, "set title 'tuning of cuda_flash_mma: run 1 (tune): suite "
				      "tune-mma, cuda on NVIDIA H100 80GB HBM3'"));
		/* a title longer than the cells are wide widens the image to it */
		char longt[301];
		memset(longt, 'x', 300);
		longt[300] = '\0';
		struct fa_plot_opts lo = o;
		lo.title = longt;
		char *lt = SCRIPT_OK(s, &lo);
		int w = 0, h = 0;
		const char *sz = lt ? strstr(lt, "size ") : NULL;
		FA_CHECKF(sz && sscanf(sz, "size %d,%d", &w, &h) == 2 && w >= 80 + 8 * 300,
			  "width %d for a title of 300 characters", w);
		free(lt);
		/* 36 cells: 32 timed, three skips and the failure shown as such */
		a = strstr(text, "$cells << EOD\n");
		b = strstr(text, "$missing << EOD\n");
		FA_REQUIRE(a && b);
		for (const char *p = strchr(strchr(a, '\n') + 1, '\n') + 1;
		     strncmp(p, "EOD\n", 4) != 0; p = strchr(p, '\n') + 1)
			cells++;
		FA_CHECKF(cells == 32, "%d timed cells", cells);
		FA_CHECK(strstr(b, "0 0 \"FAIL\"\n") && strstr(b, "5 3 \"skip\"\n") &&
			 strstr(b, "5 5 \"skip\"\n"));
		/* each case has exactly one best cell, 1.00 */
		FA_CHECK(fa_test_count(a, "\"1.00\"") == TUNE_CASES);
		/* the cases are rows with what differs between them */
		FA_CHECK(strstr(text, "'#1 q_len 512, head_dim 64: best "));
		FA_CHECK(strstr(text, "set xlabel 'params of cuda_flash_mma'"));
		FA_CHECK(strstr(text, "set cblabel 'time / best time of the case (1 = best)'"));
	}
	free(text);
	fa_store_close(s);
}

FA_TEST(plot, heatmap_needs_a_tuned_kernel)
{
	struct fa_store *s = fa_fixture_open();
	struct fa_plot_opts o = run_opts(FA_PLOT_HEATMAP, FA_PLOT_PNG, FA_FIXTURE_RUN_MAIN);
	char *text;
	int64_t run_id = 0;
	FA_REQUIRE(s);
	/* the fixture's runs have one set of params per kernel */
	CHECK_SCRIPT_FAILS(s, &o, FA_ERR_NOT_FOUND,
			   "run 2 has no kernel that ran with several sets of params (a tuning run: "
			   "fabench run --param KERNEL.NAME=V1,V2,...)");
	fa_store_close(s);

	s = open_tuning_db(&run_id);
	FA_REQUIRE(s);
	o.run_id = run_id;
	o.kernel = "cuda_dense";
	CHECK_SCRIPT_FAILS(s, &o, FA_ERR_NOT_FOUND,
			   "kernel 'cuda_dense' ran with 1 set of params in the cases of run 1: a "
			   "heatmap needs two or more");
	o.kernel = "hip_flash";
	CHECK_SCRIPT_FAILS(s, &o, FA_ERR_NOT_FOUND, "kernel 'hip_flash' has no results in run 1");
	/* named explicitly, and filtered to one head_dim */
	o.kernel = TUNE_KERNEL;
	o.where = "head_dim == 64";
	text = SCRIPT_OK(s, &o);
	FA_REQUIRE(text);
	FA_CHECK(strstr(text, "set yrange [2.5:-0.5]")); /* 3 cases */
	FA_CHECK(!strstr(text, "\"skip\"")); /* the skips were on head_dim 128 */
	free(text);
	fa_store_close(s);
}

/* ---- Drawing --------------------------------------------------------------------- */

/* The entries of folder dir other than . and .. */
static int folder_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;
	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
	closedir(d);
	return n;
}

/* Sets the environment variable name to value, its value before into old
 * ("" when it was not set). */
static void env_set(const char *name, const char *value, char *old, size_t size)
{
	const char *t = getenv(name);
	snprintf(old, size, "%s", t ? t : "");
	setenv(name, value, 1);
}

/* Gives name back the value env_set kept (unset when that was ""). */
static void env_restore(const char *name, const char *old)
{
	if (old[0])
		setenv(name, old, 1);
	else
		unsetenv(name);
}

/* Sets TMPDIR to a fresh folder of the test (into dir), its value before
 * into old, so that a test can check that the plot module left nothing in
 * it. */
static void set_tmpdir(char *old, size_t size, char *dir, size_t dsize)
{
	snprintf(dir, dsize, "%s/tmp", fa_test_tmpdir());
	mkdir(dir, 0777);
	env_set("TMPDIR", dir, old, size);
}

static void restore_tmpdir(const char *old)
{
	env_restore("TMPDIR", old);
}

/* Draws o as PNG and SVG into the test's folder and checks the files:
 * the PNG signature and a size that is more than an empty canvas; the SVG
 * header and every text in want[]. */
static void check_images(struct fa_store *s, struct fa_plot_opts o, const char *name,
			 const char *const *want, int n_want)
{
	static const unsigned char png_sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
	char path[1300], old[1024], tmp[1200];
	struct fa_err err;
	enum fa_rc rc;
	size_t len = 0;
	char *data, *svg = NULL;

	set_tmpdir(old, sizeof old, tmp, sizeof tmp);
	snprintf(path, sizeof path, "%s/%s.png", fa_test_tmpdir(), name);
	unlink(path);
	fa_err_clear(&err);
	o.format = FA_PLOT_PNG;
	rc = fa_plot_render(s, &o, path, &err);
	FA_CHECKF(rc == FA_OK, "%s.png: %s", name, err.msg);
	data = fa_test_read_file(path, &len);
	FA_CHECKF(data && len > 8 && memcmp(data, png_sig, 8) == 0, "%s.png is no PNG", name);
	/* a blank canvas of these sizes compresses to 2 KB (libgd's png) to 6 KB
	 * (pngcairo); with axes, text and data each kind is over 19 KB with
	 * libgd and over 50 KB with cairo */
	FA_CHECKF(len > 12000, "%s.png has only %zu bytes", name, len);
	free(data);

	snprintf(path, sizeof path, "%s/%s.svg", fa_test_tmpdir(), name);
	o.format = FA_PLOT_SVG;
	rc = fa_plot_render(s, &o, path, &err);
	FA_CHECKF(rc == FA_OK, "%s.svg: %s", name, err.msg);
	data = fa_test_read_file(path, &len);
	FA_REQUIRE(data);
	FA_CHECK(strncmp(data, "<?xml", 5) == 0 || strncmp(data, "<svg", 4) == 0);
	FA_CHECK(strstr(data, "</svg>") != NULL);
	for (int i = 0; i < n_want; i++)
		FA_CHECKF(strstr(data, want[i]), "%s.svg has no '%s'", name, want[i]);
	/* fa_plot_svg gives the same image */
	rc = fa_plot_svg(s, &o, &svg, &len, &err);
	FA_CHECKF(rc == FA_OK && svg && strlen(svg) == len && strcmp(svg, data) == 0,
		  "fa_plot_svg differs from the file: %s", err.msg);
	free(svg);
	free(data);
	FA_CHECKF(folder_entries(tmp) == 0, "temporary files left in %s", tmp);
	restore_tmpdir(old);
}

static int have_gnuplot(void)
{
	if (fa_plot_gnuplot_available())
		return 1;
	fa_test_skip("gnuplot is not installed (apt-get install gnuplot-nox)");
	return 0;
}

/* Draws a plot of kind from its data (the report fixture's run 2, or the
 * compare of its runs 1 and 2; the nightly runs of the history fixture; the
 * tuning run) and checks the images (check_images). */
static void check_drawing(int kind, const char *name, const char *const *want, int n_want)
{
	struct fa_store *s;
	struct fa_plot_opts o = opts_of(kind, FA_PLOT_PNG);
	struct fa_compare cmp;
	struct fa_history h;
	int64_t run_id = FA_FIXTURE_RUN_MAIN;
	int have_data = 1;
	if (!have_gnuplot())
		return;
	s = kind == FA_PLOT_HISTORY   ? fa_fixture_history_open()
	    : kind == FA_PLOT_HEATMAP ? open_tuning_db(&run_id)
				      : fa_fixture_open();
	FA_REQUIRE(s);
	memset(&cmp, 0, sizeof cmp);
	memset(&h, 0, sizeof h);
	if (kind == FA_PLOT_SPEEDUP) {
		have_data = fixture_compare(s, &cmp) == 0;
		o.compare = &cmp;
	} else if (kind == FA_PLOT_HISTORY) {
		have_data = fixture_history(s, &h) == 0;
		o.history = &h;
	} else {
		o.run_id = run_id;
	}
	if (have_data)
		check_images(s, o, name, want, n_want);
	fa_compare_free(&cmp);
	fa_history_free(&h);
	fa_store_close(s);
}

FA_TEST(plot, draws_throughput)
{
	static const char *const want[] = {
		"cpu_dense", "cpu_flash", "cpu_flash_tiled", "TFLOP/s", "GB/s",
		"q_len (queries per sequence, log2 scale)", "head_dim 72",
	};
	check_drawing(FA_PLOT_THROUGHPUT, "throughput", want, (int)(sizeof want / sizeof want[0]));
}

FA_TEST(plot, draws_speedup)
{
	static const char *const want[] = {
		"cpu_dense", "cpu_flash", "speedup = BASE median / HEAD median", "faster (3)",
		"slower (1)", "0.870x",
	};
	check_drawing(FA_PLOT_SPEEDUP, "speedup", want, (int)(sizeof want / sizeof want[0]));
}

FA_TEST(plot, draws_history)
{
	static const char *const want[] = {
		"cpu_dense", "cpu_flash", "median time (ms)", "run (id and date, oldest first)",
		"step: slower", "step: faster", "+7% new",
	};
	check_drawing(FA_PLOT_HISTORY, "history", want, (int)(sizeof want / sizeof want[0]));
}

FA_TEST(plot, draws_heatmap)
{
	static const char *const want[] = {
		"cuda_flash_mma", "block_q=64,block_k=32", "block_q=128,block_k=128",
		"time / best time of the case (1 = best)", "FAIL", "skip", "1.00",
	};
	check_drawing(FA_PLOT_HEATMAP, "heatmap", want, (int)(sizeof want / sizeof want[0]));
}

/* Without gnuplot: a clear error, no image, no temporary folder. */
FA_TEST(plot, gnuplot_missing)
{
	struct fa_store *s = fa_fixture_open();
	struct fa_plot_opts o = run_opts(FA_PLOT_THROUGHPUT, FA_PLOT_PNG, FA_FIXTURE_RUN_MAIN);
	char path[1300], old[1024], tmp[1200], saved[1024];
	struct fa_err err;
	char *svg = (char *)"x";
	enum fa_rc rc;
	FA_REQUIRE(s);
	set_tmpdir(old, sizeof old, tmp, sizeof tmp);
	snprintf(path, sizeof path, "%s/none.png", fa_test_tmpdir());
	unlink(path);
	env_set("FABENCH_GNUPLOT", "gnuplot-that-is-not-installed", saved, sizeof saved);
	FA_CHECK(!fa_plot_gnuplot_available());
	fa_err_clear(&err);
	rc = fa_plot_render(s, &o, path, &err);
	FA_CHECK(rc == FA_ERR_BACKEND);
	FA_CHECKF(strcmp(err.msg, "gnuplot is not installed ('gnuplot-that-is-not-installed' not "
				  "found in PATH): plots need it; install the gnuplot-nox package "
				  "(apt-get install gnuplot-nox)") == 0,
		  "message '%s'", err.msg);
	FA_CHECK(access(path, F_OK) != 0);
	fa_err_clear(&err);
	rc = fa_plot_svg(s, &o, &svg, NULL, &err);
	FA_CHECK(rc == FA_ERR_BACKEND && svg == NULL);
	FA_CHECK(folder_entries(tmp) == 0);
	/* the same through the command, with exit status 1 */
	{
		struct fa_proc_result r;
		char db[1300];
		snprintf(db, sizeof db, "%s", fa_fixture_path());
		fa_proc_run((char *[]){"plot", "throughput", "--db", db, "--output", path, NULL},
			    (char *[]){"FABENCH_GNUPLOT=gnuplot-that-is-not-installed", NULL}, 60, &r);
		FA_CHECKF(r.status == 1 && strstr(r.err, "install the gnuplot-nox package"),
			  "status %d, stderr '%s'", r.status, r.err);
		FA_CHECK(access(path, F_OK) != 0);
		fa_proc_free(&r);
	}
	env_restore("FABENCH_GNUPLOT", saved);
	restore_tmpdir(old);
	fa_store_close(s);
}

/* fa_cmd_plot_render(cmd, ...) with its stderr into the test's folder:
 * the exit status, the text printed in *text (malloc'd). */
static int cmd_render(const char *cmd, struct fa_store *s, const struct fa_plot_opts *o,
		      const char *path, char **text)
{
	char errs[1300];
	int saved, fd, status;
	snprintf(errs, sizeof errs, "%s/render.err", fa_test_tmpdir());
	fflush(stderr);
	saved = dup(2);
	fd = open(errs, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (saved < 0 || fd < 0 || dup2(fd, 2) < 0)
		return -1;
	close(fd);
	status = fa_cmd_plot_render(cmd, s, o, path);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	*text = fa_test_read_file(errs, NULL);
	return status;
}

/* What plot and tune --heatmap draw through: gnuplot missing when the plot
 * is drawn (gone since the command found it) is status 1, a tool the
 * machine lacks, as its absence found first is; nothing to plot in what was
 * named stays 2. Both commands give the same. */
FA_TEST(plot, render_without_gnuplot_exits_1)
{
	struct fa_store *s = fa_fixture_open();
	struct fa_plot_opts o = run_opts(FA_PLOT_THROUGHPUT, FA_PLOT_PNG, FA_FIXTURE_RUN_MAIN);
	char path[1300], old[1024], tmp[1200], saved[1024], stub[1300];
	const char *cmds[] = {"plot", "tune"};
	char *text = NULL;
	FA_REQUIRE(s);
	set_tmpdir(old, sizeof old, tmp, sizeof tmp);
	snprintf(path, sizeof path, "%s/gone.png", fa_test_tmpdir());
	snprintf(stub, sizeof stub, "%s/stub-gnuplot", fa_test_tmpdir());
	FA_REQUIRE(fa_test_write_script(stub, "#!/bin/sh\nexit 0\n") == 0);
	unlink(path);
	for (int i = 0; i < 2; i++) {
		char want[128];
		snprintf(want, sizeof want, "fabench %s: error: gnuplot is not installed (", cmds[i]);
		env_set("FABENCH_GNUPLOT", "gnuplot-that-is-not-installed", saved, sizeof saved);
		FA_CHECK(cmd_render(cmds[i], s, &o, path, &text) == 1);
		FA_CHECKF(text && strncmp(text, want, strlen(want)) == 0, "%s: printed '%s'", cmds[i],
			  text ? text : "");
		free(text);
		FA_CHECK(access(path, F_OK) != 0);
		env_restore("FABENCH_GNUPLOT", saved);
		/* nothing to plot, gnuplot there: 2 */
		env_set("FABENCH_GNUPLOT", stub, saved, sizeof saved);
		o.where = "q_len == 3";
		FA_CHECK(cmd_render(cmds[i], s, &o, path, &text) == 2);
		FA_CHECKF(text && strstr(text, "q_len == 3"), "%s: printed '%s'", cmds[i],
			  text ? text : "");
		free(text);
		o.where = NULL;
		env_restore("FABENCH_GNUPLOT", saved);
	}
	FA_CHECK(folder_entries(tmp) == 0);
	restore_tmpdir(old);
	fa_store_close(s);
}

/* A gnuplot that fails: its exit status and stderr in the message, the
 * target untouched, the temporary folder removed. A stand-in program (a
 * script run by execvp, as gnuplot would be) plays gnuplot. */
FA_TEST(plot, gnuplot_failure_is_reported)
{
	struct fa_store *s = fa_fixture_open();
	struct fa_plot_opts o = run_opts(FA_PLOT_THROUGHPUT, FA_PLOT_PNG, FA_FIXTURE_RUN_MAIN);
	char fake[1300], path[1300], old[1024], tmp[1200], saved[1024];
	struct fa_err err;
	enum fa_rc rc;
	FILE *f;
	FA_REQUIRE(s);
	snprintf(fake, sizeof fake, "%s/fake-gnuplot", fa_test_tmpdir());
	/* it checks that it was given the script in its working folder */
	FA_REQUIRE(fa_test_write_script(fake, "#!/bin/sh\n"
					  "test \"$1\" = plot.gp && test -s plot.gp || exit 9\n"
					  "echo '\"plot.gp\" line 3: undefined variable: nonsense' >&2\n"
					  "exit 3\n") == 0);
	set_tmpdir(old, sizeof old, tmp, sizeof tmp);
	snprintf(path, sizeof path, "%s/out.png", fa_test_tmpdir());
	f = fopen(path, "w"); /* an older image stays as it was */
	FA_REQUIRE(f);
	fputs("old", f);
	FA_REQUIRE(fclose(f) == 0);
	env_set("FABENCH_GNUPLOT", fake, saved, sizeof saved);
	fa_err_clear(&err);
	rc = fa_plot_render(s, &o, path, &err);
	FA_CHECK(rc == FA_ERR_BACKEND);
	FA_CHECKF(strcmp(err.msg, "gnuplot failed with exit status 3: \"plot.gp\" line 3: "
				  "undefined variable: nonsense") == 0,
		  "message '%s'", err.msg);
	{
		char *kept = fa_test_read_file(path, NULL);
		FA_CHECK(kept && strcmp(kept, "old") == 0);
		free(kept);
	}
	FA_CHECKF(folder_entries(tmp) == 0, "temporary files left in %s", tmp);
	env_restore("FABENCH_GNUPLOT", saved);
	restore_tmpdir(old);
	fa_store_close(s);
}

/* gnuplot's stderr names a script error in lines (the script's line, a
 * caret under it, the message): an error that is not about input keeps its
 * line feeds and tabs when printed, while other control characters print as
 * '?' (an input error's print line feeds as '?' too: test_hostile.c). */
FA_TEST(plot, gnuplot_stderr_keeps_its_lines)
{
	struct fa_store *s = fa_fixture_open();
	struct fa_plot_opts o = run_opts(FA_PLOT_THROUGHPUT, FA_PLOT_PNG, FA_FIXTURE_RUN_MAIN);
	char fake[1300], path[1300], old[1024], tmp[1200], saved[1024];
	struct fa_err err;
	char *text = NULL;
	size_t len = 0;
	FILE *f;
	FA_REQUIRE(s);
	snprintf(fake, sizeof fake, "%s/fake-gnuplot", fa_test_tmpdir());
	FA_REQUIRE(fa_test_write_script(fake, "#!/bin/sh\n"
					  "printf 'plot nonsense\\n\\t^\\033[2J\\n\"plot.gp\" line 3: undefined variable\\n' >&2\n"
					  "exit 3\n") == 0);
	set_tmpdir(old, sizeof old, tmp, sizeof tmp);
	snprintf(path, sizeof path, "%s/out.png", fa_test_tmpdir());
	env_set("FABENCH_GNUPLOT", fake, saved, sizeof saved);
	fa_err_clear(&err);
	FA_CHECK(fa_plot_render(s, &o, path, &err) == FA_ERR_BACKEND);
	f = open_memstream(&text, &len);
	FA_REQUIRE(f);
	fa_err_print(&err, f, "fabench plot");
	fclose(f);
	FA_CHECKF(strcmp(text, "fabench plot: error: gnuplot failed with exit status 3: plot nonsense\n"
			       "\t^?[2J\n"
			       "\"plot.gp\" line 3: undefined variable\n") == 0,
		  "printed:\n%s", text);
	free(text);
	env_restore("FABENCH_GNUPLOT", saved);
	restore_tmpdir(old);
	fa_store_close(s);
}

/* ---- The command -------------------------------------------------------------------- */

FA_TEST(plot, command_usage_errors)
{
	static const struct {
		const char *args[8];
		const char *err;
	} cases[] = {
		{{"plot", NULL}, "KIND is required"},
		{{"plot", "pie", NULL}, "unknown plot kind 'pie'"},
		{{"plot", "speedup", "1", NULL}, "a speedup plot needs BASE and HEAD"},
		{{"plot", "throughput", "extra", NULL}, "unexpected argument 'extra'"},
		{{"plot", "throughput", "--output", "a.jpg", NULL},
		 "--output 'a.jpg' must end in .png or .svg"},
		{{"plot", "speedup", "1", "2", "--where", "q_len > 1", NULL},
		 "--where applies to throughput, heatmap and history plots, not speedup"},
		{{"plot", "history", "--run", "2", NULL}, "--run applies to throughput and heatmap"},
		{{"plot", "throughput", "--since", "2026-01-01", NULL},
		 "--since applies to history plots, not throughput"},
		{{"plot", "throughput", "--size", "10x10", NULL}, "--size '10x10' must be"},
		{{"plot", "throughput", "--bogus", NULL}, "unknown option '--bogus'"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct fa_proc_result r;
		fa_proc_run((char *const *)cases[i].args, NULL, 60, &r);
		FA_CHECKF(r.status == 2 && strstr(r.err, cases[i].err) &&
				  strstr(r.err, "usage: fabench plot"),
			  "case %zu: status %d, stderr '%s'", i, r.status, r.err);
		fa_proc_free(&r);
	}
}

/* The command draws into --output and prints the path; --script writes the
 * script without gnuplot. */
FA_TEST(plot, command_writes_image_and_script)
{
	char db[1300], out[1300], script[1300];
	struct fa_store *s = fa_fixture_open();
	struct fa_proc_result r;
	char *text;
	FA_REQUIRE(s);
	fa_store_close(s);
	snprintf(db, sizeof db, "%s", fa_fixture_path());
	snprintf(script, sizeof script, "%s/sub/tp.gp", fa_test_tmpdir());
	fa_proc_run((char *[]){"plot", "throughput", "--db", db, "--run", "nightly", "--script",
			       script, "--output", "x.svg", NULL},
		    (char *[]){"FABENCH_GNUPLOT=gnuplot-that-is-not-installed", NULL}, 60, &r);
	FA_CHECKF(r.status == 0, "status %d, stderr '%s'", r.status, r.err);
	text = fa_test_read_file(script, NULL);
	/* label nightly: its latest run is 3, the incomplete one */
	FA_CHECK(text && strstr(text, "set output 'plot.svg'") &&
		 strstr(text, "throughput of run 3 (nightly)"));
	free(text);
	fa_proc_free(&r);
	/* nothing to plot leaves no script behind, and an earlier one as it was */
	fa_proc_run((char *[]){"plot", "throughput", "--db", db, "--run", "nightly", "--where",
			       "q_len > 1000000000", "--script", script, NULL},
		    NULL, 60, &r);
	FA_CHECKF(r.status == 2, "status %d, stderr '%s'", r.status, r.err);
	fa_proc_free(&r);
	text = fa_test_read_file(script, NULL);
	FA_CHECK(text && strstr(text, "throughput of run 3 (nightly)"));
	free(text);
	char part[1400], fresh[1300];
	snprintf(part, sizeof part, "%s.part", script);
	snprintf(fresh, sizeof fresh, "%s/sub/none.gp", fa_test_tmpdir());
	fa_proc_run((char *[]){"plot", "throughput", "--db", db, "--run", "nightly", "--where",
			       "q_len > 1000000000", "--script", fresh, NULL},
		    NULL, 60, &r);
	FA_CHECK(r.status == 2 && access(fresh, F_OK) != 0 && access(part, F_OK) != 0);
	fa_proc_free(&r);
	if (!have_gnuplot())
		return;
	snprintf(out, sizeof out, "%s/speedup.svg", fa_test_tmpdir());
	fa_proc_run((char *[]){"plot", "speedup", "--db", db, "baseline", "2", "--output", out,
			       "--title", "my <title>", NULL},
		    NULL, 60, &r);
	FA_CHECKF(r.status == 0 && strncmp(r.out, out, strlen(out)) == 0,
		  "status %d, stdout '%s', stderr '%s'", r.status, r.out, r.err);
	text = fa_test_read_file(out, NULL);
	FA_CHECK(text && strstr(text, "my &lt;title"));
	free(text);
	fa_proc_free(&r);
	/* nothing to plot in the run named: bad input, exit status 2 */
	fa_proc_run((char *[]){"plot", "heatmap", "--db", db, "--output", out, NULL}, NULL, 60, &r);
	FA_CHECKF(r.status == 2 && strstr(r.err, "has no kernel that ran with several sets"),
		  "status %d, stderr '%s'", r.status, r.err);
	fa_proc_free(&r);
}

/* ---- Hostile text ------------------------------------------------------------------ */

/* Text from suites, labels, kernel names and imported files must never run
 * as code in gnuplot: it runs `backquoted` text in double-quoted strings and
 * bare commands as a shell command, expands @macros outside quotes, ends a
 * command at a line break and runs a line starting with '!' in a shell. */

/* Each hostile string tries every way in, each with its own marker file
 * DIR/TAG-WAY: a backquote, $(...), a single quote breaking out into
 * system(), a double-quoted backquote, line breaks with a datablock's
 * terminator and a shell escape, a CR, a macro, enhanced-text markup. */
static void hostile_text(char *buf, size_t size, const char *dir, const char *tag)
{
	if (strlen(dir) > 200) { /* the test's folder is much shorter */
		snprintf(buf, size, "%s", tag);
		return;
	}
	snprintf(buf, size,
		 "%s `touch %s/%s-bq` $(touch %s/%s-sh) ${HOME} @GPVAL_PWD "
		 "x' . system('touch %s/%s-sq') . 'y \"`touch %s/%s-dq`\"\nEOD\n!touch %s/%s-nl\r"
		 "set print '%s/%s-pr'\n^_{x}",
		 tag, dir, tag, dir, tag, dir, tag, dir, tag, dir, tag, dir, tag);
}

/* NULL when the script text keeps the text containing mark out of gnuplot's
 * reach, else what is wrong (static storage): outside datablocks mark is
 * only inside single-quoted strings, no line is unbalanced, no backquote,
 * '@' or '!' command is outside them and every double-quoted string is a
 * fixed "\n" or "'"; inside a datablock every line is empty, a comment or starts
 * with a number, so nothing ends the block early. */
static const char *script_unsafe(const char *text, const char *mark)
{
	static char why[256];
	size_t n = strlen(text), ml = strlen(mark);
	char *safe = calloc(n + 1, 1); /* 1: a byte inside quotes or a datablock */
	int in_block = 0, line_no = 0;
	const char *p = text;

	if (!safe)
		return "out of memory";
	why[0] = '\0';
	while (*p && !why[0]) {
		const char *end = strchr(p, '\n');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		line_no++;
		if (in_block) {
			if (len == 3 && strncmp(p, "EOD", 3) == 0)
				in_block = 0;
			else if (len && !strchr("0123456789+-.#", p[0]))
				snprintf(why, sizeof why, "line %d of a datablock starts with '%c'",
					 line_no, p[0]);
			else
				memset(safe + (p - text), 1, len);
		} else {
			int sq = 0;
			if (len && p[0] == '!')
				snprintf(why, sizeof why, "line %d is a shell command", line_no);
			for (size_t i = 0; i < len && !why[0]; i++) {
				char c = p[i];
				if (sq) {
					if (c == '\'' && i + 1 < len && p[i + 1] == '\'') {
						safe[p - text + (long)i] = safe[p - text + (long)i + 1] = 1;
						i++;
					} else if (c == '\'') {
						sq = 0;
					} else {
						safe[p - text + (long)i] = 1;
					}
				} else if (c == '\'') {
					sq = 1;
				} else if (c == '#') {
					break; /* a comment (checked below: mark is not safe there) */
				} else if (c == '"') {
					/* the fixed strings "\n" and "'" */
					if (strncmp(p + i, "\"\\n\"", 4) == 0)
						i += 3;
					else if (strncmp(p + i, "\"'\"", 3) == 0)
						i += 2;
					else
						snprintf(why, sizeof why,
							 "line %d has a double-quoted string other than "
							 "\"\\n\" or \"'\"",
							 line_no);
				} else if (c == '`' || c == '@') {
					snprintf(why, sizeof why, "line %d has '%c' outside quotes",
						 line_no, c);
				}
			}
			if (sq && !why[0])
				snprintf(why, sizeof why, "line %d ends inside a single-quoted string",
					 line_no);
			if (len > 6 && p[0] == '$' && strstr(p, " << EOD") == p + len - 7)
				in_block = 1;
		}
		p += len + (end != NULL);
	}
	if (!why[0] && in_block)
		snprintf(why, sizeof why, "a datablock does not end");
	for (const char *m = text; !why[0] && (m = strstr(m, mark)); m++)
		for (size_t i = 0; i < ml && !why[0]; i++)
			if (!safe[m - text + (long)i])
				snprintf(why, sizeof why, "'%s' outside quotes at byte %ld", mark,
					 (long)(m - text));
	free(safe);
	return why[0] ? why : NULL;
}

/* The checker itself catches what it must: double-quoted, bare, badly quoted
 * text, comments, shell lines, blocks ended early or never. */
FA_TEST(plot, script_checker_catches_unsafe_text)
{
	FA_CHECK(script_unsafe("set title 'MARK x'\nplot $a title 'it''s MARK'\n", "MARK") == NULL);
	FA_CHECK(script_unsafe("$a << EOD\n1 2 \"MARK `x`\"\n\nEOD\nset title 'a'.\"\\n\".'b'\n",
			       "MARK") == NULL);
	FA_CHECK(script_unsafe("set title \"'\".'MARK'\n", "MARK") == NULL);
	FA_CHECK(script_unsafe("set title \"MARK\"\n", "MARK") != NULL);
	FA_CHECK(script_unsafe("set title \"'MARK\"\n", "MARK") != NULL);
	FA_CHECK(script_unsafe("set title 'a' . MARK\n", "MARK") != NULL);
	FA_CHECK(script_unsafe("set title 'it's MARK'\n", "MARK") != NULL);
	FA_CHECK(script_unsafe("# MARK\n", "MARK") != NULL);
	FA_CHECK(script_unsafe("set title `MARK`\n", "MARK") != NULL);
	FA_CHECK(script_unsafe("!MARK\n", "MARK") != NULL);
	FA_CHECK(script_unsafe("$a << EOD\n1 'MARK'\nMARK\nEOD\n", "MARK") != NULL);
	FA_CHECK(script_unsafe("$a << EOD\n1 'MARK'\nEODX\nEOD\n", "MARK") != NULL);
	FA_CHECK(script_unsafe("$a << EOD\n1 'MARK'\n", "MARK") != NULL);
}

/* Marker files left in dir, as a list for a message ("" when none). */
static void markers_left(const char *dir, char *buf, size_t size)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	size_t len = 0;
	buf[0] = '\0';
	while (d && (e = readdir(d)))
		if (strchr(e->d_name, '-') && len < size)
			len += (size_t)snprintf(buf + len, size - len, "%s ", e->d_name);
	if (d)
		closedir(d);
}

/* Removes the marker files of dir (an earlier run's). */
static void remove_markers(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char path[1600];
	while (d && (e = readdir(d)))
		if (strchr(e->d_name, '-')) {
			snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
			unlink(path);
		}
	if (d)
		closedir(d);
}

/* Applies sql (one '?' or none) with text bound to every row it names. */
static int db_update(struct fa_store *s, const char *sql, const char *text)
{
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(fa_store_db(s), sql, -1, &st, NULL);
	if (rc == SQLITE_OK && text)
		sqlite3_bind_text(st, 1, text, -1, SQLITE_TRANSIENT);
	if (rc == SQLITE_OK)
		rc = sqlite3_step(st) == SQLITE_DONE ? SQLITE_OK : SQLITE_ERROR;
	sqlite3_finalize(st);
	FA_CHECKF(rc == SQLITE_OK, "%s: %s", sql, sqlite3_errmsg(fa_store_db(s)));
	return rc == SQLITE_OK ? 0 : -1;
}

/* Puts hostile text into every text of s a plot shows: the runs' suite,
 * label, backend and device, the kernel names, params and a case's mask
 * and dtype (one case only, so that they differ between cases and are
 * named). label_where picks the runs whose label changes. */
static void make_hostile(struct fa_store *s, const char *dir, const char *label_where,
			 char *label, size_t label_size)
{
	char h[4096];
	hostile_text(h, sizeof h, dir, "suite");
	db_update(s, "UPDATE runs SET suite_name = ?", h);
	hostile_text(h, sizeof h, dir, "device");
	db_update(s, "UPDATE runs SET device_name = ?", h);
	hostile_text(h, sizeof h, dir, "backend");
	db_update(s, "UPDATE runs SET backend = ?", h);
	hostile_text(label, label_size, dir, "label");
	if (label_where) {
		char sql[256];
		snprintf(sql, sizeof sql, "UPDATE runs SET label = ? WHERE %s", label_where);
		db_update(s, sql, label);
	}
	hostile_text(h, sizeof h, dir, "kernel");
	db_update(s, "UPDATE results SET kernel = ? WHERE kernel = 'cpu_flash'", h);
	hostile_text(h, sizeof h, dir, "params");
	db_update(s, "UPDATE results SET params = params || ',' || ? WHERE params <> ''", h);
	hostile_text(h, sizeof h, dir, "mask");
	db_update(s, "UPDATE cases SET mask = ? WHERE idx = 0", h);
	hostile_text(h, sizeof h, dir, "dtype");
	db_update(s, "UPDATE cases SET dtype = ? WHERE idx = 1", h);
}

/* Writes o's script (checked with script_unsafe against every hostile
 * string: they all start with "`touch ") and draws it as PNG with gnuplot. */
static void hostile_draw(struct fa_store *s, struct fa_plot_opts o, const char *dir,
			 const char *name)
{
	char path[1300], *text, marks[2048];
	const char *why;
	struct fa_err err;
	enum fa_rc rc;
	size_t len = 0;

	text = script_text(s, &o, &rc, &err);
	FA_CHECKF(rc == FA_OK && text, "%s: %s", name, err.msg);
	if (text) {
		FA_CHECKF(fa_test_count(text,
			  "touch ") > 0, "%s: no hostile text in the script", name);
		why = script_unsafe(text, "touch ");
		FA_CHECKF(!why, "%s: %s", name, why);
		why = script_unsafe(text, "system(");
		FA_CHECKF(!why, "%s: %s", name, why);
	}
	free(text);
	if (!fa_plot_gnuplot_available())
		return; /* the script is checked; the drawing needs gnuplot */
	snprintf(path, sizeof path, "%s/out/%s.png", dir, name);
	fa_err_clear(&err);
	rc = fa_plot_render(s, &o, path, &err);
	FA_CHECKF(rc == FA_OK, "%s: %s", name, err.msg);
	text = fa_test_read_file(path, &len);
	FA_CHECKF(text && len > 8 && memcmp(text, "\x89PNG", 4) == 0, "%s: no PNG drawn", name);
	free(text);
	markers_left(dir, marks, sizeof marks);
	FA_CHECKF(!marks[0], "%s: gnuplot ran hostile text: %s", name, marks);
}

/* Hostile suite names, labels, devices, kernel names, params and case
 * parameters through every kind of plot: the script keeps them quoted and,
 * drawn by gnuplot, the plot is drawn and no marker file appears. */
FA_TEST(plot, hostile_text_never_runs)
{
	char dir[1300], label[4096];
	struct fa_store *s;
	struct fa_plot_opts o;
	int64_t run_id = 0;
	have_gnuplot(); /* says so when the drawings are skipped */
	snprintf(dir, sizeof dir, "%s/hostile", fa_test_tmpdir());
	mkdir(dir, 0777);
	remove_markers(dir); /* of an earlier run of the test */

	/* throughput and speedup: the report fixture */
	s = fa_fixture_open();
	FA_REQUIRE(s);
	make_hostile(s, dir, "id = 2", label, sizeof label);
	o = run_opts(FA_PLOT_THROUGHPUT, FA_PLOT_PNG, FA_FIXTURE_RUN_MAIN);
	hostile_draw(s, o, dir, "throughput");
	o.where = "q_len > 0 && heads > 0"; /* the --where text is shown too */
	hostile_draw(s, o, dir, "throughput-where");
	{
		struct fa_compare cmp;
		struct fa_err err;
		memset(&cmp, 0, sizeof cmp);
		fa_err_clear(&err);
		/* the label as the HEAD spec, as `plot speedup 1 LABEL` */
		FA_CHECKF(fa_compare_build(s, "1", label, NULL, &cmp, &err) == FA_OK, "compare: %s",
			  err.msg);
		o = opts_of(FA_PLOT_SPEEDUP, FA_PLOT_PNG);
		o.compare = &cmp;
		if (cmp.n_rows)
			hostile_draw(s, o, dir, "speedup");
		hostile_text(label, sizeof label, dir, "title");
		o.title = label;
		if (cmp.n_rows)
			hostile_draw(s, o, dir, "speedup-title");
		fa_compare_free(&cmp);
	}
	fa_store_close(s);

	/* history: the nightly runs of the history fixture, selected by their
	 * hostile label */
	s = fa_fixture_history_open();
	FA_REQUIRE(s);
	make_hostile(s, dir, "label = 'nightly'", label, sizeof label);
	{
		struct fa_history h;
		struct fa_history_opts ho;
		struct fa_err err;
		memset(&h, 0, sizeof h);
		fa_history_opts_init(&ho);
		ho.label = label;
		fa_err_clear(&err);
		FA_CHECKF(fa_history_build(s, &ho, &h, &err) == FA_OK, "history: %s", err.msg);
		o = opts_of(FA_PLOT_HISTORY, FA_PLOT_PNG);
		o.history = &h;
		if (h.n_series)
			hostile_draw(s, o, dir, "history");
		fa_history_free(&h);
	}
	fa_store_close(s);

	/* heatmap: the tuning run, its params hostile too */
	s = open_tuning_db(&run_id);
	FA_REQUIRE(s);
	make_hostile(s, dir, "1 = 1", label, sizeof label);
	db_update(s, "UPDATE results SET kernel = ? WHERE kernel = '" TUNE_KERNEL "'", "k@x");
	o = run_opts(FA_PLOT_HEATMAP, FA_PLOT_PNG, run_id);
	hostile_draw(s, o, dir, "heatmap");
	fa_store_close(s);
}

/* A device name and a label with bytes that are not UTF-8 (a plugin's, a
 * merged database's): the script (`set encoding utf8`) has U+FFFD in their
 * place, and the SVG gnuplot draws from it is UTF-8 (it copied the bytes,
 * and the SVG was not well-formed XML: no browser drew it). */
FA_TEST(plot, text_that_is_not_utf8_stays_out_of_the_script)
{
	struct fa_store *s = fa_fixture_open();
	struct fa_plot_opts o = run_opts(FA_PLOT_THROUGHPUT, FA_PLOT_SVG, FA_FIXTURE_RUN_MAIN);
	char *text, *svg = NULL;
	size_t len = 0;
	long at;
	struct fa_err err;
	enum fa_rc rc;
	FA_REQUIRE(s);
	db_update(s, "UPDATE runs SET device_name = ?", "GPU \xff\xfe \xc0\xaf \xc3\xa9 x");
	db_update(s, "UPDATE runs SET label = ?", "lab\xe2\x82 el");
	text = script_text(s, &o, &rc, &err);
	FA_CHECKF(rc == FA_OK && text, "%s", err.msg);
	if (text) {
		FA_CHECKF((at = fa_test_utf8_invalid_at(text, strlen(text))) < 0,
			  "script byte 0x%02x at %ld is not UTF-8", at < 0 ? 0 : (unsigned char)text[at], at);
		FA_CHECKF(strstr(text, "lab\xef\xbf\xbd\xef\xbf\xbd el") &&
			  strstr(text, "GPU \xef\xbf\xbd\xef\xbf\xbd \xef\xbf\xbd\xef\xbf\xbd \xc3\xa9 x"),
			  "no U+FFFD in the title: %.2000s", text);
	}
	free(text);
	if (have_gnuplot()) {
		fa_err_clear(&err);
		rc = fa_plot_svg(s, &o, &svg, &len, &err);
		FA_CHECKF(rc == FA_OK && svg, "%s", err.msg);
		if (svg)
			FA_CHECKF((at = fa_test_utf8_invalid_at(svg, len)) < 0,
				  "SVG byte 0x%02x at %ld is not UTF-8", at < 0 ? 0 : (unsigned char)svg[at], at);
		free(svg);
	}
	fa_store_close(s);
}

/* s as a JSON string (quotes, backslashes and control characters escaped). */
static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fprintf(f, "\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			fprintf(f, "\\u%04x", (unsigned char)*s);
		else
			fputc(*s, f);
	}
	fputc('"', f);
}

/* The ways users reported: a suite named with backquotes through an
 * imported file's suite_name (plot history --suite, plot throughput), a
 * label given to plot speedup, a --title; through the command, with
 * gnuplot drawing. */
FA_TEST(plot, hostile_import_through_the_command)
{
	char dir[1300], db[1400], file[1400], out[1400], suite[4096], label[4096], title[4096];
	char marks[2048];
	const char *kind_args[4][12];
	struct fa_proc_result r;
	FILE *f;
	if (!have_gnuplot())
		return;
	snprintf(dir, sizeof dir, "%s/hostile", fa_test_tmpdir());
	mkdir(dir, 0777);
	remove_markers(dir);
	snprintf(db, sizeof db, "%s/hostile.db", fa_test_tmpdir());
	unlink(db);
	hostile_text(suite, sizeof suite, dir, "isuite");
	hostile_text(label, sizeof label, dir, "ilabel");
	hostile_text(title, sizeof title, dir, "ititle");
	/* two runs of one label, so that the label is a compare's side */
	for (int run = 0; run < 2; run++) {
		snprintf(file, sizeof file, "%s/hostile-%d.jsonl", fa_test_tmpdir(), run);
		f = fopen(file, "w");
		FA_REQUIRE(f);
		fputs("{\"run\": {\"suite_name\": ", f);
		json_str(f, suite);
		fputs(", \"device_name\": ", f);
		json_str(f, label);
		fprintf(f, ", \"started_at\": \"2026-11-0%dT00:00:00Z\", \"label\": ", run + 1);
		json_str(f, label);
		fputs("}}\n", f);
		for (int q = 128; q <= 1024; q *= 2)
			for (int k = 0; k < 2; k++)
				fprintf(f,
					"{\"heads\": 4, \"head_dim\": 64, \"dtype\": \"fp16\", \"seq_len\": %d, "
					"\"kernel\": \"%s\", \"samples\": [%g, %g, %g]}\n",
					q, k ? "peer@x" : "peer_b", q * (1 + k + run * 0.1) / 1000,
					q * (1.01 + k + run * 0.1) / 1000, q * (0.99 + k + run * 0.1) / 1000);
		FA_REQUIRE(fclose(f) == 0);
		fa_proc_run((char *[]){"import", file, "--db", db, NULL}, NULL, 60, &r);
		FA_REQUIRE(r.status == 0);
		fa_proc_free(&r);
	}
	snprintf(out, sizeof out, "%s/out/cmd.png", dir);
	{
		const char *a0[] = {"plot", "throughput", "--db", db, "--run", label, "--output", out, NULL};
		const char *a1[] = {"plot", "speedup", "--db", db, "1", label, "--output", out,
				    "--title", title, NULL};
		const char *a2[] = {"plot", "history", "--db", db, "--suite", suite, "--label", label,
				    "--output", out, NULL};
		const char *a3[] = {"plot", "heatmap", "--db", db, "--run", label, "--output", out, NULL};
		memcpy(kind_args[0], a0, sizeof a0);
		memcpy(kind_args[1], a1, sizeof a1);
		memcpy(kind_args[2], a2, sizeof a2);
		memcpy(kind_args[3], a3, sizeof a3);
	}
	for (int k = 0; k < 4; k++) {
		unlink(out);
		fa_proc_run((char *const *)kind_args[k], NULL, 120, &r);
		if (k < 3)
			FA_CHECKF(r.status == 0 && access(out, F_OK) == 0, "plot %s: status %d, stderr '%s'",
				  kind_args[k][1], r.status, r.err);
		else /* not a tuning run: nothing drawn, but its message holds the label */
			FA_CHECKF(r.status == 2 && strstr(r.err, "several sets of params"),
				  "plot heatmap: status %d, stderr '%s'", r.status, r.err);
		fa_proc_free(&r);
		markers_left(dir, marks, sizeof marks);
		FA_CHECKF(!marks[0], "plot %s: gnuplot ran hostile text: %s", kind_args[k][1], marks);
	}
}

/* ---- --ignore-params ------------------------------------------------------------------ */

/* plot speedup --ignore-params pairs one kernel run with other params on
 * the two sides (run --ab with --param a:K.N=V and b:K.N=W), as fabench
 * compare --ignore-params does; without it only the kernel without params
 * is drawn. */
FA_TEST(plot, speedup_ignore_params)
{
	char db[1300], file[1300], script[1300];
	struct fa_proc_result r;
	char *text;
	FILE *f;
	snprintf(db, sizeof db, "%s/ab.db", fa_test_tmpdir());
	unlink(db);
	for (int side = 0; side < 2; side++) {
		snprintf(file, sizeof file, "%s/ab-%d.jsonl", fa_test_tmpdir(), side);
		f = fopen(file, "w");
		FA_REQUIRE(f);
		fprintf(f, "{\"run\": {\"suite_name\": \"planted\", \"label\": \"pl-%c\"}}\n",
			side ? 'b' : 'a');
		for (int q = 128; q <= 512; q *= 2) {
			/* side b's tuned kernel is 25% slower */
			double t = q / 100.0, slow = side ? 1.25 : 1;
			fprintf(f,
				"{\"heads\": 4, \"head_dim\": 64, \"seq_len\": %d, \"kernel\": \"test_delay\", "
				"\"params\": \"delay_pct=%d\", \"samples\": [%g, %g, %g, %g, %g, %g]}\n",
				q, side ? 5 : 0, t * slow, t * slow * 1.01, t * slow * 0.99, t * slow * 1.005,
				t * slow * 0.995, t * slow);
			fprintf(f,
				"{\"heads\": 4, \"head_dim\": 64, \"seq_len\": %d, \"kernel\": \"test_correct\", "
				"\"samples\": [%g, %g, %g, %g, %g, %g]}\n",
				q, t, t * 1.01, t * 0.99, t * 1.005, t * 0.995, t);
		}
		FA_REQUIRE(fclose(f) == 0);
		fa_proc_run((char *[]){"import", file, "--db", db, NULL}, NULL, 60, &r);
		FA_REQUIRE(r.status == 0);
		fa_proc_free(&r);
	}
	snprintf(script, sizeof script, "%s/ab.gp", fa_test_tmpdir());
	/* without: only test_correct is timed on both sides */
	unlink(script);
	fa_proc_run((char *[]){"plot", "speedup", "--db", db, "pl-a", "pl-b", "--script", script, NULL},
		    NULL, 60, &r);
	FA_CHECKF(r.status == 0, "status %d, stderr '%s'", r.status, r.err);
	fa_proc_free(&r);
	text = fa_test_read_file(script, NULL);
	FA_REQUIRE(text);
	FA_CHECK(fa_test_count(text, "set title 'test_correct'") == 1 && !strstr(text, "' 3, "));
	FA_CHECKF(fa_test_count(text, "test_delay") == 0, "script '%s'", text);
	free(text);
	/* with: test_delay's rows too, named by both params, and slower */
	unlink(script);
	fa_proc_run((char *[]){"plot", "speedup", "--db", db, "--ignore-params", "pl-a", "pl-b",
			       "--script", script, NULL},
		    NULL, 60, &r);
	FA_CHECKF(r.status == 0, "status %d, stderr '%s'", r.status, r.err);
	fa_proc_free(&r);
	text = fa_test_read_file(script, NULL);
	FA_REQUIRE(text);
	FA_CHECKF(fa_test_count(text, "set title 'test_delay[delay_pct=0 -> delay_pct=5]'") == 1,
		  "script '%s'", text);
	FA_CHECK(fa_test_count(text, "set title 'test_correct'") == 1);
	/* three cases, rows of both panels */
	FA_CHECK(strstr(text, "set ytics ('#1  q_len=128' 0, '#2  q_len=256' 1, '#3  q_len=512' 2)"));
	FA_CHECK(strstr(text, "'slower (3)'") && strstr(text, "'same (3)'"));
	free(text);
	/* only for speedup plots */
	fa_proc_run((char *[]){"plot", "throughput", "--db", db, "--ignore-params", NULL}, NULL, 60,
		    &r);
	FA_CHECKF(r.status == 2 && strstr(r.err, "--ignore-params applies to speedup plots, not "
						 "throughput"),
		  "status %d, stderr '%s'", r.status, r.err);
	fa_proc_free(&r);
}

/* ---- Panels of a larger run ---------------------------------------------------------- */

/* Imports rows (JSON lines, the header first) into a new database at
 * <tmp>/name.db and writes the throughput script of its run into *text. */
static void import_and_script(const char *name, const char *rows, char **text)
{
	char db[1300], file[1300], script[1300];
	struct fa_proc_result r;
	FILE *f;
	*text = NULL;
	snprintf(db, sizeof db, "%s/%s.db", fa_test_tmpdir(), name);
	snprintf(file, sizeof file, "%s/%s.jsonl", fa_test_tmpdir(), name);
	snprintf(script, sizeof script, "%s/%s.gp", fa_test_tmpdir(), name);
	unlink(db);
	f = fopen(file, "w");
	FA_REQUIRE(f);
	fputs(rows, f);
	FA_REQUIRE(fclose(f) == 0);
	fa_proc_run((char *[]){"import", file, "--db", db, NULL}, NULL, 60, &r);
	FA_CHECKF(r.status == 0, "import: status %d, stderr '%s'", r.status, r.err);
	fa_proc_free(&r);
	fa_proc_run((char *[]){"plot", "throughput", "--db", db, "--script", script, NULL}, NULL, 60,
		    &r);
	FA_CHECKF(r.status == 0, "plot: status %d, stderr '%s'", r.status, r.err);
	fa_proc_free(&r);
	*text = fa_test_read_file(script, NULL);
}

/* One head_dim with 10 batches x 2 dtypes (20 variants): split by batch,
 * the one facet that leaves at most four variants a panel (dtype would
 * leave 10), into 10 panels of the two dtypes. 20 head_dims of 6 variants
 * each: past the 16 panels, nothing is split, and no panel is merged. */
FA_TEST(plot, throughput_splits_full_panels)
{
	char *rows = NULL, *text;
	size_t len = 0;
	FILE *b = open_memstream(&rows, &len);
	FA_REQUIRE(b);
	fprintf(b, "{\"run\": {\"suite_name\": \"wide\"}}\n");
	for (int batch = 1; batch <= 10; batch++)
		for (int d = 0; d < 2; d++)
			for (int q = 256; q <= 1024; q *= 2)
				fprintf(b,
				       "{\"batch\": %d, \"heads\": 4, \"head_dim\": 64, \"dtype\": "
				       "\"%s\", \"seq_len\": %d, \"kernel\": \"k\", \"median_ms\": %g}\n",
				       batch, d ? "bf16" : "fp16", q, 0.01 * batch * q / 256);
	FA_REQUIRE(fclose(b) == 0);
	import_and_script("wide", rows, &text);
	free(rows);
	FA_REQUIRE(text);
	FA_CHECKF(fa_test_count(text, "\n# panel ") == 10, "%d panels",
		  fa_test_count(text, "\n# panel "));
	FA_CHECK(strstr(text, "set title 'head_dim 64, batch 1'") &&
		 strstr(text, "set title 'head_dim 64, batch 10'"));
	FA_CHECK(fa_test_count(text, "title 'fp16'") == 10 &&
		 fa_test_count(text, "title 'bf16'") == 10);
	FA_CHECK(strstr(text, "set multiplot layout 4,3 "));
	free(text);

	rows = NULL;
	b = open_memstream(&rows, &len);
	FA_REQUIRE(b);
	fprintf(b, "{\"run\": {\"suite_name\": \"tall\"}}\n");
	for (int hd = 8; hd <= 160; hd += 8)
		for (int batch = 1; batch <= 6; batch++)
			fprintf(b,
			       "{\"batch\": %d, \"heads\": 4, \"head_dim\": %d, \"seq_len\": 512, "
			       "\"kernel\": \"k\", \"median_ms\": %g}\n",
			       batch, hd, 0.01 * batch * hd);
	FA_REQUIRE(fclose(b) == 0);
	import_and_script("tall", rows, &text);
	free(rows);
	FA_REQUIRE(text);
	FA_CHECKF(fa_test_count(text, "\n# panel ") == 20, "%d panels",
		  fa_test_count(text, "\n# panel "));
	FA_CHECK(fa_test_count(text, "title 'batch 6'") == 20);
	free(text);
}

/* A heatmap's rows name the models (labels) that share each case, as the
 * reports' Models sections do. */
FA_TEST(plot, heatmap_rows_name_the_models)
{
	char suite[1200], db[1200], script[1200];
	struct fa_proc_result r;
	snprintf(suite, sizeof suite, "%s/tagged.yaml", fa_test_tmpdir());
	snprintf(db, sizeof db, "%s/tagged.db", fa_test_tmpdir());
	snprintf(script, sizeof script, "%s/tagged.gp", fa_test_tmpdir());
	unlink(db);
	FA_REQUIRE(fa_test_write_file(suite, "suite: tagged\ndefaults: {heads: 2, head_dim: 32, "
					     "seq_len: 16, dtype: fp32}\naxes:\n  tag: [draft, "
					     "target]\n") == 0);
	fa_proc_run((char *[]){"run", suite, "--backend", "cpu", "--kernels", "cpu_flash", "--param",
			       "cpu_flash.block_q=8,16", "--db", db, "--quiet", NULL},
		    NULL, 120, &r);
	FA_REQUIRE(r.status == 0);
	fa_proc_free(&r);
	fa_proc_run((char *[]){"plot", "heatmap", "--db", db, "--script", script, NULL}, NULL, 60, &r);
	FA_CHECKF(r.status == 0, "status %d: %s", r.status, r.err);
	fa_proc_free(&r);
	char *text = fa_test_read_file(script, NULL);
	FA_CHECKF(text && strstr(text, "'#1 (draft, target): best "), "%s", text ? text : "(null)");
	free(text);
}

/* A kernel's backward and forward-and-backward of one shape are two lines,
 * named by the pass, not one line through both passes' points (their
 * TFLOP/s count 2.5x and 3.5x the forward's FLOPs). */
FA_TEST(plot, throughput_passes_are_variants)
{
	char *text;
	import_and_script("passes",
			  "{\"run\": {\"suite_name\": \"passes\"}}\n"
			  "{\"heads\": 4, \"head_dim\": 64, \"seq_len\": 256, \"pass\": \"bwd\", "
			  "\"kernel\": \"k_bwd\", \"median_ms\": 1}\n"
			  "{\"heads\": 4, \"head_dim\": 64, \"seq_len\": 512, \"pass\": \"bwd\", "
			  "\"kernel\": \"k_bwd\", \"median_ms\": 3}\n"
			  "{\"heads\": 4, \"head_dim\": 64, \"seq_len\": 256, \"pass\": \"fwd_bwd\", "
			  "\"kernel\": \"k_bwd\", \"median_ms\": 2}\n"
			  "{\"heads\": 4, \"head_dim\": 64, \"seq_len\": 512, \"pass\": \"fwd_bwd\", "
			  "\"kernel\": \"k_bwd\", \"median_ms\": 5}\n",
			  &text);
	FA_REQUIRE(text);
	FA_CHECKF(fa_test_count(text, " << EOD") == 2, "%d data blocks in\n%s",
		  fa_test_count(text, " << EOD"), text);
	FA_CHECKF(strstr(text, "title 'bwd'") && strstr(text, "title 'fwd_bwd'"), "%s", text);
	free(text);
}

/* The speedup plot's rows name a backward case's pass: a bwd and a fwd_bwd
 * case of one shape differ in nothing else, and read the same without it. */
FA_TEST(plot, speedup_rows_name_the_pass)
{
	char db[1200], script[1200], *text;
	struct fa_proc_result r;
	snprintf(script, sizeof script, "%s/speedup_bwd.gp", fa_test_tmpdir());
	FA_REQUIRE(fa_test_run_small_bwd("speedup_bwd.db", db, sizeof db) == 0);
	fa_proc_run((char *[]){"plot", "speedup", "--db", db, "1", "1", "--script", script, NULL},
		    NULL, 60, &r);
	FA_CHECKF(r.status == 0, "status %d: %s", r.status, r.err);
	fa_proc_free(&r);
	text = fa_test_read_file(script, NULL);
	FA_CHECKF(text && strstr(text, "pass=bwd'") && strstr(text, "pass=fwd_bwd'"), "%s",
		  text ? text : "(null)");
	free(text);
}
