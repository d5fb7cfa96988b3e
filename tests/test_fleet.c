/* test_fleet.c - runs spread over devices and machines: --shard K/N (a
 * partition by case key, stable under reordering of the suite file),
 * --devices (the longest-first dealer, a worker per device at a time,
 * faulting workers replaced, every result's device stored), and the JUnit
 * XML of --junit. The test plugin pretends to be N devices
 * (FABENCH_TEST_DEVICES), under FABENCH_TEST_LOCK_DIR refuses to load on a
 * device another process holds, and under FABENCH_TEST_PIDS writes down
 * which process ran each launch on which device (one staying worker per
 * device, replaced only when it faults). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../harness/report/junit.h"
#include "../harness/run/fleet.h"
#include "../harness/run/isolate.h"
#include "fixture.h"
#include "proc.h"
#include "test.h"

static void path_in(char *buf, size_t size, const char *name)
{
	snprintf(buf, size, "%s/%s", fa_test_tmpdir(), name);
	unlink(buf);
}

FA_TEST(fleet, shard_parse_and_hash)
{
	struct fa_err e;
	int k = 0, n = 0, seen[4] = {0};
	fa_err_clear(&e);
	FA_CHECK(fa_fleet_parse_shard("2/8", &k, &n, &e) == FA_OK && k == 2 && n == 8);
	FA_CHECK(fa_fleet_parse_shard("1/1", &k, &n, &e) == FA_OK && k == 1 && n == 1);
	const char *bad[] = {"0/2", "3/2", "2", "a/b", "1/", "/2", "1/0", "1/2/3", "-1/2", ""};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		fa_err_clear(&e);
		FA_CHECKF(fa_fleet_parse_shard(bad[i], &k, &n, &e) == FA_ERR_USAGE &&
				  strstr(e.msg, bad[i]),
			  "'%s' accepted or not named: %s", bad[i], e.msg);
	}
	/* a pure function of the key: FNV-1a 64 of "abc" is 0xe71fa2190541574b */
	FA_CHECK(fa_fleet_shard_of("abc", 1000) == (int)(0xe71fa2190541574bull % 1000) + 1);
	FA_CHECK(fa_fleet_shard_of("abc", 1) == 1);
	/* 400 keys spread over 4 shards, none empty */
	for (int i = 0; i < 400; i++) {
		char key[64];
		snprintf(key, sizeof key, "batch=1,heads=%d,q_len=%d", i % 7, i);
		int s = fa_fleet_shard_of(key, 4);
		FA_REQUIRE(s >= 1 && s <= 4);
		seen[s - 1]++;
	}
	for (int i = 0; i < 4; i++)
		FA_CHECKF(seen[i] > 50, "shard %d has %d of 400 keys", i + 1, seen[i]);
}

FA_TEST(fleet, devices_parse_and_lpt)
{
	struct fa_err e;
	int d[FA_FLEET_MAX_DEVICES], n = 0, order[5];
	char text[64];
	const double cost[5] = {1, 5, 3, 5, 0.5};
	fa_err_clear(&e);
	FA_CHECK(fa_fleet_parse_devices("0,2,1", "cuda", d, &n, &e) == FA_OK && n == 3 &&
		 d[0] == 0 && d[1] == 2 && d[2] == 1);
	fa_fleet_devices_text(d, n, text, sizeof text);
	FA_CHECK(strcmp(text, "0,2,1") == 0);
	setenv("FABENCH_TEST_DEVICES", "3", 1);
	FA_CHECK(fa_fleet_parse_devices("all", "test", d, &n, &e) == FA_OK && n == 3 && d[2] == 2);
	unsetenv("FABENCH_TEST_DEVICES");
	FA_CHECK(fa_fleet_parse_devices("0,0", "cuda", d, &n, &e) == FA_ERR_USAGE &&
		 strstr(e.msg, "names device 0 twice"));
	const char *bad[] = {"", "x", "0,", ",1", "1,,2", "0;1", "1000"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		fa_err_clear(&e);
		FA_CHECKF(fa_fleet_parse_devices(bad[i], "cuda", d, &n, &e) == FA_ERR_USAGE,
			  "--devices '%s' accepted", bad[i]);
	}
	/* longest first, ties in index order */
	fa_fleet_lpt_order(cost, 5, order);
	FA_CHECK(order[0] == 1 && order[1] == 3 && order[2] == 2 && order[3] == 0 &&
		 order[4] == 4);
}

