/* selftest.c - build/cudnn-selftest: runs cudnn_sdpa and cudnn_sdpa_bwd on
 * a GPU without the harness. For a few shapes (bf16 and fp16, head_dim
 * 64/128/256, no mask, causal with q_len == kv_len and !=, GQA 32/8,
 * sliding window, prefix_lm, varlen, decode) it makes inputs from a
 * deterministic pattern, runs the kernel through its record (supports,
 * workspace_bytes, launch), compares the output against a CPU reference in
 * double and prints the largest absolute error and PASS/FAIL/SKIP with
 * cuDNN's reason. The "bwd" cases run the forward with the LSE, then the
 * backward, and compare dQ, dK, dV (relative to the largest reference
 * value) and the LSE with the reference backward in double. Then it times
 * B=2 H=16 L=8192 D=128 bf16 with CUDA events and prints TFLOP/s
 * (4 B H L^2 D / time; half of that for causal).
 *
 *   build/cudnn-selftest            every case, then the timing, each in a
 *                                   process of its own (a case that kills
 *                                   the CUDA context loses only itself)
 *   build/cudnn-selftest --case N   case N only (0-based; the timings are
 *                                   the two after the last case), in process
 *   build/cudnn-selftest --match T  the cases whose name contains T, each in
 *                                   a process of its own (e.g. bottom-right)
 *   build/cudnn-selftest --list     the cases' numbers and names
 *   FABENCH_CUDNN_BR=1 build/cudnn-selftest --match bottom-right
 *                                   the masks aligned bottom-right in graph
 *                                   form 1 (0 to 4, sdpa_graph.c; unset: 4)
 *   FABENCH_CUDNN=/path/libcudnn.so.9 build/cudnn-selftest
 *   build/cudnn-selftest --graphs   no device needed: builds each case's
 *                                   operation graph (every tensor and
 *                                   operation finalized by cuDNN), stops
 *                                   before the engines, which need a GPU
 *
 * Exit status: 0 when no case failed, 1 otherwise, 2 when cuDNN or the
 * device is missing.
 */
#include <errno.h>
#include <math.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include "cudnn_internal.h"

/* Largest |out - ref| accepted: the output's rounding (2^-8 relative for
 * bf16, 2^-11 for fp16) plus P rounded to the input type before P V, on
 * outputs of magnitude below 1. */
#define TOL_BF16 3e-2
#define TOL_FP16 5e-3
/* Rows checked in cases too large for a full CPU reference. */
#define SAMPLE_ROWS 48
/* Cases up to this many score elements are checked in full. */
#define FULL_CHECK_SCORES (1 << 22)
#define MAX_SEQS 8

struct st_case {
	const char *name;
	int dtype, batch, heads, kv_heads, q_len, kv_len, head_dim, mask, window, prefix, layout;
	int n_seqs;                /* varlen: batch, with lengths below */
	int32_t seq_q[MAX_SEQS], seq_k[MAX_SEQS];
	int expect_refused;        /* 1: supports() must refuse it */
	int bwd;                   /* 1: cudnn_sdpa_bwd after cudnn_sdpa with the LSE */
};

