/* test_hostile.c - hostile input and a killed parent: the file reader that
 * suites, includes and import share (devices, FIFOs, folders, files too
 * large), the limits of the where parser and of a suite's YAML (deep
 * nesting, alias bombs) through the real binary, and --isolate workers that
 * must die with a parent killed by SIGKILL.
 *
 * Calls that a bug would turn into a hang (reading a FIFO) run in a child
 * with an alarm, so a regression fails the test instead of stopping the run.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "../harness/store/import.h"
#include "../harness/store/store.h"
#include "../harness/suite/suite.h"
#include "../harness/base/text.h"
#include "../harness/base/util.h"
#include "fixture.h"
#include "proc.h"
#include "test.h"

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

/* tmpdir/name, removed first. */
static void tmp_path(char *buf, size_t size, const char *name)
{
	snprintf(buf, size, "%s/%s", fa_test_tmpdir(), name);
	unlink(buf);
}

static void write_text(const char *path, const char *text)
{
	if (fa_test_write_file(path, text) != 0)
		FA_CHECKF(0, "cannot write %s", path);
}

/* A sparse file of `bytes` bytes (no disk used). */
static void sparse_file(const char *path, off_t bytes)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	FA_REQUIRE(fd >= 0);
	FA_CHECK(ftruncate(fd, bytes) == 0);
	close(fd);
}

/* What one of the readers made of a path: its return code and message. */
struct outcome {
	int rc;
	char msg[3300];
};

enum reader { R_FILE, R_SUITE, R_IMPORT };

static void read_with(enum reader which, const char *path, struct outcome *o)
{
	struct fa_err err;
	fa_err_clear(&err);
	memset(o, 0, sizeof *o);
	if (which == R_FILE) {
		char *buf = NULL, why[160] = "";
		size_t len = 0;
		o->rc = fa_read_file(path, 100, &buf, &len, NULL, why, sizeof why);
		snprintf(o->msg, sizeof o->msg, "%s", why);
		free(buf);
	} else if (which == R_SUITE) {
		struct fa_suite s;
		o->rc = fa_suite_load(path, 0, &s, &err);
		snprintf(o->msg, sizeof o->msg, "%s:%d:%d: %s", err.file, err.line, err.col, err.msg);
		fa_suite_free(&s);
	} else {
		struct fa_import im;
		o->rc = fa_import_read(path, FA_IMPORT_AUTO, &im, &err);
		snprintf(o->msg, sizeof o->msg, "%s", err.msg);
		fa_import_free(&im);
	}
}

/* read_with in a child with a 10 s alarm: a reader that blocks (on a FIFO)
 * fails the check instead of hanging the tests. */
