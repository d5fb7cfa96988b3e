/* store.c - the SQLite database of runs, cases, results and raw samples:
 * opening and migrating the file, and the prepared statements that write it.
 *
 * Schema version 4 (PRAGMA user_version = 4; version 2 added runs.ab_group,
 * version 3 runs.running, version 4 runs.shard, runs.devices,
 * runs.merged_from and results.device, version 5 the build_runs and
 * build_results of `fabench build-matrix`, described in buildstore.c,
 * version 6 case_tags and case_depth, version 7 cases.pass and grad_stats,
 * version 8 runs.uid).
 * Conventions: times are ISO
 * 8601 UTC text ("2026-11-25T21:40:00Z"); optional text is NULL when empty
 * or unknown; numbers that are unknown, not measured or NaN are NULL, never
 * 0 or -1; seeds are uint64 and do not fit SQLite's signed integers, so they
 * are decimal text. dtype, mask, layout and input are stored by name
 * (harness/base/names.c), never by enum number.
 *
 *   runs     one invocation of `fabench run` (or one import). status is
 *            'incomplete' from fa_store_run_begin until fa_store_run_end
 *            says 'complete', so a killed run stays 'incomplete'. git_dirty
 *            is 1/0, NULL unknown; label NULL when none; source is
 *            'fabench' or the tool an import came from. ab_group is shared
 *            by the two runs of one `run --ab` (their samples were taken in
 *            turn, so compare pairs them), NULL otherwise. running is set
 *            (and committed) before each case and each kernel starts,
 *            "case 12/63 KEY kernel NAME", and set to NULL when the run
 *            ends: a run left 'incomplete' with running set was killed
 *            there (a kernel that crashed the process without --isolate).
 *            shard is "K/N" for a run that took share K of N (--shard),
 *            devices the device indices its workers drove ("0,1";
 *            --devices), both NULL otherwise. merged_from lists, one per
 *            line, the identities of the runs `fabench merge --one-run`
 *            combined into this one (NULL otherwise), so a second merge
 *            of the same databases adds nothing; a part that was
 *            incomplete then has a tab and "incomplete" after its
 *            identity (merge.c). uid is 32 random hex digits drawn when
 *            the run began (NULL in runs stored before version 8): two
 *            runs of one command begun in the same second differ in it.
 *   cases    one expanded case of a run: idx is its position in the suite
 *            (from 0), key its canonical key (fa_case_key), then every
 *            parameter. prefix_len is set only for prefix_lm cases without
 *            per-sequence prefix_lens, window only for sliding_window;
 *            seqlens / kv_seqlens / prefix_lens are per-sequence lists
 *            "a/b/c" (NULL unless varlen / per-sequence prefixes); q_len and
 *            kv_len of a varlen case are the longest sequence.
 *   results  one kernel on one case. status is pass/fail/skip/error/timeout
 *            with reason (NULL on pass). Times (ms) and tflops/gbps are NULL
 *            when nothing was timed; error statistics are NULL unless
 *            checked = 1 (same_max_abs also when not computed, worst_* when
 *            there is no worst element); telemetry is NULL where unknown.
 *            stop_reason is fa_stop_name() of the sampling's stop, NULL when
 *            no sampling took place. params is the kernel's tunables
 *            "name=value,..." ('' when none). device is the index of the
 *            device the result was measured on (--devices), NULL when the
 *            run drove one device in-process.
 *            pass is fwd, bwd or fwd_bwd (enum fa_pass; 'fwd' in cases
 *            stored before version 7).
 *   grad_stats  bwd and fwd_bwd results: the error statistics of each
 *            gradient (tensor dq, dk, dv), columns as in results; the
 *            result's own columns hold O of the forward kernel.
 *   case_tags the labels of a case, in order (seq from 0): name is a model
 *            preset (model = 1) or a free `tag:` (model = 0); layers the
 *            model's attention layers (tokens/s), NULL unknown. Cases of
 *            one shape that several models share keep every name.
 *   case_depth the suite's `depth:` of a case (KV positions before the
 *            queries), a row only where it was given.
 *   samples  the raw timing samples of a result in the order taken (seq
 *            from 0), so compare/history can test distributions, not only
 *            medians.
 *   calibrations  the ceilings `fabench calibrate` measured on a device
 *            (copy GB/s, matrix TFLOP/s; matmul_fp32_tflops NULL when not
 *            measured), one row per calibration; the latest of a device
 *            name counts.
 *
 * Imports (fabench import) store another tool's results the same way: a
 * run whose source is the tool, or rows added to a fabench run (cases
 * matched by key, new ones appended after its last idx; the tool is
 * appended to its source, "fabench + torch 2.11.0"). Their stop_reason is
 * NULL (sampled by the tool, not under fabench's rule), and error counts
 * the tool did not give (nan_count, rows_checked, ...) are NULL.
 *
 * Writes: fa_store_run_begin commits the run row at once; each case, its
 * results and their samples are one transaction (BEGIN IMMEDIATE, so two
 * writers queue on the busy timeout instead of deadlocking on a lock
 * upgrade), rolled back whole on any error. An import is one transaction.
 * One process writes the cases of a run: the one that claimed it
 * (fa_store_run_claim, a lock on a byte of the file), which a run --resume
 * or an import into the run must take first. Readers hold one read
 * transaction from open to close: one snapshot.
 */
#include "store.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../base/text.h"
#include "../base/util.h"

/* How long a writer waits for another process's transaction before giving
 * up with SQLITE_BUSY. A case's transaction lasts milliseconds, but a merge
 * holds the file for each input and an import for its file: tens of seconds
 * for millions of samples on a busy machine, and a run must wait that out
 * rather than lose the case it measured (10 s did). 10 minutes only runs
 * out when something is stuck (a process stopped inside a transaction). */
#define STORE_BUSY_TIMEOUT_MS 600000
/* A writer that has waited this long says so on stderr, once per wait: a
 * run that stops printing for minutes should say why. */
#define STORE_BUSY_NOTE_MS 5000

/* The byte of the database file whose lock claims run N for one process:
 * STORE_CLAIM_BASE + N, far past the bytes SQLite locks (1 GiB and the
 * 510 after it). */
#define STORE_CLAIM_BASE ((off_t)1 << 40)

#define NOW_SQL "strftime('%Y-%m-%dT%H:%M:%SZ', 'now')"

/* migrations[v] takes a database from schema version v to v + 1. Append
 * only: a released migration is never edited. */
