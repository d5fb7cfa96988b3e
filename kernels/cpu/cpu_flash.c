/* cpu_flash.c - FlashAttention-2 forward on the CPU.
 *
 * One work item is (sequence, query head, tile of block_q query rows). It
 * walks the key/value tiles of block_k keys that the mask leaves any key of,
 * converting each tile to fp32 in per-thread scratch (K transposed so the
 * score loop runs along keys), and keeps the FA2 online softmax per row:
 * running max m, running sum l and an fp32 accumulator rescaled by
 * exp(m_old - m_new) whenever the max grows; O = acc / l at the end, and
 * when asked the log-sum-exp m + log(l) the backward needs. Memory
 * is O(block_q * block_k) per thread instead of the dense path's score
 * tensor. The score and accumulator loops use four-lane vectors
 * (cpu_kernels.h): -O2 does not vectorise loops of runtime length.
 */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "../../harness/base/parallel.h"
#include "cpu_kernels.h"

/* Defaults (also in the kernel table): 16 query rows share each converted
 * K/V tile, and a K tile of 64 keys at head_dim 128 is 32 KiB of fp32, about
 * an L1 data cache. */
#define DEFAULT_BLOCK_Q 16
#define DEFAULT_BLOCK_K 64

struct tile_scratch {
	float *q;    /* block_q x head_dim */
	float *kt;   /* head_dim x block_k: K tile transposed */
	float *v;    /* block_k x head_dim_v */
	float *s;    /* block_q x block_k: scores, then probabilities */
	float *acc;  /* block_q x head_dim_v */
	float *m, *l; /* block_q */
	float *row;  /* max(head_dim, head_dim_v): a converted row */
	void *mem;
};

struct flash_ctx {
	const struct fa_launch_args *a;
	const struct fa_problem *p;
	int32_t bq, bk;
	int64_t *tile_start; /* batch + 1: first query tile of each sequence */
	struct tile_scratch *scratch;
	float *lse; /* a->lse when the harness asks for it, else NULL */
	atomic_int stopped;
};

/* Loads keys [j0, j0 + nc) of kv head kvh: K transposed into kt (columns
 * past nc zeroed), V row-major into v. */
static void load_kv_tile(const struct flash_ctx *c, struct tile_scratch *w, int b, int kvh,
			 int32_t j0, int32_t nc)
{
	const struct fa_problem *p = c->p;
	const struct fa_launch_args *a = c->a;
	int32_t bk = c->bk, dk = p->head_dim, dv = p->head_dim_v;
	for (int32_t j = 0; j < nc; j++) {
		fa_cpu_load_row(w->row, a->k, p->dtype,
				fa_k_offset(p, a->cu_seqlens_k, b, j0 + j, kvh), dk);
		for (int32_t d = 0; d < dk; d++)
			w->kt[(size_t)d * bk + j] = w->row[d];
		fa_cpu_load_row(w->v + (size_t)j * dv, a->v, p->dtype,
				fa_v_offset(p, a->cu_seqlens_k, b, j0 + j, kvh), dv);
	}
	if (nc < bk)
		for (int32_t d = 0; d < dk; d++)
			memset(w->kt + (size_t)d * bk + nc, 0, sizeof(float) * (size_t)(bk - nc));
}

/* s[0..bk) = q . K tile columns over the full padded width (bk is a multiple
 * of 16). Each output lane sums over d in order; 16 columns at a time keep
 * four independent add chains in registers. */
static void score_row(const float *restrict q, const float *restrict kt, float *restrict s,
		      int32_t dk, int32_t bk)
{
	for (int32_t j = 0; j < bk; j += 16) {
		fa_cpu_v4f a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0};
		for (int32_t d = 0; d < dk; d++) {
			const float *k = kt + (size_t)d * bk + j;
			const float qd = q[d];
			a0 += qd * fa_cpu_ld4(k);
			a1 += qd * fa_cpu_ld4(k + 4);
			a2 += qd * fa_cpu_ld4(k + 8);
			a3 += qd * fa_cpu_ld4(k + 12);
		}
		fa_cpu_st4(s + j, a0);
		fa_cpu_st4(s + j + 4, a1);
		fa_cpu_st4(s + j + 8, a2);
		fa_cpu_st4(s + j + 12, a3);
	}
}

/* acc[0..n) = acc * alpha + sum_j p[j] v[j, :] (a masked key has p 0 and
 * adds nothing). Each dim sums over keys in order; blocks of 16 dims keep
 * four add chains in registers across the tile's keys. */
