/* cpu_flash_bwd.c - FlashAttention-2 backward on the CPU.
 *
 * Three sweeps, each over work items that own their outputs, so that no two
 * threads write one element and the sums run in a fixed order (the result
 * is bit-identical for any thread count; a test runs it on 1 and 3):
 *   1. delta: D_i = rowsum(dO_i * O_i) for every query row (the pre-pass),
 *      into the workspace;
 *   2. dK, dV: one item per (sequence, kv head, tile of block_k keys). The
 *      tile's K and V are converted once; for every query head of the GQA
 *      group and every tile of block_q query rows that sees a key of it,
 *      P = exp(scale q.k - lse) is recomputed from the forward's
 *      log-sum-exp, dP = dO.v, dS = P (dP - D), and dV += P dO, dK += dS q
 *      are accumulated per KV tile in fp32 (GQA summed inside the item: no
 *      race between the heads of a group);
 *   3. dQ: one item per (sequence, query head, tile of block_q rows), over
 *      the key tiles its rows see: dQ += dS k, recomputing P and dS (FA2
 *      accumulates dQ with atomics across the KV tiles; recomputing keeps
 *      the CPU kernel deterministic without a dQ copy per tile).
 * Every mask (the tile ranges come from fa_mask_range), GQA, varlen and the
 * prefix lengths; keys no query sees get zero dK and dV.
 */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "../../harness/base/parallel.h"
#include "cpu_kernels.h"

/* Defaults (also in the kernel table), as the forward's: 16 query rows per
 * tile, 64 keys per tile (32 KiB of fp32 K at head_dim 128). */
#define DEFAULT_BLOCK_Q 16
#define DEFAULT_BLOCK_K 64

size_t fa_cpu_flash_bwd_workspace_bytes(const struct fa_problem *p, const int32_t *params)
{
	(void)params;
	return sizeof(float) * (size_t)p->total_q * (size_t)p->heads; /* delta */
}

struct bwd_scratch {
	float *k, *v;       /* block_k x head_dim, block_k x head_dim_v */
	float *q, *dor;     /* block_q x head_dim, block_q x head_dim_v */
	float *acc_k, *acc_v; /* block_k x head_dim, block_k x head_dim_v (dK, dV); acc_k holds dQ rows */
	float *lse, *delta; /* block_q */
	float *row;         /* max(head_dim, head_dim_v) */
	void *mem;
};

struct bwd_ctx {
	const struct fa_launch_args *a;
	const struct fa_problem *p;
	int32_t bq, bk;
	float *delta;        /* total_q * heads */
	int64_t *ktile_start; /* batch + 1: first key tile of each sequence */
	int64_t *qtile_start; /* batch + 1: first query tile of each sequence */
	struct bwd_scratch *scratch;
	atomic_int stopped;
};

/* Sweep 1: delta of query rows (T * heads + h) [begin, end). */
static void delta_rows(void *vctx, int64_t begin, int64_t end, int thread)
{
	struct bwd_ctx *c = vctx;
	const struct fa_problem *p = c->p;
	const struct fa_launch_args *a = c->a;
	struct bwd_scratch *w = &c->scratch[thread];
	const int32_t dv = p->head_dim_v;
	for (int64_t r = begin; r < end; r++) {
		int64_t T = r / p->heads;
		int h = (int)(r % p->heads);
		int64_t off = fa_tensor_offset(p, FA_TENSOR_O, T, h);
		if ((r & 255) == 0 && fa_cpu_cancelled(&c->stopped, c->a))
			return;
		fa_cpu_load_row(w->row, a->o, p->dtype, off, dv);
		fa_cpu_load_row(w->dor, a->d_o, p->dtype, off, dv);
		c->delta[r] = fa_cpu_dot(w->row, w->dor, dv);
	}
}