static const char *const migrations[] = {
	/* 0 -> 1 */
	"CREATE TABLE runs (\n"
	"  id INTEGER PRIMARY KEY,\n"
	"  started_at TEXT NOT NULL,\n"
	"  finished_at TEXT,\n"
	"  git_commit TEXT,\n"
	"  git_dirty INTEGER CHECK (git_dirty IN (0, 1)),\n"
	"  host TEXT,\n"
	"  backend TEXT,\n"
	"  device_name TEXT,\n"
	"  device_arch TEXT,\n"
	"  driver TEXT,\n"
	"  runtime TEXT,\n"
	"  suite_path TEXT,\n"
	"  suite_name TEXT,\n"
	"  suite_hash TEXT,\n"
	"  command_line TEXT,\n"
	"  label TEXT,\n"
	"  seed TEXT NOT NULL,\n"
	"  version TEXT,\n"
	"  source TEXT NOT NULL DEFAULT 'fabench',\n"
	"  status TEXT NOT NULL DEFAULT 'incomplete'\n"
	"    CHECK (status IN ('incomplete', 'complete'))\n"
	");\n"
	"CREATE INDEX runs_by_label ON runs(label, id);\n"
	"CREATE INDEX runs_by_commit ON runs(git_commit, id);\n"
	"CREATE TABLE cases (\n"
	"  id INTEGER PRIMARY KEY,\n"
	"  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,\n"
	"  idx INTEGER NOT NULL,\n"
	"  key TEXT NOT NULL,\n"
	"  batch INTEGER NOT NULL,\n"
	"  heads INTEGER NOT NULL,\n"
	"  kv_heads INTEGER NOT NULL,\n"
	"  q_len INTEGER NOT NULL,\n"
	"  kv_len INTEGER NOT NULL,\n"
	"  head_dim INTEGER NOT NULL,\n"
	"  head_dim_v INTEGER NOT NULL,\n"
	"  dtype TEXT NOT NULL,\n"
	"  mask TEXT NOT NULL,\n"
	"  prefix_len INTEGER,\n"
	"  window INTEGER,\n"
	"  layout TEXT NOT NULL,\n"
	"  input TEXT NOT NULL,\n"
	"  varlen INTEGER NOT NULL CHECK (varlen IN (0, 1)),\n"
	"  seqlens TEXT,\n"
	"  kv_seqlens TEXT,\n"
	"  prefix_lens TEXT,\n"
	"  total_q INTEGER NOT NULL,\n"
	"  total_k INTEGER NOT NULL,\n"
	"  scale REAL NOT NULL,\n"
	"  scale_set INTEGER NOT NULL CHECK (scale_set IN (0, 1)),\n"
	"  seed TEXT NOT NULL,\n"
	"  UNIQUE (run_id, idx)\n"
	");\n"
	"CREATE INDEX cases_by_key ON cases(key, run_id);\n"
	"CREATE TABLE results (\n"
	"  id INTEGER PRIMARY KEY,\n"
	"  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,\n"
	"  case_id INTEGER NOT NULL REFERENCES cases(id) ON DELETE CASCADE,\n"
	"  kernel TEXT NOT NULL,\n"
	"  backend TEXT,\n"
	"  params TEXT NOT NULL DEFAULT '',\n"
	"  status TEXT NOT NULL\n"
	"    CHECK (status IN ('pass', 'fail', 'skip', 'error', 'timeout')),\n"
	"  reason TEXT,\n"
	"  timing TEXT,\n"
	"  n_samples INTEGER NOT NULL DEFAULT 0,\n"
	"  discarded INTEGER NOT NULL DEFAULT 0,\n"
	"  stop_reason TEXT,\n"
	"  median_ms REAL,\n"
	"  mean_ms REAL,\n"
	"  min_ms REAL,\n"
	"  max_ms REAL,\n"
	"  stdev_ms REAL,\n"
	"  flops REAL,\n"
	"  tflops REAL,\n"
	"  bytes REAL,\n"
	"  gbps REAL,\n"
	"  checked INTEGER NOT NULL DEFAULT 0 CHECK (checked IN (0, 1)),\n"
	"  max_abs REAL,\n"
	"  max_rel REAL,\n"
	"  mean_abs REAL,\n"
	"  rel_l2 REAL,\n"
	"  nmse REAL,\n"
	"  same_max_abs REAL,\n"
	"  nan_count INTEGER,\n"
	"  inf_count INTEGER,\n"
	"  unwritten INTEGER,\n"
	"  worst_index INTEGER,\n"
	"  worst_out REAL,\n"
	"  worst_ref REAL,\n"
	"  rows_checked INTEGER,\n"
	"  elems_checked INTEGER,\n"
	"  rule TEXT,\n"
	"  mem_bytes REAL,\n"
	"  sm_clock_mhz REAL,\n"
	"  sm_clock_max_mhz REAL,\n"
	"  temp_c REAL,\n"
	"  power_w REAL,\n"
	"  throttle_reasons INTEGER,\n"
	"  created_at TEXT NOT NULL DEFAULT (" NOW_SQL ")\n"
	");\n"
	"CREATE INDEX results_by_run ON results(run_id, kernel);\n"
	"CREATE INDEX results_by_case ON results(case_id);\n"
	"CREATE TABLE samples (\n"
	"  result_id INTEGER NOT NULL REFERENCES results(id) ON DELETE CASCADE,\n"
	"  seq INTEGER NOT NULL,\n"
	"  time_ms REAL NOT NULL,\n"
	"  PRIMARY KEY (result_id, seq)\n"
	") WITHOUT ROWID;\n"
	"CREATE TABLE calibrations (\n"
	"  id INTEGER PRIMARY KEY,\n"
	"  measured_at TEXT NOT NULL,\n"
	"  backend TEXT NOT NULL,\n"
	"  device_name TEXT NOT NULL,\n"
	"  device_arch TEXT,\n"
	"  driver TEXT,\n"
	"  runtime TEXT,\n"
	"  copy_gbps REAL,\n"
	"  matmul_tflops REAL,\n"
	"  matmul_fp32_tflops REAL,\n"
	"  method TEXT\n"
	");\n"
	"CREATE INDEX calibrations_by_device ON calibrations(device_name, id);\n",
	/* 1 -> 2: the two runs of one `run --ab` share a group, so compare can
	 * pair their samples (they were taken in turn) */
	"ALTER TABLE runs ADD COLUMN ab_group TEXT;\n",
	/* 2 -> 3: what a run is doing while a kernel runs, so that a process
	 * killed by a crashing kernel leaves its name behind */
	"ALTER TABLE runs ADD COLUMN running TEXT;\n",
	/* 3 -> 4: runs spread over GPUs and machines (issue 14): the share of
	 * the cases a run took (--shard K/N), the devices its workers drove
	 * (--devices), and the device each result was measured on */
	"ALTER TABLE runs ADD COLUMN shard TEXT;\n"
	"ALTER TABLE runs ADD COLUMN devices TEXT;\n"
	"ALTER TABLE results ADD COLUMN device INTEGER;\n"
	"ALTER TABLE runs ADD COLUMN merged_from TEXT;\n",
	/* 4 -> 5: `fabench build-matrix` (harness/store/buildstore.c): every
	 * kernel source compiled for every target, and per kernel what the
	 * compiler reported */
	"CREATE TABLE build_runs (\n"
	"  id INTEGER PRIMARY KEY,\n"
	"  started_at TEXT NOT NULL,\n"
	"  finished_at TEXT,\n"
	"  git_commit TEXT,\n"
	"  git_dirty INTEGER CHECK (git_dirty IN (0, 1)),\n"
	"  host TEXT,\n"
	"  label TEXT,\n"
	"  command_line TEXT,\n"
	"  version TEXT,\n"
	"  tools TEXT,\n"
	"  status TEXT NOT NULL DEFAULT 'incomplete'\n"
	"    CHECK (status IN ('incomplete', 'complete'))\n"
	");\n"
	"CREATE INDEX build_runs_by_label ON build_runs(label, id);\n"
	"CREATE TABLE build_results (\n"
	"  id INTEGER PRIMARY KEY,\n"
	"  build_id INTEGER NOT NULL REFERENCES build_runs(id) ON DELETE CASCADE,\n"
	"  source TEXT NOT NULL,\n"
	"  arch TEXT NOT NULL,\n"
	"  family TEXT NOT NULL,\n"
	"  compiler TEXT,\n"
	"  status TEXT NOT NULL CHECK (status IN ('ok', 'failed', 'skipped')),\n"
	"  error TEXT,\n"
	"  compile_s REAL,\n"
	"  symbol TEXT,\n"
	"  name TEXT,\n"
	"  regs INTEGER,\n"
	"  sgprs INTEGER,\n"
	"  shared_bytes INTEGER,\n"
	"  scratch_bytes INTEGER,\n"
	"  spill_bytes INTEGER,\n"
	"  spill_regs INTEGER,\n"
	"  matrix_count INTEGER,\n"
	"  matrix TEXT,\n"
	"  isa_from TEXT\n"
	");\n"
	"CREATE INDEX build_results_by_build ON build_results(build_id, source, arch);\n",
	/* 5 -> 6: the labels of a case (the models that share its shape) and
	 * its depth, for tokens/s per model and reports */
	"CREATE TABLE IF NOT EXISTS case_tags (\n"
	"  case_id INTEGER NOT NULL REFERENCES cases(id) ON DELETE CASCADE,\n"
	"  seq INTEGER NOT NULL,\n"
	"  name TEXT NOT NULL,\n"
	"  model INTEGER NOT NULL CHECK (model IN (0, 1)),\n"
	"  layers INTEGER,\n"
	"  PRIMARY KEY (case_id, seq)\n"
	") WITHOUT ROWID;\n"
	"CREATE TABLE IF NOT EXISTS case_depth (\n"
	"  case_id INTEGER PRIMARY KEY REFERENCES cases(id) ON DELETE CASCADE,\n"
	"  depth INTEGER NOT NULL\n"
	");\n",
	/* 6 -> 7: the backward pass: what a case times, and the error
	 * statistics of each gradient of a result */
	"ALTER TABLE cases ADD COLUMN pass TEXT NOT NULL DEFAULT 'fwd';\n"
	"CREATE TABLE grad_stats (\n"
	"  result_id INTEGER NOT NULL REFERENCES results(id) ON DELETE CASCADE,\n"
	"  tensor TEXT NOT NULL CHECK (tensor IN ('dq', 'dk', 'dv')),\n"
	"  max_abs REAL,\n"
	"  max_rel REAL,\n"
	"  mean_abs REAL,\n"
	"  rel_l2 REAL,\n"
	"  nmse REAL,\n"
	"  same_max_abs REAL,\n"
	"  nan_count INTEGER,\n"
	"  inf_count INTEGER,\n"
	"  unwritten INTEGER,\n"
	"  worst_index INTEGER,\n"
	"  worst_out REAL,\n"
	"  worst_ref REAL,\n"
	"  rows_checked INTEGER,\n"
	"  elems_checked INTEGER,\n"
	"  PRIMARY KEY (result_id, tensor)\n"
	") WITHOUT ROWID;\n",
	/* 7 -> 8: what tells two runs apart that share a second, a host, a
	 * seed and a command line (merge.c's identity) */
	"ALTER TABLE runs ADD COLUMN uid TEXT;\n",
};

_Static_assert(sizeof migrations / sizeof migrations[0] == FA_STORE_SCHEMA_VERSION,
	       "one migration per schema version");

/* The cached prepared statements, prepared on first use. */
enum stmt_id {
	ST_RUN_BEGIN,
	ST_RUN_END,
	ST_RUN_RUNNING,
	ST_CASE,
	ST_RESULT,
	ST_SAMPLE,
	ST_GRAD,
	ST_FIND_LATEST,
	ST_FIND_ID,
	ST_FIND_LABEL,
	ST_CAL_SAVE,
	ST_CAL_GET,
	ST_IMPORT_CASE,
	ST_IMPORT_NEXT_IDX,
	ST_IMPORT_HAS_RESULT,
	ST_IMPORT_SOURCE,
	ST_CASE_TAG,
	ST_CASE_DEPTH,
	ST_COUNT
};

static const char *const stmt_sql[ST_COUNT] = {
	[ST_RUN_BEGIN] =
		"INSERT INTO runs (started_at, git_commit, git_dirty, host, backend, device_name,"
		" device_arch, driver, runtime, suite_path, suite_name, suite_hash, command_line,"
		" label, seed, version, source, ab_group, uid, status)"
		" VALUES (COALESCE(?, " NOW_SQL "), ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?,"
		" COALESCE(?, 'fabench'), ?, ?, 'incomplete')",
	[ST_RUN_END] = "UPDATE runs SET status = ?, running = NULL, finished_at = " NOW_SQL
		       " WHERE id = ?",
	[ST_RUN_RUNNING] = "UPDATE runs SET running = ? WHERE id = ?",
	[ST_CASE] = "INSERT INTO cases (run_id, idx, key, batch, heads, kv_heads, q_len, kv_len,"
		    " head_dim, head_dim_v, dtype, mask, prefix_len, window, layout, input, varlen,"
		    " seqlens, kv_seqlens, prefix_lens, total_q, total_k, scale, scale_set, seed,"
		    " pass)"
		    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?,"
		    " ?, ?)",
	[ST_CASE_DEPTH] = "INSERT INTO case_depth (case_id, depth) VALUES (?, ?)",
	[ST_CASE_TAG] = "INSERT INTO case_tags (case_id, seq, name, model, layers)"
			" VALUES (?, ?, ?, ?, ?)",
	[ST_RESULT] =
		"INSERT INTO results (run_id, case_id, kernel, backend, params, status, reason,"
		" timing, n_samples, discarded, stop_reason, median_ms, mean_ms, min_ms, max_ms,"
		" stdev_ms, flops, tflops, bytes, gbps, checked, max_abs, max_rel, mean_abs, rel_l2,"
		" nmse, same_max_abs, nan_count, inf_count, unwritten, worst_index, worst_out,"
		" worst_ref, rows_checked, elems_checked, rule, mem_bytes, sm_clock_mhz,"
		" sm_clock_max_mhz, temp_c, power_w, throttle_reasons)"
		" VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?,"
		" ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
	[ST_SAMPLE] = "INSERT INTO samples (result_id, seq, time_ms) VALUES (?, ?, ?)",
	[ST_GRAD] = "INSERT INTO grad_stats (result_id, tensor, max_abs, max_rel, mean_abs, rel_l2,"
		    " nmse, same_max_abs, nan_count, inf_count, unwritten, worst_index, worst_out,"
		    " worst_ref, rows_checked, elems_checked)"
		    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
	[ST_FIND_LATEST] = "SELECT id FROM runs ORDER BY id DESC LIMIT 1",
	[ST_FIND_ID] = "SELECT id FROM runs WHERE id = ?",
	[ST_FIND_LABEL] = "SELECT id FROM runs WHERE label = ? ORDER BY id DESC LIMIT 1",
	[ST_CAL_SAVE] = "INSERT INTO calibrations (measured_at, backend, device_name, device_arch,"
			" driver, runtime, copy_gbps, matmul_tflops, matmul_fp32_tflops, method)"
			" VALUES (COALESCE(?, " NOW_SQL "), ?, ?, ?, ?, ?, ?, ?, ?, ?)",
	[ST_CAL_GET] = ("SELECT copy_gbps, matmul_tflops, matmul_fp32_tflops, method"
			" FROM calibrations WHERE device_name = ? ORDER BY id DESC LIMIT 1"),
	[ST_IMPORT_CASE] = "SELECT id FROM cases WHERE run_id = ? AND key = ? ORDER BY idx LIMIT 1",
	[ST_IMPORT_NEXT_IDX] = "SELECT COALESCE(MAX(idx), -1) + 1 FROM cases WHERE run_id = ?",
	[ST_IMPORT_HAS_RESULT] = "SELECT 1 FROM results WHERE run_id = ? AND case_id = ? AND"
				 " kernel = ? AND params = ? LIMIT 1",
	/* append " + note" unless the source already names it */
	[ST_IMPORT_SOURCE] = "UPDATE runs SET source = source || ' + ' || ?1 WHERE id = ?2 AND"
			     " instr(' + ' || source || ' + ', ' + ' || ?1 || ' + ') = 0",
};

