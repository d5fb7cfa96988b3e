/* stats.c - summaries, the Mann-Whitney test, the bootstrap ratio interval,
 * the compare verdict and change-point detection (contracts in stats.h).
 *
 * Everything here is deterministic: the only randomness is the bootstrap's,
 * drawn from the counter-based fa_rng_bits, so a seed fixes every result.
 */
#include "stats.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../kernels/common/fa_rng.h"

/* ---- Helpers ---------------------------------------------------------------- */

static int cmp_double(const void *pa, const void *pb)
{
	double a = *(const double *)pa, b = *(const double *)pb;
	return (a > b) - (a < b);
}

/* Checks x[0..n): n >= 1, every value finite (and positive when asked).
 * `what` names the array in messages ("base", "x"). */
static enum fa_rc check_samples(const double *x, int n, const char *what, int positive,
				struct fa_err *err)
{
	if (n < 1)
		return fa_err_set(err, FA_ERR_INPUT, "no samples in %s (n = %d)", what, n);
	assert(x);
	for (int i = 0; i < n; i++) {
		if (!isfinite(x[i]))
			return fa_err_set(err, FA_ERR_INPUT,
					  "sample %d of %s is %g, must be finite", i, what, x[i]);
		if (positive && !(x[i] > 0))
			return fa_err_set(err, FA_ERR_INPUT,
					  "sample %d of %s is %g, must be positive", i, what, x[i]);
	}
	return FA_OK;
}

static void *alloc_array(size_t count, size_t size, struct fa_err *err)
{
	void *p = calloc(count ? count : 1, size);
	if (!p)
		fa_err_set(err, FA_ERR_NOMEM, "out of memory for %zu values of %zu bytes", count,
			   size);
	return p;
}

/* A sorted malloc'd copy of a checked x[0..n) in *out (caller frees). */
static enum fa_rc sorted_copy(const double *x, int n, const char *what, int positive,
			      double **out, struct fa_err *err)
{
	enum fa_rc rc = check_samples(x, n, what, positive, err);
	*out = NULL;
	if (rc != FA_OK)
		return rc;
	double *s = alloc_array((size_t)n, sizeof *s, err);
	if (!s)
		return FA_ERR_NOMEM;
	memcpy(s, x, (size_t)n * sizeof *s);
	qsort(s, (size_t)n, sizeof *s, cmp_double);
	*out = s;
	return FA_OK;
}

/* ---- Summaries ---------------------------------------------------------------- */

double fa_stats_mean(const double *x, int n)
{
	double s = 0;
	assert(n > 0);
	for (int i = 0; i < n; i++)
		s += x[i];
	return s / n;
}

double fa_stats_stdev(const double *x, int n)
{
	if (n < 2)
		return 0;
	double m = fa_stats_mean(x, n), ss = 0;
	for (int i = 0; i < n; i++)
		ss += (x[i] - m) * (x[i] - m);
	return sqrt(ss / (n - 1));
}

double fa_stats_quantile_sorted(const double *sorted, int n, double p)
{
	assert(n > 0 && p >= 0 && p <= 1);
	double h = (n - 1) * p;
	int lo = (int)floor(h);
	if (lo >= n - 1)
		return sorted[n - 1];
	double frac = h - lo;
	return sorted[lo] + frac * (sorted[lo + 1] - sorted[lo]);
}

enum fa_rc fa_stats_quantiles(const double *x, int n, const double *p, int np, double *q,
			      struct fa_err *err)
{
	double *s;
	for (int i = 0; i < np; i++)
		if (!(p[i] >= 0 && p[i] <= 1))
			return fa_err_set(err, FA_ERR_INPUT, "quantile %g outside [0, 1]", p[i]);
	enum fa_rc rc = sorted_copy(x, n, "x", 0, &s, err);
	if (rc != FA_OK)
		return rc;
	for (int i = 0; i < np; i++)
		q[i] = fa_stats_quantile_sorted(s, n, p[i]);
	free(s);
	return FA_OK;
}

enum fa_rc fa_stats_quantile(const double *x, int n, double p, double *q, struct fa_err *err)
{
	return fa_stats_quantiles(x, n, &p, 1, q, err);
}

enum fa_rc fa_stats_median(const double *x, int n, double *med, struct fa_err *err)
{
	return fa_stats_quantile(x, n, 0.5, med, err);
}

