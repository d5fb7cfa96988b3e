/* decode_ceiling.cu - the fastest batch-1 decode that splits the keys could
 * be, at 8 KV heads x D 128 (the shape of suites/decode.yaml's batch-1
 * cases): the loads of the decode path of cuda_flash_mma
 * (kernels/cuda/flash_decode.cu: one CTA per (key range, KV head), 8 warps
 * each streaming its own 3-stage ring of 16-key tiles by 16-byte cp.async,
 * as bench/decode_read.cu's rd_cpasync) with no math, followed by the
 * least a merge of the ranges has to do:
 *
 *   none      no merge (the loads alone)
 *   cluster   launched as clusters of R CTAs (one per KV head), no merge:
 *             what the cluster launch itself costs
 *   dsmem     clusters of R: a CTA barrier, then every thread stores 8
 *             bytes of the CTA's 2 KB partial into the shared memory of
 *             the CTA owning that slice (st.shared::cluster), a cluster
 *             barrier, and each CTA sums its slice over the R sources and
 *             stores 256 bytes of output: the tree's merge with no weights
 *   last      no cluster: each CTA writes its 2 KB partial to a workspace,
 *             a fence, an arrival counter per KV head; the last CTA sums
 *             the R partials and stores the 2 KB output
 *   smem      none, but each lane also reads the whole tile back from
 *             shared memory (8 KB a warp a tile, what ldmatrix of K and V
 *             reads): whether shared-memory reads slow the stream
 *   ldgN      none, but the tiles go straight into registers by 128-bit
 *             loads, N tiles in flight a warp (no shared memory, nothing
 *             to read back); `ldg3 dsm` adds the dsmem merge
 *
 * Timed as decode_read.cu times (a clean flush, then one launch between
 * two events; and a CUDA graph of 32 launches over copies of the bytes 3x
 * the L2 apart), median of the samples. A standalone program, not part of
 * the build: on a CUDA machine
 *
 *   nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a \
 *        -o /tmp/decode_ceiling bench/decode_ceiling.cu && /tmp/decode_ceiling [samples]
 *
 * prints one line per (keys, variant). docs/BENCHMARKS.md (2026-12-02,
 * "(c)") has the H200's figures.
 */
#include <algorithm>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <vector>

#include "decode_tiles.cuh"

/* the partial of one CTA: 4 rows x D (decode_tiles.cuh's 128) floats as 256 float2 */
constexpr int PART = 256;

enum { T_NONE, T_DSMEM, T_LAST, T_SMEM };

/* The same tiles as stream_tiles (decode_tiles.cuh), loaded into registers
 * instead (the `ldg` variants): each lane loads 16 x 16 bytes of a tile
 * (K, then V) with 128-bit loads, NB tiles in flight in NB register
 * buffers; consume(buffer) runs when a tile is wanted. */
template <int NW, int NB, class F>
__device__ __forceinline__ void stream_tiles_ldg(const uint16_t *k, const uint16_t *v, int keys,
						 int R, F consume)
{
	const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, hd = blockIdx.y,
		  r = blockIdx.x % R;
	const int tiles = keys / 16, per = tiles / R, t0 = r * per;
	const int nt = (per - warp + NW - 1) / NW;
	uint4 b[NB][16];
	auto load = [&](uint4(&d)[16], int j) {
		const int n0 = (t0 + warp + j * NW) * 16;
#pragma unroll
		for (int u = 0; u < 16; u++) {
			const int c = lane + 32 * (u & 7), row = c >> 4, col = c & 15;
			d[u] = __ldcs(reinterpret_cast<const uint4 *>((u >> 3 ? v : k) +
								      (size_t)(n0 + row) * HSTR +
								      hd * D + col * 8));
		}
	};
#pragma unroll
	for (int s = 0; s < NB; s++)
		if (s < nt)
			load(b[s], s);
	for (int j = 0; j < nt; j += NB) {
#pragma unroll
		for (int s = 0; s < NB; s++) {
			if (j + s < nt) {
				consume(b[s]);
				if (j + s + NB < nt)
					load(b[s], j + s + NB);
			}
		}
	}
}

template <int NW, int ST, int TAIL, int LDG = 0, int PF = 0, int IL = 0>
__global__ void __launch_bounds__(NW * 32, 1)
    rd_tail(const uint16_t *k, const uint16_t *v, int keys, int R, float2 *out, float2 *ws,
	    unsigned *cnt)
{
	extern __shared__ __align__(1024) unsigned char sm[];
	__shared__ float2 inbox[16 * PART / 8]; /* R sources x this CTA's slice */
	__shared__ int s_last;
	const int tid = threadIdx.x, lane = tid & 31, hd = blockIdx.y, r = blockIdx.x % R;
	if (TAIL == T_DSMEM)
		asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
	unsigned acc = 0;
	if constexpr (LDG > 0) {
		stream_tiles_ldg<NW, LDG>(k, v, keys, R, [&](const uint4(&t)[16]) {
#pragma unroll
			for (int u = 0; u < 16; u++)
				acc ^= t[u].x ^ t[u].y ^ t[u].z ^ t[u].w;
		});
	} else {
		auto acc_of = [&](const uint4 *t) {
			constexpr int U = TAIL == T_SMEM ? 16 : 4, STEP = TAIL == T_SMEM ? 1 : 4;
#pragma unroll
			for (int u = 0; u < U; u++) {
				uint4 x = t[lane + 32 * u * STEP];
				acc ^= x.x ^ x.w;
			}
		};
		stream_tiles<NW, ST, decltype(acc_of), PF, IL>(sm, k, v, keys, R, acc_of);
	}
	/* the partial: a value per thread that depends on its loads */
	const float2 mine = make_float2(__uint_as_float((acc & 0x007fffffu) | 0x3f800000u),
					(float)(tid + r));
	if (TAIL == T_DSMEM) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
		__syncthreads(); /* the warps' partials, as the tree's one CTA barrier */
		asm volatile("barrier.cluster.wait.aligned;" ::: "memory"); /* peers started */
		dsmem_merge<PART>(mine, inbox, R, r, hd, out);
#endif
	} else if (TAIL == T_LAST) {
		ws[((size_t)hd * R + r) * PART + tid] = mine;
		__threadfence();
		__syncthreads();
		if (tid == 0)
			s_last = atomicAdd(&cnt[hd], 1u) == (unsigned)R - 1;
		__syncthreads();
		if (s_last) {
			__threadfence();
			float2 s = make_float2(0.f, 0.f);
			for (int q = 0; q < R; q++) {
				const float2 x = __ldcg(&ws[((size_t)hd * R + q) * PART + tid]);
				s.x += x.x;
				s.y += x.y;
			}
			out[hd * PART + tid] = s;
			if (tid == 0)
				cnt[hd] = 0;
		}
	} else if (acc == 0x9e3779b9u) {
		out[0] = mine;
	}
}

