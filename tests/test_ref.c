/* test_ref.c - the dense reference against a deliberately naive long-double
 * attention written here from the documented definitions (own addressing,
 * own masks), over random small problems: every mask, q_len != kv_len both
 * ways, GQA 1/2/4, varlen with prefix lengths, both layouts, all dtypes,
 * rows with no allowed key, outlier inputs; and the input-precision pass. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../harness/run/data.h"
#include "../kernels/common/fa_dtype.h"
#include "../kernels/common/fa_rng.h"
#include "../reference/ref.h"
#include "test.h"

#define MAX_BATCH 4

struct tcase {
	struct fa_problem p;
	int32_t cu_q[MAX_BATCH + 1], cu_k[MAX_BATCH + 1], prefix[MAX_BATCH];
	const int32_t *cuq, *cuk, *pl; /* what the API gets: NULL when not used */
	void *q, *k, *v;
};

static int32_t draw(uint64_t seed, uint64_t *ctr, int32_t lo, int32_t hi)
{
	return lo + (int32_t)(fa_rng_bits(seed, 77, (*ctr)++) % (uint64_t)(hi - lo + 1));
}

static void *filled(const struct fa_problem *p, int tensor, int dist, uint64_t seed)
{
	size_t bytes = (size_t)fa_tensor_elems(p, tensor) * (size_t)fa_dtype_size(p->dtype);
	void *buf = malloc(bytes ? bytes : 1);
	if (buf)
		fa_data_fill(p, tensor, dist, seed, buf, 2);
	return buf;
}

/* A random small problem with data. lq_vs_lk: <0 q_len < kv_len, >0 the
 * other way, 0 any. */
static int make_case(uint64_t seed, uint64_t *ctr, int mask, int layout, int varlen, int dtype,
		     int group, int dist, int lq_vs_lk, struct tcase *t)
{
	struct fa_problem *p = &t->p;
	memset(t, 0, sizeof *t);
	p->batch = draw(seed, ctr, 1, MAX_BATCH);
	p->kv_heads = draw(seed, ctr, 1, 2);
	p->heads = p->kv_heads * group;
	p->head_dim = draw(seed, ctr, 1, 20);
	p->head_dim_v = draw(seed, ctr, 1, 20);
	p->dtype = dtype;
	p->mask = mask;
	p->layout = layout;
	p->varlen = varlen;
	p->prefix_len = draw(seed, ctr, 0, 14);
	p->window = draw(seed, ctr, 1, 9);
	p->scale = 1.0f / sqrtf((float)p->head_dim);
	for (int b = 0; b < p->batch; b++) {
		int32_t lq = draw(seed, ctr, varlen ? 0 : 1, 20);
		int32_t lk = draw(seed, ctr, varlen ? 0 : 1, 20);
		if ((lq_vs_lk < 0 && lq >= lk) || (lq_vs_lk > 0 && lq <= lk)) {
			int32_t x = lq; /* swap so the order holds; equal lengths grow apart */
			lq = lk;
			lk = x;
			if (lq == lk && lq_vs_lk < 0)
				lk++;
			else if (lq == lk)
				lq++;
		}
		if (!varlen && b > 0) {
			lq = p->q_len;
			lk = p->kv_len;
		}
		t->cu_q[b + 1] = t->cu_q[b] + lq;
		t->cu_k[b + 1] = t->cu_k[b] + lk;
		p->q_len = lq > p->q_len ? lq : p->q_len;
		p->kv_len = lk > p->kv_len ? lk : p->kv_len;
		t->prefix[b] = draw(seed, ctr, 0, 14);
	}
	p->total_q = t->cu_q[p->batch];
	p->total_k = t->cu_k[p->batch];
	t->cuq = varlen ? t->cu_q : NULL;
	t->cuk = varlen ? t->cu_k : NULL;
	t->pl = mask == FA_MASK_PREFIX_LM && draw(seed, ctr, 0, 1) ? t->prefix : NULL;
	fa_problem_set_strides(p);
	t->q = filled(p, FA_TENSOR_Q, dist, seed ^ (uint64_t)*ctr);
	t->k = filled(p, FA_TENSOR_K, dist, seed ^ (uint64_t)*ctr);
	t->v = filled(p, FA_TENSOR_V, dist, seed ^ (uint64_t)*ctr);
	return t->q && t->k && t->v;
}

