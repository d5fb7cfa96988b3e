/* calibrate.cu - the device's ceilings for `fabench calibrate`: copy
 * bandwidth (a large device-to-device cudaMemcpy, bytes read + written) and
 * matrix-product rates: bf16 with fp32 accumulation (tensor cores) and fp32,
 * both through cuBLAS opened with dlopen ($FABENCH_CUBLAS, else
 * libcublas.so.13). Without cuBLAS the fp32 rate comes from a plain SIMT
 * sgemm of our own, the 16-bit rate stays unknown (0: stored as NULL), and
 * method says so.
 *
 * Every figure is the best of a few rounds of back-to-back launches timed
 * with events on the plugin's stream, after warm-up launches.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/fa_dtype.h"
#include "../common/fa_rng.h"
#include "cuda_kernels.h"

namespace {

/* Copy buffers: far past the L2 (50 MB on an H100) so the copy streams from
 * memory, and large enough that launch overhead is under 0.1% */
constexpr size_t CAL_COPY_BYTES = (size_t)512 << 20;
constexpr size_t CAL_COPY_MIN_BYTES = (size_t)64 << 20;
constexpr int CAL_GEMM_N = 8192;         /* the anchors' matrix size (ANCHORS.md) */
constexpr int CAL_SGEMM_N = 4096;        /* the fallback: 137 GFLOP a product */
constexpr int CAL_WARMUP = 2;
constexpr int CAL_REPS = 10;             /* launches per timed round */
constexpr int CAL_ROUNDS = 3;            /* best round wins */

/* Times `reps` back-to-back calls of op on stream; *ms_per_op is the best
 * round's time per call. op returns a code (0 success). */
template <class F> int cal_time(cudaStream_t stream, F op, int reps, double *ms_per_op)
{
	cudaEvent_t e0 = NULL, e1 = NULL;
	int code = 0;
	float ms;
	*ms_per_op = 0.0;
	if ((code = (int)cudaEventCreate(&e0)) != 0 || (code = (int)cudaEventCreate(&e1)) != 0)
		goto done;
	for (int w = 0; w < CAL_WARMUP && code == 0; w++)
		code = op();
	for (int round = 0; round < CAL_ROUNDS && code == 0; round++) {
		if ((code = (int)cudaEventRecord(e0, stream)) != 0)
			break;
		for (int i = 0; i < reps && code == 0; i++)
			code = op();
		if (code != 0 || (code = (int)cudaEventRecord(e1, stream)) != 0 ||
		    (code = (int)cudaEventSynchronize(e1)) != 0 ||
		    (code = (int)cudaEventElapsedTime(&ms, e0, e1)) != 0)
			break;
		if (*ms_per_op == 0.0 || ms / reps < *ms_per_op)
			*ms_per_op = (double)ms / reps;
	}
done:
	if (code == 0)
		code = (int)cudaStreamSynchronize(stream);
	if (e0)
		cudaEventDestroy(e0);
	if (e1)
		cudaEventDestroy(e1);
	return code;
}

/* n elements of dtype uniform in [-1, 1): products neither overflow nor
 * sit at zero (which would draw less power and flatter the clocks). */
__global__ void cal_init_kernel(void *buf, int64_t n, int dtype, uint64_t seed)
{
	for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
	     i += (int64_t)gridDim.x * blockDim.x)
		fa_store_f32(buf, dtype, i, fa_rng_value(seed, 0, FA_DIST_UNIFORM, (uint64_t)i, 1));
}

int cal_init(cudaStream_t stream, void *buf, int64_t n, int dtype)
{
	(void)cudaGetLastError();
	cal_init_kernel<<<1024, 256, 0, stream>>>(buf, n, dtype, 0x5eedu);
	return (int)cudaGetLastError();
}