static void read_in_child(enum reader which, const char *path, struct outcome *o)
{
	int fds[2], st = 0;
	pid_t pid;
	memset(o, 0, sizeof *o);
	FA_REQUIRE(pipe(fds) == 0);
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	FA_REQUIRE(pid >= 0);
	if (pid == 0) {
		struct outcome r;
		close(fds[0]);
		alarm(10);
		read_with(which, path, &r);
		if (write(fds[1], &r, sizeof r) != (ssize_t)sizeof r)
			_exit(3);
		_exit(0);
	}
	close(fds[1]);
	ssize_t got = read(fds[0], o, sizeof *o);
	close(fds[0]);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	FA_CHECKF(WIFEXITED(st) && WEXITSTATUS(st) == 0 && got == (ssize_t)sizeof *o,
		  "reading %s did not come back (%s %d): a blocked open or read?", path,
		  WIFSIGNALED(st) ? "signal" : "status",
		  WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
	if (got != (ssize_t)sizeof *o)
		o->rc = -1;
}

#define EXPECT(o, want_rc, want_msg)                                                          \
	FA_CHECKF((o).rc == (want_rc) && strcmp((o).msg, (want_msg)) == 0,                    \
		  "got rc %d '%s'\n  expected rc %d '%s'", (o).rc, (o).msg, (int)(want_rc),     \
		  (want_msg))

/* ---- the shared reader */

FA_TEST(hostile, read_file_takes_regular_files_only)
{
	char fifo[1024], small[1024], exact[1024], over[1024], text[101];
	struct outcome o;
	char *buf = NULL, why[160];
	size_t len = 0;
	struct stat st;
	tmp_path(fifo, sizeof fifo, "fifo");
	FA_REQUIRE(mkfifo(fifo, 0600) == 0);
	read_in_child(R_FILE, "/dev/zero", &o);
	EXPECT(o, FA_ERR_INPUT, "is not a regular file (a character device)");
	read_in_child(R_FILE, fifo, &o);
	EXPECT(o, FA_ERR_INPUT, "is not a regular file (a fifo)");
	read_in_child(R_FILE, fa_test_tmpdir(), &o);
	EXPECT(o, FA_ERR_INPUT, "is not a regular file (a directory)");
	read_in_child(R_FILE, "/nonexistent/x.yaml", &o);
	EXPECT(o, FA_ERR_NOT_FOUND, "No such file or directory");
	/* the limit (100 bytes here) is inclusive; one byte more is refused
	 * from fstat, and a file of /proc (size 0 in fstat) while it is read */
	memset(text, 'x', 100);
	text[100] = '\0';
	tmp_path(exact, sizeof exact, "exact");
	write_text(exact, text);
	FA_CHECK(fa_read_file(exact, 100, &buf, &len, &st, why, sizeof why) == FA_OK);
	FA_CHECK(buf && len == 100 && memcmp(buf, text, 100) == 0 && buf[100] == '\0');
	FA_CHECK(st.st_size == 100 && S_ISREG(st.st_mode));
	free(buf);
	tmp_path(over, sizeof over, "over");
	sparse_file(over, 101);
	read_with(R_FILE, over, &o);
	EXPECT(o, FA_ERR_INPUT, "is too large (101 bytes; at most 100 B)");
	read_with(R_FILE, "/proc/self/status", &o);
	EXPECT(o, FA_ERR_INPUT, "is too large (more than 100 B)");
	/* an empty file is a file */
	tmp_path(small, sizeof small, "empty");
	write_text(small, "");
	FA_CHECK(fa_read_file(small, 100, &buf, &len, NULL, why, sizeof why) == FA_OK);
	FA_CHECK(buf && len == 0 && buf[0] == '\0');
	free(buf);
}

/* ---- suites and includes */

FA_TEST(hostile, suite_and_include_refuse_devices_fifos_folders_and_huge_files)
{
	char fifo[1024], big[1024], suite[1024], want[1200];
	struct outcome o;
	static const struct {
		const char *include, *why;
	} incs[] = {
		{"/dev/zero", "is not a regular file (a character device)"},
		{"fifo", "is not a regular file (a fifo)"},
		{".", "is not a regular file (a directory)"},
		{"big.yaml", "is too large (16777217 bytes; at most 16.0 MiB)"},
	};
	tmp_path(fifo, sizeof fifo, "fifo");
	FA_REQUIRE(mkfifo(fifo, 0600) == 0);
	tmp_path(big, sizeof big, "big.yaml");
	sparse_file(big, (off_t)FA_SUITE_FILE_MAX + 1);
	/* the suite itself: no position, the file named */
	read_in_child(R_SUITE, "/dev/zero", &o);
	EXPECT(o, FA_ERR_INPUT,
	       ":0:0: suite file '/dev/zero' is not a regular file (a character device)");
	read_in_child(R_SUITE, fifo, &o);
	snprintf(want, sizeof want, ":0:0: suite file '%s' is not a regular file (a fifo)", fifo);
	EXPECT(o, FA_ERR_INPUT, want);
	read_in_child(R_SUITE, fa_test_tmpdir(), &o);
	snprintf(want, sizeof want, ":0:0: suite file '%s' is not a regular file (a directory)",
		 fa_test_tmpdir());
	EXPECT(o, FA_ERR_INPUT, want);
	read_in_child(R_SUITE, big, &o);
	snprintf(want, sizeof want,
		 ":0:0: suite file '%s' is too large (16777217 bytes; at most 16.0 MiB)", big);
	EXPECT(o, FA_ERR_INPUT, want);
	/* an include: at the include entry, the name as written */
	tmp_path(suite, sizeof suite, "top.yaml");
	for (size_t i = 0; i < sizeof incs / sizeof incs[0]; i++) {
		char text[256];
		snprintf(text, sizeof text, "defaults: {heads: 1, head_dim: 8, seq_len: 8}\n"
					    "include: [%s]\n", incs[i].include);
		write_text(suite, text);
		read_in_child(R_SUITE, suite, &o);
		snprintf(want, sizeof want, "%s:2:11: include '%s' %s", suite, incs[i].include,
			 incs[i].why);
		EXPECT(o, FA_ERR_INPUT, want);
	}
}

/* ---- import */

FA_TEST(hostile, import_refuses_devices_fifos_folders_and_huge_files)
{
	char fifo[1024], big[1024], db[1024], want[1200];
	struct outcome o;
	struct fa_proc_result r;
	struct stat st;
	tmp_path(fifo, sizeof fifo, "fifo.jsonl");
	FA_REQUIRE(mkfifo(fifo, 0600) == 0);
	tmp_path(big, sizeof big, "big.jsonl");
	sparse_file(big, (off_t)FA_IMPORT_FILE_MAX + 1);
	read_in_child(R_IMPORT, "/dev/zero", &o);
	EXPECT(o, FA_ERR_INPUT, "import file '/dev/zero' is not a regular file (a character device)");
	read_in_child(R_IMPORT, fifo, &o);
	snprintf(want, sizeof want, "import file '%s' is not a regular file (a fifo)", fifo);
	EXPECT(o, FA_ERR_INPUT, want);
	read_in_child(R_IMPORT, fa_test_tmpdir(), &o);
	snprintf(want, sizeof want, "import file '%s' is not a regular file (a directory)",
		 fa_test_tmpdir());
	EXPECT(o, FA_ERR_INPUT, want);
	read_in_child(R_IMPORT, big, &o);
	snprintf(want, sizeof want, "import file '%s' is too large (268435457 bytes; at most 256 MiB)",
		 big);
	EXPECT(o, FA_ERR_INPUT, want);
	/* the command: exit 2, no database made */
	tmp_path(db, sizeof db, "import.db");
	const char *paths[] = {"/dev/zero", fifo, big};
	for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
		fa_proc_run((char *[]){"import", (char *)paths[i], "--db", db, NULL}, NULL, 30, &r);
		FA_CHECKF(r.status == 2 && strstr(r.err, "fabench import: error: import file '"),
			  "import %s: status %d: %s", paths[i], r.status, r.err);
		FA_CHECKF(stat(db, &st) != 0, "import %s created %s", paths[i], db);
		fa_proc_free(&r);
	}
}

