/* import.h - results measured by other tools (PyTorch SDPA, FlexAttention, a
 * vendor's benchmark), read from JSON lines or CSV and stored as fabench
 * cases and results, so that reports show them beside fabench's kernels.
 *
 * The whole file is parsed and validated before the database is opened. A
 * row's case is built from the same parameters as a suite's (missing ones take
 * the suite defaults, and the same checks apply) and gets the canonical key
 * of fa_case_key, so imported rows meet fabench's own cases in report,
 * compare and history. FLOPs, bytes, TFLOP/s and GB/s are computed here, and
 * the time statistics from the samples when the row has them. The formats
 * are documented for users in docs/peers.md.
 */
#ifndef FA_IMPORT_H
#define FA_IMPORT_H

#include <stddef.h>
#include <stdint.h>

#include "../base/err.h"
#include "store.h"
#include "../suite/suite.h"

enum fa_import_format {
	FA_IMPORT_AUTO = 0,  /* by the file name (.jsonl, .ndjson, .json / .csv), else the content */
	FA_IMPORT_JSONL = 1, /* one JSON object per line; the first may be {"run": {...}} */
	FA_IMPORT_CSV = 2,   /* a header row of field names; "# key: value" lines above it */
};

/* The run header: {"run": {...}} on the first line of JSON lines, or
 * "# key: value" lines above a CSV header row. NULL where not given. */
struct fa_import_run {
	const char *source;      /* the tool, "torch 2.11.0+cu130" */
	const char *backend;     /* "cuda", ... */
	const char *device_name, *device_arch, *driver, *runtime, *host;
	const char *started_at;  /* ISO 8601 UTC, "2026-11-25T21:40:00Z" */
	const char *suite_name, *suite_path, *suite_hash;
	const char *label, *command_line;
	uint64_t seed;           /* the suite's seed (case seeds derive from it) */
	int32_t seed_set;
};

/* One result row of the file. */
struct fa_import_row {
	int32_t case_idx;   /* index into fa_import.cases */
	struct fa_loc loc;  /* where the row starts (line, column 1 or its '{') */
	struct fa_result r; /* ready to store: kernel, status, times, samples, flops, ... */
};

struct fa_import {
	const char *path;               /* the name given to fa_import_parse */
	int32_t format;                 /* FA_IMPORT_JSONL or FA_IMPORT_CSV */
	struct fa_import_run run;
	struct fa_case *cases;          /* distinct cases in first-seen order (key, seed set) */
	int32_t n_cases;
	struct fa_import_row *rows;
	int32_t n_rows;
	void *mem;                      /* private: the storage all of the above points into */
};

/* The largest file fa_import_read takes. A result file of the peer scripts
 * is a few MiB (bench/peers/); a file this large is a mistake, and the
 * limit keeps such a mistake from taking the machine's memory. */
#define FA_IMPORT_FILE_MAX ((size_t)256 << 20)

/* Reads and validates the file at path (format: enum fa_import_format).
 * Returns FA_OK with im filled (free with fa_import_free); FA_ERR_INPUT with
 * err at FILE:LINE:COL for anything wrong in the file, and (without a
 * position) for a path that is not a regular file or is larger than
 * FA_IMPORT_FILE_MAX; FA_ERR_NOT_FOUND or FA_ERR_IO when it cannot be read;
 * FA_ERR_NOMEM. On error im is empty (freeable). */
enum fa_rc fa_import_read(const char *path, int format, struct fa_import *im, struct fa_err *err);

/* The same from text[0..len) named name (used in messages). */
enum fa_rc fa_import_parse(const char *name, const char *text, size_t len, int format,
			   struct fa_import *im, struct fa_err *err);

void fa_import_free(struct fa_import *im);

struct fa_import_opts {
	const char *label;        /* replaces the header's label (NULL: keep it) */
	const char *run_into;     /* run id, label or "latest" to add the rows to; NULL: a new run */
	const char *command_line; /* stored for a new run whose header has none */
	const char *version;      /* fabench's version, stored with a new run */
};

struct fa_import_summary {
	int64_t run_id;          /* the run written */
	int32_t into;            /* 1 when the rows went into an existing run */
	int32_t cases_added;     /* case rows created */
	int32_t cases_matched;   /* cases found in the run by key */
	int32_t results;
	int32_t by_status[6];    /* per enum fa_status as readers show it: a pass
	                            without error statistics is unchecked */
	char note[512];          /* a difference worth telling (the run's device or suite
				    differs from the file's), "" when none */
};

/* Stores im in one transaction: a new run (source = the header's tool or
 * "import", status complete, backend the header's or "import") or, with
 * o->run_into, into that run (cases matched by key, missing ones added; the
 * tool is appended to the run's source). Returns FA_OK with sum filled;
 * FA_ERR_NOT_FOUND for an unknown run; FA_ERR_INPUT at the row's FILE:LINE:COL
 * when the run already holds that kernel's result for the case, and at the
 * value's when a case's depth or a label's layers contradict the run's case
 * of that key (the rule of the file's own repeated rows); FA_ERR_DB.
 * Nothing is written on error. */
enum fa_rc fa_import_store(struct fa_store *s, const struct fa_import *im,
			   const struct fa_import_opts *o, struct fa_import_summary *sum,
			   struct fa_err *err);

#endif /* FA_IMPORT_H */
