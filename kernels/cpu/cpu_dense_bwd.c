/* cpu_dense_bwd.c - the naive "math path" backward: the whole fp32 P and dS
 * tensors materialised in the workspace, as autograd through the dense
 * forward keeps them.
 *   pass 1, per block of query rows of a (sequence, head): D = rowsum(dO *
 *     O); for every key, P = exp(scale q.k - lse) (0 where masked), dP =
 *     dO.v, dS = P (dP - D), both stored; dQ = scale * sum_j dS k_j;
 *   pass 2, per block of keys of a (sequence, kv head): dV = sum P^T dO and
 *     dK = scale * sum dS^T Q over every query row of the sequence and every
 *     query head of the GQA group, read back from the stored P and dS.
 * Each gradient element is summed by one work item in a fixed order: the
 * result does not depend on the thread count.
 *
 * P / dS layout: as cpu_dense's score tensor, [batch, heads, q_len,
 * kv_len] (varlen: [total_q, heads, kv_len]), dS after all of P.
 */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "../../harness/base/parallel.h"
#include "cpu_kernels.h"

/* Rows (pass 1) or keys (pass 2) per work item: each loaded row is reused
 * across the block. */
#define BWD_BLOCK 16

static int64_t score_rows(const struct fa_problem *p)
{
	return p->varlen ? (int64_t)p->total_q * p->heads : (int64_t)p->batch * p->heads * p->q_len;
}

size_t fa_cpu_dense_bwd_workspace_bytes(const struct fa_problem *p, const int32_t *params)
{
	size_t bytes;
	(void)params;
	/* P and dS; past size_t, all of it (no allocation gives it), not a wrapped size */
	if (__builtin_mul_overflow((size_t)score_rows(p), 2 * (size_t)p->kv_len * sizeof(float),
				   &bytes))
		return SIZE_MAX;
	return bytes;
}

struct dbwd_scratch {
	float *q, *dor; /* BWD_BLOCK rows of head_dim / head_dim_v (pass 2: one row each) */
	float *row, *row2; /* max(head_dim, head_dim_v) */
	float *acc_k, *acc_v; /* BWD_BLOCK x head_dim, BWD_BLOCK x head_dim_v */
};

struct dbwd_ctx {
	const struct fa_launch_args *a;
	const struct fa_problem *p;
	float *P, *dS;
	int64_t *qblock_start, *kblock_start; /* batch + 1 */
	struct dbwd_scratch *scratch;
	atomic_int stopped;
};

/* Offset of row t of (b, h) in the P / dS tensors. */
static int64_t srow(const struct dbwd_ctx *c, int b, int h, int32_t t)
{
	const struct fa_problem *p = c->p;
	int64_t r = p->varlen ? ((int64_t)c->a->cu_seqlens_q[b] + t) * p->heads + h
			      : ((int64_t)b * p->heads + h) * p->q_len + t;
	return r * p->kv_len;
}

