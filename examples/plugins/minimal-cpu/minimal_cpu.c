/* minimal_cpu.c - a fabench kernel plugin for the CPU backend: one plain,
 * correct attention forward (fp32 accumulation, online softmax), every
 * dtype, mask, GQA ratio, layout and varlen batch, head_dim up to 256.
 *
 * It is built out of fabench's tree against the installed SDK header only
 * (see Makefile) and loaded with FABENCH_PLUGINS=path/to/libminimal-cpu.so;
 * its kernel then runs beside cpu_dense and cpu_flash in `fabench run
 * --backend cpu`, checked against the same fp64 reference and timed the
 * same way. docs/plugins.md walks through it.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <fabench/plugin.h>

#define MINI_MAX_HEAD_DIM 256 /* the accumulator row lives on the stack */
#define MINI_ERR_SHAPE (-100) /* a problem supports() should have refused */

/* The sequence that packed query token T belongs to (varlen: a scan of
 * cu_seqlens_q; otherwise T / q_len). */
static int seq_of(const struct fa_problem *p, const int32_t *cu_q, int64_t T)
{
	int b = 0;
	if (!p->varlen)
		return (int)(T / p->q_len);
	while (b + 1 < p->batch && cu_q[b + 1] <= T)
		b++;
	return b;
}

static int mini_launch(const struct fa_launch_args *a)
{
	const struct fa_problem *p = a->p;
	const int g = p->heads / p->kv_heads; /* GQA: query heads per K/V head */
	float acc[MINI_MAX_HEAD_DIM];
	if (p->head_dim_v > MINI_MAX_HEAD_DIM)
		return MINI_ERR_SHAPE;
	for (int64_t T = 0; T < p->total_q; T++) {
		const int b = seq_of(p, a->cu_seqlens_q, T);
		const int32_t t = (int32_t)(T - fa_seq_q_start(p, a->cu_seqlens_q, b));
		const int32_t lq = fa_seq_q_len(p, a->cu_seqlens_q, b);
		const int32_t lk = fa_seq_kv_len(p, a->cu_seqlens_k, b);
		const int32_t prefix = fa_seq_prefix(p, a->prefix_lens, b);
		if (a->cancel && *a->cancel) /* the harness's timeout passed */
			return FA_KERNEL_CANCELLED;
		for (int h = 0; h < p->heads; h++) {
			const int64_t qo = fa_q_offset(p, a->cu_seqlens_q, b, t, h);
			float m = -INFINITY, l = 0.0f;
			for (int d = 0; d < p->head_dim_v; d++)
				acc[d] = 0.0f;
			for (int32_t j = 0; j < lk; j++) {
				if (!fa_mask_allows(p->mask, t, j, lq, lk, prefix, p->window))
					continue;
				const int64_t ko = fa_k_offset(p, a->cu_seqlens_k, b, j, h / g);
				const int64_t vo = fa_v_offset(p, a->cu_seqlens_k, b, j, h / g);
				float s = 0.0f;
				for (int d = 0; d < p->head_dim; d++)
					s += fa_load_f32(a->q, p->dtype, qo + d) *
					     fa_load_f32(a->k, p->dtype, ko + d);
				s *= p->scale;
				/* online softmax: rescale what was summed when the max grows */
				const float m_new = s > m ? s : m;
				const float c = expf(m - m_new), e = expf(s - m_new);
				l = l * c + e;
				for (int d = 0; d < p->head_dim_v; d++)
					acc[d] = acc[d] * c + e * fa_load_f32(a->v, p->dtype, vo + d);
				m = m_new;
			}
			/* a row with no key to attend outputs zeros (fabench's convention) */
			const int64_t oo = fa_o_offset(p, a->cu_seqlens_q, b, t, h);
			for (int d = 0; d < p->head_dim_v; d++)
				fa_store_f32(a->o, p->dtype, oo + d, l > 0.0f ? acc[d] / l : 0.0f);
		}
	}
	return 0;
}

static const struct fa_kernel mini_kernels[] = {
	{
		.name = "minimal_cpu_attn",
		.description = "example plugin: one query row at a time, online softmax, fp32",
		.dtypes = (1u << FA_DTYPE_FP32) | (1u << FA_DTYPE_FP16) | (1u << FA_DTYPE_BF16),
		.head_dim_min = 1,
		.head_dim_max = MINI_MAX_HEAD_DIM,
		.launch = mini_launch,
		.struct_size = sizeof(struct fa_kernel),
	},
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
			  struct fa_kernel_plugin *out, char *why, size_t why_size);

int fa_kernel_plugin_init(int harness_api_version, const char *backend_name,
			  struct fa_kernel_plugin *out, char *why, size_t why_size)
{
	if (harness_api_version < FA_BACKEND_API_VERSION) {
		snprintf(why, why_size, "needs plugin API %d, fabench reads up to %d",
			 FA_BACKEND_API_VERSION, harness_api_version);
		return -1;
	}
	if (strcmp(backend_name, "cpu") != 0) {
		snprintf(why, why_size, "kernels for cpu only");
		return FA_KERNEL_PLUGIN_DECLINED;
	}
	memset(out, 0, sizeof *out);
	out->api_version = FA_BACKEND_API_VERSION;
	out->struct_size = sizeof *out;
	out->name = "minimal-cpu";
	out->kernel_count = mini_count;
	out->kernel_get = mini_get;
	return FA_KERNEL_PLUGIN_ADDED;
}
