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
		char rep[1024], out[1024];
		char name[64];
		snprintf(name, sizeof name, "own.%s", formats[i]);
		path_in(rep, sizeof rep, name);
		snprintf(name, sizeof name, "own-%s.db", formats[i]);
		path_in(out, sizeof out, name);
		fa_proc_run((char *[]){"report", "--db", db, "--format", (char *)formats[i],
				       "--output", rep, NULL},
			    NULL, 120, &r);
		FA_CHECKF(r.status == 0, "report %s: %s", formats[i], r.err);
		fa_proc_free(&r);
		fa_proc_run((char *[]){"import", rep, "--db", out, NULL}, NULL, 120, &r);
		FA_CHECKF(r.status == 0, "import %s: %d %s", formats[i], r.status, r.err);
		fa_proc_free(&r);
		char *got = results_of(out);
		FA_CHECKF(got && strcmp(got, want) == 0, "%s: the imported results differ:\n%.400s\nvs\n%.400s",
			  formats[i], got ? got : "(none)", want);
		free(got);
		FA_CHECK(fa_test_db_int(out, "SELECT count(*) FROM cases") ==
			 fa_test_db_int(db, "SELECT count(*) FROM cases"));
	}
	free(want);
}