/* Pass 1: item = (global query block, head). */
static void pass_rows(void *vctx, int64_t begin, int64_t end, int thread)
{
	struct dbwd_ctx *c = vctx;
	const struct fa_problem *p = c->p;
	const struct fa_launch_args *a = c->a;
	struct dbwd_scratch *w = &c->scratch[thread];
	const int32_t dk = p->head_dim, dv = p->head_dim_v, group = p->heads / p->kv_heads;
	for (int64_t idx = begin; idx < end; idx++) {
		int64_t g = idx / p->heads;
		int h = (int)(idx % p->heads), kvh = h / group;
		const struct fa_cpu_block k = fa_cpu_block_of(p, a, c->qblock_start, 0, BWD_BLOCK, g);
		const int b = k.b;
		const int32_t lq = k.lq, lk = k.lk, t0 = k.first, nr = k.n;
		int32_t prefix = p->mask == FA_MASK_PREFIX_LM ? fa_seq_prefix(p, a->prefix_lens, b) : 0;
		float delta[BWD_BLOCK], lse[BWD_BLOCK];
		if (fa_cpu_cancelled(&c->stopped, c->a))
			return;
		for (int32_t r = 0; r < nr; r++) {
			int64_t ooff = fa_o_offset(p, a->cu_seqlens_q, b, t0 + r, h);
			fa_cpu_load_row(w->q + (size_t)r * dk, a->q, p->dtype,
					fa_q_offset(p, a->cu_seqlens_q, b, t0 + r, h), dk);
			fa_cpu_load_row(w->dor + (size_t)r * dv, a->d_o, p->dtype, ooff, dv);
			fa_cpu_load_row(w->row, a->o, p->dtype, ooff, dv);
			delta[r] = fa_cpu_dot(w->dor + (size_t)r * dv, w->row, dv);
			lse[r] = a->lse[(fa_seq_q_start(p, a->cu_seqlens_q, b) + t0 + r) * p->heads + h];
		}
		memset(w->acc_k, 0, sizeof(float) * (size_t)nr * dk);
		for (int32_t j = 0; j < lk; j++) {
			fa_cpu_load_row(w->row, a->k, p->dtype, fa_k_offset(p, a->cu_seqlens_k, b, j, kvh),
					dk);
			fa_cpu_load_row(w->row2, a->v, p->dtype,
					fa_v_offset(p, a->cu_seqlens_k, b, j, kvh), dv);
			for (int32_t r = 0; r < nr; r++) {
				int64_t o = srow(c, b, h, t0 + r) + j;
				float pr = 0, ds = 0;
				if (fa_mask_allows(p->mask, t0 + r, j, lq, lk, prefix, p->window)) {
					float s = p->scale * fa_cpu_dot(w->q + (size_t)r * dk, w->row, dk);
					float dp = fa_cpu_dot(w->dor + (size_t)r * dv, w->row2, dv);
					pr = expf(s - lse[r]);
					ds = pr * (dp - delta[r]);
				}
				c->P[o] = pr;
				c->dS[o] = ds;
				fa_cpu_axpy(w->acc_k + (size_t)r * dk, ds, w->row, dk);
			}
		}
		for (int32_t r = 0; r < nr; r++)
			fa_cpu_store_scaled_row(a->dq, p->dtype,
						fa_q_offset(p, a->cu_seqlens_q, b, t0 + r, h),
						w->acc_k + (size_t)r * dk, p->scale, dk);
	}
}

