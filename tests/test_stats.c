/* test_stats.c - tests of the statistics module: summaries against hand
 * values, Mann-Whitney p-values against brute-force enumeration computed
 * here, the bootstrap interval, simulated false-positive and detection rates
 * of the compare verdict, and change-point detection. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../harness/report/stats.h"
#include "../kernels/common/fa_rng.h"
#include "test.h"

/* ---- Random data for the simulations ---------------------------------------- */

struct gen {
	uint64_t seed, counter;
};

/* Uniform in (0, 1), 53 bits. */
static double gen_unit(struct gen *g)
{
	return ((double)(fa_rng_bits(g->seed, 7, g->counter++) >> 11) + 0.5) * 0x1p-53;
}

/* Standard normal (Box-Muller). */
static double gen_normal(struct gen *g)
{
	double u = gen_unit(g), v = gen_unit(g);
	return sqrt(-2 * log(u)) * cos(6.283185307179586 * v);
}

/* n timing samples: scale * exp(noise * N(0, 1)), lognormal as run times are. */
static void gen_times(struct gen *g, double *x, int n, double scale, double noise)
{
	for (int i = 0; i < n; i++)
		x[i] = scale * exp(noise * gen_normal(g));
}

static int gen_int(struct gen *g, int lo, int hi)
{
	return lo + (int)(gen_unit(g) * (hi - lo + 1));
}

/* ---- Summaries ---------------------------------------------------------------- */

FA_TEST(stats, median_odd_even_ties)
{
	double odd[] = {5, 1, 3}, even[] = {4, 1, 3, 2}, ties[] = {2, 5, 2, 2}, one[] = {7.5};
	double keep[4], m = 0;
	struct fa_err e = {0};
	memcpy(keep, even, sizeof even);
	FA_REQUIRE(fa_stats_median(odd, 3, &m, &e) == FA_OK);
	FA_CHECK(m == 3);
	FA_REQUIRE(fa_stats_median(even, 4, &m, &e) == FA_OK);
	FA_CHECK(m == 2.5);
	FA_CHECK(memcmp(keep, even, sizeof even) == 0); /* caller's array untouched */
	FA_REQUIRE(fa_stats_median(ties, 4, &m, &e) == FA_OK);
	FA_CHECK(m == 2);
	FA_REQUIRE(fa_stats_median(one, 1, &m, &e) == FA_OK);
	FA_CHECK(m == 7.5);
}

FA_TEST(stats, quantiles_type7)
{
	/* h = (n - 1) p; numpy.quantile gives the same values */
	double x[] = {10, 0, 30, 20, 40}, keep[5];
	double p[] = {0, 0.3, 0.5, 0.9, 1}, q[5];
	double want[] = {0, 12, 20, 36, 40};
	struct fa_err e = {0};
	memcpy(keep, x, sizeof x);
	FA_REQUIRE(fa_stats_quantiles(x, 5, p, 5, q, &e) == FA_OK);
	for (int i = 0; i < 5; i++)
		FA_CHECK_NEAR(q[i], want[i], 1e-12);
	FA_CHECK(memcmp(keep, x, sizeof x) == 0);
	double y[] = {4, 3, 2, 1}, v = 0;
	FA_REQUIRE(fa_stats_quantile(y, 4, 0.25, &v, &e) == FA_OK);
	FA_CHECK_NEAR(v, 1.75, 1e-12); /* h = 0.75 between 1 and 2 */
	FA_REQUIRE(fa_stats_quantile(y, 4, 0.9, &v, &e) == FA_OK);
	FA_CHECK_NEAR(v, 3.7, 1e-12); /* h = 2.7 between 3 and 4 */
	double sorted[] = {1, 2, 2, 8};
	FA_CHECK_NEAR(fa_stats_quantile_sorted(sorted, 4, 2.0 / 3), 2, 1e-12);
	FA_CHECK_NEAR(fa_stats_quantile_sorted(sorted, 4, 5.0 / 6), 5, 1e-12);
}

FA_TEST(stats, mad_mean_stdev)
{
	double x[] = {9, 1, 2, 6, 1, 4, 2}, keep[7], v = 0;
	struct fa_err e = {0};
	memcpy(keep, x, sizeof x);
	/* median 2, deviations {7, 1, 0, 4, 1, 2, 0} -> median 1 */
	FA_REQUIRE(fa_stats_mad(x, 7, &v, &e) == FA_OK);
	FA_CHECK(v == 1);
	FA_CHECK(memcmp(keep, x, sizeof x) == 0);
	double y[] = {1, 2, 3, 4}; /* median 2.5, deviations {1.5, 0.5, 0.5, 1.5} */
	FA_REQUIRE(fa_stats_mad(y, 4, &v, &e) == FA_OK);
	FA_CHECK(v == 1);
	double z[] = {2, 4, 4, 4, 5, 5, 7, 9}; /* mean 5, squares sum to 32 */
	FA_CHECK_NEAR(fa_stats_mean(z, 8), 5, 1e-12);
	FA_CHECK_NEAR(fa_stats_stdev(z, 8), sqrt(32.0 / 7), 1e-12);
	FA_CHECK(fa_stats_stdev(z, 1) == 0);
}

