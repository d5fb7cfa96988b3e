/* measure.h - sampling, the stopping rule and time statistics.
 *
 * The rule (nvbench's): after a warm-up, take samples until at least
 * min_samples were taken, their relative standard deviation is under
 * max_noise and they add up to min_time_ms; stop anyway at max_time_ms of
 * samples, at max_samples, or at the case's timeout.
 */
#ifndef FA_MEASURE_H
#define FA_MEASURE_H

#include <stdint.h>

#include "../base/err.h"

enum fa_cache_mode {
	FA_CACHE_AUTO = 0,       /* cold-clean on GPUs, hot on the CPU */
	FA_CACHE_COLD = 1,       /* flush the last-level cache before every sample by
				  * writing a buffer larger than it, which leaves it
				  * full of dirty lines (every result stored as cold
				  * before cold-clean existed was timed so) */
	FA_CACHE_HOT = 2,        /* back-to-back samples */
	FA_CACHE_COLD_CLEAN = 3, /* the same flush, then the buffer read back, so the
				  * cache holds clean lines and the timed kernel does
				  * not pay for writing back the harness's data */
};

struct fa_measure_cfg {
	int32_t warmup;      /* untimed launches first (default 2) */
	int32_t min_samples; /* default 10 */
	int32_t max_samples; /* default 1000 */
	double max_noise;    /* relative stdev to stop at (default 0.005) */
	double min_time_ms;  /* of samples (default 100) */
	double max_time_ms;  /* of samples (default 2000) */
	double timeout_s;    /* whole case, check included (default 60) */
	int32_t cache;       /* enum fa_cache_mode */
	int32_t graph_launches; /* GPU: launches per captured graph, 0: no graph */
};

/* Fills cfg with the defaults above. */
void fa_measure_defaults(struct fa_measure_cfg *cfg);

enum fa_stop {
	FA_STOP_CONVERGED = 0,   /* noise under max_noise */
	FA_STOP_MAX_TIME = 1,    /* max_time_ms reached first */
	FA_STOP_MAX_SAMPLES = 2,
	FA_STOP_TIMEOUT = 3,     /* the case's timeout */
	FA_STOP_ERROR = 4,       /* a sample failed */
	FA_STOP_CANCELLED = 5,   /* a signal asked to stop */
};

/* Name of a stop reason as stored ("converged", "max_time", ...). */
const char *fa_stop_name(int stop);

struct fa_time_stats {
	int32_t n;          /* samples kept */
	int32_t discarded;  /* samples dropped (throttled clock) */
	double median_ms, mean_ms, min_ms, max_ms, stdev_ms;
	int32_t stop;       /* enum fa_stop */
};

/* Statistics of x[0..n) (sample stdev, n - 1 in the denominator). n may be 0:
 * everything is then 0. Does not set stop or discarded. */
void fa_stats_compute(const double *x, int n, struct fa_time_stats *st);

/* One timed sample: returns 0 and the time in *ms, 1 to drop this sample
 * (counted as discarded, e.g. a throttled clock), or an enum fa_rc error
 * (with err filled) to stop. */
typedef int (*fa_sample_fn)(void *ctx, double *ms, struct fa_err *err);

/* A growing array of samples. */
struct fa_samples {
	double *ms;
	int32_t n, cap;
};

void fa_samples_free(struct fa_samples *s);

/* Runs cfg->warmup untimed samples, then samples under the stopping rule.
 * deadline_s is a CLOCK_MONOTONIC time in seconds (fa_now_s) after which
 * sampling stops with FA_STOP_TIMEOUT (0: none); *cancel nonzero stops with
 * FA_STOP_CANCELLED. Fills out and st. Returns FA_OK, or the error of the
 * failing sample (the samples taken so far stay in out). */
enum fa_rc fa_measure_run(const struct fa_measure_cfg *cfg, fa_sample_fn fn, void *ctx,
			  double deadline_s, volatile int *cancel, struct fa_samples *out,
			  struct fa_time_stats *st, struct fa_err *err);

/* The same rule one sample at a time, so that several kernels can be
 * sampled in turn (A B A B ...), sharing whatever the machine does meanwhile.
 * start() sets up; step() takes one warm-up launch or sample and returns 1
 * once sampling has stopped (with *rc the error of a failing sample, else
 * FA_OK); finish() fills st. */
struct fa_measure_state {
	struct fa_measure_cfg cfg;
	struct fa_samples *out;
	int32_t warm_left, discarded, stop, done;
	double total_ms, mean, m2;
};

void fa_measure_start(struct fa_measure_state *m, const struct fa_measure_cfg *cfg,
		      struct fa_samples *out);
int fa_measure_step(struct fa_measure_state *m, fa_sample_fn fn, void *ctx, double deadline_s,
		    volatile int *cancel, enum fa_rc *rc, struct fa_err *err);
void fa_measure_finish(const struct fa_measure_state *m, struct fa_time_stats *st);

/* Seconds on CLOCK_MONOTONIC. */
double fa_now_s(void);

#endif /* FA_MEASURE_H */
