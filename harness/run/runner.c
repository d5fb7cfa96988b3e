/* runner.c - one case on one backend.
 *
 * For a case: estimate memory per kernel and skip what does not fit or is
 * not supported; allocate and fill Q, K, V (on the device when the backend
 * can, with the same bits as the host); compute the reference for the
 * checked rows; then per kernel: poison the output, launch once, check it,
 * and take timed samples under the stopping rule. A watchdog thread turns
 * the per-kernel timeout (and a signal) into the cancel flag that CPU
 * kernels poll.
 */
#include "runner.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../../kernels/common/fa_dtype.h"
#include "../../reference/ref.h"
#include "check.h"
#include "crash.h"
#include "data.h"
#include "../base/npy.h"
#include "../report/table.h"
#include "../base/util.h"

/* Share of the free device memory a case may use by default: the rest is
 * left for the runtime, the host's own use, and fragmentation. */
#define FA_DEFAULT_BUDGET_FRACTION 0.75
/* Checked rows whose reference costs more multiply-adds than this go to the
 * GPU reference under `reference: auto` (a few seconds of CPU time). */
#define FA_REF_CPU_AUTO_LIMIT 4.0e9
/* Cold samples discard measurements taken below this share of the maximum
 * SM clock (nvbench's throttling rule). */
#define FA_THROTTLE_FRACTION 0.75

struct fa_runner_case;

const struct fa_case_kernel *volatile fa_runner_running;

struct fa_runner {
	struct fa_backend_slot *slot;
	struct fa_runner_cfg cfg;
	double budget;
	/* watchdog */
	pthread_t wd;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int wd_running, wd_stop;
	double deadline; /* 0: no timeout */
	volatile int kcancel; /* what kernels and the reference poll */
	int timed_out;
	int armed;        /* a kernel or the reference runs */
	double cancel_at; /* when kcancel was set while armed, 0: not */
	double grace;     /* how long after a timeout it is stuck (cfg.stuck_exit) */
	struct fa_runner_case *cur; /* the case between prepare and finish */
	/* --ab with shared buffers (fa_runner_share): the runner whose buffers
	 * this one borrows, or the one that borrows this one's and the kernels
	 * it runs on the current case */
	struct fa_runner *lender, *borrower;
	const struct fa_case_kernel *peer_ks;
	int peer_n;
	/* --ab with swapped buffers (fa_runner_cross): the other side, and
	 * whether this round samples on its buffers */
	struct fa_runner *cross_peer;
	int crossed;
	long n_crossed;
	/* best observed GFLOP/s per kernel (by pointer), to skip hopeless cases */
	const struct fa_kernel *rate_k[64];
	double rate_gflops[64];
	int n_rates;
};

static void *watchdog_main(void *arg)
{
	struct fa_runner *r = arg;
	pthread_mutex_lock(&r->mu);
	while (!r->wd_stop) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 10 * 1000 * 1000; /* poll every 10 ms */
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&r->cv, &r->mu, &ts);
		double now = fa_now_s();
		if (r->cfg.cancel && *r->cfg.cancel)
			r->kcancel = 1;
		if (r->deadline > 0 && now > r->deadline) {
			r->timed_out = 1;
			r->kcancel = 1;
		}
		if (!r->armed || !r->kcancel || !r->cfg.stuck_exit)
			continue;
		if (r->cancel_at == 0)
			r->cancel_at = now;
		if (now > r->cancel_at + (r->timed_out ? r->grace : FA_STUCK_GRACE_S)) {
			/* a kernel that does not poll its cancel flag, or a GPU
			 * kernel that does not end: nothing in this process can
			 * stop it, and the run would wait forever */
			char what[256];
			snprintf(what, sizeof what,
				 "it has not returned %.0f s after %s (a CPU kernel polls "
				 "*a->cancel and returns FA_KERNEL_CANCELLED)",
				 now - r->cancel_at,
				 r->timed_out ? "its timeout passed" : "the run was interrupted");
			/* run's exit statuses: a case timed out, or interrupted */
			fa_crash_stuck(what, r->timed_out ? 1 : 130);
		}
	}
	pthread_mutex_unlock(&r->mu);
	return NULL;
}

static void arm(struct fa_runner *r, double seconds)
{
	pthread_mutex_lock(&r->mu);
	r->kcancel = r->cfg.cancel && *r->cfg.cancel;
	r->timed_out = 0;
	r->deadline = seconds > 0 ? fa_now_s() + seconds : 0;
	r->armed = 1;
	r->cancel_at = 0;
	r->grace = seconds > FA_STUCK_GRACE_S ? seconds : FA_STUCK_GRACE_S;
	pthread_mutex_unlock(&r->mu);
}

static void disarm(struct fa_runner *r)
{
	pthread_mutex_lock(&r->mu);
	r->deadline = 0;
	r->armed = 0;
	pthread_mutex_unlock(&r->mu);
}

struct fa_runner *fa_runner_new(struct fa_backend_slot *slot, const struct fa_runner_cfg *cfg,
				struct fa_err *err)
{
	struct fa_runner *r = calloc(1, sizeof *r);
	if (!r) {
		fa_err_set(err, FA_ERR_NOMEM, "out of memory");
		return NULL;
	}
	r->slot = slot;
	r->cfg = *cfg;
	if (r->cfg.nthreads <= 0)
		r->cfg.nthreads = 1;
	r->budget = cfg->mem_budget_bytes;
	if (r->budget <= 0) {
		struct fa_device_info info;
		if (slot->be.iface.device_info(slot->be.context, &info) == 0 && info.mem_free_bytes > 0)
			r->budget = FA_DEFAULT_BUDGET_FRACTION * (double)info.mem_free_bytes;
		else
			r->budget = 1.0 * (1 << 30);
	}
	pthread_mutex_init(&r->mu, NULL);
	pthread_cond_init(&r->cv, NULL);
	if (pthread_create(&r->wd, NULL, watchdog_main, r) != 0) {
		fa_err_set(err, FA_ERR_INTERNAL, "cannot start the watchdog thread: %s",
			   strerror(errno));
		pthread_mutex_destroy(&r->mu);
		pthread_cond_destroy(&r->cv);
		free(r);
		return NULL;
	}
	r->wd_running = 1;
	return r;
}

void fa_runner_free(struct fa_runner *r)
{
	if (!r)
		return;
	fa_runner_finish(r);
	if (r->wd_running) {
		pthread_mutex_lock(&r->mu);
		r->wd_stop = 1;
		pthread_cond_signal(&r->cv);
		pthread_mutex_unlock(&r->mu);
		pthread_join(r->wd, NULL);
	}
	pthread_mutex_destroy(&r->mu);
	pthread_cond_destroy(&r->cv);
	free(r);
}

double fa_runner_budget(const struct fa_runner *r)
{
	return r->budget;
}

void fa_case_kernel_text(struct fa_case_kernel *ck, char *buf, size_t size)
{
	size_t len = 0;
	buf[0] = '\0';
	for (int i = 0; i < ck->k->n_params && i < FA_KERNEL_MAX_PARAMS; i++) {
		len += (size_t)snprintf(buf + len, size - len, "%s%s=%d", i ? "," : "",
					ck->k->params[i].name, ck->params[i]);
		if (len >= size)
			len = size - 1;
	}
	ck->params_text = buf;
}

void fa_case_kernel_init(struct fa_case_kernel *ck, const struct fa_kernel *k,
			 struct fa_backend_slot *slot)
{
	memset(ck, 0, sizeof *ck);
	ck->k = k;
	ck->slot = slot;
	for (int i = 0; i < k->n_params && i < FA_KERNEL_MAX_PARAMS; i++)
		ck->params[i] = k->params[i].default_value;
	ck->params_text = "";
}

static double io_bytes(const struct fa_problem *p)
{
	double e = 0;
	for (int t = FA_TENSOR_Q; t <= FA_TENSOR_O; t++)
		e += (double)fa_tensor_elems(p, t);
	return e * fa_dtype_size(p->dtype) + 3.0 * 4 * (p->batch + 1);
}

double fa_runner_mem_estimate(const struct fa_case *c, const struct fa_case_kernel *ck)
{
	const struct fa_problem *p = &c->p;
	double ws = ck->k->workspace_bytes ? (double)ck->k->workspace_bytes(p, ck->params) : 0;
	double scores = (double)ck->k->score_bytes * p->batch * p->heads * (double)p->q_len * p->kv_len;
	double bwd = 0;
	if (c->pass != FA_PASS_FWD) {
		/* dO and the gradients as large as O and the inputs, the LSE, and
		 * the forward kernel's own workspace */
		const char *fname = fa_kernel_fwd_name(ck->k);
		const struct fa_kernel *fk = fname ? fa_backend_kernel_find(ck->slot, fname) : NULL;
		bwd = io_bytes(p) + 4.0 * p->total_q * p->heads;
		if (fk && fk->workspace_bytes)
			bwd += (double)fk->workspace_bytes(p, NULL);
	}
	return io_bytes(p) + (ws > scores ? ws : scores) + bwd;
}

static double *rate_slot(struct fa_runner *r, const struct fa_kernel *k)
{
	for (int i = 0; i < r->n_rates; i++)
		if (r->rate_k[i] == k)
			return &r->rate_gflops[i];
	if (r->n_rates < 64) {
		r->rate_k[r->n_rates] = k;
		r->rate_gflops[r->n_rates] = 0;
		return &r->rate_gflops[r->n_rates++];
	}
	return NULL;
}

/* ---- per-case state ---- */

