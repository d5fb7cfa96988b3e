/* amd_frag.h - where each element of an AMD matrix-core operand lives: for
 * every MFMA/WMMA builtin the HIP kernels use, pure functions
 * (lane, element index) -> (row, col) of the A, B and C/D operands.
 *
 * Written once, used by the kernels (kernels/hip/flash_amd_mma.h loads its
 * fragments through these maps and gathers its accumulators through them)
 * and by tests/test_amd_frag.c, which emulates one product per builtin on
 * the CPU against an independent encoding of the ISA tables. Plain C99 and
 * HIP: no builtin, no device-only type.
 *
 * Conventions. D = A B + C with A M x K (row = m, col = k), B K x N (row = k,
 * col = n), C and D M x N (row = m, col = n). "Element i" of a lane is the
 * i-th 16-bit value of its A or B vector operand (a .b32 VGPR holds elements
 * 2j in its low half and 2j+1 in its high half) or the i-th fp32 value of
 * its accumulator (VGPR i). Sources:
 *
 *   MFMA, CDNA2 (gfx90a) and CDNA3 (gfx942) ISA guides, chapter "Matrix
 *   Arithmetic Instructions", the dependent-register layout tables of
 *   V_MFMA_F32_16X16X16F16 / _BF16_1K (CDNA3 spells it _BF16) and
 *   V_MFMA_F32_32X32X8F16 / _BF16_1K; AMD's matrix instruction calculator
 *   (amd_matrix_instruction_calculator, --detail-instruction) prints the same
 *   tables. wave64; A/B 4 elements per lane, C/D 4 (16x16) or 16 (32x32).
 *   16x16x16: A[m][k] in lane m + 16 (k / 4), element k % 4; B likewise
 *   with n for m; D[m][n] in lane n + 16 (m / 4), element m % 4.
 *   32x32x8:  A[m][k] in lane m + 32 (k / 4), element k % 4; B likewise;
 *   D[m][n] in lane n + 32 ((m / 4) % 2), element 4 (m / 8) + m % 4.
 *
 *   WMMA, RDNA3 ISA guide (gfx11), chapter "Wave Matrix Multiply
 *   Accumulate (WMMA)", the 16-bit A/B and 32-bit C/D matrix layouts, and
 *   GPUOpen's "How to accelerate AI applications on RDNA 3 using WMMA":
 *   wave32; A row m (all 16 k) in lane m AND lane m + 16 (the two halves of
 *   the wave must hold the same copy), B column n likewise, 16 elements per
 *   lane; D 8 fp32 per lane, D[m][n] in lane n + 16 (m % 2), element m / 2
 *   (rows interleaved between the wave halves).
 *
 *   WMMA, RDNA4 ISA guide (gfx12), the same chapter: no replication, 8
 *   elements per lane; A[m][k] in lane m + 16 ((k / 4) % 2), element
 *   (k % 4) + 4 (k / 8): lanes 0-15 hold k 0-3 and 8-11, lanes 16-31 k 4-7
 *   and 12-15; B likewise; D[m][n] in lane n + 16 (m / 8), element m % 8
 *   (rows in blocks of 8, no exchange between the halves).
 *
 * tinygrad's tc.py (amd_rdna3, amd_rdna4, amd_cdna: lane and element bits
 * of each operand) and llama.cpp's ggml-cuda/mma.cuh (get_i/get_j: RDNA3's
 * accumulator row 2 l + lane / 16, RDNA4's 8 (lane / 16) + l) encode the
 * same facts. Seed 000 is what happens when the gfx11 row of D is used on
 * gfx12; tests/test_amd_frag.c keeps that mutant failing.
 */
#ifndef FA_AMD_FRAG_H
#define FA_AMD_FRAG_H

#if defined(__HIPCC__) || defined(__CUDACC__)
/* constexpr: a kernel sizes its fragments with fa_frag_shape_of(KIND) */
#define FA_FRAG_FN static constexpr __host__ __device__ inline
#elif defined(__cplusplus)
#define FA_FRAG_FN static constexpr inline
#else
#define FA_FRAG_FN static inline
#endif

/* The builtins' operand layouts (also the index of fa_frag_shapes). */
enum fa_frag_kind {
	FA_FRAG_MFMA_16X16X16 = 0, /* gfx90a, gfx942: mfma_f32_16x16x16{f16,bf16_1k} */
	FA_FRAG_MFMA_32X32X8 = 1,  /* gfx90a, gfx942: mfma_f32_32x32x8{f16,bf16_1k} */
	FA_FRAG_WMMA_GFX11 = 2,    /* gfx11: wmma_f32_16x16x16_{f16,bf16}_w32 */
	FA_FRAG_WMMA_GFX12 = 3,    /* gfx12: wmma_f32_16x16x16_{f16,bf16}_w32_gfx12 */
	FA_FRAG_KINDS = 4
};

/* One element's place in its matrix. */
struct fa_frag_rc {
	int row, col;
};

/* Shape of one product: lanes of the wave, M, N, K, and the elements per
 * lane of A, B and C/D. */
struct fa_frag_shape {
	int wave, m, n, k, a_elems, b_elems, c_elems;
};

