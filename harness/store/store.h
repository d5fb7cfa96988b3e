/* store.h - the SQLite database of runs, cases, results and raw samples.
 *
 * Schema versioned with PRAGMA user_version and applied by migrations in
 * order; WAL mode and a busy timeout let two runs share one file. Each case
 * is committed in its own transaction as soon as it finishes, so a run that
 * is killed keeps every finished case and stays marked 'incomplete'.
 *
 * All SQL uses bound parameters; nothing from the user is pasted into SQL.
 */
#ifndef FA_STORE_H
#define FA_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "../run/backend_impl.h"
#include "../run/check.h"
#include "../base/err.h"
#include "../run/measure.h"
#include "../suite/suite.h"

struct fa_store;
struct sqlite3;

/* The schema version this build writes (PRAGMA user_version). */
#define FA_STORE_SCHEMA_VERSION 8

/* Opens (creating the file and its folder when create != 0) and migrates
 * the database at path (":memory:" for one in memory). A database newer than
 * this build is refused. Returns FA_OK; FA_ERR_NOT_FOUND when the file is
 * missing and create == 0; FA_ERR_IO for a path that cannot be used;
 * FA_ERR_DB for a file that is not a SQLite database, a newer schema or a
 * failed migration (rolled back). Sets *out to NULL on error. The schema is
 * documented at the top of store.c. */
enum fa_rc fa_store_open(const char *path, int create, struct fa_store **out, struct fa_err *err);
void fa_store_close(struct fa_store *s);

/* Opens the database at path for reading only, as every reader command
 * (report, compare, history, plot) does: SQLITE_OPEN_READONLY through a
 * "file:...?mode=ro" URI, with immutable=1 when the file or its folder is
 * not writable (no locks; no -wal or -shm is created beside it) unless a
 * -wal is already there. A missing file is never created. A file of an
 * older schema is migrated first when it may be written, else refused. A
 * file with no tables at all (an empty file) is a database with no runs:
 * read as fabench's empty schema built in memory, the file left exactly as
 * it is (nothing written into it, no -wal or -shm beside it).
 * The store reads one snapshot, taken at the open (a read transaction held
 * until fa_store_close): what another process commits meanwhile, a run's
 * next case, is not seen, so a reader never sees a run half-written.
 * Returns FA_OK; FA_ERR_NOT_FOUND when there is no file (or ":memory:");
 * FA_ERR_IO for a folder or a path that cannot be used; FA_ERR_DB for a file
 * that is not a database or a schema this build cannot read. Sets *out to
 * NULL on error. Writing through the store fails (SQLITE_READONLY). */
enum fa_rc fa_store_open_readonly(const char *path, struct fa_store **out, struct fa_err *err);

/* The URI fa_store_open_readonly opens: "file:" and path percent-encoded,
 * "?mode=ro", and "&immutable=1" when writable == 0. Writes it into buf
 * (size bytes); returns 0, or -1 when it does not fit. Exposed for tests. */
int fa_store_readonly_uri(const char *path, int writable, char *buf, size_t size);

/* The underlying handle, for the reader of stored runs (reader.c). */
struct sqlite3 *fa_store_db(struct fa_store *s);

/* 1 when the database open on db holds tables but no fabench schema
 * (user_version 0): a SQLite database of another program, which a reader
 * must not write fabench's tables into (nor switch to WAL):
 * fa_store_open_readonly refuses it with FA_ERR_DB (fa_store_open, a
 * writer, adds the tables beside the program's). 0 for a fabench database
 * or an empty one; -1 when it cannot be read. */
int fa_store_foreign(struct sqlite3 *db);

/* The path the store was opened with (owned by s), for messages. */
const char *fa_store_path(const struct fa_store *s);

struct fa_run_info {
	const char *started_at;   /* ISO 8601 UTC, "2026-11-25T21:40:00Z" */
	const char *git_commit;   /* "" when unknown */
	int32_t git_dirty;        /* 1 dirty, 0 clean, -1 unknown */
	const char *host;
	const char *backend;      /* "cpu", "cuda", ... */
	const char *device_name, *device_arch, *driver, *runtime;
	const char *suite_path, *suite_name, *suite_hash;
	const char *command_line;
	const char *label;        /* "" when none */
	uint64_t seed;
	const char *version;      /* fabench version */
	const char *source;       /* "fabench", or the tool of an import */
	const char *ab_group;     /* shared by the two runs of one --ab, else NULL */
};

/* Inserts a run with status 'incomplete' and commits; *run_id is its id.
 * Empty or NULL strings are stored as NULL (unknown); started_at NULL means
 * now; git_dirty -1 is stored as NULL. Outside a transaction the run is
 * claimed (fa_store_run_claim) before it is committed. */
enum fa_rc fa_store_run_begin(struct fa_store *s, const struct fa_run_info *ri, int64_t *run_id,
			      struct fa_err *err);

