/* fa_rng.h - the counter-based random generator for test inputs.
 *
 * Every input element is a pure function of (seed, tensor, logical index):
 * no state, no sequence, so any backend and any thread count produce the same
 * bits. Only 64-bit integer arithmetic and single, correctly rounded IEEE
 * operations are used, so host and GPU agree exactly.
 *
 * The logical index is the element's position in canonical token-major order,
 *   ((token * heads_of_tensor) + head) * dim + d,
 * where token runs over the packed token axis (b * len + t, or the varlen
 * offset). It does not depend on the memory layout, so bshd and bhsd cases
 * hold the same values.
 *
 * Distributions (fp32 value before rounding to the case dtype):
 *   normal    approximately N(0, 1): Irwin-Hall sum of four 16-bit uniforms,
 *             rescaled to unit variance; bounded by +-sqrt(12) = 3.46
 *   uniform   U[-1, 1)
 *   outliers  normal, and one token in FA_RNG_OUTLIER_EVERY of Q, K and V has
 *             its whole head vector scaled by FA_RNG_OUTLIER_SCALE; a logit
 *             between two outlier tokens is about 64x larger than usual,
 *             which overflows any softmax that does not subtract its maximum.
 */
#ifndef FA_RNG_H
#define FA_RNG_H

#include <stdint.h>

#include "fa_problem.h"

/* 1 in 64 tokens: several per tile of 64 to 128 rows, so every kernel tile meets some. */
#define FA_RNG_OUTLIER_EVERY 64u
/* x8 per operand: q.k of two outliers grows 64x, far past exp()'s fp32 range for
 * typical logits of about +-4, yet 8 * 3.46 stays far inside fp16's 65504. */
#define FA_RNG_OUTLIER_SCALE 8.0f

/* splitmix64's finaliser: a bijection on 64 bits with full avalanche. */
FA_HD uint64_t fa_rng_mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 31;
	return x;
}

/* 64 random bits for (seed, stream, counter). */
FA_HD uint64_t fa_rng_bits(uint64_t seed, uint32_t stream, uint64_t counter)
{
	uint64_t k = fa_rng_mix64(seed + 0x9e3779b97f4a7c15ull * ((uint64_t)stream + 1u));
	return fa_rng_mix64(k ^ fa_rng_mix64(counter + 0x632be59bd9b4e019ull));
}

/* Uniform in [0, 1) with 24 random bits (exact in fp32). */
FA_HD float fa_rng_unit(uint64_t bits)
{
	return (float)(bits >> 40) * 5.9604644775390625e-8f; /* 2^-24 */
}

/* Streams: the tensor id (enum fa_tensor) for values (the backward's dO is
 * FA_TENSOR_DO, 4), 16 + tensor for the outlier choice, 32 for the
 * checker's query row sample, 33 for its key row sample (dK, dV). */
#define FA_RNG_STREAM_OUTLIER(t) (16u + (uint32_t)(t))
#define FA_RNG_STREAM_ROWS 32u
#define FA_RNG_STREAM_KV_ROWS 33u

/* The fp32 value of element `index` of tensor `tensor` (enum fa_tensor).
 * dim is the tensor's head dimension: index / dim names the (token, head) row. */
FA_HD float fa_rng_value(uint64_t seed, int tensor, int dist, uint64_t index, int32_t dim)
{
	uint64_t b = fa_rng_bits(seed, (uint32_t)tensor, index);
	if (dist == FA_DIST_UNIFORM) /* 2u - 1, exact */
		return (float)((int64_t)(b >> 40) - (int64_t)(1 << 23)) * 1.1920928955078125e-7f;
	/* Four 16-bit uniforms: mean 4 * 32767.5, variance 4 * (65536^2 - 1) / 12. */
	int64_t s = (int64_t)(b & 0xffff) + (int64_t)((b >> 16) & 0xffff) +
		    (int64_t)((b >> 32) & 0xffff) + (int64_t)(b >> 48);
	/* 2s - 4 * 65535 is an exact integer; one double multiply rounds once
	 * 1 / (2 * sqrt((65536^2 - 1) / 3)), the unit-variance scale */
	double x = (double)(2 * s - 4 * 65535) * 1.3214498960651507e-05;
	float f = (float)x;
	if (dist == FA_DIST_OUTLIERS) {
		uint64_t row = index / (uint64_t)dim;
		/* row = (token, head): the whole head vector of that token is scaled */
		if (fa_rng_bits(seed, FA_RNG_STREAM_OUTLIER(tensor), row) % FA_RNG_OUTLIER_EVERY == 0)
			f *= FA_RNG_OUTLIER_SCALE;
	}
	return f;
}

#endif /* FA_RNG_H */
