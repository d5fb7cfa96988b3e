/* test_badsuites.c - golden error messages: every suites/bad/NAME.yaml must
 * fail to load with FA_ERR_INPUT, and what fa_err_print writes must equal
 * suites/bad/NAME.err byte for byte (message, source line, caret). Files are
 * loaded as suites/bad/NAME.yaml from the repository root, so the paths in
 * the messages are those. Helper files for include tests live in
 * suites/bad/inc/, out of the glob's reach.
 */
#include <glob.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../harness/suite/suite.h"
#include "golden.h"
#include "test.h"

/* The fewest golden files the suite is meant to have: a glob that finds
 * fewer (wrong folder) must not pass quietly. */
#define MIN_BAD_SUITES 20

static void check_one(const char *yaml)
{
	char expected_path[PATH_MAX];
	struct fa_suite s;
	struct fa_err err;
	enum fa_rc rc;
	size_t n = strlen(yaml);
	snprintf(expected_path, sizeof expected_path, "%.*s.err", (int)(n - 5), yaml);
	fa_err_clear(&err);
	rc = fa_suite_load(yaml, 0, &s, &err);
	FA_CHECKF(rc == FA_ERR_INPUT, "%s: load returned %s, expected input", yaml, fa_rc_name(rc));
	FA_CHECKF(s.n_cases == 0 && s.cases == NULL, "%s: a failed load left cases behind", yaml);
	fa_suite_free(&s);
	fa_golden_check_err(yaml, expected_path, &err, "fabench");
}

FA_TEST(badsuites, golden_errors)
{
	char cwd[PATH_MAX];
	glob_t g;
	int r;
	FA_REQUIRE(getcwd(cwd, sizeof cwd) != NULL);
	FA_REQUIRE(chdir(fa_test_root()) == 0);
	r = glob("suites/bad/*.yaml", 0, NULL, &g);
	FA_CHECKF(r == 0, "no suites/bad/*.yaml under %s", fa_test_root());
	if (r == 0) {
		FA_CHECKF(g.gl_pathc >= MIN_BAD_SUITES, "only %zu bad suites found", g.gl_pathc);
		for (size_t i = 0; i < g.gl_pathc; i++)
			check_one(g.gl_pathv[i]);
		globfree(&g);
	}
	FA_CHECK(chdir(cwd) == 0);
}

/* Every .err has its .yaml: a renamed test must not leave a stale golden file. */
FA_TEST(badsuites, no_orphan_golden_files)
{
	char cwd[PATH_MAX], yaml[PATH_MAX];
	glob_t g;
	FA_REQUIRE(getcwd(cwd, sizeof cwd) != NULL);
	FA_REQUIRE(chdir(fa_test_root()) == 0);
	if (glob("suites/bad/*.err", 0, NULL, &g) == 0) {
		for (size_t i = 0; i < g.gl_pathc; i++) {
			size_t n = strlen(g.gl_pathv[i]);
			snprintf(yaml, sizeof yaml, "%.*s.yaml", (int)(n - 4), g.gl_pathv[i]);
			FA_CHECKF(access(yaml, R_OK) == 0, "%s has no %s", g.gl_pathv[i], yaml);
		}
		globfree(&g);
	}
	FA_CHECK(chdir(cwd) == 0);
}

/* The same text through --where: file "--where", line 1, the expression as
 * the source line. */
FA_TEST(badsuites, where_option_error)
{
	char cwd[PATH_MAX];
	struct fa_suite s;
	struct fa_err err;
	char *text = NULL;
	size_t len = 0;
	FILE *f;
	FA_REQUIRE(getcwd(cwd, sizeof cwd) != NULL);
	FA_REQUIRE(chdir(fa_test_root()) == 0);
	fa_err_clear(&err);
	FA_REQUIRE(fa_suite_load("suites/smoke.yaml", 0, &s, &err) == FA_OK);
	FA_CHECK(fa_suite_filter(&s, "heads >= 4 && dtype == bf17", &err) == FA_ERR_INPUT);
	f = open_memstream(&text, &len);
	FA_REQUIRE(f != NULL);
	fa_err_print(&err, f, "fabench");
	fclose(f);
	FA_CHECKF(strcmp(text, "--where:1:24: unknown name 'bf17' (did you mean 'bf16'?)\n"
			       " 1 | heads >= 4 && dtype == bf17\n"
			       "   |                        ^\n") == 0,
		  "got:\n%s", text);
	free(text);
	fa_suite_free(&s);
	FA_CHECK(chdir(cwd) == 0);
}
