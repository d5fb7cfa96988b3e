/* fixture.c - builds the fixture database described in fixture.h through the
 * store's own API (fa_store_run_begin / fa_store_case_commit), so golden
 * tests of report, compare and history read what a real run writes.
 *
 * The numbers come from a small model, not from measurements: a kernel's
 * time is the case's exact FLOPs over an assumed CPU throughput per kernel,
 * scaled per case and per run; samples are spread about it by fixed offsets.
 * Nothing here is random, so the database is the same on every build.
 *
 * Also what the tests of those modules share to open it (and their other
 * test databases) in a test's folder.
 */
#include "fixture.h"

#include <inttypes.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../harness/store/store.h"
#include "../harness/base/util.h"
#include "proc.h"
#include "test.h"

#define FX_NCASES FA_FIXTURE_CASES

struct fx_case {
	int32_t batch, heads, kv_heads, q_len, kv_len, head_dim, mask, prefix_len, window;
	int32_t seqlens[4]; /* varlen: per-sequence lengths (queries = keys) */
	double eff;         /* how well CPU kernels do on it, relative to case 0 */
	double noise;       /* relative spread of its samples */
};

static const struct fx_case fx_cases[FX_NCASES] = {
	{2, 8, 8, 128, 128, 64, FA_MASK_NONE, 0, 0, {0}, 1.0, 0.004},
	{2, 8, 8, 512, 512, 64, FA_MASK_CAUSAL, 0, 0, {0}, 0.82, 0.004},
	{2, 8, 8, 512, 512, 128, FA_MASK_NONE, 0, 0, {0}, 1.12, 0.004},
	{2, 8, 8, 512, 512, 72, FA_MASK_CAUSAL, 0, 0, {0}, 0.74, 0.004},
	{4, 8, 2, 1, 2048, 128, FA_MASK_NONE, 0, 0, {0}, 0.21, 0.015},
	{2, 8, 8, 4096, 4096, 64, FA_MASK_SLIDING_WINDOW, 0, 256, {0}, 0.93, 0.004},
	{2, 8, 8, 256, 256, 64, FA_MASK_PREFIX_LM, 64, 0, {0}, 0.88, 0.004},
	{3, 8, 8, 256, 256, 64, FA_MASK_CAUSAL, 0, 0, {100, 28, 256}, 0.69, 0.004},
};

/* Relative sample offsets, in units of a case's noise: a skewed spread with
 * one slow outlier, as CPU timings have. */
static const double fx_offsets[12] = {-1.5, -0.6, 0.2, 0.9, -0.2, 2.8,
				      0.1,  -0.9, 0.4, -0.1, 1.2, -0.4};

enum { K_DENSE, K_FLASH, K_TILED, FX_NKERNELS };

static const char *const fx_kernel[FX_NKERNELS] = {"cpu_dense", "cpu_flash", "cpu_flash_tiled"};
static const char *const fx_params[FX_NKERNELS] = {"", "", "block_q=32,block_k=64"};
/* Assumed fp32 TFLOP/s on two cores. */
static const double fx_tflops[FX_NKERNELS] = {0.010, 0.024, 0.038};
/* How each kernel does on each case, relative to its best: the dense kernel
 * computes masked scores too (causal, sliding window) and is memory bound
 * on the decode case; the flash kernels skip masked tiles. */
static const double fx_kernel_eff[FX_NKERNELS][FX_NCASES] = {
	{1.00, 0.52, 1.10, 0.49, 0.38, 0.30, 0.71, 0.47},
	{0.92, 0.88, 1.14, 0.81, 0.52, 0.97, 0.90, 0.78},
	{0.95, 0.93, 1.00, 1.00, 1.00, 1.02, 0.97, 0.85},
};
/* Error scale of each kernel relative to the dense one. */
static const double fx_err_scale[FX_NKERNELS] = {1.0, 1.6, 1.4};

struct fx_outcome {
	int status;         /* enum fa_status */
	const char *reason;
};

