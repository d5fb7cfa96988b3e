/* minimal_cuda.cu - a fabench kernel plugin for the CUDA backend: one plain,
 * correct attention forward on the GPU. One thread per (query token, head)
 * walks the keys with an online softmax in fp32; every dtype, mask, GQA
 * ratio, layout and varlen batch, head_dim up to 128. Slow on purpose: it is
 * the shape of a plugin, not a fast kernel.
 *
 * fabench owns the memory, the data, the stream, timing (CUDA events on that
 * stream), the L2 flush, NVML telemetry, CUDA graphs and the reference; the
 * launcher only launches, on a->stream. Built out of fabench's tree against
 * the installed SDK header only (see Makefile), loaded with
 * FABENCH_PLUGINS=path/to/libminimal-cuda.so; docs/plugins.md walks through
 * it.
 */
#include <stdio.h>
#include <string.h>

#include <cuda_runtime.h>

#include <fabench/plugin.h>

#define MINI_MAX_HEAD_DIM 128 /* the accumulator row lives in registers/local memory */
#define MINI_THREADS 128      /* threads per block: a multiple of the warp size */

/* The sequence that packed query token T belongs to (varlen: a scan of
 * cu_seqlens_q; otherwise T / q_len). */
__device__ int mini_seq_of(const struct fa_problem &p, const int32_t *cu_q, int64_t T)
{
	int b = 0;
	if (!p.varlen)
		return (int)(T / p.q_len);
	while (b + 1 < p.batch && cu_q[b + 1] <= T)
		b++;
	return b;
}

/* The problem is passed by value: a->p is host memory. */
__global__ void mini_attn(struct fa_problem p, const void *q, const void *k, const void *v,
			  void *o, const int32_t *cu_q, const int32_t *cu_k, const int32_t *prefix_lens)
{
	const int64_t row = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; /* T * heads + h */
	if (row >= (int64_t)p.total_q * p.heads)
		return;
	const int64_t T = row / p.heads;
	const int h = (int)(row % p.heads), g = p.heads / p.kv_heads;
	const int b = mini_seq_of(p, cu_q, T);
	const int32_t t = (int32_t)(T - fa_seq_q_start(&p, cu_q, b));
	const int32_t lq = fa_seq_q_len(&p, cu_q, b), lk = fa_seq_kv_len(&p, cu_k, b);
	const int32_t prefix = fa_seq_prefix(&p, prefix_lens, b);
	const int64_t qo = fa_q_offset(&p, cu_q, b, t, h);
	float acc[MINI_MAX_HEAD_DIM];
	float m = -INFINITY, l = 0.0f;
	for (int d = 0; d < p.head_dim_v; d++)
		acc[d] = 0.0f;
	for (int32_t j = 0; j < lk; j++) {
		if (!fa_mask_allows(p.mask, t, j, lq, lk, prefix, p.window))
			continue;
		const int64_t ko = fa_k_offset(&p, cu_k, b, j, h / g);
		const int64_t vo = fa_v_offset(&p, cu_k, b, j, h / g);
		float s = 0.0f;
		for (int d = 0; d < p.head_dim; d++)
			s += fa_load_f32(q, p.dtype, qo + d) * fa_load_f32(k, p.dtype, ko + d);
		s *= p.scale;
		const float m_new = fmaxf(m, s);
		const float c = __expf(m - m_new), e = __expf(s - m_new);
		l = l * c + e;
		for (int d = 0; d < p.head_dim_v; d++)
			acc[d] = acc[d] * c + e * fa_load_f32(v, p.dtype, vo + d);
		m = m_new;
	}
	const int64_t oo = fa_o_offset(&p, cu_q, b, t, h);
	for (int d = 0; d < p.head_dim_v; d++)
		fa_store_f32(o, p.dtype, oo + d, l > 0.0f ? acc[d] / l : 0.0f);
}

extern "C" {

static int mini_launch(const struct fa_launch_args *a)
{
	const struct fa_problem *p = a->p;
	const int64_t rows = (int64_t)p->total_q * p->heads;
	const unsigned blocks = (unsigned)((rows + MINI_THREADS - 1) / MINI_THREADS);
	if (rows == 0)
		return 0;
	mini_attn<<<blocks, MINI_THREADS, 0, (cudaStream_t)a->stream>>>(
		*p, a->q, a->k, a->v, a->o, a->cu_seqlens_q, a->cu_seqlens_k, a->prefix_lens);
	return (int)cudaGetLastError(); /* a cudaError_t: the cuda backend has words for it */
}

/* Positional (C++17 has no designated initialisers): name, description,
 * dtypes, head_dim_min, head_dim_max, head_dims, n_head_dims, score_bytes,
 * params, n_params, supports, workspace_bytes, launch, test_only,
 * struct_size. */
static const struct fa_kernel mini_kernels[] = {
	{"minimal_cuda_attn", "example plugin: one thread per query row, online softmax, fp32",
	 (1u << FA_DTYPE_FP32) | (1u << FA_DTYPE_FP16) | (1u << FA_DTYPE_BF16), 1,
	 MINI_MAX_HEAD_DIM, NULL, 0, 0, NULL, 0, NULL, NULL, mini_launch, 0,
	 (uint32_t)sizeof(struct fa_kernel)},
};

static int mini_count(void *ctx)
{
	(void)ctx;
	return (int)(sizeof mini_kernels / sizeof mini_kernels[0]);
}

static const struct fa_kernel *mini_get(void *ctx, int i)
{
	(void)ctx;
	return &mini_kernels[i];
}

int fa_kernel_plugin_init(int harness_api_version, const char *backend_name,
			  struct fa_kernel_plugin *out, char *why, size_t why_size)
{
	if (harness_api_version < FA_BACKEND_API_VERSION) {
		snprintf(why, why_size, "needs plugin API %d, fabench reads up to %d",
			 FA_BACKEND_API_VERSION, harness_api_version);
		return -1;
	}
	if (strcmp(backend_name, "cuda") != 0) {
		snprintf(why, why_size, "kernels for cuda only");
		return FA_KERNEL_PLUGIN_DECLINED;
	}
	memset(out, 0, sizeof *out);
	out->api_version = FA_BACKEND_API_VERSION;
	out->struct_size = (uint32_t)sizeof *out;
	out->name = "minimal-cuda";
	out->kernel_count = mini_count;
	out->kernel_get = mini_get;
	return FA_KERNEL_PLUGIN_ADDED;
}

} /* extern "C" */
