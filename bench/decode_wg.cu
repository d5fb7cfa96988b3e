/* decode_wg.cu - batch-1 decode at 8k and 16k keys (8 KV heads, 32 query
 * heads, head size 128, bf16, BSHD) as a Hopper kernel with no per-tile
 * softmax rescaling: is its math cheap enough to hide under the loads?
 *
 * One CTA per (key range r of R, KV head), R = 8 in clusters of 8, each a
 * producer warp and one consumer warpgroup:
 *  - the producer streams the range's K tiles, then its V tiles (64 keys x
 *    128 columns, 16 KB, two 64-column boxes of a 3-d tensor map with the
 *    128-byte swizzle) through a ring of ST stages by TMA;
 *  - pass 1: S^T = K Q^T by wgmma m64n8k16 (A = the K stage, B = the 4
 *    query rows of the head's group, padded to 8), kept in registers with
 *    each row's running maximum;
 *  - the 8 CTAs of a head swap their maxima (st.async into each peer's
 *    shared memory, counted on its barrier) while the V tiles land, so
 *    every CTA weighs its keys by the same maximum;
 *  - pass 2: P = exp2(S - m) to shared memory (bf16, K-major), then
 *    O^T += V^T P^T by wgmma m64n8k16 with A transposed (V's stage read
 *    MN-major); row sums in registers;
 *  - the merge: a plain sum, since no partial needs a weight: each CTA
 *    pushes its 16-column slices of O^T and its row sums into the owners'
 *    inboxes (st.async), and each owner sums 8 inboxes and writes 16
 *    columns of the 4 rows.
 *
 * Variants (the name, then the ring's stages):
 *   wg STn      the above, each tile's products waited for
 *   pipe STn    the same with one group of products in flight behind the
 *               next tile's
 *   wg2xW STn   dec_wg2: W consumer warpgroups taking alternate tiles and
 *               no exchange of maxima: each warpgroup is a partial with its
 *               own (m, l), weighed at the merge (W x 8 partials a head);
 *               wg2x2 is kernels/cuda/flash_decode_wg.cu's kernel
 *   loads STn   the same loads, waits and merge with no products (a floor
 *               for this shape of kernel)
 *   wg2x2 ST10 + one of
 *     pdl       launched with programmatic dependent launch, the next launch
 *               let in at this one's start (griddepcontrol)
 *     pdl2      the same, let in once the producer has issued every load
 *     pf        the tensor maps' descriptors prefetched at the start
 *     map4k     4-d tensor maps (columns, keys, heads, sequences), as the
 *               plugin's; map4h: (columns, heads, keys, sequences)
 *     early     the producer sets up its own barriers and issues its first
 *               loads at once, the consumers meeting it at a named barrier
 *               (no CTA-wide sync first)
 *     trace     not timed: a single launch and a graph of 32 traced (each
 *               CTA's start and end by %globaltimer, its events by clock64)
 *   plugin      with -DWITH_PLUGIN, linked to build/libfabench-cuda.so:
 *               kernels/cuda/flash_decode_wg.cu as the plugin launches it
 *               (fa_cuda_decode_wg_launch), on the same buffers
 *   plugin-src  the same source compiled into this program (a kernel and
 *               its flags, against the library's build)
 *   plugin-b, plugin-c
 *               with -DPLUGIN_B=FILE, -DPLUGIN_C=FILE (and -Ikernels/cuda):
 *               edited copies of that source, their names renamed
 *               (fa_decwg to fa_decwgb, fa_cuda_decode_wg_ to
 *               fa_cuda_decode_wgb_; c for C), timed in the same process
 *   each plugin variant + coldq: a Q a launch, as fabench's cold graphs
 *               have (the one Q of the others stays in L2); + coldqo: a Q
 *               and an O a launch; + rot6: 6 sets of Q, K, V and O, launch
 *               i taking set i % 6, as fabench's cold graph at 8k does
 *               (harness/run/runner.c, rot_sets)
 *   empty       an empty kernel in a graph of 32, by launch shape: what a
 *               launch costs
 * Every variant with products is checked against a double-precision
 * reference on the host (random K, V and Q) before it is timed.
 * docs/BENCHMARKS.md (2026-12-02 "(j)" and "(k)") has the H200's figures.
 *
 * A standalone program, not part of the build: on a CUDA machine
 *
 *   nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a \
 *        -o /tmp/decode_wg bench/decode_wg.cu -lcuda && /tmp/decode_wg [samples [NAMES]]
 *
 * NAMES ("wg2x2 ST10|empty", say) runs the variants whose names it contains
 * (a name inside another runs with it). With the plugin built:
 *
 *   nvcc ... -DWITH_PLUGIN -o /tmp/decode_wg bench/decode_wg.cu -Lbuild \
 *        -lfabench-cuda -Xlinker -rpath=$PWD/build -lcuda
 */
#include <cuda.h>
#include <cuda_bf16.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vector>

#include "decode_tiles.cuh"

#ifdef WITH_PLUGIN /* the plugin's kernel on the same buffers (see main) */
#include <dlfcn.h>

#include "../include/fabench/plugin.h"
/* and its source compiled here ("plugin-src"), in a namespace of its own:
 * its launcher's C name then stands for this copy, and dlsym finds the
 * plugin's own in the library */
namespace plugsrc {
#include "../kernels/cuda/flash_decode_wg.cu"
#ifdef PLUGIN_B /* edited copies, their names renamed (see "plugin-b") */
namespace bb {
#include PLUGIN_B
}
#endif
#ifdef PLUGIN_C
namespace cc {
#include PLUGIN_C
}
#endif
}
typedef int (*decwg_launch_fn)(const struct fa_launch_args *);
#endif

constexpr int QH = 32, G = QH / H; /* query heads, the group of a KV head */
constexpr int TILE = 16384;        /* 64 keys x 128 columns of bf16 */

__device__ __forceinline__ void mb_init(uint32_t b, uint32_t n)
{
	asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(b), "r"(n) : "memory");
}
__device__ __forceinline__ void mb_expect(uint32_t b, uint32_t bytes)
{
	asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(b), "r"(bytes)
		     : "memory");
}
__device__ __forceinline__ void mb_arrive(uint32_t b)
{
	asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(b) : "memory");
}
__device__ __forceinline__ void mb_wait(uint32_t b, uint32_t par)
{
	asm volatile("{\n\t.reg .pred p;\n\tWG_WAIT:\n\t"
		     "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n\t"
		     "@!p bra WG_WAIT;\n\t}" ::"r"(b),
		     "r"(par)
		     : "memory");
}
__device__ __forceinline__ void tma3(uint32_t dst, const CUtensorMap *m, uint32_t bar, int c0, int c1,
				     int c2)
{
	asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes"
		     " [%0], [%1, {%2, %3, %4}], [%5];" ::"r"(dst),
		     "l"((uint64_t)m), "r"(c0), "r"(c1), "r"(c2), "r"(bar)
		     : "memory");
}
__device__ __forceinline__ void tma4(uint32_t dst, const CUtensorMap *m, uint32_t bar, int c0, int c1,
				     int c2, int c3)
{
	asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes"
		     " [%0], [%1, {%2, %3, %4, %5}], [%6];" ::"r"(dst),
		     "l"((uint64_t)m), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(bar)
		     : "memory");
}
__device__ __forceinline__ uint64_t desc(uint32_t a, uint32_t lbo, uint32_t sbo)
{
	return (uint64_t)((a & 0x3FFFF) >> 4) | ((uint64_t)(lbo >> 4) << 16) |
	       ((uint64_t)(sbo >> 4) << 32) | (1ull << 62);
}
/* d (64 x 8) (+)= A (64 x 16) B (16 x 8); TA: A MN-major */
template <int TA>
__device__ __forceinline__ void mma8(float (&d)[4], uint64_t a, uint64_t b, int acc)
{
	asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %6, 0;\n\t"
		     "wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {%0, %1, %2, %3}, %4, %5, p,"
		     " 1, 1, %7, 0;\n\t}"
		     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
		     : "l"(a), "l"(b), "r"(acc), "n"(TA));
}
__device__ __forceinline__ void wg_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wg_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wg_wait0() { asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory"); }
__device__ __forceinline__ void fence4(float (&r)[4])
{
	for (int i = 0; i < 4; i++)
		asm volatile("" : "+f"(r[i])::"memory");
}
__device__ __forceinline__ void st_async4(uint32_t a, float x, float y, float z, float w, uint32_t bar)
{
	asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.b32"
		     " [%0], {%1, %2, %3, %4}, [%5];" ::"r"(a),
		     "r"(__float_as_uint(x)), "r"(__float_as_uint(y)), "r"(__float_as_uint(z)),
		     "r"(__float_as_uint(w)), "r"(bar)
		     : "memory");
}
__device__ __forceinline__ float ex2f(float x)
{
	float y;
	asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
	return y;
}

