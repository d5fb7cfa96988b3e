/* test_cuda.c - the CUDA plugin (build/libfabench-cuda.so) on a real device:
 * its memory, events, errors and services, the device fill against the host
 * fill bit for bit, the GPU reference against the CPU reference, and the
 * kernels cuda_dense and cuda_flash_simt against the CPU reference over
 * masks, GQA, varlen, prefix lengths, both layouts, every dtype and head
 * sizes 32 to 256; a graph replay; and, in child processes, the fault and
 * hang test kernels.
 *
 * The plugin is looked for next to the test binary ($FABENCH_CUDA_PLUGIN
 * overrides). When it cannot be loaded (no GPU, no driver, not built) every
 * test prints "skip: <reason>" and passes.
 */
#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../harness/run/backend.h"
#include "../harness/run/check.h"
#include "../harness/run/data.h"
#include "../kernels/common/fa_dtype.h"
#include "../kernels/common/fa_rng.h"
#include "../reference/ref.h"
#include "fixture.h"
#include "test.h"

extern char **environ;

#define MAXB 4
/* cudaError_t values the tests expect (driver_types.h) */
#define CUDA_ERROR_INVALID_VALUE 1
#define CUDA_ERROR_ILLEGAL_ADDRESS 700
#define CUDA_ERROR_MISALIGNED_ADDRESS 716
/* set in the child processes of the fault and hang tests */
#define CHILD_ENV "FABENCH_CUDA_TEST_CHILD"

static struct fa_registry reg;
static struct fa_backend_slot *slot;
static int tried;
static char skip_why[FA_ERR_MSG_MAX + 32];

static const char *plugin_path(char *buf, size_t size)
{
	const char *env = getenv("FABENCH_CUDA_PLUGIN");
	ssize_t n;
	char *slash;
	if (env && *env)
		return env;
	n = readlink("/proc/self/exe", buf, size - 1);
	if (n > 0) {
		buf[n] = '\0';
		slash = strrchr(buf, '/');
		if (slash && (size_t)(slash - buf) + sizeof "/libfabench-cuda.so" <= size) {
			strcpy(slash, "/libfabench-cuda.so");
			return buf;
		}
	}
	snprintf(buf, size, "build/libfabench-cuda.so");
	return buf;
}

/* The CUDA backend, loaded on first use and kept for the whole run; NULL
 * after printing "skip: <reason>" when it cannot be loaded. */
static struct fa_backend_slot *cuda(void)
{
	if (!tried) {
		struct fa_err err;
		char path[1024];
		tried = 1;
		fa_err_clear(&err);
		if (fa_registry_load_plugin(&reg, plugin_path(path, sizeof path), "cuda", &err) == FA_OK)
			slot = fa_registry_backend(&reg, "cuda");
		else
			snprintf(skip_why, sizeof skip_why, "cuda plugin: %s", err.msg);
	}
	if (!slot)
		printf("  skip: %s\n", skip_why);
	return slot;
}

#define BE (s->be.iface)
#define CTX (s->be.context)

static const struct fa_kernel *find_kernel(struct fa_backend_slot *s, const char *name)
{
	for (int i = 0; i < BE.kernel_count(CTX); i++) {
		const struct fa_kernel *k = BE.kernel_get(CTX, i);
		if (strcmp(k->name, name) == 0)
			return k;
	}
	return NULL;
}

/* ---- problems ---- */

struct spec {
	int batch, heads, kv_heads, head_dim, head_dim_v, dtype, mask, layout, varlen;
	int32_t window, prefix_len;
	int32_t lq[MAXB], lk[MAXB]; /* per sequence; without varlen [0] holds for all */
	int has_prefix;             /* 1: per-sequence prefix_lens below */
	int32_t prefix[MAXB];
};

struct tcase {
	struct fa_problem p;
	int32_t cu_q[MAXB + 1], cu_k[MAXB + 1], prefix[MAXB];
	const int32_t *cuq, *cuk, *pl; /* host arrays as the API takes them (NULL: unused) */
};

static void build(const struct spec *sp, struct tcase *t)
{
	struct fa_problem *p = &t->p;
	memset(t, 0, sizeof *t);
	p->batch = sp->batch;
	p->heads = sp->heads;
	p->kv_heads = sp->kv_heads;
	p->head_dim = sp->head_dim;
	p->head_dim_v = sp->head_dim_v;
	p->dtype = sp->dtype;
	p->mask = sp->mask;
	p->layout = sp->layout;
	p->varlen = sp->varlen;
	p->window = sp->window;
	p->prefix_len = sp->prefix_len;
	p->scale = 1.0f / sqrtf((float)sp->head_dim);
	for (int b = 0; b < sp->batch; b++) {
		int32_t lq = sp->varlen ? sp->lq[b] : sp->lq[0], lk = sp->varlen ? sp->lk[b] : sp->lk[0];
		t->cu_q[b + 1] = t->cu_q[b] + lq;
		t->cu_k[b + 1] = t->cu_k[b] + lk;
		p->q_len = lq > p->q_len ? lq : p->q_len;
		p->kv_len = lk > p->kv_len ? lk : p->kv_len;
		t->prefix[b] = sp->prefix[b];
	}
	p->total_q = t->cu_q[sp->batch];
	p->total_k = t->cu_k[sp->batch];
	fa_problem_set_strides(p);
	t->cuq = sp->varlen ? t->cu_q : NULL;
	t->cuk = sp->varlen ? t->cu_k : NULL;
	t->pl = sp->has_prefix ? t->prefix : NULL;
}

static size_t tensor_bytes(const struct fa_problem *p, int tensor)
{
	return (size_t)fa_tensor_elems(p, tensor) * (size_t)fa_dtype_size(p->dtype);
}

static const char *case_text(const struct tcase *t, char *buf, size_t size)
{
	const struct fa_problem *p = &t->p;
	snprintf(buf, size,
		 "b=%d h=%d/%d lq=%d lk=%d d=%d/%d dtype=%d mask=%d win=%d pre=%d%s layout=%d%s",
		 p->batch, p->heads, p->kv_heads, p->q_len, p->kv_len, p->head_dim, p->head_dim_v,
		 p->dtype, p->mask, p->window, p->prefix_len, t->pl ? "(lens)" : "", p->layout,
		 p->varlen ? " varlen" : "");
	return buf;
}

/* ---- device buffers of one case ---- */

struct bufs {
	void *q, *k, *v, *o, *cuq, *cuk, *pl, *ws; /* device */
	void *hq, *hk, *hv, *ho;                   /* host */
	size_t ws_bytes;
};

static void bufs_free(struct fa_backend_slot *s, struct bufs *d)
{
	void *dev[] = {d->q, d->k, d->v, d->o, d->cuq, d->cuk, d->pl, d->ws};
	for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++)
		if (dev[i])
			BE.free(CTX, dev[i]);
	free(d->hq);
	free(d->hk);
	free(d->hv);
	free(d->ho);
	memset(d, 0, sizeof *d);
}

static int upload_new(struct fa_backend_slot *s, const void *host, size_t bytes, void **dev)
{
	int code = BE.alloc(CTX, bytes, dev);
	if (code == 0 && bytes)
		code = BE.upload(CTX, *dev, host, bytes);
	return code;
}

/* Inputs drawn on the host (fa_data_fill) and uploaded; O allocated. */
static int bufs_init(struct fa_backend_slot *s, const struct tcase *t, int dist, uint64_t seed,
		     struct bufs *d)
{
	const struct fa_problem *p = &t->p;
	void **host[3] = {&d->hq, &d->hk, &d->hv}, **dev[3] = {&d->q, &d->k, &d->v};
	size_t b32 = sizeof(int32_t) * (size_t)(p->batch + 1);
	int code;
	memset(d, 0, sizeof *d);
	for (int tn = 0; tn < 3; tn++) {
		size_t bytes = tensor_bytes(p, tn);
		*host[tn] = malloc(bytes ? bytes : 1);
		if (!*host[tn])
			return -1;
		fa_data_fill(p, tn, dist, seed, *host[tn], 0);
		if ((code = upload_new(s, *host[tn], bytes, dev[tn])) != 0)
			return code;
	}
	d->ho = malloc(tensor_bytes(p, FA_TENSOR_O) + 1);
	if (!d->ho)
		return -1;
	if ((code = BE.alloc(CTX, tensor_bytes(p, FA_TENSOR_O), &d->o)) != 0)
		return code;
	if (t->cuq && ((code = upload_new(s, t->cuq, b32, &d->cuq)) != 0 ||
		       (code = upload_new(s, t->cuk, b32, &d->cuk)) != 0))
		return code;
	if (t->pl && (code = upload_new(s, t->pl, b32 - sizeof(int32_t), &d->pl)) != 0)
		return code;
	return 0;
}

static void launch_args(struct fa_backend_slot *s, const struct tcase *t, const struct bufs *d,
			struct fa_launch_args *a)
{
	memset(a, 0, sizeof *a);
	a->p = &t->p;
	a->q = d->q;
	a->k = d->k;
	a->v = d->v;
	a->o = d->o;
	a->cu_seqlens_q = d->cuq;
	a->cu_seqlens_k = d->cuk;
	a->prefix_lens = d->pl;
	a->workspace = d->ws;
	a->workspace_bytes = d->ws_bytes;
	a->stream = NULL; /* the plugin falls back to its own stream (the runner passes it) */
	a->backend_ctx = CTX;
}

/* ---- comparisons ---- */

/* Largest error allowed for an output of dtype against the fp64 reference
 * r: the rounding of the output (half an ulp of the dtype) plus `arith`, the
 * error of fp32 arithmetic over a few hundred keys. */
static double out_tol(int dtype, double r, double arith)
{
	double half_ulp = dtype == FA_DTYPE_FP16   ? 1.0 / 2048 /* 2^-11 */
			  : dtype == FA_DTYPE_BF16 ? 1.0 / 256  /* 2^-8 */
						   : 1e-5;      /* fp32: arithmetic only */
	return arith + half_ulp * 1.001 * (fabs(r) + arith);
}

/* All rows of t on the CPU (fp64). */
static int cpu_reference(const struct tcase *t, const struct bufs *d, struct fa_ref *ref)
{
	const struct fa_problem *p = &t->p;
	int64_t n = (int64_t)p->total_q * p->heads;
	int64_t *rows = malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
	struct fa_err err;
	enum fa_rc rc;
	if (!rows)
		return -1;
	for (int64_t i = 0; i < n; i++)
		rows[i] = i;
	fa_err_clear(&err);
	rc = fa_ref_compute(p, t->cuq, t->cuk, t->pl, d->hq, d->hk, d->hv, rows, n, 0, 0, NULL, ref,
			    &err);
	free(rows);
	if (rc != FA_OK)
		fa_test_fail(__FILE__, __LINE__, "cpu reference: %s", err.msg);
	return rc == FA_OK ? 0 : -1;
}

/* Checks d->ho (downloaded output) against ref: no element unwritten, none
 * NaN or Inf, every one within out_tol. Returns the number of bad elements. */
static int64_t compare_output(const struct tcase *t, const struct bufs *d, const struct fa_ref *ref,
			      double arith, const char *what)
{
	const struct fa_problem *p = &t->p;
	int64_t n_elems = fa_tensor_elems(p, FA_TENSOR_O), bad = 0, unwritten = 0, nonfinite = 0;
	char text[256];
	for (int64_t e = 0; e < n_elems; e++) {
		if (fa_is_poison(d->ho, p->dtype, e))
			unwritten++;
		else if (!isfinite(fa_load_f32(d->ho, p->dtype, e)))
			nonfinite++;
	}
	FA_CHECKF(unwritten == 0 && nonfinite == 0, "%s: %lld unwritten, %lld NaN/Inf of %lld (%s)",
		  what, (long long)unwritten, (long long)nonfinite, (long long)n_elems,
		  case_text(t, text, sizeof text));
	for (int64_t r = 0; r < ref->n_rows; r++) {
		int64_t T = ref->rows[r] / p->heads;
		int h = (int)(ref->rows[r] % p->heads);
		int64_t base = fa_tensor_offset(p, FA_TENSOR_O, T, h);
		for (int c = 0; c < p->head_dim_v; c++) {
			double want = ref->out[r * p->head_dim_v + c];
			double got = fa_load_f32(d->ho, p->dtype, base + c);
			if (!(fabs(got - want) <= out_tol(p->dtype, want, arith))) {
				if (bad++ < 3)
					fa_test_fail(__FILE__, __LINE__,
						     "%s: T=%lld h=%d c=%d got %.9g want %.9g (%s)",
						     what, (long long)T, h, c, got, want,
						     case_text(t, text, sizeof text));
			}
		}
	}
	FA_CHECKF(bad == 0, "%s: %lld elements out of tolerance", what, (long long)bad);
	return bad + unwritten + nonfinite;
}

/* Poisons O, launches k, waits, downloads O into d->ho. */
static int run_kernel(struct fa_backend_slot *s, const struct fa_kernel *k, const struct tcase *t,
		      struct bufs *d)
{
	struct fa_launch_args a;
	size_t ob = tensor_bytes(&t->p, FA_TENSOR_O);
	int code;
	if (k->workspace_bytes) {
		d->ws_bytes = k->workspace_bytes(&t->p, NULL);
		if (d->ws_bytes && (code = BE.alloc(CTX, d->ws_bytes, &d->ws)) != 0)
			return code;
	}
	launch_args(s, t, d, &a);
	if ((code = BE.memset(CTX, d->o, FA_POISON_BYTE, ob)) != 0 || (code = k->launch(&a)) != 0 ||
	    (code = BE.synchronize(CTX)) != 0 || (code = BE.download(CTX, d->ho, d->o, ob)) != 0)
		return code;
	return 0;
}

/* ---- the kernel cases: every mask, GQA, varlen with empty sequences and
 * prefix lengths, q_len above and below kv_len, both layouts, all dtypes,
 * head sizes 32, 72, 80, 128, 256 and unequal ones ---- */

static const struct spec kernel_cases[] = {
	/* batch heads kv  D   Dv  dtype          mask                    layout          varlen */
	{2, 2, 2, 32, 32, FA_DTYPE_FP32, FA_MASK_NONE, FA_LAYOUT_BSHD, 0, 0, 0, {100}, {100}, 0, {0}},
	{1, 3, 3, 72, 72, FA_DTYPE_BF16, FA_MASK_CAUSAL, FA_LAYOUT_BHSD, 0, 0, 0, {130}, {130}, 0, {0}},
	{2, 4, 2, 80, 80, FA_DTYPE_FP16, FA_MASK_SLIDING_WINDOW, FA_LAYOUT_BSHD, 0, 37, 0, {96}, {160},
	 0, {0}},
	{1, 2, 1, 128, 128, FA_DTYPE_FP32, FA_MASK_PREFIX_LM, FA_LAYOUT_BHSD, 0, 0, 50, {150}, {100}, 0,
	 {0}},
	{1, 8, 2, 256, 256, FA_DTYPE_BF16, FA_MASK_CAUSAL, FA_LAYOUT_BSHD, 0, 0, 0, {70}, {200}, 0, {0}},
	{2, 2, 1, 256, 256, FA_DTYPE_FP16, FA_MASK_NONE, FA_LAYOUT_BHSD, 0, 0, 0, {65}, {33}, 0, {0}},
	/* varlen: an empty sequence, one with no keys (its row must be 0) */
	{4, 4, 1, 128, 128, FA_DTYPE_FP16, FA_MASK_CAUSAL, FA_LAYOUT_BHSD, 1, 0, 0, {0, 63, 130, 1},
	 {5, 63, 200, 0}, 0, {0}},
	{4, 2, 2, 72, 72, FA_DTYPE_BF16, FA_MASK_PREFIX_LM, FA_LAYOUT_BSHD, 1, 0, 9, {40, 17, 90, 65},
	 {40, 30, 64, 129}, 1, {3, 0, 70, 200}},
	/* causal with q_len > kv_len: the first 70 rows attend nothing */
	{1, 2, 2, 80, 80, FA_DTYPE_FP32, FA_MASK_CAUSAL, FA_LAYOUT_BSHD, 0, 0, 0, {100}, {30}, 0, {0}},
	/* window 1: the diagonal only */
	{2, 2, 1, 32, 32, FA_DTYPE_FP16, FA_MASK_SLIDING_WINDOW, FA_LAYOUT_BHSD, 0, 1, 0, {50}, {77},
	 0, {0}},
	/* unequal and odd head sizes */
	{1, 2, 2, 192, 128, FA_DTYPE_FP16, FA_MASK_NONE, FA_LAYOUT_BSHD, 0, 0, 0, {80}, {90}, 0, {0}},
	{3, 3, 1, 33, 17, FA_DTYPE_FP32, FA_MASK_SLIDING_WINDOW, FA_LAYOUT_BSHD, 1, 20, 0,
	 {33, 70, 2}, {64, 70, 100}, 0, {0}},
	{1, 1, 1, 40, 256, FA_DTYPE_BF16, FA_MASK_PREFIX_LM, FA_LAYOUT_BHSD, 0, 0, 300, {129}, {129}, 0,
	 {0}},
};