enum fa_rc fa_stats_mad(const double *x, int n, double *mad, struct fa_err *err)
{
	double *s;
	enum fa_rc rc = sorted_copy(x, n, "x", 0, &s, err);
	if (rc != FA_OK)
		return rc;
	double med = fa_stats_quantile_sorted(s, n, 0.5);
	for (int i = 0; i < n; i++)
		s[i] = fabs(s[i] - med);
	qsort(s, (size_t)n, sizeof *s, cmp_double);
	*mad = fa_stats_quantile_sorted(s, n, 0.5);
	free(s);
	return FA_OK;
}

double fa_stats_geomean(const double *x, int n, int *used)
{
	double s = 0;
	int k = 0;
	for (int i = 0; i < n; i++) {
		if (isfinite(x[i]) && x[i] > 0) {
			s += log(x[i]);
			k++;
		}
	}
	if (used)
		*used = k;
	return k ? exp(s / k) : NAN;
}

/* ---- Mann-Whitney ------------------------------------------------------------- */

double fa_stats_mw_normal_p(double u, int na, int nb, double tie_sum)
{
	double N = (double)na + nb, mn = (double)na * nb;
	if (N < 2)
		return 1;
	double var = mn / 12.0 * ((N + 1) - tie_sum / (N * (N - 1)));
	if (!(var > 0))
		return 1;
	double z = (fabs(u - mn / 2) - 0.5) / sqrt(var);
	if (z <= 0)
		return 1;
	double p = erfc(z / sqrt(2.0));
	return p < 1 ? p : 1;
}

enum fa_rc fa_stats_mw_exact_p(double u, int na, int nb, double *p, struct fa_err *err)
{
	*p = NAN;
	if (na < 1 || nb < 1 || (int64_t)na * nb > FA_STATS_MW_EXACT_LIMIT)
		return fa_err_set(err, FA_ERR_INPUT,
				  "exact mann-whitney sizes %d x %d: each must be >= 1, "
				  "the product <= %d",
				  na, nb, FA_STATS_MW_EXACT_LIMIT);
	/* the law of U is symmetric in the sizes: the smaller one indexes rows */
	int m = na < nb ? na : nb, n = na < nb ? nb : na;
	int L = m * n + 1;
	if (!(u >= 0 && u <= m * n))
		return fa_err_set(err, FA_ERR_INPUT, "mann-whitney u %g outside [0, %d]", u, m * n);
	/* P[i][k] = P(U = k) for sizes (i, j), updated for j = 1..n in place:
	 * the largest of the i + j values is an a (probability i / (i + j)),
	 * beating all j b's, or a b, adding nothing. All terms are positive, so
	 * even the far tails keep full relative precision. */
	double *P = alloc_array((size_t)(m + 1) * (size_t)L, sizeof *P, err);
	if (!P)
		return FA_ERR_NOMEM;
	for (int i = 0; i <= m; i++)
		P[(size_t)i * L] = 1; /* j = 0: U = 0 */
	for (int j = 1; j <= n; j++) {
		for (int i = 1; i <= m; i++) {
			double wa = (double)i / (i + j), wb = (double)j / (i + j);
			double *restrict cur = P + (size_t)i * L;
			const double *restrict prev = P + (size_t)(i - 1) * L;
			for (int k = 0; k < j; k++)
				cur[k] *= wb;
			for (int k = j; k <= i * j; k++)
				cur[k] = wb * cur[k] + wa * prev[k - j];
		}
	}
	double low = fmin(u, m * n - u);
	int kmax = (int)floor(low + 1e-9); /* u is an integer without ties */
	double cdf = 0;
	for (int k = 0; k <= kmax; k++)
		cdf += P[(size_t)m * L + k];
	free(P);
	*p = fmin(1.0, 2 * cdf);
	return FA_OK;
}

struct tagged {
	double v;
	int from_a;
};

static int cmp_tagged(const void *pa, const void *pb)
{
	const struct tagged *a = pa, *b = pb;
	return (a->v > b->v) - (a->v < b->v);
}