/* ---- the where parser and the YAML limits, through the binary */

/* A string of n copies of unit between head and tail (malloc'd). */
static char *repeat(const char *head, const char *unit, int n, const char *tail)
{
	size_t hl = strlen(head), ul = strlen(unit), tl = strlen(tail);
	char *s = malloc(hl + ul * (size_t)n + tl + 1), *w = s;
	if (!s)
		return NULL;
	memcpy(w, head, hl);
	w += hl;
	for (int i = 0; i < n; i++, w += ul)
		memcpy(w, unit, ul);
	memcpy(w, tail, tl + 1);
	return s;
}

FA_TEST(hostile, deep_where_exits_2_not_sigsegv)
{
	char suite[1024];
	struct fa_proc_result r;
	/* 13000 '(' killed fabench with SIGSEGV: on the command line ... */
	char *open13k = repeat("", "(", 13000, "heads > 1");
	char *chain = repeat("heads", " + 1", 20000, " > 1"); /* exec takes 128 KiB */
	char *nots = repeat("", "!", 100000, "heads");
	FA_REQUIRE(open13k && chain && nots);
	fa_proc_run((char *[]){"list", "tests/suites/tiny.yaml", "--where", open13k, NULL}, NULL, 60,
		    &r);
	FA_CHECKF(r.status == 2 && strstr(r.err, "--where:1:257: expression nested too deeply: more "
						 "than 256 parentheses or prefix operators open"),
		  "status %d: %.300s", r.status, r.err);
	fa_proc_free(&r);
	/* a chain of operators, one inside the next: the evaluator recursed on it */
	fa_proc_run((char *[]){"list", "tests/suites/tiny.yaml", "--where", chain, NULL}, NULL, 60,
		    &r);
	FA_CHECKF(r.status == 2 && strstr(r.err, "--where:1:4103: expression too deep: more than "
						 "1024 operators inside one another"),
		  "status %d: %.300s", r.status, r.err);
	fa_proc_free(&r);
	fa_proc_run((char *[]){"list", "tests/suites/tiny.yaml", "--where", nots, NULL}, NULL, 60,
		    &r);
	FA_CHECKF(r.status == 2 && strstr(r.err, "--where:1:257: expression nested too deeply"),
		  "status %d: %.300s", r.status, r.err);
	fa_proc_free(&r);
	/* ... and in a 40 KB suite */
	tmp_path(suite, sizeof suite, "deep_where.yaml");
	char *text = repeat("defaults: {heads: 1, head_dim: 8, seq_len: 8}\nwhere: \"", "(", 13000,
			    "heads > 1\"\n");
	FA_REQUIRE(text);
	write_text(suite, text);
	fa_proc_run((char *[]){"list", suite, NULL}, NULL, 60, &r);
	FA_CHECKF(r.status == 2 && strstr(r.err, ":2:265: expression nested too deeply"),
		  "status %d: %.300s", r.status, r.err);
	fa_proc_free(&r);
	free(text);
	text = repeat("defaults: {heads: 1, head_dim: 8, seq_len: 8}\nwhere: \"", "!", 100000,
		      "heads\"\n");
	FA_REQUIRE(text);
	write_text(suite, text);
	fa_proc_run((char *[]){"list", suite, NULL}, NULL, 60, &r);
	FA_CHECKF(r.status == 2 && strstr(r.err, ":2:265: expression nested too deeply"),
		  "status %d: %.300s", r.status, r.err);
	fa_proc_free(&r);
	free(text);
	free(open13k);
	free(chain);
	free(nots);
}

