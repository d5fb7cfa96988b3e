/* flash_decode_wg.cu - the Hopper decode path of cuda_flash_mma: one query
 * row per (sequence, query head), up to 8 query heads per KV head, head
 * size 128, fp16/bf16, up to 16384 keys, every key visible (no mask, or a
 * mask that lets the one row see every key).
 *
 * Grid: 8 key ranges x KV heads x sequences, each KV head's 8 ranges one
 * thread-block cluster. A CTA is a producer warp and two consumer
 * warpgroups (288 threads, one CTA per SM):
 *  - the producer streams its range's K tiles, then its V tiles (64 keys x
 *    128 columns, two 64-column TMA boxes with the 128-byte swizzle, zeros
 *    past the last key) through a ring of ST stages on mbarriers;
 *  - pass 1: warpgroup c takes tiles c, c + 2, ...: S^T = K Q^T by wgmma
 *    m64n8k16 (A the K stage, B the group's query rows padded to 8), kept
 *    in registers (raw scores; keys past the end -inf) with the running
 *    maximum of each row; each tile's stage is released once its products
 *    are done (one group in flight behind the next);
 *  - the maxima: each warpgroup pushes its row maxima to every CTA of
 *    the cluster (st.async counted on a second mbarrier) and takes the
 *    maximum M over the KV head's 16 warpgroups, so all 16 partials share
 *    one reference;
 *  - pass 2: P = exp2(S scale - M scale) (no rescaling: every score is
 *    known) to shared memory as a K-major B operand, then O^T += V^T P^T
 *    by wgmma m64n8k16 with A transposed (the V stage read MN-major); the
 *    row sums in registers, pushed to every CTA before the last V tile
 *    (every P is known by then);
 *  - the merge: each warpgroup is one partial (l, O) of its key tiles. It
 *    pushes its 16-column slices of O^T into the inboxes of the cluster's
 *    CTAs that own them (st.async counted on the owner's mbarrier); each
 *    CTA adds its 16 partials (no weights: one reference) and writes 16
 *    columns of the group's rows.
 * The producer waits on the cluster barrier's first phase (every CTA's
 * mbarriers exist) right after its K tiles: under racecheck a phase seems
 * to end only once every thread of the cluster waits on it, and the
 * consumers wait on it after pass 1, before their first remote store.
 * On H200 machines, batch 1 at 8k keys in a graph of 32 takes 9.68 us
 * with it (82.7% of the copy rate, 4192.4 GB/s; 9.90 us with weights in
 * the merge, 10.14 us before its shared-memory accesses were LDS/STS),
 * where the mma.sync decode path took 11.83 us, 67.3% (docs/BENCHMARKS.md,
 * 2026-12-02 "(j)", 2026-12-03 "(o)", "(r)", "(s)" and "(u)";
 * bench/decode_wg.cu is the standalone form).
 *
 * The Makefile compiles this file for sm_90a only; fits() refuses other
 * devices.
 */
#include <cuda.h>
#include <math.h>
#include <string.h>
#include <type_traits>

#include "../common/fa_decode.h"
#include "flash_decode_wg.h"
#include "problem_check.h"
#include "wgmma_common.cuh"

