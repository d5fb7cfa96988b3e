/* cpu_kernels.h - the CPU backend's kernels: the table the backend hands to
 * the harness, the launchers, and the CPU kernels' shared helpers (dtype
 * conversion of whole rows, locating a packed token's sequence, the work
 * items' bookkeeping: cancellation, blocks per sequence, scratch arrays).
 *
 * Both kernels compute the full problem (every mask, GQA, varlen, prefix
 * lengths, both layouts, fp32/fp16/bf16) in fp32 arithmetic on a->nthreads
 * threads, poll *a->cancel between rows or tiles and then return
 * FA_KERNEL_CANCELLED. Results do not depend on the thread count.
 */
#ifndef FA_CPU_KERNELS_H
#define FA_CPU_KERNELS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../harness/run/backend_impl.h"
#include "../common/fa_dtype.h"

/* Launcher return codes besides 0 and FA_KERNEL_CANCELLED, apart from the
 * backend's own (-1, -3 in backend_cpu.c); fa_cpu_kernel_strerror words them. */
#define FA_CPU_ERR_WORKSPACE (-10) /* workspace missing or smaller than workspace_bytes() */
#define FA_CPU_ERR_NOMEM (-11)     /* per-thread scratch could not be allocated */
#define FA_CPU_ERR_PARAM (-12)     /* a tunable outside what the kernel can run */
#define FA_CPU_ERR_BWD_ARGS (-13)  /* a backward without lse, d_o, dq, dk or dv */

extern const struct fa_kernel fa_cpu_kernels[];
extern const int fa_cpu_n_kernels;

/* Words for a launcher return code of the CPU kernels; never NULL. */
const char *fa_cpu_kernel_strerror(int code);

/* The naive math path: the whole fp32 score tensor in the workspace. */
size_t fa_cpu_dense_workspace_bytes(const struct fa_problem *p, const int32_t *params);
int fa_cpu_dense_launch(const struct fa_launch_args *a);

/* FlashAttention-2: tiles of block_q rows by block_k keys, online softmax. */
int fa_cpu_flash_launch(const struct fa_launch_args *a);

/* The backward pass (cpu_dense_bwd.c, cpu_flash_bwd.c): dQ, dK, dV from Q,
 * K, V, O, dO and the forward's LSE (fa_launch_args version 3). Every
 * gradient element is computed by one work item in a fixed order, so the
 * result is bit-identical for any thread count. */
size_t fa_cpu_dense_bwd_workspace_bytes(const struct fa_problem *p, const int32_t *params);
int fa_cpu_dense_bwd_launch(const struct fa_launch_args *a);
size_t fa_cpu_flash_bwd_workspace_bytes(const struct fa_problem *p, const int32_t *params);
int fa_cpu_flash_bwd_launch(const struct fa_launch_args *a);

/* Four lanes of 32 bits: GCC/clang vector extensions, one SSE register.
 * -O2's very cheap cost model does not vectorise loops of runtime length, so
 * the hot loops say it explicitly. Lanes are independent: each element sees
 * the operations a scalar loop would, in the same order. (Wider vectors
 * would change the psABI of these helpers without -mavx.) */
typedef float fa_cpu_v4f __attribute__((vector_size(16)));
typedef uint32_t fa_cpu_v4u __attribute__((vector_size(16)));
typedef int32_t fa_cpu_v4i __attribute__((vector_size(16)));

/* Unaligned load and store of four floats. */
static inline fa_cpu_v4f fa_cpu_ld4(const float *p)
{
	fa_cpu_v4f v;
	memcpy(&v, p, sizeof v);
	return v;
}

static inline void fa_cpu_st4(float *p, fa_cpu_v4f v)
{
	memcpy(p, &v, sizeof v);
}

/* fp16 -> fp32 for four values at once, bit-identical to fa_f16_to_f32 for
 * every pattern (a test compares all 65536), without branches:
 *   normal: shift exponent and mantissa into place, add 224 to the
 *     exponent and multiply by 2^-112 (exact), a rebias of 127 - 15;
 *   subnormal, zero: place the mantissa under the exponent of 0.5 and
 *     subtract 0.5, which is m * 2^-24 exactly;
 *   Inf, NaN: exponent set to all ones, mantissa copied. */
