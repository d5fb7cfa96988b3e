/* fa_cta.h - what one block of a flash-attention grid works on, and the
 * online-softmax rules every flash kernel applies: shared by cuda_flash_mma
 * (kernels/cuda/flash_mma.cuh) and the AMD matrix-core kernels
 * (kernels/hip/flash_amd_mma.h), so the grid order, GQA packing, mask
 * ranges, split-KV ranges and the softmax edge cases are written once.
 * Plain integer and float logic (FA_HD: host C, CUDA and HIP device code).
 *
 * Grid (host side: fa_mma::make_params): x = query tile, y = head (or KV
 * head when the heads of a GQA group are packed into one tile), z = batch x
 * splits. Conventions of fa_problem.h: masks aligned bottom-right,
 * prefix-LM = [0, prefix) plus causal, sliding window = `window` keys
 * ending at the diagonal.
 */
#ifndef FA_CTA_H
#define FA_CTA_H

#include <math.h>
#include <stdint.h>

#include "fa_problem.h"

/* The grid's description (the fields of fa_mma::params that place a block). */
struct fa_grid {
	int32_t group;      /* heads / kv_heads */
	int32_t packed;     /* 1: a tile stacks the rows of all query heads of one KV head */
	int32_t m_tiles;    /* query tiles per (sequence, head or KV head) */
	int32_t reverse;    /* 1: the grid starts with the last (heaviest, causal) tiles */
	int32_t tile_major; /* 1: block order tile by tile across heads, else head by head */
	int32_t splits;     /* >1: split-KV, each block takes one of `splits` key ranges */
};

/* One block's work. Rows are "packed rows" of the sequence: for a packed
 * tile row R is (head h0 + R / lq, position R % lq), else (head h0, R). */
struct fa_cta_work {
	int b, sp;                   /* sequence, key range (split) */
	int lq, lk;                  /* this sequence's query and key lengths */
	int rows_total, row0, row_last; /* rows of the sequence, the tile's first and last */
	int hk, h0;                  /* KV head, query head of packed row 0 */
	int lo_first, hi_first;      /* allowed keys [lo, hi) of the tile's first position */
	int lo_last, hi_last;        /* ... and of its last */
	int pfx;                     /* keys [0, pfx) visible to every row (prefix-LM) */
	int n_begin, n_end;          /* key tiles [n_begin, n_end) of this block */
};

/* Query head and position of packed row R. */
FA_HD void fa_cta_row_head_pos(int packed, int h0, int lq, int R, int *h, int *i)
{
	if (packed) {
		*h = h0 + R / lq;
		*i = R % lq;
	} else {
		*h = h0;
		*i = R;
	}
}

/* The work of block (bx, by, bz) with BM-row query tiles and BN-key K/V
 * tiles. Returns 0 when the block has no row (past its sequence: varlen,
 * or packed rows), and then w is only partly filled. */
FA_HD int fa_cta_work_of(const struct fa_problem *p, const struct fa_grid *gr,
			 const int32_t *cu_q, const int32_t *cu_k, const int32_t *prefix_lens,
			 int bm, int bn, int bx, int by, int bz, struct fa_cta_work *w)
{
	/* block -> (query tile, head) in launch order: head by head (x fastest,
	 * the tiles of one head side by side share its K/V in L2), or tile by
	 * tile across every head (the heaviest causal tiles of all heads first:
	 * longest-processing-time order, a shorter tail) */
	if (gr->tile_major) {
		const int gy = gr->packed ? p->kv_heads : p->heads;
		const int lin = by * gr->m_tiles + bx;
		bx = lin / gy;
		by = lin - bx * gy;
	}
	w->b = bz / gr->splits;
	w->sp = bz - w->b * gr->splits;
	const int x = gr->reverse ? gr->m_tiles - 1 - bx : bx;
	w->lq = fa_seq_q_len(p, cu_q, w->b);
	w->lk = fa_seq_kv_len(p, cu_k, w->b);
	w->rows_total = gr->packed ? gr->group * w->lq : w->lq;
	w->row0 = x * bm;
	if (w->row0 >= w->rows_total)
		return 0;
	w->hk = gr->packed ? by : by / gr->group;
	w->h0 = gr->packed ? by * gr->group : by;
	w->row_last = (w->row0 + bm < w->rows_total ? w->row0 + bm : w->rows_total) - 1;

	/* key range of the block (masks are monotone in the position i) */
	int i_first, i_last; /* smallest and largest position among the valid rows */
	if (!gr->packed) {
		i_first = w->row0;
		i_last = w->row_last;
	} else if (w->row0 / w->lq == w->row_last / w->lq) {
		i_first = w->row0 % w->lq;
		i_last = w->row_last % w->lq;
	} else {
		i_first = 0; /* rows wrap from one head to the next */
		i_last = w->lq - 1;
	}
	fa_mask_range(p->mask, i_first, w->lq, w->lk, p->window, &w->lo_first, &w->hi_first);
	fa_mask_range(p->mask, i_last, w->lq, w->lk, p->window, &w->lo_last, &w->hi_last);
	w->pfx = 0;
	if (p->mask == FA_MASK_PREFIX_LM) {
		int pfx = fa_seq_prefix(p, prefix_lens, w->b);
		w->pfx = pfx < 0 ? 0 : pfx > w->lk ? w->lk : pfx;
	}
	const int key_begin = w->pfx > 0 ? 0 : w->lo_first;
	const int key_end = w->hi_last > w->pfx ? w->hi_last : w->pfx;
	w->n_begin = key_begin / bn;
	w->n_end = key_end > key_begin ? (key_end + bn - 1) / bn : w->n_begin;
	if (gr->splits > 1) { /* split-KV: this block's share of the tiles, maybe none */
		const int per = (w->n_end - w->n_begin + gr->splits - 1) / gr->splits;
		const int nb = w->n_begin + w->sp * per;
		w->n_begin = nb < w->n_end ? nb : w->n_end;
		w->n_end = nb + per < w->n_end ? nb + per : w->n_end;
	}
	return 1;
}