struct fa_store {
	sqlite3 *db;
	char *path;
	sqlite3_stmt *stmt[ST_COUNT];
	int claim_fd; /* the file, for the claims of runs (fa_store_run_claim); -1 */
	struct timespec busy_since; /* when the current wait for a lock began */
	int busy_noted;             /* the current wait was announced */
};

sqlite3 *fa_store_db(struct fa_store *s)
{
	return s->db;
}

const char *fa_store_path(const struct fa_store *s)
{
	return s->path;
}

const char *fa_status_name(int status)
{
	static const char *const names[] = {
		[FA_STATUS_PASS] = "pass",   [FA_STATUS_FAIL] = "fail",
		[FA_STATUS_SKIP] = "skip",   [FA_STATUS_ERROR] = "error",
		[FA_STATUS_TIMEOUT] = "timeout", [FA_STATUS_UNCHECKED] = "unchecked",
	};
	if (status >= 0 && status < (int)(sizeof names / sizeof names[0]))
		return names[status];
	return NULL;
}

int fa_status_effective(int status, int checked)
{
	return status == FA_STATUS_PASS && !checked ? FA_STATUS_UNCHECKED : status;
}

int fa_status_parse(const char *s)
{
	for (int i = 0; s && fa_status_name(i); i++)
		if (strcmp(fa_status_name(i), s) == 0)
			return i;
	return -1;
}

/* Runs SQL without results (BEGIN, COMMIT, migrations). Returns the SQLite
 * code; the message stays in sqlite3_errmsg. */
static int exec_sql(sqlite3 *db, const char *sql)
{
	return sqlite3_exec(db, sql, NULL, NULL, NULL);
}

/* Reads an integer PRAGMA (user_version). Returns the SQLite code. */
static int pragma_int(sqlite3 *db, const char *sql, int *value)
{
	sqlite3_stmt *st;
	int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
	if (rc != SQLITE_OK)
		return rc;
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		*value = sqlite3_column_int(st, 0);
		rc = SQLITE_OK;
	}
	sqlite3_finalize(st);
	return rc;
}

/* Why a write failed, for an I/O error or a full disk: the system's words
 * where SQLite kept them, and the file-size limit (ulimit -f) where the
 * database or its journal has reached it, which SQLite reports as a bare
 * "disk I/O error" (the write's EFBIG is not kept). "" otherwise. */
struct io_why {
	char text[160];
};
static struct io_why io_reason(sqlite3 *db, const char *path, int rc)
{
	struct io_why w = {""};
	const int primary = rc & 0xff;
	struct rlimit lim;
	if (primary != SQLITE_IOERR && primary != SQLITE_FULL)
		return w;
	const int e = db ? sqlite3_system_errno(db) : 0;
	if (getrlimit(RLIMIT_FSIZE, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY) {
		static const char *const ext[] = {"", "-wal", "-journal"};
		for (int i = 0; i < 3; i++) {
			char f[4096];
			struct stat st;
			snprintf(f, sizeof f, "%s%s", path, ext[i]);
			/* within a page (64 KiB at most) of the limit */
			if (stat(f, &st) == 0 && (uint64_t)st.st_size + 65536 >= (uint64_t)lim.rlim_cur) {
				snprintf(w.text, sizeof w.text,
					 " (%s reached the file-size limit of %llu bytes: ulimit -f)",
					 i == 0 ? "the file" : ext[i] + 1, (unsigned long long)lim.rlim_cur);
				return w;
			}
		}
	}
	if (e != 0)
		snprintf(w.text, sizeof w.text, " (%s)", strerror(e));
	return w;
}

/* The error for a failed SQLite call on the store's file: "<what> in
 * '<path>': <sqlite's words>", or a clearer line for a file that is not a
 * database at all. */
static enum fa_rc db_error(sqlite3 *db, const char *path, int rc, struct fa_err *err,
			   const char *what)
{
	int primary = rc & 0xff;
	if (primary == SQLITE_NOMEM)
		return fa_err_set(err, FA_ERR_NOMEM, "%s in '%s': out of memory", what, path);
	if (primary == SQLITE_NOTADB)
		return fa_err_set(err, FA_ERR_DB, "file '%s' is not a SQLite database", path);
	if (primary == SQLITE_CANTOPEN)
		return fa_err_set(err, FA_ERR_IO, "cannot open database '%s': %s", path,
				  db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
	return fa_err_set(err, FA_ERR_DB, "%s in '%s': %s%s", what, path,
			  db ? sqlite3_errmsg(db) : sqlite3_errstr(rc), io_reason(db, path, rc).text);
}

int fa_store_foreign(struct sqlite3 *db)
{
	int version = 0, tables = 0;
	if (pragma_int(db, "PRAGMA user_version", &version) != SQLITE_OK ||
	    pragma_int(db, "SELECT count(*) FROM sqlite_master", &tables) != SQLITE_OK)
		return -1;
	return version == 0 && tables > 0;
}

static enum fa_rc foreign_error(const char *path, struct fa_err *err)
{
	return fa_err_set(err, FA_ERR_DB,
			  "database '%s' is not fabench's: it holds tables but no fabench schema "
			  "(left as it is)",
			  path);
}

/* Applies the migrations from the file's version up to ours, each in its own
 * transaction. The version is read again inside the write transaction, so
 * two processes opening a new file at once migrate it once. */
static enum fa_rc migrate(struct fa_store *s, struct fa_err *err)
{
	for (;;) {
		int version = 0, rc;
		char sql[64];
		rc = pragma_int(s->db, "PRAGMA user_version", &version);
		if (rc != SQLITE_OK)
			return db_error(s->db, s->path, rc, err, "cannot read the schema version");
		if (version > FA_STORE_SCHEMA_VERSION)
			return fa_err_set(err, FA_ERR_DB,
					  "database '%s' has schema version %d, newer than this "
					  "fabench supports (%d)",
					  s->path, version, FA_STORE_SCHEMA_VERSION);
		if (version == FA_STORE_SCHEMA_VERSION)
			return FA_OK;
		if (version < 0)
			return fa_err_set(err, FA_ERR_DB, "database '%s' has schema version %d",
					  s->path, version);
		rc = exec_sql(s->db, "BEGIN IMMEDIATE");
		if (rc != SQLITE_OK)
			return db_error(s->db, s->path, rc, err, "cannot start a migration");
		rc = pragma_int(s->db, "PRAGMA user_version", &version);
		if (rc == SQLITE_OK && version >= 0 && version < FA_STORE_SCHEMA_VERSION) {
			rc = exec_sql(s->db, migrations[version]);
			/* PRAGMA takes no bound parameters; the value is our own integer */
			snprintf(sql, sizeof sql, "PRAGMA user_version = %d", version + 1);
			if (rc == SQLITE_OK)
				rc = exec_sql(s->db, sql);
		}
		if (rc == SQLITE_OK)
			rc = exec_sql(s->db, "COMMIT");
		if (rc != SQLITE_OK) {
			char what[96];
			snprintf(what, sizeof what, "cannot migrate to schema version %d",
				 version + 1);
			enum fa_rc frc = db_error(s->db, s->path, rc, err, what);
			exec_sql(s->db, "ROLLBACK");
			return frc;
		}
	}
}

void fa_store_close(struct fa_store *s)
{
	if (!s)
		return;
	for (int i = 0; i < ST_COUNT; i++)
		sqlite3_finalize(s->stmt[i]);
	sqlite3_close_v2(s->db);
	/* after SQLite's own descriptor: closing any descriptor of a file drops
	 * the process's POSIX locks on it, SQLite's too */
	if (s->claim_fd >= 0)
		close(s->claim_fd);
	free(s->path);
	free(s);
}

/* Opens name (a path or a file: URI) with flags into a new store for path,
 * with extended result codes and the busy timeout: what both opens share.
 * On failure *out is NULL and err says why. */
/* SQLite's busy handler: waits in steps of 20 ms for another process's
 * transaction, up to STORE_BUSY_TIMEOUT_MS (then SQLITE_BUSY), and says so
 * once the wait passes STORE_BUSY_NOTE_MS. count is 0 at a wait's first
 * call. */
static int busy_wait(void *arg, int count)
{
	struct fa_store *s = arg;
	struct timespec now, step = {0, 20 * 1000 * 1000};
	double ms;
	clock_gettime(CLOCK_MONOTONIC, &now);
	if (count == 0) {
		s->busy_since = now;
		s->busy_noted = 0;
	}
	ms = (double)(now.tv_sec - s->busy_since.tv_sec) * 1e3 +
	     (double)(now.tv_nsec - s->busy_since.tv_nsec) / 1e6;
	if (ms >= STORE_BUSY_TIMEOUT_MS)
		return 0;
	if (ms >= STORE_BUSY_NOTE_MS && !s->busy_noted) {
		char shown[512];
		fprintf(stderr,
			"fabench: waiting for another process that is writing '%s' (at most %d "
			"minutes)\n",
			fa_printable(s->path, shown, sizeof shown), STORE_BUSY_TIMEOUT_MS / 60000);
		s->busy_noted = 1;
	}
	nanosleep(&step, NULL);
	return 1;
}

static enum fa_rc store_connect(const char *path, const char *name, int flags,
				struct fa_store **out, struct fa_err *err)
{
	struct fa_store *s = calloc(1, sizeof *s);
	enum fa_rc frc;
	int rc;
	*out = NULL;
	if (!s || !(s->path = strdup(path))) {
		free(s);
		return fa_err_set(err, FA_ERR_NOMEM, "out of memory opening '%s'", path);
	}
	s->claim_fd = -1;
	rc = sqlite3_open_v2(name, &s->db, flags, NULL);
	if (rc != SQLITE_OK) {
		if (!s->db) {
			fa_store_close(s);
			return fa_err_set(err, FA_ERR_NOMEM, "out of memory opening '%s'", path);
		}
		frc = db_error(s->db, path, rc, err, "cannot open database");
		fa_store_close(s);
		return frc;
	}
	sqlite3_extended_result_codes(s->db, 1);
	sqlite3_busy_handler(s->db, busy_wait, s);
	*out = s;
	return FA_OK;
}

/* Whether a path may be written: access() says no (a read-only mount, a
 * user without rights), or it has no write bit at all (root passes access()
 * on a file chmod'ed read-only; its owner meant it to stay as it is). */
static int path_writable(const char *path)
{
	struct stat sb;
	if (access(path, W_OK) != 0 || stat(path, &sb) != 0)
		return 0;
	return (sb.st_mode & (S_IWUSR | S_IWGRP | S_IWOTH)) != 0;
}

/* The folder of path, into buf: "." for a bare name, "/" for "/x". */
static void folder_of(const char *path, char *buf, size_t size)
{
	const char *slash = strrchr(path, '/');
	if (!slash)
		snprintf(buf, size, ".");
	else
		snprintf(buf, size, "%.*s", slash == path ? 1 : (int)(slash - path), path);
}

enum fa_rc fa_store_open(const char *path, int create, struct fa_store **out, struct fa_err *err)
{
	struct fa_store *s;
	struct stat sb;
	int memory = strcmp(path, ":memory:") == 0, rc;
	enum fa_rc frc;

	*out = NULL;
	if (!memory) {
		if (stat(path, &sb) != 0) {
			if (errno != ENOENT)
				return fa_err_set(err, FA_ERR_IO, "cannot open database '%s': %s",
						  path, strerror(errno));
			if (!create)
				return fa_err_set(err, FA_ERR_NOT_FOUND, "no database at '%s'", path);
			if (fa_mkdir_parent(path) != 0)
				return fa_err_set(err, FA_ERR_IO,
						  "cannot create the folder of '%s': %s", path,
						  strerror(errno));
		} else if (S_ISDIR(sb.st_mode)) {
			return fa_err_set(err, FA_ERR_IO, "database '%s' is a folder", path);
		} else if (!path_writable(path)) {
			/* refused before SQLite opens it: it would open it read-only,
			 * leave a -wal and -shm beside it that its owner may not be
			 * able to write, and fail at the first write */
			return fa_err_set(err, FA_ERR_IO,
					  "database '%s' is read-only: this command writes to it",
					  path);
		}
		/* SQLite writes its -wal and -shm beside the file */
		char dir[4096], wal[4200];
		folder_of(path, dir, sizeof dir);
		snprintf(wal, sizeof wal, "%s-wal", path);
		if (!path_writable(dir) && stat(wal, &sb) != 0)
			return fa_err_set(err, FA_ERR_IO,
					  "cannot write database '%s': its folder '%s' is read-only "
					  "(SQLite keeps its -wal and -shm files beside it)",
					  path, dir);
	}
	frc = store_connect(path, path,
			    SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0), &s, err);
	if (frc != FA_OK)
		return frc;
	/* The first statement reads the file: a file that is not a database
	 * fails here. WAL lets readers (report, compare) work beside a run
	 * that writes; NORMAL sync is safe under WAL (a power cut may lose the
	 * last commits, never corrupt the file). */
	rc = exec_sql(s->db, "PRAGMA journal_mode = WAL");
	if (rc == SQLITE_OK)
		rc = exec_sql(s->db, "PRAGMA foreign_keys = ON");
	if (rc == SQLITE_OK)
		rc = exec_sql(s->db, "PRAGMA synchronous = NORMAL");
	if (rc != SQLITE_OK) {
		frc = db_error(s->db, path, rc, err, "cannot set up database");
		fa_store_close(s);
		return frc;
	}
	frc = migrate(s, err);
	if (frc != FA_OK) {
		fa_store_close(s);
		return frc;
	}
	*out = s;
	return FA_OK;
}

int fa_store_readonly_uri(const char *path, int writable, char *buf, size_t size)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t n = 0;
	int len;
	/* "file:" then the path with every byte outside [A-Za-z0-9/._~-]
	 * percent-encoded ('?', '#', '%' would otherwise end or escape it); an
	 * absolute path gets an empty authority ("file:///abs") so "//x" is not
	 * read as a host */
	len = snprintf(buf, size, "file:%s", path[0] == '/' ? "//" : "");
	if (len < 0 || (size_t)len >= size)
		return -1;
	n = (size_t)len;
	for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
		int plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
			    (*p >= '0' && *p <= '9') || strchr("/._~-", *p);
		if (n + (plain ? 1 : 3) >= size)
			return -1;
		if (plain) {
			buf[n++] = (char)*p;
		} else {
			buf[n++] = '%';
			buf[n++] = hex[*p >> 4];
			buf[n++] = hex[*p & 15];
		}
	}
	len = snprintf(buf + n, size - n, "?mode=ro%s", writable ? "" : "&immutable=1");
	if (len < 0 || (size_t)len >= size - n)
		return -1;
	return 0;
}