constexpr int R = 8;
/* shared memory after the ring: Q (2 KB), P (3 x 1 KB), then the small parts */
constexpr int OFF_Q = 0, OFF_P = 2048, OFF_MAXBOX = 5120, OFF_INBOX = OFF_MAXBOX + R * 16,
	      INBOX_BYTES = R * (16 * 16 + 16), OFF_RED = OFF_INBOX + INBOX_BYTES,
	      OFF_BAR = OFF_RED + 4 * 8 * 4 * 2, EXTRA = OFF_BAR + 8 * 40;

template <int ST, int TILES, bool MATH, bool PIPE = false>
__global__ void __launch_bounds__(160, 1)
    dec_wg(const __grid_constant__ CUtensorMap km, const __grid_constant__ CUtensorMap vm,
	   const __nv_bfloat16 *__restrict__ q, __nv_bfloat16 *__restrict__ out, float scale_log2)
{
	extern __shared__ __align__(1024) unsigned char smraw[];
	unsigned char *sm = smraw + ((1024 - ((unsigned)__cvta_generic_to_shared(smraw) & 1023)) & 1023); /* stays a shared pointer: LDS/STS */
	const uint32_t base = saddr(sm), xb = base + ST * TILE;
	const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, hd = blockIdx.y;
	uint32_t r;
	asm("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
	const uint32_t full = xb + OFF_BAR, empty = full + 8 * ST, maxbar = empty + 8 * ST,
		       inbar = maxbar + 8;
	float *maxbox = (float *)(sm + ST * TILE + OFF_MAXBOX);
	float *inbox = (float *)(sm + ST * TILE + OFF_INBOX);
	float *red = (float *)(sm + ST * TILE + OFF_RED);
	if (tid == 0) {
		for (int s = 0; s < ST; s++) {
			mb_init(full + 8 * s, 1);
			mb_init(empty + 8 * s, 4);
		}
		mb_init(maxbar, 1);
		mb_init(inbar, 1);
		mb_expect(maxbar, R * 16);
		mb_expect(inbar, INBOX_BYTES);
		asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
	}
	__syncthreads();
	asm volatile("barrier.cluster.arrive.relaxed;" ::: "memory");
	const int t0 = r * TILES;
	if (warp == 4) { /* the producer */
		if (lane == 0) {
			for (int i = 0; i < 2 * TILES; i++) {
				const int s = i % ST;
				if (i >= ST)
					mb_wait(empty + 8 * s, ((i / ST) - 1) & 1);
				mb_expect(full + 8 * s, TILE);
				const CUtensorMap *m = i < TILES ? &km : &vm;
				const int key = (t0 + i % TILES) * 64;
				tma3(base + s * TILE, m, full + 8 * s, 0, hd, key);
				tma3(base + s * TILE + 8192, m, full + 8 * s, 64, hd, key);
			}
		}
		asm volatile("barrier.cluster.wait;" ::: "memory");
		return;
	}
	/* the consumers: Q's 4 rows (and 4 of zeros) into the B layout */
	{
		const int slab = tid >> 6, row = (tid >> 3) & 7, ch = tid & 7;
		uint4 v = make_uint4(0, 0, 0, 0);
		if (row < G)
			v = *(const uint4 *)(q + (size_t)(hd * G + row) * D + slab * 64 + ch * 8);
		*(uint4 *)(sm + ST * TILE + OFF_Q + slab * 1024 + row * 128 + ((ch ^ row) << 4)) = v;
		for (int z = tid; z < 3 * 64; z += 128) /* P's rows 4-7 stay 0 */
			*(uint4 *)(sm + ST * TILE + OFF_P + z * 16) = make_uint4(0, 0, 0, 0);
		asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
		asm volatile("bar.sync 1, 128;" ::: "memory");
	}
	const int g = lane >> 2, t = lane & 3;
	const uint32_t qa = xb + OFF_Q, pa = xb + OFF_P;
	float s[TILES][4];
	float m0 = -INFINITY, m1 = -INFINITY;
	if constexpr (MATH && PIPE) {
		/* S^T of tile j into s[j] by the time tile j + 1 is issued; raw (scaled in pass 2) */
#pragma unroll
		for (int j = 0; j <= TILES; j++) {
			if (j < TILES) {
				const int st = j % ST;
				mb_wait(full + 8 * st, (j / ST) & 1);
				__syncwarp();
				fence4(s[j]);
				wg_fence();
#pragma unroll
				for (int kk = 0; kk < 8; kk++) {
					const uint32_t off = (kk >> 2) * 8192 + (kk & 3) * 32;
					const uint32_t qoff = (kk >> 2) * 1024 + (kk & 3) * 32;
					mma8<0>(s[j], desc(base + st * TILE + off, 16, 1024),
						desc(qa + qoff, 16, 1024), kk > 0);
				}
				wg_commit();
			}
			if (j > 0) {
				if (j < TILES)
					asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
				else
					wg_wait0();
				fence4(s[j - 1]);
				__syncwarp();
				if (lane == 0)
					mb_arrive(empty + 8 * ((j - 1) % ST));
				m0 = fmaxf(m0, fmaxf(s[j - 1][0], s[j - 1][2]));
				m1 = fmaxf(m1, fmaxf(s[j - 1][1], s[j - 1][3]));
			}
		}
	} else {
#pragma unroll
	for (int j = 0; j < TILES; j++) {
		const int st = j % ST;
		mb_wait(full + 8 * st, (j / ST) & 1);
		__syncwarp();
		if constexpr (MATH) {
			float d[4] = {0.f, 0.f, 0.f, 0.f};
			fence4(d);
			wg_fence();
#pragma unroll
			for (int kk = 0; kk < 8; kk++) {
				const uint32_t off = (kk >> 2) * 8192 + (kk & 3) * 32;
				const uint32_t qoff = (kk >> 2) * 1024 + (kk & 3) * 32;
				mma8<0>(d, desc(base + st * TILE + off, 16, 1024), desc(qa + qoff, 16, 1024),
					kk > 0);
			}
			wg_commit();
			wg_wait0();
			fence4(d);
#pragma unroll
			for (int u = 0; u < 4; u++)
				s[j][u] = d[u] * scale_log2;
			m0 = fmaxf(m0, fmaxf(s[j][0], s[j][2]));
			m1 = fmaxf(m1, fmaxf(s[j][1], s[j][3]));
		} else {
			for (int u = 0; u < 4; u++)
				s[j][u] = 0.f;
			m0 = m1 = 0.f;
		}
		__syncwarp();
		if (lane == 0)
			mb_arrive(empty + 8 * st);
	}
	}
	/* the row maxima: over the lanes of a column pair, the warps, the cluster */
	for (int x = 4; x < 32; x <<= 1) {
		m0 = fmaxf(m0, __shfl_xor_sync(0xffffffffu, m0, x));
		m1 = fmaxf(m1, __shfl_xor_sync(0xffffffffu, m1, x));
	}
	if (g == 0) {
		red[warp * 8 + 2 * t] = m0;
		red[warp * 8 + 2 * t + 1] = m1;
	}
	asm volatile("bar.sync 1, 128;" ::: "memory");
	asm volatile("barrier.cluster.wait;" ::: "memory"); /* the peers' barriers exist */
	if (tid < R) {
		float mx[4];
		for (int c = 0; c < 4; c++)
			mx[c] = fmaxf(fmaxf(red[c], red[8 + c]), fmaxf(red[16 + c], red[24 + c]));
		uint32_t a, b;
		asm volatile("mapa.shared::cluster.u32 %0, %1, %2;"
			     : "=r"(a)
			     : "r"(saddr(maxbox + r * 4)), "r"(tid));
		asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(b) : "r"(maxbar), "r"(tid));
		st_async4(a, mx[0], mx[1], mx[2], mx[3], b);
	}
	mb_wait(maxbar, 0);
	float mr0 = -INFINITY, mr1 = -INFINITY; /* this thread's columns 2t, 2t + 1 */
	if (t < 2)
		for (int p = 0; p < R; p++) {
			mr0 = fmaxf(mr0, maxbox[p * 4 + 2 * t]);
			mr1 = fmaxf(mr1, maxbox[p * 4 + 2 * t + 1]);
		}
	float o[2][4] = {{0.f, 0.f, 0.f, 0.f}, {0.f, 0.f, 0.f, 0.f}};
	float l0 = 0.f, l1 = 0.f;
	if constexpr (MATH && PIPE) {
		const float n0 = -mr0 * scale_log2, n1 = -mr1 * scale_log2;
#pragma unroll
		for (int j = 0; j <= TILES; j++) {
			if (j < TILES) {
				const int i = TILES + j, st = i % ST;
				unsigned char *pb = sm + ST * TILE + OFF_P + (j % 3) * 1024;
				if (t < 2) {
					float p[4];
					p[0] = ex2f(fmaf(s[j][0], scale_log2, n0));
					p[1] = ex2f(fmaf(s[j][1], scale_log2, n1));
					p[2] = ex2f(fmaf(s[j][2], scale_log2, n0));
					p[3] = ex2f(fmaf(s[j][3], scale_log2, n1));
					l0 += p[0] + p[2];
					l1 += p[1] + p[3];
#pragma unroll
					for (int u = 0; u < 4; u++) {
						const int col = 2 * t + (u & 1), key = 16 * warp + g + 8 * (u >> 1);
						*(__nv_bfloat16 *)(pb + col * 128 + (((key >> 3) ^ col) << 4) +
								   (key & 7) * 2) = __float2bfloat16_rn(p[u]);
					}
				}
				asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
				asm volatile("bar.sync 1, 128;" ::: "memory");
				mb_wait(full + 8 * st, (i / ST) & 1);
				__syncwarp();
				wg_fence();
				const uint32_t pj = pa + (j % 3) * 1024;
#pragma unroll
				for (int b = 0; b < 2; b++)
#pragma unroll
					for (int kk = 0; kk < 4; kk++)
						mma8<1>(o[b],
							desc(base + st * TILE + b * 8192 + kk * 2048, 8192, 1024),
							desc(pj + kk * 32, 16, 1024), 1);
				wg_commit();
			}
			if (j > 0) {
				if (j < TILES)
					asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
				else
					wg_wait0();
				__syncwarp();
				if (lane == 0)
					mb_arrive(empty + 8 * ((TILES + j - 1) % ST));
			}
		}
		fence4(o[0]);
		fence4(o[1]);
	} else {
#pragma unroll
	for (int j = 0; j < TILES; j++) {
		const int i = TILES + j, st = i % ST;
		if constexpr (MATH) {
			/* P^T of this thread's keys 16 w + g (+ 8), columns 2t, 2t + 1 */
			float p[4] = {0.f, 0.f, 0.f, 0.f};
			if (t < 2) {
				p[0] = ex2f(s[j][0] - mr0);
				p[1] = ex2f(s[j][1] - mr1);
				p[2] = ex2f(s[j][2] - mr0);
				p[3] = ex2f(s[j][3] - mr1);
				l0 += p[0] + p[2];
				l1 += p[1] + p[3];
			}
			unsigned char *pb = sm + ST * TILE + OFF_P + (j & 1) * 1024;
			for (int u = 0; u < 4; u++) {
				const int col = 2 * t + (u & 1), key = 16 * warp + g + 8 * (u >> 1);
				*(__nv_bfloat16 *)(pb + col * 128 + (((key >> 3) ^ col) << 4) + (key & 7) * 2) =
				    __float2bfloat16_rn(p[u]);
			}
			asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
			asm volatile("bar.sync 1, 128;" ::: "memory");
			mb_wait(full + 8 * st, (i / ST) & 1);
			__syncwarp();
			fence4(o[0]);
			fence4(o[1]);
			wg_fence();
			const uint32_t pj = pa + (j & 1) * 1024;
#pragma unroll
			for (int b = 0; b < 2; b++)
#pragma unroll
				for (int kk = 0; kk < 4; kk++)
					mma8<1>(o[b], desc(base + st * TILE + b * 8192 + kk * 2048, 8192, 1024),
						desc(pj + kk * 32, 16, 1024), 1);
			wg_commit();
			wg_wait0();
			fence4(o[0]);
			fence4(o[1]);
		} else {
			mb_wait(full + 8 * st, (i / ST) & 1);
		}
		__syncwarp();
		if (lane == 0)
			mb_arrive(empty + 8 * st);
	}
	}
	/* the row sums over the lanes of a column pair and the warps */
	for (int x = 4; x < 32; x <<= 1) {
		l0 += __shfl_xor_sync(0xffffffffu, l0, x);
		l1 += __shfl_xor_sync(0xffffffffu, l1, x);
	}
	if (g == 0) {
		red[32 + warp * 8 + 2 * t] = l0;
		red[32 + warp * 8 + 2 * t + 1] = l1;
	}
	asm volatile("bar.sync 1, 128;" ::: "memory");
	/* push: warp w's rows of M-block b are columns 16 (4 b + w) .. + 15 of O */
	for (int b = 0; b < 2; b++) {
		const uint32_t owner = 4 * b + warp;
		uint32_t a, bb;
		if (t < 2) {
			const uint32_t la = saddr(inbox + r * 68 + (g * 2 + t) * 4);
			asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(a) : "r"(la), "r"(owner));
			asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(bb) : "r"(inbar), "r"(owner));
			st_async4(a, o[b][0], o[b][1], o[b][2], o[b][3], bb);
		}
	}
	if (tid < R) {
		float l[4];
		for (int c = 0; c < 4; c++)
			l[c] = red[32 + c] + red[40 + c] + red[48 + c] + red[56 + c];
		uint32_t a, bb;
		asm volatile("mapa.shared::cluster.u32 %0, %1, %2;"
			     : "=r"(a)
			     : "r"(saddr(inbox + r * 68 + 64)), "r"(tid));
		asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(bb) : "r"(inbar), "r"(tid));
		st_async4(a, l[0], l[1], l[2], l[3], bb);
	}
	if (tid < 64) {
		mb_wait(inbar, 0);
		/* column d of this CTA's 16, row c: lane g = d % 8, t = c / 2 of the pushing warp */
		const int c = tid >> 4, d = tid & 15;
		const int e = ((d & 7) * 2 + (c >> 1)) * 4 + (d >> 3) * 2 + (c & 1);
		float sum = 0.f, L = 0.f;
		for (int p = 0; p < R; p++) {
			sum += inbox[p * 68 + e];
			L += inbox[p * 68 + 64 + c];
		}
		out[(size_t)(hd * G + c) * D + 16 * r + d] = __float2bfloat16_rn(MATH ? sum / L : sum);
	}
}

