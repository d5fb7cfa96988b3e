/* test_amd_frag.c - the AMD matrix-core fragment maps of
 * kernels/common/amd_frag.h against the layouts the ISA guides document.
 *
 * For each builtin, one product D = A B + C is emulated on the CPU the way
 * the hardware computes it: A, B and C are distributed into per-lane
 * registers through the maps under test, a model of the instruction reads
 * every A[m][k], B[k][n] and C[m][n] from the lane and element where the
 * ISA says the hardware takes it, and writes D[m][n] where the ISA says it
 * lands; D is gathered back through the C map and compared with a plain
 * matmul. Registers nobody wrote hold NaN, so an element the map puts in
 * the wrong place poisons the result instead of vanishing.
 *
 * The ISA model (tests/amd_isa_model.h, sources cited there) is written in
 * the direction the ISA tables are read ("A[m][k] is in lane ..., element
 * ..."), independently of the header's (lane, element) -> (row, col)
 * functions; it is never derived from them.
 *
 * A single product cannot tell a K order that A and B share from the ISA's
 * (the sum over k does not care), so each operand is also checked alone:
 * its map under test, the other two placed by the ISA model. The mutant
 * tests run the same checker on seed 000's bug (gfx11's layout on gfx12)
 * and expect it to fail.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../kernels/common/amd_frag.h"
#include "test.h"

#define MAXL 64 /* lanes */
#define MAXE 16 /* elements per lane */
#define MAXD 32 /* matrix side */

#include "amd_isa_model.h"

/* ------------------------------------------------------------------------
 * A placement: what a kernel puts in each (lane, element) of A, B and C -
 * from the header's maps, from the ISA model, or a mutant of either. */
struct placement {
	int wave, a_elems, b_elems, c_elems;
	struct fa_frag_rc a[MAXL][MAXE], b[MAXL][MAXE], c[MAXL][MAXE];
};

static void placement_from_maps(struct placement *pl, int kind)
{
	const struct fa_frag_shape s = fa_frag_shape_of(kind);
	memset(pl, 0, sizeof *pl);
	pl->wave = s.wave;
	pl->a_elems = s.a_elems;
	pl->b_elems = s.b_elems;
	pl->c_elems = s.c_elems;
	for (int l = 0; l < s.wave; l++) {
		for (int i = 0; i < s.a_elems; i++)
			pl->a[l][i] = fa_frag_a(kind, l, i);
		for (int i = 0; i < s.b_elems; i++)
			pl->b[l][i] = fa_frag_b(kind, l, i);
		for (int i = 0; i < s.c_elems; i++)
			pl->c[l][i] = fa_frag_c(kind, l, i);
	}
}

static void placement_from_isa(struct placement *pl, const struct isa *h)
{
	memset(pl, 0, sizeof *pl);
	pl->wave = h->wave;
	pl->a_elems = h->a_elems;
	pl->b_elems = h->b_elems;
	pl->c_elems = h->c_elems;
	int lane, e;
	for (int c = 0; c < h->copies; c++)
		for (int m = 0; m < h->m; m++)
			for (int k = 0; k < h->k; k++) {
				h->a_at(m, k, c, &lane, &e);
				pl->a[lane][e] = fa_frag_rc_make(m, k);
			}
	for (int c = 0; c < h->copies; c++)
		for (int k = 0; k < h->k; k++)
			for (int n = 0; n < h->n; n++) {
				h->b_at(k, n, c, &lane, &e);
				pl->b[lane][e] = fa_frag_rc_make(k, n);
			}
	for (int m = 0; m < h->m; m++)
		for (int n = 0; n < h->n; n++) {
			h->d_at(m, n, &lane, &e);
			pl->c[lane][e] = fa_frag_rc_make(m, n);
		}
}

static uint64_t rng_state;
static float small_int(void)
{
	rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
	return (float)((int)((rng_state >> 33) % 17) - 8); /* -8..8: every sum exact */
}

static int inside(struct fa_frag_rc rc, int rows, int cols)
{
	return rc.row >= 0 && rc.row < rows && rc.col >= 0 && rc.col < cols;
}

/* Emulates one product of instruction h with operands placed by pl.
 * Returns 1 when D gathered through pl's C map equals A B + C exactly,
 * else 0 with the first difference in why. */
