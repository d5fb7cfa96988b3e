/* emu_flash_amd.cpp - runs the body of the AMD matrix-core flash kernels
 * (kernels/hip/flash_amd_mma.h) on the CPU and compares every output with
 * a float64 attention computed here.
 *
 * No AMD GPU exists where these kernels were written; this executes the
 * same source the GPU would: one POSIX thread per GPU thread, the blocks of
 * the grid one after another, LDS as the kernel's own __shared__ object
 * (a function-local static: one block runs at a time), __syncthreads as a
 * barrier, shuffles through a block-wide exchange (every shuffle of the
 * kernel is reached by all threads of the block), and each matrix
 * instruction computed from the operands the lanes of a wave hold, read
 * where the ISA says the hardware reads them (tests/amd_isa_model.h, the
 * model tests/test_amd_frag.c checks amd_frag.h's maps against). The split
 * merge (fa_mma::combine_row, shared with cuda_flash_mma) runs the same way,
 * 32 threads per output row.
 *
 * What this does not show: timing, memory ordering beyond barriers, the
 * compiler's code for the real targets (tools/hip-mma-check looks at the
 * ISA), the runtime. Built and run by tools/hip-mma-check (--emulate).
 *
 *   emu_flash_amd            every case, one line each; exits 1 when any
 *                            case fails
 *   emu_flash_amd --mutant   seed 000 at the kernel level: the gfx11
 *                            instances (gfx11 fragments) executed by the
 *                            gfx12 instruction; exits 0 only when every
 *                            case then FAILS (the check can see the bug)
 */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vector>

/* ---- the HIP names the kernel uses ---- */
#define __device__
#define __host__
#define __forceinline__ inline
#define __shared__ static
#define FA_GPU_H 1 /* cuda_kernels.h includes fa_gpu.h: these names instead */
#define FA_AMD_MMA_EXTERNAL 1
typedef void *cudaStream_t;
typedef int cudaError_t;
#define cudaSuccess 0
#define cudaDevAttrMultiProcessorCount 16
static inline cudaError_t cudaGetDevice(int *) { return 1; } /* no device: no auto split */
static inline cudaError_t cudaDeviceGetAttribute(int *, int, int) { return 1; }
static inline cudaError_t cudaGetLastError() { return 0; }
struct int2 {
	int x, y;
};
static inline int2 make_int2(int x, int y) { return int2{x, y}; }
struct uint4 {
	unsigned x, y, z, w;
};
struct float2 {
	float x, y;
};
[[maybe_unused]] static inline float2 make_float2(float x, float y) { return float2{x, y}; }

#include "../../kernels/common/fa_problem.h"

/* one block: its threads, barrier and exchange slots */
#define EMU_MAX_THREADS 256
struct emu_block {
	int nt, wave;
	pthread_barrier_t bar;
	float xf[EMU_MAX_THREADS];
	uint16_t a[EMU_MAX_THREADS][16], b[EMU_MAX_THREADS][16];
	float c[EMU_MAX_THREADS][16];
};
static emu_block *g_blk;
static thread_local int t_tid;

static void __syncthreads() { pthread_barrier_wait(&g_blk->bar); }

static float emu_exchange(float v, int src)
{
	g_blk->xf[t_tid] = v;
	__syncthreads();
	const float r = g_blk->xf[src];
	__syncthreads();
	return r;
}

static float __shfl_xor(float v, int mask, int width)
{
	const int base = t_tid & ~(width - 1);
	return emu_exchange(v, base | ((t_tid - base) ^ mask));
}

static float __shfl(float v, int src, int width)
{
	const int base = t_tid & ~(width - 1);
	return emu_exchange(v, base | (src & (width - 1)));
}

static int __any(int pred) { return pred; } /* only cuda_flash_mma's body uses it */

#include "../amd_isa_model.h"

/* --mutant: the instruction model used for every wave (-1: the kernel's own) */
static int g_hw_override = -1;

static float emu_to_f32(int dtype, uint16_t h)
{
	return dtype == FA_DTYPE_BF16 ? fa_bf16_to_f32(h) : fa_f16_to_f32(h);
}

/* One matrix instruction of the wave of the calling thread: every lane
 * posts its operands, then computes its own accumulator elements from the
 * lanes the ISA model names (gfx11's two copies of an A/B element must
 * agree, else the element is NaN, as the hardware leaves it undefined). */