FA_TEST(stats, summary_errors)
{
	double x[] = {1, NAN, 3}, p = 1.5, v = 42;
	struct fa_err e = {0};
	FA_CHECK(fa_stats_median(x, 0, &v, &e) == FA_ERR_INPUT);
	FA_CHECKF(strcmp(e.msg, "no samples in x (n = 0)") == 0, "message '%s'", e.msg);
	fa_err_clear(&e);
	FA_CHECK(fa_stats_median(x, 3, &v, &e) == FA_ERR_INPUT);
	FA_CHECKF(strcmp(e.msg, "sample 1 of x is nan, must be finite") == 0, "message '%s'",
		  e.msg);
	fa_err_clear(&e);
	FA_CHECK(fa_stats_quantiles(x, 1, &p, 1, &v, &e) == FA_ERR_INPUT);
	FA_CHECKF(strcmp(e.msg, "quantile 1.5 outside [0, 1]") == 0, "message '%s'", e.msg);
	FA_CHECK(v == 42); /* untouched on failure */
	fa_err_clear(&e);
	FA_CHECK(fa_stats_mad(x, 2, &v, &e) == FA_ERR_INPUT);
}

FA_TEST(stats, geomean_skips_non_positive)
{
	double x[] = {2, -1, 8, 0, NAN, INFINITY};
	int used = -1;
	FA_CHECK_NEAR(fa_stats_geomean(x, 6, &used), 4, 1e-12);
	FA_CHECK(used == 2);
	double none[] = {0, -3};
	FA_CHECK(isnan(fa_stats_geomean(none, 2, &used)));
	FA_CHECK(used == 0);
	double r[] = {0.5, 2, 1.25};
	FA_CHECK_NEAR(fa_stats_geomean(r, 3, NULL), cbrt(1.25), 1e-12);
}

/* ---- Mann-Whitney -------------------------------------------------------------- */

/* U of a by definition: pairs with a > b, ties half. */
static double count_u(const double *a, int na, const double *b, int nb)
{
	double u = 0;
	for (int i = 0; i < na; i++)
		for (int j = 0; j < nb; j++)
			u += a[i] > b[j] ? 1 : a[i] == b[j] ? 0.5 : 0;
	return u;
}

/* The permutation p-value by enumerating every way of labelling na of the
 * pooled values as a: P(|U - mean| >= |u_obs - mean|). Exact under H0 for
 * any data, ties included. na + nb <= 24. */
static double enum_p(const double *a, int na, const double *b, int nb)
{
	int N = na + nb;
	double pool[24], sa[24], sb[24];
	memcpy(pool, a, (size_t)na * sizeof *a);
	memcpy(pool + na, b, (size_t)nb * sizeof *b);
	double mu = na * nb / 2.0, dev = fabs(count_u(a, na, b, nb) - mu);
	long hit = 0, total = 0;
	for (uint32_t mask = 0; mask < (1u << N); mask++) {
		if (__builtin_popcount(mask) != na)
			continue;
		int ka = 0, kb = 0;
		for (int i = 0; i < N; i++) {
			if (mask >> i & 1)
				sa[ka++] = pool[i];
			else
				sb[kb++] = pool[i];
		}
		total++;
		if (fabs(count_u(sa, na, sb, nb) - mu) >= dev - 1e-9)
			hit++;
	}
	return (double)hit / total;
}