static int emulate(const struct placement *pl, const struct isa *h, char *why, size_t why_size)
{
	static float A[MAXD][MAXD], B[MAXD][MAXD], C[MAXD][MAXD], D[MAXD][MAXD];
	static float ra[MAXL][MAXE], rb[MAXL][MAXE], rc[MAXL][MAXE], rd[MAXL][MAXE];
	static int seen[MAXD][MAXD];
	if (pl->wave != h->wave) {
		snprintf(why, why_size, "%s: placement for wave%d, the instruction runs in wave%d",
			 h->name, pl->wave, h->wave);
		return 0;
	}
	for (int i = 0; i < h->m; i++)
		for (int j = 0; j < h->k; j++)
			A[i][j] = small_int();
	for (int i = 0; i < h->k; i++)
		for (int j = 0; j < h->n; j++)
			B[i][j] = small_int();
	for (int i = 0; i < h->m; i++)
		for (int j = 0; j < h->n; j++)
			C[i][j] = small_int();
	for (int l = 0; l < MAXL; l++)
		for (int e = 0; e < MAXE; e++)
			ra[l][e] = rb[l][e] = rc[l][e] = rd[l][e] = NAN;

	/* the kernel side: each lane loads its elements through the maps */
	for (int l = 0; l < pl->wave; l++) {
		for (int i = 0; i < pl->a_elems && i < MAXE; i++) {
			const struct fa_frag_rc x = pl->a[l][i];
			if (!inside(x, h->m, h->k)) {
				snprintf(why, why_size, "%s: A lane %d element %d -> (%d, %d) outside %dx%d",
					 h->name, l, i, x.row, x.col, h->m, h->k);
				return 0;
			}
			ra[l][i] = A[x.row][x.col];
		}
		for (int i = 0; i < pl->b_elems && i < MAXE; i++) {
			const struct fa_frag_rc x = pl->b[l][i];
			if (!inside(x, h->k, h->n)) {
				snprintf(why, why_size, "%s: B lane %d element %d -> (%d, %d) outside %dx%d",
					 h->name, l, i, x.row, x.col, h->k, h->n);
				return 0;
			}
			rb[l][i] = B[x.row][x.col];
		}
		for (int i = 0; i < pl->c_elems && i < MAXE; i++) {
			const struct fa_frag_rc x = pl->c[l][i];
			if (!inside(x, h->m, h->n)) {
				snprintf(why, why_size, "%s: C lane %d element %d -> (%d, %d) outside %dx%d",
					 h->name, l, i, x.row, x.col, h->m, h->n);
				return 0;
			}
			rc[l][i] = C[x.row][x.col];
		}
	}

	/* the instruction: reads only the registers it has (elements past
	 * h->*_elems do not exist on this arch); replicated copies that differ
	 * make the element undefined (NaN) */
	for (int m = 0; m < h->m; m++)
		for (int n = 0; n < h->n; n++) {
			int lane, e;
			h->d_at(m, n, &lane, &e);
			double acc = e < pl->c_elems ? rc[lane][e] : NAN;
			for (int k = 0; k < h->k; k++) {
				double a = 0, b = 0;
				for (int c = 0; c < h->copies; c++) {
					int la, ea, lb, eb;
					h->a_at(m, k, c, &la, &ea);
					h->b_at(k, n, c, &lb, &eb);
					const float va = ra[la][ea], vb = rb[lb][eb];
					if (c == 0) {
						a = va;
						b = vb;
					} else {
						if (!(va == a))
							a = NAN;
						if (!(vb == b))
							b = NAN;
					}
				}
				acc += a * b;
			}
			rd[lane][e] = (float)acc;
		}

	/* the kernel side again: gather D through the C map */
	memset(seen, 0, sizeof seen);
	for (int l = 0; l < pl->wave; l++)
		for (int i = 0; i < pl->c_elems && i < MAXE; i++) {
			const struct fa_frag_rc x = pl->c[l][i];
			if (seen[x.row][x.col]++) {
				snprintf(why, why_size, "%s: C element (%d, %d) mapped twice (lane %d element %d)",
					 h->name, x.row, x.col, l, i);
				return 0;
			}
			D[x.row][x.col] = rd[l][i];
		}
	for (int m = 0; m < h->m; m++)
		for (int n = 0; n < h->n; n++) {
			double want = C[m][n];
			for (int k = 0; k < h->k; k++)
				want += (double)A[m][k] * B[k][n];
			if (!seen[m][n]) {
				snprintf(why, why_size, "%s: D[%d][%d] is in no lane of the C map", h->name, m, n);
				return 0;
			}
			if (!(D[m][n] == (float)want)) {
				snprintf(why, why_size, "%s: D[%d][%d] = %g, matmul gives %g", h->name, m, n,
					 (double)D[m][n], want);
				return 0;
			}
		}
	return 1;
}

