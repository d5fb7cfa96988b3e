/* test_e2e.c - end-to-end tests: build/fabench run as a user runs it, the
 * database read back with SQLite, kills in the middle of a run, bad input on
 * the command line, and the misbehaving kernels of the test plugin. */
#include <dirent.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../harness/base/util.h"
#include "fixture.h"
#include "proc.h"
#include "test.h"

static void path_in(char *buf, size_t size, const char *dir, const char *name)
{
	snprintf(buf, size, "%s/%s", dir, name);
	unlink(buf);
}

static int exists(const char *p)
{
	struct stat s;
	return stat(p, &s) == 0;
}

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

FA_TEST(e2e, smoke_run_stores_everything)
{
	char db[1024], rep[1024];
	const char *dir = fa_test_tmpdir();
	struct fa_proc_result r, l;
	path_in(db, sizeof db, dir, "smoke.db");
	path_in(rep, sizeof rep, dir, "smoke.md");
	fa_proc_run((char *[]){"run", "suites/smoke.yaml", "--backend", "cpu", "--db", db,
			       "--report", rep, "--quiet", NULL},
		    NULL, 600, &r);
	FA_CHECKF(r.status == 0, "status %d\nstdout:\n%s\nstderr:\n%s", r.status, r.out, r.err);
	fa_proc_run((char *[]){"list", "suites/smoke.yaml", NULL}, NULL, 60, &l);
	FA_REQUIRE(l.status == 0);
	int n_cases = atoi(l.out);
	FA_CHECK(n_cases >= 20);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM runs") == 1);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM runs WHERE status = 'complete'") == 1);
	FA_CHECKF(fa_test_db_int(db, "SELECT count(*) FROM cases") == n_cases, "cases %lld, listed %d",
		  fa_test_db_int(db, "SELECT count(*) FROM cases"), n_cases);
	/* both CPU kernels ran every case, and every supported one passed */
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM results") == 2LL * n_cases);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM results WHERE status NOT IN ('pass','skip')") == 0);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM results WHERE status = 'pass'") == 2LL * n_cases);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM results WHERE status = 'pass' AND "
			   "(unwritten != 0 OR nan_count != 0 OR tflops <= 0 OR median_ms <= 0 "
			   "OR n_samples < 1 OR rows_checked < 1)") == 0);
	/* every raw sample is there, and the median is one of them or between two */
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM results r WHERE status = 'pass' AND n_samples != "
			   "(SELECT count(*) FROM samples s WHERE s.result_id = r.id)") == 0);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM results r WHERE status = 'pass' AND median_ms < "
			   "(SELECT min(time_ms) FROM samples s WHERE s.result_id = r.id)") == 0);
	/* every mask, dtype and a varlen case made it into the database */
	FA_CHECK(fa_test_db_int(db, "SELECT count(DISTINCT mask) FROM cases") == 4);
	FA_CHECK(fa_test_db_int(db, "SELECT count(DISTINCT dtype) FROM cases") == 3);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM cases WHERE varlen = 1") >= 1);
	char *rtext = fa_test_read_file(rep, NULL);
	FA_CHECKF(rtext && strstr(rtext, "cpu_flash") && strstr(rtext, "cpu_dense"),
		  "report %s missing or without kernels", rep);
	free(rtext);
	FA_CHECK(strstr(r.out, "results:") != NULL);
	fa_proc_free(&r);
	fa_proc_free(&l);
}

FA_TEST(e2e, bad_suite_exits_2_and_writes_nothing)
{
	char db[1024], expect_path[1024];
	const char *dir = fa_test_tmpdir();
	struct fa_proc_result r;
	path_in(db, sizeof db, dir, "bad.db");
	/* first a good run, so there is a database that must stay as it was */
	fa_proc_run((char *[]){"run", "tests/suites/tiny.yaml", "--backend", "cpu", "--db", db,
			       "--quiet", NULL},
		    NULL, 120, &r);
	FA_REQUIRE(r.status == 0);
	fa_proc_free(&r);
	long long runs = fa_test_db_int(db, "SELECT count(*) FROM runs");
	long long results = fa_test_db_int(db, "SELECT count(*) FROM results");
	fa_proc_run((char *[]){"run", "suites/bad/unknown_key.yaml", "--db", db, NULL}, NULL, 60, &r);
	FA_CHECKF(r.status == 2, "status %d", r.status);
	snprintf(expect_path, sizeof expect_path, "%s/suites/bad/unknown_key.err", fa_test_root());
	char *expect = fa_test_read_file(expect_path, NULL);
	FA_CHECKF(expect && strcmp(expect, r.err) == 0, "stderr differs from %s:\n%s", expect_path,
		  r.err);
	free(expect);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM runs") == runs);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM results") == results);
	fa_proc_free(&r);
	/* a bad suite never creates a database */
	path_in(db, sizeof db, dir, "never.db");
	fa_proc_run((char *[]){"run", "suites/bad/unknown_key.yaml", "--db", db, NULL}, NULL, 60, &r);
	FA_CHECK(r.status == 2);
	FA_CHECK(!exists(db));
	fa_proc_free(&r);
}

/* list says how many labels the cases carry when one shape is named by
 * several (a grid of 2 models x 2 depths lists 2 cases, not 4), and each
 * case's depth, which its key holds only inside kv_len. */
FA_TEST(e2e, list_counts_labels_and_shows_depth)
{
	char suite[1024];
	struct fa_proc_result r;
	path_in(suite, sizeof suite, fa_test_tmpdir(), "models.yaml");
	FA_REQUIRE(fa_test_write_file(suite, "suite: m\ndefaults: {batch: 1, q_len: 1, kv_len: depth + q_len}\n"
					     "axes:\n  model: [gpt-oss-20b, gpt-oss-120b]\n"
					     "  depth: [8k, 16k]\n") == 0);
	fa_proc_run((char *[]){"list", suite, NULL}, NULL, 60, &r);
	FA_CHECKF(r.status == 0 && strstr(r.out, "2 cases in suite m (") &&
			  strstr(r.out, "), seed 1; 4 labels on them (2 cases of one shape named "
					"by several)\n") &&
			  strstr(r.out, ",kv_len=8193,") &&
			  strstr(r.out, "  depth 8192  [gpt-oss-20b, gpt-oss-120b]\n") &&
			  strstr(r.out, "  depth 16384  [gpt-oss-20b, gpt-oss-120b]\n"),
		  "status %d\n%s%s", r.status, r.out, r.err);
	fa_proc_free(&r);
	/* one label per case: no count */
	fa_proc_run((char *[]){"list", "tests/suites/tiny.yaml", NULL}, NULL, 60, &r);
	FA_CHECKF(r.status == 0 && !strstr(r.out, "labels on them") && !strstr(r.out, "depth"),
		  "%s", r.out);
	fa_proc_free(&r);
}

FA_TEST(e2e, unknown_kernel_points_at_suite)
{
	char suite[1024], text[1200];
	const char *dir = fa_test_tmpdir();
	struct fa_proc_result r;
	path_in(suite, sizeof suite, dir, "k.yaml");
	FA_REQUIRE(fa_test_write_file(suite, "suite: k\nkernels: [cpu_dense, cpu_flsh]\n"
						 "defaults: {heads: 1, head_dim: 8, seq_len: 4}\n") == 0);
	fa_proc_run((char *[]){"list", suite, NULL}, NULL, 60, &r);
	FA_CHECK(r.status == 0); /* list does not resolve kernels */
	fa_proc_free(&r);
	fa_proc_run((char *[]){"run", suite, "--dry-run", NULL}, NULL, 60, &r);
	FA_CHECK(r.status == 2);
	snprintf(text, sizeof text, "%s:2:22: unknown kernel 'cpu_flsh' (did you mean 'cpu_flash'?)",
		 suite);
	FA_CHECKF(strstr(r.err, text) != NULL, "stderr:\n%s\nexpected to contain:\n%s", r.err, text);
	FA_CHECK(strstr(r.err, "^") != NULL);
	fa_proc_free(&r);
	fa_proc_run((char *[]){"run", "tests/suites/tiny.yaml", "--kernels", "cpu_nope", "--dry-run",
			       NULL},
		    NULL, 60, &r);
	FA_CHECK(r.status == 2);
	FA_CHECK(strstr(r.err, "unknown kernel 'cpu_nope'") != NULL);
	fa_proc_free(&r);
}

/* Starts tests/suites/many.yaml, waits until `cases` cases are committed,
 * sends sig, and returns the exit status. */
static int interrupt_run(const char *db, int cases, int sig)
{
	pid_t pid = fa_proc_start((char *[]){"run", "tests/suites/many.yaml", "--backend", "cpu",
					     "--db", (char *)db, "--quiet", NULL},
				  NULL);
	for (int i = 0; i < 600; i++) {
		sleep_ms(50);
		if (exists(db) && fa_test_db_int(db, "SELECT count(*) FROM cases") >= cases)
			break;
	}
	kill(pid, sig);
	return fa_proc_wait(pid);
}

FA_TEST(e2e, kill9_keeps_finished_cases)
{
	char db[1024];
	struct fa_proc_result r;
	path_in(db, sizeof db, fa_test_tmpdir(), "kill.db");
	int st = interrupt_run(db, 3, SIGKILL);
	FA_CHECKF(st == 128 + SIGKILL, "status %d", st);
	long long cases = fa_test_db_int(db, "SELECT count(*) FROM cases");
	FA_CHECKF(cases >= 3 && cases < 100, "cases %lld", cases);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM runs WHERE status = 'incomplete'") == 1);
	/* every stored case is whole: both kernels, each with all its samples */
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM results") == 2 * cases);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM results r WHERE n_samples != "
			   "(SELECT count(*) FROM samples s WHERE s.result_id = r.id)") == 0);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM results WHERE status != 'pass'") == 0);
	/* the database still takes new runs */
	fa_proc_run((char *[]){"run", "tests/suites/tiny.yaml", "--backend", "cpu", "--db", db,
			       "--quiet", NULL},
		    NULL, 120, &r);
	FA_CHECK(r.status == 0);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM runs WHERE status = 'complete'") == 1);
	fa_proc_free(&r);
	fa_proc_run((char *[]){"report", "--db", db, "--run", "1", NULL}, NULL, 60, &r);
	FA_CHECKF(r.status == 0, "report of the killed run: status %d: %s", r.status, r.err);
	fa_proc_free(&r);
}

/* A database that cannot grow (the file-size limit, ulimit -f, as a full
 * disk): the run says which case it could not store in which file, and
 * that the limit is why, and exits 1; the file opens cleanly with the cases before, and takes the
 * rest once there is room. (SIGXFSZ killed it without a word, status 153.) */
FA_TEST(e2e, file_size_limit_is_a_write_error)
{
	char db[1024];
	struct fa_proc_result r;
	struct rlimit was, low;
	path_in(db, sizeof db, fa_test_tmpdir(), "fsize.db");
	fa_proc_run((char *[]){"run", "tests/suites/tiny.yaml", "--backend", "cpu", "--db", db,
			       "--quiet", NULL},
		    NULL, 120, &r);
	FA_REQUIRE(r.status == 0);
	fa_proc_free(&r);
	/* what fabench starts inherits the limit: room for a few cases */
	FA_REQUIRE(getrlimit(RLIMIT_FSIZE, &was) == 0);
	low = was;
	low.rlim_cur = 160 * 1024;
	FA_REQUIRE(setrlimit(RLIMIT_FSIZE, &low) == 0);
	fa_proc_run((char *[]){"run", "suites/smoke.yaml", "--backend", "cpu", "--db", db,
			       "--quiet", NULL},
		    NULL, 300, &r);
	setrlimit(RLIMIT_FSIZE, &was);
	FA_CHECKF(r.status == 1 && strstr(r.err, "fabench run: error: cannot store case ") &&
			  strstr(r.err, " of run 2 in '") && strstr(r.err, db) &&
			  strstr(r.err, "reached the file-size limit of 163840 bytes: ulimit -f)"),
		  "status %d\n%s", r.status, r.err);
	fa_proc_free(&r);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM runs WHERE id = 2 AND status = "
				    "'incomplete'") == 1);
	long long kept = fa_test_db_int(db, "SELECT count(*) FROM cases WHERE run_id = 2");
	FA_CHECKF(kept >= 0 && kept < 63, "cases %lld", kept);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM results r WHERE n_samples != "
				    "(SELECT count(*) FROM samples s WHERE s.result_id = r.id)") == 0);
	fa_proc_run((char *[]){"run", "--resume", "2", "--db", db, "--quiet", NULL}, NULL, 300, &r);
	FA_CHECKF(r.status == 0, "status %d\n%s", r.status, r.err);
	fa_proc_free(&r);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM cases WHERE run_id = 2") == 63);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM runs WHERE status = 'complete'") == 2);
}

