/* ref_bwd.c - the dense reference of the backward pass on the CPU: dQ of
 * chosen query rows and dK, dV of chosen key rows, each exactly, in fp64,
 * and optionally the same rows in the input precision (fp32 arithmetic with
 * the dtype's roundings) for the flash-attention rule.
 *
 * With s_ij = scale * q_i . k_j, P_ij = exp(s_ij - lse_i) over the keys the
 * mask allows, dP_ij = dO_i . v_j and D_i = dO_i . O_i = sum_j P_ij dP_ij:
 *   dS_ij = P_ij (dP_ij - D_i)
 *   dQ_i  = scale * sum_j dS_ij k_j
 *   dK_j  = scale * sum_(h in group) sum_i dS_ij q_i
 *   dV_j  =         sum_(h in group) sum_i P_ij dO_i
 * A key row's gradient needs lse and D of every query row of its sequence
 * and of every query head of its GQA group: those rows' statistics are
 * computed first (one forward pass of each), then the gradient rows, all on
 * all threads, independent of the thread count.
 *
 * The input-precision pass is what a flash backward computing in the input
 * dtype gives: lse from fp32 scores, O as the forward stores it (rounded to
 * the dtype), D = fp32 sum dO * O, P = expf(s - lse) in fp32 rounded to the
 * dtype for dV = P^T dO, dS in fp32 rounded to the dtype for dQ = dS K and
 * dK = dS^T Q, fp32 accumulators, gradients rounded to the dtype.
 */
#include "ref.h"

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "../harness/base/parallel.h"
#include "../kernels/common/fa_dtype.h"

void fa_ref_grad_free(struct fa_ref_grad *g)
{
	if (!g)
		return;
	free(g->q_rows);
	free(g->k_rows);
	free(g->dq);
	free(g->dk);
	free(g->dv);
	free(g->dq_same);
	free(g->dk_same);
	free(g->dv_same);
	memset(g, 0, sizeof *g);
}

/* Per query row statistics (only the rows a gradient needs). */
struct row_stats {
	double lse, delta;
	float flse, fdelta;
};

struct bwd_scratch {
	float *x, *y; /* max(head_dim, head_dim_v): two converted rows */
	float *dor;   /* head_dim_v: the row's dO */
	double *acc, *acc2; /* max(head_dim, head_dim_v) */
	float *facc, *facc2;
	double *s;    /* keys: fp64 scores (statistics pass) */
	float *fs;    /* keys: fp32 scores */
};

struct bwd_ctx {
	const struct fa_problem *p;
	const int32_t *cu_q, *cu_k, *prefix_lens;
	const void *q, *k, *v, *d_o;
	int same;
	volatile int *cancel;
	atomic_int stopped;
	struct bwd_scratch *scratch;
	int64_t *need;         /* query row ids whose statistics are computed */
	int64_t *slot;         /* total_q * heads: index into stats, -1 if none */
	struct row_stats *stats;
	struct fa_ref_grad *g;
};

static int bwd_cancelled(struct bwd_ctx *c)
{
	if (atomic_load_explicit(&c->stopped, memory_order_relaxed))
		return 1;
	if (c->cancel && *c->cancel) {
		atomic_store(&c->stopped, 1);
		return 1;
	}
	return 0;
}

static void load(float *dst, const void *buf, int dtype, int64_t off, int32_t n)
{
	for (int32_t i = 0; i < n; i++)
		dst[i] = fa_load_f32(buf, dtype, off + i);
}

/* Statistics of query row (b, t, h): lse and D in fp64 (O exact) and in the
 * input precision (O as the forward stores it). */
static void stats_row(struct bwd_ctx *c, struct bwd_scratch *w, int b, int32_t t, int h,
		      struct row_stats *st)
{
	const struct fa_problem *p = c->p;
	const int dt = p->dtype, kvh = h / (p->heads / p->kv_heads);
	const int32_t lq = fa_seq_q_len(p, c->cu_q, b), lk = fa_seq_kv_len(p, c->cu_k, b);
	const int32_t prefix = fa_seq_prefix(p, c->prefix_lens, b), dk = p->head_dim,
		      dv = p->head_dim_v;
	double m = -INFINITY, l = 0, delta = 0;
	float fm = -INFINITY, fl = 0, fdelta = 0;

