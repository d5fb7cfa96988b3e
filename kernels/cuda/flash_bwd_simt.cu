/* flash_bwd_simt.cu - cuda_flash_bwd_simt: the FlashAttention-2 backward
 * pass on CUDA cores (no tensor cores), fp32 accumulation, any head size
 * from 1 to 256. Its forward is cuda_flash_simt, which writes the LSE.
 *
 * Three kernels on the backend's stream, each output element written by one
 * thread that sums in a fixed order: the gradients are bit-identical from
 * run to run (no atomics).
 *   1. delta: D_i = rowsum(dO_i * O_i), one warp per query row, into the
 *      workspace.
 *   2. dK, dV: one block per (tile of BK keys, kv head, sequence). Thread t
 *      owns key t / TPR of the tile and dims t % TPR + TPR * m (m < DMAX /
 *      TPR) of its dK and dV rows, in registers, with its key's K and V
 *      dims. The block walks every query head of the GQA group and, in
 *      chunks of RQ rows staged in shared memory (q, dO, lse, D), every
 *      query row that may see a key of the tile: s = q.k and dP = dO.v are
 *      summed over the TPR threads of a key with xor shuffles, P =
 *      exp(scale s - lse) recomputed from the forward's log-sum-exp, dS =
 *      P (dP - D), then dV += P dO and dK += dS q (scaled at the end). The
 *      GQA reduction happens inside the block: no race between the heads.
 *   3. dQ: one block per (tile of BQ query rows, head, sequence), the same
 *      layout with rows for keys; chunks of RK keys staged (k, v); dQ += dS k.
 * Masks (the tiles' key ranges from fa_mask_range, per-element checks with
 * fa_mask_allows), GQA, varlen and per-sequence prefixes as the forward.
 * Expected speed: a few TFLOP/s on an H100 (the shuffle reductions per (row,
 * key) pair dominate); the tensor-core backward is the fast one.
 */
#include <math.h>
#include <stdio.h>

#include "../common/fa_dtype.h"
#include "cuda_kernels.h"

