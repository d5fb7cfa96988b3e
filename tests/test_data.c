/* test_data.c - problem set-up and input generation: strides agree with the
 * addressing helpers and pack every tensor densely in both layouts (varlen
 * or not), the fill is the same for any thread count and either layout, and
 * the FLOP, pair and byte counts match brute-force counting. */
#include <stdlib.h>
#include <string.h>

#include "../harness/run/data.h"
#include "../kernels/common/fa_dtype.h"
#include "../kernels/common/fa_rng.h"
#include "test.h"

#define MAX_BATCH 5

struct tproblem {
	struct fa_problem p;
	int32_t cu_q[MAX_BATCH + 1], cu_k[MAX_BATCH + 1], prefix[MAX_BATCH];
	int use_prefix_lens;
};

static int32_t draw(uint64_t seed, uint64_t *ctr, int32_t lo, int32_t hi)
{
	return lo + (int32_t)(fa_rng_bits(seed, 99, (*ctr)++) % (uint64_t)(hi - lo + 1));
}

/* A random small problem; lengths may be 0 for varlen sequences. */
static void random_problem(uint64_t seed, uint64_t *ctr, int mask, int layout, int varlen,
			   int dtype, struct tproblem *t)
{
	struct fa_problem *p = &t->p;
	static const int32_t groups[] = {1, 2, 4};
	memset(t, 0, sizeof *t);
	p->batch = draw(seed, ctr, 1, MAX_BATCH);
	p->kv_heads = draw(seed, ctr, 1, 3);
	p->heads = p->kv_heads * groups[draw(seed, ctr, 0, 2)];
	p->head_dim = draw(seed, ctr, 1, 9);
	p->head_dim_v = draw(seed, ctr, 1, 9);
	p->dtype = dtype;
	p->mask = mask;
	p->layout = layout;
	p->varlen = varlen;
	p->prefix_len = draw(seed, ctr, 0, 12);
	p->window = draw(seed, ctr, 1, 8);
	p->scale = 0.5f;
	if (varlen) {
		for (int b = 0; b < p->batch; b++) {
			int32_t lq = draw(seed, ctr, 0, 11), lk = draw(seed, ctr, 0, 11);
			t->cu_q[b + 1] = t->cu_q[b] + lq;
			t->cu_k[b + 1] = t->cu_k[b] + lk;
			p->q_len = lq > p->q_len ? lq : p->q_len;
			p->kv_len = lk > p->kv_len ? lk : p->kv_len;
		}
		p->total_q = t->cu_q[p->batch];
		p->total_k = t->cu_k[p->batch];
	} else {
		p->q_len = draw(seed, ctr, 1, 11);
		p->kv_len = draw(seed, ctr, 1, 11);
		p->total_q = p->batch * p->q_len;
		p->total_k = p->batch * p->kv_len;
	}
	t->use_prefix_lens = mask == FA_MASK_PREFIX_LM && draw(seed, ctr, 0, 1);
	for (int b = 0; b < p->batch; b++)
		t->prefix[b] = draw(seed, ctr, 0, 12);
	fa_problem_set_strides(p);
}

static const int32_t *cuq(const struct tproblem *t)
{
	return t->p.varlen ? t->cu_q : NULL;
}

static const int32_t *cuk(const struct tproblem *t)
{
	return t->p.varlen ? t->cu_k : NULL;
}

/* The layouts written out by hand, independent of fa_tensor_offset. */
static int64_t expected_offset(const struct tproblem *t, int tensor, int b, int64_t s, int h)
{
	const struct fa_problem *p = &t->p;
	int qside = tensor == FA_TENSOR_Q || tensor == FA_TENSOR_O;
	int64_t heads = qside ? p->heads : p->kv_heads;
	int64_t dim = tensor == FA_TENSOR_Q || tensor == FA_TENSOR_K ? p->head_dim : p->head_dim_v;
	int64_t len = qside ? p->q_len : p->kv_len, total = qside ? p->total_q : p->total_k;
	int64_t start = p->varlen ? (qside ? t->cu_q[b] : t->cu_k[b]) : (int64_t)b * len;
	if (p->layout == FA_LAYOUT_BSHD)
		return ((start + s) * heads + h) * dim;
	if (p->varlen)
		return ((int64_t)h * total + start + s) * dim;
	return (((int64_t)b * heads + h) * len + s) * dim;
}

