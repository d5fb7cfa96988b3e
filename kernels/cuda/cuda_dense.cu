/* cuda_dense.cu - cuda_dense: the naive attention of seed 000 on the GPU,
 * one kernel per step, with the whole score matrix in global memory.
 *
 *   1. S = scale * Q K^T for every (row, key) of every head, masked keys set
 *      to -inf (the "+ mask" of the naive path, folded into the store);
 *   2. row softmax of S in place (a row with no allowed key becomes zeros);
 *   3. O = S V, rounded to the output dtype.
 *
 * S is fp32 in the workspace, row (T * heads + h) of kv_len floats for packed
 * query token T: batch * heads * q_len * kv_len * 4 bytes (total_q instead
 * of batch * q_len for varlen). Both products are 64 x 64 output tiles
 * through shared memory, 16-deep slices, 4 x 4 per thread: a plain SIMT
 * sgemm, so the kernel is slow for the right reason (the score traffic), not
 * because of its matrix products.
 */
#include <math.h>
#include <stdio.h>

#include "../common/fa_dtype.h"
#include "cuda_kernels.h"
#include "problem_check.h"

namespace {

constexpr int DN_THREADS = 256; /* 16 x 16 threads, 4 x 4 outputs each */
constexpr int DN_T = 64;        /* output tile edge */
constexpr int DN_BK = 16;       /* depth of one shared-memory slice */
/* slices are stored k-major with rows of 68 floats: 16-byte aligned for the
 * float4 reads, and the transposed stores spread over the banks */
constexpr int DN_STRIDE = DN_T + 4;
constexpr int DN_ROWS_PER_BLOCK = DN_THREADS / 32; /* softmax: one warp per row */
/* Head sizes: the products loop over 16-deep slices and 64-column tiles, so
 * any size runs; 1024 bounds the table entry (DeepSeek's MLA decode is
 * 576/512) and keeps a row's scores and output within the reference's. */
constexpr int DN_HEAD_DIM_MAX = 1024;

/* acc += sA^T sB for one slice: thread (ty, tx) owns rows ty*4.. and columns tx*4.. */
__device__ __forceinline__ void dn_slice(const float *sA, const float *sB, int ty, int tx,
					 float acc[4][4])
{
#pragma unroll
	for (int kk = 0; kk < DN_BK; kk++) {
		const float4 a = *reinterpret_cast<const float4 *>(sA + kk * DN_STRIDE + ty * 4);
		const float4 b = *reinterpret_cast<const float4 *>(sB + kk * DN_STRIDE + tx * 4);
		const float av[4] = {a.x, a.y, a.z, a.w}, bv[4] = {b.x, b.y, b.z, b.w};
#pragma unroll
		for (int r = 0; r < 4; r++)
#pragma unroll
			for (int c = 0; c < 4; c++)
				acc[r][c] += av[r] * bv[c];
	}
}

/* Step 1. Block (tile of 64 rows x 64 keys, head, sequence). */
__global__ void __launch_bounds__(DN_THREADS)
	dn_scores_kernel(const struct fa_problem p, const void *__restrict__ q,
			 const void *__restrict__ k, const int32_t *cu_q, const int32_t *cu_k,
			 const int32_t *prefix_lens, float *__restrict__ S, int tiles_j)
{
	__shared__ float4 sA4[DN_BK * DN_STRIDE / 4], sB4[DN_BK * DN_STRIDE / 4];
	float *sA = reinterpret_cast<float *>(sA4), *sB = reinterpret_cast<float *>(sB4);
	const int b = blockIdx.z, h = blockIdx.y;
	const int i0 = (int)(blockIdx.x / tiles_j) * DN_T, j0 = (int)(blockIdx.x % tiles_j) * DN_T;
	const int32_t lq = fa_seq_q_len(&p, cu_q, b), lk = fa_seq_kv_len(&p, cu_k, b);
	if (i0 >= lq || j0 >= lk)
		return; /* the whole block: outside this sequence */
	const int hk = h / (p.heads / p.kv_heads);
	const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
	const int D = p.head_dim;
	const int64_t qb = fa_q_offset(&p, cu_q, b, i0, h), kb = fa_k_offset(&p, cu_k, b, j0, hk);
	float acc[4][4] = {};

	for (int k0 = 0; k0 < D; k0 += DN_BK) {
		/* 64 rows x 16 dims of Q and of K: runs of 16 dims per row */
		for (int e = tid; e < DN_T * DN_BK; e += DN_THREADS) {
			const int r = e / DN_BK, kk = e % DN_BK, d = k0 + kk;
			float x = 0.0f, y = 0.0f;
			if (d < D && i0 + r < lq)
				x = fa_load_f32(q, p.dtype, qb + (int64_t)r * p.q_stride_s + d);
			if (d < D && j0 + r < lk)
				y = fa_load_f32(k, p.dtype, kb + (int64_t)r * p.k_stride_s + d);
			sA[kk * DN_STRIDE + r] = x;
			sB[kk * DN_STRIDE + r] = y;
		}
		__syncthreads();
		dn_slice(sA, sB, ty, tx, acc);
		__syncthreads();
	}

	const int32_t prefix = fa_seq_prefix(&p, prefix_lens, b);
	const int64_t T0 = fa_seq_q_start(&p, cu_q, b) + i0;
#pragma unroll
	for (int r = 0; r < 4; r++) {
		const int32_t i = i0 + ty * 4 + r;
		if (i >= lq)
			continue;
		float *srow = S + ((T0 + ty * 4 + r) * p.heads + h) * (int64_t)p.kv_len;
#pragma unroll
		for (int c = 0; c < 4; c++) {
			const int32_t j = j0 + tx * 4 + c;
			if (j < lk)
				srow[j] = fa_mask_allows(p.mask, i, j, lq, lk, prefix, p.window)
						  ? acc[r][c] * p.scale
						  : -INFINITY;
		}
	}
}

__device__ __forceinline__ float dn_warp_max(float x)
{
#pragma unroll
	for (int o = 16; o > 0; o >>= 1)
		x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, o));
	return x;
}