static void free_case(struct tcase *t)
{
	free(t->q);
	free(t->k);
	free(t->v);
}

/* ---- the naive attention: nothing shared with the code under test but
 * the dtype conversion ---- */

static long double element(const struct tcase *t, const void *buf, int qside, int b, int s, int h,
			   int d, int dim)
{
	const struct fa_problem *p = &t->p;
	int64_t heads = qside ? p->heads : p->kv_heads, len = qside ? p->q_len : p->kv_len;
	int64_t total = qside ? p->total_q : p->total_k;
	int64_t start = p->varlen ? (qside ? t->cu_q[b] : t->cu_k[b]) : (int64_t)b * len, off;
	if (p->layout == FA_LAYOUT_BSHD)
		off = ((start + s) * heads + h) * dim + d;
	else if (p->varlen)
		off = ((int64_t)h * total + start + s) * dim + d;
	else
		off = (((int64_t)b * heads + h) * len + s) * dim + d;
	return fa_load_f32(buf, p->dtype, off);
}

static int naive_allowed(int mask, long i, long j, long lq, long lk, long prefix, long window)
{
	long diag = i + lk - lq;
	if (mask == FA_MASK_NONE)
		return 1;
	if (mask == FA_MASK_CAUSAL)
		return j <= diag;
	if (mask == FA_MASK_PREFIX_LM)
		return j < prefix || j <= diag;
	return j > diag - window && j <= diag;
}

/* Row (sequence b, query s, head h); returns the number of allowed keys. */
static int naive_row(const struct tcase *t, int b, int s, int h, long double *out)
{
	const struct fa_problem *p = &t->p;
	long lq = t->cu_q[b + 1] - t->cu_q[b], lk = t->cu_k[b + 1] - t->cu_k[b];
	long prefix = t->pl ? t->pl[b] : p->prefix_len;
	int kvh = h * p->kv_heads / p->heads, n = 0;
	long double sc[64], m = -INFINITY, sum = 0;
	for (long j = 0; j < lk; j++) {
		long double dot = 0;
		if (!naive_allowed(p->mask, s, j, lq, lk, prefix, p->window))
			continue;
		for (int d = 0; d < p->head_dim; d++)
			dot += element(t, t->q, 1, b, s, h, d, p->head_dim) *
			       element(t, t->k, 0, b, (int)j, kvh, d, p->head_dim);
		sc[j] = dot * p->scale;
		m = sc[j] > m ? sc[j] : m;
		n++;
	}
	for (int d = 0; d < p->head_dim_v; d++)
		out[d] = 0;
	for (long j = 0; j < lk; j++) {
		long double w;
		if (!naive_allowed(p->mask, s, j, lq, lk, prefix, p->window))
			continue;
		w = expl(sc[j] - m);
		sum += w;
		for (int d = 0; d < p->head_dim_v; d++)
			out[d] += w * element(t, t->v, 0, b, (int)j, kvh, d, p->head_dim_v);
	}
	for (int d = 0; d < p->head_dim_v && n; d++)
		out[d] /= sum;
	return n;
}

/* The input-precision row as ref.h specifies it, step by step in float:
 * s_j = scale * (fp32 dot), e_j = expf(s_j - max), l = sum e_j,
 * o = round(sum_j round(e_j) v_j * (1 / l)) (sums in key/dim order). */
static void naive_same_row(const struct tcase *t, int b, int s, int h, float *out)
{
	const struct fa_problem *p = &t->p;
	int dt = p->dtype;
	long lq = t->cu_q[b + 1] - t->cu_q[b], lk = t->cu_k[b + 1] - t->cu_k[b];
	long prefix = t->pl ? t->pl[b] : p->prefix_len;
	int kvh = h * p->kv_heads / p->heads;
	float sc[64], m = -INFINITY, l = 0, acc[32] = {0};
	for (long j = 0; j < lk; j++) {
		float dot = 0;
		if (!naive_allowed(p->mask, s, j, lq, lk, prefix, p->window))
			continue;
		for (int d = 0; d < p->head_dim; d++)
			dot += (float)element(t, t->q, 1, b, s, h, d, p->head_dim) *
			       (float)element(t, t->k, 0, b, (int)j, kvh, d, p->head_dim);
		sc[j] = p->scale * dot;
		m = sc[j] > m ? sc[j] : m;
	}
	for (long j = 0; j < lk; j++)
		if (naive_allowed(p->mask, s, j, lq, lk, prefix, p->window))
			l += expf(sc[j] - m);
	for (long j = 0; j < lk; j++) {
		float pj;
		if (!naive_allowed(p->mask, s, j, lq, lk, prefix, p->window))
			continue;
		pj = fa_round_to_dtype(expf(sc[j] - m), dt);
		for (int d = 0; d < p->head_dim_v; d++)
			acc[d] += pj * (float)element(t, t->v, 0, b, (int)j, kvh, d, p->head_dim_v);
	}
	for (int d = 0; d < p->head_dim_v; d++)
		out[d] = l > 0 ? fa_round_to_dtype(acc[d] * (1.0f / l), dt) : 0.0f;
}

