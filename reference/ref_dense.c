/* ref_dense.c - the dense attention reference on the CPU: each requested
 * (query token, head) row computed exactly, scores, softmax and output in
 * fp64 over the keys the mask allows, and optionally the same row in the
 * input precision (fp32 arithmetic with the dtype's roundings) for the
 * flash-attention rule. Rows are independent, so they run on all threads and
 * the result does not depend on the thread count.
 */
#include "ref.h"

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "../harness/base/parallel.h"
#include "../kernels/common/fa_dtype.h"

/* Sequence index *b and position *t of packed token T, where a sequence has
 * len tokens (not varlen) or sequence b starts at token cu[b] (varlen). */
static void locate(const struct fa_problem *p, int32_t len, const int32_t *cu, int64_t T, int *b,
		   int32_t *t)
{
	int lo = 0, hi;
	if (!p->varlen) {
		*b = (int)(T / len);
		*t = (int32_t)(T % len);
		return;
	}
	/* the last sequence starting at or before T: empty sequences before it
	 * start at the same token and are passed over */
	hi = p->batch - 1;
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

void fa_ref_locate(const struct fa_problem *p, const int32_t *cu_seqlens_q, int64_t T, int *b,
		   int32_t *t)
{
	locate(p, p->q_len, cu_seqlens_q, T, b, t);
}

void fa_ref_locate_key(const struct fa_problem *p, const int32_t *cu_seqlens_k, int64_t T, int *b,
		       int32_t *t)
{
	locate(p, p->kv_len, cu_seqlens_k, T, b, t);
}

/* Per-thread scratch, sized for the longest sequence's keys. */
struct ref_scratch {
	float *q;       /* head_dim: the query row in fp32 */
	float *kv;      /* max(head_dim, head_dim_v): one key or value row in fp32 */
	double *s;      /* kv keys: fp64 scores */
	double *acc;    /* head_dim_v */
	float *fs;      /* kv keys: input-precision scores, then exp(s - max) */
	float *facc;    /* head_dim_v */
};

struct ref_ctx {
	const struct fa_problem *p;
	const int32_t *cu_q, *cu_k, *prefix_lens;
	const void *q, *k, *v;
	const int64_t *rows;
	int same_precision;
	volatile int *cancel;
	atomic_int stopped;
	struct ref_scratch *scratch;
	double *out;
	float *same;
};

/* n elements of buf (dtype) from element off, exactly, as fp32. */
static void load_row(float *dst, const void *buf, int dtype, int64_t off, int32_t n)
{
	const uint16_t *h = (const uint16_t *)buf + off;
	if (dtype == FA_DTYPE_FP32)
		memcpy(dst, (const float *)buf + off, sizeof(float) * (size_t)n);
	else if (dtype == FA_DTYPE_FP16)
		for (int32_t i = 0; i < n; i++)
			dst[i] = fa_f16_to_f32(h[i]);
	else
		for (int32_t i = 0; i < n; i++)
			dst[i] = fa_bf16_to_f32(h[i]);
}

/* One row, query already in w->q. The fp64 pass:
 *   out[d] = sum_j e_j v_jd / sum_j e_j,  e_j = exp(s_j - max s),
 *   s_j = scale * sum_d q_d k_jd,
 * over the allowed keys j. The input-precision pass (same != NULL) is what a
 * flash kernel computing in the input dtype gives (FA2 on tensor cores:
 * cuda_flash_mma), every sum in index order:
 *   s_j = scale * (fp32 dot)                  (fp32 accumulators, not rounded)
 *   e_j = expf(s_j - max s),  l = fp32 sum e_j  (the row sum of unrounded P)
 *   acc = fp32 sum_j round(e_j) v_j          (P rounded to the dtype for P V)
 *   same[d] = round(acc[d] * (1 / l))        (fp32 1/l, output in the dtype)
 * As one key tile holding every key: a kernel with several tiles subtracts
 * a running max instead, which rounds other values of P, by the same amount
 * in distribution.
 * Both passes share each key's and value's conversion to fp32. */
static void ref_row(const struct ref_ctx *c, struct ref_scratch *w, int b, int32_t t, int kvh,
		    double *out, float *same)
{
	const struct fa_problem *p = c->p;
	const int dt = p->dtype;
	const int32_t lq = fa_seq_q_len(p, c->cu_q, b), lk = fa_seq_kv_len(p, c->cu_k, b);
	const int32_t prefix = fa_seq_prefix(p, c->prefix_lens, b);
	double m = -INFINITY, l = 0;
	float fm = -INFINITY, fl = 0;

	for (int32_t j = 0; j < lk; j++) {
		double dot = 0;
		float fdot = 0;
		if (!fa_mask_allows(p->mask, t, j, lq, lk, prefix, p->window))
			continue;
		load_row(w->kv, c->k, dt, fa_k_offset(p, c->cu_k, b, j, kvh), p->head_dim);
		for (int32_t d = 0; d < p->head_dim; d++)
			dot += (double)w->q[d] * (double)w->kv[d];
		w->s[j] = (double)p->scale * dot;
		m = w->s[j] > m ? w->s[j] : m;
		if (!same)
			continue;
		for (int32_t d = 0; d < p->head_dim; d++)
			fdot += w->q[d] * w->kv[d];
		w->fs[j] = p->scale * fdot;
		fm = w->fs[j] > fm ? w->fs[j] : fm;
	}
	for (int32_t j = 0; same && j < lk; j++) {
		if (!fa_mask_allows(p->mask, t, j, lq, lk, prefix, p->window))
			continue;
		w->fs[j] = expf(w->fs[j] - fm);
		fl += w->fs[j];
	}
	memset(w->acc, 0, sizeof(double) * (size_t)p->head_dim_v);
	memset(w->facc, 0, sizeof(float) * (size_t)p->head_dim_v);
	for (int32_t j = 0; j < lk; j++) {
		double e;
		if (!fa_mask_allows(p->mask, t, j, lq, lk, prefix, p->window))
			continue;
		load_row(w->kv, c->v, dt, fa_v_offset(p, c->cu_k, b, j, kvh), p->head_dim_v);
		e = exp(w->s[j] - m);
		l += e;
		for (int32_t d = 0; d < p->head_dim_v; d++)
			w->acc[d] += e * (double)w->kv[d];
		if (same) {
			float pj = fa_round_to_dtype(w->fs[j], dt);
			for (int32_t d = 0; d < p->head_dim_v; d++)
				w->facc[d] += pj * w->kv[d];
		}
	}
	for (int32_t d = 0; d < p->head_dim_v; d++) { /* no allowed key: zeros */
		out[d] = l > 0 ? w->acc[d] / l : 0.0;
		if (same)
			same[d] = l > 0 ? fa_round_to_dtype(w->facc[d] * (1.0f / fl), dt) : 0.0f;
	}
}

static void ref_rows(void *vctx, int64_t begin, int64_t end, int thread)
{
	struct ref_ctx *c = vctx;
	const struct fa_problem *p = c->p;
	struct ref_scratch *w = &c->scratch[thread];
	const int group = p->heads / p->kv_heads;
	const int64_t dv = p->head_dim_v;
	for (int64_t i = begin; i < end; i++) {
		int64_t T = c->rows[i] / p->heads;
		int h = (int)(c->rows[i] % p->heads), b;
		int32_t t;
		if (atomic_load_explicit(&c->stopped, memory_order_relaxed))
			return;
		if (c->cancel && *c->cancel) {
			atomic_store(&c->stopped, 1);
			return;
		}
		fa_ref_locate(p, c->cu_q, T, &b, &t);
		load_row(w->q, c->q, p->dtype, fa_q_offset(p, c->cu_q, b, t, h), p->head_dim);
		ref_row(c, w, b, t, h / group, c->out + i * dv,
			c->same_precision ? c->same + i * dv : NULL);
	}
}

static void free_scratch(struct ref_scratch *s, int n)
{
	for (int i = 0; s && i < n; i++) {
		free(s[i].q);
		free(s[i].kv);
		free(s[i].s);
		free(s[i].acc);
		free(s[i].fs);
		free(s[i].facc);
	}
	free(s);
}

void fa_ref_free(struct fa_ref *r)
{
	if (!r)
		return;
	free(r->rows);
	free(r->out);
	free(r->same);
	memset(r, 0, sizeof *r);
}

enum fa_rc fa_ref_compute(const struct fa_problem *p, const int32_t *cu_seqlens_q,
			  const int32_t *cu_seqlens_k, const int32_t *prefix_lens, const void *q,
			  const void *k, const void *v, const int64_t *rows, int64_t n_rows,
			  int same_precision, int nthreads, volatile int *cancel,
			  struct fa_ref *ref, struct fa_err *err)
{
	struct ref_ctx c = {.p = p, .cu_q = cu_seqlens_q, .cu_k = cu_seqlens_k,
			    .prefix_lens = prefix_lens, .q = q, .k = k, .v = v,
			    .same_precision = same_precision, .cancel = cancel};
	int64_t n_total = (int64_t)p->total_q * p->heads, lk_max = p->varlen ? 0 : p->kv_len;
	size_t dv = (size_t)p->head_dim_v;
	enum fa_rc rc = FA_OK;

	memset(ref, 0, sizeof *ref);
	if (p->heads <= 0 || p->kv_heads <= 0 || p->heads % p->kv_heads != 0)
		return fa_err_set(err, FA_ERR_INTERNAL, "heads %d not divisible by kv_heads %d",
				  p->heads, p->kv_heads);
	for (int64_t i = 0; i < n_rows; i++)
		if (rows[i] < 0 || rows[i] >= n_total)
			return fa_err_set(err, FA_ERR_INTERNAL,
					  "reference row %lld out of range [0, %lld)",
					  (long long)rows[i], (long long)n_total);
	for (int b = 0; p->varlen && b < p->batch; b++)
		if (cu_seqlens_k[b + 1] - cu_seqlens_k[b] > lk_max)
			lk_max = cu_seqlens_k[b + 1] - cu_seqlens_k[b];
	if (nthreads <= 0)
		nthreads = fa_cpu_threads();
	atomic_init(&c.stopped, 0);

	ref->n_rows = n_rows;
	ref->rows = malloc(sizeof(int64_t) * (size_t)(n_rows ? n_rows : 1));
	ref->out = malloc(sizeof(double) * (size_t)(n_rows ? n_rows : 1) * (dv ? dv : 1));
	if (same_precision)
		ref->same = malloc(sizeof(float) * (size_t)(n_rows ? n_rows : 1) * (dv ? dv : 1));
	c.scratch = calloc((size_t)nthreads, sizeof *c.scratch);
	if (!ref->rows || !ref->out || (same_precision && !ref->same) || !c.scratch) {
		rc = fa_err_set(err, FA_ERR_NOMEM, "out of memory for the reference of %lld rows",
				(long long)n_rows);
		goto done;
	}
	for (int i = 0; i < nthreads; i++) {
		struct ref_scratch *s = &c.scratch[i];
		size_t nk = (size_t)(lk_max ? lk_max : 1);
		size_t row = (size_t)(p->head_dim > p->head_dim_v ? p->head_dim : p->head_dim_v);
		s->q = malloc(sizeof(float) * (size_t)(p->head_dim ? p->head_dim : 1));
		s->kv = malloc(sizeof(float) * (row ? row : 1));
		s->s = malloc(sizeof(double) * nk);
		s->acc = malloc(sizeof(double) * (dv ? dv : 1));
		s->fs = malloc(sizeof(float) * nk);
		s->facc = malloc(sizeof(float) * (dv ? dv : 1));
		if (!s->q || !s->kv || !s->s || !s->acc || !s->fs || !s->facc) {
			rc = fa_err_set(err, FA_ERR_NOMEM,
					"out of memory for the reference's scratch of %lld keys",
					(long long)lk_max);
			goto done;
		}
	}
	if (n_rows)
		memcpy(ref->rows, rows, sizeof(int64_t) * (size_t)n_rows);
	c.rows = ref->rows;
	c.out = ref->out;
	c.same = ref->same;
	/* a few rows per chunk: each row is O(kv_len * head_dim) work already */
	fa_parallel_for(n_rows, 4, nthreads, ref_rows, &c);
	if (atomic_load(&c.stopped))
		rc = fa_err_set(err, FA_ERR_CANCELLED, "reference cancelled");
done:
	free_scratch(c.scratch, nthreads);
	if (rc != FA_OK)
		fa_ref_free(ref);
	return rc;
}
