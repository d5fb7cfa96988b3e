/* test.h - the unit-test framework: one test file per module, all linked into
 * build/fabench-test, which runs every test or only the modules named on its
 * command line (`build/fabench-test suite store`).
 *
 *   FA_TEST(store, reopen_keeps_runs) { ... FA_CHECK(x == 1); ... }
 *
 * A test registers itself before main() runs. FA_CHECK records a failure and
 * goes on; FA_REQUIRE records and returns from the test. Tests that draw
 * random data print their seed with fa_test_seed().
 */
#ifndef FA_TEST_H
#define FA_TEST_H

#include <stdint.h>
#include <stdio.h>

typedef void (*fa_test_fn)(void);

void fa_test_register(const char *module, const char *name, fa_test_fn fn);
void fa_test_fail(const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* A seed for random test data: $FABENCH_TEST_SEED, or one drawn from the
 * clock; printed with the test's name so a failure can be replayed. */
uint64_t fa_test_seed(void);
/* Marks the current test as unable to run here: prints "  skip: module/name:
 * reason" (make test lists these at the end). The test still counts as passed
 * unless it also failed a check. */
void fa_test_skip(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Folder for scratch files of this test (created, under build/test-tmp). */
const char *fa_test_tmpdir(void);
/* The repository root (where the Makefile is), for suites and golden files. */
const char *fa_test_root(void);
/* Reads a whole file; returns malloc'd text or NULL. */
char *fa_test_read_file(const char *path, size_t *len);
/* Writes text to path (created or truncated): 0, or -1 when it cannot. */
int fa_test_write_file(const char *path, const char *text);
/* The same, then made executable (mode 0755): a stand-in program for a test
 * (a gnuplot, a git). 0, or -1 when it cannot. */
int fa_test_write_script(const char *path, const char *text);
/* Copies the file from into to (created or truncated), byte for byte: 0, or
 * -1 when it cannot. */
int fa_test_copy_file(const char *from, const char *to);
/* How often needle occurs in hay, counting from the end of each find. */
int fa_test_count(const char *hay, const char *needle);
/* The offset of the first byte of s[0..len) that is not part of a valid
 * UTF-8 sequence (RFC 3629's table: no overlong forms, surrogates or
 * values past U+10FFFF: fa_utf8_len's rule), or -1 when all of it is
 * valid UTF-8. hostile, plot, report, tune and bmatrix check their output
 * with it. */
long fa_test_utf8_invalid_at(const char *s, size_t len);

#define FA_TEST(module, name)                                                    \
	static void fa_test_##module##_##name(void);                             \
	__attribute__((constructor)) static void fa_test_reg_##module##_##name(void) \
	{                                                                        \
		fa_test_register(#module, #name, fa_test_##module##_##name);     \
	}                                                                        \
	static void fa_test_##module##_##name(void)

#define FA_CHECK(cond)                                                           \
	do {                                                                     \
		if (!(cond))                                                     \
			fa_test_fail(__FILE__, __LINE__, "check failed: %s", #cond); \
	} while (0)

#define FA_CHECKF(cond, ...)                                                     \
	do {                                                                     \
		if (!(cond))                                                     \
			fa_test_fail(__FILE__, __LINE__, __VA_ARGS__);           \
	} while (0)

#define FA_REQUIRE(cond)                                                         \
	do {                                                                     \
		if (!(cond)) {                                                   \
			fa_test_fail(__FILE__, __LINE__, "requirement failed: %s", #cond); \
			return;                                                  \
		}                                                                \
	} while (0)

#define FA_CHECK_NEAR(a, b, tol)                                                 \
	do {                                                                     \
		double fa_a_ = (double)(a), fa_b_ = (double)(b);                 \
		if (!(fa_a_ - fa_b_ <= (tol) && fa_b_ - fa_a_ <= (tol)))         \
			fa_test_fail(__FILE__, __LINE__, "%s = %.9g, %s = %.9g, tol %g", #a, \
				     fa_a_, #b, fa_b_, (double)(tol));           \
	} while (0)

#endif /* FA_TEST_H */