enum fa_rc fa_store_open_readonly(const char *path, struct fa_store **out, struct fa_err *err)
{
	struct fa_store *s;
	struct stat sb;
	char *dir, *slash, *wal, *uri;
	size_t uri_size;
	int writable, version = 0, rc;
	enum fa_rc frc;

	*out = NULL;
	if (strcmp(path, ":memory:") == 0)
		return fa_err_set(err, FA_ERR_NOT_FOUND, "no database at '%s'", path);
	if (stat(path, &sb) != 0) {
		if (errno != ENOENT)
			return fa_err_set(err, FA_ERR_IO, "cannot open database '%s': %s", path,
					  strerror(errno));
		return fa_err_set(err, FA_ERR_NOT_FOUND, "no database at '%s'", path);
	}
	if (S_ISDIR(sb.st_mode))
		return fa_err_set(err, FA_ERR_IO, "database '%s' is a folder", path);
	dir = strdup(path);
	wal = malloc(strlen(path) + 5);
	uri_size = 3 * strlen(path) + 64;
	uri = malloc(uri_size);
	if (!dir || !wal || !uri) {
		free(dir);
		free(wal);
		free(uri);
		return fa_err_set(err, FA_ERR_NOMEM, "out of memory opening '%s'", path);
	}
	slash = strrchr(dir, '/');
	if (slash)
		slash[slash == dir ? 1 : 0] = '\0';
	else
		strcpy(dir, ".");
	sprintf(wal, "%s-wal", path);
	/* Immutable (no locks, no -wal/-shm created) where nothing can write
	 * the file: the file or its folder is read-only. A -wal left beside it
	 * holds commits the file lacks, so then SQLite must read it: mode=ro
	 * alone. */
	writable = (path_writable(path) && path_writable(dir)) || stat(wal, &sb) == 0;
	free(dir);
	free(wal);
	if (fa_store_readonly_uri(path, writable, uri, uri_size) != 0) {
		free(uri);
		return fa_err_set(err, FA_ERR_INTERNAL, "database path '%s' too long", path);
	}
	frc = store_connect(path, uri, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, &s, err);
	free(uri);
	if (frc != FA_OK)
		return frc;
	/* One read transaction from the first read to fa_store_close: every
	 * query of a report or comparison sees the database as it was then, so
	 * a run committing cases meanwhile (WAL: it does not wait on us) never
	 * shows up half-read, a result without its case. The first read, in
	 * it: a file that is not a database fails here. */
	rc = exec_sql(s->db, "BEGIN");
	if (rc == SQLITE_OK)
		rc = pragma_int(s->db, "PRAGMA user_version", &version);
	if (rc != SQLITE_OK) {
		frc = db_error(s->db, path, rc, err, "cannot read the schema version");
		fa_store_close(s);
		return frc;
	}
	/* a reader never writes fabench's tables into another program's
	 * database (a writer, run --db, adds them beside its own) */
	if (version == 0 && (rc = fa_store_foreign(s->db)) != 0) {
		fa_store_close(s);
		if (rc < 0)
			return fa_err_set(err, FA_ERR_DB, "cannot read the tables of '%s'", path);
		return foreign_error(path, err);
	}
	if (version == 0) {
		/* no tables at all (an empty file, `: > x.db`): a database with
		 * no runs. Read as one, from fabench's schema in memory, so the
		 * file stays as it is: no tables written, no -wal or -shm. */
		fa_store_close(s);
		frc = store_connect(path, ":memory:", SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, &s,
				    err);
		if (frc == FA_OK && (frc = migrate(s, err)) == FA_OK &&
		    (rc = exec_sql(s->db, "PRAGMA query_only = ON")) != SQLITE_OK)
			frc = db_error(s->db, path, rc, err, "cannot set up database");
		if (frc != FA_OK) {
			fa_store_close(s);
			return frc;
		}
		*out = s;
		return FA_OK;
	}
	if (version != FA_STORE_SCHEMA_VERSION) {
		fa_store_close(s);
		if (version > FA_STORE_SCHEMA_VERSION || version < 0)
			return fa_err_set(err, FA_ERR_DB,
					  "database '%s' has schema version %d, newer than this "
					  "fabench supports (%d)",
					  path, version, FA_STORE_SCHEMA_VERSION);
		if (!writable)
			return fa_err_set(err, FA_ERR_DB,
					  "database '%s' has schema version %d and is read-only: "
					  "this fabench reads version %d (a writer such as fabench "
					  "import migrates it)",
					  path, version, FA_STORE_SCHEMA_VERSION);
		/* an older file that may be written: migrate it as a writer
		 * would, then read it read-only */
		frc = fa_store_open(path, 0, &s, err);
		if (frc != FA_OK)
			return frc;
		fa_store_close(s);
		return fa_store_open_readonly(path, out, err);
	}
	*out = s;
	return FA_OK;
}

/* The cached statement id, reset and with its bindings cleared; NULL (and
 * err filled) when it cannot be prepared. */
static sqlite3_stmt *stmt_get(struct fa_store *s, enum stmt_id id, struct fa_err *err)
{
	sqlite3_stmt *st = s->stmt[id];
	if (!st) {
		int rc = sqlite3_prepare_v3(s->db, stmt_sql[id], -1, SQLITE_PREPARE_PERSISTENT,
					    &st, NULL);
		if (rc != SQLITE_OK) {
			db_error(s->db, s->path, rc, err, "cannot prepare a statement");
			return NULL;
		}
		s->stmt[id] = st;
	}
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	return st;
}

/* Binding helpers: each binds parameter *i and advances it. */
static void bind_text(sqlite3_stmt *st, int *i, const char *v)
{
	if (v)
		sqlite3_bind_text(st, (*i)++, v, -1, SQLITE_TRANSIENT);
	else
		sqlite3_bind_null(st, (*i)++);
}

/* Optional text: NULL and "" are both stored as NULL. */
static void bind_opt_text(sqlite3_stmt *st, int *i, const char *v)
{
	bind_text(st, i, v && v[0] ? v : NULL);
}

static void bind_int(sqlite3_stmt *st, int *i, int64_t v)
{
	sqlite3_bind_int64(st, (*i)++, v);
}

static void bind_null(sqlite3_stmt *st, int *i)
{
	sqlite3_bind_null(st, (*i)++);
}

/* A real; NaN is stored as NULL (unknown). */
static void bind_real(sqlite3_stmt *st, int *i, double v)
{
	if (isnan(v))
		sqlite3_bind_null(st, (*i)++);
	else
		sqlite3_bind_double(st, (*i)++, v);
}

