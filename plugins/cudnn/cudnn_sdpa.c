/* cudnn_sdpa.c - the kernel records cudnn_sdpa (the forward, which writes
 * fabench's LSE when the harness passes one) and cudnn_sdpa_bwd (the
 * backward, from that LSE): cuDNN's fused flash attention through the
 * backend graph API (sdpa_graph.c), with supports(), workspace_bytes() and
 * launch().
 *
 * supports() refuses what cuDNN is known not to do (cudnn-frontend's SDPA
 * support surface for fp16/bf16, by version and architecture) and otherwise
 * builds the plans, so every other refusal carries cuDNN's own reason.
 * workspace_bytes() reads the cached plans. launch() only looks the plan
 * up, zeroes the backward's dQ accumulator, and for varlen fills the ragged
 * offsets (one tiny kernel, which in the forward also writes zeros in O of
 * a sequence with no key and +inf in its LSE), builds the variant pack and
 * executes; then a varlen forward that writes fabench's LSE turns the LSE
 * of every row with no key into +inf (a second tiny kernel), and a varlen
 * backward writes, after cuDNN, zeros in dQ of every row that attends no
 * key and in dK, dV of every key that no query sees (the first kernel
 * again, without the offsets): cuDNN may leave those rows unwritten or,
 * seen on an H200, write non-zero values into dK, dV of a sequence with
 * keys and no query.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "cudnn_internal.h"

/* cuDNN's workspace is followed by ours, at this alignment */
#define SDPA_AUX_ALIGN 256
/* threads per block of the aux kernel (one thread per sequence) */
#define SDPA_AUX_THREADS 128

static char sdpa_description[192] = "cuDNN fused flash attention (SDPA forward); cuDNN not loaded";
static char bwd_description[192] = "cuDNN fused flash attention backward; cuDNN not loaded";

/* The varlen aux kernels, hand-written PTX (checked with ptxas for sm_80
 * and sm_90 when written).
 *
 * fa_cudnn_varlen_aux, before cuDNN runs. Blocks of row y = 0 (and z = 0)
 * of the grid: thread i <= batch writes the element offsets cu_q[i]*mq,
 * cu_k[i]*mk, cu_k[i]*mv, cu_q[i]*mo into the int32 arrays 0 to 3 and
 * cu_q[i]*heads (the LSE's) into array 6, and for i < batch the lengths
 * cu_q[i+1]-cu_q[i] and cu_k[i+1]-cu_k[i] into arrays 4 and 5; array n
 * starts n * pitch bytes into out. Blocks of row y = b + 1 write the rows
 * of sequence b that fabench's rules fix (zeros for a row that attends no
 * key in O and dQ and for a key that no query sees in dK and dV, +inf for
 * the LSE of a row that attends no key), target z of up to three
 * (pointer t, flags f, heads n, columns c, row stride r and head stride s
 * in elements; a NULL t: none). With flags bit 0 clear: the leading query
 * tokens that attend no key (all of them when the sequence has no key,
 * else q - kv of them under a diagonal mask, diag: causal or sliding
 * window, aligned bottom-right); with it set, the leading key tokens that
 * no query sees (all of them when it has no query, else kv - q - window + 1
 * of them under a sliding window, window 0 otherwise). 16-bit zeros, or
 * fp32 +inf with flags bit 1 (the LSE). A NULL out: row 0 writes nothing
 * (the rows only).
 *
 * The forward runs it once, before cuDNN, with O's rows (and the LSE's),
 * which cuDNN leaves unwritten for a sequence with no key (O: seen on an
 * H200) and writes the same zeros, if any, for the others. The backward
 * runs it twice: before cuDNN for the offsets only (cuDNN reads them, and
 * the LSE, which the forward wrote), and after cuDNN, on the same stream,
 * with out NULL and the rows of dQ, dK and dV, so that whatever cuDNN
 * wrote there (or left) ends as the zeros the rules require: on an H200
 * cuDNN's backward wrote non-zero dK, dV (up to 6.3) for a sequence of 9
 * keys and no query followed by one of 40 queries and no key (query
 * lengths 17/0/40/0, key lengths 17/9/0/0), where a sequence of keys with
 * no query first in the batch had come out zero.
 *
 * fa_cudnn_lse_fix, after the forward wrote the LSE: element e < n that
 * is not finite (the -inf or NaN a row with no key may get from cuDNN, or
 * the harness's poison where cuDNN wrote nothing) becomes +inf; every row
 * that attends a key has a finite LSE. */