static inline fa_cpu_v4f fa_cpu_f16x4_to_f32(fa_cpu_v4u h)
{
	const fa_cpu_v4u w = h << 16, sign = w & 0x80000000u, two_w = w + w;
	fa_cpu_v4u norm_bits = (two_w >> 4) + 0x70000000u; /* exponent + (127 - 15) - 112 */
	fa_cpu_v4u denorm_bits = (two_w >> 17) | 0x3f000000u; /* 0.5 + m * 2^-24 */
	fa_cpu_v4f norm, denorm;
	fa_cpu_v4u r;
	fa_cpu_v4i small, special;
	memcpy(&norm, &norm_bits, sizeof norm);
	memcpy(&denorm, &denorm_bits, sizeof denorm);
	norm *= 0x1p-112f;
	denorm -= 0.5f;
	memcpy(&norm_bits, &norm, sizeof norm);
	memcpy(&denorm_bits, &denorm, sizeof denorm);
	small = (fa_cpu_v4i)(two_w < (1u << 27)); /* exponent field 0: all ones where true */
	r = ((fa_cpu_v4u)small & denorm_bits) | (~(fa_cpu_v4u)small & norm_bits);
	/* Inf and NaN bit by bit: the multiply would quiet a signalling NaN */
	special = (fa_cpu_v4i)(two_w >= 0xf8000000u);
	r = ((fa_cpu_v4u)special & ((two_w >> 4) | 0x7f800000u)) | (~(fa_cpu_v4u)special & r);
	r |= sign;
	memcpy(&norm, &r, sizeof norm);
	return norm;
}

/* sum_d a[d] b[d]: four lanes of four partial sums, then the lanes (a
 * fixed order for a given n). */
static inline float fa_cpu_dot(const float *restrict a, const float *restrict b, int32_t n)
{
	fa_cpu_v4f s0 = {0}, s1 = {0}, s2 = {0}, s3 = {0};
	int32_t d = 0;
	float s;
	for (; d + 16 <= n; d += 16) {
		s0 += fa_cpu_ld4(a + d) * fa_cpu_ld4(b + d);
		s1 += fa_cpu_ld4(a + d + 4) * fa_cpu_ld4(b + d + 4);
		s2 += fa_cpu_ld4(a + d + 8) * fa_cpu_ld4(b + d + 8);
		s3 += fa_cpu_ld4(a + d + 12) * fa_cpu_ld4(b + d + 12);
	}
	for (; d + 4 <= n; d += 4)
		s0 += fa_cpu_ld4(a + d) * fa_cpu_ld4(b + d);
	s0 = (s0 + s1) + (s2 + s3);
	s = (s0[0] + s0[1]) + (s0[2] + s0[3]);
	for (; d < n; d++)
		s += a[d] * b[d];
	return s;
}

/* acc[0..n) += w * v[0..n) */
static inline void fa_cpu_axpy(float *restrict acc, float w, const float *restrict v, int32_t n)
{
	int32_t d = 0;
	for (; d + 4 <= n; d += 4)
		fa_cpu_st4(acc + d, fa_cpu_ld4(acc + d) + w * fa_cpu_ld4(v + d));
	for (; d < n; d++)
		acc[d] += w * v[d];
}

/* Converts n elements of src (dtype) from element off into dst as fp32,
 * exactly; four at a time where it can. */
static inline void fa_cpu_load_row(float *dst, const void *src, int dtype, int64_t off, int32_t n)
{
	int32_t i = 0;
	if (dtype == FA_DTYPE_FP32) {
		memcpy(dst, (const float *)src + off, sizeof(float) * (size_t)n);
		return;
	}
	const uint16_t *s = (const uint16_t *)src + off;
	for (; i + 4 <= n; i += 4) {
		fa_cpu_v4u h = {s[i], s[i + 1], s[i + 2], s[i + 3]};
		fa_cpu_v4f f;
		if (dtype == FA_DTYPE_FP16) {
			f = fa_cpu_f16x4_to_f32(h);
		} else {
			h <<= 16; /* bf16 is the top half of fp32 */
			memcpy(&f, &h, sizeof f);
		}
		memcpy(dst + i, &f, sizeof f);
	}
	for (; i < n; i++)
		dst[i] = dtype == FA_DTYPE_FP16 ? fa_f16_to_f32(s[i]) : fa_bf16_to_f32(s[i]);
}

/* Stores n fp32 values into dst (dtype) from element off, rounding to nearest even. */
static inline void fa_cpu_store_row(void *dst, int dtype, int64_t off, const float *src, int32_t n)
{
	if (dtype == FA_DTYPE_FP32) {
		float *d = (float *)dst + off;
		for (int32_t i = 0; i < n; i++)
			d[i] = src[i];
	} else if (dtype == FA_DTYPE_FP16) {
		uint16_t *d = (uint16_t *)dst + off;
		for (int32_t i = 0; i < n; i++)
			d[i] = fa_f32_to_f16(src[i]);
	} else {
		uint16_t *d = (uint16_t *)dst + off;
		for (int32_t i = 0; i < n; i++)
			d[i] = fa_f32_to_bf16(src[i]);
	}
}

