/* fixture.h - a small fabench database with realistic variety, for golden
 * tests of report, compare and history, and the helpers those tests share
 * to open it (or another test database) in a test's folder.
 *
 * Three runs of suite "smoke" (suites/smoke.yaml) on the CPU backend, with
 * the same 8 cases (same keys) in the same order:
 *
 *   run 1  label "baseline", clean commit 3f9a1c2e7b5d, seed 42, complete.
 *          cpu_dense and cpu_flash; every result passes except cpu_dense
 *          skipped on case 5 (over the memory budget).
 *   run 2  label "nightly", dirty commit 8c4e2a1f9d3b, seed 42, complete.
 *          cpu_dense, cpu_flash and cpu_flash_tiled (params
 *          "block_q=32,block_k=64"), every status: cpu_flash_tiled fails
 *          case 1, is skipped on cases 2, 3 and 4 (two reasons) and times
 *          out on case 7; cpu_flash errors on case 6; cpu_dense is skipped
 *          on case 5. Against run 1, cpu_flash is about 15% slower on case 0
 *          and 8% faster on cases 1, 2 and 5; cpu_dense moves by < 1%.
 *   run 3  label "nightly", clean commit 8c4e2a1f9d3b, seed
 *          18446744073709551557 (above 2^63), killed after case 2: status
 *          'incomplete', finished_at NULL, cpu_dense and cpu_flash only.
 *
 * The cases: 0 a small square problem, 1 causal, 2 head_dim 128, 3 head_dim
 * 72 causal, 4 decode (q_len 1, kv_len 2048, GQA 8/2), 5 sliding_window 256
 * at 4096 tokens, 6 prefix_lm 64, 7 varlen causal (seqlens 100/28/256). Every
 * timed result has 10 samples (run 1: 12) spread about its median, but the
 * timeout, which has 3 of about 23 s. Skips and the error have none.
 *
 * Everything a report shows is fixed, times included (started_at and
 * finished_at are set explicitly). Only results.created_at holds the time
 * the fixture was built: never print it in golden output.
 */
#ifndef FA_TEST_FIXTURE_H
#define FA_TEST_FIXTURE_H

#include "../harness/base/err.h"

#define FA_FIXTURE_RUN_BASE 1
#define FA_FIXTURE_RUN_MAIN 2
#define FA_FIXTURE_RUN_PARTIAL 3
#define FA_FIXTURE_CASES 8

struct fa_store;

/* Builds the database at db_path, replacing any file there (and its -wal /
 * -shm companions). Returns FA_OK, or an error after printing its message
 * to stderr. */
enum fa_rc fa_fixture_build(const char *db_path);

/* Builds the families database at db_path: one complete run (id 1, label
 * "peers", suite "peers", CUDA on an H100, bf16) of 5 cases (head_dim 64,
 * 128 causal, 192/128, 72, and a decode case of 128), with cuda_dense (rule
 * fa, same_max_abs set; case 3 stopped by max_time), the family
 * cuda_flash_mma (fails case 1 under rule fa, skips 192 and 72) and its
 * instances cuda_flash_mma_d192_128 (fails case 2), cuda_flash_mma_d72_pad80
 * and cuda_flash_mma_d72_masked (both run case 3), registered in that order,
 * and torch_sdpa_flash imported into the run without error statistics
 * (unchecked). Returns as fa_fixture_build. */
enum fa_rc fa_fixture_build_families(const char *db_path);

/* For the builders of test databases: removes db_path and its -wal and -shm
 * companions, then creates an empty database there. Returns as
 * fa_store_open with create set (*s NULL on failure). */
enum fa_rc fa_fixture_create(const char *db_path, struct fa_store **s, struct fa_err *err);

/* <the test's folder>/fixture.db, where fa_fixture_open builds the fixture
 * (a static buffer). */
const char *fa_fixture_path(void);

/* Builds the fixture at fa_fixture_path() and opens it. Returns the store
 * (the caller closes it), or NULL after recording a test failure. */
struct fa_store *fa_fixture_open(void);

/* Builds a test database at path with build (what names it in the failure
 * message) and opens it. Returns as fa_fixture_open. */
struct fa_store *fa_fixture_open_built(const char *path, enum fa_rc (*build)(const char *path),
				       const char *what);

/* Opens the existing database at path. Returns the store (the caller closes
 * it), or NULL after recording a test failure. */
struct fa_store *fa_fixture_open_db(const char *path);

/* One integer from a query on the database file db, opened read-only
 * (-1 on any error, which is printed). For tests that check what
 * build/fabench stored. */
long long fa_test_db_int(const char *db, const char *sql);

/* One text value of a query on db (malloc'd; "" when none or on error). */
char *fa_test_db_text(const char *db, const char *sql);

/* Runs sql (statements, no results) on the database file db: 0, or -1 on
 * any error, which is printed. For tests that change a stored file. */
int fa_test_db_exec(const char *db, const char *sql);

/* "FABENCH_PLUGINS=" and the test plugin (FABENCH_TEST_PLUGIN, which make
 * test sets, else build/libfabench-test.so) into buf, for the environment
 * of a build/fabench the test starts; returns buf. */
char *fa_test_plugins_var(char *buf, size_t size);

/* cpu_flash_bwd over tests/suites/bwd.yaml's cases of 16 queries and no
 * mask (a bwd and a fwd_bwd case of one shape) into a new database NAME in
 * the test's folder, its path into db; 0 when the run passed (else its
 * status, its output printed). */
int fa_test_run_small_bwd(const char *name, char *db, size_t size);

#endif /* FA_TEST_FIXTURE_H */