FA_TEST(e2e, sigint_stops_cleanly)
{
	char db[1024];
	path_in(db, sizeof db, fa_test_tmpdir(), "int.db");
	int st = interrupt_run(db, 2, SIGINT);
	FA_CHECKF(st == 130, "status %d", st);
	long long cases = fa_test_db_int(db, "SELECT count(*) FROM cases");
	FA_CHECK(cases >= 2 && cases < 100);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM runs WHERE status = 'incomplete' AND "
			   "finished_at IS NOT NULL") == 1);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM results") == 2 * cases);
}

FA_TEST(e2e, misbehaving_kernels_are_caught)
{
	char db[1024], plug[1100], *env[3];
	const char *p = getenv("FABENCH_TEST_PLUGIN");
	struct fa_proc_result r;
	path_in(db, sizeof db, fa_test_tmpdir(), "plugin.db");
	snprintf(plug, sizeof plug, "FABENCH_PLUGINS=%s",
		 p ? p : "build/libfabench-test.so");
	env[0] = plug;
	env[1] = "FABENCH_TEST_KERNELS=1";
	env[2] = NULL;
	fa_proc_run((char *[]){"run", "tests/suites/tiny.yaml", "--backend", "test", "--where",
			       "q_len == 48 && mask == causal", "--kernels",
			       "test_correct,test_wrong,test_nan,test_unwritten,test_hang",
			       "--timeout", "1", "--db", db, "--quiet", NULL},
		    env, 120, &r);
	FA_CHECKF(r.status == 1, "status %d\n%s\n%s", r.status, r.out, r.err);
	fa_proc_free(&r);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM results") == 5);
	/* timed, though test_hang's check used up its 1 s timeout before the
	 * samples (taken in turn) began */
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM results WHERE kernel='test_correct' AND "
			   "status='pass' AND n_samples > 0") == 1);
	char *why = fa_test_db_text(db, "SELECT reason FROM results WHERE kernel='test_wrong' AND status='fail'");
	FA_CHECKF(strstr(why, "max_abs") != NULL, "test_wrong: '%s'", why);
	free(why);
	why = fa_test_db_text(db, "SELECT reason FROM results WHERE kernel='test_nan' AND status='fail'");
	FA_CHECKF(strstr(why, "NaN") != NULL, "test_nan: '%s'", why);
	free(why);
	FA_CHECK(fa_test_db_int(db, "SELECT nan_count FROM results WHERE kernel='test_nan'") == 1);
	FA_CHECK(fa_test_db_int(db, "SELECT unwritten FROM results WHERE kernel='test_unwritten' AND "
			   "status='fail'") == 32); /* one row of head_dim 32 */
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM results WHERE kernel='test_hang' AND "
			   "status='timeout'") == 1);
	/* without the variable the test kernels do not exist */
	env[1] = NULL;
	fa_proc_run((char *[]){"kernels", NULL}, env, 60, &r);
	FA_CHECK(r.status == 0 && strstr(r.out, "test_wrong") == NULL);
	fa_proc_free(&r);
}

/* The cold flush a backend with device memory is told to take
 * (FABENCH_FLUSH, which the test plugin logs under FABENCH_TEST_FLUSH_LOG),
 * and the timing each result stores: cold-clean by default, cold (the flush
 * that leaves the cache dirty) with --cache cold or a suite's cache: cold,
 * hot without a flush; a mode that is not one of them exits 2. */
FA_TEST(e2e, cold_flush_mode_is_told_and_stored)
{
	static const struct {
		const char *cache;    /* --cache, NULL: the default */
		const char *timing;   /* stored */
		const char *told;     /* every line of the log, NULL: no flush */
		int isolate;          /* --isolate: the worker's timing crosses the pipe */
	} modes[] = {{NULL, "cold-clean", "clean", 0},
		     {"cold-clean", "cold-clean", "clean", 0},
		     {"cold", "cold", "write", 0},
		     {"hot", "hot", NULL, 0},
		     {NULL, "cold-clean", "clean", 1},
		     {"cold", "cold", "write", 1}};
	char db[1024], log[1024], plug[1100], env_log[1100], sql[256];
	struct fa_proc_result r;
	path_in(db, sizeof db, fa_test_tmpdir(), "flush.db");
	path_in(log, sizeof log, fa_test_tmpdir(), "flush.log");
	fa_test_plugins_var(plug, sizeof plug);
	snprintf(env_log, sizeof env_log, "FABENCH_TEST_FLUSH_LOG=%s", log);
	char *env[] = {plug, "FABENCH_TEST_KERNELS=1", "FABENCH_TEST_DEVICE_MEMORY=1", env_log,
		       "FABENCH_FLUSH=write", NULL}; /* the harness's choice wins */
	unlink(db);
	for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
		char label[16];
		size_t len = 0;
		snprintf(label, sizeof label, "m%zu", i);
		unlink(log);
		fa_proc_run((char *[]){"run", "tests/suites/tiny.yaml", "--backend", "test",
				       "--kernels", "test_correct", "--where", "q_len == 16",
				       "--label", label, "--db", db, "--quiet",
				       modes[i].isolate ? "--isolate" : "--quiet",
				       modes[i].cache ? "--cache" : NULL, (char *)modes[i].cache,
				       NULL},
			    env, 120, &r);
		FA_CHECKF(r.status == 0, "%s: status %d: %s", label, r.status, r.err);
		fa_proc_free(&r);
		snprintf(sql, sizeof sql,
			 "SELECT count(*) FROM results JOIN runs ON runs.id = run_id WHERE "
			 "label = '%s' AND results.status = 'pass' AND timing = '%s'",
			 label, modes[i].timing);
		FA_CHECKF(fa_test_db_int(db, sql) == 2, "%s: not 2 results timed '%s'", label,
			  modes[i].timing);
		char *text = fa_test_read_file(log, &len);
		if (!modes[i].told) {
			FA_CHECKF(!text || len == 0, "%s: flushed: %s", label, text ? text : "");
		} else {
			int lines = 0, others = 0;
			for (char *line = text ? strtok(text, "\n") : NULL; line;
			     line = strtok(NULL, "\n"), lines++)
				others += strcmp(line, modes[i].told) != 0;
			/* a flush before every timed sample: at least 3 per case */
			FA_CHECKF(lines >= 6 && others == 0, "%s: %d flushes, %d not '%s'", label,
				  lines, others, modes[i].told);
		}
		free(text);
	}
	fa_proc_run((char *[]){"run", "tests/suites/tiny.yaml", "--backend", "test", "--cache",
			       "warm", "--db", db, "--quiet", NULL},
		    env, 60, &r);
	FA_CHECKF(r.status == 2 && strstr(r.err, "--cache 'warm' must be cold-clean, cold or hot"),
		  "status %d: %s", r.status, r.err);
	fa_proc_free(&r);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM runs") == 6);
	/* a backend timing host memory has no cache to flush: --cache says so
	 * instead of being dropped without a word */
	fa_proc_run((char *[]){"run", "tests/suites/tiny.yaml", "--backend", "cpu", "--cache", "cold",
			       "--where", "q_len == 16 && mask == none", "--kernels", "cpu_flash",
			       "--db", db, "--quiet", NULL},
		    NULL, 60, &r);
	FA_CHECKF(r.status == 0 && strstr(r.out, "--cache cold: backend cpu times host memory"),
		  "status %d: %s", r.status, r.out);
	fa_proc_free(&r);
}

FA_TEST(e2e, dry_run_writes_nothing)
{
	char db[1024];
	struct fa_proc_result r;
	path_in(db, sizeof db, fa_test_tmpdir(), "dry.db");
	fa_proc_run((char *[]){"run", "tests/suites/tiny.yaml", "--backend", "cpu", "--dry-run",
			       "--db", db, NULL},
		    NULL, 60, &r);
	FA_CHECK(r.status == 0);
	FA_CHECK(strstr(r.out, "8 to run, 0 to skip") != NULL);
	FA_CHECK(!exists(db));
	fa_proc_free(&r);
	/* a tiny budget skips everything, with the reason */
	fa_proc_run((char *[]){"run", "tests/suites/tiny.yaml", "--backend", "cpu", "--dry-run",
			       "--mem-budget", "1K", NULL},
		    NULL, 60, &r);
	FA_CHECK(r.status == 0);
	FA_CHECK(strstr(r.out, "over the memory budget of 1.00 KiB") != NULL);
	fa_proc_free(&r);
}

FA_TEST(e2e, seed_replays_inputs)
{
	char d1[1024], d2[1024], d3[1024], f1[1100], f2[1100], f3[1100];
	const char *dir = fa_test_tmpdir();
	struct fa_proc_result r;
	size_t n1 = 0, n2 = 0, n3 = 0;
	snprintf(d1, sizeof d1, "%s/dump1", dir);
	snprintf(d2, sizeof d2, "%s/dump2", dir);
	snprintf(d3, sizeof d3, "%s/dump3", dir);
	char *dirs[3] = {d1, d2, d3};
	char *seeds[3] = {"5", "5", "6"};
	for (int i = 0; i < 3; i++) {
		char db[1024];
		path_in(db, sizeof db, dir, "seed.db");
		fa_proc_run((char *[]){"run", "tests/suites/tiny.yaml", "--backend", "cpu", "--where",
				       "q_len == 16 && mask == none", "--seed", seeds[i], "--dump",
				       dirs[i], "--db", db, "--quiet", NULL},
			    NULL, 60, &r);
		FA_CHECKF(r.status == 0, "status %d: %s", r.status, r.err);
		fa_proc_free(&r);
	}
	snprintf(f1, sizeof f1, "%s/case0000_q.npy", d1);
	snprintf(f2, sizeof f2, "%s/case0000_q.npy", d2);
	snprintf(f3, sizeof f3, "%s/case0000_q.npy", d3);
	char *a = fa_test_read_file(f1, &n1), *b = fa_test_read_file(f2, &n2),
	     *c = fa_test_read_file(f3, &n3);
	FA_REQUIRE(a && b && c);
	FA_CHECK(n1 == n2 && n1 > 128 && memcmp(a, b, n1) == 0);
	FA_CHECK(n1 == n3 && memcmp(a, c, n1) != 0);
	/* the header says what numpy needs: float32, shape (batch, seq, heads, dim) */
	FA_CHECK(memcmp(a, "\x93NUMPY", 6) == 0 && strstr(a + 10, "'<f4'") &&
		 strstr(a + 10, "(1, 16, 2, 32)"));
	free(a);
	free(b);
	free(c);
	snprintf(f1, sizeof f1, "%s/case0000_out_cpu_flash.npy", d1);
	FA_CHECK(exists(f1));
	snprintf(f1, sizeof f1, "%s/case0000_ref.npy", d1);
	FA_CHECK(exists(f1));
}

FA_TEST(e2e, report_formats)
{
	char db[1024];
	struct fa_proc_result r;
	path_in(db, sizeof db, fa_test_tmpdir(), "rep.db");
	fa_proc_run((char *[]){"run", "tests/suites/tiny.yaml", "--backend", "cpu", "--db", db,
			       "--label", "first", "--quiet", NULL},
		    NULL, 120, &r);
	FA_REQUIRE(r.status == 0);
	fa_proc_free(&r);
	fa_proc_run((char *[]){"report", "--db", db, "--run", "first", "--format", "csv", NULL}, NULL,
		    60, &r);
	FA_CHECK(r.status == 0);
	int lines = 0;
	for (char *c = r.out; *c; c++)
		lines += *c == '\n';
	FA_CHECKF(lines == 1 + 8, "csv has %d lines:\n%s", lines, r.out);
	fa_proc_free(&r);
	fa_proc_run((char *[]){"report", "--db", db, "--format", "json", NULL}, NULL, 60, &r);
	FA_CHECK(r.status == 0 && r.out[0] == '{');
	fa_proc_free(&r);
	fa_proc_run((char *[]){"report", "--db", db, "--run", "nosuch", NULL}, NULL, 60, &r);
	FA_CHECK(r.status != 0 && strstr(r.err, "no run 'nosuch'") != NULL);
	fa_proc_free(&r);
}