namespace fa_decwg {

constexpr int R = 8;           /* key ranges of a KV head: the cluster */
constexpr int NWG = 2;         /* consumer warpgroups */
constexpr int ST = 10;         /* ring stages */
constexpr int BK = 64;         /* keys a tile */
constexpr int D = 128;         /* head size */
constexpr int TILE = BK * D * 2; /* bytes of a K or V tile: two 8 KB slabs */
constexpr int COLS = 8;        /* query rows of a group, padded */
constexpr int E = 32 * 4 + COLS; /* floats an inbox entry: 32 lanes x 4 of O^T, l */
constexpr int THREADS = NWG * 128 + 32;

/* Shared memory after the ring (1024-byte aligned): Q (2 slabs of 8 rows),
 * P (3 buffers a warpgroup), the inbox (R x NWG entries), the row maxima
 * of the cluster's warpgroups (R x NWG x 8), the reductions (a warpgroup's
 * 4 warps x 8 rows, maxima and sums), the barriers. */
struct lay {
	static constexpr int Q = ST * TILE, P = Q + 2048, INBOX = P + NWG * 3 * 1024,
			     INBOX_BYTES = R * NWG * E * 4, MAXBOX = INBOX + INBOX_BYTES,
			     MAXBOX_BYTES = R * NWG * COLS * 4, RED = MAXBOX + MAXBOX_BYTES,
			     BAR = RED + NWG * 64 * 4, BYTES = BAR + 8 * (2 * ST + 2);
};
constexpr int SMEM = lay::BYTES + 1024; /* + the alignment of the dynamic base */

struct args {
	const void *q;
	void *o;
	int64_t q_sb, q_sh, o_sb, o_sh;
	int kv_len, group;
	float scale_log2;
};

#if FA_WGMMA_DEVICE

/* d (64 x 8, fp32) (+)= A (64 x 16) B (16 x 8), both from shared memory;
 * TA: A MN-major (transposed) */
template <int TA, bool BF16>
__device__ __forceinline__ void mma8(float (&d)[4], uint64_t a, uint64_t b, int acc)
{
	if constexpr (BF16)
		asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %6, 0;\n\t"
			     "wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {%0, %1, %2, %3}, %4, "
			     "%5, p, 1, 1, %7, 0;\n\t}"
			     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
			     : "l"(a), "l"(b), "r"(acc), "n"(TA));
	else
		asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %6, 0;\n\t"
			     "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%0, %1, %2, %3}, %4, "
			     "%5, p, 1, 1, %7, 0;\n\t}"
			     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
			     : "l"(a), "l"(b), "r"(acc), "n"(TA));
}

__device__ __forceinline__ void fence4(float (&r)[4])
{
#pragma unroll
	for (int i = 0; i < 4; i++)
		asm volatile("" : "+f"(r[i])::"memory");
}

__device__ __forceinline__ uint32_t map_rank(uint32_t a, uint32_t rank)
{
	uint32_t m;
	asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(m) : "r"(a), "r"(rank));
	return m;
}

__device__ __forceinline__ void st_async4(uint32_t a, float x, float y, float z, float w,
					  uint32_t bar)
{
	asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.b32"
		     " [%0], {%1, %2, %3, %4}, [%5];" ::"r"(a),
		     "r"(__float_as_uint(x)), "r"(__float_as_uint(y)), "r"(__float_as_uint(z)),
		     "r"(__float_as_uint(w)), "r"(bar)
		     : "memory");
}

/* a[0] = the sum (maximum) of a[0..15], as a tree of depth 4 */
__device__ __forceinline__ void tree16(float (&a)[16])
{
#pragma unroll
	for (int q = 0; q < 8; q++)
		a[q] += a[q + 8];
#pragma unroll
	for (int q = 0; q < 4; q++)
		a[q] += a[q + 4];
	a[0] += a[2];
	a[1] += a[3];
	a[0] += a[1];
}

__device__ __forceinline__ void tree16max(float (&a)[16])
{
#pragma unroll
	for (int q = 0; q < 8; q++)
		a[q] = fmaxf(a[q], a[q + 8]);
#pragma unroll
	for (int q = 0; q < 4; q++)
		a[q] = fmaxf(a[q], a[q + 4]);
	a[0] = fmaxf(a[0], a[2]);
	a[1] = fmaxf(a[1], a[3]);
	a[0] = fmaxf(a[0], a[1]);
}

/* Consumer warpgroup C (a template parameter: ptxas serializes wgmma in
 * code that depends on a run-time warpgroup index) of range r of KV head
 * hd, sequence b; NT tiles of the range are its. */
