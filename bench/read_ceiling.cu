/* read_ceiling.cu - the ceiling of a decode call under fabench's own timing:
 * a plain streaming read of a decode case's K/V byte count, timed the way
 * `fabench run` times a cold case (harness/run/runner.c one_sample: flush
 * the L2, record an event, one launch, record an event; the median of the
 * samples), once per flush mode of kernels/common/fa_backend_gpu.h:
 *
 *   write  cudaMemsetAsync of max(4 x L2, 64 MB) (fabench's flush up to now:
 *          it leaves an L2 of dirty lines, written back during the next kernel)
 *   clean  the same memset, then the buffer read back (the L2 ends clean)
 *   hot    no flush (the data may sit in the L2 when it fits)
 *
 * and an empty kernel the same way (the floor of one timed launch); then
 * `graph`: `fabench run --graph 32`'s timing with the clean flush (one
 * flush, then a CUDA graph of 32 launches that cycle over as many copies
 * of the bytes as put 3x the L2 between two reads of one copy, the time
 * divided by 32: harness/run/runner.c cold_graph). A standalone program,
 * not part of the build: on a CUDA machine
 *
 *   nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a \
 *        -o /tmp/read_ceiling bench/read_ceiling.cu && /tmp/read_ceiling
 *
 * prints one line per (bytes, read kernel shape, flush mode): median us and
 * GB/s. Bytes are those of decode.yaml's q_len 1 cases (2 x batch x 8 KV
 * heads x keys x 128 x 2 bytes). Two read shapes: `grid` (SMs x k CTAs of
 * 512 threads, grid-stride 16-byte loads, 4 in flight per thread) and
 * `ranges` (the decode kernel's shape at batch 1: 128 CTAs of 128 threads,
 * each a contiguous range, 8 loads in flight per thread).
 */
#include <algorithm>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vector>

#include "timing.cuh"

/* CTA b reads chunk b of gridDim.x contiguous chunks */
template <int U>
__global__ void read_ranges(const uint4 *__restrict__ buf, size_t n, unsigned *sink)
{
	const size_t per = (n + gridDim.x - 1) / gridDim.x;
	const size_t lo = blockIdx.x * per, hi = lo + per < n ? lo + per : n;
	unsigned acc = 0;
	size_t i = lo + threadIdx.x;
	for (; i + (U - 1) * blockDim.x < hi; i += U * blockDim.x) {
		uint4 v[U];
#pragma unroll
		for (int u = 0; u < U; u++)
			v[u] = __ldcs(buf + i + u * blockDim.x);
#pragma unroll
		for (int u = 0; u < U; u++)
			acc ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
	}
	for (; i < hi; i += blockDim.x) {
		const uint4 v = __ldcs(buf + i);
		acc ^= v.x ^ v.y ^ v.z ^ v.w;
	}
	if (acc == 0x9e3779b9u)
		*sink = acc;
}

__global__ void empty_kernel(unsigned *sink)
{
	if (sink == NULL)
		*sink = 1;
}

int main(int argc, char **argv)
{
	const int samples = argc > 1 ? atoi(argv[1]) : 100;
	int dev = 0, sms = 0, l2 = 0;
	cudaDeviceProp prop;
	CK(cudaGetDevice(&dev));
	CK(cudaGetDeviceProperties(&prop, dev));
	CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
	CK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev));
	g_flush_bytes = std::max((size_t)4 * (size_t)l2, (size_t)64 << 20);
	CK(cudaMalloc(&g_flush, g_flush_bytes));
	cudaStream_t st;
	CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
	printf("# %s, %d SMs, L2 %d MB, flush buffer %zu MB, %d samples, median\n", prop.name,
	       sms, l2 >> 20, g_flush_bytes >> 20, samples);

	const size_t max_bytes = (size_t)2 * 8 * 8 * 32768 * 128 * 2; /* batch 8, 32k */
	void *buf;
	unsigned *sink;
	CK(cudaMalloc(&buf, max_bytes));
	CK(cudaMalloc(&sink, 64));
	CK(cudaMemset(buf, 1, max_bytes));
	const uint4 *b4 = static_cast<const uint4 *>(buf);

	for (int mode = 0; mode < 3; mode++)
		printf("empty kernel  flush %-5s  %7.2f us\n", flush_names[mode],
		       median_us(mode, st, [&] { empty_kernel<<<1, 32, 0, st>>>(sink); }, samples));

	const struct {
		int batch, keys;
	} sizes[] = {{1, 8192}, {1, 16384}, {1, 32768}, {8, 8192}, {8, 32768}};
	for (const auto &sz : sizes) {
		const size_t bytes = (size_t)2 * sz.batch * 8 * sz.keys * 128 * 2, n = bytes / 16;
		for (int mode = 0; mode < 3; mode++) {
			char what[64];
			double us;
			for (int k : {1, 2, 4}) {
				snprintf(what, sizeof what, "grid %dx%d", sms * k, 512);
				us = median_us(mode, st, [&] {
					read_grid<4><<<sms * k, 512, 0, st>>>(b4, n, sink);
				}, samples);
				printf("batch %d keys %5d  %6.1f MB  %-16s flush %-5s  %7.2f us  %6.0f GB/s\n",
				       sz.batch, sz.keys, bytes / 1e6, what, flush_names[mode], us,
				       bytes / us / 1e3);
			}
			for (int ctas : {128, 256}) {
				snprintf(what, sizeof what, "ranges %dx128", ctas);
				us = median_us(mode, st, [&] {
					read_ranges<8><<<ctas, 128, 0, st>>>(b4, n, sink);
				}, samples);
				printf("batch %d keys %5d  %6.1f MB  %-16s flush %-5s  %7.2f us  %6.0f GB/s\n",
				       sz.batch, sz.keys, bytes / 1e6, what, flush_names[mode], us,
				       bytes / us / 1e3);
			}
		}
	}
	/* graphs of 32 launches over copies (offsets into buf) */
	printf("empty kernel  graph of 32  %7.2f us\n",
	       median_graph_us(st, [&](int, cudaStream_t s) { empty_kernel<<<1, 32, 0, s>>>(sink); },
			       32, samples));
	for (const auto &sz : sizes) {
		const size_t bytes = (size_t)2 * sz.batch * 8 * sz.keys * 128 * 2, n = bytes / 16;
		const size_t want = (3 * (size_t)l2 + bytes - 1) / bytes;
		const int sets = (int)std::min(std::min(want, max_bytes / bytes), (size_t)32);
		for (int k : {1, 2}) {
			double us = median_graph_us(st, [&](int i, cudaStream_t s) {
				read_grid<4><<<sms * k, 512, 0, s>>>(b4 + (size_t)(i % sets) * n, n, sink);
			}, 32, samples);
			printf("batch %d keys %5d  %6.1f MB  grid %dx512 graph of 32 over %d copies  %7.2f us  %6.0f GB/s\n",
			       sz.batch, sz.keys, bytes / 1e6, sms * k, sets, us, bytes / us / 1e3);
		}
	}
	CK(cudaFree(buf));
	CK(cudaFree(sink));
	CK(cudaFree(g_flush));
	return 0;
}