/* Compares fa_ref_compute on rows (all, or a shuffled subset) with the naive
 * rows. Counts empty rows into *empty. Returns the number of bad elements. */
static int check_case(struct tcase *t, uint64_t seed, uint64_t *ctr, int subset, int *empty,
		      struct fa_ref *out_ref)
{
	const struct fa_problem *p = &t->p;
	int64_t total = (int64_t)p->total_q * p->heads, n = 0;
	int64_t *rows = malloc(sizeof *rows * (size_t)(total ? total : 1));
	struct fa_ref ref;
	struct fa_err err;
	int bad = 0;
	if (out_ref)
		memset(out_ref, 0, sizeof *out_ref);
	if (!rows)
		return 1;
	for (int64_t r = 0; r < total; r++)
		if (!subset || draw(seed, ctr, 0, 2) == 0)
			rows[n++] = r;
	for (int64_t i = n - 1; subset && i > 0; i--) { /* any order is allowed */
		int64_t j = draw(seed, ctr, 0, (int32_t)i), x = rows[i];
		rows[i] = rows[j];
		rows[j] = x;
	}
	fa_err_clear(&err);
	if (fa_ref_compute(p, t->cuq, t->cuk, t->pl, t->q, t->k, t->v, rows, n, 1, 3, NULL, &ref,
			   &err) != FA_OK) {
		FA_CHECKF(0, "fa_ref_compute: %s", err.msg);
		free(rows);
		return 1;
	}
	FA_CHECK(ref.n_rows == n && ref.same);
	FA_CHECK(n == 0 || memcmp(ref.rows, rows, sizeof *rows * (size_t)n) == 0);
	for (int64_t i = 0; i < n; i++) {
		long double want[32];
		float want_same[32];
		int64_t T = rows[i] / p->heads;
		int h = (int)(rows[i] % p->heads), b = 0, s, keys;
		while (T >= t->cu_q[b + 1])
			b++;
		s = (int)(T - t->cu_q[b]);
		keys = naive_row(t, b, s, h, want);
		naive_same_row(t, b, s, h, want_same);
		*empty += keys == 0;
		for (int d = 0; d < p->head_dim_v; d++) {
			double got = ref.out[i * p->head_dim_v + d];
			float same = ref.same[i * p->head_dim_v + d];
			int ok = fabsl((long double)got - want[d]) <= 1e-12L * (1 + fabsl(want[d]));
			if (keys == 0) /* no allowed key: exactly zero in both passes */
				ok = got == 0.0 && fa_f32_bits(same) == 0;
			if (fa_f32_bits(same) != fa_f32_bits(want_same[d]) && bad++ < 3)
				FA_CHECKF(0, "dtype %d row b=%d t=%d h=%d d=%d: same-precision %a, "
					  "spec %a", p->dtype, b, s, h, d, same, want_same[d]);
			if (!ok && bad++ < 3)
				FA_CHECKF(0,
					  "mask %d layout %d varlen %d dtype %d row b=%d t=%d h=%d "
					  "d=%d: ref %.17g, naive %.17Lg, keys %d",
					  p->mask, p->layout, p->varlen, p->dtype, b, s, h, d, got,
					  want[d], keys);
		}
	}
	free(rows);
	if (out_ref)
		*out_ref = ref;
	else
		fa_ref_free(&ref);
	return bad;
}