static void check_kernel(const char *name, int dist, double arith)
{
	struct fa_backend_slot *s = cuda();
	const struct fa_kernel *k;
	uint64_t seed;
	if (!s)
		return;
	k = find_kernel(s, name);
	FA_REQUIRE(k != NULL);
	seed = fa_test_seed();
	for (size_t i = 0; i < sizeof kernel_cases / sizeof kernel_cases[0]; i++) {
		struct tcase t;
		struct bufs d;
		struct fa_ref ref;
		char why[256], what[64];
		int code;
		build(&kernel_cases[i], &t);
		snprintf(what, sizeof what, "%s case %zu", name, i);
		FA_CHECKF(fa_kernel_supports(k, &t.p, why, sizeof why), "%s: unsupported: %s", what, why);
		code = bufs_init(s, &t, dist, seed + i, &d);
		FA_CHECKF(code == 0, "%s: setting up: %d", what, code);
		if (code == 0) {
			code = run_kernel(s, k, &t, &d);
			FA_CHECKF(code == 0, "%s: %s", what, BE.error_string(CTX, code));
		}
		if (code == 0 && cpu_reference(&t, &d, &ref) == 0) {
			compare_output(&t, &d, &ref, arith, what);
			fa_ref_free(&ref);
		}
		bufs_free(s, &d);
	}
}

/* fp32 arithmetic error on N(0, 1) inputs: scores of a few units, sums of
 * a few hundred keys */
#define ARITH_NORMAL 3e-5
/* outlier tokens (x8) make scores ~64x and values ~8x larger: fp32 score
 * errors of ~1e-4 and outputs up to ~28 (still far below what an overflow or
 * a missed rescale does) */
#define ARITH_OUTLIERS 3e-3

FA_TEST(cuda, dense_matches_reference)
{
	check_kernel("cuda_dense", FA_DIST_NORMAL, ARITH_NORMAL);
}

FA_TEST(cuda, flash_simt_matches_reference)
{
	check_kernel("cuda_flash_simt", FA_DIST_NORMAL, ARITH_NORMAL);
}

/* outliers overflow any softmax that does not subtract its running max */
FA_TEST(cuda, flash_simt_outliers)
{
	check_kernel("cuda_flash_simt", FA_DIST_OUTLIERS, ARITH_OUTLIERS);
}

/* A backward kernel (bname) after its forward (fname, which writes the
 * LSE) on cases[0..n): dQ, dK, dV of every row against the CPU reference
 * under check_rule (enum fa_check_rule), no element left poisoned, and, when
 * same_bits, the same bits on a second launch. params: the backward's
 * tunables (NULL: its defaults). */
static void check_bwd(const char *fname, const char *bname, const struct spec *cases, size_t n,
		      const int32_t *params, int check_rule, int same_bits)
{
	struct fa_backend_slot *s = cuda();
	const struct fa_kernel *fk, *bk;
	struct fa_check_cfg cfg;
	uint64_t seed;
	if (!s)
		return;
	fk = find_kernel(s, fname);
	bk = find_kernel(s, bname);
	FA_REQUIRE(fk && bk && fa_kernel_writes_lse(fk) && fa_kernel_pass(bk) == FA_PASS_BWD);
	fa_check_defaults(&cfg);
	cfg.rule = check_rule;
	seed = fa_test_seed();
	for (size_t i = 0; i < n; i++) {
		const struct fa_problem *p;
		struct tcase t;
		struct bufs d;
		struct fa_launch_args a;
		struct fa_ref_grad g;
		struct fa_err err;
		void *ddo = NULL, *dg[3] = {NULL, NULL, NULL}, *lse = NULL, *bws = NULL, *fws = NULL;
		size_t fws_bytes = 0;
		void *h1[3] = {NULL, NULL, NULL}, *h2[3] = {NULL, NULL, NULL}, *hdo = NULL;
		const int tensors[3] = {FA_TENSOR_DQ, FA_TENSOR_DK, FA_TENSOR_DV};
		int64_t nq, nk, *qr = NULL, *kr = NULL;
		char what[64];
		int code;
		build(&cases[i], &t);
		p = &t.p;
		snprintf(what, sizeof what, "%s case %zu", bname, i);
		code = bufs_init(s, &t, FA_DIST_NORMAL, seed + i, &d);
		hdo = malloc(tensor_bytes(p, FA_TENSOR_DO) + 1);
		FA_REQUIRE(code == 0 && hdo);
		fa_data_fill(p, FA_TENSOR_DO, FA_DIST_NORMAL, seed + i, hdo, 0);
		code = upload_new(s, hdo, tensor_bytes(p, FA_TENSOR_DO), &ddo);
		for (int j = 0; j < 3 && code == 0; j++) {
			h1[j] = malloc(tensor_bytes(p, tensors[j]) + 1);
			h2[j] = malloc(tensor_bytes(p, tensors[j]) + 1);
			code = BE.alloc(CTX, tensor_bytes(p, tensors[j]), &dg[j]);
		}
		if (code == 0)
			code = BE.alloc(CTX, sizeof(float) * (size_t)p->total_q * p->heads + 4, &lse);
		if (code == 0)
			code = BE.alloc(CTX, bk->workspace_bytes(p, params) + 4, &bws);
		/* the forward's own workspace (split-KV), as the runner allocates it */
		if (code == 0 && fk->workspace_bytes && (fws_bytes = fk->workspace_bytes(p, NULL)) > 0)
			code = BE.alloc(CTX, fws_bytes, &fws);
		FA_REQUIRE(code == 0);
		launch_args(s, &t, &d, &a);
		a.struct_size = sizeof a;
		a.lse = lse;
		a.workspace = fws;
		a.workspace_bytes = fws_bytes;
		code = fk->launch(&a);
		a.workspace = bws;
		a.workspace_bytes = bk->workspace_bytes(p, params);
		a.params = params;
		a.d_o = ddo;
		a.dq = dg[0];
		a.dk = dg[1];
		a.dv = dg[2];
		for (int run = 0; run < 2 && code == 0; run++) {
			for (int j = 0; j < 3 && code == 0; j++)
				code = BE.memset(CTX, dg[j], FA_POISON_BYTE, tensor_bytes(p, tensors[j]));
			if (code == 0)
				code = bk->launch(&a);
			if (code == 0)
				code = BE.synchronize(CTX);
			for (int j = 0; j < 3 && code == 0; j++)
				code = BE.download(CTX, run ? h2[j] : h1[j], dg[j],
						   tensor_bytes(p, tensors[j]));
		}
		if (code == 0)
			code = BE.download(CTX, d.ho, d.o, tensor_bytes(p, FA_TENSOR_O));
		FA_CHECKF(code == 0, "%s: %s", what, BE.error_string(CTX, code));
		nq = (int64_t)p->total_q * p->heads;
		nk = (int64_t)p->total_k * p->kv_heads;
		qr = malloc(sizeof *qr * (size_t)(nq + 1));
		kr = malloc(sizeof *kr * (size_t)(nk + 1));
		for (int64_t r = 0; qr && r < nq; r++)
			qr[r] = r;
		for (int64_t r = 0; kr && r < nk; r++)
			kr[r] = r;
		fa_err_clear(&err);
		if (code == 0 && qr && kr &&
		    fa_ref_bwd_compute(p, t.cuq, t.cuk, t.pl, d.hq, d.hk, d.hv, hdo, qr, nq, kr, nk, 1,
				       0, NULL, &g, &err) == FA_OK) {
			const double *want[3] = {g.dq, g.dk, g.dv};
			const float *same[3] = {g.dq_same, g.dk_same, g.dv_same};
			for (int j = 0; j < 3; j++) {
				struct fa_err_stats st;
				char rule[32], reason[512];
				FA_CHECKF(fa_check_compare_tensor(p, t.cuq, t.cuk, tensors[j], h1[j],
								  j ? kr : qr, j ? nk : nq, want[j],
								  same[j], &cfg, &st, rule, sizeof rule,
								  reason, sizeof reason) ==
						  FA_VERDICT_PASS,
					  "%s: d%c: %s", what, "QKV"[j], reason);
				FA_CHECKF(!same_bits ||
						  memcmp(h1[j], h2[j], tensor_bytes(p, tensors[j])) == 0,
					  "%s: d%c differs between two launches", what, "QKV"[j]);
			}
			fa_ref_grad_free(&g);
		} else if (code == 0) {
			FA_CHECKF(0, "%s: reference: %s", what, err.msg);
		}
		for (int j = 0; j < 3; j++) {
			if (dg[j])
				BE.free(CTX, dg[j]);
			free(h1[j]);
			free(h2[j]);
		}
		if (ddo)
			BE.free(CTX, ddo);
		if (lse)
			BE.free(CTX, lse);
		if (bws)
			BE.free(CTX, bws);
		if (fws)
			BE.free(CTX, fws);
		free(hdo);
		free(qr);
		free(kr);
		bufs_free(s, &d);
	}
}

/* cuda_flash_bwd_simt on every kernel case, under the tolerance rule
 * (test_bwd.c says why); no atomics, so the same bits twice. */
FA_TEST(cuda, flash_bwd_simt_matches_reference)
{
	check_bwd("cuda_flash_simt", "cuda_flash_bwd_simt", kernel_cases,
		  sizeof kernel_cases / sizeof kernel_cases[0], NULL, FA_RULE_TOLERANCE, 1);
}

/* The tensor-core backward's cases: every instance (64, 72 padded to 80, 80,
 * 96, 128, 192/128, 256), GQA up to 4, every mask with q_len != kv_len,
 * varlen with an empty sequence and one without keys, tails of every block
 * size, both layouts. */
static const struct spec bwd_mma_cases[] = {
	/* batch heads kv  D   Dv  dtype          mask                    layout          varlen */
	{2, 4, 1, 128, 128, FA_DTYPE_BF16, FA_MASK_CAUSAL, FA_LAYOUT_BSHD, 0, 0, 0, {200}, {200}, 0, {0}},
	{1, 4, 4, 64, 64, FA_DTYPE_FP16, FA_MASK_NONE, FA_LAYOUT_BHSD, 0, 0, 0, {130}, {70}, 0, {0}},
	{1, 3, 3, 72, 72, FA_DTYPE_BF16, FA_MASK_CAUSAL, FA_LAYOUT_BHSD, 0, 0, 0, {130}, {130}, 0, {0}},
	{2, 4, 2, 80, 80, FA_DTYPE_FP16, FA_MASK_SLIDING_WINDOW, FA_LAYOUT_BSHD, 0, 37, 0, {96}, {160},
	 0, {0}},
	{1, 8, 2, 96, 96, FA_DTYPE_BF16, FA_MASK_PREFIX_LM, FA_LAYOUT_BSHD, 0, 0, 50, {150}, {100}, 0,
	 {0}},
	{1, 8, 2, 256, 256, FA_DTYPE_BF16, FA_MASK_CAUSAL, FA_LAYOUT_BSHD, 0, 0, 0, {70}, {200}, 0, {0}},
	{1, 2, 2, 192, 128, FA_DTYPE_FP16, FA_MASK_NONE, FA_LAYOUT_BSHD, 0, 0, 0, {80}, {90}, 0, {0}},
	/* varlen: an empty sequence, one with no keys (zero gradients) */
	{4, 4, 1, 128, 128, FA_DTYPE_FP16, FA_MASK_CAUSAL, FA_LAYOUT_BHSD, 1, 0, 0, {0, 63, 130, 1},
	 {5, 63, 200, 0}, 0, {0}},
	{4, 4, 2, 72, 72, FA_DTYPE_BF16, FA_MASK_PREFIX_LM, FA_LAYOUT_BSHD, 1, 0, 9, {40, 17, 90, 65},
	 {40, 30, 64, 129}, 1, {3, 0, 70, 200}},
	/* causal with q_len > kv_len: the first 70 rows attend nothing */
	{1, 2, 2, 80, 80, FA_DTYPE_BF16, FA_MASK_CAUSAL, FA_LAYOUT_BSHD, 0, 0, 0, {100}, {30}, 0, {0}},
	/* window 2: the diagonal and one key before it (window 1 leaves dK = 0
	 * exactly, P = 1 and dP = D: a relative error of pure rounding noise) */
	{2, 2, 1, 64, 64, FA_DTYPE_FP16, FA_MASK_SLIDING_WINDOW, FA_LAYOUT_BHSD, 0, 2, 0, {50}, {77},
	 0, {0}},
};

/* cuda_flash_bwd_mma (dq=atomic, its default) by the fa rule: P and dS
 * are rounded to the input type as in the reference's input-precision
 * pass; the atomics' order varies, so no bit comparison. */
FA_TEST(cuda, flash_bwd_mma_matches_reference)
{
	check_bwd("cuda_flash_simt", "cuda_flash_bwd_mma", bwd_mma_cases,
		  sizeof bwd_mma_cases / sizeof bwd_mma_cases[0], NULL, FA_RULE_FA, 0);
}

/* dq=det: the same check, and two launches give the same bits. */
FA_TEST(cuda, flash_bwd_mma_det_bit_identical)
{
	static const int32_t det[] = {1, 128, 2};
	check_bwd("cuda_flash_simt", "cuda_flash_bwd_mma", bwd_mma_cases,
		  sizeof bwd_mma_cases / sizeof bwd_mma_cases[0], det, FA_RULE_FA, 1);
}

/* The tunables other than the defaults (bn=128, split=2: auto, which splits
 * these small GQA cases; the two tests above run them): bn=64 (the 64-key
 * instances of head sizes 64, 72/80 and 128; the others have only theirs),
 * split=1 (a CTA per query head, dK/dV partials summed after) and split=0
 * (a CTA per kv head), with both dq modes: the same check, and under
 * dq=det the same bits twice (split's sum runs in head order). */
FA_TEST(cuda, flash_bwd_mma_bn64_and_split)
{
	static const int32_t v[][3] = {{0, 64, 0}, {1, 64, 0}, {0, 128, 1}, {1, 128, 1},
				       {1, 64, 1},  {0, 128, 0}, {1, 128, 0}};
	for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
		check_bwd("cuda_flash_simt", "cuda_flash_bwd_mma", bwd_mma_cases,
			  sizeof bwd_mma_cases / sizeof bwd_mma_cases[0], v[i], FA_RULE_FA,
			  v[i][0]);
}

/* Head sizes without an instance, and fp32, are refused with the reason
 * (fp32 by the kernel's dtype mask, before supports()). */
FA_TEST(cuda, flash_bwd_mma_refuses_other_sizes)
{
	struct fa_backend_slot *s = cuda();
	struct tcase t;
	struct spec sp = {1, 2, 2, 112, 112, FA_DTYPE_FP16, FA_MASK_NONE, FA_LAYOUT_BSHD, 0, 0, 0,
			  {16}, {16}, 0, {0}};
	const struct fa_kernel *k;
	char why[256] = "";
	if (!s)
		return;
	k = find_kernel(s, "cuda_flash_bwd_mma");
	FA_REQUIRE(k != NULL);
	build(&sp, &t);
	FA_CHECK(!fa_kernel_supports(k, &t.p, why, sizeof why));
	FA_CHECKF(strstr(why, "head_dim 112") != NULL, "why: %s", why);
	sp.head_dim = sp.head_dim_v = 128;
	build(&sp, &t);
	FA_CHECKF(fa_kernel_supports(k, &t.p, why, sizeof why), "why: %s", why);
	sp.dtype = FA_DTYPE_FP32;
	build(&sp, &t);
	FA_CHECK(!fa_kernel_supports(k, &t.p, why, sizeof why));
	FA_CHECKF(strstr(why, "fp32") != NULL, "why: %s", why);
}