/* Tracing (variant "trace"): each CTA of a TR launch writes one record of
 * TRN u64: its block, %globaltimer at its start and end, then clock64()
 * offsets from its start at the events TE_*; g_trn counts the records. */
constexpr int TRN = 24;
enum { TE_INIT = 3, TE_P1, TE_PFULL, TE_PLAST, TE_C0 = 7, TE_END = 23 };
enum { TC_K0, TC_P1DONE, TC_MAX, TC_V0, TC_VLAST, TC_PRODDONE, TC_PUSH, TC_MERGE };
__device__ unsigned long long *g_tr;
__device__ unsigned g_trn;
__device__ __forceinline__ unsigned long long gtimer()
{
	unsigned long long t;
	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	return t;
}
#define TRX(e) \
	do { \
		if (TR) \
			trec[(e)] = clock64() - c0; \
	} while (0)

/* The same with NWG consumer warpgroups (tile j of the range to warpgroup
 * j % NWG) and no exchange of maxima: each warpgroup is a partial with its
 * own (m, l), weighed at the merge (2R partials a head with NWG = 2). */
constexpr int E2 = 72; /* floats an inbox entry: 16 lanes x 4, m[4], l[4] */
template <int NWG> struct lay2 {
	static constexpr int Q = 0, P = 2048, INBOX = P + NWG * 3072, INBOX_BYTES = NWG * R * E2 * 4,
			     RED = INBOX + INBOX_BYTES, BAR = RED + NWG * 2 * 32 * 4, BYTES = BAR + 8 * 40;
};