/* 400 KB of flow nesting: libyaml alone took minutes on it (quadratic in the
 * depth); the streaming check refuses it at the 65th level at once. */
FA_TEST(hostile, deep_yaml_fails_fast)
{
	char suite[1024];
	struct fa_suite s;
	struct fa_err err;
	static const struct {
		const char *head, *unit, *tail, *where;
	} shapes[] = {
		{"axes: {batch: ", "[", "1", ":1:77: yaml nested more than 64 levels deep"},
		{"defaults: ", "{a: ", "1", ":1:263: yaml nested more than 64 levels deep"},
	};
	tmp_path(suite, sizeof suite, "deep.yaml");
	for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
		char *text = repeat(shapes[i].head, shapes[i].unit, 100000, shapes[i].tail);
		char want[1200];
		FA_REQUIRE(text);
		write_text(suite, text);
		free(text);
		fa_err_clear(&err);
		double t0 = now_s();
		enum fa_rc rc = fa_suite_load(suite, 0, &s, &err);
		double dt = now_s() - t0;
		fa_suite_free(&s);
		snprintf(want, sizeof want, "%s%s", suite, shapes[i].where);
		char got[3300];
		snprintf(got, sizeof got, "%s:%d:%d: %s", err.file, err.line, err.col, err.msg);
		FA_CHECKF(rc == FA_ERR_INPUT && strcmp(got, want) == 0, "got %s\nexpected %s", got,
			  want);
		/* minutes before; milliseconds now (2 s leaves room for a busy
		 * machine and the sanitizers) */
		FA_CHECKF(dt < 2.0, "shape %zu took %.2f s", i, dt);
	}
}

/* ---- a plugin's text, through every writer */

/* A device name and a skip reason as a plugin may word them: escape
 * sequences (clear the screen, set the window title, a C1 CSI), CR, bytes
 * that are not UTF-8, and the quotes and markup of every output format. */
#define HOSTILE_DEVICE "GPU \x1b[2J\x1b]0;owned\x07 \r\xc2\x9b" "31m \xff\xfe 'q\" `id` |x| */ <&>"
/* HOSTILE_DEVICE as a JSON string's text */
#define HOSTILE_DEVICE_JSON "GPU \\u001b[2J\\u001b]0;owned\\u0007 \\r\xc2\x9b" \
	"31m \\ufffd\\ufffd 'q\\\" `id` |x| */ <&>"