FA_TEST(ref, matches_naive_long_double)
{
	uint64_t seed = fa_test_seed(), ctr = 0;
	int bad = 0, empty = 0;
	static const int groups[] = {1, 2, 4};
	/* every (mask, layout, varlen, dtype, group) once: 4 * 2 * 2 * 3 * 3 cases */
	for (int n = 0; n < FA_MASK_COUNT * FA_LAYOUT_COUNT * 2 * FA_DTYPE_COUNT * 3; n++) {
		int mask = n % FA_MASK_COUNT, layout = n / 4 % 2, varlen = n / 8 % 2;
		int dtype = n / 16 % 3, g = n / 48;
		int dist = (mask + layout + dtype + g) % FA_DIST_COUNT, order = (g + dtype) % 3 - 1;
		struct tcase t;
		FA_REQUIRE(make_case(seed, &ctr, mask, layout, varlen, dtype, groups[g], dist,
				     order, &t));
		/* half the cases on a shuffled subset of rows */
		bad += check_case(&t, seed, &ctr, n & 1, &empty, NULL);
		free_case(&t);
	}
	FA_CHECK(bad == 0);
	FA_CHECKF(empty > 0, "no row without an allowed key was drawn");
}

FA_TEST(ref, hand_computed_row)
{
	/* one query, two keys: o = (0 + e * 1) / (1 + e) */
	struct fa_problem p = {.batch = 1, .heads = 1, .kv_heads = 1, .q_len = 1, .kv_len = 2,
			       .head_dim = 1, .head_dim_v = 1, .dtype = FA_DTYPE_FP32,
			       .total_q = 1, .total_k = 2, .scale = 1.0f};
	float q[1] = {1}, k[2] = {0, 1}, v[2] = {0, 1};
	int64_t row = 0;
	struct fa_ref ref;
	struct fa_err err;
	fa_err_clear(&err);
	fa_problem_set_strides(&p);
	FA_REQUIRE(fa_ref_compute(&p, NULL, NULL, NULL, q, k, v, &row, 1, 1, 1, NULL, &ref, &err) ==
		   FA_OK);
	FA_CHECK_NEAR(ref.out[0], 0.7310585786300049, 1e-15);
	FA_CHECK_NEAR(ref.same[0], 0.7310585786300049, 1e-7);
	fa_ref_free(&ref);
	/* causal with q_len 1 < kv_len 2: bottom-right, the query sees both keys */
	p.mask = FA_MASK_CAUSAL;
	FA_REQUIRE(fa_ref_compute(&p, NULL, NULL, NULL, q, k, v, &row, 1, 0, 1, NULL, &ref, &err) ==
		   FA_OK);
	FA_CHECK_NEAR(ref.out[0], 0.7310585786300049, 1e-15);
	FA_CHECK(ref.same == NULL);
	fa_ref_free(&ref);
}

/* Empty sequences of a varlen batch change nothing around them: a batch
 * of seqlens 0/7/0/5/3 over kv_seqlens 4/6/0/9/0 gives, for sequences 1
 * and 3, bit for bit the rows of the batch 7/5 over 6/9 that holds only
 * them (same data), under every mask and both layouts, in both passes;
 * sequence 4's queries, which have no key, are zeros. */