static const struct st_case cases[] = {
	{"bf16 d64 none", FA_DTYPE_BF16, 2, 4, 4, 128, 128, 64, FA_MASK_NONE, 0, 0, FA_LAYOUT_BSHD, 0,
	 {0}, {0}, 0, 0},
	{"fp16 d64 causal", FA_DTYPE_FP16, 2, 4, 4, 128, 128, 64, FA_MASK_CAUSAL, 0, 0,
	 FA_LAYOUT_BSHD, 0, {0}, {0}, 0, 0},
	{"bf16 d128 causal bhsd", FA_DTYPE_BF16, 1, 4, 4, 256, 256, 128, FA_MASK_CAUSAL, 0, 0,
	 FA_LAYOUT_BHSD, 0, {0}, {0}, 0, 0},
	{"fp16 d128 none bhsd", FA_DTYPE_FP16, 2, 2, 2, 200, 200, 128, FA_MASK_NONE, 0, 0,
	 FA_LAYOUT_BHSD, 0, {0}, {0}, 0, 0},
	{"fp16 d128 causal q64 kv192 (bottom-right)", FA_DTYPE_FP16, 2, 4, 4, 64, 192, 128,
	 FA_MASK_CAUSAL, 0, 0, FA_LAYOUT_BSHD, 0, {0}, {0}, 0, 0},
	{"bf16 d128 causal q100 kv300 (bottom-right, odd lengths)", FA_DTYPE_BF16, 1, 2, 2, 100, 300,
	 128, FA_MASK_CAUSAL, 0, 0, FA_LAYOUT_BSHD, 0, {0}, {0}, 0, 0},
	{"bf16 d128 GQA 32/8 causal", FA_DTYPE_BF16, 1, 32, 8, 256, 256, 128, FA_MASK_CAUSAL, 0, 0,
	 FA_LAYOUT_BSHD, 0, {0}, {0}, 0, 0},
	{"fp16 d64 GQA 32/8 none", FA_DTYPE_FP16, 2, 32, 8, 128, 128, 64, FA_MASK_NONE, 0, 0,
	 FA_LAYOUT_BSHD, 0, {0}, {0}, 0, 0},
	{"bf16 d64 sliding window 32", FA_DTYPE_BF16, 1, 4, 4, 256, 256, 64,
	 FA_MASK_SLIDING_WINDOW, 32, 0, FA_LAYOUT_BSHD, 0, {0}, {0}, 0, 0},
	{"bf16 d64 sliding window 48 q96 kv160 (bottom-right)", FA_DTYPE_BF16, 1, 4, 4, 96, 160, 64,
	 FA_MASK_SLIDING_WINDOW, 48, 0, FA_LAYOUT_BSHD, 0, {0}, {0}, 0, 0},
	{"bf16 d64 prefix_lm 40", FA_DTYPE_BF16, 2, 4, 4, 128, 128, 64, FA_MASK_PREFIX_LM, 0, 40,
	 FA_LAYOUT_BSHD, 0, {0}, {0}, 0, 0},
	{"bf16 d256 none", FA_DTYPE_BF16, 1, 4, 4, 128, 128, 256, FA_MASK_NONE, 0, 0,
	 FA_LAYOUT_BSHD, 0, {0}, {0}, 0, 0},
	{"fp16 d128 decode q1 kv512", FA_DTYPE_FP16, 4, 8, 8, 1, 512, 128, FA_MASK_NONE, 0, 0,
	 FA_LAYOUT_BSHD, 0, {0}, {0}, 0, 0},
	{"bf16 d128 decode q1 kv512 causal (bottom-right)", FA_DTYPE_BF16, 4, 8, 8, 1, 512, 128,
	 FA_MASK_CAUSAL, 0, 0, FA_LAYOUT_BSHD, 0, {0}, {0}, 0, 0},
	{"fp16 d64 varlen none", FA_DTYPE_FP16, 3, 4, 4, 0, 0, 64, FA_MASK_NONE, 0, 0,
	 FA_LAYOUT_BSHD, 3, {100, 1, 37}, {100, 1, 37}, 0, 0},
	{"bf16 d128 varlen causal (bottom-right)", FA_DTYPE_BF16, 3, 8, 2, 0, 0, 128, FA_MASK_CAUSAL, 0, 0,
	 FA_LAYOUT_BSHD, 3, {64, 17, 30}, {64, 40, 30}, 0, 0},
	{"bf16 d128 varlen causal (bottom-right), seq 2 q 5 > kv 3: rows 0-1 attend no key",
	 FA_DTYPE_BF16, 3, 4, 4, 0, 0, 128, FA_MASK_CAUSAL, 0, 0, FA_LAYOUT_BSHD, 3, {64, 17, 5},
	 {64, 30, 3}, 0, 0},
	{"bf16 d64 causal q200 kv100 (refused: rows with no key)", FA_DTYPE_BF16, 1, 2, 2, 200, 100,
	 64, FA_MASK_CAUSAL, 0, 0, FA_LAYOUT_BSHD, 0, {0}, {0}, 1, 0},
	{"bf16 d72 none (head_dim 72)", FA_DTYPE_BF16, 1, 4, 4, 128, 128, 72, FA_MASK_NONE, 0, 0,
	 FA_LAYOUT_BSHD, 0, {0}, {0}, 0, 0},
	{"bf16 d60 none (refused: not a multiple of 8)", FA_DTYPE_BF16, 1, 4, 4, 128, 128, 60,
	 FA_MASK_NONE, 0, 0, FA_LAYOUT_BSHD, 0, {0}, {0}, 1, 0},
	/* more masks aligned bottom-right */
	{"bf16 d128 decode q1 kv4096 causal (bottom-right)", FA_DTYPE_BF16, 2, 8, 8, 1, 4096, 128,
	 FA_MASK_CAUSAL, 0, 0, FA_LAYOUT_BSHD, 0, {0}, {0}, 0, 0},
	{"fp16 d64 GQA 8/2 causal q16 kv1000 bhsd (bottom-right)", FA_DTYPE_FP16, 2, 8, 2, 16, 1000,
	 64, FA_MASK_CAUSAL, 0, 0, FA_LAYOUT_BHSD, 0, {0}, {0}, 0, 0},
	{"bf16 d64 prefix_lm 40 q64 kv192 (bottom-right)", FA_DTYPE_BF16, 2, 4, 4, 64, 192, 64,
	 FA_MASK_PREFIX_LM, 0, 40, FA_LAYOUT_BSHD, 0, {0}, {0}, 0, 0},
	{"fp16 d64 varlen sliding window 16 (bottom-right)", FA_DTYPE_FP16, 3, 4, 4, 0, 0, 64,
	 FA_MASK_SLIDING_WINDOW, 16, 0, FA_LAYOUT_BSHD, 3, {40, 7, 64}, {100, 7, 64}, 0, 0},
	/* the backward (cudnn_sdpa_bwd): dQ, dK, dV and the forward's LSE
	 * against the CPU reference in double */
	{"bwd bf16 d64 none", FA_DTYPE_BF16, 2, 4, 4, 128, 128, 64, FA_MASK_NONE, 0, 0,
	 FA_LAYOUT_BSHD, 0, {0}, {0}, 0, 1},
	{"bwd fp16 d128 causal", FA_DTYPE_FP16, 1, 4, 4, 256, 256, 128, FA_MASK_CAUSAL, 0, 0,
	 FA_LAYOUT_BSHD, 0, {0}, {0}, 0, 1},
	{"bwd bf16 d64 GQA 8/2 causal bhsd", FA_DTYPE_BF16, 2, 8, 2, 128, 128, 64, FA_MASK_CAUSAL,
	 0, 0, FA_LAYOUT_BHSD, 0, {0}, {0}, 0, 1},
	{"bwd fp16 d64 none q100 kv300", FA_DTYPE_FP16, 1, 4, 4, 100, 300, 64, FA_MASK_NONE, 0, 0,
	 FA_LAYOUT_BSHD, 0, {0}, {0}, 0, 1},
	{"bwd fp16 d64 causal q64 kv192 (bottom-right)", FA_DTYPE_FP16, 2, 4, 4, 64, 192, 64,
	 FA_MASK_CAUSAL, 0, 0, FA_LAYOUT_BSHD, 0, {0}, {0}, 0, 1},
	{"bwd bf16 d64 sliding window 32", FA_DTYPE_BF16, 1, 4, 4, 256, 256, 64,
	 FA_MASK_SLIDING_WINDOW, 32, 0, FA_LAYOUT_BSHD, 0, {0}, {0}, 0, 1},
	{"bwd bf16 d128 none H16 L4096 (fp32 dQ accumulator; kv head 0 checked)", FA_DTYPE_BF16,
	 1, 16, 16, 4096, 4096, 128, FA_MASK_NONE, 0, 0, FA_LAYOUT_BSHD, 0, {0}, {0}, 0, 1},
	/* the backward of varlen batches: ragged offsets on every tensor and
	 * the LSE (sm_90+); the rows of empty sequences written by the aux
	 * kernel (after cuDNN in the backward) */
	{"bwd bf16 d64 varlen none", FA_DTYPE_BF16, 3, 4, 4, 0, 0, 64, FA_MASK_NONE, 0, 0,
	 FA_LAYOUT_BSHD, 3, {30, 50, 1}, {30, 50, 1}, 0, 1},
	{"bwd fp16 d128 varlen GQA 8/2 causal kv != q (bottom-right)", FA_DTYPE_FP16, 3, 8, 2, 0, 0,
	 128, FA_MASK_CAUSAL, 0, 0, FA_LAYOUT_BSHD, 3, {64, 17, 30}, {64, 40, 30}, 0, 1},
	{"bwd bf16 d64 varlen causal (bottom-right), seq 2 q 5 > kv 3: rows 0-1 attend no key",
	 FA_DTYPE_BF16, 3, 4, 4, 0, 0, 64, FA_MASK_CAUSAL, 0, 0, FA_LAYOUT_BSHD, 3, {64, 17, 5},
	 {64, 30, 3}, 0, 1},
	{"bwd bf16 d64 varlen empty sequences (seq 0 no query, seq 2 no key)", FA_DTYPE_BF16, 4, 4,
	 2, 0, 0, 64, FA_MASK_NONE, 0, 0, FA_LAYOUT_BSHD, 4, {0, 17, 20, 9}, {12, 17, 0, 9}, 0, 1},
	{"bwd fp16 d64 varlen sliding window 16 (bottom-right; keys no query sees)", FA_DTYPE_FP16,
	 3, 4, 4, 0, 0, 64, FA_MASK_SLIDING_WINDOW, 16, 0, FA_LAYOUT_BSHD, 3, {40, 7, 64},
	 {100, 7, 64}, 0, 1},
	{"bwd bf16 d64 varlen H8 3000+2000 (fp32 dQ accumulator; seq 0 kv head 0 checked)",
	 FA_DTYPE_BF16, 2, 8, 8, 0, 0, 64, FA_MASK_NONE, 0, 0, FA_LAYOUT_BSHD, 2, {3000, 2000},
	 {3000, 2000}, 0, 1},
	/* conformance's shape whose dK, dV of sequence 1 (9 keys, no query)
	 * cuDNN's backward wrote non-zero on an H200 (up to 6.3) while the
	 * zeros were written before it: now they are written after it */
	{"bwd bf16 d64 varlen GQA 8/2 q 17/0/40/0 kv 17/9/0/0 none (seq 1 keys, no query)",
	 FA_DTYPE_BF16, 4, 8, 2, 0, 0, 64, FA_MASK_NONE, 0, 0, FA_LAYOUT_BSHD, 4, {17, 0, 40, 0},
	 {17, 9, 0, 0}, 0, 1},
	{"bwd bf16 d64 varlen GQA 8/2 q 17/0/40/0 kv 17/9/0/0 causal (seq 1 keys, no query)",
	 FA_DTYPE_BF16, 4, 8, 2, 0, 0, 64, FA_MASK_CAUSAL, 0, 0, FA_LAYOUT_BSHD, 4, {17, 0, 40, 0},
	 {17, 9, 0, 0}, 0, 1},
};