/* The keys a database holds, sorted and joined by ';' (malloc'd). */
static char *keys_of(const char *db, const char *where)
{
	char sql[512];
	snprintf(sql, sizeof sql,
		 "SELECT group_concat(key, ';') FROM (SELECT key FROM cases c JOIN runs r ON "
		 "r.id = c.run_id WHERE %s ORDER BY key)",
		 where);
	return fa_test_db_text(db, sql);
}

FA_TEST(fleet, shard_partitions_the_cases_whatever_their_order)
{
	char db[1024], db2[1024], suite[1024];
	struct fa_proc_result r;
	path_in(db, sizeof db, "shard.db");
	path_in(db2, sizeof db2, "shard-reordered.db");
	path_in(suite, sizeof suite, "tiny-reordered.yaml");
	/* tests/suites/tiny.yaml with its axes and their values in another order */
	FILE *f = fopen(suite, "w");
	FA_REQUIRE(f);
	fprintf(f, "suite: tiny\nseed: 7\n"
		   "measure: {warmup: 1, min_samples: 3, min_time_ms: 5, max_time_ms: 20, "
		   "timeout_s: 20}\n"
		   "defaults: {heads: 2, head_dim: 32, dtype: fp32}\n"
		   "axes:\n  mask: [causal, none]\n  seq_len: [48, 16]\n");
	fclose(f);
	for (int k = 1; k <= 3; k++) {
		char shard[16];
		snprintf(shard, sizeof shard, "%d/3", k);
		fa_proc_run((char *[]){"run", "tests/suites/tiny.yaml", "--backend", "cpu",
				       "--kernels", "cpu_flash", "--shard", shard, "--db", db,
				       "--quiet", NULL},
			    NULL, 120, &r);
		FA_CHECKF(r.status == 0, "shard %s: status %d\n%s", shard, r.status, r.err);
		fa_proc_free(&r);
		fa_proc_run((char *[]){"run", suite, "--backend", "cpu", "--kernels", "cpu_flash",
				       "--shard", shard, "--db", db2, "--quiet", NULL},
			    NULL, 120, &r);
		FA_CHECKF(r.status == 0, "reordered shard %s: status %d\n%s", shard, r.status,
			  r.err);
		fa_proc_free(&r);
	}
	/* together the shards ran every case once */
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM runs") == 3);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM cases") == 4);
	FA_CHECK(fa_test_db_int(db, "SELECT count(DISTINCT key) FROM cases") == 4);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM runs WHERE shard = '2/3'") == 1);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM runs WHERE devices IS NULL") == 3);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM results WHERE device IS NOT NULL") == 0);
	/* and each shard took the same cases from the reordered file */
	for (int k = 1; k <= 3; k++) {
		char where[64];
		snprintf(where, sizeof where, "r.shard = '%d/3'", k);
		char *a = keys_of(db, where), *b = keys_of(db2, where);
		FA_CHECKF((!a && !b) || (a && b && strcmp(a, b) == 0), "shard %d: '%s' vs '%s'", k,
			  a ? a : "", b ? b : "");
		free(a);
		free(b);
	}
	/* the shard of each stored case is the hash's */
	char *keys = keys_of(db, "r.shard = '1/3'");
	for (char *p = keys ? strtok(keys, ";") : NULL; p; p = strtok(NULL, ";"))
		FA_CHECKF(fa_fleet_shard_of(p, 3) == 1, "key %s in shard 1", p);
	free(keys);
}

