/* test_merge.c - fabench merge: shards combined into one run, ids
 * remapped, duplicates left out by run identity, suites of different hashes
 * refused, and the output as it was after any error. */
#include <dirent.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fixture.h"
#include "proc.h"
#include "test.h"

static void path_in(char *buf, size_t size, const char *name)
{
	char p[1200];
	snprintf(buf, size, "%s/%s", fa_test_tmpdir(), name);
	unlink(buf);
	snprintf(p, sizeof p, "%s-wal", buf);
	unlink(p);
	snprintf(p, sizeof p, "%s-shm", buf);
	unlink(p);
}

/* Runs shard k/n of suite on the CPU into db with label; 0 on success. */
static int run_shard(const char *suite, const char *db, int k, int n, const char *label)
{
	char shard[16];
	struct fa_proc_result r;
	int st;
	snprintf(shard, sizeof shard, "%d/%d", k, n);
	fa_proc_run((char *[]){"run", (char *)suite, "--backend", "cpu", "--kernels", "cpu_flash",
			       "--shard", shard, "--label", (char *)label, "--db", (char *)db,
			       "--quiet", NULL},
		    NULL, 120, &r);
	st = r.status;
	if (st != 0)
		fprintf(stderr, "run %s shard %s: %d\n%s\n", suite, shard, r.status, r.err);
	fa_proc_free(&r);
	return st;
}

static int merge(char *const argv[], struct fa_proc_result *r)
{
	fa_proc_run(argv, NULL, 120, r);
	return r->status;
}

/* Files in the temporary folder whose name contains part. */
static int leftovers(const char *part)
{
	DIR *d = opendir(fa_test_tmpdir());
	struct dirent *e;
	int n = 0;
	while (d && (e = readdir(d)) != NULL)
		n += strstr(e->d_name, part) != NULL;
	if (d)
		closedir(d);
	return n;
}

FA_TEST(merge, shards_become_one_run_once)
{
	char a[1024], b[1024], all[1024], sep[1024];
	struct fa_proc_result r;
	path_in(a, sizeof a, "m-shard1.db");
	path_in(b, sizeof b, "m-shard2.db");
	path_in(all, sizeof all, "m-all.db");
	path_in(sep, sizeof sep, "m-sep.db");
	FA_REQUIRE(run_shard("tests/suites/tiny.yaml", a, 1, 2, "base") == 0);
	FA_REQUIRE(run_shard("tests/suites/tiny.yaml", b, 2, 2, "base") == 0);
	long long samples = fa_test_db_int(a, "SELECT count(*) FROM samples") +
			    fa_test_db_int(b, "SELECT count(*) FROM samples");
	FA_CHECK(merge((char *[]){"merge", a, b, "-o", all, "--one-run", NULL}, &r) == 0);
	FA_CHECKF(strstr(r.out, "1 run added (4 cases, 4 results"), "%s%s", r.out, r.err);
	fa_proc_free(&r);
	FA_CHECK(fa_test_db_int(all, "SELECT count(*) FROM runs") == 1);
	FA_CHECK(fa_test_db_int(all, "SELECT count(*) FROM cases") == 4);
	FA_CHECK(fa_test_db_int(all, "SELECT count(DISTINCT idx) FROM cases") == 4);
	FA_CHECK(fa_test_db_int(all, "SELECT count(*) FROM samples") == samples);
	FA_CHECK(fa_test_db_int(all, "SELECT count(*) FROM runs WHERE shard = '1/2,2/2' AND "
			    "label = 'base' AND status = 'complete'") == 1);
	FA_CHECK(fa_test_db_int(all, "SELECT length(merged_from) - length(replace(merged_from, "
			    "char(10), '')) FROM runs") == 1);
	/* every result points at a case of its run, every sample at its result */
	FA_CHECK(fa_test_db_int(all, "SELECT count(*) FROM results r JOIN cases c ON c.id = "
			    "r.case_id AND c.run_id = r.run_id") == 4);
	FA_CHECK(fa_test_db_int(all, "SELECT count(*) FROM results r WHERE n_samples != (SELECT "
			    "count(*) FROM samples s WHERE s.result_id = r.id)") == 0);
	/* the same databases again: nothing added */
	FA_CHECK(merge((char *[]){"merge", a, b, "-o", all, "--one-run", NULL}, &r) == 0);
	FA_CHECKF(strstr(r.out, "0 runs added (0 cases, 0 results, 0 samples), 2 already there"),
		  "%s", r.out);
	fa_proc_free(&r);
	FA_CHECK(fa_test_db_int(all, "SELECT count(*) FROM cases") == 4);
	/* runs kept apart: ids renumbered, the repeated input counted once */
	FA_CHECK(merge((char *[]){"merge", a, b, a, "-o", sep, NULL}, &r) == 0);
	FA_CHECKF(strstr(r.out, "2 runs added") && strstr(r.out, "1 already there"), "%s", r.out);
	fa_proc_free(&r);
	FA_CHECK(fa_test_db_int(sep, "SELECT count(*) FROM runs WHERE shard IN ('1/2', '2/2')") == 2);
	FA_CHECK(fa_test_db_int(sep, "SELECT count(*) FROM samples") == samples);
	FA_CHECK(fa_test_db_int(sep, "SELECT count(*) FROM results r JOIN cases c ON c.id = "
			    "r.case_id AND c.run_id = r.run_id") == 4);
	/* the merged run reads like any other */
	fa_proc_run((char *[]){"report", "--db", all, "--run", "base", NULL}, NULL, 60, &r);
	FA_CHECKF(r.status == 0 && strstr(r.out, "cases: 4"), "%d %s %s", r.status, r.out, r.err);
	fa_proc_free(&r);
	FA_CHECK(leftovers(".merge-") == 0);
}