enum fa_rc fa_stats_mann_whitney(const double *a, int na, const double *b, int nb,
				 struct fa_mw_result *r, struct fa_err *err)
{
	enum fa_rc rc = check_samples(a, na, "a", 0, err);
	if (rc == FA_OK)
		rc = check_samples(b, nb, "b", 0, err);
	if (rc != FA_OK)
		return rc;
	int N = na + nb;
	struct tagged *t = alloc_array((size_t)N, sizeof *t, err);
	if (!t)
		return FA_ERR_NOMEM;
	for (int i = 0; i < na; i++)
		t[i] = (struct tagged){a[i], 1};
	for (int i = 0; i < nb; i++)
		t[na + i] = (struct tagged){b[i], 0};
	qsort(t, (size_t)N, sizeof *t, cmp_tagged);
	/* Midranks (1-based) over groups of equal values. */
	double rank_a = 0, tie_sum = 0;
	int ties = 0;
	for (int i = 0; i < N;) {
		int j = i;
		while (j < N && t[j].v == t[i].v)
			j++;
		double g = j - i, mid = (i + 1 + j) / 2.0;
		for (int k = i; k < j; k++)
			if (t[k].from_a)
				rank_a += mid;
		tie_sum += g * g * g - g;
		ties += j - i - 1;
		i = j;
	}
	free(t);
	struct fa_mw_result res;
	res.u = rank_a - (double)na * (na + 1) / 2;
	res.effect = res.u / ((double)na * nb);
	res.ties = ties;
	res.exact = ties == 0 && (int64_t)na * nb <= FA_STATS_MW_EXACT_PAIRS;
	if (res.exact) {
		rc = fa_stats_mw_exact_p(res.u, na, nb, &res.p, err);
		if (rc != FA_OK)
			return rc;
	} else {
		res.p = fa_stats_mw_normal_p(res.u, na, nb, tie_sum);
	}
	*r = res;
	return FA_OK;
}

/* ---- Bootstrap ---------------------------------------------------------------- */

/* The median of one resample of sorted[0..n): n draws with replacement
 * counted in cnt[0..n) (scratch), then the middle order statistics read off
 * the cumulative counts, so no sort is needed. Each 64-bit draw gives two
 * indices, one per 32-bit half scaled to [0, n) by a multiply and shift
 * (bias below n / 2^32). */
static double resample_median(const double *sorted, int n, uint64_t seed, uint32_t stream,
			      uint64_t resample, int *cnt)
{
	uint64_t per = ((uint64_t)n + 1) / 2; /* draws per resample */
	memset(cnt, 0, (size_t)n * sizeof *cnt);
	for (int i = 0; i < n; i += 2) {
		uint64_t bits = fa_rng_bits(seed, stream, resample * per + (uint64_t)i / 2);
		cnt[((bits & 0xffffffffu) * (uint64_t)n) >> 32]++;
		if (i + 1 < n)
			cnt[((bits >> 32) * (uint64_t)n) >> 32]++;
	}
	int k1 = (n - 1) / 2, k2 = n / 2; /* 0-based ranks of the middle values */
	double v1 = 0, v2 = 0;
	int cum = 0;
	for (int i = 0; i < n; i++) {
		int next = cum + cnt[i];
		if (cum <= k1 && k1 < next)
			v1 = sorted[i];
		if (cum <= k2 && k2 < next) {
			v2 = sorted[i];
			break;
		}
		cum = next;
	}
	return 0.5 * (v1 + v2);
}

enum fa_rc fa_stats_bootstrap_ratio(const double *a, int na, const double *b, int nb,
				    int resamples, double level, uint64_t seed, double *lo,
				    double *hi, struct fa_err *err)
{
	double *sa = NULL, *sb = NULL, *ratios = NULL;
	int *cnt = NULL;
	enum fa_rc rc;
	*lo = *hi = NAN;
	if (resamples == 0)
		resamples = FA_STATS_BOOT_RESAMPLES;
	if (level == 0)
		level = FA_STATS_BOOT_LEVEL;
	if (resamples < 0 || resamples > FA_STATS_BOOT_MAX_RESAMPLES)
		return fa_err_set(err, FA_ERR_INPUT, "resamples %d outside 0..%d", resamples,
				  FA_STATS_BOOT_MAX_RESAMPLES);
	if (!(level > 0 && level < 1))
		return fa_err_set(err, FA_ERR_INPUT, "confidence level %g outside (0, 1)", level);
	rc = sorted_copy(a, na, "a", 1, &sa, err);
	if (rc == FA_OK)
		rc = sorted_copy(b, nb, "b", 1, &sb, err);
	if (rc != FA_OK)
		goto out;
	ratios = alloc_array((size_t)resamples, sizeof *ratios, err);
	cnt = alloc_array((size_t)(na > nb ? na : nb), sizeof *cnt, err);
	if (!ratios || !cnt) {
		rc = FA_ERR_NOMEM;
		goto out;
	}
	for (int r = 0; r < resamples; r++) {
		double ma = resample_median(sa, na, seed, 1, (uint64_t)r, cnt);
		double mb = resample_median(sb, nb, seed, 2, (uint64_t)r, cnt);
		ratios[r] = mb / ma;
	}
	qsort(ratios, (size_t)resamples, sizeof *ratios, cmp_double);
	*lo = fa_stats_quantile_sorted(ratios, resamples, (1 - level) / 2);
	*hi = fa_stats_quantile_sorted(ratios, resamples, (1 + level) / 2);
out:
	free(sa);
	free(sb);
	free(ratios);
	free(cnt);
	return rc;
}