/* A real when present, else NULL. */
static void bind_real_if(sqlite3_stmt *st, int *i, int present, double v)
{
	if (present)
		bind_real(st, i, v);
	else
		bind_null(st, i);
}

static void bind_int_if(sqlite3_stmt *st, int *i, int present, int64_t v)
{
	if (present)
		bind_int(st, i, v);
	else
		bind_null(st, i);
}

static void bind_u64_text(sqlite3_stmt *st, int *i, uint64_t v)
{
	char buf[24];
	snprintf(buf, sizeof buf, "%" PRIu64, v);
	bind_text(st, i, buf);
}

/* Steps a statement that returns no rows and resets it. Returns the SQLite
 * code (SQLITE_DONE on success); the message stays in sqlite3_errmsg until
 * the next call. */
static int step_done(sqlite3_stmt *st, int n_bound)
{
	int rc;
	/* every parameter bound exactly once */
	assert(n_bound == sqlite3_bind_parameter_count(st));
	(void)n_bound;
	rc = sqlite3_step(st);
	if (rc == SQLITE_DONE)
		sqlite3_reset(st);
	return rc;
}

enum fa_rc fa_store_run_begin(struct fa_store *s, const struct fa_run_info *ri, int64_t *run_id,
			      struct fa_err *err)
{
	sqlite3_stmt *st = stmt_get(s, ST_RUN_BEGIN, err);
	int i = 1, rc, own;
	int64_t id;
	*run_id = 0;
	if (!st)
		return FA_ERR_DB;
	bind_opt_text(st, &i, ri->started_at);
	bind_opt_text(st, &i, ri->git_commit);
	bind_int_if(st, &i, ri->git_dirty == 0 || ri->git_dirty == 1, ri->git_dirty);
	bind_opt_text(st, &i, ri->host);
	bind_opt_text(st, &i, ri->backend);
	bind_opt_text(st, &i, ri->device_name);
	bind_opt_text(st, &i, ri->device_arch);
	bind_opt_text(st, &i, ri->driver);
	bind_opt_text(st, &i, ri->runtime);
	bind_opt_text(st, &i, ri->suite_path);
	bind_opt_text(st, &i, ri->suite_name);
	bind_opt_text(st, &i, ri->suite_hash);
	bind_opt_text(st, &i, ri->command_line);
	bind_opt_text(st, &i, ri->label);
	bind_u64_text(st, &i, ri->seed);
	bind_opt_text(st, &i, ri->version);
	bind_opt_text(st, &i, ri->source);
	bind_opt_text(st, &i, ri->ab_group);
	{
		char uid[33];
		fa_random_hex(uid, sizeof uid);
		bind_opt_text(st, &i, uid);
	}
	/* outside a transaction (a run, not an import) the run is claimed
	 * before its row is committed: no run --resume can see it unclaimed */
	own = sqlite3_get_autocommit(s->db);
	if (own && (rc = exec_sql(s->db, "BEGIN IMMEDIATE")) != SQLITE_OK) {
		sqlite3_reset(st);
		return db_error(s->db, s->path, rc, err, "cannot record the run");
	}
	rc = step_done(st, i - 1);
	if (rc != SQLITE_DONE) {
		enum fa_rc frc = db_error(s->db, s->path, rc, err, "cannot record the run");
		sqlite3_reset(st);
		if (own)
			exec_sql(s->db, "ROLLBACK");
		return frc;
	}
	id = sqlite3_last_insert_rowid(s->db);
	if (own) {
		enum fa_rc frc = fa_store_run_claim(s, id, err);
		if (frc == FA_OK && (rc = exec_sql(s->db, "COMMIT")) != SQLITE_OK)
			frc = db_error(s->db, s->path, rc, err, "cannot record the run");
		if (frc != FA_OK) {
			exec_sql(s->db, "ROLLBACK");
			return frc;
		}
	}
	*run_id = id;
	return FA_OK;
}

enum fa_rc fa_store_run_claim(struct fa_store *s, int64_t run_id, struct fa_err *err)
{
#ifdef F_OFD_SETLK
	struct flock fl;
	if (strcmp(s->path, ":memory:") == 0)
		return FA_OK;
	/* opened once, closed by fa_store_close after SQLite's own: its
	 * claims last as long as the store (or the process: a kill -9 frees
	 * them) */
	if (s->claim_fd < 0 && (s->claim_fd = open(s->path, O_RDWR | O_CLOEXEC)) < 0)
		return fa_err_set(err, FA_ERR_IO, "cannot open database '%s' to claim run %" PRId64
				  ": %s", s->path, run_id, strerror(errno));
	memset(&fl, 0, sizeof fl);
	fl.l_type = F_WRLCK;
	fl.l_whence = SEEK_SET;
	fl.l_start = STORE_CLAIM_BASE + (off_t)run_id;
	fl.l_len = 1;
	/* an open file description lock: another descriptor's close (SQLite
	 * opens and closes its own) never releases it */
	if (fcntl(s->claim_fd, F_OFD_SETLK, &fl) == 0)
		return FA_OK;
	if (errno == EAGAIN || errno == EACCES)
		return fa_err_set(err, FA_ERR_DB,
				  "run %" PRId64 " in '%s' is being written by another process (a "
				  "run, run --resume or import --run-into of it); try again once "
				  "that has ended",
				  run_id, s->path);
	/* a file system without locks: no claim, as before claims */
	if (errno == ENOLCK || errno == EINVAL || errno == EOPNOTSUPP)
		return FA_OK;
	return fa_err_set(err, FA_ERR_IO, "cannot claim run %" PRId64 " in '%s': %s", run_id,
			  s->path, strerror(errno));
#else
	(void)s;
	(void)run_id;
	(void)err;
	return FA_OK;
#endif
}