/* Claims run run_id for this store, so that no other process writes its
 * cases meanwhile: fa_store_run_begin claims the run it adds (outside a
 * transaction: a run, not an import) before its row is committed,
 * fa_store_import claims the run it adds rows to, and run --resume claims
 * the run before it reads which cases it lacks. The claim is a lock on one
 * byte of the file far past SQLite's (an open file description lock,
 * F_OFD_SETLK), held until fa_store_close or the end of the process,
 * however it ends: a run killed with kill -9 can be resumed at once.
 * fa_store_close drops the process's own POSIX locks on the file when it
 * closes the claim's descriptor: close a store that claimed a run after any
 * other store of the same file in the process. Returns FA_OK (also where
 * the system or file system has no such locks, or for ":memory:");
 * FA_ERR_DB naming the run when another process holds it; FA_ERR_IO when
 * the file cannot be opened to lock it. */
enum fa_rc fa_store_run_claim(struct fa_store *s, int64_t run_id, struct fa_err *err);

/* Records (and commits) what the run is doing now, e.g. "case 3/12 KEY
 * kernel cpu_flash"; NULL clears it. A process that dies before the next
 * call leaves it in the run (report names it). Returns FA_OK or FA_ERR_DB. */
enum fa_rc fa_store_run_running(struct fa_store *s, int64_t run_id, const char *what,
				struct fa_err *err);

/* Records where a run's cases ran: shard "K/N" (--shard) and devices
 * "0,1" (--devices); NULL or "" stores NULL. Commits. Returns FA_OK or
 * FA_ERR_DB. */
enum fa_rc fa_store_run_fleet(struct fa_store *s, int64_t run_id, const char *shard,
			      const char *devices, struct fa_err *err);

/* Sets the run's status ('complete' or 'incomplete') and finished_at, and
 * clears running. */
enum fa_rc fa_store_run_end(struct fa_store *s, int64_t run_id, const char *status,
			    struct fa_err *err);

enum fa_status {
	FA_STATUS_PASS = 0,
	FA_STATUS_FAIL = 1,
	FA_STATUS_SKIP = 2,
	FA_STATUS_ERROR = 3,
	FA_STATUS_TIMEOUT = 4,
	/* Never stored: the readers' name for a stored pass with checked = 0,
	 * a result nobody compared against the reference (rows imported from
	 * another tool without error statistics). fa_status_effective gives
	 * it; it must not make a run look verified. */
	FA_STATUS_UNCHECKED = 5,
};

/* The status a reader shows for a stored status and checked flag: the
 * status, but FA_STATUS_UNCHECKED for a pass with checked == 0. */
int fa_status_effective(int status, int checked);

/* "pass", "fail", "skip", "error", "timeout", "unchecked"; -1/NULL when
 * unknown. */
const char *fa_status_name(int status);
int fa_status_parse(const char *s);

struct fa_result {
	const char *kernel;
	const char *backend;
	const char *params;       /* "name=value,..." of the kernel's tunables, "" if none */
	int32_t status;           /* enum fa_status */
	char reason[512];         /* why skip/fail/error/timeout, "" on pass */
	struct fa_time_stats t;   /* n == 0 when nothing was timed */
	const double *samples;    /* t.n raw samples in ms, in the order taken */
	const char *timing;       /* "cpu", "cold", "hot", "graph" */
	double flops, tflops, bytes, gbps; /* tflops/gbps from the median, 0 if untimed */
	int32_t checked;          /* 1 when st holds error statistics */
	struct fa_err_stats st;
	char rule[16];            /* rule that decided: "tolerance", "fa", "" */
	double mem_bytes;         /* memory estimate used for the budget */
	struct fa_telemetry tel;  /* GPU state while measured (NaN / -1 unknown) */
	/* bwd and fwd_bwd cases: st is O of the forward kernel, st_grad the
	 * gradients dQ, dK, dV (enum fa_grad); valid when grad_checked is 1 */
	int32_t grad_checked;
	struct fa_err_stats st_grad[3];
};

/* The gradients of st_grad, stored by name (fa_grad_name: "dq", "dk", "dv"). */
/* enum fa_grad: base/names.h */
const char *fa_grad_name(int g);

/* Writes one finished case and its results (and every sample) in one
 * transaction. *case_id (may be NULL) receives the case's row id. */
enum fa_rc fa_store_case_commit(struct fa_store *s, int64_t run_id, const struct fa_case *c,
				const struct fa_result *results, int n_results, int64_t *case_id,
				struct fa_err *err);

/* The same, with every result's device column set to device (the index
 * of the GPU a --devices worker measured it on); device < 0 stores NULL. */
enum fa_rc fa_store_case_commit_dev(struct fa_store *s, int64_t run_id, const struct fa_case *c,
				    const struct fa_result *results, int n_results, int32_t device,
				    int64_t *case_id, struct fa_err *err);
/* The labels of the stored case case_id (table case_tags), in order, into
 * *tags (malloc'd, names too; free with fa_store_tags_free) and *n (0 and
 * NULL when none). Returns FA_OK, FA_ERR_DB or FA_ERR_NOMEM (then *tags is
 * NULL and *n 0). */