/* Loads query rows [i0, i0 + nr) of sequence b, head h: q, dO, lse, delta. */
static void load_q_tile(struct bwd_ctx *c, struct bwd_scratch *w, int b, int h, int32_t i0,
			int32_t nr)
{
	const struct fa_problem *p = c->p;
	const struct fa_launch_args *a = c->a;
	const int32_t dk = p->head_dim, dv = p->head_dim_v;
	const int64_t t0 = fa_seq_q_start(p, a->cu_seqlens_q, b);
	for (int32_t r = 0; r < nr; r++) {
		int64_t row = (t0 + i0 + r) * p->heads + h;
		fa_cpu_load_row(w->q + (size_t)r * dk, a->q, p->dtype,
				fa_q_offset(p, a->cu_seqlens_q, b, i0 + r, h), dk);
		fa_cpu_load_row(w->dor + (size_t)r * dv, a->d_o, p->dtype,
				fa_o_offset(p, a->cu_seqlens_q, b, i0 + r, h), dv);
		w->lse[r] = a->lse[row];
		w->delta[r] = c->delta[row];
	}
}

/* Loads keys [j0, j0 + nc) of sequence b, kv head kvh. */
static void load_kv_tile(struct bwd_ctx *c, struct bwd_scratch *w, int b, int kvh, int32_t j0,
			 int32_t nc)
{
	const struct fa_problem *p = c->p;
	const struct fa_launch_args *a = c->a;
	const int32_t dk = p->head_dim, dv = p->head_dim_v;
	for (int32_t j = 0; j < nc; j++) {
		fa_cpu_load_row(w->k + (size_t)j * dk, a->k, p->dtype,
				fa_k_offset(p, a->cu_seqlens_k, b, j0 + j, kvh), dk);
		fa_cpu_load_row(w->v + (size_t)j * dv, a->v, p->dtype,
				fa_v_offset(p, a->cu_seqlens_k, b, j0 + j, kvh), dv);
	}
}

/* 1 when some row of [i0, i0 + nr) may attend some key of [j0, j0 + nc):
 * both ends of a row's range grow with the row; the prefix is seen by all. */
static int tiles_meet(const struct fa_problem *p, int32_t i0, int32_t nr, int32_t j0, int32_t nc,
		      int32_t lq, int32_t lk, int32_t pl)
{
	int32_t lo_first, hi_first, lo_last, hi_last;
	if (j0 < pl)
		return 1;
	fa_mask_range(p->mask, i0, lq, lk, p->window, &lo_first, &hi_first);
	fa_mask_range(p->mask, i0 + nr - 1, lq, lk, p->window, &lo_last, &hi_last);
	return j0 < hi_last && j0 + nc > lo_first;
}

/* P and dS of query row r (loaded) and key j (loaded) of the tiles; 0 when
 * the mask says no. */
static void p_ds(const struct bwd_ctx *c, const struct bwd_scratch *w, int32_t r, int32_t j,
		 float *pr, float *ds)
{
	const struct fa_problem *p = c->p;
	const int32_t dk = p->head_dim, dv = p->head_dim_v;
	float s = p->scale * fa_cpu_dot(w->q + (size_t)r * dk, w->k + (size_t)j * dk, dk);
	float dp = fa_cpu_dot(w->dor + (size_t)r * dv, w->v + (size_t)j * dv, dv);
	*pr = expf(s - w->lse[r]); /* lse +inf (no key): 0 */
	*ds = *pr * (dp - w->delta[r]);
}

