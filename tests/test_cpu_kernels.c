/* test_cpu_kernels.c - cpu_dense and cpu_flash against the reference on the
 * whole output of fresh random problems (every mask, q_len != kv_len both
 * ways, GQA 1/2/4, varlen with prefix lengths, both layouts, all dtypes,
 * rows with no allowed key, outliers, head sizes 1..512), outputs poisoned
 * before launch; every flash tile size; cancellation; thread-count
 * independence. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../harness/run/check.h"
#include "../harness/run/data.h"
#include "../kernels/common/fa_dtype.h"
#include "../kernels/common/fa_rng.h"
#include "../kernels/cpu/cpu_kernels.h"
#include "../reference/ref.h"
#include "test.h"

#define MAX_BATCH 4

struct tcase {
	struct fa_problem p;
	int32_t cu_q[MAX_BATCH + 1], cu_k[MAX_BATCH + 1], prefix[MAX_BATCH];
	const int32_t *cuq, *cuk, *pl; /* what the kernels get: NULL when not used */
	int dist;
	void *q, *k, *v;
};

static int32_t draw(uint64_t seed, uint64_t *ctr, int32_t lo, int32_t hi)
{
	return lo + (int32_t)(fa_rng_bits(seed, 55, (*ctr)++) % (uint64_t)(hi - lo + 1));
}

static void *filled(const struct fa_problem *p, int tensor, int dist, uint64_t seed)
{
	size_t bytes = (size_t)fa_tensor_elems(p, tensor) * (size_t)fa_dtype_size(p->dtype);
	void *buf = malloc(bytes ? bytes : 1);
	if (buf)
		fa_data_fill(p, tensor, dist, seed, buf, 2);
	return buf;
}

/* A random problem: lengths up to max_len (0 allowed for varlen sequences),
 * head sizes in [dmin, dmax]; order < 0 makes q_len < kv_len, > 0 the other
 * way (per sequence). */
static int make_case(uint64_t seed, uint64_t *ctr, int mask, int layout, int varlen, int dtype,
		     int group, int dist, int order, int32_t max_len, int32_t dmin, int32_t dmax,
		     struct tcase *t)
{
	struct fa_problem *p = &t->p;
	memset(t, 0, sizeof *t);
	p->batch = draw(seed, ctr, 1, MAX_BATCH);
	p->kv_heads = draw(seed, ctr, 1, 2);
	p->heads = p->kv_heads * group;
	p->head_dim = draw(seed, ctr, dmin, dmax);
	p->head_dim_v = draw(seed, ctr, dmin, dmax);
	p->dtype = dtype;
	p->mask = mask;
	p->layout = layout;
	p->varlen = varlen;
	p->prefix_len = draw(seed, ctr, 0, max_len);
	p->window = draw(seed, ctr, 1, max_len / 2 + 1);
	p->scale = 1.0f / sqrtf((float)p->head_dim);
	for (int b = 0; b < p->batch; b++) {
		int32_t lq = draw(seed, ctr, varlen ? 0 : 1, max_len);
		int32_t lk = draw(seed, ctr, varlen ? 0 : 1, max_len);
		if ((order < 0 && lq > lk) || (order > 0 && lq < lk)) {
			int32_t x = lq;
			lq = lk;
			lk = x;
		}
		if (!varlen && b > 0) {
			lq = p->q_len;
			lk = p->kv_len;
		}
		t->cu_q[b + 1] = t->cu_q[b] + lq;
		t->cu_k[b + 1] = t->cu_k[b] + lk;
		p->q_len = lq > p->q_len ? lq : p->q_len;
		p->kv_len = lk > p->kv_len ? lk : p->kv_len;
		t->prefix[b] = draw(seed, ctr, 0, max_len);
	}
	p->total_q = t->cu_q[p->batch];
	p->total_k = t->cu_k[p->batch];
	t->cuq = varlen ? t->cu_q : NULL;
	t->cuk = varlen ? t->cu_k : NULL;
	t->pl = mask == FA_MASK_PREFIX_LM && draw(seed, ctr, 0, 1) ? t->prefix : NULL;
	t->dist = dist;
	fa_problem_set_strides(p);
	t->q = filled(p, FA_TENSOR_Q, dist, seed + *ctr);
	t->k = filled(p, FA_TENSOR_K, dist, seed + *ctr);
	t->v = filled(p, FA_TENSOR_V, dist, seed + *ctr);
	return t->q && t->k && t->v;
}