/* ---- Verdict ------------------------------------------------------------------ */

void fa_stats_verdict_defaults(struct fa_perf_cfg *cfg)
{
	cfg->alpha = FA_STATS_ALPHA;
	cfg->min_effect = FA_STATS_MIN_EFFECT;
	cfg->resamples = FA_STATS_BOOT_RESAMPLES;
	cfg->level = FA_STATS_BOOT_LEVEL;
	cfg->seed = FA_STATS_SEED;
}

const char *fa_stats_verdict_name(int verdict)
{
	switch (verdict) {
	case FA_PERF_SAME:
		return "same";
	case FA_PERF_FASTER:
		return "faster";
	case FA_PERF_SLOWER:
		return "slower";
	case FA_PERF_NOISY:
		return "noisy";
	}
	return "unknown";
}

/* The smallest two-sided p the exact rank test can give: 2 / C(na + nb, na). */
static double min_exact_p(int na, int nb)
{
	int k = na < nb ? na : nb, N = na + nb;
	double c = 1;
	for (int i = 1; i <= k; i++)
		c = c * (N - k + i) / i;
	return fmin(1.0, 2 / c);
}

/* The verdict from a result's ratio, interval, p and effect (see stats.h). */
static int decide(const struct fa_perf_result *res, const struct fa_perf_cfg *c)
{
	double e = c->min_effect;
	/* significant (rank test and interval agree on a direction) and either
	 * the whole interval is beyond e, or the interval is narrow (not noisy)
	 * and the best estimate is beyond e */
	int narrow = res->hi - res->lo <= FA_STATS_NOISY_WIDTH * e;
	int faster = res->hi < 1 - e || (res->hi < 1 && res->ratio < 1 - e && narrow);
	int slower = res->lo > 1 + e || (res->lo > 1 && res->ratio > 1 + e && narrow);
	if (res->p < c->alpha && faster && res->effect < 0.5)
		return FA_PERF_FASTER;
	if (res->p < c->alpha && slower && res->effect > 0.5)
		return FA_PERF_SLOWER;
	if (res->lo >= 1 - e && res->hi <= 1 + e)
		return FA_PERF_SAME;
	if (res->hi - res->lo > FA_STATS_NOISY_WIDTH * e)
		return FA_PERF_NOISY;
	if (res->ratio >= 1 - e && res->ratio <= 1 + e)
		return FA_PERF_SAME;
	return FA_PERF_NOISY;
}

