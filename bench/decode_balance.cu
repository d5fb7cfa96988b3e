/* decode_balance.cu - how much math a tile of batch-1 decode at 8k keys may
 * cost, and whether the end of the key stream can be shortened: the loads
 * of bench/decode_ceiling.cu (8 KV heads x 8 ranges in clusters of 8, each
 * CTA 8 warps with a 3-stage ring of 16-key tiles by 16-byte cp.async) and
 * its least merge (`dsmem`: 2 KB a CTA through distributed shared memory),
 * where every tile is read back from shared memory (16 x 16 bytes a lane,
 * what ldmatrix of K and V reads) and followed by a dependent chain of M
 * fused multiply-adds seeded by what was read: a stand-in for a tile's
 * Q K^T, softmax and P V of about 4 M cycles.
 *
 *   fixed MN   the tree's schedule: warp w of range r takes tiles
 *              r * per + w + 8 j, each worked on as it lands
 *   r16 MN     the same over 16 ranges (128 CTAs) in clusters of 16 (the
 *              non-portable size): half the tiles a CTA
 *   r16c4 MN   16 ranges in clusters of 4, each cluster merging its own 4
 *              (a lower bound: the 4 clusters of a KV head are not merged)
 *   r8c4 MN    the tree's 8 ranges in clusters of 4, merged the same way
 *   fused MN   the last two tiles of each warp worked on together (both
 *              chains side by side) once both have landed
 *   wait0 MN   the same wait as `fused`, the two tiles then worked on one
 *              after the other: what the wait alone costs
 *   dyn MN     no fixed ranges: after two fixed tiles each, the 64 warps of
 *              a cluster claim their tiles from one counter in the shared
 *              memory of the cluster's first CTA (atom.shared::cluster,
 *              claimed a tile ahead), so they run out of tiles together
 *
 * A standalone program, not part of the build: on a CUDA machine
 *
 *   nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a \
 *        -o /tmp/decode_balance bench/decode_balance.cu && /tmp/decode_balance [samples]
 *
 * prints one line per (keys, variant), timed as decode_ceiling.cu times
 * (single launch after a clean flush; a graph of 32 over copies of K and
 * V). docs/BENCHMARKS.md (2026-12-02, "(f)" and "(g)") has the H200's
 * figures.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "decode_tiles.cuh"

constexpr int NW = 8, ST = 3, R = 8, PART = 256;

/* One tile's stand-in math: the lane's 16 chunks of the tile read back,
 * then a chain of M dependent FMAs seeded by them. */
template <int M>
__device__ __forceinline__ float tile_math(const uint4 *t, float x)
{
	const int lane = threadIdx.x & 31;
	unsigned a = 0;
#pragma unroll
	for (int u = 0; u < 16; u++) {
		const uint4 q = t[lane + 32 * u];
		a ^= q.x ^ q.w;
	}
	x += __uint_as_float((a & 0x007fffffu) | 0x3f800000u);
#pragma unroll
	for (int i = 0; i < M; i++)
		x = fmaf(x, 0.9999f, 0.25f);
	return x;
}

/* The last two tiles at once: two chains side by side (`fused`). */
template <int M>
__device__ __forceinline__ float tile_math2(const uint4 *t0, const uint4 *t1, float x)
{
	const int lane = threadIdx.x & 31;
	unsigned a = 0, b = 0;
#pragma unroll
	for (int u = 0; u < 16; u++) {
		const uint4 q = t0[lane + 32 * u], w = t1[lane + 32 * u];
		a ^= q.x ^ q.w;
		b ^= w.x ^ w.w;
	}
	float y = x + __uint_as_float((b & 0x007fffffu) | 0x3f800000u);
	x += __uint_as_float((a & 0x007fffffu) | 0x3f800000u);
#pragma unroll
	for (int i = 0; i < M; i++) {
		x = fmaf(x, 0.9999f, 0.25f);
		y = fmaf(y, 0.9999f, 0.25f);
	}
	return x + y;
}

