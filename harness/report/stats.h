/* stats.h - the statistics behind `fabench compare` and `fabench history`:
 * robust summaries of timing samples, the Mann-Whitney rank test, a
 * bootstrap interval for the ratio of medians, the FASTER / SLOWER / SAME /
 * NOISY verdict for a (base, head) pair, the geometric mean of ratios and
 * change-point detection on a history of medians.
 *
 * Pure numerics: no I/O, no SQLite, no global state. Inputs are arrays of
 * doubles (timing samples in ms) owned by the caller and never modified:
 * functions that need order work on a malloc'd copy. Functions that allocate
 * or validate return an enum fa_rc and fill err (FA_ERR_NOMEM when an
 * allocation fails, FA_ERR_INPUT for bad input, with the value quoted);
 * the others return their value directly. NaN and infinite samples are
 * rejected by every function that returns an enum fa_rc. err may be NULL;
 * as everywhere, the first error wins.
 *
 * fa_stats_compute() (the summary stored per case) is declared in measure.h
 * and belongs to the measure module, not to this one.
 */
#ifndef FA_STATS_H
#define FA_STATS_H

#include <stdint.h>

#include "../base/err.h"

/* ---- Summaries ---------------------------------------------------------- */

/* Mean of x[0..n). n must be positive. NaN propagates. */
double fa_stats_mean(const double *x, int n);

/* Sample standard deviation (n - 1 in the denominator, two passes). Returns
 * 0 when n < 2. */
double fa_stats_stdev(const double *x, int n);

/* The type-7 quantile (numpy's default, R's type 7) of an array already
 * sorted ascending: with h = (n - 1) p, the linear interpolation between
 * sorted[floor(h)] and sorted[floor(h) + 1]. n must be positive and p in
 * [0, 1] (asserted: this is the fast path for callers that sorted once). */
double fa_stats_quantile_sorted(const double *sorted, int n, double p);

/* Type-7 quantiles of x[0..n) at the np probabilities p[] into q[] (one sort
 * of a copy). Returns FA_OK; FA_ERR_INPUT when n < 1, a sample is not finite
 * or a probability lies outside [0, 1]; FA_ERR_NOMEM. q is untouched on
 * failure. */
enum fa_rc fa_stats_quantiles(const double *x, int n, const double *p, int np, double *q,
			      struct fa_err *err);

/* One type-7 quantile of x[0..n) into *q. Errors as fa_stats_quantiles. */
enum fa_rc fa_stats_quantile(const double *x, int n, double p, double *q, struct fa_err *err);

/* Median of x[0..n) (the mean of the two middle values when n is even) into
 * *med. Errors as fa_stats_quantiles. */
enum fa_rc fa_stats_median(const double *x, int n, double *med, struct fa_err *err);

/* Median absolute deviation, median(|x - median(x)|), unscaled, into *mad.
 * Multiply by FA_STATS_MAD_TO_SIGMA for a standard deviation estimate that is
 * consistent for normal data. Errors as fa_stats_quantiles. */
enum fa_rc fa_stats_mad(const double *x, int n, double *mad, struct fa_err *err);

/* 1 / Phi^-1(3/4): MAD * this estimates sigma of a normal distribution. */
#define FA_STATS_MAD_TO_SIGMA 1.482602218505602

/* Geometric mean of the ratios x[0..n) that are positive and finite; the
 * others (<= 0, NaN, Inf: failed or missing comparisons) are skipped. *used
 * (may be NULL) gets the number of values used. Returns NaN when none is. */
double fa_stats_geomean(const double *x, int n, int *used);

/* ---- Mann-Whitney U test -------------------------------------------------- */

/* The exact null distribution is used when there are no ties and
 * na nb <= FA_STATS_MW_EXACT_PAIRS (50 x 50, 25 x 100, 5 x 500...): a dynamic
 * program over (i, j, U) costing about (na nb)^2 / 4 multiply-adds (1.6 M at
 * the bound, a millisecond or two) and (min(na, nb) + 1) (na nb + 1) doubles
 * (1 MB at 50 x 50). Past the bound the normal approximation is within 0.002
 * of the exact p when both sides have 30 samples or more (0.0017 at 50 x 50),
 * within 0.012 when one side is as small as 5 (5 x 600). */
#define FA_STATS_MW_EXACT_PAIRS 2500
/* The largest na nb that fa_stats_mw_exact_p accepts when called directly
 * (100 x 100: 25 M multiply-adds, 8 MB). */