struct fx_run {
	struct fa_run_info info;
	const char *finished_at; /* NULL: never ended (killed) */
	int n_cases, n_kernels, n_samples;
	double speed[FX_NKERNELS][FX_NCASES]; /* throughput factor per kernel and case */
	struct fx_outcome outcome[FX_NKERNELS][FX_NCASES]; /* status 0 = pass */
};

#define SKIP_MEM {FA_STATUS_SKIP, "memory estimate 1.1 GiB exceeds the budget of 1 GiB"}
#define SKIP_HD128 {FA_STATUS_SKIP, "head_dim 128 not instantiated"}
#define SKIP_HD72 {FA_STATUS_SKIP, "head_dim 72 not instantiated"}
#define FAIL_TOL {FA_STATUS_FAIL, "max_abs 0.0123 > 0.0001 at b=1 t=300 h=5 d=17"}
#define ERR_WS                                                                            \
	{FA_STATUS_ERROR, "cpu: workspace allocation of 96 MiB failed: \"Cannot allocate " \
			  "memory\", errno 12"}
#define TIMEOUT {FA_STATUS_TIMEOUT, "case ran past its timeout of 60 s"}
#define PASS {FA_STATUS_PASS, NULL}

#define FX_COMMIT_1 "3f9a1c2e7b5d4f60a8e1c9b7d2f4a6e8c0b1d3f5"
#define FX_COMMIT_2 "8c4e2a1f9d3b7c5e0a2f4d6b8e1c3a5f7d9b0e2c"

static const struct fx_run fx_runs[3] = {
	{
		.info = {"2026-11-20T09:15:02Z", FX_COMMIT_1, 0, "bench-01", "cpu",
			 "AMD EPYC 7B13 (2 threads)", "x86_64", "", "", "suites/smoke.yaml",
			 "smoke", "9f2c41d07be3a815",
			 "fabench run suites/smoke.yaml --label baseline", "baseline", 42, "0.1.0",
			 "fabench"},
		.finished_at = "2026-11-20T09:21:47Z",
		.n_cases = FX_NCASES,
		.n_kernels = 2,
		.n_samples = 12,
		.speed = {{1, 1, 1, 1, 1, 1, 1, 1}, {1, 1, 1, 1, 1, 1, 1, 1}},
		.outcome = {{PASS, PASS, PASS, PASS, PASS, SKIP_MEM, PASS, PASS}},
	},
	{
		.info = {"2026-11-25T21:40:00Z", FX_COMMIT_2, 1, "bench-01", "cpu",
			 "AMD EPYC 7B13 (2 threads)", "x86_64", "", "", "suites/smoke.yaml",
			 "smoke", "9f2c41d07be3a815",
			 "fabench run suites/smoke.yaml --label nightly --kernels 'cpu_*'",
			 "nightly", 42, "0.1.0", "fabench"},
		.finished_at = "2026-11-25T21:52:13Z",
		.n_cases = FX_NCASES,
		.n_kernels = 3,
		.n_samples = 10,
		/* cpu_flash: 15% slower on case 0, 8% faster on 1, 2 and 5 */
		.speed = {{1.004, 0.997, 1.002, 0.995, 1.006, 1, 0.998, 1.003},
			  {1 / 1.15, 1 / 0.92, 1 / 0.92, 1, 1, 1 / 0.92, 1, 1},
			  {1, 1, 1, 1, 1, 1, 1, 0.00015}},
		.outcome = {{PASS, PASS, PASS, PASS, PASS, SKIP_MEM, PASS, PASS},
			    {PASS, PASS, PASS, PASS, PASS, PASS, ERR_WS, PASS},
			    {PASS, FAIL_TOL, SKIP_HD128, SKIP_HD72, SKIP_HD128, PASS, PASS,
			     TIMEOUT}},
	},
	{
		.info = {"2026-11-26T03:00:04Z", FX_COMMIT_2, 0, "bench-01", "cpu",
			 "AMD EPYC 7B13 (2 threads)", "x86_64", "", "", "suites/smoke.yaml",
			 "smoke", "9f2c41d07be3a815", "fabench run suites/smoke.yaml --label nightly",
			 "nightly", 18446744073709551557ull, "0.1.0", "fabench"},
		.finished_at = NULL,
		.n_cases = 3,
		.n_kernels = 2,
		.n_samples = 10,
		.speed = {{0.99, 1.01, 1.0}, {1 / 1.14, 1 / 0.93, 1 / 0.92}},
	},
};

