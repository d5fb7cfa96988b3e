/* cpu_dense.c - the naive "math fallback" attention (seed 000's SDPA path):
 * the whole fp32 score tensor S = scale * Q K^T is materialised in the
 * workspace for every (sequence, head, query, key), masked entries set to
 * -inf, then a row softmax in place (P overwrites S, and the row's
 * log-sum-exp goes to a->lse when asked), then O = P V over
 * every key. Three passes over O(batch * heads * q_len * kv_len) memory:
 * the algorithm flash attention replaces, kept as the baseline to compare
 * against. Its arithmetic is as vectorised as cpu_flash's (each key or value
 * row converted once per block of query rows), so a comparison of the two
 * measures the algorithm, not the code quality.
 *
 * Score tensor layout: [batch, heads, q_len, kv_len] (varlen: [total_q,
 * heads, kv_len] with kv_len the longest sequence's).
 */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "../../harness/base/parallel.h"
#include "cpu_kernels.h"

/* Query rows per work item: each key and value row is converted once per
 * block, and 16 rows of scores and accumulators stay in L1/L2. */
#define DENSE_BLOCK_ROWS 16

size_t fa_cpu_dense_workspace_bytes(const struct fa_problem *p, const int32_t *params)
{
	int64_t rows = p->varlen ? (int64_t)p->total_q * p->heads
				 : (int64_t)p->batch * p->heads * p->q_len;
	size_t bytes;
	(void)params;
	/* a score matrix past size_t asks for all of it, which no allocation
	 * gives, instead of wrapping to a small size */
	if (__builtin_mul_overflow((size_t)rows, (size_t)p->kv_len * sizeof(float), &bytes))
		return SIZE_MAX;
	return bytes;
}

struct dense_scratch {
	float *q;   /* DENSE_BLOCK_ROWS x head_dim */
	float *row; /* max(head_dim, head_dim_v): one key or value row */
	float *acc; /* DENSE_BLOCK_ROWS x head_dim_v */
};

struct dense_ctx {
	const struct fa_launch_args *a;
	const struct fa_problem *p;
	float *scores;
	int64_t *block_start; /* batch + 1: first row block of each sequence */
	struct dense_scratch *scratch;
	float *lse; /* a->lse when the harness asks for it, else NULL */
	atomic_int stopped;
};

/* One work item: rows t0 .. t0 + nr - 1 of sequence b, head h. */
struct dense_block {
	int b, h, kvh;
	int32_t t0, nr, lq, lk;
};

/* Item idx = (global row block g, head h) with g running over sequences. */
static void dense_block_of(const struct dense_ctx *c, int64_t idx, struct dense_block *k)
{
	const struct fa_problem *p = c->p;
	const struct fa_launch_args *a = c->a;
	const struct fa_cpu_block blk =
		fa_cpu_block_of(p, a, c->block_start, 0, DENSE_BLOCK_ROWS, idx / p->heads);
	k->b = blk.b;
	k->h = (int)(idx % p->heads);
	k->kvh = k->h / (p->heads / p->kv_heads);
	k->lq = blk.lq;
	k->lk = blk.lk;
	k->t0 = blk.first;
	k->nr = blk.n;
}

/* Row t of the block's sequence and head in the score tensor. */
static float *score_row(const struct dense_ctx *c, const struct dense_block *k, int32_t t)
{
	const struct fa_problem *p = c->p;
	int64_t r = p->varlen ? ((int64_t)c->a->cu_seqlens_q[k->b] + t) * p->heads + k->h
			      : ((int64_t)k->b * p->heads + k->h) * p->q_len + t;
	return c->scores + r * p->kv_len;
}

/* acc[0..n) += w * v[0..n) */
static void axpy(float *restrict acc, float w, const float *restrict v, int32_t n)
{
	int32_t d = 0;
	for (; d + 4 <= n; d += 4)
		fa_cpu_st4(acc + d, fa_cpu_ld4(acc + d) + w * fa_cpu_ld4(v + d));
	for (; d < n; d++)
		acc[d] += w * v[d];
}

