/* test_check.c - row selection, error statistics and verdicts: planted
 * errors are found at the right element, NaN/Inf/unwritten are counted
 * apart, the fa rule scales with the same-precision error, and the
 * statistics equal hand-computed values. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../harness/run/check.h"
#include "../harness/run/data.h"
#include "../kernels/common/fa_dtype.h"
#include "../kernels/common/fa_rng.h"
#include "../reference/ref.h"
#include "test.h"

FA_TEST(check, defaults)
{
	struct fa_check_cfg c;
	fa_check_defaults(&c);
	FA_CHECK(c.rule == FA_RULE_TOLERANCE && c.reference == FA_REF_AUTO && c.rows == 256);
	FA_CHECK(c.full_limit == 268435456.0 && c.fa_k == 0 && c.fa_atol == -1);
	FA_CHECK(c.rel_floor == 1e-3);
	/* the fa rule per dtype; the suite's fa_k / fa_atol replace k and atol */
	for (int d = 0; d < FA_DTYPE_COUNT; d++) {
		struct fa_fa_limit f = fa_check_fa_limit(&c, d);
		FA_CHECK(f.k >= 2 && f.k <= 3 && f.k_l2 > 1 && f.k_l2 < 2);
		FA_CHECK(f.atol > 0 && f.l2_floor > 0);
	}
	FA_CHECK(fa_check_fa_limit(&c, FA_DTYPE_BF16).atol >
		 fa_check_fa_limit(&c, FA_DTYPE_FP16).atol);
	c.fa_k = 4;
	c.fa_atol = 0;
	{
		struct fa_fa_limit f = fa_check_fa_limit(&c, FA_DTYPE_FP16);
		FA_CHECK(f.k == 4 && f.atol == 0 && f.k_l2 == c.fa[FA_DTYPE_FP16].k_l2);
	}
	for (int d = 0; d < FA_DTYPE_COUNT; d++)
		FA_CHECK(c.tol[d].max_abs > 0 && c.tol[d].rel_l2 > 0);
	/* looser for coarser dtypes */
	FA_CHECK(c.tol[FA_DTYPE_FP32].max_abs < c.tol[FA_DTYPE_FP16].max_abs &&
		 c.tol[FA_DTYPE_FP16].max_abs < c.tol[FA_DTYPE_BF16].max_abs);
}

static struct fa_problem big_problem(void)
{
	struct fa_problem p = {.batch = 2, .heads = 16, .kv_heads = 4, .q_len = 4096,
			       .kv_len = 4096, .head_dim = 128, .head_dim_v = 128,
			       .dtype = FA_DTYPE_BF16, .total_q = 8192, .total_k = 8192};
	fa_problem_set_strides(&p);
	return p;
}