/* Sweep 2: item = (global key tile, kv head). */
static void dkv_items(void *vctx, int64_t begin, int64_t end, int thread)
{
	struct bwd_ctx *c = vctx;
	const struct fa_problem *p = c->p;
	const struct fa_launch_args *a = c->a;
	struct bwd_scratch *w = &c->scratch[thread];
	const int32_t dk = p->head_dim, dv = p->head_dim_v, group = p->heads / p->kv_heads;
	for (int64_t idx = begin; idx < end; idx++) {
		int64_t g = idx / p->kv_heads;
		int kvh = (int)(idx % p->kv_heads);
		const struct fa_cpu_block k = fa_cpu_block_of(p, a, c->ktile_start, 1, c->bk, g);
		const int b = k.b;
		const int32_t lq = k.lq, lk = k.lk, j0 = k.first, nc = k.n;
		int32_t pl = 0;
		if (fa_cpu_cancelled(&c->stopped, c->a))
			return;
		if (p->mask == FA_MASK_PREFIX_LM) {
			pl = fa_seq_prefix(p, a->prefix_lens, b);
			pl = pl < 0 ? 0 : pl > lk ? lk : pl;
		}
		load_kv_tile(c, w, b, kvh, j0, nc);
		memset(w->acc_k, 0, sizeof(float) * (size_t)nc * dk);
		memset(w->acc_v, 0, sizeof(float) * (size_t)nc * dv);
		for (int32_t hh = 0; hh < group; hh++) {
			int h = kvh * group + hh;
			for (int32_t i0 = 0; i0 < lq; i0 += c->bq) {
				int32_t nr = lq - i0 < c->bq ? lq - i0 : c->bq;
				if (!tiles_meet(p, i0, nr, j0, nc, lq, lk, pl))
					continue;
				load_q_tile(c, w, b, h, i0, nr);
				for (int32_t r = 0; r < nr; r++)
					for (int32_t j = 0; j < nc; j++) {
						float pr, ds;
						if (!fa_mask_allows(p->mask, i0 + r, j0 + j, lq, lk, pl,
								    p->window))
							continue;
						p_ds(c, w, r, j, &pr, &ds);
						fa_cpu_axpy(w->acc_v + (size_t)j * dv, pr,
							    w->dor + (size_t)r * dv, dv);
						fa_cpu_axpy(w->acc_k + (size_t)j * dk, ds,
							    w->q + (size_t)r * dk, dk);
					}
			}
		}
		for (int32_t j = 0; j < nc; j++) {
			fa_cpu_store_scaled_row(a->dk, p->dtype,
						fa_k_offset(p, a->cu_seqlens_k, b, j0 + j, kvh),
						w->acc_k + (size_t)j * dk, p->scale, dk);
			fa_cpu_store_row(a->dv, p->dtype, fa_v_offset(p, a->cu_seqlens_k, b, j0 + j, kvh),
					 w->acc_v + (size_t)j * dv, dv);
		}
	}
}

/* Sweep 3: item = (global query tile, head). */
static void dq_items(void *vctx, int64_t begin, int64_t end, int thread)
{
	struct bwd_ctx *c = vctx;
	const struct fa_problem *p = c->p;
	const struct fa_launch_args *a = c->a;
	struct bwd_scratch *w = &c->scratch[thread];
	const int32_t dk = p->head_dim, group = p->heads / p->kv_heads;
	for (int64_t idx = begin; idx < end; idx++) {
		int64_t g = idx / p->heads;
		int h = (int)(idx % p->heads), kvh = h / group;
		const struct fa_cpu_block k = fa_cpu_block_of(p, a, c->qtile_start, 0, c->bq, g);
		const int b = k.b;
		const int32_t lq = k.lq, lk = k.lk, i0 = k.first, nr = k.n;
		int32_t pl = 0;
		float *dq = w->acc_k; /* block_q x head_dim fits: acc_k is block_k x head_dim */
		if (fa_cpu_cancelled(&c->stopped, c->a))
			return;
		if (p->mask == FA_MASK_PREFIX_LM) {
			pl = fa_seq_prefix(p, a->prefix_lens, b);
			pl = pl < 0 ? 0 : pl > lk ? lk : pl;
		}
		load_q_tile(c, w, b, h, i0, nr);
		memset(dq, 0, sizeof(float) * (size_t)nr * dk);
		for (int32_t j0 = 0; j0 < lk; j0 += c->bk) {
			int32_t nc = lk - j0 < c->bk ? lk - j0 : c->bk;
			if (!tiles_meet(p, i0, nr, j0, nc, lq, lk, pl))
				continue;
			load_kv_tile(c, w, b, kvh, j0, nc);
			for (int32_t r = 0; r < nr; r++)
				for (int32_t j = 0; j < nc; j++) {
					float pr, ds;
					if (!fa_mask_allows(p->mask, i0 + r, j0 + j, lq, lk, pl, p->window))
						continue;
					p_ds(c, w, r, j, &pr, &ds);
					fa_cpu_axpy(dq + (size_t)r * dk, ds, w->k + (size_t)j * dk, dk);
				}
		}
		for (int32_t r = 0; r < nr; r++)
			fa_cpu_store_scaled_row(a->dq, p->dtype,
						fa_q_offset(p, a->cu_seqlens_q, b, i0 + r, h),
						dq + (size_t)r * dk, p->scale, dk);
	}
}