static void free_case(struct tcase *t)
{
	free(t->q);
	free(t->k);
	free(t->v);
}

static const struct fa_kernel *kernel(const char *name)
{
	for (int i = 0; i < fa_cpu_n_kernels; i++)
		if (strcmp(fa_cpu_kernels[i].name, name) == 0)
			return &fa_cpu_kernels[i];
	return NULL;
}

static size_t out_bytes(const struct fa_problem *p)
{
	return (size_t)fa_tensor_elems(p, FA_TENSOR_O) * (size_t)fa_dtype_size(p->dtype);
}

/* Poisons o and launches k on t. */
static int launch(const struct fa_kernel *k, const struct tcase *t, const int32_t *params,
		  int nthreads, volatile int *cancel, void *o)
{
	size_t ws = k->workspace_bytes ? k->workspace_bytes(&t->p, params) : 0;
	void *workspace = ws ? malloc(ws) : NULL;
	struct fa_launch_args a = {.p = &t->p, .q = t->q, .k = t->k, .v = t->v, .o = o,
				   .cu_seqlens_q = t->cuq, .cu_seqlens_k = t->cuk,
				   .prefix_lens = t->pl, .params = params, .workspace = workspace,
				   .workspace_bytes = ws, .cancel = cancel, .nthreads = nthreads};
	int rc;
	if (ws && !workspace)
		return -100;
	memset(o, FA_POISON_BYTE, out_bytes(&t->p));
	rc = k->launch(&a);
	free(workspace);
	return rc;
}

/* Runs k on t and checks the whole output against the reference under the
 * default tolerance. Returns 0 when it passes. */
static int check_kernel(const struct fa_kernel *k, const struct tcase *t, const int32_t *params,
			const char *what)
{
	const struct fa_problem *p = &t->p;
	int64_t n = (int64_t)p->total_q * p->heads;
	int64_t *rows = malloc(sizeof *rows * (size_t)(n ? n : 1));
	void *o = malloc(out_bytes(p) ? out_bytes(p) : 1);
	struct fa_ref ref;
	struct fa_err err;
	struct fa_check_cfg cfg;
	struct fa_err_stats st;
	char rule[64], reason[512];
	int rc, verdict, bad = 0;
	if (!rows || !o) {
		free(rows);
		free(o);
		return 1;
	}
	for (int64_t i = 0; i < n; i++)
		rows[i] = i;
	rc = launch(k, t, params, 2, NULL, o);
	fa_err_clear(&err);
	fa_check_defaults(&cfg);
	if (rc != 0) {
		FA_CHECKF(0, "%s %s: launch returned %d", k->name, what, rc);
		bad = 1;
	} else if (fa_ref_compute(p, t->cuq, t->cuk, t->pl, t->q, t->k, t->v, rows, n, 0, 2, NULL,
				  &ref, &err) != FA_OK) {
		FA_CHECKF(0, "reference: %s", err.msg);
		bad = 1;
	} else {
		verdict = fa_check_compare(p, t->cuq, o, &ref, &cfg, &st, rule, sizeof rule, reason,
					   sizeof reason);
		if (verdict != FA_VERDICT_PASS || st.unwritten || st.nan_count || st.inf_count) {
			FA_CHECKF(0,
				  "%s %s: mask %d layout %d varlen %d dtype %d heads %d/%d "
				  "dims %d/%d lens %d/%d dist %d: %s",
				  k->name, what, p->mask, p->layout, p->varlen, p->dtype, p->heads,
				  p->kv_heads, p->head_dim, p->head_dim_v, p->q_len, p->kv_len,
				  t->dist, reason);
			bad = 1;
		}
		fa_ref_free(&ref);
	}
	free(rows);
	free(o);
	return bad;
}