/* Row (b, s, h) of tensor: both addressing helpers agree with the layout
 * written out by hand; marks its elements in seen. Returns the faults. */
static int check_row(const struct tproblem *t, int tensor, int b, int64_t start, int32_t s,
		     int h, int32_t dim, unsigned char *seen, int64_t elems)
{
	const struct fa_problem *p = &t->p;
	int64_t off = fa_tensor_offset(p, tensor, start + s, h), o2;
	int64_t want = expected_offset(t, tensor, b, s, h);
	int bad = 0;
	switch (tensor) {
	case FA_TENSOR_Q: o2 = fa_q_offset(p, cuq(t), b, s, h); break;
	case FA_TENSOR_K: o2 = fa_k_offset(p, cuk(t), b, s, h); break;
	case FA_TENSOR_V: o2 = fa_v_offset(p, cuk(t), b, s, h); break;
	default: o2 = fa_o_offset(p, cuq(t), b, s, h); break;
	}
	bad += off != want || o2 != want;
	for (int32_t d = 0; d < dim; d++) {
		if (off + d < 0 || off + d >= elems)
			bad++;
		else
			seen[off + d]++;
	}
	return bad;
}

FA_TEST(data, strides_match_addressing_and_pack_densely)
{
	uint64_t seed = fa_test_seed(), ctr = 0;
	for (int iter = 0; iter < 200; iter++) {
		struct tproblem t;
		int layout = iter % 2, varlen = (iter / 2) % 2;
		random_problem(seed, &ctr, FA_MASK_NONE, layout, varlen, FA_DTYPE_FP32, &t);
		const struct fa_problem *p = &t.p;
		for (int tensor = 0; tensor < 4; tensor++) {
			int64_t elems = fa_tensor_elems(p, tensor), tokens;
			int32_t heads, dim;
			int qside = tensor == FA_TENSOR_Q || tensor == FA_TENSOR_O;
			unsigned char *seen = calloc((size_t)elems + 1, 1);
			int bad = 0;
			FA_REQUIRE(seen);
			fa_tensor_shape(p, tensor, &tokens, &heads, &dim);
			for (int b = 0; b < p->batch; b++) {
				int32_t len = qside ? fa_seq_q_len(p, cuq(&t), b)
						    : fa_seq_kv_len(p, cuk(&t), b);
				int64_t start = qside ? fa_seq_q_start(p, cuq(&t), b)
						      : fa_seq_kv_start(p, cuk(&t), b);
				for (int32_t s = 0; s < len; s++)
					for (int h = 0; h < heads; h++)
						bad += check_row(&t, tensor, b, start, s, h, dim,
								 seen, elems);
			}
			for (int64_t i = 0; i < elems; i++)
				bad += seen[i] != 1; /* every element exactly once */
			FA_CHECKF(bad == 0, "tensor %d layout %d varlen %d: %d bad offsets", tensor,
				  layout, varlen, bad);
			free(seen);
		}
	}
}

static void *fill(const struct fa_problem *p, int tensor, int dist, uint64_t seed, int nthreads)
{
	size_t bytes = (size_t)fa_tensor_elems(p, tensor) * (size_t)fa_dtype_size(p->dtype);
	void *buf = malloc(bytes ? bytes : 1);
	if (buf) {
		memset(buf, FA_POISON_BYTE, bytes);
		fa_data_fill(p, tensor, dist, seed, buf, nthreads);
	}
	return buf;
}

