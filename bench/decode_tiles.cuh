/* decode_tiles.cuh - the loads of batch-1 decode that bench/decode_read.cu
 * and bench/decode_ceiling.cu time: K and V of 8 KV heads x D 128, BSHD (a
 * head's key rows are 256 bytes, 2 KB apart), one CTA per (key range, KV
 * head), NW warps each streaming its own ST-stage ring of 16-key tiles
 * (8 KB of K + V) by 16-byte cp.async into the swizzled layout of
 * kernels/cuda/flash_decode.cu's warp_load. A header of those programs
 * only, not part of the build. */
#ifndef FABENCH_BENCH_DECODE_TILES_CUH
#define FABENCH_BENCH_DECODE_TILES_CUH

#include <algorithm>
#include <stdint.h>
#include <stdio.h>

#include "timing.cuh"

/* KV heads, head size, bytes of a head's key row, elements of a key row of all heads */
constexpr int H = 8, D = 128, ROWB = 256, HSTR = H * D;

__device__ __forceinline__ uint32_t saddr(const void *p)
{
	return (uint32_t)__cvta_generic_to_shared(p);
}

/* The copies of the 16-key tile at key n0 of KV head hd (K, then V) into the
 * 8 KB stage at shared address a, by lane `lane` of a warp: 16-byte
 * cp.async into the swizzled layout of flash_decode.cu's warp_load. PF > 0
 * adds the L2 prefetch-size hint .L2::PFB to every copy (a key row of a
 * head is 256 aligned bytes). */
template <int PF = 0>
__device__ __forceinline__ void load_tile(uint32_t a, const uint16_t *k, const uint16_t *v, int hd,
					  int n0, int lane)
{
	for (int kv = 0; kv < 2; kv++) {
		const uint16_t *base = (kv ? v : k) + (size_t)n0 * HSTR + hd * D;
		for (int ps = 0; ps < 4; ps++) {
			const int row = (lane >> 3) + 4 * ps, c8 = lane & 7;
			for (int pn = 0; pn < 2; pn++) {
				const uint16_t *src = base + (size_t)row * HSTR + pn * 64 + c8 * 8;
				const uint32_t dst =
				    a + kv * 4096 + pn * 2048 + (row * 8 + (c8 ^ (row & 7))) * 16;
				if constexpr (PF == 256)
					asm volatile("cp.async.cg.shared.global.L2::256B "
						     "[%0], [%1], 16;" ::"r"(dst),
						     "l"(src));
				else if constexpr (PF == 128)
					asm volatile("cp.async.cg.shared.global.L2::128B "
						     "[%0], [%1], 16;" ::"r"(dst),
						     "l"(src));
				else
					asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(dst),
						     "l"(src));
			}
		}
	}
}

/* This warp's tiles of key range r of R (KV head blockIdx.y) through its
 * ring at the start of sm: tile j is key tile r * per + warp + j NW, with
 * ST - 1 tiles in flight; consume(stage) runs once each tile has landed
 * in its 8 KB stage (K, then V). PF: load_tile's. IL > 0
 * deals the tiles to the R CTAs in chunks of IL tiles, round robin, instead
 * of a contiguous range each: every CTA then reads near the others. */
template <int NW, int ST, class F, int PF = 0, int IL = 0>
__device__ __forceinline__ void stream_tiles(unsigned char *sm, const uint16_t *k,
					     const uint16_t *v, int keys, int R, F consume)
{
	const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, hd = blockIdx.y,
		  r = blockIdx.x % R;
	const int tiles = keys / 16, per = tiles / R, t0 = r * per;
	const int nt = (per - warp + NW - 1) / NW;
	const uint32_t ring = saddr(sm) + warp * ST * 8192;
	auto load = [&](int j) {
		const int u = warp + j * NW; /* the CTA's u-th tile */
		const int n0 = (IL ? ((u / (IL ? IL : 1)) * R + r) * IL + u % (IL ? IL : 1) : t0 + u) * 16;
		load_tile<PF>(ring + (j % ST) * 8192, k, v, hd, n0, lane);
	};
	for (int s = 0; s < ST - 1; s++) {
		if (s < nt)
			load(s);
		asm volatile("cp.async.commit_group;");
	}
	for (int j = 0; j < nt; j++) {
		asm volatile("cp.async.wait_group %0;" ::"n"(ST - 2));
		__syncwarp();
		if (j + ST - 1 < nt)
			load(j + ST - 1);
		asm volatile("cp.async.commit_group;");
		consume(reinterpret_cast<const uint4 *>(sm + warp * ST * 8192 + (j % ST) * 8192));
	}
}

/* The address in the shared memory of cluster rank `rank` of this CTA's
 * shared address a. */
__device__ __forceinline__ uint32_t cluster_map(uint32_t a, uint32_t rank)
{
	uint32_t m;
	asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(m) : "r"(a), "r"(rank));
	return m;
}