FA_TEST(cuda, kernels_refuse_what_they_cannot_run)
{
	struct fa_backend_slot *s = cuda();
	struct tcase t;
	struct spec sp = {1, 2, 2, 300, 64, FA_DTYPE_FP16, FA_MASK_NONE, FA_LAYOUT_BSHD, 0, 0, 0,
			  {16}, {16}, 0, {0}};
	struct bufs d;
	struct fa_launch_args a;
	const struct fa_kernel *flash, *dense;
	char why[256] = "";
	if (!s)
		return;
	flash = find_kernel(s, "cuda_flash_simt");
	dense = find_kernel(s, "cuda_dense");
	FA_REQUIRE(flash && dense);
	build(&sp, &t);
	FA_CHECK(!fa_kernel_supports(flash, &t.p, why, sizeof why));
	FA_CHECKF(strstr(why, "300") != NULL, "reason '%s' does not name head_dim 300", why);
	FA_CHECK(flash->supports(&t.p, why, sizeof why) == 0); /* its own check agrees */
	t.p.head_dim = 64;
	t.p.kv_heads = 3; /* 2 heads over 3 kv heads */
	FA_CHECK(flash->supports(&t.p, why, sizeof why) == 0);
	FA_CHECK(dense->supports(&t.p, why, sizeof why) == 0);
	FA_CHECKF(strstr(why, "kv_heads 3") != NULL, "reason '%s'", why);
	/* the launchers check too, and the dense kernel its workspace */
	memset(&d, 0, sizeof d);
	launch_args(s, &t, &d, &a);
	FA_CHECK(flash->launch(&a) == CUDA_ERROR_INVALID_VALUE);
	t.p.kv_heads = 2;
	FA_CHECK(dense->workspace_bytes(&t.p, NULL) == (size_t)2 * 16 * 16 * 4);
	FA_CHECK(dense->launch(&a) == CUDA_ERROR_INVALID_VALUE); /* no workspace given */
	FA_CHECK(BE.synchronize(CTX) == 0);                       /* and nothing broke */
}

/* ---- tensor-core kernels: split-KV and block order ---- */

/* A case, the value of cuda_flash_mma's hd72 it runs under (the instance
 * of head size 72), and why it is here. */
struct mma_case {
	int32_t hd72;
	struct spec sp;
};

static const struct mma_case mma_cases[] = {
	/* decode over a long cache, GQA 4 packed: what auto splits */
	{0, {2, 8, 2, 128, 128, FA_DTYPE_BF16, FA_MASK_CAUSAL, FA_LAYOUT_BSHD, 0, 0, 0,
			    {1}, {1000}, 0, {0}}},
	/* speculative decode, causal bottom-right, the other layout and type */
	{0, {2, 8, 2, 128, 128, FA_DTYPE_FP16, FA_MASK_CAUSAL, FA_LAYOUT_BHSD, 0, 0, 0,
			    {3}, {777}, 0, {0}}},
	/* varlen: a sequence without keys (zeros) and one much longer */
	{0, {3, 4, 1, 64, 64, FA_DTYPE_BF16, FA_MASK_NONE, FA_LAYOUT_BSHD, 1, 0, 0,
			    {1, 2, 1}, {500, 0, 1300}, 0, {0}}},
	/* prefill: causal rows whose ranges end at different tiles */
	{0, {1, 4, 4, 128, 128, FA_DTYPE_BF16, FA_MASK_CAUSAL, FA_LAYOUT_BSHD, 0, 0, 0,
			    {300}, {300}, 0, {0}}},
	{0, {1, 2, 1, 256, 256, FA_DTYPE_BF16, FA_MASK_PREFIX_LM, FA_LAYOUT_BSHD, 0, 0,
			    100, {200}, {200}, 0, {0}}},
	{0, {1, 4, 2, 80, 80, FA_DTYPE_FP16, FA_MASK_SLIDING_WINDOW, FA_LAYOUT_BSHD, 0,
			    50, 0, {150}, {600}, 0, {0}}},
	{0, {2, 4, 4, 192, 128, FA_DTYPE_BF16, FA_MASK_NONE, FA_LAYOUT_BSHD, 0, 0, 0, {5}, {700}, 0,
	     {0}}},
	/* head size 72 on d72_masked (hd72 1) and on d72_pad80 (hd72 0) */
	{1, {1, 4, 1, 72, 72, FA_DTYPE_BF16, FA_MASK_CAUSAL, FA_LAYOUT_BSHD, 0, 0, 0, {2}, {900}, 0,
	     {0}}},
	{0, {1, 4, 1, 72, 72, FA_DTYPE_FP16, FA_MASK_NONE, FA_LAYOUT_BHSD, 0, 0, 0, {1}, {333}, 0,
	     {0}}},
	/* the run-time-width instances: 40 on d64_any, 112 on d128_any, 160
	 * and 224 on their own widths, 96/64 (unequal) on d96_any; 59 and 111
	 * have rows that are not 16-byte aligned (element copies), decode
	 * (split-KV merge of an odd width) and prefill, both layouts */
	{0, {1, 4, 2, 40, 40, FA_DTYPE_BF16, FA_MASK_CAUSAL, FA_LAYOUT_BSHD, 0, 0, 0, {150}, {150}, 0,
	     {0}}},
	{0, {2, 8, 2, 59, 59, FA_DTYPE_FP16, FA_MASK_CAUSAL, FA_LAYOUT_BSHD, 0, 0, 0, {1}, {1000}, 0,
	     {0}}},
	{0, {1, 4, 4, 59, 59, FA_DTYPE_BF16, FA_MASK_NONE, FA_LAYOUT_BHSD, 0, 0, 0, {203}, {203}, 0,
	     {0}}},
	{0, {2, 8, 2, 111, 111, FA_DTYPE_BF16, FA_MASK_CAUSAL, FA_LAYOUT_BHSD, 0, 0, 0, {3}, {777}, 0,
	     {0}}},
	{0, {3, 4, 1, 111, 111, FA_DTYPE_FP16, FA_MASK_NONE, FA_LAYOUT_BSHD, 1, 0, 0, {1, 2, 1},
	     {500, 0, 300}, 0, {0}}},
	{0, {1, 4, 2, 112, 112, FA_DTYPE_BF16, FA_MASK_CAUSAL, FA_LAYOUT_BSHD, 0, 0, 0, {300}, {300}, 0,
	     {0}}},
	{0, {1, 4, 4, 160, 160, FA_DTYPE_FP16, FA_MASK_SLIDING_WINDOW, FA_LAYOUT_BSHD, 0, 50, 0, {150},
	     {600}, 0, {0}}},
	{0, {1, 2, 1, 224, 224, FA_DTYPE_BF16, FA_MASK_PREFIX_LM, FA_LAYOUT_BSHD, 0, 0, 100, {200},
	     {200}, 0, {0}}},
	{0, {1, 4, 2, 96, 64, FA_DTYPE_BF16, FA_MASK_CAUSAL, FA_LAYOUT_BSHD, 0, 0, 0, {130}, {130}, 0,
	     {0}}},
};

/* cuda_flash_mma's tunables, in its table's order: splits, order, hd72,
 * sched, sk_ctas, sk_round, sk_ratio, decode, decode_ring. The arrays below
 * leave decode 0 (the tensor-core path) unless they test the decode path,
 * and decode_ring 0 unless they test the ring shapes. */
#define MMA_NPARAMS 9
/* cuda_flash_wgmma's: overlap, pingpong, kv_tile, pad128, consumers,
 * persistent, kv_tile128, split, dynamic, fold72, kv_tile80, k_release,
 * q_first */
#define WG_NPARAMS 13

/* Runs k on t with tunables tun (all of k's, in its table's order:
 * MMA_NPARAMS for cuda_flash_mma, WG_NPARAMS for cuda_flash_wgmma), its
 * workspace allocated as the harness does, and checks the output under the
 * fa rule (suites' default) against the fp64 reference. */
/* The output in d.o (downloaded into d.ho) against the dense reference, by
 * the suites' default rule: no element unwritten, NaN or Inf. */
static void verify_output(struct fa_backend_slot *s, const struct tcase *t, struct bufs *d,
			  const char *what)
{
	struct fa_ref ref;
	struct fa_check_cfg cfg;
	struct fa_err_stats st;
	struct fa_err err;
	int64_t n = (int64_t)t->p.total_q * t->p.heads, *rows;
	char rule[32], reason[256], text[256];
	int code = BE.download(CTX, d->ho, d->o, tensor_bytes(&t->p, FA_TENSOR_O));
	FA_CHECKF(code == 0, "%s: %s", what, BE.error_string(CTX, code));
	rows = malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
	FA_REQUIRE(rows != NULL);
	for (int64_t i = 0; i < n; i++)
		rows[i] = i;
	fa_err_clear(&err);
	if (code == 0 && fa_ref_compute(&t->p, t->cuq, t->cuk, t->pl, d->hq, d->hk, d->hv, rows, n,
					0, 0, NULL, &ref, &err) == FA_OK) {
		fa_check_defaults(&cfg); /* the suites' default rule and limits */
		FA_CHECKF(fa_check_compare(&t->p, t->cuq, d->ho, &ref, &cfg, &st, rule, sizeof rule,
					   reason, sizeof reason) == FA_VERDICT_PASS,
			  "%s: %s (%s)", what, reason, case_text(t, text, sizeof text));
		FA_CHECKF(st.unwritten == 0 && st.nan_count == 0 && st.inf_count == 0,
			  "%s: %lld unwritten, %lld NaN", what, (long long)st.unwritten,
			  (long long)st.nan_count);
		fa_ref_free(&ref);
	}
	free(rows);
}

static void check_mma(struct fa_backend_slot *s, const struct fa_kernel *k, const struct tcase *t,
		      const int32_t *tun, uint64_t seed, const char *what)
{
	struct bufs d;
	struct fa_launch_args a;
	char full[256];
	size_t ob = tensor_bytes(&t->p, FA_TENSOR_O);
	int code = bufs_init(s, t, FA_DIST_NORMAL, seed, &d);
	FA_CHECKF(code == 0, "%s: setting up: %d", what, code);
	d.ws_bytes = k->workspace_bytes ? k->workspace_bytes(&t->p, tun) : 0;
	if (code == 0 && d.ws_bytes)
		code = BE.alloc(CTX, d.ws_bytes, &d.ws);
	launch_args(s, t, &d, &a);
	a.params = tun;
	if (code == 0 && ((code = BE.memset(CTX, d.o, FA_POISON_BYTE, ob)) != 0 ||
			  (code = k->launch(&a)) != 0 || (code = BE.synchronize(CTX)) != 0))
		FA_CHECKF(0, "%s: %s", what, BE.error_string(CTX, code));
	snprintf(full, sizeof full, "%s splits=%d order=%d sched=%d sk_ctas=%d sk_round=%d", what,
		 tun[0], tun[1], tun[3], tun[4], tun[5]);
	if (code == 0)
		verify_output(s, t, &d, full);
	bufs_free(s, &d);
}

/* Every split count (none, 2, odd, more splits than some ranges have tiles,
 * the cap) and both block orders give the reference's answer. */
FA_TEST(cuda, flash_mma_split_kv_and_order)
{
	static const int32_t tunables[][2] = {{0, 0}, {1, 0}, {2, 0}, {7, 0}, {64, 0}, {0, 1}, {5, 1}};
	const struct fa_kernel *k;
	struct fa_backend_slot *s = cuda();
	uint64_t seed;
	if (!s)
		return;
	seed = fa_test_seed();
	k = find_kernel(s, "cuda_flash_mma");
	FA_REQUIRE(k != NULL && k->workspace_bytes != NULL && k->n_params == MMA_NPARAMS);
	for (size_t i = 0; i < sizeof mma_cases / sizeof mma_cases[0]; i++) {
		struct tcase t;
		char why[256], what[96];
		build(&mma_cases[i].sp, &t);
		FA_CHECKF(fa_kernel_supports(k, &t.p, why, sizeof why), "case %zu: %s", i, why);
		for (size_t j = 0; j < sizeof tunables / sizeof tunables[0]; j++) {
			const int32_t tun[MMA_NPARAMS] = {tunables[j][0], tunables[j][1],
							  mma_cases[i].hd72, 0, 0, 5, 0};
			snprintf(what, sizeof what, "%s case %zu (%d/%d, hd72 %d)", k->name, i,
				 t.p.head_dim, t.p.head_dim_v, (int)tun[2]);
			check_mma(s, k, &t, tun, seed + i, what);
		}
	}
}

/* ---- the Hopper kernel (cuda_flash_wgmma, sm_90a only) ---- */

/* Lengths off the 128-row tiles, every mask, GQA, varlen (a sequence without
 * keys, per-sequence prefixes), q_len above kv_len (rows that attend no key:
 * zeros), both layouts and both 16-bit types, head sizes 64, 128 and 256
 * (256: key tiles of 80 and of 64, O 256 columns in one product), 72 and
 * 80 (Q and K zero-filled to 80 columns by the copy engine, P V 80 columns
 * wide or padded to 128: only the head size's columns stored) and 192/128
 * (Q and K wider than V). */
static const struct spec wgmma_cases[] = {
	{1, 4, 4, 128, 128, FA_DTYPE_BF16, FA_MASK_NONE, FA_LAYOUT_BSHD, 0, 0, 0, {256}, {384}, 0,
	 {0}},
	{2, 8, 2, 128, 128, FA_DTYPE_FP16, FA_MASK_CAUSAL, FA_LAYOUT_BHSD, 0, 0, 0, {300}, {300}, 0,
	 {0}},
	{2, 8, 2, 64, 64, FA_DTYPE_BF16, FA_MASK_CAUSAL, FA_LAYOUT_BSHD, 0, 0, 0, {3}, {777}, 0, {0}},
	{1, 2, 2, 128, 128, FA_DTYPE_BF16, FA_MASK_CAUSAL, FA_LAYOUT_BSHD, 0, 0, 0, {500}, {200}, 0,
	 {0}},
	{1, 2, 1, 128, 128, FA_DTYPE_BF16, FA_MASK_PREFIX_LM, FA_LAYOUT_BSHD, 0, 0, 100, {200}, {200},
	 0, {0}},
	{1, 4, 4, 64, 64, FA_DTYPE_FP16, FA_MASK_SLIDING_WINDOW, FA_LAYOUT_BSHD, 0, 50, 0, {150},
	 {600}, 0, {0}},
	{3, 4, 1, 64, 64, FA_DTYPE_BF16, FA_MASK_NONE, FA_LAYOUT_BSHD, 1, 0, 0, {130, 2, 1},
	 {500, 0, 300}, 0, {0}},
	{3, 4, 2, 128, 128, FA_DTYPE_FP16, FA_MASK_PREFIX_LM, FA_LAYOUT_BSHD, 1, 0, 0, {40, 17, 260},
	 {40, 1, 300}, 1, {5, 0, 200}},
	{2, 4, 2, 256, 256, FA_DTYPE_BF16, FA_MASK_NONE, FA_LAYOUT_BSHD, 0, 0, 0, {200}, {333}, 0,
	 {0}},
	{1, 4, 4, 256, 256, FA_DTYPE_FP16, FA_MASK_CAUSAL, FA_LAYOUT_BHSD, 0, 0, 0, {300}, {300}, 0,
	 {0}},
	{1, 2, 1, 256, 256, FA_DTYPE_BF16, FA_MASK_SLIDING_WINDOW, FA_LAYOUT_BSHD, 0, 70, 0, {129},
	 {400}, 0, {0}},
	{3, 4, 1, 256, 256, FA_DTYPE_FP16, FA_MASK_PREFIX_LM, FA_LAYOUT_BSHD, 1, 0, 0, {65, 1, 130},
	 {70, 0, 190}, 1, {10, 0, 100}},
	{2, 4, 2, 72, 72, FA_DTYPE_BF16, FA_MASK_CAUSAL, FA_LAYOUT_BSHD, 0, 0, 0, {203}, {300}, 0,
	 {0}},
	{1, 4, 4, 80, 80, FA_DTYPE_FP16, FA_MASK_NONE, FA_LAYOUT_BHSD, 0, 0, 0, {129}, {257}, 0,
	 {0}},
	{2, 4, 1, 72, 72, FA_DTYPE_FP16, FA_MASK_SLIDING_WINDOW, FA_LAYOUT_BSHD, 1, 60, 0, {100, 140},
	 {150, 140}, 0, {0}},
	{2, 8, 2, 192, 128, FA_DTYPE_BF16, FA_MASK_CAUSAL, FA_LAYOUT_BSHD, 0, 0, 0, {250}, {250}, 0,
	 {0}},
	{1, 2, 2, 192, 128, FA_DTYPE_FP16, FA_MASK_PREFIX_LM, FA_LAYOUT_BHSD, 0, 0, 90, {130}, {400},
	 0, {0}},
};

/* cuda_flash_wgmma, every schedule (overlap 0 and 1, pingpong) and every
 * tile (kv_tile 80 and 64 at head size 256, kv_tile128 176 and 128 at 128,
 * pad128 0 and 1 at 72 and 80, consumers 2 and 3 at 64) and grid (one CTA
 * per work item, 3 CTAs walking them all: several items a CTA, the ring
 * and the ping-pong going on from one to the next; the dynamic schedule
 * auto, off and on, over one CTA per SM and over 3),
 * matches the reference on an sm_90 device, refuses other
 * devices naming the architecture, and refuses what it does not do with its
 * own reasons on any device. */
