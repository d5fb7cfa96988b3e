/* test_exitcodes.c - one rule for every command's exit status, checked
 * through build/fabench: 0 ok, 1 a case failed or a runtime error, 2 bad
 * usage or bad input (missing files, databases, runs, kernels; bad option
 * values). Each row of the table runs one mistake and checks the status,
 * that stderr names the bad input, and that the database is byte for byte
 * what it was (or, where it did not exist, still does not). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fixture.h"
#include "proc.h"
#include "test.h"

enum db_rule {
	DB_SAME, /* @DB (a database with one run) is byte-identical afterwards */
	DB_NONE, /* @NODB does not exist afterwards */
};

struct exit_case {
	const char *args[14]; /* @DB and @NODB are replaced by the paths */
	int status;
	const char *says; /* in stderr (stdout for status 0) */
	enum db_rule db;
};

static const struct exit_case cases[] = {
	/* the command itself */
	{{NULL}, 2, "usage: fabench", DB_NONE},
	{{"nope"}, 2, "'nope' is not a command", DB_NONE},
	{{"help", "nope"}, 2, "no command 'nope'", DB_NONE},
	/* run */
	{{"run", "--db", "@NODB"}, 2, "missing SUITE.yaml", DB_NONE},
	{{"run", "no-such-suite.yaml", "--db", "@NODB"}, 2, "'no-such-suite.yaml'", DB_NONE},
	{{"run", "no-such-suite.yaml", "--db", "@DB"}, 2, "'no-such-suite.yaml'", DB_SAME},
	{{"run", "suites/bad/duplicate_key.yaml", "--db", "@DB"},
	 2,
	 "suites/bad/duplicate_key.yaml:5:3: duplicate key 'heads'",
	 DB_SAME},
	/* Q of 2^66 bytes wrapped past int64 to 24: the run crashed, leaving an
	 * incomplete run; a too large case is refused at load, as --dry-run */
	{{"run", "suites/bad/tensor_too_large.yaml", "--db", "@DB"},
	 2,
	 "suites/bad/tensor_too_large.yaml:4:52: Q is too large: 268435456 tokens x 134217728 heads",
	 DB_SAME},
	{{"run", "suites/bad/tensor_too_large_kv.yaml", "--dry-run", "--db", "@DB"},
	 2,
	 "suites/bad/tensor_too_large_kv.yaml:4:64: K is too large",
	 DB_SAME},
	/* repeats of one case that would lose a layer count or a depth */
	{{"run", "suites/bad/layers_conflict.yaml", "--db", "@DB"},
	 2,
	 "suites/bad/layers_conflict.yaml:7:24: label 'llama3-8b' has layers 10 here but 32 at "
	 "suites/bad/layers_conflict.yaml:5:20",
	 DB_SAME},
	{{"run", "suites/bad/depth_kv_len_explicit.yaml", "--db", "@DB"},
	 2,
	 "suites/bad/depth_kv_len_explicit.yaml:6:14: depth 16 makes the same case as depth 8",
	 DB_SAME},
	{{"run", "tests/suites/tiny.yaml", "--where", "head_dim == 999", "--db", "@DB"},
	 2,
	 "no case of suite tiny matches --where 'head_dim == 999'",
	 DB_SAME},
	{{"run", "tests/suites/tiny.yaml", "--where", "head_dim ==", "--db", "@DB"},
	 2,
	 "--where:1:",
	 DB_SAME},
	{{"run", "tests/suites/tiny.yaml", "--kernels", "nope", "--db", "@DB"},
	 2,
	 "unknown kernel 'nope'",
	 DB_SAME},
	/* an empty item of a --param's values is not left out: the caret at it */
	{{"run", "tests/suites/tiny.yaml", "--backend", "cpu", "--kernels", "cpu_flash", "--param",
	  "cpu_flash.block_q=8,,16", "--db", "@DB"},
	 2,
	 "--param:1:21: an empty item: give a value between the commas\n"
	 " 1 | cpu_flash.block_q=8,,16\n   |                     ^\n",
	 DB_SAME},
	{{"run", "tests/suites/tiny.yaml", "--backend", "cpu", "--kernels", "cpu_flash", "--param",
	  "cpu_flash.block_q=8,16,", "--db", "@NODB"},
	 2,
	 "--param:1:24: an empty item",
	 DB_NONE},
	{{"run", "tests/suites/tiny.yaml", "--backend", "cpu", "--kernels", "cpu_flash", "--param",
	  "cpu_flash.block_q=8, ,16", "--db", "@DB"},
	 2,
	 "--param:1:21: an empty item: give a value between the commas\n"
	 " 1 | cpu_flash.block_q=8, ,16\n   |                     ^\n",
	 DB_SAME},
	{{"run", "tests/suites/tiny.yaml", "--backend", "cpu", "--ab-params", "--param",
	  "a:cpu_flash.block_q=,8", "--db", "@NODB"},
	 2,
	 "--param:1:21: an empty item",
	 DB_NONE},
	{{"run", "tests/suites/tiny.yaml", "--backend", "nope", "--db", "@NODB"},
	 2,
	 "'nope'",
	 DB_NONE},
	{{"run", "tests/suites/tiny.yaml", "--seed", "x1", "--db", "@NODB"}, 2, "'x1'", DB_NONE},
	{{"run", "tests/suites/tiny.yaml", "--timeout", "-1", "--db", "@NODB"}, 2, "'-1'", DB_NONE},
	{{"run", "tests/suites/tiny.yaml", "--threads", "0", "--db", "@NODB"}, 2, "'0'", DB_NONE},
	{{"run", "tests/suites/tiny.yaml", "--cache", "warm", "--db", "@NODB"},
	 2,
	 "'warm'",
	 DB_NONE},
	{{"run", "tests/suites/tiny.yaml", "--mem-budget", "lots", "--db", "@NODB"},
	 2,
	 "'lots'",
	 DB_NONE},
	{{"run", "tests/suites/tiny.yaml", "--bogus", "--db", "@NODB"}, 2, "'--bogus'", DB_NONE},
	/* list */
	{{"list"}, 2, "missing SUITE.yaml", DB_NONE},
	{{"list", "no-such-suite.yaml"}, 2, "'no-such-suite.yaml'", DB_NONE},
	{{"list", "tests/suites/tiny.yaml", "--where", "head_dim == 999"},
	 2,
	 "no case of suite tiny matches --where 'head_dim == 999'",
	 DB_NONE},
	{{"list", "tests/suites/tiny.yaml", "--format", "xml"}, 2, "'xml'", DB_NONE},
	/* kernels, devices */
	{{"kernels", "--backend", "nope"}, 2, "'nope'", DB_NONE},
	{{"kernels", "extra"}, 2, "'extra'", DB_NONE},
	{{"devices", "extra"}, 2, "'extra'", DB_NONE},
	/* report */
	{{"report", "--db", "@NODB"}, 2, "no database at '", DB_NONE},
	{{"report", "--db", "@DB", "--run", "99"}, 2, "no run '99'", DB_SAME},
	{{"report", "--db", "@DB", "--run", "no-such-label"}, 2, "'no-such-label'", DB_SAME},
	{{"report", "--db", "@DB", "--baseline", "nope"}, 2, "'nope'", DB_SAME},
	{{"report", "--db", "@DB", "--format", "pdf"}, 2, "'pdf'", DB_SAME},
	/* compare */
	{{"compare", "--db", "@NODB", "1", "1"}, 2, "no database at '", DB_NONE},
	{{"compare", "--db", "@DB", "1", "no-such-label"}, 2, "'no-such-label'", DB_SAME},
	{{"compare", "--db", "@DB", "1"}, 2, "BASE and HEAD are required", DB_SAME},
	{{"compare", "--db", "@DB", "--alpha", "2", "1", "1"}, 2, "'2'", DB_SAME},
	/* the option values several commands share (cmd_common.c) */
	{{"compare", "--db", "@DB", "--min-effect", "100", "1", "1"},
	 2,
	 "--min-effect '100' must be a percentage in [0, 100)",
	 DB_SAME},
	{{"history", "--db", "@DB", "--min-effect", "nan"},
	 2,
	 "--min-effect 'nan' must be a percentage in [0, 100)",
	 DB_SAME},
	{{"tune", "--db", "@DB", "--alpha", "0"}, 2, "--alpha '0' must be between 0 and 1", DB_SAME},
	{{"tune", "--db", "@DB", "--format", "pdf"}, 2, "--format 'pdf' must be md, csv or json", DB_SAME},
	{{"plot", "speedup", "1", "2", "--db", "@DB", "--min-effect", "1e3"},
	 2,
	 "--min-effect '1e3' must be a percentage in [0, 100)",
	 DB_SAME},
	/* tune SUITE: a bad option fails before the sweep, nothing stored */
	{{"tune", "tests/suites/tiny.yaml", "--backend", "cpu", "--kernel", "cpu_*", "--param",
	  "block_q=8,16", "--db", "@DB"},
	 2,
	 "--kernel:1:5: '*' makes a glob",
	 DB_SAME},
	{{"tune", "tests/suites/tiny.yaml", "--backend", "cpu", "--kernel", "cpu_flash,cpu_dense",
	  "--param", "block_q=8,16", "--db", "@DB"},
	 2,
	 "--kernel:1:10: ',' makes a list",
	 DB_SAME},
	{{"tune", "tests/suites/tiny.yaml", "--backend", "cpu", "--kernel", "cpu_flash", "--param",
	  "block_q=8,16", "--param", "block_k=16,32", "--db", "@DB"},
	 2,
	 "--param given twice ('block_q=8,16' and 'block_k=16,32')",
	 DB_SAME},
	{{"tune", "tests/suites/tiny.yaml", "--backend", "cpu", "--kernel", "cpu_flash", "--param",
	  "block_q=8,,16", "--db", "@DB"},
	 2,
	 "--param:1:11: an empty item: give a value between the commas\n 1 | block_q=8,,16\n"
	 "   |           ^\n",
	 DB_SAME},
	{{"tune", "tests/suites/tiny.yaml", "--backend", "cpu", "--kernel", "cpu_flash", "--param",
	  "cpu_dense.block_q=8,16", "--db", "@DB"},
	 2,
	 "--param:1:1: 'cpu_dense.' names another kernel than --kernel 'cpu_flash'",
	 DB_SAME},
	/* history */
	{{"history", "--db", "@NODB"}, 2, "no database at '", DB_NONE},
	{{"history", "--db", "@DB", "--format", "pdf"}, 2, "'pdf'", DB_SAME},
	/* plot (--script: no gnuplot needed to get as far as the database) */
	{{"plot", "throughput", "--db", "@NODB", "--script", "@TMP/p.gp"},
	 2,
	 "no database at '",
	 DB_NONE},
	{{"plot", "throughput", "--db", "@DB", "--run", "99", "--script", "@TMP/p.gp"},
	 2,
	 "no run '99'",
	 DB_SAME},
	{{"plot", "heatmap", "--db", "@DB", "--kernel", "nope", "--script", "@TMP/p.gp"},
	 2,
	 "'nope'",
	 DB_SAME},
	{{"plot", "pie", "--db", "@DB"}, 2, "'pie'", DB_SAME},
	/* calibrate */
	{{"calibrate", "--backend", "nope", "--db", "@NODB"}, 2, "'nope'", DB_NONE},
	{{"calibrate", "extra", "--db", "@NODB"}, 2, "'extra'", DB_NONE},
	/* import */
	{{"import", "--db", "@DB"}, 2, "missing FILE", DB_SAME},
	{{"import", "no-such-file.jsonl", "--db", "@DB"}, 2, "'no-such-file.jsonl'", DB_SAME},
	{{"import", "no-such-file.jsonl", "--db", "@NODB"}, 2, "'no-such-file.jsonl'", DB_NONE},
	{{"import", "tests/import/bad_dtype.jsonl", "--db", "@DB"},
	 2,
	 "tests/import/bad_dtype.jsonl:1:54: unknown dtype 'fp8'",
	 DB_SAME},
	{{"import", "tests/import/bad_header_started_at_month.jsonl", "--db", "@DB"},
	 2,
	 "tests/import/bad_header_started_at_month.jsonl:1:30: started_at '2026-13-45T99:99:99Z' "
	 "has month 13",
	 DB_SAME},
	{{"import", "tests/import/bad_params_empty_item.jsonl", "--run-into", "1", "--db", "@DB"},
	 2,
	 "tests/import/bad_params_empty_item.jsonl:1:75: empty item in params 'a=1,,=b,c'",
	 DB_SAME},
	{{"import", "tests/import/bad_csv_control_char.csv", "--db", "@DB"},
	 2,
	 "tests/import/bad_csv_control_char.csv:2:16: control character 0x01 in a cell",
	 DB_SAME},
	{{"import", "tests/import/bad_csv_header_twice.csv", "--run-into", "1", "--db", "@DB"},
	 2,
	 "tests/import/bad_csv_header_twice.csv:2:3: duplicate run field 'source' (first on line 1)",
	 DB_SAME},
	{{"import", "tests/import/bad_csv_unicode_column.csv", "--db", "@DB"},
	 2,
	 "tests/import/bad_csv_unicode_column.csv:2:7: expected an integer for 'heads'",
	 DB_SAME},
	/* rows of one case that would lose a label's layers or a depth */
	{{"import", "tests/import/bad_layers_conflict.jsonl", "--run-into", "1", "--db", "@DB"},
	 2,
	 "tests/import/bad_layers_conflict.jsonl:2:60: label 'llama3-8b' has layers 10 here but 32 "
	 "at tests/import/bad_layers_conflict.jsonl:1:37",
	 DB_SAME},
	{{"import", "tests/import/bad_csv_depth_kv_seqlens.csv", "--db", "@DB"},
	 2,
	 "tests/import/bad_csv_depth_kv_seqlens.csv:3:16: depth 64 makes the same case as depth 60",
	 DB_SAME},
	{{"import", "tests/import/bad_depth_kv_len.jsonl", "--db", "@NODB"},
	 2,
	 "tests/import/bad_depth_kv_len.jsonl:2:65: depth 16 makes the same case as depth 8",
	 DB_NONE},
	{{"import", "tests/import/good_tiny.csv", "--run-into", "99", "--db", "@DB"},
	 2,
	 "99",
	 DB_SAME},
	{{"import", "tests/import/good_tiny.csv", "--run-into", "1", "--db", "@NODB"},
	 2,
	 "no database at '",
	 DB_NONE},
	{{"import", "tests/import/good_tiny.csv", "--format", "xml", "--db", "@DB"},
	 2,
	 "'xml'",
	 DB_SAME},
	/* build-matrix: everything named is checked before the database is touched */
	{{"build-matrix", "--targets", "gfx9000", "--db", "@NODB"}, 2, "unknown target 'gfx9000'", DB_NONE},
	{{"build-matrix", "--targets", "sm_80,", "--db", "@NODB"}, 2, "'sm_80,'", DB_NONE},
	{{"build-matrix", "--source", "no-such.cu", "--db", "@DB"}, 2, "'no-such.cu'", DB_SAME},
	{{"build-matrix", "--source", "README.md", "--db", "@NODB"},
	 2,
	 "source 'README.md' is not a .cu, .hip or .cpp file",
	 DB_NONE},
	{{"build-matrix", "--source", "tests/bmatrix/mma.cu", "--fail-on", "nope", "--db", "@DB"},
	 2,
	 "no build-matrix run 'nope'",
	 DB_SAME},
	{{"build-matrix", "--jobs", "0", "--db", "@NODB"}, 2, "'0'", DB_NONE},
	{{"build-matrix", "--run", "3", "--db", "@NODB"}, 2, "--run '3' needs --report", DB_NONE},
	{{"build-matrix", "--report", "--db", "@NODB"}, 2, "no database at '", DB_NONE},
	{{"build-matrix", "--report", "--db", "@DB"}, 2, "no build-matrix run 'latest'", DB_SAME},
	{{"build-matrix", "--report", "--source", "x.cu", "--db", "@DB"}, 2, "--report shows a stored run", DB_SAME},
	{{"build-matrix", "--report", "--format", "html", "--db", "@DB"}, 2, "'html'", DB_SAME},
};

