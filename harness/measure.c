/* measure.c - the sampling loop and its stopping rule, and time statistics. */
#include "measure.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void fa_measure_defaults(struct fa_measure_cfg *cfg)
{
	memset(cfg, 0, sizeof *cfg);
	cfg->warmup = 2;
	cfg->min_samples = 10;
	cfg->max_samples = 1000;
	cfg->max_noise = 0.005;
	cfg->min_time_ms = 100.0;
	cfg->max_time_ms = 2000.0;
	cfg->timeout_s = 60.0;
	cfg->cache = FA_CACHE_AUTO;
	cfg->graph_launches = 0;
}

const char *fa_stop_name(int stop)
{
	static const char *const names[] = {"converged", "max_time", "max_samples",
					    "timeout",   "error",    "cancelled"};
	if (stop >= 0 && stop < (int)(sizeof names / sizeof names[0]))
		return names[stop];
	return "unknown";
}

double fa_now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

void fa_stats_compute(const double *x, int n, struct fa_time_stats *st)
{
	double sum = 0, ss = 0, *sorted;
	st->n = n;
	st->median_ms = st->mean_ms = st->min_ms = st->max_ms = st->stdev_ms = 0;
	if (n <= 0)
		return;
	for (int i = 0; i < n; i++)
		sum += x[i];
	st->mean_ms = sum / n;
	for (int i = 0; i < n; i++)
		ss += (x[i] - st->mean_ms) * (x[i] - st->mean_ms);
	st->stdev_ms = n > 1 ? sqrt(ss / (n - 1)) : 0.0;
	sorted = malloc((size_t)n * sizeof *sorted);
	if (!sorted) { /* min/max/mean still right; median falls back to the mean */
		st->min_ms = st->max_ms = x[0];
		for (int i = 1; i < n; i++) {
			st->min_ms = fmin(st->min_ms, x[i]);
			st->max_ms = fmax(st->max_ms, x[i]);
		}
		st->median_ms = st->mean_ms;
		return;
	}
	memcpy(sorted, x, (size_t)n * sizeof *sorted);
	qsort(sorted, (size_t)n, sizeof *sorted, cmp_double);
	st->min_ms = sorted[0];
	st->max_ms = sorted[n - 1];
	st->median_ms = n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
	free(sorted);
}

void fa_samples_free(struct fa_samples *s)
{
	free(s->ms);
	s->ms = NULL;
	s->n = s->cap = 0;
}

static enum fa_rc samples_push(struct fa_samples *s, double ms, struct fa_err *err)
{
	if (s->n == s->cap) {
		int32_t cap = s->cap ? s->cap * 2 : 64;
		double *p = realloc(s->ms, (size_t)cap * sizeof *p);
		if (!p)
			return fa_err_set(err, FA_ERR_NOMEM, "out of memory for samples");
		s->ms = p;
		s->cap = cap;
	}
	s->ms[s->n++] = ms;
	return FA_OK;
}

/* Relative standard deviation of the samples so far (Welford sums). */
static double rel_noise(double mean, double m2, int n)
{
	if (n < 2 || mean <= 0)
		return INFINITY;
	return sqrt(m2 / (n - 1)) / mean;
}

enum fa_rc fa_measure_run(const struct fa_measure_cfg *cfg, fa_sample_fn fn, void *ctx,
			  double deadline_s, volatile int *cancel, struct fa_samples *out,
			  struct fa_time_stats *st, struct fa_err *err)
{
	double total_ms = 0, mean = 0, m2 = 0, ms;
	int discarded = 0, rc, stop = FA_STOP_MAX_SAMPLES;
	int max_samples = cfg->max_samples > 0 ? cfg->max_samples : 1000;
	enum fa_rc ret = FA_OK;

	out->n = 0;
	for (int i = 0; i < cfg->warmup; i++) {
		if (cancel && *cancel) {
			stop = FA_STOP_CANCELLED;
			goto done;
		}
		if (deadline_s > 0 && fa_now_s() > deadline_s) {
			stop = FA_STOP_TIMEOUT;
			goto done;
		}
		rc = fn(ctx, &ms, err);
		if (rc < 0 || rc > 1) {
			stop = FA_STOP_ERROR;
			ret = (enum fa_rc)rc;
			goto done;
		}
	}
	while (out->n < max_samples) {
		if (cancel && *cancel) {
			stop = FA_STOP_CANCELLED;
			break;
		}
		if (deadline_s > 0 && fa_now_s() > deadline_s) {
			stop = FA_STOP_TIMEOUT;
			break;
		}
		rc = fn(ctx, &ms, err);
		if (rc == 1) { /* dropped (throttled): counts toward time, not samples */
			discarded++;
			if (discarded > 4 * max_samples) {
				stop = FA_STOP_MAX_SAMPLES;
				break;
			}
			continue;
		}
		if (rc != 0) {
			stop = FA_STOP_ERROR;
			ret = (enum fa_rc)rc;
			break;
		}
		if ((ret = samples_push(out, ms, err)) != FA_OK) {
			stop = FA_STOP_ERROR;
			break;
		}
		total_ms += ms;
		double d = ms - mean;
		mean += d / out->n;
		m2 += d * (ms - mean);
		if (out->n >= cfg->min_samples && total_ms >= cfg->min_time_ms &&
		    rel_noise(mean, m2, out->n) <= cfg->max_noise) {
			stop = FA_STOP_CONVERGED;
			break;
		}
		if (total_ms >= cfg->max_time_ms && out->n >= 1) {
			stop = FA_STOP_MAX_TIME;
			break;
		}
	}
done:
	fa_stats_compute(out->ms, out->n, st);
	st->discarded = discarded;
	st->stop = stop;
	return ret;
}