template <int KIND, int DT, int AW, int CE>
static void fa_amd_external_mma(float (&acc)[CE], const uint32_t (&a)[AW], const uint32_t (&b)[AW])
{
	const struct isa *h = &isa_models[g_hw_override >= 0 ? g_hw_override : KIND];
	for (int j = 0; j < AW; ++j) {
		g_blk->a[t_tid][2 * j] = (uint16_t)(a[j] & 0xffffu);
		g_blk->a[t_tid][2 * j + 1] = (uint16_t)(a[j] >> 16);
		g_blk->b[t_tid][2 * j] = (uint16_t)(b[j] & 0xffffu);
		g_blk->b[t_tid][2 * j + 1] = (uint16_t)(b[j] >> 16);
	}
	for (int e = 0; e < CE; ++e)
		g_blk->c[t_tid][e] = acc[e];
	__syncthreads();
	const int w0 = t_tid - t_tid % h->wave, lane = t_tid % h->wave;
	float out[CE];
	for (int m = 0; m < h->m; m++)
		for (int n = 0; n < h->n; n++) {
			int l, e;
			h->d_at(m, n, &l, &e);
			if (l != lane)
				continue;
			double sum = g_blk->c[w0 + l][e];
			for (int k = 0; k < h->k; k++) {
				double va = 0, vb = 0;
				for (int c = 0; c < h->copies; c++) {
					int la, ea, lb, eb;
					h->a_at(m, k, c, &la, &ea);
					h->b_at(k, n, c, &lb, &eb);
					const double xa = emu_to_f32(DT, g_blk->a[w0 + la][ea]);
					const double xb = emu_to_f32(DT, g_blk->b[w0 + lb][eb]);
					if (c == 0) {
						va = xa;
						vb = xb;
					} else {
						va = xa == va ? va : NAN;
						vb = xb == vb ? vb : NAN;
					}
				}
				sum += va * vb;
			}
			out[e] = (float)sum;
		}
	__syncthreads();
	for (int e = 0; e < CE; ++e)
		acc[e] = out[e];
}

#include "../../kernels/hip/flash_amd_mma.h"

/* ---- running a grid ---- */
struct emu_thread {
	int tid;
	void (*body)(void *ctx, int tid);
	void *ctx;
};

static void *emu_thread_main(void *arg)
{
	emu_thread *t = (emu_thread *)arg;
	t_tid = t->tid;
	t->body(t->ctx, t->tid);
	return NULL;
}

/* Runs body(ctx, tid) on nt threads as one block. */
static void emu_run_block(int nt, int wave, void (*body)(void *, int), void *ctx)
{
	static emu_block blk;
	blk.nt = nt;
	blk.wave = wave;
	pthread_barrier_init(&blk.bar, NULL, (unsigned)nt);
	g_blk = &blk;
	std::vector<pthread_t> th((size_t)nt);
	std::vector<emu_thread> ts((size_t)nt);
	for (int i = 0; i < nt; i++) {
		ts[(size_t)i] = emu_thread{i, body, ctx};
		if (pthread_create(&th[(size_t)i], NULL, emu_thread_main, &ts[(size_t)i]) != 0) {
			fprintf(stderr, "emu_flash_amd: cannot start thread %d\n", i);
			exit(2);
		}
	}
	for (int i = 0; i < nt; i++)
		pthread_join(th[(size_t)i], NULL);
	pthread_barrier_destroy(&blk.bar);
}

struct flash_ctx {
	const fa_mma::params *prm;
	int bx, by, bz;
};

template <class CFG, class T>
static void flash_body(void *c, int tid)
{
	const flash_ctx *f = (const flash_ctx *)c;
	fa_amd::flash_amd_cta<CFG, T>(*f->prm, tid, f->bx, f->by, f->bz);
}

struct combine_ctx {
	const fa_mma::params *prm;
	int64_t r;
};

template <int DV, class T>
static void combine_body(void *c, int tid)
{
	const combine_ctx *f = (const combine_ctx *)c;
	fa_mma::combine_row<DV, T>(*f->prm, f->r, tid);
}

/* The launcher's work (fa_amd::launch_typed) with the grid run here. */
template <class CFG, class T>
static int emu_launch(const struct fa_launch_args *a)
{
	fa_mma::params prm;
	unsigned grid[3];
	if (!fa_mma::make_params<CFG>(a, &prm, grid))
		return 0;
	if (prm.splits > 1 &&
	    (!a->workspace || a->workspace_bytes < fa_mma::workspace_bytes<CFG>(a->p, a->params)))
		return 1;
	for (unsigned z = 0; z < grid[2]; z++)
		for (unsigned y = 0; y < grid[1]; y++)
			for (unsigned x = 0; x < grid[0]; x++) {
				flash_ctx f = {&prm, (int)x, (int)y, (int)z};
				emu_run_block(CFG::NT, CFG::WAVE, flash_body<CFG, T>, &f);
			}
	if (prm.splits > 1)
		for (int64_t r = 0; r < prm.ws_rows; r++) {
			combine_ctx f = {&prm, r};
			emu_run_block(32, 32, combine_body<CFG::DV, T>, &f);
		}
	return 0;
}