/* --help of every command: status 0, its usage on stdout. */
static const char *const commands[] = {"run",     "list",    "kernels",   "devices",
				       "report",  "compare", "history",   "plot",
				       "calibrate", "import",  "build-matrix"};

static char *slurp(const char *path, size_t *len)
{
	*len = 0;
	return fa_test_read_file(path, len);
}

/* A database with one run of the tiny suite (cpu_flash, two cases); with
 * sweep, cpu_flash ran with block_q 8 and 16, a run tune reads. */
static int make_db_of(const char *db, int sweep)
{
	struct fa_proc_result r;
	int ok;
	unlink(db);
	fa_proc_run((char *[]){"run", "tests/suites/tiny.yaml", "--backend", "cpu", "--kernels",
			       "cpu_flash", "--where", "q_len == 16", "--label", "base", "--db",
			       (char *)db, "--quiet", sweep ? "--param" : NULL, /* NULL: ends here */
			       "cpu_flash.block_q=8,16", NULL},
		    NULL, 120, &r);
	ok = r.status == 0;
	if (!ok)
		fprintf(stderr, "cannot make the database: status %d\n%s", r.status, r.err);
	fa_proc_free(&r);
	return ok;
}

static int make_db(const char *db)
{
	return make_db_of(db, 0);
}