FA_TEST(fleet, bad_options_exit_2_and_write_nothing)
{
	char db[1024];
	struct fa_proc_result r;
	path_in(db, sizeof db, "fleet-bad.db");
	struct {
		const char *opt, *val, *want;
	} cases[] = {
		{"--shard", "3/2", "--shard '3/2': K must be 1 to N"},
		{"--shard", "half", "--shard 'half' must be K/N"},
		{"--devices", "0,0", "--devices '0,0' names device 0 twice"},
		{"--devices", "gpu0", "--devices 'gpu0' must be all or device numbers"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		fa_proc_run((char *[]){"run", "tests/suites/tiny.yaml", "--backend", "cpu",
				       (char *)cases[i].opt, (char *)cases[i].val, "--db", db, NULL},
			    NULL, 60, &r);
		FA_CHECKF(r.status == 2 && strstr(r.err, cases[i].want), "%s %s: %d %s",
			  cases[i].opt, cases[i].val, r.status, r.err);
		fa_proc_free(&r);
	}
	fa_proc_run((char *[]){"run", "tests/suites/tiny.yaml", "--ab", "a.so:b.so", "--devices",
			       "0,1", "--db", db, NULL},
		    NULL, 60, &r);
	FA_CHECKF(r.status == 2 && strstr(r.err, "--ab runs on one device: --devices '0,1' names 2"),
		  "%d %s", r.status, r.err);
	fa_proc_free(&r);
	FA_CHECK(access(db, F_OK) != 0);
}

/* Runs tiny.yaml on the test backend's N pretend devices; returns the status. */
static int run_devices(const char *db, const char *devices, const char *kernels,
		       const char *junit, const char *lockdir)
{
	char plug[1100], lock[1100], *env[5];
	struct fa_proc_result r;
	int status;
	fa_test_plugins_var(plug, sizeof plug);
	snprintf(lock, sizeof lock, "FABENCH_TEST_LOCK_DIR=%s", lockdir);
	env[0] = plug;
	env[1] = "FABENCH_TEST_KERNELS=1";
	env[2] = "FABENCH_TEST_DEVICES=3";
	env[3] = lock;
	env[4] = NULL;
	fa_proc_run((char *[]){"run", "tests/suites/tiny.yaml", "--backend", "test", "--kernels",
			       (char *)kernels, "--devices", (char *)devices, "--repeat", "2",
			       "--junit", (char *)junit, "--db", (char *)db, "--quiet", NULL},
		    env, 300, &r);
	status = r.status;
	if (status != 1)
		fprintf(stderr, "run --devices %s: %d\n%s\n%s\n", devices, r.status, r.out, r.err);
	fa_proc_free(&r);
	return status;
}

FA_TEST(fleet, devices_deal_every_case_and_survive_faults)
{
	char db[1024], junit[1024], lockdir[1024];
	path_in(db, sizeof db, "devices.db");
	path_in(junit, sizeof junit, "devices.xml");
	snprintf(lockdir, sizeof lockdir, "%s", fa_test_tmpdir());
	/* three devices, eight cases (--repeat 2), a kernel that kills its worker in
	 * each: every worker that crashes is replaced and the run finishes */
	FA_CHECK(run_devices(db, "all", "test_correct,test_crash", junit, lockdir) == 1);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM runs WHERE status = 'complete' AND "
			   "devices = '0,1,2'") == 1);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM cases") == 8);
	FA_CHECK(fa_test_db_int(db, "SELECT count(DISTINCT idx) FROM cases") == 8);
	/* right on every device: no worker ever found its device held by another
	 * process of the run (the test plugin's lock) */
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM results WHERE kernel = 'test_correct' "
			   "AND status = 'pass' AND n_samples > 0") == 8);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM results WHERE kernel = 'test_crash' "
			   "AND status = 'error' AND reason LIKE 'worker killed by signal%'") == 8);
	/* each result names its device; the devices shared the work */
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM results WHERE device IS NULL OR "
			   "device NOT IN (0, 1, 2)") == 0);
	FA_CHECK(fa_test_db_int(db, "SELECT count(DISTINCT device) FROM results") >= 2);
	/* a case's kernels ran on one device */
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM (SELECT case_id FROM results GROUP BY "
			   "case_id HAVING count(DISTINCT device) > 1)") == 0);
	char *x = fa_test_read_file(junit, NULL);
	FA_REQUIRE(x);
	FA_CHECK(strstr(x, "tests=\"16\" failures=\"0\" errors=\"8\" skipped=\"0\""));
	FA_CHECK(strstr(x, "<error type=\"error\" message=\"worker killed by signal"));
	FA_CHECK(strstr(x, "device 2</system-out>") || strstr(x, "device 1</system-out>"));
	free(x);

	/* the report names the device of each result: a column per kernel in
	 * markdown, "device" in every JSON result */
	{
		struct fa_proc_result r;
		char *plug_env[] = {"FABENCH_TEST_KERNELS=1", NULL};
		fa_proc_run((char *[]){"report", "--db", db, NULL}, plug_env, 60, &r);
		FA_CHECKF(r.status == 0, "report: %d %s", r.status, r.err);
		FA_CHECKF(strstr(r.out, "test_correct device |") != NULL, "no device column:\n%s",
			  r.out);
		{
			/* the rows with test_crash's error end with its device: 0, 1 or 2 */
			int rows = 0, named = 0;
			for (char *l = r.out; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
				char *e = strchr(l, '\n');
				size_t len = e ? (size_t)(e - l) : strlen(l);
				if (len < 4 || l[0] != '|' || !memmem(l, len, "| error", 7))
					continue;
				rows++;
				named += l[len - 1] == '|' && l[len - 2] == ' ' && l[len - 3] >= '0' &&
					 l[len - 3] <= '2' && l[len - 4] == ' ';
			}
			FA_CHECKF(rows == 8 && named == 8, "%d rows, %d with a device:\n%s", rows, named,
				  r.out);
		}
		fa_proc_free(&r);
		fa_proc_run((char *[]){"report", "--db", db, "--format", "json", NULL}, plug_env, 60,
			    &r);
		FA_CHECK(r.status == 0);
		FA_CHECKF(strstr(r.out, "\"device\": 0") || strstr(r.out, "\"device\": 1") ||
				  strstr(r.out, "\"device\": 2"),
			  "json: %.400s", r.out);
		FA_CHECK(strstr(r.out, "\"device\": null") == NULL);
		fa_proc_free(&r);
	}
}

