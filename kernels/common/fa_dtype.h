/* fa_dtype.h - exact conversions between fp32 and the 16-bit storage types,
 * written in integer arithmetic so that the host and every GPU produce the
 * same bits (round to nearest even, NaN kept quiet, subnormals handled).
 *
 * fp16 and bf16 values are passed around as uint16_t bit patterns; the
 * harness never relies on a compiler's _Float16 or __bf16.
 */
#ifndef FA_DTYPE_H
#define FA_DTYPE_H

#include <stdint.h>
#include <string.h>

#include "fa_problem.h"

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

#endif /* FA_DTYPE_H */
