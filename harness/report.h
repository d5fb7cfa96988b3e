/* report.h - tables of one run's results: markdown, CSV and JSON.
 *
 * One table per suite: rows are cases (only the parameters that vary between
 * them), columns per kernel: median time, TFLOP/s (GB/s for decode-like
 * cases, q_len <= 16), speedup against a baseline kernel, max error and
 * status. Failures, errors and timeouts are listed first with their reasons.
 */
#ifndef FA_REPORT_H
#define FA_REPORT_H

#include <stdint.h>
#include <stdio.h>

#include "err.h"
#include "store.h"

enum fa_report_format { FA_FMT_MD = 0, FA_FMT_CSV = 1, FA_FMT_JSON = 2, FA_FMT_HTML = 3 };

/* "md", "csv", "json", "html" -> enum, -1 when unknown. */
int fa_report_format_parse(const char *s);

struct fa_report_opts {
	int32_t format;         /* enum fa_report_format */
	const char *baseline;   /* kernel name; NULL: the run's dense kernel
	                           (a name containing "dense"), else none */
};

/* Writes the report of run_id to out (deterministic: the same database gives
 * the same bytes). Returns FA_OK; FA_ERR_NOT_FOUND for an unknown run or a
 * baseline kernel with no results in it; FA_ERR_USAGE for html (not
 * implemented yet) or an unknown format; FA_ERR_DB, FA_ERR_NOMEM, or
 * FA_ERR_IO when out cannot be written. Nothing is written when the run or
 * the baseline is not found. o->baseline may also name a column
 * "kernel[params]" of a run where one kernel ran with several params. */
enum fa_rc fa_report_write(struct fa_store *s, int64_t run_id, const struct fa_report_opts *o,
			   FILE *out, struct fa_err *err);

#endif /* FA_REPORT_H */
