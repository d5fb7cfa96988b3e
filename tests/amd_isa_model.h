/* amd_isa_model.h - the AMD matrix instructions as the ISA guides define
 * them: where the hardware reads each element of A and B and where it
 * writes each element of D, for the layouts of kernels/common/amd_frag.h.
 * Written in the direction the ISA tables are read ("A[m][k] is in lane
 * ..., element ..."), independently of amd_frag.h's maps, which
 * tests/test_amd_frag.c checks against it; tests/hip_emu/ uses it to
 * execute the matrix instructions of the HIP kernels on the CPU. C and C++.
 *
 * Sources (section titles; their numbers move between revisions):
 *   CDNA3 ISA (MI300, gfx942), "Matrix Arithmetic Instructions", dependent
 *     register layouts of V_MFMA_F32_16X16X16_F16/_BF16 and
 *     V_MFMA_F32_32X32X8_F16/_BF16 (CDNA2, gfx90a: the same tables, _BF16_1K);
 *   RDNA3 ISA (gfx11), "Wave Matrix Multiply Accumulate (WMMA)", 16-bit A/B
 *     and 32-bit C/D matrix layouts (A and B replicated in lanes 16-31);
 *   RDNA4 ISA (gfx12), the same chapter (8 elements per lane, K split into
 *     runs of four between the wave halves, D rows in blocks of 8).
 * tinygrad's tc.py gives the same as lane/element bit assignments.
 */
#ifndef FA_AMD_ISA_MODEL_H
#define FA_AMD_ISA_MODEL_H

#include "../kernels/common/amd_frag.h"

/* copies: how many lanes hold one A (or B) element. */
struct isa {
	const char *name;
	int wave, m, n, k, a_elems, b_elems, c_elems, copies;
	/* lane and element of A[m][k] (copy c), B[k][n] (copy c), D[m][n] */
	void (*a_at)(int m, int k, int c, int *lane, int *e);
	void (*b_at)(int k, int n, int c, int *lane, int *e);
	void (*d_at)(int m, int n, int *lane, int *e);
};

/* CDNA 16x16x16: "lanes 0-15 hold K 0-3 of rows 0-15, lanes 16-31 K 4-7,
 * ..."; the output's lane group g holds rows 4g..4g+3 of column lane % 16. */
static void mfma16_a_at(int m, int k, int c, int *lane, int *e)
{
	(void)c;
	*lane = m + 16 * (k >> 2);
	*e = k & 3;
}
static void mfma16_b_at(int k, int n, int c, int *lane, int *e)
{
	(void)c;
	*lane = n + 16 * (k >> 2);
	*e = k & 3;
}
static void mfma16_d_at(int m, int n, int *lane, int *e)
{
	*lane = n + 16 * (m >> 2);
	*e = m & 3;
}

/* CDNA 32x32x8: lanes 0-31 K 0-3, lanes 32-63 K 4-7; output: 4 blocks of
 * 8 rows in VGPR groups of 4, the wave halves holding rows 0-3 and 4-7 of
 * each block. */
static void mfma32_a_at(int m, int k, int c, int *lane, int *e)
{
	(void)c;
	*lane = m + 32 * (k >> 2);
	*e = k & 3;
}
static void mfma32_b_at(int k, int n, int c, int *lane, int *e)
{
	(void)c;
	*lane = n + 32 * (k >> 2);
	*e = k & 3;
}
static void mfma32_d_at(int m, int n, int *lane, int *e)
{
	*lane = n + 32 * ((m >> 2) & 1);
	*e = 4 * (m >> 3) + (m & 3);
}

/* RDNA3: row m of A (all 16 k) in lane m and again in lane m + 16; the
 * output's even rows in lanes 0-15, odd rows in lanes 16-31. */
static void wmma11_a_at(int m, int k, int c, int *lane, int *e)
{
	*lane = m + 16 * c;
	*e = k;
}
static void wmma11_b_at(int k, int n, int c, int *lane, int *e)
{
	*lane = n + 16 * c;
	*e = k;
}
static void wmma11_d_at(int m, int n, int *lane, int *e)
{
	*lane = n + 16 * (m & 1);
	*e = m >> 1;
}

/* RDNA4: lanes 0-15 hold K 0-3 (VGPR 0-1) and 8-11 (VGPR 2-3), lanes 16-31
 * K 4-7 and 12-15; the output's rows 0-7 in lanes 0-15, 8-15 in 16-31. */
static void wmma12_a_at(int m, int k, int c, int *lane, int *e)
{
	(void)c;
	*lane = m + 16 * ((k >> 2) & 1);
	*e = (k & 3) + 4 * (k >> 3);
}
static void wmma12_b_at(int k, int n, int c, int *lane, int *e)
{
	(void)c;
	*lane = n + 16 * ((k >> 2) & 1);
	*e = (k & 3) + 4 * (k >> 3);
}
static void wmma12_d_at(int m, int n, int *lane, int *e)
{
	*lane = n + 16 * (m >> 3);
	*e = m & 7;
}

static const struct isa isa_models[FA_FRAG_KINDS] = {
	/* FA_FRAG_MFMA_16X16X16 */ {"mfma_f32_16x16x16", 64, 16, 16, 16, 4, 4, 4, 1, mfma16_a_at,
				   mfma16_b_at, mfma16_d_at},
	/* FA_FRAG_MFMA_32X32X8 */ {"mfma_f32_32x32x8", 64, 32, 32, 8, 4, 4, 16, 1, mfma32_a_at,
				  mfma32_b_at, mfma32_d_at},
	/* FA_FRAG_WMMA_GFX11 */ {"wmma_f32_16x16x16 gfx11", 32, 16, 16, 16, 16, 16, 8, 2,
				wmma11_a_at, wmma11_b_at, wmma11_d_at},
	/* FA_FRAG_WMMA_GFX12 */ {"wmma_f32_16x16x16 gfx12", 32, 16, 16, 16, 8, 8, 8, 1,
				wmma12_a_at, wmma12_b_at, wmma12_d_at},
};

#endif /* FA_AMD_ISA_MODEL_H */