FA_TEST(ref, empty_sequences_change_nothing_around_them)
{
	static const int32_t cu_q[6] = {0, 0, 7, 7, 12, 15}, cu_k[6] = {0, 4, 10, 10, 19, 19};
	static const int32_t rq[3] = {0, 7, 12}, rk[3] = {0, 6, 15};
	/* prefix_lens 3/2/0/4/0 and 2/4: 0 where a sequence has no key */
	static const int32_t pfx[5] = {3, 2, 0, 4, 0}, rpfx[2] = {2, 4};
	uint64_t seed = fa_test_seed();
	for (int layout = 0; layout < FA_LAYOUT_COUNT; layout++)
		for (int mask = 0; mask < FA_MASK_COUNT; mask++) {
			struct fa_problem p = {.batch = 5, .heads = 4, .kv_heads = 2, .q_len = 7,
					       .kv_len = 9, .head_dim = 12, .head_dim_v = 10,
					       .dtype = FA_DTYPE_BF16, .mask = mask,
					       .layout = layout, .window = 3, .varlen = 1,
					       .total_q = 15, .total_k = 19, .scale = 0.3f};
			struct fa_problem r = p;
			const int32_t *pl = mask == FA_MASK_PREFIX_LM ? pfx : NULL;
			const int32_t *rpl = mask == FA_MASK_PREFIX_LM ? rpfx : NULL;
			int64_t rows[15 * 4], rrows[12 * 4];
			struct fa_ref a, b;
			struct fa_err err;
			void *buf[3], *rbuf[3];
			int bad = 0;
			r.batch = 2;
			r.total_q = 12;
			r.total_k = 15;
			fa_problem_set_strides(&p);
			fa_problem_set_strides(&r);
			for (int t = 0; t < 3; t++) { /* Q, K, V; then the rows of 1 and 3 copied */
				const int32_t *cu = t == FA_TENSOR_Q ? cu_q : cu_k;
				const int32_t *rc = t == FA_TENSOR_Q ? rq : rk;
				int32_t dim = t == FA_TENSOR_V ? p.head_dim_v : p.head_dim;
				int32_t heads = t == FA_TENSOR_Q ? p.heads : p.kv_heads;
				buf[t] = filled(&p, t, FA_DIST_NORMAL, seed + (uint64_t)layout);
				rbuf[t] = calloc((size_t)fa_tensor_elems(&r, t), 2);
				FA_REQUIRE(buf[t] && rbuf[t]);
				for (int s = 0; s < 2; s++)
					for (int32_t i = 0; i < rc[s + 1] - rc[s]; i++)
						for (int h = 0; h < heads; h++)
							memcpy((uint16_t *)rbuf[t] +
								       fa_tensor_offset(&r, t, rc[s] + i, h),
							       (uint16_t *)buf[t] +
								       fa_tensor_offset(&p, t,
											cu[1 + 2 * s] + i, h),
							       (size_t)dim * 2);
			}
			for (int64_t i = 0; i < 15 * 4; i++)
				rows[i] = i;
			for (int64_t i = 0; i < 12 * 4; i++)
				rrows[i] = i;
			fa_err_clear(&err);
			FA_REQUIRE(fa_ref_compute(&p, cu_q, cu_k, pl, buf[0], buf[1], buf[2], rows,
						  15 * 4, 1, 2, NULL, &a, &err) == FA_OK);
			FA_REQUIRE(fa_ref_compute(&r, rq, rk, rpl, rbuf[0], rbuf[1], rbuf[2], rrows,
						  12 * 4, 1, 2, NULL, &b, &err) == FA_OK);
			/* packed tokens 0..11 are sequences 1 and 3 in both batches */
			for (int64_t i = 0; i < 12 * 4 * 10; i++)
				bad += a.out[i] != b.out[i] || a.same[i] != b.same[i];
			/* tokens 12..14, sequence 4: no key, zeros */
			for (int64_t i = 12 * 4 * 10; i < 15 * 4 * 10; i++)
				bad += a.out[i] != 0.0 || a.same[i] != 0.0f;
			FA_CHECKF(bad == 0, "layout %d mask %d: %d values differ", layout, mask, bad);
			fa_ref_free(&a);
			fa_ref_free(&b);
			for (int t = 0; t < 3; t++) {
				free(buf[t]);
				free(rbuf[t]);
			}
		}
}

FA_TEST(ref, same_precision_pass)
{
	uint64_t seed = fa_test_seed(), ctr = 0;
	/* |same - ref| bounds at each dtype's scale for normal inputs: scores
	 * and P rounded to the dtype move an output by a few units of the
	 * dtype's rounding (2^-24, 2^-11, 2^-8) times |v| <= 3.5 */
	static const double bound[FA_DTYPE_COUNT] = {1e-5, 1e-2, 8e-2};
	for (int dtype = 0; dtype < FA_DTYPE_COUNT; dtype++) {
		double max_diff = 0;
		int64_t elems = 0, not_rounded_ref = 0, unrepresentable = 0;
		for (int iter = 0; iter < 12; iter++) {
			struct tcase t;
			struct fa_ref ref;
			int empty = 0;
			FA_REQUIRE(make_case(seed, &ctr, iter % FA_MASK_COUNT, iter % 2,
					     iter % 3 == 0, dtype, 2, FA_DIST_NORMAL, 0, &t));
			if (check_case(&t, seed, &ctr, 0, &empty, &ref)) {
				fa_ref_free(&ref);
				free_case(&t);
				break;
			}
			for (int64_t i = 0; i < ref.n_rows * t.p.head_dim_v; i++) {
				float same = ref.same[i];
				float rounded = fa_round_to_dtype((float)ref.out[i], dtype);
				max_diff = fmax(max_diff, fabs((double)same - ref.out[i]));
				elems++;
				not_rounded_ref += same != rounded;
				unrepresentable += same != fa_round_to_dtype(same, dtype);
			}
			fa_ref_free(&ref);
			free_case(&t);
		}
		FA_CHECKF(max_diff <= bound[dtype], "dtype %d: same-precision error %g > %g", dtype,
			  max_diff, bound[dtype]);
		FA_CHECK(unrepresentable == 0);
		if (dtype == FA_DTYPE_BF16) {
			/* it really computes in bf16, not just rounds the fp64 answer */
			FA_CHECKF(max_diff > 4e-3, "bf16 same-precision error only %g", max_diff);
			FA_CHECKF(not_rounded_ref * 10 > elems, "%lld of %lld differ from fp64",
				  (long long)not_rounded_ref, (long long)elems);
		}
		if (dtype == FA_DTYPE_FP32)
			FA_CHECK(max_diff > 0); /* fp32 arithmetic is not fp64 */
	}
}