/* fixed tiles, the last two of each warp waited for together, then worked
 * on together (MODE 1, `fused`) or one after the other (MODE 2, `wait0`) */
template <int M, int MODE>
__device__ __forceinline__ float stream_fused(unsigned char *sm, const uint16_t *k,
					      const uint16_t *v, int keys)
{
	const int warp = threadIdx.x >> 5, hd = blockIdx.y, r = blockIdx.x % R, lane = threadIdx.x & 31;
	const int tiles = keys / 16, per = tiles / R, t0 = r * per;
	const int nt = (per - warp + NW - 1) / NW;
	const uint32_t ring = saddr(sm) + warp * ST * 8192;
	auto load = [&](int j) {
		load_tile(ring + (j % ST) * 8192, k, v, hd, (t0 + warp + j * NW) * 16, lane);
	};
	auto at = [&](int j) {
		return reinterpret_cast<const uint4 *>(sm + warp * ST * 8192 + (j % ST) * 8192);
	};
	for (int s = 0; s < ST - 1; s++) {
		if (s < nt)
			load(s);
		asm volatile("cp.async.commit_group;");
	}
	float x = 0.f;
	const int solo = nt >= 2 ? nt - 2 : nt;
	for (int j = 0; j < solo; j++) {
		asm volatile("cp.async.wait_group %0;" ::"n"(ST - 2));
		__syncwarp();
		if (j + ST - 1 < nt)
			load(j + ST - 1);
		asm volatile("cp.async.commit_group;");
		x = tile_math<M>(at(j), x);
	}
	if (solo < nt) {
		asm volatile("cp.async.wait_group 0;");
		__syncwarp();
		if (MODE == 1) {
			x = tile_math2<M>(at(nt - 2), at(nt - 1), x);
		} else {
			x = tile_math<M>(at(nt - 2), x);
			x = tile_math<M>(at(nt - 1), x);
		}
	}
	return x;
}

template <int M, bool DYN, int FUSE = 0, int RR = R, int CL = RR>
__global__ void __launch_bounds__(NW * 32, 1)
    rd_bal(const uint16_t *k, const uint16_t *v, int keys, float2 *out)
{
	extern __shared__ __align__(1024) unsigned char sm[];
	__shared__ float2 inbox[PART];
	__shared__ unsigned ctr;
	const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, hd = blockIdx.y,
		  r = blockIdx.x % RR;
	const int tiles = keys / 16;
	float x = 0.f;
	if constexpr (FUSE > 0) {
		asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
		x = stream_fused<M, FUSE>(sm, k, v, keys);
	} else if constexpr (!DYN) {
		asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
		stream_tiles<NW, ST>(sm, k, v, keys, RR,
				     [&](const uint4 *t) { x = tile_math<M>(t, x); });
	} else {
		/* tiles (ST - 1) x 64 fixed (warp gw takes gw, gw + 64), the rest claimed */
		const int gw = r * NW + warp;
		if (r == 0 && tid == 0)
			ctr = (ST - 1) * R * NW;
		asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
		const uint32_t ring = saddr(sm) + warp * ST * 8192;
		auto load = [&](int slot, int t) { load_tile(ring + slot * 8192, k, v, hd, t * 16, lane); };
		int nload = 0;
		for (int s = 0; s < ST - 1; s++) {
			const int t = s * R * NW + gw;
			if (t < tiles) {
				load(s, t);
				nload++;
			}
			asm volatile("cp.async.commit_group;");
		}
		asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
		const uint32_t a_ctr = cluster_map(saddr(&ctr), 0);
		unsigned claim = 0;
		auto ask = [&] {
			if (lane == 0)
				asm volatile("atom.shared::cluster.add.u32 %0, [%1], 1;"
					     : "=r"(claim)
					     : "r"(a_ctr)
					     : "memory");
		};
		ask();
		bool more = true;
		for (int j = 0; j < nload; j++) {
			asm volatile("cp.async.wait_group %0;" ::"n"(ST - 2));
			__syncwarp();
			if (more) {
				const int t = (int)__shfl_sync(0xffffffffu, claim, 0);
				if (t < tiles) {
					load((j + ST - 1) % ST, t);
					nload++;
					ask();
				} else {
					more = false;
				}
			}
			asm volatile("cp.async.commit_group;");
			x = tile_math<M>(reinterpret_cast<const uint4 *>(sm + warp * ST * 8192 +
									 (j % ST) * 8192),
					 x);
		}
	}
	const float2 mine = make_float2(x, (float)(tid + r));
	__syncthreads();
	if constexpr (!DYN)
		asm volatile("barrier.cluster.wait.aligned;" ::: "memory");
	dsmem_merge<PART>(mine, inbox, CL, (int)blockIdx.x % CL, hd, out);
}