enum fa_rc fa_stats_verdict(const double *base, int nb, const double *head, int nh,
			    const struct fa_perf_cfg *cfg, struct fa_perf_result *out,
			    struct fa_err *err)
{
	struct fa_perf_cfg c;
	struct fa_perf_result res;
	struct fa_mw_result mw;
	enum fa_rc rc;
	if (cfg)
		c = *cfg;
	else
		fa_stats_verdict_defaults(&c);
	if (!(c.alpha > 0 && c.alpha < 1))
		return fa_err_set(err, FA_ERR_INPUT, "alpha %g outside (0, 1)", c.alpha);
	if (!(c.min_effect >= 0 && c.min_effect < 1))
		return fa_err_set(err, FA_ERR_INPUT, "min_effect %g outside [0, 1)", c.min_effect);
	if (!(c.level > 0 && c.level < 1))
		return fa_err_set(err, FA_ERR_INPUT, "confidence level %g outside (0, 1)", c.level);
	rc = check_samples(base, nb, "base", 1, err);
	if (rc == FA_OK)
		rc = check_samples(head, nh, "head", 1, err);
	if (rc != FA_OK)
		return rc;
	double mb, mh;
	if ((rc = fa_stats_median(base, nb, &mb, err)) != FA_OK ||
	    (rc = fa_stats_median(head, nh, &mh, err)) != FA_OK ||
	    (rc = fa_stats_mann_whitney(head, nh, base, nb, &mw, err)) != FA_OK)
		return rc;
	double e = c.min_effect;
	res.ratio = mh / mb;
	res.p = mw.p;
	res.effect = mw.effect;
	res.n_base = nb;
	res.n_head = nh;
	res.lo = res.hi = NAN;
	res.low_samples = nb < 3 || nh < 3 || min_exact_p(nb, nh) >= c.alpha;
	if (res.low_samples) {
		res.verdict = res.ratio < 1 - e ? FA_PERF_FASTER
			      : res.ratio > 1 + e ? FA_PERF_SLOWER
						  : FA_PERF_SAME;
		*out = res;
		return FA_OK;
	}
	rc = fa_stats_bootstrap_ratio(base, nb, head, nh, c.resamples, c.level, c.seed, &res.lo,
				      &res.hi, err);
	if (rc != FA_OK)
		return rc;
	res.verdict = decide(&res, &c);
	*out = res;
	return FA_OK;
}

/* Two-sided p of the sign test: k of n differences positive (ties dropped
 * before), exact binomial(n, 1/2) through log-gamma. */
static double sign_test_p(int k, int n)
{
	double tail = 0;
	int m = k < n - k ? k : n - k;
	if (n == 0)
		return 1;
	for (int i = 0; i <= m; i++)
		tail += exp(lgamma(n + 1.0) - lgamma(i + 1.0) - lgamma(n - i + 1.0) - n * log(2.0));
	return tail * 2 > 1 ? 1 : tail * 2;
}

enum fa_rc fa_stats_verdict_paired(const double *base, const double *head, int n,
				   const struct fa_perf_cfg *cfg, struct fa_perf_result *out,
				   struct fa_err *err)
{
	struct fa_perf_cfg c;
	struct fa_perf_result res;
	double *d = NULL, *sd = NULL, *meds = NULL;
	int *cnt = NULL, pos = 0, neg = 0;
	enum fa_rc rc;
	if (cfg)
		c = *cfg;
	else
		fa_stats_verdict_defaults(&c);
	if (c.resamples == 0)
		c.resamples = FA_STATS_BOOT_RESAMPLES;
	if (c.level == 0)
		c.level = FA_STATS_BOOT_LEVEL;
	if (!(c.alpha > 0 && c.alpha < 1))
		return fa_err_set(err, FA_ERR_INPUT, "alpha %g outside (0, 1)", c.alpha);
	if (!(c.min_effect >= 0 && c.min_effect < 1))
		return fa_err_set(err, FA_ERR_INPUT, "min_effect %g outside [0, 1)", c.min_effect);
	if (c.resamples < 0 || c.resamples > FA_STATS_BOOT_MAX_RESAMPLES)
		return fa_err_set(err, FA_ERR_INPUT, "resamples %d outside 0..%d", c.resamples,
				  FA_STATS_BOOT_MAX_RESAMPLES);
	if ((rc = check_samples(base, n, "base", 1, err)) != FA_OK ||
	    (rc = check_samples(head, n, "head", 1, err)) != FA_OK)
		return rc;
	d = alloc_array((size_t)n, sizeof *d, err);
	meds = alloc_array((size_t)c.resamples, sizeof *meds, err);
	cnt = alloc_array((size_t)n, sizeof *cnt, err);
	if (!d || !meds || !cnt) {
		rc = FA_ERR_NOMEM;
		goto out;
	}
	for (int i = 0; i < n; i++) {
		d[i] = log(head[i] / base[i]);
		pos += d[i] > 0;
		neg += d[i] < 0;
	}
	if ((rc = sorted_copy(d, n, "log ratios", 0, &sd, err)) != FA_OK)
		goto out;
	res.ratio = exp(fa_stats_quantile_sorted(sd, n, 0.5));
	res.p = sign_test_p(pos, pos + neg);
	res.effect = pos + neg ? (double)pos / (pos + neg) : 0.5;
	res.n_base = res.n_head = n;
	res.lo = res.hi = NAN;
	res.low_samples = n < 6; /* the sign test cannot reach 0.05 with fewer pairs */
	if (res.low_samples) {
		double e = c.min_effect;
		res.verdict = res.ratio < 1 - e ? FA_PERF_FASTER
			      : res.ratio > 1 + e ? FA_PERF_SLOWER
						  : FA_PERF_SAME;
		*out = res;
		goto out;
	}
	for (int r = 0; r < c.resamples; r++)
		meds[r] = exp(resample_median(sd, n, c.seed, 3, (uint64_t)r, cnt));
	qsort(meds, (size_t)c.resamples, sizeof *meds, cmp_double);
	res.lo = fa_stats_quantile_sorted(meds, c.resamples, (1 - c.level) / 2);
	res.hi = fa_stats_quantile_sorted(meds, c.resamples, (1 + c.level) / 2);
	res.verdict = decide(&res, &c);
	*out = res;
out:
	free(d);
	free(sd);
	free(meds);
	free(cnt);
	return rc;
}

