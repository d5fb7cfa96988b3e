/* fabench/plugin.h - the fabench plugin SDK: everything a third party needs
 * to put a flash-attention kernel into fabench's runs, beside fabench's own
 * kernels and the vendor's, measured, checked and reported the same way.
 *
 * One self-contained header (C11 and C++/CUDA/HIP; it includes only the C
 * standard library). Install it with `make install-sdk PREFIX=DIR` and build
 * against -IDIR/include. docs/plugins.md is the guide; this header is the
 * contract.
 *
 * Two kinds of plugin, both shared objects:
 *
 *   - a KERNEL plugin adds kernels to a backend fabench already has (cpu,
 *     cuda, hip). It exports FA_KERNEL_PLUGIN_INIT_SYMBOL:
 *
 *         int fa_kernel_plugin_init(int harness_api_version,
 *                                   const char *backend_name,
 *                                   struct fa_kernel_plugin *out,
 *                                   char *why, size_t why_size);
 *
 *     The harness owns memory, data, timing, the L2 flush, telemetry, CUDA
 *     graphs and the reference; the plugin only launches (it gets the
 *     backend's stream in fa_launch_args.stream).
 *
 *   - a BACKEND plugin brings a whole device runtime (memory, events,
 *     kernels): it exports FA_PLUGIN_INIT_SYMBOL and fills struct
 *     fa_backend. fabench's CUDA backend is one.
 *
 * ABI rules (the sqlite3_vfs pattern). Records that cross the boundary carry
 * their version or size: struct fa_backend and struct fa_kernel_plugin start
 * with api_version and struct_size; struct fa_kernel, fa_problem and
 * fa_launch_args end their version 1 members with a struct_size (appended so
 * that positional initialisers and version 1 plugins stay valid). New members
 * are only ever appended, under a "version N" comment, and
 * FA_BACKEND_API_VERSION goes up. The harness loads plugins of versions
 * FA_BACKEND_API_VERSION_MIN to FA_BACKEND_API_VERSION, reads only the
 * members a plugin's version has, and refuses a newer plugin naming both
 * numbers. A NULL member marked "(optional)" has a fallback in the harness;
 * a missing required member is refused at load time, by name.
 *
 * Memory: every pointer a backend hands out (alloc) is a backend pointer;
 * the harness only passes it back. Return codes are backend-specific ints,
 * 0 meaning success; error_string turns them into words.
 */
#ifndef FABENCH_PLUGIN_H
#define FABENCH_PLUGIN_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* 4: graph_create_sets (a graph whose launches cycle over copies of a
 * case's buffers: cold graphs). 3: the backward pass (fa_kernel.pass,
 * writes_lse, fwd_kernel; the LSE and gradient buffers in fa_launch_args;
 * tensors dO, dQ, dK, dV). 2: struct
 * fa_backend holds its methods behind a pointer, kernel plugins,
 * struct_size in fa_kernel, fa_problem and fa_launch_args, the stream
 * method. 1: the first release (tests/abi/plugin_v1.h). */
#define FA_BACKEND_API_VERSION 4
/* The oldest plugin version this header's harness still loads. */
#define FA_BACKEND_API_VERSION_MIN 1

#if defined(__CUDACC__) || defined(__HIPCC__)
#define FA_HD __host__ __device__ __forceinline__
#else
#define FA_HD static inline
#endif

/* ---- the problem ----
 *
 * One struct describes one forward attention call:
 *   O[b, i, h, :] = softmax_j(scale * Q[b, i, h, :] . K[b, j, h / g, :] + mask) V[b, j, h / g, :]
 * with g = heads / kv_heads (GQA by index mapping, K/V are never copied).
 *
 * Plain C, no allocation, usable from C11 host code and from CUDA/HIP device
 * code (FA_HD marks functions callable on both sides).
 *
 * Conventions (documented for users in docs/suites.md):
 * - Masks are aligned bottom-right when q_len != kv_len (the flash-attention
 *   2.1+ convention): query row i of a sequence with lq queries and lk keys has
 *   its diagonal at key diag = i + (lk - lq).
 *     causal          j <= diag
 *     prefix_lm       j < prefix_len  or  j <= diag  (bidirectional prefix)
 *     sliding_window  diag - window < j <= diag      (window keys, self included)
 * - A row that may attend no key at all produces zeros, never NaN.
 * - Varlen: sequences are packed along the token axis; sequence b owns tokens
 *   cu_seqlens[b] .. cu_seqlens[b+1]-1 and attends only within itself.
 * - Addresses are in elements; the head dimension is always contiguous.
 */