template <int NT, int C, bool BF16, bool G8>
__device__ __forceinline__ void consume(unsigned char *sm, uint32_t base, uint32_t full,
					uint32_t empty, uint32_t inbar, uint32_t maxbar, uint32_t r, int hd, int b,
					int tid, const args &A)
{
	using T = typename std::conditional<BF16, __nv_bfloat16, __half>::type;
	constexpr int RT = NT * NWG; /* tiles of the range */
	const int warp = (tid >> 5) & 3, lane = tid & 31, g = lane >> 2, t = lane & 3;
	float *red = (float *)(sm + lay::RED) + C * 64;
	float *inbox = (float *)(sm + lay::INBOX);
	const uint32_t qa = base + lay::Q, pa = base + lay::P + C * 3072;
	const int key0 = (int)r * RT * BK + 16 * warp + g; /* this thread's first key, tile 0 */
	float s[NT][4];
	float m0 = -INFINITY, m1 = -INFINITY;
#pragma unroll
	for (int j = 0; j <= NT; j++) {
		if (j < NT) {
			const int i = j * NWG + C, st = i % ST;
			mbar_wait_warp(full + 8 * st, (i / ST) & 1);
			fence4(s[j]);
			wg_fence();
#pragma unroll
			for (int kk = 0; kk < 8; kk++) {
				const uint32_t off = (kk >> 2) * 8192 + (kk & 3) * 32;
				const uint32_t qoff = (kk >> 2) * 1024 + (kk & 3) * 32;
				mma8<0, BF16>(s[j], wg_desc(base + st * TILE + off, 16, 1024),
					      wg_desc(qa + qoff, 16, 1024), kk > 0);
			}
			wg_commit();
		}
		if (j > 0) {
			const int jj = j - 1, i = jj * NWG + C;
			if (j < NT)
				wg_wait1();
			else
				wg_wait0();
			fence4(s[jj]);
			__syncwarp();
			if (lane == 0)
				mbar_arrive(empty + 8 * (i % ST));
			const int k = key0 + i * BK;
			if (k >= A.kv_len)
				s[jj][0] = s[jj][1] = -INFINITY;
			if (k + 8 >= A.kv_len)
				s[jj][2] = s[jj][3] = -INFINITY;
			m0 = fmaxf(m0, fmaxf(s[jj][0], s[jj][2]));
			m1 = fmaxf(m1, fmaxf(s[jj][1], s[jj][3]));
		}
	}
	/* the warpgroup's row maxima: lanes of a column pair, then its 4 warps */
#pragma unroll
	for (int x = 4; x < 32; x <<= 1) {
		m0 = fmaxf(m0, __shfl_xor_sync(0xffffffffu, m0, x));
		m1 = fmaxf(m1, __shfl_xor_sync(0xffffffffu, m1, x));
	}
	if (g == 0) {
		red[warp * 8 + 2 * t] = m0;
		red[warp * 8 + 2 * t + 1] = m1;
	}
	asm volatile("bar.sync %0, 128;" ::"n"(1 + C) : "memory");
	asm volatile("barrier.cluster.wait.aligned;" ::: "memory"); /* the peers' barriers exist */
	const int ct = tid & 127;
	const int e = (int)r * NWG + C;
	const uint32_t slot = smem_u32(inbox + e * E);
	float *maxbox = (float *)(sm + lay::MAXBOX);
	if (ct < (G8 ? 2 : 1) * R) { /* this warpgroup's row maxima to every CTA: rows 0-3 (4-7) */
		const int peer = G8 ? ct >> 1 : ct, part = G8 ? ct & 1 : 0;
		float v[4];
#pragma unroll
		for (int k = 0; k < 4; k++) {
			const int col = 4 * part + k;
			v[k] = fmaxf(fmaxf(red[col], red[8 + col]), fmaxf(red[16 + col], red[24 + col]));
		}
		st_async4(map_rank(smem_u32(maxbox + e * COLS + 4 * part), peer), v[0], v[1], v[2], v[3],
			  map_rank(maxbar, peer));
	}
	/* the maximum over the KV head's 16 partials: every partial then uses
	 * the same reference, and the merge is a plain sum */
	float ma = -INFINITY, mb = -INFINITY;
	mbar_wait_warp(maxbar, 0);
	if (G8 || t < 2) {
		float mx[R * NWG], my[R * NWG];
#pragma unroll
		for (int q = 0; q < R * NWG; q++) {
			const float2 v = *(const float2 *)(maxbox + q * COLS + 2 * t);
			mx[q] = v.x;
			my[q] = v.y;
		}
		tree16max(mx);
		tree16max(my);
		ma = mx[0];
		mb = my[0];
	}
	/* a row no key reaches: P is 0 (exp2(-inf)) */
	const float n0 = ma == -INFINITY ? 0.f : -ma * A.scale_log2;
	const float n1 = mb == -INFINITY ? 0.f : -mb * A.scale_log2;
	float o[2][4] = {{0.f, 0.f, 0.f, 0.f}, {0.f, 0.f, 0.f, 0.f}};
	float l0 = 0.f, l1 = 0.f;
#pragma unroll
	for (int j = 0; j <= NT; j++) {
		if (j < NT) {
			const int i = RT + j * NWG + C, st = i % ST;
			unsigned char *pb = sm + lay::P + C * 3072 + (j % 3) * 1024;
			if (G8 || t < 2) { /* up to 4 rows: P's rows 4-7 stay 0 */
				float p[4];
				p[0] = ex2(fmaf(s[j][0], A.scale_log2, n0));
				p[1] = ex2(fmaf(s[j][1], A.scale_log2, n1));
				p[2] = ex2(fmaf(s[j][2], A.scale_log2, n0));
				p[3] = ex2(fmaf(s[j][3], A.scale_log2, n1));
				l0 += p[0] + p[2];
				l1 += p[1] + p[3];
				/* P (row, key) at row * 128 + the swizzled 16-byte chunk of the key */
#pragma unroll
				for (int u = 0; u < 4; u++) {
					const int col = 2 * t + (u & 1), key = 16 * warp + g + 8 * (u >> 1);
					*(T *)(pb + col * 128 + (((key >> 3) ^ col) << 4) + (key & 7) * 2) =
					    T(p[u]);
				}
			}
			asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
			asm volatile("bar.sync %0, 128;" ::"n"(1 + C) : "memory");
			if (j == NT - 1) {
				/* every P is known: the row sums go out before the last V tile */
#pragma unroll
				for (int x = 4; x < 32; x <<= 1) {
					l0 += __shfl_xor_sync(0xffffffffu, l0, x);
					l1 += __shfl_xor_sync(0xffffffffu, l1, x);
				}
				if (g == 0) {
					red[32 + warp * 8 + 2 * t] = l0;
					red[32 + warp * 8 + 2 * t + 1] = l1;
				}
				asm volatile("bar.sync %0, 128;" ::"n"(1 + C) : "memory");
				if (ct < (G8 ? 2 : 1) * R) { /* l of the 8 (4) rows: 2 (1) stores to each rank */
					const int peer = G8 ? ct >> 1 : ct, part = G8 ? ct & 1 : 0;
					float v[4];
#pragma unroll
					for (int k = 0; k < 4; k++) {
						const int col = 4 * part + k;
						v[k] = (red[32 + col] + red[40 + col]) + (red[48 + col] + red[56 + col]);
					}
					st_async4(map_rank(slot + 512 + part * 16, peer), v[0], v[1], v[2], v[3],
						  map_rank(inbar, peer));
				}
			}
			mbar_wait_warp(full + 8 * st, (i / ST) & 1);
			wg_fence();
			const uint32_t pj = pa + (j % 3) * 1024;
#pragma unroll
			for (int h = 0; h < 2; h++)
#pragma unroll
				for (int kk = 0; kk < 4; kk++)
					mma8<1, BF16>(o[h],
						      wg_desc(base + st * TILE + h * 8192 + kk * 2048, 8192, 1024),
						      wg_desc(pj + kk * 32, 16, 1024), 1);
			wg_commit();
		}
		if (j > 0) {
			if (j < NT)
				wg_wait1();
			else
				wg_wait0();
			__syncwarp();
			if (lane == 0)
				mbar_arrive(empty + 8 * ((RT + (j - 1) * NWG + C) % ST));
		}
	}
	fence4(o[0]);
	fence4(o[1]);
	/* push: warp w's rows of M-block h are the columns 16 (4 h + w) .. + 15
	 * of O, owned by rank 4 h + w */
	if (G8 || t < 2)
#pragma unroll
		for (int h = 0; h < 2; h++) {
			const uint32_t owner = 4 * h + warp;
			/* position 8 t + g: the owner's warp reads the entries of one t,
			 * 8 positions x 4 floats on 32 banks */
			st_async4(map_rank(slot + (8 * t + g) * 16, owner), o[h][0], o[h][1], o[h][2], o[h][3],
				  map_rank(inbar, owner));
		}
	if (C == 0) {
		/* this CTA's 16 columns of the group's rows: column d, row cc */
		const int cc = ct >> 4, d = ct & 15;
		const int ix = (8 * (cc >> 1) + (d & 7)) * 4 + (d >> 3) * 2 + (cc & 1);
		T *o_ = (T *)A.o + b * A.o_sb + (int64_t)(hd * A.group + cc) * A.o_sh + 16 * r + d;
		const bool live = cc < A.group;
		mbar_wait(inbar, 0);
		if (live) {
			float sv[R * NWG], lv[R * NWG];
#pragma unroll
			for (int q = 0; q < R * NWG; q++) {
				sv[q] = inbox[q * E + ix];
				lv[q] = inbox[q * E + 128 + cc];
			}
			tree16(sv);
			tree16(lv);
			*o_ = T(lv[0] > 0.f ? __fdividef(sv[0], lv[0]) : 0.f);
		}
	}
}