namespace {

constexpr int BS_THREADS = 128;
constexpr int BS_TPR = 8;                        /* threads per key (or row): dims split 8 ways */
constexpr int BS_BK = BS_THREADS / BS_TPR;       /* 16 keys per dK/dV block */
constexpr int BS_BQ = BS_THREADS / BS_TPR;       /* 16 query rows per dQ block */
constexpr int BS_RQ = 8;                         /* query rows staged at once (dK/dV) */
constexpr int BS_RK = 8;                         /* keys staged at once (dQ) */

__device__ __forceinline__ int bs_min(int a, int b)
{
	return a < b ? a : b;
}

__device__ __forceinline__ int bs_max(int a, int b)
{
	return a > b ? a : b;
}

/* Sum over the BS_TPR (8) aligned lanes that share a key or row. */
__device__ __forceinline__ float bs_sum8(float x)
{
#pragma unroll
	for (int o = BS_TPR / 2; o > 0; o >>= 1)
		x += __shfl_xor_sync(0xffffffffu, x, o);
	return x;
}

/* 1. delta of query row (T * heads + h) = blockIdx.x * 4 + warp. */
__global__ void __launch_bounds__(BS_THREADS)
	bs_delta_kernel(const struct fa_problem p, const void *__restrict__ o,
			const void *__restrict__ d_o, float *__restrict__ delta)
{
	const int64_t row = (int64_t)blockIdx.x * (BS_THREADS / 32) + threadIdx.x / 32;
	const int lane = threadIdx.x % 32;
	if (row >= (int64_t)p.total_q * p.heads)
		return; /* the whole warp */
	const int64_t off = fa_tensor_offset(&p, FA_TENSOR_O, row / p.heads, (int)(row % p.heads));
	float s = 0.0f;
	for (int d = lane; d < p.head_dim_v; d += 32)
		s += fa_load_f32(o, p.dtype, off + d) * fa_load_f32(d_o, p.dtype, off + d);
#pragma unroll
	for (int x = 16; x > 0; x >>= 1)
		s += __shfl_xor_sync(0xffffffffu, s, x);
	if (lane == 0)
		delta[row] = s;
}

/* The query rows of a sequence that may see a key of [j0, j0 + nk):
 * [*ib, *ie). Rows' ranges move right with the row (bottom-right aligned). */
__device__ __forceinline__ void bs_rows_for_keys(const struct fa_problem &p, int32_t lq,
						 int32_t lk, int32_t prefix, int32_t j0, int32_t nk,
						 int32_t *ib, int32_t *ie)
{
	*ib = 0;
	*ie = lq;
	if (p.mask == FA_MASK_NONE || j0 < prefix)
		return;
	/* hi(i) = i + lk - lq + 1 > j0 */
	*ib = bs_max(0, j0 - (lk - lq));
	if (p.mask == FA_MASK_SLIDING_WINDOW) /* lo(i) = i + lk - lq - window + 1 < j0 + nk */
		*ie = bs_min(lq, bs_max(0, j0 + nk + p.window - 1 - (lk - lq)));
}

/* 2. dK, dV. Template DMAX: the head-size bucket (64, 128, 256) that holds
 * both head_dim and head_dim_v. */
template <int DMAX>
__global__ void __launch_bounds__(BS_THREADS)
	bs_dkv_kernel(const struct fa_problem p, const void *__restrict__ q,
		      const void *__restrict__ k, const void *__restrict__ v,
		      const void *__restrict__ d_o, const float *__restrict__ lse,
		      const float *__restrict__ delta, void *__restrict__ dk, void *__restrict__ dv,
		      const int32_t *cu_q, const int32_t *cu_k, const int32_t *prefix_lens)
{
	constexpr int M = DMAX / BS_TPR; /* dims per thread */
	__shared__ float sq[BS_RQ][DMAX], sdo[BS_RQ][DMAX], slse[BS_RQ], sdelta[BS_RQ];
	const int tid = threadIdx.x, kj = tid / BS_TPR, part = tid % BS_TPR;
	const int b = blockIdx.z, hk = blockIdx.y, group = p.heads / p.kv_heads;
	const int32_t lq = fa_seq_q_len(&p, cu_q, b), lk = fa_seq_kv_len(&p, cu_k, b);
	const int32_t j0 = (int32_t)blockIdx.x * BS_BK;
	if (j0 >= lk)
		return; /* the whole block: this sequence has fewer keys */
	const int32_t nk = bs_min(BS_BK, lk - j0), j = j0 + kj;
	const bool have_key = kj < nk;
	const int D = p.head_dim, DV = p.head_dim_v;
	int32_t prefix = 0;
	if (p.mask == FA_MASK_PREFIX_LM)
		prefix = bs_max(0, bs_min(fa_seq_prefix(&p, prefix_lens, b), lk));
	const int64_t t0 = fa_seq_q_start(&p, cu_q, b);

	float kr[M], vr[M], ak[M], av[M];
	const int64_t koff = have_key ? fa_k_offset(&p, cu_k, b, j, hk) : 0;
	const int64_t voff = have_key ? fa_v_offset(&p, cu_k, b, j, hk) : 0;
#pragma unroll
	for (int m = 0; m < M; m++) {
		const int d = part + BS_TPR * m;
		kr[m] = have_key && d < D ? fa_load_f32(k, p.dtype, koff + d) : 0.0f;
		vr[m] = have_key && d < DV ? fa_load_f32(v, p.dtype, voff + d) : 0.0f;
		ak[m] = av[m] = 0.0f;
	}
	int32_t ib, ie;
	bs_rows_for_keys(p, lq, lk, prefix, j0, nk, &ib, &ie);

	for (int hh = 0; hh < group; hh++) {
		const int h = hk * group + hh;
		for (int32_t i0 = ib; i0 < ie; i0 += BS_RQ) {
			const int nr = bs_min(BS_RQ, ie - i0);
			__syncthreads(); /* the previous chunk is used up */
			for (int e = tid; e < BS_RQ * DMAX; e += BS_THREADS) {
				const int r = e / DMAX, d = e % DMAX;
				float x = 0.0f, y = 0.0f;
				if (r < nr) {
					if (d < D)
						x = fa_load_f32(q, p.dtype, fa_q_offset(&p, cu_q, b, i0 + r, h) + d);
					if (d < DV)
						y = fa_load_f32(d_o, p.dtype,
								fa_o_offset(&p, cu_q, b, i0 + r, h) + d);
				}
				sq[r][d] = x;
				sdo[r][d] = y;
			}
			if (tid < nr) {
				const int64_t row = (t0 + i0 + tid) * p.heads + h;
				slse[tid] = lse[row];
				sdelta[tid] = delta[row];
			}
			__syncthreads(); /* the chunk is staged */
			for (int r = 0; r < nr; r++) {
				float s = 0.0f, dp = 0.0f;
#pragma unroll
				for (int m = 0; m < M; m++) {
					const int d = part + BS_TPR * m;
					s += sq[r][d] * kr[m];
					dp += sdo[r][d] * vr[m];
				}
				s = bs_sum8(s);
				dp = bs_sum8(dp);
				if (!have_key ||
				    !fa_mask_allows(p.mask, i0 + r, j, lq, lk, prefix, p.window))
					continue;
				const float pr = expf(p.scale * s - slse[r]); /* lse +inf: 0 */
				const float ds = pr * (dp - sdelta[r]);
#pragma unroll
				for (int m = 0; m < M; m++) {
					const int d = part + BS_TPR * m;
					av[m] += pr * sdo[r][d];
					ak[m] += ds * sq[r][d];
				}
			}
		}
	}
	if (!have_key)
		return;
#pragma unroll
	for (int m = 0; m < M; m++) {
		const int d = part + BS_TPR * m;
		if (d < D)
			fa_store_f32(dk, p.dtype, koff + d, p.scale * ak[m]);
		if (d < DV)
			fa_store_f32(dv, p.dtype, voff + d, av[m]);
	}
}

/* 3. dQ, same bucket. */
template <int DMAX>
__global__ void __launch_bounds__(BS_THREADS)
	bs_dq_kernel(const struct fa_problem p, const void *__restrict__ q,
		     const void *__restrict__ k, const void *__restrict__ v,
		     const void *__restrict__ d_o, const float *__restrict__ lse,
		     const float *__restrict__ delta, void *__restrict__ dq, const int32_t *cu_q,
		     const int32_t *cu_k, const int32_t *prefix_lens)
{
	constexpr int M = DMAX / BS_TPR;
	__shared__ float sk[BS_RK][DMAX], sv[BS_RK][DMAX];
	const int tid = threadIdx.x, ri = tid / BS_TPR, part = tid % BS_TPR;
	const int b = blockIdx.z, h = blockIdx.y, hk = h / (p.heads / p.kv_heads);
	const int32_t lq = fa_seq_q_len(&p, cu_q, b), lk = fa_seq_kv_len(&p, cu_k, b);
	const int32_t i0 = (int32_t)blockIdx.x * BS_BQ;
	if (i0 >= lq)
		return;
	const int32_t nr = bs_min(BS_BQ, lq - i0), i = i0 + ri;
	const bool have_row = ri < nr;
	const int D = p.head_dim, DV = p.head_dim_v;
	int32_t prefix = 0;
	if (p.mask == FA_MASK_PREFIX_LM)
		prefix = bs_max(0, bs_min(fa_seq_prefix(&p, prefix_lens, b), lk));
	const int64_t row = (fa_seq_q_start(&p, cu_q, b) + (have_row ? i : i0)) * p.heads + h;
	const float rlse = lse[row], rdelta = delta[row];

	float qr[M], dor[M], acc[M];
	const int64_t qoff = fa_q_offset(&p, cu_q, b, have_row ? i : i0, h);
	const int64_t ooff = fa_o_offset(&p, cu_q, b, have_row ? i : i0, h);
#pragma unroll
	for (int m = 0; m < M; m++) {
		const int d = part + BS_TPR * m;
		qr[m] = have_row && d < D ? fa_load_f32(q, p.dtype, qoff + d) : 0.0f;
		dor[m] = have_row && d < DV ? fa_load_f32(d_o, p.dtype, ooff + d) : 0.0f;
		acc[m] = 0.0f;
	}
	/* keys any row of the tile may attend, plus the prefix */
	int32_t lo_first, hi_first, lo_last, hi_last;
	fa_mask_range(p.mask, i0, lq, lk, p.window, &lo_first, &hi_first);
	fa_mask_range(p.mask, i0 + nr - 1, lq, lk, p.window, &lo_last, &hi_last);
	const int32_t kb = prefix > 0 ? 0 : lo_first, ke = bs_max(hi_last, prefix);

	for (int32_t j0 = kb; j0 < ke; j0 += BS_RK) {
		const int nk = bs_min(BS_RK, ke - j0);
		__syncthreads();
		for (int e = tid; e < BS_RK * DMAX; e += BS_THREADS) {
			const int c = e / DMAX, d = e % DMAX;
			float x = 0.0f, y = 0.0f;
			if (c < nk) {
				if (d < D)
					x = fa_load_f32(k, p.dtype, fa_k_offset(&p, cu_k, b, j0 + c, hk) + d);
				if (d < DV)
					y = fa_load_f32(v, p.dtype, fa_v_offset(&p, cu_k, b, j0 + c, hk) + d);
			}
			sk[c][d] = x;
			sv[c][d] = y;
		}
		__syncthreads();
		for (int c = 0; c < nk; c++) {
			float s = 0.0f, dp = 0.0f;
#pragma unroll
			for (int m = 0; m < M; m++) {
				const int d = part + BS_TPR * m;
				s += qr[m] * sk[c][d];
				dp += dor[m] * sv[c][d];
			}
			s = bs_sum8(s);
			dp = bs_sum8(dp);
			if (!have_row || !fa_mask_allows(p.mask, i, j0 + c, lq, lk, prefix, p.window))
				continue;
			const float pr = expf(p.scale * s - rlse);
			const float ds = pr * (dp - rdelta);
#pragma unroll
			for (int m = 0; m < M; m++)
				acc[m] += ds * sk[c][part + BS_TPR * m];
		}
	}
	if (!have_row)
		return;
#pragma unroll
	for (int m = 0; m < M; m++) {
		const int d = part + BS_TPR * m;
		if (d < D)
			fa_store_f32(dq, p.dtype, qoff + d, p.scale * acc[m]);
	}
}

/* The bucket for head sizes (d, dv): 64, 128 or 256; 0 when none. */
int bs_bucket(int d, int dv)
{
	const int x = d > dv ? d : dv;
	return x < 1 ? 0 : x <= 64 ? 64 : x <= 128 ? 128 : x <= 256 ? 256 : 0;
}

template <int DMAX>
cudaError_t bs_launch_bucket(const struct fa_launch_args *a, float *delta, int32_t max_lk)
{
	const struct fa_problem *p = a->p;
	cudaStream_t st = fa_cuda_stream_of(a);
	dim3 gkv((unsigned)((max_lk + BS_BK - 1) / BS_BK), (unsigned)p->kv_heads, (unsigned)p->batch);
	dim3 gq((unsigned)((p->q_len + BS_BQ - 1) / BS_BQ), (unsigned)p->heads, (unsigned)p->batch);
	if (gkv.x > 0)
		bs_dkv_kernel<DMAX><<<gkv, BS_THREADS, 0, st>>>(
			*p, a->q, a->k, a->v, a->d_o, a->lse, delta, a->dk, a->dv, a->cu_seqlens_q,
			a->cu_seqlens_k, a->prefix_lens);
	if (gq.x > 0)
		bs_dq_kernel<DMAX><<<gq, BS_THREADS, 0, st>>>(*p, a->q, a->k, a->v, a->d_o, a->lse,
							      delta, a->dq, a->cu_seqlens_q,
							      a->cu_seqlens_k, a->prefix_lens);
	return cudaGetLastError();
}

} /* namespace */

