/* check.c - error statistics of a kernel's output against the reference and
 * the pass/fail verdict: which rows to check, NaN/Inf/unwritten counts over
 * the whole output, error norms over the reference rows, and the tolerance
 * or flash-attention rule with a reason that names the worst element.
 */
#include "check.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "../../kernels/common/fa_dtype.h"
#include "../../kernels/common/fa_rng.h"
#include "../../reference/ref.h"

void fa_check_defaults(struct fa_check_cfg *cfg)
{
	memset(cfg, 0, sizeof *cfg);
	cfg->rule = FA_RULE_TOLERANCE;
	cfg->reference = FA_REF_AUTO;
	cfg->rows = 256;
	cfg->full_limit = 268435456.0; /* 2^28 multiply-adds: about a second of the CPU reference */
	cfg->fa_k = 0;     /* unset: the dtype's k below */
	cfg->fa_atol = -1; /* unset: the dtype's atol below */
	cfg->rel_floor = 1e-3;
	/* The fa rule per dtype, in units of the same attention computed in
	 * the input precision (reference/ref.h): max_abs <= k x its max_abs +
	 * atol (flash-attention's own tests use k = 2) and rel_l2 <= k_l2 x
	 * its rel_l2 + l2_floor. Measured over suites/conformance.yaml
	 * (docs/suites.md#the-fa-rule): a correct kernel that rescales lazily
	 * as cuda_flash_mma does (P up to 2^8, so its dominant P is rounded
	 * too), emulated by cpu_flash with P rounded, reached max_abs 2.16x in
	 * bf16 and 1.78x in fp16 but rel_l2 only 1.14x and 1.22x; the fp32-P
	 * CPU kernels at most 1.00x (fp32 over smoke: 1.13x). The max of a
	 * few hundred rounding errors is noisy, their norm is not: a 0.4%
	 * softmax scale error gives max_abs 0.76x-6.0x but rel_l2 above 1.5x
	 * in 133 of 137 bf16 cases (fp16: 3.3x-23x). So k = 3 (2.5 in fp16,
	 * whose worst correct case is lower) guards against a large error in
	 * a few elements, and k_l2 = 1.5 catches a small error everywhere.
	 * atol and l2_floor, about 1/8 of the smallest same-precision errors
	 * seen (max_abs 7.7e-4 bf16, 1.9e-4 fp16, 4.6e-7 fp32), only matter
	 * where the input precision is exact (a single key). */
	cfg->fa[FA_DTYPE_FP32] =
		(struct fa_fa_limit){.k = 3.0, .atol = 5e-8, .k_l2 = 1.5, .l2_floor = 1e-8};
	cfg->fa[FA_DTYPE_FP16] =
		(struct fa_fa_limit){.k = 2.5, .atol = 2e-5, .k_l2 = 1.5, .l2_floor = 1e-5};
	cfg->fa[FA_DTYPE_BF16] =
		(struct fa_fa_limit){.k = 3.0, .atol = 1e-4, .k_l2 = 1.5, .l2_floor = 1e-4};
	/* Per-dtype limits, measured against correct kernels (cpu_dense,
	 * cpu_flash, and an FA2 emulation that rounds P to the dtype as GPU
	 * kernels do) at head_dim 64/128, kv_len 1k..32k, normal and outlier
	 * inputs. Outlier inputs make outputs up to max|v| = 8 * 3.46 = 27.7
	 * (a row dominated by one key whose V row is an outlier): there half an
	 * ulp of output rounding alone is 0.0078 in fp16 and 0.0625 in bf16, so
	 * max_abs is one ulp at 16..32 (half for the rounding, half for the
	 * kernel); rel_l2, dominated by the many ordinary elements, is the
	 * sensitive test. Worst seen: fp16 max_abs 7.1e-3, rel_l2 2.9e-4;
	 * bf16 4.8e-2, 2.3e-3.
	 * fp32: scores of two outlier tokens reach |s| ~ 190 and a sequential
	 * fp32 sum over 32k keys swamps small terms, so a correct fp32 kernel
	 * is off by up to 7e-5 relative: worst seen max_abs 2.6e-4, rel_l2
	 * 1.2e-5 (the naive path at kv_len 32k), over the 1e-4 / 1e-5 first
	 * proposed. TF32-like 10-bit intermediates give rel_l2 4e-4 and still
	 * fail. */
	cfg->tol[FA_DTYPE_FP32] = (struct fa_tol){.max_abs = 1e-3, .rel_l2 = 1e-4};
	cfg->tol[FA_DTYPE_FP16] = (struct fa_tol){.max_abs = 1.5625e-2, .rel_l2 = 2e-3};
	cfg->tol[FA_DTYPE_BF16] = (struct fa_tol){.max_abs = 1.25e-1, .rel_l2 = 1.6e-2};
}

