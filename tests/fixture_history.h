/* fixture_history.h - a fabench database with a long nightly history, for
 * the tests of `fabench history` (tests/fixture.h has only two complete
 * runs, too short to show steps).
 *
 * Suite "smoke" on the CPU backend, 3 cases (0: causal q_len 1024 head_dim
 * 64; 1: q_len 1024 head_dim 128; 2: decode, q_len 1, kv_len 4096, GQA 8/2)
 * and two kernels (cpu_dense, cpu_flash), 10 samples a result with 0.5%
 * spread; every median drifts by up to 0.6% from night to night.
 *
 *   runs 1-6, 8-13  label "nightly", complete: nightly number n (1..12) is run
 *                   FA_FIXTURE_HISTORY_NIGHT_RUN(n), started 2026-12-n at
 *                   03:00Z, each on its own clean commit
 *                   (fa_fixture_history_commit).
 *   run 7           label "pr", 2026-12-06T12:00:00Z, every kernel 30% slower:
 *                   excluded by --label nightly.
 *   run 14          label "nightly", 2026-12-13, killed after case 1:
 *                   'incomplete'.
 *
 * Planted in the nightly series (by nightly number n = 1..12):
 *   cpu_flash case 0   10% slower from night 5 on (a step, not new)
 *   cpu_flash case 1   6% faster from night 8 on
 *   cpu_flash case 2   25% slower on night 7 only (a spike: two steps)
 *   cpu_dense case 2   7% slower on night 12, the latest (a new regression)
 *   cpu_dense case 1   fails its check on night 12 (latest status FAIL)
 *   cpu_dense case 0   flat (drift only: no step)
 */
#ifndef FA_TEST_FIXTURE_HISTORY_H
#define FA_TEST_FIXTURE_HISTORY_H

#include <stddef.h>
#include <stdint.h>

#include "../harness/base/err.h"

struct fa_store;

#define FA_FIXTURE_HISTORY_NIGHTLY 12 /* complete nightly runs */
#define FA_FIXTURE_HISTORY_RUNS 14    /* every run */
#define FA_FIXTURE_HISTORY_PR_RUN 7
#define FA_FIXTURE_HISTORY_INCOMPLETE_RUN 14

/* The run id of nightly number n (1-based). */
#define FA_FIXTURE_HISTORY_NIGHT_RUN(n) ((n) < FA_FIXTURE_HISTORY_PR_RUN ? (n) : (n) + 1)

/* Builds the database at db_path, replacing any file there (and its -wal /
 * -shm companions). Returns FA_OK, or an error after printing its message
 * to stderr. */
enum fa_rc fa_fixture_history_build(const char *db_path);

/* <the test's folder>/nightly.db, where fa_fixture_history_open builds the
 * database (a static buffer). */
const char *fa_fixture_history_path(void);

/* Builds the database at fa_fixture_history_path() and opens it. Returns
 * the store (the caller closes it), or NULL after recording a test
 * failure. */
struct fa_store *fa_fixture_history_open(void);

/* The git commit of run id (40 hex digits) into buf (at least 41 bytes). */
void fa_fixture_history_commit(int64_t run_id, char *buf, size_t size);

#endif /* FA_TEST_FIXTURE_HISTORY_H */