/* Exact forward FLOPs of case c: 2 (head_dim + head_dim_v) per unmasked
 * (query, key) pair and query head. */
static double fx_flops(const struct fx_case *c)
{
	double pairs = 0;
	for (int b = 0; b < c->batch; b++) {
		int32_t lq = c->seqlens[0] ? c->seqlens[b] : c->q_len;
		int32_t lk = c->seqlens[0] ? c->seqlens[b] : c->kv_len;
		for (int32_t i = 0; i < lq; i++)
			pairs += (double)fa_mask_row_count(c->mask, i, lq, lk, c->prefix_len,
							   c->window);
	}
	return pairs * c->heads * 2.0 * (2.0 * c->head_dim);
}

static void fx_problem(const struct fx_case *fc, int idx, struct fa_case *c, int32_t *cu,
		       char *key, size_t key_size, uint64_t run_seed)
{
	struct fa_problem *p = &c->p;
	size_t n;
	memset(c, 0, sizeof *c);
	c->index = idx;
	p->batch = fc->batch;
	p->heads = fc->heads;
	p->kv_heads = fc->kv_heads;
	p->q_len = fc->q_len;
	p->kv_len = fc->kv_len;
	p->head_dim = p->head_dim_v = fc->head_dim;
	p->dtype = FA_DTYPE_FP32;
	p->mask = fc->mask;
	p->layout = FA_LAYOUT_BSHD;
	p->prefix_len = fc->prefix_len;
	p->window = fc->window;
	p->varlen = fc->seqlens[0] != 0;
	p->total_q = fc->batch * fc->q_len;
	p->total_k = fc->batch * fc->kv_len;
	p->scale = 1.0f / sqrtf((float)fc->head_dim);
	c->dist = FA_DIST_NORMAL;
	if (p->varlen) {
		cu[0] = 0;
		for (int b = 0; b < fc->batch; b++)
			cu[b + 1] = cu[b] + fc->seqlens[b];
		p->total_q = p->total_k = cu[fc->batch];
		c->cu_seqlens_q = c->cu_seqlens_k = cu;
	}
	/* the canonical key, as fa_case_key writes it */
	n = (size_t)snprintf(key, key_size,
			     "batch=%d,heads=%d,kv_heads=%d,q_len=%d,kv_len=%d,head_dim=%d,"
			     "head_dim_v=%d,dtype=fp32,mask=%s,layout=bshd,input=normal",
			     p->batch, p->heads, p->kv_heads, p->q_len, p->kv_len, p->head_dim,
			     p->head_dim_v, fa_mask_name(p->mask));
	if (p->mask == FA_MASK_PREFIX_LM)
		n += (size_t)snprintf(key + n, key_size - n, ",prefix_len=%d", p->prefix_len);
	if (p->mask == FA_MASK_SLIDING_WINDOW)
		n += (size_t)snprintf(key + n, key_size - n, ",window=%d", p->window);
	for (int t = 0; p->varlen && t < 2; t++) {
		n += (size_t)snprintf(key + n, key_size - n, ",%s=", t ? "kv_seqlens" : "seqlens");
		for (int b = 0; b < p->batch; b++)
			n += (size_t)snprintf(key + n, key_size - n, "%s%d", b ? "/" : "",
					      fc->seqlens[b]);
	}
	c->key = key;
	c->seed = fa_fnv1a64(FA_FNV_OFFSET ^ run_seed, key, strlen(key));
}

