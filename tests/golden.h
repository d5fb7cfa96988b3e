/* golden.h - golden-file checks for the tests of report, html, plot,
 * compare and history: an output compared byte for byte with a file under
 * tests/golden/ (as git's test_cmp compares expect and actual); and the
 * golden error messages of bad inputs (suites/bad/, tests/import/).
 *
 * On a difference the output is written to <test folder>/<name>.actual and
 * the test fails with the first line that differs and the diff command to
 * run. FABENCH_UPDATE_GOLDEN=1 writes the golden file from the output
 * instead of comparing: read its diff before committing it.
 */
#ifndef FA_TEST_GOLDEN_H
#define FA_TEST_GOLDEN_H

#include <stddef.h>

struct fa_err;

/* Compares the len bytes of actual with tests/golden/<name> (name is the
 * path below tests/golden, e.g. "report_main.md"). Returns 1 when they are
 * the same (and removes a <name>.actual an earlier failure left), 0 after
 * recording a failure: no golden file, or one that differs. With
 * FABENCH_UPDATE_GOLDEN=1 writes the golden file and returns 1, or 0 after
 * recording that it cannot. */
int fa_golden_check(const char *name, const char *actual, size_t len);

/* The golden error of a bad input file: what fa_err_print(err, f, prefix)
 * writes must equal the file expected_path (the input's NAME.err, beside
 * it) byte for byte. Records a failure naming input when the file is
 * missing or differs (both texts shown); FABENCH_UPDATE_GOLDEN does not
 * apply. */
void fa_golden_check_err(const char *input, const char *expected_path, const struct fa_err *err,
			 const char *prefix);

#endif /* FA_TEST_GOLDEN_H */