enum fa_rc fa_store_run_fleet(struct fa_store *s, int64_t run_id, const char *shard,
			      const char *devices, struct fa_err *err)
{
	sqlite3_stmt *st;
	int rc = sqlite3_prepare_v2(s->db, "UPDATE runs SET shard = ?, devices = ? WHERE id = ?", -1,
				    &st, NULL);
	if (rc != SQLITE_OK)
		return db_error(s->db, s->path, rc, err, "cannot record the run's shard and devices");
	if (shard && *shard)
		sqlite3_bind_text(st, 1, shard, -1, SQLITE_TRANSIENT);
	if (devices && *devices)
		sqlite3_bind_text(st, 2, devices, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(st, 3, run_id);
	rc = sqlite3_step(st);
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		return db_error(s->db, s->path, rc, err, "cannot record the run's shard and devices");
	return FA_OK;
}

enum fa_rc fa_store_run_end(struct fa_store *s, int64_t run_id, const char *status,
			    struct fa_err *err)
{
	sqlite3_stmt *st;
	int i = 1, rc;
	if (!status || (strcmp(status, "complete") != 0 && strcmp(status, "incomplete") != 0))
		return fa_err_set(err, FA_ERR_INTERNAL,
				  "run status '%s' must be 'complete' or 'incomplete'",
				  status ? status : "(null)");
	st = stmt_get(s, ST_RUN_END, err);
	if (!st)
		return FA_ERR_DB;
	bind_text(st, &i, status);
	bind_int(st, &i, run_id);
	rc = step_done(st, i - 1);
	if (rc != SQLITE_DONE) {
		char what[64];
		snprintf(what, sizeof what, "cannot end run %" PRId64, run_id);
		enum fa_rc frc = db_error(s->db, s->path, rc, err, what);
		sqlite3_reset(st);
		return frc;
	}
	if (sqlite3_changes(s->db) == 0)
		return fa_err_set(err, FA_ERR_NOT_FOUND, "no run %" PRId64 " in '%s'", run_id,
				  s->path);
	return FA_OK;
}

enum fa_rc fa_store_run_running(struct fa_store *s, int64_t run_id, const char *what,
				struct fa_err *err)
{
	sqlite3_stmt *st = stmt_get(s, ST_RUN_RUNNING, err);
	int i = 1, rc;
	if (!st)
		return FA_ERR_DB;
	bind_opt_text(st, &i, what);
	bind_int(st, &i, run_id);
	rc = step_done(st, i - 1);
	if (rc != SQLITE_DONE) {
		char msg[64];
		snprintf(msg, sizeof msg, "cannot mark what run %" PRId64 " is running", run_id);
		enum fa_rc frc = db_error(s->db, s->path, rc, err, msg);
		sqlite3_reset(st);
		return frc;
	}
	return FA_OK;
}

/* "a/b/c" of the n values v[i+1] - v[i] (diffs != 0) or v[i] (diffs == 0);
 * malloc'd, NULL when out of memory. */
static char *join_lens(const int32_t *v, int n, int diffs)
{
	/* an int32 is at most 11 characters, plus the '/' */
	size_t cap = (size_t)n * 12 + 1, len = 0;
	char *buf = malloc(cap);
	if (!buf)
		return NULL;
	buf[0] = '\0';
	for (int i = 0; i < n; i++) {
		int32_t x = diffs ? v[i + 1] - v[i] : v[i];
		len += (size_t)snprintf(buf + len, cap - len, "%s%" PRId32, i ? "/" : "", x);
	}
	return buf;
}

/* Inserts the case row; *case_id is its id. Returns the SQLite code. */
static int insert_case(struct fa_store *s, int64_t run_id, const struct fa_case *c,
		       int64_t *case_id, struct fa_err *err)
{
	const struct fa_problem *p = &c->p;
	sqlite3_stmt *st = stmt_get(s, ST_CASE, err);
	char *seqlens = NULL, *kv_seqlens = NULL, *prefix_lens = NULL;
	int i = 1, rc, nomem = 0;
	if (!st)
		return SQLITE_ERROR;
	if (p->varlen && c->cu_seqlens_q && c->cu_seqlens_k) {
		seqlens = join_lens(c->cu_seqlens_q, p->batch, 1);
		kv_seqlens = join_lens(c->cu_seqlens_k, p->batch, 1);
		nomem |= !seqlens || !kv_seqlens;
	}
	if (p->mask == FA_MASK_PREFIX_LM && c->prefix_lens) {
		prefix_lens = join_lens(c->prefix_lens, p->batch, 0);
		nomem |= !prefix_lens;
	}
	bind_int(st, &i, run_id);
	bind_int(st, &i, c->index);
	bind_text(st, &i, c->key);
	bind_int(st, &i, p->batch);
	bind_int(st, &i, p->heads);
	bind_int(st, &i, p->kv_heads);
	bind_int(st, &i, p->q_len);
	bind_int(st, &i, p->kv_len);
	bind_int(st, &i, p->head_dim);
	bind_int(st, &i, p->head_dim_v);
	bind_text(st, &i, fa_dtype_name(p->dtype));
	bind_text(st, &i, fa_mask_name(p->mask));
	bind_int_if(st, &i, p->mask == FA_MASK_PREFIX_LM && !c->prefix_lens, p->prefix_len);
	bind_int_if(st, &i, p->mask == FA_MASK_SLIDING_WINDOW, p->window);
	bind_text(st, &i, fa_layout_name(p->layout));
	bind_text(st, &i, fa_dist_name(c->dist));
	bind_int(st, &i, p->varlen ? 1 : 0);
	bind_text(st, &i, seqlens);
	bind_text(st, &i, kv_seqlens);
	bind_text(st, &i, prefix_lens);
	bind_int(st, &i, p->total_q);
	bind_int(st, &i, p->total_k);
	bind_real(st, &i, (double)p->scale);
	bind_int(st, &i, c->scale_set ? 1 : 0);
	bind_u64_text(st, &i, c->seed);
	bind_text(st, &i, fa_pass_name(c->pass));
	rc = nomem ? SQLITE_NOMEM : step_done(st, i - 1);
	free(seqlens);
	free(kv_seqlens);
	free(prefix_lens);
	if (rc == SQLITE_DONE)
		*case_id = sqlite3_last_insert_rowid(s->db);
	if (rc == SQLITE_DONE && c->depth > 0) {
		sqlite3_stmt *dt = stmt_get(s, ST_CASE_DEPTH, err);
		int j = 1;
		if (!dt)
			return SQLITE_ERROR;
		bind_int(dt, &j, *case_id);
		bind_int(dt, &j, c->depth);
		rc = step_done(dt, j - 1);
	}
	for (int32_t k = 0; rc == SQLITE_DONE && k < c->n_tags; k++) {
		sqlite3_stmt *tt = stmt_get(s, ST_CASE_TAG, err);
		int j = 1;
		if (!tt)
			return SQLITE_ERROR;
		bind_int(tt, &j, *case_id);
		bind_int(tt, &j, k);
		bind_text(tt, &j, c->tags[k].name);
		bind_int(tt, &j, c->tags[k].model ? 1 : 0);
		bind_int_if(tt, &j, c->tags[k].layers > 0, c->tags[k].layers);
		rc = step_done(tt, j - 1);
	}
	return rc;
}

/* Inserts one result and its samples. Returns the SQLite code (SQLITE_DONE
 * on success). */
static int insert_result(struct fa_store *s, int64_t run_id, int64_t case_id,
			 const struct fa_result *r, struct fa_err *err)
{
	const struct fa_err_stats *e = &r->st;
	const struct fa_telemetry *tel = &r->tel;
	sqlite3_stmt *st = stmt_get(s, ST_RESULT, err);
	int timed = r->t.n > 0, checked = r->checked != 0;
	/* a negative stop (an import: sampled by another tool) is stored as NULL */
	int stopped = (timed || r->t.stop != FA_STOP_CONVERGED) && r->t.stop >= 0;
	int has_worst = checked && e->worst_index >= 0;
	int64_t result_id;
	int i = 1, rc;
	if (!st)
		return SQLITE_ERROR;
	bind_int(st, &i, run_id);
	bind_int(st, &i, case_id);
	bind_text(st, &i, r->kernel);
	bind_opt_text(st, &i, r->backend);
	bind_text(st, &i, r->params ? r->params : "");
	bind_text(st, &i, fa_status_name(r->status));
	bind_opt_text(st, &i, r->reason);
	bind_opt_text(st, &i, r->timing);
	bind_int(st, &i, timed ? r->t.n : 0);
	bind_int(st, &i, r->t.discarded);
	bind_text(st, &i, stopped ? fa_stop_name(r->t.stop) : NULL);
	bind_real_if(st, &i, timed, r->t.median_ms);
	bind_real_if(st, &i, timed, r->t.mean_ms);
	bind_real_if(st, &i, timed, r->t.min_ms);
	bind_real_if(st, &i, timed, r->t.max_ms);
	bind_real_if(st, &i, timed, r->t.stdev_ms);
	bind_real(st, &i, r->flops);
	bind_real_if(st, &i, timed, r->tflops);
	bind_real(st, &i, r->bytes);
	bind_real_if(st, &i, timed, r->gbps);
	bind_int(st, &i, checked);
	bind_real_if(st, &i, checked, e->max_abs);
	bind_real_if(st, &i, checked, e->max_rel);
	bind_real_if(st, &i, checked, e->mean_abs);
	bind_real_if(st, &i, checked, e->rel_l2);
	bind_real_if(st, &i, checked, e->nmse);
	bind_real_if(st, &i, checked && e->same_max_abs >= 0, e->same_max_abs);
	/* counts below 0 are unknown (imports); fabench's own are never negative */
	bind_int_if(st, &i, checked && e->nan_count >= 0, e->nan_count);
	bind_int_if(st, &i, checked && e->inf_count >= 0, e->inf_count);
	bind_int_if(st, &i, checked && e->unwritten >= 0, e->unwritten);
	bind_int_if(st, &i, has_worst, e->worst_index);
	bind_real_if(st, &i, has_worst, e->worst_out);
	bind_real_if(st, &i, has_worst, e->worst_ref);
	bind_int_if(st, &i, checked && e->rows_checked >= 0, e->rows_checked);
	bind_int_if(st, &i, checked && e->elems_checked >= 0, e->elems_checked);
	bind_opt_text(st, &i, r->rule);
	bind_real(st, &i, r->mem_bytes);
	bind_real(st, &i, tel->sm_clock_mhz);
	bind_real(st, &i, tel->sm_clock_max_mhz);
	bind_real(st, &i, tel->temp_c);
	bind_real(st, &i, tel->power_w);
	bind_int_if(st, &i, tel->throttle_reasons >= 0, tel->throttle_reasons);
	rc = step_done(st, i - 1);
	if (rc != SQLITE_DONE)
		return rc;
	result_id = sqlite3_last_insert_rowid(s->db);
	for (int g = 0; r->grad_checked && g < FA_GRAD_COUNT && rc == SQLITE_DONE; g++) {
		const struct fa_err_stats *ge = &r->st_grad[g];
		int worst = ge->worst_index >= 0;
		if (!(st = stmt_get(s, ST_GRAD, err)))
			return SQLITE_ERROR;
		i = 1;
		bind_int(st, &i, result_id);
		bind_text(st, &i, fa_grad_name(g));
		bind_real(st, &i, ge->max_abs);
		bind_real(st, &i, ge->max_rel);
		bind_real(st, &i, ge->mean_abs);
		bind_real(st, &i, ge->rel_l2);
		bind_real(st, &i, ge->nmse);
		bind_real_if(st, &i, ge->same_max_abs >= 0, ge->same_max_abs);
		/* counts below 0 are unknown (imports), as the result's */
		bind_int_if(st, &i, ge->nan_count >= 0, ge->nan_count);
		bind_int_if(st, &i, ge->inf_count >= 0, ge->inf_count);
		bind_int_if(st, &i, ge->unwritten >= 0, ge->unwritten);
		bind_int_if(st, &i, worst, ge->worst_index);
		bind_real_if(st, &i, worst, ge->worst_out);
		bind_real_if(st, &i, worst, ge->worst_ref);
		bind_int_if(st, &i, ge->rows_checked >= 0, ge->rows_checked);
		bind_int_if(st, &i, ge->elems_checked >= 0, ge->elems_checked);
		rc = step_done(st, i - 1);
	}
	if (rc != SQLITE_DONE || !timed || !r->samples)
		return rc;
	st = stmt_get(s, ST_SAMPLE, err);
	if (!st)
		return SQLITE_ERROR;
	for (int k = 0; k < r->t.n && rc == SQLITE_DONE; k++) {
		i = 1;
		bind_int(st, &i, result_id);
		bind_int(st, &i, k);
		bind_real(st, &i, r->samples[k]);
		rc = step_done(st, i - 1);
	}
	return rc;
}

enum fa_rc fa_store_case_commit(struct fa_store *s, int64_t run_id, const struct fa_case *c,
				const struct fa_result *results, int n_results, int64_t *case_id,
				struct fa_err *err)
{
	return fa_store_case_commit_dev(s, run_id, c, results, n_results, -1, case_id, err);
}

enum fa_rc fa_store_case_commit_dev(struct fa_store *s, int64_t run_id, const struct fa_case *c,
				    const struct fa_result *results, int n_results, int32_t device,
				    int64_t *case_id, struct fa_err *err)
{
	int64_t id = 0;
	enum fa_rc frc = FA_OK;
	char what[96];
	int rc;

	if (case_id)
		*case_id = 0;
	snprintf(what, sizeof what, "cannot store case %" PRId32 " of run %" PRId64, c->index,
		 run_id);
	rc = exec_sql(s->db, "BEGIN IMMEDIATE");
	if (rc != SQLITE_OK)
		return db_error(s->db, s->path, rc, err, what);
	rc = insert_case(s, run_id, c, &id, err);
	for (int k = 0; k < n_results && rc == SQLITE_DONE; k++) {
		if (!fa_status_name(results[k].status)) {
			frc = fa_err_set(err, FA_ERR_INTERNAL,
					 "result %d of case %" PRId32 " has unknown status %" PRId32,
					 k, c->index, results[k].status);
			break;
		}
		rc = insert_result(s, run_id, id, &results[k], err);
	}
	if (frc == FA_OK && rc == SQLITE_DONE && device >= 0) {
		char sql[96];
		snprintf(sql, sizeof sql, "UPDATE results SET device = %" PRId32 " WHERE case_id = %" PRId64,
			 device, id);
		if ((rc = exec_sql(s->db, sql)) == SQLITE_OK)
			rc = SQLITE_DONE;
	}
	if (frc == FA_OK && rc == SQLITE_DONE) {
		rc = exec_sql(s->db, "COMMIT");
		if (rc == SQLITE_OK) {
			if (case_id)
				*case_id = id;
			return FA_OK;
		}
	}
	/* the message first: ROLLBACK replaces sqlite3_errmsg */
	if (frc == FA_OK)
		frc = db_error(s->db, s->path, rc, err, what);
	for (int k = 0; k < ST_COUNT; k++)
		if (s->stmt[k])
			sqlite3_reset(s->stmt[k]);
	exec_sql(s->db, "ROLLBACK");
	return frc;
}

/* Runs a one-column id query; 1 and *id when it returned a row, 0 when not,
 * -1 on error (err filled). */
static int query_id(struct fa_store *s, sqlite3_stmt *st, int64_t *id, struct fa_err *err)
{
	int rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		*id = sqlite3_column_int64(st, 0);
		sqlite3_reset(st);
		return 1;
	}
	if (rc == SQLITE_DONE) {
		sqlite3_reset(st);
		return 0;
	}
	db_error(s->db, s->path, rc, err, "cannot look up a run");
	sqlite3_reset(st);
	return -1;
}

enum fa_rc fa_store_find_run(struct fa_store *s, const char *spec, int64_t *run_id,
			     struct fa_err *err)
{
	sqlite3_stmt *st;
	size_t len = spec ? strlen(spec) : 0;
	int i = 1, found;