FA_FRAG_FN struct fa_frag_shape fa_frag_shape_of(int kind)
{
	struct fa_frag_shape s = {0, 0, 0, 0, 0, 0, 0};
	switch (kind) {
	case FA_FRAG_MFMA_16X16X16: s.wave = 64; s.m = 16; s.n = 16; s.k = 16;
		s.a_elems = 4; s.b_elems = 4; s.c_elems = 4; break;
	case FA_FRAG_MFMA_32X32X8: s.wave = 64; s.m = 32; s.n = 32; s.k = 8;
		s.a_elems = 4; s.b_elems = 4; s.c_elems = 16; break;
	case FA_FRAG_WMMA_GFX11: s.wave = 32; s.m = 16; s.n = 16; s.k = 16;
		s.a_elems = 16; s.b_elems = 16; s.c_elems = 8; break;
	case FA_FRAG_WMMA_GFX12: s.wave = 32; s.m = 16; s.n = 16; s.k = 16;
		s.a_elems = 8; s.b_elems = 8; s.c_elems = 8; break;
	default: break;
	}
	return s;
}

FA_FRAG_FN struct fa_frag_rc fa_frag_rc_make(int row, int col)
{
	struct fa_frag_rc r = {row, col};
	return r;
}

/* ---- MFMA 16x16x16 (wave64) ---- */
FA_FRAG_FN struct fa_frag_rc fa_frag_mfma16_a(int lane, int i) /* (m, k) */
{
	return fa_frag_rc_make(lane % 16, 4 * (lane / 16) + i);
}
FA_FRAG_FN struct fa_frag_rc fa_frag_mfma16_b(int lane, int i) /* (k, n) */
{
	return fa_frag_rc_make(4 * (lane / 16) + i, lane % 16);
}
FA_FRAG_FN struct fa_frag_rc fa_frag_mfma16_c(int lane, int i) /* (m, n) */
{
	return fa_frag_rc_make(4 * (lane / 16) + i, lane % 16);
}

/* ---- MFMA 32x32x8 (wave64) ---- */
FA_FRAG_FN struct fa_frag_rc fa_frag_mfma32_a(int lane, int i)
{
	return fa_frag_rc_make(lane % 32, 4 * (lane / 32) + i);
}
FA_FRAG_FN struct fa_frag_rc fa_frag_mfma32_b(int lane, int i)
{
	return fa_frag_rc_make(4 * (lane / 32) + i, lane % 32);
}
FA_FRAG_FN struct fa_frag_rc fa_frag_mfma32_c(int lane, int i)
{
	return fa_frag_rc_make(8 * (i / 4) + 4 * (lane / 32) + i % 4, lane % 32);
}

/* ---- WMMA gfx11 (wave32; A and B replicated in both wave halves) ---- */
FA_FRAG_FN struct fa_frag_rc fa_frag_wmma11_a(int lane, int i)
{
	return fa_frag_rc_make(lane % 16, i);
}
FA_FRAG_FN struct fa_frag_rc fa_frag_wmma11_b(int lane, int i)
{
	return fa_frag_rc_make(i, lane % 16);
}
FA_FRAG_FN struct fa_frag_rc fa_frag_wmma11_c(int lane, int i)
{
	return fa_frag_rc_make(2 * i + lane / 16, lane % 16);
}

/* ---- WMMA gfx12 (wave32; 8 elements per lane, K in runs of 4) ---- */
FA_FRAG_FN struct fa_frag_rc fa_frag_wmma12_a(int lane, int i)
{
	return fa_frag_rc_make(lane % 16, 8 * (i / 4) + 4 * (lane / 16) + i % 4);
}
FA_FRAG_FN struct fa_frag_rc fa_frag_wmma12_b(int lane, int i)
{
	return fa_frag_rc_make(8 * (i / 4) + 4 * (lane / 16) + i % 4, lane % 16);
}
FA_FRAG_FN struct fa_frag_rc fa_frag_wmma12_c(int lane, int i)
{
	return fa_frag_rc_make(8 * (lane / 16) + i, lane % 16);
}

/* The three maps by kind; (-1, -1) for an unknown kind. A kernel passes
 * its kind as a compile-time constant, so the switch folds away. */
FA_FRAG_FN struct fa_frag_rc fa_frag_a(int kind, int lane, int i)
{
	switch (kind) {
	case FA_FRAG_MFMA_16X16X16: return fa_frag_mfma16_a(lane, i);
	case FA_FRAG_MFMA_32X32X8: return fa_frag_mfma32_a(lane, i);
	case FA_FRAG_WMMA_GFX11: return fa_frag_wmma11_a(lane, i);
	case FA_FRAG_WMMA_GFX12: return fa_frag_wmma12_a(lane, i);
	default: return fa_frag_rc_make(-1, -1);
	}
}

FA_FRAG_FN struct fa_frag_rc fa_frag_b(int kind, int lane, int i)
{
	switch (kind) {
	case FA_FRAG_MFMA_16X16X16: return fa_frag_mfma16_b(lane, i);
	case FA_FRAG_MFMA_32X32X8: return fa_frag_mfma32_b(lane, i);
	case FA_FRAG_WMMA_GFX11: return fa_frag_wmma11_b(lane, i);
	case FA_FRAG_WMMA_GFX12: return fa_frag_wmma12_b(lane, i);
	default: return fa_frag_rc_make(-1, -1);
	}
}

FA_FRAG_FN struct fa_frag_rc fa_frag_c(int kind, int lane, int i)
{
	switch (kind) {
	case FA_FRAG_MFMA_16X16X16: return fa_frag_mfma16_c(lane, i);
	case FA_FRAG_MFMA_32X32X8: return fa_frag_mfma32_c(lane, i);
	case FA_FRAG_WMMA_GFX11: return fa_frag_wmma11_c(lane, i);
	case FA_FRAG_WMMA_GFX12: return fa_frag_wmma12_c(lane, i);
	default: return fa_frag_rc_make(-1, -1);
	}
}

#endif /* FA_AMD_FRAG_H */
