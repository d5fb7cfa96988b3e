/* buildreport.h - the grid of a stored `fabench build-matrix` run (kernel x
 * target; markdown, CSV, JSON) and the regression gate that compares it
 * with an earlier one (--fail-on). */
#ifndef FA_BUILDREPORT_H
#define FA_BUILDREPORT_H

#include <stdio.h>

#include "../base/err.h"
#include "../store/buildstore.h"

/* Writes t in format (FA_FMT_MD: the grid, then the failures and skips;
 * FA_FMT_CSV: one line per stored row; FA_FMT_JSON: schema_version, build,
 * results). Returns FA_OK or FA_ERR_NOMEM / FA_ERR_USAGE (a format it does
 * not write). */
enum fa_rc fa_build_report_write(const struct fa_build_table *t, int format, FILE *out,
				 struct fa_err *err);

/* Compares head with ref and writes one line per regression to out:
 *   a unit that compiled in ref and failed in head ("stopped compiling"),
 *   a kernel whose spill stores, spilled registers or scratch grew,
 *   a kernel whose matrix instructions were there in ref and are gone.
 * A unit skipped in head (its compiler is missing) or absent from it, and a
 * kernel that is gone, are notes, not regressions. Returns the number of
 * regressions. */
int fa_build_gate(const struct fa_build_table *ref, const struct fa_build_table *head, FILE *out);

#endif /* FA_BUILDREPORT_H */