FA_TEST(data, fill_same_for_threads_and_layouts)
{
	uint64_t seed = fa_test_seed(), ctr = 0;
	for (int iter = 0; iter < 48; iter++) {
		struct tproblem a, b;
		int dtype = iter % 3, dist = (iter / 3) % 3, varlen = (iter / 9) % 2;
		random_problem(seed, &ctr, FA_MASK_NONE, FA_LAYOUT_BSHD, varlen, dtype, &a);
		/* more tokens than a chunk of rows, so 3 threads really split the work */
		if (a.p.varlen) { /* the last sequence grows */
			a.cu_q[a.p.batch] += 60;
			a.p.total_q += 60;
			if (a.cu_q[a.p.batch] - a.cu_q[a.p.batch - 1] > a.p.q_len)
				a.p.q_len = a.cu_q[a.p.batch] - a.cu_q[a.p.batch - 1];
		} else {
			a.p.q_len += 60;
			a.p.total_q = a.p.batch * a.p.q_len;
		}
		fa_problem_set_strides(&a.p);
		b = a;
		b.p.layout = FA_LAYOUT_BHSD;
		fa_problem_set_strides(&b.p);
		for (int tensor = 0; tensor < 3; tensor++) {
			int64_t tokens, bad = 0, n = fa_tensor_elems(&a.p, tensor);
			int32_t heads, dim;
			size_t bytes = (size_t)n * (size_t)fa_dtype_size(dtype);
			void *one = fill(&a.p, tensor, dist, seed + 1, 1);
			void *three = fill(&a.p, tensor, dist, seed + 1, 3);
			void *other = fill(&b.p, tensor, dist, seed + 1, 3);
			FA_REQUIRE(one && three && other);
			FA_CHECK(bytes == 0 || memcmp(one, three, bytes) == 0);
			fa_tensor_shape(&a.p, tensor, &tokens, &heads, &dim);
			/* logical index li = ((T * heads) + h) * dim + d, in either layout */
			for (int64_t li = 0; li < tokens * heads * dim; li++) {
				int64_t T = li / dim / heads, h = li / dim % heads, d = li % dim;
				int64_t oa = fa_tensor_offset(&a.p, tensor, T, (int)h) + d;
				int64_t ob = fa_tensor_offset(&b.p, tensor, T, (int)h) + d;
				float v = fa_rng_value(seed + 1, tensor, dist, (uint64_t)li, dim);
				uint32_t want = fa_f32_bits(fa_round_to_dtype(v, dtype));
				bad += fa_f32_bits(fa_load_f32(one, dtype, oa)) != want ||
				       fa_f32_bits(fa_load_f32(other, dtype, ob)) != want;
			}
			FA_CHECKF(bad == 0, "tensor %d dtype %d dist %d: %lld elements differ",
				  tensor, dtype, dist, (long long)bad);
			free(one);
			free(three);
			free(other);
		}
	}
}

/* The masks as docs/fa_problem.h define them, written out independently. */
static int allowed(int mask, int64_t i, int64_t j, int64_t lq, int64_t lk, int64_t prefix,
		   int64_t window)
{
	int64_t diag = i + lk - lq;
	switch (mask) {
	case FA_MASK_NONE: return 1;
	case FA_MASK_CAUSAL: return j <= diag;
	case FA_MASK_PREFIX_LM: return j < prefix || j <= diag;
	default: return diag - window < j && j <= diag;
	}
}

static int64_t brute_pairs(const struct tproblem *t)
{
	const struct fa_problem *p = &t->p;
	int64_t n = 0;
	for (int b = 0; b < p->batch; b++) {
		int64_t lq = p->varlen ? t->cu_q[b + 1] - t->cu_q[b] : p->q_len;
		int64_t lk = p->varlen ? t->cu_k[b + 1] - t->cu_k[b] : p->kv_len;
		int64_t prefix = t->use_prefix_lens ? t->prefix[b] : p->prefix_len;
		for (int64_t i = 0; i < lq; i++)
			for (int64_t j = 0; j < lk; j++)
				n += allowed(p->mask, i, j, lq, lk, prefix, p->window);
	}
	return n;
}

FA_TEST(data, flops_and_pairs_match_brute_force)
{
	uint64_t seed = fa_test_seed(), ctr = 0;
	int bad = 0;
	for (int iter = 0; iter < 2000; iter++) {
		struct tproblem t;
		random_problem(seed, &ctr, iter % FA_MASK_COUNT, (iter / 4) % 2, (iter / 8) % 2,
			       FA_DTYPE_FP16, &t);
		if (iter % 16 >= 12) /* windows and prefixes longer than the sequences */
			t.p.window += 10;
		const int32_t *pl = t.use_prefix_lens ? t.prefix : NULL;
		int64_t want = brute_pairs(&t), got = fa_problem_pairs(&t.p, cuq(&t), cuk(&t), pl);
		double flops = fa_problem_flops(&t.p, cuq(&t), cuk(&t), pl);
		double want_flops =
			2.0 * (double)want * t.p.heads * (t.p.head_dim + t.p.head_dim_v);
		if ((got != want || flops != want_flops) && bad++ < 5)
			FA_CHECKF(0,
				  "mask %d varlen %d lq %d lk %d prefix %d window %d: "
				  "pairs %lld, brute force %lld",
				  t.p.mask, t.p.varlen, t.p.q_len, t.p.kv_len, t.p.prefix_len,
				  t.p.window, (long long)got, (long long)want);
	}
	FA_CHECK(bad == 0);
}

