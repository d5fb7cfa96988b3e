/* test_dtype.c - the fp32 <-> fp16/bf16 conversions of fa_dtype.h: every
 * 16-bit pattern round-trips, and fp32 -> 16-bit rounding agrees with gcc's
 * _Float16 conversion and with a long-double round-to-nearest-even model on
 * random values and on the edges (ties, subnormals, overflow, NaN, Inf). */
#include <math.h>
#include <string.h>

#include "../kernels/common/fa_dtype.h"
#include "../kernels/common/fa_rng.h"
#include "test.h"

/* gcc 12 has _Float16 on x86-64 (soft conversions in libgcc); clang 14 does
 * not, and there only the long-double model is compared. */
#if defined(__FLT16_MAX__)
#define HAVE_FLOAT16 1
#else
#define HAVE_FLOAT16 0
#endif

#if HAVE_FLOAT16
static int same_bits_or_both_nan(float a, float b)
{
	if (isnan(a) || isnan(b))
		return isnan(a) && isnan(b) && !signbit(a) == !signbit(b);
	return fa_f32_bits(a) == fa_f32_bits(b);
}
#endif

FA_TEST(dtype, f16_every_pattern_round_trips)
{
	int bad = 0;
	for (uint32_t u = 0; u <= 0xffffu; u++) {
		uint16_t h = (uint16_t)u;
		float f = fa_f16_to_f32(h);
#if HAVE_FLOAT16
		volatile _Float16 gh;
		memcpy((void *)&gh, &h, sizeof h);
		/* widening agrees with the compiler's, bit for bit */
		if (!same_bits_or_both_nan(f, (float)gh) && bad++ < 5)
			FA_CHECKF(0, "f16 0x%04x -> %a, gcc %a", u, f, (float)gh);
#endif
		if (isnan(f)) {
			uint16_t back = fa_f32_to_f16(f);
			/* NaN stays NaN (quiet), sign kept; the payload may not survive */
			if (!((back & 0x7c00u) == 0x7c00u && (back & 0x0200u) &&
			      (back & 0x8000u) == (h & 0x8000u)) &&
			    bad++ < 5)
				FA_CHECKF(0, "f16 NaN 0x%04x -> 0x%04x", u, back);
		} else if (fa_f32_to_f16(f) != h && bad++ < 5) {
			FA_CHECKF(0, "f16 0x%04x -> %a -> 0x%04x", u, f, fa_f32_to_f16(f));
		}
	}
	FA_CHECK(bad == 0);
}

FA_TEST(dtype, bf16_every_pattern_round_trips)
{
	int bad = 0;
	for (uint32_t u = 0; u <= 0xffffu; u++) {
		uint16_t h = (uint16_t)u;
		float f = fa_bf16_to_f32(h);
		if (fa_f32_bits(f) != u << 16 && bad++ < 5)
			FA_CHECKF(0, "bf16 0x%04x -> %a", u, f);
		if (isnan(f)) {
			uint16_t back = fa_f32_to_bf16(f);
			if (!((back & 0x7f80u) == 0x7f80u && (back & 0x0040u) &&
			      (back & 0x8000u) == (h & 0x8000u)) &&
			    bad++ < 5)
				FA_CHECKF(0, "bf16 NaN 0x%04x -> 0x%04x", u, back);
		} else if (fa_f32_to_bf16(f) != h && bad++ < 5) {
			FA_CHECKF(0, "bf16 0x%04x -> %a -> 0x%04x", u, f, fa_f32_to_bf16(f));
		}
	}
	FA_CHECK(bad == 0);
}

/* Round x to a binary format with `mant` stored mantissa bits, smallest
 * normal exponent emin and largest finite value maxf, by long-double
 * arithmetic: x / ulp is exact and nearbyintl rounds half to even. */
static long double rne_model(float x, int mant, int emin, long double maxf)
{
	long double lx = x, ulp, r;
	int e;
	if (isnan(x) || isinf(x) || x == 0)
		return lx;
	frexpl(fabsl(lx), &e); /* |x| = m * 2^e, m in [0.5, 1): exponent e - 1 */
	e = e - 1 < emin ? emin : e - 1;
	ulp = ldexpl(1.0L, e - mant);
	r = nearbyintl(lx / ulp) * ulp;
	if (fabsl(r) > maxf)
		return copysignl(INFINITY, lx);
	if (r == 0)
		return copysignl(0.0L, lx);
	return r;
}