FA_TEST(check, select_rows)
{
	uint64_t seed = fa_test_seed();
	struct fa_check_cfg cfg;
	struct fa_problem p = big_problem();
	struct fa_err err;
	int64_t *r1, *r2, *r3, n1, n2, n3, total = (int64_t)p.total_q * p.heads;
	fa_check_defaults(&cfg);
	fa_err_clear(&err);
	/* 8192 * 16 * 4096 * 256 multiply-adds: far over 2^28, sampled */
	FA_REQUIRE(fa_check_select_rows(&p, &cfg, seed, &r1, &n1, &err) == FA_OK);
	FA_REQUIRE(fa_check_select_rows(&p, &cfg, seed, &r2, &n2, &err) == FA_OK);
	FA_REQUIRE(fa_check_select_rows(&p, &cfg, seed + 1, &r3, &n3, &err) == FA_OK);
	FA_CHECK(n1 == 256 && n2 == 256 && n3 == 256);
	FA_CHECK(r1[0] == 0 && r1[n1 - 1] == total - 1);
	for (int64_t i = 1; i < n1; i++)
		FA_CHECK(r1[i] > r1[i - 1]); /* sorted, no repeats */
	FA_CHECK(memcmp(r1, r2, sizeof *r1 * (size_t)n1) == 0);
	FA_CHECK(memcmp(r1, r3, sizeof *r1 * (size_t)n1) != 0);
	/* spread over the whole range, not bunched at one end */
	FA_CHECK(r1[n1 / 2] > total / 4 && r1[n1 / 2] < 3 * total / 4);
	free(r1);
	free(r2);
	free(r3);

	/* at or under the limit: every row */
	cfg.full_limit = (double)p.total_q * p.heads * p.kv_len * (p.head_dim + p.head_dim_v);
	FA_REQUIRE(fa_check_select_rows(&p, &cfg, seed, &r1, &n1, &err) == FA_OK);
	FA_CHECK(n1 == total);
	for (int64_t i = 0; i < n1; i++)
		if (r1[i] != i) {
			FA_CHECK(r1[i] == i);
			break;
		}
	free(r1);

	/* a sample nearly as large as the output still gets distinct rows */
	p.batch = 1;
	p.q_len = p.total_q = 20;
	fa_problem_set_strides(&p);
	cfg.full_limit = 1;
	cfg.rows = 300; /* of 320 */
	FA_REQUIRE(fa_check_select_rows(&p, &cfg, seed, &r1, &n1, &err) == FA_OK);
	FA_CHECK(n1 == 300 && r1[0] == 0 && r1[n1 - 1] == 319);
	for (int64_t i = 1; i < n1; i++)
		FA_CHECK(r1[i] > r1[i - 1]);
	free(r1);
	cfg.rows = 1000; /* more than there are: all of them */
	FA_REQUIRE(fa_check_select_rows(&p, &cfg, seed, &r1, &n1, &err) == FA_OK);
	FA_CHECK(n1 == 320);
	free(r1);
}

/* A small varlen bhsd problem with data, its full reference and an output
 * that is the reference rounded to the dtype. */
struct planted {
	struct fa_problem p;
	int32_t cu_q[4], cu_k[4];
	void *q, *k, *v, *o;
	struct fa_ref ref;
};

/* Offset of row id T * heads + h in the output. */
static int64_t out_offset(const struct fa_problem *p, int64_t row)
{
	return fa_tensor_offset(p, FA_TENSOR_O, row / p->heads, (int)(row % p->heads));
}

static int make_planted(uint64_t seed, int dtype, struct planted *t)
{
	struct fa_err err;
	int64_t n, *rows;
	size_t es = (size_t)fa_dtype_size(dtype);
	enum fa_rc rc;
	static const int32_t cu_q[4] = {0, 5, 5, 12}, cu_k[4] = {0, 7, 10, 19};
	memset(t, 0, sizeof *t);
	t->p = (struct fa_problem){.batch = 3, .heads = 4, .kv_heads = 2, .q_len = 7, .kv_len = 9,
				   .head_dim = 8, .head_dim_v = 6, .dtype = dtype,
				   .mask = FA_MASK_CAUSAL, .layout = FA_LAYOUT_BHSD, .varlen = 1,
				   .total_q = 12, .total_k = 19, .scale = 0.35f};
	memcpy(t->cu_q, cu_q, sizeof cu_q);
	memcpy(t->cu_k, cu_k, sizeof cu_k);
	fa_problem_set_strides(&t->p);
	t->q = malloc(es * (size_t)fa_tensor_elems(&t->p, FA_TENSOR_Q));
	t->k = malloc(es * (size_t)fa_tensor_elems(&t->p, FA_TENSOR_K));
	t->v = malloc(es * (size_t)fa_tensor_elems(&t->p, FA_TENSOR_V));
	t->o = malloc(es * (size_t)fa_tensor_elems(&t->p, FA_TENSOR_O));
	n = (int64_t)t->p.total_q * t->p.heads;
	rows = malloc(sizeof *rows * (size_t)n);
	if (!t->q || !t->k || !t->v || !t->o || !rows)
		return 0;
	fa_data_fill(&t->p, FA_TENSOR_Q, FA_DIST_NORMAL, seed, t->q, 1);
	fa_data_fill(&t->p, FA_TENSOR_K, FA_DIST_NORMAL, seed, t->k, 1);
	fa_data_fill(&t->p, FA_TENSOR_V, FA_DIST_NORMAL, seed, t->v, 1);
	for (int64_t i = 0; i < n; i++)
		rows[i] = i;
	fa_err_clear(&err);
	rc = fa_ref_compute(&t->p, t->cu_q, t->cu_k, NULL, t->q, t->k, t->v, rows, n, 1, 2, NULL,
			    &t->ref, &err);
	free(rows);
	if (rc != FA_OK)
		return 0;
	/* the output the reference's row order describes: row id T * heads + h */
	for (int64_t i = 0; i < n; i++) {
		int64_t off = out_offset(&t->p, i);
		for (int d = 0; d < t->p.head_dim_v; d++)
			fa_store_f32(t->o, dtype, off + d,
				     (float)t->ref.out[i * t->p.head_dim_v + d]);
	}
	return 1;
}