static int alloc_scratch(struct bwd_scratch *w, const struct fa_problem *p, int32_t bq,
			 int32_t bk)
{
	size_t dk = (size_t)p->head_dim, dv = (size_t)p->head_dim_v, rowmax = dk > dv ? dk : dv;
	size_t bmax = (size_t)(bq > bk ? bq : bk);
	size_t sizes[9] = {bk * dk, bk * dv, bq * dk, bq * dv, bmax * dk, bk * dv, bq, bq, rowmax};
	float **const ptrs[9] = {&w->k, &w->v, &w->q, &w->dor, &w->acc_k, &w->acc_v, &w->lse, &w->delta, &w->row};
	w->mem = fa_cpu_alloc_arrays(ptrs, sizes, 9);
	return w->mem ? 0 : -1;
}

int fa_cpu_flash_bwd_launch(const struct fa_launch_args *a)
{
	const struct fa_problem *p = a->p;
	struct bwd_ctx c = {.a = a, .p = p, .bq = DEFAULT_BLOCK_Q, .bk = DEFAULT_BLOCK_K};
	int nthreads = a->nthreads > 0 ? a->nthreads : fa_cpu_threads();
	size_t need = fa_cpu_flash_bwd_workspace_bytes(p, a->params);
	int rc = 0;

	if (a->cancel && *a->cancel)
		return FA_KERNEL_CANCELLED;
	if (!FA_RECORD_HAS(struct fa_launch_args, a, dv) || !a->lse || !a->d_o || !a->dq ||
	    !a->dk || !a->dv)
		return FA_CPU_ERR_BWD_ARGS;
	if (need > 0 && (!a->workspace || a->workspace_bytes < need))
		return FA_CPU_ERR_WORKSPACE;
	if (a->params) {
		c.bq = a->params[0];
		c.bk = a->params[1];
	}
	if (c.bq < 1 || c.bk < 1)
		return FA_CPU_ERR_PARAM;
	c.delta = a->workspace;
	atomic_init(&c.stopped, 0);
	c.ktile_start = malloc(sizeof(int64_t) * ((size_t)p->batch + 1));
	c.qtile_start = malloc(sizeof(int64_t) * ((size_t)p->batch + 1));
	c.scratch = calloc((size_t)nthreads, sizeof *c.scratch);
	if (!c.ktile_start || !c.qtile_start || !c.scratch) {
		rc = FA_CPU_ERR_NOMEM;
		goto done;
	}
	fa_cpu_block_starts(p, a, 0, c.bq, c.qtile_start);
	fa_cpu_block_starts(p, a, 1, c.bk, c.ktile_start);
	for (int t = 0; t < nthreads; t++)
		if (alloc_scratch(&c.scratch[t], p, c.bq, c.bk) != 0) {
			rc = FA_CPU_ERR_NOMEM;
			goto done;
		}
	fa_parallel_for((int64_t)p->total_q * p->heads, 256, nthreads, delta_rows, &c);
	if (!atomic_load(&c.stopped))
		fa_parallel_for(c.ktile_start[p->batch] * p->kv_heads, 1, nthreads, dkv_items, &c);
	if (!atomic_load(&c.stopped))
		fa_parallel_for(c.qtile_start[p->batch] * p->heads, 1, nthreads, dq_items, &c);
	if (atomic_load(&c.stopped))
		rc = FA_KERNEL_CANCELLED;
done:
	for (int t = 0; c.scratch && t < nthreads; t++)
		free(c.scratch[t].mem);
	free(c.scratch);
	free(c.ktile_start);
	free(c.qtile_start);
	return rc;
}