/* The suite's depth: of case case_id into *depth, 0 when it was not given.
 * Returns FA_OK or FA_ERR_DB. */
enum fa_rc fa_store_case_depth(struct fa_store *s, int64_t case_id, int32_t *depth,
			       struct fa_err *err);

enum fa_rc fa_store_case_tags(struct fa_store *s, int64_t case_id, struct fa_case_tag **tags,
			      int32_t *n, struct fa_err *err);
void fa_store_tags_free(struct fa_case_tag *tags, int32_t n);

/* The fewest hex digits of a git commit that name its runs. */
#define FA_MIN_COMMIT_PREFIX 4

/* Resolves "latest", a numeric id, a label (the latest run with it) or a
 * prefix of at least FA_MIN_COMMIT_PREFIX hex digits of a git commit (the
 * latest run of it) to a run id. FA_ERR_NOT_FOUND with a message naming
 * spec when none. */
enum fa_rc fa_store_find_run(struct fa_store *s, const char *spec, int64_t *run_id,
			     struct fa_err *err);

/* Stores a calibration of a device (table calibrations), measured at `when`. */
enum fa_rc fa_store_calibration_save(struct fa_store *s, const char *backend,
				     const struct fa_device_info *dev, const struct fa_calibration *cal,
				     const char *when, struct fa_err *err);

/* The latest calibration stored for a device name; FA_ERR_NOT_FOUND if none. */
enum fa_rc fa_store_calibration_get(struct fa_store *s, const char *device_name,
				    struct fa_calibration *cal, struct fa_err *err);

/* What fa_store_import did. */
struct fa_store_import_out {
	int64_t run_id;        /* the run written */
	int32_t cases_added;   /* case rows inserted */
	int32_t cases_matched; /* cases found in the run by key (into_run only) */
	int32_t conflict;      /* on FA_ERR_INPUT: the result the run already held, else -1 */
	int32_t case_conflict; /* on FA_ERR_INPUT: the case whose depth or a label's layers
				  contradict the run's, else -1 */
};

/* Stores another tool's results (fabench import) in one transaction: with
 * into_run == 0 a new run from ri, marked 'complete'; else the rows go into
 * run into_run, whose cases are matched by key (cases[k].key), cases it lacks
 * are appended after its last idx, and source_note (may be NULL) is appended
 * to its source ("fabench + torch 2.11.0"), once. A matched case keeps what
 * is stored: a depth or labels only cases[k] gives are not added to it.
 * Cases of a new run are numbered from 0 in the order given (their index
 * field is ignored). results[k] belongs to cases[result_case[k]]. Results
 * are stored as by fa_store_case_commit, except that t.stop < 0 stores
 * stop_reason NULL and, when checked, counts below 0 (nan_count, inf_count,
 * unwritten, rows_checked, elems_checked) are stored as NULL (not given).
 * Returns FA_OK with *out filled; FA_ERR_NOT_FOUND when into_run does not
 * exist; FA_ERR_INPUT when the run already holds a result of the same case,
 * kernel and params (out->conflict names it), or when a matched case gives
 * another depth or other layers of a label than the run holds, by the rule
 * of a suite's or a file's repeated cases (fa_case_merge_repeat;
 * out->case_conflict names it and err is at the value in cases[k]'s file,
 * naming "run N"); FA_ERR_DB, also when another process is writing run
 * into_run (its claim, fa_store_run_claim). On error nothing is written and
 * out->run_id is 0. */
enum fa_rc fa_store_import(struct fa_store *s, const struct fa_run_info *ri, int64_t into_run,
			   const char *source_note, const struct fa_case *cases, int32_t n_cases,
			   const struct fa_result *results, const int32_t *result_case,
			   int32_t n_results, struct fa_store_import_out *out, struct fa_err *err);

/* What run --resume and --rerun-failed need of a stored run (strings
 * malloc'd, "" when NULL in the database). */
struct fa_stored_run {
	char *command_line, *suite_path, *suite_hash, *status;
	uint64_t seed;
	int32_t ab;           /* one of the two runs of a --ab */
	int32_t imported;     /* its source is not fabench alone */
	int32_t n_cases;      /* the cases read, in idx order: */
	int32_t *idx;         /*   their idx */
	char **keys;          /*   their keys */
	int32_t n_kernels;    /* failed_only: the kernels that failed, by name */
	char **kernels;
};

/* Reads run run_id: its row, and its cases (all of them, or with
 * failed_only those with a fail, error or timeout result, and the kernels
 * of those results). Returns FA_OK; FA_ERR_NOT_FOUND naming the run;
 * FA_ERR_DB; FA_ERR_NOMEM. On error *out holds nothing (free is harmless). */
enum fa_rc fa_store_run_read(struct fa_store *s, int64_t run_id, int failed_only,
			     struct fa_stored_run *out, struct fa_err *err);
void fa_stored_run_free(struct fa_stored_run *r);

#endif /* FA_STORE_H */