/* Sequence of packed query token T: the last b with start(b) <= T. */
static inline int fa_cpu_seq_of_token(const struct fa_problem *p, const int32_t *cu_q, int64_t T)
{
	int lo = 0, hi = p->batch - 1;
	if (!p->varlen)
		return (int)(T / p->q_len);
	while (lo < hi) {
		int mid = lo + (hi - lo + 1) / 2;
		if (cu_q[mid] <= T)
			lo = mid;
		else
			hi = mid - 1;
	}
	return lo;
}

/* 1 when the launch is to stop: *stopped was set by an earlier poll, or
 * a->cancel is set now (then *stopped is set, so every thread stops at its
 * next poll without reading a->cancel again). */
static inline int fa_cpu_cancelled(atomic_int *stopped, const struct fa_launch_args *a)
{
	if (atomic_load_explicit(stopped, memory_order_relaxed))
		return 1;
	if (a->cancel && *a->cancel) {
		atomic_store(stopped, 1);
		return 1;
	}
	return 0;
}

/* Work items of block_len rows (keys = 0) or keys (keys = 1) of every
 * sequence, numbered across sequences: fills start[0 .. batch] with the
 * first block of each sequence, start[batch] being the count. */
static inline void fa_cpu_block_starts(const struct fa_problem *p, const struct fa_launch_args *a,
				       int keys, int32_t block_len, int64_t *start)
{
	start[0] = 0;
	for (int b = 0; b < p->batch; b++) {
		int32_t len = keys ? fa_seq_kv_len(p, a->cu_seqlens_k, b)
				   : fa_seq_q_len(p, a->cu_seqlens_q, b);
		start[b + 1] = start[b] + (len > 0 ? (len + block_len - 1) / block_len : 0);
	}
}

/* The sequence of global block g, with start from fa_cpu_block_starts: the
 * last b with start[b] <= g. */
static inline int fa_cpu_seq_of_block(const int64_t *start, int batch, int64_t g)
{
	int lo = 0, hi = batch - 1;
	while (lo < hi) {
		int mid = lo + (hi - lo + 1) / 2;
		if (start[mid] <= g)
			lo = mid;
		else
			hi = mid - 1;
	}
	return lo;
}

/* Work item g of the blocks fa_cpu_block_starts numbered (same keys and
 * block_len): its sequence b, that sequence's lengths lq and lk, and the
 * rows (keys = 1: keys) [first, first + n) of it that the item covers. */
struct fa_cpu_block {
	int b;
	int32_t lq, lk, first, n;
};

static inline struct fa_cpu_block fa_cpu_block_of(const struct fa_problem *p,
						  const struct fa_launch_args *a,
						  const int64_t *start, int keys, int32_t block_len,
						  int64_t g)
{
	struct fa_cpu_block k;
	int32_t len;
	k.b = fa_cpu_seq_of_block(start, p->batch, g);
	k.lq = fa_seq_q_len(p, a->cu_seqlens_q, k.b);
	k.lk = fa_seq_kv_len(p, a->cu_seqlens_k, k.b);
	len = keys ? k.lk : k.lq;
	k.first = (int32_t)((g - start[k.b]) * block_len);
	k.n = len - k.first < block_len ? len - k.first : block_len;
	return k;
}

/* Multiplies the n values of row by scale in place (the softmax scale of
 * dQ and dK) and stores them into dst (dtype) from element off. */
static inline void fa_cpu_store_scaled_row(void *dst, int dtype, int64_t off, float *row,
					   float scale, int32_t n)
{
	for (int32_t d = 0; d < n; d++)
		row[d] *= scale;
	fa_cpu_store_row(dst, dtype, off, row, n);
}

/* Carves n float arrays of sizes[i] elements out of one 64-byte-aligned
 * allocation, each starting on a 64-byte line, into *ptrs[i]. Returns the
 * allocation (free() it) or NULL, the pointers then untouched. */
static inline void *fa_cpu_alloc_arrays(float **const ptrs[], const size_t sizes[], int n)
{
	size_t total = 0;
	float *base, *mem;
	for (int i = 0; i < n; i++)
		total += (sizes[i] + 15) / 16 * 16; /* 16 floats: a cache line */
	mem = aligned_alloc(64, total * sizeof(float));
	if (!mem)
		return NULL;
	base = mem;
	for (int i = 0; i < n; i++) {
		*ptrs[i] = base;
		base += (sizes[i] + 15) / 16 * 16;
	}
	return mem;
}

#endif /* FA_CPU_KERNELS_H */