template <int NT, bool BF16, bool G8>
__global__ void __launch_bounds__(THREADS, 1)
    decode_wg_kernel(const __grid_constant__ CUtensorMap km, const __grid_constant__ CUtensorMap vm,
		     const __grid_constant__ args A)
{
	using T = typename std::conditional<BF16, __nv_bfloat16, __half>::type;
	extern __shared__ __align__(1024) unsigned char smraw[];
	/* aligned by pointer arithmetic on smraw, not through an integer: the
	 * compiler then still knows sm points into shared memory and emits
	 * LDS/STS for the P, reduction and inbox accesses; through uintptr_t
	 * every one of them was a generic LD.E/ST.E */
	unsigned char *sm = smraw + ((1024 - (smem_u32(smraw) & 1023)) & 1023);
	const uint32_t base = smem_u32(sm);
	const int tid = threadIdx.x, warp = tid >> 5, hd = blockIdx.y, b = blockIdx.z;
	uint32_t r;
	asm("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
	const uint32_t full = base + lay::BAR, empty = full + 8 * ST, inbar = empty + 8 * ST,
		       maxbar = inbar + 8;
	constexpr int RT = NT * NWG;
	if (tid == 0) {
		for (int s = 0; s < ST; s++) {
			mbar_init(full + 8 * s, 1);
			mbar_init(empty + 8 * s, 4);
		}
		mbar_init(inbar, 1);
		mbar_expect_tx(inbar, G8 ? lay::INBOX_BYTES : lay::INBOX_BYTES / 2);
		mbar_init(maxbar, 1);
		mbar_expect_tx(maxbar, G8 ? lay::MAXBOX_BYTES : lay::MAXBOX_BYTES / 2);
		asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
	}
	__syncthreads();
	asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
	if (warp == NWG * 4) { /* the producer */
		if ((tid & 31) == 0) {
			const int k0 = (int)r * RT * BK;
			for (int i = 0; i < 2 * RT; i++) {
				const int s = i % ST;
				if (i >= ST)
					mbar_wait(empty + 8 * s, ((i / ST) - 1) & 1);
				mbar_expect_tx(full + 8 * s, TILE);
				const CUtensorMap *m = i < RT ? &km : &vm;
				const int key = k0 + (i % RT) * BK;
				tma_load(base + s * TILE, m, full + 8 * s, 0, key, hd, b);
				tma_load(base + s * TILE + 8192, m, full + 8 * s, 64, key, hd, b);
				/* the K tiles are out: wait phase 0 (every CTA's barriers
				 * exist) here, not after the V tiles. The consumers wait
				 * it after pass 1. compute-sanitizer's racecheck seems to
				 * end a cluster phase only when every thread has reached
				 * its wait: with this wait after the V tiles, which need
				 * the consumers past theirs, racecheck never finished (its
				 * sync trace: consumers held at that wait, producers at an
				 * empty stage) */
				if (i == RT - 1)
					asm volatile("barrier.cluster.wait;" ::: "memory");
			}
		} else {
			asm volatile("barrier.cluster.wait;" ::: "memory"); /* lanes 1-31 */
		}
		return;
	}
	{
		/* Q's rows of the group (and zeros to 8) into the B layout, by the
		 * first warpgroup: 128 chunks of 16 bytes */
		if (tid < 128) {
			const int slab = tid >> 6, row = (tid >> 3) & 7, ch = tid & 7;
			uint4 v = make_uint4(0, 0, 0, 0);
			if (row < A.group)
				v = *(const uint4 *)((const T *)A.q + b * A.q_sb +
						     (int64_t)(hd * A.group + row) * A.q_sh + slab * 64 + ch * 8);
			*(uint4 *)(sm + lay::Q + slab * 1024 + row * 128 + ((ch ^ row) << 4)) = v;
		}
		if (!G8)
			for (int z = tid; z < NWG * 3 * 64; z += NWG * 128)
				*(uint4 *)(sm + lay::P + z * 16) = make_uint4(0, 0, 0, 0);
		asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
		asm volatile("bar.sync 15, %0;" ::"n"(NWG * 128) : "memory");
	}
	if (warp < 4)
		consume<NT, 0, BF16, G8>(sm, base, full, empty, inbar, maxbar, r, hd, b, tid, A);
	else
		consume<NT, 1, BF16, G8>(sm, base, full, empty, inbar, maxbar, r, hd, b, tid, A);
}

#else

template <int NT, bool BF16, bool G8>
__global__ void decode_wg_kernel(const __grid_constant__ CUtensorMap, const __grid_constant__ CUtensorMap,
				 const __grid_constant__ args)
{
}

#endif /* FA_WGMMA_DEVICE */

typedef void (*kernel_fn)(CUtensorMap, CUtensorMap, args);

template <int NT, bool BF16, bool G8> int launch_nt(const fa_launch_args *a, const args &A)
{
	const fa_problem *p = a->p;
	CUtensorMap km, vm;
	/* no L2 promotion: 256 bytes cost 0.25 us at 8k keys on an H200
	 * (bench/decode_wg.cu, docs/BENCHMARKS.md 2026-12-02 "(j)") */
	int e = fa_cuda_wgmma_make_map(&km, a->k, BF16, D, BK, p->kv_len, p->kv_heads, p->batch,
				       p->k_stride_s, p->k_stride_h, p->k_stride_b, 0);
	if (!e)
		e = fa_cuda_wgmma_make_map(&vm, a->v, BF16, D, BK, p->kv_len, p->kv_heads, p->batch,
					   p->v_stride_s, p->v_stride_h, p->v_stride_b, 0);
	if (e)
		return e;
	const kernel_fn fn = decode_wg_kernel<NT, BF16, G8>;
	const cudaError_t ce = cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM);
	if (ce != cudaSuccess)
		return (int)ce;
	cudaLaunchConfig_t c = {};
	cudaLaunchAttribute at[1];
	c.gridDim = dim3(R, p->kv_heads, p->batch);
	c.blockDim = dim3(THREADS);
	c.dynamicSmemBytes = SMEM;
	c.stream = (cudaStream_t)a->stream;
	at[0].id = cudaLaunchAttributeClusterDimension;
	at[0].val.clusterDim.x = R;
	at[0].val.clusterDim.y = 1;
	at[0].val.clusterDim.z = 1;
	c.attrs = at;
	c.numAttrs = 1;
	return (int)cudaLaunchKernelEx(&c, fn, km, vm, A);
}

} // namespace fa_decwg