FA_TEST(merge, refusals_leave_the_output_as_it_was)
{
	char a[1024], b[1024], c[1024], other[1024], out[1024], suite[1024], missing[1024];
	struct fa_proc_result r;
	path_in(a, sizeof a, "r-a.db");
	path_in(b, sizeof b, "r-b.db");
	path_in(c, sizeof c, "r-c.db");
	path_in(other, sizeof other, "r-other.db");
	path_in(out, sizeof out, "r-out.db");
	path_in(missing, sizeof missing, "r-missing.db");
	path_in(suite, sizeof suite, "r-tiny2.yaml");
	FILE *f = fopen(suite, "w");
	FA_REQUIRE(f);
	fprintf(f, "suite: tiny2\nseed: 7\nmeasure: {min_samples: 3, min_time_ms: 5, max_time_ms: 20}\n"
		   "defaults: {heads: 2, head_dim: 32, dtype: fp32}\n"
		   "axes:\n  seq_len: [16, 48]\n  mask: [none, causal]\n");
	fclose(f);
	FA_REQUIRE(run_shard("tests/suites/tiny.yaml", a, 1, 1, "x") == 0);
	FA_REQUIRE(run_shard("tests/suites/tiny.yaml", b, 1, 1, "y") == 0);
	FA_REQUIRE(run_shard("tests/suites/tiny.yaml", c, 1, 1, "z") == 0);
	FA_REQUIRE(run_shard(suite, other, 1, 2, "x") == 0);
	FA_REQUIRE(merge((char *[]){"merge", a, "-o", out, NULL}, &r) == 0);
	fa_proc_free(&r);
	/* two suite hashes in one run */
	FA_CHECK(merge((char *[]){"merge", b, other, "-o", out, "--one-run", NULL}, &r) == 2);
	FA_CHECKF(strstr(r.err, "has suite hash") && strstr(r.err, "--mixed-suites"), "%s", r.err);
	fa_proc_free(&r);
	/* the same cases twice in one run */
	FA_CHECK(merge((char *[]){"merge", b, c, "-o", out, "--one-run", "--label", "ab", NULL},
		       &r) == 2);
	FA_CHECKF(strstr(r.err, "both hold case 1; --one-run combines disjoint shards only"), "%s",
		  r.err);
	fa_proc_free(&r);
	FA_CHECK(fa_test_db_int(out, "SELECT count(*) FROM runs") == 1);
	FA_CHECK(fa_test_db_int(out, "SELECT count(*) FROM cases") == 4);
	FA_CHECK(leftovers(".merge-") == 0);
	/* asked for: the parts of two suites in one run (tiny2 lists tiny's cases in
	 * the same order, so its shard 1 and tiny's shard 2 are disjoint) */
	path_in(c, sizeof c, "r-c2.db");
	FA_REQUIRE(run_shard("tests/suites/tiny.yaml", c, 2, 2, "z") == 0);
	FA_CHECK(merge((char *[]){"merge", other, c, "-o", out, "--one-run", "--mixed-suites",
				 "--label", "mixed", NULL},
		       &r) == 0);
	fa_proc_free(&r);
	FA_CHECK(fa_test_db_int(out, "SELECT count(*) FROM runs WHERE label = 'mixed'") == 1);
	/* usage */
	struct {
		char *argv[8];
		const char *want;
	} bad[] = {
		{{"merge", a, NULL}, "missing -o OUT.db"},
		{{"merge", "-o", out, NULL}, "missing the databases to merge"},
		{{"merge", a, "-o", out, "--label", "l", NULL}, "--label goes with --one-run only"},
		{{"merge", a, "-o", a, NULL}, "is both an input and the output"},
		{{"merge", missing, "-o", out, NULL}, "no database"},
		{{"merge", a, "-o", out, "--bogus", NULL}, "unknown option '--bogus'"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		FA_CHECKF(merge(bad[i].argv, &r) == 2 && strstr(r.err, bad[i].want), "%s: %d %s",
			  bad[i].want, r.status, r.err);
		fa_proc_free(&r);
	}
	FA_CHECK(access(missing, F_OK) != 0);
	fa_proc_run((char *[]){"merge", "--help", NULL}, NULL, 60, &r);
	FA_CHECK(r.status == 0 && strstr(r.out, "--one-run"));
	fa_proc_free(&r);
}

/* An output merge may not write (a read-only file, a folder) is refused
 * before the inputs are copied in, nothing left beside it. (The merge ran
 * whole in a copy, then failed; a folder was "disk I/O error".) */
FA_TEST(merge, an_output_it_may_not_write_is_refused_first)
{
	char a[1100], out[1100], aux[1200];
	struct fa_proc_result r;
	path_in(a, sizeof a, "ro-in.db");
	path_in(out, sizeof out, "ro-out.db");
	FA_REQUIRE(run_shard("tests/suites/tiny.yaml", a, 1, 1, "in") == 0);
	FA_REQUIRE(run_shard("tests/suites/tiny.yaml", out, 1, 1, "out") == 0);
	FA_REQUIRE(chmod(out, 0444) == 0);
	FA_CHECK(merge((char *[]){"merge", a, "-o", out, NULL}, &r) == 1);
	FA_CHECKF(strstr(r.err, "' is read-only: this command writes to it"), "%s", r.err);
	fa_proc_free(&r);
	chmod(out, 0644);
	snprintf(aux, sizeof aux, "%s-wal", out);
	FA_CHECK(access(aux, F_OK) != 0);
	FA_CHECK(leftovers("ro-out.db.merge-") == 0);
	FA_CHECK(fa_test_db_int(out, "SELECT count(*) FROM runs") == 1);
	FA_CHECK(merge((char *[]){"merge", a, "-o", (char *)fa_test_tmpdir(), NULL}, &r) == 1);
	FA_CHECKF(strstr(r.err, "' is a folder"), "%s", r.err);
	fa_proc_free(&r);
}

/* A merge killed with kill -9 leaves its private copy of the output (and
 * its -wal and -shm) beside it; the next merge into that output on the
 * same host removes the copies whose process is gone, and keeps those of
 * a live process and of another host. A copy of an older fabench (named
 * OUT.merge-PID, no host) is kept and named in a note. */
FA_TEST(merge, copies_left_by_killed_merges_are_removed)
{
	char a[1100], out[1100], host[256] = "", dead[1400], live[1400], other[1400], aux[1500];
	char old[1400], oldwal[1500];
	struct fa_proc_result r;
	pid_t child;
	path_in(a, sizeof a, "stale-in.db");
	path_in(out, sizeof out, "stale-out.db");
	FA_REQUIRE(run_shard("tests/suites/tiny.yaml", a, 1, 1, "in") == 0);
	FA_REQUIRE(run_shard("tests/suites/tiny.yaml", out, 1, 1, "out") == 0);
	FA_REQUIRE(gethostname(host, sizeof host - 1) == 0 && host[0] && !strchr(host, '/'));
	/* a process that is gone: a child that has exited and been reaped */
	child = fork();
	if (child == 0)
		_exit(0);
	FA_REQUIRE(child > 0 && waitpid(child, NULL, 0) == child);
	snprintf(dead, sizeof dead, "%s.merge-%s-%ld", out, host, (long)child);
	snprintf(live, sizeof live, "%s.merge-%s-%ld", out, host, (long)getppid());
	snprintf(other, sizeof other, "%s.merge-another-host-%ld", out, (long)child);
	FA_REQUIRE(fa_test_write_file(dead, "old copy") == 0 && fa_test_write_file(live, "x") == 0 &&
		   fa_test_write_file(other, "y") == 0);
	snprintf(aux, sizeof aux, "%s-wal", dead);
	FA_REQUIRE(fa_test_write_file(aux, "old wal") == 0);
	/* an older fabench's copy (no host in the name): kept, and named in a note */
	snprintf(old, sizeof old, "%s.merge-%ld", out, (long)child);
	snprintf(oldwal, sizeof oldwal, "%s-wal", old);
	FA_REQUIRE(fa_test_write_file(old, "older copy") == 0 &&
		   fa_test_write_file(oldwal, "older wal") == 0);
	FA_CHECKF(merge((char *[]){"merge", a, "-o", out, NULL}, &r) == 0, "%s", r.err);
	FA_CHECKF(strstr(r.err, "note: 1 leftover copy named '") && strstr(r.err, ".merge-PID'") &&
			  strstr(r.err, "remove it if no merge into '"),
		  "%s", r.err);
	fa_proc_free(&r);
	FA_CHECK(access(dead, F_OK) != 0 && access(aux, F_OK) != 0);
	FA_CHECK(access(live, F_OK) == 0 && access(other, F_OK) == 0);
	FA_CHECK(access(old, F_OK) == 0 && access(oldwal, F_OK) == 0);
	FA_CHECK(fa_test_db_int(out, "SELECT count(*) FROM runs") == 2);
	unlink(live);
	unlink(other);
	unlink(old);
	unlink(oldwal);
	/* with none left, no note */
	FA_CHECKF(merge((char *[]){"merge", a, "-o", out, NULL}, &r) == 0, "%s", r.err);
	FA_CHECKF(!strstr(r.err, "leftover"), "%s", r.err);
	fa_proc_free(&r);
}

FA_TEST(merge, compare_runs_of_two_files)
{
	char a[1024], b[1024], sa[1100], sb[1100], sbl[1100], missing[1024], none[1100];
	struct fa_proc_result r;
	sqlite3 *raw = NULL;
	path_in(a, sizeof a, "c-base.db");
	path_in(b, sizeof b, "c-head.db");
	/* two jobs, each with its own database, the same label in both */
	FA_REQUIRE(run_shard("tests/suites/tiny.yaml", a, 1, 1, "pr") == 0);
	FA_REQUIRE(run_shard("tests/suites/tiny.yaml", b, 1, 1, "pr") == 0);
	snprintf(sa, sizeof sa, "%s:pr", a);
	snprintf(sb, sizeof sb, "%s:1", b);
	fa_proc_run((char *[]){"compare", sa, sb, NULL}, NULL, 120, &r);
	FA_CHECKF(r.status == 0 && strstr(r.out, sa) && strstr(r.out, sb) &&
			  strstr(r.out, "0 added, 0 removed"),
		  "%d\n%s\n%s", r.status, r.out, r.err);
	fa_proc_free(&r);
	/* a plain spec on one side is a run of --db */
	fa_proc_run((char *[]){"compare", "--db", a, "--format", "json", "pr", sb, NULL}, NULL, 120,
		    &r);
	FA_CHECKF(r.status == 0 && strstr(r.out, "\"removed\": 0"), "%d %s %s", r.status, r.out,
		  r.err);
	fa_proc_free(&r);
	/* another GPU model: refused, unless asked, and then the table says so */
	FA_REQUIRE(sqlite3_open(b, &raw) == SQLITE_OK);
	FA_REQUIRE(sqlite3_exec(raw, "UPDATE runs SET device_name = 'NVIDIA H200'", NULL, NULL,
				NULL) == SQLITE_OK);
	sqlite3_close(raw);
	fa_proc_run((char *[]){"compare", sa, sb, NULL}, NULL, 120, &r);
	FA_CHECKF(r.status == 2 && strstr(r.err, "on 'NVIDIA H200': times of different GPU models "
						 "do not compare; --cross-device"),
		  "%d %s", r.status, r.err);
	fa_proc_free(&r);
	fa_proc_run((char *[]){"compare", "--cross-device", sa, sb, NULL}, NULL, 120, &r);
	FA_CHECKF(r.status == 0 && strstr(r.out, "**different devices"), "%d %s %s", r.status,
		  r.out, r.err);
	fa_proc_free(&r);
	/* unknown files and runs: exit 2, no temporary folder left */
	path_in(missing, sizeof missing, "c-missing.db");
	snprintf(none, sizeof none, "%s:pr", missing);
	fa_proc_run((char *[]){"compare", none, sb, NULL}, NULL, 60, &r);
	FA_CHECKF(r.status == 2 && strstr(r.err, "c-missing.db"), "%d %s", r.status, r.err);
	fa_proc_free(&r);
	snprintf(sbl, sizeof sbl, "%s:nosuchlabel", b);
	fa_proc_run((char *[]){"compare", sa, sbl, NULL}, NULL, 60, &r);
	FA_CHECKF(r.status == 2 && strstr(r.err, "nosuchlabel"), "%d %s", r.status, r.err);
	fa_proc_free(&r);
	FA_CHECK(access(missing, F_OK) != 0);
}

/* 1 when the file at path holds exactly the n bytes of want. */
static int same_bytes(const char *path, const char *want, size_t n)
{
	size_t len = 0;
	char *got = fa_test_read_file(path, &len);
	int same = got && len == n && memcmp(got, want, n) == 0;
	free(got);
	return same;
}

/* A SQLite database of another program given to a reader (an input of
 * merge, report's --db) is refused and left byte for byte as it was:
 * fabench's tables (and WAL) were written into it. */
FA_TEST(merge, a_database_not_fabenchs_is_left_alone)
{
	char foreign[1024], out[1024], wal[1100];
	struct fa_proc_result r;
	sqlite3 *raw = NULL;
	size_t n = 0;
	char *before;
	path_in(foreign, sizeof foreign, "f-foreign.db");
	path_in(out, sizeof out, "f-out.db");
	FA_REQUIRE(sqlite3_open(foreign, &raw) == SQLITE_OK);
	FA_REQUIRE(sqlite3_exec(raw, "CREATE TABLE runs (id INTEGER, who TEXT); "
				     "INSERT INTO runs VALUES (1, 'not fabench')",
				NULL, NULL, NULL) == SQLITE_OK);
	sqlite3_close(raw);
	FA_REQUIRE((before = fa_test_read_file(foreign, &n)) != NULL);
	/* as an input */
	FA_CHECK(merge((char *[]){"merge", foreign, "-o", out, NULL}, &r) == 1);
	FA_CHECKF(strstr(r.err, "f-foreign.db' is not fabench's"), "%s", r.err);
	fa_proc_free(&r);
	FA_CHECK(access(out, F_OK) != 0);
	/* and to a reader */
	fa_proc_run((char *[]){"report", "--db", foreign, NULL}, NULL, 60, &r);
	FA_CHECKF(r.status == 1 && strstr(r.err, "is not fabench's"), "%d %s", r.status, r.err);
	fa_proc_free(&r);
	FA_CHECK(same_bytes(foreign, before, n));
	snprintf(wal, sizeof wal, "%s-wal", foreign);
	FA_CHECK(access(wal, F_OK) != 0);
	FA_CHECK(leftovers(".merge-") == 0);
	free(before);
}

/* An empty file as an input is a database with no runs: it adds nothing
 * and stays empty (its check, a read-only open, wrote fabench's schema
 * into it). */
FA_TEST(merge, an_empty_input_adds_nothing_and_stays_empty)
{
	char empty[1024], out[1024], aux[1100];
	struct fa_proc_result r;
	struct stat st;
	path_in(empty, sizeof empty, "e-empty.db");
	path_in(out, sizeof out, "e-out.db");
	FA_REQUIRE(fa_test_write_file(empty, "") == 0);
	FA_CHECK(merge((char *[]){"merge", empty, "-o", out, NULL}, &r) == 0);
	FA_CHECKF(strstr(r.out, "0 runs added"), "%s%s", r.out, r.err);
	fa_proc_free(&r);
	FA_CHECK(stat(empty, &st) == 0 && st.st_size == 0);
	snprintf(aux, sizeof aux, "%s-wal", empty);
	FA_CHECK(access(aux, F_OK) != 0);
	snprintf(aux, sizeof aux, "%s-shm", empty);
	FA_CHECK(access(aux, F_OK) != 0);
	FA_CHECK(leftovers(".merge-") == 0);
}

/* The two runs of one run --ab share their start, host, seed and command
 * line: merge took side b for a copy of side a and left it out. */
FA_TEST(merge, both_sides_of_an_ab_run)
{
	char ab[1024], out[1024];
	struct fa_proc_result r;
	path_in(ab, sizeof ab, "ab.db");
	path_in(out, sizeof out, "ab-out.db");
	fa_proc_run((char *[]){"run", "tests/suites/tiny.yaml", "--backend", "cpu", "--kernels",
			       "cpu_flash", "--ab-params", "--param", "a:cpu_flash.block_q=16",
			       "--param", "b:cpu_flash.block_q=32", "--label", "pr", "--db", ab,
			       "--quiet", NULL},
		    NULL, 120, &r);
	FA_REQUIRE(r.status == 0);
	fa_proc_free(&r);
	FA_REQUIRE(fa_test_db_int(ab, "SELECT count(*) FROM runs") == 2);
	FA_CHECK(merge((char *[]){"merge", ab, "-o", out, NULL}, &r) == 0);
	FA_CHECKF(strstr(r.out, "2 runs added (8 cases, 8 results"), "%s", r.out);
	fa_proc_free(&r);
	FA_CHECK(fa_test_db_int(out, "SELECT count(*) FROM runs WHERE label IN ('pr-a', 'pr-b') "
				     "AND ab_group IS NOT NULL") == 2);
	/* and merging it again adds nothing */
	FA_CHECK(merge((char *[]){"merge", ab, "-o", out, NULL}, &r) == 0);
	FA_CHECKF(strstr(r.out, "0 runs added") && strstr(r.out, "2 already there"), "%s", r.out);
	fa_proc_free(&r);
	/* the paired comparison of the merged file */
	fa_proc_run((char *[]){"compare", "--db", out, "--ignore-params", "pr-a", "pr-b", NULL}, NULL,
		    120, &r);
	FA_CHECKF(r.status == 0 && strstr(r.out, "paired"), "%d %s %s", r.status, r.out, r.err);
	fa_proc_free(&r);
}

/* db's bytes into a new file at to (and no -wal beside it). */
static int copy_file(const char *db, const char *to)
{
	size_t n = 0;
	char *buf = fa_test_read_file(db, &n);
	FILE *f = fopen(to, "wb");
	int ok = buf && f && fwrite(buf, 1, n, f) == n;
	if (f)
		ok &= fclose(f) == 0;
	free(buf);
	return ok ? 0 : -1;
}

/* A part killed part-way, merged, then finished by run --resume and merged
 * again: the second merge found the run already there and added nothing,
 * so the merged run kept the killed run's cases and stayed incomplete (and
 * out of history) for good. The killed run is modelled by the finished
 * one's file less its last case, left incomplete: the same run, as
 * --resume keeps it. */
FA_TEST(merge, a_resumed_run_merged_again_gains_its_cases)
{
	char a[1024], b[1024], killed[1024], one[1024], plain[1024];
	struct fa_proc_result r;
	path_in(a, sizeof a, "rs-a.db");
	path_in(b, sizeof b, "rs-b.db");
	path_in(killed, sizeof killed, "rs-killed.db");
	path_in(one, sizeof one, "rs-one.db");
	path_in(plain, sizeof plain, "rs-plain.db");
	FA_REQUIRE(run_shard("tests/suites/tiny.yaml", a, 1, 2, "n") == 0);
	FA_REQUIRE(run_shard("tests/suites/tiny.yaml", b, 2, 2, "n") == 0);
	FA_REQUIRE(fa_test_db_int(b, "SELECT count(*) FROM cases") == 2);
	FA_REQUIRE(copy_file(b, killed) == 0);
	FA_REQUIRE(fa_test_db_exec(killed, "PRAGMA foreign_keys = ON; DELETE FROM cases WHERE idx = "
					   "(SELECT max(idx) FROM cases); UPDATE runs SET status = "
					   "'incomplete', finished_at = NULL") == 0);
	/* the shards of one job */
	FA_REQUIRE(merge((char *[]){"merge", a, killed, "-o", one, "--one-run", NULL}, &r) == 0);
	fa_proc_free(&r);
	FA_CHECK(fa_test_db_int(one, "SELECT count(*) FROM cases") == 3);
	FA_CHECK(fa_test_db_int(one, "SELECT status = 'incomplete' FROM runs") == 1);
	FA_CHECK(merge((char *[]){"merge", a, b, "-o", one, "--one-run", NULL}, &r) == 0);
	FA_CHECKF(strstr(r.out, "0 runs added (1 case, 1 result") &&
			  strstr(r.out, "1 run already there gained the cases it lacked") &&
			  !strstr(r.out, "combined run"),
		  "%s", r.out);
	fa_proc_free(&r);
	FA_CHECK(fa_test_db_int(one, "SELECT count(*) FROM runs") == 1);
	FA_CHECK(fa_test_db_int(one, "SELECT count(*) FROM cases") == 4);
	FA_CHECK(fa_test_db_int(one, "SELECT count(*) FROM samples") ==
		 fa_test_db_int(a, "SELECT count(*) FROM samples") +
			 fa_test_db_int(b, "SELECT count(*) FROM samples"));
	FA_CHECK(fa_test_db_int(one, "SELECT status = 'complete' FROM runs") == 1);
	FA_CHECK(fa_test_db_int(one, "SELECT instr(merged_from, 'incomplete') FROM runs") == 0);
	/* a third time: nothing */
	FA_CHECK(merge((char *[]){"merge", a, b, "-o", one, "--one-run", NULL}, &r) == 0);
	FA_CHECKF(strstr(r.out, "0 runs added (0 cases") && strstr(r.out, "2 already there"), "%s",
		  r.out);
	fa_proc_free(&r);
	/* a run merged alone takes the finished run's status and end */
	FA_REQUIRE(merge((char *[]){"merge", killed, "-o", plain, NULL}, &r) == 0);
	fa_proc_free(&r);
	FA_CHECK(merge((char *[]){"merge", b, "-o", plain, NULL}, &r) == 0);
	fa_proc_free(&r);
	FA_CHECK(fa_test_db_int(plain, "SELECT count(*) FROM runs") == 1);
	FA_CHECK(fa_test_db_int(plain, "SELECT count(*) FROM cases") == 2);
	FA_CHECK(fa_test_db_int(plain, "SELECT count(*) FROM runs WHERE status = 'complete' AND "
				       "finished_at IS NOT NULL") == 1);
	/* one part still incomplete: the combined run is not complete */
	path_in(one, sizeof one, "rs-one2.db");
	FA_REQUIRE(merge((char *[]){"merge", killed, "-o", one, "--one-run", NULL}, &r) == 0);
	fa_proc_free(&r);
	FA_REQUIRE(merge((char *[]){"merge", a, "-o", one, "--one-run", NULL}, &r) == 0);
	fa_proc_free(&r);
	FA_CHECK(fa_test_db_int(one, "SELECT count(*) FROM runs WHERE status = 'incomplete'") == 1);
}

/* A merge into a database another program holds open and writes: the
 * writer's rows after the merge are in the file (a merge renamed over it
 * left the writer on the old file, and what it wrote was lost), the
 * merged run is there too, and the file keeps its mode. */
FA_TEST(merge, into_an_open_database_loses_nothing)
{
	char a[1024], b[1024], out[1024];
	struct fa_proc_result r;
	struct stat sb;
	sqlite3 *w = NULL;
	path_in(a, sizeof a, "open-a.db");
	path_in(b, sizeof b, "open-b.db");
	path_in(out, sizeof out, "open-out.db");
	FA_REQUIRE(run_shard("tests/suites/tiny.yaml", a, 1, 2, "a") == 0);
	FA_REQUIRE(run_shard("tests/suites/tiny.yaml", b, 2, 2, "b") == 0);
	FA_REQUIRE(merge((char *[]){"merge", a, "-o", out, NULL}, &r) == 0);
	fa_proc_free(&r);
	FA_REQUIRE(chmod(out, 0640) == 0);
	/* the writer opens the output before the merge and writes after it */
	FA_REQUIRE(sqlite3_open(out, &w) == SQLITE_OK);
	sqlite3_busy_timeout(w, 10000);
	FA_REQUIRE(sqlite3_exec(w, "SELECT count(*) FROM runs", NULL, NULL, NULL) == SQLITE_OK);
	FA_CHECK(merge((char *[]){"merge", b, "-o", out, NULL}, &r) == 0);
	fa_proc_free(&r);
	FA_CHECK(sqlite3_exec(w, "UPDATE runs SET label = 'written-after' WHERE label = 'a'", NULL,
			      NULL, NULL) == SQLITE_OK);
	sqlite3_close(w);
	FA_CHECK(fa_test_db_int(out, "SELECT count(*) FROM runs") == 2);
	FA_CHECK(fa_test_db_int(out, "SELECT count(*) FROM runs WHERE label = 'written-after'") == 1);
	FA_CHECK(fa_test_db_int(out, "SELECT count(*) FROM runs WHERE label = 'b'") == 1);
	FA_CHECK(stat(out, &sb) == 0 && (sb.st_mode & 0777) == 0640);
	FA_CHECK(leftovers("open-out.db.merge-") == 0);
}

/* Two runs of one command begun in the same second (a quick loop on a
 * small suite) are two runs: each has its own uid, so merge copies both
 * (it took the second for a copy of the first); merging them again adds
 * nothing, and a run stored before uids (NULL) keeps the identity it had. */
FA_TEST(merge, two_runs_of_one_second_are_two)
{
	char a[1024], b[1024], out[1024];
	struct fa_proc_result r;
	path_in(a, sizeof a, "sec-a.db");
	path_in(b, sizeof b, "sec-b.db");
	path_in(out, sizeof out, "sec-out.db");
	FA_REQUIRE(run_shard("tests/suites/tiny.yaml", a, 1, 1, "same") == 0);
	FA_REQUIRE(run_shard("tests/suites/tiny.yaml", b, 1, 1, "same") == 0);
	FA_CHECK(fa_test_db_int(a, "SELECT length(uid) FROM runs") == 32);
	/* the same start, host and command on both: only the uid differs */
	const char *same = "UPDATE runs SET started_at = '2026-12-02T07:00:00Z', host = 'h', "
			   "command_line = 'fabench run tiny.yaml'";
	FA_REQUIRE(fa_test_db_exec(a, same) == 0 && fa_test_db_exec(b, same) == 0);
	FA_CHECK(merge((char *[]){"merge", a, b, "-o", out, NULL}, &r) == 0);
	FA_CHECKF(strstr(r.out, "2 runs added"), "%s%s", r.out, r.err);
	fa_proc_free(&r);
	FA_CHECK(merge((char *[]){"merge", a, b, "-o", out, NULL}, &r) == 0);
	FA_CHECKF(strstr(r.out, "0 runs added") && strstr(r.out, "2 already there"), "%s%s", r.out,
		  r.err);
	fa_proc_free(&r);
	/* without uids (runs stored before schema 8) they look like one run,
	 * as they always did */
	path_in(out, sizeof out, "sec-out-old.db");
	FA_REQUIRE(fa_test_db_exec(a, "UPDATE runs SET uid = NULL") == 0 &&
		   fa_test_db_exec(b, "UPDATE runs SET uid = NULL") == 0);
	FA_CHECK(merge((char *[]){"merge", a, b, "-o", out, NULL}, &r) == 0);
	FA_CHECKF(strstr(r.out, "1 run added") && strstr(r.out, "1 already there"), "%s%s", r.out,
		  r.err);
	fa_proc_free(&r);
}