/* The processes that launched kernels, from a FABENCH_TEST_PIDS file: for
 * each of n_dev devices, how many distinct pids (n_pids[d]); returns the
 * distinct pids in all, or -1 when a line names no device of 0..n_dev. */
static int count_pids(const char *path, int n_dev, int *n_pids)
{
	long seen_pid[256];
	int seen_dev[256], n = 0, dev;
	long pid;
	FILE *f = fopen(path, "r");
	for (int d = 0; d < n_dev; d++)
		n_pids[d] = 0;
	if (!f)
		return 0;
	while (fscanf(f, "%d %ld", &dev, &pid) == 2) {
		int known = 0;
		if (dev < 0 || dev >= n_dev) {
			fclose(f);
			return -1;
		}
		for (int i = 0; i < n; i++)
			known |= seen_pid[i] == pid;
		if (!known && n < 256) {
			seen_pid[n] = pid;
			seen_dev[n++] = dev;
			n_pids[dev]++;
		}
	}
	fclose(f);
	(void)seen_dev;
	return n;
}

/* Runs tiny.yaml --repeat 2 (8 cases) on the test backend's 3 pretend
 * devices with FABENCH_TEST_PIDS=pids and, when crash_once is set,
 * FABENCH_TEST_ONCE=crash_once; extra and extra2 are more options (NULL:
 * none). Returns the exit status. */
static int run_pids(const char *db, const char *devices, const char *kernels, const char *pids,
		    const char *crash_once, const char *extra, const char *extra2)
{
	char plug[1100], lock[1100], pid_env[1100], crash_env[1100], *env[7];
	struct fa_proc_result r;
	int status, n = 0;
	fa_test_plugins_var(plug, sizeof plug);
	snprintf(lock, sizeof lock, "FABENCH_TEST_LOCK_DIR=%s", fa_test_tmpdir());
	snprintf(pid_env, sizeof pid_env, "FABENCH_TEST_PIDS=%s", pids);
	snprintf(crash_env, sizeof crash_env, "FABENCH_TEST_ONCE=%s",
		 crash_once ? crash_once : "");
	env[n++] = plug;
	env[n++] = "FABENCH_TEST_KERNELS=1";
	env[n++] = "FABENCH_TEST_DEVICES=3";
	env[n++] = lock;
	env[n++] = pid_env;
	env[n++] = crash_env;
	env[n] = NULL;
	fa_proc_run((char *[]){"run", "tests/suites/tiny.yaml", "--backend", "test", "--kernels",
			       (char *)kernels, "--devices", (char *)devices, "--repeat", "2",
			       "--db", (char *)db, "--quiet", (char *)extra, (char *)extra2, NULL},
		    env, 300, &r);
	status = r.status;
	if (status != 0 && status != 1)
		fprintf(stderr, "run --devices %s: %d\n%s\n%s\n", devices, r.status, r.out, r.err);
	fa_proc_free(&r);
	return status;
}