	load(w->x, c->q, dt, fa_q_offset(p, c->cu_q, b, t, h), dk);
	load(w->dor, c->d_o, dt, fa_o_offset(p, c->cu_q, b, t, h), dv);
	for (int32_t j = 0; j < lk; j++) {
		double dot = 0;
		float fdot = 0;
		if (!fa_mask_allows(p->mask, t, j, lq, lk, prefix, p->window))
			continue;
		load(w->y, c->k, dt, fa_k_offset(p, c->cu_k, b, j, kvh), dk);
		for (int32_t d = 0; d < dk; d++) {
			dot += (double)w->x[d] * w->y[d];
			fdot += w->x[d] * w->y[d];
		}
		w->s[j] = (double)p->scale * dot;
		w->fs[j] = p->scale * fdot;
		m = w->s[j] > m ? w->s[j] : m;
		fm = w->fs[j] > fm ? w->fs[j] : fm;
	}
	for (int32_t d = 0; d < dv; d++) {
		w->acc[d] = 0;
		w->facc[d] = 0;
	}
	for (int32_t j = 0; j < lk; j++) {
		double e;
		float fe;
		if (!fa_mask_allows(p->mask, t, j, lq, lk, prefix, p->window))
			continue;
		load(w->y, c->v, dt, fa_v_offset(p, c->cu_k, b, j, kvh), dv);
		e = exp(w->s[j] - m);
		fe = expf(w->fs[j] - fm);
		l += e;
		fl += fe;
		fe = fa_round_to_dtype(fe, dt);
		for (int32_t d = 0; d < dv; d++) {
			w->acc[d] += e * w->y[d];
			w->facc[d] += fe * w->y[d];
		}
	}
	if (l > 0) {
		for (int32_t d = 0; d < dv; d++) {
			delta += (double)w->dor[d] * (w->acc[d] / l);
			fdelta += w->dor[d] * fa_round_to_dtype(w->facc[d] * (1.0f / fl), dt);
		}
	}
	st->lse = l > 0 ? m + log(l) : INFINITY;
	st->flse = fl > 0 ? fm + logf(fl) : INFINITY;
	st->delta = delta;
	st->fdelta = fdelta;
}

static void stats_rows(void *vctx, int64_t begin, int64_t end, int thread)
{
	struct bwd_ctx *c = vctx;
	const struct fa_problem *p = c->p;
	for (int64_t i = begin; i < end; i++) {
		int64_t r = c->need[i];
		int b;
		int32_t t;
		if (bwd_cancelled(c))
			return;
		fa_ref_locate(p, c->cu_q, r / p->heads, &b, &t);
		stats_row(c, &c->scratch[thread], b, t, (int)(r % p->heads), &c->stats[c->slot[r]]);
	}
}

/* dQ of the query rows [begin, end) of g->q_rows. */
static void dq_rows(void *vctx, int64_t begin, int64_t end, int thread)
{
	struct bwd_ctx *c = vctx;
	const struct fa_problem *p = c->p;
	struct bwd_scratch *w = &c->scratch[thread];
	const int dt = p->dtype;
	const int32_t dk = p->head_dim, dv = p->head_dim_v;
	for (int64_t i = begin; i < end; i++) {
		int64_t r = c->g->q_rows[i];
		const struct row_stats *st = &c->stats[c->slot[r]];
		int h = (int)(r % p->heads), b, kvh = h / (p->heads / p->kv_heads);
		int32_t t, lq, lk, prefix;
		if (bwd_cancelled(c))
			return;
		fa_ref_locate(p, c->cu_q, r / p->heads, &b, &t);
		lq = fa_seq_q_len(p, c->cu_q, b);
		lk = fa_seq_kv_len(p, c->cu_k, b);
		prefix = fa_seq_prefix(p, c->prefix_lens, b);
		load(w->x, c->q, dt, fa_q_offset(p, c->cu_q, b, t, h), dk);
		load(w->dor, c->d_o, dt, fa_o_offset(p, c->cu_q, b, t, h), dv);
		for (int32_t d = 0; d < dk; d++) {
			w->acc[d] = 0;
			w->facc[d] = 0;
		}
		for (int32_t j = 0; j < lk; j++) {
			double dot = 0, dp = 0, pr, ds;
			float fdot = 0, fdp = 0, fpr, fds;
			if (!fa_mask_allows(p->mask, t, j, lq, lk, prefix, p->window))
				continue;
			load(w->y, c->v, dt, fa_v_offset(p, c->cu_k, b, j, kvh), dv);
			for (int32_t d = 0; d < dv; d++) {
				dp += (double)w->dor[d] * w->y[d];
				fdp += w->dor[d] * w->y[d];
			}
			load(w->y, c->k, dt, fa_k_offset(p, c->cu_k, b, j, kvh), dk);
			for (int32_t d = 0; d < dk; d++) {
				dot += (double)w->x[d] * w->y[d];
				fdot += w->x[d] * w->y[d];
			}
			pr = exp((double)p->scale * dot - st->lse);
			ds = pr * (dp - st->delta);
			fpr = expf(p->scale * fdot - st->flse);
			fds = fa_round_to_dtype(fpr * (fdp - st->fdelta), dt);
			for (int32_t d = 0; d < dk; d++) {
				w->acc[d] += ds * w->y[d];
				w->facc[d] += fds * w->y[d];
			}
		}
		for (int32_t d = 0; d < dk; d++) {
			c->g->dq[i * dk + d] = (double)p->scale * w->acc[d];
			if (c->same)
				c->g->dq_same[i * dk + d] = fa_round_to_dtype(p->scale * w->facc[d], dt);
		}
	}
}

