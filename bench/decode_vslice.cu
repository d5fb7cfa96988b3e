/* decode_vslice.cu - can batch-1 decode read V by column slices as fast as
 * by key ranges? The loads of kernels/cuda/flash_decode_wg.cu alone (8 KV
 * heads, head size 128, bf16, BSHD, batch 1), no math, no merge, two ways:
 *
 *   ranges   the kernel's: CTA (r, head) streams keys [r n/8, (r+1) n/8) of
 *            K, then of V, in 16 KB tiles (two 64 x 64 boxes)
 *   vsliceB  CTA (r, head) streams the same K range, then V's columns
 *            [16 r, 16 r + 16) of every key, in boxes of 16 columns x B
 *            keys (32-byte rows)
 *
 * A slice of V would let each CTA write 16 columns of the output from its
 * own registers after its last tile, with no exchange of partials at the
 * end (the exchange would move to the middle, after K: the scores).
 * One producer thread issues the boxes into a ring of ST stages; one
 * consumer warp waits for each stage and frees it. Timed as `fabench run
 * --graph 32` times a cold case (a clean flush, a CUDA graph of 32
 * launches over 8 copies of K and V, 3x the L2 apart), median of the
 * samples. A standalone program, not part of the build: on an sm_90a
 * machine
 *
 *   nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a \
 *        -o /tmp/decode_vslice bench/decode_vslice.cu -lcuda && /tmp/decode_vslice
 */
#include <cuda.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <vector>

#include "timing.cuh"

constexpr int H = 8, D = 128, COPIES = 8;

__device__ __forceinline__ void mbar_init(uint32_t b, int n)
{
	asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(b), "r"(n));
}
__device__ __forceinline__ void mbar_expect_tx(uint32_t b, int bytes)
{
	asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(b), "r"(bytes));
}
__device__ __forceinline__ void mbar_arrive(uint32_t b)
{
	asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(b));
}
__device__ __forceinline__ void mbar_wait(uint32_t b, uint32_t parity)
{
	uint32_t done;
	do
		asm volatile("{\n\t.reg .pred p;\n\tmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
			     "selp.u32 %0, 1, 0, p;\n\t}"
			     : "=r"(done)
			     : "r"(b), "r"(parity)
			     : "memory");
	while (!done);
}
__device__ __forceinline__ void tma3(uint32_t dst, const CUtensorMap *m, uint32_t bar, int c, int h, int k)
{
	asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes"
		     " [%0], [%1, {%2, %3, %4}], [%5];" ::"r"(dst),
		     "l"((uint64_t)m), "r"(c), "r"(h), "r"(k), "r"(bar)
		     : "memory");
}

/* SB = 0: V by key ranges as K; else V by slices in boxes of SB keys */
template <int SB, int ST, int KB>
__global__ void __launch_bounds__(64, 1)
    loads(const __grid_constant__ CUtensorMap km, const __grid_constant__ CUtensorMap vm,
	  const __grid_constant__ CUtensorMap vs, int keys, unsigned *sink)
{
	extern __shared__ __align__(1024) unsigned char smraw[];
	unsigned char *sm = smraw + ((1024 - ((unsigned)__cvta_generic_to_shared(smraw) & 1023)) & 1023); /* stays a shared pointer: LDS/STS */
	const uint32_t base = (uint32_t)__cvta_generic_to_shared(sm);
	constexpr int STAGE = KB * 256; /* KB keys x 128 columns */
	const uint32_t full = base + ST * STAGE, empty = full + 8 * ST;
	const int r = blockIdx.x, hd = blockIdx.y, tid = threadIdx.x;
	const int per = keys / gridDim.x, ktiles = per / KB;
	/* V: ktiles tiles of 16 KB (ranges), or keys / SB boxes of 32 SB bytes
	 * packed into 16 KB stages (16384 / (32 SB) boxes a stage) */
	constexpr int BPS = SB ? STAGE / (32 * SB) : 1;
	const int vt = SB ? keys / SB / BPS : ktiles, n = ktiles + vt;
	if (tid == 0) {
		for (int s = 0; s < ST; s++) {
			mbar_init(full + 8 * s, 1);
			mbar_init(empty + 8 * s, 1);
		}
		asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
	}
	__syncthreads();
	if (tid == 0) {
		for (int i = 0; i < n; i++) {
			const int s = i % ST;
			if (i >= ST)
				mbar_wait(empty + 8 * s, ((i / ST) - 1) & 1);
			mbar_expect_tx(full + 8 * s, STAGE);
			const uint32_t dst = base + s * STAGE;
			if (i < ktiles || !SB) {
				const CUtensorMap *m = i < ktiles ? &km : &vm;
				const int key = r * per + (i % ktiles) * KB;
				tma3(dst, m, full + 8 * s, 0, hd, key);
				tma3(dst + STAGE / 2, m, full + 8 * s, 64, hd, key);
			} else {
				const int j = i - ktiles;
				for (int x = 0; x < BPS; x++)
					tma3(dst + x * 32 * SB, &vs, full + 8 * s, 16 * r, hd, (j * BPS + x) * SB);
			}
		}
	} else if (tid == 32) {
		unsigned acc = 0;
		for (int i = 0; i < n; i++) {
			const int s = i % ST;
			mbar_wait(full + 8 * s, (i / ST) & 1);
			acc ^= *(volatile unsigned *)(sm + s * STAGE + 64 * (i & 63));
			mbar_arrive(empty + 8 * s);
		}
		if (acc == 0x9e3779b9u)
			*sink = acc;
	}
}

