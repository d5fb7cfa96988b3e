/* golden.c - byte-for-byte checks of test output against tests/golden/
 * (golden.h), shared by the tests of report, html, plot, compare and
 * history.
 */
#include "golden.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../harness/base/err.h"
#include "test.h"

/* Writes the len bytes of data to path; 0 on success. */
static int write_file(const char *path, const char *data, size_t len)
{
	FILE *f = fopen(path, "wb");
	int ok;
	if (!f)
		return -1;
	ok = fwrite(data, 1, len, f) == len;
	return fclose(f) == 0 && ok ? 0 : -1;
}

/* The length of the line that starts at s, within the n bytes left. */
static int line_len(const char *s, size_t n)
{
	const char *nl = memchr(s, '\n', n);
	return (int)(nl ? (size_t)(nl - s) : n);
}

int fa_golden_check(const char *name, const char *actual, size_t len)
{
	char path[1200], out[1300];
	const char *update = getenv("FABENCH_UPDATE_GOLDEN");
	size_t want_len = 0, i = 0, la = 0;
	char *want;
	int line = 1;

	snprintf(path, sizeof path, "%s/tests/golden/%s", fa_test_root(), name);
	if (update && strcmp(update, "1") == 0) {
		if (write_file(path, actual, len) != 0) {
			fa_test_fail(__FILE__, __LINE__, "cannot write %s", path);
			return 0;
		}
		printf("  updated tests/golden/%s\n", name);
		return 1;
	}
	want = fa_test_read_file(path, &want_len);
	snprintf(out, sizeof out, "%s/%s.actual", fa_test_tmpdir(), name);
	if (want && want_len == len && memcmp(want, actual, len) == 0) {
		unlink(out); /* from an earlier failure */
		free(want);
		return 1;
	}
	write_file(out, actual, len);
	if (!want) {
		fa_test_fail(__FILE__, __LINE__,
			     "no golden file tests/golden/%s; the output is in %s "
			     "(FABENCH_UPDATE_GOLDEN=1 creates it)",
			     name, out);
		return 0;
	}
	/* the first differing line: la is where it starts in both */
	for (; i < want_len && i < len && want[i] == actual[i]; i++)
		if (want[i] == '\n') {
			line++;
			la = i + 1;
		}
	fa_test_fail(__FILE__, __LINE__,
		     "tests/golden/%s differs at line %d\n  expected: %.*s\n  actual:   %.*s\n"
		     "  see: diff -u %s %s\n  (FABENCH_UPDATE_GOLDEN=1 accepts the new output)",
		     name, line, line_len(want + la, want_len - la), want + la,
		     line_len(actual + la, len - la), actual + la, path, out);
	free(want);
	return 0;
}

void fa_golden_check_err(const char *input, const char *expected_path, const struct fa_err *err,
			 const char *prefix)
{
	char *actual = NULL, *expected;
	size_t actual_len = 0, expected_len = 0;
	FILE *f;
	expected = fa_test_read_file(expected_path, &expected_len);
	FA_CHECKF(expected != NULL, "%s has no golden file %s", input, expected_path);
	f = open_memstream(&actual, &actual_len);
	if (!f) {
		FA_CHECKF(0, "open_memstream failed");
		free(expected);
		return;
	}
	fa_err_print(err, f, prefix);
	fclose(f);
	if (expected && (actual_len != expected_len || memcmp(actual, expected, actual_len) != 0))
		FA_CHECKF(0, "%s: error text differs\n--- expected (%s)\n%s--- actual\n%s---", input,
			  expected_path, expected, actual);
	free(actual);
	free(expected);
}