static int n_pass, n_fail, n_skip;

#define CK(call)                                                                              \
	do {                                                                                  \
		cudaError_t e_ = (call);                                                      \
		if (e_ != cudaSuccess) {                                                      \
			printf("FAIL  %s:%d: %s: %s\n", __FILE__, __LINE__, #call,            \
			       cudaGetErrorString(e_));                                       \
			exit(1);                                                              \
		}                                                                             \
	} while (0)

/* The problem of c: strides of a dense bshd or bhsd buffer, or packed
 * tokens for varlen. */
static void problem_of(const struct st_case *c, struct fa_problem *p, int32_t *cu_q, int32_t *cu_k)
{
	memset(p, 0, sizeof *p);
	p->batch = c->batch;
	p->heads = c->heads;
	p->kv_heads = c->kv_heads;
	p->head_dim = p->head_dim_v = c->head_dim;
	p->dtype = c->dtype;
	p->mask = c->mask;
	p->layout = c->layout;
	p->window = c->window;
	p->prefix_len = c->prefix;
	p->scale = (float)(1.0 / sqrt((double)c->head_dim));
	p->varlen = c->n_seqs > 0;
	if (p->varlen) {
		cu_q[0] = cu_k[0] = 0;
		p->q_len = p->kv_len = 0;
		for (int b = 0; b < c->n_seqs; b++) {
			cu_q[b + 1] = cu_q[b] + c->seq_q[b];
			cu_k[b + 1] = cu_k[b] + c->seq_k[b];
			if (c->seq_q[b] > p->q_len)
				p->q_len = c->seq_q[b];
			if (c->seq_k[b] > p->kv_len)
				p->kv_len = c->seq_k[b];
		}
		p->total_q = cu_q[c->n_seqs];
		p->total_k = cu_k[c->n_seqs];
	} else {
		p->q_len = c->q_len;
		p->kv_len = c->kv_len;
		p->total_q = c->batch * c->q_len;
		p->total_k = c->batch * c->kv_len;
	}
	int64_t H = p->heads, Hk = p->kv_heads, D = p->head_dim, Lq = p->q_len, Lk = p->kv_len;
	if (p->layout == FA_LAYOUT_BHSD && !p->varlen) {
		p->q_stride_s = D, p->q_stride_h = Lq * D, p->q_stride_b = H * Lq * D;
		p->k_stride_s = D, p->k_stride_h = Lk * D, p->k_stride_b = Hk * Lk * D;
		p->o_stride_s = D, p->o_stride_h = Lq * D, p->o_stride_b = H * Lq * D;
	} else {
		p->q_stride_s = H * D, p->q_stride_h = D, p->q_stride_b = Lq * H * D;
		p->k_stride_s = Hk * D, p->k_stride_h = D, p->k_stride_b = Lk * Hk * D;
		p->o_stride_s = H * D, p->o_stride_h = D, p->o_stride_b = Lq * H * D;
	}
	p->v_stride_s = p->k_stride_s, p->v_stride_h = p->k_stride_h, p->v_stride_b = p->k_stride_b;
}

/* The input pattern: a deterministic value in [-1, 1) per tensor and element. */
static float pattern(int tensor, int64_t e)
{
	uint64_t h = (uint64_t)e * 2654435761u + (uint64_t)tensor * 40503u + 12345u;
	h ^= h >> 13;
	h *= 0x5bd1e995u;
	h ^= h >> 15;
	return (float)((double)(h % 2000) / 1000.0 - 1.0);
}

/* Reference row (b, i, h) in double; writes dv values to out. Returns 0
 * when the row attends no key (out is zeros). */
static int reference_row(const struct fa_problem *p, const int32_t *cu_q, const int32_t *cu_k,
			 const uint16_t *q, const uint16_t *k, const uint16_t *v, int b, int i, int h,
			 double *out, double *w)
{
	int lq = fa_seq_q_len(p, cu_q, b), lk = fa_seq_kv_len(p, cu_k, b);
	int hk = h / (p->heads / p->kv_heads);
	int prefix = fa_seq_prefix(p, NULL, b);
	double mx = -INFINITY, sum = 0;
	int n = 0;
	const uint16_t *qr = q + fa_q_offset(p, cu_q, b, i, h);
	for (int d = 0; d < p->head_dim_v; d++)
		out[d] = 0;
	for (int j = 0; j < lk; j++) {
		w[j] = -INFINITY;
		if (!fa_mask_allows(p->mask, i, j, lq, lk, prefix, p->window))
			continue;
		const uint16_t *kr = k + fa_k_offset(p, cu_k, b, j, hk);
		double s = 0;
		for (int d = 0; d < p->head_dim; d++)
			s += (double)fa_load_f32(qr, p->dtype, d) * fa_load_f32(kr, p->dtype, d);
		w[j] = s * p->scale;
		if (w[j] > mx)
			mx = w[j];
		n++;
	}
	if (n == 0)
		return 0;
	for (int j = 0; j < lk; j++) {
		w[j] = w[j] == -INFINITY ? 0 : exp(w[j] - mx);
		sum += w[j];
	}
	for (int j = 0; j < lk; j++) {
		if (w[j] == 0)
			continue;
		const uint16_t *vr = v + fa_v_offset(p, cu_k, b, j, hk);
		for (int d = 0; d < p->head_dim_v; d++)
			out[d] += w[j] / sum * fa_load_f32(vr, p->dtype, d);
	}
	return 1;
}

struct dev_case {
	struct fa_problem p;
	int32_t cu_q[MAX_SEQS + 1], cu_k[MAX_SEQS + 1];
	uint16_t *hq, *hk, *hv, *ho;
	size_t nq, nk, no;
	void *dq, *dk, *dv, *do_, *dws, *dcu_q, *dcu_k;
	size_t ws_bytes;
	struct fa_launch_args a;
};

static void dev_free(struct dev_case *d)
{
	free(d->hq), free(d->hk), free(d->hv), free(d->ho);
	cudaFree(d->dq), cudaFree(d->dk), cudaFree(d->dv), cudaFree(d->do_);
	cudaFree(d->dws), cudaFree(d->dcu_q), cudaFree(d->dcu_k);
	memset(d, 0, sizeof *d);
}