typedef CUresult (*encode_fn)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *,
			      const cuuint64_t *, const cuuint64_t *, const cuuint32_t *,
			      const cuuint32_t *, CUtensorMapInterleave, CUtensorMapSwizzle,
			      CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
static encode_fn g_encode;

static CUtensorMap map3(const void *p, int keys, int bc, int bk, CUtensorMapSwizzle sw)
{
	CUtensorMap m;
	const cuuint64_t dims[3] = {(cuuint64_t)D, (cuuint64_t)H, (cuuint64_t)keys};
	const cuuint64_t strides[2] = {(cuuint64_t)D * 2, (cuuint64_t)H * D * 2};
	const cuuint32_t box[3] = {(cuuint32_t)bc, 1, (cuuint32_t)bk}, es[3] = {1, 1, 1};
	if (g_encode(&m, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 3, (void *)p, dims, strides, box, es,
		     CU_TENSOR_MAP_INTERLEAVE_NONE, sw, CU_TENSOR_MAP_L2_PROMOTION_NONE,
		     CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) != CUDA_SUCCESS) {
		fprintf(stderr, "cuTensorMapEncodeTiled failed (box %d x %d)\n", bc, bk);
		exit(1);
	}
	return m;
}

int main(int argc, char **argv)
{
	const int samples = argc > 1 ? atoi(argv[1]) : 30;
	{
		void *p = nullptr;
		cudaDriverEntryPointQueryResult qr;
		CK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &qr));
		g_encode = (encode_fn)p;
	}
	int l2 = 0;
	CK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0));
	g_flush_bytes = std::max((size_t)4 * (size_t)l2, (size_t)64 << 20);
	CK(cudaMalloc(&g_flush, g_flush_bytes));
	cudaStream_t st;
	CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
	unsigned *sink;
	CK(cudaMalloc(&sink, 4));
	typedef void (*fn_t)(CUtensorMap, CUtensorMap, CUtensorMap, int, unsigned *);
	struct variant {
		const char *name;
		fn_t fn;
		int r, st, kb, slice; /* ranges a head, stages, keys a stage, V box keys (0: ranges) */
	};
	const variant vs_[] = {
	    {"ranges R8 ST10", loads<0, 10, 64>, 8, 10, 64, 0},
	    {"vslice128 R8 ST10", loads<128, 10, 64>, 8, 10, 64, 128},
	    {"ranges R8 ST6", loads<0, 6, 64>, 8, 6, 64, 0},
	    {"ranges R8 ST13", loads<0, 13, 64>, 8, 13, 64, 0},
	    {"ranges R8 ST5 K128", loads<0, 5, 128>, 8, 5, 128, 0},
	    {"ranges R8 ST6 K128", loads<0, 6, 128>, 8, 6, 128, 0},
	    {"ranges R16 ST10", loads<0, 10, 64>, 16, 10, 64, 0},
	    {"ranges R16 ST6", loads<0, 6, 64>, 16, 6, 64, 0},
	    {"ranges R16 ST13", loads<0, 13, 64>, 16, 13, 64, 0},
	};
	for (const variant &v : vs_)
		CK(cudaFuncSetAttribute(v.fn, cudaFuncAttributeMaxDynamicSharedMemorySize,
					v.st * v.kb * 256 + 16 * v.st + 1024));
	for (int keys : {8192, 16384}) {
		const size_t bytes = (size_t)keys * H * D * 2; /* of K, and of V */
		std::vector<void *> kb(COPIES), vb(COPIES);
		for (int c = 0; c < COPIES; c++) {
			CK(cudaMalloc(&kb[c], bytes));
			CK(cudaMalloc(&vb[c], bytes));
			CK(cudaMemset(kb[c], 0, bytes));
			CK(cudaMemset(vb[c], 0, bytes));
		}
		std::vector<CUtensorMap> km64(COPIES), vm64(COPIES), km128(COPIES), vm128(COPIES), vs(COPIES);
		for (int c = 0; c < COPIES; c++) {
			km64[c] = map3(kb[c], keys, 64, 64, CU_TENSOR_MAP_SWIZZLE_128B);
			vm64[c] = map3(vb[c], keys, 64, 64, CU_TENSOR_MAP_SWIZZLE_128B);
			km128[c] = map3(kb[c], keys, 64, 128, CU_TENSOR_MAP_SWIZZLE_128B);
			vm128[c] = map3(vb[c], keys, 64, 128, CU_TENSOR_MAP_SWIZZLE_128B);
			vs[c] = map3(vb[c], keys, 16, 128, CU_TENSOR_MAP_SWIZZLE_32B);
		}
		for (int round = 0; round < 2; round++)
			for (const variant &v : vs_) {
				const int smem = v.st * v.kb * 256 + 16 * v.st + 1024;
				const double us = median_graph_us(
				    st,
				    [&](int i, cudaStream_t s) {
					    const int c = i % COPIES;
					    const bool k128 = v.kb == 128;
					    v.fn<<<dim3(v.r, H), 64, smem, s>>>(k128 ? km128[c] : km64[c],
										 k128 ? vm128[c] : vm64[c], vs[c], keys, sink);
					    CK(cudaGetLastError());
				    },
				    32, samples);
				printf("%5d keys  %-20s  %6.2f us  %7.1f GB/s\n", keys, v.name, us, 2.0 * bytes / us / 1e3);
			}
		for (int c = 0; c < COPIES; c++) {
			CK(cudaFree(kb[c]));
			CK(cudaFree(vb[c]));
		}
	}
	return 0;
}