FA_TEST(fleet, devices_one_worker_per_device_runs_every_case)
{
	char db[1024], pids[1024];
	int n_pids[3], total;
	path_in(db, sizeof db, "stay.db");
	path_in(pids, sizeof pids, "stay.pids");
	FA_REQUIRE(run_pids(db, "all", "test_correct", pids, NULL, NULL, NULL) == 0);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM cases") == 8);
	FA_CHECK(fa_test_db_int(db, "SELECT count(DISTINCT idx) FROM cases") == 8);
	/* no co-tenant: every worker held its device's lock */
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM results WHERE status = 'pass' AND "
			   "n_samples > 0") == 8);
	total = count_pids(pids, 3, n_pids);
	/* one process per device that ran cases, and only those: 8 cases on at
	 * most 3 processes, so one of them ran several */
	FA_CHECKF(total == fa_test_db_int(db, "SELECT count(DISTINCT device) FROM results"),
		  "%d processes", total);
	for (int d = 0; d < 3; d++) {
		char sql[128];
		snprintf(sql, sizeof sql, "SELECT count(*) FROM results WHERE device = %d", d);
		long long cases = fa_test_db_int(db, sql);
		FA_CHECKF(n_pids[d] == (cases > 0), "device %d: %d processes for %lld cases", d,
			  n_pids[d], cases);
	}
	/* --isolate keeps its fresh process per case */
	path_in(db, sizeof db, "stay-isolate.db");
	path_in(pids, sizeof pids, "stay-isolate.pids");
	FA_REQUIRE(run_pids(db, "0,1", "test_correct", pids, NULL, "--isolate", NULL) == 0);
	total = count_pids(pids, 3, n_pids);
	FA_CHECKF(total == 8 && n_pids[0] + n_pids[1] == 8 && n_pids[2] == 0,
		  "--isolate: %d processes (%d, %d, %d)", total, n_pids[0], n_pids[1], n_pids[2]);
}

FA_TEST(fleet, devices_worker_replaced_after_a_crash)
{
	/* one device, eight cases; the first test_crash launch kills its worker:
	 * a second worker runs the rest, and every case is stored once */
	char db[1024], pids[1024], once[1024];
	int n_pids[3];
	path_in(db, sizeof db, "crash-once.db");
	path_in(pids, sizeof pids, "crash-once.pids");
	path_in(once, sizeof once, "crash-once.flag");
	FA_REQUIRE(run_pids(db, "0", "test_correct,test_crash", pids, once, NULL, NULL) == 1);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM runs WHERE status = 'complete'") == 1);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM cases") == 8);
	FA_CHECK(fa_test_db_int(db, "SELECT count(DISTINCT idx) FROM cases") == 8);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM results WHERE kernel = 'test_crash' "
			   "AND status = 'error' AND reason LIKE 'worker killed by signal%'") == 1);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM results WHERE status = 'pass' AND "
			   "n_samples > 0") == 15);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM results WHERE device = 0") == 16);
	FA_CHECK(count_pids(pids, 3, n_pids) == 2 && n_pids[0] == 2);
}

FA_TEST(fleet, devices_worker_replaced_after_a_timeout)
{
	/* one device, eight cases; the first test_spin launch never returns and
	 * ignores cancellation: its worker is killed (2 x --timeout + 5 s of
	 * silence), the kernel stored as timeout, and a second worker runs the
	 * rest */
	char db[1024], pids[1024], once[1024];
	int n_pids[3];
	path_in(db, sizeof db, "spin-once.db");
	path_in(pids, sizeof pids, "spin-once.pids");
	path_in(once, sizeof once, "spin-once.flag");
	FA_REQUIRE(run_pids(db, "0", "test_correct,test_spin", pids, once, "--timeout", "1") == 1);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM runs WHERE status = 'complete'") == 1);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM cases") == 8);
	FA_CHECK(fa_test_db_int(db, "SELECT count(DISTINCT idx) FROM cases") == 8);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM results WHERE kernel = 'test_spin' "
			   "AND status = 'timeout' AND reason LIKE 'no answer from the worker%'") == 1);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM results WHERE status = 'pass' AND "
			   "n_samples > 0") == 15);
	FA_CHECK(count_pids(pids, 3, n_pids) == 2 && n_pids[0] == 2);
}