using namespace fa_decwg;

extern "C" int fa_cuda_decode_wg_fits(const struct fa_problem *p, const char **why)
{
	const char *w = NULL;
	int32_t lo = 0, hi = 0;
	if (p->kv_len >= 1)
		fa_mask_range(p->mask, 0, 1, p->kv_len, p->window, &lo, &hi);
	const int group = p->kv_heads > 0 ? p->heads / p->kv_heads : 0;
	int major = 0, minor = 0;
	if (p->dtype != FA_DTYPE_FP16 && p->dtype != FA_DTYPE_BF16)
		w = "not fp16 or bf16";
	else if (p->head_dim != D || p->head_dim_v != D)
		w = "head sizes not 128";
	else if (p->varlen || p->q_len != 1)
		w = "not one query per sequence";
	else if (group < 1 || group > COLS || p->heads % p->kv_heads)
		w = "more than 8 query heads per KV head";
	else if (p->kv_len < 1 || p->kv_len > R * NWG * 16 * BK)
		w = "keys not 1 to 16384";
	else if (lo != 0 || hi != p->kv_len)
		w = "the mask hides keys from the query";
	else if (!(p->scale > 0.f))
		w = "scale not positive";
	else if (!fa_cuda_strides_multiple(p, 8))
		w = "strides not multiples of 8 elements (16-byte TMA strides)";
	else if (p->kv_heads > 65535 || p->batch > 65535)
		w = "grid out of range";
	else if (!fa_cuda_device_is_sm90(&major, &minor))
		w = "device is not sm_90a";
	else if (!fa_cuda_wgmma_have_tma())
		w = "the driver has no cuTensorMapEncodeTiled";
	if (why)
		*why = w;
	return w == NULL;
}

