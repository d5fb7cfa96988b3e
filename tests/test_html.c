/* test_html.c - `fabench report --format html`: the page of the fixture
 * database against golden files (without plots, whose SVG is gnuplot's and
 * differs between its versions; with and without a compare), that the page
 * is well formed (every tag closed in order) and escapes what it shows,
 * that it loads nothing from elsewhere and that its plots' ids do not
 * clash, the note when gnuplot is missing, the command's options, and,
 * where Chromium is installed (/usr/bin/chromium), a headless screenshot.
 *
 * FABENCH_UPDATE_GOLDEN=1 rewrites the golden files instead of comparing.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../harness/report/compare.h"
#include "../harness/report/plot.h"
#include "../harness/report/report.h"
#include "fixture.h"
#include "golden.h"
#include "proc.h"
#include "test.h"

/* The html report of run_id with extras h (may be NULL) as a malloc'd
 * string; *rc and err get the result. */
static char *html_text_of(struct fa_store *s, int64_t run_id, const struct fa_report_html_opts *h,
			  enum fa_rc *rc, struct fa_err *err)
{
	struct fa_report_opts o = {FA_FMT_HTML, NULL, FA_METRIC_ALL, FA_LAYOUT_WIDE};
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f) {
		*rc = FA_ERR_NOMEM;
		return NULL;
	}
	fa_err_clear(err);
	*rc = fa_report_write_html(s, run_id, &o, h, f, err);
	fclose(f);
	return buf;
}

/* Checks that every element is closed, in order, outside the void elements
 * (meta) and the self-closed ones (<x/>). Comments and the doctype are
 * skipped. Returns 1 when well formed; records what is wrong otherwise. */
static int well_formed(const char *html)
{
	char stack[64][32];
	int depth = 0;
	for (const char *p = html; (p = strchr(p, '<'));) {
		const char *end = strchr(p, '>');
		char name[32];
		size_t n;
		int closing = p[1] == '/';
		if (!end) {
			fa_test_fail(__FILE__, __LINE__, "unterminated tag at offset %zu",
				     (size_t)(p - html));
			return 0;
		}
		if (p[1] == '!' || p[1] == '?') {
			p = end + 1;
			continue;
		}
		n = strcspn(p + 1 + closing, " \t\n/>");
		snprintf(name, sizeof name, "%.*s", (int)n, p + 1 + closing);
		if (closing) {
			if (depth == 0 || strcmp(stack[depth - 1], name) != 0) {
				fa_test_fail(__FILE__, __LINE__, "</%s> closes <%s> at offset %zu", name,
					     depth ? stack[depth - 1] : "(nothing)", (size_t)(p - html));
				return 0;
			}
			depth--;
		} else if (end[-1] != '/' && strcasecmp(name, "meta") != 0) {
			if (depth == 64) {
				fa_test_fail(__FILE__, __LINE__, "elements nested too deep");
				return 0;
			}
			snprintf(stack[depth++], sizeof stack[0], "%s", name);
		}
		p = end + 1;
	}
	if (depth) {
		fa_test_fail(__FILE__, __LINE__, "<%s> is never closed", stack[depth - 1]);
		return 0;
	}
	return 1;
}

FA_TEST(html, golden_main)
{
	struct fa_store *s = fa_fixture_open();
	struct fa_report_opts o = {FA_FMT_HTML, NULL, FA_METRIC_ALL, FA_LAYOUT_WIDE};
	struct fa_err err;
	enum fa_rc rc;
	char *text, *plain = NULL;
	size_t len = 0;
	FILE *f;
	FA_REQUIRE(s);
	text = html_text_of(s, FA_FIXTURE_RUN_MAIN, NULL, &rc, &err);
	FA_CHECKF(rc == FA_OK, "report: %s", err.msg);
	if (rc == FA_OK && text) {
		fa_golden_check("report_main.html", text, strlen(text));
		FA_CHECK(well_formed(text));
	}
	/* fa_report_write with the html format gives the same page */
	f = open_memstream(&plain, &len);
	FA_REQUIRE(f);
	FA_CHECK(fa_report_write(s, FA_FIXTURE_RUN_MAIN, &o, f, &err) == FA_OK);
	fclose(f);
	FA_CHECK(text && plain && strcmp(text, plain) == 0);
	free(plain);
	free(text);
	fa_store_close(s);
}