typedef void (*bal_fn)(const uint16_t *, const uint16_t *, int, float2 *);

int main(int argc, char **argv)
{
	const int samples = argc > 1 ? atoi(argv[1]) : 30;
	kv_bench kb(samples);
	float2 *out;
	CK(cudaMalloc(&out, H * PART * sizeof(float2)));
	const cudaStream_t st = kb.st;
	constexpr int SMEM = NW * ST * 8192;
	const struct {
		const char *name;
		bal_fn fn;
		int ranges = R, cluster = R;
	} vs[] = {
	    {"r16c4 M0", rd_bal<0, false, 0, 16, 4>, 16, 4},
	    {"r16c4 M96", rd_bal<96, false, 0, 16, 4>, 16, 4},
	    {"r16c4 M192", rd_bal<192, false, 0, 16, 4>, 16, 4},
	    {"r16c4 M288", rd_bal<288, false, 0, 16, 4>, 16, 4},
	    {"r16c4 M384", rd_bal<384, false, 0, 16, 4>, 16, 4},
	    {"r8c4 M0", rd_bal<0, false, 0, 8, 4>, 8, 4},
	    {"r8c4 M288", rd_bal<288, false, 0, 8, 4>, 8, 4},
	    {"fixed M0", rd_bal<0, false>},     {"fixed M48", rd_bal<48, false>},
	    {"fixed M96", rd_bal<96, false>},   {"fixed M144", rd_bal<144, false>},
	    {"fixed M192", rd_bal<192, false>}, {"fixed M240", rd_bal<240, false>},
	    {"fixed M288", rd_bal<288, false>}, {"fixed M384", rd_bal<384, false>},
	    {"fused M0", rd_bal<0, false, 1>},  {"fused M192", rd_bal<192, false, 1>},
	    {"fused M288", rd_bal<288, false, 1>}, {"fused M384", rd_bal<384, false, 1>},
	    {"wait0 M0", rd_bal<0, false, 2>},  {"dyn M0", rd_bal<0, true>},
	    {"dyn M192", rd_bal<192, true>},
	};
	for (const auto &x : vs) {
		CK(cudaFuncSetAttribute(x.fn, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM));
		if (x.cluster > 8)
			CK(cudaFuncSetAttribute(x.fn, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
	}
	for (int keys : {8192, 16384}) {
		kb.at(keys);
		const size_t bytes = kb.bytes;
		for (const auto &x : vs) {
			auto go = [&](int i, cudaStream_t s) {
				launch(x.fn, dim3(x.ranges, H), NW * 32, SMEM, x.cluster, s, kb.k(i), kb.v(i),
				       keys, out);
			};
			const double a = median_us(F_CLEAN, st, [&] { go(0, st); }, samples);
			const double b = median_graph_us(st, go, 32, samples);
			printf("keys %5d %5.1f MB  %-11s single %7.2f us %6.0f GB/s   graph %7.2f us "
			       "%6.0f GB/s\n",
			       keys, bytes / 1e6, x.name, a, bytes / a / 1e3, b, bytes / b / 1e3);
			fflush(stdout);
		}
	}
	return 0;
}