struct case_bufs {
	void *q, *k, *v, *o;
	int32_t *cu_q, *cu_k, *prefix; /* backend copies */
	void *hq, *hk, *hv;            /* host inputs for the CPU reference (may alias q/k/v) */
	void *ho;                      /* host copy of an output */
	int host_inputs_owned;
	size_t o_bytes;
	/* bwd and fwd_bwd cases: dO, the gradients and the LSE (backend), dO
	 * on the host for the reference, and host copies of the gradients */
	void *d_o, *dq, *dk, *dv;
	float *lse;
	void *hdo, *hdq, *hdk, *hdv;
	size_t q_bytes, k_bytes, v_bytes, lse_bytes;
};

static void dev_free(struct fa_backend_slot *s, void *p);

static void bufs_free(struct fa_backend_slot *s, struct case_bufs *b)
{
	void *dev[] = {b->q, b->k, b->v, b->o, b->cu_q, b->cu_k, b->prefix,
		       b->d_o, b->dq, b->dk, b->dv, b->lse};
	for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++)
		dev_free(s, dev[i]);
	if (b->host_inputs_owned) {
		free(b->hq);
		free(b->hk);
		free(b->hv);
	}
	if (!s->info.host_memory) {
		free(b->ho);
		free(b->hdo);
		free(b->hdq);
		free(b->hdk);
		free(b->hdv);
	}
	memset(b, 0, sizeof *b);
}

static enum fa_rc be_fail(struct fa_backend_slot *s, int code, const char *what, struct fa_err *err)
{
	char buf[512];
	int sticky = s->be.iface.is_sticky && s->be.iface.is_sticky(s->be.context, code);
	fa_err_set(err, sticky ? FA_ERR_STICKY : FA_ERR_BACKEND, "%s failed: %s", what,
		   fa_backend_strerror(s, code, buf, sizeof buf));
	return sticky ? FA_ERR_STICKY : FA_ERR_BACKEND;
}

/* Host-memory buffers start on a page boundary, whatever the backend's
 * allocator gives: where a buffer starts within a page (and so how Q, K, V
 * and O fall on cache sets and 4K aliases relative to each other) changed a
 * kernel's time by up to 2.5%, fixed for a whole run. Two builds of one
 * plugin in `run --ab` then differed by that much on a case in an A/A
 * (docs/compare.md, "Why an A/A flagged rows"); page-aligned, both sides
 * lay out alike. The allocation's own pointer is kept just below the
 * aligned one, for dev_free. */
#define FA_HOST_BUF_ALIGN 4096

static enum fa_rc dev_alloc(struct fa_backend_slot *s, size_t bytes, void **p, const char *what,
			    struct fa_err *err)
{
	size_t extra = s->info.host_memory ? FA_HOST_BUF_ALIGN + sizeof(void *) : 0;
	int rc = s->be.iface.alloc(s->be.context, bytes + extra, p);
	if (rc != 0) {
		char b[32], buf[256];
		fa_format_bytes((double)bytes, b, sizeof b);
		snprintf(buf, sizeof buf, "allocating %s (%s)", what, b);
		return be_fail(s, rc, buf, err);
	}
	if (extra) {
		uintptr_t base = (uintptr_t)*p, at = base + sizeof(void *);
		at = (at + FA_HOST_BUF_ALIGN - 1) & ~(uintptr_t)(FA_HOST_BUF_ALIGN - 1);
		((void **)at)[-1] = *p;
		*p = (void *)at;
	}
	return FA_OK;
}

/* Frees a buffer of dev_alloc. */
static void dev_free(struct fa_backend_slot *s, void *p)
{
	if (p)
		s->be.iface.free(s->be.context, s->info.host_memory ? ((void **)p)[-1] : p);
}

static enum fa_rc setup_inputs(struct fa_runner *r, const struct fa_case *c, struct case_bufs *b,
			       int need_host, struct fa_err *err)
{
	struct fa_backend_slot *s = r->slot;
	const struct fa_problem *p = &c->p;
	void *ctx = s->be.context;
	int elt = fa_dtype_size(p->dtype);
	void **dst[3] = {&b->q, &b->k, &b->v};
	void **host[3] = {&b->hq, &b->hk, &b->hv};
	static const char *const names[3] = {"Q", "K", "V"};
	enum fa_rc rc;
	int code;

	b->o_bytes = (size_t)fa_tensor_elems(p, FA_TENSOR_O) * (size_t)elt;
	for (int t = 0; t < 3; t++) {
		size_t bytes = (size_t)fa_tensor_elems(p, t) * (size_t)elt;
		if ((rc = dev_alloc(s, bytes, dst[t], names[t], err)) != FA_OK)
			return rc;
	}
	if ((rc = dev_alloc(s, b->o_bytes, &b->o, "O", err)) != FA_OK)
		return rc;
	if (p->varlen) {
		size_t cb = sizeof(int32_t) * (size_t)(p->batch + 1);
		if ((rc = dev_alloc(s, cb, (void **)&b->cu_q, "cu_seqlens_q", err)) != FA_OK ||
		    (rc = dev_alloc(s, cb, (void **)&b->cu_k, "cu_seqlens_k", err)) != FA_OK)
			return rc;
		if ((code = s->be.iface.upload(ctx, b->cu_q, c->cu_seqlens_q, cb)) != 0 ||
		    (code = s->be.iface.upload(ctx, b->cu_k, c->cu_seqlens_k, cb)) != 0)
			return be_fail(s, code, "uploading cu_seqlens", err);
	}
	if (c->prefix_lens) {
		size_t pb = sizeof(int32_t) * (size_t)p->batch;
		if ((rc = dev_alloc(s, pb, (void **)&b->prefix, "prefix_lens", err)) != FA_OK)
			return rc;
		if ((code = s->be.iface.upload(ctx, b->prefix, c->prefix_lens, pb)) != 0)
			return be_fail(s, code, "uploading prefix_lens", err);
	}

	if (s->info.host_memory) {
		/* the backend's buffers are host memory: fill in place */
		for (int t = 0; t < 3; t++) {
			fa_data_fill(p, t, c->dist, c->seed, *dst[t], r->cfg.nthreads);
			*host[t] = *dst[t];
		}
		b->ho = b->o;
		return FA_OK;
	}
	b->ho = malloc(b->o_bytes ? b->o_bytes : 1);
	if (!b->ho)
		return fa_err_set(err, FA_ERR_NOMEM, "out of host memory for the output copy");
	if (need_host || !s->be.iface.fill_random) {
		b->host_inputs_owned = 1;
		for (int t = 0; t < 3; t++) {
			size_t bytes = (size_t)fa_tensor_elems(p, t) * (size_t)elt;
			*host[t] = malloc(bytes ? bytes : 1);
			if (!*host[t])
				return fa_err_set(err, FA_ERR_NOMEM, "out of host memory for %s",
						  names[t]);
			fa_data_fill(p, t, c->dist, c->seed, *host[t], r->cfg.nthreads);
		}
	}
	for (int t = 0; t < 3; t++) {
		size_t bytes = (size_t)fa_tensor_elems(p, t) * (size_t)elt;
		if (s->be.iface.fill_random)
			code = s->be.iface.fill_random(ctx, *dst[t], p, t, c->dist, c->seed);
		else
			code = s->be.iface.upload(ctx, *dst[t], *host[t], bytes);
		if (code != 0)
			return be_fail(s, code, "filling inputs", err);
	}
	if ((code = s->be.iface.synchronize(ctx)) != 0)
		return be_fail(s, code, "filling inputs", err);
	return FA_OK;
}

/* bwd and fwd_bwd cases: allocates dO (filled from the counter RNG's
 * stream FA_TENSOR_DO, also on the host for the reference), dQ, dK, dV and
 * the LSE, and host copies of the gradients. */
static enum fa_rc setup_bwd(struct fa_runner *r, const struct fa_case *c, struct case_bufs *b,
			    struct fa_err *err)
{
	struct fa_backend_slot *s = r->slot;
	const struct fa_problem *p = &c->p;
	const size_t elt = (size_t)fa_dtype_size(p->dtype);
	enum fa_rc rc;
	int code;

	b->q_bytes = (size_t)fa_tensor_elems(p, FA_TENSOR_Q) * elt;
	b->k_bytes = (size_t)fa_tensor_elems(p, FA_TENSOR_K) * elt;
	b->v_bytes = (size_t)fa_tensor_elems(p, FA_TENSOR_V) * elt;
	b->lse_bytes = sizeof(float) * (size_t)p->total_q * (size_t)p->heads;
	if ((rc = dev_alloc(s, b->o_bytes, &b->d_o, "dO", err)) != FA_OK ||
	    (rc = dev_alloc(s, b->q_bytes, &b->dq, "dQ", err)) != FA_OK ||
	    (rc = dev_alloc(s, b->k_bytes, &b->dk, "dK", err)) != FA_OK ||
	    (rc = dev_alloc(s, b->v_bytes, &b->dv, "dV", err)) != FA_OK ||
	    (rc = dev_alloc(s, b->lse_bytes, (void **)&b->lse, "the LSE", err)) != FA_OK)
		return rc;
	if (s->info.host_memory) {
		fa_data_fill(p, FA_TENSOR_DO, c->dist, c->seed, b->d_o, r->cfg.nthreads);
		b->hdo = b->d_o;
		b->hdq = b->dq;
		b->hdk = b->dk;
		b->hdv = b->dv;
		return FA_OK;
	}
	b->hdo = malloc(b->o_bytes ? b->o_bytes : 1);
	b->hdq = malloc(b->q_bytes ? b->q_bytes : 1);
	b->hdk = malloc(b->k_bytes ? b->k_bytes : 1);
	b->hdv = malloc(b->v_bytes ? b->v_bytes : 1);
	if (!b->hdo || !b->hdq || !b->hdk || !b->hdv)
		return fa_err_set(err, FA_ERR_NOMEM, "out of host memory for the gradients");
	fa_data_fill(p, FA_TENSOR_DO, c->dist, c->seed, b->hdo, r->cfg.nthreads);
	if ((code = s->be.iface.upload(s->be.context, b->d_o, b->hdo, b->o_bytes)) != 0 ||
	    (code = s->be.iface.synchronize(s->be.context)) != 0)
		return be_fail(s, code, "uploading dO", err);
	return FA_OK;
}