FA_TEST(cpu_kernels, table)
{
	const struct fa_kernel *d = kernel("cpu_dense"), *f = kernel("cpu_flash");
	struct fa_problem p = {.batch = 3, .heads = 4, .kv_heads = 2, .q_len = 5, .kv_len = 7,
			       .head_dim = 8, .head_dim_v = 8, .total_q = 15, .total_k = 21};
	FA_REQUIRE(d && f && fa_cpu_n_kernels == 4); /* and the backward pair: test_bwd.c */
	for (int i = 0; i < fa_cpu_n_kernels; i++) {
		const struct fa_kernel *k = &fa_cpu_kernels[i];
		FA_CHECK(k->dtypes == 7u && k->head_dim_min == 1 && k->head_dim_max == 512);
		FA_CHECK(k->launch != NULL && k->description && k->description[0]);
		for (int j = 0; j < k->n_params; j++) { /* each default is an allowed value */
			int found = 0;
			for (int a = 0; a < k->params[j].n_allowed; a++)
				found |= k->params[j].allowed[a] == k->params[j].default_value;
			FA_CHECK(found);
		}
	}
	FA_CHECK(d->score_bytes == 4 && d->workspace_bytes);
	FA_CHECK(d->workspace_bytes(&p, NULL) == 3 * 4 * 5 * 7 * 4);
	p.varlen = 1;
	p.total_q = 11; /* packed: total_q rows, each as long as the longest kv sequence */
	FA_CHECK(d->workspace_bytes(&p, NULL) == 11 * 4 * 7 * 4);
	/* a score matrix past size_t (2^62 rows x 2^31 keys) asks for all of
	 * it, which no allocation gives, not for a size wrapped round; the
	 * backward's P and dS too */
	p.varlen = 0;
	p.batch = 1;
	p.heads = p.kv_heads = INT32_MAX;
	p.q_len = p.kv_len = p.total_q = p.total_k = INT32_MAX;
	FA_CHECK(d->workspace_bytes(&p, NULL) == SIZE_MAX);
	FA_CHECK(fa_cpu_dense_bwd_workspace_bytes(&p, NULL) == SIZE_MAX);
	p.q_len = p.total_q = 1; /* 2^31 rows x 2^31 keys x 8 bytes: 2^65 */
	FA_CHECK(fa_cpu_dense_bwd_workspace_bytes(&p, NULL) == SIZE_MAX);
	FA_CHECK(f->n_params == 2 && strcmp(f->params[0].name, "block_q") == 0 &&
		 strcmp(f->params[1].name, "block_k") == 0);
	FA_CHECK(f->params[0].default_value == 16 && f->params[1].default_value == 64);
	FA_CHECK(strcmp(fa_cpu_kernel_strerror(FA_KERNEL_CANCELLED), "cancelled") == 0);
}

FA_TEST(cpu_kernels, match_reference)
{
	uint64_t seed = fa_test_seed(), ctr = 0;
	static const int groups[] = {1, 2, 4};
	int bad = 0;
	/* every (mask, layout, varlen, dtype, group) once: 4 * 2 * 2 * 3 * 3 cases */
	for (int n = 0; n < FA_MASK_COUNT * FA_LAYOUT_COUNT * 2 * FA_DTYPE_COUNT * 3; n++) {
		int mask = n % FA_MASK_COUNT, layout = n / 4 % 2, varlen = n / 8 % 2;
		int dtype = n / 16 % 3, g = n / 48;
		/* every fourth case long enough for several key tiles */
		int32_t max_len = n % 4 == 0 ? 150 : 24, dmax = n % 4 == 0 ? 16 : 40;
		struct tcase t;
		FA_REQUIRE(make_case(seed, &ctr, mask, layout, varlen, dtype, groups[g],
				     n % FA_DIST_COUNT, n % 3 - 1, max_len, 1, dmax, &t));
		bad += check_kernel(kernel("cpu_dense"), &t, NULL, "");
		bad += check_kernel(kernel("cpu_flash"), &t, NULL, "");
		free_case(&t);
		if (bad > 6)
			return;
	}
}

