/* backend_cpu.c - the built-in CPU backend: host memory, a monotonic clock
 * for events, and the kernels of kernels/cpu/. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "../../kernels/cpu/cpu_kernels.h"
#include "backend.h"
#include "data.h"
#include "../base/parallel.h"

#define CPU_ERR_NOMEM (-1)
#define CPU_ERR_BADARG (-3)

struct cpu_ctx {
	int nthreads;
};

struct cpu_event {
	struct timespec ts;
};

/* "Key : value" lines of a /proc file: copies the value of key into buf. */
static int proc_value(const char *path, const char *key, char *buf, size_t size)
{
	char line[512];
	size_t klen = strlen(key);
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof line, f)) {
		if (strncmp(line, key, klen) != 0)
			continue;
		char *v = strchr(line + klen, ':');
		if (!v)
			continue;
		v++;
		while (*v == ' ' || *v == '\t')
			v++;
		v[strcspn(v, "\n")] = '\0';
		snprintf(buf, size, "%s", v);
		fclose(f);
		return 0;
	}
	fclose(f);
	return -1;
}

static int64_t meminfo_bytes(const char *key)
{
	char v[128];
	if (proc_value("/proc/meminfo", key, v, sizeof v) != 0)
		return 0;
	return (int64_t)strtoll(v, NULL, 10) * 1024; /* values are in kB */
}

static int cpu_device_info(void *vctx, struct fa_device_info *out)
{
	struct cpu_ctx *ctx = vctx;
	char model[128] = "unknown CPU";
	struct utsname u;
	long l3;
	memset(out, 0, sizeof *out);
	proc_value("/proc/cpuinfo", "model name", model, sizeof model);
	snprintf(out->name, sizeof out->name, "%.100s (%d threads)", model, ctx->nthreads);
	if (uname(&u) == 0) {
		snprintf(out->arch, sizeof out->arch, "%.60s", u.machine);
		snprintf(out->driver, sizeof out->driver, "linux %.50s", u.release);
	}
	snprintf(out->runtime, sizeof out->runtime, "pthreads");
	out->mem_total_bytes = meminfo_bytes("MemTotal");
	out->mem_free_bytes = meminfo_bytes("MemAvailable");
	out->sm_count = ctx->nthreads;
	l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
	if (l3 <= 0)
		l3 = sysconf(_SC_LEVEL2_CACHE_SIZE);
	out->l2_bytes = l3 > 0 ? l3 : 0;
	out->host_memory = 1;
	return 0;
}

static int cpu_alloc(void *ctx, size_t bytes, void **ptr)
{
	(void)ctx;
	*ptr = NULL;
	/* 64: a cache line, and wide enough for any vector load */
	if (posix_memalign(ptr, 64, bytes ? bytes : 64) != 0) {
		*ptr = NULL;
		return CPU_ERR_NOMEM;
	}
	return 0;
}

static void cpu_free(void *ctx, void *ptr)
{
	(void)ctx;
	free(ptr);
}

static int cpu_copy(void *ctx, void *dst, const void *src, size_t bytes)
{
	(void)ctx;
	memcpy(dst, src, bytes);
	return 0;
}

static int cpu_memset(void *ctx, void *dst, int byte, size_t bytes)
{
	(void)ctx;
	memset(dst, byte, bytes);
	return 0;
}

static int cpu_sync(void *ctx)
{
	(void)ctx;
	return 0;
}

static int cpu_event_create(void *ctx, void **ev)
{
	(void)ctx;
	*ev = calloc(1, sizeof(struct cpu_event));
	return *ev ? 0 : CPU_ERR_NOMEM;
}

static int cpu_event_record(void *ctx, void *ev)
{
	(void)ctx;
	clock_gettime(CLOCK_MONOTONIC, &((struct cpu_event *)ev)->ts);
	return 0;
}

static int cpu_event_elapsed(void *ctx, void *start, void *stop, double *ms)
{
	const struct timespec *a = &((struct cpu_event *)start)->ts;
	const struct timespec *b = &((struct cpu_event *)stop)->ts;
	(void)ctx;
	*ms = (double)(b->tv_sec - a->tv_sec) * 1e3 + (double)(b->tv_nsec - a->tv_nsec) * 1e-6;
	return 0;
}

static void cpu_event_destroy(void *ctx, void *ev)
{
	(void)ctx;
	free(ev);
}

static int cpu_kernel_count(void *ctx)
{
	(void)ctx;
	return fa_cpu_n_kernels;
}

static const struct fa_kernel *cpu_kernel_get(void *ctx, int i)
{
	(void)ctx;
	return i >= 0 && i < fa_cpu_n_kernels ? &fa_cpu_kernels[i] : NULL;
}

static const char *cpu_error_string(void *ctx, int code)
{
	(void)ctx;
	switch (code) {
	case 0: return "success";
	case CPU_ERR_NOMEM: return "out of memory";
	case FA_KERNEL_CANCELLED: return "cancelled";
	case CPU_ERR_BADARG: return "invalid argument";
	default: return fa_cpu_kernel_strerror(code);
	}
}

static int cpu_fill_random(void *vctx, void *dst, const struct fa_problem *p, int tensor, int dist,
			   uint64_t seed)
{
	struct cpu_ctx *ctx = vctx;
	fa_data_fill(p, tensor, dist, seed, dst, ctx->nthreads);
	return 0;
}

/* ---- calibrate: memcpy bandwidth and a blocked fp32 matrix product ---- */

struct copy_job {
	char *dst;
	const char *src;
	size_t chunk, bytes;
};