/* dK and dV of the key rows [begin, end) of g->k_rows (id T * kv_heads + kvh). */
static void dkv_rows(void *vctx, int64_t begin, int64_t end, int thread)
{
	struct bwd_ctx *c = vctx;
	const struct fa_problem *p = c->p;
	struct bwd_scratch *w = &c->scratch[thread];
	const int dt = p->dtype, group = p->heads / p->kv_heads;
	const int32_t dk = p->head_dim, dv = p->head_dim_v;
	float *kr = w->fs, *vr = w->fs + dk; /* the key's rows; fs has room for both */
	for (int64_t i = begin; i < end; i++) {
		int64_t r = c->g->k_rows[i];
		int kvh = (int)(r % p->kv_heads), b;
		int32_t j, lq, lk, prefix;
		if (bwd_cancelled(c))
			return;
		fa_ref_locate_key(p, c->cu_k, r / p->kv_heads, &b, &j);
		lq = fa_seq_q_len(p, c->cu_q, b);
		lk = fa_seq_kv_len(p, c->cu_k, b);
		prefix = fa_seq_prefix(p, c->prefix_lens, b);
		load(kr, c->k, dt, fa_k_offset(p, c->cu_k, b, j, kvh), dk);
		load(vr, c->v, dt, fa_v_offset(p, c->cu_k, b, j, kvh), dv);
		for (int32_t d = 0; d < dk; d++) {
			w->acc[d] = 0;
			w->facc[d] = 0;
		}
		for (int32_t d = 0; d < dv; d++) {
			w->acc2[d] = 0;
			w->facc2[d] = 0;
		}
		for (int hh = 0; hh < group; hh++) {
			int h = kvh * group + hh;
			for (int32_t t = 0; t < lq; t++) {
				int64_t qr = (fa_seq_q_start(p, c->cu_q, b) + t) * p->heads + h;
				const struct row_stats *st = &c->stats[c->slot[qr]];
				double dot = 0, dp = 0, pr, ds;
				float fdot = 0, fdp = 0, fpr, fds, fpr_r;
				if (!fa_mask_allows(p->mask, t, j, lq, lk, prefix, p->window))
					continue;
				load(w->x, c->q, dt, fa_q_offset(p, c->cu_q, b, t, h), dk);
				load(w->dor, c->d_o, dt, fa_o_offset(p, c->cu_q, b, t, h), dv);
				for (int32_t d = 0; d < dk; d++) {
					dot += (double)w->x[d] * kr[d];
					fdot += w->x[d] * kr[d];
				}
				for (int32_t d = 0; d < dv; d++) {
					dp += (double)w->dor[d] * vr[d];
					fdp += w->dor[d] * vr[d];
				}
				pr = exp((double)p->scale * dot - st->lse);
				ds = pr * (dp - st->delta);
				fpr = expf(p->scale * fdot - st->flse);
				fds = fa_round_to_dtype(fpr * (fdp - st->fdelta), dt);
				fpr_r = fa_round_to_dtype(fpr, dt);
				for (int32_t d = 0; d < dk; d++) {
					w->acc[d] += ds * w->x[d];
					w->facc[d] += fds * w->x[d];
				}
				for (int32_t d = 0; d < dv; d++) {
					w->acc2[d] += pr * w->dor[d];
					w->facc2[d] += fpr_r * w->dor[d];
				}
			}
		}
		for (int32_t d = 0; d < dk; d++) {
			c->g->dk[i * dk + d] = (double)p->scale * w->acc[d];
			if (c->same)
				c->g->dk_same[i * dk + d] = fa_round_to_dtype(p->scale * w->facc[d], dt);
		}
		for (int32_t d = 0; d < dv; d++) {
			c->g->dv[i * dv + d] = w->acc2[d];
			if (c->same)
				c->g->dv_same[i * dv + d] = fa_round_to_dtype(w->facc2[d], dt);
		}
	}
}