static const char sdpa_aux_ptx[] =
	".version 7.0\n"
	".target sm_80\n"
	".address_size 64\n"
	".visible .entry fa_cudnn_varlen_aux(\n"
	"	.param .u64 p_cu_q, .param .u64 p_cu_k, .param .u64 p_out,\n"
	"	.param .u32 p_batch, .param .u32 p_pitch, .param .u32 p_mq, .param .u32 p_mk,\n"
	"	.param .u32 p_mv, .param .u32 p_mo, .param .u32 p_heads, .param .u32 p_diag,\n"
	"	.param .u32 p_window,\n"
	"	.param .u64 p_t0, .param .u32 p_f0, .param .u32 p_n0, .param .u32 p_c0,\n"
	"	.param .u32 p_r0, .param .u32 p_s0,\n"
	"	.param .u64 p_t1, .param .u32 p_f1, .param .u32 p_n1, .param .u32 p_c1,\n"
	"	.param .u32 p_r1, .param .u32 p_s1,\n"
	"	.param .u64 p_t2, .param .u32 p_f2, .param .u32 p_n2, .param .u32 p_c2,\n"
	"	.param .u32 p_r2, .param .u32 p_s2)\n"
	"{\n"
	"	.reg .pred %p<8>;\n"
	"	.reg .b16 %h<2>;\n"
	"	.reg .b32 %r<52>;\n"
	"	.reg .b64 %rd<16>;\n"
	"	ld.param.u64 %rd1, [p_cu_q];\n"
	"	ld.param.u64 %rd2, [p_cu_k];\n"
	"	cvta.to.global.u64 %rd1, %rd1;\n"
	"	cvta.to.global.u64 %rd2, %rd2;\n"
	"	ld.param.u32 %r1, [p_batch];\n"
	"	mov.u32 %r6, %ctaid.x;\n"
	"	mov.u32 %r7, %ntid.x;\n"
	"	mov.u32 %r8, %tid.x;\n"
	"	mad.lo.s32 %r9, %r6, %r7, %r8;\n"  /* i: the thread's index in its row */
	"	mov.u32 %r20, %ctaid.y;\n"
	"	mov.u32 %r21, %ctaid.z;\n"
	"	setp.ne.u32 %p3, %r20, 0;\n"
	"	@%p3 bra ZERO;\n"
	/* row 0: the offsets and lengths, by the blocks of z = 0 */
	"	setp.ne.u32 %p4, %r21, 0;\n"
	"	@%p4 bra DONE;\n"
	"	setp.gt.s32 %p1, %r9, %r1;\n"
	"	@%p1 bra DONE;\n"
	"	ld.param.u64 %rd3, [p_out];\n"
	"	setp.eq.u64 %p1, %rd3, 0;\n"      /* no arrays: the rows only */
	"	@%p1 bra DONE;\n"
	"	cvta.to.global.u64 %rd3, %rd3;\n"
	"	ld.param.u32 %r12, [p_pitch];\n"
	"	ld.param.u32 %r2, [p_mq];\n"
	"	ld.param.u32 %r3, [p_mk];\n"
	"	ld.param.u32 %r4, [p_mv];\n"
	"	ld.param.u32 %r5, [p_mo];\n"
	"	ld.param.u32 %r18, [p_heads];\n"
	"	mul.wide.s32 %rd4, %r9, 4;\n"
	"	add.s64 %rd5, %rd1, %rd4;\n"
	"	ld.global.u32 %r10, [%rd5];\n"     /* cu_q[i] */
	"	add.s64 %rd6, %rd2, %rd4;\n"
	"	ld.global.u32 %r11, [%rd6];\n"     /* cu_k[i] */
	"	cvt.u64.u32 %rd7, %r12;\n"         /* pitch */
	"	add.s64 %rd8, %rd3, %rd4;\n"       /* array 0, element i */
	"	mul.lo.s32 %r13, %r10, %r2;\n"
	"	st.global.u32 [%rd8], %r13;\n"
	"	add.s64 %rd8, %rd8, %rd7;\n"       /* 1 */
	"	mul.lo.s32 %r13, %r11, %r3;\n"
	"	st.global.u32 [%rd8], %r13;\n"
	"	add.s64 %rd8, %rd8, %rd7;\n"       /* 2 */
	"	mul.lo.s32 %r13, %r11, %r4;\n"
	"	st.global.u32 [%rd8], %r13;\n"
	"	add.s64 %rd8, %rd8, %rd7;\n"       /* 3 */
	"	mul.lo.s32 %r13, %r10, %r5;\n"
	"	st.global.u32 [%rd8], %r13;\n"
	"	mul.lo.s64 %rd9, %rd7, 3;\n"
	"	add.s64 %rd9, %rd8, %rd9;\n"       /* 6: three arrays past 3 */
	"	mul.lo.s32 %r13, %r10, %r18;\n"
	"	st.global.u32 [%rd9], %r13;\n"
	"	setp.ge.s32 %p2, %r9, %r1;\n"
	"	@%p2 bra DONE;\n"
	"	add.s64 %rd8, %rd8, %rd7;\n"       /* 4 */
	"	ld.global.u32 %r14, [%rd5+4];\n"
	"	sub.s32 %r15, %r14, %r10;\n"
	"	st.global.u32 [%rd8], %r15;\n"
	"	add.s64 %rd8, %rd8, %rd7;\n"       /* 5 */
	"	ld.global.u32 %r16, [%rd6+4];\n"
	"	sub.s32 %r17, %r16, %r11;\n"
	"	st.global.u32 [%rd8], %r17;\n"
	"	bra DONE;\n"
	/* row b + 1: target z of sequence b */
	"ZERO:\n"
	"	mov.u64 %rd9, 0;\n"
	"	setp.eq.u32 %p4, %r21, 0;\n"
	"	setp.eq.u32 %p5, %r21, 1;\n"
	"	setp.eq.u32 %p6, %r21, 2;\n"
	"	@%p4 ld.param.u64 %rd9, [p_t0];\n"
	"	@%p4 ld.param.u32 %r22, [p_f0];\n"
	"	@%p4 ld.param.u32 %r23, [p_n0];\n"
	"	@%p4 ld.param.u32 %r24, [p_c0];\n"
	"	@%p4 ld.param.u32 %r25, [p_r0];\n"
	"	@%p4 ld.param.u32 %r26, [p_s0];\n"
	"	@%p5 ld.param.u64 %rd9, [p_t1];\n"
	"	@%p5 ld.param.u32 %r22, [p_f1];\n"
	"	@%p5 ld.param.u32 %r23, [p_n1];\n"
	"	@%p5 ld.param.u32 %r24, [p_c1];\n"
	"	@%p5 ld.param.u32 %r25, [p_r1];\n"
	"	@%p5 ld.param.u32 %r26, [p_s1];\n"
	"	@%p6 ld.param.u64 %rd9, [p_t2];\n"
	"	@%p6 ld.param.u32 %r22, [p_f2];\n"
	"	@%p6 ld.param.u32 %r23, [p_n2];\n"
	"	@%p6 ld.param.u32 %r24, [p_c2];\n"
	"	@%p6 ld.param.u32 %r25, [p_r2];\n"
	"	@%p6 ld.param.u32 %r26, [p_s2];\n"
	"	setp.eq.u64 %p1, %rd9, 0;\n"
	"	@%p1 bra DONE;\n"
	"	cvta.to.global.u64 %rd9, %rd9;\n"
	"	sub.s32 %r27, %r20, 1;\n"          /* b */
	"	mul.wide.s32 %rd4, %r27, 4;\n"
	"	add.s64 %rd5, %rd1, %rd4;\n"
	"	add.s64 %rd6, %rd2, %rd4;\n"
	"	ld.global.u32 %r28, [%rd5];\n"     /* cu_q[b] */
	"	ld.global.u32 %r29, [%rd5+4];\n"
	"	ld.global.u32 %r30, [%rd6];\n"     /* cu_k[b] */
	"	ld.global.u32 %r31, [%rd6+4];\n"
	"	sub.s32 %r32, %r29, %r28;\n"       /* queries of b */
	"	sub.s32 %r33, %r31, %r30;\n"       /* keys of b */
	"	ld.param.u32 %r48, [p_diag];\n"
	"	ld.param.u32 %r49, [p_window];\n"
	/* leading query rows with no key: all without keys, else
	 * q - kv under a diagonal (bottom-right) mask */
	"	sub.s32 %r50, %r32, %r33;\n"
	"	max.s32 %r50, %r50, 0;\n"
	"	setp.ne.u32 %p7, %r48, 0;\n"
	"	selp.b32 %r50, %r50, 0, %p7;\n"
	"	setp.eq.s32 %p7, %r33, 0;\n"
	"	selp.b32 %r50, %r32, %r50, %p7;\n"
	/* leading keys no query sees: all without queries, else
	 * kv - q - window + 1 under a sliding window */
	"	sub.s32 %r51, %r33, %r32;\n"
	"	sub.s32 %r51, %r51, %r49;\n"
	"	add.s32 %r51, %r51, 1;\n"
	"	max.s32 %r51, %r51, 0;\n"
	"	setp.ne.u32 %p7, %r49, 0;\n"
	"	selp.b32 %r51, %r51, 0, %p7;\n"
	"	setp.eq.s32 %p7, %r32, 0;\n"
	"	selp.b32 %r51, %r33, %r51, %p7;\n"
	"	and.b32 %r34, %r22, 1;\n"
	"	setp.ne.u32 %p2, %r34, 0;\n"       /* key tokens */
	"	selp.b32 %r36, %r30, %r28, %p2;\n" /* the first token */
	"	selp.b32 %r37, %r51, %r50, %p2;\n" /* the tokens */
	"	setp.eq.s32 %p1, %r37, 0;\n"
	"	@%p1 bra DONE;\n"
	"	mul.lo.s32 %r38, %r23, %r24;\n"    /* elements per token: heads x columns */
	"	mul.lo.s32 %r39, %r37, %r38;\n"    /* elements of the sequence */
	"	mov.u32 %r40, %nctaid.x;\n"
	"	mul.lo.s32 %r41, %r40, %r7;\n"     /* the stride: every thread of the row */
	"	and.b32 %r42, %r22, 2;\n"
	"	setp.ne.u32 %p3, %r42, 0;\n"       /* fp32 +inf */
	"	mov.b16 %h1, 0;\n"
	"	mov.b32 %r43, 0x7f800000;\n"
	"LOOP:\n"
	"	setp.ge.s32 %p1, %r9, %r39;\n"
	"	@%p1 bra DONE;\n"
	"	div.u32 %r44, %r9, %r38;\n"        /* t */
	"	mul.lo.s32 %r45, %r44, %r38;\n"
	"	sub.s32 %r45, %r9, %r45;\n"        /* h c + d */
	"	div.u32 %r46, %r45, %r24;\n"       /* h */
	"	mul.lo.s32 %r47, %r46, %r24;\n"
	"	sub.s32 %r47, %r45, %r47;\n"       /* d */
	"	add.s32 %r44, %r36, %r44;\n"       /* the token */
	"	mul.wide.s32 %rd10, %r44, %r25;\n"
	"	mul.wide.s32 %rd11, %r46, %r26;\n"
	"	cvt.s64.s32 %rd12, %r47;\n"
	"	add.s64 %rd10, %rd10, %rd11;\n"
	"	add.s64 %rd10, %rd10, %rd12;\n"    /* the element */
	"	@%p3 bra F32;\n"
	"	shl.b64 %rd10, %rd10, 1;\n"
	"	add.s64 %rd13, %rd9, %rd10;\n"
	"	st.global.b16 [%rd13], %h1;\n"
	"	bra NEXT;\n"
	"F32:\n"
	"	shl.b64 %rd10, %rd10, 2;\n"
	"	add.s64 %rd13, %rd9, %rd10;\n"
	"	st.global.b32 [%rd13], %r43;\n"
	"NEXT:\n"
	"	add.s32 %r9, %r9, %r41;\n"
	"	bra LOOP;\n"
	"DONE:\n"
	"	ret;\n"
	"}\n"
	".visible .entry fa_cudnn_lse_fix(.param .u64 p_lse, .param .u32 p_n)\n"
	"{\n"
	"	.reg .pred %p<3>;\n"
	"	.reg .b32 %r<8>;\n"
	"	.reg .f32 %f<2>;\n"
	"	.reg .b64 %rd<4>;\n"
	"	ld.param.u64 %rd1, [p_lse];\n"
	"	cvta.to.global.u64 %rd1, %rd1;\n"
	"	ld.param.u32 %r1, [p_n];\n"
	"	mov.u32 %r2, %ctaid.x;\n"
	"	mov.u32 %r3, %ntid.x;\n"
	"	mov.u32 %r4, %tid.x;\n"
	"	mad.lo.s32 %r5, %r2, %r3, %r4;\n"
	"	setp.ge.u32 %p1, %r5, %r1;\n"
	"	@%p1 bra DONE;\n"
	"	mul.wide.u32 %rd2, %r5, 4;\n"
	"	add.s64 %rd3, %rd1, %rd2;\n"
	"	ld.global.f32 %f1, [%rd3];\n"
	"	abs.f32 %f1, %f1;\n"
	"	setp.lt.f32 %p2, %f1, 0f7F800000;\n" /* finite (false for NaN) */
	"	@%p2 bra DONE;\n"
	"	mov.b32 %r6, 0x7f800000;\n"
	"	st.global.b32 [%rd3], %r6;\n"
	"DONE:\n"
	"	ret;\n"
	"}\n";