static void copy_chunk(void *vctx, int64_t b, int64_t e, int thread)
{
	struct copy_job *j = vctx;
	(void)thread;
	for (int64_t i = b; i < e; i++) {
		size_t off = (size_t)i * j->chunk;
		size_t n = off + j->chunk <= j->bytes ? j->chunk : j->bytes - off;
		memcpy(j->dst + off, j->src + off, n);
	}
}

#define GEMM_N 768 /* 768^3 * 2 = 0.9 GFLOP: long enough to time, short on 2 cores */
#define GEMM_TILE 64

struct gemm_job {
	const float *a, *b;
	float *c;
};

static void gemm_rows(void *vctx, int64_t b0, int64_t e0, int thread)
{
	struct gemm_job *j = vctx;
	(void)thread;
	for (int64_t ib = b0; ib < e0; ib++) {
		int i0 = (int)ib * GEMM_TILE;
		for (int k0 = 0; k0 < GEMM_N; k0 += GEMM_TILE)
			for (int i = i0; i < i0 + GEMM_TILE; i++)
				for (int k = k0; k < k0 + GEMM_TILE; k++) {
					float aik = j->a[i * GEMM_N + k];
					const float *brow = j->b + (size_t)k * GEMM_N;
					float *crow = j->c + (size_t)i * GEMM_N;
					for (int x = 0; x < GEMM_N; x++)
						crow[x] += aik * brow[x];
				}
	}
}

static int cpu_calibrate(void *vctx, struct fa_calibration *out)
{
	struct cpu_ctx *ctx = vctx;
	size_t bytes = (size_t)256 << 20; /* 256 MiB: well past any CPU cache */
	char *src = malloc(bytes), *dst = malloc(bytes);
	float *a = NULL, *b = NULL, *c = NULL;
	double best = 0;
	memset(out, 0, sizeof *out);
	if (!src || !dst)
		goto nomem;
	memset(src, 1, bytes);
	memset(dst, 2, bytes);
	for (int rep = 0; rep < 5; rep++) {
		struct copy_job j = {dst, src, (size_t)1 << 20, bytes};
		struct timespec t0, t1;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		fa_parallel_for((int64_t)(bytes >> 20), 8, ctx->nthreads, copy_chunk, &j);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
		if (s > 0 && 2.0 * (double)bytes / s > best)
			best = 2.0 * (double)bytes / s;
	}
	out->copy_gbps = best / 1e9;
	a = malloc(sizeof(float) * GEMM_N * GEMM_N);
	b = malloc(sizeof(float) * GEMM_N * GEMM_N);
	c = calloc((size_t)GEMM_N * GEMM_N, sizeof(float));
	if (!a || !b || !c)
		goto nomem;
	for (int i = 0; i < GEMM_N * GEMM_N; i++) {
		a[i] = (float)((i * 7) % 13) * 0.1f - 0.6f;
		b[i] = (float)((i * 5) % 11) * 0.1f - 0.5f;
	}
	best = 0;
	for (int rep = 0; rep < 3; rep++) {
		struct gemm_job j = {a, b, c};
		struct timespec t0, t1;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		fa_parallel_for(GEMM_N / GEMM_TILE, 1, ctx->nthreads, gemm_rows, &j);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
		double fl = 2.0 * GEMM_N * GEMM_N * (double)GEMM_N;
		if (s > 0 && fl / s > best)
			best = fl / s;
	}
	out->matmul_fp32_tflops = best / 1e12;
	out->matmul_tflops = out->matmul_fp32_tflops; /* no 16-bit matrix unit used on the CPU */
	snprintf(out->method, sizeof out->method, "memcpy 256 MiB x%d threads; blocked fp32 %d^3",
		 ctx->nthreads, GEMM_N);
	free(src);
	free(dst);
	free(a);
	free(b);
	free(c);
	return 0;
nomem:
	free(src);
	free(dst);
	free(a);
	free(b);
	free(c);
	return CPU_ERR_NOMEM;
}

static void cpu_shutdown(void *ctx)
{
	free(ctx);
}

static const struct fa_backend_i cpu_iface = {
	.device_info = cpu_device_info,
	.alloc = cpu_alloc,
	.free = cpu_free,
	.upload = cpu_copy,
	.download = cpu_copy,
	.memset = cpu_memset,
	.synchronize = cpu_sync,
	.event_create = cpu_event_create,
	.event_record = cpu_event_record,
	.event_elapsed_ms = cpu_event_elapsed,
	.event_destroy = cpu_event_destroy,
	.kernel_count = cpu_kernel_count,
	.kernel_get = cpu_kernel_get,
	.error_string = cpu_error_string,
	.fill_random = cpu_fill_random,
	.calibrate = cpu_calibrate,
	.shutdown = cpu_shutdown,
	/* no stream: kernels run on the calling thread and its pool */
};

int fa_cpu_backend_init(int harness_api_version, struct fa_backend *out, char *why,
			size_t why_size)
{
	struct cpu_ctx *ctx;
	if (harness_api_version < FA_BACKEND_API_VERSION) {
		snprintf(why, why_size, "cpu backend built for API %d, harness reads up to %d",
			 FA_BACKEND_API_VERSION, harness_api_version);
		return -1;
	}
	ctx = calloc(1, sizeof *ctx);
	if (!ctx) {
		snprintf(why, why_size, "out of memory");
		return -1;
	}
	ctx->nthreads = fa_cpu_threads();
	memset(out, 0, sizeof *out);
	out->api_version = FA_BACKEND_API_VERSION;
	out->struct_size = (uint32_t)sizeof *out;
	out->name = "cpu";
	out->context = ctx;
	out->iface = &cpu_iface;
	return 0;
}
