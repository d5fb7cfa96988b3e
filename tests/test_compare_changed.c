/* test_compare_changed.c - compare --only-changed: the PR comment that fits.
 * On the fixture (run 1 vs 2: cpu_flash slower on case 1, faster on 2, 3
 * and 6; cpu_dense the same everywhere), only the four changed rows are
 * listed, and the counts still cover every row. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../harness/store/store.h"
#include "fixture.h"
#include "proc.h"
#include "test.h"

/* Lines of text that contain needle. */
static int count_lines(const char *text, const char *needle)
{
	int n = 0;
	for (const char *p = text; p && *p;) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		char *line = strndup(p, len);
		n += line && strstr(line, needle) != NULL;
		free(line);
		p = nl ? nl + 1 : NULL;
	}
	return n;
}

FA_TEST(compare, only_changed_lists_the_changed_rows)
{
	struct fa_proc_result all, some, js;
	struct fa_store *s = fa_fixture_open();
	char *db = (char *)fa_fixture_path();
	FA_REQUIRE(s);
	fa_store_close(s);
	fa_proc_run((char *[]){"compare", "--db", db, "1", "2", NULL}, NULL, 60, &all);
	fa_proc_run((char *[]){"compare", "--db", db, "--only-changed", "1", "2", NULL}, NULL, 60,
		    &some);
	FA_REQUIRE(all.status == 0 && some.status == 0);
	/* the verdict counts first, the same with and without */
	const char *v = strstr(all.out, "- verdicts: ");
	FA_REQUIRE(v);
	char counts[128];
	snprintf(counts, sizeof counts, "%.*s", (int)(strchr(v, '(') - v), v);
	FA_CHECKF(strstr(some.out, counts) != NULL, "'%s' missing:\n%s", counts, some.out);
	FA_CHECK(count_lines(all.out, "| same    |") > 0);
	FA_CHECK(count_lines(some.out, "| same    |") == 0);
	FA_CHECK(count_lines(some.out, "| SLOWER  |") == count_lines(all.out, "| SLOWER  |"));
	FA_CHECK(count_lines(some.out, "| FASTER  |") == count_lines(all.out, "| FASTER  |"));
	FA_CHECK(count_lines(some.out, "| SLOWER  |") + count_lines(some.out, "| FASTER  |") == 4);
	FA_CHECK(strlen(some.out) < strlen(all.out));
	/* JSON rows too */
	fa_proc_run((char *[]){"compare", "--db", db, "--only-changed", "--format", "json", "1",
			       "2", NULL},
		    NULL, 60, &js);
	FA_CHECKF(js.status == 0 && strstr(js.out, "\"verdict\": \"same\"") == NULL &&
			  strstr(js.out, "\"verdict\": \"slower\""),
		  "%d %.600s", js.status, js.out);
	fa_proc_free(&all);
	fa_proc_free(&some);
	fa_proc_free(&js);
}

/* compare --max-chars: a comment that fits. Just under the whole text's
 * length, rows are left out (the same ones first, never the SLOWER one)
 * and a note says how many; at the whole length nothing changes; at the
 * least limit the text is cut at a line and says so. */
FA_TEST(compare, max_chars_keeps_the_slower_rows)
{
	struct fa_proc_result all, fit, same, cut;
	struct fa_store *s = fa_fixture_open();
	char *db = (char *)fa_fixture_path(), lim[32];
	FA_REQUIRE(s);
	fa_store_close(s);
	fa_proc_run((char *[]){"compare", "--db", db, "1", "2", NULL}, NULL, 60, &all);
	FA_REQUIRE(all.status == 0 && strlen(all.out) > 1100);
	snprintf(lim, sizeof lim, "%zu", strlen(all.out) - 1);
	fa_proc_run((char *[]){"compare", "--db", db, "--max-chars", lim, "1", "2", NULL}, NULL, 60,
		    &fit);
	FA_REQUIRE(fit.status == 0);
	FA_CHECKF(strlen(fit.out) <= strlen(all.out) - 1, "%zu > %s", strlen(fit.out), lim);
	FA_CHECKF(strstr(fit.out, "left out** to fit") != NULL, "%s", fit.out);
	FA_CHECK(count_lines(fit.out, "| SLOWER  |") == count_lines(all.out, "| SLOWER  |"));
	FA_CHECK(count_lines(fit.out, "| FASTER  |") == count_lines(all.out, "| FASTER  |"));
	FA_CHECK(count_lines(fit.out, "| same    |") < count_lines(all.out, "| same    |"));
	const char *v = strstr(all.out, "- verdicts: ");
	FA_REQUIRE(v);
	FA_CHECK(strncmp(strstr(fit.out, "- verdicts: "), v, (size_t)(strchr(v, '\n') - v)) == 0);
	snprintf(lim, sizeof lim, "%zu", strlen(all.out));
	fa_proc_run((char *[]){"compare", "--db", db, "--max-chars", lim, "1", "2", NULL}, NULL, 60,
		    &same);
	FA_CHECK(same.status == 0 && strcmp(same.out, all.out) == 0);
	fa_proc_run((char *[]){"compare", "--db", db, "--max-chars", "1000", "1", "2", NULL}, NULL,
		    60, &cut);
	FA_CHECK(cut.status == 0 && strlen(cut.out) <= 1000);
	FA_CHECKF(strstr(cut.out, "**Cut here**") || strstr(cut.out, "left out** to fit"), "%s",
		  cut.out);
	fa_proc_free(&all);
	fa_proc_free(&fit);
	fa_proc_free(&same);
	fa_proc_free(&cut);
}

/* --only-changed leaves out the rows not timed on both sides (a skip on
 * each side): no empty 'Correctness and coverage' heading is left above
 * the summary, while the counts still give them. */
FA_TEST(compare, only_changed_leaves_no_empty_heading)
{
	char db[1200];
	struct fa_proc_result all, some;
	snprintf(db, sizeof db, "%s/untimed.db", fa_test_tmpdir());
	unlink(db);
	for (int i = 0; i < 2; i++) {
		struct fa_proc_result r;
		/* the budget skips both kernels on the larger cases */
		fa_proc_run((char *[]){"run", "tests/suites/tiny.yaml", "--backend", "cpu", "--kernels",
				       "cpu_flash,cpu_dense", "--mem-budget", "20K", "--db", db,
				       "--label", i ? "b" : "a", "--quiet", NULL},
			    NULL, 120, &r);
		FA_REQUIRE(r.status == 0);
		fa_proc_free(&r);
	}
	fa_proc_run((char *[]){"compare", "--db", db, "a", "b", NULL}, NULL, 60, &all);
	fa_proc_run((char *[]){"compare", "--db", db, "--only-changed", "a", "b", NULL}, NULL, 60,
		    &some);
	FA_REQUIRE(all.status == 0 && some.status == 0);
	FA_CHECKF(strstr(all.out, "## Correctness and coverage\n\n- not timed on both sides: "),
		  "%s", all.out);
	FA_CHECKF(!strstr(some.out, "## Correctness") &&
			  strstr(some.out, " not timed on both sides\n"),
		  "%s", some.out);
	fa_proc_free(&all);
	fa_proc_free(&some);
}