/* Inputs on host and device, the output poisoned (0xff: NaN), launch args. */
static void dev_setup(struct dev_case *d, const struct fa_kernel *k, cudaStream_t stream)
{
	struct fa_problem *p = &d->p;
	d->nq = (size_t)fa_tensor_elems(p, FA_TENSOR_Q);
	d->nk = (size_t)fa_tensor_elems(p, FA_TENSOR_K);
	d->no = (size_t)fa_tensor_elems(p, FA_TENSOR_O);
	d->hq = malloc(d->nq * 2), d->hk = malloc(d->nk * 2), d->hv = malloc(d->nk * 2);
	d->ho = malloc(d->no * 2);
	if (!d->hq || !d->hk || !d->hv || !d->ho) {
		printf("FAIL  out of host memory\n");
		exit(1);
	}
	for (size_t e = 0; e < d->nq; e++)
		fa_store_f32(d->hq, p->dtype, (int64_t)e, pattern(0, (int64_t)e));
	for (size_t e = 0; e < d->nk; e++) {
		fa_store_f32(d->hk, p->dtype, (int64_t)e, pattern(1, (int64_t)e));
		fa_store_f32(d->hv, p->dtype, (int64_t)e, pattern(2, (int64_t)e));
	}
	CK(cudaMalloc(&d->dq, d->nq * 2));
	CK(cudaMalloc(&d->dk, d->nk * 2));
	CK(cudaMalloc(&d->dv, d->nk * 2));
	CK(cudaMalloc(&d->do_, d->no * 2));
	CK(cudaMemcpy(d->dq, d->hq, d->nq * 2, cudaMemcpyHostToDevice));
	CK(cudaMemcpy(d->dk, d->hk, d->nk * 2, cudaMemcpyHostToDevice));
	CK(cudaMemcpy(d->dv, d->hv, d->nk * 2, cudaMemcpyHostToDevice));
	CK(cudaMemset(d->do_, 0xff, d->no * 2));
	if (p->varlen) {
		size_t cb = (size_t)(p->batch + 1) * sizeof(int32_t);
		CK(cudaMalloc(&d->dcu_q, cb));
		CK(cudaMalloc(&d->dcu_k, cb));
		CK(cudaMemcpy(d->dcu_q, d->cu_q, cb, cudaMemcpyHostToDevice));
		CK(cudaMemcpy(d->dcu_k, d->cu_k, cb, cudaMemcpyHostToDevice));
	}
	d->ws_bytes = k->workspace_bytes ? k->workspace_bytes(p, NULL) : 0;
	if (d->ws_bytes)
		CK(cudaMalloc(&d->dws, d->ws_bytes));
	memset(&d->a, 0, sizeof d->a);
	d->a.struct_size = sizeof d->a;
	d->a.p = p;
	d->a.q = d->dq, d->a.k = d->dk, d->a.v = d->dv, d->a.o = d->do_;
	d->a.cu_seqlens_q = d->dcu_q;
	d->a.cu_seqlens_k = d->dcu_k;
	d->a.workspace = d->dws;
	d->a.workspace_bytes = d->ws_bytes;
	d->a.stream = stream;
}

/* Compares rows of the output with the reference; returns the largest
 * absolute error (NaN when an element is NaN or unwritten). */
static double check_rows(struct dev_case *d, int all_rows, int *empty_rows, double *empty_err)
{
	const struct fa_problem *p = &d->p;
	double *ref = malloc(sizeof(double) * (size_t)p->head_dim_v);
	double *w = malloc(sizeof(double) * (size_t)p->kv_len);
	double worst = 0;
	int64_t n_rows = (int64_t)p->total_q * p->heads;
	int64_t stride = all_rows ? 1 : (n_rows / SAMPLE_ROWS > 1 ? n_rows / SAMPLE_ROWS : 1);
	*empty_rows = 0;
	*empty_err = 0;
	for (int64_t r = 0; r < n_rows; r += stride) {
		int64_t T = r / p->heads;
		int h = (int)(r % p->heads), b = 0;
		int64_t t;
		if (p->varlen) {
			while (T >= d->cu_q[b + 1])
				b++;
			t = T - d->cu_q[b];
		} else {
			b = (int)(T / p->q_len);
			t = T % p->q_len;
		}
		int any = reference_row(p, d->cu_q, d->cu_k, d->hq, d->hk, d->hv, b, (int)t, h, ref, w);
		const uint16_t *o = d->ho + fa_o_offset(p, d->cu_q, b, t, h);
		for (int e = 0; e < p->head_dim_v; e++) {
			double x = fa_load_f32(o, p->dtype, e);
			double err = fabs(x - ref[e]);
			if (isnan(x) || isnan(err))
				err = NAN;
			if (!any) {
				if (!(err <= *empty_err))
					*empty_err = err;
			}
			if (!(err <= worst))
				worst = err;
		}
		*empty_rows += !any;
	}
	free(ref);
	free(w);
	return worst;
}

/* After a failed case: a sticky error (an illegal address, a trap) kills
 * the context, and every later CUDA call would fail with it. End here with
 * the reason instead of failing every case after. */
static void dead_context_check(const char *name)
{
	(void)cudaGetLastError();
	cudaError_t e = cudaDeviceSynchronize();
	if (e == cudaSuccess)
		return;
	printf("FAIL  the CUDA context is dead after '%s' (%s): no further case can run in "
	       "this process\n",
	       name, cudaGetErrorString(e));
	exit(1);
}