/* Pass 2: item = (global key block, kv head). */
static void pass_keys(void *vctx, int64_t begin, int64_t end, int thread)
{
	struct dbwd_ctx *c = vctx;
	const struct fa_problem *p = c->p;
	const struct fa_launch_args *a = c->a;
	struct dbwd_scratch *w = &c->scratch[thread];
	const int32_t dk = p->head_dim, dv = p->head_dim_v, group = p->heads / p->kv_heads;
	for (int64_t idx = begin; idx < end; idx++) {
		int64_t g = idx / p->kv_heads;
		int kvh = (int)(idx % p->kv_heads);
		const struct fa_cpu_block k = fa_cpu_block_of(p, a, c->kblock_start, 1, BWD_BLOCK, g);
		const int b = k.b;
		const int32_t lq = k.lq, j0 = k.first, nc = k.n;
		if (fa_cpu_cancelled(&c->stopped, c->a))
			return;
		memset(w->acc_k, 0, sizeof(float) * (size_t)nc * dk);
		memset(w->acc_v, 0, sizeof(float) * (size_t)nc * dv);
		for (int32_t hh = 0; hh < group; hh++) {
			int h = kvh * group + hh;
			for (int32_t t = 0; t < lq; t++) {
				const int64_t o = srow(c, b, h, t) + j0;
				fa_cpu_load_row(w->q, a->q, p->dtype,
						fa_q_offset(p, a->cu_seqlens_q, b, t, h), dk);
				fa_cpu_load_row(w->dor, a->d_o, p->dtype,
						fa_o_offset(p, a->cu_seqlens_q, b, t, h), dv);
				for (int32_t j = 0; j < nc; j++) {
					fa_cpu_axpy(w->acc_v + (size_t)j * dv, c->P[o + j], w->dor, dv);
					fa_cpu_axpy(w->acc_k + (size_t)j * dk, c->dS[o + j], w->q, dk);
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

int fa_cpu_dense_bwd_launch(const struct fa_launch_args *a)
{
	const struct fa_problem *p = a->p;
	struct dbwd_ctx c = {.a = a, .p = p};
	int nthreads = a->nthreads > 0 ? a->nthreads : fa_cpu_threads();
	size_t need = fa_cpu_dense_bwd_workspace_bytes(p, a->params);
	size_t dk = (size_t)p->head_dim, dv = (size_t)p->head_dim_v, dmax = dk > dv ? dk : dv;
	int rc = 0;

	if (a->cancel && *a->cancel)
		return FA_KERNEL_CANCELLED;
	if (!FA_RECORD_HAS(struct fa_launch_args, a, dv) || !a->lse || !a->d_o || !a->dq ||
	    !a->dk || !a->dv)
		return FA_CPU_ERR_BWD_ARGS;
	if (need > 0 && (!a->workspace || a->workspace_bytes < need))
		return FA_CPU_ERR_WORKSPACE;
	c.P = a->workspace;
	c.dS = c.P + score_rows(p) * p->kv_len;
	atomic_init(&c.stopped, 0);
	c.qblock_start = malloc(sizeof(int64_t) * ((size_t)p->batch + 1));
	c.kblock_start = malloc(sizeof(int64_t) * ((size_t)p->batch + 1));
	c.scratch = calloc((size_t)nthreads, sizeof *c.scratch);
	if (!c.qblock_start || !c.kblock_start || !c.scratch) {
		rc = FA_CPU_ERR_NOMEM;
		goto done;
	}
	for (int t = 0; t < nthreads; t++) {
		struct dbwd_scratch *w = &c.scratch[t];
		w->q = malloc(sizeof(float) * BWD_BLOCK * (dk ? dk : 1));
		w->dor = malloc(sizeof(float) * BWD_BLOCK * (dv ? dv : 1));
		w->row = malloc(sizeof(float) * (dmax ? dmax : 1));
		w->row2 = malloc(sizeof(float) * (dmax ? dmax : 1));
		w->acc_k = malloc(sizeof(float) * BWD_BLOCK * (dk ? dk : 1));
		w->acc_v = malloc(sizeof(float) * BWD_BLOCK * (dv ? dv : 1));
		if (!w->q || !w->dor || !w->row || !w->row2 || !w->acc_k || !w->acc_v) {
			rc = FA_CPU_ERR_NOMEM;
			goto done;
		}
	}
	fa_cpu_block_starts(p, a, 0, BWD_BLOCK, c.qblock_start);
	fa_cpu_block_starts(p, a, 1, BWD_BLOCK, c.kblock_start);
	fa_parallel_for(c.qblock_start[p->batch] * p->heads, 1, nthreads, pass_rows, &c);
	if (!atomic_load(&c.stopped))
		fa_parallel_for(c.kblock_start[p->batch] * p->kv_heads, 1, nthreads, pass_keys, &c);
	if (atomic_load(&c.stopped))
		rc = FA_KERNEL_CANCELLED;
done:
	for (int t = 0; c.scratch && t < nthreads; t++) {
		free(c.scratch[t].q);
		free(c.scratch[t].dor);
		free(c.scratch[t].row);
		free(c.scratch[t].row2);
		free(c.scratch[t].acc_k);
		free(c.scratch[t].acc_v);
	}
	free(c.scratch);
	free(c.qblock_start);
	free(c.kblock_start);
	return rc;
}
