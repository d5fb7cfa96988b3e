/* decode_read.cu - the loads of batch-1 decode alone, the way the decode
 * path of cuda_flash_mma issues them (kernels/cuda/flash_decode.cu): K and
 * V of 8 KV heads x D 128, BSHD (a head's key rows are 256 bytes, 2 KB
 * apart), one CTA per (key range, KV head), NW warps each streaming its
 * own ring of 16-key tiles (8 KB of K + V). Two ways to copy a tile:
 *
 *   cpasync  16-byte cp.async into the swizzled tile (the kernel's copies)
 *   bulk     one cp.async.bulk (the TMA engine) per 256-byte row onto the
 *            stage's mbarrier, rows padded to 272 bytes
 *
 * No math and no merge: each lane reads 64 bytes of each tile. Timed as
 * `fabench run` times a cold case (a clean flush, then one launch between
 * two events; the median) and as `--graph 32` (one flush, a CUDA graph of
 * 32 launches over copies of the bytes, 3x the L2 apart). A standalone
 * program, not part of the build: on a CUDA machine
 *
 *   nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a \
 *        -o /tmp/decode_read bench/decode_read.cu && /tmp/decode_read [samples]
 *
 * prints one line per (keys, shape): single and graph us and GB/s, beside
 * a grid-stride read of the same bytes. docs/BENCHMARKS.md (2026-11-27,
 * night) has the H100's figures.
 */
#include <algorithm>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <vector>

#include "decode_tiles.cuh"

template <int NW, int ST>
__global__ void __launch_bounds__(NW * 32, 1)
    rd_cpasync(const uint16_t *k, const uint16_t *v, int keys, int R, unsigned *sink)
{
	extern __shared__ __align__(1024) unsigned char sm[];
	const int lane = threadIdx.x & 31;
	unsigned acc = 0;
	stream_tiles<NW, ST>(sm, k, v, keys, R, [&](const uint4 *t) {
		for (int u = 0; u < 4; u++) {
			uint4 x = t[lane + 32 * u * 4];
			acc ^= x.x ^ x.w;
		}
	});
	if (acc == 0x9e3779b9u)
		*sink = acc;
}

template <int NW, int ST>
__global__ void __launch_bounds__(NW * 32, 1)
    rd_bulk(const uint16_t *k, const uint16_t *v, int keys, int R, unsigned *sink)
{
	extern __shared__ __align__(1024) unsigned char sm[];
	constexpr int STAGE = 2 * 16 * (ROWB + 16); /* padded rows: 8704 B */
	__shared__ __align__(8) uint64_t bar[NW][ST];
	const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, hd = blockIdx.y,
		  r = blockIdx.x % R;
	const int tiles = keys / 16, per = tiles / R, t0 = r * per;
	const int nt = (per - warp + NW - 1) / NW;
	const uint32_t ring = saddr(sm) + warp * ST * STAGE;
	if (lane < ST)
		asm volatile(
		    "mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(saddr(&bar[warp][lane])));
	asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
	__syncwarp();
	auto load = [&](int j) {
		const int n0 = (t0 + warp + j * NW) * 16;
		const int s = j % ST;
		const uint32_t b = saddr(&bar[warp][s]);
		if (lane == 0)
			asm volatile(
			    "mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(b),
			    "r"(32 * ROWB)
			    : "memory");
		__syncwarp();
		const int kv = lane >> 4, row = lane & 15;
		const uint16_t *src = (kv ? v : k) + (size_t)(n0 + row) * HSTR + hd * D;
		const uint32_t dst = ring + s * STAGE + kv * 16 * (ROWB + 16) + row * (ROWB + 16);
		asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes "
			     "[%0], [%1], %2, [%3];" ::"r"(dst),
			     "l"(src), "r"(ROWB), "r"(b)
			     : "memory");
	};
	for (int s = 0; s < ST && s < nt; s++)
		load(s);
	unsigned acc = 0;
	for (int j = 0; j < nt; j++) {
		const int s = j % ST;
		const uint32_t b = saddr(&bar[warp][s]), par = (j / ST) & 1;
		asm volatile("{\n .reg .pred p;\n W: mbarrier.try_wait.parity.shared::cta.b64 p, "
			     "[%0], %1;\n @!p bra W;\n}" ::"r"(b),
			     "r"(par)
			     : "memory");
		const uint4 *t =
		    reinterpret_cast<const uint4 *>(sm + warp * ST * STAGE + s * STAGE);
		for (int u = 0; u < 4; u++) {
			uint4 x = t[lane + 32 * u * 4];
			acc ^= x.x ^ x.w;
		}
		__syncwarp();
		if (j + ST < nt)
			load(j + ST);
	}
	if (acc == 0x9e3779b9u)
		*sink = acc;
}