FA_TEST(e2e, every_command_has_help)
{
	static const char *const cmds[] = {"run", "list", "kernels", "devices", "report", "calibrate",
					   "plot", "compare", "history", "import"};
	struct fa_proc_result r;
	for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
		char want[64];
		snprintf(want, sizeof want, "usage: fabench %s", cmds[i]);
		fa_proc_run((char *[]){(char *)cmds[i], "--help", NULL}, NULL, 60, &r);
		FA_CHECKF(r.status == 0 && strncmp(r.out, want, strlen(want)) == 0,
			  "%s --help: status %d, out '%.40s'", cmds[i], r.status, r.out);
		fa_proc_free(&r);
	}
	fa_proc_run((char *[]){"--version", NULL}, NULL, 60, &r);
	FA_CHECK(r.status == 0 && strncmp(r.out, "fabench ", 8) == 0);
	fa_proc_free(&r);
	fa_proc_run((char *[]){"frobnicate", NULL}, NULL, 60, &r);
	FA_CHECK(r.status == 2 && strstr(r.err, "not a command"));
	fa_proc_free(&r);
	fa_proc_run((char *[]){"run", "tests/suites/tiny.yaml", "--bogus", NULL}, NULL, 60, &r);
	FA_CHECK(r.status == 2 && strstr(r.err, "unknown option '--bogus'"));
	fa_proc_free(&r);
	/* an option given no value says so, in every command */
	static const char *const last[][2] = {
		{"run", "--label"},	 {"list", "--where"},	   {"report", "--run"},
		{"compare", "--output"}, {"history", "--label"},  {"plot", "--output"},
		{"tune", "--rule"},	 {"import", "--run-into"}, {"merge", "-o"},
		{"calibrate", "--db"},	 {"kernels", "--backend"}, {"build-matrix", "--output"},
	};
	for (size_t i = 0; i < sizeof last / sizeof last[0]; i++) {
		char want[96];
		snprintf(want, sizeof want, "fabench %s: option '%s' needs a value", last[i][0],
			 last[i][1]);
		fa_proc_run((char *[]){(char *)last[i][0], (char *)last[i][1], NULL}, NULL, 60, &r);
		FA_CHECKF(r.status == 2 && strstr(r.err, want), "%s %s: status %d, err '%.200s'",
			  last[i][0], last[i][1], r.status, r.err);
		fa_proc_free(&r);
	}
	/* a label is stored and printed: an escape sequence in it is refused
	 * before anything is written */
	char db[1024];
	snprintf(db, sizeof db, "%s/label-ctrl.db", fa_test_tmpdir());
	unlink(db);
	static const char *const labelled[] = {"run", "import", "merge", "tune"};
	for (size_t i = 0; i < sizeof labelled / sizeof labelled[0]; i++) {
		char want[96];
		snprintf(want, sizeof want, "fabench %s: --label holds a control character (0x1b)",
			 labelled[i]);
		const int merge = strcmp(labelled[i], "merge") == 0;
		fa_proc_run((char *[]){(char *)labelled[i], merge ? "-o" : "--db", db, "--label",
				       "x\x1b]0;t\a", "tests/suites/tiny.yaml", NULL},
			    NULL, 60, &r);
		FA_CHECKF(r.status == 2 && strstr(r.err, want), "%s: status %d, err '%.200s'",
			  labelled[i], r.status, r.err);
		fa_proc_free(&r);
		/* and so is a byte that is not UTF-8 (JSON, XML and SVG are),
		 * counted in characters: the e acute is one */
		snprintf(want, sizeof want, "fabench %s: --label holds a byte that is not UTF-8 "
					    "(0xff) at character 3", labelled[i]);
		fa_proc_run((char *[]){(char *)labelled[i], merge ? "-o" : "--db", db, "--label",
				       "\xc3\xa9x\xff", "tests/suites/tiny.yaml", NULL},
			    NULL, 60, &r);
		FA_CHECKF(r.status == 2 && strstr(r.err, want), "%s: status %d, err '%.200s'",
			  labelled[i], r.status, r.err);
		fa_proc_free(&r);
	}
	FA_CHECK(access(db, F_OK) != 0);
}

FA_TEST(e2e, where_filters_cases)
{
	struct fa_proc_result r;
	fa_proc_run((char *[]){"list", "tests/suites/tiny.yaml", "--where", "q_len == 16", NULL}, NULL,
		    60, &r);
	FA_CHECK(r.status == 0 && atoi(r.out) == 2);
	fa_proc_free(&r);
	fa_proc_run((char *[]){"list", "tests/suites/tiny.yaml", "--where", "q_len == = 16", NULL},
		    NULL, 60, &r);
	FA_CHECK(r.status == 2 && strstr(r.err, "--where:1:") != NULL);
	fa_proc_free(&r);
}

FA_TEST(e2e, isolate_survives_crash_and_hang)
{
	char db[1024], plug[1100], *env[3];
	struct fa_proc_result r;
	path_in(db, sizeof db, fa_test_tmpdir(), "iso.db");
	fa_test_plugins_var(plug, sizeof plug);
	env[0] = plug;
	env[1] = "FABENCH_TEST_KERNELS=1";
	env[2] = NULL;
	/* two cases; in each, a kernel that ignores cancellation and one that
	 * crashes the process sit between two that are right */
	fa_proc_run((char *[]){"run", "tests/suites/tiny.yaml", "--backend", "test", "--where",
			       "q_len == 16", "--kernels", "test_correct,test_spin,test_crash,test_delay",
			       "--timeout", "1", "--isolate", "--db", db, "--quiet", NULL},
		    env, 120, &r);
	FA_CHECKF(r.status == 1, "status %d\n%s\n%s", r.status, r.out, r.err);
	fa_proc_free(&r);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM cases") == 2);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM results WHERE kernel IN ('test_correct', "
			   "'test_delay') AND status = 'pass' AND n_samples > 0") == 4);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM results WHERE kernel = 'test_spin' AND "
			   "status = 'timeout'") == 2);
	char *why = fa_test_db_text(db, "SELECT reason FROM results WHERE kernel = 'test_crash'");
	/* SIGSEGV (11); under AddressSanitizer its handler aborts (6) */
	FA_CHECKF(strstr(why, "worker killed by signal 11") || strstr(why, "worker killed by signal 6"),
		  "test_crash: '%s'", why);
	free(why);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM results WHERE kernel = 'test_crash' AND "
			   "status = 'error'") == 2);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM runs WHERE status = 'complete'") == 1);
}

FA_TEST(e2e, param_sweeps_and_rejects)
{
	char db[1024];
	struct fa_proc_result r;
	path_in(db, sizeof db, fa_test_tmpdir(), "param.db");
	fa_proc_run((char *[]){"run", "tests/suites/tiny.yaml", "--backend", "cpu", "--kernels",
			       "cpu_flash", "--param", "cpu_flash.block_q=8,32", "--param",
			       "cpu_flash.block_k=16,32", "--db", db, "--quiet", NULL},
		    NULL, 120, &r);
	FA_CHECKF(r.status == 0, "status %d: %s", r.status, r.err);
	fa_proc_free(&r);
	/* 4 cases x 2 x 2 combinations, each stored with its own params */
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM results WHERE status = 'pass'") == 16);
	FA_CHECK(fa_test_db_int(db, "SELECT count(DISTINCT params) FROM results") == 4);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM results WHERE params = "
			   "'block_q=32,block_k=16'") == 4);
	/* (the cpu backend named: on a GPU machine auto is cuda, which has no
	 * cpu_flash) */
	fa_proc_run((char *[]){"run", "tests/suites/tiny.yaml", "--backend", "cpu", "--param",
			       "cpu_flash.block_q=7", "--dry-run", NULL},
		    NULL, 60, &r);
	FA_CHECK(r.status == 2 && strstr(r.err, "allowed: 8, 16, 32, 64"));
	fa_proc_free(&r);
	fa_proc_run((char *[]){"run", "tests/suites/tiny.yaml", "--backend", "cpu", "--param",
			       "cpu_flash.nope=1", "--dry-run", NULL},
		    NULL, 60, &r);
	FA_CHECK(r.status == 2 && strstr(r.err, "has a parameter 'nope'"));
	fa_proc_free(&r);
	/* a value twice would run twice and one result would hide the other;
	 * the sides of --ab-params take one value each, once, and need one;
	 * --repeat does not go with paired sides */
	static const struct {
		const char *args[6];
		const char *want;
	} refused[] = {
		{{"--param", "cpu_flash.block_q=8,8"}, "8 is given twice; each value runs once"},
		{{"--param", "cpu_flash.block_q=8", "--param", "cpu_*.block_q=16"},
		 "cpu_flash.block_q is given values twice (once by 'cpu_flash.block_q=8')"},
		{{"--ab-params", "--param", "a:cpu_flash.block_q=8,16"},
		 "a side takes one value of a param"},
		{{"--ab-params", "--param", "a:cpu_flash.block_q=8", "--param", "a:cpu_flash.block_q=16"},
		 "side a sets cpu_flash.block_q twice"},
		{{"--ab-params", "--param", "a:cpu_flash.block_q=8", "--repeat", "2"},
		 "--repeat does not go with --ab-params"},
		{{"--param", "c:cpu_flash.block_q=8"}, "a side is a: or b:"},
	};
	for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
		char *argv[16] = {"run", "tests/suites/tiny.yaml", "--backend", "cpu", "--db", db};
		int n = 6;
		for (int j = 0; j < 6 && refused[i].args[j]; j++)
			argv[n++] = (char *)refused[i].args[j];
		argv[n] = NULL;
		long before = fa_test_db_int(db, "SELECT count(*) FROM results");
		fa_proc_run(argv, NULL, 60, &r);
		FA_CHECKF(r.status == 2 && strstr(r.err, refused[i].want), "%zu: status %d, err '%s'",
			  i, r.status, r.err);
		FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM results") == before);
		fa_proc_free(&r);
	}
}