FA_TEST(cuda, flash_wgmma_matches_reference)
{
	struct fa_backend_slot *s = cuda();
	const struct fa_kernel *k;
	struct tcase t;
	char why[256], what[192];
	uint64_t seed;
	if (!s)
		return;
	k = find_kernel(s, "cuda_flash_wgmma");
	FA_REQUIRE(k != NULL && k->supports != NULL);
	/* overlap=1 (FA3's intra-warpgroup overlap) and pingpong=1 are the
	 * defaults: faster on the shapes measured (docs/BENCHMARKS.md, issue 15) */
	FA_REQUIRE(k->n_params == WG_NPARAMS && strcmp(k->params[0].name, "overlap") == 0 &&
		   strcmp(k->params[1].name, "pingpong") == 0 &&
		   strcmp(k->params[2].name, "kv_tile") == 0 &&
		   strcmp(k->params[3].name, "pad128") == 0 &&
		   strcmp(k->params[4].name, "consumers") == 0 &&
		   strcmp(k->params[5].name, "persistent") == 0 &&
		   strcmp(k->params[6].name, "kv_tile128") == 0 &&
		   strcmp(k->params[7].name, "split") == 0 &&
		   strcmp(k->params[8].name, "dynamic") == 0 &&
		   strcmp(k->params[9].name, "fold72") == 0 &&
		   strcmp(k->params[10].name, "kv_tile80") == 0 &&
		   strcmp(k->params[11].name, "k_release") == 0 &&
		   strcmp(k->params[12].name, "q_first") == 0);
	FA_CHECK(k->params[0].default_value == 1);
	FA_CHECK(k->params[1].default_value == 1); /* faster or within 1%, every shape */
	FA_CHECK(k->params[2].default_value == 80); /* FlashAttention-3's hd256 tile */
	FA_CHECK(k->params[3].default_value == 0);  /* P V 80 columns wide */
	FA_CHECK(k->params[4].default_value == 3);  /* 1.22x at hd64 on the H100 */
	FA_CHECK(k->params[5].default_value == 0);  /* slower on 3 shapes of 6 */
	FA_CHECK(k->params[6].default_value == 176); /* +3-4% at hd128 on the H100 */
	FA_CHECK(k->params[7].default_value == 0);   /* split-KV auto: short grids only */
	FA_CHECK(k->params[8].default_value == 0);   /* dynamic auto: masked items only */
	FA_CHECK(k->params[9].default_value == 1);   /* +12-15% at ViT 72 on the H100 */
	FA_CHECK(k->params[10].default_value == 128); /* fitted by fabench tune, H100 */
	FA_CHECK(k->params[11].default_value == 1);
	FA_CHECK(k->params[12].default_value == 1); /* 3-9% at ViT 512-1k on the H100 */
	/* refusals that come before the device check */
	build(&wgmma_cases[0], &t);
	t.p.head_dim = t.p.head_dim_v = 96;
	FA_CHECK(k->supports(&t.p, why, sizeof why) == 0);
	FA_CHECKF(strcmp(why, "head sizes 96/96 not instantiated (64, 72, 80, 128, 256 and "
			      "192/128 only)") == 0,
		  "reason '%s'", why);
	build(&wgmma_cases[0], &t);
	t.p.head_dim_v = 64; /* 128/64: one size for Q, K and V only */
	FA_CHECK(k->supports(&t.p, why, sizeof why) == 0);
	FA_CHECKF(strcmp(why, "head sizes 128/64 not instantiated (64, 72, 80, 128, 256 and "
			      "192/128 only)") == 0,
		  "reason '%s'", why);
	build(&wgmma_cases[0], &t);
	t.p.dtype = FA_DTYPE_FP32;
	FA_CHECK(k->supports(&t.p, why, sizeof why) == 0);
	FA_CHECKF(strcmp(why, "dtype fp32 not supported: wgmma kernel takes fp16 or bf16") == 0,
		  "reason '%s'", why);
	build(&wgmma_cases[0], &t);
	t.p.kv_len = 0;
	FA_CHECK(k->supports(&t.p, why, sizeof why) == 0);
	FA_CHECKF(strcmp(why, "q_len 256 or kv_len 0 empty (no tensor map of zero rows)") == 0,
		  "reason '%s'", why);
	build(&wgmma_cases[0], &t);
	t.p.k_stride_s += 4; /* rows 8 bytes off the 16-byte grid */
	FA_CHECK(k->supports(&t.p, why, sizeof why) == 0);
	FA_CHECKF(strcmp(why, "strides not multiples of 8 elements (16-byte TMA strides)") == 0,
		  "reason '%s'", why);
	build(&wgmma_cases[0], &t);
	if (!k->supports(&t.p, why, sizeof why)) {
		FA_CHECKF(strncmp(why, "device sm_", 10) == 0 && strstr(why, "is not sm_90a"),
			  "reason '%s'", why);
		printf("  skip: %s\n", why);
		return;
	}
	/* a base off the 16-byte grid: refused at launch, nothing runs */
	{
		struct bufs d;
		struct fa_launch_args a;
		FA_REQUIRE(bufs_init(s, &t, FA_DIST_NORMAL, 1, &d) == 0);
		launch_args(s, &t, &d, &a);
		a.v = (const char *)a.v + 2;
		FA_CHECK(k->launch(&a) == CUDA_ERROR_MISALIGNED_ADDRESS);
		FA_CHECK(BE.synchronize(CTX) == 0);
		bufs_free(s, &d);
	}
	seed = fa_test_seed();
	for (size_t i = 0; i < sizeof wgmma_cases / sizeof wgmma_cases[0]; i++) {
		build(&wgmma_cases[i], &t);
		FA_CHECKF(k->supports(&t.p, why, sizeof why), "case %zu: %s", i, why);
		/* the three schedules: overlap 0, overlap 1, overlap 1 with
		 * pingpong; each once with the default tile and grid, once with
		 * the other tile (where the head size has one) and 3 CTAs; the
		 * dynamic schedule auto (0), off (1) and on (2) under each */
		for (int32_t sch = 0; sch < 6; sch++) {
			const int32_t other = sch >= 3;
			/* head size 128: both key tiles, masked or not, under
			 * every schedule but one each */
			static const int32_t kt128[6] = {176, 128, 176, 128, 176, 128};
			/* dynamic: auto, off, on with one CTA per item asked for;
			 * off, on, auto with 3 CTAs */
			static const int32_t dyn[6] = {0, 1, 2, 1, 2, 0};
			/* 72: fold72 on and off under the three schedules */
			static const int32_t fold[6] = {1, 1, 1, 0, 0, 0};
			/* 72 and 80: both key tiles */
			static const int32_t kt80[6] = {176, 128, 176, 128, 176, 128};
			/* overlap 1 (schedules 1, 2, 4, 5): K freed after S and with V */
			static const int32_t krel[6] = {1, 1, 0, 1, 0, 1};
			/* split: 1 (none) with the default tile, auto (0) with the other */
			const int32_t tun[WG_NPARAMS] = {
				sch % 3 > 0, sch % 3 == 2, other ? 64 : 80, sch == 5, other ? 2 : 3,
				other ? 3 : 0, kt128[sch], !other, dyn[sch], fold[sch], kt80[sch], krel[sch],
				sch % 2};
			snprintf(what, sizeof what,
				 "%s case %zu overlap=%d pingpong=%d kv_tile=%d pad128=%d consumers=%d "
				 "persistent=%d kv_tile128=%d split=%d dynamic=%d fold72=%d kv_tile80=%d "
				 "k_release=%d q_first=%d",
				 k->name, i, (int)tun[0], (int)tun[1], (int)tun[2], (int)tun[3],
				 (int)tun[4], (int)tun[5], (int)tun[6], (int)tun[7], (int)tun[8],
				 (int)tun[9], (int)tun[10], (int)tun[11], (int)tun[12]);
			check_mma(s, k, &t, tun, seed + i, what);
		}
	}
}

/* cuda_flash_wgmma with split-KV forced (2, 3, 7, 64: more ranges than some
 * items have key tiles, ranges with no visible key under causal, sliding
 * window and varlen) on every case, with both key tiles, one CTA per item
 * and 3 CTAs walking them all, matches the reference; auto splits a short
 * grid over long keys (decode: the workspace is asked for) and not a
 * prefill whose partials would outweigh K and V; a split launch without its
 * workspace is refused. */
FA_TEST(cuda, flash_wgmma_split_kv)
{
	/* split, persistent, the other tile (kv_tile 64, kv_tile128 128, pad128, 2 consumers) */
	static const int32_t forms[][3] = {{2, 0, 0}, {3, 3, 1}, {7, 0, 1}, {64, 0, 0}, {3, 0, 0}};
	struct fa_backend_slot *s = cuda();
	const struct fa_kernel *k;
	struct tcase t;
	char why[256], what[160];
	uint64_t seed;
	if (!s)
		return;
	k = find_kernel(s, "cuda_flash_wgmma");
	FA_REQUIRE(k != NULL && k->workspace_bytes != NULL && k->n_params == WG_NPARAMS);
	build(&wgmma_cases[0], &t);
	if (!k->supports(&t.p, why, sizeof why)) {
		printf("  skip: %s\n", why);
		return;
	}
	{
		/* auto: decode over 777 keys (16 items) splits, a prefill
		 * (lq 256, lk 384) does not; forced: the workspace grows with N */
		const int32_t tun_auto[WG_NPARAMS] = {1, 1, 80, 0, 3, 0, 176, 0, 0, 1, 176, 1, 1};
		const int32_t tun_3[WG_NPARAMS] = {1, 1, 80, 0, 3, 0, 176, 3, 0, 1, 128, 1, 1};
		const int32_t tun_1[WG_NPARAMS] = {1, 1, 80, 0, 3, 0, 176, 1, 0, 1, 128, 1, 1};
		struct tcase t2;
		build(&wgmma_cases[2], &t2);
		FA_CHECK(k->workspace_bytes(&t2.p, tun_auto) > 0);
		FA_CHECK(k->workspace_bytes(&t2.p, tun_1) == 0);
		FA_CHECK(k->workspace_bytes(&t.p, tun_auto) == 0);
		FA_CHECK(k->workspace_bytes(&t.p, tun_3) ==
			 3 * sizeof(float) * (size_t)t.p.total_q * t.p.heads * 129);
	}
	{
		/* forced split without a workspace: refused, nothing runs */
		const int32_t tun_3[WG_NPARAMS] = {1, 1, 80, 0, 3, 0, 176, 3, 0, 1, 128, 1, 1};
		struct bufs d;
		struct fa_launch_args a;
		FA_REQUIRE(bufs_init(s, &t, FA_DIST_NORMAL, 1, &d) == 0);
		launch_args(s, &t, &d, &a);
		a.params = tun_3;
		FA_CHECK(k->launch(&a) == CUDA_ERROR_INVALID_VALUE);
		FA_CHECK(BE.synchronize(CTX) == 0);
		bufs_free(s, &d);
	}
	seed = fa_test_seed();
	for (size_t i = 0; i < sizeof wgmma_cases / sizeof wgmma_cases[0]; i++) {
		build(&wgmma_cases[i], &t);
		for (size_t j = 0; j < sizeof forms / sizeof forms[0]; j++) {
			const int32_t o = forms[j][2];
			const int32_t tun[WG_NPARAMS] = {1, 1, o ? 64 : 80, o, o ? 2 : 3,
							 forms[j][1], o ? 128 : 176, forms[j][0], 0,
							 !o, o ? 176 : 128, !o, !o};
			snprintf(what, sizeof what, "%s case %zu split=%d persistent=%d other tile=%d",
				 k->name, i, (int)forms[j][0], (int)forms[j][1], (int)o);
			check_mma(s, k, &t, tun, seed + i, what);
		}
	}
}

/* Runs k on case t's buffers d under tunables tun (the workspace they ask
 * for allocated), O poisoned first, and downloads O into out. Returns 0 or
 * the backend's code. */
static int run_into(struct fa_backend_slot *s, const struct fa_kernel *k, const struct tcase *t,
		    const struct bufs *d, const int32_t *tun, void *out)
{
	struct fa_launch_args a;
	void *ws = NULL;
	const size_t ob = tensor_bytes(&t->p, FA_TENSOR_O);
	const size_t wsb = k->workspace_bytes ? k->workspace_bytes(&t->p, tun) : 0;
	int code = wsb ? BE.alloc(CTX, wsb, &ws) : 0;
	launch_args(s, t, d, &a);
	a.params = tun;
	a.workspace = ws;
	a.workspace_bytes = wsb;
	if (code == 0 && (code = BE.memset(CTX, d->o, FA_POISON_BYTE, ob)) == 0 &&
	    (code = k->launch(&a)) == 0 && (code = BE.synchronize(CTX)) == 0)
		code = BE.download(CTX, out, d->o, ob);
	if (ws)
		BE.free(CTX, ws);
	return code;
}

/* Larger grids than wgmma_cases: 1024 causal items (GQA 32/8) over one CTA
 * per SM; varlen causal with a one-row sequence (the items past its rows
 * empty) and a sequence longer than its keys; a sliding window at head size
 * 256 (72/80 and 192/128 run in wgmma_cases). */
static const struct spec dyn_cases[] = {
	{2, 32, 8, 128, 128, FA_DTYPE_BF16, FA_MASK_CAUSAL, FA_LAYOUT_BSHD, 0, 0, 0, {2048}, {2048}, 0,
	 {0}},
	{3, 8, 2, 64, 64, FA_DTYPE_FP16, FA_MASK_CAUSAL, FA_LAYOUT_BSHD, 1, 0, 0, {1, 2000, 700},
	 {1, 2000, 500}, 0, {0}},
	{1, 16, 16, 256, 256, FA_DTYPE_BF16, FA_MASK_SLIDING_WINDOW, FA_LAYOUT_BHSD, 0, 300, 0,
	 {1500}, {1500}, 0, {0}},
};

/* cuda_flash_wgmma's dynamic schedule (tunable dynamic 2; 0 auto) gives
 * the bytes of one CTA per work item (dynamic 1, persistent 0, the same
 * split) on every case of wgmma_cases and dyn_cases: an item computes the
 * same whichever CTA runs it, so a dropped, doubled or misplaced item shows
 * as a byte that differs (or stays poisoned). Over one CTA per SM, 3 and 2
 * CTAs (most items from the counter), more CTAs asked than there are items
 * (only the stopping values taken), and under split-KV (3 ranges: the
 * ranges are items). Every form runs twice in a row and the forms follow
 * one another with other item counts: a counter not put back to 0 by a
 * launch makes the next one skip items. The baseline has every element
 * written (no poison left). */
FA_TEST(cuda, flash_wgmma_dynamic_schedule)
{
	/* {split, persistent, dynamic} */
	static const int32_t forms[][3] = {{1, 0, 2}, {1, 3, 2}, {1, 2, 2}, {1, 65535, 2},
					   {1, 0, 0}, {1, 3, 0}, {3, 3, 2},  {3, 0, 2}};
	struct fa_backend_slot *s = cuda();
	const struct fa_kernel *k;
	struct tcase t;
	char why[256], text[256];
	uint64_t seed;
	const size_t n_wg = sizeof wgmma_cases / sizeof wgmma_cases[0];
	const size_t n_dyn = sizeof dyn_cases / sizeof dyn_cases[0];
	if (!s)
		return;
	k = find_kernel(s, "cuda_flash_wgmma");
	FA_REQUIRE(k != NULL && k->n_params == WG_NPARAMS);
	build(&wgmma_cases[0], &t);
	if (!k->supports(&t.p, why, sizeof why)) {
		printf("  skip: %s\n", why);
		return;
	}
	seed = fa_test_seed();
	for (size_t i = 0; i < n_wg + n_dyn; i++) {
		struct bufs d;
		build(i < n_wg ? &wgmma_cases[i] : &dyn_cases[i - n_wg], &t);
		FA_CHECKF(k->supports(&t.p, why, sizeof why), "case %zu: %s", i, why);
		const size_t ob = tensor_bytes(&t.p, FA_TENSOR_O);
		const size_t elems = ob / 2;
		uint16_t *base = malloc(ob + 2), *got = malloc(ob + 2);
		FA_REQUIRE(base && got && bufs_init(s, &t, FA_DIST_NORMAL, seed + i, &d) == 0);
		for (int32_t split = 1; split <= 3; split += 2) {
			const int32_t off[WG_NPARAMS] = {1, 1, 80, 0, 3, 0, 176, split, 1, 1, 128, 1, 1};
			int code = run_into(s, k, &t, &d, off, base);
			FA_CHECKF(code == 0, "case %zu split=%d dynamic=1: %s", i, (int)split,
				  BE.error_string(CTX, code));
			if (code != 0)
				break;
			size_t poisoned = 0;
			for (size_t e = 0; e < elems; e++)
				poisoned += base[e] == 0xffff;
			FA_CHECKF(poisoned == 0, "case %zu split=%d dynamic=1: %zu elements unwritten (%s)",
				  i, (int)split, poisoned, case_text(&t, text, sizeof text));
			for (size_t f = 0; f < sizeof forms / sizeof forms[0]; f++) {
				if (forms[f][0] != split)
					continue;
				const int32_t tun[WG_NPARAMS] = {
					1, 1, 80, 0, 3, forms[f][1], 176, split, forms[f][2], 1, 128, 1, 1};
				for (int rep = 0; rep < 2; rep++) {
					code = run_into(s, k, &t, &d, tun, got);
					FA_CHECKF(code == 0, "case %zu split=%d persistent=%d dynamic=%d: %s",
						  i, (int)split, (int)tun[5], (int)tun[8],
						  BE.error_string(CTX, code));
					if (code != 0)
						break;
					size_t diff = 0, first = 0;
					for (size_t e = 0; e < elems; e++)
						if (got[e] != base[e] && diff++ == 0)
							first = e;
					FA_CHECKF(diff == 0,
						  "case %zu split=%d persistent=%d dynamic=%d launch %d: %zu "
						  "of %zu elements differ from one CTA per item, the first "
						  "%zu (%04x, not %04x) (%s)",
						  i, (int)split, (int)tun[5], (int)tun[8], rep + 1, diff,
						  elems, first, got[first], base[first],
						  case_text(&t, text, sizeof text));
				}
			}
		}
		bufs_free(s, &d);
		free(base);
		free(got);
	}
}