FA_TEST(data, counts_of_large_cases)
{
	struct fa_problem p = {.batch = 512, .heads = 32, .kv_heads = 8, .q_len = 32768,
			       .kv_len = 32768, .head_dim = 128, .head_dim_v = 128,
			       .dtype = FA_DTYPE_BF16, .total_q = 512 * 32768,
			       .total_k = 512 * 32768, .window = 4096, .prefix_len = 1000};
	const int64_t L = 32768;
	p.mask = FA_MASK_NONE;
	FA_CHECK(fa_problem_pairs(&p, NULL, NULL, NULL) == 512 * L * L);
	FA_CHECK(fa_problem_flops(&p, NULL, NULL, NULL) == 4.0 * 512 * 32 * L * L * 128);
	p.mask = FA_MASK_CAUSAL;
	FA_CHECK(fa_problem_pairs(&p, NULL, NULL, NULL) == 512 * L * (L + 1) / 2);
	p.mask = FA_MASK_SLIDING_WINDOW; /* rows 0..4095 see i + 1 keys, the rest 4096 */
	FA_CHECK(fa_problem_pairs(&p, NULL, NULL, NULL) ==
		 512 * (4096 * 4097 / 2 + (L - 4096) * 4096));
	p.mask = FA_MASK_PREFIX_LM; /* rows below 1000 see the 1000-key prefix */
	FA_CHECK(fa_problem_pairs(&p, NULL, NULL, NULL) ==
		 512 * (1000 * 1000 + (L * (L + 1) / 2 - 1000 * 1001 / 2)));
	p.q_len = 1; /* decode: one query sees every key under causal alignment */
	p.total_q = 512;
	p.mask = FA_MASK_CAUSAL;
	FA_CHECK(fa_problem_pairs(&p, NULL, NULL, NULL) == 512 * L);
	/* bytes: Q and O of 512 tokens, K and V of 512 * 32768 tokens of 8 heads */
	FA_CHECK(fa_problem_bytes(&p, NULL, NULL, FA_PASS_FWD) ==
		 2.0 * (2.0 * 512 * 32 * 128 + 2.0 * 512 * 32768 * 8 * 128));
}

FA_TEST(data, bytes_count_every_tensor)
{
	uint64_t seed = fa_test_seed(), ctr = 0;
	for (int iter = 0; iter < 30; iter++) {
		struct tproblem t;
		random_problem(seed, &ctr, FA_MASK_CAUSAL, iter % 2, 0, iter % 3, &t);
		const struct fa_problem *p = &t.p;
		double want = ((double)p->total_q * p->heads * (p->head_dim + p->head_dim_v) +
			       (double)p->total_k * p->kv_heads * (p->head_dim + p->head_dim_v)) *
			      (p->dtype == FA_DTYPE_FP32 ? 4 : 2);
		FA_CHECK(fa_problem_bytes(p, NULL, NULL, FA_PASS_FWD) == want);
		FA_CHECK(fa_problem_bytes(p, NULL, NULL, FA_PASS_BWD) == 2 * want);
		FA_CHECK(fa_problem_bytes(p, NULL, NULL, FA_PASS_FWD_BWD) == 3 * want);
	}
}

/* Empty sequences of a varlen batch: a sequence with no queries or no keys
 * adds no (q, k) pair and no FLOP, and the bytes leave out what no kernel
 * needs (the keys and values of a sequence with no queries, the queries of
 * one with no keys) but count every output row, the zeros of a row with no
 * key included. Written out by hand for one batch, then against the same
 * batch without its empty sequences, and the brute-force rule over random
 * batches (random_problem draws lengths from 0). */