FA_TEST(fleet, worker_command_lines)
{
	/* what a staying worker reads: "CASE FROM" lines, then the end */
	int fds[2], ci = -1, from = -1;
	FA_REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0);
	const char *in = "12 3\n0 0\n";
	FA_REQUIRE(write(fds[0], in, strlen(in)) == (ssize_t)strlen(in));
	shutdown(fds[0], SHUT_WR);
	FA_CHECK(fa_isolate_read_command(fds[1], &ci, &from) == 1 && ci == 12 && from == 3);
	FA_CHECK(fa_isolate_read_command(fds[1], &ci, &from) == 1 && ci == 0 && from == 0);
	FA_CHECK(fa_isolate_read_command(fds[1], &ci, &from) == 0);
	close(fds[0]);
	close(fds[1]);
	const char *bad[] = {"x y\n", "1\n", "1 2 3\n", "-1 0\n", "1 -2\n", "4 0",
			     "1 0000000000000000000000000000000000000000000000000000000000000000\n"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		FA_REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0);
		FA_REQUIRE(write(fds[0], bad[i], strlen(bad[i])) == (ssize_t)strlen(bad[i]));
		shutdown(fds[0], SHUT_WR);
		FA_CHECKF(fa_isolate_read_command(fds[1], &ci, &from) == -1, "'%s' accepted",
			  bad[i]);
		close(fds[0]);
		close(fds[1]);
	}
}

/* The "done" records in the n bytes a worker sent (buf: its whole
 * stream), or -1 when they are not a whole number of well-formed records.
 * Record sizes follow the samples each result carries (more on a loaded
 * machine), so bytes do not count cases. */
static int count_done(const unsigned char *buf, size_t n)
{
	size_t off = 0;
	int done = 0;
	while (off < n) {
		struct fa_iso_rec_hdr h;
		if (n - off < sizeof h)
			return -1;
		memcpy(&h, buf + off, sizeof h);
		off += sizeof h;
		if (h.magic != FA_ISO_REC_MAGIC || h.n_samples < 0)
			return -1;
		if (h.type == FA_ISO_REC_RESULT)
			off += sizeof(struct fa_result) + sizeof(double) * (size_t)h.n_samples;
		else if (h.type == FA_ISO_REC_DONE)
			done++;
		else if (h.type != FA_ISO_REC_START)
			return -1;
	}
	return off == n ? done : -1;
}

/* Runs `fabench run tiny.yaml --backend cpu --worker-serve` with `input` as
 * what its parent sends; returns the exit status, stderr in err_out
 * (malloc'd), the bytes the worker sent back in *n_back and the cases it
 * reported done in *n_done (-1: a malformed stream). */
static int serve(const char *input, char **err_out, size_t *n_back, int *n_done)
{
	int fds[2];
	char fd_text[16];
	unsigned char *all = NULL;
	size_t cap = 0;
	struct fa_proc_result r;
	ssize_t got;
	*n_back = 0;
	*n_done = -1;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0)
		return -1;
	/* the worker inherits fds[1] only */
	fcntl(fds[1], F_SETFD, 0);
	snprintf(fd_text, sizeof fd_text, "%d", fds[1]);
	if (write(fds[0], input, strlen(input)) != (ssize_t)strlen(input))
		return -1;
	shutdown(fds[0], SHUT_WR);
	fa_proc_run((char *[]){"run", "tests/suites/tiny.yaml", "--backend", "cpu", "--quiet",
			       "--worker-fd", fd_text, "--worker-serve", NULL},
		    NULL, 120, &r);
	close(fds[1]);
	for (;;) {
		if (*n_back == cap) {
			unsigned char *more = realloc(all, cap + 65536);
			if (!more)
				break;
			all = more;
			cap += 65536;
		}
		if ((got = read(fds[0], all + *n_back, cap - *n_back)) <= 0)
			break;
		*n_back += (size_t)got;
	}
	close(fds[0]);
	*n_done = count_done(all, *n_back);
	free(all);
	*err_out = r.err;
	r.err = NULL;
	fa_proc_free(&r);
	return r.status;
}