	*run_id = 0;
	if (spec && strcmp(spec, "latest") == 0) {
		if (!(st = stmt_get(s, ST_FIND_LATEST, err)))
			return FA_ERR_DB;
		found = query_id(s, st, run_id, err);
		if (found < 0)
			return FA_ERR_DB;
		if (!found)
			return fa_err_set(err, FA_ERR_NOT_FOUND, "no runs in '%s'", s->path);
		return FA_OK;
	}
	/* a decimal id (at most 18 digits: always fits an int64), else a label
	 * (a label may be made of digits too) */
	if (len > 0 && len <= 18 && strspn(spec, "0123456789") == len) {
		if (!(st = stmt_get(s, ST_FIND_ID, err)))
			return FA_ERR_DB;
		bind_int(st, &i, strtoll(spec, NULL, 10));
		found = query_id(s, st, run_id, err);
		if (found)
			return found > 0 ? FA_OK : FA_ERR_DB;
	}
	if (len > 0) {
		i = 1;
		if (!(st = stmt_get(s, ST_FIND_LABEL, err)))
			return FA_ERR_DB;
		bind_text(st, &i, spec);
		found = query_id(s, st, run_id, err);
		if (found)
			return found > 0 ? FA_OK : FA_ERR_DB;
	}
	/* a commit prefix (as compare takes it): the latest run of that commit */
	if (len >= FA_MIN_COMMIT_PREFIX && len < 41 && strspn(spec, "0123456789abcdefABCDEF") == len) {
		char lower[41];
		for (size_t k = 0; k <= len; k++)
			lower[k] = (char)(spec[k] >= 'A' && spec[k] <= 'F' ? spec[k] - 'A' + 'a' : spec[k]);
		if (sqlite3_prepare_v2(s->db,
				       "SELECT id FROM runs WHERE substr(lower(git_commit), 1, ?2) = ?1 "
				       "ORDER BY started_at DESC, id DESC LIMIT 1",
				       -1, &st, NULL) != SQLITE_OK)
			return db_error(s->db, s->path, sqlite3_errcode(s->db), err,
					"cannot look up a run");
		sqlite3_bind_text(st, 1, lower, -1, SQLITE_TRANSIENT);
		sqlite3_bind_int(st, 2, (int)len);
		found = query_id(s, st, run_id, err);
		sqlite3_finalize(st);
		if (found)
			return found > 0 ? FA_OK : FA_ERR_DB;
	}
	return fa_err_set(err, FA_ERR_NOT_FOUND,
			  "no run '%s' in '%s' (not a run id, a label, latest or a commit prefix of "
			  "at least %d hex digits)",
			  spec ? spec : "", s->path, FA_MIN_COMMIT_PREFIX);
}

enum fa_rc fa_store_calibration_save(struct fa_store *s, const char *backend,
				     const struct fa_device_info *dev, const struct fa_calibration *cal,
				     const char *when, struct fa_err *err)
{
	sqlite3_stmt *st = stmt_get(s, ST_CAL_SAVE, err);
	int i = 1, rc;
	if (!st)
		return FA_ERR_DB;
	bind_opt_text(st, &i, when);
	bind_text(st, &i, backend);
	bind_text(st, &i, dev->name);
	bind_opt_text(st, &i, dev->arch);
	bind_opt_text(st, &i, dev->driver);
	bind_opt_text(st, &i, dev->runtime);
	bind_real_if(st, &i, cal->copy_gbps > 0, cal->copy_gbps);
	bind_real_if(st, &i, cal->matmul_tflops > 0, cal->matmul_tflops);
	bind_real_if(st, &i, cal->matmul_fp32_tflops > 0, cal->matmul_fp32_tflops);
	bind_opt_text(st, &i, cal->method);
	rc = step_done(st, i - 1);
	if (rc != SQLITE_DONE) {
		enum fa_rc frc = db_error(s->db, s->path, rc, err, "cannot store the calibration");
		sqlite3_reset(st);
		return frc;
	}
	return FA_OK;
}

enum fa_rc fa_store_calibration_get(struct fa_store *s, const char *device_name,
				    struct fa_calibration *cal, struct fa_err *err)
{
	sqlite3_stmt *st = stmt_get(s, ST_CAL_GET, err);
	const unsigned char *method;
	int i = 1, rc;
	memset(cal, 0, sizeof *cal);
	if (!st)
		return FA_ERR_DB;
	bind_text(st, &i, device_name);
	rc = sqlite3_step(st);
	if (rc == SQLITE_DONE) {
		sqlite3_reset(st);
		return fa_err_set(err, FA_ERR_NOT_FOUND, "no calibration of device '%s' in '%s'",
				  device_name ? device_name : "", s->path);
	}
	if (rc != SQLITE_ROW) {
		enum fa_rc frc = db_error(s->db, s->path, rc, err, "cannot read a calibration");
		sqlite3_reset(st);
		return frc;
	}
	/* NULL (not measured) reads as 0, as struct fa_calibration documents */
	cal->copy_gbps = sqlite3_column_double(st, 0);
	cal->matmul_tflops = sqlite3_column_double(st, 1);
	cal->matmul_fp32_tflops = sqlite3_column_double(st, 2);
	method = sqlite3_column_text(st, 3);
	snprintf(cal->method, sizeof cal->method, "%s", method ? (const char *)method : "");
	sqlite3_reset(st);
	return FA_OK;
}

/* ---- imports: another tool's results, stored in one transaction ---- */

/* Runs a one-row, one-integer query; 1 and *v when it returned a row, 0 when
 * not, or the SQLite error code negated. */
static int query_one(sqlite3_stmt *st, int n_bound, int64_t *v)
{
	int rc;
	assert(n_bound == sqlite3_bind_parameter_count(st));
	(void)n_bound;
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		*v = sqlite3_column_int64(st, 0);
		sqlite3_reset(st);
		return 1;
	}
	sqlite3_reset(st);
	return rc == SQLITE_DONE ? 0 : -rc;
}

/* An import's case c, which run run_id holds as case_id, checked as a
 * repeat of the stored one, by the rule of a file's repeated rows
 * (fa_case_merge_repeat): a depth or a label's layers c gives may not
 * contradict what is stored. Returns SQLITE_DONE, SQLITE_CONSTRAINT with
 * err at c's value in its file (naming "run N"), or another code with err
 * filled. */
static int import_check_held(struct fa_store *s, int64_t run_id, int64_t case_id,
			     const struct fa_case *c, struct fa_err *err)
{
	struct fa_case held;
	char where[40];
	enum fa_rc frc;
	if (!c->depth_loc.file && c->n_tags == 0)
		return SQLITE_DONE; /* nothing that could contradict */
	memset(&held, 0, sizeof held);
	snprintf(where, sizeof where, "run %" PRId64, run_id);
	if ((frc = fa_store_case_depth(s, case_id, &held.depth, err)) == FA_OK &&
	    (frc = fa_store_case_tags(s, case_id, &held.tags, &held.n_tags, err)) == FA_OK) {
		/* stored values have no place in a file: line 0 names the run */
		if (held.depth > 0)
			held.depth_loc = (struct fa_loc){where, 0, 0};
		for (int32_t k = 0; k < held.n_tags; k++)
			held.tags[k].loc = (struct fa_loc){where, 0, 0};
		frc = fa_case_merge_repeat(&held, c, 1, err);
	}
	fa_store_tags_free(held.tags, held.n_tags);
	return frc == FA_OK		 ? SQLITE_DONE
	       : frc == FA_ERR_INPUT ? SQLITE_CONSTRAINT
	       : frc == FA_ERR_NOMEM ? SQLITE_NOMEM
				     : SQLITE_ERROR;
}

/* Finds or inserts the cases of an import and inserts its results; the
 * caller holds the transaction. Returns the SQLite code (SQLITE_DONE on
 * success), or SQLITE_CONSTRAINT with err filled and out->case_conflict set
 * for a case whose stored depth or labels it contradicts, or
 * out->conflict for a result the run already holds. */
static int import_rows(struct fa_store *s, int64_t run_id, int into,
		       const struct fa_case *cases, int32_t n_cases, const struct fa_result *results,
		       const int32_t *result_case, int32_t n_results, int64_t *case_ids,
		       struct fa_store_import_out *out, struct fa_err *err)
{
	sqlite3_stmt *st;
	int64_t next_idx = 0, v;
	int i, found, rc = SQLITE_DONE;

	if (into) {
		if (!(st = stmt_get(s, ST_IMPORT_NEXT_IDX, err)))
			return SQLITE_ERROR;
		i = 1;
		bind_int(st, &i, run_id);
		if ((found = query_one(st, i - 1, &next_idx)) < 0)
			return -found;
	}
	for (int32_t k = 0; k < n_cases; k++) {
		struct fa_case c = cases[k];
		if (into) {
			if (!(st = stmt_get(s, ST_IMPORT_CASE, err)))
				return SQLITE_ERROR;
			i = 1;
			bind_int(st, &i, run_id);
			bind_text(st, &i, c.key);
			if ((found = query_one(st, i - 1, &case_ids[k])) < 0)
				return -found;
			if (found) {
				out->cases_matched++;
				rc = import_check_held(s, run_id, case_ids[k], &cases[k], err);
				if (rc == SQLITE_CONSTRAINT)
					out->case_conflict = k;
				if (rc != SQLITE_DONE)
					return rc;
				continue;
			}
		}
		if (next_idx > INT32_MAX)
			return SQLITE_FULL;
		c.index = (int32_t)next_idx++;
		if ((rc = insert_case(s, run_id, &c, &case_ids[k], err)) != SQLITE_DONE)
			return rc;
		out->cases_added++;
	}
	for (int32_t k = 0; k < n_results; k++) {
		const struct fa_result *r = &results[k];
		int64_t case_id = case_ids[result_case[k]];
		if (!(st = stmt_get(s, ST_IMPORT_HAS_RESULT, err)))
			return SQLITE_ERROR;
		i = 1;
		bind_int(st, &i, run_id);
		bind_int(st, &i, case_id);
		bind_text(st, &i, r->kernel);
		bind_text(st, &i, r->params ? r->params : "");
		if ((found = query_one(st, i - 1, &v)) < 0)
			return -found;
		if (found) {
			out->conflict = k;
			fa_err_set(err, FA_ERR_INPUT,
				   "run %" PRId64 " already has a result of kernel '%s'%s%s%s for this case",
				   run_id, r->kernel, r->params && r->params[0] ? " (" : "",
				   r->params && r->params[0] ? r->params : "",
				   r->params && r->params[0] ? ")" : "");
			return SQLITE_CONSTRAINT;
		}
		if ((rc = insert_result(s, run_id, case_id, r, err)) != SQLITE_DONE)
			return rc;
	}
	return SQLITE_DONE;
}