static void free_planted(struct planted *t)
{
	free(t->q);
	free(t->k);
	free(t->v);
	free(t->o);
	fa_ref_free(&t->ref);
}

FA_TEST(check, planted_error_is_found)
{
	uint64_t seed = fa_test_seed();
	for (int dtype = 0; dtype < FA_DTYPE_COUNT; dtype++) {
		struct planted t;
		struct fa_check_cfg cfg;
		struct fa_err_stats st;
		char rule[64], reason[256];
		/* sequence 2 (the third), token 4 of it (packed 9), head 3, dim 2 */
		int64_t off, row = 9 * 4 + 3;
		float r;
		FA_REQUIRE(make_planted(seed, dtype, &t));
		off = fa_o_offset(&t.p, t.cu_q, 2, 4, 3) + 2;
		fa_check_defaults(&cfg);
		FA_CHECK(fa_check_compare(&t.p, t.cu_q, t.o, &t.ref, &cfg, &st, rule, sizeof rule,
					  reason, sizeof reason) == FA_VERDICT_PASS);
		FA_CHECK(strcmp(rule, "tolerance") == 0 && reason[0] == '\0');
		FA_CHECK(st.rows_checked == 48 && st.elems_checked == 48 * 6);
		FA_CHECK(st.max_abs <= cfg.tol[dtype].max_abs && st.unwritten == 0);

		r = (float)t.ref.out[row * 6 + 2];
		fa_store_f32(t.o, dtype, off, r + 3 * (float)cfg.tol[dtype].max_abs);
		FA_CHECK(fa_check_compare(&t.p, t.cu_q, t.o, &t.ref, &cfg, &st, rule, sizeof rule,
					  reason, sizeof reason) == FA_VERDICT_FAIL);
		FA_CHECKF(st.worst_index == off, "worst %lld, planted %lld",
			  (long long)st.worst_index, (long long)off);
		FA_CHECK(st.worst_ref == t.ref.out[row * 6 + 2]);
		FA_CHECK(st.worst_out == fa_load_f32(t.o, dtype, off));
		FA_CHECKF(strstr(reason, "max_abs ") == reason &&
				  strstr(reason, "at b=2 t=4 h=3 d=2 (out "),
			  "reason: %s", reason);
		free_planted(&t);
	}
}