extern "C" int fa_cuda_decode_wg_auto(const struct fa_problem *p)
{
	return (int64_t)p->batch * p->kv_heads <= 8 && p->kv_len >= 4096 &&
	       fa_cuda_decode_wg_fits(p, NULL);
}

extern "C" int fa_cuda_decode_wg_launch(const struct fa_launch_args *a)
{
	const fa_problem *p = a->p;
	if (((uintptr_t)a->q | (uintptr_t)a->k | (uintptr_t)a->v | (uintptr_t)a->o) % 16 != 0)
		return (int)cudaErrorMisalignedAddress;
	args A;
	A.q = a->q;
	A.o = a->o;
	A.q_sb = p->q_stride_b;
	A.q_sh = p->q_stride_h;
	A.o_sb = p->o_stride_b;
	A.o_sh = p->o_stride_h;
	A.kv_len = p->kv_len;
	A.group = p->heads / p->kv_heads;
	A.scale_log2 = p->scale * 1.4426950408889634f;
	const int bf16 = p->dtype == FA_DTYPE_BF16;
	/* tiles of a range: 16 (8 a warpgroup) up to 8192 keys, else 32; rows
	 * of a group: up to 4 (half the lanes idle in pass 2 and the merge) or 8 */
	const bool g8 = A.group > 4;
	if (p->kv_len <= R * NWG * 8 * BK)
		return bf16 ? (g8 ? launch_nt<8, true, true>(a, A) : launch_nt<8, true, false>(a, A))
			    : (g8 ? launch_nt<8, false, true>(a, A) : launch_nt<8, false, false>(a, A));
	return bf16 ? (g8 ? launch_nt<16, true, true>(a, A) : launch_nt<16, true, false>(a, A))
		    : (g8 ? launch_nt<16, false, true>(a, A) : launch_nt<16, false, false>(a, A));
}