FA_TEST(cpu_kernels, flash_every_tile_size)
{
	uint64_t seed = fa_test_seed(), ctr = 0;
	const struct fa_kernel *f = kernel("cpu_flash");
	int bad = 0;
	FA_REQUIRE(f);
	for (int i = 0; i < f->params[0].n_allowed; i++)
		for (int j = 0; j < f->params[1].n_allowed; j++) {
			int32_t params[2] = {f->params[0].allowed[i], f->params[1].allowed[j]};
			char what[64];
			snprintf(what, sizeof what, "block_q %d block_k %d", params[0], params[1]);
			for (int mask = 0; mask < FA_MASK_COUNT; mask++) {
				struct tcase t;
				int layout = (i + j) % 2, dtype = (i + j + mask) % 3;
				int dist = (mask + j) % FA_DIST_COUNT, order = (mask + i) % 3 - 1;
				FA_REQUIRE(make_case(seed, &ctr, mask, layout, mask % 2, dtype, 2,
						     dist, order, 140, 1, 12, &t));
				bad += check_kernel(f, &t, params, what);
				free_case(&t);
				if (bad > 4)
					return;
			}
		}
}

FA_TEST(cpu_kernels, head_sizes)
{
	uint64_t seed = fa_test_seed(), ctr = 0;
	static const int32_t dims[][2] = {{1, 1},     {3, 5},	  {72, 72},
					  {192, 128}, {512, 512}, {33, 511}};
	for (int i = 0; i < (int)(sizeof dims / sizeof dims[0]); i++) {
		struct tcase t;
		FA_REQUIRE(make_case(seed, &ctr, i % FA_MASK_COUNT, i % 2, i % 3 == 0, i % 3, 2,
				     i % FA_DIST_COUNT, 0, 20, dims[i][0], dims[i][0], &t));
		t.p.head_dim_v = dims[i][1];
		fa_problem_set_strides(&t.p);
		free(t.v);
		t.v = filled(&t.p, FA_TENSOR_V, t.dist, seed);
		FA_REQUIRE(t.v);
		check_kernel(kernel("cpu_dense"), &t, NULL, "head sizes");
		check_kernel(kernel("cpu_flash"), &t, NULL, "head sizes");
		free_case(&t);
	}
}

FA_TEST(cpu_kernels, cancel_and_threads)
{
	uint64_t seed = fa_test_seed(), ctr = 0;
	for (int i = 0; i < fa_cpu_n_kernels; i++) {
		const struct fa_kernel *k = &fa_cpu_kernels[i];
		if (k->pass == FA_PASS_BWD) /* test_bwd.c */
			continue;
		for (int dtype = 0; dtype < FA_DTYPE_COUNT; dtype++) {
			struct tcase t;
			void *o1, *o3;
			volatile int cancel = 0;
			int32_t params[2] = {8, 16};
			int layout = dtype % 2;
			FA_REQUIRE(make_case(seed, &ctr, FA_MASK_SLIDING_WINDOW, layout, 1,
					     dtype, 2, FA_DIST_OUTLIERS, 0, 100, 8, 24, &t));
			o1 = malloc(out_bytes(&t.p) + 1);
			o3 = malloc(out_bytes(&t.p) + 1);
			FA_REQUIRE(o1 && o3);
			FA_CHECK(launch(k, &t, k->n_params ? params : NULL, 1, &cancel, o1) == 0);
			FA_CHECK(launch(k, &t, k->n_params ? params : NULL, 3, &cancel, o3) == 0);
			FA_CHECKF(memcmp(o1, o3, out_bytes(&t.p)) == 0,
				  "%s dtype %d: 1 and 3 threads differ", k->name, dtype);
			cancel = 1;
			FA_CHECK(launch(k, &t, NULL, 3, &cancel, o1) == FA_KERNEL_CANCELLED);
			free(o1);
			free(o3);
			free_case(&t);
		}
	}
}

FA_TEST(cpu_kernels, launchers_refuse_bad_arguments)
{
	uint64_t seed = fa_test_seed(), ctr = 0;
	struct tcase t;
	void *o;
	FA_REQUIRE(
		make_case(seed, &ctr, FA_MASK_CAUSAL, 0, 0, FA_DTYPE_FP32, 1, 0, 0, 8, 4, 4, &t));
	o = malloc(out_bytes(&t.p));
	FA_REQUIRE(o);
	struct fa_launch_args a = {.p = &t.p, .q = t.q, .k = t.k, .v = t.v, .o = o, .nthreads = 1,
				   .workspace_bytes = 16};
	FA_CHECK(fa_cpu_dense_launch(&a) == FA_CPU_ERR_WORKSPACE);
	int32_t params[2] = {16, 24}; /* block_k not a multiple of 16 */
	a.params = params;
	FA_CHECK(fa_cpu_flash_launch(&a) == FA_CPU_ERR_PARAM);
	FA_CHECK(strcmp(fa_cpu_kernel_strerror(FA_CPU_ERR_PARAM),
			"block size the kernel cannot run") == 0);
	free(o);
	free_case(&t);
}