FA_TEST(stats, mann_whitney_exact_vs_enumeration)
{
	struct gen g = {fa_test_seed(), 0};
	double a[5], b[5];
	struct fa_err e = {0};
	int checked = 0, small_p = 0;
	for (int na = 3; na <= 5; na++) {
		for (int nb = 3; nb <= 5; nb++) {
			for (int rep = 0; rep < 6; rep++) {
				/* shifts 0..2.5 sd, so p runs from 1 down to the smallest */
				gen_times(&g, a, na, 1.0, 0.05);
				gen_times(&g, b, nb, 1.0 + 0.05 * rep / 2, 0.05);
				struct fa_mw_result r;
				FA_REQUIRE(fa_stats_mann_whitney(a, na, b, nb, &r, &e) == FA_OK);
				if (r.ties) /* continuous draws: essentially never */
					continue;
				double ref = enum_p(a, na, b, nb), u = count_u(a, na, b, nb);
				FA_CHECK(r.exact == 1);
				FA_CHECK(r.u == u);
				FA_CHECK_NEAR(r.effect, u / (na * nb), 1e-15);
				FA_CHECKF(fabs(r.p - ref) < 1e-12,
					  "na %d nb %d u %g: p %.15g, enumeration %.15g", na, nb,
					  u, r.p, ref);
				checked++;
				small_p += r.p < 0.1;
			}
		}
	}
	FA_CHECK(checked >= 50);
	FA_CHECK(small_p > 0); /* the tails were exercised */
	/* complete separation of 5 + 5: 2 of C(10, 5) = 252 labellings */
	double lo[] = {1, 2, 3, 4, 5}, hi[] = {6, 7, 8, 9, 10};
	struct fa_mw_result r;
	FA_REQUIRE(fa_stats_mann_whitney(hi, 5, lo, 5, &r, &e) == FA_OK);
	FA_CHECK_NEAR(r.p, 2.0 / 252, 1e-15);
	FA_CHECK(r.u == 25 && r.effect == 1);
}

FA_TEST(stats, mann_whitney_normal_vs_exact)
{
	static const int sizes[][2] = {{20, 20}, {30, 40}, {50, 50}, {12, 45}, {8, 200}};
	struct fa_err e = {0};
	for (int s = 0; s < 5; s++) {
		int na = sizes[s][0], nb = sizes[s][1];
		double mu = na * nb / 2.0, sd = sqrt(na * nb * (na + nb + 1) / 12.0);
		for (double z = 0; z <= 3.5; z += 0.25) {
			double u = floor(mu - z * sd), pe;
			FA_REQUIRE(fa_stats_mw_exact_p(u, na, nb, &pe, &e) == FA_OK);
			double pn = fa_stats_mw_normal_p(u, na, nb, 0);
			FA_CHECKF(fabs(pe - pn) < 0.01, "%d x %d u %g: exact %.5f normal %.5f",
				  na, nb, u, pe, pn);
			/* the same from above the centre */
			double pe2;
			FA_REQUIRE(fa_stats_mw_exact_p(na * nb - u, na, nb, &pe2, &e) == FA_OK);
			FA_CHECK_NEAR(pe2, pe, 1e-12);
		}
	}
	/* Past FA_STATS_MW_EXACT_PAIRS the test switches to the approximation;
	 * within it a lopsided pair stays exact. */
	struct gen g = {fa_test_seed(), 0};
	double a[400], b[60];
	struct fa_mw_result r;
	gen_times(&g, a, 60, 1.0, 0.05);
	gen_times(&g, b, 60, 1.02, 0.05);
	FA_REQUIRE(fa_stats_mann_whitney(a, 60, b, 60, &r, &e) == FA_OK);
	FA_CHECK(r.exact == 0);
	FA_CHECK_NEAR(r.p, fa_stats_mw_normal_p(count_u(a, 60, b, 60), 60, 60, 0), 1e-12);
	gen_times(&g, a, 400, 1.0, 0.05);
	FA_REQUIRE(fa_stats_mann_whitney(a, 400, b, 6, &r, &e) == FA_OK);
	FA_CHECK(r.exact == 1);
	double pe;
	FA_REQUIRE(fa_stats_mw_exact_p(count_u(a, 400, b, 6), 400, 6, &pe, &e) == FA_OK);
	FA_CHECK(r.p == pe);
	double p;
	FA_CHECK(fa_stats_mw_exact_p(3, 0, 4, &p, &e) == FA_ERR_INPUT);
	FA_CHECK(isnan(p));
	FA_CHECK(fa_stats_mw_exact_p(3, 101, 100, &p, &e) == FA_ERR_INPUT);
}