#define HOSTILE_WHY "why \x1b[31mred\x1b[0m\r\n#define X */ \xc0\xaf <&> end"

/* The environment of a run of the test backend whose device and
 * test_correct's skip reason are those: env needs 5 entries. */
static void hostile_env(char *env[5], char plug[1100])
{
	const char *p = getenv("FABENCH_TEST_PLUGIN");
	snprintf(plug, 1100, "FABENCH_PLUGINS=%s", p ? p : "build/libfabench-test.so");
	env[0] = plug;
	env[1] = "FABENCH_TEST_KERNELS=1";
	env[2] = "FABENCH_TEST_DEVICE_NAME=" HOSTILE_DEVICE;
	env[3] = "FABENCH_TEST_SKIP_WHY=" HOSTILE_WHY;
	env[4] = NULL;
}

/* The offset of the first byte of text a terminal would obey (a C0 control
 * other than a line feed or tab, DEL, a C1 control in UTF-8), or -1. */
static long terminal_control_at(const char *text)
{
	for (const unsigned char *p = (const unsigned char *)text; *p; p++)
		if ((*p < 0x20 && *p != '\n' && *p != '\t') || *p == 0x7f ||
		    (p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f))
			return (long)(p - (const unsigned char *)text);
	return -1;
}

/* run prints the device's name and each skip reason: a plugin's escape
 * sequences reached the terminal (ESC [ 2 J cleared it) */
FA_TEST(hostile, run_prints_no_control_characters_of_a_plugin)
{
	char db[1024], plug[1100], *env[5];
	struct fa_proc_result r;
	long at;
	tmp_path(db, sizeof db, "plugin_text.db");
	hostile_env(env, plug);
	fa_proc_run((char *[]){"run", "tests/suites/tiny.yaml", "--backend", "test", "--kernels",
			       "test_correct,test_wrong", "--db", db, NULL},
		    env, 120, &r);
	FA_CHECKF(r.status == 1 && strstr(r.out, "skip    why ?[31mred?[0m??#define X */"),
		  "status %d: %.2000s%.500s", r.status, r.out, r.err);
	FA_CHECKF((at = terminal_control_at(r.out)) < 0, "stdout has byte 0x%02x at %ld: %.200s",
		  at < 0 ? 0 : (unsigned char)r.out[at], at, at < 0 ? "" : r.out + (at > 40 ? at - 40 : 0));
	FA_CHECKF((at = terminal_control_at(r.err)) < 0, "stderr has byte 0x%02x at %ld: %.200s",
		  at < 0 ? 0 : (unsigned char)r.err[at], at, at < 0 ? "" : r.err + (at > 40 ? at - 40 : 0));
	fa_proc_free(&r);
}

/* Two runs of the test backend with the hostile device and skip reason in
 * db (the second with a JUnit file at junit, when not NULL): 0 when both
 * ran as expected (status 1: test_wrong fails). */
static int hostile_runs(const char *db, const char *junit)
{
	char plug[1100], *env[5];
	struct fa_proc_result r;
	int ok = 1;
	hostile_env(env, plug);
	for (int i = 0; i < 2 && ok; i++) {
		fa_proc_run((char *[]){"run", "tests/suites/tiny.yaml", "--backend", "test",
				       "--kernels", "test_correct,test_wrong", "--db", (char *)db,
				       "--quiet", i && junit ? "--junit" : NULL, (char *)junit, NULL},
			    env, 120, &r);
		FA_CHECKF(r.status == 1, "run %d: status %d: %.500s", i + 1, r.status, r.err);
		ok = r.status == 1;
		fa_proc_free(&r);
	}
	return ok ? 0 : -1;
}

/* Every JSON document of the runs: the device's name and the reasons as
 * escapes and U+FFFD, valid UTF-8 with no raw control character (a byte
 * that is not UTF-8 made the report's JSON invalid) */
