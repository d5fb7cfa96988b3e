/* merge.h - `fabench merge`: the runs of several databases (the shards of a
 * CI matrix, the nightly databases of several hosts) copied into one, ids
 * remapped, duplicates left out by run identity, written atomically.
 */
#ifndef FA_MERGE_H
#define FA_MERGE_H

#include <stdint.h>

#include "../base/err.h"

struct fa_merge_opts {
	/* 1: the runs copied are combined into one new run (the shards of one
	 * job: their cases keep their idx, which must not repeat); its shard,
	 * host and devices list every source's, merged_from their identities */
	int one_run;
	/* 1: one_run may combine runs of different suite hashes */
	int mixed_suites;
	const char *label; /* one_run: the combined run's label (NULL: the first run's) */
	int64_t only_run;  /* > 0: copy only this run of each input (compare FILE.db:RUN) */
	int keep_duplicates; /* 1: copy a run even when the output holds it */
};

struct fa_merge_out {
	int32_t runs_added;      /* runs written (1 at most with one_run) */
	int32_t runs_duplicate;  /* runs left out: the output already held them */
	int32_t runs_topped_up;  /* runs the output held with fewer cases (resumed
				  * since): their new cases added */
	int32_t cases_added, results_added, samples_added;
	int64_t run_id;          /* one_run: the combined run, else the last run added */
	int32_t old_copies;      /* files OUT.merge-PID beside the output: the private
				  * copies an older fabench's killed merges left (its
				  * copies named no host, so they are not removed) */
};

/* Merges the runs of inputs[0..n) into the database at out_path (created
 * when missing, else added to). Every table of a run is copied: runs,
 * cases, results, samples, and any other table with a run_id, case_id or
 * result_id column present in both files; calibrations rows the output
 * lacks. A run whose identity (started_at, host, seed, suite hash, shard,
 * command line; label for a side of a run --ab; the run's uid where it has
 * one) the output already holds,
 * as a run or in a combined run's merged_from, is left out, but for the
 * cases the output lacks (run --resume finished it since): those are added
 * to the run that holds it, and a run that was incomplete takes the
 * input's status (a combined run is complete once every part is). The
 * merge into an existing out_path is first done in a copy beside it: an
 * input it refuses, or any error there, leaves out_path as it was. Then it
 * is done in out_path itself, one transaction per input, so that a run or
 * another merge writing to it loses nothing and the file keeps its owner
 * and mode; an error there (the output changed or cannot be written)
 * leaves the inputs before the failing one merged. A new out_path is
 * written directly and removed on any error.
 * Returns FA_OK; FA_ERR_NOT_FOUND for an input that does not exist;
 * FA_ERR_INPUT (exit 2) for one_run over two suite hashes without
 * mixed_suites, or two runs holding the same case idx; FA_ERR_DB, FA_ERR_IO. */
enum fa_rc fa_store_merge(const char *out_path, const char *const *inputs, int n,
			  const struct fa_merge_opts *opts, struct fa_merge_out *out,
			  struct fa_err *err);

/* 1 when spec is FILE:RUN (compare's "nightly.db:base"): the text before
 * one of its colons names an existing file or ends in ".db"; file (size
 * bytes) receives it and *run points at the rest in spec ("latest" when
 * empty). 0 when spec is a plain run spec. */
int fa_store_spec_file(const char *spec, char *file, size_t size, const char **run);

/* Copies the run that run_spec ("latest", an id or a label) names in the
 * database in_path into the database out_path (created when missing), even
 * when out_path holds it already; *new_id is its id there. Returns FA_OK;
 * FA_ERR_NOT_FOUND for no database or no such run (naming them); else as
 * fa_store_merge. */
enum fa_rc fa_store_copy_run(const char *out_path, const char *in_path, const char *run_spec,
			     int64_t *new_id, struct fa_err *err);

#endif /* FA_MERGE_H */