FA_TEST(e2e, ab_runs_two_builds_interleaved)
{
	char db[1024], ab[2100], *env[2];
	const char *a = getenv("FABENCH_TEST_PLUGIN"), *b = getenv("FABENCH_TEST_PLUGIN_SLOW");
	struct fa_proc_result r;
	if (!a || !b) {
		fa_test_skip("FABENCH_TEST_PLUGIN / FABENCH_TEST_PLUGIN_SLOW not set (run through make test)");
		return;
	}
	path_in(db, sizeof db, fa_test_tmpdir(), "ab.db");
	snprintf(ab, sizeof ab, "%s:%s", a, b);
	env[0] = "FABENCH_TEST_KERNELS=1";
	env[1] = NULL;
	fa_proc_run((char *[]){"run", "tests/suites/tiny.yaml", "--ab", ab, "--kernels",
			       "test_correct", "--label", "pr7", "--db", db, "--quiet", NULL},
		    env, 120, &r);
	FA_CHECKF(r.status == 0, "status %d: %s", r.status, r.err);
	FA_CHECK(strstr(r.out, "fabench compare --db") != NULL);
	fa_proc_free(&r);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM runs WHERE status = 'complete' AND label IN "
			   "('pr7-a', 'pr7-b') AND backend = 'test'") == 2);
	/* the same cases on both sides */
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM cases a JOIN runs ra ON ra.id = a.run_id AND "
			   "ra.label = 'pr7-a' JOIN cases b ON b.key = a.key JOIN runs rb ON "
			   "rb.id = b.run_id AND rb.label = 'pr7-b'") == 4);
	/* a and b alternate: b's first case was stored before a's last one */
	FA_CHECK(fa_test_db_int(db, "SELECT (SELECT min(c.id) FROM cases c JOIN runs r ON r.id = c.run_id "
			   "AND r.label = 'pr7-b') < (SELECT max(c.id) FROM cases c JOIN runs r ON "
			   "r.id = c.run_id AND r.label = 'pr7-a')") == 1);
	fa_proc_run((char *[]){"run", "tests/suites/tiny.yaml", "--ab", "nothing-here.so", NULL}, env,
		    60, &r);
	FA_CHECK(r.status == 2 && strstr(r.err, "two plugins"));
	fa_proc_free(&r);

	/* builds in a folder whose name holds ':', given to --ab and to
	 * FABENCH_PLUGINS */
	char dir[1024], ca[1040], cb[1040], plug[1100], *penv[3];
	path_in(dir, sizeof dir, fa_test_tmpdir(), "ab:colon");
	FA_REQUIRE(fa_mkdir_p(dir) == 0);
	snprintf(ca, sizeof ca, "%s/a.so", dir);
	snprintf(cb, sizeof cb, "%s/b.so", dir);
	FA_REQUIRE(fa_test_copy_file(a, ca) == 0 && fa_test_copy_file(b, cb) == 0);
	snprintf(ab, sizeof ab, "%s:%s", ca, cb);
	fa_proc_run((char *[]){"run", "tests/suites/tiny.yaml", "--ab", ab, "--kernels",
			       "test_correct", "--label", "colon", "--db", db, "--quiet", NULL},
		    env, 120, &r);
	FA_CHECKF(r.status == 0, "status %d: %s", r.status, r.err);
	fa_proc_free(&r);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM runs WHERE status = 'complete' AND label IN "
			   "('colon-a', 'colon-b')") == 2);
	snprintf(plug, sizeof plug, "FABENCH_PLUGINS=%s", ca);
	penv[0] = "FABENCH_TEST_KERNELS=1";
	penv[1] = plug;
	penv[2] = NULL;
	fa_proc_run((char *[]){"run", "tests/suites/tiny.yaml", "--backend", "test", "--kernels",
			       "test_correct", "--label", "colon-env", "--db", db, "--quiet", NULL},
		    penv, 120, &r);
	FA_CHECKF(r.status == 0, "status %d: %s", r.status, r.err);
	fa_proc_free(&r);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM runs WHERE status = 'complete' AND "
			   "label = 'colon-env' AND backend = 'test'") == 1);
}

/* The lines test_record wrote to path: copy[i] is the plugin copy of line
 * i, buf[i] its "q k v o cu_q cu_k prefix ws" pointers, bytes[i] its
 * workspace size. Returns
 * the number of lines (at most max). */
static int read_record(const char *path, char copy[][32], char buf[][288], long *bytes, int max)
{
	char *text = fa_test_read_file(path, NULL), *line, *save = NULL;
	int n = 0;
	for (line = text ? strtok_r(text, "\n", &save) : NULL; line && n < max;
	     line = strtok_r(NULL, "\n", &save)) {
		char q[32], k[32], v[32], o[32], cq[32], ck[32], pre[32], ws[32];
		if (sscanf(line, "%31s %31s %31s %31s %31s %31s %31s %31s %31s %ld", copy[n], q, k, v,
			   o, cq, ck, pre, ws, &bytes[n]) != 10)
			continue;
		snprintf(buf[n], sizeof buf[n], "%s %s %s %s %s %s %s %s", q, k, v, o, cq, ck, pre,
			 ws);
		n++;
	}
	free(text);
	return n;
}

/* run --ab of two builds of one backend on a host-memory device: side B
 * runs on side A's buffers (the same Q, K, V, O and workspace pointers,
 * the workspace the larger of both sides' sizes), yet each side poisons
 * and checks its own output: a B that writes nothing fails though A left a
 * right output in O. FABENCH_AB_SHARE=0 gives each side its own buffers. */
FA_TEST(e2e, ab_sides_share_buffers)
{
	char db[1024], rec[1024], ab[2100], env_rec[1100], *env[3];
	char copy[400][32], ptrs[400][288], suite[1024];
	long bytes[400];
	const char *a = getenv("FABENCH_TEST_PLUGIN"), *b = getenv("FABENCH_TEST_PLUGIN_SLOW");
	struct fa_proc_result r;
	int n, n_a = 0, n_b = 0, same = 1;
	if (!a || !b) {
		fa_test_skip("FABENCH_TEST_PLUGIN / FABENCH_TEST_PLUGIN_SLOW not set (run through make test)");
		return;
	}
	path_in(db, sizeof db, fa_test_tmpdir(), "abshare.db");
	path_in(rec, sizeof rec, fa_test_tmpdir(), "abshare.rec");
	/* one varlen prefix-LM case: cu_seqlens and prefix_lens are shared too */
	path_in(suite, sizeof suite, fa_test_tmpdir(), "abshare.yaml");
	FA_REQUIRE(fa_test_write_file(
			   suite, "suite: abshare\nseed: 5\n"
				  "measure: {warmup: 1, min_samples: 3, min_time_ms: 2, max_time_ms: 10, "
				  "timeout_s: 20}\n"
				  "defaults: {heads: 2, head_dim: 32, dtype: fp32, mask: prefix_lm, "
				  "seqlens: [3, 17],\n"
				  "           prefix_lens: [1, 5]}\n") == 0);
	unlink(db);
	unlink(rec);
	snprintf(ab, sizeof ab, "%s:%s", a, b);
	snprintf(env_rec, sizeof env_rec, "FABENCH_TEST_RECORD=%s", rec);
	env[0] = "FABENCH_TEST_KERNELS=1";
	env[1] = env_rec;
	env[2] = NULL;
	fa_proc_run((char *[]){"run", suite, "--ab", ab, "--kernels", "test_record", "--param",
			       "b:test_record.ws_kib=4", "--threads", "1", "--db", db, "--quiet", NULL},
		    env, 120, &r);
	FA_CHECKF(r.status == 0, "status %d: %s", r.status, r.err);
	FA_CHECK(strstr(r.out, "  both sides run on the same buffers\n") != NULL);
	fa_proc_free(&r);
	n = read_record(rec, copy, ptrs, bytes, 400);
	FA_REQUIRE(n >= 2);
	/* every buffer there: the varlen arrays, the prefixes, the workspace */
	FA_CHECKF(strstr(ptrs[0], "(nil)") == NULL && strstr(ptrs[0], " 0x0") == NULL,
		  "a buffer missing: '%s'", ptrs[0]);
	for (int i = 0; i < n; i++) {
		int side_a = strcmp(copy[i], copy[0]) == 0;
		n_a += side_a;
		n_b += !side_a;
		same &= strcmp(ptrs[i], ptrs[0]) == 0;
		/* each side is told its own size: A 1 KiB, B 4 KiB (allocated once, 4 KiB) */
		FA_CHECKF(bytes[i] == (strcmp(copy[i], copy[0]) == 0 ? bytes[0] : 5120 - bytes[0]),
			  "line %d: workspace_bytes %ld", i, bytes[i]);
	}
	FA_CHECKF(n_a > 0 && n_b > 0, "launches: %d on one copy, %d on the other", n_a, n_b);
	FA_CHECKF(same, "a launch got other buffers than '%s'", ptrs[0]);
	FA_CHECK(bytes[0] == 1024 || bytes[0] == 4096);

	/* B computes nothing: its own poisoned check fails it, A still passes */
	unlink(db);
	unlink(rec);
	fa_proc_run((char *[]){"run", "tests/suites/tiny.yaml", "--ab", ab, "--kernels",
			       "test_record", "--where", "q_len == 16 && mask == \"none\"", "--param",
			       "b:test_record.idle=1", "--threads", "1", "--db", db, "--quiet", NULL},
		    env, 120, &r);
	FA_CHECKF(r.status == 1, "status %d: %s", r.status, r.err);
	fa_proc_free(&r);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM results s JOIN runs u ON u.id = s.run_id "
			   "WHERE u.label = 'ab-a' AND s.status = 'pass'") == 1);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM results s JOIN runs u ON u.id = s.run_id "
			   "WHERE u.label = 'ab-b' AND s.status = 'fail'") == 1);

	/* not shared: each side its own buffers, and the header says why */
	unlink(db);
	unlink(rec);
	char *env2[] = {"FABENCH_TEST_KERNELS=1", env_rec, "FABENCH_AB_SHARE=0", NULL};
	fa_proc_run((char *[]){"run", "tests/suites/tiny.yaml", "--ab", ab, "--kernels",
			       "test_record", "--where", "q_len == 16 && mask == \"none\"", "--threads",
			       "1", "--db", db, "--quiet", NULL},
		    env2, 120, &r);
	FA_CHECKF(r.status == 0, "status %d: %s", r.status, r.err);
	FA_CHECK(strstr(r.out, "  sides do not share buffers: FABENCH_AB_SHARE=0\n") != NULL);
	fa_proc_free(&r);
	n = read_record(rec, copy, ptrs, bytes, 400);
	FA_REQUIRE(n >= 2);
	for (int i = 0; i < n; i++)
		if (strcmp(copy[i], copy[0]) != 0)
			FA_CHECKF(strcmp(ptrs[i], ptrs[0]) != 0, "both sides got '%s'", ptrs[i]);
}

/* run --ab of two builds of one backend with device memory (the test
 * plugin under FABENCH_TEST_DEVICE_MEMORY=1, as a GPU): the sides do not
 * share buffers, each checks on its own, and a coin flip per round runs
 * both on the other's Q, K, V, O and workspace, so that neither side's
 * placement is a bias of that side (docs/compare.md, "Swapped buffers").
 * FABENCH_AB_CROSS=0 keeps each side on its own buffers. */
FA_TEST(e2e, ab_sides_swap_device_buffers)
{
	char db[1024], rec[1024], ab[2100], env_rec[1100];
	char copy[400][32], ptrs[400][288];
	long bytes[400];
	const char *a = getenv("FABENCH_TEST_PLUGIN"), *b = getenv("FABENCH_TEST_PLUGIN_SLOW");
	struct fa_proc_result r;
	if (!a || !b) {
		fa_test_skip("FABENCH_TEST_PLUGIN / FABENCH_TEST_PLUGIN_SLOW not set (run through make test)");
		return;
	}
	path_in(db, sizeof db, fa_test_tmpdir(), "abcross.db");
	path_in(rec, sizeof rec, fa_test_tmpdir(), "abcross.rec");
	snprintf(ab, sizeof ab, "%s:%s", a, b);
	snprintf(env_rec, sizeof env_rec, "FABENCH_TEST_RECORD=%s", rec);
	for (int pass = 0; pass < 2; pass++) {
		char *env[] = {"FABENCH_TEST_KERNELS=1", "FABENCH_TEST_DEVICE_MEMORY=1", env_rec,
			       pass ? "FABENCH_AB_CROSS=0" : NULL, NULL};
		int n, own[2] = {0, 0}, crossed[2] = {0, 0}, other = 0;
		unlink(db);
		unlink(rec);
		fa_proc_run((char *[]){"run", "tests/suites/tiny.yaml", "--ab", ab, "--kernels",
				       "test_record", "--where", "q_len == 16 && mask == \"none\"",
				       "--threads", "1", "--db", db, "--quiet", NULL},
			    env, 120, &r);
		FA_CHECKF(r.status == 0, "pass %d: status %d: %s", pass, r.status, r.err);
		if (pass == 0)
			FA_CHECKF(strstr(r.out, "  each side has its own buffers; a coin flip per round "
						"swaps them\n") != NULL,
				  "header: %s", r.out);
		else
			FA_CHECKF(strstr(r.out, "nor swap them: FABENCH_AB_CROSS=0\n") != NULL,
				  "header: %s", r.out);
		fa_proc_free(&r);
		FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM results WHERE status = 'pass'") == 2);
		n = read_record(rec, copy, ptrs, bytes, 400);
		FA_REQUIRE(n >= 4);
		/* the first launch of each copy is its check, on its own buffers */
		int first_other = -1;
		for (int i = 1; i < n && first_other < 0; i++)
			if (strcmp(copy[i], copy[0]) != 0)
				first_other = i;
		FA_REQUIRE(first_other > 0);
		FA_CHECKF(strcmp(ptrs[0], ptrs[first_other]) != 0, "both sides checked on '%s'",
			  ptrs[0]);
		/* by the inputs (q k v o cu_q cu_k prefix); the workspace is the
		 * other side's only while that side still holds it (a kernel that
		 * finished sampling has freed its own), else the launch's own */
		size_t in_len = strrchr(ptrs[0], ' ') - ptrs[0];
		for (int i = 0; i < n; i++) {
			int side = strcmp(copy[i], copy[0]) != 0;
			const char *mine = ptrs[side ? first_other : 0];
			const char *theirs = ptrs[side ? 0 : first_other];
			const char *ws = strrchr(ptrs[i], ' ');
			int ws_known = strcmp(ws, strrchr(mine, ' ')) == 0 ||
				       strcmp(ws, strrchr(theirs, ' ')) == 0;
			if (!ws_known)
				other++;
			else if (strncmp(ptrs[i], mine, in_len) == 0)
				own[side]++;
			else if (strncmp(ptrs[i], theirs, in_len) == 0)
				crossed[side]++;
			else
				other++;
		}
		FA_CHECKF(other == 0, "pass %d: %d launches on buffers of neither side", pass, other);
		/* beyond its check, each side sampled on its own buffers and (with
		 * swapping) on the other's */
		FA_CHECKF(own[0] > 1 && own[1] > 1, "pass %d: own launches %d and %d", pass, own[0],
			  own[1]);
		if (pass == 0)
			FA_CHECKF(crossed[0] > 0 && crossed[1] > 0, "swapped launches %d and %d",
				  crossed[0], crossed[1]);
		else
			FA_CHECKF(crossed[0] == 0 && crossed[1] == 0, "swapped without swapping: %d, %d",
				  crossed[0], crossed[1]);
	}
}