#define FA_STATS_MW_EXACT_LIMIT 10000

struct fa_mw_result {
	double u;      /* U of a: #(a_i > b_j) + 0.5 #(a_i == b_j), in [0, na nb] */
	double p;      /* two-sided p-value of "a and b come from one distribution" */
	double effect; /* common-language effect size u / (na nb): the probability
	                  that a random a exceeds a random b, ties counting half */
	int32_t exact; /* 1: p from the exact distribution, 0: normal approximation */
	int32_t ties;  /* number of values shared by the two samples or within one
	                  (groups of equal values, counted as group size - 1) */
};

/* The two-sided Mann-Whitney (Wilcoxon rank-sum) test of a[0..na) against
 * b[0..nb), both na, nb >= 1. Ranks use midranks for ties. p is exact when
 * there are no ties and na nb <= FA_STATS_MW_EXACT_PAIRS; otherwise it is the
 * normal approximation with tie-corrected variance and a continuity
 * correction of 0.5 (as scipy's; with many ties U moves in steps of 0.5 and
 * the approximation errs on the large side by up to ~0.03 near p = 0.8,
 * less in the tail that decides). When every value is equal (zero variance) p
 * is 1. Swapping a and b gives u' = na nb - u, the same p and effect' =
 * 1 - effect. Returns FA_OK; FA_ERR_INPUT for an empty side or a non-finite
 * sample; FA_ERR_NOMEM. *r is filled only on success. */
enum fa_rc fa_stats_mann_whitney(const double *a, int na, const double *b, int nb,
				 struct fa_mw_result *r, struct fa_err *err);

/* The exact two-sided p of U = u for sample sizes na, nb without ties:
 * 2 min(P(U <= u), P(U >= u)), at most 1. u is rounded down to an integer
 * from below the centre and up from above it. Allowed for na, nb >= 1 with
 * na nb <= FA_STATS_MW_EXACT_LIMIT. Returns FA_OK, FA_ERR_INPUT (sizes, or u
 * outside [0, na nb]) or FA_ERR_NOMEM; *p is NaN on failure. */
enum fa_rc fa_stats_mw_exact_p(double u, int na, int nb, double *p, struct fa_err *err);

/* The normal-approximation two-sided p of U = u: mean na nb / 2, variance
 * na nb / 12 ((N + 1) - tie_sum / (N (N - 1))) with N = na + nb and
 * tie_sum = sum over groups of equal values of (t^3 - t), continuity
 * correction 0.5. Returns 1 when the variance is 0. */
double fa_stats_mw_normal_p(double u, int na, int nb, double tie_sum);

/* ---- Bootstrap -------------------------------------------------------------- */

#define FA_STATS_BOOT_RESAMPLES 2000 /* default: percentile ends stable to ~0.1% */
#define FA_STATS_BOOT_LEVEL 0.95
#define FA_STATS_BOOT_MAX_RESAMPLES 10000000 /* a sanity bound on the argument */

/* Percentile bootstrap confidence interval [*lo, *hi] of the ratio
 * median(b) / median(a). Each resample draws na values of a and nb values of
 * b with replacement; the draws are pure functions of (seed, resample,
 * position) through fa_rng_bits (stream 1 for a, 2 for b), so one seed gives
 * one interval on every machine. resamples 0 means FA_STATS_BOOT_RESAMPLES,
 * level 0 means FA_STATS_BOOT_LEVEL; the ends are the type-7 quantiles
 * (1 - level) / 2 and (1 + level) / 2 of the sorted resampled ratios.
 * Every sample must be finite and positive (times in ms, so that every
 * resampled median of a is positive). Returns FA_OK; FA_ERR_INPUT for an
 * empty side, a bad sample, resamples outside [0, FA_STATS_BOOT_MAX_RESAMPLES]
 * or level outside (0, 1); FA_ERR_NOMEM. *lo and *hi are NaN on failure. */
enum fa_rc fa_stats_bootstrap_ratio(const double *a, int na, const double *b, int nb,
				    int resamples, double level, uint64_t seed, double *lo,
				    double *hi, struct fa_err *err);

/* ---- The compare verdict ---------------------------------------------------- */

/* Stored by name (fa_stats_verdict_name), never by number. */
enum fa_perf_verdict {
	FA_PERF_SAME = 0,   /* no change of at least min_effect shown */
	FA_PERF_FASTER = 1, /* head is faster by more than min_effect */
	FA_PERF_SLOWER = 2, /* head is slower by more than min_effect */
	FA_PERF_NOISY = 3,  /* the data cannot tell */
};