static void run_case(const struct fa_kernel *k, const struct st_case *c, cudaStream_t stream)
{
	struct dev_case d;
	char why[600] = "";
	struct timespec t0, t1;
	memset(&d, 0, sizeof d);
	problem_of(c, &d.p, d.cu_q, d.cu_k);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	int ok = k->supports(&d.p, why, sizeof why);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double build_ms = (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6;
	if (c->expect_refused) {
		if (ok) {
			printf("FAIL  %-66s supported, but supports() should refuse it\n", c->name);
			n_fail++;
		} else {
			printf("PASS  %-66s refused as expected: %s\n", c->name, why);
			n_pass++;
		}
		return;
	}
	if (!ok) {
		printf("SKIP  %-66s %s\n", c->name, why);
		n_skip++;
		return;
	}
	dev_setup(&d, k, stream);
	int code = k->launch(&d.a);
	cudaError_t e = cudaStreamSynchronize(stream);
	const struct fa_cudnn_plan *pl = fa_cudnn_cache_get(fa_cudnn, &d.p, FA_CUDNN_FWD);
	if (code != 0 || e != cudaSuccess) {
		printf("FAIL  %-66s launch: %s; sync: %s (engine %lld, rank %d)\n", c->name,
		       code ? fa_cudnn_error_string(code) : "ok", cudaGetErrorString(e),
		       (long long)pl->engine, pl->heur_rank);
		n_fail++;
		dead_context_check(c->name);
		dev_free(&d);
		return;
	}
	CK(cudaMemcpy(d.ho, d.do_, d.no * 2, cudaMemcpyDeviceToHost));
	int64_t scores = (int64_t)d.p.total_q * d.p.heads * d.p.kv_len;
	int empty = 0;
	double empty_err = 0;
	double err = check_rows(&d, scores <= FULL_CHECK_SCORES, &empty, &empty_err);
	double tol = c->dtype == FA_DTYPE_BF16 ? TOL_BF16 : TOL_FP16;
	int pass = err <= tol;
	printf("%s  %-66s max_abs %.3g (tol %.0e), plan %.0f ms, ws %zu B, engine %lld",
	       pass ? "PASS" : "FAIL", c->name, err, tol, build_ms, d.ws_bytes,
	       (long long)pl->engine);
	if (empty)
		printf(", %d empty rows: %s (max %.3g)", empty,
		       empty_err == 0 ? "zeros" : "NOT zeros", empty_err);
	printf("\n");
	pass ? n_pass++ : n_fail++;
	dev_free(&d);
}

/* Tolerances of the backward: the largest |grad - ref| over the largest
 * |ref| of that gradient (dS and P^T go through the input type before the
 * matmuls), and of the LSE, absolute (fp32 from the same rounded inputs). */
#define BWD_TOL_BF16 4e-2
#define BWD_TOL_FP16 1e-2
#define LSE_TOL 1e-3

struct bwd_err {
	double dq, dk, dv, lse;       /* errors */
	double dq_ref, dk_ref, dv_ref; /* largest |ref| */
	int empty_rows, empty_keys;   /* rows that attend no key, keys no query sees */
	int empty_bad;                /* of them: a gradient not zero, an LSE not +inf */
};

static void worse(double *e, double x)
{
	if (isnan(x) || !(x <= *e))
		*e = isnan(x) ? NAN : x;
}

/* The reference backward of kv head hk of sequence b (every query head of
 * its group), in double, compared with the device's gradients and LSE
 * (lse[T heads + h] of token T). A row that attends no key must have a
 * zero dQ and an LSE of +inf, a key that no query sees zero dK and dV. */
static void check_bwd_head(const struct fa_problem *p, const int32_t *cu_q, const int32_t *cu_k,
			   const uint16_t *q, const uint16_t *k, const uint16_t *v,
			   const uint16_t *dout, const uint16_t *dq, const uint16_t *dk,
			   const uint16_t *dv, const float *lse, int b, int hk, struct bwd_err *r)
{
	int lq = fa_seq_q_len(p, cu_q, b), lk = fa_seq_kv_len(p, cu_k, b);
	int g = p->heads / p->kv_heads, D = p->head_dim, Dv = p->head_dim_v;
	int prefix = fa_seq_prefix(p, NULL, b);
	int64_t t0 = fa_seq_q_start(p, cu_q, b);
	/* + 1: a sequence with no key still gets its buffers */
	double *pr = malloc(sizeof(double) * (size_t)(lk + 1));
	double *dp = malloc(sizeof(double) * (size_t)(lk + 1));
	double *gk = calloc((size_t)(lk + 1) * D, sizeof(double));
	double *gv = calloc((size_t)(lk + 1) * Dv, sizeof(double));
	double *gq = malloc(sizeof(double) * (size_t)D);
	int *seen = calloc((size_t)(lk + 1), sizeof(int));
	if (!pr || !dp || !gk || !gv || !gq || !seen) {
		printf("FAIL  out of host memory\n");
		exit(1);
	}
	for (int h = hk * g; h < (hk + 1) * g; h++) {
		for (int i = 0; i < lq; i++) {
			const uint16_t *qr = q + fa_q_offset(p, cu_q, b, i, h);
			const uint16_t *dor = dout + fa_o_offset(p, cu_q, b, i, h);
			const uint16_t *dqr = dq + fa_q_offset(p, cu_q, b, i, h);
			double x = lse[(t0 + i) * p->heads + h];
			double mx = -INFINITY, l = 0, dsum = 0;
			for (int j = 0; j < lk; j++) {
				pr[j] = -INFINITY;
				if (!fa_mask_allows(p->mask, i, j, lq, lk, prefix, p->window))
					continue;
				const uint16_t *kr = k + fa_k_offset(p, cu_k, b, j, hk);
				double s = 0;
				for (int d = 0; d < D; d++)
					s += (double)fa_load_f32(qr, p->dtype, d) * fa_load_f32(kr, p->dtype, d);
				pr[j] = s * p->scale;
				seen[j] = 1;
				if (pr[j] > mx)
					mx = pr[j];
			}
			for (int j = 0; j < lk; j++) {
				pr[j] = pr[j] == -INFINITY ? 0 : exp(pr[j] - mx);
				l += pr[j];
			}
			if (l == 0) {
				/* no key: dQ zeros, the LSE +inf */
				int bad = !(isinf(x) && x > 0);
				for (int d = 0; d < D; d++) {
					double e = fa_load_f32(dqr, p->dtype, d);
					bad |= !(e == 0);
					worse(&r->dq, fabs(e));
				}
				r->empty_rows++;
				r->empty_bad += bad;
				if (bad)
					worse(&r->lse, INFINITY);
				continue;
			}
			worse(&r->lse, fabs(x - (mx + log(l))));
			for (int j = 0; j < lk; j++) {
				pr[j] /= l;
				dp[j] = 0;
				if (pr[j] == 0)
					continue;
				const uint16_t *vr = v + fa_v_offset(p, cu_k, b, j, hk);
				for (int d = 0; d < Dv; d++)
					dp[j] += (double)fa_load_f32(dor, p->dtype, d) * fa_load_f32(vr, p->dtype, d);
				dsum += pr[j] * dp[j];
			}
			for (int d = 0; d < D; d++)
				gq[d] = 0;
			for (int j = 0; j < lk; j++) {
				if (pr[j] == 0)
					continue;
				double ds = pr[j] * (dp[j] - dsum) * p->scale;
				const uint16_t *kr = k + fa_k_offset(p, cu_k, b, j, hk);
				for (int d = 0; d < D; d++) {
					gq[d] += ds * fa_load_f32(kr, p->dtype, d);
					gk[(size_t)j * D + d] += ds * fa_load_f32(qr, p->dtype, d);
				}
				for (int d = 0; d < Dv; d++)
					gv[(size_t)j * Dv + d] += pr[j] * fa_load_f32(dor, p->dtype, d);
			}
			for (int d = 0; d < D; d++) {
				worse(&r->dq, fabs(fa_load_f32(dqr, p->dtype, d) - gq[d]));
				worse(&r->dq_ref, fabs(gq[d]));
			}
		}
	}
	for (int j = 0; j < lk; j++) {
		const uint16_t *dkr = dk + fa_k_offset(p, cu_k, b, j, hk);
		const uint16_t *dvr = dv + fa_v_offset(p, cu_k, b, j, hk);
		int bad = 0;
		for (int d = 0; d < D; d++) {
			double e = fa_load_f32(dkr, p->dtype, d);
			bad |= !seen[j] && !(e == 0);
			worse(&r->dk, fabs(e - gk[(size_t)j * D + d]));
			worse(&r->dk_ref, fabs(gk[(size_t)j * D + d]));
		}
		for (int d = 0; d < Dv; d++) {
			double e = fa_load_f32(dvr, p->dtype, d);
			bad |= !seen[j] && !(e == 0);
			worse(&r->dv, fabs(e - gv[(size_t)j * Dv + d]));
			worse(&r->dv_ref, fabs(gv[(size_t)j * Dv + d]));
		}
		r->empty_keys += !seen[j];
		r->empty_bad += bad;
	}
	free(pr), free(dp), free(gk), free(gv), free(gq), free(seen);
}

static double rel(double err, double ref)
{
	return isnan(err) ? NAN : err / (ref > 1e-6 ? ref : 1e-6);
}

/* The backward's launch without its buffers (LSE, dO, dQ, dK, dV; run for
 * the varlen cases) must fail with the reason, before anything runs. */
static void check_launch_error(const struct fa_kernel *ks, const struct st_case *c,
			       cudaStream_t stream)
{
	struct dev_case d;
	memset(&d, 0, sizeof d);
	problem_of(c, &d.p, d.cu_q, d.cu_k);
	dev_setup(&d, &ks[1], stream);
	int code = ks[1].launch(&d.a);
	const char *text = code ? fa_cudnn_error_string(code) : "";
	int ok = code != 0 &&
		 strstr(text, "cudnn_sdpa_bwd: the launch has no LSE, O, dO, dQ, dK or dV") != NULL;
	printf("%s  %-66s launch without gradient buffers: '%s'\n", ok ? "PASS" : "FAIL", c->name,
	       text);
	ok ? n_pass++ : n_fail++;
	dev_free(&d);
}

/* A backward case: cudnn_sdpa with the LSE, then cudnn_sdpa_bwd, then the
 * reference (every kv head, or kv head 0 of batch 0 when large). */
static void run_bwd_case(const struct fa_kernel *ks, const struct st_case *c, cudaStream_t stream)
{
	const struct fa_kernel *fk = &ks[0], *bk = &ks[1];
	struct dev_case d;
	char why[600] = "";
	memset(&d, 0, sizeof d);
	problem_of(c, &d.p, d.cu_q, d.cu_k);
	int ok = bk->supports(&d.p, why, sizeof why);
	if (c->expect_refused) {
		printf("%s  %-66s %s%s\n", ok ? "FAIL" : "PASS", c->name,
		       ok ? "supported, but supports() should refuse it" : "refused as expected: ",
		       ok ? "" : why);
		ok ? n_fail++ : n_pass++;
		return;
	}
	if (!ok) {
		printf("SKIP  %-66s %s\n", c->name, why);
		n_skip++;
		return;
	}
	if (!fk->supports(&d.p, why, sizeof why)) {
		printf("SKIP  %-66s forward: %s\n", c->name, why);
		n_skip++;
		return;
	}
	if (d.p.varlen)
		check_launch_error(ks, c, stream);
	dev_setup(&d, fk, stream);
	struct fa_problem *p = &d.p;
	size_t nlse = (size_t)p->total_q * (size_t)p->heads, bws = bk->workspace_bytes(p, NULL);
	uint16_t *hdo = malloc(d.no * 2), *hdq = malloc(d.nq * 2), *hdk = malloc(d.nk * 2);
	uint16_t *hdv = malloc(d.nk * 2);
	float *hlse = malloc(nlse * sizeof(float));
	void *ddo, *ddq, *ddk, *ddv, *dlse, *dbws = NULL;
	if (!hdo || !hdq || !hdk || !hdv || !hlse) {
		printf("FAIL  out of host memory\n");
		exit(1);
	}
	for (size_t e = 0; e < d.no; e++)
		fa_store_f32(hdo, p->dtype, (int64_t)e, pattern(3, (int64_t)e));
	CK(cudaMalloc(&ddo, d.no * 2));
	CK(cudaMalloc(&ddq, d.nq * 2));
	CK(cudaMalloc(&ddk, d.nk * 2));
	CK(cudaMalloc(&ddv, d.nk * 2));
	CK(cudaMalloc(&dlse, nlse * sizeof(float)));
	if (bws)
		CK(cudaMalloc(&dbws, bws));
	CK(cudaMemcpy(ddo, hdo, d.no * 2, cudaMemcpyHostToDevice));
	/* poisoned (0xff: NaN) so that an unwritten element fails */
	CK(cudaMemset(ddq, 0xff, d.nq * 2));
	CK(cudaMemset(ddk, 0xff, d.nk * 2));
	CK(cudaMemset(ddv, 0xff, d.nk * 2));
	CK(cudaMemset(dlse, 0xff, nlse * sizeof(float)));
	d.a.lse = dlse;
	int code = fk->launch(&d.a);
	cudaError_t e = cudaStreamSynchronize(stream);
	struct fa_launch_args ba = d.a;
	ba.workspace = dbws;
	ba.workspace_bytes = bws;
	ba.d_o = ddo, ba.dq = ddq, ba.dk = ddk, ba.dv = ddv;
	if (code == 0 && e == cudaSuccess) {
		code = bk->launch(&ba);
		e = cudaStreamSynchronize(stream);
	}
	if (code != 0 || e != cudaSuccess) {
		printf("FAIL  %-66s launch: %s; sync: %s\n", c->name,
		       code ? fa_cudnn_error_string(code) : "ok", cudaGetErrorString(e));
		n_fail++;
		dead_context_check(c->name);
		return;
	}
	CK(cudaMemcpy(hdq, ddq, d.nq * 2, cudaMemcpyDeviceToHost));
	CK(cudaMemcpy(hdk, ddk, d.nk * 2, cudaMemcpyDeviceToHost));
	CK(cudaMemcpy(hdv, ddv, d.nk * 2, cudaMemcpyDeviceToHost));
	CK(cudaMemcpy(hlse, dlse, nlse * sizeof(float), cudaMemcpyDeviceToHost));
	struct bwd_err r;
	memset(&r, 0, sizeof r);
	int64_t scores = (int64_t)p->total_q * p->heads * p->kv_len;
	int all = scores <= FULL_CHECK_SCORES;
	for (int b = 0; b < (all ? p->batch : 1); b++)
		for (int hk = 0; hk < (all ? p->kv_heads : 1); hk++)
			check_bwd_head(p, d.cu_q, d.cu_k, d.hq, d.hk, d.hv, hdo, hdq, hdk, hdv,
				       hlse, b, hk, &r);
	double tol = c->dtype == FA_DTYPE_BF16 ? BWD_TOL_BF16 : BWD_TOL_FP16;
	double eq = rel(r.dq, r.dq_ref), ek = rel(r.dk, r.dk_ref), ev = rel(r.dv, r.dv_ref);
	int pass = eq <= tol && ek <= tol && ev <= tol && r.lse <= LSE_TOL && r.empty_bad == 0;
	const struct fa_cudnn_plan *bpl = fa_cudnn_cache_get(fa_cudnn, p, FA_CUDNN_BWD);
	printf("%s  %-66s dQ %.3g dK %.3g dV %.3g of max|ref| (tol %.0e), lse max_abs %.3g "
	       "(tol %.0e), ws %zu B, engine %lld%s",
	       pass ? "PASS" : "FAIL", c->name, eq, ek, ev, tol, r.lse, LSE_TOL, bws,
	       (long long)bpl->engine, bpl->dq_accum_bytes ? " (fp32 dQ accumulator)" : "");
	if (r.empty_rows || r.empty_keys)
		printf(", %d rows with no key (dQ zeros, LSE +inf) and %d keys no query sees "
		       "(dK, dV zeros): %s",
		       r.empty_rows, r.empty_keys,
		       r.empty_bad ? "NOT as they must be" : "as they must be");
	printf("\n");
	pass ? n_pass++ : n_fail++;
	free(hdo), free(hdq), free(hdk), free(hdv), free(hlse);
	cudaFree(ddo), cudaFree(ddq), cudaFree(ddk), cudaFree(ddv), cudaFree(dlse), cudaFree(dbws);
	dev_free(&d);
}

/* Times B=2 H=16 L=8192 D=128 bf16 (mask as given) with CUDA events. */
static void run_timing(const struct fa_kernel *k, int mask, cudaStream_t stream)
{
	struct st_case c = {"timing", FA_DTYPE_BF16, 2, 16, 16, 8192, 8192, 128, mask, 0, 0,
			    FA_LAYOUT_BSHD, 0, {0}, {0}, 0, 0};
	struct dev_case d;
	char why[600];
	cudaEvent_t e0, e1;
	const int warmup = 3, iters = 20;
	float ms = 0;
	memset(&d, 0, sizeof d);
	problem_of(&c, &d.p, d.cu_q, d.cu_k);
	if (!k->supports(&d.p, why, sizeof why)) {
		printf("SKIP  timing %s: %s\n", mask ? "causal" : "none", why);
		n_skip++;
		return;
	}
	dev_setup(&d, k, stream);
	int plans = fa_cudnn_cache_count();
	for (int i = 0; i < warmup; i++) {
		int code = k->launch(&d.a);
		if (code != 0) {
			printf("FAIL  timing launch: %s\n", fa_cudnn_error_string(code));
			n_fail++;
			dev_free(&d);
			return;
		}
	}
	CK(cudaEventCreate(&e0));
	CK(cudaEventCreate(&e1));
	CK(cudaEventRecord(e0, stream));
	for (int i = 0; i < iters; i++)
		(void)k->launch(&d.a);
	CK(cudaEventRecord(e1, stream));
	CK(cudaEventSynchronize(e1));
	CK(cudaEventElapsedTime(&ms, e0, e1));
	CK(cudaMemcpy(d.ho, d.do_, d.no * 2, cudaMemcpyDeviceToHost));
	int empty = 0;
	double empty_err = 0;
	double err = check_rows(&d, 0, &empty, &empty_err);
	double t = ms / iters;
	double flops = 4.0 * c.batch * c.heads * (double)c.q_len * c.kv_len * c.head_dim;
	if (mask == FA_MASK_CAUSAL)
		flops /= 2;
	int pass = err <= TOL_BF16 && fa_cudnn_cache_count() == plans;
	printf("%s  timing B=2 H=16 L=8192 D=128 bf16 %-7s %.3f ms  %.1f TFLOP/s  "
	       "(%d launches, %d sampled rows max_abs %.3g, plans built while timing: %d)\n",
	       pass ? "PASS" : "FAIL", mask ? "causal" : "none", t, flops / (t * 1e-3) / 1e12, iters,
	       SAMPLE_ROWS, err, fa_cudnn_cache_count() - plans);
	pass ? n_pass++ : n_fail++;
	cudaEventDestroy(e0);
	cudaEventDestroy(e1);
	dev_free(&d);
}

/* The mask form this process builds, in words. */
static const char *br_text(const struct fa_cudnn_api *api)
{
	switch (api->br) {
	case FA_CUDNN_BR_LEGACY: return "form 0 (legacy: axis 3 on ADD/SUB, padded)";
	case FA_CUDNN_BR_SCALAR: return "form 1 (by-value int32 lengths)";
	case FA_CUDNN_BR_PADDED: return "form 2 (padded, device length arrays)";
	case FA_CUDNN_BR_FLOAT: return "form 3 (one by-value fp32 shift)";
	case FA_CUDNN_BR_AXIS:
		return api->br_set ? "form 4 (by-value int32 lengths, axis 3 on ADD/SUB)"
				   : "form 4 (by-value int32 lengths, axis 3 on ADD/SUB; the default)";
	default: return "?";
	}
}

/* --graphs: each case's operation graph, without a device or a handle. */
static int run_graphs(void)
{
	struct fa_cudnn_api api;
	char why[600];
	if (fa_cudnn_api_open(&api, why, sizeof why) != 0) {
		printf("cuDNN not available: %s\n", why);
		return 2;
	}
	printf("cuDNN %zu, operation graphs only (no device, no engine); masks aligned "
	       "bottom-right: %s\n",
	       api.version, br_text(&api));
	api.sm = 90;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const struct st_case *c = &cases[i];
		struct fa_problem p;
		int32_t cu_q[MAX_SEQS + 1], cu_k[MAX_SEQS + 1];
		struct fa_cudnn_plan *pl = calloc(1, sizeof *pl);
		if (!pl)
			return 1;
		problem_of(c, &p, cu_q, cu_k);
		fa_cudnn_key_of(&p, FA_CUDNN_FWD, &pl->key);
		fa_cudnn_plan_build(&api, pl);
		/* forms 1 to 3 send the axis with GEN_INDEX only (cuDNN cannot
		 * read a pointwise descriptor back: the builder counts what it set) */
		int ok = pl->graph_ok && pl->with_stats &&
			 (api.br < FA_CUDNN_BR_SCALAR || api.br == FA_CUDNN_BR_AXIS ||
			  pl->n_axis_other == 0);
		printf("%s  %-66s %d descriptors, %d variant tensors, %d other ops with an "
		       "axis%s%s\n",
		       ok ? "PASS" : "FAIL", c->name, pl->n_descs, pl->n_uids, pl->n_axis_other,
		       pl->graph_ok ? "" : ": ", pl->graph_ok ? "" : pl->why);
		ok ? n_pass++ : n_fail++;
		fa_cudnn_plan_release(&api, pl);
		/* the forward with fabench's LSE and the backward; varlen: with
		 * the LSE's ragged offsets */
		for (int kind = FA_CUDNN_FWD_LSE; kind <= FA_CUDNN_BWD; kind++) {
			memset(pl, 0, sizeof *pl);
			fa_cudnn_key_of(&p, kind, &pl->key);
			fa_cudnn_plan_build(&api, pl);
			int ragged = 0;
			for (int u = 0; u < pl->n_uids; u++)
				ragged |= pl->uids[u] == FA_CUDNN_UID_RAG_STATS;
			ok = pl->graph_ok && pl->with_stats && ragged == p.varlen;
			printf("%s  %-66s %s graph: %d descriptors, %d variant tensors%s%s%s%s\n",
			       ok ? "PASS" : "FAIL", c->name, kind == FA_CUDNN_BWD ? "backward" : "LSE forward",
			       pl->n_descs, pl->n_uids,
			       pl->dq_accum_bytes ? ", fp32 dQ accumulator" : "",
			       ragged ? ", ragged LSE" : "", pl->graph_ok ? "" : ": ",
			       pl->graph_ok ? "" : pl->why);
			ok ? n_pass++ : n_fail++;
			fa_cudnn_plan_release(&api, pl);
		}
		free(pl);
	}
	/* what supports() refuses before building a plan: the varlen
	 * backward on sm_90 to sm_11x with cuDNN 9.6.0+ only */
	{
		struct fa_problem p;
		int32_t cu_q[MAX_SEQS + 1], cu_k[MAX_SEQS + 1];
		static const struct {
			int sm, version, bwd, refused;
			const char *why;
		} rf[] = {
			{90, 91900, 1, 0, ""},
			{100, 91900, 1, 0, ""},
			{90, 91900, 0, 0, ""},
			{80, 91900, 1, 1, "cudnn_sdpa_bwd: varlen needs sm_90 to sm_11x"},
			{120, 91900, 1, 1, "takes no ragged (packed) LSE on sm_120"},
			{80, 91900, 0, 0, ""}, /* the forward: sm_8x from 9.18.1 */
			{90, 90500, 1, 1, "no ragged offset on the softmax stats"},
		};
		struct fa_cudnn_api a = api;
		const struct st_case *vc = NULL;
		for (size_t i = 0; i < sizeof cases / sizeof cases[0] && !vc; i++)
			if (cases[i].bwd && cases[i].n_seqs)
				vc = &cases[i];
		problem_of(vc, &p, cu_q, cu_k);
		for (size_t i = 0; i < sizeof rf / sizeof rf[0]; i++) {
			char text[600] = "";
			a.sm = rf[i].sm;
			a.version = (size_t)rf[i].version;
			int refused = fa_cudnn_refuse(&a, &p, rf[i].bwd, text, sizeof text);
			int ok = refused == rf[i].refused && strstr(text, rf[i].why) != NULL;
			printf("%s  varlen %s, sm_%d, cuDNN %d: %s%s\n", ok ? "PASS" : "FAIL",
			       rf[i].bwd ? "backward" : "forward", rf[i].sm, rf[i].version,
			       refused ? "refused: " : "accepted", text);
			ok ? n_pass++ : n_fail++;
		}
	}
	/* the plan cache: one entry per key, failures included */
	{
		struct fa_problem p, p2;
		int32_t cu_q[MAX_SEQS + 1], cu_k[MAX_SEQS + 1];
		pthread_mutex_init(&api.lock, NULL);
		problem_of(&cases[1], &p, cu_q, cu_k);
		p2 = p;
		p2.scale *= 2;          /* passed by value: same plan */
		struct fa_cudnn_plan *a = fa_cudnn_cache_get(&api, &p, FA_CUDNN_FWD);
		struct fa_cudnn_plan *b = fa_cudnn_cache_get(&api, &p2, FA_CUDNN_FWD);
		p2.q_stride_b += 64;    /* another layout: another plan */
		struct fa_cudnn_plan *c = fa_cudnn_cache_get(&api, &p2, FA_CUDNN_FWD);
		int ok = a && a == b && c && c != a && fa_cudnn_cache_count() == 2;
		printf("%s  plan cache: same key -> same plan, another stride -> a new one (%d plans)\n",
		       ok ? "PASS" : "FAIL", fa_cudnn_cache_count());
		ok ? n_pass++ : n_fail++;
		fa_cudnn_cache_clear(&api);
		pthread_mutex_destroy(&api.lock);
	}
	printf("%d passed, %d failed\n", n_pass, n_fail);
	fa_cudnn_api_close(&api);
	return n_fail ? 1 : 0;
}