FA_TEST(exitcodes, every_mistake_exits_2_and_writes_nothing)
{
	char db[1024], nodb[1024], tmp[1024], args[14][1100], *argv[15];
	const char *dir = fa_test_tmpdir();
	size_t before_len, after_len;
	char *before, *after;
	snprintf(tmp, sizeof tmp, "%s", dir);
	snprintf(db, sizeof db, "%s/good.db", dir);
	snprintf(nodb, sizeof nodb, "%s/absent/none.db", dir);
	FA_REQUIRE(make_db(db));
	before = slurp(db, &before_len);
	FA_REQUIRE(before && before_len > 0);
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const struct exit_case *c = &cases[i];
		struct fa_proc_result r;
		char line[2048] = "fabench";
		struct stat st;
		int n = 0;
		for (; n < 14 && c->args[n]; n++) {
			const char *a = c->args[n];
			if (strcmp(a, "@DB") == 0)
				snprintf(args[n], sizeof args[n], "%s", db);
			else if (strcmp(a, "@NODB") == 0)
				snprintf(args[n], sizeof args[n], "%s", nodb);
			else if (strncmp(a, "@TMP", 4) == 0)
				snprintf(args[n], sizeof args[n], "%s%s", tmp, a + 4);
			else
				snprintf(args[n], sizeof args[n], "%s", a);
			argv[n] = args[n];
			snprintf(line + strlen(line), sizeof line - strlen(line), " %s", a);
		}
		argv[n] = NULL;
		fa_proc_run(argv, NULL, 60, &r);
		FA_CHECKF(r.status == c->status, "%s: status %d, expected %d\nstderr: %s", line,
			  r.status, c->status, r.err);
		FA_CHECKF(strstr(c->status == 0 ? r.out : r.err, c->says) != NULL,
			  "%s: stderr does not say \"%s\":\n%s", line, c->says, r.err);
		/* one message, lowercase after the prefix, no final period */
		FA_CHECKF(c->status == 0 || (strlen(r.err) > 1 && r.err[strlen(r.err) - 2] != '.'),
			  "%s: stderr ends with a period:\n%s", line, r.err);
		fa_proc_free(&r);
		if (c->db == DB_NONE) {
			FA_CHECKF(stat(nodb, &st) != 0, "%s: created '%s'", line, nodb);
		} else {
			after = slurp(db, &after_len);
			FA_CHECKF(after && after_len == before_len &&
					  memcmp(after, before, before_len) == 0,
				  "%s: changed the database", line);
			free(after);
		}
	}
	free(before);
}

