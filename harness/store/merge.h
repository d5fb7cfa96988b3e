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
};

struct fa_merge_out {
	int32_t runs_added;      /* runs written (1 at most with one_run) */
	int32_t runs_duplicate;  /* runs left out: the output already held them */
	int32_t cases_added, results_added, samples_added;
	int64_t run_id;          /* one_run: the combined run, else 0 */
};

/* Merges the runs of inputs[0..n) into the database at out_path (created
 * when missing, else added to). Every table of a run is copied: runs,
 * cases, results, samples, and any other table with a run_id, case_id or
 * result_id column present in both files; calibrations rows the output
 * lacks. A run whose identity (started_at, host, seed, suite hash, shard,
 * command line) the output already holds, as a run or in a combined run's
 * merged_from, is left out. The work is done on a copy beside out_path that
 * is renamed over it at the end: on any error out_path is as it was.
 * Returns FA_OK; FA_ERR_NOT_FOUND for an input that does not exist;
 * FA_ERR_INPUT (exit 2) for one_run over two suite hashes without
 * mixed_suites, or two runs holding the same case idx; FA_ERR_DB, FA_ERR_IO. */
enum fa_rc fa_store_merge(const char *out_path, const char *const *inputs, int n,
			  const struct fa_merge_opts *opts, struct fa_merge_out *out,
			  struct fa_err *err);

#endif /* FA_MERGE_H */