FA_TEST(stats, mann_whitney_ties)
{
	struct fa_err e = {0};
	struct fa_mw_result r;
	/* groups: 1 (1), 2 (3), 3 (3), 4 (1): tie_sum = 2 (27 - 3) = 48 */
	double a[] = {1, 2, 2, 3}, b[] = {2, 3, 3, 4};
	FA_REQUIRE(fa_stats_mann_whitney(a, 4, b, 4, &r, &e) == FA_OK);
	FA_CHECK(r.exact == 0);
	FA_CHECK(r.ties == 4);
	FA_CHECK(r.u == 3); /* a = 2 ties twice (1), a = 3 beats one 2 and ties two 3s (2) */
	FA_CHECK_NEAR(r.effect, 3.0 / 16, 1e-15);
	double var = 16.0 / 12 * (9 - 48.0 / 56);
	FA_CHECK_NEAR(r.p, erfc((5 - 0.5) / sqrt(var) / sqrt(2.0)), 1e-12);

	/* Heavily tied data, 30 + 30 values from a few integers: the
	 * tie-corrected normal p against the permutation distribution, sampled
	 * by 40000 random relabellings (standard error at most 0.0025). */
	struct gen g = {fa_test_seed(), 0};
	enum { NT = 30, PERMS = 40000 };
	double x[NT], y[NT], pool[2 * NT];
	for (int rep = 0; rep < 3; rep++) {
		for (int i = 0; i < NT; i++) { /* rep 0: one law; 1, 2: y shifted */
			x[i] = gen_int(&g, 1, 5);
			y[i] = gen_int(&g, 1 + (rep > 0), 5 + (rep > 1));
		}
		FA_REQUIRE(fa_stats_mann_whitney(x, NT, y, NT, &r, &e) == FA_OK);
		FA_CHECK(r.exact == 0 && r.ties > 0);
		memcpy(pool, x, sizeof x);
		memcpy(pool + NT, y, sizeof y);
		double mu = NT * NT / 2.0, dev = fabs(count_u(x, NT, y, NT) - mu);
		long hit = 0;
		for (int t = 0; t < PERMS; t++) {
			for (int i = 2 * NT - 1; i > 0; i--) { /* Fisher-Yates */
				int j = gen_int(&g, 0, i);
				double tmp = pool[i];
				pool[i] = pool[j];
				pool[j] = tmp;
			}
			hit += fabs(count_u(pool, NT, pool + NT, NT) - mu) >= dev - 1e-9;
		}
		double ref = (double)hit / PERMS;
		/* the tail decides verdicts; in the middle the lattice of U (steps
		 * of 0.5 with ties) against the 0.5 continuity correction costs more */
		double tol = ref < 0.1 ? 0.02 : 0.06;
		FA_CHECKF(fabs(r.p - ref) < tol, "rep %d: normal %.4f permutation %.4f", rep, r.p,
			  ref);
	}
}

FA_TEST(stats, mann_whitney_symmetric_and_identical)
{
	struct gen g = {fa_test_seed(), 0};
	struct fa_err e = {0};
	struct fa_mw_result ab, ba;
	double a[12], b[9];
	gen_times(&g, a, 12, 1.0, 0.03);
	gen_times(&g, b, 9, 1.02, 0.03);
	b[0] = a[5]; /* one tie: the approximation path */
	for (int pass = 0; pass < 2; pass++) {
		int nb = pass ? 9 : 8; /* pass 0 leaves the tie out: exact path */
		FA_REQUIRE(fa_stats_mann_whitney(a, 12, b + (pass ? 0 : 1), nb, &ab, &e) == FA_OK);
		FA_REQUIRE(fa_stats_mann_whitney(b + (pass ? 0 : 1), nb, a, 12, &ba, &e) == FA_OK);
		FA_CHECK(ab.exact == !pass);
		FA_CHECK_NEAR(ab.p, ba.p, 1e-12);
		FA_CHECK_NEAR(ab.u, 12 * nb - ba.u, 1e-9);
		FA_CHECK_NEAR(ab.effect, 1 - ba.effect, 1e-12);
	}
	double same[] = {1.5, 2.5, 3.5, 4.5, 5.5}, flat[] = {3, 3, 3};
	FA_REQUIRE(fa_stats_mann_whitney(same, 5, same, 5, &ab, &e) == FA_OK);
	FA_CHECK(ab.p == 1);
	FA_CHECK(ab.effect == 0.5);
	FA_REQUIRE(fa_stats_mann_whitney(flat, 3, flat, 2, &ab, &e) == FA_OK);
	FA_CHECK(ab.p == 1); /* zero variance */
	FA_CHECK(fa_stats_mann_whitney(same, 5, flat, 0, &ab, &e) == FA_ERR_INPUT);
}

/* ---- Bootstrap ------------------------------------------------------------------ */

/* n values spread like 1% lognormal noise, in a scrambled order: a fixed
 * sample whose median is exactly `scale` (odd n). */
static void grid_times(double *x, int n, double scale)
{
	for (int i = 0; i < n; i++) {
		int k = (i * 7) % n; /* 7 is coprime to the sizes used */
		x[i] = scale * exp(0.01 * 3.0 * (k - (n - 1) / 2.0) / n);
	}
}