#define FA_STATS_ALPHA 0.05
#define FA_STATS_MIN_EFFECT 0.02
/* A CI wider than this many min_effects is too noisy to call SAME. At 4, a
 * CI centred on 1 that is NOISY could hide a change of 2 min_effects. */
#define FA_STATS_NOISY_WIDTH 4.0
#define FA_STATS_SEED 0x66616265ull /* "fabe": the default bootstrap seed */

struct fa_perf_cfg {
	double alpha;       /* significance level of the rank test (default 0.05) */
	double min_effect;  /* smallest relative change reported (default 0.02) */
	int32_t resamples;  /* bootstrap resamples (default 2000) */
	double level;       /* bootstrap confidence level (default 0.95) */
	uint64_t seed;      /* bootstrap seed (default FA_STATS_SEED); callers that
	                       want independent resampling per case mix in its id */
};

/* Fills cfg with the defaults above. */
void fa_stats_verdict_defaults(struct fa_perf_cfg *cfg);

struct fa_perf_result {
	int32_t verdict;     /* enum fa_perf_verdict */
	int32_t low_samples; /* 1: decided on the ratio alone (see fa_stats_verdict) */
	double ratio;        /* median(head) / median(base): < 1 is faster */
	double lo, hi;       /* bootstrap CI of ratio; NaN when low_samples */
	double p;            /* Mann-Whitney two-sided p (head vs base) */
	double effect;       /* P(random head > random base), ties half: > 0.5 slower */
	int32_t n_base, n_head;
};

/* The verdict for base[0..nb) against head[0..nh) (timing samples in ms,
 * finite and positive; cfg NULL means the defaults).
 *
 *   r = median(head) / median(base); [lo, hi] its bootstrap CI; p and effect
 *   from the Mann-Whitney test of head against base; e = min_effect.
 *
 *   low_samples: fewer than 3 samples on a side, or so few that the exact
 *   rank test cannot reach alpha at all (its smallest p, 2 / C(nb + nh, nb),
 *   is >= alpha: 3 + 3 and 3 + 4 samples at alpha 0.05). Then only the ratio
 *   decides: r < 1 - e FASTER, r > 1 + e SLOWER, else SAME; lo and hi are NaN.
 *
 *   Otherwise, in this order:
 *   1. p < alpha, effect < 0.5 and either hi < 1 - e, or hi < 1 and
 *      r < 1 - e with a narrow interval (hi - lo <= FA_STATS_NOISY_WIDTH e)
 *                                                          -> FASTER
 *      p < alpha, effect > 0.5 and either lo > 1 + e, or lo > 1 and
 *      r > 1 + e with a narrow interval                    -> SLOWER
 *      (the rank test and the interval both show a change, and either the
 *      whole interval or, when it is narrow, the best estimate lies beyond
 *      e; the effect condition keeps the two pointing the same way. The
 *      narrow-interval branch was added after a shared 2-core machine, ~10%
 *      noise per sample, left a third of planted 5% slowdowns NOISY with
 *      p < 1e-5 and intervals like [1.017, 1.073].)
 *   2. 1 - e <= lo and hi <= 1 + e                         -> SAME (shown)
 *   3. hi - lo > FA_STATS_NOISY_WIDTH * e                  -> NOISY
 *   4. 1 - e <= r <= 1 + e (a small or uncertain difference: the best
 *      estimate is under e and the interval is narrow)     -> SAME
 *   5. otherwise (the estimate is beyond e but not shown: the rank test or
 *      the interval does not confirm it)                    -> NOISY
 *
 * Why: requiring both the rank test and the interval keeps false verdicts
 * under alpha where either alone fails (the percentile bootstrap of a
 * median undercovers with few samples); the threshold e keeps real but tiny
 * changes (1%) from being reported. Steps 4 and 5 replace a plain "else
 * SAME", which simulations showed calling 25% of real 5% slowdowns on 5%
 * noise SAME (interval [0.99, 1.07], say); now 3% are, the rest NOISY.
 *
 * Measured (tests/test_stats.c prints them; 400 trials, lognormal noise,
 * 10-30 samples a side unless said; 2000-trial runs agree):
 *   A/A, 1% noise                 0% FASTER/SLOWER, 100% SAME
 *   5% slower, 1% noise           100% SLOWER (99.8% with 10 samples)
 *   5% faster, 1% noise           100% FASTER
 *   1% slower, 1% noise, e = 2%   0% FASTER/SLOWER (98.6% SAME)
 *   3% slower, 1% noise           64% SLOWER, 35% NOISY
 *   A/A, 20% noise, 5 samples     about 2% FASTER/SLOWER, 98% NOISY
 *   A/A, 1% noise, e = 0          about 3% FASTER/SLOWER: then alpha rules
 *
 * Returns FA_OK; FA_ERR_INPUT for an empty side, a non-finite or
 * non-positive sample, or a bad cfg (alpha or level outside (0, 1),
 * min_effect outside [0, 1)); FA_ERR_NOMEM. *out is filled only on success. */