FA_TEST(html, golden_partial_and_base)
{
	struct fa_store *s = fa_fixture_open();
	struct fa_err err;
	enum fa_rc rc;
	char *text;
	FA_REQUIRE(s);
	text = html_text_of(s, FA_FIXTURE_RUN_PARTIAL, NULL, &rc, &err);
	FA_CHECKF(rc == FA_OK, "report: %s", err.msg);
	if (rc == FA_OK && text) {
		fa_golden_check("report_partial.html", text, strlen(text));
		FA_CHECK(well_formed(text));
		FA_CHECK(strstr(text, "<dt>status</dt><dd>incomplete (the run did not finish"));
		FA_CHECK(!strstr(text, "<h2>Failures</h2>"));
	}
	free(text);
	text = html_text_of(s, FA_FIXTURE_RUN_BASE, NULL, &rc, &err);
	FA_CHECK(rc == FA_OK && text && well_formed(text));
	free(text);
	fa_store_close(s);
}

FA_TEST(html, golden_with_compare)
{
	struct fa_store *s = fa_fixture_open();
	struct fa_report_html_opts h = {NULL, 0};
	struct fa_compare cmp;
	struct fa_err err;
	enum fa_rc rc;
	char *text;
	FA_REQUIRE(s);
	fa_err_clear(&err);
	memset(&cmp, 0, sizeof cmp);
	FA_REQUIRE(fa_compare_build(s, "baseline", "2", NULL, &cmp, &err) == FA_OK);
	h.compare = &cmp;
	text = html_text_of(s, FA_FIXTURE_RUN_MAIN, &h, &rc, &err);
	FA_CHECKF(rc == FA_OK, "report: %s", err.msg);
	if (rc == FA_OK && text) {
		const char *c = strstr(text, "<h2>Compare</h2>");
		fa_golden_check("report_compare.html", text, strlen(text));
		FA_CHECK(well_formed(text));
		FA_REQUIRE(c);
		/* one table row per compare row, each with its verdict or change */
		FA_CHECK(fa_test_count(strstr(c, "<table class=\"compare\">"), "<tr>") ==
			 cmp.n_rows + 1);
		FA_CHECK(fa_test_count(c, "<td class=\"faster\">faster</td>") ==
			 cmp.verdicts[FA_PERF_FASTER]);
		FA_CHECK(fa_test_count(c, "<td class=\"slower\">slower</td>") ==
			 cmp.verdicts[FA_PERF_SLOWER]);
		FA_CHECK(fa_test_count(c, "<td class=\"broken\">broken</td>") ==
			 cmp.changes[FA_CMP_BROKEN]);
		FA_CHECK(strstr(c, "<dt>base</dt><dd><code>baseline</code> (by label): run 1 (label "
				   "baseline, commit <code>3f9a1c2e7b5d</code>, 2026-11-20T09:15:02Z)"));
		/* the reason of a newly failing result is shown */
		FA_CHECK(strstr(c, "workspace allocation of 96 MiB failed: &quot;Cannot allocate "
				   "memory&quot;, errno 12"));
	}
	free(text);
	fa_compare_free(&cmp);
	fa_store_close(s);
}