FA_TEST(check, nan_inf_and_unwritten_counted_apart)
{
	uint64_t seed = fa_test_seed();
	struct planted t;
	struct fa_check_cfg cfg;
	struct fa_err_stats st;
	char rule[64], reason[512];
	FA_REQUIRE(make_planted(seed, FA_DTYPE_FP16, &t));
	fa_check_defaults(&cfg);
	/* three NaN, the first at sequence 0 token 1 head 0 dim 5 */
	fa_store_f32(t.o, FA_DTYPE_FP16, fa_o_offset(&t.p, t.cu_q, 0, 1, 0) + 5, nanf(""));
	fa_store_f32(t.o, FA_DTYPE_FP16, fa_o_offset(&t.p, t.cu_q, 2, 0, 1) + 0, -nanf(""));
	fa_store_f32(t.o, FA_DTYPE_FP16, fa_o_offset(&t.p, t.cu_q, 2, 6, 3) + 1, nanf(""));
	FA_CHECK(fa_check_compare(&t.p, t.cu_q, t.o, &t.ref, &cfg, &st, rule, sizeof rule, reason,
				  sizeof reason) == FA_VERDICT_FAIL);
	FA_CHECK(st.nan_count == 3 && st.inf_count == 0 && st.unwritten == 0);
	FA_CHECKF(strcmp(reason, "3 NaN in output, first at b=0 t=1 h=0 d=5") == 0, "reason: %s",
		  reason);
	FA_CHECK(isfinite(st.max_abs) && isfinite(st.rel_l2)); /* stats skip non-finite */

	/* two poisoned elements: unwritten, not NaN, though 0xffff is a NaN */
	memset((uint16_t *)t.o + fa_o_offset(&t.p, t.cu_q, 2, 3, 2) + 4, FA_POISON_BYTE, 4);
	fa_store_f32(t.o, FA_DTYPE_FP16, fa_o_offset(&t.p, t.cu_q, 0, 4, 1), -INFINITY);
	FA_CHECK(fa_check_compare(&t.p, t.cu_q, t.o, &t.ref, &cfg, &st, rule, sizeof rule, reason,
				  sizeof reason) == FA_VERDICT_FAIL);
	FA_CHECK(st.unwritten == 2 && st.nan_count == 3 && st.inf_count == 1);
	FA_CHECKF(strcmp(reason, "2 unwritten elements, first at b=2 t=3 h=2 d=4; "
				 "3 NaN in output, first at b=0 t=1 h=0 d=5; "
				 "1 Inf in output, first at b=0 t=4 h=1 d=0") == 0,
		  "reason: %s", reason);
	free_planted(&t);

	/* an output never written at all */
	FA_REQUIRE(make_planted(seed, FA_DTYPE_FP32, &t));
	memset(t.o, FA_POISON_BYTE, sizeof(float) * (size_t)fa_tensor_elems(&t.p, FA_TENSOR_O));
	FA_CHECK(fa_check_compare(&t.p, t.cu_q, t.o, &t.ref, &cfg, &st, rule, sizeof rule, reason,
				  sizeof reason) == FA_VERDICT_FAIL);
	FA_CHECK(st.unwritten == 12 * 4 * 6 && st.nan_count == 0);
	FA_CHECK(strstr(reason, "288 unwritten elements, first at b=0 t=0 h=0 d=0") == reason);
	/* nothing finite to measure: the error is unknown (NaN, stored NULL),
	 * not 0 */
	FA_CHECK(isnan(st.max_abs) && isnan(st.rel_l2) && isnan(st.mean_abs));
	free_planted(&t);

	/* an output all NaN: the same */
	FA_REQUIRE(make_planted(seed, FA_DTYPE_FP32, &t));
	for (int64_t i = 0; i < fa_tensor_elems(&t.p, FA_TENSOR_O); i++)
		((float *)t.o)[i] = nanf("");
	FA_CHECK(fa_check_compare(&t.p, t.cu_q, t.o, &t.ref, &cfg, &st, rule, sizeof rule, reason,
				  sizeof reason) == FA_VERDICT_FAIL);
	FA_CHECK(st.nan_count == 12 * 4 * 6 && isnan(st.max_abs) && isnan(st.rel_l2));
	free_planted(&t);
}

