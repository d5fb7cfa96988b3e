/* buildstore.h - the tables of `fabench build-matrix` in the database:
 * writing a build run job by job, finding one, and reading it back (the one
 * reader of these tables: the grid and the regression gate use it).
 *
 *   build_runs     one invocation of build-matrix: times, git, host, label,
 *                  the tools found ("nvcc=/usr/local/cuda/bin/nvcc ..."),
 *                  status 'incomplete' until every job was stored.
 *   build_results  per source and arch one row with symbol NULL: the
 *                  translation unit's status (ok, failed with the first
 *                  error line, skipped with why), compiler and compile_s;
 *                  and per kernel of an ok unit one row with its symbol
 *                  (mangled), name (demangled, short), regs (NVIDIA
 *                  registers per thread, AMD VGPRs), sgprs (AMD), shared_bytes
 *                  (static shared memory / LDS), scratch_bytes (per thread:
 *                  stack frame / private segment), spill_bytes (NVIDIA spill
 *                  stores), spill_regs (AMD spilled VGPRs + SGPRs),
 *                  matrix_count and matrix (the matrix instructions found and
 *                  their mnemonics) and isa_from ('sass', 'ptx', 'amdgcn':
 *                  where they were looked for). Unknown numbers are NULL.
 */
#ifndef FA_BUILDSTORE_H
#define FA_BUILDSTORE_H

#include <stdint.h>

#include "../base/err.h"
#include "../run/buildmatrix.h"
#include "store.h"

struct fa_build_info {
	const char *git_commit; /* "" when unknown */
	int git_dirty;          /* 1, 0, -1 unknown */
	const char *host, *label, *command_line, *version, *tools;
};

/* Inserts a build run ('incomplete') and commits; *id is its id. */
enum fa_rc fa_build_begin(struct fa_store *s, const struct fa_build_info *bi, int64_t *id,
			  struct fa_err *err);

/* Stores one job (its unit row and a row per kernel) in one transaction. */
enum fa_rc fa_build_add(struct fa_store *s, int64_t id, const struct fa_bm_job *job,
			struct fa_err *err);

/* Marks the build run complete with its finish time. */
enum fa_rc fa_build_end(struct fa_store *s, int64_t id, struct fa_err *err);

/* Finds a build run: "latest", its id ("12"), or a label (the latest build
 * run with it). FA_ERR_NOT_FOUND: "no build-matrix run 'x' in 'db'". */
enum fa_rc fa_build_find(struct fa_store *s, const char *ref, int64_t *id, struct fa_err *err);

/* A stored row; numbers that are NULL read as -1 (compile_s as NaN). */
struct fa_build_row {
	char *source, *arch, *family, *compiler, *error, *symbol, *name, *matrix, *isa_from;
	int status; /* enum fa_bm_status */
	double compile_s;
	long long regs, sgprs, shared_bytes, scratch_bytes, spill_bytes, spill_regs, matrix_count;
};

struct fa_build_table {
	int64_t id;
	char *started_at, *finished_at, *git_commit, *host, *label, *status, *tools;
	struct fa_build_row *rows; /* sorted by source, arch (the unit row first), name */
	int n;
};

/* Reads build run id whole. Returns FA_OK, FA_ERR_NOT_FOUND, FA_ERR_DB or
 * FA_ERR_NOMEM; on error t holds nothing. */
enum fa_rc fa_build_load(struct fa_store *s, int64_t id, struct fa_build_table *t,
			 struct fa_err *err);
void fa_build_table_free(struct fa_build_table *t);

#endif /* FA_BUILDSTORE_H */