/* The LSE kernel k writes under tunables tun (NULL: its defaults) into
 * got, against cuda_flash_simt's in want, for case sp: 1 when every row
 * agrees (within 1e-4 relative, +inf on the same rows). */
static int lse_matches_simt(struct fa_backend_slot *s, const struct fa_kernel *k,
			    const struct spec *sp, const int32_t *tun, uint64_t seed, const char *what)
{
	const struct fa_kernel *simt = find_kernel(s, "cuda_flash_simt");
	struct tcase t;
	struct bufs d;
	struct fa_launch_args a;
	void *lse_dev[2] = {NULL, NULL}, *ws = NULL;
	float *lse_host[2] = {NULL, NULL};
	int code, ok = 1;
	build(sp, &t);
	const size_t rows = (size_t)t.p.total_q * (size_t)t.p.heads, lb = sizeof(float) * rows;
	if (bufs_init(s, &t, FA_DIST_NORMAL, seed, &d) != 0)
		return 0;
	for (int j = 0; j < 2; j++) {
		lse_host[j] = malloc(lb + 4);
		if (!lse_host[j] || BE.alloc(CTX, lb + 4, &lse_dev[j]) != 0)
			ok = 0;
	}
	const size_t wsb = ok ? k->workspace_bytes(&t.p, tun) : 0;
	if (wsb && BE.alloc(CTX, wsb, &ws) != 0)
		ok = 0;
	for (int j = 0; j < 2 && ok; j++) {
		launch_args(s, &t, &d, &a);
		a.struct_size = sizeof a;
		if (j == 1) {
			a.params = tun;
			a.workspace = ws;
			a.workspace_bytes = wsb;
		}
		a.lse = lse_dev[j];
		code = BE.memset(CTX, lse_dev[j], FA_POISON_BYTE, lb);
		if (code == 0)
			code = (j ? k : simt)->launch(&a);
		if (code == 0)
			code = BE.synchronize(CTX);
		if (code == 0)
			code = BE.download(CTX, lse_host[j], lse_dev[j], lb);
		if (code != 0) {
			FA_CHECKF(0, "%s: %s: %s", what, j ? k->name : "simt",
				  BE.error_string(CTX, code));
			ok = 0;
		}
	}
	for (size_t r = 0; r < rows && ok; r++) {
		const float want = lse_host[0][r], got = lse_host[1][r];
		if (!(isinf(want) ? isinf(got) && got > 0 && want > 0
				  : fabsf(got - want) <= 1e-4f * fmaxf(1.f, fabsf(want)))) {
			FA_CHECKF(0, "%s row %zu: lse %.9g, simt %.9g", what, r, (double)got,
				  (double)want);
			ok = 0;
		}
	}
	if (ws)
		BE.free(CTX, ws);
	for (int j = 0; j < 2; j++) {
		if (lse_dev[j])
			BE.free(CTX, lse_dev[j]);
		free(lse_host[j]);
	}
	bufs_free(s, &d);
	return ok;
}

/* cuda_flash_wgmma writes the LSE (a backward's forward): each row's
 * natural-log log-sum-exp as cuda_flash_simt writes it (fp32 arithmetic
 * both: within 1e-4 relative, +inf on the same rows), from its epilogue
 * (split 1, one CTA per item and the dynamic schedule) and from the
 * split-KV merge (split 3 and 64, the second dynamic), on every case; and
 * cuda_flash_bwd_simt's gradients from its O and LSE match the reference. */
FA_TEST(cuda, flash_wgmma_writes_lse)
{
	/* {split, dynamic} */
	static const int32_t splits[][2] = {{1, 1}, {1, 2}, {3, 1}, {64, 2}};
	struct fa_backend_slot *s = cuda();
	const struct fa_kernel *k, *simt;
	struct tcase t;
	char why[256];
	uint64_t seed;
	if (!s)
		return;
	k = find_kernel(s, "cuda_flash_wgmma");
	simt = find_kernel(s, "cuda_flash_simt");
	FA_REQUIRE(k != NULL && simt != NULL && fa_kernel_writes_lse(k) &&
		   fa_kernel_writes_lse(simt));
	build(&wgmma_cases[0], &t);
	if (!k->supports(&t.p, why, sizeof why)) {
		printf("  skip: %s\n", why);
		return;
	}
	seed = fa_test_seed();
	for (size_t i = 0; i < sizeof wgmma_cases / sizeof wgmma_cases[0]; i++)
		for (size_t sp = 0; sp < sizeof splits / sizeof splits[0]; sp++) {
			const int32_t tun[WG_NPARAMS] = {
				1, 1, 80, 0, 3, 0, 176, splits[sp][0], splits[sp][1], 1, 128, 1, 1};
			char what[96];
			snprintf(what, sizeof what, "case %zu split=%d dynamic=%d", i,
				 (int)splits[sp][0], (int)splits[sp][1]);
			lse_matches_simt(s, k, &wgmma_cases[i], tun, seed + i, what);
		}
	/* no split, no split (GQA, causal), auto split (decode over 777 keys) */
	check_bwd("cuda_flash_wgmma", "cuda_flash_bwd_simt", wgmma_cases, 3, NULL, FA_RULE_TOLERANCE,
		  1);
}

/* ---- the Hopper backward (cuda_flash_bwd_wgmma, sm_90a only) ---- */

/* Head size 128 and the instance of 80 (head sizes 72 and 80): GQA up to 4 with batch 2, every mask
 * with q_len != kv_len both ways (causal with q_len > kv_len: rows that
 * attend nothing), tails of the 128-key and 64-row blocks, several key
 * blocks without a mask (the unmasked path), varlen with an empty sequence
 * and one without keys, both layouts and both 16-bit types. */
static const struct spec bwd_wgmma_cases[] = {
	{2, 4, 1, 128, 128, FA_DTYPE_BF16, FA_MASK_CAUSAL, FA_LAYOUT_BSHD, 0, 0, 0, {200}, {200}, 0, {0}},
	{1, 4, 4, 128, 128, FA_DTYPE_FP16, FA_MASK_NONE, FA_LAYOUT_BHSD, 0, 0, 0, {130}, {70}, 0, {0}},
	{1, 2, 2, 128, 128, FA_DTYPE_BF16, FA_MASK_NONE, FA_LAYOUT_BSHD, 0, 0, 0, {256}, {384}, 0, {0}},
	{1, 2, 2, 128, 128, FA_DTYPE_BF16, FA_MASK_CAUSAL, FA_LAYOUT_BSHD, 0, 0, 0, {100}, {30}, 0, {0}},
	{1, 4, 2, 128, 128, FA_DTYPE_FP16, FA_MASK_CAUSAL, FA_LAYOUT_BHSD, 0, 0, 0, {70}, {300}, 0, {0}},
	{2, 4, 2, 128, 128, FA_DTYPE_FP16, FA_MASK_SLIDING_WINDOW, FA_LAYOUT_BSHD, 0, 37, 0, {96}, {160},
	 0, {0}},
	{1, 8, 2, 128, 128, FA_DTYPE_BF16, FA_MASK_PREFIX_LM, FA_LAYOUT_BSHD, 0, 0, 50, {150}, {100}, 0,
	 {0}},
	{4, 4, 1, 128, 128, FA_DTYPE_FP16, FA_MASK_CAUSAL, FA_LAYOUT_BHSD, 1, 0, 0, {0, 63, 130, 1},
	 {5, 63, 200, 0}, 0, {0}},
	{4, 4, 2, 128, 128, FA_DTYPE_BF16, FA_MASK_PREFIX_LM, FA_LAYOUT_BSHD, 1, 0, 9, {40, 17, 90, 65},
	 {40, 30, 64, 129}, 1, {3, 0, 70, 200}},
	/* the instance of 80 columns: 80, and 72 (zeros in 72-79, none stored) */
	{2, 4, 1, 72, 72, FA_DTYPE_BF16, FA_MASK_CAUSAL, FA_LAYOUT_BSHD, 0, 0, 0, {200}, {200}, 0, {0}},
	{1, 4, 2, 80, 80, FA_DTYPE_FP16, FA_MASK_NONE, FA_LAYOUT_BHSD, 0, 0, 0, {130}, {300}, 0, {0}},
	{1, 2, 2, 72, 72, FA_DTYPE_FP16, FA_MASK_NONE, FA_LAYOUT_BHSD, 0, 0, 0, {256}, {384}, 0, {0}},
	{2, 4, 2, 80, 80, FA_DTYPE_BF16, FA_MASK_SLIDING_WINDOW, FA_LAYOUT_BSHD, 0, 37, 0, {96}, {160},
	 0, {0}},
	{4, 4, 2, 72, 72, FA_DTYPE_BF16, FA_MASK_PREFIX_LM, FA_LAYOUT_BSHD, 1, 0, 9, {40, 17, 90, 65},
	 {40, 30, 64, 129}, 1, {3, 0, 70, 200}},
	{4, 4, 1, 80, 80, FA_DTYPE_FP16, FA_MASK_CAUSAL, FA_LAYOUT_BHSD, 1, 0, 0, {0, 63, 130, 1},
	 {5, 63, 200, 0}, 0, {0}},
};

/* cuda_flash_bwd_wgmma refuses what it does not do with its reasons on
 * any device, other devices naming the architecture, and on an sm_90
 * device matches the reference by the fa rule under every split mode (dQ
 * by atomics: no bit comparison). */
FA_TEST(cuda, flash_bwd_wgmma_matches_reference)
{
	struct fa_backend_slot *s = cuda();
	const struct fa_kernel *k;
	struct tcase t;
	char why[256];
	if (!s)
		return;
	k = find_kernel(s, "cuda_flash_bwd_wgmma");
	FA_REQUIRE(k != NULL && k->supports != NULL && fa_kernel_pass(k) == FA_PASS_BWD);
	FA_REQUIRE(k->n_params == 2 && strcmp(k->params[0].name, "split") == 0 &&
		   strcmp(k->params[1].name, "overlap") == 0);
	FA_CHECK(k->params[0].default_value == 2); /* auto */
	FA_CHECK(k->params[1].default_value == 1);
	build(&bwd_wgmma_cases[0], &t);
	t.p.head_dim = t.p.head_dim_v = 64;
	FA_CHECK(k->supports(&t.p, why, sizeof why) == 0);
	FA_CHECKF(strcmp(why, "head sizes 64/64 not instantiated (72, 80 and 128 only)") == 0,
		  "reason '%s'", why);
	build(&bwd_wgmma_cases[0], &t);
	t.p.head_dim_v = 72; /* 128/72: both sizes must name one instance */
	FA_CHECK(k->supports(&t.p, why, sizeof why) == 0);
	FA_CHECKF(strcmp(why, "head sizes 128/72 not instantiated (72, 80 and 128 only)") == 0,
		  "reason '%s'", why);
	build(&bwd_wgmma_cases[0], &t);
	t.p.dtype = FA_DTYPE_FP32;
	FA_CHECK(k->supports(&t.p, why, sizeof why) == 0);
	FA_CHECKF(strcmp(why, "dtype fp32 not supported: wgmma kernel takes fp16 or bf16") == 0,
		  "reason '%s'", why);
	build(&bwd_wgmma_cases[0], &t);
	t.p.k_stride_s += 4; /* rows 8 bytes off the 16-byte grid */
	FA_CHECK(k->supports(&t.p, why, sizeof why) == 0);
	FA_CHECKF(strcmp(why, "strides not multiples of 8 elements (16-byte rows)") == 0,
		  "reason '%s'", why);
	build(&bwd_wgmma_cases[0], &t);
	if (!k->supports(&t.p, why, sizeof why)) {
		FA_CHECKF(strncmp(why, "device sm_", 10) == 0 && strstr(why, "is not sm_90a"),
			  "reason '%s'", why);
		printf("  skip: %s\n", why);
		return;
	}
	/* split: auto (the default), a CTA per kv head walking its group, and
	 * a CTA per query head with the partials summed after; each with the
	 * products overlapped (the default) and waited for one by one; from the
	 * O and LSE of its forward kernel, cuda_flash_wgmma, and once from
	 * cuda_flash_simt's */
	FA_CHECK(strcmp(fa_kernel_fwd_name(k), "cuda_flash_wgmma") == 0);
	for (int32_t sp = 2; sp >= 0; sp--)
		for (int32_t ov = 1; ov >= 0; ov--) {
			const int32_t prm[2] = {sp, ov};
			check_bwd(sp == 2 && ov == 1 ? "cuda_flash_simt" : "cuda_flash_wgmma",
				  "cuda_flash_bwd_wgmma", bwd_wgmma_cases,
				  sizeof bwd_wgmma_cases / sizeof bwd_wgmma_cases[0], prm, FA_RULE_FA,
				  0);
		}
}

/* Stream-K in both forms gives the reference's answer on every case
 * (decode with GQA packing, varlen with an empty sequence, every mask, the
 * run-time-width and unaligned instances): CTA counts that leave every tile
 * to one CTA (1 per tile), split tiles unevenly (3, 7: ranges across heads
 * and sequences), and the device default; the rounding rule on and off. A
 * stream-K launch without its workspace is refused. */
FA_TEST(cuda, flash_mma_stream_k)
{
	/* sched, sk_ctas, sk_round, sk_ratio */
	static const int32_t forms[][4] = {{2, 0, 5, 0}, {2, 3, 5, 0},	{3, 0, 0, 0}, {3, 1, 0, 0},
					   {3, 3, 0, 0}, {3, 7, 0, 0},	{3, 131, 0, 0}, {3, 0, 5, 4}};
	const struct fa_kernel *k;
	struct fa_backend_slot *s = cuda();
	uint64_t seed;
	if (!s)
		return;
	seed = fa_test_seed();
	k = find_kernel(s, "cuda_flash_mma");
	FA_REQUIRE(k != NULL && k->workspace_bytes != NULL && k->n_params == MMA_NPARAMS);
	for (size_t i = 0; i < sizeof mma_cases / sizeof mma_cases[0]; i++) {
		struct tcase t;
		char what[96];
		build(&mma_cases[i].sp, &t);
		for (size_t j = 0; j < sizeof forms / sizeof forms[0]; j++) {
			const int32_t tun[MMA_NPARAMS] = {0, 1, mma_cases[i].hd72, forms[j][0],
							  forms[j][1], forms[j][2], forms[j][3]};
			snprintf(what, sizeof what, "%s case %zu (%d/%d, hd72 %d)", k->name, i,
				 t.p.head_dim, t.p.head_dim_v, (int)tun[2]);
			check_mma(s, k, &t, tun, seed + i, what);
		}
	}
	{
		/* decode: 8 tiles, the device's CTAs split them; no workspace: refused */
		struct spec dec = {1, 32, 8, 128, 128, FA_DTYPE_BF16, FA_MASK_CAUSAL, FA_LAYOUT_BSHD,
				   0, 0, 0, {1}, {8192}, 0, {0}};
		const int32_t gen[MMA_NPARAMS] = {0, 0, 0, 3, 0, 0, 0};
		struct tcase t;
		struct bufs d;
		struct fa_launch_args a;
		build(&dec, &t);
		FA_CHECK(k->workspace_bytes(&t.p, gen) > 0);
		FA_REQUIRE(bufs_init(s, &t, FA_DIST_NORMAL, 1, &d) == 0);
		launch_args(s, &t, &d, &a);
		a.params = gen;
		FA_CHECK(k->launch(&a) == CUDA_ERROR_INVALID_VALUE);
		FA_CHECK(BE.synchronize(CTX) == 0);
		bufs_free(s, &d);
	}
}

