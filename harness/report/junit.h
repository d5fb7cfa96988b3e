/* junit.h - `run --junit FILE`: the results of a run as JUnit XML, the test
 * report format every CI system renders (GitHub Actions through a reporter
 * action, GitLab, Jenkins, Buildkite). One <testcase> per (case, kernel):
 * a fail is a <failure>, an error or timeout an <error>, a skip <skipped>,
 * each with the stored reason; every text is XML-escaped.
 */
#ifndef FA_JUNIT_H
#define FA_JUNIT_H

#include <stdio.h>

#include "../base/err.h"
#include "../store/store.h"
#include "../suite/suite.h"

struct fa_junit;

/* A new, empty report of suite suite_name (copied). NULL when out of memory. */
struct fa_junit *fa_junit_new(const char *suite_name);
void fa_junit_free(struct fa_junit *j);

/* Adds kernel result r of case c (label: the case's short label, may be
 * NULL; params: the kernel's tunables, "" when none; device: the device it
 * ran on, -1 when not known). Everything is copied. Returns 0, -1 when out
 * of memory (the entry is left out). */
int fa_junit_add(struct fa_junit *j, const struct fa_case *c, const char *label,
		 const char *params, const struct fa_result *r, int device);

/* Writes the XML to f. */
void fa_junit_print(const struct fa_junit *j, FILE *f);

/* Writes the XML to path through a temporary file in the same folder and a
 * rename, so that the file is whole or absent. Returns FA_OK or FA_ERR_IO
 * naming the path. */
enum fa_rc fa_junit_write(const struct fa_junit *j, const char *path, struct fa_err *err);

/* Writes s to f with &, <, >, " and ' escaped, the control characters
 * XML 1.0 cannot carry (all below 0x20 but tab, newline and carriage
 * return, and DEL) and U+FFFE and U+FFFF written as '?', and each byte
 * that starts no valid UTF-8 sequence as U+FFFD: well-formed for any
 * bytes. Exposed for tests. */
void fa_xml_escape(FILE *f, const char *s);

#endif /* FA_JUNIT_H */