FA_TEST(e2e, repeat_runs_the_suite_again)
{
	char db[1024];
	struct fa_proc_result r;
	path_in(db, sizeof db, fa_test_tmpdir(), "repeat.db");
	fa_proc_run((char *[]){"run", "tests/suites/tiny.yaml", "--backend", "cpu", "--kernels",
			       "cpu_flash", "--repeat", "3", "--db", db, "--quiet", NULL},
		    NULL, 120, &r);
	FA_CHECKF(r.status == 0, "status %d: %s", r.status, r.err);
	fa_proc_free(&r);
	/* 4 cases three times, numbered 0..11, each key three times */
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM cases") == 12);
	FA_CHECK(fa_test_db_int(db, "SELECT max(idx) FROM cases") == 11);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM (SELECT key FROM cases GROUP BY key "
			   "HAVING count(*) = 3)") == 4);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM cases a JOIN cases b ON b.idx = a.idx + 4 "
			   "WHERE a.key != b.key") == 0);
}

/* A case whose timing the timeout cuts before the first sample is stored as
 * timeout, never as a pass with 0 samples; one with samples stays a pass
 * and says why sampling stopped. (The slow build of the test plugin: its
 * test_correct is right but slower; a warm-up of a million launches cannot
 * end within the 1 s timeout.) */
FA_TEST(e2e, timeout_before_first_sample_is_not_a_pass)
{
	char db[1024], suite[1100], plug[1100], *env[3];
	const char *p = getenv("FABENCH_TEST_PLUGIN_SLOW");
	struct fa_proc_result r;
	path_in(db, sizeof db, fa_test_tmpdir(), "cut.db");
	path_in(suite, sizeof suite, fa_test_tmpdir(), "cut.yaml");
	FA_REQUIRE(fa_test_write_file(suite, "suite: cut\nmeasure: {warmup: 1000000, timeout_s: 1}\n"
						 "defaults: {heads: 2, head_dim: 32, dtype: fp32, "
						 "seq_len: 16}\n") == 0);
	snprintf(plug, sizeof plug, "FABENCH_PLUGINS=%s", p ? p : "build/slow/libfabench-test.so");
	env[0] = plug;
	env[1] = "FABENCH_TEST_KERNELS=1";
	env[2] = NULL;
	fa_proc_run((char *[]){"run", suite, "--backend", "test", "--kernels", "test_correct", "--db",
			       db, "--quiet", NULL},
		    env, 120, &r);
	FA_CHECKF(r.status == 1, "status %d\n%s\n%s", r.status, r.out, r.err);
	fa_proc_free(&r);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM results WHERE status = 'pass'") == 0);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM results WHERE status = 'timeout' AND n_samples = 0 "
			   "AND stop_reason = 'timeout' AND checked = 1") == 1);
	char *why = fa_test_db_text(db, "SELECT reason FROM results");
	FA_CHECKF(strcmp(why, "no sample taken before the timeout of 1 s (the check passed)") == 0,
		  "reason '%s'", why);
	free(why);
}

/* list --format json: a versioned document whose seeds are decimal strings
 * (a seed above 2^53 does not survive a JSON number). */
FA_TEST(e2e, list_json_is_versioned_and_seeds_are_strings)
{
	struct fa_proc_result r;
	fa_proc_run((char *[]){"list", "tests/suites/tiny.yaml", "--seed", "18446744073709551557",
			       "--format", "json", NULL},
		    NULL, 60, &r);
	FA_CHECKF(r.status == 0, "status %d: %s", r.status, r.err);
	FA_CHECKF(strncmp(r.out, "{\"schema_version\": 2, \"suite\": \"tiny\"", 37) == 0, "%.80s",
		  r.out);
	FA_CHECK(strstr(r.out, "\"seed\": \"18446744073709551557\", \"n_cases\": 4") != NULL);
	for (const char *q = r.out; (q = strstr(q, "\"seed\": ")); q++) /* none a number */
		FA_CHECKF(q[8] == '"', "%.40s", q);
	/* a prefix length or window the case's mask does not have is null, not 0 */
	FA_CHECK(strstr(r.out, "\"mask\": \"causal\", \"prefix_len\": null, \"window\": null,"));
	fa_proc_free(&r);
	fa_proc_run((char *[]){"list", "suites/smoke.yaml", "--where", "mask == prefix_lm || mask == "
			       "sliding_window", "--format", "json", NULL},
		    NULL, 60, &r);
	FA_CHECK(strstr(r.out, "\"mask\": \"prefix_lm\", \"prefix_len\": 16, \"window\": null,"));
	FA_CHECK(strstr(r.out, "\"mask\": \"sliding_window\", \"prefix_len\": null, \"window\": 16,"));
	fa_proc_free(&r);
}

/* ---- --case, --rerun-failed, --resume ---------------------------------------- */

#define TINY_KEY(q, mask)                                                               \
	"batch=1,heads=2,kv_heads=2,q_len=" #q ",kv_len=" #q ",head_dim=32,head_dim_v=32," \
	"dtype=fp32,mask=" mask ",layout=bshd,input=normal"

/* --case runs only the cases with those keys (comma-joined or repeated),
 * keeping their suite index; a key of no case is refused, nothing written. */
FA_TEST(e2e, case_option_runs_only_those_keys)
{
	char db[1024];
	struct fa_proc_result r;
	path_in(db, sizeof db, fa_test_tmpdir(), "case.db");
	fa_proc_run((char *[]){"run", "tests/suites/tiny.yaml", "--backend", "cpu", "--kernels",
			       "cpu_flash", "--db", db, "--quiet", "--case",
			       TINY_KEY(16, "causal") "," TINY_KEY(48, "causal"), "--case",
			       TINY_KEY(48, "none"), NULL},
		    NULL, 120, &r);
	FA_CHECKF(r.status == 0, "status %d\n%s", r.status, r.err);
	fa_proc_free(&r);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM cases") == 3);
	char *idx = fa_test_db_text(db, "SELECT group_concat(idx, ' ') FROM (SELECT idx FROM cases ORDER BY idx)");
	FA_CHECKF(strcmp(idx, "1 2 3") == 0, "idx '%s'", idx);
	free(idx);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM runs WHERE status = 'complete'") == 1);
	/* an unknown key: exit 2, the database as it was */
	fa_proc_run((char *[]){"run", "tests/suites/tiny.yaml", "--backend", "cpu", "--db", db,
			       "--quiet", "--case", "batch=9,heads=2", NULL},
		    NULL, 120, &r);
	FA_CHECKF(r.status == 2 && strstr(r.err, "--case 'batch=9,heads=2' matches no case of suite "
						 "tiny (tests/suites/tiny.yaml)"),
		  "status %d: %s", r.status, r.err);
	fa_proc_free(&r);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM runs") == 1);
	/* --dry-run shows the chosen cases only */
	fa_proc_run((char *[]){"run", "tests/suites/tiny.yaml", "--backend", "cpu", "--dry-run",
			       "--case", TINY_KEY(48, "causal"), NULL},
		    NULL, 120, &r);
	FA_CHECKF(r.status == 0 && strstr(r.out, "\n[4] q_len=48") && !strstr(r.out, "\n[1] "),
		  "status %d: %s", r.status, r.out);
	fa_proc_free(&r);
}

/* The failures are listed at the end with the command that reruns them;
 * --rerun-failed runs those cases again, only the kernels that failed, with
 * the stored suite, seed and options, as a new run that replays alone. */
FA_TEST(e2e, rerun_failed_runs_the_failures_again)
{
	char db[1024], plug[1100], *env[3], want[1300];
	struct fa_proc_result r;
	path_in(db, sizeof db, fa_test_tmpdir(), "rerun.db");
	fa_test_plugins_var(plug, sizeof plug);
	env[0] = plug;
	env[1] = "FABENCH_TEST_KERNELS=1";
	env[2] = NULL;
	fa_proc_run((char *[]){"run", "tests/suites/tiny.yaml", "--backend", "test", "--where",
			       "q_len == 16", "--kernels", "test_correct,test_wrong,test_nan",
			       "--seed", "11", "--db", db, "--quiet", NULL},
		    env, 120, &r);
	FA_CHECKF(r.status == 1, "status %d\n%s", r.status, r.err);
	FA_CHECKF(strstr(r.out, "4 failed (case, key, kernel, reason):\n  case 1 " TINY_KEY(16, "none")
				": test_wrong FAIL: max_abs 0.5 > "),
		  "%s", r.out);
	FA_CHECK(strstr(r.out, "  case 2 " TINY_KEY(16, "causal") ": test_nan FAIL: ") != NULL);
	snprintf(want, sizeof want, "rerun them: fabench run --rerun-failed 1 --db %s\n", db);
	FA_CHECKF(strstr(r.out, want) != NULL, "%s", r.out);
	fa_proc_free(&r);

	fa_proc_run((char *[]){"run", "--rerun-failed", "1", "--db", db, "--quiet", NULL}, env, 120,
		    &r);
	FA_CHECKF(r.status == 1, "status %d\n%s\n%s", r.status, r.out, r.err);
	fa_proc_free(&r);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM runs") == 2);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM cases WHERE run_id = 2") == 2);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM results WHERE run_id = 2") == 4);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM results WHERE run_id = 2 AND kernel = "
			   "'test_correct'") == 0);
	/* the same data: the same seed, and the cases' seeds match */
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM runs WHERE seed = '11'") == 2);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM cases a JOIN cases b ON a.key = b.key AND a.seed = "
			   "b.seed AND a.idx = b.idx WHERE a.run_id = 1 AND b.run_id = 2") == 2);
	char *line = fa_test_db_text(db, "SELECT command_line FROM runs WHERE id = 2");
	FA_CHECKF(strstr(line, "--seed 11 --kernels test_nan,test_wrong --case ") &&
			  !strstr(line, "--rerun-failed"),
		  "command line '%s'", line);
	free(line);

	/* a run without failures: nothing to rerun */
	fa_proc_run((char *[]){"run", "tests/suites/tiny.yaml", "--backend", "test", "--where",
			       "q_len == 16", "--kernels", "test_correct", "--db", db, "--quiet", NULL},
		    env, 120, &r);
	FA_CHECK(r.status == 0 && !strstr(r.out, "failed (case"));
	fa_proc_free(&r);
	fa_proc_run((char *[]){"run", "--rerun-failed", "latest", "--db", db, NULL}, env, 120, &r);
	FA_CHECKF(r.status == 0 && strstr(r.out, "run 3 has no failed, errored or timed-out case: "
						 "nothing to rerun"),
		  "status %d: %s %s", r.status, r.out, r.err);
	fa_proc_free(&r);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM runs") == 3);
	/* refusals: an unknown run, both options, options the run brings */
	fa_proc_run((char *[]){"run", "--rerun-failed", "nope", "--db", db, NULL}, env, 120, &r);
	FA_CHECKF(r.status == 2 && strstr(r.err, "nope"), "status %d: %s", r.status, r.err);
	fa_proc_free(&r);
	fa_proc_run((char *[]){"run", "--rerun-failed", "1", "--resume", "1", "--db", db, NULL}, env,
		    120, &r);
	FA_CHECK(r.status == 2 && strstr(r.err, "--rerun-failed and --resume do not go together"));
	fa_proc_free(&r);
	fa_proc_run((char *[]){"run", "--rerun-failed", "1", "--where", "q_len == 16", "--db", db,
			       NULL},
		    env, 120, &r);
	FA_CHECK(r.status == 2 && strstr(r.err, "--rerun-failed takes the run's own options; "
						"--where does not go with it"));
	fa_proc_free(&r);
	fa_proc_run((char *[]){"run", "--resume", "1", "--case", "batch=1", "--db", db, NULL}, env,
		    120, &r);
	FA_CHECK(r.status == 2 && strstr(r.err, "--case does not go with it"));
	fa_proc_free(&r);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM runs") == 3);
}