/* Pass 1: S[row, j] = scale * q . k_j, or -inf where the mask says no. */
static void pass_scores(void *vctx, int64_t begin, int64_t end, int thread)
{
	struct dense_ctx *c = vctx;
	const struct fa_problem *p = c->p;
	const struct fa_launch_args *a = c->a;
	struct dense_scratch *w = &c->scratch[thread];
	const int32_t dk = p->head_dim;
	for (int64_t idx = begin; idx < end; idx++) {
		struct dense_block k;
		int32_t lo[DENSE_BLOCK_ROWS], hi[DENSE_BLOCK_ROWS], prefix = 0;
		float *s[DENSE_BLOCK_ROWS];
		if (fa_cpu_cancelled(&c->stopped, c->a))
			return;
		dense_block_of(c, idx, &k);
		if (p->mask == FA_MASK_PREFIX_LM)
			prefix = fa_seq_prefix(p, a->prefix_lens, k.b);
		for (int32_t r = 0; r < k.nr; r++) {
			fa_cpu_load_row(w->q + (size_t)r * dk, a->q, p->dtype,
					fa_q_offset(p, a->cu_seqlens_q, k.b, k.t0 + r, k.h), dk);
			fa_mask_range(p->mask, k.t0 + r, k.lq, k.lk, p->window, &lo[r], &hi[r]);
			s[r] = score_row(c, &k, k.t0 + r);
		}
		for (int32_t j = 0; j < k.lk; j++) {
			fa_cpu_load_row(w->row, a->k, p->dtype,
					fa_k_offset(p, a->cu_seqlens_k, k.b, j, k.kvh), dk);
			for (int32_t r = 0; r < k.nr; r++) {
				const float *q = w->q + (size_t)r * dk;
				int allowed = (j >= lo[r] && j < hi[r]) || j < prefix;
				s[r][j] = allowed ? p->scale * fa_cpu_dot(q, w->row, dk) : -INFINITY;
			}
		}
	}
}

/* Pass 2: each row of S becomes softmax(S) in place; a row with no allowed
 * key becomes zeros. */
static void pass_softmax(void *vctx, int64_t begin, int64_t end, int thread)
{
	struct dense_ctx *c = vctx;
	(void)thread;
	for (int64_t idx = begin; idx < end; idx++) {
		struct dense_block k;
		if (fa_cpu_cancelled(&c->stopped, c->a))
			return;
		dense_block_of(c, idx, &k);
		for (int32_t r = 0; r < k.nr; r++) {
			float *s = score_row(c, &k, k.t0 + r), m = -INFINITY, l = 0;
			float *lse = c->lse ? &c->lse[(fa_seq_q_start(c->p, c->a->cu_seqlens_q, k.b) +
						     k.t0 + r) * c->p->heads + k.h]
					    : NULL;
			for (int32_t j = 0; j < k.lk; j++)
				m = s[j] > m ? s[j] : m;
			if (m == -INFINITY) { /* no allowed key (or no key at all) */
				for (int32_t j = 0; j < k.lk; j++)
					s[j] = 0;
				if (lse) /* exp(s - lse) is 0 for every key */
					*lse = INFINITY;
				continue;
			}
			for (int32_t j = 0; j < k.lk; j++) {
				s[j] = expf(s[j] - m);
				l += s[j];
			}
			if (lse)
				*lse = m + logf(l);
			for (int32_t j = 0; j < k.lk; j++)
				s[j] /= l;
		}
	}
}