/* ---- Change points ------------------------------------------------------------ */

static enum fa_rc check_series(const double *y, const double *sigma, int n, struct fa_err *err)
{
	for (int i = 0; i < n; i++) {
		if (!isfinite(y[i]))
			return fa_err_set(err, FA_ERR_INPUT,
					  "value %d of the series is %g, must be finite", i, y[i]);
		if (sigma && !(isfinite(sigma[i]) && sigma[i] > 0))
			return fa_err_set(
				err, FA_ERR_INPUT,
				"sigma %d of the series is %g, must be finite and positive", i,
				sigma[i]);
	}
	return FA_OK;
}

/* Prefix sums of w, w (y - c) and w (y - c)^2 with w = 1 / sigma^2, centred on
 * the weighted mean c so that segment costs do not cancel catastrophically. */
struct prefix {
	double *s0, *s1, *s2; /* n + 1 each */
	double c;
};

static enum fa_rc prefix_init(struct prefix *pf, const double *y, const double *sigma, int n,
			      struct fa_err *err)
{
	double *buf = alloc_array(3 * ((size_t)n + 1), sizeof *buf, err);
	if (!buf)
		return FA_ERR_NOMEM;
	pf->s0 = buf;
	pf->s1 = buf + n + 1;
	pf->s2 = buf + 2 * ((size_t)n + 1);
	double sw = 0, swy = 0;
	for (int i = 0; i < n; i++) {
		double w = sigma ? 1 / (sigma[i] * sigma[i]) : 1;
		sw += w;
		swy += w * y[i];
	}
	pf->c = n ? swy / sw : 0;
	for (int i = 0; i < n; i++) {
		double w = sigma ? 1 / (sigma[i] * sigma[i]) : 1, d = y[i] - pf->c;
		pf->s0[i + 1] = pf->s0[i] + w;
		pf->s1[i + 1] = pf->s1[i] + w * d;
		pf->s2[i + 1] = pf->s2[i] + w * d * d;
	}
	return FA_OK;
}

/* Weighted squared error of y[s..t) about its weighted mean. */
static double seg_cost(const struct prefix *pf, int s, int t)
{
	double w = pf->s0[t] - pf->s0[s], d = pf->s1[t] - pf->s1[s];
	double c = (pf->s2[t] - pf->s2[s]) - d * d / w;
	return c > 0 ? c : 0;
}

static double seg_mean(const struct prefix *pf, int s, int t)
{
	return pf->c + (pf->s1[t] - pf->s1[s]) / (pf->s0[t] - pf->s0[s]);
}

static double rel_change(double m1, double m2)
{
	if (m1 == 0)
		return m2 == 0 ? 0 : INFINITY;
	return fabs(m2 - m1) / fabs(m1);
}