FA_TEST(html, tables_and_classes)
{
	struct fa_store *s = fa_fixture_open();
	struct fa_err err;
	enum fa_rc rc;
	char *text;
	const char *thead, *tbody;
	FA_REQUIRE(s);
	text = html_text_of(s, FA_FIXTURE_RUN_MAIN, NULL, &rc, &err);
	FA_REQUIRE(rc == FA_OK && text);
	/* the kernels head their columns, the baseline first */
	thead = strstr(text, "<table class=\"results\">");
	FA_REQUIRE(thead);
	FA_CHECK(strstr(thead, "<th class=\"k\" colspan=\"4\">cpu_dense</th><th class=\"k\" "
			       "colspan=\"5\">cpu_flash</th><th class=\"k\" colspan=\"5\">"
			       "cpu_flash_tiled</th>"));
	FA_CHECK(strstr(thead, "<th class=\"n k1\">ms</th><th class=\"n\">throughput</th>"));
	/* eight rows, numbers right-aligned, statuses coloured */
	tbody = strstr(thead, "<tbody>");
	FA_REQUIRE(tbody);
	FA_CHECK(fa_test_count(tbody, "<tr>") == 8);
	FA_CHECK(fa_test_count(tbody, "<td class=\"fail\">FAIL</td>") == 1);
	FA_CHECK(fa_test_count(tbody, "<td class=\"timeout\">timeout</td>") == 1);
	FA_CHECK(fa_test_count(tbody, "<td class=\"error\">error</td>") == 1);
	/* the failing max_abs */
	FA_CHECK(fa_test_count(tbody, "<td class=\"n bad\">1.23e-02</td>") == 1);
	/* sticky header, right-aligned numbers, no external anything */
	FA_CHECK(strstr(text, "thead{position:sticky;top:0"));
	FA_CHECK(strstr(text, ".n{text-align:right}"));
	FA_CHECK(!strstr(text, "<script") && !strstr(text, "<link") && !strstr(text, "src=") &&
		 !strstr(text, "@import") && !strstr(text, "http"));
	/* no plots asked for: no figure and no note */
	FA_CHECK(!strstr(text, "<svg") && !strstr(text, "Plots are left out"));
	free(text);
	fa_store_close(s);
}

/* Everything the page shows from the database is escaped. */
FA_TEST(html, escapes_text)
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
	char *text;

	snprintf(path, sizeof path, "%s/escape.db", fa_test_tmpdir());
	unlink(path);
	fa_err_clear(&err);
	FA_REQUIRE(fa_store_open(path, 1, &s, &err) == FA_OK);
	memset(&ri, 0, sizeof ri);
	ri.started_at = "2026-11-25T21:40:00Z";
	ri.suite_name = "<script>alert(1)</script>";
	ri.label = "a&b\x1b[2J\xff";
	ri.command_line = "fabench run 'x' \"y\"";
	ri.seed = 5;
	FA_REQUIRE(fa_store_run_begin(s, &ri, &run_id, &err) == FA_OK);
	memset(&c, 0, sizeof c);
	c.p = (struct fa_problem){.batch = 1, .heads = 4, .kv_heads = 4, .q_len = 64, .kv_len = 64,
				  .head_dim = 64, .head_dim_v = 64, .total_q = 64, .total_k = 64,
				  .scale = 0.125f};
	c.key = "k<1>";
	memset(&r, 0, sizeof r);
	r.kernel = "k<i>&\"'";
	r.params = "";
	r.status = FA_STATUS_FAIL;
	snprintf(r.reason, sizeof r.reason, "max_abs 2 > 1 <b>");
	r.t.n = 3;
	r.samples = x;
	r.t.median_ms = 0.5;
	r.tflops = 0.25;
	r.checked = 1;
	r.st.max_abs = 2;
	r.st.same_max_abs = -1;
	r.st.worst_index = -1;
	r.tel = (struct fa_telemetry){NAN, NAN, NAN, NAN, -1};
	FA_REQUIRE(fa_store_case_commit(s, run_id, &c, &r, 1, NULL, &err) == FA_OK);
	text = html_text_of(s, run_id, NULL, &rc, &err);
	FA_REQUIRE(rc == FA_OK && text);
	FA_CHECK(well_formed(text));
	FA_CHECK(!strstr(text, "<script>") && !strstr(text, "<i>") && !strstr(text, "<b>"));
	FA_CHECK(strstr(text, "&lt;script&gt;alert(1)&lt;/script&gt;"));
	FA_CHECK(strstr(text, "k&lt;i&gt;&amp;&quot;&#39;"));
	/* an escape sequence's ESC is '?', a byte that is no UTF-8 U+FFFD */
	FA_CHECKF(strstr(text, "<dt>label</dt><dd>a&amp;b?[2J\xef\xbf\xbd</dd>"), "%s", text);
	FA_CHECK(strstr(text, "<code>fabench run &#39;x&#39; &quot;y&quot;</code>"));
	FA_CHECK(strstr(text, ": max_abs 2 &gt; 1 &lt;b&gt;</li>"));
	FA_CHECK(strstr(text, "<code>k&lt;1&gt;</code>"));
	free(text);
	fa_store_close(s);
}