/* 1 when every key of the chunk [n0, n0 + len) is allowed for every row of
 * the block (prefix keys, or inside both the first and the last row's
 * range): the kernels skip masking such a chunk. */
FA_HD int fa_cta_chunk_full(const struct fa_cta_work *w, int n0, int len)
{
	return n0 + len <= w->pfx || (n0 >= w->lo_last && n0 + len <= w->hi_first);
}

/* 1 when key offset kr (key - base) is allowed for a row whose range,
 * relative to the same base, is [lo, hi) with prefix keys below pf. */
FA_HD int fa_cta_key_allowed(int kr, int lo, int hi, int pf)
{
	return (kr >= lo && kr < hi) || kr < pf;
}

/* ---- online softmax, exp2 domain (scores times scale * log2(e)) ----
 * Lazy rescaling: the running max m moves only when a new scaled max mx
 * exceeds it by more than FA_ONLINE_SLACK, so P = exp2(S - m) stays <= 2^8
 * (exact enough in fp32 sums, far below fp16's 65504) and O is rarely
 * rescaled. A row with no allowed key yet keeps m = -inf. */
#define FA_ONLINE_SLACK 8.0f

/* 1 when the running max must move to mx (-inf never moves it). */
FA_HD int fa_online_moves(float m_run, float mx)
{
	return mx > m_run + FA_ONLINE_SLACK;
}

/* The max to subtract: 0 for a row with no key yet, so that masked -inf
 * scores give exp2(-inf) = 0, never NaN. */
FA_HD float fa_online_m_use(float m_run)
{
	return m_run == -INFINITY ? 0.f : m_run;
}

/* The final 1 / l; a row that attended no key gets 0 (zeros, never NaN). */
FA_HD float fa_online_inv_l(float l)
{
	return l > 0.f ? 1.f / l : 0.f;
}

/* A split's log2-sum-exp2 for the merge; -inf (weight 0) for an empty range. */
FA_HD float fa_online_lse(float m_run, float l)
{
	return l > 0.f ? m_run + log2f(l) : -INFINITY;
}

/* The backward's view of the same masks, from a key block: the query
 * positions [*ib, *ie) of a sequence (lq queries, lk keys, keys [0, pfx)
 * visible to every row under prefix-LM) that may see a key of [j0, j0 +
 * nk). Rows' ranges move right with the row (bottom-right aligned), so the
 * rows form one range: from the first whose diagonal reaches j0 to, under
 * a sliding window, the last whose window still starts before j0 + nk. */
FA_HD void fa_cta_rows_for_keys(int mask, int lq, int lk, int window, int pfx, int j0, int nk,
				int *ib, int *ie)
{
	*ib = 0;
	*ie = lq;
	if (mask == FA_MASK_NONE || j0 < pfx)
		return;
	/* hi(i) = i + lk - lq + 1 > j0 */
	int64_t b = (int64_t)j0 - ((int64_t)lk - lq);
	b = b < 0 ? 0 : b > lq ? lq : b;
	*ib = (int)b;
	if (mask == FA_MASK_SLIDING_WINDOW) { /* lo(i) = i + lk - lq - window + 1 < j0 + nk */
		int64_t e = (int64_t)j0 + nk + window - 1 - ((int64_t)lk - lq);
		e = e < b ? b : e > lq ? lq : e;
		*ie = (int)e;
	}
}

#endif /* FA_CTA_H */