template <int KIND, int D>
using cfg = fa_amd::config<KIND, D, D == 256 ? 2 : 4>;

template <int KIND, int D>
static int emu_launch_dt(const struct fa_launch_args *a)
{
	if (a->p->dtype == FA_DTYPE_BF16)
		return emu_launch<cfg<KIND, D>, fa_mma::bf16_t>(a);
	return emu_launch<cfg<KIND, D>, fa_mma::fp16_t>(a);
}

template <int KIND>
static size_t emu_workspace(const struct fa_problem *p, const int32_t *params, int d)
{
	switch (d) {
	case 64: return fa_mma::workspace_bytes<cfg<KIND, 64>>(p, params);
	case 80: return fa_mma::workspace_bytes<cfg<KIND, 80>>(p, params);
	case 96: return fa_mma::workspace_bytes<cfg<KIND, 96>>(p, params);
	case 128: return fa_mma::workspace_bytes<cfg<KIND, 128>>(p, params);
	default: return fa_mma::workspace_bytes<cfg<KIND, 256>>(p, params);
	}
}

template <int KIND>
static int emu_launch_kind(const struct fa_launch_args *a, int d)
{
	switch (d) {
	case 64: return emu_launch_dt<KIND, 64>(a);
	case 80: return emu_launch_dt<KIND, 80>(a);
	case 96: return emu_launch_dt<KIND, 96>(a);
	case 128: return emu_launch_dt<KIND, 128>(a);
	default: return emu_launch_dt<KIND, 256>(a);
	}
}