/* Stored in the database by name, never by number; the numbers may change. */
enum fa_dtype { FA_DTYPE_FP32 = 0, FA_DTYPE_FP16 = 1, FA_DTYPE_BF16 = 2, FA_DTYPE_COUNT };
enum fa_mask {
	FA_MASK_NONE = 0,
	FA_MASK_CAUSAL = 1,
	FA_MASK_PREFIX_LM = 2,
	FA_MASK_SLIDING_WINDOW = 3,
	FA_MASK_COUNT
};
enum fa_layout { FA_LAYOUT_BSHD = 0, FA_LAYOUT_BHSD = 1, FA_LAYOUT_COUNT };
enum fa_dist { FA_DIST_NORMAL = 0, FA_DIST_UNIFORM = 1, FA_DIST_OUTLIERS = 2, FA_DIST_COUNT };
/* Q, K, V, O; then (version 3) the backward's dO (laid out as O, its own RNG
 * stream) and the gradients dQ, dK, dV (laid out as Q, K, V). */
enum fa_tensor {
	FA_TENSOR_Q = 0,
	FA_TENSOR_K = 1,
	FA_TENSOR_V = 2,
	FA_TENSOR_O = 3,
	FA_TENSOR_DO = 4,
	FA_TENSOR_DQ = 5,
	FA_TENSOR_DK = 6,
	FA_TENSOR_DV = 7
};
/* What a case times and a kernel computes (stored by name: "fwd", "bwd",
 * "fwd_bwd"). A kernel is FA_PASS_FWD or FA_PASS_BWD; a fwd_bwd case runs a
 * backward kernel after its forward kernel. */
enum fa_pass { FA_PASS_FWD = 0, FA_PASS_BWD = 1, FA_PASS_FWD_BWD = 2, FA_PASS_COUNT };

struct fa_problem {
	/* ---- version 1 ---- */
	int32_t batch;      /* sequences; for varlen the number of packed sequences */
	int32_t heads;      /* query heads */
	int32_t kv_heads;   /* key/value heads; heads % kv_heads == 0 */
	int32_t q_len;      /* queries per sequence; varlen: the longest */
	int32_t kv_len;     /* keys per sequence; varlen: the longest */
	int32_t head_dim;   /* Q and K */
	int32_t head_dim_v; /* V and O */
	int32_t dtype;      /* enum fa_dtype, of Q, K, V and O */
	int32_t mask;       /* enum fa_mask */
	int32_t layout;     /* enum fa_layout */
	int32_t prefix_len; /* FA_MASK_PREFIX_LM: used when prefix_lens is NULL */
	int32_t window;     /* FA_MASK_SLIDING_WINDOW: keys per query, itself included */
	int32_t varlen;     /* 1: lengths come from cu_seqlens_q / cu_seqlens_k */
	int32_t total_q;    /* query tokens over the batch (batch * q_len unless varlen) */
	int32_t total_k;    /* key tokens over the batch */
	float scale;        /* softmax scale, usually 1/sqrt(head_dim) */
	/* Element strides. Token t of sequence b, head h, starts at
	 *   (varlen ? cu_seqlens[b] * stride_s : b * stride_b) + t * stride_s + h * stride_h */
	int64_t q_stride_b, q_stride_s, q_stride_h;
	int64_t k_stride_b, k_stride_s, k_stride_h;
	int64_t v_stride_b, v_stride_s, v_stride_h;
	int64_t o_stride_b, o_stride_s, o_stride_h;
	/* ---- version 2 ---- */
	/* sizeof(struct fa_problem) of the harness that filled it. The harness is
	 * never older than a plugin it loaded, so every member of the plugin's
	 * header is there; a member appended later is there when struct_size
	 * covers it. 0 in problems a plugin builds itself. */
	uint32_t struct_size;
};

/* Bytes of one element of dtype. */
FA_HD int fa_dtype_size(int dtype)
{
	return dtype == FA_DTYPE_FP32 ? 4 : 2;
}

/* Query length of sequence b (cu may be NULL when the problem is not varlen). */
FA_HD int32_t fa_seq_q_len(const struct fa_problem *p, const int32_t *cu_q, int b)
{
	return p->varlen ? cu_q[b + 1] - cu_q[b] : p->q_len;
}

FA_HD int32_t fa_seq_kv_len(const struct fa_problem *p, const int32_t *cu_k, int b)
{
	return p->varlen ? cu_k[b + 1] - cu_k[b] : p->kv_len;
}