FA_TEST(cpu_kernels, row_conversion_is_exact)
{
	/* sized as floats: the compiler cannot see that the fp32 branch is not taken */
	uint16_t *all = malloc(sizeof(float) * (65536 + 4));
	float *got = malloc(sizeof(float) * (65536 + 4));
	int bad = 0;
	FA_REQUIRE(all && got);
	for (uint32_t u = 0; u < 65536 + 3; u++)
		all[u] = (uint16_t)(u * 40503u); /* every pattern, scrambled, plus a tail */
	for (int dtype = FA_DTYPE_FP16; dtype <= FA_DTYPE_BF16; dtype++) {
		/* odd offset and length: the four-wide part and the scalar tail */
		fa_cpu_load_row(got, all, dtype, 1, 65536 + 2);
		for (uint32_t u = 0; u < 65536 + 2; u++) {
			float want = dtype == FA_DTYPE_FP16 ? fa_f16_to_f32(all[u + 1])
							    : fa_bf16_to_f32(all[u + 1]);
			if (fa_f32_bits(got[u]) != fa_f32_bits(want) && bad++ < 5)
				FA_CHECKF(0, "dtype %d: 0x%04x -> 0x%08x, want 0x%08x", dtype,
					  all[u + 1], fa_f32_bits(got[u]), fa_f32_bits(want));
		}
	}
	FA_CHECK(bad == 0);
	free(all);
	free(got);
}

FA_TEST(cpu_kernels, rows_without_keys_are_zero)
{
	uint64_t seed = fa_test_seed();
	for (int i = 0; i < fa_cpu_n_kernels; i++)
		for (int dtype = 0; dtype < FA_DTYPE_COUNT && fa_cpu_kernels[i].pass == FA_PASS_FWD;
		     dtype++) {
			/* causal, 6 queries on 2 keys (bottom-right: rows 0..3 see nothing), and
			 * a varlen sequence with no keys at all */
			struct tcase t = {.p = {.batch = 2, .heads = 2, .kv_heads = 1, .q_len = 6,
						.kv_len = 2, .head_dim = 5, .head_dim_v = 7,
						.dtype = dtype, .mask = FA_MASK_CAUSAL, .varlen = 1,
						.total_q = 9, .total_k = 2, .scale = 0.4f},
					  .cu_q = {0, 6, 9}, .cu_k = {0, 2, 2}};
			void *o;
			t.cuq = t.cu_q;
			t.cuk = t.cu_k;
			fa_problem_set_strides(&t.p);
			t.q = filled(&t.p, FA_TENSOR_Q, FA_DIST_NORMAL, seed);
			t.k = filled(&t.p, FA_TENSOR_K, FA_DIST_NORMAL, seed);
			t.v = filled(&t.p, FA_TENSOR_V, FA_DIST_NORMAL, seed);
			o = malloc(out_bytes(&t.p));
			FA_REQUIRE(t.q && t.k && t.v && o);
			FA_REQUIRE(launch(&fa_cpu_kernels[i], &t, NULL, 2, NULL, o) == 0);
			for (int e = 0; e < 9 * 2 * 7; e++) { /* (token, head, dim) */
				int64_t T = e / 14;
				int h = e / 7 % 2, empty = T < 4 || T >= 6;
				int64_t off = fa_tensor_offset(&t.p, FA_TENSOR_O, T, h) + e % 7;
				float x = fa_load_f32(o, dtype, off);
				FA_CHECKF(empty ? fa_f32_bits(x) == 0 : x != 0 && isfinite(x),
					  "%s dtype %d token %lld head %d: %g",
					  fa_cpu_kernels[i].name, dtype, (long long)T, h, x);
			}
			free(o);
			free_case(&t);
		}
}