FA_TEST(stats, bootstrap_deterministic_and_covers)
{
	uint64_t seed = fa_test_seed();
	double a[101], b[101], lo, hi, lo2, hi2;
	struct fa_err e = {0};
	grid_times(a, 11, 1.0);
	grid_times(b, 11, 1.1);
	FA_REQUIRE(fa_stats_bootstrap_ratio(a, 11, b, 11, 0, 0, seed, &lo, &hi, &e) == FA_OK);
	FA_REQUIRE(fa_stats_bootstrap_ratio(a, 11, b, 11, 0, 0, seed, &lo2, &hi2, &e) == FA_OK);
	FA_CHECK(lo == lo2 && hi == hi2);
	FA_CHECKF(lo < 1.1 && 1.1 < hi && lo > 1.05 && hi < 1.15, "ci [%g, %g]", lo, hi);
	/* more samples of the same spread: narrower */
	double w11 = hi - lo;
	grid_times(a, 101, 1.0);
	grid_times(b, 101, 1.1);
	FA_REQUIRE(fa_stats_bootstrap_ratio(a, 101, b, 101, 0, 0, seed, &lo, &hi, &e) == FA_OK);
	FA_CHECKF(lo < 1.1 && 1.1 < hi, "ci [%g, %g]", lo, hi);
	FA_CHECKF(hi - lo < 0.6 * w11, "width %g at n = 101, %g at n = 11", hi - lo, w11);
	/* another seed resamples differently (n = 101: the percentile ends are
	 * not pinned to a few order statistics as at n = 11; the ends still fall
	 * on one of the grid's values, so a few seeds can agree by chance: CI saw
	 * three agree, so 20 are tried) */
	int differs = 0;
	for (uint64_t s = 1; s <= 20; s++) {
		FA_REQUIRE(fa_stats_bootstrap_ratio(a, 101, b, 101, 0, 0, seed + s, &lo2, &hi2,
						    &e) == FA_OK);
		differs += lo2 != lo || hi2 != hi;
	}
	FA_CHECK(differs > 0);
	/* a wider level gives a wider interval from the same resamples */
	FA_REQUIRE(fa_stats_bootstrap_ratio(a, 101, b, 101, 0, 0.99, seed, &lo2, &hi2, &e) ==
		   FA_OK);
	FA_CHECK(lo2 <= lo && hi2 >= hi && hi2 - lo2 > hi - lo);
}

FA_TEST(stats, bootstrap_errors)
{
	double a[] = {1, 2, 3}, bad[] = {1, 0, 3}, lo = 0, hi = 0;
	struct fa_err e = {0};
	FA_CHECK(fa_stats_bootstrap_ratio(a, 3, bad, 3, 0, 0, 1, &lo, &hi, &e) == FA_ERR_INPUT);
	FA_CHECKF(strcmp(e.msg, "sample 1 of b is 0, must be positive") == 0, "message '%s'",
		  e.msg);
	FA_CHECK(isnan(lo) && isnan(hi));
	fa_err_clear(&e);
	FA_CHECK(fa_stats_bootstrap_ratio(a, 3, a, 3, 0, 1.5, 1, &lo, &hi, &e) == FA_ERR_INPUT);
	FA_CHECKF(strcmp(e.msg, "confidence level 1.5 outside (0, 1)") == 0, "message '%s'",
		  e.msg);
	fa_err_clear(&e);
	FA_CHECK(fa_stats_bootstrap_ratio(a, 3, a, 3, -5, 0, 1, &lo, &hi, &e) == FA_ERR_INPUT);
}

/* ---- Verdict ---------------------------------------------------------------------- */

struct rates {
	int n[4], low, trials;
};

/* trials pairs: base of scale 1, head of scale 1 + shift, both with lognormal
 * noise, sizes drawn from [nlo, nhi]. */
static struct rates simulate(struct gen *g, int trials, double shift, double noise, int nlo,
			     int nhi, double min_effect)
{
	struct rates r = {{0}, 0, trials};
	double base[64], head[64];
	struct fa_perf_cfg cfg;
	fa_stats_verdict_defaults(&cfg);
	cfg.min_effect = min_effect;
	for (int t = 0; t < trials; t++) {
		int nb = gen_int(g, nlo, nhi), nh = gen_int(g, nlo, nhi);
		gen_times(g, base, nb, 1.0, noise);
		gen_times(g, head, nh, 1.0 + shift, noise);
		cfg.seed = g->seed + (uint64_t)t;
		struct fa_perf_result res;
		struct fa_err e = {0};
		if (fa_stats_verdict(base, nb, head, nh, &cfg, &res, &e) != FA_OK) {
			fa_test_fail(__FILE__, __LINE__, "verdict failed: %s", e.msg);
			return r;
		}
		r.n[res.verdict]++;
		r.low += res.low_samples;
	}
	return r;
}