/* The layouts of kind under test: all three maps together, then each map
 * alone with the other two operands placed by the ISA model. Returns 1
 * when every emulation matches. */
static int check_kind(const struct placement *maps, int kind, char *why, size_t why_size)
{
	const struct isa *h = &isa_models[kind];
	static struct placement isa_pl, mix;
	placement_from_isa(&isa_pl, h);
	for (int trial = 0; trial < 4; trial++) {
		if (!emulate(maps, h, why, why_size))
			return 0;
		for (int op = 0; op < 3; op++) {
			mix = isa_pl;
			if (maps->wave != isa_pl.wave)
				return emulate(maps, h, why, why_size);
			if (op == 0) {
				memcpy(mix.a, maps->a, sizeof mix.a);
				mix.a_elems = maps->a_elems;
			} else if (op == 1) {
				memcpy(mix.b, maps->b, sizeof mix.b);
				mix.b_elems = maps->b_elems;
			} else {
				memcpy(mix.c, maps->c, sizeof mix.c);
				mix.c_elems = maps->c_elems;
			}
			if (!emulate(&mix, h, why, why_size)) {
				const size_t n = strlen(why);
				snprintf(why + n, why_size - n, " (the %s map alone)",
					 op == 0 ? "A" : op == 1 ? "B" : "C");
				return 0;
			}
		}
	}
	return 1;
}

FA_TEST(amd_frag, maps_match_the_isa_for_every_builtin)
{
	rng_state = fa_test_seed();
	static struct placement pl;
	char why[256];
	for (int kind = 0; kind < FA_FRAG_KINDS; kind++) {
		placement_from_maps(&pl, kind);
		const int ok = check_kind(&pl, kind, why, sizeof why);
		FA_CHECKF(ok, "%s", why);
	}
}

FA_TEST(amd_frag, shapes_match_the_builtins)
{
	/* register counts of the builtins' vector operands (clang's
	 * BuiltinsAMDGPU.def): A/B 4 x 16-bit on CDNA, 16 on gfx11, 8 on gfx12;
	 * D 4 or 16 fp32 on CDNA, 8 on both RDNA */
	for (int kind = 0; kind < FA_FRAG_KINDS; kind++) {
		const struct fa_frag_shape s = fa_frag_shape_of(kind);
		const struct isa *h = &isa_models[kind];
		FA_CHECK(s.wave == h->wave && s.m == h->m && s.n == h->n && s.k == h->k);
		FA_CHECK(s.a_elems == h->a_elems && s.b_elems == h->b_elems &&
			 s.c_elems == h->c_elems);
		/* every lane holds its share: M K elements (times the copies) */
		FA_CHECK(s.wave * s.a_elems == h->m * h->k * h->copies);
		FA_CHECK(s.wave * s.c_elems == h->m * h->n);
	}
	FA_CHECK(fa_frag_shape_of(FA_FRAG_KINDS).wave == 0);
	FA_CHECK(fa_frag_a(FA_FRAG_KINDS, 0, 0).row == -1);
}

/* Seed 000: gfx11's fragments (16 elements per lane, accumulator rows
 * interleaved between the wave halves) used on gfx12. The checker must
 * reject them, or it would not have caught the bug. */
FA_TEST(amd_frag, mutant_gfx11_layout_on_gfx12_fails)
{
	rng_state = fa_test_seed();
	static struct placement pl;
	char why[256] = "";
	placement_from_maps(&pl, FA_FRAG_WMMA_GFX11);
	FA_CHECKF(!check_kind(&pl, FA_FRAG_WMMA_GFX12, why, sizeof why),
		  "gfx11 maps passed as gfx12's");
	FA_CHECK(why[0] != '\0');
}

/* The accumulator alone: gfx12's A and B with gfx11's C/D rows (2 i +
 * lane / 16 instead of 8 (lane / 16) + i), the exact bug of seed 000. */