enum fa_rc fa_store_import(struct fa_store *s, const struct fa_run_info *ri, int64_t into_run,
			   const char *source_note, const struct fa_case *cases, int32_t n_cases,
			   const struct fa_result *results, const int32_t *result_case,
			   int32_t n_results, struct fa_store_import_out *out, struct fa_err *err)
{
	int64_t run_id = into_run, *case_ids;
	enum fa_rc frc = FA_OK;
	int rc, i, found;
	int32_t conflict, case_conflict;
	sqlite3_stmt *st;

	memset(out, 0, sizeof *out);
	out->conflict = out->case_conflict = -1;
	for (int32_t k = 0; k < n_results; k++) {
		if (result_case[k] < 0 || result_case[k] >= n_cases)
			return fa_err_set(err, FA_ERR_INTERNAL, "import result %d has no case", k);
		if (!fa_status_name(results[k].status))
			return fa_err_set(err, FA_ERR_INTERNAL,
					  "import result %d has unknown status %" PRId32, k,
					  results[k].status);
	}
	if (!(case_ids = calloc((size_t)n_cases + 1, sizeof *case_ids)))
		return fa_err_set(err, FA_ERR_NOMEM, "out of memory importing into '%s'", s->path);
	rc = exec_sql(s->db, "BEGIN IMMEDIATE");
	if (rc != SQLITE_OK) {
		free(case_ids);
		return db_error(s->db, s->path, rc, err, "cannot start the import");
	}
	if (into_run > 0) {
		/* no process may be writing the run: its next case would take
		 * the idx given here to a case the run lacks */
		if ((frc = fa_store_run_claim(s, into_run, err)) != FA_OK)
			goto rollback;
		/* the run must exist: checked inside the transaction */
		if (!(st = stmt_get(s, ST_FIND_ID, err))) {
			frc = FA_ERR_DB;
			goto rollback;
		}
		i = 1;
		bind_int(st, &i, into_run);
		found = query_one(st, i - 1, &run_id);
		if (found <= 0) {
			frc = found == 0 ? fa_err_set(err, FA_ERR_NOT_FOUND, "no run %" PRId64 " in '%s'",
						      into_run, s->path)
					 : db_error(s->db, s->path, -found, err, "cannot look up a run");
			goto rollback;
		}
	} else {
		if ((frc = fa_store_run_begin(s, ri, &run_id, err)) != FA_OK ||
		    (frc = fa_store_run_end(s, run_id, "complete", err)) != FA_OK)
			goto rollback;
	}
	rc = import_rows(s, run_id, into_run > 0, cases, n_cases, results, result_case, n_results,
			 case_ids, out, err);
	if (rc == SQLITE_CONSTRAINT && (out->conflict >= 0 || out->case_conflict >= 0)) {
		frc = FA_ERR_INPUT;
		goto rollback;
	}
	if (rc == SQLITE_DONE && into_run > 0 && source_note && source_note[0]) {
		if (!(st = stmt_get(s, ST_IMPORT_SOURCE, err))) {
			frc = FA_ERR_DB;
			goto rollback;
		}
		i = 1;
		bind_text(st, &i, source_note);
		bind_int(st, &i, run_id);
		rc = step_done(st, i - 1);
	}
	if (rc == SQLITE_DONE && (rc = exec_sql(s->db, "COMMIT")) == SQLITE_OK) {
		free(case_ids);
		out->run_id = run_id;
		return FA_OK;
	}
	/* the message first: ROLLBACK replaces sqlite3_errmsg */
	frc = db_error(s->db, s->path, rc, err, "cannot import");
rollback:
	for (int k = 0; k < ST_COUNT; k++)
		if (s->stmt[k])
			sqlite3_reset(s->stmt[k]);
	exec_sql(s->db, "ROLLBACK");
	free(case_ids);
	conflict = out->conflict;
	case_conflict = out->case_conflict;
	memset(out, 0, sizeof *out);
	out->conflict = frc == FA_ERR_INPUT ? conflict : -1;
	out->case_conflict = frc == FA_ERR_INPUT ? case_conflict : -1;
	return frc;
}

/* ---- A stored run, for run --resume and --rerun-failed ----------------------- */

/* strdup of a column's text, "" for NULL; NULL when out of memory. */
static char *col_dup(sqlite3_stmt *st, int col)
{
	const unsigned char *t = sqlite3_column_text(st, col);
	return strdup(t ? (const char *)t : "");
}

void fa_stored_run_free(struct fa_stored_run *r)
{
	if (!r)
		return;
	free(r->command_line);
	free(r->suite_path);
	free(r->suite_hash);
	free(r->status);
	for (int i = 0; i < r->n_cases; i++)
		free(r->keys[i]);
	free(r->keys);
	free(r->idx);
	for (int i = 0; i < r->n_kernels; i++)
		free(r->kernels[i]);
	free(r->kernels);
	memset(r, 0, sizeof *r);
}

/* Appends the text of column col to a growing list; -1 when out of memory. */
static int list_push(char ***list, int *n, sqlite3_stmt *st, int col)
{
	char **nl = realloc(*list, ((size_t)*n + 1) * sizeof *nl);
	if (!nl)
		return -1;
	*list = nl;
	if (!(nl[*n] = col_dup(st, col)))
		return -1;
	(*n)++;
	return 0;
}

enum fa_rc fa_store_run_read(struct fa_store *s, int64_t run_id, int failed_only,
			     struct fa_stored_run *out, struct fa_err *err)
{
	static const char *const sql_run =
		"SELECT command_line, suite_path, suite_hash, status, seed, ab_group IS NOT NULL,"
		" source FROM runs WHERE id = ?";
	static const char *const sql_cases =
		"SELECT idx, key FROM cases WHERE run_id = ? ORDER BY idx";
	static const char *const sql_failed =
		"SELECT c.idx, c.key FROM cases c WHERE c.run_id = ?1 AND EXISTS (SELECT 1 FROM"
		" results r WHERE r.case_id = c.id AND r.status IN ('fail', 'error', 'timeout'))"
		" ORDER BY c.idx";
	static const char *const sql_kernels =
		"SELECT DISTINCT kernel FROM results WHERE run_id = ? AND status IN ('fail',"
		" 'error', 'timeout') ORDER BY kernel";
	sqlite3_stmt *st = NULL;
	int rc, nomem = 0;

	memset(out, 0, sizeof *out);
	rc = sqlite3_prepare_v2(s->db, sql_run, -1, &st, NULL);
	if (rc == SQLITE_OK) {
		sqlite3_bind_int64(st, 1, run_id);
		rc = sqlite3_step(st);
		if (rc == SQLITE_ROW) {
			const unsigned char *seed = sqlite3_column_text(st, 4);
			out->command_line = col_dup(st, 0);
			out->suite_path = col_dup(st, 1);
			out->suite_hash = col_dup(st, 2);
			out->status = col_dup(st, 3);
			out->seed = seed ? strtoull((const char *)seed, NULL, 10) : 0;
			out->ab = sqlite3_column_int(st, 5);
			out->imported = sqlite3_column_text(st, 6) &&
					strcmp((const char *)sqlite3_column_text(st, 6), "fabench") != 0;
			nomem = !out->command_line || !out->suite_path || !out->suite_hash ||
				!out->status;
			rc = SQLITE_OK;
		} else if (rc == SQLITE_DONE) {
			sqlite3_finalize(st);
			return fa_err_set(err, FA_ERR_NOT_FOUND, "no run %" PRId64 " in '%s'", run_id,
					  s->path);
		}
	}
	sqlite3_finalize(st);
	st = NULL;
	for (int q = 0; rc == SQLITE_OK && !nomem && q < 2; q++) {
		const char *sql = q == 0 ? (failed_only ? sql_failed : sql_cases) : sql_kernels;
		if (q == 1 && !failed_only)
			break;
		rc = sqlite3_prepare_v2(s->db, sql, -1, &st, NULL);
		if (rc != SQLITE_OK)
			break;
		sqlite3_bind_int64(st, 1, run_id);
		while ((rc = sqlite3_step(st)) == SQLITE_ROW && !nomem) {
			if (q == 1) {
				nomem = list_push(&out->kernels, &out->n_kernels, st, 0) != 0;
				continue;
			}
			int32_t *ni = realloc(out->idx, ((size_t)out->n_cases + 1) * sizeof *ni);
			if (!ni) {
				nomem = 1;
				break;
			}
			out->idx = ni;
			ni[out->n_cases] = sqlite3_column_int(st, 0);
			nomem = list_push(&out->keys, &out->n_cases, st, 1) != 0;
		}
		rc = rc == SQLITE_DONE || rc == SQLITE_ROW ? SQLITE_OK : rc;
		sqlite3_finalize(st);
		st = NULL;
	}
	if (nomem) {
		fa_stored_run_free(out);
		return fa_err_set(err, FA_ERR_NOMEM, "out of memory reading run %" PRId64, run_id);
	}
	if (rc != SQLITE_OK) {
		enum fa_rc frc = db_error(s->db, s->path, rc, err, "cannot read a run");
		fa_stored_run_free(out);
		return frc;
	}
	return FA_OK;
}

enum fa_rc fa_store_case_depth(struct fa_store *s, int64_t case_id, int32_t *depth,
			       struct fa_err *err)
{
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(s->db, "SELECT depth FROM case_depth WHERE case_id = ?", -1, &st,
				    NULL);
	*depth = 0;
	if (rc != SQLITE_OK)
		return db_error(s->db, s->path, rc, err, "cannot read the depth of a case");
	sqlite3_bind_int64(st, 1, case_id);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		*depth = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return db_error(s->db, s->path, rc, err, "cannot read the depth of a case");
	return FA_OK;
}

enum fa_rc fa_store_case_tags(struct fa_store *s, int64_t case_id, struct fa_case_tag **tags,
			      int32_t *n, struct fa_err *err)
{
	sqlite3_stmt *st = NULL;
	struct fa_case_tag *t = NULL;
	int32_t count = 0;
	int rc;
	*tags = NULL;
	*n = 0;
	rc = sqlite3_prepare_v2(s->db,
				"SELECT name, model, layers FROM case_tags WHERE case_id = ? ORDER BY seq",
				-1, &st, NULL);
	if (rc != SQLITE_OK)
		return db_error(s->db, s->path, rc, err, "cannot read the labels of a case");
	sqlite3_bind_int64(st, 1, case_id);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct fa_case_tag *nt = realloc(t, (size_t)(count + 1) * sizeof *nt);
		const unsigned char *name = sqlite3_column_text(st, 0);
		if (!nt) {
			fa_store_tags_free(t, count);
			sqlite3_finalize(st);
			return fa_err_set(err, FA_ERR_NOMEM, "out of memory");
		}
		t = nt;
		t[count].name = strdup(name ? (const char *)name : "");
		t[count].model = sqlite3_column_int(st, 1);
		t[count].layers = sqlite3_column_int(st, 2); /* NULL reads 0: unknown */
		if (!t[count++].name) {
			fa_store_tags_free(t, count);
			sqlite3_finalize(st);
			return fa_err_set(err, FA_ERR_NOMEM, "out of memory");
		}
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE) {
		fa_store_tags_free(t, count);
		return db_error(s->db, s->path, rc, err, "cannot read the labels of a case");
	}
	*tags = t;
	*n = count;
	return FA_OK;
}

void fa_store_tags_free(struct fa_case_tag *tags, int32_t n)
{
	for (int32_t k = 0; k < n; k++)
		free(tags[k].name);
	free(tags);
}