/* dec_wg2's consumer warpgroup C (a template parameter: wgmma in code that
 * depends on a run-time warpgroup index is serialized by ptxas). */
template <int ST, int TILES, int NWG, int C, bool TR>
__device__ __forceinline__ void consume2(unsigned char *xs, uint32_t base, uint32_t xb,
					 uint32_t full, uint32_t empty, uint32_t inbar, float *inbox,
					 uint32_t r, int hd, int tid, int lane,
					 __nv_bfloat16 *__restrict__ out, float scale_log2,
					 unsigned long long *trw, long long c0)
{
	/* this warpgroup's events: its first thread records them */
	unsigned long long *const trec = TR ? trw + TE_C0 + 8 * C : nullptr;
	const bool trme = TR && (tid & 127) == 0;
#define TRC(e) \
	do { \
		if (TR && trme) \
			trec[(e)] = clock64() - c0; \
	} while (0)
	using L = lay2<NWG>;
	constexpr int NT = TILES / NWG, c = C;
	const int warp = tid >> 5, wl = warp & 3, g = lane >> 2, t = lane & 3;
	float *red = (float *)(xs + L::RED) + c * 64;
	const uint32_t qa = xb + L::Q, pa = xb + L::P + c * 3072;
	float s[NT][4];
	float m0 = -INFINITY, m1 = -INFINITY;
#pragma unroll
	for (int j = 0; j <= NT; j++) {
		if (j < NT) {
			const int i = j * NWG + c, st = i % ST;
			mb_wait(full + 8 * st, (i / ST) & 1);
			if (j == 0)
				TRC(TC_K0);
			__syncwarp();
			fence4(s[j]);
			wg_fence();
#pragma unroll
			for (int kk = 0; kk < 8; kk++) {
				const uint32_t off = (kk >> 2) * 8192 + (kk & 3) * 32;
				const uint32_t qoff = (kk >> 2) * 1024 + (kk & 3) * 32;
				mma8<0>(s[j], desc(base + st * TILE + off, 16, 1024), desc(qa + qoff, 16, 1024),
					kk > 0);
			}
			wg_commit();
		}
		if (j > 0) {
			if (j < NT)
				asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
			else
				wg_wait0();
			fence4(s[j - 1]);
			__syncwarp();
			if (lane == 0)
				mb_arrive(empty + 8 * (((j - 1) * NWG + c) % ST));
			m0 = fmaxf(m0, fmaxf(s[j - 1][0], s[j - 1][2]));
			m1 = fmaxf(m1, fmaxf(s[j - 1][1], s[j - 1][3]));
		}
	}
	TRC(TC_P1DONE);
	/* this warpgroup's row maxima */
	for (int x = 4; x < 32; x <<= 1) {
		m0 = fmaxf(m0, __shfl_xor_sync(0xffffffffu, m0, x));
		m1 = fmaxf(m1, __shfl_xor_sync(0xffffffffu, m1, x));
	}
	if (g == 0) {
		red[wl * 8 + 2 * t] = m0;
		red[wl * 8 + 2 * t + 1] = m1;
	}
	asm volatile("bar.sync %0, 128;" ::"n"(1 + C) : "memory");
	TRC(TC_MAX);
	float mr[4];
	for (int k = 0; k < 4; k++)
		mr[k] = fmaxf(fmaxf(red[k], red[8 + k]), fmaxf(red[16 + k], red[24 + k]));
	const float n0 = -(t == 0 ? mr[0] : mr[2]) * scale_log2, n1 = -(t == 0 ? mr[1] : mr[3]) * scale_log2;
	float o[2][4] = {{0.f, 0.f, 0.f, 0.f}, {0.f, 0.f, 0.f, 0.f}};
	float l0 = 0.f, l1 = 0.f;
#pragma unroll
	for (int j = 0; j <= NT; j++) {
		if (j < NT) {
			const int i = TILES + j * NWG + c, st = i % ST;
			unsigned char *pb = xs + L::P + c * 3072 + (j % 3) * 1024;
			if (t < 2) {
				float p[4];
				p[0] = ex2f(fmaf(s[j][0], scale_log2, n0));
				p[1] = ex2f(fmaf(s[j][1], scale_log2, n1));
				p[2] = ex2f(fmaf(s[j][2], scale_log2, n0));
				p[3] = ex2f(fmaf(s[j][3], scale_log2, n1));
				l0 += p[0] + p[2];
				l1 += p[1] + p[3];
#pragma unroll
				for (int u = 0; u < 4; u++) {
					const int col = 2 * t + (u & 1), key = 16 * wl + g + 8 * (u >> 1);
					*(__nv_bfloat16 *)(pb + col * 128 + (((key >> 3) ^ col) << 4) + (key & 7) * 2) =
					    __float2bfloat16_rn(p[u]);
				}
			}
			asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
			asm volatile("bar.sync %0, 128;" ::"n"(1 + C) : "memory");
			mb_wait(full + 8 * st, (i / ST) & 1);
			if (j == 0)
				TRC(TC_V0);
			if (j == NT - 1)
				TRC(TC_VLAST);
			__syncwarp();
			wg_fence();
			const uint32_t pj = pa + (j % 3) * 1024;
#pragma unroll
			for (int b = 0; b < 2; b++)
#pragma unroll
				for (int kk = 0; kk < 4; kk++)
					mma8<1>(o[b], desc(base + st * TILE + b * 8192 + kk * 2048, 8192, 1024),
						desc(pj + kk * 32, 16, 1024), 1);
			wg_commit();
		}
		if (j > 0) {
			if (j < NT)
				asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
			else
				wg_wait0();
			__syncwarp();
			if (lane == 0)
				mb_arrive(empty + 8 * ((TILES + (j - 1) * NWG + c) % ST));
		}
	}
	fence4(o[0]);
	fence4(o[1]);
	TRC(TC_PRODDONE);
	for (int x = 4; x < 32; x <<= 1) {
		l0 += __shfl_xor_sync(0xffffffffu, l0, x);
		l1 += __shfl_xor_sync(0xffffffffu, l1, x);
	}
	if (g == 0) {
		red[32 + wl * 8 + 2 * t] = l0;
		red[32 + wl * 8 + 2 * t + 1] = l1;
	}
	asm volatile("bar.sync %0, 128;" ::"n"(1 + C) : "memory");
	asm volatile("barrier.cluster.wait;" ::: "memory"); /* the peers' barriers exist */
	const int e = (int)r * NWG + c; /* this partial's inbox entry */
	for (int b = 0; b < 2; b++) {
		const uint32_t owner = 4 * b + wl;
		if (t < 2) {
			uint32_t a, bb;
			const uint32_t la = saddr(inbox + e * E2 + (g * 2 + t) * 4);
			asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(a) : "r"(la), "r"(owner));
			asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(bb) : "r"(inbar), "r"(owner));
			st_async4(a, o[b][0], o[b][1], o[b][2], o[b][3], bb);
		}
	}
	const int ct = tid & 127;
	if (ct < 2 * R) {
		const int peer = ct >> 1, half = ct & 1;
		float v[4];
		for (int k = 0; k < 4; k++)
			v[k] = half ? red[32 + k] + red[40 + k] + red[48 + k] + red[56 + k] : mr[k];
		uint32_t a, bb;
		asm volatile("mapa.shared::cluster.u32 %0, %1, %2;"
			     : "=r"(a)
			     : "r"(saddr(inbox + e * E2 + 64 + 4 * half)), "r"(peer));
		asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(bb) : "r"(inbar), "r"(peer));
		st_async4(a, v[0], v[1], v[2], v[3], bb);
	}
	TRC(TC_PUSH);
	if (tid < 64) {
		mb_wait(inbar, 0);
		TRC(TC_MERGE);
		const int cc = tid >> 4, d = tid & 15;
		const int ix = ((d & 7) * 2 + (cc >> 1)) * 4 + (d >> 3) * 2 + (cc & 1);
		float M = -INFINITY;
		for (int p = 0; p < NWG * R; p++)
			M = fmaxf(M, inbox[p * E2 + 64 + cc]);
		float sum = 0.f, Lw = 0.f;
		for (int p = 0; p < NWG * R; p++) {
			const float w = ex2f((inbox[p * E2 + 64 + cc] - M) * scale_log2);
			sum += w * inbox[p * E2 + ix];
			Lw += w * inbox[p * E2 + 68 + cc];
		}
		out[(size_t)(hd * G + cc) * D + 16 * r + d] = __float2bfloat16_rn(sum / Lw);
		if (TR && tid == 0) {
			trw[TE_END] = clock64() - c0;
			trw[2] = gtimer();
		}
	}
