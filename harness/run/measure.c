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

void fa_measure_start(struct fa_measure_state *m, const struct fa_measure_cfg *cfg,
		      struct fa_samples *out)
{
	memset(m, 0, sizeof *m);
	m->cfg = *cfg;
	if (m->cfg.max_samples <= 0)
		m->cfg.max_samples = 1000;
	m->out = out;
	m->warm_left = cfg->warmup > 0 ? cfg->warmup : 0;
	m->stop = FA_STOP_MAX_SAMPLES;
	out->n = 0;
}

static int stop_with(struct fa_measure_state *m, int stop)
{
	m->stop = stop;
	m->done = 1;
	return 1;
}

int fa_measure_step(struct fa_measure_state *m, fa_sample_fn fn, void *ctx, double deadline_s,
		    volatile int *cancel, enum fa_rc *rc, struct fa_err *err)
{
	double ms = 0;
	int r;
	*rc = FA_OK;
	if (m->done)
		return 1;
	if (cancel && *cancel)
		return stop_with(m, FA_STOP_CANCELLED);
	if (deadline_s > 0 && fa_now_s() > deadline_s)
		return stop_with(m, FA_STOP_TIMEOUT);
	if (m->out->n >= m->cfg.max_samples)
		return stop_with(m, FA_STOP_MAX_SAMPLES);
	r = fn(ctx, &ms, err);
	if (r != 0 && r != 1) {
		*rc = (enum fa_rc)r;
		return stop_with(m, FA_STOP_ERROR);
	}
	if (m->warm_left > 0) {
		m->warm_left--;
		return 0;
	}
	if (r == 1) { /* dropped (throttled): counts toward time, not samples */
		if (++m->discarded > 4 * m->cfg.max_samples)
			return stop_with(m, FA_STOP_MAX_SAMPLES);
		return 0;
	}
	if ((*rc = samples_push(m->out, ms, err)) != FA_OK)
		return stop_with(m, FA_STOP_ERROR);
	m->total_ms += ms;
	double d = ms - m->mean;
	m->mean += d / m->out->n;
	m->m2 += d * (ms - m->mean);
	if (m->out->n >= m->cfg.min_samples && m->total_ms >= m->cfg.min_time_ms &&
	    rel_noise(m->mean, m->m2, m->out->n) <= m->cfg.max_noise)
		return stop_with(m, FA_STOP_CONVERGED);
	if (m->total_ms >= m->cfg.max_time_ms && m->out->n >= 1)
		return stop_with(m, FA_STOP_MAX_TIME);
	if (m->out->n >= m->cfg.max_samples)
		return stop_with(m, FA_STOP_MAX_SAMPLES);
	return 0;
}

void fa_measure_finish(const struct fa_measure_state *m, struct fa_time_stats *st)
{
	fa_stats_compute(m->out->ms, m->out->n, st);
	st->discarded = m->discarded;
	st->stop = m->stop;
}

enum fa_rc fa_measure_run(const struct fa_measure_cfg *cfg, fa_sample_fn fn, void *ctx,
			  double deadline_s, volatile int *cancel, struct fa_samples *out,
			  struct fa_time_stats *st, struct fa_err *err)
{
	struct fa_measure_state m;
	enum fa_rc rc = FA_OK;
	fa_measure_start(&m, cfg, out);
	while (!fa_measure_step(&m, fn, ctx, deadline_s, cancel, &rc, err))
		;
	fa_measure_finish(&m, st);
	return rc;
}