FA_TEST(hostile, json_of_a_plugins_text_is_valid)
{
	char db[1024];
	struct fa_proc_result r;
	static const char *const cmds[][6] = {
		{"report", "--format", "json", NULL},
		{"compare", "1", "2", "--format", "json", NULL},
		{"history", "--format", "json", NULL},
	};
	tmp_path(db, sizeof db, "plugin_json.db");
	if (hostile_runs(db, NULL) != 0)
		return;
	for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
		char *argv[10];
		int n = 0;
		long at;
		for (; cmds[i][n]; n++)
			argv[n] = (char *)cmds[i][n];
		argv[n++] = "--db";
		argv[n++] = db;
		argv[n] = NULL;
		fa_proc_run(argv, NULL, 60, &r);
		FA_CHECKF(r.status == 0 || r.status == 1, "%s: status %d: %.500s", cmds[i][0],
			  r.status, r.err);
		FA_CHECKF((at = fa_test_utf8_invalid_at(r.out, strlen(r.out))) < 0,
			  "%s: byte 0x%02x at %ld is not UTF-8", cmds[i][0], at < 0 ? 0 : (unsigned char)r.out[at], at);
		for (const char *p = r.out; *p; p++)
			if ((unsigned char)*p < 0x20 && *p != '\n') {
				FA_CHECKF(0, "%s: raw control character 0x%02x at %ld", cmds[i][0],
					  (unsigned char)*p, (long)(p - r.out));
				break;
			}
		FA_CHECKF(strstr(r.out, HOSTILE_DEVICE_JSON), "%s: the device's name is not in the "
			  "JSON: %.300s", cmds[i][0], r.out);
		fa_proc_free(&r);
	}
}

/* tune's JSON (a writer of its own), of a sweep on the hostile device */
FA_TEST(hostile, tune_json_of_a_plugins_text_is_valid)
{
	char db[1024], plug[1100], *env[5];
	struct fa_proc_result r;
	long at;
	tmp_path(db, sizeof db, "plugin_tune.db");
	hostile_env(env, plug);
	fa_proc_run((char *[]){"tune", "tests/suites/tiny.yaml", "--backend", "test", "--kernel",
			       "test_delay", "--param", "delay_pct=0,1", "--format", "json", "--db",
			       db, NULL},
		    env, 120, &r);
	FA_CHECKF(r.status == 0, "status %d: %.500s", r.status, r.err);
	FA_CHECKF((at = fa_test_utf8_invalid_at(r.out, strlen(r.out))) < 0,
		  "byte 0x%02x at %ld is not UTF-8", at < 0 ? 0 : (unsigned char)r.out[at], at);
	FA_CHECKF(strstr(r.out, HOSTILE_DEVICE_JSON), "the device's name is not in the JSON: %.300s",
		  r.out);
	fa_proc_free(&r);
}

/* The JUnit XML of a run: the skip reason in its attribute escaped, a byte
 * that is not UTF-8 as U+FFFD (it was copied, and the document, which says
 * encoding="UTF-8", was not well-formed: CI's parser refused all of it) */
FA_TEST(hostile, junit_of_a_plugins_text_is_well_formed)
{
	char db[1024], xml[1024], *text;
	long at;
	tmp_path(db, sizeof db, "plugin_junit.db");
	tmp_path(xml, sizeof xml, "plugin.xml");
	if (hostile_runs(db, xml) != 0)
		return;
	text = fa_test_read_file(xml, NULL);
	FA_REQUIRE(text);
	FA_CHECKF((at = fa_test_utf8_invalid_at(text, strlen(text))) < 0,
		  "byte 0x%02x at %ld is not UTF-8", at < 0 ? 0 : (unsigned char)text[at], at);
	FA_CHECKF(strstr(text, "<skipped message=\"why ?[31mred?[0m\r\n#define X */ "
			       "\xef\xbf\xbd\xef\xbf\xbd &lt;&amp;&gt; end\"/>"),
		  "no escaped skip reason in %.1500s", text);
	free(text);
}

/* Prints e as the commands do, into a malloc'd string. */
static char *printed(const struct fa_err *e, const char *prefix)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	if (!f)
		return NULL;
	fa_err_print(e, f, prefix);
	fclose(f);
	return text;
}

/* An input error quotes a suite's or a file's value: a line feed or a tab
 * in it (a double-quoted YAML "\n") prints as '?', as every other control
 * character, so that a value cannot print a line of its own ("fabench: all
 * fine"). Other errors keep their lines (gnuplot's stderr: test_plot.c). */
