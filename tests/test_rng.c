/* test_rng.c - the counter-based input generator of fa_rng.h: determinism,
 * the moments and ranges of its distributions, the outlier rows, and that
 * seeds and tensors give different streams. */
#include <math.h>

#include "../kernels/common/fa_rng.h"
#include "test.h"

#define N_SAMPLES 200000

FA_TEST(rng, deterministic)
{
	uint64_t seed = fa_test_seed();
	for (uint64_t i = 0; i < 1000; i++) {
		FA_CHECK(fa_rng_bits(seed, 3, i) == fa_rng_bits(seed, 3, i));
		for (int dist = 0; dist < FA_DIST_COUNT; dist++) {
			float a = fa_rng_value(seed, FA_TENSOR_K, dist, i * 977, 64);
			float b = fa_rng_value(seed, FA_TENSOR_K, dist, i * 977, 64);
			FA_CHECK(a == b);
		}
	}
}

FA_TEST(rng, normal_moments_and_bound)
{
	uint64_t seed = fa_test_seed();
	double sum = 0, sum2 = 0, sum4 = 0, maxabs = 0;
	for (uint64_t i = 0; i < N_SAMPLES; i++) {
		double x = fa_rng_value(seed, FA_TENSOR_Q, FA_DIST_NORMAL, i, 128);
		sum += x;
		sum2 += x * x;
		sum4 += x * x * x * x;
		maxabs = fabs(x) > maxabs ? fabs(x) : maxabs;
	}
	double mean = sum / N_SAMPLES, var = sum2 / N_SAMPLES - mean * mean;
	/* standard errors: mean 1/sqrt(N) = 0.0022, variance about 0.003 */
	FA_CHECK_NEAR(mean, 0.0, 0.012);
	FA_CHECK_NEAR(var, 1.0, 0.02);
	/* Irwin-Hall of 4 has kurtosis 3 - 1.2 / 4 = 2.7: a bell, not a box */
	FA_CHECK_NEAR(sum4 / N_SAMPLES, 2.7, 0.1);
	FA_CHECK(maxabs <= 3.4642);
	FA_CHECK(maxabs > 2.5);
}

FA_TEST(rng, uniform_range_and_moments)
{
	uint64_t seed = fa_test_seed();
	double sum = 0, sum2 = 0, lo = 1, hi = -1;
	for (uint64_t i = 0; i < N_SAMPLES; i++) {
		double x = fa_rng_value(seed, FA_TENSOR_V, FA_DIST_UNIFORM, i, 64);
		sum += x;
		sum2 += x * x;
		lo = x < lo ? x : lo;
		hi = x > hi ? x : hi;
	}
	FA_CHECK(lo >= -1.0 && hi < 1.0);
	FA_CHECK(lo < -0.999 && hi > 0.999);
	FA_CHECK_NEAR(sum / N_SAMPLES, 0.0, 0.008);
	FA_CHECK_NEAR(sum2 / N_SAMPLES, 1.0 / 3.0, 0.006);
	for (uint64_t i = 0; i < 1000; i++) {
		float u = fa_rng_unit(fa_rng_bits(seed, 1, i));
		FA_CHECK(u >= 0.0f && u < 1.0f);
	}
}

FA_TEST(rng, outliers_scale_whole_rows)
{
	uint64_t seed = fa_test_seed();
	const int32_t dim = 16;
	const uint64_t rows = 40000;
	uint64_t scaled = 0, bad = 0;
	for (uint64_t r = 0; r < rows; r++) {
		int times8 = 0, times1 = 0;
		for (int32_t d = 0; d < dim; d++) {
			uint64_t i = r * (uint64_t)dim + (uint64_t)d;
			float n = fa_rng_value(seed, FA_TENSOR_K, FA_DIST_NORMAL, i, dim);
			float o = fa_rng_value(seed, FA_TENSOR_K, FA_DIST_OUTLIERS, i, dim);
			if (n == 0)
				continue;
			if (o == n * FA_RNG_OUTLIER_SCALE)
				times8++;
			else if (o == n)
				times1++;
			else
				bad++;
		}
		bad += times8 && times1; /* a row is scaled whole or not at all */
		scaled += times8 > 0;
	}
	FA_CHECK(bad == 0);
	/* expected rows / 64 = 625, standard deviation about 25 */
	FA_CHECKF(scaled > 500 && scaled < 750, "%llu of %llu rows scaled",
		  (unsigned long long)scaled, (unsigned long long)rows);
}

FA_TEST(rng, seeds_and_tensors_differ)
{
	uint64_t seed = fa_test_seed();
	int same_seed = 0, same_tensor = 0, same_stream = 0;
	for (uint64_t i = 0; i < 10000; i++) {
		same_seed += fa_rng_value(seed, 0, FA_DIST_NORMAL, i, 8) ==
			     fa_rng_value(seed + 1, 0, FA_DIST_NORMAL, i, 8);
		same_tensor += fa_rng_value(seed, FA_TENSOR_Q, FA_DIST_NORMAL, i, 8) ==
			       fa_rng_value(seed, FA_TENSOR_K, FA_DIST_NORMAL, i, 8);
		same_stream += fa_rng_bits(seed, FA_RNG_STREAM_ROWS, i) ==
			       fa_rng_bits(seed, FA_RNG_STREAM_OUTLIER(0), i);
	}
	/* two independent normals coincide rarely (the sum takes ~2^18 values) */
	FA_CHECK(same_seed < 50);
	FA_CHECK(same_tensor < 50);
	FA_CHECK(same_stream == 0);
	/* neighbouring counters are not correlated */
	double c = 0;
	for (uint64_t i = 0; i < 20000; i++)
		c += fa_rng_value(seed, 0, FA_DIST_NORMAL, i, 8) *
		     fa_rng_value(seed, 0, FA_DIST_NORMAL, i + 1, 8);
	FA_CHECK_NEAR(c / 20000, 0.0, 0.03);
}