/* *bytes_used: the size of each buffer copied. */
int cal_copy(cudaStream_t stream, double *gbps, size_t *bytes_used)
{
	size_t bytes = CAL_COPY_BYTES, free_b = 0, total_b = 0;
	void *src = NULL, *dst = NULL;
	double ms = 0.0;
	int code;
	if ((code = (int)cudaMemGetInfo(&free_b, &total_b)) != 0)
		return code;
	while (bytes > CAL_COPY_MIN_BYTES && 2 * bytes > free_b / 2)
		bytes /= 2; /* leave room on a busy or small device */
	*bytes_used = bytes;
	if ((code = (int)cudaMalloc(&src, bytes)) != 0 || (code = (int)cudaMalloc(&dst, bytes)) != 0 ||
	    (code = (int)cudaMemsetAsync(src, 0x3c, bytes, stream)) != 0)
		goto done;
	code = cal_time(
		stream,
		[&]() { return (int)cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream); },
		CAL_REPS, &ms);
	if (code == 0 && ms > 0.0)
		*gbps = 2.0 * (double)bytes / (ms * 1e-3) / 1e9;
done:
	cudaStreamSynchronize(stream);
	if (src)
		cudaFree(src);
	if (dst)
		cudaFree(dst);
	return code;
}

/* ---- the fallback fp32 product: C = A B, n x n row-major, n % 64 == 0 ---- */

constexpr int SG_T = 64, SG_BK = 16, SG_STRIDE = SG_T + 4; /* as cuda_dense's tiles */

__global__ void __launch_bounds__(256)
	cal_sgemm_kernel(const float *__restrict__ A, const float *__restrict__ B,
			 float *__restrict__ C, int n)
{
	__shared__ float4 sA4[SG_BK * SG_STRIDE / 4], sB4[SG_BK * SG_STRIDE / 4];
	float *sA = reinterpret_cast<float *>(sA4), *sB = reinterpret_cast<float *>(sB4);
	const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
	const int i0 = blockIdx.y * SG_T, j0 = blockIdx.x * SG_T;
	float acc[4][4] = {};
	for (int k0 = 0; k0 < n; k0 += SG_BK) {
		for (int e = tid; e < SG_T * SG_BK; e += 256) {
			const int r = e / SG_BK, kk = e % SG_BK; /* A: runs along k */
			sA[kk * SG_STRIDE + r] = A[(int64_t)(i0 + r) * n + k0 + kk];
			const int kb = e / SG_T, c = e % SG_T; /* B: runs along columns */
			sB[kb * SG_STRIDE + c] = B[(int64_t)(k0 + kb) * n + j0 + c];
		}
		__syncthreads();
#pragma unroll
		for (int kk = 0; kk < SG_BK; kk++) {
			const float4 a = *reinterpret_cast<const float4 *>(sA + kk * SG_STRIDE + ty * 4);
			const float4 b = *reinterpret_cast<const float4 *>(sB + kk * SG_STRIDE + tx * 4);
			const float av[4] = {a.x, a.y, a.z, a.w}, bv[4] = {b.x, b.y, b.z, b.w};
#pragma unroll
			for (int r = 0; r < 4; r++)
#pragma unroll
				for (int c = 0; c < 4; c++)
					acc[r][c] += av[r] * bv[c];
		}
		__syncthreads();
	}
#pragma unroll
	for (int r = 0; r < 4; r++)
#pragma unroll
		for (int c = 0; c < 4; c++)
			C[(int64_t)(i0 + ty * 4 + r) * n + j0 + tx * 4 + c] = acc[r][c];
}

int cal_simt_sgemm(cudaStream_t stream, double *tflops)
{
	const int n = CAL_SGEMM_N;
	const size_t bytes = (size_t)n * n * sizeof(float);
	float *A = NULL, *B = NULL, *C = NULL;
	double ms = 0.0;
	int code;
	if ((code = (int)cudaMalloc((void **)&A, bytes)) != 0 ||
	    (code = (int)cudaMalloc((void **)&B, bytes)) != 0 ||
	    (code = (int)cudaMalloc((void **)&C, bytes)) != 0 ||
	    (code = cal_init(stream, A, (int64_t)n * n, FA_DTYPE_FP32)) != 0 ||
	    (code = cal_init(stream, B, (int64_t)n * n, FA_DTYPE_FP32)) != 0)
		goto done;
	code = cal_time(
		stream,
		[&]() {
			cal_sgemm_kernel<<<dim3(n / SG_T, n / SG_T), 256, 0, stream>>>(A, B, C, n);
			return (int)cudaGetLastError();
		},
		CAL_REPS, &ms);
	if (code == 0 && ms > 0.0)
		*tflops = 2.0 * n * (double)n * n / (ms * 1e-3) / 1e12;
done:
	cudaStreamSynchronize(stream);
	if (A)
		cudaFree(A);
	if (B)
		cudaFree(B);
	if (C)
		cudaFree(C);
	return code;
}