/* First token of sequence b along the packed token axis. */
FA_HD int64_t fa_seq_q_start(const struct fa_problem *p, const int32_t *cu_q, int b)
{
	return p->varlen ? (int64_t)cu_q[b] : (int64_t)b * p->q_len;
}

FA_HD int64_t fa_seq_kv_start(const struct fa_problem *p, const int32_t *cu_k, int b)
{
	return p->varlen ? (int64_t)cu_k[b] : (int64_t)b * p->kv_len;
}

/* Element offset of Q[b, t, h, 0]. */
FA_HD int64_t fa_q_offset(const struct fa_problem *p, const int32_t *cu_q, int b, int64_t t, int h)
{
	int64_t base = p->varlen ? (int64_t)cu_q[b] * p->q_stride_s : (int64_t)b * p->q_stride_b;
	return base + t * p->q_stride_s + (int64_t)h * p->q_stride_h;
}

FA_HD int64_t fa_k_offset(const struct fa_problem *p, const int32_t *cu_k, int b, int64_t t, int h)
{
	int64_t base = p->varlen ? (int64_t)cu_k[b] * p->k_stride_s : (int64_t)b * p->k_stride_b;
	return base + t * p->k_stride_s + (int64_t)h * p->k_stride_h;
}

FA_HD int64_t fa_v_offset(const struct fa_problem *p, const int32_t *cu_k, int b, int64_t t, int h)
{
	int64_t base = p->varlen ? (int64_t)cu_k[b] * p->v_stride_s : (int64_t)b * p->v_stride_b;
	return base + t * p->v_stride_s + (int64_t)h * p->v_stride_h;
}

FA_HD int64_t fa_o_offset(const struct fa_problem *p, const int32_t *cu_q, int b, int64_t t, int h)
{
	int64_t base = p->varlen ? (int64_t)cu_q[b] * p->o_stride_s : (int64_t)b * p->o_stride_b;
	return base + t * p->o_stride_s + (int64_t)h * p->o_stride_h;
}

/* Tokens along the packed token axis, heads and head size of tensor t
 * (enum fa_tensor). Every buffer is dense: tokens * heads * dim elements. */
FA_HD void fa_tensor_shape(const struct fa_problem *p, int t, int64_t *tokens, int32_t *heads,
			   int32_t *dim)
{
	const int qlike = t == FA_TENSOR_Q || t == FA_TENSOR_O || t == FA_TENSOR_DO || t == FA_TENSOR_DQ;
	*tokens = qlike ? p->total_q : p->total_k;
	*heads = qlike ? p->heads : p->kv_heads;
	*dim = (t == FA_TENSOR_Q || t == FA_TENSOR_K || t == FA_TENSOR_DQ || t == FA_TENSOR_DK)
		       ? p->head_dim
		       : p->head_dim_v;
}

FA_HD int64_t fa_tensor_elems(const struct fa_problem *p, int t)
{
	int64_t tokens;
	int32_t heads, dim;
	fa_tensor_shape(p, t, &tokens, &heads, &dim);
	return tokens * heads * dim;
}

/* Element offset of (packed token T, head h, 0) in tensor t. For varlen the
 * packed token is the memory token; otherwise T = b * len + t. */
FA_HD int64_t fa_tensor_offset(const struct fa_problem *p, int t, int64_t T, int h)
{
	int64_t sb, ss, sh, len;
	switch (t) {
	case FA_TENSOR_Q:
	case FA_TENSOR_DQ: sb = p->q_stride_b; ss = p->q_stride_s; sh = p->q_stride_h; len = p->q_len; break;
	case FA_TENSOR_K:
	case FA_TENSOR_DK: sb = p->k_stride_b; ss = p->k_stride_s; sh = p->k_stride_h; len = p->kv_len; break;
	case FA_TENSOR_V:
	case FA_TENSOR_DV: sb = p->v_stride_b; ss = p->v_stride_s; sh = p->v_stride_h; len = p->kv_len; break;
	default: sb = p->o_stride_b; ss = p->o_stride_s; sh = p->o_stride_h; len = p->q_len; break;
	}
	if (p->varlen)
		return T * ss + (int64_t)h * sh;
	return (T / len) * sb + (T % len) * ss + (int64_t)h * sh;
}

/* Prefix length of sequence b (prefix_lens may be NULL). */
FA_HD int32_t fa_seq_prefix(const struct fa_problem *p, const int32_t *prefix_lens, int b)
{
	return prefix_lens ? prefix_lens[b] : p->prefix_len;
}