static double rate(const struct rates *r, int v)
{
	return (double)r->n[v] / r->trials;
}

static void print_rates(const char *what, const struct rates *r)
{
	printf("    %-38s same %5.1f%%  faster %5.1f%%  slower %5.1f%%  noisy %5.1f%%\n", what,
	       100 * rate(r, FA_PERF_SAME), 100 * rate(r, FA_PERF_FASTER),
	       100 * rate(r, FA_PERF_SLOWER), 100 * rate(r, FA_PERF_NOISY));
}

FA_TEST(stats, verdict_simulated_rates)
{
	struct gen g = {fa_test_seed(), 0};
	enum { TRIALS = 400 };
	struct rates aa = simulate(&g, TRIALS, 0, 0.01, 10, 30, 0.02);
	print_rates("A/A, 1% noise, n 10-30:", &aa);
	FA_CHECK(rate(&aa, FA_PERF_FASTER) + rate(&aa, FA_PERF_SLOWER) < 0.05);
	FA_CHECK(rate(&aa, FA_PERF_SAME) > 0.9);

	struct rates slow = simulate(&g, TRIALS, 0.05, 0.01, 10, 30, 0.02);
	print_rates("5% slower, 1% noise, n 10-30:", &slow);
	FA_CHECK(rate(&slow, FA_PERF_SLOWER) >= 0.95);

	struct rates fast = simulate(&g, TRIALS / 2, 1 / 1.05 - 1, 0.01, 10, 30, 0.02);
	print_rates("5% faster, 1% noise, n 10-30:", &fast);
	FA_CHECK(rate(&fast, FA_PERF_FASTER) >= 0.95);

	struct rates small = simulate(&g, TRIALS, 0.01, 0.01, 10, 30, 0.02);
	print_rates("1% slower, min_effect 2%, n 10-30:", &small);
	FA_CHECK(rate(&small, FA_PERF_FASTER) + rate(&small, FA_PERF_SLOWER) < 0.05);

	/* a real 5% change on 5% noise is rarely passed off as SAME */
	struct rates mid = simulate(&g, TRIALS / 2, 0.05, 0.05, 10, 30, 0.02);
	print_rates("5% slower, 5% noise, n 10-30:", &mid);
	FA_CHECK(rate(&mid, FA_PERF_SAME) < 0.1);
	FA_CHECK(rate(&mid, FA_PERF_FASTER) == 0);

	/* at n 5 the rank test alone flags 3.2% of A/As (U <= 2 of 25), so the
	 * rate sits near the 5% bound: 4x the trials keep one draw of them
	 * from crossing it (400 gave 5.2% once in CI, 1.2-2.7% otherwise) */
	struct rates noisy = simulate(&g, 4 * TRIALS, 0, 0.20, 5, 5, 0.02);
	print_rates("A/A, 20% noise, n 5:", &noisy);
	FA_CHECK(rate(&noisy, FA_PERF_FASTER) + rate(&noisy, FA_PERF_SLOWER) < 0.05);
	FA_CHECK(rate(&noisy, FA_PERF_NOISY) > 0.8);
}

FA_TEST(stats, verdict_low_samples)
{
	struct fa_perf_result r;
	struct fa_err e = {0};
	double base[] = {1.00, 1.01, 0.99}, slow[] = {1.10, 1.12, 1.11}, near[] = {1.01, 1.00};
	FA_REQUIRE(fa_stats_verdict(base, 2, slow, 2, NULL, &r, &e) == FA_OK);
	FA_CHECK(r.low_samples && r.verdict == FA_PERF_SLOWER);
	FA_CHECK(isnan(r.lo) && isnan(r.hi));
	FA_CHECK_NEAR(r.ratio, 1.11 / 1.005, 1e-12);
	FA_REQUIRE(fa_stats_verdict(slow, 3, base, 1, NULL, &r, &e) == FA_OK);
	FA_CHECK(r.low_samples && r.verdict == FA_PERF_FASTER);
	FA_REQUIRE(fa_stats_verdict(base, 3, near, 2, NULL, &r, &e) == FA_OK);
	FA_CHECK(r.low_samples && r.verdict == FA_PERF_SAME);
	/* 3 + 3: the rank test's smallest p is 0.1, so the ratio decides */
	FA_REQUIRE(fa_stats_verdict(base, 3, slow, 3, NULL, &r, &e) == FA_OK);
	FA_CHECK(r.low_samples && r.verdict == FA_PERF_SLOWER);
	FA_CHECK_NEAR(r.p, 0.1, 1e-12);
	FA_CHECK(fa_stats_verdict(base, 0, slow, 3, NULL, &r, &e) == FA_ERR_INPUT);
	FA_CHECKF(strcmp(e.msg, "no samples in base (n = 0)") == 0, "message '%s'", e.msg);
}