#undef TRC
}

template <int ST, int TILES, int NWG, int PDL = 0, bool TR = false, bool PF = false, int MAP = 0,
	  bool EARLY = false>
__global__ void __launch_bounds__(NWG * 128 + 32, 1)
    dec_wg2(const __grid_constant__ CUtensorMap km, const __grid_constant__ CUtensorMap vm,
	    const __nv_bfloat16 *__restrict__ q, __nv_bfloat16 *__restrict__ out, float scale_log2)
{
	using L = lay2<NWG>;
	extern __shared__ __align__(1024) unsigned char smraw[];
	unsigned char *sm = smraw + ((1024 - ((unsigned)__cvta_generic_to_shared(smraw) & 1023)) & 1023); /* stays a shared pointer: LDS/STS */
	unsigned char *xs = sm + ST * TILE;
	const uint32_t base = saddr(sm), xb = base + ST * TILE;
	const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, hd = blockIdx.y;
	uint32_t r;
	asm("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
	const uint32_t full = xb + L::BAR, empty = full + 8 * ST, inbar = empty + 8 * ST;
	float *inbox = (float *)(xs + L::INBOX);
	__shared__ long long c0s;
	__shared__ unsigned slots;
	if (TR && tid == 0) {
		c0s = clock64();
		const unsigned long long g0 = gtimer();
		slots = atomicAdd(&g_trn, 1u);
		g_tr[(size_t)slots * TRN] = blockIdx.x | blockIdx.y << 8 | (unsigned long long)slots << 16;
		g_tr[(size_t)slots * TRN + 1] = g0;
	}
	if (PF && tid == NWG * 128) { /* the tensor maps' descriptors, while the barriers start */
		asm volatile("prefetch.tensormap [%0];" ::"l"(&km) : "memory");
		asm volatile("prefetch.tensormap [%0];" ::"l"(&vm) : "memory");
	}
	if (PDL == 1) /* the next launch may start its prologue on the idle SMs */
		asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
	static_assert(!(EARLY && TR), "the trace's start needs the CTA-wide sync");
	static_assert(!(EARLY && PDL), "early loads would not wait for the launch before");
	if (EARLY) {
		/* the producer starts its own barriers and its loads at once; the
		 * consumers meet it at named barrier 14 before they wait on them */
		if (warp == NWG * 4) {
			if (lane == 0) {
				for (int s = 0; s < ST; s++) {
					mb_init(full + 8 * s, 1);
					mb_init(empty + 8 * s, 4);
				}
				asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
			}
			__syncwarp();
			asm volatile("bar.arrive 14, %0;" ::"n"(NWG * 128 + 32) : "memory");
		} else if (tid == 0) {
			mb_init(inbar, 1);
			mb_expect(inbar, L::INBOX_BYTES);
			asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
		}
	} else {
		if (tid == 0) {
			for (int s = 0; s < ST; s++) {
				mb_init(full + 8 * s, 1);
				mb_init(empty + 8 * s, 4);
			}
			mb_init(inbar, 1);
			mb_expect(inbar, L::INBOX_BYTES);
			asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
		}
		__syncthreads();
	}
	asm volatile("barrier.cluster.arrive.relaxed;" ::: "memory");
	if (PDL) /* the launch before has finished and its writes are seen */
		asm volatile("griddepcontrol.wait;" ::: "memory");
	const long long c0 = TR ? c0s : 0;
	unsigned long long *const trw = TR ? g_tr + (size_t)slots * TRN : nullptr;
	unsigned long long *const trec = trw;
	if (tid == 0)
		TRX(TE_INIT);
	const int t0 = r * TILES;
	if (warp == NWG * 4) { /* the producer */
		if (lane == 0) {
			for (int i = 0; i < 2 * TILES; i++) {
				const int s = i % ST;
				if (i >= ST)
					mb_wait(empty + 8 * s, ((i / ST) - 1) & 1);
				mb_expect(full + 8 * s, TILE);
				const CUtensorMap *m = i < TILES ? &km : &vm;
				const int key = (t0 + i % TILES) * 64;
				if (MAP == 0) {
					tma3(base + s * TILE, m, full + 8 * s, 0, hd, key);
					tma3(base + s * TILE + 8192, m, full + 8 * s, 64, hd, key);
				} else if (MAP == 1) { /* the plugin's: (columns, keys, heads, sequences) */
					tma4(base + s * TILE, m, full + 8 * s, 0, key, hd, 0);
					tma4(base + s * TILE + 8192, m, full + 8 * s, 64, key, hd, 0);
				} else { /* (columns, heads, keys, sequences) */
					tma4(base + s * TILE, m, full + 8 * s, 0, hd, key, 0);
					tma4(base + s * TILE + 8192, m, full + 8 * s, 64, hd, key, 0);
				}
				if (i == 0)
					TRX(TE_P1);
				if (i == ST)
					TRX(TE_PFULL);
				if (i == 2 * TILES - 1)
					TRX(TE_PLAST);
			}
			/* every load issued: the next launch may start its prologue */
			if (PDL == 2)
				asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
		}
		asm volatile("barrier.cluster.wait;" ::: "memory");
		return;
	}
	const int c = warp >> 2;
	{
		{ /* both warpgroups write the same Q */
			const int slab = (tid >> 6) & 1, row = (tid >> 3) & 7, ch = tid & 7;
			uint4 v = make_uint4(0, 0, 0, 0);
			if (row < G)
				v = *(const uint4 *)(q + (size_t)(hd * G + row) * D + slab * 64 + ch * 8);
			*(uint4 *)(xs + L::Q + slab * 1024 + row * 128 + ((ch ^ row) << 4)) = v;
		}
		for (int z = tid; z < NWG * 3 * 64; z += NWG * 128) /* P's rows 4-7 stay 0 */
			*(uint4 *)(xs + L::P + z * 16) = make_uint4(0, 0, 0, 0);
		asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
		if (EARLY) /* with the producer: its barriers are set up */
			asm volatile("bar.sync 14, %0;" ::"n"(NWG * 128 + 32) : "memory");
		else
			asm volatile("bar.sync 15, %0;" ::"n"(NWG * 128) : "memory");
	}
	if (c == 0)
		consume2<ST, TILES, NWG, 0, TR>(xs, base, xb, full, empty, inbar, inbox, r, hd, tid, lane, out,
					    scale_log2, trw, c0);
	else if (c == 1) {
		if constexpr (NWG > 1)
			consume2<ST, TILES, NWG, 1, TR>(xs, base, xb, full, empty, inbar, inbox, r, hd, tid, lane,
						    out, scale_log2, trw, c0);
	} else if (c == 2) {
		if constexpr (NWG > 2)
			consume2<ST, TILES, NWG, 2, TR>(xs, base, xb, full, empty, inbar, inbox, r, hd, tid, lane,
						    out, scale_log2, trw, c0);
	} else {
		if constexpr (NWG > 3)
			consume2<ST, TILES, NWG, 3, TR>(xs, base, xb, full, empty, inbar, inbox, r, hd, tid, lane,
						    out, scale_log2, trw, c0);
	}
}

typedef CUresult (*encode_fn)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *,
			      const cuuint64_t *, const cuuint64_t *, const cuuint32_t *,
			      const cuuint32_t *, CUtensorMapInterleave, CUtensorMapSwizzle,
			      CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

static encode_fn g_encode;

static CUtensorMap kv_map(const void *p, int keys, CUtensorMapL2promotion promo, int map = 0)
{
	CUtensorMap m;
	cuuint64_t dims[4] = {(cuuint64_t)D, (cuuint64_t)H, (cuuint64_t)keys, 1};
	cuuint64_t strides[3] = {(cuuint64_t)D * 2, (cuuint64_t)HSTR * 2, (cuuint64_t)keys * HSTR * 2};
	cuuint32_t box[4] = {64, 1, 64, 1};
	const cuuint32_t es[4] = {1, 1, 1, 1};
	if (map == 1) { /* keys before heads */
		dims[1] = keys, dims[2] = H;
		strides[0] = HSTR * 2, strides[1] = D * 2;
		box[1] = 64, box[2] = 1;
	}
	if (g_encode(&m, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, map ? 4 : 3, (void *)p, dims, strides, box, es,
		     CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, promo,
		     CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) != CUDA_SUCCESS) {
		fprintf(stderr, "cuTensorMapEncodeTiled failed\n");
		exit(1);
	}
	return m;
}

__global__ void fill_random(uint16_t *p, size_t n, uint32_t seed)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x) {
		uint32_t x = (uint32_t)i * 2654435761u ^ seed;
		x ^= x >> 15;
		x *= 0x2c1b3c6du;
		x ^= x >> 12;
		const float f = ((x & 0xffff) / 65535.f) * 2.f - 1.f;
		const __nv_bfloat16 b = __float2bfloat16_rn(f);
		p[i] = *(const uint16_t *)&b;
	}
}