/* Half-open key range [*lo, *hi) that query row i of a sequence with lq
 * queries and lk keys may attend, ignoring the prefix of prefix_lm (which adds
 * [0, prefix) on top). Every mask here is one contiguous range plus, for
 * prefix_lm, the prefix; kernels use this to skip whole tiles. */
FA_HD void fa_mask_range(int mask, int32_t i, int32_t lq, int32_t lk, int32_t window, int32_t *lo,
			 int32_t *hi)
{
	int64_t diag = (int64_t)i + lk - lq;
	int64_t l = 0, h = lk;
	if (mask != FA_MASK_NONE) {
		h = diag + 1;
		if (mask == FA_MASK_SLIDING_WINDOW)
			l = diag - window + 1;
	}
	if (l < 0)
		l = 0;
	if (h > lk)
		h = lk;
	if (h < l)
		h = l;
	*lo = (int32_t)l;
	*hi = (int32_t)h;
}

/* 1 when query row i may attend key j. prefix is this sequence's prefix length. */
FA_HD int fa_mask_allows(int mask, int32_t i, int32_t j, int32_t lq, int32_t lk, int32_t prefix,
			 int32_t window)
{
	int32_t lo, hi;
	if (mask == FA_MASK_PREFIX_LM && j < prefix)
		return 1;
	fa_mask_range(mask, i, lq, lk, window, &lo, &hi);
	return j >= lo && j < hi;
}

/* Number of keys query row i attends (the exact count, prefix included). */
FA_HD int64_t fa_mask_row_count(int mask, int32_t i, int32_t lq, int32_t lk, int32_t prefix,
				int32_t window)
{
	int32_t lo, hi;
	fa_mask_range(mask, i, lq, lk, window, &lo, &hi);
	if (mask == FA_MASK_PREFIX_LM) {
		int32_t p = prefix < lk ? prefix : lk;
		/* union of [0, p) and [lo, hi) where lo == 0 for prefix_lm */
		return hi > p ? hi : p;
	}
	return hi - lo;
}


/* ---- dtypes: exact conversions between fp32 and the 16-bit storage types,
 * in integer arithmetic so that the host and every GPU produce the same bits
 * (round to nearest even, NaN kept quiet, subnormals handled). fp16 and bf16
 * values are uint16_t bit patterns. ---- */

/* The dtype's name as suites and reports write it: "fp32", "fp16", "bf16";
 * NULL for an unknown value. */
static inline const char *fa_dtype_str(int dtype)
{
	return dtype == FA_DTYPE_FP32 ? "fp32"
	       : dtype == FA_DTYPE_FP16 ? "fp16"
	       : dtype == FA_DTYPE_BF16 ? "bf16"
					: (const char *)0;
}

/* The mask's name: "none", "causal", "prefix_lm", "sliding_window"; NULL when unknown. */
static inline const char *fa_mask_str(int mask)
{
	return mask == FA_MASK_NONE ? "none"
	       : mask == FA_MASK_CAUSAL ? "causal"
	       : mask == FA_MASK_PREFIX_LM ? "prefix_lm"
	       : mask == FA_MASK_SLIDING_WINDOW ? "sliding_window"
						: (const char *)0;
}

FA_HD uint32_t fa_f32_bits(float f)
{
	uint32_t u;
	memcpy(&u, &f, sizeof u);
	return u;
}

FA_HD float fa_bits_f32(uint32_t u)
{
	float f;
	memcpy(&f, &u, sizeof f);
	return f;
}

/* bf16 is the top half of fp32: round the low 16 bits to nearest even. */
FA_HD uint16_t fa_f32_to_bf16(float f)
{
	uint32_t u = fa_f32_bits(f);
	if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu)) /* NaN: keep sign, quiet */
		return (uint16_t)((u >> 16) | 0x0040u);
	u += 0x7fffu + ((u >> 16) & 1u);
	return (uint16_t)(u >> 16);
}

FA_HD float fa_bf16_to_f32(uint16_t h)
{
	return fa_bits_f32((uint32_t)h << 16);
}