FA_TEST(stats, verdict_rules)
{
	struct fa_perf_result r;
	struct fa_perf_cfg cfg;
	struct fa_err e = {0};
	double base[21], head[21];
	fa_stats_verdict_defaults(&cfg);
	cfg.seed = fa_test_seed();
	/* clear 10% slowdown on fixed samples */
	grid_times(base, 21, 1.0);
	grid_times(head, 21, 1.1);
	FA_REQUIRE(fa_stats_verdict(base, 21, head, 21, &cfg, &r, &e) == FA_OK);
	FA_CHECK(r.verdict == FA_PERF_SLOWER && !r.low_samples);
	FA_CHECK_NEAR(r.ratio, 1.1, 1e-12);
	FA_CHECK(r.lo > 1.02 && r.lo <= r.ratio && r.ratio <= r.hi);
	FA_CHECK(r.p < 1e-6 && r.effect == 1);
	/* the same samples: SAME with an interval around 1 */
	FA_REQUIRE(fa_stats_verdict(base, 21, base, 21, &cfg, &r, &e) == FA_OK);
	FA_CHECK(r.verdict == FA_PERF_SAME && r.ratio == 1 && r.p == 1);
	/* a 10% change that min_effect 20% does not count: the interval lies
	 * within [0.8, 1.2], so SAME although p is tiny */
	cfg.min_effect = 0.2;
	FA_REQUIRE(fa_stats_verdict(base, 21, head, 21, &cfg, &r, &e) == FA_OK);
	FA_CHECK(r.verdict == FA_PERF_SAME && r.p < 1e-6);
	/* a bad configuration */
	cfg.alpha = 0;
	FA_CHECK(fa_stats_verdict(base, 21, head, 21, &cfg, &r, &e) == FA_ERR_INPUT);
	FA_CHECKF(strcmp(e.msg, "alpha 0 outside (0, 1)") == 0, "message '%s'", e.msg);
	FA_CHECK(strcmp(fa_stats_verdict_name(FA_PERF_NOISY), "noisy") == 0);
	FA_CHECK(strcmp(fa_stats_verdict_name(99), "unknown") == 0);
}

/* ---- Change points ---------------------------------------------------------------- */

/* y[i] = level(i) * (1 + noise N(0, 1)), sigma[i] = level * noise. */
static void gen_series(struct gen *g, double *y, double *sigma, int n, const int *at,
		       const double *levels, int steps, double noise)
{
	for (int i = 0, s = 0; i < n; i++) {
		while (s < steps && i >= at[s])
			s++;
		y[i] = levels[s] * (1 + noise * gen_normal(g));
		sigma[i] = levels[s] * noise;
	}
}

FA_TEST(stats, changepoints_steps)
{
	struct gen g = {fa_test_seed(), 0};
	double y[120], sg[120], m[4];
	int cps[119], n = 0;
	struct fa_err e = {0};

	/* one clean 10% step */
	int at1[] = {30};
	double lv1[] = {10, 11};
	gen_series(&g, y, sg, 60, at1, lv1, 1, 0.002);
	FA_REQUIRE(fa_stats_changepoints(y, sg, 60, 0.02, 0, cps, &n, &e) == FA_OK);
	FA_CHECKF(n == 1 && cps[0] == 30, "n %d first %d", n, n ? cps[0] : -1);
	FA_REQUIRE(fa_stats_segment_means(y, sg, 60, cps, n, m, &e) == FA_OK);
	FA_CHECK_NEAR(m[0], 10, 0.02);
	FA_CHECK_NEAR(m[1], 11, 0.02);

	/* two steps, up then partly back. The noise stays far under min_effect
	 * (2% is 10 sigma): a point beyond min_effect forms a segment of its own
	 * by design, and at 0.5% noise (4 sigma) one of the 90 did in about 0.6%
	 * of seeds (seed 1746421472146575: a change point at 1) */
	int at2[] = {25, 60};
	double lv2[] = {10, 11, 10.5};
	gen_series(&g, y, sg, 90, at2, lv2, 2, 0.002);
	FA_REQUIRE(fa_stats_changepoints(y, sg, 90, 0.02, 0, cps, &n, &e) == FA_OK);
	FA_CHECKF(n == 2 && cps[0] == 25 && cps[1] == 60, "n %d", n);

	/* a regression on the newest point alone is found */
	int at3[] = {39};
	gen_series(&g, y, sg, 40, at3, lv1, 1, 0.002);
	FA_REQUIRE(fa_stats_changepoints(y, sg, 40, 0.02, 0, cps, &n, &e) == FA_OK);
	FA_CHECKF(n == 1 && cps[0] == 39, "n %d", n);
}