__device__ __forceinline__ float dn_warp_sum(float x)
{
#pragma unroll
	for (int o = 16; o > 0; o >>= 1)
		x += __shfl_xor_sync(0xffffffffu, x, o);
	return x;
}

/* Step 2. One warp (32-lane group) per row; block (8 rows, head, sequence). */
__global__ void __launch_bounds__(DN_THREADS)
	dn_softmax_kernel(const struct fa_problem p, const int32_t *cu_q, const int32_t *cu_k,
			  float *__restrict__ S)
{
	const int lane = threadIdx.x % 32, w = threadIdx.x / 32;
	const int b = blockIdx.z, h = blockIdx.y;
	const int32_t i = (int32_t)blockIdx.x * DN_ROWS_PER_BLOCK + w;
	const int32_t lq = fa_seq_q_len(&p, cu_q, b), lk = fa_seq_kv_len(&p, cu_k, b);
	if (i >= lq)
		return; /* the whole warp; this kernel has no block barrier */
	float *s = S + ((fa_seq_q_start(&p, cu_q, b) + i) * p.heads + h) * (int64_t)p.kv_len;
	float m = -INFINITY, sum = 0.0f;
	for (int32_t j = lane; j < lk; j += 32)
		m = fmaxf(m, s[j]);
	m = dn_warp_max(m);
	if (m == -INFINITY) {
		/* no allowed key (or no key): P = 0, so the output row is 0 */
		for (int32_t j = lane; j < lk; j += 32)
			s[j] = 0.0f;
		return;
	}
	for (int32_t j = lane; j < lk; j += 32)
		sum += expf(s[j] - m);
	const float inv = 1.0f / dn_warp_sum(sum); /* sum >= 1: the max contributes exp(0) */
	for (int32_t j = lane; j < lk; j += 32)
		s[j] = expf(s[j] - m) * inv;
}

/* Step 3. Block (tile of 64 rows x 64 output columns, head, sequence).
 * Min blocks 1: without it ptxas for sm_80 squeezes to 48 registers and
 * spills. */
__global__ void __launch_bounds__(DN_THREADS, 1)
	dn_pv_kernel(const struct fa_problem p, const float *__restrict__ S,
		     const void *__restrict__ v, void *__restrict__ o, const int32_t *cu_q,
		     const int32_t *cu_k, int tiles_c)
{
	__shared__ float4 sA4[DN_BK * DN_STRIDE / 4], sB4[DN_BK * DN_STRIDE / 4];
	float *sA = reinterpret_cast<float *>(sA4), *sB = reinterpret_cast<float *>(sB4);
	const int b = blockIdx.z, h = blockIdx.y;
	const int i0 = (int)(blockIdx.x / tiles_c) * DN_T, c0 = (int)(blockIdx.x % tiles_c) * DN_T;
	const int32_t lq = fa_seq_q_len(&p, cu_q, b), lk = fa_seq_kv_len(&p, cu_k, b);
	if (i0 >= lq)
		return; /* the whole block */
	const int hk = h / (p.heads / p.kv_heads);
	const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
	const int DV = p.head_dim_v;
	const int64_t T0 = fa_seq_q_start(&p, cu_q, b) + i0;
	const int64_t row_stride = (int64_t)p.heads * p.kv_len; /* S: next token, same head */
	const float *P = S + (T0 * p.heads + h) * (int64_t)p.kv_len;
	const int64_t vb = fa_v_offset(&p, cu_k, b, 0, hk);
	float acc[4][4] = {};

	for (int32_t j0 = 0; j0 < lk; j0 += DN_BK) {
		for (int e = tid; e < DN_T * DN_BK; e += DN_THREADS) {
			/* P: 64 rows x 16 keys, runs of 16 keys per row */
			const int r = e / DN_BK, kk = e % DN_BK;
			float x = 0.0f;
			if (i0 + r < lq && j0 + kk < lk)
				x = P[r * row_stride + j0 + kk];
			sA[kk * DN_STRIDE + r] = x;
			/* V: 16 keys x 64 columns, runs of 64 columns per key */
			const int kv = e / DN_T, n = e % DN_T;
			float y = 0.0f;
			if (j0 + kv < lk && c0 + n < DV)
				y = fa_load_f32(v, p.dtype, vb + (int64_t)(j0 + kv) * p.v_stride_s + c0 + n);
			sB[kv * DN_STRIDE + n] = y;
		}
		__syncthreads();
		dn_slice(sA, sB, ty, tx, acc);
		__syncthreads();
	}

#pragma unroll
	for (int r = 0; r < 4; r++) {
		const int32_t i = i0 + ty * 4 + r;
		if (i >= lq)
			continue;
		const int64_t ob = fa_o_offset(&p, cu_q, b, i, h);
#pragma unroll
		for (int c = 0; c < 4; c++) {
			const int col = c0 + tx * 4 + c;
			if (col < DV)
				fa_store_f32(o, p.dtype, ob + col, acc[r][c]);
		}
	}
}