/* Asked for plots without gnuplot: the page says why they are missing. */
FA_TEST(html, plots_without_gnuplot)
{
	struct fa_store *s = fa_fixture_open();
	struct fa_report_html_opts h = {NULL, 1};
	const char *prev = getenv("FABENCH_GNUPLOT");
	char saved[1024];
	struct fa_err err;
	enum fa_rc rc;
	char *text;
	FA_REQUIRE(s);
	snprintf(saved, sizeof saved, "%s", prev ? prev : "");
	setenv("FABENCH_GNUPLOT", "gnuplot-that-is-not-installed", 1);
	text = html_text_of(s, FA_FIXTURE_RUN_MAIN, &h, &rc, &err);
	FA_CHECK(rc == FA_OK && text);
	FA_CHECK(text && strstr(text, "<p class=\"note\">Plots are left out: gnuplot is not "
				      "installed (install the gnuplot-nox package).</p>"));
	FA_CHECK(text && !strstr(text, "<svg"));
	free(text);
	if (saved[0])
		setenv("FABENCH_GNUPLOT", saved, 1);
	else
		unsetenv("FABENCH_GNUPLOT");
	fa_store_close(s);
}

/* The ids of the page (id="..." and id='...') are all different. */
static int ids_unique(const char *html)
{
	int n = 0, ok = 1;
	const char *ids[4096];
	for (const char *p = html; (p = strstr(p, " id=")) && n < 4096; p += 4) {
		char q = p[4];
		const char *v = p + 5;
		size_t len = strcspn(v, q == '"' ? "\"" : "'");
		for (int i = 0; i < n && ok; i++)
			if (strncmp(ids[i], v, len) == 0 && ids[i][len] == q) {
				fa_test_fail(__FILE__, __LINE__, "id '%.*s' twice", (int)len, v);
				ok = 0;
			}
		ids[n++] = v;
	}
	return ok && n > 0;
}

/* Writes the page with plots and compare to <tmpdir>/report.html; returns
 * it (malloc'd) or NULL. */
static char *page_with_plots(struct fa_store *s, char *path, size_t size)
{
	struct fa_report_html_opts h = {NULL, 1};
	struct fa_compare cmp;
	struct fa_err err;
	enum fa_rc rc;
	char *text;
	FILE *f;
	memset(&cmp, 0, sizeof cmp);
	fa_err_clear(&err);
	if (fa_compare_build(s, "1", "2", NULL, &cmp, &err) != FA_OK) {
		fa_test_fail(__FILE__, __LINE__, "compare: %s", err.msg);
		return NULL;
	}
	h.compare = &cmp;
	text = html_text_of(s, FA_FIXTURE_RUN_MAIN, &h, &rc, &err);
	fa_compare_free(&cmp);
	if (rc != FA_OK || !text) {
		fa_test_fail(__FILE__, __LINE__, "report: %s", err.msg);
		free(text);
		return NULL;
	}
	snprintf(path, size, "%s/report.html", fa_test_tmpdir());
	f = fopen(path, "w");
	if (f) {
		fputs(text, f);
		fclose(f);
	}
	return text;
}