static dim3 dim3_of(unsigned x)
{
	dim3 d = {x, 1, 1};
	return d;
}

static cudaLibrary_t aux_lib;
static cudaKernel_t aux_kernel, lse_fix_kernel;

int fa_cudnn_aux_load(char *why, size_t why_size)
{
	cudaError_t e = cudaLibraryLoadData(&aux_lib, sdpa_aux_ptx, NULL, NULL, 0, NULL, NULL, 0);
	if (e == cudaSuccess)
		e = cudaLibraryGetKernel(&aux_kernel, aux_lib, "fa_cudnn_varlen_aux");
	if (e == cudaSuccess)
		e = cudaLibraryGetKernel(&lse_fix_kernel, aux_lib, "fa_cudnn_lse_fix");
	if (e != cudaSuccess) {
		snprintf(why, why_size, "cudnn_sdpa: loading the varlen kernels failed: %s",
			 cudaGetErrorName(e));
		(void)cudaGetLastError();
		return 1;
	}
	return 0;
}

void fa_cudnn_aux_unload(void)
{
	if (aux_lib)
		(void)cudaLibraryUnload(aux_lib);
	aux_lib = NULL;
	aux_kernel = NULL;
	lse_fix_kernel = NULL;
}

static const char *mask_name(int mask)
{
	switch (mask) {
	case FA_MASK_CAUSAL: return "causal";
	case FA_MASK_PREFIX_LM: return "prefix_lm";
	case FA_MASK_SLIDING_WINDOW: return "sliding_window";
	default: return "none";
	}
}