FA_TEST(exitcodes, help_of_every_command_exits_0)
{
	for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
		struct fa_proc_result r;
		char usage[64];
		snprintf(usage, sizeof usage, "usage: fabench %s", commands[i]);
		fa_proc_run((char *[]){(char *)commands[i], "--help", NULL}, NULL, 60, &r);
		FA_CHECKF(r.status == 0 && strstr(r.out, usage) && r.err[0] == '\0',
			  "%s --help: status %d\nstdout: %s\nstderr: %s", commands[i], r.status,
			  r.out, r.err);
		fa_proc_free(&r);
		fa_proc_run((char *[]){"help", (char *)commands[i], NULL}, NULL, 60, &r);
		FA_CHECKF(r.status == 0 && strstr(r.out, usage), "help %s: status %d",
			  commands[i], r.status);
		fa_proc_free(&r);
	}
}

/* A case that fails its check exits 1 (not 2): the input was fine. */
FA_TEST(exitcodes, failed_case_exits_1)
{
	char db[1024], plug[1100], *env[3];
	struct fa_proc_result r;
	snprintf(db, sizeof db, "%s/fail.db", fa_test_tmpdir());
	unlink(db);
	fa_test_plugins_var(plug, sizeof plug);
	env[0] = plug;
	env[1] = "FABENCH_TEST_KERNELS=1";
	env[2] = NULL;
	fa_proc_run((char *[]){"run", "tests/suites/tiny.yaml", "--backend", "test", "--kernels",
			       "test_wrong", "--where", "q_len == 16", "--db", db, "--quiet", NULL},
		    env, 120, &r);
	FA_CHECKF(r.status == 1, "status %d\n%s", r.status, r.err);
	fa_proc_free(&r);
}