FA_TEST(fleet, worker_serve_runs_cases_until_the_end_of_input)
{
	char *err = NULL;
	size_t n = 0;
	int done = -1;
	/* one case, then two, then the end of input: exit 0, one "done" record
	 * per case, the second case's records after the first's on the same
	 * socket */
	FA_CHECK(serve("0 0\n", &err, &n, &done) == 0 && n > 0);
	FA_CHECKF(done == 1, "%d cases done of 1", done);
	free(err);
	FA_CHECK(serve("0 0\n0 0\n", &err, &n, &done) == 0 && n > 0);
	FA_CHECKF(done == 2, "%d cases done of 2", done);
	free(err);
	/* nothing at all: a worker that was never given a case exits 0 */
	FA_CHECK(serve("", &err, &n, &done) == 0 && n == 0 && done == 0);
	free(err);
	/* a command it cannot read, and a case that does not exist (after
	 * one that does) */
	FA_CHECK(serve("zero 0\n", &err, &n, &done) == 1 && n == 0);
	FA_CHECKF(err && strstr(err, "worker: unreadable command from the parent"), "%s", err);
	free(err);
	FA_CHECK(serve("0 0\n99 0\n", &err, &n, &done) == 2 && done == 1);
	FA_CHECKF(err && strstr(err, "worker: no case 99 kernel 0"), "%s", err);
	free(err);
}

FA_TEST(fleet, devices_lock_sees_a_cotenant)
{
	/* the check above can fail: with device 1 held by this process, the run's
	 * workers on device 1 cannot load and their results are errors */
	char db[1024], junit[1024], lockfile[1100];
	const char *dir = fa_test_tmpdir();
	int fd;
	path_in(db, sizeof db, "cotenant.db");
	path_in(junit, sizeof junit, "cotenant.xml");
	snprintf(lockfile, sizeof lockfile, "%s/device-1", dir);
	fd = open(lockfile, O_RDWR | O_CREAT, 0644);
	FA_REQUIRE(fd >= 0);
	FA_REQUIRE(flock(fd, LOCK_EX | LOCK_NB) == 0);
	FA_CHECK(run_devices(db, "0,1", "test_correct", junit, dir) == 1);
	close(fd);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM results WHERE device = 0 AND "
			   "status = 'pass'") >= 1);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM results WHERE device = 1 AND "
			   "status = 'pass'") == 0);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM results WHERE device = 1 AND "
			   "status = 'error'") >= 1);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM cases") == 8);
}

FA_TEST(fleet, junit_escapes_hostile_text)
{
	struct fa_junit *j = fa_junit_new("s<&>\"'");
	struct fa_case c;
	struct fa_result r;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;
	FA_REQUIRE(j);
	memset(&c, 0, sizeof c);
	memset(&r, 0, sizeof r);
	c.index = 4;
	c.key = "k<]]>&\x01";
	r.kernel = "ker\"nel";
	r.status = FA_STATUS_FAIL;
	snprintf(r.reason, sizeof r.reason, "max_abs 3 > 1e-3 & </failure><x a='1'>\x1b[31m");
	FA_REQUIRE(fa_junit_add(j, &c, "lab<el>", "p=\"1\"", &r, -1) == 0);
	r.status = FA_STATUS_SKIP;
	snprintf(r.reason, sizeof r.reason, "needs 9 GB > budget <1 GB>");
	FA_REQUIRE(fa_junit_add(j, &c, NULL, "", &r, 3) == 0);
	f = open_memstream(&buf, &len);
	FA_REQUIRE(f);
	fa_junit_print(j, f);
	fclose(f);
	fa_junit_free(j);
	FA_CHECK(strstr(buf, "<testsuite name=\"s&lt;&amp;&gt;&quot;&apos;\" tests=\"2\" "
			     "failures=\"1\" errors=\"0\" skipped=\"1\""));
	FA_CHECK(strstr(buf, "classname=\"s&lt;&amp;&gt;&quot;&apos;.ker&quot;nel[p=&quot;1&quot;]\""));
	FA_CHECK(strstr(buf, "name=\"case 5: lab&lt;el&gt; (k&lt;]]&gt;&amp;?)\""));
	FA_CHECK(strstr(buf, "<failure type=\"fail\" message=\"max_abs 3 &gt; 1e-3 &amp; "
			     "&lt;/failure&gt;&lt;x a=&apos;1&apos;&gt;?[31m\">"));
	FA_CHECK(strstr(buf, "<skipped message=\"needs 9 GB &gt; budget &lt;1 GB&gt;\"/>"));
	FA_CHECK(strstr(buf, "<system-out>device 3</system-out>"));
	/* nothing unescaped: every '<' opens one of the elements we write */
	for (const char *p = strchr(buf, '<'); p; p = strchr(p + 1, '<'))
		FA_CHECKF(strncmp(p, "<?xml", 5) == 0 || strncmp(p, "<testsuite", 10) == 0 ||
				  strncmp(p, "</testsuite", 11) == 0 ||
				  strncmp(p, "<testcase", 9) == 0 || strncmp(p, "</testcase", 10) == 0 ||
				  strncmp(p, "<failure", 8) == 0 || strncmp(p, "</failure>", 10) == 0 ||
				  strncmp(p, "<skipped", 8) == 0 || strncmp(p, "<system-out>", 12) == 0 ||
				  strncmp(p, "</system-out>", 13) == 0,
			  "stray '<' at: %.40s", p);
	for (const char *p = buf; *p; p++)
		FA_CHECKF((unsigned char)*p >= 0x20 || *p == '\n', "control byte %d", *p);
	free(buf);
}

