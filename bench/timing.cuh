/* timing.cuh - what the standalone programs of bench/ (read_ceiling.cu,
 * decode_read.cu) share: the error check, a grid-stride streaming read,
 * the L2 flushes of the harness (kernels/common/fa_backend_gpu.h) and
 * `fabench run`'s two timings of a cold case: one launch between two
 * events after a flush (median_us), and a CUDA graph of n launches after
 * one clean flush (median_graph_us). A header of those programs only, not
 * part of the build. main() sets g_flush and g_flush_bytes. */
#ifndef FABENCH_BENCH_TIMING_CUH
#define FABENCH_BENCH_TIMING_CUH

#include <algorithm>
#include <stdio.h>
#include <stdlib.h>
#include <vector>

#include "../kernels/common/fa_gpu_flush.cuh" /* the harness's clean flush */

#define CK(x)                                                                      \
	do {                                                                       \
		cudaError_t e_ = (x);                                              \
		if (e_ != cudaSuccess) {                                           \
			fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__,         \
				cudaGetErrorString(e_));                           \
			exit(1);                                                   \
		}                                                                  \
	} while (0)

/* the loads stay: a store that never happens depends on them */
template <int U>
__global__ void read_grid(const uint4 *__restrict__ buf, size_t n, unsigned *sink)
{
	unsigned acc = 0;
	const size_t stride = (size_t)gridDim.x * blockDim.x;
	size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
	for (; i + (U - 1) * stride < n; i += U * stride) {
		uint4 v[U];
#pragma unroll
		for (int u = 0; u < U; u++)
			v[u] = __ldcs(buf + i + u * stride);
#pragma unroll
		for (int u = 0; u < U; u++)
			acc ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
	}
	for (; i < n; i += stride) {
		const uint4 v = __ldcs(buf + i);
		acc ^= v.x ^ v.y ^ v.z ^ v.w;
	}
	if (acc == 0x9e3779b9u)
		*sink = acc;
}


enum { F_WRITE, F_CLEAN, F_HOT };
static const char *const flush_names[] = {"write", "clean", "hot"};

static void *g_flush;
static size_t g_flush_bytes;
static unsigned g_count;

static void flush(int mode, cudaStream_t st)
{
	if (mode == F_HOT)
		return;
	CK(cudaMemsetAsync(g_flush, (int)(g_count++ & 0xffu), g_flush_bytes, st));
	if (mode == F_CLEAN)
		fa_gpu_flush_read_kernel<<<1024, 512, 0, st>>>(static_cast<const uint4 *>(g_flush),
						 g_flush_bytes / 16, static_cast<unsigned *>(g_flush));
}

template <class L>
static double median_us(int mode, cudaStream_t st, L launch, int samples)
{
	cudaEvent_t e0, e1;
	CK(cudaEventCreate(&e0));
	CK(cudaEventCreate(&e1));
	std::vector<float> t;
	for (int s = 0; s < samples + 3; s++) {
		flush(mode, st);
		CK(cudaEventRecord(e0, st));
		launch();
		CK(cudaGetLastError());
		CK(cudaEventRecord(e1, st));
		CK(cudaEventSynchronize(e1));
		float ms;
		CK(cudaEventElapsedTime(&ms, e0, e1));
		if (s >= 3) /* warm-up */
			t.push_back(ms);
	}
	CK(cudaEventDestroy(e0));
	CK(cudaEventDestroy(e1));
	std::sort(t.begin(), t.end());
	return 1000.0 * t[t.size() / 2];
}

/* A graph of n launches captured on st (launch(i, st) queues the i-th). */
template <class L> static cudaGraphExec_t capture_graph(cudaStream_t st, L launch, int n)
{
	cudaGraph_t g;
	cudaGraphExec_t ge;
	CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
	for (int i = 0; i < n; i++)
		launch(i, st);
	CK(cudaStreamEndCapture(st, &g));
	CK(cudaGraphInstantiate(&ge, g, 0));
	CK(cudaGraphDestroy(g));
	return ge;
}

/* The clean flush, then that graph, timed as one sample; the median of the
 * samples per launch. */
template <class L>
static double median_graph_us(cudaStream_t st, L launch, int n, int samples)
{
	const cudaGraphExec_t ge = capture_graph(st, launch, n);
	const double us = median_us(F_CLEAN, st, [&] { CK(cudaGraphLaunch(ge, st)); }, samples);
	CK(cudaGraphExecDestroy(ge));
	return us / n;
}

#endif /* FABENCH_BENCH_TIMING_CUH */