/* Mistakes found only once the output is being made leave the --output
 * file (plot's --script) as it was: an existing file keeps its bytes, and a
 * new path is not created, nor its folders. Each row's mistake comes after
 * the command has opened its output (fa_cmd_out_open), where a writer
 * straight into the file would have emptied or begun it: report looks its
 * --baseline up while writing, in every format; an html report draws its
 * plots after its tables are written, here with a stand-in gnuplot that
 * fails; tune opens --header's file after --output's; plot finds nothing to
 * plot while its script is written. compare and history find every mistake
 * before they open their output (their writers fail on memory alone): a row
 * of theirs would pass with any writer, so none is here. */
struct late_mistake {
	const char *flag;     /* the option naming the output file */
	const char *args[12]; /* @DB: the database (a sweep); @TMP: a folder */
	int status;
	const char *says;
};

static const struct late_mistake late[] = {
	{"--output", {"report", "--db", "@DB", "--baseline", "nope"}, 2, "'nope'"},
	{"--output", {"report", "--db", "@DB", "--baseline", "nope", "--format", "csv"}, 2, "'nope'"},
	{"--output", {"report", "--db", "@DB", "--baseline", "nope", "--format", "json"}, 2, "'nope'"},
	{"--output",
	 {"report", "--db", "@DB", "--baseline", "nope", "--format", "html", "--no-plots"},
	 2,
	 "'nope'"},
	{"--output",
	 {"report", "--db", "@DB", "--baseline", "nope", "--format", "csv", "--layout", "long"},
	 2,
	 "'nope'"},
	{"--output",
	 {"report", "--db", "@DB", "--format", "html"},
	 1,
	 "throughput plot: gnuplot failed with exit status 3: plot.gp: no"},
	{"--output",
	 {"tune", "--db", "@DB", "--run", "1", "--by", "q_len", "--header", "@TMP"},
	 1,
	 "cannot write"},
	{"--script", {"plot", "history", "--db", "@DB", "--where", "q_len == 999"}, 2, "nothing to plot"},
	{"--script",
	 {"plot", "throughput", "--db", "@DB", "--where", "q_len == 999"},
	 2,
	 "no passed, timed result of run 1 in the cases where 'q_len == 999'"},
	{"--script",
	 {"plot", "heatmap", "--db", "@DB", "--kernel", "nope"},
	 2,
	 "kernel 'nope' has no results in run 1"},
};

