/* fixture_history.c - builds the nightly-history database described in
 * fixture_history.h through the store's own API, as tests/fixture.c does.
 *
 * Every number is fixed: medians are a base time per (kernel, case) times a
 * night-to-night drift from a table, times the planted changes; samples are
 * spread about the median by fixed offsets. Nothing here is random.
 */
#include "fixture_history.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../harness/store/store.h"
#include "../harness/base/util.h"
#include "fixture.h"
#include "test.h"

#define FH_CASES 3
#define FH_KERNELS 2
#define FH_SAMPLES 10

enum { FH_DENSE, FH_FLASH };

static const char *const fh_kernel[FH_KERNELS] = {"cpu_dense", "cpu_flash"};

/* Base medians in ms per kernel and case. */
static const double fh_base_ms[FH_KERNELS][FH_CASES] = {{40.0, 90.0, 6.0}, {12.0, 30.0, 2.5}};

/* Night-to-night drift of every median (per run id, relative): at most
 * 0.6%, the spread of CPU timings between two nights on one machine. */
static const double fh_drift[FA_FIXTURE_HISTORY_RUNS + 1] = {
	0, 0.002, -0.003, 0.001, 0.005, -0.002, 0.0, 0.004, -0.006, 0.003, -0.001, 0.006, -0.004,
	0.002, 0.001,
};

/* Sample offsets in units of the spread (0.5%): skewed, one slow outlier. */
static const double fh_offsets[FH_SAMPLES] = {-1.5, -0.6, 0.2, 0.9, -0.2, 2.8, 0.1, -0.9, 0.4, -0.1};
#define FH_SPREAD 0.005