static void version_text(size_t v, char *buf, size_t size)
{
	/* cuDNN 9 encodes 9.19.0 as 91900 */
	snprintf(buf, size, "%zu.%zu.%zu", v / 10000, (v % 10000) / 100, v % 100);
}

void fa_cudnn_sdpa_describe(const struct fa_cudnn_api *api)
{
	char v[32];
	version_text(api->version, v, sizeof v);
	char br[48] = "";
	if (api->br_set)
		snprintf(br, sizeof br, ", bottom-right masks in form %d", api->br);
	snprintf(sdpa_description, sizeof sdpa_description,
		 "cuDNN %s fused flash attention (SDPA forward, backend graph API, "
		 "a plan per shape), fp16/bf16, head_dim a multiple of 8%s",
		 v, br);
	snprintf(bwd_description, sizeof bwd_description,
		 "cuDNN %s fused flash attention backward (SDPA backward graph from "
		 "cudnn_sdpa's LSE), fp16/bf16, varlen on sm_90+%s",
		 v, br);
}

/* Element offsets of varlen tensors are int32: the largest must fit. */
static int fits_int32(int64_t tokens, int64_t stride)
{
	return stride >= 0 && stride <= INT32_MAX && tokens * stride <= INT32_MAX;
}

/* The varlen aux kernel's int32 arithmetic: head strides, and the
 * elements of a tensor of tokens x heads x dim. */
static int fits_aux(int64_t tokens, int64_t heads, int64_t dim, int64_t stride_h)
{
	return stride_h >= 0 && stride_h <= INT32_MAX && tokens * heads * dim <= INT32_MAX;
}

int fa_cudnn_refuse(const struct fa_cudnn_api *api, const struct fa_problem *p, int bwd,
		    char *why, size_t why_size)
{
	char v[32];
	int masked = p->mask != FA_MASK_NONE;
	int bottom_right = masked && (p->varlen || p->q_len != p->kv_len);
	version_text(api->version, v, sizeof v);
	if (p->dtype != FA_DTYPE_FP16 && p->dtype != FA_DTYPE_BF16) {
		snprintf(why, why_size, "dtype fp32 not supported by cuDNN's fused attention");
		return 1;
	}
	if (api->version == 91000 || api->version == 91001) {
		snprintf(why, why_size,
			 "cuDNN %s has known SDPA forward bugs (fixed in 9.10.2)", v);
		return 1;
	}
	if (p->head_dim % 8 != 0 || p->head_dim_v % 8 != 0) {
		snprintf(why, why_size, "head_dim %d (v %d) not a multiple of 8, as cuDNN needs",
			 p->head_dim, p->head_dim_v);
		return 1;
	}
	int dmax = p->head_dim > p->head_dim_v ? p->head_dim : p->head_dim_v;
	if (api->version <= 90900 && dmax > 128 && api->sm / 10 != 9) {
		snprintf(why, why_size,
			 "head_dim %d above 128 needs a cuDNN newer than %s on sm_%d (sm_90: 256)",
			 dmax, v, api->sm);
		return 1;
	}
	if (masked && !p->varlen && p->q_len > p->kv_len) {
		snprintf(why, why_size,
			 "q_len %d > kv_len %d with mask %s: the first rows attend no key, "
			 "which cuDNN's bottom-right mask does not support",
			 p->q_len, p->kv_len, mask_name(p->mask));
		return 1;
	}
	if (bottom_right && api->version < 90600 && (p->q_len % 64 != 0 || p->kv_len % 64 != 0)) {
		snprintf(why, why_size,
			 "cuDNN %s aligns masks bottom-right only for q_len and kv_len multiples of 64 "
			 "(q_len %d, kv_len %d; 9.6.0 lifts this)",
			 v, p->q_len, p->kv_len);
		return 1;
	}
	if (p->mask == FA_MASK_SLIDING_WINDOW && p->window < 1) {
		snprintf(why, why_size, "window %d must be at least 1", p->window);
		return 1;
	}
	if (p->mask == FA_MASK_SLIDING_WINDOW && bottom_right && api->version < 90600) {
		snprintf(why, why_size,
			 "cuDNN %s needs q_len == kv_len for a sliding window (9.6.0 lifts this)", v);
		return 1;
	}
	if (masked && p->q_len == 1 && api->version <= 90900) {
		snprintf(why, why_size, "cuDNN %s does not mask decode (q_len 1) cases", v);
		return 1;
	}
	if (p->varlen && masked && api->version < 91000) {
		/* cudnn-frontend masks with the lowest finite float before 9.10:
		 * a row with no key (a sequence with more queries than keys)
		 * would average V instead of giving zeros */
		snprintf(why, why_size,
			 "cuDNN %s masks with the lowest float, not -inf: varlen rows with no key "
			 "would not be zeros (9.10 masks with -inf)",
			 v);
		return 1;
	}
	if (p->varlen) {
		if (api->sm < 90 && api->version < 91801) {
			snprintf(why, why_size,
				 "cuDNN %s supports varlen (ragged) attention on sm_90+ only (sm_%d)", v,
				 api->sm);
			return 1;
		}
		if (!fits_int32(p->total_q, p->q_stride_s) || !fits_int32(p->total_k, p->k_stride_s) ||
		    !fits_int32(p->total_k, p->v_stride_s) || !fits_int32(p->total_q, p->o_stride_s) ||
		    !fits_aux(p->total_q, p->heads, dmax, p->q_stride_h) ||
		    !fits_aux(p->total_k, p->kv_heads, dmax, p->k_stride_h) ||
		    !fits_aux(p->total_k, p->kv_heads, dmax, p->v_stride_h) ||
		    !fits_aux(p->total_q, p->heads, dmax, p->o_stride_h)) {
			snprintf(why, why_size, "varlen offsets past 2^31 elements (int32 ragged offsets)");
			return 1;
		}
	}
	if (bwd && p->varlen) {
		/* the backward reads fabench's LSE token-major with ragged
		 * offsets (cu_seqlens_q[b] x heads): cudnn-frontend gives the
		 * stats a ragged offset from 9.6.0 only, and the backward's
		 * engines do not take one on sm_8x and sm_12x (its support
		 * surface: "Packed/ragged LSE is not supported for bprop thd on
		 * SM8X and SM12X GPUs") */
		if (api->sm < 90 || api->sm >= 120) {
			snprintf(why, why_size,
				 "cudnn_sdpa_bwd: varlen needs sm_90 to sm_11x: cuDNN's backward "
				 "takes no ragged (packed) LSE on sm_%d",
				 api->sm);
			return 1;
		}
		if (api->version < 90600) {
			snprintf(why, why_size,
				 "cudnn_sdpa_bwd: cuDNN %s has no ragged offset on the softmax stats "
				 "that the varlen backward reads (9.6.0 adds it)",
				 v);
			return 1;
		}
	}
	return 0;
}