/* IEEE binary16: 1 sign, 5 exponent (bias 15), 10 mantissa bits. */
FA_HD uint16_t fa_f32_to_f16(float f)
{
	uint32_t u = fa_f32_bits(f);
	uint32_t sign = (u >> 16) & 0x8000u;
	uint32_t absu = u & 0x7fffffffu;
	if (absu >= 0x7f800000u) /* Inf or NaN */
		return (uint16_t)(sign | 0x7c00u | (absu > 0x7f800000u ? 0x0200u : 0u));
	if (absu >= 0x477ff000u) /* rounds to >= 65520: overflow to Inf */
		return (uint16_t)(sign | 0x7c00u);
	if (absu < 0x38800000u) { /* below 2^-14: fp16 subnormal or zero */
		if (absu < 0x33000000u) /* below 2^-25: rounds to zero */
			return (uint16_t)sign;
		uint32_t e = absu >> 23;                    /* 102..112 */
		uint32_t m = (absu & 0x7fffffu) | 0x800000u; /* 24-bit significand */
		uint32_t shift = 126u - e;                  /* 14..24: to units of 2^-24 */
		uint32_t q = m >> shift;
		uint32_t rem = m & ((1u << shift) - 1u);
		uint32_t half = 1u << (shift - 1u);
		if (rem > half || (rem == half && (q & 1u)))
			q++;
		return (uint16_t)(sign | q);
	}
	/* normal: rebias exponent 127 -> 15 and round 23 -> 10 mantissa bits */
	uint32_t v = absu - 0x38000000u; /* (127 - 15) << 23 */
	uint32_t q = v >> 13;
	uint32_t rem = v & 0x1fffu;
	if (rem > 0x1000u || (rem == 0x1000u && (q & 1u)))
		q++; /* a carry into the exponent is the right answer */
	return (uint16_t)(sign | q);
}

FA_HD float fa_f16_to_f32(uint16_t h)
{
	uint32_t sign = ((uint32_t)h & 0x8000u) << 16;
	uint32_t e = ((uint32_t)h >> 10) & 0x1fu;
	uint32_t m = (uint32_t)h & 0x3ffu;
	if (e == 0x1fu)
		return fa_bits_f32(sign | 0x7f800000u | (m << 13));
	if (e == 0) {
		if (m == 0)
			return fa_bits_f32(sign);
		/* subnormal: m * 2^-24, exact in fp32 */
		float f = (float)m * 5.9604644775390625e-8f;
		return sign ? -f : f;
	}
	return fa_bits_f32(sign | ((e + 112u) << 23) | (m << 13));
}

/* Element i of a buffer of dtype, as fp32 (exact). */
FA_HD float fa_load_f32(const void *buf, int dtype, int64_t i)
{
	if (dtype == FA_DTYPE_FP32)
		return ((const float *)buf)[i];
	if (dtype == FA_DTYPE_FP16)
		return fa_f16_to_f32(((const uint16_t *)buf)[i]);
	return fa_bf16_to_f32(((const uint16_t *)buf)[i]);
}

/* Store x into element i of a buffer of dtype, rounding to nearest even. */
FA_HD void fa_store_f32(void *buf, int dtype, int64_t i, float x)
{
	if (dtype == FA_DTYPE_FP32)
		((float *)buf)[i] = x;
	else if (dtype == FA_DTYPE_FP16)
		((uint16_t *)buf)[i] = fa_f32_to_f16(x);
	else
		((uint16_t *)buf)[i] = fa_f32_to_bf16(x);
}

/* x rounded to dtype and back: what storing in dtype does to a value. */
FA_HD float fa_round_to_dtype(float x, int dtype)
{
	if (dtype == FA_DTYPE_FP16)
		return fa_f16_to_f32(fa_f32_to_f16(x));
	if (dtype == FA_DTYPE_BF16)
		return fa_bf16_to_f32(fa_f32_to_bf16(x));
	return x;
}

/* Outputs are filled with 0xff bytes before a kernel runs. In every dtype that
 * pattern is a NaN whose payload no arithmetic produces (canonical NaNs are
 * 0x7fc00000, 0x7e00, 0x7fc0), so an element still holding it was not written. */
#define FA_POISON_BYTE 0xff

FA_HD int fa_is_poison(const void *buf, int dtype, int64_t i)
{
	if (dtype == FA_DTYPE_FP32)
		return ((const uint32_t *)buf)[i] == 0xffffffffu;
	return ((const uint16_t *)buf)[i] == 0xffffu;
}