static void update_acc(float *restrict acc, float alpha, const float *restrict pr,
		       const float *restrict v, int32_t nc, int32_t n)
{
	int32_t d = 0;
	for (; d + 16 <= n; d += 16) {
		fa_cpu_v4f a0 = fa_cpu_ld4(acc + d) * alpha;
		fa_cpu_v4f a1 = fa_cpu_ld4(acc + d + 4) * alpha;
		fa_cpu_v4f a2 = fa_cpu_ld4(acc + d + 8) * alpha;
		fa_cpu_v4f a3 = fa_cpu_ld4(acc + d + 12) * alpha;
		for (int32_t j = 0; j < nc; j++) {
			const float *vj = v + (size_t)j * n + d;
			const float pj = pr[j];
			a0 += pj * fa_cpu_ld4(vj);
			a1 += pj * fa_cpu_ld4(vj + 4);
			a2 += pj * fa_cpu_ld4(vj + 8);
			a3 += pj * fa_cpu_ld4(vj + 12);
		}
		fa_cpu_st4(acc + d, a0);
		fa_cpu_st4(acc + d + 4, a1);
		fa_cpu_st4(acc + d + 8, a2);
		fa_cpu_st4(acc + d + 12, a3);
	}
	for (; d + 4 <= n; d += 4) {
		fa_cpu_v4f a = fa_cpu_ld4(acc + d) * alpha;
		for (int32_t j = 0; j < nc; j++)
			a += pr[j] * fa_cpu_ld4(v + (size_t)j * n + d);
		fa_cpu_st4(acc + d, a);
	}
	for (; d < n; d++) {
		float a = acc[d] * alpha;
		for (int32_t j = 0; j < nc; j++)
			a += pr[j] * v[(size_t)j * n + d];
		acc[d] = a;
	}
}

static void flash_tile(struct flash_ctx *c, struct tile_scratch *w, int b, int h, int64_t tile)
{
	const struct fa_problem *p = c->p;
	const struct fa_launch_args *a = c->a;
	const int32_t bq = c->bq, bk = c->bk, dk = p->head_dim, dv = p->head_dim_v;
	const int32_t lq = fa_seq_q_len(p, a->cu_seqlens_q, b);
	const int32_t lk = fa_seq_kv_len(p, a->cu_seqlens_k, b);
	const int32_t i0 = (int32_t)(tile * bq), nr = lq - i0 < bq ? lq - i0 : bq;
	const int kvh = h / (p->heads / p->kv_heads);
	int32_t lo_first, hi_first, lo_last, hi_last, pl = 0, kv_begin, kv_end;

	if (p->mask == FA_MASK_PREFIX_LM) {
		pl = fa_seq_prefix(p, a->prefix_lens, b);
		pl = pl < 0 ? 0 : pl > lk ? lk : pl;
	}
	for (int32_t r = 0; r < nr; r++) {
		fa_cpu_load_row(w->q + (size_t)r * dk, a->q, p->dtype,
				fa_q_offset(p, a->cu_seqlens_q, b, i0 + r, h), dk);
		w->m[r] = -INFINITY;
		w->l[r] = 0;
	}
	memset(w->acc, 0, sizeof(float) * (size_t)nr * dv);

	/* Both ends of a row's range grow with the row, so the tile's rows
	 * together see [lo_first, hi_last) (plus the prefix) and all of them see
	 * [lo_last, hi_first): key tiles outside the first are skipped, tiles
	 * inside the second need no mask. */
	fa_mask_range(p->mask, i0, lq, lk, p->window, &lo_first, &hi_first);
	fa_mask_range(p->mask, i0 + nr - 1, lq, lk, p->window, &lo_last, &hi_last);
	kv_begin = pl > 0 ? 0 : lo_first - lo_first % bk;
	kv_end = hi_last > pl ? hi_last : pl;
	kv_end = kv_end < lk ? kv_end : lk;

	for (int32_t j0 = kv_begin; j0 < kv_end; j0 += bk) {
		const int32_t nc = lk - j0 < bk ? lk - j0 : bk;
		const int full = (j0 >= lo_last && j0 + nc <= hi_first) || j0 + nc <= pl;
		if (fa_cpu_cancelled(&c->stopped, c->a))
			return;
		load_kv_tile(c, w, b, kvh, j0, nc);
		for (int32_t r = 0; r < nr; r++) {
			float *s = w->s + (size_t)r * bk, mt = -INFINITY, m_new, alpha, sum = 0;
			score_row(w->q + (size_t)r * dk, w->kt, s, dk, bk);
			for (int32_t j = 0; j < nc; j++)
				s[j] *= p->scale;
			if (!full) {
				int32_t lo, hi;
				fa_mask_range(p->mask, i0 + r, lq, lk, p->window, &lo, &hi);
				for (int32_t j = 0; j < nc; j++) {
					int32_t key = j0 + j;
					if (!((key >= lo && key < hi) || key < pl))
						s[j] = -INFINITY;
				}
			}
			for (int32_t j = 0; j < nc; j++)
				mt = s[j] > mt ? s[j] : mt;
			m_new = mt > w->m[r] ? mt : w->m[r];
			if (m_new == -INFINITY) /* no key of this row allowed so far */
				continue;
			alpha = expf(w->m[r] - m_new); /* 0 on the first allowed tile */
			for (int32_t j = 0; j < nc; j++) {
				s[j] = expf(s[j] - m_new);
				sum += s[j];
			}
			w->l[r] = w->l[r] * alpha + sum;
			w->m[r] = m_new;
			update_acc(w->acc + (size_t)r * dv, alpha, s, w->v, nc, dv);
		}
	}

	for (int32_t r = 0; r < nr; r++) {
		float *acc = w->acc + (size_t)r * dv;
		const float l = w->l[r];
		for (int32_t d = 0; d < dv; d++) /* l == 0: the row attends no key, zeros */
			w->row[d] = l > 0 ? acc[d] / l : 0.0f;
		fa_cpu_store_row(a->o, p->dtype, fa_o_offset(p, a->cu_seqlens_q, b, i0 + r, h),
				 w->row, dv);
		if (c->lse) /* +inf for a row with no key: exp(s - lse) is then 0 */
			c->lse[(fa_seq_q_start(p, a->cu_seqlens_q, b) + i0 + r) * p->heads + h] =
				l > 0 ? w->m[r] + logf(l) : INFINITY;
	}
}