static long double f16_model(float x)
{
	return rne_model(x, 10, -14, 65504.0L);
}

static long double bf16_model(float x)
{
	return rne_model(x, 7, -126, (long double)fa_bf16_to_f32(0x7f7fu));
}

/* Values that stress rounding: ties of both formats, their neighbours, the
 * subnormal and overflow boundaries, and specials. */
static int edge_values(float *out, int cap)
{
	int n = 0;
	static const uint32_t bits[] = {
		0x00000000u, 0x80000000u, 0x7f800000u, 0xff800000u, 0x7fc00000u, 0xffc00000u,
		0x7f800001u, 0x00000001u, 0x80000001u, 0x007fffffu, 0x00800000u, 0x7f7fffffu,
		0x477fe000u, /* 65504, fp16 max */
		0x477fefffu, /* just below 65520: rounds to 65504 */
		0x477ff000u, /* 65520: tie, rounds to Inf */
		0x38800000u, /* 2^-14, smallest fp16 normal */
		0x387fc000u, /* largest fp16 subnormal */
		0x33800000u, /* 2^-24, smallest fp16 subnormal */
		0x33000000u, /* 2^-25: tie with 0, rounds to 0 */
		0x33000001u, /* just above: rounds to 2^-24 */
		0x33c00000u, /* 1.5 * 2^-24: tie, rounds to 2 * 2^-24 */
		0x7f7f8000u, /* bf16 tie at the top: rounds to Inf */
		0x7f7f7fffu, /* just below: bf16 max */
		0x3f808000u, /* 1 + 2^-8: bf16 tie, rounds to 1 */
		0x3f818000u, /* 1 + 3 * 2^-8: bf16 tie, rounds up */
		0x3f801000u, /* 1 + 2^-11: fp16 tie, rounds to 1 */
		0x3f803000u, /* 1 + 3 * 2^-11: fp16 tie, rounds up */
	};
	for (size_t i = 0; i < sizeof bits / sizeof bits[0] && n < cap; i++) {
		out[n++] = fa_bits_f32(bits[i]);
		if (n < cap)
			out[n++] = -fa_bits_f32(bits[i]);
	}
	/* every fp16 value plus exactly half an ulp (a tie) and one fp32 ulp either side */
	for (uint32_t h = 0; h < 0x7c00u && n + 3 <= cap; h += 37) {
		float f = fa_f16_to_f32((uint16_t)h), next = fa_f16_to_f32((uint16_t)(h + 1));
		float tie = f + (next - f) / 2; /* exact: one more bit than fp16 */
		out[n++] = tie;
		out[n++] = nextafterf(tie, INFINITY);
		out[n++] = nextafterf(tie, 0);
	}
	for (uint32_t h = 0; h < 0x7f80u && n + 2 <= cap; h += 29) {
		float f = fa_bf16_to_f32((uint16_t)h), next = fa_bf16_to_f32((uint16_t)(h + 1));
		out[n++] = f + (next - f) / 2;
		out[n++] = -(f + (next - f) / 2);
	}
	return n;
}

static void check_against_models(const float *xs, int n, int *bad)
{
	for (int i = 0; i < n; i++) {
		float x = xs[i];
		uint16_t h = fa_f32_to_f16(x), b = fa_f32_to_bf16(x);
		float hf = fa_f16_to_f32(h), bf = fa_bf16_to_f32(b);
		long double mh = f16_model(x), mb = bf16_model(x);
#if HAVE_FLOAT16
		volatile float vx = x;
		_Float16 g = (_Float16)vx;
		uint16_t gbits;
		memcpy(&gbits, &g, sizeof gbits);
		if (!isnan(x) && h != gbits && (*bad)++ < 8)
			FA_CHECKF(0, "fp16(%a) = 0x%04x, gcc _Float16 0x%04x", x, h, gbits);
		if (isnan(x) && !isnan((float)g) && (*bad)++ < 8)
			FA_CHECKF(0, "gcc: NaN %a converted to non-NaN", x);
#endif
		if (isnan(x)) {
			if (!(isnan(hf) && isnan(bf)) && (*bad)++ < 8)
				FA_CHECKF(0, "NaN %a converted to non-NaN", x);
			continue;
		}
		if (!((long double)hf == mh && !signbit(hf) == !signbit(mh)) && (*bad)++ < 8)
			FA_CHECKF(0, "fp16(%a) = %a, model %La", x, hf, mh);
		if (!((long double)bf == mb && !signbit(bf) == !signbit(mb)) && (*bad)++ < 8)
			FA_CHECKF(0, "bf16(%a) = %a, model %La", x, bf, mb);
	}
}