FA_TEST(exitcodes, late_mistakes_leave_output_files_alone)
{
	const char *dir = fa_test_tmpdir();
	char db[1024], old[1100], fresh[1100], fresh_top[1100], gnuplot[1100], env_gnuplot[1200];
	char args[16][1100], *argv[17];
	struct stat st;
	snprintf(db, sizeof db, "%s/sweep.db", dir);
	snprintf(old, sizeof old, "%s/old.md", dir);
	snprintf(fresh_top, sizeof fresh_top, "%s/new", dir);
	snprintf(fresh, sizeof fresh, "%s/new/sub/x.md", dir);
	/* gnuplot for every row: one that fails (only html's plots reach it) */
	snprintf(gnuplot, sizeof gnuplot, "%s/failing-gnuplot", dir);
	snprintf(env_gnuplot, sizeof env_gnuplot, "FABENCH_GNUPLOT=%s", gnuplot);
	FA_REQUIRE(fa_test_write_script(gnuplot, "#!/bin/sh\necho 'plot.gp: no' >&2\nexit 3\n") == 0);
	FA_REQUIRE(make_db_of(db, 1));
	for (size_t i = 0; i < sizeof late / sizeof late[0]; i++) {
		const struct late_mistake *c = &late[i];
		for (int pass = 0; pass < 2; pass++) {
			struct fa_proc_result r;
			char line[2048] = "fabench";
			size_t len = 0;
			char *text;
			int n = 0;
			for (; c->args[n]; n++) {
				const char *a = c->args[n];
				snprintf(args[n], sizeof args[n], "%s",
					 strcmp(a, "@DB") == 0 ? db : strcmp(a, "@TMP") == 0 ? dir : a);
				argv[n] = args[n];
				snprintf(line + strlen(line), sizeof line - strlen(line), " %s", a);
			}
			argv[n++] = (char *)c->flag;
			argv[n++] = pass ? fresh : old;
			argv[n] = NULL;
			FA_REQUIRE(fa_test_write_file(old, "old\n") == 0);
			/* what an earlier row (before the fix) made goes first */
			unlink(fresh);
			*strrchr(fresh, '/') = '\0';
			rmdir(fresh);
			rmdir(fresh_top);
			snprintf(fresh, sizeof fresh, "%s/new/sub/x.md", dir);
			fa_proc_run(argv, (char *[]){env_gnuplot, NULL}, 60, &r);
			FA_CHECKF(r.status == c->status && strstr(r.err, c->says),
				  "%s %s: status %d, expected %d: %s", line, c->flag, r.status,
				  c->status, r.err);
			fa_proc_free(&r);
			text = fa_test_read_file(old, &len);
			FA_CHECKF(text && strcmp(text, "old\n") == 0, "%s %s FILE: the file became '%s'",
				  line, c->flag, text ? text : "(gone)");
			free(text);
			FA_CHECKF(stat(fresh_top, &st) != 0, "%s %s new/sub/x.md: created '%s'", line,
				  c->flag, fresh_top);
		}
	}
}