typedef void (*tail_fn)(const uint16_t *, const uint16_t *, int, int, float2 *, float2 *,
			unsigned *);

int main(int argc, char **argv)
{
	const int samples = argc > 1 ? atoi(argv[1]) : 30;
	kv_bench kb(samples);
	float2 *out, *ws;
	unsigned *cnt;
	CK(cudaMalloc(&out, H * PART * sizeof(float2)));
	CK(cudaMalloc(&ws, (size_t)H * 16 * PART * sizeof(float2)));
	CK(cudaMalloc(&cnt, H * sizeof(unsigned)));
	CK(cudaMemset(cnt, 0, H * sizeof(unsigned)));
	const cudaStream_t st = kb.st;
	constexpr int SMEM = 8 * 3 * 8192;
	const struct {
		const char *name;
		tail_fn fn;
		int R, cluster, ldg; /* ldg: the tiles go to registers, no shared memory */
	} vs[] = {
	    {"none", rd_tail<8, 3, T_NONE>, 8, 0, 0},
	    {"cluster", rd_tail<8, 3, T_NONE>, 8, 1, 0},
	    {"dsmem", rd_tail<8, 3, T_DSMEM>, 8, 1, 0},
	    {"last", rd_tail<8, 3, T_LAST>, 8, 0, 0},
	    {"smem", rd_tail<8, 3, T_SMEM>, 8, 0, 0},
	    {"none", rd_tail<8, 3, T_NONE>, 16, 0, 0},
	    {"last", rd_tail<8, 3, T_LAST>, 16, 0, 0},
	    {"smem", rd_tail<8, 3, T_SMEM>, 16, 0, 0},
	    {"ldg2", rd_tail<8, 3, T_NONE, 2>, 8, 0, 1},
	    {"ldg3", rd_tail<8, 3, T_NONE, 3>, 8, 0, 1},
	    {"ldg3 dsm", rd_tail<8, 3, T_DSMEM, 3>, 8, 1, 1},
	    {"ldg2", rd_tail<8, 3, T_NONE, 2>, 16, 0, 1},
	    {"ldg3", rd_tail<8, 3, T_NONE, 3>, 16, 0, 1},
	    {"none 128B", rd_tail<8, 3, T_NONE, 0, 128>, 8, 0, 0},
	    {"none 256B", rd_tail<8, 3, T_NONE, 0, 256>, 8, 0, 0},
	    {"dsmem 256B", rd_tail<8, 3, T_DSMEM, 0, 256>, 8, 1, 0},
	    {"smem 256B", rd_tail<8, 3, T_SMEM, 0, 256>, 8, 0, 0},
	    {"none 256B", rd_tail<8, 3, T_NONE, 0, 256>, 16, 0, 0},
	    {"none il1", rd_tail<8, 3, T_NONE, 0, 0, 1>, 8, 0, 0},
	    {"none il8", rd_tail<8, 3, T_NONE, 0, 0, 8>, 8, 0, 0},
	    {"dsmem il1", rd_tail<8, 3, T_DSMEM, 0, 0, 1>, 8, 1, 0},
	    {"dsmem il8", rd_tail<8, 3, T_DSMEM, 0, 0, 8>, 8, 1, 0},
	    {"none il1", rd_tail<8, 3, T_NONE, 0, 0, 1>, 16, 0, 0},
	};
	for (const auto &x : vs)
		CK(cudaFuncSetAttribute(x.fn, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM));
	for (int keys : {8192, 16384}) {
		kb.at(keys);
		const size_t bytes = kb.bytes;
		auto kp = [&](int i) { return kb.k(i); };
		auto vp = [&](int i) { return kb.v(i); };
		for (const auto &x : vs) {
			auto go = [&](int i, cudaStream_t s) {
				launch(x.fn, dim3(x.R, H), 256, x.ldg ? 0 : SMEM, x.cluster ? x.R : 0, s,
				       kp(i), vp(i), keys, x.R, out, ws, cnt);
			};
			const double a = median_us(F_CLEAN, st, [&] { go(0, st); }, samples);
			const double b = median_graph_us(st, go, 32, samples);
			printf("keys %5d %5.1f MB  %-10s R%-2d  single %7.2f us %6.0f GB/s   graph %7.2f "
			       "us %6.0f GB/s\n",
			       keys, bytes / 1e6, x.name, x.R, a, bytes / a / 1e3, b, bytes / b / 1e3);
			fflush(stdout);
		}
	}
	return 0;
}