static float bf2f(uint16_t b)
{
	const uint32_t u = (uint32_t)b << 16;
	float f;
	memcpy(&f, &u, 4);
	return f;
}

/* A traced single launch and a traced graph of 32 (each after the clean
 * flush): per launch its length and the gap to the next, and the first,
 * median and last CTA at each event, in ns from the launch's first CTA
 * start (the graph: launches 8-23). */
template <class L> static void trace(cudaStream_t st, L go, int keys)
{
	const int cap = 32 * 64;
	unsigned long long *buf;
	CK(cudaMalloc(&buf, (size_t)cap * TRN * 8));
	CK(cudaMemcpyToSymbol(g_tr, &buf, sizeof buf));
	int khz = 0;
	CK(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0));
	const double ns_per_cycle = 1e6 / khz;
	static const char *const names[TRN] = {
	    "", "", "", "init", "prod: 1st TMA", "prod: ring full", "prod: last TMA",
	    "wg0 K0 landed", "wg0 pass1 done", "wg0 max", "wg0 V0 landed", "wg0 Vlast landed",
	    "wg0 products done", "wg0 pushed", "wg0 merge inbox full", "wg1 K0 landed",
	    "wg1 pass1 done", "wg1 max", "wg1 V0 landed", "wg1 Vlast landed", "wg1 products done",
	    "wg1 pushed", "", "end"};
	for (int n : {1, 32}) {
		const cudaGraphExec_t ge = capture_graph(st, go, n);
		std::vector<unsigned long long> h((size_t)cap * TRN);
		for (int rep = 0; rep < 3; rep++) { /* the last of 3 replays */
			const unsigned z = 0;
			CK(cudaMemcpyToSymbol(g_trn, &z, 4));
			CK(cudaMemset(buf, 0, (size_t)cap * TRN * 8));
			flush(F_CLEAN, st);
			CK(cudaGraphLaunch(ge, st));
			CK(cudaStreamSynchronize(st));
		}
		CK(cudaMemcpy(h.data(), buf, h.size() * 8, cudaMemcpyDeviceToHost));
		printf("# trace, keys %d, %d launch%s\n", keys, n, n > 1 ? "es" : "");
		std::vector<double> durs, gaps;
		std::vector<std::vector<double>> ev(TRN);
		for (int l = 0; l < n; l++) {
			unsigned long long s0 = ~0ull, e1 = 0;
			for (int c = 0; c < 64; c++) {
				const unsigned long long *rc = &h[(size_t)(l * 64 + c) * TRN];
				s0 = std::min(s0, rc[1]);
				e1 = std::max(e1, rc[2]);
			}
			durs.push_back((double)(e1 - s0));
			if (l + 1 < n) {
				unsigned long long ns0 = ~0ull;
				for (int c = 0; c < 64; c++)
					ns0 = std::min(ns0, h[(size_t)((l + 1) * 64 + c) * TRN + 1]);
				gaps.push_back((double)ns0 - (double)e1);
			}
			if (n > 1 && (l < 8 || l >= 24))
				continue;
			for (int c = 0; c < 64; c++) {
				const unsigned long long *rc = &h[(size_t)(l * 64 + c) * TRN];
				ev[1].push_back((double)(rc[1] - s0));
				if (rc[2])
					ev[2].push_back((double)(rc[2] - s0));
				for (int e = 3; e < TRN; e++)
					if (rc[e])
						ev[e].push_back((double)(rc[1] - s0) + rc[e] * ns_per_cycle);
			}
		}
		auto med = [](std::vector<double> v) {
			std::sort(v.begin(), v.end());
			return v.empty() ? 0.0 : v[v.size() / 2];
		};
		auto mx = [](const std::vector<double> &v) {
			return v.empty() ? 0.0 : *std::max_element(v.begin(), v.end());
		};
		auto mn = [](const std::vector<double> &v) {
			return v.empty() ? 0.0 : *std::min_element(v.begin(), v.end());
		};
		printf("  launch length (first CTA start to last CTA end): median %.0f ns, min %.0f, max %.0f\n",
		       med(durs), mn(durs), mx(durs));
		if (!gaps.empty())
			printf("  gap to the next launch's first CTA: median %.0f ns, min %.0f, max %.0f\n",
			       med(gaps), mn(gaps), mx(gaps));
		printf("  %-22s %8s %8s %8s\n", "event (ns from start)", "first", "median", "last");
		printf("  %-22s %8.0f %8.0f %8.0f\n", "CTA start", mn(ev[1]), med(ev[1]), mx(ev[1]));
		for (int e = 3; e < TRN; e++)
			if (!ev[e].empty())
				printf("  %-22s %8.0f %8.0f %8.0f\n", names[e], mn(ev[e]), med(ev[e]), mx(ev[e]));
		printf("  %-22s %8.0f %8.0f %8.0f\n", "CTA end (globaltimer)", mn(ev[2]), med(ev[2]), mx(ev[2]));
		CK(cudaGraphExecDestroy(ge));
	}
	CK(cudaFree(buf));
}