FA_TEST(stats, changepoints_flat_and_small)
{
	struct gen g = {fa_test_seed(), 0};
	double y[100], sg[100];
	int cps[99], n = -1, spurious = 0;
	struct fa_err e = {0};
	double lv[] = {10, 10.1};
	int at[] = {50};

	gen_series(&g, y, sg, 100, at, lv, 0, 0.01);
	FA_REQUIRE(fa_stats_changepoints(y, sg, 100, 0.02, 0, cps, &n, &e) == FA_OK);
	FA_CHECK(n == 0);
	/* the penalty alone, with min_effect 0: about 0.5% of flat series of
	 * 100 points show a step (FA_STATS_CP_PENALTY_K) */
	for (int rep = 0; rep < 50; rep++) {
		gen_series(&g, y, sg, 100, at, lv, 0, 0.01);
		FA_REQUIRE(fa_stats_changepoints(y, sg, 100, 0, 0, cps, &n, &e) == FA_OK);
		spurious += n > 0;
	}
	FA_CHECKF(spurious <= 5, "%d of 50 flat series had steps", spurious);

	/* a 1% step, clear against 0.1% noise, is below min_effect 2% */
	gen_series(&g, y, sg, 100, at, lv, 1, 0.001);
	FA_REQUIRE(fa_stats_changepoints(y, sg, 100, 0.02, 0, cps, &n, &e) == FA_OK);
	FA_CHECK(n == 0);
	FA_REQUIRE(fa_stats_changepoints(y, sg, 100, 0.005, 0, cps, &n, &e) == FA_OK);
	FA_CHECKF(n == 1 && cps[0] == 50, "n %d", n);

	FA_REQUIRE(fa_stats_changepoints(y, sg, 1, 0.02, 0, cps, &n, &e) == FA_OK);
	FA_CHECK(n == 0);
}

FA_TEST(stats, changepoints_weighting)
{
	struct gen g = {fa_test_seed(), 0};
	double y[60], sg[60];
	int cps[59], n = -1;
	struct fa_err e = {0};
	double lv[] = {10};
	gen_series(&g, y, sg, 60, NULL, lv, 0, 0.005);
	y[40] = 13; /* 30% off */
	sg[40] = 5; /* but known to be that noisy */
	FA_REQUIRE(fa_stats_changepoints(y, sg, 60, 0.02, 0, cps, &n, &e) == FA_OK);
	FA_CHECK(n == 0);
	sg[40] = 0.05; /* the same point trusted: a one-point spike, two steps */
	FA_REQUIRE(fa_stats_changepoints(y, sg, 60, 0.02, 0, cps, &n, &e) == FA_OK);
	FA_CHECKF(n == 2 && cps[0] == 40 && cps[1] == 41, "n %d", n);
}

FA_TEST(stats, segment_means_and_errors)
{
	double y[] = {1, 2, 3, 7, 9}, sg[] = {1, 1, 0.5, 1, 1}, m[3] = {0};
	int cps[] = {3}, bad[] = {3, 3};
	int out[4], n = -1;
	struct fa_err e = {0};
	FA_REQUIRE(fa_stats_segment_means(y, NULL, 5, cps, 1, m, &e) == FA_OK);
	FA_CHECK_NEAR(m[0], 2, 1e-12);
	FA_CHECK_NEAR(m[1], 8, 1e-12);
	/* weights 1, 1, 4: (1 + 2 + 12) / 6 */
	FA_REQUIRE(fa_stats_segment_means(y, sg, 5, cps, 1, m, &e) == FA_OK);
	FA_CHECK_NEAR(m[0], 2.5, 1e-12);
	FA_CHECK(fa_stats_segment_means(y, sg, 5, bad, 2, m, &e) == FA_ERR_INPUT);
	FA_CHECKF(strcmp(e.msg, "change point 1 at 3 not inside (3, 5)") == 0, "message '%s'",
		  e.msg);
	fa_err_clear(&e);
	sg[2] = 0;
	FA_CHECK(fa_stats_changepoints(y, sg, 5, 0.02, 0, out, &n, &e) == FA_ERR_INPUT);
	FA_CHECKF(strcmp(e.msg, "sigma 2 of the series is 0, must be finite and positive") == 0,
		  "message '%s'", e.msg);
	FA_CHECK(n == 0);
	fa_err_clear(&e);
	y[1] = NAN;
	FA_CHECK(fa_stats_changepoints(y, NULL, 5, 0.02, 0, out, &n, &e) == FA_ERR_INPUT);
}