static void free_scratch(struct bwd_scratch *s, int n)
{
	for (int i = 0; s && i < n; i++) {
		free(s[i].x);
		free(s[i].y);
		free(s[i].dor);
		free(s[i].acc);
		free(s[i].acc2);
		free(s[i].facc);
		free(s[i].facc2);
		free(s[i].s);
		free(s[i].fs);
	}
	free(s);
}

/* Marks query row r as needing statistics. */
static void need_row(struct bwd_ctx *c, int64_t r, int64_t *n_need)
{
	if (c->slot[r] < 0) {
		c->slot[r] = *n_need;
		c->need[(*n_need)++] = r;
	}
}

enum fa_rc fa_ref_bwd_compute(const struct fa_problem *p, const int32_t *cu_seqlens_q,
			      const int32_t *cu_seqlens_k, const int32_t *prefix_lens, const void *q,
			      const void *k, const void *v, const void *d_o, const int64_t *q_rows,
			      int64_t n_q, const int64_t *k_rows, int64_t n_k, int same_precision,
			      int nthreads, volatile int *cancel, struct fa_ref_grad *g,
			      struct fa_err *err)
{
	struct bwd_ctx c = {.p = p, .cu_q = cu_seqlens_q, .cu_k = cu_seqlens_k,
			    .prefix_lens = prefix_lens, .q = q, .k = k, .v = v, .d_o = d_o,
			    .same = same_precision, .cancel = cancel, .g = g};
	const int64_t n_total = (int64_t)p->total_q * p->heads, n_ktotal = (int64_t)p->total_k * p->kv_heads;
	const size_t dk = (size_t)p->head_dim, dv = (size_t)p->head_dim_v, dmax = dk > dv ? dk : dv;
	int64_t lk_max = p->varlen ? 0 : p->kv_len, n_need = 0;
	int64_t *pair_done = NULL; /* (sequence, kv head) pairs whose rows are marked */
	enum fa_rc rc = FA_OK;

