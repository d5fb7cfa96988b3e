/* report.h - tables of one run's results: markdown, CSV, JSON and HTML.
 *
 * One table per suite: rows are cases (only the parameters that vary between
 * them), columns per kernel: median time and its noise, TFLOP/s (GB/s for
 * decode-like cases, q_len <= 16), speedup against a baseline kernel, max
 * error and status; or one metric per kernel (--metric), or a row per case
 * and kernel (--layout long). The instances of a kernel family
 * (cuda_flash_mma_d72_pad80 of cuda_flash_mma) share their family's
 * column. Failures, errors and timeouts are listed first with their reasons.
 */
#ifndef FA_REPORT_H
#define FA_REPORT_H

#include <stdint.h>
#include <stdio.h>

#include "../base/err.h"
#include "../store/store.h"
#include "table.h"

/* "md", "csv", "json", "html" -> enum fa_report_format (table.h), -1 when
 * unknown. */
int fa_report_format_parse(const char *s);

/* What the cells of a kernel column show. */
enum fa_report_metric {
	FA_METRIC_ALL = 0,    /* ms, throughput, speedup, max_abs, status */
	FA_METRIC_MS = 1,     /* one column per kernel: median ms, noise, mark */
	FA_METRIC_TFLOPS = 2, /* ... TFLOP/s */
	FA_METRIC_GBPS = 3,   /* ... GB/s */
};

/* "ms", "tflops", "gbps" -> enum, -1 when unknown. */
int fa_report_metric_parse(const char *s);

enum fa_report_layout {
	FA_LAYOUT_WIDE = 0, /* a row per case, columns per kernel */
	FA_LAYOUT_LONG = 1, /* a row per case and kernel (md and csv) */
};

/* "wide", "long" -> enum, -1 when unknown. */
int fa_report_layout_parse(const char *s);

struct fa_report_opts {
	int32_t format;         /* enum fa_report_format */
	const char *baseline;   /* kernel name; NULL: the run's dense kernel
	                           (a name containing "dense"), else none */
	int32_t metric;         /* enum fa_report_metric (md, html, long layout) */
	int32_t layout;         /* enum fa_report_layout; long: md and csv only */
};

/* Writes the report of run_id to out (deterministic: the same database gives
 * the same bytes; for html, without plots, whose SVG is gnuplot's). Html is
 * one self-contained page: the tables of markdown with a little CSS, the
 * compare's table, the plots as inline SVG; nothing is loaded from
 * elsewhere. Returns FA_OK; FA_ERR_NOT_FOUND for an unknown run or a
 * baseline kernel with no results in it; FA_ERR_USAGE for an unknown
 * format; FA_ERR_BACKEND when gnuplot fails on a plot; FA_ERR_DB,
 * FA_ERR_NOMEM, or FA_ERR_IO when out cannot be written. Nothing is written
 * when the run or the baseline is not found. o->baseline may also name a
 * column "kernel[params]" of a run where one kernel ran with several
 * params. */
enum fa_rc fa_report_write(struct fa_store *s, int64_t run_id, const struct fa_report_opts *o,
			   FILE *out, struct fa_err *err);

struct fa_compare;

/* What an html report shows beyond the tables. */
struct fa_report_html_opts {
	const struct fa_compare *compare; /* shown after the results: its summary and
	                                     table, with plots its speedup bars; NULL none */
	int32_t plots;          /* 1: embed plots as inline SVG drawn by gnuplot
	                           (plot.h): the run's throughput, its tuning heatmap
	                           when it is a tuning run, the compare's speedups;
	                           without gnuplot a note says so instead */
};

/* The html report (o->format is ignored) with the extras of h (NULL:
 * neither compare nor plots, as fa_report_write gives for FA_FMT_HTML).
 * Returns as fa_report_write. */
enum fa_rc fa_report_write_html(struct fa_store *s, int64_t run_id,
				const struct fa_report_opts *o,
				const struct fa_report_html_opts *h, FILE *out,
				struct fa_err *err);

#endif /* FA_REPORT_H */