/* ---- one case: inputs, the kernel, a float64 reference ---- */
struct emu_case {
	int kind, head_dim, dtype, mask, heads, kv_heads, q_len, kv_len, batch, varlen, splits;
	float qamp; /* queries in [-qamp, qamp]: large scores move the running max */
};

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static float uniform(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (float)((double)(rng >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

static const char *kind_name(int kind)
{
	return kind == FA_FRAG_MFMA_16X16X16 ? "mfma16" : kind == FA_FRAG_WMMA_GFX11 ? "wmma-gfx11"
										    : "wmma-gfx12";
}

static const char *mask_name(int m)
{
	return m == FA_MASK_NONE ? "none" : m == FA_MASK_CAUSAL ? "causal"
				 : m == FA_MASK_PREFIX_LM ? "prefix_lm" : "sliding_window";
}

/* Returns the largest |O - reference|, or -1 when an output is not finite. */
static double run_case(const emu_case &c)
{
	struct fa_problem p;
	memset(&p, 0, sizeof p);
	const int d = c.head_dim, dc = d == 72 ? 80 : d;
	p.batch = c.batch;
	p.heads = c.heads;
	p.kv_heads = c.kv_heads;
	p.q_len = c.q_len;
	p.kv_len = c.kv_len;
	p.head_dim = p.head_dim_v = d;
	p.dtype = c.dtype;
	p.mask = c.mask;
	p.prefix_len = 5;
	p.window = 9;
	p.varlen = c.varlen;
	p.scale = (float)(1.0 / sqrt((double)d));
	std::vector<int32_t> cu_q((size_t)c.batch + 1), cu_k((size_t)c.batch + 1);
	for (int b = 0; b < c.batch; b++) { /* varlen: sequences shorter than the longest */
		const int lq = c.varlen ? c.q_len - 3 * b : c.q_len;
		const int lk = c.varlen ? c.kv_len - 5 * b : c.kv_len;
		cu_q[(size_t)b + 1] = cu_q[(size_t)b] + lq;
		cu_k[(size_t)b + 1] = cu_k[(size_t)b] + lk;
	}
	p.total_q = cu_q[(size_t)c.batch];
	p.total_k = cu_k[(size_t)c.batch];
	/* BSHD, or packed tokens (THD) for varlen */
	p.q_stride_h = d;
	p.q_stride_s = (int64_t)c.heads * d;
	p.q_stride_b = c.varlen ? 0 : (int64_t)c.q_len * p.q_stride_s;
	p.k_stride_h = p.v_stride_h = d;
	p.k_stride_s = p.v_stride_s = (int64_t)c.kv_heads * d;
	p.k_stride_b = p.v_stride_b = c.varlen ? 0 : (int64_t)c.kv_len * p.k_stride_s;
	p.o_stride_h = p.q_stride_h;
	p.o_stride_s = p.q_stride_s;
	p.o_stride_b = p.q_stride_b;
	const size_t nq = (size_t)p.total_q * c.heads * d, nk = (size_t)p.total_k * c.kv_heads * d;
	std::vector<uint16_t> q(nq), k(nk), v(nk), o(nq, 0xffff);
	auto to16 = [&](float x) {
		return c.dtype == FA_DTYPE_BF16 ? fa_f32_to_bf16(x) : fa_f32_to_f16(x);
	};
	for (auto &x : q) x = to16(c.qamp * uniform());
	for (auto &x : k) x = to16(2.f * uniform());
	for (auto &x : v) x = to16(uniform());

	int32_t params[2] = {c.splits, 1};
	const size_t ws_bytes = c.kind == FA_FRAG_MFMA_16X16X16
					? emu_workspace<FA_FRAG_MFMA_16X16X16>(&p, params, dc)
				: c.kind == FA_FRAG_WMMA_GFX11 ? emu_workspace<FA_FRAG_WMMA_GFX11>(&p, params, dc)
							       : emu_workspace<FA_FRAG_WMMA_GFX12>(&p, params, dc);
	std::vector<float> ws(ws_bytes / sizeof(float) + 1);
	struct fa_launch_args a;
	memset(&a, 0, sizeof a);
	a.p = &p;
	a.q = q.data();
	a.k = k.data();
	a.v = v.data();
	a.o = o.data();
	a.cu_seqlens_q = c.varlen ? cu_q.data() : NULL;
	a.cu_seqlens_k = c.varlen ? cu_k.data() : NULL;
	a.params = params;
	a.workspace = ws_bytes ? ws.data() : NULL;
	a.workspace_bytes = ws_bytes;
	a.struct_size = sizeof a;
	const int rc = c.kind == FA_FRAG_MFMA_16X16X16 ? emu_launch_kind<FA_FRAG_MFMA_16X16X16>(&a, dc)
		       : c.kind == FA_FRAG_WMMA_GFX11 ? emu_launch_kind<FA_FRAG_WMMA_GFX11>(&a, dc)
						      : emu_launch_kind<FA_FRAG_WMMA_GFX12>(&a, dc);
	if (rc != 0)
		return -1;

	double worst = 0;
	const int group = c.heads / c.kv_heads;
	std::vector<double> s((size_t)c.kv_len);
	for (int b = 0; b < c.batch; b++) {
		const int lq = fa_seq_q_len(&p, a.cu_seqlens_q, b), lk = fa_seq_kv_len(&p, a.cu_seqlens_k, b);
		const int pfx = fa_seq_prefix(&p, NULL, b);
		for (int h = 0; h < c.heads; h++)
			for (int i = 0; i < lq; i++) {
				const uint16_t *qr = q.data() + fa_q_offset(&p, a.cu_seqlens_q, b, i, h);
				double mx = -INFINITY;
				for (int j = 0; j < lk; j++) {
					s[(size_t)j] = -INFINITY;
					if (!fa_mask_allows(p.mask, i, j, lq, lk, pfx, p.window))
						continue;
					const uint16_t *kr = k.data() + fa_k_offset(&p, a.cu_seqlens_k, b, j, h / group);
					double dot = 0;
					for (int x = 0; x < d; x++)
						dot += (double)emu_to_f32(c.dtype, qr[x]) * emu_to_f32(c.dtype, kr[x]);
					s[(size_t)j] = dot * p.scale;
					mx = s[(size_t)j] > mx ? s[(size_t)j] : mx;
				}
				double l = 0;
				for (int j = 0; j < lk; j++)
					l += s[(size_t)j] == -INFINITY ? 0 : exp(s[(size_t)j] - mx);
				const uint16_t *orow = o.data() + fa_o_offset(&p, a.cu_seqlens_q, b, i, h);
				for (int x = 0; x < d; x++) {
					double ref = 0;
					for (int j = 0; j < lk; j++)
						if (s[(size_t)j] != -INFINITY)
							ref += exp(s[(size_t)j] - mx) / l *
							       emu_to_f32(c.dtype, v[(size_t)fa_v_offset(&p, a.cu_seqlens_k, b, j, h / group) + (size_t)x]);
					const double got = emu_to_f32(c.dtype, orow[x]);
					if (!isfinite(got))
						return -1;
					const double err = fabs(got - ref);
					worst = err > worst ? err : worst;
				}
			}
	}
	return worst;
}

int main(int argc, char **argv)
{
	const int mutant = argc == 2 && !strcmp(argv[1], "--mutant");
	if (argc > 1 && !mutant) {
		printf("usage: emu_flash_amd [--mutant]\n"
		       "Runs the AMD matrix-core flash kernel bodies (kernels/hip/flash_amd_mma.h) on\n"
		       "CPU threads for every layout and compares them with a float64 attention.\n"
		       "--mutant runs the gfx11 instances on the gfx12 instruction (seed 000) and\n"
		       "succeeds only when every case fails.\n");
		return argc == 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) ? 0 : 2;
	}
	const int kinds[] = {FA_FRAG_MFMA_16X16X16, FA_FRAG_WMMA_GFX11, FA_FRAG_WMMA_GFX12};
	std::vector<emu_case> cases;
	for (int kind : kinds) {
		if (mutant && kind != FA_FRAG_WMMA_GFX11)
			continue;
		/* kind, head_dim, dtype, mask, heads, kv_heads, q_len, kv_len, batch, varlen, splits, qamp */
		cases.push_back({kind, 64, FA_DTYPE_FP16, FA_MASK_NONE, 2, 2, 40, 45, 1, 0, 1, 2});
		cases.push_back({kind, 64, FA_DTYPE_BF16, FA_MASK_CAUSAL, 2, 1, 70, 70, 1, 0, 1, 2});
		cases.push_back({kind, 72, FA_DTYPE_BF16, FA_MASK_NONE, 1, 1, 20, 33, 2, 0, 1, 2});
		cases.push_back({kind, 64, FA_DTYPE_FP16, FA_MASK_PREFIX_LM, 1, 1, 37, 50, 1, 0, 1, 2});
		cases.push_back({kind, 64, FA_DTYPE_FP16, FA_MASK_SLIDING_WINDOW, 1, 1, 50, 50, 1, 0, 1, 2});
		cases.push_back({kind, 64, FA_DTYPE_BF16, FA_MASK_CAUSAL, 4, 1, 1, 70, 2, 0, 3, 2}); /* decode: packed GQA, split */
		cases.push_back({kind, 64, FA_DTYPE_FP16, FA_MASK_CAUSAL, 2, 2, 30, 40, 3, 1, 1, 2}); /* varlen */
		cases.push_back({kind, 256, FA_DTYPE_BF16, FA_MASK_CAUSAL, 1, 1, 24, 40, 1, 0, 2, 2});
		cases.push_back({kind, 64, FA_DTYPE_FP16, FA_MASK_CAUSAL, 1, 1, 30, 160, 1, 0, 1, 24}); /* rescaling */
		cases.push_back({kind, 80, FA_DTYPE_FP16, FA_MASK_CAUSAL, 2, 2, 33, 33, 1, 0, 1, 2});
		cases.push_back({kind, 96, FA_DTYPE_BF16, FA_MASK_PREFIX_LM, 3, 1, 20, 36, 1, 0, 1, 2});
		cases.push_back({kind, 128, FA_DTYPE_FP16, FA_MASK_SLIDING_WINDOW, 2, 1, 40, 64, 2, 0, 2, 2});
	}
	if (mutant)
		g_hw_override = FA_FRAG_WMMA_GFX12;
	int failed = 0;
	for (const emu_case &c : cases) {
		const double err = run_case(c);
		const double tol = c.dtype == FA_DTYPE_BF16 ? 1e-2 : 2e-3;
		const int ok = err >= 0 && err <= tol;
		printf("%s%s d%d %s %s heads %d/%d q %d kv %d batch %d%s splits %d: max |err| %.3g%s\n",
		       kind_name(c.kind), mutant ? " on gfx12" : "", c.head_dim,
		       c.dtype == FA_DTYPE_BF16 ? "bf16" : "fp16", mask_name(c.mask), c.heads,
		       c.kv_heads, c.q_len, c.kv_len, c.batch, c.varlen ? " varlen" : "", c.splits, err,
		       ok == !mutant ? "" : mutant ? "  <- PASSED (the mutant must fail)" : "  <- FAILED");
		fflush(stdout);
		failed += !ok;
	}
	if (mutant) {
		printf("mutant: %d of %zu cases failed, as they must\n", failed, cases.size());
		return failed == (int)cases.size() ? 0 : 1;
	}
	printf("%d of %zu cases failed\n", failed, cases.size());
	return failed ? 1 : 0;
}