FA_TEST(check, fa_rule_scales_with_same_precision_error)
{
	uint64_t seed = fa_test_seed();
	struct planted t;
	struct fa_check_cfg cfg;
	struct fa_err_stats st;
	char rule[64], reason[256];
	FA_REQUIRE(make_planted(seed, FA_DTYPE_BF16, &t));
	fa_check_defaults(&cfg);
	cfg.rule = FA_RULE_FA;
	/* error like the input-precision computation's: pass */
	for (int64_t i = 0; i < t.ref.n_rows; i++) {
		int64_t off = out_offset(&t.p, t.ref.rows[i]);
		for (int d = 0; d < 6; d++)
			fa_store_f32(t.o, FA_DTYPE_BF16, off + d, t.ref.same[i * 6 + d]);
	}
	FA_CHECK(fa_check_compare(&t.p, t.cu_q, t.o, &t.ref, &cfg, &st, rule, sizeof rule, reason,
				  sizeof reason) == FA_VERDICT_PASS);
	FA_CHECK(strcmp(rule, "fa") == 0);
	FA_CHECK(st.same_max_abs > 0 && st.max_abs <= st.same_max_abs);
	/* ten times that error: fail */
	for (int64_t i = 0; i < t.ref.n_rows; i++) {
		int64_t off = out_offset(&t.p, t.ref.rows[i]);
		for (int d = 0; d < 6; d++) {
			double r = t.ref.out[i * 6 + d], s = t.ref.same[i * 6 + d];
			fa_store_f32(t.o, FA_DTYPE_BF16, off + d, (float)(r + 10 * (s - r)));
		}
	}
	FA_CHECK(fa_check_compare(&t.p, t.cu_q, t.o, &t.ref, &cfg, &st, rule, sizeof rule, reason,
				  sizeof reason) == FA_VERDICT_FAIL);
	FA_CHECK(st.max_abs > fa_check_fa_limit(&cfg, FA_DTYPE_BF16).k * st.same_max_abs);
	FA_CHECKF(strstr(reason, "x same-precision") != NULL, "reason: %s", reason);
	/* without the same-precision pass the rule falls back to tolerance and says so */
	free(t.ref.same);
	t.ref.same = NULL;
	if (fa_check_compare(&t.p, t.cu_q, t.o, &t.ref, &cfg, &st, rule, sizeof rule, reason,
			     sizeof reason) == FA_VERDICT_FAIL)
		FA_CHECKF(strstr(reason, "no same-precision reference for fa"), "reason: %s", reason);
	FA_CHECK(strcmp(rule, "tolerance (fa)") == 0);
	FA_CHECK(st.same_max_abs == -1);
	free_planted(&t);
}