/* ---- cuBLAS through dlopen (CUDA only): the few entry points and enum
 * values used, declared here so that no cuBLAS header or link is needed.
 * Values from cublas_api.h and library_types.h of CUDA 13. ---- */

enum {
	CAL_CUBLAS_OP_N = 0,
	CAL_CUDA_R_32F = 0,
	CAL_CUDA_R_16BF = 14,
	CAL_CUBLAS_COMPUTE_32F = 68,
	CAL_CUBLAS_GEMM_DEFAULT = -1,
};

struct cal_cublas {
	void *dl;
	void *handle;
	int (*create)(void **handle);
	int (*destroy)(void *handle);
	int (*set_stream)(void *handle, cudaStream_t stream);
	int (*gemm_ex)(void *handle, int transa, int transb, int m, int n, int k, const void *alpha,
		       const void *A, int a_type, int lda, const void *B, int b_type, int ldb,
		       const void *beta, void *C, int c_type, int ldc, int compute_type, int algo);
	int (*sgemm)(void *handle, int transa, int transb, int m, int n, int k, const float *alpha,
		     const float *A, int lda, const float *B, int ldb, const float *beta, float *C,
		     int ldc);
};

/* Opens cuBLAS ($FABENCH_CUBLAS, a path, first: e.g. the libcublas.so.13 of
 * a pip-installed nvidia-cublas when none is on the library path); on
 * failure says why in why and returns nonzero. */
int cal_cublas_open(struct cal_cublas *cb, cudaStream_t stream, char *why, size_t why_size)
{
	static const char *const names[] = {"libcublas.so.13", "libcublas.so"};
	const char *env = getenv("FABENCH_CUBLAS");
	memset(cb, 0, sizeof *cb);
	if (env && *env)
		cb->dl = dlopen(env, RTLD_NOW | RTLD_LOCAL);
	for (size_t i = 0; i < sizeof names / sizeof names[0] && !cb->dl; i++)
		cb->dl = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
	if (!cb->dl) {
		snprintf(why, why_size, "libcublas.so.13 not loadable");
		return 1;
	}
	*(void **)&cb->create = dlsym(cb->dl, "cublasCreate_v2");
	*(void **)&cb->destroy = dlsym(cb->dl, "cublasDestroy_v2");
	*(void **)&cb->set_stream = dlsym(cb->dl, "cublasSetStream_v2");
	*(void **)&cb->gemm_ex = dlsym(cb->dl, "cublasGemmEx");
	*(void **)&cb->sgemm = dlsym(cb->dl, "cublasSgemm_v2");
	if (!cb->create || !cb->destroy || !cb->set_stream || !cb->gemm_ex || !cb->sgemm) {
		snprintf(why, why_size, "libcublas lacks cublasGemmEx or cublasSgemm_v2");
		dlclose(cb->dl);
		cb->dl = NULL;
		return 1;
	}
	int st = cb->create(&cb->handle);
	if (st == 0)
		st = cb->set_stream(cb->handle, stream);
	if (st != 0) {
		snprintf(why, why_size, "cublasCreate failed (status %d)", st);
		if (cb->handle)
			cb->destroy(cb->handle);
		dlclose(cb->dl);
		cb->dl = NULL;
		return 1;
	}
	return 0;
}

void cal_cublas_close(struct cal_cublas *cb)
{
	if (cb->handle)
		cb->destroy(cb->handle);
	if (cb->dl)
		dlclose(cb->dl);
	memset(cb, 0, sizeof *cb);
}