#ifdef __cplusplus
extern "C" {
#endif

/* ---- what a backend describes ---- */

/* Filled by device_info into the harness's record. A later version appends
 * members; the harness zeroes the record first, so a plugin built against
 * an older header leaves them 0. */
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

/* GPU state at one moment (NaN / -1 where unknown). Same rule as above. */
struct fa_telemetry {
	double sm_clock_mhz, sm_clock_max_mhz, temp_c, power_w;
	int64_t throttle_reasons; /* NVML clocks-event reason bits, -1 unknown */
};

/* Ceilings measured on the device by `fabench calibrate`. Same rule. */
struct fa_calibration {
	double copy_gbps;       /* device-to-device copy, bytes read + written per second */
	double matmul_tflops;   /* dense 16-bit matrix product (tensor cores where there are) */
	double matmul_fp32_tflops; /* fp32 matrix product, 0 when not measured */
	char method[128];       /* how: "cublasGemmEx bf16 8192^3", "fabench sgemm" */
};

/* ---- kernels ---- */

/* A tunable parameter of a kernel (a heuristic threshold, a tile size).
 * Frozen: kernels hold arrays of these, so it never grows; a later version
 * would add a new array to struct fa_kernel instead. */
struct fa_kernel_param {
	/* Letters, digits and '_', a letter or '_' first, at most
	 * FA_KERNEL_PARAM_NAME_MAX characters, each name once in a kernel
	 * (used in --param K.NAME=V and stored as "NAME=V,..."). */
	const char *name;
	int32_t default_value;  /* one of allowed, or in [min, max] */
	const int32_t *allowed; /* n_allowed values; NULL: any int in [min, max] */
	int32_t n_allowed;
	int32_t min_value, max_value;
	const char *help;
};

#define FA_KERNEL_MAX_PARAMS 16
#define FA_KERNEL_PARAM_NAME_MAX 63

/* Everything a launcher needs, filled by the harness for each call. All
 * pointers are backend pointers; the harness allocated, filled and poisoned
 * them. */
struct fa_launch_args {
	/* ---- version 1 ---- */
	const struct fa_problem *p; /* host memory, valid for the call */
	const void *q, *k, *v;
	void *o;
	const int32_t *cu_seqlens_q; /* batch + 1 entries; NULL unless p->varlen */
	const int32_t *cu_seqlens_k;
	const int32_t *prefix_lens;  /* batch entries; NULL: p->prefix_len for all */
	const int32_t *params;       /* one value per kernel param, in order */
	void *workspace;             /* workspace_bytes() bytes, or NULL */
	size_t workspace_bytes;
	/* The backend's queue (cudaStream_t, hipStream_t) that the harness times
	 * and captures graphs on: launch there and nowhere else. NULL on the CPU.
	 * (Version 1 harnesses passed NULL here for the CUDA backend's own
	 * kernels, which then used the stream in their backend_ctx.) */
	void *stream;
	void *backend_ctx;           /* the backend's context (opaque to kernel plugins) */
	/* Set to nonzero by the harness's watchdog when the case's timeout passes.
	 * CPU kernels poll it between tiles and return FA_KERNEL_CANCELLED. */
	volatile int *cancel;
	int32_t nthreads;            /* CPU: threads to use */
	/* ---- version 2 ---- */
	uint32_t struct_size;        /* sizeof(struct fa_launch_args) of the harness */
	/* ---- version 3 ---- */
	/* The log-sum-exp of each query row, lse[T * heads + h] = m + log(l) for
	 * the row's scores s_j = scale * q . k_j (natural log; +INFINITY for a
	 * row that attends no key, so exp(s - lse) is 0). A forward kernel
	 * whose record says writes_lse writes it when lse is not NULL; a
	 * backward kernel reads it (from its forward kernel). fp32, total_q *
	 * heads values. */
	float *lse;
	/* Backward kernels: dO (read, laid out as o), o holds the forward's O
	 * (read), and the gradients dq, dk, dv (written, every element, laid
	 * out as q, k, v, dtype p->dtype). NULL for forward kernels. */
	const void *d_o;
	void *dq, *dk, *dv;
};

/* 1 when the record r (struct fa_launch_args or struct fa_kernel) of a given
 * struct_size holds member m: read a member of a later version through it. */
#define FA_RECORD_HAS(type, r, m) \
	((r)->struct_size >= offsetof(type, m) + sizeof((r)->m))

/* Launcher return value when *cancel was seen. */
#define FA_KERNEL_CANCELLED (-2)

/* One kernel. Tables of these live as long as the plugin is loaded. Members
 * may be given positionally up to test_only (fabench's CUDA tables do):
 * struct_size is then 0, which means "the version 1 members only". */
struct fa_kernel {
	/* ---- version 1 ---- */
	/* Required. Letters, digits, '_', '-', '.'; unique among every kernel
	 * loaded. Convention: "<backend or project>_<rest>" ("cuda_flash_mma",
	 * "mylib_fa_fwd"). */
	const char *name;
	const char *description; /* one line for `fabench kernels` */
	uint32_t dtypes;         /* required: bit (1u << FA_DTYPE_x) for each supported dtype */
	int32_t head_dim_min, head_dim_max; /* inclusive, for head_dim and head_dim_v */
	const int32_t *head_dims; /* n_head_dims allowed head_dim values; NULL: the range */
	int32_t n_head_dims;
	/* Bytes per (query row, key, query head) the kernel keeps in memory while
	 * it runs, e.g. 4 for a dense kernel with an fp32 score tensor. The
	 * harness adds batch*heads*q_len*kv_len*this to the memory estimate. */
	int32_t score_bytes;
	const struct fa_kernel_param *params; /* n_params (at most FA_KERNEL_MAX_PARAMS) */
	int32_t n_params;
	/* (optional) Return 1 when the kernel can run p, else 0 with a reason in
	 * why ("head_dim 72 not instantiated"). NULL: dtypes and head dims decide.
	 * The harness checks dtypes and head sizes before calling it. */
	int (*supports)(const struct fa_problem *p, char *why, size_t why_size);
	/* (optional) Scratch memory for p; NULL: none. The harness allocates it
	 * on the backend and passes it in fa_launch_args.workspace. */
	size_t (*workspace_bytes)(const struct fa_problem *p, const int32_t *params);
	/* Required. Start the computation on a->stream (asynchronous on GPUs; the
	 * harness synchronises). Only launch: allocation, data, timing and
	 * checking belong to the harness, and on GPUs the call may be captured
	 * into a graph. Returns 0 or a backend error code (a cudaError_t on
	 * cuda), FA_KERNEL_CANCELLED when *a->cancel was seen. */
	int (*launch)(const struct fa_launch_args *a);
	/* 1: a kernel for fabench's own tests (one that faults, hangs, or is
	 * wrong on purpose); hidden unless FABENCH_TEST_KERNELS=1. */
	int32_t test_only;
	/* ---- version 2 ---- */
	/* sizeof(struct fa_kernel), or 0: only the version 1 members above. */
	uint32_t struct_size;
	/* ---- version 3 ---- */
	/* enum fa_pass: FA_PASS_FWD (0, and every older kernel) computes O from
	 * Q, K, V; FA_PASS_BWD computes dQ, dK and dV from Q, K, V, O, dO and
	 * the LSE (fa_launch_args). Forward kernels run the suite's fwd cases,
	 * backward kernels its bwd and fwd_bwd cases. */
	int32_t pass;
	/* Forward kernels: 1 when launch writes fa_launch_args.lse (when it is
	 * not NULL). */
	int32_t writes_lse;
	/* Backward kernels (required): the forward kernel of the same backend,
	 * with writes_lse, whose O and LSE the backward takes. The harness
	 * launches it once per case (bwd) or before every backward (fwd_bwd). */
	const char *fwd_kernel;
};

/* ---- backend plugins ---- */

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
	 * fa_data_fill in harness/run/data.h. NULL: the harness generates on the
	 * host and uploads. */
	int (*fill_random)(void *ctx, void *dst, const struct fa_problem *p, int tensor, int dist,
			   uint64_t seed);
	/* (optional) Evict the last-level cache before a cold sample. NULL: no-op.
	 * The environment variable FABENCH_FLUSH, set by the harness before the
	 * samples of a kernel, says how: "clean" (cold-clean, the default) leaves
	 * the cache holding clean lines, so that the timed kernel pays for no
	 * write-back of the flush (e.g. write a buffer larger than the cache,
	 * then read it back); "write" (cold) may leave it dirty. */
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
	/* (optional, all three or none) Capture n_launches launches of k with a
	 * into a replayable graph (for kernels shorter than ~20 us), replay it,
	 * free it. */
	int (*graph_create)(void *ctx, const struct fa_kernel *k, const struct fa_launch_args *a,
			    int n_launches, void **graph);
	int (*graph_launch)(void *ctx, void *graph);
	void (*graph_destroy)(void *ctx, void *graph);
	/* (optional) Measure this device's ceilings (can take seconds). */
	int (*calibrate)(void *ctx, struct fa_calibration *out);
	/* ---- version 2 ---- */
	/* (optional) The queue every operation above is ordered on (a
	 * cudaStream_t); the harness passes it to every launch in
	 * fa_launch_args.stream. NULL: none (the CPU). */
	void *(*stream)(void *ctx);
	/* ---- version 4 ---- */
	/* (optional) Capture n_launches launches of k into one replayable graph
	 * (replayed and freed by graph_launch and graph_destroy), launch i with
	 * a[i % n_sets]: the sets differ in their buffers (copies of one case's
	 * inputs and outputs, made by the harness), so that with a cold cache
	 * every launch of the graph reads memory the cache does not hold, as
	 * the layers of one decode step do. NULL: graphs are timed hot only. */
	int (*graph_create_sets)(void *ctx, const struct fa_kernel *k,
				 const struct fa_launch_args *a, int n_sets, int n_launches,
				 void **graph);
};