static void fx_result(const struct fx_run *run, const struct fx_case *fc, const struct fa_case *c,
		      int idx, int k, struct fa_result *r, double *samples)
{
	const struct fa_problem *p = &c->p;
	const struct fx_outcome *oc = &run->outcome[k][idx];
	double flops = fx_flops(fc), median, err_scale;
	int64_t rows, elems;

	memset(r, 0, sizeof *r);
	r->kernel = fx_kernel[k];
	r->backend = "cpu";
	r->params = fx_params[k];
	r->status = oc->status;
	snprintf(r->reason, sizeof r->reason, "%s", oc->reason ? oc->reason : "");
	r->timing = "cpu";
	r->flops = flops;
	r->bytes = 4.0 * ((double)p->total_q * p->heads * (p->head_dim + p->head_dim_v) +
			  (double)p->total_k * p->kv_heads * (p->head_dim + p->head_dim_v));
	r->mem_bytes = r->bytes;
	if (k == K_DENSE) /* the fp32 score tensor */
		r->mem_bytes += 4.0 * p->batch * p->heads * (double)p->q_len * p->kv_len;
	r->tel.sm_clock_mhz = r->tel.sm_clock_max_mhz = r->tel.temp_c = r->tel.power_w = NAN;
	r->tel.throttle_reasons = -1;
	r->st.same_max_abs = -1;
	r->st.worst_index = -1;
	if (oc->status == FA_STATUS_SKIP || oc->status == FA_STATUS_ERROR) {
		r->t.stop = oc->status == FA_STATUS_ERROR ? FA_STOP_ERROR : FA_STOP_CONVERGED;
		return;
	}

	median = flops / (fx_tflops[k] * fc->eff * fx_kernel_eff[k][idx] * run->speed[k][idx] * 1e12) *
		 1e3;
	r->samples = samples;
	if (oc->status == FA_STATUS_TIMEOUT) {
		/* three samples of 20 s reach the 60 s timeout */
		for (int i = 0; i < 3; i++)
			samples[i] = median * (1 + 0.02 * fx_offsets[i]);
		fa_stats_compute(samples, 3, &r->t);
		r->t.stop = FA_STOP_TIMEOUT;
	} else {
		for (int i = 0; i < run->n_samples; i++)
			samples[i] = median * (1 + fc->noise * fx_offsets[i]);
		fa_stats_compute(samples, run->n_samples, &r->t);
		r->t.stop = FA_STOP_CONVERGED;
		r->t.discarded = idx == 0 && k == K_DENSE; /* one throttled sample */
	}
	r->tflops = flops / (r->t.median_ms * 1e-3) / 1e12;
	r->gbps = r->bytes / (r->t.median_ms * 1e-3) / 1e9;
	if (oc->status == FA_STATUS_TIMEOUT)
		return;

	/* error statistics: fp32 accumulation error, larger for larger problems */
	r->checked = 1;
	snprintf(r->rule, sizeof r->rule, "tolerance");
	/* the reference costs total_q * heads * kv_len * (head_dim + head_dim_v)
	 * multiply-adds; past 2^28 only 256 rows are checked (check.h) */
	rows = (int64_t)p->total_q * p->heads;
	if ((double)rows * p->kv_len * (p->head_dim + p->head_dim_v) > 268435456.0)
		rows = 256;
	elems = rows * p->head_dim_v;
	err_scale = fx_err_scale[k] * (1 + 0.37 * idx);
	r->st.max_abs = 1.9e-7 * err_scale;
	if (oc->status == FA_STATUS_FAIL)
		r->st.max_abs = 0.0123;
	r->st.mean_abs = r->st.max_abs * 0.11;
	r->st.max_rel = r->st.max_abs * 85;
	r->st.rel_l2 = r->st.max_abs * 0.42;
	r->st.nmse = r->st.rel_l2 * r->st.rel_l2;
	r->st.worst_index = (idx * 7919 + k * 104729) % elems;
	r->st.worst_ref = 0.4136 - 0.05 * idx;
	r->st.worst_out = r->st.worst_ref + r->st.max_abs;
	r->st.rows_checked = rows;
	r->st.elems_checked = elems;
}