FA_TEST(html, embeds_plots_as_inline_svg)
{
	struct fa_store *s;
	char path[1300], *text;
	if (!fa_plot_gnuplot_available()) {
		fa_test_skip("gnuplot is not installed (apt-get install gnuplot-nox)");
		return;
	}
	s = fa_fixture_open();
	FA_REQUIRE(s);
	text = page_with_plots(s, path, sizeof path);
	FA_REQUIRE(text);
	/* throughput and speedup; no heatmap (not a tuning run) */
	FA_CHECK(fa_test_count(text, "<figure>\n<svg") == 2);
	FA_CHECK(fa_test_count(text, "<figcaption>") == 2);
	FA_CHECK(!strstr(text, "<?xml") && !strstr(text, "No heatmap"));
	/* every id belongs to one figure, and references follow */
	FA_CHECK(strstr(text, "id=\"f1-gnuplot_canvas\"") && strstr(text, "id=\"f2-gnuplot_canvas\""));
	FA_CHECK(ids_unique(text));
	FA_CHECK(!strstr(text, "href='#gp") && !strstr(text, "href=\"#gp"));
	/* nothing from elsewhere: the only URLs are SVG's namespace names */
	FA_CHECK(!strstr(text, "<script") && !strstr(text, "<link") && !strstr(text, " src=") &&
		 !strstr(text, "@import") && !strstr(text, "url(http"));
	FA_CHECK(fa_test_count(text, "http") ==
		 fa_test_count(text, "\"http://www.w3.org/2000/svg\"") +
			 fa_test_count(text, "\"http://www.w3.org/1999/xlink\""));
	FA_CHECK(well_formed(text));
	free(text);
	fa_store_close(s);
}

/* Runs argv (no shell) with output to /dev/null; kills it after timeout_s.
 * Returns its exit status, 128 + signal, or -1. */
static int run_quiet(char *const argv[], double timeout_s)
{
	pid_t pid = fork();
	int status;
	double waited = 0;
	if (pid < 0)
		return -1;
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);
		if (null >= 0) {
			dup2(null, 0);
			dup2(null, 1);
			dup2(null, 2);
		}
		execv(argv[0], argv);
		_exit(127);
	}
	for (;;) {
		struct timespec ts = {0, 20 * 1000 * 1000};
		pid_t w = waitpid(pid, &status, WNOHANG);
		if (w == pid)
			break;
		if (w < 0 && errno != EINTR)
			return -1;
		if (waited > timeout_s) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			return 128 + SIGKILL;
		}
		nanosleep(&ts, NULL);
		waited += 0.02;
	}
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* Headless Chromium renders the page (with its plots when gnuplot is here):
 * a screenshot of a non-blank page comes out. */
FA_TEST(html, renders_in_chromium)
{
	static const char chromium[] = "/usr/bin/chromium";
	static const unsigned char png_sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
	struct fa_store *s;
	char path[1300], url[1400], shot[1300], shot_arg[1400], profile[1300], profile_arg[1400];
	char *text, *png;
	size_t len = 0;
	int status;
	if (access(chromium, X_OK) != 0) {
		fa_test_skip("%s is not installed (apt-get install chromium)", chromium);
		return;
	}
	s = fa_fixture_open();
	FA_REQUIRE(s);
	if (fa_plot_gnuplot_available()) {
		text = page_with_plots(s, path, sizeof path);
	} else {
		struct fa_err err;
		enum fa_rc rc;
		FILE *f;
		text = html_text_of(s, FA_FIXTURE_RUN_MAIN, NULL, &rc, &err);
		snprintf(path, sizeof path, "%s/report.html", fa_test_tmpdir());
		f = fopen(path, "w");
		if (f && text) {
			fputs(text, f);
			fclose(f);
		}
	}
	FA_REQUIRE(text);
	free(text);
	snprintf(url, sizeof url, "file://%s", path);
	snprintf(shot, sizeof shot, "%s/screenshot.png", fa_test_tmpdir());
	snprintf(shot_arg, sizeof shot_arg, "--screenshot=%s", shot);
	snprintf(profile, sizeof profile, "%s/chromium-profile", fa_test_tmpdir());
	snprintf(profile_arg, sizeof profile_arg, "--user-data-dir=%s", profile);
	unlink(shot);
	status = run_quiet(
		(char *[]){(char *)chromium, "--headless", "--no-sandbox", "--disable-gpu",
			   "--disable-quic", "--no-first-run", "--disable-background-networking",
			   "--disable-component-update", "--disable-sync", profile_arg, shot_arg,
			   "--window-size=1400,2000", url, NULL},
		60);
	FA_CHECKF(status == 0, "chromium exited with %d", status);
	png = fa_test_read_file(shot, &len);
	FA_CHECKF(png && len > 8 && memcmp(png, png_sig, 8) == 0, "no screenshot at %s", shot);
	/* a blank 1400x2000 page compresses to a few KB; tables and text to
	 * far more */
	FA_CHECKF(len > 50000, "the screenshot has only %zu bytes", len);
	printf("  html/renders_in_chromium: screenshot in %s\n", shot);
	free(png);
	fa_store_close(s);
}