/* the read kernels' shared signature, and the shapes timed */
typedef void (*read_fn)(const uint16_t *, const uint16_t *, int, int, unsigned *);
static const struct {
	const char *name;
	read_fn fn;
	int warps, smem;
} shapes[] = {
    {"cpasync 8w x3", rd_cpasync<8, 3>, 8, 8 * 3 * 8192},
    {"bulk 8w x3", rd_bulk<8, 3>, 8, 8 * 3 * 8704},
    {"bulk 8w x2", rd_bulk<8, 2>, 8, 8 * 2 * 8704},
    {"bulk 8w x1", rd_bulk<8, 1>, 8, 8 * 1 * 8704},
    {"bulk 4w x5", rd_bulk<4, 5>, 4, 4 * 5 * 8704},
    {"bulk 4w x2", rd_bulk<4, 2>, 4, 4 * 2 * 8704},
};

int main(int argc, char **argv)
{
	const int samples = argc > 1 ? atoi(argv[1]) : 50;
	kv_bench kb(samples);
	const int sms = kb.sms;
	const cudaStream_t st = kb.st;
	unsigned *g_sink; /* the read kernels' never-taken store */
	CK(cudaMalloc(&g_sink, 64));
	for (const auto &sh : shapes)
		CK(cudaFuncSetAttribute(sh.fn, cudaFuncAttributeMaxDynamicSharedMemorySize, sh.smem));
	for (int keys : {8192, 16384, 32768}) {
		kb.at(keys);
		const size_t bytes = kb.bytes;
		auto kp = [&](int i) { return kb.k(i); };
		auto vp = [&](int i) { return kb.v(i); };
		auto report = [&](const char *what, double us1, double usg) {
			printf("keys %5d %5.1f MB  %-26s single %7.2f us %6.0f GB/s   graph %7.2f "
			       "us %6.0f GB/s\n",
			       keys, bytes / 1e6, what, us1, bytes / us1 / 1e3, usg,
			       bytes / usg / 1e3);
		};
		{
			const size_t n = bytes / 16;
			const double a = median_us(F_CLEAN, st, [&] {
				read_grid<4><<<sms, 512, 0, st>>>((const uint4 *)kp(0), n, g_sink);
			}, samples);
			const double b = median_graph_us(st, [&](int i, cudaStream_t s) {
				read_grid<4><<<sms, 512, 0, s>>>((const uint4 *)kp(i), n, g_sink);
			}, 32, samples);
			report("grid SMSx512", a, b);
		}
		for (int R : {8, 16})
			for (const auto &sh : shapes) {
				char w[64];
				snprintf(w, sizeof w, "%s R%d", sh.name, R);
				const dim3 grid(R, H);
				const double a = median_us(F_CLEAN, st, [&] {
					sh.fn<<<grid, sh.warps * 32, sh.smem, st>>>(kp(0), vp(0), keys, R, g_sink);
				}, samples);
				const double b = median_graph_us(st, [&](int i, cudaStream_t s) {
					sh.fn<<<grid, sh.warps * 32, sh.smem, s>>>(kp(i), vp(i), keys, R, g_sink);
				}, 32, samples);
				report(w, a, b);
			}
	}
	return 0;
}