static int sdpa_supports(const struct fa_problem *p, char *why, size_t why_size)
{
	struct fa_cudnn_api *api = fa_cudnn;
	struct fa_cudnn_plan *pl;
	if (!api) {
		snprintf(why, why_size, "cuDNN not loaded");
		return 0;
	}
	if (fa_cudnn_refuse(api, p, 0, why, why_size))
		return 0;
	if (!(pl = fa_cudnn_cache_get(api, p, FA_CUDNN_FWD))) {
		snprintf(why, why_size, "cudnn_sdpa: out of host memory");
		return 0;
	}
	if (!pl->ready) {
		snprintf(why, why_size, "%s", pl->why);
		return 0;
	}
	return 1;
}

/* The backward: what the forward refuses, what the varlen backward
 * needs, and then the plans of the LSE forward and of the backward, with
 * cuDNN's reason. */
static int bwd_supports(const struct fa_problem *p, char *why, size_t why_size)
{
	struct fa_cudnn_api *api = fa_cudnn;
	struct fa_cudnn_plan *pl;
	if (!api) {
		snprintf(why, why_size, "cuDNN not loaded");
		return 0;
	}
	if (fa_cudnn_refuse(api, p, 1, why, why_size))
		return 0;
	for (int kind = FA_CUDNN_FWD_LSE; kind <= FA_CUDNN_BWD; kind++) {
		if (!(pl = fa_cudnn_cache_get(api, p, kind))) {
			snprintf(why, why_size, "cudnn_sdpa_bwd: out of host memory");
			return 0;
		}
		if (!pl->ready) {
			snprintf(why, why_size, "%s%.500s",
				 kind == FA_CUDNN_BWD ? "" : "the forward with the LSE: ", pl->why);
			return 0;
		}
	}
	return 1;
}

static size_t align_up(size_t n)
{
	return (n + SDPA_AUX_ALIGN - 1) / SDPA_AUX_ALIGN * SDPA_AUX_ALIGN;
}

/* The workspace: cuDNN's, then the stats output (when the plan has one),
 * then the varlen arrays, each at an SDPA_AUX_ALIGN boundary. */
static size_t stats_offset(const struct fa_cudnn_plan *pl)
{
	return align_up((size_t)pl->plan_ws_bytes);
}

static size_t aux_offset(const struct fa_cudnn_plan *pl)
{
	return align_up(stats_offset(pl) + pl->stats_bytes);
}

/* the backward's dQ accumulator */
static size_t dq_accum_offset(const struct fa_cudnn_plan *pl)
{
	return align_up(aux_offset(pl) + pl->aux_bytes);
}

/* Never 0: the variant pack always gets a workspace pointer (cuDNN checks
 * the pack's pointers for NULL; one aligned block costs nothing). */
static size_t plan_bytes(const struct fa_cudnn_plan *pl)
{
	size_t n = pl->dq_accum_bytes ? dq_accum_offset(pl) + pl->dq_accum_bytes
				      : aux_offset(pl) + pl->aux_bytes;
	return n > SDPA_AUX_ALIGN ? n : SDPA_AUX_ALIGN;
}

/* The forward's workspace: its plan's, or the LSE forward's when that one
 * was built (the backward's supports() builds it) and needs more. */
static size_t sdpa_workspace_bytes(const struct fa_problem *p, const int32_t *params)
{
	struct fa_cudnn_plan *pl, *lse;
	size_t n;
	(void)params;
	if (!fa_cudnn || !(pl = fa_cudnn_cache_get(fa_cudnn, p, FA_CUDNN_FWD)) || !pl->ready)
		return 0;
	n = plan_bytes(pl);
	lse = fa_cudnn_cache_peek(fa_cudnn, p, FA_CUDNN_FWD_LSE);
	if (lse && lse->ready && plan_bytes(lse) > n)
		n = plan_bytes(lse);
	return n;
}

static size_t bwd_workspace_bytes(const struct fa_problem *p, const int32_t *params)
{
	struct fa_cudnn_plan *pl;
	(void)params;
	if (!fa_cudnn || !(pl = fa_cudnn_cache_get(fa_cudnn, p, FA_CUDNN_BWD)) || !pl->ready)
		return 0;
	return plan_bytes(pl);
}

/* The last launch failure in words, for fa_cudnn_error_string. */
static char launch_error[512];
static int launch_error_code;