/* Pass 3: O[row] = sum_j P[row, j] v_j over every key of the sequence. */
static void pass_output(void *vctx, int64_t begin, int64_t end, int thread)
{
	struct dense_ctx *c = vctx;
	const struct fa_problem *p = c->p;
	const struct fa_launch_args *a = c->a;
	struct dense_scratch *w = &c->scratch[thread];
	const int32_t dv = p->head_dim_v;
	for (int64_t idx = begin; idx < end; idx++) {
		struct dense_block k;
		const float *s[DENSE_BLOCK_ROWS];
		if (fa_cpu_cancelled(&c->stopped, c->a))
			return;
		dense_block_of(c, idx, &k);
		for (int32_t r = 0; r < k.nr; r++)
			s[r] = score_row(c, &k, k.t0 + r);
		memset(w->acc, 0, sizeof(float) * (size_t)k.nr * dv);
		for (int32_t j = 0; j < k.lk; j++) {
			fa_cpu_load_row(w->row, a->v, p->dtype,
					fa_v_offset(p, a->cu_seqlens_k, k.b, j, k.kvh), dv);
			for (int32_t r = 0; r < k.nr; r++)
				axpy(w->acc + (size_t)r * dv, s[r][j], w->row, dv);
		}
		for (int32_t r = 0; r < k.nr; r++)
			fa_cpu_store_row(a->o, p->dtype,
					 fa_o_offset(p, a->cu_seqlens_q, k.b, k.t0 + r, k.h),
					 w->acc + (size_t)r * dv, dv);
	}
}

static int alloc_scratch(struct dense_scratch *w, const struct fa_problem *p)
{
	size_t dk = (size_t)p->head_dim, dv = (size_t)p->head_dim_v;
	w->q = malloc(sizeof(float) * DENSE_BLOCK_ROWS * (dk ? dk : 1));
	w->row = malloc(sizeof(float) * (dk > dv ? dk : dv ? dv : 1));
	w->acc = malloc(sizeof(float) * DENSE_BLOCK_ROWS * (dv ? dv : 1));
	return w->q && w->row && w->acc ? 0 : -1;
}

int fa_cpu_dense_launch(const struct fa_launch_args *a)
{
	const struct fa_problem *p = a->p;
	struct dense_ctx c = {.a = a, .p = p};
	int nthreads = a->nthreads > 0 ? a->nthreads : fa_cpu_threads();
	size_t need = fa_cpu_dense_workspace_bytes(p, a->params);
	int64_t items;
	int rc = 0;

	if (a->cancel && *a->cancel)
		return FA_KERNEL_CANCELLED;
	if (need > 0 && (!a->workspace || a->workspace_bytes < need))
		return FA_CPU_ERR_WORKSPACE;
	c.scores = a->workspace;
	c.lse = FA_RECORD_HAS(struct fa_launch_args, a, lse) ? a->lse : NULL;
	atomic_init(&c.stopped, 0);
	c.block_start = malloc(sizeof(int64_t) * ((size_t)p->batch + 1));
	c.scratch = calloc((size_t)nthreads, sizeof *c.scratch);
	if (!c.block_start || !c.scratch) {
		rc = FA_CPU_ERR_NOMEM;
		goto done;
	}
	for (int t = 0; t < nthreads; t++)
		if (alloc_scratch(&c.scratch[t], p) != 0) {
			rc = FA_CPU_ERR_NOMEM;
			goto done;
		}
	fa_cpu_block_starts(p, a, 0, DENSE_BLOCK_ROWS, c.block_start);
	items = c.block_start[p->batch] * p->heads;
	/* each pass is a separate sweep over the whole score tensor, as the
	 * math path's matmul, softmax and matmul are */
	fa_parallel_for(items, 1, nthreads, pass_scores, &c);
	if (!atomic_load(&c.stopped))
		fa_parallel_for(items, 1, nthreads, pass_softmax, &c);
	if (!atomic_load(&c.stopped))
		fa_parallel_for(items, 1, nthreads, pass_output, &c);
	if (atomic_load(&c.stopped))
		rc = FA_KERNEL_CANCELLED;
done:
	for (int t = 0; c.scratch && t < nthreads; t++) {
		free(c.scratch[t].q);
		free(c.scratch[t].row);
		free(c.scratch[t].acc);
	}
	free(c.scratch);
	free(c.block_start);
	return rc;
}