static void launch_args(struct fa_runner *r, const struct fa_case *c, const struct case_bufs *b,
			const struct fa_case_kernel *ck, void *ws, size_t ws_bytes,
			struct fa_launch_args *a)
{
	fa_backend_launch_args_init(r->slot, a); /* struct_size, backend_ctx, stream */
	a->p = &c->p;
	a->q = b->q;
	a->k = b->k;
	a->v = b->v;
	a->o = b->o;
	a->cu_seqlens_q = b->cu_q;
	a->cu_seqlens_k = b->cu_k;
	a->prefix_lens = b->prefix;
	a->params = ck ? ck->params : NULL;
	a->workspace = ws;
	a->workspace_bytes = ws_bytes;
	a->cancel = &r->kcancel;
	a->nthreads = r->cfg.nthreads;
	if (ck && fa_kernel_pass(ck->k) == FA_PASS_BWD) {
		a->lse = b->lse;
		a->d_o = b->d_o;
		a->dq = b->dq;
		a->dk = b->dk;
		a->dv = b->dv;
	}
}

/* Where the reference of case c is computed: 1 on the GPU, 0 on the CPU. */
static int ref_on_gpu(const struct fa_runner *r, const struct fa_case *c, int64_t n_rows)
{
	const struct fa_check_cfg *cc = c->check;
	const struct fa_problem *p = &c->p;
	if (!r->slot->be.iface.reference || r->slot->info.host_memory || cc->rule == FA_RULE_FA ||
	    c->pass != FA_PASS_FWD) /* the backward's reference is on the CPU only */
		return 0;
	if (cc->reference == FA_REF_GPU)
		return 1;
	if (cc->reference == FA_REF_CPU)
		return 0;
	return (double)n_rows * p->kv_len * (p->head_dim + p->head_dim_v) > FA_REF_CPU_AUTO_LIMIT;
}

/* The backward's reference: dQ of the forward's check rows, dK and dV of
 * fa_check_select_kv_rows's key rows, on the CPU. */
static enum fa_rc compute_grad_reference(struct fa_runner *r, const struct fa_case *c,
					 struct case_bufs *b, const struct fa_ref *ref,
					 struct fa_ref_grad *g, struct fa_err *err)
{
	const struct fa_problem *p = &c->p;
	int64_t *krows = NULL, nk = 0;
	enum fa_rc rc;
	if ((rc = fa_check_select_kv_rows(p, c->cu_seqlens_k, c->check, c->seed, &krows, &nk,
					  err)) != FA_OK)
		return rc;
	arm(r, r->cfg.timeout_s > 0 ? r->cfg.timeout_s : c->measure->timeout_s);
	rc = fa_ref_bwd_compute(p, c->cu_seqlens_q, c->cu_seqlens_k, c->prefix_lens, b->hq, b->hk,
				b->hv, b->hdo, ref->rows, ref->n_rows, krows, nk,
				c->check->rule == FA_RULE_FA, r->cfg.nthreads, &r->kcancel, g, err);
	disarm(r);
	free(krows);
	if (rc == FA_ERR_CANCELLED && r->timed_out && !(r->cfg.cancel && *r->cfg.cancel)) {
		err->rc = FA_OK;
		return fa_err_set(err, FA_ERR_TIMEOUT,
				  "the backward reference ran past the timeout of %g s",
				  r->cfg.timeout_s > 0 ? r->cfg.timeout_s : c->measure->timeout_s);
	}
	return rc;
}

static enum fa_rc compute_reference(struct fa_runner *r, const struct fa_case *c,
				    struct case_bufs *b, struct fa_ref *ref, int on_gpu,
				    struct fa_err *err)
{
	const struct fa_problem *p = &c->p;
	int64_t *rows = NULL, n = 0;
	enum fa_rc rc;
	if ((rc = fa_check_select_rows(p, c->check, c->seed, &rows, &n, err)) != FA_OK)
		return rc;
	arm(r, r->cfg.timeout_s > 0 ? r->cfg.timeout_s : c->measure->timeout_s);
	if (on_gpu) {
		struct fa_launch_args a;
		memset(ref, 0, sizeof *ref);
		ref->rows = rows;
		ref->n_rows = n;
		ref->out = malloc(sizeof(double) * (size_t)(n * p->head_dim_v + 1));
		if (!ref->out) {
			disarm(r);
			fa_ref_free(ref);
			return fa_err_set(err, FA_ERR_NOMEM, "out of memory for the reference");
		}
		launch_args(r, c, b, NULL, NULL, 0, &a);
		int code = r->slot->be.iface.reference(r->slot->be.context, &a, rows, n, ref->out);
		disarm(r);
		if (code != 0) {
			fa_ref_free(ref);
			return be_fail(r->slot, code, "the GPU reference", err);
		}
		return FA_OK;
	}
	rc = fa_ref_compute(p, c->cu_seqlens_q, c->cu_seqlens_k, c->prefix_lens, b->hq, b->hk, b->hv,
			    rows, n, c->check->rule == FA_RULE_FA, r->cfg.nthreads, &r->kcancel, ref,
			    err);
	disarm(r);
	free(rows);
	if (rc == FA_ERR_CANCELLED && r->timed_out && !(r->cfg.cancel && *r->cfg.cancel)) {
		err->rc = FA_OK;
		return fa_err_set(err, FA_ERR_TIMEOUT, "the reference ran past the timeout of %g s",
				  r->cfg.timeout_s > 0 ? r->cfg.timeout_s : c->measure->timeout_s);
	}
	return rc;
}

/* ---- timing ---- */

struct sample_ctx {
	struct fa_runner *r;
	const struct fa_case_kernel *ck;
	struct fa_launch_args *a;
	const struct fa_kernel *fwd;    /* fwd_bwd: launched before ck, with fa */
	struct fa_launch_args *fa;
	void *ev0, *ev1;
	int cold;
	void *graph;
	int graph_n;
	struct fa_telemetry tel;
	int have_tel;
};

/* Tells the backend which flush a cold sample takes: the environment
 * variable FABENCH_FLUSH, which flush_cache reads (include/fabench/plugin.h;
 * kernels/common/fa_backend_gpu.h): "clean" for cold-clean, "write" for
 * cold. Set between cases, while no kernel runs, and only when it changes. */
static void tell_flush(const char *mode)
{
	const char *now = getenv("FABENCH_FLUSH");
	if (!now || strcmp(now, mode) != 0)
		setenv("FABENCH_FLUSH", mode, 1);
}

static int one_sample(void *vctx, double *ms, struct fa_err *err)
{
	struct sample_ctx *sc = vctx;
	struct fa_backend_slot *s = sc->r->slot;
	void *ctx = s->be.context;
	int code;
	if (sc->cold && s->be.iface.flush_cache && (code = s->be.iface.flush_cache(ctx)) != 0)
		return be_fail(s, code, "flushing the cache", err);
	if ((code = s->be.iface.event_record(ctx, sc->ev0)) != 0)
		return be_fail(s, code, "recording an event", err);
	if (sc->graph) {
		code = s->be.iface.graph_launch(ctx, sc->graph);
	} else {
		code = sc->fwd ? sc->fwd->launch(sc->fa) : 0;
		if (code == 0)
			code = sc->ck->k->launch(sc->a);
	}
	if (code == FA_KERNEL_CANCELLED && s->info.host_memory)
		return fa_err_set(err, FA_ERR_TIMEOUT, "cancelled");
	if (code != 0)
		return be_fail(s, code, "launch", err);
	if ((code = s->be.iface.event_record(ctx, sc->ev1)) != 0)
		return be_fail(s, code, "recording an event", err);
	if ((code = s->be.iface.event_elapsed_ms(ctx, sc->ev0, sc->ev1, ms)) != 0)
		return be_fail(s, code, "timing", err);
	if (sc->graph && sc->graph_n > 0)
		*ms /= sc->graph_n;
	if (s->be.iface.telemetry) {
		struct fa_telemetry t;
		if (s->be.iface.telemetry(ctx, &t) == 0) {
			sc->tel = t;
			sc->have_tel = 1;
			if (t.sm_clock_max_mhz > 0 && t.sm_clock_mhz > 0 &&
			    t.sm_clock_mhz < FA_THROTTLE_FRACTION * t.sm_clock_max_mhz)
				return 1; /* throttled: drop this sample */
		}
	}
	return 0;
}

static void result_init(struct fa_result *res, const struct fa_case_kernel *ck)
{
	memset(res, 0, sizeof *res);
	res->kernel = ck->k->name;
	res->backend = ck->slot->name;
	res->params = ck->params_text;
	res->timing = "";
	res->st.same_max_abs = -1;
	res->st.worst_index = -1;
	res->tel.sm_clock_mhz = res->tel.sm_clock_max_mhz = NAN;
	res->tel.temp_c = res->tel.power_w = NAN;
	res->tel.throttle_reasons = -1;
}