/* What --output does write: the whole text, into folders it makes; an
 * existing file keeps its mode, and a link keeps pointing at the file it
 * names (which is what gets the text); nothing is left beside it. */
FA_TEST(exitcodes, output_file_written_whole)
{
	const char *dir = fa_test_tmpdir();
	char db[1024], fresh[1100], old[1100], link[1100], listing[4096] = "";
	struct fa_proc_result r, want;
	struct stat st;
	size_t len = 0;
	char *text;
	FILE *p;
	snprintf(db, sizeof db, "%s/good.db", dir);
	snprintf(fresh, sizeof fresh, "%s/new/sub/x.md", dir);
	snprintf(old, sizeof old, "%s/old.md", dir);
	snprintf(link, sizeof link, "%s/link.md", dir);
	FA_REQUIRE(make_db(db));
	fa_proc_run((char *[]){"report", "--db", db, NULL}, NULL, 60, &want);
	FA_REQUIRE(want.status == 0 && want.out[0]);
	fa_proc_run((char *[]){"report", "--db", db, "--output", fresh, NULL}, NULL, 60, &r);
	FA_CHECKF(r.status == 0, "status %d: %s", r.status, r.err);
	fa_proc_free(&r);
	text = fa_test_read_file(fresh, &len);
	FA_CHECK(text && strcmp(text, want.out) == 0);
	free(text);
	FA_REQUIRE(fa_test_write_file(old, "old\n") == 0 && chmod(old, 0600) == 0);
	unlink(link);
	FA_REQUIRE(symlink("old.md", link) == 0);
	fa_proc_run((char *[]){"report", "--db", db, "--output", link, NULL}, NULL, 60, &r);
	FA_CHECKF(r.status == 0, "status %d: %s", r.status, r.err);
	fa_proc_free(&r);
	text = fa_test_read_file(old, &len);
	FA_CHECK(text && strcmp(text, want.out) == 0);
	free(text);
	FA_CHECK(lstat(link, &st) == 0 && S_ISLNK(st.st_mode));
	FA_CHECK(stat(old, &st) == 0 && (st.st_mode & 0777) == 0600);
	/* a link to a file not there yet is written through and stays a link */
	char dangling[1100], target[1100];
	snprintf(dangling, sizeof dangling, "%s/dangling.md", dir);
	snprintf(target, sizeof target, "%s/later.md", dir);
	unlink(dangling);
	unlink(target);
	FA_REQUIRE(symlink("later.md", dangling) == 0);
	fa_proc_run((char *[]){"report", "--db", db, "--output", dangling, NULL}, NULL, 60, &r);
	FA_CHECKF(r.status == 0, "status %d: %s", r.status, r.err);
	fa_proc_free(&r);
	FA_CHECK(lstat(dangling, &st) == 0 && S_ISLNK(st.st_mode));
	text = fa_test_read_file(target, &len);
	FA_CHECK(text && strcmp(text, want.out) == 0);
	free(text);
	/* no temporary file left beside them */
	snprintf(listing, sizeof listing, "ls -A '%s' '%s/new/sub'", dir, dir);
	p = popen(listing, "r");
	FA_REQUIRE(p);
	listing[fread(listing, 1, sizeof listing - 1, p)] = '\0';
	pclose(p);
	FA_CHECKF(!strstr(listing, ".md."), "left behind:\n%s", listing);
	fa_proc_free(&want);
}