/* One name for every head size: cuda_flash_mma takes any head_dim and
 * head_dim_v from 1 to 256 in fp16/bf16; 576/512 (MLA decode) is refused by
 * it and by cuda_flash_simt, whose limit is 256, and runs on cuda_dense. */
FA_TEST(cuda, head_sizes_and_mla)
{
	struct fa_backend_slot *s = cuda();
	const struct fa_kernel *mma, *simt, *dense;
	struct spec sp = {1, 8, 1, 64, 64, FA_DTYPE_BF16, FA_MASK_CAUSAL, FA_LAYOUT_BSHD, 0, 0, 0,
			  {1}, {203}, 0, {0}};
	struct tcase t;
	char why[256];
	if (!s)
		return;
	mma = find_kernel(s, "cuda_flash_mma");
	simt = find_kernel(s, "cuda_flash_simt");
	dense = find_kernel(s, "cuda_dense");
	FA_REQUIRE(mma && simt && dense);
	FA_CHECK(find_kernel(s, "cuda_flash_mma_d192_128") == NULL); /* one name now */
	for (int d = 1; d <= 256; d++) {
		sp.head_dim = sp.head_dim_v = d;
		build(&sp, &t);
		FA_CHECKF(fa_kernel_supports(mma, &t.p, why, sizeof why), "head_dim %d: %s", d, why);
	}
	sp.head_dim = 576;
	sp.head_dim_v = 512;
	build(&sp, &t);
	FA_CHECK(fa_kernel_supports(mma, &t.p, why, sizeof why) == 0);
	FA_CHECKF(strcmp(why, "head_dim 576 outside 1..256") == 0, "reason '%s'", why);
	FA_CHECK(fa_kernel_supports(simt, &t.p, why, sizeof why) == 0);
	FA_CHECKF(strcmp(why, "head_dim 576 outside 1..256") == 0, "reason '%s'", why);
	FA_CHECK(simt->supports(&t.p, why, sizeof why) == 0); /* its own check agrees */
	FA_CHECKF(strcmp(why, "head_dim 576 / head_dim_v 512 outside 1..256") == 0, "reason '%s'",
		  why);
	FA_CHECKF(fa_kernel_supports(dense, &t.p, why, sizeof why), "cuda_dense: %s", why);
	/* fp32 and a scale that is not positive: the tensor-core kernel's own refusals */
	sp.head_dim = sp.head_dim_v = 111;
	build(&sp, &t);
	t.p.scale = -0.1f;
	FA_CHECK(mma->supports(&t.p, why, sizeof why) == 0);
	FA_CHECKF(strstr(why, "scale -0.1 must be positive") != NULL, "reason '%s'", why);
	t.p.dtype = FA_DTYPE_FP32;
	FA_CHECK(mma->supports(&t.p, why, sizeof why) == 0);
	FA_CHECKF(strcmp(why, "dtype fp32 not supported: tensor-core kernel takes fp16 or bf16") == 0,
		  "reason '%s'", why);
	/* a Q base off the 16-byte grid at head size 64: the exact-size
	 * instance copies 16 bytes at a time, so the launch is refused and
	 * nothing runs */
	sp.head_dim = sp.head_dim_v = 64;
	build(&sp, &t);
	{
		struct bufs d;
		struct fa_launch_args a;
		FA_REQUIRE(bufs_init(s, &t, FA_DIST_NORMAL, 1, &d) == 0);
		launch_args(s, &t, &d, &a);
		a.q = (const char *)a.q + 2;
		FA_CHECK(mma->launch(&a) == CUDA_ERROR_MISALIGNED_ADDRESS);
		FA_CHECK(BE.synchronize(CTX) == 0);
		bufs_free(s, &d);
	}
}

/* Auto splits a grid that would leave the device idle (decode) and only
 * that; an explicit count is honoured; a split launch without its workspace
 * is refused. */
FA_TEST(cuda, flash_mma_split_kv_heuristic)
{
	struct fa_backend_slot *s = cuda();
	const struct fa_kernel *k;
	struct spec decode = {1, 32, 8, 128, 128, FA_DTYPE_BF16, FA_MASK_CAUSAL, FA_LAYOUT_BSHD, 0, 0,
			      0, {1}, {8192}, 0, {0}};
	struct spec prefill = decode;
	struct tcase t;
	struct bufs d;
	struct fa_launch_args a;
	const int32_t auto_[MMA_NPARAMS] = {0, 0, 0, 0, 0, 5, 0};
	const int32_t defaults[MMA_NPARAMS] = {0, 1, 0, 0, 0, 5, 0, 1};
	const int32_t one[MMA_NPARAMS] = {1, 0, 0, 0, 0, 5, 0};
	const int32_t four[MMA_NPARAMS] = {4, 0, 0, 0, 0, 5, 0};
	if (!s)
		return;
	k = find_kernel(s, "cuda_flash_mma");
	FA_REQUIRE(k != NULL);
	build(&decode, &t);
	/* 8 CTAs (one per KV head) on 100+ SMs: split */
	FA_CHECK(k->workspace_bytes(&t.p, auto_) > 0);
	FA_CHECK(k->workspace_bytes(&t.p, NULL) == k->workspace_bytes(&t.p, defaults));
	FA_CHECK(k->workspace_bytes(&t.p, one) == 0);
	FA_CHECK(k->workspace_bytes(&t.p, four) == (size_t)4 * 32 * (128 + 1) * sizeof(float));
	prefill.lq[0] = 8192;
	build(&prefill, &t);
	FA_CHECK(k->workspace_bytes(&t.p, auto_) == 0); /* 64 x 32 CTAs: no split */
	FA_CHECK(k->workspace_bytes(&t.p, four) > 0);
	/* a split launch with no workspace is refused, and nothing breaks */
	build(&decode, &t);
	FA_REQUIRE(bufs_init(s, &t, FA_DIST_NORMAL, 1, &d) == 0);
	launch_args(s, &t, &d, &a);
	a.params = four;
	FA_CHECK(k->launch(&a) == CUDA_ERROR_INVALID_VALUE);
	FA_CHECK(BE.synchronize(CTX) == 0);
	bufs_free(s, &d);
}

/* ---- the decode path of cuda_flash_mma (flash_decode.cu) ---- */

/* Few query rows per KV head: GQA 1, 4 and 8, 1 to 16 rows per tile,
 * cache lengths 1, 17 and 8193 (a last tile of one key), batch 1 and 8,
 * head sizes 64, 128 and 256, every mask, varlen with a sequence without
 * keys, rows that attend no key, both layouts and both 16-bit types. */
static const struct spec decode_cases[] = {
	{1, 8, 2, 128, 128, FA_DTYPE_BF16, FA_MASK_CAUSAL, FA_LAYOUT_BSHD, 0, 0, 0, {1}, {8193}, 0,
	 {0}},
	{8, 8, 2, 128, 128, FA_DTYPE_FP16, FA_MASK_CAUSAL, FA_LAYOUT_BHSD, 0, 0, 0, {1}, {8193}, 0,
	 {0}},
	{1, 4, 4, 128, 128, FA_DTYPE_BF16, FA_MASK_NONE, FA_LAYOUT_BSHD, 0, 0, 0, {1}, {17}, 0, {0}},
	{8, 4, 4, 64, 64, FA_DTYPE_BF16, FA_MASK_CAUSAL, FA_LAYOUT_BSHD, 0, 0, 0, {4}, {8193}, 0,
	 {0}},
	{1, 16, 2, 128, 128, FA_DTYPE_BF16, FA_MASK_CAUSAL, FA_LAYOUT_BSHD, 0, 0, 0, {2}, {1}, 0,
	 {0}},
	{8, 16, 2, 256, 256, FA_DTYPE_FP16, FA_MASK_NONE, FA_LAYOUT_BSHD, 0, 0, 0, {1}, {17}, 0, {0}},
	{1, 16, 2, 256, 256, FA_DTYPE_BF16, FA_MASK_CAUSAL, FA_LAYOUT_BHSD, 0, 0, 0, {1}, {8193}, 0,
	 {0}},
	/* speculative decode, 4 x 4 rows: causal rows end at different keys */
	{1, 8, 2, 128, 128, FA_DTYPE_BF16, FA_MASK_CAUSAL, FA_LAYOUT_BSHD, 0, 0, 0, {4}, {1000}, 0,
	 {0}},
	/* more queries than keys: the first rows attend nothing (zeros) */
	{1, 8, 2, 128, 128, FA_DTYPE_FP16, FA_MASK_CAUSAL, FA_LAYOUT_BSHD, 0, 0, 0, {4}, {1}, 0, {0}},
	{1, 8, 2, 64, 64, FA_DTYPE_BF16, FA_MASK_SLIDING_WINDOW, FA_LAYOUT_BSHD, 0, 100, 0, {2},
	 {1500}, 0, {0}},
	{1, 8, 2, 128, 128, FA_DTYPE_BF16, FA_MASK_PREFIX_LM, FA_LAYOUT_BSHD, 0, 0, 300, {4}, {1000},
	 0, {0}},
	/* varlen: a sequence without keys, per-sequence prefixes */
	{3, 8, 2, 128, 128, FA_DTYPE_BF16, FA_MASK_CAUSAL, FA_LAYOUT_BSHD, 1, 0, 0, {1, 2, 1},
	 {500, 0, 1300}, 0, {0}},
	{3, 8, 1, 128, 128, FA_DTYPE_FP16, FA_MASK_PREFIX_LM, FA_LAYOUT_BSHD, 1, 0, 0, {2, 1, 2},
	 {700, 33, 1200}, 1, {64, 0, 1000}},
};

FA_TEST(cuda, flash_decode_matches_reference)
{
	/* splits: the rule, none, an odd count, the cap */
	static const int32_t splits[] = {0, 1, 3, 64};
	struct fa_backend_slot *s = cuda();
	const struct fa_kernel *k;
	uint64_t seed;
	if (!s)
		return;
	seed = fa_test_seed();
	k = find_kernel(s, "cuda_flash_mma");
	FA_REQUIRE(k != NULL && k->workspace_bytes != NULL && k->n_params == MMA_NPARAMS);
	for (size_t i = 0; i < sizeof decode_cases / sizeof decode_cases[0]; i++) {
		struct tcase t;
		char why[256], what[96];
		build(&decode_cases[i], &t);
		FA_CHECKF(fa_kernel_supports(k, &t.p, why, sizeof why), "case %zu: %s", i, why);
		/* decode 1: ranges merged by the rule; 2: by the last CTA; 3: by
		 * combine_kernel; 4: by a thread-block cluster (sm_90+, up to 16
		 * ranges: the rule's count and the odd 3; 64 ranges, and devices
		 * without clusters, as 2); at head size 128 each with the three
		 * ring shapes (decode_ring: three kernels; one shape at other
		 * sizes) */
		const size_t rings = t.p.head_dim == 128 ? 3 : 1;
		for (size_t j = 0; j < 4 * rings * sizeof splits / sizeof splits[0]; j++) {
			const int32_t tun[MMA_NPARAMS] = {splits[j / (4 * rings)], 1, 0, 0, 0, 5, 0,
							  1 + (int32_t)(j % 4),
							  (int32_t)(j / 4 % rings)};
			snprintf(what, sizeof what, "%s decode=%d decode_ring=%d case %zu (%d/%d)",
				 k->name, (int)tun[7], (int)tun[8], i, t.p.head_dim, t.p.head_dim_v);
			check_mma(s, k, &t, tun, seed + i, what);
		}
	}
	{
		/* the split count is the decode rule's (up to 64 ranges of 8+
		 * tiles), not the tensor-core path's; a split launch without its
		 * workspace is refused */
		struct spec dec = decode_cases[0];
		const int32_t on[MMA_NPARAMS] = {0, 1, 0, 0, 0, 5, 0, 1};
		const int32_t five[MMA_NPARAMS] = {5, 1, 0, 0, 0, 5, 0, 1};
		const size_t row_bytes = (size_t)8 * (128 + 1) * sizeof(float); /* 8 heads x 1 token */
		struct tcase t;
		struct bufs d;
		struct fa_launch_args a;
		size_t ws;
		build(&dec, &t);
		ws = k->workspace_bytes(&t.p, on);
		FA_CHECKF(ws % row_bytes == 0 && ws / row_bytes >= 2 && ws / row_bytes <= 64,
			  "decode workspace %zu is not 2-64 splits of %zu", ws, row_bytes);
		FA_CHECK(k->workspace_bytes(&t.p, five) == 5 * row_bytes);
		FA_REQUIRE(bufs_init(s, &t, FA_DIST_NORMAL, 1, &d) == 0);
		launch_args(s, &t, &d, &a);
		a.params = five;
		FA_CHECK(k->launch(&a) == CUDA_ERROR_INVALID_VALUE);
		FA_CHECK(BE.synchronize(CTX) == 0);
		bufs_free(s, &d);
	}
}

/* ---- the Hopper decode kernel of cuda_flash_mma (flash_decode_wg.cu) ---- */

/* One query row per sequence and head over 1 to 16384 keys: a cut last
 * tile (63, 8193, 12345), one key, both tile counts (up to 8192 keys and
 * up to 16384), GQA 1, 3, 4 and 8 (up to 4 rows a group half the lanes
 * work, up to 8 all), batch 1 and 3, both layouts and both 16-bit types,
 * no mask, causal, a window wider than the cache (every key visible: the
 * kernel's) and one narrower (refused: the decode path's). */
static const struct spec decode_wg_cases[] = {
	{1, 32, 8, 128, 128, FA_DTYPE_BF16, FA_MASK_CAUSAL, FA_LAYOUT_BSHD, 0, 0, 0, {1}, {8193}, 0,
	 {0}},
	{3, 8, 8, 128, 128, FA_DTYPE_FP16, FA_MASK_NONE, FA_LAYOUT_BHSD, 0, 0, 0, {1}, {63}, 0, {0}},
	{1, 12, 4, 128, 128, FA_DTYPE_BF16, FA_MASK_CAUSAL, FA_LAYOUT_BSHD, 0, 0, 0, {1}, {16384}, 0,
	 {0}},
	{1, 64, 8, 128, 128, FA_DTYPE_FP16, FA_MASK_CAUSAL, FA_LAYOUT_BSHD, 0, 0, 0, {1}, {4097}, 0,
	 {0}},
	{3, 16, 2, 128, 128, FA_DTYPE_BF16, FA_MASK_SLIDING_WINDOW, FA_LAYOUT_BHSD, 0, 20000, 0, {1},
	 {12345}, 0, {0}},
	{1, 8, 2, 128, 128, FA_DTYPE_BF16, FA_MASK_NONE, FA_LAYOUT_BSHD, 0, 0, 0, {1}, {1}, 0, {0}},
	{1, 32, 8, 128, 128, FA_DTYPE_BF16, FA_MASK_SLIDING_WINDOW, FA_LAYOUT_BSHD, 0, 100, 0, {1},
	 {5000}, 0, {0}},
};

/* decode 5 takes the Hopper decode kernel wherever it fits (sm_90a; else,
 * and for the narrow window, the decode path), decode 1 by its rule
 * (batch x kv_heads <= 8, 4096-16384 keys): every output written and
 * within the fa rule, either way. */
FA_TEST(cuda, decode_wg_matches_reference)
{
	struct fa_backend_slot *s = cuda();
	const struct fa_kernel *k;
	uint64_t seed;
	if (!s)
		return;
	seed = fa_test_seed();
	k = find_kernel(s, "cuda_flash_mma");
	FA_REQUIRE(k != NULL && k->n_params == MMA_NPARAMS);
	for (size_t i = 0; i < sizeof decode_wg_cases / sizeof decode_wg_cases[0]; i++) {
		struct tcase t;
		char why[256], what[96];
		build(&decode_wg_cases[i], &t);
		FA_CHECKF(fa_kernel_supports(k, &t.p, why, sizeof why), "case %zu: %s", i, why);
		for (int32_t dec = 1; dec <= 5; dec += 4) {
			const int32_t tun[MMA_NPARAMS] = {0, 1, 0, 0, 0, 5, 0, dec, 2};
			snprintf(what, sizeof what, "%s decode=%d case %zu (kv_len %d, GQA %d)", k->name,
				 (int)dec, i, t.p.kv_len, t.p.heads / t.p.kv_heads);
			check_mma(s, k, &t, tun, seed + i, what);
		}
	}
}

/* ---- device fill ---- */