FA_TEST(ref, threads_locate_cancel_and_errors)
{
	uint64_t seed = fa_test_seed(), ctr = 0;
	struct tcase t;
	struct fa_ref r1, r3;
	struct fa_err err;
	int64_t n, *rows;
	volatile int cancel = 1;
	for (;;) { /* varlen sequences may all be empty: draw until one is not */
		FA_REQUIRE(make_case(seed, &ctr, FA_MASK_PREFIX_LM, FA_LAYOUT_BHSD, 1,
				     FA_DTYPE_BF16, 2, FA_DIST_OUTLIERS, 0, &t));
		if (t.p.total_q > 0)
			break;
		free_case(&t);
	}
	n = (int64_t)t.p.total_q * t.p.heads;
	rows = malloc(sizeof *rows * (size_t)(n + 1));
	FA_REQUIRE(rows);
	for (int64_t i = 0; i < n; i++)
		rows[i] = i;
	fa_err_clear(&err);
	FA_REQUIRE(fa_ref_compute(&t.p, t.cuq, t.cuk, t.pl, t.q, t.k, t.v, rows, n, 1, 1, NULL, &r1,
				  &err) == FA_OK);
	FA_REQUIRE(fa_ref_compute(&t.p, t.cuq, t.cuk, t.pl, t.q, t.k, t.v, rows, n, 1, 3, NULL, &r3,
				  &err) == FA_OK);
	FA_CHECK(memcmp(r1.out, r3.out, sizeof(double) * (size_t)(n * t.p.head_dim_v)) == 0);
	FA_CHECK(memcmp(r1.same, r3.same, sizeof(float) * (size_t)(n * t.p.head_dim_v)) == 0);
	fa_ref_free(&r1);
	fa_ref_free(&r3);
	FA_CHECK(r1.out == NULL && r1.n_rows == 0);

	/* locate: sequence and position of every packed token, empty sequences included */
	for (int64_t T = 0; T < t.p.total_q; T++) {
		int b;
		int32_t s;
		fa_ref_locate(&t.p, t.cuq, T, &b, &s);
		FA_CHECK(b >= 0 && b < t.p.batch && t.cu_q[b] <= T && T < t.cu_q[b + 1] &&
			 s == T - t.cu_q[b]);
	}

	fa_err_clear(&err);
	FA_CHECK(fa_ref_compute(&t.p, t.cuq, t.cuk, t.pl, t.q, t.k, t.v, rows, n, 1, 2, &cancel,
				&r1, &err) == FA_ERR_CANCELLED);
	FA_CHECK(r1.out == NULL && r1.rows == NULL && r1.same == NULL && r1.n_rows == 0);
	FA_CHECK(err.rc == FA_ERR_CANCELLED && strstr(err.msg, "cancelled"));

	rows[0] = n; /* one past the last row */
	fa_err_clear(&err);
	FA_CHECK(fa_ref_compute(&t.p, t.cuq, t.cuk, t.pl, t.q, t.k, t.v, rows, 1, 0, 1, NULL, &r1,
				&err) == FA_ERR_INTERNAL);
	FA_CHECK(strstr(err.msg, "out of range") != NULL);
	FA_CHECK(r1.out == NULL);
	free(rows);
	free_case(&t);
}
