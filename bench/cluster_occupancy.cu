/* cluster_occupancy.cu - how many thread-block clusters of each size the
 * GPU holds at once for a CTA of the decode path's shape (256 threads, one
 * CTA a SM with the 206976 bytes of shared memory of decode_ring 2, the
 * default at head size 128; two a SM with the 108672 bytes of decode_ring
 * 0). That is what kernels/common/fa_decode.h's fa_decode_cluster_splits
 * asks of the driver (cudaOccupancyMaxActiveClusters) before it merges a
 * launch's key ranges inside clusters: a launch of batch x KV heads
 * clusters runs in one wave only when that many are resident. A standalone
 * program, not part of the build: on a CUDA machine
 *
 *   nvcc -O2 -gencode arch=compute_90a,code=sm_90a \
 *        -o /tmp/cluster_occupancy bench/cluster_occupancy.cu && /tmp/cluster_occupancy
 *
 * prints one line per (shared memory, cluster size 1-16): the count, or the
 * driver's error. docs/BENCHMARKS.md (2026-12-02) has the H200's figures.
 */
#include <cuda_runtime.h>
#include <stdio.h>

/* A stand-in with the decode CTA's launch shape; its body does not matter
 * to the occupancy query. */
__global__ void shape(int *p)
{
	extern __shared__ int s[];
	s[threadIdx.x] = (int)threadIdx.x;
	__syncthreads();
	if (p)
		p[threadIdx.x] = s[255 - threadIdx.x];
}

int main()
{
	int sms = 0;
	cudaDeviceProp pr;
	if (cudaGetDeviceProperties(&pr, 0) != cudaSuccess ||
	    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0) != cudaSuccess) {
		fprintf(stderr, "cluster_occupancy: no CUDA device\n");
		return 1;
	}
	printf("%s, %d SMs\n", pr.name, sms);
	const int smem[2] = {206976, 108672}; /* decode_ring 2 and 0 at head size 128 */
	for (int m = 0; m < 2; ++m) {
		cudaError_t e = cudaFuncSetAttribute(shape, cudaFuncAttributeMaxDynamicSharedMemorySize,
						     smem[m]);
		if (e == cudaSuccess)
			e = cudaFuncSetAttribute(shape, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
		if (e != cudaSuccess) {
			printf("shared memory %d B: %s\n", smem[m], cudaGetErrorString(e));
			continue;
		}
		for (int c = 1; c <= 16; ++c) {
			cudaLaunchConfig_t cfg = {};
			cudaLaunchAttribute at;
			cfg.gridDim = dim3(1, 1, (unsigned)c);
			cfg.blockDim = dim3(256);
			cfg.dynamicSmemBytes = (size_t)smem[m];
			at.id = cudaLaunchAttributeClusterDimension;
			at.val.clusterDim.x = 1;
			at.val.clusterDim.y = 1;
			at.val.clusterDim.z = (unsigned)c;
			cfg.attrs = &at;
			cfg.numAttrs = 1;
			int n = 0;
			e = cudaOccupancyMaxActiveClusters(&n, shape, &cfg);
			if (e != cudaSuccess)
				printf("shared memory %6d B, clusters of %2d: %s\n", smem[m], c,
				       cudaGetErrorString(e));
			else
				printf("shared memory %6d B, clusters of %2d: %3d resident\n", smem[m], c, n);
			(void)cudaGetLastError();
		}
	}
	return 0;
}