/* The number of entries in folder dir but . and .. (-1 when it cannot be read). */
static int entries_in(const char *dir)
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

/* --resume and --rerun-failed take the stored run's options, but never the
 * files it wrote: a stored command line (a copied or merged database may
 * hold any) does not choose where a JUnit file or a dump goes; those of the
 * new command do. */
FA_TEST(e2e, resume_writes_only_the_files_it_is_given)
{
	char db[1024], junit[1024], dump[1024], junit2[1024], plug[1100], *env[3];
	struct fa_proc_result r;
	path_in(db, sizeof db, fa_test_tmpdir(), "resume-files.db");
	path_in(junit, sizeof junit, fa_test_tmpdir(), "resume-stored.xml");
	path_in(junit2, sizeof junit2, fa_test_tmpdir(), "resume-given.xml");
	path_in(dump, sizeof dump, fa_test_tmpdir(), "resume-stored-dump");
	fa_test_plugins_var(plug, sizeof plug);
	env[0] = plug;
	env[1] = "FABENCH_TEST_KERNELS=1";
	env[2] = NULL;
	fa_proc_run((char *[]){"run", "tests/suites/tiny.yaml", "--backend", "test", "--kernels",
			       "test_correct,test_wrong", "--db", db, "--quiet", "--max-failures",
			       "1", "--junit", junit, "--dump", dump, NULL},
		    env, 120, &r);
	FA_CHECKF(r.status == 1 && strstr(r.err, "stopping after 1 failed case"), "status %d\n%s",
		  r.status, r.err);
	fa_proc_free(&r);
	FA_CHECK(access(junit, F_OK) == 0 && access(dump, F_OK) == 0);
	const int dumped = entries_in(dump);
	FA_CHECK(dumped > 0);
	unlink(junit);
	fa_proc_run((char *[]){"run", "--resume", "1", "--db", db, "--quiet", NULL}, env, 120, &r);
	FA_CHECKF(r.status == 1, "status %d\n%s", r.status, r.err);
	fa_proc_free(&r);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM runs WHERE status = 'complete'") == 1);
	/* neither written again from the stored line */
	FA_CHECK(access(junit, F_OK) != 0);
	FA_CHECKF(entries_in(dump) == dumped, "%d files in %s, %d before", entries_in(dump), dump,
		  dumped);
	/* a rerun with its own --junit writes that one, and only that one */
	fa_proc_run((char *[]){"run", "--rerun-failed", "1", "--db", db, "--quiet", "--junit",
			       junit2, NULL},
		    env, 120, &r);
	FA_CHECKF(r.status == 1, "status %d\n%s", r.status, r.err);
	fa_proc_free(&r);
	FA_CHECK(access(junit2, F_OK) == 0 && access(junit, F_OK) != 0);
	unlink(junit2);
	unlink(db);
}

/* --max-failures N stops after the N-th case with a failure: those cases
 * are stored, the run stays incomplete, and --resume (without the limit)
 * finishes it; with --ab-params a case counts once, whichever side failed. */
FA_TEST(e2e, max_failures_stops_and_resume_finishes)
{
	char db[1024], plug[1100], *env[3];
	struct fa_proc_result r;
	path_in(db, sizeof db, fa_test_tmpdir(), "maxfail.db");
	fa_test_plugins_var(plug, sizeof plug);
	env[0] = plug;
	env[1] = "FABENCH_TEST_KERNELS=1";
	env[2] = NULL;
	fa_proc_run((char *[]){"run", "tests/suites/tiny.yaml", "--backend", "test", "--kernels",
			       "test_correct,test_wrong", "--db", db, "--quiet", "--max-failures",
			       "2", NULL},
		    env, 120, &r);
	FA_CHECKF(r.status == 1, "status %d\n%s", r.status, r.err);
	FA_CHECKF(strstr(r.err, "stopping after 2 failed cases (--max-failures 2); the 2 finished "
				"cases are stored (run 1, incomplete)") &&
			  strstr(r.err, "finish it with: fabench run --resume 1 --db "),
		  "%s", r.err);
	FA_CHECKF(strstr(r.out, "2 cases in ") && strstr(r.out, ": 2 pass, 2 fail"), "%s", r.out);
	fa_proc_free(&r);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM cases") == 2);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM runs WHERE status = 'incomplete'") == 1);
	/* --resume without the limit runs the other two cases and completes it */
	fa_proc_run((char *[]){"run", "--resume", "1", "--db", db, "--quiet", NULL}, env, 120, &r);
	FA_CHECKF(r.status == 1 && !strstr(r.err, "stopping after"), "status %d\n%s", r.status,
		  r.err);
	fa_proc_free(&r);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM cases") == 4);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM runs WHERE status = 'complete'") == 1);
	/* a passing kernel never stops */
	fa_proc_run((char *[]){"run", "tests/suites/tiny.yaml", "--backend", "test", "--kernels",
			       "test_correct", "--db", db, "--quiet", "--max-failures", "1", NULL},
		    env, 120, &r);
	FA_CHECKF(r.status == 0 && strstr(r.out, "4 cases in "), "status %d\n%s", r.status, r.out);
	fa_proc_free(&r);
	/* --ab-params: both sides fail case 1; it counts once, so the limit of
	 * 2 stops after the second case */
	fa_proc_run((char *[]){"run", "tests/suites/tiny.yaml", "--backend", "test", "--kernels",
			       "test_wrong", "--ab-params", "--db", db, "--quiet", "--max-failures",
			       "2", NULL},
		    env, 120, &r);
	FA_CHECKF(r.status == 1 && strstr(r.err, "stopping after 2 failed cases (--max-failures "
						 "2); the 2 finished cases are stored (runs 3 "
						 "and 4, incomplete)"),
		  "status %d\n%s", r.status, r.err);
	/* no param of a side: an A/A, and the header says so */
	FA_CHECKF(strstr(r.out, "no --param of a side (a: or b:): both run the same settings, an "
				"A/A"),
		  "%s", r.out);
	fa_proc_free(&r);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM cases WHERE run_id IN (3, 4)") == 4);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM runs WHERE status = 'incomplete'") == 2);
	/* bad values: exit 2, nothing written */
	fa_proc_run((char *[]){"run", "tests/suites/tiny.yaml", "--backend", "test", "--db", db,
			       "--max-failures", "0", NULL},
		    env, 120, &r);
	FA_CHECKF(r.status == 2 && strstr(r.err, "--max-failures '0' must be 1 to 1000000"),
		  "status %d: %s", r.status, r.err);
	fa_proc_free(&r);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM runs") == 4);
}

/* The launches test_record wrote to path: the buffers of each ("q k v o")
 * and the hash of the inputs they held. Returns how many. */
static int read_graph_record(const char *path, char bufs[][136], unsigned *hash, int max)
{
	char *text = fa_test_read_file(path, NULL), *line, *save = NULL;
	int n = 0;
	for (line = text ? strtok_r(text, "\n", &save) : NULL; line && n < max;
	     line = strtok_r(NULL, "\n", &save)) {
		char cp[32], q[32], k[32], v[32], o[32], rest[4][32];
		long ws_bytes;
		if (sscanf(line, "%31s %31s %31s %31s %31s %31s %31s %31s %31s %ld %x", cp, q, k, v, o,
			   rest[0], rest[1], rest[2], rest[3], &ws_bytes, &hash[n]) != 11)
			continue;
		snprintf(bufs[n], sizeof bufs[n], "%s %s %s %s", q, k, v, o);
		n++;
	}
	free(text);
	return n;
}

/* run --graph N on a backend with device memory and a known L2 (the test
 * plugin under FABENCH_TEST_DEVICE_MEMORY=1 and FABENCH_TEST_L2_BYTES):
 * with a cold cache each sample is one graph of N launches that cycle over
 * the case's buffers and copies of them, as many sets as put 3x the L2
 * between two reads of one set, each copy holding the same inputs; hot, the
 * launches repeat one set; with the cache's size unknown, or --graph 0,
 * single launches. The timing stored says which. */
FA_TEST(e2e, graph_cold_cycles_copies)
{
	char db[1024], rec[1024], suite[1024], plug[1100], env_rec[1100];
	static char bufs[4000][136];
	static unsigned hash[4000];
	struct fa_proc_result r;
	path_in(db, sizeof db, fa_test_tmpdir(), "graph.db");
	path_in(rec, sizeof rec, fa_test_tmpdir(), "graph.rec");
	path_in(suite, sizeof suite, fa_test_tmpdir(), "graph.yaml");
	/* Q, K, V and O of 2 x 64 x 32 fp32 values: 16 KiB each, a set 64 KiB;
	 * against a 64 KiB L2, ceil(3 x 64 / 64) = 3 sets */
	FA_REQUIRE(fa_test_write_file(suite, "suite: graph\nseed: 7\n"
						 "measure: {warmup: 1, min_samples: 3, max_samples: 3, "
						 "min_time_ms: 0, graph_launches: 2}\n"
						 "defaults: {heads: 2, head_dim: 32, dtype: fp32, "
						 "seq_len: 64}\n") == 0);
	fa_test_plugins_var(plug, sizeof plug);
	snprintf(env_rec, sizeof env_rec, "FABENCH_TEST_RECORD=%s", rec);
	for (int pass = 0; pass < 4; pass++) {
		/* 0: cold, --graph 5 over the suite's 2; 1: hot; 2: the L2's size
		 * unknown; 3: --graph 0 */
		char *env[] = {plug, "FABENCH_TEST_KERNELS=1", "FABENCH_TEST_DEVICE_MEMORY=1", env_rec,
			       pass == 2 ? NULL : "FABENCH_TEST_L2_BYTES=65536", NULL};
		const char *want = pass == 0 ? "graph-cold" : pass == 1 ? "graph" : "cold-clean";
		unlink(db);
		unlink(rec);
		fa_proc_run((char *[]){"run", suite, "--backend", "test", "--kernels", "test_record",
				       "--db", db, "--quiet", "--graph", pass == 3 ? "0" : "5", "--cache",
				       pass == 1 ? "hot" : "cold-clean", NULL},
			    env, 120, &r);
		FA_CHECKF(r.status == 0, "pass %d: status %d\n%s", pass, r.status, r.err);
		/* the header says when the backend cannot time the graph asked for */
		FA_CHECKF((strstr(r.out, "  --graph 5: backend test does not say how large its L2 "
					 "is, which sizes the copies: cold cases are timed in single "
					 "launches\n") != NULL) == (pass == 2),
			  "pass %d: %s", pass, r.out);
		fa_proc_free(&r);
		char *timing = fa_test_db_text(db, "SELECT timing FROM results WHERE status = 'pass'");
		FA_CHECKF(timing && strcmp(timing, want) == 0, "pass %d: timing '%s', wanted '%s'",
			  pass, timing ? timing : "(none)", want);
		free(timing);
		int n = read_graph_record(rec, bufs, hash, 4000), sets = 0; /* launches on copies */
		/* the check's launch, then the warm-up's and 3 samples' */
		int per = pass < 2 ? 5 : 1;
		FA_CHECKF(n == 1 + 4 * per, "pass %d: %d launches", pass, n);
		for (int i = 1; i < n; i++) {
			/* the i-th launch of a graph runs set i % sets; set 0 is the
			 * checked buffers */
			int j = (i - 1) % per, set = pass == 0 ? j % 3 : 0;
			FA_CHECKF(strcmp(bufs[i], bufs[1 + set]) == 0, "pass %d: launch %d on '%s', "
				  "wanted set %d's '%s'", pass, i, bufs[i], set, bufs[1 + set]);
			FA_CHECKF(hash[i] == hash[0], "pass %d: launch %d read other inputs", pass, i);
			sets += i <= per && strcmp(bufs[i], bufs[0]) != 0;
		}
		FA_CHECKF(strcmp(bufs[1], bufs[0]) == 0, "pass %d: set 0 is not the checked one", pass);
		/* the first graph: sets 0 1 2 0 1, so three launches on copies */
		FA_CHECKF(sets == (pass == 0 ? 3 : 0), "pass %d: %d launches of a graph on copies", pass,
			  sets);
		if (pass == 0) /* no buffer of one set in another */
			for (int a = 1; a <= 3; a++)
				for (int b = a + 1; b <= 3; b++) {
					char x[136], y[136], *sx, *sy;
					snprintf(x, sizeof x, "%s", bufs[a]);
					for (char *u = strtok_r(x, " ", &sx); u; u = strtok_r(NULL, " ", &sx)) {
						snprintf(y, sizeof y, "%s", bufs[b]);
						for (char *w = strtok_r(y, " ", &sy); w; w = strtok_r(NULL, " ", &sy))
							FA_CHECKF(strcmp(u, w) != 0, "sets %d and %d share %s", a, b, u);
					}
				}
	}
	/* the CPU has no graphs: said, and timed as always */
	unlink(db);
	fa_proc_run((char *[]){"run", suite, "--backend", "cpu", "--kernels", "cpu_flash", "--db", db,
			       "--graph", "5", NULL},
		    NULL, 120, &r);
	FA_CHECKF(r.status == 0 && strstr(r.out, "  --graph 5: backend cpu has no graphs: every "
						 "case is timed in single launches\n"),
		  "status %d: %s%s", r.status, r.out, r.err);
	fa_proc_free(&r);
	char *timing = fa_test_db_text(db, "SELECT timing FROM results WHERE status = 'pass'");
	FA_CHECKF(timing && strcmp(timing, "cpu") == 0, "cpu timing '%s'", timing ? timing : "");
	free(timing);
	fa_proc_run((char *[]){"run", suite, "--backend", "test", "--db", db, "--graph", "-1",
			       NULL},
		    NULL, 120, &r);
	FA_CHECKF(r.status == 2 && strstr(r.err, "--graph '-1' must be 0 to 1000"), "status %d: %s",
		  r.status, r.err);
	fa_proc_free(&r);
}