static void fill_case(struct fa_backend_slot *s, const struct tcase *t, int dist, uint64_t seed,
		      int64_t *mismatches)
{
	const struct fa_problem *p = &t->p;
	char text[256];
	for (int tn = FA_TENSOR_Q; tn <= FA_TENSOR_O; tn++) {
		size_t bytes = tensor_bytes(p, tn);
		unsigned char *host = malloc(bytes + 1), *back = malloc(bytes + 1);
		void *dev = NULL;
		int code;
		if (!host || !back) {
			FA_CHECK(!"out of memory");
			free(host);
			free(back);
			return;
		}
		/* the same poison on both sides: any element not written shows */
		memset(host, 0xa5, bytes);
		fa_data_fill(p, tn, dist, seed, host, 0);
		code = BE.alloc(CTX, bytes, &dev);
		if (code == 0)
			code = BE.memset(CTX, dev, 0xa5, bytes);
		if (code == 0)
			code = BE.fill_random(CTX, dev, p, tn, dist, seed);
		if (code == 0)
			code = BE.synchronize(CTX);
		if (code == 0)
			code = BE.download(CTX, back, dev, bytes);
		FA_CHECKF(code == 0, "fill: %s", BE.error_string(CTX, code));
		if (code == 0 && memcmp(host, back, bytes) != 0) {
			size_t first = 0;
			while (first < bytes && host[first] == back[first])
				first++;
			(*mismatches)++;
			fa_test_fail(__FILE__, __LINE__,
				     "fill differs: tensor %d dist %d, first byte %zu of %zu (%s)", tn,
				     dist, first, bytes, case_text(t, text, sizeof text));
		}
		if (dev)
			BE.free(CTX, dev);
		free(host);
		free(back);
	}
}

FA_TEST(cuda, fill_matches_host_bit_for_bit)
{
	struct fa_backend_slot *s = cuda();
	uint64_t seed;
	int64_t mismatches = 0;
	if (!s)
		return;
	seed = fa_test_seed();
	for (int dtype = 0; dtype < FA_DTYPE_COUNT; dtype++)
		for (int dist = 0; dist < FA_DIST_COUNT; dist++)
			for (int layout = 0; layout < FA_LAYOUT_COUNT; layout++)
				for (int varlen = 0; varlen < 2; varlen++) {
					struct spec sp = {3,      6,      2, 20, 12, dtype,
							  FA_MASK_NONE, layout, varlen, 0, 0,
							  {17, 0, 40}, {23, 9, 5}, 0, {0}};
					struct tcase t;
					build(&sp, &t);
					fill_case(s, &t, dist, seed, &mismatches);
				}
	/* more rows than one grid covers (65536 blocks x 8 rows): the grid-stride loop */
	{
		struct spec sp = {1, 2, 1, 4, 3, FA_DTYPE_FP16, FA_MASK_NONE, FA_LAYOUT_BHSD, 0, 0, 0,
				  {300000}, {7}, 0, {0}};
		struct tcase t;
		build(&sp, &t);
		fill_case(s, &t, FA_DIST_OUTLIERS, seed, &mismatches);
	}
	FA_CHECKF(mismatches == 0, "%lld fills differ", (long long)mismatches);
}

/* ---- GPU reference ---- */

static void check_gpu_reference(struct fa_backend_slot *s, const struct spec *sp, uint64_t seed,
				int dist)
{
	struct tcase t;
	struct bufs d;
	struct fa_ref ref;
	struct fa_launch_args a;
	char text[256];
	int code;
	build(sp, &t);
	code = bufs_init(s, &t, dist, seed, &d);
	FA_CHECKF(code == 0, "setting up: %d", code);
	if (code == 0 && cpu_reference(&t, &d, &ref) == 0) {
		double *out = malloc(sizeof(double) * (size_t)(ref.n_rows * t.p.head_dim_v + 1));
		int64_t bad = 0;
		FA_REQUIRE(out != NULL);
		launch_args(s, &t, &d, &a);
		code = BE.reference(CTX, &a, ref.rows, ref.n_rows, out);
		FA_CHECKF(code == 0, "gpu reference: %s", BE.error_string(CTX, code));
		for (int64_t i = 0; code == 0 && i < ref.n_rows * t.p.head_dim_v; i++) {
			double want = ref.out[i];
			/* fp32 scores against fp64 ones: ~1e-6 of the weights */
			if (!(fabs(out[i] - want) <= 1e-5 * (fabs(want) + 1.0)) && bad++ < 3)
				fa_test_fail(__FILE__, __LINE__,
					     "gpu reference row %lld col %lld: %.12g, cpu %.12g (%s)",
					     (long long)(i / t.p.head_dim_v),
					     (long long)(i % t.p.head_dim_v), out[i], want,
					     case_text(&t, text, sizeof text));
		}
		FA_CHECKF(bad == 0, "%lld values differ", (long long)bad);
		free(out);
		fa_ref_free(&ref);
	}
	bufs_free(s, &d);
}

FA_TEST(cuda, reference_matches_cpu)
{
	struct fa_backend_slot *s = cuda();
	uint64_t seed;
	if (!s)
		return;
	seed = fa_test_seed();
	for (size_t i = 0; i < sizeof kernel_cases / sizeof kernel_cases[0]; i++)
		check_gpu_reference(s, &kernel_cases[i], seed + i, FA_DIST_NORMAL);
	{
		/* the largest head sizes, and long rows */
		struct spec big = {1, 2, 1, 512, 512, FA_DTYPE_BF16, FA_MASK_SLIDING_WINDOW,
				   FA_LAYOUT_BSHD, 0, 2500, 0, {3}, {3000}, 0, {0}};
		check_gpu_reference(s, &big, seed, FA_DIST_NORMAL);
	}
	{
		/* 20000 rows of 512 outputs: more than one batch of device scratch */
		struct spec many = {1, 1, 1, 4, 512, FA_DTYPE_FP32, FA_MASK_CAUSAL, FA_LAYOUT_BHSD, 0,
				    0, 0, {20000}, {8}, 0, {0}};
		check_gpu_reference(s, &many, seed, FA_DIST_NORMAL);
	}
}

FA_TEST(cuda, reference_refuses_bad_rows)
{
	struct fa_backend_slot *s = cuda();
	struct spec sp = {1, 2, 2, 8, 8, FA_DTYPE_FP32, FA_MASK_NONE, FA_LAYOUT_BSHD, 0, 0, 0, {4},
			  {4}, 0, {0}};
	struct tcase t;
	struct bufs d;
	struct fa_launch_args a;
	int64_t rows[2] = {0, 8}; /* 4 tokens x 2 heads: row 8 does not exist */
	double out[16];
	if (!s)
		return;
	build(&sp, &t);
	FA_REQUIRE(bufs_init(s, &t, FA_DIST_UNIFORM, 1, &d) == 0);
	launch_args(s, &t, &d, &a);
	FA_CHECK(BE.reference(CTX, &a, rows, 2, out) == CUDA_ERROR_INVALID_VALUE);
	rows[1] = 7;
	FA_CHECK(BE.reference(CTX, &a, rows, 2, out) == 0);
	bufs_free(s, &d);
}

/* ---- the backend's services ---- */

FA_TEST(cuda, device_memory_and_events)
{
	struct fa_backend_slot *s = cuda();
	struct fa_device_info info;
	unsigned char host[4096], back[4096];
	void *dev = NULL, *e0 = NULL, *e1 = NULL;
	double ms = -1;
	if (!s)
		return;
	FA_REQUIRE(BE.device_info(CTX, &info) == 0);
	FA_CHECK(info.name[0] != '\0');
	FA_CHECKF(strncmp(info.arch, "sm_", 3) == 0, "arch '%s'", info.arch);
	FA_CHECK(info.sm_count > 0 && info.mem_total_bytes > 0 && info.l2_bytes > 0);
	FA_CHECK(info.mem_free_bytes > 0 && info.mem_free_bytes <= info.mem_total_bytes);
	FA_CHECK(info.clock_mhz > 0 && info.driver[0] && info.runtime[0] && !info.host_memory);

	for (size_t i = 0; i < sizeof host; i++)
		host[i] = (unsigned char)(i * 7 + 3);
	FA_REQUIRE(BE.alloc(CTX, sizeof host, &dev) == 0 && dev);
	FA_CHECK(BE.upload(CTX, dev, host, sizeof host) == 0);
	FA_CHECK(BE.memset(CTX, (char *)dev + 100, 0x5a, 50) == 0);
	FA_CHECK(BE.download(CTX, back, dev, sizeof back) == 0);
	memset(host + 100, 0x5a, 50);
	FA_CHECK(memcmp(host, back, sizeof host) == 0);
	BE.free(CTX, dev);

	FA_REQUIRE(BE.event_create(CTX, &e0) == 0 && BE.event_create(CTX, &e1) == 0);
	FA_CHECK(BE.event_record(CTX, e0) == 0);
	FA_CHECK(BE.flush_cache(CTX) == 0); /* some real work between the marks */
	FA_CHECK(BE.event_record(CTX, e1) == 0);
	FA_CHECK(BE.event_elapsed_ms(CTX, e0, e1, &ms) == 0);
	FA_CHECKF(ms > 0 && ms < 1000, "flush took %g ms", ms);
	{
		/* the clean flush (the default, and FABENCH_FLUSH=clean) reads
		 * the buffer back after the memset: more work between the marks
		 * than the memset alone of FABENCH_FLUSH=write (the buffer
		 * allocated and touched by now), and no error */
		static const char *const clean_modes[] = {NULL, "clean"};
		for (int i = 0; i < 2; i++) {
			double ms_clean = 0;
			setenv("FABENCH_FLUSH", "write", 1);
			FA_CHECK(BE.event_record(CTX, e0) == 0);
			FA_CHECK(BE.flush_cache(CTX) == 0);
			FA_CHECK(BE.event_record(CTX, e1) == 0);
			FA_CHECK(BE.event_elapsed_ms(CTX, e0, e1, &ms) == 0);
			if (clean_modes[i])
				setenv("FABENCH_FLUSH", clean_modes[i], 1);
			else
				unsetenv("FABENCH_FLUSH");
			FA_CHECK(BE.event_record(CTX, e0) == 0);
			FA_CHECK(BE.flush_cache(CTX) == 0);
			FA_CHECK(BE.event_record(CTX, e1) == 0);
			FA_CHECK(BE.event_elapsed_ms(CTX, e0, e1, &ms_clean) == 0);
			unsetenv("FABENCH_FLUSH");
			FA_CHECKF(ms_clean > ms && ms_clean < 1000,
				  "flush with FABENCH_FLUSH %s took %g ms (write %g ms)",
				  clean_modes[i] ? clean_modes[i] : "unset", ms_clean, ms);
		}
	}
	BE.event_destroy(CTX, e0);
	BE.event_destroy(CTX, e1);
	FA_CHECK(BE.synchronize(CTX) == 0);
}

FA_TEST(cuda, errors_have_names_and_stickiness)
{
	struct fa_backend_slot *s = cuda();
	if (!s)
		return;
	FA_CHECK(strstr(BE.error_string(CTX, CUDA_ERROR_ILLEGAL_ADDRESS), "cudaErrorIllegalAddress"));
	FA_CHECK(strstr(BE.error_string(CTX, CUDA_ERROR_INVALID_VALUE), "cudaErrorInvalidValue"));
	FA_CHECK(BE.is_sticky(CTX, CUDA_ERROR_ILLEGAL_ADDRESS) == 1);
	FA_CHECK(BE.is_sticky(CTX, 719) == 1); /* cudaErrorLaunchFailure */
	FA_CHECK(BE.is_sticky(CTX, CUDA_ERROR_INVALID_VALUE) == 0);
	FA_CHECK(BE.is_sticky(CTX, 2) == 0); /* cudaErrorMemoryAllocation */
}

FA_TEST(cuda, refuses_unknown_harness_version)
{
	char path[1024], why[512] = "";
	struct fa_backend be;
	fa_backend_plugin_init_fn init;
	void *dl = dlopen(plugin_path(path, sizeof path), RTLD_NOW | RTLD_LOCAL);
	if (!dl) {
		printf("  skip: cuda plugin: cannot load %s: %s\n", path, dlerror());
		return;
	}
	*(void **)&init = dlsym(dl, FA_PLUGIN_INIT_SYMBOL);
	FA_REQUIRE(init != NULL);
	/* a harness that reads only versions older than the plugin's: refused
	 * before any CUDA call, so this runs without a GPU too */
	FA_CHECK(init(FA_BACKEND_API_VERSION - 1, &be, why, sizeof why) != 0);
	{
		char older[32], newer[32];
		snprintf(older, sizeof older, "up to %d;", FA_BACKEND_API_VERSION - 1);
		snprintf(newer, sizeof newer, "version %d", FA_BACKEND_API_VERSION);
		FA_CHECKF(strstr(why, older) && strstr(why, newer), "reason '%s' names both versions",
			  why);
	}
	dlclose(dl);
}

FA_TEST(cuda, telemetry_known_or_unknown)
{
	struct fa_backend_slot *s = cuda();
	struct fa_telemetry tel;
	int code;
	if (!s)
		return;
	code = BE.telemetry(CTX, &tel);
	if (code == 0) {
		FA_CHECKF(tel.sm_clock_mhz > 0, "sm clock %g", tel.sm_clock_mhz);
		FA_CHECK(isnan(tel.sm_clock_max_mhz) || tel.sm_clock_max_mhz >= tel.sm_clock_mhz);
	} else {
		printf("  note: no telemetry: %s\n", BE.error_string(CTX, code));
		FA_CHECK(isnan(tel.sm_clock_mhz) && tel.throttle_reasons == -1);
	}
}

FA_TEST(cuda, graph_replays_launches)
{
	struct fa_backend_slot *s = cuda();
	struct spec sp = {2, 4, 2, 64, 64, FA_DTYPE_BF16, FA_MASK_CAUSAL, FA_LAYOUT_BSHD, 0, 0, 0,
			  {90}, {90}, 0, {0}};
	const struct fa_kernel *k;
	struct tcase t;
	struct bufs d;
	struct fa_launch_args a;
	struct fa_ref ref;
	void *graph = NULL;
	size_t ob;
	if (!s)
		return;
	k = find_kernel(s, "cuda_flash_simt");
	FA_REQUIRE(k != NULL);
	build(&sp, &t);
	ob = tensor_bytes(&t.p, FA_TENSOR_O);
	FA_REQUIRE(bufs_init(s, &t, FA_DIST_NORMAL, fa_test_seed(), &d) == 0);
	launch_args(s, &t, &d, &a);
	FA_CHECK(BE.graph_create(CTX, k, &a, 3, &graph) == 0 && graph);
	/* capturing runs nothing: the poison must still be there afterwards */
	FA_CHECK(BE.memset(CTX, d.o, FA_POISON_BYTE, ob) == 0);
	FA_CHECK(BE.synchronize(CTX) == 0);
	if (graph) {
		FA_CHECK(BE.graph_launch(CTX, graph) == 0);
		FA_CHECK(BE.synchronize(CTX) == 0);
		FA_CHECK(BE.download(CTX, d.ho, d.o, ob) == 0);
		if (cpu_reference(&t, &d, &ref) == 0) {
			compare_output(&t, &d, &ref, ARITH_NORMAL, "graph of cuda_flash_simt");
			fa_ref_free(&ref);
		}
		BE.graph_destroy(CTX, graph);
	}
	bufs_free(s, &d);
}

/* graph_create_sets, the cold graphs' capture: launch i runs on set i %
 * n_sets. Two sets with different inputs, three launches of
 * cuda_flash_mma's decode path (its cluster merge captured), one
 * workspace: each set's output is its own inputs' attention. */
FA_TEST(cuda, graph_sets_cycle_buffers)
{
	struct fa_backend_slot *s = cuda();
	const struct fa_kernel *k;
	struct tcase t;
	struct bufs d[2];
	struct fa_launch_args a[2];
	int32_t prm[FA_KERNEL_MAX_PARAMS];
	void *ws = NULL, *graph = NULL;
	size_t ob, wsb;
	if (!s)
		return;
	k = find_kernel(s, "cuda_flash_mma");
	FA_REQUIRE(k != NULL && BE.graph_create_sets != NULL);
	build(&decode_cases[0], &t);
	for (int i = 0; i < k->n_params; i++)
		prm[i] = k->params[i].default_value;
	wsb = k->workspace_bytes ? k->workspace_bytes(&t.p, prm) : 0;
	if (wsb)
		FA_REQUIRE(BE.alloc(CTX, wsb, &ws) == 0);
	ob = tensor_bytes(&t.p, FA_TENSOR_O);
	for (int i = 0; i < 2; i++) {
		FA_REQUIRE(bufs_init(s, &t, FA_DIST_NORMAL, fa_test_seed() + (uint64_t)i, &d[i]) == 0);
		launch_args(s, &t, &d[i], &a[i]);
		a[i].params = prm;
		a[i].workspace = ws;
		a[i].workspace_bytes = wsb;
	}
	FA_CHECK(BE.graph_create_sets(CTX, k, a, 2, 3, &graph) == 0 && graph);
	/* capturing runs nothing: the poison must still be there afterwards */
	for (int i = 0; i < 2; i++)
		FA_CHECK(BE.memset(CTX, d[i].o, FA_POISON_BYTE, ob) == 0);
	FA_CHECK(BE.synchronize(CTX) == 0);
	if (graph) {
		FA_CHECK(BE.graph_launch(CTX, graph) == 0);
		FA_CHECK(BE.synchronize(CTX) == 0);
		verify_output(s, &t, &d[0], "set 0 of a graph of cuda_flash_mma (decode)");
		verify_output(s, &t, &d[1], "set 1 of a graph of cuda_flash_mma (decode)");
		BE.graph_destroy(CTX, graph);
	}
	if (ws)
		BE.free(CTX, ws);
	for (int i = 0; i < 2; i++)
		bufs_free(s, &d[i]);
}