	memset(g, 0, sizeof *g);
	if (p->heads <= 0 || p->kv_heads <= 0 || p->heads % p->kv_heads != 0)
		return fa_err_set(err, FA_ERR_INTERNAL, "heads %d not divisible by kv_heads %d",
				  p->heads, p->kv_heads);
	for (int64_t i = 0; i < n_q; i++)
		if (q_rows[i] < 0 || q_rows[i] >= n_total)
			return fa_err_set(err, FA_ERR_INTERNAL, "reference row %lld out of range [0, %lld)",
					  (long long)q_rows[i], (long long)n_total);
	for (int64_t i = 0; i < n_k; i++)
		if (k_rows[i] < 0 || k_rows[i] >= n_ktotal)
			return fa_err_set(err, FA_ERR_INTERNAL,
					  "reference key row %lld out of range [0, %lld)",
					  (long long)k_rows[i], (long long)n_ktotal);
	for (int b = 0; p->varlen && b < p->batch; b++)
		if (cu_seqlens_k[b + 1] - cu_seqlens_k[b] > lk_max)
			lk_max = cu_seqlens_k[b + 1] - cu_seqlens_k[b];
	if (nthreads <= 0)
		nthreads = fa_cpu_threads();
	atomic_init(&c.stopped, 0);

#define ALLOC(ptr, n) ((ptr) = malloc(sizeof *(ptr) * (size_t)((n) > 0 ? (n) : 1)))
	g->n_q = n_q;
	g->n_k = n_k;
	ALLOC(g->q_rows, n_q);
	ALLOC(g->k_rows, n_k);
	ALLOC(g->dq, n_q * (int64_t)dk);
	ALLOC(g->dk, n_k * (int64_t)dk);
	ALLOC(g->dv, n_k * (int64_t)dv);
	if (same_precision) {
		ALLOC(g->dq_same, n_q * (int64_t)dk);
		ALLOC(g->dk_same, n_k * (int64_t)dk);
		ALLOC(g->dv_same, n_k * (int64_t)dv);
	}
	ALLOC(c.slot, n_total);
	ALLOC(c.need, n_total);
	ALLOC(pair_done, (int64_t)p->batch * p->kv_heads);
	c.scratch = calloc((size_t)nthreads, sizeof *c.scratch);
	if (!g->q_rows || !g->k_rows || !g->dq || !g->dk || !g->dv || !c.slot || !c.need ||
	    !pair_done || !c.scratch ||
	    (same_precision && (!g->dq_same || !g->dk_same || !g->dv_same))) {
		rc = fa_err_set(err, FA_ERR_NOMEM, "out of memory for the backward reference");
		goto done;
	}
	for (int i = 0; i < nthreads; i++) {
		struct bwd_scratch *s = &c.scratch[i];
		ALLOC(s->x, (int64_t)dmax);
		ALLOC(s->y, (int64_t)dmax);
		ALLOC(s->dor, (int64_t)dv);
		ALLOC(s->acc, (int64_t)dmax);
		ALLOC(s->acc2, (int64_t)dmax);
		ALLOC(s->facc, (int64_t)dmax);
		ALLOC(s->facc2, (int64_t)dmax);
		ALLOC(s->s, lk_max);
		/* keys' fp32 scores, and room for a key row and a value row */
		ALLOC(s->fs, lk_max > (int64_t)(dk + dv) ? lk_max : (int64_t)(dk + dv));
		if (!s->x || !s->y || !s->dor || !s->acc || !s->acc2 || !s->facc || !s->facc2 ||
		    !s->s || !s->fs) {
			rc = fa_err_set(err, FA_ERR_NOMEM,
					"out of memory for the backward reference's scratch");
			goto done;
		}
	}
#undef ALLOC
	if (n_q)
		memcpy(g->q_rows, q_rows, sizeof(int64_t) * (size_t)n_q);
	if (n_k)
		memcpy(g->k_rows, k_rows, sizeof(int64_t) * (size_t)n_k);
	for (int64_t i = 0; i < n_total; i++)
		c.slot[i] = -1;
	for (int64_t i = 0; i < (int64_t)p->batch * p->kv_heads; i++)
		pair_done[i] = 0;
	/* the query rows whose statistics a gradient row needs */
	for (int64_t i = 0; i < n_q; i++)
		need_row(&c, q_rows[i], &n_need);
	for (int64_t i = 0; i < n_k; i++) {
		int kvh = (int)(k_rows[i] % p->kv_heads), b, group = p->heads / p->kv_heads;
		int32_t j;
		fa_ref_locate_key(p, cu_seqlens_k, k_rows[i] / p->kv_heads, &b, &j);
		if (pair_done[(int64_t)b * p->kv_heads + kvh]++)
			continue;
		for (int hh = 0; hh < group; hh++)
			for (int32_t t = 0; t < fa_seq_q_len(p, cu_seqlens_q, b); t++)
				need_row(&c, (fa_seq_q_start(p, cu_seqlens_q, b) + t) * p->heads +
						     kvh * group + hh,
					 &n_need);
	}
	c.stats = malloc(sizeof *c.stats * (size_t)(n_need ? n_need : 1));
	if (!c.stats) {
		rc = fa_err_set(err, FA_ERR_NOMEM, "out of memory for %lld rows' statistics",
				(long long)n_need);
		goto done;
	}
	fa_parallel_for(n_need, 4, nthreads, stats_rows, &c);
	if (!atomic_load(&c.stopped))
		fa_parallel_for(n_q, 4, nthreads, dq_rows, &c);
	if (!atomic_load(&c.stopped))
		fa_parallel_for(n_k, 1, nthreads, dkv_rows, &c);
	if (atomic_load(&c.stopped))
		rc = fa_err_set(err, FA_ERR_CANCELLED, "reference cancelled");
done:
	free_scratch(c.scratch, nthreads);
	free(c.slot);
	free(c.need);
	free(c.stats);
	free(pair_done);
	if (rc != FA_OK)
		fa_ref_grad_free(g);
	return rc;
}