const char *fa_cudnn_last_launch_error(int code)
{
	return code == launch_error_code && launch_error[0] ? launch_error : NULL;
}

static int launch_fail(struct fa_cudnn_api *api, cudnnStatus_t st, const char *step)
{
	char txt[400];
	fa_cudnn_status_text(api, st, txt, sizeof txt);
	snprintf(launch_error, sizeof launch_error, "cuDNN %s failed: %s", step, txt);
	launch_error_code = FA_CUDNN_ERR + (int)st;
	return launch_error_code;
}

/* Builds the variant pack of pl from ptrs (pl->uids order) and the
 * workspace, and executes the plan on stream. Returns 0 or a launch code. */
static int execute_plan(struct fa_cudnn_api *api, struct fa_cudnn_plan *pl, cudaStream_t stream,
			void **ptrs, void *ws)
{
	cudnnBackendDescriptor_t pack = NULL;
	cudnnStatus_t st;
	pthread_mutex_lock(&api->lock);
	if ((st = api->set_stream(api->handle, stream)) != CUDNN_STATUS_SUCCESS) {
		pthread_mutex_unlock(&api->lock);
		return launch_fail(api, st, "set stream");
	}
	st = api->create_desc(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &pack);
	if (st == CUDNN_STATUS_SUCCESS)
		st = api->set_attr(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64,
				   pl->n_uids, pl->uids);
	if (st == CUDNN_STATUS_SUCCESS)
		st = api->set_attr(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR,
				   pl->n_uids, ptrs);
	if (st == CUDNN_STATUS_SUCCESS)
		st = api->set_attr(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1,
				   &ws);
	if (st == CUDNN_STATUS_SUCCESS)
		st = api->finalize(pack);
	if (st != CUDNN_STATUS_SUCCESS) {
		int code = launch_fail(api, st, "variant pack");
		if (pack)
			(void)api->destroy_desc(pack);
		pthread_mutex_unlock(&api->lock);
		return code;
	}
	st = api->execute(api->handle, pl->plan, pack);
	(void)api->destroy_desc(pack);
	pthread_mutex_unlock(&api->lock);
	if (st != CUDNN_STATUS_SUCCESS)
		return launch_fail(api, st, "execute");
	return 0;
}

/* The plan of kind for a launch, ready and with workspace enough; NULL
 * with *code set otherwise. */
static struct fa_cudnn_plan *launch_plan(struct fa_cudnn_api *api, const struct fa_launch_args *a,
					 int kind, int *code)
{
	struct fa_cudnn_plan *pl = fa_cudnn_cache_get(api, a->p, kind);
	if (!pl) {
		*code = FA_CUDNN_ERR + (int)CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED;
		return NULL;
	}
	if (!pl->ready) {
		snprintf(launch_error, sizeof launch_error, "%s", pl->why);
		*code = launch_error_code = FA_CUDNN_ERR + pl->status;
		return NULL;
	}
	if (!a->workspace || a->workspace_bytes < plan_bytes(pl)) {
		snprintf(launch_error, sizeof launch_error,
			 "cudnn_sdpa: workspace of %zu bytes, the plan needs %zu", a->workspace_bytes,
			 plan_bytes(pl));
		*code = launch_error_code =
			FA_CUDNN_ERR + (int)CUDNN_STATUS_BAD_PARAM_SIZE_INSUFFICIENT;
		return NULL;
	}
	return pl;
}

/* A target of the aux kernel's rows y = b + 1 (sdpa_aux_ptx): the rows of
 * a sequence that fabench's rules fix (zeros, or the LSE's +inf). */
struct aux_target {
	void *t;          /* NULL: none */
	uint32_t flags;   /* AUX_KEY_TOKENS, AUX_F32_INF */
	int32_t heads, cols, row_stride, head_stride;
};
#define AUX_KEY_TOKENS 1u /* the keys no query sees (all of a sequence with
			   * no query); else the query rows that attend no
			   * key (all of a sequence with no key) */
#define AUX_F32_INF 2u    /* fp32 +inf (the LSE); else 16-bit zeros */
#define AUX_MAX_TARGETS 3

/* The varlen aux kernel: the ragged offsets and lengths into the
 * workspace's arrays at aux (NULL: none, the rows only), and targets[0..n)
 * for the rows that attend no key or the keys no query sees. Returns 0 or
 * a CUDA error. */
static int launch_aux(const struct fa_launch_args *a, const struct fa_cudnn_plan *pl,
		      int32_t *aux, const struct aux_target *targets, int n,
		      cudaStream_t stream)
{
	const struct fa_problem *p = a->p;
	const void *cu_q = a->cu_seqlens_q, *cu_k = a->cu_seqlens_k;
	void *out = aux;
	int32_t batch = p->batch, pitch = (int32_t)pl->aux_pitch_bytes;
	int32_t mq = (int32_t)p->q_stride_s, mk = (int32_t)p->k_stride_s;
	int32_t mv = (int32_t)p->v_stride_s, mo = (int32_t)p->o_stride_s;
	int32_t heads = p->heads;
	int32_t diag = p->mask == FA_MASK_CAUSAL || p->mask == FA_MASK_SLIDING_WINDOW;
	int32_t window = p->mask == FA_MASK_SLIDING_WINDOW ? p->window : 0;
	struct aux_target z[AUX_MAX_TARGETS];
	memset(z, 0, sizeof z);
	for (int i = 0; i < n && i < AUX_MAX_TARGETS; i++)
		z[i] = targets[i];
	void *args[] = {&cu_q, &cu_k, &out, &batch, &pitch, &mq, &mk, &mv, &mo, &heads,
			&diag, &window,
			&z[0].t, &z[0].flags, &z[0].heads, &z[0].cols, &z[0].row_stride,
			&z[0].head_stride,
			&z[1].t, &z[1].flags, &z[1].heads, &z[1].cols, &z[1].row_stride,
			&z[1].head_stride,
			&z[2].t, &z[2].flags, &z[2].heads, &z[2].cols, &z[2].row_stride,
			&z[2].head_stride};
	/* row 0 of the grid: the offsets; row b + 1: sequence b, a z per
	 * target (no rows without a target) */
	dim3 grid = dim3_of((unsigned)((batch + SDPA_AUX_THREADS) / SDPA_AUX_THREADS));
	grid.y = n > 0 ? (unsigned)batch + 1 : 1;
	grid.z = (unsigned)(n < 1 ? 1 : n);
	return (int)cudaLaunchKernel((const void *)aux_kernel, grid, dim3_of(SDPA_AUX_THREADS), args,
				     0, stream);
}