enum fa_rc fa_stats_verdict(const double *base, int nb, const double *head, int nh,
			    const struct fa_perf_cfg *cfg, struct fa_perf_result *out,
			    struct fa_err *err);

/* "same", "faster", "slower", "noisy"; "unknown" for other values. */
const char *fa_stats_verdict_name(int verdict);

/* The verdict for paired samples: base[i] and head[i] were taken one after
 * the other (fabench run --ab samples both builds in turn), so the machine's
 * drift and bursts hit both alike and cancel in their ratio. r = the median
 * of head[i] / base[i] (through logs); [lo, hi] its bootstrap interval
 * (resampling pairs); p the exact two-sided sign test of the log ratios
 * (ties dropped); effect the share of pairs where head is slower. The same
 * rules as fa_stats_verdict then decide; with fewer than 6 pairs (the sign
 * test cannot reach 0.05) only r decides, as low_samples. Returns as
 * fa_stats_verdict. */
enum fa_rc fa_stats_verdict_paired(const double *base, const double *head, int n,
				   const struct fa_perf_cfg *cfg, struct fa_perf_result *out,
				   struct fa_err *err);

/* ---- Change points ---------------------------------------------------------- */

/* Steps in a history y[0..n) of medians (oldest first) with per-point noise
 * sigma[0..n) (a standard deviation of y[i]: the stdev of that run's samples
 * over sqrt(n), or MAD-derived; NULL means all 1, and then the cost is in
 * units of y squared, so the default penalty only suits y in units of its
 * noise).
 *
 * Method: PELT (Killick et al. 2012), the exact minimiser of
 *   sum over segments of sum_i (y_i - m_seg)^2 / sigma_i^2  +  penalty * (segments - 1)
 * with m_seg the 1/sigma^2-weighted mean of the segment. penalty <= 0 means
 * FA_STATS_CP_PENALTY_K * ln(n), BIC-like. Simulated on flat series with
 * honest sigmas and min_effect 0, K = 3 finds a spurious step in 3% of
 * 20-point series, 1.2% at 40 points and under 0.5% from 80 on, where the
 * classic K = 2 gave 17%, 11% and 9%. Then steps too small to matter
 * are removed: while two neighbouring segments have means whose relative
 * change |m2 - m1| / |m1| is at most min_effect, the pair with the smallest
 * change is merged (its weighted mean recomputed). A single point far from
 * its neighbours, beyond its own sigma, forms a one-point segment (a spike
 * shows as two steps); a point with a large sigma weighs little and does not.
 * Night-to-night drift is usually larger than one run's sampling noise, so
 * sigmas from within-run spread find many small steps: min_effect is what
 * keeps only those that matter.
 *
 * cps receives the change points, each the first index of a new segment,
 * ascending, in 1..n-1; it must have room for n - 1 entries. *n_cps gets
 * their number (0 for n < 2). Returns FA_OK; FA_ERR_INPUT when n < 0, a
 * value of y is not finite, a sigma is not finite and positive, min_effect
 * is negative or penalty is not finite; FA_ERR_NOMEM. On failure *n_cps is
 * 0. */
enum fa_rc fa_stats_changepoints(const double *y, const double *sigma, int n, double min_effect,
				 double penalty, int *cps, int *n_cps, struct fa_err *err);

#define FA_STATS_CP_PENALTY_K 3.0

/* The 1/sigma^2-weighted mean of each segment that the change points
 * cps[0..n_cps) cut y[0..n) into (sigma NULL: plain means) into
 * means[0..n_cps], oldest first. Returns FA_OK; FA_ERR_INPUT when n < 1, the
 * change points are not strictly increasing within 1..n-1, or a value is
 * bad (as fa_stats_changepoints). */
enum fa_rc fa_stats_segment_means(const double *y, const double *sigma, int n, const int *cps,
				  int n_cps, double *means, struct fa_err *err);

#endif /* FA_STATS_H */
