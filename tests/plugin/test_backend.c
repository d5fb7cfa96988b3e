/* test_backend.c - build/libfabench-test.so: a plugin backend named "test"
 * whose kernels misbehave on purpose, so the harness's handling of wrong
 * results, NaN, unwritten outputs, hangs, crashes and planted slowdowns can
 * be tested on any machine. Loaded through FABENCH_PLUGINS; its kernels are
 * test-only (visible with FABENCH_TEST_KERNELS=1).
 *
 * Every kernel computes attention with a plain per-row loop (fp32, online
 * softmax), then does its misdeed.
 */
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "../../harness/run/backend_impl.h"
#include "../../harness/base/parallel.h"
#include "../../kernels/common/fa_dtype.h"

#define ERR_NOMEM (-1)

struct ev {
	struct timespec ts;
};

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

struct job {
	const struct fa_launch_args *a;
	int skip_last_row;
};

static void rows(void *vctx, int64_t begin, int64_t end, int thread)
{
	struct job *j = vctx;
	const struct fa_launch_args *a = j->a;
	const struct fa_problem *p = a->p;
	int g = p->heads / p->kv_heads;
	float acc[1024];
	(void)thread;
	for (int64_t row = begin; row < end; row++) {
		int64_t T = row / p->heads;
		int h = (int)(row % p->heads), b = 0;
		if (j->skip_last_row && row == (int64_t)p->total_q * p->heads - 1)
			continue;
		while (b + 1 < p->batch && fa_seq_q_start(p, a->cu_seqlens_q, b + 1) <= T)
			b++;
		int32_t t = (int32_t)(T - fa_seq_q_start(p, a->cu_seqlens_q, b));
		int32_t lq = fa_seq_q_len(p, a->cu_seqlens_q, b);
		int32_t lk = fa_seq_kv_len(p, a->cu_seqlens_k, b);
		int32_t pre = fa_seq_prefix(p, a->prefix_lens, b);
		const int64_t qo = fa_q_offset(p, a->cu_seqlens_q, b, t, h);
		float m = -INFINITY, l = 0;
		for (int d = 0; d < p->head_dim_v; d++)
			acc[d] = 0;
		for (int32_t k = 0; k < lk; k++) {
			if (!fa_mask_allows(p->mask, t, k, lq, lk, pre, p->window))
				continue;
			int64_t ko = fa_k_offset(p, a->cu_seqlens_k, b, k, h / g);
			int64_t vo = fa_v_offset(p, a->cu_seqlens_k, b, k, h / g);
			float s = 0;
			for (int d = 0; d < p->head_dim; d++)
				s += fa_load_f32(a->q, p->dtype, qo + d) * fa_load_f32(a->k, p->dtype, ko + d);
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

static int attention(const struct fa_launch_args *a, int skip_last_row)
{
	struct job j = {a, skip_last_row};
	if (a->p->head_dim_v > 1024)
		return -3;
	fa_parallel_for((int64_t)a->p->total_q * a->p->heads, 16, a->nthreads, rows, &j);
	return 0;
}

/* The device this load pretends to drive: $FABENCH_DEVICE, which `run
 * --devices` sets in each worker; -1 when not set. */
static int this_device = -1;

/* Under $FABENCH_TEST_PIDS, each launch of test_correct and test_crash
 * appends "DEVICE PID" to that file: a test of `run --devices` counts the
 * processes that ran on each device. */
static void note_launch(void)
{
	const char *path = getenv("FABENCH_TEST_PIDS");
	FILE *f = path && *path ? fopen(path, "a") : NULL;
	if (f) {
		fprintf(f, "%d %ld\n", this_device, (long)getpid());
		fclose(f);
	}
}

/* Under $FABENCH_TEST_ONCE (a path), test_crash and test_spin misbehave
 * only in the launch that creates that file, and compute the right result in
 * the others: one fault in the middle of a run. 1: misbehave this time. */
static int misbehave_now(void)
{
	const char *once = getenv("FABENCH_TEST_ONCE");
	int fd;
	if (!once || !*once)
		return 1;
	fd = open(once, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0)
		return 0;
	close(fd);
	return 1;
}

/* FABENCH_TEST_SKIP_WHY=TEXT: test_correct refuses every case with TEXT as
 * its reason (a plugin's own words, which reach every writer). */
static int correct_supports(const struct fa_problem *p, char *why, size_t why_size)
{
	const char *text = getenv("FABENCH_TEST_SKIP_WHY");
	(void)p;
	if (!text || !*text)
		return 1;
	snprintf(why, why_size, "%s", text);
	return 0;
}

static int k_correct(const struct fa_launch_args *a)
{
	note_launch();
#ifdef FA_TEST_EXTRA_PCT
	/* the "slow build" of the A/B tests: the same result, a fixed share later */
	double t0 = now_s();
	int rc = attention(a, 0);
	double until = now_s() + (now_s() - t0) * FA_TEST_EXTRA_PCT / 100.0;
	while (now_s() < until)
		;
	return rc;
#else
	return attention(a, 0);
#endif
}

static int k_wrong(const struct fa_launch_args *a)
{
	int rc = attention(a, 0);
	/* one element off by 0.5: far beyond any tolerance */
	fa_store_f32(a->o, a->p->dtype, 0, fa_load_f32(a->o, a->p->dtype, 0) + 0.5f);
	return rc;
}

static int k_nan(const struct fa_launch_args *a)
{
	int rc = attention(a, 0);
	fa_store_f32(a->o, a->p->dtype, 1, NAN);
	return rc;
}

static int k_unwritten(const struct fa_launch_args *a)
{
	return attention(a, 1);
}

static int k_hang(const struct fa_launch_args *a)
{
	/* spins until the harness's watchdog cancels it (or forever without one) */
	while (!(a->cancel && *a->cancel)) {
		struct timespec ts = {0, 1000000};
		nanosleep(&ts, NULL);
	}
	return FA_KERNEL_CANCELLED;
}

static int k_spin(const struct fa_launch_args *a)
{
	/* ignores the cancel flag: only killing the process stops it (--isolate) */
	volatile int forever = 1;
	note_launch();
	if (!misbehave_now())
		return attention(a, 0);
	while (forever) {
		struct timespec ts = {0, 1000000};
		nanosleep(&ts, NULL);
	}
	return 0;
}

static int k_crash(const struct fa_launch_args *a)
{
	note_launch();
	if (!misbehave_now())
		return attention(a, 0);
	raise(SIGSEGV);
	return 0;
}

/* Computes, then busy-waits delay_pct percent of the compute time: a fixed
 * relative slowdown for testing compare's detection. */
static int k_delay(const struct fa_launch_args *a)
{
	double t0 = now_s();
	int rc = attention(a, 0);
	double t1 = now_s();
	double until = t1 + (t1 - t0) * (double)a->params[0] / 100.0;
	while (now_s() < until)
		;
	return rc;
}

/* One byte whose address tells the loads of this plugin apart: each copy
 * (`run --ab` of the plugin and a copy of it) has its own. */
static char this_copy;

/* FNV-1a of the bytes of Q, K and V: the same inputs give the same hash,
 * whichever buffers hold them. */
static uint32_t inputs_hash(const struct fa_launch_args *a)
{
	const void *buf[3] = {a->q, a->k, a->v};
	uint32_t h = 2166136261u;
	for (int t = 0; t < 3; t++) {
		const unsigned char *b = buf[t];
		size_t n = (size_t)fa_tensor_elems(a->p, t) * (size_t)fa_dtype_size(a->p->dtype);
		for (size_t i = 0; i < n; i++)
			h = (h ^ b[i]) * 16777619u;
	}
	return h;
}

/* Right (idle=1: leaves the output as it found it), and each launch
 * appends one line to the file $FABENCH_TEST_RECORD names: this copy, then
 * the buffers it was given and a hash of the inputs they hold ("copy q k v
 * o cu_q cu_k prefix ws ws_bytes hash"), so that a test sees which buffers
 * each side of --ab, or each launch of a graph, ran on. */
static int k_record(const struct fa_launch_args *a)
{
	const char *path = getenv("FABENCH_TEST_RECORD");
	int rc = a->params[1] ? 0 : attention(a, 0);
	FILE *f = path && *path ? fopen(path, "a") : NULL;
	if (f) {
		fprintf(f, "%p %p %p %p %p %p %p %p %p %zu %08x\n", (void *)&this_copy, a->q, a->k,
			a->v, a->o, (const void *)a->cu_seqlens_q, (const void *)a->cu_seqlens_k,
			(const void *)a->prefix_lens, a->workspace, a->workspace_bytes,
			(unsigned)inputs_hash(a));
		fclose(f);
	}
	return rc;
}

/* The workspace of test_record: ws_kib KiB, so that the two sides of --ab
 * can ask for different sizes (--param b:test_record.ws_kib=4). */
static size_t record_ws(const struct fa_problem *p, const int32_t *params)
{
	(void)p;
	return (size_t)params[0] * 1024;
}

static const int32_t ws_allowed[] = {1, 4};
static const struct fa_kernel_param record_params[] = {
	{"ws_kib", 1, ws_allowed, 2, 0, 0, "workspace size in KiB"},
	{"idle", 0, NULL, 0, 0, 1, "1: compute nothing (the output stays as it was)"},
};

static const int32_t delay_allowed[] = {0, 1, 2, 5, 10, 50};
static const struct fa_kernel_param delay_params[] = {
	{"delay_pct", 0, delay_allowed, 6, 0, 0, "extra busy time, percent of the compute time"},
};

#define ALL_DTYPES ((1u << FA_DTYPE_FP32) | (1u << FA_DTYPE_FP16) | (1u << FA_DTYPE_BF16))
/* positional up to test_only, then struct_size (the SDK's version 2 member)
 * and the version 3 members: forward kernels that do not write the LSE */
#define KSIZE ((uint32_t)sizeof(struct fa_kernel)), FA_PASS_FWD, 0, NULL
static const struct fa_kernel kernels[] = {
	{"test_correct", "naive fp32 attention (right)", ALL_DTYPES, 1, 1024, NULL, 0, 0, NULL, 0,
	 correct_supports, NULL, k_correct, 1, KSIZE},
	{"test_wrong", "right, then one element off by 0.5", ALL_DTYPES, 1, 1024, NULL, 0, 0, NULL,
	 0, NULL, NULL, k_wrong, 1, KSIZE},
	{"test_nan", "right, then one NaN", ALL_DTYPES, 1, 1024, NULL, 0, 0, NULL, 0, NULL, NULL,
	 k_nan, 1, KSIZE},
	{"test_unwritten", "leaves the last row unwritten", ALL_DTYPES, 1, 1024, NULL, 0, 0, NULL, 0,
	 NULL, NULL, k_unwritten, 1, KSIZE},
	{"test_hang", "never finishes unless cancelled", ALL_DTYPES, 1, 1024, NULL, 0, 0, NULL, 0,
	 NULL, NULL, k_hang, 1, KSIZE},
	{"test_spin", "never finishes, ignoring cancellation ($FABENCH_TEST_ONCE: once)", ALL_DTYPES, 1, 1024, NULL, 0, 0, NULL,
	 0, NULL, NULL, k_spin, 1, KSIZE},
	{"test_crash", "raises SIGSEGV ($FABENCH_TEST_ONCE: once)", ALL_DTYPES, 1, 1024, NULL, 0, 0, NULL, 0, NULL, NULL,
	 k_crash, 1, KSIZE},
	{"test_delay", "right, plus a busy wait of delay_pct percent", ALL_DTYPES, 1, 1024, NULL, 0,
	 0, delay_params, 1, NULL, NULL, k_delay, 1, KSIZE},
	{"test_record", "right, and records its buffers in $FABENCH_TEST_RECORD", ALL_DTYPES, 1,
	 1024, NULL, 0, 0, record_params, 2, NULL, record_ws, k_record, 1, KSIZE},
};

/* Under $FABENCH_TEST_LOCK_DIR, a load pinned to device D holds an exclusive
 * lock on DIR/device-D for as long as the process lives, and refuses to load
 * when another process holds it: a test of `run --devices` sees two workers
 * of one run on one device as errors. Returns 0, or -1 with why filled. */
static int lock_device(char *why, size_t why_size)
{
	const char *dir = getenv("FABENCH_TEST_LOCK_DIR");
	char path[1024];
	int fd;
	if (this_device < 0 || !dir || !*dir)
		return 0;
	snprintf(path, sizeof path, "%s/device-%d", dir, this_device);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) != 0) {
		snprintf(why, why_size, "test device %d is in use by another process", this_device);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return 0; /* fd stays open: the lock goes with the process */
}

static int t_info(void *ctx, struct fa_device_info *out)
{
	(void)ctx;
	memset(out, 0, sizeof *out);
	/* FABENCH_TEST_DEVICE_MEMORY=1: say the buffers are device memory (they
	 * are still malloc'd; upload and download copy), so that the runner
	 * treats this plugin as it treats a GPU's (--ab does not share buffers
	 * but swaps them at random, docs/compare.md) */
	const char *dm = getenv("FABENCH_TEST_DEVICE_MEMORY");
	/* FABENCH_TEST_DEVICE_NAME=TEXT: the device's name, as a plugin may
	 * word it (quotes, control characters, bytes that are not UTF-8) */
	const char *dn = getenv("FABENCH_TEST_DEVICE_NAME");
	int host = !(dm && strcmp(dm, "1") == 0);
	if (dn && *dn)
		snprintf(out->name, sizeof out->name, "%s", dn);
	else if (this_device >= 0)
		snprintf(out->name, sizeof out->name, "test device %d (%s memory)", this_device,
			 host ? "host" : "device");
	else
		snprintf(out->name, sizeof out->name, "test device (%s memory)",
			 host ? "host" : "device");
	snprintf(out->arch, sizeof out->arch, "test");
	out->mem_total_bytes = out->mem_free_bytes = (int64_t)4 << 30;
	out->sm_count = 1;
	out->host_memory = host;
	/* FABENCH_TEST_L2_BYTES=N: a last-level cache of N bytes (cold graphs
	 * size their copies by it); unset: unknown */
	const char *l2 = getenv("FABENCH_TEST_L2_BYTES");
	out->l2_bytes = l2 ? atoll(l2) : 0;
	return 0;
}

static int t_alloc(void *ctx, size_t bytes, void **ptr)
{
	(void)ctx;
	*ptr = malloc(bytes ? bytes : 1);
	return *ptr ? 0 : ERR_NOMEM;
}

static void t_free(void *ctx, void *p)
{
	(void)ctx;
	free(p);
}

static int t_copy(void *ctx, void *d, const void *s, size_t n)
{
	(void)ctx;
	memcpy(d, s, n);
	return 0;
}

static int t_memset(void *ctx, void *d, int b, size_t n)
{
	(void)ctx;
	memset(d, b, n);
	return 0;
}

static int t_sync(void *ctx)
{
	(void)ctx;
	return 0;
}

static int t_ev_create(void *ctx, void **e)
{
	(void)ctx;
	*e = calloc(1, sizeof(struct ev));
	return *e ? 0 : ERR_NOMEM;
}

static int t_ev_record(void *ctx, void *e)
{
	(void)ctx;
	clock_gettime(CLOCK_MONOTONIC, &((struct ev *)e)->ts);
	return 0;
}

static int t_ev_elapsed(void *ctx, void *a, void *b, double *ms)
{
	struct timespec *x = &((struct ev *)a)->ts, *y = &((struct ev *)b)->ts;
	(void)ctx;
	*ms = (double)(y->tv_sec - x->tv_sec) * 1e3 + (double)(y->tv_nsec - x->tv_nsec) * 1e-6;
	return 0;
}

static void t_ev_destroy(void *ctx, void *e)
{
	(void)ctx;
	free(e);
}

static int t_count(void *ctx)
{
	(void)ctx;
	return (int)(sizeof kernels / sizeof kernels[0]);
}

static const struct fa_kernel *t_get(void *ctx, int i)
{
	(void)ctx;
	return &kernels[i];
}

static const char *t_strerror(void *ctx, int code)
{
	(void)ctx;
	return code == ERR_NOMEM ? "out of memory" : code == FA_KERNEL_CANCELLED ? "cancelled"
										  : "test error";
}

/* FABENCH_TEST_FLUSH_LOG=FILE: each flush appends the flush the harness
 * asked for (FABENCH_FLUSH, "-" when unset) as a line of FILE, so a test
 * sees what a GPU backend would be told. */
static int t_flush(void *ctx)
{
	const char *log = getenv("FABENCH_TEST_FLUSH_LOG"), *mode = getenv("FABENCH_FLUSH");
	(void)ctx;
	if (log && *log) {
		FILE *f = fopen(log, "a");
		if (!f)
			return 1; /* "test error" */
		fprintf(f, "%s\n", mode ? mode : "-");
		fclose(f);
	}
	return 0;
}

/* Graphs: the launches are kept and run one after another on replay. */
struct tgraph {
	const struct fa_kernel *k;
	struct fa_launch_args *a;
	int n_sets, n_launches;
};

static int t_graph_create_sets(void *ctx, const struct fa_kernel *k,
			       const struct fa_launch_args *a, int n_sets, int n_launches,
			       void **graph)
{
	struct tgraph *g = calloc(1, sizeof *g);
	(void)ctx;
	*graph = NULL;
	if (!g || !(g->a = malloc(sizeof *a * (size_t)n_sets))) {
		free(g);
		return ERR_NOMEM;
	}
	memcpy(g->a, a, sizeof *a * (size_t)n_sets);
	g->k = k;
	g->n_sets = n_sets;
	g->n_launches = n_launches;
	*graph = g;
	return 0;
}

static int t_graph_create(void *ctx, const struct fa_kernel *k, const struct fa_launch_args *a,
			  int n_launches, void **graph)
{
	return t_graph_create_sets(ctx, k, a, 1, n_launches, graph);
}

static int t_graph_launch(void *ctx, void *graph)
{
	struct tgraph *g = graph;
	int rc = 0;
	(void)ctx;
	for (int i = 0; i < g->n_launches && rc == 0; i++)
		rc = g->k->launch(&g->a[i % g->n_sets]);
	return rc;
}

static void t_graph_destroy(void *ctx, void *graph)
{
	struct tgraph *g = graph;
	(void)ctx;
	if (g)
		free(g->a);
	free(g);
}

static void t_shutdown(void *ctx)
{
	(void)ctx;
}

static const struct fa_backend_i t_iface = {
	.device_info = t_info,
	.alloc = t_alloc,
	.free = t_free,
	.upload = t_copy,
	.download = t_copy,
	.memset = t_memset,
	.synchronize = t_sync,
	.event_create = t_ev_create,
	.event_record = t_ev_record,
	.event_elapsed_ms = t_ev_elapsed,
	.event_destroy = t_ev_destroy,
	.kernel_count = t_count,
	.kernel_get = t_get,
	.error_string = t_strerror,
	.shutdown = t_shutdown,
	.flush_cache = t_flush,
	.graph_create = t_graph_create,
	.graph_launch = t_graph_launch,
	.graph_destroy = t_graph_destroy,
	.graph_create_sets = t_graph_create_sets,
};

int fa_backend_plugin_init(int harness_api_version, struct fa_backend *out, char *why,
			   size_t why_size);
int fa_backend_plugin_init(int harness_api_version, struct fa_backend *out, char *why,
			   size_t why_size)
{
	if (harness_api_version < FA_BACKEND_API_VERSION) {
		snprintf(why, why_size, "test plugin needs backend API %d, harness reads up to %d",
			 FA_BACKEND_API_VERSION, harness_api_version);
		return -1;
	}
	if (getenv("FABENCH_DEVICE"))
		this_device = atoi(getenv("FABENCH_DEVICE"));
	if (lock_device(why, why_size) != 0)
		return -1;
	memset(out, 0, sizeof *out);
	out->api_version = FA_BACKEND_API_VERSION;
	out->struct_size = (uint32_t)sizeof *out;
	out->name = "test";
	out->iface = &t_iface;
	return 0;
}