/* A target of the query rows that attend no key (O, dQ: zeros), 16-bit,
 * or of the keys that no query sees (dK, dV). */
static struct aux_target aux_rows(void *t, int key_tokens, int32_t heads, int32_t cols,
				  int64_t row_stride, int64_t head_stride)
{
	struct aux_target z = {t, key_tokens ? AUX_KEY_TOKENS : 0u, heads, cols,
			       (int32_t)row_stride, (int32_t)head_stride};
	return z;
}

static int sdpa_launch(const struct fa_launch_args *a)
{
	struct fa_cudnn_api *api = fa_cudnn;
	const struct fa_problem *p = a->p;
	struct fa_cudnn_plan *pl;
	cudaStream_t stream = (cudaStream_t)a->stream;
	void *ptrs[FA_CUDNN_MAX_VARIANTS];
	int32_t *aux = NULL;
	float scale = p->scale;
	int code = 0;
	float *lse = FA_RECORD_HAS(struct fa_launch_args, a, lse) ? a->lse : NULL;

	if (!api)
		return FA_CUDNN_ERR + (int)CUDNN_STATUS_NOT_INITIALIZED;
	if (!(pl = launch_plan(api, a, lse ? FA_CUDNN_FWD_LSE : FA_CUDNN_FWD, &code)))
		return code;
	if (p->varlen) {
		/* O of a sequence with no key: zeros; its LSE: +inf */
		struct aux_target z[2];
		z[0] = aux_rows(a->o, 0, p->heads, p->head_dim_v, p->o_stride_s, p->o_stride_h);
		if (lse) {
			z[1] = aux_rows(lse, 0, p->heads, 1, p->heads, 1);
			z[1].flags |= AUX_F32_INF;
		}
		aux = (int32_t *)((char *)a->workspace + aux_offset(pl));
		if ((code = launch_aux(a, pl, aux, z, lse ? 2 : 1, stream)) != 0)
			return code;
	}
	for (int i = 0; i < pl->n_uids; i++) {
		char *aux_n = (char *)aux; /* aux array n is at aux_n + n * pitch */
		size_t pitch = pl->aux_pitch_bytes;
		switch (pl->uids[i]) {
		case FA_CUDNN_UID_Q: ptrs[i] = (void *)a->q; break;
		case FA_CUDNN_UID_K: ptrs[i] = (void *)a->k; break;
		case FA_CUDNN_UID_V: ptrs[i] = (void *)a->v; break;
		case FA_CUDNN_UID_O: ptrs[i] = a->o; break;
		case FA_CUDNN_UID_SCALE: ptrs[i] = &scale; break;
		case FA_CUDNN_UID_NEG_INF: ptrs[i] = &pl->neg_inf; break;
		case FA_CUDNN_UID_SKV:
			ptrs[i] = pl->shift_is_float ? (void *)&pl->shift_f : (void *)&pl->skv_i;
			break;
		case FA_CUDNN_UID_SQ: ptrs[i] = &pl->sq_i; break;
		case FA_CUDNN_UID_WINDOW:
			ptrs[i] = pl->window_is_float ? (void *)&pl->window_f : (void *)&pl->window_i;
			break;
		case FA_CUDNN_UID_PREFIX:
			ptrs[i] = a->prefix_lens ? (void *)a->prefix_lens : pl->prefix_dev;
			break;
		case FA_CUDNN_UID_STATS:
			ptrs[i] = lse ? (void *)lse : (char *)a->workspace + stats_offset(pl);
			break;
		case FA_CUDNN_UID_RAG_Q: ptrs[i] = aux_n; break;
		case FA_CUDNN_UID_RAG_K: ptrs[i] = aux_n + pitch; break;
		case FA_CUDNN_UID_RAG_V: ptrs[i] = aux_n + 2 * pitch; break;
		case FA_CUDNN_UID_RAG_O: ptrs[i] = aux_n + 3 * pitch; break;
		case FA_CUDNN_UID_SEQ_Q: ptrs[i] = aux ? aux_n + 4 * pitch : pl->seq_q_dev; break;
		case FA_CUDNN_UID_SEQ_KV: ptrs[i] = aux ? aux_n + 5 * pitch : pl->seq_kv_dev; break;
		case FA_CUDNN_UID_RAG_STATS: ptrs[i] = aux_n + 6 * pitch; break;
		default: ptrs[i] = NULL; break;
		}
	}
	if ((code = execute_plan(api, pl, stream, ptrs, a->workspace)) != 0)
		return code;
	if (lse && p->varlen) {
		/* a row with no key: +inf, whatever cuDNN wrote (or left) */
		void *l = lse;
		uint32_t n = (uint32_t)((int64_t)p->total_q * p->heads);
		void *args[] = {&l, &n};
		if (n > 0)
			return (int)cudaLaunchKernel((const void *)lse_fix_kernel,
						     dim3_of((n + SDPA_AUX_THREADS - 1) / SDPA_AUX_THREADS),
						     dim3_of(SDPA_AUX_THREADS), args, 0, stream);
	}
	return 0;
}