/* Sets finished_at to the fixed time of the fixture (run_end writes now). */
static int fx_set_finished(struct fa_store *s, int64_t run_id, const char *at)
{
	sqlite3_stmt *st;
	int rc = sqlite3_prepare_v2(fa_store_db(s), "UPDATE runs SET finished_at = ? WHERE id = ?",
				    -1, &st, NULL);
	if (rc != SQLITE_OK)
		return rc;
	sqlite3_bind_text(st, 1, at, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, run_id);
	rc = sqlite3_step(st);
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

enum fa_rc fa_fixture_create(const char *db_path, struct fa_store **s, struct fa_err *err)
{
	char path[1100];
	unlink(db_path);
	snprintf(path, sizeof path, "%s-wal", db_path);
	unlink(path);
	snprintf(path, sizeof path, "%s-shm", db_path);
	unlink(path);
	return fa_store_open(db_path, 1, s, err);
}

enum fa_rc fa_fixture_build(const char *db_path)
{
	struct fa_store *s = NULL;
	struct fa_err err;
	enum fa_rc rc;

	fa_err_clear(&err);
	rc = fa_fixture_create(db_path, &s, &err);
	for (int ri = 0; rc == FA_OK && ri < 3; ri++) {
		const struct fx_run *run = &fx_runs[ri];
		int64_t run_id;
		rc = fa_store_run_begin(s, &run->info, &run_id, &err);
		for (int idx = 0; rc == FA_OK && idx < run->n_cases; idx++) {
			const struct fx_case *fc = &fx_cases[idx];
			struct fa_case c;
			struct fa_result res[FX_NKERNELS];
			double samples[FX_NKERNELS][12];
			int32_t cu[8];
			char key[512];
			fx_problem(fc, idx, &c, cu, key, sizeof key, run->info.seed);
			for (int k = 0; k < run->n_kernels; k++)
				fx_result(run, fc, &c, idx, k, &res[k], samples[k]);
			rc = fa_store_case_commit(s, run_id, &c, res, run->n_kernels, NULL, &err);
		}
		if (rc == FA_OK && run->finished_at) {
			rc = fa_store_run_end(s, run_id, "complete", &err);
			if (rc == FA_OK && fx_set_finished(s, run_id, run->finished_at) != SQLITE_OK)
				rc = fa_err_set(&err, FA_ERR_DB, "cannot set finished_at: %s",
						sqlite3_errmsg(fa_store_db(s)));
		}
	}
	fa_store_close(s);
	if (rc != FA_OK)
		fprintf(stderr, "fixture '%s': %s\n", db_path, err.msg);
	return rc;
}

const char *fa_fixture_path(void)
{
	static char path[1200];
	snprintf(path, sizeof path, "%s/fixture.db", fa_test_tmpdir());
	return path;
}

struct fa_store *fa_fixture_open(void)
{
	return fa_fixture_open_built(fa_fixture_path(), fa_fixture_build, "the fixture");
}

struct fa_store *fa_fixture_open_built(const char *path, enum fa_rc (*build)(const char *path),
				       const char *what)
{
	if (build(path) != FA_OK) {
		fa_test_fail(__FILE__, __LINE__, "cannot build %s at '%s'", what, path);
		return NULL;
	}
	return fa_fixture_open_db(path);
}

struct fa_store *fa_fixture_open_db(const char *path)
{
	struct fa_store *s = NULL;
	struct fa_err err;
	fa_err_clear(&err);
	if (fa_store_open(path, 0, &s, &err) != FA_OK) {
		fa_test_fail(__FILE__, __LINE__, "cannot open '%s': %s", path, err.msg);
		return NULL;
	}
	return s;
}

/* ---- The families fixture ------------------------------------------------------ */

/* Five bf16 cases on an H100-like CUDA device, and the kernels of a family
 * of instances (cuda_flash_mma and its instances for the head sizes it
 * lacks), a dense kernel, and rows imported from another tool. */
struct fam_case {
	int32_t q_len, kv_len, head_dim, head_dim_v, mask;
};

static const struct fam_case fam_cases[] = {
	{2048, 2048, 64, 64, FA_MASK_NONE},  {2048, 2048, 128, 128, FA_MASK_CAUSAL},
	{1024, 1024, 192, 128, FA_MASK_NONE}, {4096, 4096, 72, 72, FA_MASK_NONE},
	{1, 8192, 128, 128, FA_MASK_NONE},
};
#define FAM_NCASES ((int)(sizeof fam_cases / sizeof fam_cases[0]))

/* Kernels in the order they are registered (and run). '.': skipped (head
 * size not instantiated), 'p': pass, 'f': fail under rule fa, 'n': pass
 * with sampling stopped by max_time. */
static const struct {
	const char *name;
	const char *outcome; /* per case */
	double tflops;
} fam_kernels[] = {
	{"cuda_dense", "pppnp", 90},
	{"cuda_flash_mma", "pf..p", 420},
	{"cuda_flash_mma_d192_128", "..f..", 380},
	{"cuda_flash_mma_d72_pad80", "...p.", 300},
	{"cuda_flash_mma_d72_masked", "...p.", 290},
};
#define FAM_NKERNELS ((int)(sizeof fam_kernels / sizeof fam_kernels[0]))

static void fam_case_make(int idx, struct fa_case *c, char *key, size_t key_size)
{
	const struct fam_case *fc = &fam_cases[idx];
	struct fa_problem *p = &c->p;
	memset(c, 0, sizeof *c);
	c->index = idx;
	p->batch = 2;
	p->heads = p->kv_heads = 16;
	p->q_len = fc->q_len;
	p->kv_len = fc->kv_len;
	p->head_dim = fc->head_dim;
	p->head_dim_v = fc->head_dim_v;
	p->dtype = FA_DTYPE_BF16;
	p->mask = fc->mask;
	p->layout = FA_LAYOUT_BSHD;
	p->total_q = 2 * fc->q_len;
	p->total_k = 2 * fc->kv_len;
	p->scale = 1.0f / sqrtf((float)fc->head_dim);
	c->dist = FA_DIST_NORMAL;
	snprintf(key, key_size,
		 "batch=2,heads=16,kv_heads=16,q_len=%d,kv_len=%d,head_dim=%d,head_dim_v=%d,"
		 "dtype=bf16,mask=%s,layout=bshd,input=normal",
		 fc->q_len, fc->kv_len, fc->head_dim, fc->head_dim_v, fa_mask_name(fc->mask));
	c->key = key;
	c->seed = fa_fnv1a64(FA_FNV_OFFSET, key, strlen(key));
}

/* A timed result of kernel name on case idx at tflops, its samples spread
 * by noise. checked: error statistics under rule fa (else none, as an
 * import of another tool's timing). */
static void fam_result(int idx, const char *name, double tflops, double noise, int checked,
		       struct fa_result *r, double *samples, int n_samples)
{
	const struct fam_case *fc = &fam_cases[idx];
	double pairs = 2.0 * 16 * fc->q_len *
		       (fc->mask == FA_MASK_CAUSAL ? (fc->kv_len + 1) / 2.0 : fc->kv_len);
	double flops = pairs * 2.0 * (fc->head_dim + fc->head_dim_v);
	double bytes = 2.0 * 2 * 16 * (2.0 * fc->q_len * fc->head_dim_v +
				       2.0 * fc->kv_len * fc->head_dim);
	/* decode is memory bound: 1/120 of the matrix rate in GB/s, about 3 TB/s */
	double median = fc->q_len <= 16 ? bytes / (tflops * 8e9) * 1e3 : flops / (tflops * 1e12) * 1e3;
	memset(r, 0, sizeof *r);
	r->kernel = name;
	r->backend = "cuda";
	r->params = "";
	r->status = FA_STATUS_PASS;
	r->timing = "cold";
	r->flops = flops;
	r->bytes = bytes;
	r->mem_bytes = r->bytes;
	r->tel.sm_clock_mhz = r->tel.sm_clock_max_mhz = r->tel.temp_c = r->tel.power_w = NAN;
	r->tel.throttle_reasons = -1;
	r->st.same_max_abs = -1;
	r->st.worst_index = -1;
	r->samples = samples;
	for (int i = 0; i < n_samples; i++)
		samples[i] = median * (1 + noise * fx_offsets[i]);
	fa_stats_compute(samples, n_samples, &r->t);
	r->t.stop = FA_STOP_CONVERGED;
	r->tflops = flops / (r->t.median_ms * 1e-3) / 1e12;
	r->gbps = r->bytes / (r->t.median_ms * 1e-3) / 1e9;
	if (!checked) {
		r->t.stop = -1; /* the tool's sampling: no stop reason */
		r->st.max_abs = r->st.max_rel = r->st.mean_abs = r->st.rel_l2 = r->st.nmse = NAN;
		r->st.nan_count = r->st.inf_count = r->st.unwritten = -1;
		r->st.rows_checked = r->st.elems_checked = -1;
		return;
	}
	r->checked = 1;
	snprintf(r->rule, sizeof r->rule, "fa");
	r->st.same_max_abs = 3.9e-3 * (1 + 0.25 * idx);
	r->st.max_abs = r->st.same_max_abs * 0.9;
	r->st.mean_abs = r->st.max_abs * 0.08;
	r->st.max_rel = r->st.max_abs * 40;
	r->st.rel_l2 = r->st.max_abs * 0.3;
	r->st.nmse = r->st.rel_l2 * r->st.rel_l2;
	r->st.rows_checked = 256;
	r->st.elems_checked = 256 * fc->head_dim_v;
}

enum fa_rc fa_fixture_build_families(const char *db_path)
{
	static const struct fa_run_info info = {
		"2026-11-26T01:00:00Z", FX_COMMIT_2, 0, "h100-01", "cuda", "NVIDIA H100 80GB HBM3",
		"sm_90", "560.35", "12.6", "suites/peers.yaml", "peers", "4b1d09e2c3a7f865",
		"fabench run suites/peers.yaml --label peers", "peers", 1, "0.1.0", "fabench", NULL};
	static const struct fa_run_info import_info = {.source = "torch 2.5.1"};
	struct fa_store *s = NULL;
	struct fa_err err;
	struct fa_case cases[FAM_NCASES];
	char keys[FAM_NCASES][256];
	struct fa_result imported[FAM_NCASES];
	double imp_samples[FAM_NCASES][12];
	int32_t imp_case[FAM_NCASES];
	struct fa_store_import_out out;
	int64_t run_id = 0;
	enum fa_rc rc;

	fa_err_clear(&err);
	rc = fa_fixture_create(db_path, &s, &err);
	if (rc == FA_OK)
		rc = fa_store_run_begin(s, &info, &run_id, &err);
	for (int idx = 0; rc == FA_OK && idx < FAM_NCASES; idx++) {
		struct fa_result res[FAM_NKERNELS];
		double samples[FAM_NKERNELS][12];
		fam_case_make(idx, &cases[idx], keys[idx], sizeof keys[idx]);
		for (int k = 0; k < FAM_NKERNELS; k++) {
			char o = fam_kernels[k].outcome[idx];
			fam_result(idx, fam_kernels[k].name, fam_kernels[k].tflops * (1 - 0.03 * k),
				   o == 'n' ? 0.03 : 0.004, 1, &res[k], samples[k], 10);
			if (o == 'n') {
				res[k].t.stop = FA_STOP_MAX_TIME;
			} else if (o == 'f') {
				res[k].status = FA_STATUS_FAIL;
				res[k].st.max_abs = 0.0312;
				snprintf(res[k].reason, sizeof res[k].reason,
					 "max_abs 0.0312 > 2 x same_max_abs %.2g", res[k].st.same_max_abs);
			} else if (o == '.') {
				memset(&res[k].t, 0, sizeof res[k].t);
				res[k].samples = NULL;
				res[k].status = FA_STATUS_SKIP;
				res[k].checked = 0;
				res[k].rule[0] = '\0';
				res[k].tflops = res[k].gbps = 0;
				snprintf(res[k].reason, sizeof res[k].reason,
					 "head_dim %d/%d not instantiated", cases[idx].p.head_dim,
					 cases[idx].p.head_dim_v);
			}
		}
		rc = fa_store_case_commit(s, run_id, &cases[idx], res, FAM_NKERNELS, NULL, &err);
	}
	/* PyTorch's timings of the same cases, imported into the run: never
	 * checked against the reference */
	for (int idx = 0; rc == FA_OK && idx < FAM_NCASES; idx++) {
		fam_result(idx, "torch_sdpa_flash", 380, 0.006, 0, &imported[idx], imp_samples[idx],
			   10);
		imported[idx].backend = "torch";
		imp_case[idx] = idx;
	}
	if (rc == FA_OK)
		rc = fa_store_import(s, &import_info, run_id, "torch 2.5.1", cases, FAM_NCASES,
				     imported, imp_case, FAM_NCASES, &out, &err);
	if (rc == FA_OK)
		rc = fa_store_run_end(s, run_id, "complete", &err);
	if (rc == FA_OK && fx_set_finished(s, run_id, "2026-11-26T01:04:10Z") != SQLITE_OK)
		rc = fa_err_set(&err, FA_ERR_DB, "cannot set finished_at: %s",
				sqlite3_errmsg(fa_store_db(s)));
	fa_store_close(s);
	if (rc != FA_OK)
		fprintf(stderr, "families fixture '%s': %s\n", db_path, err.msg);
	return rc;
}

/* One integer from a query on db (or -1 on error). */
long long fa_test_db_int(const char *db, const char *sql)
{
	sqlite3 *h = NULL;
	sqlite3_stmt *st = NULL;
	long long v = -1;
	if (sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK)
		goto out;
	sqlite3_busy_timeout(h, 5000);
	if (sqlite3_prepare_v2(h, sql, -1, &st, NULL) != SQLITE_OK) {
		fprintf(stderr, "sql error: %s: %s\n", sql, sqlite3_errmsg(h));
		goto out;
	}
	if (sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
out:
	sqlite3_finalize(st);
	sqlite3_close(h);
	return v;
}

int fa_test_db_exec(const char *db, const char *sql)
{
	sqlite3 *h = NULL;
	char *msg = NULL;
	int rc = sqlite3_open(db, &h);
	if (rc == SQLITE_OK) {
		sqlite3_busy_timeout(h, 5000);
		rc = sqlite3_exec(h, sql, NULL, NULL, &msg);
	}
	if (rc != SQLITE_OK)
		fprintf(stderr, "sql error: %s: %s\n", sql, msg ? msg : sqlite3_errmsg(h));
	sqlite3_free(msg);
	sqlite3_close(h);
	return rc == SQLITE_OK ? 0 : -1;
}

/* One text value (malloc'd, "" when none). */
char *fa_test_db_text(const char *db, const char *sql)
{
	sqlite3 *h = NULL;
	sqlite3_stmt *st = NULL;
	char *v = NULL;
	if (sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK) {
		if (sqlite3_prepare_v2(h, sql, -1, &st, NULL) != SQLITE_OK)
			fprintf(stderr, "sql error: %s: %s\n", sql, sqlite3_errmsg(h));
		else if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
			v = strdup((const char *)sqlite3_column_text(st, 0));
	}
	sqlite3_finalize(st);
	sqlite3_close(h);
	return v ? v : strdup("");
}

char *fa_test_plugins_var(char *buf, size_t size)
{
	const char *p = getenv("FABENCH_TEST_PLUGIN");
	snprintf(buf, size, "FABENCH_PLUGINS=%s", p ? p : "build/libfabench-test.so");
	return buf;
}

int fa_test_run_small_bwd(const char *name, char *db, size_t size)
{
	struct fa_proc_result r;
	int st;
	snprintf(db, size, "%s/%s", fa_test_tmpdir(), name);
	unlink(db);
	fa_proc_run((char *[]){"run", "tests/suites/bwd.yaml", "--backend", "cpu", "--db", db,
			       "--kernels", "cpu_flash_bwd", "--where",
			       "q_len == 16 && mask == none", "--quiet", NULL},
		    NULL, 120, &r);
	st = r.status;
	if (st != 0)
		fprintf(stderr, "run: status %d\n%s\n%s", r.status, r.out, r.err);
	fa_proc_free(&r);
	return st;
}