enum fa_rc fa_stats_changepoints(const double *y, const double *sigma, int n, double min_effect,
				 double penalty, int *cps, int *n_cps, struct fa_err *err)
{
	struct prefix pf = {0};
	double *F = NULL;
	int *last = NULL, *cand = NULL;
	enum fa_rc rc;
	*n_cps = 0;
	if (n < 0)
		return fa_err_set(err, FA_ERR_INPUT, "series length %d is negative", n);
	if (!(min_effect >= 0 && isfinite(min_effect)))
		return fa_err_set(err, FA_ERR_INPUT, "min_effect %g must be finite and >= 0",
				  min_effect);
	if (!isfinite(penalty))
		return fa_err_set(err, FA_ERR_INPUT, "penalty %g must be finite", penalty);
	if ((rc = check_series(y, sigma, n, err)) != FA_OK)
		return rc;
	if (n < 2)
		return FA_OK;
	double beta = penalty > 0 ? penalty : FA_STATS_CP_PENALTY_K * log((double)n);
	if ((rc = prefix_init(&pf, y, sigma, n, err)) != FA_OK)
		return rc;
	F = alloc_array((size_t)n + 1, sizeof *F, err);
	last = alloc_array((size_t)n + 1, sizeof *last, err);
	cand = alloc_array((size_t)n + 1, sizeof *cand, err);
	if (!F || !last || !cand) {
		rc = FA_ERR_NOMEM;
		goto out;
	}
	/* PELT: F[t] is the optimal penalised cost of y[0..t); cand holds the
	 * last-change positions not yet pruned. With this cost, splitting never
	 * raises it, so a position s whose F[s] + cost(s, t) already exceeds F[t]
	 * can never start the last segment later (Killick et al., K = 0). */
	int nc = 1;
	F[0] = -beta;
	cand[0] = 0;
	for (int t = 1; t <= n; t++) {
		double best = INFINITY;
		int arg = 0;
		for (int k = 0; k < nc; k++) {
			double v = F[cand[k]] + seg_cost(&pf, cand[k], t) + beta;
			if (v < best) {
				best = v;
				arg = cand[k];
			}
		}
		F[t] = best;
		last[t] = arg;
		int kept = 0;
		for (int k = 0; k < nc; k++)
			if (F[cand[k]] + seg_cost(&pf, cand[k], t) <= F[t])
				cand[kept++] = cand[k];
		cand[kept++] = t;
		nc = kept;
	}
	/* Backtrack into cps, ascending. */
	int m = 0;
	for (int t = n; t > 0; t = last[t])
		if (last[t] > 0)
			m++;
	int k = m;
	for (int t = n; t > 0; t = last[t])
		if (last[t] > 0)
			cps[--k] = last[t];
	/* Merge the pair of neighbouring segments with the smallest relative
	 * change while it is at most min_effect. */
	while (m > 0) {
		int kmin = -1;
		double rmin = INFINITY;
		for (int j = 0; j < m; j++) {
			int s0 = j ? cps[j - 1] : 0, s1 = cps[j], s2 = j + 1 < m ? cps[j + 1] : n;
			double r = rel_change(seg_mean(&pf, s0, s1), seg_mean(&pf, s1, s2));
			if (r < rmin) {
				rmin = r;
				kmin = j;
			}
		}
		if (!(rmin <= min_effect))
			break;
		memmove(cps + kmin, cps + kmin + 1, (size_t)(m - kmin - 1) * sizeof *cps);
		m--;
	}
	*n_cps = m;
out:
	free(pf.s0);
	free(F);
	free(last);
	free(cand);
	return rc;
}

enum fa_rc fa_stats_segment_means(const double *y, const double *sigma, int n, const int *cps,
				  int n_cps, double *means, struct fa_err *err)
{
	struct prefix pf;
	enum fa_rc rc;
	if (n < 1)
		return fa_err_set(err, FA_ERR_INPUT, "series length %d must be positive", n);
	if (n_cps < 0)
		return fa_err_set(err, FA_ERR_INPUT, "change point count %d is negative", n_cps);
	for (int j = 0; j < n_cps; j++) {
		int prev = j ? cps[j - 1] : 0;
		if (cps[j] <= prev || cps[j] >= n)
			return fa_err_set(err, FA_ERR_INPUT,
					  "change point %d at %d not inside (%d, %d)", j, cps[j],
					  prev, n);
	}
	if ((rc = check_series(y, sigma, n, err)) != FA_OK)
		return rc;
	if ((rc = prefix_init(&pf, y, sigma, n, err)) != FA_OK)
		return rc;
	for (int j = 0; j <= n_cps; j++)
		means[j] = seg_mean(&pf, j ? cps[j - 1] : 0, j < n_cps ? cps[j] : n);
	free(pf.s0);
	return FA_OK;
}
