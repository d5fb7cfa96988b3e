/* backend_impl.h - what a backend implements: the plugin ABI.
 *
 * A backend is a versioned struct of function pointers plus a context
 * (the sqlite3_vfs / ggml_backend_i pattern). The CPU backend is built into
 * fabench; GPU backends are shared objects (build/libfabench-cuda.so, ...)
 * that export
 *
 *     int fa_backend_plugin_init(int harness_api_version,
 *                                struct fa_backend *out,
 *                                char *why, size_t why_size);
 *
 * which fills *out and returns 0, or returns nonzero with a one-line reason
 * in why ("no CUDA device: cudaErrorNoDevice"). The harness refuses a plugin
 * whose api_version it does not know, naming both numbers.
 *
 * Rules for the struct: append only. New members go at the end under a
 * "version N" comment and FA_BACKEND_API_VERSION goes up. A NULL member is
 * optional (its comment says so) and the harness has a fallback.
 *
 * Memory: every pointer a backend hands out (alloc) is a backend pointer;
 * the harness only passes it back. Return codes are backend-specific ints,
 * 0 meaning success; error_string turns them into words.
 *
 * This header is plain C and is included by CUDA/HIP translation units.
 */
#ifndef FA_BACKEND_IMPL_H
#define FA_BACKEND_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "../kernels/common/fa_problem.h"

