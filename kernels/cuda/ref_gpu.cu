/* ref_gpu.cu - the dense attention reference on the GPU, for the rows of
 * cases too large for the CPU reference (kv_len of 32k and more, head sizes
 * up to 1024, head_dim_v up to 512).
 *
 * Precision: inputs are read in their dtype and converted exactly to fp32;
 * each score is an fp32 dot product (fp32 products and sums) times the
 * scale; the softmax weights exp(s - max), their row sum and the P V sums
 * are fp64. One block per requested row, two passes over the row's allowed
 * keys (the max, then the weights and the output), each 32-lane group taking
 * one key at a time; a row with no allowed key is 0.
 */
#include <math.h>

#include "../common/fa_dtype.h"
#include "cuda_kernels.h"

namespace {

constexpr int RF_THREADS = 256;
constexpr int RF_GROUPS = RF_THREADS / 32; /* 32-lane groups, one key each at a time */
constexpr int RF_DMAX = 512;               /* largest head_dim_v (MLA's 576/512 is Dv 512) */
constexpr int RF_DQMAX = 1024;             /* largest head_dim (cuda_dense's limit) */
constexpr int RF_COLS = RF_DMAX / 32;      /* output columns per lane */
/* device scratch for the output of one batch of rows: bounded so that a
 * whole-case check of millions of rows does not need gigabytes */
constexpr size_t RF_CHUNK_BYTES = (size_t)64 << 20;

/* q . k_j over D dims in fp32, reduced over the 32 lanes of the group (every
 * lane gets the sum). Not inlined: both passes run the same instructions, so
 * they see the same bits. */
__device__ __noinline__ float rf_dot(const float *sq, const void *k, int dtype, int64_t ko, int D,
				     int lane)
{
	float part = 0.0f;
	for (int d = lane; d < D; d += 32)
		part += sq[d] * fa_load_f32(k, dtype, ko + d);
#pragma unroll
	for (int o = 16; o > 0; o >>= 1)
		part += __shfl_xor_sync(0xffffffffu, part, o);
	return part;
}

__global__ void __launch_bounds__(RF_THREADS)
	rf_kernel(const struct fa_problem p, const void *__restrict__ q, const void *__restrict__ k,
		  const void *__restrict__ v, const int32_t *cu_q, const int32_t *cu_k,
		  const int32_t *prefix_lens, const int64_t *__restrict__ rows,
		  double *__restrict__ out)
{
	__shared__ float sq[RF_DQMAX];
	__shared__ float smax[RF_GROUPS];
	__shared__ double ssum[RF_GROUPS];
	__shared__ double sacc[RF_GROUPS][RF_DMAX];
	const int tid = threadIdx.x, lane = tid % 32, g = tid / 32;
	const int64_t row = rows[blockIdx.x];
	const int64_t T = row / p.heads;
	const int h = (int)(row % p.heads);
	int b;
	if (p.varlen) {
		/* the last sequence starting at or before T (empty ones share starts) */
		int lo = 0, hi = p.batch;
		while (hi - lo > 1) {
			const int mid = (lo + hi) / 2;
			if (cu_q[mid] <= T)
				lo = mid;
			else
				hi = mid;
		}
		b = lo;
	} else {
		b = (int)(T / p.q_len);
	}
	const int32_t i = (int32_t)(T - fa_seq_q_start(&p, cu_q, b));
	const int32_t lq = fa_seq_q_len(&p, cu_q, b), lk = fa_seq_kv_len(&p, cu_k, b);
	const int32_t prefix = fa_seq_prefix(&p, prefix_lens, b);
	const int hk = h / (p.heads / p.kv_heads);
	const int D = p.head_dim, DV = p.head_dim_v;

	const int64_t qo = fa_q_offset(&p, cu_q, b, i, h);
	for (int d = tid; d < D; d += RF_THREADS)
		sq[d] = fa_load_f32(q, p.dtype, qo + d);
	__syncthreads();

	/* keys worth visiting: the row's range, and the prefix for prefix_lm */
	int32_t jlo, jhi;
	fa_mask_range(p.mask, i, lq, lk, p.window, &jlo, &jhi);
	if (p.mask == FA_MASK_PREFIX_LM) {
		const int32_t pl = prefix < lk ? prefix : lk;
		jhi = jhi > pl ? jhi : pl;
	}

	float m = -INFINITY;
	for (int32_t j = jlo + g; j < jhi; j += RF_GROUPS) {
		/* j is the same in all lanes: the group skips or computes together */
		if (!fa_mask_allows(p.mask, i, j, lq, lk, prefix, p.window))
			continue;
		m = fmaxf(m, rf_dot(sq, k, p.dtype, fa_k_offset(&p, cu_k, b, j, hk), D, lane) * p.scale);
	}
	if (lane == 0)
		smax[g] = m;
	__syncthreads();
	m = smax[0];
	for (int x = 1; x < RF_GROUPS; x++)
		m = fmaxf(m, smax[x]);

	double l = 0.0, acc[RF_COLS];
#pragma unroll
	for (int t = 0; t < RF_COLS; t++)
		acc[t] = 0.0;
	if (m != -INFINITY) {
		for (int32_t j = jlo + g; j < jhi; j += RF_GROUPS) {
			if (!fa_mask_allows(p.mask, i, j, lq, lk, prefix, p.window))
				continue;
			const float s =
				rf_dot(sq, k, p.dtype, fa_k_offset(&p, cu_k, b, j, hk), D, lane) * p.scale;
			const double w = exp((double)s - (double)m);
			const int64_t vo = fa_v_offset(&p, cu_k, b, j, hk);
			l += w;
#pragma unroll
			for (int t = 0; t < RF_COLS; t++) {
				const int c = lane + 32 * t;
				if (c < DV)
					acc[t] += w * (double)fa_load_f32(v, p.dtype, vo + c);
			}
		}
	}
	if (lane == 0)
		ssum[g] = l;
#pragma unroll
	for (int t = 0; t < RF_COLS; t++) {
		const int c = lane + 32 * t;
		if (c < DV)
			sacc[g][c] = acc[t];
	}
	__syncthreads();
	for (int c = tid; c < DV; c += RF_THREADS) {
		double L = 0.0, A = 0.0;
		for (int x = 0; x < RF_GROUPS; x++) {
			L += ssum[x];
			A += sacc[x][c];
		}
		out[(int64_t)blockIdx.x * DV + c] = L > 0.0 ? A / L : 0.0;
	}
}

} /* namespace */