extern "C" int fa_cuda_flash_bwd_simt_supports(const struct fa_problem *p, char *why,
					      size_t why_size)
{
	if (!bs_bucket(p->head_dim, p->head_dim_v)) {
		snprintf(why, why_size, "head_dim %d / head_dim_v %d outside 1..256", p->head_dim,
			 p->head_dim_v);
		return 0;
	}
	if (p->kv_heads < 1 || p->heads % p->kv_heads != 0) {
		snprintf(why, why_size, "heads %d not divisible by kv_heads %d", p->heads, p->kv_heads);
		return 0;
	}
	if (p->heads > 65535 || p->batch > 65535) {
		snprintf(why, why_size, "heads %d or batch %d above the grid limit 65535", p->heads,
			 p->batch);
		return 0;
	}
	return 1;
}

extern "C" size_t fa_cuda_flash_bwd_simt_workspace_bytes(const struct fa_problem *p,
							 const int32_t *params)
{
	(void)params;
	return sizeof(float) * (size_t)p->total_q * (size_t)p->heads; /* delta */
}

extern "C" int fa_cuda_flash_bwd_simt_launch(const struct fa_launch_args *a)
{
	const struct fa_problem *p = a->p;
	char why[160];
	int bucket;
	if (!fa_cuda_flash_bwd_simt_supports(p, why, sizeof why) ||
	    !FA_RECORD_HAS(struct fa_launch_args, a, dv) || !a->lse || !a->d_o || !a->dq ||
	    !a->dk || !a->dv || !a->workspace ||
	    a->workspace_bytes < fa_cuda_flash_bwd_simt_workspace_bytes(p, NULL))
		return (int)cudaErrorInvalidValue;
	bucket = bs_bucket(p->head_dim, p->head_dim_v);
	float *delta = (float *)a->workspace;
	const int64_t rows = (int64_t)p->total_q * p->heads;
	(void)cudaGetLastError(); /* report this launch's error, not an older one */
	if (rows > 0) {
		const int per = BS_THREADS / 32;
		bs_delta_kernel<<<(unsigned)((rows + per - 1) / per), BS_THREADS, 0,
				  fa_cuda_stream_of(a)>>>(*p, a->o, a->d_o, delta);
	}
	/* varlen: kv_len is the longest sequence's */
	const int32_t max_lk = p->kv_len;
	if (p->batch <= 0)
		return (int)cudaGetLastError();
	switch (bucket) {
	case 64: return (int)bs_launch_bucket<64>(a, delta, max_lk);
	case 128: return (int)bs_launch_bucket<128>(a, delta, max_lk);
	default: return (int)bs_launch_bucket<256>(a, delta, max_lk);
	}
}