FA_TEST(check, stats_by_hand)
{
	/* 2 rows of 2 dims, fp32, bshd: ref (1, -2), (0.5, 0); out (1.5, -2), (0.5, 0.001) */
	struct fa_problem p = {.batch = 1, .heads = 1, .kv_heads = 1, .q_len = 2, .kv_len = 1,
			       .head_dim = 1, .head_dim_v = 2, .dtype = FA_DTYPE_FP32, .total_q = 2,
			       .total_k = 1, .scale = 1};
	int64_t rows[2] = {0, 1};
	double out[4] = {1, -2, 0.5, 0};
	float same[4] = {1, -2, 0.5f, 0.25f};
	float o[4] = {1.5f, -2, 0.5f, 0.001f};
	struct fa_ref ref = {.n_rows = 2, .rows = rows, .out = out, .same = same};
	struct fa_check_cfg cfg;
	struct fa_err_stats st;
	char rule[32], reason[256];
	double e4 = (double)0.001f;
	fa_problem_set_strides(&p);
	fa_check_defaults(&cfg);
	FA_CHECK(fa_check_compare(&p, NULL, o, &ref, &cfg, &st, rule, sizeof rule, reason,
				  sizeof reason) == FA_VERDICT_FAIL);
	FA_CHECK_NEAR(st.max_abs, 0.5, 0);
	FA_CHECK(st.worst_index == 0 && st.worst_out == 1.5 && st.worst_ref == 1);
	FA_CHECK_NEAR(st.max_rel, e4 / 1e-3, 1e-12); /* 0.001 / max(0, rel_floor) beats 0.5 / 1 */
	FA_CHECK_NEAR(st.mean_abs, (0.5 + e4) / 4, 1e-15);
	FA_CHECK_NEAR(st.nmse, (0.25 + e4 * e4) / 5.25, 1e-15);
	FA_CHECK_NEAR(st.rel_l2, sqrt((0.25 + e4 * e4) / 5.25), 1e-15);
	FA_CHECK_NEAR(st.same_max_abs, 0.25, 0);
	FA_CHECK(st.rows_checked == 2 && st.elems_checked == 4);
	FA_CHECK(st.nan_count == 0 && st.inf_count == 0 && st.unwritten == 0);
	FA_CHECKF(strcmp(reason, "max_abs 0.5 > 0.001 at b=0 t=0 h=0 d=0 (out 1.5, ref 1); "
				 "rel_l2 0.2182 > 0.0001") == 0,
		  "reason: %s", reason);
	/* under the fa rule (fp32: k 3, atol 5e-8, k_l2 1.5, l2_floor 1e-8):
	 * same_max_abs 0.25, same_rel_l2 0.25 / sqrt(5.25) = 0.1091. The worst
	 * element in the second row: 0.3 <= 0.75 and rel_l2 0.1309 <= 0.1637 */
	o[0] = 1;
	o[3] = 0.3f;
	cfg.rule = FA_RULE_FA;
	FA_CHECK(fa_check_compare(&p, NULL, o, &ref, &cfg, &st, rule, sizeof rule, reason,
				  sizeof reason) == FA_VERDICT_PASS);
	FA_CHECK(st.worst_index == 3 && strcmp(rule, "fa") == 0);
	FA_CHECK_NEAR(st.same_rel_l2, 0.25 / sqrt(5.25), 1e-15);
	o[3] = 0.8f;
	FA_CHECK(fa_check_compare(&p, NULL, o, &ref, &cfg, &st, rule, sizeof rule, reason,
				  sizeof reason) == FA_VERDICT_FAIL);
	FA_CHECKF(strcmp(reason, "max_abs 0.8 > 0.75 (3 x same-precision 0.25 + 5e-08) at b=0 t=1 "
				 "h=0 d=1 (out 0.8, ref 0); rel_l2 0.3491 > 0.1637 (1.5 x "
				 "same-precision 0.1091 + 1e-08)") == 0,
		  "reason: %s", reason);
	/* an error spread over every element, none large: only rel_l2 sees it */
	o[0] = 1.2f;
	o[1] = -2.2f;
	o[2] = 0.7f;
	o[3] = 0.2f;
	FA_CHECK(fa_check_compare(&p, NULL, o, &ref, &cfg, &st, rule, sizeof rule, reason,
				  sizeof reason) == FA_VERDICT_FAIL);
	FA_CHECKF(strcmp(reason, "rel_l2 0.1746 > 0.1637 (1.5 x same-precision 0.1091 + 1e-08)") == 0,
		  "reason: %s", reason);
	/* the suite's fa_k / fa_atol replace the dtype's k and atol, not k_l2 */
	o[0] = 1;
	o[1] = -2;
	o[2] = 0.5f;
	o[3] = 0.3f;
	cfg.fa_k = 1;
	cfg.fa_atol = 0.01;
	FA_CHECK(fa_check_compare(&p, NULL, o, &ref, &cfg, &st, rule, sizeof rule, reason,
				  sizeof reason) == FA_VERDICT_FAIL);
	FA_CHECKF(strcmp(reason, "max_abs 0.3 > 0.26 (1 x same-precision 0.25 + 0.01) at b=0 t=1 "
				 "h=0 d=1 (out 0.3, ref 0)") == 0,
		  "reason: %s", reason);
}