extern "C" int fa_cuda_reference(cudaStream_t stream, const struct fa_launch_args *a,
				 const int64_t *rows, int64_t n_rows, double *out)
{
	const struct fa_problem *p = a->p;
	int64_t *d_rows = NULL;
	double *d_out = NULL;
	cudaError_t e = cudaSuccess, e2;
	if (n_rows == 0)
		return 0;
	if (n_rows < 0 || !rows || !out)
		return (int)cudaErrorInvalidValue;
	if (p->head_dim < 1 || p->head_dim > RF_DQMAX || p->head_dim_v < 1 ||
	    p->head_dim_v > RF_DMAX || p->heads < 1 || p->kv_heads < 1 ||
	    p->heads % p->kv_heads != 0 || p->dtype < 0 || p->dtype >= FA_DTYPE_COUNT)
		return (int)cudaErrorInvalidValue;
	if (p->varlen ? (!a->cu_seqlens_q || !a->cu_seqlens_k) : p->q_len < 1)
		return (int)cudaErrorInvalidValue;
	const int64_t n_all = (int64_t)p->total_q * p->heads;
	for (int64_t r = 0; r < n_rows; r++)
		if (rows[r] < 0 || rows[r] >= n_all)
			return (int)cudaErrorInvalidValue;

	const int64_t dv = p->head_dim_v;
	int64_t chunk = (int64_t)(RF_CHUNK_BYTES / sizeof(double)) / dv;
	if (chunk > n_rows)
		chunk = n_rows;
	if ((e = cudaMalloc((void **)&d_rows, (size_t)chunk * sizeof(int64_t))) != cudaSuccess ||
	    (e = cudaMalloc((void **)&d_out, (size_t)(chunk * dv) * sizeof(double))) != cudaSuccess)
		goto done;
	for (int64_t off = 0; off < n_rows; off += chunk) {
		const int64_t n = n_rows - off < chunk ? n_rows - off : chunk;
		if ((e = cudaMemcpyAsync(d_rows, rows + off, (size_t)n * sizeof(int64_t),
					 cudaMemcpyHostToDevice, stream)) != cudaSuccess)
			break;
		(void)cudaGetLastError(); /* report this launch's error, not an older one */
		rf_kernel<<<(unsigned)n, RF_THREADS, 0, stream>>>(*p, a->q, a->k, a->v, a->cu_seqlens_q,
								  a->cu_seqlens_k, a->prefix_lens,
								  d_rows, d_out);
		if ((e = cudaGetLastError()) != cudaSuccess)
			break;
		if ((e = cudaMemcpyAsync(out + off * dv, d_out, (size_t)(n * dv) * sizeof(double),
					 cudaMemcpyDeviceToHost, stream)) != cudaSuccess ||
		    (e = cudaStreamSynchronize(stream)) != cudaSuccess)
			break;
	}
done:
	e2 = cudaStreamSynchronize(stream); /* nothing may still use the scratch */
	if (e == cudaSuccess)
		e = e2;
	if (d_rows)
		(void)cudaFree(d_rows);
	if (d_out)
		(void)cudaFree(d_out);
	return (int)e;
}