/* What fa_backend_plugin_init fills. Version and size first, data next, the
 * methods behind a pointer: appending a method never moves a data member. */
struct fa_backend {
	/* ---- version 2 (version 1 had the methods inline before context) ---- */
	int32_t api_version;   /* FA_BACKEND_API_VERSION the plugin was built with */
	uint32_t struct_size;  /* sizeof(struct fa_backend) */
	const char *name;      /* "cpu", "cuda", "hip", "test" */
	void *context;         /* passed to every method */
	const struct fa_backend_i *iface; /* lives as long as the backend */
};

/* Fills *out and returns 0, or returns nonzero with a one-line reason in why
 * ("no CUDA device: cudaErrorNoDevice"). harness_api_version is the newest
 * version the harness reads: accept it when it is at least your own
 * FA_BACKEND_API_VERSION. (A harness asks a plugin that refuses again with
 * each older version it still reads, down to FA_BACKEND_API_VERSION_MIN,
 * since version 1 plugins wanted an exact match.) */
typedef int (*fa_backend_plugin_init_fn)(int harness_api_version, struct fa_backend *out,
					 char *why, size_t why_size);
#define FA_PLUGIN_INIT_SYMBOL "fa_backend_plugin_init"

/* (optional, a second export) The kernels the backend would register, for
 * `fabench kernels` to list when fa_backend_plugin_init refused (no device
 * here): returns the table and its length in *n without touching a device,
 * or NULL. Only the version 1 members of each record are read; the table
 * lives as long as the plugin is loaded. fabench's HIP plugin exports it.
 * The table is an array of this header's struct fa_kernel, whose size
 * grows with the version: a plugin returns it only when harness_api_version
 * is the FA_BACKEND_API_VERSION it was built with (else NULL), so that the
 * harness never steps through records of another size. */