FA_TEST(html, command_options)
{
	char db[1300], out[1300];
	struct fa_store *s = fa_fixture_open();
	struct fa_proc_result r;
	char *text;
	FA_REQUIRE(s);
	fa_store_close(s);
	snprintf(db, sizeof db, "%s", fa_fixture_path());
	snprintf(out, sizeof out, "%s/cmd/report.html", fa_test_tmpdir());
	fa_proc_run((char *[]){"report", "--db", db, "--run", "2", "--format", "html", "--compare",
			       "baseline", "--no-plots", "--output", out, NULL},
		    NULL, 60, &r);
	FA_CHECKF(r.status == 0, "status %d, stderr '%s'", r.status, r.err);
	fa_proc_free(&r);
	text = fa_test_read_file(out, NULL);
	/* BASE alone compares against the report's run; no plots */
	FA_CHECK(text && strstr(text, "<dt>head</dt><dd><code>2</code> (by id): run 2 ("));
	FA_CHECK(text && !strstr(text, "<svg") && !strstr(text, "Plots are left out"));
	free(text);
	fa_proc_run((char *[]){"report", "--db", db, "--compare", "1:2", NULL}, NULL, 60, &r);
	FA_CHECKF(r.status == 2 && strstr(r.err, "--compare applies to --format html"),
		  "status %d, stderr '%s'", r.status, r.err);
	fa_proc_free(&r);
	fa_proc_run((char *[]){"report", "--db", db, "--format", "html", "--compare", "1:nosuch",
			       "--no-plots", NULL},
		    NULL, 60, &r);
	FA_CHECKF(r.status != 0 && strstr(r.err, "nosuch") && r.out[0] == '\0',
		  "status %d, stderr '%s'", r.status, r.err);
	fa_proc_free(&r);
	fa_proc_run((char *[]){"report", "--db", db, "--format", "pdf", NULL}, NULL, 60, &r);
	FA_CHECKF(r.status == 2 && strstr(r.err, "must be md, csv, json or html"),
		  "status %d, stderr '%s'", r.status, r.err);
	fa_proc_free(&r);
}

/* The page's compare names a backward row's pass, as fabench compare's
 * markdown does: a bwd and a fwd_bwd row of one shape differ in nothing
 * else. */
FA_TEST(html, compare_names_the_pass)
{
	char db[1200];
	struct fa_proc_result r;
	FA_REQUIRE(fa_test_run_small_bwd("html_bwd.db", db, sizeof db) == 0);
	fa_proc_run((char *[]){"report", "--db", db, "--format", "html", "--no-plots", "--compare",
			       "1", NULL},
		    NULL, 60, &r);
	FA_CHECKF(r.status == 0, "status %d: %s", r.status, r.err);
	/* one row of each pass in the results table, one in the compare's */
	FA_CHECKF(fa_test_count(r.out, "<td>bwd</td>") == 2 &&
			  fa_test_count(r.out, "<td>fwd_bwd</td>") == 2,
		  "%s", r.out);
	fa_proc_free(&r);
}