FA_TEST(amd_frag, mutant_gfx11_accumulator_on_gfx12_fails)
{
	rng_state = fa_test_seed();
	static struct placement pl;
	char why[256] = "";
	placement_from_maps(&pl, FA_FRAG_WMMA_GFX12);
	for (int l = 0; l < 32; l++)
		for (int i = 0; i < 8; i++)
			pl.c[l][i] = fa_frag_wmma11_c(l, i);
	FA_CHECK(!check_kind(&pl, FA_FRAG_WMMA_GFX12, why, sizeof why));
	FA_CHECKF(strstr(why, "D[") != NULL, "unexpected reason: %s", why);
}

/* gfx11's replicated operands: a kernel that fills only lanes 0-15 (the
 * upper half left as it was) gets undefined results, and the checker says
 * so; a K order A and B share passes the joint product but not the
 * per-operand check. */
FA_TEST(amd_frag, mutant_partial_or_permuted_operands_fail)
{
	rng_state = fa_test_seed();
	static struct placement pl;
	char why[256] = "";
	placement_from_maps(&pl, FA_FRAG_WMMA_GFX11);
	for (int l = 16; l < 32; l++)
		for (int i = 0; i < 16; i++)
			pl.a[l][i] = fa_frag_rc_make(l % 16, 15 - i); /* not the same copy */
	FA_CHECK(!check_kind(&pl, FA_FRAG_WMMA_GFX11, why, sizeof why));

	/* gfx12 with K contiguous per wave half (k = 8 (lane / 16) + i) in
	 * both A and B: the sum over k is unchanged, the ISA layout is not */
	placement_from_maps(&pl, FA_FRAG_WMMA_GFX12);
	for (int l = 0; l < 32; l++)
		for (int i = 0; i < 8; i++) {
			pl.a[l][i] = fa_frag_rc_make(l % 16, 8 * (l / 16) + i);
			pl.b[l][i] = fa_frag_rc_make(8 * (l / 16) + i, l % 16);
		}
	why[0] = '\0';
	FA_CHECK(emulate(&pl, &isa_models[FA_FRAG_WMMA_GFX12], why, sizeof why));
	FA_CHECK(!check_kind(&pl, FA_FRAG_WMMA_GFX12, why, sizeof why));
	FA_CHECKF(strstr(why, "map alone") != NULL, "unexpected reason: %s", why);

	/* MFMA 32x32x8 with the 16x16 accumulator rule (rows 4 (lane / 32) +
	 * i, no blocks of 8): rows 4-15 land twice, rows 16-31 never */
	placement_from_maps(&pl, FA_FRAG_MFMA_32X32X8);
	for (int l = 0; l < 64; l++)
		for (int i = 0; i < 16; i++)
			pl.c[l][i] = fa_frag_rc_make(4 * (l / 32) + i, l % 32);
	FA_CHECK(!check_kind(&pl, FA_FRAG_MFMA_32X32X8, why, sizeof why));
}

/* What kernels/hip/flash_amd_mma.h relies on to load a fragment one 32-bit
 * word at a time: in every A and B map, elements 2j and 2j+1 of a lane are
 * consecutive in k (A: same row, next column; B: same column, next row),
 * and element 2j sits at an even k (a 4-byte aligned address). */
FA_TEST(amd_frag, pairs_are_adjacent_along_k)
{
	for (int kind = 0; kind < FA_FRAG_KINDS; kind++) {
		const struct fa_frag_shape s = fa_frag_shape_of(kind);
		for (int l = 0; l < s.wave; l++)
			for (int i = 0; i + 1 < s.a_elems; i += 2) {
				const struct fa_frag_rc a0 = fa_frag_a(kind, l, i), a1 = fa_frag_a(kind, l, i + 1);
				const struct fa_frag_rc b0 = fa_frag_b(kind, l, i), b1 = fa_frag_b(kind, l, i + 1);
				FA_CHECKF(a1.row == a0.row && a1.col == a0.col + 1 && a0.col % 2 == 0,
					  "kind %d lane %d: A elements %d, %d at (%d, %d), (%d, %d)", kind, l,
					  i, i + 1, a0.row, a0.col, a1.row, a1.col);
				FA_CHECKF(b1.col == b0.col && b1.row == b0.row + 1 && b0.row % 2 == 0,
					  "kind %d lane %d: B elements %d, %d at (%d, %d), (%d, %d)", kind, l,
					  i, i + 1, b0.row, b0.col, b1.row, b1.col);
			}
	}
}