/* A flash kernel in bf16 as cuda_flash_mma computes it: key tiles of 64,
 * fp32 scores, a running max moved lazily (only when a tile's max passes it
 * by more than e^5.545 = 2^8, so P may reach 256), P rounded to bf16 for
 * P V, the row sum of the unrounded P, O = acc * (1 / l) rounded to bf16.
 * scale_mul 1 is a correct kernel; 1.004 has a 0.4% softmax scale error.
 * bshd, no varlen; masks none and causal. */
static void emulate_lazy_flash_bf16(const struct fa_problem *p, const void *q, const void *k,
				    const void *v, void *o, float scale_mul)
{
	const int group = p->heads / p->kv_heads, dk = p->head_dim, dv = p->head_dim_v;
	float *s = malloc(sizeof(float) * 64), *acc = malloc(sizeof(float) * (size_t)dv);
	for (int b = 0; s && acc && b < p->batch; b++)
		for (int h = 0; h < p->heads; h++)
			for (int32_t i = 0; i < p->q_len; i++) {
				int32_t lo, hi;
				float m = -INFINITY, l = 0;
				int64_t qo = fa_q_offset(p, NULL, b, i, h);
				fa_mask_range(p->mask, i, p->q_len, p->kv_len, p->window, &lo, &hi);
				memset(acc, 0, sizeof(float) * (size_t)dv);
				for (int32_t j0 = lo - lo % 64; j0 < hi; j0 += 64) {
					int32_t n = hi - j0 < 64 ? hi - j0 : 64;
					float mt = -INFINITY;
					for (int32_t j = 0; j < n; j++) {
						int64_t ko = fa_k_offset(p, NULL, b, j0 + j, h / group);
						float dot = 0;
						for (int d = 0; d < dk; d++)
							dot += fa_load_f32(q, p->dtype, qo + d) *
							       fa_load_f32(k, p->dtype, ko + d);
						s[j] = j0 + j < lo ? -INFINITY : dot * p->scale * scale_mul;
						mt = s[j] > mt ? s[j] : mt;
					}
					if (mt > m + 5.545f) {
						float alpha = expf(m - mt);
						l *= alpha;
						for (int d = 0; d < dv; d++)
							acc[d] *= alpha;
						m = mt;
					}
					for (int32_t j = 0; j < n; j++) {
						int64_t vo = fa_v_offset(p, NULL, b, j0 + j, h / group);
						float e = expf(s[j] - m), pr = fa_round_to_dtype(e, p->dtype);
						l += e;
						for (int d = 0; d < dv; d++)
							acc[d] += pr * fa_load_f32(v, p->dtype, vo + d);
					}
				}
				for (int d = 0; d < dv; d++)
					fa_store_f32(o, p->dtype, fa_o_offset(p, NULL, b, i, h) + d,
						     l > 0 ? acc[d] * (1.0f / l) : 0.0f);
			}
	free(s);
	free(acc);
}

/* The fa rule's bf16 factor separates a correct tensor-core-style kernel
 * (the least exact kind: lazy rescaling) from one with a 0.4% softmax scale
 * error, which the tolerance rule passes, on several shapes. */