/* bf16 (fp32 accumulation) and fp32 products of n x n matrices. */
int cal_cublas_rates(struct cal_cublas *cb, cudaStream_t stream, double *bf16_tflops,
		     double *fp32_tflops)
{
	const int n = CAL_GEMM_N;
	const size_t elems = (size_t)n * n;
	const float one = 1.0f, zero = 0.0f;
	void *A = NULL, *B = NULL, *C = NULL;
	double ms = 0.0;
	const double flop = 2.0 * n * (double)n * n;
	int code;
	/* fp32 buffers; the bf16 product uses their first halves */
	if ((code = (int)cudaMalloc(&A, elems * 4)) != 0 || (code = (int)cudaMalloc(&B, elems * 4)) != 0 ||
	    (code = (int)cudaMalloc(&C, elems * 4)) != 0 ||
	    (code = cal_init(stream, A, (int64_t)elems, FA_DTYPE_BF16)) != 0 ||
	    (code = cal_init(stream, B, (int64_t)elems, FA_DTYPE_BF16)) != 0)
		goto done;
	code = cal_time(
		stream,
		[&]() {
			int st = cb->gemm_ex(cb->handle, CAL_CUBLAS_OP_N, CAL_CUBLAS_OP_N, n, n, n, &one, A,
					     CAL_CUDA_R_16BF, n, B, CAL_CUDA_R_16BF, n, &zero, C,
					     CAL_CUDA_R_16BF, n, CAL_CUBLAS_COMPUTE_32F,
					     CAL_CUBLAS_GEMM_DEFAULT);
			return st ? FA_CUDA_ERR_CUBLAS + st : 0;
		},
		CAL_REPS, &ms);
	if (code != 0)
		goto done;
	*bf16_tflops = ms > 0.0 ? flop / (ms * 1e-3) / 1e12 : 0.0;
	if ((code = cal_init(stream, A, (int64_t)elems, FA_DTYPE_FP32)) != 0 ||
	    (code = cal_init(stream, B, (int64_t)elems, FA_DTYPE_FP32)) != 0)
		goto done;
	/* fp32 takes ~20 ms a product on an H100: fewer launches per round */
	code = cal_time(
		stream,
		[&]() {
			int st = cb->sgemm(cb->handle, CAL_CUBLAS_OP_N, CAL_CUBLAS_OP_N, n, n, n, &one,
					   (const float *)A, n, (const float *)B, n, &zero, (float *)C, n);
			return st ? FA_CUDA_ERR_CUBLAS + st : 0;
		},
		CAL_REPS / 2, &ms);
	if (code == 0)
		*fp32_tflops = ms > 0.0 ? flop / (ms * 1e-3) / 1e12 : 0.0;
done:
	cudaStreamSynchronize(stream);
	if (A)
		cudaFree(A);
	if (B)
		cudaFree(B);
	if (C)
		cudaFree(C);
	return code;
}

} /* namespace */

extern "C" int fa_cuda_calibrate(cudaStream_t stream, const struct fa_device_info *info,
				 struct fa_calibration *out)
{
	struct cal_cublas cb;
	char why[96];
	size_t copy_bytes = 0;
	int code;
	(void)info;
	memset(out, 0, sizeof *out);
	if ((code = cal_copy(stream, &out->copy_gbps, &copy_bytes)) != 0)
		return code;
	if (cal_cublas_open(&cb, stream, why, sizeof why) == 0) {
		code = cal_cublas_rates(&cb, stream, &out->matmul_tflops, &out->matmul_fp32_tflops);
		cal_cublas_close(&cb);
		snprintf(out->method, sizeof out->method,
			 "cudaMemcpy d2d %d MiB; cublasGemmEx bf16 %d^3 (fp32 acc); cublasSgemm %d^3",
			 (int)(copy_bytes >> 20), CAL_GEMM_N, CAL_GEMM_N);
		return code;
	}
	code = cal_simt_sgemm(stream, &out->matmul_fp32_tflops);
	snprintf(out->method, sizeof out->method,
		 "cudaMemcpy d2d %d MiB; fabench simt sgemm fp32 %d^3 (%.40s: no 16-bit rate)",
		 (int)(copy_bytes >> 20), CAL_SGEMM_N, why);
	return code;
}