/* Item idx = (global query tile g, head h) with g running over sequences. */
static void flash_items(void *vctx, int64_t begin, int64_t end, int thread)
{
	struct flash_ctx *c = vctx;
	const int32_t heads = c->p->heads;
	for (int64_t idx = begin; idx < end; idx++) {
		int64_t g = idx / heads;
		int h = (int)(idx % heads), b;
		if (fa_cpu_cancelled(&c->stopped, c->a))
			return;
		b = fa_cpu_seq_of_block(c->tile_start, c->p->batch, g);
		flash_tile(c, &c->scratch[thread], b, h, g - c->tile_start[b]);
	}
}

static int alloc_scratch(struct tile_scratch *w, const struct fa_problem *p, int32_t bq,
			 int32_t bk)
{
	size_t dk = (size_t)p->head_dim, dv = (size_t)p->head_dim_v;
	size_t rowmax = dk > dv ? dk : dv;
	/* each array rounded up to 16 floats (64 bytes, a cache line) */
	size_t sizes[8] = {bq * dk, dk * bk, bk * dv, (size_t)bq * bk, bq * dv, bq, bq, rowmax};
	float **const ptrs[8] = {&w->q, &w->kt, &w->v, &w->s, &w->acc, &w->m, &w->l, &w->row};
	w->mem = fa_cpu_alloc_arrays(ptrs, sizes, 8);
	return w->mem ? 0 : -1;
}

int fa_cpu_flash_launch(const struct fa_launch_args *a)
{
	const struct fa_problem *p = a->p;
	struct flash_ctx c = {.a = a, .p = p, .bq = DEFAULT_BLOCK_Q, .bk = DEFAULT_BLOCK_K};
	int nthreads = a->nthreads > 0 ? a->nthreads : fa_cpu_threads();
	int rc = 0;

	if (a->cancel && *a->cancel)
		return FA_KERNEL_CANCELLED;
	if (a->params) {
		c.bq = a->params[0];
		c.bk = a->params[1];
	}
	/* the harness passes only allowed values; the score loop needs bk % 16 == 0 */
	if (c.bq < 1 || c.bk < 16 || c.bk % 16 != 0)
		return FA_CPU_ERR_PARAM;
	atomic_init(&c.stopped, 0);
	c.lse = FA_RECORD_HAS(struct fa_launch_args, a, lse) ? a->lse : NULL;
	c.tile_start = malloc(sizeof(int64_t) * ((size_t)p->batch + 1));
	c.scratch = calloc((size_t)nthreads, sizeof *c.scratch);
	if (!c.tile_start || !c.scratch) {
		rc = FA_CPU_ERR_NOMEM;
		goto done;
	}
	fa_cpu_block_starts(p, a, 0, c.bq, c.tile_start);
	for (int t = 0; t < nthreads; t++)
		if (alloc_scratch(&c.scratch[t], p, c.bq, c.bk) != 0) {
			rc = FA_CPU_ERR_NOMEM;
			goto done;
		}
	/* one (tile, head) item per chunk: each is block_q * kv_len * head_dim work */
	fa_parallel_for(c.tile_start[p->batch] * p->heads, 1, nthreads, flash_items, &c);
	if (atomic_load(&c.stopped))
		rc = FA_KERNEL_CANCELLED;
done:
	for (int t = 0; c.scratch && t < nthreads; t++)
		free(c.scratch[t].mem);
	free(c.scratch);
	free(c.tile_start);
	return rc;
}