typedef const struct fa_kernel *(*fa_backend_plugin_kernels_fn)(int harness_api_version, int *n);
#define FA_PLUGIN_KERNELS_SYMBOL "fa_backend_plugin_kernels"

/* ---- kernel plugins ---- */

/* What fa_kernel_plugin_init fills: the kernels it adds to one backend. */
struct fa_kernel_plugin {
	/* ---- version 2 ---- */
	int32_t api_version;   /* FA_BACKEND_API_VERSION the plugin was built with */
	uint32_t struct_size;  /* sizeof(struct fa_kernel_plugin) */
	const char *name;      /* the plugin, for messages: "minimal-cpu" */
	void *context;         /* (optional) passed back to the methods below */
	/* Required. The kernels added to the backend; kernel_get(ctx, i) for
	 * 0 <= i < kernel_count(ctx) returns a record that lives until shutdown. */
	int (*kernel_count)(void *ctx);
	const struct fa_kernel *(*kernel_get)(void *ctx, int i);
	/* (optional) Words for a return code of your launchers that the backend
	 * has none for (a library status in a range of your own); NULL for a code
	 * that is not yours, which the backend's error_string then describes. */
	const char *(*error_string)(void *ctx, int code);
	/* (optional) Called once when the harness is done with this backend's
	 * kernels, before the backend shuts down. */
	void (*shutdown)(void *ctx);
};

/* The harness calls it once for each loaded backend (cpu, then cuda, hip,
 * ... in `fabench devices` order), backend_name naming it.
 * Returns FA_KERNEL_PLUGIN_ADDED (0) with *out filled: the kernels join that
 * backend, in its runs and tables. FA_KERNEL_PLUGIN_DECLINED: this plugin has
 * nothing for that backend (why may say what it is for: "kernels for cuda
 * only"). Anything else: the plugin failed, why says why. */
typedef int (*fa_kernel_plugin_init_fn)(int harness_api_version, const char *backend_name,
					struct fa_kernel_plugin *out, char *why, size_t why_size);
#define FA_KERNEL_PLUGIN_INIT_SYMBOL "fa_kernel_plugin_init"
#define FA_KERNEL_PLUGIN_ADDED 0
#define FA_KERNEL_PLUGIN_DECLINED 1

#ifdef __cplusplus
}
#endif

#endif /* FABENCH_PLUGIN_H */