FA_TEST(check, fa_rule_bf16_catches_scale_error)
{
	static const struct {
		int heads, kv_heads, q_len, kv_len, head_dim, mask;
	} shapes[] = {
		{4, 4, 203, 203, 64, FA_MASK_NONE},     {4, 4, 203, 203, 128, FA_MASK_NONE},
		{8, 2, 113, 203, 128, FA_MASK_NONE},    {8, 2, 113, 203, 128, FA_MASK_CAUSAL},
		{4, 4, 203, 1025, 128, FA_MASK_CAUSAL}, {4, 4, 203, 203, 80, FA_MASK_NONE},
	};
	uint64_t seed = fa_test_seed();
	for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
		struct fa_problem p = {.batch = 1, .heads = shapes[si].heads,
				       .kv_heads = shapes[si].kv_heads, .q_len = shapes[si].q_len,
				       .kv_len = shapes[si].kv_len, .head_dim = shapes[si].head_dim,
				       .head_dim_v = shapes[si].head_dim, .dtype = FA_DTYPE_BF16,
				       .mask = shapes[si].mask};
		struct fa_check_cfg cfg;
		struct fa_err_stats st;
		struct fa_ref ref;
		struct fa_err err;
		char rule[32], reason[256];
		int64_t *rows = NULL, n = 0;
		void *buf[4];
		double ratio_ok, ratio_bad, l2_ok, l2_bad;
		int verdict_ok, verdict_bad, tol_bad;
		p.total_q = p.q_len;
		p.total_k = p.kv_len;
		p.scale = 1.0f / sqrtf((float)p.head_dim);
		fa_problem_set_strides(&p);
		fa_check_defaults(&cfg);
		fa_err_clear(&err);
		for (int t = 0; t < 4; t++) {
			buf[t] = malloc(2 * (size_t)fa_tensor_elems(&p, t));
			FA_REQUIRE(buf[t]);
			if (t == FA_TENSOR_O)
				continue;
			for (int64_t e = 0; e < fa_tensor_elems(&p, t); e++)
				fa_store_f32(buf[t], p.dtype, e,
					     fa_rng_value(seed + si, t, FA_DIST_NORMAL, (uint64_t)e,
							  t == FA_TENSOR_V ? p.head_dim_v : p.head_dim));
		}
		FA_REQUIRE(fa_check_select_rows(&p, &cfg, seed, &rows, &n, &err) == FA_OK);
		FA_REQUIRE(fa_ref_compute(&p, NULL, NULL, NULL, buf[FA_TENSOR_Q], buf[FA_TENSOR_K],
					  buf[FA_TENSOR_V], rows, n, 1, 0, NULL, &ref, &err) == FA_OK);
		cfg.rule = FA_RULE_FA;
		emulate_lazy_flash_bf16(&p, buf[FA_TENSOR_Q], buf[FA_TENSOR_K], buf[FA_TENSOR_V],
					buf[FA_TENSOR_O], 1.0f);
		verdict_ok = fa_check_compare(&p, NULL, buf[FA_TENSOR_O], &ref, &cfg, &st, rule,
					      sizeof rule, reason, sizeof reason);
		ratio_ok = st.max_abs / st.same_max_abs;
		l2_ok = st.rel_l2 / st.same_rel_l2;
		emulate_lazy_flash_bf16(&p, buf[FA_TENSOR_Q], buf[FA_TENSOR_K], buf[FA_TENSOR_V],
					buf[FA_TENSOR_O], 1.004f);
		verdict_bad = fa_check_compare(&p, NULL, buf[FA_TENSOR_O], &ref, &cfg, &st, rule,
					       sizeof rule, reason, sizeof reason);
		ratio_bad = st.max_abs / st.same_max_abs;
		l2_bad = st.rel_l2 / st.same_rel_l2;
		cfg.rule = FA_RULE_TOLERANCE;
		tol_bad = fa_check_compare(&p, NULL, buf[FA_TENSOR_O], &ref, &cfg, &st, rule,
					   sizeof rule, reason, sizeof reason);
		/* max_abs and rel_l2 in units of the same-precision ones */
		FA_CHECKF(verdict_ok == FA_VERDICT_PASS,
			  "shape %zu: a correct kernel fails at %.2fx / %.2fx", si, ratio_ok, l2_ok);
		FA_CHECKF(verdict_bad == FA_VERDICT_FAIL,
			  "shape %zu: a 0.4%% scale error passes at %.2fx / %.2fx", si, ratio_bad,
			  l2_bad);
		FA_CHECK(tol_bad == FA_VERDICT_PASS); /* what the fa rule is for */
		fa_ref_free(&ref);
		free(rows);
		for (int t = 0; t < 4; t++)
			free(buf[t]);
	}
}
