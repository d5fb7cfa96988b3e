/* plugin_v1.c - build/abi/libfabench-abiv1.so: a backend plugin ("abiv1")
 * compiled against the frozen version 1 header (plugin_v1.h), written the
 * way version 1 plugins were: the methods filled inline in struct
 * fa_backend, and an init that accepts only harness version 1. The current
 * harness must still load it and run its one kernel, a plain correct
 * attention forward (tests/test_plugins.c).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "plugin_v1.h"

#if FA_BACKEND_API_VERSION != 1
#error "plugin_v1.c must be built against the frozen version 1 header"
#endif

static int v1_attention(const struct fa_launch_args *a)
{
	const struct fa_problem *p = a->p;
	const int g = p->heads / p->kv_heads;
	float acc[512];
	if (p->head_dim_v > 512)
		return -3;
	for (int b = 0; b < p->batch; b++) {
		const int32_t lq = fa_seq_q_len(p, a->cu_seqlens_q, b);
		const int32_t lk = fa_seq_kv_len(p, a->cu_seqlens_k, b);
		const int32_t pre = fa_seq_prefix(p, a->prefix_lens, b);
		for (int32_t t = 0; t < lq; t++)
			for (int h = 0; h < p->heads; h++) {
				const int64_t qo = fa_q_offset(p, a->cu_seqlens_q, b, t, h);
				float m = -INFINITY, l = 0;
				for (int d = 0; d < p->head_dim_v; d++)
					acc[d] = 0;
				for (int32_t j = 0; j < lk; j++) {
					if (!fa_mask_allows(p->mask, t, j, lq, lk, pre, p->window))
						continue;
					int64_t ko = fa_k_offset(p, a->cu_seqlens_k, b, j, h / g);
					int64_t vo = fa_v_offset(p, a->cu_seqlens_k, b, j, h / g);
					float s = 0;
					for (int d = 0; d < p->head_dim; d++)
						s += fa_load_f32(a->q, p->dtype, qo + d) *
						     fa_load_f32(a->k, p->dtype, ko + d);
					s *= p->scale;
					float mn = s > m ? s : m, c = expf(m - mn), e = expf(s - mn);
					l = l * c + e;
					for (int d = 0; d < p->head_dim_v; d++)
						acc[d] = acc[d] * c + e * fa_load_f32(a->v, p->dtype, vo + d);
					m = mn;
				}
				int64_t oo = fa_o_offset(p, a->cu_seqlens_q, b, t, h);
				for (int d = 0; d < p->head_dim_v; d++)
					fa_store_f32(a->o, p->dtype, oo + d, l > 0 ? acc[d] / l : 0.0f);
			}
	}
	return 0;
}

#define ALL_DTYPES ((1u << FA_DTYPE_FP32) | (1u << FA_DTYPE_FP16) | (1u << FA_DTYPE_BF16))
/* version 1 positional record: ends at test_only */
static const struct fa_kernel kernels[] = {
	{"abiv1_attn", "a version 1 plugin's naive attention", ALL_DTYPES, 1, 512, NULL, 0, 0, NULL,
	 0, NULL, NULL, v1_attention, 0},
};

struct ev {
	struct timespec ts;
};

static int info(void *ctx, struct fa_device_info *out)
{
	(void)ctx;
	memset(out, 0, sizeof *out);
	snprintf(out->name, sizeof out->name, "abi v1 device (host memory)");
	snprintf(out->arch, sizeof out->arch, "abiv1");
	out->mem_total_bytes = out->mem_free_bytes = (int64_t)1 << 30;
	out->sm_count = 1;
	out->host_memory = 1;
	return 0;
}

static int alloc_(void *ctx, size_t bytes, void **ptr)
{
	(void)ctx;
	*ptr = malloc(bytes ? bytes : 1);
	return *ptr ? 0 : -1;
}

static void free_(void *ctx, void *p)
{
	(void)ctx;
	free(p);
}

static int copy(void *ctx, void *d, const void *s, size_t n)
{
	(void)ctx;
	memcpy(d, s, n);
	return 0;
}

static int set(void *ctx, void *d, int b, size_t n)
{
	(void)ctx;
	memset(d, b, n);
	return 0;
}

static int sync_(void *ctx)
{
	(void)ctx;
	return 0;
}

static int ev_create(void *ctx, void **e)
{
	(void)ctx;
	*e = calloc(1, sizeof(struct ev));
	return *e ? 0 : -1;
}

static int ev_record(void *ctx, void *e)
{
	(void)ctx;
	clock_gettime(CLOCK_MONOTONIC, &((struct ev *)e)->ts);
	return 0;
}

static int ev_elapsed(void *ctx, void *a, void *b, double *ms)
{
	struct timespec *x = &((struct ev *)a)->ts, *y = &((struct ev *)b)->ts;
	(void)ctx;
	*ms = (double)(y->tv_sec - x->tv_sec) * 1e3 + (double)(y->tv_nsec - x->tv_nsec) * 1e-6;
	return 0;
}

static void ev_destroy(void *ctx, void *e)
{
	(void)ctx;
	free(e);
}

static int count(void *ctx)
{
	(void)ctx;
	return 1;
}

static const struct fa_kernel *get(void *ctx, int i)
{
	(void)ctx;
	return &kernels[i];
}

static const char *words(void *ctx, int code)
{
	(void)ctx;
	return code == -1 ? "out of memory" : "abi v1 error";
}

/* the context: proves the harness reads it from where version 1 kept it */
static int context_cookie = 0x5eed;

static void shutdown_(void *ctx)
{
	if (ctx != &context_cookie)
		abort();
}

int fa_backend_plugin_init(int harness_api_version, struct fa_backend *out, char *why,
			   size_t why_size);
int fa_backend_plugin_init(int harness_api_version, struct fa_backend *out, char *why,
			   size_t why_size)
{
	if (harness_api_version != FA_BACKEND_API_VERSION) {
		snprintf(why, why_size, "abiv1 plugin knows backend API %d, harness has %d",
			 FA_BACKEND_API_VERSION, harness_api_version);
		return -1;
	}
	memset(out, 0, sizeof *out);
	out->api_version = FA_BACKEND_API_VERSION;
	out->name = "abiv1";
	out->context = &context_cookie;
	out->iface.device_info = info;
	out->iface.alloc = alloc_;
	out->iface.free = free_;
	out->iface.upload = copy;
	out->iface.download = copy;
	out->iface.memset = set;
	out->iface.synchronize = sync_;
	out->iface.event_create = ev_create;
	out->iface.event_record = ev_record;
	out->iface.event_elapsed_ms = ev_elapsed;
	out->iface.event_destroy = ev_destroy;
	out->iface.kernel_count = count;
	out->iface.kernel_get = get;
	out->iface.error_string = words;
	out->iface.shutdown = shutdown_;
	return 0;
}