/* Starts many.yaml's first 10 cases, waits until `cases` are committed,
 * sends sig; then --resume finishes the same run: every case once, in suite
 * order, the run complete. */
static void resume_after(int sig)
{
	char db[1024];
	struct fa_proc_result r;
	pid_t pid;
	int st;
	long long before;
	path_in(db, sizeof db, fa_test_tmpdir(), "resume.db");
	pid = fa_proc_start((char *[]){"run", "tests/suites/many.yaml", "--backend", "cpu",
				       "--kernels", "cpu_flash", "--where", "batch <= 10", "--db",
				       db, "--quiet", NULL},
			    NULL);
	for (int i = 0; i < 600; i++) {
		sleep_ms(20);
		if (exists(db) && fa_test_db_int(db, "SELECT count(*) FROM cases") >= 3)
			break;
	}
	kill(pid, sig);
	st = fa_proc_wait(pid);
	FA_CHECKF(st == (sig == SIGKILL ? 128 + SIGKILL : 130), "status %d", st);
	before = fa_test_db_int(db, "SELECT count(*) FROM cases");
	FA_CHECKF(before >= 3 && before < 10, "cases %lld", before);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM runs WHERE status = 'incomplete'") == 1);
	fa_proc_run((char *[]){"run", "--resume", "1", "--db", db, "--quiet", NULL}, NULL, 120, &r);
	FA_CHECKF(r.status == 0, "status %d\n%s\n%s", r.status, r.out, r.err);
	FA_CHECKF(strstr(r.out, ": resumed, ") != NULL, "%s", r.out);
	fa_proc_free(&r);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM runs") == 1);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM runs WHERE status = 'complete'") == 1);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM cases") == 10);
	FA_CHECK(fa_test_db_int(db, "SELECT count(DISTINCT idx) FROM cases WHERE idx BETWEEN 0 AND 9") == 10);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM results WHERE status = 'pass'") == 10);
	/* a complete run has nothing to resume */
	fa_proc_run((char *[]){"run", "--resume", "1", "--db", db, NULL}, NULL, 120, &r);
	FA_CHECKF(r.status == 2 && strstr(r.err, "--resume 1: run 1 is complete; nothing to resume"),
		  "status %d: %s", r.status, r.err);
	fa_proc_free(&r);
}

FA_TEST(e2e, resume_after_kill9) { resume_after(SIGKILL); }
FA_TEST(e2e, resume_after_sigint) { resume_after(SIGINT); }

/* One run, one writer: while a run is going (its first test_spin launch
 * never returns), run --resume of it and import --run-into it are refused,
 * naming the run, and write nothing; killed, it is resumed and finished.
 * (Both went on: the resume ran the cases the run was about to store, the
 * import took the idx of its next case, and whichever came second died on
 * its next commit, "UNIQUE constraint failed: cases.run_id, cases.idx", a
 * measured case lost and the run left marked as the loser ended it.) */
FA_TEST(e2e, a_run_being_written_is_not_resumed_or_imported_into)
{
	char db[1024], plug[1100], once[1100], once_env[1200], log[1100], *env[4];
	const char *p = getenv("FABENCH_TEST_PLUGIN");
	struct fa_proc_result r;
	pid_t pid;
	int st;
	path_in(db, sizeof db, fa_test_tmpdir(), "claimed.db");
	path_in(once, sizeof once, fa_test_tmpdir(), "claimed.once");
	path_in(log, sizeof log, fa_test_tmpdir(), "claimed.log");
	snprintf(plug, sizeof plug, "FABENCH_PLUGINS=%s", p ? p : "build/libfabench-test.so");
	snprintf(once_env, sizeof once_env, "FABENCH_TEST_ONCE=%s", once);
	env[0] = plug;
	env[1] = "FABENCH_TEST_KERNELS=1";
	env[2] = once_env;
	env[3] = NULL;
	pid = fa_proc_start_log((char *[]){"run", "tests/suites/tiny.yaml", "--backend", "test",
					   "--kernels", "test_spin", "--timeout", "60", "--db", db,
					   "--quiet", NULL},
				env, log);
	/* its row is there once the run has claimed it; then its first case
	 * spins (for minutes: the timeout, then as long again) */
	for (int i = 0; i < 1200 && !exists(once); i++)
		sleep_ms(50);
	FA_REQUIRE(exists(once));
	FA_REQUIRE(fa_test_db_int(db, "SELECT count(*) FROM runs") == 1);
	fa_proc_run((char *[]){"run", "--resume", "1", "--db", db, "--quiet", NULL}, env, 120, &r);
	FA_CHECKF(r.status == 1 && strstr(r.err, "run 1 in '") &&
			  strstr(r.err, "' is being written by another process"),
		  "status %d\n%s\n%s", r.status, r.out, r.err);
	FA_CHECKF(!strstr(r.out, "resumed"), "%s", r.out);
	fa_proc_free(&r);
	fa_proc_run((char *[]){"import", "tests/import/good_tiny.jsonl", "--db", db, "--run-into",
			       "1", NULL},
		    NULL, 120, &r);
	FA_CHECKF(r.status == 1 && strstr(r.err, "' is being written by another process"),
		  "status %d\n%s\n%s", r.status, r.out, r.err);
	fa_proc_free(&r);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM cases") == 0);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM runs WHERE source = 'fabench' AND "
				    "status = 'incomplete'") == 1);
	/* a kill -9 frees the run: resumed, test_spin now right, it ends complete */
	kill(pid, SIGKILL);
	st = fa_proc_wait(pid);
	FA_CHECKF(st == 128 + SIGKILL, "status %d", st);
	fa_proc_run((char *[]){"run", "--resume", "1", "--db", db, "--quiet", NULL}, env, 120, &r);
	FA_CHECKF(r.status == 0 && strstr(r.out, ": resumed, 4 of 4 cases to run"),
		  "status %d\n%s\n%s", r.status, r.out, r.err);
	fa_proc_free(&r);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM cases") == 4);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM runs WHERE status = 'complete'") == 1);
}

/* Each progress line shows its timing's noise: "±N%", and "*" when the
 * stopping rule did not reach its noise target (tiny.yaml's 20 ms of
 * sampling never does at 0.5%). */
FA_TEST(e2e, progress_lines_show_noise)
{
	char db[1024];
	struct fa_proc_result r;
	path_in(db, sizeof db, fa_test_tmpdir(), "noise.db");
	fa_proc_run((char *[]){"run", "tests/suites/tiny.yaml", "--backend", "cpu", "--kernels",
			       "cpu_flash", "--where", "q_len == 48 && mask == none", "--db", db,
			       NULL},
		    NULL, 120, &r);
	FA_CHECKF(r.status == 0, "status %d: %s", r.status, r.err);
	const char *line = strstr(r.out, "      cpu_flash                pass ");
	FA_REQUIRE(line);
	const char *pm = strstr(line, " ms ±");
	FA_CHECKF(pm && strchr(pm, '%') && strchr(pm, '%') < strchr(line, '\n'), "%s", line);
	char *stop = fa_test_db_text(db, "SELECT stop_reason FROM results");
	FA_CHECKF((strcmp(stop, "converged") != 0) == (strstr(pm, "%*") != NULL &&
						       strstr(pm, "%*") < strchr(line, '\n')),
		  "stop %s: %s", stop, line);
	free(stop);
	fa_proc_free(&r);
}

/* What --rerun-failed and --resume refuse: a run imported from another
 * tool, a suite file changed since the run began, --case beside --ab. */
FA_TEST(e2e, rerun_and_resume_refusals)
{
	char db[1024], suite[1100], text[4096];
	struct fa_proc_result r;
	char *orig;
	path_in(db, sizeof db, fa_test_tmpdir(), "refuse.db");
	path_in(suite, sizeof suite, fa_test_tmpdir(), "tiny.yaml");
	orig = fa_test_read_file("tests/suites/tiny.yaml", NULL);
	FA_REQUIRE(orig);
	FA_REQUIRE(fa_test_write_file(suite, orig) == 0);
	/* run 1: imported */
	fa_proc_run((char *[]){"import", "tests/import/good_tiny.jsonl", "--db", db, NULL}, NULL, 60,
		    &r);
	FA_CHECKF(r.status == 0, "import: %s", r.err);
	fa_proc_free(&r);
	fa_proc_run((char *[]){"run", "--rerun-failed", "1", "--db", db, NULL}, NULL, 60, &r);
	FA_CHECKF(r.status == 2 && strstr(r.err, "--rerun-failed 1: run 1 holds results imported "
						 "from another tool"),
		  "status %d: %s", r.status, r.err);
	fa_proc_free(&r);
	/* run 2: one case, marked incomplete by hand; then its suite file changes */
	fa_proc_run((char *[]){"run", suite, "--backend", "cpu", "--kernels", "cpu_flash", "--db", db,
			       "--quiet", "--case", TINY_KEY(16, "none"), NULL},
		    NULL, 120, &r);
	FA_CHECKF(r.status == 0, "run: %s", r.err);
	fa_proc_free(&r);
	snprintf(text, sizeof text, "%s# changed\n", orig);
	FA_REQUIRE(fa_test_write_file(suite, text) == 0);
	{
		sqlite3 *h = NULL;
		FA_REQUIRE(sqlite3_open(db, &h) == SQLITE_OK);
		FA_REQUIRE(sqlite3_exec(h, "UPDATE runs SET status = 'incomplete' WHERE id = 2", NULL,
					NULL, NULL) == SQLITE_OK);
		sqlite3_close(h);
	}
	fa_proc_run((char *[]){"run", "--resume", "2", "--db", db, NULL}, NULL, 60, &r);
	FA_CHECKF(r.status == 2 && strstr(r.err, "--resume 2: suite ") &&
			  strstr(r.err, " changed since run 2 started (hash "),
		  "status %d: %s", r.status, r.err);
	fa_proc_free(&r);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM cases WHERE run_id = 2") == 1);
	fa_proc_run((char *[]){"run", suite, "--ab", "a.so:b.so", "--case", "batch=1", NULL}, NULL,
		    60, &r);
	FA_CHECK(r.status == 2 && strstr(r.err, "--case does not go with --ab"));
	fa_proc_free(&r);
	free(orig);
}