struct fa_fa_limit fa_check_fa_limit(const struct fa_check_cfg *cfg, int dtype)
{
	struct fa_fa_limit f = cfg->fa[dtype >= 0 && dtype < FA_DTYPE_COUNT ? dtype : 0];
	if (cfg->fa_k > 0)
		f.k = cfg->fa_k;
	if (cfg->fa_atol >= 0)
		f.atol = cfg->fa_atol;
	return f;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

/* Sorts a[0..n) and drops repeats; returns the new count. */
static int64_t sort_unique(int64_t *a, int64_t n)
{
	int64_t m = 0;
	qsort(a, (size_t)n, sizeof *a, cmp_i64);
	for (int64_t i = 0; i < n; i++)
		if (m == 0 || a[i] != a[m - 1])
			a[m++] = a[i];
	return m;
}

enum fa_rc fa_check_select_rows(const struct fa_problem *p, const struct fa_check_cfg *cfg,
				uint64_t seed, int64_t **rows, int64_t *n, struct fa_err *err)
{
	int64_t total = (int64_t)p->total_q * p->heads, want, have = 0;
	double cost = (double)p->total_q * p->heads * p->kv_len *
		      ((double)p->head_dim + p->head_dim_v);
	uint64_t counter = 0;
	int64_t *r;

	*rows = NULL;
	*n = 0;
	if (total <= 0)
		return FA_OK;
	want = cfg->rows < 2 ? 2 : cfg->rows; /* room for the first and last row */
	if (cost <= cfg->full_limit || want >= total)
		want = total;
	r = malloc(sizeof *r * (size_t)want);
	if (!r)
		return fa_err_set(err, FA_ERR_NOMEM, "out of memory for %lld check rows",
				  (long long)want);
	if (want == total) {
		for (int64_t i = 0; i < total; i++)
			r[i] = i;
		*rows = r;
		*n = total;
		return FA_OK;
	}
	r[have++] = 0;
	r[have++] = total - 1;
	/* draw until `want` distinct rows; repeats are rare since want < total */
	while (have < want) {
		while (have < want)
			r[have++] = (int64_t)(fa_rng_bits(seed, FA_RNG_STREAM_ROWS, counter++) %
					      (uint64_t)total);
		have = sort_unique(r, have);
	}
	*rows = r;
	*n = want;
	return FA_OK;
}

/* Sequence and position of packed token T of a tensor whose sequences
 * hold len tokens (cu: their starts when varlen). */
static void locate_token(const struct fa_problem *p, const int32_t *cu, int32_t len, int64_t T,
			 int *b, int32_t *t)
{
	int lo = 0, hi = p->batch - 1;
	if (!p->varlen) {
		*b = (int)(T / len);
		*t = (int32_t)(T % len);
		return;
	}
	while (lo < hi) {
		int mid = lo + (hi - lo + 1) / 2;
		if (cu[mid] <= T)
			lo = mid;
		else
			hi = mid - 1;
	}
	*b = lo;
	*t = (int32_t)(T - cu[lo]);
}

/* "b=0 t=5 h=2 d=17" for packed token T, head h, dim d of a query-side
 * tensor (cu = cu_seqlens_q, len = q_len) or a key-side one. */
static void format_where(const struct fa_problem *p, const int32_t *cu, int32_t len, int64_t T,
			 int h, int d, char *buf, size_t size)
{
	int b;
	int32_t t;
	locate_token(p, cu, len, T, &b, &t);
	snprintf(buf, size, "b=%d t=%d h=%d d=%d", b, t, h, d);
}

/* Appends to a reason, "; " between parts; silently truncates. */
static void append(char *buf, size_t size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void append(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;
	size_t len;
	if (!buf || size == 0)
		return;
	len = strnlen(buf, size);
	if (len > 0 && len + 2 < size) {
		memcpy(buf + len, "; ", 3);
		len += 2;
	}
	if (len + 1 >= size)
		return;
	va_start(ap, fmt);
	vsnprintf(buf + len, size - len, fmt, ap);
	va_end(ap);
}

struct first_bad {
	int64_t count, T;
	int h, d;
};

static void note_bad(struct first_bad *f, int64_t T, int h, int d)
{
	if (f->count++ == 0) {
		f->T = T;
		f->h = h;
		f->d = d;
	}
}

int fa_check_compare_tensor(const struct fa_problem *p, const int32_t *cu_seqlens_q,
			    const int32_t *cu_seqlens_k, int tensor, const void *o,
			    const int64_t *rows, int64_t n_rows, const double *ref_out,
			    const float *ref_same, const struct fa_check_cfg *cfg,
			    struct fa_err_stats *st, char *rule, size_t rule_size, char *reason,
			    size_t reason_size)
{
	const int dt = p->dtype;
	const int grad = tensor == FA_TENSOR_DQ || tensor == FA_TENSOR_DK || tensor == FA_TENSOR_DV;
	const int kside = tensor == FA_TENSOR_K || tensor == FA_TENSOR_V || tensor == FA_TENSOR_DK ||
			  tensor == FA_TENSOR_DV;
	const int32_t *cu = kside ? cu_seqlens_k : cu_seqlens_q;
	const int32_t len = kside ? p->kv_len : p->q_len;
	int64_t tokens;
	int32_t heads, dv;
	double ref_max = 0;
	struct {
		const int64_t *rows;
		int64_t n_rows;
		const double *out;
		const float *same;
	} refv = {rows, n_rows, ref_out, ref_same}, *ref = &refv;
	struct first_bad unwritten = {0}, nan = {0}, inf = {0};
	double sum_abs = 0, sum_e2 = 0, sum_r2 = 0, same_e2 = 0, same_r2 = 0, norm_r2;
	int64_t finite = 0, worst_T = 0;
	int worst_h = 0, worst_d = 0, use_fa;
	const struct fa_tol *tol = &cfg->tol[dt >= 0 && dt < FA_DTYPE_COUNT ? dt : 0];
	char where[96];

	fa_tensor_shape(p, tensor, &tokens, &heads, &dv);
	memset(st, 0, sizeof *st);
	st->same_max_abs = -1;
	st->same_rel_l2 = -1;
	st->worst_index = -1;
	if (reason && reason_size)
		reason[0] = '\0';

	/* the whole output: a poison element is unwritten, not NaN */
	for (int64_t T = 0; T < tokens; T++)
		for (int h = 0; h < heads; h++) {
			int64_t off = fa_tensor_offset(p, tensor, T, h);
			for (int d = 0; d < dv; d++) {
				float x;
				if (fa_is_poison(o, dt, off + d)) {
					note_bad(&unwritten, T, h, d);
					continue;
				}
				x = fa_load_f32(o, dt, off + d);
				if (isnan(x))
					note_bad(&nan, T, h, d);
				else if (isinf(x))
					note_bad(&inf, T, h, d);
			}
		}
	st->unwritten = unwritten.count;
	st->nan_count = nan.count;
	st->inf_count = inf.count;

	/* the reference rows; non-finite outputs are counted above, not here */
	if (ref->same)
		st->same_max_abs = 0;
	for (int64_t i = 0; i < ref->n_rows; i++) {
		int64_t T = ref->rows[i] / heads;
		int h = (int)(ref->rows[i] % heads);
		int64_t off = fa_tensor_offset(p, tensor, T, h);
		for (int d = 0; d < dv; d++) {
			double r = ref->out[i * dv + d], x, e, rel;
			ref_max = fabs(r) > ref_max ? fabs(r) : ref_max;
			if (ref->same) {
				double se = fabs((double)ref->same[i * dv + d] - r);
				if (se > st->same_max_abs)
					st->same_max_abs = se;
				same_e2 += se * se;
				same_r2 += r * r;
			}
			if (fa_is_poison(o, dt, off + d))
				continue;
			x = fa_load_f32(o, dt, off + d);
			if (!isfinite(x))
				continue;
			e = fabs(x - r);
			rel = e / fmax(fabs(r), cfg->rel_floor);
			finite++;
			sum_abs += e;
			sum_e2 += e * e;
			sum_r2 += r * r;
			if (rel > st->max_rel)
				st->max_rel = rel;
			if (e > st->max_abs || st->worst_index < 0) {
				st->max_abs = e;
				st->worst_index = off + d;
				st->worst_out = x;
				st->worst_ref = r;
				worst_T = T;
				worst_h = h;
				worst_d = d;
			}
		}
	}
	st->rows_checked = ref->n_rows;
	st->elems_checked = ref->n_rows * dv;
	st->mean_abs = finite ? sum_abs / (double)finite : 0;
	if (finite == 0 && st->elems_checked > 0) {
		/* every checked element NaN, Inf or unwritten: no error was
		 * measured, which reads as unknown, not as 0 (the counts say why) */
		st->max_abs = st->max_rel = st->mean_abs = NAN;
		sum_e2 = NAN;
	}
	/* an all-zero reference (every checked row attends no key): relative to 1 */
	norm_r2 = sum_r2 > 0 ? sum_r2 : 1.0;
	st->rel_l2 = sqrt(sum_e2 / norm_r2);
	st->nmse = sum_e2 / norm_r2;
	if (ref->same) /* over every reference element: the same pass has no gaps */
		st->same_rel_l2 = sqrt(same_e2 / (same_r2 > 0 ? same_r2 : 1.0));

	use_fa = cfg->rule == FA_RULE_FA && ref->same;
	/* "tolerance (fa)": fa was asked for, but the reference has no
	 * same-precision pass (a GPU reference); fits store.h's rule[16] */
	if (rule && rule_size)
		snprintf(rule, rule_size, "%s",
			 use_fa ? "fa" : cfg->rule == FA_RULE_FA ? "tolerance (fa)" : "tolerance");

	if (unwritten.count || nan.count || inf.count) {
		if (unwritten.count) {
			format_where(p, cu, len, unwritten.T, unwritten.h, unwritten.d, where,
				     sizeof where);
			append(reason, reason_size, "%lld unwritten element%s, first at %s",
			       (long long)unwritten.count, unwritten.count == 1 ? "" : "s", where);
		}
		if (nan.count) {
			format_where(p, cu, len, nan.T, nan.h, nan.d, where, sizeof where);
			append(reason, reason_size, "%lld NaN in output, first at %s",
			       (long long)nan.count, where);
		}
		if (inf.count) {
			format_where(p, cu, len, inf.T, inf.h, inf.d, where, sizeof where);
			append(reason, reason_size, "%lld Inf in output, first at %s",
			       (long long)inf.count, where);
		}
		return FA_VERDICT_FAIL;
	}

	format_where(p, cu, len, worst_T, worst_h, worst_d, where, sizeof where);
	if (use_fa) {
		struct fa_fa_limit f = fa_check_fa_limit(cfg, dt);
		if (grad && !(cfg->fa_k > 0))
			f.k = FA_CHECK_GRAD_K;
		/* and the same factor for rel_l2: over the few hundred elements
		 * of a small case a correct bf16 dQ reached 1.7x the
		 * same-precision rel_l2 (the pass rounds dS to the dtype, the CPU
		 * kernels keep it in fp32); the mutants' errors are 10x-1000x */
		if (grad)
			f.k_l2 = FA_CHECK_GRAD_K;
		/* a backward recomputes P = exp(s - lse) with a summation order
		 * of q.k other than its forward's: in fp32 s is off by an ulp of
		 * |s|, so P and every gradient by |s| units of roundoff relative
		 * (|s| reaches ~190 between outlier tokens), where the
		 * input-precision pass, which recomputes its own lse exactly, has
		 * no such error (a single key: P is 1 there). Measured on random
		 * problems of tests/test_bwd.c: cpu_flash_bwd dV max_abs 8.3e-6 at
		 * |dV| 4.5 against a same-precision 2.1e-6, rel_l2 up to 1.7e-6
		 * against 2.0e-7. */
		if (grad && dt == FA_DTYPE_FP32) {
			if (f.l2_floor < FA_CHECK_GRAD_FP32_L2_FLOOR)
				f.l2_floor = FA_CHECK_GRAD_FP32_L2_FLOOR;
			f.atol += FA_CHECK_GRAD_FP32_REL_ATOL * ref_max;
		}
		double limit = f.k * st->same_max_abs + f.atol;
		double limit_l2 = f.k_l2 * st->same_rel_l2 + f.l2_floor;
		if (st->max_abs <= limit && st->rel_l2 <= limit_l2)
			return FA_VERDICT_PASS;
		if (st->max_abs > limit)
			append(reason, reason_size,
			       "max_abs %.4g > %.4g (%g x same-precision %.4g + %g) at %s "
			       "(out %.6g, ref %.6g)",
			       st->max_abs, limit, f.k, st->same_max_abs, f.atol, where,
			       st->worst_out, st->worst_ref);
		if (st->rel_l2 > limit_l2)
			append(reason, reason_size,
			       "rel_l2 %.4g > %.4g (%g x same-precision %.4g + %g)", st->rel_l2,
			       limit_l2, f.k_l2, st->same_rel_l2, f.l2_floor);
		return FA_VERDICT_FAIL;
	}
	/* gradients are not of unit size like O: their max_abs limit scales
	 * with the largest reference element (at least 1) */
	double max_abs_limit = tol->max_abs * (grad && ref_max > 1 ? ref_max : 1.0);
	/* and their rel_l2 limit is FA_CHECK_GRAD_K times O's: dS = P (dP - D)
	 * cancels, so a correct kernel's gradients are less exact than its O */
	double rel_l2_limit = tol->rel_l2 * (grad ? FA_CHECK_GRAD_K : 1.0);
	if (st->max_abs <= max_abs_limit && st->rel_l2 <= rel_l2_limit)
		return FA_VERDICT_PASS;
	if (st->max_abs > max_abs_limit)
		append(reason, reason_size, "max_abs %.4g > %.4g at %s (out %.6g, ref %.6g)",
		       st->max_abs, max_abs_limit, where, st->worst_out, st->worst_ref);
	if (st->rel_l2 > rel_l2_limit)
		append(reason, reason_size, "rel_l2 %.4g > %.4g", st->rel_l2, rel_l2_limit);
	if (cfg->rule == FA_RULE_FA)
		append(reason, reason_size, "tolerance rule: no same-precision reference for fa");
	return FA_VERDICT_FAIL;
}

int fa_check_compare(const struct fa_problem *p, const int32_t *cu_seqlens_q, const void *o,
		     const struct fa_ref *ref, const struct fa_check_cfg *cfg,
		     struct fa_err_stats *st, char *rule, size_t rule_size, char *reason,
		     size_t reason_size)
{
	return fa_check_compare_tensor(p, cu_seqlens_q, NULL, FA_TENSOR_O, o, ref->rows,
				       ref->n_rows, ref->out, ref->same, cfg, st, rule, rule_size,
				       reason, reason_size);
}

enum fa_rc fa_check_select_kv_rows(const struct fa_problem *p, const int32_t *cu_seqlens_k,
				   const struct fa_check_cfg *cfg, uint64_t seed, int64_t **rows,
				   int64_t *n, struct fa_err *err)
{
	const int64_t total = (int64_t)p->total_k * p->kv_heads;
	/* a key row's gradient costs every query row of its sequence and
	 * group: the whole backward when every key row is checked */
	const double cost = (double)p->total_k * p->heads * p->q_len *
			    ((double)p->head_dim + p->head_dim_v);
	int64_t want = cfg->rows < 3 ? 3 : cfg->rows, have = 0, pair_lo[3], pair_n[3], avail = 0;
	uint64_t counter = 0;
	int64_t *r;
	int n_pairs = 0;

	*rows = NULL;
	*n = 0;
	if (total <= 0)
		return FA_OK;
	if (cost <= cfg->full_limit || want >= total) {
		if (!(r = malloc(sizeof *r * (size_t)total)))
			return fa_err_set(err, FA_ERR_NOMEM, "out of memory for %lld check rows",
					  (long long)total);
		for (int64_t i = 0; i < total; i++)
			r[i] = i;
		*rows = r;
		*n = total;
		return FA_OK;
	}
	/* Up to three (sequence, kv head) pairs: the first sequence with keys
	 * at kv head 0 (the head of every buffer), one drawn, and the last
	 * sequence with keys at the last kv head (the tail of every buffer).
	 * Their key rows are T * kv_heads + kvh for the sequence's tokens T. */
	{
		int b_first = 0, b_last = p->batch - 1, b0, h0, cand[3][2];
		while (b_first < b_last && fa_seq_kv_len(p, cu_seqlens_k, b_first) == 0)
			b_first++;
		while (b_last > 0 && fa_seq_kv_len(p, cu_seqlens_k, b_last) == 0)
			b_last--;
		b0 = (int)(fa_rng_bits(seed, FA_RNG_STREAM_KV_ROWS, counter++) % (uint64_t)p->batch);
		while (b0 > 0 && fa_seq_kv_len(p, cu_seqlens_k, b0) == 0)
			b0--;
		if (fa_seq_kv_len(p, cu_seqlens_k, b0) == 0) /* sequences 0..b0 have no key */
			b0 = b_last;
		h0 = (int)(fa_rng_bits(seed, FA_RNG_STREAM_KV_ROWS, counter++) %
			   (uint64_t)p->kv_heads);
		cand[0][0] = b_first, cand[0][1] = 0;
		cand[1][0] = b0, cand[1][1] = h0;
		cand[2][0] = b_last, cand[2][1] = p->kv_heads - 1;
		for (int i = 0; i < 3; i++) {
			const int64_t lo = fa_seq_kv_start(p, cu_seqlens_k, cand[i][0]) * p->kv_heads +
					   cand[i][1];
			int dup = 0;
			for (int j = 0; j < n_pairs; j++)
				dup |= pair_lo[j] == lo;
			if (dup)
				continue;
			pair_lo[n_pairs] = lo;
			pair_n[n_pairs] = fa_seq_kv_len(p, cu_seqlens_k, cand[i][0]);
			avail += pair_n[n_pairs++];
		}
	}
	if (want > avail)
		want = avail;
	if (!(r = malloc(sizeof *r * (size_t)(want > 3 ? want : 3))))
		return fa_err_set(err, FA_ERR_NOMEM, "out of memory for %lld check rows",
				  (long long)want);
	/* the first key of the first pair and of the drawn one, the last key
	 * of the last: at most the pairs' keys, so at most want once unique */
	r[have++] = pair_lo[0];
	r[have++] = pair_lo[n_pairs > 2 ? 1 : 0];
	r[have++] = pair_lo[n_pairs - 1] + (pair_n[n_pairs - 1] - 1) * p->kv_heads;
	have = sort_unique(r, have);
	while (have < want) {
		while (have < want) {
			uint64_t x = fa_rng_bits(seed, FA_RNG_STREAM_KV_ROWS, counter++);
			int which = (int)((x & 0xff) % (uint64_t)n_pairs);
			int64_t t = (int64_t)((x >> 8) % (uint64_t)pair_n[which]);
			r[have++] = pair_lo[which] + t * p->kv_heads;
		}
		have = sort_unique(r, have);
	}
	*rows = r;
	*n = want;
	return FA_OK;
}