#define N_CASES (sizeof cases / sizeof cases[0])
#define N_TIMINGS 2

static const char *case_name(size_t i)
{
	return i < N_CASES ? cases[i].name : i == N_CASES ? "timing none" : "timing causal";
}

/* Runs every case and timing whose name contains match (NULL: all) in a
 * child process of its own (this program with --case N), relaying its
 * output; counts the results from the exit status: 0 pass, 3 skip,
 * anything else (a crash included) a failure. */
static int run_isolated(const char *self, const char *match)
{
	extern char **environ;
	for (size_t i = 0; i < N_CASES + N_TIMINGS; i++) {
		char num[32];
		char *argv[] = {(char *)self, "--case", num, NULL};
		const char *name = case_name(i);
		pid_t pid;
		int st = 0, rc;
		if (match && !strstr(name, match))
			continue;
		snprintf(num, sizeof num, "%zu", i);
		fflush(stdout);
		if ((rc = posix_spawn(&pid, self, NULL, NULL, argv, environ)) != 0) {
			printf("FAIL  %s: cannot start '%s': %s\n", name, self, strerror(rc));
			return 1;
		}
		while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
			;
		if (WIFEXITED(st) && WEXITSTATUS(st) == 0) {
			n_pass++;
		} else if (WIFEXITED(st) && WEXITSTATUS(st) == 3) {
			n_skip++;
		} else if (WIFEXITED(st) && WEXITSTATUS(st) == 2) {
			return 2; /* no device or no cuDNN: the child said why */
		} else {
			n_fail++;
			if (WIFSIGNALED(st))
				printf("FAIL  %-66s killed by signal %d\n", name, WTERMSIG(st));
		}
	}
	printf("%d passed, %d failed, %d skipped (a process per case)\n", n_pass, n_fail, n_skip);
	return n_fail ? 1 : 0;
}