int64_t dn_score_rows(const struct fa_problem *p)
{
	return p->varlen ? (int64_t)p->total_q : (int64_t)p->batch * p->q_len;
}

} /* namespace */

extern "C" int fa_cuda_dense_supports(const struct fa_problem *p, char *why, size_t why_size)
{
	const int64_t tiles_q = ((int64_t)p->q_len + DN_T - 1) / DN_T;
	const int64_t tiles_k = ((int64_t)p->kv_len + DN_T - 1) / DN_T;
	struct fa_cuda_limits lim = {};
	lim.head_dim_max = DN_HEAD_DIM_MAX;
	lim.grid_yz = 1;
	if (!fa_cuda_check_problem(p, &lim, why, why_size))
		return 0;
	/* grid x of the score kernel is query tiles x key tiles */
	if (tiles_q * tiles_k > 0x7fffffff) {
		snprintf(why, why_size, "q_len %d x kv_len %d has too many 64 x 64 tiles", p->q_len,
			 p->kv_len);
		return 0;
	}
	return 1;
}

extern "C" size_t fa_cuda_dense_workspace_bytes(const struct fa_problem *p, const int32_t *params)
{
	(void)params;
	if (p->heads <= 0 || p->kv_len <= 0)
		return 0;
	return (size_t)dn_score_rows(p) * (size_t)p->heads * (size_t)p->kv_len * sizeof(float);
}

extern "C" int fa_cuda_dense_launch(const struct fa_launch_args *a)
{
	const struct fa_problem *p = a->p;
	const cudaStream_t stream = fa_cuda_stream_of(a);
	const size_t need = fa_cuda_dense_workspace_bytes(p, a->params);
	char why[160];
	cudaError_t e;
	if (!fa_cuda_dense_supports(p, why, sizeof why))
		return (int)cudaErrorInvalidValue;
	if (need > 0 && (!a->workspace || a->workspace_bytes < need))
		return (int)cudaErrorInvalidValue;
	if (p->batch <= 0 || p->heads <= 0 || p->q_len <= 0)
		return 0; /* no output rows */
	const unsigned tiles_q = (unsigned)((p->q_len + DN_T - 1) / DN_T);
	const unsigned tiles_k = (unsigned)((p->kv_len + DN_T - 1) / DN_T);
	const unsigned tiles_c = (unsigned)((p->head_dim_v + DN_T - 1) / DN_T);
	float *S = (float *)a->workspace;
	(void)cudaGetLastError(); /* report this launch's errors, not an older one */
	if (p->kv_len > 0) {
		dim3 g1(tiles_q * tiles_k, (unsigned)p->heads, (unsigned)p->batch);
		dn_scores_kernel<<<g1, DN_THREADS, 0, stream>>>(*p, a->q, a->k, a->cu_seqlens_q,
								 a->cu_seqlens_k, a->prefix_lens, S,
								 (int)tiles_k);
		if ((e = cudaGetLastError()) != cudaSuccess)
			return (int)e;
		dim3 g2((unsigned)((p->q_len + DN_ROWS_PER_BLOCK - 1) / DN_ROWS_PER_BLOCK),
			(unsigned)p->heads, (unsigned)p->batch);
		dn_softmax_kernel<<<g2, DN_THREADS, 0, stream>>>(*p, a->cu_seqlens_q, a->cu_seqlens_k, S);
		if ((e = cudaGetLastError()) != cudaSuccess)
			return (int)e;
	}
	/* with no keys at all the product loop is empty and every row is 0 */
	dim3 g3(tiles_q * tiles_c, (unsigned)p->heads, (unsigned)p->batch);
	dn_pv_kernel<<<g3, DN_THREADS, 0, stream>>>(*p, S, a->v, a->o, a->cu_seqlens_q,
						       a->cu_seqlens_k, (int)tiles_c);
	return (int)cudaGetLastError();
}