FA_TEST(hostile, input_errors_print_no_line_feeds)
{
	static const struct fa_loc loc = {"no-such-file.yaml", 3, 7};
	struct fa_err e;
	char *text;
	fa_err_clear(&e);
	fa_err_at(&e, &loc, "tag 'ok\nfabench: all fine' is\tbad");
	text = printed(&e, "fabench list");
	FA_CHECKF(text && strcmp(text, "no-such-file.yaml:3:7: tag 'ok?fabench: all fine' is?bad\n") == 0,
		  "printed:\n%s", text);
	free(text);
	/* without a file: list's --where, which a value of the command line fills */
	fa_err_clear(&e);
	fa_err_set(&e, FA_ERR_INPUT, "no case of suite s matches --where 'a\nb\tc'");
	text = printed(&e, "fabench list");
	FA_CHECKF(text && strcmp(text, "fabench list: error: no case of suite s matches "
				       "--where 'a?b?c'\n") == 0,
		  "printed:\n%s", text);
	free(text);
	fa_err_clear(&e);
	fa_err_set(&e, FA_ERR_BACKEND, "gnuplot failed: one\n\ttwo\x1b[2J");
	text = printed(&e, "fabench plot");
	FA_CHECKF(text && strcmp(text, "fabench plot: error: gnuplot failed: one\n\ttwo?[2J\n") == 0,
		  "printed:\n%s", text);
	free(text);
	/* not an input error, still a quoted argument: report's missing --db */
	fa_err_clear(&e);
	fa_err_set(&e, FA_ERR_NOT_FOUND, "no database at 'nope\nfabench: ok'");
	text = printed(&e, "fabench report");
	FA_CHECKF(text && strcmp(text, "fabench report: error: no database at 'nope?fabench: ok'\n") == 0,
		  "printed:\n%s", text);
	free(text);
	/* through the command: the suite's tag stays on its line */
	struct fa_proc_result r;
	fa_proc_run((char *[]){"list", "suites/bad/tag_line_feed.yaml", NULL}, NULL, 60, &r);
	FA_CHECKF(r.status == 2 && strstr(r.err, "tag 'ok?fabench: all fine' holds") &&
			  !strstr(r.err, "\nfabench: all fine"),
		  "status %d: %.500s", r.status, r.err);
	fa_proc_free(&r);
	fa_proc_run((char *[]){"report", "--db", "nope\nfabench: ok", NULL}, NULL, 60, &r);
	FA_CHECKF(r.status == 2 && strstr(r.err, "'nope?fabench: ok'") && !strstr(r.err, "\nfabench: ok"),
		  "status %d: %.500s", r.status, r.err);
	fa_proc_free(&r);
}

/* A usage error quotes what it was given (an option, a stored run's
 * command line for --resume): its control characters print as '?' */
FA_TEST(hostile, usage_errors_print_no_control_characters)
{
	char db[1024];
	struct fa_proc_result r;
	long at;
	fa_proc_run((char *[]){"list", "--x\x1b]0;owned\x07\r", NULL}, NULL, 60, &r);
	FA_CHECKF(r.status == 2 && strstr(r.err, "fabench list: unknown option '--x?]0;owned?" "?'"),
		  "status %d: %.300s", r.status, r.err);
	FA_CHECKF((at = terminal_control_at(r.err)) < 0, "stderr has byte 0x%02x at %ld",
		  at < 0 ? 0 : (unsigned char)r.err[at], at);
	fa_proc_free(&r);
	/* a database from elsewhere whose run has a command line run cannot read */
	tmp_path(db, sizeof db, "resume_text.db");
	fa_proc_run((char *[]){"run", "tests/suites/tiny.yaml", "--backend", "cpu", "--where",
			       "q_len == 16 && mask == none", "--db", db, "--quiet", NULL},
		    NULL, 120, &r);
	FA_CHECKF(r.status == 0, "status %d: %.300s", r.status, r.err);
	fa_proc_free(&r);
	fa_proc_run((char *[]){"run", "--resume", "1", "--db", db, NULL}, NULL, 60, &r);
	fa_proc_free(&r);
	{
		struct fa_store *s = NULL;
		struct fa_err err;
		fa_err_clear(&err);
		FA_REQUIRE(fa_store_open(db, 0, &s, &err) == FA_OK);
		FA_CHECK(sqlite3_exec(fa_store_db(s), "UPDATE runs SET status = 'incomplete', "
						      "command_line = 'fabench run --x' || char(27) || '[2J'",
				      NULL, NULL, NULL) == SQLITE_OK);
		fa_store_close(s);
	}
	fa_proc_run((char *[]){"run", "--resume", "1", "--db", db, NULL}, NULL, 60, &r);
	FA_CHECKF(r.status == 2 && strstr(r.err, "cannot read the command line of run 1: "
						 "'fabench run --x?[2J'"),
		  "status %d: %.300s", r.status, r.err);
	FA_CHECKF((at = terminal_control_at(r.err)) < 0, "stderr has byte 0x%02x at %ld",
		  at < 0 ? 0 : (unsigned char)r.err[at], at);
	fa_proc_free(&r);
}