FA_TEST(data, counts_of_empty_sequences)
{
	/* seqlens 0/17/0/64/5, kv_seqlens 4/0/0/70/9, 4 heads over 2, dims 8/6 */
	struct fa_problem p = {.batch = 5, .heads = 4, .kv_heads = 2, .q_len = 64, .kv_len = 70,
			       .head_dim = 8, .head_dim_v = 6, .dtype = FA_DTYPE_FP16,
			       .mask = FA_MASK_NONE, .varlen = 1, .total_q = 86, .total_k = 83};
	static const int32_t cu_q[6] = {0, 0, 17, 17, 81, 86}, cu_k[6] = {0, 4, 4, 4, 74, 83};
	/* the batch without its sequences that have no query or no key */
	struct fa_problem r = p;
	static const int32_t rq[3] = {0, 64, 69}, rk[3] = {0, 70, 79};
	r.batch = 2;
	r.total_q = 69;
	r.total_k = 79;
	fa_problem_set_strides(&p);
	fa_problem_set_strides(&r);
	for (int mask = 0; mask < FA_MASK_COUNT; mask++) {
		p.mask = r.mask = mask;
		p.window = r.window = 5;
		p.prefix_len = r.prefix_len = 0;
		FA_CHECK(fa_problem_pairs(&p, cu_q, cu_k, NULL) == fa_problem_pairs(&r, rq, rk, NULL));
		FA_CHECK(fa_problem_flops(&p, cu_q, cu_k, NULL) == fa_problem_flops(&r, rq, rk, NULL));
	}
	p.mask = FA_MASK_NONE;
	FA_CHECK(fa_problem_pairs(&p, cu_q, cu_k, NULL) == 64 * 70 + 5 * 9);
	FA_CHECK(fa_problem_flops(&p, cu_q, cu_k, NULL) == 2.0 * (64 * 70 + 5 * 9) * 4 * (8 + 6));
	/* forward: Q of the 69 tokens with keys, K and V of the 79 keys with
	 * queries (not sequence 0's 4), O of all 86 rows (sequence 1's 17 are
	 * zeros); 2 bytes an element */
	const double q = 69.0 * 4 * 8, k = 79.0 * 2 * 8, v = 79.0 * 2 * 6, o_all = 86.0 * 4 * 6;
	const double fwd = 2 * (q + k + v + o_all);
	FA_CHECK(fa_problem_bytes(&p, cu_q, cu_k, FA_PASS_FWD) == fwd);
	/* backward: Q, K, V, O and dO read where needed; dQ of all 86 rows,
	 * dK and dV of all 83 keys written (sequence 0's are zeros) */
	const double o = 69.0 * 4 * 6, dq = 86.0 * 4 * 8, dk = 83.0 * 2 * 8, dv = 83.0 * 2 * 6;
	const double bwd = 2 * (q + k + v + o + o + dq + dk + dv);
	FA_CHECK(fa_problem_bytes(&p, cu_q, cu_k, FA_PASS_BWD) == bwd);
	FA_CHECK(fa_problem_bytes(&p, cu_q, cu_k, FA_PASS_FWD_BWD) == fwd + bwd);
	/* without empty sequences the same batch reads and writes every row */
	FA_CHECK(fa_problem_bytes(&r, rq, rk, FA_PASS_FWD) ==
		 2 * (69.0 * 4 * 8 + 79.0 * 2 * 14 + 69.0 * 4 * 6));

	/* random batches with empty sequences: the rule written out per row */
	uint64_t seed = fa_test_seed(), ctr = 0;
	int bad = 0;
	for (int iter = 0; iter < 200; iter++) {
		struct tproblem t;
		random_problem(seed, &ctr, iter % FA_MASK_COUNT, 0, 1, FA_DTYPE_BF16, &t);
		const struct fa_problem *tp = &t.p;
		double want = 0;
		for (int b = 0; b < tp->batch; b++) {
			int64_t lq = t.cu_q[b + 1] - t.cu_q[b], lk = t.cu_k[b + 1] - t.cu_k[b];
			double qr = lk ? (double)lq * tp->heads * tp->head_dim : 0;
			double kr = lq ? (double)lk * tp->kv_heads * (tp->head_dim + tp->head_dim_v) : 0;
			want += qr + kr + (double)lq * tp->heads * tp->head_dim_v;
		}
		if (fa_problem_bytes(tp, t.cu_q, t.cu_k, FA_PASS_FWD) != 2 * want && bad++ < 5)
			FA_CHECKF(0, "iter %d: bytes %g, by hand %g", iter,
				  fa_problem_bytes(tp, t.cu_q, t.cu_k, FA_PASS_FWD), 2 * want);
	}
	FA_CHECK(bad == 0);
}