/* An empty kernel: what a launch costs in a graph, by launch shape */
__global__ void empty_k(int *p)
{
	if (p && threadIdx.x == 0 && blockIdx.x == 1000000)
		*p = 1;
}

typedef void (*wg_fn)(CUtensorMap, CUtensorMap, const __nv_bfloat16 *, __nv_bfloat16 *, float);

int main(int argc, char **argv)
{
	const int samples = argc > 1 ? atoi(argv[1]) : 30;
	kv_bench kb(samples);
	{
		void *p = nullptr;
		cudaDriverEntryPointQueryResult qr;
		CK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault,
						    &qr));
		g_encode = (encode_fn)p;
	}
	fill_random<<<1024, 256>>>((uint16_t *)kb.buf, kv_bench::MAXB / 2, 12345u);
	__nv_bfloat16 *q, *out;
	CK(cudaMalloc(&q, QH * D * 2));
	CK(cudaMalloc(&out, QH * D * 2));
	fill_random<<<16, 256>>>((uint16_t *)q, QH * D, 777u);
	/* copies of Q and O a launch, as fabench's cold graphs cycle over whole
	 * sets of buffers ("coldq", "coldqo" below); copy 0 is q and out */
	std::vector<__nv_bfloat16 *> qs(32, q), outs(32, out);
	for (int i = 1; i < 32; i++) {
		CK(cudaMalloc(&qs[i], QH * D * 2));
		CK(cudaMalloc(&outs[i], QH * D * 2));
		CK(cudaMemcpy(qs[i], q, QH * D * 2, cudaMemcpyDeviceToDevice));
	}
	CK(cudaDeviceSynchronize());
	const float scale_log2 = (float)(1.0 / sqrt((double)D) * 1.4426950408889634);
	const cudaStream_t st = kb.st;
	struct variant {
		const char *name;
		wg_fn f8, f16; /* 8k and 16k keys */
		int st;
		CUtensorMapL2promotion promo;
		bool math;
		int nwg; /* 0: dec_wg (160 threads); 1, 2: dec_wg2 */
		bool pdl; /* launched with programmatic stream serialization */
		bool trace; /* not timed: traced (trace() below) */
		int map;    /* 0: 3-d (columns, heads, keys); 1: 4-d (columns, keys, heads,
			     * sequences) as the plugin's; 2: 4-d (columns, heads, keys, sequences) */
	};
	const variant vs[] = {
	    {"wg2x2 ST10", dec_wg2<10, 16, 2>, dec_wg2<10, 32, 2>, 10, CU_TENSOR_MAP_L2_PROMOTION_NONE, true, 2},
	    {"wg2x2 ST10 pdl", dec_wg2<10, 16, 2, 1>, dec_wg2<10, 32, 2, 1>, 10, CU_TENSOR_MAP_L2_PROMOTION_NONE, true, 2, true},
	    {"wg2x2 ST10 pdl2", dec_wg2<10, 16, 2, 2>, dec_wg2<10, 32, 2, 2>, 10, CU_TENSOR_MAP_L2_PROMOTION_NONE, true, 2, true},
	    {"wg2x2 ST10 pdl2 pf", dec_wg2<10, 16, 2, 2, false, true>, dec_wg2<10, 32, 2, 2, false, true>, 10, CU_TENSOR_MAP_L2_PROMOTION_NONE, true, 2, true},
	    {"wg2x2 ST10 map4k", dec_wg2<10, 16, 2, 0, false, false, 1>, dec_wg2<10, 32, 2, 0, false, false, 1>, 10, CU_TENSOR_MAP_L2_PROMOTION_NONE, true, 2, false, false, 1},
	    {"wg2x2 ST10 map4h", dec_wg2<10, 16, 2, 0, false, false, 2>, dec_wg2<10, 32, 2, 0, false, false, 2>, 10, CU_TENSOR_MAP_L2_PROMOTION_NONE, true, 2, false, false, 2},
	    {"wg2x2 ST10 early", dec_wg2<10, 16, 2, 0, false, false, 0, true>, dec_wg2<10, 32, 2, 0, false, false, 0, true>, 10, CU_TENSOR_MAP_L2_PROMOTION_NONE, true, 2},
	    {"wg2x2 ST10 pf", dec_wg2<10, 16, 2, 0, false, true>, dec_wg2<10, 32, 2, 0, false, true>, 10, CU_TENSOR_MAP_L2_PROMOTION_NONE, true, 2},
	    {"wg2x2 ST10 pdl2 trace", dec_wg2<10, 16, 2, 2, true, true>, dec_wg2<10, 32, 2, 2, true, true>, 10, CU_TENSOR_MAP_L2_PROMOTION_NONE, true, 2, true, true},
	    {"wg2x2 ST10 trace", dec_wg2<10, 16, 2, 0, true>, dec_wg2<10, 32, 2, 0, true>, 10, CU_TENSOR_MAP_L2_PROMOTION_NONE, true, 2, false, true},
	    {"wg2x2 ST12", dec_wg2<12, 16, 2>, dec_wg2<12, 32, 2>, 12, CU_TENSOR_MAP_L2_PROMOTION_NONE, true, 2},
	    {"wg2x2 ST13", dec_wg2<13, 16, 2>, dec_wg2<13, 32, 2>, 13, CU_TENSOR_MAP_L2_PROMOTION_NONE, true, 2},
	    {"wg2x4 ST10", dec_wg2<10, 16, 4>, dec_wg2<10, 32, 4>, 10, CU_TENSOR_MAP_L2_PROMOTION_NONE, true, 4},
	    {"wg2x4 ST12", dec_wg2<12, 16, 4>, dec_wg2<12, 32, 4>, 12, CU_TENSOR_MAP_L2_PROMOTION_NONE, true, 4},
	    {"pipe ST8", dec_wg<8, 16, true, true>, dec_wg<8, 32, true, true>, 8, CU_TENSOR_MAP_L2_PROMOTION_NONE, true, 0},
	    {"wg ST12", dec_wg<12, 16, true>, dec_wg<12, 32, true>, 12, CU_TENSOR_MAP_L2_PROMOTION_NONE, true, 0},
	    {"wg ST8", dec_wg<8, 16, true>, dec_wg<8, 32, true>, 8, CU_TENSOR_MAP_L2_PROMOTION_NONE, true, 0},
	    {"loads ST8", dec_wg<8, 16, false>, dec_wg<8, 32, false>, 8, CU_TENSOR_MAP_L2_PROMOTION_NONE, false, 0},
	};
	for (const auto &x : vs) {
		const int smem = x.st * TILE + (x.nwg == 4 ? lay2<4>::BYTES : x.nwg == 2 ? lay2<2>::BYTES : x.nwg ? lay2<1>::BYTES : EXTRA) + 1024;
		CK(cudaFuncSetAttribute(x.f8, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
		CK(cudaFuncSetAttribute(x.f16, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
	}
	std::vector<uint16_t> hq(QH * D), ho(QH * D);
	CK(cudaMemcpy(hq.data(), q, QH * D * 2, cudaMemcpyDeviceToHost));
	if (argc > 2 && strstr(argv[2], "empty")) { /* the launch alone, in a graph of 32 */
		const int big = 10 * TILE + lay2<2>::BYTES + 1024;
		CK(cudaFuncSetAttribute(empty_k, cudaFuncAttributeMaxDynamicSharedMemorySize, big));
		const struct {
			const char *name;
			int cluster, smem;
		} es[] = {{"empty: 64 CTAs, clusters of 8, ring smem", R, big},
			  {"empty: 64 CTAs, clusters of 8, no smem", R, 0},
			  {"empty: 64 CTAs, no clusters, ring smem", 0, big},
			  {"empty: 64 CTAs, no clusters, no smem", 0, 0}};
		for (const auto &e : es) {
			auto go = [&](int, cudaStream_t s) {
				launch(empty_k, dim3(R, H), 288, e.smem, e.cluster, s, (int *)nullptr);
			};
			printf("%-45s graph %6.2f us a launch\n", e.name, median_graph_us(st, go, 32, samples));
		}
	}
	/* checks launch 0 against ref (when math: the output poisoned first),
	 * then times single launches and graphs of 32, and prints a row */
	auto check_and_time = [&](const char *name, auto go, bool math, int keys,
				  const std::vector<double> &ref) {
		const size_t bytes = kb.bytes;
		double err = 0;
		if (math) {
			CK(cudaMemset(out, 0xff, QH * D * 2)); /* poisoned: NaN */
			go(0, st);
			CK(cudaStreamSynchronize(st));
			CK(cudaMemcpy(ho.data(), out, QH * D * 2, cudaMemcpyDeviceToHost));
			for (int i = 0; i < QH * D; i++) {
				const double e = fabs((double)bf2f(ho[i]) - ref[i]);
				err = (e == e) ? fmax(err, e) : 1e9;
			}
		}
		const double a = median_us(F_CLEAN, st, [&] { go(0, st); }, samples);
		const double b = median_graph_us(st, go, 32, samples);
		printf("keys %5d %5.1f MB  %-18s  single %7.2f us %6.0f GB/s   graph %7.2f us %6.0f "
		       "GB/s   max err %.2e\n",
		       keys, bytes / 1e6, name, a, bytes / a / 1e3, b, bytes / b / 1e3, err);
		fflush(stdout);
	};
	for (int keys : {8192, 16384}) {
		kb.at(keys);
		/* the reference of copy 0 */
		std::vector<uint16_t> hk((size_t)keys * HSTR), hv((size_t)keys * HSTR);
		CK(cudaMemcpy(hk.data(), kb.k(0), hk.size() * 2, cudaMemcpyDeviceToHost));
		CK(cudaMemcpy(hv.data(), kb.v(0), hv.size() * 2, cudaMemcpyDeviceToHost));
		std::vector<double> ref(QH * D);
		for (int h = 0; h < QH; h++) {
			const int kh = h / G;
			std::vector<double> sc(keys);
			double mx = -1e300;
			for (int n = 0; n < keys; n++) {
				double a = 0;
				for (int c = 0; c < D; c++)
					a += (double)bf2f(hq[h * D + c]) * bf2f(hk[(size_t)n * HSTR + kh * D + c]);
				sc[n] = a / sqrt((double)D);
				mx = fmax(mx, sc[n]);
			}
			double l = 0;
			std::vector<double> acc(D, 0.0);
			for (int n = 0; n < keys; n++) {
				const double p = exp(sc[n] - mx);
				l += p;
				for (int c = 0; c < D; c++)
					acc[c] += p * bf2f(hv[(size_t)n * HSTR + kh * D + c]);
			}
			for (int c = 0; c < D; c++)
				ref[h * D + c] = acc[c] / l;
		}
		for (const auto &x : vs) {
			if (argc > 2 && !strstr(argv[2], x.name))
				continue;
			std::vector<CUtensorMap> km(32), vm(32);
			for (int i = 0; i < 32; i++) {
				km[i] = kv_map(kb.k(i), keys, x.promo, x.map);
				vm[i] = kv_map(kb.v(i), keys, x.promo, x.map);
			}
			const wg_fn fn = keys == 8192 ? x.f8 : x.f16;
			const int smem = x.st * TILE + (x.nwg == 4 ? lay2<4>::BYTES : x.nwg == 2 ? lay2<2>::BYTES : x.nwg ? lay2<1>::BYTES : EXTRA) + 1024;
			const int threads = x.nwg ? x.nwg * 128 + 32 : 160;
			auto go = [&](int i, cudaStream_t s) {
				g_pdl = x.pdl;
				launch(fn, dim3(R, H), threads, smem, R, s, km[i], vm[i], (const __nv_bfloat16 *)q,
				       out, scale_log2);
				g_pdl = false;
			};
			if (x.trace) /* g_tr is set in trace() alone */
				trace(st, go, keys);
			else
				check_and_time(x.name, go, x.math, keys, ref);
		}
#ifdef WITH_PLUGIN
		for (int run = 0; run < 16; run++) {
			/* kernels/cuda/flash_decode_wg.cu as the plugin launches it: the
			 * library's copy, the one compiled here, and with -DPLUGIN_B=FILE
			 * (-DPLUGIN_C=FILE) an edited copy, its C names ending in wgb_
			 * (wgc_); each with one Q and O for every launch, with a Q a
			 * launch (coldq), with a Q and an O a launch (coldqo), and over
			 * 6 sets of all four (rot6) */
			const int src = run / 4, cold = run % 4;
#ifndef PLUGIN_B
			if (src == 2)
				continue;
#endif
#ifndef PLUGIN_C
			if (src == 3)
				continue;
#endif
			static const char *const rn[16] = {
			    "plugin",	"plugin coldq",	  "plugin coldqo",   "plugin rot6",
			    "plugin-src", "plugin-src coldq", "plugin-src coldqo", "plugin-src rot6",
			    "plugin-b",   "plugin-b coldq",   "plugin-b coldqo",   "plugin-b rot6",
			    "plugin-c",   "plugin-c coldq",   "plugin-c coldqo",   "plugin-c rot6"};
			if (argc > 2 && !strstr(argv[2], rn[run]))
				continue;
			static decwg_launch_fn lib_launch;
			if (!lib_launch) {
				void *h = dlopen("libfabench-cuda.so", RTLD_NOW | RTLD_NOLOAD);
				lib_launch = h ? (decwg_launch_fn)dlsym(h, "fa_cuda_decode_wg_launch") : nullptr;
				if (!lib_launch) {
					fprintf(stderr, "fa_cuda_decode_wg_launch of libfabench-cuda.so not found\n");
					exit(1);
				}
			}
			decwg_launch_fn fn = src ? plugsrc::fa_cuda_decode_wg_launch : lib_launch;
#ifdef PLUGIN_B
			if (src == 2)
				fn = plugsrc::bb::fa_cuda_decode_wgb_launch;
#endif
#ifdef PLUGIN_C
			if (src == 3)
				fn = plugsrc::cc::fa_cuda_decode_wgc_launch;
#endif
			fa_problem p = {};
			p.batch = 1, p.heads = QH, p.kv_heads = H, p.q_len = 1, p.kv_len = keys;
			p.head_dim = p.head_dim_v = D, p.dtype = FA_DTYPE_BF16, p.mask = FA_MASK_NONE;
			p.layout = FA_LAYOUT_BSHD, p.total_q = 1, p.total_k = keys;
			p.scale = (float)(1.0 / sqrt((double)D));
			p.q_stride_s = p.o_stride_s = QH * D, p.q_stride_h = p.o_stride_h = D;
			p.q_stride_b = p.o_stride_b = QH * D;
			p.k_stride_s = p.v_stride_s = HSTR, p.k_stride_h = p.v_stride_h = D;
			p.k_stride_b = p.v_stride_b = (int64_t)keys * HSTR;
			auto go = [&](int i, cudaStream_t s) {
				fa_launch_args a = {};
				const int j = cold == 3 ? i % 6 : i; /* rot6: 6 sets, as fabench at 8k */
				a.p = &p, a.q = cold ? qs[j] : q, a.k = kb.k(j), a.v = kb.v(j);
				a.o = cold >= 2 ? outs[j] : out, a.stream = s;
				const int e = fn(&a);
				if (e) {
					fprintf(stderr, "fa_cuda_decode_wg_launch: %d\n", e);
					exit(1);
				}
			};
			check_and_time(rn[run], go, true, keys, ref);
		}
#endif
	}
	return 0;
}