/* The splitmix64 finaliser: nearby inputs give unrelated outputs. */
static uint64_t fh_mix(uint64_t x)
{
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

void fa_fixture_history_commit(int64_t run_id, char *buf, size_t size)
{
	uint64_t a = fh_mix((uint64_t)run_id), b = fh_mix(a), c = fh_mix(b);
	snprintf(buf, size, "%016" PRIx64 "%016" PRIx64 "%08" PRIx32, a, b, (uint32_t)c);
}

/* Nightly number of a run id, 0 for the PR run. */
static int night_of(int64_t run_id)
{
	if (run_id == FA_FIXTURE_HISTORY_PR_RUN)
		return 0;
	return (int)(run_id < FA_FIXTURE_HISTORY_PR_RUN ? run_id : run_id - 1);
}

/* The planted changes: the factor of a median, and whether it fails. */
static double planted(int64_t run_id, int k, int c, int *fails)
{
	int n = night_of(run_id);
	double f = 1 + fh_drift[run_id];
	*fails = 0;
	if (n == 0)
		return f * 1.30;
	if (k == FH_FLASH && c == 0 && n >= 5)
		f *= 1.10;
	if (k == FH_FLASH && c == 1 && n >= 8)
		f *= 0.94;
	if (k == FH_FLASH && c == 2 && n == 7)
		f *= 1.25;
	if (k == FH_DENSE && c == 2 && n == 12)
		f *= 1.07;
	if (k == FH_DENSE && c == 1 && n == 12)
		*fails = 1;
	return f;
}

static void fh_case(int idx, struct fa_case *c)
{
	struct fa_problem *p = &c->p;
	memset(c, 0, sizeof *c);
	c->index = idx;
	p->batch = idx == 2 ? 4 : 1;
	p->heads = 8;
	p->kv_heads = idx == 2 ? 2 : 8;
	p->q_len = idx == 2 ? 1 : 1024;
	p->kv_len = idx == 2 ? 4096 : 1024;
	p->head_dim = p->head_dim_v = idx == 0 ? 64 : 128;
	p->dtype = FA_DTYPE_FP32;
	p->mask = idx == 0 ? FA_MASK_CAUSAL : FA_MASK_NONE;
	p->layout = FA_LAYOUT_BSHD;
	p->total_q = p->batch * p->q_len;
	p->total_k = p->batch * p->kv_len;
	p->scale = 1.0f / sqrtf((float)p->head_dim);
	c->dist = FA_DIST_NORMAL;
}

static void fh_result(int64_t run_id, int k, int c, struct fa_result *r, double *samples)
{
	int fails;
	double median = fh_base_ms[k][c] * planted(run_id, k, c, &fails);
	memset(r, 0, sizeof *r);
	r->kernel = fh_kernel[k];
	r->backend = "cpu";
	r->params = "";
	r->status = fails ? FA_STATUS_FAIL : FA_STATUS_PASS;
	if (fails)
		snprintf(r->reason, sizeof r->reason, "max_abs 0.0031 > 0.0001 at b=0 t=17 h=3 d=5");
	r->timing = "cpu";
	r->tel.sm_clock_mhz = r->tel.sm_clock_max_mhz = r->tel.temp_c = r->tel.power_w = NAN;
	r->tel.throttle_reasons = -1;
	r->st.same_max_abs = -1;
	r->st.worst_index = -1;
	for (int i = 0; i < FH_SAMPLES; i++)
		samples[i] = median * (1 + FH_SPREAD * fh_offsets[i]);
	r->samples = samples;
	fa_stats_compute(samples, FH_SAMPLES, &r->t);
	r->t.stop = FA_STOP_CONVERGED;
	r->checked = 1;
	snprintf(r->rule, sizeof r->rule, "tolerance");
	r->st.max_abs = fails ? 0.0031 : 2.1e-7 * (1 + c);
	r->st.rows_checked = 256;
	r->st.elems_checked = 256 * 64;
}

enum fa_rc fa_fixture_history_build(const char *db_path)
{
	struct fa_store *s = NULL;
	struct fa_err err;
	enum fa_rc rc;

	fa_err_clear(&err);
	rc = fa_fixture_create(db_path, &s, &err);
	for (int64_t id = 1; rc == FA_OK && id <= FA_FIXTURE_HISTORY_RUNS; id++) {
		int night = night_of(id);
		int n_cases = id == FA_FIXTURE_HISTORY_INCOMPLETE_RUN ? 2 : FH_CASES;
		char started[32], commit[48], cmd[128];
		struct fa_run_info ri;
		int64_t run_id;
		if (night == 0)
			snprintf(started, sizeof started, "2026-12-06T12:00:00Z");
		else
			snprintf(started, sizeof started, "2026-12-%02dT03:00:00Z", night);
		fa_fixture_history_commit(id, commit, sizeof commit);
		snprintf(cmd, sizeof cmd, "fabench run suites/smoke.yaml --label %s",
			 night ? "nightly" : "pr");
		memset(&ri, 0, sizeof ri);
		ri.started_at = started;
		ri.git_commit = commit;
		ri.git_dirty = 0;
		ri.host = "bench-01";
		ri.backend = "cpu";
		ri.device_name = "AMD EPYC 7B13 (2 threads)";
		ri.device_arch = "x86_64";
		ri.suite_path = "suites/smoke.yaml";
		ri.suite_name = "smoke";
		ri.suite_hash = "9f2c41d07be3a815";
		ri.command_line = cmd;
		ri.label = night ? "nightly" : "pr";
		ri.seed = 42;
		ri.version = "0.1.0";
		ri.source = "fabench";
		rc = fa_store_run_begin(s, &ri, &run_id, &err);
		if (rc == FA_OK && run_id != id)
			rc = fa_err_set(&err, FA_ERR_INTERNAL, "run %" PRId64 " got id %" PRId64, id,
					run_id);
		for (int c = 0; rc == FA_OK && c < n_cases; c++) {
			struct fa_case cs;
			struct fa_result res[FH_KERNELS];
			double samples[FH_KERNELS][FH_SAMPLES];
			fh_case(c, &cs);
			cs.key = fa_case_key(&cs);
			if (!cs.key) {
				rc = fa_err_set(&err, FA_ERR_NOMEM, "out of memory");
				break;
			}
			cs.seed = fa_fnv1a64(FA_FNV_OFFSET ^ ri.seed, cs.key, strlen(cs.key));
			for (int k = 0; k < FH_KERNELS; k++)
				fh_result(id, k, c, &res[k], samples[k]);
			rc = fa_store_case_commit(s, run_id, &cs, res, FH_KERNELS, NULL, &err);
			free(cs.key);
		}
		if (rc == FA_OK && id != FA_FIXTURE_HISTORY_INCOMPLETE_RUN)
			rc = fa_store_run_end(s, run_id, "complete", &err);
	}
	fa_store_close(s);
	if (rc != FA_OK)
		fprintf(stderr, "history fixture '%s': %s\n", db_path, err.msg);
	return rc;
}

const char *fa_fixture_history_path(void)
{
	static char path[1200];
	snprintf(path, sizeof path, "%s/nightly.db", fa_test_tmpdir());
	return path;
}

struct fa_store *fa_fixture_history_open(void)
{
	return fa_fixture_open_built(fa_fixture_history_path(), fa_fixture_history_build,
				     "the history fixture");
}