/* ---- --isolate workers die with their parent */

/* 1 when process pid's command line has the argument arg. */
static int has_arg(const char *pid, const char *arg)
{
	char path[300], buf[4096];
	FILE *f;
	size_t n;
	snprintf(path, sizeof path, "/proc/%s/cmdline", pid);
	if (!(f = fopen(path, "r")))
		return 0;
	n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = '\0';
	for (size_t i = 0; i < n; i += strlen(buf + i) + 1)
		if (strcmp(buf + i, arg) == 0)
			return 1;
	return 0;
}

/* The pid of an --isolate worker (a child running with --worker-fd) of
 * parent, from /proc/PID/stat, or 0. */
static pid_t worker_of(pid_t parent)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	pid_t found = 0;
	if (!d)
		return 0;
	while (!found && (de = readdir(d))) {
		char path[300], buf[512];
		FILE *f;
		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof path, "/proc/%s/stat", de->d_name);
		if (!(f = fopen(path, "r")))
			continue;
		size_t n = fread(buf, 1, sizeof buf - 1, f);
		fclose(f);
		buf[n] = '\0';
		/* pid (comm) state ppid ...: comm may hold spaces, so after the last ')' */
		char *rp = strrchr(buf, ')');
		char state;
		int ppid;
		if (rp && sscanf(rp + 1, " %c %d", &state, &ppid) == 2 && ppid == parent &&
		    has_arg(de->d_name, "--worker-fd"))
			found = (pid_t)atoi(de->d_name);
	}
	closedir(d);
	return found;
}

/* 1 while pid exists and is not a zombie. */
static int alive(pid_t pid)
{
	char path[64], buf[512];
	FILE *f;
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	if (!(f = fopen(path, "r")))
		return 0;
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = '\0';
	char *rp = strrchr(buf, ')');
	return rp && rp[1] == ' ' && rp[2] != 'Z' && rp[2] != 'X';
}

FA_TEST(hostile, isolate_worker_dies_with_killed_parent)
{
	char db[1024], plug[1100], *env[3];
	pid_t run, worker = 0;
	tmp_path(db, sizeof db, "orphan.db");
	fa_test_plugins_var(plug, sizeof plug);
	env[0] = plug;
	env[1] = "FABENCH_TEST_KERNELS=1";
	env[2] = NULL;
	/* test_spin ignores cancellation: its worker computes until killed */
	run = fa_proc_start((char *[]){"run", "tests/suites/tiny.yaml", "--backend", "test",
				       "--where", "q_len == 16 && mask == none", "--kernels",
				       "test_spin", "--timeout", "60", "--isolate", "--db", db,
				       "--quiet", NULL},
			    env);
	FA_REQUIRE(run > 0);
	for (int i = 0; i < 600 && !worker; i++) {
		sleep_ms(50);
		worker = worker_of(run);
	}
	FA_CHECKF(worker > 0, "no worker of fabench run (pid %d) appeared in 30 s", (int)run);
	kill(run, SIGKILL);
	FA_CHECK(fa_proc_wait(run) == 128 + SIGKILL);
	if (worker <= 0)
		return;
	double t0 = now_s();
	while (alive(worker) && now_s() - t0 < 3.0)
		sleep_ms(20);
	FA_CHECKF(!alive(worker), "worker %d still runs %.1f s after its parent was killed",
		  (int)worker, now_s() - t0);
	if (alive(worker))
		kill(worker, SIGKILL); /* do not leave it spinning */
}