/* --junit through a link replaces the file the link names, whole, with its
 * mode, and leaves no temporary file beside it */
FA_TEST(fleet, junit_replaces_the_linked_file_whole)
{
	char dir[1100], target[1200], link[1200], db[1200];
	struct fa_proc_result r;
	struct stat st;
	snprintf(dir, sizeof dir, "%s/junit-link", fa_test_tmpdir());
	FA_REQUIRE(mkdir(dir, 0777) == 0 || errno == EEXIST);
	snprintf(target, sizeof target, "%s/target.xml", dir);
	snprintf(link, sizeof link, "%s/link.xml", dir);
	snprintf(db, sizeof db, "%s/j.db", fa_test_tmpdir());
	FILE *f = fopen(target, "w");
	FA_REQUIRE(f);
	fputs("old", f);
	fclose(f);
	FA_REQUIRE(chmod(target, 0600) == 0);
	unlink(link);
	FA_REQUIRE(symlink("target.xml", link) == 0);
	fa_proc_run((char *[]){"run", "tests/suites/tiny.yaml", "--backend", "cpu", "--kernels",
			       "cpu_flash", "--where", "q_len == 16 && mask == 'none'", "--junit",
			       link, "--db", db, "--quiet", NULL},
		    NULL, 120, &r);
	FA_CHECKF(r.status == 0, "%d %s", r.status, r.err);
	fa_proc_free(&r);
	FA_CHECK(lstat(link, &st) == 0 && S_ISLNK(st.st_mode));
	FA_CHECK(stat(target, &st) == 0 && (st.st_mode & 07777) == 0600);
	char *x = fa_test_read_file(target, NULL);
	FA_CHECK(x && strncmp(x, "<?xml", 5) == 0 && strstr(x, "</testsuites>"));
	free(x);
	/* the folder holds the file and the link, nothing else */
	DIR *d = opendir(dir);
	int n = 0;
	FA_REQUIRE(d);
	for (struct dirent *e; (e = readdir(d));)
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			FA_CHECKF(++n <= 2, "left behind: %s", e->d_name);
	closedir(d);
}

FA_TEST(fleet, junit_unwritable_path_fails)
{
	char dir[1100];
	struct fa_proc_result r;
	char db[1024];
	path_in(db, sizeof db, "junit-bad.db");
	snprintf(dir, sizeof dir, "%s/junit-file-not-dir", fa_test_tmpdir());
	FILE *f = fopen(dir, "w");
	FA_REQUIRE(f);
	fclose(f);
	char target[1200];
	snprintf(target, sizeof target, "%s/x.xml", dir);
	fa_proc_run((char *[]){"run", "tests/suites/tiny.yaml", "--backend", "cpu", "--kernels",
			       "cpu_flash", "--where", "q_len == 16 && mask == 'none'", "--junit",
			       target, "--db", db, "--quiet", NULL},
		    NULL, 120, &r);
	FA_CHECKF(r.status == 1 && strstr(r.err, "cannot write junit file"), "%d %s", r.status,
		  r.err);
	fa_proc_free(&r);
	/* the run itself is stored */
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM cases") == 1);
}