#ifdef __cplusplus
extern "C" {
#endif

#define FA_BACKEND_API_VERSION 1
#define FA_PLUGIN_INIT_SYMBOL "fa_backend_plugin_init"

struct fa_device_info {
	char name[128];    /* "NVIDIA H100 80GB HBM3", "AMD EPYC 7B13 (2 threads)" */
	char arch[64];     /* "sm_90", "gfx1201", "x86_64" */
	char driver[64];   /* driver version, "" when none */
	char runtime[64];  /* runtime version, "" when none */
	int64_t mem_total_bytes;
	int64_t mem_free_bytes;
	int32_t sm_count;  /* multiprocessors, compute units or CPU threads */
	int64_t l2_bytes;  /* last-level cache, 0 when unknown */
	double clock_mhz;  /* maximum core clock, 0 when unknown */
	int32_t host_memory; /* 1: backend pointers are host pointers the harness
	                        may read and write directly (the CPU backend) */
};

/* GPU state at one moment (NaN / -1 where unknown). */
struct fa_telemetry {
	double sm_clock_mhz, sm_clock_max_mhz, temp_c, power_w;
	int64_t throttle_reasons; /* NVML clocks-event reason bits, -1 unknown */
};

/* Ceilings measured on the device by `fabench calibrate`. */
struct fa_calibration {
	double copy_gbps;       /* device-to-device copy, bytes read + written per second */
	double matmul_tflops;   /* dense 16-bit matrix product (tensor cores where there are) */
	double matmul_fp32_tflops; /* fp32 matrix product, 0 when not measured */
	char method[128];       /* how: "cublasGemmEx bf16 8192^3", "fabench sgemm" */
};

/* A tunable parameter of a kernel (a heuristic threshold, a tile size). */
struct fa_kernel_param {
	const char *name;
	int32_t default_value;
	const int32_t *allowed; /* n_allowed values; NULL: any int in [min, max] */
	int32_t n_allowed;
	int32_t min_value, max_value;
	const char *help;
};

#define FA_KERNEL_MAX_PARAMS 8

/* Everything a launcher needs. All pointers are backend pointers. */
struct fa_launch_args {
	const struct fa_problem *p; /* host memory, valid for the call */
	const void *q, *k, *v;
	void *o;
	const int32_t *cu_seqlens_q; /* batch + 1 entries; NULL unless p->varlen */
	const int32_t *cu_seqlens_k;
	const int32_t *prefix_lens;  /* batch entries; NULL: p->prefix_len for all */
	const int32_t *params;       /* one value per kernel param, in order */
	void *workspace;             /* workspace_bytes() bytes, or NULL */
	size_t workspace_bytes;
	void *stream;                /* backend queue (cudaStream_t), NULL on CPU */
	void *backend_ctx;           /* the backend's context */
	/* Set to nonzero by the harness's watchdog when the case's timeout passes.
	 * CPU kernels poll it between tiles and return FA_KERNEL_CANCELLED. */
	volatile int *cancel;
	int32_t nthreads;            /* CPU: threads to use */
};

/* Launcher return value when *cancel was seen. */
#define FA_KERNEL_CANCELLED (-2)

struct fa_kernel {
	const char *name;        /* "<backend>_<rest>", unique */
	const char *description; /* one line for `fabench kernels` */
	uint32_t dtypes;         /* bit (1u << FA_DTYPE_x) for each supported dtype */
	int32_t head_dim_min, head_dim_max; /* inclusive, for head_dim and head_dim_v */
	const int32_t *head_dims; /* n_head_dims allowed head_dim values; NULL: the range */
	int32_t n_head_dims;
	/* Bytes per (query row, key, query head) the kernel keeps in memory while
	 * it runs, e.g. 4 for a dense kernel with an fp32 score tensor. The
	 * harness adds batch*heads*q_len*kv_len*this to the memory estimate. */
	int32_t score_bytes;
	const struct fa_kernel_param *params;
	int32_t n_params;
	/* (optional) Return 1 when the kernel can run p, else 0 with a reason in
	 * why ("head_dim 72 not instantiated"). NULL: dtypes and head dims decide. */
	int (*supports)(const struct fa_problem *p, char *why, size_t why_size);
	/* (optional) Scratch memory for p; NULL: none. */
	size_t (*workspace_bytes)(const struct fa_problem *p, const int32_t *params);
	/* Start the computation (asynchronous on GPUs). 0 or a backend error code. */
	int (*launch)(const struct fa_launch_args *a);
	/* 1: a kernel for fabench's own tests (one that faults, hangs, or is
	 * wrong on purpose); hidden unless FABENCH_TEST_KERNELS=1. */
	int32_t test_only;
};

struct fa_backend;

struct fa_backend_i {
	/* ---- version 1 ---- */
	/* Describe the device the backend runs on. */
	int (*device_info)(void *ctx, struct fa_device_info *out);
	/* Device memory. alloc sets *ptr to NULL on failure. */
	int (*alloc)(void *ctx, size_t bytes, void **ptr);
	void (*free)(void *ctx, void *ptr);
	int (*upload)(void *ctx, void *dst, const void *src, size_t bytes);
	int (*download)(void *ctx, void *dst, const void *src, size_t bytes);
	int (*memset)(void *ctx, void *dst, int byte, size_t bytes);
	/* Wait for all work queued so far. */
	int (*synchronize)(void *ctx);
	/* Timing events: record puts a mark in the queue; elapsed_ms waits for
	 * `stop` and returns the time between the two marks. */
	int (*event_create)(void *ctx, void **ev);
	int (*event_record)(void *ctx, void *ev);
	int (*event_elapsed_ms)(void *ctx, void *start, void *stop, double *ms);
	void (*event_destroy)(void *ctx, void *ev);
	/* Kernels this backend provides; the table lives as long as the backend. */
	int (*kernel_count)(void *ctx);
	const struct fa_kernel *(*kernel_get)(void *ctx, int i);
	/* Words for a return code of this backend ("cudaErrorIllegalAddress"). */
	const char *(*error_string)(void *ctx, int code);
	/* (optional) 1 when the last error left the device unusable (a CUDA
	 * sticky error); the harness then ends the run. NULL: never. */
	int (*is_sticky)(void *ctx, int code);
	/* (optional) Fill n elements of dtype at dst with fa_rng_value(seed,
	 * tensor, dist, logical index, dim) where element e of the buffer has
	 * logical index logical_index(e) described by the problem: see
	 * fa_data_fill in harness/data.h. NULL: the harness generates on the
	 * host and uploads. */
	int (*fill_random)(void *ctx, void *dst, const struct fa_problem *p, int tensor, int dist,
			   uint64_t seed);
	/* (optional) Evict the last-level cache before a cold sample. NULL: no-op. */
	int (*flush_cache)(void *ctx);
	/* Release everything; ctx is invalid afterwards. */
	void (*shutdown)(void *ctx);
	/* (optional) Dense reference of the rows rows[0..n_rows) (row id
	 * T * heads + h, host array) on the device, from the inputs in a (backend
	 * pointers; a->o is unused): fp32 storage and products, fp64 (or
	 * compensated) row sums. Writes n_rows * head_dim_v values to out (host).
	 * NULL: only the CPU reference exists. */
	int (*reference)(void *ctx, const struct fa_launch_args *a, const int64_t *rows,
			 int64_t n_rows, double *out);
	/* (optional) Clocks, temperature, power and throttle reasons now (NVML).
	 * NULL or an error: unknown. */
	int (*telemetry)(void *ctx, struct fa_telemetry *out);
	/* (optional) Capture n_launches launches of k with a into a replayable
	 * graph (for kernels shorter than ~20 us), replay it, free it. */
	int (*graph_create)(void *ctx, const struct fa_kernel *k, const struct fa_launch_args *a,
			    int n_launches, void **graph);
	int (*graph_launch)(void *ctx, void *graph);
	void (*graph_destroy)(void *ctx, void *graph);
	/* (optional) Measure this device's ceilings (can take seconds). */
	int (*calibrate)(void *ctx, struct fa_calibration *out);
};

struct fa_backend {
	int api_version;  /* FA_BACKEND_API_VERSION the backend was built with */
	const char *name; /* "cpu", "cuda", "hip", "test" */
	struct fa_backend_i iface;
	void *context;
};

typedef int (*fa_backend_plugin_init_fn)(int harness_api_version, struct fa_backend *out,
					 char *why, size_t why_size);

#ifdef __cplusplus
}
#endif

#endif /* FA_BACKEND_IMPL_H */