/* The least merge of a key split inside a cluster of R CTAs (this one rank
 * r, of KV head hd): each thread stores its float2 `mine` of the CTA's
 * PART-float2 partial into the inbox of the CTA that owns that slice
 * (st.shared::cluster), one cluster barrier, then each CTA sums its slice
 * over the R sources and stores it to out. The caller has passed a CTA
 * barrier and waited for its peers to start. */
template <int PART>
__device__ __forceinline__ void dsmem_merge(float2 mine, float2 *inbox, int R, int r, int hd,
					    float2 *out)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
	const int tid = threadIdx.x;
	const int slice = PART / R, owner = tid / slice, idx = tid % slice;
	if (owner < R) {
		const uint32_t m = cluster_map(saddr(&inbox[r * slice + idx]), owner);
		asm volatile("st.shared::cluster.v2.f32 [%0], {%1, %2};" ::"r"(m), "f"(mine.x),
			     "f"(mine.y)
			     : "memory");
	}
	asm volatile("barrier.cluster.arrive.release.aligned;\n\t"
		     "barrier.cluster.wait.acquire.aligned;" ::: "memory");
	if (tid < slice) {
		float2 s = make_float2(0.f, 0.f);
		for (int q = 0; q < R; q++) {
			s.x += inbox[q * slice + tid].x;
			s.y += inbox[q * slice + tid].y;
		}
		out[hd * PART + r * slice + tid] = s;
	}
#endif
}

/* Launches with programmatic stream serialization (PDL) when set: the
 * kernel may start before the one before it ends, and must wait for it
 * (griddepcontrol.wait) before it reads anything. */
static bool g_pdl = false;

/* Launches fn(args...) on grid x `threads` threads with smem bytes of dynamic
 * shared memory on stream s, in clusters of `cluster` CTAs along x when
 * cluster > 0. */
template <class F, class... A>
static void launch(F fn, dim3 grid, int threads, int smem, int cluster, cudaStream_t s,
		   A... args)
{
	cudaLaunchConfig_t c = {};
	cudaLaunchAttribute at[2];
	c.gridDim = grid;
	c.blockDim = dim3(threads);
	c.dynamicSmemBytes = smem;
	c.stream = s;
	c.attrs = at;
	if (cluster > 0) {
		at[c.numAttrs].id = cudaLaunchAttributeClusterDimension;
		at[c.numAttrs].val.clusterDim.x = cluster;
		at[c.numAttrs].val.clusterDim.y = 1;
		at[c.numAttrs].val.clusterDim.z = 1;
		c.numAttrs++;
	}
	if (g_pdl) {
		at[c.numAttrs].id = cudaLaunchAttributeProgrammaticStreamSerialization;
		at[c.numAttrs].val.programmaticStreamSerializationAllowed = 1;
		c.numAttrs++;
	}
	CK(cudaLaunchKernelEx(&c, fn, args...));
}

/* The host side of those programs: the device's SMs and L2, the harness's
 * flush buffer (timing.cuh), a stream, a 1 GB buffer for copies of K and V,
 * and the header line; then, per key count, copy i of K and V (the copies
 * 3x the L2 apart, at most 32, so a graph's launches miss the L2). */
struct kv_bench {
	int sms = 0, l2 = 0;
	cudaStream_t st;
	char *buf = nullptr;
	static constexpr size_t MAXB = (size_t)1 << 30;
	size_t half = 0, bytes = 0;
	int sets = 1;

	explicit kv_bench(int samples)
	{
		cudaDeviceProp prop;
		CK(cudaGetDeviceProperties(&prop, 0));
		CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
		CK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0));
		g_flush_bytes = std::max((size_t)4 * l2, (size_t)64 << 20);
		CK(cudaMalloc(&g_flush, g_flush_bytes));
		CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
		printf("# %s, %d SMs, L2 %d MB, %d samples, clean flush, median\n", prop.name,
		       sms, l2 >> 20, samples);
		CK(cudaMalloc(&buf, MAXB));
		CK(cudaMemset(buf, 0x3c, MAXB));
	}
	/* K and V of `keys` keys from now on */
	void at(int keys)
	{
		half = (size_t)keys * HSTR * 2;
		bytes = 2 * half;
		const size_t want = (3 * (size_t)l2 + bytes - 1) / bytes;
		sets = (int)std::min(std::min(want, MAXB / bytes), (size_t)32);
	}
	const uint16_t *k(int i) const
	{
		return (const uint16_t *)(buf + (size_t)(i % sets) * bytes);
	}
	const uint16_t *v(int i) const
	{
		return (const uint16_t *)(buf + (size_t)(i % sets) * bytes + half);
	}
};

#endif /* FABENCH_BENCH_DECODE_TILES_CUH */