/* The backward: dQ, dK, dV from Q, K, V, O, dO and the forward's LSE. */
static int bwd_launch(const struct fa_launch_args *a)
{
	struct fa_cudnn_api *api = fa_cudnn;
	const struct fa_problem *p = a->p;
	struct fa_cudnn_plan *pl;
	cudaStream_t stream = (cudaStream_t)a->stream;
	void *ptrs[FA_CUDNN_MAX_VARIANTS];
	int32_t *aux = NULL;
	float scale = p->scale;
	int code = 0;

	if (!api)
		return FA_CUDNN_ERR + (int)CUDNN_STATUS_NOT_INITIALIZED;
	if (!FA_RECORD_HAS(struct fa_launch_args, a, dv) || !a->lse || !a->d_o || !a->o ||
	    !a->dq || !a->dk || !a->dv) {
		snprintf(launch_error, sizeof launch_error,
			 "cudnn_sdpa_bwd: the launch has no LSE, O, dO, dQ, dK or dV");
		return launch_error_code = FA_CUDNN_ERR + (int)CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
	}
	if (!(pl = launch_plan(api, a, FA_CUDNN_BWD, &code)))
		return code;
	void *acc = (char *)a->workspace + dq_accum_offset(pl);
	if (pl->dq_accum_bytes) {
		cudaError_t e = cudaMemsetAsync(acc, 0, pl->dq_accum_bytes, stream);
		if (e != cudaSuccess)
			return (int)e;
	}
	if (p->varlen) {
		/* the ragged offsets and lengths only: the rows of dQ, dK, dV
		 * are written after cuDNN */
		aux = (int32_t *)((char *)a->workspace + aux_offset(pl));
		if ((code = launch_aux(a, pl, aux, NULL, 0, stream)) != 0)
			return code;
	}
	for (int i = 0; i < pl->n_uids; i++) {
		char *aux_n = (char *)aux; /* aux array n is at aux_n + n * pitch */
		size_t pitch = pl->aux_pitch_bytes;
		switch (pl->uids[i]) {
		case FA_CUDNN_UID_Q: ptrs[i] = (void *)a->q; break;
		case FA_CUDNN_UID_K: ptrs[i] = (void *)a->k; break;
		case FA_CUDNN_UID_V: ptrs[i] = (void *)a->v; break;
		case FA_CUDNN_UID_O: ptrs[i] = a->o; break;
		case FA_CUDNN_UID_DO: ptrs[i] = (void *)a->d_o; break;
		case FA_CUDNN_UID_DQ: ptrs[i] = a->dq; break;
		case FA_CUDNN_UID_DK: ptrs[i] = a->dk; break;
		case FA_CUDNN_UID_DV: ptrs[i] = a->dv; break;
		case FA_CUDNN_UID_STATS: ptrs[i] = a->lse; break;
		case FA_CUDNN_UID_DQ_ACCUM: ptrs[i] = acc; break;
		case FA_CUDNN_UID_SCALE: ptrs[i] = &scale; break;
		case FA_CUDNN_UID_ONE: ptrs[i] = &pl->one_f; break;
		case FA_CUDNN_UID_NEG_INF: ptrs[i] = &pl->neg_inf; break;
		case FA_CUDNN_UID_SKV:
			ptrs[i] = pl->shift_is_float ? (void *)&pl->shift_f : (void *)&pl->skv_i;
			break;
		case FA_CUDNN_UID_SQ: ptrs[i] = &pl->sq_i; break;
		case FA_CUDNN_UID_WINDOW:
			ptrs[i] = pl->window_is_float ? (void *)&pl->window_f : (void *)&pl->window_i;
			break;
		case FA_CUDNN_UID_PREFIX:
			ptrs[i] = a->prefix_lens ? (void *)a->prefix_lens : pl->prefix_dev;
			break;
		case FA_CUDNN_UID_RAG_Q: ptrs[i] = aux_n; break;
		case FA_CUDNN_UID_RAG_K: ptrs[i] = aux_n + pitch; break;
		case FA_CUDNN_UID_RAG_V: ptrs[i] = aux_n + 2 * pitch; break;
		case FA_CUDNN_UID_RAG_O: ptrs[i] = aux_n + 3 * pitch; break;
		case FA_CUDNN_UID_SEQ_Q: ptrs[i] = aux_n + 4 * pitch; break;
		case FA_CUDNN_UID_SEQ_KV: ptrs[i] = aux_n + 5 * pitch; break;
		case FA_CUDNN_UID_RAG_STATS: ptrs[i] = aux_n + 6 * pitch; break;
		default: ptrs[i] = NULL; break;
		}
	}
	if ((code = execute_plan(api, pl, stream, ptrs, a->workspace)) != 0)
		return code;
	if (p->varlen) {
		/* after cuDNN, on its stream (part of the launch, so also of
		 * every timed one): zeros in dQ of the rows that attend no key
		 * and in dK, dV of the keys no query sees, whatever cuDNN wrote
		 * there or left (an H200 wrote non-zero dK, dV for a sequence
		 * with keys and no query) */
		struct aux_target z[3];
		z[0] = aux_rows(a->dq, 0, p->heads, p->head_dim, p->q_stride_s, p->q_stride_h);
		z[1] = aux_rows(a->dk, 1, p->kv_heads, p->head_dim, p->k_stride_s, p->k_stride_h);
		z[2] = aux_rows(a->dv, 1, p->kv_heads, p->head_dim_v, p->v_stride_s, p->v_stride_h);
		if ((code = launch_aux(a, pl, NULL, z, 3, stream)) != 0)
			return code;
	}
	return 0;
}

/* Positional: name, description, dtypes, head_dim_min, head_dim_max,
 * head_dims, n_head_dims, score_bytes, params, n_params, supports,
 * workspace_bytes, launch, test_only, struct_size, pass, writes_lse,
 * fwd_kernel. head_dim 256 is cuDNN 9's largest fp16/bf16 SDPA head;
 * supports() refuses what the version or the architecture cannot do.
 * score_bytes 0: fused, no score tensor. The forward writes the LSE when
 * the harness passes one (the forward of a backward case). */
const struct fa_kernel fa_cudnn_sdpa_kernels[FA_CUDNN_N_KERNELS] = {
	{"cudnn_sdpa", sdpa_description, (1u << FA_DTYPE_FP16) | (1u << FA_DTYPE_BF16), 8, 256,
	 NULL, 0, 0, NULL, 0, sdpa_supports, sdpa_workspace_bytes, sdpa_launch, 0,
	 sizeof(struct fa_kernel), FA_PASS_FWD, 1, NULL},
	{"cudnn_sdpa_bwd", bwd_description, (1u << FA_DTYPE_FP16) | (1u << FA_DTYPE_BF16), 8, 256,
	 NULL, 0, 0, NULL, 0, bwd_supports, bwd_workspace_bytes, bwd_launch, 0,
	 sizeof(struct fa_kernel), FA_PASS_BWD, 0, "cudnn_sdpa"},
};