static void set_status(struct fa_result *res, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void set_status(struct fa_result *res, int status, const char *fmt, ...)
{
	va_list ap;
	res->status = status;
	va_start(ap, fmt);
	vsnprintf(res->reason, sizeof res->reason, fmt, ap);
	va_end(ap);
}

static enum fa_rc dump_case(struct fa_runner *r, const struct fa_case *c, struct case_bufs *b,
			    const struct fa_ref *ref, const struct fa_ref_grad *g,
			    const char *kernel, struct fa_err *err);

/* One kernel of the current case: its launch, check and sampler. */
struct kstate {
	const struct fa_case_kernel *ck;
	struct fa_result *res;
	struct fa_samples *samples;
	struct fa_launch_args a;
	void *ws;
	size_t ws_alloc_bytes; /* what ws holds: the larger of both sides' when shared */
	int ws_held;     /* ws is shared: kept until fa_runner_finish, not per kernel */
	int ws_borrowed; /* ws belongs to the lender: never freed here */
	struct sample_ctx sc;
	struct fa_launch_args a_cross; /* a on the other side's buffers (fa_runner_cross) */
	struct fa_measure_state ms;
	double timeout, deadline;
	int sampling; /* 1 while samples are still to be taken */
	int reported; /* the progress callback has seen its result */
	int abandoned; /* not run because the device became unusable: its result
	                  is final here, but not reported, so that a worker's
	                  parent (--isolate) runs it again in a fresh process */
	/* a backward kernel: its forward kernel (default tunables), launch
	 * and workspace */
	const struct fa_kernel *fk;
	int32_t fparams[FA_KERNEL_MAX_PARAMS];
	struct fa_launch_args fa;
	void *fws;
};

/* The case being run: prepared by fa_runner_prepare, sampled in turn by
 * fa_runner_sample, released by fa_runner_finish. */
struct fa_runner_case {
	const struct fa_case *c;
	struct case_bufs b;
	struct fa_ref ref;
	struct fa_ref_grad gref; /* bwd and fwd_bwd cases */
	struct kstate *ks;
	int n, next;
	int prepared;
	int inputs_ready; /* b holds filled inputs (a borrower may use them) */
	int b_borrowed;   /* b is the lender's: not freed here */
	/* cold graphs: n_rot copies of b's Q, K, V and O (4 pointers each),
	 * made for the first kernel that wants them, kept for the others */
	void **rot;
	int n_rot;
};

static void kstate_release(struct fa_runner *r, struct kstate *k)
{
	struct fa_backend_slot *s = r->slot;
	void *ctx = s->be.context;
	if (k->sc.graph)
		s->be.iface.graph_destroy(ctx, k->sc.graph);
	if (k->sc.ev0)
		s->be.iface.event_destroy(ctx, k->sc.ev0);
	if (k->sc.ev1)
		s->be.iface.event_destroy(ctx, k->sc.ev1);
	if (k->ws && !k->ws_held) {
		dev_free(s, k->ws);
		k->ws = NULL;
	}
	if (k->fws) {
		dev_free(s, k->fws);
		k->fws = NULL;
	}
	k->sc.graph = k->sc.ev0 = k->sc.ev1 = NULL;
}

/* The workspace of kernel k (index i of the case) in bytes, shared with the
 * kernel of the same index and name of the other side of a --ab pair when
 * the runners share buffers: the lender allocates the larger of the two
 * sizes once, the borrower takes it. Sets k->ws when it borrows. */
static size_t shared_workspace(struct fa_runner *r, struct fa_runner_case *cs, struct kstate *k,
			       size_t own_bytes)
{
	int i = (int)(k - cs->ks);
	const char *name = k->ck->k->name;
	const struct fa_problem *p = &cs->c->p;
	if (r->borrower) {
		size_t bytes = own_bytes;
		if (i < r->peer_n && strcmp(r->peer_ks[i].k->name, name) == 0 &&
		    r->peer_ks[i].k->workspace_bytes) {
			size_t peer = r->peer_ks[i].k->workspace_bytes(p, r->peer_ks[i].params);
			if (peer > bytes)
				bytes = peer;
		}
		k->ws_held = 1;
		return bytes;
	}
	if (r->lender && r->lender->cur && r->lender->cur->c == cs->c && own_bytes) {
		struct fa_runner_case *lc = r->lender->cur;
		struct kstate *lk = i < lc->n ? &lc->ks[i] : NULL;
		if (lk && lk->ws && lk->ws_held && lk->ws_alloc_bytes >= own_bytes &&
		    strcmp(lk->ck->k->name, name) == 0) {
			k->ws = lk->ws;
			k->ws_held = k->ws_borrowed = 1;
			return lk->ws_alloc_bytes;
		}
	}
	return own_bytes;
}

/* Checks the gradients of a backward against g after O was checked with
 * verdict v_out (its reason, in res->reason, gets an "O: " prefix when it
 * failed); each failing gradient appends "dQ: reason". Returns the verdict
 * of all four. */
static int check_grads(const struct fa_case *c, const struct case_bufs *b,
		       const struct fa_ref_grad *g, struct fa_result *res, int v_out)
{
	static const char *const label[FA_GRAD_COUNT] = {"dQ", "dK", "dV"};
	const int tensor[FA_GRAD_COUNT] = {FA_TENSOR_DQ, FA_TENSOR_DK, FA_TENSOR_DV};
	const void *buf[FA_GRAD_COUNT] = {b->hdq, b->hdk, b->hdv};
	const int64_t *rows[FA_GRAD_COUNT] = {g->q_rows, g->k_rows, g->k_rows};
	const int64_t n[FA_GRAD_COUNT] = {g->n_q, g->n_k, g->n_k};
	const double *ref[FA_GRAD_COUNT] = {g->dq, g->dk, g->dv};
	const float *same[FA_GRAD_COUNT] = {g->dq_same, g->dk_same, g->dv_same};
	int v = v_out;
	if (v_out != FA_VERDICT_PASS) {
		char tmp[sizeof res->reason];
		memcpy(tmp, res->reason, sizeof tmp);
		memcpy(res->reason, "O: ", 3);
		memcpy(res->reason + 3, tmp, sizeof tmp - 3);
		res->reason[sizeof res->reason - 1] = '\0';
	}
	for (int i = 0; i < FA_GRAD_COUNT; i++) {
		char rule[16], why[sizeof res->reason];
		why[0] = '\0';
		if (fa_check_compare_tensor(&c->p, c->cu_seqlens_q, c->cu_seqlens_k, tensor[i], buf[i],
					    rows[i], n[i], ref[i], same[i], c->check,
					    &res->st_grad[i], rule, sizeof rule, why,
					    sizeof why) == FA_VERDICT_PASS)
			continue;
		size_t len = v == FA_VERDICT_PASS ? 0 : strnlen(res->reason, sizeof res->reason);
		snprintf(res->reason + len, sizeof res->reason - len, "%s%s: %s", len ? "; " : "",
			 label[i], why);
		v = FA_VERDICT_FAIL;
	}
	res->grad_checked = 1;
	return v;
}

/* ---- cold graphs ---- */

/* A graph of launches timed with a cold cache (measure: graph_launches, and
 * the cache not hot) cycles over sets of the case's buffers: b's and
 * copies of it, as the layers of one decode step each read their own K and
 * V. Enough sets that FA_ROT_L2_TIMES times the last-level cache is read
 * between two reads of one set, so that after the flush before each replay
 * no launch finds its inputs in the cache; at most one set per launch. */
#define FA_ROT_L2_TIMES 3

/* The sets a cold graph of n launches of case p cycles over; 0 when the
 * device does not say how large its cache is (then no cold graph). */
static int rot_sets(const struct fa_runner *r, const struct fa_problem *p, int n)
{
	double l2 = (double)r->slot->info.l2_bytes, set = 0;
	for (int t = FA_TENSOR_Q; t <= FA_TENSOR_O; t++)
		set += (double)fa_tensor_elems(p, t) * fa_dtype_size(p->dtype);
	if (l2 <= 0 || n < 1)
		return 0;
	double want = ceil(FA_ROT_L2_TIMES * l2 / (set > 0 ? set : 1));
	return want >= n ? n : want < 1 ? 1 : (int)want;
}

/* Makes sure the case has at least n_sets - 1 copies of b, filled with the
 * same inputs as b (the output zeroed). */
static enum fa_rc rot_copies(struct fa_runner *r, struct fa_runner_case *cs, int n_sets,
			     struct fa_err *err)
{
	struct fa_backend_slot *s = r->slot;
	void *ctx = s->be.context;
	const struct fa_case *c = cs->c;
	const struct fa_problem *p = &c->p;
	const void *host[3] = {cs->b.hq, cs->b.hk, cs->b.hv};
	static const char *const names[4] = {"a copy of Q", "a copy of K", "a copy of V",
					     "a copy of O"};
	int code;
	if (cs->n_rot >= n_sets - 1)
		return FA_OK;
	void **nr = realloc(cs->rot, sizeof *nr * 4 * (size_t)(n_sets - 1));
	if (!nr)
		return fa_err_set(err, FA_ERR_NOMEM, "out of host memory");
	cs->rot = nr;
	for (int i = cs->n_rot; i < n_sets - 1; i++) {
		void **set = nr + 4 * i;
		enum fa_rc rc = FA_OK;
		memset(set, 0, 4 * sizeof *set);
		for (int t = 0; t < 4 && rc == FA_OK; t++) {
			size_t bytes = (size_t)fa_tensor_elems(p, t) * (size_t)fa_dtype_size(p->dtype);
			if ((rc = dev_alloc(s, bytes, &set[t], names[t], err)) != FA_OK)
				break;
			code = t == FA_TENSOR_O	       ? s->be.iface.memset(ctx, set[t], 0, bytes)
			       : s->be.iface.fill_random ? s->be.iface.fill_random(ctx, set[t], p, t,
										 c->dist, c->seed)
							 : s->be.iface.upload(ctx, set[t], host[t], bytes);
			if (code != 0)
				rc = be_fail(s, code, "filling a copy of the inputs", err);
		}
		if (rc != FA_OK) {
			for (int t = 0; t < 4; t++)
				dev_free(s, set[t]);
			return rc;
		}
		cs->n_rot = i + 1;
	}
	if ((code = s->be.iface.synchronize(ctx)) != 0)
		return be_fail(s, code, "filling a copy of the inputs", err);
	return FA_OK;
}

/* Captures k's cold graph of n launches; on success sets k->sc.graph and
 * the result's timing "graph-cold". When the copies do not fit or the
 * capture fails, k is timed in single launches as without a graph. */
static void cold_graph(struct fa_runner *r, struct fa_runner_case *cs, struct kstate *k, int n)
{
	struct fa_backend_slot *s = r->slot;
	int sets = rot_sets(r, &cs->c->p, n);
	struct fa_launch_args *a;
	struct fa_err e;
	fa_err_clear(&e);
	if (sets < 1 || rot_copies(r, cs, sets, &e) != FA_OK || !(a = malloc(sizeof *a * (size_t)sets)))
		return;
	for (int i = 0; i < sets; i++) {
		a[i] = k->a;
		if (i > 0) {
			void **set = cs->rot + 4 * (i - 1);
			a[i].q = set[FA_TENSOR_Q];
			a[i].k = set[FA_TENSOR_K];
			a[i].v = set[FA_TENSOR_V];
			a[i].o = set[FA_TENSOR_O];
		}
	}
	if (s->be.iface.graph_create_sets(s->be.context, k->ck->k, a, sets, n, &k->sc.graph) == 0) {
		k->sc.graph_n = n;
		k->res->timing = "graph-cold";
	} else {
		k->sc.graph = NULL;
	}
	free(a);
}

/* The checked launch of kernel k on a poisoned output, then its sampler set
 * up. Returns FA_OK (status in k->res; k->sampling set when it is to be
 * timed), FA_ERR_STICKY or FA_ERR_CANCELLED. */
/* The name of k's output files under --dump: its kernel's name, and when
 * the case runs the kernel with several params (a --param sweep), its
 * params in brackets ("cpu_flash[block_q=8,block_k=64]"; its place among
 * them, "[#2]", where they would make a name too long for a file). */
static void dump_name(const struct fa_runner_case *cs, const struct kstate *k, char *buf,
		      size_t size)
{
	int swept = 0, nth = 0;
	for (int i = 0; i < cs->n; i++)
		if (cs->ks[i].ck->k == k->ck->k) {
			swept |= &cs->ks[i] != k;
			nth += &cs->ks[i] <= k;
		}
	if (!swept)
		snprintf(buf, size, "%.63s", k->ck->k->name);
	else if (strlen(k->ck->k->name) + strlen(k->ck->params_text) < 200)
		snprintf(buf, size, "%.63s[%.200s]", k->ck->k->name, k->ck->params_text);
	else
		snprintf(buf, size, "%.63s[#%d]", k->ck->k->name, nth);
}

static enum fa_rc check_kernel(struct fa_runner *r, struct fa_runner_case *rc_, struct kstate *k,
			       struct fa_err *err)
{
	struct fa_backend_slot *s = r->slot;
	void *ctx = s->be.context;
	const struct fa_case *c = rc_->c;
	const struct fa_problem *p = &c->p;
	struct case_bufs *b = &rc_->b;
	fa_runner_running = k->ck;
	const struct fa_case_kernel *ck = k->ck;
	struct fa_result *res = k->res;
	struct fa_measure_cfg mc = *c->measure;
	size_t ws_bytes = ck->k->workspace_bytes ? ck->k->workspace_bytes(p, ck->params) : 0;
	struct fa_err kerr;
	enum fa_rc rc = FA_OK;
	int code;

	fa_err_clear(&kerr);
	k->timeout = r->cfg.timeout_s > 0 ? r->cfg.timeout_s : mc.timeout_s;
	k->ws_alloc_bytes = shared_workspace(r, rc_, k, ws_bytes);
	if (k->ws_alloc_bytes && !k->ws &&
	    (rc = dev_alloc(s, k->ws_alloc_bytes, &k->ws, "workspace", &kerr)) != FA_OK)
		goto backend_error;
	launch_args(r, c, b, ck, k->ws, ws_bytes, &k->a);
	if (k->fk) { /* a backward: its forward kernel writes O and the LSE */
		size_t fb = k->fk->workspace_bytes ? k->fk->workspace_bytes(p, k->fparams) : 0;
		if (fb && (rc = dev_alloc(s, fb, &k->fws, "the forward's workspace", &kerr)) != FA_OK)
			goto backend_error;
		launch_args(r, c, b, NULL, k->fws, fb, &k->fa);
		k->fa.params = k->fparams;
		k->fa.lse = b->lse;
	}

	if ((code = s->be.iface.memset(ctx, b->o, FA_POISON_BYTE, b->o_bytes)) != 0 ||
	    (k->fk && ((code = s->be.iface.memset(ctx, b->lse, FA_POISON_BYTE, b->lse_bytes)) != 0 ||
		       (code = s->be.iface.memset(ctx, b->dq, FA_POISON_BYTE, b->q_bytes)) != 0 ||
		       (code = s->be.iface.memset(ctx, b->dk, FA_POISON_BYTE, b->k_bytes)) != 0 ||
		       (code = s->be.iface.memset(ctx, b->dv, FA_POISON_BYTE, b->v_bytes)) != 0)) ||
	    (code = s->be.iface.synchronize(ctx)) != 0) {
		rc = be_fail(s, code, "poisoning the output", &kerr);
		goto backend_error;
	}
	arm(r, k->timeout);
	code = k->fk ? k->fk->launch(&k->fa) : 0;
	if (code == 0 && k->fk)
		code = s->be.iface.synchronize(ctx);
	if (code == 0)
		code = ck->k->launch(&k->a);
	if (code == 0)
		code = s->be.iface.synchronize(ctx);
	disarm(r);
	if (code == FA_KERNEL_CANCELLED) {
		if (r->cfg.cancel && *r->cfg.cancel)
			return FA_ERR_CANCELLED;
		set_status(res, FA_STATUS_TIMEOUT, "check launch ran past the timeout of %g s",
			   k->timeout);
		kstate_release(r, k);
		return FA_OK;
	}
	if (code != 0) {
		rc = be_fail(s, code, "launch", &kerr);
		goto backend_error;
	}
	if (!s->info.host_memory &&
	    ((code = s->be.iface.download(ctx, b->ho, b->o, b->o_bytes)) != 0 ||
	     (k->fk && ((code = s->be.iface.download(ctx, b->hdq, b->dq, b->q_bytes)) != 0 ||
			(code = s->be.iface.download(ctx, b->hdk, b->dk, b->k_bytes)) != 0 ||
			(code = s->be.iface.download(ctx, b->hdv, b->dv, b->v_bytes)) != 0)))) {
		rc = be_fail(s, code, "downloading the output", &kerr);
		goto backend_error;
	}
	res->checked = 1;
	{
		int v = fa_check_compare(p, c->cu_seqlens_q, b->ho, &rc_->ref, c->check, &res->st,
					 res->rule, sizeof res->rule, res->reason, sizeof res->reason);
		if (k->fk)
			v = check_grads(c, b, &rc_->gref, res, v);
		res->status = v == FA_VERDICT_PASS ? FA_STATUS_PASS : FA_STATUS_FAIL;
		if (v == FA_VERDICT_PASS)
			res->reason[0] = '\0';
	}
	char dname[272];
	dump_name(rc_, k, dname, sizeof dname);
	if (r->cfg.dump_dir && dump_case(r, c, b, &rc_->ref, &rc_->gref, dname, &kerr) != FA_OK) {
		/* a dump that cannot be written is the run's problem, not the kernel's */
		fa_err_set(err, kerr.rc, "%s", kerr.msg);
		fa_err_clear(&kerr);
	}

	/* the sampler */
	if (r->cfg.cache >= 0)
		mc.cache = r->cfg.cache;
	if (r->cfg.graph_launches != 0)
		mc.graph_launches = r->cfg.graph_launches > 0 ? r->cfg.graph_launches : 0;
	memset(&k->sc, 0, sizeof k->sc);
	k->sc.r = r;
	k->sc.ck = ck;
	k->sc.a = &k->a;
	k->sc.cold = !s->info.host_memory && mc.cache != FA_CACHE_HOT;
	if (k->sc.cold)
		tell_flush(mc.cache == FA_CACHE_COLD ? "write" : "clean");
	if (c->pass == FA_PASS_FWD_BWD) {
		k->sc.fwd = k->fk;
		k->sc.fa = &k->fa;
	}
	res->timing = s->info.host_memory ? "cpu"
		      : !k->sc.cold	  ? "hot"
		      : mc.cache == FA_CACHE_COLD ? "cold"
						  : "cold-clean";
	if ((code = s->be.iface.event_create(ctx, &k->sc.ev0)) != 0 ||
	    (code = s->be.iface.event_create(ctx, &k->sc.ev1)) != 0) {
		rc = be_fail(s, code, "creating events", &kerr);
		goto backend_error;
	}
	/* graphs capture the kernel alone: not a backward after its forward */
	if (mc.graph_launches > 0 && s->be.iface.graph_create && !k->sc.cold && !k->fk) {
		if (s->be.iface.graph_create(ctx, ck->k, &k->a, mc.graph_launches, &k->sc.graph) == 0) {
			k->sc.graph_n = mc.graph_launches;
			res->timing = "graph";
		} else {
			k->sc.graph = NULL; /* fall back to single launches */
		}
	} else if (mc.graph_launches > 0 && s->be.iface.graph_create_sets && k->sc.cold &&
		   !k->fk && fa_kernel_pass(ck->k) == FA_PASS_FWD) {
		cold_graph(r, rc_, k, mc.graph_launches);
	}
	fa_measure_start(&k->ms, &mc, k->samples);
	k->deadline = 0; /* set by its first sample: the other kernels' checks come first */
	k->sampling = 1;
	return FA_OK;
backend_error:
	set_status(res, FA_STATUS_ERROR, "%s", kerr.msg);
	kstate_release(r, k);
	if (kerr.rc == FA_ERR_STICKY) {
		fa_err_set(err, FA_ERR_STICKY, "%s", kerr.msg);
		return FA_ERR_STICKY;
	}
	return FA_OK;
}

/* --ab with swapped buffers: when this round runs on the other side's
 * buffers, k->a_cross is k's launch on them (its own params, cancel flag and
 * stream) and 1 is returned; 0: k samples on its own. */
static int cross_args(struct fa_runner *r, struct kstate *k)
{
	struct fa_runner *peer = r->cross_peer;
	struct fa_runner_case *mine = r->cur, *theirs = peer ? peer->cur : NULL;
	if (!r->crossed || !theirs || !mine || theirs->c != mine->c || !theirs->inputs_ready ||
	    k->sc.graph)
		return 0;
	k->a_cross = k->a;
	k->a_cross.q = theirs->b.q;
	k->a_cross.k = theirs->b.k;
	k->a_cross.v = theirs->b.v;
	k->a_cross.o = theirs->b.o;
	k->a_cross.cu_seqlens_q = theirs->b.cu_q;
	k->a_cross.cu_seqlens_k = theirs->b.cu_k;
	k->a_cross.prefix_lens = theirs->b.prefix;
	long i = k - mine->ks;
	if (i < theirs->n) {
		const struct kstate *pk = &theirs->ks[i];
		/* the other's workspace while it still holds it (a kernel that
		 * finished sampling has freed its own), when it is large enough */
		if (pk->ws && pk->ws_alloc_bytes >= k->a.workspace_bytes &&
		    strcmp(pk->ck->k->name, k->ck->k->name) == 0)
			k->a_cross.workspace = pk->ws;
	}
	r->n_crossed++;
	return 1;
}

/* One sample of kernel k. Returns FA_OK, FA_ERR_STICKY or FA_ERR_CANCELLED. */
static enum fa_rc sample_kernel(struct fa_runner *r, struct kstate *k, struct fa_err *err)
{
	struct fa_err kerr;
	enum fa_rc rc = FA_OK;
	int done;
	fa_runner_running = k->ck;
	fa_err_clear(&kerr);
	if (k->deadline == 0)
		k->deadline = fa_now_s() + k->timeout;
	if (cross_args(r, k))
		k->sc.a = &k->a_cross;
	arm(r, k->deadline - fa_now_s() > 0 ? k->deadline - fa_now_s() : 1e-3);
	done = fa_measure_step(&k->ms, one_sample, &k->sc, k->deadline, &r->kcancel, &rc, &kerr);
	disarm(r);
	k->sc.a = &k->a;
	if (!done)
		return FA_OK;
	k->sampling = 0;
	fa_measure_finish(&k->ms, &k->res->t);
	if (k->sc.have_tel)
		k->res->tel = k->sc.tel;
	k->res->samples = k->samples->ms;
	if (r->cfg.cancel && *r->cfg.cancel) {
		kstate_release(r, k);
		return FA_ERR_CANCELLED;
	}
	if (rc == FA_ERR_TIMEOUT ||
	    (k->res->t.stop == FA_STOP_CANCELLED && r->timed_out)) {
		k->res->t.stop = FA_STOP_TIMEOUT; /* sampling cut short; what was taken stays */
		rc = FA_OK;
	}
	if (rc != FA_OK) {
		set_status(k->res, FA_STATUS_ERROR, "%s", kerr.msg);
		kstate_release(r, k);
		if (kerr.rc == FA_ERR_STICKY) {
			fa_err_set(err, FA_ERR_STICKY, "%s", kerr.msg);
			return FA_ERR_STICKY;
		}
		return FA_OK;
	}
	/* a result with no sample is never a timed pass: the timeout cut the
	 * warm-up or the first sample, or every sample was discarded */
	if (k->res->t.n == 0 && k->res->status == FA_STATUS_PASS) {
		if (k->res->t.stop == FA_STOP_TIMEOUT)
			set_status(k->res, FA_STATUS_TIMEOUT,
				   "no sample taken before the timeout of %g s (the check passed)",
				   k->timeout);
		else
			set_status(k->res, FA_STATUS_ERROR,
				   "no sample kept: %d discarded (clock under the threshold)",
				   (int)k->res->t.discarded);
	}
	if (k->res->t.n > 0 && k->res->t.median_ms > 0) {
		k->res->tflops = k->res->flops / (k->res->t.median_ms * 1e-3) / 1e12;
		k->res->gbps = k->res->bytes / (k->res->t.median_ms * 1e-3) / 1e9;
		double *rate = rate_slot(r, k->ck->k);
		if (rate && k->res->tflops * 1e3 > *rate)
			*rate = k->res->tflops * 1e3;
	}
	kstate_release(r, k);
	return FA_OK;
}

/* Hands kernel i's final result to the progress callback, once. */
static void report(struct fa_runner *r, struct fa_runner_case *cs, int i)
{
	if (cs->ks[i].reported || cs->ks[i].abandoned)
		return;
	cs->ks[i].reported = 1;
	if (r->cfg.progress)
		r->cfg.progress(r->cfg.progress_ctx, cs->c, i, cs->ks[i].res);
}

/* Marks every kernel still to run as errored with why (the device is gone). */
static void mark_rest(struct fa_runner_case *cs, const char *why, int abandon)
{
	for (int j = 0; j < cs->n; j++) {
		if (cs->ks[j].res->status < 0) {
			set_status(cs->ks[j].res, FA_STATUS_ERROR, "%s", why);
			cs->ks[j].abandoned = abandon;
		}
		cs->ks[j].sampling = 0;
	}
}

enum fa_rc fa_runner_prepare(struct fa_runner *r, const struct fa_case *c,
			     const struct fa_case_kernel *ks, int n, struct fa_result *results,
			     struct fa_samples *samples, struct fa_err *err)
{
	const struct fa_problem *p = &c->p;
	struct fa_runner_case *cs;
	int runnable = 0, need_host, on_gpu;
	double flops = fa_problem_flops(p, c->cu_seqlens_q, c->cu_seqlens_k, c->prefix_lens) *
		       fa_pass_flops_factor(c->pass);
	double bytes = fa_problem_bytes(p, c->cu_seqlens_q, c->cu_seqlens_k, c->pass);
	double timeout = r->cfg.timeout_s > 0 ? r->cfg.timeout_s : c->measure->timeout_s;
	char why[512], need[32], have[32];
	enum fa_rc rc = FA_OK;
	struct fa_err cerr;
	fa_runner_running = NULL; /* the inputs and the reference first */

	fa_runner_finish(r); /* a case left unfinished */
	cs = calloc(1, sizeof *cs);
	if (cs)
		cs->ks = calloc((size_t)(n ? n : 1), sizeof *cs->ks);
	if (!cs || !cs->ks) {
		free(cs);
		return fa_err_set(err, FA_ERR_NOMEM, "out of memory");
	}
	r->cur = cs;
	cs->c = c;
	cs->n = n;
	for (int i = 0; i < n; i++) {
		struct fa_result *res = &results[i];
		double mem = fa_runner_mem_estimate(c, &ks[i]);
		double *rate = rate_slot(r, ks[i].k);
		cs->ks[i].ck = &ks[i];
		cs->ks[i].res = res;
		cs->ks[i].samples = &samples[i];
		result_init(res, &ks[i]);
		samples[i].n = 0;
		res->flops = flops;
		res->bytes = bytes;
		res->mem_bytes = mem;
		res->status = -1; /* to run */
		if (fa_kernel_pass(ks[i].k) == FA_PASS_BWD) {
			/* a backward takes O and the LSE from its forward kernel */
			const char *fname = fa_kernel_fwd_name(ks[i].k);
			const struct fa_kernel *fk = fa_backend_kernel_find(ks[i].slot, fname);
			cs->ks[i].fk = fk;
			if (fk) {
				for (int j = 0; j < fk->n_params && j < FA_KERNEL_MAX_PARAMS; j++)
					cs->ks[i].fparams[j] = fk->params[j].default_value;
			}
			if (!fk) {
				set_status(res, FA_STATUS_ERROR,
					   "forward kernel '%s' of '%s' is not loaded", fname,
					   ks[i].k->name);
				continue;
			}
			if (!fa_kernel_writes_lse(fk)) {
				set_status(res, FA_STATUS_ERROR,
					   "forward kernel '%s' of '%s' does not write the LSE", fname,
					   ks[i].k->name);
				continue;
			}
			if (!fa_kernel_supports(fk, p, why, sizeof why)) {
				char w2[sizeof why];
				snprintf(w2, sizeof w2, "%.400s", why);
				set_status(res, FA_STATUS_SKIP, "forward kernel %s: %s", fname, w2);
				continue;
			}
		}
		if (!fa_kernel_supports(ks[i].k, p, why, sizeof why)) {
			set_status(res, FA_STATUS_SKIP, "%s", why);
		} else if (mem > r->budget) {
			fa_format_bytes(mem, need, sizeof need);
			fa_format_bytes(r->budget, have, sizeof have);
			set_status(res, FA_STATUS_SKIP, "needs %s, over the memory budget of %s", need,
				   have);
		} else if (rate && *rate > 0 && flops / (*rate * 1e9) > timeout) {
			set_status(res, FA_STATUS_SKIP,
				   "one launch would take about %.0f s at the %.3g GFLOP/s this "
				   "kernel reached earlier, over the timeout of %g s",
				   flops / (*rate * 1e9), *rate, timeout);
		} else {
			runnable++;
		}
	}
	if (!runnable)
		return FA_OK;

	fa_err_clear(&cerr);
	if (r->cfg.on_start)
		r->cfg.on_start(r->cfg.progress_ctx, c, -1);
	on_gpu = 0;
	need_host = 1;
	{
		/* decide the reference's place before filling: the CPU one needs host inputs */
		int64_t *rows = NULL, nr = 0;
		if ((rc = fa_check_select_rows(p, c->check, c->seed, &rows, &nr, &cerr)) == FA_OK) {
			on_gpu = ref_on_gpu(r, c, nr);
			need_host = !on_gpu;
		}
		free(rows);
	}
	if (rc == FA_OK) {
		/* --ab with shared buffers: the lender's inputs, when it has them */
		struct fa_runner_case *lc = r->lender ? r->lender->cur : NULL;
		if (lc && lc->c == c && lc->inputs_ready && (!need_host || lc->b.hq)) {
			cs->b = lc->b;
			cs->b_borrowed = 1;
		} else {
			rc = setup_inputs(r, c, &cs->b, need_host, &cerr);
			if (rc == FA_OK && c->pass != FA_PASS_FWD)
				rc = setup_bwd(r, c, &cs->b, &cerr);
		}
		cs->inputs_ready = rc == FA_OK;
	}
	if (rc == FA_OK)
		rc = compute_reference(r, c, &cs->b, &cs->ref, on_gpu, &cerr);
	if (rc == FA_OK && c->pass != FA_PASS_FWD)
		rc = compute_grad_reference(r, c, &cs->b, &cs->ref, &cs->gref, &cerr);
	cs->prepared = 1;
	if (rc != FA_OK) {
		int status = rc == FA_ERR_TIMEOUT ? FA_STATUS_TIMEOUT : FA_STATUS_ERROR;
		if (rc == FA_ERR_CANCELLED && r->cfg.cancel && *r->cfg.cancel)
			return fa_err_set(err, FA_ERR_CANCELLED, "cancelled");
		mark_rest(cs, cerr.msg, rc == FA_ERR_STICKY);
		for (int i = 0; i < n; i++)
			if (results[i].status == FA_STATUS_ERROR && status == FA_STATUS_TIMEOUT)
				results[i].status = FA_STATUS_TIMEOUT;
		if (rc == FA_ERR_STICKY)
			return fa_err_set(err, FA_ERR_STICKY, "%s", cerr.msg);
		return FA_OK;
	}
	if (!r->cfg.interleave)
		return FA_OK; /* fa_runner_sample checks and samples one kernel after another */
	for (int i = 0; i < n; i++) {
		if (results[i].status >= 0)
			continue;
		results[i].status = FA_STATUS_PASS;
		if (r->cfg.on_start)
			r->cfg.on_start(r->cfg.progress_ctx, c, i);
		rc = check_kernel(r, cs, &cs->ks[i], err);
		if (rc == FA_ERR_CANCELLED)
			return fa_err_set(err, FA_ERR_CANCELLED, "cancelled");
		if (rc == FA_ERR_STICKY) {
			mark_rest(cs, "not run: the device became unusable", 1);
			return FA_ERR_STICKY;
		}
	}
	return FA_OK;
}

enum fa_rc fa_runner_sample(struct fa_runner *r, int *done, struct fa_err *err)
{
	struct fa_runner_case *cs = r->cur;
	enum fa_rc rc;
	*done = 1;
	if (!cs || !cs->prepared)
		return FA_OK;
	if (!r->cfg.interleave) {
		/* one kernel at a time: check it, then sample it to the end */
		for (; cs->next < cs->n; cs->next++) {
			struct kstate *k = &cs->ks[cs->next];
			if (k->sampling)
				break;
			if (k->res->status >= 0 && !k->ws && !k->sc.ev0)
				continue; /* skipped or finished */
			if (k->res->status < 0) {
				k->res->status = FA_STATUS_PASS;
				if (r->cfg.on_start)
					r->cfg.on_start(r->cfg.progress_ctx, cs->c, cs->next);
				rc = check_kernel(r, cs, k, err);
				if (rc == FA_ERR_CANCELLED)
					return fa_err_set(err, FA_ERR_CANCELLED, "cancelled");
				if (rc == FA_ERR_STICKY) {
					mark_rest(cs, "not run: the device became unusable", 1);
					return FA_ERR_STICKY;
				}
				if (k->sampling)
					break;
				report(r, cs, cs->next);
			}
		}
		if (cs->next >= cs->n)
			return FA_OK;
		struct kstate *k = &cs->ks[cs->next];
		rc = sample_kernel(r, k, err);
		if (rc == FA_ERR_STICKY)
			mark_rest(cs, "not run: the device became unusable", 1);
		if (rc != FA_OK)
			return rc;
		if (!k->sampling)
			report(r, cs, cs->next);
		*done = 0;
		return FA_OK;
	}
	/* interleaved: the next kernel still sampling, in turn */
	for (int tries = 0; tries < cs->n; tries++) {
		struct kstate *k = &cs->ks[cs->next];
		cs->next = (cs->next + 1) % cs->n;
		if (!k->sampling)
			continue;
		rc = sample_kernel(r, k, err);
		if (rc == FA_ERR_STICKY)
			mark_rest(cs, "not run: the device became unusable", 1);
		if (rc != FA_OK)
			return rc;
		*done = 0;
		return FA_OK;
	}
	return FA_OK;
}

void fa_runner_finish(struct fa_runner *r)
{
	struct fa_runner_case *cs = r->cur;
	if (!cs)
		return;
	for (int i = 0; i < cs->n; i++) {
		kstate_release(r, &cs->ks[i]);
		if (cs->ks[i].res->status < 0)
			set_status(cs->ks[i].res, FA_STATUS_ERROR, "not run");
		report(r, cs, i);
	}
	for (int i = 0; i < cs->n; i++)
		if (cs->ks[i].ws && cs->ks[i].ws_held && !cs->ks[i].ws_borrowed)
			dev_free(r->slot, cs->ks[i].ws);
	if (!cs->b_borrowed)
		bufs_free(r->slot, &cs->b);
	for (int i = 0; i < 4 * cs->n_rot; i++)
		dev_free(r->slot, cs->rot[i]);
	free(cs->rot);
	fa_ref_free(&cs->ref);
	fa_ref_grad_free(&cs->gref);
	free(cs->ks);
	free(cs);
	r->cur = NULL;
}

int fa_runner_can_share(const struct fa_backend_slot *a, const struct fa_backend_slot *b,
			char *why, size_t why_size)
{
	const struct fa_device_info *x = &a->info, *y = &b->info;
	if (strcmp(a->name, b->name) != 0) {
		snprintf(why, why_size, "backends '%s' and '%s' differ", a->name, b->name);
		return 0;
	}
	if (!x->host_memory || !y->host_memory) {
		/* Measured on an H200 (docs/compare.md, "Shared buffers"): two copies
		 * of the CUDA plugin on one set of device buffers made side B 4-6%
		 * faster on ~10 us kernels in 20 of 20 A/A repetitions (327 of 1120
		 * rows flagged at a 4% floor, against 35 with buffers of their own),
		 * so device memory is not shared until that is understood. */
		snprintf(why, why_size,
			 "device memory is not shared (on an H200 it biased a GPU A/A: "
			 "docs/compare.md)");
		return 0;
	}
	if (strcmp(x->name, y->name) != 0 || strcmp(x->arch, y->arch) != 0 ||
	    x->mem_total_bytes != y->mem_total_bytes || x->sm_count != y->sm_count) {
		snprintf(why, why_size, "devices '%s' (%s) and '%s' (%s) differ", x->name, x->arch,
			 y->name, y->arch);
		return 0;
	}
	return 1;
}

int fa_runner_can_cross(const struct fa_backend_slot *a, const struct fa_backend_slot *b,
			char *why, size_t why_size)
{
	const struct fa_device_info *x = &a->info, *y = &b->info;
	if (strcmp(a->name, b->name) != 0) {
		snprintf(why, why_size, "backends '%s' and '%s' differ", a->name, b->name);
		return 0;
	}
	if (x->host_memory || y->host_memory) {
		snprintf(why, why_size, "host memory (the sides share it instead)");
		return 0;
	}
	if (strcmp(x->name, y->name) != 0 || strcmp(x->arch, y->arch) != 0 ||
	    x->mem_total_bytes != y->mem_total_bytes || x->sm_count != y->sm_count) {
		snprintf(why, why_size, "devices '%s' (%s) and '%s' (%s) differ", x->name, x->arch,
			 y->name, y->arch);
		return 0;
	}
	return 1;
}

void fa_runner_cross(struct fa_runner *a, struct fa_runner *b)
{
	if (a)
		a->cross_peer = b;
	if (b)
		b->cross_peer = a;
}

void fa_runner_set_crossed(struct fa_runner *r, int crossed)
{
	r->crossed = crossed;
}

long fa_runner_crossed_samples(const struct fa_runner *r)
{
	return r->n_crossed;
}

void fa_runner_share(struct fa_runner *a, struct fa_runner *b, const struct fa_case_kernel *bks,
		     int bn)
{
	if (a->borrower)
		a->borrower->lender = NULL;
	a->borrower = b;
	a->peer_ks = b ? bks : NULL;
	a->peer_n = b ? bn : 0;
	if (b)
		b->lender = a;
}

enum fa_rc fa_runner_run_case(struct fa_runner *r, const struct fa_case *c,
			      const struct fa_case_kernel *ks, int n, struct fa_result *results,
			      struct fa_samples *samples, struct fa_err *err)
{
	int done = 0;
	enum fa_rc rc = fa_runner_prepare(r, c, ks, n, results, samples, err);
	while (rc == FA_OK && !done)
		rc = fa_runner_sample(r, &done, err);
	if (rc == FA_ERR_CANCELLED) {
		struct fa_runner_cfg saved = r->cfg;
		r->cfg.progress = NULL; /* an interrupted case is not reported */
		fa_runner_finish(r);
		r->cfg = saved;
		return rc;
	}
	fa_runner_finish(r);
	return rc;
}

/* ---- --dump: .npy files of inputs, output and reference ---- */

/* Writes tensor buf (dtype) as <f2 (fp16) or <f4 (fp32, and bf16 widened
 * exactly) with the shape of its layout. */
static enum fa_rc dump_tensor(const char *path, const struct fa_problem *p, int t, const void *buf,
			      struct fa_err *err)
{
	int64_t tokens, shape[4];
	int32_t heads, dim;
	int ndim;
	int64_t n = fa_tensor_elems(p, t);
	enum fa_rc rc;
	fa_tensor_shape(p, t, &tokens, &heads, &dim);
	int64_t len = (t == FA_TENSOR_Q || t == FA_TENSOR_O || t == FA_TENSOR_DO || t == FA_TENSOR_DQ)
			      ? p->q_len
			      : p->kv_len;
	if (p->varlen) {
		ndim = 3;
		if (p->layout == FA_LAYOUT_BSHD) {
			shape[0] = tokens; shape[1] = heads;
		} else {
			shape[0] = heads; shape[1] = tokens;
		}
		shape[2] = dim;
	} else {
		ndim = 4;
		shape[0] = p->batch;
		if (p->layout == FA_LAYOUT_BSHD) {
			shape[1] = len; shape[2] = heads;
		} else {
			shape[1] = heads; shape[2] = len;
		}
		shape[3] = dim;
	}
	if (p->dtype == FA_DTYPE_FP16)
		return fa_npy_write(path, "<f2", shape, ndim, buf, n, 2, err);
	if (p->dtype == FA_DTYPE_FP32)
		return fa_npy_write(path, "<f4", shape, ndim, buf, n, 4, err);
	float *w = malloc(sizeof(float) * (size_t)(n ? n : 1));
	if (!w)
		return fa_err_set(err, FA_ERR_NOMEM, "out of memory for a dump");
	for (int64_t i = 0; i < n; i++)
		w[i] = fa_load_f32(buf, p->dtype, i);
	rc = fa_npy_write(path, "<f4", shape, ndim, w, n, 4, err);
	free(w);
	return rc;
}

/* The backward's files: the kernel's dQ, dK, dV (every call), and once per
 * case dO and the reference gradients with their row ids. */
static enum fa_rc dump_grads(const char *dir, const struct fa_case *c, const struct case_bufs *b,
			     const struct fa_ref_grad *g, const char *kernel, int with_inputs,
			     struct fa_err *err)
{
	static const char *const names[3] = {"dq", "dk", "dv"};
	const struct fa_problem *p = &c->p;
	const int tensors[3] = {FA_TENSOR_DQ, FA_TENSOR_DK, FA_TENSOR_DV};
	const void *bufs[3] = {b->hdq, b->hdk, b->hdv};
	const double *refs[3] = {g->dq, g->dk, g->dv};
	const int64_t n[3] = {g->n_q, g->n_k, g->n_k};
	const int32_t dims[3] = {p->head_dim, p->head_dim, p->head_dim_v};
	char path[1024];
	enum fa_rc rc = FA_OK;
	for (int i = 0; i < 3 && rc == FA_OK; i++) {
		snprintf(path, sizeof path, "%s/case%04d_%s_%s.npy", dir, c->index, names[i], kernel);
		rc = dump_tensor(path, p, tensors[i], bufs[i], err);
	}
	if (rc != FA_OK || !with_inputs)
		return rc;
	snprintf(path, sizeof path, "%s/case%04d_do.npy", dir, c->index);
	if ((rc = dump_tensor(path, p, FA_TENSOR_DO, b->hdo, err)) != FA_OK)
		return rc;
	for (int i = 0; i < 3 && rc == FA_OK; i++) {
		int64_t shape[2] = {n[i], dims[i]};
		snprintf(path, sizeof path, "%s/case%04d_ref_%s.npy", dir, c->index, names[i]);
		rc = fa_npy_write(path, "<f8", shape, 2, refs[i], n[i] * dims[i], 8, err);
	}
	if (rc != FA_OK)
		return rc;
	int64_t sq[1] = {g->n_q}, sk[1] = {g->n_k};
	snprintf(path, sizeof path, "%s/case%04d_ref_dq_rows.npy", dir, c->index);
	if ((rc = fa_npy_write(path, "<i8", sq, 1, g->q_rows, g->n_q, 8, err)) != FA_OK)
		return rc;
	snprintf(path, sizeof path, "%s/case%04d_ref_kv_rows.npy", dir, c->index);
	return fa_npy_write(path, "<i8", sk, 1, g->k_rows, g->n_k, 8, err);
}

static enum fa_rc dump_case(struct fa_runner *r, const struct fa_case *c, struct case_bufs *b,
			    const struct fa_ref *ref, const struct fa_ref_grad *g,
			    const char *kernel, struct fa_err *err)
{
	char path[1024];
	const char *dir = r->cfg.dump_dir;
	const struct fa_problem *p = &c->p;
	enum fa_rc rc;
	void *hq = b->hq, *hk = b->hk, *hv = b->hv;
	int own = 0;
	if (fa_mkdir_p(dir) != 0)
		return fa_err_set(err, FA_ERR_IO, "cannot create '%s': %s", dir, strerror(errno));
	snprintf(path, sizeof path, "%s/case%04d_out_%s.npy", dir, c->index, kernel);
	if ((rc = dump_tensor(path, p, FA_TENSOR_O, b->ho, err)) != FA_OK)
		return rc;
	snprintf(path, sizeof path, "%s/case%04d_q.npy", dir, c->index);
	int first = access(path, F_OK) != 0;
	if (c->pass != FA_PASS_FWD && (rc = dump_grads(dir, c, b, g, kernel, first, err)) != FA_OK)
		return rc;
	if (!first)
		return FA_OK; /* inputs and reference already written for an earlier kernel */
	if (!hq) { /* device-filled inputs: regenerate the same bits on the host */
		own = 1;
		void **h[3] = {&hq, &hk, &hv};
		for (int t = 0; t < 3; t++) {
			*h[t] = malloc((size_t)fa_tensor_elems(p, t) * (size_t)fa_dtype_size(p->dtype) + 1);
			if (!*h[t]) {
				free(hq); free(hk); free(hv);
				return fa_err_set(err, FA_ERR_NOMEM, "out of memory for a dump");
			}
			fa_data_fill(p, t, c->dist, c->seed, *h[t], r->cfg.nthreads);
		}
	}
	const void *src[3] = {hq, hk, hv};
	static const char *const names[3] = {"q", "k", "v"};
	for (int t = 0; t < 3 && rc == FA_OK; t++) {
		snprintf(path, sizeof path, "%s/case%04d_%s.npy", dir, c->index, names[t]);
		rc = dump_tensor(path, p, t, src[t], err);
	}
	if (own) {
		free(hq); free(hk); free(hv);
	}
	if (rc != FA_OK)
		return rc;
	int64_t shape[2] = {ref->n_rows, p->head_dim_v};
	snprintf(path, sizeof path, "%s/case%04d_ref.npy", dir, c->index);
	if ((rc = fa_npy_write(path, "<f8", shape, 2, ref->out, ref->n_rows * p->head_dim_v, 8, err)) !=
	    FA_OK)
		return rc;
	snprintf(path, sizeof path, "%s/case%04d_ref_rows.npy", dir, c->index);
	if ((rc = fa_npy_write(path, "<i8", shape, 1, ref->rows, ref->n_rows, 8, err)) != FA_OK)
		return rc;
	snprintf(path, sizeof path, "%s/case%04d.json", dir, c->index);
	FILE *f = fopen(path, "w");
	if (!f)
		return fa_err_set(err, FA_ERR_IO, "cannot write '%s': %s", path, strerror(errno));
	fprintf(f, "{\"schema_version\": %d, \"index\": %d, \"key\": \"%s\", \"seed\": \"%llu\", \"scale\": %.9g, "
		   "\"layout\": \"%s\", \"dtype\": \"%s\", \"mask\": \"%s\", \"pass\": \"%s\", \"varlen\": %d, "
		   "\"cu_seqlens_q\": [",
		FA_JSON_SCHEMA_VERSION, c->index, c->key, (unsigned long long)c->seed, (double)p->scale,
		fa_layout_name(p->layout), fa_dtype_name(p->dtype), fa_mask_name(p->mask),
		fa_pass_name(c->pass), p->varlen);
	for (int i = 0; p->varlen && i <= p->batch; i++)
		fprintf(f, "%s%d", i ? ", " : "", c->cu_seqlens_q[i]);
	fprintf(f, "], \"cu_seqlens_k\": [");
	for (int i = 0; p->varlen && i <= p->batch; i++)
		fprintf(f, "%s%d", i ? ", " : "", c->cu_seqlens_k[i]);
	fprintf(f, "], \"ref_rows\": \"row = token * heads + head\", ");
	if (c->pass != FA_PASS_FWD) /* ref_dq rows are ref_rows; ref_dk, ref_dv rows: */
		fprintf(f, "\"ref_kv_rows\": \"row = key token * kv_heads + kv head\", ");
	fprintf(f, "\"note\": \"bf16 tensors are stored widened to float32 (exact)\"}\n");
	if (fclose(f) != 0)
		return fa_err_set(err, FA_ERR_IO, "cannot write '%s': %s", path, strerror(errno));
	return FA_OK;
}