int main(int argc, char **argv)
{
	char why[600];
	const struct fa_kernel *ks;
	struct cudaDeviceProp prop;
	cudaStream_t stream;
	int dev = 0;
	long only = -1;
	const char *match = NULL;
	char *end = NULL;
	if (argc == 2 && strcmp(argv[1], "--graphs") == 0)
		return run_graphs();
	if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
		printf("usage: cudnn-selftest [--graphs | --list | --case N | --match TEXT]\n"
		       "Runs the cudnn_sdpa kernel (plugins/cudnn) on a GPU without the harness: each\n"
		       "case against a CPU reference in double, then two timings, every case in a\n"
		       "process of its own.\n"
		       "  --case N      case N only, in this process (--list shows the numbers)\n"
		       "  --match TEXT  the cases whose name contains TEXT, a process each\n"
		       "  --list        the cases' numbers and names\n"
		       "  --graphs      no GPU needed: builds every case's operation graph\n"
		       "The cases named 'bwd' run cudnn_sdpa with the LSE, then cudnn_sdpa_bwd, and\n"
		       "check dQ, dK, dV and the LSE.\n"
		       "FABENCH_CUDNN names libcudnn.so.9; FABENCH_CUDNN_BR (0 to 4; default 4), a\n"
		       "debugging switch, picks the graph form of masks aligned bottom-right\n"
		       "(docs/cudnn.md). Exit status: 0 nothing failed, 1 a failure, 2 no cuDNN or\n"
		       "no device, 3 (--case) skipped.\n");
		return 0;
	}
	if (argc == 2 && strcmp(argv[1], "--list") == 0) {
		for (size_t i = 0; i < N_CASES + N_TIMINGS; i++)
			printf("%2zu  %s\n", i, case_name(i));
		return 0;
	}
	if (argc == 3 && strcmp(argv[1], "--case") == 0) {
		only = strtol(argv[2], &end, 10);
		if (*end || only < 0 || only >= (long)(N_CASES + N_TIMINGS)) {
			printf("case '%s' out of range: 0 to %zu\n", argv[2], N_CASES + N_TIMINGS - 1);
			return 2;
		}
	} else if (argc == 3 && strcmp(argv[1], "--match") == 0) {
		size_t i = 0;
		match = argv[2];
		while (i < N_CASES + N_TIMINGS && !strstr(case_name(i), match))
			i++;
		if (i == N_CASES + N_TIMINGS) {
			printf("no case name contains '%s' (--list shows them)\n", match);
			return 2;
		}
	} else if (argc > 1) {
		printf("usage: cudnn-selftest [--graphs | --list | --case N | --match TEXT] "
		       "(--help says more)\n");
		return 2;
	}
	if (cudaSetDevice(dev) != cudaSuccess || cudaFree(0) != cudaSuccess ||
	    cudaGetDeviceProperties(&prop, dev) != cudaSuccess) {
		printf("no CUDA device: %s\n", cudaGetErrorString(cudaGetLastError()));
		return 2;
	}
	if (fa_cudnn_init(why, sizeof why) != 0) {
		printf("cudnn_sdpa not available: %s\n", why);
		return 2;
	}
	if (fa_cudnn_kernels(&ks) != FA_CUDNN_N_KERNELS) {
		printf("FAIL  fa_cudnn_kernels gave no kernel\n");
		return 1;
	}
	if (only < 0) {
		printf("device %s (sm_%d%d); %s: %s\nmasks aligned bottom-right: %s\n", prop.name,
		       prop.major, prop.minor, ks->name, ks->description, br_text(fa_cudnn));
		/* the children open their own context and cuDNN handle */
		char self[4096];
		ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
		fa_cudnn_shutdown();
		if (n <= 0) {
			printf("FAIL  cannot find this program: /proc/self/exe: %s\n", strerror(errno));
			return 1;
		}
		self[n] = '\0';
		return run_isolated(self, match);
	}
	CK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
	if (only < (long)N_CASES && cases[only].bwd)
		run_bwd_case(ks, &cases[only], stream);
	else if (only < (long)N_CASES)
		run_case(ks, &cases[only], stream);
	else
		run_timing(ks, only == (long)N_CASES ? FA_MASK_NONE : FA_MASK_CAUSAL, stream);
	fa_cudnn_shutdown();
	cudaStreamDestroy(stream);
	return n_fail ? 1 : n_skip ? 3 : 0;
}