/* Runs fabench with stdout and stderr both going to the file out (as
 * `fabench run ... >log 2>&1`); returns its status, 128 + signal. */
static int run_to_file(char *const argv[], char *const env[], const char *out)
{
	char *args[64];
	int n = 0, st = 0;
	pid_t pid;
	args[n++] = (char *)fa_proc_bin();
	for (int i = 0; argv[i] && n < 63; i++)
		args[n++] = argv[i];
	args[n] = NULL;
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		FILE *f = fopen(out, "w");
		if (!f || dup2(fileno(f), 1) < 0 || dup2(fileno(f), 2) < 0 ||
		    chdir(fa_test_root()) != 0)
			_exit(126);
		for (int i = 0; env && env[i]; i++)
			putenv(env[i]);
		execv(args[0], args);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : -1;
}

/* A kernel that crashes the process without --isolate: the output (to a
 * file, so stdout is fully buffered) keeps what came before and names the
 * case, the kernel and --isolate; the run row names them too, and report
 * says where the run stopped. */
FA_TEST(e2e, crash_without_isolate_is_named)
{
	char db[1024], log[1024], plug[1100], *env[3], *text, *why;
	struct fa_proc_result r;
	size_t len;
	int status;
	path_in(db, sizeof db, fa_test_tmpdir(), "crash.db");
	path_in(log, sizeof log, fa_test_tmpdir(), "crash.log");
	fa_test_plugins_var(plug, sizeof plug);
	env[0] = plug;
	env[1] = "FABENCH_TEST_KERNELS=1";
	env[2] = NULL;
	/* case 2 of 2 (q_len 16, both dtypes): test_correct passes case 1 first */
	status = run_to_file((char *[]){"run", "tests/suites/tiny.yaml", "--backend", "test",
					"--where", "q_len == 16", "--kernels", "test_correct,test_crash",
					"--db", db, NULL},
			     env, log);
	/* SIGSEGV, re-raised after the message (also under AddressSanitizer, which
	 * lets a program install its own handler) */
	FA_CHECKF(status == 128 + SIGSEGV, "status %d", status);
	text = fa_test_read_file(log, &len);
	FA_REQUIRE(text != NULL);
	FA_CHECKF(strstr(text, "run 1 -> ") != NULL, "the lines before the crash are lost:\n%s",
		  text);
	FA_CHECKF(strstr(text, "fabench: crashed (SIGSEGV) in case 1/2 batch=1,") &&
			  strstr(text, " kernel test_crash; rerun with --isolate to record it "
				       "as an error and go on\n"),
		  "log:\n%s", text);
	free(text);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM runs WHERE status = 'incomplete'") == 1);
	why = fa_test_db_text(db, "SELECT running FROM runs");
	FA_CHECKF(strncmp(why, "case 1/2 batch=1,", 17) == 0 &&
			  strstr(why, " kernel test_crash") != NULL,
		  "running: '%s'", why);
	free(why);
	fa_proc_run((char *[]){"report", "--db", db, NULL}, NULL, 60, &r);
	FA_CHECKF(r.status == 0 && strstr(r.out, "status: incomplete") &&
			  strstr(r.out, "it stopped in case 1/2 batch=1,") &&
			  strstr(r.out, "kernel test_crash: a crash, a kill or a kernel that did not "
					"return ended the process"),
		  "status %d\n%s%s", r.status, r.out, r.err);
	fa_proc_free(&r);
	/* a run that ends clears the mark */
	fa_proc_run((char *[]){"run", "tests/suites/tiny.yaml", "--backend", "test", "--where",
			       "q_len == 16", "--kernels", "test_correct", "--db", db, "--quiet",
			       NULL},
		    env, 120, &r);
	FA_CHECKF(r.status == 0, "status %d: %s", r.status, r.err);
	fa_proc_free(&r);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM runs WHERE status = 'complete' AND running IS "
			   "NULL") == 1);
}

/* calibrate on the CPU: a matrix rate in a unit that shows it (a CPU's is
 * well under 1 TFLOP/s and printed as 0.0 TFLOP/s before), stored. */
FA_TEST(e2e, calibrate_cpu_prints_a_measured_rate)
{
	char db[1024];
	struct fa_proc_result r;
	const char *line;
	double rate = 0;
	char unit[16] = "";
	snprintf(db, sizeof db, "%s/cal.db", fa_test_tmpdir());
	unlink(db);
	fa_proc_run((char *[]){"calibrate", "--backend", "cpu", "--db", db, NULL}, NULL, 120, &r);
	FA_CHECKF(r.status == 0, "status %d\n%s", r.status, r.err);
	line = strstr(r.out, "\nmatrix rate ");
	FA_REQUIRE(line != NULL);
	FA_CHECKF(sscanf(line, "\nmatrix rate %lf %15s", &rate, unit) == 2 && rate > 0 &&
			  (strcmp(unit, "GFLOP/s") == 0 || strcmp(unit, "TFLOP/s") == 0),
		  "stdout:\n%s", r.out);
	FA_CHECK(strstr(r.out, " 0.0 ") == NULL);
	FA_CHECK(strstr(r.out, "stored in ") != NULL);
	fa_proc_free(&r);
}

/* Lines of text that contain every one of the NULL-terminated needles. */
static int lines_with(const char *text, const char *const *needles)
{
	int n = 0;
	for (const char *p = text; p && *p;) {
		size_t len = strcspn(p, "\n");
		char line[4096];
		int all = 1;
		snprintf(line, sizeof line, "%.*s", (int)len, p);
		for (int i = 0; needles[i]; i++)
			all = all && strstr(line, needles[i]) != NULL;
		n += all && len > 0;
		p += len + (p[len] == '\n');
	}
	return n;
}

/* tools/sanitize-gpu (make sanitize-gpu; the sanitizers themselves need a
 * GPU): its command lines, from --dry-run. Every tool runs every kernel
 * once, then cuda_flash_mma's decode merges and its Hopper decode kernel
 * (decode=2,3,4,5 at splits 3 and 12, over the decode cases) and stream-K (sched=2,3, sk_round=0) apart,
 * cuda_flash_wgmma's split-KV, dynamic grid and padded tiles, and
 * cuda_flash_bwd_wgmma's split/overlap; the decode runs' --where selects
 * the suite's decode cases (a filter that matched none would sanitize
 * nothing and pass); a kernel without extra runs gets one run per tool; a
 * tool it does not know exits 2. */
FA_TEST(e2e, sanitize_gpu_runs_every_schedule)
{
	char *out = NULL, *err = NULL, where[256] = "";
	const char *w;
	struct fa_proc_result r;
	int st = fa_proc_script("tools/sanitize-gpu", (char *[]){"--dry-run", NULL}, &out, &err);
	FA_CHECKF(st == 0, "exit %d: %s", st, err);
	FA_CHECKF(lines_with(out, (const char *[]){"compute-sanitizer", NULL}) == 21, "%s", out);
	for (int t = 0; t < 3; t++) {
		const char *tool = t == 0 ? "--tool memcheck " : t == 1 ? "--tool racecheck " : "--tool initcheck ";
		FA_CHECKF(lines_with(out, (const char *[]){tool, NULL}) == 7, "%s: %s", tool, out);
		FA_CHECKF(lines_with(out, (const char *[]){tool, "--kernels cuda_dense,", "cuda_flash_mma.splits=0,3",
							   "cuda_flash_mma.hd72=0,1",
							   ",cuda_flash_wgmma,cuda_flash_bwd_wgmma ", NULL}) == 1,
			  "%s", out);
		FA_CHECKF(lines_with(out, (const char *[]){tool, "--kernels cuda_flash_wgmma ",
							   "cuda_flash_wgmma.split=3", NULL}) == 1,
			  "%s", out);
		FA_CHECKF(lines_with(out, (const char *[]){tool, "--kernels cuda_flash_wgmma ",
							   "cuda_flash_wgmma.dynamic=2",
							   "cuda_flash_wgmma.persistent=3", NULL}) == 1,
			  "%s", out);
		FA_CHECKF(lines_with(out, (const char *[]){tool, "--kernels cuda_flash_wgmma ",
							   "cuda_flash_wgmma.pad128=1", NULL}) == 1,
			  "%s", out);
		FA_CHECKF(lines_with(out, (const char *[]){tool, "--kernels cuda_flash_bwd_wgmma ",
							   "cuda_flash_bwd_wgmma.split=0,1",
							   "cuda_flash_bwd_wgmma.overlap=0,1", NULL}) == 1,
			  "%s", out);
		FA_CHECKF(lines_with(out, (const char *[]){tool, "--kernels cuda_flash_mma ",
							   "--where ",
							   "cuda_flash_mma.decode=2,3,4,5 ",
							   "cuda_flash_mma.splits=3,12", NULL}) == 1,
			  "%s", out);
		FA_CHECKF(lines_with(out, (const char *[]){tool, "--kernels cuda_flash_mma ",
							   "cuda_flash_mma.sched=2,3",
							   "cuda_flash_mma.sk_round=0", NULL}) == 1,
			  "%s", out);
	}
	w = strstr(out, "--where ");
	FA_REQUIRE(w != NULL);
	snprintf(where, sizeof where, "%.*s", (int)strcspn(w + 8, " \n"), w + 8);
	free(out);
	free(err);

	fa_proc_run((char *[]){"run", "suites/sanitize.yaml", "--backend", "cpu", "--kernels", "cpu_flash",
			       "--dry-run", "--where", where, NULL},
		    NULL, 60, &r);
	FA_CHECKF(r.status == 0, "status %d: %s", r.status, r.err);
	FA_CHECKF(strstr(r.out, "\n[2] q_len=4") != NULL && strstr(r.out, "\n[3]") == NULL,
		  "--where %s: the decode cases (q_len 1 and 4): %s", where, r.out);
	fa_proc_free(&r);

	st = fa_proc_script("tools/sanitize-gpu", (char *[]){"--dry-run", "--kernels", "cuda_dense", NULL},
			    &out, &err);
	FA_CHECKF(st == 0, "exit %d: %s", st, err);
	FA_CHECKF(lines_with(out, (const char *[]){"compute-sanitizer", NULL}) == 3, "%s", out);
	FA_CHECKF(strstr(out, "cuda_flash_mma") == NULL, "%s", out);
	free(out);
	free(err);

	/* the Hopper backward alone: its own run and its split/overlap run */
	st = fa_proc_script("tools/sanitize-gpu", (char *[]){"--dry-run", "--kernels", "cuda_flash_bwd_wgmma", NULL},
			    &out, &err);
	FA_CHECKF(st == 0, "exit %d: %s", st, err);
	FA_CHECKF(lines_with(out, (const char *[]){"compute-sanitizer", NULL}) == 6, "%s", out);
	FA_CHECKF(lines_with(out, (const char *[]){"cuda_flash_bwd_wgmma.split=0,1", NULL}) == 3, "%s", out);
	FA_CHECKF(strstr(out, "cuda_flash_mma") == NULL && strstr(out, "cuda_flash_wgmma") == NULL, "%s", out);
	free(out);
	free(err);

	st = fa_proc_script("tools/sanitize-gpu", (char *[]){"--dry-run", "--tools", "helgrind", NULL}, &out,
			    &err);
	FA_CHECKF(st == 2 && strstr(err, "unknown tool 'helgrind'") != NULL, "exit %d: %s", st, err);
	free(out);
	free(err);
}