FA_TEST(dtype, rounding_matches_gcc_and_model_on_edges)
{
	static float xs[8192];
	int bad = 0, n = edge_values(xs, (int)(sizeof xs / sizeof xs[0]));
	FA_REQUIRE(n > 1000);
	check_against_models(xs, n, &bad);
	FA_CHECK(bad == 0);
	/* spot checks of the documented behaviour */
	FA_CHECK(fa_f32_to_f16(65520.0f) == 0x7c00u);
	FA_CHECK(fa_f32_to_f16(65519.0f) == 0x7bffu);
	FA_CHECK(fa_f32_to_f16(fa_bits_f32(0x33000000u)) == 0x0000u);
	FA_CHECK(fa_f32_to_bf16(fa_bits_f32(0x7f7f8000u)) == 0x7f80u);
	FA_CHECK(fa_f32_to_bf16(fa_bits_f32(0x3f818000u)) == 0x3f82u);
}

FA_TEST(dtype, rounding_matches_gcc_and_model_on_random)
{
	static float xs[65536];
	uint64_t seed = fa_test_seed();
	int bad = 0, n = (int)(sizeof xs / sizeof xs[0]);
	for (int i = 0; i < n; i++) {
		uint64_t r = fa_rng_bits(seed, 0, (uint64_t)i);
		if (i % 2 == 0) { /* any fp32 pattern */
			xs[i] = fa_bits_f32((uint32_t)r);
		} else { /* magnitudes around fp16's range, 2^-30 .. 2^17 */
			int e = (int)((r >> 32) % 48) - 30;
			float m = 1.0f + (float)(r & 0x7fffffu) * 0x1p-23f;
			xs[i] = ldexpf((r >> 40) & 1 ? -m : m, e);
		}
	}
	check_against_models(xs, n, &bad);
	FA_CHECK(bad == 0);
}

FA_TEST(dtype, load_store_and_poison)
{
	uint16_t h[4];
	float f[2];
	uint64_t seed = fa_test_seed();
	float x = fa_rng_value(seed, 0, FA_DIST_NORMAL, 7, 4);
	fa_store_f32(h, FA_DTYPE_FP16, 1, x);
	FA_CHECK(h[1] == fa_f32_to_f16(x));
	FA_CHECK(fa_load_f32(h, FA_DTYPE_FP16, 1) == fa_round_to_dtype(x, FA_DTYPE_FP16));
	fa_store_f32(h, FA_DTYPE_BF16, 2, x);
	FA_CHECK(fa_load_f32(h, FA_DTYPE_BF16, 2) == fa_round_to_dtype(x, FA_DTYPE_BF16));
	fa_store_f32(f, FA_DTYPE_FP32, 0, x);
	FA_CHECK(fa_load_f32(f, FA_DTYPE_FP32, 0) == x);
	memset(h, FA_POISON_BYTE, sizeof h);
	memset(f, FA_POISON_BYTE, sizeof f);
	FA_CHECK(fa_is_poison(h, FA_DTYPE_FP16, 3) && fa_is_poison(h, FA_DTYPE_BF16, 0));
	FA_CHECK(fa_is_poison(f, FA_DTYPE_FP32, 1));
	/* the NaNs arithmetic makes are not the poison pattern */
	fa_store_f32(h, FA_DTYPE_FP16, 0, nanf(""));
	fa_store_f32(h, FA_DTYPE_BF16, 1, -nanf(""));
	f[0] = -nanf("");
	FA_CHECK(!fa_is_poison(h, FA_DTYPE_FP16, 0) && !fa_is_poison(h, FA_DTYPE_BF16, 1));
	FA_CHECK(!fa_is_poison(f, FA_DTYPE_FP32, 0));
}