FA_TEST(cuda, calibrate_measures)
{
	struct fa_backend_slot *s = cuda();
	struct fa_calibration cal;
	int code;
	if (!s)
		return;
	code = BE.calibrate(CTX, &cal);
	FA_REQUIRE(code == 0);
	printf("  %s: copy %.0f GB/s, 16-bit %.1f TFLOP/s, fp32 %.1f TFLOP/s\n", cal.method,
	       cal.copy_gbps, cal.matmul_tflops, cal.matmul_fp32_tflops);
	FA_CHECK(cal.copy_gbps > 10 && cal.matmul_fp32_tflops > 0.1 && cal.method[0]);
	FA_CHECK(strstr(cal.method, "cublasGemmEx") ? cal.matmul_tflops > cal.matmul_fp32_tflops
					      : cal.matmul_tflops == 0);
}

FA_TEST(cuda, shutdown_and_reload)
{
	struct fa_registry r2;
	struct fa_err err;
	char path[1024];
	void *p = NULL;
	if (!cuda())
		return;
	/* a second instance of the plugin in the same process, then its shutdown */
	memset(&r2, 0, sizeof r2);
	fa_err_clear(&err);
	FA_REQUIRE(fa_registry_load_plugin(&r2, plugin_path(path, sizeof path), "cuda2", &err) ==
		   FA_OK);
	FA_CHECK(r2.slots[0].be.iface.alloc(r2.slots[0].be.context, 1000, &p) == 0 && p);
	FA_CHECK(r2.slots[0].be.iface.flush_cache(r2.slots[0].be.context) == 0);
	r2.slots[0].be.iface.free(r2.slots[0].be.context, p);
	fa_registry_free(&r2);
	/* the first instance is untouched */
	FA_CHECK(slot->be.iface.synchronize(slot->be.context) == 0);
}

/* ---- the test kernels, in child processes (a fault ends the process's
 * use of the device; a hang never returns) ---- */

struct child {
	pid_t pid;
	int out_fd;
	char out[4096];
	size_t n;
};

/* Runs this test binary on test `name` with CHILD_ENV=role set. */
static int child_start(const char *name, const char *role, struct child *c)
{
	char exe[1024], env_kv[64], **envp;
	char *argv[3];
	int fds[2], n_env = 0, rc;
	posix_spawn_file_actions_t fa;
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	memset(c, 0, sizeof *c);
	if (n <= 0 || pipe(fds) != 0)
		return -1;
	exe[n] = '\0';
	while (environ[n_env])
		n_env++;
	envp = calloc((size_t)n_env + 2, sizeof *envp);
	if (!envp)
		return -1;
	memcpy(envp, environ, sizeof *envp * (size_t)n_env);
	snprintf(env_kv, sizeof env_kv, "%s=%s", CHILD_ENV, role);
	envp[n_env] = env_kv;
	argv[0] = exe;
	argv[1] = (char *)name;
	argv[2] = NULL;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, fds[1], STDOUT_FILENO);
	posix_spawn_file_actions_addclose(&fa, fds[0]);
	rc = posix_spawn(&c->pid, exe, &fa, NULL, argv, envp);
	posix_spawn_file_actions_destroy(&fa);
	free(envp);
	close(fds[1]);
	c->out_fd = fds[0];
	if (rc != 0) {
		close(fds[0]);
		return -1;
	}
	return 0;
}

/* Reads the child's output until `want` appears, it closes, or timeout_s
 * passes. Returns 1 when want was seen. */
static int child_read_until(struct child *c, const char *want, double timeout_s)
{
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		struct pollfd pfd = {c->out_fd, POLLIN, 0};
		double left;
		ssize_t n;
		c->out[c->n] = '\0';
		if (want && strstr(c->out, want))
			return 1;
		clock_gettime(CLOCK_MONOTONIC, &t1);
		left = timeout_s - ((double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9);
		if (left <= 0 || poll(&pfd, 1, (int)(left * 1000) + 1) <= 0)
			return 0;
		n = read(c->out_fd, c->out + c->n, sizeof c->out - 1 - c->n);
		if (n <= 0)
			return 0;
		c->n += (size_t)n;
	}
}

/* Reaps the child, killing it first when kill_it or when it has not exited
 * within grace_s seconds; returns its exit status, or 128 + signal. */
static int child_end(struct child *c, int kill_it, double grace_s)
{
	int st = 0;
	pid_t got = 0;
	for (double waited = 0; !kill_it && waited < grace_s; waited += 0.05) {
		got = waitpid(c->pid, &st, WNOHANG);
		if (got != 0)
			break;
		usleep(50000);
	}
	if (got == 0) {
		kill(c->pid, SIGKILL);
		while (waitpid(c->pid, &st, 0) < 0 && errno == EINTR) {
		}
	}
	close(c->out_fd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* In the child: launches test kernel `name` on a tiny problem; returns the
 * launch code, and with *sync the next synchronization's. */
static int child_launch(struct fa_backend_slot *s, const char *name, int *sync_code, int wait)
{
	struct spec sp = {1, 1, 1, 8, 8, FA_DTYPE_FP32, FA_MASK_NONE, FA_LAYOUT_BSHD, 0, 0, 0, {1},
			  {1}, 0, {0}};
	struct tcase t;
	struct bufs d;
	struct fa_launch_args a;
	const struct fa_kernel *k = find_kernel(s, name);
	int code;
	if (!k || !k->test_only)
		return -1;
	build(&sp, &t);
	memset(&d, 0, sizeof d);
	launch_args(s, &t, &d, &a);
	code = k->launch(&a);
	printf("child: %s launched: %d\n", name, code);
	fflush(stdout);
	if (code == 0 && wait)
		*sync_code = BE.synchronize(CTX);
	return code;
}

FA_TEST(cuda, test_fault_is_sticky)
{
	const char *role = getenv(CHILD_ENV);
	struct child c;
	int status;
	if (role && strcmp(role, "fault") == 0) {
		struct fa_backend_slot *s = cuda();
		int sync_code = 0;
		FA_REQUIRE(s != NULL);
		FA_CHECK(child_launch(s, "cuda_test_fault", &sync_code, 1) == 0);
		printf("child: sync %d sticky %d\n", sync_code, BE.is_sticky(CTX, sync_code));
		FA_CHECK(sync_code == CUDA_ERROR_ILLEGAL_ADDRESS);
		FA_CHECK(BE.is_sticky(CTX, sync_code));
		/* and it stays: the device is unusable from now on */
		FA_CHECK(BE.synchronize(CTX) != 0);
		return;
	}
	if (!cuda())
		return;
	FA_REQUIRE(child_start("cuda/test_fault_is_sticky", "fault", &c) == 0);
	child_read_until(&c, "unit: ", 60);
	status = child_end(&c, 0, 10);
	FA_CHECKF(status == 0 && strstr(c.out, "ok cuda/test_fault_is_sticky"),
		  "child exited %d:\n%s", status, c.out);
}

FA_TEST(cuda, test_hang_never_returns)
{
	const char *role = getenv(CHILD_ENV);
	struct child c;
	int seen, status;
	if (role && strcmp(role, "hang") == 0) {
		struct fa_backend_slot *s = cuda();
		int sync_code = 0;
		FA_REQUIRE(s != NULL);
		child_launch(s, "cuda_test_hang", &sync_code, 1);
		printf("child: returned from the hang: %d\n", sync_code); /* never, unless broken */
		return;
	}
	if (!cuda())
		return;
	FA_REQUIRE(child_start("cuda/test_hang_never_returns", "hang", &c) == 0);
	seen = child_read_until(&c, "cuda_test_hang launched: 0", 60);
	/* give a broken kernel the time to return; a real hang stays put */
	if (seen)
		child_read_until(&c, "returned", 1.5);
	status = child_end(&c, 1, 0);
	FA_CHECKF(seen, "the hang kernel did not launch:\n%s", c.out);
	FA_CHECKF(!strstr(c.out, "returned") && status == 128 + SIGKILL,
		  "the hang kernel ended (status %d):\n%s", status, c.out);
}

/* ---- fabench run on the GPU: faults and hangs, with and without --isolate ---- */

#include <sqlite3.h>

#include "proc.h"

/* Runs `fabench run tests/suites/tiny.yaml --backend cuda ARGS --db DB
 * --quiet` with the test kernels (args: NULL-terminated, at most 16) into a
 * fresh database db_name in the test's folder, its path into db; r holds
 * the result, to be freed by the caller. */
static void run_tiny_on_cuda(const char *db_name, char *db, size_t db_size,
			     const char *const *args, double timeout_s, struct fa_proc_result *r)
{
	static char *env[] = {"FABENCH_TEST_KERNELS=1", NULL};
	char *argv[24] = {"run", "tests/suites/tiny.yaml", "--backend", "cuda"};
	int n = 4;
	snprintf(db, db_size, "%s/%s", fa_test_tmpdir(), db_name);
	unlink(db);
	for (; *args && n < 20; args++)
		argv[n++] = (char *)*args;
	argv[n++] = "--db";
	argv[n++] = db;
	argv[n++] = "--quiet";
	argv[n] = NULL;
	fa_proc_run(argv, env, timeout_s, r);
}

/* The number of stored results that match the SQL condition where. */
static long long results_where(const char *db, const char *where)
{
	char sql[512];
	snprintf(sql, sizeof sql, "SELECT count(*) FROM results WHERE %s", where);
	return fa_test_db_int(db, sql);
}

#define SIMT_PASSED "kernel = 'cuda_flash_simt' AND status = 'pass'"
#define FAULT_ERRORS                                                                     \
	"kernel = 'cuda_test_fault' AND status = 'error' AND reason LIKE "               \
	"'%cudaErrorIllegalAddress%'"

FA_TEST(cuda, run_isolate_survives_fault_and_hang)
{
	static const char *const args[] = {"--where", "q_len == 48 && mask == causal", "--kernels",
					   "cuda_flash_simt,cuda_test_fault,cuda_test_hang",
					   "--timeout", "2", "--isolate", NULL};
	char db[1100];
	struct fa_proc_result r;
	if (!cuda())
		return;
	/* one case: a right kernel, one that faults the GPU, one that hangs it */
	run_tiny_on_cuda("isolate.db", db, sizeof db, args, 120, &r);
	FA_CHECKF(r.status == 1, "status %d\n%s\n%s", r.status, r.out, r.err);
	fa_proc_free(&r);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM runs WHERE status = 'complete'") == 1);
	FA_CHECK(results_where(db, SIMT_PASSED) == 1);
	FA_CHECK(results_where(db, FAULT_ERRORS) == 1);
	FA_CHECK(results_where(db, "kernel = 'cuda_test_hang' AND status = 'timeout'") == 1);
}

FA_TEST(cuda, run_devices_replaces_a_faulted_worker)
{
	static const char *const args[] = {"--kernels", "cuda_flash_simt,cuda_test_fault",
					   "--devices", "0", NULL};
	char db[1100];
	struct fa_proc_result r;
	if (!cuda())
		return;
	/* --devices 0: one staying worker; the fault at the end of every case
	 * leaves its context unusable, so it reports the fault and exits, and a
	 * fresh worker takes the next case: all four stored, the run complete */
	run_tiny_on_cuda("devices-fault.db", db, sizeof db, args, 300, &r);
	FA_CHECKF(r.status == 1, "status %d\n%s\n%s", r.status, r.out, r.err);
	fa_proc_free(&r);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM runs WHERE status = 'complete'") == 1);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM cases") == 4);
	FA_CHECK(results_where(db, SIMT_PASSED " AND device = 0") == 4);
	FA_CHECK(results_where(db, FAULT_ERRORS) == 4);
}

FA_TEST(cuda, run_sticky_fault_ends_the_run)
{
	static const char *const args[] = {"--kernels", "cuda_flash_simt,cuda_test_fault", NULL};
	char db[1100];
	struct fa_proc_result r;
	if (!cuda())
		return;
	/* without --isolate: the fault leaves the context unusable; the run stops
	 * with the finished case stored and says why */
	run_tiny_on_cuda("sticky.db", db, sizeof db, args, 120, &r);
	FA_CHECKF(r.status == 1, "status %d\n%s\n%s", r.status, r.out, r.err);
	FA_CHECKF(strstr(r.err, "the device is unusable after case 0") &&
			  strstr(r.err, "--isolate"),
		  "stderr: %s", r.err);
	fa_proc_free(&r);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM runs WHERE status = 'incomplete'") == 1);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM cases") == 1);
	FA_CHECK(results_where(db, SIMT_PASSED) == 1);
	FA_CHECK(results_where(db, FAULT_ERRORS) == 1);
}

/* cuda_flash_mma writes the LSE too (cuda_flash_bwd_mma's forward): from its
 * epilogue (no split), from the split-KV merge (splits 3 and the auto rule),
 * and for decode shapes, which then take the tile path (the decode merges do
 * not write it), on every case of the backward's tests and the decode ones;
 * under stream-K it refuses the LSE rather than leave it unwritten; and
 * cuda_flash_bwd_mma's gradients from its O and LSE match the reference. */
FA_TEST(cuda, flash_mma_writes_lse)
{
	struct fa_backend_slot *s = cuda();
	const struct fa_kernel *k, *bk;
	if (!s)
		return;
	k = find_kernel(s, "cuda_flash_mma");
	bk = find_kernel(s, "cuda_flash_bwd_mma");
	FA_REQUIRE(k != NULL && bk != NULL && fa_kernel_writes_lse(k));
	FA_CHECK(strcmp(fa_kernel_fwd_name(bk), "cuda_flash_mma") == 0);
	FA_REQUIRE(k->n_params == 9 && strcmp(k->params[0].name, "splits") == 0 &&
		   strcmp(k->params[3].name, "sched") == 0);
	int32_t defaults[9], split3[9], streamk[9];
	for (int i = 0; i < 9; i++)
		defaults[i] = split3[i] = streamk[i] = k->params[i].default_value;
	split3[0] = 3;
	split3[3] = 1; /* sched: split-KV with `splits` */
	streamk[3] = 3;
	const uint64_t seed = fa_test_seed();
	const size_t nb = sizeof bwd_mma_cases / sizeof bwd_mma_cases[0];
	for (size_t i = 0; i < nb; i++) {
		char what[96];
		snprintf(what, sizeof what, "bwd_mma case %zu, defaults", i);
		lse_matches_simt(s, k, &bwd_mma_cases[i], defaults, seed + i, what);
		snprintf(what, sizeof what, "bwd_mma case %zu, splits 3", i);
		lse_matches_simt(s, k, &bwd_mma_cases[i], split3, seed + i, what);
	}
	for (size_t i = 0; i < 2; i++) {
		char what[96];
		snprintf(what, sizeof what, "decode case %zu, defaults", i);
		lse_matches_simt(s, k, &decode_cases[i], defaults, seed + 100 + i, what);
	}
	/* stream-K: refused with the LSE asked for, not left unwritten */
	{
		struct tcase t;
		struct bufs d;
		struct fa_launch_args a;
		void *lse = NULL, *ws = NULL;
		build(&bwd_mma_cases[0], &t);
		FA_REQUIRE(bufs_init(s, &t, FA_DIST_NORMAL, seed, &d) == 0);
		const size_t wsb = k->workspace_bytes(&t.p, streamk);
		FA_REQUIRE(BE.alloc(CTX, sizeof(float) * (size_t)t.p.total_q * t.p.heads, &lse) == 0);
		if (wsb)
			FA_REQUIRE(BE.alloc(CTX, wsb, &ws) == 0);
		launch_args(s, &t, &d, &a);
		a.struct_size = sizeof a;
		a.params = streamk;
		a.workspace = ws;
		a.workspace_bytes = wsb;
		a.lse = lse;
		const int code = k->launch(&a);
		FA_CHECKF(code != 0 && strstr(BE.error_string(CTX, code), "not supported"),
			  "stream-K with the LSE: code %d (%s)", code, BE.error_string(CTX, code));
		if (ws)
			BE.free(CTX, ws);
		BE.free(CTX, lse);
		bufs_free(s, &d);
	}
	check_bwd("cuda_flash_mma", "cuda_flash_bwd_mma", bwd_mma_cases, nb, NULL, FA_RULE_FA, 0);
}
